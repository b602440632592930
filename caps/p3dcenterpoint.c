/* The CenterPoint-pillar model family (mmdetection3d's PillarFeatureNet,
 * PointPillarsScatter, SECOND, SECONDFPN and CenterHead with the
 * CenterPoint box coder): its `p3d.model` config, the graph of its "bev"
 * network built from it (or given in the metadata), its pillar feature
 * net, and its decode; plus the typed view of such a model that the tests
 * read (p3dcenterpoint.h).  The grid, the pillar net, SECOND and SECONDFPN
 * are what every pillar family shares (p3dmodel-pillar.c). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include "p3dcenterpoint.h"
#include "p3dmodel-private.h"
#include "p3djson.h"

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
parse_top (P3dCenterPointConfig * config, JsonObject * root, GError ** error)
{
  const gchar *text;

  text = p3d_model_json_string (root, NULL, "architecture", error);
  if (text == NULL)
    return FALSE;
  if (strcmp (text, P3D_CENTERPOINT_ARCHITECTURE) != 0)
    return p3d_model_json_bad_key (error, NULL, "architecture",
        "is not \"" P3D_CENTERPOINT_ARCHITECTURE "\", the only one read");
  return p3d_model_json_uint (root, NULL, "version", P3D_CENTERPOINT_VERSION,
      P3D_CENTERPOINT_VERSION, &config->version, error);
}

static gboolean
parse_tasks (P3dCenterPointConfig * config, JsonObject * head, GError ** error)
{
  JsonArray *tasks = p3d_model_json_array (head, "head", "tasks", 1,
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
      p3d_model_json_bad_key (error, "head", "tasks", "must hold JSON objects");
    else
      names =
          p3d_model_json_array (json_node_get_object (node), section,
          "class_names", 1, P3D_CENTERPOINT_MAX_CLASSES, &n_names, error);
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
        p3d_model_json_bad_key (error, section, "class_names",
            "must hold strings");
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
  JsonObject *heads =
      p3d_model_json_object (head, "head", "common_heads", error);
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
      ok = p3d_model_json_bad_key (error, "head.common_heads", l->data,
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
    if (p3d_model_json_uint (heads, "head.common_heads", head_names[h], 0,
            G_MAXINT, &config->head_channels[h], error)
        && config->head_channels[h] == head_channels[h])
      continue;
    g_clear_error (error);
    what = g_strdup_printf (json_object_has_member (heads, head_names[h]) ?
        "must be %u" : "is missing; it must be %u", head_channels[h]);
    ok = p3d_model_json_bad_key (error, "head.common_heads", head_names[h],
        what);
    g_free (what);
  }
  return ok;
}

static gboolean
parse_head (P3dCenterPointConfig * config, JsonObject * root, GError ** error)
{
  JsonObject *head = p3d_model_json_object (root, NULL, "head", error);

  if (head == NULL)
    return FALSE;
  if (!p3d_model_json_uint (head, "head", "share_conv_channel", 1, MAX_CHANNELS,
          &config->share_conv_channel, error)
      || !p3d_model_json_uint (head, "head", "head_conv", 1, MAX_CHANNELS,
          &config->head_conv, error)
      || !p3d_model_json_uint (head, "head", "final_kernel", 1, 15,
          &config->final_kernel, error))
    return FALSE;
  if (config->final_kernel % 2 == 0)
    return p3d_model_json_bad_key (error, "head", "final_kernel",
        "must be odd");
  if (!p3d_model_json_double (head, "head", "bn_eps", 1e-12, 1.0,
          &config->head_bn_eps, error)
      || !parse_tasks (config, head, error)
      || !parse_common_heads (config, head, error)
      || !p3d_model_json_boolean (head, "head", "norm_bbox", TRUE,
          &config->norm_bbox, error))
    return FALSE;
  return TRUE;
}

static gboolean
parse_coder (P3dCenterPointConfig * config, JsonObject * root, GError ** error)
{
  JsonObject *coder = p3d_model_json_object (root, NULL, "coder", error);
  guint i;

  if (coder == NULL)
    return FALSE;
  if (!p3d_model_json_doubles (coder, "coder", "post_center_range", 6, -1e4,
          1e4, config->post_center_range, error))
    return FALSE;
  for (i = 0; i < 3; i++)
    if (config->post_center_range[i] > config->post_center_range[i + 3])
      return p3d_model_json_bad_key (error, "coder", "post_center_range",
          "must have each maximum at or above its minimum");
  return p3d_model_json_uint (coder, "coder", "max_num", 1, 65536,
      &config->max_num, error)
      && p3d_model_json_double (coder, "coder", "score_threshold", 0.0, 1.0,
      &config->score_threshold, error)
      && p3d_model_json_uint (coder, "coder", "out_size_factor", 1, 64,
      &config->out_size_factor, error)
      && p3d_model_json_doubles (coder, "coder", "voxel_size", 2, 1e-3, 100.0,
      config->coder_voxel_size, error)
      && p3d_model_json_doubles (coder, "coder", "pc_range", 2, -1e4, 1e4,
      config->coder_pc_range, error);
}

static gboolean
parse_test_nms (P3dCenterPointConfig * config, JsonObject * root,
    GError ** error)
{
  JsonObject *nms = p3d_model_json_object (root, NULL, "test_nms", error);
  const gchar *type;
  gdouble radius[P3DC_CENTERPOINT_MAX_TASKS];
  guint t;

  if (nms == NULL)
    return FALSE;
  type = p3d_model_json_string (nms, "test_nms", "type", error);
  if (type == NULL)
    return FALSE;
  if (strcmp (type, "rotate") == 0)
    config->nms_type = P3DC_CENTERPOINT_NMS_ROTATE;
  else if (strcmp (type, "circle") == 0)
    config->nms_type = P3DC_CENTERPOINT_NMS_CIRCLE;
  else
    return p3d_model_json_bad_key (error, "test_nms", "type",
        "must be rotate or circle");
  /* min_radius is circle NMS's alone: a rotate config may leave it out. */
  if (config->nms_type == P3DC_CENTERPOINT_NMS_CIRCLE
      || json_object_has_member (nms, "min_radius")) {
    if (!p3d_model_json_doubles (nms, "test_nms", "min_radius", config->n_tasks,
            0.0, 1e6, radius, error))
      return FALSE;
    for (t = 0; t < config->n_tasks; t++)
      config->tasks[t].min_radius = radius[t];
  }
  if (!p3d_model_json_double (nms, "test_nms", "nms_thr", 0.0, 1.0,
          &config->nms_thr, error)
      || !p3d_model_json_uint (nms, "test_nms", "pre_max_size", 1, 1 << 20,
          &config->pre_max_size, error)
      || !p3d_model_json_uint (nms, "test_nms", "post_max_size", 1, 1 << 20,
          &config->post_max_size, error))
    return FALSE;
  /* one NMS for every task, its boxes unscaled */
  for (t = 0; t < config->n_tasks; t++) {
    guint c;

    config->tasks[t].nms_type = config->nms_type;
    config->tasks[t].nms_thr = config->nms_thr;
    for (c = 0; c < config->tasks[t].n_classes; c++)
      config->tasks[t].nms_rescale[c] = 1.0;
  }
  return TRUE;
}

void
p3d_centerpoint_config_clear (P3dCenterPointConfig * config)
{
  guint t;

  g_return_if_fail (config != NULL);
  for (t = 0; t < P3DC_CENTERPOINT_MAX_TASKS; t++)
    g_clear_pointer (&config->tasks[t].class_names, g_strfreev);
}

gboolean
p3d_center_head_parse (P3dCenterPointConfig * config, JsonObject * root,
    GError ** error)
{
  return parse_head (config, root, error) && parse_coder (config, root, error);
}

/* Every key of the config in @root into @config (cleared first). */
static gboolean
parse_config (P3dCenterPointConfig * config, JsonObject * root, GError ** error)
{
  memset (config, 0, sizeof (*config));
  return parse_top (config, root, error)
      && p3d_model_pillar_config_parse (&config->pillar, root, error)
      && p3d_center_head_parse (config, root, error)
      && parse_test_nms (config, root, error);
}

gboolean
p3d_centerpoint_config_parse (P3dCenterPointConfig * config,
    const gchar * json, GError ** error)
{
  JsonParser *parser;
  GError *json_error = NULL;
  gboolean ok;

  g_return_val_if_fail (config != NULL, FALSE);
  g_return_val_if_fail (json != NULL, FALSE);
  memset (config, 0, sizeof (*config));

  parser = json_parser_new ();
  if (!p3d_json_parser_load (parser, json, -1, &json_error)) {
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
  ok = parse_config (config,
      json_node_get_object (json_parser_get_root (parser)), error);
  g_object_unref (parser);
  return ok;
}

void
p3d_centerpoint_fold_batchnorm (gfloat * weight, guint n_outer,
    guint out_channels, guint inner, const gfloat * layer_bias,
    const gfloat * gamma, const gfloat * beta, const gfloat * mean,
    const gfloat * var, gdouble eps, gfloat * bias)
{
  p3d_model_fold_batchnorm (weight, n_outer, out_channels, inner, layer_bias,
      gamma, beta, mean, var, eps, bias);
}

/* ---- the family -------------------------------------------------------- */

static gpointer
family_config_parse (JsonObject * root, GError ** error)
{
  P3dCenterPointConfig *config = g_new0 (P3dCenterPointConfig, 1);

  if (!parse_config (config, root, error)) {
    p3d_centerpoint_config_clear (config);
    g_free (config);
    return NULL;
  }
  return config;
}

static void
family_config_free (gpointer config)
{
  p3d_centerpoint_config_clear (config);
  g_free (config);
}

/* CenterHead: the shared conv, then per task and head a ConvModule and the
 * final conv (with bias), "task<t>.<head>". */
void
p3d_center_head_build (const P3dCenterPointConfig * config,
    P3dModelGraph * graph, const gchar * input)
{
  guint kernel = config->final_kernel, t, h;

  p3d_model_graph_add_conv (graph, P3D_MODEL_OP_CONV, g_strdup ("head.shared"),
      input, config->share_conv_channel, 3, 1, 1,
      g_strdup ("pts_bbox_head.shared_conv.conv.weight"),
      g_strdup ("pts_bbox_head.shared_conv.bn"), config->head_bn_eps);
  for (t = 0; t < config->n_tasks; t++) {
    for (h = 0; h < P3D_CENTERPOINT_N_HEADS; h++) {
      guint channels = h == P3D_CENTERPOINT_HEAD_HEATMAP ?
          config->tasks[t].n_classes : config->head_channels[h];
      gchar *name, *prefix;
      P3dModelLayer *layer;

      if (channels == 0)
        continue;
      name = g_strdup_printf ("task%u.%s", t, head_names[h]);
      prefix = g_strdup_printf ("pts_bbox_head.task_heads.%u.%s", t,
          head_names[h]);
      p3d_model_graph_add_conv (graph, P3D_MODEL_OP_CONV,
          g_strdup_printf ("%s.0", name), "head.shared", config->head_conv,
          kernel, 1, kernel / 2, g_strdup_printf ("%s.0.conv.weight", prefix),
          g_strdup_printf ("%s.0.bn", prefix), config->head_bn_eps);
      layer =
          p3d_model_graph_add_conv (graph, P3D_MODEL_OP_CONV, g_strdup (name),
          NULL, channels, kernel, 1, kernel / 2, g_strdup_printf ("%s.1.weight",
              prefix), NULL, 0);
      layer->bias = g_strdup_printf ("%s.1.bias", prefix);
      p3d_model_graph_add_output (graph, name, name);
      g_free (name);
      g_free (prefix);
    }
  }
}

/* mmdetection3d's names of SECOND's and SECONDFPN's tensors */
static const P3dModelSecondNames second_names = {
  "pts_backbone.blocks", 0, "pts_neck.deblocks",
};

static P3dModelGraph *
family_build_graph (gconstpointer data, const gchar * name, GError ** error)
{
  const P3dCenterPointConfig *config = data;
  P3dModelGraph *graph;

  graph = p3d_model_graph_new (name, "canvas", 1, config->pillar.pfn_channels,
      config->pillar.grid[1], config->pillar.grid[0]);
  if (!p3d_model_pillar_add_second (&config->pillar, &second_names, graph,
          error)) {
    p3d_model_graph_free (graph);
    return NULL;
  }
  p3d_center_head_build (config, graph, "neck");
  return graph;
}

/* The outputs of task @t's heads in the "bev" network, in the order of
 * P3dCenterPointHead; NULL for an absent one.  FALSE with @error when the
 * network lacks a head the config implies or gives one of another size. */
static gboolean
find_heads (const P3dCenterPointConfig * config,
    const P3dModelNetwork * network, guint t,
    const P3dModelOutput * heads[P3D_CENTERPOINT_N_HEADS], GError ** error)
{
  guint h;

  for (h = 0; h < P3D_CENTERPOINT_N_HEADS; h++) {
    guint channels = h == P3D_CENTERPOINT_HEAD_HEATMAP ?
        config->tasks[t].n_classes : config->head_channels[h];
    gchar *name = g_strdup_printf ("task%u.%s", t, head_names[h]);
    const P3dModelOutput *output = p3d_model_network_get_output (network,
        name);
    const P3dcConvBufferDesc *buffer;

    heads[h] = output;
    if (channels == 0 && output == NULL) {
      g_free (name);
      continue;
    }
    if (output == NULL || output->channels != channels) {
      p3d_model_bad_metadata (error, "the \"%s\" graph's output \"%s\" %s; "
          "the config implies %u channels", network->name, name,
          output == NULL ? "is missing" : "has another channel count",
          channels);
      g_free (name);
      return FALSE;
    }
    g_free (name);
    buffer = &network->desc.buffers[output->buffer];
    if (buffer->height != network->desc.buffers[heads[0] ?
            heads[0]->buffer : output->buffer].height
        || buffer->width != network->desc.buffers[heads[0] ?
            heads[0]->buffer : output->buffer].width)
      return p3d_model_bad_metadata (error, "the \"%s\" graph's head maps "
          "differ in size", network->name);
  }
  return TRUE;
}

const P3dcConvBufferDesc *
p3d_center_head_check (const P3dCenterPointConfig * config,
    const P3dModelNetwork * network, GError ** error)
{
  const P3dModelOutput *heads[P3D_CENTERPOINT_N_HEADS];
  guint t;

  for (t = 0; t < config->n_tasks; t++)
    if (!find_heads (config, network, t, heads, error))
      return NULL;
  return &network->desc.buffers[heads[P3D_CENTERPOINT_HEAD_HEATMAP]->buffer];
}

/* The pillar feature net, and the head maps' size against the coder. */
static gboolean
family_finish (P3dModel * model, P3dModelBuilder * builder, GError ** error)
{
  const P3dCenterPointConfig *config = model->config;
  const P3dModelNetwork *network = p3d_model_get_network (model, "bev");
  const P3dcConvBufferDesc *map;

  if (!p3d_model_pillar_finish (model, builder, &config->pillar,
          "pts_voxel_encoder.pfn_layers.0", error))
    return FALSE;
  map = p3d_center_head_check (config, network, error);
  if (map == NULL)
    return FALSE;
  if ((guint64) map->height * config->out_size_factor != config->pillar.grid[1]
      || (guint64) map->width * config->out_size_factor !=
      config->pillar.grid[0])
    return p3d_model_bad_metadata (error,
        "coder.out_size_factor %u disagrees with the "
        "net, which maps the %u x %u grid to %u x %u", config->out_size_factor,
        config->pillar.grid[0], config->pillar.grid[1], map->width,
        map->height);
  if ((guint64) map->height * map->width < config->max_num)
    return p3d_model_bad_metadata (error,
        "coder.max_num %u exceeds the %u cells of a " "head map",
        config->max_num, map->height * map->width);
  return TRUE;
}

/* ---- the decode -------------------------------------------------------- */

typedef struct
{
  P3dcCenterPointParams params;
  guint n_tasks;
  gboolean velocity;            /* every task has its vel head */
  /* Scale-NMS's factor of every label, params.nms_scale's storage */
  gfloat nms_scale[P3DC_CENTERPOINT_MAX_TASKS * P3D_CENTERPOINT_MAX_CLASSES];
} DecodeParams;

/* The decode's parameters from the config and the head maps' size; with a
 * per-task NMS (Scale-NMS), the labels' scale factors in @nms_scale (the
 * labels' count of entries), which params->nms_scale then points at. */
static void
decode_params (const P3dCenterPointConfig * config, guint height, guint width,
    gboolean model_nms, P3dcCenterPointParams * params, gfloat * nms_scale)
{
  guint t, i, c;

  memset (params, 0, sizeof (*params));
  params->n_tasks = config->n_tasks;
  for (t = 0; t < config->n_tasks; t++) {
    params->tasks[t].num_classes = config->tasks[t].n_classes;
    params->tasks[t].min_radius = config->tasks[t].min_radius;
    params->tasks[t].nms = config->tasks[t].nms_type;
    params->tasks[t].nms_threshold = (float) config->tasks[t].nms_thr;
  }
  params->height = height;
  params->width = width;
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
  params->nms = !model_nms ? P3DC_CENTERPOINT_NMS_NONE :
      config->per_task_nms ? P3DC_CENTERPOINT_NMS_PER_TASK : config->nms_type;
  params->nms_threshold = (float) config->nms_thr;
  if (model_nms && config->per_task_nms && nms_scale != NULL) {
    for (t = 0; t < config->n_tasks; t++)
      for (c = 0; c < config->tasks[t].n_classes; c++)
        nms_scale[config->tasks[t].label_offset + c] =
            (gfloat) config->tasks[t].nms_rescale[c];
    params->nms_scale = nms_scale;
  }
  /* pre_max_size and post_max_size belong to the NMS: without it every
   * decoded box stays, up to max_num per task */
  params->pre_max_size = model_nms ? config->pre_max_size : 0;
  params->post_max_size = model_nms ? config->post_max_size : 0;
}

/* The views' order: per task, the heads in P3dCenterPointHead's order. */
static gpointer
decode_params_new (const P3dModel * model, const P3dModelNetwork * network,
    gboolean model_nms, GPtrArray * outputs, GError ** error)
{
  /* a family that shares this decode starts its config with the head's */
  const P3dCenterPointConfig *config = model->config;
  DecodeParams *params = g_new0 (DecodeParams, 1);
  const P3dModelOutput *heads[P3D_CENTERPOINT_N_HEADS];
  const P3dcConvBufferDesc *map = NULL;
  guint t, h;

  for (t = 0; t < config->n_tasks; t++) {
    if (!find_heads (config, network, t, heads, error)) {
      g_free (params);
      return NULL;
    }
    for (h = 0; h < P3D_CENTERPOINT_N_HEADS; h++)
      g_ptr_array_add (outputs, (gpointer) heads[h]);
    map = &network->desc.buffers[heads[P3D_CENTERPOINT_HEAD_HEATMAP]->buffer];
  }
  decode_params (config, map->height, map->width, model_nms, &params->params,
      params->nms_scale);
  params->n_tasks = config->n_tasks;
  params->velocity = config->head_channels[P3D_CENTERPOINT_HEAD_VEL] != 0;
  return params;
}

static gboolean
decode_velocity (gconstpointer data)
{
  const DecodeParams *params = data;

  return params->velocity;
}

static guint
decode_capacity (gconstpointer data)
{
  const DecodeParams *params = data;

  return p3dc_centerpoint_output_capacity (&params->params);
}

static P3dcResult
decode_workspace_new (gconstpointer data, gpointer * workspace)
{
  const DecodeParams *params = data;

  return p3dc_centerpoint_decoder_new (&params->params,
      (P3dcCenterPointDecoder **) workspace);
}

static void
decode_workspace_free (gpointer workspace)
{
  p3dc_centerpoint_decoder_free (workspace);
}

static void
task_maps (guint n_tasks, const P3dcMapView * views,
    P3dcCenterPointTaskMaps maps[P3DC_CENTERPOINT_MAX_TASKS])
{
  guint t;

  memset (maps, 0,
      sizeof (P3dcCenterPointTaskMaps) * P3DC_CENTERPOINT_MAX_TASKS);
  for (t = 0; t < n_tasks; t++) {
    const P3dcMapView *v = views + t * P3D_CENTERPOINT_N_HEADS;

    maps[t].heatmap = v[P3D_CENTERPOINT_HEAD_HEATMAP];
    maps[t].reg = v[P3D_CENTERPOINT_HEAD_REG];
    maps[t].height = v[P3D_CENTERPOINT_HEAD_HEIGHT];
    maps[t].dim = v[P3D_CENTERPOINT_HEAD_DIM];
    maps[t].rot = v[P3D_CENTERPOINT_HEAD_ROT];
    maps[t].vel = v[P3D_CENTERPOINT_HEAD_VEL];
  }
}

static P3dcResult
decode_run_cpu (gconstpointer data, const P3dcMapView * views,
    const P3dModelBoxes * boxes)
{
  const DecodeParams *params = data;
  P3dcCenterPointTaskMaps maps[P3DC_CENTERPOINT_MAX_TASKS];
  P3dcCenterPointOutput output;

  task_maps (params->n_tasks, views, maps);
  output.boxes = boxes->boxes;
  output.count = boxes->count;
  output.velocity = boxes->velocity;
  return p3dc_centerpoint_decode_cpu (&params->params, maps, &output);
}

static P3dcResult
decode_run_cuda (gconstpointer data, gpointer workspace,
    const P3dcMapView * views, const P3dModelBoxes * boxes,
    P3dcCudaStream stream)
{
  const DecodeParams *params = data;
  P3dcCenterPointTaskMaps maps[P3DC_CENTERPOINT_MAX_TASKS];
  P3dcCenterPointOutput output;

  task_maps (params->n_tasks, views, maps);
  output.boxes = boxes->boxes;
  output.count = boxes->count;
  output.velocity = boxes->velocity;
  return p3dc_centerpoint_decode_cuda (workspace, maps, &output, stream);
}

const P3dModelDecodeClass p3d_center_head_decode = {
  decode_params_new,
  g_free,
  decode_capacity,
  decode_velocity,
  decode_workspace_new,
  decode_workspace_free,
  decode_run_cpu,
  decode_run_cuda,
};

static const gchar *const family_prefixes[] = {
  "pts_voxel_encoder.", "pts_backbone.", "pts_neck.", "pts_bbox_head.", NULL,
};

static const gchar *const family_networks[] = { "bev", NULL };

const P3dModelFamily p3d_model_family_centerpoint_pillar = {
  P3D_CENTERPOINT_ARCHITECTURE,
  P3D_CENTERPOINT_VERSION,
  "tools/convert_mmdet3d_centerpoint.py",
  family_prefixes,
  family_networks,
  family_config_parse,
  family_config_free,
  family_build_graph,
  family_finish,
  &p3d_center_head_decode,
};

/* ---- the typed view ---------------------------------------------------- */

P3dCenterPointModel *
p3d_centerpoint_model_new (const P3dWeights * weights, GError ** error)
{
  P3dCenterPointModel *model;
  P3dModel *generic;
  const P3dModelNetwork *network;
  const P3dModelOutput *heads[P3D_CENTERPOINT_N_HEADS], *neck;
  guint t, h;

  g_return_val_if_fail (weights != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  generic = p3d_model_new (weights, error);
  if (generic == NULL)
    return NULL;
  if (generic->family != &p3d_model_family_centerpoint_pillar) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_METADATA,
        "%s holds a %s model, not a " P3D_CENTERPOINT_ARCHITECTURE " one",
        p3d_weights_get_name (weights), generic->architecture);
    p3d_model_free (generic);
    return NULL;
  }
  model = g_new0 (P3dCenterPointModel, 1);
  model->model = generic;
  model->config = *(const P3dCenterPointConfig *) generic->config;
  model->pfn_in_channels = generic->pillars->in_channels;
  model->pfn_out_channels = generic->pillars->out_channels;
  /* the model's own arrays, which it made writable */
  model->pfn_weight = (gfloat *) generic->pillars->weight;
  model->pfn_bias = (gfloat *) generic->pillars->bias;
  network = p3d_model_get_network (generic, "bev");
  model->net = network->desc;
  neck = p3d_model_network_get_output (network, "neck");
  model->neck_output = neck != NULL ? neck->buffer : 0;
  for (t = 0; t < model->config.n_tasks; t++) {
    /* the family checked them when the model was built */
    find_heads (&model->config, network, t, heads, NULL);
    for (h = 0; h < P3D_CENTERPOINT_N_HEADS; h++) {
      if (heads[h] == NULL)
        continue;
      model->heads[t][h].buffer = heads[h]->buffer;
      model->heads[t][h].channel_offset = heads[h]->channel_offset;
      model->heads[t][h].channels = heads[h]->channels;
    }
  }
  h = model->heads[0][P3D_CENTERPOINT_HEAD_HEATMAP].buffer;
  model->head_height = model->net.buffers[h].height;
  model->head_width = model->net.buffers[h].width;
  return model;
}

void
p3d_centerpoint_model_free (P3dCenterPointModel * model)
{
  if (model == NULL)
    return;
  /* the config's strings belong to the generic model */
  p3d_model_free (model->model);
  g_free (model);
}

void
p3d_centerpoint_model_decode_params (const P3dCenterPointModel * model,
    gboolean model_nms, P3dcCenterPointParams * params)
{
  decode_params (&model->config, model->head_height, model->head_width,
      model_nms, params, NULL);
}
