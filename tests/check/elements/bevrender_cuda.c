/* bevrender with inputs in CUDA memory (needs a GPU): points, boxes, voxels,
 * pillar features and BEV features on the device draw the same bytes as
 * the same inputs in system memory. The device inputs are written by work
 * queued on streams that the host map must wait for: pointcloudtestsrc's
 * upload, voxelize and pillarfeat on the GPU, and a copy of our own. */
#include <string.h>

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/check/gstcheck.h>

#include "p3dtest-elem.h"
#include "p3dperception.h"
#include "p3dtest.h"
#include "runtime.h"

/* Fails naming the first pixel where the frames differ. */
static void
assert_frames_equal (GPtrArray * cuda, GPtrArray * system, const gchar * what)
{
  guint i;

  fail_unless (cuda->len > 0, "%s: no frame", what);
  fail_unless_equals_int (cuda->len, system->len);
  for (i = 0; i < cuda->len; i++) {
    GstBuffer *a = gst_sample_get_buffer (g_ptr_array_index (cuda, i));
    GstBuffer *b = gst_sample_get_buffer (g_ptr_array_index (system, i));
    GstMapInfo ma, mb;
    gsize k;

    fail_unless (gst_buffer_map (a, &ma, GST_MAP_READ));
    fail_unless (gst_buffer_map (b, &mb, GST_MAP_READ));
    fail_unless_equals_uint64 (ma.size, mb.size);
    for (k = 0; k < ma.size; k++)
      if (ma.data[k] != mb.data[k])
        fail ("%s, frame %u: byte %" G_GSIZE_FORMAT " (pixel %" G_GSIZE_FORMAT
            ") is %u from CUDA memory, %u from system memory", what, i, k,
            k / 4, ma.data[k], mb.data[k]);
    gst_buffer_unmap (a, &ma);
    gst_buffer_unmap (b, &mb);
  }
}

/* The frames of bevrender fed by @cuda_inputs and by @system_inputs. */
static void
assert_same_drawing (const gchar * cuda_inputs, const gchar * system_inputs,
    const gchar * what)
{
  gchar *cuda_launch = g_strdup_printf ("bevrender name=r width=600 ! "
      "appsink name=sink sync=false %s", cuda_inputs);
  gchar *system_launch = g_strdup_printf ("bevrender name=r width=600 ! "
      "appsink name=sink sync=false %s", system_inputs);
  GPtrArray *cuda = elemtest_run_pipeline (cuda_launch);
  GPtrArray *system = elemtest_run_pipeline (system_launch);

  assert_frames_equal (cuda, system, what);
  g_ptr_array_unref (cuda);
  g_ptr_array_unref (system);
  g_free (cuda_launch);
  g_free (system_launch);
}

GST_START_TEST (test_points_and_boxes)
{
  assert_same_drawing ("pointcloudtestsrc seed=4 num-buffers=3 "
      "! application/x-point-cloud(memory:CUDAMemory) ! r.points_0 "
      "pointcloudtestsrc seed=4 num-buffers=3 emit=boxes "
      "! application/x-boxes3d(memory:CUDAMemory) ! r.boxes_0",
      "pointcloudtestsrc seed=4 num-buffers=3 "
      "! application/x-point-cloud ! r.points_0 "
      "pointcloudtestsrc seed=4 num-buffers=3 emit=boxes "
      "! application/x-boxes3d ! r.boxes_0", "points and boxes");
}

GST_END_TEST;

GST_START_TEST (test_voxels_and_pillars)
{
  /* the CUDA voxelization is the reference's, bit for bit */
  assert_same_drawing ("pointcloudtestsrc seed=5 num-buffers=3 ! tee name=t "
      "t. ! queue ! voxelize backend=cuda "
      "! application/x-voxels(memory:CUDAMemory) ! r.voxels_0 "
      "t. ! queue ! voxelize backend=cuda ! pillarfeat backend=cuda "
      "! application/x-pillar-features(memory:CUDAMemory) ! r.voxels_1",
      "pointcloudtestsrc seed=5 num-buffers=3 ! tee name=t "
      "t. ! queue ! voxelize backend=cpu ! application/x-voxels "
      "! r.voxels_0 "
      "t. ! queue ! voxelize backend=cpu ! pillarfeat backend=cpu "
      "! application/x-pillar-features ! r.voxels_1", "voxels, pillars");
}

GST_END_TEST;

/* 3 channels on a 64 x 48 grid, random values, one feature map a frame. */
static GstBuffer *
random_features (P3dTestRng * rng, const P3dBevFeaturesInfo * info,
    GstClockTime pts)
{
  P3dTensorLayout layout;
  GstBuffer *buffer;
  GstMapInfo map;
  gsize i, n;

  fail_unless (p3d_bev_features_info_get_layout (info, &layout));
  buffer = gst_buffer_new_allocate (NULL, layout.size[0], NULL);
  fail_unless (gst_buffer_map (buffer, &map, GST_MAP_WRITE));
  n = layout.size[0] / 4;
  for (i = 0; i < n; i++) {
    /* a third of the cells empty */
    gfloat value = p3d_test_rng_below (rng, 3) == 0 ? 0.0f :
        p3d_test_rng_uniform (rng, -2.0f, 2.0f);

    memcpy (map.data + i * 4, &value, 4);
  }
  gst_buffer_unmap (buffer, &map);
  GST_BUFFER_PTS (buffer) = pts;
  return buffer;
}

static GPtrArray *
render_features (GstCaps * caps, GstBuffer ** buffers, guint n)
{
  GError *error = NULL;
  /* linked to a features pad by name: at parse time appsrc has no caps
   * yet, and an unnamed link would take the first pad template */
  GstElement *pipeline = gst_parse_launch ("bevrender name=r width=300 "
      "! appsink name=sink sync=false appsrc name=src format=time "
      "! r.features_0", &error);
  GstElement *source, *sink;
  GPtrArray *samples = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_sample_unref);
  GstSample *sample;
  guint i;

  fail_unless (pipeline != NULL, "%s", error ? error->message : "?");
  source = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  g_object_set (source, "caps", caps, NULL);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  for (i = 0; i < n; i++)
    fail_unless_equals_int (gst_app_src_push_buffer (GST_APP_SRC (source),
            buffers[i]), GST_FLOW_OK);
  gst_app_src_end_of_stream (GST_APP_SRC (source));
  while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sink))) != NULL)
    g_ptr_array_add (samples, sample);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (source);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  return samples;
}

GST_START_TEST (test_features)
{
  gchar *why = NULL;
  GstAllocator *allocator = p3d_cuda_allocator_get (0, &why);
  P3dcCudaStream stream = NULL;
  P3dBevFeaturesInfo info;
  GstBuffer *host[3], *device[3];
  gpointer staging[3] = { NULL, NULL, NULL };
  GstCaps *caps, *cuda_caps;
  GPtrArray *system, *cuda;
  P3dTestRng rng;
  guint i;

  fail_unless (allocator != NULL, "no CUDA allocator: %s", why);
  fail_unless_equals_int (p3dc_cuda_stream_create (&stream), P3DC_OK);
  p3d_bev_features_info_init (&info);
  info.format = P3D_DATA_FORMAT_F32;
  info.channels = 3;
  info.width = 64;
  info.height = 48;
  caps = p3d_bev_features_info_to_caps (&info);
  cuda_caps = gst_caps_copy (caps);
  gst_caps_set_features (cuda_caps, 0,
      gst_caps_features_new (P3D_CAPS_FEATURE_MEMORY_CUDA, NULL));

  p3d_test_rng_init (&rng, 17);
  for (i = 0; i < 3; i++) {
    host[i] = random_features (&rng, &info, i * 100 * GST_MSECOND);
    device[i] = elemtest_device_copy (allocator, host[i], stream, &staging[i]);
  }
  cuda = render_features (cuda_caps, device, 3);
  system = render_features (caps, host, 3);
  assert_frames_equal (cuda, system, "features");

  fail_unless_equals_int (p3dc_cuda_stream_synchronize (stream), P3DC_OK);
  for (i = 0; i < 3; i++)
    fail_unless_equals_int (p3dc_cuda_host_free (staging[i]), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_destroy (stream), P3DC_OK);
  g_ptr_array_unref (cuda);
  g_ptr_array_unref (system);
  gst_caps_unref (caps);
  gst_caps_unref (cuda_caps);
  gst_object_unref (allocator);
}

GST_END_TEST;

static Suite *
bevrender_cuda_suite (void)
{
  Suite *s = suite_create ("bevrender_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_points_and_boxes);
  tcase_add_test (tc, test_voxels_and_pillars);
  tcase_add_test (tc, test_features);
  return s;
}

P3D_CHECK_MAIN (bevrender_cuda);
