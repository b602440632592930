/* CenterPoint decode: the head's maps of every task to scored, labelled 3D
 * boxes, then the model's own test-time NMS per task, as mmdetection3d's
 * CenterHead.predict_by_feat with the CenterPointBBoxCoder computes them.
 *
 * Per task t (classes C_t, label offset L_t = C_0 + ... + C_(t-1)), over the
 * head's H x W cells:
 *  1. score = sigmoid (heatmap[class][y][x]) for every (class, cell).
 *  2. The max_num best (class, cell) pairs by score, descending; equal
 *     scores in order of the flat index class * H * W + y * W + x (torch's
 *     topk leaves ties unspecified; this is our rule).  Only pairs with
 *     score > score_threshold (strict) are kept: since they form a prefix of
 *     that order, this is the coder's top-k then threshold.
 *  3. Each kept pair becomes a box, in float32 and in this order:
 *       x = ((ix + reg[0]) * out_size_factor) * voxel_x + pc_x
 *       y = ((iy + reg[1]) * out_size_factor) * voxel_y + pc_y
 *       z = height (the box centre: mmdetection3d's final boxes put z at
 *           the bottom, theirs = ours - dz / 2)
 *       dx, dy, dz = exp (dim[0..2]) (norm_bbox) or dim as is
 *       yaw = atan2 (rot[0], rot[1]) (sine first, cosine second)
 *       score, label = L_t + class
 *     and is kept when post_center_range[0..2] <= (x, y, z) <=
 *     post_center_range[3..5] on every axis.  A box with a non-finite value
 *     is dropped.  Velocity (vel[0], vel[1]) has no field in P3dcBox3d; it is
 *     written to an optional array beside the boxes.
 *  4. The test-time NMS of the task over its boxes in that order, keeping
 *     at most post_max_size:
 *       circle: box j is suppressed by an earlier kept box i when
 *         (x_i - x_j)^2 + (y_i - y_j)^2 <= min_radius[t] (a squared
 *         distance, as circle_nms compares it), every box considered;
 *       rotate: over the first pre_max_size boxes, suppressed when the
 *         ground-plane IoU of the rotated rectangles (box_overlap.h) is >
 *         nms_threshold, the boxes taken through mmdetection3d's xywhr ->
 *         xyxyr -> xywhr round trip first (x1 = x - dx / 2, x2 = x + dx / 2,
 *         then x = (x1 + x2) / 2, dx = x2 - x1), as nms_bev sees them.
 *     The kind and threshold are the params' for every task, or, with
 *     P3DC_CENTERPOINT_NMS_PER_TASK, each task's own: BEVDet's Scale-NMS,
 *     whose rotate test also sees every box's dx and dy multiplied (in
 *     float) by its class's factor nms_scale[label] before the round trip
 *     (nms_rescale_factor: small objects made larger, so that neighbouring
 *     detections of one pedestrian overlap; large ones smaller).  The
 *     factor changes only what the NMS sees: the boxes output keep their
 *     decoded sizes.
 *  5. The tasks' kept boxes concatenated in task order.
 *
 * sigmoid, exp and atan2 are computed from +, -, *, / only (no library
 * call; multiply-adds never fused), so the CUDA path returns the
 * reference's boxes bit for bit; their accuracy against the correctly
 * rounded functions is a few float ulps (tests/check/libs/
 * centerpoint_decode.c measures it).
 */
#ifndef P3DC_CENTERPOINT_DECODE_H
#define P3DC_CENTERPOINT_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "boxes.h"
#include "convnet.h"
#include "result.h"
#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The maps are read through P3dcMapView (convnet.h), so the decode reads the
 * network's buffers where they are, in either storage. */

#define P3DC_CENTERPOINT_MAX_TASKS 16u
/* (class, cell) pairs of one task: their flat index fits 20 bits */
#define P3DC_CENTERPOINT_MAX_TASK_CELLS (1u << 20)
#define P3DC_CENTERPOINT_MAX_NUM 4096u

typedef enum
{
  P3DC_CENTERPOINT_NMS_NONE = 0, /* every decoded box, up to max_num */
  P3DC_CENTERPOINT_NMS_CIRCLE = 1,
  P3DC_CENTERPOINT_NMS_ROTATE = 2,
  /* each task its own (P3dcCenterPointTask.nms, .nms_threshold): BEVDet's
   * Scale-NMS */
  P3DC_CENTERPOINT_NMS_PER_TASK = 3,
} P3dcCenterPointNms;

typedef struct
{
  uint32_t num_classes;
  /* circle NMS: squared centre distance at or below which a box is
   * suppressed (mmdetection3d's min_radius[t]); double, as the Python
   * float circle_nms compares the float32 distance with */
  double min_radius;
  /* with P3DC_CENTERPOINT_NMS_PER_TASK: this task's NMS (none, circle or
   * rotate) and rotate's IoU threshold; unused otherwise */
  P3dcCenterPointNms nms;
  float nms_threshold;
} P3dcCenterPointTask;

typedef struct
{
  uint32_t n_tasks;
  P3dcCenterPointTask tasks[P3DC_CENTERPOINT_MAX_TASKS];
  /* the head's grid */
  uint32_t height, width;
  /* coder */
  uint32_t max_num;             /* per task, 1 .. P3DC_CENTERPOINT_MAX_NUM */
  float score_threshold;        /* >= 0; kept when score > it */
  float out_size_factor;
  float voxel_size[2];
  float pc_range[2];            /* x, y of the range's start */
  float post_center_range[6];   /* x, y, z min then max */
  int norm_bbox;                /* nonzero: sizes are exp (dim) */
  /* test-time NMS */
  P3dcCenterPointNms nms;
  float nms_threshold;          /* rotate: IoU > it suppresses */
  uint32_t pre_max_size;        /* rotate: 0 = all */
  uint32_t post_max_size;       /* 0 = all (up to max_num) */
  /* rotate: per global label (the sum of the tasks' classes entries,
   * host memory, read when the decoder is made and by the reference), the
   * factor a box's dx and dy are multiplied by for the overlap test;
   * NULL: 1 for every label */
  const float *nms_scale;
} P3dcCenterPointParams;

/* P3DC_OK, P3DC_ERROR_INVALID_ARGUMENT (no task, a task without classes, a
 * zero grid, max_num 0, a negative or NaN threshold, non-finite coder
 * values, a negative radius, an unknown NMS or, per task, one that is
 * neither none, circle nor rotate, a scale factor that is not finite and
 * positive) or P3DC_ERROR_TOO_LARGE. */
P3dcResult p3dc_centerpoint_params_validate (const P3dcCenterPointParams *
    params);

/* Boxes the output can hold: the sum over tasks of min (max_num,
 * post_max_size or max_num). */
uint32_t p3dc_centerpoint_output_capacity (const P3dcCenterPointParams *
    params);

/* One task's maps (views of the head's outputs on the path's memory):
 * heatmap num_classes channels (logits), reg 2, height 1, dim 3, rot 2
 * (sine, cosine), vel 2 (vel.data NULL: none), each H x W. */
typedef struct
{
  P3dcMapView heatmap, reg, height, dim, rot, vel;
} P3dcCenterPointTaskMaps;

/* The output: boxes [capacity] (records beyond the count zeroed), count
 * [1], velocity [capacity][2] (NULL: not written; zero beyond the count). */
typedef struct
{
  P3dcBox3d *boxes;
  uint32_t *count;
  float *velocity;
} P3dcCenterPointOutput;

/* The reference: host maps and output. */
P3dcResult p3dc_centerpoint_decode_cpu (const P3dcCenterPointParams * params,
    const P3dcCenterPointTaskMaps * maps, const P3dcCenterPointOutput * out);

/* The device path: a workspace made once (candidate keys, per-task kept
 * keys, boxes and the NMS masks), then per frame: one kernel scoring every
 * (class, cell) and listing the candidates of each task, the max_num best
 * (score, index) keys of each task selected and sorted (a radix select in
 * one block a task, then each key ranked against the others over many),
 * a decode kernel per task, the suppression masks, and one kernel that
 * reduces them and writes the concatenated output and count.  No
 * allocation, no host synchronization; the count is written on the device.
 * A workspace serves one stream at a time. */
typedef struct _P3dCenterPointDecoder P3dcCenterPointDecoder;

P3dcResult p3dc_centerpoint_decoder_new (const P3dcCenterPointParams * params,
    P3dcCenterPointDecoder ** decoder);
void p3dc_centerpoint_decoder_free (P3dcCenterPointDecoder * decoder);

/* Device maps (@maps: n_tasks entries, a host array) and output (4-byte
 * aligned). */
P3dcResult p3dc_centerpoint_decode_cuda (P3dcCenterPointDecoder * decoder,
    const P3dcCenterPointTaskMaps * maps, const P3dcCenterPointOutput * out,
    P3dcCudaStream stream);

#ifdef __cplusplus
}
#endif

#endif /* P3DC_CENTERPOINT_DECODE_H */
