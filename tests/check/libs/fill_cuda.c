/* The pattern fill kernel against its reference, on a few sizes that cross
 * block and grid-stride boundaries. */
#include <gst/check/gstcheck.h>

#include "p3dtest-fill.h"
#include "p3dtest.h"

GST_START_TEST (test_fill_matches_reference)
{
  const size_t sizes[] = { 1, 255, 256, 257, 65536 * 256 + 17 };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (sizes); i++) {
    size_t count = sizes[i];
    guint32 *expected = g_new (guint32, count);
    guint32 *actual = g_new0 (guint32, count);
    void *device = NULL;
    P3dcCudaStream stream = NULL;

    fail_unless_equals_int (p3dc_cuda_stream_create (&stream), P3DC_OK);
    fail_unless_equals_int (p3dc_cuda_malloc (&device, count * 4), P3DC_OK);
    p3d_fill_pattern_cpu (expected, count, 7 + i);
    fail_unless_equals_int (p3d_fill_pattern_cuda (device, count, 7 + i,
            stream), P3DC_OK);
    fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (actual, device, count * 4,
            stream), P3DC_OK);
    fail_unless_equals_int (p3dc_cuda_stream_synchronize (stream), P3DC_OK);
    fail_unless (memcmp (expected, actual, count * 4) == 0,
        "fill of %" G_GSIZE_FORMAT " words differs from the reference", count);
    fail_unless_equals_int (p3dc_cuda_free (device), P3DC_OK);
    fail_unless_equals_int (p3dc_cuda_stream_destroy (stream), P3DC_OK);
    g_free (expected);
    g_free (actual);
  }
}

GST_END_TEST;

static Suite *
fill_cuda_suite (void)
{
  Suite *s = suite_create ("fill_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_fill_matches_reference);
  return s;
}

P3D_CHECK_MAIN (fill_cuda);
