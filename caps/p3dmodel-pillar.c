/* What the pillar model families share (p3dmodel-private.h): the keys of
 * `p3d.model` that give the voxel grid, the one-layer pillar feature net,
 * SECOND and SECONDFPN; the layers of that backbone and neck in a graph;
 * and the pillar net read from its tensors.  CenterPoint-pillar and
 * PointPillars differ only in their tensors' names and their heads. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include "p3dmodel-private.h"

#define MAX_CHANNELS 4096

gboolean
p3d_model_bad_metadata (GError ** error, const gchar * format, ...)
{
  va_list args;
  gchar *text;

  va_start (args, format);
  text = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_METADATA,
      P3D_MODEL_METADATA_KEY ": %s", text);
  g_free (text);
  return FALSE;
}

P3dModelLayer *
p3d_model_graph_add_conv (P3dModelGraph * graph, P3dModelOp op, gchar * name,
    const gchar * input, guint out_channels, guint kernel, guint stride,
    guint padding, gchar * weight, gchar * norm, gdouble eps)
{
  P3dModelLayer *layer = p3d_model_graph_add_layer (graph, op, name, input);

  p3d_model_layer_set_square (layer, kernel, stride, padding);
  layer->out_channels = out_channels;
  layer->weight = weight;
  layer->norm = norm;
  layer->norm_eps = eps;
  layer->relu = norm != NULL;
  g_free (name);
  return layer;
}

/* ---- config ---------------------------------------------------------- */

static gboolean
parse_grid (P3dModelPillarConfig * config, JsonObject * root, GError ** error)
{
  const gchar *text;
  guint n, i;

  if (!p3d_model_json_uint (root, NULL, "point_channels", 3, 64,
          &config->point_channels, error))
    return FALSE;
  text = p3d_model_json_string (root, NULL, "features", error);
  if (text == NULL)
    return FALSE;
  config->features = p3d_feature_set_from_string (text);
  if (config->features == P3D_FEATURE_SET_UNKNOWN)
    return p3d_model_json_bad_key (error, NULL, "features",
        "names a feature set that pillarfeat does not compute");
  if (!p3d_model_json_doubles (root, NULL, "voxel_size", 3, 1e-3, 100.0,
          config->voxel_size, error)
      || !p3d_model_json_doubles (root, NULL, "point_cloud_range", 6, -1e4, 1e4,
          config->point_cloud_range, error)
      || !p3d_model_json_uint (root, NULL, "max_points", 1, 1024,
          &config->max_points, error)
      || !p3d_model_json_uint (root, NULL, "max_voxels", 1, 4194304,
          &config->max_voxels, error))
    return FALSE;
  n = 3;
  if (!p3d_model_json_uints (root, NULL, "grid", 3, 1, 16384, config->grid, &n,
          error))
    return FALSE;
  for (i = 0; i < 3; i++) {
    gdouble extent = config->point_cloud_range[i + 3] -
        config->point_cloud_range[i];

    if (!(extent > 0))
      return p3d_model_json_bad_key (error, NULL, "point_cloud_range",
          "must have each maximum above its minimum");
    if (fabs (extent / config->voxel_size[i] - config->grid[i]) > 1e-3)
      return p3d_model_json_bad_key (error, NULL, "grid",
          "disagrees with point_cloud_range / voxel_size");
  }
  if (config->grid[2] != 1)
    return p3d_model_json_bad_key (error, NULL, "grid",
        "must have one z cell: the pillar net scatters onto one BEV plane");
  return TRUE;
}

static gboolean
parse_pfn (P3dModelPillarConfig * config, JsonObject * root, GError ** error)
{
  JsonObject *pfn = p3d_model_json_object (root, NULL, "pfn", error);
  guint n = 0;

  if (pfn == NULL)
    return FALSE;
  if (!p3d_model_json_uints (pfn, "pfn", "channels", 1, 1, MAX_CHANNELS,
          &config->pfn_channels, &n, error))
    return FALSE;
  return p3d_model_json_double (pfn, "pfn", "bn_eps", 1e-12, 1.0,
      &config->pfn_bn_eps, error);
}

static gboolean
parse_backbone (P3dModelPillarConfig * config, JsonObject * root,
    GError ** error)
{
  JsonObject *backbone = p3d_model_json_object (root, NULL, "backbone", error);

  if (backbone == NULL)
    return FALSE;
  config->n_stages = 0;
  if (!p3d_model_json_uints (backbone, "backbone", "out_channels",
          P3D_MODEL_MAX_STAGES, 1, MAX_CHANNELS,
          config->backbone_out_channels, &config->n_stages, error)
      || !p3d_model_json_uints (backbone, "backbone", "layer_nums",
          P3D_MODEL_MAX_STAGES, 0, 64, config->backbone_layer_nums,
          &config->n_stages, error)
      || !p3d_model_json_uints (backbone, "backbone", "layer_strides",
          P3D_MODEL_MAX_STAGES, 1, 8, config->backbone_layer_strides,
          &config->n_stages, error))
    return FALSE;
  return p3d_model_json_double (backbone, "backbone", "bn_eps", 1e-12, 1.0,
      &config->backbone_bn_eps, error);
}

static gboolean
parse_neck (P3dModelPillarConfig * config, JsonObject * root, GError ** error)
{
  JsonObject *neck = p3d_model_json_object (root, NULL, "neck", error);
  guint n = config->n_stages, i;

  if (neck == NULL)
    return FALSE;
  if (!p3d_model_json_uints (neck, "neck", "out_channels",
          P3D_MODEL_MAX_STAGES, 1, MAX_CHANNELS,
          config->neck_out_channels, &n, error)
      || !p3d_model_json_doubles (neck, "neck", "upsample_strides",
          config->n_stages, 1.0 / 16, 16, config->neck_upsample_strides, error))
    return FALSE;
  /* Strides of at least 1 are a transposed convolution's kernel, smaller
   * ones the reciprocal of a convolution's: both must be whole. */
  for (i = 0; i < config->n_stages; i++) {
    gdouble stride = config->neck_upsample_strides[i];
    gdouble whole = stride >= 1 ? stride : 1 / stride;

    if (fabs (whole - round (whole)) > 1e-6) {
      gchar *what = g_strdup_printf ("entry %u (%g) is neither a whole "
          "number nor the reciprocal of one", i, stride);

      p3d_model_json_bad_key (error, "neck", "upsample_strides", what);
      g_free (what);
      return FALSE;
    }
  }
  if (!p3d_model_json_boolean (neck, "neck", "use_conv_for_no_stride", FALSE,
          &config->neck_use_conv_for_no_stride, error))
    return FALSE;
  return p3d_model_json_double (neck, "neck", "bn_eps", 1e-12, 1.0,
      &config->neck_bn_eps, error);
}

gboolean
p3d_model_pillar_config_parse (P3dModelPillarConfig * config,
    JsonObject * root, GError ** error)
{
  memset (config, 0, sizeof (*config));
  return parse_grid (config, root, error)
      && parse_pfn (config, root, error)
      && parse_backbone (config, root, error)
      && parse_neck (config, root, error);
}

/* ---- the graph ------------------------------------------------------- */

gboolean
p3d_model_pillar_add_second (const P3dModelPillarConfig * config,
    const P3dModelSecondNames * names, P3dModelGraph * graph, GError ** error)
{
  guint s, k, height = config->grid[1], width = config->grid[0];
  guint sizes[P3D_MODEL_MAX_STAGES][2], out[P3D_MODEL_MAX_STAGES][2];
  guint conv = names->block_conv_offset;
  P3dModelLayer *concat;
  gchar *input;

  /* SECOND: per stage a strided conv, then layer_nums convs */
  for (s = 0; s < config->n_stages; s++) {
    guint stride = config->backbone_layer_strides[s];

    height = (height - 1) / stride + 1;
    width = (width - 1) / stride + 1;
    sizes[s][0] = height;
    sizes[s][1] = width;
    for (k = 0; k <= config->backbone_layer_nums[s]; k++)
      p3d_model_graph_add_conv (graph, P3D_MODEL_OP_CONV,
          g_strdup_printf ("backbone.%u.%u", s, k), NULL,
          config->backbone_out_channels[s], 3, k == 0 ? stride : 1, 1,
          g_strdup_printf ("%s.%u.%u.weight", names->blocks, s, conv + 3 * k),
          g_strdup_printf ("%s.%u.%u", names->blocks, s, conv + 3 * k + 1),
          config->backbone_bn_eps);
  }

  /* SECONDFPN: each stage up- or down-sampled to one size */
  for (s = 0; s < config->n_stages; s++) {
    gdouble stride = config->neck_upsample_strides[s];
    gboolean transposed = stride > 1 || (stride == 1
        && !config->neck_use_conv_for_no_stride);
    guint kernel = (guint) round (transposed ? stride : 1 / stride);

    if (transposed) {
      out[s][0] = sizes[s][0] * kernel;
      out[s][1] = sizes[s][1] * kernel;
    } else {
      if (sizes[s][0] < kernel || sizes[s][1] < kernel)
        return p3d_model_bad_metadata (error, "neck stage %u downsamples by "
            "%u a %u x %u map", s, kernel, sizes[s][0], sizes[s][1]);
      out[s][0] = (sizes[s][0] - kernel) / kernel + 1;
      out[s][1] = (sizes[s][1] - kernel) / kernel + 1;
    }
    if (out[s][0] != out[0][0] || out[s][1] != out[0][1])
      return p3d_model_bad_metadata (error, "neck stage %u gives a %u x %u "
          "map but stage 0 a %u x %u one: neck.upsample_strides disagree "
          "with backbone.layer_strides", s, out[s][0], out[s][1], out[0][0],
          out[0][1]);
    input = g_strdup_printf ("backbone.%u.%u", s,
        config->backbone_layer_nums[s]);
    p3d_model_graph_add_conv (graph, transposed ? P3D_MODEL_OP_DECONV :
        P3D_MODEL_OP_CONV, g_strdup_printf ("neck.%u", s), input,
        config->neck_out_channels[s], kernel, kernel, 0,
        g_strdup_printf ("%s.%u.0.weight", names->deblocks, s),
        g_strdup_printf ("%s.%u.1", names->deblocks, s), config->neck_bn_eps);
    g_free (input);
  }
  concat = p3d_model_graph_add_layer (graph, P3D_MODEL_OP_CONCAT, "neck", NULL);
  g_strfreev (concat->inputs);
  concat->inputs = NULL;
  for (s = 0; s < config->n_stages; s++) {
    gchar *name = g_strdup_printf ("neck.%u", s);

    p3d_model_layer_add_input (concat, name);
    g_free (name);
  }
  p3d_model_graph_add_output (graph, "neck", "neck");
  return TRUE;
}

/* ---- the pillar net -------------------------------------------------- */

gboolean
p3d_model_pillar_finish (P3dModel * model, P3dModelBuilder * builder,
    const P3dModelPillarConfig * config, const gchar * pfn, GError ** error)
{
  const P3dModelNetwork *network = p3d_model_get_network (model, "bev");
  const P3dcConvBufferDesc *canvas = &network->desc.buffers[0];
  P3dModelPillars *pillars = &model->pillars_storage;
  gint64 shape[2];
  gfloat *weight;
  gchar *name;

  pillars->point_channels = config->point_channels;
  pillars->features = config->features;
  memcpy (pillars->voxel_size, config->voxel_size,
      sizeof (pillars->voxel_size));
  memcpy (pillars->point_cloud_range, config->point_cloud_range,
      sizeof (pillars->point_cloud_range));
  memcpy (pillars->grid, config->grid, sizeof (pillars->grid));
  pillars->max_points = config->max_points;
  pillars->max_voxels = config->max_voxels;
  pillars->in_channels = p3d_feature_set_get_channels (config->features);
  pillars->out_channels = config->pfn_channels;
  shape[0] = pillars->out_channels;
  shape[1] = pillars->in_channels;
  name = g_strdup_printf ("%s.linear.weight", pfn);
  weight = p3d_model_builder_read (builder, name, 2, shape, error);
  g_free (name);
  if (weight == NULL)
    return FALSE;
  pillars->weight = weight;
  name = g_strdup_printf ("%s.norm", pfn);
  pillars->bias = p3d_model_builder_fold_norm (builder, name, weight, 1,
      pillars->out_channels, pillars->in_channels, NULL, config->pfn_bn_eps,
      error);
  g_free (name);
  if (pillars->bias == NULL)
    return FALSE;
  model->pillars = pillars;

  /* the scatter's canvas is the network's input */
  if (canvas->channels != config->pfn_channels
      || canvas->height != config->grid[1] || canvas->width != config->grid[0]
      || network->desc.batch > 1)
    return p3d_model_bad_metadata (error, "the \"bev\" graph's input is %u x "
        "%u x %u, the pillar net's canvas %u x %u x %u", canvas->channels,
        canvas->height, canvas->width, config->pfn_channels, config->grid[1],
        config->grid[0]);
  return TRUE;
}
