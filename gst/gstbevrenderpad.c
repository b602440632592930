/* bevrender's sink pad: what it takes (its input kind and the format of its
 * caps), its style properties, and the buffer it draws, chosen by running
 * time; the element (gstbevrender.c) asks it for these each frame. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstbevrenderpad.h"

#include "bevrender-canvas.h"
#include "p3dformats.h"

GST_DEBUG_CATEGORY_EXTERN (p3d_bev_render_debug);
#define GST_CAT_DEFAULT p3d_bev_render_debug

/* The pad: what it takes and the buffer it draws. */

enum
{
  PROP_PAD_0,
  PROP_PAD_COLOR,
  PROP_PAD_LINE_WIDTH,
  PROP_PAD_SHOW_SCORES,
  PROP_PAD_CAPTION,
};

#define DEFAULT_PAD_COLOR 0u
#define DEFAULT_PAD_LINE_WIDTH 1
#define DEFAULT_PAD_SHOW_SCORES TRUE

G_DEFINE_TYPE (P3dBevRenderPad, p3d_bev_render_pad, GST_TYPE_AGGREGATOR_PAD);

static void
p3d_bev_render_pad_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dBevRenderPad *pad = P3D_BEV_RENDER_PAD (object);

  GST_OBJECT_LOCK (pad);
  switch (prop_id) {
    case PROP_PAD_COLOR:
      pad->box_color = g_value_get_uint (value);
      break;
    case PROP_PAD_LINE_WIDTH:
      pad->line_width = g_value_get_uint (value);
      break;
    case PROP_PAD_SHOW_SCORES:
      pad->show_scores = g_value_get_boolean (value);
      break;
    case PROP_PAD_CAPTION:
      g_free (pad->caption);
      pad->caption = g_value_dup_string (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (pad);
}

static void
p3d_bev_render_pad_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  P3dBevRenderPad *pad = P3D_BEV_RENDER_PAD (object);

  GST_OBJECT_LOCK (pad);
  switch (prop_id) {
    case PROP_PAD_COLOR:
      g_value_set_uint (value, pad->box_color);
      break;
    case PROP_PAD_LINE_WIDTH:
      g_value_set_uint (value, pad->line_width);
      break;
    case PROP_PAD_SHOW_SCORES:
      g_value_set_boolean (value, pad->show_scores);
      break;
    case PROP_PAD_CAPTION:
      g_value_set_string (value, pad->caption);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (pad);
}

void
p3d_bev_render_pad_forget (P3dBevRenderPad * pad)
{
  gst_buffer_replace (&pad->current, NULL);
  pad->current_time = GST_CLOCK_TIME_NONE;
  pad->current_end = GST_CLOCK_TIME_NONE;
  pad->took = FALSE;
  pad->took_untimed = FALSE;
}

static GstFlowReturn
p3d_bev_render_pad_flush (GstAggregatorPad * aggpad, GstAggregator * agg)
{
  p3d_bev_render_pad_forget (P3D_BEV_RENDER_PAD (aggpad));
  return GST_FLOW_OK;
}

static void
p3d_bev_render_pad_finalize (GObject * object)
{
  P3dBevRenderPad *pad = P3D_BEV_RENDER_PAD (object);

  p3d_bev_render_pad_forget (pad);
  g_free (pad->caption);
  G_OBJECT_CLASS (p3d_bev_render_pad_parent_class)->finalize (object);
}

static void
p3d_bev_render_pad_class_init (P3dBevRenderPadClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstAggregatorPadClass *aggpad_class = GST_AGGREGATOR_PAD_CLASS (klass);

  gobject_class->finalize = p3d_bev_render_pad_finalize;
  gobject_class->set_property = p3d_bev_render_pad_set_property;
  gobject_class->get_property = p3d_bev_render_pad_get_property;
  aggpad_class->flush = GST_DEBUG_FUNCPTR (p3d_bev_render_pad_flush);

  /* Styles of a boxes pad, so that true boxes and a detector's boxes can
   * be told apart in one picture; set in gst-launch as
   * "bevrender name=r boxes_0::color=0xff40c040 ...". */
  g_object_class_install_property (gobject_class, PROP_PAD_COLOR,
      p3d_param_spec_uint ("color", "Color",
          "Boxes pads: the colour of every box of this pad and its score, "
          "0xAARRGGBB (drawn opaque); 0: each box in the colour of its label",
          0, G_MAXUINT32, DEFAULT_PAD_COLOR, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_PAD_LINE_WIDTH,
      p3d_param_spec_uint ("line-width", "Line width",
          "Boxes pads: width in pixels of the boxes' edges and heading lines, "
          "centred on the 1-pixel lines (a wide outline under a thin one "
          "reads as a halo)", 1, P3D_CANVAS_MAX_LINE_WIDTH,
          DEFAULT_PAD_LINE_WIDTH, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_PAD_SHOW_SCORES,
      g_param_spec_boolean ("show-scores", "Show scores",
          "Boxes pads: write this pad's scores (when the element's "
          "show-scores is true too); false for true boxes, whose score is 1",
          DEFAULT_PAD_SHOW_SCORES, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_PAD_CAPTION,
      g_param_spec_string ("caption", "Caption",
          "Boxes pads with a color: the legend's text for this pad's boxes "
          "(\"true boxes\"); NULL: the pad's name. Without a color the "
          "legend lists the labels", NULL, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));
}

static void
p3d_bev_render_pad_init (P3dBevRenderPad * pad)
{
  pad->current_time = GST_CLOCK_TIME_NONE;
  pad->current_end = GST_CLOCK_TIME_NONE;
  pad->box_color = DEFAULT_PAD_COLOR;
  pad->line_width = DEFAULT_PAD_LINE_WIDTH;
  pad->show_scores = DEFAULT_PAD_SHOW_SCORES;
}

/* What @caps say for a pad taking @input; FALSE when they do not fit. */
gboolean
p3d_bev_render_format_from_caps (P3dBevRenderInput input, GstCaps * caps,
    P3dBevRenderFormat * format)
{
  GstCaps *media_caps = p3d_caps_without_features (caps);
  gboolean ok = FALSE;

  memset (format, 0, sizeof (*format));
  switch (input) {
    case P3D_BEV_RENDER_INPUT_POINTS:
      ok = p3d_point_cloud_info_from_caps (&format->points, media_caps);
      if (ok) {
        p3d_point_cloud_info_get_layout (&format->points, 0, &format->layout);
        format->fps_n = format->points.fps_n;
        format->fps_d = format->points.fps_d;
      }
      break;
    case P3D_BEV_RENDER_INPUT_VOXELS:
      if (p3d_voxels_info_from_caps (&format->voxels, media_caps)) {
        p3d_voxels_info_get_layout (&format->voxels, &format->layout);
        format->fps_n = format->voxels.fps_n;
        format->fps_d = format->voxels.fps_d;
        ok = TRUE;
      } else if (p3d_pillars_info_from_caps (&format->pillar_features,
              media_caps)) {
        format->pillars = TRUE;
        p3d_pillars_info_get_layout (&format->pillar_features, &format->layout);
        format->fps_n = format->pillar_features.fps_n;
        format->fps_d = format->pillar_features.fps_d;
        ok = TRUE;
      }
      break;
    case P3D_BEV_RENDER_INPUT_FEATURES:
      ok = p3d_bev_features_info_from_caps (&format->features, media_caps)
          && p3d_bev_features_info_get_layout (&format->features,
          &format->layout);
      format->fps_n = format->features.fps_n;
      format->fps_d = format->features.fps_d;
      break;
    case P3D_BEV_RENDER_INPUT_BOXES:
      ok = p3d_boxes3d_info_from_caps (&format->boxes, media_caps);
      if (ok) {
        p3d_boxes3d_info_get_layout (&format->boxes, &format->layout);
        format->fps_n = format->boxes.fps_n;
        format->fps_d = format->boxes.fps_d;
      }
      break;
    default:
      break;
  }
  gst_caps_unref (media_caps);
  return ok;
}

/* The running time of @buffer's start on @aggpad; GST_CLOCK_TIME_NONE for a
 * buffer without a timestamp or in a segment that is not in time. */
static GstClockTime
buffer_running_time (GstAggregatorPad * aggpad, GstBuffer * buffer)
{
  GstClockTime pts = GST_BUFFER_PTS (buffer), time = GST_CLOCK_TIME_NONE;

  if (!GST_CLOCK_TIME_IS_VALID (pts))
    return GST_CLOCK_TIME_NONE;
  GST_OBJECT_LOCK (aggpad);
  if (aggpad->segment.format == GST_FORMAT_TIME)
    time = gst_segment_to_running_time (&aggpad->segment, GST_FORMAT_TIME, pts);
  GST_OBJECT_UNLOCK (aggpad);
  return time;
}

/* The ground range a pad's caps cover (xmin, ymin, xmax, ymax), if they
 * give one: voxels and pillars always, BEV features when they carry it. */
gboolean
p3d_bev_render_pad_get_range (const P3dBevRenderPad * pad, gdouble range[4])
{
  const gdouble *bounds;

  if (!pad->negotiated)
    return FALSE;
  if (pad->input == P3D_BEV_RENDER_INPUT_VOXELS)
    bounds = pad->format.pillars ? pad->format.pillar_features.grid.range :
        pad->format.voxels.grid.range;
  else if (pad->input == P3D_BEV_RENDER_INPUT_FEATURES
      && pad->format.features.has_range)
    bounds = pad->format.features.range;
  else
    return FALSE;
  range[0] = bounds[0];
  range[1] = bounds[1];
  range[2] = bounds[3];
  range[3] = bounds[4];
  return TRUE;
}

/* Makes @buffer, whose start is at running time @time, the one @pad draws
 * (takes it). */
static GstFlowReturn
take_buffer (GstElement * self, P3dBevRenderPad * pad, GstBuffer * buffer,
    GstClockTime time)
{
  gboolean gap = GST_BUFFER_FLAG_IS_SET (buffer, GST_BUFFER_FLAG_GAP)
      && gst_buffer_get_size (buffer) == 0;
  GstClockTime duration = GST_BUFFER_DURATION (buffer);
  gchar *why = NULL;

  if (!pad->negotiated) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Pad %s received a buffer without accepted caps",
            GST_PAD_NAME (pad)), ("%" GST_PTR_FORMAT, buffer));
    gst_buffer_unref (buffer);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  if (!gap && !p3d_tensor_layout_check_buffer (&pad->format.layout, buffer,
          &why)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Buffer on pad %s does not hold the tensors of its caps",
            GST_PAD_NAME (pad)), ("%s", why));
    g_free (why);
    gst_buffer_unref (buffer);
    return GST_FLOW_ERROR;
  }
  GST_LOG_OBJECT (pad, "taking %" GST_PTR_FORMAT, buffer);
  gst_buffer_replace (&pad->current, NULL);
  /* a gap: nothing to draw for its time */
  if (gap)
    gst_buffer_unref (buffer);
  else
    pad->current = buffer;
  pad->current_format = pad->format;
  pad->current_counted = FALSE;
  pad->current_time = time;
  pad->current_end = GST_CLOCK_TIME_NONE;
  if (GST_CLOCK_TIME_IS_VALID (time) && GST_CLOCK_TIME_IS_VALID (duration))
    pad->current_end = time + duration;
  pad->took = TRUE;
  if (!GST_CLOCK_TIME_IS_VALID (time))
    pad->took_untimed = TRUE;
  return GST_FLOW_OK;
}

/* Takes the buffers of @pad that start before @end, the newest last. Sets
 * @wait when a buffer for this frame may still come (the pad is empty,
 * not at EOS, and what it has does not last to @end). */
GstFlowReturn
p3d_bev_render_pad_select (P3dBevRenderPad * pad, GstElement * self,
    GstClockTime end, gboolean * wait)
{
  GstAggregatorPad *aggpad = GST_AGGREGATOR_PAD (pad);
  GstBuffer *buffer;

  *wait = FALSE;
  while ((buffer = gst_aggregator_pad_peek_buffer (aggpad)) != NULL) {
    GstClockTime time = buffer_running_time (aggpad, buffer);
    gboolean for_this_frame = GST_CLOCK_TIME_IS_VALID (time) ? time < end :
        !pad->took_untimed;
    GstFlowReturn ret;

    gst_buffer_unref (buffer);
    if (!for_this_frame)
      return GST_FLOW_OK;
    buffer = gst_aggregator_pad_pop_buffer (aggpad);
    if (buffer == NULL)
      break;
    ret = take_buffer (self, pad, buffer, time);
    if (ret != GST_FLOW_OK)
      return ret;
  }
  if (gst_aggregator_pad_is_eos (aggpad))
    return GST_FLOW_OK;
  if (pad->took_untimed)
    return GST_FLOW_OK;
  if (GST_CLOCK_TIME_IS_VALID (pad->current_end) && pad->current_end >= end)
    return GST_FLOW_OK;
  *wait = TRUE;
  return GST_FLOW_OK;
}

/* The earliest running time among the buffers queued, or
 * GST_CLOCK_TIME_NONE. */
GstClockTime
p3d_bev_render_pads_earliest_time (GList * pads)
{
  GstClockTime earliest = GST_CLOCK_TIME_NONE;
  GList *l;

  for (l = pads; l != NULL; l = l->next) {
    GstAggregatorPad *aggpad = l->data;
    GstBuffer *buffer = gst_aggregator_pad_peek_buffer (aggpad);
    GstClockTime time;

    if (buffer == NULL)
      continue;
    time = buffer_running_time (aggpad, buffer);
    gst_buffer_unref (buffer);
    if (GST_CLOCK_TIME_IS_VALID (time)
        && (!GST_CLOCK_TIME_IS_VALID (earliest) || time < earliest))
      earliest = time;
  }
  return earliest;
}
