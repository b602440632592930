/* pointcloudtestsrc in CUDA memory (needs a GPU): memory:CUDAMemory is
 * negotiated (by default too, a device being there), and the bytes read
 * back from the device, directly and through a host map, equal the
 * system-memory frames, for points, boxes and motion=false. */
#include <string.h>

#include <gst/app/gstappsink.h>
#include <gst/check/gstcheck.h>

#include "p3dtest-elem.h"
#include "p3dperception.h"
#include "p3dtest.h"
#include "runtime.h"

/* Asserts tensor @index of @cuda equals that of @system, read both ways,
 * naming the first byte that differs. */
static void
assert_tensor_equal (GstBuffer * cuda, GstBuffer * system, guint index,
    const gchar * what)
{
  GBytes *expected = elemtest_host_bytes (system, index);
  GBytes *read[2];
  guint way;

  fail_unless (!p3d_is_cuda_memory (gst_buffer_peek_memory (system, index)));
  read[0] = elemtest_device_bytes (cuda, index);
  read[1] = elemtest_host_bytes (cuda, index);
  for (way = 0; way < 2; way++) {
    gsize size, expected_size, i;
    const guint8 *a = g_bytes_get_data (read[way], &size);
    const guint8 *b = g_bytes_get_data (expected, &expected_size);

    fail_unless_equals_uint64 (size, expected_size);
    for (i = 0; i < size; i++)
      if (a[i] != b[i])
        fail ("%s, tensor %u read %s: byte %" G_GSIZE_FORMAT " is %u, the "
            "system-memory frame has %u", what, index, way == 0 ?
            "from the device" : "through a host map", i, a[i], b[i]);
    g_bytes_unref (read[way]);
  }
  g_bytes_unref (expected);
}

GST_START_TEST (test_points_in_cuda_memory)
{
  static const gchar *const formats[] = { "xyzi", "xyzit", "xyz" };
  guint f, i;

  for (f = 0; f < G_N_ELEMENTS (formats); f++) {
    gchar *cuda_launch = g_strdup_printf ("pointcloudtestsrc seed=6 "
        "num-buffers=3 format=%s ! application/x-point-cloud"
        "(memory:CUDAMemory) ! appsink name=sink sync=false", formats[f]);
    gchar *system_launch = g_strdup_printf ("pointcloudtestsrc seed=6 "
        "num-buffers=3 format=%s ! application/x-point-cloud ! "
        "appsink name=sink sync=false", formats[f]);
    GPtrArray *cuda = elemtest_run_pipeline (cuda_launch);
    GPtrArray *system = elemtest_run_pipeline (system_launch);

    fail_unless_equals_int (cuda->len, 3);
    fail_unless_equals_int (system->len, 3);
    fail_unless (p3d_caps_is_cuda (gst_sample_get_caps (g_ptr_array_index
                (cuda, 0))));
    for (i = 0; i < 3; i++) {
      gchar *what = g_strdup_printf ("%s frame %u", formats[f], i);

      fail_unless_equals_int (gst_buffer_n_memory (elemtest_sample_buffer (cuda,
                  i)), 1);
      fail_unless (gst_buffer_get_size (elemtest_sample_buffer (cuda, i)) > 0);
      assert_tensor_equal (elemtest_sample_buffer (cuda, i),
          elemtest_sample_buffer (system, i), 0, what);
      fail_unless_equals_uint64 (GST_BUFFER_PTS (elemtest_sample_buffer (cuda,
                  i)), GST_BUFFER_PTS (elemtest_sample_buffer (system, i)));
      g_free (what);
    }
    g_ptr_array_unref (cuda);
    g_ptr_array_unref (system);
    g_free (cuda_launch);
    g_free (system_launch);
  }
}

GST_END_TEST;

/* With a device, CUDA memory is what the source offers first. */
GST_START_TEST (test_cuda_by_default)
{
  GPtrArray *samples =
      elemtest_run_pipeline ("pointcloudtestsrc num-buffers=1 ! "
      "appsink name=sink sync=false");

  fail_unless (p3d_caps_is_cuda (gst_sample_get_caps (g_ptr_array_index
              (samples, 0))));
  fail_unless (p3d_is_cuda_memory (gst_buffer_peek_memory
          (elemtest_sample_buffer (samples, 0), 0)));
  g_ptr_array_unref (samples);
}

GST_END_TEST;

GST_START_TEST (test_boxes_in_cuda_memory)
{
  static const gchar *const emits[] = { "boxes", "candidates" };
  guint e, i, t;

  for (e = 0; e < G_N_ELEMENTS (emits); e++) {
    gchar *cuda_launch = g_strdup_printf ("pointcloudtestsrc seed=6 "
        "num-buffers=2 emit=%s max-boxes=300 ! "
        "application/x-boxes3d(memory:CUDAMemory) ! "
        "appsink name=sink sync=false", emits[e]);
    gchar *system_launch = g_strdup_printf ("pointcloudtestsrc seed=6 "
        "num-buffers=2 emit=%s max-boxes=300 ! application/x-boxes3d ! "
        "appsink name=sink sync=false", emits[e]);
    GPtrArray *cuda = elemtest_run_pipeline (cuda_launch);
    GPtrArray *system = elemtest_run_pipeline (system_launch);

    fail_unless_equals_int (cuda->len, 2);
    for (i = 0; i < 2; i++) {
      fail_unless_equals_int (gst_buffer_n_memory (elemtest_sample_buffer (cuda,
                  i)), P3D_BOXES_N_TENSORS);
      for (t = 0; t < P3D_BOXES_N_TENSORS; t++) {
        gchar *what = g_strdup_printf ("emit=%s frame %u", emits[e], i);

        assert_tensor_equal (elemtest_sample_buffer (cuda, i),
            elemtest_sample_buffer (system, i), t, what);
        g_free (what);
      }
    }
    g_ptr_array_unref (cuda);
    g_ptr_array_unref (system);
    g_free (cuda_launch);
    g_free (system_launch);
  }
}

GST_END_TEST;

/* motion=false in CUDA memory: one device allocation shared by every
 * buffer, holding frame 0. */
GST_START_TEST (test_motion_false_cuda)
{
  GPtrArray *cuda =
      elemtest_run_pipeline ("pointcloudtestsrc seed=9 motion=false "
      "num-buffers=4 ! application/x-point-cloud(memory:CUDAMemory) ! "
      "appsink name=sink sync=false");
  GPtrArray *system =
      elemtest_run_pipeline ("pointcloudtestsrc seed=9 "
      "num-buffers=1 ! application/x-point-cloud ! "
      "appsink name=sink sync=false");
  guint i;

  fail_unless_equals_int (cuda->len, 4);
  for (i = 0; i < 4; i++) {
    fail_unless (gst_buffer_peek_memory (elemtest_sample_buffer (cuda, i), 0) ==
        gst_buffer_peek_memory (elemtest_sample_buffer (cuda, 0), 0));
    assert_tensor_equal (elemtest_sample_buffer (cuda, i),
        elemtest_sample_buffer (system, 0), 0, "motion=false");
  }
  g_ptr_array_unref (cuda);
  g_ptr_array_unref (system);
}

GST_END_TEST;

/* A device that does not exist: an error naming it, not a crash. */
GST_START_TEST (test_missing_device)
{
  GstElement *pipeline = gst_parse_launch ("pointcloudtestsrc "
      "cuda-device-id=1000 ! application/x-point-cloud(memory:CUDAMemory) ! "
      "fakesink", NULL);
  GstBus *bus = gst_element_get_bus (pipeline);

  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  /* the error every element posts for a missing device */
  g_free (elemtest_expect_error (bus, GST_RESOURCE_ERROR,
          GST_RESOURCE_ERROR_NOT_FOUND, "CUDA device 1000", NULL));
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
}

GST_END_TEST;

static Suite *
pointcloudtestsrc_cuda_suite (void)
{
  Suite *s = suite_create ("pointcloudtestsrc_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_points_in_cuda_memory);
  tcase_add_test (tc, test_cuda_by_default);
  tcase_add_test (tc, test_boxes_in_cuda_memory);
  tcase_add_test (tc, test_motion_false_cuda);
  tcase_add_test (tc, test_missing_device);
  return s;
}

P3D_CHECK_MAIN (pointcloudtestsrc_cuda);
