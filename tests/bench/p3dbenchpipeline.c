/* Pipeline benchmark helpers (p3dbenchpipeline.h). */
#include <string.h>

#include "p3dbenchpipeline.h"
#include "p3dperception.h"

gdouble
p3d_bench_now_s (void)
{
  return g_get_monotonic_time () / 1e6;
}

gboolean
p3d_bench_wait_eos (GstElement * pipeline)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *msg = gst_bus_timed_pop_filtered (bus, GST_CLOCK_TIME_NONE,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  gboolean eos = GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS;

  if (!eos) {
    GError *error = NULL;
    gchar *debug = NULL;

    gst_message_parse_error (msg, &error, &debug);
    g_printerr ("pipeline error: %s (%s)\n", error->message, debug);
    g_clear_error (&error);
    g_free (debug);
  }
  gst_message_unref (msg);
  gst_object_unref (bus);
  return eos;
}

guint32
p3d_bench_wait_last_pillars (GstElement * pipeline)
{
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  GstSample *sample = NULL;
  guint32 count = 0;

  g_object_get (sink, "last-sample", &sample, NULL);
  if (sample) {
    GstBuffer *buffer = gst_sample_get_buffer (sample);
    GstMemory *mem = gst_buffer_peek_memory (buffer,
        P3D_PILLARS_TENSOR_COUNT);
    GstMapInfo info;

    if (gst_memory_map (mem, &info, GST_MAP_READ)) {
      memcpy (&count, info.data, sizeof (count));
      gst_memory_unmap (mem, &info);
    }
    gst_sample_unref (sample);
  }
  gst_object_unref (sink);
  return count;
}
