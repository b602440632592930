/* Fuzz target: nms (backend=cpu) through appsrc ! nms ! appsink
 * (fuzzelement.c). The input picks 3D or 2D boxes and their capacity, the
 * mode (iou for 2D; bev-rotated, bev-aligned, circle for 3D, both IoU
 * rules), thresholds, pre-max, post-max, per-class and offset, then up to
 * three buffers: the records and count of those caps with any contents
 * (counts beyond the capacity, NaN, infinite and huge boxes, any labels),
 * or memories of any number and size. The run must end or fail with a
 * clear error, and every output must be sized as its caps say. */
#include "fuzzelement.h"
#include "gstnms.h"

typedef struct
{
  P3dTensorLayout layout;
  guint buffers;
} Run;

static GstBuffer *
make_boxes (FuzzReader * reader, gpointer user_data, guint index)
{
  Run *run = user_data;

  if (index >= run->buffers)
    return NULL;
  /* the records are floats but for the label: any bits there is fine */
  return fuzz_buffer (reader, &run->layout, 1 << P3D_BOXES_TENSOR_RECORDS);
}

int LLVMFuzzerTestOneInput (const guint8 * data, size_t size);

int
LLVMFuzzerTestOneInput (const guint8 * data, size_t size)
{
  static const gchar *const modes_3d[] = { "bev-rotated", "bev-aligned",
    "circle"
  };
  static const gfloat thresholds[] = { 0.0f, 0.01f, 0.5f, 1.0f };
  GstElement *nms;
  GstCaps *caps;
  FuzzReader reader;
  Run run;
  guint max_boxes, pre_max, post_max;
  gfloat iou, distance, score;
  gboolean boxes2d, per_class;

  fuzz_gst_init ();
  fuzz_reader_init (&reader, data, size);
  boxes2d = fuzz_below (&reader, 2);
  max_boxes = 1 + fuzz_below (&reader, 48);
  nms = g_object_new (P3D_TYPE_NMS, NULL);
  gst_util_set_object_arg (G_OBJECT (nms), "backend", "cpu");
  if (boxes2d) {
    P3dBoxes2dInfo info;

    p3d_boxes2d_info_init (&info);
    info.max_boxes = max_boxes;
    caps = p3d_boxes2d_info_to_caps (&info);
    p3d_boxes2d_info_get_layout (&info, &run.layout);
    gst_util_set_object_arg (G_OBJECT (nms), "mode", "iou");
    g_object_set (nms, "offset", fuzz_below (&reader, 2), NULL);
  } else {
    P3dBoxes3dInfo info;

    p3d_boxes3d_info_init (&info);
    info.max_boxes = max_boxes;
    caps = p3d_boxes3d_info_to_caps (&info);
    p3d_boxes3d_info_get_layout (&info, &run.layout);
    gst_util_set_object_arg (G_OBJECT (nms), "mode",
        modes_3d[fuzz_below (&reader, G_N_ELEMENTS (modes_3d))]);
    gst_util_set_object_arg (G_OBJECT (nms), "iou-rule",
        fuzz_below (&reader, 2) ? "mmcv" : "exact");
  }
  /* one after the other: the order of a call's arguments is unspecified,
   * and the corpus must mean the same to every compiler */
  iou = thresholds[fuzz_below (&reader, G_N_ELEMENTS (thresholds))];
  distance = thresholds[fuzz_below (&reader, G_N_ELEMENTS (thresholds))];
  score = thresholds[fuzz_below (&reader, G_N_ELEMENTS (thresholds))];
  pre_max = fuzz_below (&reader, 8);
  post_max = fuzz_below (&reader, 8);
  per_class = fuzz_below (&reader, 2);
  g_object_set (nms, "iou-threshold", iou, "distance-threshold", distance,
      "score-threshold", score, "pre-max", pre_max, "post-max", post_max,
      "per-class", per_class, NULL);
  run.buffers = 1 + fuzz_below (&reader, 3);
  fuzz_run_element (nms, "sink", caps, &reader, make_boxes, &run);
  return 0;
}
