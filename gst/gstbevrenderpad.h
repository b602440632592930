/* bevrender's sink pad (gstbevrenderpad.c): what it takes and the buffer
 * it draws. */
#ifndef __P3D_BEV_RENDER_PAD_H__
#define __P3D_BEV_RENDER_PAD_H__

#include <gst/base/gstaggregator.h>

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

/* What @caps say for a pad taking @input; FALSE when they do not fit. */
gboolean p3d_bev_render_format_from_caps (P3dBevRenderInput input,
    GstCaps * caps, P3dBevRenderFormat * format);

/* The ground range the pad's caps cover (xmin, ymin, xmax, ymax), if they
 * give one. */
gboolean p3d_bev_render_pad_get_range (const P3dBevRenderPad * pad,
    gdouble range[4]);

/* Drops the buffer the pad draws and what it took for the frame. */
void p3d_bev_render_pad_forget (P3dBevRenderPad * pad);

/* Takes the pad's buffers that start before @end (running time) for the
 * frame; errors are posted on @element. */
GstFlowReturn p3d_bev_render_pad_select (P3dBevRenderPad * pad,
    GstElement * element, GstClockTime end, gboolean * wait);

/* The earliest running time among the buffers queued on @pads. */
GstClockTime p3d_bev_render_pads_earliest_time (GList * pads);

G_END_DECLS

#endif /* __P3D_BEV_RENDER_PAD_H__ */
