/* anchor3d_decode internals (not installed): the arithmetic the reference
 * and the kernels share, compiled by both compilers.  Only +, -, *, /,
 * floorf, fabsf and sqrtf (correctly rounded on both), and
 * centerpoint_decode's exp and sigmoid made of them, so both builds return
 * the same bits (no fused multiply-add: -ffp-contract=off and
 * -fmad=false). */
#ifndef P3DC_ANCHOR3D_DECODE_PRIVATE_H
#define P3DC_ANCHOR3D_DECODE_PRIVATE_H

#include <math.h>
#include <stdint.h>

#include "anchor3d_decode.h"
#include "box_overlap.h"
#include "centerpoint_decode-private.h"
#include "hostdevice.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A sort key: the score's bits (a score in [0, 1] has them below 2^30),
 * then the list index inverted (lower first when the keys are sorted
 * descending).  An index is at most 2^24 - 2, so no key is 0, which the
 * device's top-k reserves for no key. */
#define P3DC_A3_INDEX_BITS 24u
#define P3DC_A3_KEY_BITS (30u + P3DC_A3_INDEX_BITS)
#define P3DC_A3_INDEX_MASK ((1u << P3DC_A3_INDEX_BITS) - 1u)

static P3DC_HOST_DEVICE uint64_t
p3dc_a3_key (float score, uint32_t index)
{
  return ((uint64_t) p3dc_cp_to_bits (score) << P3DC_A3_INDEX_BITS)
      | (uint64_t) (P3DC_A3_INDEX_MASK - index);
}

static P3DC_HOST_DEVICE uint32_t
p3dc_a3_key_index (uint64_t key)
{
  return P3DC_A3_INDEX_MASK - (uint32_t) (key & P3DC_A3_INDEX_MASK);
}

static P3DC_HOST_DEVICE float
p3dc_a3_key_score (uint64_t key)
{
  return p3dc_cp_from_bits ((uint32_t) (key >> P3DC_A3_INDEX_BITS));
}

/* The lists the NMS runs over: one per class, or one (OpenPCDet
 * class-agnostic). */
static P3DC_HOST_DEVICE uint32_t
p3dc_a3_lists (const P3dcAnchor3dParams * p)
{
  if (p->rules == P3DC_ANCHOR3D_MMDET3D || p->per_class)
    return p->num_classes;
  return 1u;
}

/* Score of class @c of anchor @k at (y, x). */
static P3DC_HOST_DEVICE float
p3dc_a3_class_score (const P3dcAnchor3dParams * p,
    const P3dcAnchor3dMaps * maps, uint32_t k, uint32_t c, uint32_t y,
    uint32_t x)
{
  return p3dc_cp_sigmoid (p3dc_cp_read (&maps->cls, k * p->num_classes + c,
          y, x));
}

/* The largest class score of an anchor and its first class; NaN when a
 * class score is NaN (torch.max propagates it), which no threshold
 * passes. */
static P3DC_HOST_DEVICE float
p3dc_a3_best_score (const P3dcAnchor3dParams * p,
    const P3dcAnchor3dMaps * maps, uint32_t k, uint32_t y, uint32_t x,
    int32_t * label)
{
  float best = 0.0f;
  uint32_t c;
  int nan = 0;

  *label = 0;
  for (c = 0; c < p->num_classes; c++) {
    float s = p3dc_a3_class_score (p, maps, k, c, y, x);

    if (s != s)
      nan = 1;
    else if (c == 0 || s > best) {
      best = s;
      *label = (int32_t) c;
    }
  }
  return nan ? p3dc_cp_from_bits (0x7fc00000u) : best;
}

/* Whether @score passes the threshold: >= for OpenPCDet, > for
 * mmdetection3d. */
static P3DC_HOST_DEVICE int
p3dc_a3_passes (const P3dcAnchor3dParams * p, float score)
{
  if (p->rules == P3DC_ANCHOR3D_MMDET3D)
    return score > p->score_threshold;
  return score >= p->score_threshold;
}

/* The direction's period as a float: 2 pi / bins (mmdetection3d's pi with
 * its two bins). */
static P3DC_HOST_DEVICE float
p3dc_a3_period (const P3dcAnchor3dParams * p)
{
  return (float) (6.283185307179586 / (double) p->dir_bins);
}

/* The first bin of the largest direction logit (a NaN wins). */
static P3DC_HOST_DEVICE uint32_t
p3dc_a3_direction (const P3dcAnchor3dParams * p,
    const P3dcAnchor3dMaps * maps, uint32_t k, uint32_t y, uint32_t x)
{
  uint32_t b, best = 0;
  float best_value = 0.0f;

  for (b = 0; b < p->dir_bins; b++) {
    float v = p3dc_cp_read (&maps->dir, k * p->dir_bins + b, y, x);

    if (v != v)
      return b;
    if (b == 0 || v > best_value) {
      best_value = v;
      best = b;
    }
  }
  return best;
}

/* The yaw after the direction classifier: limit_period (r - offset,
 * limit_offset, P) + offset + P d, with PyTorch's CUDA arithmetic (the
 * division by the period a multiplication by its float reciprocal). */
static P3DC_HOST_DEVICE float
p3dc_a3_directed_yaw (const P3dcAnchor3dParams * p, float r, uint32_t bin)
{
  float period = p3dc_a3_period (p);
  float inverse = 1.0f / period;
  float v = r - p->dir_offset;
  float q = floorf (v * inverse + p->dir_limit_offset);
  float limited = v - q * period;

  return (limited + p->dir_offset) + period * (float) bin;
}

/* The box of anchor @k at (y, x), from the table's anchor (@ax, @ay its
 * centre).  @raw_yaw gets the yaw before the direction classifier.
 * Returns 1 when every value is finite, 0 when the box is dropped. */
static P3DC_HOST_DEVICE int
p3dc_a3_decode_box (const P3dcAnchor3dParams * p,
    const P3dcAnchor3dShape * anchor, float ax, float ay,
    const P3dcAnchor3dMaps * maps, uint32_t k, uint32_t y, uint32_t x,
    float score, int32_t label, P3dcBox3d * box, float *raw_yaw,
    float velocity[2])
{
  uint32_t base = k * p->code_size;
  float t[7];
  uint32_t j;

  for (j = 0; j < 7; j++)
    t[j] = p3dc_cp_read (&maps->box, base + j, y, x);
  box->x = t[0] * anchor->diagonal + ax;
  box->y = t[1] * anchor->diagonal + ay;
  box->z = t[2] * anchor->dz + anchor->z;
  box->dx = p3dc_cp_expf (t[3]) * anchor->dx;
  box->dy = p3dc_cp_expf (t[4]) * anchor->dy;
  box->dz = p3dc_cp_expf (t[5]) * anchor->dz;
  if (p->rules == P3DC_ANCHOR3D_MMDET3D) {
    /* mmdetection3d's box stands on its bottom; ours is its centre */
    float bottom = box->z - box->dz / 2.0f;

    box->z = bottom + box->dz / 2.0f;
  }
  *raw_yaw = t[6] + anchor->yaw;
  box->yaw = *raw_yaw;
  if (p->dir_bins > 0)
    box->yaw = p3dc_a3_directed_yaw (p, *raw_yaw,
        p3dc_a3_direction (p, maps, k, y, x));
  box->score = score;
  box->label = label;
  if (p->code_size >= 9) {
    velocity[0] = p3dc_cp_read (&maps->box, base + 7, y, x) + 0.0f;
    velocity[1] = p3dc_cp_read (&maps->box, base + 8, y, x) + 0.0f;
  } else {
    velocity[0] = velocity[1] = 0.0f;
  }
  return p3dc_cp_finite (box->x) && p3dc_cp_finite (box->y)
      && p3dc_cp_finite (box->z) && p3dc_cp_finite (box->dx)
      && p3dc_cp_finite (box->dy) && p3dc_cp_finite (box->dz)
      && p3dc_cp_finite (box->yaw) && p3dc_cp_finite (*raw_yaw)
      && p3dc_cp_finite (velocity[0]) && p3dc_cp_finite (velocity[1]);
}

/* The NMS's view of a box, made once per box. */
typedef union
{
  P3dcBevRect bev;
  P3dcAlignedRect aligned;
} P3dcA3Rect;

static P3DC_HOST_DEVICE void
p3dc_a3_nms_rect (const P3dcAnchor3dParams * p, const P3dcBox3d * box,
    float raw_yaw, P3dcA3Rect * rect)
{
  float half_dx = box->dx / 2.0f, half_dy = box->dy / 2.0f;
  float x1 = box->x - half_dx, x2 = box->x + half_dx;
  float y1 = box->y - half_dy, y2 = box->y + half_dy;

  if (p->nms == P3DC_ANCHOR3D_NMS_ALIGNED) {
    p3dc_aligned_rect_set (&rect->aligned, x1, y1, x2, y2, 0.0f);
  } else if (p->rules == P3DC_ANCHOR3D_MMDET3D) {
    /* nms_bev's xyxyr round trip, on the yaw before the direction */
    p3dc_bev_rect_set (&rect->bev, (x1 + x2) / 2.0f, (y1 + y2) / 2.0f,
        x2 - x1, y2 - y1, raw_yaw);
  } else {
    p3dc_bev_rect_set (&rect->bev, box->x, box->y, box->dx, box->dy,
        box->yaw);
  }
}

/* Whether kept box @a (earlier in its list) suppresses @b. */
static P3DC_HOST_DEVICE int
p3dc_a3_suppresses (P3dcAnchor3dNms nms, float threshold,
    const P3dcA3Rect * a, const P3dcA3Rect * b)
{
  if (nms == P3DC_ANCHOR3D_NMS_NONE)
    return 0;
  if (nms == P3DC_ANCHOR3D_NMS_ALIGNED)
    return p3dc_aligned_rect_iou (&a->aligned, &b->aligned, 0.0f) > threshold;
  if (nms == P3DC_ANCHOR3D_NMS_ROTATED_MMCV)
    return p3dc_bev_rect_iou_mmcv (&a->bev, &b->bev) > threshold;
  return p3dc_bev_rect_iou (&a->bev, &b->bev) > threshold;
}

#ifdef __cplusplus
}
#endif

#endif /* P3DC_ANCHOR3D_DECODE_PRIVATE_H */
