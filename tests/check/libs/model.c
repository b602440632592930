/* The model layer (caps/p3dmodel.h, p3dmodelgraph.h): a graph of every op,
 * written by this test as `p3d.model` JSON with random weights in a
 * safetensors file, built into the compute library's layer graph and run
 * by its reference against the graph evaluated in float64 from the raw
 * tensors (p3dtest-modeloracle.h: BatchNorm unfolded, every op by its
 * PyTorch definition);
 * the fusions and in-place writes the build promises, and a
 * concatenation's copy where a convolution reads its input too; a head's
 * convolutions merged into one and one grouped; the graph's JSON
 * written back and read again; every fault of a graph refused with a
 * message naming the layer and the key; the CenterPoint family's graph
 * given explicitly in the metadata building the very network its config
 * implies; and the generic decoder decoding what the family's decode
 * does. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>

#include "p3dcenterpoint.h"
#include "p3dmodel-private.h"
#include "p3dtest.h"
#include "p3dtest-modeloracle.h"
#include "p3dtest-safetensors.h"
#include "p3dtest-tinymodel.h"

/* ---- the graph of every op --------------------------------------------- */

#define BATCH 2
#define IN_C 6
#define IN_H 9
#define IN_W 10

/* Every op: a BatchNorm'd conv, a grouped dilated non-square conv with a
 * bias whose sum with c1 (an add nothing else reads) becomes its
 * residual, ResNet's stem pool, a deconv, nearest upsampling to another
 * tensor's size, bilinear with both corner rules (a scale and a size), a
 * concatenation of two tensors written in place and the input copied, a
 * 1x1 head whose slices go to a softmax (read in place) and a ReLU copy,
 * a ReLU fused into the upsampling before it, an add of a deconv and a
 * slice (not fused), and a ReLU of the input. */
static const gchar every_op_graph[] =
    "{\"input\": {\"name\": \"x\", \"batch\": 2, \"channels\": 6, "
    "\"height\": 9, \"width\": 10}, \"layers\": ["
    "{\"name\": \"c1\", \"op\": \"conv\", \"out_channels\": 8, \"kernel\": 3, "
    "\"padding\": 1, \"weight\": \"c1.weight\", \"norm\": \"c1.bn\", "
    "\"norm_eps\": 0.001, \"relu\": true}, "
    "{\"name\": \"c2\", \"op\": \"conv\", \"out_channels\": 8, "
    "\"kernel\": [1, 3], \"padding\": [0, 2], \"dilation\": [1, 2], "
    "\"groups\": 2, \"weight\": \"c2.weight\", \"bias\": \"c2.bias\"}, "
    "{\"name\": \"r1\", \"op\": \"add\", \"inputs\": [\"c2\", \"c1\"], "
    "\"relu\": true}, "
    "{\"name\": \"p1\", \"op\": \"max_pool\", \"kernel\": 3, \"stride\": 2, "
    "\"padding\": 1}, "
    "{\"name\": \"d1\", \"op\": \"deconv\", \"out_channels\": 4, "
    "\"kernel\": 2, \"weight\": \"d1.weight\", \"norm\": \"d1.bn\", "
    "\"relu\": true}, "
    "{\"name\": \"u1\", \"op\": \"upsample\", \"input\": \"p1\", "
    "\"mode\": \"nearest\", \"size_of\": \"r1\"}, "
    "{\"name\": \"u2\", \"op\": \"upsample\", \"input\": \"p1\", "
    "\"mode\": \"bilinear\", \"align_corners\": true, \"scale\": 2}, "
    "{\"name\": \"u3\", \"op\": \"upsample\", \"input\": \"p1\", "
    "\"mode\": \"bilinear\", \"size\": [7, 12]}, "
    "{\"name\": \"cat\", \"op\": \"concat\", \"inputs\": [\"r1\", \"u1\", "
    "\"x\"]}, "
    "{\"name\": \"h\", \"op\": \"conv\", \"out_channels\": 12, \"kernel\": 1, "
    "\"weight\": \"h.weight\", \"bias\": \"h.bias\"}, "
    "{\"name\": \"dep\", \"op\": \"slice\", \"end\": 5}, "
    "{\"name\": \"ctx\", \"op\": \"slice\", \"input\": \"h\", \"begin\": 5, "
    "\"end\": 12, \"relu\": true}, "
    "{\"name\": \"sm\", \"op\": \"softmax\", \"input\": \"dep\"}, "
    "{\"name\": \"rl\", \"op\": \"relu\", \"input\": \"u2\"}, "
    "{\"name\": \"s2\", \"op\": \"slice\", \"begin\": 2, \"end\": 6}, "
    "{\"name\": \"a2\", \"op\": \"add\", \"inputs\": [\"d1\", \"s2\"]}, "
    "{\"name\": \"rx\", \"op\": \"relu\", \"input\": \"x\"}], "
    "\"outputs\": {\"depth\": \"sm\", \"context\": \"ctx\", \"sum\": \"a2\", "
    "\"up\": \"u3\", \"cat\": \"cat\", \"input_relu\": \"rx\", \"head\": \"h\", "
    "\"pool\": \"p1\"}}";

/* ---- weights files ----------------------------------------------------- */

typedef struct
{
  P3dTestSafetensors *writer;
  GHashTable *values;           /* name -> gfloat array, for the oracle */
  P3dTestRng rng;
} Tensors;

static void
tensors_init (Tensors * t, guint64 seed)
{
  t->writer = p3d_test_safetensors_new ();
  t->values = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  p3d_test_rng_init (&t->rng, seed);
}

static void
tensors_clear (Tensors * t)
{
  p3d_test_safetensors_free (t->writer);
  g_hash_table_unref (t->values);
}

static void
tensors_add (Tensors * t, const gchar * name, guint n_dims,
    const gint64 * shape, gfloat lo, gfloat hi)
{
  gsize count = 1, i;
  gfloat *values;

  for (i = 0; i < n_dims; i++)
    count *= shape[i];
  values = g_new (gfloat, count);
  for (i = 0; i < count; i++)
    values[i] = p3d_test_rng_uniform (&t->rng, lo, hi);
  p3d_test_safetensors_add_f32 (t->writer, name, n_dims, shape, values);
  g_hash_table_insert (t->values, g_strdup (name), values);
}

static void
tensors_add_norm (Tensors * t, const gchar * prefix, gint64 channels)
{
  const gint64 shape[1] = { channels };
  gchar *name;

  name = g_strdup_printf ("%s.weight", prefix);
  tensors_add (t, name, 1, shape, 0.5f, 1.5f);
  g_free (name);
  name = g_strdup_printf ("%s.bias", prefix);
  tensors_add (t, name, 1, shape, -0.5f, 0.5f);
  g_free (name);
  name = g_strdup_printf ("%s.running_mean", prefix);
  tensors_add (t, name, 1, shape, -0.3f, 0.3f);
  g_free (name);
  name = g_strdup_printf ("%s.running_var", prefix);
  tensors_add (t, name, 1, shape, 0.2f, 2.0f);
  g_free (name);
}

static const gfloat *
tensor (Tensors * t, const gchar * name)
{
  const gfloat *v = g_hash_table_lookup (t->values, name);

  fail_unless (v != NULL, "no tensor %s", name);
  return v;
}

/* The tensors of the every-op graph. */
static void
every_op_tensors (Tensors * t)
{
  const gint64 c1[4] = { 8, 6, 3, 3 }, c2[4] = { 8, 4, 1, 3 };
  const gint64 d1[4] = { 8, 4, 2, 2 }, h[4] = { 12, 22, 1, 1 };
  const gint64 b8[1] = { 8 }, b12[1] = { 12 };

  tensors_add (t, "c1.weight", 4, c1, -0.3f, 0.3f);
  tensors_add_norm (t, "c1.bn", 8);
  tensors_add (t, "c2.weight", 4, c2, -0.4f, 0.4f);
  tensors_add (t, "c2.bias", 1, b8, -0.2f, 0.2f);
  tensors_add (t, "d1.weight", 4, d1, -0.4f, 0.4f);
  tensors_add_norm (t, "d1.bn", 4);
  tensors_add (t, "h.weight", 4, h, -0.3f, 0.3f);
  tensors_add (t, "h.bias", 1, b12, -0.2f, 0.2f);
}

static P3dWeights *
weights_of (Tensors * t, const gchar * metadata)
{
  GBytes *bytes;
  P3dWeights *weights;
  GError *error = NULL;

  if (metadata != NULL)
    p3d_test_safetensors_set_metadata (t->writer, P3D_MODEL_METADATA_KEY,
        metadata);
  bytes = p3d_test_safetensors_serialize (t->writer);
  weights = p3d_weights_new_from_bytes (bytes, "test.safetensors", &error);
  fail_unless (weights != NULL, "%s", error ? error->message : "");
  g_bytes_unref (bytes);
  return weights;
}

/* ---- the graph in float64 ---------------------------------------------- */

static const gfloat *
lookup (gpointer user_data, const gchar * name)
{
  return tensor (user_data, name);
}

/* Every tensor of @graph in float64, by name (p3dtest-modeloracle.h). */
static GHashTable *
evaluate (const P3dModelGraph * graph, Tensors * t, const gfloat * input)
{
  const ModelOracleTensors tensors = { lookup, t };

  return model_oracle_evaluate (graph, &tensors, input);
}

/* ---- building and running ---------------------------------------------- */

static gboolean
build (const P3dModelGraph * graph, const P3dWeights * weights,
    P3dModelNetwork * network, GPtrArray * arrays, GError ** error)
{
  P3dModelBuilder builder;
  gboolean ok;

  builder.weights = weights;
  builder.arrays = arrays;
  builder.used = g_hash_table_new (g_str_hash, g_str_equal);
  ok = p3d_model_network_build (network, graph, &builder, error);
  g_hash_table_unref (builder.used);
  return ok;
}

/* Runs @network (built from @graph) on the reference with a random input
 * of the graph's shape and checks every output against the graph evaluated
 * in float64. */
static void
check_against_graph (const P3dModelGraph * graph, Tensors * t,
    const P3dModelNetwork * network)
{
  gsize n = (gsize) graph->batch * graph->channels * graph->height *
      graph->width, e;
  gfloat *input = g_new (gfloat, n);
  float **buffers;
  GHashTable *expect;
  guint o;
  gdouble worst = 0;

  for (e = 0; e < n; e++)
    input[e] = p3d_test_rng_uniform (&t->rng, -2.0f, 2.0f);
  buffers = p3dc_convnet_cpu_buffers_new (&network->desc);
  fail_unless (buffers != NULL);
  fail_unless_equals_int (p3dc_convnet_cpu (&network->desc, input, buffers),
      P3DC_OK);
  expect = evaluate (graph, t, input);
  for (o = 0; o < network->n_outputs; o++) {
    const P3dModelOutput *out = &network->outputs[o];
    const P3dModelGraphOutput *named = graph->outputs->pdata[o];
    const OracleValue *v = g_hash_table_lookup (expect, named->tensor);
    P3dcMapView view;
    guint b, c, y, x;

    fail_unless_equals_string (out->name, named->name);
    fail_unless_equals_int (out->channels, v->c);
    fail_unless_equals_int (network->desc.buffers[out->buffer].height, v->h);
    fail_unless_equals_int (network->desc.buffers[out->buffer].width, v->w);
    p3dc_convnet_cpu_view (&network->desc, out->buffer, out->buffer == 0 ?
        input : buffers[out->buffer], &view);
    p3dc_map_view_offset_channels (&view, out->channel_offset);
    for (b = 0; b < graph->batch; b++)
      for (c = 0; c < v->c; c++)
        for (y = 0; y < v->h; y++)
          for (x = 0; x < v->w; x++) {
            gdouble got = ((const gfloat *) view.data)[b * view.batch_stride +
                c * view.channel_stride + y * view.row_stride + x];
            gdouble want = *model_oracle_at (v, b, c, y, x);

            worst = MAX (worst, fabs (got - want) / (1 + fabs (want)));
            fail_unless (fabs (got - want) <= 1e-5 * (1 + fabs (want)),
                "output %s at n %u c %u y %u x %u: %.9g, the graph gives "
                "%.9g", out->name, b, c, y, x, got, want);
          }
  }
  GST_INFO ("largest difference %g", worst);
  g_hash_table_unref (expect);
  p3dc_convnet_cpu_buffers_free (&network->desc, buffers);
  g_free (input);
}

static guint
count_kind (const P3dcConvNetDesc * desc, P3dcConvKind kind)
{
  guint l, n = 0;

  for (l = 0; l < desc->n_layers; l++)
    n += desc->layers[l].kind == kind;
  return n;
}

GST_START_TEST (test_every_op)
{
  GError *error = NULL;
  P3dModelGraph *graph = p3d_model_graph_parse ("image", every_op_graph,
      &error);
  GPtrArray *arrays = g_ptr_array_new_with_free_func (g_free);
  P3dModelNetwork network;
  P3dWeights *weights;
  Tensors t;

  fail_unless (graph != NULL, "%s", error ? error->message : "");
  tensors_init (&t, 31);
  every_op_tensors (&t);
  weights = weights_of (&t, NULL);
  fail_unless (build (graph, weights, &network, arrays, &error), "%s",
      error ? error->message : "");
  fail_unless_equals_int (network.desc.batch, BATCH);
  fail_unless_equals_string (network.name, "image");
  fail_unless_equals_string (network.input_name, "x");

  /* what the build promises: r1 is c2's residual (one add left, a2's),
   * r1 and u1 written into the concatenation (one copy, the input's), rl
   * the upsampling's ReLU, dep read in place (one more copy: ctx, with
   * its ReLU, and rx) */
  fail_unless_equals_int (network.desc.n_layers, 13);
  fail_unless_equals_int (count_kind (&network.desc, P3DC_CONV_2D), 3);
  fail_unless_equals_int (count_kind (&network.desc, P3DC_LAYER_ADD), 1);
  fail_unless_equals_int (count_kind (&network.desc, P3DC_LAYER_SLICE), 3);
  fail_unless (network.desc.layers[1].residual);
  fail_unless (network.desc.layers[1].relu);
  fail_unless_equals_int (network.desc.layers[1].groups, 2);
  fail_unless_equals_int (network.desc.layers[1].kernel_x, 3);
  fail_unless_equals_int (network.desc.layers[1].dilation_x, 2);
  fail_unless_equals_int (network.desc.layers[5].kind,
      P3DC_LAYER_UPSAMPLE_BILINEAR);
  fail_unless (network.desc.layers[5].relu);
  {
    const P3dModelOutput *cat = p3d_model_network_get_output (&network,
        "cat");
    const P3dModelOutput *depth = p3d_model_network_get_output (&network,
        "depth");

    fail_unless (cat != NULL && depth != NULL);
    /* c2 writes channels 0-7 of the concatenation */
    fail_unless_equals_int (network.desc.layers[1].output, cat->buffer);
    fail_unless_equals_int (network.desc.layers[1].output_channel_offset, 0);
    fail_unless_equals_int (cat->channels, 22);
    fail_unless (p3d_model_network_get_output (&network, "nothing") == NULL);
  }

  check_against_graph (graph, &t, &network);
  p3d_model_network_clear (&network);
  p3d_weights_free (weights);
  tensors_clear (&t);
  g_ptr_array_unref (arrays);
  p3d_model_graph_free (graph);
}

GST_END_TEST;

/* A concatenation's input that a convolution also reads is copied into it
 * (the convolution then reads a whole buffer); one that only the
 * concatenation reads is written in place. */
GST_START_TEST (test_concat_placement)
{
  static const gchar graph_json[] =
      "{\"input\": {\"name\": \"x\", \"batch\": 2, \"channels\": 6, "
      "\"height\": 9, \"width\": 10}, \"layers\": ["
      "{\"name\": \"c1\", \"op\": \"conv\", \"out_channels\": 8, "
      "\"kernel\": 3, \"padding\": 1, \"weight\": \"c1.weight\", "
      "\"norm\": \"c1.bn\", \"relu\": true}, "
      "{\"name\": \"c2\", \"op\": \"conv\", \"out_channels\": 8, "
      "\"kernel\": [1, 3], \"padding\": [0, 2], \"dilation\": [1, 2], "
      "\"groups\": 2, \"weight\": \"c2.weight\", \"bias\": \"c2.bias\"}, "
      "{\"name\": \"cat\", \"op\": \"concat\", \"inputs\": [\"c1\", \"c2\"]}], "
      "\"outputs\": {\"cat\": \"cat\"}}";
  GError *error = NULL;
  P3dModelGraph *graph = p3d_model_graph_parse ("bev", graph_json, &error);
  GPtrArray *arrays = g_ptr_array_new_with_free_func (g_free);
  P3dModelNetwork network;
  const P3dModelOutput *cat;
  const P3dcConvLayer *layers;
  P3dWeights *weights;
  Tensors t;

  fail_unless (graph != NULL, "%s", error ? error->message : "");
  tensors_init (&t, 31);
  every_op_tensors (&t);
  weights = weights_of (&t, NULL);
  fail_unless (build (graph, weights, &network, arrays, &error), "%s",
      error ? error->message : "");
  cat = p3d_model_network_get_output (&network, "cat");
  layers = network.desc.layers;
  fail_unless_equals_int (network.desc.n_layers, 3);
  /* c1 in a buffer of its own, read whole by c2 */
  fail_unless (layers[0].output != cat->buffer);
  fail_unless_equals_int (layers[1].input, layers[0].output);
  fail_unless_equals_int (layers[1].input_channel_offset, 0);
  /* c2 straight into channels 8-15 */
  fail_unless_equals_int (layers[1].output, cat->buffer);
  fail_unless_equals_int (layers[1].output_channel_offset, 8);
  /* c1 copied into channels 0-7 */
  fail_unless_equals_int (layers[2].kind, P3DC_LAYER_SLICE);
  fail_unless_equals_int (layers[2].input, layers[0].output);
  fail_unless_equals_int (layers[2].output, cat->buffer);
  fail_unless_equals_int (layers[2].output_channel_offset, 0);
  fail_unless_equals_int (layers[2].out_channels, 8);
  fail_unless (!layers[2].relu);
  p3d_model_network_clear (&network);
  p3d_weights_free (weights);
  tensors_clear (&t);
  g_ptr_array_unref (arrays);
  p3d_model_graph_free (graph);
}

GST_END_TEST;

/* A detection head's convolutions merged (caps/p3dmodelbuild.c): three
 * 3x3 heads on a shared conv (ConvModule of 32 channels, then a final conv
 * of 2, 1 and 3 channels) become one convolution and one grouped one;
 * three 1x1 convolutions that only the outputs read (an anchor head's)
 * become one; convolutions on one input whose outputs an add reads, and
 * heads of 16 channels (not the grouped kernel's multiple of 32), stay
 * apart.  The outputs equal the graph's, evaluated without any merge. */
GST_START_TEST (test_merged_heads)
{
  static const gchar graph_json[] =
      "{\"input\": {\"name\": \"x\", \"batch\": 2, \"channels\": 6, "
      "\"height\": 9, \"width\": 10}, \"layers\": ["
      "{\"name\": \"s\", \"op\": \"conv\", \"out_channels\": 8, "
      "\"kernel\": 3, \"padding\": 1, \"weight\": \"s.weight\", "
      "\"norm\": \"s.bn\", \"relu\": true}, "
      "{\"name\": \"e0\", \"op\": \"conv\", \"input\": \"x\", "
      "\"out_channels\": 8, \"kernel\": 3, \"padding\": 1, "
      "\"weight\": \"e0.weight\", \"relu\": true}, "
      "{\"name\": \"e1\", \"op\": \"conv\", \"input\": \"x\", "
      "\"out_channels\": 8, \"kernel\": 3, \"padding\": 1, "
      "\"weight\": \"e1.weight\", \"relu\": true}, "
      "{\"name\": \"sum\", \"op\": \"add\", \"inputs\": [\"e0\", \"e1\"]}, "
      "{\"name\": \"a0\", \"op\": \"conv\", \"input\": \"s\", "
      "\"out_channels\": 32, \"kernel\": 3, \"padding\": 1, "
      "\"weight\": \"a0.weight\", \"norm\": \"a0.bn\", \"relu\": true}, "
      "{\"name\": \"a\", \"op\": \"conv\", \"out_channels\": 2, "
      "\"kernel\": 3, \"padding\": 1, \"weight\": \"a.weight\", "
      "\"bias\": \"a.bias\"}, "
      "{\"name\": \"p\", \"op\": \"conv\", \"input\": \"s\", "
      "\"out_channels\": 2, \"kernel\": 1, \"weight\": \"p.weight\", "
      "\"bias\": \"p.bias\"}, "
      "{\"name\": \"b0\", \"op\": \"conv\", \"input\": \"s\", "
      "\"out_channels\": 32, \"kernel\": 3, \"padding\": 1, "
      "\"weight\": \"b0.weight\", \"norm\": \"b0.bn\", \"relu\": true}, "
      "{\"name\": \"b\", \"op\": \"conv\", \"out_channels\": 1, "
      "\"kernel\": 3, \"padding\": 1, \"weight\": \"b.weight\", "
      "\"bias\": \"b.bias\"}, "
      "{\"name\": \"q\", \"op\": \"conv\", \"input\": \"s\", "
      "\"out_channels\": 1, \"kernel\": 1, \"weight\": \"q.weight\", "
      "\"bias\": \"q.bias\"}, "
      "{\"name\": \"c0\", \"op\": \"conv\", \"input\": \"s\", "
      "\"out_channels\": 32, \"kernel\": 3, \"padding\": 1, "
      "\"weight\": \"c0.weight\", \"norm\": \"c0.bn\", \"relu\": true}, "
      "{\"name\": \"c\", \"op\": \"conv\", \"out_channels\": 3, "
      "\"kernel\": 3, \"padding\": 1, \"weight\": \"c.weight\", "
      "\"bias\": \"c.bias\"}, "
      "{\"name\": \"r\", \"op\": \"conv\", \"input\": \"s\", "
      "\"out_channels\": 4, \"kernel\": 1, \"weight\": \"r.weight\", "
      "\"bias\": \"r.bias\"}, "
      "{\"name\": \"t\", \"op\": \"conv\", \"input\": \"x\", "
      "\"out_channels\": 8, \"kernel\": 1, \"weight\": \"t.weight\"}, "
      "{\"name\": \"u0\", \"op\": \"conv\", \"out_channels\": 16, "
      "\"kernel\": 3, \"padding\": 1, \"weight\": \"u0.weight\", "
      "\"relu\": true}, "
      "{\"name\": \"u\", \"op\": \"conv\", \"out_channels\": 2, "
      "\"kernel\": 3, \"padding\": 1, \"weight\": \"u.weight\"}, "
      "{\"name\": \"v0\", \"op\": \"conv\", \"input\": \"t\", "
      "\"out_channels\": 16, \"kernel\": 3, \"padding\": 1, "
      "\"weight\": \"v0.weight\", \"relu\": true}, "
      "{\"name\": \"v\", \"op\": \"conv\", \"out_channels\": 2, "
      "\"kernel\": 3, \"padding\": 1, \"weight\": \"v.weight\"}], "
      "\"outputs\": {\"a\": \"a\", \"b\": \"b\", \"c\": \"c\", \"p\": \"p\", "
      "\"q\": \"q\", \"r\": \"r\", \"sum\": \"sum\", \"u\": \"u\", "
      "\"v\": \"v\"}}";
  static const struct
  {
    const gchar *name;
    guint out, in, kernel;
    gboolean norm, bias;
  } convs[] = {
    {"s", 8, 6, 3, TRUE, FALSE}, {"e0", 8, 6, 3, FALSE, FALSE},
    {"e1", 8, 6, 3, FALSE, FALSE}, {"a0", 32, 8, 3, TRUE, FALSE},
    {"b0", 32, 8, 3, TRUE, FALSE}, {"c0", 32, 8, 3, TRUE, FALSE},
    {"a", 2, 32, 3, FALSE, TRUE}, {"b", 1, 32, 3, FALSE, TRUE},
    {"c", 3, 32, 3, FALSE, TRUE}, {"p", 2, 8, 1, FALSE, TRUE},
    {"q", 1, 8, 1, FALSE, TRUE}, {"r", 4, 8, 1, FALSE, TRUE},
    {"t", 8, 6, 1, FALSE, FALSE}, {"u0", 16, 8, 3, FALSE, FALSE},
    {"u", 2, 16, 3, FALSE, FALSE}, {"v0", 16, 8, 3, FALSE, FALSE},
    {"v", 2, 16, 3, FALSE, FALSE},
  };
  static const gchar *const heads[3] = { "a", "b", "c" };
  static const gchar *const sides[3] = { "p", "q", "r" };
  static const guint side_offsets[3] = { 0, 2, 3 };
  GError *error = NULL;
  P3dModelGraph *graph = p3d_model_graph_parse ("bev", graph_json, &error);
  GPtrArray *arrays = g_ptr_array_new_with_free_func (g_free);
  P3dModelNetwork network;
  const P3dcConvLayer *layers;
  P3dWeights *weights;
  Tensors t;
  guint i;

  fail_unless (graph != NULL, "%s", error ? error->message : "");
  tensors_init (&t, 37);
  for (i = 0; i < G_N_ELEMENTS (convs); i++) {
    const gint64 shape[4] = { convs[i].out, convs[i].in, convs[i].kernel,
      convs[i].kernel
    };
    const gint64 bias_shape[1] = { convs[i].out };
    gchar *name = g_strdup_printf ("%s.weight", convs[i].name);

    tensors_add (&t, name, 4, shape, -0.4f, 0.4f);
    g_clear_pointer (&name, g_free);
    if (convs[i].norm) {
      name = g_strdup_printf ("%s.bn", convs[i].name);
      tensors_add_norm (&t, name, convs[i].out);
    } else if (convs[i].bias) {
      name = g_strdup_printf ("%s.bias", convs[i].name);
      tensors_add (&t, name, 1, bias_shape, -0.2f, 0.2f);
    }
    g_free (name);
  }
  weights = weights_of (&t, NULL);
  fail_unless (build (graph, weights, &network, arrays, &error), "%s",
      error ? error->message : "");
  layers = network.desc.layers;
  /* s, e0, e1, the add, the heads' first convolutions, their final ones,
   * the 1x1 ones, then t and the four 16-channel head convolutions apart */
  fail_unless_equals_int (network.desc.n_layers, 12);
  fail_unless_equals_int (count_kind (&network.desc, P3DC_CONV_2D), 11);
  fail_unless_equals_int (layers[4].in_channels, 8);
  fail_unless_equals_int (layers[4].out_channels, 96);
  fail_unless (layers[4].relu);
  fail_unless_equals_int (layers[4].groups, 0);
  fail_unless_equals_int (layers[5].input, layers[4].output);
  fail_unless_equals_int (layers[5].input_channel_offset, 0);
  fail_unless_equals_int (layers[5].in_channels, 96);
  fail_unless_equals_int (layers[5].out_channels, 3 * 8);
  fail_unless_equals_int (layers[5].groups, 3);
  fail_unless (!layers[5].relu);
  fail_unless_equals_int (layers[6].kernel, 1);
  fail_unless_equals_int (layers[6].out_channels, 7);
  for (i = 7; i < 12; i++) {
    fail_unless_equals_int (layers[i].groups, 0);
    fail_unless_equals_int (layers[i].out_channels, convs[i + 5].out);
  }
  for (i = 0; i < 3; i++) {
    const P3dModelOutput *head = p3d_model_network_get_output (&network,
        heads[i]);
    const P3dModelOutput *side = p3d_model_network_get_output (&network,
        sides[i]);

    fail_unless_equals_int (head->buffer, layers[5].output);
    fail_unless_equals_int (head->channel_offset, 8 * i);
    fail_unless_equals_int (side->buffer, layers[6].output);
    fail_unless_equals_int (side->channel_offset, side_offsets[i]);
  }
  check_against_graph (graph, &t, &network);

  p3d_model_network_clear (&network);
  p3d_weights_free (weights);
  tensors_clear (&t);
  g_ptr_array_unref (arrays);
  p3d_model_graph_free (graph);
}

GST_END_TEST;

/* The JSON a graph writes reads back as the same graph (written again, the
 * same text), and builds the same network. */
GST_START_TEST (test_json_round_trip)
{
  GError *error = NULL;
  P3dModelGraph *graph = p3d_model_graph_parse ("image", every_op_graph,
      &error);
  gchar *first, *second;
  P3dModelGraph *again;

  fail_unless (graph != NULL, "%s", error ? error->message : "");
  first = p3d_model_graph_to_json (graph);
  again = p3d_model_graph_parse ("image", first, &error);
  fail_unless (again != NULL, "%s: %s", first, error ? error->message : "");
  second = p3d_model_graph_to_json (again);
  fail_unless_equals_string (first, second);
  fail_unless_equals_int (again->layers->len, graph->layers->len);
  fail_unless_equals_int (again->batch, 2);
  g_free (first);
  g_free (second);
  p3d_model_graph_free (again);
  p3d_model_graph_free (graph);
}

GST_END_TEST;

/* ---- faults ------------------------------------------------------------ */

typedef struct
{
  const gchar *old;
  const gchar *new;
  const gchar *words[4];        /* NULL-terminated, all in the message */
} BadGraph;

static const BadGraph bad_graphs[] = {
  {"\"op\": \"conv\", \"out_channels\": 8, \"kernel\": 3",
        "\"op\": \"conv2d\", \"out_channels\": 8, \"kernel\": 3",
      {"\"graph.image.layers[0].op\" (layer \"c1\")", "must be one of"}},
  {"\"out_channels\": 8, \"kernel\": 3,", "\"out_channels\": 8, "
        "\"kernel\": 0,", {"\"graph.image.layers[0].kernel\" (layer \"c1\")",
          "1..16"}},
  {"\"out_channels\": 8, \"kernel\": 3,", "\"out_channels\": 8, "
        "\"kernel\": [3],", {"\"graph.image.layers[0].kernel\"",
          "[y, x]"}},
  {"\"out_channels\": 8, \"kernel\": 3,", "\"out_channels\": 8,",
      {"\"graph.image.layers[0].kernel\"", "is missing"}},
  {"\"padding\": 1, \"weight\": \"c1.weight\"",
        "\"padding\": 1, \"strides\": 2, \"weight\": \"c1.weight\"",
        {"\"graph.image.layers[0].strides\" (layer \"c1\")",
          "not a key of a conv layer"}},
  {"\"weight\": \"c1.weight\", ", "", {"\"graph.image.layers[0].weight\"",
          "is missing"}},
  {"\"weight\": \"h.weight\", \"bias\": \"h.bias\"",
        "\"weight\": \"h.weight\", \"norm_eps\": 0.1",
      {"\"graph.image.layers[9].norm_eps\" (layer \"h\")", "without"}},
  {"\"kernel\": 2, \"weight\": \"d1.weight\"",
        "\"kernel\": 2, \"stride\": 1, \"weight\": \"d1.weight\"",
      {"\"graph.image.layers[4].stride\" (layer \"d1\")", "equal the kernel"}},
  {"\"mode\": \"bilinear\", \"size\": [7, 12]", "\"mode\": \"bilinear\"",
      {"\"graph.image.layers[7]\" (layer \"u3\") takes exactly one of "
              "\"scale\", \"size\" and \"size_of\""}},
  {"\"mode\": \"bilinear\", \"size\": [7, 12]",
        "\"mode\": \"bilinear\", \"size\": [7, 12], \"scale\": 2",
      {"(layer \"u3\")", "exactly one"}},
  {"\"mode\": \"nearest\"", "\"mode\": \"nearest\", \"align_corners\": true",
      {"\"graph.image.layers[5].align_corners\"", "bilinear"}},
  {"\"mode\": \"bilinear\", \"size\"", "\"mode\": \"bicubic\", \"size\"",
      {"\"graph.image.layers[7].mode\"", "\"nearest\" or \"bilinear\""}},
  {"\"begin\": 2, \"end\": 6", "\"begin\": 6, \"end\": 6",
      {"\"graph.image.layers[14].end\" (layer \"s2\")", "above"}},
  {"\"inputs\": [\"c2\", \"c1\"]", "\"inputs\": [\"c2\"]",
      {"\"graph.image.layers[2].inputs\" (layer \"r1\")", "2 entries"}},
  {"\"name\": \"sm\", \"op\": \"softmax\", \"input\": \"dep\"",
        "\"name\": \"sm\", \"op\": \"softmax\", \"inputs\": [\"dep\"]",
      {"\"graph.image.layers[12].inputs\"", "one \"input\""}},
  {"\"name\": \"u3\"", "\"name\": \"u2\"",
      {"\"graph.image.layers[7].name\" (layer \"u2\")", "already has"}},
  {"\"layers\": [{\"name\": \"c1\"", "\"extra\": 1, \"layers\": [{\"name\": "
        "\"c1\"", {"\"graph.image.extra\"", "not a key of a graph"}},
  {"\"channels\": 6, ", "", {"\"graph.image.input.channels\"", "missing"}},
  {"\"batch\": 2", "\"batch\": 65", {"\"graph.image.input.batch\"",
          "1..64"}},
  /* found when the network is built */
  {"\"input\": \"p1\", \"mode\": \"nearest\"",
        "\"input\": \"nope\", \"mode\": \"nearest\"",
        {"\"graph.image.layers[5]\" (layer \"u1\")", "reads \"nope\"",
          "no tensor made before it"}},
  {"\"input\": \"p1\", \"mode\": \"nearest\"",
        "\"input\": \"u2\", \"mode\": \"nearest\"",
      {"(layer \"u1\")", "reads \"u2\""}},
  {"\"inputs\": [\"c2\", \"c1\"]", "\"inputs\": [\"c2\", \"x\"]",
        {"\"graph.image.layers[2]\" (layer \"r1\")", "adds \"c2\" (8 x 9 x 10)",
          "one shape"}},
  {"\"groups\": 2", "\"groups\": 3", {"(layer \"c2\")", "3 groups",
          "divide its 8 input"}},
  {"\"inputs\": [\"r1\", \"u1\", \"x\"]", "\"inputs\": [\"r1\", \"u3\"]",
      {"(layer \"cat\")", "concatenates", "one size"}},
  {"\"begin\": 5, \"end\": 12", "\"begin\": 5, \"end\": 13",
      {"(layer \"ctx\")", "slices channels 5 to 13 of \"h\", which has 12"}},
  {"\"kernel\": 3, \"stride\": 2, \"padding\": 1}",
        "\"kernel\": 3, \"stride\": 2, \"padding\": 2}",
      {"(layer \"p1\")", "at most half its kernel 3"}},
  {"\"depth\": \"sm\"", "\"depth\": \"zz\"",
      {"\"graph.image.outputs.depth\" names \"zz\"", "no tensor"}},
};

GST_START_TEST (test_bad_graph)
{
  const BadGraph *bad = &bad_graphs[__i__];
  gchar *json = tiny_model_replace_once (every_op_graph, bad->old, bad->new);
  GError *error = NULL;
  P3dModelGraph *graph = p3d_model_graph_parse ("image", json, &error);
  const gchar *const *word;

  if (graph != NULL) {
    GPtrArray *arrays = g_ptr_array_new_with_free_func (g_free);
    P3dModelNetwork network;
    Tensors t;
    P3dWeights *weights;

    tensors_init (&t, 31);
    every_op_tensors (&t);
    weights = weights_of (&t, NULL);
    fail_if (build (graph, weights, &network, arrays, &error),
        "case %d built", __i__);
    p3d_weights_free (weights);
    tensors_clear (&t);
    g_ptr_array_unref (arrays);
    p3d_model_graph_free (graph);
  }
  fail_unless (error != NULL);
  fail_unless (g_error_matches (error, P3D_WEIGHTS_ERROR,
          P3D_WEIGHTS_ERROR_BAD_METADATA), "%s", error->message);
  fail_unless (g_str_has_prefix (error->message, "p3d.model: "), "%s",
      error->message);
  for (word = bad->words; *word; word++)
    fail_unless (strstr (error->message, *word) != NULL, "case %d: '%s' not "
        "in '%s'", __i__, *word, error->message);
  GST_INFO ("case %d: %s", __i__, error->message);
  g_error_free (error);
  g_free (json);
}

GST_END_TEST;

/* Tensors the graph names but the file lacks or shapes otherwise. */
GST_START_TEST (test_bad_tensors)
{
  GError *error = NULL;
  P3dModelGraph *graph = p3d_model_graph_parse ("image", every_op_graph,
      &error);
  GPtrArray *arrays = g_ptr_array_new_with_free_func (g_free);
  P3dModelNetwork network;
  Tensors t;
  P3dWeights *weights;
  const gint64 wrong[4] = { 8, 8, 1, 3 };

  fail_unless (graph != NULL);
  tensors_init (&t, 31);
  tensors_add (&t, "c1.weight", 4, (const gint64[4]) {
        8, 6, 3, 3
      }, -1, 1);
  tensors_add_norm (&t, "c1.bn", 8);
  /* a grouped conv's weight is [out][in / groups][kh][kw] */
  tensors_add (&t, "c2.weight", 4, wrong, -1, 1);
  weights = weights_of (&t, NULL);
  fail_if (build (graph, weights, &network, arrays, &error));
  fail_unless (g_error_matches (error, P3D_WEIGHTS_ERROR,
          P3D_WEIGHTS_ERROR_BAD_SHAPE), "%s", error->message);
  fail_unless (strstr (error->message, "'c2.weight'") != NULL
      && strstr (error->message, "[8, 4, 1, 3]") != NULL, "%s", error->message);
  g_clear_error (&error);
  p3d_weights_free (weights);
  tensors_clear (&t);

  /* c1's BatchNorm missing */
  tensors_init (&t, 31);
  tensors_add (&t, "c1.weight", 4, (const gint64[4]) {
        8, 6, 3, 3
      }, -1, 1);
  weights = weights_of (&t, NULL);
  fail_if (build (graph, weights, &network, arrays, &error));
  fail_unless (g_error_matches (error, P3D_WEIGHTS_ERROR,
          P3D_WEIGHTS_ERROR_MISSING_TENSOR), "%s", error->message);
  fail_unless (strstr (error->message, "'c1.bn.weight'") != NULL, "%s",
      error->message);
  g_clear_error (&error);
  p3d_weights_free (weights);
  tensors_clear (&t);
  g_ptr_array_unref (arrays);
  p3d_model_graph_free (graph);
}

GST_END_TEST;

/* ---- the CenterPoint family --------------------------------------------- */

static const TinyModelArch cp_arch = {
  10, 4, 3, {4, 6, 8}, {1, 2, 0}, {3, 2, 3}, {0.5, 1, 2}, TRUE,
  5, 4, 3, 2, {1, 2}, TRUE
};

static const gchar cp_config[] =
    "{\"architecture\": \"centerpoint-pillar\", \"version\": 1, "
    "\"point_channels\": 5, \"features\": \"pointpillars-10\", "
    "\"voxel_size\": [1.0, 1.0, 8], "
    "\"point_cloud_range\": [-4, -4, -5, 4, 4, 3], "
    "\"max_points\": 4, \"max_voxels\": 64, \"grid\": [8, 8, 1], "
    "\"pfn\": {\"channels\": [4], \"bn_eps\": 0.001}, "
    "\"backbone\": {\"out_channels\": [4, 6, 8], \"layer_nums\": [1, 2, 0], "
    "\"layer_strides\": [1, 2, 2], \"bn_eps\": 0.001}, "
    "\"neck\": {\"out_channels\": [3, 2, 3], "
    "\"upsample_strides\": [0.5, 1, 2], \"use_conv_for_no_stride\": true, "
    "\"bn_eps\": 0.001}, "
    "\"head\": {\"share_conv_channel\": 5, \"head_conv\": 4, "
    "\"final_kernel\": 3, \"bn_eps\": 1e-05, "
    "\"tasks\": [{\"class_names\": [\"car\"]}, "
    "{\"class_names\": [\"pedestrian\", \"cyclist\"]}], "
    "\"common_heads\": {\"reg\": 2, \"height\": 1, \"dim\": 3, \"rot\": 2, "
    "\"vel\": 2}, \"norm_bbox\": true}, "
    "\"coder\": {\"post_center_range\": [-6, -6, -10, 6, 6, 10], "
    "\"max_num\": 10, \"score_threshold\": 0.1, \"out_size_factor\": 2, "
    "\"voxel_size\": [1.0, 1.0], \"pc_range\": [-4, -4]}, "
    "\"test_nms\": {\"type\": \"circle\", \"min_radius\": [4, 0.5], "
    "\"nms_thr\": 0.2, \"pre_max_size\": 100, \"post_max_size\": 20}}";

static P3dModel *
load_model (const gchar * path, GError ** error)
{
  P3dWeights *weights = p3d_weights_open (path, error);
  P3dModel *model;

  if (weights == NULL)
    return NULL;
  model = p3d_model_new (weights, error);
  p3d_weights_free (weights);
  return model;
}

/* @cp_config with the family's own "bev" graph written into it, @old
 * replaced by @new in the graph's JSON (when not NULL). */
static gchar *
config_with_graph (const gchar * old, const gchar * new)
{
  P3dCenterPointConfig config;
  P3dModelGraph *graph;
  GError *error = NULL;
  gchar *json, *with, *text;

  fail_unless (p3d_centerpoint_config_parse (&config, cp_config, &error));
  graph = p3d_model_family_centerpoint_pillar.build_graph (&config, "bev",
      &error);
  fail_unless (graph != NULL, "%s", error ? error->message : "");
  json = p3d_model_graph_to_json (graph);
  if (old != NULL) {
    gchar *renamed = tiny_model_replace_once (json, old, new);

    g_free (json);
    json = renamed;
  }
  text = g_strdup_printf (", \"graph\": {\"bev\": %s}}", json);
  with = g_strdup_printf ("%.*s%s", (gint) strlen (cp_config) - 1, cp_config,
      text);
  g_free (text);
  g_free (json);
  p3d_model_graph_free (graph);
  p3d_centerpoint_config_clear (&config);
  return with;
}

GST_START_TEST (test_centerpoint_explicit_graph)
{
  TinyModel *m = tiny_model_new (&cp_arch, 12);
  gchar *implied_path = tiny_model_write (m, cp_config, NULL);
  gchar *config = config_with_graph (NULL, NULL);
  gchar *explicit_path = tiny_model_write (m, config, NULL);
  GError *error = NULL;
  P3dModel *implied = load_model (implied_path, &error);
  P3dModel *given;
  const P3dcConvNetDesc *a, *b;
  guint l, o;

  fail_unless (implied != NULL, "%s", error ? error->message : "");
  given = load_model (explicit_path, &error);
  fail_unless (given != NULL, "%s", error ? error->message : "");
  fail_unless_equals_string (given->architecture, "centerpoint-pillar");
  fail_unless (given->pillars != NULL);
  a = &p3d_model_get_network (implied, "bev")->desc;
  b = &p3d_model_get_network (given, "bev")->desc;
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
    fail_unless (memcmp (la.weight, lb.weight, n * sizeof (gfloat)) == 0);
    fail_unless (memcmp (la.bias, lb.bias,
            la.out_channels * sizeof (gfloat)) == 0);
    la.weight = lb.weight = NULL;
    la.bias = lb.bias = NULL;
    fail_unless (memcmp (&la, &lb, sizeof la) == 0, "layer %u differs", l);
  }
  for (o = 0; o < p3d_model_get_network (implied, "bev")->n_outputs; o++) {
    const P3dModelOutput *x = &p3d_model_get_network (implied,
        "bev")->outputs[o];
    const P3dModelOutput *y = p3d_model_network_get_output
        (p3d_model_get_network (given, "bev"), x->name);

    fail_unless (y != NULL && y->buffer == x->buffer
        && y->channel_offset == x->channel_offset
        && y->channels == x->channels, "output %s", x->name);
  }
  p3d_model_free (given);
  p3d_model_free (implied);
  g_unlink (explicit_path);
  g_free (explicit_path);
  g_free (config);

  /* a graph without a head the config implies is refused, naming it */
  config = config_with_graph ("\"task1.dim\":\"task1.dim\"",
      "\"task9.x\":\"task1.dim\"");
  explicit_path = tiny_model_write (m, config, NULL);
  fail_unless (load_model (explicit_path, &error) == NULL);
  fail_unless (strstr (error->message, "output \"task1.dim\" is missing")
      != NULL, "%s", error->message);
  g_clear_error (&error);
  g_unlink (explicit_path);
  g_free (explicit_path);
  g_free (config);
  /* and a network the family does not have */
  config = tiny_model_replace_once (cp_config, "\"version\": 1",
      "\"version\": 1, \"graph\": {\"image\": {}}");
  explicit_path = tiny_model_write (m, config, NULL);
  fail_unless (load_model (explicit_path, &error) == NULL);
  fail_unless (strstr (error->message, "\"graph.image\" is no network of a "
          "centerpoint-pillar model") != NULL, "%s", error->message);
  fail_unless (strstr (error->message, explicit_path) != NULL);
  g_clear_error (&error);
  g_unlink (explicit_path);
  g_free (explicit_path);
  g_free (config);

  g_unlink (implied_path);
  g_free (implied_path);
  tiny_model_free (m);
}

GST_END_TEST;

/* The generic decoder decodes what the family's decode does with the
 * typed view's parameters. */
GST_START_TEST (test_decoder)
{
  TinyModel *m = tiny_model_new (&cp_arch, 13);
  gchar *path = tiny_model_write (m, cp_config, NULL);
  GError *error = NULL;
  P3dWeights *weights = p3d_weights_open (path, &error);
  P3dModel *model = p3d_model_new (weights, &error);
  P3dCenterPointModel *typed = p3d_centerpoint_model_new (weights, &error);
  const P3dModelNetwork *network;
  P3dModelDecoder *decoder;
  P3dcCenterPointParams params;
  P3dcCenterPointTaskMaps maps[P3DC_CENTERPOINT_MAX_TASKS];
  P3dcCenterPointOutput output;
  P3dModelBoxes boxes;
  gfloat *canvas;
  float **buffers;
  guint8 *mine, *theirs;
  guint32 count_mine = 0, count_theirs = 0, capacity, t, h;
  P3dTestRng rng;
  gsize n, i;

  fail_unless (model != NULL && typed != NULL, "%s",
      error ? error->message : "");
  network = p3d_model_get_network (model, "bev");
  fail_unless (network != NULL);
  fail_unless (p3d_model_get_network (model, "image") == NULL);
  fail_unless (p3d_model_decoder_new (model, "image", TRUE, &error) == NULL);
  fail_unless (strstr (error->message, "\"image\"") != NULL);
  g_clear_error (&error);
  decoder = p3d_model_decoder_new (model, "bev", TRUE, &error);
  fail_unless (decoder != NULL, "%s", error ? error->message : "");
  p3d_centerpoint_model_decode_params (typed, TRUE, &params);
  capacity = p3dc_centerpoint_output_capacity (&params);
  fail_unless_equals_int (p3d_model_decoder_get_capacity (decoder), capacity);

  p3d_test_rng_init (&rng, 7);
  n = p3dc_convnet_buffer_elements (&network->desc, 0);
  canvas = g_new (gfloat, n);
  for (i = 0; i < n; i++)
    canvas[i] = p3d_test_rng_uniform (&rng, 0.0f, 3.0f);
  buffers = p3dc_convnet_cpu_buffers_new (&network->desc);
  fail_unless_equals_int (p3dc_convnet_cpu (&network->desc, canvas, buffers),
      P3DC_OK);
  mine = g_malloc0 (capacity * 36);
  theirs = g_malloc0 (capacity * 36);
  boxes.boxes = mine;
  boxes.count = &count_mine;
  boxes.velocity = NULL;
  fail_unless_equals_int (p3d_model_decoder_run_cpu (decoder, buffers,
          &boxes), P3DC_OK);
  memset (maps, 0, sizeof maps);
  for (t = 0; t < typed->config.n_tasks; t++) {
    P3dcMapView *views[P3D_CENTERPOINT_N_HEADS] = {
      &maps[t].reg, &maps[t].height, &maps[t].dim, &maps[t].rot,
      &maps[t].vel, &maps[t].heatmap
    };

    for (h = 0; h < P3D_CENTERPOINT_N_HEADS; h++) {
      p3dc_convnet_cpu_view (&typed->net, typed->heads[t][h].buffer,
          buffers[typed->heads[t][h].buffer], views[h]);
      p3dc_map_view_offset_channels (views[h],
          typed->heads[t][h].channel_offset);
    }
  }
  output.boxes = (P3dcBox3d *) theirs;
  output.count = &count_theirs;
  output.velocity = NULL;
  fail_unless_equals_int (p3dc_centerpoint_decode_cpu (&params, maps,
          &output), P3DC_OK);
  fail_unless (count_mine > 0);
  fail_unless_equals_int (count_mine, count_theirs);
  fail_unless (memcmp (mine, theirs, count_mine * 36) == 0);

  g_free (mine);
  g_free (theirs);
  g_free (canvas);
  p3dc_convnet_cpu_buffers_free (&network->desc, buffers);
  p3d_model_decoder_free (decoder);
  p3d_centerpoint_model_free (typed);
  p3d_model_free (model);
  p3d_weights_free (weights);
  g_unlink (path);
  g_free (path);
  tiny_model_free (m);
}

GST_END_TEST;

static Suite *
model_suite (void)
{
  Suite *s = suite_create ("model");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_every_op);
  tcase_add_test (tc, test_concat_placement);
  tcase_add_test (tc, test_merged_heads);
  tcase_add_test (tc, test_json_round_trip);
  tcase_add_loop_test (tc, test_bad_graph, 0, G_N_ELEMENTS (bad_graphs));
  tcase_add_test (tc, test_bad_tensors);
  tcase_add_test (tc, test_centerpoint_explicit_graph);
  tcase_add_test (tc, test_decoder);
  return s;
}

P3D_CHECK_MAIN (model);
