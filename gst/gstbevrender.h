/* bevrender: points, voxels or pillars, BEV features and 3D boxes, matched
 * by timestamp, drawn as a bird's-eye view (video/x-raw, RGBA). */
#ifndef __P3D_BEV_RENDER_H__
#define __P3D_BEV_RENDER_H__

#include <gst/base/gstaggregator.h>
#include <gst/video/video.h>

#include "bevrender-layers.h"
#include "gstbevrenderpad.h"
#include "p3dperception.h"

G_BEGIN_DECLS

typedef enum
{
  P3D_BEV_RENDER_COLOR_BY_HEIGHT = 0,
  P3D_BEV_RENDER_COLOR_BY_INTENSITY = 1,
} P3dBevRenderColorBy;

#define P3D_TYPE_BEV_RENDER (p3d_bev_render_get_type ())
G_DECLARE_FINAL_TYPE (P3dBevRender, p3d_bev_render, P3D, BEV_RENDER,
    GstAggregator);

struct _P3dBevRender
{
  GstAggregator parent;

  /* properties, under the object lock */
  gdouble range[4];
  /* range was set: it wins over the range of the inputs' caps */
  gboolean range_set;
  gdouble metres_per_pixel;
  gint width;
  gint height;
  P3dColor background;
  guint point_size;
  P3dBevRenderColorBy color_by;
  gdouble height_range[2];
  gdouble intensity_range[2];
  gboolean show_scores;
  gdouble grid_spacing;
  gboolean annotations;
  /* the class-names property, and the weights file's names (at start) */
  gchar **class_names;
  gchar *weights;
  gchar **weights_class_names;

  /* request pads, under the object lock: the next number of each kind */
  guint next_serial[P3D_BEV_RENDER_N_INPUTS];
  /* since start, under the object lock: voxels not drawn because their
   * coordinates lie off their caps' grid; the warning about them given */
  guint64 voxels_off_grid;
  gboolean warned_off_grid;

  /* streaming: the range drawn (the range property's, or the inputs'
   * caps') and its view, set at each output negotiation */
  gdouble view_range[4];
  P3dBevView view;
  GstVideoInfo out_info;
  gint fps_n;
  gint fps_d;
  /* frame n starts at base_time + n / framerate (running time) */
  GstClockTime base_time;
  guint64 frame_index;
  /* scratch: one magnitude per BEV feature cell */
  gfloat *magnitudes;
  gsize n_magnitudes;
};

GST_ELEMENT_REGISTER_DECLARE (bevrender);

G_END_DECLS

#endif /* __P3D_BEV_RENDER_H__ */
