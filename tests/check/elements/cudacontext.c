/* cuda-device-id=-1 means one thing in every element that picks a device
 * (caps/p3dcudacontext.h): the device the pipeline already uses, found
 * when the element starts in a context set on it (by the application or a
 * bin), in a neighbour's answer to a CONTEXT query, or in an answer to
 * NEED_CONTEXT; else device 0. The sources and the parser that write CUDA
 * memory take part as the GPU filters do. The device an element took is
 * read back from its own answer to a CONTEXT query, so these run without a
 * GPU (the devices named need not exist: nothing is allocated). */
#include <string.h>

#include <gst/check/gstcheck.h>

#include "p3dperception.h"
#include "p3dtest.h"

/* One element of each kind, named "e", between "up" (none for the source)
 * and "sink"; in system memory, so that a machine with a GPU allocates
 * nothing on the devices named either. */
static const gchar *const launches[] = {
  "pointcloudtestsrc name=e num-buffers=1 ! application/x-point-cloud "
      "! fakesink name=sink",
  "appsrc name=up ! pcdparse name=e ! application/x-point-cloud "
      "! fakesink name=sink",
  "appsrc name=up caps=application/x-point-cloud,format=xyzi "
      "! voxelize name=e ! application/x-voxels ! fakesink name=sink",
};

typedef struct
{
  gint answer;                  /* the device a neighbour answers, or -1 */
  gboolean armed;               /* answering only while the element starts */
  guint asked;
} Neighbour;

typedef struct
{
  gint answer;                  /* the device the application gives, or -1 */
  guint need_context;
  guint have_context;
} Application;

static GstPadProbeReturn
answer_as_neighbour (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  Neighbour *n = data;
  GstQuery *query = GST_PAD_PROBE_INFO_QUERY (info);
  const gchar *type = NULL;
  GstContext *context;

  if (GST_QUERY_TYPE (query) != GST_QUERY_CONTEXT
      || !gst_query_parse_context_type (query, &type)
      || g_strcmp0 (type, P3D_CUDA_DEVICE_CONTEXT_TYPE) != 0 || !n->armed)
    return GST_PAD_PROBE_OK;
  n->asked++;
  if (n->answer < 0)
    return GST_PAD_PROBE_OK;
  context = p3d_cuda_device_context_new (n->answer);
  gst_query_set_context (query, context);
  gst_context_unref (context);
  return GST_PAD_PROBE_HANDLED;
}

static GstBusSyncReply
answer_as_application (GstBus * bus, GstMessage * message, gpointer data)
{
  Application *app = data;
  const gchar *type = NULL;

  if (g_strcmp0 (GST_OBJECT_NAME (GST_MESSAGE_SRC (message)), "e") != 0)
    return GST_BUS_PASS;
  if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_HAVE_CONTEXT)
    app->have_context++;
  if (GST_MESSAGE_TYPE (message) != GST_MESSAGE_NEED_CONTEXT
      || !gst_message_parse_context_type (message, &type)
      || g_strcmp0 (type, P3D_CUDA_DEVICE_CONTEXT_TYPE) != 0)
    return GST_BUS_PASS;
  app->need_context++;
  if (app->answer >= 0) {
    GstContext *context = p3d_cuda_device_context_new (app->answer);

    gst_element_set_context (GST_ELEMENT (GST_MESSAGE_SRC (message)), context);
    gst_context_unref (context);
  }
  return GST_BUS_PASS;
}

/* The device @element's src pad names when asked, or -1. */
static gint
answered_device (GstElement * element)
{
  GstPad *pad = gst_element_get_static_pad (element, "src");
  GstQuery *query = gst_query_new_context (P3D_CUDA_DEVICE_CONTEXT_TYPE);
  GstContext *context = NULL;
  gint device_id = -1;

  if (gst_pad_query (pad, query)) {
    gst_query_parse_context (query, &context);
    device_id = p3d_cuda_device_context_get_device_id (context);
  }
  gst_query_unref (query);
  gst_object_unref (pad);
  return device_id;
}

static void
add_probe (GstElement * pipeline, const gchar * name, const gchar * pad_name,
    GstPadProbeType type, Neighbour * neighbour)
{
  GstElement *element = gst_bin_get_by_name (GST_BIN (pipeline), name);
  GstPad *pad = gst_element_get_static_pad (element, pad_name);

  gst_pad_add_probe (pad, type | GST_PAD_PROBE_TYPE_PUSH, answer_as_neighbour,
      neighbour, NULL);
  gst_object_unref (pad);
  gst_object_unref (element);
}

/* Starts @launch (READY -> PAUSED) with element "e" at @requested, the
 * application's context (@context_device, or none), the application's
 * answer to NEED_CONTEXT in @app and the neighbours' answers; returns the
 * device "e" answers with once started. */
static gint
start (const gchar * launch, gint requested, gint context_device,
    Application * app, Neighbour * downstream, Neighbour * upstream)
{
  GstElement *pipeline = gst_parse_launch (launch, NULL);
  GstElement *element;
  GstBus *bus;
  gint device_id;

  fail_unless (pipeline != NULL, "%s", launch);
  element = gst_bin_get_by_name (GST_BIN (pipeline), "e");
  g_object_set (element, "cuda-device-id", requested, NULL);
  bus = gst_element_get_bus (pipeline);
  gst_bus_set_sync_handler (bus, answer_as_application, app, NULL);
  if (context_device >= 0) {
    GstContext *context = p3d_cuda_device_context_new (context_device);

    gst_element_set_context (pipeline, context);
    gst_context_unref (context);
  }
  add_probe (pipeline, "sink", "sink", GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM,
      downstream);
  if (strstr (launch, "name=up"))
    add_probe (pipeline, "up", "src", GST_PAD_PROBE_TYPE_QUERY_UPSTREAM,
        upstream);

  downstream->armed = upstream->armed = TRUE;
  fail_if (gst_element_set_state (pipeline, GST_STATE_PAUSED) ==
      GST_STATE_CHANGE_FAILURE, "%s", launch);
  downstream->armed = upstream->armed = FALSE;
  device_id = answered_device (element);

  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_bus_set_sync_handler (bus, NULL, NULL, NULL);
  gst_object_unref (bus);
  gst_object_unref (element);
  gst_object_unref (pipeline);
  return device_id;
}

static void
no_neighbours (Neighbour * downstream, Neighbour * upstream)
{
  memset (downstream, 0, sizeof (*downstream));
  memset (upstream, 0, sizeof (*upstream));
  downstream->answer = upstream->answer = -1;
}

/* A context the application sets on the pipeline is taken as it is: no
 * element asks anyone. */
GST_START_TEST (test_application_context)
{
  guint i;

  for (i = 0; i < G_N_ELEMENTS (launches); i++) {
    Application app = { -1, 0, 0 };
    Neighbour down, up;

    no_neighbours (&down, &up);
    fail_unless_equals_int (start (launches[i], -1, 3, &app, &down, &up), 3);
    fail_unless_equals_int (app.need_context, 0);
    fail_unless_equals_int (down.asked, 0);
    fail_unless_equals_int (up.asked, 0);
  }
}

GST_END_TEST;

/* The device a neighbour holds: downstream first (it started before), then
 * upstream. */
GST_START_TEST (test_neighbour_context)
{
  guint i;

  for (i = 0; i < G_N_ELEMENTS (launches); i++) {
    Application app = { -1, 0, 0 };
    Neighbour down, up;

    no_neighbours (&down, &up);
    down.answer = 4;
    up.answer = 5;
    fail_unless_equals_int (start (launches[i], -1, -1, &app, &down, &up), 4);
    fail_unless_equals_int (down.asked, 1);
    fail_unless_equals_int (up.asked, 0);
    fail_unless_equals_int (app.need_context, 0);

    if (!strstr (launches[i], "name=up"))
      continue;
    no_neighbours (&down, &up);
    up.answer = 5;
    fail_unless_equals_int (start (launches[i], -1, -1, &app, &down, &up), 5);
    fail_unless_equals_int (down.asked, 1);
    fail_unless_equals_int (up.asked, 1);
  }
}

GST_END_TEST;

/* With no neighbour that knows, the element asks the bins and the
 * application once; their answer is taken. */
GST_START_TEST (test_need_context)
{
  guint i;

  for (i = 0; i < G_N_ELEMENTS (launches); i++) {
    Application app = { 6, 0, 0 };
    Neighbour down, up;

    no_neighbours (&down, &up);
    fail_unless_equals_int (start (launches[i], -1, -1, &app, &down, &up), 6);
    fail_unless_equals_int (app.need_context, 1);
  }
}

GST_END_TEST;

/* Nothing shared anywhere: device 0, which an element shares only once it
 * uses it (a filter that opened it; without a GPU, none), so that it
 * claims nothing before. */
GST_START_TEST (test_nothing_shared)
{
  guint i;

  for (i = 0; i < G_N_ELEMENTS (launches); i++) {
    Application app = { -1, 0, 0 };
    Neighbour down, up;
    gint device_id;

    no_neighbours (&down, &up);
    device_id = start (launches[i], -1, -1, &app, &down, &up);
    fail_unless_equals_int (app.need_context, 1);
    if (!p3d_cuda_device_available ())
      fail_unless_equals_int (device_id, -1);
    fail_unless ((device_id == -1 && app.have_context == 0)
        || (device_id == 0 && app.have_context == 1), "%s: device %d, %u "
        "HAVE_CONTEXT", launches[i], device_id, app.have_context);
  }
}

GST_END_TEST;

/* A device given by number is kept whatever is shared, and named to
 * whoever asks. */
GST_START_TEST (test_numbered_device)
{
  guint i;

  for (i = 0; i < G_N_ELEMENTS (launches); i++) {
    Application app = { 6, 0, 0 };
    Neighbour down, up;

    no_neighbours (&down, &up);
    down.answer = 4;
    /* 0, which a machine with a GPU has */
    fail_unless_equals_int (start (launches[i], 0, 3, &app, &down, &up), 0);
    fail_unless_equals_int (app.need_context, 0);
    fail_unless_equals_int (down.asked, 0);
  }
}

GST_END_TEST;

/* Every element of the plugin with cuda-device-id says what -1 means, in
 * the same words. */
GST_START_TEST (test_blurbs)
{
  GList *features = gst_registry_get_feature_list_by_plugin
      (gst_registry_get (), "perception");
  GList *l;
  guint with_device = 0;

  for (l = features; l; l = l->next) {
    GstElementFactory *factory;
    GstElementClass *klass;
    GParamSpec *pspec;
    GType type;

    if (!GST_IS_ELEMENT_FACTORY (l->data))
      continue;
    factory = GST_ELEMENT_FACTORY (gst_plugin_feature_load (l->data));
    fail_unless (factory != NULL);
    type = gst_element_factory_get_element_type (factory);
    klass = g_type_class_ref (type);
    pspec = g_object_class_find_property (G_OBJECT_CLASS (klass),
        "cuda-device-id");
    if (pspec) {
      with_device++;
      fail_unless (strstr (g_param_spec_get_blurb (pspec),
              "-1: the device the pipeline already uses (shared by the "
              "other elements") != NULL, "%s: %s",
          GST_OBJECT_NAME (factory), g_param_spec_get_blurb (pspec));
      fail_unless_equals_int (G_PARAM_SPEC_INT (pspec)->default_value, -1);
    }
    g_type_class_unref (klass);
    gst_object_unref (factory);
  }
  /* the six GPU filters, camencode, pointcloudtestsrc, pcdparse,
   * velodyneparse and ousterparse */
  fail_unless_equals_int (with_device, 11);
  gst_plugin_feature_list_free (features);
}

GST_END_TEST;

static Suite *
cudacontext_suite (void)
{
  Suite *s = suite_create ("cudacontext");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_application_context);
  tcase_add_test (tc, test_neighbour_context);
  tcase_add_test (tc, test_need_context);
  tcase_add_test (tc, test_nothing_shared);
  tcase_add_test (tc, test_numbered_device);
  tcase_add_test (tc, test_blurbs);
  return s;
}

P3D_CHECK_MAIN (cudacontext);
