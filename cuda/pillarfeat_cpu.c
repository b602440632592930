/* Reference for pillarfeat.cu, and the parameter checks both paths share. */
#include <math.h>
#include <string.h>

#include "half.h"
#include "pillarfeat.h"

uint32_t
p3dc_pillar_feature_count (P3dcPillarFeatureSet set)
{
  switch (set) {
    case P3DC_PILLAR_FEATURES_POINTPILLARS_10:
      return 10;
    case P3DC_PILLAR_FEATURES_MMDET3D_9:
      return 9;
    case P3DC_PILLAR_FEATURES_POINTPILLARS_11:
    case P3DC_PILLAR_FEATURES_MMDET3D_11:
      return 11;
    default:
      return 0;
  }
}

P3dcResult
p3dc_pillarfeat_params_validate (const P3dcPillarFeatParams * params)
{
  int axis;

  if (params == NULL || p3dc_pillar_feature_count (params->features) == 0)
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (params->channels < 3 || params->max_points == 0
      || params->max_voxels == 0)
    return P3DC_ERROR_INVALID_ARGUMENT;
  /* x, y and z are channels 0..2, so an intensity can only follow them */
  if (params->intensity_channel != -1 && (params->intensity_channel < 3
          || (uint32_t) params->intensity_channel >= params->channels))
    return P3DC_ERROR_INVALID_ARGUMENT;
  for (axis = 0; axis < 3; axis++) {
    if (!isfinite (params->voxel_size[axis]) || params->voxel_size[axis] <= 0.0f
        || !isfinite (params->center_offset[axis]))
      return P3DC_ERROR_INVALID_ARGUMENT;
  }
  if (params->max_voxels > P3DC_PILLARFEAT_MAX_VOXELS
      || params->max_points > P3DC_PILLARFEAT_MAX_POINTS
      || (uint64_t) params->max_voxels * params->max_points >
      P3DC_PILLARFEAT_MAX_SLOTS)
    return P3DC_ERROR_TOO_LARGE;
  return P3DC_OK;
}

P3dcResult
p3dc_pillarfeat_params_init (P3dcPillarFeatParams * params,
    P3dcPillarFeatureSet set, int half, uint32_t channels,
    int intensity_channel, uint32_t max_points, uint32_t max_voxels,
    const double voxel_size[3], const double range_min[3])
{
  int axis;

  if (params == NULL || voxel_size == NULL || range_min == NULL)
    return P3DC_ERROR_INVALID_ARGUMENT;
  memset (params, 0, sizeof (*params));
  params->features = set;
  params->half = half != 0;
  params->channels = channels;
  params->intensity_channel = intensity_channel;
  params->max_points = max_points;
  params->max_voxels = max_voxels;
  for (axis = 0; axis < 3; axis++) {
    params->voxel_size[axis] = (float) voxel_size[axis];
    /* one rounding of the exact half-cell position, as OpenPCDet's
     * x_offset = voxel_x / 2 + range_min (Python floats are doubles) */
    params->center_offset[axis] =
        (float) (voxel_size[axis] / 2.0 + range_min[axis]);
  }
  return p3dc_pillarfeat_params_validate (params);
}

size_t
p3dc_pillarfeat_features_size (const P3dcPillarFeatParams * params)
{
  if (p3dc_pillarfeat_params_validate (params) != P3DC_OK)
    return 0;
  return (size_t) params->max_voxels * params->max_points
      * p3dc_pillar_feature_count (params->features)
      * (params->half ? sizeof (uint16_t) : sizeof (float));
}

/* Row @voxel of the features (max_points points of feature_count values)
 * for a voxel below the count. */
static void
write_voxel (const P3dcPillarFeatParams * params, uint32_t feature_count,
    const P3dcPillarFeatInput * in, void *features_row, uint32_t voxel)
{
  const size_t row_floats = (size_t) params->max_points * params->channels;
  const float *points = in->voxels + voxel * row_floats;
  const int32_t *coord = in->coords + (size_t) voxel * 4;
  const size_t value_size = params->half ? sizeof (uint16_t) : sizeof (float);
  uint32_t point_count = in->num_points[voxel], p, f;
  float mean[3] = { 0.0f, 0.0f, 0.0f }, center[3];

  if (point_count > params->max_points)
    point_count = params->max_points;
  if (point_count > 0)
    p3dc_pillarfeat_mean (points, point_count, params->channels, mean);
  center[0] = p3dc_pillarfeat_center (coord[3], params->voxel_size[0],
      params->center_offset[0]);
  center[1] = p3dc_pillarfeat_center (coord[2], params->voxel_size[1],
      params->center_offset[1]);
  center[2] = p3dc_pillarfeat_center (coord[1], params->voxel_size[2],
      params->center_offset[2]);

  for (p = 0; p < point_count; p++) {
    const float *point = points + (size_t) p * params->channels;
    float extras[2];
    float values[P3DC_PILLAR_FEATURES_MAX];
    size_t at = (size_t) p * feature_count;

    p3dc_pillarfeat_point_extras (params->features, point, params->channels,
        params->intensity_channel, extras);
    p3dc_pillarfeat_point (params->features, point[0], point[1], point[2],
        extras, mean, center, values);
    for (f = 0; f < feature_count; f++) {
      if (params->half)
        ((uint16_t *) features_row)[at + f] = p3dc_float_to_half (values[f]);
      else
        ((float *) features_row)[at + f] = values[f];
    }
  }
  /* the unused slots: +0 in either format is all zero bits */
  memset ((uint8_t *) features_row + (size_t) point_count * feature_count *
      value_size, 0, (size_t) (params->max_points - point_count) *
      feature_count * value_size);
}

void
p3dc_pillarfeat_cpu (const P3dcPillarFeatParams * params,
    const P3dcPillarFeatInput * in, const P3dcPillarFeatOutput * out)
{
  uint32_t feature_count, count, voxel;
  size_t row_bytes;

  if (p3dc_pillarfeat_params_validate (params) != P3DC_OK || in == NULL
      || out == NULL || in->voxels == NULL || in->num_points == NULL
      || in->coords == NULL || in->count == NULL || out->features == NULL
      || out->coords == NULL || out->count == NULL)
    return;
  feature_count = p3dc_pillar_feature_count (params->features);
  row_bytes = (size_t) params->max_points * feature_count
      * (params->half ? sizeof (uint16_t) : sizeof (float));
  count = *in->count;
  if (count > params->max_voxels)
    count = params->max_voxels;

  for (voxel = 0; voxel < params->max_voxels; voxel++) {
    void *row = (uint8_t *) out->features + voxel * row_bytes;
    int32_t *coord = out->coords + (size_t) voxel * 4;

    if (voxel < count) {
      write_voxel (params, feature_count, in, row, voxel);
      memcpy (coord, in->coords + (size_t) voxel * 4, 4 * sizeof (int32_t));
    } else {
      memset (row, 0, row_bytes);
      memset (coord, 0, 4 * sizeof (int32_t));
    }
  }
  *out->count = count;
}
