/* camprep: the plan (PIL's resampling tables), the colour conversions and
 * normalisations, and the C reference; see camprep.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "camprep-private.h"
#include "half.h"

/* Most taps of one axis's table (outputs x taps): a resize that shrinks by
 * more than this allows is refused rather than allocating gigabytes. */
#define MAX_TAPS (64u << 20)

/* 16-bit fixed point as libjpeg's FIX(): rounded half up. */
static int32_t
fix16 (double value)
{
  return (int32_t) floor (value * 65536.0 + 0.5);
}

void
p3dc_camprep_yuv_init (P3dcCamPrepYuv * yuv, P3dcYuvMatrix matrix,
    int full_range)
{
  double luma = full_range ? 1.0 : 255.0 / 219.0;
  double chroma = full_range ? 1.0 : 255.0 / 224.0;
  double cr_r, cb_b, cb_g, cr_g;

  if (matrix == P3DC_YUV_BT709 || matrix == P3DC_YUV_BT2020) {
    double kr = matrix == P3DC_YUV_BT709 ? 0.2126 : 0.2627;
    double kb = matrix == P3DC_YUV_BT709 ? 0.0722 : 0.0593;
    double kg = 1.0 - kr - kb;

    cr_r = 2.0 * (1.0 - kr);
    cb_b = 2.0 * (1.0 - kb);
    cb_g = 2.0 * (1.0 - kb) * kb / kg;
    cr_g = 2.0 * (1.0 - kr) * kr / kg;
  } else {
    /* libjpeg's rounded constants (jdcolor.c), so that a JPEG's planes
     * give the RGB that libjpeg gives */
    cr_r = 1.40200;
    cb_b = 1.77200;
    cb_g = 0.34414;
    cr_g = 0.71414;
  }
  yuv->y_offset = full_range ? 0 : 16;
  yuv->y_scale = fix16 (luma);
  yuv->cr_r = fix16 (cr_r * chroma);
  yuv->cb_b = fix16 (cb_b * chroma);
  /* libjpeg's green terms are minus FIX() of the coefficient's size */
  yuv->cb_g = -fix16 (cb_g * chroma);
  yuv->cr_g = -fix16 (cr_g * chroma);
}

void
p3dc_camprep_norm_init_divide (P3dcCamPrepNorm * norm, const float mean[3],
    const float std[3], float divisor)
{
  uint32_t c, p;

  for (c = 0; c < 3; c++) {
    norm->channel[c] = c;
    for (p = 0; p < 256; p++) {
      float value = (float) p / divisor;

      value = value - mean[c];
      norm->table[c][p] = value / std[c];
    }
  }
}

void
p3dc_camprep_norm_init_reciprocal (P3dcCamPrepNorm * norm,
    const double mean[3], const double std[3], int swap_rb)
{
  uint32_t c, p;

  for (c = 0; c < 3; c++) {
    float mean_f = (float) mean[c];
    float scale = (float) (1.0 / std[c]);

    norm->channel[c] = swap_rb ? 2 - c : c;
    for (p = 0; p < 256; p++) {
      float value = (float) p - mean_f;

      norm->table[c][p] = value * scale;
    }
  }
}

static double
bicubic_filter (double x)
{
  const double a = -0.5;

  if (x < 0.0)
    x = -x;
  if (x < 1.0)
    return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0)
    return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

static double
bilinear_filter (double x)
{
  if (x < 0.0)
    x = -x;
  if (x < 1.0)
    return 1.0 - x;
  return 0.0;
}

/* One axis: @in_size frame pixels resized to @resized and cropped at
 * @crop to @out outputs, as PIL's precompute_coeffs() and
 * normalize_coeffs_8bpc() compute the taps of each resized index. */
static P3dcResult
axis_init (P3dcCamPrepAxis * axis, P3dcCamPrepFilter filter,
    uint32_t in_size, uint32_t resized, int32_t crop, uint32_t out)
{
  double (*function) (double) = filter == P3DC_CAMPREP_BILINEAR ?
      bilinear_filter : bicubic_filter;
  double filter_support = filter == P3DC_CAMPREP_BILINEAR ? 1.0 : 2.0;
  double scale = (double) in_size / (double) resized;
  double filterscale = scale < 1.0 ? 1.0 : scale;
  double support = filter_support * filterscale;
  double *taps;
  uint32_t i;

  axis->ksize = (uint32_t) ceil (support) * 2 + 1;
  if ((uint64_t) axis->ksize * out > MAX_TAPS)
    return P3DC_ERROR_TOO_LARGE;
  axis->bounds = calloc ((size_t) out * 2, sizeof (int32_t));
  axis->weights = calloc ((size_t) out * axis->ksize, sizeof (int32_t));
  taps = malloc (axis->ksize * sizeof (double));
  if (axis->bounds == NULL || axis->weights == NULL || taps == NULL) {
    free (taps);
    return P3DC_ERROR_OUT_OF_MEMORY;
  }
  for (i = 0; i < out; i++) {
    int64_t index = (int64_t) i + crop;
    double center, ww = 0.0, ss = 1.0 / filterscale;
    int32_t xmin, xmax, x;

    if (index < 0 || index >= (int64_t) resized)
      continue;                 /* Image.crop's padding: no taps */
    center = ((double) index + 0.5) * scale;
    xmin = (int32_t) (center - support + 0.5);
    if (xmin < 0)
      xmin = 0;
    xmax = (int32_t) (center + support + 0.5);
    if (xmax > (int32_t) in_size)
      xmax = (int32_t) in_size;
    xmax -= xmin;
    for (x = 0; x < xmax; x++) {
      double w = function ((x + xmin - center + 0.5) * ss);

      taps[x] = w;
      ww += w;
    }
    for (x = 0; x < xmax; x++) {
      double w = ww != 0.0 ? taps[x] / ww : taps[x];

      axis->weights[(size_t) i * axis->ksize + x] = w < 0 ?
          (int32_t) (-0.5 + w * (1 << P3DC_CAMPREP_PRECISION_BITS)) :
          (int32_t) (0.5 + w * (1 << P3DC_CAMPREP_PRECISION_BITS));
    }
    axis->bounds[2 * i] = xmin;
    axis->bounds[2 * i + 1] = xmax;
  }
  free (taps);
  return P3DC_OK;
}

static int
side_ok (uint32_t side)
{
  return side >= 1 && side <= P3DC_CAMPREP_MAX_SIDE;
}

static int
params_ok (const P3dcCamPrepParams * p)
{
  if (!side_ok (p->width) || !side_ok (p->height)
      || !side_ok (p->resize_width) || !side_ok (p->resize_height)
      || !side_ok (p->out_width) || !side_ok (p->out_height)
      || p->crop_x < -(int32_t) P3DC_CAMPREP_MAX_SIDE
      || p->crop_x > (int32_t) P3DC_CAMPREP_MAX_SIDE
      || p->crop_y < -(int32_t) P3DC_CAMPREP_MAX_SIDE
      || p->crop_y > (int32_t) P3DC_CAMPREP_MAX_SIDE)
    return 0;
  if (p->filter != P3DC_CAMPREP_BICUBIC && p->filter != P3DC_CAMPREP_BILINEAR)
    return 0;
  switch (p->layout) {
    case P3DC_CAMPREP_PACKED_RGB:
      return (p->pixel_stride == 3 || p->pixel_stride == 4)
          && p->offsets[0] < p->pixel_stride && p->offsets[1] < p->pixel_stride
          && p->offsets[2] < p->pixel_stride;
    case P3DC_CAMPREP_YUV420_PLANAR:
      return 1;
    case P3DC_CAMPREP_YUV420_SEMIPLANAR:
      return (p->offsets[1] == 0 && p->offsets[2] == 1)
          || (p->offsets[1] == 1 && p->offsets[2] == 0);
    default:
      return 0;
  }
}

P3dcResult
p3dc_camprep_plan_new (const P3dcCamPrepParams * params,
    P3dcCamPrepPlan ** plan)
{
  P3dcCamPrepPlan *p;
  P3dcResult result;
  uint32_t i, last = 0;

  if (plan == NULL)
    return P3DC_ERROR_INVALID_ARGUMENT;
  *plan = NULL;
  if (params == NULL || !params_ok (params))
    return P3DC_ERROR_INVALID_ARGUMENT;
  p = calloc (1, sizeof (*p));
  if (p == NULL)
    return P3DC_ERROR_OUT_OF_MEMORY;
  p->params = *params;
  result = axis_init (&p->columns, params->filter, params->width,
      params->resize_width, params->crop_x, params->out_width);
  if (result == P3DC_OK)
    result = axis_init (&p->rows, params->filter, params->height,
        params->resize_height, params->crop_y, params->out_height);
  if (result != P3DC_OK) {
    p3dc_camprep_plan_free (p);
    return result;
  }
  /* the frame rows the vertical taps read */
  p->row_first = params->height;
  for (i = 0; i < params->out_height; i++) {
    uint32_t first = (uint32_t) p->rows.bounds[2 * i];
    uint32_t count = (uint32_t) p->rows.bounds[2 * i + 1];

    if (count == 0)
      continue;
    if (first < p->row_first)
      p->row_first = first;
    if (first + count > last)
      last = first + count;
  }
  p->row_count = last > p->row_first ? last - p->row_first : 0;
  if (p->row_count == 0)
    p->row_first = 0;
  *plan = p;
  return P3DC_OK;
}

void
p3dc_camprep_plan_free (P3dcCamPrepPlan * plan)
{
  if (plan == NULL)
    return;
  free (plan->columns.bounds);
  free (plan->columns.weights);
  free (plan->rows.bounds);
  free (plan->rows.weights);
  free (plan);
}

const P3dcCamPrepParams *
p3dc_camprep_plan_params (const P3dcCamPrepPlan * plan)
{
  return &plan->params;
}

void
p3dc_camprep_plan_rows (const P3dcCamPrepPlan * plan, uint32_t * first,
    uint32_t * count)
{
  *first = plan->row_first;
  *count = plan->row_count;
}

P3dcResult
p3dc_camprep_cpu (const P3dcCamPrepPlan * plan, const P3dcCamPrepFrame * frame,
    const P3dcCamPrepNorm * norm, void *out, int half_out)
{
  const P3dcCamPrepParams *p;
  P3dcCamPrepSource source;
  size_t plane_size;
  uint8_t *work;
  uint32_t c, u, v, y;

  if (plan == NULL || frame == NULL || norm == NULL || out == NULL)
    return P3DC_ERROR_INVALID_ARGUMENT;
  p = &plan->params;
  p3dc_camprep_source_from_params (&source, p);
  plane_size = (size_t) plan->row_count * p->out_width;
  work = malloc (plane_size * 3 + 1);
  if (work == NULL)
    return P3DC_ERROR_OUT_OF_MEMORY;

  /* the horizontal pass, into one 8-bit plane per colour */
  for (y = 0; y < plan->row_count; y++) {
    for (u = 0; u < p->out_width; u++) {
      uint8_t rgb[3];

      p3dc_camprep_horizontal (&source, frame->planes, frame->strides,
          plan->columns.bounds, plan->columns.weights, plan->columns.ksize, u,
          plan->row_first + y, rgb);
      for (c = 0; c < 3; c++)
        work[c * plane_size + (size_t) y * p->out_width + u] = rgb[c];
    }
  }
  /* the vertical pass and the normalisation */
  for (c = 0; c < 3; c++) {
    const uint8_t *colour = work + norm->channel[c] * plane_size;
    size_t base = (size_t) c * p->out_height * p->out_width;

    for (v = 0; v < p->out_height; v++) {
      for (u = 0; u < p->out_width; u++) {
        int byte = p3dc_camprep_vertical (colour, p->out_width,
            plan->row_first, plan->rows.bounds, plan->rows.weights,
            plan->rows.ksize, u, v);
        float value = norm->table[c][byte];
        size_t at = base + (size_t) v * p->out_width + u;

        if (half_out)
          ((uint16_t *) out)[at] = p3dc_float_to_half (value);
        else
          ((float *) out)[at] = value;
      }
    }
  }
  free (work);
  return P3DC_OK;
}
