/* voxelize's CUDA path as an element: backend=cuda gives exactly the bytes
 * of backend=cpu on the same sweeps, with the output negotiated in system
 * memory and in memory:CUDAMemory (read back through the host copy of a
 * map), over frames whose voxel counts go up and down through the same pool
 * (the output_clean steady state), on the dense cell table of pillars, a 3D
 * grid and a grid large enough for the hash table; active-backend reads
 * cuda. Needs a GPU. */
#include <gst/check/gstcheck.h>

#include "p3dtest-backend.h"
#include "p3dtest.h"

GST_START_TEST (test_voxelize)
{
  static const gchar *const properties[] = {
    /* KITTI pillars (dense cell table), saturated */
    "max-points=8 max-voxels=500",
    /* a 3D grid of 52,500 cells */
    "voxel-size=\"<0.2,0.2,0.2>\" range=\"<-2,-3,-3.5,12,3,1.5>\" "
        "max-points=4 max-voxels=20000",
    /* 3.4 million cells: the hash table */
    "voxel-size=\"<0.05,0.05,0.05>\" range=\"<-2,-3,-3.5,12,3,1.5>\" "
        "max-points=2 max-voxels=8000",
  };
  GstBuffer *inputs[BACKENDTEST_N_FRAMES];
  guint p, i;

  for (i = 0; i < BACKENDTEST_N_FRAMES; i++)
    inputs[i] = backendtest_points_buffer (100 + i,
        backendtest_frame_points[i], NULL);
  for (p = 0; p < G_N_ELEMENTS (properties); p++) {
    BackendtestSetup setup = { "voxelize", properties[p],
      "application/x-point-cloud, format=xyzi", "application/x-voxels", ""
    };

    backendtest_compare (&setup, inputs, BACKENDTEST_N_FRAMES);
  }
  backendtest_unref_all (inputs, BACKENDTEST_N_FRAMES);
}

GST_END_TEST;

static Suite *
voxelize_cuda_suite (void)
{
  Suite *s = suite_create ("voxelize_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_voxelize);
  return s;
}

P3D_CHECK_MAIN (voxelize_cuda);
