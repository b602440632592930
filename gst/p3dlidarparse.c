/* P3dLidarParse: what velodyneparse and ousterparse share (see
 * p3dlidarparse.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "p3dlidarparse.h"
#include "p3dparamspec.h"
#include "p3dcapsquery.h"
#include "p3dparse.h"

GST_DEBUG_CATEGORY_STATIC (p3d_lidar_parse_debug);
#define GST_CAT_DEFAULT p3d_lidar_parse_debug

enum
{
  PROP_0,
  PROP_FORMAT,
  PROP_RETURNS,
  PROP_CLOCK,
  PROP_PARTIAL_SWEEPS,
  PROP_CUDA_DEVICE_ID,
  PROP_STATS,
};

#define DEFAULT_FORMAT P3D_POINT_FORMAT_AUTO
#define DEFAULT_RETURNS P3D_LIDAR_RETURNS_BOTH
#define DEFAULT_CLOCK P3D_LIDAR_CLOCK_PACKET
#define DEFAULT_PARTIAL_SWEEPS FALSE
#define DEFAULT_CUDA_DEVICE_ID -1
/* The point format auto settles on when downstream accepts any: KITTI's. */
#define PREFERRED_FORMAT "xyzi"
/* Sweeps the pool allocates up front; it grows when more are in flight. */
/* At most this many sweeps end in one packet (a break and a cut). */
#define MAX_DONE 4
/* A sensor clock that moves on by more than this since the first packet
 * (a year) is placed on the running time again. */
#define MAX_CLOCK_JUMP (G_GUINT64_CONSTANT (365) * 24 * 3600 * GST_SECOND)

#define SRC_CAPS \
    P3D_MEDIA_TYPE_POINT_CLOUD ", format = (string) " P3D_POINT_FORMATS_ALL \
    "; " P3D_MEDIA_TYPE_POINT_CLOUD "(" P3D_CAPS_FEATURE_MEMORY_CUDA "), " \
    "format = (string) " P3D_POINT_FORMATS_ALL

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS (SRC_CAPS));

/* A sweep that ended, waiting to be pushed after the packet. */
typedef struct
{
  GstBuffer *buffer;
  GstClockTime pts;
  GstClockTime duration;
  guint64 offset;
  gboolean discont;
} DoneSweep;

typedef struct
{
  /* properties, under the object lock */
  P3dPointFormat format;
  P3dLidarReturns returns;
  P3dLidarClock clock;
  gboolean partial_sweeps;
  gint cuda_device_id;

  /* the stats property, under the object lock */
  guint64 counts[P3D_LIDAR_N_COUNTS];
  guint64 sweeps;
  guint64 partial_dropped;
  guint64 last_points;

  /* streaming: the properties as they were at start */
  P3dPointFormat active_format;
  P3dLidarReturns active_returns;
  P3dLidarClock active_clock;
  gboolean active_partial_sweeps;
  gint active_device_id;
  /* the device context we hold (p3dcudacontext.h), under the object lock */
  GstContext *context;

  /* an error was posted: read no more */
  gboolean failed;
  GstFlowReturn failed_flow;
  gboolean warned_loss;
  gboolean warned_invalid;
  /* the next sweep out follows a discontinuity */
  gboolean discont;
  /* sweeps pushed since the start */
  guint64 pushed;

  /* negotiated */
  GstCaps *caps;
  P3dPointCloudInfo info;
  P3dLidarPointLayout layout;
  gboolean cuda;
  GstBufferPool *pool;
  gsize pool_points;
  P3dTensorLayout tensor_layout;

  /* the open sweep: a pool buffer whose tensor is mapped for writing */
  gboolean open;
  GstBuffer *sweep;
  GstMemory *sweep_mem;
  GstMapInfo sweep_map;
  gsize sweep_points;
  gint64 sweep_t0;
  gint64 sweep_last;
  GstClockTime sweep_pts;

  /* the packet clock: sensor time @anchor_sensor is running time
   * @anchor_pts */
  gboolean anchored;
  gint64 anchor_sensor;
  GstClockTime anchor_pts;

  DoneSweep done[MAX_DONE];
  guint n_done;
  /* the sweep finish_frame() is pushing, for pre_push_frame() */
  DoneSweep *pushing;
} P3dLidarParsePrivate;

G_DEFINE_ABSTRACT_TYPE_WITH_PRIVATE (P3dLidarParse, p3d_lidar_parse,
    GST_TYPE_BASE_PARSE);

#define PRIV(self) \
    ((P3dLidarParsePrivate *) p3d_lidar_parse_get_instance_private (self))

GType
p3d_lidar_clock_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {P3D_LIDAR_CLOCK_PACKET, "The sensor's timestamps, placed on the running "
          "time at the first packet", "packet"},
    {P3D_LIDAR_CLOCK_ARRIVAL, "The arrival time of the packet that holds the "
          "sweep's first firing", "arrival"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dLidarClock", values);

    g_once_init_leave (&type, t);
  }
  return type;
}

GType
p3d_lidar_returns_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {P3D_LIDAR_RETURNS_BOTH, "Both returns (a second return equal to the "
          "first is dropped)", "both"},
    {P3D_LIDAR_RETURNS_STRONGEST, "The stronger return", "strongest"},
    {P3D_LIDAR_RETURNS_LAST, "The farther return", "last"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dLidarReturns", values);

    g_once_init_leave (&type, t);
  }
  return type;
}

static void p3d_lidar_parse_finalize (GObject * object);
static void p3d_lidar_parse_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void p3d_lidar_parse_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static void p3d_lidar_parse_set_context (GstElement * element,
    GstContext * context);
static gboolean p3d_lidar_parse_start (GstBaseParse * parse);
static gboolean p3d_lidar_parse_stop (GstBaseParse * parse);
static GstFlowReturn p3d_lidar_parse_handle_frame (GstBaseParse * parse,
    GstBaseParseFrame * frame, gint * skipsize);
static GstFlowReturn p3d_lidar_parse_pre_push_frame (GstBaseParse * parse,
    GstBaseParseFrame * frame);
static gboolean p3d_lidar_parse_sink_event (GstBaseParse * parse,
    GstEvent * event);
static gboolean p3d_lidar_parse_src_query (GstBaseParse * parse,
    GstQuery * query);
static gboolean p3d_lidar_parse_sink_activate (GstPad * pad,
    GstObject * parent);

#define READY_FLAGS (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | \
    GST_PARAM_MUTABLE_READY)

static void
p3d_lidar_parse_class_init (P3dLidarParseClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseParseClass *parse_class = GST_BASE_PARSE_CLASS (klass);

  gobject_class->finalize = p3d_lidar_parse_finalize;
  gobject_class->set_property = p3d_lidar_parse_set_property;
  gobject_class->get_property = p3d_lidar_parse_get_property;
  element_class->set_context = GST_DEBUG_FUNCPTR (p3d_lidar_parse_set_context);

  g_object_class_install_property (gobject_class, PROP_FORMAT,
      g_param_spec_enum ("format", "Format",
          "Point format out; auto takes what downstream asks for (xyzi when "
          "it takes any); t is seconds since the sweep's first firing, r "
          "the ring (0 the lowest laser)", P3D_TYPE_POINT_FORMAT,
          DEFAULT_FORMAT, READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_RETURNS,
      g_param_spec_enum ("returns", "Returns",
          "Of a dual-return stream, the points kept: both (a second return "
          "equal to the first, a single echo, is dropped), the strongest, or "
          "the last (farther); single-return streams have one either way",
          P3D_TYPE_LIDAR_RETURNS, DEFAULT_RETURNS, READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_CLOCK,
      g_param_spec_enum ("clock", "Clock",
          "Where a sweep's PTS (its first firing) comes from: packet, the "
          "sensor's timestamps placed on the running time at the first "
          "packet; arrival, the packets' arrival times (udpsrc's clock, or "
          "the capture's in pcap files)", P3D_TYPE_LIDAR_CLOCK, DEFAULT_CLOCK,
          READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_PARTIAL_SWEEPS,
      g_param_spec_boolean ("partial-sweeps", "Partial sweeps",
          "Also output partial sweeps, revolutions or frames whose start or "
          "end the stream lacks (at its start, after a gap, at its end); "
          "false drops them (stats counts them)", DEFAULT_PARTIAL_SWEEPS,
          READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_CUDA_DEVICE_ID,
      p3d_param_spec_int ("cuda-device-id", "CUDA device",
          "The device holding the sweeps when memory:CUDAMemory is "
          "negotiated; -1: the device the pipeline already uses (shared by "
          "the other elements), else device 0", -1, G_MAXINT,
          DEFAULT_CUDA_DEVICE_ID, READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Since the start: sweeps (output), partial-sweeps (dropped), "
          "packets (decoded), ignored-packets (position, IMU), "
          "invalid-packets, lost-packets, late-packets, repeated-packets, "
          "breaks (gaps that cut a sweep), no-return (firings), "
          "duplicate-returns, invalid-columns; and points (the last sweep)",
          GST_TYPE_STRUCTURE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);

  parse_class->start = GST_DEBUG_FUNCPTR (p3d_lidar_parse_start);
  parse_class->stop = GST_DEBUG_FUNCPTR (p3d_lidar_parse_stop);
  parse_class->handle_frame = GST_DEBUG_FUNCPTR (p3d_lidar_parse_handle_frame);
  parse_class->pre_push_frame =
      GST_DEBUG_FUNCPTR (p3d_lidar_parse_pre_push_frame);
  parse_class->sink_event = GST_DEBUG_FUNCPTR (p3d_lidar_parse_sink_event);
  parse_class->src_query = GST_DEBUG_FUNCPTR (p3d_lidar_parse_src_query);

  gst_type_mark_as_plugin_api (P3D_TYPE_POINT_FORMAT, 0);
  gst_type_mark_as_plugin_api (P3D_TYPE_LIDAR_RETURNS, 0);
  gst_type_mark_as_plugin_api (P3D_TYPE_LIDAR_CLOCK, 0);
  gst_type_mark_as_plugin_api (P3D_TYPE_LIDAR_PARSE, 0);
  GST_DEBUG_CATEGORY_INIT (p3d_lidar_parse_debug, "lidarparse", 0,
      "lidar packets to sweeps");
}

static void
p3d_lidar_parse_init (P3dLidarParse * self)
{
  P3dLidarParsePrivate *priv = PRIV (self);

  /* Push mode only: a packet stream has no byte offsets to seek. */
  gst_pad_set_activate_function (GST_BASE_PARSE_SINK_PAD (self),
      GST_DEBUG_FUNCPTR (p3d_lidar_parse_sink_activate));
  priv->format = DEFAULT_FORMAT;
  priv->returns = DEFAULT_RETURNS;
  priv->clock = DEFAULT_CLOCK;
  priv->partial_sweeps = DEFAULT_PARTIAL_SWEEPS;
  priv->cuda_device_id = DEFAULT_CUDA_DEVICE_ID;
  p3d_object_watch_properties (G_OBJECT (self), GST_ELEMENT (self));
}

static void
p3d_lidar_parse_finalize (GObject * object)
{
  P3dLidarParsePrivate *priv = PRIV (P3D_LIDAR_PARSE (object));

  gst_clear_caps (&priv->caps);
  if (priv->context)
    gst_context_unref (priv->context);
  priv->context = NULL;
  G_OBJECT_CLASS (p3d_lidar_parse_parent_class)->finalize (object);
}

static void
p3d_lidar_parse_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dLidarParsePrivate *priv = PRIV (P3D_LIDAR_PARSE (object));

  GST_OBJECT_LOCK (object);
  switch (prop_id) {
    case PROP_FORMAT:
      priv->format = g_value_get_enum (value);
      break;
    case PROP_RETURNS:
      priv->returns = g_value_get_enum (value);
      break;
    case PROP_CLOCK:
      priv->clock = g_value_get_enum (value);
      break;
    case PROP_PARTIAL_SWEEPS:
      priv->partial_sweeps = g_value_get_boolean (value);
      break;
    case PROP_CUDA_DEVICE_ID:
      priv->cuda_device_id = g_value_get_int (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (object);
}

static void
p3d_lidar_parse_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  P3dLidarParsePrivate *priv = PRIV (P3D_LIDAR_PARSE (object));
  const guint64 *c = priv->counts;

  GST_OBJECT_LOCK (object);
  switch (prop_id) {
    case PROP_FORMAT:
      g_value_set_enum (value, priv->format);
      break;
    case PROP_RETURNS:
      g_value_set_enum (value, priv->returns);
      break;
    case PROP_CLOCK:
      g_value_set_enum (value, priv->clock);
      break;
    case PROP_PARTIAL_SWEEPS:
      g_value_set_boolean (value, priv->partial_sweeps);
      break;
    case PROP_CUDA_DEVICE_ID:
      g_value_set_int (value, priv->cuda_device_id);
      break;
    case PROP_STATS:
      g_value_take_boxed (value, gst_structure_new ("lidarparse-stats",
              "sweeps", G_TYPE_UINT64, priv->sweeps,
              "partial-sweeps", G_TYPE_UINT64, priv->partial_dropped,
              "packets", G_TYPE_UINT64, c[P3D_LIDAR_COUNT_PACKETS],
              "ignored-packets", G_TYPE_UINT64, c[P3D_LIDAR_COUNT_IGNORED],
              "invalid-packets", G_TYPE_UINT64, c[P3D_LIDAR_COUNT_INVALID],
              "lost-packets", G_TYPE_UINT64, c[P3D_LIDAR_COUNT_LOST],
              "late-packets", G_TYPE_UINT64, c[P3D_LIDAR_COUNT_LATE],
              "repeated-packets", G_TYPE_UINT64, c[P3D_LIDAR_COUNT_REPEATED],
              "breaks", G_TYPE_UINT64, c[P3D_LIDAR_COUNT_BREAKS],
              "no-return", G_TYPE_UINT64, c[P3D_LIDAR_COUNT_NO_RETURN],
              "duplicate-returns", G_TYPE_UINT64,
              c[P3D_LIDAR_COUNT_DUPLICATE_RETURNS],
              "invalid-columns", G_TYPE_UINT64,
              c[P3D_LIDAR_COUNT_INVALID_COLUMNS],
              "points", G_TYPE_UINT64, priv->last_points, NULL));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (object);
}

/* ---------------------------------------------------------------------- */
/* The CUDA device, as every element picks it (p3dcudacontext.h). */

static GstAllocator *
device_allocator (P3dLidarParse * self)
{
  P3dLidarParsePrivate *priv = PRIV (self);

  return p3d_cuda_element_get_allocator (GST_ELEMENT (self),
      priv->active_device_id, &priv->context);
}

static gboolean
answer_device_query (P3dLidarParse * self, GstQuery * query)
{
  return p3d_cuda_handle_context_query (GST_ELEMENT (self), query,
      &PRIV (self)->context);
}

static void
p3d_lidar_parse_set_context (GstElement * element, GstContext * context)
{
  p3d_cuda_handle_set_context (element, context,
      &PRIV (P3D_LIDAR_PARSE (element))->context);
  GST_ELEMENT_CLASS (p3d_lidar_parse_parent_class)->set_context (element,
      context);
}

/* ---------------------------------------------------------------------- */

static void
clear_pool (P3dLidarParse * self)
{
  P3dLidarParsePrivate *priv = PRIV (self);

  /* Buffers still downstream keep the old pool alive until they return. */
  if (priv->pool)
    gst_buffer_pool_set_active (priv->pool, FALSE);
  gst_clear_object (&priv->pool);
  priv->pool_points = 0;
}

/* Drops the open sweep and the ended ones not pushed. */
static void
drop_sweeps (P3dLidarParse * self)
{
  P3dLidarParsePrivate *priv = PRIV (self);
  guint i;

  if (priv->open) {
    gst_memory_unmap (priv->sweep_mem, &priv->sweep_map);
    gst_clear_buffer (&priv->sweep);
    priv->open = FALSE;
  }
  for (i = 0; i < priv->n_done; i++)
    gst_clear_buffer (&priv->done[i].buffer);
  priv->n_done = 0;
}

/* Forgets the stream (start, flush). */
static void
stream_reset (P3dLidarParse * self)
{
  P3dLidarParsePrivate *priv = PRIV (self);
  P3dLidarParseClass *klass = P3D_LIDAR_PARSE_GET_CLASS (self);

  drop_sweeps (self);
  priv->failed = FALSE;
  priv->failed_flow = GST_FLOW_ERROR;
  priv->discont = TRUE;
  priv->anchored = FALSE;
  if (klass->reset)
    klass->reset (self);
}

static gboolean
p3d_lidar_parse_start (GstBaseParse * parse)
{
  P3dLidarParse *self = P3D_LIDAR_PARSE (parse);
  P3dLidarParsePrivate *priv = PRIV (self);
  P3dLidarParseClass *klass = P3D_LIDAR_PARSE_GET_CLASS (self);

  if (!p3d_element_check_properties (GST_ELEMENT (self)))
    return FALSE;
  GST_OBJECT_LOCK (self);
  priv->active_format = priv->format;
  priv->active_returns = priv->returns;
  priv->active_clock = priv->clock;
  priv->active_partial_sweeps = priv->partial_sweeps;
  memset (priv->counts, 0, sizeof (priv->counts));
  priv->sweeps = 0;
  priv->partial_dropped = 0;
  priv->last_points = 0;
  GST_OBJECT_UNLOCK (self);

  priv->active_device_id = p3d_cuda_find_element_device (GST_ELEMENT (self),
      &priv->context);
  priv->pushed = 0;
  priv->warned_loss = FALSE;
  priv->warned_invalid = FALSE;
  gst_base_parse_set_syncable (parse, FALSE);
  gst_base_parse_set_pts_interpolation (parse, FALSE);
  gst_base_parse_set_infer_ts (parse, FALSE);
  if (klass->start_sensor && !klass->start_sensor (self))
    return FALSE;
  stream_reset (self);
  return TRUE;
}

static gboolean
p3d_lidar_parse_stop (GstBaseParse * parse)
{
  P3dLidarParse *self = P3D_LIDAR_PARSE (parse);
  P3dLidarParsePrivate *priv = PRIV (self);
  P3dLidarParseClass *klass = P3D_LIDAR_PARSE_GET_CLASS (self);

  drop_sweeps (self);
  clear_pool (self);
  gst_clear_caps (&priv->caps);
  if (klass->stop_sensor)
    klass->stop_sensor (self);
  return TRUE;
}

/* What the element can output: the format property's format, or every
 * format with xyzi first; in both memories, CUDA first when a device is
 * there now, so that a GPU pipeline gets device buffers by default. */
static GstCaps *
possible_caps (P3dLidarParse * self)
{
  P3dLidarParsePrivate *priv = PRIV (self);
  P3dPointFormat format;
  GstStructure *s;
  GstCaps *media, *caps;

  GST_OBJECT_LOCK (self);
  format = GST_STATE (self) >= GST_STATE_PAUSED ? priv->active_format :
      priv->format;
  GST_OBJECT_UNLOCK (self);

  if (format == P3D_POINT_FORMAT_AUTO)
    s = gst_structure_from_string (P3D_POINT_CLOUD_CAPS_ALL, NULL);
  else
    s = gst_structure_new (P3D_MEDIA_TYPE_POINT_CLOUD, "format",
        G_TYPE_STRING, p3d_point_format_to_string (format), NULL);
  media = gst_caps_new_full (s, NULL);
  caps = p3d_caps_with_usable_memories (media, TRUE);
  gst_caps_unref (media);
  return caps;
}

static gboolean
p3d_lidar_parse_src_query (GstBaseParse * parse, GstQuery * query)
{
  P3dLidarParse *self = P3D_LIDAR_PARSE (parse);

  if (GST_QUERY_TYPE (query) == GST_QUERY_CAPS)
    return p3d_answer_caps_query (query, possible_caps (self));
  if (GST_QUERY_TYPE (query) == GST_QUERY_CONTEXT
      && answer_device_query (self, query))
    return TRUE;
  return GST_BASE_PARSE_CLASS (p3d_lidar_parse_parent_class)->src_query (parse,
      query);
}

/* The channels' places in a point of @finfo. */
static void
layout_from_format (const P3dPointFormatInfo * finfo,
    P3dLidarPointLayout * layout)
{
  layout->stride = finfo->channels;
  layout->intensity = finfo->intensity;
  layout->time = finfo->time;
  layout->ring = finfo->ring;
}

/* Chooses the caps with downstream (our order of preference unless
 * downstream has one) and sends them. A change of format or memory
 * replaces the pool. */
static gboolean
negotiate (P3dLidarParse * self)
{
  P3dLidarParsePrivate *priv = PRIV (self);
  gboolean new_pool;

  if (!p3d_parse_negotiate_point_cloud (GST_BASE_PARSE (self),
          possible_caps (self), PREFERRED_FORMAT, FALSE,
          "the format property fixes what the parser offers", &priv->caps,
          &priv->info, &priv->cuda, &new_pool))
    return FALSE;
  if (new_pool)
    clear_pool (self);
  layout_from_format (priv->info.finfo, &priv->layout);
  return TRUE;
}

static gboolean
ensure_caps (P3dLidarParse * self)
{
  P3dLidarParsePrivate *priv = PRIV (self);

  return (priv->caps != NULL
      && !gst_pad_check_reconfigure (GST_BASE_PARSE_SRC_PAD (self)))
      || negotiate (self);
}

/* A pool whose sweeps hold @points points (more than any before, with a
 * quarter more room when it replaces one). */
static gboolean
ensure_pool (P3dLidarParse * self, gsize points)
{
  P3dLidarParsePrivate *priv = PRIV (self);
  gsize max_points = p3d_point_cloud_info_get_max_points (&priv->info);
  GstAllocator *allocator = NULL;
  gsize capacity;

  if (priv->pool != NULL && points <= priv->pool_points)
    return TRUE;
  if (points > max_points) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED,
        ("A sweep of %" G_GSIZE_FORMAT " points of format %s takes more than "
            "the %" G_GSIZE_FORMAT " bytes a buffer can hold", points,
            priv->info.finfo->name, P3D_RECORD_MAX_BYTES),
        ("the sensor never reached the cut angle?"));
    return FALSE;
  }
  capacity = points;
  if (priv->pool != NULL)
    capacity = MAX (points, MIN (priv->pool_points + priv->pool_points / 4,
            max_points));
  capacity = MAX (capacity, 1);
  clear_pool (self);

  if (priv->cuda && (allocator = device_allocator (self)) == NULL)
    return FALSE;
  p3d_point_cloud_info_get_layout (&priv->info, capacity, &priv->tensor_layout);
  priv->pool = p3d_tensor_pool_new_configured (priv->caps,
      &priv->tensor_layout, allocator, P3D_TENSOR_POOL_MIN_BUFFERS);
  gst_clear_object (&allocator);
  if (priv->pool == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("Cannot allocate sweeps of %" G_GSIZE_FORMAT " points (%"
            G_GSIZE_FORMAT " bytes)", capacity,
            capacity * P3D_POINT_CLOUD_INFO_STRIDE (&priv->info)),
        ("caps %" GST_PTR_FORMAT, priv->caps));
    return FALSE;
  }
  priv->pool_points = capacity;
  GST_DEBUG_OBJECT (self, "pool of %" G_GSIZE_FORMAT " points in %s memory",
      capacity, priv->cuda ? "CUDA" : "system");
  return TRUE;
}

/* A buffer of the pool, its tensor mapped for writing at full capacity:
 * the decoders write into it (a CUDA memory's staging copy, uploaded at
 * unmap, once). */
static gboolean
acquire_sweep (P3dLidarParse * self, GstBuffer ** buffer, GstMemory ** mem,
    GstMapInfo * map)
{
  P3dLidarParsePrivate *priv = PRIV (self);
  GstFlowReturn flow;

  flow = gst_buffer_pool_acquire_buffer (priv->pool, buffer, NULL);
  if (flow != GST_FLOW_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("Cannot get a sweep buffer: %s", gst_flow_get_name (flow)), (NULL));
    return FALSE;
  }
  *mem = gst_buffer_peek_memory (*buffer, 0);
  if (!gst_memory_map (*mem, map, GST_MAP_WRITE | P3D_MAP_OVERWRITE)) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
        ("Cannot map a sweep of %" G_GSIZE_FORMAT " bytes",
            gst_memory_get_sizes (*mem, NULL, NULL)), ("%s memory",
            priv->cuda ? "CUDA" : "system"));
    gst_clear_buffer (buffer);
    return FALSE;
  }
  return TRUE;
}

/* Makes the open sweep's buffer hold at least @points points: a larger
 * pool, the points so far copied over. */
static gboolean
grow_sweep (P3dLidarParse * self, gsize points)
{
  P3dLidarParsePrivate *priv = PRIV (self);
  gsize stride = P3D_POINT_CLOUD_INFO_STRIDE (&priv->info);
  GstBuffer *buffer;
  GstMemory *mem;
  GstMapInfo map;

  if (points <= priv->pool_points)
    return TRUE;
  GST_DEBUG_OBJECT (self, "a sweep needs %" G_GSIZE_FORMAT " points, the "
      "pool holds %" G_GSIZE_FORMAT, points, priv->pool_points);
  if (!ensure_pool (self, points) || !acquire_sweep (self, &buffer, &mem, &map))
    return FALSE;
  memcpy (map.data, priv->sweep_map.data, priv->sweep_points * stride);
  gst_memory_unmap (priv->sweep_mem, &priv->sweep_map);
  gst_buffer_unref (priv->sweep);
  priv->sweep = buffer;
  priv->sweep_mem = mem;
  priv->sweep_map = map;
  return TRUE;
}

/* The PTS of a sweep whose first firing is at @t0 on the sensor's clock. */
static GstClockTime
sweep_pts (P3dLidarParse * self, gint64 t0, GstClockTime arrival,
    gint64 packet_end)
{
  P3dLidarParsePrivate *priv = PRIV (self);
  GstClockTime arrived = GST_CLOCK_TIME_NONE;

  /* the first firing happened this long before its packet arrived;
   * differences of sensor times are taken unsigned: a sensor's clock can
   * be anything, and a wrap must not be undefined */
  if (GST_CLOCK_TIME_IS_VALID (arrival)) {
    guint64 before = packet_end > t0 ? (guint64) packet_end - (guint64) t0 : 0;

    arrived = arrival > before ? arrival - before : 0;
  }
  if (priv->active_clock == P3D_LIDAR_CLOCK_ARRIVAL
      && GST_CLOCK_TIME_IS_VALID (arrived))
    return arrived;
  /* a clock that went back, or jumped by centuries, starts again */
  if (!priv->anchored || t0 < priv->anchor_sensor
      || (guint64) t0 - (guint64) priv->anchor_sensor > MAX_CLOCK_JUMP) {
    priv->anchored = TRUE;
    priv->anchor_sensor = t0;
    priv->anchor_pts = GST_CLOCK_TIME_IS_VALID (arrived) ? arrived : 0;
  }
  return priv->anchor_pts + ((guint64) t0 - (guint64) priv->anchor_sensor);
}

gboolean
p3d_lidar_parse_begin_sweep (P3dLidarParse * self, gint64 t0,
    GstClockTime arrival, gint64 packet_end, gsize capacity)
{
  P3dLidarParsePrivate *priv = PRIV (self);

  g_return_val_if_fail (!priv->open, FALSE);
  if (!ensure_caps (self)) {
    priv->failed = TRUE;
    priv->failed_flow = GST_FLOW_NOT_NEGOTIATED;
    return FALSE;
  }
  if (!ensure_pool (self, MAX (capacity, priv->pool_points))
      || !acquire_sweep (self, &priv->sweep, &priv->sweep_mem,
          &priv->sweep_map)) {
    priv->failed = TRUE;
    return FALSE;
  }
  priv->open = TRUE;
  priv->sweep_points = 0;
  priv->sweep_t0 = t0;
  priv->sweep_last = t0;
  priv->sweep_pts = sweep_pts (self, t0, arrival, packet_end);
  return TRUE;
}

gboolean
p3d_lidar_parse_sweep_is_open (P3dLidarParse * self)
{
  return PRIV (self)->open;
}

gfloat *
p3d_lidar_parse_reserve (P3dLidarParse * self, gsize n_points)
{
  P3dLidarParsePrivate *priv = PRIV (self);

  g_return_val_if_fail (priv->open, NULL);
  if (!grow_sweep (self, priv->sweep_points + n_points)) {
    priv->failed = TRUE;
    return NULL;
  }
  return (gfloat *) priv->sweep_map.data +
      priv->sweep_points * priv->layout.stride;
}

void
p3d_lidar_parse_commit (P3dLidarParse * self, gsize n_points, gint64 last)
{
  P3dLidarParsePrivate *priv = PRIV (self);

  priv->sweep_points += n_points;
  priv->sweep_last = MAX (priv->sweep_last, last);
}

gfloat *
p3d_lidar_parse_grid (P3dLidarParse * self, gsize n_points)
{
  P3dLidarParsePrivate *priv = PRIV (self);

  g_return_val_if_fail (priv->open, NULL);
  if (!grow_sweep (self, n_points)) {
    priv->failed = TRUE;
    return NULL;
  }
  return (gfloat *) priv->sweep_map.data;
}

void
p3d_lidar_parse_set_points (P3dLidarParse * self, gsize n_points, gint64 last)
{
  P3dLidarParsePrivate *priv = PRIV (self);

  priv->sweep_points = n_points;
  priv->sweep_last = MAX (priv->sweep_last, last);
}

void
p3d_lidar_parse_end_sweep (P3dLidarParse * self, gboolean partial,
    gboolean discont)
{
  P3dLidarParsePrivate *priv = PRIV (self);
  gsize stride = P3D_POINT_CLOUD_INFO_STRIDE (&priv->info);
  DoneSweep *done;

  g_return_if_fail (priv->open);
  priv->open = FALSE;
  priv->discont |= discont;
  /* shrunk while mapped, so that a CUDA memory uploads only the points */
  gst_memory_resize (priv->sweep_mem, 0, priv->sweep_points * stride);
  gst_memory_unmap (priv->sweep_mem, &priv->sweep_map);
  if (partial && !priv->active_partial_sweeps) {
    GST_DEBUG_OBJECT (self, "partial sweep of %" G_GSIZE_FORMAT " points "
        "dropped", priv->sweep_points);
    gst_clear_buffer (&priv->sweep);
    GST_OBJECT_LOCK (self);
    priv->partial_dropped++;
    GST_OBJECT_UNLOCK (self);
    priv->discont = TRUE;
    return;
  }
  if (priv->n_done == MAX_DONE) {
    /* cannot happen: a packet ends at most a break and a cut */
    GST_WARNING_OBJECT (self, "too many sweeps in one packet");
    gst_clear_buffer (&priv->sweep);
    return;
  }
  done = &priv->done[priv->n_done++];
  done->buffer = priv->sweep;
  priv->sweep = NULL;
  done->pts = priv->sweep_pts;
  done->duration = (guint64) priv->sweep_last - (guint64) priv->sweep_t0;
  done->offset = priv->pushed + priv->n_done - 1;
  done->discont = priv->discont;
  priv->discont = FALSE;
  GST_OBJECT_LOCK (self);
  priv->sweeps++;
  priv->last_points = priv->sweep_points;
  GST_OBJECT_UNLOCK (self);
  GST_LOG_OBJECT (self, "sweep %" G_GUINT64_FORMAT ": %" G_GSIZE_FORMAT
      " points, pts %" GST_TIME_FORMAT, done->offset, priv->sweep_points,
      GST_TIME_ARGS (done->pts));
}

const P3dLidarPointLayout *
p3d_lidar_parse_get_layout (P3dLidarParse * self)
{
  return &PRIV (self)->layout;
}

P3dLidarReturns
p3d_lidar_parse_get_returns (P3dLidarParse * self)
{
  return PRIV (self)->active_returns;
}

void
p3d_lidar_parse_count (P3dLidarParse * self, P3dLidarCount what, guint64 n)
{
  P3dLidarParsePrivate *priv = PRIV (self);

  if (n == 0)
    return;
  GST_OBJECT_LOCK (self);
  priv->counts[what] += n;
  GST_OBJECT_UNLOCK (self);
  if ((what == P3D_LIDAR_COUNT_LOST || what == P3D_LIDAR_COUNT_LATE
          || what == P3D_LIDAR_COUNT_REPEATED) && !priv->warned_loss) {
    /* said once a stream: a network that loses packets loses many */
    GST_ELEMENT_WARNING (self, STREAM, DECODE,
        ("Packets were %s: sweeps go out with what arrived",
            what == P3D_LIDAR_COUNT_LOST ? "lost" : what ==
            P3D_LIDAR_COUNT_LATE ? "late" : "repeated"),
        ("%" G_GUINT64_FORMAT " at once; the stats property counts lost, "
            "late and repeated packets; said once a stream", n));
    priv->warned_loss = TRUE;
  }
  if (what == P3D_LIDAR_COUNT_INVALID && !priv->warned_invalid) {
    GST_ELEMENT_WARNING (self, STREAM, DECODE,
        ("Malformed data packets were dropped"),
        ("the stats property counts them (invalid-packets); said once a "
            "stream"));
    priv->warned_invalid = TRUE;
  }
}

/* Pushes the sweeps that ended: all but the last through frames of their
 * own, the last in place of @frame (which then consumes @size input
 * bytes); with none, @frame is consumed and dropped. */
static GstFlowReturn
push_done (P3dLidarParse * self, GstBaseParseFrame * frame, gint size)
{
  P3dLidarParsePrivate *priv = PRIV (self);
  GstBaseParse *parse = GST_BASE_PARSE (self);
  GstFlowReturn flow = GST_FLOW_OK;
  guint i, n = priv->n_done;

  priv->n_done = 0;
  for (i = 0; i < n; i++) {
    DoneSweep *done = &priv->done[i];
    gboolean last = frame != NULL && i + 1 == n;
    GstBaseParseFrame *out = frame;

    if (flow != GST_FLOW_OK) {
      gst_clear_buffer (&done->buffer);
      continue;
    }
    if (!last) {
      GstBuffer *input = gst_buffer_new ();

      out = gst_base_parse_frame_new (input, GST_BASE_PARSE_FRAME_FLAG_NONE, 0);
      gst_buffer_unref (input);
    }
    out->out_buffer = done->buffer;
    done->buffer = NULL;
    priv->pushing = done;
    flow = gst_base_parse_finish_frame (parse, out, last ? size : 0);
    priv->pushing = NULL;
    priv->pushed++;
    if (!last)
      gst_base_parse_frame_free (out);
  }
  if (frame != NULL && n == 0) {
    frame->flags |= GST_BASE_PARSE_FRAME_FLAG_DROP;
    flow = gst_base_parse_finish_frame (parse, frame, size);
  }
  return flow;
}

static GstFlowReturn
p3d_lidar_parse_handle_frame (GstBaseParse * parse, GstBaseParseFrame * frame,
    gint * skipsize)
{
  P3dLidarParse *self = P3D_LIDAR_PARSE (parse);
  P3dLidarParsePrivate *priv = PRIV (self);
  P3dLidarParseClass *klass = P3D_LIDAR_PARSE_GET_CLASS (self);
  GstBuffer *buffer = frame->buffer;
  GstClockTime arrival;
  GstFlowReturn flow;
  GstMapInfo map;
  gint size;

  if (priv->failed)
    return priv->failed_flow;
  if (!gst_buffer_map (buffer, &map, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, RESOURCE, READ, ("Cannot read the input"),
        ("mapping %" G_GSIZE_FORMAT " bytes failed",
            gst_buffer_get_size (buffer)));
    priv->failed = TRUE;
    return GST_FLOW_ERROR;
  }
  arrival = GST_BUFFER_PTS_IS_VALID (buffer) ? GST_BUFFER_PTS (buffer) :
      GST_BUFFER_DTS (buffer);
  flow = klass->handle_packet (self, map.data, map.size, arrival);
  size = (gint) map.size;
  gst_buffer_unmap (buffer, &map);
  if (flow != GST_FLOW_OK) {
    drop_sweeps (self);
    priv->failed = TRUE;
    priv->failed_flow = flow;
    return flow;
  }
  if (priv->failed)
    return priv->failed_flow;
  return push_done (self, frame, size);
}

/* Every sweep carries its own times, from the sensor or the arrivals;
 * GstBaseParse's are replaced. */
static GstFlowReturn
p3d_lidar_parse_pre_push_frame (GstBaseParse * parse, GstBaseParseFrame * frame)
{
  P3dLidarParsePrivate *priv = PRIV (P3D_LIDAR_PARSE (parse));
  GstBuffer *buffer = frame->buffer;
  DoneSweep *done = priv->pushing;

  if (done == NULL)
    return GST_FLOW_OK;
  GST_BUFFER_PTS (buffer) = done->pts;
  GST_BUFFER_DTS (buffer) = done->pts;
  GST_BUFFER_DURATION (buffer) = done->duration;
  GST_BUFFER_OFFSET (buffer) = done->offset;
  GST_BUFFER_OFFSET_END (buffer) = done->offset + 1;
  if (done->discont)
    GST_BUFFER_FLAG_SET (buffer, GST_BUFFER_FLAG_DISCONT);
  else
    GST_BUFFER_FLAG_UNSET (buffer, GST_BUFFER_FLAG_DISCONT);
  return GST_FLOW_OK;
}

static gboolean
p3d_lidar_parse_sink_event (GstBaseParse * parse, GstEvent * event)
{
  P3dLidarParse *self = P3D_LIDAR_PARSE (parse);
  P3dLidarParsePrivate *priv = PRIV (self);
  P3dLidarParseClass *klass = P3D_LIDAR_PARSE_GET_CLASS (self);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_EOS:
      if (!priv->failed && klass->finish != NULL) {
        klass->finish (self);
        push_done (self, NULL, 0);
      }
      drop_sweeps (self);
      if (priv->pushed > 0)
        break;
      /* GstBaseParse calls a stream without frames an error without
       * saying why; a stream without a whole sweep gets a warning that
       * says it, and one that failed has its own error already */
      if (!priv->failed)
        GST_ELEMENT_WARNING (self, STREAM, DECODE,
            ("No sweep before the end of the stream: %" G_GUINT64_FORMAT
                " data packets, %" G_GUINT64_FORMAT " partial sweeps dropped",
                priv->counts[P3D_LIDAR_COUNT_PACKETS], priv->partial_dropped),
            ("a whole revolution or frame needs its start and its end; "
                "partial-sweeps=true outputs the parts"));
      return gst_pad_push_event (GST_BASE_PARSE_SRC_PAD (parse), event);
    case GST_EVENT_FLUSH_STOP:
      stream_reset (self);
      break;
    default:
      break;
  }
  return GST_BASE_PARSE_CLASS (p3d_lidar_parse_parent_class)->sink_event
      (parse, event);
}

/* Packets have no byte offsets to seek to: push mode only, so that
 * GstBaseParse never reads a seekable upstream in pull mode. */
static gboolean
p3d_lidar_parse_sink_activate (GstPad * pad, GstObject * parent)
{
  return gst_pad_activate_mode (pad, GST_PAD_MODE_PUSH, TRUE);
}
