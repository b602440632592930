/* Fuzz target: voxelize (backend=cpu) through appsrc ! voxelize ! appsink
 * (fuzzelement.c). The input picks the point format, the grid (whole and
 * not whole ranges), max-points and max-voxels, then up to three sweeps
 * of points: whole numbers of points of any float bits, or memories of any
 * number and size. The run must end or fail with a clear error, and every
 * output must be sized as its caps say. */
#include <string.h>

#include "fuzzelement.h"
#include "gstvoxelize.h"

static const gchar *const voxel_sizes[] = { "<0.5,0.5,8>", "<0.4,0.3,1>",
  "<1,1,0.5>", "<2,0.25,4>"
};

static const gchar *const ranges[] = { "<-4,-4,-3,4,4,5>",
  "<0,0,-3,1.0,1.0,1>", "<-8,-2,-1,8,2,1>", "<-1,-1,-1,1,1,1>"
};

typedef struct
{
  guint channels;
  guint buffers;
} Run;

static GstBuffer *
make_points (FuzzReader * reader, gpointer user_data, guint index)
{
  Run *run = user_data;
  P3dTensorLayout layout;

  if (index >= run->buffers)
    return NULL;
  /* a sweep of 0 to 63 points */
  memset (&layout, 0, sizeof (layout));
  layout.n_tensors = 1;
  layout.size[0] = (gsize) fuzz_below (reader, 64) * run->channels * 4;
  return fuzz_buffer (reader, &layout, 1);
}

int LLVMFuzzerTestOneInput (const guint8 * data, size_t size);

int
LLVMFuzzerTestOneInput (const guint8 * data, size_t size)
{
  static const P3dPointFormat formats[] = { P3D_POINT_FORMAT_XYZ,
    P3D_POINT_FORMAT_XYZI, P3D_POINT_FORMAT_XYZIT, P3D_POINT_FORMAT_XYZIR
  };
  P3dPointCloudInfo info;
  GstElement *voxelize;
  FuzzReader reader;
  Run run;

  fuzz_gst_init ();
  fuzz_reader_init (&reader, data, size);
  p3d_point_cloud_info_init (&info);
  p3d_point_cloud_info_set_format (&info, formats[fuzz_below (&reader, 4)]);
  voxelize = g_object_new (P3D_TYPE_VOXELIZE, NULL);
  gst_util_set_object_arg (G_OBJECT (voxelize), "backend", "cpu");
  gst_util_set_object_arg (G_OBJECT (voxelize), "voxel-size",
      voxel_sizes[fuzz_below (&reader, G_N_ELEMENTS (voxel_sizes))]);
  gst_util_set_object_arg (G_OBJECT (voxelize), "range",
      ranges[fuzz_below (&reader, G_N_ELEMENTS (ranges))]);
  g_object_set (voxelize, "max-points", 1 + fuzz_below (&reader, 8),
      "max-voxels", 1 + fuzz_below (&reader, 32), "post-stats",
      (gboolean) fuzz_below (&reader, 2), NULL);
  run.channels = P3D_POINT_CLOUD_INFO_CHANNELS (&info);
  run.buffers = 1 + fuzz_below (&reader, 3);
  fuzz_run_element (voxelize, "sink", p3d_point_cloud_info_to_caps (&info),
      &reader, make_points, &run);
  return 0;
}
