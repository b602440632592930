/* A small graph of 2D layers: the networks of BEV detectors and of their
 * camera encoders (CenterPoint's and PointPillars' backbone, neck and head,
 * BEVDet's ResNet-50, FPN and depth net, its BEV encoder).
 *
 * A net is a list of buffers (tensors [N][C][H][W], N the net's batch, the
 * same for every buffer: the cameras of a rig; buffer 0 is the input and is
 * never written) and a list of layers run in order.  A layer reads
 * in_channels channels of one buffer, starting at input_channel_offset (a
 * channel slice), and writes out_channels channels of another, starting at
 * output_channel_offset, so that several layers writing slices of one
 * buffer express a concatenation on channels (SECONDFPN's neck).  A layer
 * may read and write one buffer when the channels it reads and writes are
 * disjoint.
 *
 * Layer kinds (PyTorch semantics; every item n of the batch alike; x is
 * the channel slice read, y the one written; k, s, p, d a kernel, stride,
 * padding and dilation along an axis, given per axis):
 *  - P3DC_CONV_2D: y[o][oy][ox] = bias[o] + sum over the input channels i
 *    of o's group and over ky, kx of w[o][i'][ky][kx] *
 *    x[i][oy * s + ky * d - p][ox * s + kx * d - p] (i' = i counted in the
 *    group; x outside the tensor is 0); output size
 *    (in + 2 p - d (k - 1) - 1) / s + 1 (integer division).  With
 *    @residual, element (o, oy, ox) of the input2 slice is added after the
 *    bias (a ResNet block's shortcut, before its ReLU).
 *  - P3DC_CONV_TRANSPOSED_2D with kernel == stride, padding 0, no dilation,
 *    one group: y[o][iy * s + ky][ix * s + kx] = bias[o] + sum over i of
 *    w[i][o][ky][kx] * x[i][iy][ix]; output size in * s.
 *  - P3DC_LAYER_ADD: y = x + x2, x2 the input2 slice (same size).
 *  - P3DC_LAYER_MAX_POOL: the maximum of x over the window, positions
 *    outside the tensor left out (PyTorch's -inf padding; a NaN wins);
 *    output size as a convolution's (ceil_mode False); padding at most
 *    kernel / 2.
 *  - P3DC_LAYER_UPSAMPLE_NEAREST: y[oy][ox] = x[sy][sx], sy = min (floor
 *    (oy * (float) in / out), in - 1), as F.interpolate (size=out,
 *    mode="nearest"); any output size.
 *  - P3DC_LAYER_UPSAMPLE_BILINEAR: F.interpolate (size=out,
 *    mode="bilinear", align_corners): along each axis, in float, the source
 *    r = o * (in - 1) / (out - 1) with align_corners (0 when out is 1), else
 *    max (in / out * (o + 0.5) - 0.5, 0); i0 = min ((int) r, in - 1), i1 =
 *    i0 + (i0 < in - 1), l1 = r - i0, l0 = 1 - l1; y = l0y (l0x x[i0y][i0x]
 *    + l1x x[i0y][i1x]) + l1y (l0x x[i1y][i0x] + l1x x[i1y][i1x]).  For an
 *    output exactly s times the input this is also scale_factor=s.
 *  - P3DC_LAYER_SOFTMAX: over the channels of each position: with m the
 *    largest x[c], y[c] = exp (x[c] - m) / sum over c' of exp (x[c'] - m).
 *  - P3DC_LAYER_SLICE: y = x (a copy of a channel range, e.g. into a
 *    concatenation, or a ReLU of its own).
 * then ReLU (y = max (y, 0), NaN to 0) when relu is nonzero, on every kind.
 * Convolutions' weights have BatchNorm already folded in.
 *
 * The C reference (p3dc_convnet_cpu) defines the results: float32, NCHW,
 * plain loops whose every operation is one float rounding (built with
 * -ffp-contract=off): a convolution's sum of each output element is
 * accumulated from 0 in the order in-channel, ky, kx (a transposed one's
 * in-channel), then the bias is added, then the residual, then ReLU; the
 * softmax's maximum and sum run over the channels in order and exp is
 * expf; the other kinds are the formulas above in that order.  The CUDA
 * path (cuDNN for the convolutions, loaded at run time; kernels of our own
 * for the other kinds) computes convolution sums in another order: F32
 * storage within float rounding of the reference, F16 storage (F32
 * accumulation) within F16 rounding of every stored tensor and weight; the
 * other kinds compute the reference's formulas in float from the stored
 * values, so that in F32 they equal the reference bit for bit (softmax
 * within a few float roundings: CUDA's expf is not glibc's).  See
 * tests/check/libs/convnet_cuda.c.
 */
#ifndef P3DC_CONVNET_H
#define P3DC_CONVNET_H

#include <stddef.h>
#include <stdint.h>

#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum
{
  P3DC_CONV_2D = 0,
  P3DC_CONV_TRANSPOSED_2D = 1,
  P3DC_LAYER_ADD = 2,
  P3DC_LAYER_MAX_POOL = 3,
  P3DC_LAYER_UPSAMPLE_NEAREST = 4,
  P3DC_LAYER_UPSAMPLE_BILINEAR = 5,
  P3DC_LAYER_SOFTMAX = 6,
  P3DC_LAYER_SLICE = 7,
  P3DC_N_LAYER_KINDS
} P3dcConvKind;

/* One tensor of the net, [batch][channels][height][width] in the
 * reference: buffer 0 is the network input. */
typedef struct
{
  uint32_t channels, height, width;
} P3dcConvBufferDesc;

/* One layer.  The fields after output_channel_offset are zero for a
 * square, undilated, ungrouped layer reading its whole input, so that a
 * layer written with the first fields alone is one. */
typedef struct
{
  P3dcConvKind kind;
  uint32_t in_channels, out_channels;
  /* along y, and along x too unless the _x fields below are set
   * (convolutions and max pool) */
  uint32_t kernel, stride, padding;
  int relu;                     /* nonzero: ReLU last */
  const float *weight;          /* convolutions only: host, BN already
                                 * folded; conv: [out][in / groups][ky][kx];
                                 * transposed: [in][out][ky][kx] (PyTorch
                                 * layouts) */
  const float *bias;            /* convolutions only: host, [out]; never
                                 * NULL (zeros when the layer has none) */
  uint32_t input;               /* buffer read */
  uint32_t output;              /* buffer written */
  uint32_t output_channel_offset;       /* first channel written in the
                                         * output (concat) */
  /* kernel_x 0: the layer is square; else kernel_x, stride_x and
   * padding_x give the x axis */
  uint32_t kernel_x, stride_x, padding_x;
  uint32_t dilation, dilation_x;        /* 0: 1; dilation_x 0: as along y */
  uint32_t groups;              /* convolution groups; 0: 1 */
  uint32_t input_channel_offset;        /* first channel read */
  /* the second input of P3DC_LAYER_ADD, and of a convolution with
   * residual set: channels [input2_channel_offset, + out_channels) of
   * buffer input2 */
  uint32_t input2, input2_channel_offset;
  int residual;
  int align_corners;            /* P3DC_LAYER_UPSAMPLE_BILINEAR */
} P3dcConvLayer;

typedef struct
{
  uint32_t n_buffers;
  const P3dcConvBufferDesc *buffers;
  uint32_t n_layers;
  const P3dcConvLayer *layers;   /* run in this order */
  uint32_t batch;               /* items of every buffer (cameras); 0: 1 */
} P3dcConvNetDesc;

/* A layer's geometry with every default resolved. */
typedef struct
{
  uint32_t kernel[2], stride[2], padding[2], dilation[2];       /* y, x */
  uint32_t groups;
} P3dcConvGeometry;

void p3dc_convnet_layer_geometry (const P3dcConvLayer * layer,
    P3dcConvGeometry * geometry);

/* The net's batch (desc->batch, 0 counted as 1). */
uint32_t p3dc_convnet_batch (const P3dcConvNetDesc * desc);

/* The name of a kind ("conv", "deconv", "add", "max-pool",
 * "upsample-nearest", "upsample-bilinear", "softmax", "slice"). */
const char *p3dc_convnet_kind_name (P3dcConvKind kind);

/* A reader of a buffer on either path (the decode reads the heads through
 * this): element (n, c, y, x) is at data + n * batch_stride + c *
 * channel_stride + y * row_stride + x * column_stride, counted in elements
 * of the view's type. */
typedef struct
{
  const void *data;
  int half;                     /* 0 F32, 1 F16 */
  size_t channel_stride, row_stride, column_stride;     /* in elements */
  size_t batch_stride;
} P3dcMapView;

/* @view moved @channels channels on (a view of a channel slice). */
void p3dc_map_view_offset_channels (P3dcMapView * view, uint32_t channels);

/* Limits that validation enforces, so that every size and index of both
 * paths fits in 32 bits where the kernels count in 32 bits. */
#define P3DC_CONVNET_MAX_BUFFERS 4096u
#define P3DC_CONVNET_MAX_LAYERS 4096u
#define P3DC_CONVNET_MAX_ELEMENTS 0x7fffffffu
#define P3DC_CONVNET_MAX_KERNEL 16u
#define P3DC_CONVNET_MAX_DILATION 64u
#define P3DC_CONVNET_MAX_BATCH 64u

/* The CUDA path's F16 storage pads every tensor's channels to a multiple
 * of this (the granule of cuDNN's tensor-core kernels; an input of up to
 * 4 channels, an image, to 4), and runs a
 * grouped convolution as cuDNN groups only when each group's input and
 * output channels are multiples of it (else as the dense block-diagonal
 * convolution): a net built for that path sizes its groups in granules. */
#define P3DC_CONVNET_CHANNEL_GRANULE 8u

/* In F16 the CUDA path runs a grouped convolution on a tensor-core kernel
 * of its own when each group reads a multiple of
 * P3DC_CONVNET_GROUPED_INPUTS channels and writes at most
 * P3DC_CONVNET_GROUPED_OUTPUTS (stride 1, no dilation); cuDNN runs other
 * grouped layers of so few outputs a launch per group on a kernel without
 * tensor cores, several times slower than the convolutions apart, so a
 * net built for that path makes such layers only within these bounds. */
#define P3DC_CONVNET_GROUPED_INPUTS 32u
#define P3DC_CONVNET_GROUPED_OUTPUTS 8u

/* Checks that @desc describes a net both paths can run: at least one layer;
 * a batch of at most P3DC_CONVNET_MAX_BATCH; every buffer non-empty and at
 * most P3DC_CONVNET_MAX_ELEMENTS elements over the batch; a known kind;
 * a convolution's weight and bias non-NULL; kernel and stride 1 to
 * P3DC_CONVNET_MAX_KERNEL and dilation 1 to P3DC_CONVNET_MAX_DILATION on
 * both axes; groups dividing both channel counts (one for a transposed
 * convolution, which also needs kernel == stride, padding 0 and no
 * dilation); a convolution's padding below its dilated kernel, a max
 * pool's at most half its kernel; buffers that exist; channel slices read
 * (input, and input2 for an add or a residual) and written inside their
 * buffers; in_channels == out_channels for every kind but the
 * convolutions; output sizes as the kind defines them, input2 of the
 * output's size; buffer 0 never written; every channel of every other
 * buffer written by exactly one layer; a channel read only after the layer
 * writing it has run, and never by a layer that writes it.
 * P3DC_OK, or P3DC_ERROR_INVALID_ARGUMENT with the reason (naming the layer
 * or buffer) in @message when it is not NULL. */
P3dcResult p3dc_convnet_validate (const P3dcConvNetDesc * desc, char *message,
    size_t message_len);

/* batch * channels * height * width of buffer @buffer of a valid @desc. */
size_t p3dc_convnet_buffer_elements (const P3dcConvNetDesc * desc,
    uint32_t buffer);

/* The C reference: runs every layer of a valid @desc on @input ([N][C][H][W]
 * float32 of buffer 0) into @buffers, an array of n_buffers pointers to
 * caller-allocated float32 [N][C][H][W] tensors (buffers[0] is ignored and
 * may be NULL: the input is read from @input).  Validates @desc first. */
P3dcResult p3dc_convnet_cpu (const P3dcConvNetDesc * desc, const float *input,
    float *const *buffers);

/* Allocates zeroed buffers for p3dc_convnet_cpu (buffers[0] NULL); NULL
 * when @desc is invalid or memory runs out.  Free with
 * p3dc_convnet_cpu_buffers_free(). */
float **p3dc_convnet_cpu_buffers_new (const P3dcConvNetDesc * desc);
void p3dc_convnet_cpu_buffers_free (const P3dcConvNetDesc * desc,
    float **buffers);

/* The view of a reference buffer (NCHW float32). */
void p3dc_convnet_cpu_view (const P3dcConvNetDesc * desc, uint32_t buffer,
    const float *data, P3dcMapView * view);

/* The CUDA path, on cuDNN 9 (libcudnn.so.9, loaded with dlopen on first
 * use, so that nothing links it).  Created once on the calling thread's
 * current device: it uploads the weights, allocates every buffer and one
 * workspace, chooses a deterministic algorithm for every layer, and
 * captures the whole net into a CUDA graph; a run then only queues work on
 * a stream (no allocation, no host sync): the input's conversion into the
 * net's own buffer 0, then one graph launch (plain per-layer launches when
 * the capture failed, see p3dc_convnet_cuda_launch_mode()).  With
 * @half, tensors are F16 (NHWC, tensor cores, F32 accumulation), else F32
 * (NCHW, no TF32).  Convolutions run on cuDNN, the other kinds on kernels
 * of our own (convnet.cu). */
typedef struct P3dcConvNet P3dcConvNet;

/* P3DC_OK when cuDNN can be loaded (and the library was built with it), else
 * why not in @message (e.g. "cuDNN not found (libcudnn.so.9)"). */
P3dcResult p3dc_convnet_cuda_available (char *message, size_t message_len);

/* Creates the net.  Fails with P3DC_ERROR_UNSUPPORTED when the library was
 * built without cuDNN or libcudnn.so.9 cannot be loaded, P3DC_ERROR_NO_CUDA
 * without CUDA, P3DC_ERROR_INVALID_ARGUMENT for an invalid @desc, a CUDA
 * error code, or P3DC_ERROR_CUDNN for a cuDNN call that failed; @message
 * (when not NULL) then names the call or the reason. */
P3dcResult p3dc_convnet_cuda_new (const P3dcConvNetDesc * desc, int half,
    P3dcConvNet ** net, char *message, size_t message_len);
void p3dc_convnet_cuda_free (P3dcConvNet * net);

/* Queues the whole net on @stream (the graph when there is one): @input is
 * buffer 0 on the device, [N][C][H][W] F32 (or F16 when @input_half), and
 * must stay valid until the work is done. */
P3dcResult p3dc_convnet_cuda_run (P3dcConvNet * net, const void *input,
    int input_half, P3dcCudaStream stream);

/* As p3dc_convnet_cuda_run but always with plain per-layer launches (never
 * the graph), recording events[0] before the first step and events[1 + l]
 * after layer l (n_layers + 1 events) when @events is not NULL, for a
 * per-layer time split (benchmarks; the host's cost per launch may then
 * show in the split).  Same results, bit for bit, as p3dc_convnet_cuda_run. */
P3dcResult p3dc_convnet_cuda_run_profiled (P3dcConvNet * net, const void *input,
    int input_half, P3dcCudaEvent * events, P3dcCudaStream stream);

/* A view of @buffer on the device, valid until the net is freed (buffer 0:
 * the net's copy of the last input, in the net's storage).  F32 storage is NCHW; F16 storage is NHWC
 * with the channels padded to a multiple of 8, so column_stride may exceed
 * the buffer's channels. */
P3dcResult p3dc_convnet_cuda_view (const P3dcConvNet * net, uint32_t buffer,
    P3dcMapView * view);

/* How runs launch: "CUDA graph (...)" or "plain launches (<why the capture
 * failed>)"; *@graph (when not NULL) is set to 1 with a graph, else 0.  The
 * string lives as long as the net. */
const char *p3dc_convnet_cuda_launch_mode (const P3dcConvNet * net, int *graph);

/* A one-line description of how each layer runs (algorithm, fused or
 * not, or our kernel), for logs and benchmarks; writes at most @len bytes
 * with the NUL. */
void p3dc_convnet_cuda_describe_layer (const P3dcConvNet * net, uint32_t layer,
    char *text, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* P3DC_CONVNET_H */
