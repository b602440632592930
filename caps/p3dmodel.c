/* A model from its weights file (p3dmodel.h): the family its metadata
 * names, the networks from its graph or its config, the decode. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "p3dmodel-private.h"
#include "p3djson.h"

/* Every family this library reads; a new one adds its line. */
static const P3dModelFamily *const families[] = {
  &p3d_model_family_centerpoint_pillar,
  &p3d_model_family_bevdet,
  &p3d_model_family_pointpillars,
};

static const P3dModelFamily *
find_family (const gchar * architecture)
{
  guint i;

  for (i = 0; i < G_N_ELEMENTS (families); i++)
    if (strcmp (families[i]->architecture, architecture) == 0)
      return families[i];
  return NULL;
}

/* "a", "a, b": the families' names, or their converters, for messages. */
static gchar *
list_families (gboolean converters)
{
  GString *list = g_string_new (NULL);
  guint i;

  for (i = 0; i < G_N_ELEMENTS (families); i++) {
    if (i > 0)
      g_string_append (list, i + 1 < G_N_ELEMENTS (families) ? ", " : " or ");
    g_string_append (list, converters ? families[i]->converter :
        families[i]->architecture);
  }
  return g_string_free (list, FALSE);
}

static gboolean
is_network (const P3dModelFamily * family, const gchar * name)
{
  guint i;

  for (i = 0; family->networks[i] != NULL; i++)
    if (strcmp (family->networks[i], name) == 0)
      return TRUE;
  return FALSE;
}

/* The networks of @model: each from the metadata's "graph" when it gives
 * it, else from the family's config. */
static gboolean
build_networks (P3dModel * model, JsonObject * root,
    P3dModelBuilder * builder, GError ** error)
{
  const P3dModelFamily *family = model->family;
  JsonObject *graphs = NULL;
  GList *members, *m;
  guint n = 0, i;
  gboolean ok = TRUE;

  if (json_object_has_member (root, "graph")) {
    graphs = p3d_model_json_object (root, NULL, "graph", error);
    if (graphs == NULL)
      return FALSE;
    members = json_object_get_members (graphs);
    for (m = members; m != NULL && ok; m = m->next) {
      if (!is_network (family, m->data)) {
        gchar *what = g_strdup_printf ("is no network of a %s model",
            family->architecture);

        ok = p3d_model_json_bad_key (error, "graph", m->data, what);
        g_free (what);
      }
    }
    g_list_free (members);
    if (!ok)
      return FALSE;
  }
  while (family->networks[n] != NULL)
    n++;
  model->networks = g_new0 (P3dModelNetwork, n);
  for (i = 0; i < n && ok; i++) {
    const gchar *name = family->networks[i];
    P3dModelGraph *graph;

    if (graphs != NULL && json_object_has_member (graphs, name)) {
      graph = p3d_model_graph_from_node (name,
          json_object_get_member (graphs, name), error);
    } else if (family->build_graph != NULL) {
      graph = family->build_graph (model->config, name, error);
    } else {
      gchar *what = g_strdup_printf ("is missing: a %s model carries its "
          "networks", family->architecture);

      p3d_model_json_bad_key (error, "graph", name, what);
      g_free (what);
      graph = NULL;
    }
    ok = graph != NULL
        && p3d_model_network_build (&model->networks[i], graph, builder, error);
    if (ok)
      model->n_networks++;
    p3d_model_graph_free (graph);
  }
  return ok;
}

/* A tensor of the family's modules that no layer read means the config
 * describes another model (fewer layers, no vel head): refuse it rather
 * than run a network that is not the checkpoint's. */
static gboolean
check_all_used (const P3dModel * model, P3dModelBuilder * b, GError ** error)
{
  const gchar *const *prefixes = model->family->config_prefixes != NULL ?
      model->family->config_prefixes (model->config) : model->family->prefixes;
  guint i, p;

  for (i = 0; i < p3d_weights_get_n_tensors (b->weights); i++) {
    const gchar *name = p3d_weights_get_tensor (b->weights, i)->name;

    if (g_hash_table_contains (b->used, name)
        || g_str_has_suffix (name, "num_batches_tracked"))
      continue;
    for (p = 0; prefixes[p] != NULL; p++) {
      if (g_str_has_prefix (name, prefixes[p])) {
        g_set_error (error, P3D_WEIGHTS_ERROR,
            P3D_WEIGHTS_ERROR_BAD_METADATA,
            "%s: tensor '%s' belongs to no layer of the model that \""
            P3D_MODEL_METADATA_KEY "\" describes: the metadata does "
            "not match the weights", p3d_weights_get_name (b->weights), name);
        return FALSE;
      }
    }
  }
  return TRUE;
}

static gboolean
parse_root (P3dModel * model, JsonObject * root, GError ** error)
{
  const gchar *architecture;
  guint version;
  gchar *what, *names;

  architecture = p3d_model_json_string (root, NULL, "architecture", error);
  if (architecture == NULL)
    return FALSE;
  model->family = find_family (architecture);
  if (model->family == NULL) {
    names = list_families (FALSE);
    what = g_strdup_printf ("is \"%s\", which no model family here reads (%s)",
        architecture, names);
    p3d_model_json_bad_key (error, NULL, "architecture", what);
    g_free (what);
    g_free (names);
    return FALSE;
  }
  model->architecture = model->family->architecture;
  if (!p3d_model_json_uint (root, NULL, "version", model->family->version,
          model->family->version, &version, error))
    return FALSE;
  model->config = model->family->config_parse (root, error);
  return model->config != NULL;
}

P3dModel *
p3d_model_new (const P3dWeights * weights, GError ** error)
{
  P3dModel *model;
  P3dModelBuilder builder;
  JsonParser *parser;
  JsonObject *root;
  GError *json_error = NULL;
  const gchar *json;
  gboolean ok;

  g_return_val_if_fail (weights != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  json = p3d_weights_get_metadata (weights, P3D_MODEL_METADATA_KEY);
  if (json == NULL) {
    gchar *converters = list_families (TRUE);

    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_MISSING_METADATA,
        "%s has no \"" P3D_MODEL_METADATA_KEY "\" metadata, so its model is "
        "unknown: convert the checkpoint with %s",
        p3d_weights_get_name (weights), converters);
    g_free (converters);
    return NULL;
  }
  parser = json_parser_new ();
  if (!p3d_json_parser_load (parser, json, -1, &json_error)) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_METADATA,
        "%s: " P3D_MODEL_METADATA_KEY " is not valid JSON: %s",
        p3d_weights_get_name (weights), json_error->message);
    g_error_free (json_error);
    g_object_unref (parser);
    return NULL;
  }
  if (!JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser))) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_METADATA,
        "%s: " P3D_MODEL_METADATA_KEY " is not a JSON object",
        p3d_weights_get_name (weights));
    g_object_unref (parser);
    return NULL;
  }
  root = json_node_get_object (json_parser_get_root (parser));

  model = g_new0 (P3dModel, 1);
  model->arrays = g_ptr_array_new_with_free_func (g_free);
  builder.weights = weights;
  builder.arrays = model->arrays;
  builder.used = g_hash_table_new (g_str_hash, g_str_equal);
  ok = parse_root (model, root, error)
      && build_networks (model, root, &builder, error)
      && (model->family->finish == NULL
      || model->family->finish (model, &builder, error));
  /* the metadata's faults name the file; the reader's already do */
  if (!ok && error != NULL && *error != NULL
      && (*error)->code == P3D_WEIGHTS_ERROR_BAD_METADATA
      && !g_str_has_prefix ((*error)->message, p3d_weights_get_name (weights)))
    g_prefix_error (error, "%s: ", p3d_weights_get_name (weights));
  ok = ok && check_all_used (model, &builder, error);
  g_hash_table_unref (builder.used);
  g_object_unref (parser);
  if (!ok) {
    p3d_model_free (model);
    return NULL;
  }
  return model;
}

gchar **
p3d_model_read_class_names (const P3dWeights * weights, GError ** error)
{
  const gchar *json = p3d_weights_get_metadata (weights,
      P3D_MODEL_METADATA_KEY);
  JsonParser *parser;
  JsonNode *head = NULL, *tasks = NULL;
  GPtrArray *names;
  GError *json_error = NULL;
  guint t, c;

  g_return_val_if_fail (weights != NULL, NULL);
  if (json == NULL) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_MISSING_METADATA,
        "%s has no \"" P3D_MODEL_METADATA_KEY "\" metadata, so no class "
        "names", p3d_weights_get_name (weights));
    return NULL;
  }
  parser = json_parser_new ();
  if (!p3d_json_parser_load (parser, json, -1, &json_error)) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_METADATA,
        "%s: " P3D_MODEL_METADATA_KEY " is not valid JSON: %s",
        p3d_weights_get_name (weights), json_error->message);
    g_error_free (json_error);
    g_object_unref (parser);
    return NULL;
  }
  if (JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)))
    head = json_object_get_member (json_node_get_object
        (json_parser_get_root (parser)), "head");
  if (head != NULL && JSON_NODE_HOLDS_OBJECT (head))
    tasks = json_object_get_member (json_node_get_object (head), "tasks");
  names = g_ptr_array_new_with_free_func (g_free);
  for (t = 0; tasks != NULL && JSON_NODE_HOLDS_ARRAY (tasks)
      && t < json_array_get_length (json_node_get_array (tasks)); t++) {
    JsonNode *task = json_array_get_element (json_node_get_array (tasks), t);
    JsonNode *list = JSON_NODE_HOLDS_OBJECT (task) ?
        json_object_get_member (json_node_get_object (task), "class_names") :
        NULL;

    for (c = 0; list != NULL && JSON_NODE_HOLDS_ARRAY (list)
        && c < json_array_get_length (json_node_get_array (list)); c++) {
      JsonNode *name = json_array_get_element (json_node_get_array (list), c);

      g_ptr_array_add (names, JSON_NODE_HOLDS_VALUE (name)
          && json_node_get_value_type (name) == G_TYPE_STRING ?
          g_strdup (json_node_get_string (name)) :
          g_strdup_printf ("label %u", names->len));
    }
  }
  g_object_unref (parser);
  if (names->len == 0) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_METADATA,
        "%s: " P3D_MODEL_METADATA_KEY " names no classes (no "
        "head.tasks[].class_names)", p3d_weights_get_name (weights));
    g_ptr_array_unref (names);
    return NULL;
  }
  g_ptr_array_set_free_func (names, NULL);
  g_ptr_array_add (names, NULL);
  return (gchar **) g_ptr_array_free (names, FALSE);
}

void
p3d_model_free (P3dModel * model)
{
  guint i;

  if (model == NULL)
    return;
  for (i = 0; i < model->n_networks; i++)
    p3d_model_network_clear (&model->networks[i]);
  g_free (model->networks);
  if (model->config != NULL)
    model->family->config_free (model->config);
  g_ptr_array_unref (model->arrays);
  g_free (model);
}

const P3dModelNetwork *
p3d_model_get_network (const P3dModel * model, const gchar * name)
{
  guint i;

  g_return_val_if_fail (model != NULL && name != NULL, NULL);
  for (i = 0; i < model->n_networks; i++)
    if (strcmp (model->networks[i].name, name) == 0)
      return &model->networks[i];
  return NULL;
}

const P3dModelOutput *
p3d_model_network_get_output (const P3dModelNetwork * network,
    const gchar * name)
{
  guint i;

  g_return_val_if_fail (network != NULL && name != NULL, NULL);
  for (i = 0; i < network->n_outputs; i++)
    if (strcmp (network->outputs[i].name, name) == 0)
      return &network->outputs[i];
  return NULL;
}

gboolean
p3d_model_cameras_image_transform (const P3dModelCameras * cameras,
    guint width, guint height, P3dModelImageTransform * transform)
{
  gdouble scale, scaled_width, scaled_height, crop_y;
  P3dModelImageTransform t;

  g_return_val_if_fail (cameras != NULL && transform != NULL, FALSE);
  if (width == 0 || height == 0)
    return FALSE;
  /* as BEVDet's sample_augmentation: Python floats, int() truncating */
  scale = (gdouble) cameras->input_width / (gdouble) width +
      cameras->resize_test;
  scaled_width = width * scale;
  scaled_height = height * scale;
  if (!(scaled_width >= 1) || !(scaled_height >= 1)
      || scaled_width > 1e6 || scaled_height > 1e6)
    return FALSE;
  t.scale = scale;
  t.scaled_width = (guint) scaled_width;
  t.scaled_height = (guint) scaled_height;
  crop_y = (1 - cameras->crop_h) * t.scaled_height;
  t.crop_y = (gint) crop_y - (gint) cameras->input_height;
  t.crop_x = (gint) (MAX (0, (gint) t.scaled_width -
          (gint) cameras->input_width) / 2.0);
  if (t.crop_y < 0 || t.crop_x < 0
      || t.crop_x + cameras->input_width > t.scaled_width
      || t.crop_y + cameras->input_height > t.scaled_height)
    return FALSE;
  *transform = t;
  return TRUE;
}

/* ---- the decode ------------------------------------------------------ */

struct _P3dModelDecoder
{
  const P3dModelDecodeClass *klass;
  gpointer params;
  const P3dModelNetwork *network;
  GPtrArray *outputs;           /* const P3dModelOutput *, NULL: absent */
  P3dcMapView *views;           /* one per output, for a run */
};

struct _P3dModelDecodeWorkspace
{
  const P3dModelDecodeClass *klass;
  gpointer workspace;
};

P3dModelDecoder *
p3d_model_decoder_new (const P3dModel * model, const gchar * network,
    gboolean model_nms, GError ** error)
{
  P3dModelDecoder *decoder;
  const P3dModelNetwork *net;

  g_return_val_if_fail (model != NULL && network != NULL, NULL);
  net = p3d_model_get_network (model, network);
  if (net == NULL || model->family->decode == NULL) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_METADATA,
        "a %s model decodes no boxes from a \"%s\" network",
        model->architecture, network);
    return NULL;
  }
  decoder = g_new0 (P3dModelDecoder, 1);
  decoder->klass = model->family->decode;
  decoder->network = net;
  decoder->outputs = g_ptr_array_new ();
  decoder->params = decoder->klass->params_new (model, net, model_nms,
      decoder->outputs, error);
  if (decoder->params == NULL) {
    p3d_model_decoder_free (decoder);
    return NULL;
  }
  decoder->views = g_new0 (P3dcMapView, MAX (decoder->outputs->len, 1));
  return decoder;
}

void
p3d_model_decoder_free (P3dModelDecoder * decoder)
{
  if (decoder == NULL)
    return;
  if (decoder->params != NULL)
    decoder->klass->params_free (decoder->params);
  g_ptr_array_unref (decoder->outputs);
  g_free (decoder->views);
  g_free (decoder);
}

guint
p3d_model_decoder_get_capacity (const P3dModelDecoder * decoder)
{
  return decoder->klass->capacity (decoder->params);
}

gboolean
p3d_model_decoder_has_velocity (const P3dModelDecoder * decoder)
{
  return decoder->klass->velocity (decoder->params);
}

P3dcResult
p3d_model_decoder_run_cpu (const P3dModelDecoder * decoder,
    float *const *buffers, const P3dModelBoxes * boxes)
{
  guint i;

  for (i = 0; i < decoder->outputs->len; i++) {
    const P3dModelOutput *output = decoder->outputs->pdata[i];

    memset (&decoder->views[i], 0, sizeof decoder->views[i]);
    if (output == NULL)
      continue;
    p3dc_convnet_cpu_view (&decoder->network->desc, output->buffer,
        buffers[output->buffer], &decoder->views[i]);
    p3dc_map_view_offset_channels (&decoder->views[i], output->channel_offset);
  }
  return decoder->klass->run_cpu (decoder->params, decoder->views, boxes);
}

P3dcResult
p3d_model_decoder_workspace_new (const P3dModelDecoder * decoder,
    P3dModelDecodeWorkspace ** workspace)
{
  P3dModelDecodeWorkspace *w = g_new0 (P3dModelDecodeWorkspace, 1);
  P3dcResult result;

  w->klass = decoder->klass;
  result = decoder->klass->workspace_new (decoder->params, &w->workspace);
  if (result != P3DC_OK) {
    g_free (w);
    w = NULL;
  }
  *workspace = w;
  return result;
}

void
p3d_model_decode_workspace_free (P3dModelDecodeWorkspace * workspace)
{
  if (workspace == NULL)
    return;
  workspace->klass->workspace_free (workspace->workspace);
  g_free (workspace);
}

P3dcResult
p3d_model_decoder_run_cuda (const P3dModelDecoder * decoder,
    P3dModelDecodeWorkspace * workspace, const P3dcConvNet * net,
    const P3dModelBoxes * boxes, P3dcCudaStream stream)
{
  P3dcResult result;
  guint i;

  for (i = 0; i < decoder->outputs->len; i++) {
    const P3dModelOutput *output = decoder->outputs->pdata[i];

    memset (&decoder->views[i], 0, sizeof decoder->views[i]);
    if (output == NULL)
      continue;
    result = p3dc_convnet_cuda_view (net, output->buffer, &decoder->views[i]);
    if (result != P3DC_OK)
      return result;
    p3dc_map_view_offset_channels (&decoder->views[i], output->channel_offset);
  }
  return decoder->klass->run_cuda (decoder->params, workspace->workspace,
      decoder->views, boxes, stream);
}
