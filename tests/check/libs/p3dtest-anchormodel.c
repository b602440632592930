/* Tiny PointPillars models and their brute-force boxes
 * (p3dtest-anchormodel.h). */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>

#include "convnet.h"
#include "p3dmodelgraph.h"
#include "p3dtest-anchormodel.h"
#include "p3dtest-modeloracle.h"

#define BN_EPS 0.001
#define N_STAGES 2

static const guint stage_channels[N_STAGES] = { 8, 16 };
static const guint neck_strides[N_STAGES] = { 1, 2 };

#define NECK_CHANNELS 8

/* The classes in the framework's order: OpenPCDet's KITTI lists Car first,
 * mmdetection3d's Pedestrian first. */
typedef struct
{
  const gchar *name;
  gdouble size[3];
  gdouble bottom;
} AnchorClass;

static const AnchorClass car = { "car", {3.9, 1.6, 1.56}, -1.78 };
static const AnchorClass pedestrian = { "pedestrian", {0.8, 0.6, 1.73}, -0.6 };

static const AnchorClass *
class_of (const AnchorModel * m, guint c)
{
  if (m->options.mmdet3d)
    return c == 0 ? &pedestrian : &car;
  return c == 0 ? &car : &pedestrian;
}

static guint
code_size (const AnchorModel * m)
{
  return m->options.velocity ? 9 : 7;
}

static guint
dir_bins (const AnchorModel * m)
{
  return m->options.no_direction ? 0 : 2;
}

/* ---- tensors ----------------------------------------------------------- */

static void
add_conv (AnchorModel * m, P3dTestRng * rng, gchar * name, gint64 d0,
    gint64 d1, gint64 k, gint64 fan_in, gdouble scale)
{
  const gint64 shape[4] = { d0, d1, k, k };
  gfloat bound = (gfloat) (scale / sqrt ((gdouble) fan_in));

  tiny_model_add_tensor (m->weights, rng, name, 4, shape, -bound, bound);
}

static void
add_bias (AnchorModel * m, P3dTestRng * rng, gchar * name, gint64 n, gfloat lo,
    gfloat hi)
{
  const gint64 shape[1] = { n };

  tiny_model_add_tensor (m->weights, rng, name, 1, shape, lo, hi);
}

static void
make_tensors (AnchorModel * m)
{
  const gint64 pfn_shape[2] = { ANCHORMODEL_PFN_OUT, ANCHORMODEL_PFN_IN };
  guint s, k, in = ANCHORMODEL_PFN_OUT;
  const guint head_in = N_STAGES * NECK_CHANNELS;
  P3dTestRng rng;

  p3d_test_rng_init (&rng, m->options.seed);
  tiny_model_add_tensor (m->weights, &rng, g_strdup_printf ("%s.linear.weight",
          m->pfn), 2, pfn_shape, -0.3f, 0.3f);
  tiny_model_add_norm (m->weights, &rng, g_strdup_printf ("%s.norm", m->pfn),
      ANCHORMODEL_PFN_OUT);
  for (s = 0; s < N_STAGES; s++) {
    for (k = 0; k < 2; k++) {
      guint from = k == 0 ? in : stage_channels[s];
      guint index = m->block_conv_offset + 3 * k;

      add_conv (m, &rng, g_strdup_printf ("%s.%u.%u.weight", m->blocks, s,
              index), stage_channels[s], from, 3, from * 9, 2.0);
      tiny_model_add_norm (m->weights, &rng, g_strdup_printf ("%s.%u.%u",
              m->blocks, s, index + 1), stage_channels[s]);
    }
    in = stage_channels[s];
  }
  for (s = 0; s < N_STAGES; s++) {
    /* transposed convs [in][out][k][k], stride 1 one too */
    add_conv (m, &rng, g_strdup_printf ("%s.%u.0.weight", m->deblocks, s),
        stage_channels[s], NECK_CHANNELS, neck_strides[s], stage_channels[s],
        2.0);
    tiny_model_add_norm (m->weights, &rng, g_strdup_printf ("%s.%u.1",
            m->deblocks, s), NECK_CHANNELS);
  }
  /* class logits spread around sigmoid^-1 (0.1) = -2.2, so that a share of
   * the anchors pass the threshold; small deltas, so that boxes stay near
   * their anchors; direction logits either way */
  add_conv (m, &rng, g_strdup_printf ("%s.weight", m->cls),
      ANCHORMODEL_ANCHORS * ANCHORMODEL_CLASSES, head_in, 1, head_in, 1.0);
  add_bias (m, &rng, g_strdup_printf ("%s.bias", m->cls),
      ANCHORMODEL_ANCHORS * ANCHORMODEL_CLASSES, -4.0f, -2.0f);
  add_conv (m, &rng, g_strdup_printf ("%s.weight", m->box),
      ANCHORMODEL_ANCHORS * code_size (m), head_in, 1, head_in, 0.2);
  add_bias (m, &rng, g_strdup_printf ("%s.bias", m->box),
      ANCHORMODEL_ANCHORS * code_size (m), -0.2f, 0.2f);
  if (dir_bins (m) > 0) {
    add_conv (m, &rng, g_strdup_printf ("%s.weight", m->dir),
        ANCHORMODEL_ANCHORS * dir_bins (m), head_in, 1, head_in, 2.0);
    add_bias (m, &rng, g_strdup_printf ("%s.bias", m->dir),
        ANCHORMODEL_ANCHORS * dir_bins (m), -0.5f, 0.5f);
  }
}

/* ---- the document and the graph ------------------------------------ */

static gchar *
anchor_json (const AnchorModel * m, guint c)
{
  const AnchorClass *a = class_of (m, c);

  return g_strdup_printf ("{\"class_name\": \"%s\", \"x_range\": [0.0, 8.0], "
      "\"y_range\": [-4.0, 4.0], \"bottom\": %g, \"sizes\": [[%g, %g, %g]], "
      "\"rotations\": [0.0, 1.57], \"placement\": \"%s\"%s}", a->name,
      a->bottom, a->size[0], a->size[1], a->size[2],
      m->options.mmdet3d ? "centers" : "span",
      m->options.mmdet3d ? "" : ", \"feature_map_stride\": 2");
}

static gchar *
config_json (const AnchorModel * m)
{
  gchar *a0 = anchor_json (m, 0), *a1 = anchor_json (m, 1), *json;
  gchar *direction = dir_bins (m) == 0 ? g_strdup ("null") :
      g_strdup_printf ("{\"bins\": 2, \"offset\": %.17g, \"limit_offset\": "
      "0.0}", m->options.mmdet3d ? -G_PI / 2 : 0.78539);
  gchar *dir = dir_bins (m) == 0 ? g_strdup ("") :
      g_strdup_printf (", \"dir\": \"%s\"", m->dir);
  gchar *post = m->options.mmdet3d ?
      g_strdup ("\"score_threshold\": 0.1, \"nms\": \"rotated\", "
      "\"nms_threshold\": 0.01, \"pre_max\": 50, \"post_max\": 30") :
      g_strdup_printf ("\"score_threshold\": 0.1, \"per_class\": %s, "
      "\"nms\": \"rotated-mmcv\", \"nms_threshold\": 0.01, \"pre_max\": 100, "
      "\"post_max\": 40", m->options.per_class ? "true" : "false");

  json = g_strdup_printf ("{\"architecture\": \"pointpillars\", "
      "\"version\": 1, \"framework\": \"%s\", \"point_channels\": 4, "
      "\"features\": \"pointpillars-10\", \"voxel_size\": [0.5, 0.5, 4.0], "
      "\"point_cloud_range\": [0.0, -4.0, -3.0, 8.0, 4.0, 1.0], "
      "\"max_points\": %d, \"max_voxels\": %d, \"grid\": [16, 16, 1], "
      "\"pfn\": {\"channels\": [8], \"bn_eps\": 0.001}, "
      "\"backbone\": {\"out_channels\": [8, 16], \"layer_nums\": [1, 1], "
      "\"layer_strides\": [2, 2], \"bn_eps\": 0.001}, "
      "\"neck\": {\"out_channels\": [8, 8], \"upsample_strides\": [1, 2], "
      "\"use_conv_for_no_stride\": false, \"bn_eps\": 0.001}, "
      "\"tensors\": {\"pfn\": \"%s\", \"blocks\": \"%s\", "
      "\"block_conv_offset\": %u, \"deblocks\": \"%s\", \"cls\": \"%s\", "
      "\"box\": \"%s\"%s}, "
      "\"head\": {\"class_names\": [\"%s\", \"%s\"], \"anchors\": [%s, %s], "
      "\"code_size\": %u, \"direction\": %s}, \"post\": {%s}}",
      m->options.mmdet3d ? "mmdet3d" : "openpcdet", ANCHORMODEL_MAX_POINTS,
      ANCHORMODEL_MAX_VOXELS, m->pfn, m->blocks, m->block_conv_offset,
      m->deblocks, m->cls, m->box, dir, class_of (m, 0)->name,
      class_of (m, 1)->name, a0, a1, code_size (m), direction, post);
  g_free (a0);
  g_free (a1);
  g_free (direction);
  g_free (dir);
  g_free (post);
  return json;
}

/* The network as the frameworks' modules chain it, written here from the
 * architecture alone: BaseBEVBackbone / SECOND (3x3 convs, BatchNorm,
 * ReLU), the deblocks (transposed convs, BatchNorm, ReLU) concatenated,
 * the head's 1x1 convs. */
static gchar *
graph_json (const AnchorModel * m)
{
  GString *g = g_string_new (NULL);
  guint s, k, in = ANCHORMODEL_PFN_OUT;

  g_string_append_printf (g, "{\"input\": {\"name\": \"canvas\", \"batch\": 1, "
      "\"channels\": %d, \"height\": %d, \"width\": %d}, \"layers\": [",
      ANCHORMODEL_PFN_OUT, ANCHORMODEL_GRID, ANCHORMODEL_GRID);
  for (s = 0; s < N_STAGES; s++) {
    for (k = 0; k < 2; k++) {
      guint index = m->block_conv_offset + 3 * k;

      g_string_append_printf (g, "{\"name\": \"s%u.%u\", \"op\": \"conv\", "
          "\"out_channels\": %u, \"kernel\": 3, \"stride\": %u, "
          "\"padding\": 1, \"weight\": \"%s.%u.%u.weight\", "
          "\"norm\": \"%s.%u.%u\", \"norm_eps\": %g, \"relu\": true}, ", s, k,
          stage_channels[s], k == 0 ? 2 : 1, m->blocks, s, index, m->blocks,
          s, index + 1, BN_EPS);
    }
    in = stage_channels[s];
  }
  (void) in;
  for (s = 0; s < N_STAGES; s++)
    g_string_append_printf (g, "{\"name\": \"up%u\", \"op\": \"deconv\", "
        "\"input\": \"s%u.1\", \"out_channels\": %d, \"kernel\": %u, "
        "\"weight\": \"%s.%u.0.weight\", \"norm\": \"%s.%u.1\", "
        "\"norm_eps\": %g, \"relu\": true}, ", s, s, NECK_CHANNELS,
        neck_strides[s], m->deblocks, s, m->deblocks, s, BN_EPS);
  g_string_append (g, "{\"name\": \"features\", \"op\": \"concat\", "
      "\"inputs\": [\"up0\", \"up1\"]}, ");
  g_string_append_printf (g, "{\"name\": \"logits\", \"op\": \"conv\", "
      "\"input\": \"features\", \"out_channels\": %d, \"kernel\": 1, "
      "\"weight\": \"%s.weight\", \"bias\": \"%s.bias\"}, "
      "{\"name\": \"deltas\", \"op\": \"conv\", \"input\": \"features\", "
      "\"out_channels\": %u, \"kernel\": 1, \"weight\": \"%s.weight\", "
      "\"bias\": \"%s.bias\"}", ANCHORMODEL_ANCHORS * ANCHORMODEL_CLASSES,
      m->cls, m->cls, ANCHORMODEL_ANCHORS * code_size (m), m->box, m->box);
  if (dir_bins (m) > 0)
    g_string_append_printf (g, ", {\"name\": \"direction\", \"op\": "
        "\"conv\", \"input\": \"features\", \"out_channels\": %u, "
        "\"kernel\": 1, \"weight\": \"%s.weight\", \"bias\": \"%s.bias\"}",
        ANCHORMODEL_ANCHORS * dir_bins (m), m->dir, m->dir);
  g_string_append (g, "], \"outputs\": {\"cls\": \"logits\", "
      "\"box\": \"deltas\"");
  if (dir_bins (m) > 0)
    g_string_append (g, ", \"dir\": \"direction\"");
  g_string_append (g, "}}");
  return g_string_free (g, FALSE);
}

AnchorModel *
anchormodel_new (const AnchorModelOptions * options)
{
  AnchorModel *m = g_new0 (AnchorModel, 1);

  m->options = *options;
  if (options->mmdet3d) {
    m->pfn = "voxel_encoder.pfn_layers.0";
    m->blocks = "backbone.blocks";
    m->block_conv_offset = 0;
    m->deblocks = "neck.deblocks";
    m->cls = "bbox_head.conv_cls";
    m->box = "bbox_head.conv_reg";
    m->dir = "bbox_head.conv_dir_cls";
  } else {
    m->pfn = "vfe.pfn_layers.0";
    m->blocks = "backbone_2d.blocks";
    m->block_conv_offset = 1;
    m->deblocks = "backbone_2d.deblocks";
    m->cls = "dense_head.conv_cls";
    m->box = "dense_head.conv_box";
    m->dir = "dense_head.conv_dir_cls";
  }
  m->weights = tiny_model_new_empty (NULL);
  make_tensors (m);
  m->config = config_json (m);
  m->graph = graph_json (m);
  return m;
}

void
anchormodel_free (AnchorModel * m)
{
  tiny_model_free (m->weights);
  g_free (m->config);
  g_free (m->graph);
  g_free (m);
}

gchar *
anchormodel_write (AnchorModel * m, const gchar * old, const gchar * new,
    gboolean with_graph, const TinyModelMutation * mutation)
{
  gchar *config = NULL, *path;

  if (old == NULL || new != NULL)
    config = old ? tiny_model_replace_once (m->config, old, new) :
        g_strdup (m->config);
  if (config != NULL && with_graph) {
    gchar *with = g_strdup_printf ("%.*s, \"graph\": {\"bev\": %s}}",
        (gint) strlen (config) - 1, config, m->graph);

    g_free (config);
    config = with;
  }
  path = tiny_model_write (m->weights, config, mutation);
  g_free (config);
  return path;
}

/* ---- the decode, written out -------------------------------------- */

guint
anchormodel_anchor_sets (const AnchorModel * m, P3dcAnchor3dSet * sets)
{
  guint c;

  memset (sets, 0, sizeof (P3dcAnchor3dSet) * ANCHORMODEL_CLASSES);
  for (c = 0; c < ANCHORMODEL_CLASSES; c++) {
    const AnchorClass *a = class_of (m, c);
    P3dcAnchor3dSet *set = &sets[c];

    set->x_range[0] = 0.0;
    set->x_range[1] = 8.0;
    set->y_range[0] = -4.0;
    set->y_range[1] = 4.0;
    set->bottom = a->bottom;
    set->n_sizes = 1;
    memcpy (set->sizes[0], a->size, sizeof (a->size));
    set->n_rotations = 2;
    set->rotations[0] = 0.0;
    set->rotations[1] = 1.57;
    set->placement = m->options.mmdet3d ? P3DC_ANCHOR3D_CENTERS :
        P3DC_ANCHOR3D_SPAN;
  }
  return ANCHORMODEL_CLASSES;
}

void
anchormodel_decode_params (const AnchorModel * m, gboolean nms,
    P3dcAnchor3dParams * p)
{
  memset (p, 0, sizeof (*p));
  p->rules = m->options.mmdet3d ? P3DC_ANCHOR3D_MMDET3D :
      P3DC_ANCHOR3D_OPENPCDET;
  p->num_classes = ANCHORMODEL_CLASSES;
  p->code_size = code_size (m);
  p->dir_bins = dir_bins (m);
  p->dir_offset = m->options.mmdet3d ? (float) (-G_PI / 2) : 0.78539f;
  p->dir_limit_offset = 0.0f;
  p->score_threshold = 0.1f;
  p->per_class = m->options.per_class;
  p->nms = m->options.mmdet3d ? P3DC_ANCHOR3D_NMS_ROTATED :
      P3DC_ANCHOR3D_NMS_ROTATED_MMCV;
  p->nms_threshold = 0.01f;
  p->pre_max = m->options.mmdet3d ? 50 : 100;
  p->post_max = m->options.mmdet3d ? 30 : 40;
  if (!nms) {
    p->nms = P3DC_ANCHOR3D_NMS_NONE;
    p->post_max = m->options.mmdet3d ? ANCHORMODEL_CLASSES * p->pre_max :
        p->pre_max;
  }
}

guint
anchormodel_capacity (const AnchorModel * m, gboolean nms)
{
  P3dcAnchor3dParams p;
  guint lists;

  anchormodel_decode_params (m, nms, &p);
  if (m->options.mmdet3d)
    return MIN (p.post_max, ANCHORMODEL_CLASSES * p.pre_max);
  lists = m->options.per_class ? ANCHORMODEL_CLASSES : 1;
  return lists * MIN (p.pre_max, p.post_max);
}

/* ---- the brute force ---------------------------------------------- */

void
anchormodel_random_pillars (guint64 seed, guint count, AnchorModelPillars * p)
{
  gboolean used[ANCHORMODEL_GRID * ANCHORMODEL_GRID] = { FALSE };
  P3dTestRng rng;
  guint v, s, c;

  fail_unless (count <= ANCHORMODEL_MAX_VOXELS);
  memset (p, 0, sizeof (*p));
  p3d_test_rng_init (&rng, seed);
  for (v = 0; v < count; v++) {
    guint cell, points = 1 + p3d_test_rng_below (&rng, ANCHORMODEL_MAX_POINTS);
    gfloat cx, cy;

    do
      cell = p3d_test_rng_below (&rng, ANCHORMODEL_GRID * ANCHORMODEL_GRID);
    while (used[cell]);
    used[cell] = TRUE;
    p->coords[v * 4 + 2] = cell / ANCHORMODEL_GRID;
    p->coords[v * 4 + 3] = cell % ANCHORMODEL_GRID;
    cx = 0.25f + 0.5f * (cell % ANCHORMODEL_GRID);
    cy = -3.75f + 0.5f * (cell / ANCHORMODEL_GRID);
    for (s = 0; s < points; s++) {
      gfloat *f = p->features + (v * ANCHORMODEL_MAX_POINTS + s) *
          ANCHORMODEL_PFN_IN;

      /* x y z i, offsets from the mean, from the centre */
      f[0] = cx + p3d_test_rng_uniform (&rng, -0.25f, 0.25f);
      f[1] = cy + p3d_test_rng_uniform (&rng, -0.25f, 0.25f);
      f[2] = p3d_test_rng_uniform (&rng, -3.0f, 1.0f);
      f[3] = p3d_test_rng_uniform (&rng, 0.0f, 1.0f);
      for (c = 4; c < 7; c++)
        f[c] = p3d_test_rng_uniform (&rng, -0.5f, 0.5f);
      f[7] = f[0] - cx;
      f[8] = f[1] - cy;
      f[9] = f[2] + 1.0f;
    }
  }
  p->count = count;
}

static const gfloat *
lookup (gpointer user_data, const gchar * name)
{
  return tiny_model_get (user_data, name)->values;
}

gfloat *
anchormodel_oracle_canvas (AnchorModel * m, const AnchorModelPillars * p)
{
  gfloat *canvas = g_new0 (gfloat, ANCHORMODEL_PFN_OUT * ANCHORMODEL_GRID *
      ANCHORMODEL_GRID);
  gchar *name = g_strdup_printf ("%s.linear.weight", m->pfn);
  const gfloat *w = lookup (m->weights, name), *bn[4];
  static const gchar *const parts[4] = {
    "weight", "bias", "running_mean", "running_var"
  };
  guint v, s, o, i;

  g_free (name);
  for (i = 0; i < 4; i++) {
    name = g_strdup_printf ("%s.norm.%s", m->pfn, parts[i]);
    bn[i] = lookup (m->weights, name);
    g_free (name);
  }
  for (v = 0; v < p->count; v++) {
    guint y = p->coords[v * 4 + 2], x = p->coords[v * 4 + 3];

    for (o = 0; o < ANCHORMODEL_PFN_OUT; o++) {
      gdouble best = 0.0;

      for (s = 0; s < ANCHORMODEL_MAX_POINTS; s++) {
        const gfloat *f = p->features + (v * ANCHORMODEL_MAX_POINTS + s) *
            ANCHORMODEL_PFN_IN;
        gdouble sum = 0.0, out;

        for (i = 0; i < ANCHORMODEL_PFN_IN; i++)
          sum += (gdouble) w[o * ANCHORMODEL_PFN_IN + i] * f[i];
        out = (sum - bn[2][o]) / sqrt ((gdouble) bn[3][o] + BN_EPS) *
            bn[0][o] + bn[1][o];
        /* ReLU, then the maximum over the slots (all of them >= 0) */
        best = MAX (best, out);
      }
      canvas[(o * ANCHORMODEL_GRID + y) * ANCHORMODEL_GRID + x] = (gfloat) best;
    }
  }
  return canvas;
}

/* A head output of the oracle rounded to float, and its view. */
static gfloat *
head_map (GHashTable * values, const P3dModelGraph * graph, const gchar * name,
    P3dcMapView * view)
{
  const OracleValue *v = NULL;
  gfloat *data;
  gsize i, n;
  guint o;

  for (o = 0; o < graph->outputs->len; o++) {
    const P3dModelGraphOutput *out = graph->outputs->pdata[o];

    if (strcmp (out->name, name) == 0)
      v = g_hash_table_lookup (values, out->tensor);
  }
  memset (view, 0, sizeof (*view));
  if (v == NULL)
    return NULL;
  n = (gsize) v->c * v->h * v->w;
  data = g_new (gfloat, n);
  for (i = 0; i < n; i++)
    data[i] = (gfloat) v->v[i];
  view->data = data;
  view->half = 0;
  view->channel_stride = (gsize) v->h * v->w;
  view->row_stride = v->w;
  view->column_stride = 1;
  view->batch_stride = n;
  return data;
}

guint
anchormodel_oracle_boxes (AnchorModel * m, gboolean nms, const gfloat * canvas,
    P3dcBox3d ** boxes)
{
  const ModelOracleTensors tensors = { lookup, m->weights };
  GError *error = NULL;
  P3dModelGraph *graph = p3d_model_graph_parse ("bev", m->graph, &error);
  P3dcAnchor3dSet sets[ANCHORMODEL_CLASSES];
  P3dcAnchor3dTable table;
  P3dcAnchor3dParams params;
  P3dcAnchor3dMaps maps;
  P3dcAnchor3dOutput output;
  GHashTable *values;
  gfloat *cls, *box, *dir;
  guint32 count = 0;
  guint capacity = anchormodel_capacity (m, nms);

  fail_unless (graph != NULL, "%s", error ? error->message : "");
  values = model_oracle_evaluate (graph, &tensors, canvas);
  cls = head_map (values, graph, "cls", &maps.cls);
  box = head_map (values, graph, "box", &maps.box);
  dir = head_map (values, graph, "dir", &maps.dir);
  fail_unless_equals_int (p3dc_anchor3d_table_init (&table, sets,
          anchormodel_anchor_sets (m, sets), ANCHORMODEL_HEAD_GRID,
          ANCHORMODEL_HEAD_GRID), P3DC_OK);
  anchormodel_decode_params (m, nms, &params);
  fail_unless_equals_int (p3dc_anchor3d_output_capacity (&params, &table),
      capacity);
  *boxes = g_new0 (P3dcBox3d, capacity);
  output.boxes = *boxes;
  output.count = &count;
  output.velocity = NULL;
  fail_unless_equals_int (p3dc_anchor3d_decode_cpu (&params, &table, &maps,
          &output), P3DC_OK);
  p3dc_anchor3d_table_clear (&table);
  g_free (cls);
  g_free (box);
  g_free (dir);
  g_hash_table_unref (values);
  p3d_model_graph_free (graph);
  return count;
}

static gdouble
yaw_difference (gdouble a, gdouble b)
{
  gdouble d = fmod (fabs (a - b), 2 * G_PI);

  return MIN (d, 2 * G_PI - d);
}

static gdouble
box_difference (const P3dcBox3d * a, const P3dcBox3d * e)
{
  const gfloat av[7] = { a->x, a->y, a->z, a->dx, a->dy, a->dz, a->score };
  const gfloat ev[7] = { e->x, e->y, e->z, e->dx, e->dy, e->dz, e->score };
  gdouble worst = yaw_difference (a->yaw, e->yaw) / (1 + fabs (e->yaw));
  guint k;

  for (k = 0; k < 7; k++)
    worst = MAX (worst, fabs (av[k] - ev[k]) / (1 + fabs (ev[k])));
  return worst;
}

gdouble
anchormodel_match_boxes (const P3dcBox3d * actual, guint n_actual,
    const P3dcBox3d * expected, guint n_expected, gdouble tolerance,
    const gchar * what)
{
  gboolean *taken = g_new0 (gboolean, MAX (n_actual, 1));
  gdouble worst = 0;
  guint i, j;

  fail_unless (n_actual == n_expected, "%s: %u boxes, expected %u", what,
      n_actual, n_expected);
  for (i = 0; i < n_expected; i++) {
    gdouble best = G_MAXDOUBLE;
    guint best_j = 0;

    for (j = 0; j < n_actual; j++) {
      gdouble d;

      if (taken[j] || actual[j].label != expected[i].label)
        continue;
      d = box_difference (&actual[j], &expected[i]);
      if (d < best) {
        best = d;
        best_j = j;
      }
    }
    fail_unless (best <= tolerance, "%s: expected box %u (x %g y %g z %g "
        "yaw %g score %g label %d) has no box within %g (closest %g)", what,
        i, expected[i].x, expected[i].y, expected[i].z, expected[i].yaw,
        expected[i].score, expected[i].label, tolerance, best);
    taken[best_j] = TRUE;
    worst = MAX (worst, best);
  }
  g_free (taken);
  return worst;
}
