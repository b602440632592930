/**
 * SECTION:element-pcdparse
 * @title: pcdparse
 *
 * Reads PCD files (the Point Cloud Library's format: v0.5 and v0.7 headers,
 * DATA ascii, binary and binary_compressed, any field order and numeric
 * type) and outputs one application/x-point-cloud buffer per file, in
 * system memory or in CUDA memory as negotiated. Several files may follow
 * each other in one stream (a concatenation through filesrc, a sequence
 * through multifilesrc), split anywhere between input buffers. It is a
 * GstBaseParse: draining at EOS, a new segment or a discontinuity, and the
 * timestamps, are GStreamer's.
 *
 * The point format is the format property, or with auto what downstream
 * asks for (xyzi when it takes any). Each channel takes its field by name
 * (intensity: intensity, i, reflectance, remission; t: t, time, timestamp;
 * r: ring, r); a missing intensity, time or ring is 0, a missing x, y or z
 * is an error. With drop-nonfinite (the default), points whose x, y or z
 * is NaN or infinite are left out, as organized clouds hold many; the
 * stats property counts them. A finite value that no float32 holds (1e39)
 * becomes infinite: such points are counted apart and a warning says so.
 *
 * Timestamps: a file takes its input buffer's when upstream gives them in
 * a time segment (a file that starts inside a buffer after another file
 * gets the previous file's end when the framerate gives a duration, else
 * none); otherwise a framerate gives file n the time n / framerate, and
 * without a framerate buffers carry no timestamp.
 *
 * Bad input (a malformed header, counts that disagree, data that does not
 * decode, a truncated last file, garbage) is an error whose message names
 * the file's byte offset in the stream and what is wrong, as in
 * "byte 40960 (file 3, line 4): TYPE has 3 entries but FIELDS has 4". A
 * file that announces more bytes than max-file-size, or more points than a
 * buffer holds, is refused as soon as its header is in, and an ASCII file
 * is never held beyond max-file-size. An empty stream (no PCD file before
 * EOS) gives a warning that says so, then EOS. docs/elements/pcdparse.md has the details and the accepted
 * dialect.
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
#include "p3dcapsquery.h"
#include "p3dparse.h"
#include "pcdparse-reader.h"
#include "p3dparamspec.h"

GST_DEBUG_CATEGORY_STATIC (p3d_pcd_parse_debug);
#define GST_CAT_DEFAULT p3d_pcd_parse_debug

enum
{
  PROP_0,
  PROP_FORMAT,
  PROP_DROP_NONFINITE,
  PROP_BUFFER_IS_FILE,
  PROP_FRAMERATE,
  PROP_MAX_FILE_SIZE,
  PROP_CUDA_DEVICE_ID,
  PROP_STATS,
};

#define DEFAULT_FORMAT P3D_POINT_FORMAT_AUTO
#define DEFAULT_DROP_NONFINITE TRUE
#define DEFAULT_BUFFER_IS_FILE FALSE
#define DEFAULT_FPS_N 0
#define DEFAULT_FPS_D 1
/* 1 GiB: four times an organized 2048 x 2048 cloud of 64-byte points. */
#define DEFAULT_MAX_FILE_SIZE (G_GUINT64_CONSTANT (1) << 30)
/* GstBaseParse counts frame sizes in guint. */
#define MAX_MAX_FILE_SIZE ((guint64) G_MAXUINT - 1)
#define DEFAULT_CUDA_DEVICE_ID -1
/* The point format auto settles on when downstream accepts any: KITTI's. */
#define PREFERRED_FORMAT "xyzi"

#define SINK_CAPS P3D_MEDIA_TYPE_PCD "; text/plain; application/octet-stream"
#define SRC_CAPS \
    P3D_MEDIA_TYPE_POINT_CLOUD ", format = (string) " P3D_POINT_FORMATS_ALL \
    "; " P3D_MEDIA_TYPE_POINT_CLOUD "(" P3D_CAPS_FEATURE_MEMORY_CUDA "), " \
    "format = (string) " P3D_POINT_FORMATS_ALL

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS (SINK_CAPS));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (SRC_CAPS));

#define p3d_pcd_parse_parent_class parent_class
G_DEFINE_TYPE (P3dPcdParse, p3d_pcd_parse, GST_TYPE_BASE_PARSE);
GST_ELEMENT_REGISTER_DEFINE (pcdparse, "pcdparse", GST_RANK_NONE,
    P3D_TYPE_PCD_PARSE);

static void p3d_pcd_parse_finalize (GObject * object);
static void p3d_pcd_parse_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void p3d_pcd_parse_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static gboolean p3d_pcd_parse_start (GstBaseParse * parse);
static gboolean p3d_pcd_parse_stop (GstBaseParse * parse);
static GstFlowReturn p3d_pcd_parse_handle_frame (GstBaseParse * parse,
    GstBaseParseFrame * frame, gint * skipsize);
static GstFlowReturn p3d_pcd_parse_pre_push_frame (GstBaseParse * parse,
    GstBaseParseFrame * frame);
static gboolean p3d_pcd_parse_sink_event (GstBaseParse * parse,
    GstEvent * event);
static gboolean p3d_pcd_parse_src_query (GstBaseParse * parse,
    GstQuery * query);
static gboolean p3d_pcd_parse_sink_query (GstBaseParse * parse,
    GstQuery * query);
static void p3d_pcd_parse_set_context (GstElement * element,
    GstContext * context);
static gboolean p3d_pcd_parse_input (GstBaseParse * parse, GstBuffer * buffer,
    GstFlowReturn * flow);

#define READY_FLAGS (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | \
    GST_PARAM_MUTABLE_READY)

static void
p3d_pcd_parse_class_init (P3dPcdParseClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseParseClass *parse_class = GST_BASE_PARSE_CLASS (klass);

  gobject_class->finalize = p3d_pcd_parse_finalize;
  gobject_class->set_property = p3d_pcd_parse_set_property;
  gobject_class->get_property = p3d_pcd_parse_get_property;

  g_object_class_install_property (gobject_class, PROP_FORMAT,
      g_param_spec_enum ("format", "Format",
          "Point format out; auto takes what downstream asks for (xyzi when "
          "it takes any); a channel the file lacks (intensity, time, ring) "
          "is 0", P3D_TYPE_POINT_FORMAT, DEFAULT_FORMAT, READY_FLAGS));
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
      p3d_param_spec_fraction ("framerate", "Frame rate",
          "Files per second: the caps' framerate, each file's duration, and "
          "file n's timestamp n / framerate when upstream gives none; 0/1: "
          "no framerate, such buffers carry no timestamp", 0, 1, G_MAXINT, 1,
          DEFAULT_FPS_N, DEFAULT_FPS_D, READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_MAX_FILE_SIZE,
      p3d_param_spec_uint64 ("max-file-size", "Max file size",
          "Largest PCD file in bytes: a header announcing more (points x "
          "point size, or the compressed size) is refused at once, and no "
          "more than this is held while waiting for the end of a file",
          1, MAX_MAX_FILE_SIZE, DEFAULT_MAX_FILE_SIZE, READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_CUDA_DEVICE_ID,
      p3d_param_spec_int ("cuda-device-id", "CUDA device",
          "The CUDA device holding the buffers when memory:CUDAMemory is "
          "negotiated; -1: the device the pipeline already uses (shared by "
          "the other elements), else device 0", -1, G_MAXINT,
          DEFAULT_CUDA_DEVICE_ID, READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "files (output since the start), scanned-bytes (bytes read while "
          "looking for the ends of files, since the start), and of the last "
          "file: points (output), dropped-points (non-finite, left out), "
          "overflow-points (a finite value beyond float32 made infinite) "
          "and offset (its first byte in the stream)", GST_TYPE_STRUCTURE,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_set_static_metadata (element_class, "PCD parser",
      "Codec/Parser/PointCloud",
      "PCD files (ASCII, binary, binary_compressed) to point clouds",
      "gst-perception developers");
  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);

  element_class->set_context = GST_DEBUG_FUNCPTR (p3d_pcd_parse_set_context);
  parse_class->start = GST_DEBUG_FUNCPTR (p3d_pcd_parse_start);
  parse_class->stop = GST_DEBUG_FUNCPTR (p3d_pcd_parse_stop);
  parse_class->handle_frame = GST_DEBUG_FUNCPTR (p3d_pcd_parse_handle_frame);
  parse_class->pre_push_frame =
      GST_DEBUG_FUNCPTR (p3d_pcd_parse_pre_push_frame);
  parse_class->sink_event = GST_DEBUG_FUNCPTR (p3d_pcd_parse_sink_event);
  parse_class->src_query = GST_DEBUG_FUNCPTR (p3d_pcd_parse_src_query);
  parse_class->sink_query = GST_DEBUG_FUNCPTR (p3d_pcd_parse_sink_query);

  gst_type_mark_as_plugin_api (P3D_TYPE_POINT_FORMAT, 0);
  GST_DEBUG_CATEGORY_INIT (p3d_pcd_parse_debug, "pcdparse", 0,
      "PCD files to point clouds");
}

static void
p3d_pcd_parse_init (P3dPcdParse * self)
{
  /* while a file waits for its last line, each new buffer is looked at
   * once for the lines it ends, so that the frame is not handed over and
   * scanned again on every buffer */
  p3d_parse_init (GST_BASE_PARSE (self), p3d_pcd_parse_input);
  self->format = DEFAULT_FORMAT;
  self->drop_nonfinite = DEFAULT_DROP_NONFINITE;
  self->buffer_is_file = DEFAULT_BUFFER_IS_FILE;
  self->fps_n = DEFAULT_FPS_N;
  self->fps_d = DEFAULT_FPS_D;
  self->max_file_size = DEFAULT_MAX_FILE_SIZE;
  self->cuda_device_id = DEFAULT_CUDA_DEVICE_ID;
  p3d_object_watch_properties (G_OBJECT (self), GST_ELEMENT (self));
}

static void
p3d_pcd_parse_finalize (GObject * object)
{
  P3dPcdParse *self = P3D_PCD_PARSE (object);

  gst_clear_caps (&self->caps);
  if (self->context)
    gst_context_unref (self->context);
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
    case PROP_MAX_FILE_SIZE:
      self->max_file_size = g_value_get_uint64 (value);
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
    case PROP_MAX_FILE_SIZE:
      g_value_set_uint64 (value, self->max_file_size);
      break;
    case PROP_CUDA_DEVICE_ID:
      g_value_set_int (value, self->cuda_device_id);
      break;
    case PROP_STATS:
      g_value_take_boxed (value, gst_structure_new ("pcdparse-stats",
              "files", G_TYPE_UINT64, self->stats_files,
              "scanned-bytes", G_TYPE_UINT64, self->stats_scanned,
              "points", G_TYPE_UINT64, self->stats_points,
              "dropped-points", G_TYPE_UINT64, self->stats_dropped,
              "overflow-points", G_TYPE_UINT64, self->stats_overflow,
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

/* Stops waiting: the next bytes go to handle_frame as they come. */
static void
wait_for_nothing (P3dPcdParse * self)
{
  self->wait = WAIT_NONE;
  gst_base_parse_set_min_frame_size (GST_BASE_PARSE (self), 1);
}

/* Forgets where the stream was, at the start and after a flush. */
static void
stream_reset (P3dPcdParse * self)
{
  self->offset = 0;
  self->padding = 0;
  self->padding_lines = 0;
  self->frame = 0;
  self->failed = FALSE;
  self->failed_flow = GST_FLOW_ERROR;
  self->discont = TRUE;
  wait_for_nothing (self);
}

static gboolean
p3d_pcd_parse_start (GstBaseParse * parse)
{
  P3dPcdParse *self = P3D_PCD_PARSE (parse);

  if (!p3d_element_check_properties (GST_ELEMENT (self)))
    return FALSE;

  GST_OBJECT_LOCK (self);
  self->active_format = self->format;
  self->active_buffer_is_file = self->buffer_is_file;
  self->active_fps_n = self->fps_n;
  self->active_fps_d = self->fps_d;
  self->active_max_file_size = self->max_file_size;
  self->stats_files = 0;
  self->stats_scanned = 0;
  self->stats_points = 0;
  self->stats_dropped = 0;
  self->stats_overflow = 0;
  self->stats_offset = 0;
  GST_OBJECT_UNLOCK (self);

  self->active_device_id = p3d_cuda_find_element_device (GST_ELEMENT (self),
      &self->context);
  self->files = 0;
  self->upstream_time = FALSE;
  self->warned_overflow = FALSE;
  stream_reset (self);
  /* a byte offset says nothing of where a file starts: no seeking by
   * bitrate into the middle of one */
  gst_base_parse_set_syncable (parse, FALSE);
  if (self->active_fps_n > 0)
    gst_base_parse_set_frame_rate (parse, self->active_fps_n,
        self->active_fps_d, 0, 0);
  return TRUE;
}

static gboolean
p3d_pcd_parse_stop (GstBaseParse * parse)
{
  P3dPcdParse *self = P3D_PCD_PARSE (parse);

  clear_pool (self);
  gst_clear_caps (&self->caps);
  return TRUE;
}

/* What the element can output: the format property's format, or every
 * format with xyzi first; the framerate property's rate, if any; in both
 * memories, CUDA first when a device is there now, so that a GPU pipeline
 * gets device buffers by default. */
static GstCaps *
possible_caps (P3dPcdParse * self)
{
  P3dPointFormat format;
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
  if (format == P3D_POINT_FORMAT_AUTO)
    s = gst_structure_from_string (P3D_POINT_CLOUD_CAPS_ALL, NULL);
  else
    s = gst_structure_new (P3D_MEDIA_TYPE_POINT_CLOUD, "format",
        G_TYPE_STRING, p3d_point_format_to_string (format), NULL);
  if (fps_n > 0)
    gst_structure_set (s, "framerate", GST_TYPE_FRACTION, fps_n, fps_d, NULL);
  media = gst_caps_new_full (s, NULL);
  caps = p3d_caps_with_usable_memories (media, TRUE);
  gst_caps_unref (media);
  return caps;
}

static void
p3d_pcd_parse_set_context (GstElement * element, GstContext * context)
{
  P3dPcdParse *self = P3D_PCD_PARSE (element);

  p3d_cuda_handle_set_context (element, context, &self->context);
  GST_ELEMENT_CLASS (parent_class)->set_context (element, context);
}

/* The device of our CUDA buffers is shared with the GPU elements on both
 * sides (p3dcudacontext.h). */
static gboolean
answer_context_query (P3dPcdParse * self, GstQuery * query)
{
  return p3d_cuda_handle_context_query (GST_ELEMENT (self), query,
      &self->context);
}

static gboolean
p3d_pcd_parse_src_query (GstBaseParse * parse, GstQuery * query)
{
  P3dPcdParse *self = P3D_PCD_PARSE (parse);

  if (GST_QUERY_TYPE (query) == GST_QUERY_CAPS)
    return p3d_answer_caps_query (query, possible_caps (self));
  if (answer_context_query (self, query))
    return TRUE;
  return GST_BASE_PARSE_CLASS (parent_class)->src_query (parse, query);
}

static gboolean
p3d_pcd_parse_sink_query (GstBaseParse * parse, GstQuery * query)
{
  if (answer_context_query (P3D_PCD_PARSE (parse), query))
    return TRUE;
  return GST_BASE_PARSE_CLASS (parent_class)->sink_query (parse, query);
}

/* Chooses the caps with downstream (our order of preference unless
 * downstream has one) and sends them, then the segment. A change of format
 * or memory replaces the pool. */
static gboolean
negotiate (P3dPcdParse * self)
{
  gboolean new_pool;

  if (!p3d_parse_negotiate_point_cloud (GST_BASE_PARSE (self),
          possible_caps (self), PREFERRED_FORMAT, TRUE,
          "the format and framerate properties fix what pcdparse offers",
          &self->caps, &self->info, &self->cuda, &new_pool))
    return FALSE;
  if (new_pool)
    clear_pool (self);
  return TRUE;
}

static gboolean
ensure_caps (P3dPcdParse * self)
{
  GstPad *srcpad = GST_BASE_PARSE_SRC_PAD (self);

  return (self->caps != NULL && !gst_pad_check_reconfigure (srcpad))
      || negotiate (self);
}

/* A pool whose tensors hold @points points. It is replaced when a file is
 * larger than any before, with a quarter more room than that file needs
 * when it is not the first, so that slowly growing files do not replace
 * it every time. */
static gboolean
ensure_pool (P3dPcdParse * self, gsize points)
{
  gsize stride = P3D_POINT_CLOUD_INFO_STRIDE (&self->info);
  gsize max_points = p3d_point_cloud_info_get_max_points (&self->info);
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
    allocator = p3d_cuda_element_get_allocator (GST_ELEMENT (self),
        self->active_device_id, &self->context);
    if (allocator == NULL)
      return FALSE;
  }
  p3d_point_cloud_info_get_layout (&self->info, capacity, &self->layout);
  self->pool = p3d_tensor_pool_new_configured (self->caps, &self->layout,
      allocator, P3D_TENSOR_POOL_MIN_BUFFERS);
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

/* The reader's @error about the file that starts at self->offset, placed
 * in the stream: "byte B (file N, line L): reason", B where the file (its
 * padding included) starts, the line counting that padding's lines. */
static gchar *
place_message (P3dPcdParse * self, const GError * error)
{
  guint64 file_offset = self->offset - self->padding;
  guint64 file_number = self->files + 1;
  P3dPcdPosition at;
  gchar *where;
  gchar *text;

  if (!p3d_pcd_error_get_position (error, &at))
    return g_strdup_printf ("byte %" G_GUINT64_FORMAT " (file %"
        G_GUINT64_FORMAT "): %s", file_offset, file_number, error->message);
  if (at.point != P3D_PCD_NO_POSITION)
    where = g_strdup_printf (", point %" G_GUINT64_FORMAT ", line %"
        G_GUINT64_FORMAT, at.point, at.line + self->padding_lines);
  else if (at.line != P3D_PCD_NO_POSITION)
    where = g_strdup_printf (", line %" G_GUINT64_FORMAT,
        at.line + self->padding_lines);
  else if (at.byte != P3D_PCD_NO_POSITION)
    where = g_strdup_printf (", byte %" G_GUINT64_FORMAT " in the file",
        at.byte + self->padding);
  else
    where = g_strdup ("");
  text = g_strdup_printf ("byte %" G_GUINT64_FORMAT " (file %"
      G_GUINT64_FORMAT "%s): %s", file_offset, file_number, where, at.reason);
  g_free (where);
  return text;
}

/* Posts the reader's @error about the file at self->offset, and stops
 * reading. */
static GstFlowReturn
post_file_error (P3dPcdParse * self, const GError * error, gsize held)
{
  gchar *text = place_message (self, error);

  GST_ELEMENT_ERROR (self, STREAM, DECODE, ("%s", text),
      ("not a valid PCD file (%s error); %" G_GSIZE_FORMAT " bytes held "
          "from byte %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT " files "
          "read before", error_name (error->code), held, self->offset,
          self->files));
  g_free (text);
  self->failed = TRUE;
  return GST_FLOW_ERROR;
}

static GstFlowReturn
post_too_large (P3dPcdParse * self, gsize held, const gchar * format, ...)
G_GNUC_PRINTF (3, 4);

/* Posts a P3D_PCD_ERROR_TOO_LARGE error of the element's own. */
     static GstFlowReturn
         post_too_large (P3dPcdParse * self, gsize held, const gchar * format,
    ...)
{
  GError *error;
  gchar *message;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);
  error = g_error_new_literal (P3D_PCD_ERROR, P3D_PCD_ERROR_TOO_LARGE, message);
  g_free (message);
  post_file_error (self, error, held);
  g_error_free (error);
  return GST_FLOW_ERROR;
}

/* Refuses a file whose @points, in the negotiated format, would not fit in
 * a buffer. */
static GstFlowReturn
check_output_size (P3dPcdParse * self, guint64 points, gsize held,
    gsize * bytes)
{
  gsize stride = P3D_POINT_CLOUD_INFO_STRIDE (&self->info);

  if (points <= p3d_point_cloud_info_get_max_points (&self->info)) {
    *bytes = (gsize) points *stride;
    return GST_FLOW_OK;
  }
  return post_too_large (self, held, "%" G_GUINT64_FORMAT " points of format "
      "%s take more than the %" G_GSIZE_FORMAT " bytes a buffer can hold",
      points, self->info.finfo->name, P3D_RECORD_MAX_BYTES);
}

/* Decodes the file of @size bytes at @data, parsed into @header, into a
 * pool buffer: into its tensor directly (the host copy of a CUDA memory,
 * uploaded at unmap), then shrunk to the points kept. */
static GstFlowReturn
decode_file (P3dPcdParse * self, const P3dPcdHeader * header,
    const guint8 * data, gsize size, GstBuffer ** out)
{
  gsize stride = P3D_POINT_CLOUD_INFO_STRIDE (&self->info);
  gsize bytes = 0, n_points = 0, n_dropped = 0, n_overflow = 0;
  GstBuffer *buffer = NULL;
  GstMemory *mem;
  GstMapInfo map;
  GError *error = NULL;
  gboolean drop, ok;
  GstFlowReturn flow;

  flow = check_output_size (self, header->points, size, &bytes);
  if (flow != GST_FLOW_OK)
    return flow;
  if (!ensure_pool (self, (gsize) header->points)) {
    self->failed = TRUE;
    return GST_FLOW_ERROR;
  }
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
        drop, none, 0, &n_points, &n_dropped, &n_overflow, &error);
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
        &n_dropped, &n_overflow, &error);
    gst_memory_unmap (mem, &map);
  }
  if (!ok) {
    gst_buffer_unref (buffer);
    flow = post_file_error (self, error, size);
    g_error_free (error);
    return flow;
  }
  gst_buffer_resize (buffer, 0, n_points * stride);

  GST_OBJECT_LOCK (self);
  self->stats_files = self->files + 1;
  self->stats_points = n_points;
  self->stats_dropped = n_dropped;
  self->stats_overflow = n_overflow;
  self->stats_offset = self->offset - self->padding;
  GST_OBJECT_UNLOCK (self);
  if (n_overflow > 0 && !self->warned_overflow) {
    /* a silent drop would read as a sparse cloud: say it once a stream */
    GST_ELEMENT_WARNING (self, STREAM, DECODE,
        ("byte %" G_GUINT64_FORMAT " (file %" G_GUINT64_FORMAT "): %"
            G_GSIZE_FORMAT " points hold a finite value beyond the float32 "
            "range, which became infinite (%s)", self->offset - self->padding,
            self->files + 1, n_overflow, drop ? "they were dropped as "
            "non-finite points" : "they were kept: drop-nonfinite=false"),
        ("stats overflow-points counts them per file; said once a stream"));
    self->warned_overflow = TRUE;
  }
  GST_LOG_OBJECT (self, "file %" G_GUINT64_FORMAT " at byte %" G_GUINT64_FORMAT
      ": %s, %" G_GSIZE_FORMAT " bytes, %" G_GUINT64_FORMAT " points, %"
      G_GSIZE_FORMAT " output, %" G_GSIZE_FORMAT " non-finite dropped",
      self->files + 1, self->offset, data_name (header->data), size,
      header->points, n_points, n_dropped);
  *out = buffer;
  return GST_FLOW_OK;
}

/* On NEED_MORE without EOS: refuses now a file that can never be output or
 * is larger than max-file-size, and otherwise says what must arrive before
 * the frame is worth scanning again, so that every byte is scanned a
 * bounded number of times whatever the size of the input buffers:
 * - header incomplete: the next newline (a header line ends), or twice the
 *   bytes (padding-free headers are at most P3D_PCD_MAX_HEADER_SIZE);
 * - binary or binary_compressed: exactly the announced size;
 * - ASCII: the point lines still missing, counted on each new buffer once
 *   (p3d_pcd_line_counter_feed() in the chain function), or more bytes
 *   than max-file-size, to refuse the file. */
static GstFlowReturn
wait_for_more (P3dPcdParse * self, const guint8 * data, gsize size,
    const P3dPcdProgress * progress, gsize file_size)
{
  GstBaseParse *parse = GST_BASE_PARSE (self);
  guint64 limit = self->active_max_file_size;
  GstFlowReturn flow;
  gsize bytes;

  if (size >= limit)
    return post_too_large (self, size, "no complete file in %" G_GSIZE_FORMAT
        " bytes, max-file-size is %" G_GUINT64_FORMAT, size, limit);
  if (!progress->have_header) {
    self->wait = WAIT_NEWLINE;
    gst_base_parse_set_min_frame_size (parse,
        (guint) MIN (MAX (2 * (guint64) size, file_size), limit));
    return GST_FLOW_OK;
  }
  if (!ensure_caps (self)) {
    self->failed = TRUE;
    self->failed_flow = GST_FLOW_NOT_NEGOTIATED;
    return GST_FLOW_NOT_NEGOTIATED;
  }
  flow = check_output_size (self, progress->points, size, &bytes);
  if (flow != GST_FLOW_OK)
    return flow;
  if (file_size > limit)
    return post_too_large (self, size, "the header announces a file of %s%"
        G_GSIZE_FORMAT " bytes, more than max-file-size (%" G_GUINT64_FORMAT
        ")", progress->data == P3D_PCD_DATA_ASCII ? "at least " : "",
        file_size, limit);
  if (progress->data != P3D_PCD_DATA_ASCII) {
    self->wait = WAIT_NONE;
    gst_base_parse_set_min_frame_size (parse, (guint) file_size);
    return GST_FLOW_OK;
  }
  p3d_pcd_line_counter_init (&self->counter);
  p3d_pcd_line_counter_feed (&self->counter, data + progress->lines_end,
      size - progress->lines_end);
  self->lines_needed = progress->lines_missing;
  self->wait = WAIT_POINT_LINES;
  gst_base_parse_set_min_frame_size (parse, (guint) (limit + 1));
  return GST_FLOW_OK;
}

/* Padding before a file is skipped as it comes (and counted, to place
 * messages and offsets as if it were part of the file), so that it is
 * looked at once however it arrives. */
static GstFlowReturn
skip_padding (P3dPcdParse * self, const guint8 * data, gsize size,
    gsize padding, gint * skipsize)
{
  const guint8 *p, *end = data + padding;

  for (p = data; (p = memchr (p, '\n', end - p)) != NULL; p++)
    self->padding_lines++;
  self->padding += padding;
  self->offset += padding;
  *skipsize = (gint) padding;
  if (self->padding > P3D_PCD_MAX_PADDING) {
    GError *error = g_error_new (P3D_PCD_ERROR, P3D_PCD_ERROR_HEADER,
        "%" G_GSIZE_FORMAT " NUL or blank bytes and no header: this is not "
        "a PCD file", self->padding);

    /* the message places it at the start of the padding */
    post_file_error (self, error, size);
    g_error_free (error);
    *skipsize = 0;
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

static GstFlowReturn
p3d_pcd_parse_handle_frame (GstBaseParse * parse, GstBaseParseFrame * frame,
    gint * skipsize)
{
  P3dPcdParse *self = P3D_PCD_PARSE (parse);
  /* with buffer-is-file, the bytes given end where an input buffer ends
   * (p3dparse.h), which ends a file */
  gboolean at_eos = GST_BASE_PARSE_DRAINING (parse)
      || self->active_buffer_is_file;
  P3dPcdProgress progress;
  P3dPcdHeader header;
  GstBuffer *out = NULL;
  GError *error = NULL;
  gsize file_size = 0, padding;
  GstFlowReturn flow;
  GstMapInfo map;
  P3dPcdScan scan;

  if (self->failed)
    return self->failed_flow;
  /* GstBaseParse marks the first frame it hands over after a
   * discontinuity, which may be one that is not a whole file yet */
  if (GST_BUFFER_FLAG_IS_SET (frame->buffer, GST_BUFFER_FLAG_DISCONT))
    self->discont = TRUE;
  if (!gst_buffer_map (frame->buffer, &map, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("Cannot read the input"),
        ("mapping %" G_GSIZE_FORMAT " bytes failed",
            gst_buffer_get_size (frame->buffer)));
    self->failed = TRUE;
    return GST_FLOW_ERROR;
  }
  wait_for_nothing (self);

  padding = p3d_pcd_padding_size (map.data, map.size);
  if (padding > 0) {
    flow = skip_padding (self, map.data, map.size, padding, skipsize);
    gst_buffer_unmap (frame->buffer, &map);
    return flow;
  }

  GST_OBJECT_LOCK (self);
  self->stats_scanned += map.size;
  GST_OBJECT_UNLOCK (self);
  scan = p3d_pcd_scan_progress (map.data, map.size, at_eos, &header,
      &file_size, &progress, &error);
  if (scan == P3D_PCD_INVALID) {
    flow = post_file_error (self, error, map.size);
    g_error_free (error);
  } else if (scan == P3D_PCD_NEED_MORE && at_eos) {
    /* comment lines after the last file: nothing */
    GST_DEBUG_OBJECT (self, "%" G_GSIZE_FORMAT " bytes of comments at the "
        "end", map.size);
    *skipsize = (gint) map.size;
    flow = GST_FLOW_OK;
  } else if (scan == P3D_PCD_NEED_MORE) {
    GST_LOG_OBJECT (self, "%" G_GSIZE_FORMAT " bytes from byte %"
        G_GUINT64_FORMAT ": not a whole file, at least %" G_GSIZE_FORMAT,
        map.size, self->offset, file_size);
    flow = wait_for_more (self, map.data, map.size, &progress, file_size);
  } else if (file_size > self->active_max_file_size) {
    /* whole already, but max-file-size counts the file's bytes, whatever
     * blocks they came in (it was refused only when it arrived in pieces) */
    p3d_pcd_header_clear (&header);
    flow = post_too_large (self, map.size, "a file of %" G_GSIZE_FORMAT
        " bytes, more than max-file-size (%" G_GUINT64_FORMAT ")", file_size,
        self->active_max_file_size);
  } else if (!ensure_caps (self)) {
    p3d_pcd_header_clear (&header);
    self->failed = TRUE;
    self->failed_flow = GST_FLOW_NOT_NEGOTIATED;
    flow = GST_FLOW_NOT_NEGOTIATED;
  } else {
    flow = decode_file (self, &header, map.data, file_size, &out);
    p3d_pcd_header_clear (&header);
  }
  gst_buffer_unmap (frame->buffer, &map);
  if (out == NULL)
    return flow;

  if (self->discont) {
    GST_BUFFER_FLAG_SET (out, GST_BUFFER_FLAG_DISCONT);
    self->discont = FALSE;
  }
  frame->out_buffer = out;
  self->offset += file_size;
  self->padding = 0;
  self->padding_lines = 0;
  return gst_base_parse_finish_frame (parse, frame, (gint) file_size);
}

/* GstBaseParse's timestamps stay (upstream's, or interpolated with the
 * framerate's duration); where it has none, the framerate numbers the
 * files. Bytes do not map to time, so without a framerate a stream that is
 * not in time gets none. */
static GstFlowReturn
p3d_pcd_parse_pre_push_frame (GstBaseParse * parse, GstBaseParseFrame * frame)
{
  P3dPcdParse *self = P3D_PCD_PARSE (parse);
  GstBuffer *buffer = frame->buffer;

  if (self->active_fps_n == 0 && !self->upstream_time) {
    GST_BUFFER_PTS (buffer) = GST_CLOCK_TIME_NONE;
    GST_BUFFER_DTS (buffer) = GST_CLOCK_TIME_NONE;
    GST_BUFFER_DURATION (buffer) = GST_CLOCK_TIME_NONE;
  } else if (!GST_BUFFER_PTS_IS_VALID (buffer) && self->active_fps_n > 0) {
    guint64 period = (guint64) self->active_fps_d * GST_SECOND;
    GstClockTime pts = gst_util_uint64_scale (self->frame, period,
        self->active_fps_n);

    GST_BUFFER_PTS (buffer) = pts;
    GST_BUFFER_DTS (buffer) = pts;
    GST_BUFFER_DURATION (buffer) = gst_util_uint64_scale (self->frame + 1,
        period, self->active_fps_n) - pts;
  }
  GST_BUFFER_OFFSET (buffer) = self->files;
  GST_BUFFER_OFFSET_END (buffer) = self->files + 1;
  self->files++;
  self->frame++;
  return GST_FLOW_OK;
}

static gboolean
p3d_pcd_parse_sink_event (GstBaseParse * parse, GstEvent * event)
{
  P3dPcdParse *self = P3D_PCD_PARSE (parse);
  gboolean ret;

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_EOS:
      if (self->files > 0)
        break;
      /* GstBaseParse calls a stream without frames an error without
       * saying why; an empty stream (or one of padding) gets a warning
       * that says it, and a stream whose first file is bad has its own
       * error already */
      gst_base_parse_drain (parse);
      if (self->files > 0)
        break;
      if (!self->failed)
        GST_ELEMENT_WARNING (self, STREAM, DECODE,
            ("The input held no PCD data: no file before the end of the "
                "stream"), ("an empty input, or only blank or comment "
                "lines"));
      return gst_pad_push_event (GST_BASE_PARSE_SRC_PAD (parse), event);
    case GST_EVENT_SEGMENT:{
      const GstSegment *segment;
      GstFormat format;
      guint64 start;

      gst_event_parse_segment (event, &segment);
      format = segment->format;
      start = segment->start;
      /* the base class drains what is held first, at the old offsets */
      ret = GST_BASE_PARSE_CLASS (parent_class)->sink_event (parse, event);
      self->upstream_time = format == GST_FORMAT_TIME;
      if (format == GST_FORMAT_BYTES)
        self->offset = start;
      self->padding = 0;
      self->padding_lines = 0;
      self->discont = TRUE;
      wait_for_nothing (self);
      return ret;
    }
    case GST_EVENT_FLUSH_STOP:
      stream_reset (self);
      break;
    default:
      break;
  }
  return GST_BASE_PARSE_CLASS (parent_class)->sink_event (parse, event);
}

/* Sees each input buffer before GstBaseParse does: wakes a waiting file
 * once the lines it needs may be in (see wait_for_more()). */
static gboolean
p3d_pcd_parse_input (GstBaseParse * parse, GstBuffer * buffer,
    GstFlowReturn * flow)
{
  P3dPcdParse *self = P3D_PCD_PARSE (parse);
  GstMapInfo map;

  if (self->failed) {
    gst_buffer_unref (buffer);
    *flow = self->failed_flow;
    return FALSE;
  }
  if (self->wait != WAIT_NONE && gst_buffer_map (buffer, &map, GST_MAP_READ)) {
    gboolean wake;

    if (self->wait == WAIT_NEWLINE) {
      wake = memchr (map.data, '\n', map.size) != NULL;
    } else {
      p3d_pcd_line_counter_feed (&self->counter, map.data, map.size);
      wake = self->counter.lines >= self->lines_needed;
    }
    gst_buffer_unmap (buffer, &map);
    if (wake)
      wait_for_nothing (self);
  }
  return TRUE;
}
