/* nms internals shared by nms_cpu.c and nms.cu (not installed): which
 * records are dropped, the sort key, the per-box data the pair test needs,
 * and the pair test itself.  Written once, so that the reference and the
 * kernels decide every step with the same arithmetic. */
#ifndef P3DC_NMS_ITEM_H
#define P3DC_NMS_ITEM_H

#include <stdint.h>
#include <string.h>

#include "box_overlap.h"
#include "hostdevice.h"
#include "nms.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The sort key of a dropped record: greater than the key of any finite
 * score, so dropped records sort last and the kept ones form a prefix. */
#define P3DC_NMS_KEY_DROPPED 0xffffffffu

static P3DC_HOST_DEVICE uint32_t
p3dc_nms_float_bits (float value)
{
  uint32_t bits;

  memcpy (&bits, &value, sizeof bits);
  return bits;
}

static P3DC_HOST_DEVICE int
p3dc_nms_finite (float value)
{
  return (p3dc_nms_float_bits (value) & 0x7f800000u) != 0x7f800000u;
}

/* An unsigned key whose ascending order is the descending order of @score
 * (finite), with -0.0 and +0.0 the same key; a stable sort of the keys is the
 * stable sort of the boxes by score. */
static P3DC_HOST_DEVICE uint32_t
p3dc_nms_score_key (float score)
{
  uint32_t bits = p3dc_nms_float_bits (score);
  uint32_t ascending;

  if ((bits & 0x7fffffffu) == 0)
    bits = 0;
  ascending = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
  return ~ascending;
}

/* The record at @index of @boxes (P3dcBox2d for P3DC_NMS_IOU, P3dcBox3d
 * otherwise): its sort key, or P3DC_NMS_KEY_DROPPED when the record is bad
 * (nms.h) or scores below @score_threshold.  The whole record is read
 * before any field is tested, and the tests are combined without
 * short-circuits: on the device the loads are then all in flight at once
 * instead of one after the other behind a branch each (nms_sort.cuh's
 * rank_kernel reads every record in every block). */
static P3DC_HOST_DEVICE uint32_t
p3dc_nms_record_key (P3dcNmsMode mode, const void *boxes, uint32_t index,
    float score_threshold)
{
  int bad;
  float score;

  if (mode == P3DC_NMS_IOU) {
    P3dcBox2d b = ((const P3dcBox2d *) boxes)[index];

    bad = !p3dc_nms_finite (b.x1) | !p3dc_nms_finite (b.y1)
        | !p3dc_nms_finite (b.x2) | !p3dc_nms_finite (b.y2)
        | !p3dc_nms_finite (b.score) | !(b.x2 >= b.x1) | !(b.y2 >= b.y1);
    score = b.score;
  } else {
    P3dcBox3d b = ((const P3dcBox3d *) boxes)[index];

    bad = !p3dc_nms_finite (b.x) | !p3dc_nms_finite (b.y)
        | !p3dc_nms_finite (b.z) | !p3dc_nms_finite (b.dx)
        | !p3dc_nms_finite (b.dy) | !p3dc_nms_finite (b.dz)
        | !p3dc_nms_finite (b.yaw) | !p3dc_nms_finite (b.score)
        | !(b.dx >= 0.0f) | !(b.dy >= 0.0f) | !(b.dz >= 0.0f);
    score = b.score;
  }
  bad |= !(score >= score_threshold);
  return bad ? P3DC_NMS_KEY_DROPPED : p3dc_nms_score_key (score);
}

/* What the pair test needs of one box, computed once per box. */
typedef struct
{
  union
  {
    P3dcAlignedRect aligned;     /* P3DC_NMS_IOU */
    P3dcBevRect rect;            /* P3DC_NMS_BEV_ROTATED, P3DC_NMS_BEV_ALIGNED */
    float centre[2];            /* P3DC_NMS_CIRCLE */
  } shape;
  int32_t label;
} P3dcNmsItem;

static P3DC_HOST_DEVICE void
p3dc_nms_item_set (P3dcNmsItem * item, P3dcNmsMode mode, const void *boxes,
    uint32_t index, float offset)
{
  /* every byte defined, so that copying the item never reads undefined
   * memory (compute-sanitizer's initcheck) */
  memset (item, 0, sizeof *item);
  if (mode == P3DC_NMS_IOU) {
    const P3dcBox2d *b = (const P3dcBox2d *) boxes + index;

    p3dc_aligned_rect_set (&item->shape.aligned, b->x1, b->y1, b->x2, b->y2,
        offset);
    item->label = b->label;
  } else {
    const P3dcBox3d *b = (const P3dcBox3d *) boxes + index;

    if (mode == P3DC_NMS_BEV_ROTATED) {
      p3dc_bev_rect_set (&item->shape.rect, b->x, b->y, b->dx, b->dy, b->yaw);
    } else if (mode == P3DC_NMS_BEV_ALIGNED) {
      p3dc_bev_rect_set_aligned (&item->shape.rect, b->x, b->y, b->dx, b->dy);
    } else {
      item->shape.centre[0] = b->x;
      item->shape.centre[1] = b->y;
    }
    item->label = b->label;
  }
}

/* The parameters of the pair test, derived once from P3dcNmsParams: for
 * circle, @threshold is the squared distance, squared in float on the host
 * for both paths. */
typedef struct
{
  P3dcNmsMode mode;
  P3dcNmsIouRule iou_rule;
  float threshold;
  float offset;
  int per_class;
} P3dcNmsPairTest;

static P3DC_HOST_DEVICE void
p3dc_nms_pair_test_init (P3dcNmsPairTest * test, const P3dcNmsParams * params)
{
  test->mode = params->mode;
  if (params->mode == P3DC_NMS_CIRCLE)
    test->threshold = params->distance_threshold * params->distance_threshold;
  else
    test->threshold = params->iou_threshold;
  test->offset = params->mode == P3DC_NMS_IOU ? params->offset : 0.0f;
  test->iou_rule = params->mode == P3DC_NMS_BEV_ROTATED ? params->iou_rule :
      P3DC_NMS_IOU_RULE_EXACT;
  test->per_class = params->per_class != 0;
}

/* TRUE when @kept (earlier in score order) suppresses @candidate. */
static P3DC_HOST_DEVICE int
p3dc_nms_item_suppresses (const P3dcNmsPairTest * test,
    const P3dcNmsItem * kept, const P3dcNmsItem * candidate)
{
  if (test->per_class && kept->label != candidate->label)
    return 0;
  switch (test->mode) {
    case P3DC_NMS_IOU:
      return p3dc_aligned_rect_iou (&kept->shape.aligned,
          &candidate->shape.aligned, test->offset) > test->threshold;
    case P3DC_NMS_BEV_ALIGNED:
      return p3dc_bev_aligned_iou (&kept->shape.rect,
          &candidate->shape.rect) > test->threshold;
    case P3DC_NMS_BEV_ROTATED:
      if (test->iou_rule == P3DC_NMS_IOU_RULE_MMCV)
        return p3dc_bev_rect_iou_mmcv (&kept->shape.rect,
            &candidate->shape.rect) > test->threshold;
      return p3dc_bev_rect_iou (&kept->shape.rect,
          &candidate->shape.rect) > test->threshold;
    default:
      return p3dc_centre_within (kept->shape.centre[0], kept->shape.centre[1],
          candidate->shape.centre[0], candidate->shape.centre[1],
          test->threshold);
  }
}

#ifdef __cplusplus
}
#endif

#endif /* P3DC_NMS_ITEM_H */
