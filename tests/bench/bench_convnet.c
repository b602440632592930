/* Benchmark of the layer graph on the networks of the models, with random
 * weights:
 *
 *   bench_convnet [--runs N] [--layers] [--net centerpoint|bevdet-image|bevdet-bev]
 *
 * centerpoint (the default): the CenterPoint-pillar network at nuScenes
 * shapes. Input 64 x 512 x 512; SECOND backbone [64, 128, 256] with
 * [3, 5, 5] extra layers after a stride-2 one each; SECONDFPN neck (stride
 * 0.5: 2x2 stride-2 convolution, 1: 1x1 convolution, 2: 2x2 transposed
 * convolution) to 128 channels each, concatenated; CenterHead: shared 3x3
 * 384 -> 64, then for each of the 6 nuScenes tasks (1, 2, 2, 1, 2, 2
 * classes) 6 heads (reg 2, height 1, dim 3, rot 2, vel 2, heatmap) of
 * 3x3 64 -> 64 + ReLU and 3x3 64 -> n, as the model layer merges them:
 * the 36 first convolutions as one 64 -> 2304, the 36 final ones as one
 * grouped convolution of 36 groups of 64 -> 8 (n, padded).
 *
 * bevdet-image: BEVDet-R50's image side on six 3 x 256 x 704 images (a
 * batch of 6): torchvision's ResNet-50 (7x7 stride-2 stem, 3x3 stride-2
 * max pool, bottlenecks [3, 4, 6, 3] with the stride on the 3x3 and 1x1
 * downsampling, each shortcut a residual of the block's last conv), the
 * FPNForBEVDet neck (1x1 laterals of stages 3 and 4 to 512, the second
 * upsampled nearest to the first's size and added, a 3x3 conv), the depth
 * net's 1x1 conv to 59 + 64 channels and the softmax over the 59 depth
 * bins; laid out as the model layer lays such a graph out.
 *
 * bevdet-bev: BEVDet's BEV side on a 64 x 128 x 128 canvas:
 * ResNetForBEVDet (BasicBlocks [2, 2, 2] to [128, 256, 512], stride 2,
 * 3x3 downsampling convs), FPN_LSS (stage 3 upsampled x4 bilinearly with
 * align_corners, concatenated with stage 1, two 3x3 convs to 512, x2
 * bilinear, a 3x3 conv to 256 and a 1x1 one) and the CenterHead as above
 * on 256 channels.
 *
 * Each case (F16 and F32 storage, the input in the storage's type) prints
 * how runs launch (the CUDA graph, or why not), then one line: the GPU time
 * of one whole run (p3dc_convnet_cuda_run: the input's conversion and the
 * graph) by CUDA events, median (p10, p90) of --runs after a warm-up, and
 * the creation time; then the same for plain per-layer launches
 * (p3dc_convnet_cuda_run_profiled without events), whose gaps between
 * layers show the host's cost per launch.  --layers adds the per-layer
 * split (plain launches with events between layers; their median per
 * layer, host gaps included) and how each layer runs.  The heatmaps (the
 * depth probabilities of bevdet-image) of F16 and F32 are compared last
 * (largest difference against the largest F32 value), as a check that both
 * computed the same net. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "convnet.h"
#include "p3dtest-convnet.h"
#include "half.h"
#include "p3dbench.h"

#define GRID 512
#define IN_CHANNELS 64
#define TASKS 6

/* The nuScenes shapes of the pattern, with the weights of the tests'
 * random nets (variance 2 / fan-in, as a trained net keeps activations
 * from growing or dying). */
static ConvnetTestNet *
centerpoint_new (P3dTestRng * rng)
{
  static const guint32 widths[3] = { 64, 128, 256 }, nums[3] = { 3, 5, 5 };

  return convnet_test_net_centerpoint (rng, IN_CHANNELS, GRID, GRID, widths,
      nums, 128, 64, TASKS, CONVNET_TEST_HEADS_MERGED);
}

/* A square convolution of @input into a new buffer (or channels [@offset,
 * ...) of @into when it is nonzero), @residual added when not -1; the
 * weights scaled by @scale (a residual branch's last conv small, so that
 * random activations stay in F16's range through the blocks). */
static guint32
conv (ConvnetTestNet * m, P3dTestRng * rng, guint32 input, guint32 out,
    guint32 k, guint32 s, gboolean relu, gint residual, gfloat scale)
{
  P3dcConvBufferDesc in = g_array_index (m->buffers, P3dcConvBufferDesc,
      input);
  P3dcConvLayer layer;
  guint32 p = k / 2, n, i;
  gfloat *w;

  memset (&layer, 0, sizeof layer);
  layer.kind = P3DC_CONV_2D;
  layer.in_channels = in.channels;
  layer.out_channels = out;
  layer.kernel = k;
  layer.stride = s;
  layer.padding = p;
  layer.relu = relu;
  layer.input = input;
  layer.output = convnet_test_net_add_buffer (m, out,
      (in.height + 2 * p - k) / s + 1, (in.width + 2 * p - k) / s + 1);
  if (residual >= 0) {
    layer.residual = 1;
    layer.input2 = residual;
  }
  convnet_test_net_add (m, rng, &layer, 0.1f);
  n = in.channels * out * k * k;
  w = (gfloat *) g_array_index (m->layers, P3dcConvLayer,
      m->layers->len - 1).weight;
  for (i = 0; i < n; i++)
    w[i] *= scale;
  return layer.output;
}

static guint32
layer_of_kind (ConvnetTestNet * m, P3dTestRng * rng, P3dcConvKind kind,
    guint32 input, guint32 in_offset, guint32 channels, guint32 height,
    guint32 width, guint32 output, guint32 out_offset)
{
  P3dcConvLayer layer;

  memset (&layer, 0, sizeof layer);
  layer.kind = kind;
  layer.in_channels = layer.out_channels = channels;
  layer.input = input;
  layer.input_channel_offset = in_offset;
  layer.output = output ? output : convnet_test_net_add_buffer (m, channels,
      height, width);
  layer.output_channel_offset = out_offset;
  layer.align_corners = kind == P3DC_LAYER_UPSAMPLE_BILINEAR;
  convnet_test_net_add (m, rng, &layer, 0.0f);
  return layer.output;
}

/* torchvision's Bottleneck: 1x1, 3x3 (the stride), 1x1 with the shortcut
 * as its residual, then ReLU. */
static guint32
bottleneck (ConvnetTestNet * m, P3dTestRng * rng, guint32 x, guint32 planes,
    guint32 stride, gboolean downsample)
{
  guint32 a = conv (m, rng, x, planes, 1, 1, TRUE, -1, 1.0f);
  guint32 b = conv (m, rng, a, planes, 3, stride, TRUE, -1, 1.0f);
  guint32 identity = downsample ? conv (m, rng, x, planes * 4, 1, stride,
      FALSE, -1, 1.0f) : x;

  return conv (m, rng, b, planes * 4, 1, 1, TRUE, identity, 0.3f);
}

static ConvnetTestNet *
bevdet_image_new (P3dTestRng * rng)
{
  static const guint32 blocks[4] = { 3, 4, 6, 3 };
  ConvnetTestNet *m = convnet_test_net_new (3, 256, 704);
  guint32 x, stage, b, c3 = 0, lateral0, lateral1, up, sum, fpn, depth;
  P3dcConvBufferDesc pooled;
  P3dcConvLayer pool;

  m->desc.batch = 6;
  x = conv (m, rng, 0, 64, 7, 2, TRUE, -1, 1.0f);
  memset (&pool, 0, sizeof pool);
  pool.kind = P3DC_LAYER_MAX_POOL;
  pool.in_channels = pool.out_channels = 64;
  pool.kernel = 3;
  pool.stride = 2;
  pool.padding = 1;
  pool.input = x;
  pool.output = convnet_test_net_add_buffer (m, 64, 64, 176);
  convnet_test_net_add (m, rng, &pool, 0.0f);
  x = pool.output;
  for (stage = 0; stage < 4; stage++) {
    for (b = 0; b < blocks[stage]; b++)
      x = bottleneck (m, rng, x, 64u << stage, b == 0 && stage > 0 ? 2 : 1,
          b == 0);
    if (stage == 2)
      c3 = x;
  }
  /* FPNForBEVDet: laterals, the nearest upsampling of the second to the
   * first's size, their sum (an add: the upsampling runs after the first
   * lateral), a 3x3 conv */
  lateral0 = conv (m, rng, c3, 512, 1, 1, FALSE, -1, 1.0f);
  lateral1 = conv (m, rng, x, 512, 1, 1, FALSE, -1, 1.0f);
  pooled = g_array_index (m->buffers, P3dcConvBufferDesc, lateral0);
  up = layer_of_kind (m, rng, P3DC_LAYER_UPSAMPLE_NEAREST, lateral1, 0, 512,
      pooled.height, pooled.width, 0, 0);
  sum = layer_of_kind (m, rng, P3DC_LAYER_ADD, lateral0, 0, 512,
      pooled.height, pooled.width, 0, 0);
  g_array_index (m->layers, P3dcConvLayer, m->layers->len - 1).input2 = up;
  fpn = conv (m, rng, sum, 512, 3, 1, FALSE, -1, 1.0f);
  /* the depth net: 59 depth logits and 64 context channels in one 1x1
   * conv; the softmax reads the depth slice in place */
  depth = conv (m, rng, fpn, 59 + 64, 1, 1, FALSE, -1, 1.0f);
  layer_of_kind (m, rng, P3DC_LAYER_SOFTMAX, depth, 0, 59, pooled.height,
      pooled.width, 0, 0);
  g_array_append_val (m->heatmap_layers, (guint32) {
      m->layers->len - 1}
  );
  convnet_test_net_finish (m, rng);
  return m;
}

/* mmdet's BasicBlock with ResNetForBEVDet's 3x3 downsampling conv. */
static guint32
basic_block (ConvnetTestNet * m, P3dTestRng * rng, guint32 x, guint32 out,
    guint32 stride, gboolean downsample)
{
  guint32 a = conv (m, rng, x, out, 3, stride, TRUE, -1, 1.0f);
  guint32 identity = downsample ? conv (m, rng, x, out, 3, stride, FALSE, -1,
      1.0f) : x;

  return conv (m, rng, a, out, 3, 1, TRUE, identity, 0.3f);
}

static ConvnetTestNet *
bevdet_bev_new (P3dTestRng * rng)
{
  static const guint32 classes[6] = { 1, 2, 2, 1, 2, 2 };
  ConvnetTestNet *m = convnet_test_net_new (64, 128, 128);
  guint32 x = 0, feats[3], stage, cat, up, y, shared;

  for (stage = 0; stage < 3; stage++) {
    x = basic_block (m, rng, x, 128u << stage, 2, TRUE);
    x = basic_block (m, rng, x, 128u << stage, 1, FALSE);
    feats[stage] = x;
  }
  /* FPN_LSS: stage 1 (read by a conv, so copied into the concatenation)
   * and stage 3 upsampled x4 */
  cat = convnet_test_net_add_buffer (m, 640, 64, 64);
  layer_of_kind (m, rng, P3DC_LAYER_SLICE, feats[0], 0, 128, 64, 64, cat, 0);
  layer_of_kind (m, rng, P3DC_LAYER_UPSAMPLE_BILINEAR, feats[2], 0, 512, 64,
      64, cat, 128);
  y = conv (m, rng, cat, 512, 3, 1, TRUE, -1, 1.0f);
  y = conv (m, rng, y, 512, 3, 1, TRUE, -1, 1.0f);
  up = layer_of_kind (m, rng, P3DC_LAYER_UPSAMPLE_BILINEAR, y, 0, 512, 128,
      128, 0, 0);
  y = conv (m, rng, up, 256, 3, 1, TRUE, -1, 1.0f);
  y = conv (m, rng, y, 256, 1, 1, FALSE, -1, 1.0f);
  shared = conv (m, rng, y, 64, 3, 1, TRUE, -1, 1.0f);
  /* CenterHead as the model layer merges it */
  convnet_test_net_add_merged_heads (m, rng, shared, 64, TASKS, classes);
  convnet_test_net_finish (m, rng);
  return m;
}

typedef struct
{
  P3dcConvNet *net;
  const void *input;
  gboolean half;
  gboolean plain;               /* plain launches, else the graph */
} Run;

static P3dcResult
run_gpu (gpointer user_data, P3dcCudaStream stream)
{
  Run *run = user_data;

  if (run->plain)
    return p3dc_convnet_cuda_run_profiled (run->net, run->input, run->half,
        NULL, stream);
  return p3dc_convnet_cuda_run (run->net, run->input, run->half, stream);
}

/* Every heatmap of @net as float32, in buffer order, NCHW, every batch
 * item. */
static gfloat *
read_heatmaps (const ConvnetTestNet * m, P3dcConvNet * net,
    P3dcCudaStream stream, gsize * count)
{
  GArray *out = g_array_new (FALSE, FALSE, sizeof (gfloat));
  guint i;

  for (i = 0; i < m->heatmap_layers->len; i++) {
    guint32 l = g_array_index (m->heatmap_layers, guint32, i);
    guint32 b = m->desc.layers[l].output;
    const P3dcConvBufferDesc *buf = &m->desc.buffers[b];
    P3dcMapView view;
    guint8 *host;
    guint32 item, c, y, x, batch = p3dc_convnet_batch (&m->desc);
    gsize n;

    P3D_BENCH_CHECK (p3dc_convnet_cuda_view (net, b, &view));
    /* up to the last element: the storage may hold padding channels */
    n = (batch - 1) * view.batch_stride + (buf->channels - 1) *
        view.channel_stride + (buf->height - 1) * view.row_stride +
        (buf->width - 1) * view.column_stride + 1;
    host = g_malloc (n * (view.half ? 2 : 4));
    P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (host, view.data,
            n * (view.half ? 2 : 4), stream));
    P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (stream));
    for (item = 0; item < batch; item++)
      for (c = 0; c < buf->channels; c++)
        for (y = 0; y < buf->height; y++)
          for (x = 0; x < buf->width; x++) {
            gsize at = item * view.batch_stride + c * view.channel_stride +
                y * view.row_stride + x * view.column_stride;
            gfloat v = view.half ?
                p3dc_half_to_float (((guint16 *) host)[at]) :
                ((gfloat *) host)[at];

            g_array_append_val (out, v);
          }
    g_free (host);
  }
  *count = out->len;
  return (gfloat *) g_array_free (out, FALSE);
}

static int
compare_doubles (gconstpointer a, gconstpointer b)
{
  gdouble x = *(const gdouble *) a, y = *(const gdouble *) b;

  return x < y ? -1 : x > y;
}

/* The per-layer split: events around every layer, median per layer. */
static void
print_layers (const ConvnetTestNet * m, P3dcConvNet * net, const void *input,
    gboolean half, guint runs, P3dcCudaStream stream)
{
  guint n_layers = m->desc.n_layers, r, l;
  P3dcCudaEvent *events = g_new (P3dcCudaEvent, n_layers + 1);
  gdouble *times = g_new (gdouble, (gsize) runs * n_layers);
  gdouble *column = g_new (gdouble, runs);
  gdouble total = 0.0;
  char text[256];

  for (l = 0; l <= n_layers; l++)
    P3D_BENCH_CHECK (p3dc_cuda_event_create_timed (&events[l]));
  for (r = 0; r < runs; r++) {
    P3D_BENCH_CHECK (p3dc_convnet_cuda_run_profiled (net, input, half,
            events, stream));
    P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (stream));
    for (l = 0; l < n_layers; l++) {
      float ms;

      P3D_BENCH_CHECK (p3dc_cuda_event_elapsed_ms (&ms, events[l],
              events[l + 1]));
      times[(gsize) l * runs + r] = ms * 1000.0;
    }
  }
  for (l = 0; l < n_layers; l++) {
    memcpy (column, times + (gsize) l * runs, runs * sizeof (gdouble));
    qsort (column, runs, sizeof (gdouble), compare_doubles);
    total += column[runs / 2];
    p3dc_convnet_cuda_describe_layer (net, l, text, sizeof text);
    /* layer 0's time includes the input's conversion */
    g_print ("  layer %2u %8.1f us  %s\n", l, column[runs / 2], text);
  }
  g_print ("  sum of the layers' medians %.1f us\n", total);
  for (l = 0; l <= n_layers; l++)
    P3D_BENCH_CHECK (p3dc_cuda_event_destroy (events[l]));
  g_free (events);
  g_free (times);
  g_free (column);
}

int
main (int argc, char **argv)
{
  gint runs = 200;
  gboolean layers = FALSE;
  gchar *net_name = NULL;
  GOptionEntry entries[] = {
    {"runs", 0, 0, G_OPTION_ARG_INT, &runs, "timed runs per case (200)", "N"},
    {"layers", 0, 0, G_OPTION_ARG_NONE, &layers,
        "print the per-layer split and plan", NULL},
    {"net", 0, 0, G_OPTION_ARG_STRING, &net_name,
          "centerpoint (default), bevdet-image or bevdet-bev",
        "NAME"},
    {NULL}
  };
  GOptionContext *context =
      g_option_context_new ("- time a model's network on the layer graph");
  GError *error = NULL;
  P3dTestRng rng;
  P3dcCudaStream stream = NULL;
  ConvnetTestNet *model;
  char device_name[256] = "", message[512];
  int major = 0, minor = 0, sms = 0;
  gsize n_input, i, n_maps[2];
  gfloat *input;
  guint16 *input_half;
  void *device_input[2];
  gfloat *maps[2];
  gdouble worst = 0.0, largest = 0.0;
  guint pass;

  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error)) {
    g_printerr ("%s\n", error->message);
    return 2;
  }
  g_option_context_free (context);
  if (runs < 1) {
    g_printerr ("--runs must be at least 1\n");
    return 2;
  }
  if (net_name == NULL)
    net_name = g_strdup ("centerpoint");
  if (strcmp (net_name, "centerpoint") != 0
      && strcmp (net_name, "bevdet-image") != 0
      && strcmp (net_name, "bevdet-bev") != 0) {
    g_printerr ("--net is centerpoint, bevdet-image or bevdet-bev, not "
        "\"%s\"\n", net_name);
    return 2;
  }
  if (p3dc_cuda_device_count () == 0) {
    g_printerr ("no CUDA device: %s\n",
        p3dc_result_string (p3dc_cuda_device_probe ()));
    return 1;
  }
  if (p3dc_convnet_cuda_available (message, sizeof message) != P3DC_OK) {
    g_printerr ("%s\n", message);
    return 1;
  }
  P3D_BENCH_CHECK (p3dc_cuda_device_describe (0, device_name,
          sizeof device_name, &major, &minor, &sms));
  P3D_BENCH_CHECK (p3dc_cuda_stream_create (&stream));

  p3d_test_rng_init (&rng, 2024);
  if (strcmp (net_name, "bevdet-image") == 0)
    model = bevdet_image_new (&rng);
  else if (strcmp (net_name, "bevdet-bev") == 0)
    model = bevdet_bev_new (&rng);
  else
    model = centerpoint_new (&rng);
  n_input = p3dc_convnet_buffer_elements (&model->desc, 0);
  input = model->input;
  input_half = g_new (guint16, n_input);
  for (i = 0; i < n_input; i++) {
    /* a pillar canvas: most cells empty, the others ReLU outputs; a
     * normalised image or a camera BEV canvas: values around 0 */
    if (strcmp (net_name, "centerpoint") == 0)
      input[i] = p3d_test_rng_below (&rng, 8) == 0 ?
          p3d_test_rng_uniform (&rng, 0.0f, 2.0f) : 0.0f;
    else if (strcmp (net_name, "bevdet-image") == 0)
      input[i] = p3d_test_rng_uniform (&rng, -2.0f, 2.0f);
    input_half[i] = p3dc_float_to_half (input[i]);
  }
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&device_input[0], n_input * 4));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&device_input[1], n_input * 2));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_htod (device_input[0], input, n_input * 4,
          stream));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_htod (device_input[1], input_half,
          n_input * 2, stream));
  P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (stream));

  g_print ("%s network (%u layers, batch %u, random weights) on %s (sm_%d%d, "
      "%d SMs); GPU time of one run in us, median (p10-p90) of %d runs\n",
      net_name, model->desc.n_layers, p3dc_convnet_batch (&model->desc),
      device_name, major, minor, sms, runs);
  /* pass 0 in F16, pass 1 in F32 */
  for (pass = 0; pass < 2; pass++) {
    const gboolean f16 = pass == 0;
    const gchar *type = f16 ? "F16" : "F32";
    P3dBenchStats stats;
    P3dcConvNet *net = NULL;
    gint64 start = g_get_monotonic_time ();
    P3dcResult result;
    gdouble created_ms;
    Run run;

    result = p3dc_convnet_cuda_new (&model->desc, f16, &net, message,
        sizeof message);
    created_ms = (g_get_monotonic_time () - start) / 1000.0;
    if (result != P3DC_OK) {
      g_printerr ("creation failed: %s (%s)\n", message,
          p3dc_result_string (result));
      return 1;
    }
    run.net = net;
    run.input = device_input[f16];
    run.half = f16;
    run.plain = FALSE;
    g_print ("convnet %s storage runs on: %s\n", type,
        p3dc_convnet_cuda_launch_mode (net, NULL));
    P3D_BENCH_CHECK (p3d_bench_gpu (run_gpu, &run, stream, 20, runs, &stats));
    g_print ("convnet %s storage, %s input: median %.1f us (p10 %.1f, p90 "
        "%.1f), created in %.0f ms\n", type, type, stats.median_us,
        stats.p10_us, stats.p90_us, created_ms);
    run.plain = TRUE;
    P3D_BENCH_CHECK (p3d_bench_gpu (run_gpu, &run, stream, 20, runs, &stats));
    g_print ("convnet %s storage, %s input, plain launches: median %.1f us "
        "(p10 %.1f, p90 %.1f)\n", type, type, stats.median_us,
        stats.p10_us, stats.p90_us);
    if (layers)
      print_layers (model, net, run.input, run.half, MIN (runs, 50), stream);
    P3D_BENCH_CHECK (p3dc_convnet_cuda_run (net, run.input, run.half, stream));
    maps[pass] = read_heatmaps (model, net, stream, &n_maps[pass]);
    p3dc_convnet_cuda_free (net);
  }
  /* maps[0] is F16, maps[1] F32 */
  for (i = 0; i < n_maps[1]; i++) {
    worst = MAX (worst, fabs (maps[0][i] - maps[1][i]));
    largest = MAX (largest, fabs (maps[1][i]));
  }
  g_print ("%s F16 against F32: largest difference %.3g, largest "
      "|F32| %.3g (relative %.3g)\n", strcmp (net_name, "bevdet-image") == 0 ?
      "depth probabilities" : "heatmaps", worst, largest,
      largest > 0 ? worst / largest : 0.0);

  g_free (maps[0]);
  g_free (maps[1]);
  p3dc_cuda_free (device_input[0]);
  p3dc_cuda_free (device_input[1]);
  p3dc_cuda_stream_destroy (stream);
  g_free (input_half);
  convnet_test_net_free (model);
  g_free (net_name);
  return 0;
}
