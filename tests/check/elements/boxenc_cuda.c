/* boxenc with boxes in CUDA memory, as a GPU nms hands them over: the
 * tensors are written on the device by a copy queued on a stream of our
 * own (the host staging copy is stale), and boxenc's host map must wait for
 * that copy and download. The text must equal the text of the same boxes
 * in system memory, in every format, for 3D and 2D boxes. */
#include <string.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "p3dtest-box.h"
#include "p3dtest-elem.h"
#include "p3dperception.h"
#include "runtime.h"
#include "p3dtest.h"

static gsize
first_difference (const gchar * a, const gchar * b)
{
  gsize i;

  for (i = 0; a[i] != '\0' && a[i] == b[i]; i++);
  return i;
}

static gchar *
encode (const gchar * format, const gchar * caps, GstBuffer * in)
{
  gchar *launch = g_strdup_printf ("boxenc format=%s", format);
  GstHarness *h = gst_harness_new_parse (launch);
  GstBuffer *out;
  gchar *text;

  gst_harness_set_src_caps_str (h, caps);
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  text = boxtest_text (out);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  g_free (launch);
  return text;
}

GST_START_TEST (test_cuda_memory_matches_system_memory)
{
  const gchar *formats[] = { "json", "kitti" };
  const guint max_boxes = 300;
  gchar *why = NULL;
  GstAllocator *allocator = p3d_cuda_allocator_get (0, &why);
  P3dcCudaStream stream = NULL;
  guint f, two_d;

  fail_unless (allocator != NULL, "no CUDA allocator: %s", why);
  fail_unless_equals_int (p3dc_cuda_stream_create (&stream), P3DC_OK);
  for (f = 0; f < G_N_ELEMENTS (formats); f++) {
    for (two_d = 0; two_d < 2; two_d++) {
      gsize record_size = two_d ? sizeof (P3dcBox2d) : sizeof (P3dcBox3d);
      guint8 *records = g_malloc (max_boxes * record_size);
      gchar *caps = g_strdup_printf ("application/x-boxes%s, max-boxes=%u",
          two_d ? "2d" : "3d", max_boxes);
      gchar *cuda_caps = g_strdup_printf ("application/x-boxes%s"
          "(memory:CUDAMemory), max-boxes=%u", two_d ? "2d" : "3d",
          max_boxes);
      GstBuffer *host, *device;
      gpointer staging[2] = { NULL, NULL };
      gchar *expected, *actual;
      P3dTestRng rng;
      guint i, count = 257;

      p3d_test_rng_init (&rng, 42 + f * 2 + two_d);
      for (i = 0; i < count; i++) {
        if (two_d)
          boxtest_random_2d (&rng, (P3dcBox2d *) records + i, TRUE);
        else
          boxtest_random_3d (&rng, (P3dcBox3d *) records + i, TRUE);
      }
      host = boxtest_buffer (records, count, max_boxes, record_size);
      device = elemtest_device_copy (allocator, host, stream, staging);
      expected = encode (formats[f], caps, host);
      actual = encode (formats[f], cuda_caps, device);
      fail_unless (strcmp (expected, actual) == 0,
          "%s %s: text from CUDA memory differs from system memory's at "
          "byte %" G_GSIZE_FORMAT ": \"%.40s\" instead of \"%.40s\"",
          formats[f], two_d ? "2d" : "3d",
          first_difference (expected, actual),
          actual + first_difference (expected, actual),
          expected + first_difference (expected, actual));
      fail_unless (strlen (expected) > count * 20);
      fail_unless_equals_int (p3dc_cuda_stream_synchronize (stream), P3DC_OK);
      fail_unless_equals_int (p3dc_cuda_host_free (staging[0]), P3DC_OK);
      fail_unless_equals_int (p3dc_cuda_host_free (staging[1]), P3DC_OK);
      g_free (expected);
      g_free (actual);
      g_free (caps);
      g_free (cuda_caps);
      g_free (records);
    }
  }
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_destroy (stream), P3DC_OK);
  gst_object_unref (allocator);
}

GST_END_TEST;

static Suite *
boxenc_cuda_suite (void)
{
  Suite *s = suite_create ("boxenc_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_cuda_memory_matches_system_memory);
  return s;
}

P3D_CHECK_MAIN (boxenc_cuda);
