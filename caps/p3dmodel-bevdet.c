/* The BEVDet model family (HuangJunJie2017/BEVDet, configs/bevdet/
 * bevdet-r50.py): mmdet's ResNet and FPNForBEVDet with the Lift-Splat-Shoot
 * depth net on each camera image (the "image" network, which camencode
 * runs), and on the BEV features bevpool pools from it ResNetForBEVDet,
 * FPN_LSS and mmdetection3d's CenterHead (the "bev" network, which
 * bevdetect runs), decoded with the CenterPoint coder and BEVDet's
 * test-time Scale-NMS.  Both graphs are built from the `p3d.model` config
 * (docs/weights.md gives its keys and the layers); a file may also carry
 * either as an explicit "graph". */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include "p3dmodel-private.h"

#define BEVDET_ARCHITECTURE "bevdet"
#define BEVDET_VERSION 1

#define MAX_CHANNELS 65536
#define MAX_CAMERAS 64
#define MAX_BEV_STAGES 8
#define RESNET_STAGES 4

typedef struct
{
  /* first: the CenterHead's head, coder and NMS fields, so that the
   * shared head functions and decode read this config as theirs */
  P3dCenterPointConfig head;

  P3dModelCameras cameras;      /* names owned here */
  guint grid[3];                /* cells along x, y, z */

  /* img_backbone: mmdet's ResNet, 4 stages */
  guint img_depth;
  guint img_base_channels;      /* stage s has base << s planes */
  guint img_stem_channels;
  gboolean img_bottleneck;
  gboolean img_caffe;           /* style caffe: a bottleneck's stride on its
                                 * first 1x1 conv */
  guint img_blocks[RESNET_STAGES];
  guint img_n_out;
  guint img_out_indices[RESNET_STAGES];
  gdouble img_bn_eps;

  /* img_neck: FPNForBEVDet */
  guint fpn_out_channels;

  /* img_view_transformer: the LSS depth net */
  guint vt_in_channels;

  /* img_bev_encoder_backbone: ResNetForBEVDet */
  guint bev_in_channels;
  guint bev_n_stages;
  guint bev_num_layer[MAX_BEV_STAGES];
  guint bev_num_channels[MAX_BEV_STAGES];
  guint bev_stride[MAX_BEV_STAGES];
  gboolean bev_bottleneck;
  guint bev_n_out;
  guint bev_output_ids[MAX_BEV_STAGES];
  gdouble bev_bn_eps;

  /* img_bev_encoder_neck: FPN_LSS */
  guint lss_in_channels;
  guint lss_out_channels;
  guint lss_scale_factor;
  guint lss_index[2];
  guint lss_extra_upsample;     /* 0: none */
  gdouble lss_bn_eps;
} BevDetConfig;

/* ---- config ---------------------------------------------------------- */

/* Refuses a key of @object that is not in @keys: in these sections a
 * misspelt or unsupported option (a dilated ResNet, an FPN_LSS lateral)
 * would otherwise give another network than the checkpoint's. */
static gboolean
known_keys (JsonObject * object, const gchar * section,
    const gchar * const *keys, GError ** error)
{
  GList *members = json_object_get_members (object), *m;
  gboolean ok = TRUE;

  for (m = members; m != NULL && ok; m = m->next) {
    guint k;

    for (k = 0; keys[k] != NULL; k++)
      if (strcmp (keys[k], m->data) == 0)
        break;
    if (keys[k] == NULL) {
      gchar *list = g_strjoinv (", ", (gchar **) keys);
      gchar *what = g_strdup_printf ("is not a key the bevdet family reads "
          "(%s): the network it describes is not supported", list);

      ok = p3d_model_json_bad_key (error, section, m->data, what);
      g_free (what);
      g_free (list);
    }
  }
  g_list_free (members);
  return ok;
}

static gboolean
has (JsonObject * object, const gchar * key)
{
  JsonNode *node = json_object_get_member (object, key);

  return node != NULL && !JSON_NODE_HOLDS_NULL (node);
}

/* An optional unsigned integer, @fallback when absent. */
static gboolean
optional_uint (JsonObject * object, const gchar * section, const gchar * key,
    guint min, guint max, guint fallback, guint * value, GError ** error)
{
  if (!has (object, key)) {
    *value = fallback;
    return TRUE;
  }
  return p3d_model_json_uint (object, section, key, min, max, value, error);
}

static gboolean
optional_double (JsonObject * object, const gchar * section,
    const gchar * key, gdouble min, gdouble max, gdouble fallback,
    gdouble * value, GError ** error)
{
  if (!has (object, key)) {
    *value = fallback;
    return TRUE;
  }
  return p3d_model_json_double (object, section, key, min, max, value, error);
}

/* A [height, width] pair. */
static gboolean
parse_size (JsonObject * object, const gchar * section, const gchar * key,
    guint * height, guint * width, GError ** error)
{
  guint values[2], n = 2;

  if (!p3d_model_json_uints (object, section, key, 2, 1, 16384, values, &n,
          error))
    return FALSE;
  *height = values[0];
  *width = values[1];
  return TRUE;
}

static gboolean
parse_data_config (BevDetConfig * config, JsonObject * root, GError ** error)
{
  static const gchar *const keys[] = { "cams", "Ncams", "input_size",
    "src_size", "resize_test", "crop_h", "mean", "std", "resize", "rot",
    "flip", NULL
  };
  const gchar *section = "data_config";
  P3dModelCameras *cameras = &config->cameras;
  JsonObject *data = p3d_model_json_object (root, NULL, section, error);
  JsonArray *cams;
  gdouble crop_h[2];
  guint n, c;

  if (data == NULL || !known_keys (data, section, keys, error))
    return FALSE;
  cams = p3d_model_json_array (data, section, "cams", 1, MAX_CAMERAS, &n,
      error);
  if (cams == NULL)
    return FALSE;
  cameras->n_cameras = n;
  cameras->names = g_new0 (gchar *, n + 1);
  for (c = 0; c < n; c++) {
    JsonNode *name = json_array_get_element (cams, c);

    if (!JSON_NODE_HOLDS_VALUE (name)
        || json_node_get_value_type (name) != G_TYPE_STRING)
      return p3d_model_json_bad_key (error, section, "cams",
          "must hold the cameras' names (strings)");
    cameras->names[c] = g_strdup (json_node_get_string (name));
  }
  if (has (data, "Ncams")) {
    guint ncams;

    if (!p3d_model_json_uint (data, section, "Ncams", 1, MAX_CAMERAS, &ncams,
            error))
      return FALSE;
    if (ncams != n)
      return p3d_model_json_bad_key (error, section, "Ncams",
          "differs from the number of cams: at test time every camera of "
          "cams is used");
  }
  if (!parse_size (data, section, "input_size", &cameras->input_height,
          &cameras->input_width, error)
      || !parse_size (data, section, "src_size", &cameras->src_height,
          &cameras->src_width, error)
      || !optional_double (data, section, "resize_test", -0.99, 100.0, 0.0,
          &cameras->resize_test, error)
      || !p3d_model_json_doubles (data, section, "crop_h", 2, 0.0, 0.99,
          crop_h, error)
      || !p3d_model_json_doubles (data, section, "mean", 3, -1e3, 1e3,
          cameras->mean, error)
      || !p3d_model_json_doubles (data, section, "std", 3, 1e-6, 1e3,
          cameras->std, error))
    return FALSE;
  /* BEVDet's test-time crop takes the mean of the training range */
  cameras->crop_h = (crop_h[0] + crop_h[1]) / 2;
  return TRUE;
}

static gboolean
parse_bound (JsonObject * grid, const gchar * key, gdouble bound[3],
    GError ** error)
{
  if (!p3d_model_json_doubles (grid, "grid_config", key, 3, -1e4, 1e4, bound,
          error))
    return FALSE;
  if (!(bound[2] > 0) || !(bound[1] > bound[0]))
    return p3d_model_json_bad_key (error, "grid_config", key,
        "must be [min, max, step] with max above min and a positive step");
  return TRUE;
}

/* The cells of an axis: (max - min) / step, which must be whole, as
 * BEVDet's truncation and bevpool's rounding then agree. */
static gboolean
axis_cells (const gdouble bound[3], const gchar * key, guint * cells,
    GError ** error)
{
  gdouble n = (bound[1] - bound[0]) / bound[2];

  if (fabs (n - round (n)) > 1e-6 * MAX (1.0, n) || round (n) > 16384)
    return p3d_model_json_bad_key (error, "grid_config", key,
        "must span a whole number of steps, at most 16384");
  *cells = (guint) round (n);
  return TRUE;
}

static gboolean
parse_grid_config (BevDetConfig * config, JsonObject * root, GError ** error)
{
  static const gchar *const keys[] = { "xbound", "ybound", "zbound", "dbound",
    NULL
  };
  P3dModelCameras *cameras = &config->cameras;
  JsonObject *grid = p3d_model_json_object (root, NULL, "grid_config", error);
  gdouble bins;

  if (grid == NULL || !known_keys (grid, "grid_config", keys, error)
      || !parse_bound (grid, "xbound", cameras->xbound, error)
      || !parse_bound (grid, "ybound", cameras->ybound, error)
      || !parse_bound (grid, "zbound", cameras->zbound, error)
      || !parse_bound (grid, "dbound", cameras->dbound, error)
      || !axis_cells (cameras->xbound, "xbound", &config->grid[0], error)
      || !axis_cells (cameras->ybound, "ybound", &config->grid[1], error)
      || !axis_cells (cameras->zbound, "zbound", &config->grid[2], error))
    return FALSE;
  /* torch.arange (min, max, step): ceil ((max - min) / step) depths */
  bins = ceil ((cameras->dbound[1] - cameras->dbound[0]) / cameras->dbound[2]
      - 1e-9);
  if (bins > 4096)
    return p3d_model_json_bad_key (error, "grid_config", "dbound",
        "gives more than 4096 depth bins");
  cameras->depth_bins = (guint) bins;
  return TRUE;
}

static gboolean
parse_img_backbone (BevDetConfig * config, JsonObject * root, GError ** error)
{
  static const gchar *const keys[] = { "type", "depth", "num_stages",
    "out_indices", "style", "bn_eps", "base_channels", "stem_channels",
    "frozen_stages", "norm_eval", "with_cp", "pretrained", "norm_cfg", NULL
  };
  static const guint depths[5] = { 18, 34, 50, 101, 152 };
  static const guint blocks[5][RESNET_STAGES] = {
    {2, 2, 2, 2}, {3, 4, 6, 3}, {3, 4, 6, 3}, {3, 4, 23, 3}, {3, 8, 36, 3},
  };
  const gchar *section = "img_backbone";
  JsonObject *backbone = p3d_model_json_object (root, NULL, section, error);
  guint d, i, stages;

  if (backbone == NULL || !known_keys (backbone, section, keys, error))
    return FALSE;
  if (has (backbone, "type")) {
    const gchar *type = p3d_model_json_string (backbone, section, "type",
        error);

    if (type == NULL)
      return FALSE;
    if (strcmp (type, "ResNet") != 0)
      return p3d_model_json_bad_key (error, section, "type",
          "must be ResNet, the only image backbone read");
  }
  if (!p3d_model_json_uint (backbone, section, "depth", 18, 152,
          &config->img_depth, error))
    return FALSE;
  for (d = 0; d < G_N_ELEMENTS (depths); d++)
    if (depths[d] == config->img_depth)
      break;
  if (d == G_N_ELEMENTS (depths))
    return p3d_model_json_bad_key (error, section, "depth",
        "must be 18, 34, 50, 101 or 152");
  memcpy (config->img_blocks, blocks[d], sizeof (config->img_blocks));
  config->img_bottleneck = config->img_depth >= 50;
  if (!optional_uint (backbone, section, "num_stages", RESNET_STAGES,
          RESNET_STAGES, RESNET_STAGES, &stages, error)
      || !optional_uint (backbone, section, "base_channels", 1, 4096, 64,
          &config->img_base_channels, error)
      || !optional_uint (backbone, section, "stem_channels", 1, 4096,
          config->img_base_channels, &config->img_stem_channels, error))
    return FALSE;
  config->img_n_out = 0;
  if (!p3d_model_json_uints (backbone, section, "out_indices", RESNET_STAGES,
          0, RESNET_STAGES - 1, config->img_out_indices, &config->img_n_out,
          error))
    return FALSE;
  for (i = 1; i < config->img_n_out; i++)
    if (config->img_out_indices[i] <= config->img_out_indices[i - 1])
      return p3d_model_json_bad_key (error, section, "out_indices",
          "must be increasing");
  if (has (backbone, "style")) {
    const gchar *style = p3d_model_json_string (backbone, section, "style",
        error);

    if (style == NULL)
      return FALSE;
    if (strcmp (style, "pytorch") != 0 && strcmp (style, "caffe") != 0)
      return p3d_model_json_bad_key (error, section, "style",
          "must be pytorch or caffe");
    config->img_caffe = strcmp (style, "caffe") == 0;
  }
  return optional_double (backbone, section, "bn_eps", 1e-12, 1.0, 1e-5,
      &config->img_bn_eps, error);
}

/* The channels of stage @s of the image ResNet. */
static guint
img_stage_channels (const BevDetConfig * config, guint s)
{
  return (config->img_base_channels << s) * (config->img_bottleneck ? 4 : 1);
}

static gboolean
parse_img_neck (BevDetConfig * config, JsonObject * root, GError ** error)
{
  static const gchar *const keys[] = { "type", "in_channels", "out_channels",
    "num_outs", "start_level", "out_ids", NULL
  };
  const gchar *section = "img_neck";
  JsonObject *neck = p3d_model_json_object (root, NULL, section, error);
  guint in_channels[RESNET_STAGES], n = config->img_n_out, i, value, ids = 1;

  if (neck == NULL || !known_keys (neck, section, keys, error))
    return FALSE;
  if (has (neck, "type")) {
    const gchar *type = p3d_model_json_string (neck, section, "type", error);

    if (type == NULL)
      return FALSE;
    if (strcmp (type, "FPNForBEVDet") != 0)
      return p3d_model_json_bad_key (error, section, "type",
          "must be FPNForBEVDet, the only image neck read");
  }
  if (!p3d_model_json_uints (neck, section, "in_channels", RESNET_STAGES, 1,
          MAX_CHANNELS, in_channels, &n, error))
    return FALSE;
  for (i = 0; i < n; i++) {
    guint expected = img_stage_channels (config, config->img_out_indices[i]);

    if (in_channels[i] != expected) {
      gchar *what = g_strdup_printf ("entry %u is %u, but stage %u of a "
          "ResNet-%u has %u channels", i, in_channels[i],
          config->img_out_indices[i], config->img_depth, expected);

      p3d_model_json_bad_key (error, section, "in_channels", what);
      g_free (what);
      return FALSE;
    }
  }
  if (!p3d_model_json_uint (neck, section, "out_channels", 1, MAX_CHANNELS,
          &config->fpn_out_channels, error)
      || !optional_uint (neck, section, "num_outs", 1, 16, 1, &value, error)
      || !optional_uint (neck, section, "start_level", 0, 0, 0, &value, error))
    return FALSE;
  if (has (neck, "out_ids")) {
    /* FPNForBEVDet returns fpn_convs[out_ids[0]] of level out_ids[0]: only
     * level 0 runs there */
    if (!p3d_model_json_uints (neck, section, "out_ids", 1, 0, 0, &value,
            &ids, error))
      return FALSE;
  }
  return TRUE;
}

static gboolean
parse_view_transformer (BevDetConfig * config, JsonObject * root,
    GError ** error)
{
  static const gchar *const keys[] = { "type", "numC_input", "numC_Trans",
    "downsample", "accelerate", "max_drop_point_rate", "use_bev_pool", NULL
  };
  const gchar *section = "img_view_transformer";
  JsonObject *vt = p3d_model_json_object (root, NULL, section, error);

  if (vt == NULL || !known_keys (vt, section, keys, error))
    return FALSE;
  if (has (vt, "type")) {
    const gchar *type = p3d_model_json_string (vt, section, "type", error);

    if (type == NULL)
      return FALSE;
    if (strcmp (type, "ViewTransformerLiftSplatShoot") != 0)
      return p3d_model_json_bad_key (error, section, "type",
          "must be ViewTransformerLiftSplatShoot, the only view transformer "
          "read");
  }
  if (!optional_uint (vt, section, "numC_input", 1, MAX_CHANNELS, 512,
          &config->vt_in_channels, error)
      || !optional_uint (vt, section, "numC_Trans", 1, MAX_CHANNELS, 64,
          &config->cameras.feature_channels, error)
      || !optional_uint (vt, section, "downsample", 1, 1024, 16,
          &config->cameras.downsample, error))
    return FALSE;
  if (config->vt_in_channels != config->fpn_out_channels)
    return p3d_model_json_bad_key (error, section, "numC_input",
        "differs from img_neck.out_channels, the depth net's input");
  return TRUE;
}

static gboolean
parse_block_type (JsonObject * object, const gchar * section,
    gboolean * bottleneck, GError ** error)
{
  const gchar *type;

  *bottleneck = FALSE;
  if (!has (object, "block_type"))
    return TRUE;
  type = p3d_model_json_string (object, section, "block_type", error);
  if (type == NULL)
    return FALSE;
  if (strcmp (type, "BottleNeck") == 0)
    *bottleneck = TRUE;
  else if (strcmp (type, "Basic") != 0)
    return p3d_model_json_bad_key (error, section, "block_type",
        "must be Basic or BottleNeck");
  return TRUE;
}

static gboolean
parse_bev_backbone (BevDetConfig * config, JsonObject * root, GError ** error)
{
  static const gchar *const keys[] = { "type", "numC_input", "num_layer",
    "num_channels", "stride", "backbone_output_ids", "block_type", "bn_eps",
    "with_cp", "norm_cfg", NULL
  };
  const gchar *section = "img_bev_encoder_backbone";
  JsonObject *backbone = p3d_model_json_object (root, NULL, section, error);
  guint n, i;

  if (backbone == NULL || !known_keys (backbone, section, keys, error))
    return FALSE;
  if (has (backbone, "type")) {
    const gchar *type = p3d_model_json_string (backbone, section, "type",
        error);

    if (type == NULL)
      return FALSE;
    if (strcmp (type, "ResNetForBEVDet") != 0)
      return p3d_model_json_bad_key (error, section, "type",
          "must be ResNetForBEVDet, the only BEV backbone read");
  }
  if (!p3d_model_json_uint (backbone, section, "numC_input", 1, MAX_CHANNELS,
          &config->bev_in_channels, error))
    return FALSE;
  if (config->bev_in_channels !=
      config->cameras.feature_channels * config->grid[2])
    return p3d_model_json_bad_key (error, section, "numC_input",
        "differs from img_view_transformer.numC_Trans times the z cells of "
        "grid_config.zbound, the BEV features' channels");
  /* ResNetForBEVDet's defaults: three stages of two blocks, stride 2,
   * doubling the channels */
  n = 3;
  if (has (backbone, "num_layer")) {
    n = 0;
    if (!p3d_model_json_uints (backbone, section, "num_layer", MAX_BEV_STAGES,
            1, 64, config->bev_num_layer, &n, error))
      return FALSE;
  } else {
    for (i = 0; i < n; i++)
      config->bev_num_layer[i] = 2;
  }
  config->bev_n_stages = n;
  if (has (backbone, "num_channels")) {
    if (!p3d_model_json_uints (backbone, section, "num_channels",
            MAX_BEV_STAGES, 1, MAX_CHANNELS, config->bev_num_channels, &n,
            error))
      return FALSE;
  } else {
    for (i = 0; i < n; i++)
      config->bev_num_channels[i] = config->bev_in_channels << (i + 1);
  }
  if (has (backbone, "stride")) {
    if (!p3d_model_json_uints (backbone, section, "stride", MAX_BEV_STAGES, 1,
            8, config->bev_stride, &n, error))
      return FALSE;
  } else {
    for (i = 0; i < n; i++)
      config->bev_stride[i] = 2;
  }
  if (has (backbone, "backbone_output_ids")) {
    config->bev_n_out = 0;
    if (!p3d_model_json_uints (backbone, section, "backbone_output_ids",
            MAX_BEV_STAGES, 0, n - 1, config->bev_output_ids,
            &config->bev_n_out, error))
      return FALSE;
    for (i = 1; i < config->bev_n_out; i++)
      if (config->bev_output_ids[i] <= config->bev_output_ids[i - 1])
        return p3d_model_json_bad_key (error, section, "backbone_output_ids",
            "must be increasing");
  } else {
    config->bev_n_out = n;
    for (i = 0; i < n; i++)
      config->bev_output_ids[i] = i;
  }
  if (!parse_block_type (backbone, section, &config->bev_bottleneck, error))
    return FALSE;
  if (config->bev_bottleneck)
    for (i = 0; i < n; i++)
      if (config->bev_num_channels[i] % 4 != 0)
        return p3d_model_json_bad_key (error, section, "num_channels",
            "must be multiples of 4 for BottleNeck blocks");
  return optional_double (backbone, section, "bn_eps", 1e-12, 1.0, 1e-5,
      &config->bev_bn_eps, error);
}

static gboolean
parse_bev_neck (BevDetConfig * config, JsonObject * root, GError ** error)
{
  static const gchar *const keys[] = { "type", "in_channels", "out_channels",
    "scale_factor", "input_feature_index", "extra_upsample", "lateral",
    "bn_eps", "norm_cfg", NULL
  };
  const gchar *section = "img_bev_encoder_neck";
  JsonObject *neck = p3d_model_json_object (root, NULL, section, error);
  guint n = 2, i;

  if (neck == NULL || !known_keys (neck, section, keys, error))
    return FALSE;
  if (has (neck, "type")) {
    const gchar *type = p3d_model_json_string (neck, section, "type", error);

    if (type == NULL)
      return FALSE;
    if (strcmp (type, "FPN_LSS") != 0)
      return p3d_model_json_bad_key (error, section, "type",
          "must be FPN_LSS, the only BEV neck read");
  }
  if (has (neck, "lateral"))
    return p3d_model_json_bad_key (error, section, "lateral",
        "is not supported: FPN_LSS without a lateral conv only");
  if (!p3d_model_json_uint (neck, section, "in_channels", 1, MAX_CHANNELS,
          &config->lss_in_channels, error)
      || !p3d_model_json_uint (neck, section, "out_channels", 1, MAX_CHANNELS,
          &config->lss_out_channels, error)
      || !optional_uint (neck, section, "scale_factor", 1, 64, 4,
          &config->lss_scale_factor, error))
    return FALSE;
  if (has (neck, "input_feature_index")) {
    if (!p3d_model_json_uints (neck, section, "input_feature_index", 2, 0,
            config->bev_n_out - 1, config->lss_index, &n, error))
      return FALSE;
  } else {
    config->lss_index[0] = 0;
    config->lss_index[1] = 2;
    if (config->bev_n_out < 3)
      return p3d_model_json_bad_key (error, section, "input_feature_index",
          "is missing: its default (0, 2) needs three backbone outputs");
  }
  /* extra_upsample: null means none, absent FPN_LSS's default 2 */
  config->lss_extra_upsample = 2;
  if (json_object_has_member (neck, "extra_upsample")
      && JSON_NODE_HOLDS_NULL (json_object_get_member (neck, "extra_upsample")))
    config->lss_extra_upsample = 0;
  else if (!optional_uint (neck, section, "extra_upsample", 1, 64, 2,
          &config->lss_extra_upsample, error))
    return FALSE;
  i = config->bev_num_channels[config->bev_output_ids[config->lss_index[0]]] +
      config->bev_num_channels[config->bev_output_ids[config->lss_index[1]]];
  if (config->lss_in_channels != i) {
    gchar *what = g_strdup_printf ("is %u, but the two backbone outputs it "
        "concatenates have %u channels", config->lss_in_channels, i);

    p3d_model_json_bad_key (error, section, "in_channels", what);
    g_free (what);
    return FALSE;
  }
  return optional_double (neck, section, "bn_eps", 1e-12, 1.0, 1e-5,
      &config->lss_bn_eps, error);
}

/* One value per task: a single value for every task, or a list. */
static gboolean
per_task_node (JsonObject * nms, const gchar * key, guint n_tasks,
    JsonNode ** nodes, GError ** error)
{
  JsonNode *node = p3d_model_json_member (nms, "test_nms", key, error);
  guint t;

  if (node == NULL)
    return FALSE;
  if (!JSON_NODE_HOLDS_ARRAY (node)) {
    for (t = 0; t < n_tasks; t++)
      nodes[t] = node;
    return TRUE;
  }
  if (json_array_get_length (json_node_get_array (node)) != n_tasks) {
    gchar *what = g_strdup_printf ("must be one value or a list of %u, one "
        "per task", n_tasks);

    p3d_model_json_bad_key (error, "test_nms", key, what);
    g_free (what);
    return FALSE;
  }
  for (t = 0; t < n_tasks; t++)
    nodes[t] = json_array_get_element (json_node_get_array (node), t);
  return TRUE;
}

/* BEVDet's test_cfg: nms_type, nms_thr and nms_rescale_factor per task
 * (or one for all), min_radius for circle tasks, pre_max_size and
 * post_max_size. */
static gboolean
parse_test_nms (BevDetConfig * config, JsonObject * root, GError ** error)
{
  static const gchar *const keys[] = { "nms_type", "nms_thr",
    "nms_rescale_factor", "min_radius", "pre_max_size", "post_max_size", NULL
  };
  P3dCenterPointConfig *head = &config->head;
  JsonObject *nms = p3d_model_json_object (root, NULL, "test_nms", error);
  JsonNode *nodes[P3DC_CENTERPOINT_MAX_TASKS];
  gboolean any_circle = FALSE;
  guint t, c;

  if (nms == NULL || !known_keys (nms, "test_nms", keys, error)
      || !per_task_node (nms, "nms_type", head->n_tasks, nodes, error))
    return FALSE;
  for (t = 0; t < head->n_tasks; t++) {
    const gchar *type = NULL;

    if (JSON_NODE_HOLDS_VALUE (nodes[t])
        && json_node_get_value_type (nodes[t]) == G_TYPE_STRING)
      type = json_node_get_string (nodes[t]);
    if (type != NULL && strcmp (type, "rotate") == 0)
      head->tasks[t].nms_type = P3DC_CENTERPOINT_NMS_ROTATE;
    else if (type != NULL && strcmp (type, "circle") == 0) {
      head->tasks[t].nms_type = P3DC_CENTERPOINT_NMS_CIRCLE;
      any_circle = TRUE;
    } else
      return p3d_model_json_bad_key (error, "test_nms", "nms_type",
          "must be rotate or circle, or a list of them per task");
  }
  if (!per_task_node (nms, "nms_thr", head->n_tasks, nodes, error))
    return FALSE;
  for (t = 0; t < head->n_tasks; t++)
    if (!p3d_model_json_node_number (nodes[t], &head->tasks[t].nms_thr)
        || head->tasks[t].nms_thr < 0 || head->tasks[t].nms_thr > 1)
      return p3d_model_json_bad_key (error, "test_nms", "nms_thr",
          "must be a number in [0, 1], or a list of them per task");
  for (t = 0; t < head->n_tasks; t++)
    for (c = 0; c < head->tasks[t].n_classes; c++)
      head->tasks[t].nms_rescale[c] = 1.0;
  if (has (nms, "nms_rescale_factor")) {
    if (!per_task_node (nms, "nms_rescale_factor", head->n_tasks, nodes, error))
      return FALSE;
    for (t = 0; t < head->n_tasks; t++) {
      JsonArray *list = JSON_NODE_HOLDS_ARRAY (nodes[t]) ?
          json_node_get_array (nodes[t]) : NULL;
      guint n = list ? json_array_get_length (list) : 1;
      gboolean ok = n == (list ? head->tasks[t].n_classes : 1);

      for (c = 0; ok && c < head->tasks[t].n_classes; c++) {
        gdouble *factor = &head->tasks[t].nms_rescale[c];

        ok = p3d_model_json_node_number (list ?
            json_array_get_element (list, c) : nodes[t], factor)
            && *factor > 0 && *factor <= 1e3;
      }
      if (!ok) {
        gchar *what = g_strdup_printf ("entry %u must be a positive factor, "
            "or a list of %u, one per class of the task", t,
            head->tasks[t].n_classes);

        p3d_model_json_bad_key (error, "test_nms", "nms_rescale_factor", what);
        g_free (what);
        return FALSE;
      }
    }
  }
  if (any_circle || has (nms, "min_radius")) {
    gdouble radius[P3DC_CENTERPOINT_MAX_TASKS];

    if (!p3d_model_json_doubles (nms, "test_nms", "min_radius", head->n_tasks,
            0.0, 1e6, radius, error))
      return FALSE;
    for (t = 0; t < head->n_tasks; t++)
      head->tasks[t].min_radius = radius[t];
  }
  head->per_task_nms = TRUE;
  head->nms_type = head->tasks[0].nms_type;
  head->nms_thr = head->tasks[0].nms_thr;
  return p3d_model_json_uint (nms, "test_nms", "pre_max_size", 1, 1 << 20,
      &head->pre_max_size, error)
      && p3d_model_json_uint (nms, "test_nms", "post_max_size", 1, 1 << 20,
      &head->post_max_size, error);
}

static void
config_free (gpointer data)
{
  BevDetConfig *config = data;

  p3d_centerpoint_config_clear (&config->head);
  g_strfreev (config->cameras.names);
  g_free (config);
}

static gpointer
config_parse (JsonObject * root, GError ** error)
{
  BevDetConfig *config = g_new0 (BevDetConfig, 1);

  if (!parse_data_config (config, root, error)
      || !parse_grid_config (config, root, error)
      || !parse_img_backbone (config, root, error)
      || !parse_img_neck (config, root, error)
      || !parse_view_transformer (config, root, error)
      || !parse_bev_backbone (config, root, error)
      || !parse_bev_neck (config, root, error)
      || !p3d_center_head_parse (&config->head, root, error)
      || !parse_test_nms (config, root, error)) {
    config_free (config);
    return NULL;
  }
  return config;
}

/* ---- the graphs -------------------------------------------------------- */

/* A convolution (square kernel) with an optional BatchNorm, ReLU after a
 * norm unless @relu says otherwise. */
static P3dModelLayer *
add_conv (P3dModelGraph * graph, const gchar * name, const gchar * input,
    guint out_channels, guint kernel, guint stride, guint padding,
    gchar * weight, gchar * norm, gdouble eps, gboolean relu)
{
  P3dModelLayer *layer = p3d_model_graph_add_layer (graph, P3D_MODEL_OP_CONV,
      name, input);

  p3d_model_layer_set_square (layer, kernel, stride, padding);
  layer->out_channels = out_channels;
  layer->weight = weight;
  layer->norm = norm;
  layer->norm_eps = eps;
  layer->relu = relu;
  return layer;
}

static P3dModelLayer *
add_residual (P3dModelGraph * graph, const gchar * name, const gchar * a,
    const gchar * b)
{
  P3dModelLayer *add = p3d_model_graph_add_layer (graph, P3D_MODEL_OP_ADD,
      name, a);

  p3d_model_layer_add_input (add, b);
  add->relu = TRUE;
  return add;
}

/* mmdet's BasicBlock or Bottleneck @name (tensor name) from @input, its
 * tensors under @prefix.  @downsample: the shortcut's conv (weight under
 * <prefix>.downsample), NULL for the identity; its kernel, a norm or a
 * bias are the caller's (ResNet: 1x1 and BatchNorm; ResNetForBEVDet: 3x3
 * with a bias).  The shortcut is laid out before the block's last conv, so
 * that the add becomes that conv's residual. */
typedef struct
{
  guint kernel;
  gboolean norm;                /* BatchNorm at <prefix>.downsample.1 */
} Shortcut;

static void
add_block (P3dModelGraph * graph, const gchar * name, const gchar * input,
    const gchar * prefix, gboolean bottleneck, gboolean caffe, guint planes,
    guint out_channels, guint stride, const Shortcut * shortcut, gdouble eps)
{
  gchar *t1 = g_strdup_printf ("%s.conv1", name);
  gchar *t2 = g_strdup_printf ("%s.conv2", name);
  gchar *t3 = g_strdup_printf ("%s.conv3", name);
  gchar *ts = g_strdup_printf ("%s.downsample", name);
  const gchar *last = bottleneck ? t3 : t2;
  P3dModelLayer *layer;

  if (bottleneck) {
    add_conv (graph, t1, input, planes, 1, caffe ? stride : 1, 0,
        g_strdup_printf ("%s.conv1.weight", prefix),
        g_strdup_printf ("%s.bn1", prefix), eps, TRUE);
    add_conv (graph, t2, t1, planes, 3, caffe ? 1 : stride, 1,
        g_strdup_printf ("%s.conv2.weight", prefix),
        g_strdup_printf ("%s.bn2", prefix), eps, TRUE);
  } else {
    add_conv (graph, t1, input, planes, 3, stride, 1,
        g_strdup_printf ("%s.conv1.weight", prefix),
        g_strdup_printf ("%s.bn1", prefix), eps, TRUE);
  }
  if (shortcut != NULL) {
    if (shortcut->norm) {
      add_conv (graph, ts, input, out_channels, shortcut->kernel, stride,
          shortcut->kernel / 2,
          g_strdup_printf ("%s.downsample.0.weight", prefix),
          g_strdup_printf ("%s.downsample.1", prefix), eps, FALSE);
    } else {
      layer = add_conv (graph, ts, input, out_channels, shortcut->kernel,
          stride, shortcut->kernel / 2,
          g_strdup_printf ("%s.downsample.weight", prefix), NULL, 0, FALSE);
      layer->bias = g_strdup_printf ("%s.downsample.bias", prefix);
    }
  }
  if (bottleneck)
    add_conv (graph, t3, t2, out_channels, 1, 1, 0,
        g_strdup_printf ("%s.conv3.weight", prefix),
        g_strdup_printf ("%s.bn3", prefix), eps, FALSE);
  else
    add_conv (graph, t2, t1, out_channels, 3, 1, 1,
        g_strdup_printf ("%s.conv2.weight", prefix),
        g_strdup_printf ("%s.bn2", prefix), eps, FALSE);
  add_residual (graph, name, last, shortcut != NULL ? ts : input);
  g_free (t1);
  g_free (t2);
  g_free (t3);
  g_free (ts);
}

/* "image": mmdet's ResNet (the 7x7 stem, max pool, four stages), then
 * FPNForBEVDet over the out_indices stages (1x1 laterals with bias, each
 * upper level upsampled nearest to the size of the one below and added,
 * a 3x3 conv with bias on level 0), then the depth net's 1x1 conv: the
 * softmax of its first depth_bins channels is "depth", the next
 * feature_channels are "features". */
static P3dModelGraph *
build_image (const BevDetConfig * config)
{
  const P3dModelCameras *cameras = &config->cameras;
  P3dModelGraph *graph = p3d_model_graph_new ("image", "img",
      cameras->n_cameras, 3, cameras->input_height, cameras->input_width);
  gchar *stage_out[RESNET_STAGES];
  gchar *input = g_strdup ("stem.pool");
  guint in_channels = config->img_stem_channels, s, k, l;
  guint n = config->img_n_out;
  gchar *level = NULL;
  P3dModelLayer *layer;

  add_conv (graph, "stem.conv", NULL, config->img_stem_channels, 7, 2, 3,
      g_strdup ("img_backbone.conv1.weight"), g_strdup ("img_backbone.bn1"),
      config->img_bn_eps, TRUE);
  layer = p3d_model_graph_add_layer (graph, P3D_MODEL_OP_MAX_POOL,
      "stem.pool", NULL);
  p3d_model_layer_set_square (layer, 3, 2, 1);
  for (s = 0; s < RESNET_STAGES; s++) {
    guint planes = config->img_base_channels << s;
    guint out = img_stage_channels (config, s);

    for (k = 0; k < config->img_blocks[s]; k++) {
      guint stride = k == 0 && s > 0 ? 2 : 1;
      gchar *name = g_strdup_printf ("layer%u.%u", s + 1, k);
      gchar *prefix = g_strdup_printf ("img_backbone.layer%u.%u", s + 1, k);
      Shortcut shortcut = { 1, TRUE };

      add_block (graph, name, input, prefix, config->img_bottleneck,
          config->img_caffe, planes, out, stride,
          k == 0 && (stride != 1 || in_channels != out) ? &shortcut : NULL,
          config->img_bn_eps);
      g_free (input);
      g_free (prefix);
      input = name;
      in_channels = out;
    }
    stage_out[s] = g_strdup (input);
  }
  g_free (input);

  /* the top level's lateral, then down: each level's lateral gets the
   * upsampled level above as its residual */
  for (l = n; l-- > 0;) {
    gchar *name = g_strdup_printf ("neck.lateral%u", l);
    gchar *up = NULL;

    if (level != NULL) {
      up = g_strdup_printf ("neck.up%u", l + 1);
      layer = p3d_model_graph_add_layer (graph, P3D_MODEL_OP_UPSAMPLE, up,
          level);
      layer->size_of = g_strdup (stage_out[config->img_out_indices[l]]);
    }
    layer = add_conv (graph, name, stage_out[config->img_out_indices[l]],
        config->fpn_out_channels, 1, 1, 0,
        g_strdup_printf ("img_neck.lateral_convs.%u.conv.weight", l), NULL,
        0, FALSE);
    layer->bias = g_strdup_printf ("img_neck.lateral_convs.%u.conv.bias", l);
    g_free (level);
    level = name;
    if (up != NULL) {
      gchar *sum = g_strdup_printf ("neck.level%u", l);

      add_residual (graph, sum, name, up)->relu = FALSE;
      g_free (level);
      level = sum;
      g_free (up);
    }
  }
  layer = add_conv (graph, "neck", level, config->fpn_out_channels, 3, 1, 1,
      g_strdup ("img_neck.fpn_convs.0.conv.weight"), NULL, 0, FALSE);
  layer->bias = g_strdup ("img_neck.fpn_convs.0.conv.bias");
  g_free (level);
  for (s = 0; s < RESNET_STAGES; s++)
    g_free (stage_out[s]);

  layer = add_conv (graph, "depthnet", "neck",
      cameras->depth_bins + cameras->feature_channels, 1, 1, 0,
      g_strdup ("img_view_transformer.depthnet.weight"), NULL, 0, FALSE);
  layer->bias = g_strdup ("img_view_transformer.depthnet.bias");
  layer = p3d_model_graph_add_layer (graph, P3D_MODEL_OP_SLICE,
      "depth.logits", "depthnet");
  layer->begin = 0;
  layer->end = cameras->depth_bins;
  p3d_model_graph_add_layer (graph, P3D_MODEL_OP_SOFTMAX, "depth", NULL);
  layer = p3d_model_graph_add_layer (graph, P3D_MODEL_OP_SLICE, "features",
      "depthnet");
  layer->begin = cameras->depth_bins;
  layer->end = cameras->depth_bins + cameras->feature_channels;
  p3d_model_graph_add_output (graph, "depth", "depth");
  p3d_model_graph_add_output (graph, "features", "features");
  return graph;
}

/* "bev": ResNetForBEVDet (per stage a block with a strided 3x3 shortcut
 * conv with bias, then plain blocks), FPN_LSS (the second feature
 * upsampled bilinear with align_corners, concatenated after the first, two
 * 3x3 convs, then optionally a bilinear upsampling, a 3x3 conv and a 1x1
 * conv with bias) as "neck", then the CenterHead. */
static P3dModelGraph *
build_bev (const BevDetConfig * config)
{
  P3dModelGraph *graph = p3d_model_graph_new ("bev", "bev", 1,
      config->bev_in_channels, config->grid[1], config->grid[0]);
  gchar *stage_out[MAX_BEV_STAGES];
  gchar *input = g_strdup ("bev");
  guint s, k;
  guint factor = config->lss_extra_upsample ? 2 : 1;
  const gchar *lss = "img_bev_encoder_neck";
  const gchar *x2, *x1;
  P3dModelLayer *layer;

  for (s = 0; s < config->bev_n_stages; s++) {
    guint out = config->bev_num_channels[s];

    for (k = 0; k < config->bev_num_layer[s]; k++) {
      gchar *name = g_strdup_printf ("bev.layers%u.%u", s, k);
      gchar *prefix = g_strdup_printf ("img_bev_encoder_backbone.layers.%u.%u",
          s, k);
      Shortcut shortcut = { 3, FALSE };

      add_block (graph, name, input, prefix, config->bev_bottleneck, FALSE,
          config->bev_bottleneck ? out / 4 : out, out,
          k == 0 ? config->bev_stride[s] : 1, k == 0 ? &shortcut : NULL,
          config->bev_bn_eps);
      g_free (input);
      g_free (prefix);
      input = name;
    }
    stage_out[s] = g_strdup (input);
  }
  g_free (input);

  x2 = stage_out[config->bev_output_ids[config->lss_index[0]]];
  x1 = stage_out[config->bev_output_ids[config->lss_index[1]]];
  layer = p3d_model_graph_add_layer (graph, P3D_MODEL_OP_UPSAMPLE, "lss.up",
      x1);
  layer->bilinear = TRUE;
  layer->align_corners = TRUE;
  layer->scale[0] = layer->scale[1] = config->lss_scale_factor;
  layer = p3d_model_graph_add_layer (graph, P3D_MODEL_OP_CONCAT, "lss.cat", x2);
  p3d_model_layer_add_input (layer, "lss.up");
  add_conv (graph, "lss.conv0", NULL, config->lss_out_channels * factor, 3, 1,
      1, g_strdup_printf ("%s.conv.0.weight", lss),
      g_strdup_printf ("%s.conv.1", lss), config->lss_bn_eps, TRUE);
  add_conv (graph, config->lss_extra_upsample ? "lss.conv1" : "neck", NULL,
      config->lss_out_channels * factor, 3, 1, 1,
      g_strdup_printf ("%s.conv.3.weight", lss),
      g_strdup_printf ("%s.conv.4", lss), config->lss_bn_eps, TRUE);
  if (config->lss_extra_upsample) {
    layer = p3d_model_graph_add_layer (graph, P3D_MODEL_OP_UPSAMPLE,
        "lss.up2", NULL);
    layer->bilinear = TRUE;
    layer->align_corners = TRUE;
    layer->scale[0] = layer->scale[1] = config->lss_extra_upsample;
    add_conv (graph, "lss.conv2", NULL, config->lss_out_channels, 3, 1, 1,
        g_strdup_printf ("%s.up2.1.weight", lss),
        g_strdup_printf ("%s.up2.2", lss), config->lss_bn_eps, TRUE);
    layer = add_conv (graph, "neck", NULL, config->lss_out_channels, 1, 1, 0,
        g_strdup_printf ("%s.up2.4.weight", lss), NULL, 0, FALSE);
    layer->bias = g_strdup_printf ("%s.up2.4.bias", lss);
  }
  for (s = 0; s < config->bev_n_stages; s++)
    g_free (stage_out[s]);
  p3d_center_head_build (&config->head, graph, "neck");
  return graph;
}

static P3dModelGraph *
build_graph (gconstpointer data, const gchar * name, GError ** error)
{
  const BevDetConfig *config = data;

  if (strcmp (name, "image") == 0)
    return build_image (config);
  return build_bev (config);
}

/* ---- checks of the networks against the config ------------------------ */

static gboolean
check_image (const BevDetConfig * config, const P3dModelNetwork * network,
    GError ** error)
{
  const P3dModelCameras *cameras = &config->cameras;
  const P3dcConvBufferDesc *input = &network->desc.buffers[0];
  const P3dModelOutput *depth = p3d_model_network_get_output (network,
      "depth");
  const P3dModelOutput *features = p3d_model_network_get_output (network,
      "features");
  const P3dcConvBufferDesc *map;
  guint height = cameras->input_height / cameras->downsample;
  guint width = cameras->input_width / cameras->downsample;

  if (p3dc_convnet_batch (&network->desc) != cameras->n_cameras
      || input->channels != 3 || input->height != cameras->input_height
      || input->width != cameras->input_width)
    return p3d_model_bad_metadata (error,
        "the \"image\" graph's input is %u x %u x %u "
        "x %u, data_config implies %u cameras of 3 x %u x %u",
        p3dc_convnet_batch (&network->desc), input->channels, input->height,
        input->width, cameras->n_cameras, cameras->input_height,
        cameras->input_width);
  if (depth == NULL || depth->channels != cameras->depth_bins)
    return p3d_model_bad_metadata (error,
        "the \"image\" graph's output \"depth\" %s; "
        "grid_config.dbound implies %u depth bins",
        depth == NULL ? "is missing" : "has another channel count",
        cameras->depth_bins);
  if (features == NULL || features->channels != cameras->feature_channels)
    return p3d_model_bad_metadata (error,
        "the \"image\" graph's output \"features\" "
        "%s; img_view_transformer.numC_Trans is %u",
        features == NULL ? "is missing" : "has another channel count",
        cameras->feature_channels);
  map = &network->desc.buffers[depth->buffer];
  if (network->desc.buffers[features->buffer].height != map->height
      || network->desc.buffers[features->buffer].width != map->width)
    return p3d_model_bad_metadata (error,
        "the \"image\" graph's outputs \"depth\" and "
        "\"features\" differ in size");
  /* the frustum has input_size / downsample pixels: the maps must have as
   * many, or bevpool would pool them on the wrong rays */
  if (map->height != height || map->width != width)
    return p3d_model_bad_metadata (error,
        "the \"image\" graph maps the %u x %u input "
        "to %u x %u features, but data_config.input_size / "
        "img_view_transformer.downsample %u is %u x %u", cameras->input_width,
        cameras->input_height, map->width, map->height, cameras->downsample,
        width, height);
  return TRUE;
}

/* The head's cells against the grid: the coder places a box at (cell +
 * offset) * out_size_factor * voxel_size + pc_range, which must be the
 * grid's cell for the boxes to land where the features were pooled. */
static gboolean
check_coder (const BevDetConfig * config, const P3dcConvBufferDesc * map,
    GError ** error)
{
  const P3dCenterPointConfig *head = &config->head;
  const gdouble *bounds[2] = { config->cameras.xbound,
    config->cameras.ybound
  };
  guint cells[2] = { map->width, map->height };
  guint axis;

  for (axis = 0; axis < 2; axis++) {
    gdouble extent = bounds[axis][1] - bounds[axis][0];
    gdouble covered = head->out_size_factor * head->coder_voxel_size[axis] *
        cells[axis];

    if (fabs (covered - extent) > 1e-4 * extent
        || fabs (head->coder_pc_range[axis] - bounds[axis][0]) > 1e-4 * extent)
      return p3d_model_bad_metadata (error, "the coder (out_size_factor %u, "
          "voxel_size %g, pc_range %g) places the %u head cells along %c over "
          "[%g, %g], but grid_config covers [%g, %g]", head->out_size_factor,
          head->coder_voxel_size[axis], head->coder_pc_range[axis],
          cells[axis], "xy"[axis], head->coder_pc_range[axis],
          head->coder_pc_range[axis] + covered, bounds[axis][0],
          bounds[axis][1]);
  }
  if ((guint64) map->height * map->width < head->max_num)
    return p3d_model_bad_metadata (error,
        "coder.max_num %u exceeds the %u cells of a " "head map", head->max_num,
        map->height * map->width);
  return TRUE;
}

static gboolean
finish (P3dModel * model, P3dModelBuilder * builder, GError ** error)
{
  const BevDetConfig *config = model->config;
  const P3dModelNetwork *image = p3d_model_get_network (model, "image");
  const P3dModelNetwork *bev = p3d_model_get_network (model, "bev");
  const P3dcConvBufferDesc *input = &bev->desc.buffers[0];
  const P3dcConvBufferDesc *map;

  if (!check_image (config, image, error))
    return FALSE;
  if (input->channels != config->bev_in_channels
      || input->height != config->grid[1] || input->width != config->grid[0]
      || p3dc_convnet_batch (&bev->desc) != 1)
    return p3d_model_bad_metadata (error,
        "the \"bev\" graph's input is %u x %u x %u, "
        "the pooled features are %u x %u x %u (numC_Trans x z cells, y "
        "cells, x cells)", input->channels, input->height, input->width,
        config->bev_in_channels, config->grid[1], config->grid[0]);
  map = p3d_center_head_check (&config->head, bev, error);
  if (map == NULL || !check_coder (config, map, error))
    return FALSE;
  model->cameras_storage = config->cameras;
  model->cameras = &model->cameras_storage;
  return TRUE;
}

static const gchar *const family_prefixes[] = {
  "img_backbone.", "img_neck.", "img_view_transformer.depthnet.",
  "img_bev_encoder_backbone.", "img_bev_encoder_neck.", "pts_bbox_head.",
  NULL,
};

static const gchar *const family_networks[] = { "image", "bev", NULL };

const P3dModelFamily p3d_model_family_bevdet = {
  BEVDET_ARCHITECTURE,
  BEVDET_VERSION,
  "tools/convert_bevdet.py",
  family_prefixes,
  family_networks,
  config_parse,
  config_free,
  build_graph,
  finish,
  &p3d_center_head_decode,
};
