/* Helpers of the lidar parser tests (see lidartest.h). */
#include <math.h>
#include <string.h>

#include <gio/gio.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/check/gstcheck.h>

#include "p3dtest-lidar.h"
#include "p3dperception.h"

/* An assertion for inner loops: check's own marks every passing one. */
#define EXPECT(cond, ...) \
  G_STMT_START { \
    if (G_UNLIKELY (!(cond))) \
      ck_abort_msg (__VA_ARGS__); \
  } G_STMT_END

LidarRun *
lidartest_run (const gchar * parser, const gchar * caps, GPtrArray * packets,
    const GstClockTime * arrivals)
{
  LidarRun *run = g_new0 (LidarRun, 1);
  gchar *description = g_strdup_printf ("appsrc name=src format=time "
      "! %s ! %s ! appsink name=sink sync=false wait-on-eos=false", parser,
      caps);
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch (description, &error);
  GstElement *src, *sink, *element;
  GstBus *bus;
  GstSample *sample;
  gboolean done = FALSE;
  guint i;

  g_assert_no_error (error);
  g_free (description);
  run->sweeps = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  run->warnings = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_message_unref);
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  element = gst_bin_get_by_name (GST_BIN (pipeline), "parser");
  fail_unless (element != NULL);
  /* every packet queued up front: the source never blocks the test */
  g_object_set (src, "max-bytes", (guint64) 0, NULL);
  bus = gst_element_get_bus (pipeline);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);

  for (i = 0; i < packets->len; i++) {
    GstBuffer *buffer = gst_buffer_new_wrapped_bytes (packets->pdata[i]);

    if (arrivals != NULL)
      GST_BUFFER_PTS (buffer) = arrivals[i];
    if (gst_app_src_push_buffer (GST_APP_SRC (src), buffer) != GST_FLOW_OK)
      break;
  }
  gst_app_src_end_of_stream (GST_APP_SRC (src));

  while (!done) {
    GstMessage *message = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING);

    fail_unless (message != NULL, "no EOS or error within 60 s");
    switch (GST_MESSAGE_TYPE (message)) {
      case GST_MESSAGE_WARNING:
        g_ptr_array_add (run->warnings, message);
        continue;
      case GST_MESSAGE_ERROR:
        run->error = message;
        done = TRUE;
        continue;
      default:
        done = TRUE;
        break;
    }
    gst_message_unref (message);
  }
  while ((sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink), 0))) {
    g_ptr_array_add (run->sweeps,
        gst_buffer_ref (gst_sample_get_buffer (sample)));
    if (run->caps == NULL && gst_sample_get_caps (sample) != NULL)
      run->caps = gst_caps_ref (gst_sample_get_caps (sample));
    gst_sample_unref (sample);
  }
  g_object_get (element, "stats", &run->stats, NULL);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (element);
  gst_object_unref (pipeline);
  return run;
}

void
lidartest_run_free (LidarRun * run)
{
  g_ptr_array_unref (run->sweeps);
  g_ptr_array_unref (run->warnings);
  if (run->error)
    gst_message_unref (run->error);
  gst_clear_caps (&run->caps);
  if (run->stats)
    gst_structure_free (run->stats);
  g_free (run);
}

guint64
lidartest_stat (const LidarRun * run, const gchar * name)
{
  guint64 value = G_MAXUINT64;

  fail_unless (gst_structure_get_uint64 (run->stats, name, &value),
      "no stats field %s", name);
  return value;
}

void
lidartest_check_sweep (GstBuffer * buffer, const LidarSweep * expected,
    const gchar * format, gdouble tolerance, gdouble time_scale,
    const gchar * what)
{
  const P3dPointFormatInfo *finfo =
      p3d_point_format_get_info (p3d_point_format_from_string (format));
  guint stride = finfo->channels;
  GstMapInfo map;
  gsize n, i;

  fail_unless (gst_buffer_n_memory (buffer) == 1);
  fail_unless (gst_buffer_map (buffer, &map, GST_MAP_READ));
  n = map.size / (stride * sizeof (gfloat));
  fail_unless_equals_int64 (map.size, n * stride * sizeof (gfloat));
  EXPECT (n == expected->points->len, "%s: %" G_GSIZE_FORMAT " points, %u "
      "expected", what, n, expected->points->len);
  for (i = 0; i < n; i++) {
    const gfloat *q = (const gfloat *) map.data + i * stride;
    const LidarTruth *t = &g_array_index (expected->points, LidarTruth, i);
    gdouble d = sqrt ((q[0] - t->x) * (q[0] - t->x) +
        (q[1] - t->y) * (q[1] - t->y) + (q[2] - t->z) * (q[2] - t->z));

    EXPECT (d <= tolerance, "%s, point %" G_GSIZE_FORMAT ": (%f, %f, %f) is "
        "%g m from the truth (%f, %f, %f)", what, i, q[0], q[1], q[2], d,
        t->x, t->y, t->z);
    EXPECT (q[finfo->intensity] == t->intensity, "%s, point %" G_GSIZE_FORMAT
        ": intensity %f for %u", what, i, q[finfo->intensity], t->intensity);
    if (finfo->time >= 0)
      EXPECT (fabs (q[finfo->time] - (t->time - expected->t0) * time_scale) <
          1e-6, "%s, point %" G_GSIZE_FORMAT ": time %.9f for %.9f", what, i,
          q[finfo->time], (t->time - expected->t0) * time_scale);
    if (finfo->ring >= 0)
      EXPECT (q[finfo->ring] == t->ring, "%s, point %" G_GSIZE_FORMAT
          ": ring %f for %u", what, i, q[finfo->ring], t->ring);
  }
  gst_buffer_unmap (buffer, &map);
}

guint16
lidartest_free_port (void)
{
  GSocket *socket = g_socket_new (G_SOCKET_FAMILY_IPV4,
      G_SOCKET_TYPE_DATAGRAM, G_SOCKET_PROTOCOL_UDP, NULL);
  GInetAddress *loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  GSocketAddress *address = g_inet_socket_address_new (loopback, 0);
  GSocketAddress *bound;
  guint16 port;

  fail_unless (g_socket_bind (socket, address, FALSE, NULL));
  bound = g_socket_get_local_address (socket, NULL);
  port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
  g_object_unref (bound);
  g_object_unref (address);
  g_object_unref (loopback);
  g_socket_close (socket, NULL);
  g_object_unref (socket);
  return port;
}
