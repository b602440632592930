/**
 * SECTION:element-pointcloudparse
 * @title: pointcloudparse
 *
 * Turns a byte stream of raw point records, with no header, into
 * application/x-point-cloud sweeps, as rawvideoparse does for raw video.
 * This is how KITTI velodyne .bin files (float32 x, y, z, intensity),
 * nuScenes LIDAR_TOP .pcd.bin files (float32 x, y, z, intensity, ring) and
 * the float16 dumps of NVIDIA's Lidar_AI_Solution are read.
 *
 * The input record is described by format (what its first channels mean),
 * channels (how many values a record holds; more than format's are
 * skipped) and data-format (float32 or float16), or by a preset for the
 * datasets above. With points-per-frame=0 (the default) everything up to
 * end-of-stream is one sweep: one file, one sweep, however the source
 * splits it into buffers. points-per-frame=N cuts a stream into sweeps of
 * N points instead (the last one may be shorter).
 *
 * The output point format is negotiated: the input's own when downstream
 * takes it, otherwise the one downstream asks for, each output channel
 * taken from the input channel of the same meaning and 0 where the input
 * has none. float16 values become float32 exactly.
 *
 * An input that is not a whole number of records is an error that names
 * its size, the record size and the properties to check; so is an empty
 * input.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 filesrc location=000000.bin ! pointcloudparse preset=kitti \
 *     ! voxelize ! fakesink
 * gst-launch-1.0 filesrc location=sweep.pcd.bin ! pointcloudparse \
 *     preset=nuscenes ! voxelize ! fakesink
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstpointcloudparse.h"
#include "half.h"
#include "p3dparamspec.h"

GST_DEBUG_CATEGORY_STATIC (p3d_point_cloud_parse_debug);
#define GST_CAT_DEFAULT p3d_point_cloud_parse_debug

enum
{
  PROP_0,
  PROP_PRESET,
  PROP_FORMAT,
  PROP_CHANNELS,
  PROP_DATA_FORMAT,
  PROP_POINTS_PER_FRAME,
  PROP_FRAMERATE,
};

#define DEFAULT_FORMAT P3D_POINT_FORMAT_XYZI
#define DEFAULT_CHANNELS 0
#define DEFAULT_DATA_FORMAT P3D_POINT_CLOUD_PARSE_DATA_F32
#define DEFAULT_POINTS_PER_FRAME 0
#define DEFAULT_FPS_N 0
#define DEFAULT_FPS_D 1
/* Values per record at most: far more than any lidar writes, small enough
 * that a record size never overflows. */
#define MAX_CHANNELS 64

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (P3D_POINT_CLOUD_CAPS_ALL));

static const struct
{
  P3dPointCloudParsePreset preset;
  P3dPointFormat format;
  guint channels;
  P3dPointCloudParseData data_format;
} presets[] = {
  {P3D_POINT_CLOUD_PARSE_PRESET_KITTI, P3D_POINT_FORMAT_XYZI, 4,
      P3D_POINT_CLOUD_PARSE_DATA_F32},
  {P3D_POINT_CLOUD_PARSE_PRESET_NUSCENES, P3D_POINT_FORMAT_XYZIR,
      5, P3D_POINT_CLOUD_PARSE_DATA_F32},
  {P3D_POINT_CLOUD_PARSE_PRESET_NUSCENES_F16,
      P3D_POINT_FORMAT_XYZIT, 5, P3D_POINT_CLOUD_PARSE_DATA_F16},
};

#define P3D_TYPE_POINT_CLOUD_PARSE_DATA (p3d_point_cloud_parse_data_get_type ())
static GType
p3d_point_cloud_parse_data_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {P3D_POINT_CLOUD_PARSE_DATA_F32, "32-bit float, little-endian", "F32"},
    {P3D_POINT_CLOUD_PARSE_DATA_F16, "16-bit IEEE half float, little-endian "
          "(converted to float32 exactly)", "F16"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dPointCloudParseData", values);

    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

#define P3D_TYPE_POINT_CLOUD_PARSE_PRESET \
    (p3d_point_cloud_parse_preset_get_type ())
static GType
p3d_point_cloud_parse_preset_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {P3D_POINT_CLOUD_PARSE_PRESET_CUSTOM, "As format, channels and "
          "data-format say", "custom"},
    {P3D_POINT_CLOUD_PARSE_PRESET_KITTI, "KITTI velodyne .bin: 4 x F32 "
          "(x, y, z, intensity)", "kitti"},
    {P3D_POINT_CLOUD_PARSE_PRESET_NUSCENES, "nuScenes LIDAR_TOP .pcd.bin: "
          "5 x F32 (x, y, z, intensity, ring)", "nuscenes"},
    {P3D_POINT_CLOUD_PARSE_PRESET_NUSCENES_F16, "nuScenes sweeps as NVIDIA's "
          "Lidar_AI_Solution stores them: 5 x F16 (x, y, z, intensity, "
          "time lag)", "nuscenes-f16"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dPointCloudParsePreset", values);

    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

#define p3d_point_cloud_parse_parent_class parent_class
G_DEFINE_TYPE (P3dPointCloudParse, p3d_point_cloud_parse, GST_TYPE_BASE_PARSE);
GST_ELEMENT_REGISTER_DEFINE (pointcloudparse, "pointcloudparse", GST_RANK_NONE,
    P3D_TYPE_POINT_CLOUD_PARSE);

static void p3d_point_cloud_parse_set_property (GObject * object,
    guint prop_id, const GValue * value, GParamSpec * pspec);
static void p3d_point_cloud_parse_get_property (GObject * object,
    guint prop_id, GValue * value, GParamSpec * pspec);
static gboolean p3d_point_cloud_parse_start (GstBaseParse * parse);
static GstFlowReturn p3d_point_cloud_parse_handle_frame (GstBaseParse * parse,
    GstBaseParseFrame * frame, gint * skipsize);
static GstFlowReturn p3d_point_cloud_parse_pre_push_frame (GstBaseParse *
    parse, GstBaseParseFrame * frame);
static gboolean p3d_point_cloud_parse_sink_event (GstBaseParse * parse,
    GstEvent * event);

#define READY_FLAGS (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | \
    GST_PARAM_MUTABLE_READY)

static void
p3d_point_cloud_parse_class_init (P3dPointCloudParseClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseParseClass *parse_class = GST_BASE_PARSE_CLASS (klass);

  gobject_class->set_property = p3d_point_cloud_parse_set_property;
  gobject_class->get_property = p3d_point_cloud_parse_get_property;

  /* gst-launch sets properties in the order written: "preset=nuscenes
   * channels=6" is the preset with one thing changed */
  g_object_class_install_property (gobject_class, PROP_PRESET,
      g_param_spec_enum ("preset", "Preset",
          "The record layout of a known dataset: sets format, channels and "
          "data-format; reads custom when they match no preset",
          P3D_TYPE_POINT_CLOUD_PARSE_PRESET,
          P3D_POINT_CLOUD_PARSE_PRESET_KITTI, READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_FORMAT,
      g_param_spec_enum ("format", "Format",
          "What the first channels of an input record mean, in order; auto "
          "is refused at start (a raw record does not say what it holds)",
          P3D_TYPE_POINT_FORMAT, DEFAULT_FORMAT, READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_CHANNELS,
      p3d_param_spec_uint ("channels", "Channels",
          "Values per input record; those after format's channels are "
          "skipped (Waymo's 6 columns with format=xyzi: 6); 0: as many as "
          "format has", 0, MAX_CHANNELS, DEFAULT_CHANNELS, READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_DATA_FORMAT,
      g_param_spec_enum ("data-format", "Data format",
          "The type of every input value", P3D_TYPE_POINT_CLOUD_PARSE_DATA,
          DEFAULT_DATA_FORMAT, READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_POINTS_PER_FRAME,
      p3d_param_spec_uint ("points-per-frame", "Points per frame",
          "Points per output sweep, for a stream of sweeps of one size; the "
          "last may be shorter. 0: everything up to end-of-stream is one "
          "sweep (one file, one sweep)", 0, G_MAXUINT,
          DEFAULT_POINTS_PER_FRAME, READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_FRAMERATE,
      p3d_param_spec_fraction ("framerate", "Frame rate",
          "Sweeps per second: the caps' framerate and, when the input has "
          "no timestamps, sweep n's timestamp n / framerate; 0/1: none",
          0, 1, G_MAXINT, 1, DEFAULT_FPS_N, DEFAULT_FPS_D, READY_FLAGS));

  gst_element_class_set_static_metadata (element_class,
      "Raw point cloud parser", "Codec/Parser/PointCloud",
      "Raw point records (KITTI, nuScenes .bin sweeps) to point clouds",
      "gst-perception developers");
  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);

  parse_class->start = GST_DEBUG_FUNCPTR (p3d_point_cloud_parse_start);
  parse_class->handle_frame =
      GST_DEBUG_FUNCPTR (p3d_point_cloud_parse_handle_frame);
  parse_class->pre_push_frame =
      GST_DEBUG_FUNCPTR (p3d_point_cloud_parse_pre_push_frame);
  parse_class->sink_event =
      GST_DEBUG_FUNCPTR (p3d_point_cloud_parse_sink_event);

  gst_type_mark_as_plugin_api (P3D_TYPE_POINT_FORMAT, 0);
  gst_type_mark_as_plugin_api (P3D_TYPE_POINT_CLOUD_PARSE_DATA, 0);
  gst_type_mark_as_plugin_api (P3D_TYPE_POINT_CLOUD_PARSE_PRESET, 0);
  GST_DEBUG_CATEGORY_INIT (p3d_point_cloud_parse_debug, "pointcloudparse", 0,
      "Raw point records to point clouds");
}

static void
p3d_point_cloud_parse_init (P3dPointCloudParse * self)
{
  self->format = DEFAULT_FORMAT;
  self->channels = DEFAULT_CHANNELS;
  self->data_format = DEFAULT_DATA_FORMAT;
  self->points_per_frame = DEFAULT_POINTS_PER_FRAME;
  self->fps_n = DEFAULT_FPS_N;
  self->fps_d = DEFAULT_FPS_D;
  p3d_point_cloud_info_init (&self->out_info);
  p3d_object_watch_properties (G_OBJECT (self), GST_ELEMENT (self));
}

static P3dPointCloudParsePreset
preset_of (const P3dPointCloudParse * self)
{
  guint i;

  for (i = 0; i < G_N_ELEMENTS (presets); i++)
    if (presets[i].format == self->format
        && presets[i].data_format == self->data_format
        && (presets[i].channels == self->channels
            || (self->channels == 0 && presets[i].channels ==
                p3d_point_format_get_info (self->format)->channels)))
      return presets[i].preset;
  return P3D_POINT_CLOUD_PARSE_PRESET_CUSTOM;
}

static void
p3d_point_cloud_parse_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dPointCloudParse *self = P3D_POINT_CLOUD_PARSE (object);
  guint i;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_PRESET:
      for (i = 0; i < G_N_ELEMENTS (presets); i++)
        if ((gint) presets[i].preset == g_value_get_enum (value)) {
          self->format = presets[i].format;
          self->channels = presets[i].channels;
          self->data_format = presets[i].data_format;
        }
      break;
    case PROP_FORMAT:
      self->format = g_value_get_enum (value);
      break;
    case PROP_CHANNELS:
      self->channels = g_value_get_uint (value);
      break;
    case PROP_DATA_FORMAT:
      self->data_format = g_value_get_enum (value);
      break;
    case PROP_POINTS_PER_FRAME:
      self->points_per_frame = g_value_get_uint (value);
      break;
    case PROP_FRAMERATE:
      self->fps_n = gst_value_get_fraction_numerator (value);
      self->fps_d = gst_value_get_fraction_denominator (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
p3d_point_cloud_parse_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  P3dPointCloudParse *self = P3D_POINT_CLOUD_PARSE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_PRESET:
      g_value_set_enum (value, preset_of (self));
      break;
    case PROP_FORMAT:
      g_value_set_enum (value, self->format);
      break;
    case PROP_CHANNELS:
      g_value_set_uint (value, self->channels);
      break;
    case PROP_DATA_FORMAT:
      g_value_set_enum (value, self->data_format);
      break;
    case PROP_POINTS_PER_FRAME:
      g_value_set_uint (value, self->points_per_frame);
      break;
    case PROP_FRAMERATE:
      gst_value_set_fraction (value, self->fps_n, self->fps_d);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* Takes the properties for this stream and tells the base class how many
 * bytes a frame needs. */
static gboolean
p3d_point_cloud_parse_start (GstBaseParse * parse)
{
  P3dPointCloudParse *self = P3D_POINT_CLOUD_PARSE (parse);
  gsize frame_bytes;

  if (!p3d_element_check_properties (GST_ELEMENT (self)))
    return FALSE;

  GST_OBJECT_LOCK (self);
  self->in_finfo = p3d_point_format_get_info (self->format);
  self->in_channels = self->channels ? self->channels :
      self->in_finfo->channels;
  self->in_value_size = p3d_data_format_get_size ((P3dDataFormat)
      self->data_format);
  self->active_points_per_frame = self->points_per_frame;
  self->active_fps_n = self->fps_n;
  self->active_fps_d = self->fps_d;
  GST_OBJECT_UNLOCK (self);

  /* the enum is the one every element's format property shares, whose
   * "auto" means "negotiated": nothing can negotiate what bytes on disk
   * hold, so the user has to say it */
  if (self->in_finfo->format == P3D_POINT_FORMAT_AUTO) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("format=auto: pointcloudparse cannot tell what a raw point record "
            "holds; set format (xyz, xyzi, xyzit, xyzir) or preset"),
        ("auto only has a meaning for elements that negotiate their "
            "output format"));
    return FALSE;
  }
  if (self->in_channels < self->in_finfo->channels) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("channels=%u is fewer than format=%s has (%u)", self->in_channels,
            self->in_finfo->name, self->in_finfo->channels),
        ("set channels to 0 or to at least %u", self->in_finfo->channels));
    return FALSE;
  }
  self->in_record = (gsize) self->in_channels * self->in_value_size;
  frame_bytes = self->in_record;
  if (self->active_points_per_frame > 0) {
    if ((guint64) self->active_points_per_frame * self->in_record >
        P3D_TENSOR_MAX_BYTES) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("points-per-frame=%u makes input frames of 2 GiB or more",
              self->active_points_per_frame), (NULL));
      return FALSE;
    }
    frame_bytes *= self->active_points_per_frame;
  }
  gst_base_parse_set_min_frame_size (parse, frame_bytes);
  if (self->active_fps_n > 0)
    gst_base_parse_set_frame_rate (parse, self->active_fps_n,
        self->active_fps_d, 0, 0);
  /* a sweep is not a keyframe-in-a-stream sync point anyone can find */
  gst_base_parse_set_syncable (parse, self->active_points_per_frame > 0);
  self->saw_data = FALSE;
  self->frames = 0;
  self->negotiated = FALSE;
  p3d_point_cloud_info_init (&self->out_info);
  return TRUE;
}

/* Sets the src caps: the input's point format when downstream takes it,
 * otherwise the first one downstream takes. */
static gboolean
negotiate (P3dPointCloudParse * self)
{
  GstPad *srcpad = GST_BASE_PARSE_SRC_PAD (self);
  GstCaps *templ, *peer, *caps;
  P3dPointCloudInfo info;
  gboolean ok;

  p3d_point_cloud_info_init (&info);
  p3d_point_cloud_info_set_format (&info, self->in_finfo->format);
  info.fps_n = self->active_fps_n;
  info.fps_d = self->active_fps_d;
  caps = p3d_point_cloud_info_to_caps (&info);

  templ = gst_pad_get_pad_template_caps (srcpad);
  peer = gst_pad_peer_query_caps (srcpad, templ);
  gst_caps_unref (templ);
  if (!gst_caps_can_intersect (peer, caps)) {
    GstCaps *fixed = gst_caps_fixate (gst_caps_copy (peer));
    const gchar *name = gst_caps_is_empty (fixed) ? NULL :
        gst_structure_get_string (gst_caps_get_structure (fixed, 0),
        "format");
    P3dPointFormat format = p3d_point_format_from_string (name);

    gst_caps_unref (fixed);
    gst_caps_unref (caps);
    caps = NULL;
    if (format != P3D_POINT_FORMAT_UNKNOWN) {
      p3d_point_cloud_info_set_format (&info, format);
      caps = p3d_point_cloud_info_to_caps (&info);
      if (!gst_caps_can_intersect (peer, caps))
        gst_clear_caps (&caps);
    }
  }
  if (caps == NULL) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("downstream takes no application/x-point-cloud format with "
            "framerate %d/%d", info.fps_n, info.fps_d),
        ("downstream caps: %" GST_PTR_FORMAT, peer));
    gst_caps_unref (peer);
    return FALSE;
  }
  gst_caps_unref (peer);
  GST_DEBUG_OBJECT (self, "input %s, output %" GST_PTR_FORMAT,
      self->in_finfo->name, caps);
  ok = gst_pad_set_caps (srcpad, caps);
  gst_caps_unref (caps);
  if (!ok) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("downstream refused the caps application/x-point-cloud,format=%s",
            info.finfo->name), (NULL));
    return FALSE;
  }
  self->out_info = info;
  self->negotiated = TRUE;
  return TRUE;
}

/* The input channel that holds the output's channel @c, or -1 (then 0). */
static gint
source_channel (const P3dPointFormatInfo * in, const P3dPointFormatInfo * out,
    guint c)
{
  if (c < 3)
    return c;
  if ((gint) c == out->intensity)
    return in->intensity;
  if ((gint) c == out->time)
    return in->time;
  if ((gint) c == out->ring)
    return in->ring;
  return -1;
}

/* @points records of @in into a new buffer of the output format. */
static GstBuffer *
convert (P3dPointCloudParse * self, const guint8 * in, gsize points)
{
  const P3dPointFormatInfo *out_finfo = self->out_info.finfo;
  guint out_channels = out_finfo->channels;
  gint from[8];
  GstBuffer *buffer;
  GstMapInfo map;
  gfloat *out;
  gsize p;
  guint c;

  for (c = 0; c < out_channels; c++)
    from[c] = source_channel (self->in_finfo, out_finfo, c);
  buffer = gst_buffer_new_allocate (NULL, points * out_channels *
      sizeof (gfloat), NULL);
  gst_buffer_map (buffer, &map, GST_MAP_WRITE);
  out = (gfloat *) map.data;
  for (p = 0; p < points; p++) {
    const guint8 *record = in + p * self->in_record;

    for (c = 0; c < out_channels; c++) {
      gfloat value = 0.0f;

      if (from[c] >= 0 && self->in_value_size == 4) {
        guint32 bits;

        memcpy (&bits, record + from[c] * 4, 4);
        bits = GUINT32_FROM_LE (bits);
        memcpy (&value, &bits, 4);
      } else if (from[c] >= 0) {
        guint16 bits;

        memcpy (&bits, record + from[c] * 2, 2);
        value = p3dc_half_to_float (GUINT16_FROM_LE (bits));
      }
      out[p * out_channels + c] = value;
    }
  }
  gst_buffer_unmap (buffer, &map);
  return buffer;
}

/* Names the input's size, the record size and what to set, for every size
 * that is not a whole number of records. */
static void
post_size_error (P3dPointCloudParse * self, gsize size)
{
  GST_ELEMENT_ERROR (self, STREAM, FORMAT,
      ("%" G_GSIZE_FORMAT " bytes are not a whole number of %" G_GSIZE_FORMAT
          "-byte point records (%u x %s, format=%s): %" G_GSIZE_FORMAT
          " bytes left over after %" G_GSIZE_FORMAT " points. Set "
          "pointcloudparse's preset (kitti: 4 x F32, nuscenes: 5 x F32, "
          "nuscenes-f16: 5 x F16) or format, channels and data-format to "
          "the file's record layout", size, self->in_record, self->in_channels,
          self->in_value_size == 2 ? "F16" : "F32", self->in_finfo->name,
          size % self->in_record, size / self->in_record),
      ("input cut short, or a record layout that is not the file's"));
}

/* What the file that starts with @data (@size bytes) is when it is one of
 * the formats the plugin reads elsewhere, and where it goes; NULL when it
 * may be raw point records. A raw float file that starts with these bytes
 * is not met in practice: their first bytes would be text. */
static const gchar *
other_format (const guint8 * data, gsize size)
{
  static const guint32 pcap_magics[] = { 0xa1b2c3d4, 0xd4c3b2a1, 0xa1b23c4d,
    0x4d3cb2a1, 0x0a0d0d0a
  };
  gsize text = MIN (size, 64), i;
  guint64 header_size;
  guint32 magic;

  if (size >= 4) {
    memcpy (&magic, data, 4);
    for (i = 0; i < G_N_ELEMENTS (pcap_magics); i++)
      if (magic == pcap_magics[i] || GUINT32_SWAP_LE_BE (magic) ==
          pcap_magics[i])
        return "this is a packet capture (pcap): sensor packets, not point "
            "records; a lidar's packets are decoded by its packet parser";
  }
  if (size >= 9) {
    memcpy (&header_size, data, 8);
    header_size = GUINT64_FROM_LE (header_size);
    if (data[8] == '{' && header_size >= 2 && header_size < (1u << 30))
      return "this is a safetensors file (a model's weights): give it to "
          "pillarencode and bevdetect as weights=";
  }
  for (i = 0; i < text; i++)
    if (!g_ascii_isprint (data[i]) && !g_ascii_isspace (data[i]))
      return NULL;
  if (g_str_has_prefix ((const gchar *) data, "# .PCD")
      || g_str_has_prefix ((const gchar *) data, "VERSION")
      || g_str_has_prefix ((const gchar *) data, "FIELDS"))
    return "this is a PCD file: use pcdparse (filesrc location=cloud.pcd ! "
        "pcdparse)";
  if (text >= 16)
    return "this is text: boxes as JSON lines or KITTI labels are read by "
        "boxparse, a calibration by the calibration property of bevpool, "
        "cameratestsrc and boxoverlay";
  return NULL;
}

/* Refuses a stream that starts as a file of another format, saying which
 * element reads it: a PCD file whose size was a multiple of 16 bytes gave
 * 107 885 garbage points (issue 25.2). */
static gboolean
check_not_another_format (P3dPointCloudParse * self, GstBuffer * buffer)
{
  GstMapInfo map;
  const gchar *what;

  if (!gst_buffer_map (buffer, &map, GST_MAP_READ))
    return TRUE;
  what = other_format (map.data, map.size);
  gst_buffer_unmap (buffer, &map);
  if (what == NULL)
    return TRUE;
  GST_ELEMENT_ERROR (self, STREAM, WRONG_TYPE,
      ("The input is not raw point records: %s", what),
      ("pointcloudparse reads headerless records (KITTI .bin, nuScenes "
          ".pcd.bin); its first bytes say otherwise"));
  return FALSE;
}

static GstFlowReturn
p3d_point_cloud_parse_handle_frame (GstBaseParse * parse,
    GstBaseParseFrame * frame, gint * skipsize)
{
  P3dPointCloudParse *self = P3D_POINT_CLOUD_PARSE (parse);
  gsize size = gst_buffer_get_size (frame->buffer);
  gsize points;
  GstFlowReturn ret;

  *skipsize = 0;
  /* the first bytes of the stream: a file of another kind? */
  if (!self->saw_data && !check_not_another_format (self, frame->buffer))
    return GST_FLOW_ERROR;
  self->saw_data = TRUE;
  if (self->active_points_per_frame > 0
      && size >= self->active_points_per_frame * self->in_record) {
    points = self->active_points_per_frame;
  } else if (!GST_BASE_PARSE_DRAINING (parse)) {
    /* a whole file is wanted: ask for twice as much before the next look,
     * so that a file in many small buffers costs linear time */
    if (self->active_points_per_frame == 0) {
      if (size > P3D_TENSOR_MAX_BYTES) {
        GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
            ("the input is over 2 GiB, more than one sweep may hold"),
            ("set points-per-frame to cut it into sweeps"));
        return GST_FLOW_ERROR;
      }
      gst_base_parse_set_min_frame_size (parse, MIN (size * 2,
              P3D_TENSOR_MAX_BYTES + 1));
    }
    return GST_FLOW_OK;
  } else if (size % self->in_record == 0) {
    /* the end of the stream: the rest is one (last, maybe short) sweep */
    points = size / self->in_record;
  } else {
    post_size_error (self, size);
    return GST_FLOW_ERROR;
  }

  if ((!self->negotiated || gst_pad_check_reconfigure
          (GST_BASE_PARSE_SRC_PAD (parse))) && !negotiate (self))
    return GST_FLOW_NOT_NEGOTIATED;
  if (points > p3d_point_cloud_info_get_max_points (&self->out_info)) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("a sweep of %" G_GSIZE_FORMAT " points of format %s takes %"
            G_GUINT64_FORMAT " bytes, more than the %" G_GSIZE_FORMAT
            " a buffer can hold", points, self->out_info.finfo->name,
            (guint64) points * P3D_POINT_CLOUD_INFO_STRIDE (&self->out_info),
            P3D_RECORD_MAX_BYTES),
        ("set points-per-frame to cut the input into sweeps"));
    return GST_FLOW_ERROR;
  }
  GST_LOG_OBJECT (self, "sweep of %" G_GSIZE_FORMAT " points", points);
  ret = gst_base_parse_finish_frame (parse, frame, points * self->in_record);
  if (self->active_points_per_frame == 0)
    gst_base_parse_set_min_frame_size (parse, self->in_record);
  return ret;
}

/* The records become the output format here, once the base class has
 * given the frame its timestamps. */
static GstFlowReturn
p3d_point_cloud_parse_pre_push_frame (GstBaseParse * parse,
    GstBaseParseFrame * frame)
{
  P3dPointCloudParse *self = P3D_POINT_CLOUD_PARSE (parse);
  GstMapInfo map;

  if (!gst_buffer_map (frame->buffer, &map, GST_MAP_READ))
    return GST_FLOW_ERROR;
  frame->out_buffer = convert (self, map.data, map.size / self->in_record);
  gst_buffer_unmap (frame->buffer, &map);
  gst_buffer_copy_into (frame->out_buffer, frame->buffer,
      GST_BUFFER_COPY_METADATA, 0, -1);
  /* the base class times frames in pull mode only; in push mode from a
   * source without timestamps (filesrc), sweep n is at n / framerate */
  if (!GST_BUFFER_PTS_IS_VALID (frame->out_buffer) && self->active_fps_n > 0)
    GST_BUFFER_PTS (frame->out_buffer) = gst_util_uint64_scale (self->frames,
        GST_SECOND * self->active_fps_d, self->active_fps_n);
  self->frames++;
  frame->flags |= GST_BASE_PARSE_FRAME_FLAG_CLIP;
  return GST_FLOW_OK;
}

static gboolean
p3d_point_cloud_parse_sink_event (GstBaseParse * parse, GstEvent * event)
{
  P3dPointCloudParse *self = P3D_POINT_CLOUD_PARSE (parse);

  /* the base class sees no data at all in an empty input; say so before
   * its generic "no valid frames" */
  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS && !self->saw_data)
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("the input is empty: no point records before end-of-stream"), (NULL));
  if (GST_EVENT_TYPE (event) == GST_EVENT_FLUSH_STOP) {
    self->saw_data = FALSE;
    self->frames = 0;
  }
  return GST_BASE_PARSE_CLASS (parent_class)->sink_event (parse, event);
}
