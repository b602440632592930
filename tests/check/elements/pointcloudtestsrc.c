/* pointcloudtestsrc in system memory: negotiation of every format, bytes
 * equal to the scene library's, num-buffers, timestamps and offsets,
 * determinism across pipelines, motion=false, seeking, emit=boxes and
 * candidates, and bad properties and caps. */
#include <math.h>
#include <string.h>

#include <gst/app/gstappsink.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "pointcloudtestsrc-scene.h"
#include "p3dperception.h"
#include "p3dtest-elem.h"
#include "p3dtest.h"
#include "runtime.h"

static GstElement *
launch (const gchar * description)
{
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch (description, &error);

  fail_unless (pipeline != NULL, "'%s': %s", description,
      error ? error->message : "?");
  g_clear_error (&error);
  return pipeline;
}

/* Runs @description to EOS and keeps every sample and the first warning;
 * fails on an error. */
static void
run_no_error (const gchar * description, ElemtestRun * run)
{
  elemtest_run (description, run);
  fail_unless (run->error == NULL, "'%s': %s", description, run->error);
}

/* The bytes of a one-tensor buffer in system memory (a new copy). */
static GBytes *
buffer_bytes (GstBuffer * buffer)
{
  GstMapInfo info;
  GBytes *bytes;

  fail_unless_equals_int (gst_buffer_n_memory (buffer), 1);
  fail_unless (!p3d_is_cuda_memory (gst_buffer_peek_memory (buffer, 0)));
  fail_unless (gst_buffer_map (buffer, &info, GST_MAP_READ));
  bytes = g_bytes_new (info.data, info.size);
  gst_buffer_unmap (buffer, &info);
  return bytes;
}

static gboolean
buffers_equal (GstBuffer * a, GstBuffer * b)
{
  GBytes *x = buffer_bytes (a), *y = buffer_bytes (b);
  gboolean equal = g_bytes_equal (x, y);

  g_bytes_unref (x);
  g_bytes_unref (y);
  return equal;
}

/* The scene library's frame for the element's defaults and @seed. */
static gfloat *
library_frame (guint64 seed, guint64 frame, P3dLidarChannels channels,
    gsize * n_points)
{
  P3dLidarSceneParams params;
  P3dLidarScene *scene;
  gfloat *points;

  p3d_lidar_scene_params_init (&params);
  params.seed = seed;
  scene = p3d_lidar_scene_new (&params);
  points = g_new (gfloat, (gsize) p3d_lidar_scene_get_n_rays (scene) *
      p3d_lidar_channels_get_count (channels));
  p3d_lidar_scene_set_frame (scene, frame);
  *n_points = p3d_lidar_scene_render (scene, channels, points, NULL);
  p3d_lidar_scene_free (scene);
  return points;
}

/* Asserts @buffer holds exactly the library's frame, naming the first
 * float that differs. */
static void
assert_library_frame (GstBuffer * buffer, guint64 seed, guint64 frame,
    P3dLidarChannels channels)
{
  guint stride = p3d_lidar_channels_get_count (channels);
  gsize n_points, i;
  gfloat *expected = library_frame (seed, frame, channels, &n_points);
  GstMapInfo info;
  const gfloat *actual;

  fail_unless (gst_buffer_map (buffer, &info, GST_MAP_READ));
  fail_unless_equals_uint64 (info.size, n_points * stride * sizeof (gfloat));
  actual = (const gfloat *) info.data;
  for (i = 0; i < n_points * stride; i++)
    if (memcmp (&actual[i], &expected[i], sizeof (gfloat)) != 0)
      fail ("frame %" G_GUINT64_FORMAT ": float %" G_GSIZE_FORMAT " is %.9g, "
          "the library says %.9g", frame, i, actual[i], expected[i]);
  gst_buffer_unmap (buffer, &info);
  g_free (expected);
}

GST_START_TEST (test_formats)
{
  static const struct
  {
    const gchar *format;
    P3dLidarChannels channels;
  } formats[] = {
    {"xyz", 0},
    {"xyzi", P3D_LIDAR_CHANNEL_INTENSITY},
    {"xyzit", P3D_LIDAR_CHANNEL_INTENSITY | P3D_LIDAR_CHANNEL_TIME},
    {"xyzir", P3D_LIDAR_CHANNEL_INTENSITY | P3D_LIDAR_CHANNEL_RING},
  };
  guint f, how;

  for (f = 0; f < G_N_ELEMENTS (formats); f++) {
    /* chosen by downstream (format=auto), then by the property */
    for (how = 0; how < 2; how++) {
      gchar *description = how == 0 ?
          g_strdup_printf ("pointcloudtestsrc seed=3 num-buffers=2 ! "
          "application/x-point-cloud, format=%s ! appsink name=sink "
          "sync=false", formats[f].format) :
          g_strdup_printf ("pointcloudtestsrc seed=3 num-buffers=2 "
          "format=%s ! application/x-point-cloud ! appsink name=sink "
          "sync=false", formats[f].format);
      P3dPointCloudInfo info;
      GstCaps *caps;
      ElemtestRun run;
      guint i;

      run_no_error (description, &run);
      fail_unless_equals_int (run.samples->len, 2);
      caps = elemtest_sample_caps (run.samples, 0);
      fail_unless (!p3d_caps_is_cuda (caps));
      fail_unless (p3d_point_cloud_info_from_caps (&info, caps));
      fail_unless_equals_string (info.finfo->name, formats[f].format);
      fail_unless_equals_int (info.fps_n, 10);
      fail_unless_equals_int (info.fps_d, 1);
      for (i = 0; i < 2; i++)
        assert_library_frame (elemtest_sample_buffer (run.samples, i), 3, i,
            formats[f].channels);
      elemtest_run_clear (&run);
      g_free (description);
    }
  }
}

GST_END_TEST;

/* format=auto settles on xyzi when downstream takes anything. */
GST_START_TEST (test_auto_format)
{
  P3dPointCloudInfo info;
  ElemtestRun run;

  run_no_error ("pointcloudtestsrc num-buffers=1 ! application/x-point-cloud "
      "! appsink name=sink sync=false", &run);
  fail_unless (p3d_point_cloud_info_from_caps (&info,
          elemtest_sample_caps (run.samples, 0)));
  fail_unless_equals_string (info.finfo->name, "xyzi");
  /* The default frame: ~120k points of 16 bytes. */
  fail_unless (gst_buffer_get_size (elemtest_sample_buffer (run.samples,
              0)) > 115000 * 16
      && gst_buffer_get_size (elemtest_sample_buffer (run.samples,
              0)) < 121600 * 16);
  elemtest_run_clear (&run);
}

GST_END_TEST;

/* With a device CUDA memory comes first, then system memory; without one
 * only system memory is offered (a request for CUDA memory then fails to
 * link), though the pad template lists both on every machine. */
GST_START_TEST (test_memory_order)
{
  GstElement *src = gst_element_factory_make ("pointcloudtestsrc", NULL);
  GstPad *pad = gst_element_get_static_pad (src, "src");
  GstCaps *caps = gst_pad_query_caps (pad, NULL);
  GstCaps *templ = gst_pad_get_pad_template_caps (pad);
  gboolean have_device = p3dc_cuda_device_count () > 0, templ_cuda = FALSE;
  guint i;

  for (i = 0; i < gst_caps_get_size (templ); i++)
    templ_cuda |= p3d_caps_features_is_cuda (gst_caps_get_features (templ, i));
  fail_unless (templ_cuda, "the pad template must offer CUDA memory");
  gst_caps_unref (templ);
  fail_unless_equals_int (gst_caps_get_size (caps), have_device ? 2 : 1);
  fail_unless_equals_int (p3d_caps_features_is_cuda (gst_caps_get_features
          (caps, 0)), have_device);
  if (have_device)
    fail_if (p3d_caps_features_is_cuda (gst_caps_get_features (caps, 1)));
  gst_caps_unref (caps);
  gst_object_unref (pad);
  gst_object_unref (src);
}

GST_END_TEST;

GST_START_TEST (test_num_buffers)
{
  ElemtestRun run;

  run_no_error ("pointcloudtestsrc num-buffers=5 ! application/x-point-cloud "
      "! appsink name=sink sync=false", &run);
  fail_unless_equals_int (run.samples->len, 5);
  elemtest_run_clear (&run);
}

GST_END_TEST;

/* Timestamps and durations from the frame rate, offsets the frame index,
 * with a rate that does not divide a second. */
GST_START_TEST (test_timestamps)
{
  GstHarness *h = gst_harness_new_parse ("pointcloudtestsrc framerate=3/1 "
      "num-buffers=7 beams=8 points-per-revolution=100 ! "
      "capsfilter caps=application/x-point-cloud");
  GstCaps *caps;
  GstEvent *event;
  guint64 i;

  gst_harness_play (h);
  for (i = 0; i < 7; i++) {
    GstBuffer *buffer = gst_harness_pull (h);
    GstClockTime pts = gst_util_uint64_scale (i, GST_SECOND, 3);
    GstClockTime next = gst_util_uint64_scale (i + 1, GST_SECOND, 3);

    fail_unless (buffer != NULL);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (buffer), pts);
    fail_unless_equals_uint64 (GST_BUFFER_DTS (buffer), pts);
    fail_unless_equals_uint64 (GST_BUFFER_DURATION (buffer), next - pts);
    fail_unless_equals_uint64 (GST_BUFFER_OFFSET (buffer), i);
    fail_unless_equals_uint64 (GST_BUFFER_OFFSET_END (buffer), i + 1);
    fail_unless_equals_int (GST_BUFFER_FLAG_IS_SET (buffer,
            GST_BUFFER_FLAG_DISCONT), i == 0);
    gst_buffer_unref (buffer);
  }
  caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless (gst_structure_has_field_typed (gst_caps_get_structure (caps,
              0), "framerate", GST_TYPE_FRACTION));
  {
    gint n, d;

    gst_structure_get_fraction (gst_caps_get_structure (caps, 0),
        "framerate", &n, &d);
    fail_unless (n == 3 && d == 1);
  }
  gst_caps_unref (caps);
  /* then EOS */
  while ((event = gst_harness_pull_event (h)) != NULL) {
    gboolean eos = GST_EVENT_TYPE (event) == GST_EVENT_EOS;

    gst_event_unref (event);
    if (eos)
      break;
  }
  fail_unless (event != NULL, "no EOS after num-buffers");
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Two pipelines with one seed give the same bytes; another seed does
 * not; with motion, consecutive frames differ. */
GST_START_TEST (test_determinism)
{
  ElemtestRun a, b, c;
  guint i;

  run_no_error ("pointcloudtestsrc seed=77 num-buffers=3 format=xyzit ! "
      "application/x-point-cloud ! appsink name=sink sync=false", &a);
  run_no_error ("pointcloudtestsrc seed=77 num-buffers=3 format=xyzit ! "
      "application/x-point-cloud ! appsink name=sink sync=false", &b);
  run_no_error ("pointcloudtestsrc seed=78 num-buffers=3 format=xyzit ! "
      "application/x-point-cloud ! appsink name=sink sync=false", &c);
  for (i = 0; i < 3; i++) {
    fail_unless (buffers_equal (elemtest_sample_buffer (a.samples, i),
            elemtest_sample_buffer (b.samples, i)),
        "frame %u differs between two runs of seed 77", i);
    fail_unless (!buffers_equal (elemtest_sample_buffer (a.samples, i),
            elemtest_sample_buffer (c.samples, i)),
        "seeds 77 and 78 give the same frame %u", i);
  }
  fail_unless (!buffers_equal (elemtest_sample_buffer (a.samples, 0),
          elemtest_sample_buffer (a.samples, 1)));
  elemtest_run_clear (&a);
  elemtest_run_clear (&b);
  elemtest_run_clear (&c);
}

GST_END_TEST;

/* The SHA-256 of frames 0 and 2 for a few settings, pinned: the test above
 * checks determinism within one process, this one across machines,
 * compilers and C libraries (the scene computes its own sines and square
 * roots in float32 without fast-math, so every machine must give these
 * bytes). The hashes were computed once by this test on x86-64 (gcc 12,
 * glibc, -ffp-contract=off), printed by the failure message, and written
 * here; a deliberate change of the scene changes them, and the new values
 * are taken from the message after checking the frames still look right. */
GST_START_TEST (test_golden_hashes)
{
  static const struct
  {
    const gchar *properties;
    const gchar *format;
    const gchar *sha256[2];
  } cases[] = {
    {"seed=1", "xyzi", {
                "21f7b71c1a67507bf303924eef6f2e4847e28d3cc1892f863f22e6c81bb53bce",
            "736341d705b31d98fcfe959f58468f3a7e5ad2f147c4befcf7888bfc3a4b0dfd"}},
    {"seed=77", "xyzit", {
                "f5159e055450c25a4caaeed7a5ff3ab72001390c8f9545300bf71450c6bc9377",
            "b6459165d54574a119863b2b2e706a67c44475f0b2922b519d019b7b5c17c903"}},
    {"seed=5 beams=32 fov-up=10 fov-down=-30 points-per-revolution=900 "
          "pedestrians=6 cyclists=3", "xyzi", {
                "a68a44f48d613d554ed45ae2daf71ebc0005bdd54c9b531c468ca8d488899bc0",
            "ecba39f3b5772eeeb0c759aa5127757c35d2cffb8e7ce81de07ddd668b14c9f1"}},
    {"seed=9 range-noise=0 walls=false", "xyzit", {
                "3f458fc9a6fff6f7dd50de07812ad0b1b8c1bd72c1506fdc49d09b8ceede7fd1",
            "a543c94f06904d15f463effbd639ccae705f2795755cffdbc0835bcf4166b42e"}},
  };
  guint c, i;

  for (c = 0; c < G_N_ELEMENTS (cases); c++) {
    gchar *description = g_strdup_printf ("pointcloudtestsrc %s "
        "num-buffers=3 format=%s ! application/x-point-cloud ! appsink "
        "name=sink sync=false", cases[c].properties, cases[c].format);
    ElemtestRun run;

    run_no_error (description, &run);
    fail_unless_equals_int (run.samples->len, 3);
    for (i = 0; i < 2; i++) {
      GBytes *bytes =
          buffer_bytes (elemtest_sample_buffer (run.samples, i * 2));
      gsize size;
      gconstpointer data = g_bytes_get_data (bytes, &size);
      gchar *sha256 = g_compute_checksum_for_data (G_CHECKSUM_SHA256, data,
          size);

      fail_unless (size > 0);
      fail_unless (strcmp (sha256, cases[c].sha256[i]) == 0,
          "'%s' frame %u (%" G_GSIZE_FORMAT " bytes): SHA-256 %s, pinned %s",
          description, i * 2, size, sha256, cases[c].sha256[i]);
      g_free (sha256);
      g_bytes_unref (bytes);
    }
    elemtest_run_clear (&run);
    g_free (description);
  }
}

GST_END_TEST;

/* motion=false: every buffer shares frame 0's memory; timestamps still
 * advance. */
GST_START_TEST (test_motion_false)
{
  ElemtestRun run;
  guint i;

  run_no_error ("pointcloudtestsrc motion=false seed=5 num-buffers=4 ! "
      "application/x-point-cloud ! appsink name=sink sync=false", &run);
  fail_unless_equals_int (run.samples->len, 4);
  assert_library_frame (elemtest_sample_buffer (run.samples, 0), 5, 0,
      P3D_LIDAR_CHANNEL_INTENSITY);
  for (i = 1; i < 4; i++) {
    GstBuffer *buffer = elemtest_sample_buffer (run.samples, i);

    fail_unless (gst_buffer_peek_memory (buffer, 0) ==
        gst_buffer_peek_memory (elemtest_sample_buffer (run.samples, 0), 0),
        "buffer %u does not share frame 0's memory", i);
    fail_unless (buffers_equal (buffer, elemtest_sample_buffer (run.samples,
                0)));
    fail_unless_equals_uint64 (GST_BUFFER_PTS (buffer), i * GST_SECOND / 10);
    fail_unless_equals_uint64 (GST_BUFFER_OFFSET (buffer), i);
  }
  elemtest_run_clear (&run);
}

GST_END_TEST;

/* A seek lands on the frame of that time: the same bytes as frame 10 of
 * a run from the start. */
GST_START_TEST (test_seek)
{
  GstElement *pipeline = launch ("pointcloudtestsrc seed=2 ! "
      "application/x-point-cloud ! appsink name=sink sync=false");
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  GstSample *sample;
  GstBuffer *buffer;

  fail_unless (gst_element_set_state (pipeline, GST_STATE_PAUSED) !=
      GST_STATE_CHANGE_FAILURE);
  fail_unless (gst_element_get_state (pipeline, NULL, NULL,
          GST_CLOCK_TIME_NONE) == GST_STATE_CHANGE_SUCCESS);
  fail_unless (gst_element_seek_simple (pipeline, GST_FORMAT_TIME,
          GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE, GST_SECOND));
  fail_unless (gst_element_get_state (pipeline, NULL, NULL,
          GST_CLOCK_TIME_NONE) == GST_STATE_CHANGE_SUCCESS);
  sample = gst_app_sink_try_pull_preroll (GST_APP_SINK (sink), 10 * GST_SECOND);
  fail_unless (sample != NULL);
  buffer = gst_sample_get_buffer (sample);
  fail_unless_equals_uint64 (GST_BUFFER_OFFSET (buffer), 10);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (buffer), GST_SECOND);
  assert_library_frame (buffer, 2, 10, P3D_LIDAR_CHANNEL_INTENSITY);
  gst_sample_unref (sample);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* The boxes of a buffer: records and count, checked against the layout. */
static guint
read_boxes (GstBuffer * buffer, guint max_boxes, P3dcBox3d * boxes)
{
  P3dBoxes3dInfo info;
  P3dTensorLayout layout;
  P3dTensorMap map;
  guint32 count;
  guint i;

  p3d_boxes3d_info_init (&info);
  info.max_boxes = max_boxes;
  p3d_boxes3d_info_get_layout (&info, &layout);
  fail_unless_equals_int (gst_buffer_n_memory (buffer), 2);
  fail_unless (p3d_tensor_map (&map, buffer, &layout, GST_MAP_READ, NULL));
  memcpy (&count, map.data[P3D_BOXES_TENSOR_COUNT], sizeof (count));
  fail_unless (count <= max_boxes);
  memcpy (boxes, map.data[P3D_BOXES_TENSOR_RECORDS],
      count * sizeof (P3dcBox3d));
  /* zeros after the valid records */
  for (i = count * P3D_BOX3D_RECORD_SIZE;
      i < max_boxes * P3D_BOX3D_RECORD_SIZE; i++)
    fail_unless_equals_int (((guint8 *)
            map.data[P3D_BOXES_TENSOR_RECORDS])[i], 0);
  p3d_tensor_unmap (&map);
  return count;
}

static P3dLidarScene *
small_scene (guint64 seed, guint64 frame)
{
  P3dLidarSceneParams params;
  P3dLidarScene *scene;

  p3d_lidar_scene_params_init (&params);
  params.seed = seed;
  params.cars = 5;
  params.pedestrians = 3;
  params.cyclists = 2;
  scene = p3d_lidar_scene_new (&params);
  p3d_lidar_scene_set_frame (scene, frame);
  return scene;
}

GST_START_TEST (test_emit_boxes)
{
  P3dcBox3d boxes[1024], expected[64];
  P3dBoxes3dInfo info;
  guint i, frame, labels[3] = { 0, 0, 0 };
  ElemtestRun run;

  run_no_error ("pointcloudtestsrc emit=boxes seed=4 cars=5 pedestrians=3 "
      "cyclists=2 num-buffers=2 ! application/x-boxes3d ! "
      "appsink name=sink sync=false", &run);
  fail_unless_equals_int (run.samples->len, 2);
  fail_unless (p3d_boxes3d_info_from_caps (&info,
          elemtest_sample_caps (run.samples, 0)));
  fail_unless_equals_int (info.max_boxes, 1024);
  fail_unless_equals_int (info.fps_n, 10);
  fail_unless (!p3d_caps_is_cuda (elemtest_sample_caps (run.samples, 0)));
  for (frame = 0; frame < 2; frame++) {
    P3dLidarScene *scene = small_scene (4, frame);
    guint n =
        read_boxes (elemtest_sample_buffer (run.samples, frame), 1024, boxes);

    fail_unless_equals_int (n, 10);
    fail_unless_equals_int (p3d_lidar_scene_get_boxes (scene, expected, 64),
        10);
    fail_unless (memcmp (boxes, expected, n * sizeof (P3dcBox3d)) == 0,
        "frame %u: boxes differ from the scene library's", frame);
    for (i = 0; i < n; i++) {
      fail_unless_equals_float (boxes[i].score, 1.0f);
      labels[boxes[i].label]++;
    }
    p3d_lidar_scene_free (scene);
  }
  fail_unless (labels[0] == 10 && labels[1] == 6 && labels[2] == 4);
  elemtest_run_clear (&run);
}

GST_END_TEST;

GST_START_TEST (test_emit_candidates)
{
  P3dcBox3d boxes[1024], *expected;
  P3dLidarScene *scene = small_scene (4, 1);
  guint n_expected = 4 * 10 + p3d_lidar_candidates_false_positives (10), n;
  ElemtestRun run;

  run_no_error ("pointcloudtestsrc emit=candidates candidates-per-object=4 "
      "seed=4 cars=5 pedestrians=3 cyclists=2 num-buffers=2 ! "
      "application/x-boxes3d ! appsink name=sink sync=false", &run);
  fail_unless (run.warning == NULL);
  expected = g_new (P3dcBox3d, n_expected);
  fail_unless_equals_int (p3d_lidar_scene_get_candidates (scene, 4, expected,
          n_expected), n_expected);
  n = read_boxes (elemtest_sample_buffer (run.samples, 1), 1024, boxes);
  fail_unless_equals_int (n, n_expected);
  fail_unless (memcmp (boxes, expected, n * sizeof (P3dcBox3d)) == 0);
  elemtest_run_clear (&run);

  /* More candidates than max-boxes: the first max-boxes, and a warning. */
  run_no_error ("pointcloudtestsrc emit=candidates candidates-per-object=4 "
      "seed=4 cars=5 pedestrians=3 cyclists=2 num-buffers=2 max-boxes=16 ! "
      "application/x-boxes3d ! appsink name=sink sync=false", &run);
  fail_unless (run.warning != NULL, "no warning for dropped boxes");
  n = read_boxes (elemtest_sample_buffer (run.samples, 1), 16, boxes);
  fail_unless_equals_int (n, 16);
  fail_unless (memcmp (boxes, expected, n * sizeof (P3dcBox3d)) == 0);
  elemtest_run_clear (&run);
  g_free (expected);
  p3d_lidar_scene_free (scene);
}

GST_END_TEST;

/* Two instances with one seed, one emitting points and one boxes: every
 * point off the ground lies in one of the boxes of its frame. */
GST_START_TEST (test_points_match_boxes)
{
  ElemtestRun points, boxes;
  guint frame;

  run_no_error ("pointcloudtestsrc seed=8 walls=false range-noise=0 "
      "num-buffers=3 format=xyz ! application/x-point-cloud ! "
      "appsink name=sink sync=false", &points);
  run_no_error ("pointcloudtestsrc seed=8 walls=false range-noise=0 "
      "num-buffers=3 emit=boxes ! application/x-boxes3d ! "
      "appsink name=sink sync=false", &boxes);
  for (frame = 0; frame < 3; frame++) {
    P3dcBox3d records[1024];
    guint n_boxes =
        read_boxes (elemtest_sample_buffer (boxes.samples, frame), 1024,
        records);
    GstMapInfo info;
    const gfloat *p;
    gsize i, n_points, on_objects = 0;

    fail_unless (gst_buffer_map (elemtest_sample_buffer (points.samples, frame),
            &info, GST_MAP_READ));
    p = (const gfloat *) info.data;
    n_points = info.size / 12;
    for (i = 0; i < n_points; i++, p += 3) {
      guint b;
      gboolean inside = FALSE;

      if (fabsf (p[2] + 1.73f) < 1e-4f)
        continue;
      for (b = 0; b < n_boxes && !inside; b++) {
        gdouble c = cos (records[b].yaw), s = sin (records[b].yaw);
        gdouble x = p[0] - records[b].x, y = p[1] - records[b].y;

        inside = fabs (c * x + s * y) <= records[b].dx / 2 + 1e-3
            && fabs (-s * x + c * y) <= records[b].dy / 2 + 1e-3
            && fabs (p[2] - records[b].z) <= records[b].dz / 2 + 1e-3;
      }
      fail_unless (inside, "frame %u: point %" G_GSIZE_FORMAT " (%g, %g, %g) "
          "is neither on the ground nor in a box", frame, i, p[0], p[1], p[2]);
      on_objects++;
    }
    fail_unless (on_objects > 100);
    gst_buffer_unmap (elemtest_sample_buffer (points.samples, frame), &info);
  }
  elemtest_run_clear (&points);
  elemtest_run_clear (&boxes);
}

GST_END_TEST;

/* Starts @description, which must fail with an error naming @name. */
static void
expect_start_error (const gchar * description, const gchar * name)
{
  GstElement *pipeline = launch (description);
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *message;
  GError *error = NULL;
  gchar *debug = NULL;

  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  message = gst_bus_timed_pop_filtered (bus, P3D_TEST_MESSAGE_WAIT,
      GST_MESSAGE_ERROR);
  fail_unless (message != NULL, "'%s' gave no error", description);
  gst_message_parse_error (message, &error, &debug);
  fail_unless (strstr (error->message, name) != NULL,
      "'%s': the error \"%s\" does not name %s", description, error->message,
      name);
  g_error_free (error);
  g_free (debug);
  gst_message_unref (message);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
}

GST_START_TEST (test_bad_properties)
{
  expect_start_error ("pointcloudtestsrc fov-up=-30 fov-down=-20 ! fakesink",
      "fov-up");
  expect_start_error ("pointcloudtestsrc fov-up=5 fov-down=5 ! fakesink",
      "fov-up");
  expect_start_error ("pointcloudtestsrc beams=0 ! fakesink", "beams");
  expect_start_error ("pointcloudtestsrc points-per-revolution=0 ! fakesink",
      "points-per-revolution");
  expect_start_error ("pointcloudtestsrc framerate=0/1 ! fakesink",
      "framerate");
  expect_start_error ("pointcloudtestsrc max-range=0 ! fakesink", "max-range");
}

GST_END_TEST;

/* Caps the source cannot produce, set on a capsfilter after linking (a
 * link with them fails already): not-negotiated. */
static void
expect_not_negotiated (const gchar * properties, const gchar * caps)
{
  gchar *description = g_strdup_printf ("pointcloudtestsrc %s ! "
      "capsfilter name=filter ! fakesink", properties);
  GstElement *pipeline = launch (description);
  GstElement *filter = gst_bin_get_by_name (GST_BIN (pipeline), "filter");
  GstCaps *filter_caps = gst_caps_from_string (caps);
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *message;
  GError *error = NULL;
  gchar *debug = NULL;

  g_object_set (filter, "caps", filter_caps, NULL);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  message = gst_bus_timed_pop_filtered (bus, P3D_TEST_MESSAGE_WAIT,
      GST_MESSAGE_ERROR);
  fail_unless (message != NULL, "'%s' to %s gave no error", properties, caps);
  gst_message_parse_error (message, &error, &debug);
  fail_unless (debug && strstr (debug, "not-negotiated"), "'%s' to %s: %s "
      "(%s)", properties, caps, error->message, GST_STR_NULL (debug));
  g_error_free (error);
  g_free (debug);
  gst_message_unref (message);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_caps_unref (filter_caps);
  gst_object_unref (filter);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  g_free (description);
}

GST_START_TEST (test_not_negotiated)
{
  expect_not_negotiated ("format=xyz",
      "application/x-point-cloud, format=xyzi");
  expect_not_negotiated ("emit=boxes", "application/x-point-cloud");
  expect_not_negotiated ("", "application/x-point-cloud, framerate=5/1");
  expect_not_negotiated ("emit=candidates",
      "application/x-boxes3d, max-boxes=12");
}

GST_END_TEST;

static Suite *
pointcloudtestsrc_suite (void)
{
  Suite *s = suite_create ("pointcloudtestsrc");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_formats);
  tcase_add_test (tc, test_auto_format);
  tcase_add_test (tc, test_memory_order);
  tcase_add_test (tc, test_num_buffers);
  tcase_add_test (tc, test_timestamps);
  tcase_add_test (tc, test_determinism);
  tcase_add_test (tc, test_golden_hashes);
  tcase_add_test (tc, test_motion_false);
  tcase_add_test (tc, test_seek);
  tcase_add_test (tc, test_emit_boxes);
  tcase_add_test (tc, test_emit_candidates);
  tcase_add_test (tc, test_points_match_boxes);
  tcase_add_test (tc, test_bad_properties);
  tcase_add_test (tc, test_not_negotiated);
  return s;
}

P3D_CHECK_MAIN (pointcloudtestsrc);
