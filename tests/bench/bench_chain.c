/* The voxelize ! pillarfeat chain in a pipeline: frames per second with the
 * points already on the GPU (appsrc pushing one device buffer again and
 * again, so only the chain is measured) and from files (multifilesrc
 * reading KITTI sweeps, uploaded every frame).
 *
 *   bench_chain SWEEP.bin FILE_PATTERN [FRAMES] [cpu]
 *
 * With "cpu" last, the same pipelines run with backend=cpu in system memory
 * (to check the benchmark itself on a machine without a GPU).
 *
 * SWEEP.bin is one xyzi float32 sweep; FILE_PATTERN a multifilesrc location
 * such as .benchdata/kitti/%06d.bin. The pipelines end in fakesink with
 * memory:CUDAMemory caps, so no host synchronization happens between the
 * elements; after the last frame the host waits for the last output (a
 * host map of its count tensor waits on that memory's event), so the time
 * covers all the GPU work. Prints a markdown table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gst/app/gstappsrc.h>
#include <gst/gst.h>

#include "p3dbenchpipeline.h"
#include "p3dperception.h"

#define WARMUP_FRAMES 200




static const gchar *chain_cuda =
    "voxelize ! pillarfeat ! "
    "application/x-pillar-features(memory:CUDAMemory),format=F16 ! "
    "fakesink name=sink sync=false enable-last-sample=true";
static const gchar *chain_cpu =
    "voxelize backend=cpu ! pillarfeat backend=cpu ! "
    "application/x-pillar-features,format=F16 ! "
    "fakesink name=sink sync=false enable-last-sample=true";
static const gchar *chain;
static gboolean on_cpu;

/* appsrc pushes @frames times the same device-resident sweep. */
static gboolean
run_resident (const gchar * sweep_path, guint frames, gdouble * fps,
    guint32 * pillars)
{
  gchar *contents = NULL, *launch;
  gsize size = 0;
  GstElement *pipeline, *src;
  GstBuffer *sweep;
  GstCaps *caps;
  GstAllocator *allocator;
  GstMemory *mem;
  GstMapInfo info;
  gdouble start = 0.0;
  guint i;

  if (!g_file_get_contents (sweep_path, &contents, &size, NULL)) {
    g_printerr ("cannot read %s\n", sweep_path);
    return FALSE;
  }
  allocator = on_cpu ? NULL : p3d_cuda_allocator_get (0, NULL);
  if (allocator == NULL && !on_cpu) {
    g_printerr ("no CUDA device\n");
    return FALSE;
  }
  mem = on_cpu ? gst_allocator_alloc (NULL, size, NULL) :
      p3d_cuda_allocator_alloc (allocator, size);
  gst_memory_map (mem, &info, GST_MAP_WRITE | P3D_MAP_OVERWRITE);
  memcpy (info.data, contents, size);
  gst_memory_unmap (mem, &info);
  sweep = gst_buffer_new ();
  gst_buffer_append_memory (sweep, mem);

  launch = g_strdup_printf ("appsrc name=src format=time ! %s", chain);
  pipeline = gst_parse_launch (launch, NULL);
  g_free (launch);
  if (pipeline == NULL) {
    g_printerr ("cannot build the pipeline: is the plugin found?\n");
    return FALSE;
  }
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  caps = gst_caps_from_string (on_cpu ?
      "application/x-point-cloud,format=xyzi" : "application/x-point-cloud("
      P3D_CAPS_FEATURE_MEMORY_CUDA "),format=xyzi");
  g_object_set (src, "caps", caps, "max-buffers", (guint64) 8, "block", TRUE,
      NULL);
  gst_caps_unref (caps);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  for (i = 0; i < WARMUP_FRAMES + frames; i++) {
    if (i == WARMUP_FRAMES) {
      p3d_bench_wait_last_pillars (pipeline);
      start = p3d_bench_now_s ();
    }
    if (gst_app_src_push_buffer (GST_APP_SRC (src),
            gst_buffer_ref (sweep)) != GST_FLOW_OK)
      break;
    if (i % 5000 == 0)
      g_printerr ("pushed %u frames after %.2f s\n", i,
          start > 0.0 ? p3d_bench_now_s () - start : 0.0);
  }
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  if (!p3d_bench_wait_eos (pipeline))
    return FALSE;
  *pillars = p3d_bench_wait_last_pillars (pipeline);
  *fps = frames / (p3d_bench_now_s () - start);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (pipeline);
  gst_buffer_unref (sweep);
  gst_clear_object (&allocator);
  g_free (contents);
  return TRUE;
}

/* multifilesrc reads the sweeps from files, looping over them. */
static gboolean
run_files (const gchar * pattern, guint frames, gdouble * fps,
    guint32 * pillars)
{
  gchar *launch = g_strdup_printf ("multifilesrc location=%s loop=true "
      "num-buffers=%u caps=application/x-point-cloud,format=xyzi ! %s",
      pattern, frames, chain);
  GstElement *pipeline = gst_parse_launch (launch, NULL);
  gdouble start;

  g_free (launch);
  if (pipeline == NULL) {
    g_printerr ("cannot build the pipeline: is the plugin found?\n");
    return FALSE;
  }
  start = p3d_bench_now_s ();
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  if (!p3d_bench_wait_eos (pipeline))
    return FALSE;
  *pillars = p3d_bench_wait_last_pillars (pipeline);
  *fps = frames / (p3d_bench_now_s () - start);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  return TRUE;
}

int
main (int argc, char **argv)
{
  guint frames;
  gdouble fps_resident = 0.0, fps_files = 0.0;
  guint32 pillars_resident = 0, pillars_files = 0;

  gst_init (&argc, &argv);
  if (argc < 3) {
    g_printerr ("usage: %s SWEEP.bin FILE_PATTERN [FRAMES]\n", argv[0]);
    return 2;
  }
  frames = argc > 3 ? (guint) atoi (argv[3]) : 20000;
  on_cpu = argc > 4 && g_str_equal (argv[4], "cpu");
  chain = on_cpu ? chain_cpu : chain_cuda;
  if (!run_resident (argv[1], frames, &fps_resident, &pillars_resident)
      || !run_files (argv[2], frames / 4, &fps_files, &pillars_files))
    return 1;
  g_print ("| chain voxelize ! pillarfeat (F16, %s) | frames | "
      "frames/s | pillars in last frame |\n|---|---|---|---|\n",
      on_cpu ? "backend=cpu, system memory" : "CUDA memory");
  g_print ("| points already on the GPU (appsrc, %s) | %u | %.0f | %u |\n",
      argv[1], frames, fps_resident, pillars_resident);
  g_print ("| from files (multifilesrc %s) | %u | %.0f | %u |\n", argv[2],
      frames / 4, fps_files, pillars_files);
  return 0;
}
