/* boxoverlay: 3D boxes (application/x-boxes3d) projected with a camera's
 * calibration and drawn on its frames (video/x-raw), matched by running
 * time. */
#ifndef __P3D_BOX_OVERLAY_H__
#define __P3D_BOX_OVERLAY_H__

#include <gst/base/gstaggregator.h>
#include <gst/video/video.h>

#include "p3dcamera.h"
#include "p3dcanvas.h"
#include "p3dperception.h"

G_BEGIN_DECLS

#define P3D_TYPE_BOX_OVERLAY (p3d_box_overlay_get_type ())
G_DECLARE_FINAL_TYPE (P3dBoxOverlay, p3d_box_overlay, P3D, BOX_OVERLAY,
    GstAggregator);

struct _P3dBoxOverlay
{
  GstAggregator parent;

  GstAggregatorPad *video_pad;
  GstAggregatorPad *boxes_pad;

  /* properties, under the object lock */
  gchar *calibration;
  guint camera;
  guint color;
  guint line_width;
  gboolean show_scores;

  /* streaming: the camera loaded in start() */
  P3dCamera active_camera;
  gchar *camera_name;

  /* the pads' caps (the aggregator's thread) */
  GstCaps *video_caps;
  GstVideoInfo video_info;
  gboolean boxes_negotiated;
  P3dBoxes3dInfo boxes_info;
  P3dTensorLayout boxes_layout;

  /* the boxes drawn until newer ones replace them or their duration ends:
   * NULL for none (or a gap), with their running time, end (NONE: until
   * replaced) and capacity */
  GstBuffer *boxes;
  GstClockTime boxes_time;
  GstClockTime boxes_end;
  guint boxes_capacity;
  P3dTensorLayout current_layout;
  /* an untimed boxes buffer was taken for the frame being made */
  gboolean took_untimed;
  /* the segment forwarded downstream: the video pad's */
  GstSegment segment;
};

GST_ELEMENT_REGISTER_DECLARE (boxoverlay);

G_END_DECLS

#endif /* __P3D_BOX_OVERLAY_H__ */
