/* Whole pipelines on the reference path, frame by frame against the
 * compute library called directly on the same data (taken from the scene
 * library that pointcloudtestsrc renders):
 *   pointcloudtestsrc ! voxelize ! pillarfeat ! appsink
 *   pointcloudtestsrc emit=candidates ! nms ! boxenc ! appsink
 * and backend=cuda on a machine without a device. */
#include <string.h>

#include <gst/app/gstappsink.h>
#include <gst/base/gstbasetransform.h>
#include <gst/check/gstcheck.h>
#include <json-glib/json-glib.h>

#include "p3dtest-elem.h"
#include "pointcloudtestsrc-scene.h"
#include "nms.h"
#include "p3dperception.h"
#include "p3dtest.h"
#include "pillarfeat.h"
#include "runtime.h"
#include "voxelize.h"

#define N_FRAMES 3
#define FRAME_DURATION (GST_SECOND / 10)

/* Starts @description, whose last element is "appsink name=sink", and
 * returns the pipeline and the sink (unref both). */
static GstElement *
start_pipeline (const gchar * description, GstElement ** sink)
{
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch (description, &error);

  fail_unless (pipeline != NULL, "'%s': %s", description,
      error ? error->message : "?");
  g_clear_error (&error);
  *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  fail_unless (*sink != NULL);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE, "'%s' does not start", description);
  return pipeline;
}

/* The next sample, or NULL at EOS; fails with the bus's error when the
 * pipeline stopped on one. */
static GstSample *
pull (GstElement * pipeline, GstElement * sink, const gchar * description)
{
  GstSample *sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
      600 * GST_SECOND);

  if (sample == NULL && !gst_app_sink_is_eos (GST_APP_SINK (sink))) {
    GstBus *bus = gst_element_get_bus (pipeline);
    GstMessage *message = elemtest_pop (bus, GST_MESSAGE_ERROR);

    fail ("'%s': no sample, %s", description, message ?
        elemtest_message_text (message) : "no error either");
  }
  return sample;
}

/* After the last sample: EOS, and no error on the bus. */
static void
stop_pipeline (GstElement * pipeline, GstElement * sink,
    const gchar * description)
{
  GstBus *bus = gst_element_get_bus (pipeline);
  GstMessage *message;

  fail_unless (gst_app_sink_is_eos (GST_APP_SINK (sink)), "'%s' did not end",
      description);
  message = elemtest_pop (bus, GST_MESSAGE_ERROR);
  if (message) {
    gchar *text = elemtest_message_text (message);

    fail ("'%s': %s", description, text);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
}

/* The scene of pointcloudtestsrc's defaults with @seed, posed at @frame. */
static P3dLidarScene *
scene_at (guint64 seed, guint64 frame)
{
  P3dLidarSceneParams params;
  P3dLidarScene *scene;

  p3d_lidar_scene_params_init (&params);
  params.seed = seed;
  scene = p3d_lidar_scene_new (&params);
  fail_unless (scene != NULL);
  p3d_lidar_scene_set_frame (scene, frame);
  return scene;
}

/* What voxelize and pillarfeat are set to in one lidar pipeline. */
typedef struct
{
  const gchar *point_format;
  P3dLidarChannels channels;
  guint n_channels;
  gint intensity;
  gdouble voxel_size[3];
  gdouble range[6];
  guint max_points;
  guint max_voxels;
  P3dFeatureSet features;
  gboolean half;
} LidarChain;

/* The pillar features of frame @frame, computed by the libraries. */
static void
lidar_expected (const LidarChain * chain, guint64 seed, guint64 frame,
    gpointer tensors[3], gsize sizes[3])
{
  P3dLidarScene *scene = scene_at (seed, frame);
  P3dcVoxelizeParams voxelize;
  P3dcVoxelizeOutput voxels;
  P3dcPillarFeatParams pillarfeat;
  P3dcPillarFeatInput in;
  P3dcPillarFeatOutput out;
  gfloat *points = g_new (gfloat, (gsize) p3d_lidar_scene_get_n_rays (scene)
      * chain->n_channels);
  gsize n_points = p3d_lidar_scene_render (scene, chain->channels, points,
      NULL);
  guint v = chain->max_voxels, p = chain->max_points;

  p3d_lidar_scene_free (scene);
  fail_unless (n_points > 1000);
  fail_unless_equals_int (p3dc_voxelize_params_init (&voxelize,
          chain->voxel_size, chain->range, chain->n_channels, p, v), P3DC_OK);
  voxels.voxels = g_malloc0 ((gsize) v * p * chain->n_channels * 4);
  voxels.num_points = g_malloc0 ((gsize) v * 4);
  voxels.coords = g_malloc0 ((gsize) v * 16);
  voxels.count = g_malloc0 (4);
  voxels.stats = NULL;
  fail_unless_equals_int (p3dc_voxelize_cpu (&voxelize, points, n_points,
          &voxels), P3DC_OK);
  fail_unless (*voxels.count > 100, "frame %" G_GUINT64_FORMAT ": %u voxels",
      frame, *voxels.count);
  g_free (points);

  fail_unless_equals_int (p3dc_pillarfeat_params_init (&pillarfeat,
          (P3dcPillarFeatureSet) chain->features, chain->half,
          chain->n_channels, chain->intensity, p, v, chain->voxel_size,
          chain->range), P3DC_OK);
  sizes[0] = p3dc_pillarfeat_features_size (&pillarfeat);
  sizes[1] = 16 * (gsize) v;
  sizes[2] = 4;
  tensors[0] = g_malloc0 (sizes[0]);
  tensors[1] = g_malloc0 (sizes[1]);
  tensors[2] = g_malloc0 (sizes[2]);
  in.voxels = voxels.voxels;
  in.num_points = voxels.num_points;
  in.coords = voxels.coords;
  in.count = voxels.count;
  out.features = tensors[0];
  out.coords = tensors[1];
  out.count = tensors[2];
  p3dc_pillarfeat_cpu (&pillarfeat, &in, &out);
  g_free (voxels.voxels);
  g_free (voxels.num_points);
  g_free (voxels.coords);
  g_free (voxels.count);
}

static void
run_lidar_chain (const LidarChain * chain, guint64 seed)
{
  gchar *description = g_strdup_printf ("pointcloudtestsrc num-buffers=%u "
      "seed=%" G_GUINT64_FORMAT " ! application/x-point-cloud, format=%s "
      "! voxelize backend=cpu voxel-size=\"<%g,%g,%g>\" "
      "range=\"<%g,%g,%g,%g,%g,%g>\" max-points=%u max-voxels=%u "
      "! pillarfeat backend=cpu features=%s "
      "! application/x-pillar-features, format=%s "
      "! appsink name=sink sync=false", N_FRAMES, seed, chain->point_format,
      chain->voxel_size[0], chain->voxel_size[1], chain->voxel_size[2],
      chain->range[0], chain->range[1], chain->range[2], chain->range[3],
      chain->range[4], chain->range[5], chain->max_points, chain->max_voxels,
      p3d_feature_set_to_string (chain->features),
      chain->half ? "F16" : "F32");
  GstElement *sink, *pipeline = start_pipeline (description, &sink);
  guint frame;

  for (frame = 0; frame < N_FRAMES; frame++) {
    GstSample *sample = pull (pipeline, sink, description);
    GstBuffer *buffer;
    gpointer tensors[3];
    gsize sizes[3];
    guint i;

    fail_unless (sample != NULL, "frame %u missing", frame);
    buffer = gst_sample_get_buffer (sample);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (buffer), frame * FRAME_DURATION);
    fail_unless_equals_int (gst_buffer_n_memory (buffer), 3);
    lidar_expected (chain, seed, frame, tensors, sizes);
    for (i = 0; i < 3; i++) {
      gchar *what = g_strdup_printf ("%s frame %u tensor %u", description,
          frame, i);

      elemtest_assert_tensor (buffer, i, tensors[i], sizes[i], what);
      g_free (what);
      g_free (tensors[i]);
    }
    gst_sample_unref (sample);
  }
  fail_unless (pull (pipeline, sink, description) == NULL);
  stop_pipeline (pipeline, sink, description);
  g_free (description);
}

/* The defaults of both elements: KITTI pillars, pointpillars-10, F32. */
GST_START_TEST (test_lidar_chain_kitti)
{
  const LidarChain chain = {
    "xyzi", P3D_LIDAR_CHANNEL_INTENSITY, 4, 3,
    {0.16, 0.16, 4.0}, {0.0, -39.68, -3.0, 69.12, 39.68, 1.0},
    32, 40000, P3D_FEATURE_SET_POINTPILLARS_10, FALSE
  };

  run_lidar_chain (&chain, 11);
}

GST_END_TEST;

/* Points without intensity all around the sensor, F16, with distance. */
GST_START_TEST (test_lidar_chain_xyz_f16)
{
  const LidarChain chain = {
    "xyz", 0, 3, -1,
    {0.2, 0.2, 4.0}, {-40.0, -40.0, -3.0, 40.0, 40.0, 1.0},
    16, 12000, P3D_FEATURE_SET_POINTPILLARS_11, TRUE
  };

  run_lidar_chain (&chain, 3);
}

GST_END_TEST;

/* A float of a JSON box line, exactly as written. */
static gfloat
member_float (JsonObject * box, const gchar * name)
{
  JsonNode *node = json_object_get_member (box, name);

  fail_unless (node != NULL && JSON_NODE_HOLDS_VALUE (node), "no %s", name);
  return (gfloat) json_node_get_double (node);
}

static void
assert_box_line (const gchar * line, const P3dcBox3d * expected,
    const gchar * what)
{
  JsonParser *parser = json_parser_new ();
  JsonObject *box;
  P3dcBox3d actual;
  GError *error = NULL;

  fail_unless (json_parser_load_from_data (parser, line, -1, &error),
      "%s: '%s': %s", what, line, error ? error->message : "?");
  box = json_node_get_object (json_parser_get_root (parser));
  actual.x = member_float (box, "x");
  actual.y = member_float (box, "y");
  actual.z = member_float (box, "z");
  actual.dx = member_float (box, "dx");
  actual.dy = member_float (box, "dy");
  actual.dz = member_float (box, "dz");
  actual.yaw = member_float (box, "yaw");
  actual.score = member_float (box, "score");
  actual.label = (gint32) json_object_get_int_member (box, "label");
  elemtest_assert_bytes (&actual, expected, sizeof (actual), what);
  g_object_unref (parser);
}

static void
run_candidates_chain (const gchar * nms_properties,
    const P3dcNmsParams * params, guint64 seed)
{
  gchar *description = g_strdup_printf ("pointcloudtestsrc emit=candidates "
      "num-buffers=%u seed=%" G_GUINT64_FORMAT " max-boxes=1024 "
      "! application/x-boxes3d ! nms backend=cpu %s ! boxenc format=json "
      "! appsink name=sink sync=false", N_FRAMES, seed, nms_properties);
  GstElement *sink, *pipeline = start_pipeline (description, &sink);
  P3dcBox3d *candidates = g_new (P3dcBox3d, 1024);
  P3dcBox3d *kept_boxes = g_new (P3dcBox3d, 1024);
  guint frame;

  for (frame = 0; frame < N_FRAMES; frame++) {
    GstSample *sample = pull (pipeline, sink, description);
    P3dLidarScene *scene = scene_at (seed, frame);
    guint n = p3d_lidar_scene_get_candidates (scene, 8, candidates, 1024);
    guint32 kept = 0, i;
    gchar **lines, *frame_line;
    GstMapInfo info;

    p3d_lidar_scene_free (scene);
    fail_unless (n > 50 && n <= 1024, "%u candidates", n);
    fail_unless_equals_int (p3dc_nms_cpu (params, candidates, n, kept_boxes,
            1024, &kept, NULL), P3DC_OK);
    fail_unless (kept > 5 && kept < n / 2, "%u of %u kept", kept, n);

    fail_unless (sample != NULL, "frame %u missing", frame);
    fail_unless (gst_buffer_map (gst_sample_get_buffer (sample), &info,
            GST_MAP_READ));
    {
      gchar *text = g_strndup ((const gchar *) info.data, info.size);

      lines = g_strsplit (text, "\n", -1);
      g_free (text);
    }
    gst_buffer_unmap (gst_sample_get_buffer (sample), &info);

    /* a frame line, then one line per kept box, then the final '\n' */
    fail_unless_equals_int (g_strv_length (lines), kept + 2);
    frame_line = g_strdup_printf ("{\"frame\":%u,\"pts\":%" G_GUINT64_FORMAT
        ",\"count\":%u,\"type\":\"3d\"}", frame, frame * FRAME_DURATION, kept);
    fail_unless_equals_string (lines[0], frame_line);
    g_free (frame_line);
    for (i = 0; i < kept; i++) {
      gchar *what = g_strdup_printf ("%s frame %u box %u", description, frame,
          i);

      assert_box_line (lines[i + 1], &kept_boxes[i], what);
      g_free (what);
    }
    fail_unless_equals_string (lines[kept + 1], "");
    g_strfreev (lines);
    gst_sample_unref (sample);
  }
  fail_unless (pull (pipeline, sink, description) == NULL);
  stop_pipeline (pipeline, sink, description);
  g_free (candidates);
  g_free (kept_boxes);
  g_free (description);
}

/* The element's defaults, as documented by its properties. */
static void
nms_defaults (P3dcNmsParams * params)
{
  p3dc_nms_params_init (params);
  params->mode = P3DC_NMS_BEV_ROTATED;
  params->iou_threshold = 0.5f;
  params->distance_threshold = 2.0f;
  params->score_threshold = 0.0f;
}

GST_START_TEST (test_candidates_nms_rotated)
{
  P3dcNmsParams params;

  nms_defaults (&params);
  params.iou_threshold = 0.1f;
  run_candidates_chain ("mode=bev-rotated iou-threshold=0.1", &params, 5);
}

GST_END_TEST;

GST_START_TEST (test_candidates_nms_circle_per_class)
{
  P3dcNmsParams params;

  nms_defaults (&params);
  params.mode = P3DC_NMS_CIRCLE;
  params.distance_threshold = 1.5f;
  params.per_class = 1;
  params.post_max = 40;
  run_candidates_chain ("mode=circle distance-threshold=1.5 per-class=true "
      "post-max=40", &params, 8);
}

GST_END_TEST;

/* backend=cuda on a device that does not exist (device 0 on a machine
 * without one, the first number past the last device on a GPU machine): the
 * start fails with an error that names the device and says that there is
 * none, not that a driver is too old. */
GST_START_TEST (test_backend_cuda_without_device)
{
  static const gchar *const elements[] = { "voxelize", "pillarfeat", "nms" };
  gint missing = p3dc_cuda_device_count ();
  gchar *device = g_strdup_printf ("device %d", missing);
  guint i;

  for (i = 0; i < G_N_ELEMENTS (elements); i++) {
    GstElement *element = gst_element_factory_make (elements[i], NULL);
    GstBus *bus = gst_bus_new ();
    gint active = -1;
    gchar *text;

    fail_unless (element != NULL);
    gst_util_set_object_arg (G_OBJECT (element), "backend", "cuda");
    g_object_set (element, "cuda-device-id", missing, NULL);
    gst_element_set_bus (element, bus);
    fail_unless_equals_int (gst_element_set_state (element,
            GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
    text = elemtest_expect_error (bus, GST_RESOURCE_ERROR,
        GST_RESOURCE_ERROR_NOT_FOUND, "backend=cuda", device,
        "no CUDA device", NULL);
    fail_if (strstr (text, "insufficient") != NULL, "%s", text);
    g_free (text);
    g_object_get (element, "active-backend", &active, NULL);
    fail_unless_equals_int (active, P3D_BACKEND_AUTO);
    gst_element_set_state (element, GST_STATE_NULL);
    gst_element_set_bus (element, NULL);
    gst_object_unref (bus);
    gst_object_unref (element);
  }
  g_free (device);
}

GST_END_TEST;

/* backend=auto without a device takes the reference path and says so. */
GST_START_TEST (test_backend_auto_reads_active_backend)
{
  static const gchar *const elements[] = { "voxelize", "pillarfeat", "nms" };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (elements); i++) {
    GstElement *element = gst_element_factory_make (elements[i], NULL);
    gint active = -1;

    g_object_get (element, "active-backend", &active, NULL);
    fail_unless_equals_int (active, P3D_BACKEND_AUTO);
    fail_unless_equals_int (gst_element_set_state (element, GST_STATE_PAUSED),
        GST_STATE_CHANGE_SUCCESS);
    g_object_get (element, "active-backend", &active, NULL);
    fail_unless_equals_int (active, p3dc_cuda_device_count () > 0 ?
        P3D_BACKEND_CUDA : P3D_BACKEND_CPU);
    gst_element_set_state (element, GST_STATE_NULL);
    g_object_get (element, "active-backend", &active, NULL);
    fail_unless_equals_int (active, P3D_BACKEND_AUTO);
    gst_object_unref (element);
  }
}

GST_END_TEST;

static GstPadProbeReturn
answer_allocation (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GstQuery *query = GST_PAD_PROBE_INFO_QUERY (info);

  if (GST_QUERY_TYPE (query) != GST_QUERY_ALLOCATION)
    return GST_PAD_PROBE_OK;
  /* a sink that needs 5 to 9 buffers in flight, with no pool of its own */
  gst_query_add_allocation_pool (query, NULL, 0, 5, 9);
  return GST_PAD_PROBE_HANDLED;
}

/* The output pool is ours (tensor buffers), but sized as downstream
 * asked. */
GST_START_TEST (test_output_pool_keeps_downstream_counts)
{
  GstElement *pipeline = gst_parse_launch ("pointcloudtestsrc num-buffers=2 "
      "! voxelize backend=cpu name=v ! fakesink name=s", NULL);
  GstElement *voxelize = gst_bin_get_by_name (GST_BIN (pipeline), "v");
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "s");
  GstPad *pad = gst_element_get_static_pad (sink, "sink");
  GstBus *bus = gst_element_get_bus (pipeline);
  GstBufferPool *pool;
  GstStructure *config;
  GstMessage *message;
  guint size, min, max;

  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_QUERY_DOWNSTREAM,
      answer_allocation, NULL, NULL);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  message = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (message != NULL
      && GST_MESSAGE_TYPE (message) == GST_MESSAGE_EOS);
  gst_message_unref (message);

  pool = gst_base_transform_get_buffer_pool (GST_BASE_TRANSFORM (voxelize));
  fail_unless (pool != NULL);
  fail_unless (P3D_IS_TENSOR_POOL (pool));
  config = gst_buffer_pool_get_config (pool);
  fail_unless (gst_buffer_pool_config_get_params (config, NULL, &size, &min,
          &max));
  fail_unless_equals_int (min, 5);
  fail_unless_equals_int (max, 9);
  gst_structure_free (config);
  gst_object_unref (pool);

  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pad);
  gst_object_unref (sink);
  gst_object_unref (voxelize);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
}

GST_END_TEST;

static Suite *
pipeline_suite (void)
{
  Suite *s = suite_create ("pipeline");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_lidar_chain_kitti);
  tcase_add_test (tc, test_lidar_chain_xyz_f16);
  tcase_add_test (tc, test_candidates_nms_rotated);
  tcase_add_test (tc, test_candidates_nms_circle_per_class);
  tcase_add_test (tc, test_backend_cuda_without_device);
  tcase_add_test (tc, test_backend_auto_reads_active_backend);
  tcase_add_test (tc, test_output_pool_keeps_downstream_counts);
  return s;
}

P3D_CHECK_MAIN (pipeline);
