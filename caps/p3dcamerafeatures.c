/* application/x-camera-features <-> P3dCameraFeaturesInfo. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "p3dcamerafeatures.h"
#include "p3dcapsfields.h"

#define GST_CAT_DEFAULT p3d_caps_debug

void
p3d_camera_features_info_init (P3dCameraFeaturesInfo * info)
{
  g_return_if_fail (info != NULL);
  memset (info, 0, sizeof (*info));
  info->fps_d = 1;
}

gboolean
p3d_camera_features_info_get_layout (const P3dCameraFeaturesInfo * info,
    P3dTensorLayout * layout)
{
  guint64 pixels = (guint64) info->cameras * info->width * info->height;
  guint64 element = p3d_data_format_get_size (info->format);
  guint64 features = pixels * info->channels * element;
  guint64 depth = pixels * info->depth_bins * element;

  memset (layout, 0, sizeof (*layout));
  /* Both tensors together: filesink writes a buffer in one call. */
  if (features + depth > P3D_RECORD_MAX_BYTES) {
    P3D_CAPS_REFUSE ("%u cameras of %u x %u pixels of %u channels and %u "
        "depth bins in %s make a record of %" G_GUINT64_FORMAT " bytes, more "
        "than %" G_GSIZE_FORMAT, info->cameras, info->width, info->height,
        info->channels, info->depth_bins,
        p3d_data_format_to_string (info->format), features + depth,
        P3D_RECORD_MAX_BYTES);
    return FALSE;
  }
  layout->n_tensors = P3D_CAMERA_FEATURES_N_TENSORS;
  layout->size[P3D_CAMERA_FEATURES_TENSOR_FEATURES] = features;
  layout->size[P3D_CAMERA_FEATURES_TENSOR_DEPTH] = depth;
  return TRUE;
}

gboolean
p3d_camera_features_info_from_caps (P3dCameraFeaturesInfo * info,
    const GstCaps * caps)
{
  const GstStructure *s;
  P3dCameraFeaturesInfo parsed;
  P3dTensorLayout layout;

  g_return_val_if_fail (info != NULL, FALSE);
  s = p3d_caps_get_fixed_structure (caps, P3D_MEDIA_TYPE_CAMERA_FEATURES);
  if (s == NULL)
    return FALSE;
  p3d_camera_features_info_init (&parsed);
  parsed.format = p3d_data_format_from_string (gst_structure_get_string (s,
          "format"));
  if (parsed.format == P3D_DATA_FORMAT_UNKNOWN) {
    P3D_CAPS_REFUSE ("unknown format '%s'",
        GST_STR_NULL (gst_structure_get_string (s, "format")));
    return FALSE;
  }
  if (!p3d_structure_get_uint_in_range (s, "cameras", 1,
          P3D_CAMERA_FEATURES_MAX_CAMERAS, &parsed.cameras)
      || !p3d_structure_get_uint_in_range (s, "channels", 1, 65536,
          &parsed.channels)
      || !p3d_structure_get_uint_in_range (s, "depth-bins", 1, 65536,
          &parsed.depth_bins)
      || !p3d_structure_get_uint_in_range (s, "width", 1,
          P3D_CAMERA_FEATURES_MAX_SIDE, &parsed.width)
      || !p3d_structure_get_uint_in_range (s, "height", 1,
          P3D_CAMERA_FEATURES_MAX_SIDE, &parsed.height)
      || !p3d_structure_get_framerate (s, &parsed.fps_n, &parsed.fps_d))
    return FALSE;
  if (!p3d_camera_features_info_get_layout (&parsed, &layout))
    return FALSE;
  *info = parsed;
  return TRUE;
}

GstCaps *
p3d_camera_features_info_to_caps (const P3dCameraFeaturesInfo * info)
{
  GstStructure *s;

  g_return_val_if_fail (info != NULL, NULL);
  g_return_val_if_fail (info->format != P3D_DATA_FORMAT_UNKNOWN, NULL);
  s = gst_structure_new (P3D_MEDIA_TYPE_CAMERA_FEATURES,
      "format", G_TYPE_STRING, p3d_data_format_to_string (info->format),
      "cameras", G_TYPE_INT, (gint) info->cameras,
      "channels", G_TYPE_INT, (gint) info->channels,
      "depth-bins", G_TYPE_INT, (gint) info->depth_bins,
      "width", G_TYPE_INT, (gint) info->width,
      "height", G_TYPE_INT, (gint) info->height, NULL);
  p3d_structure_set_framerate (s, info->fps_n, info->fps_d);
  return gst_caps_new_full (s, NULL);
}

gboolean
p3d_camera_features_info_is_equal (const P3dCameraFeaturesInfo * a,
    const P3dCameraFeaturesInfo * b)
{
  return a->format == b->format && a->cameras == b->cameras
      && a->channels == b->channels && a->depth_bins == b->depth_bins
      && a->width == b->width && a->height == b->height
      && a->fps_n == b->fps_n && a->fps_d == b->fps_d;
}
