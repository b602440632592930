/* The sources and the parser that write CUDA memory, on a GPU: at
 * cuda-device-id=-1 their buffers go on the device the pipeline already
 * uses (a context the application sets; the device of a numbered filter
 * downstream), they share the device they allocate on when nothing else
 * did, and a shared device that does not exist is an error naming it, as
 * for a device given by number. Needs a GPU; with two, the shared device is
 * device 1, so that a source that ignored it (device 0) fails. */
#include <string.h>

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/check/gstcheck.h>

#include "p3dperception.h"
#include "p3dtest.h"
#include "runtime.h"

#define CUDA_POINTS "application/x-point-cloud(" P3D_CAPS_FEATURE_MEMORY_CUDA ")"

/* Two points, as a PCD file. */
static const gchar pcd_file[] =
    "VERSION 0.7\nFIELDS x y z intensity\nSIZE 4 4 4 4\nTYPE F F F F\n"
    "COUNT 1 1 1 1\nWIDTH 2\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS 2\n"
    "DATA ascii\n1 2 3 0.5\n4 5 6 0.25\n";

/* "e", the element under test, between an optional appsrc "up" and the
 * appsink "sink". */
static const gchar *const sources[] = {
  "pointcloudtestsrc name=e num-buffers=2 beams=4 points-per-revolution=64 "
      "! " CUDA_POINTS " ! %s appsink name=sink",
  "appsrc name=up caps=application/x-pcd ! pcdparse name=e ! " CUDA_POINTS
      " ! %s appsink name=sink",
};

typedef struct
{
  guint have_context;           /* posted by "e" */
  gint shared_device;           /* the device it named */
  GstMessage *error;
  guint buffers;
  gint devices[2];              /* of the first two buffers "e" pushed */
} Run;

/* Notes where the buffers that "e" pushes are. */
static GstPadProbeReturn
note_device (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Run *run = data;
  GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER (info);
  GstMemory *mem = gst_buffer_n_memory (buffer) > 0 ?
      gst_buffer_peek_memory (buffer, 0) : NULL;

  if (run->buffers < G_N_ELEMENTS (run->devices))
    run->devices[run->buffers] = mem && p3d_is_cuda_memory (mem) ?
        ((P3dCudaMemory *) mem)->device_id : -1;
  run->buffers++;
  return GST_PAD_PROBE_OK;
}

static GstBusSyncReply
watch (GstBus * bus, GstMessage * message, gpointer data)
{
  Run *run = data;

  if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_HAVE_CONTEXT
      && g_strcmp0 (GST_OBJECT_NAME (GST_MESSAGE_SRC (message)), "e") == 0) {
    GstContext *context = NULL;

    gst_message_parse_have_context (message, &context);
    run->have_context++;
    run->shared_device = p3d_cuda_device_context_get_device_id (context);
    gst_context_unref (context);
  }
  return GST_BUS_PASS;
}

/* Runs sources[@which] with @middle between it and the sink, the
 * application's context naming @context_device (none when < 0), to EOS or
 * an error. */
static void
run_source (guint which, const gchar * middle, gint context_device, Run * run)
{
  gchar *launch = g_strdup_printf (sources[which], middle);
  GstElement *pipeline = gst_parse_launch (launch, NULL);
  GstElement *sink, *up, *element;
  GstBus *bus;
  GstSample *sample;
  GstPad *pad;

  fail_unless (pipeline != NULL, "%s", launch);
  memset (run, 0, sizeof (*run));
  run->shared_device = run->devices[0] = run->devices[1] = -1;
  bus = gst_element_get_bus (pipeline);
  gst_bus_set_sync_handler (bus, watch, run, NULL);
  if (context_device >= 0) {
    GstContext *context = p3d_cuda_device_context_new (context_device);

    gst_element_set_context (pipeline, context);
    gst_context_unref (context);
  }
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  up = gst_bin_get_by_name (GST_BIN (pipeline), "up");
  element = gst_bin_get_by_name (GST_BIN (pipeline), "e");
  pad = gst_element_get_static_pad (element, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, note_device, run, NULL);
  gst_object_unref (pad);
  gst_object_unref (element);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  if (up) {
    fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (up),
            gst_buffer_new_memdup (pcd_file, strlen (pcd_file))), GST_FLOW_OK);
    gst_app_src_end_of_stream (GST_APP_SRC (up));
  }
  /* EOS, also after an error (the sources end their stream then) */
  while ((sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
              60 * GST_SECOND)))
    gst_sample_unref (sample);
  fail_unless (gst_app_sink_is_eos (GST_APP_SINK (sink)), "%s: no EOS", launch);
  run->error = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_bus_set_sync_handler (bus, NULL, NULL, NULL);
  gst_object_unref (bus);
  gst_clear_object (&up);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  g_free (launch);
}

static void
assert_on (Run * run, gint device, const gchar * what)
{
  guint i;

  if (run->error) {
    GError *error = NULL;

    gst_message_parse_error (run->error, &error, NULL);
    fail ("%s: %s", what, error->message);
  }
  fail_unless (run->buffers > 0, "%s: no output", what);
  for (i = 0; i < MIN (run->buffers, G_N_ELEMENTS (run->devices)); i++)
    fail_unless (run->devices[i] == device, "%s: buffer %u on device %d, "
        "not %d", what, i, run->devices[i], device);
}

/* The device a pipeline shares that is not the default one when there is
 * another. */
static gint
other_device (void)
{
  gint count = p3dc_cuda_device_count ();

  if (count < 2)
    g_print ("cudacontext_cuda: one device: the shared device is device 0, "
        "which the default gives as well\n");
  return count - 1;
}

GST_START_TEST (test_application_context)
{
  gint device = other_device ();
  guint i;

  for (i = 0; i < G_N_ELEMENTS (sources); i++) {
    Run run;

    run_source (i, "", device, &run);
    assert_on (&run, device, sources[i]);
    /* the context it took was the application's: nothing new to share */
    fail_unless_equals_int (run.have_context, 0);
  }
}

GST_END_TEST;

/* A filter given a number downstream: the buffers are made on its device,
 * so that it copies nothing. */
GST_START_TEST (test_numbered_filter_downstream)
{
  gint device = other_device ();
  gchar *middle = g_strdup_printf ("voxelize cuda-device-id=%d ! "
      "application/x-voxels(" P3D_CAPS_FEATURE_MEMORY_CUDA ") !", device);
  guint i;

  for (i = 0; i < G_N_ELEMENTS (sources); i++) {
    Run run;

    run_source (i, middle, -1, &run);
    assert_on (&run, device, sources[i]);
    fail_unless_equals_int (run.have_context, 0);
  }
  g_free (middle);
}

GST_END_TEST;

/* Nothing shared: device 0, which the source then shares once. */
GST_START_TEST (test_source_shares)
{
  guint i;

  for (i = 0; i < G_N_ELEMENTS (sources); i++) {
    Run run;

    run_source (i, "", -1, &run);
    assert_on (&run, 0, sources[i]);
    fail_unless_equals_int (run.have_context, 1);
    fail_unless_equals_int (run.shared_device, 0);
  }
}

GST_END_TEST;

/* A shared device that does not exist cannot hold the buffers: an error
 * naming it, as cuda-device-id naming it gives. */
GST_START_TEST (test_shared_device_missing)
{
  gint missing = p3dc_cuda_device_count ();
  gchar *needle = g_strdup_printf ("CUDA device %d", missing);
  guint i;

  for (i = 0; i < G_N_ELEMENTS (sources); i++) {
    GError *error = NULL;
    Run run;

    run_source (i, "", missing, &run);
    fail_unless (run.error != NULL, "%s: no error", sources[i]);
    gst_message_parse_error (run.error, &error, NULL);
    fail_unless (error->domain == GST_RESOURCE_ERROR
        && error->code == GST_RESOURCE_ERROR_NOT_FOUND, "%s", error->message);
    fail_unless (strstr (error->message, "Cannot output memory:CUDAMemory")
        && strstr (error->message, needle), "%s", error->message);
    fail_unless_equals_int (run.buffers, 0);
    g_clear_error (&error);
    gst_message_unref (run.error);
  }
  g_free (needle);
}

GST_END_TEST;

static Suite *
cudacontext_cuda_suite (void)
{
  Suite *s = suite_create ("cudacontext_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_application_context);
  tcase_add_test (tc, test_numbered_filter_downstream);
  tcase_add_test (tc, test_source_shares);
  tcase_add_test (tc, test_shared_device_missing);
  return s;
}

P3D_CHECK_MAIN (cudacontext_cuda);
