/* A small sequential 2D convolutional network: the backbone, neck and head
 * of a BEV detector such as CenterPoint (the network stage of bevdetect).
 *
 * A net is a list of buffers (tensors [C][H][W]; buffer 0 is the input and
 * is never written) and a list of layers run in order.  A layer reads one
 * buffer and writes out_channels channels of another, starting at
 * output_channel_offset, so that several layers writing slices of one
 * buffer express a concatenation on channels (SECONDFPN's neck).
 *
 * Layer kinds (PyTorch semantics, batch 1):
 *  - P3DC_CONV_2D: y[o][oy][ox] = bias[o] + sum over i, ky, kx of
 *    w[o][i][ky][kx] * x[i][oy * s + ky - p][ox * s + kx - p] (x outside the
 *    tensor is 0); output size (in + 2 p - k) / s + 1 (integer division).
 *  - P3DC_CONV_TRANSPOSED_2D with kernel == stride and padding 0:
 *    y[o][iy * s + ky][ix * s + kx] = bias[o] + sum over i of
 *    w[i][o][ky][kx] * x[i][iy][ix]; output size in * s.
 * then ReLU when relu is nonzero.
 *
 * The C reference (p3dc_convnet_cpu) defines the results: float32, NCHW, the
 * sum of each output element accumulated from 0 in the order in-channel,
 * ky, kx, then the bias added, then ReLU.  The CUDA path (cuDNN, loaded at
 * run time) computes the same sums in another order: F32 storage within
 * float rounding of it, F16 storage (F32 accumulation) within F16 rounding
 * of every stored tensor and weight (see tests/check/libs/convnet_cuda.c).
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
  P3DC_CONV_TRANSPOSED_2D = 1
} P3dcConvKind;

/* One tensor of the net, NCHW in the reference: buffer 0 is the network
 * input. */
typedef struct
{
  uint32_t channels, height, width;
} P3dcConvBufferDesc;

typedef struct
{
  P3dcConvKind kind;
  uint32_t in_channels, out_channels, kernel, stride, padding;
  int relu;                     /* nonzero: ReLU after the bias */
  const float *weight;          /* host, BN already folded; conv:
                                 * [out][in][k][k]; transposed:
                                 * [in][out][k][k] (PyTorch layouts) */
  const float *bias;            /* host, [out]; never NULL (zeros when the
                                 * layer has none) */
  uint32_t input;               /* buffer read (its channels ==
                                 * in_channels) */
  uint32_t output;              /* buffer written */
  uint32_t output_channel_offset;       /* first channel written in the
                                         * output (concat) */
} P3dcConvLayer;

typedef struct
{
  uint32_t n_buffers;
  const P3dcConvBufferDesc *buffers;
  uint32_t n_layers;
  const P3dcConvLayer *layers;   /* run in this order */
} P3dcConvNetDesc;

/* A reader of a buffer on either path (the decode reads the heads through
 * this): element (c, y, x) is at data + c * channel_stride + y * row_stride
 * + x * column_stride, counted in elements of the view's type. */
typedef struct
{
  const void *data;
  int half;                     /* 0 F32, 1 F16 */
  size_t channel_stride, row_stride, column_stride;     /* in elements */
} P3dcMapView;

/* Limits that validation enforces, so that every size and index of both
 * paths fits in 32 bits where the kernels count in 32 bits. */
#define P3DC_CONVNET_MAX_BUFFERS 4096u
#define P3DC_CONVNET_MAX_LAYERS 4096u
#define P3DC_CONVNET_MAX_ELEMENTS 0x7fffffffu
#define P3DC_CONVNET_MAX_KERNEL 16u

/* Checks that @desc describes a net both paths can run: at least one layer;
 * every buffer non-empty and at most P3DC_CONVNET_MAX_ELEMENTS elements;
 * every layer's weight and bias non-NULL, kernel and stride at least 1 and
 * at most P3DC_CONVNET_MAX_KERNEL, input and output buffers that exist, an
 * input whose channels are in_channels and that is not the output, output
 * sizes as the kind defines them (a transposed layer needs kernel ==
 * stride and padding 0; a convolution padding < kernel), the channel slice
 * [offset, offset + out_channels) inside the output buffer; buffer 0 never
 * written; every channel of every other buffer written by exactly one
 * layer; a buffer read only after every layer writing it has run.
 * P3DC_OK, or P3DC_ERROR_INVALID_ARGUMENT with the reason (naming the layer
 * or buffer) in @message when it is not NULL. */
P3dcResult p3dc_convnet_validate (const P3dcConvNetDesc * desc, char *message,
    size_t message_len);

/* channels * height * width of buffer @buffer of a valid @desc. */
size_t p3dc_convnet_buffer_elements (const P3dcConvNetDesc * desc,
    uint32_t buffer);

/* The C reference: runs every layer of a valid @desc on @input ([C][H][W]
 * float32 of buffer 0) into @buffers, an array of n_buffers pointers to
 * caller-allocated float32 [C][H][W] tensors (buffers[0] is ignored and
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
 * (NCHW, no TF32). */
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
 * buffer 0 on the device, [C][H][W] F32 (or F16 when @input_half), and must
 * stay valid until the work is done. */
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
 * not), for logs and benchmarks; writes at most @len bytes with the NUL. */
void p3dc_convnet_cuda_describe_layer (const P3dcConvNet * net, uint32_t layer,
    char *text, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* P3DC_CONVNET_H */
