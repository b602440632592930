/* Helpers shared by the element tests; see p3dtest-elem.h. */
#include <stdarg.h>
#include <string.h>

#include <glib/gstdio.h>
#include <gst/app/gstappsink.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "p3dtest-elem.h"
#include "p3dtest.h"
#include "p3dperception.h"

GstBuffer *
elemtest_tensors_buffer (guint n_tensors, const gconstpointer * data,
    const gsize * sizes)
{
  GstBuffer *buffer = gst_buffer_new ();
  guint i;

  for (i = 0; i < n_tensors; i++) {
    gpointer copy = g_memdup2 (data[i], sizes[i]);

    gst_buffer_append_memory (buffer, gst_memory_new_wrapped (0, copy,
            sizes[i], 0, sizes[i], copy, g_free));
  }
  return buffer;
}

GstBuffer *
elemtest_packed_buffer (guint n_tensors, const gconstpointer * data,
    const gsize * sizes)
{
  gsize total = 0, offset = 0;
  guint8 *bytes;
  guint i;

  for (i = 0; i < n_tensors; i++)
    total += sizes[i];
  bytes = g_malloc (total);
  for (i = 0; i < n_tensors; i++) {
    memcpy (bytes + offset, data[i], sizes[i]);
    offset += sizes[i];
  }
  return gst_buffer_new_wrapped (bytes, total);
}

void
elemtest_assert_bytes (const void *actual, const void *expected, gsize size,
    const gchar * what)
{
  const guint8 *a = actual, *e = expected;
  gsize i, word;
  guint32 actual_word = 0, expected_word = 0;

  if (memcmp (a, e, size) == 0)
    return;
  for (i = 0; i < size && a[i] == e[i]; i++);
  word = i / 4 * 4;
  memcpy (&actual_word, a + word, MIN (4, size - word));
  memcpy (&expected_word, e + word, MIN (4, size - word));
  fail ("%s: first difference at byte %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT
      " (32-bit word %" G_GSIZE_FORMAT "): 0x%08x (%g as float) where "
      "0x%08x (%g) was expected", what, i, size, word / 4, actual_word,
      *(gfloat *) & actual_word, expected_word, *(gfloat *) & expected_word);
}

void
elemtest_assert_tensor (GstBuffer * buffer, guint index, const void *expected,
    gsize size, const gchar * what)
{
  GstMemory *mem;
  GstMapInfo info;

  fail_unless (index < gst_buffer_n_memory (buffer), "%s: the buffer has %u "
      "memories, no tensor %u", what, gst_buffer_n_memory (buffer), index);
  mem = gst_buffer_peek_memory (buffer, index);
  fail_unless (gst_memory_map (mem, &info, GST_MAP_READ), "%s: cannot map",
      what);
  fail_unless_equals_uint64 (info.size, size);
  elemtest_assert_bytes (info.data, expected, size, what);
  gst_memory_unmap (mem, &info);
}

GBytes *
elemtest_host_bytes (GstBuffer * buffer, guint index)
{
  GstMemory *mem = gst_buffer_peek_memory (buffer, index);
  GstMapInfo info;
  GBytes *bytes;

  fail_unless (gst_memory_map (mem, &info, GST_MAP_READ));
  bytes = g_bytes_new (info.data, info.size);
  gst_memory_unmap (mem, &info);
  return bytes;
}

GBytes *
elemtest_device_bytes (GstBuffer * buffer, guint index)
{
  GstMemory *mem = gst_buffer_peek_memory (buffer, index);
  P3dcCudaStream stream = NULL;
  GstMapInfo info;
  guint8 *host;

  fail_unless (p3d_is_cuda_memory (mem), "tensor %u is not in CUDA memory",
      index);
  fail_unless_equals_int (p3dc_cuda_stream_create (&stream), P3DC_OK);
  fail_unless (gst_memory_map (mem, &info, GST_MAP_READ | P3D_MAP_CUDA));
  fail_unless (p3d_cuda_memory_wait (mem, stream));
  host = g_malloc (MAX (info.size, 1));
  if (info.size > 0)
    fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (host, info.data, info.size,
            stream), P3DC_OK);
  fail_unless (p3d_cuda_memory_record (mem, stream));
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (stream), P3DC_OK);
  gst_memory_unmap (mem, &info);
  fail_unless_equals_int (p3dc_cuda_stream_destroy (stream), P3DC_OK);
  return g_bytes_new_take (host, info.size);
}

GstBuffer *
elemtest_device_copy (GstAllocator * allocator, GstBuffer * host,
    P3dcCudaStream stream, gpointer * staging)
{
  GstBuffer *buffer = gst_buffer_new ();
  guint i;

  for (i = 0; i < gst_buffer_n_memory (host); i++) {
    GstMemory *src = gst_buffer_peek_memory (host, i);
    gsize size = gst_memory_get_sizes (src, NULL, NULL);
    GstMemory *mem = p3d_cuda_allocator_alloc (allocator, size);
    GstMapInfo in, out;

    fail_unless (mem != NULL && p3d_is_cuda_memory (mem));
    fail_unless (gst_memory_map (src, &in, GST_MAP_READ));
    fail_unless_equals_int (p3dc_cuda_host_alloc (&staging[i], size), P3DC_OK);
    memcpy (staging[i], in.data, size);
    gst_memory_unmap (src, &in);
    /* a device write: the host copy of the memory is stale from here */
    fail_unless (gst_memory_map (mem, &out, GST_MAP_WRITE | P3D_MAP_CUDA));
    fail_unless (p3d_cuda_memory_wait (mem, stream));
    fail_unless_equals_int (p3dc_cuda_memcpy_htod (out.data, staging[i], size,
            stream), P3DC_OK);
    fail_unless (p3d_cuda_memory_record (mem, stream));
    gst_memory_unmap (mem, &out);
    gst_buffer_append_memory (buffer, mem);
  }
  gst_buffer_copy_into (buffer, host, GST_BUFFER_COPY_TIMESTAMPS, 0, -1);
  return buffer;
}

/* Keeps the first error and the first warning on @bus in @run; FALSE when
 * an error is there. (Popping these two types drops the others.) */
static gboolean
run_take_messages (GstBus * bus, ElemtestRun * run)
{
  GstMessage *message;

  while ((message = gst_bus_pop_filtered (bus,
              GST_MESSAGE_ERROR | GST_MESSAGE_WARNING)) != NULL) {
    if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_WARNING) {
      if (run->warning == NULL)
        run->warning = gst_message_ref (message);
    } else if (run->error == NULL) {
      run->error = elemtest_message_text (message);
    }
    gst_message_unref (message);
  }
  return run->error == NULL;
}

void
elemtest_play (GstElement * pipeline, ElemtestRun * run, GstClockTime timeout)
{
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  GstBus *bus = gst_element_get_bus (pipeline);
  gint64 deadline = GST_CLOCK_TIME_IS_VALID (timeout) ?
      g_get_monotonic_time () + (gint64) (timeout / GST_USECOND) : G_MAXINT64;

  run->samples = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_sample_unref);
  run->error = NULL;
  run->warning = NULL;
  if (sink == NULL || !GST_IS_APP_SINK (sink)) {
    run->error = g_strdup ("no appsink named sink");
  } else if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    /* an element that fails to start posts why before returning */
    if (run_take_messages (bus, run))
      run->error = g_strdup ("it does not start");
  }
  /* Samples waiting in the sink come first; the bus is read when none
   * came for a while, as an error may end the stream without an EOS. */
  while (run->error == NULL) {
    GstSample *sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
        100 * GST_MSECOND);

    if (sample != NULL)
      g_ptr_array_add (run->samples, sample);
    else if (gst_app_sink_is_eos (GST_APP_SINK (sink)))
      break;
    else if (run_take_messages (bus, run) && g_get_monotonic_time () > deadline)
      run->error = g_strdup_printf ("no EOS after %" GST_TIME_FORMAT,
          GST_TIME_ARGS (timeout));
  }
  run_take_messages (bus, run);
  gst_clear_object (&sink);
  gst_object_unref (bus);
}

void
elemtest_run (const gchar * description, ElemtestRun * run)
{
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch (description, &error);

  fail_unless (pipeline != NULL, "'%s': %s", description,
      error ? error->message : "?");
  g_clear_error (&error);
  elemtest_play (pipeline, run, GST_CLOCK_TIME_NONE);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
}

void
elemtest_run_clear (ElemtestRun * run)
{
  g_clear_pointer (&run->samples, g_ptr_array_unref);
  g_free (run->error);
  gst_clear_message (&run->warning);
}

GPtrArray *
elemtest_run_pipeline (const gchar * description)
{
  ElemtestRun run;
  GPtrArray *samples;

  elemtest_run (description, &run);
  fail_unless (run.error == NULL, "'%s': %s", description, run.error);
  samples = g_ptr_array_ref (run.samples);
  elemtest_run_clear (&run);
  return samples;
}

GstBuffer *
elemtest_sample_buffer (GPtrArray * samples, guint index)
{
  return gst_sample_get_buffer (g_ptr_array_index (samples, index));
}

GstCaps *
elemtest_sample_caps (GPtrArray * samples, guint index)
{
  return gst_sample_get_caps (g_ptr_array_index (samples, index));
}

GstMessage *
elemtest_pop (GstBus * bus, GstMessageType type)
{
  return gst_bus_pop_filtered (bus, type);
}

gchar *
elemtest_message_text (GstMessage * message)
{
  GError *error = NULL;
  gchar *debug = NULL, *text;

  if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_ERROR)
    gst_message_parse_error (message, &error, &debug);
  else if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_WARNING)
    gst_message_parse_warning (message, &error, &debug);
  else
    return g_strdup ("");
  text = g_strdup_printf ("%s | %s", error->message, GST_STR_NULL (debug));
  /* on one line, so that a failure message shows all of it */
  g_strdelimit (text, "\n", ' ');
  g_clear_error (&error);
  g_free (debug);
  return text;
}

static gchar *
expect_message_valist (GstBus * bus, GstMessageType type, GQuark domain,
    gint code, va_list needles)
{
  /* a message may come from a streaming thread after a state change: wait
   * for it (at once when it is there) */
  GstMessage *message = gst_bus_timed_pop_filtered (bus,
      P3D_TEST_MESSAGE_WAIT, type);
  const gchar *kind = type == GST_MESSAGE_ERROR ? "error" : "warning";
  GError *error = NULL;
  const gchar *needle;
  gchar *text;

  fail_unless (message != NULL, "no %s was posted", kind);
  text = elemtest_message_text (message);
  if (type == GST_MESSAGE_ERROR)
    gst_message_parse_error (message, &error, NULL);
  else
    gst_message_parse_warning (message, &error, NULL);
  fail_unless (error->domain == domain && error->code == code,
      "%s %s %d where %s %d was expected: %s", kind,
      g_quark_to_string (error->domain), error->code,
      g_quark_to_string (domain), code, text);
  g_clear_error (&error);
  gst_message_unref (message);

  while ((needle = va_arg (needles, ElemtestNeedle)) != NULL)
    fail_unless (strstr (text, needle) != NULL, "the %s does not say "
        "\"%s\": %s", kind, needle, text);
  return text;
}

gchar *
elemtest_expect_error (GstBus * bus, GQuark domain, gint code, ...)
{
  va_list needles;
  gchar *text;

  va_start (needles, code);
  text = expect_message_valist (bus, GST_MESSAGE_ERROR, domain, code, needles);
  va_end (needles);
  return text;
}

gchar *
elemtest_expect_message (GstBus * bus, GstMessageType type, GQuark domain,
    gint code, ...)
{
  va_list needles;
  gchar *text;

  g_return_val_if_fail (type == GST_MESSAGE_ERROR
      || type == GST_MESSAGE_WARNING, NULL);
  va_start (needles, code);
  text = expect_message_valist (bus, type, domain, code, needles);
  va_end (needles);
  return text;
}

gchar *
elemtest_expect_caps_refused (const gchar * launch, const gchar * src_caps,
    const gchar * sink_caps, GQuark domain, gint code,
    const gchar * const *needles)
{
  GstHarness *h = gst_harness_new_parse (launch);
  GstBus *bus = gst_bus_new ();
  gchar *text;

  gst_element_set_bus (h->element, bus);
  gst_harness_set_src_caps_str (h, src_caps);
  gst_harness_set_sink_caps_str (h, sink_caps);
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_new_allocate (NULL,
              64, NULL)), GST_FLOW_NOT_NEGOTIATED);
  text = elemtest_expect_error (bus, domain, code, NULL);
  for (; needles && *needles; needles++)
    fail_unless (strstr (text, *needles) != NULL, "the error does not say "
        "\"%s\": %s", *needles, text);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  return text;
}

gchar *
elemtest_write_file (const gchar * dir, const gchar * name,
    const gchar * contents)
{
  return elemtest_write_bytes (dir, name, contents, strlen (contents));
}

gchar *
elemtest_write_bytes (const gchar * dir, const gchar * name,
    gconstpointer data, gsize size)
{
  gchar *path = g_build_filename (dir, name, NULL);
  GError *error = NULL;

  fail_unless (g_file_set_contents (path, data, size, &error), "%s: %s",
      path, error ? error->message : "?");
  return path;
}

void
elemtest_remove_dir (const gchar * dir)
{
  GDir *d = g_dir_open (dir, 0, NULL);
  const gchar *name;

  if (d == NULL)
    return;
  while ((name = g_dir_read_name (d)) != NULL) {
    gchar *path = g_build_filename (dir, name, NULL);

    g_remove (path);
    g_free (path);
  }
  g_dir_close (d);
  g_rmdir (dir);
}
