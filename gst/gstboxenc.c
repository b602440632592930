/**
 * SECTION:element-boxenc
 * @title: boxenc
 *
 * Writes the boxes of each frame of application/x-boxes3d or
 * application/x-boxes2d as text, one output buffer per frame, for filesink
 * (one file) or multifilesink (one file per frame). Boxes in CUDA memory
 * are downloaded.
 *
 * format=json (application/x-json-lines): a frame line
 * {"frame":0,"pts":100000000,"count":2,"type":"3d"} (pts in nanoseconds,
 * null when the buffer has none), then one object per box with the
 * record's fields by name: x, y, z, dx, dy, dz, yaw, score, label (3D) or
 * x1, y1, x2, y2, score, label (2D); 3D boxes with a velocity
 * (velocity=true caps) also vx and vy after yaw (KITTI lines have no place
 * for them). Numbers are written as json-glib writes
 * doubles, so they read back to the same float; NaN and infinities become
 * the strings "NaN", "Infinity" and "-Infinity".
 *
 * format=kitti (text/x-kitti-label): one KITTI label line per box, type
 * named by the labels property (a label with no name is written as its
 * number). 3D boxes are written in the LiDAR frame as they are, not in
 * KITTI's camera frame: location is the box centre (x, y, z), dimensions
 * are dz dy dx (height, width, length), rotation_y is the yaw, and
 * truncated, occluded, alpha and the image box are -1 -1 -10 -1 -1 -1 -1.
 * 2D boxes fill the image box, with KITTI's -1 -1 -1 -1000 -1000 -1000 -10
 * for the 3D fields. Floats are the shortest decimals that read back to
 * the same float.
 *
 * separate-frames adds an empty line after each frame, so that boxparse
 * can split frames written into one file (JSON frames need no separator).
 * docs/elements/boxenc.md has the details and examples.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 pointcloudtestsrc emit=candidates num-buffers=10 \
 *   ! nms mode=bev-rotated iou-threshold=0.01 ! boxenc \
 *   ! filesink location=boxes.jsonl
 * gst-launch-1.0 pointcloudtestsrc emit=candidates num-buffers=10 \
 *   ! nms ! boxenc format=kitti ! multifilesink location=label_%06d.txt
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstboxenc.h"

GST_DEBUG_CATEGORY_STATIC (p3d_box_enc_debug);
#define GST_CAT_DEFAULT p3d_box_enc_debug

enum
{
  PROP_0,
  PROP_FORMAT,
  PROP_LABELS,
  PROP_SEPARATE_FRAMES,
};

#define DEFAULT_FORMAT P3D_BOX_TEXT_JSON
#define DEFAULT_LABELS P3D_BOX_TEXT_DEFAULT_LABELS
#define DEFAULT_SEPARATE_FRAMES FALSE

#define SINK_MEDIA_CAPS P3D_MEDIA_TYPE_BOXES3D "; " P3D_MEDIA_TYPE_BOXES2D
#define SRC_CAPS P3D_MEDIA_TYPE_JSON_LINES "; " P3D_MEDIA_TYPE_KITTI_LABELS

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (SRC_CAPS));

#define p3d_box_enc_parent_class parent_class
G_DEFINE_TYPE (P3dBoxEnc, p3d_box_enc, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE (boxenc, "boxenc", GST_RANK_NONE, P3D_TYPE_BOX_ENC);

static void p3d_box_enc_finalize (GObject * object);
static void p3d_box_enc_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void p3d_box_enc_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static gboolean p3d_box_enc_start (GstBaseTransform * trans);
static gboolean p3d_box_enc_sink_event (GstBaseTransform * trans,
    GstEvent * event);
static GstCaps *p3d_box_enc_transform_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, GstCaps * filter);
static gboolean p3d_box_enc_set_caps (GstBaseTransform * trans,
    GstCaps * incaps, GstCaps * outcaps);
static GstFlowReturn p3d_box_enc_generate_output (GstBaseTransform * trans,
    GstBuffer ** outbuf);

static void
p3d_box_enc_class_init (P3dBoxEncClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  GstCaps *media_caps, *sink_caps;

  gobject_class->finalize = p3d_box_enc_finalize;
  gobject_class->set_property = p3d_box_enc_set_property;
  gobject_class->get_property = p3d_box_enc_get_property;

  g_object_class_install_property (gobject_class, PROP_FORMAT,
      g_param_spec_enum ("format", "Format",
          "json: a frame line then one JSON object per box "
          "(application/x-json-lines); kitti: KITTI label lines, 3D boxes in "
          "the LiDAR frame (text/x-kitti-label)", P3D_TYPE_BOX_TEXT_FORMAT,
          DEFAULT_FORMAT, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_LABELS,
      g_param_spec_string ("labels", "Labels",
          "kitti: the type names of labels 0, 1, 2..., comma-separated, "
          "without spaces inside a name; a label with no name is written as "
          "its number", DEFAULT_LABELS, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_SEPARATE_FRAMES,
      g_param_spec_boolean ("separate-frames", "Separate frames",
          "End every frame with an empty line, so that boxparse can tell "
          "frames apart in one file of KITTI lines (leave off for one file "
          "per frame: KITTI label files have no empty lines)",
          DEFAULT_SEPARATE_FRAMES, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
          | GST_PARAM_MUTABLE_PLAYING));

  gst_element_class_set_static_metadata (element_class, "Box encoder",
      "Codec/Encoder/Boxes",
      "3D or 2D boxes to JSON lines or KITTI label lines",
      "gst-perception developers");

  media_caps = gst_caps_from_string (SINK_MEDIA_CAPS);
  sink_caps = p3d_caps_with_both_memories (media_caps, FALSE);
  gst_element_class_add_pad_template (element_class,
      gst_pad_template_new ("sink", GST_PAD_SINK, GST_PAD_ALWAYS, sink_caps));
  gst_caps_unref (sink_caps);
  gst_caps_unref (media_caps);
  gst_element_class_add_static_pad_template (element_class, &src_template);

  trans_class->start = GST_DEBUG_FUNCPTR (p3d_box_enc_start);
  trans_class->sink_event = GST_DEBUG_FUNCPTR (p3d_box_enc_sink_event);
  trans_class->transform_caps = GST_DEBUG_FUNCPTR (p3d_box_enc_transform_caps);
  trans_class->set_caps = GST_DEBUG_FUNCPTR (p3d_box_enc_set_caps);
  trans_class->generate_output =
      GST_DEBUG_FUNCPTR (p3d_box_enc_generate_output);

  gst_type_mark_as_plugin_api (P3D_TYPE_BOX_TEXT_FORMAT, 0);
  GST_DEBUG_CATEGORY_INIT (p3d_box_enc_debug, "boxenc", 0,
      "Boxes to JSON lines or KITTI labels");
}

static void
p3d_box_enc_init (P3dBoxEnc * self)
{
  gchar *why = NULL;

  self->format = DEFAULT_FORMAT;
  p3d_box_text_set_labels (DEFAULT_LABELS, &self->labels_text, &self->labels,
      &why);
  self->separate_frames = DEFAULT_SEPARATE_FRAMES;
}

static void
p3d_box_enc_finalize (GObject * object)
{
  P3dBoxEnc *self = P3D_BOX_ENC (object);

  g_free (self->labels_text);
  g_strfreev (self->labels);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
p3d_box_enc_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dBoxEnc *self = P3D_BOX_ENC (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_FORMAT:
      self->format = g_value_get_enum (value);
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
    case PROP_SEPARATE_FRAMES:
      self->separate_frames = g_value_get_boolean (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
p3d_box_enc_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  P3dBoxEnc *self = P3D_BOX_ENC (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_FORMAT:
      g_value_set_enum (value, self->format);
      break;
    case PROP_LABELS:
      g_value_set_string (value, self->labels_text);
      break;
    case PROP_SEPARATE_FRAMES:
      g_value_set_boolean (value, self->separate_frames);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static gboolean
p3d_box_enc_start (GstBaseTransform * trans)
{
  P3dBoxEnc *self = P3D_BOX_ENC (trans);

  self->frame_number = 0;
  self->kind = P3D_BOX_KIND_UNKNOWN;
  return TRUE;
}

static gboolean
p3d_box_enc_sink_event (GstBaseTransform * trans, GstEvent * event)
{
  const GstSegment *segment;

  if (GST_EVENT_TYPE (event) == GST_EVENT_SEGMENT) {
    gst_event_parse_segment (event, &segment);
    /* A segment in bytes counts the input records (raw boxes read back by
     * filesrc), not our text: passed on, it would make filesink or fdsink
     * seek back over what they wrote. */
    if (segment->format != GST_FORMAT_TIME) {
      GstSegment time_segment;
      GstEvent *time_event;

      gst_segment_init (&time_segment, GST_FORMAT_TIME);
      time_event = gst_event_new_segment (&time_segment);
      gst_event_set_seqnum (time_event, gst_event_get_seqnum (event));
      gst_event_unref (event);
      event = time_event;
    }
  }
  return GST_BASE_TRANSFORM_CLASS (parent_class)->sink_event (trans, event);
}

static const gchar *
media_type_for_format (P3dBoxTextFormat format)
{
  return format == P3D_BOX_TEXT_KITTI ? P3D_MEDIA_TYPE_KITTI_LABELS :
      P3D_MEDIA_TYPE_JSON_LINES;
}

static GstCaps *
p3d_box_enc_transform_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, GstCaps * filter)
{
  P3dBoxEnc *self = P3D_BOX_ENC (trans);
  GstCaps *text_caps, *result;
  P3dBoxTextFormat format;

  GST_OBJECT_LOCK (self);
  format = self->format;
  GST_OBJECT_UNLOCK (self);
  text_caps = gst_caps_new_empty_simple (media_type_for_format (format));

  if (direction == GST_PAD_SINK) {
    /* any boxes -> the text of the format property */
    result = text_caps;
  } else if (gst_caps_can_intersect (caps, text_caps)) {
    /* that text <- boxes of any kind, capacity and memory */
    result = gst_pad_get_pad_template_caps (GST_BASE_TRANSFORM_SINK_PAD
        (trans));
    gst_caps_unref (text_caps);
  } else {
    result = gst_caps_new_empty ();
    gst_caps_unref (text_caps);
  }

  if (filter != NULL) {
    GstCaps *filtered = gst_caps_intersect_full (filter, result,
        GST_CAPS_INTERSECT_FIRST);

    gst_caps_unref (result);
    result = filtered;
  }
  GST_DEBUG_OBJECT (self, "%s %" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT,
      direction == GST_PAD_SINK ? "sink" : "src", caps, result);
  return result;
}

static gboolean
p3d_box_enc_set_caps (GstBaseTransform * trans, GstCaps * incaps,
    GstCaps * outcaps)
{
  P3dBoxEnc *self = P3D_BOX_ENC (trans);
  const GstStructure *out_structure = gst_caps_get_structure (outcaps, 0);
  GstCaps *media_caps = p3d_caps_without_features (incaps);
  P3dBoxes3dInfo info3d;
  P3dBoxes2dInfo info2d;
  gboolean ok = TRUE;

  self->velocity = FALSE;
  if (p3d_boxes3d_info_from_caps (&info3d, media_caps)) {
    self->kind = P3D_BOX_KIND_3D;
    self->max_boxes = info3d.max_boxes;
    self->velocity = info3d.velocity;
    p3d_boxes3d_info_get_layout (&info3d, &self->layout);
  } else if (p3d_boxes2d_info_from_caps (&info2d, media_caps)) {
    self->kind = P3D_BOX_KIND_2D;
    self->max_boxes = info2d.max_boxes;
    p3d_boxes2d_info_get_layout (&info2d, &self->layout);
  } else {
    GST_WARNING_OBJECT (self, "refused input caps %" GST_PTR_FORMAT
        " (see the p3dcaps debug category for why)", incaps);
    ok = FALSE;
  }
  gst_caps_unref (media_caps);
  self->out_format = gst_structure_has_name (out_structure,
      P3D_MEDIA_TYPE_KITTI_LABELS) ? P3D_BOX_TEXT_KITTI : P3D_BOX_TEXT_JSON;
  return ok;
}

/* The text of one frame of @count records at @records (with their
 * velocities at @velocity, NULL: none). */
static GString *
encode_frame (P3dBoxEnc * self, const guint8 * records,
    const guint8 * velocity, guint32 count, GstClockTime pts)
{
  gsize record_size = self->kind == P3D_BOX_KIND_3D ? P3D_BOX3D_RECORD_SIZE :
      P3D_BOX2D_RECORD_SIZE;
  GString *text = g_string_sized_new (64 + (gsize) count * 160);
  gchar **labels;
  gboolean separate;
  guint32 i;

  GST_OBJECT_LOCK (self);
  labels = g_strdupv (self->labels);
  separate = self->separate_frames;
  GST_OBJECT_UNLOCK (self);

  if (self->out_format == P3D_BOX_TEXT_JSON)
    p3d_box_text_append_json_frame (text, self->frame_number,
        GST_CLOCK_TIME_IS_VALID (pts) ? pts : P3D_BOX_TEXT_NO_PTS, count,
        self->kind);
  for (i = 0; i < count; i++) {
    const guint8 *record = records + i * record_size;

    /* A record copied out: a tensor read from a file need not be aligned. */
    if (self->kind == P3D_BOX_KIND_3D) {
      P3dcBox3d box;

      memcpy (&box, record, sizeof (box));
      if (self->out_format == P3D_BOX_TEXT_JSON && velocity != NULL) {
        gfloat v[2];

        memcpy (v, velocity + i * P3D_BOX3D_VELOCITY_SIZE, sizeof (v));
        p3d_box_text_append_json_box3d_velocity (text, &box, v);
      } else if (self->out_format == P3D_BOX_TEXT_JSON) {
        p3d_box_text_append_json_box3d (text, &box);
      } else {
        p3d_box_text_append_kitti_box3d (text, &box, labels);
      }
    } else {
      P3dcBox2d box;

      memcpy (&box, record, sizeof (box));
      if (self->out_format == P3D_BOX_TEXT_JSON)
        p3d_box_text_append_json_box2d (text, &box);
      else
        p3d_box_text_append_kitti_box2d (text, &box, labels);
    }
  }
  if (separate)
    g_string_append_c (text, '\n');
  g_strfreev (labels);
  return text;
}

static GstFlowReturn
p3d_box_enc_generate_output (GstBaseTransform * trans, GstBuffer ** outbuf)
{
  P3dBoxEnc *self = P3D_BOX_ENC (trans);
  GstBuffer *inbuf = trans->queued_buf;
  P3dTensorMap map;
  gchar *why = NULL;
  guint32 count;
  GString *text;
  gsize size;

  *outbuf = NULL;
  if (inbuf == NULL)
    return GST_FLOW_OK;
  trans->queued_buf = NULL;
  if (self->kind == P3D_BOX_KIND_UNKNOWN) {
    gst_buffer_unref (inbuf);
    return GST_FLOW_NOT_NEGOTIATED;
  }

  /* Host pointers: CUDA memory is downloaded here, after its producer's
   * work has finished. */
  if (!p3d_tensor_map (&map, inbuf, &self->layout, GST_MAP_READ, &why)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Input buffer does not hold the boxes of its caps (max-boxes %u)",
            self->max_boxes), ("%s", why));
    g_free (why);
    gst_buffer_unref (inbuf);
    return GST_FLOW_ERROR;
  }
  memcpy (&count, map.data[P3D_BOXES_TENSOR_COUNT], sizeof (count));
  if (count > self->max_boxes) {
    /* "none", not GStreamer's 99:99:99.999999999, for no timestamp */
    gchar *when = GST_BUFFER_PTS_IS_VALID (inbuf) ?
        g_strdup_printf ("%" GST_TIME_FORMAT,
        GST_TIME_ARGS (GST_BUFFER_PTS (inbuf))) : g_strdup ("none");

    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Box count %u is more than max-boxes %u", count, self->max_boxes),
        ("frame %" G_GUINT64_FORMAT ", pts %s", self->frame_number, when));
    g_free (when);
    p3d_tensor_unmap (&map);
    gst_buffer_unref (inbuf);
    return GST_FLOW_ERROR;
  }
  text = encode_frame (self, map.data[P3D_BOXES_TENSOR_RECORDS],
      self->velocity ? map.data[P3D_BOXES_TENSOR_VELOCITY] : NULL, count,
      GST_BUFFER_PTS (inbuf));
  p3d_tensor_unmap (&map);

  size = text->len;
  if (size > 0)
    *outbuf = gst_buffer_new_wrapped (g_string_free (text, FALSE), size);
  else {
    /* An empty KITTI frame: an empty buffer (multifilesink writes an empty
     * label file). */
    g_string_free (text, TRUE);
    *outbuf = gst_buffer_new ();
  }
  gst_buffer_copy_into (*outbuf, inbuf, GST_BUFFER_COPY_TIMESTAMPS, 0, -1);
  GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT ": %u boxes, %"
      G_GSIZE_FORMAT " bytes", self->frame_number, count, size);
  self->frame_number++;
  gst_buffer_unref (inbuf);
  return GST_FLOW_OK;
}
