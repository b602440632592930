/* application/x-pillar-features <-> P3dPillarsInfo. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "p3dcapsfields.h"
#include "p3dpillars.h"

#define GST_CAT_DEFAULT p3d_caps_debug

guint64
p3d_pillars_get_record_size (guint max_voxels, guint max_points,
    guint channels, P3dDataFormat format)
{
  /* features [V][P][F], coords [V][4] int32, count uint32, as
   * p3d_pillars_info_get_layout() */
  return (guint64) max_voxels *max_points * channels *
      p3d_data_format_get_size (format) +
      (guint64) max_voxels *4 * sizeof (gint32) + sizeof (guint32);
}

/* The whole record is at most P3D_RECORD_MAX_BYTES, so that filesink can
 * write a buffer. */
static gboolean
record_size_valid (guint max_voxels, guint max_points, guint channels,
    P3dDataFormat format)
{
  guint64 size = p3d_pillars_get_record_size (max_voxels, max_points,
      channels, format);

  if (size > P3D_RECORD_MAX_BYTES) {
    P3D_CAPS_REFUSE ("%u voxels of %u points of %u %s features make a "
        "record of %" G_GUINT64_FORMAT " bytes, more than %" G_GSIZE_FORMAT,
        max_voxels, max_points, channels, p3d_data_format_to_string (format),
        size, P3D_RECORD_MAX_BYTES);
    return FALSE;
  }
  return TRUE;
}

void
p3d_pillars_info_init (P3dPillarsInfo * info)
{
  g_return_if_fail (info != NULL);
  memset (info, 0, sizeof (*info));
  info->features = P3D_FEATURE_SET_UNKNOWN;
  info->fps_d = 1;
}

gboolean
p3d_pillars_info_set (P3dPillarsInfo * info, P3dDataFormat format,
    P3dFeatureSet features, const P3dVoxelsInfo * voxels)
{
  g_return_val_if_fail (info != NULL && voxels != NULL, FALSE);
  if (p3d_data_format_get_size (format) == 0
      || p3d_feature_set_get_channels (features) == 0
      || !record_size_valid (voxels->max_voxels, voxels->max_points,
          p3d_feature_set_get_channels (features), format))
    return FALSE;
  info->format = format;
  info->features = features;
  info->channels = p3d_feature_set_get_channels (features);
  info->max_voxels = voxels->max_voxels;
  info->max_points = voxels->max_points;
  info->grid = voxels->grid;
  return TRUE;
}

gboolean
p3d_pillars_info_from_caps (P3dPillarsInfo * info, const GstCaps * caps)
{
  const GstStructure *s;
  P3dPillarsInfo parsed;

  g_return_val_if_fail (info != NULL, FALSE);
  s = p3d_caps_get_fixed_structure (caps, P3D_MEDIA_TYPE_PILLAR_FEATURES);
  if (s == NULL)
    return FALSE;
  p3d_pillars_info_init (&parsed);
  parsed.format = p3d_data_format_from_string (gst_structure_get_string (s,
          "format"));
  if (parsed.format == P3D_DATA_FORMAT_UNKNOWN) {
    P3D_CAPS_REFUSE ("unknown format '%s'",
        GST_STR_NULL (gst_structure_get_string (s, "format")));
    return FALSE;
  }
  parsed.features =
      p3d_feature_set_from_string (gst_structure_get_string (s, "features"));
  if (parsed.features == P3D_FEATURE_SET_UNKNOWN) {
    P3D_CAPS_REFUSE ("unknown feature set '%s'",
        GST_STR_NULL (gst_structure_get_string (s, "features")));
    return FALSE;
  }
  parsed.channels = p3d_feature_set_get_channels (parsed.features);
  if (!p3d_structure_get_uint_in_range (s, "max-voxels", 1,
          P3D_VOXELS_MAX_VOXELS, &parsed.max_voxels)
      || !p3d_structure_get_uint_in_range (s, "max-points", 1,
          P3D_VOXELS_MAX_POINTS, &parsed.max_points)
      || !p3d_structure_get_voxel_grid (s, &parsed.grid)
      || !p3d_structure_get_framerate (s, &parsed.fps_n, &parsed.fps_d))
    return FALSE;
  if (!record_size_valid (parsed.max_voxels, parsed.max_points,
          parsed.channels, parsed.format))
    return FALSE;
  *info = parsed;
  return TRUE;
}

GstCaps *
p3d_pillars_info_to_caps (const P3dPillarsInfo * info)
{
  GstStructure *s;

  g_return_val_if_fail (info != NULL, NULL);
  g_return_val_if_fail (info->features != P3D_FEATURE_SET_UNKNOWN, NULL);
  s = gst_structure_new (P3D_MEDIA_TYPE_PILLAR_FEATURES,
      "format", G_TYPE_STRING, p3d_data_format_to_string (info->format),
      "features", G_TYPE_STRING, p3d_feature_set_to_string (info->features),
      "max-voxels", G_TYPE_INT, (gint) info->max_voxels,
      "max-points", G_TYPE_INT, (gint) info->max_points, NULL);
  p3d_structure_set_voxel_grid (s, &info->grid);
  p3d_structure_set_framerate (s, info->fps_n, info->fps_d);
  return gst_caps_new_full (s, NULL);
}

gboolean
p3d_pillars_info_is_equal (const P3dPillarsInfo * a, const P3dPillarsInfo * b)
{
  return a->format == b->format && a->features == b->features
      && a->max_voxels == b->max_voxels && a->max_points == b->max_points
      && p3d_voxel_grid_is_equal (&a->grid, &b->grid)
      && a->fps_n == b->fps_n && a->fps_d == b->fps_d;
}

void
p3d_pillars_info_get_layout (const P3dPillarsInfo * info,
    P3dTensorLayout * layout)
{
  memset (layout, 0, sizeof (*layout));
  layout->n_tensors = P3D_PILLARS_N_TENSORS;
  layout->size[P3D_PILLARS_TENSOR_FEATURES] = (gsize) info->max_voxels *
      info->max_points * info->channels *
      p3d_data_format_get_size (info->format);
  layout->size[P3D_PILLARS_TENSOR_COORDS] =
      (gsize) info->max_voxels * 4 * sizeof (gint32);
  layout->size[P3D_PILLARS_TENSOR_COUNT] = sizeof (guint32);
}
