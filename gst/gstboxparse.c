/**
 * SECTION:element-boxparse
 * @title: boxparse
 *
 * Reads boxes from text, the JSON lines or KITTI label lines that boxenc
 * writes (format), and outputs one application/x-boxes3d or
 * application/x-boxes2d buffer per frame in system memory, with max-boxes
 * records (the boxes read, then zeros) and the count.
 *
 * Frames: with frame-per-buffer, each input buffer is one frame (one file
 * from multifilesrc; an empty file is an empty frame) and empty lines are
 * ignored. Otherwise the text is a stream of lines, split anywhere between
 * buffers (filesrc): a JSON frame line starts a frame, an empty line ends
 * one (every empty line ends exactly one frame, so two in a row make an
 * empty frame), and the end of the stream ends the last one. A frame's
 * timestamp is its frame line's pts, else (frame-per-buffer) the input
 * buffer's, else none. It is a GstBaseParse: draining at EOS and at a new
 * segment, and the output segment (upstream's time segment, or one in time
 * from 0 for bytes), are GStreamer's.
 *
 * The box type is box-type, or with auto the first line that tells (a
 * frame line's "type", a JSON box with "x1" is 2D, with "x" 3D, KITTI lines
 * are 3D), or what downstream prefers when a frame must go out first.
 *
 * A malformed line (not JSON, a missing field, a value that is not a
 * number, the wrong number of KITTI fields, a line over 64 KiB, a NUL byte)
 * is an error naming the line number and quoting the line, as is a frame
 * line whose count differs from the boxes that follow it. Boxes beyond
 * max-boxes are dropped with a warning (posted again only after a frame
 * that fits). A KITTI type that is neither in labels nor a number drops
 * its lines, with one warning per name. With velocity, 3D boxes go out
 * with the velocity tensor (caps velocity=true): each JSON box's vx and
 * vy, zeros for a box without them and for KITTI lines.
 * docs/elements/boxparse.md has the details.
 *
 * A raw record file (the tensors as filesink wrote them) needs no parser:
 * multifilesrc location=boxes_%05d.bin caps="application/x-boxes3d,
 * max-boxes=500" reads it back as it is.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 filesrc location=boxes.jsonl ! boxparse max-boxes=500 \
 *   ! nms mode=bev-rotated ! boxenc ! fdsink
 * gst-launch-1.0 multifilesrc location=label_%06d.txt stop-index=99 \
 *   ! boxparse format=kitti frame-per-buffer=true ! boxenc ! fdsink
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstboxparse.h"
#include "p3dcapsquery.h"
#include "p3dparse.h"
#include "p3dparamspec.h"

GST_DEBUG_CATEGORY_STATIC (p3d_box_parse_debug);
#define GST_CAT_DEFAULT p3d_box_parse_debug

enum
{
  PROP_0,
  PROP_FORMAT,
  PROP_MAX_BOXES,
  PROP_BOX_TYPE,
  PROP_LABELS,
  PROP_FRAME_PER_BUFFER,
  PROP_VELOCITY,
};

#define DEFAULT_FORMAT P3D_BOX_TEXT_JSON
/* OpenPCDet's post-NMS maximum for KITTI. */
#define DEFAULT_MAX_BOXES 500
#define DEFAULT_BOX_TYPE P3D_BOX_TYPE_AUTO
#define DEFAULT_LABELS P3D_BOX_TEXT_DEFAULT_LABELS
#define DEFAULT_FRAME_PER_BUFFER FALSE
#define DEFAULT_VELOCITY FALSE

/* A box line is about 200 bytes; anything this long is not text of ours
 * (binary data, or a file without line ends) and is refused rather than
 * buffered without bound. */
#define MAX_LINE_LENGTH 65536
/* How much of a bad line an error message quotes. */
#define QUOTED_CHARS 160

#define SINK_CAPS P3D_MEDIA_TYPE_JSON_LINES "; " P3D_MEDIA_TYPE_KITTI_LABELS \
    "; text/plain"
#define SRC_CAPS P3D_MEDIA_TYPE_BOXES3D "; " P3D_MEDIA_TYPE_BOXES2D

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (SINK_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (SRC_CAPS));

#define P3D_TYPE_BOX_PARSE_BOX_TYPE (p3d_box_parse_box_type_get_type ())
static GType
p3d_box_parse_box_type_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {P3D_BOX_TYPE_AUTO, "From the text, else what downstream prefers",
        "auto"},
    {P3D_BOX_TYPE_3D, "3D boxes (application/x-boxes3d)", "3d"},
    {P3D_BOX_TYPE_2D, "2D boxes (application/x-boxes2d)", "2d"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dBoxType", values);

    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

#define p3d_box_parse_parent_class parent_class
G_DEFINE_TYPE (P3dBoxParse, p3d_box_parse, GST_TYPE_BASE_PARSE);
GST_ELEMENT_REGISTER_DEFINE (boxparse, "boxparse", GST_RANK_NONE,
    P3D_TYPE_BOX_PARSE);

static void p3d_box_parse_finalize (GObject * object);
static void p3d_box_parse_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void p3d_box_parse_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static gboolean p3d_box_parse_start (GstBaseParse * parse);
static gboolean p3d_box_parse_stop (GstBaseParse * parse);
static GstFlowReturn p3d_box_parse_handle_frame (GstBaseParse * parse,
    GstBaseParseFrame * frame, gint * skipsize);
static GstFlowReturn p3d_box_parse_pre_push_frame (GstBaseParse * parse,
    GstBaseParseFrame * frame);
static gboolean p3d_box_parse_sink_event (GstBaseParse * parse,
    GstEvent * event);
static gboolean p3d_box_parse_src_query (GstBaseParse * parse,
    GstQuery * query);
static gboolean p3d_box_parse_input (GstBaseParse * parse, GstBuffer * buffer,
    GstFlowReturn * flow);

#define READY_FLAGS (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | \
    GST_PARAM_MUTABLE_READY)

static void
p3d_box_parse_class_init (P3dBoxParseClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseParseClass *parse_class = GST_BASE_PARSE_CLASS (klass);

  gobject_class->finalize = p3d_box_parse_finalize;
  gobject_class->set_property = p3d_box_parse_set_property;
  gobject_class->get_property = p3d_box_parse_get_property;

  g_object_class_install_property (gobject_class, PROP_FORMAT,
      g_param_spec_enum ("format", "Format",
          "The text read: json (boxenc's JSON lines) or kitti (KITTI label "
          "lines, 3D boxes taken as LiDAR-frame boxes); the input caps do "
          "not choose it", P3D_TYPE_BOX_TEXT_FORMAT, DEFAULT_FORMAT,
          READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_MAX_BOXES,
      p3d_param_spec_uint ("max-boxes", "Max boxes",
          "Capacity of an output frame (the max-boxes of the caps); boxes "
          "beyond it are dropped with a warning", 1, P3D_BOXES_MAX_BOXES,
          DEFAULT_MAX_BOXES, READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_BOX_TYPE,
      g_param_spec_enum ("box-type", "Box type",
          "3d or 2d boxes out; auto takes it from the first line that tells "
          "(KITTI: 3d), or from downstream if a frame goes out first",
          P3D_TYPE_BOX_PARSE_BOX_TYPE, DEFAULT_BOX_TYPE, READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_LABELS,
      g_param_spec_string ("labels", "Labels",
          "kitti: the type names of labels 0, 1, 2..., comma-separated; a "
          "type that is a number is that label, any other type is dropped "
          "with a warning", DEFAULT_LABELS, READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_FRAME_PER_BUFFER,
      g_param_spec_boolean ("frame-per-buffer", "Frame per buffer",
          "Each input buffer is one whole frame (one file from "
          "multifilesrc); otherwise frames are delimited by JSON frame "
          "lines, empty lines and the end of the stream",
          DEFAULT_FRAME_PER_BUFFER, READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_VELOCITY,
      g_param_spec_boolean ("velocity", "Velocity",
          "3D boxes: output each box's velocity too (caps velocity=true, "
          "the velocity tensor after the count), from the vx and vy of the "
          "JSON lines that boxenc writes for such boxes; zeros for a box "
          "without them and for KITTI lines", DEFAULT_VELOCITY, READY_FLAGS));

  gst_element_class_set_static_metadata (element_class, "Box parser",
      "Codec/Parser/Boxes",
      "JSON lines or KITTI label lines to 3D or 2D boxes",
      "gst-perception developers");
  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);

  parse_class->start = GST_DEBUG_FUNCPTR (p3d_box_parse_start);
  parse_class->stop = GST_DEBUG_FUNCPTR (p3d_box_parse_stop);
  parse_class->handle_frame = GST_DEBUG_FUNCPTR (p3d_box_parse_handle_frame);
  parse_class->pre_push_frame =
      GST_DEBUG_FUNCPTR (p3d_box_parse_pre_push_frame);
  parse_class->sink_event = GST_DEBUG_FUNCPTR (p3d_box_parse_sink_event);
  parse_class->src_query = GST_DEBUG_FUNCPTR (p3d_box_parse_src_query);

  gst_type_mark_as_plugin_api (P3D_TYPE_BOX_PARSE_BOX_TYPE, 0);
  gst_type_mark_as_plugin_api (P3D_TYPE_BOX_TEXT_FORMAT, 0);
  GST_DEBUG_CATEGORY_INIT (p3d_box_parse_debug, "boxparse", 0,
      "JSON lines or KITTI labels to boxes");
}

static void
p3d_box_parse_init (P3dBoxParse * self)
{
  gchar *why = NULL;

  /* frame-per-buffer numbers lines and times frames by input buffer, and
   * makes an empty one an empty frame */
  p3d_parse_init (GST_BASE_PARSE (self), p3d_box_parse_input);
  self->format = DEFAULT_FORMAT;
  self->max_boxes = DEFAULT_MAX_BOXES;
  self->box_type = DEFAULT_BOX_TYPE;
  p3d_box_text_set_labels (DEFAULT_LABELS, &self->labels_text, &self->labels,
      &why);
  self->frame_per_buffer = DEFAULT_FRAME_PER_BUFFER;
  self->velocity = DEFAULT_VELOCITY;
  self->line = g_string_new (NULL);
  p3d_object_watch_properties (G_OBJECT (self), GST_ELEMENT (self));
}

static void
p3d_box_parse_finalize (GObject * object)
{
  P3dBoxParse *self = P3D_BOX_PARSE (object);

  g_free (self->labels_text);
  g_strfreev (self->labels);
  g_strfreev (self->stream_labels);
  g_free (self->records);
  g_free (self->velocities);
  g_string_free (self->line, TRUE);
  if (self->unknown_labels)
    g_hash_table_unref (self->unknown_labels);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
p3d_box_parse_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dBoxParse *self = P3D_BOX_PARSE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_FORMAT:
      self->format = g_value_get_enum (value);
      break;
    case PROP_MAX_BOXES:
      self->max_boxes = g_value_get_uint (value);
      break;
    case PROP_BOX_TYPE:
      self->box_type = g_value_get_enum (value);
      break;
    case PROP_LABELS:{
      const gchar *text = g_value_get_string (value);
      gchar *why = NULL;

      if (!p3d_box_text_set_labels (text, &self->labels_text, &self->labels,
              &why)) {
        GST_WARNING_OBJECT (self, "labels \"%s\" ignored: %s", text, why);
        g_free (why);
      }
      break;
    }
    case PROP_FRAME_PER_BUFFER:
      self->frame_per_buffer = g_value_get_boolean (value);
      break;
    case PROP_VELOCITY:
      self->velocity = g_value_get_boolean (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
p3d_box_parse_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  P3dBoxParse *self = P3D_BOX_PARSE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_FORMAT:
      g_value_set_enum (value, self->format);
      break;
    case PROP_MAX_BOXES:
      g_value_set_uint (value, self->max_boxes);
      break;
    case PROP_BOX_TYPE:
      g_value_set_enum (value, self->box_type);
      break;
    case PROP_LABELS:
      g_value_set_string (value, self->labels_text);
      break;
    case PROP_FRAME_PER_BUFFER:
      g_value_set_boolean (value, self->frame_per_buffer);
      break;
    case PROP_VELOCITY:
      g_value_set_boolean (value, self->velocity);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static gsize
record_size (P3dBoxKind kind)
{
  return kind == P3D_BOX_KIND_2D ? P3D_BOX2D_RECORD_SIZE :
      P3D_BOX3D_RECORD_SIZE;
}

static void
frame_reset (P3dBoxParse * self)
{
  self->frame_open = FALSE;
  self->frame_has_header = FALSE;
  self->frame_header_line = 0;
  self->frame_pts = P3D_BOX_TEXT_NO_PTS;
  self->frame_count = -1;
  self->n_records = 0;
  self->n_box_lines = 0;
}

/* Forgets the text read so far, at the start and after a flush (the base
 * class drops the bytes it held). */
static void
stream_reset (P3dBoxParse * self)
{
  g_string_truncate (self->line, 0);
  self->scan_offset = 0;
  self->search_offset = 0;
  self->line_number = 0;
  self->buffer_number = 0;
  self->buffer_pts = GST_CLOCK_TIME_NONE;
  self->saturated = FALSE;
  self->failed = FALSE;
  frame_reset (self);
}

static gboolean
p3d_box_parse_start (GstBaseParse * parse)
{
  P3dBoxParse *self = P3D_BOX_PARSE (parse);
  P3dBoxType box_type;

  if (!p3d_element_check_properties (GST_ELEMENT (self)))
    return FALSE;

  GST_OBJECT_LOCK (self);
  self->stream_format = self->format;
  self->stream_max_boxes = self->max_boxes;
  g_strfreev (self->stream_labels);
  self->stream_labels = g_strdupv (self->labels);
  self->stream_frame_per_buffer = self->frame_per_buffer;
  self->stream_velocity = self->velocity;
  box_type = self->box_type;
  GST_OBJECT_UNLOCK (self);

  self->kind = box_type == P3D_BOX_TYPE_3D ? P3D_BOX_KIND_3D :
      box_type == P3D_BOX_TYPE_2D ? P3D_BOX_KIND_2D : P3D_BOX_KIND_UNKNOWN;
  /* KITTI lines hold 3D boxes unless told otherwise. */
  if (self->kind == P3D_BOX_KIND_UNKNOWN
      && self->stream_format == P3D_BOX_TEXT_KITTI)
    self->kind = P3D_BOX_KIND_3D;
  g_free (self->records);
  self->records = g_malloc0 ((gsize) self->stream_max_boxes *
      P3D_BOX3D_RECORD_SIZE);
  g_free (self->velocities);
  self->velocities = self->stream_velocity ?
      g_new0 (gfloat, (gsize) self->stream_max_boxes * 2) : NULL;
  self->caps_sent = FALSE;
  self->frames_out = 0;
  if (self->unknown_labels)
    g_hash_table_unref (self->unknown_labels);
  self->unknown_labels = g_hash_table_new_full (g_str_hash, g_str_equal,
      g_free, NULL);
  stream_reset (self);

  /* A byte offset says nothing of where a frame starts, and the times are
   * the text's: no seeking by bitrate, no timestamps made up. */
  gst_base_parse_set_syncable (parse, FALSE);
  gst_base_parse_set_pts_interpolation (parse, FALSE);
  gst_base_parse_set_infer_ts (parse, FALSE);
  return TRUE;
}

static gboolean
p3d_box_parse_stop (GstBaseParse * parse)
{
  P3dBoxParse *self = P3D_BOX_PARSE (parse);

  g_clear_pointer (&self->records, g_free);
  g_clear_pointer (&self->velocities, g_free);
  g_clear_pointer (&self->stream_labels, g_strfreev);
  g_clear_pointer (&self->unknown_labels, g_hash_table_unref);
  g_string_truncate (self->line, 0);
  return TRUE;
}

static GstCaps *
caps_for_kind (P3dBoxKind kind, guint max_boxes, gboolean velocity)
{
  if (kind == P3D_BOX_KIND_2D) {
    P3dBoxes2dInfo info;

    p3d_boxes2d_info_init (&info);
    info.max_boxes = max_boxes;
    return p3d_boxes2d_info_to_caps (&info);
  } else {
    P3dBoxes3dInfo info;

    p3d_boxes3d_info_init (&info);
    info.max_boxes = max_boxes;
    info.velocity = velocity;
    return p3d_boxes3d_info_to_caps (&info);
  }
}

/* The caps this element can output now: the kind known, or both. */
static GstCaps *
possible_caps (P3dBoxParse * self)
{
  GstCaps *caps;
  P3dBoxKind kind;
  guint max_boxes;
  gboolean velocity;

  caps = gst_pad_get_current_caps (GST_BASE_PARSE_SRC_PAD (self));
  if (caps != NULL)
    return caps;
  GST_OBJECT_LOCK (self);
  if (GST_STATE (self) >= GST_STATE_PAUSED) {
    kind = self->kind;
    max_boxes = self->stream_max_boxes;
    velocity = self->stream_velocity;
  } else {
    kind = self->box_type == P3D_BOX_TYPE_3D ? P3D_BOX_KIND_3D :
        self->box_type == P3D_BOX_TYPE_2D ? P3D_BOX_KIND_2D :
        self->format == P3D_BOX_TEXT_KITTI ? P3D_BOX_KIND_3D :
        P3D_BOX_KIND_UNKNOWN;
    max_boxes = self->max_boxes;
    velocity = self->velocity;
  }
  GST_OBJECT_UNLOCK (self);
  if (kind != P3D_BOX_KIND_UNKNOWN)
    return caps_for_kind (kind, max_boxes, velocity);
  caps = caps_for_kind (P3D_BOX_KIND_3D, max_boxes, velocity);
  return gst_caps_merge (caps, caps_for_kind (P3D_BOX_KIND_2D, max_boxes,
          FALSE));
}

static gboolean
p3d_box_parse_src_query (GstBaseParse * parse, GstQuery * query)
{
  P3dBoxParse *self = P3D_BOX_PARSE (parse);

  if (GST_QUERY_TYPE (query) == GST_QUERY_CAPS)
    return p3d_answer_caps_query (query, possible_caps (self));
  return GST_BASE_PARSE_CLASS (parent_class)->src_query (parse, query);
}

/* Whether downstream takes @caps; otherwise an error naming the boxes'
 * type and what downstream takes. */
static gboolean
downstream_takes (P3dBoxParse * self, GstCaps * caps)
{
  GstPad *srcpad = GST_BASE_PARSE_SRC_PAD (self);
  GstCaps *peer = gst_pad_peer_query_caps (srcpad, NULL);
  GString *takes;
  gchar *ours;
  guint i;

  if (peer == NULL || gst_caps_can_intersect (peer, caps)) {
    gst_clear_caps (&peer);
    return TRUE;
  }
  takes = g_string_new (NULL);
  if (gst_caps_is_empty (peer))
    g_string_append (takes, "nothing");
  for (i = 0; i < gst_caps_get_size (peer); i++) {
    const GstStructure *s = gst_caps_get_structure (peer, i);
    gchar *text = gst_structure_to_string (s);

    /* GStreamer 1.22 ends a structure's text with ';' */
    g_strdelimit (text, ";", ' ');
    g_strchomp (text);
    if (strstr (takes->str, text) == NULL)
      g_string_append_printf (takes, "%s%s", takes->len ? "; " : "", text);
    g_free (text);
  }
  ours = gst_caps_to_string (caps);
  GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
      ("The boxes are %s boxes (%s), downstream takes %s",
          self->kind == P3D_BOX_KIND_2D ? "2D" : "3D",
          self->kind == P3D_BOX_KIND_2D ? P3D_MEDIA_TYPE_BOXES2D :
          P3D_MEDIA_TYPE_BOXES3D, takes->str),
      ("caps %s; the text's fields (or box-type) decide between 3D and 2D "
          "boxes, and max-boxes the capacity", ours));
  g_free (ours);
  g_string_free (takes, TRUE);
  gst_caps_unref (peer);
  return FALSE;
}

/* Sends the caps before the first frame (the base class sends the segment
 * after them). With the kind still unknown (no line has told),
 * downstream's first choice decides. */
static gboolean
ensure_caps (P3dBoxParse * self)
{
  GstPad *srcpad = GST_BASE_PARSE_SRC_PAD (self);
  GstCaps *caps;

  if (self->caps_sent)
    return TRUE;
  if (self->kind == P3D_BOX_KIND_UNKNOWN) {
    GstCaps *ours = possible_caps (self);
    GstCaps *peer = gst_pad_peer_query_caps (srcpad, ours);

    self->kind = P3D_BOX_KIND_3D;
    if (peer != NULL && !gst_caps_is_empty (peer)
        && gst_structure_has_name (gst_caps_get_structure (peer, 0),
            P3D_MEDIA_TYPE_BOXES2D))
      self->kind = P3D_BOX_KIND_2D;
    gst_caps_unref (ours);
    if (peer != NULL)
      gst_caps_unref (peer);
    GST_DEBUG_OBJECT (self, "no line gave the box type: %s from "
        "downstream", self->kind == P3D_BOX_KIND_2D ? "2d" : "3d");
  }
  caps = caps_for_kind (self->kind, self->stream_max_boxes,
      self->stream_velocity);
  /* a caps event downstream refuses is kept as sticky and fails only the
   * frame after it, whose flow is lost when it is pushed at drain: a
   * one-frame file would end with no output and no error */
  if (!downstream_takes (self, caps)) {
    gst_caps_unref (caps);
    self->failed = TRUE;
    return FALSE;
  }
  if (!gst_pad_push_event (srcpad, gst_event_new_caps (caps))) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Downstream does not accept %" GST_PTR_FORMAT, caps),
        ("box-type decides between 3D and 2D boxes"));
    gst_caps_unref (caps);
    self->failed = TRUE;
    return FALSE;
  }
  gst_caps_unref (caps);
  self->caps_sent = TRUE;
  return TRUE;
}

/* Outputs the frame read so far as the one that @consumed bytes of the
 * input held, and starts the next one. */
static GstFlowReturn
finish_frame (P3dBoxParse * self, GstBaseParseFrame * frame, gsize consumed,
    GstClockTime fallback_pts)
{
  gsize size;
  GstMemory *records, *count, *velocity = NULL;
  gboolean with_velocity;
  GstMapInfo info;
  GstBuffer *buffer;
  guint32 n_records = self->n_records;
  guint dropped = self->n_box_lines - self->n_records;

  if (self->frame_has_header && self->frame_count >= 0
      && (guint64) self->frame_count != self->n_box_lines) {
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("Frame line %" G_GUINT64_FORMAT " announced %" G_GINT64_FORMAT
            " boxes, %u followed", self->frame_header_line, self->frame_count,
            self->n_box_lines), ("truncated or edited text?"));
    self->failed = TRUE;
    return GST_FLOW_ERROR;
  }
  if (!ensure_caps (self))
    return GST_FLOW_NOT_NEGOTIATED;
  size = record_size (self->kind);
  with_velocity = self->stream_velocity && self->kind == P3D_BOX_KIND_3D;

  if (dropped > 0) {
    if (!self->saturated)
      GST_ELEMENT_WARNING (self, STREAM, FAILED,
          ("Frame %" G_GUINT64_FORMAT " has %u boxes, more than max-boxes "
              "%u: the last %u were dropped", self->frames_out,
              self->n_box_lines, self->stream_max_boxes, dropped),
          ("posted again only after a frame that fits"));
    GST_INFO_OBJECT (self, "frame %" G_GUINT64_FORMAT ": %u boxes dropped",
        self->frames_out, dropped);
    self->saturated = TRUE;
  } else {
    self->saturated = FALSE;
  }

  records = gst_allocator_alloc (NULL, self->stream_max_boxes * size, NULL);
  count = gst_allocator_alloc (NULL, sizeof (guint32), NULL);
  if (with_velocity)
    velocity = gst_allocator_alloc (NULL, (gsize) self->stream_max_boxes *
        P3D_BOX3D_VELOCITY_SIZE, NULL);
  if (records == NULL || count == NULL || (with_velocity && velocity == NULL)
      || !gst_memory_map (records, &info, GST_MAP_WRITE)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("Cannot allocate a frame of %u boxes", self->stream_max_boxes),
        (NULL));
    self->failed = TRUE;
    if (records)
      gst_memory_unref (records);
    if (count)
      gst_memory_unref (count);
    if (velocity)
      gst_memory_unref (velocity);
    return GST_FLOW_ERROR;
  }
  memcpy (info.data, self->records, n_records * size);
  memset (info.data + n_records * size, 0, info.size - n_records * size);
  gst_memory_unmap (records, &info);
  gst_memory_map (count, &info, GST_MAP_WRITE);
  memcpy (info.data, &n_records, sizeof (n_records));
  gst_memory_unmap (count, &info);
  if (with_velocity) {
    gst_memory_map (velocity, &info, GST_MAP_WRITE);
    memcpy (info.data, self->velocities, n_records * P3D_BOX3D_VELOCITY_SIZE);
    memset (info.data + n_records * P3D_BOX3D_VELOCITY_SIZE, 0,
        info.size - n_records * P3D_BOX3D_VELOCITY_SIZE);
    gst_memory_unmap (velocity, &info);
  }

  buffer = gst_buffer_new ();
  gst_buffer_append_memory (buffer, records);
  gst_buffer_append_memory (buffer, count);
  if (with_velocity)
    gst_buffer_append_memory (buffer, velocity);
  /* pre_push_frame stamps it, after the base class has had its say */
  self->out_pts = self->frame_pts != P3D_BOX_TEXT_NO_PTS ?
      self->frame_pts : fallback_pts;
  GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT ": %u boxes from %"
      G_GSIZE_FORMAT " bytes, pts %" GST_TIME_FORMAT, self->frames_out,
      n_records, consumed, GST_TIME_ARGS (self->out_pts));

  frame_reset (self);
  self->scan_offset = 0;
  self->search_offset = 0;
  frame->out_buffer = buffer;
  return gst_base_parse_finish_frame (GST_BASE_PARSE (self), frame,
      (gint) consumed);
}

/* @line as an error message can show it: valid UTF-8, no control
 * characters, at most QUOTED_CHARS characters. */
static gchar *
quote_line (const gchar * line)
{
  gchar *valid = g_utf8_make_valid (line, -1);
  glong length = g_utf8_strlen (valid, -1);
  gchar *quoted, *c;

  if (length > QUOTED_CHARS) {
    gchar *start = g_utf8_substring (valid, 0, QUOTED_CHARS);

    quoted = g_strconcat (start, "...", NULL);
    g_free (start);
  } else {
    quoted = g_strdup (valid);
  }
  for (c = quoted; *c != '\0'; c++)
    if ((guchar) * c < 0x20 || *c == 0x7f)
      *c = '?';
  g_free (valid);
  return quoted;
}

/* Where the current line is, for messages. */
static gchar *
line_place (P3dBoxParse * self)
{
  if (self->stream_frame_per_buffer)
    return g_strdup_printf ("line %" G_GUINT64_FORMAT " of input buffer %"
        G_GUINT64_FORMAT, self->line_number, self->buffer_number);
  return g_strdup_printf ("line %" G_GUINT64_FORMAT, self->line_number);
}

static GstFlowReturn
line_error (P3dBoxParse * self, const gchar * line, const gchar * why)
{
  gchar *place = line_place (self);
  gchar *quoted = quote_line (line);

  GST_ELEMENT_ERROR (self, STREAM, DECODE, ("Malformed %s: %s: \"%s\"",
          place, why, quoted), ("format %s, frame %" G_GUINT64_FORMAT,
          self->stream_format == P3D_BOX_TEXT_JSON ? "json" : "kitti",
          self->frames_out));
  self->failed = TRUE;
  g_free (place);
  g_free (quoted);
  return GST_FLOW_ERROR;
}

static void
warn_unknown_label (P3dBoxParse * self, const gchar * name)
{
  gchar *quoted = quote_line (name);

  GST_INFO_OBJECT (self, "line %" G_GUINT64_FORMAT ": type \"%s\" dropped",
      self->line_number, quoted);
  if (!g_hash_table_contains (self->unknown_labels, name)) {
    gchar *place = line_place (self);

    g_hash_table_add (self->unknown_labels, g_strdup (name));
    GST_ELEMENT_WARNING (self, STREAM, DECODE,
        ("Type \"%s\" (%s) is not in labels: its lines are dropped", quoted,
            place), ("labels: add the name, or write label numbers"));
    g_free (place);
  }
  g_free (quoted);
}

static GstFlowReturn
add_box (P3dBoxParse * self, const P3dBoxLine * parsed)
{
  if (self->kind == P3D_BOX_KIND_UNKNOWN)
    self->kind = parsed->kind;
  if (self->n_records < self->stream_max_boxes) {
    gsize size = record_size (self->kind);
    guint8 *dst = self->records + self->n_records * size;

    if (self->kind == P3D_BOX_KIND_3D)
      memcpy (dst, &parsed->box3d, size);
    else
      memcpy (dst, &parsed->box2d, size);
    /* zeros for a box without one (line_init) */
    if (self->velocities != NULL)
      memcpy (self->velocities + 2 * self->n_records, parsed->velocity,
          sizeof (parsed->velocity));
    self->n_records++;
  }
  self->n_box_lines++;
  self->frame_open = TRUE;
  return GST_FLOW_OK;
}

/* Where a line ends the frame being read, if it does. */
typedef enum
{
  FRAME_GOES_ON,
  FRAME_ENDS_AFTER_LINE,        /* an empty line: it is the frame's */
  FRAME_ENDS_BEFORE_LINE,       /* a frame line: it starts the next frame */
} FrameEnd;

static GstFlowReturn
start_frame (P3dBoxParse * self, const gchar * line, const P3dBoxLine * parsed,
    FrameEnd * end)
{
  if (self->stream_frame_per_buffer && self->frame_open)
    return line_error (self, line, "a second frame line, or a frame line "
        "after boxes, in one input buffer (frame-per-buffer)");
  if (self->frame_open) {
    /* read again as the first line of the next frame */
    self->line_number--;
    *end = FRAME_ENDS_BEFORE_LINE;
    return GST_FLOW_OK;
  }
  if (self->kind == P3D_BOX_KIND_UNKNOWN)
    self->kind = parsed->kind;
  self->frame_open = TRUE;
  self->frame_has_header = TRUE;
  self->frame_header_line = self->line_number;
  self->frame_pts = parsed->pts;
  self->frame_count = parsed->count;
  return GST_FLOW_OK;
}

/* One line, without its '\n', NUL-terminated and writable; @end says
 * whether it ends the frame. */
static GstFlowReturn
process_line (P3dBoxParse * self, gchar * line, gsize length, FrameEnd * end)
{
  P3dBoxLine parsed;
  P3dBoxLineType type;
  GstFlowReturn flow = GST_FLOW_OK;
  gchar *why = NULL;

  *end = FRAME_GOES_ON;
  self->line_number++;
  if (length > 0 && line[length - 1] == '\r')
    line[--length] = '\0';
  if (memchr (line, '\0', length) != NULL)
    return line_error (self, line, "a NUL byte (binary data?)");

  if (self->stream_format == P3D_BOX_TEXT_JSON)
    type = p3d_box_text_parse_json (line, self->kind, &parsed, &why);
  else
    type = p3d_box_text_parse_kitti (line, self->kind, self->stream_labels,
        &parsed, &why);

  switch (type) {
    case P3D_BOX_LINE_BLANK:
      /* Every empty line ends one frame, so frames of KITTI lines, empty
       * ones too, come back as boxenc separate-frames=true wrote them. */
      if (!self->stream_frame_per_buffer)
        *end = FRAME_ENDS_AFTER_LINE;
      break;
    case P3D_BOX_LINE_FRAME:
      flow = start_frame (self, line, &parsed, end);
      break;
    case P3D_BOX_LINE_BOX:
      flow = add_box (self, &parsed);
      break;
    case P3D_BOX_LINE_UNKNOWN_LABEL:
      warn_unknown_label (self, why);
      break;
    case P3D_BOX_LINE_ERROR:
    default:
      flow = line_error (self, line, why ? why : "unreadable");
      break;
  }
  g_free (why);
  return flow;
}


static GstFlowReturn
line_too_long (P3dBoxParse * self, const guint8 * line, gsize length)
{
  gchar *why = g_strdup_printf ("longer than %u bytes (binary data, or no "
      "line ends?)", MAX_LINE_LENGTH);
  GstFlowReturn flow;

  self->line_number++;
  /* enough of it for the error message to quote */
  g_string_truncate (self->line, 0);
  g_string_append_len (self->line, (const gchar *) line,
      MIN (length, QUOTED_CHARS));
  flow = line_error (self, self->line->str, why);
  g_free (why);
  return flow;
}

/* Reads the line of @length bytes at @text (without its '\n'). */
static GstFlowReturn
read_line (P3dBoxParse * self, const guint8 * text, gsize length,
    FrameEnd * end)
{
  g_string_truncate (self->line, 0);
  g_string_append_len (self->line, (const gchar *) text, length);
  return process_line (self, self->line->str, self->line->len, end);
}

static gboolean
is_blank (const guint8 * text, gsize length)
{
  gsize i;

  for (i = 0; i < length; i++)
    if (!g_ascii_isspace (text[i]))
      return FALSE;
  return TRUE;
}

/* Reads the lines from where the last call stopped (the bytes before are
 * in the frame being read) until one ends the frame, which then goes out.
 * An unfinished last line waits for more, unless the input ends here: the
 * end of the stream, or with frame-per-buffer the end of the input buffer
 * (which is the end of what the base class gives, p3dparse.h), where a
 * last line of white space without a line end is no empty line. */
static GstFlowReturn
p3d_box_parse_handle_frame (GstBaseParse * parse, GstBaseParseFrame * frame,
    gint * skipsize)
{
  P3dBoxParse *self = P3D_BOX_PARSE (parse);
  gboolean draining = GST_BASE_PARSE_DRAINING (parse)
      || self->stream_frame_per_buffer;
  GstFlowReturn flow = GST_FLOW_OK;
  FrameEnd end = FRAME_GOES_ON;
  GstMapInfo map;
  gsize pos;

  if (self->failed)
    return GST_FLOW_ERROR;
  if (!gst_buffer_map (frame->buffer, &map, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("Cannot read the input"),
        ("mapping %" G_GSIZE_FORMAT " bytes failed",
            gst_buffer_get_size (frame->buffer)));
    self->failed = TRUE;
    return GST_FLOW_ERROR;
  }

  pos = self->scan_offset;
  while (flow == GST_FLOW_OK && end == FRAME_GOES_ON && pos < map.size) {
    const guint8 *start = map.data + pos;
    gsize searched = MAX (self->search_offset, pos);
    const guint8 *newline = memchr (map.data + searched, '\n',
        map.size - searched);
    gsize length = (newline ? newline : map.data + map.size) - start;

    if (length > MAX_LINE_LENGTH) {
      flow = line_too_long (self, start, length);
    } else if (newline != NULL) {
      flow = read_line (self, start, length, &end);
      if (end != FRAME_ENDS_BEFORE_LINE)
        pos = newline + 1 - map.data;
    } else {
      self->search_offset = map.size;
      if (!draining)
        break;
      if (!is_blank (start, length))
        flow = read_line (self, start, length, &end);
      if (end != FRAME_ENDS_BEFORE_LINE)
        pos = map.size;
    }
  }
  gst_buffer_unmap (frame->buffer, &map);
  self->scan_offset = pos;
  if (flow != GST_FLOW_OK)
    return flow;

  if (end != FRAME_GOES_ON)
    return finish_frame (self, frame, pos, GST_CLOCK_TIME_NONE);
  if (!draining)
    return GST_FLOW_OK;
  if (self->stream_frame_per_buffer)
    return finish_frame (self, frame, pos, self->buffer_pts);
  if (self->frame_open)
    return finish_frame (self, frame, pos, GST_CLOCK_TIME_NONE);
  /* the end of the stream after a frame's end: white space, no frame */
  *skipsize = (gint) pos;
  self->scan_offset = 0;
  self->search_offset = 0;
  return GST_FLOW_OK;
}

/* The frame's timestamp is the text's (or frame-per-buffer's input
 * buffer's), whatever the base class had guessed. */
static GstFlowReturn
p3d_box_parse_pre_push_frame (GstBaseParse * parse, GstBaseParseFrame * frame)
{
  P3dBoxParse *self = P3D_BOX_PARSE (parse);
  GstBuffer *buffer;

  frame->buffer = gst_buffer_make_writable (frame->buffer);
  buffer = frame->buffer;
  GST_BUFFER_PTS (buffer) = self->out_pts;
  GST_BUFFER_DTS (buffer) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_DURATION (buffer) = GST_CLOCK_TIME_NONE;
  GST_BUFFER_OFFSET (buffer) = self->frames_out;
  GST_BUFFER_OFFSET_END (buffer) = self->frames_out + 1;
  self->frames_out++;
  return GST_FLOW_OK;
}

static gboolean
p3d_box_parse_sink_event (GstBaseParse * parse, GstEvent * event)
{
  P3dBoxParse *self = P3D_BOX_PARSE (parse);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_EOS:
      if (self->frames_out > 0)
        break;
      /* GstBaseParse calls a stream without frames an error; for boxparse
       * text without a frame (none at all, or white space) is no frame,
       * and a stream whose first frame is bad has its own error already */
      gst_base_parse_drain (parse);
      if (self->frames_out > 0)
        break;
      return gst_pad_push_event (GST_BASE_PARSE_SRC_PAD (parse), event);
    case GST_EVENT_FLUSH_STOP:
      stream_reset (self);
      break;
    default:
      break;
  }
  return GST_BASE_PARSE_CLASS (parent_class)->sink_event (parse, event);
}

/* An empty input buffer is an empty frame (an empty file from
 * multifilesrc): the base class, with no bytes to hand over, never calls
 * handle_frame for it. */
static GstFlowReturn
empty_buffer_frame (P3dBoxParse * self, GstBuffer * buffer)
{
  GstBaseParseFrame *frame = gst_base_parse_frame_new (buffer,
      GST_BASE_PARSE_FRAME_FLAG_NONE, 0);
  GstFlowReturn flow = finish_frame (self, frame, 0, self->buffer_pts);

  gst_base_parse_frame_free (frame);
  gst_buffer_unref (buffer);
  return flow;
}

/* With frame-per-buffer, each input buffer is one frame, its lines
 * numbered from 1 and its timestamp the buffer's. */
static gboolean
p3d_box_parse_input (GstBaseParse * parse, GstBuffer * buffer,
    GstFlowReturn * flow)
{
  P3dBoxParse *self = P3D_BOX_PARSE (parse);

  if (!self->stream_frame_per_buffer)
    return TRUE;
  if (self->failed) {
    gst_buffer_unref (buffer);
    *flow = GST_FLOW_ERROR;
    return FALSE;
  }
  self->buffer_number++;
  self->line_number = 0;
  self->buffer_pts = GST_BUFFER_PTS (buffer);
  if (gst_buffer_get_size (buffer) > 0)
    return TRUE;
  *flow = empty_buffer_frame (self, buffer);
  return FALSE;
}
