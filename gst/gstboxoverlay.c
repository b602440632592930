/**
 * SECTION:element-boxoverlay
 * @title: boxoverlay
 *
 * Draws 3D boxes (application/x-boxes3d, in the lidar frame) on the frames
 * of one camera (video/x-raw): the 12 edges of each box projected with the
 * camera's calibration (calibration=FILE camera=K, docs/calibration.md),
 * a line from the centre of its bottom face to its front (+x) edge, and
 * its score beside it. Edges are clipped at a near plane 5 cm in front of
 * the camera: nothing behind the camera is drawn, and a box that reaches
 * behind it is drawn up to that plane. Each box takes the colour of its
 * label, as bevrender's legend shows them (0 magenta: car, 1 white:
 * pedestrian, 2 orange: cyclist), or the color property's; scores are
 * written highest first where they overlap no other score, or not at all.
 *
 * Pads: video_sink and src take RGBA, RGBx, BGRA or BGRx (put videoconvert
 * before other formats); boxes_sink takes boxes in system memory or
 * memory:CUDAMemory (read on the host). Both sink pads must be linked, as
 * on any aggregator.
 *
 * Timing: each video frame is drawn on and pushed with its own timestamps;
 * it shows the newest boxes buffer whose running time is before the
 * frame's end (at most its start, for a frame without a duration), unless
 * that buffer's duration ended by the frame's start: boxes without a
 * duration stay until newer ones come. Until a boxes buffer after the
 * frame, or EOS, is there, the frame waits (not live) or is drawn when the
 * aggregator's latency runs out (live). A boxes buffer without a timestamp
 * counts for the next frame, a video frame without one shows every boxes
 * buffer queued so far, a gap on the boxes pad clears the boxes for its
 * time. docs/elements/boxoverlay.md has the details.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 boxoverlay name=o calibration=rig.json camera=0 \
 *     ! videoconvert ! autovideosink \
 *   cameratestsrc calibration=rig.json camera=0 ! o.video_sink \
 *   pointcloudtestsrc emit=boxes ! o.boxes_sink
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include "box_overlap.h"
#include "gstboxoverlay.h"
#include "p3dcamerafile.h"
#include "p3dcapsquery.h"
#include "p3dparamspec.h"

GST_DEBUG_CATEGORY_STATIC (p3d_box_overlay_debug);
#define GST_CAT_DEFAULT p3d_box_overlay_debug

enum
{
  PROP_0,
  PROP_CALIBRATION,
  PROP_CAMERA,
  PROP_COLOR,
  PROP_LINE_WIDTH,
  PROP_SHOW_SCORES,
};

#define DEFAULT_CAMERA 0
#define DEFAULT_COLOR 0
#define DEFAULT_LINE_WIDTH 2
#define DEFAULT_SHOW_SCORES TRUE

#define VIDEO_CAPS \
    "video/x-raw, format = (string) { RGBA, RGBx, BGRA, BGRx }, " \
    "width = (int) [ 1, 16384 ], height = (int) [ 1, 16384 ], " \
    "framerate = (fraction) [ 0/1, 2147483647/1 ]"

static GstStaticPadTemplate video_template =
GST_STATIC_PAD_TEMPLATE ("video_sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (VIDEO_CAPS));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (VIDEO_CAPS));

#define p3d_box_overlay_parent_class parent_class
G_DEFINE_TYPE (P3dBoxOverlay, p3d_box_overlay, GST_TYPE_AGGREGATOR);
GST_ELEMENT_REGISTER_DEFINE (boxoverlay, "boxoverlay", GST_RANK_NONE,
    P3D_TYPE_BOX_OVERLAY);

static void p3d_box_overlay_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void p3d_box_overlay_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static void p3d_box_overlay_finalize (GObject * object);
static gboolean p3d_box_overlay_start (GstAggregator * agg);
static gboolean p3d_box_overlay_stop (GstAggregator * agg);
static GstFlowReturn p3d_box_overlay_flush (GstAggregator * agg);
static gboolean p3d_box_overlay_sink_event (GstAggregator * agg,
    GstAggregatorPad * aggpad, GstEvent * event);
static gboolean p3d_box_overlay_sink_query (GstAggregator * agg,
    GstAggregatorPad * aggpad, GstQuery * query);
static GstBuffer *p3d_box_overlay_clip (GstAggregator * agg,
    GstAggregatorPad * aggpad, GstBuffer * buffer);
static GstFlowReturn p3d_box_overlay_update_src_caps (GstAggregator * agg,
    GstCaps * caps, GstCaps ** ret);
static GstClockTime p3d_box_overlay_get_next_time (GstAggregator * agg);
static GstFlowReturn p3d_box_overlay_aggregate (GstAggregator * agg,
    gboolean timeout);

static void
p3d_box_overlay_class_init (P3dBoxOverlayClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstAggregatorClass *agg_class = GST_AGGREGATOR_CLASS (klass);
  GstCaps *media_caps, *caps;

  gobject_class->set_property = p3d_box_overlay_set_property;
  gobject_class->get_property = p3d_box_overlay_get_property;
  gobject_class->finalize = p3d_box_overlay_finalize;

  g_object_class_install_property (gobject_class, PROP_CALIBRATION,
      g_param_spec_string ("calibration", "Calibration",
          "JSON calibration file (docs/calibration.md, the format bevpool "
          "reads) with the camera whose frames come in: its intrinsics, "
          "camera-to-lidar transform and, when given, image_size (the "
          "frames must then be of that size)", NULL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_CAMERA,
      p3d_param_spec_uint ("camera", "Camera",
          "Which camera of the calibration file the frames come from, from "
          "0 in the file's order", 0, G_MAXINT, DEFAULT_CAMERA,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_COLOR,
      p3d_param_spec_uint ("color", "Color",
          "Colour of every box and score as 0xRRGGBB; 0: each box in the "
          "colour of its label, as bevrender's legend (label 0 magenta, 1 "
          "white, 2 orange)", 0, 0xffffff, DEFAULT_COLOR,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_LINE_WIDTH,
      p3d_param_spec_uint ("line-width", "Line width",
          "Width of the boxes' lines in pixels", 1, P3D_CANVAS_MAX_LINE_WIDTH,
          DEFAULT_LINE_WIDTH, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_SHOW_SCORES,
      g_param_spec_boolean ("show-scores", "Show scores",
          "Write each box's score beside it (highest first, where it overlaps "
          "no other score)", DEFAULT_SHOW_SCORES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  gst_element_class_set_static_metadata (element_class, "3D box overlay",
      "Filter/Editor/Video",
      "Draws 3D boxes on a camera's frames: their edges projected with the "
      "camera's calibration, matched to the frames by running time",
      "gst-perception developers");

  gst_element_class_add_static_pad_template_with_gtype (element_class,
      &video_template, GST_TYPE_AGGREGATOR_PAD);
  media_caps = gst_caps_from_string (P3D_MEDIA_TYPE_BOXES3D);
  caps = p3d_caps_with_both_memories (media_caps, FALSE);
  gst_element_class_add_pad_template (element_class,
      gst_pad_template_new_with_gtype ("boxes_sink", GST_PAD_SINK,
          GST_PAD_ALWAYS, caps, GST_TYPE_AGGREGATOR_PAD));
  gst_caps_unref (caps);
  gst_caps_unref (media_caps);
  gst_element_class_add_static_pad_template_with_gtype (element_class,
      &src_template, GST_TYPE_AGGREGATOR_PAD);

  agg_class->start = GST_DEBUG_FUNCPTR (p3d_box_overlay_start);
  agg_class->stop = GST_DEBUG_FUNCPTR (p3d_box_overlay_stop);
  agg_class->flush = GST_DEBUG_FUNCPTR (p3d_box_overlay_flush);
  agg_class->sink_event = GST_DEBUG_FUNCPTR (p3d_box_overlay_sink_event);
  agg_class->sink_query = GST_DEBUG_FUNCPTR (p3d_box_overlay_sink_query);
  agg_class->clip = GST_DEBUG_FUNCPTR (p3d_box_overlay_clip);
  agg_class->update_src_caps =
      GST_DEBUG_FUNCPTR (p3d_box_overlay_update_src_caps);
  agg_class->get_next_time = GST_DEBUG_FUNCPTR (p3d_box_overlay_get_next_time);
  agg_class->aggregate = GST_DEBUG_FUNCPTR (p3d_box_overlay_aggregate);

  GST_DEBUG_CATEGORY_INIT (p3d_box_overlay_debug, "boxoverlay", 0,
      "3D boxes drawn on camera frames");
}

static GstAggregatorPad *
add_sink_pad (P3dBoxOverlay * self, const gchar * name)
{
  GstPadTemplate *templ =
      gst_element_class_get_pad_template (GST_ELEMENT_GET_CLASS (self), name);
  GstAggregatorPad *pad = g_object_new (GST_TYPE_AGGREGATOR_PAD, "name",
      name, "direction", GST_PAD_SINK, "template", templ, NULL);

  gst_element_add_pad (GST_ELEMENT (self), GST_PAD (pad));
  return pad;
}

static void
p3d_box_overlay_init (P3dBoxOverlay * self)
{
  self->camera = DEFAULT_CAMERA;
  self->color = DEFAULT_COLOR;
  self->line_width = DEFAULT_LINE_WIDTH;
  self->show_scores = DEFAULT_SHOW_SCORES;
  self->video_pad = add_sink_pad (self, "video_sink");
  self->boxes_pad = add_sink_pad (self, "boxes_sink");
  self->boxes_time = GST_CLOCK_TIME_NONE;
  self->boxes_end = GST_CLOCK_TIME_NONE;
  gst_video_info_init (&self->video_info);
  gst_segment_init (&self->segment, GST_FORMAT_UNDEFINED);
  p3d_object_watch_properties (G_OBJECT (self), GST_ELEMENT (self));
}

static void
p3d_box_overlay_finalize (GObject * object)
{
  P3dBoxOverlay *self = P3D_BOX_OVERLAY (object);

  gst_clear_buffer (&self->boxes);
  gst_clear_caps (&self->video_caps);
  g_free (self->camera_name);
  g_free (self->calibration);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
p3d_box_overlay_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dBoxOverlay *self = P3D_BOX_OVERLAY (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_CALIBRATION:
      g_free (self->calibration);
      self->calibration = g_value_dup_string (value);
      break;
    case PROP_CAMERA:
      self->camera = g_value_get_uint (value);
      break;
    case PROP_COLOR:
      self->color = g_value_get_uint (value);
      break;
    case PROP_LINE_WIDTH:
      self->line_width = g_value_get_uint (value);
      break;
    case PROP_SHOW_SCORES:
      self->show_scores = g_value_get_boolean (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
p3d_box_overlay_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  P3dBoxOverlay *self = P3D_BOX_OVERLAY (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_CALIBRATION:
      g_value_set_string (value, self->calibration);
      break;
    case PROP_CAMERA:
      g_value_set_uint (value, self->camera);
      break;
    case PROP_COLOR:
      g_value_set_uint (value, self->color);
      break;
    case PROP_LINE_WIDTH:
      g_value_set_uint (value, self->line_width);
      break;
    case PROP_SHOW_SCORES:
      g_value_set_boolean (value, self->show_scores);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* Forgets the boxes drawn. */
static void
forget_boxes (P3dBoxOverlay * self)
{
  gst_clear_buffer (&self->boxes);
  self->boxes_time = GST_CLOCK_TIME_NONE;
  self->boxes_end = GST_CLOCK_TIME_NONE;
  self->took_untimed = FALSE;
}

static gboolean
p3d_box_overlay_start (GstAggregator * agg)
{
  P3dBoxOverlay *self = P3D_BOX_OVERLAY (agg);
  gchar *path;
  guint camera;
  gboolean ok;

  if (!p3d_element_check_properties (GST_ELEMENT (self)))
    return FALSE;

  GST_OBJECT_LOCK (self);
  path = g_strdup (self->calibration);
  camera = self->camera;
  GST_OBJECT_UNLOCK (self);

  g_clear_pointer (&self->camera_name, g_free);
  ok = p3d_camera_file_load (GST_ELEMENT (self), path, camera,
      &self->active_camera, &self->camera_name);
  if (ok)
    GST_DEBUG_OBJECT (self, "camera %u (%s) of %s, image %u x %u (0: any)",
        camera, self->camera_name, path, self->active_camera.width,
        self->active_camera.height);
  g_free (path);
  forget_boxes (self);
  gst_clear_caps (&self->video_caps);
  self->boxes_negotiated = FALSE;
  gst_segment_init (&self->segment, GST_FORMAT_UNDEFINED);
  return ok;
}

static gboolean
p3d_box_overlay_stop (GstAggregator * agg)
{
  P3dBoxOverlay *self = P3D_BOX_OVERLAY (agg);

  forget_boxes (self);
  gst_clear_caps (&self->video_caps);
  self->boxes_negotiated = FALSE;
  return TRUE;
}

static GstFlowReturn
p3d_box_overlay_flush (GstAggregator * agg)
{
  forget_boxes (P3D_BOX_OVERLAY (agg));
  return GST_FLOW_OK;
}

/* The video caps the pads take now: the template, at the camera's image
 * size when the calibration gives one. */
static GstCaps *
video_caps (P3dBoxOverlay * self)
{
  GstCaps *caps = gst_caps_from_string (VIDEO_CAPS);

  if (self->active_camera.width > 0)
    gst_caps_set_simple (caps, "width", G_TYPE_INT,
        (gint) self->active_camera.width, "height", G_TYPE_INT,
        (gint) self->active_camera.height, NULL);
  return caps;
}

/* Video caps the frames can be drawn in: a format of the template, and
 * the camera's image size when the file gives one (an error names both
 * sizes otherwise). */
static gboolean
accept_video_caps (P3dBoxOverlay * self, GstCaps * caps, GstVideoInfo * info,
    gboolean post)
{
  GstCaps *ours = gst_caps_from_string (VIDEO_CAPS);
  gboolean ok = gst_caps_is_subset (caps, ours)
      && gst_video_info_from_caps (info, caps);

  gst_caps_unref (ours);
  if (!ok)
    return FALSE;
  if (self->active_camera.width > 0
      && ((guint) GST_VIDEO_INFO_WIDTH (info) != self->active_camera.width
          || (guint) GST_VIDEO_INFO_HEIGHT (info) !=
          self->active_camera.height)) {
    if (post)
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
          ("The video is %d x %d pixels, but camera %u (%s) of the "
              "calibration has an image_size of %u x %u", info->width,
              info->height, self->camera, self->camera_name,
              self->active_camera.width, self->active_camera.height),
          ("scale the video to the calibrated size, or use a calibration "
              "for this size"));
    return FALSE;
  }
  return TRUE;
}

static gboolean
p3d_box_overlay_sink_event (GstAggregator * agg, GstAggregatorPad * aggpad,
    GstEvent * event)
{
  P3dBoxOverlay *self = P3D_BOX_OVERLAY (agg);

  if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS) {
    GstCaps *caps;
    gboolean ok;

    gst_event_parse_caps (event, &caps);
    if (aggpad == self->video_pad) {
      GstVideoInfo info;

      ok = accept_video_caps (self, caps, &info, TRUE);
      if (ok) {
        self->video_info = info;
        gst_caps_replace (&self->video_caps, caps);
        /* the output is the video: its caps change with it */
        gst_pad_mark_reconfigure (GST_AGGREGATOR_SRC_PAD (self));
      }
    } else {
      GstCaps *media_caps = p3d_caps_without_features (caps);

      ok = p3d_boxes3d_info_from_caps (&self->boxes_info, media_caps);
      gst_caps_unref (media_caps);
      if (ok)
        p3d_boxes3d_info_get_layout (&self->boxes_info, &self->boxes_layout);
      self->boxes_negotiated = ok;
    }
    if (!ok)
      GST_WARNING_OBJECT (aggpad, "refused caps %" GST_PTR_FORMAT, caps);
    gst_event_unref (event);
    return ok;
  }
  return GST_AGGREGATOR_CLASS (parent_class)->sink_event (agg, aggpad, event);
}

static gboolean
p3d_box_overlay_sink_query (GstAggregator * agg, GstAggregatorPad * aggpad,
    GstQuery * query)
{
  P3dBoxOverlay *self = P3D_BOX_OVERLAY (agg);

  if (aggpad != self->video_pad)
    return GST_AGGREGATOR_CLASS (parent_class)->sink_query (agg, aggpad, query);

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS:{
      GstCaps *ours = video_caps (self), *downstream, *result;

      /* what we draw in and downstream takes: the output is the input */
      downstream = gst_pad_peer_query_caps (GST_AGGREGATOR_SRC_PAD (self),
          ours);
      result = gst_caps_intersect_full (downstream, ours,
          GST_CAPS_INTERSECT_FIRST);
      gst_caps_unref (downstream);
      gst_caps_unref (ours);
      return p3d_answer_caps_query (query, result);
    }
    case GST_QUERY_ACCEPT_CAPS:{
      GstCaps *caps;
      GstVideoInfo info;

      /* a size the calibration does not describe is the user's to fix:
       * said on the bus before upstream's bare not-negotiated */
      gst_query_parse_accept_caps (query, &caps);
      gst_query_set_accept_caps_result (query,
          accept_video_caps (self, caps, &info, TRUE));
      return TRUE;
    }
    case GST_QUERY_ALLOCATION:
      /* the frames are drawn on where they are: downstream's answer is
       * the one that counts */
      return gst_pad_peer_query (GST_AGGREGATOR_SRC_PAD (self), query);
    default:
      return GST_AGGREGATOR_CLASS (parent_class)->sink_query (agg, aggpad,
          query);
  }
}

/* A buffer outside its time segment is dropped, as any element clips. */
static GstBuffer *
p3d_box_overlay_clip (GstAggregator * agg, GstAggregatorPad * aggpad,
    GstBuffer * buffer)
{
  GstClockTime pts = GST_BUFFER_PTS (buffer);
  gboolean outside;

  if (!GST_CLOCK_TIME_IS_VALID (pts))
    return buffer;
  GST_OBJECT_LOCK (aggpad);
  outside = aggpad->segment.format == GST_FORMAT_TIME
      && !GST_CLOCK_TIME_IS_VALID (gst_segment_to_running_time
      (&aggpad->segment, GST_FORMAT_TIME, pts));
  GST_OBJECT_UNLOCK (aggpad);
  if (outside) {
    GST_LOG_OBJECT (aggpad, "dropping %" GST_PTR_FORMAT ": outside the "
        "segment", buffer);
    gst_buffer_unref (buffer);
    return NULL;
  }
  return buffer;
}

/* The output caps are the video's. */
static GstFlowReturn
p3d_box_overlay_update_src_caps (GstAggregator * agg, GstCaps * caps,
    GstCaps ** ret)
{
  P3dBoxOverlay *self = P3D_BOX_OVERLAY (agg);

  if (self->video_caps == NULL)
    return GST_AGGREGATOR_FLOW_NEED_DATA;
  *ret = gst_caps_intersect (caps, self->video_caps);
  if (gst_caps_is_empty (*ret)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Downstream does not accept the video's caps"),
        ("downstream caps %" GST_PTR_FORMAT, caps));
    gst_caps_replace (ret, NULL);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  return GST_FLOW_OK;
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

/* Live: the frame waiting is made when the clock passes its start (plus
 * the latency), with the boxes there are by then. */
static GstClockTime
p3d_box_overlay_get_next_time (GstAggregator * agg)
{
  P3dBoxOverlay *self = P3D_BOX_OVERLAY (agg);
  GstBuffer *video = gst_aggregator_pad_peek_buffer (self->video_pad);
  GstClockTime time;

  if (video == NULL)
    return GST_CLOCK_TIME_NONE;
  time = buffer_running_time (self->video_pad, video);
  gst_buffer_unref (video);
  return time;
}

/* Makes @buffer, starting at running time @time, the boxes drawn. */
static GstFlowReturn
take_boxes (P3dBoxOverlay * self, GstBuffer * buffer, GstClockTime time)
{
  gboolean gap = GST_BUFFER_FLAG_IS_SET (buffer, GST_BUFFER_FLAG_GAP)
      && gst_buffer_get_size (buffer) == 0;
  GstClockTime duration = GST_BUFFER_DURATION (buffer);
  gchar *why = NULL;

  if (!self->boxes_negotiated) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Pad boxes_sink received a buffer without accepted caps"),
        ("%" GST_PTR_FORMAT, buffer));
    gst_buffer_unref (buffer);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  if (!gap && !p3d_tensor_layout_check_buffer (&self->boxes_layout, buffer,
          &why)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Buffer on pad boxes_sink does not hold the tensors of its caps"),
        ("%s", why));
    g_free (why);
    gst_buffer_unref (buffer);
    return GST_FLOW_ERROR;
  }
  GST_LOG_OBJECT (self, "taking boxes %" GST_PTR_FORMAT, buffer);
  gst_buffer_replace (&self->boxes, NULL);
  /* a gap: no boxes for its time */
  if (gap)
    gst_buffer_unref (buffer);
  else
    self->boxes = buffer;
  self->boxes_capacity = self->boxes_info.max_boxes;
  self->current_layout = self->boxes_layout;
  self->boxes_time = time;
  self->boxes_end = GST_CLOCK_TIME_NONE;
  if (GST_CLOCK_TIME_IS_VALID (time) && GST_CLOCK_TIME_IS_VALID (duration))
    self->boxes_end = time + duration;
  if (!GST_CLOCK_TIME_IS_VALID (time))
    self->took_untimed = TRUE;
  return GST_FLOW_OK;
}

/* Takes the boxes buffers for the frame [@start, @end) of running time:
 * those before @end, or at most @start when @end is not known, or every
 * queued one for an untimed frame. Sets @wait when one may still come. */
static GstFlowReturn
select_boxes (P3dBoxOverlay * self, GstClockTime start, GstClockTime end,
    gboolean * wait)
{
  GstAggregatorPad *aggpad = self->boxes_pad;
  GstBuffer *buffer;

  *wait = FALSE;
  while ((buffer = gst_aggregator_pad_peek_buffer (aggpad)) != NULL) {
    GstClockTime time = buffer_running_time (aggpad, buffer);
    gboolean for_this_frame;
    GstFlowReturn ret;

    if (!GST_CLOCK_TIME_IS_VALID (start))
      for_this_frame = TRUE;
    else if (!GST_CLOCK_TIME_IS_VALID (time))
      for_this_frame = !self->took_untimed;
    else if (GST_CLOCK_TIME_IS_VALID (end))
      for_this_frame = time < end;
    else
      for_this_frame = time <= start;
    gst_buffer_unref (buffer);
    if (!for_this_frame)
      return GST_FLOW_OK;
    buffer = gst_aggregator_pad_pop_buffer (aggpad);
    if (buffer == NULL)
      break;
    ret = take_boxes (self, buffer, time);
    if (ret != GST_FLOW_OK)
      return ret;
  }
  if (gst_aggregator_pad_is_eos (aggpad) || !GST_CLOCK_TIME_IS_VALID (start)
      || self->took_untimed)
    return GST_FLOW_OK;
  /* the boxes drawn cover the frame: nothing newer can be for it */
  if (GST_CLOCK_TIME_IS_VALID (self->boxes_end)
      && GST_CLOCK_TIME_IS_VALID (end) && self->boxes_end >= end)
    return GST_FLOW_OK;
  *wait = TRUE;
  return GST_FLOW_OK;
}

/* What the drawing of one frame reads from the properties. */
typedef struct
{
  P3dColor color;
  guint line_width;
  gboolean show_scores;
  /* the frame keeps blue first: colours are written with red and blue
   * swapped */
  gboolean bgr;
} DrawStyle;

static P3dColor
style_color (const DrawStyle * style, gint32 label)
{
  P3dColor color = style->color != 0 ? style->color :
      p3d_color_for_label (label);

  if (style->bgr)
    color = (color & 0xff00ff00u) | ((color >> 16) & 0xffu) |
        ((color & 0xffu) << 16);
  return color;
}

/* Draws @segment (pixel coordinates, whose centres are integers) and grows
 * the bounds by it. */
static void
draw_segment (P3dCanvas * canvas, const P3dCameraSegment * segment,
    const DrawStyle * style, P3dColor color, gdouble bounds[4])
{
  /* canvas pixel c covers [c, c + 1) */
  p3d_canvas_draw_wide_line (canvas, segment->u0 + 0.5, segment->v0 + 0.5,
      segment->u1 + 0.5, segment->v1 + 0.5, style->line_width, color);
  bounds[0] = MIN (bounds[0], MIN (segment->u0, segment->u1));
  bounds[1] = MIN (bounds[1], MIN (segment->v0, segment->v1));
  bounds[2] = MAX (bounds[2], MAX (segment->u0, segment->u1));
  bounds[3] = MAX (bounds[3], MAX (segment->v0, segment->v1));
}

/* Draws box @box: its edges and heading; fills @score with where its
 * pixels lie (not drawn: nothing of it is in front of the camera, or on
 * the image). */
static void
draw_box (P3dBoxOverlay * self, P3dCanvas * canvas, const P3dcBox3d * box,
    const DrawStyle * style, P3dCanvasScore * score)
{
  P3dCameraSegment segments[P3D_CAMERA_BOX_EDGES], heading;
  gdouble centre[3], half[3], corners[8][3], bottom[3], front[3];
  gdouble bounds[4] = { G_MAXDOUBLE, G_MAXDOUBLE, -G_MAXDOUBLE,
    -G_MAXDOUBLE
  };
  P3dColor color = style_color (style, box->label);
  gfloat sin_yaw, cos_yaw;
  guint n, k;

  score->drawn = FALSE;
  score->score = box->score;
  score->color = color;
  if (!isfinite (box->x) || !isfinite (box->y) || !isfinite (box->z)
      || !isfinite (box->dx) || !isfinite (box->dy) || !isfinite (box->dz)
      || !isfinite (box->yaw))
    return;
  p3dc_sincos (box->yaw, &sin_yaw, &cos_yaw);
  centre[0] = box->x;
  centre[1] = box->y;
  centre[2] = box->z;
  half[0] = box->dx / 2.0;
  half[1] = box->dy / 2.0;
  half[2] = box->dz / 2.0;
  p3d_camera_box_corners (centre, cos_yaw, sin_yaw, half, corners);
  n = p3d_camera_project_box (&self->active_camera, corners, segments);
  for (k = 0; k < n; k++)
    draw_segment (canvas, &segments[k], style, color, bounds);

  /* the heading: bottom centre to the middle of the bottom front edge */
  bottom[0] = centre[0];
  bottom[1] = centre[1];
  bottom[2] = centre[2] - half[2];
  front[0] = centre[0] + half[0] * cos_yaw;
  front[1] = centre[1] + half[0] * sin_yaw;
  front[2] = bottom[2];
  if (p3d_camera_project_segment (&self->active_camera, bottom, front,
          &heading))
    draw_segment (canvas, &heading, style, color, bounds);

  /* the score goes beside the box's part in the image */
  if (n == 0 || bounds[2] < 0.0 || bounds[3] < 0.0
      || bounds[0] > canvas->width - 1 || bounds[1] > canvas->height - 1)
    return;
  score->drawn = TRUE;
  score->c0 = p3d_canvas_floor_clamped (bounds[0] + 0.5, 0, canvas->width - 1);
  score->r0 = p3d_canvas_floor_clamped (bounds[1] + 0.5, 0, canvas->height - 1);
  score->c1 = p3d_canvas_floor_clamped (bounds[2] + 0.5, 0, canvas->width - 1);
  score->r1 = p3d_canvas_floor_clamped (bounds[3] + 0.5, 0, canvas->height - 1);
}

/* Draws the boxes drawn now on @frame. */
static GstFlowReturn
draw_frame (P3dBoxOverlay * self, GstVideoFrame * frame)
{
  GstVideoFormat format = GST_VIDEO_FRAME_FORMAT (frame);
  P3dCanvasScore *scores;
  P3dTensorMap map;
  P3dCanvas canvas;
  DrawStyle style;
  gchar *why = NULL;
  guint32 count, i;

  if (self->boxes == NULL)
    return GST_FLOW_OK;
  if (!p3d_tensor_map (&map, self->boxes, &self->current_layout,
          GST_MAP_READ, &why)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Cannot read the buffer of pad boxes_sink"), ("%s", why));
    g_free (why);
    return GST_FLOW_ERROR;
  }
  memcpy (&count, map.data[P3D_BOXES_TENSOR_COUNT], sizeof (count));
  if (count > self->boxes_capacity) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Box count %u on pad boxes_sink is more than max-boxes %u", count,
            self->boxes_capacity), (NULL));
    p3d_tensor_unmap (&map);
    return GST_FLOW_ERROR;
  }

  GST_OBJECT_LOCK (self);
  /* the property is RGB: boxes are opaque */
  style.color = self->color != 0 ? self->color | 0xff000000u : 0;
  style.line_width = self->line_width;
  style.show_scores = self->show_scores;
  GST_OBJECT_UNLOCK (self);
  style.bgr = format == GST_VIDEO_FORMAT_BGRA
      || format == GST_VIDEO_FORMAT_BGRx;

  canvas.pixels = GST_VIDEO_FRAME_PLANE_DATA (frame, 0);
  canvas.width = GST_VIDEO_FRAME_WIDTH (frame);
  canvas.height = GST_VIDEO_FRAME_HEIGHT (frame);
  canvas.stride = (gsize) GST_VIDEO_FRAME_PLANE_STRIDE (frame, 0);

  scores = g_new (P3dCanvasScore, MAX (count, 1));
  for (i = 0; i < count; i++) {
    P3dcBox3d box;

    /* copied out: a tensor read from a file need not be aligned */
    memcpy (&box, (const guint8 *) map.data[P3D_BOXES_TENSOR_RECORDS] +
        (gsize) i * P3DC_BOX3D_SIZE, sizeof (box));
    draw_box (self, &canvas, &box, &style, &scores[i]);
  }
  if (style.show_scores)
    p3d_canvas_draw_scores (&canvas, scores, count);
  g_free (scores);
  p3d_tensor_unmap (&map);
  return GST_FLOW_OK;
}

/* The video pad's segment downstream, when it changed. */
static void
forward_segment (P3dBoxOverlay * self)
{
  GstSegment segment;

  GST_OBJECT_LOCK (self->video_pad);
  segment = self->video_pad->segment;
  GST_OBJECT_UNLOCK (self->video_pad);
  if (segment.format == GST_FORMAT_TIME
      && !gst_segment_is_equal (&segment, &self->segment)) {
    self->segment = segment;
    gst_aggregator_update_segment (GST_AGGREGATOR (self), &segment);
  }
}

static GstFlowReturn
p3d_box_overlay_aggregate (GstAggregator * agg, gboolean timeout)
{
  P3dBoxOverlay *self = P3D_BOX_OVERLAY (agg);
  GstBuffer *video = gst_aggregator_pad_peek_buffer (self->video_pad);
  GstClockTime start, end = GST_CLOCK_TIME_NONE, duration;
  GstVideoFrame frame;
  GstFlowReturn ret;
  gboolean wait;

  if (video == NULL) {
    if (gst_aggregator_pad_is_eos (self->video_pad)) {
      GST_DEBUG_OBJECT (self, "the video is at EOS");
      return GST_FLOW_EOS;
    }
    return GST_AGGREGATOR_FLOW_NEED_DATA;
  }
  start = buffer_running_time (self->video_pad, video);
  duration = GST_BUFFER_DURATION (video);
  if (GST_CLOCK_TIME_IS_VALID (start) && GST_CLOCK_TIME_IS_VALID (duration))
    end = start + duration;
  gst_buffer_unref (video);

  ret = select_boxes (self, start, end, &wait);
  if (ret != GST_FLOW_OK)
    return ret;
  /* not live: a boxes buffer for this frame may still come */
  if (wait && !timeout)
    return GST_AGGREGATOR_FLOW_NEED_DATA;
  /* boxes whose duration ended by the frame's start are not drawn */
  if (GST_CLOCK_TIME_IS_VALID (self->boxes_end)
      && GST_CLOCK_TIME_IS_VALID (start) && self->boxes_end <= start)
    forget_boxes (self);

  video = gst_aggregator_pad_pop_buffer (self->video_pad);
  if (video == NULL)
    return GST_AGGREGATOR_FLOW_NEED_DATA;
  forward_segment (self);
  /* a gap carries no pixels to draw on */
  if (self->boxes != NULL && gst_buffer_get_size (video) > 0) {
    video = gst_buffer_make_writable (video);
    if (!gst_video_frame_map (&frame, &self->video_info, video,
            GST_MAP_READWRITE)) {
      GST_ELEMENT_ERROR (self, STREAM, FORMAT,
          ("Cannot map a video frame of %" G_GSIZE_FORMAT " bytes as %s %d "
              "x %d", gst_buffer_get_size (video),
              gst_video_format_to_string (GST_VIDEO_INFO_FORMAT
                  (&self->video_info)), self->video_info.width,
              self->video_info.height), (NULL));
      gst_buffer_unref (video);
      return GST_FLOW_ERROR;
    }
    ret = draw_frame (self, &frame);
    gst_video_frame_unmap (&frame);
    if (ret != GST_FLOW_OK) {
      gst_buffer_unref (video);
      return ret;
    }
  }
  self->took_untimed = FALSE;
  gst_aggregator_selected_samples (agg, GST_BUFFER_PTS (video),
      GST_BUFFER_DTS (video), GST_BUFFER_DURATION (video), NULL);
  return gst_aggregator_finish_buffer (agg, video);
}
