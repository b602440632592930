/**
 * SECTION:element-camencode
 * @title: camencode
 *
 * The camera half of a BEVDet-style detector: the frames of a rig's
 * cameras, one request pad each (sink_0 is camera 0 of the model's rig,
 * and so on), are matched into sets by running time; each camera's frame
 * is resized, cropped and normalised as the model's test-time pipeline
 * does it (BEVDet: PIL's bicubic resize by input_width / width +
 * resize_test, a crop of the network's input at the bottom centre,
 * torchvision's normalisation), and the model's "image" network (ResNet,
 * FPN, the depth net) runs on the whole rig as one batch. The output,
 * application/x-camera-features, holds its context features and depth
 * probabilities for bevpool, and its caps carry the transform each camera
 * got (image-width, image-height, image-aug), so that bevpool projects the
 * frustum the network saw.
 *
 * Frames: video/x-raw in RGB, BGR, RGBA, BGRA, RGBx, BGRx, xRGB, xBGR,
 * ARGB, ABGR, I420, YV12, NV12 or NV21, of any size the model's
 * transform keeps the network's input inside of, in system memory or in
 * our CUDA memory; each camera its own size. A YUV frame becomes RGB as
 * libjpeg decodes a JPEG (the matrix and range of its colorimetry), so
 * that "jpegdec idct-method=islow ! camencode" gives the
 * network exactly the pixels BEVDet's PIL pipeline gives it from the same
 * JPEG. The CUDA path equals the reference path bit for bit up to the
 * network, whose arithmetic the precision property chooses.
 *
 * Sets: set n covers the running time [t0 + n / fps, t0 + (n + 1) / fps)
 * (fps: the highest framerate of the cameras' caps, 10/1 when none gives
 * one; t0: the earliest first frame), as compositor's output frames do;
 * each camera contributes its newest frame that starts in it. A frame
 * without a timestamp counts for the next set. Not live, a set waits until
 * each camera has a frame for it, a later frame, or EOS; live, it waits up
 * to the end of its time plus the latency property. A camera with no frame
 * in a set (late, missing, or at EOS) is handled as missing-camera says:
 * its last frame again (repeat, the default), no output for that set
 * (drop), or an error; never a stall. The stream ends when every camera is
 * at EOS and its frames are used.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 camencode name=enc weights=bevdet.safetensors \
 *     ! bevpool calibration=nuscenes-bevdet.json xbound="<-51.2,51.2,0.8>" \
 *       ybound="<-51.2,51.2,0.8>" zbound="<-10,10,20>" dbound="<1,60,1>" \
 *     ! bevdetect weights=bevdet.safetensors ! boxenc ! filesink location=boxes.jsonl \
 *   filesrc location=front_left.jpg ! jpegdec idct-method=islow ! enc.sink_0 \
 *   filesrc location=front.jpg ! jpegdec idct-method=islow ! enc.sink_1 \
 *   ...
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include "gstcamencode.h"
#include "half.h"
#include "p3dmodelfile.h"
#include "p3dparamspec.h"
#include "runtime.h"

GST_DEBUG_CATEGORY_STATIC (p3d_cam_encode_debug);
#define GST_CAT_DEFAULT p3d_cam_encode_debug
GST_DEBUG_CATEGORY_STATIC (GST_CAT_PERFORMANCE);

enum
{
  PROP_0,
  PROP_WEIGHTS,
  PROP_BACKEND,
  PROP_CUDA_DEVICE_ID,
  PROP_ACTIVE_BACKEND,
  PROP_PRECISION,
  PROP_MISSING_CAMERA,
  PROP_SETS_DROPPED,
  PROP_FRAMES_REPEATED,
};

#define DEFAULT_BACKEND P3D_BACKEND_AUTO
#define DEFAULT_CUDA_DEVICE_ID -1
#define DEFAULT_PRECISION P3D_PRECISION_F16
#define DEFAULT_MISSING_CAMERA P3D_CAM_ENCODE_MISSING_REPEAT
/* The rate of the sets when no camera's caps give one. */
#define DEFAULT_FPS_N 10
#define DEFAULT_FPS_D 1

#define VIDEO_FORMATS "{ RGB, BGR, RGBA, BGRA, RGBx, BGRx, xRGB, xBGR, " \
    "ARGB, ABGR, I420, YV12, NV12, NV21 }"
/* no framerate field: frames of still images come without one */
#define VIDEO_FIELDS "format = (string) " VIDEO_FORMATS ", " \
    "width = (int) [ 1, 16384 ], height = (int) [ 1, 16384 ]"

#define P3D_TYPE_CAM_ENCODE_MISSING (p3d_cam_encode_missing_get_type ())
static GType
p3d_cam_encode_missing_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {P3D_CAM_ENCODE_MISSING_REPEAT, "Use the camera's last frame again "
          "(frames-repeated counts them); a set is dropped while a camera "
          "has sent no frame yet", "repeat"},
    {P3D_CAM_ENCODE_MISSING_DROP, "Output nothing for that set "
          "(sets-dropped counts them)", "drop"},
    {P3D_CAM_ENCODE_MISSING_ERROR, "Stop with an error naming the camera",
        "error"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dCamEncodeMissing", values);

    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

/* The pad. */

G_DEFINE_TYPE (P3dCamEncodePad, p3d_cam_encode_pad, GST_TYPE_AGGREGATOR_PAD);

static void
p3d_cam_encode_pad_forget (P3dCamEncodePad * pad)
{
  gst_clear_buffer (&pad->frame);
  pad->frame_time = GST_CLOCK_TIME_NONE;
  pad->fresh = FALSE;
}

static void
p3d_cam_encode_pad_finalize (GObject * object)
{
  p3d_cam_encode_pad_forget (P3D_CAM_ENCODE_PAD (object));
  G_OBJECT_CLASS (p3d_cam_encode_pad_parent_class)->finalize (object);
}

static void
p3d_cam_encode_pad_class_init (P3dCamEncodePadClass * klass)
{
  G_OBJECT_CLASS (klass)->finalize = p3d_cam_encode_pad_finalize;
}

static void
p3d_cam_encode_pad_init (P3dCamEncodePad * pad)
{
  gst_video_info_init (&pad->info);
  gst_video_info_init (&pad->frame_info);
  pad->frame_time = GST_CLOCK_TIME_NONE;
}

/* The element. */

static GstStaticPadTemplate sink_template =
    GST_STATIC_PAD_TEMPLATE ("sink_%u", GST_PAD_SINK, GST_PAD_REQUEST,
    GST_STATIC_CAPS ("video/x-raw, " VIDEO_FIELDS "; video/x-raw("
        P3D_CAPS_FEATURE_MEMORY_CUDA "), " VIDEO_FIELDS));

#define p3d_cam_encode_parent_class parent_class
G_DEFINE_TYPE_WITH_CODE (P3dCamEncode, p3d_cam_encode, GST_TYPE_AGGREGATOR,
    GST_DEBUG_CATEGORY_INIT (p3d_cam_encode_debug, "camencode", 0,
        "Camera encoder");
    GST_DEBUG_CATEGORY_GET (GST_CAT_PERFORMANCE, "GST_PERFORMANCE"));
GST_ELEMENT_REGISTER_DEFINE (camencode, "camencode", GST_RANK_NONE,
    P3D_TYPE_CAM_ENCODE);

static void p3d_cam_encode_finalize (GObject * object);
static void p3d_cam_encode_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void p3d_cam_encode_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static void p3d_cam_encode_set_context (GstElement * element,
    GstContext * context);
static gboolean p3d_cam_encode_start (GstAggregator * agg);
static gboolean p3d_cam_encode_stop (GstAggregator * agg);
static GstFlowReturn p3d_cam_encode_flush (GstAggregator * agg);
static GstAggregatorPad *p3d_cam_encode_create_new_pad (GstAggregator * agg,
    GstPadTemplate * templ, const gchar * req_name, const GstCaps * caps);
static gboolean p3d_cam_encode_sink_event (GstAggregator * agg,
    GstAggregatorPad * aggpad, GstEvent * event);
static gboolean p3d_cam_encode_sink_query (GstAggregator * agg,
    GstAggregatorPad * aggpad, GstQuery * query);
static gboolean p3d_cam_encode_src_query (GstAggregator * agg,
    GstQuery * query);
static GstBuffer *p3d_cam_encode_clip (GstAggregator * agg,
    GstAggregatorPad * aggpad, GstBuffer * buffer);
static GstFlowReturn p3d_cam_encode_update_src_caps (GstAggregator * agg,
    GstCaps * caps, GstCaps ** ret);
static GstCaps *p3d_cam_encode_fixate_src_caps (GstAggregator * agg,
    GstCaps * caps);
static gboolean p3d_cam_encode_negotiated_src_caps (GstAggregator * agg,
    GstCaps * caps);
static gboolean p3d_cam_encode_propose_allocation (GstAggregator * agg,
    GstAggregatorPad * pad, GstQuery * decide_query, GstQuery * query);
static gboolean p3d_cam_encode_decide_allocation (GstAggregator * agg,
    GstQuery * query);
static GstClockTime p3d_cam_encode_get_next_time (GstAggregator * agg);
static GstFlowReturn p3d_cam_encode_aggregate (GstAggregator * agg,
    gboolean timeout);

static void
p3d_cam_encode_class_init (P3dCamEncodeClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstAggregatorClass *agg_class = GST_AGGREGATOR_CLASS (klass);
  GstCaps *src_caps, *media_caps;

  gobject_class->finalize = p3d_cam_encode_finalize;
  gobject_class->set_property = p3d_cam_encode_set_property;
  gobject_class->get_property = p3d_cam_encode_get_property;
  element_class->set_context = GST_DEBUG_FUNCPTR (p3d_cam_encode_set_context);

  g_object_class_install_property (gobject_class, PROP_WEIGHTS,
      g_param_spec_string ("weights", "Weights",
          "Path of the camera model's safetensors file (docs/weights.md): "
          "its image network's weights, its cameras and their test-time "
          "preprocessing. Required; the model's cameras are the sink pads "
          "sink_0 ... sink_N-1, in its order", NULL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_BACKEND,
      g_param_spec_enum ("backend", "Backend",
          "Where sets are processed: auto takes the CUDA path when a device "
          "is found when the element starts and the C reference path "
          "otherwise; cuda fails to start without a device; cpu always takes "
          "the reference path", P3D_TYPE_BACKEND, DEFAULT_BACKEND,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_CUDA_DEVICE_ID,
      p3d_param_spec_int ("cuda-device-id", "CUDA device ID",
          "The CUDA device to run on; -1: the device the pipeline already "
          "uses (shared by the other elements), else device 0; frames on "
          "another device are copied to it", -1, G_MAXINT32,
          DEFAULT_CUDA_DEVICE_ID, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_ACTIVE_BACKEND,
      g_param_spec_enum ("active-backend", "Active backend",
          "The path sets take since the element started: cuda or cpu (auto "
          "before it starts)", P3D_TYPE_BACKEND, P3D_BACKEND_AUTO,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_PRECISION,
      g_param_spec_enum ("precision", "Precision",
          "Storage of the network on the device (the reference path "
          "computes in F32 whatever this says); also the output format "
          "offered first", P3D_TYPE_PRECISION, DEFAULT_PRECISION,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_MISSING_CAMERA,
      g_param_spec_enum ("missing-camera", "Missing camera",
          "What a set in which a camera has no frame (late, missing, or at "
          "EOS) gets; a set waits for the cameras until a later frame "
          "or EOS shows that none is coming (live: until its end plus the "
          "latency property)", P3D_TYPE_CAM_ENCODE_MISSING,
          DEFAULT_MISSING_CAMERA, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_SETS_DROPPED,
      g_param_spec_uint64 ("sets-dropped", "Sets dropped",
          "Sets not output since the element started because a camera had "
          "no frame (missing-camera=drop, or repeat before its first frame)",
          0, G_MAXUINT64, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_FRAMES_REPEATED,
      g_param_spec_uint64 ("frames-repeated", "Frames repeated",
          "Frames used again for a camera that had none in a set since the "
          "element started (missing-camera=repeat)", 0, G_MAXUINT64, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_set_static_metadata (element_class,
      "Camera encoder", "Filter/Converter/Video/Camera",
      "Camera frames to camera features and depth for bevpool, through a "
      "camera model's preprocessing and image network (BEVDet), on CUDA "
      "(cuDNN) or on the CPU", "gst-perception developers");

  gst_element_class_add_static_pad_template_with_gtype (element_class,
      &sink_template, P3D_TYPE_CAM_ENCODE_PAD);
  media_caps = gst_caps_from_string (P3D_CAMERA_FEATURES_CAPS_ALL);
  src_caps = p3d_caps_with_both_memories (media_caps, FALSE);
  gst_element_class_add_pad_template (element_class,
      gst_pad_template_new_with_gtype ("src", GST_PAD_SRC, GST_PAD_ALWAYS,
          src_caps, GST_TYPE_AGGREGATOR_PAD));
  gst_caps_unref (src_caps);
  gst_caps_unref (media_caps);

  agg_class->start = GST_DEBUG_FUNCPTR (p3d_cam_encode_start);
  agg_class->stop = GST_DEBUG_FUNCPTR (p3d_cam_encode_stop);
  agg_class->flush = GST_DEBUG_FUNCPTR (p3d_cam_encode_flush);
  agg_class->create_new_pad = GST_DEBUG_FUNCPTR (p3d_cam_encode_create_new_pad);
  agg_class->sink_event = GST_DEBUG_FUNCPTR (p3d_cam_encode_sink_event);
  agg_class->sink_query = GST_DEBUG_FUNCPTR (p3d_cam_encode_sink_query);
  agg_class->src_query = GST_DEBUG_FUNCPTR (p3d_cam_encode_src_query);
  agg_class->clip = GST_DEBUG_FUNCPTR (p3d_cam_encode_clip);
  agg_class->update_src_caps =
      GST_DEBUG_FUNCPTR (p3d_cam_encode_update_src_caps);
  agg_class->fixate_src_caps =
      GST_DEBUG_FUNCPTR (p3d_cam_encode_fixate_src_caps);
  agg_class->negotiated_src_caps =
      GST_DEBUG_FUNCPTR (p3d_cam_encode_negotiated_src_caps);
  agg_class->propose_allocation =
      GST_DEBUG_FUNCPTR (p3d_cam_encode_propose_allocation);
  agg_class->decide_allocation =
      GST_DEBUG_FUNCPTR (p3d_cam_encode_decide_allocation);
  agg_class->get_next_time = GST_DEBUG_FUNCPTR (p3d_cam_encode_get_next_time);
  agg_class->aggregate = GST_DEBUG_FUNCPTR (p3d_cam_encode_aggregate);

  gst_type_mark_as_plugin_api (P3D_TYPE_CAM_ENCODE_PAD, 0);
  gst_type_mark_as_plugin_api (P3D_TYPE_CAM_ENCODE_MISSING, 0);
  gst_type_mark_as_plugin_api (P3D_TYPE_PRECISION, 0);
  gst_type_mark_as_plugin_api (P3D_TYPE_BACKEND, 0);
}

static void
p3d_cam_encode_init (P3dCamEncode * self)
{
  self->backend = DEFAULT_BACKEND;
  self->requested_device_id = DEFAULT_CUDA_DEVICE_ID;
  self->precision = DEFAULT_PRECISION;
  self->missing = DEFAULT_MISSING_CAMERA;
  self->device_id = -1;
  self->base_time = GST_CLOCK_TIME_NONE;
  p3d_object_watch_properties (G_OBJECT (self), GST_ELEMENT (self));
}

static void
p3d_cam_encode_finalize (GObject * object)
{
  P3dCamEncode *self = P3D_CAM_ENCODE (object);

  g_free (self->weights);
  if (self->context)
    gst_context_unref (self->context);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
p3d_cam_encode_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dCamEncode *self = P3D_CAM_ENCODE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_WEIGHTS:
      g_free (self->weights);
      self->weights = g_value_dup_string (value);
      break;
    case PROP_BACKEND:
      self->backend = g_value_get_enum (value);
      break;
    case PROP_CUDA_DEVICE_ID:
      self->requested_device_id = g_value_get_int (value);
      break;
    case PROP_PRECISION:
      self->precision = g_value_get_enum (value);
      break;
    case PROP_MISSING_CAMERA:
      self->missing = g_value_get_enum (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
p3d_cam_encode_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  P3dCamEncode *self = P3D_CAM_ENCODE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_WEIGHTS:
      g_value_set_string (value, self->weights);
      break;
    case PROP_BACKEND:
      g_value_set_enum (value, self->backend);
      break;
    case PROP_CUDA_DEVICE_ID:
      g_value_set_int (value, self->requested_device_id);
      break;
    case PROP_ACTIVE_BACKEND:
      g_value_set_enum (value, !self->started ? P3D_BACKEND_AUTO :
          self->use_cuda ? P3D_BACKEND_CUDA : P3D_BACKEND_CPU);
      break;
    case PROP_PRECISION:
      g_value_set_enum (value, self->precision);
      break;
    case PROP_MISSING_CAMERA:
      g_value_set_enum (value, self->missing);
      break;
    case PROP_SETS_DROPPED:
      g_value_set_uint64 (value, self->sets_dropped);
      break;
    case PROP_FRAMES_REPEATED:
      g_value_set_uint64 (value, self->frames_repeated);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
p3d_cam_encode_set_context (GstElement * element, GstContext * context)
{
  P3dCamEncode *self = P3D_CAM_ENCODE (element);

  p3d_cuda_handle_set_context (element, context, &self->context);
  GST_ELEMENT_CLASS (parent_class)->set_context (element, context);
}

/* Turns a failed P3dcResult into an element error naming @what. */
static gboolean
check_cuda (P3dCamEncode * self, gint result, const gchar * what)
{
  if (result == P3DC_OK)
    return TRUE;
  GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
      ("CUDA error while %s: %s", what, p3dc_result_string (result)),
      ("%s failed with %d (%s) on device %d", what, result,
          p3dc_result_string (result), self->device_id));
  return FALSE;
}

/* As check_cuda() for releasing resources: logged, not posted. */
static void
log_failure (P3dCamEncode * self, gint result, const gchar * what)
{
  if (result != P3DC_OK)
    GST_WARNING_OBJECT (self, "%s failed on device %d: %s", what,
        self->device_id, p3dc_result_string (result));
}

static gboolean
device_enter (P3dCamEncode * self, gint * previous)
{
  return check_cuda (self, p3dc_cuda_device_push (self->device_id, previous),
      "selecting the device");
}

static void
device_leave (P3dCamEncode * self, gint previous)
{
  log_failure (self, p3dc_cuda_device_pop (previous), "restoring the device");
}

static gpointer
ref_pad (gconstpointer pad, gpointer unused)
{
  return gst_object_ref ((gpointer) pad);
}

/* The sink pads, each with a reference (free with
 * g_list_free_full (pads, gst_object_unref)). */
static GList *
get_sink_pads (P3dCamEncode * self)
{
  GList *pads;

  GST_OBJECT_LOCK (self);
  pads = g_list_copy_deep (GST_ELEMENT (self)->sinkpads, ref_pad, NULL);
  GST_OBJECT_UNLOCK (self);
  return pads;
}

/* The name of camera @camera in the model, for messages. */
static const gchar *
camera_name (P3dCamEncode * self, guint camera)
{
  if (self->cameras != NULL && self->cameras->names != NULL
      && camera < self->cameras->n_cameras)
    return self->cameras->names[camera];
  return "?";
}

/* The pads must be sink_0 ... sink_N-1, N the model's cameras. Posts the
 * error and returns FALSE otherwise. */
static gboolean
check_pads (P3dCamEncode * self)
{
  guint n = self->cameras->n_cameras, count = 0, highest = 0;
  GList *pads = get_sink_pads (self), *l;
  gboolean ok;

  for (l = pads; l != NULL; l = l->next) {
    count++;
    highest = MAX (highest, P3D_CAM_ENCODE_PAD (l->data)->camera);
  }
  g_list_free_full (pads, gst_object_unref);
  ok = count == n && (count == 0 || highest == n - 1);
  if (!ok) {
    gchar *path;

    GST_OBJECT_LOCK (self);
    path = g_strdup (self->weights);
    GST_OBJECT_UNLOCK (self);
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("The weights file \"%s\" is for %u cameras (%s ... %s), but "
            "camencode has %u sink pads%s: link one camera to each of "
            "sink_0 ... sink_%u", path, n, camera_name (self, 0),
            camera_name (self, n - 1), count, count == n ?
            " whose numbers are not 0 to N-1" : "", n - 1), (NULL));
    g_free (path);
  }
  return ok;
}

/* A network of non-finite weights computes garbage: refused when the
 * model loads, naming the layer. */
static gboolean
check_weights_finite (P3dCamEncode * self, const gchar * path)
{
  const P3dcConvNetDesc *desc = &self->network->desc;
  guint l;

  for (l = 0; l < desc->n_layers; l++) {
    const P3dcConvLayer *layer = &desc->layers[l];
    P3dcConvGeometry g;
    gsize n_weights, i;
    gboolean bad;

    if (layer->kind != P3DC_CONV_2D && layer->kind != P3DC_CONV_TRANSPOSED_2D)
      continue;
    p3dc_convnet_layer_geometry (layer, &g);
    n_weights = (gsize) layer->out_channels * layer->in_channels /
        (layer->kind == P3DC_CONV_2D ? g.groups : 1) * g.kernel[0] *
        g.kernel[1];
    bad = FALSE;
    for (i = 0; i < n_weights && !bad; i++)
      bad = !isfinite (layer->weight[i]);
    for (i = 0; i < layer->out_channels && !bad; i++)
      bad = !isfinite (layer->bias[i]);
    if (bad) {
      GST_ELEMENT_ERROR (self, STREAM, DECODE,
          ("The weights file \"%s\" holds a value that is not a finite "
              "number in layer %u (%s) of its image network", path, l,
              p3dc_convnet_kind_name (layer->kind)), (NULL));
      return FALSE;
    }
  }
  return TRUE;
}

/* The model of the weights property: a camera model with an "image"
 * network whose input and outputs camencode can feed and read. */
static gboolean
load_model (P3dCamEncode * self)
{
  const P3dModelCameras *cameras;
  const P3dModelNetwork *network;
  const P3dModelOutput *depth, *features;
  const P3dcConvBufferDesc *input;
  gfloat mean[3], std[3];
  P3dModel *model;
  gchar *path;
  guint c;

  model = p3d_model_file_load_property (GST_ELEMENT (self), &self->weights);
  if (model == NULL)
    return FALSE;
  GST_OBJECT_LOCK (self);
  path = g_strdup (self->weights);
  GST_OBJECT_UNLOCK (self);
  cameras = model->cameras;
  network = p3d_model_get_network (model, "image");
  if (cameras == NULL || network == NULL) {
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("The weights file \"%s\" holds a %s model, which has no camera "
            "encoder for camencode", path, model->architecture),
        ("%s", cameras == NULL ? "no cameras" : "no \"image\" network"));
    goto refused;
  }
  depth = p3d_model_network_get_output (network, "depth");
  features = p3d_model_network_get_output (network, "features");
  input = &network->desc.buffers[0];
  if (depth == NULL || features == NULL) {
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("The image network of the weights file \"%s\" has no \"%s\" "
            "output", path, depth == NULL ? "depth" : "features"), (NULL));
    goto refused;
  }
  /* the input the data config prepares: 3 channels of the input size, a
   * batch of the rig */
  if (input->channels != 3 || input->width != cameras->input_width
      || input->height != cameras->input_height
      || p3dc_convnet_batch (&network->desc) != cameras->n_cameras
      || cameras->n_cameras > P3D_CAMERA_FEATURES_MAX_CAMERAS) {
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("The weights file \"%s\" does not fit together: its image network "
            "takes %u cameras of %u channels of %u x %u, its data config "
            "prepares %u cameras of 3 channels of %u x %u", path,
            p3dc_convnet_batch (&network->desc), input->channels,
            input->width, input->height, cameras->n_cameras,
            cameras->input_width, cameras->input_height), (NULL));
    goto refused;
  }
  self->model = model;
  self->cameras = cameras;
  self->network = network;
  self->depth = depth;
  self->features = features;
  if (!check_weights_finite (self, path)) {
    g_free (path);
    return FALSE;
  }
  /* torchvision's ToTensor and Normalize, in float32 */
  for (c = 0; c < 3; c++) {
    mean[c] = (gfloat) cameras->mean[c];
    std[c] = (gfloat) cameras->std[c];
  }
  p3dc_camprep_norm_init_divide (&self->norm, mean, std, 255.0f);
  g_free (path);
  return TRUE;

refused:
  g_free (path);
  p3d_model_free (model);
  return FALSE;
}

/* The feature map's size: the outputs' buffer. */
static const P3dcConvBufferDesc *
output_buffer (P3dCamEncode * self, const P3dModelOutput * output)
{
  return &self->network->desc.buffers[output->buffer];
}

/* Takes the CUDA path on @device_id: allocator, stream, network and its
 * input. FALSE with @why when the device cannot be used; an element error
 * is posted for a failure after the device was found. */
static gboolean
open_device (P3dCamEncode * self, gint device_id, P3dPrecision precision,
    gchar ** why)
{
  const P3dcConvNetDesc *desc = &self->network->desc;
  gint previous;
  gboolean ok;
  P3dcResult result;

  self->allocator = p3d_cuda_allocator_get (device_id, why);
  if (self->allocator == NULL)
    return FALSE;
  self->device_id = device_id;
  if (!device_enter (self, &previous)) {
    gst_clear_object (&self->allocator);
    self->device_id = -1;
    return FALSE;
  }
  self->half = precision == P3D_PRECISION_F16;
  ok = check_cuda (self, p3dc_cuda_stream_create (&self->stream),
      "creating a stream")
      && check_cuda (self, p3dc_cuda_event_create (&self->peer_event),
      "creating an event");
  if (ok) {
    self->net_message[0] = '\0';
    result = p3dc_convnet_cuda_new (desc, self->half, &self->net,
        self->net_message, sizeof (self->net_message));
    if (result != P3DC_OK) {
      GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
          ("Cannot set up the image network on CUDA device %d: %s",
              device_id, self->net_message[0] ? self->net_message :
              p3dc_result_string (result)), ("%s",
              p3dc_result_string (result)));
      ok = FALSE;
    }
  }
  ok = ok && check_cuda (self, p3dc_cuda_malloc (&self->device_input,
          p3dc_convnet_buffer_elements (desc, 0) * (self->half ? 2 : 4)),
      "allocating the network's input");
  self->use_cuda = ok;
  device_leave (self, previous);
  return ok;
}

/* Waits for the stream and releases everything the CUDA path holds. */
static void
close_device (P3dCamEncode * self)
{
  gint previous;
  guint i;

  if (self->device_id >= 0 && device_enter (self, &previous)) {
    if (self->stream)
      log_failure (self, p3dc_cuda_stream_synchronize (self->stream),
          "waiting for the stream");
    g_clear_pointer (&self->net, p3dc_convnet_cuda_free);
    g_clear_pointer (&self->prep, p3dc_camprep_cuda_free);
    if (self->device_input)
      log_failure (self, p3dc_cuda_free (self->device_input),
          "freeing the network's input");
    for (i = 0; i < P3D_CAMERA_FEATURES_MAX_CAMERAS; i++) {
      if (self->uploads[i])
        log_failure (self, p3dc_cuda_free (self->uploads[i]),
            "freeing a frame's copy");
      self->uploads[i] = NULL;
      self->upload_sizes[i] = 0;
    }
    for (i = 0; i < P3D_CAMERA_FEATURES_N_TENSORS; i++) {
      if (self->scratch[i])
        log_failure (self, p3dc_cuda_free (self->scratch[i]),
            "freeing a work buffer");
      self->scratch[i] = NULL;
      self->scratch_sizes[i] = 0;
    }
    if (self->peer_event)
      log_failure (self, p3dc_cuda_event_destroy (self->peer_event),
          "destroying an event");
    if (self->stream)
      log_failure (self, p3dc_cuda_stream_destroy (self->stream),
          "destroying the stream");
    device_leave (self, previous);
  }
  self->device_input = NULL;
  self->peer_event = NULL;
  self->stream = NULL;
  self->use_cuda = FALSE;
  self->device_id = -1;
  gst_clear_object (&self->allocator);
}

static void
free_cpu_buffers (P3dCamEncode * self)
{
  if (self->cpu_buffers)
    p3dc_convnet_cpu_buffers_free (&self->network->desc, self->cpu_buffers);
  self->cpu_buffers = NULL;
  g_clear_pointer (&self->cpu_input, g_free);
}

static void
free_plans (P3dCamEncode * self)
{
  guint i;

  for (i = 0; i < P3D_CAMERA_FEATURES_MAX_CAMERAS; i++) {
    g_clear_pointer (&self->plans[i], p3dc_camprep_plan_free);
    gst_video_info_init (&self->plan_info[i]);
  }
  self->prep_stale = TRUE;
}

static void
forget_frames (P3dCamEncode * self)
{
  GList *pads = get_sink_pads (self), *l;

  for (l = pads; l != NULL; l = l->next)
    p3d_cam_encode_pad_forget (P3D_CAM_ENCODE_PAD (l->data));
  g_list_free_full (pads, gst_object_unref);
}

static gboolean
p3d_cam_encode_stop (GstAggregator * agg)
{
  P3dCamEncode *self = P3D_CAM_ENCODE (agg);
  GList *pads = get_sink_pads (self), *l;

  for (l = pads; l != NULL; l = l->next) {
    P3dCamEncodePad *pad = l->data;

    p3d_cam_encode_pad_forget (pad);
    pad->negotiated = FALSE;
    pad->refused = FALSE;
    pad->warned_missing = FALSE;
  }
  g_list_free_full (pads, gst_object_unref);
  close_device (self);
  free_plans (self);
  if (self->model)
    free_cpu_buffers (self);
  GST_OBJECT_LOCK (self);
  self->cameras = NULL;
  self->network = NULL;
  self->depth = self->features = NULL;
  self->started = FALSE;
  GST_OBJECT_UNLOCK (self);
  p3d_model_file_clear (GST_ELEMENT (self), &self->model);
  self->negotiated = FALSE;
  return TRUE;
}

static gboolean
p3d_cam_encode_start (GstAggregator * agg)
{
  P3dCamEncode *self = P3D_CAM_ENCODE (agg);
  P3dPrecision precision;
  P3dBackend backend;
  gint requested, device_id;
  gchar *why = NULL;

  if (!p3d_element_check_properties (GST_ELEMENT (self)))
    return FALSE;
  GST_OBJECT_LOCK (self);
  backend = self->backend;
  requested = self->requested_device_id;
  precision = self->precision;
  self->sets_dropped = 0;
  self->frames_repeated = 0;
  GST_OBJECT_UNLOCK (self);

  if (!load_model (self) || !check_pads (self))
    goto failed;
  self->negotiated = FALSE;
  self->base_time = GST_CLOCK_TIME_NONE;
  self->set_index = 0;
  self->fps_n = 0;
  self->fps_d = 1;
  free_plans (self);

  self->use_cuda = FALSE;
  self->device_id = -1;
  if (backend != P3D_BACKEND_CPU) {
    device_id = p3d_cuda_find_element_device (GST_ELEMENT (self),
        &self->context);
    if (open_device (self, device_id, precision, &why)) {
      p3d_cuda_share_element_device (GST_ELEMENT (self), device_id,
          &self->context);
      GST_INFO_OBJECT (self, "taking the CUDA path on device %d", device_id);
    } else if (why == NULL) {
      goto failed;              /* a CUDA failure, posted */
    } else if (backend == P3D_BACKEND_CUDA) {
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("backend=cuda but CUDA device %d cannot be used: %s", device_id,
              why), ("%s", why));
      g_free (why);
      goto failed;
    } else if (requested >= 0 && p3dc_cuda_device_count () > 0) {
      /* a wrong number or a lost GPU must not hide behind a slow pipeline */
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("cuda-device-id=%d but CUDA device %d cannot be used: %s",
              requested, device_id, why), ("%s", why));
      g_free (why);
      goto failed;
    } else {
      GST_INFO_OBJECT (self, "taking the C reference path: %s", why);
      g_free (why);
    }
  }
  if (!self->use_cuda) {
    const P3dcConvNetDesc *desc = &self->network->desc;

    self->cpu_buffers = p3dc_convnet_cpu_buffers_new (desc);
    self->cpu_input = g_try_new (gfloat, p3dc_convnet_buffer_elements (desc,
            0));
    if (self->cpu_buffers == NULL || self->cpu_input == NULL) {
      GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT,
          ("Not enough memory for the image network's activations"), (NULL));
      goto failed;
    }
  }
  GST_OBJECT_LOCK (self);
  self->started = TRUE;
  GST_OBJECT_UNLOCK (self);
  return TRUE;

failed:
  p3d_cam_encode_stop (agg);
  return FALSE;
}

static GstFlowReturn
p3d_cam_encode_flush (GstAggregator * agg)
{
  P3dCamEncode *self = P3D_CAM_ENCODE (agg);

  forget_frames (self);
  self->base_time = GST_CLOCK_TIME_NONE;
  self->set_index = 0;
  return GST_FLOW_OK;
}

static GstAggregatorPad *
p3d_cam_encode_create_new_pad (GstAggregator * agg, GstPadTemplate * templ,
    const gchar * req_name, const GstCaps * caps)
{
  P3dCamEncodePad *pad;
  GstPad *existing;
  guint camera = 0;
  gchar *name;

  if (req_name != NULL && strchr (req_name, '%') == NULL) {
    gchar *end = NULL;
    guint64 number = 0;

    if (g_str_has_prefix (req_name, "sink_"))
      number = g_ascii_strtoull (req_name + 5, &end, 10);
    if (end == NULL || *end != '\0' || end == req_name + 5
        || number >= P3D_CAMERA_FEATURES_MAX_CAMERAS) {
      GST_WARNING_OBJECT (agg, "bad pad name %s: want sink_<camera>, the "
          "camera below %u", req_name, P3D_CAMERA_FEATURES_MAX_CAMERAS);
      return NULL;
    }
    camera = (guint) number;
  } else {
    /* the lowest free number */
    for (camera = 0; camera < P3D_CAMERA_FEATURES_MAX_CAMERAS; camera++) {
      name = g_strdup_printf ("sink_%u", camera);
      existing = gst_element_get_static_pad (GST_ELEMENT (agg), name);
      g_free (name);
      if (existing == NULL)
        break;
      gst_object_unref (existing);
    }
    if (camera == P3D_CAMERA_FEATURES_MAX_CAMERAS) {
      GST_WARNING_OBJECT (agg, "no more than %u cameras",
          P3D_CAMERA_FEATURES_MAX_CAMERAS);
      return NULL;
    }
  }
  name = g_strdup_printf ("sink_%u", camera);
  existing = gst_element_get_static_pad (GST_ELEMENT (agg), name);
  if (existing != NULL) {
    GST_WARNING_OBJECT (agg, "pad %s exists already", name);
    gst_object_unref (existing);
    g_free (name);
    return NULL;
  }
  pad = g_object_new (P3D_TYPE_CAM_ENCODE_PAD, "name", name, "direction",
      GST_PAD_SINK, "template", templ, NULL);
  pad->camera = camera;
  g_free (name);
  return GST_AGGREGATOR_PAD (pad);
}

/* The preprocessing of a frame of @info for @self's model: its layout,
 * colour conversion, and the model's resize and crop. FALSE, with @why,
 * when the model's transform does not keep the network's input inside the
 * resized image. */
static gboolean
prep_params (P3dCamEncode * self, const GstVideoInfo * info,
    P3dcCamPrepParams * params, P3dModelImageTransform * transform,
    gchar ** why)
{
  const GstVideoFormatInfo *finfo = info->finfo;
  const P3dModelCameras *cameras = self->cameras;
  guint width = GST_VIDEO_INFO_WIDTH (info);
  guint height = GST_VIDEO_INFO_HEIGHT (info);
  guint c;

  memset (params, 0, sizeof (*params));
  params->width = width;
  params->height = height;
  if (GST_VIDEO_FORMAT_INFO_IS_RGB (finfo)) {
    params->layout = P3DC_CAMPREP_PACKED_RGB;
    params->pixel_stride = GST_VIDEO_FORMAT_INFO_PSTRIDE (finfo, 0);
    for (c = 0; c < 3; c++)
      params->offsets[c] = GST_VIDEO_FORMAT_INFO_POFFSET (finfo,
          GST_VIDEO_COMP_R + c);
  } else {
    const GstVideoColorimetry *colorimetry = &GST_VIDEO_INFO_COLORIMETRY (info);
    P3dcYuvMatrix matrix = P3DC_YUV_BT601;

    if (colorimetry->matrix == GST_VIDEO_COLOR_MATRIX_BT709)
      matrix = P3DC_YUV_BT709;
    else if (colorimetry->matrix == GST_VIDEO_COLOR_MATRIX_BT2020)
      matrix = P3DC_YUV_BT2020;
    p3dc_camprep_yuv_init (&params->yuv, matrix,
        colorimetry->range == GST_VIDEO_COLOR_RANGE_0_255);
    if (GST_VIDEO_FORMAT_INFO_N_PLANES (finfo) == 3) {
      params->layout = P3DC_CAMPREP_YUV420_PLANAR;
    } else {
      params->layout = P3DC_CAMPREP_YUV420_SEMIPLANAR;
      params->offsets[1] = GST_VIDEO_FORMAT_INFO_POFFSET (finfo,
          GST_VIDEO_COMP_U);
      params->offsets[2] = GST_VIDEO_FORMAT_INFO_POFFSET (finfo,
          GST_VIDEO_COMP_V);
    }
  }
  params->filter = P3DC_CAMPREP_BICUBIC;
  params->out_width = cameras->input_width;
  params->out_height = cameras->input_height;
  memset (transform, 0, sizeof (*transform));
  if (!p3d_model_cameras_image_transform (cameras, width, height, transform)) {
    *why = g_strdup_printf ("the model's test-time resize and crop do not "
        "keep its %u x %u input inside a %u x %u image resized by %.6g "
        "(%u / %u + resize_test %g): the image is too small or too wide "
        "for the model", cameras->input_width, cameras->input_height, width,
        height, cameras->input_width / (gdouble) width + cameras->resize_test,
        cameras->input_width, width, cameras->resize_test);
    return FALSE;
  }
  params->resize_width = transform->scaled_width;
  params->resize_height = transform->scaled_height;
  params->crop_x = transform->crop_x;
  params->crop_y = transform->crop_y;
  return TRUE;
}

/* Accepts @caps for a camera: a video format we read, of a size the
 * model's transform takes. FALSE with @why otherwise. */
static gboolean
pad_caps_usable (P3dCamEncode * self, GstCaps * caps, GstVideoInfo * info,
    gchar ** why)
{
  P3dcCamPrepParams params;
  P3dModelImageTransform transform;

  if (!gst_video_info_from_caps (info, caps)) {
    *why = g_strdup ("they are not video caps GStreamer can read");
    return FALSE;
  }
  if (GST_VIDEO_INFO_IS_INTERLACED (info)) {
    *why = g_strdup ("interlaced video is not taken");
    return FALSE;
  }
  if (self->cameras == NULL)
    return TRUE;
  return prep_params (self, info, &params, &transform, why);
}

/* The output's frame rate: the highest of the cameras' caps. */
static void
cameras_framerate (P3dCamEncode * self, gint * fps_n, gint * fps_d)
{
  GList *pads = get_sink_pads (self), *l;

  *fps_n = 0;
  *fps_d = 1;
  for (l = pads; l != NULL; l = l->next) {
    P3dCamEncodePad *pad = l->data;

    if (pad->negotiated && GST_VIDEO_INFO_FPS_N (&pad->info) > 0
        && GST_VIDEO_INFO_FPS_D (&pad->info) > 0
        && gst_util_fraction_compare (GST_VIDEO_INFO_FPS_N (&pad->info),
            GST_VIDEO_INFO_FPS_D (&pad->info), *fps_n, *fps_d) > 0) {
      *fps_n = GST_VIDEO_INFO_FPS_N (&pad->info);
      *fps_d = GST_VIDEO_INFO_FPS_D (&pad->info);
    }
  }
  g_list_free_full (pads, gst_object_unref);
}

static gboolean
p3d_cam_encode_sink_event (GstAggregator * agg, GstAggregatorPad * aggpad,
    GstEvent * event)
{
  P3dCamEncode *self = P3D_CAM_ENCODE (agg);
  P3dCamEncodePad *pad = P3D_CAM_ENCODE_PAD (aggpad);

  if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS) {
    GstVideoInfo info;
    GstCaps *caps;
    gchar *why = NULL;
    gboolean ok;

    gst_event_parse_caps (event, &caps);
    ok = pad_caps_usable (self, caps, &info, &why);
    if (ok) {
      GST_DEBUG_OBJECT (pad, "caps %" GST_PTR_FORMAT, caps);
      pad->info = info;
      pad->negotiated = TRUE;
      pad->refused = FALSE;
      /* the output caps carry each camera's transform and the rate */
      gst_pad_mark_reconfigure (GST_AGGREGATOR_SRC_PAD (self));
    } else {
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
          ("Camera %u (%s, pad %s) cannot be used with caps %" GST_PTR_FORMAT
              ": %s", pad->camera, camera_name (self, pad->camera),
              GST_PAD_NAME (pad), caps, why), (NULL));
      g_free (why);
      /* its frames are queued already: the next set stops the stream */
      pad->refused = TRUE;
    }
    /* our caps are not the output's: never forwarded */
    gst_event_unref (event);
    return ok;
  }
  return GST_AGGREGATOR_CLASS (parent_class)->sink_event (agg, aggpad, event);
}

static gboolean
p3d_cam_encode_sink_query (GstAggregator * agg, GstAggregatorPad * aggpad,
    GstQuery * query)
{
  P3dCamEncode *self = P3D_CAM_ENCODE (agg);

  if (p3d_cuda_handle_context_query (GST_ELEMENT (self), query, &self->context))
    return TRUE;
  return GST_AGGREGATOR_CLASS (parent_class)->sink_query (agg, aggpad, query);
}

static gboolean
p3d_cam_encode_src_query (GstAggregator * agg, GstQuery * query)
{
  P3dCamEncode *self = P3D_CAM_ENCODE (agg);

  if (p3d_cuda_handle_context_query (GST_ELEMENT (self), query, &self->context))
    return TRUE;
  return GST_AGGREGATOR_CLASS (parent_class)->src_query (agg, query);
}

/* A frame outside its time segment is dropped, as any element clips. */
static GstBuffer *
p3d_cam_encode_clip (GstAggregator * agg, GstAggregatorPad * aggpad,
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

/* The video info of camera @pad's next set: its frame's, else its caps'. */
static const GstVideoInfo *
pad_set_info (P3dCamEncodePad * pad)
{
  return pad->frame != NULL ? &pad->frame_info : &pad->info;
}

/* The output info for the sets as the pads stand (each camera's transform
 * from its frame, else its caps), in @format; FALSE when a camera has no
 * caps yet. */
static gboolean
output_info (P3dCamEncode * self, P3dDataFormat format,
    P3dCameraFeaturesInfo * info)
{
  const P3dcConvBufferDesc *map = output_buffer (self, self->features);
  GList *pads = get_sink_pads (self), *l;
  gboolean ok = TRUE;

  p3d_camera_features_info_init (info);
  info->format = format;
  info->cameras = self->cameras->n_cameras;
  info->channels = self->features->channels;
  info->depth_bins = self->depth->channels;
  info->width = map->width;
  info->height = map->height;
  cameras_framerate (self, &info->fps_n, &info->fps_d);
  info->has_image = TRUE;
  info->image_width = self->cameras->input_width;
  info->image_height = self->cameras->input_height;
  for (l = pads; l != NULL; l = l->next) {
    P3dCamEncodePad *pad = l->data;
    P3dModelImageTransform t;
    gdouble *aug;

    if (!pad->negotiated || pad->camera >= info->cameras
        || !p3d_model_cameras_image_transform (self->cameras,
            GST_VIDEO_INFO_WIDTH (pad_set_info (pad)),
            GST_VIDEO_INFO_HEIGHT (pad_set_info (pad)), &t)) {
      ok = FALSE;
      break;
    }
    aug = info->image_aug[pad->camera];
    aug[0] = t.scale;
    aug[1] = 0.0;
    aug[2] = -t.crop_x;
    aug[3] = 0.0;
    aug[4] = t.scale;
    aug[5] = -t.crop_y;
  }
  g_list_free_full (pads, gst_object_unref);
  return ok;
}

static GstFlowReturn
p3d_cam_encode_update_src_caps (GstAggregator * agg, GstCaps * caps,
    GstCaps ** ret)
{
  P3dCamEncode *self = P3D_CAM_ENCODE (agg);
  P3dDataFormat first = self->precision == P3D_PRECISION_F32 ?
      P3D_DATA_FORMAT_F32 : P3D_DATA_FORMAT_F16;
  P3dCameraFeaturesInfo info;
  GstCaps *ours = gst_caps_new_empty (), *both;
  guint i;

  if (self->cameras == NULL)
    return GST_FLOW_NOT_NEGOTIATED;
  /* the preferred format first, the other when downstream wants it */
  for (i = 0; i < 2; i++) {
    P3dDataFormat format = i == 0 ? first : first == P3D_DATA_FORMAT_F16 ?
        P3D_DATA_FORMAT_F32 : P3D_DATA_FORMAT_F16;

    if (!output_info (self, format, &info)) {
      gst_caps_unref (ours);
      GST_DEBUG_OBJECT (self, "a camera has no caps yet");
      return GST_AGGREGATOR_FLOW_NEED_DATA;
    }
    ours = gst_caps_merge (ours, p3d_camera_features_info_to_caps (&info));
  }
  both = p3d_caps_with_usable_memories (ours, self->use_cuda);
  gst_caps_unref (ours);
  *ret = gst_caps_intersect_full (both, caps, GST_CAPS_INTERSECT_FIRST);
  if (gst_caps_is_empty (*ret)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Downstream does not take the camera features of this model"),
        ("ours %" GST_PTR_FORMAT ", downstream's %" GST_PTR_FORMAT, both,
            caps));
    gst_caps_unref (both);
    gst_caps_replace (ret, NULL);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  gst_caps_unref (both);
  return GST_FLOW_OK;
}

static GstCaps *
p3d_cam_encode_fixate_src_caps (GstAggregator * agg, GstCaps * caps)
{
  return gst_caps_fixate (caps);
}

/* Running time at which set @index starts. */
static GstClockTime
set_start (P3dCamEncode * self, guint64 index)
{
  return self->base_time + gst_util_uint64_scale (index,
      (guint64) self->fps_d * GST_SECOND, (guint64) self->fps_n);
}

static gboolean
p3d_cam_encode_negotiated_src_caps (GstAggregator * agg, GstCaps * caps)
{
  P3dCamEncode *self = P3D_CAM_ENCODE (agg);
  P3dCameraFeaturesInfo info;
  P3dTensorLayout layout;
  GstClockTime duration;
  gint fps_n, fps_d;

  if (!p3d_camera_features_info_from_caps (&info, caps)
      || !p3d_camera_features_info_get_layout (&info, &layout)) {
    GST_WARNING_OBJECT (self, "cannot output %" GST_PTR_FORMAT, caps);
    return FALSE;
  }
  fps_n = info.fps_n > 0 ? info.fps_n : DEFAULT_FPS_N;
  fps_d = info.fps_n > 0 ? info.fps_d : DEFAULT_FPS_D;
  /* a new rate: the sets go on from where they are */
  if (GST_CLOCK_TIME_IS_VALID (self->base_time) && self->fps_n > 0
      && (fps_n != self->fps_n || fps_d != self->fps_d)) {
    self->base_time = set_start (self, self->set_index);
    self->set_index = 0;
  }
  self->fps_n = fps_n;
  self->fps_d = fps_d;
  self->out_info = info;
  self->out_layout = layout;
  self->out_cuda = p3d_caps_is_cuda (caps);
  self->negotiated = TRUE;
  /* a set may wait for its cameras until its end */
  duration = gst_util_uint64_scale_int (GST_SECOND, fps_d, fps_n);
  gst_aggregator_set_latency (agg, duration, duration);
  GST_INFO_OBJECT (self, "output %" GST_PTR_FORMAT, caps);
  return TRUE;
}

static gboolean
p3d_cam_encode_propose_allocation (GstAggregator * agg,
    GstAggregatorPad * pad, GstQuery * decide_query, GstQuery * query)
{
  P3dCamEncode *self = P3D_CAM_ENCODE (agg);
  GstCaps *caps = NULL;

  gst_query_parse_allocation (query, &caps, NULL);
  /* frames with strides and offsets of their own are read as they are */
  gst_query_add_allocation_meta (query, GST_VIDEO_META_API_TYPE, NULL);
  /* upstream may write its frames into our device memory directly */
  if (caps && p3d_caps_is_cuda (caps) && self->allocator)
    gst_query_add_allocation_param (query, self->allocator, NULL);
  return TRUE;
}

static gboolean
p3d_cam_encode_decide_allocation (GstAggregator * agg, GstQuery * query)
{
  P3dCamEncode *self = P3D_CAM_ENCODE (agg);
  GstAllocator *allocator = NULL;
  GstBufferPool *pool;
  GstCaps *caps = NULL;

  gst_query_parse_allocation (query, &caps, NULL);
  if (caps == NULL)
    return FALSE;
  if (p3d_caps_is_cuda (caps) && self->allocator) {
    allocator = gst_object_ref (self->allocator);
  } else if (p3d_caps_is_cuda (caps)) {
    /* backend=cpu may still write CUDA memory when downstream wants it */
    allocator = p3d_cuda_element_get_allocator (GST_ELEMENT (self),
        p3d_cuda_find_element_device (GST_ELEMENT (self), &self->context),
        &self->context);
    if (allocator == NULL)
      return FALSE;
  }
  pool = p3d_tensor_pool_decide_allocation (query, &self->out_layout,
      allocator);
  gst_clear_object (&allocator);
  if (pool == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Cannot configure the output buffer pool"),
        ("caps %" GST_PTR_FORMAT, caps));
    return FALSE;
  }
  gst_object_unref (pool);
  return TRUE;
}

static GstClockTime
p3d_cam_encode_get_next_time (GstAggregator * agg)
{
  P3dCamEncode *self = P3D_CAM_ENCODE (agg);

  /* live: set n is made when the clock passes its end (plus latency) */
  if (!GST_CLOCK_TIME_IS_VALID (self->base_time) || self->fps_n <= 0)
    return GST_CLOCK_TIME_NONE;
  return set_start (self, self->set_index + 1);
}

/* The running time of @buffer on @pad, NONE without a timestamp. */
static GstClockTime
buffer_running_time (P3dCamEncodePad * pad, GstBuffer * buffer)
{
  GstAggregatorPad *aggpad = GST_AGGREGATOR_PAD (pad);
  GstClockTime pts = GST_BUFFER_PTS (buffer), time;

  if (!GST_CLOCK_TIME_IS_VALID (pts))
    return GST_CLOCK_TIME_NONE;
  GST_OBJECT_LOCK (aggpad);
  time = aggpad->segment.format == GST_FORMAT_TIME ?
      gst_segment_to_running_time (&aggpad->segment, GST_FORMAT_TIME, pts) :
      pts;
  GST_OBJECT_UNLOCK (aggpad);
  return time;
}

/* The running time of @pad's next queued frame, NONE for none or one
 * without a timestamp. */
static GstClockTime
pad_next_time (P3dCamEncodePad * pad)
{
  GstBuffer *buffer = gst_aggregator_pad_peek_buffer (GST_AGGREGATOR_PAD (pad));
  GstClockTime time = GST_CLOCK_TIME_NONE;

  if (buffer != NULL) {
    time = buffer_running_time (pad, buffer);
    gst_buffer_unref (buffer);
  }
  return time;
}

typedef enum
{
  CAMERA_FRESH,                 /* a frame for the set */
  CAMERA_MISSING,               /* none will come */
  CAMERA_WAIT,                  /* one may still come */
} CameraState;

/* Takes @pad's frames that start before @end, keeping the newest; says
 * whether the camera has a frame for the set [@start, @end). */
static CameraState
select_frame (P3dCamEncodePad * pad, GstClockTime start, GstClockTime end)
{
  GstAggregatorPad *aggpad = GST_AGGREGATOR_PAD (pad);
  GstBuffer *buffer;

  while ((buffer = gst_aggregator_pad_peek_buffer (aggpad)) != NULL) {
    GstClockTime time = buffer_running_time (pad, buffer);

    gst_buffer_unref (buffer);
    /* a frame without a timestamp counts for the next set, one a set */
    if (!GST_CLOCK_TIME_IS_VALID (time) && pad->fresh)
      break;
    if (GST_CLOCK_TIME_IS_VALID (time) && time >= end)
      break;
    buffer = gst_aggregator_pad_pop_buffer (aggpad);
    if (pad->frame != NULL && pad->fresh)
      GST_LOG_OBJECT (pad, "a newer frame replaces %" GST_PTR_FORMAT,
          pad->frame);
    gst_buffer_replace (&pad->frame, buffer);
    gst_buffer_unref (buffer);
    pad->frame_info = pad->info;
    pad->frame_time = time;
    pad->fresh = !GST_CLOCK_TIME_IS_VALID (time) || time >= start;
    if (!pad->fresh)
      GST_DEBUG_OBJECT (pad, "late frame at %" GST_TIME_FORMAT " for the set "
          "at %" GST_TIME_FORMAT, GST_TIME_ARGS (time), GST_TIME_ARGS (start));
  }
  if (pad->fresh)
    return CAMERA_FRESH;
  if (gst_aggregator_pad_is_eos (aggpad)
      || gst_aggregator_pad_has_buffer (aggpad))
    return CAMERA_MISSING;
  return CAMERA_WAIT;
}

/* Each camera's preprocessing for the size and format of its frame;
 * FALSE (posted) when one cannot be made. */
static gboolean
update_plans (P3dCamEncode * self, GList * pads)
{
  GList *l;

  for (l = pads; l != NULL; l = l->next) {
    P3dCamEncodePad *pad = l->data;
    guint k = pad->camera;
    P3dcCamPrepParams params;
    P3dModelImageTransform transform;
    gchar *why = NULL;
    P3dcResult result;

    if (self->plans[k] != NULL
        && gst_video_info_is_equal (&self->plan_info[k], &pad->frame_info))
      continue;
    g_clear_pointer (&self->plans[k], p3dc_camprep_plan_free);
    self->prep_stale = TRUE;
    if (!prep_params (self, &pad->frame_info, &params, &transform, &why)) {
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
          ("Camera %u (%s, pad %s) sends %d x %d frames: %s", k,
              camera_name (self, k), GST_PAD_NAME (pad),
              GST_VIDEO_INFO_WIDTH (&pad->frame_info),
              GST_VIDEO_INFO_HEIGHT (&pad->frame_info), why), (NULL));
      g_free (why);
      return FALSE;
    }
    result = p3dc_camprep_plan_new (&params, &self->plans[k]);
    if (result != P3DC_OK) {
      GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
          ("Cannot prepare the %d x %d frames of camera %u (pad %s)",
              GST_VIDEO_INFO_WIDTH (&pad->frame_info),
              GST_VIDEO_INFO_HEIGHT (&pad->frame_info), k,
              GST_PAD_NAME (pad)), ("%s", p3dc_result_string (result)));
      return FALSE;
    }
    self->plan_info[k] = pad->frame_info;
    GST_INFO_OBJECT (pad, "%s %d x %d: resized to %u x %u, cropped at (%d, "
        "%d)", GST_VIDEO_INFO_NAME (&pad->frame_info),
        GST_VIDEO_INFO_WIDTH (&pad->frame_info),
        GST_VIDEO_INFO_HEIGHT (&pad->frame_info), params.resize_width,
        params.resize_height, params.crop_x, params.crop_y);
  }
  return TRUE;
}

/* Maps camera @pad's frame for reading on the host. */
static gboolean
map_frame (P3dCamEncode * self, P3dCamEncodePad * pad, GstVideoFrame * frame,
    GstMapFlags flags)
{
  if (gst_video_frame_map (frame, &pad->frame_info, pad->frame,
          GST_MAP_READ | flags))
    return TRUE;
  GST_ELEMENT_ERROR (self, STREAM, FORMAT,
      ("The frame of camera %u (pad %s) does not hold a %s image of %d x %d "
          "(%" G_GSIZE_FORMAT " bytes)", pad->camera, GST_PAD_NAME (pad),
          GST_VIDEO_INFO_NAME (&pad->frame_info),
          GST_VIDEO_INFO_WIDTH (&pad->frame_info),
          GST_VIDEO_INFO_HEIGHT (&pad->frame_info),
          GST_VIDEO_INFO_SIZE (&pad->frame_info)),
      ("%" GST_PTR_FORMAT " has %" G_GSIZE_FORMAT " bytes", pad->frame,
          gst_buffer_get_size (pad->frame)));
  return FALSE;
}

static void
frame_planes (const GstVideoFrame * frame, P3dcCamPrepFrame * planes)
{
  const GstVideoFormatInfo *finfo = frame->info.finfo;
  guint c;

  memset (planes, 0, sizeof (*planes));
  if (GST_VIDEO_FORMAT_INFO_IS_RGB (finfo)) {
    planes->planes[0] = GST_VIDEO_FRAME_PLANE_DATA (frame, 0);
    planes->strides[0] = GST_VIDEO_FRAME_PLANE_STRIDE (frame, 0);
    return;
  }
  /* Y, then the plane of U (and of V when it has its own) */
  for (c = 0; c < 3; c++) {
    guint plane = GST_VIDEO_FORMAT_INFO_PLANE (finfo, GST_VIDEO_COMP_Y + c);

    planes->planes[c] = GST_VIDEO_FRAME_PLANE_DATA (frame, plane);
    planes->strides[c] = GST_VIDEO_FRAME_PLANE_STRIDE (frame, plane);
  }
}

/* The set on the reference path into @out. */
static GstFlowReturn
process_cpu (P3dCamEncode * self, GList * pads, GstBuffer * out)
{
  const P3dcConvNetDesc *desc = &self->network->desc;
  gsize per_camera = p3dc_convnet_buffer_elements (desc, 0) /
      self->cameras->n_cameras;
  gboolean half = self->out_info.format == P3D_DATA_FORMAT_F16;
  P3dcCamFeaturesPack pack;
  P3dcMapView view;
  P3dTensorMap map;
  gchar *why = NULL;
  P3dcResult result = P3DC_OK;
  GList *l;

  for (l = pads; l != NULL; l = l->next) {
    P3dCamEncodePad *pad = l->data;
    P3dcCamPrepFrame planes;
    GstVideoFrame frame;

    if (!map_frame (self, pad, &frame, 0))
      return GST_FLOW_ERROR;
    frame_planes (&frame, &planes);
    result = p3dc_camprep_cpu (self->plans[pad->camera], &planes, &self->norm,
        self->cpu_input + pad->camera * per_camera, FALSE);
    gst_video_frame_unmap (&frame);
    if (result != P3DC_OK)
      goto failed;
  }
  result = p3dc_convnet_cpu (desc, self->cpu_input, self->cpu_buffers);
  if (result != P3DC_OK)
    goto failed;
  if (!p3d_tensor_map (&map, out, &self->out_layout,
          GST_MAP_WRITE | P3D_MAP_OVERWRITE, &why)) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("Cannot map the output"),
        ("%s", why));
    g_free (why);
    return GST_FLOW_ERROR;
  }
  pack.batch = self->cameras->n_cameras;
  pack.height = self->out_info.height;
  pack.width = self->out_info.width;
  pack.half_out = half;
  pack.channels = self->out_info.channels;
  pack.channels_last = TRUE;
  p3dc_convnet_cpu_view (desc, self->features->buffer,
      self->cpu_buffers[self->features->buffer], &view);
  p3dc_map_view_offset_channels (&view, self->features->channel_offset);
  result = p3dc_camfeatures_pack_cpu (&pack, &view,
      map.data[P3D_CAMERA_FEATURES_TENSOR_FEATURES]);
  if (result == P3DC_OK) {
    pack.channels = self->out_info.depth_bins;
    pack.channels_last = FALSE;
    p3dc_convnet_cpu_view (desc, self->depth->buffer,
        self->cpu_buffers[self->depth->buffer], &view);
    p3dc_map_view_offset_channels (&view, self->depth->channel_offset);
    result = p3dc_camfeatures_pack_cpu (&pack, &view,
        map.data[P3D_CAMERA_FEATURES_TENSOR_DEPTH]);
  }
  p3d_tensor_unmap (&map);
  if (result == P3DC_OK)
    return GST_FLOW_OK;

failed:
  GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Encoding the cameras failed"),
      ("%s", p3dc_result_string (result)));
  return GST_FLOW_ERROR;
}

/* A device buffer of at least @size bytes in *@slot, kept between sets
 * and grown when a larger one is needed. */
static gpointer
device_buffer (P3dCamEncode * self, gpointer * slot, gsize * slot_size,
    gsize size)
{
  if (*slot_size >= size)
    return *slot;
  if (*slot != NULL) {
    /* queued work may still read it */
    if (!check_cuda (self, p3dc_cuda_stream_synchronize (self->stream),
            "waiting before growing a work buffer"))
      return NULL;
    log_failure (self, p3dc_cuda_free (*slot), "freeing a work buffer");
    *slot = NULL;
    *slot_size = 0;
  }
  if (!check_cuda (self, p3dc_cuda_malloc (slot, size),
          "allocating a work buffer"))
    return NULL;
  *slot_size = size;
  return *slot;
}

/* How a frame's memory learns that the set's reads of it are done. */
typedef enum
{
  READ_NOTHING,                 /* a host frame, copied before the call
                                 * returned */
  READ_HERE,                    /* our memory on our device */
  READ_FROM_PEER,               /* our memory on another device */
} FrameRead;

/* The frame of camera @pad on the device: its own memory when it is our
 * CUDA memory on our device (the stream waits for its producer), else a
 * copy, from the host or device to device. @mapped says whether @frame
 * holds a mapping to release after the set's work is queued, @read how
 * the memory learns that the reads are done. */
static gboolean
frame_on_device (P3dCamEncode * self, P3dCamEncodePad * pad,
    GstVideoFrame * frame, gboolean * mapped, FrameRead * read,
    P3dcCamPrepFrame * planes)
{
  GstMemory *mem = gst_buffer_n_memory (pad->frame) == 1 ?
      gst_buffer_peek_memory (pad->frame, 0) : NULL;
  guint k = pad->camera, p;
  GstVideoFrame host;
  gsize total = 0;
  guint8 *device;

  *mapped = FALSE;
  *read = READ_NOTHING;
  if (mem != NULL && p3d_is_cuda_memory (mem)
      && ((P3dCudaMemory *) mem)->device_id == self->device_id) {
    if (!map_frame (self, pad, frame, P3D_MAP_CUDA))
      return FALSE;
    *mapped = TRUE;
    if (!p3d_cuda_memory_wait (mem, self->stream))
      return check_cuda (self, P3DC_ERROR_INVALID_ARGUMENT,
          "ordering a frame after its producer");
    *read = READ_HERE;
    frame_planes (frame, planes);
    return TRUE;
  }
  if (mem != NULL && p3d_is_cuda_memory (mem)) {
    /* another device: copied device to device, never through the host */
    P3dCudaMemory *cmem = (P3dCudaMemory *) mem;
    gint enabled = 0;

    if (!map_frame (self, pad, frame, P3D_MAP_CUDA))
      return FALSE;
    *mapped = TRUE;
    if (!check_cuda (self, p3dc_cuda_enable_peer_access (cmem->device_id,
                &enabled), "enabling peer access"))
      return FALSE;
    device = device_buffer (self, &self->uploads[k], &self->upload_sizes[k],
        mem->size);
    if (device == NULL || !p3d_cuda_memory_wait (mem, self->stream)
        || !check_cuda (self, p3dc_cuda_memcpy_peer (device, self->device_id,
                (guint8 *) cmem->device_data + mem->offset, cmem->device_id,
                mem->size, self->stream), "copying a frame between devices"))
      return FALSE;
    *read = READ_FROM_PEER;
    frame_planes (frame, planes);
    for (p = 0; p < 3; p++)
      if (planes->planes[p] != NULL)
        planes->planes[p] = device + (planes->planes[p] -
            ((guint8 *) cmem->device_data + mem->offset));
    return TRUE;
  }
  /* system memory (or another kind of device memory, read through the
   * host): each plane uploaded with its stride; from pageable memory the
   * copy has left the frame when the call returns */
  GST_CAT_LOG_OBJECT (GST_CAT_PERFORMANCE, pad, "uploading a frame");
  if (!map_frame (self, pad, &host, 0))
    return FALSE;
  for (p = 0; p < GST_VIDEO_FRAME_N_PLANES (&host); p++)
    total += (gsize) GST_VIDEO_FRAME_PLANE_STRIDE (&host, p) *
        GST_VIDEO_FRAME_COMP_HEIGHT (&host,
        GST_VIDEO_FORMAT_INFO_IS_RGB (host.info.finfo) ? 0 : p ? 1 : 0);
  device = device_buffer (self, &self->uploads[k], &self->upload_sizes[k],
      total);
  frame_planes (&host, planes);
  total = 0;
  for (p = 0; device != NULL && p < GST_VIDEO_FRAME_N_PLANES (&host); p++) {
    gsize size = (gsize) GST_VIDEO_FRAME_PLANE_STRIDE (&host, p) *
        GST_VIDEO_FRAME_COMP_HEIGHT (&host,
        GST_VIDEO_FORMAT_INFO_IS_RGB (host.info.finfo) ? 0 : p ? 1 : 0);
    guint c;

    if (!check_cuda (self, p3dc_cuda_memcpy_htod (device + total,
                GST_VIDEO_FRAME_PLANE_DATA (&host, p), size, self->stream),
            "uploading a frame")) {
      device = NULL;
      break;
    }
    for (c = 0; c < 3; c++)
      if (planes->planes[c] == GST_VIDEO_FRAME_PLANE_DATA (&host, p))
        planes->planes[c] = device + total;
    total += size;
  }
  gst_video_frame_unmap (&host);
  return device != NULL;
}

/* The outputs of the network, packed into @features and @depth on the
 * device. */
static gboolean
pack_cuda (P3dCamEncode * self, gpointer features, gpointer depth)
{
  P3dcCamFeaturesPack pack;
  P3dcMapView view;

  pack.batch = self->cameras->n_cameras;
  pack.height = self->out_info.height;
  pack.width = self->out_info.width;
  pack.half_out = self->out_info.format == P3D_DATA_FORMAT_F16;
  pack.channels = self->out_info.channels;
  pack.channels_last = TRUE;
  if (!check_cuda (self, p3dc_convnet_cuda_view (self->net,
              self->features->buffer, &view), "reading the network"))
    return FALSE;
  p3dc_map_view_offset_channels (&view, self->features->channel_offset);
  if (!check_cuda (self, p3dc_camfeatures_pack_cuda (&pack, &view, features,
              self->stream), "packing the features"))
    return FALSE;
  pack.channels = self->out_info.depth_bins;
  pack.channels_last = FALSE;
  if (!check_cuda (self, p3dc_convnet_cuda_view (self->net,
              self->depth->buffer, &view), "reading the network"))
    return FALSE;
  p3dc_map_view_offset_channels (&view, self->depth->channel_offset);
  return check_cuda (self, p3dc_camfeatures_pack_cuda (&pack, &view, depth,
          self->stream), "packing the depth");
}

/* The packed outputs into @out: written on the device when it is our CUDA
 * memory on our device, else packed into work buffers and copied down
 * (the one host synchronization, as the output leaves the device). */
static gboolean
output_cuda (P3dCamEncode * self, GstBuffer * out)
{
  gboolean ok = TRUE, on_device = self->out_cuda
      && p3d_tensor_buffer_is_on_device (out, &self->out_layout,
      self->device_id);
  P3dTensorMap map;
  gchar *why = NULL;
  guint i;

  if (on_device) {
    if (!p3d_tensor_map (&map, out, &self->out_layout,
            GST_MAP_WRITE | P3D_MAP_CUDA, &why))
      goto map_failed;
    /* readers of this pooled buffer's previous set finish first */
    for (i = 0; i < map.n_tensors && ok; i++)
      ok = p3d_cuda_memory_wait (gst_buffer_peek_memory (out, i), self->stream);
    ok = ok && pack_cuda (self, map.data[P3D_CAMERA_FEATURES_TENSOR_FEATURES],
        map.data[P3D_CAMERA_FEATURES_TENSOR_DEPTH]);
    for (i = 0; i < map.n_tensors && ok; i++)
      ok = p3d_cuda_memory_record (gst_buffer_peek_memory (out, i),
          self->stream);
    p3d_tensor_unmap (&map);
    return ok || check_cuda (self, P3DC_ERROR_INVALID_ARGUMENT,
        "ordering the output");
  }
  for (i = 0; i < P3D_CAMERA_FEATURES_N_TENSORS; i++)
    if (device_buffer (self, &self->scratch[i], &self->scratch_sizes[i],
            self->out_layout.size[i]) == NULL)
      return FALSE;
  if (!pack_cuda (self, self->scratch[P3D_CAMERA_FEATURES_TENSOR_FEATURES],
          self->scratch[P3D_CAMERA_FEATURES_TENSOR_DEPTH]))
    return FALSE;
  if (!p3d_tensor_map (&map, out, &self->out_layout,
          GST_MAP_WRITE | P3D_MAP_OVERWRITE, &why))
    goto map_failed;
  GST_CAT_LOG_OBJECT (GST_CAT_PERFORMANCE, self, "downloading the output");
  for (i = 0; i < map.n_tensors && ok; i++)
    ok = check_cuda (self, p3dc_cuda_memcpy_dtoh (map.data[i],
            self->scratch[i], map.size[i], self->stream),
        "downloading the output");
  ok = ok && check_cuda (self, p3dc_cuda_stream_synchronize (self->stream),
      "waiting for the output");
  p3d_tensor_unmap (&map);
  return ok;

map_failed:
  GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("Cannot map the output"),
      ("%s", why));
  g_free (why);
  return FALSE;
}

static gint
prep_new (P3dCamEncode * self)
{
  return p3dc_camprep_cuda_new ((const P3dcCamPrepPlan * const *) self->plans,
      self->cameras->n_cameras, &self->norm, &self->prep);
}

/* The set on the device into @out. */
static GstFlowReturn
process_cuda (P3dCamEncode * self, GList * pads, GstBuffer * out)
{
  GstVideoFrame frames[P3D_CAMERA_FEATURES_MAX_CAMERAS];
  gboolean mapped[P3D_CAMERA_FEATURES_MAX_CAMERAS] = { FALSE, };
  FrameRead read[P3D_CAMERA_FEATURES_MAX_CAMERAS] = { READ_NOTHING, };
  P3dcCamPrepFrame planes[P3D_CAMERA_FEATURES_MAX_CAMERAS];
  GstFlowReturn ret = GST_FLOW_ERROR;
  gboolean ok = TRUE, peers = FALSE;
  gint previous;
  GList *l;

  if (!device_enter (self, &previous))
    return GST_FLOW_ERROR;
  if (self->prep_stale) {
    /* queued sets may still read the old tables */
    if (self->prep != NULL && !check_cuda (self,
            p3dc_cuda_stream_synchronize (self->stream),
            "waiting before new preprocessing tables"))
      goto done;
    g_clear_pointer (&self->prep, p3dc_camprep_cuda_free);
    if (!check_cuda (self, prep_new (self), "setting up the preprocessing"))
      goto done;
    self->prep_stale = FALSE;
  }
  for (l = pads; l != NULL && ok; l = l->next) {
    P3dCamEncodePad *pad = l->data;
    guint k = pad->camera;

    ok = frame_on_device (self, pad, &frames[k], &mapped[k], &read[k],
        &planes[k]);
    peers |= read[k] == READ_FROM_PEER;
  }
  ok = ok && check_cuda (self, p3dc_camprep_cuda_run (self->prep, planes,
          self->device_input, self->half, self->stream),
      "preparing the images");
  /* the frames' producers may reuse them once these reads are done: a
   * memory of our device records our stream, one of another device our
   * event (an event records only on a stream of its own device) */
  if (peers)
    ok = check_cuda (self, p3dc_cuda_event_record (self->peer_event,
            self->stream), "recording the copies between devices") && ok;
  for (l = pads; l != NULL; l = l->next) {
    P3dCamEncodePad *pad = l->data;
    guint k = pad->camera;
    gboolean recorded = TRUE;

    if (read[k] == READ_HERE)
      recorded = p3d_cuda_memory_record (gst_buffer_peek_memory (pad->frame,
              0), self->stream);
    else if (read[k] == READ_FROM_PEER)
      recorded = p3d_cuda_memory_record_from (gst_buffer_peek_memory
          (pad->frame, 0), self->peer_event);
    if (!recorded)
      ok = check_cuda (self, P3DC_ERROR_INVALID_ARGUMENT,
          "recording the read of a frame");
    if (mapped[k])
      gst_video_frame_unmap (&frames[k]);
  }
  ok = ok && check_cuda (self, p3dc_convnet_cuda_run (self->net,
          self->device_input, self->half, self->stream),
      "running the image network");
  if (ok && output_cuda (self, out))
    ret = GST_FLOW_OK;

done:
  device_leave (self, previous);
  return ret;
}

/* What the set does for a camera that has no frame, as missing-camera
 * says; FALSE drops the set (@ret GST_FLOW_OK) or stops (@ret an error). */
static gboolean
handle_missing (P3dCamEncode * self, GList * pads, GstClockTime start,
    GstFlowReturn * ret)
{
  P3dCamEncodeMissing missing;
  gboolean warn_repeat = FALSE, warn_drop = FALSE, drop = FALSE;
  P3dCamEncodePad *first_missing = NULL;
  GList *l;

  GST_OBJECT_LOCK (self);
  missing = self->missing;
  GST_OBJECT_UNLOCK (self);
  *ret = GST_FLOW_OK;
  for (l = pads; l != NULL; l = l->next) {
    P3dCamEncodePad *pad = l->data;

    if (pad->fresh)
      continue;
    if (first_missing == NULL)
      first_missing = pad;
    if (missing == P3D_CAM_ENCODE_MISSING_REPEAT && pad->frame != NULL) {
      GST_OBJECT_LOCK (self);
      self->frames_repeated++;
      GST_OBJECT_UNLOCK (self);
      GST_DEBUG_OBJECT (pad, "no frame for the set at %" GST_TIME_FORMAT
          ": its frame at %" GST_TIME_FORMAT " again", GST_TIME_ARGS (start),
          GST_TIME_ARGS (pad->frame_time));
      if (!pad->warned_missing) {
        pad->warned_missing = TRUE;
        warn_repeat = TRUE;
      }
    } else {
      drop = TRUE;
      if (!pad->warned_missing) {
        pad->warned_missing = TRUE;
        warn_drop = TRUE;
      }
    }
  }
  if (first_missing == NULL)
    return TRUE;
  if (missing == P3D_CAM_ENCODE_MISSING_ERROR) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED,
        ("Camera %u (%s, pad %s) has no frame for the set at running time %"
            GST_TIME_FORMAT " (missing-camera=error)", first_missing->camera,
            camera_name (self, first_missing->camera),
            GST_PAD_NAME (first_missing), GST_TIME_ARGS (start)), (NULL));
    *ret = GST_FLOW_ERROR;
    return FALSE;
  }
  if (warn_repeat)
    GST_ELEMENT_WARNING (self, STREAM, FAILED,
        ("Camera %u (%s, pad %s) has no frame for the set at running time %"
            GST_TIME_FORMAT ": its last frame is used again",
            first_missing->camera, camera_name (self, first_missing->camera),
            GST_PAD_NAME (first_missing), GST_TIME_ARGS (start)),
        ("frames-repeated counts every repeat; this warning is posted once "
            "for each camera"));
  if (drop) {
    GST_OBJECT_LOCK (self);
    self->sets_dropped++;
    GST_OBJECT_UNLOCK (self);
    if (warn_drop)
      GST_ELEMENT_WARNING (self, STREAM, FAILED,
          ("Camera %u (%s, pad %s) has no frame for the set at running time %"
              GST_TIME_FORMAT ": the set is dropped", first_missing->camera,
              camera_name (self, first_missing->camera),
              GST_PAD_NAME (first_missing), GST_TIME_ARGS (start)),
          ("sets-dropped counts every set dropped; this warning is posted "
              "once for each camera (missing-camera=%s)",
              missing == P3D_CAM_ENCODE_MISSING_DROP ? "drop" :
              "repeat, before the camera's first frame"));
    return FALSE;
  }
  return TRUE;
}

/* The output for the set [@start, @end) of the pads' frames. */
static GstFlowReturn
make_set (P3dCamEncode * self, GList * pads, GstClockTime start,
    GstClockTime end)
{
  GstAggregator *agg = GST_AGGREGATOR (self);
  GstSegment *segment = &GST_AGGREGATOR_PAD (agg->srcpad)->segment;
  P3dCameraFeaturesInfo wanted;
  GstBufferPool *pool;
  GstBuffer *out = NULL;
  GstClockTime pts;
  GstFlowReturn ret;

  if (!update_plans (self, pads))
    return GST_FLOW_ERROR;
  /* the caps name every camera's transform: a camera whose size changed
   * makes new caps before its set goes out */
  if (!self->negotiated || !output_info (self, self->out_info.format, &wanted)
      || !p3d_camera_features_info_is_equal (&wanted, &self->out_info)) {
    GST_DEBUG_OBJECT (self, "the set's cameras differ from the caps: "
        "negotiating");
    if (!gst_aggregator_negotiate (agg) || !self->negotiated
        || !output_info (self, self->out_info.format, &wanted)
        || !p3d_camera_features_info_is_equal (&wanted, &self->out_info))
      return GST_FLOW_NOT_NEGOTIATED;
  }
  pool = gst_aggregator_get_buffer_pool (agg);
  if (pool == NULL) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("No output buffer pool"),
        (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  if (!gst_buffer_pool_is_active (pool)
      && !gst_buffer_pool_set_active (pool, TRUE)) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Cannot activate the output buffer pool"), (NULL));
    gst_object_unref (pool);
    return GST_FLOW_ERROR;
  }
  ret = gst_buffer_pool_acquire_buffer (pool, &out, NULL);
  gst_object_unref (pool);
  if (ret != GST_FLOW_OK)
    return ret;
  ret = self->use_cuda ? process_cuda (self, pads, out) :
      process_cpu (self, pads, out);
  if (ret != GST_FLOW_OK) {
    gst_buffer_unref (out);
    return ret;
  }
  GST_OBJECT_LOCK (self);
  pts = gst_segment_position_from_running_time (segment, GST_FORMAT_TIME,
      start);
  if (!GST_CLOCK_TIME_IS_VALID (pts))
    pts = start;
  segment->position = pts + (end - start);
  GST_OBJECT_UNLOCK (self);
  GST_BUFFER_PTS (out) = pts;
  GST_BUFFER_DURATION (out) = end - start;
  GST_LOG_OBJECT (self, "set %" G_GUINT64_FORMAT " at %" GST_TIME_FORMAT,
      self->set_index, GST_TIME_ARGS (start));
  gst_aggregator_selected_samples (agg, pts, GST_CLOCK_TIME_NONE, end - start,
      NULL);
  return gst_aggregator_finish_buffer (agg, out);
}

static GstFlowReturn
p3d_cam_encode_aggregate (GstAggregator * agg, gboolean timeout)
{
  P3dCamEncode *self = P3D_CAM_ENCODE (agg);
  GList *pads = get_sink_pads (self), *l;
  GstFlowReturn ret = GST_FLOW_OK;
  gboolean wait = FALSE, any_fresh = FALSE, all_eos = TRUE;
  GstClockTime start, end, next = GST_CLOCK_TIME_NONE;

  if (!check_pads (self)) {
    ret = GST_FLOW_ERROR;
    goto done;
  }
  for (l = pads; l != NULL; l = l->next)
    if (P3D_CAM_ENCODE_PAD (l->data)->refused) {
      ret = GST_FLOW_NOT_NEGOTIATED;
      goto done;
    }
  /* the sets' rate before the output's caps give it */
  if (!self->negotiated) {
    cameras_framerate (self, &self->fps_n, &self->fps_d);
    if (self->fps_n <= 0) {
      self->fps_n = DEFAULT_FPS_N;
      self->fps_d = DEFAULT_FPS_D;
    }
  }
  if (!GST_CLOCK_TIME_IS_VALID (self->base_time)) {
    for (l = pads; l != NULL; l = l->next) {
      GstClockTime time = pad_next_time (l->data);

      if (GST_CLOCK_TIME_IS_VALID (time)
          && (!GST_CLOCK_TIME_IS_VALID (next) || time < next))
        next = time;
    }
    self->base_time = GST_CLOCK_TIME_IS_VALID (next) ? next : 0;
    self->set_index = 0;
  }
  start = set_start (self, self->set_index);
  end = set_start (self, self->set_index + 1);

  for (l = pads; l != NULL; l = l->next) {
    P3dCamEncodePad *pad = l->data;
    CameraState state = select_frame (pad, start, end);

    wait |= state == CAMERA_WAIT;
    any_fresh |= state == CAMERA_FRESH;
    if (!gst_aggregator_pad_is_eos (GST_AGGREGATOR_PAD (pad))
        || gst_aggregator_pad_has_buffer (GST_AGGREGATOR_PAD (pad)))
      all_eos = FALSE;
  }
  /* not live: a camera may still send a frame for this set */
  if (wait && !timeout) {
    ret = GST_AGGREGATOR_FLOW_NEED_DATA;
    goto done;
  }
  if (!any_fresh) {
    if (all_eos) {
      GST_DEBUG_OBJECT (self, "every camera is at EOS");
      ret = GST_FLOW_EOS;
      goto done;
    }
    /* no camera has a frame in this set: on to the set of the earliest
     * frame queued */
    next = GST_CLOCK_TIME_NONE;
    for (l = pads; l != NULL; l = l->next) {
      GstClockTime time = pad_next_time (l->data);

      if (GST_CLOCK_TIME_IS_VALID (time)
          && (!GST_CLOCK_TIME_IS_VALID (next) || time < next))
        next = time;
    }
    if (GST_CLOCK_TIME_IS_VALID (next) && next >= end)
      self->set_index = gst_util_uint64_scale (next - self->base_time,
          self->fps_n, (guint64) self->fps_d * GST_SECOND);
    else
      self->set_index++;
    goto done;
  }
  if (handle_missing (self, pads, start, &ret))
    ret = make_set (self, pads, start, end);
  for (l = pads; l != NULL; l = l->next)
    P3D_CAM_ENCODE_PAD (l->data)->fresh = FALSE;
  self->set_index++;

done:
  g_list_free_full (pads, gst_object_unref);
  return ret;
}
