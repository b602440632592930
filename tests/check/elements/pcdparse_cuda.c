/* pcdparse in CUDA memory (needs a GPU): memory:CUDAMemory is negotiated
 * (by default too, a device being there); files of every storage type, of
 * growing sizes (a pool that grows on the device), with non-finite points
 * dropped or kept, read back from the device directly and through a host
 * map, equal the values written and the system-memory output; a device
 * that does not exist is an error. */
#include <math.h>
#include <string.h>

#include <gst/app/gstappsink.h>
#include <gst/check/gstcheck.h>

#include "p3dtest-elem.h"
#include "p3dperception.h"
#include "p3dtest.h"
#include "p3dtest-pcd.h"
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
  files->path = elemtest_write_bytes (files->dir, "all.pcd", all->data,
      all->len);
  g_byte_array_unref (all);
}

static void
files_clear (Files * files)
{
  guint i;

  for (i = 0; i < N_FILES; i++)
    pcdtest_cloud_free (files->clouds[i]);
  elemtest_remove_dir (files->dir);
  g_free (files->path);
  g_free (files->dir);
}

/* The points tensor of a CUDA buffer, read from the device (an empty
 * frame may have no memory). */
static GBytes *
device_points (GstBuffer * buffer)
{
  if (gst_buffer_get_size (buffer) == 0)
    return g_bytes_new (NULL, 0);
  fail_unless_equals_int (gst_buffer_n_memory (buffer), 1);
  return elemtest_device_bytes (buffer, 0);
}

/* Asserts that @cuda's points, read from the device, equal @expected's
 * (a system-memory buffer), naming the first byte that differs. */
static void
assert_device_equal (GstBuffer * cuda, GstBuffer * expected, const gchar * what)
{
  GBytes *read = device_points (cuda);
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
      GPtrArray *cuda = elemtest_run_pipeline (cuda_launch);
      GPtrArray *system = elemtest_run_pipeline (system_launch);

      fail_unless_equals_int (cuda->len, N_FILES);
      fail_unless_equals_int (system->len, N_FILES);
      fail_unless (p3d_caps_is_cuda (gst_sample_get_caps (g_ptr_array_index
                  (cuda, 0))));
      for (i = 0; i < N_FILES; i++) {
        gchar *what = g_strdup_printf ("%s, drop-nonfinite=%u, file %u",
            formats[f], drop, i);

        /* through a host map (a download), then from the device */
        pcdtest_assert_cloud (elemtest_sample_buffer (cuda, i), files.clouds[i],
            formats[f], drop, what);
        pcdtest_assert_cloud (elemtest_sample_buffer (system, i),
            files.clouds[i], formats[f], drop, what);
        assert_device_equal (elemtest_sample_buffer (cuda, i),
            elemtest_sample_buffer (system, i), what);
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
  samples = elemtest_run_pipeline (launch);
  fail_unless_equals_int (samples->len, N_FILES);
  fail_unless (p3d_caps_is_cuda (gst_sample_get_caps (g_ptr_array_index
              (samples, 0))));
  fail_unless (p3d_is_cuda_memory (gst_buffer_peek_memory
          (elemtest_sample_buffer (samples, 0), 0)));
  pcdtest_assert_cloud (elemtest_sample_buffer (samples, 1), files.clouds[1],
      "xyzi", TRUE, "default caps");
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
  files_init (&files);
  launch = g_strdup_printf ("filesrc location=%s ! pcdparse "
      "cuda-device-id=1000 ! application/x-point-cloud(memory:CUDAMemory) ! "
      "fakesink", files.path);
  pipeline = gst_parse_launch (launch, NULL);
  bus = gst_element_get_bus (pipeline);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  /* the error every element posts for a missing device */
  g_free (elemtest_expect_error (bus, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_NOT_FOUND, "CUDA device 1000", NULL));
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
