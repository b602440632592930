/* Fuzz target: pillarencode (backend=cpu) through appsrc ! pillarencode !
 * appsink (fuzzelement.c), with the tests' tiny CenterPoint-pillar model
 * written once to a temporary file (fuzzmodel.c). The input picks the caps
 * of the pillar features: F32 or F16, the feature set (mostly the model's
 * mmdet3d-11), max-voxels and max-points, the grid (mostly the model's
 * 16 x 16), then up to three buffers: the three tensors of those caps with
 * any contents (counts beyond the capacity, coordinates off the grid, any
 * float bits) or memories of any number and size. Caps the model cannot
 * take must be refused with a clear error; the run must end or fail with
 * one, and every canvas must be sized as its caps say. */
#include <stdlib.h>

#include "fuzzelement.h"
#include "gstpillarencode.h"
#include "fuzzmodel.h"

typedef struct
{
  P3dTensorLayout layout;
  guint float_tensors;
  guint buffers;
} Run;

/* The model, written at the first input. */
static const gchar *
get_model (void)
{
  static const ModeltestOptions options = { 1, FALSE, 7 };
  static gchar *path;

  if (path == NULL)
    fuzz_models_write (&options, 1, &path);
  return path;
}

static GstBuffer *
make_pillars (FuzzReader * reader, gpointer user_data, guint index)
{
  Run *run = user_data;

  if (index >= run->buffers)
    return NULL;
  return fuzz_buffer (reader, &run->layout, run->float_tensors);
}

int LLVMFuzzerTestOneInput (const guint8 * data, size_t size);

int
LLVMFuzzerTestOneInput (const guint8 * data, size_t size)
{
  static const P3dFeatureSet feature_sets[] = {
    P3D_FEATURE_SET_MMDET3D_11, P3D_FEATURE_SET_MMDET3D_11,
    P3D_FEATURE_SET_MMDET3D_11, P3D_FEATURE_SET_POINTPILLARS_10,
    P3D_FEATURE_SET_POINTPILLARS_11, P3D_FEATURE_SET_MMDET3D_9
  };
  /* the model's grid (three times in four), a finer one, one of two z
   * cells, and one shifted by a cell */
  static const gdouble voxel_sizes[][3] = { {0.5, 0.5, 8.0}, {0.25, 0.5, 8.0},
  {0.5, 0.5, 4.0}, {0.5, 0.5, 8.0}
  };
  static const gdouble ranges[][6] = { {-4, -4, -5, 4, 4, 3}, {-4, -4, -5, 4,
      4, 3}, {-4, -4, -5, 4, 4, 3}, {-3.5, -4, -5, 4.5, 4, 3}
  };
  P3dVoxelsInfo voxels;
  P3dPillarsInfo info;
  P3dDataFormat format;
  GstElement *pillarencode;
  GstCaps *caps;
  FuzzReader reader;
  Run run;
  guint grid, max_voxels, max_points;

  fuzz_gst_init ();
  fuzz_reader_init (&reader, data, size);
  grid = fuzz_below (&reader, 4) < 3 ? 0 : 1 + fuzz_below (&reader, 3);
  /* one after the other: the order of a call's arguments is unspecified,
   * and the corpus must mean the same to every compiler */
  max_voxels = 1 + fuzz_below (&reader, 96);
  max_points = 1 + fuzz_below (&reader, 8);
  p3d_voxels_info_init (&voxels);
  if (!p3d_voxels_info_set (&voxels, P3D_POINT_FORMAT_XYZIT, max_voxels,
          max_points, voxel_sizes[grid], ranges[grid]))
    abort ();
  format = fuzz_below (&reader, 2) ? P3D_DATA_FORMAT_F16 : P3D_DATA_FORMAT_F32;
  p3d_pillars_info_init (&info);
  if (!p3d_pillars_info_set (&info, format,
          feature_sets[fuzz_below (&reader, G_N_ELEMENTS (feature_sets))],
          &voxels))
    abort ();
  caps = p3d_pillars_info_to_caps (&info);
  p3d_pillars_info_get_layout (&info, &run.layout);
  /* F16 features get any 16-bit patterns from the integer filler */
  run.float_tensors = format == P3D_DATA_FORMAT_F32 ?
      1 << P3D_PILLARS_TENSOR_FEATURES : 0;
  run.buffers = 1 + fuzz_below (&reader, 3);

  pillarencode = g_object_new (P3D_TYPE_PILLAR_ENCODE, NULL);
  gst_util_set_object_arg (G_OBJECT (pillarencode), "backend", "cpu");
  g_object_set (pillarencode, "weights", get_model (), NULL);
  fuzz_run_element (pillarencode, "sink", caps, &reader, make_pillars, &run);
  return 0;
}
