/* application/x-bev-features <-> P3dBevFeaturesInfo. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "p3dbevfeatures.h"
#include "p3dcapsfields.h"

#define GST_CAT_DEFAULT p3d_caps_debug

void
p3d_bev_features_info_init (P3dBevFeaturesInfo * info)
{
  g_return_if_fail (info != NULL);
  memset (info, 0, sizeof (*info));
  info->fps_d = 1;
}

gboolean
p3d_bev_features_info_get_layout (const P3dBevFeaturesInfo * info,
    P3dTensorLayout * layout)
{
  guint64 size = (guint64) info->channels * info->width * info->height *
      p3d_data_format_get_size (info->format);

  memset (layout, 0, sizeof (*layout));
  /* The buffer, not just the tensor, so that filesink can write it. */
  if (size > P3D_RECORD_MAX_BYTES) {
    P3D_CAPS_REFUSE ("%u channels of %u x %u %s make a record of %"
        G_GUINT64_FORMAT " bytes, more than %" G_GSIZE_FORMAT, info->channels,
        info->width, info->height, p3d_data_format_to_string (info->format),
        size, P3D_RECORD_MAX_BYTES);
    return FALSE;
  }
  layout->n_tensors = P3D_BEV_FEATURES_N_TENSORS;
  layout->size[P3D_BEV_FEATURES_TENSOR_FEATURES] = size;
  return TRUE;
}

gboolean
p3d_bev_features_info_from_caps (P3dBevFeaturesInfo * info,
    const GstCaps * caps)
{
  const GstStructure *s;
  P3dBevFeaturesInfo parsed;
  P3dTensorLayout layout;

  g_return_val_if_fail (info != NULL, FALSE);
  s = p3d_caps_get_fixed_structure (caps, P3D_MEDIA_TYPE_BEV_FEATURES);
  if (s == NULL)
    return FALSE;
  p3d_bev_features_info_init (&parsed);
  parsed.format = p3d_data_format_from_string (gst_structure_get_string (s,
          "format"));
  if (parsed.format == P3D_DATA_FORMAT_UNKNOWN) {
    P3D_CAPS_REFUSE ("unknown format '%s'",
        GST_STR_NULL (gst_structure_get_string (s, "format")));
    return FALSE;
  }
  if (!p3d_structure_get_uint_in_range (s, "channels", 1, 65536,
          &parsed.channels)
      || !p3d_structure_get_uint_in_range (s, "width", 1,
          P3D_BEV_FEATURES_MAX_SIDE, &parsed.width)
      || !p3d_structure_get_uint_in_range (s, "height", 1,
          P3D_BEV_FEATURES_MAX_SIDE, &parsed.height)
      || !p3d_structure_get_framerate (s, &parsed.fps_n, &parsed.fps_d))
    return FALSE;
  if (gst_structure_has_field (s, "layout")) {
    const gchar *layout = gst_structure_get_string (s, "layout");

    if (g_strcmp0 (layout, "yx") == 0) {
      parsed.layout = P3D_BEV_FEATURES_LAYOUT_YX;
    } else if (g_strcmp0 (layout, "xy") == 0) {
      parsed.layout = P3D_BEV_FEATURES_LAYOUT_XY;
    } else {
      P3D_CAPS_REFUSE ("layout '%s' is neither yx nor xy",
          GST_STR_NULL (layout));
      return FALSE;
    }
  }
  if (gst_structure_has_field (s, "range")) {
    if (!p3d_structure_get_double_array (s, "range", 6, parsed.range))
      return FALSE;
    if (!(parsed.range[3] > parsed.range[0])
        || !(parsed.range[4] > parsed.range[1])
        || !(parsed.range[5] >= parsed.range[2])) {
      P3D_CAPS_REFUSE ("empty range");
      return FALSE;
    }
    parsed.has_range = TRUE;
  }
  if (!p3d_bev_features_info_get_layout (&parsed, &layout))
    return FALSE;
  *info = parsed;
  return TRUE;
}

GstCaps *
p3d_bev_features_info_to_caps (const P3dBevFeaturesInfo * info)
{
  GstStructure *s;

  g_return_val_if_fail (info != NULL, NULL);
  g_return_val_if_fail (info->format != P3D_DATA_FORMAT_UNKNOWN, NULL);
  s = gst_structure_new (P3D_MEDIA_TYPE_BEV_FEATURES,
      "format", G_TYPE_STRING, p3d_data_format_to_string (info->format),
      "channels", G_TYPE_INT, (gint) info->channels,
      "width", G_TYPE_INT, (gint) info->width,
      "height", G_TYPE_INT, (gint) info->height,
      "layout", G_TYPE_STRING,
      info->layout == P3D_BEV_FEATURES_LAYOUT_XY ? "xy" : "yx", NULL);
  if (info->has_range)
    p3d_structure_set_double_array (s, "range", 6, info->range);
  p3d_structure_set_framerate (s, info->fps_n, info->fps_d);
  return gst_caps_new_full (s, NULL);
}

gboolean
p3d_bev_features_info_is_equal (const P3dBevFeaturesInfo * a,
    const P3dBevFeaturesInfo * b)
{
  return a->format == b->format && a->channels == b->channels
      && a->width == b->width && a->height == b->height
      && a->layout == b->layout && a->has_range == b->has_range
      && (!a->has_range || memcmp (a->range, b->range, sizeof a->range) == 0)
      && a->fps_n == b->fps_n && a->fps_d == b->fps_d;
}
