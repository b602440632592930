/* application/x-point-cloud <-> P3dPointCloudInfo. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "p3dcapsfields.h"
#include "p3dpointcloud.h"

#define GST_CAT_DEFAULT p3d_caps_debug

void
p3d_point_cloud_info_init (P3dPointCloudInfo * info)
{
  g_return_if_fail (info != NULL);
  memset (info, 0, sizeof (*info));
  info->finfo = p3d_point_format_get_info (P3D_POINT_FORMAT_UNKNOWN);
  info->fps_d = 1;
}

gboolean
p3d_point_cloud_info_set_format (P3dPointCloudInfo * info,
    P3dPointFormat format)
{
  g_return_val_if_fail (info != NULL, FALSE);
  if (format == P3D_POINT_FORMAT_UNKNOWN
      || p3d_point_format_to_string (format) == NULL)
    return FALSE;
  info->finfo = p3d_point_format_get_info (format);
  return TRUE;
}

gboolean
p3d_point_cloud_info_from_caps (P3dPointCloudInfo * info, const GstCaps * caps)
{
  const GstStructure *s;
  P3dPointCloudInfo parsed;
  P3dPointFormat format;

  g_return_val_if_fail (info != NULL, FALSE);
  s = p3d_caps_get_fixed_structure (caps, P3D_MEDIA_TYPE_POINT_CLOUD);
  if (s == NULL)
    return FALSE;
  p3d_point_cloud_info_init (&parsed);
  format = p3d_point_format_from_string (gst_structure_get_string (s,
          "format"));
  if (format == P3D_POINT_FORMAT_UNKNOWN) {
    P3D_CAPS_REFUSE ("unknown point format '%s'",
        GST_STR_NULL (gst_structure_get_string (s, "format")));
    return FALSE;
  }
  parsed.finfo = p3d_point_format_get_info (format);
  if (!p3d_structure_get_framerate (s, &parsed.fps_n, &parsed.fps_d))
    return FALSE;
  *info = parsed;
  return TRUE;
}

GstCaps *
p3d_point_cloud_info_to_caps (const P3dPointCloudInfo * info)
{
  GstStructure *s;

  g_return_val_if_fail (info != NULL, NULL);
  g_return_val_if_fail (info->finfo->format != P3D_POINT_FORMAT_UNKNOWN, NULL);
  s = gst_structure_new (P3D_MEDIA_TYPE_POINT_CLOUD, "format", G_TYPE_STRING,
      info->finfo->name, NULL);
  p3d_structure_set_framerate (s, info->fps_n, info->fps_d);
  return gst_caps_new_full (s, NULL);
}

gboolean
p3d_point_cloud_info_is_equal (const P3dPointCloudInfo * a,
    const P3dPointCloudInfo * b)
{
  return a->finfo == b->finfo && a->fps_n == b->fps_n && a->fps_d == b->fps_d;
}

gsize
p3d_point_cloud_info_get_max_points (const P3dPointCloudInfo * info)
{
  g_return_val_if_fail (info != NULL, 0);
  g_return_val_if_fail (info->finfo->format != P3D_POINT_FORMAT_UNKNOWN, 0);
  return P3D_RECORD_MAX_BYTES / P3D_POINT_CLOUD_INFO_STRIDE (info);
}

void
p3d_point_cloud_info_get_layout (const P3dPointCloudInfo * info,
    gsize max_points, P3dTensorLayout * layout)
{
  memset (layout, 0, sizeof (*layout));
  layout->n_tensors = 1;
  layout->record[0] = P3D_POINT_CLOUD_INFO_STRIDE (info);
  if (max_points == 0)
    max_points = p3d_point_cloud_info_get_max_points (info);
  layout->size[0] = max_points * layout->record[0];
}
