/* cameratestsrc: what one camera of a calibrated rig sees of
 * pointcloudtestsrc's street (video/x-raw), or its per-pixel depth or
 * class. */
#ifndef __P3D_CAMERA_TEST_SRC_H__
#define __P3D_CAMERA_TEST_SRC_H__

#include <gst/base/gstpushsrc.h>
#include <gst/video/video.h>

#include "cameratestsrc-render.h"

G_BEGIN_DECLS

typedef enum
{
  P3D_CAMERA_TEST_SRC_EMIT_RGB = 0,
  P3D_CAMERA_TEST_SRC_EMIT_DEPTH = 1,
  P3D_CAMERA_TEST_SRC_EMIT_LABELS = 2,
} P3dCameraTestSrcEmit;

#define P3D_TYPE_CAMERA_TEST_SRC (p3d_camera_test_src_get_type ())
G_DECLARE_FINAL_TYPE (P3dCameraTestSrc, p3d_camera_test_src, P3D,
    CAMERA_TEST_SRC, GstPushSrc);

struct _P3dCameraTestSrc
{
  GstPushSrc parent;

  /* properties, under the object lock */
  gchar *calibration;
  guint camera;
  P3dCameraTestSrcEmit emit;
  P3dStreetParams street_params;
  gint fps_n;
  gint fps_d;
  gdouble sun_azimuth;
  gdouble sun_elevation;
  gdouble noise;

  /* streaming: set up in start() from the properties */
  P3dStreet *street;
  P3dCamera active_camera;
  P3dCameraTestSrcEmit active_emit;
  P3dCameraRenderParams render_params;
  gint active_fps_n;
  gint active_fps_d;
  guint64 frame;

  /* negotiated */
  GstVideoInfo info;
  P3dCameraRender *render;
  /* the colour image before its conversion to the negotiated format */
  guint8 *rgb;
  gsize rgb_size;
};

GST_ELEMENT_REGISTER_DECLARE (cameratestsrc);

G_END_DECLS

#endif /* __P3D_CAMERA_TEST_SRC_H__ */
