/**
 * SECTION:element-cameratestsrc
 * @title: cameratestsrc
 *
 * What one camera of a calibrated rig sees of pointcloudtestsrc's street:
 * the camera counterpart of pointcloudtestsrc, as videotestsrc is of a
 * real camera. The same seed and street properties (cars, pedestrians,
 * cyclists, walls, ground, motion, sensor-height) give the same objects,
 * walls and motion at the same timestamps as pointcloudtestsrc's, so a
 * pipeline with both sources sees one world; frame n shows the street at
 * t = n / framerate.
 *
 * The camera is the entry numbered by the camera property in the
 * calibration file (docs/calibration.md, the format bevpool reads): its
 * intrinsics, its camera-to-lidar transform and, when the file gives it,
 * its image size (else the caps' size, twice the principal point by
 * default). examples/data/rig-nuscenes-704x256.json holds six cameras
 * arranged as nuScenes' rig, at the 704 x 256 input of BEVFusion's and
 * BEVDet's networks.
 *
 * With emit=rgb (the default) each buffer is the colour image, with the
 * street's per-class and per-object colours, sunlight and shadows, ground
 * texture, sky and sensor noise, in RGB or another packed RGB format, I420 or NV12
 * (BT.601, limited range). With emit=depth it is the depth along the
 * optical axis of every pixel, GRAY16_LE in millimetres (0 where nothing
 * was hit, 65535 beyond 65.535 m), and with emit=labels the class of every
 * pixel, GRAY8: 0 car, 1 pedestrian, 2 cyclist (pointcloudtestsrc's box
 * labels), 3 road, 4 lane marking, 5 sidewalk, 6 building, 7 sky. The same
 * seed and properties give the same bytes on every machine.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 cameratestsrc calibration=examples/data/rig-nuscenes-704x256.json \
 *     num-buffers=1 ! pngenc ! filesink location=front.png
 * gst-launch-1.0 cameratestsrc calibration=rig.json camera=3 emit=depth \
 *     ! fakesink
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include "gstcameratestsrc.h"
#include "p3dcamerafile.h"
#include "p3dparamspec.h"

GST_DEBUG_CATEGORY_STATIC (p3d_camera_test_src_debug);
#define GST_CAT_DEFAULT p3d_camera_test_src_debug

enum
{
  PROP_0,
  PROP_CALIBRATION,
  PROP_CAMERA,
  PROP_EMIT,
  PROP_SEED,
  PROP_FRAMERATE,
  PROP_MOTION,
  PROP_CARS,
  PROP_PEDESTRIANS,
  PROP_CYCLISTS,
  PROP_WALLS,
  PROP_GROUND,
  PROP_SENSOR_HEIGHT,
  PROP_SUN_AZIMUTH,
  PROP_SUN_ELEVATION,
  PROP_NOISE,
};

#define DEFAULT_CAMERA 0
#define DEFAULT_EMIT P3D_CAMERA_TEST_SRC_EMIT_RGB
#define DEFAULT_SEED 0
/* pointcloudtestsrc's framerate, so that both sources' frames coincide */
#define DEFAULT_FPS_N 10
#define DEFAULT_FPS_D 1
#define DEFAULT_MOTION TRUE
#define DEFAULT_CARS P3D_STREET_DEFAULT_CARS
#define DEFAULT_PEDESTRIANS P3D_STREET_DEFAULT_PEDESTRIANS
#define DEFAULT_CYCLISTS P3D_STREET_DEFAULT_CYCLISTS
#define DEFAULT_WALLS TRUE
#define DEFAULT_GROUND TRUE
#define DEFAULT_SENSOR_HEIGHT P3D_STREET_DEFAULT_SENSOR_HEIGHT
#define DEFAULT_SUN_AZIMUTH 150.0
#define DEFAULT_SUN_ELEVATION 55.0
#define DEFAULT_NOISE 2.0

#define RGB_FORMATS "RGB, BGR, RGBx, BGRx, xRGB, xBGR, RGBA, BGRA, ARGB, ABGR"
#define YUV_FORMATS "I420, NV12"
#define SIZES \
    "width = (int) [ 1, 16384 ], height = (int) [ 1, 16384 ], " \
    "framerate = (fraction) [ 1/2147483647, 2147483647/1 ], " \
    "pixel-aspect-ratio = (fraction) 1/1"

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("video/x-raw, format = (string) { " RGB_FORMATS ", "
        YUV_FORMATS ", GRAY16_LE, GRAY8 }, " SIZES));

#define P3D_TYPE_CAMERA_TEST_SRC_EMIT (p3d_camera_test_src_emit_get_type ())
static GType
p3d_camera_test_src_emit_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {P3D_CAMERA_TEST_SRC_EMIT_RGB, "The colour image (RGB, the other packed "
          "RGB formats, I420 or NV12)", "rgb"},
    {P3D_CAMERA_TEST_SRC_EMIT_DEPTH, "The depth of every pixel along the "
          "optical axis, GRAY16_LE in millimetres (0: nothing hit, 65535: "
          "65.535 m or more)", "depth"},
    {P3D_CAMERA_TEST_SRC_EMIT_LABELS, "The class of every pixel, GRAY8: 0 "
          "car, 1 pedestrian, 2 cyclist, 3 road, 4 lane marking, 5 sidewalk, "
          "6 building, 7 sky", "labels"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dCameraTestSrcEmit", values);

    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

#define p3d_camera_test_src_parent_class parent_class
G_DEFINE_TYPE (P3dCameraTestSrc, p3d_camera_test_src, GST_TYPE_PUSH_SRC);
GST_ELEMENT_REGISTER_DEFINE (cameratestsrc, "cameratestsrc", GST_RANK_NONE,
    P3D_TYPE_CAMERA_TEST_SRC);

static void p3d_camera_test_src_set_property (GObject * object,
    guint prop_id, const GValue * value, GParamSpec * pspec);
static void p3d_camera_test_src_get_property (GObject * object,
    guint prop_id, GValue * value, GParamSpec * pspec);
static void p3d_camera_test_src_finalize (GObject * object);
static gboolean p3d_camera_test_src_start (GstBaseSrc * src);
static gboolean p3d_camera_test_src_stop (GstBaseSrc * src);
static GstCaps *p3d_camera_test_src_get_caps (GstBaseSrc * src,
    GstCaps * filter);
static GstCaps *p3d_camera_test_src_fixate (GstBaseSrc * src, GstCaps * caps);
static gboolean p3d_camera_test_src_set_caps (GstBaseSrc * src, GstCaps * caps);
static gboolean p3d_camera_test_src_decide_allocation (GstBaseSrc * src,
    GstQuery * query);
static gboolean p3d_camera_test_src_is_seekable (GstBaseSrc * src);
static gboolean p3d_camera_test_src_do_seek (GstBaseSrc * src,
    GstSegment * segment);
static GstFlowReturn p3d_camera_test_src_fill (GstPushSrc * src,
    GstBuffer * buffer);

#define PARAM_FLAGS \
    (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)

static void
p3d_camera_test_src_class_init (P3dCameraTestSrcClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *base_src_class = GST_BASE_SRC_CLASS (klass);
  GstPushSrcClass *push_src_class = GST_PUSH_SRC_CLASS (klass);

  gobject_class->set_property = p3d_camera_test_src_set_property;
  gobject_class->get_property = p3d_camera_test_src_get_property;
  gobject_class->finalize = p3d_camera_test_src_finalize;

  g_object_class_install_property (gobject_class, PROP_CALIBRATION,
      g_param_spec_string ("calibration", "Calibration",
          "JSON calibration file (docs/calibration.md, the format bevpool "
          "reads): the camera's intrinsics, camera-to-lidar transform and "
          "image_size; examples/data/rig-nuscenes-704x256.json has six",
          NULL, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_CAMERA,
      p3d_param_spec_uint ("camera", "Camera",
          "Which camera of the calibration file this source is, from 0 in "
          "the file's order; it also picks the camera's own sensor noise",
          0, G_MAXINT, DEFAULT_CAMERA, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_EMIT,
      g_param_spec_enum ("emit", "Emit",
          "What each buffer holds: the colour image, the depth or the class "
          "of every pixel", P3D_TYPE_CAMERA_TEST_SRC_EMIT, DEFAULT_EMIT,
          PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_SEED,
      p3d_param_spec_uint64 ("seed", "Seed",
          "Places the walls and objects, picks their colours and drives the "
          "noise: the same seed as a pointcloudtestsrc's gives the street it "
          "sees", 0, G_MAXUINT64, DEFAULT_SEED, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_FRAMERATE,
      p3d_param_spec_fraction ("framerate", "Frame rate",
          "Frames per second: the caps' framerate and the buffers' "
          "timestamps; frame n shows the street at n / framerate seconds",
          1, G_MAXINT, G_MAXINT, 1, DEFAULT_FPS_N, DEFAULT_FPS_D, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_MOTION,
      g_param_spec_boolean ("motion", "Motion",
          "Objects move from frame to frame; when false every frame is "
          "frame 0, its noise included", DEFAULT_MOTION, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_CARS,
      p3d_param_spec_uint ("cars", "Cars",
          "Cars in the lanes and the parking lane (as pointcloudtestsrc's)",
          0, P3D_STREET_MAX_CARS, DEFAULT_CARS, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_PEDESTRIANS,
      p3d_param_spec_uint ("pedestrians", "Pedestrians",
          "Pedestrians on the sidewalks (as pointcloudtestsrc's)", 0,
          P3D_STREET_MAX_PEDESTRIANS, DEFAULT_PEDESTRIANS, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_CYCLISTS,
      p3d_param_spec_uint ("cyclists", "Cyclists",
          "Cyclists in the bike lanes (as pointcloudtestsrc's)", 0,
          P3D_STREET_MAX_CYCLISTS, DEFAULT_CYCLISTS, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_WALLS,
      g_param_spec_boolean ("walls", "Walls",
          "Building facades along both sides of the road", DEFAULT_WALLS,
          PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_GROUND,
      g_param_spec_boolean ("ground", "Ground",
          "The ground plane (without it the sky shows below the horizon)",
          DEFAULT_GROUND, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_SENSOR_HEIGHT,
      p3d_param_spec_double ("sensor-height", "Sensor height",
          "Height of the lidar (the origin of the calibration's "
          "camera-to-lidar) above the ground in metres, as "
          "pointcloudtestsrc's: the ground is at z = -sensor-height", 0.0,
          100.0, DEFAULT_SENSOR_HEIGHT, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_SUN_AZIMUTH,
      p3d_param_spec_double ("sun-azimuth", "Sun azimuth",
          "Where the sunlight comes from, degrees from forward (+x) towards "
          "the left (+y)", -360.0, 360.0, DEFAULT_SUN_AZIMUTH, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_SUN_ELEVATION,
      p3d_param_spec_double ("sun-elevation", "Sun elevation",
          "Height of the sun above the horizon in degrees (90: overhead); "
          "boxes cast shadows on the ground from 5 degrees up",
          0.0, 90.0, DEFAULT_SUN_ELEVATION, PARAM_FLAGS));
  g_object_class_install_property (gobject_class, PROP_NOISE,
      p3d_param_spec_double ("noise", "Noise",
          "Standard deviation of the sensor noise added to each colour "
          "channel, in levels of 255 (0: none); depth and labels have none",
          0.0, P3D_CAMERA_RENDER_MAX_NOISE, DEFAULT_NOISE, PARAM_FLAGS));

  gst_element_class_set_static_metadata (element_class,
      "Camera test source", "Source/Video",
      "One camera of a calibrated rig looking at pointcloudtestsrc's street, "
      "deterministic; or its per-pixel depth or class",
      "gst-perception developers");
  gst_element_class_add_static_pad_template (element_class, &src_template);

  base_src_class->start = GST_DEBUG_FUNCPTR (p3d_camera_test_src_start);
  base_src_class->stop = GST_DEBUG_FUNCPTR (p3d_camera_test_src_stop);
  base_src_class->get_caps = GST_DEBUG_FUNCPTR (p3d_camera_test_src_get_caps);
  base_src_class->fixate = GST_DEBUG_FUNCPTR (p3d_camera_test_src_fixate);
  base_src_class->set_caps = GST_DEBUG_FUNCPTR (p3d_camera_test_src_set_caps);
  base_src_class->decide_allocation =
      GST_DEBUG_FUNCPTR (p3d_camera_test_src_decide_allocation);
  base_src_class->is_seekable =
      GST_DEBUG_FUNCPTR (p3d_camera_test_src_is_seekable);
  base_src_class->do_seek = GST_DEBUG_FUNCPTR (p3d_camera_test_src_do_seek);
  push_src_class->fill = GST_DEBUG_FUNCPTR (p3d_camera_test_src_fill);

  gst_type_mark_as_plugin_api (P3D_TYPE_CAMERA_TEST_SRC_EMIT, 0);

  GST_DEBUG_CATEGORY_INIT (p3d_camera_test_src_debug, "cameratestsrc", 0,
      "Synthetic camera source");
}

static void
p3d_camera_test_src_init (P3dCameraTestSrc * self)
{
  p3d_street_params_init (&self->street_params);
  self->street_params.seed = DEFAULT_SEED;
  self->street_params.motion = DEFAULT_MOTION;
  self->street_params.walls = DEFAULT_WALLS;
  self->street_params.ground = DEFAULT_GROUND;
  self->camera = DEFAULT_CAMERA;
  self->emit = DEFAULT_EMIT;
  self->fps_n = DEFAULT_FPS_N;
  self->fps_d = DEFAULT_FPS_D;
  self->sun_azimuth = DEFAULT_SUN_AZIMUTH;
  self->sun_elevation = DEFAULT_SUN_ELEVATION;
  self->noise = DEFAULT_NOISE;
  gst_video_info_init (&self->info);

  gst_base_src_set_format (GST_BASE_SRC (self), GST_FORMAT_TIME);
  gst_base_src_set_live (GST_BASE_SRC (self), FALSE);
  p3d_object_watch_properties (G_OBJECT (self), GST_ELEMENT (self));
}

static void
p3d_camera_test_src_finalize (GObject * object)
{
  P3dCameraTestSrc *self = P3D_CAMERA_TEST_SRC (object);

  /* stop() normally released these; not when start() failed half-way */
  p3d_street_free (self->street);
  p3d_camera_render_free (self->render);
  g_free (self->rgb);
  g_free (self->calibration);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
p3d_camera_test_src_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dCameraTestSrc *self = P3D_CAMERA_TEST_SRC (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_CALIBRATION:
      g_free (self->calibration);
      self->calibration = g_value_dup_string (value);
      break;
    case PROP_CAMERA:
      self->camera = g_value_get_uint (value);
      break;
    case PROP_EMIT:
      self->emit = g_value_get_enum (value);
      break;
    case PROP_SEED:
      self->street_params.seed = g_value_get_uint64 (value);
      break;
    case PROP_FRAMERATE:
      self->fps_n = gst_value_get_fraction_numerator (value);
      self->fps_d = gst_value_get_fraction_denominator (value);
      break;
    case PROP_MOTION:
      self->street_params.motion = g_value_get_boolean (value);
      break;
    case PROP_CARS:
      self->street_params.cars = g_value_get_uint (value);
      break;
    case PROP_PEDESTRIANS:
      self->street_params.pedestrians = g_value_get_uint (value);
      break;
    case PROP_CYCLISTS:
      self->street_params.cyclists = g_value_get_uint (value);
      break;
    case PROP_WALLS:
      self->street_params.walls = g_value_get_boolean (value);
      break;
    case PROP_GROUND:
      self->street_params.ground = g_value_get_boolean (value);
      break;
    case PROP_SENSOR_HEIGHT:
      self->street_params.sensor_height = g_value_get_double (value);
      break;
    case PROP_SUN_AZIMUTH:
      self->sun_azimuth = g_value_get_double (value);
      break;
    case PROP_SUN_ELEVATION:
      self->sun_elevation = g_value_get_double (value);
      break;
    case PROP_NOISE:
      self->noise = g_value_get_double (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
p3d_camera_test_src_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  P3dCameraTestSrc *self = P3D_CAMERA_TEST_SRC (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_CALIBRATION:
      g_value_set_string (value, self->calibration);
      break;
    case PROP_CAMERA:
      g_value_set_uint (value, self->camera);
      break;
    case PROP_EMIT:
      g_value_set_enum (value, self->emit);
      break;
    case PROP_SEED:
      g_value_set_uint64 (value, self->street_params.seed);
      break;
    case PROP_FRAMERATE:
      gst_value_set_fraction (value, self->fps_n, self->fps_d);
      break;
    case PROP_MOTION:
      g_value_set_boolean (value, self->street_params.motion);
      break;
    case PROP_CARS:
      g_value_set_uint (value, self->street_params.cars);
      break;
    case PROP_PEDESTRIANS:
      g_value_set_uint (value, self->street_params.pedestrians);
      break;
    case PROP_CYCLISTS:
      g_value_set_uint (value, self->street_params.cyclists);
      break;
    case PROP_WALLS:
      g_value_set_boolean (value, self->street_params.walls);
      break;
    case PROP_GROUND:
      g_value_set_boolean (value, self->street_params.ground);
      break;
    case PROP_SENSOR_HEIGHT:
      g_value_set_double (value, self->street_params.sensor_height);
      break;
    case PROP_SUN_AZIMUTH:
      g_value_set_double (value, self->sun_azimuth);
      break;
    case PROP_SUN_ELEVATION:
      g_value_set_double (value, self->sun_elevation);
      break;
    case PROP_NOISE:
      g_value_set_double (value, self->noise);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static gboolean
p3d_camera_test_src_start (GstBaseSrc * src)
{
  P3dCameraTestSrc *self = P3D_CAMERA_TEST_SRC (src);
  P3dStreetParams params;
  const gchar *property;
  gchar *path, *why = NULL, *name = NULL;
  guint camera;
  gboolean ok;

  if (!p3d_element_check_properties (GST_ELEMENT (self)))
    return FALSE;

  GST_OBJECT_LOCK (self);
  params = self->street_params;
  path = g_strdup (self->calibration);
  camera = self->camera;
  self->active_emit = self->emit;
  self->active_fps_n = self->fps_n;
  self->active_fps_d = self->fps_d;
  self->render_params.camera_index = camera;
  self->render_params.sun_azimuth = self->sun_azimuth;
  self->render_params.sun_elevation = self->sun_elevation;
  self->render_params.noise = self->noise;
  GST_OBJECT_UNLOCK (self);

  property = p3d_street_params_check (&params, &why);
  if (property != NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Invalid property %s: %s", property, why), (NULL));
    g_free (why);
    g_free (path);
    return FALSE;
  }
  ok = p3d_camera_file_load (GST_ELEMENT (self), path, camera,
      &self->active_camera, &name);
  g_free (path);
  if (!ok)
    return FALSE;

  self->street = p3d_street_new (&params);
  self->frame = 0;
  GST_DEBUG_OBJECT (self, "camera %u (%s), image %u x %u (0: from the caps), "
      "street of %u objects", camera, name, self->active_camera.width,
      self->active_camera.height, p3d_street_get_n_objects (self->street));
  g_free (name);
  return TRUE;
}

static gboolean
p3d_camera_test_src_stop (GstBaseSrc * src)
{
  P3dCameraTestSrc *self = P3D_CAMERA_TEST_SRC (src);

  p3d_street_free (self->street);
  self->street = NULL;
  p3d_camera_render_free (self->render);
  self->render = NULL;
  g_clear_pointer (&self->rgb, g_free);
  self->rgb_size = 0;
  gst_video_info_init (&self->info);
  return TRUE;
}

/* The formats of @emit, the preferred first. */
static const gchar *
formats_of (P3dCameraTestSrcEmit emit)
{
  switch (emit) {
    case P3D_CAMERA_TEST_SRC_EMIT_DEPTH:
      return "GRAY16_LE";
    case P3D_CAMERA_TEST_SRC_EMIT_LABELS:
      return "GRAY8";
    default:
      return RGB_FORMATS;
  }
}

/* One structure of @formats at the camera's size (a range when the file
 * gives none) and the framerate. */
static GstStructure *
caps_structure (P3dCameraTestSrc * self, const gchar * formats)
{
  gchar *text = g_strdup_printf ("video/x-raw, format = (string) { %s }, "
      SIZES, formats);
  GstStructure *s = gst_structure_from_string (text, NULL);

  g_free (text);
  if (self->active_camera.width > 0)
    gst_structure_set (s, "width", G_TYPE_INT, (gint)
        self->active_camera.width, "height", G_TYPE_INT,
        (gint) self->active_camera.height, NULL);
  gst_structure_set (s, "framerate", GST_TYPE_FRACTION, self->active_fps_n,
      self->active_fps_d, NULL);
  return s;
}

/* Before start() the template; then what the emit mode, the camera and
 * the framerate allow. */
static GstCaps *
p3d_camera_test_src_get_caps (GstBaseSrc * src, GstCaps * filter)
{
  P3dCameraTestSrc *self = P3D_CAMERA_TEST_SRC (src);
  GstCaps *caps;

  if (self->street == NULL) {
    caps = gst_pad_get_pad_template_caps (GST_BASE_SRC_PAD (src));
  } else {
    caps = gst_caps_new_empty ();
    gst_caps_append_structure (caps, caps_structure (self,
            formats_of (self->active_emit)));
    if (self->active_emit == P3D_CAMERA_TEST_SRC_EMIT_RGB) {
      GstStructure *yuv = caps_structure (self, YUV_FORMATS);

      /* what the conversion writes: BT.601 limited range, chroma at the
       * centre of each 2 x 2 block */
      gst_structure_set (yuv, "colorimetry", G_TYPE_STRING, "bt601",
          "chroma-site", G_TYPE_STRING, "jpeg", NULL);
      gst_caps_append_structure (caps, yuv);
    }
  }
  if (filter) {
    GstCaps *both = gst_caps_intersect_full (filter, caps,
        GST_CAPS_INTERSECT_FIRST);

    gst_caps_unref (caps);
    caps = both;
  }
  GST_LOG_OBJECT (self, "caps %" GST_PTR_FORMAT, caps);
  return caps;
}

/* Without an image size in the file, the image whose centre is the
 * principal point. */
static GstCaps *
p3d_camera_test_src_fixate (GstBaseSrc * src, GstCaps * caps)
{
  P3dCameraTestSrc *self = P3D_CAMERA_TEST_SRC (src);
  gint width = (gint) CLAMP (floor (2.0 * self->active_camera.cx + 0.5), 1,
      P3D_CAMERA_RENDER_MAX_SIDE);
  gint height = (gint) CLAMP (floor (2.0 * self->active_camera.cy + 0.5), 1,
      P3D_CAMERA_RENDER_MAX_SIDE);
  guint i;

  caps = gst_caps_make_writable (caps);
  for (i = 0; i < gst_caps_get_size (caps); i++) {
    GstStructure *s = gst_caps_get_structure (caps, i);

    gst_structure_fixate_field_nearest_int (s, "width", width);
    gst_structure_fixate_field_nearest_int (s, "height", height);
  }
  return GST_BASE_SRC_CLASS (parent_class)->fixate (src, caps);
}

static gboolean
p3d_camera_test_src_set_caps (GstBaseSrc * src, GstCaps * caps)
{
  P3dCameraTestSrc *self = P3D_CAMERA_TEST_SRC (src);
  P3dCameraRenderParams params = self->render_params;
  GstVideoInfo info;
  gsize rgb_size;

  GST_DEBUG_OBJECT (self, "caps %" GST_PTR_FORMAT, caps);
  if (!gst_video_info_from_caps (&info, caps)) {
    GST_WARNING_OBJECT (self, "cannot produce %" GST_PTR_FORMAT, caps);
    return FALSE;
  }
  params.width = GST_VIDEO_INFO_WIDTH (&info);
  params.height = GST_VIDEO_INFO_HEIGHT (&info);
  p3d_camera_render_free (self->render);
  self->render = p3d_camera_render_new (&self->active_camera, &params);
  if (self->render == NULL) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Cannot render %d x %d pixels: a camera renders at most %d pixels",
            GST_VIDEO_INFO_WIDTH (&info), GST_VIDEO_INFO_HEIGHT (&info),
            P3D_CAMERA_RENDER_MAX_PIXELS), ("caps %" GST_PTR_FORMAT, caps));
    return FALSE;
  }
  rgb_size = (gsize) params.width * params.height * 3;
  if (self->rgb_size < rgb_size) {
    g_free (self->rgb);
    self->rgb = g_malloc (rgb_size);
    self->rgb_size = rgb_size;
  }
  self->info = info;
  return TRUE;
}

/* Downstream's pool when it offers one, else a video pool of our own; the
 * video meta when downstream reads it, since the frame is written through
 * its strides. */
static gboolean
p3d_camera_test_src_decide_allocation (GstBaseSrc * src, GstQuery * query)
{
  P3dCameraTestSrc *self = P3D_CAMERA_TEST_SRC (src);
  GstBufferPool *pool = NULL;
  GstStructure *config;
  GstCaps *caps = NULL;
  GstVideoInfo info;
  guint size = 0, min = 0, max = 0;
  gboolean offered, video_meta;

  gst_query_parse_allocation (query, &caps, NULL);
  if (caps == NULL || !gst_video_info_from_caps (&info, caps))
    return FALSE;
  offered = gst_query_get_n_allocation_pools (query) > 0;
  if (offered)
    gst_query_parse_nth_allocation_pool (query, 0, &pool, &size, &min, &max);
  size = MAX (size, (guint) GST_VIDEO_INFO_SIZE (&info));
  video_meta = gst_query_find_allocation_meta (query, GST_VIDEO_META_API_TYPE,
      NULL);

  if (pool != NULL) {
    config = gst_buffer_pool_get_config (pool);
    gst_buffer_pool_config_set_params (config, caps, size, min, max);
    if (video_meta && gst_buffer_pool_has_option (pool,
            GST_BUFFER_POOL_OPTION_VIDEO_META))
      gst_buffer_pool_config_add_option (config,
          GST_BUFFER_POOL_OPTION_VIDEO_META);
    /* a pool that changes the configuration, or refuses it, is not used */
    if (!gst_buffer_pool_set_config (pool, config))
      gst_clear_object (&pool);
  }
  if (pool == NULL) {
    pool = gst_video_buffer_pool_new ();
    config = gst_buffer_pool_get_config (pool);
    gst_buffer_pool_config_set_params (config, caps, size, min, max);
    if (video_meta)
      gst_buffer_pool_config_add_option (config,
          GST_BUFFER_POOL_OPTION_VIDEO_META);
    if (!gst_buffer_pool_set_config (pool, config)) {
      GST_WARNING_OBJECT (self, "video buffer pool refused its configuration");
      gst_object_unref (pool);
      return FALSE;
    }
  }
  if (offered)
    gst_query_set_nth_allocation_pool (query, 0, pool, size, min, max);
  else
    gst_query_add_allocation_pool (query, pool, size, min, max);
  gst_object_unref (pool);
  return TRUE;
}

static gboolean
p3d_camera_test_src_is_seekable (GstBaseSrc * src)
{
  return TRUE;
}

/* The frame index drives the street, so a seek is only a new index. */
static gboolean
p3d_camera_test_src_do_seek (GstBaseSrc * src, GstSegment * segment)
{
  P3dCameraTestSrc *self = P3D_CAMERA_TEST_SRC (src);

  if (segment->rate < 0) {
    GST_WARNING_OBJECT (self, "reverse playback is not supported");
    return FALSE;
  }
  segment->time = segment->start;
  self->frame = gst_util_uint64_scale (segment->position, self->active_fps_n,
      (guint64) self->active_fps_d * GST_SECOND);
  GST_DEBUG_OBJECT (self, "seek to %" GST_TIME_FORMAT ": frame %"
      G_GUINT64_FORMAT, GST_TIME_ARGS (segment->position), self->frame);
  return TRUE;
}

/* The packed RGB image @rgb into @frame's packed RGB format: each
 * component where the format keeps it, alpha and padding bytes 255. */
static void
write_packed (const guint8 * rgb, gsize rgb_stride, GstVideoFrame * frame)
{
  const GstVideoFormatInfo *finfo = frame->info.finfo;
  gint width = GST_VIDEO_FRAME_WIDTH (frame);
  gint height = GST_VIDEO_FRAME_HEIGHT (frame);
  gint pixel = GST_VIDEO_FRAME_COMP_PSTRIDE (frame, 0);
  gint r = GST_VIDEO_FORMAT_INFO_POFFSET (finfo, GST_VIDEO_COMP_R);
  gint g = GST_VIDEO_FORMAT_INFO_POFFSET (finfo, GST_VIDEO_COMP_G);
  gint b = GST_VIDEO_FORMAT_INFO_POFFSET (finfo, GST_VIDEO_COMP_B);
  guint8 *data = GST_VIDEO_FRAME_PLANE_DATA (frame, 0);
  gsize stride = (gsize) GST_VIDEO_FRAME_PLANE_STRIDE (frame, 0);
  gint row, column;

  for (row = 0; row < height; row++) {
    const guint8 *in = rgb + row * rgb_stride;
    guint8 *out = data + row * stride;

    if (pixel == 4)
      memset (out, 0xff, (gsize) width * 4);
    for (column = 0; column < width; column++, in += 3, out += pixel) {
      out[r] = in[0];
      out[g] = in[1];
      out[b] = in[2];
    }
  }
}

/* BT.601 limited range, in integers: the offsets (16 << 8, 128 << 8, plus
 * a half for the rounding) keep every sum positive, so the shifts are
 * divisions. */
static inline guint8
luma (gint r, gint g, gint b)
{
  return (guint8) ((66 * r + 129 * g + 25 * b + 4224) >> 8);
}

static inline guint8
chroma_u (gint r, gint g, gint b)
{
  return (guint8) ((-38 * r - 74 * g + 112 * b + 32896) >> 8);
}

static inline guint8
chroma_v (gint r, gint g, gint b)
{
  return (guint8) ((112 * r - 94 * g - 18 * b + 32896) >> 8);
}

/* The packed RGB image @rgb into @frame, I420 or NV12: luma per pixel,
 * chroma from the mean colour (rounded) of each 2 x 2 block (of the pixels
 * there are, at an odd edge). */
static void
write_yuv (const guint8 * rgb, gsize rgb_stride, GstVideoFrame * frame)
{
  gboolean nv12 = GST_VIDEO_FRAME_FORMAT (frame) == GST_VIDEO_FORMAT_NV12;
  gint width = GST_VIDEO_FRAME_WIDTH (frame);
  gint height = GST_VIDEO_FRAME_HEIGHT (frame);
  guint8 *y_plane = GST_VIDEO_FRAME_PLANE_DATA (frame, 0);
  gsize y_stride = (gsize) GST_VIDEO_FRAME_PLANE_STRIDE (frame, 0);
  gint row, column;

  for (row = 0; row < height; row++) {
    const guint8 *in = rgb + row * rgb_stride;
    guint8 *out = y_plane + row * y_stride;

    for (column = 0; column < width; column++, in += 3)
      out[column] = luma (in[0], in[1], in[2]);
  }
  for (row = 0; row < (height + 1) / 2; row++) {
    guint8 *u_out, *v_out;
    gint step;

    if (nv12) {
      u_out = (guint8 *) GST_VIDEO_FRAME_PLANE_DATA (frame, 1) +
          row * (gsize) GST_VIDEO_FRAME_PLANE_STRIDE (frame, 1);
      v_out = u_out + 1;
      step = 2;
    } else {
      u_out = (guint8 *) GST_VIDEO_FRAME_PLANE_DATA (frame, 1) +
          row * (gsize) GST_VIDEO_FRAME_PLANE_STRIDE (frame, 1);
      v_out = (guint8 *) GST_VIDEO_FRAME_PLANE_DATA (frame, 2) +
          row * (gsize) GST_VIDEO_FRAME_PLANE_STRIDE (frame, 2);
      step = 1;
    }
    for (column = 0; column < (width + 1) / 2; column++) {
      gint sum[3] = { 0, 0, 0 }, n = 0, dy, dx, k;

      for (dy = 0; dy < 2 && 2 * row + dy < height; dy++)
        for (dx = 0; dx < 2 && 2 * column + dx < width; dx++) {
          const guint8 *p = rgb + (2 * row + dy) * rgb_stride +
              (2 * column + dx) * 3;

          for (k = 0; k < 3; k++)
            sum[k] += p[k];
          n++;
        }
      for (k = 0; k < 3; k++)
        sum[k] = (sum[k] + n / 2) / n;
      u_out[column * step] = chroma_u (sum[0], sum[1], sum[2]);
      v_out[column * step] = chroma_v (sum[0], sum[1], sum[2]);
    }
  }
}

static GstFlowReturn
p3d_camera_test_src_fill (GstPushSrc * src, GstBuffer * buffer)
{
  P3dCameraTestSrc *self = P3D_CAMERA_TEST_SRC (src);
  const P3dStreetParams *params;
  guint64 frame = self->frame, noise_frame;
  GstClockTime pts, next;
  GstVideoFrame video;
  gsize rgb_stride;

  if (self->render == NULL)
    return GST_FLOW_NOT_NEGOTIATED;
  if (!gst_video_frame_map (&video, &self->info, buffer, GST_MAP_WRITE)) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("Cannot map the output frame"),
        (NULL));
    return GST_FLOW_ERROR;
  }

  params = p3d_street_get_params (self->street);
  noise_frame = params->motion ? frame : 0;
  p3d_street_set_frame (self->street, frame, self->active_fps_n,
      self->active_fps_d);
  p3d_camera_render_trace (self->render, self->street);
  switch (GST_VIDEO_FRAME_FORMAT (&video)) {
    case GST_VIDEO_FORMAT_GRAY16_LE:
      p3d_camera_render_depth (self->render,
          GST_VIDEO_FRAME_PLANE_DATA (&video, 0),
          GST_VIDEO_FRAME_PLANE_STRIDE (&video, 0));
      break;
    case GST_VIDEO_FORMAT_GRAY8:
      p3d_camera_render_labels (self->render, self->street,
          GST_VIDEO_FRAME_PLANE_DATA (&video, 0),
          GST_VIDEO_FRAME_PLANE_STRIDE (&video, 0));
      break;
    case GST_VIDEO_FORMAT_RGB:
      /* straight into the frame */
      p3d_camera_render_rgb (self->render, self->street, noise_frame,
          GST_VIDEO_FRAME_PLANE_DATA (&video, 0),
          GST_VIDEO_FRAME_PLANE_STRIDE (&video, 0));
      break;
    default:
      rgb_stride = (gsize) GST_VIDEO_FRAME_WIDTH (&video) * 3;
      p3d_camera_render_rgb (self->render, self->street, noise_frame,
          self->rgb, rgb_stride);
      if (GST_VIDEO_FRAME_FORMAT (&video) == GST_VIDEO_FORMAT_I420
          || GST_VIDEO_FRAME_FORMAT (&video) == GST_VIDEO_FORMAT_NV12)
        write_yuv (self->rgb, rgb_stride, &video);
      else
        write_packed (self->rgb, rgb_stride, &video);
      break;
  }
  gst_video_frame_unmap (&video);

  pts = gst_util_uint64_scale (frame, (guint64) self->active_fps_d *
      GST_SECOND, self->active_fps_n);
  next = gst_util_uint64_scale (frame + 1, (guint64) self->active_fps_d *
      GST_SECOND, self->active_fps_n);
  GST_BUFFER_PTS (buffer) = pts;
  GST_BUFFER_DTS (buffer) = pts;
  GST_BUFFER_DURATION (buffer) = next - pts;
  GST_BUFFER_OFFSET (buffer) = frame;
  GST_BUFFER_OFFSET_END (buffer) = frame + 1;
  self->frame = frame + 1;
  GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT, frame);
  return GST_FLOW_OK;
}
