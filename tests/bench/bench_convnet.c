/* Benchmark of the convolutional network (backbone + neck + head) at the
 * nuScenes CenterPoint-pillar shapes, with random weights:
 *
 *   bench_convnet [--runs N] [--layers]
 *
 * Input 64 x 512 x 512; SECOND backbone [64, 128, 256] with [3, 5, 5]
 * extra layers after a stride-2 one each; SECONDFPN neck (stride 0.5: 2x2
 * stride-2 convolution, 1: 1x1 convolution, 2: 2x2 transposed
 * convolution) to 128 channels each, concatenated; CenterHead: shared 3x3
 * 384 -> 64, then for each of the 6 nuScenes tasks (1, 2, 2, 1, 2, 2
 * classes) 6 heads (reg 2, height 1, dim 3, rot 2, vel 2, heatmap) of
 * 3x3 64 -> 64 + ReLU and 3x3 64 -> n.
 *
 * Each case (F16 and F32 storage, the input in the storage's type) prints
 * how runs launch (the CUDA graph, or why not), then one line: the GPU time
 * of one whole run (p3dc_convnet_cuda_run: the input's conversion and the
 * graph) by CUDA events, median (p10, p90) of --runs after a warm-up, and
 * the creation time; then the same for plain per-layer launches
 * (p3dc_convnet_cuda_run_profiled without events), whose gaps between
 * layers show the host's cost per launch.  --layers adds the per-layer
 * split (plain launches with events between layers; their median per
 * layer, host gaps included) and how each layer runs.  The heatmaps of F16 and F32 are compared first
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
model_new (P3dTestRng * rng)
{
  static const guint32 widths[3] = { 64, 128, 256 }, nums[3] = { 3, 5, 5 };

  return convnet_test_net_centerpoint (rng, IN_CHANNELS, GRID, GRID, widths,
      nums, 128, 64, TASKS, FALSE);
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

/* Every heatmap of @net as float32, in buffer order, NCHW. */
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
    guint32 c, y, x;
    gsize n;

    P3D_BENCH_CHECK (p3dc_convnet_cuda_view (net, b, &view));
    /* up to the last element: the storage may hold padding channels */
    n = (buf->channels - 1) * view.channel_stride + (buf->height - 1) *
        view.row_stride + (buf->width - 1) * view.column_stride + 1;
    host = g_malloc (n * (view.half ? 2 : 4));
    P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (host, view.data,
            n * (view.half ? 2 : 4), stream));
    P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (stream));
    for (c = 0; c < buf->channels; c++)
      for (y = 0; y < buf->height; y++)
        for (x = 0; x < buf->width; x++) {
          gsize at = c * view.channel_stride + y * view.row_stride +
              x * view.column_stride;
          gfloat v = view.half ? p3dc_half_to_float (((guint16 *) host)[at])
              : ((gfloat *) host)[at];

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
  GOptionEntry entries[] = {
    {"runs", 0, 0, G_OPTION_ARG_INT, &runs, "timed runs per case (200)", "N"},
    {"layers", 0, 0, G_OPTION_ARG_NONE, &layers,
        "print the per-layer split and plan", NULL},
    {NULL}
  };
  GOptionContext *context =
      g_option_context_new ("- time the CenterPoint-pillar network");
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
  model = model_new (&rng);
  n_input = p3dc_convnet_buffer_elements (&model->desc, 0);
  input = model->input;
  input_half = g_new (guint16, n_input);
  /* a pillar canvas: most cells empty, the others ReLU outputs */
  for (i = 0; i < n_input; i++) {
    input[i] = p3d_test_rng_below (&rng, 8) == 0 ?
        p3d_test_rng_uniform (&rng, 0.0f, 2.0f) : 0.0f;
    input_half[i] = p3dc_float_to_half (input[i]);
  }
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&device_input[0], n_input * 4));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&device_input[1], n_input * 2));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_htod (device_input[0], input, n_input * 4,
          stream));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_htod (device_input[1], input_half,
          n_input * 2, stream));
  P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (stream));

  g_print ("CenterPoint-pillar network (nuScenes shapes, %u layers, random "
      "weights) on %s (sm_%d%d, %d SMs); GPU time of one run in us, median "
      "(p10-p90) of %d runs\n", model->desc.n_layers, device_name, major,
      minor, sms, runs);
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
  g_print ("heatmaps F16 against F32: largest difference %.3g, largest "
      "|F32| %.3g (relative %.3g)\n", worst, largest,
      largest > 0 ? worst / largest : 0.0);

  g_free (maps[0]);
  g_free (maps[1]);
  p3dc_cuda_free (device_input[0]);
  p3dc_cuda_free (device_input[1]);
  p3dc_cuda_stream_destroy (stream);
  g_free (input_half);
  convnet_test_net_free (model);
  return 0;
}
