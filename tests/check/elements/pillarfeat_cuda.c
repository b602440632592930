/* pillarfeat's CUDA path as an element: backend=cuda gives exactly the
 * bytes of backend=cpu on the same voxels, for every feature set, in F32
 * and F16, with the output negotiated in system memory and in
 * memory:CUDAMemory, over frames whose voxel counts go up and down; and
 * the chain voxelize ! pillarfeat with the voxels in CUDA memory between
 * them equals the CPU chain. Needs a GPU. */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "p3dtest-backend.h"
#include "p3dtest-elem.h"
#include "p3dtest.h"
#include "voxelize.h"

static const gdouble kitti_voxel_size[3] = { 0.16, 0.16, 4.0 };
static const gdouble kitti_range[6] = { 0.0, -39.68, -3.0, 69.12, 39.68, 1.0 };

#define PILLAR_MAX_VOXELS 500
#define PILLAR_MAX_POINTS 8

/* The voxels of a random sweep, as voxelize hands them over. */
static GstBuffer *
voxels_buffer (guint64 seed, gsize n_points)
{
  guint v = PILLAR_MAX_VOXELS, p = PILLAR_MAX_POINTS;
  gconstpointer data[4];
  gsize sizes[4] = { (gsize) v * p * 16, (gsize) v * 4, (gsize) v * 16, 4 };
  gpointer tensors[4];
  P3dcVoxelizeParams params;
  P3dcVoxelizeOutput out;
  GstBuffer *buffer;
  gfloat *points;
  guint i;

  gst_buffer_unref (backendtest_points_buffer (seed, n_points, &points));
  fail_unless_equals_int (p3dc_voxelize_params_init (&params, kitti_voxel_size,
          kitti_range, 4, p, v), P3DC_OK);
  for (i = 0; i < 4; i++)
    data[i] = tensors[i] = g_malloc0 (sizes[i]);
  out.voxels = tensors[0];
  out.num_points = tensors[1];
  out.coords = tensors[2];
  out.count = tensors[3];
  out.stats = NULL;
  fail_unless_equals_int (p3dc_voxelize_cpu (&params, points, n_points, &out),
      P3DC_OK);
  buffer = elemtest_tensors_buffer (4, data, sizes);
  for (i = 0; i < 4; i++)
    g_free (tensors[i]);
  g_free (points);
  return buffer;
}

static gchar *
voxels_caps (void)
{
  P3dVoxelsInfo info;
  GstCaps *caps;
  gchar *text;

  p3d_voxels_info_init (&info);
  fail_unless (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI,
          PILLAR_MAX_VOXELS, PILLAR_MAX_POINTS, kitti_voxel_size, kitti_range));
  caps = p3d_voxels_info_to_caps (&info);
  text = gst_caps_to_string (caps);
  gst_caps_unref (caps);
  return text;
}

GST_START_TEST (test_pillarfeat)
{
  static const gchar *const sets[] = { "pointpillars-10", "mmdet3d-9",
    "pointpillars-11"
  };
  GstBuffer *inputs[BACKENDTEST_N_FRAMES];
  gchar *caps = voxels_caps ();
  guint s, half, i;

  for (i = 0; i < BACKENDTEST_N_FRAMES; i++)
    inputs[i] = voxels_buffer (200 + i, backendtest_frame_points[i]);
  for (s = 0; s < G_N_ELEMENTS (sets); s++) {
    for (half = 0; half < 2; half++) {
      gchar *properties = g_strdup_printf ("features=%s", sets[s]);
      BackendtestSetup setup = { "pillarfeat", properties, caps,
        "application/x-pillar-features", half ? ", format=F16" : ", format=F32"
      };

      backendtest_compare (&setup, inputs, BACKENDTEST_N_FRAMES);
      g_free (properties);
    }
  }
  backendtest_unref_all (inputs, BACKENDTEST_N_FRAMES);
  g_free (caps);
}

GST_END_TEST;

/* Counts the buffers entering pillarfeat whose tensors are all on the
 * device. */
static GstPadProbeReturn
count_device_buffers (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER (info);
  guint i, *count = data;
  gboolean device = gst_buffer_n_memory (buffer) == 4;

  for (i = 0; i < gst_buffer_n_memory (buffer); i++)
    device = device && p3d_is_cuda_memory (gst_buffer_peek_memory (buffer, i));
  if (device)
    (*count)++;
  return GST_PAD_PROBE_OK;
}

/* voxelize ! pillarfeat with the voxels in CUDA memory between them. */
GST_START_TEST (test_chain_in_cuda_memory)
{
  static const gchar *const chain = "voxelize backend=%s max-points=8 "
      "max-voxels=500 ! application/x-voxels%s ! pillarfeat backend=%s "
      "features=pointpillars-11";
  GstBuffer *inputs[BACKENDTEST_N_FRAMES];
  guint cuda_out, i;

  for (i = 0; i < BACKENDTEST_N_FRAMES; i++)
    inputs[i] = backendtest_points_buffer (500 + i,
        backendtest_frame_points[i], NULL);
  for (cuda_out = 0; cuda_out < 2; cuda_out++) {
    gchar *cpu_launch = g_strdup_printf (chain, "cpu", "", "cpu");
    gchar *cuda_launch = g_strdup_printf (chain, "cuda",
        BACKENDTEST_CUDA_FEATURE, "cuda");
    GstHarness *cpu = gst_harness_new_parse (cpu_launch);
    GstHarness *cuda = gst_harness_new_parse (cuda_launch);
    GstElement *pillarfeat = gst_harness_find_element (cuda, "pillarfeat");
    GstPad *sinkpad = gst_element_get_static_pad (pillarfeat, "sink");
    guint device_buffers = 0;

    gst_pad_add_probe (sinkpad, GST_PAD_PROBE_TYPE_BUFFER,
        count_device_buffers, &device_buffers, NULL);
    gst_object_unref (sinkpad);
    gst_object_unref (pillarfeat);
    gst_harness_set_src_caps_str (cpu, "application/x-point-cloud, "
        "format=xyzi");
    gst_harness_set_src_caps_str (cuda, "application/x-point-cloud, "
        "format=xyzi");
    gst_harness_set_sink_caps_str (cpu, "application/x-pillar-features");
    gst_harness_set_sink_caps_str (cuda, cuda_out ?
        "application/x-pillar-features" BACKENDTEST_CUDA_FEATURE :
        "application/x-pillar-features");
    backendtest_assert_active (cuda, "voxelize", P3D_BACKEND_CUDA);
    backendtest_assert_active (cuda, "pillarfeat", P3D_BACKEND_CUDA);

    for (i = 0; i < BACKENDTEST_N_FRAMES; i++) {
      gchar *what = g_strdup_printf ("chain, output in %s memory, frame %u",
          cuda_out ? "CUDA" : "system", i);

      backendtest_push_compare (cpu, cuda, inputs[i], cuda_out, what);
      g_free (what);
    }
    fail_unless_equals_int (device_buffers, BACKENDTEST_N_FRAMES);
    gst_harness_teardown (cpu);
    gst_harness_teardown (cuda);
    g_free (cpu_launch);
    g_free (cuda_launch);
  }
  backendtest_unref_all (inputs, BACKENDTEST_N_FRAMES);
}

GST_END_TEST;

static Suite *
pillarfeat_cuda_suite (void)
{
  Suite *s = suite_create ("pillarfeat_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_pillarfeat);
  tcase_add_test (tc, test_chain_in_cuda_memory);
  return s;
}

P3D_CHECK_MAIN (pillarfeat_cuda);
