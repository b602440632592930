/* Caps that contradict a property or a model, as a user's pipeline meets
 * them: refused by the element whose property or model they contradict
 * (never by a source upstream, a caps filter or gst-launch's "could not
 * link"), in one error at the default debug level that names the field,
 * both values and what to set; the error's debug text shows the caps, not
 * pointers; and GST_DEBUG=p3dcaps:5 says why a caps query came back
 * empty. The network elements run the tests' tiny model (16 x 16 grid of
 * 0.5 m pillars over <-4,-4,-5,4,4,3>, mmdet3d-11 features, 8 canvas
 * channels). */
#include <string.h>

#include <gst/check/gstcheck.h>

#include "p3dtest-elem.h"
#include "p3dtest-model.h"
#include "p3dtest.h"

/* voxelize with the tiny model's settings */
#define MODEL_VOXELIZE "voxelize voxel-size=\"<0.5,0.5,8>\" " \
  "range=\"<-4,-4,-5,4,4,3>\" max-points=4 max-voxels=64"
#define POINTS "pointcloudtestsrc num-buffers=1 max-range=4"
/* a canvas of the model's size, without any frame behind it: the caps
 * filter makes the caps event */
#define CANVAS_SOURCE "filesrc location=/dev/zero num-buffers=1 ! "

typedef struct
{
  const gchar *name;
  /* %1$s is the weights file */
  const gchar *launch;
  /* the element that must post the error, by factory */
  const gchar *factory;
  const gchar *needles[4];
} Case;

/* The refusals of issue 32.6 (and the newcomer issue 25.1) and their
 * neighbours: before, most were posted by the source ("Internal data
 * stream error", "downstream takes no application/x-point-cloud format"),
 * by a caps filter ("Filter caps do not completely specify the output
 * format"), or failed the link in gst_parse_launch. */
static const Case cases[] = {
  {"the features pillarfeat makes, not the model's",
        POINTS " ! " MODEL_VOXELIZE " ! pillarfeat ! pillarencode "
        "weights=%1$s ! fakesink", "pillarencode",
        {"pillarfeat features=pointpillars-10 (10 channels)",
              "takes features=mmdet3d-11 (11 channels)",
          "set pillarfeat features=mmdet3d-11", NULL}},
  {"another feature set of the model's channel count",
        POINTS " ! " MODEL_VOXELIZE " ! pillarfeat features=pointpillars-11 "
        "! pillarencode weights=%1$s ! fakesink", "pillarencode",
        {"features=pointpillars-11", "set pillarfeat features=mmdet3d-11",
          NULL}},
  {"voxelize's defaults (the KITTI grid) and the model's features",
        POINTS " ! voxelize ! pillarfeat features=mmdet3d-11 ! pillarencode "
        "weights=%1$s ! fakesink", "pillarencode",
        {"voxelize voxel-size=<0.16,0.16,4> over range=<0,-39.68,-3,69.12,"
              "39.68,1> makes a 432 x 496 x 1 grid",
              "trained on voxel-size=<0.5,0.5,8>",
              "set voxelize voxel-size=\"<0.5,0.5,8>\" range=\"<-4,-4,-5,4,4,3>\"",
          NULL}},
  {"the model's range, other cells",
        POINTS " ! voxelize voxel-size=\"<1,1,8>\" range=\"<-4,-4,-5,4,4,3>\" "
        "max-points=4 max-voxels=64 ! pillarfeat features=mmdet3d-11 "
        "! pillarencode weights=%1$s ! fakesink", "pillarencode",
        {"voxel-size=<1,1,8>", "a 8 x 8 x 1 grid",
          "set voxelize voxel-size=\"<0.5,0.5,8>\"", NULL}},
  {"the model's cells over another range",
        POINTS " ! voxelize voxel-size=\"<0.5,0.5,8>\" "
        "range=\"<-3,-4,-5,5,4,3>\" max-points=4 max-voxels=64 "
        "! pillarfeat features=mmdet3d-11 ! pillarencode weights=%1$s "
        "! fakesink", "pillarencode",
        {"voxelize range=<-3,-4,-5,5,4,3>", "trained on range=<-4,-4,-5,4,4,3>",
          "set voxelize range=\"<-4,-4,-5,4,4,3>\"", NULL}},
  {"a canvas of other channels into bevdetect",
        CANVAS_SOURCE "application/x-bev-features,format=F32,channels=4,"
        "width=16,height=16 ! bevdetect weights=%1$s ! fakesink", "bevdetect",
        {"The BEV features have channels=4", "takes channels=8",
          "pillarencode weights=", NULL}},
  {"a canvas of another size into bevdetect",
        CANVAS_SOURCE "application/x-bev-features,format=F32,channels=8,"
        "width=8,height=16 ! bevdetect weights=%1$s ! fakesink", "bevdetect",
        {"width=8 height=16", "takes width=16 height=16", "bevpool xbound",
          NULL}},
  {"a canvas in the xy layout into bevdetect",
        CANVAS_SOURCE "application/x-bev-features,format=F32,channels=8,"
        "width=16,height=16,layout=xy ! bevdetect weights=%1$s ! fakesink",
        "bevdetect",
      {"layout=xy", "takes layout=yx", "set bevpool layout=yx", NULL}},
  {"fewer boxes than bevdetect outputs asked for downstream",
        CANVAS_SOURCE "application/x-bev-features,format=F32,channels=8,"
        "width=16,height=16 ! bevdetect weights=%1$s "
        "! application/x-boxes3d,max-boxes=5 ! fakesink", "bevdetect",
      {"Downstream asks for max-boxes=5", "max-boxes=20", NULL}},
  {"a canvas pillarencode's model does not make, asked for downstream",
        POINTS " ! " MODEL_VOXELIZE " ! pillarfeat features=mmdet3d-11 "
        "! pillarencode weights=%1$s ! application/x-bev-features,channels=4 "
        "! fakesink", "pillarencode",
      {"Downstream asks for channels=4", "makes channels=8", NULL}},
  {"voxels of another max-voxels asked for downstream",
        POINTS " ! voxelize ! application/x-voxels,max-voxels=10 ! fakesink",
        "voxelize",
        {"Downstream asks for max-voxels=10", "makes max-voxels=40000",
          "set voxelize max-voxels=10", NULL}},
  {"voxels of another point format asked for downstream",
        POINTS " format=xyz ! voxelize ! application/x-voxels,format=xyzi "
        "! fakesink", "voxelize",
      {"Downstream asks for format=xyzi", "makes format=xyz", NULL}},
  {"pillar features of another set asked for downstream",
        POINTS " ! voxelize ! pillarfeat "
        "! application/x-pillar-features,features=mmdet3d-9 ! fakesink",
        "pillarfeat",
        {"Downstream asks for features=mmdet3d-9",
              "makes features=pointpillars-10",
              "set pillarfeat features=mmdet3d-9",
          NULL}},
  {"3D boxes into nms mode=iou",
        POINTS " emit=boxes ! nms mode=iou ! fakesink", "nms",
        {"mode=iou works on application/x-boxes2d",
              "the input is application/x-boxes3d", "set nms mode=bev-rotated",
          NULL}},
  {"voxels caps without a grid into pillarfeat (the parser's reason)",
        CANVAS_SOURCE "application/x-voxels,format=xyzi,channels=4,"
        "max-voxels=4,max-points=2 ! pillarfeat ! fakesink", "pillarfeat",
        {"the caps cannot be used by p3dpillarfeat0: no array field voxel-size",
          NULL}},
  {"2D boxes into nms mode=circle",
        CANVAS_SOURCE "application/x-boxes2d,max-boxes=4 ! nms mode=circle "
        "! fakesink", "nms",
        {"mode=circle works on application/x-boxes3d",
          "the input is application/x-boxes2d", "set nms mode=iou", NULL}},
};

static const gchar *
factory_name (GstMessage * message)
{
  GstElementFactory *factory =
      gst_element_get_factory (GST_ELEMENT (GST_MESSAGE_SRC (message)));

  return factory ? GST_OBJECT_NAME (factory) : GST_MESSAGE_SRC_NAME (message);
}

/* Runs @launch to its first error; returns it, the element that posted it
 * in @source (factory name) and how many errors that element posted in
 * @n_errors (the source's own "Internal data stream error" follows, as
 * GstBaseSrc posts it for the not-negotiated flow). */
static GstMessage *
first_error (const gchar * launch, gchar ** source, guint * n_errors)
{
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch (launch, &error);
  GstMessage *first = NULL, *message;
  GstBus *bus;

  fail_unless (pipeline != NULL, "'%s' does not link: %s", launch,
      error ? error->message : "?");
  bus = gst_element_get_bus (pipeline);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  *n_errors = 0;
  /* every message up to the end of the stream or 2 s after the first
   * error, so that a second error for the same refusal is seen */
  while ((message = gst_bus_timed_pop_filtered (bus, first ? 2 * GST_SECOND :
              20 * GST_SECOND, GST_MESSAGE_ERROR | GST_MESSAGE_EOS))) {
    if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_EOS) {
      gst_message_unref (message);
      break;
    }
    if (first == NULL) {
      first = message;
      *source = g_strdup (factory_name (message));
      *n_errors = 1;
    } else {
      if (g_str_equal (factory_name (message), *source))
        (*n_errors)++;
      gst_message_unref (message);
    }
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  fail_unless (first != NULL, "'%s' ran without an error", launch);
  return first;
}

GST_START_TEST (test_refused_by_the_constrained_element)
{
  const Case *c = &cases[__i__];
  const ModeltestOptions options = { 1, TRUE, 9 };
  ModeltestModel *m = modeltest_model_new (&options);
  gchar *path = modeltest_model_write (m, NULL);
  gchar *launch = g_strdup_printf (c->launch, path);
  GstMessage *message;
  GError *error = NULL;
  gchar *debug = NULL, *source = NULL;
  guint n_errors, i;

  GST_INFO ("%s: %s", c->name, launch);
  message = first_error (launch, &source, &n_errors);
  gst_message_parse_error (message, &error, &debug);
  GST_INFO ("%s: %s | %s", source, error->message, debug);
  fail_unless_equals_string (source, c->factory);
  fail_unless (g_error_matches (error, GST_CORE_ERROR,
          GST_CORE_ERROR_NEGOTIATION), "%s: %s", c->name, error->message);
  for (i = 0; c->needles[i]; i++)
    fail_unless (strstr (error->message, c->needles[i]) != NULL,
        "%s: the error does not say \"%s\": %s", c->name, c->needles[i],
        error->message);
  /* the caps themselves in the debug text, not their addresses */
  fail_unless (debug && strstr (debug, "input application/x-") != NULL
      && strstr (debug, "output application/x-") != NULL
      && strstr (debug, "0x") == NULL, "%s: debug text %s", c->name, debug);
  /* one refusal, one error from the element */
  fail_unless_equals_int (n_errors, 1);
  g_clear_error (&error);
  g_free (debug);
  g_free (source);
  gst_message_unref (message);
  g_free (launch);
  modeltest_remove (path);
  modeltest_model_free (m);
}

GST_END_TEST;

/* Where following the constraint is possible, the constraint still wins:
 * pillarencode's canvas and bevdetect's boxes are the model's, with the
 * fallbacks offered last. */
GST_START_TEST (test_constraints_come_first)
{
  const ModeltestOptions options = { 1, TRUE, 9 };
  ModeltestModel *m = modeltest_model_new (&options);
  gchar *path = modeltest_model_write (m, NULL);
  gchar *launch = g_strdup_printf (POINTS " ! " MODEL_VOXELIZE
      " ! pillarfeat features=mmdet3d-11 ! pillarencode weights=%s "
      "! bevdetect weights=%s ! appsink name=sink", path, path);
  GPtrArray *samples = elemtest_run_pipeline (launch);
  GstCaps *caps = elemtest_sample_caps (samples, 0);
  gint max_boxes = 0;

  fail_unless (gst_structure_get_int (gst_caps_get_structure (caps, 0),
          "max-boxes", &max_boxes));
  fail_unless_equals_int (max_boxes, modeltest_capacity (&options, TRUE));
  g_ptr_array_unref (samples);
  g_free (launch);
  modeltest_remove (path);
  modeltest_model_free (m);
}

GST_END_TEST;

static GString *caps_log;

static void
log_p3dcaps (GstDebugCategory * category, GstDebugLevel level,
    const gchar * file, const gchar * function, gint line, GObject * object,
    GstDebugMessage * message, gpointer data)
{
  if (g_strcmp0 (gst_debug_category_get_name (category), "p3dcaps") == 0)
    g_string_append_printf (caps_log, "%s\n", gst_debug_message_get (message));
}

/* GST_DEBUG=p3dcaps:5 logs why a caps query on a filter came back empty:
 * bevpool (whose output grid its properties fix) asked from downstream
 * for a canvas 5 cells wide. */
GST_START_TEST (test_empty_caps_query_logged)
{
  GstElement *bevpool = gst_element_factory_make ("bevpool", NULL);
  GstPad *src = gst_element_get_static_pad (bevpool, "src");
  GstCaps *filter = gst_caps_from_string ("application/x-bev-features, "
      "width=(int)5");
  GstCaps *caps;

  caps_log = g_string_new (NULL);
  gst_debug_set_active (TRUE);
  gst_debug_set_threshold_for_name ("p3dcaps", GST_LEVEL_DEBUG);
  gst_debug_add_log_function (log_p3dcaps, NULL, NULL);
  caps = gst_pad_query_caps (src, filter);
  gst_debug_remove_log_function (log_p3dcaps);
  gst_debug_set_threshold_for_name ("p3dcaps", GST_LEVEL_NONE);
  fail_unless (gst_caps_is_empty (caps));
  fail_unless (strstr (caps_log->str, "caps query on the src pad came back "
          "empty: width: 5 against 360") != NULL, "p3dcaps logged: %s",
      caps_log->str);
  g_string_free (caps_log, TRUE);
  gst_caps_unref (caps);
  gst_caps_unref (filter);
  gst_object_unref (src);
  gst_object_unref (bevpool);
}

GST_END_TEST;

static Suite *
negotiation_suite (void)
{
  Suite *s = suite_create ("negotiation");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_loop_test (tc, test_refused_by_the_constrained_element, 0,
      G_N_ELEMENTS (cases));
  tcase_add_test (tc, test_constraints_come_first);
  tcase_add_test (tc, test_empty_caps_query_logged);
  return s;
}

P3D_CHECK_MAIN (negotiation);
