/* gst-perception compute library: non-maximum suppression of 3D and 2D
 * boxes (docs/elements/nms.md), a C reference and a CUDA implementation that keeps
 * exactly the same boxes.
 *
 * What both compute, in this order:
 *  1. Drop bad records: a record with a NaN or infinite float field
 *     (coordinates, sizes, yaw, score), a 3D box with a negative dx, dy or
 *     dz, or a 2D box with x2 < x1 or y2 < y1.  Zero sizes are valid.
 *  2. Drop records whose score is below score_threshold (score < threshold).
 *  3. Sort by score, descending and stable: equal scores keep their input
 *     order, and -0.0 equals +0.0.
 *  4. Keep the first pre_max (0: all).
 *  5. Greedy suppression, as torchvision, mmcv and OpenPCDet: walking down
 *     the sorted list, a box is kept unless a box kept before it suppresses
 *     it; with per_class, only a box of the same label can.  A kept box
 *     suppresses a later one when
 *       iou, bev-aligned, bev-rotated: their IoU > iou_threshold (strict);
 *         a box without area (whose area rounds to 0 in float) has IoU 0
 *         with every box, so it neither suppresses nor is suppressed;
 *         bev-rotated computes the IoU by iou_rule: the exact intersection
 *         of the two rectangles (P3DC_NMS_IOU_RULE_EXACT), or mmcv's nms3d
 *         rule (P3DC_NMS_IOU_RULE_MMCV, box_overlap.h), which counts corners
 *         up to 1 cm outside the other box and so keeps different boxes
 *         near the threshold, as models evaluated with mmcv expect;
 *       circle: dx * dx + dy * dy < distance_threshold * distance_threshold
 *         (strict), dx and dy the differences of the centres in metres,
 *         computed in float.  CenterPoint's circle_nms takes a squared
 *         radius (its min_radius of 4 is a 2 m radius) and suppresses at
 *         equal distance too: pass sqrt of CenterPoint's value here.
 *  6. Output the first min (kept, post_max, out_capacity) kept boxes
 *     (post_max 0: no limit), best score first.
 *
 * Overlaps are computed by the functions of box_overlap.h on both paths, in
 * the same order of arguments (the earlier box first), so the two paths make
 * the same decision on every pair.
 *
 * Huge boxes.  Any record whose floats are all finite takes part, however
 * large they are, and behaves as the same box near the origin would:
 *  - bev-aligned, bev-rotated and circle compare the centres by their
 *    difference, so two boxes at x = y = 1e30 overlap exactly as two at
 *    x = y = 0 do (identical ones suppress each other in all three modes);
 *    boxes whose centre difference overflows float (coordinates beyond
 *    about 1.7e38 of opposite signs) are apart;
 *  - sizes up to FLT_MAX are valid: a pair with a half size beyond 2^40
 *    (iou: a corner beyond 2^40) is computed scaled down by a power of two,
 *    exactly, so identical boxes of size 1e20 have IoU 1 and suppress each
 *    other;
 *  - iou (2D) records hold corners, not a centre and a size: a box at
 *    x1 = 1e30 whose width x2 - x1 rounds to 0 in float has no area.
 */
#ifndef P3DC_NMS_H
#define P3DC_NMS_H

#include <stddef.h>
#include <stdint.h>

#include "boxes.h"
#include "result.h"
#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum
{
  P3DC_NMS_IOU = 0,              /* axis-aligned IoU of P3dcBox2d records */
  P3DC_NMS_BEV_ROTATED,          /* ground-plane IoU of rotated P3dcBox3d */
  P3DC_NMS_BEV_ALIGNED,          /* ground-plane IoU of P3dcBox3d, yaw ignored */
  P3DC_NMS_CIRCLE                /* centre distance of P3dcBox3d (CenterPoint) */
} P3dcNmsMode;

/* How bev-rotated measures the overlap of two boxes (see above). */
typedef enum
{
  P3DC_NMS_IOU_RULE_EXACT = 0,   /* the exact intersection */
  P3DC_NMS_IOU_RULE_MMCV         /* mmcv's nms3d / boxes_iou3d rule */
} P3dcNmsIouRule;

typedef struct
{
  /* P3DC_NMS_IOU works on P3dcBox2d records, the others on P3dcBox3d */
  P3dcNmsMode mode;
  /* iou, bev-*: suppress when IoU > iou_threshold (strict); >= 0 */
  float iou_threshold;
  /* circle: suppress when the centre distance < distance_threshold
   * (strict), in metres; >= 0 */
  float distance_threshold;
  /* iou: 0, or 1 for the +1 pixel convention of Faster R-CNN */
  float offset;
  /* records scoring below are dropped before anything else; not NaN */
  float score_threshold;
  /* keep the top pre_max by score before suppression; 0 = all */
  uint32_t pre_max;
  /* keep at most post_max boxes; 0 = all */
  uint32_t post_max;
  /* nonzero: a box only suppresses boxes of its own label */
  int per_class;
  /* bev-rotated's overlap; the other modes have one rule each (mmcv's
   * axis-aligned rules are the exact ones) and ignore it */
  P3dcNmsIouRule iou_rule;
} P3dcNmsParams;

/* The most input boxes a P3dcNms workspace can hold. */
#define P3DC_NMS_MAX_CAPACITY 65536u

/* Defaults: iou mode, iou_threshold 0.5, distance_threshold 0, offset 0, no
 * score threshold (-FLT_MAX), no pre_max or post_max, not per class, the
 * exact IoU rule. */
void p3dc_nms_params_init (P3dcNmsParams * params);

/* P3DC_OK when @params is usable: a known mode, iou_threshold >= 0 (iou and
 * bev modes), distance_threshold >= 0 and finite (circle), offset 0 or 1,
 * score_threshold not NaN, a known iou_rule; P3DC_ERROR_INVALID_ARGUMENT
 * otherwise. */
P3dcResult p3dc_nms_params_check (const P3dcNmsParams * params);

/* The size of one input and output record of @mode: 24 (P3dcBox2d) for
 * P3DC_NMS_IOU, 36 (P3dcBox3d) otherwise. */
size_t p3dc_nms_record_size (P3dcNmsMode mode);

/* Reference. @boxes holds n_boxes records (P3dcBox3d or P3dcBox2d by mode).
 * Writes the kept boxes, best score first, to @out (capacity out_capacity;
 * records beyond the kept count zeroed), their number to *out_count, and,
 * when @kept_index is not NULL, each kept box's index in the input to
 * kept_index[0 .. out_count) and -1 to kept_index[out_count .. out_capacity).
 * @boxes may be NULL when n_boxes is 0, @out when out_capacity is 0; @out
 * must not overlap @boxes.
 * Returns P3DC_ERROR_INVALID_ARGUMENT for bad parameters or pointers,
 * P3DC_ERROR_OUT_OF_MEMORY when its scratch memory cannot be had. */
P3dcResult p3dc_nms_cpu (const P3dcNmsParams * params, const void *boxes,
    uint32_t n_boxes, void *out, uint32_t out_capacity, uint32_t * out_count,
    int32_t * kept_index);

/* Device workspace for up to @capacity input boxes (1 to
 * P3DC_NMS_MAX_CAPACITY), allocated on the current device: the suppression
 * mask transposed, for the calls of up to 1024 boxes (128 KB); up to 512
 * boxes, where a call is one kernel, the boxes' ranks and a counter; above,
 * the suppression mask (capacity * ceil (capacity / 64) * 8 bytes: 50 MB
 * for 20000 boxes), the boxes in score order, above 1024 boxes the pairs as
 * lists (about 1 KB a box), above 4096 sort buffers and the grid of the
 * centres (about 50 bytes a box and 128 KB), and scratch; it returns once
 * the buffers it zeroes are zeroed.  P3DC_ERROR_TOO_LARGE above the
 * maximum, or above p3dc_nms_device_capacity (). */
typedef struct _P3dNms P3dcNms;
P3dcResult p3dc_nms_new (uint32_t capacity, P3dcNms ** nms);

/* The largest capacity p3dc_nms_new takes on the current device, in
 * *@capacity: P3DC_NMS_MAX_CAPACITY where a block's shared memory holds
 * the keep reduction's state for that many boxes (2.25 bytes a box, beside
 * 47.3 KB of its own), as on Hopper; fewer on devices with less (with
 * today's kernels 52,664 boxes on sm_80 and sm_87, 23,536 on sm_86, sm_89
 * and sm_120, 7,608 on sm_75), never fewer than 1024. */
P3dcResult p3dc_nms_device_capacity (uint32_t * capacity);
void p3dc_nms_free (P3dcNms * nms);
uint32_t p3dc_nms_get_capacity (const P3dcNms * nms);

/* Device pointers (4-byte aligned; @out apart from @boxes); the input count
 * is read on the device (*n_boxes_device, clamped to the capacity), the
 * output count written on the device; no host synchronization, no host copy
 * of the mask; the greedy keep-reduction runs on the GPU.  Same outputs as
 * p3dc_nms_cpu on the first min (*n_boxes_device, capacity) records, which
 * are all that @boxes need hold (no kernel reads past them; a count the
 * host does not know asks for the capacity's).  Everything is queued on
 * @stream; a workspace serves one stream at a time, and calls on one
 * workspace must not overlap on the host.  Up to a capacity of 32768 (on
 * devices whose blocks can stage that many sort keys) a call is one launch
 * of a CUDA graph of its kernels (three up to a capacity of 4096, one up to
 * 512, six to ten above), one graph a mode (and one for bev-rotated under
 * mmcv's rule), built by the first call that takes it (a call in buffers
 * that none of its up to four executable forms holds sets one node of
 * one); a call queued while the caller captures @stream launches the
 * kernels into the caller's graph instead; above, the kernels are launched
 * one by one.  Up to a capacity of 4096 the time grows with the count only
 * (up to 512 with the capacity too: a block a 64 x 64 tile of it); above,
 * the sort by chunks (up to 32768) sorts only the chunks below the count,
 * but the kernels around it still run over the whole capacity (on the H200
 * an iou call of 500 boxes takes about 31 us in a workspace of 20000
 * boxes, 10 in one of 500; bev-aligned 63 and 10: docs/performance.md),
 * and CUB's sort (above 32768, or where a block cannot stage the
 * capacity's keys) takes the whole capacity (its count comes from the
 * host), so a workspace much larger than the counts it sees costs time. */
P3dcResult p3dc_nms_cuda (P3dcNms * nms, const P3dcNmsParams * params,
    const void *boxes, const uint32_t * n_boxes_device, void *out,
    uint32_t out_capacity, uint32_t * out_count, int32_t * kept_index,
    P3dcCudaStream stream);

/* What a box carries beside its record (application/x-boxes3d's velocity,
 * vx and vy) follows it through the suppression: output entry k (k below
 * @capacity) gets the @words 32-bit words of input entry kept_index[k] of
 * @payload, or zeros where kept_index[k] is -1, kept_index being what
 * p3dc_nms_cpu() or p3dc_nms_cuda() wrote (so @capacity their
 * out_capacity, and every kept index below their input's capacity).
 * @out must not overlap @payload.  P3DC_ERROR_INVALID_ARGUMENT for a NULL
 * pointer (with a capacity above 0) or 0 words. */
P3dcResult p3dc_nms_gather_cpu (const int32_t * kept_index, uint32_t capacity,
    const void *payload, uint32_t words, void *out);
/* The same on the device (4-byte aligned pointers), queued on @stream
 * behind the p3dc_nms_cuda() that wrote @kept_index; no host
 * synchronization. */
P3dcResult p3dc_nms_gather_cuda (const int32_t * kept_index,
    uint32_t capacity, const void *payload, uint32_t words, void *out,
    P3dcCudaStream stream);

#ifdef __cplusplus
}
#endif

#endif /* P3DC_NMS_H */
