/* Fuzz target: bevdetect (backend=cpu) through appsrc ! bevdetect ! appsink
 * (fuzzelement.c), with the tests' tiny CenterPoint-pillar models (one
 * task with circle NMS, two tasks with rotated NMS) written once to
 * temporary files (fuzzmodel.c). The input picks the model, model-nms,
 * and the caps of the canvas: F32 or F16, channels, width and height
 * (mostly the model's 8 x 16 x 16), layout yx or xy, with or without a
 * range; then up to three buffers: the canvas those caps describe with any
 * contents (NaN, infinities, huge values) or memories of any number and
 * size. Caps the model cannot take must be refused with a clear error;
 * the run must end or fail with one, and every box buffer must be sized as
 * its caps say with its count within the capacity. */
#include <stdlib.h>

#include "fuzzelement.h"
#include "gstbevdetect.h"
#include "fuzzmodel.h"

typedef struct
{
  P3dTensorLayout layout;
  guint float_tensors;
  guint buffers;
} Run;

#define N_MODELS 2

/* Model @index, all written at the first input. */
static const gchar *
get_model (guint index)
{
  /* one task with circle NMS; two tasks with rotated NMS */
  static const ModeltestOptions options[N_MODELS] = { {1, FALSE, 11},
  {2, TRUE, 12}
  };
  static gchar *paths[N_MODELS];

  if (paths[0] == NULL)
    fuzz_models_write (options, N_MODELS, paths);
  return paths[index];
}

static GstBuffer *
make_canvas (FuzzReader * reader, gpointer user_data, guint index)
{
  Run *run = user_data;

  if (index >= run->buffers)
    return NULL;
  return fuzz_buffer (reader, &run->layout, run->float_tensors);
}

/* The model's value three times in four, else one in [1, @most]. */
static guint
mostly (FuzzReader * reader, guint model_value, guint most)
{
  return fuzz_below (reader, 4) < 3 ? model_value : 1 + fuzz_below (reader,
      most);
}

int LLVMFuzzerTestOneInput (const guint8 * data, size_t size);

int
LLVMFuzzerTestOneInput (const guint8 * data, size_t size)
{
  P3dBevFeaturesInfo info;
  GstElement *bevdetect;
  GstCaps *caps;
  FuzzReader reader;
  Run run;
  guint model, i;

  fuzz_gst_init ();
  fuzz_reader_init (&reader, data, size);
  model = fuzz_below (&reader, N_MODELS);
  p3d_bev_features_info_init (&info);
  info.format = fuzz_below (&reader, 2) ? P3D_DATA_FORMAT_F16 :
      P3D_DATA_FORMAT_F32;
  info.channels = mostly (&reader, MODELTEST_PFN_OUT, 16);
  info.width = mostly (&reader, MODELTEST_GRID, 32);
  info.height = mostly (&reader, MODELTEST_GRID, 32);
  info.layout = fuzz_below (&reader, 8) == 7 ? P3D_BEV_FEATURES_LAYOUT_XY :
      P3D_BEV_FEATURES_LAYOUT_YX;
  /* a range: the model's, or another one */
  if (fuzz_below (&reader, 4) == 3) {
    static const gdouble model_range[6] = { -4, -4, -5, 4, 4, 3 };

    info.has_range = TRUE;
    for (i = 0; i < 6; i++)
      info.range[i] = model_range[i] + (fuzz_below (&reader, 4) == 3 ?
          fuzz_below (&reader, 3) : 0);
  }
  caps = p3d_bev_features_info_to_caps (&info);
  if (caps == NULL || !p3d_bev_features_info_get_layout (&info, &run.layout))
    abort ();
  run.float_tensors = info.format == P3D_DATA_FORMAT_F32 ? 1 : 0;
  run.buffers = 1 + fuzz_below (&reader, 3);

  bevdetect = g_object_new (P3D_TYPE_BEV_DETECT, NULL);
  gst_util_set_object_arg (G_OBJECT (bevdetect), "backend", "cpu");
  g_object_set (bevdetect, "weights", get_model (model), "model-nms",
      fuzz_below (&reader, 2) == 0, NULL);
  fuzz_run_element (bevdetect, "sink", caps, &reader, make_canvas, &run);
  return 0;
}
