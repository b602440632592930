/**
 * SECTION:element-pillarencode
 * @title: pillarencode
 *
 * The first layer of a PointPillars or CenterPoint-pillar network: every
 * point of a pillar goes through the model's learned pillar feature net (a
 * linear layer with BatchNorm folded in, then ReLU), the pillar keeps the
 * maximum over its point slots, and that vector lands in the pillar's cell
 * of a bird's-eye-view canvas, zero where there is no pillar. Padded point
 * slots take part in the maximum as they do in the PyTorch model.
 *
 * The weights and the model's configuration come from one safetensors file
 * (docs/weights.md); the point features must be the set the model was
 * trained on (pillarfeat features=mmdet3d-11 for mmdetection3d's
 * CenterPoint), on the grid it was trained on. The canvas is
 * application/x-bev-features [C][H][W], F32 or F16, the input of bevdetect.
 *
 * Pillars whose coordinates lie outside the grid (only malformed input has
 * them) are dropped and counted, with one warning per stream.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 pointcloudtestsrc num-buffers=10 format=xyzit \
 *   ! voxelize voxel-size="<0.2,0.2,8>" range="<-51.2,-51.2,-5,51.2,51.2,3>" \
 *       max-points=20 max-voxels=40000 \
 *   ! pillarfeat features=mmdet3d-11 ! pillarencode weights=model.safetensors \
 *   ! bevdetect weights=model.safetensors ! boxenc ! fakesink
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include "gstpillarencode.h"
#include "p3dmodelfile.h"
#include "p3dproperties.h"

GST_DEBUG_CATEGORY_STATIC (p3d_pillar_encode_debug);
#define GST_CAT_DEFAULT p3d_pillar_encode_debug

enum
{
  PROP_0,
  PROP_WEIGHTS,
};

/* frames whose dropped-pillar count may be in flight at once */

#define p3d_pillar_encode_parent_class parent_class
G_DEFINE_TYPE (P3dPillarEncode, p3d_pillar_encode, P3D_TYPE_CUDA_FILTER);
GST_ELEMENT_REGISTER_DEFINE (pillarencode, "pillarencode", GST_RANK_NONE,
    P3D_TYPE_PILLAR_ENCODE);

static void p3d_pillar_encode_finalize (GObject * object);
static void p3d_pillar_encode_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void p3d_pillar_encode_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static gboolean p3d_pillar_encode_start (GstBaseTransform * trans);
static gboolean p3d_pillar_encode_stop (GstBaseTransform * trans);
static gboolean p3d_pillar_encode_sink_event (GstBaseTransform * trans,
    GstEvent * event);
static GstCaps *p3d_pillar_encode_transform_media_caps (P3dCudaFilter *
    filter, GstPadDirection direction, GstCaps * caps);
static gboolean p3d_pillar_encode_set_info (P3dCudaFilter * filter,
    GstCaps * incaps, P3dTensorLayout * in_layout, GstCaps * outcaps,
    P3dTensorLayout * out_layout, GError ** error);
static void p3d_pillar_encode_stop_device (P3dCudaFilter * filter);
static GstFlowReturn p3d_pillar_encode_process_cpu (P3dCudaFilter * filter,
    GstBuffer * inbuf, P3dTensorMap * in, P3dTensorMap * out);
static GstFlowReturn p3d_pillar_encode_process_cuda (P3dCudaFilter * filter,
    GstBuffer * inbuf, P3dTensorMap * in, P3dTensorMap * out,
    gboolean out_clean);
static void p3d_pillar_encode_readback (P3dCudaFilter * filter,
    gconstpointer record, GstClockTime pts);

static void
p3d_pillar_encode_class_init (P3dPillarEncodeClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  P3dCudaFilterClass *filter_class = P3D_CUDA_FILTER_CLASS (klass);
  GstCaps *sink_caps, *src_caps;

  gobject_class->finalize = p3d_pillar_encode_finalize;
  gobject_class->set_property = p3d_pillar_encode_set_property;
  gobject_class->get_property = p3d_pillar_encode_get_property;

  g_object_class_install_property (gobject_class, PROP_WEIGHTS,
      g_param_spec_string ("weights", "Weights",
          "Path of the model's safetensors file (docs/weights.md): the "
          "pillar feature net's weights and the model's configuration. "
          "Required", NULL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  gst_element_class_set_static_metadata (element_class,
      "Pillar feature net", "Filter/Converter/Lidar",
      "Pillar features to a bird's-eye-view canvas through a model's learned "
      "pillar feature net, on CUDA or on the CPU", "gst-perception developers");

  sink_caps = gst_caps_from_string (P3D_PILLARS_CAPS_ALL);
  src_caps = gst_caps_from_string (P3D_BEV_FEATURES_CAPS_ALL);
  p3d_cuda_filter_class_add_pad_templates (filter_class, sink_caps, src_caps);
  gst_caps_unref (sink_caps);
  gst_caps_unref (src_caps);

  trans_class->start = GST_DEBUG_FUNCPTR (p3d_pillar_encode_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (p3d_pillar_encode_stop);
  trans_class->sink_event = GST_DEBUG_FUNCPTR (p3d_pillar_encode_sink_event);
  filter_class->transform_media_caps =
      GST_DEBUG_FUNCPTR (p3d_pillar_encode_transform_media_caps);
  /* the model's values first; others reach set_info, which names them */
  filter_class->sink_fallback_caps = P3D_PILLARS_CAPS_ALL;
  filter_class->src_fallback_caps = P3D_BEV_FEATURES_CAPS_ALL;
  filter_class->set_info = GST_DEBUG_FUNCPTR (p3d_pillar_encode_set_info);
  filter_class->stop_device = GST_DEBUG_FUNCPTR (p3d_pillar_encode_stop_device);
  filter_class->process_cpu = GST_DEBUG_FUNCPTR (p3d_pillar_encode_process_cpu);
  filter_class->process_cuda =
      GST_DEBUG_FUNCPTR (p3d_pillar_encode_process_cuda);
  filter_class->readback_size = sizeof (guint32);
  filter_class->readback = GST_DEBUG_FUNCPTR (p3d_pillar_encode_readback);

  GST_DEBUG_CATEGORY_INIT (p3d_pillar_encode_debug, "pillarencode", 0,
      "Pillar feature net");
}

static void
p3d_pillar_encode_init (P3dPillarEncode * self)
{
}

static void
p3d_pillar_encode_finalize (GObject * object)
{
  P3dPillarEncode *self = P3D_PILLAR_ENCODE (object);

  g_free (self->weights);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
p3d_pillar_encode_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dPillarEncode *self = P3D_PILLAR_ENCODE (object);

  switch (prop_id) {
    case PROP_WEIGHTS:
      GST_OBJECT_LOCK (self);
      g_free (self->weights);
      self->weights = g_value_dup_string (value);
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
p3d_pillar_encode_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  P3dPillarEncode *self = P3D_PILLAR_ENCODE (object);

  switch (prop_id) {
    case PROP_WEIGHTS:
      GST_OBJECT_LOCK (self);
      g_value_set_string (value, self->weights);
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

/* The model is loaded before the base class starts, so that the caps the
 * model implies are known when negotiation begins. */
static gboolean
p3d_pillar_encode_start (GstBaseTransform * trans)
{
  P3dPillarEncode *self = P3D_PILLAR_ENCODE (trans);
  P3dModel *model;

  model = p3d_model_file_load_property (GST_ELEMENT (self), &self->weights);
  if (model == NULL)
    return FALSE;
  if (model->pillars == NULL) {
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("The weights file holds a %s model, which has no pillar feature "
            "net for pillarencode", model->architecture), (NULL));
    p3d_model_free (model);
    return FALSE;
  }
  GST_OBJECT_LOCK (self);
  self->model = model;
  GST_OBJECT_UNLOCK (self);
  self->dropped = 0;
  self->warned_dropped = FALSE;
  if (!GST_BASE_TRANSFORM_CLASS (parent_class)->start (trans)) {
    p3d_pillar_encode_stop (trans);
    return FALSE;
  }
  return TRUE;
}

static gboolean
p3d_pillar_encode_stop (GstBaseTransform * trans)
{
  P3dPillarEncode *self = P3D_PILLAR_ENCODE (trans);
  gboolean ret = GST_BASE_TRANSFORM_CLASS (parent_class)->stop (trans);

  p3d_model_file_clear (GST_ELEMENT (self), &self->model);
  return ret;
}

/* The model's canvas (channels and grid) or its feature set, once the
 * weights are loaded; read under the object lock, as stop() frees the
 * model under it. */
static void
set_model_fields (P3dPillarEncode * self, GstStructure * s,
    gboolean canvas_side)
{
  gboolean have_model;
  guint channels = 0, grid_x = 0, grid_y = 0;
  P3dFeatureSet features = 0;

  GST_OBJECT_LOCK (self);
  have_model = self->model != NULL;
  if (have_model) {
    channels = self->model->pillars->out_channels;
    grid_x = self->model->pillars->grid[0];
    grid_y = self->model->pillars->grid[1];
    features = self->model->pillars->features;
  }
  GST_OBJECT_UNLOCK (self);
  if (!have_model)
    return;
  if (canvas_side)
    gst_structure_set (s, "channels", G_TYPE_INT, (gint) channels, "width",
        G_TYPE_INT, (gint) grid_x, "height", G_TYPE_INT, (gint) grid_y, NULL);
  else
    gst_structure_set (s, "features", G_TYPE_STRING,
        p3d_feature_set_to_string (features), NULL);
}

static GstCaps *
p3d_pillar_encode_transform_media_caps (P3dCudaFilter * filter,
    GstPadDirection direction, GstCaps * caps)
{
  P3dPillarEncode *self = P3D_PILLAR_ENCODE (filter);
  GstCaps *result = gst_caps_new_empty ();
  guint i;

  for (i = 0; i < gst_caps_get_size (caps); i++) {
    const GstStructure *s = gst_caps_get_structure (caps, i);
    GstStructure *other;
    const GValue *v;

    if (direction == GST_PAD_SINK) {
      GstCaps *any = gst_caps_from_string (P3D_BEV_FEATURES_CAPS_ALL);
      const GValue *grid;

      other = gst_structure_copy (gst_caps_get_structure (any, 0));
      gst_caps_unref (any);
      /* the canvas keeps the precision of the features it is made from */
      if ((v = gst_structure_get_value (s, "format")))
        gst_structure_set_value (other, "format", v);
      grid = gst_structure_get_value (s, "grid");
      if (grid && GST_VALUE_HOLDS_ARRAY (grid)
          && gst_value_array_get_size (grid) >= 2) {
        gst_structure_set_value (other, "width",
            gst_value_array_get_value (grid, 0));
        gst_structure_set_value (other, "height",
            gst_value_array_get_value (grid, 1));
      }
      if ((v = gst_structure_get_value (s, "range")))
        gst_structure_set_value (other, "range", v);
      set_model_fields (self, other, TRUE);
    } else {
      GstCaps *any = gst_caps_from_string (P3D_PILLARS_CAPS_ALL);

      other = gst_structure_copy (gst_caps_get_structure (any, 0));
      gst_caps_unref (any);
      if ((v = gst_structure_get_value (s, "format")))
        gst_structure_set_value (other, "format", v);
      set_model_fields (self, other, FALSE);
    }
    if ((v = gst_structure_get_value (s, "framerate")))
      gst_structure_set_value (other, "framerate", v);
    result = gst_caps_merge_structure (result, other);
  }
  return result;
}

/* Whether the voxel grid of the caps is the one the model was trained on:
 * the scatter's canvas and every layer after it depend on it. Otherwise
 * @why names voxelize's property, both values and what to set. */
static gboolean
grid_matches_model (const P3dModelPillars * config,
    const P3dVoxelGrid * grid, const gchar * weights, gchar ** why)
{
  gchar *size = p3d_doubles_to_string (grid->voxel_size, 3);
  gchar *range = p3d_doubles_to_string (grid->range, 6);
  gchar *model_size = p3d_doubles_to_string (config->voxel_size, 3);
  gchar *model_range = p3d_doubles_to_string (config->point_cloud_range, 6);
  gboolean size_ok = TRUE, range_ok = TRUE;
  guint a;

  for (a = 0; a < 3; a++)
    size_ok = size_ok && grid->grid[a] == config->grid[a]
        && fabs (grid->voxel_size[a] - config->voxel_size[a]) <= 1e-6
        * fabs (config->voxel_size[a]);
  for (a = 0; a < 6; a++)
    range_ok = range_ok
        && fabs (grid->range[a] - config->point_cloud_range[a]) <= 1e-4;
  if (!size_ok)
    *why = g_strdup_printf ("voxelize voxel-size=%s over range=%s makes a "
        "%u x %u x %u grid; the model in %s was trained on voxel-size=%s "
        "over range=%s, a %u x %u x %u grid: set voxelize voxel-size=\"%s\" "
        "range=\"%s\"", size, range, grid->grid[0], grid->grid[1],
        grid->grid[2], weights, model_size, model_range, config->grid[0],
        config->grid[1], config->grid[2], model_size, model_range);
  else if (!range_ok)
    *why = g_strdup_printf ("voxelize range=%s, the model in %s was trained "
        "on range=%s: set voxelize range=\"%s\"", range, weights,
        model_range, model_range);
  g_free (size);
  g_free (range);
  g_free (model_size);
  g_free (model_range);
  return size_ok && range_ok;
}

static gint
encoder_new (P3dCudaFilter * filter, gpointer * workspace)
{
  P3dPillarEncode *self = P3D_PILLAR_ENCODE (filter);

  return p3dc_pillarencoder_new (&self->params, self->model->pillars->weight,
      self->model->pillars->bias, (P3dcPillarEncoder **) workspace);
}

static gboolean
p3d_pillar_encode_set_info (P3dCudaFilter * filter, GstCaps * incaps,
    P3dTensorLayout * in_layout, GstCaps * outcaps,
    P3dTensorLayout * out_layout, GError ** error)
{
  P3dPillarEncode *self = P3D_PILLAR_ENCODE (filter);
  const P3dModelPillars *model = self->model->pillars;
  P3dPillarsInfo in_info;
  P3dBevFeaturesInfo out_info;
  P3dcPillarEncodeParams params = { 0, };
  P3dcResult result;
  gchar *why = NULL, *weights;

  if (!p3d_pillars_info_from_caps (&in_info, incaps)) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "The input caps are not pillar features: %s (GST_DEBUG=p3dcaps:5 "
        "says which field)", gst_structure_get_name (gst_caps_get_structure
            (incaps, 0)));
    return FALSE;
  }
  if (!p3d_bev_features_info_from_caps (&out_info, outcaps)) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "The output caps describe no BEV canvas (GST_DEBUG=p3dcaps:5 says "
        "which field)");
    return FALSE;
  }
  GST_OBJECT_LOCK (self);
  weights = g_strdup (self->weights);
  GST_OBJECT_UNLOCK (self);
  if (in_info.features != model->features
      || in_info.channels != model->in_channels) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "pillarfeat features=%s (%u channels), the model in %s takes "
        "features=%s (%u channels): set pillarfeat features=%s",
        p3d_feature_set_to_string (in_info.features), in_info.channels,
        weights, p3d_feature_set_to_string (model->features),
        model->in_channels, p3d_feature_set_to_string (model->features));
    g_free (weights);
    return FALSE;
  }
  if (!grid_matches_model (model, &in_info.grid, weights, &why)) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "The voxels do not match the model: %s", why);
    g_free (why);
    g_free (weights);
    return FALSE;
  }
  if (out_info.channels != model->out_channels
      || out_info.width != in_info.grid.grid[0]
      || out_info.height != in_info.grid.grid[1]
      || out_info.layout != P3D_BEV_FEATURES_LAYOUT_YX) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "Downstream asks for a canvas of channels=%u width=%u height=%u "
        "(layout %s), the model in %s makes channels=%u width=%u "
        "height=%u (layout yx): the element after pillarencode must take "
        "the model's canvas (bevdetect with the same weights file)",
        out_info.channels, out_info.width, out_info.height,
        out_info.layout == P3D_BEV_FEATURES_LAYOUT_YX ? "yx" : "xy", weights,
        model->out_channels, in_info.grid.grid[0], in_info.grid.grid[1]);
    g_free (weights);
    return FALSE;
  }
  g_free (weights);

  params.in_channels = in_info.channels;
  params.out_channels = model->out_channels;
  params.max_points = in_info.max_points;
  params.max_voxels = in_info.max_voxels;
  params.grid_x = in_info.grid.grid[0];
  params.grid_y = in_info.grid.grid[1];
  params.half_in = in_info.format == P3D_DATA_FORMAT_F16;
  params.half_out = out_info.format == P3D_DATA_FORMAT_F16;
  result = p3dc_pillarencode_params_validate (&params);
  if (result != P3DC_OK) {
    g_set_error (error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
        "Cannot encode %u pillars of %u points of %u features into %u "
        "channels: %s", params.max_voxels, params.max_points,
        params.in_channels, params.out_channels, p3dc_result_string (result));
    return FALSE;
  }

  if (filter->use_cuda && (self->encoder == NULL
          || memcmp (&params, &self->params, sizeof (params)) != 0)) {
    self->params = params;
    if (!p3d_cuda_filter_replace_workspace (filter,
            (gpointer *) & self->encoder,
            (GDestroyNotify) p3dc_pillarencoder_free, encoder_new,
            "creating the pillar encoder", error))
      return FALSE;
  }
  self->in_info = in_info;
  self->out_info = out_info;
  self->params = params;
  p3d_pillars_info_get_layout (&in_info, in_layout);
  p3d_bev_features_info_get_layout (&out_info, out_layout);
  return TRUE;
}

static void
p3d_pillar_encode_stop_device (P3dCudaFilter * filter)
{
  P3dPillarEncode *self = P3D_PILLAR_ENCODE (filter);

  g_clear_pointer (&self->encoder, p3dc_pillarencoder_free);
}

/* Counts the pillars of one frame that fell outside the grid; warns once
 * per stream. */
static void
count_dropped (P3dPillarEncode * self, guint32 dropped)
{
  if (dropped == 0)
    return;
  self->dropped += dropped;
  if (!self->warned_dropped) {
    self->warned_dropped = TRUE;
    GST_ELEMENT_WARNING (self, STREAM, FORMAT,
        ("%u pillars lie outside the %u x %u grid and were dropped",
            dropped, self->params.grid_x, self->params.grid_y),
        ("their coordinates are not voxelize's for these caps; further "
            "drops in this stream are counted without a warning"));
  }
}

/* A frame's dropped-pillar count, read back from the device. */
static void
p3d_pillar_encode_readback (P3dCudaFilter * filter, gconstpointer record,
    GstClockTime pts)
{
  guint32 dropped;

  memcpy (&dropped, record, sizeof (dropped));
  count_dropped (P3D_PILLAR_ENCODE (filter), dropped);
}

static gboolean
p3d_pillar_encode_sink_event (GstBaseTransform * trans, GstEvent * event)
{
  P3dPillarEncode *self = P3D_PILLAR_ENCODE (trans);

  if (GST_EVENT_TYPE (event) == GST_EVENT_STREAM_START)
    self->warned_dropped = FALSE;
  return GST_BASE_TRANSFORM_CLASS (parent_class)->sink_event (trans, event);
}

static void
input_from_map (P3dTensorMap * in, P3dcPillarEncodeInput * input)
{
  input->features = in->data[P3D_PILLARS_TENSOR_FEATURES];
  input->coords = in->data[P3D_PILLARS_TENSOR_COORDS];
  input->count = in->data[P3D_PILLARS_TENSOR_COUNT];
}

static GstFlowReturn
p3d_pillar_encode_process_cpu (P3dCudaFilter * filter, GstBuffer * inbuf,
    P3dTensorMap * in, P3dTensorMap * out)
{
  P3dPillarEncode *self = P3D_PILLAR_ENCODE (filter);
  P3dcPillarEncodeInput input;
  guint32 dropped = 0;
  P3dcResult result;

  input_from_map (in, &input);
  result = p3dc_pillarencode_cpu (&self->params,
      self->model->pillars->weight, self->model->pillars->bias, &input,
      out->data[P3D_BEV_FEATURES_TENSOR_FEATURES], &dropped);
  if (result != P3DC_OK) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED,
        ("Encoding the pillars failed"), ("%s", p3dc_result_string (result)));
    return GST_FLOW_ERROR;
  }
  count_dropped (self, dropped);
  return GST_FLOW_OK;
}

static GstFlowReturn
p3d_pillar_encode_process_cuda (P3dCudaFilter * filter, GstBuffer * inbuf,
    P3dTensorMap * in, P3dTensorMap * out, gboolean out_clean)
{
  P3dPillarEncode *self = P3D_PILLAR_ENCODE (filter);
  P3dcPillarEncodeInput input;
  gpointer slot = p3d_cuda_filter_readback_slot (filter);

  if (slot == NULL)
    return GST_FLOW_ERROR;
  input_from_map (in, &input);
  if (!p3d_cuda_filter_check (filter, p3dc_pillarencode_cuda (self->encoder,
              &input, out->data[P3D_BEV_FEATURES_TENSOR_FEATURES], slot,
              filter->stream), "encoding the pillars"))
    return GST_FLOW_ERROR;
  return GST_FLOW_OK;
}
