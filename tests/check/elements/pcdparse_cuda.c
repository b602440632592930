/* pcdparse in CUDA memory (needs a GPU): memory:CUDAMemory is negotiated
 * (by default too, a device being there); files of every storage type, of
 * growing sizes (a pool that grows on the device), with non-finite points
 * dropped or kept, read back from the device directly and through a host
 * map, equal the values written and the system-memory output; a device
 * that does not exist is an error. */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>
#include <gst/app/gstappsink.h>
#include <gst/check/gstcheck.h>

#include "p3dperception.h"
#include "p3dtest.h"
#include "pcdtest.h"
#include "runtime.h"

#define N_FILES 6

static const PcdTestField fields[] = {
  {"x", 'F', 4, 1}, {"y", 'F', 4, 1}, {"z", 'F', 4, 1},
  {"intensity", 'U', 1, 1}, {"ring", 'U', 2, 1},
};

/* Clouds of growing and shrinking sizes, every storage type, with NaN
 * and infinite coordinates, concatenated in one file of a new folder. */
typedef struct
{
  gchar *dir;
  gchar *path;
  PcdTestCloud *clouds[N_FILES];
} Files;

static void
files_init (Files * files)
{
  static const guint sizes[N_FILES] = { 100, 5000, 20, 0, 12000, 7 };
  GByteArray *all = g_byte_array_new ();
  GError *error = NULL;
  guint i, p;

  files->dir = g_dir_make_tmp ("pcdparse-cuda-XXXXXX", &error);
  fail_unless (files->dir != NULL, "%s", error ? error->message : "");
  for (i = 0; i < N_FILES; i++) {
    PcdTestOptions o = { (PcdTestStorage) (i % 3), "0.7" };
    GByteArray *file;

    files->clouds[i] = pcdtest_cloud_new (fields, G_N_ELEMENTS (fields),
        sizes[i], 60 + i);
    for (p = 0; p < sizes[i]; p += 7)
      *pcdtest_cloud_value (files->clouds[i], p, p % 3) = p % 2 ? NAN :
          INFINITY;
    file = pcdtest_write (files->clouds[i], &o);
    g_byte_array_append (all, file->data, file->len);
    g_byte_array_unref (file);
  }
  files->path = g_build_filename (files->dir, "all.pcd", NULL);
  fail_unless (g_file_set_contents (files->path, (const gchar *) all->data,
          all->len, &error), "%s", error ? error->message : "");
  g_byte_array_unref (all);
}

static void
files_clear (Files * files)
{
  guint i;

  for (i = 0; i < N_FILES; i++)
    pcdtest_cloud_free (files->clouds[i]);
  g_unlink (files->path);
  g_rmdir (files->dir);
  g_free (files->path);
  g_free (files->dir);
}

/* Runs @description (ending in "appsink name=sink") to EOS and returns its
 * samples; fails on an error. */
static GPtrArray *
run_pipeline (const gchar * description)
{
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch (description, &error);
  GstElement *sink;
  GstBus *bus;
  GstSample *sample;
  GstMessage *message;
  GPtrArray *samples = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_sample_unref);

  fail_unless (pipeline != NULL, "'%s': %s", description,
      error ? error->message : "?");
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  bus = gst_element_get_bus (pipeline);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE, "'%s' does not start", description);
  while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sink))) != NULL)
    g_ptr_array_add (samples, sample);
  message = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  if (message) {
    GError *failure = NULL;
    gchar *debug = NULL;

    gst_message_parse_error (message, &failure, &debug);
    fail ("'%s': %s (%s)", description, failure->message, GST_STR_NULL (debug));
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  return samples;
}

static GstBuffer *
sample_buffer (GPtrArray * samples, guint index)
{
  return gst_sample_get_buffer (g_ptr_array_index (samples, index));
}

/* The points tensor of a CUDA buffer, copied from the device on a stream of
 * our own that waits for the element's upload. */
static GBytes *
device_bytes (GstBuffer * buffer)
{
  GstMemory *mem;
  P3dCudaStream stream = NULL;
  GstMapInfo info;
  guint8 *host;

  if (gst_buffer_get_size (buffer) == 0)
    return g_bytes_new (NULL, 0);
  fail_unless_equals_int (gst_buffer_n_memory (buffer), 1);
  mem = gst_buffer_peek_memory (buffer, 0);
  fail_unless (p3d_is_cuda_memory (mem), "the points are not in CUDA memory");
  fail_unless_equals_int (p3d_cuda_stream_create (&stream), P3D_OK);
  fail_unless (gst_memory_map (mem, &info, GST_MAP_READ | P3D_MAP_CUDA));
  fail_unless (p3d_cuda_memory_wait (mem, stream));
  host = g_malloc (MAX (info.size, 1));
  fail_unless_equals_int (p3d_cuda_memcpy_dtoh (host, info.data, info.size,
          stream), P3D_OK);
  fail_unless (p3d_cuda_memory_record (mem, stream));
  fail_unless_equals_int (p3d_cuda_stream_synchronize (stream), P3D_OK);
  gst_memory_unmap (mem, &info);
  fail_unless_equals_int (p3d_cuda_stream_destroy (stream), P3D_OK);
  return g_bytes_new_take (host, info.size);
}

/* Asserts that @cuda's points, read from the device, equal @expected's
 * (a system-memory buffer), naming the first byte that differs. */
static void
assert_device_equal (GstBuffer * cuda, GstBuffer * expected, const gchar * what)
{
  GBytes *read = device_bytes (cuda);
  GstMapInfo info;
  gsize size, i;
  const guint8 *bytes = g_bytes_get_data (read, &size);

  if (gst_buffer_get_size (expected) == 0) {
    fail_unless_equals_uint64 (size, 0);
    g_bytes_unref (read);
    return;
  }
  fail_unless (gst_buffer_map (expected, &info, GST_MAP_READ));
  fail_unless_equals_uint64 (size, info.size);
  for (i = 0; i < size; i++)
    if (bytes[i] != info.data[i])
      fail ("%s: byte %" G_GSIZE_FORMAT " on the device is %u, the "
          "system-memory buffer has %u", what, i, bytes[i], info.data[i]);
  gst_buffer_unmap (expected, &info);
  g_bytes_unref (read);
}

GST_START_TEST (test_cuda_memory)
{
  static const gchar *const formats[] = { "xyzi", "xyzir", "xyz" };
  Files files;
  guint f, drop, i;

  files_init (&files);
  for (f = 0; f < G_N_ELEMENTS (formats); f++)
    for (drop = 0; drop < 2; drop++) {
      gchar *cuda_launch = g_strdup_printf ("filesrc location=%s ! pcdparse "
          "drop-nonfinite=%d ! application/x-point-cloud(memory:CUDAMemory), "
          "format=%s ! appsink name=sink sync=false", files.path, drop,
          formats[f]);
      gchar *system_launch = g_strdup_printf ("filesrc location=%s ! "
          "pcdparse drop-nonfinite=%d ! application/x-point-cloud, format=%s "
          "! appsink name=sink sync=false", files.path, drop, formats[f]);
      GPtrArray *cuda = run_pipeline (cuda_launch);
      GPtrArray *system = run_pipeline (system_launch);

      fail_unless_equals_int (cuda->len, N_FILES);
      fail_unless_equals_int (system->len, N_FILES);
      fail_unless (p3d_caps_is_cuda (gst_sample_get_caps (g_ptr_array_index
                  (cuda, 0))));
      for (i = 0; i < N_FILES; i++) {
        gchar *what = g_strdup_printf ("%s, drop-nonfinite=%u, file %u",
            formats[f], drop, i);

        /* through a host map (a download), then from the device */
        pcdtest_assert_cloud (sample_buffer (cuda, i), files.clouds[i],
            formats[f], drop, what);
        pcdtest_assert_cloud (sample_buffer (system, i), files.clouds[i],
            formats[f], drop, what);
        assert_device_equal (sample_buffer (cuda, i), sample_buffer (system,
                i), what);
        g_free (what);
      }
      g_ptr_array_unref (cuda);
      g_ptr_array_unref (system);
      g_free (cuda_launch);
      g_free (system_launch);
    }
  files_clear (&files);
}

GST_END_TEST;

/* With a device, CUDA memory is what the parser offers first. */
GST_START_TEST (test_cuda_by_default)
{
  Files files;
  gchar *launch;
  GPtrArray *samples;

  files_init (&files);
  launch = g_strdup_printf ("filesrc location=%s ! pcdparse ! "
      "appsink name=sink sync=false", files.path);
  samples = run_pipeline (launch);
  fail_unless_equals_int (samples->len, N_FILES);
  fail_unless (p3d_caps_is_cuda (gst_sample_get_caps (g_ptr_array_index
              (samples, 0))));
  fail_unless (p3d_is_cuda_memory (gst_buffer_peek_memory (sample_buffer
              (samples, 0), 0)));
  pcdtest_assert_cloud (sample_buffer (samples, 1), files.clouds[1], "xyzi",
      TRUE, "default caps");
  g_ptr_array_unref (samples);
  g_free (launch);
  files_clear (&files);
}

GST_END_TEST;

/* A device that does not exist: an error naming it, not a crash. */
GST_START_TEST (test_missing_device)
{
  Files files;
  gchar *launch;
  GstElement *pipeline;
  GstBus *bus;
  GstMessage *message;
  GError *error = NULL;

  files_init (&files);
  launch = g_strdup_printf ("filesrc location=%s ! pcdparse "
      "cuda-device-id=1000 ! application/x-point-cloud(memory:CUDAMemory) ! "
      "fakesink", files.path);
  pipeline = gst_parse_launch (launch, NULL);
  bus = gst_element_get_bus (pipeline);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  message = gst_bus_timed_pop_filtered (bus, 10 * GST_SECOND,
      GST_MESSAGE_ERROR);
  fail_unless (message != NULL);
  gst_message_parse_error (message, &error, NULL);
  fail_unless (strstr (error->message, "CUDA device 1000") != NULL, "%s",
      error->message);
  g_error_free (error);
  gst_message_unref (message);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  g_free (launch);
  files_clear (&files);
}

GST_END_TEST;

static Suite *
pcdparse_cuda_suite (void)
{
  Suite *s = suite_create ("pcdparse_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_cuda_memory);
  tcase_add_test (tc, test_cuda_by_default);
  tcase_add_test (tc, test_missing_device);
  return s;
}

P3D_CHECK_MAIN (pcdparse_cuda);
