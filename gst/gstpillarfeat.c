/**
 * SECTION:element-pillarfeat
 * @title: pillarfeat
 *
 * Computes the per-point features a PointPillars network takes from the
 * voxels of voxelize: for every point of a pillar x, y, z, intensity, its
 * offset from the mean of the pillar's points and from the pillar's centre
 * (the "features" property picks the channel set of OpenPCDet/NVIDIA,
 * mmdetection3d, or with the distance to the sensor). Unused point slots
 * are zero. The output format, F32 or F16 (what NVIDIA's CUDA-PointPillars
 * engine takes), is negotiated: F32 unless downstream asks for F16. The
 * voxel coordinates and count are passed on for the network's scatter.
 *
 * Float32 arithmetic, the mean summed in point order; the CUDA path
 * computes the same operations in the same order as the reference.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 pointcloudtestsrc num-buffers=10 ! voxelize ! pillarfeat \
 *   ! "application/x-pillar-features,format=F16" ! fakesink
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstpillarfeat.h"

GST_DEBUG_CATEGORY_STATIC (p3d_pillar_feat_debug);
#define GST_CAT_DEFAULT p3d_pillar_feat_debug

enum
{
  PROP_0,
  PROP_FEATURES,
};

#define DEFAULT_FEATURES P3D_FEATURE_SET_POINTPILLARS_10

G_STATIC_ASSERT ((gint) P3D_FEATURE_SET_POINTPILLARS_10 ==
    (gint) P3DC_PILLAR_FEATURES_POINTPILLARS_10);
G_STATIC_ASSERT ((gint) P3D_FEATURE_SET_MMDET3D_9 ==
    (gint) P3DC_PILLAR_FEATURES_MMDET3D_9);
G_STATIC_ASSERT ((gint) P3D_FEATURE_SET_POINTPILLARS_11 ==
    (gint) P3DC_PILLAR_FEATURES_POINTPILLARS_11);
G_STATIC_ASSERT ((gint) P3D_FEATURE_SET_MMDET3D_11 ==
    (gint) P3DC_PILLAR_FEATURES_MMDET3D_11);

#define p3d_pillar_feat_parent_class parent_class
G_DEFINE_TYPE (P3dPillarFeat, p3d_pillar_feat, P3D_TYPE_CUDA_FILTER);
GST_ELEMENT_REGISTER_DEFINE (pillarfeat, "pillarfeat", GST_RANK_NONE,
    P3D_TYPE_PILLAR_FEAT);

static void p3d_pillar_feat_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void p3d_pillar_feat_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static GstCaps *p3d_pillar_feat_transform_media_caps (P3dCudaFilter * filter,
    GstPadDirection direction, GstCaps * caps);
static gboolean p3d_pillar_feat_set_info (P3dCudaFilter * filter,
    GstCaps * incaps, P3dTensorLayout * in_layout, GstCaps * outcaps,
    P3dTensorLayout * out_layout, GError ** error);
static gboolean p3d_pillar_feat_sink_event (GstBaseTransform * trans,
    GstEvent * event);
static void p3d_pillar_feat_stop_device (P3dCudaFilter * filter);
static GstFlowReturn p3d_pillar_feat_process_cpu (P3dCudaFilter * filter,
    GstBuffer * inbuf, P3dTensorMap * in, P3dTensorMap * out);
static GstFlowReturn p3d_pillar_feat_process_cuda (P3dCudaFilter * filter,
    GstBuffer * inbuf, P3dTensorMap * in, P3dTensorMap * out,
    gboolean out_clean);

static void
p3d_pillar_feat_class_init (P3dPillarFeatClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  P3dCudaFilterClass *filter_class = P3D_CUDA_FILTER_CLASS (klass);
  GstCaps *sink_caps, *src_caps;

  gobject_class->set_property = p3d_pillar_feat_set_property;
  gobject_class->get_property = p3d_pillar_feat_get_property;

  g_object_class_install_property (gobject_class, PROP_FEATURES,
      g_param_spec_enum ("features", "Features",
          "The channels computed for each point, in the order the network "
          "was trained with", P3D_TYPE_FEATURE_SET, DEFAULT_FEATURES,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  gst_element_class_set_static_metadata (element_class,
      "PointPillars features", "Filter/Converter/Lidar",
      "Voxels to the per-point pillar features of a PointPillars network, "
      "in F32 or F16, on CUDA or on the CPU", "gst-perception developers");

  sink_caps = gst_caps_from_string (P3D_VOXELS_CAPS_ALL);
  src_caps = gst_caps_from_string (P3D_PILLARS_CAPS_ALL);
  p3d_cuda_filter_class_add_pad_templates (filter_class, sink_caps, src_caps);
  gst_caps_unref (sink_caps);
  gst_caps_unref (src_caps);

  trans_class->sink_event = GST_DEBUG_FUNCPTR (p3d_pillar_feat_sink_event);
  filter_class->transform_media_caps =
      GST_DEBUG_FUNCPTR (p3d_pillar_feat_transform_media_caps);
  /* the property's feature set first; another one downstream asks for is
   * refused naming the property */
  filter_class->src_fallback_caps = P3D_PILLARS_CAPS_ALL;
  filter_class->set_info = GST_DEBUG_FUNCPTR (p3d_pillar_feat_set_info);
  filter_class->stop_device = GST_DEBUG_FUNCPTR (p3d_pillar_feat_stop_device);
  filter_class->process_cpu = GST_DEBUG_FUNCPTR (p3d_pillar_feat_process_cpu);
  filter_class->process_cuda = GST_DEBUG_FUNCPTR (p3d_pillar_feat_process_cuda);

  gst_type_mark_as_plugin_api (P3D_TYPE_FEATURE_SET, 0);
  GST_DEBUG_CATEGORY_INIT (p3d_pillar_feat_debug, "pillarfeat", 0,
      "PointPillars features");
}

static void
p3d_pillar_feat_init (P3dPillarFeat * self)
{
  self->features = DEFAULT_FEATURES;
}

static void
p3d_pillar_feat_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dPillarFeat *self = P3D_PILLAR_FEAT (object);

  switch (prop_id) {
    case PROP_FEATURES:
      GST_OBJECT_LOCK (self);
      self->features = g_value_get_enum (value);
      GST_OBJECT_UNLOCK (self);
      gst_base_transform_reconfigure_src (GST_BASE_TRANSFORM (self));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

static void
p3d_pillar_feat_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  P3dPillarFeat *self = P3D_PILLAR_FEAT (object);

  switch (prop_id) {
    case PROP_FEATURES:
      GST_OBJECT_LOCK (self);
      g_value_set_enum (value, self->features);
      GST_OBJECT_UNLOCK (self);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
}

/* The fields both media types share: sizes, grid and framerate. */
static const gchar *const shared_fields[] = {
  "max-voxels", "max-points", "grid", "voxel-size", "range",
  "effective-range", "framerate"
};

static GstCaps *
p3d_pillar_feat_transform_media_caps (P3dCudaFilter * filter,
    GstPadDirection direction, GstCaps * caps)
{
  P3dPillarFeat *self = P3D_PILLAR_FEAT (filter);
  GstCaps *result = gst_caps_new_empty ();
  P3dFeatureSet features;
  guint i, f;

  GST_OBJECT_LOCK (self);
  features = self->features;
  GST_OBJECT_UNLOCK (self);

  for (i = 0; i < gst_caps_get_size (caps); i++) {
    const GstStructure *s = gst_caps_get_structure (caps, i);
    GstStructure *other;

    if (direction == GST_PAD_SINK) {
      GValue formats = G_VALUE_INIT, name = G_VALUE_INIT;

      other = gst_structure_new (P3D_MEDIA_TYPE_PILLAR_FEATURES, "features",
          G_TYPE_STRING, p3d_feature_set_to_string (features), NULL);
      /* F32 first: the reference precision unless downstream wants F16 */
      gst_value_list_init (&formats, 2);
      g_value_init (&name, G_TYPE_STRING);
      g_value_set_string (&name, "F32");
      gst_value_list_append_value (&formats, &name);
      g_value_set_string (&name, "F16");
      gst_value_list_append_value (&formats, &name);
      g_value_unset (&name);
      gst_structure_take_value (other, "format", &formats);
    } else {
      GstCaps *any_voxels = gst_caps_from_string (P3D_VOXELS_CAPS_ALL);

      /* any point format: pillar features do not say which one */
      other = gst_structure_copy (gst_caps_get_structure (any_voxels, 0));
      gst_caps_unref (any_voxels);
    }
    for (f = 0; f < G_N_ELEMENTS (shared_fields); f++) {
      const GValue *v = gst_structure_get_value (s, shared_fields[f]);

      if (v)
        gst_structure_set_value (other, shared_fields[f], v);
    }
    result = gst_caps_merge_structure (result, other);
  }
  return result;
}

/* Why @outcaps describe no pillar features of the voxels of @in_info:
 * most likely the record, whose size grows with voxelize's max-voxels and
 * max-points, which are larger than voxels (10 or 11 features a point
 * against 4 or 5 channels), so that voxels that fit may make pillar
 * features that do not. */
static void
set_output_error (const P3dVoxelsInfo * in_info, GstCaps * outcaps,
    GError ** error)
{
  const GstStructure *s = gst_caps_get_structure (outcaps, 0);
  P3dDataFormat format =
      p3d_data_format_from_string (gst_structure_get_string (s, "format"));
  P3dFeatureSet features =
      p3d_feature_set_from_string (gst_structure_get_string (s, "features"));
  guint channels = p3d_feature_set_get_channels (features);
  guint64 record;

  if (format != P3D_DATA_FORMAT_UNKNOWN && channels > 0) {
    record = p3d_pillars_get_record_size (in_info->max_voxels,
        in_info->max_points, channels, format);
    if (record > P3D_RECORD_MAX_BYTES) {
      g_set_error (error, GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_SETTINGS,
          "max-voxels %u x max-points %u of %s features in %s make output "
          "buffers of %" G_GUINT64_FORMAT " bytes, more than the %"
          G_GSIZE_FORMAT " one buffer may hold: lower voxelize's max-voxels "
          "or max-points%s", in_info->max_voxels, in_info->max_points,
          p3d_feature_set_to_string (features),
          p3d_data_format_to_string (format), record, P3D_RECORD_MAX_BYTES,
          format == P3D_DATA_FORMAT_F32 ? ", or ask for format=F16" : "");
      return;
    }
  }
  g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
      "the output caps describe no pillar features of the %u voxels of %u "
      "points of the input", in_info->max_voxels, in_info->max_points);
}

static gint
pillarfeat_cuda_new (P3dCudaFilter * filter, gpointer * workspace)
{
  return p3dc_pillarfeat_cuda_new (&P3D_PILLAR_FEAT (filter)->params,
      (P3dcPillarFeatCuda **) workspace);
}

static gboolean
p3d_pillar_feat_set_info (P3dCudaFilter * filter, GstCaps * incaps,
    P3dTensorLayout * in_layout, GstCaps * outcaps,
    P3dTensorLayout * out_layout, GError ** error)
{
  P3dPillarFeat *self = P3D_PILLAR_FEAT (filter);
  P3dVoxelsInfo in_info;
  P3dPillarsInfo out_info;
  P3dcPillarFeatParams params, previous;
  P3dcResult result;
  P3dFeatureSet features;

  if (!p3d_voxels_info_from_caps (&in_info, incaps))
    return FALSE;
  if (!p3d_pillars_info_from_caps (&out_info, outcaps)) {
    set_output_error (&in_info, outcaps, error);
    return FALSE;
  }
  GST_OBJECT_LOCK (self);
  features = self->features;
  GST_OBJECT_UNLOCK (self);
  if (out_info.features != features) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "Downstream asks for features=%s, the property is features=%s: set "
        "pillarfeat features=%s", p3d_feature_set_to_string
        (out_info.features), p3d_feature_set_to_string (features),
        p3d_feature_set_to_string (out_info.features));
    return FALSE;
  }
  if (out_info.max_voxels != in_info.max_voxels
      || out_info.max_points != in_info.max_points
      || !p3d_voxel_grid_is_equal (&out_info.grid, &in_info.grid)) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "Downstream asks for pillars of max-voxels=%u max-points=%u on a "
        "%u x %u x %u grid, the input voxels have max-voxels=%u "
        "max-points=%u on a %u x %u x %u grid: pillar features keep "
        "voxelize's max-voxels, max-points, voxel-size and range; set those",
        out_info.max_voxels, out_info.max_points, out_info.grid.grid[0],
        out_info.grid.grid[1], out_info.grid.grid[2], in_info.max_voxels,
        in_info.max_points, in_info.grid.grid[0], in_info.grid.grid[1],
        in_info.grid.grid[2]);
    return FALSE;
  }
  result = p3dc_pillarfeat_params_init (&params,
      (P3dcPillarFeatureSet) out_info.features,
      out_info.format == P3D_DATA_FORMAT_F16, in_info.finfo->channels,
      in_info.finfo->intensity, in_info.max_points, in_info.max_voxels,
      in_info.grid.voxel_size, in_info.grid.range);
  if (result != P3DC_OK) {
    g_set_error (error, GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_SETTINGS,
        "cannot compute %s features for these voxels: %s",
        p3d_feature_set_to_string (out_info.features),
        p3dc_result_string (result));
    return FALSE;
  }
  /* pillarfeat_cuda_new reads the params; where it fails, the element
   * keeps the params that go with its last negotiated caps */
  previous = self->params;
  self->params = params;
  if (filter->use_cuda && !p3d_cuda_filter_replace_workspace (filter,
          (gpointer *) & self->cuda,
          (GDestroyNotify) p3dc_pillarfeat_cuda_free, pillarfeat_cuda_new,
          "preparing the pillar feature kernel", error)) {
    self->params = previous;
    return FALSE;
  }
  self->in_info = in_info;
  self->out_info = out_info;
  p3d_voxels_info_get_layout (&in_info, in_layout);
  p3d_pillars_info_get_layout (&out_info, out_layout);
  return TRUE;
}

static void
tensors_from_maps (P3dTensorMap * in, P3dTensorMap * out,
    P3dcPillarFeatInput * input, P3dcPillarFeatOutput * output)
{
  input->voxels = in->data[P3D_VOXELS_TENSOR_POINTS];
  input->num_points = in->data[P3D_VOXELS_TENSOR_NUM_POINTS];
  input->coords = in->data[P3D_VOXELS_TENSOR_COORDS];
  input->count = in->data[P3D_VOXELS_TENSOR_COUNT];
  output->features = out->data[P3D_PILLARS_TENSOR_FEATURES];
  output->coords = out->data[P3D_PILLARS_TENSOR_COORDS];
  output->count = out->data[P3D_PILLARS_TENSOR_COUNT];
}

static gboolean
p3d_pillar_feat_sink_event (GstBaseTransform * trans, GstEvent * event)
{
  P3dPillarFeat *self = P3D_PILLAR_FEAT (trans);

  if (GST_EVENT_TYPE (event) == GST_EVENT_STREAM_START)
    self->warned_count = FALSE;
  return GST_BASE_TRANSFORM_CLASS (parent_class)->sink_event (trans, event);
}

static void
p3d_pillar_feat_stop_device (P3dCudaFilter * filter)
{
  P3dPillarFeat *self = P3D_PILLAR_FEAT (filter);

  p3dc_pillarfeat_cuda_free (self->cuda);
  self->cuda = NULL;
}

static GstFlowReturn
p3d_pillar_feat_process_cpu (P3dCudaFilter * filter, GstBuffer * inbuf,
    P3dTensorMap * in, P3dTensorMap * out)
{
  P3dPillarFeat *self = P3D_PILLAR_FEAT (filter);
  P3dcPillarFeatInput input;
  P3dcPillarFeatOutput output;
  guint32 voxel_count;

  tensors_from_maps (in, out, &input, &output);
  /* a corrupt count: the library reads max-voxels at most, as the kernels
   * do; only this path sees the count on the host, so only it can say so */
  memcpy (&voxel_count, input.count, sizeof (voxel_count));
  if (voxel_count > self->in_info.max_voxels && !self->warned_count) {
    GST_ELEMENT_WARNING (self, STREAM, FORMAT,
        ("Voxel count %u is more than max-voxels %u: only %u voxels are read",
            voxel_count, self->in_info.max_voxels, self->in_info.max_voxels),
        ("posted once per stream; later frames are clamped silently"));
    self->warned_count = TRUE;
  }
  p3dc_pillarfeat_cpu (&self->params, &input, &output);
  return GST_FLOW_OK;
}

static GstFlowReturn
p3d_pillar_feat_process_cuda (P3dCudaFilter * filter, GstBuffer * inbuf,
    P3dTensorMap * in, P3dTensorMap * out, gboolean out_clean)
{
  P3dPillarFeat *self = P3D_PILLAR_FEAT (filter);
  P3dcPillarFeatInput input;
  P3dcPillarFeatOutput output;

  tensors_from_maps (in, out, &input, &output);
  if (!p3d_cuda_filter_check (filter, p3dc_pillarfeat_cuda (self->cuda,
              &input, &output, out_clean, filter->stream),
          "computing pillar features"))
    return GST_FLOW_ERROR;
  return GST_FLOW_OK;
}
