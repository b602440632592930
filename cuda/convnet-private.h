/* Internal to the compute library: the arithmetic that the layer graph's
 * reference (convnet_cpu.c) and its CUDA kernels (convnet.cu) share, and
 * those kernels, called by the cuDNN runner (convnet_cudnn.c). */
#ifndef P3DC_CONVNET_PRIVATE_H
#define P3DC_CONVNET_PRIVATE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "convnet.h"
#include "hostdevice.h"
#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The source of output position @o along an axis of @in cells giving @out
 * cells: F.interpolate's nearest rule, in float. */
static P3DC_HOST_DEVICE uint32_t
p3dc_convnet_nearest_source (uint32_t o, uint32_t in, uint32_t out)
{
  float scale = (float) in / (float) out;
  uint32_t s = (uint32_t) floorf ((float) o * scale);

  return s < in - 1 ? s : in - 1;
}

/* The bilinear taps of output position @o along an axis (convnet.h): the
 * cells i0, i1 and their weights l0, l1, in float. */
static P3DC_HOST_DEVICE void
p3dc_convnet_bilinear_source (uint32_t o, uint32_t in, uint32_t out,
    int align_corners, uint32_t * i0, uint32_t * i1, float *l0, float *l1)
{
  float r;

  if (align_corners) {
    float scale = out > 1 ? (float) (in - 1) / (float) (out - 1) : 0.0f;

    r = scale * (float) o;
  } else {
    float scale = (float) in / (float) out;

    r = scale * ((float) o + 0.5f) - 0.5f;
    if (r < 0.0f)
      r = 0.0f;
  }
  *i0 = (uint32_t) r;
  if (*i0 > in - 1)
    *i0 = in - 1;
  *i1 = *i0 + (*i0 < in - 1 ? 1u : 0u);
  *l1 = r - (float) *i0;
  *l0 = 1.0f - *l1;
}

/* The bilinear value from the four taps, in the order of convnet.h. */
static P3DC_HOST_DEVICE float
p3dc_convnet_bilinear (float ly0, float ly1, float lx0, float lx1, float x00,
    float x01, float x10, float x11)
{
  return ly0 * (lx0 * x00 + lx1 * x01) + ly1 * (lx0 * x10 + lx1 * x11);
}

/* ReLU as both paths apply it: NaN to 0 too. */
static P3DC_HOST_DEVICE float
p3dc_convnet_relu (int relu, float v)
{
  return relu && !(v > 0.0f) ? 0.0f : v;
}

/* A tensor in device memory as a kernel reads or writes it: element (n,
 * c, y, x) at data + n * batch + c * channel + y * row + x * column (strides
 * in elements of the storage type). */
typedef struct
{
  const void *data;
  size_t batch, channel, row, column;
} P3dcConvTensor;

/* [N][C][H][W] F32 or F16 (@in_half) to the net's storage: F16 NHWC with
 * @stored_channels (>= channels; 4 or a multiple of 8, as the runner stores
 * them, else P3DC_ERROR_INVALID_ARGUMENT) per pixel when @nhwc (then
 * @out_half must be set; the padding channels stay zero), else NCHW in
 * @out_half's type. */
P3dcResult p3dc_convnet_convert_input (const void *in, int in_half, void *out,
    int out_half, int nhwc, uint32_t batch, uint32_t channels,
    uint32_t stored_channels, uint32_t height, uint32_t width,
    P3dcCudaStream stream);

/* The end of a convolution that cuDNN could not finish itself: bias, the
 * residual, optional ReLU and the store into a channel slice of the
 * output, from the raw convolution result in @src (packed, the net's
 * layout and type, batch items of src_channels channels of src_height x
 * src_width).  shuffle 1 x 1: output channel o at (y, x) is source
 * channel o at (y, x); shuffle sy x sx (a transposed convolution run as a
 * 1x1 convolution to sy * sx * out channels): it is source channel
 * ((y % sy) * sx + x % sx) * src_group + o at (y / sy, x / sx). */
typedef struct
{
  const void *src;
  uint32_t batch;
  uint32_t src_channels, src_height, src_width;
  uint32_t src_group;           /* channels per shuffle position */
  P3dcConvTensor dst;           /* element (0, 0, 0, 0) of the slice */
  uint32_t out_channels, out_height, out_width;
  uint32_t shuffle_y, shuffle_x;
  const float *bias;            /* device, [out_channels] */
  P3dcConvTensor residual;      /* data NULL: none */
  int relu;
  int half;                     /* src, dst and residual F16 */
  int nhwc;                     /* src NHWC (else NCHW) */
} P3dcConvEpilogue;

P3dcResult p3dc_convnet_epilogue (const P3dcConvEpilogue * epilogue,
    P3dcCudaStream stream);

/* How many channels of a pixel one thread of the epilogue takes: 8 when
 * the source, output and residual are F16 NHWC whose channel counts,
 * offsets and strides are multiples of 8 (16-byte loads and stores), else
 * 1.  The result is the same either way. */
uint32_t p3dc_convnet_epilogue_lanes (const P3dcConvEpilogue * epilogue);

/* One layer of a kind other than the convolutions (and the copy of a
 * convolution's input slice): the reference's formulas in float, read
 * from and stored in the storage type. */
typedef struct
{
  P3dcConvKind kind;            /* add, max pool, upsampling, softmax, slice */
  uint32_t batch, channels;
  uint32_t in_height, in_width, out_height, out_width;
  P3dcConvTensor in, in2, out;  /* in2: add only */
  P3dcConvGeometry geometry;    /* max pool */
  int align_corners;
  int relu;
  int half;                     /* F16 storage (else F32) */
  int channels_fastest;         /* the layout keeps channels adjacent (NHWC):
                                 * threads walk them first */
} P3dcConvKernel;

P3dcResult p3dc_convnet_kernel (const P3dcConvKernel * kernel,
    P3dcCudaStream stream);

/* The same for the kinds of p3dc_convnet_kernel (softmax: always 1). */
uint32_t p3dc_convnet_kernel_lanes (const P3dcConvKernel * kernel);

/* A grouped convolution whose groups have at most 8 outputs (a merged
 * detection head's final layers, caps/p3dmodelbuild.c), on the tensor cores
 * (convnet_grouped.cu): F16 NHWC storage, F32 accumulation, bias and ReLU in
 * float, no residual; for the layers p3dc_convnet_grouped_supported()
 * accepts, on devices of compute capability 8.0 and later. */
typedef struct
{
  P3dcConvTensor in;            /* channel 0 of the input slice, F16 NHWC
                                 * (channel stride 1, 16-byte aligned) */
  P3dcConvTensor out;           /* channel 0 of the output slice */
  uint32_t batch, in_height, in_width, out_height, out_width;
  uint32_t groups, group_in, group_out;
  uint32_t kernel_y, kernel_x, pad_y, pad_x;
  const uint32_t *weight;       /* device: p3dc_convnet_grouped_weights() */
  const float *bias;            /* device, [groups * group_out] */
  int relu;
} P3dcConvGrouped;

/* Nonzero when the kernel runs a convolution of @geometry with these
 * channels: groups of a multiple of 32 inputs and at most 8 outputs,
 * stride 1, no dilation. */
int p3dc_convnet_grouped_supported (uint32_t in_channels,
    uint32_t out_channels, const P3dcConvGeometry * geometry);

/* The 32-bit words of the kernel's weights, and the weights
 * [groups * group_out][group_in][taps] (PyTorch's layout, taps = ky * kx)
 * converted to F16 and laid out as the mma instruction's B fragments. */
size_t p3dc_convnet_grouped_weight_words (uint32_t groups, uint32_t group_in,
    uint32_t taps);
void p3dc_convnet_grouped_weights (const float *weight, uint32_t groups,
    uint32_t group_in, uint32_t group_out, uint32_t taps, uint32_t * words);

/* Readies the kernel on the current device (its shared memory beyond the
 * default 48 KB): once, before the first launch and outside any stream
 * capture. */
P3dcResult p3dc_convnet_grouped_prepare (void);

P3dcResult p3dc_convnet_grouped (const P3dcConvGrouped * grouped,
    P3dcCudaStream stream);

#ifdef __cplusplus
}
#endif

#endif /* P3DC_CONVNET_PRIVATE_H */
