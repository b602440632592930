/* The layer description of every model family (p3dmodelgraph.h): the
 * graph in C, read from and written to `p3d.model`'s JSON. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "p3dmodel-private.h"
#include "p3djson.h"

/* Bounds of the values a layer may give (the compute library's). */
#define MAX_CHANNELS 65536
#define MAX_SIZE 16384
#define MAX_INPUTS 64

static const gchar *const op_names[P3D_MODEL_N_OPS] = {
  "conv", "deconv", "add", "max_pool", "upsample", "concat", "slice",
  "softmax", "relu",
};

const gchar *
p3d_model_op_to_string (P3dModelOp op)
{
  g_return_val_if_fail ((guint) op < P3D_MODEL_N_OPS, NULL);
  return op_names[op];
}

static void
layer_free (gpointer data)
{
  P3dModelLayer *layer = data;

  g_free (layer->name);
  g_strfreev (layer->inputs);
  g_free (layer->weight);
  g_free (layer->bias);
  g_free (layer->norm);
  g_free (layer->size_of);
  g_free (layer);
}

static void
output_free (gpointer data)
{
  P3dModelGraphOutput *output = data;

  g_free (output->name);
  g_free (output->tensor);
  g_free (output);
}

P3dModelGraph *
p3d_model_graph_new (const gchar * name, const gchar * input, guint batch,
    guint channels, guint height, guint width)
{
  P3dModelGraph *graph = g_new0 (P3dModelGraph, 1);

  graph->name = g_strdup (name);
  graph->input = g_strdup (input);
  graph->batch = batch;
  graph->channels = channels;
  graph->height = height;
  graph->width = width;
  graph->layers = g_ptr_array_new_with_free_func (layer_free);
  graph->outputs = g_ptr_array_new_with_free_func (output_free);
  return graph;
}

void
p3d_model_graph_free (P3dModelGraph * graph)
{
  if (graph == NULL)
    return;
  g_free (graph->name);
  g_free (graph->input);
  g_ptr_array_unref (graph->layers);
  g_ptr_array_unref (graph->outputs);
  g_free (graph);
}

void
p3d_model_layer_add_input (P3dModelLayer * layer, const gchar * input)
{
  guint n = layer->inputs ? g_strv_length (layer->inputs) : 0;

  layer->inputs = g_renew (gchar *, layer->inputs, n + 2);
  layer->inputs[n] = g_strdup (input);
  layer->inputs[n + 1] = NULL;
}

P3dModelLayer *
p3d_model_graph_add_layer (P3dModelGraph * graph, P3dModelOp op,
    const gchar * name, const gchar * input)
{
  P3dModelLayer *layer = g_new0 (P3dModelLayer, 1);
  guint a;

  layer->op = op;
  layer->name = g_strdup (name);
  if (input == NULL)
    input = graph->layers->len > 0 ? ((P3dModelLayer *)
        graph->layers->pdata[graph->layers->len - 1])->name : graph->input;
  if (op != P3D_MODEL_OP_CONCAT || input != NULL)
    p3d_model_layer_add_input (layer, input);
  for (a = 0; a < 2; a++) {
    layer->stride[a] = 1;
    layer->dilation[a] = 1;
  }
  layer->groups = 1;
  layer->norm_eps = 1e-5;
  g_ptr_array_add (graph->layers, layer);
  return layer;
}

void
p3d_model_layer_set_square (P3dModelLayer * layer, guint kernel,
    guint stride, guint padding)
{
  layer->kernel[0] = layer->kernel[1] = kernel;
  layer->stride[0] = layer->stride[1] = stride;
  layer->padding[0] = layer->padding[1] = padding;
}

void
p3d_model_graph_add_output (P3dModelGraph * graph, const gchar * name,
    const gchar * tensor)
{
  P3dModelGraphOutput *output = g_new0 (P3dModelGraphOutput, 1);

  output->name = g_strdup (name);
  output->tensor = g_strdup (tensor);
  g_ptr_array_add (graph->outputs, output);
}

/* ---- reading ------------------------------------------------------ */

/* The keys each op reads, besides "name", "op" and "input"/"inputs". */
static const gchar *const op_keys[P3D_MODEL_N_OPS][14] = {
  {"out_channels", "kernel", "stride", "padding", "dilation", "groups",
      "weight", "bias", "norm", "norm_eps", "relu", NULL},
  {"out_channels", "kernel", "stride", "weight", "bias", "norm", "norm_eps",
      "relu", NULL},
  {"relu", NULL},
  {"kernel", "stride", "padding", "dilation", "relu", NULL},
  {"mode", "align_corners", "scale", "size", "size_of", "relu", NULL},
  {NULL},
  {"begin", "end", "relu", NULL},
  {NULL},
  {NULL},
};

/* One number or [y, x], each in @min..@max; @fallback (both axes) when
 * absent and @fallback is not 0 or @optional. */
static gboolean
get_pair (JsonObject * object, const gchar * section, const gchar * key,
    guint min, guint max, gboolean optional, guint fallback, guint * pair,
    GError ** error)
{
  JsonNode *node = json_object_get_member (object, key);
  gchar *what;

  if (node == NULL && optional) {
    pair[0] = pair[1] = fallback;
    return TRUE;
  }
  if (node != NULL) {
    if (p3d_model_json_node_uint (node, min, max, &pair[0])) {
      pair[1] = pair[0];
      return TRUE;
    }
    if (JSON_NODE_HOLDS_ARRAY (node)) {
      JsonArray *array = json_node_get_array (node);

      if (json_array_get_length (array) == 2
          && p3d_model_json_node_uint (json_array_get_element (array, 0), min,
              max, &pair[0])
          && p3d_model_json_node_uint (json_array_get_element (array, 1), min,
              max, &pair[1]))
        return TRUE;
    }
  }
  what = g_strdup_printf (node == NULL ? "is missing; it must be an integer "
      "in %u..%u or [y, x] of them" : "must be an integer in %u..%u or "
      "[y, x] of them", min, max);
  p3d_model_json_bad_key (error, section, key, what);
  g_free (what);
  return FALSE;
}

/* An optional string member; FALSE when present but not a string. */
static gboolean
get_optional_string (JsonObject * object, const gchar * section,
    const gchar * key, gchar ** value, GError ** error)
{
  const gchar *text;

  if (!json_object_has_member (object, key))
    return TRUE;
  text = p3d_model_json_string (object, section, key, error);
  if (text == NULL)
    return FALSE;
  if (text[0] == '\0')
    return p3d_model_json_bad_key (error, section, key, "is empty");
  *value = g_strdup (text);
  return TRUE;
}

static gboolean
get_required_string (JsonObject * object, const gchar * section,
    const gchar * key, gchar ** value, GError ** error)
{
  if (!json_object_has_member (object, key))
    return p3d_model_json_bad_key (error, section, key, "is missing");
  return get_optional_string (object, section, key, value, error);
}

static gboolean
parse_inputs (P3dModelLayer * layer, JsonObject * object,
    const gchar * section, const gchar * previous, GError ** error)
{
  gboolean many = layer->op == P3D_MODEL_OP_ADD
      || layer->op == P3D_MODEL_OP_CONCAT;
  guint n, i;
  JsonArray *array;

  if (!many) {
    gchar *input = NULL;

    if (json_object_has_member (object, "inputs"))
      return p3d_model_json_bad_key (error, section, "inputs", "is for add "
          "and concat; this op takes one \"input\"");
    if (!get_optional_string (object, section, "input", &input, error))
      return FALSE;
    p3d_model_layer_add_input (layer, input ? input : previous);
    g_free (input);
    return TRUE;
  }
  if (json_object_has_member (object, "input"))
    return p3d_model_json_bad_key (error, section, "input", "is for one "
        "input; this op takes \"inputs\"");
  if (layer->op == P3D_MODEL_OP_ADD)
    array = p3d_model_json_array (object, section, "inputs", 2, 2, &n, error);
  else
    array = p3d_model_json_array (object, section, "inputs", 1, MAX_INPUTS,
        &n, error);
  if (array == NULL)
    return FALSE;
  for (i = 0; i < n; i++) {
    JsonNode *node = json_array_get_element (array, i);

    if (!JSON_NODE_HOLDS_VALUE (node)
        || json_node_get_value_type (node) != G_TYPE_STRING)
      return p3d_model_json_bad_key (error, section, "inputs",
          "must hold tensor names (strings)");
    p3d_model_layer_add_input (layer, json_node_get_string (node));
  }
  return TRUE;
}

static gboolean
parse_conv (P3dModelLayer * layer, JsonObject * object, const gchar * section,
    GError ** error)
{
  gboolean deconv = layer->op == P3D_MODEL_OP_DECONV;

  if (!p3d_model_json_uint (object, section, "out_channels", 1, MAX_CHANNELS,
          &layer->out_channels, error)
      || !get_pair (object, section, "kernel", 1, P3DC_CONVNET_MAX_KERNEL,
          FALSE, 0, layer->kernel, error)
      || !get_required_string (object, section, "weight", &layer->weight, error)
      || !get_optional_string (object, section, "bias", &layer->bias, error)
      || !get_optional_string (object, section, "norm", &layer->norm, error))
    return FALSE;
  if (json_object_has_member (object, "norm_eps")) {
    if (layer->norm == NULL)
      return p3d_model_json_bad_key (error, section, "norm_eps",
          "is given without a \"norm\"");
    if (!p3d_model_json_double (object, section, "norm_eps", 1e-12, 1.0,
            &layer->norm_eps, error))
      return FALSE;
  }
  if (deconv) {
    if (!get_pair (object, section, "stride", 1, P3DC_CONVNET_MAX_KERNEL,
            TRUE, 0, layer->stride, error))
      return FALSE;
    if (layer->stride[0] == 0) {
      layer->stride[0] = layer->kernel[0];
      layer->stride[1] = layer->kernel[1];
    }
    if (layer->stride[0] != layer->kernel[0]
        || layer->stride[1] != layer->kernel[1])
      return p3d_model_json_bad_key (error, section, "stride", "must equal "
          "the kernel: a deconv runs with kernel == stride");
    return TRUE;
  }
  return get_pair (object, section, "stride", 1, P3DC_CONVNET_MAX_KERNEL,
      TRUE, 1, layer->stride, error)
      && get_pair (object, section, "padding", 0, 1024, TRUE, 0,
      layer->padding, error)
      && get_pair (object, section, "dilation", 1, P3DC_CONVNET_MAX_DILATION,
      TRUE, 1, layer->dilation, error)
      && (!json_object_has_member (object, "groups")
      || p3d_model_json_uint (object, section, "groups", 1, MAX_CHANNELS,
          &layer->groups, error));
}

static gboolean
parse_upsample (P3dModelLayer * layer, JsonObject * object,
    const gchar * section, GError ** error)
{
  const gchar *mode = p3d_model_json_string (object, section, "mode", error);
  guint given = 0;

  if (mode == NULL)
    return FALSE;
  if (strcmp (mode, "bilinear") == 0)
    layer->bilinear = TRUE;
  else if (strcmp (mode, "nearest") != 0)
    return p3d_model_json_bad_key (error, section, "mode",
        "must be \"nearest\" or \"bilinear\"");
  if (!p3d_model_json_boolean (object, section, "align_corners", FALSE,
          &layer->align_corners, error))
    return FALSE;
  if (layer->align_corners && !layer->bilinear)
    return p3d_model_json_bad_key (error, section, "align_corners",
        "is for bilinear upsampling only (as in PyTorch)");
  given += json_object_has_member (object, "scale");
  given += json_object_has_member (object, "size");
  given += json_object_has_member (object, "size_of");
  if (given != 1)
    return p3d_model_json_bad_key (error, NULL, section, "takes exactly one "
        "of \"scale\", \"size\" and \"size_of\"");
  if (json_object_has_member (object, "scale"))
    return get_pair (object, section, "scale", 1, 64, FALSE, 0, layer->scale,
        error);
  if (json_object_has_member (object, "size"))
    return get_pair (object, section, "size", 1, MAX_SIZE, FALSE, 0,
        layer->size, error);
  return get_required_string (object, section, "size_of", &layer->size_of,
      error);
}

/* Names the layer in a message `p3d.model: "key" ...` written for it:
 * `p3d.model: "key" (layer "name") ...`. */
static void
name_layer (GError ** error, const gchar * name)
{
  const gchar *open, *close;
  gchar *text;

  if (error == NULL || *error == NULL || name == NULL)
    return;
  open = strchr ((*error)->message, '"');
  close = open != NULL ? strchr (open + 1, '"') : NULL;
  if (close == NULL) {
    g_prefix_error (error, "layer \"%s\": ", name);
    return;
  }
  text = g_strdup_printf ("%.*s (layer \"%s\")%s",
      (gint) (close + 1 - (*error)->message), (*error)->message, name,
      close + 1);
  g_free ((*error)->message);
  (*error)->message = text;
}

/* The layer @index of graph @graph from @node; @previous names the tensor
 * a layer without "input" reads. */
static P3dModelLayer *
parse_layer (JsonNode * node, const gchar * graph, guint index,
    const gchar * previous, GError ** error)
{
  gchar *section = g_strdup_printf ("graph.%s.layers[%u]", graph, index);
  P3dModelLayer *layer = g_new0 (P3dModelLayer, 1);
  JsonObject *object;
  const gchar *text;
  GList *members = NULL, *m;
  guint op, k;
  gboolean ok = FALSE;

  layer->groups = 1;
  layer->norm_eps = 1e-5;
  layer->stride[0] = layer->stride[1] = 1;
  layer->dilation[0] = layer->dilation[1] = 1;
  if (!JSON_NODE_HOLDS_OBJECT (node)) {
    p3d_model_json_bad_key (error, NULL, section, "must be a JSON object");
    goto done;
  }
  object = json_node_get_object (node);
  if (!get_required_string (object, section, "name", &layer->name, error))
    goto done;
  text = p3d_model_json_string (object, section, "op", error);
  if (text == NULL)
    goto done;
  for (op = 0; op < P3D_MODEL_N_OPS; op++)
    if (strcmp (text, op_names[op]) == 0)
      break;
  if (op == P3D_MODEL_N_OPS) {
    p3d_model_json_bad_key (error, section, "op", "must be one of conv, "
        "deconv, add, max_pool, upsample, concat, slice, softmax, relu");
    goto done;
  }
  layer->op = op;
  /* a key an op does not read is a mistake, not a default */
  members = json_object_get_members (object);
  for (m = members; m != NULL; m = m->next) {
    const gchar *key = m->data;

    if (strcmp (key, "name") == 0 || strcmp (key, "op") == 0
        || strcmp (key, "input") == 0 || strcmp (key, "inputs") == 0)
      continue;
    for (k = 0; op_keys[op][k] != NULL; k++)
      if (strcmp (key, op_keys[op][k]) == 0)
        break;
    if (op_keys[op][k] == NULL) {
      gchar *what = g_strdup_printf ("is not a key of a %s layer",
          op_names[op]);

      p3d_model_json_bad_key (error, section, key, what);
      g_free (what);
      goto done;
    }
  }
  if (!parse_inputs (layer, object, section, previous, error))
    goto done;
  if (!p3d_model_json_boolean (object, section, "relu", FALSE, &layer->relu,
          error))
    goto done;
  switch (layer->op) {
    case P3D_MODEL_OP_CONV:
    case P3D_MODEL_OP_DECONV:
      ok = parse_conv (layer, object, section, error);
      break;
    case P3D_MODEL_OP_MAX_POOL:
      ok = get_pair (object, section, "kernel", 1, P3DC_CONVNET_MAX_KERNEL,
          FALSE, 0, layer->kernel, error)
          && get_pair (object, section, "stride", 1, P3DC_CONVNET_MAX_KERNEL,
          TRUE, 0, layer->stride, error)
          && get_pair (object, section, "padding", 0, P3DC_CONVNET_MAX_KERNEL,
          TRUE, 0, layer->padding, error)
          && get_pair (object, section, "dilation", 1,
          P3DC_CONVNET_MAX_DILATION, TRUE, 1, layer->dilation, error);
      /* PyTorch's default stride is the kernel */
      if (ok && layer->stride[0] == 0) {
        layer->stride[0] = layer->kernel[0];
        layer->stride[1] = layer->kernel[1];
      }
      break;
    case P3D_MODEL_OP_UPSAMPLE:
      ok = parse_upsample (layer, object, section, error);
      break;
    case P3D_MODEL_OP_SLICE:
      ok = (!json_object_has_member (object, "begin")
          || p3d_model_json_uint (object, section, "begin", 0, MAX_CHANNELS,
              &layer->begin, error))
          && p3d_model_json_uint (object, section, "end", 1, MAX_CHANNELS,
          &layer->end, error);
      if (ok && layer->end <= layer->begin)
        ok = p3d_model_json_bad_key (error, section, "end", "must be above "
            "\"begin\"");
      break;
    default:
      ok = TRUE;
      break;
  }
done:
  g_list_free (members);
  if (!ok) {
    /* the layer's name too, when it has one */
    name_layer (error, layer->name);
    layer_free (layer);
    layer = NULL;
  }
  g_free (section);
  return layer;
}

P3dModelGraph *
p3d_model_graph_from_node (const gchar * name, JsonNode * node, GError ** error)
{
  gchar *section = g_strdup_printf ("graph.%s", name);
  gchar *input_section = g_strdup_printf ("graph.%s.input", name);
  P3dModelGraph *graph = NULL;
  JsonObject *object, *input, *outputs;
  JsonArray *layers;
  GList *members = NULL, *m;
  const gchar *input_name;
  guint n_layers, i, dims[4];
  GHashTable *names = NULL;

  if (!JSON_NODE_HOLDS_OBJECT (node)) {
    p3d_model_json_bad_key (error, NULL, section, "must be a JSON object");
    goto fail;
  }
  object = json_node_get_object (node);
  input = p3d_model_json_object (object, section, "input", error);
  if (input == NULL)
    goto fail;
  input_name = p3d_model_json_string (input, input_section, "name", error);
  if (input_name == NULL)
    goto fail;
  dims[0] = 1;
  if ((json_object_has_member (input, "batch")
          && !p3d_model_json_uint (input, input_section, "batch", 1,
              P3DC_CONVNET_MAX_BATCH, &dims[0], error))
      || !p3d_model_json_uint (input, input_section, "channels", 1,
          MAX_CHANNELS, &dims[1], error)
      || !p3d_model_json_uint (input, input_section, "height", 1, MAX_SIZE,
          &dims[2], error)
      || !p3d_model_json_uint (input, input_section, "width", 1, MAX_SIZE,
          &dims[3], error))
    goto fail;
  layers = p3d_model_json_array (object, section, "layers", 1,
      P3DC_CONVNET_MAX_LAYERS, &n_layers, error);
  if (layers == NULL)
    goto fail;
  graph = p3d_model_graph_new (name, input_name, dims[0], dims[1], dims[2],
      dims[3]);
  names = g_hash_table_new (g_str_hash, g_str_equal);
  g_hash_table_add (names, graph->input);
  for (i = 0; i < n_layers; i++) {
    const gchar *previous = i > 0 ? ((P3dModelLayer *)
        graph->layers->pdata[i - 1])->name : graph->input;
    P3dModelLayer *layer = parse_layer (json_array_get_element (layers, i),
        name, i, previous, error);

    if (layer == NULL)
      goto fail;
    g_ptr_array_add (graph->layers, layer);
    if (!g_hash_table_add (names, layer->name)) {
      gchar *key = g_strdup_printf ("graph.%s.layers[%u]", name, i);

      p3d_model_json_bad_key (error, key, "name", "names a tensor the graph "
          "already has");
      name_layer (error, layer->name);
      g_free (key);
      goto fail;
    }
  }
  members = json_object_get_members (object);
  for (m = members; m != NULL; m = m->next) {
    if (strcmp (m->data, "input") != 0 && strcmp (m->data, "layers") != 0
        && strcmp (m->data, "outputs") != 0) {
      p3d_model_json_bad_key (error, section, m->data, "is not a key of a "
          "graph (input, layers, outputs)");
      goto fail;
    }
  }
  g_list_free (members);
  outputs = p3d_model_json_object (object, section, "outputs", error);
  members = NULL;
  if (outputs == NULL)
    goto fail;
  members = json_object_get_members (outputs);
  for (m = members; m != NULL; m = m->next) {
    gchar *outputs_section = g_strdup_printf ("graph.%s.outputs", name);
    const gchar *tensor = p3d_model_json_string (outputs, outputs_section,
        m->data, error);

    g_free (outputs_section);
    if (tensor == NULL)
      goto fail;
    p3d_model_graph_add_output (graph, m->data, tensor);
  }
  g_list_free (members);
  g_hash_table_unref (names);
  g_free (section);
  g_free (input_section);
  return graph;

fail:
  g_list_free (members);
  if (names != NULL)
    g_hash_table_unref (names);
  p3d_model_graph_free (graph);
  g_free (section);
  g_free (input_section);
  return NULL;
}

P3dModelGraph *
p3d_model_graph_parse (const gchar * name, const gchar * json, GError ** error)
{
  JsonParser *parser = json_parser_new ();
  GError *json_error = NULL;
  P3dModelGraph *graph;

  if (!p3d_json_parser_load (parser, json, -1, &json_error)) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_METADATA,
        P3D_MODEL_METADATA_KEY ": graph \"%s\" is not valid JSON: %s", name,
        json_error->message);
    g_error_free (json_error);
    g_object_unref (parser);
    return NULL;
  }
  graph = p3d_model_graph_from_node (name, json_parser_get_root (parser),
      error);
  g_object_unref (parser);
  return graph;
}

/* ---- writing ------------------------------------------------------ */

static void
add_pair (JsonBuilder * builder, const gchar * key, const guint * pair)
{
  json_builder_set_member_name (builder, key);
  if (pair[0] == pair[1]) {
    json_builder_add_int_value (builder, pair[0]);
    return;
  }
  json_builder_begin_array (builder);
  json_builder_add_int_value (builder, pair[0]);
  json_builder_add_int_value (builder, pair[1]);
  json_builder_end_array (builder);
}

static void
add_string (JsonBuilder * builder, const gchar * key, const gchar * value)
{
  if (value == NULL)
    return;
  json_builder_set_member_name (builder, key);
  json_builder_add_string_value (builder, value);
}

static void
write_layer (JsonBuilder * b, const P3dModelLayer * layer)
{
  guint i;

  json_builder_begin_object (b);
  add_string (b, "name", layer->name);
  add_string (b, "op", op_names[layer->op]);
  if (layer->op == P3D_MODEL_OP_ADD || layer->op == P3D_MODEL_OP_CONCAT) {
    json_builder_set_member_name (b, "inputs");
    json_builder_begin_array (b);
    for (i = 0; layer->inputs[i] != NULL; i++)
      json_builder_add_string_value (b, layer->inputs[i]);
    json_builder_end_array (b);
  } else {
    add_string (b, "input", layer->inputs[0]);
  }
  switch (layer->op) {
    case P3D_MODEL_OP_CONV:
    case P3D_MODEL_OP_DECONV:
      json_builder_set_member_name (b, "out_channels");
      json_builder_add_int_value (b, layer->out_channels);
      add_pair (b, "kernel", layer->kernel);
      add_pair (b, "stride", layer->stride);
      if (layer->op == P3D_MODEL_OP_CONV) {
        add_pair (b, "padding", layer->padding);
        add_pair (b, "dilation", layer->dilation);
        json_builder_set_member_name (b, "groups");
        json_builder_add_int_value (b, layer->groups);
      }
      add_string (b, "weight", layer->weight);
      add_string (b, "bias", layer->bias);
      add_string (b, "norm", layer->norm);
      if (layer->norm != NULL) {
        json_builder_set_member_name (b, "norm_eps");
        json_builder_add_double_value (b, layer->norm_eps);
      }
      break;
    case P3D_MODEL_OP_MAX_POOL:
      add_pair (b, "kernel", layer->kernel);
      add_pair (b, "stride", layer->stride);
      add_pair (b, "padding", layer->padding);
      add_pair (b, "dilation", layer->dilation);
      break;
    case P3D_MODEL_OP_UPSAMPLE:
      add_string (b, "mode", layer->bilinear ? "bilinear" : "nearest");
      if (layer->bilinear) {
        json_builder_set_member_name (b, "align_corners");
        json_builder_add_boolean_value (b, layer->align_corners);
      }
      if (layer->size_of != NULL)
        add_string (b, "size_of", layer->size_of);
      else if (layer->size[0] != 0)
        add_pair (b, "size", layer->size);
      else
        add_pair (b, "scale", layer->scale);
      break;
    case P3D_MODEL_OP_SLICE:
      json_builder_set_member_name (b, "begin");
      json_builder_add_int_value (b, layer->begin);
      json_builder_set_member_name (b, "end");
      json_builder_add_int_value (b, layer->end);
      break;
    default:
      break;
  }
  if (layer->relu) {
    json_builder_set_member_name (b, "relu");
    json_builder_add_boolean_value (b, TRUE);
  }
  json_builder_end_object (b);
}

gchar *
p3d_model_graph_to_json (const P3dModelGraph * graph)
{
  JsonBuilder *b = json_builder_new ();
  JsonGenerator *generator = json_generator_new ();
  JsonNode *root;
  gchar *text;
  guint i;

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "input");
  json_builder_begin_object (b);
  add_string (b, "name", graph->input);
  json_builder_set_member_name (b, "batch");
  json_builder_add_int_value (b, graph->batch);
  json_builder_set_member_name (b, "channels");
  json_builder_add_int_value (b, graph->channels);
  json_builder_set_member_name (b, "height");
  json_builder_add_int_value (b, graph->height);
  json_builder_set_member_name (b, "width");
  json_builder_add_int_value (b, graph->width);
  json_builder_end_object (b);
  json_builder_set_member_name (b, "layers");
  json_builder_begin_array (b);
  for (i = 0; i < graph->layers->len; i++)
    write_layer (b, graph->layers->pdata[i]);
  json_builder_end_array (b);
  json_builder_set_member_name (b, "outputs");
  json_builder_begin_object (b);
  for (i = 0; i < graph->outputs->len; i++) {
    const P3dModelGraphOutput *output = graph->outputs->pdata[i];

    add_string (b, output->name, output->tensor);
  }
  json_builder_end_object (b);
  json_builder_end_object (b);
  root = json_builder_get_root (b);
  json_generator_set_root (generator, root);
  text = json_generator_to_data (generator, NULL);
  json_node_unref (root);
  g_object_unref (generator);
  g_object_unref (b);
  return text;
}
