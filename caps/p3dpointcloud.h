/* gst-perception: application/x-point-cloud.
 *
 * One buffer is one sweep: N points of C float32 channels, C and their
 * meaning given by the caps field "format" (xyz, xyzi, xyzit, xyzir). N is
 * not in the caps (it changes every sweep): it is the tensor's size divided
 * by the point size. Optional "framerate".
 */
#ifndef __P3D_POINT_CLOUD_H__
#define __P3D_POINT_CLOUD_H__

#include <gst/gst.h>

#include "p3dformats.h"
#include "p3dtensor.h"

G_BEGIN_DECLS

#define P3D_MEDIA_TYPE_POINT_CLOUD "application/x-point-cloud"

/* Pad template caps accepting every point format. */
#define P3D_POINT_CLOUD_CAPS_ALL \
    P3D_MEDIA_TYPE_POINT_CLOUD ", format = (string) " P3D_POINT_FORMATS_ALL

typedef struct
{
  const P3dPointFormatInfo *finfo;
  gint fps_n;
  gint fps_d;

  /*< private > */
  gpointer _gst_reserved[GST_PADDING];
} P3dPointCloudInfo;

#define P3D_POINT_CLOUD_INFO_CHANNELS(info) ((info)->finfo->channels)
#define P3D_POINT_CLOUD_INFO_STRIDE(info) ((gsize) (info)->finfo->channels * 4)

void p3d_point_cloud_info_init (P3dPointCloudInfo * info);
gboolean p3d_point_cloud_info_set_format (P3dPointCloudInfo * info,
    P3dPointFormat format);
gboolean p3d_point_cloud_info_from_caps (P3dPointCloudInfo * info,
    const GstCaps * caps);
GstCaps *p3d_point_cloud_info_to_caps (const P3dPointCloudInfo * info);
gboolean p3d_point_cloud_info_is_equal (const P3dPointCloudInfo * a,
    const P3dPointCloudInfo * b);
/* The most points one buffer of @info's format holds: its tensor is at
 * most P3D_RECORD_MAX_BYTES, so that filesink can write it. */
gsize p3d_point_cloud_info_get_max_points (const P3dPointCloudInfo * info);
/* One variable-length tensor of whole points, at most @max_points of them
 * (0: p3d_point_cloud_info_get_max_points(), so a larger buffer is
 * refused). */
void p3d_point_cloud_info_get_layout (const P3dPointCloudInfo * info,
    gsize max_points, P3dTensorLayout * layout);

G_END_DECLS

#endif /* __P3D_POINT_CLOUD_H__ */
