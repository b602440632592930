/**
 * SECTION:element-pcdparse
 * @title: pcdparse
 *
 * Reads PCD files (the Point Cloud Library's format: v0.5 and v0.7 headers,
 * DATA ascii, binary and binary_compressed, any field order and numeric
 * type) and outputs one application/x-point-cloud buffer per file, in
 * system memory or in CUDA memory as negotiated. Several files may follow
 * each other in one stream (a concatenation through filesrc, a sequence
 * through multifilesrc), split anywhere between input buffers.
 *
 * The point format is the format property, or with auto what downstream
 * asks for (xyzi when it takes any). Each channel takes its field by name
 * (intensity: intensity, i, reflectance, remission; t: t, time, timestamp;
 * r: ring, r); a missing intensity, time or ring is 0, a missing x, y or z
 * is an error. With drop-nonfinite (the default), points whose x, y or z
 * is NaN or infinite are left out, as organized clouds hold many; the
 * stats property counts them.
 *
 * A file takes the timestamp of the input buffer that starts with it; when
 * there is none (filesrc, multifilesrc), a framerate gives file n the time
 * n / framerate, otherwise buffers carry no timestamp.
 *
 * Bad input (a malformed header, counts that disagree, data that does not
 * decode, a truncated last file, garbage) is an error whose message names
 * the file's byte offset in the stream and what is wrong, as in
 * "byte 40960 (file 3, line 4): TYPE has 3 entries but FIELDS has 4".
 * An empty stream gives EOS and nothing else. docs/elements/pcdparse.md
 * has the details and the accepted dialect.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 filesrc location=cloud.pcd ! pcdparse ! fakesink
 * gst-launch-1.0 multifilesrc location=scan_%04d.pcd \
 *     ! pcdparse buffer-is-file=true framerate=10/1 ! voxelize ! fakesink
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstpcdparse.h"
#include "pcdreader.h"
#include "runtime.h"

GST_DEBUG_CATEGORY_STATIC (p3d_pcd_parse_debug);
#define GST_CAT_DEFAULT p3d_pcd_parse_debug

enum
{
  PROP_0,
  PROP_FORMAT,
  PROP_DROP_NONFINITE,
  PROP_BUFFER_IS_FILE,
  PROP_FRAMERATE,
  PROP_CUDA_DEVICE_ID,
  PROP_STATS,
};

#define DEFAULT_FORMAT P3D_PCD_PARSE_FORMAT_AUTO
#define DEFAULT_DROP_NONFINITE TRUE
#define DEFAULT_BUFFER_IS_FILE FALSE
#define DEFAULT_FPS_N 0
#define DEFAULT_FPS_D 1
#define DEFAULT_CUDA_DEVICE_ID -1
/* The point format auto settles on when downstream accepts any: KITTI's. */
#define PREFERRED_FORMAT "xyzi"
/* Buffers the pool allocates up front; it grows when more are in flight. */
#define POOL_MIN_BUFFERS 2
/* docs/media-types.md: no tensor reaches 2 GiB. */
#define MAX_TENSOR_BYTES ((gsize) G_MAXINT32)

#define SINK_CAPS P3D_MEDIA_TYPE_PCD "; text/plain; application/octet-stream"
#define SRC_CAPS \
    P3D_MEDIA_TYPE_POINT_CLOUD ", format = (string) " P3D_POINT_FORMATS_ALL \
    "; " P3D_MEDIA_TYPE_POINT_CLOUD "(" P3D_CAPS_FEATURE_MEMORY_CUDA "), " \
    "format = (string) " P3D_POINT_FORMATS_ALL

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (SINK_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (SRC_CAPS));

#define P3D_TYPE_PCD_PARSE_FORMAT (p3d_pcd_parse_format_get_type ())
static GType
p3d_pcd_parse_format_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {P3D_PCD_PARSE_FORMAT_AUTO, "Negotiated with downstream (xyzi when "
          "downstream accepts any)", "auto"},
    {P3D_PCD_PARSE_FORMAT_XYZ, "x, y, z", "xyz"},
    {P3D_PCD_PARSE_FORMAT_XYZI, "x, y, z, intensity (KITTI)", "xyzi"},
    {P3D_PCD_PARSE_FORMAT_XYZIT, "x, y, z, intensity, time", "xyzit"},
    {P3D_PCD_PARSE_FORMAT_XYZIR, "x, y, z, intensity, ring (nuScenes)",
        "xyzir"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dPcdParseFormat", values);

    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

#define p3d_pcd_parse_parent_class parent_class
G_DEFINE_TYPE (P3dPcdParse, p3d_pcd_parse, GST_TYPE_ELEMENT);

static void p3d_pcd_parse_finalize (GObject * object);
static void p3d_pcd_parse_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void p3d_pcd_parse_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static GstStateChangeReturn p3d_pcd_parse_change_state (GstElement * element,
    GstStateChange transition);
static GstFlowReturn p3d_pcd_parse_chain (GstPad * pad, GstObject * parent,
    GstBuffer * buffer);
static gboolean p3d_pcd_parse_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event);
static gboolean p3d_pcd_parse_src_query (GstPad * pad, GstObject * parent,
    GstQuery * query);

#define READY_FLAGS (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | \
    GST_PARAM_MUTABLE_READY)

static void
p3d_pcd_parse_class_init (P3dPcdParseClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  gobject_class->finalize = p3d_pcd_parse_finalize;
  gobject_class->set_property = p3d_pcd_parse_set_property;
  gobject_class->get_property = p3d_pcd_parse_get_property;

  g_object_class_install_property (gobject_class, PROP_FORMAT,
      g_param_spec_enum ("format", "Format",
          "Point format out; auto takes what downstream asks for (xyzi when "
          "it takes any); a channel the file lacks (intensity, time, ring) "
          "is 0", P3D_TYPE_PCD_PARSE_FORMAT, DEFAULT_FORMAT, READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_DROP_NONFINITE,
      g_param_spec_boolean ("drop-nonfinite", "Drop non-finite points",
          "Leave out points whose x, y or z is NaN or infinite (organized "
          "clouds hold many), counted in stats; false keeps them",
          DEFAULT_DROP_NONFINITE, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS
          | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_BUFFER_IS_FILE,
      g_param_spec_boolean ("buffer-is-file", "Buffer is file",
          "Each input buffer holds whole files (multifilesrc, appsrc): it "
          "is read to its end, so an ASCII file whose last line has no "
          "newline is complete at once, and a file cut short is an error "
          "there; false: files may be split anywhere between buffers",
          DEFAULT_BUFFER_IS_FILE, READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_FRAMERATE,
      gst_param_spec_fraction ("framerate", "Frame rate",
          "Files per second: the caps' framerate, and file n's timestamp "
          "n / framerate when its input buffer has none; 0/1: no framerate, "
          "such buffers carry no timestamp", 0, 1, G_MAXINT, 1,
          DEFAULT_FPS_N, DEFAULT_FPS_D, READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_CUDA_DEVICE_ID,
      g_param_spec_int ("cuda-device-id", "CUDA device",
          "The device holding the buffers when memory:CUDAMemory is "
          "negotiated (-1: device 0)", -1, G_MAXINT, DEFAULT_CUDA_DEVICE_ID,
          READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "files (output since the start), and of the last file: points "
          "(output), dropped-points (non-finite, left out) and offset (its "
          "first byte in the stream)", GST_TYPE_STRUCTURE,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_set_static_metadata (element_class, "PCD parser",
      "Codec/Parser/PointCloud",
      "PCD files (ASCII, binary, binary_compressed) to point clouds",
      "gst-perception developers");
  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);

  element_class->change_state = GST_DEBUG_FUNCPTR (p3d_pcd_parse_change_state);

  gst_type_mark_as_plugin_api (P3D_TYPE_PCD_PARSE_FORMAT, 0);
  GST_DEBUG_CATEGORY_INIT (p3d_pcd_parse_debug, "pcdparse", 0,
      "PCD files to point clouds");
}

static void
p3d_pcd_parse_init (P3dPcdParse * self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (p3d_pcd_parse_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (p3d_pcd_parse_sink_event));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_set_query_function (self->srcpad,
      GST_DEBUG_FUNCPTR (p3d_pcd_parse_src_query));
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  self->format = DEFAULT_FORMAT;
  self->drop_nonfinite = DEFAULT_DROP_NONFINITE;
  self->buffer_is_file = DEFAULT_BUFFER_IS_FILE;
  self->fps_n = DEFAULT_FPS_N;
  self->fps_d = DEFAULT_FPS_D;
  self->cuda_device_id = DEFAULT_CUDA_DEVICE_ID;
  self->adapter = gst_adapter_new ();
  gst_segment_init (&self->in_segment, GST_FORMAT_UNDEFINED);
}

static void
p3d_pcd_parse_finalize (GObject * object)
{
  P3dPcdParse *self = P3D_PCD_PARSE (object);

  g_object_unref (self->adapter);
  gst_clear_caps (&self->caps);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
p3d_pcd_parse_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dPcdParse *self = P3D_PCD_PARSE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_FORMAT:
      self->format = g_value_get_enum (value);
      break;
    case PROP_DROP_NONFINITE:
      self->drop_nonfinite = g_value_get_boolean (value);
      break;
    case PROP_BUFFER_IS_FILE:
      self->buffer_is_file = g_value_get_boolean (value);
      break;
    case PROP_FRAMERATE:
      self->fps_n = gst_value_get_fraction_numerator (value);
      self->fps_d = gst_value_get_fraction_denominator (value);
      break;
    case PROP_CUDA_DEVICE_ID:
      self->cuda_device_id = g_value_get_int (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
p3d_pcd_parse_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  P3dPcdParse *self = P3D_PCD_PARSE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_FORMAT:
      g_value_set_enum (value, self->format);
      break;
    case PROP_DROP_NONFINITE:
      g_value_set_boolean (value, self->drop_nonfinite);
      break;
    case PROP_BUFFER_IS_FILE:
      g_value_set_boolean (value, self->buffer_is_file);
      break;
    case PROP_FRAMERATE:
      gst_value_set_fraction (value, self->fps_n, self->fps_d);
      break;
    case PROP_CUDA_DEVICE_ID:
      g_value_set_int (value, self->cuda_device_id);
      break;
    case PROP_STATS:
      g_value_take_boxed (value, gst_structure_new ("pcdparse-stats",
              "files", G_TYPE_UINT64, self->stats_files,
              "points", G_TYPE_UINT64, self->stats_points,
              "dropped-points", G_TYPE_UINT64, self->stats_dropped,
              "offset", G_TYPE_UINT64, self->stats_offset, NULL));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
clear_pool (P3dPcdParse * self)
{
  /* Buffers still downstream keep the old pool alive until they return. */
  if (self->pool)
    gst_buffer_pool_set_active (self->pool, FALSE);
  gst_clear_object (&self->pool);
  self->pool_points = 0;
}

/* Forgets the bytes read so far, at the start and after a flush. */
static void
stream_reset (P3dPcdParse * self)
{
  gst_adapter_clear (self->adapter);
  self->offset = 0;
  self->wait_for = 0;
  self->newlines_needed = 0;
  self->newlines = 0;
  self->frame = 0;
  self->failed = FALSE;
  self->discont = TRUE;
  self->need_segment = TRUE;
}

static void
stream_start (P3dPcdParse * self)
{
  GST_OBJECT_LOCK (self);
  self->active_format = self->format;
  self->active_buffer_is_file = self->buffer_is_file;
  self->active_fps_n = self->fps_n;
  self->active_fps_d = self->fps_d;
  self->active_device_id = MAX (self->cuda_device_id, 0);
  self->stats_files = 0;
  self->stats_points = 0;
  self->stats_dropped = 0;
  self->stats_offset = 0;
  GST_OBJECT_UNLOCK (self);

  self->files = 0;
  gst_segment_init (&self->in_segment, GST_FORMAT_UNDEFINED);
  self->segment_seqnum = GST_SEQNUM_INVALID;
  stream_reset (self);
}

static void
stream_stop (P3dPcdParse * self)
{
  gst_adapter_clear (self->adapter);
  clear_pool (self);
  gst_clear_caps (&self->caps);
}

static GstStateChangeReturn
p3d_pcd_parse_change_state (GstElement * element, GstStateChange transition)
{
  P3dPcdParse *self = P3D_PCD_PARSE (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED)
    stream_start (self);
  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY)
    stream_stop (self);
  return ret;
}

/* What the element can output: the format property's format, or every
 * format with xyzi first; the framerate property's rate, if any; in both
 * memories, CUDA first when a device is there now, so that a GPU pipeline
 * gets device buffers by default. */
static GstCaps *
possible_caps (P3dPcdParse * self)
{
  P3dPcdParseFormat format;
  GstStructure *s;
  GstCaps *media, *caps;
  gint fps_n, fps_d;

  GST_OBJECT_LOCK (self);
  if (GST_STATE (self) >= GST_STATE_PAUSED) {
    format = self->active_format;
    fps_n = self->active_fps_n;
    fps_d = self->active_fps_d;
  } else {
    format = self->format;
    fps_n = self->fps_n;
    fps_d = self->fps_d;
  }
  GST_OBJECT_UNLOCK (self);

  /* Every format, PREFERRED_FORMAT (xyzi) first as the template lists
   * them. */
  if (format == P3D_PCD_PARSE_FORMAT_AUTO)
    s = gst_structure_from_string (P3D_POINT_CLOUD_CAPS_ALL, NULL);
  else
    s = gst_structure_new (P3D_MEDIA_TYPE_POINT_CLOUD, "format",
        G_TYPE_STRING, p3d_point_format_to_string ((P3dPointFormat) format),
        NULL);
  if (fps_n > 0)
    gst_structure_set (s, "framerate", GST_TYPE_FRACTION, fps_n, fps_d, NULL);
  media = gst_caps_new_full (s, NULL);
  caps = p3d_caps_with_usable_memories (media, TRUE);
  gst_caps_unref (media);
  return caps;
}

static gboolean
p3d_pcd_parse_src_query (GstPad * pad, GstObject * parent, GstQuery * query)
{
  P3dPcdParse *self = P3D_PCD_PARSE (parent);

  if (GST_QUERY_TYPE (query) == GST_QUERY_CAPS) {
    GstCaps *filter, *caps = possible_caps (self);

    gst_query_parse_caps (query, &filter);
    if (filter != NULL) {
      GstCaps *filtered = gst_caps_intersect_full (filter, caps,
          GST_CAPS_INTERSECT_FIRST);

      gst_caps_unref (caps);
      caps = filtered;
    }
    gst_query_set_caps_result (query, caps);
    gst_caps_unref (caps);
    return TRUE;
  }
  return gst_pad_query_default (pad, parent, query);
}

/* Chooses the caps with downstream (our order of preference unless
 * downstream has one) and sends them, then the segment. A change of format
 * or memory replaces the pool. */
static gboolean
negotiate (P3dPcdParse * self)
{
  GstCaps *ours = possible_caps (self);
  GstCaps *caps = gst_pad_peer_query_caps (self->srcpad, ours);
  P3dPointCloudInfo info;
  guint i;

  if (caps == NULL || gst_caps_is_empty (caps)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Downstream accepts none of %" GST_PTR_FORMAT, ours),
        ("the format and framerate properties fix what pcdparse offers"));
    gst_caps_unref (ours);
    gst_clear_caps (&caps);
    return FALSE;
  }
  gst_caps_unref (ours);
  caps = gst_caps_truncate (caps);
  caps = gst_caps_make_writable (caps);
  for (i = 0; i < gst_caps_get_size (caps); i++) {
    GstStructure *s = gst_caps_get_structure (caps, i);

    gst_structure_fixate_field_string (s, "format", PREFERRED_FORMAT);
    if (gst_structure_has_field (s, "framerate"))
      gst_structure_fixate_field_nearest_fraction (s, "framerate", 0, 1);
  }
  caps = gst_caps_fixate (caps);

  if (!p3d_point_cloud_info_from_caps (&info, caps)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Cannot output %" GST_PTR_FORMAT, caps), (NULL));
    gst_caps_unref (caps);
    return FALSE;
  }
  if (self->caps == NULL || !gst_caps_is_equal (caps, self->caps)) {
    GST_DEBUG_OBJECT (self, "caps %" GST_PTR_FORMAT, caps);
    if (!gst_pad_push_event (self->srcpad, gst_event_new_caps (caps))) {
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
          ("Downstream refused %" GST_PTR_FORMAT, caps), (NULL));
      gst_caps_unref (caps);
      return FALSE;
    }
    if (self->caps == NULL || !p3d_point_cloud_info_is_equal (&info,
            &self->info) || p3d_caps_is_cuda (caps) != self->cuda)
      clear_pool (self);
    gst_caps_replace (&self->caps, caps);
    self->info = info;
    self->cuda = p3d_caps_is_cuda (caps);
  }
  gst_caps_unref (caps);
  return TRUE;
}

static gboolean
ensure_caps_and_segment (P3dPcdParse * self)
{
  if ((self->caps == NULL || gst_pad_check_reconfigure (self->srcpad))
      && !negotiate (self))
    return FALSE;
  if (self->need_segment) {
    GstSegment segment;
    GstEvent *event;

    /* Upstream's time segment goes with upstream's timestamps; bytes do
     * not map to time, so other segments are replaced by ours from 0. */
    if (self->in_segment.format == GST_FORMAT_TIME)
      segment = self->in_segment;
    else
      gst_segment_init (&segment, GST_FORMAT_TIME);
    event = gst_event_new_segment (&segment);
    if (self->segment_seqnum != GST_SEQNUM_INVALID)
      gst_event_set_seqnum (event, self->segment_seqnum);
    gst_pad_push_event (self->srcpad, event);
    self->need_segment = FALSE;
  }
  return TRUE;
}

/* A pool whose tensors hold @points points. It is replaced when a file is
 * larger than any before, with a quarter more room than that file needs
 * when it is not the first, so that slowly growing files do not replace
 * it every time. */
static gboolean
ensure_pool (P3dPcdParse * self, gsize points)
{
  gsize stride = P3D_POINT_CLOUD_INFO_STRIDE (&self->info);
  gsize max_points = MAX_TENSOR_BYTES / stride;
  GstAllocator *allocator = NULL;
  gsize capacity;

  if (self->pool != NULL && points <= self->pool_points)
    return TRUE;
  capacity = points;
  if (self->pool != NULL)
    capacity = MAX (points, MIN (self->pool_points + self->pool_points / 4,
            max_points));
  capacity = MAX (capacity, 1);
  clear_pool (self);

  if (self->cuda) {
    gchar *why = NULL;

    allocator = p3d_cuda_allocator_get (self->active_device_id, &why);
    if (allocator == NULL) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("Cannot output memory:CUDAMemory on CUDA device %d",
              self->active_device_id), ("%s", why));
      g_free (why);
      return FALSE;
    }
  }
  p3d_point_cloud_info_get_layout (&self->info, capacity, &self->layout);
  self->pool = p3d_tensor_pool_new_configured (self->caps, &self->layout,
      allocator, POOL_MIN_BUFFERS);
  gst_clear_object (&allocator);
  if (self->pool == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("Cannot allocate buffers of %" G_GSIZE_FORMAT " points (%"
            G_GSIZE_FORMAT " bytes)", capacity, capacity * stride),
        ("caps %" GST_PTR_FORMAT, self->caps));
    return FALSE;
  }
  self->pool_points = capacity;
  GST_DEBUG_OBJECT (self, "pool of %" G_GSIZE_FORMAT " points in %s memory",
      capacity, self->cuda ? "CUDA" : "system");
  return TRUE;
}

/* Parses a decimal number at *@text, moving past it. */
static gboolean
read_number (const gchar ** text, guint64 * value)
{
  const gchar *p = *text;
  gchar *end = NULL;

  if (!g_ascii_isdigit (*p))
    return FALSE;
  *value = g_ascii_strtoull (p, &end, 10);
  *text = end;
  return TRUE;
}

/* The reader's message, placed in the stream: "byte B (file N, line L):
 * rest" from "line L: rest", and so on for the reader's other positions
 * ("point P (line L): ", "byte O: "); B is where the file starts. */
static gchar *
place_message (guint64 file_offset, guint64 file_number, const gchar * message)
{
  const gchar *p = message;
  gchar *where = NULL, *text;
  guint64 first, line;

  if (g_str_has_prefix (p, "line ")) {
    p += 5;
    if (read_number (&p, &first) && g_str_has_prefix (p, ": "))
      where = g_strdup_printf (", line %" G_GUINT64_FORMAT, first);
  } else if (g_str_has_prefix (p, "point ")) {
    p += 6;
    if (read_number (&p, &first) && g_str_has_prefix (p, " (line ")) {
      p += 7;
      if (read_number (&p, &line) && g_str_has_prefix (p, "): ")) {
        p += 1;
        where = g_strdup_printf (", point %" G_GUINT64_FORMAT ", line %"
            G_GUINT64_FORMAT, first, line);
      }
    }
  } else if (g_str_has_prefix (p, "byte ")) {
    p += 5;
    if (read_number (&p, &first) && g_str_has_prefix (p, ": "))
      where = g_strdup_printf (", byte %" G_GUINT64_FORMAT " in the file",
          first);
  }
  if (where == NULL)
    return g_strdup_printf ("byte %" G_GUINT64_FORMAT " (file %"
        G_GUINT64_FORMAT "): %s", file_offset, file_number, message);
  text = g_strdup_printf ("byte %" G_GUINT64_FORMAT " (file %"
      G_GUINT64_FORMAT "%s): %s", file_offset, file_number, where, p + 2);
  g_free (where);
  return text;
}

static const gchar *
data_name (P3dPcdData data)
{
  switch (data) {
    case P3D_PCD_DATA_ASCII:
      return "ascii";
    case P3D_PCD_DATA_BINARY:
      return "binary";
    case P3D_PCD_DATA_BINARY_COMPRESSED:
      return "binary_compressed";
    default:
      return "?";
  }
}

static const gchar *
error_name (gint code)
{
  switch (code) {
    case P3D_PCD_ERROR_HEADER:
      return "header";
    case P3D_PCD_ERROR_INCONSISTENT:
      return "inconsistent";
    case P3D_PCD_ERROR_TYPE:
      return "type";
    case P3D_PCD_ERROR_TOO_LARGE:
      return "too large";
    case P3D_PCD_ERROR_TRUNCATED:
      return "truncated";
    case P3D_PCD_ERROR_DATA:
      return "data";
    case P3D_PCD_ERROR_FIELD:
      return "field";
    default:
      return "other";
  }
}

/* Posts the reader's @error about the file that starts the adapter, and
 * stops reading. */
static GstFlowReturn
post_file_error (P3dPcdParse * self, const GError * error)
{
  gchar *text = place_message (self->offset, self->files + 1,
      error->message);

  GST_ELEMENT_ERROR (self, STREAM, DECODE, ("%s", text),
      ("not a valid PCD file (%s error); %" G_GSIZE_FORMAT " bytes held "
          "from byte %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT " files "
          "read before", error_name (error->code),
          gst_adapter_available (self->adapter), self->offset, self->files));
  g_free (text);
  self->failed = TRUE;
  return GST_FLOW_ERROR;
}

/* Refuses a file whose points, in the negotiated format, would not fit in
 * a buffer; the error names the file as the reader's errors do. */
static GstFlowReturn
check_output_size (P3dPcdParse * self, const P3dPcdHeader * header,
    gsize * bytes)
{
  gsize stride = P3D_POINT_CLOUD_INFO_STRIDE (&self->info);
  GError *error;

  if (header->points <= MAX_TENSOR_BYTES / stride) {
    *bytes = (gsize) header->points * stride;
    return GST_FLOW_OK;
  }
  error = g_error_new (P3D_PCD_ERROR, P3D_PCD_ERROR_TOO_LARGE,
      "%" G_GUINT64_FORMAT " points of format %s take more than the %"
      G_GSIZE_FORMAT " bytes a buffer can hold", header->points,
      self->info.finfo->name, MAX_TENSOR_BYTES);
  post_file_error (self, error);
  g_error_free (error);
  return GST_FLOW_ERROR;
}

/* Decodes the file of @size bytes at @data, parsed into @header, into a
 * pool buffer: into its tensor directly (the host copy of a CUDA memory,
 * uploaded at unmap), then shrunk to the points kept. */
static GstFlowReturn
decode_file (P3dPcdParse * self, const P3dPcdHeader * header,
    const guint8 * data, gsize size, GstBuffer ** out)
{
  gsize stride = P3D_POINT_CLOUD_INFO_STRIDE (&self->info);
  gsize bytes = 0, n_points = 0, n_dropped = 0;
  GstBuffer *buffer = NULL;
  GstMemory *mem;
  GstMapInfo map;
  GError *error = NULL;
  gboolean drop, ok;
  GstFlowReturn flow;

  flow = check_output_size (self, header, &bytes);
  if (flow != GST_FLOW_OK)
    return flow;
  if (!ensure_pool (self, (gsize) header->points))
    return GST_FLOW_ERROR;
  flow = gst_buffer_pool_acquire_buffer (self->pool, &buffer, NULL);
  if (flow != GST_FLOW_OK)
    return flow;

  GST_OBJECT_LOCK (self);
  drop = self->drop_nonfinite;
  GST_OBJECT_UNLOCK (self);

  gst_buffer_resize (buffer, 0, bytes);
  if (bytes == 0) {
    gfloat none[8];

    ok = p3d_pcd_decode_into (header, data, size, self->info.finfo->name,
        drop, none, 0, &n_points, &n_dropped, NULL, &error);
  } else {
    mem = gst_buffer_peek_memory (buffer, 0);
    if (!gst_memory_map (mem, &map, GST_MAP_WRITE | P3D_MAP_OVERWRITE)) {
      GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
          ("Cannot map a buffer of %" G_GSIZE_FORMAT " bytes", bytes),
          ("%s memory", self->cuda ? "CUDA" : "system"));
      gst_buffer_unref (buffer);
      self->failed = TRUE;
      return GST_FLOW_ERROR;
    }
    ok = p3d_pcd_decode_into (header, data, size, self->info.finfo->name,
        drop, (gfloat *) map.data, bytes / sizeof (gfloat), &n_points,
        &n_dropped, NULL, &error);
    gst_memory_unmap (mem, &map);
  }
  if (!ok) {
    gst_buffer_unref (buffer);
    flow = post_file_error (self, error);
    g_error_free (error);
    return flow;
  }
  gst_buffer_resize (buffer, 0, n_points * stride);

  GST_OBJECT_LOCK (self);
  self->stats_files = self->files + 1;
  self->stats_points = n_points;
  self->stats_dropped = n_dropped;
  self->stats_offset = self->offset;
  GST_OBJECT_UNLOCK (self);
  GST_LOG_OBJECT (self, "file %" G_GUINT64_FORMAT " at byte %" G_GUINT64_FORMAT
      ": %s, %" G_GSIZE_FORMAT " bytes, %" G_GUINT64_FORMAT " points, %"
      G_GSIZE_FORMAT " output, %" G_GSIZE_FORMAT " non-finite dropped",
      self->files + 1, self->offset, data_name (header->data), size,
      header->points, n_points, n_dropped);
  *out = buffer;
  return GST_FLOW_OK;
}

/* The input buffer's timestamps go to the file that starts at its first
 * byte; otherwise the framerate's, or none. */
static void
set_timestamps (P3dPcdParse * self, GstBuffer * buffer)
{
  guint64 pts_distance = 0, dts_distance = 0;
  GstClockTime pts = gst_adapter_prev_pts (self->adapter, &pts_distance);
  GstClockTime dts = gst_adapter_prev_dts (self->adapter, &dts_distance);

  if (pts_distance == 0 && GST_CLOCK_TIME_IS_VALID (pts)) {
    GST_BUFFER_PTS (buffer) = pts;
    GST_BUFFER_DTS (buffer) = dts_distance == 0 ? dts : GST_CLOCK_TIME_NONE;
  } else if (self->active_fps_n > 0) {
    guint64 period = (guint64) self->active_fps_d * GST_SECOND;

    pts = gst_util_uint64_scale (self->frame, period, self->active_fps_n);
    GST_BUFFER_PTS (buffer) = pts;
    GST_BUFFER_DTS (buffer) = pts;
    GST_BUFFER_DURATION (buffer) = gst_util_uint64_scale (self->frame + 1,
        period, self->active_fps_n) - pts;
  }
  GST_BUFFER_OFFSET (buffer) = self->files;
  GST_BUFFER_OFFSET_END (buffer) = self->files + 1;
  if (self->discont) {
    GST_BUFFER_FLAG_SET (buffer, GST_BUFFER_FLAG_DISCONT);
    self->discont = FALSE;
  }
}

static guint64
count_newlines (const guint8 * data, gsize size)
{
  const guint8 *end = data + size;
  guint64 count = 0;

  while ((data = memchr (data, '\n', end - data)) != NULL) {
    count++;
    data++;
  }
  return count;
}

/* On NEED_MORE with the header complete (@size bytes at @data held): a
 * file whose points could never be output is refused now rather than
 * buffered up to its announced size. For an ASCII file, the newlines held
 * are counted from now on: the reader's size hint for ASCII is a loose
 * lower bound (two bytes a value), and without this a file read in 4 KiB
 * blocks would be scanned from its start some twenty times. */
static GstFlowReturn
check_announced_file (P3dPcdParse * self, const guint8 * data, gsize size)
{
  P3dPcdHeader header;
  GstFlowReturn flow = GST_FLOW_OK;
  gsize bytes;

  if (!p3d_pcd_header_parse (data, size, &header, NULL))
    return GST_FLOW_OK;
  if (self->caps != NULL || ensure_caps_and_segment (self))
    flow = check_output_size (self, &header, &bytes);
  else
    flow = GST_FLOW_NOT_NEGOTIATED;
  if (header.data == P3D_PCD_DATA_ASCII && self->newlines_needed == 0) {
    /* (sizes beyond 64 bits cannot be held anyway) */
    self->newlines_needed = header.header_lines + MIN (header.points,
        G_MAXUINT64 - header.header_lines);
    self->newlines = count_newlines (data, size);
  }
  p3d_pcd_header_clear (&header);
  return flow;
}

static void
flush_bytes (P3dPcdParse * self, gsize size)
{
  gst_adapter_flush (self->adapter, size);
  self->offset += size;
  self->wait_for = 0;
  self->newlines_needed = 0;
  self->newlines = 0;
}

/* Takes every complete file out of the adapter and pushes it. @at_eos: no
 * byte will follow (the end of the stream, or with buffer-is-file the end
 * of the input buffer): an incomplete file is then an error and padding
 * is dropped. */
static GstFlowReturn
take_files (P3dPcdParse * self, gboolean at_eos)
{
  GstFlowReturn flow = GST_FLOW_OK;

  while (flow == GST_FLOW_OK) {
    gsize available = gst_adapter_available (self->adapter);
    gsize file_size = 0;
    const guint8 *data;
    P3dPcdHeader header;
    P3dPcdScan scan;
    GError *error = NULL;
    GstBuffer *out = NULL;

    if (available == 0 || (!at_eos && (available < self->wait_for
                || self->newlines < self->newlines_needed)))
      break;
    data = gst_adapter_map (self->adapter, available);
    scan = p3d_pcd_scan (data, available, at_eos, &header, &file_size, &error);
    if (scan == P3D_PCD_NEED_MORE && at_eos) {
      /* only NUL bytes and blank lines: nothing */
      gst_adapter_unmap (self->adapter);
      GST_DEBUG_OBJECT (self, "%" G_GSIZE_FORMAT " bytes of padding at the "
          "end", available);
      flush_bytes (self, available);
      break;
    }
    if (scan == P3D_PCD_NEED_MORE) {
      GST_LOG_OBJECT (self, "%" G_GSIZE_FORMAT " bytes from byte %"
          G_GUINT64_FORMAT ": not a whole file, waiting for %" G_GSIZE_FORMAT,
          available, self->offset, file_size);
      self->wait_for = file_size;
      if (file_size > available + 1)
        flow = check_announced_file (self, data, available);
      gst_adapter_unmap (self->adapter);
      break;
    }
    if (scan == P3D_PCD_INVALID) {
      gst_adapter_unmap (self->adapter);
      flow = post_file_error (self, error);
      g_error_free (error);
      break;
    }

    if (ensure_caps_and_segment (self))
      flow = decode_file (self, &header, data, file_size, &out);
    else
      flow = GST_FLOW_NOT_NEGOTIATED;
    p3d_pcd_header_clear (&header);
    gst_adapter_unmap (self->adapter);
    if (flow != GST_FLOW_OK)
      break;
    set_timestamps (self, out);
    flush_bytes (self, file_size);
    self->files++;
    self->frame++;
    flow = gst_pad_push (self->srcpad, out);
  }
  if (flow == GST_FLOW_NOT_NEGOTIATED || flow == GST_FLOW_ERROR)
    self->failed = TRUE;
  return flow;
}

static GstFlowReturn
p3d_pcd_parse_chain (GstPad * pad, GstObject * parent, GstBuffer * buffer)
{
  P3dPcdParse *self = P3D_PCD_PARSE (parent);

  if (self->failed) {
    gst_buffer_unref (buffer);
    return GST_FLOW_ERROR;
  }
  if (GST_BUFFER_FLAG_IS_SET (buffer, GST_BUFFER_FLAG_DISCONT)
      && gst_adapter_available (self->adapter) > 0)
    GST_WARNING_OBJECT (self, "discontinuity inside a file at byte %"
        G_GUINT64_FORMAT, self->offset);
  if (self->newlines_needed > 0) {
    GstMapInfo info;

    if (gst_buffer_map (buffer, &info, GST_MAP_READ)) {
      self->newlines += count_newlines (info.data, info.size);
      gst_buffer_unmap (buffer, &info);
    } else {
      self->newlines_needed = 0;
    }
  }
  gst_adapter_push (self->adapter, buffer);
  return take_files (self, self->active_buffer_is_file);
}

static gboolean
p3d_pcd_parse_sink_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  P3dPcdParse *self = P3D_PCD_PARSE (parent);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:
      /* Any bytes: our caps come from the files and downstream. */
      gst_event_unref (event);
      return TRUE;
    case GST_EVENT_SEGMENT:{
      const GstSegment *segment;

      gst_event_parse_segment (event, &segment);
      if (gst_adapter_available (self->adapter) > 0)
        GST_WARNING_OBJECT (self, "new segment: %" G_GSIZE_FORMAT " bytes "
            "of an unfinished file dropped",
            gst_adapter_available (self->adapter));
      gst_adapter_clear (self->adapter);
      self->wait_for = 0;
      self->newlines_needed = 0;
      self->newlines = 0;
      self->in_segment = *segment;
      if (segment->format == GST_FORMAT_BYTES)
        self->offset = segment->start;
      self->segment_seqnum = gst_event_get_seqnum (event);
      self->need_segment = TRUE;
      gst_event_unref (event);
      return TRUE;
    }
    case GST_EVENT_EOS:
      if (!self->failed)
        take_files (self, TRUE);
      break;
    case GST_EVENT_FLUSH_STOP:
      stream_reset (self);
      break;
    default:
      break;
  }
  return gst_pad_event_default (pad, parent, event);
}
