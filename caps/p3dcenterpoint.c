/* The CenterPoint-pillar model: config from `p3d.model`, tensors checked
 * against it, BatchNorm folded, layer tables for the compute library. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>
#include <json-glib/json-glib.h>

#include "p3dcenterpoint.h"

static const gchar *const head_names[P3D_CENTERPOINT_N_HEADS] = {
  "reg", "height", "dim", "rot", "vel", "heatmap",
};

/* The channels mmdetection3d's CenterPointBBoxCoder reads from each common
 * head: anything else would not decode. */
static const guint head_channels[P3D_CENTERPOINT_N_HEADS - 1] = {
  2, 1, 3, 2, 2,
};

const gchar *
p3d_centerpoint_head_to_string (P3dCenterPointHead head)
{
  g_return_val_if_fail ((guint) head < P3D_CENTERPOINT_N_HEADS, NULL);
  return head_names[head];
}

/* ---- config ---------------------------------------------------------- */

#define MAX_CHANNELS 4096

static gboolean
bad_key (GError ** error, const gchar * section, const gchar * key,
    const gchar * what)
{
  g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_METADATA,
      P3D_CENTERPOINT_METADATA_KEY ": \"%s%s%s\" %s", section ? section : "",
      section ? "." : "", key, what);
  return FALSE;
}

/* The member @key of @object; NULL and an error when absent. */
static JsonNode *
get_member (JsonObject * object, const gchar * section, const gchar * key,
    GError ** error)
{
  JsonNode *node = json_object_get_member (object, key);

  if (node == NULL || JSON_NODE_HOLDS_NULL (node))
    bad_key (error, section, key, "is missing");
  return node;
}

static gboolean
node_get_number (JsonNode * node, gdouble * value)
{
  GType type;

  if (!JSON_NODE_HOLDS_VALUE (node))
    return FALSE;
  type = json_node_get_value_type (node);
  if (type == G_TYPE_INT64)
    *value = (gdouble) json_node_get_int (node);
  else if (type == G_TYPE_DOUBLE)
    *value = json_node_get_double (node);
  else
    return FALSE;
  return isfinite (*value);
}

static gboolean
get_double (JsonObject * object, const gchar * section, const gchar * key,
    gdouble min, gdouble max, gdouble * value, GError ** error)
{
  JsonNode *node = get_member (object, section, key, error);
  gchar *what;

  if (node == NULL)
    return FALSE;
  if (node_get_number (node, value) && *value >= min && *value <= max)
    return TRUE;
  what = g_strdup_printf ("must be a number in [%g, %g]", min, max);
  bad_key (error, section, key, what);
  g_free (what);
  return FALSE;
}

static gboolean
node_get_uint (JsonNode * node, guint min, guint max, guint * value)
{
  gint64 v;

  if (!JSON_NODE_HOLDS_VALUE (node)
      || json_node_get_value_type (node) != G_TYPE_INT64)
    return FALSE;
  v = json_node_get_int (node);
  if (v < min || v > max)
    return FALSE;
  *value = (guint) v;
  return TRUE;
}

static gboolean
get_uint (JsonObject * object, const gchar * section, const gchar * key,
    guint min, guint max, guint * value, GError ** error)
{
  JsonNode *node = get_member (object, section, key, error);
  gchar *what;

  if (node == NULL)
    return FALSE;
  if (node_get_uint (node, min, max, value))
    return TRUE;
  what = g_strdup_printf ("must be an integer in %u..%u", min, max);
  bad_key (error, section, key, what);
  g_free (what);
  return FALSE;
}

static gboolean
get_boolean (JsonObject * object, const gchar * section, const gchar * key,
    gboolean fallback, gboolean * value, GError ** error)
{
  JsonNode *node = json_object_get_member (object, key);

  if (node == NULL) {
    *value = fallback;
    return TRUE;
  }
  if (JSON_NODE_HOLDS_VALUE (node)
      && json_node_get_value_type (node) == G_TYPE_BOOLEAN) {
    *value = json_node_get_boolean (node);
    return TRUE;
  }
  return bad_key (error, section, key, "must be true or false");
}

static const gchar *
get_string (JsonObject * object, const gchar * section, const gchar * key,
    GError ** error)
{
  JsonNode *node = get_member (object, section, key, error);

  if (node == NULL)
    return NULL;
  if (JSON_NODE_HOLDS_VALUE (node)
      && json_node_get_value_type (node) == G_TYPE_STRING)
    return json_node_get_string (node);
  bad_key (error, section, key, "must be a string");
  return NULL;
}

static JsonObject *
get_object (JsonObject * object, const gchar * section, const gchar * key,
    GError ** error)
{
  JsonNode *node = get_member (object, section, key, error);

  if (node == NULL)
    return NULL;
  if (JSON_NODE_HOLDS_OBJECT (node))
    return json_node_get_object (node);
  bad_key (error, section, key, "must be a JSON object");
  return NULL;
}

/* An array of @min_length..@max_length entries; its length in @length. */
static JsonArray *
get_array (JsonObject * object, const gchar * section, const gchar * key,
    guint min_length, guint max_length, guint * length, GError ** error)
{
  JsonNode *node = get_member (object, section, key, error);
  gchar *what;

  if (node == NULL)
    return NULL;
  if (JSON_NODE_HOLDS_ARRAY (node)) {
    JsonArray *array = json_node_get_array (node);

    *length = json_array_get_length (array);
    if (*length >= min_length && *length <= max_length)
      return array;
  }
  if (min_length == max_length)
    what = g_strdup_printf ("must be an array of %u entries", min_length);
  else
    what = g_strdup_printf ("must be an array of %u to %u entries",
        min_length, max_length);
  bad_key (error, section, key, what);
  g_free (what);
  return NULL;
}

static gboolean
get_doubles (JsonObject * object, const gchar * section, const gchar * key,
    guint n, gdouble min, gdouble max, gdouble * values, GError ** error)
{
  guint length, i;
  JsonArray *array = get_array (object, section, key, n, n, &length, error);
  gchar *what;

  if (array == NULL)
    return FALSE;
  for (i = 0; i < n; i++) {
    if (!node_get_number (json_array_get_element (array, i), &values[i])
        || values[i] < min || values[i] > max)
      break;
  }
  if (i == n)
    return TRUE;
  what = g_strdup_printf ("entry %u must be a number in [%g, %g]", i, min, max);
  bad_key (error, section, key, what);
  g_free (what);
  return FALSE;
}

/* An array of 1..max_length unsigned integers, or of exactly *length ones
 * when *length is nonzero on entry. */
static gboolean
get_uints (JsonObject * object, const gchar * section, const gchar * key,
    guint max_length, guint min, guint max, guint * values, guint * length,
    GError ** error)
{
  guint n, i;
  JsonArray *array = get_array (object, section, key,
      *length ? *length : 1, *length ? *length : max_length, &n, error);
  gchar *what;

  if (array == NULL)
    return FALSE;
  for (i = 0; i < n; i++) {
    if (!node_get_uint (json_array_get_element (array, i), min, max,
            &values[i])) {
      what = g_strdup_printf ("entry %u must be an integer in %u..%u", i, min,
          max);
      bad_key (error, section, key, what);
      g_free (what);
      return FALSE;
    }
  }
  *length = n;
  return TRUE;
}

static gboolean
parse_top (P3dCenterPointConfig * config, JsonObject * root, GError ** error)
{
  const gchar *text;
  guint n, i;

  text = get_string (root, NULL, "architecture", error);
  if (text == NULL)
    return FALSE;
  if (strcmp (text, P3D_CENTERPOINT_ARCHITECTURE) != 0)
    return bad_key (error, NULL, "architecture",
        "is not \"" P3D_CENTERPOINT_ARCHITECTURE "\", the only one read");
  if (!get_uint (root, NULL, "version", P3D_CENTERPOINT_VERSION,
          P3D_CENTERPOINT_VERSION, &config->version, error)
      || !get_uint (root, NULL, "point_channels", 3, 64,
          &config->point_channels, error))
    return FALSE;
  text = get_string (root, NULL, "features", error);
  if (text == NULL)
    return FALSE;
  config->features = p3d_feature_set_from_string (text);
  if (config->features == P3D_FEATURE_SET_UNKNOWN)
    return bad_key (error, NULL, "features",
        "names a feature set that pillarfeat does not compute");
  if (!get_doubles (root, NULL, "voxel_size", 3, 1e-3, 100.0,
          config->voxel_size, error)
      || !get_doubles (root, NULL, "point_cloud_range", 6, -1e4, 1e4,
          config->point_cloud_range, error)
      || !get_uint (root, NULL, "max_points", 1, 1024, &config->max_points,
          error)
      || !get_uint (root, NULL, "max_voxels", 1, 4194304, &config->max_voxels,
          error))
    return FALSE;
  n = 3;
  if (!get_uints (root, NULL, "grid", 3, 1, 16384, config->grid, &n, error))
    return FALSE;
  for (i = 0; i < 3; i++) {
    gdouble extent = config->point_cloud_range[i + 3] -
        config->point_cloud_range[i];

    if (!(extent > 0))
      return bad_key (error, NULL, "point_cloud_range",
          "must have each maximum above its minimum");
    if (fabs (extent / config->voxel_size[i] - config->grid[i]) > 1e-3)
      return bad_key (error, NULL, "grid",
          "disagrees with point_cloud_range / voxel_size");
  }
  if (config->grid[2] != 1)
    return bad_key (error, NULL, "grid",
        "must have one z cell: the pillar net scatters onto one BEV plane");
  return TRUE;
}

static gboolean
parse_pfn (P3dCenterPointConfig * config, JsonObject * root, GError ** error)
{
  JsonObject *pfn = get_object (root, NULL, "pfn", error);
  guint n = 0;

  if (pfn == NULL)
    return FALSE;
  if (!get_uints (pfn, "pfn", "channels", 1, 1, MAX_CHANNELS,
          &config->pfn_channels, &n, error))
    return FALSE;
  return get_double (pfn, "pfn", "bn_eps", 1e-12, 1.0, &config->pfn_bn_eps,
      error);
}

static gboolean
parse_backbone (P3dCenterPointConfig * config, JsonObject * root,
    GError ** error)
{
  JsonObject *backbone = get_object (root, NULL, "backbone", error);

  if (backbone == NULL)
    return FALSE;
  config->n_stages = 0;
  if (!get_uints (backbone, "backbone", "out_channels",
          P3D_CENTERPOINT_MAX_STAGES, 1, MAX_CHANNELS,
          config->backbone_out_channels, &config->n_stages, error)
      || !get_uints (backbone, "backbone", "layer_nums",
          P3D_CENTERPOINT_MAX_STAGES, 0, 64, config->backbone_layer_nums,
          &config->n_stages, error)
      || !get_uints (backbone, "backbone", "layer_strides",
          P3D_CENTERPOINT_MAX_STAGES, 1, 8, config->backbone_layer_strides,
          &config->n_stages, error))
    return FALSE;
  return get_double (backbone, "backbone", "bn_eps", 1e-12, 1.0,
      &config->backbone_bn_eps, error);
}

static gboolean
parse_neck (P3dCenterPointConfig * config, JsonObject * root, GError ** error)
{
  JsonObject *neck = get_object (root, NULL, "neck", error);
  guint n = config->n_stages, i;

  if (neck == NULL)
    return FALSE;
  if (!get_uints (neck, "neck", "out_channels", P3D_CENTERPOINT_MAX_STAGES, 1,
          MAX_CHANNELS, config->neck_out_channels, &n, error)
      || !get_doubles (neck, "neck", "upsample_strides", config->n_stages,
          1.0 / 16, 16, config->neck_upsample_strides, error))
    return FALSE;
  /* Strides of at least 1 are a transposed convolution's kernel, smaller
   * ones the reciprocal of a convolution's: both must be whole. */
  for (i = 0; i < config->n_stages; i++) {
    gdouble stride = config->neck_upsample_strides[i];
    gdouble whole = stride >= 1 ? stride : 1 / stride;

    if (fabs (whole - round (whole)) > 1e-6) {
      gchar *what = g_strdup_printf ("entry %u (%g) is neither a whole "
          "number nor the reciprocal of one", i, stride);

      bad_key (error, "neck", "upsample_strides", what);
      g_free (what);
      return FALSE;
    }
  }
  if (!get_boolean (neck, "neck", "use_conv_for_no_stride", FALSE,
          &config->neck_use_conv_for_no_stride, error))
    return FALSE;
  return get_double (neck, "neck", "bn_eps", 1e-12, 1.0,
      &config->neck_bn_eps, error);
}

static gboolean
parse_tasks (P3dCenterPointConfig * config, JsonObject * head, GError ** error)
{
  JsonArray *tasks = get_array (head, "head", "tasks", 1,
      P3DC_CENTERPOINT_MAX_TASKS, &config->n_tasks, error);
  guint t, c;

  if (tasks == NULL)
    return FALSE;
  config->n_classes = 0;
  for (t = 0; t < config->n_tasks; t++) {
    JsonNode *node = json_array_get_element (tasks, t);
    P3dCenterPointTaskConfig *task = &config->tasks[t];
    gchar *section = g_strdup_printf ("head.tasks[%u]", t);
    JsonArray *names = NULL;
    guint n_names = 0;

    if (!JSON_NODE_HOLDS_OBJECT (node))
      bad_key (error, "head", "tasks", "must hold JSON objects");
    else
      names = get_array (json_node_get_object (node), section, "class_names",
          1, P3D_CENTERPOINT_MAX_CLASSES, &n_names, error);
    if (names == NULL) {
      g_free (section);
      return FALSE;
    }
    task->n_classes = n_names;
    task->label_offset = config->n_classes;
    task->class_names = g_new0 (gchar *, n_names + 1);
    for (c = 0; c < n_names; c++) {
      JsonNode *name = json_array_get_element (names, c);

      if (!JSON_NODE_HOLDS_VALUE (name)
          || json_node_get_value_type (name) != G_TYPE_STRING) {
        bad_key (error, section, "class_names", "must hold strings");
        g_free (section);
        return FALSE;
      }
      task->class_names[c] = g_strdup (json_node_get_string (name));
    }
    config->n_classes += n_names;
    g_free (section);
  }
  return TRUE;
}

static gboolean
parse_common_heads (P3dCenterPointConfig * config, JsonObject * head,
    GError ** error)
{
  JsonObject *heads = get_object (head, "head", "common_heads", error);
  GList *members, *l;
  guint h;
  gboolean ok = TRUE;

  if (heads == NULL)
    return FALSE;
  members = json_object_get_members (heads);
  for (l = members; l != NULL && ok; l = l->next) {
    for (h = 0; h < P3D_CENTERPOINT_HEAD_HEATMAP; h++)
      if (strcmp (l->data, head_names[h]) == 0)
        break;
    if (h == P3D_CENTERPOINT_HEAD_HEATMAP)
      ok = bad_key (error, "head.common_heads", l->data,
          "is not a head the CenterPoint coder reads (reg, height, dim, rot, "
          "vel)");
  }
  g_list_free (members);
  for (h = 0; h < P3D_CENTERPOINT_HEAD_HEATMAP && ok; h++) {
    gchar *what;

    config->head_channels[h] = 0;
    if (h == P3D_CENTERPOINT_HEAD_VEL
        && !json_object_has_member (heads, head_names[h]))
      continue;
    if (get_uint (heads, "head.common_heads", head_names[h], 0, G_MAXINT,
            &config->head_channels[h], error)
        && config->head_channels[h] == head_channels[h])
      continue;
    g_clear_error (error);
    what = g_strdup_printf (json_object_has_member (heads, head_names[h]) ?
        "must be %u" : "is missing; it must be %u", head_channels[h]);
    ok = bad_key (error, "head.common_heads", head_names[h], what);
    g_free (what);
  }
  return ok;
}

static gboolean
parse_head (P3dCenterPointConfig * config, JsonObject * root, GError ** error)
{
  JsonObject *head = get_object (root, NULL, "head", error);

  if (head == NULL)
    return FALSE;
  if (!get_uint (head, "head", "share_conv_channel", 1, MAX_CHANNELS,
          &config->share_conv_channel, error)
      || !get_uint (head, "head", "head_conv", 1, MAX_CHANNELS,
          &config->head_conv, error)
      || !get_uint (head, "head", "final_kernel", 1, 15,
          &config->final_kernel, error))
    return FALSE;
  if (config->final_kernel % 2 == 0)
    return bad_key (error, "head", "final_kernel", "must be odd");
  if (!get_double (head, "head", "bn_eps", 1e-12, 1.0, &config->head_bn_eps,
          error)
      || !parse_tasks (config, head, error)
      || !parse_common_heads (config, head, error)
      || !get_boolean (head, "head", "norm_bbox", TRUE, &config->norm_bbox,
          error))
    return FALSE;
  return TRUE;
}

static gboolean
parse_coder (P3dCenterPointConfig * config, JsonObject * root, GError ** error)
{
  JsonObject *coder = get_object (root, NULL, "coder", error);
  guint i;

  if (coder == NULL)
    return FALSE;
  if (!get_doubles (coder, "coder", "post_center_range", 6, -1e4, 1e4,
          config->post_center_range, error))
    return FALSE;
  for (i = 0; i < 3; i++)
    if (config->post_center_range[i] > config->post_center_range[i + 3])
      return bad_key (error, "coder", "post_center_range",
          "must have each maximum at or above its minimum");
  return get_uint (coder, "coder", "max_num", 1, 65536, &config->max_num, error)
      && get_double (coder, "coder", "score_threshold", 0.0, 1.0,
      &config->score_threshold, error)
      && get_uint (coder, "coder", "out_size_factor", 1, 64,
      &config->out_size_factor, error)
      && get_doubles (coder, "coder", "voxel_size", 2, 1e-3, 100.0,
      config->coder_voxel_size, error)
      && get_doubles (coder, "coder", "pc_range", 2, -1e4, 1e4,
      config->coder_pc_range, error);
}

static gboolean
parse_test_nms (P3dCenterPointConfig * config, JsonObject * root,
    GError ** error)
{
  JsonObject *nms = get_object (root, NULL, "test_nms", error);
  const gchar *type;
  gdouble radius[P3DC_CENTERPOINT_MAX_TASKS];
  guint t;

  if (nms == NULL)
    return FALSE;
  type = get_string (nms, "test_nms", "type", error);
  if (type == NULL)
    return FALSE;
  if (strcmp (type, "rotate") == 0)
    config->nms_type = P3DC_CENTERPOINT_NMS_ROTATE;
  else if (strcmp (type, "circle") == 0)
    config->nms_type = P3DC_CENTERPOINT_NMS_CIRCLE;
  else
    return bad_key (error, "test_nms", "type", "must be rotate or circle");
  /* min_radius is circle NMS's alone: a rotate config may leave it out. */
  if (config->nms_type == P3DC_CENTERPOINT_NMS_CIRCLE
      || json_object_has_member (nms, "min_radius")) {
    if (!get_doubles (nms, "test_nms", "min_radius", config->n_tasks, 0.0,
            1e6, radius, error))
      return FALSE;
    for (t = 0; t < config->n_tasks; t++)
      config->tasks[t].min_radius = radius[t];
  }
  return get_double (nms, "test_nms", "nms_thr", 0.0, 1.0, &config->nms_thr,
      error)
      && get_uint (nms, "test_nms", "pre_max_size", 1, 1 << 20,
      &config->pre_max_size, error)
      && get_uint (nms, "test_nms", "post_max_size", 1, 1 << 20,
      &config->post_max_size, error);
}

gboolean
p3d_centerpoint_config_parse (P3dCenterPointConfig * config,
    const gchar * json, GError ** error)
{
  JsonParser *parser;
  JsonObject *root;
  GError *json_error = NULL;
  gboolean ok;

  g_return_val_if_fail (config != NULL, FALSE);
  g_return_val_if_fail (json != NULL, FALSE);
  memset (config, 0, sizeof (*config));

  parser = json_parser_new ();
  if (!json_parser_load_from_data (parser, json, -1, &json_error)) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_METADATA,
        P3D_CENTERPOINT_METADATA_KEY " is not valid JSON: %s",
        json_error->message);
    g_error_free (json_error);
    g_object_unref (parser);
    return FALSE;
  }
  if (!JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser))) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_METADATA,
        P3D_CENTERPOINT_METADATA_KEY " is not a JSON object");
    g_object_unref (parser);
    return FALSE;
  }
  root = json_node_get_object (json_parser_get_root (parser));
  ok = parse_top (config, root, error)
      && parse_pfn (config, root, error)
      && parse_backbone (config, root, error)
      && parse_neck (config, root, error)
      && parse_head (config, root, error)
      && parse_coder (config, root, error)
      && parse_test_nms (config, root, error);
  g_object_unref (parser);
  return ok;
}

void
p3d_centerpoint_config_clear (P3dCenterPointConfig * config)
{
  guint t;

  g_return_if_fail (config != NULL);
  for (t = 0; t < P3DC_CENTERPOINT_MAX_TASKS; t++)
    g_clear_pointer (&config->tasks[t].class_names, g_strfreev);
}

/* ---- BatchNorm folding ----------------------------------------------- */

void
p3d_centerpoint_fold_batchnorm (gfloat * weight, guint n_outer,
    guint out_channels, guint inner, const gfloat * layer_bias,
    const gfloat * gamma, const gfloat * beta, const gfloat * mean,
    const gfloat * var, gdouble eps, gfloat * bias)
{
  guint outer, o, i;

  for (o = 0; o < out_channels; o++) {
    gdouble scale = (gdouble) gamma[o] / sqrt ((gdouble) var[o] + eps);
    gdouble b = layer_bias ? layer_bias[o] : 0.0;

    for (outer = 0; outer < n_outer; outer++) {
      gfloat *w = weight + ((gsize) outer * out_channels + o) * inner;

      for (i = 0; i < inner; i++)
        w[i] = (gfloat) ((gdouble) w[i] * scale);
    }
    bias[o] = (gfloat) ((gdouble) beta[o] + (b - (gdouble) mean[o]) * scale);
  }
}

/* ---- the model ------------------------------------------------------- */

typedef struct
{
  const P3dWeights *weights;
  P3dCenterPointModel *model;
  GArray *buffers;              /* P3dcConvBufferDesc */
  GArray *layers;               /* P3dcConvLayer */
  GHashTable *used;             /* names of the tensors read */
} Builder;

/* The state_dict prefixes of the modules the config describes. */
static const gchar *const model_prefixes[] = {
  "pts_voxel_encoder.", "pts_backbone.", "pts_neck.", "pts_bbox_head.",
};

/* @name read as float32, after checking its shape; the array belongs to
 * the model. */
static gfloat *
read_tensor (Builder * b, const gchar * name, guint n_dims,
    const gint64 * shape, GError ** error)
{
  const P3dWeightsTensor *tensor = p3d_weights_lookup (b->weights, name,
      n_dims, shape, error);
  gfloat *values;

  if (tensor == NULL)
    return NULL;
  g_hash_table_add (b->used, (gpointer) tensor->name);
  values = g_new (gfloat, MAX (tensor->n_elements, 1));
  g_ptr_array_add (b->model->arrays, values);
  if (!p3d_weights_read_float (b->weights, tensor, values, tensor->n_elements,
          error))
    return NULL;
  return values;
}

/* Folds the BatchNorm @prefix.{weight,bias,running_mean,running_var} into
 * @weight (see p3d_centerpoint_fold_batchnorm); returns the bias. */
static gfloat *
fold_norm (Builder * b, const gchar * prefix, gfloat * weight, guint n_outer,
    guint out_channels, guint inner, gdouble eps, GError ** error)
{
  static const gchar *const parts[4] = {
    "weight", "bias", "running_mean", "running_var",
  };
  const gint64 shape[1] = { out_channels };
  gfloat *values[4], *bias;
  guint i;

  for (i = 0; i < 4; i++) {
    gchar *name = g_strdup_printf ("%s.%s", prefix, parts[i]);

    values[i] = read_tensor (b, name, 1, shape, error);
    g_free (name);
    if (values[i] == NULL)
      return NULL;
  }
  for (i = 0; i < out_channels; i++) {
    if (!(values[3][i] >= 0)) {
      g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_VALUE,
          "%s: %s.running_var[%u] is %g; a variance is never negative",
          p3d_weights_get_name (b->weights), prefix, i, values[3][i]);
      return NULL;
    }
  }
  bias = g_new (gfloat, out_channels);
  g_ptr_array_add (b->model->arrays, bias);
  p3d_centerpoint_fold_batchnorm (weight, n_outer, out_channels, inner, NULL,
      values[0], values[1], values[2], values[3], eps, bias);
  return bias;
}

static guint
add_buffer (Builder * b, guint channels, guint height, guint width)
{
  P3dcConvBufferDesc desc = { channels, height, width };

  g_array_append_val (b->buffers, desc);
  return b->buffers->len - 1;
}

static const P3dcConvBufferDesc *
buffer_at (Builder * b, guint index)
{
  return &g_array_index (b->buffers, P3dcConvBufferDesc, index);
}

/* One layer reading buffer @input into @output at @offset.  With @norm, the
 * weight @weight_name has no bias and the BatchNorm @norm (eps @eps) folds
 * into it; without, @bias_name is the layer's own bias. */
static gboolean
add_layer (Builder * b, P3dcConvKind kind, const gchar * weight_name,
    const gchar * norm, gdouble eps, const gchar * bias_name, guint input,
    guint output, guint offset, guint out_channels, guint kernel,
    guint stride, guint padding, gboolean relu, GError ** error)
{
  guint in_channels = buffer_at (b, input)->channels;
  P3dcConvLayer layer = { 0 };
  gint64 shape[4];
  gfloat *weight, *bias;

  shape[0] = kind == P3DC_CONV_2D ? out_channels : in_channels;
  shape[1] = kind == P3DC_CONV_2D ? in_channels : out_channels;
  shape[2] = shape[3] = kernel;
  weight = read_tensor (b, weight_name, 4, shape, error);
  if (weight == NULL)
    return FALSE;
  if (norm != NULL) {
    if (kind == P3DC_CONV_2D)
      bias = fold_norm (b, norm, weight, 1, out_channels,
          in_channels * kernel * kernel, eps, error);
    else
      bias = fold_norm (b, norm, weight, in_channels, out_channels,
          kernel * kernel, eps, error);
  } else {
    const gint64 bias_shape[1] = { out_channels };

    bias = read_tensor (b, bias_name, 1, bias_shape, error);
  }
  if (bias == NULL)
    return FALSE;

  layer.kind = kind;
  layer.in_channels = in_channels;
  layer.out_channels = out_channels;
  layer.kernel = kernel;
  layer.stride = stride;
  layer.padding = padding;
  layer.relu = relu;
  layer.weight = weight;
  layer.bias = bias;
  layer.input = input;
  layer.output = output;
  layer.output_channel_offset = offset;
  g_array_append_val (b->layers, layer);
  return TRUE;
}

static gboolean
build_pfn (Builder * b, GError ** error)
{
  P3dCenterPointModel *model = b->model;
  gint64 shape[2];

  model->pfn_in_channels = p3d_feature_set_get_channels
      (model->config.features);
  model->pfn_out_channels = model->config.pfn_channels;
  shape[0] = model->pfn_out_channels;
  shape[1] = model->pfn_in_channels;
  model->pfn_weight = read_tensor (b,
      "pts_voxel_encoder.pfn_layers.0.linear.weight", 2, shape, error);
  if (model->pfn_weight == NULL)
    return FALSE;
  model->pfn_bias = fold_norm (b, "pts_voxel_encoder.pfn_layers.0.norm",
      model->pfn_weight, 1, model->pfn_out_channels, model->pfn_in_channels,
      model->config.pfn_bn_eps, error);
  return model->pfn_bias != NULL;
}

/* SECOND: per stage a strided conv, then layer_nums convs, each with
 * BatchNorm and ReLU; the stage outputs in @stage_outputs. */
static gboolean
build_backbone (Builder * b, guint * stage_outputs, GError ** error)
{
  const P3dCenterPointConfig *config = &b->model->config;
  guint input = 0, s, k;

  for (s = 0; s < config->n_stages; s++) {
    const P3dcConvBufferDesc *in = buffer_at (b, input);
    guint stride = config->backbone_layer_strides[s];
    guint channels = config->backbone_out_channels[s];
    guint height = (in->height - 1) / stride + 1;
    guint width = (in->width - 1) / stride + 1;

    for (k = 0; k <= config->backbone_layer_nums[s]; k++) {
      gchar *weight = g_strdup_printf ("pts_backbone.blocks.%u.%u.weight", s,
          3 * k);
      gchar *norm = g_strdup_printf ("pts_backbone.blocks.%u.%u", s,
          3 * k + 1);
      /* a buffer of its own: the net is written once per run, so the
       * device runner may replay it as one graph */
      guint output = add_buffer (b, channels, height, width);
      gboolean ok = add_layer (b, P3DC_CONV_2D, weight, norm,
          config->backbone_bn_eps, NULL, input, output, 0, channels, 3,
          k == 0 ? stride : 1, 1, TRUE, error);

      g_free (weight);
      g_free (norm);
      if (!ok)
        return FALSE;
      input = output;
    }
    stage_outputs[s] = input;
  }
  return TRUE;
}

/* SECONDFPN: each stage up- (transposed conv) or down-sampled (conv) to one
 * size, BatchNorm, ReLU, concatenated on channels. */
static gboolean
build_neck (Builder * b, const guint * stage_outputs, GError ** error)
{
  P3dCenterPointModel *model = b->model;
  const P3dCenterPointConfig *config = &model->config;
  guint sizes[P3D_CENTERPOINT_MAX_STAGES][2] = { {0} };
  guint total = 0, offset = 0, s;

  for (s = 0; s < config->n_stages; s++) {
    const P3dcConvBufferDesc *in = buffer_at (b, stage_outputs[s]);
    gdouble stride = config->neck_upsample_strides[s];

    if (stride > 1 || (stride == 1 && !config->neck_use_conv_for_no_stride)) {
      guint k = (guint) round (stride);

      sizes[s][0] = in->height * k;
      sizes[s][1] = in->width * k;
    } else {
      guint k = (guint) round (1 / stride);

      if (in->height < k || in->width < k) {
        g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_METADATA,
            P3D_CENTERPOINT_METADATA_KEY ": neck stage %u downsamples by %u "
            "a %u x %u map", s, k, in->height, in->width);
        return FALSE;
      }
      sizes[s][0] = (in->height - k) / k + 1;
      sizes[s][1] = (in->width - k) / k + 1;
    }
    if (sizes[s][0] != sizes[0][0] || sizes[s][1] != sizes[0][1]) {
      g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_METADATA,
          P3D_CENTERPOINT_METADATA_KEY ": neck stage %u gives a %u x %u map "
          "but stage 0 a %u x %u one: neck.upsample_strides disagree with "
          "backbone.layer_strides", s, sizes[s][0], sizes[s][1], sizes[0][0],
          sizes[0][1]);
      return FALSE;
    }
    total += config->neck_out_channels[s];
  }
  model->neck_output = add_buffer (b, total, sizes[0][0], sizes[0][1]);
  for (s = 0; s < config->n_stages; s++) {
    gdouble stride = config->neck_upsample_strides[s];
    gboolean transposed = stride > 1 || (stride == 1
        && !config->neck_use_conv_for_no_stride);
    guint k = (guint) round (transposed ? stride : 1 / stride);
    gchar *weight = g_strdup_printf ("pts_neck.deblocks.%u.0.weight", s);
    gchar *norm = g_strdup_printf ("pts_neck.deblocks.%u.1", s);
    gboolean ok = add_layer (b,
        transposed ? P3DC_CONV_TRANSPOSED_2D : P3DC_CONV_2D, weight, norm,
        config->neck_bn_eps, NULL, stage_outputs[s], model->neck_output,
        offset, config->neck_out_channels[s], k, k, 0, TRUE, error);

    g_free (weight);
    g_free (norm);
    if (!ok)
      return FALSE;
    offset += config->neck_out_channels[s];
  }
  return TRUE;
}

/* CenterHead: the shared conv, then per task and head a ConvModule into a
 * buffer of its own and the final conv (with bias) into the head's output
 * buffer. */
static gboolean
build_head (Builder * b, GError ** error)
{
  P3dCenterPointModel *model = b->model;
  const P3dCenterPointConfig *config = &model->config;
  const P3dcConvBufferDesc *neck = buffer_at (b, model->neck_output);
  guint height = neck->height, width = neck->width;
  guint shared, scratch, t, h;
  guint kernel = config->final_kernel;

  model->head_height = height;
  model->head_width = width;
  if ((guint64) height * config->out_size_factor != config->grid[1]
      || (guint64) width * config->out_size_factor != config->grid[0]) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_METADATA,
        P3D_CENTERPOINT_METADATA_KEY ": coder.out_size_factor %u disagrees "
        "with the net, which maps the %u x %u grid to %u x %u",
        config->out_size_factor, config->grid[0], config->grid[1], width,
        height);
    return FALSE;
  }
  if ((guint64) height * width < config->max_num) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_METADATA,
        P3D_CENTERPOINT_METADATA_KEY ": coder.max_num %u exceeds the %u "
        "cells of a head map", config->max_num, height * width);
    return FALSE;
  }

  shared = add_buffer (b, config->share_conv_channel, height, width);
  if (!add_layer (b, P3DC_CONV_2D, "pts_bbox_head.shared_conv.conv.weight",
          "pts_bbox_head.shared_conv.bn", config->head_bn_eps, NULL,
          model->neck_output, shared, 0, config->share_conv_channel, 3, 1, 1,
          TRUE, error))
    return FALSE;
  for (t = 0; t < config->n_tasks; t++) {
    for (h = 0; h < P3D_CENTERPOINT_N_HEADS; h++) {
      guint channels = h == P3D_CENTERPOINT_HEAD_HEATMAP ?
          config->tasks[t].n_classes : config->head_channels[h];
      gchar *prefix, *name, *norm, *weight, *bias;
      guint output;
      gboolean ok;

      model->heads[t][h].channels = channels;
      if (channels == 0)
        continue;
      scratch = add_buffer (b, config->head_conv, height, width);
      output = add_buffer (b, channels, height, width);
      model->heads[t][h].buffer = output;
      prefix = g_strdup_printf ("pts_bbox_head.task_heads.%u.%s", t,
          head_names[h]);
      name = g_strdup_printf ("%s.0.conv.weight", prefix);
      norm = g_strdup_printf ("%s.0.bn", prefix);
      weight = g_strdup_printf ("%s.1.weight", prefix);
      bias = g_strdup_printf ("%s.1.bias", prefix);
      ok = add_layer (b, P3DC_CONV_2D, name, norm, config->head_bn_eps, NULL,
          shared, scratch, 0, config->head_conv, kernel, 1, kernel / 2, TRUE,
          error)
          && add_layer (b, P3DC_CONV_2D, weight, NULL, 0, bias, scratch,
          output, 0, channels, kernel, 1, kernel / 2, FALSE, error);
      g_free (prefix);
      g_free (name);
      g_free (norm);
      g_free (weight);
      g_free (bias);
      if (!ok)
        return FALSE;
    }
  }
  return TRUE;
}

/* A tensor of the model's modules that no layer read means the config
 * describes another model (fewer layers, no vel head): refuse it rather
 * than run a network that is not the checkpoint's. */
static gboolean
check_all_used (Builder * b, GError ** error)
{
  guint i, p;

  for (i = 0; i < p3d_weights_get_n_tensors (b->weights); i++) {
    const gchar *name = p3d_weights_get_tensor (b->weights, i)->name;

    if (g_hash_table_contains (b->used, name)
        || g_str_has_suffix (name, "num_batches_tracked"))
      continue;
    for (p = 0; p < G_N_ELEMENTS (model_prefixes); p++) {
      if (g_str_has_prefix (name, model_prefixes[p])) {
        g_set_error (error, P3D_WEIGHTS_ERROR,
            P3D_WEIGHTS_ERROR_BAD_METADATA,
            "%s: tensor '%s' belongs to no layer of the model that \""
            P3D_CENTERPOINT_METADATA_KEY "\" describes: the metadata does "
            "not match the weights", p3d_weights_get_name (b->weights), name);
        return FALSE;
      }
    }
  }
  return TRUE;
}

P3dCenterPointModel *
p3d_centerpoint_model_new (const P3dWeights * weights, GError ** error)
{
  P3dCenterPointModel *model;
  Builder builder;
  const gchar *json;
  guint stage_outputs[P3D_CENTERPOINT_MAX_STAGES];
  gboolean ok;

  g_return_val_if_fail (weights != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  json = p3d_weights_get_metadata (weights, P3D_CENTERPOINT_METADATA_KEY);
  if (json == NULL) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_MISSING_METADATA,
        "%s has no \"" P3D_CENTERPOINT_METADATA_KEY "\" metadata, so its "
        "model is unknown: convert the checkpoint with "
        "tools/convert_mmdet3d_centerpoint.py", p3d_weights_get_name (weights));
    return NULL;
  }
  model = g_new0 (P3dCenterPointModel, 1);
  model->arrays = g_ptr_array_new_with_free_func (g_free);
  if (!p3d_centerpoint_config_parse (&model->config, json, error)) {
    g_prefix_error (error, "%s: ", p3d_weights_get_name (weights));
    p3d_centerpoint_model_free (model);
    return NULL;
  }

  builder.weights = weights;
  builder.model = model;
  builder.buffers = g_array_new (FALSE, TRUE, sizeof (P3dcConvBufferDesc));
  builder.layers = g_array_new (FALSE, TRUE, sizeof (P3dcConvLayer));
  builder.used = g_hash_table_new (g_str_hash, g_str_equal);
  add_buffer (&builder, model->config.pfn_channels, model->config.grid[1],
      model->config.grid[0]);
  ok = build_pfn (&builder, error)
      && build_backbone (&builder, stage_outputs, error)
      && build_neck (&builder, stage_outputs, error)
      && build_head (&builder, error);
  if (!ok && error != NULL && *error != NULL
      && (*error)->code == P3D_WEIGHTS_ERROR_BAD_METADATA)
    g_prefix_error (error, "%s: ", p3d_weights_get_name (weights));
  ok = ok && check_all_used (&builder, error);
  g_hash_table_unref (builder.used);

  model->net.n_buffers = builder.buffers->len;
  model->buffers = (P3dcConvBufferDesc *) g_array_free (builder.buffers, FALSE);
  model->net.buffers = model->buffers;
  model->net.n_layers = builder.layers->len;
  model->layers = (P3dcConvLayer *) g_array_free (builder.layers, FALSE);
  model->net.layers = model->layers;
  if (!ok) {
    p3d_centerpoint_model_free (model);
    return NULL;
  }
  return model;
}

void
p3d_centerpoint_model_free (P3dCenterPointModel * model)
{
  if (model == NULL)
    return;
  p3d_centerpoint_config_clear (&model->config);
  g_free (model->buffers);
  g_free (model->layers);
  g_ptr_array_unref (model->arrays);
  g_free (model);
}

void
p3d_centerpoint_model_decode_params (const P3dCenterPointModel * model,
    gboolean model_nms, P3dcCenterPointParams * params)
{
  const P3dCenterPointConfig *config = &model->config;
  guint t, i;

  memset (params, 0, sizeof (*params));
  params->n_tasks = config->n_tasks;
  for (t = 0; t < config->n_tasks; t++) {
    params->tasks[t].num_classes = config->tasks[t].n_classes;
    params->tasks[t].min_radius = config->tasks[t].min_radius;
  }
  params->height = model->head_height;
  params->width = model->head_width;
  params->max_num = config->max_num;
  params->score_threshold = (float) config->score_threshold;
  params->out_size_factor = (float) config->out_size_factor;
  for (i = 0; i < 2; i++) {
    params->voxel_size[i] = (float) config->coder_voxel_size[i];
    params->pc_range[i] = (float) config->coder_pc_range[i];
  }
  for (i = 0; i < 6; i++)
    params->post_center_range[i] = (float) config->post_center_range[i];
  params->norm_bbox = config->norm_bbox;
  params->nms = model_nms ? config->nms_type : P3DC_CENTERPOINT_NMS_NONE;
  params->nms_threshold = (float) config->nms_thr;
  /* pre_max_size and post_max_size belong to the NMS: without it every
   * decoded box stays, up to max_num per task */
  params->pre_max_size = model_nms ? config->pre_max_size : 0;
  params->post_max_size = model_nms ? config->post_max_size : 0;
}
