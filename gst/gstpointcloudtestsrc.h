/* pointcloudtestsrc: a synthetic spinning lidar over a street scene, the
 * lidar counterpart of videotestsrc (application/x-point-cloud), or the
 * scene's true or candidate boxes (application/x-boxes3d). */
#ifndef __P3D_POINT_CLOUD_TEST_SRC_H__
#define __P3D_POINT_CLOUD_TEST_SRC_H__

#include <gst/base/gstpushsrc.h>

#include "pointcloudtestsrc-scene.h"
#include "p3dperception.h"

G_BEGIN_DECLS

typedef enum
{
  P3D_POINT_CLOUD_TEST_SRC_EMIT_POINTS = 0,
  P3D_POINT_CLOUD_TEST_SRC_EMIT_BOXES = 1,
  P3D_POINT_CLOUD_TEST_SRC_EMIT_CANDIDATES = 2,
} P3dPointCloudTestSrcEmit;

#define P3D_TYPE_POINT_CLOUD_TEST_SRC (p3d_point_cloud_test_src_get_type ())
G_DECLARE_FINAL_TYPE (P3dPointCloudTestSrc, p3d_point_cloud_test_src, P3D,
    POINT_CLOUD_TEST_SRC, GstPushSrc);

struct _P3dPointCloudTestSrc
{
  GstPushSrc parent;

  /* properties, under the object lock */
  P3dLidarSceneParams params;
  P3dPointFormat format;
  P3dPointCloudTestSrcEmit emit;
  guint max_boxes;
  guint candidates_per_object;
  gint cuda_device_id;
  /* the device shared in the pipeline (p3dcudacontext.h) */
  GstContext *context;

  /* streaming: copied from the properties in start() */
  P3dLidarScene *scene;
  P3dPointCloudTestSrcEmit active_emit;
  guint active_max_boxes;
  guint active_candidates_per_object;
  gint active_device_id;
  gint fps_n;
  gint fps_d;

  /* negotiated */
  P3dLidarChannels channels;
  gsize point_size;
  P3dTensorLayout layout;
  GstBufferPool *pool;

  /* a frame is written here, then copied into the buffer's tensor */
  gfloat *points;
  gsize points_size;
  P3dcBox3d *boxes;

  /* without motion, the one frame, whose memories every buffer shares */
  GstBuffer *frozen;
  guint64 frame;
  gboolean warned_truncated;
};

GST_ELEMENT_REGISTER_DECLARE (pointcloudtestsrc);

G_END_DECLS

#endif /* __P3D_POINT_CLOUD_TEST_SRC_H__ */
