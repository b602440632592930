/**
 * SECTION:element-bevdetect
 * @title: bevdetect
 *
 * The detector of a model on a bird's-eye-view feature map: the 2D
 * backbone, the neck and the detection head of the model in a safetensors
 * weights file (docs/weights.md; CenterPoint's and PointPillars' SECOND and
 * SECONDFPN, or BEVDet's ResNetForBEVDet and FPN_LSS), then the decode of
 * the head's maps into boxes as the model's framework does it.
 *
 * A PointPillars model's anchor head (OpenPCDet's AnchorHeadSingle,
 * mmdetection3d's Anchor3DHead) decodes its anchors' deltas and direction
 * bins, keeps the best candidates of each list above the score threshold
 * and runs the framework's rotated (or axis-aligned) NMS, so the boxes
 * equal the framework's; model-nms=false outputs every candidate instead.
 *
 * A CenterHead (CenterPoint, BEVDet) decodes as mmdetection3d's
 * CenterPointBBoxCoder does:
 * per task, the heatmap's sigmoid, the best max-num (class, cell) pairs,
 * those scoring above the coder's threshold inside its post-centre range,
 * each with its offset, height, exp of its size and atan2 of its yaw; labels
 * count over all tasks' classes. With model-nms (the default) the model's
 * own test-time NMS runs per task as its configuration says (rotated-box
 * IoU or CenterPoint's circle rule, or BEVDet's Scale-NMS: per task one of
 * them, the boxes of each class scaled for the overlap test), so the boxes
 * equal what mmdetection3d's (or BEVDet's) predict returns; z is the box
 * centre, as every application/x-boxes3d record (mmdetection3d puts z at
 * the bottom). A head with a vel branch gives each box a velocity: the
 * output then has velocity=true and the velocity tensor, unless downstream
 * asks for velocity=false (the records alone).
 *
 * The input is any application/x-bev-features whose channels and size match
 * the weights (pillarencode's canvas, or bevpool's for a camera model). The
 * CUDA path runs the convolutions on cuDNN (loaded when the element starts;
 * deterministic algorithms, chosen once), in F16 with F32 accumulation or in
 * F32 (property precision); the reference path computes in float32 with
 * plain loops, slowly: it is meant for small models and tests.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 pointcloudtestsrc num-buffers=10 format=xyzit \
 *   ! voxelize voxel-size="<0.2,0.2,8>" range="<-51.2,-51.2,-5,51.2,51.2,3>" \
 *       max-points=20 max-voxels=40000 \
 *   ! pillarfeat features=mmdet3d-11 ! pillarencode weights=model.safetensors \
 *   ! bevdetect weights=model.safetensors ! boxenc ! filesink location=boxes.jsonl
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include "gstbevdetect.h"
#include "half.h"
#include "p3dmodelfile.h"

GST_DEBUG_CATEGORY_STATIC (p3d_bev_detect_debug);
#define GST_CAT_DEFAULT p3d_bev_detect_debug

enum
{
  PROP_0,
  PROP_WEIGHTS,
  PROP_MODEL_NMS,
  PROP_PRECISION,
};

#define DEFAULT_MODEL_NMS TRUE
#define DEFAULT_PRECISION P3D_PRECISION_F16

GType
p3d_precision_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {P3D_PRECISION_F16, "F16 storage, F32 accumulation (tensor cores)",
        "f16"},
    {P3D_PRECISION_F32, "F32 storage and accumulation", "f32"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dPrecision", values);

    g_once_init_leave (&type, t);
  }
  return type;
}

#define p3d_bev_detect_parent_class parent_class
G_DEFINE_TYPE (P3dBevDetect, p3d_bev_detect, P3D_TYPE_CUDA_FILTER);
GST_ELEMENT_REGISTER_DEFINE (bevdetect, "bevdetect", GST_RANK_NONE,
    P3D_TYPE_BEV_DETECT);

static void p3d_bev_detect_finalize (GObject * object);
static void p3d_bev_detect_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void p3d_bev_detect_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static gboolean p3d_bev_detect_start (GstBaseTransform * trans);
static gboolean p3d_bev_detect_stop (GstBaseTransform * trans);
static GstCaps *p3d_bev_detect_transform_media_caps (P3dCudaFilter * filter,
    GstPadDirection direction, GstCaps * caps);
static gboolean p3d_bev_detect_set_info (P3dCudaFilter * filter,
    GstCaps * incaps, P3dTensorLayout * in_layout, GstCaps * outcaps,
    P3dTensorLayout * out_layout, GError ** error);
static void p3d_bev_detect_stop_device (P3dCudaFilter * filter);
static GstFlowReturn p3d_bev_detect_process_cpu (P3dCudaFilter * filter,
    GstBuffer * inbuf, P3dTensorMap * in, P3dTensorMap * out);
static GstFlowReturn p3d_bev_detect_process_cuda (P3dCudaFilter * filter,
    GstBuffer * inbuf, P3dTensorMap * in, P3dTensorMap * out,
    gboolean out_clean);

static void
p3d_bev_detect_class_init (P3dBevDetectClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  P3dCudaFilterClass *filter_class = P3D_CUDA_FILTER_CLASS (klass);
  GstCaps *sink_caps, *src_caps;

  gobject_class->finalize = p3d_bev_detect_finalize;
  gobject_class->set_property = p3d_bev_detect_set_property;
  gobject_class->get_property = p3d_bev_detect_get_property;

  g_object_class_install_property (gobject_class, PROP_WEIGHTS,
      g_param_spec_string ("weights", "Weights",
          "Path of the model's safetensors file (docs/weights.md): the "
          "backbone's, neck's and head's weights and the model's "
          "configuration. Required", NULL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_MODEL_NMS,
      g_param_spec_boolean ("model-nms", "Model NMS",
          "Apply the model's own test-time NMS (per task for CenterPoint, "
          "per list for an anchor head), as its configuration gives it, so "
          "the boxes equal the framework's; FALSE: output every decoded box "
          "(CenterPoint: up to the coder's max-num per task; an anchor "
          "head: the pre-max best candidates of each list) for a downstream "
          "nms", DEFAULT_MODEL_NMS,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_PRECISION,
      g_param_spec_enum ("precision", "Precision",
          "Storage of the network on the device (the reference path "
          "computes in F32 whatever this says)", P3D_TYPE_PRECISION,
          DEFAULT_PRECISION,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  gst_element_class_set_static_metadata (element_class,
      "BEV detector", "Filter/Analyzer/Lidar",
      "Bird's-eye-view features to 3D boxes through a model's backbone, "
      "neck and head (CenterPoint, BEVDet, PointPillars' anchor heads) and "
      "its box decode, on CUDA (cuDNN) or on the CPU",
      "gst-perception developers");

  sink_caps = gst_caps_from_string (P3D_BEV_FEATURES_CAPS_ALL);
  src_caps = gst_caps_from_string (P3D_MEDIA_TYPE_BOXES3D);
  p3d_cuda_filter_class_add_pad_templates (filter_class, sink_caps, src_caps);
  gst_caps_unref (sink_caps);
  gst_caps_unref (src_caps);

  trans_class->start = GST_DEBUG_FUNCPTR (p3d_bev_detect_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (p3d_bev_detect_stop);
  filter_class->transform_media_caps =
      GST_DEBUG_FUNCPTR (p3d_bev_detect_transform_media_caps);
  /* the model's values first; others reach set_info, which names them */
  filter_class->sink_fallback_caps = P3D_BEV_FEATURES_CAPS_ALL;
  filter_class->src_fallback_caps = P3D_MEDIA_TYPE_BOXES3D;
  filter_class->set_info = GST_DEBUG_FUNCPTR (p3d_bev_detect_set_info);
  filter_class->stop_device = GST_DEBUG_FUNCPTR (p3d_bev_detect_stop_device);
  filter_class->process_cpu = GST_DEBUG_FUNCPTR (p3d_bev_detect_process_cpu);
  filter_class->process_cuda = GST_DEBUG_FUNCPTR (p3d_bev_detect_process_cuda);

  gst_type_mark_as_plugin_api (P3D_TYPE_PRECISION, 0);
  GST_DEBUG_CATEGORY_INIT (p3d_bev_detect_debug, "bevdetect", 0,
      "BEV detector");
}

static void
p3d_bev_detect_init (P3dBevDetect * self)
{
  self->model_nms = DEFAULT_MODEL_NMS;
  self->precision = DEFAULT_PRECISION;
}

static void
p3d_bev_detect_finalize (GObject * object)
{
  P3dBevDetect *self = P3D_BEV_DETECT (object);

  g_free (self->weights);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
p3d_bev_detect_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dBevDetect *self = P3D_BEV_DETECT (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_WEIGHTS:
      g_free (self->weights);
      self->weights = g_value_dup_string (value);
      break;
    case PROP_MODEL_NMS:
      self->model_nms = g_value_get_boolean (value);
      break;
    case PROP_PRECISION:
      self->precision = g_value_get_enum (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
p3d_bev_detect_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  P3dBevDetect *self = P3D_BEV_DETECT (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_WEIGHTS:
      g_value_set_string (value, self->weights);
      break;
    case PROP_MODEL_NMS:
      g_value_set_boolean (value, self->model_nms);
      break;
    case PROP_PRECISION:
      g_value_set_enum (value, self->precision);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* The model is loaded before the base class starts, so that the caps the
 * model implies are known when negotiation begins. */
static gboolean
p3d_bev_detect_start (GstBaseTransform * trans)
{
  P3dBevDetect *self = P3D_BEV_DETECT (trans);
  P3dModel *model;
  const P3dModelNetwork *network;
  P3dModelDecoder *decoder;
  GError *error = NULL;
  gboolean model_nms;

  GST_OBJECT_LOCK (self);
  model_nms = self->model_nms;
  GST_OBJECT_UNLOCK (self);
  model = p3d_model_file_load_property (GST_ELEMENT (self), &self->weights);
  if (model == NULL)
    return FALSE;
  network = p3d_model_get_network (model, "bev");
  decoder = network != NULL ? p3d_model_decoder_new (model, "bev", model_nms,
      &error) : NULL;
  if (decoder == NULL) {
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("The weights file holds a %s model, which has no bird's-eye-view "
            "detector for bevdetect", model->architecture),
        ("%s", error ? error->message : "no \"bev\" network"));
    g_clear_error (&error);
    p3d_model_free (model);
    return FALSE;
  }
  GST_OBJECT_LOCK (self);
  self->model = model;
  self->network = network;
  self->decoder = decoder;
  GST_OBJECT_UNLOCK (self);
  if (!GST_BASE_TRANSFORM_CLASS (parent_class)->start (trans)) {
    p3d_bev_detect_stop (trans);
    return FALSE;
  }
  return TRUE;
}

static void
free_cpu_buffers (P3dBevDetect * self)
{
  if (self->cpu_buffers)
    p3dc_convnet_cpu_buffers_free (&self->network->desc, self->cpu_buffers);
  self->cpu_buffers = NULL;
  g_clear_pointer (&self->cpu_input, g_free);
}

static gboolean
p3d_bev_detect_stop (GstBaseTransform * trans)
{
  P3dBevDetect *self = P3D_BEV_DETECT (trans);
  gboolean ret = GST_BASE_TRANSFORM_CLASS (parent_class)->stop (trans);

  if (self->model)
    free_cpu_buffers (self);
  /* caps queries read the model from other threads */
  GST_OBJECT_LOCK (self);
  g_clear_pointer (&self->decoder, p3d_model_decoder_free);
  self->network = NULL;
  GST_OBJECT_UNLOCK (self);
  p3d_model_file_clear (GST_ELEMENT (self), &self->model);
  return ret;
}

static GstCaps *
p3d_bev_detect_transform_media_caps (P3dCudaFilter * filter,
    GstPadDirection direction, GstCaps * caps)
{
  P3dBevDetect *self = P3D_BEV_DETECT (filter);
  GstCaps *result = gst_caps_new_empty ();
  gboolean have_model, velocity = FALSE;
  P3dcConvBufferDesc canvas = { 0, };
  guint capacity = 0;
  guint i;

  GST_OBJECT_LOCK (self);
  have_model = self->decoder != NULL;
  if (have_model) {
    canvas = self->network->desc.buffers[0];
    capacity = p3d_model_decoder_get_capacity (self->decoder);
    velocity = p3d_model_decoder_has_velocity (self->decoder);
  }
  GST_OBJECT_UNLOCK (self);

  for (i = 0; i < gst_caps_get_size (caps); i++) {
    const GstStructure *s = gst_caps_get_structure (caps, i);
    GstStructure *other;
    const GValue *v;

    if (direction == GST_PAD_SINK) {
      other = gst_structure_new_empty (P3D_MEDIA_TYPE_BOXES3D);
      if (have_model)
        gst_structure_set (other, "max-boxes", G_TYPE_INT, (gint) capacity,
            NULL);
    } else {
      GstCaps *any = gst_caps_from_string (P3D_BEV_FEATURES_CAPS_ALL);

      other = gst_structure_copy (gst_caps_get_structure (any, 0));
      gst_caps_unref (any);
      if (have_model)
        gst_structure_set (other, "channels", G_TYPE_INT,
            (gint) canvas.channels, "width", G_TYPE_INT, (gint) canvas.width,
            "height", G_TYPE_INT, (gint) canvas.height, NULL);
    }
    if ((v = gst_structure_get_value (s, "framerate")))
      gst_structure_set_value (other, "framerate", v);
    if (direction == GST_PAD_SINK && have_model) {
      /* what the model gives first, so that a sink taking either gets it;
       * the other for a sink that wants the records alone, or (a model
       * without velocity) wants one, which set_info then refuses with a
       * reason rather than a bare not-negotiated */
      GstStructure *second = gst_structure_copy (other);

      gst_structure_set (other, "velocity", G_TYPE_BOOLEAN, velocity, NULL);
      gst_structure_set (second, "velocity", G_TYPE_BOOLEAN, !velocity, NULL);
      result = gst_caps_merge_structure (result, other);
      other = second;
    }
    result = gst_caps_merge_structure (result, other);
  }
  return result;
}

static gint
net_new (P3dCudaFilter * filter, gpointer * workspace)
{
  P3dBevDetect *self = P3D_BEV_DETECT (filter);
  P3dcResult result;

  self->net_message[0] = '\0';
  result = p3dc_convnet_cuda_new (&self->network->desc, self->half,
      (P3dcConvNet **) workspace, self->net_message,
      sizeof (self->net_message));
  if (result != P3DC_OK)
    GST_WARNING_OBJECT (self, "network on the GPU: %s", self->net_message);
  return result;
}

static gint
decoder_new (P3dCudaFilter * filter, gpointer * workspace)
{
  P3dBevDetect *self = P3D_BEV_DETECT (filter);

  return p3d_model_decoder_workspace_new (self->decoder,
      (P3dModelDecodeWorkspace **) workspace);
}

static gboolean
p3d_bev_detect_set_info (P3dCudaFilter * filter, GstCaps * incaps,
    P3dTensorLayout * in_layout, GstCaps * outcaps,
    P3dTensorLayout * out_layout, GError ** error)
{
  P3dBevDetect *self = P3D_BEV_DETECT (filter);
  const P3dModelNetwork *network = self->network;
  const P3dcConvBufferDesc *canvas = &network->desc.buffers[0];
  guint capacity = p3d_model_decoder_get_capacity (self->decoder);
  P3dBevFeaturesInfo in_info;
  P3dBoxes3dInfo out_info;
  P3dPrecision precision;
  gboolean half;
  gchar *weights;

  if (!p3d_bev_features_info_from_caps (&in_info, incaps)) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "The input caps are not a BEV canvas: %s (GST_DEBUG=p3dcaps:5 says "
        "which field)", gst_structure_get_name (gst_caps_get_structure
            (incaps, 0)));
    return FALSE;
  }
  if (!p3d_boxes3d_info_from_caps (&out_info, outcaps)) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "The output caps describe no 3D boxes (GST_DEBUG=p3dcaps:5 says "
        "which field)");
    return FALSE;
  }
  GST_OBJECT_LOCK (self);
  weights = g_strdup (self->weights);
  GST_OBJECT_UNLOCK (self);
  if (in_info.channels != canvas->channels) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "The BEV features have channels=%u, the model in %s takes "
        "channels=%u: give the element before bevdetect the same model "
        "(pillarencode weights=%s), or make bevpool's channels (the camera "
        "features' channels x the z cells of zbound) %u", in_info.channels,
        weights, canvas->channels, weights, canvas->channels);
    g_free (weights);
    return FALSE;
  }
  if (in_info.width != canvas->width || in_info.height != canvas->height) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "The BEV features are width=%u height=%u, the model in %s takes "
        "width=%u height=%u: set the grid before bevdetect to the model's "
        "(voxelize voxel-size and range, or bevpool xbound and ybound)",
        in_info.width, in_info.height, weights, canvas->width, canvas->height);
    g_free (weights);
    return FALSE;
  }
  if (in_info.layout != P3D_BEV_FEATURES_LAYOUT_YX) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "The BEV features have layout=xy, the model in %s takes layout=yx: "
        "set bevpool layout=yx", weights);
    g_free (weights);
    return FALSE;
  }
  if (out_info.max_boxes != capacity) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "Downstream asks for max-boxes=%u, the model in %s outputs up to "
        "max-boxes=%u: the caps after bevdetect must take max-boxes=%u",
        out_info.max_boxes, weights, capacity, capacity);
    g_free (weights);
    return FALSE;
  }
  if (out_info.velocity && !p3d_model_decoder_has_velocity (self->decoder)) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "Downstream asks for velocity=true, but the model in %s has no "
        "velocity branch: the caps after bevdetect must take velocity=false",
        weights);
    g_free (weights);
    return FALSE;
  }
  g_free (weights);

  GST_OBJECT_LOCK (self);
  precision = self->precision;
  GST_OBJECT_UNLOCK (self);
  half = precision == P3D_PRECISION_F16;
  if (filter->use_cuda) {
    if (self->net == NULL || half != self->half) {
      self->half = half;
      if (!p3d_cuda_filter_replace_workspace (filter,
              (gpointer *) & self->net, (GDestroyNotify) p3dc_convnet_cuda_free,
              net_new, "setting up the network on the GPU", error)) {
        if (self->net_message[0])
          g_prefix_error (error, "%s: ", self->net_message);
        return FALSE;
      }
    }
    if (self->decode_workspace == NULL
        && !p3d_cuda_filter_replace_workspace (filter,
            (gpointer *) & self->decode_workspace,
            (GDestroyNotify) p3d_model_decode_workspace_free, decoder_new,
            "allocating the decode workspace", error))
      return FALSE;
  } else if (self->cpu_buffers == NULL) {
    self->cpu_buffers = p3dc_convnet_cpu_buffers_new (&network->desc);
    self->cpu_input = g_try_new (float,
        p3dc_convnet_buffer_elements (&network->desc, 0));
    if (self->cpu_buffers == NULL || self->cpu_input == NULL) {
      free_cpu_buffers (self);
      g_set_error (error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NO_SPACE_LEFT,
          "Not enough memory for the network's activations");
      return FALSE;
    }
  }
  self->in_info = in_info;
  self->out_info = out_info;
  p3d_bev_features_info_get_layout (&in_info, in_layout);
  p3d_boxes3d_info_get_layout (&out_info, out_layout);
  return TRUE;
}

static void
p3d_bev_detect_stop_device (P3dCudaFilter * filter)
{
  P3dBevDetect *self = P3D_BEV_DETECT (filter);

  g_clear_pointer (&self->net, p3dc_convnet_cuda_free);
  g_clear_pointer (&self->decode_workspace, p3d_model_decode_workspace_free);
}

static void
boxes_from_map (P3dBevDetect * self, P3dTensorMap * out, P3dModelBoxes * boxes)
{
  boxes->boxes = out->data[P3D_BOXES_TENSOR_RECORDS];
  boxes->count = out->data[P3D_BOXES_TENSOR_COUNT];
  boxes->velocity = self->out_info.velocity ?
      out->data[P3D_BOXES_TENSOR_VELOCITY] : NULL;
}

static GstFlowReturn
p3d_bev_detect_process_cpu (P3dCudaFilter * filter, GstBuffer * inbuf,
    P3dTensorMap * in, P3dTensorMap * out)
{
  P3dBevDetect *self = P3D_BEV_DETECT (filter);
  const P3dcConvNetDesc *desc = &self->network->desc;
  gsize i, n = p3dc_convnet_buffer_elements (desc, 0);
  P3dModelBoxes boxes;
  const float *input = in->data[P3D_BEV_FEATURES_TENSOR_FEATURES];
  P3dcResult result;

  if (self->in_info.format == P3D_DATA_FORMAT_F16) {
    const guint16 *half = in->data[P3D_BEV_FEATURES_TENSOR_FEATURES];

    for (i = 0; i < n; i++)
      self->cpu_input[i] = p3dc_half_to_float (half[i]);
    input = self->cpu_input;
  }
  result = p3dc_convnet_cpu (desc, input, self->cpu_buffers);
  if (result == P3DC_OK) {
    boxes_from_map (self, out, &boxes);
    result = p3d_model_decoder_run_cpu (self->decoder, self->cpu_buffers,
        &boxes);
  }
  if (result != P3DC_OK) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("Detection failed"),
        ("%s", p3dc_result_string (result)));
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

static GstFlowReturn
p3d_bev_detect_process_cuda (P3dCudaFilter * filter, GstBuffer * inbuf,
    P3dTensorMap * in, P3dTensorMap * out, gboolean out_clean)
{
  P3dBevDetect *self = P3D_BEV_DETECT (filter);
  P3dModelBoxes boxes;

  if (!p3d_cuda_filter_check (filter, p3dc_convnet_cuda_run (self->net,
              in->data[P3D_BEV_FEATURES_TENSOR_FEATURES],
              self->in_info.format == P3D_DATA_FORMAT_F16, filter->stream),
          "running the network"))
    return GST_FLOW_ERROR;
  boxes_from_map (self, out, &boxes);
  if (!p3d_cuda_filter_check (filter, p3d_model_decoder_run_cuda
          (self->decoder, self->decode_workspace, self->net, &boxes,
              filter->stream), "decoding boxes"))
    return GST_FLOW_ERROR;
  return GST_FLOW_OK;
}
