/* Two GPUs: the voxelize ! pillarfeat chain on one device and split over
 * two, two pipelines on two devices at once, and what the handoff between
 * devices costs.
 *
 *   bench_multigpu [SWEEP.bin] [FRAMES]
 *
 * The points are one sweep already on the GPU, pushed again and again by
 * appsrc as in bench_chain's first row (SWEEP.bin, xyzi float32; without
 * it, one frame of pointcloudtestsrc's defaults). Rows:
 *  - one device: the points, voxelize and pillarfeat on device 0;
 *  - split: the points on device 0, voxelize and pillarfeat on device 1, so
 *    that every frame crosses: voxelize's stream waits for the points'
 *    event and copies them with p3dc_cuda_memcpy_peer, as the base class
 *    does for any input on another device;
 *  - two pipelines at once, each with its points and elements on its own
 *    device, in two threads: frames per second of each.
 * Then the handoff alone: the copy of the sweep's bytes from device 0 to
 * device 1 on a stream of device 1, timed with CUDA events (median of 500
 * after 50 warm-up copies), and the frame time of the split row less that
 * of the one-device row. Each pipeline row times FRAMES frames (default
 * 20000) after 200 warm-up frames, the host waiting for the last output.
 * Prints markdown tables; says so and exits 0 below two devices. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>

#include "p3dbench.h"
#include "p3dbenchpipeline.h"
#include "p3dperception.h"

#define WARMUP_FRAMES 200
#define COPY_WARMUP 50
#define COPY_RUNS 500


/* One sweep of pointcloudtestsrc in system memory. */
static GBytes *
test_sweep (void)
{
  GstElement *pipeline = gst_parse_launch ("pointcloudtestsrc num-buffers=1 "
      "format=xyzi ! application/x-point-cloud,format=xyzi "
      "! appsink name=sink", NULL);
  GstElement *sink;
  GstSample *sample;
  GBytes *bytes = NULL;

  if (pipeline == NULL)
    return NULL;
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  sample = gst_app_sink_pull_sample (GST_APP_SINK (sink));
  if (sample) {
    GstBuffer *buffer = gst_sample_get_buffer (sample);
    GstMapInfo info;

    if (gst_buffer_map (buffer, &info, GST_MAP_READ)) {
      bytes = g_bytes_new (info.data, info.size);
      gst_buffer_unmap (buffer, &info);
    }
    gst_sample_unref (sample);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  return bytes;
}

/* A buffer of one CUDA memory on @device holding @sweep. */
static GstBuffer *
device_sweep (GBytes * sweep, gint device)
{
  GstAllocator *allocator = p3d_cuda_allocator_get (device, NULL);
  GstMemory *mem;
  GstBuffer *buffer;
  GstMapInfo info;

  if (allocator == NULL)
    return NULL;
  mem = p3d_cuda_allocator_alloc (allocator, g_bytes_get_size (sweep));
  gst_object_unref (allocator);
  if (mem == NULL || !gst_memory_map (mem, &info,
          GST_MAP_WRITE | P3D_MAP_OVERWRITE)) {
    if (mem)
      gst_memory_unref (mem);
    return NULL;
  }
  memcpy (info.data, g_bytes_get_data (sweep, NULL), info.size);
  gst_memory_unmap (mem, &info);
  buffer = gst_buffer_new ();
  gst_buffer_append_memory (buffer, mem);
  return buffer;
}



typedef struct
{
  GBytes *sweep;
  gint points_device;
  gint chain_device;
  guint frames;
  gdouble fps;
  guint32 pillars;
  gboolean ok;
} ChainRun;

static void
chain_run_init (ChainRun * run, GBytes * sweep, gint points_device,
    gint chain_device, guint frames)
{
  memset (run, 0, sizeof (*run));
  run->sweep = sweep;
  run->points_device = points_device;
  run->chain_device = chain_device;
  run->frames = frames;
}

/* appsrc pushes the sweep, resident on @run->points_device, through the
 * chain on @run->chain_device. */
static void
run_chain (ChainRun * run)
{
  GstBuffer *sweep = device_sweep (run->sweep, run->points_device);
  gchar *launch = g_strdup_printf ("appsrc name=src format=time "
      "! voxelize cuda-device-id=%d ! pillarfeat cuda-device-id=%d "
      "! application/x-pillar-features(memory:CUDAMemory),format=F16 "
      "! fakesink name=sink sync=false enable-last-sample=true",
      run->chain_device, run->chain_device);
  GstElement *pipeline = gst_parse_launch (launch, NULL);
  GstElement *src;
  GstCaps *caps;
  gdouble start = 0.0;
  guint i;

  g_free (launch);
  run->ok = FALSE;
  if (sweep == NULL || pipeline == NULL) {
    g_printerr ("cannot place the sweep on device %d or build the "
        "pipeline\n", run->points_device);
    gst_clear_buffer (&sweep);
    gst_clear_object (&pipeline);
    return;
  }
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  caps = gst_caps_from_string ("application/x-point-cloud("
      P3D_CAPS_FEATURE_MEMORY_CUDA "),format=xyzi");
  g_object_set (src, "caps", caps, "max-buffers", (guint64) 8, "block", TRUE,
      NULL);
  gst_caps_unref (caps);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  for (i = 0; i < WARMUP_FRAMES + run->frames; i++) {
    if (i == WARMUP_FRAMES) {
      p3d_bench_wait_last_pillars (pipeline);
      start = p3d_bench_now_s ();
    }
    if (gst_app_src_push_buffer (GST_APP_SRC (src),
            gst_buffer_ref (sweep)) != GST_FLOW_OK)
      break;
  }
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  if (p3d_bench_wait_eos (pipeline)) {
    run->pillars = p3d_bench_wait_last_pillars (pipeline);
    run->fps = run->frames / (p3d_bench_now_s () - start);
    run->ok = TRUE;
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (pipeline);
  gst_buffer_unref (sweep);
}

static gpointer
run_chain_thread (gpointer data)
{
  run_chain (data);
  return NULL;
}

typedef struct
{
  gpointer dst;
  gconstpointer src;
  gsize size;
} PeerCopy;

static P3dcResult
peer_copy (gpointer user_data, P3dcCudaStream stream)
{
  PeerCopy *copy = user_data;

  return p3dc_cuda_memcpy_peer (copy->dst, 1, copy->src, 0, copy->size, stream);
}

/* The copy of @size bytes from device 0 to device 1, queued on a stream of
 * device 1 as the consumer's stream queues it. */
static void
time_peer_copy (gsize size, P3dBenchStats * stats, gint * peer_access)
{
  P3dcCudaStream stream = NULL;
  gpointer src = NULL;
  PeerCopy copy;
  gint previous, outer;

  P3D_BENCH_CHECK (p3dc_cuda_device_push (0, &outer));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&src, size));
  P3D_BENCH_CHECK (p3dc_cuda_memset (src, 0x3f, size, NULL));
  P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (NULL));
  P3D_BENCH_CHECK (p3dc_cuda_device_push (1, &previous));
  /* as the consumer asks before its first copy (on already by then) */
  P3D_BENCH_CHECK (p3dc_cuda_enable_peer_access (0, peer_access));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&copy.dst, size));
  P3D_BENCH_CHECK (p3dc_cuda_stream_create (&stream));
  copy.src = src;
  copy.size = size;
  /* the events of the timing are created here, on device 1 */
  P3D_BENCH_CHECK (p3d_bench_gpu (peer_copy, &copy, stream, COPY_WARMUP,
          COPY_RUNS, stats));
  P3D_BENCH_CHECK (p3dc_cuda_stream_destroy (stream));
  P3D_BENCH_CHECK (p3dc_cuda_free (copy.dst));
  P3D_BENCH_CHECK (p3dc_cuda_device_pop (previous));
  P3D_BENCH_CHECK (p3dc_cuda_free (src));
  P3D_BENCH_CHECK (p3dc_cuda_device_pop (outer));
}

static void
print_chain_row (const gchar * name, const ChainRun * run)
{
  g_print ("| %s | %u | %.0f | %.1f | %u |\n", name, run->frames, run->fps,
      1e6 / run->fps, run->pillars);
}

int
main (int argc, char **argv)
{
  gint count;
  GBytes *sweep;
  guint frames;
  ChainRun one, split, both[2];
  GThread *threads[2];
  P3dBenchStats copy;
  gint d, peer_access = 0;

  gst_init (&argc, &argv);
  count = p3dc_cuda_device_count ();
  if (count < 2) {
    g_print ("bench_multigpu: needs two CUDA devices, %d found; nothing "
        "measured\n", count);
    return 0;
  }
  if (argc > 1) {
    gchar *contents = NULL;
    gsize size = 0;

    if (!g_file_get_contents (argv[1], &contents, &size, NULL)) {
      g_printerr ("cannot read %s\n", argv[1]);
      return 1;
    }
    sweep = g_bytes_new_take (contents, size);
  } else {
    sweep = test_sweep ();
    if (sweep == NULL) {
      g_printerr ("cannot render pointcloudtestsrc's sweep: is the plugin "
          "found?\n");
      return 1;
    }
  }
  frames = argc > 2 ? (guint) atoi (argv[2]) : 20000;

  chain_run_init (&one, sweep, 0, 0, frames);
  chain_run_init (&split, sweep, 0, 1, frames);
  run_chain (&one);
  run_chain (&split);
  for (d = 0; d < 2; d++) {
    chain_run_init (&both[d], sweep, d, d, frames);
    threads[d] = g_thread_new ("chain", run_chain_thread, &both[d]);
  }
  for (d = 0; d < 2; d++)
    g_thread_join (threads[d]);
  if (!one.ok || !split.ok || !both[0].ok || !both[1].ok)
    return 1;
  time_peer_copy (g_bytes_get_size (sweep), &copy, &peer_access);

  g_print ("| voxelize ! pillarfeat (F16, CUDA memory), %s (%" G_GSIZE_FORMAT
      " bytes), %d devices | frames | frames/s | us/frame | pillars in "
      "last frame |\n|---|---|---|---|---|\n", argc > 1 ? argv[1] :
      "pointcloudtestsrc sweep", g_bytes_get_size (sweep), count);
  print_chain_row ("one device: points and chain on device 0", &one);
  print_chain_row ("split: points on device 0, chain on device 1", &split);
  print_chain_row ("two pipelines at once: device 0", &both[0]);
  print_chain_row ("two pipelines at once: device 1", &both[1]);
  g_print ("\n| handoff of the sweep, device 0 -> 1 (peer access %s) | "
      "median us | p10 us | p90 us | GB/s at the median |\n"
      "|---|---|---|---|---|\n", peer_access ? "on" : "not possible: "
      "staged through the host");
  g_print ("| p3dc_cuda_memcpy_peer alone (CUDA events, %u runs) | %.1f | "
      "%.1f | %.1f | %.1f |\n", copy.runs, copy.median_us, copy.p10_us,
      copy.p90_us, g_bytes_get_size (sweep) / (copy.median_us * 1e3));
  g_print ("| in the pipeline: split us/frame less one-device us/frame | "
      "%.1f | | | |\n", 1e6 / split.fps - 1e6 / one.fps);
  g_bytes_unref (sweep);
  return 0;
}
