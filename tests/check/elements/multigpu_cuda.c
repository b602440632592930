/* Two GPUs, as users run them:
 *  - one pipeline per device in one process, two application threads each
 *    running its own pipeline at the same time, the device given on every
 *    element by number or to the whole pipeline by a GstContext: every
 *    output tensor is bit for bit what the same pipeline gives on device 0
 *    alone, every output memory is on the pipeline's own device and every
 *    filter ran there;
 *  - the same in two processes (the program runs itself once per device,
 *    concurrently, and each child writes its outputs to a file);
 *  - one pipeline split over the devices: a source on device 0, voxelize on
 *    device 1 and elements at cuda-device-id=-1 after it; a source on device
 *    1 followed by -1 elements; and the network stage (pillarencode !
 *    bevdetect on a tiny model) after the split. The output equals the run
 *    on device 0 alone, the -1 elements end on device 1, and the input
 *    crosses by device-to-device copies: the base class's GST_PERFORMANCE
 *    log lines are counted (one copy per frame into the numbered consumer,
 *    no upload of an input from the host, no download of a memory to the
 *    host while the pipeline runs);
 *  - a device number that does not exist: an error that names it and says
 *    how many devices there are. This case runs with one device too.
 * Needs a GPU; the other cases need two and are left out below two (with a
 * line saying so), unless PERCEPTION_REQUIRE_GPUS=2 asks for them, which
 * makes that a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>

#include "p3dtest-elem.h"
#include "p3dtest-model.h"
#include "p3dperception.h"
#include "p3dtest.h"

#define FRAMES 8
#define SEED 15
/* argv[1] of the program run as a child: CHILD_ARG DEVICE OUTPUT_FILE */
#define CHILD_ARG "--run-on-device"
#define RUN_TIMEOUT_S 300
#define CUDA_CAPS(media) media "(" P3D_CAPS_FEATURE_MEMORY_CUDA ")"

/* ---- the pipelines ---------------------------------------------------- */

/* The lidar chain, small enough for compute-sanitizer (32 x 1024 points a
 * sweep, thousands of pillars) and for its outputs to be held and written
 * (5 MB a frame), CUDA memory on every link. */
static gchar *
lidar_chain (gint source_device, gint voxelize_device, gint pillarfeat_device)
{
  return g_strdup_printf ("pointcloudtestsrc num-buffers=%u seed=%u "
      "beams=32 points-per-revolution=1024 cuda-device-id=%d "
      "! " CUDA_CAPS ("application/x-point-cloud")
      " ! voxelize name=v cuda-device-id=%d max-voxels=8000 max-points=16 "
      "! pillarfeat name=p cuda-device-id=%d "
      "! " CUDA_CAPS ("application/x-pillar-features")
      " ! appsink name=sink sync=false", FRAMES, SEED, source_device,
      voxelize_device, pillarfeat_device);
}

/* The lidar chain on the tiny model's grid, then the network stage; beams
 * aimed down so that the 8 x 8 m grid around the sensor gets points. */
static gchar *
network_chain (const gchar * weights, gint source_device,
    gint voxelize_device, gint rest_device)
{
  return g_strdup_printf ("pointcloudtestsrc num-buffers=%u seed=%u "
      "format=xyzit beams=32 points-per-revolution=512 fov-up=-10 "
      "fov-down=-70 cuda-device-id=%d "
      "! " CUDA_CAPS ("application/x-point-cloud")
      " ! voxelize name=v cuda-device-id=%d voxel-size=\"<0.5,0.5,8.0>\" "
      "range=\"<-4.0,-4.0,-5.0,4.0,4.0,3.0>\" max-points=%d max-voxels=%d "
      "! pillarfeat name=p features=mmdet3d-11 cuda-device-id=%d "
      "! pillarencode name=e weights=%s cuda-device-id=%d "
      "! bevdetect name=d precision=f32 weights=%s cuda-device-id=%d "
      "! " CUDA_CAPS ("application/x-boxes3d")
      " ! appsink name=sink sync=false", FRAMES, SEED, source_device,
      voxelize_device, MODELTEST_MAX_POINTS, MODELTEST_MAX_VOXELS,
      rest_device, weights, rest_device, weights, rest_device);
}

/* ---- running a pipeline, from any thread ------------------------------ */

/* One run of a pipeline to EOS. Filled without any check assertion (they
 * must not be made outside the test's own thread): the test asserts on it
 * afterwards. */
typedef struct
{
  gchar *description;
  gint context_device;          /* given to the pipeline when >= 0 */
  ElemtestRun result;           /* every output sample, in order; the error */
  GHashTable *devices;          /* filter name -> device it ended on */
} Run;

static void
run_init (Run * run, gchar * description, gint context_device)
{
  memset (run, 0, sizeof (*run));
  run->description = description;
  run->context_device = context_device;
  run->devices = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
}

static void
run_clear (Run * run)
{
  g_free (run->description);
  elemtest_run_clear (&run->result);
  g_hash_table_unref (run->devices);
}

/* The device every GPU filter of @pipeline is on now (-1: the reference
 * path). */
static void
record_devices (GstElement * pipeline, GHashTable * devices)
{
  GstIterator *it = gst_bin_iterate_elements (GST_BIN (pipeline));
  GValue item = G_VALUE_INIT;

  while (gst_iterator_next (it, &item) == GST_ITERATOR_OK) {
    GstElement *element = g_value_get_object (&item);

    if (P3D_IS_CUDA_FILTER (element)) {
      P3dCudaFilter *filter = P3D_CUDA_FILTER (element);

      g_hash_table_insert (devices, gst_element_get_name (element),
          GINT_TO_POINTER (filter->use_cuda ? filter->device_id : -1));
    }
    g_value_reset (&item);
  }
  g_value_unset (&item);
  gst_iterator_free (it);
}

/* Builds @run's pipeline, gives it its context, plays it to EOS (or an
 * error, or RUN_TIMEOUT_S) and records where its filters ended. */
static void
run_play (Run * run)
{
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch (run->description, &error);

  if (pipeline == NULL) {
    run->result.error = g_strdup_printf ("cannot build it: %s",
        error ? error->message : "?");
    g_clear_error (&error);
    return;
  }
  g_clear_error (&error);
  if (run->context_device >= 0) {
    GstContext *context = gst_context_new (P3D_CUDA_DEVICE_CONTEXT_TYPE,
        TRUE);

    gst_structure_set (gst_context_writable_structure (context), "device-id",
        G_TYPE_INT, run->context_device, NULL);
    gst_element_set_context (pipeline, context);
    gst_context_unref (context);
  }
  elemtest_play (pipeline, &run->result, RUN_TIMEOUT_S * GST_SECOND);
  if (run->result.error == NULL)
    record_devices (pipeline, run->devices);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
}

static gpointer
run_thread (gpointer data)
{
  run_play (data);
  return NULL;
}

/* Every tensor of every output sample, one after another, read through
 * host maps (the memories' own download); FALSE when a map fails. */
static gboolean
append_outputs (GByteArray * bytes, GPtrArray * samples)
{
  guint i, m;

  for (i = 0; i < samples->len; i++) {
    GstBuffer *buffer = elemtest_sample_buffer (samples, i);

    for (m = 0; m < gst_buffer_n_memory (buffer); m++) {
      GstMemory *mem = gst_buffer_peek_memory (buffer, m);
      GstMapInfo info;

      if (!gst_memory_map (mem, &info, GST_MAP_READ))
        return FALSE;
      g_byte_array_append (bytes, info.data, info.size);
      gst_memory_unmap (mem, &info);
    }
  }
  return TRUE;
}

/* The frame of @samples that is not wholly in CUDA memory on @device, from
 * @first on, or -1. */
static gint
frame_off_device (GPtrArray * samples, guint first, gint device)
{
  guint i, m;

  for (i = first; i < samples->len; i++) {
    GstBuffer *buffer = elemtest_sample_buffer (samples, i);

    for (m = 0; m < gst_buffer_n_memory (buffer); m++) {
      GstMemory *mem = gst_buffer_peek_memory (buffer, m);

      if (!p3d_is_cuda_memory (mem)
          || ((P3dCudaMemory *) mem)->device_id != device)
        return (gint) i;
    }
  }
  return -1;
}

/* ---- assertions on runs ----------------------------------------------- */

static void
assert_ran (Run * run)
{
  fail_unless (run->result.error == NULL, "'%s': %s", run->description,
      run->result.error);
  fail_unless_equals_int (run->result.samples->len, FRAMES);
}

/* Every output tensor of @run bit for bit those of @expected. */
static void
assert_same_outputs (Run * run, Run * expected, const gchar * what)
{
  guint i, m;

  fail_unless_equals_int (run->result.samples->len,
      expected->result.samples->len);
  for (i = 0; i < run->result.samples->len; i++) {
    GstBuffer *actual_buffer = elemtest_sample_buffer (run->result.samples, i);
    GstBuffer *expected_buffer =
        elemtest_sample_buffer (expected->result.samples, i);

    fail_unless_equals_int (gst_buffer_n_memory (actual_buffer),
        gst_buffer_n_memory (expected_buffer));
    for (m = 0; m < gst_buffer_n_memory (actual_buffer); m++) {
      GBytes *actual = elemtest_host_bytes (actual_buffer, m);
      GBytes *wanted = elemtest_host_bytes (expected_buffer, m);
      gchar *where = g_strdup_printf ("%s, frame %u, tensor %u", what, i, m);

      fail_unless_equals_uint64 (g_bytes_get_size (actual),
          g_bytes_get_size (wanted));
      elemtest_assert_bytes (g_bytes_get_data (actual, NULL),
          g_bytes_get_data (wanted, NULL), g_bytes_get_size (wanted), where);
      g_free (where);
      g_bytes_unref (actual);
      g_bytes_unref (wanted);
    }
  }
}

/* From frame @first on, every output memory is on @device. */
static void
assert_outputs_on (Run * run, guint first, gint device)
{
  gint off = frame_off_device (run->result.samples, first, device);

  fail_unless (off < 0, "'%s': output %d is not in CUDA memory on device %d",
      run->description, off, device);
}

static void
assert_filter_on (Run * run, const gchar * name, gint device)
{
  gpointer value;

  fail_unless (g_hash_table_lookup_extended (run->devices, name, NULL,
          &value), "'%s' has no GPU filter %s", run->description, name);
  fail_unless (GPOINTER_TO_INT (value) == device, "'%s': %s ended on device "
      "%d, not %d", run->description, name, GPOINTER_TO_INT (value), device);
}

/* ---- the GST_PERFORMANCE lines of a run ------------------------------- */

/* Counts, by "<element> <what>" ("v copy 0->1", "p upload", "p download
 * output") and "memory download" for a host map that downloads. */
static GMutex capture_lock;
static GHashTable *capture_counts;

static void
capture_log (GstDebugCategory * category, GstDebugLevel level,
    const gchar * file, const gchar * function, gint line, GObject * object,
    GstDebugMessage * message, gpointer user_data)
{
  const gchar *name = "-", *text;
  gchar *key = NULL;
  gint from, to;

  if (level != GST_LEVEL_LOG
      || strcmp (gst_debug_category_get_name (category),
          "GST_PERFORMANCE") != 0)
    return;
  text = gst_debug_message_get (message);
  if (text == NULL)
    return;
  /* names are set before the pipeline runs; no lock taken in a log call */
  if (object != NULL && GST_IS_OBJECT (object))
    name = GST_OBJECT_NAME (object);
  if (sscanf (text, "copying the input from device %d to device %d", &from,
          &to) == 2)
    key = g_strdup_printf ("%s copy %d->%d", name, from, to);
  else if (g_str_has_prefix (text, "uploading the input"))
    key = g_strdup_printf ("%s upload", name);
  else if (g_str_has_prefix (text, "downloading the output"))
    key = g_strdup_printf ("%s download output", name);
  else if (g_str_has_prefix (text, "downloading "))
    key = g_strdup ("memory download");
  if (key == NULL)
    return;
  g_mutex_lock (&capture_lock);
  g_hash_table_insert (capture_counts, key,
      GUINT_TO_POINTER (GPOINTER_TO_UINT (g_hash_table_lookup
              (capture_counts, key)) + 1));
  g_mutex_unlock (&capture_lock);
}

static void
capture_start (void)
{
  capture_counts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      NULL);
  gst_debug_add_log_function (capture_log, NULL, NULL);
  gst_debug_set_threshold_for_name ("GST_PERFORMANCE", GST_LEVEL_LOG);
}

static void
capture_stop (void)
{
  gst_debug_unset_threshold_for_name ("GST_PERFORMANCE");
  gst_debug_remove_log_function (capture_log);
}

static void
capture_clear (void)
{
  g_clear_pointer (&capture_counts, g_hash_table_unref);
}

/* The lines whose key contains @needle. */
static guint
captured (const gchar * needle)
{
  GHashTableIter iter;
  gpointer key, value;
  guint total = 0;

  g_hash_table_iter_init (&iter, capture_counts);
  while (g_hash_table_iter_next (&iter, &key, &value))
    if (strstr (key, needle) != NULL)
      total += GPOINTER_TO_UINT (value);
  return total;
}

static void
print_captured (const gchar * what)
{
  GHashTableIter iter;
  gpointer key, value;

  g_print ("multigpu_cuda: %s:", what);
  g_hash_table_iter_init (&iter, capture_counts);
  while (g_hash_table_iter_next (&iter, &key, &value))
    g_print (" [%s] x%u", (const gchar *) key, GPOINTER_TO_UINT (value));
  g_print ("\n");
}

/* ---- one pipeline per device ------------------------------------------ */

/* Runs @descriptions[0] and [1] at the same time in two threads, each
 * given its device by @context when asked, and checks them against
 * @expected (the device-0 run). */
static void
run_two_against (gchar * descriptions[2], gboolean context, Run * expected,
    const gchar * what)
{
  GThread *threads[2];
  Run runs[2];
  gint d;

  for (d = 0; d < 2; d++) {
    run_init (&runs[d], descriptions[d], context ? d : -1);
    threads[d] = g_thread_new ("pipeline", run_thread, &runs[d]);
  }
  for (d = 0; d < 2; d++)
    g_thread_join (threads[d]);
  for (d = 0; d < 2; d++) {
    gchar *where = g_strdup_printf ("%s, the pipeline on device %d", what, d);

    assert_ran (&runs[d]);
    assert_same_outputs (&runs[d], expected, where);
    /* from the first frame: nothing of it ever touched the other device */
    assert_outputs_on (&runs[d], 0, d);
    assert_filter_on (&runs[d], "v", d);
    assert_filter_on (&runs[d], "p", d);
    g_free (where);
    run_clear (&runs[d]);
  }
  g_print ("multigpu_cuda: %s: %u frames on each device, identical to "
      "device 0 alone\n", what, FRAMES);
}

GST_START_TEST (test_pipeline_per_device_by_number)
{
  gchar *descriptions[2] = { lidar_chain (0, 0, 0), lidar_chain (1, 1, 1) };
  Run alone;

  run_init (&alone, lidar_chain (0, 0, 0), -1);
  run_play (&alone);
  assert_ran (&alone);
  run_two_against (descriptions, FALSE, &alone,
      "two threads, cuda-device-id on every element");
  run_clear (&alone);
}

GST_END_TEST;

/* The filters left at -1 take the device of the context the application
 * gives each pipeline, from the start (the source takes a number: it has
 * no device of its own to share). */
GST_START_TEST (test_pipeline_per_device_by_context)
{
  gchar *descriptions[2];
  Run alone;

  descriptions[0] = lidar_chain (0, -1, -1);
  descriptions[1] = lidar_chain (1, -1, -1);

  run_init (&alone, lidar_chain (0, 0, 0), -1);
  run_play (&alone);
  assert_ran (&alone);
  run_two_against (descriptions, TRUE, &alone,
      "two threads, a p3d.cuda.device context on each pipeline");
  run_clear (&alone);
}

GST_END_TEST;

/* ---- one pipeline per device, one process each ------------------------ */

/* The child: runs the chain on @device and writes its outputs to @path;
 * exits non-zero with a message when anything is off. */
static int
run_child (const gchar * device_arg, const gchar * path)
{
  gint device = atoi (device_arg);
  GByteArray *bytes = g_byte_array_new ();
  GError *error = NULL;
  gint off;
  Run run;

  gst_init (NULL, NULL);
  run_init (&run, lidar_chain (device, device, device), -1);
  run_play (&run);
  if (run.result.error != NULL || run.result.samples->len != FRAMES) {
    g_printerr ("child on device %d: '%s': %s (%u frames)\n", device,
        run.description, GST_STR_NULL (run.result.error),
        run.result.samples->len);
    return 2;
  }
  off = frame_off_device (run.result.samples, 0, device);
  if (off >= 0) {
    g_printerr ("child on device %d: output %d is not in CUDA memory on "
        "its device\n", device, off);
    return 3;
  }
  if (!append_outputs (bytes, run.result.samples)
      || !g_file_set_contents (path, (const gchar *) bytes->data, bytes->len,
          &error)) {
    g_printerr ("child on device %d: cannot write its outputs: %s\n", device,
        error ? error->message : "a host map failed");
    return 4;
  }
  g_print ("child on device %d: %u frames, %u bytes of outputs\n", device,
      run.result.samples->len, bytes->len);
  g_byte_array_unref (bytes);
  run_clear (&run);
  return 0;
}

GST_START_TEST (test_pipeline_per_device_per_process)
{
  gchar *dir = g_dir_make_tmp ("multigpu-XXXXXX", NULL);
  gchar *self = g_file_read_link ("/proc/self/exe", NULL);
  GByteArray *expected = g_byte_array_new ();
  GPid pids[2];
  gchar *paths[2];
  Run alone;
  gint d;

  fail_unless (dir != NULL && self != NULL);
  run_init (&alone, lidar_chain (0, 0, 0), -1);
  run_play (&alone);
  assert_ran (&alone);
  fail_unless (append_outputs (expected, alone.result.samples));

  for (d = 0; d < 2; d++) {
    gchar *device = g_strdup_printf ("%d", d);
    gchar *argv[] = { self, (gchar *) CHILD_ARG, device, NULL, NULL };
    GError *error = NULL;

    paths[d] = g_strdup_printf ("%s/device%d.bin", dir, d);
    argv[3] = paths[d];
    /* the environment (plugin path, registry) is inherited */
    fail_unless (g_spawn_async (NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
            NULL, NULL, &pids[d], &error), "cannot run %s: %s", self,
        error ? error->message : "?");
    g_free (device);
  }
  for (d = 0; d < 2; d++) {
    gchar *contents = NULL, *what;
    gsize size = 0;
    int status = 0;

    fail_unless (waitpid (pids[d], &status, 0) == pids[d]);
    g_spawn_close_pid (pids[d]);
    fail_unless (WIFEXITED (status) && WEXITSTATUS (status) == 0,
        "the child on device %d failed (wait status %d)", d, status);
    fail_unless (g_file_get_contents (paths[d], &contents, &size, NULL));
    fail_unless_equals_uint64 (size, expected->len);
    what = g_strdup_printf ("the process on device %d", d);
    elemtest_assert_bytes (contents, expected->data, size, what);
    g_free (what);
    g_free (contents);
    g_unlink (paths[d]);
    g_free (paths[d]);
  }
  g_print ("multigpu_cuda: two processes, one device each: %u frames "
      "identical to device 0 alone\n", FRAMES);
  g_rmdir (dir);
  g_byte_array_unref (expected);
  run_clear (&alone);
  g_free (self);
  g_free (dir);
}

GST_END_TEST;

/* ---- one pipeline split over the devices ------------------------------ */

/* Runs @split with the log captured and checks it against @expected:
 * identical outputs, every filter of @followers (elements at -1) and
 * @numbered ends on device 1, every output on device 1 from the first frame
 * (the followers start there: the numbered element and the source answer
 * the device context query before they start), @copies device-to-device
 * copies, no upload of an input, no download of a memory or an output to
 * the host. */
static void
check_split (gchar * split, Run * expected, const gchar * const *followers,
    const gchar * const *numbered, guint copies, const gchar * what)
{
  guint i;
  Run run;

  run_init (&run, split, -1);
  capture_start ();
  run_play (&run);
  capture_stop ();
  print_captured (what);
  assert_ran (&run);
  assert_same_outputs (&run, expected, what);
  for (i = 0; followers[i]; i++)
    assert_filter_on (&run, followers[i], 1);
  for (i = 0; numbered[i]; i++)
    assert_filter_on (&run, numbered[i], 1);
  assert_outputs_on (&run, 0, 1);
  fail_unless_equals_int (captured (" copy 0->1"), copies);
  fail_unless_equals_int (captured (" copy "), copies);
  fail_unless_equals_int (captured (" upload"), 0);
  fail_unless_equals_int (captured ("memory download"), 0);
  for (i = 0; followers[i]; i++) {
    gchar *key = g_strdup_printf ("%s download output", followers[i]);

    fail_unless (captured (key) == 0, "%s: %s went through the host %u "
        "times", what, followers[i], captured (key));
    g_free (key);
  }
  for (i = 0; numbered[i]; i++) {
    gchar *key = g_strdup_printf ("%s download output", numbered[i]);

    fail_unless_equals_int (captured (key), 0);
    g_free (key);
  }
  g_print ("multigpu_cuda: %s: %u frames identical to device 0 alone, %u "
      "copies device 0 -> 1\n", what, FRAMES, copies);
  capture_clear ();
  run_clear (&run);
}

GST_START_TEST (test_split_source_on_0_voxelize_on_1)
{
  static const gchar *const followers[] = { "p", NULL };
  static const gchar *const numbered[] = { "v", NULL };
  Run alone;

  run_init (&alone, lidar_chain (0, 0, 0), -1);
  run_play (&alone);
  assert_ran (&alone);
  check_split (lidar_chain (0, 1, -1), &alone, followers, numbered, FRAMES,
      "source on device 0, voxelize on 1, pillarfeat at -1");
  run_clear (&alone);
}

GST_END_TEST;

GST_START_TEST (test_split_source_on_1_followed)
{
  static const gchar *const followers[] = { "v", "p", NULL };
  static const gchar *const numbered[] = { NULL };
  Run alone;

  run_init (&alone, lidar_chain (0, 0, 0), -1);
  run_play (&alone);
  assert_ran (&alone);
  check_split (lidar_chain (1, -1, -1), &alone, followers, numbered, 0,
      "source on device 1, voxelize and pillarfeat at -1");
  run_clear (&alone);
}

GST_END_TEST;

GST_START_TEST (test_split_network)
{
  static const gchar *const followers[] = { "p", "e", "d", NULL };
  static const gchar *const numbered[] = { "v", NULL };
  const ModeltestOptions options = { 2, FALSE, 41 };
  ModeltestModel *m = modeltest_model_new (&options);
  gchar *path = modeltest_model_write (m, NULL);
  Run alone;

  run_init (&alone, network_chain (path, 0, 0, 0), -1);
  run_play (&alone);
  assert_ran (&alone);
  check_split (network_chain (path, 0, 1, -1), &alone, followers, numbered,
      FRAMES, "network stage after the split: voxelize on device 1, "
      "pillarfeat ! pillarencode ! bevdetect at -1");
  run_clear (&alone);
  modeltest_remove (path);
  modeltest_model_free (m);
}

GST_END_TEST;

/* ---- a device that does not exist ------------------------------------- */

static void
expect_missing (GstBus * bus, GstMessage * message, gint device, gint count,
    const gchar * what)
{
  gchar *name = g_strdup_printf ("CUDA device %d", device);
  gchar *found = g_strdup_printf ("%d found", count);
  GError *error = NULL;
  gchar *text;

  fail_unless (message != NULL, "%s: no error", what);
  text = elemtest_message_text (message);
  gst_message_parse_error (message, &error, NULL);
  fail_unless (error->domain == GST_RESOURCE_ERROR
      && error->code == GST_RESOURCE_ERROR_NOT_FOUND, "%s: %s", what, text);
  fail_unless (strstr (text, name) != NULL, "%s: %s", what, text);
  fail_unless (strstr (text, found) != NULL, "%s: %s", what, text);
  g_print ("multigpu_cuda: %s: %s\n", what, text);
  g_clear_error (&error);
  gst_message_unref (message);
  g_free (text);
  g_free (found);
  g_free (name);
}

/* backend=auto (the default) too: a number that names no device on a
 * machine that has devices fails the start, rather than running the
 * reference path. */
GST_START_TEST (test_missing_device)
{
  static const gchar *const filters[] = { "voxelize", "pillarfeat", "nms" };
  gint count = p3dc_cuda_device_count ();
  gint missing[2] = { count, MAX (count, 7) };
  guint k, i;

  for (k = 0; k < G_N_ELEMENTS (missing); k++) {
    gchar *launch;
    GstElement *pipeline;
    GstBus *bus;

    for (i = 0; i < G_N_ELEMENTS (filters); i++) {
      GstElement *element = gst_element_factory_make (filters[i], NULL);
      gchar *what = g_strdup_printf ("%s cuda-device-id=%d", filters[i],
          missing[k]);

      bus = gst_bus_new ();
      g_object_set (element, "cuda-device-id", missing[k], NULL);
      gst_element_set_bus (element, bus);
      fail_unless_equals_int (gst_element_set_state (element,
              GST_STATE_PAUSED), GST_STATE_CHANGE_FAILURE);
      expect_missing (bus, gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR),
          missing[k], count, what);
      gst_element_set_state (element, GST_STATE_NULL);
      gst_element_set_bus (element, NULL);
      gst_object_unref (bus);
      gst_object_unref (element);
      g_free (what);
    }

    /* the source puts its buffers on the device it is given */
    launch = g_strdup_printf ("pointcloudtestsrc num-buffers=1 "
        "cuda-device-id=%d ! " CUDA_CAPS ("application/x-point-cloud")
        " ! voxelize ! fakesink", missing[k]);
    pipeline = gst_parse_launch (launch, NULL);
    fail_unless (pipeline != NULL);
    bus = gst_element_get_bus (pipeline);
    gst_element_set_state (pipeline, GST_STATE_PLAYING);
    expect_missing (bus, gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND,
            GST_MESSAGE_ERROR), missing[k], count, launch);
    gst_element_set_state (pipeline, GST_STATE_NULL);
    gst_object_unref (bus);
    gst_object_unref (pipeline);
    g_free (launch);
  }
}

GST_END_TEST;

static Suite *
multigpu_cuda_suite (void)
{
  Suite *s = suite_create ("multigpu_cuda");
  TCase *one = tcase_create ("one device");

  p3d_test_require_gpu ();
  suite_add_tcase (s, one);
  tcase_add_test (one, test_missing_device);
  if (p3d_test_require_gpus (2)) {
    TCase *two = tcase_create ("two devices");

    suite_add_tcase (s, two);
    tcase_add_test (two, test_pipeline_per_device_by_number);
    tcase_add_test (two, test_pipeline_per_device_by_context);
    tcase_add_test (two, test_pipeline_per_device_per_process);
    tcase_add_test (two, test_split_source_on_0_voxelize_on_1);
    tcase_add_test (two, test_split_source_on_1_followed);
    tcase_add_test (two, test_split_network);
  }
  return s;
}

/* P3D_CHECK_MAIN, and the child that test_pipeline_per_device_per_process
 * runs: "multigpu_cuda --run-on-device DEVICE OUTPUT_FILE". */
int
main (int argc, char **argv)
{
  Suite *s;

  if (argc == 4 && strcmp (argv[1], CHILD_ARG) == 0)
    return run_child (argv[2], argv[3]);
  gst_check_init (&argc, &argv);
  p3d_test_watch_library_log ();
  s = multigpu_cuda_suite ();
  return gst_check_run_suite (s, "multigpu_cuda", __FILE__);
}
