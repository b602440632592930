/* The device choice of the GPU filters (P3dCudaFilter), on one GPU:
 * with cuda-device-id=-1 the elements of a pipeline agree on one device
 * through a GstContext (one HAVE_CONTEXT in the whole pipeline, the others
 * ask their neighbours), a context the application sets is taken without
 * any element posting its own, an element given a device by number answers
 * the CONTEXT query with that device, and a chain whose first element is
 * placed on device 0 explicitly runs on device 0. Needs a GPU. */
#include <string.h>

#include <gst/check/gstcheck.h>

#include "p3dperception.h"
#include "p3dtest.h"

typedef struct
{
  gint have_context;
  gint need_context;
  gint device_id;
} Seen;

static GstBusSyncReply
count_contexts (GstBus * bus, GstMessage * message, gpointer data)
{
  Seen *seen = data;
  const gchar *type = NULL;

  if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_HAVE_CONTEXT) {
    GstContext *context = NULL;

    gst_message_parse_have_context (message, &context);
    if (g_strcmp0 (gst_context_get_context_type (context),
            P3D_CUDA_DEVICE_CONTEXT_TYPE) == 0) {
      seen->have_context++;
      fail_unless (gst_structure_get_int (gst_context_get_structure (context),
              "device-id", &seen->device_id));
    }
    gst_context_unref (context);
  } else if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_NEED_CONTEXT
      && gst_message_parse_context_type (message, &type)
      && g_strcmp0 (type, P3D_CUDA_DEVICE_CONTEXT_TYPE) == 0) {
    seen->need_context++;
  }
  return GST_BUS_PASS;
}

/* Runs @description to EOS with @context set on the pipeline (or none),
 * counting the context messages; returns the pipeline (unref it). */
static GstElement *
run (const gchar * description, GstContext * context, Seen * seen)
{
  GstElement *pipeline = gst_parse_launch (description, NULL);
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *message;

  fail_unless (pipeline != NULL, "%s", description);
  memset (seen, 0, sizeof (*seen));
  seen->device_id = -1;
  gst_bus_set_sync_handler (bus, count_contexts, seen, NULL);
  if (context)
    gst_element_set_context (pipeline, context);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE, "%s", description);
  message = gst_bus_timed_pop_filtered (bus, 120 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (message != NULL
      && GST_MESSAGE_TYPE (message) == GST_MESSAGE_EOS, "%s did not end "
      "with EOS", description);
  gst_message_unref (message);
  gst_bus_set_sync_handler (bus, NULL, NULL, NULL);
  gst_object_unref (bus);
  return pipeline;
}

static void
assert_cuda (GstElement * pipeline, const gchar * name)
{
  GstElement *element = gst_bin_get_by_name (GST_BIN (pipeline), name);
  gint active = -1;

  g_object_get (element, "active-backend", &active, NULL);
  fail_unless_equals_int (active, P3D_BACKEND_CUDA);
  gst_object_unref (element);
}

#define CHAIN "pointcloudtestsrc num-buffers=2 ! voxelize name=v %s " \
  "! pillarfeat name=p ! fakesink"

GST_START_TEST (test_one_context_per_pipeline)
{
  gchar *description = g_strdup_printf (CHAIN, "");
  Seen seen;
  GstElement *pipeline = run (description, NULL, &seen);

  /* pillarfeat starts first and shares device 0; voxelize asks it */
  fail_unless_equals_int (seen.have_context, 1);
  fail_unless_equals_int (seen.device_id, 0);
  assert_cuda (pipeline, "v");
  assert_cuda (pipeline, "p");
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  g_free (description);
}

GST_END_TEST;

GST_START_TEST (test_application_context)
{
  GstContext *context = gst_context_new (P3D_CUDA_DEVICE_CONTEXT_TYPE, TRUE);
  gchar *description = g_strdup_printf (CHAIN, "");
  GstElement *pipeline;
  Seen seen;

  gst_structure_set (gst_context_writable_structure (context), "device-id",
      G_TYPE_INT, 0, NULL);
  pipeline = run (description, context, &seen);
  fail_unless_equals_int (seen.have_context, 0);
  fail_unless_equals_int (seen.need_context, 0);
  assert_cuda (pipeline, "v");
  assert_cuda (pipeline, "p");
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  gst_context_unref (context);
  g_free (description);
}

GST_END_TEST;

GST_START_TEST (test_explicit_device_answers_query)
{
  GstElement *element = gst_element_factory_make ("nms", NULL);
  GstPad *pad = gst_element_get_static_pad (element, "src");
  GstQuery *query = gst_query_new_context (P3D_CUDA_DEVICE_CONTEXT_TYPE);
  GstContext *context = NULL;
  gint device_id = -1;

  g_object_set (element, "cuda-device-id", 0, NULL);
  fail_unless_equals_int (gst_element_set_state (element, GST_STATE_PAUSED),
      GST_STATE_CHANGE_SUCCESS);
  fail_unless (gst_pad_query (pad, query));
  gst_query_parse_context (query, &context);
  fail_unless (context != NULL);
  fail_unless (gst_structure_get_int (gst_context_get_structure (context),
          "device-id", &device_id));
  fail_unless_equals_int (device_id, 0);
  gst_query_unref (query);
  gst_element_set_state (element, GST_STATE_NULL);
  gst_object_unref (pad);
  gst_object_unref (element);
}

GST_END_TEST;

/* voxelize placed on device 0 by number, pillarfeat left at -1: one device
 * end to end, whichever started first. */
GST_START_TEST (test_explicit_first_element_leads)
{
  gchar *description = g_strdup_printf (CHAIN, "cuda-device-id=0");
  Seen seen;
  GstElement *pipeline = run (description, NULL, &seen);

  fail_unless (seen.have_context >= 1);
  fail_unless_equals_int (seen.device_id, 0);
  assert_cuda (pipeline, "v");
  assert_cuda (pipeline, "p");
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  g_free (description);
}

GST_END_TEST;

static Suite *
cudadevice_suite (void)
{
  Suite *s = suite_create ("cudadevice");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_one_context_per_pipeline);
  tcase_add_test (tc, test_application_context);
  tcase_add_test (tc, test_explicit_device_answers_query);
  tcase_add_test (tc, test_explicit_first_element_leads);
  return s;
}

P3D_CHECK_MAIN (cudadevice);
