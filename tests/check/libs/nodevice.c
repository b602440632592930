/* Without a device (this test is meaningful on machines with no GPU, and
 * checks the opposite where one exists): the allocator says why it cannot
 * be had instead of crashing, and the runtime reports zero devices. */
#include <gst/check/gstcheck.h>

#include "p3dperception.h"
#include "runtime.h"
#include "p3dtest.h"

GST_START_TEST (test_allocator_without_device)
{
  gchar *why = NULL;
  GstAllocator *allocator;
  gint count = p3dc_cuda_device_count ();

  allocator = p3d_cuda_allocator_get (count, &why);
  fail_unless (allocator == NULL);
  fail_unless (why != NULL && strstr (why, "no CUDA device") != NULL,
      "reason: %s", GST_STR_NULL (why));
  g_free (why);
  why = NULL;
  allocator = p3d_cuda_allocator_get (-1, &why);
  fail_unless (allocator == NULL && why != NULL);
  g_free (why);
  if (count > 0) {
    allocator = p3d_cuda_allocator_get (0, NULL);
    fail_unless (allocator != NULL);
    gst_object_unref (allocator);
  }
}

GST_END_TEST;

static Suite *
nodevice_suite (void)
{
  Suite *s = suite_create ("nodevice");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_allocator_without_device);
  return s;
}

P3D_CHECK_MAIN (nodevice);
