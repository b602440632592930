/* Reference pooling for bevpool.cu: every cell's sum in exactly the order
 * bevpool.h defines (runs of consecutive feature rows of one column and
 * depth bin, fmaf within a run, run sums added in order), so the kernels
 * can be compared bit for bit. */
#include <math.h>
#include <stdlib.h>

#include "bevpool-private.h"
#include "half.h"

/* F16 inputs are widened once; the conversion is exact, so the sums are
 * those of the F16 values. */
static float *
widen (const uint16_t * half, size_t count)
{
  float *out = malloc (count * sizeof (float));
  size_t i;

  if (out == NULL)
    return NULL;
  for (i = 0; i < count; i++)
    out[i] = p3dc_half_to_float (half[i]);
  return out;
}

/* A float32 output value as the device writes it: its arithmetic gives
 * every NaN one bit pattern (0x7fffffff, whatever the NaN it came from),
 * where the host's keeps the payload of the NaN it propagates. */
static float
device_float (float value)
{
  union
  {
    uint32_t bits;
    float value;
  } canonical = {
    0x7fffffffu
  };

  return isnan (value) ? canonical.value : value;
}

static void
pool_cells (const P3dcBevGeometry * geometry, const float *features,
    const float *depth, float *acc, float *part, void *out, int half_out)
{
  const P3dcBevPoolParams *params = &geometry->params;
  const uint32_t channels = params->channels;
  const uint32_t pixels = params->feat_width * params->feat_height;
  const uint32_t camera_points = params->depth_bins * pixels;
  const uint32_t plane = params->nx * params->ny;
  uint32_t cell, c;

  for (cell = 0; cell < geometry->cells; cell++) {
    uint32_t begin = geometry->cell_start[cell];
    uint32_t end = geometry->cell_start[cell + 1];
    uint32_t z = cell / plane, i, previous = 0;
    size_t base = (size_t) z * channels * plane + (cell - z * plane);

    for (c = 0; c < channels; c++)
      acc[c] = 0.0f;
    for (i = begin; i < end; i++) {
      uint32_t p = geometry->points[i];
      uint32_t camera = p / camera_points;
      uint32_t row = camera * pixels + p % pixels;
      const float *f = features + (size_t) row * channels;
      float weight = depth[p];

      if (i == begin
          || !p3dc_bevpool_run_continues (&geometry->grid, previous, p)) {
        /* Close the previous run (none before the first point). */
        if (i > begin)
          for (c = 0; c < channels; c++)
            acc[c] = acc[c] + part[c];
        for (c = 0; c < channels; c++)
          part[c] = 0.0f;
      }
      for (c = 0; c < channels; c++)
        part[c] = fmaf (f[c], weight, part[c]);
      previous = p;
    }
    if (end > begin)
      for (c = 0; c < channels; c++)
        acc[c] = acc[c] + part[c];
    for (c = 0; c < channels; c++) {
      size_t o = base + (size_t) c * plane;

      if (half_out)
        ((uint16_t *) out)[o] = p3dc_float_to_half (acc[c]);
      else
        ((float *) out)[o] = device_float (acc[c]);
    }
  }
}

P3dcResult
p3dc_bevpool_cpu (const P3dcBevGeometry * geometry, const void *features,
    const void *depth, int half_in, void *out, int half_out)
{
  const float *features_f32 = features, *depth_f32 = depth;
  float *widened_features = NULL, *widened_depth = NULL, *scratch;
  P3dcResult result = P3DC_OK;

  if (geometry == NULL || !geometry->computed || features == NULL
      || depth == NULL || out == NULL)
    return P3DC_ERROR_INVALID_ARGUMENT;
  scratch = malloc (2 * (size_t) geometry->params.channels * sizeof (float));
  if (half_in) {
    widened_features = widen (features,
        p3dc_bevpool_features_size (&geometry->params));
    widened_depth = widen (depth, p3dc_bevpool_depth_size (&geometry->params));
    features_f32 = widened_features;
    depth_f32 = widened_depth;
  }
  if (scratch == NULL || features_f32 == NULL || depth_f32 == NULL)
    result = P3DC_ERROR_OUT_OF_MEMORY;
  else
    pool_cells (geometry, features_f32, depth_f32, scratch,
        scratch + geometry->params.channels, out, half_out);
  free (scratch);
  free (widened_features);
  free (widened_depth);
  return result;
}
