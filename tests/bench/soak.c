/* Soak run: many frames through the lidar chain and the NMS branch, with the
 * process's memory (resident set) and the device's memory in use sampled
 * every few thousand frames, so a leak shows as a trend. Not a test: the
 * numbers go into docs/performance.md.
 *
 *   soak [--frames N] [--backend cuda|cpu] [--every K] [--motion]
 *
 * The lidar branch is pointcloudtestsrc ! voxelize ! pillarfeat ! fakesink,
 * the box branch pointcloudtestsrc emit=candidates ! nms ! boxenc ! fakesink,
 * in one pipeline; with the CUDA backend the buffers stay in device memory.
 * It exits 1 when the pipeline posts an error or memory grows by more than
 * the tolerance between the first sample after warm-up and the last. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gst/gst.h>

#include "runtime.h"

typedef struct
{
  guint64 frames;
  guint every;
  gint64 start_us;
  GArray *samples;              /* Sample */
} Soak;

typedef struct
{
  guint64 frame;
  gdouble seconds;
  gsize rss_kb;
  gsize device_used_mb;
} Sample;

static gsize
rss_kb (void)
{
  gchar *status = NULL;
  gsize kb = 0;
  const gchar *line;

  if (!g_file_get_contents ("/proc/self/status", &status, NULL, NULL))
    return 0;
  line = strstr (status, "VmRSS:");
  if (line)
    kb = g_ascii_strtoull (line + 6, NULL, 10);
  g_free (status);
  return kb;
}

static gsize
device_used_mb (void)
{
  size_t free_bytes = 0, total_bytes = 0;

  if (p3dc_cuda_memory_info (&free_bytes, &total_bytes) != P3DC_OK)
    return 0;
  return (total_bytes - free_bytes) >> 20;
}

static GstPadProbeReturn
count_frame (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  Soak *soak = user_data;

  soak->frames++;
  if (soak->frames % soak->every == 0) {
    Sample s;

    s.frame = soak->frames;
    s.seconds = (g_get_monotonic_time () - soak->start_us) / 1e6;
    s.rss_kb = rss_kb ();
    s.device_used_mb = device_used_mb ();
    g_array_append_val (soak->samples, s);
    g_printerr ("frame %" G_GUINT64_FORMAT ": %.1f s, RSS %" G_GSIZE_FORMAT
        " kB, device %" G_GSIZE_FORMAT " MB\n", s.frame, s.seconds, s.rss_kb,
        s.device_used_mb);
  }
  return GST_PAD_PROBE_OK;
}

int
main (int argc, char **argv)
{
  gint frames = 100000, every = 5000;
  gchar *backend = NULL;
  gboolean motion = FALSE;
  GOptionEntry entries[] = {
    {"frames", 'n', 0, G_OPTION_ARG_INT, &frames, "Frames", "N"},
    {"every", 0, 0, G_OPTION_ARG_INT, &every, "Sample every K frames", "K"},
    {"backend", 'b', 0, G_OPTION_ARG_STRING, &backend, "cuda or cpu", "B"},
    {"motion", 0, 0, G_OPTION_ARG_NONE, &motion,
        "Moving scene (every frame generated; slower source)", NULL},
    {NULL},
  };
  GOptionContext *context = g_option_context_new ("- soak run");
  GError *error = NULL;
  GstElement *pipeline, *sink;
  GstPad *pad;
  GstBus *bus;
  GstMessage *msg;
  Soak soak = { 0 };
  gchar *launch;
  gboolean ok;
  const gchar *memory;
  Sample first, last;
  gdouble grow_rss, grow_device;

  g_option_context_add_main_entries (context, entries, NULL);
  g_option_context_add_group (context, gst_init_get_option_group ());
  if (!g_option_context_parse (context, &argc, &argv, &error)) {
    g_printerr ("%s\n", error->message);
    return 2;
  }
  g_option_context_free (context);
  if (backend == NULL)
    backend = g_strdup ("cuda");
  memory = g_str_equal (backend, "cuda") ? "(memory:CUDAMemory)" : "";
  launch = g_strdup_printf ("pointcloudtestsrc num-buffers=%d motion=%s "
      "! application/x-point-cloud%s ! voxelize backend=%s "
      "! pillarfeat backend=%s ! application/x-pillar-features%s "
      "! fakesink name=sink sync=false "
      "pointcloudtestsrc emit=candidates num-buffers=%d motion=%s "
      "! application/x-boxes3d%s ! nms backend=%s ! boxenc "
      "! fakesink sync=false", frames, motion ? "true" : "false", memory,
      backend, backend, memory, frames, motion ? "true" : "false", memory,
      backend);
  pipeline = gst_parse_launch (launch, &error);
  if (pipeline == NULL) {
    g_printerr ("%s: %s\n", launch, error->message);
    return 2;
  }
  g_print ("pipeline: gst-launch-1.0 %s\n", launch);
  g_free (launch);

  soak.every = every;
  soak.samples = g_array_new (FALSE, FALSE, sizeof (Sample));
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  pad = gst_element_get_static_pad (sink, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, count_frame, &soak, NULL);
  gst_object_unref (pad);
  gst_object_unref (sink);

  soak.start_us = g_get_monotonic_time ();
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  bus = gst_element_get_bus (pipeline);
  msg = gst_bus_timed_pop_filtered (bus, GST_CLOCK_TIME_NONE,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  ok = GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS;
  if (!ok) {
    gchar *debug = NULL;

    gst_message_parse_error (msg, &error, &debug);
    g_printerr ("error: %s (%s)\n", error->message, debug);
  }
  gst_message_unref (msg);
  gst_object_unref (bus);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);

  g_print ("\n| frame | seconds | host RSS (kB) | device in use (MB) |\n"
      "|---|---|---|---|\n");
  for (guint i = 0; i < soak.samples->len; i++) {
    Sample *s = &g_array_index (soak.samples, Sample, i);

    g_print ("| %" G_GUINT64_FORMAT " | %.1f | %" G_GSIZE_FORMAT " | %"
        G_GSIZE_FORMAT " |\n", s->frame, s->seconds, s->rss_kb,
        s->device_used_mb);
  }
  if (soak.samples->len < 3) {
    g_print ("too few samples\n");
    return ok ? 0 : 1;
  }
  /* the first sample is warm-up (pools filling); compare the second with
   * the last */
  first = g_array_index (soak.samples, Sample, 1);
  last = g_array_index (soak.samples, Sample, soak.samples->len - 1);
  grow_rss = (gdouble) last.rss_kb - (gdouble) first.rss_kb;
  grow_device = (gdouble) last.device_used_mb - (gdouble) first.device_used_mb;
  g_print ("\n%s backend, %" G_GUINT64_FORMAT " frames in %.1f s (%.0f "
      "frames/s): host RSS %+.0f kB, device %+.0f MB between frame %"
      G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT "; errors: %s\n", backend,
      soak.frames, last.seconds, last.frame / last.seconds, grow_rss,
      grow_device, first.frame, last.frame, ok ? "none" : "yes");
  g_array_free (soak.samples, TRUE);
  g_free (backend);
  /* a few MB of RSS drift is allocator noise; a leak of even one small
   * buffer per frame is far above it over this many frames */
  return ok && grow_rss < 8192 && grow_device < 8 ? 0 : 1;
}
