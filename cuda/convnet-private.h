/* Internal to the compute library: the small kernels of the convolutional
 * network's CUDA path (convnet.cu), called by the cuDNN runner
 * (convnet_cudnn.c). */
#ifndef P3DC_CONVNET_PRIVATE_H
#define P3DC_CONVNET_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* [C][H][W] F32 or F16 (@in_half) to the net's storage: F16 NHWC with
 * @stored_channels (>= channels) per pixel when @nhwc (then @out_half must
 * be set; the padding channels are left as they are), else NCHW in
 * @out_half's type. */
P3dcResult p3dc_convnet_convert_input (const void *in, int in_half, void *out,
    int out_half, int nhwc, uint32_t channels, uint32_t stored_channels,
    uint32_t height, uint32_t width, P3dcCudaStream stream);

/* The end of a layer that cuDNN could not finish itself: bias, optional
 * ReLU and the store into a channel slice of the output, from the raw
 * convolution result in @src (packed, the net's layout and type, with
 * src_channels channels of src_height x src_width).  shuffle == 1: output
 * channel o at (y, x) is source channel o at (y, x); shuffle == s (a
 * transposed convolution run as a 1x1 convolution to s * s * out
 * channels): it is source channel ((y % s) * s + x % s) * src_group + o
 * at (y / s, x / s). */
typedef struct
{
  const void *src;
  uint32_t src_channels, src_height, src_width;
  uint32_t src_group;           /* channels per shuffle position */
  void *dst;                    /* element (0, 0, 0) of the slice */
  size_t dst_channel_stride, dst_row_stride, dst_column_stride;
  uint32_t out_channels, out_height, out_width;
  uint32_t shuffle;
  const float *bias;            /* device, [out_channels] */
  int relu;
  int half;                     /* src and dst F16 */
  int nhwc;                     /* src NHWC (else NCHW) */
} P3dcConvEpilogue;

P3dcResult p3dc_convnet_epilogue (const P3dcConvEpilogue * epilogue,
    P3dcCudaStream stream);

#ifdef __cplusplus
}
#endif

#endif /* P3DC_CONVNET_PRIVATE_H */
