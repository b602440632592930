/* Fuzz target: bevrender through appsrc ! bevrender ! appsink
 * (fuzzelement.c), one input pad of a kind the input picks: points of any
 * format, voxels, pillar features, 3D boxes or BEV features, with caps of
 * small sizes, then up to three buffers of those caps with any contents
 * (counts beyond the capacity, coordinates off the grid, NaN, infinite and
 * huge values), or memories of any number and size. The picture is small
 * (64 x 48) so that runs are quick. The run must end or fail with a clear
 * error, and every picture must be as large as its caps say. */
#include <stdlib.h>
#include <string.h>

#include "fuzzelement.h"
#include "gstbevrender.h"

typedef struct
{
  P3dTensorLayout layout;
  guint float_tensors;
  guint channels;               /* points: a variable number of them */
  guint buffers;
} Run;

static GstBuffer *
make_input (FuzzReader * reader, gpointer user_data, guint index)
{
  Run *run = user_data;
  P3dTensorLayout layout = run->layout;

  if (index >= run->buffers)
    return NULL;
  if (run->channels > 0)
    layout.size[0] = (gsize) fuzz_below (reader, 64) * run->channels * 4;
  return fuzz_buffer (reader, &layout, run->float_tensors);
}

int LLVMFuzzerTestOneInput (const guint8 * data, size_t size);

int
LLVMFuzzerTestOneInput (const guint8 * data, size_t size)
{
  static const gdouble voxel_size[3] = { 0.5, 0.5, 2.0 };
  static const gdouble range[6] = { -4.0, -4.0, -3.0, 4.0, 4.0, 1.0 };
  static const gchar *const features_caps[] = {
    "application/x-bev-features, format=F32, channels=2, width=4, height=4",
    "application/x-bev-features, format=F16, channels=1, width=8, height=2, "
        "range=<-4.0,-4.0,-3.0,4.0,4.0,1.0>",
  };
  /* the default view, a view of the grid, a huge one, a tiny scale */
  static const gchar *const views[][2] = { {NULL, NULL},
  {"range", "<-4,-4,4,4>"}, {"range", "<0,-1e30,1e30,1e30>"},
  {"metres-per-pixel", "1e-6"}
  };
  GstElement *render;
  GstCaps *caps = NULL;
  const gchar *pad = NULL;
  FuzzReader reader;
  Run run;
  guint kind, view;

  fuzz_gst_init ();
  fuzz_reader_init (&reader, data, size);
  memset (&run, 0, sizeof (run));
  kind = fuzz_below (&reader, 5);
  if (kind == 0) {
    static const P3dPointFormat formats[] = { P3D_POINT_FORMAT_XYZ,
      P3D_POINT_FORMAT_XYZI, P3D_POINT_FORMAT_XYZIT
    };
    P3dPointCloudInfo info;

    p3d_point_cloud_info_init (&info);
    p3d_point_cloud_info_set_format (&info, formats[fuzz_below (&reader,
                G_N_ELEMENTS (formats))]);
    caps = p3d_point_cloud_info_to_caps (&info);
    run.layout.n_tensors = 1;
    run.channels = P3D_POINT_CLOUD_INFO_CHANNELS (&info);
    run.float_tensors = 1;
    pad = "points_%u";
  } else if (kind <= 2) {
    P3dVoxelsInfo voxels;
    /* read one after the other: the order of a call's arguments is
     * unspecified, and the corpus must mean the same to every compiler */
    guint max_voxels = 1 + fuzz_below (&reader, 16);
    guint max_points = 1 + fuzz_below (&reader, 4);

    p3d_voxels_info_init (&voxels);
    if (!p3d_voxels_info_set (&voxels, P3D_POINT_FORMAT_XYZI, max_voxels,
            max_points, voxel_size, range))
      abort ();
    if (kind == 1) {
      caps = p3d_voxels_info_to_caps (&voxels);
      p3d_voxels_info_get_layout (&voxels, &run.layout);
    } else {
      P3dPillarsInfo pillars;

      p3d_pillars_info_init (&pillars);
      if (!p3d_pillars_info_set (&pillars, P3D_DATA_FORMAT_F32,
              P3D_FEATURE_SET_POINTPILLARS_10, &voxels))
        abort ();
      caps = p3d_pillars_info_to_caps (&pillars);
      p3d_pillars_info_get_layout (&pillars, &run.layout);
    }
    run.float_tensors = 1;
    pad = "voxels_%u";
  } else if (kind == 3) {
    P3dBoxes3dInfo info;

    p3d_boxes3d_info_init (&info);
    info.max_boxes = 1 + fuzz_below (&reader, 16);
    caps = p3d_boxes3d_info_to_caps (&info);
    p3d_boxes3d_info_get_layout (&info, &run.layout);
    run.float_tensors = 1;
    pad = "boxes_%u";
  } else {
    P3dBevFeaturesInfo info;

    caps = gst_caps_from_string (features_caps[fuzz_below (&reader,
                G_N_ELEMENTS (features_caps))]);
    if (!p3d_bev_features_info_from_caps (&info, caps)
        || !p3d_bev_features_info_get_layout (&info, &run.layout))
      abort ();
    run.float_tensors = 1;
    pad = "features_%u";
  }
  run.buffers = 1 + fuzz_below (&reader, 3);

  render = g_object_new (P3D_TYPE_BEV_RENDER, NULL);
  g_object_set (render, "width", 64, "height", 48, NULL);
  view = fuzz_below (&reader, G_N_ELEMENTS (views));
  if (views[view][0] != NULL)
    gst_util_set_object_arg (G_OBJECT (render), views[view][0], views[view][1]);
  fuzz_run_element (render, pad, caps, &reader, make_input, &run);
  return 0;
}
