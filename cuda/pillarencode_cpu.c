/* Reference for pillarencode.cu (plain loops), and the parameter checks both
 * paths share. */
#include <math.h>
#include <string.h>

#include "half.h"
#include "pillarencode.h"
#include "pillarencode-private.h"

P3dcResult
p3dc_pillarencode_params_validate (const P3dcPillarEncodeParams * params)
{
  if (params == NULL || params->in_channels == 0 || params->out_channels == 0
      || params->max_points == 0 || params->max_voxels == 0
      || params->grid_x == 0 || params->grid_y == 0)
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (params->in_channels > P3DC_PILLARENCODE_MAX_IN_CHANNELS
      || (uint64_t) params->out_channels * (params->in_channels + 1ull) >
      P3DC_PILLARENCODE_MAX_WEIGHTS
      || (uint64_t) params->max_points *
      p3dc_pillarencode_padded_in (params->in_channels) >
      P3DC_PILLARENCODE_MAX_PILLAR_VALUES
      || params->max_voxels > P3DC_PILLARENCODE_MAX_VOXELS
      || (uint64_t) params->grid_x * params->grid_y >
      P3DC_PILLARENCODE_MAX_CELLS)
    return P3DC_ERROR_TOO_LARGE;
  return P3DC_OK;
}

size_t
p3dc_pillarencode_canvas_size (const P3dcPillarEncodeParams * params)
{
  if (p3dc_pillarencode_params_validate (params) != P3DC_OK)
    return 0;
  return (size_t) params->out_channels * params->grid_y * params->grid_x
      * (params->half_out ? sizeof (uint16_t) : sizeof (float));
}

size_t
p3dc_pillarencode_features_size (const P3dcPillarEncodeParams * params)
{
  if (p3dc_pillarencode_params_validate (params) != P3DC_OK)
    return 0;
  return (size_t) params->max_voxels * params->max_points
      * params->in_channels * (params->half_in ? sizeof (uint16_t) :
      sizeof (float));
}

int
p3dc_pillarencode_weights_finite (const P3dcPillarEncodeParams * params,
    const float *weight, const float *bias)
{
  size_t i, n = (size_t) params->out_channels * params->in_channels;

  for (i = 0; i < n; i++)
    if (!isfinite (weight[i]))
      return 0;
  for (i = 0; i < params->out_channels; i++)
    if (!isfinite (bias[i]))
      return 0;
  return 1;
}

/* The pillar's output vector into @vector [out]. */
static void
encode_pillar (const P3dcPillarEncodeParams * params, const float *weight,
    const float *bias, const void *features, uint32_t pillar, float *slot_x,
    float *vector)
{
  const size_t row = (size_t) params->max_points * params->in_channels;
  uint32_t s, c, i;

  for (c = 0; c < params->out_channels; c++)
    vector[c] = 0.0f;
  for (s = 0; s < params->max_points; s++) {
    size_t at = (size_t) pillar * row + (size_t) s * params->in_channels;

    for (i = 0; i < params->in_channels; i++)
      slot_x[i] = params->half_in
          ? p3dc_half_to_float (((const uint16_t *) features)[at + i])
          : ((const float *) features)[at + i];
    /* every slot, the zero rows of padding included, as PyTorch's max */
    for (c = 0; c < params->out_channels; c++) {
      float y = p3dc_pillarencode_slot (weight +
          (size_t) c * params->in_channels, slot_x, params->in_channels,
          bias[c]);

      if (y > vector[c])
        vector[c] = y;
    }
  }
}

P3dcResult
p3dc_pillarencode_cpu (const P3dcPillarEncodeParams * params,
    const float *weight, const float *bias, const P3dcPillarEncodeInput * in,
    void *canvas, uint32_t * dropped)
{
  float slot_x[P3DC_PILLARENCODE_MAX_PILLAR_VALUES];
  float vector[P3DC_PILLARENCODE_MAX_WEIGHTS];
  size_t cells;
  uint32_t count, pillar, lost = 0, c;

  if (p3dc_pillarencode_params_validate (params) != P3DC_OK || weight == NULL
      || bias == NULL || in == NULL || in->features == NULL
      || in->coords == NULL || in->count == NULL || canvas == NULL)
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (!p3dc_pillarencode_weights_finite (params, weight, bias))
    return P3DC_ERROR_INVALID_ARGUMENT;
  cells = (size_t) params->grid_x * params->grid_y;
  /* +0 in either format is all zero bits */
  memset (canvas, 0, p3dc_pillarencode_canvas_size (params));
  count = *in->count;
  if (count > params->max_voxels)
    count = params->max_voxels;

  for (pillar = 0; pillar < count; pillar++) {
    int32_t x = in->coords[(size_t) pillar * 4 + 3];
    int32_t y = in->coords[(size_t) pillar * 4 + 2];
    size_t cell;

    if (x < 0 || y < 0 || (uint32_t) x >= params->grid_x
        || (uint32_t) y >= params->grid_y) {
      lost++;
      continue;
    }
    cell = (size_t) y *params->grid_x + (uint32_t) x;
    encode_pillar (params, weight, bias, in->features, pillar, slot_x, vector);
    /* a later pillar in the same cell overwrites an earlier one */
    for (c = 0; c < params->out_channels; c++) {
      size_t at = (size_t) c * cells + cell;

      if (params->half_out)
        ((uint16_t *) canvas)[at] = p3dc_float_to_half (vector[c]);
      else
        ((float *) canvas)[at] = vector[c];
    }
  }
  if (dropped != NULL)
    *dropped = lost;
  return P3DC_OK;
}
