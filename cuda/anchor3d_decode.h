/* Anchor-head decode: the maps of a PointPillars / SECOND anchor head to
 * scored, labelled 3D boxes, then the model's own test-time NMS, as
 * OpenPCDet's AnchorHeadSingle with its post_processing and mmdetection3d's
 * Anchor3DHead with its test_cfg compute them.
 *
 * Anchors.  The head's H x W map has A anchors at every location, made once
 * at model load by p3dc_anchor3d_table_init() from anchor sets: a set is a
 * ground range, the height of the anchors' bottom face, sizes and
 * rotations, and a placement of the anchor centres along each axis (n =
 * W for x, H for y; double arithmetic, rounded to float once):
 *   SPAN     start + i (end - start) / (n - 1): the first on the range's
 *            start, the last on its end (OpenPCDet align_center False,
 *            mmdetection3d's Anchor3DRangeGenerator);
 *   CENTERS  start + (i + 1/2) (end - start) / n: the centres of n equal
 *            cells (OpenPCDet align_center True, mmdetection3d's
 *            AlignedAnchor3DRangeGenerator);
 *   CORNERS  start + i (end - start) / n (AlignedAnchor3DRangeGenerator
 *            with align_corner).
 * The frameworks compute these positions in float32 on the device (arange,
 * linspace); theirs can be one float ulp away from ours (7.6e-6 m at 69 m).
 * The anchors of a location are numbered set by set, within a set size by
 * size, within a size rotation by rotation (OpenPCDet's classes concatenated
 * on the size axis, mmdetection3d's ranges likewise): anchor k of location
 * (y, x) has the flat index a = (y W + x) A + k.  Its values, float32:
 *   x, y as placed; z = bottom + dz / 2 (the centre, two roundings as both
 *   frameworks make them); dx, dy, dz, yaw the set's; and
 *   diagonal = sqrt (dx dx + dy dy).
 *
 * Maps (P3dcMapView, convnet.h, so the network's buffers are read where
 * they are, F32 NCHW or F16 NHWC): cls A x C logits (channel k C + c),
 * box A x code_size deltas (channel k code_size + j), dir A x dir_bins
 * logits (channel k dir_bins + b; none when dir_bins is 0).
 *
 * Per anchor, from its maps, in float32 (s_c = sigmoid (cls logit c)):
 *  1. Box (ResidualCoder, DeltaXYZWLHRBBoxCoder; t = its deltas):
 *       x = t0 diagonal + xa, y = t1 diagonal + ya, z = t2 dza + za,
 *       dx = exp (t3) dxa, dy = exp (t4) dya, dz = exp (t5) dza,
 *       r = t6 + yawa (each product and sum rounded on its own);
 *     mmdetection3d's boxes put z at the bottom: it computes
 *       z_bottom = z - dz / 2, and our centre is z_bottom + dz / 2;
 *     with code_size 9 the velocity is (t7 + 0, t8 + 0).
 *  2. Direction (dir_bins > 0): d = the first bin of the largest logit (a
 *     NaN counts as the largest); with period P = 2 pi / dir_bins
 *     (mmdetection3d: pi, with 2 bins), as float, and PyTorch's CUDA
 *     division by a scalar (a multiplication by its float reciprocal):
 *       v = r - dir_offset,
 *       q = floor (v * (1 / P) + dir_limit_offset),
 *       yaw = ((v - q P) + dir_offset) + P d;
 *     else yaw = r.
 *  3. A box with a non-finite value is dropped (the frameworks would carry
 *     it on).
 *
 * Lists, each sorted by score descending with ties in the order given (torch's
 * topk and sort leave ties unspecified; this is our rule), first pre_max:
 *  OpenPCDet (AnchorHeadSingle, post_processing):
 *    class-agnostic (MULTI_CLASSES_NMS False): one list of the anchors with
 *      score = max_c s_c >= score_threshold (a NaN s_c drops the anchor),
 *      label the first class of that maximum, ties by anchor index;
 *    per class (MULTI_CLASSES_NMS True): list c holds the anchors with
 *      s_c >= score_threshold, label c, ties by anchor index.
 *    The NMS (nms_gpu) sees the box with its final yaw.
 *  mmdetection3d (Anchor3DHead._predict_by_feat_single, box3d_multiclass_nms):
 *    the nms_pre (pre_max) anchors of largest max_c s_c, ties by anchor
 *    index, then list c holds those with s_c > score_threshold (strictly),
 *    label c, ties by their rank among the nms_pre.  (mmdetection3d takes
 *    the top nms_pre of every anchor, thresholded or not; an anchor whose
 *    largest score is not above the threshold never yields a box, so only
 *    those above it are listed: the same boxes.)  The NMS (nms_bev) sees
 *    the box with the yaw r before the direction, through mmdetection3d's
 *    xywhr -> xyxyr -> xywhr round trip (x1 = x - dx / 2, x2 = x + dx / 2,
 *    then x = (x1 + x2) / 2, dx = x2 - x1); nms_normal_bev (ALIGNED) sees
 *    the x1 y1 x2 y2 rectangle.
 * NMS, per list, greedy by the list's order: a box is kept unless a kept
 * box of its list overlaps it by IoU > nms_threshold (strictly):
 *   ROTATED       the exact ground-plane IoU of the rotated rectangles
 *                 (box_overlap.h; mmcv's nms_rotated);
 *   ROTATED_MMCV  mmcv's nms3d rule, that of OpenPCDet's iou3d_nms
 *                 (box_overlap.h);
 *   ALIGNED       the axis-aligned IoU of the rectangles, yaw ignored;
 *   NONE          no suppression: every decoded box of the list is kept
 *                 (the frameworks have no such mode; it is for a NMS
 *                 downstream, bevdetect's model-nms=false),
 * at most post_max kept per list.  Output:
 *  OpenPCDet: the lists' kept boxes one list after another.
 *  mmdetection3d: the same, and when they are more than post_max (max_num)
 *    the post_max best by score, ties in that order (a stable sort).
 *  mmdetection3d's min_bbox_size and nms_across_levels are not read by its
 *  Anchor3DHead, so they have no parameter here.
 *
 * sigmoid and exp are centerpoint_decode's (+, -, *, / only; no fused
 * multiply-add), so the CUDA path returns the reference's boxes bit for
 * bit.  Labels are 0-based class indices (OpenPCDet's 1-based pred_labels
 * less one).
 */
#ifndef P3DC_ANCHOR3D_DECODE_H
#define P3DC_ANCHOR3D_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "boxes.h"
#include "convnet.h"
#include "result.h"
#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* anchors at one location, classes, the lists' length */
#define P3DC_ANCHOR3D_MAX_ANCHORS 64u
#define P3DC_ANCHOR3D_MAX_CLASSES 32u
#define P3DC_ANCHOR3D_MAX_PRE 4096u
/* H x W x A: the flat anchor index fits 24 bits, one value spare */
#define P3DC_ANCHOR3D_MAX_CELLS ((1u << 24) - 1u)
/* per anchor set */
#define P3DC_ANCHOR3D_MAX_SIZES 8u
#define P3DC_ANCHOR3D_MAX_ROTATIONS 8u

typedef enum
{
  P3DC_ANCHOR3D_SPAN = 0,
  P3DC_ANCHOR3D_CENTERS = 1,
  P3DC_ANCHOR3D_CORNERS = 2,
} P3dcAnchor3dPlacement;

typedef struct
{
  /* start and end of the anchor centres' range along x and along y */
  double x_range[2], y_range[2];
  /* height of the anchors' bottom face (OpenPCDet anchor_bottom_heights,
   * mmdetection3d's range z: both frameworks' anchors stand on it) */
  double bottom;
  uint32_t n_sizes;
  double sizes[P3DC_ANCHOR3D_MAX_SIZES][3];     /* dx, dy, dz */
  uint32_t n_rotations;
  double rotations[P3DC_ANCHOR3D_MAX_ROTATIONS];
  P3dcAnchor3dPlacement placement;
} P3dcAnchor3dSet;

/* One anchor of a location, as float32 (z the centre). */
typedef struct
{
  float z, dx, dy, dz, yaw, diagonal;
} P3dcAnchor3dShape;

/* The anchors of a head map, made once. */
typedef struct
{
  uint32_t n_anchors;           /* per location, A */
  uint32_t height, width;
  P3dcAnchor3dShape shapes[P3DC_ANCHOR3D_MAX_ANCHORS];
  float *x;                     /* [A][width] centres along x */
  float *y;                     /* [A][height] centres along y */
} P3dcAnchor3dTable;

/* Fills @table from @n_sets sets for an @height x @width map.
 * P3DC_ERROR_INVALID_ARGUMENT (no set, a set without sizes or rotations,
 * a non-finite or non-positive size, a non-finite range, bottom or
 * rotation, an unknown placement, SPAN with a map of one cell along an
 * axis, a zero map), P3DC_ERROR_TOO_LARGE (more than
 * P3DC_ANCHOR3D_MAX_ANCHORS anchors, sizes or rotations, or more than
 * P3DC_ANCHOR3D_MAX_CELLS anchors in all), P3DC_ERROR_OUT_OF_MEMORY.  On
 * failure @table holds nothing to clear. */
P3dcResult p3dc_anchor3d_table_init (P3dcAnchor3dTable * table,
    const P3dcAnchor3dSet * sets, uint32_t n_sets, uint32_t height,
    uint32_t width);
void p3dc_anchor3d_table_clear (P3dcAnchor3dTable * table);

typedef enum
{
  P3DC_ANCHOR3D_OPENPCDET = 0,
  P3DC_ANCHOR3D_MMDET3D = 1,
} P3dcAnchor3dRules;

typedef enum
{
  P3DC_ANCHOR3D_NMS_ROTATED = 0,
  P3DC_ANCHOR3D_NMS_ROTATED_MMCV = 1,
  P3DC_ANCHOR3D_NMS_ALIGNED = 2,
  P3DC_ANCHOR3D_NMS_NONE = 3,
} P3dcAnchor3dNms;

typedef struct
{
  P3dcAnchor3dRules rules;
  uint32_t num_classes;         /* 1 .. P3DC_ANCHOR3D_MAX_CLASSES */
  uint32_t code_size;           /* 7, or 9 (velocity) */
  uint32_t dir_bins;            /* 0 (no direction classifier), 1 .. 16;
                                 * mmdetection3d: 0 or 2 */
  float dir_offset, dir_limit_offset;
  float score_threshold;        /* >= 0 */
  int per_class;                /* OpenPCDet MULTI_CLASSES_NMS;
                                 * mmdetection3d: ignored (always) */
  P3dcAnchor3dNms nms;
  float nms_threshold;          /* >= 0 */
  uint32_t pre_max;             /* 1 .. P3DC_ANCHOR3D_MAX_PRE: OpenPCDet
                                 * NMS_PRE_MAXSIZE, mmdetection3d nms_pre */
  uint32_t post_max;            /* >= 1: OpenPCDet NMS_POST_MAXSIZE (per
                                 * list), mmdetection3d max_num */
} P3dcAnchor3dParams;

/* P3DC_OK, P3DC_ERROR_INVALID_ARGUMENT (a value out of the ranges above,
 * NaN or infinite thresholds or offsets, an unknown enum, an empty
 * table) or P3DC_ERROR_TOO_LARGE. */
P3dcResult p3dc_anchor3d_params_validate (const P3dcAnchor3dParams * params,
    const P3dcAnchor3dTable * table);

/* Boxes the output can hold: OpenPCDet min (pre_max, post_max) per list
 * (num_classes lists per class, else one); mmdetection3d min (post_max,
 * num_classes x pre_max).  0 for invalid parameters. */
uint32_t p3dc_anchor3d_output_capacity (const P3dcAnchor3dParams * params,
    const P3dcAnchor3dTable * table);

/* Views of the head's three outputs on the path's memory. */
typedef struct
{
  P3dcMapView cls, box, dir;    /* dir.data NULL when dir_bins is 0 */
} P3dcAnchor3dMaps;

/* The output: boxes [capacity] (records beyond the count zeroed), count
 * [1], velocity [capacity][2] (NULL: not written; zero beyond the count,
 * and everywhere when code_size is 7). */
typedef struct
{
  P3dcBox3d *boxes;
  uint32_t *count;
  float *velocity;
} P3dcAnchor3dOutput;

/* The reference: host maps and output. */
P3dcResult p3dc_anchor3d_decode_cpu (const P3dcAnchor3dParams * params,
    const P3dcAnchor3dTable * table, const P3dcAnchor3dMaps * maps,
    const P3dcAnchor3dOutput * out);

/* The device path: a workspace made once (the anchors uploaded, candidate
 * keys, lists, boxes and NMS masks), then per frame: one kernel scoring
 * every anchor and listing the candidates, the pre_max best of each list
 * selected and sorted (a radix select in one block a list, then each key
 * ranked against the others over many) and decoded (for mmdetection3d,
 * the nms_pre best, then a list per class split from them, sorted and
 * decoded), then the NMS: OpenPCDet's class-agnostic list under a
 * rotated NMS goes to the library's nms (nms.h: a workspace of pre_max
 * boxes, its graph built by the first frame), every other list to the
 * suppression masks and one kernel that walks them and writes the output
 * and its count.  No allocation after the first frame, no host
 * synchronization; the count is written on the device.  A workspace serves
 * one stream at a time. */
typedef struct _P3dcAnchor3dDecoder P3dcAnchor3dDecoder;

P3dcResult p3dc_anchor3d_decoder_new (const P3dcAnchor3dParams * params,
    const P3dcAnchor3dTable * table, P3dcAnchor3dDecoder ** decoder);
void p3dc_anchor3d_decoder_free (P3dcAnchor3dDecoder * decoder);

/* Device maps and output (4-byte aligned). */
P3dcResult p3dc_anchor3d_decode_cuda (P3dcAnchor3dDecoder * decoder,
    const P3dcAnchor3dMaps * maps, const P3dcAnchor3dOutput * out,
    P3dcCudaStream stream);

#ifdef __cplusplus
}
#endif

#endif /* P3DC_ANCHOR3D_DECODE_H */
