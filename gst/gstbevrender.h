/* bevrender: points, voxels or pillars, BEV features and 3D boxes, matched
 * by timestamp, drawn as a bird's-eye view (video/x-raw, RGBA). */
#ifndef __GST_BEV_RENDER_H__
#define __GST_BEV_RENDER_H__

#include <gst/base/gstaggregator.h>
#include <gst/video/video.h>

#include "bevcanvas.h"
#include "p3dperception.h"

G_BEGIN_DECLS

/* What a sink pad takes, from its template; also the order of the layers,
 * bottom first. */
typedef enum
{
  GST_BEV_RENDER_INPUT_FEATURES = 0,
  GST_BEV_RENDER_INPUT_VOXELS = 1,
  GST_BEV_RENDER_INPUT_POINTS = 2,
  GST_BEV_RENDER_INPUT_BOXES = 3,
  GST_BEV_RENDER_N_INPUTS = 4,
} GstBevRenderInput;

typedef enum
{
  GST_BEV_RENDER_COLOR_BY_HEIGHT = 0,
  GST_BEV_RENDER_COLOR_BY_INTENSITY = 1,
} GstBevRenderColorBy;

/**
 * GstBevRenderFormat:
 * @pillars: on a voxels pad, TRUE for application/x-pillar-features
 * @layout: the tensors of a buffer
 *
 * What the caps of a sink pad say; the info of the pad's input is valid.
 */
typedef struct
{
  gboolean pillars;
  P3dPointCloudInfo points;
  P3dVoxelsInfo voxels;
  P3dPillarsInfo pillar_features;
  P3dBevFeaturesInfo features;
  P3dBoxes3dInfo boxes;
  P3dTensorLayout layout;
  gint fps_n;
  gint fps_d;
} GstBevRenderFormat;

#define GST_TYPE_BEV_RENDER_PAD (gst_bev_render_pad_get_type ())
G_DECLARE_FINAL_TYPE (GstBevRenderPad, gst_bev_render_pad, GST,
    BEV_RENDER_PAD, GstAggregatorPad);

struct _GstBevRenderPad
{
  GstAggregatorPad parent;

  GstBevRenderInput input;

  /* streaming (the aggregator's thread, which also handles the caps) */
  gboolean negotiated;
  GstBevRenderFormat format;
  /* the buffer drawn until a newer one replaces it, with its format;
   * NULL: nothing to draw */
  GstBuffer *current;
  GstBevRenderFormat current_format;
  GstClockTime current_time;
  GstClockTime current_end;
  /* a buffer was taken for the frame being made; one without a time */
  gboolean took;
  gboolean took_untimed;
  gboolean warned_no_intensity;
};

#define GST_TYPE_BEV_RENDER (gst_bev_render_get_type ())
G_DECLARE_FINAL_TYPE (GstBevRender, gst_bev_render, GST, BEV_RENDER,
    GstAggregator);

struct _GstBevRender
{
  GstAggregator parent;

  /* properties, under the object lock */
  gdouble range[4];
  gdouble metres_per_pixel;
  gint width;
  gint height;
  P3dBevColor background;
  guint point_size;
  GstBevRenderColorBy color_by;
  gdouble height_range[2];
  gdouble intensity_range[2];
  gboolean show_scores;
  gdouble grid_spacing;

  /* request pads, under the object lock: the next number of each kind */
  guint next_serial[GST_BEV_RENDER_N_INPUTS];

  /* streaming: the geometry properties when the element started */
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

#endif /* __GST_BEV_RENDER_H__ */
