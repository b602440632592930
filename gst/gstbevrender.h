/* bevrender: points, voxels or pillars, BEV features and 3D boxes, matched
 * by timestamp, drawn as a bird's-eye view (video/x-raw, RGBA). */
#ifndef __P3D_BEV_RENDER_H__
#define __P3D_BEV_RENDER_H__

#include <gst/base/gstaggregator.h>
#include <gst/video/video.h>

#include "bevrender-layers.h"
#include "p3dperception.h"

G_BEGIN_DECLS

/* What a sink pad takes, from its template; also the order of the layers,
 * bottom first. */
typedef enum
{
  P3D_BEV_RENDER_INPUT_FEATURES = 0,
  P3D_BEV_RENDER_INPUT_VOXELS = 1,
  P3D_BEV_RENDER_INPUT_POINTS = 2,
  P3D_BEV_RENDER_INPUT_BOXES = 3,
  P3D_BEV_RENDER_N_INPUTS = 4,
} P3dBevRenderInput;

typedef enum
{
  P3D_BEV_RENDER_COLOR_BY_HEIGHT = 0,
  P3D_BEV_RENDER_COLOR_BY_INTENSITY = 1,
} P3dBevRenderColorBy;

/**
 * P3dBevRenderFormat:
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
} P3dBevRenderFormat;

#define P3D_TYPE_BEV_RENDER_PAD (p3d_bev_render_pad_get_type ())
G_DECLARE_FINAL_TYPE (P3dBevRenderPad, p3d_bev_render_pad, P3D,
    BEV_RENDER_PAD, GstAggregatorPad);

struct _P3dBevRenderPad
{
  GstAggregatorPad parent;

  P3dBevRenderInput input;

  /* properties (boxes pads), under the pad's object lock */
  guint box_color;
  guint line_width;
  gboolean show_scores;
  gchar *caption;

  /* streaming (the aggregator's thread, which also handles the caps) */
  gboolean negotiated;
  P3dBevRenderFormat format;
  /* the buffer drawn until a newer one replaces it, with its format;
   * NULL: nothing to draw */
  GstBuffer *current;
  P3dBevRenderFormat current_format;
  /* its off-grid voxels were counted (it is drawn in every frame until
   * replaced, but counted once) */
  gboolean current_counted;
  GstClockTime current_time;
  GstClockTime current_end;
  /* a buffer was taken for the frame being made; one without a time */
  gboolean took;
  gboolean took_untimed;
  gboolean warned_no_intensity;
};

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
  P3dBevColor background;
  guint point_size;
  P3dBevRenderColorBy color_by;
  gdouble height_range[2];
  gdouble intensity_range[2];
  gboolean show_scores;
  gdouble grid_spacing;
  gboolean annotations;

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

G_END_DECLS

#endif /* __P3D_BEV_RENDER_H__ */
