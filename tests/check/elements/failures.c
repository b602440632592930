/* Every element on a pipeline that must fail, run many times, each run
 * under a time limit: the pipeline ends with an error on the bus and goes
 * back to NULL, never waits for ever.
 *
 * The failures are the ones a user meets first: no caps at all (a source
 * that sends bytes without a caps event: not-negotiated), caps that do not
 * describe the buffers (a size error), caps that disagree with a property
 * (bevpool's cameras against its calibration, a network's input against its
 * weights), and a weights file that does not exist. Errors are raced
 * against the state changes in three ways: the application waits for the
 * error while PLAYING, waits only for the PAUSED preroll as gst-launch-1.0
 * does, or stops the pipeline at once. A run that does not post its error
 * within the limit, or whose state change to NULL does not return, fails
 * the test with the pipeline's description. */
#include <string.h>

#include <gst/check/gstcheck.h>

#include "p3dtest-bevpoolrig.h"
#include "p3dtest-elem.h"
#include "p3dtest-model.h"
#include "p3dtest.h"

/* Runs of each pipeline in each mode: 18 pipelines x 3 modes x 12 = 648
 * failing pipelines in all (at least 600 were asked for), about 5 s on
 * two cores. */
#define RUNS 12
/* Far above what one run takes on a loaded machine, far below a test
 * timeout. */
#define RUN_LIMIT (10 * GST_SECOND)

typedef enum
{
  WAIT_PLAYING,                 /* PLAYING, then the error */
  WAIT_PREROLL,                 /* PAUSED only: the error while prerolling */
  STOP_AT_ONCE,                 /* PLAYING, then NULL straight away */
} RunMode;

static const gchar *const mode_names[] = { "playing", "preroll", "stop" };

typedef struct
{
  GstElement *pipeline;
  GMutex lock;
  GCond cond;
  gboolean done;
} StateJob;

static gpointer
set_null_thread (gpointer data)
{
  StateJob *job = data;

  gst_element_set_state (job->pipeline, GST_STATE_NULL);
  g_mutex_lock (&job->lock);
  job->done = TRUE;
  g_cond_signal (&job->cond);
  g_mutex_unlock (&job->lock);
  return NULL;
}

/* Sets @pipeline to NULL in another thread; FALSE when that does not return
 * within the limit (the thread is then left behind, and the test fails). */
static gboolean
set_null_within_limit (GstElement * pipeline)
{
  StateJob *job = g_new0 (StateJob, 1);
  gint64 end = g_get_monotonic_time () + RUN_LIMIT / GST_USECOND;
  GThread *thread;
  gboolean done;

  job->pipeline = pipeline;
  g_mutex_init (&job->lock);
  g_cond_init (&job->cond);
  thread = g_thread_new ("set-null", set_null_thread, job);
  g_mutex_lock (&job->lock);
  while (!job->done && g_cond_wait_until (&job->cond, &job->lock, end));
  done = job->done;
  g_mutex_unlock (&job->lock);
  if (!done)
    return FALSE;
  g_thread_join (thread);
  g_mutex_clear (&job->lock);
  g_cond_clear (&job->cond);
  g_free (job);
  return TRUE;
}

/* One run of @description in @mode. */
static void
run_once (const gchar * description, RunMode mode, guint run)
{
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch (description, &error);
  GstStateChangeReturn ret;
  GstMessage *message = NULL;
  GstBus *bus;

  /* the pipelines link: they fail while running, where a hang could hide */
  fail_unless (pipeline != NULL && error == NULL, "'%s': %s", description,
      error ? error->message : "?");
  bus = gst_element_get_bus (pipeline);
  ret = gst_element_set_state (pipeline,
      mode == WAIT_PREROLL ? GST_STATE_PAUSED : GST_STATE_PLAYING);
  if (mode != STOP_AT_ONCE && ret != GST_STATE_CHANGE_FAILURE) {
    message = gst_bus_timed_pop_filtered (bus, RUN_LIMIT,
        GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
    fail_unless (message != NULL, "'%s' (%s, run %u): no error within %"
        GST_TIME_FORMAT ": the pipeline hangs", description, mode_names[mode],
        run, GST_TIME_ARGS (RUN_LIMIT));
    fail_unless (GST_MESSAGE_TYPE (message) == GST_MESSAGE_ERROR,
        "'%s' (%s, run %u) ended without an error", description,
        mode_names[mode], run);
    gst_message_unref (message);
  }
  fail_unless (set_null_within_limit (pipeline), "'%s' (%s, run %u): the "
      "state change to NULL does not return", description, mode_names[mode],
      run);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
}

static void
run_many (const gchar * description)
{
  guint mode, run;

  for (mode = 0; mode < G_N_ELEMENTS (mode_names); mode++)
    for (run = 0; run < RUNS; run++)
      run_once (description, mode, run);
}

/* Bytes without caps, as multifilesrc sends them when no caps are set. */
#define NO_CAPS "fakesrc num-buffers=3 sizetype=fixed sizemax=1000 " \
  "filltype=zero ! "
/* Caps, but buffers of a size no tensor layout has. */
#define ODD_SIZE "fakesrc num-buffers=3 sizetype=fixed sizemax=1001 " \
  "filltype=zero ! "

GST_START_TEST (test_voxelize_fails)
{
  run_many (NO_CAPS "voxelize ! fakesink");
  run_many (NO_CAPS "voxelize ! pillarfeat ! fakesink");
  run_many (ODD_SIZE "application/x-point-cloud, format=xyzi ! voxelize "
      "! fakesink");
}

GST_END_TEST;

GST_START_TEST (test_pillarfeat_fails)
{
  run_many (NO_CAPS "pillarfeat ! fakesink");
  run_many (ODD_SIZE "application/x-voxels, format=xyzi, channels=4, "
      "max-voxels=16, max-points=4, grid=<4,4,1>, "
      "voxel-size=<1.0,1.0,4.0>, range=<0.0,0.0,-3.0,4.0,4.0,1.0> "
      "! pillarfeat ! fakesink");
}

GST_END_TEST;

GST_START_TEST (test_nms_fails)
{
  run_many (NO_CAPS "nms ! fakesink");
  run_many (ODD_SIZE "application/x-boxes3d, max-boxes=8 ! nms ! fakesink");
}

GST_END_TEST;

GST_START_TEST (test_bevpool_fails)
{
  P3dcCameraCalib cameras[2];
  GError *error = NULL;
  gchar *dir = g_dir_make_tmp ("failures-XXXXXX", &error);
  gchar *json, *path, *description;

  fail_unless (dir != NULL, "%s", error ? error->message : "?");
  bevpoolrig_cameras (2, 0, cameras);
  json = bevpoolrig_calibration_json (cameras, 2, FALSE);
  path = elemtest_write_file (dir, "two.json", json);
  g_free (json);

  description = g_strdup_printf (NO_CAPS "bevpool calibration=%s ! fakesink",
      path);
  run_many (description);
  g_free (description);
  /* three cameras in the caps, two in the calibration (118 depth bins:
   * the default dbound) */
  description = g_strdup_printf (ODD_SIZE "application/x-camera-features, "
      "format=F32, cameras=3, channels=4, depth-bins=118, width=8, height=8 "
      "! bevpool calibration=%s ! fakesink", path);
  run_many (description);
  g_free (description);
  g_free (path);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* A file of @contents in a new directory, read by filesrc into @element. */
static void
run_many_on_file (const gchar * contents, const gchar * element)
{
  GError *error = NULL;
  gchar *dir = g_dir_make_tmp ("failures-XXXXXX", &error);
  gchar *path, *description;

  fail_unless (dir != NULL, "%s", error ? error->message : "?");
  path = elemtest_write_file (dir, "input", contents);
  description = g_strdup_printf ("filesrc location=%s ! %s ! fakesink", path,
      element);
  run_many (description);
  g_free (description);
  g_free (path);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_START_TEST (test_other_elements_fail)
{
  run_many (NO_CAPS "boxenc ! fakesink");
  run_many (NO_CAPS "bevrender ! fakesink");
  /* SIZE names two fields where FIELDS names three */
  run_many_on_file ("VERSION .7\nFIELDS x y z\nSIZE 4 4\nTYPE F F F\n"
      "COUNT 1 1 1\nWIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA ascii\n1 2 3\n",
      "pcdparse");
  run_many_on_file ("this is not a box\n", "boxparse");
  /* ten bytes: no whole number of 16-byte KITTI records */
  run_many_on_file ("ten bytes!", "pointcloudparse");
}

GST_END_TEST;

/* The network elements: a weights file that does not exist (the element
 * cannot start), and a model whose input the caps do not match (refused
 * when the caps arrive). */
static void
run_many_network (const gchar * element, const gchar * input_caps)
{
  const ModeltestOptions options = { 1, FALSE, 1 };
  ModeltestModel *m = modeltest_model_new (&options);
  gchar *path = modeltest_model_write (m, NULL);
  gchar *description;

  description = g_strdup_printf (NO_CAPS "%s weights=/nonexistent/model."
      "safetensors ! fakesink", element);
  run_many (description);
  g_free (description);
  description = g_strdup_printf (ODD_SIZE "%s ! %s backend=cpu weights=%s "
      "! fakesink", input_caps, element, path);
  run_many (description);
  g_free (description);
  modeltest_remove (path);
  modeltest_model_free (m);
}

GST_START_TEST (test_network_fails)
{
  /* pointpillars-10: 10 channels where the model takes 11 */
  run_many_network ("pillarencode", "application/x-pillar-features, "
      "format=F32, features=pointpillars-10, max-voxels=64, max-points=4, "
      MODELTEST_GRID_FIELDS);
  /* 4 channels where the model takes 8 */
  run_many_network ("bevdetect", "application/x-bev-features, format=F32, "
      "channels=4, width=16, height=16");
}

GST_END_TEST;

static Suite *
failures_suite (void)
{
  Suite *s = suite_create ("failures");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_voxelize_fails);
  tcase_add_test (tc, test_pillarfeat_fails);
  tcase_add_test (tc, test_nms_fails);
  tcase_add_test (tc, test_bevpool_fails);
  tcase_add_test (tc, test_other_elements_fail);
  tcase_add_test (tc, test_network_fails);
  return s;
}

P3D_CHECK_MAIN (failures);
