/* camprep: what the reference (camprep_cpu.c) and the kernels (camprep.cu)
 * share: the plan's tables, and the integer arithmetic of a pixel, written
 * once for both so that they agree bit for bit.  Not installed. */
#ifndef P3DC_CAMPREP_PRIVATE_H
#define P3DC_CAMPREP_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "camprep.h"
#include "hostdevice.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PIL's fixed point (Resample.c: 32 - 8 - 2 bits). */
#define P3DC_CAMPREP_PRECISION_BITS 22

/* One axis of the resize and crop: for output index i, the first source
 * index bounds[2 i] and the tap count bounds[2 i + 1] (0 for an output
 * outside the resized image: it is 0), and the taps' weights
 * weights[i * ksize .. + count). */
typedef struct
{
  uint32_t ksize;
  int32_t *bounds;
  int32_t *weights;
} P3dcCamPrepAxis;

struct _P3dcCamPrepPlan
{
  P3dcCamPrepParams params;
  P3dcCamPrepAxis columns;      /* out_width outputs */
  P3dcCamPrepAxis rows;         /* out_height outputs */
  /* the frame rows the output reads */
  uint32_t row_first, row_count;
};

/* What a pixel fetch needs to know of the frame. */
typedef struct
{
  uint32_t layout;
  uint32_t width, height;
  uint32_t pixel_stride;
  uint32_t offsets[3];
  P3dcCamPrepYuv yuv;
} P3dcCamPrepSource;

static inline void
p3dc_camprep_source_from_params (P3dcCamPrepSource * source,
    const P3dcCamPrepParams * params)
{
  source->layout = (uint32_t) params->layout;
  source->width = params->width;
  source->height = params->height;
  source->pixel_stride = params->pixel_stride;
  source->offsets[0] = params->offsets[0];
  source->offsets[1] = params->offsets[1];
  source->offsets[2] = params->offsets[2];
  source->yuv = params->yuv;
}

static P3DC_HOST_DEVICE int
p3dc_camprep_clip255 (int value)
{
  return value < 0 ? 0 : value > 255 ? 255 : value;
}

/* PIL's clip8: the sum's integer part, clipped. */
static P3DC_HOST_DEVICE int
p3dc_camprep_clip8 (int32_t sum)
{
  return p3dc_camprep_clip255 (sum >> P3DC_CAMPREP_PRECISION_BITS);
}

static P3DC_HOST_DEVICE const uint8_t *
p3dc_camprep_row (const uint8_t * plane, int32_t stride, uint32_t row)
{
  return plane + (ptrdiff_t) stride * (ptrdiff_t) row;
}

/* libjpeg's upsampling of one chroma component at full-size pixel (x, y):
 * @plane holds chroma_width x chroma_height samples @pitch bytes apart from
 * byte @offset of each row.  h2v2_fancy_upsample, unless the chroma is at
 * most 2 samples wide, where libjpeg (jdsample.c: fancy only when
 * downsampled_width > 2) repeats each sample over its 2 x 2 pixels. */
static P3DC_HOST_DEVICE int
p3dc_camprep_chroma (const uint8_t * plane, int32_t stride, uint32_t pitch,
    uint32_t offset, uint32_t chroma_width, uint32_t chroma_height,
    uint32_t x, uint32_t y)
{
  uint32_t near_row = y >> 1, column = x >> 1;
  uint32_t far_row, other;
  const uint8_t *near_line, *far_line;
  int this_sum, other_sum;

  if (chroma_width <= 2)
    return p3dc_camprep_row (plane, stride, near_row)[offset + column * pitch];
  /* the further row: above for an even row, below for an odd one */
  if (y & 1u)
    far_row = near_row + 1 < chroma_height ? near_row + 1 : near_row;
  else
    far_row = near_row > 0 ? near_row - 1 : 0;
  if (x & 1u)
    other = column + 1 < chroma_width ? column + 1 : column;
  else
    other = column > 0 ? column - 1 : 0;
  near_line = p3dc_camprep_row (plane, stride, near_row) + offset;
  far_line = p3dc_camprep_row (plane, stride, far_row) + offset;
  this_sum = 3 * near_line[column * pitch] + far_line[column * pitch];
  other_sum = 3 * near_line[other * pitch] + far_line[other * pitch];
  return (3 * this_sum + other_sum + ((x & 1u) ? 7 : 8)) >> 4;
}

/* The RGB bytes of frame pixel (x, y). */
static P3DC_HOST_DEVICE void
p3dc_camprep_fetch (const P3dcCamPrepSource * source,
    const uint8_t * const *planes, const int32_t * strides, uint32_t x,
    uint32_t y, int rgb[3])
{
  const P3dcCamPrepYuv *yuv = &source->yuv;
  uint32_t chroma_width, chroma_height;
  int32_t luma;
  int u, v;

  if (source->layout == P3DC_CAMPREP_PACKED_RGB) {
    const uint8_t *pixel = p3dc_camprep_row (planes[0], strides[0], y) +
        (size_t) x * source->pixel_stride;

    rgb[0] = pixel[source->offsets[0]];
    rgb[1] = pixel[source->offsets[1]];
    rgb[2] = pixel[source->offsets[2]];
    return;
  }
  chroma_width = (source->width + 1) >> 1;
  chroma_height = (source->height + 1) >> 1;
  luma = p3dc_camprep_row (planes[0], strides[0], y)[x];
  if (source->layout == P3DC_CAMPREP_YUV420_PLANAR) {
    u = p3dc_camprep_chroma (planes[1], strides[1], 1, 0, chroma_width,
        chroma_height, x, y);
    v = p3dc_camprep_chroma (planes[2], strides[2], 1, 0, chroma_width,
        chroma_height, x, y);
  } else {
    u = p3dc_camprep_chroma (planes[1], strides[1], 2, source->offsets[1],
        chroma_width, chroma_height, x, y);
    v = p3dc_camprep_chroma (planes[1], strides[1], 2, source->offsets[2],
        chroma_width, chroma_height, x, y);
  }
  luma = yuv->y_scale * (luma - yuv->y_offset);
  u -= 128;
  v -= 128;
  rgb[0] = p3dc_camprep_clip255 ((luma + yuv->cr_r * v + 32768) >> 16);
  rgb[1] = p3dc_camprep_clip255 ((luma + yuv->cb_g * u + yuv->cr_g * v +
          32768) >> 16);
  rgb[2] = p3dc_camprep_clip255 ((luma + yuv->cb_b * u + 32768) >> 16);
}

/* The horizontal pass at output column @column of frame row @y: three
 * bytes, 0 outside the resized image. */
static P3DC_HOST_DEVICE void
p3dc_camprep_horizontal (const P3dcCamPrepSource * source,
    const uint8_t * const *planes, const int32_t * strides,
    const int32_t * bounds, const int32_t * weights, uint32_t ksize,
    uint32_t column, uint32_t y, uint8_t out[3])
{
  const int32_t first = bounds[2 * column], count = bounds[2 * column + 1];
  const int32_t *w = weights + (size_t) column * ksize;
  int32_t sums[3] = { 1 << (P3DC_CAMPREP_PRECISION_BITS - 1),
    1 << (P3DC_CAMPREP_PRECISION_BITS - 1),
    1 << (P3DC_CAMPREP_PRECISION_BITS - 1)
  };
  int32_t k;

  for (k = 0; k < count; k++) {
    int rgb[3];

    p3dc_camprep_fetch (source, planes, strides, (uint32_t) (first + k), y,
        rgb);
    sums[0] += rgb[0] * w[k];
    sums[1] += rgb[1] * w[k];
    sums[2] += rgb[2] * w[k];
  }
  out[0] = (uint8_t) p3dc_camprep_clip8 (sums[0]);
  out[1] = (uint8_t) p3dc_camprep_clip8 (sums[1]);
  out[2] = (uint8_t) p3dc_camprep_clip8 (sums[2]);
}

/* The vertical pass at output (@column, @row) of colour @colour from the
 * horizontal pass's plane of that colour (@work: row_count rows of
 * out_width bytes, the first being frame row @row_first). */
static P3DC_HOST_DEVICE int
p3dc_camprep_vertical (const uint8_t * work, uint32_t out_width,
    uint32_t row_first, const int32_t * bounds, const int32_t * weights,
    uint32_t ksize, uint32_t column, uint32_t row)
{
  const int32_t first = bounds[2 * row], count = bounds[2 * row + 1];
  const int32_t *w = weights + (size_t) row * ksize;
  int32_t sum = 1 << (P3DC_CAMPREP_PRECISION_BITS - 1);
  int32_t k;

  for (k = 0; k < count; k++)
    sum += work[(size_t) (first + k - (int32_t) row_first) * out_width +
        column] * w[k];
  return p3dc_camprep_clip8 (sum);
}

#ifdef __cplusplus
}
#endif

#endif /* P3DC_CAMPREP_PRIVATE_H */
