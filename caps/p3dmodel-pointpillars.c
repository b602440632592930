/* The PointPillars model family: a pillar net, SECOND (OpenPCDet's
 * BaseBEVBackbone) and SECONDFPN, and an anchor head of three 1x1
 * convolutions (class logits, box deltas, direction logits) decoded with
 * its anchors as OpenPCDet's AnchorHeadSingle or mmdetection3d's
 * Anchor3DHead does (cuda/anchor3d_decode.h).  The `p3d.model` document is
 * the one tools/pointpillars_weights.py writes (docs/weights.md): the
 * pillar models' keys (p3dmodel-pillar.c) plus "framework" (whose decode
 * rules), "tensors" (the state_dict prefixes of each part, which differ
 * between the frameworks), "head" (classes, anchor sets, code size,
 * direction classifier) and "post" (the test-time selection and NMS).  The
 * checks mirror the converters', so a file they write loads, and a file
 * edited by hand is refused with the key that is wrong. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include "p3dmodel-private.h"

#include "anchor3d_decode.h"

#define FAMILY_ARCHITECTURE "pointpillars"
#define FAMILY_VERSION 1

/* the parts whose prefixes "tensors" names */
enum
{
  PART_PFN,
  PART_BLOCKS,
  PART_DEBLOCKS,
  PART_CLS,
  PART_BOX,
  PART_DIR,
  N_PARTS,
};

static const gchar *const part_keys[N_PARTS] = {
  "pfn", "blocks", "deblocks", "cls", "box", "dir",
};

/* the head's outputs, in the order the decode takes its views */
enum
{
  HEAD_CLS,
  HEAD_BOX,
  HEAD_DIR,
  N_HEADS,
};

static const gchar *const head_outputs[N_HEADS] = { "cls", "box", "dir" };

typedef struct
{
  P3dModelPillarConfig pillar;
  P3dcAnchor3dRules framework;
  gchar *parts[N_PARTS];        /* "tensors": NULL for an absent dir */
  guint block_conv_offset;
  /* the modules' prefixes ("vfe.", "dense_head.", ...), NULL-terminated:
   * every tensor under one must be used */
  gchar **prefixes;

  guint n_classes;
  gchar **class_names;
  guint n_sets;
  P3dcAnchor3dSet sets[P3DC_ANCHOR3D_MAX_ANCHORS];
  guint feature_map_stride[P3DC_ANCHOR3D_MAX_ANCHORS];  /* 0: not given */
  guint n_anchors;              /* per location, over the sets */
  guint code_size;
  guint dir_bins;               /* 0: no direction classifier */
  gdouble dir_offset, dir_limit_offset;

  gdouble score_threshold;
  gboolean per_class;
  P3dcAnchor3dNms nms;
  gdouble nms_threshold;
  guint pre_max, post_max;
} Config;

/* ---- config ---------------------------------------------------------- */

/* Every member of @object is among the NULL-terminated @keys: a key the
 * converters never write is a mistake that would otherwise pass. */
static gboolean
known_keys (JsonObject * object, const gchar * section,
    const gchar * const *keys, GError ** error)
{
  GList *members = json_object_get_members (object), *m;
  gboolean ok = TRUE;
  guint k;

  for (m = members; m != NULL && ok; m = m->next) {
    for (k = 0; keys[k] != NULL; k++)
      if (strcmp (keys[k], m->data) == 0)
        break;
    if (keys[k] == NULL) {
      gchar *list = g_strjoinv (", ", (gchar **) keys);
      gchar *what = g_strdup_printf ("is not a key of \"%s\" (%s)", section,
          list);

      ok = p3d_model_json_bad_key (error, section, m->data, what);
      g_free (what);
      g_free (list);
    }
  }
  g_list_free (members);
  return ok;
}

/* "vfe.pfn_layers.0" -> "vfe.": the module a part's tensors live under. */
static void
add_prefix (GPtrArray * prefixes, const gchar * name)
{
  const gchar *dot = strchr (name, '.');
  gchar *prefix = dot != NULL ? g_strndup (name, dot - name + 1) :
      g_strconcat (name, ".", NULL);
  guint i;

  for (i = 0; i < prefixes->len; i++) {
    if (strcmp (prefixes->pdata[i], prefix) == 0) {
      g_free (prefix);
      return;
    }
  }
  g_ptr_array_add (prefixes, prefix);
}

static gboolean
parse_tensors (Config * config, JsonObject * root, GError ** error)
{
  static const gchar *const keys[] = {
    "pfn", "blocks", "block_conv_offset", "deblocks", "cls", "box", "dir",
    NULL,
  };
  JsonObject *tensors = p3d_model_json_object (root, NULL, "tensors", error);
  GPtrArray *prefixes;
  guint p;

  if (tensors == NULL || !known_keys (tensors, "tensors", keys, error))
    return FALSE;
  for (p = 0; p < N_PARTS; p++) {
    const gchar *name;

    /* a head without a direction classifier has no dir convolution */
    if (p == PART_DIR && config->dir_bins == 0
        && !json_object_has_member (tensors, part_keys[p]))
      continue;
    name = p3d_model_json_string (tensors, "tensors", part_keys[p], error);
    if (name == NULL)
      return FALSE;
    if (name[0] == '\0' || name[0] == '.' || g_str_has_suffix (name, "."))
      return p3d_model_json_bad_key (error, "tensors", part_keys[p],
          "must be a state_dict prefix such as \"dense_head.conv_cls\"");
    config->parts[p] = g_strdup (name);
  }
  if (!p3d_model_json_uint (tensors, "tensors", "block_conv_offset", 0, 16,
          &config->block_conv_offset, error))
    return FALSE;
  prefixes = g_ptr_array_new ();
  for (p = 0; p < N_PARTS; p++)
    if (config->parts[p] != NULL)
      add_prefix (prefixes, config->parts[p]);
  g_ptr_array_add (prefixes, NULL);
  config->prefixes = (gchar **) g_ptr_array_free (prefixes, FALSE);
  return TRUE;
}

static gboolean
parse_class_names (Config * config, JsonObject * head, GError ** error)
{
  JsonArray *names = p3d_model_json_array (head, "head", "class_names", 1,
      P3DC_ANCHOR3D_MAX_CLASSES, &config->n_classes, error);
  guint c;

  if (names == NULL)
    return FALSE;
  config->class_names = g_new0 (gchar *, config->n_classes + 1);
  for (c = 0; c < config->n_classes; c++) {
    JsonNode *name = json_array_get_element (names, c);

    if (!JSON_NODE_HOLDS_VALUE (name)
        || json_node_get_value_type (name) != G_TYPE_STRING)
      return p3d_model_json_bad_key (error, "head", "class_names",
          "must hold strings");
    config->class_names[c] = g_strdup (json_node_get_string (name));
  }
  return TRUE;
}

/* An array member of 1..@max numbers in [@min_value, @max_value] (or, with
 * @triples, of [a, b, c] arrays of them, flattened), into @values. */
static gboolean
parse_numbers (JsonObject * object, const gchar * section, const gchar * key,
    guint max, gboolean triples, gdouble min_value, gdouble max_value,
    gdouble * values, guint * n, GError ** error)
{
  JsonArray *array = p3d_model_json_array (object, section, key, 1, max, n,
      error);
  guint i, j, width = triples ? 3 : 1;
  gchar *what;

  if (array == NULL)
    return FALSE;
  for (i = 0; i < *n; i++) {
    JsonNode *node = json_array_get_element (array, i);
    JsonArray *inner = NULL;

    if (triples) {
      if (!JSON_NODE_HOLDS_ARRAY (node)
          || json_array_get_length (json_node_get_array (node)) != 3)
        break;
      inner = json_node_get_array (node);
    }
    for (j = 0; j < width; j++) {
      gdouble *v = &values[i * width + j];

      if (!p3d_model_json_node_number (triples ?
              json_array_get_element (inner, j) : node, v)
          || *v < min_value || *v > max_value)
        break;
    }
    if (j < width)
      break;
  }
  if (i == *n)
    return TRUE;
  what = g_strdup_printf ("entry %u must be %s in [%g, %g]", i, triples ?
      "[dx, dy, dz], sizes" : "a number", min_value, max_value);
  p3d_model_json_bad_key (error, section, key, what);
  g_free (what);
  return FALSE;
}

static gboolean
parse_anchor_set (Config * config, JsonObject * object, const gchar * section,
    P3dcAnchor3dSet * set, guint * stride, GError ** error)
{
  static const gchar *const keys[] = {
    "class_name", "x_range", "y_range", "bottom", "sizes", "rotations",
    "placement", "feature_map_stride", NULL,
  };
  gdouble sizes[P3DC_ANCHOR3D_MAX_SIZES * 3];
  const gchar *placement;
  guint n, i;

  if (!known_keys (object, section, keys, error)
      || !p3d_model_json_doubles (object, section, "x_range", 2, -1e4, 1e4,
          set->x_range, error)
      || !p3d_model_json_doubles (object, section, "y_range", 2, -1e4, 1e4,
          set->y_range, error)
      || !p3d_model_json_double (object, section, "bottom", -1e4, 1e4,
          &set->bottom, error)
      || !parse_numbers (object, section, "sizes", P3DC_ANCHOR3D_MAX_SIZES,
          TRUE, 1e-3, 1e3, sizes, &n, error))
    return FALSE;
  set->n_sizes = n;
  for (i = 0; i < n; i++) {
    set->sizes[i][0] = sizes[3 * i];
    set->sizes[i][1] = sizes[3 * i + 1];
    set->sizes[i][2] = sizes[3 * i + 2];
  }
  if (!parse_numbers (object, section, "rotations",
          P3DC_ANCHOR3D_MAX_ROTATIONS, FALSE, -1e3, 1e3, set->rotations, &n,
          error))
    return FALSE;
  set->n_rotations = n;
  placement = p3d_model_json_string (object, section, "placement", error);
  if (placement == NULL)
    return FALSE;
  if (strcmp (placement, "span") == 0)
    set->placement = P3DC_ANCHOR3D_SPAN;
  else if (strcmp (placement, "centers") == 0)
    set->placement = P3DC_ANCHOR3D_CENTERS;
  else if (strcmp (placement, "corners") == 0)
    set->placement = P3DC_ANCHOR3D_CORNERS;
  else
    return p3d_model_json_bad_key (error, section, "placement",
        "must be span, centers or corners");
  *stride = 0;
  if (json_object_has_member (object, "feature_map_stride")
      && !p3d_model_json_uint (object, section, "feature_map_stride", 1, 64,
          stride, error))
    return FALSE;
  config->n_anchors += set->n_sizes * set->n_rotations;
  return TRUE;
}

static gboolean
parse_direction (Config * config, JsonObject * head, GError ** error)
{
  static const gchar *const keys[] = {
    "bins", "offset", "limit_offset", NULL,
  };
  JsonNode *node = json_object_get_member (head, "direction");
  JsonObject *direction;

  config->dir_bins = 0;
  if (node == NULL || JSON_NODE_HOLDS_NULL (node))
    return TRUE;
  direction = p3d_model_json_object (head, "head", "direction", error);
  if (direction == NULL
      || !known_keys (direction, "head.direction", keys, error)
      || !p3d_model_json_uint (direction, "head.direction", "bins", 1, 16,
          &config->dir_bins, error)
      || !p3d_model_json_double (direction, "head.direction", "offset", -1e3,
          1e3, &config->dir_offset, error)
      || !p3d_model_json_double (direction, "head.direction", "limit_offset",
          -1e3, 1e3, &config->dir_limit_offset, error))
    return FALSE;
  if (config->framework == P3DC_ANCHOR3D_MMDET3D && config->dir_bins != 2)
    return p3d_model_json_bad_key (error, "head.direction", "bins",
        "must be 2: mmdetection3d's direction classifier has two bins");
  return TRUE;
}

static gboolean
parse_head (Config * config, JsonObject * root, GError ** error)
{
  static const gchar *const keys[] = {
    "class_names", "anchors", "code_size", "direction", NULL,
  };
  JsonObject *head = p3d_model_json_object (root, NULL, "head", error);
  JsonArray *sets;
  guint s;

  if (head == NULL || !known_keys (head, "head", keys, error)
      || !parse_class_names (config, head, error))
    return FALSE;
  sets = p3d_model_json_array (head, "head", "anchors", 1,
      P3DC_ANCHOR3D_MAX_ANCHORS, &config->n_sets, error);
  if (sets == NULL)
    return FALSE;
  config->n_anchors = 0;
  for (s = 0; s < config->n_sets; s++) {
    JsonNode *node = json_array_get_element (sets, s);
    gchar *section = g_strdup_printf ("head.anchors[%u]", s);
    gboolean ok;

    if (!JSON_NODE_HOLDS_OBJECT (node))
      ok = p3d_model_json_bad_key (error, "head", "anchors",
          "must hold JSON objects");
    else
      ok = parse_anchor_set (config, json_node_get_object (node), section,
          &config->sets[s], &config->feature_map_stride[s], error);
    g_free (section);
    if (!ok)
      return FALSE;
  }
  if (config->n_anchors > P3DC_ANCHOR3D_MAX_ANCHORS) {
    gchar *what = g_strdup_printf ("give %u anchors a location, more than "
        "the %u the decode takes", config->n_anchors,
        P3DC_ANCHOR3D_MAX_ANCHORS);

    p3d_model_json_bad_key (error, "head", "anchors", what);
    g_free (what);
    return FALSE;
  }
  if (!p3d_model_json_uint (head, "head", "code_size", 7, 9,
          &config->code_size, error))
    return FALSE;
  if (config->code_size == 8)
    return p3d_model_json_bad_key (error, "head", "code_size",
        "must be 7, or 9 with velocity");
  return parse_direction (config, head, error);
}

static gboolean
parse_post (Config * config, JsonObject * root, GError ** error)
{
  static const gchar *const keys[] = {
    "score_threshold", "per_class", "nms", "nms_threshold", "pre_max",
    "post_max", NULL,
  };
  JsonObject *post = p3d_model_json_object (root, NULL, "post", error);
  const gchar *nms;

  if (post == NULL || !known_keys (post, "post", keys, error)
      || !p3d_model_json_double (post, "post", "score_threshold", 0.0, 1.0,
          &config->score_threshold, error)
      || !p3d_model_json_boolean (post, "post", "per_class", FALSE,
          &config->per_class, error))
    return FALSE;
  nms = p3d_model_json_string (post, "post", "nms", error);
  if (nms == NULL)
    return FALSE;
  if (strcmp (nms, "rotated") == 0)
    config->nms = P3DC_ANCHOR3D_NMS_ROTATED;
  else if (strcmp (nms, "rotated-mmcv") == 0)
    config->nms = P3DC_ANCHOR3D_NMS_ROTATED_MMCV;
  else if (strcmp (nms, "aligned") == 0)
    config->nms = P3DC_ANCHOR3D_NMS_ALIGNED;
  else
    return p3d_model_json_bad_key (error, "post", "nms",
        "must be rotated, rotated-mmcv or aligned");
  if (!p3d_model_json_double (post, "post", "nms_threshold", 0.0, 1.0,
          &config->nms_threshold, error))
    return FALSE;
  return p3d_model_json_uint (post, "post", "pre_max", 1,
      P3DC_ANCHOR3D_MAX_PRE, &config->pre_max, error)
      && p3d_model_json_uint (post, "post", "post_max", 1, 1 << 20,
      &config->post_max, error);
}

static void
config_free (gpointer data)
{
  Config *config = data;
  guint p;

  if (config == NULL)
    return;
  for (p = 0; p < N_PARTS; p++)
    g_free (config->parts[p]);
  g_strfreev (config->prefixes);
  g_strfreev (config->class_names);
  g_free (config);
}

static gpointer
config_parse (JsonObject * root, GError ** error)
{
  Config *config = g_new0 (Config, 1);
  const gchar *framework;
  gboolean ok;

  ok = p3d_model_pillar_config_parse (&config->pillar, root, error);
  if (ok) {
    framework = p3d_model_json_string (root, NULL, "framework", error);
    if (framework == NULL)
      ok = FALSE;
    else if (strcmp (framework, "openpcdet") == 0)
      config->framework = P3DC_ANCHOR3D_OPENPCDET;
    else if (strcmp (framework, "mmdet3d") == 0)
      config->framework = P3DC_ANCHOR3D_MMDET3D;
    else
      ok = p3d_model_json_bad_key (error, NULL, "framework",
          "must be openpcdet or mmdet3d: whose decode rules the head "
          "follows");
  }
  ok = ok && parse_head (config, root, error)
      && parse_tensors (config, root, error)
      && parse_post (config, root, error);
  if (!ok) {
    config_free (config);
    return NULL;
  }
  return config;
}

static const gchar *const *
config_prefixes (gconstpointer data)
{
  const Config *config = data;

  return (const gchar * const *) config->prefixes;
}

/* ---- the graph ------------------------------------------------------- */

/* The channels of each head output. */
static guint
head_channels (const Config * config, guint head)
{
  switch (head) {
    case HEAD_CLS:
      return config->n_anchors * config->n_classes;
    case HEAD_BOX:
      return config->n_anchors * config->code_size;
    default:
      return config->n_anchors * config->dir_bins;
  }
}

/* The canvas, SECOND, SECONDFPN, then the head's 1x1 convolutions with
 * bias, no BatchNorm and no ReLU: "cls", "box" and "dir". */
static P3dModelGraph *
build_graph (gconstpointer data, const gchar * name, GError ** error)
{
  const Config *config = data;
  const P3dModelSecondNames names = {
    config->parts[PART_BLOCKS], config->block_conv_offset,
    config->parts[PART_DEBLOCKS],
  };
  P3dModelGraph *graph;
  guint h;

  graph = p3d_model_graph_new (name, "canvas", 1, config->pillar.pfn_channels,
      config->pillar.grid[1], config->pillar.grid[0]);
  if (!p3d_model_pillar_add_second (&config->pillar, &names, graph, error)) {
    p3d_model_graph_free (graph);
    return NULL;
  }
  for (h = 0; h < N_HEADS; h++) {
    const gchar *part = config->parts[PART_CLS + h];
    P3dModelLayer *layer;

    if (head_channels (config, h) == 0)
      continue;
    layer = p3d_model_graph_add_conv (graph, P3D_MODEL_OP_CONV,
        g_strdup (head_outputs[h]), "neck", head_channels (config, h), 1, 1,
        0, g_strdup_printf ("%s.weight", part), NULL, 0);
    layer->bias = g_strdup_printf ("%s.bias", part);
    p3d_model_graph_add_output (graph, head_outputs[h], head_outputs[h]);
  }
  return graph;
}

/* ---- checks against the networks ------------------------------------- */

/* The "bev" network's head outputs, in the decode's order (NULL for an
 * absent dir); FALSE with @error when one the config implies is missing,
 * has another channel count, or the maps differ in size. */
static gboolean
find_heads (const Config * config, const P3dModelNetwork * network,
    const P3dModelOutput * heads[N_HEADS], GError ** error)
{
  const P3dcConvBufferDesc *first = NULL;
  guint h;

  for (h = 0; h < N_HEADS; h++) {
    guint channels = head_channels (config, h);
    const P3dModelOutput *output = channels == 0 ? NULL :
        p3d_model_network_get_output (network, head_outputs[h]);
    const P3dcConvBufferDesc *buffer;

    heads[h] = output;
    if (channels == 0)
      continue;
    if (output == NULL || output->channels != channels)
      return p3d_model_bad_metadata (error, "the \"bev\" graph's output "
          "\"%s\" %s; the config's %u anchors a location imply %u channels",
          head_outputs[h], output == NULL ? "is missing" :
          "has another channel count", config->n_anchors, channels);
    buffer = &network->desc.buffers[output->buffer];
    if (first == NULL)
      first = buffer;
    else if (buffer->height != first->height || buffer->width != first->width)
      return p3d_model_bad_metadata (error, "the \"bev\" graph's head maps "
          "differ in size");
  }
  return TRUE;
}

/* The decode's parameters; without @model_nms every candidate a list
 * keeps (pre_max) is output, with no suppression. */
static void
decode_params (const Config * config, gboolean model_nms,
    P3dcAnchor3dParams * params)
{
  memset (params, 0, sizeof (*params));
  params->rules = config->framework;
  params->num_classes = config->n_classes;
  params->code_size = config->code_size;
  params->dir_bins = config->dir_bins;
  params->dir_offset = (float) config->dir_offset;
  params->dir_limit_offset = (float) config->dir_limit_offset;
  params->score_threshold = (float) config->score_threshold;
  params->per_class = config->per_class;
  params->nms = config->nms;
  params->nms_threshold = (float) config->nms_threshold;
  params->pre_max = config->pre_max;
  params->post_max = config->post_max;
  if (!model_nms) {
    /* post_max is the NMS's: every listed candidate stays */
    params->nms = P3DC_ANCHOR3D_NMS_NONE;
    params->post_max = config->framework == P3DC_ANCHOR3D_MMDET3D ?
        config->n_classes * config->pre_max : config->pre_max;
  }
}

/* The anchor table of the head maps; FALSE with @error naming what the
 * decode refuses. */
static gboolean
anchor_table (const Config * config, guint height, guint width,
    P3dcAnchor3dTable * table, GError ** error)
{
  P3dcResult result;
  guint s;

  for (s = 0; s < config->n_sets; s++) {
    guint stride = config->feature_map_stride[s];

    if (stride != 0 && ((guint64) width * stride != config->pillar.grid[0]
            || (guint64) height * stride != config->pillar.grid[1]))
      return p3d_model_bad_metadata (error, "head.anchors[%u]."
          "feature_map_stride %u disagrees with the net, which maps the %u x "
          "%u grid to %u x %u", s, stride, config->pillar.grid[0],
          config->pillar.grid[1], width, height);
    if (config->sets[s].placement == P3DC_ANCHOR3D_SPAN
        && (height < 2 || width < 2))
      return p3d_model_bad_metadata (error, "head.anchors[%u] spans its "
          "range over a %u x %u map: a span needs two cells along each axis",
          s, width, height);
  }
  if ((guint64) height * width * config->n_anchors > P3DC_ANCHOR3D_MAX_CELLS)
    return p3d_model_bad_metadata (error, "the %u x %u head map holds %"
        G_GUINT64_FORMAT " anchors, more than the %u the decode takes",
        width, height, (guint64) height * width * config->n_anchors,
        P3DC_ANCHOR3D_MAX_CELLS);
  result = p3dc_anchor3d_table_init (table, config->sets, config->n_sets,
      height, width);
  if (result != P3DC_OK)
    return p3d_model_bad_metadata (error, "the anchors of head.anchors: %s",
        p3dc_result_string (result));
  return TRUE;
}

/* The pillar net, the head outputs, the anchors and the decode's
 * parameters, checked once, so that a decoder is never refused later. */
static gboolean
family_finish (P3dModel * model, P3dModelBuilder * builder, GError ** error)
{
  const Config *config = model->config;
  const P3dModelNetwork *network = p3d_model_get_network (model, "bev");
  const P3dModelOutput *heads[N_HEADS];
  const P3dcConvBufferDesc *map;
  P3dcAnchor3dTable table;
  P3dcAnchor3dParams params;
  P3dcResult result;

  if (!p3d_model_pillar_finish (model, builder, &config->pillar,
          config->parts[PART_PFN], error)
      || !find_heads (config, network, heads, error))
    return FALSE;
  map = &network->desc.buffers[heads[HEAD_CLS]->buffer];
  if (!anchor_table (config, map->height, map->width, &table, error))
    return FALSE;
  decode_params (config, TRUE, &params);
  result = p3dc_anchor3d_params_validate (&params, &table);
  p3dc_anchor3d_table_clear (&table);
  if (result != P3DC_OK)
    return p3d_model_bad_metadata (error, "the decode refuses \"head\" and "
        "\"post\": %s", p3dc_result_string (result));
  return TRUE;
}

/* ---- the decode ------------------------------------------------------ */

typedef struct
{
  P3dcAnchor3dParams params;
  P3dcAnchor3dTable table;
} Decode;

static void
decode_free (gpointer data)
{
  Decode *decode = data;

  p3dc_anchor3d_table_clear (&decode->table);
  g_free (decode);
}

/* The views' order: cls, box, dir. */
static gpointer
decode_new (const P3dModel * model, const P3dModelNetwork * network,
    gboolean model_nms, GPtrArray * outputs, GError ** error)
{
  const Config *config = model->config;
  const P3dModelOutput *heads[N_HEADS];
  const P3dcConvBufferDesc *map;
  Decode *decode;
  guint h;

  if (!find_heads (config, network, heads, error))
    return NULL;
  decode = g_new0 (Decode, 1);
  map = &network->desc.buffers[heads[HEAD_CLS]->buffer];
  if (!anchor_table (config, map->height, map->width, &decode->table, error)) {
    g_free (decode);
    return NULL;
  }
  decode_params (config, model_nms, &decode->params);
  for (h = 0; h < N_HEADS; h++)
    g_ptr_array_add (outputs, (gpointer) heads[h]);
  return decode;
}

static guint
decode_capacity (gconstpointer data)
{
  const Decode *decode = data;

  return p3dc_anchor3d_output_capacity (&decode->params, &decode->table);
}

/* mmdetection3d's nuScenes heads regress vx, vy after the 7 box values */
static gboolean
decode_velocity (gconstpointer data)
{
  const Decode *decode = data;

  return decode->params.code_size == 9;
}

static P3dcResult
decode_workspace_new (gconstpointer data, gpointer * workspace)
{
  const Decode *decode = data;

  return p3dc_anchor3d_decoder_new (&decode->params, &decode->table,
      (P3dcAnchor3dDecoder **) workspace);
}

static void
decode_workspace_free (gpointer workspace)
{
  p3dc_anchor3d_decoder_free (workspace);
}

static void
maps_of (const P3dcMapView * views, const P3dModelBoxes * boxes,
    P3dcAnchor3dMaps * maps, P3dcAnchor3dOutput * output)
{
  maps->cls = views[HEAD_CLS];
  maps->box = views[HEAD_BOX];
  maps->dir = views[HEAD_DIR];
  output->boxes = boxes->boxes;
  output->count = boxes->count;
  output->velocity = boxes->velocity;
}

static P3dcResult
decode_run_cpu (gconstpointer data, const P3dcMapView * views,
    const P3dModelBoxes * boxes)
{
  const Decode *decode = data;
  P3dcAnchor3dMaps maps;
  P3dcAnchor3dOutput output;

  maps_of (views, boxes, &maps, &output);
  return p3dc_anchor3d_decode_cpu (&decode->params, &decode->table, &maps,
      &output);
}

static P3dcResult
decode_run_cuda (gconstpointer data, gpointer workspace,
    const P3dcMapView * views, const P3dModelBoxes * boxes,
    P3dcCudaStream stream)
{
  P3dcAnchor3dMaps maps;
  P3dcAnchor3dOutput output;

  (void) data;
  maps_of (views, boxes, &maps, &output);
  return p3dc_anchor3d_decode_cuda (workspace, &maps, &output, stream);
}

static const P3dModelDecodeClass decode_class = {
  .params_new = decode_new,
  .params_free = decode_free,
  .capacity = decode_capacity,
  .velocity = decode_velocity,
  .workspace_new = decode_workspace_new,
  .workspace_free = decode_workspace_free,
  .run_cpu = decode_run_cpu,
  .run_cuda = decode_run_cuda,
};

static const gchar *const family_networks[] = { "bev", NULL };

const P3dModelFamily p3d_model_family_pointpillars = {
  .architecture = FAMILY_ARCHITECTURE,
  .version = FAMILY_VERSION,
  .converter = "tools/convert_openpcdet_pointpillars.py or "
      "tools/convert_mmdet3d_pointpillars.py",
  .prefixes = NULL,
  .networks = family_networks,
  .config_parse = config_parse,
  .config_free = config_free,
  .build_graph = build_graph,
  .finish = family_finish,
  .decode = &decode_class,
  .config_prefixes = config_prefixes,
};
