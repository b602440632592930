/* pointcloudparse: a byte stream of raw point records (KITTI and nuScenes
 * .bin sweeps, NVIDIA's float16 dumps) -> application/x-point-cloud, one
 * sweep per file or per points-per-frame points. */
#ifndef __P3D_POINT_CLOUD_PARSE_H__
#define __P3D_POINT_CLOUD_PARSE_H__

#include <gst/base/gstbaseparse.h>

#include "p3dperception.h"

G_BEGIN_DECLS

/* The element type of every input channel. */
typedef enum
{
  P3D_POINT_CLOUD_PARSE_DATA_F32 = P3D_DATA_FORMAT_F32,
  P3D_POINT_CLOUD_PARSE_DATA_F16 = P3D_DATA_FORMAT_F16,
} P3dPointCloudParseData;

/* Record layouts of known datasets: each sets format, channels and
 * data-format at once; custom is any other combination. */
typedef enum
{
  P3D_POINT_CLOUD_PARSE_PRESET_CUSTOM = 0,
  P3D_POINT_CLOUD_PARSE_PRESET_KITTI,
  P3D_POINT_CLOUD_PARSE_PRESET_NUSCENES,
  P3D_POINT_CLOUD_PARSE_PRESET_NUSCENES_F16,
} P3dPointCloudParsePreset;

#define P3D_TYPE_POINT_CLOUD_PARSE (p3d_point_cloud_parse_get_type ())
G_DECLARE_FINAL_TYPE (P3dPointCloudParse, p3d_point_cloud_parse, P3D,
    POINT_CLOUD_PARSE, GstBaseParse);

struct _P3dPointCloudParse
{
  GstBaseParse parent;

  /* properties, under the object lock; format is one of the point formats
   * (P3D_TYPE_POINT_FORMAT), and its "auto" is refused at start */
  P3dPointFormat format;
  guint channels;
  P3dPointCloudParseData data_format;
  guint points_per_frame;
  gint fps_n;
  gint fps_d;

  /* streaming: the input record as it was at start () */
  const P3dPointFormatInfo *in_finfo;
  guint in_channels;
  guint in_value_size;
  gsize in_record;
  guint active_points_per_frame;
  gint active_fps_n;
  gint active_fps_d;

  /* some input reached handle_frame since start or the last flush: an EOS
   * without it is an empty input */
  gboolean saw_data;
  /* sweeps output since start or the last flush */
  guint64 frames;
  /* negotiated: the output point format */
  P3dPointCloudInfo out_info;
  gboolean negotiated;
};

GST_ELEMENT_REGISTER_DECLARE (pointcloudparse);

G_END_DECLS

#endif /* __P3D_POINT_CLOUD_PARSE_H__ */
