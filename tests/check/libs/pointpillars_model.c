/* The PointPillars model family (caps/p3dmodel-pointpillars.c) on tiny
 * models in both frameworks' conventions (p3dtest-anchormodel.h): the
 * model each loads (its pillar net, the "bev" network's head outputs), the
 * network its config implies equal to the one the test states as an
 * explicit graph, that network and the pillar net against the float64
 * oracle from the raw tensors, the generic decoder equal to the anchor
 * decode's reference with parameters written out here (with and without
 * the model's NMS), and every bad config or tensor refused with a message
 * naming the key or the tensor. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>

#include "p3dmodel.h"
#include "p3dtest.h"
#include "p3dtest-anchormodel.h"
#include "p3dtest-modeloracle.h"
#include "pillarencode.h"

static const AnchorModelOptions models[] = {
  {FALSE, FALSE, FALSE, FALSE, 11},     /* OpenPCDet pointpillar.yaml */
  {FALSE, TRUE, FALSE, FALSE, 12},      /* MULTI_CLASSES_NMS */
  {TRUE, FALSE, FALSE, FALSE, 13},      /* mmdetection3d kitti-3d-3class */
  {TRUE, FALSE, TRUE, TRUE, 14},        /* no direction, velocity */
};

static gchar *
describe (const AnchorModelOptions * o)
{
  return g_strdup_printf ("%s%s%s%s", o->mmdet3d ? "mmdet3d" : "openpcdet",
      o->per_class ? ", per class" : "", o->no_direction ?
      ", no direction" : "", o->velocity ? ", velocity" : "");
}

static P3dModel *
load (const gchar * path, GError ** error)
{
  P3dWeights *weights = p3d_weights_open (path, error);
  P3dModel *model;

  if (weights == NULL)
    return NULL;
  model = p3d_model_new (weights, error);
  /* the model keeps nothing of the file */
  p3d_weights_free (weights);
  return model;
}

/* ---- what a file gives ------------------------------------------------- */

static void
assert_same_network (const P3dModelNetwork * x, const P3dModelNetwork * y)
{
  const P3dcConvNetDesc *a = &x->desc, *b = &y->desc;
  guint l, o;

  fail_unless_equals_int (a->n_buffers, b->n_buffers);
  fail_unless (memcmp (a->buffers, b->buffers,
          a->n_buffers * sizeof (P3dcConvBufferDesc)) == 0);
  fail_unless_equals_int (a->n_layers, b->n_layers);
  for (l = 0; l < a->n_layers; l++) {
    P3dcConvLayer la = a->layers[l], lb = b->layers[l];
    P3dcConvGeometry g;
    gsize n;

    p3dc_convnet_layer_geometry (&la, &g);
    n = (gsize) la.in_channels / g.groups * la.out_channels * g.kernel[0] *
        g.kernel[1];
    fail_unless (memcmp (la.weight, lb.weight, n * sizeof (gfloat)) == 0,
        "layer %u: weights differ", l);
    fail_unless (memcmp (la.bias, lb.bias,
            la.out_channels * sizeof (gfloat)) == 0, "layer %u: bias", l);
    la.weight = lb.weight = NULL;
    la.bias = lb.bias = NULL;
    fail_unless (memcmp (&la, &lb, sizeof la) == 0, "layer %u differs", l);
  }
  /* the outputs the test's graph names (the family's has "neck" too) */
  for (o = 0; o < y->n_outputs; o++) {
    const P3dModelOutput *q = &y->outputs[o];
    const P3dModelOutput *p = p3d_model_network_get_output (x, q->name);

    fail_unless (p != NULL && q->buffer == p->buffer
        && q->channel_offset == p->channel_offset
        && q->channels == p->channels, "output %s", q->name);
  }
}

/* Each model loads, with the pillar net and head outputs its config
 * implies, and the network its config implies is the one the test states
 * as a graph. */
GST_START_TEST (test_load)
{
  const AnchorModelOptions *options = &models[__i__];
  AnchorModel *m = anchormodel_new (options);
  gchar *implied_path = anchormodel_write (m, NULL, NULL, FALSE, NULL);
  gchar *given_path = anchormodel_write (m, NULL, NULL, TRUE, NULL);
  GError *error = NULL;
  P3dModel *implied = load (implied_path, &error), *given;
  const P3dModelNetwork *network;
  const P3dModelOutput *out;
  guint code = options->velocity ? 9 : 7;

  fail_unless (implied != NULL, "%s", error ? error->message : "");
  given = load (given_path, &error);
  fail_unless (given != NULL, "%s", error ? error->message : "");
  fail_unless_equals_string (implied->architecture, "pointpillars");
  fail_unless (implied->pillars != NULL);
  fail_unless_equals_int (implied->pillars->point_channels, 4);
  fail_unless_equals_int (implied->pillars->features,
      P3D_FEATURE_SET_POINTPILLARS_10);
  fail_unless_equals_int (implied->pillars->in_channels, ANCHORMODEL_PFN_IN);
  fail_unless_equals_int (implied->pillars->out_channels, ANCHORMODEL_PFN_OUT);
  fail_unless_equals_int (implied->pillars->grid[0], ANCHORMODEL_GRID);
  fail_unless_equals_int (implied->pillars->grid[1], ANCHORMODEL_GRID);
  fail_unless_equals_int (implied->pillars->max_points, ANCHORMODEL_MAX_POINTS);
  fail_unless_equals_float (implied->pillars->point_cloud_range[3], 8.0);
  network = p3d_model_get_network (implied, "bev");
  fail_unless (network != NULL);
  fail_unless_equals_int (network->desc.buffers[0].channels,
      ANCHORMODEL_PFN_OUT);
  out = p3d_model_network_get_output (network, "cls");
  fail_unless (out != NULL);
  fail_unless_equals_int (out->channels,
      ANCHORMODEL_ANCHORS * ANCHORMODEL_CLASSES);
  fail_unless_equals_int (network->desc.buffers[out->buffer].height,
      ANCHORMODEL_HEAD_GRID);
  out = p3d_model_network_get_output (network, "box");
  fail_unless (out != NULL);
  fail_unless_equals_int (out->channels, ANCHORMODEL_ANCHORS * code);
  out = p3d_model_network_get_output (network, "dir");
  if (options->no_direction)
    fail_unless (out == NULL);
  else
    fail_unless (out != NULL && out->channels == ANCHORMODEL_ANCHORS * 2);
  assert_same_network (network, p3d_model_get_network (given, "bev"));
  fail_unless (memcmp (implied->pillars->weight, given->pillars->weight,
          ANCHORMODEL_PFN_IN * ANCHORMODEL_PFN_OUT * sizeof (gfloat)) == 0);

  p3d_model_free (given);
  p3d_model_free (implied);
  g_unlink (implied_path);
  g_unlink (given_path);
  g_free (implied_path);
  g_free (given_path);
  anchormodel_free (m);
}

GST_END_TEST;

/* ---- against the float64 oracle ----------------------------------------- */

static gfloat *
random_canvas (guint64 seed)
{
  gsize n = ANCHORMODEL_PFN_OUT * ANCHORMODEL_GRID * ANCHORMODEL_GRID, i;
  gfloat *canvas = g_new (gfloat, n);
  P3dTestRng rng;

  p3d_test_rng_init (&rng, seed);
  for (i = 0; i < n; i++)
    canvas[i] = p3d_test_rng_below (&rng, 3) == 0 ? 0.0f :
        p3d_test_rng_uniform (&rng, 0.0f, 3.0f);
  return canvas;
}

static const gfloat *
tensor_values (gpointer user_data, const gchar * name)
{
  return tiny_model_get (user_data, name)->values;
}

/* The pillar net (pillarencode's reference with the model's folded layer)
 * and the "bev" network (the compute library's reference) against the
 * brute force from the raw tensors. */
GST_START_TEST (test_against_oracle)
{
  const AnchorModelOptions *options = &models[__i__];
  AnchorModel *m = anchormodel_new (options);
  gchar *path = anchormodel_write (m, NULL, NULL, FALSE, NULL);
  GError *error = NULL;
  P3dModel *model = load (path, &error);
  const P3dModelNetwork *network;
  P3dModelGraph *graph = p3d_model_graph_parse ("bev", m->graph, &error);
  const ModelOracleTensors tensors = { tensor_values, m->weights };
  P3dcPillarEncodeParams encode = { 0, };
  P3dcPillarEncodeInput input;
  AnchorModelPillars pillars;
  gfloat *expected_canvas, *canvas, *features;
  float **buffers;
  GHashTable *expect;
  guint32 dropped = 0;
  gdouble worst = 0;
  gsize i, n;
  guint o;

  fail_unless (model != NULL && graph != NULL, "%s",
      error ? error->message : "");
  network = p3d_model_get_network (model, "bev");

  /* the pillar net */
  anchormodel_random_pillars (100 + __i__, 40, &pillars);
  expected_canvas = anchormodel_oracle_canvas (m, &pillars);
  encode.in_channels = model->pillars->in_channels;
  encode.out_channels = model->pillars->out_channels;
  encode.max_points = ANCHORMODEL_MAX_POINTS;
  encode.max_voxels = ANCHORMODEL_MAX_VOXELS;
  encode.grid_x = encode.grid_y = ANCHORMODEL_GRID;
  n = ANCHORMODEL_PFN_OUT * ANCHORMODEL_GRID * ANCHORMODEL_GRID;
  canvas = g_new (gfloat, n);
  features = pillars.features;
  input.features = features;
  input.coords = pillars.coords;
  input.count = &pillars.count;
  fail_unless_equals_int (p3dc_pillarencode_cpu (&encode,
          model->pillars->weight, model->pillars->bias, &input, canvas,
          &dropped), P3DC_OK);
  fail_unless_equals_int (dropped, 0);
  for (i = 0; i < n; i++)
    fail_unless (fabs (canvas[i] - expected_canvas[i]) <= 1e-5 * (1 +
            fabs (expected_canvas[i])), "canvas %" G_GSIZE_FORMAT ": %.9g, "
        "brute force %.9g", i, canvas[i], expected_canvas[i]);

  /* the network */
  g_free (canvas);
  canvas = random_canvas (200 + __i__);
  buffers = p3dc_convnet_cpu_buffers_new (&network->desc);
  fail_unless_equals_int (p3dc_convnet_cpu (&network->desc, canvas, buffers),
      P3DC_OK);
  expect = model_oracle_evaluate (graph, &tensors, canvas);
  for (o = 0; o < graph->outputs->len; o++) {
    const P3dModelGraphOutput *named = graph->outputs->pdata[o];
    const P3dModelOutput *out = p3d_model_network_get_output (network,
        named->name);
    const OracleValue *v = g_hash_table_lookup (expect, named->tensor);
    P3dcMapView view;
    guint c, y, x;

    fail_unless (out != NULL, "no output %s", named->name);
    fail_unless_equals_int (out->channels, v->c);
    p3dc_convnet_cpu_view (&network->desc, out->buffer, buffers[out->buffer],
        &view);
    p3dc_map_view_offset_channels (&view, out->channel_offset);
    for (c = 0; c < v->c; c++)
      for (y = 0; y < v->h; y++)
        for (x = 0; x < v->w; x++) {
          gdouble got = ((const gfloat *) view.data)[c * view.channel_stride +
              y * view.row_stride + x];
          gdouble want = *model_oracle_at (v, 0, c, y, x);

          worst = MAX (worst, fabs (got - want) / (1 + fabs (want)));
          fail_unless (fabs (got - want) <= 1e-5 * (1 + fabs (want)),
              "output %s at c %u y %u x %u: %.9g, the oracle %.9g",
              named->name, c, y, x, got, want);
        }
  }
  GST_INFO ("largest difference %g", worst);

  g_hash_table_unref (expect);
  p3dc_convnet_cpu_buffers_free (&network->desc, buffers);
  g_free (canvas);
  g_free (expected_canvas);
  p3d_model_graph_free (graph);
  p3d_model_free (model);
  g_unlink (path);
  g_free (path);
  anchormodel_free (m);
}

GST_END_TEST;

/* ---- the decoder ------------------------------------------------------ */

/* The generic decoder decodes what p3dc_anchor3d_decode_cpu() does with
 * the parameters the test writes out; its capacity is theirs; without the
 * model's NMS it keeps every box the NMS keeps, and more. */
GST_START_TEST (test_decoder)
{
  const AnchorModelOptions *options = &models[__i__];
  AnchorModel *m = anchormodel_new (options);
  gchar *path = anchormodel_write (m, NULL, NULL, FALSE, NULL);
  GError *error = NULL;
  P3dModel *model = load (path, &error);
  const P3dModelNetwork *network;
  P3dcAnchor3dSet sets[ANCHORMODEL_CLASSES];
  P3dcAnchor3dTable table;
  gfloat *canvas = random_canvas (300 + __i__);
  float **buffers;
  P3dcBox3d *kept = NULL;
  guint32 n_kept = 0;
  guint nms;

  fail_unless (model != NULL, "%s", error ? error->message : "");
  network = p3d_model_get_network (model, "bev");
  fail_unless (p3d_model_decoder_new (model, "image", TRUE, &error) == NULL);
  fail_unless (strstr (error->message, "\"image\"") != NULL);
  g_clear_error (&error);
  buffers = p3dc_convnet_cpu_buffers_new (&network->desc);
  fail_unless_equals_int (p3dc_convnet_cpu (&network->desc, canvas, buffers),
      P3DC_OK);
  fail_unless_equals_int (p3dc_anchor3d_table_init (&table, sets,
          anchormodel_anchor_sets (m, sets), ANCHORMODEL_HEAD_GRID,
          ANCHORMODEL_HEAD_GRID), P3DC_OK);
  for (nms = 0; nms < 2; nms++) {
    P3dModelDecoder *decoder = p3d_model_decoder_new (model, "bev", !nms,
        &error);
    guint capacity = anchormodel_capacity (m, !nms), k;
    P3dcBox3d *mine = g_new0 (P3dcBox3d, capacity);
    P3dcBox3d *theirs = g_new0 (P3dcBox3d, capacity);
    gfloat *velocity = g_new0 (gfloat, 2 * capacity);
    gfloat *their_velocity = g_new0 (gfloat, 2 * capacity);
    guint32 count_mine = 0, count_theirs = 0;
    P3dModelBoxes boxes = { mine, &count_mine, velocity };
    P3dcAnchor3dParams params;
    P3dcAnchor3dMaps maps;
    P3dcAnchor3dOutput output = { theirs, &count_theirs, their_velocity };
    const gchar *names[3] = { "cls", "box", "dir" };
    P3dcMapView *views[3] = { &maps.cls, &maps.box, &maps.dir };

    fail_unless (decoder != NULL, "%s", error ? error->message : "");
    fail_unless_equals_int (p3d_model_decoder_get_capacity (decoder), capacity);
    /* the velocity tensor of bevdetect's output follows code size 9 */
    fail_unless_equals_int (p3d_model_decoder_has_velocity (decoder),
        options->velocity);
    fail_unless_equals_int (p3d_model_decoder_run_cpu (decoder, buffers,
            &boxes), P3DC_OK);
    anchormodel_decode_params (m, !nms, &params);
    memset (&maps, 0, sizeof maps);
    for (k = 0; k < 3; k++) {
      const P3dModelOutput *out = p3d_model_network_get_output (network,
          names[k]);

      if (out == NULL)
        continue;
      p3dc_convnet_cpu_view (&network->desc, out->buffer,
          buffers[out->buffer], views[k]);
      p3dc_map_view_offset_channels (views[k], out->channel_offset);
    }
    fail_unless_equals_int (p3dc_anchor3d_decode_cpu (&params, &table, &maps,
            &output), P3DC_OK);
    fail_unless (count_mine > 0);
    fail_unless_equals_int (count_mine, count_theirs);
    fail_unless (memcmp (mine, theirs, capacity * sizeof (P3dcBox3d)) == 0);
    fail_unless (memcmp (velocity, their_velocity,
            2 * capacity * sizeof (gfloat)) == 0);
    if (nms == 0) {
      kept = g_memdup2 (mine, count_mine * sizeof (P3dcBox3d));
      n_kept = count_mine;
    } else {
      guint i, j;

      /* the NMS removed something, and kept only decoded boxes */
      fail_unless (count_mine > n_kept, "%u boxes without the NMS, %u with",
          count_mine, n_kept);
      for (i = 0; i < n_kept; i++) {
        for (j = 0; j < count_mine; j++)
          if (memcmp (&kept[i], &mine[j], sizeof (P3dcBox3d)) == 0)
            break;
        fail_unless (j < count_mine, "kept box %u is not a decoded box", i);
      }
    }
    if (options->velocity) {
      gboolean moving = FALSE;

      for (k = 0; k < 2 * count_mine; k++)
        moving |= velocity[k] != 0.0f;
      fail_unless (moving, "code size 9 gave no velocity");
    }
    GST_INFO ("%s NMS: %u boxes of %u", nms ? "no" : "the model's",
        count_mine, capacity);
    g_free (mine);
    g_free (theirs);
    g_free (velocity);
    g_free (their_velocity);
    p3d_model_decoder_free (decoder);
  }
  g_free (kept);
  p3dc_anchor3d_table_clear (&table);
  p3dc_convnet_cpu_buffers_free (&network->desc, buffers);
  g_free (canvas);
  p3d_model_free (model);
  g_unlink (path);
  g_free (path);
  anchormodel_free (m);
}

GST_END_TEST;

/* The whole network stage against the brute force: the canvas of the
 * brute-force pillar net through the model's network and decoder, and
 * through the oracle and the decode's reference, give the same boxes. */
GST_START_TEST (test_boxes_against_oracle)
{
  const AnchorModelOptions *options = &models[__i__];
  AnchorModel *m = anchormodel_new (options);
  gchar *path = anchormodel_write (m, NULL, NULL, FALSE, NULL);
  GError *error = NULL;
  P3dModel *model = load (path, &error);
  P3dModelDecoder *decoder;
  const P3dModelNetwork *network;
  AnchorModelPillars pillars;
  gfloat *canvas;
  float **buffers;
  P3dcBox3d *expected, *actual;
  guint32 count = 0, n_expected, capacity = anchormodel_capacity (m, TRUE);
  P3dModelBoxes boxes;
  gchar *what = describe (options);
  gdouble worst;

  fail_unless (model != NULL, "%s", error ? error->message : "");
  network = p3d_model_get_network (model, "bev");
  decoder = p3d_model_decoder_new (model, "bev", TRUE, &error);
  fail_unless (decoder != NULL);
  anchormodel_random_pillars (400 + __i__, 50, &pillars);
  canvas = anchormodel_oracle_canvas (m, &pillars);
  n_expected = anchormodel_oracle_boxes (m, TRUE, canvas, &expected);
  buffers = p3dc_convnet_cpu_buffers_new (&network->desc);
  fail_unless_equals_int (p3dc_convnet_cpu (&network->desc, canvas, buffers),
      P3DC_OK);
  actual = g_new0 (P3dcBox3d, capacity);
  boxes.boxes = actual;
  boxes.count = &count;
  boxes.velocity = NULL;
  fail_unless_equals_int (p3d_model_decoder_run_cpu (decoder, buffers,
          &boxes), P3DC_OK);
  fail_unless (n_expected > 0);
  worst = anchormodel_match_boxes (actual, count, expected, n_expected, 1e-4,
      what);
  GST_INFO ("%s: %u boxes, largest difference %g", what, count, worst);

  g_free (what);
  g_free (actual);
  g_free (expected);
  g_free (canvas);
  p3dc_convnet_cpu_buffers_free (&network->desc, buffers);
  p3d_model_decoder_free (decoder);
  p3d_model_free (model);
  g_unlink (path);
  g_free (path);
  anchormodel_free (m);
}

GST_END_TEST;

/* ---- bad files ------------------------------------------------------- */

/* A config with @old replaced by @new (in the OpenPCDet model, or the
 * mmdetection3d one), or a tensor mutation, and how it must be refused. */
typedef struct
{
  gboolean mmdet3d;
  const gchar *old;
  const gchar *new;
  TinyModelMutation mutation;
  gint code;
  const gchar *words[4];        /* NULL-terminated */
} BadModel;

#define NO_CHANGE "\"version\": 1", "\"version\": 1"
#define NO_MUTATION {NULL, NULL, 0, {0}, NULL, NULL}
#define BAD P3D_WEIGHTS_ERROR_BAD_METADATA

/* 64 anchors in one set: 8 sizes of 8 rotations */
#define SIZES_8 "[[3.9, 1.6, 1.56], [3.9, 1.6, 1.56], [3.9, 1.6, 1.56], " \
  "[3.9, 1.6, 1.56], [3.9, 1.6, 1.56], [3.9, 1.6, 1.56], [3.9, 1.6, 1.56], " \
  "[3.9, 1.6, 1.56]]"
#define ROTATIONS_8 "[0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4]"

static const BadModel bad_models[] = {
  /* the document */
  {FALSE, "\"framework\": \"openpcdet\"", "\"framework\": \"pcdet\"",
      NO_MUTATION, BAD, {"\"framework\"", "openpcdet or mmdet3d"}},
  {FALSE, "\"framework\": \"openpcdet\", ", "", NO_MUTATION, BAD,
      {"\"framework\"", "missing"}},
  {FALSE, "\"grid\": [16, 16, 1]", "\"grid\": [17, 16, 1]", NO_MUTATION, BAD,
      {"\"grid\"", "disagrees"}},
  {FALSE, "\"layer_strides\": [2, 2]", "\"layer_strides\": [2, 2, 2]",
      NO_MUTATION, BAD, {"\"backbone.layer_strides\"", "2 entries"}},
  {FALSE, "\"tensors\": {", "\"tensors\": {\"vfe\": \"vfe\", ", NO_MUTATION,
      BAD, {"\"tensors.vfe\" is not a key", "block_conv_offset"}},
  {FALSE, "\"pfn\": \"vfe.pfn_layers.0\"", "\"pfn\": \"\"", NO_MUTATION, BAD,
      {"\"tensors.pfn\"", "state_dict prefix"}},
  {FALSE, ", \"dir\": \"dense_head.conv_dir_cls\"", "", NO_MUTATION, BAD,
      {"\"tensors.dir\"", "missing"}},
  {FALSE, "\"block_conv_offset\": 1", "\"block_conv_offset\": 17",
      NO_MUTATION, BAD, {"\"tensors.block_conv_offset\"", "0..16"}},
  {FALSE, "\"class_names\": [\"car\", \"pedestrian\"]",
        "\"class_names\": []", NO_MUTATION, BAD, {"\"head.class_names\"",
          "1 to 32"}},
  {FALSE, "\"class_names\": [\"car\", \"pedestrian\"]",
        "\"class_names\": [\"car\", 2]", NO_MUTATION, BAD,
      {"\"head.class_names\"", "strings"}},
  {FALSE, "\"placement\": \"span\", \"feature_map_stride\": 2}]",
        "\"placement\": \"middle\", \"feature_map_stride\": 2}]",
        NO_MUTATION, BAD, {"\"head.anchors[1].placement\"",
          "span, centers or corners"}},
  {FALSE, "\"sizes\": [[3.9, 1.6, 1.56]]", "\"sizes\": [[3.9, 1.6]]",
      NO_MUTATION, BAD, {"\"head.anchors[0].sizes\"", "entry 0"}},
  {FALSE, "\"sizes\": [[0.8, 0.6, 1.73]]", "\"sizes\": [[0.8, -0.6, 1.73]]",
      NO_MUTATION, BAD, {"\"head.anchors[1].sizes\"", "entry 0"}},
  {FALSE, "\"bottom\": -1.78", "\"bottom\": \"low\"", NO_MUTATION, BAD,
      {"\"head.anchors[0].bottom\""}},
  {FALSE, "\"sizes\": [[3.9, 1.6, 1.56]], \"rotations\": [0.0, 1.57]",
        "\"sizes\": [[3.9, 1.6, 1.56]], \"rotations\": []", NO_MUTATION, BAD,
      {"\"head.anchors[0].rotations\"", "1 to 8 entries"}},
  {FALSE, "\"sizes\": [[3.9, 1.6, 1.56]], \"rotations\": [0.0, 1.57]",
        "\"sizes\": " SIZES_8 ", \"rotations\": " ROTATIONS_8, NO_MUTATION,
      BAD, {"\"head.anchors\"", "66 anchors a location", "64"}},
  {FALSE, "\"placement\": \"span\", \"feature_map_stride\": 2}, ",
        "\"placement\": \"span\", \"feature_map_stride\": 4}, ", NO_MUTATION,
        BAD, {"head.anchors[0].feature_map_stride 4 disagrees",
          "16 x 16 grid to 8 x 8"}},
  {FALSE, "\"x_range\": [0.0, 8.0], \"y_range\": [-4.0, 4.0], \"bottom\": "
        "-1.78", "\"x_range\": [0.0, 8.0], \"z_range\": [-4.0, 4.0], "
        "\"bottom\": -1.78", NO_MUTATION, BAD,
      {"\"head.anchors[0].z_range\" is not a key"}},
  {FALSE, "\"code_size\": 7", "\"code_size\": 8", NO_MUTATION, BAD,
      {"\"head.code_size\"", "7, or 9"}},
  {FALSE, "\"code_size\": 7", "\"code_size\": 7, \"iou\": true", NO_MUTATION,
      BAD, {"\"head.iou\" is not a key"}},
  {FALSE, "\"bins\": 2", "\"bins\": 0", NO_MUTATION, BAD,
      {"\"head.direction.bins\"", "1..16"}},
  {TRUE, "\"bins\": 2", "\"bins\": 4", NO_MUTATION, BAD,
      {"\"head.direction.bins\"", "must be 2"}},
  {FALSE, "\"nms\": \"rotated-mmcv\"", "\"nms\": \"nms_gpu\"", NO_MUTATION,
      BAD, {"\"post.nms\"", "rotated, rotated-mmcv or aligned"}},
  {FALSE, "\"pre_max\": 100", "\"pre_max\": 5000", NO_MUTATION, BAD,
      {"\"post.pre_max\"", "1..4096"}},
  {FALSE, "\"post_max\": 40", "\"post_max\": 0", NO_MUTATION, BAD,
      {"\"post.post_max\""}},
  {FALSE, "\"score_threshold\": 0.1", "\"score_threshold\": 1.5",
      NO_MUTATION, BAD, {"\"post.score_threshold\"", "[0, 1]"}},
  {FALSE, "\"per_class\": false", "\"per_class\": \"no\"", NO_MUTATION, BAD,
      {"\"post.per_class\"", "true or false"}},
  {FALSE, "\"post\": {", "\"post\": {\"max_num\": 3, ", NO_MUTATION, BAD,
      {"\"post.max_num\" is not a key"}},
  /* a config with fewer layers or heads than the weights */
  {FALSE, "\"layer_nums\": [1, 1]", "\"layer_nums\": [1, 0]", NO_MUTATION,
        BAD, {"'backbone_2d.blocks.1.4.weight'", "belongs to no layer",
          "does not match the weights"}},
  {FALSE, "\"direction\": {\"bins\": 2, \"offset\": 0.78539000000000003, "
        "\"limit_offset\": 0.0}", "\"direction\": null", NO_MUTATION, BAD,
      {"'dense_head.conv_dir_cls.", "belongs to no layer"}},
  {TRUE, "\"pfn\": \"voxel_encoder.pfn_layers.0\"",
        "\"pfn\": \"pts_voxel_encoder.pfn_layers.0\"", NO_MUTATION,
        P3D_WEIGHTS_ERROR_MISSING_TENSOR,
      {"'pts_voxel_encoder.pfn_layers.0.linear.weight'"}},
  /* tensors */
  {FALSE, NO_CHANGE, {"backbone_2d.deblocks.1.1.running_var", NULL, 0, {0},
          NULL, NULL}, P3D_WEIGHTS_ERROR_MISSING_TENSOR,
      {"'backbone_2d.deblocks.1.1.running_var'"}},
  {FALSE, NO_CHANGE, {"dense_head.conv_box.bias", NULL, 0, {0}, NULL, NULL},
      P3D_WEIGHTS_ERROR_MISSING_TENSOR, {"'dense_head.conv_box.bias'"}},
  {FALSE, NO_CHANGE, {NULL, "dense_head.conv_cls.weight", 4, {6, 16, 1, 1},
          NULL, NULL}, P3D_WEIGHTS_ERROR_BAD_SHAPE,
      {"'dense_head.conv_cls.weight'", "[6, 16, 1, 1]", "[8, 16, 1, 1]"}},
  {FALSE, "\"code_size\": 7", "\"code_size\": 9", NO_MUTATION,
        P3D_WEIGHTS_ERROR_BAD_SHAPE, {"'dense_head.conv_box.weight'",
          "[28, 16, 1, 1]", "[36, 16, 1, 1]"}},
  {FALSE, NO_CHANGE, {NULL, "vfe.pfn_layers.0.linear.weight", 2, {8, 11},
          NULL, NULL}, P3D_WEIGHTS_ERROR_BAD_SHAPE,
      {"'vfe.pfn_layers.0.linear.weight'", "[8, 11]", "[8, 10]"}},
  {TRUE, NO_CHANGE, {NULL, "backbone.blocks.0.0.weight", 4, {8, 8, 1, 1},
          NULL, NULL}, P3D_WEIGHTS_ERROR_BAD_SHAPE,
      {"'backbone.blocks.0.0.weight'", "[8, 8, 1, 1]", "[8, 8, 3, 3]"}},
  {TRUE, NO_CHANGE, {NULL, NULL, 0, {0}, "bbox_head.conv_reg.bias", NULL},
      P3D_WEIGHTS_ERROR_UNSUPPORTED_DTYPE, {"'bbox_head.conv_reg.bias'",
          "I32"}},
  {TRUE, NO_CHANGE, {NULL, NULL, 0, {0}, NULL,
          "neck.deblocks.0.1.running_var"}, P3D_WEIGHTS_ERROR_BAD_VALUE,
      {"neck.deblocks.0.1.running_var[0]", "negative"}},
};

GST_START_TEST (test_bad_model)
{
  const BadModel *bad = &bad_models[__i__];
  const AnchorModelOptions options = { bad->mmdet3d, FALSE, FALSE, FALSE, 5 };
  AnchorModel *m = anchormodel_new (&options);
  gchar *path = anchormodel_write (m, bad->old, bad->new, FALSE,
      &bad->mutation);
  GError *error = NULL;
  P3dModel *model = load (path, &error);
  const gchar *const *word;

  fail_unless (model == NULL, "case %d loaded", __i__);
  fail_unless (error != NULL && error->domain == P3D_WEIGHTS_ERROR);
  fail_unless (error->code == bad->code, "case %d: code %d, not %d: %s",
      __i__, error->code, bad->code, error->message);
  /* every message names the file */
  fail_unless (strstr (error->message, path) != NULL, "%s", error->message);
  for (word = bad->words; *word; word++)
    fail_unless (strstr (error->message, *word) != NULL, "case %d: '%s' not "
        "in '%s'", __i__, *word, error->message);
  GST_INFO ("case %d: %s", __i__, error->message);
  g_error_free (error);
  g_unlink (path);
  g_free (path);
  anchormodel_free (m);
}

GST_END_TEST;

/* A tensor under one of the model's modules that no layer reads, and a
 * file without metadata, which names both families' converters. */
GST_START_TEST (test_leftover_and_no_metadata)
{
  const AnchorModelOptions options = { FALSE, FALSE, FALSE, FALSE, 6 };
  AnchorModel *m = anchormodel_new (&options);
  const gint64 shape[1] = { 4 };
  GError *error = NULL;
  P3dModel *model;
  P3dTestRng rng;
  gchar *path;

  p3d_test_rng_init (&rng, 1);
  /* OpenPCDet's checkpoints hold the whole PointPillar: other modules'
   * tensors pass, the head's extra one does not */
  tiny_model_add_tensor (m->weights, &rng, g_strdup ("map_to_bev.unused"), 1,
      shape, 0.0f, 1.0f);
  path = anchormodel_write (m, NULL, NULL, FALSE, NULL);
  model = load (path, &error);
  fail_unless (model != NULL, "%s", error ? error->message : "");
  p3d_model_free (model);
  g_unlink (path);
  g_free (path);
  tiny_model_add_tensor (m->weights, &rng,
      g_strdup ("dense_head.conv_iou.bias"), 1, shape, 0.0f, 1.0f);
  path = anchormodel_write (m, NULL, NULL, FALSE, NULL);
  fail_unless (load (path, &error) == NULL);
  fail_unless (strstr (error->message, "'dense_head.conv_iou.bias' belongs "
          "to no layer") != NULL, "%s", error->message);
  g_clear_error (&error);
  g_unlink (path);
  g_free (path);

  path = anchormodel_write (m, "{", NULL, FALSE, NULL);
  fail_unless (load (path, &error) == NULL);
  fail_unless_equals_int (error->code, P3D_WEIGHTS_ERROR_MISSING_METADATA);
  fail_unless (strstr (error->message, "convert_openpcdet_pointpillars.py")
      != NULL && strstr (error->message, "convert_mmdet3d_pointpillars.py")
      != NULL, "%s", error->message);
  g_clear_error (&error);
  g_unlink (path);
  g_free (path);
  anchormodel_free (m);
}

GST_END_TEST;

static Suite *
pointpillars_model_suite (void)
{
  Suite *s = suite_create ("pointpillars_model");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_loop_test (tc, test_load, 0, G_N_ELEMENTS (models));
  tcase_add_loop_test (tc, test_against_oracle, 0, G_N_ELEMENTS (models));
  tcase_add_loop_test (tc, test_decoder, 0, G_N_ELEMENTS (models));
  tcase_add_loop_test (tc, test_boxes_against_oracle, 0, G_N_ELEMENTS (models));
  tcase_add_loop_test (tc, test_bad_model, 0, G_N_ELEMENTS (bad_models));
  tcase_add_test (tc, test_leftover_and_no_metadata);
  return s;
}

P3D_CHECK_MAIN (pointpillars_model);
