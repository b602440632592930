/**
 * SECTION:element-pointcloudtestsrc
 * @title: pointcloudtestsrc
 *
 * A synthetic spinning lidar over a street, the lidar counterpart of
 * videotestsrc: ground with lane markings, building facades, and cars,
 * pedestrians and cyclists placed by the seed and moving with constant
 * velocity and yaw rate. Each buffer is one revolution, in the sensor frame
 * (x forward, y left, z up) as KITTI. The same seed and properties give the
 * same bytes on every machine and every run; frame n shows the scene at
 * t = n / framerate, so a seek lands on the same frames.
 *
 * With emit=boxes it sends the scene's true boxes instead
 * (application/x-boxes3d, label 0 car, 1 pedestrian, 2 cyclist), and with
 * emit=candidates jittered, overlapping boxes with scores, like a
 * detector's raw output, for nms. Output is in system memory or in CUDA
 * memory, as negotiated.
 *
 * Without motion the frame is computed once and every buffer shares its
 * memories, so the source can feed a GPU benchmark at thousands of frames
 * per second.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 pointcloudtestsrc num-buffers=100 ! fakesink
 * gst-launch-1.0 pointcloudtestsrc beams=32 fov-up=10 fov-down=-30 \
 *     points-per-revolution=1084 framerate=20/1 format=xyzir ! fakesink
 * gst-launch-1.0 pointcloudtestsrc emit=candidates ! nms mode=bev-rotated \
 *     ! fakesink
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstpointcloudtestsrc.h"
#include "p3dcudacontext.h"
#include "p3dparamspec.h"

GST_DEBUG_CATEGORY_STATIC (p3d_point_cloud_test_src_debug);
#define GST_CAT_DEFAULT p3d_point_cloud_test_src_debug

enum
{
  PROP_0,
  PROP_BEAMS,
  PROP_POINTS_PER_REVOLUTION,
  PROP_FOV_UP,
  PROP_FOV_DOWN,
  PROP_MAX_RANGE,
  PROP_RANGE_NOISE,
  PROP_SENSOR_HEIGHT,
  PROP_FRAMERATE,
  PROP_SEED,
  PROP_FORMAT,
  PROP_MOTION,
  PROP_CARS,
  PROP_PEDESTRIANS,
  PROP_CYCLISTS,
  PROP_WALLS,
  PROP_GROUND,
  PROP_EMIT,
  PROP_MAX_BOXES,
  PROP_CANDIDATES_PER_OBJECT,
  PROP_CUDA_DEVICE_ID,
};

#define DEFAULT_BEAMS P3D_LIDAR_DEFAULT_BEAMS
#define DEFAULT_POINTS_PER_REVOLUTION P3D_LIDAR_DEFAULT_POINTS_PER_REVOLUTION
#define DEFAULT_FOV_UP P3D_LIDAR_DEFAULT_FOV_UP
#define DEFAULT_FOV_DOWN P3D_LIDAR_DEFAULT_FOV_DOWN
#define DEFAULT_MAX_RANGE P3D_LIDAR_DEFAULT_MAX_RANGE
#define DEFAULT_RANGE_NOISE P3D_LIDAR_DEFAULT_RANGE_NOISE
#define DEFAULT_SENSOR_HEIGHT P3D_STREET_DEFAULT_SENSOR_HEIGHT
#define DEFAULT_FPS_N P3D_LIDAR_DEFAULT_FPS_N
#define DEFAULT_FPS_D P3D_LIDAR_DEFAULT_FPS_D
#define DEFAULT_SEED 0
#define DEFAULT_FORMAT P3D_POINT_FORMAT_AUTO
#define DEFAULT_MOTION TRUE
#define DEFAULT_CARS P3D_STREET_DEFAULT_CARS
#define DEFAULT_PEDESTRIANS P3D_STREET_DEFAULT_PEDESTRIANS
#define DEFAULT_CYCLISTS P3D_STREET_DEFAULT_CYCLISTS
#define DEFAULT_WALLS TRUE
#define DEFAULT_GROUND TRUE
#define DEFAULT_EMIT P3D_POINT_CLOUD_TEST_SRC_EMIT_POINTS
#define DEFAULT_MAX_BOXES 1024
#define DEFAULT_CANDIDATES_PER_OBJECT 8
#define DEFAULT_CUDA_DEVICE_ID -1
#define MAX_CANDIDATES_PER_OBJECT 64
/* The point format "auto" settles on when downstream accepts any: KITTI's. */
#define PREFERRED_FORMAT "xyzi"

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (P3D_MEDIA_TYPE_POINT_CLOUD
        ", format = (string) { xyz, xyzi, xyzit, xyzir }, "
        "framerate = (fraction) [ 1/2147483647, 2147483647/1 ]; "
        P3D_MEDIA_TYPE_POINT_CLOUD "(" P3D_CAPS_FEATURE_MEMORY_CUDA "), "
        "format = (string) { xyz, xyzi, xyzit, xyzir }, "
        "framerate = (fraction) [ 1/2147483647, 2147483647/1 ]; "
        P3D_MEDIA_TYPE_BOXES3D ", max-boxes = (int) [ 1, 1048576 ], "
        "framerate = (fraction) [ 1/2147483647, 2147483647/1 ]; "
        P3D_MEDIA_TYPE_BOXES3D "(" P3D_CAPS_FEATURE_MEMORY_CUDA "), "
        "max-boxes = (int) [ 1, 1048576 ], "
        "framerate = (fraction) [ 1/2147483647, 2147483647/1 ]"));

#define P3D_TYPE_POINT_CLOUD_TEST_SRC_EMIT \
    (p3d_point_cloud_test_src_emit_get_type ())
static GType
p3d_point_cloud_test_src_emit_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {P3D_POINT_CLOUD_TEST_SRC_EMIT_POINTS, "The lidar's points "
          "(application/x-point-cloud)", "points"},
    {P3D_POINT_CLOUD_TEST_SRC_EMIT_BOXES, "The true boxes of the objects "
          "within max-range (application/x-boxes3d, score 1)", "boxes"},
    {P3D_POINT_CLOUD_TEST_SRC_EMIT_CANDIDATES, "Jittered, overlapping boxes "
          "with scores, plus a few false positives, shuffled: a detector's "
          "raw output (application/x-boxes3d)", "candidates"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dPointCloudTestSrcEmit", values);

    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

#define p3d_point_cloud_test_src_parent_class parent_class
G_DEFINE_TYPE (P3dPointCloudTestSrc, p3d_point_cloud_test_src,
    GST_TYPE_PUSH_SRC);
GST_ELEMENT_REGISTER_DEFINE (pointcloudtestsrc, "pointcloudtestsrc",
    GST_RANK_NONE, P3D_TYPE_POINT_CLOUD_TEST_SRC);

static void p3d_point_cloud_test_src_set_property (GObject * object,
    guint prop_id, const GValue * value, GParamSpec * pspec);
static void p3d_point_cloud_test_src_get_property (GObject * object,
    guint prop_id, GValue * value, GParamSpec * pspec);
static void p3d_point_cloud_test_src_finalize (GObject * object);
static gboolean p3d_point_cloud_test_src_start (GstBaseSrc * src);
static gboolean p3d_point_cloud_test_src_stop (GstBaseSrc * src);
static GstCaps *p3d_point_cloud_test_src_get_caps (GstBaseSrc * src,
    GstCaps * filter);
static GstCaps *p3d_point_cloud_test_src_fixate (GstBaseSrc * src,
    GstCaps * caps);
static gboolean p3d_point_cloud_test_src_set_caps (GstBaseSrc * src,
    GstCaps * caps);
static gboolean p3d_point_cloud_test_src_decide_allocation (GstBaseSrc * src,
    GstQuery * query);
static gboolean p3d_point_cloud_test_src_query (GstBaseSrc * src,
    GstQuery * query);
static void p3d_point_cloud_test_src_set_context (GstElement * element,
    GstContext * context);
static gboolean p3d_point_cloud_test_src_is_seekable (GstBaseSrc * src);
static gboolean p3d_point_cloud_test_src_do_seek (GstBaseSrc * src,
    GstSegment * segment);
static GstFlowReturn p3d_point_cloud_test_src_create (GstPushSrc * src,
    GstBuffer ** buffer);

#define PARAM_FLAGS \
    (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)

static void
p3d_point_cloud_test_src_class_init (P3dPointCloudTestSrcClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *base_src_class = GST_BASE_SRC_CLASS (klass);
  GstPushSrcClass *push_src_class = GST_PUSH_SRC_CLASS (klass);

  gobject_class->set_property = p3d_point_cloud_test_src_set_property;
  gobject_class->get_property = p3d_point_cloud_test_src_get_property;
  gobject_class->finalize = p3d_point_cloud_test_src_finalize;

  g_object_class_install_property (gobject_class, PROP_BEAMS,
      p3d_param_spec_uint ("beams", "Beams",
          "Lasers, spread evenly from fov-down to fov-up (64: HDL-64E; 32 "
          "with fov-up=10 fov-down=-30: HDL-32E)", 0, P3D_LIDAR_MAX_BEAMS,
          DEFAULT_BEAMS, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_POINTS_PER_REVOLUTION,
      p3d_param_spec_uint ("points-per-revolution", "Points per revolution",
          "Firings of each beam per revolution (azimuth steps); beams times "
          "this is the most points a frame can have", 0, P3D_LIDAR_MAX_RAYS,
          DEFAULT_POINTS_PER_REVOLUTION, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_FOV_UP,
      p3d_param_spec_double ("fov-up", "Upper field of view",
          "Elevation of the highest beam in degrees; must be above fov-down",
          -90.0, 90.0, DEFAULT_FOV_UP, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_FOV_DOWN,
      p3d_param_spec_double ("fov-down", "Lower field of view",
          "Elevation of the lowest beam in degrees (negative: below the "
          "horizon)", -90.0, 90.0, DEFAULT_FOV_DOWN, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_MAX_RANGE,
      p3d_param_spec_double ("max-range", "Maximum range",
          "Returns farther than this (metres, after noise) give no point; "
          "objects whose centre is farther give no box", 0.0, 1e4,
          DEFAULT_MAX_RANGE, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_RANGE_NOISE,
      p3d_param_spec_double ("range-noise", "Range noise",
          "Standard deviation of the Gaussian noise added to each range, in "
          "metres (0: exact geometry)", 0.0, 100.0, DEFAULT_RANGE_NOISE,
          PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_SENSOR_HEIGHT,
      p3d_param_spec_double ("sensor-height", "Sensor height",
          "Height of the lidar above the ground in metres (1.73: KITTI); "
          "the ground is at z = -sensor-height", 0.0, 100.0,
          DEFAULT_SENSOR_HEIGHT, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_FRAMERATE,
      p3d_param_spec_fraction ("framerate", "Frame rate",
          "Revolutions (buffers) per second: the caps' framerate, the "
          "buffers' timestamps and the time between two frames of motion",
          0, 1, G_MAXINT, 1, DEFAULT_FPS_N, DEFAULT_FPS_D, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_SEED,
      p3d_param_spec_uint64 ("seed", "Seed",
          "Places the walls and objects and drives the noise: the same seed "
          "and properties give the same bytes on every machine", 0,
          G_MAXUINT64, DEFAULT_SEED, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_FORMAT,
      g_param_spec_enum ("format", "Format",
          "Point format; auto takes what downstream asks for",
          P3D_TYPE_POINT_FORMAT, DEFAULT_FORMAT, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_MOTION,
      g_param_spec_boolean ("motion", "Motion",
          "Objects move from frame to frame; when false every frame is "
          "frame 0, computed once, and all buffers share its memory",
          DEFAULT_MOTION, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_CARS,
      p3d_param_spec_uint ("cars", "Cars",
          "Cars in the lanes and the parking lane", 0, P3D_STREET_MAX_CARS,
          DEFAULT_CARS, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_PEDESTRIANS,
      p3d_param_spec_uint ("pedestrians", "Pedestrians",
          "Pedestrians on the sidewalks", 0, P3D_STREET_MAX_PEDESTRIANS,
          DEFAULT_PEDESTRIANS, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_CYCLISTS,
      p3d_param_spec_uint ("cyclists", "Cyclists",
          "Cyclists in the bike lanes", 0, P3D_STREET_MAX_CYCLISTS,
          DEFAULT_CYCLISTS, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_WALLS,
      g_param_spec_boolean ("walls", "Walls",
          "Building facades along both sides of the road", DEFAULT_WALLS,
          PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_GROUND,
      g_param_spec_boolean ("ground", "Ground",
          "The ground plane (without it and without walls, only the "
          "objects return points)", DEFAULT_GROUND, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_EMIT,
      g_param_spec_enum ("emit", "Emit",
          "What each buffer holds: the points, or the scene's boxes",
          P3D_TYPE_POINT_CLOUD_TEST_SRC_EMIT, DEFAULT_EMIT, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_MAX_BOXES,
      p3d_param_spec_uint ("max-boxes", "Max boxes",
          "Capacity of a boxes buffer (the caps' max-boxes) with emit=boxes "
          "or candidates; boxes beyond it are dropped, with a warning", 1,
          P3D_BOXES_MAX_BOXES, DEFAULT_MAX_BOXES, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_CANDIDATES_PER_OBJECT,
      p3d_param_spec_uint ("candidates-per-object", "Candidates per object",
          "Jittered boxes around each object with emit=candidates", 1,
          MAX_CANDIDATES_PER_OBJECT, DEFAULT_CANDIDATES_PER_OBJECT,
          PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_CUDA_DEVICE_ID,
      p3d_param_spec_int ("cuda-device-id", "CUDA device",
          "The CUDA device holding the buffers when memory:CUDAMemory is "
          "negotiated; -1: the device the pipeline already uses (shared by "
          "the other elements), else device 0", -1, G_MAXINT,
          DEFAULT_CUDA_DEVICE_ID, PARAM_FLAGS));

  gst_element_class_set_static_metadata (element_class,
      "Point cloud test source", "Source/Lidar",
      "A synthetic spinning lidar over a street with moving cars, "
      "pedestrians and cyclists, deterministic; or their boxes",
      "gst-perception developers");
  gst_element_class_add_static_pad_template (element_class, &src_template);

  element_class->set_context =
      GST_DEBUG_FUNCPTR (p3d_point_cloud_test_src_set_context);
  base_src_class->start = GST_DEBUG_FUNCPTR (p3d_point_cloud_test_src_start);
  base_src_class->stop = GST_DEBUG_FUNCPTR (p3d_point_cloud_test_src_stop);
  base_src_class->get_caps =
      GST_DEBUG_FUNCPTR (p3d_point_cloud_test_src_get_caps);
  base_src_class->fixate = GST_DEBUG_FUNCPTR (p3d_point_cloud_test_src_fixate);
  base_src_class->set_caps =
      GST_DEBUG_FUNCPTR (p3d_point_cloud_test_src_set_caps);
  base_src_class->query = GST_DEBUG_FUNCPTR (p3d_point_cloud_test_src_query);
  base_src_class->decide_allocation =
      GST_DEBUG_FUNCPTR (p3d_point_cloud_test_src_decide_allocation);
  base_src_class->is_seekable =
      GST_DEBUG_FUNCPTR (p3d_point_cloud_test_src_is_seekable);
  base_src_class->do_seek =
      GST_DEBUG_FUNCPTR (p3d_point_cloud_test_src_do_seek);
  push_src_class->create = GST_DEBUG_FUNCPTR (p3d_point_cloud_test_src_create);

  gst_type_mark_as_plugin_api (P3D_TYPE_POINT_FORMAT, 0);
  gst_type_mark_as_plugin_api (P3D_TYPE_POINT_CLOUD_TEST_SRC_EMIT, 0);

  GST_DEBUG_CATEGORY_INIT (p3d_point_cloud_test_src_debug,
      "pointcloudtestsrc", 0, "Synthetic lidar source");
}

static void
p3d_point_cloud_test_src_init (P3dPointCloudTestSrc * self)
{
  p3d_lidar_scene_params_init (&self->params);
  self->params.seed = DEFAULT_SEED;
  self->params.motion = DEFAULT_MOTION;
  self->params.walls = DEFAULT_WALLS;
  self->params.ground = DEFAULT_GROUND;
  self->format = DEFAULT_FORMAT;
  self->emit = DEFAULT_EMIT;
  self->max_boxes = DEFAULT_MAX_BOXES;
  self->candidates_per_object = DEFAULT_CANDIDATES_PER_OBJECT;
  self->cuda_device_id = DEFAULT_CUDA_DEVICE_ID;
  self->fps_n = DEFAULT_FPS_N;
  self->fps_d = DEFAULT_FPS_D;

  gst_base_src_set_format (GST_BASE_SRC (self), GST_FORMAT_TIME);
  gst_base_src_set_live (GST_BASE_SRC (self), FALSE);
  p3d_object_watch_properties (G_OBJECT (self), GST_ELEMENT (self));
}

static void
p3d_point_cloud_test_src_finalize (GObject * object)
{
  P3dPointCloudTestSrc *self = P3D_POINT_CLOUD_TEST_SRC (object);

  /* stop() normally released these; not when start() failed half-way. */
  gst_clear_buffer (&self->frozen);
  gst_clear_object (&self->pool);
  p3d_lidar_scene_free (self->scene);
  g_free (self->points);
  g_free (self->boxes);
  if (self->context)
    gst_context_unref (self->context);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
p3d_point_cloud_test_src_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dPointCloudTestSrc *self = P3D_POINT_CLOUD_TEST_SRC (object);
  P3dLidarSceneParams *params = &self->params;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_BEAMS:
      params->beams = g_value_get_uint (value);
      break;
    case PROP_POINTS_PER_REVOLUTION:
      params->points_per_revolution = g_value_get_uint (value);
      break;
    case PROP_FOV_UP:
      params->fov_up = g_value_get_double (value);
      break;
    case PROP_FOV_DOWN:
      params->fov_down = g_value_get_double (value);
      break;
    case PROP_MAX_RANGE:
      params->max_range = g_value_get_double (value);
      break;
    case PROP_RANGE_NOISE:
      params->range_noise = g_value_get_double (value);
      break;
    case PROP_SENSOR_HEIGHT:
      params->sensor_height = g_value_get_double (value);
      break;
    case PROP_FRAMERATE:
      params->fps_n = gst_value_get_fraction_numerator (value);
      params->fps_d = gst_value_get_fraction_denominator (value);
      break;
    case PROP_SEED:
      params->seed = g_value_get_uint64 (value);
      break;
    case PROP_FORMAT:
      self->format = g_value_get_enum (value);
      break;
    case PROP_MOTION:
      params->motion = g_value_get_boolean (value);
      break;
    case PROP_CARS:
      params->cars = g_value_get_uint (value);
      break;
    case PROP_PEDESTRIANS:
      params->pedestrians = g_value_get_uint (value);
      break;
    case PROP_CYCLISTS:
      params->cyclists = g_value_get_uint (value);
      break;
    case PROP_WALLS:
      params->walls = g_value_get_boolean (value);
      break;
    case PROP_GROUND:
      params->ground = g_value_get_boolean (value);
      break;
    case PROP_EMIT:
      self->emit = g_value_get_enum (value);
      break;
    case PROP_MAX_BOXES:
      self->max_boxes = g_value_get_uint (value);
      break;
    case PROP_CANDIDATES_PER_OBJECT:
      self->candidates_per_object = g_value_get_uint (value);
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
p3d_point_cloud_test_src_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  P3dPointCloudTestSrc *self = P3D_POINT_CLOUD_TEST_SRC (object);
  const P3dLidarSceneParams *params = &self->params;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_BEAMS:
      g_value_set_uint (value, params->beams);
      break;
    case PROP_POINTS_PER_REVOLUTION:
      g_value_set_uint (value, params->points_per_revolution);
      break;
    case PROP_FOV_UP:
      g_value_set_double (value, params->fov_up);
      break;
    case PROP_FOV_DOWN:
      g_value_set_double (value, params->fov_down);
      break;
    case PROP_MAX_RANGE:
      g_value_set_double (value, params->max_range);
      break;
    case PROP_RANGE_NOISE:
      g_value_set_double (value, params->range_noise);
      break;
    case PROP_SENSOR_HEIGHT:
      g_value_set_double (value, params->sensor_height);
      break;
    case PROP_FRAMERATE:
      gst_value_set_fraction (value, params->fps_n, params->fps_d);
      break;
    case PROP_SEED:
      g_value_set_uint64 (value, params->seed);
      break;
    case PROP_FORMAT:
      g_value_set_enum (value, self->format);
      break;
    case PROP_MOTION:
      g_value_set_boolean (value, params->motion);
      break;
    case PROP_CARS:
      g_value_set_uint (value, params->cars);
      break;
    case PROP_PEDESTRIANS:
      g_value_set_uint (value, params->pedestrians);
      break;
    case PROP_CYCLISTS:
      g_value_set_uint (value, params->cyclists);
      break;
    case PROP_WALLS:
      g_value_set_boolean (value, params->walls);
      break;
    case PROP_GROUND:
      g_value_set_boolean (value, params->ground);
      break;
    case PROP_EMIT:
      g_value_set_enum (value, self->emit);
      break;
    case PROP_MAX_BOXES:
      g_value_set_uint (value, self->max_boxes);
      break;
    case PROP_CANDIDATES_PER_OBJECT:
      g_value_set_uint (value, self->candidates_per_object);
      break;
    case PROP_CUDA_DEVICE_ID:
      g_value_set_int (value, self->cuda_device_id);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static gboolean
p3d_point_cloud_test_src_start (GstBaseSrc * src)
{
  P3dPointCloudTestSrc *self = P3D_POINT_CLOUD_TEST_SRC (src);
  P3dLidarSceneParams params;
  const gchar *property;
  gchar *why = NULL;

  if (!p3d_element_check_properties (GST_ELEMENT (self)))
    return FALSE;

  GST_OBJECT_LOCK (self);
  params = self->params;
  self->active_emit = self->emit;
  self->active_max_boxes = self->max_boxes;
  self->active_candidates_per_object = self->candidates_per_object;
  GST_OBJECT_UNLOCK (self);
  self->active_device_id = p3d_cuda_find_element_device (GST_ELEMENT (self),
      &self->context);

  property = p3d_lidar_scene_params_check (&params, &why);
  if (property != NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Invalid property %s: %s", property, why),
        ("beams %u, points-per-revolution %u, fov-up %g, fov-down %g, "
            "max-range %g, range-noise %g, sensor-height %g, framerate %d/%d",
            params.beams, params.points_per_revolution, params.fov_up,
            params.fov_down, params.max_range, params.range_noise,
            params.sensor_height, params.fps_n, params.fps_d));
    g_free (why);
    return FALSE;
  }

  self->scene = p3d_lidar_scene_new (&params);
  self->fps_n = params.fps_n;
  self->fps_d = params.fps_d;
  self->frame = 0;
  self->warned_truncated = FALSE;
  if (self->active_emit != P3D_POINT_CLOUD_TEST_SRC_EMIT_POINTS)
    self->boxes = g_new (P3dcBox3d, self->active_max_boxes);
  GST_DEBUG_OBJECT (self, "scene of %u objects, %u rays per frame",
      p3d_lidar_scene_get_n_objects (self->scene),
      p3d_lidar_scene_get_n_rays (self->scene));
  return TRUE;
}

static gboolean
p3d_point_cloud_test_src_stop (GstBaseSrc * src)
{
  P3dPointCloudTestSrc *self = P3D_POINT_CLOUD_TEST_SRC (src);

  gst_clear_buffer (&self->frozen);
  if (self->pool)
    gst_buffer_pool_set_active (self->pool, FALSE);
  gst_clear_object (&self->pool);
  p3d_lidar_scene_free (self->scene);
  self->scene = NULL;
  g_clear_pointer (&self->points, g_free);
  self->points_size = 0;
  g_clear_pointer (&self->boxes, g_free);
  return TRUE;
}

/* What the properties allow, in both memories: CUDA first when a device
 * is there now, so that a GPU pipeline gets device buffers by default. */
static GstCaps *
p3d_point_cloud_test_src_get_caps (GstBaseSrc * src, GstCaps * filter)
{
  P3dPointCloudTestSrc *self = P3D_POINT_CLOUD_TEST_SRC (src);
  GstStructure *s;
  GstCaps *media, *caps;
  gint fps_n, fps_d;

  GST_OBJECT_LOCK (self);
  fps_n = self->params.fps_n;
  fps_d = self->params.fps_d;
  if (self->emit == P3D_POINT_CLOUD_TEST_SRC_EMIT_POINTS) {
    /* Every format, PREFERRED_FORMAT (xyzi) first as the template lists
     * them. */
    if (self->format == P3D_POINT_FORMAT_AUTO)
      s = gst_structure_from_string (P3D_POINT_CLOUD_CAPS_ALL, NULL);
    else
      s = gst_structure_new (P3D_MEDIA_TYPE_POINT_CLOUD, "format",
          G_TYPE_STRING, p3d_point_format_to_string (self->format), NULL);
  } else {
    s = gst_structure_new (P3D_MEDIA_TYPE_BOXES3D, "max-boxes", G_TYPE_INT,
        (gint) self->max_boxes, NULL);
  }
  GST_OBJECT_UNLOCK (self);

  /* A framerate of 0 is refused in start(); keep the caps valid till then. */
  if (fps_n > 0 && fps_d > 0)
    gst_structure_set (s, "framerate", GST_TYPE_FRACTION, fps_n, fps_d, NULL);
  media = gst_caps_new_full (s, NULL);
  caps = p3d_caps_with_usable_memories (media, TRUE);
  gst_caps_unref (media);

  if (filter) {
    GstCaps *both = gst_caps_intersect_full (filter, caps,
        GST_CAPS_INTERSECT_FIRST);

    gst_caps_unref (caps);
    caps = both;
  }
  GST_LOG_OBJECT (self, "caps %" GST_PTR_FORMAT, caps);
  return caps;
}

static GstCaps *
p3d_point_cloud_test_src_fixate (GstBaseSrc * src, GstCaps * caps)
{
  guint i;

  caps = gst_caps_make_writable (caps);
  for (i = 0; i < gst_caps_get_size (caps); i++) {
    GstStructure *s = gst_caps_get_structure (caps, i);

    if (gst_structure_has_field (s, "format"))
      gst_structure_fixate_field_string (s, "format", PREFERRED_FORMAT);
  }
  return GST_BASE_SRC_CLASS (parent_class)->fixate (src, caps);
}

/* The channels after x, y, z that @finfo names, or FALSE when they are not
 * in the order the scene writes them (intensity, time, ring). */
static gboolean
channels_from_format (const P3dPointFormatInfo * finfo,
    P3dLidarChannels * channels)
{
  P3dLidarChannels found = 0;
  gint next = 3;

  if (finfo->intensity >= 0) {
    if (finfo->intensity != next++)
      return FALSE;
    found |= P3D_LIDAR_CHANNEL_INTENSITY;
  }
  if (finfo->time >= 0) {
    if (finfo->time != next++)
      return FALSE;
    found |= P3D_LIDAR_CHANNEL_TIME;
  }
  if (finfo->ring >= 0) {
    if (finfo->ring != next++)
      return FALSE;
    found |= P3D_LIDAR_CHANNEL_RING;
  }
  if ((guint) next != finfo->channels)
    return FALSE;
  *channels = found;
  return TRUE;
}

static gboolean
p3d_point_cloud_test_src_set_caps (GstBaseSrc * src, GstCaps * caps)
{
  P3dPointCloudTestSrc *self = P3D_POINT_CLOUD_TEST_SRC (src);
  guint n_rays = p3d_lidar_scene_get_n_rays (self->scene);

  GST_DEBUG_OBJECT (self, "caps %" GST_PTR_FORMAT, caps);
  gst_clear_buffer (&self->frozen);

  if (self->active_emit == P3D_POINT_CLOUD_TEST_SRC_EMIT_POINTS) {
    P3dPointCloudInfo info;
    P3dLidarChannels channels;
    gsize size;

    if (!p3d_point_cloud_info_from_caps (&info, caps)
        || !channels_from_format (info.finfo, &channels)) {
      GST_WARNING_OBJECT (self, "cannot produce %" GST_PTR_FORMAT, caps);
      return FALSE;
    }
    self->channels = channels;
    self->point_size = P3D_POINT_CLOUD_INFO_STRIDE (&info);
    p3d_point_cloud_info_get_layout (&info, n_rays, &self->layout);
    size = (gsize) n_rays *self->point_size;
    if (self->points_size < size) {
      g_free (self->points);
      self->points = g_malloc (size);
      self->points_size = size;
    }
  } else {
    P3dBoxes3dInfo info;

    if (!p3d_boxes3d_info_from_caps (&info, caps)
        || info.max_boxes != self->active_max_boxes) {
      GST_WARNING_OBJECT (self, "cannot produce %" GST_PTR_FORMAT
          " (max-boxes is %u)", caps, self->active_max_boxes);
      return FALSE;
    }
    p3d_boxes3d_info_get_layout (&info, &self->layout);
  }
  return TRUE;
}

static void
p3d_point_cloud_test_src_set_context (GstElement * element,
    GstContext * context)
{
  P3dPointCloudTestSrc *self = P3D_POINT_CLOUD_TEST_SRC (element);

  p3d_cuda_handle_set_context (element, context, &self->context);
  GST_ELEMENT_CLASS (parent_class)->set_context (element, context);
}

/* The device of our buffers is shared with the CUDA filters downstream:
 * one at cuda-device-id=-1 then starts on it, rather than on device 0 and
 * moving there at the first frame. */
static gboolean
p3d_point_cloud_test_src_query (GstBaseSrc * src, GstQuery * query)
{
  P3dPointCloudTestSrc *self = P3D_POINT_CLOUD_TEST_SRC (src);

  if (p3d_cuda_handle_context_query (GST_ELEMENT (self), query, &self->context))
    return TRUE;
  return GST_BASE_SRC_CLASS (parent_class)->query (src, query);
}

/* Our own tensor pool, in the negotiated memory, whatever downstream
 * proposed: the layout (one tensor per GstMemory) is ours to decide. */
static gboolean
p3d_point_cloud_test_src_decide_allocation (GstBaseSrc * src, GstQuery * query)
{
  P3dPointCloudTestSrc *self = P3D_POINT_CLOUD_TEST_SRC (src);
  GstAllocator *allocator = NULL;
  GstBufferPool *pool;
  GstCaps *caps = NULL;

  gst_query_parse_allocation (query, &caps, NULL);
  if (caps == NULL)
    return FALSE;
  if (p3d_caps_is_cuda (caps)) {
    allocator = p3d_cuda_element_get_allocator (GST_ELEMENT (self),
        self->active_device_id, &self->context);
    if (allocator == NULL)
      return FALSE;
  }
  pool = p3d_tensor_pool_decide_allocation (query, &self->layout, allocator);
  gst_clear_object (&allocator);
  if (pool == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
        ("Cannot allocate buffers of %" G_GSIZE_FORMAT " bytes",
            p3d_tensor_layout_get_total_size (&self->layout)),
        ("caps %" GST_PTR_FORMAT, caps));
    return FALSE;
  }

  gst_clear_buffer (&self->frozen);
  if (self->pool)
    gst_buffer_pool_set_active (self->pool, FALSE);
  gst_clear_object (&self->pool);
  /* GstBaseSrc starts it */
  self->pool = pool;
  GST_DEBUG_OBJECT (self, "pool of %" G_GSIZE_FORMAT "-byte buffers in %s "
      "memory", p3d_tensor_layout_get_total_size (&self->layout),
      p3d_caps_is_cuda (caps) ? "CUDA" : "system");
  return TRUE;
}

static gboolean
p3d_point_cloud_test_src_is_seekable (GstBaseSrc * src)
{
  return TRUE;
}

/* The frame index drives the scene, so a seek is only a new index. */
static gboolean
p3d_point_cloud_test_src_do_seek (GstBaseSrc * src, GstSegment * segment)
{
  P3dPointCloudTestSrc *self = P3D_POINT_CLOUD_TEST_SRC (src);

  if (segment->rate < 0) {
    GST_WARNING_OBJECT (self, "reverse playback is not supported");
    return FALSE;
  }
  segment->time = segment->start;
  self->frame = gst_util_uint64_scale (segment->position, self->fps_n,
      (guint64) self->fps_d * GST_SECOND);
  GST_DEBUG_OBJECT (self, "seek to %" GST_TIME_FORMAT ": frame %"
      G_GUINT64_FORMAT, GST_TIME_ARGS (segment->position), self->frame);
  return TRUE;
}

/* Writes the points of the current frame into @buffer's tensor, shrunk
 * to their number. */
static gboolean
fill_points (P3dPointCloudTestSrc * self, GstBuffer * buffer)
{
  gsize n_points = p3d_lidar_scene_render (self->scene, self->channels,
      self->points, NULL);
  gsize size = n_points * self->point_size;
  P3dTensorMap map;
  gchar *why = NULL;

  gst_buffer_resize (buffer, 0, size);
  if (size == 0)
    return TRUE;
  if (!p3d_tensor_map (&map, buffer, &self->layout,
          GST_MAP_WRITE | P3D_MAP_OVERWRITE, &why)) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("Cannot map the points"),
        ("%s", why));
    g_free (why);
    return FALSE;
  }
  memcpy (map.data[0], self->points, size);
  p3d_tensor_unmap (&map);
  return TRUE;
}

/* Writes the true or candidate boxes of the current frame into @buffer:
 * the records, zeros after them, and the count. */
static gboolean
fill_boxes (P3dPointCloudTestSrc * self, GstBuffer * buffer)
{
  guint capacity = self->active_max_boxes, n_boxes, n_written;
  P3dTensorMap map;
  gchar *why = NULL;
  guint32 count;

  if (self->active_emit == P3D_POINT_CLOUD_TEST_SRC_EMIT_BOXES)
    n_boxes = p3d_lidar_scene_get_boxes (self->scene, self->boxes, capacity);
  else
    n_boxes = p3d_lidar_scene_get_candidates (self->scene,
        self->active_candidates_per_object, self->boxes, capacity);
  n_written = MIN (n_boxes, capacity);
  if (n_boxes > capacity && !self->warned_truncated) {
    GST_ELEMENT_WARNING (self, STREAM, FAILED,
        ("Frame %" G_GUINT64_FORMAT " has %u boxes, more than max-boxes "
            "(%u): the rest are dropped", self->frame, n_boxes, capacity),
        ("warned once; raise max-boxes to keep them all"));
    self->warned_truncated = TRUE;
  }

  if (!p3d_tensor_map (&map, buffer, &self->layout,
          GST_MAP_WRITE | P3D_MAP_OVERWRITE, &why)) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("Cannot map the boxes"),
        ("%s", why));
    g_free (why);
    return FALSE;
  }
  memcpy (map.data[P3D_BOXES_TENSOR_RECORDS], self->boxes,
      (gsize) n_written * P3D_BOX3D_RECORD_SIZE);
  memset ((guint8 *) map.data[P3D_BOXES_TENSOR_RECORDS] +
      (gsize) n_written * P3D_BOX3D_RECORD_SIZE, 0,
      (gsize) (capacity - n_written) * P3D_BOX3D_RECORD_SIZE);
  count = n_written;
  memcpy (map.data[P3D_BOXES_TENSOR_COUNT], &count, sizeof (count));
  p3d_tensor_unmap (&map);
  return TRUE;
}

/* A pool buffer holding @frame. */
static GstFlowReturn
render_frame (P3dPointCloudTestSrc * self, guint64 frame, GstBuffer ** out)
{
  GstBuffer *buffer = NULL;
  GstFlowReturn ret;
  gboolean ok;

  ret = gst_buffer_pool_acquire_buffer (self->pool, &buffer, NULL);
  if (ret != GST_FLOW_OK)
    return ret;
  p3d_lidar_scene_set_frame (self->scene, frame);
  if (self->active_emit == P3D_POINT_CLOUD_TEST_SRC_EMIT_POINTS)
    ok = fill_points (self, buffer);
  else
    ok = fill_boxes (self, buffer);
  if (!ok) {
    gst_buffer_unref (buffer);
    return GST_FLOW_ERROR;
  }
  *out = buffer;
  return GST_FLOW_OK;
}

/* A new buffer sharing @frozen's memories, so that it can carry its own
 * timestamps without a copy of the data. */
static GstBuffer *
share_memories (GstBuffer * frozen)
{
  GstBuffer *buffer = gst_buffer_new ();
  guint i;

  for (i = 0; i < gst_buffer_n_memory (frozen); i++)
    gst_buffer_append_memory (buffer,
        gst_memory_ref (gst_buffer_peek_memory (frozen, i)));
  return buffer;
}

static GstFlowReturn
p3d_point_cloud_test_src_create (GstPushSrc * src, GstBuffer ** out)
{
  P3dPointCloudTestSrc *self = P3D_POINT_CLOUD_TEST_SRC (src);
  const P3dLidarSceneParams *params = p3d_lidar_scene_get_params (self->scene);
  GstBuffer *buffer = NULL;
  GstFlowReturn ret;
  guint64 frame = self->frame;
  GstClockTime pts, next;

  if (self->pool == NULL)
    return GST_FLOW_NOT_NEGOTIATED;

  if (params->motion) {
    ret = render_frame (self, frame, &buffer);
    if (ret != GST_FLOW_OK)
      return ret;
  } else {
    if (self->frozen == NULL) {
      ret = render_frame (self, 0, &self->frozen);
      if (ret != GST_FLOW_OK)
        return ret;
    }
    buffer = share_memories (self->frozen);
  }

  pts = gst_util_uint64_scale (frame, (guint64) self->fps_d * GST_SECOND,
      self->fps_n);
  next = gst_util_uint64_scale (frame + 1, (guint64) self->fps_d * GST_SECOND,
      self->fps_n);
  GST_BUFFER_PTS (buffer) = pts;
  GST_BUFFER_DTS (buffer) = pts;
  GST_BUFFER_DURATION (buffer) = next - pts;
  GST_BUFFER_OFFSET (buffer) = frame;
  GST_BUFFER_OFFSET_END (buffer) = frame + 1;
  self->frame = frame + 1;

  GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT ": %" G_GSIZE_FORMAT
      " bytes", frame, gst_buffer_get_size (buffer));
  *out = buffer;
  return GST_FLOW_OK;
}
