/* Fuzz target: pillarfeat (backend=cpu) through appsrc ! pillarfeat !
 * appsink (fuzzelement.c). The input picks the point format, the grid,
 * max-points and max-voxels of the voxels' caps, the feature set and the
 * output precision, then up to three buffers: the four tensors of those
 * caps with any contents (counts beyond the capacity, coordinates off the
 * grid, any float bits), or memories of any number and size. The run must
 * end or fail with a clear error, and every output must be sized as its
 * caps say. */
#include <stdlib.h>

#include "fuzzelement.h"
#include "gstpillarfeat.h"

typedef struct
{
  P3dTensorLayout layout;
  guint buffers;
} Run;

static GstBuffer *
make_voxels (FuzzReader * reader, gpointer user_data, guint index)
{
  Run *run = user_data;

  if (index >= run->buffers)
    return NULL;
  return fuzz_buffer (reader, &run->layout, 1 << P3D_VOXELS_TENSOR_POINTS);
}

static void
add_ghost_pad (GstElement * bin, GstElement * element, const gchar * name)
{
  GstPad *pad = gst_element_get_static_pad (element, name);

  gst_element_add_pad (bin, gst_ghost_pad_new (name, pad));
  gst_object_unref (pad);
}

int LLVMFuzzerTestOneInput (const guint8 * data, size_t size);

int
LLVMFuzzerTestOneInput (const guint8 * data, size_t size)
{
  static const P3dPointFormat formats[] = { P3D_POINT_FORMAT_XYZ,
    P3D_POINT_FORMAT_XYZI, P3D_POINT_FORMAT_XYZIT, P3D_POINT_FORMAT_XYZIR
  };
  static const gchar *const feature_sets[] = { "pointpillars-10",
    "mmdet3d-9", "pointpillars-11", "mmdet3d-11"
  };
  static const gdouble voxel_sizes[][3] = { {0.5, 0.5, 8.0}, {0.4, 0.3, 1.0},
  {0.16, 0.16, 4.0}
  };
  static const gdouble ranges[][6] = { {-4, -4, -3, 4, 4, 5}, {0, 0, -3, 1, 1,
      1}, {0.0, -39.68, -3.0, 69.12, 39.68, 1.0}
  };
  P3dVoxelsInfo info;
  P3dPointFormat format;
  GstElement *pillarfeat, *bin, *filter;
  GstCaps *caps;
  FuzzReader reader;
  Run run;
  guint grid, max_voxels, max_points;

  fuzz_gst_init ();
  fuzz_reader_init (&reader, data, size);
  p3d_voxels_info_init (&info);
  grid = fuzz_below (&reader, G_N_ELEMENTS (ranges));
  /* one after the other: the order of a call's arguments is unspecified,
   * and the corpus must mean the same to every compiler */
  format = formats[fuzz_below (&reader, 4)];
  max_voxels = 1 + fuzz_below (&reader, 16);
  max_points = 1 + fuzz_below (&reader, 8);
  if (!p3d_voxels_info_set (&info, format, max_voxels, max_points,
          voxel_sizes[grid], ranges[grid]))
    abort ();
  caps = p3d_voxels_info_to_caps (&info);
  /* one input in eight comes without the derived effective-range */
  if (fuzz_below (&reader, 8) == 0)
    gst_structure_remove_field (gst_caps_get_structure (caps, 0),
        "effective-range");
  p3d_voxels_info_get_layout (&info, &run.layout);
  run.buffers = 1 + fuzz_below (&reader, 3);

  /* pillarfeat then a capsfilter that picks F32 or F16, in one bin */
  pillarfeat = g_object_new (P3D_TYPE_PILLAR_FEAT, NULL);
  gst_util_set_object_arg (G_OBJECT (pillarfeat), "backend", "cpu");
  gst_util_set_object_arg (G_OBJECT (pillarfeat), "features",
      feature_sets[fuzz_below (&reader, G_N_ELEMENTS (feature_sets))]);
  filter = gst_element_factory_make ("capsfilter", NULL);
  gst_util_set_object_arg (G_OBJECT (filter), "caps",
      fuzz_below (&reader, 2) ? "application/x-pillar-features, format=F16" :
      "application/x-pillar-features, format=F32");
  bin = gst_bin_new (NULL);
  gst_bin_add_many (GST_BIN (bin), pillarfeat, filter, NULL);
  gst_element_link (pillarfeat, filter);
  add_ghost_pad (bin, pillarfeat, "sink");
  add_ghost_pad (bin, filter, "src");
  fuzz_run_element (bin, "sink", caps, &reader, make_voxels, &run);
  return 0;
}
