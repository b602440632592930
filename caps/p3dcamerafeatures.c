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

/* The optional image-width, image-height and image-aug: all three or
 * none, image-aug 6 finite numbers a camera. */
static gboolean
image_from_structure (const GstStructure * s, P3dCameraFeaturesInfo * info)
{
  gboolean has_width = gst_structure_has_field (s, "image-width");
  gboolean has_height = gst_structure_has_field (s, "image-height");
  gboolean has_aug = gst_structure_has_field (s, "image-aug");
  gdouble aug[P3D_CAMERA_FEATURES_MAX_CAMERAS * 6];
  guint i;

  if (!has_width && !has_height && !has_aug)
    return TRUE;
  if (!has_width || !has_height || !has_aug) {
    GST_DEBUG ("refused: image-width, image-height and image-aug come "
        "together (width %s, height %s, aug %s)", has_width ? "set" : "absent",
        has_height ? "set" : "absent", has_aug ? "set" : "absent");
    return FALSE;
  }
  if (!p3d_structure_get_uint_in_range (s, "image-width", 1,
          P3D_CAMERA_FEATURES_MAX_IMAGE_SIDE, &info->image_width)
      || !p3d_structure_get_uint_in_range (s, "image-height", 1,
          P3D_CAMERA_FEATURES_MAX_IMAGE_SIDE, &info->image_height)
      || !p3d_structure_get_double_array (s, "image-aug", info->cameras * 6,
          aug))
    return FALSE;
  for (i = 0; i < info->cameras; i++)
    memcpy (info->image_aug[i], aug + i * 6, sizeof (info->image_aug[i]));
  info->has_image = TRUE;
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
      || !p3d_structure_get_framerate (s, &parsed.fps_n, &parsed.fps_d)
      || !image_from_structure (s, &parsed))
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
  if (info->has_image) {
    gst_structure_set (s, "image-width", G_TYPE_INT, (gint) info->image_width,
        "image-height", G_TYPE_INT, (gint) info->image_height, NULL);
    p3d_structure_set_double_array (s, "image-aug", info->cameras * 6,
        &info->image_aug[0][0]);
  }
  return gst_caps_new_full (s, NULL);
}

gboolean
p3d_camera_features_info_image_is_equal (const P3dCameraFeaturesInfo * a,
    const P3dCameraFeaturesInfo * b)
{
  if (a->has_image != b->has_image)
    return FALSE;
  if (!a->has_image)
    return TRUE;
  return a->cameras == b->cameras && a->image_width == b->image_width
      && a->image_height == b->image_height
      && memcmp (a->image_aug, b->image_aug,
      a->cameras * sizeof (a->image_aug[0])) == 0;
}

gboolean
p3d_camera_features_info_is_equal (const P3dCameraFeaturesInfo * a,
    const P3dCameraFeaturesInfo * b)
{
  return a->format == b->format && a->cameras == b->cameras
      && a->channels == b->channels && a->depth_bins == b->depth_bins
      && a->width == b->width && a->height == b->height
      && a->fps_n == b->fps_n && a->fps_d == b->fps_d
      && p3d_camera_features_info_image_is_equal (a, b);
}

void
p3d_camera_features_info_get_img_aug (const P3dCameraFeaturesInfo * info,
    guint camera, gdouble matrix[16])
{
  const gdouble *a;

  g_return_if_fail (info != NULL && info->has_image);
  g_return_if_fail (camera < info->cameras);
  a = info->image_aug[camera];
  memset (matrix, 0, 16 * sizeof (gdouble));
  matrix[0] = a[0];
  matrix[1] = a[1];
  matrix[3] = a[2];
  matrix[4] = a[3];
  matrix[5] = a[4];
  matrix[7] = a[5];
  matrix[10] = 1.0;
  matrix[15] = 1.0;
}
