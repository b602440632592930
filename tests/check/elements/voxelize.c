/* voxelize as an element, on its reference path: negotiation of every
 * point format, output tensors equal to the compute library called
 * directly, statistics and the saturation warning, and bad input. */
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "p3dtest-elem.h"
#include "p3dperception.h"
#include "p3dtest.h"
#include "voxelize.h"

static const gdouble kitti_voxel_size[3] = { 0.16, 0.16, 4.0 };
static const gdouble kitti_range[6] = { 0.0, -39.68, -3.0, 69.12, 39.68, 1.0 };

static GstBuffer *
points_buffer (const gfloat * points, gsize n_points, guint channels)
{
  gsize size = n_points * channels * sizeof (gfloat);

  /* an empty sweep is a buffer without memory, as appsrc would push it */
  return size ? gst_buffer_new_memdup (points, size) : gst_buffer_new ();
}

/* Random points: most inside the KITTI range, dense enough that pillars
 * hold several points, some outside. */
static gfloat *
random_points (P3dTestRng * rng, gsize n_points, guint channels)
{
  gfloat *points = g_new (gfloat, n_points * channels);
  gsize i;
  guint c;

  for (i = 0; i < n_points; i++) {
    gfloat *p = points + i * channels;

    p[0] = p3d_test_rng_uniform (rng, -2.0f, 12.0f);
    p[1] = p3d_test_rng_uniform (rng, -3.0f, 3.0f);
    p[2] = p3d_test_rng_uniform (rng, -3.5f, 1.5f);
    for (c = 3; c < channels; c++)
      p[c] = p3d_test_rng_uniform (rng, 0.0f, 1.0f);
  }
  return points;
}

static GstHarness *
voxelize_harness (const gchar * format, const gchar * extra)
{
  gchar *launch = g_strdup_printf ("voxelize backend=cpu %s", extra);
  gchar *caps = g_strdup_printf ("application/x-point-cloud, format=%s",
      format);
  GstHarness *h = gst_harness_new_parse (launch);

  gst_harness_set_src_caps_str (h, caps);
  gst_harness_set_sink_caps_str (h, "application/x-voxels");
  g_free (launch);
  g_free (caps);
  return h;
}

/* Compares the element's output with p3dc_voxelize_cpu on the same points. */
static void
assert_output_matches_library (GstBuffer * out, const gfloat * points,
    gsize n_points, guint channels, guint max_points, guint max_voxels)
{
  P3dcVoxelizeParams params;
  P3dcVoxelizeStats stats;
  P3dcVoxelizeOutput expected;
  gsize sizes[4];
  gpointer tensors[4];
  guint i;

  fail_unless_equals_int (p3dc_voxelize_params_init (&params, kitti_voxel_size,
          kitti_range, channels, max_points, max_voxels), P3DC_OK);
  sizes[0] = (gsize) max_voxels *max_points * channels * 4;
  sizes[1] = (gsize) max_voxels *4;
  sizes[2] = (gsize) max_voxels *16;
  sizes[3] = 4;
  for (i = 0; i < 4; i++)
    tensors[i] = g_malloc0 (sizes[i]);
  expected.voxels = tensors[0];
  expected.num_points = tensors[1];
  expected.coords = tensors[2];
  expected.count = tensors[3];
  expected.stats = &stats;
  fail_unless_equals_int (p3dc_voxelize_cpu (&params, points, n_points,
          &expected), P3DC_OK);

  fail_unless_equals_int (gst_buffer_n_memory (out), 4);
  for (i = 0; i < 4; i++) {
    GstMapInfo info;

    fail_unless (gst_memory_map (gst_buffer_peek_memory (out, i), &info,
            GST_MAP_READ));
    fail_unless_equals_uint64 (info.size, sizes[i]);
    fail_unless (memcmp (info.data, tensors[i], sizes[i]) == 0,
        "tensor %u differs from the compute library's", i);
    gst_memory_unmap (gst_buffer_peek_memory (out, i), &info);
    g_free (tensors[i]);
  }
}

GST_START_TEST (test_output_matches_library)
{
  const gchar *formats[] = { "xyz", "xyzi", "xyzit", "xyzir" };
  const guint channels[] = { 3, 4, 5, 5 };
  guint f;

  for (f = 0; f < G_N_ELEMENTS (formats); f++) {
    GstHarness *h = voxelize_harness (formats[f], "max-points=4");
    P3dTestRng rng;
    gfloat *points;
    GstBuffer *out;
    GstCaps *caps;
    P3dVoxelsInfo info;

    p3d_test_rng_init (&rng, 100 + f);
    points = random_points (&rng, 3000, channels[f]);
    fail_unless_equals_int (gst_harness_push (h, points_buffer (points, 3000,
                channels[f])), GST_FLOW_OK);
    out = gst_harness_pull (h);
    fail_unless (out != NULL);
    caps = gst_pad_get_current_caps (h->sinkpad);
    fail_unless (p3d_voxels_info_from_caps (&info, caps));
    fail_unless_equals_string (info.finfo->name, formats[f]);
    fail_unless_equals_int (info.max_points, 4);
    fail_unless_equals_int (info.max_voxels, 40000);
    fail_unless_equals_int (info.grid.grid[0], 432);
    fail_unless_equals_int (info.grid.grid[1], 496);
    fail_unless_equals_int (info.grid.grid[2], 1);
    gst_caps_unref (caps);
    assert_output_matches_library (out, points, 3000, channels[f], 4, 40000);
    gst_buffer_unref (out);
    g_free (points);
    gst_harness_teardown (h);
  }
}

GST_END_TEST;

GST_START_TEST (test_timestamps_kept)
{
  GstHarness *h = voxelize_harness ("xyz", "");
  gfloat point[3] = { 1.0f, 0.0f, 0.0f };
  GstBuffer *in = points_buffer (point, 1, 3), *out;

  GST_BUFFER_PTS (in) = 5 * GST_SECOND;
  GST_BUFFER_DURATION (in) = GST_SECOND / 10;
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 5 * GST_SECOND);
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (out), GST_SECOND / 10);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_empty_sweep)
{
  GstHarness *h = voxelize_harness ("xyzi", "");
  GstBuffer *out;

  fail_unless_equals_int (gst_harness_push (h, points_buffer (NULL, 0, 4)),
      GST_FLOW_OK);
  out = gst_harness_pull (h);
  assert_output_matches_library (out, NULL, 0, 4, 32, 40000);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

static guint
structure_uint (const GstStructure * s, const gchar * field)
{
  guint value = 0;

  fail_unless (gst_structure_get_uint (s, field, &value), "no %s", field);
  return value;
}

GST_START_TEST (test_stats_and_saturation_warning)
{
  GstHarness *h = voxelize_harness ("xyz", "max-points=32 max-voxels=2");
  GstElement *voxelize = gst_harness_find_element (h, "voxelize");
  GstBus *bus = gst_bus_new ();
  GstStructure *stats = NULL;
  GstMessage *msg;
  gfloat points[60 * 3];
  gchar *text;
  guint i;

  gst_element_set_bus (h->element, bus);
  /* 40 points in one pillar, then one point in each of 20 pillars, and two
   * points out of range and one NaN */
  for (i = 0; i < 60; i++) {
    points[i * 3 + 0] = i < 40 ? 1.01f : 2.0f + 0.2f * (i - 40);
    points[i * 3 + 1] = 0.01f;
    points[i * 3 + 2] = 0.0f;
  }
  points[57 * 3] = -1.0f;
  points[58 * 3] = 100.0f;
  points[59 * 3 + 1] = NAN;
  fail_unless_equals_int (gst_harness_push (h, points_buffer (points, 60,
              3)), GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));

  g_object_get (voxelize, "stats", &stats, NULL);
  fail_unless_equals_int (structure_uint (stats, "points-in"), 60);
  fail_unless_equals_int (structure_uint (stats, "points-nonfinite"), 1);
  fail_unless_equals_int (structure_uint (stats, "points-out-of-range"), 2);
  fail_unless_equals_int (structure_uint (stats, "points-over-max-points"), 8);
  fail_unless_equals_int (structure_uint (stats, "voxels"), 2);
  /* 17 single-point pillars remain after the first two voxels */
  fail_unless_equals_int (structure_uint (stats, "voxels-dropped"), 16);
  fail_unless_equals_int (structure_uint (stats, "points-over-max-voxels"), 16);
  gst_structure_free (stats);

  /* frames from 0, as boxenc numbers them; a frame without a timestamp
   * says so, not 99:99:99.999999999 (issue 25.4) */
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING);
  fail_unless (msg != NULL, "no warning for a frame that lost voxels");
  text = elemtest_message_text (msg);
  fail_unless (g_str_has_prefix (text, "Frame 0 had more than max-voxels 2 "
          "voxels: 16 voxels and their 16 points were dropped; raise "
          "max-voxels") && strstr (text, "pts none") != NULL, "%s", text);
  g_free (text);
  gst_message_unref (msg);

  /* points beyond max-points alone are how PointPillars models are
   * trained: counted, no warning */
  fail_unless_equals_int (gst_harness_push (h, points_buffer (points, 40,
              3)), GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));
  g_object_get (voxelize, "stats", &stats, NULL);
  fail_unless_equals_int (structure_uint (stats, "points-over-max-points"), 8);
  fail_unless_equals_int (structure_uint (stats, "voxels-dropped"), 0);
  gst_structure_free (stats);
  fail_unless (gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING) == NULL);

  /* and a loss after a frame without one warns again, numbered */
  fail_unless_equals_int (gst_harness_push (h, points_buffer (points, 60,
              3)), GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING);
  fail_unless (msg != NULL);
  text = elemtest_message_text (msg);
  fail_unless (g_str_has_prefix (text, "Frame 2 had more than max-voxels"),
      "%s", text);
  g_free (text);
  gst_message_unref (msg);

  gst_object_unref (voxelize);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* A frame without a point in the range (an empty sweep, or every point
 * outside): one warning per stream that names the range, then silence;
 * a frame with voxels in between does not re-arm it. */
GST_START_TEST (test_no_point_in_range_warning)
{
  GstHarness *h = voxelize_harness ("xyz",
      "range=\"<0,-8,-3,16,8,1>\" voxel-size=\"<1,1,4>\"");
  GstBus *bus = gst_bus_new ();
  gfloat outside[2 * 3] = { -5.0f, 0.0f, 0.0f, 100.0f, 0.0f, 0.0f };
  gfloat inside[3] = { 1.0f, 0.0f, 0.0f };
  GstMessage *msg;
  gchar *text;

  gst_element_set_bus (h->element, bus);
  fail_unless_equals_int (gst_harness_push (h, points_buffer (inside, 1, 3)),
      GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));
  fail_unless (gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING) == NULL);

  fail_unless_equals_int (gst_harness_push (h, points_buffer (outside, 2, 3)),
      GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING);
  fail_unless (msg != NULL, "no warning for a frame without a point inside");
  text = elemtest_message_text (msg);
  fail_unless (strstr (text, "no point inside the range <0, -8, -3, 16, 8, 1>")
      && strstr (text, "points-out-of-range 2"), "%s", text);
  g_free (text);
  gst_message_unref (msg);

  /* empty, then outside again: already said */
  fail_unless_equals_int (gst_harness_push (h, points_buffer (NULL, 0, 3)),
      GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));
  fail_unless_equals_int (gst_harness_push (h, points_buffer (outside, 2, 3)),
      GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));
  fail_unless (gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING) == NULL);

  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);

  /* a new stream whose first frame is empty says that it is empty */
  h = voxelize_harness ("xyz", "");
  bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  fail_unless_equals_int (gst_harness_push (h, points_buffer (NULL, 0, 3)),
      GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING);
  fail_unless (msg != NULL, "no warning for an empty frame");
  text = elemtest_message_text (msg);
  fail_unless (strstr (text, "the frame is empty")
      && strstr (text, "<0, -39.68, -3, 69.12, 39.68, 1>"), "%s", text);
  g_free (text);
  gst_message_unref (msg);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_post_stats_messages)
{
  GstHarness *h = voxelize_harness ("xyz", "post-stats=true");
  GstBus *bus = gst_bus_new ();
  gfloat point[3] = { 1.0f, 0.0f, 0.0f };
  GstMessage *msg;
  GstBuffer *in;
  guint frame;

  gst_element_set_bus (h->element, bus);
  for (frame = 0; frame < 3; frame++) {
    in = points_buffer (point, 1, 3);
    GST_BUFFER_PTS (in) = frame * GST_SECOND;
    fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
    gst_buffer_unref (gst_harness_pull (h));
  }
  for (frame = 0; frame < 3; frame++) {
    const GstStructure *s;
    guint64 pts = 0;

    msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT);
    fail_unless (msg != NULL);
    s = gst_message_get_structure (msg);
    fail_unless (gst_structure_has_name (s, "voxelize-stats"));
    fail_unless (gst_structure_get_uint64 (s, "timestamp", &pts));
    fail_unless_equals_uint64 (pts, frame * GST_SECOND);
    fail_unless_equals_int (structure_uint (s, "voxels"), 1);
    gst_message_unref (msg);
  }
  fail_unless (gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING) == NULL);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_truncated_buffer_is_an_error)
{
  GstHarness *h = voxelize_harness ("xyzi", "");
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;
  GError *error = NULL;
  gchar *debug = NULL;

  gst_element_set_bus (h->element, bus);
  /* 17 bytes: one xyzi point and one byte */
  fail_unless_equals_int (gst_harness_push (h,
          gst_buffer_new_allocate (NULL, 17, NULL)), GST_FLOW_ERROR);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  gst_message_parse_error (msg, &error, &debug);
  fail_unless (g_error_matches (error, GST_STREAM_ERROR,
          GST_STREAM_ERROR_FORMAT));
  fail_unless (strstr (debug, "17 bytes") != NULL, "debug: %s", debug);
  fail_unless (strstr (debug, "16-byte records") != NULL, "debug: %s", debug);
  /* voxelize's hint (P3dCudaFilterClass.bad_input_hint) */
  fail_unless (strstr (error->message, "read raw sweep files with "
          "pointcloudparse") != NULL, "message: %s", error->message);
  g_clear_error (&error);
  g_free (debug);
  gst_message_unref (msg);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_invalid_grid_is_an_error)
{
  GstElement *pipeline = gst_parse_launch ("fakesrc num-buffers=1 ! "
      "application/x-point-cloud,format=xyz ! voxelize backend=cpu "
      "range=\"<10,-39.68,-3,0,39.68,1>\" ! fakesink", NULL);
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *msg;
  GError *error = NULL;

  fail_unless (pipeline != NULL);
  gst_element_set_state (pipeline, GST_STATE_PAUSED);
  msg =
      gst_bus_timed_pop_filtered (bus, P3D_TEST_MESSAGE_WAIT,
      GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  gst_message_parse_error (msg, &error, NULL);
  fail_unless (strstr (error->message, "range=<10,-39.68,-3,0,39.68,1>: "
          "range's xmax 0 is not above its xmin 10") != NULL, "message: %s",
      error->message);
  g_clear_error (&error);
  gst_message_unref (msg);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
}

GST_END_TEST;

/* A raw sweep file read with caps alone arrives as filesrc's blocks, each
 * a "sweep" of 256 points (issue 25.2): one warning naming
 * pointcloudparse. One file through pointcloudparse, and files of other
 * sizes one per buffer, are not blocks. */
GST_START_TEST (test_file_blocks_warning)
{
  gchar *dir = g_dir_make_tmp ("voxelize-XXXXXX", NULL);
  gchar *path = g_build_filename (dir, "sweep.bin", NULL);
  gfloat *points = g_new0 (gfloat, 600 * 4);
  const gchar *launches[] = {
    "filesrc location=%s ! application/x-point-cloud,format=xyzi "
        "! voxelize backend=cpu ! appsink name=sink",
    "filesrc location=%s ! pointcloudparse preset=kitti "
        "! voxelize backend=cpu ! appsink name=sink",
  };
  guint i;

  for (i = 0; i < 600; i++)
    points[i * 4] = 1.0f + 0.01f * i;
  fail_unless (g_file_set_contents (path, (const gchar *) points,
          600 * 16, NULL));
  for (i = 0; i < G_N_ELEMENTS (launches); i++) {
    gchar *launch = g_strdup_printf (launches[i], path);
    ElemtestRun run;
    gchar *text;

    elemtest_run (launch, &run);
    fail_unless (run.error == NULL, "%s", run.error);
    fail_unless_equals_int (run.samples->len, i == 0 ? 3 : 1);
    if (i == 0) {
      fail_unless (run.warning != NULL, "no warning");
      text = elemtest_message_text (run.warning);
      fail_unless (g_str_has_prefix (text, "The sweeps are a file reader's "
              "blocks: the first two are 4096 bytes each (256 points)")
          && strstr (text, "pointcloudparse"), "%s", text);
      g_free (text);
    } else {
      fail_unless (run.warning == NULL);
    }
    elemtest_run_clear (&run);
    g_free (launch);
  }
  g_unlink (path);
  g_rmdir (dir);
  g_free (path);
  g_free (dir);
  g_free (points);
}

GST_END_TEST;

/* Issue 32.11: a range beyond float32 (in which cells are computed) said
 * only "invalid argument"; a grid of too many cells names the axis. */
GST_START_TEST (test_grid_messages)
{
  static const struct
  {
    const gchar *properties, *words;
  } cases[] = {
    {"range=\"<0,-39.68,-3,1e39,39.68,1>\"", "Invalid property range: "
          "1e+39 (value 4 of 6) is not from -3.40282e+38 to 3.40282e+38"},
    {"voxel-size=\"<1e-7,0.16,4>\"", "voxel-size 1e-07 over the range's "
          "69.12 m along x makes 691200000 cells, more than 16777216"},
    {"voxel-size=\"<0.001,0.001,4>\"", "a grid of 5485363200 cells, more "
          "than 2147483648"},
    {"voxel-size=\"<0.16,0.16,40>\"", "voxel-size 40 along z is larger "
          "than the range's extent 4 (no whole cell)"},
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    gchar *launch = g_strdup_printf ("fakesrc num-buffers=1 ! "
        "application/x-point-cloud,format=xyz ! voxelize backend=cpu %s "
        "! fakesink", cases[i].properties);
    GstElement *pipeline = gst_parse_launch (launch, NULL);
    GstBus *bus = gst_element_get_bus (pipeline);
    GstMessage *msg;
    GError *error = NULL;

    gst_element_set_state (pipeline, GST_STATE_PAUSED);
    msg =
        gst_bus_timed_pop_filtered (bus, P3D_TEST_MESSAGE_WAIT,
        GST_MESSAGE_ERROR);
    fail_unless (msg != NULL, "%s started", launch);
    gst_message_parse_error (msg, &error, NULL);
    fail_unless (g_error_matches (error, GST_RESOURCE_ERROR,
            GST_RESOURCE_ERROR_SETTINGS), "%s", error->message);
    fail_unless (strstr (error->message, cases[i].words) != NULL,
        "%s: %s", launch, error->message);
    g_clear_error (&error);
    gst_message_unref (msg);
    gst_element_set_state (pipeline, GST_STATE_NULL);
    gst_object_unref (bus);
    gst_object_unref (pipeline);
    g_free (launch);
  }
}

GST_END_TEST;

/* 131071 voxels of 1024 xyzi points: a points tensor below 2 GiB, but a
 * record of 2150088688 bytes, more than one write(2) stores, so more than
 * filesink can write; refused once the input format is known, with the
 * values, and the blurbs state the bound. */
GST_START_TEST (test_record_too_large_is_an_error)
{
  GstElement *pipeline = gst_parse_launch ("fakesrc num-buffers=1 ! "
      "application/x-point-cloud,format=xyzi ! voxelize backend=cpu "
      "max-voxels=131071 max-points=1024 ! fakesink", NULL);
  GstBus *bus = gst_element_get_bus (pipeline);
  GstElement *voxelize;
  GstMessage *msg;
  GError *error = NULL;
  gchar *limit;
  const gchar *prop, *blurb;
  guint i;

  fail_unless (pipeline != NULL);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  msg =
      gst_bus_timed_pop_filtered (bus, P3D_TEST_MESSAGE_WAIT,
      GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  gst_message_parse_error (msg, &error, NULL);
  fail_unless (g_error_matches (error, GST_LIBRARY_ERROR,
          GST_LIBRARY_ERROR_SETTINGS), "%s", error->message);
  fail_unless (strstr (error->message, "max-voxels 131071 x max-points 1024 "
          "of xyzi points") != NULL, "message: %s", error->message);
  fail_unless (strstr (error->message, "2150088688 bytes, more than the "
          "2147479552") != NULL, "message: %s", error->message);
  g_clear_error (&error);
  gst_message_unref (msg);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);

  voxelize = gst_element_factory_make ("voxelize", NULL);
  limit = g_strdup_printf ("%" G_GSIZE_FORMAT, P3D_RECORD_MAX_BYTES);
  for (i = 0; i < 2; i++) {
    prop = i == 0 ? "max-voxels" : "max-points";
    blurb = g_param_spec_get_blurb (g_object_class_find_property
        (G_OBJECT_GET_CLASS (voxelize), prop));
    fail_unless (strstr (blurb, limit) != NULL, "%s: %s", prop, blurb);
  }
  g_free (limit);
  gst_object_unref (voxelize);
}

GST_END_TEST;

/* A voxelize on @bus, started with @voxel_size and @range: the bus is set
 * before the harness starts it, so a warning posted at start is seen. */
static GstHarness *
voxelize_harness_on_bus (const gchar * voxel_size, const gchar * range,
    GstBus * bus)
{
  GstElement *voxelize = gst_element_factory_make ("voxelize", NULL);
  GstHarness *h;

  fail_unless (voxelize != NULL);
  gst_util_set_object_arg (G_OBJECT (voxelize), "backend", "cpu");
  gst_util_set_object_arg (G_OBJECT (voxelize), "voxel-size", voxel_size);
  gst_util_set_object_arg (G_OBJECT (voxelize), "range", range);
  gst_element_set_bus (voxelize, bus);
  h = gst_harness_new_with_element (voxelize, "sink", "src");
  gst_object_unref (voxelize);
  gst_harness_set_src_caps_str (h, "application/x-point-cloud, format=xyz");
  gst_harness_set_sink_caps_str (h, "application/x-voxels");
  return h;
}

/* The effective-range field of the caps voxelize negotiated. */
static void
assert_effective_range (GstHarness * h, const gdouble * expected)
{
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  const GValue *array;
  guint i;

  fail_unless (caps != NULL);
  array = gst_structure_get_value (gst_caps_get_structure (caps, 0),
      "effective-range");
  fail_unless (array != NULL && gst_value_array_get_size (array) == 6,
      "no effective-range in %" GST_PTR_FORMAT, caps);
  for (i = 0; i < 6; i++)
    fail_unless (fabs (g_value_get_double (gst_value_array_get_value (array,
                    i)) - expected[i]) < 1e-12, "effective-range[%u] in %"
        GST_PTR_FORMAT, i, caps);
  gst_caps_unref (caps);
}

/* The voxel count and the first voxel's x cell of @out. */
static void
assert_voxels (GstBuffer * out, guint count, gint first_x)
{
  GstMapInfo info;
  guint32 n;
  gint32 coord[4];

  fail_unless (gst_memory_map (gst_buffer_peek_memory (out, 3), &info,
          GST_MAP_READ));
  memcpy (&n, info.data, sizeof (n));
  gst_memory_unmap (gst_buffer_peek_memory (out, 3), &info);
  fail_unless_equals_int (n, count);
  fail_unless (gst_memory_map (gst_buffer_peek_memory (out, 2), &info,
          GST_MAP_READ));
  memcpy (coord, info.data, sizeof (coord));
  gst_memory_unmap (gst_buffer_peek_memory (out, 2), &info);
  fail_unless_equals_int (coord[3], first_x);
  gst_buffer_unref (out);
}

/* A range that is not a whole number of voxels: the grid stays
 * round((max - min) / voxel-size), so 0 .. 1.0 in cells of 0.4 is 3 cells
 * that keep x = 1.1, and in cells of 0.3 is 3 cells that drop x = 0.95;
 * the caps say which box that is, and one warning at start names the
 * range, the voxel size and the effective range. */
GST_START_TEST (test_effective_range)
{
  static const gdouble wide[6] = { 0.0, 0.0, -3.0, 1.2, 1.2, 1.0 };
  static const gdouble narrow[6] = { 0.0, 0.0, -3.0, 0.9, 1.2, 1.0 };
  gfloat past_max[3] = { 1.1f, 0.1f, 0.0f };
  gfloat before_max[2 * 3] = { 0.95f, 0.1f, 0.0f, 0.1f, 0.1f, 0.0f };
  GstBus *bus = gst_bus_new ();
  GstHarness *h;
  GstMessage *msg;
  gchar *text;

  /* cells of 0.4: 2.5 rounds to 3, the grid ends at 1.2 */
  h = voxelize_harness_on_bus ("<0.4,0.4,4>", "<0,0,-3,1.0,1.2,1>", bus);
  fail_unless_equals_int (gst_harness_push (h, points_buffer (past_max, 1,
              3)), GST_FLOW_OK);
  assert_voxels (gst_harness_pull (h), 1, 2);
  assert_effective_range (h, wide);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING);
  fail_unless (msg != NULL, "no warning for a range of 2.5 voxels");
  text = elemtest_message_text (msg);
  fail_unless (strstr (text, "range <0, 0, -3, 1, 1.2, 1>")
      && strstr (text, "voxel-size <0.4, 0.4, 4>")
      && strstr (text, "3 x 3 x 1 cells")
      && strstr (text, "effective range <0, 0, -3, 1.2, 1.2, 1>"), "%s", text);
  g_free (text);
  gst_message_unref (msg);
  /* said once, at start, not per frame */
  fail_unless_equals_int (gst_harness_push (h, points_buffer (past_max, 1,
              3)), GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));
  fail_unless (gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING) == NULL);
  gst_element_set_bus (h->element, NULL);
  gst_harness_teardown (h);

  /* cells of 0.3: 3.33 rounds to 3, the grid ends at 0.9 */
  h = voxelize_harness_on_bus ("<0.3,0.3,4>", "<0,0,-3,1.0,1.2,1>", bus);
  fail_unless_equals_int (gst_harness_push (h, points_buffer (before_max, 2,
              3)), GST_FLOW_OK);
  assert_voxels (gst_harness_pull (h), 1, 0);
  assert_effective_range (h, narrow);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING);
  fail_unless (msg != NULL, "no warning for a range of 3.33 voxels");
  text = elemtest_message_text (msg);
  fail_unless (strstr (text, "effective range <0, 0, -3, 0.9, 1.2, 1>"),
      "%s", text);
  g_free (text);
  gst_message_unref (msg);
  gst_element_set_bus (h->element, NULL);
  gst_harness_teardown (h);

  /* the KITTI range is whole (69.12 / 0.16 is 432 up to rounding): no
   * warning, and the effective range is the range as written */
  h = voxelize_harness_on_bus ("<0.16,0.16,4.0>", "<0,-39.68,-3,69.12,39.68,1>",
      bus);
  fail_unless_equals_int (gst_harness_push (h, points_buffer (past_max, 1,
              3)), GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));
  assert_effective_range (h, kitti_range);
  fail_unless (gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING) == NULL);
  gst_element_set_bus (h->element, NULL);
  gst_harness_teardown (h);
  /* queued messages hold their element: drop them */
  gst_bus_set_flushing (bus, TRUE);
  gst_object_unref (bus);
}

GST_END_TEST;

GST_START_TEST (test_properties_round_trip)
{
  GstElement *voxelize = gst_element_factory_make ("voxelize", NULL);
  GValue array = G_VALUE_INIT, v = G_VALUE_INIT;
  guint i;

  fail_unless (voxelize != NULL);
  gst_util_set_object_arg (G_OBJECT (voxelize), "voxel-size",
      "<0.075,0.075,0.2>");
  gst_util_set_object_arg (G_OBJECT (voxelize), "range",
      "<-54,-54,-5,54,54,3>");
  g_value_init (&array, GST_TYPE_ARRAY);
  g_object_get_property (G_OBJECT (voxelize), "voxel-size", &array);
  fail_unless_equals_int (gst_value_array_get_size (&array), 3);
  fail_unless_equals_float (g_value_get_double (gst_value_array_get_value
          (&array, 2)), 0.2);
  g_value_unset (&array);
  g_value_init (&array, GST_TYPE_ARRAY);
  g_object_get_property (G_OBJECT (voxelize), "range", &array);
  fail_unless_equals_int (gst_value_array_get_size (&array), 6);
  for (i = 0; i < 6; i++)
    fail_unless_equals_float (g_value_get_double (gst_value_array_get_value
            (&array, i)), i % 3 == 2 ? (i < 3 ? -5.0 : 3.0) : (i < 3 ? -54.0 :
            54.0));
  g_value_unset (&array);
  (void) v;
  gst_object_unref (voxelize);
}

GST_END_TEST;

static Suite *
voxelize_suite (void)
{
  Suite *s = suite_create ("voxelize");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_output_matches_library);
  tcase_add_test (tc, test_timestamps_kept);
  tcase_add_test (tc, test_empty_sweep);
  tcase_add_test (tc, test_stats_and_saturation_warning);
  tcase_add_test (tc, test_grid_messages);
  tcase_add_test (tc, test_file_blocks_warning);
  tcase_add_test (tc, test_no_point_in_range_warning);
  tcase_add_test (tc, test_post_stats_messages);
  tcase_add_test (tc, test_truncated_buffer_is_an_error);
  tcase_add_test (tc, test_invalid_grid_is_an_error);
  tcase_add_test (tc, test_record_too_large_is_an_error);
  tcase_add_test (tc, test_properties_round_trip);
  tcase_add_test (tc, test_effective_range);
  return s;
}

P3D_CHECK_MAIN (voxelize);
