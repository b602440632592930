/* centerpoint_decode internals (not installed): the arithmetic the
 * reference and the kernels share, compiled by both compilers.  Only +, -,
 * *, /, floorf and fabsf, which IEEE 754 rounds the same everywhere, so both
 * builds return the same bits (no fused multiply-add: -ffp-contract=off and
 * -fmad=false). */
#ifndef P3DC_CENTERPOINT_DECODE_PRIVATE_H
#define P3DC_CENTERPOINT_DECODE_PRIVATE_H

#include <math.h>
#include <stdint.h>

#include "box_overlap.h"
#include "centerpoint_decode.h"
#include "hostdevice.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bits of the flat (class, cell) index in a sort key; the task and the
 * score's bits go above (see p3dc_cp_key). */
#define P3DC_CP_INDEX_BITS 20u
#define P3DC_CP_SCORE_BITS 30u
#define P3DC_CP_KEY_BITS (4u + P3DC_CP_SCORE_BITS + P3DC_CP_INDEX_BITS)

typedef union
{
  float f;
  uint32_t u;
} P3dcCpBits;

static P3DC_HOST_DEVICE float
p3dc_cp_from_bits (uint32_t u)
{
  P3dcCpBits b;

  b.u = u;
  return b.f;
}

static P3DC_HOST_DEVICE uint32_t
p3dc_cp_to_bits (float f)
{
  P3dcCpBits b;

  b.f = f;
  return b.u;
}

/* IEEE binary16 to float, exactly (as half.h, for both compilers). */
static P3DC_HOST_DEVICE float
p3dc_cp_half_to_float (uint16_t half)
{
  uint32_t sign = (uint32_t) (half & 0x8000u) << 16;
  uint32_t exponent = (half >> 10) & 0x1fu;
  uint32_t mantissa = half & 0x3ffu;
  float value;

  if (exponent == 0x1fu)
    return p3dc_cp_from_bits (sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0)
    return p3dc_cp_from_bits (sign | ((exponent + 112u) << 23) |
        (mantissa << 13));
  value = (float) mantissa * (1.0f / 16777216.0f);
  return sign ? -value : value;
}

static P3DC_HOST_DEVICE float
p3dc_cp_read (const P3dcMapView * view, uint32_t channel, uint32_t y,
    uint32_t x)
{
  size_t at = (size_t) channel * view->channel_stride
      + (size_t) y * view->row_stride + (size_t) x * view->column_stride;

  if (view->half)
    return p3dc_cp_half_to_float (((const uint16_t *) view->data)[at]);
  return ((const float *) view->data)[at];
}

/* e^x: x = k ln 2 + r with ln 2 in two parts (k * high part exact), a
 * degree-7 Taylor polynomial on |r| <= 0.35 (truncation 5e-9), times 2^k
 * built from its bits.  Within a few ulps of the true value; 0 below -87
 * (where the true value is below 2^-125) and infinity above 88. */
static P3DC_HOST_DEVICE float
p3dc_cp_expf (float x)
{
  float k, r, p;

  if (x != x)
    return x;
  if (x > 88.0f)
    return p3dc_cp_from_bits (0x7f800000u);
  if (x < -87.0f)
    return 0.0f;
  k = floorf (x * 0x1.715476p0f + 0.5f);
  r = x - k * 0x1.62e4p-1f;
  r = r - k * 0x1.7f7d1cp-20f;
  p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6.0f + r * (1.0f / 24.0f
                  + r * (1.0f / 120.0f + r * (1.0f / 720.0f
                          + r * (1.0f / 5040.0f)))))));
  /* k is in -126 .. 127 for x in -87 .. 88: 2^k is a normal float */
  return p * p3dc_cp_from_bits ((uint32_t) ((int32_t) k + 127) << 23);
}

static P3DC_HOST_DEVICE float
p3dc_cp_sigmoid (float logit)
{
  return 1.0f / (1.0f + p3dc_cp_expf (-logit));
}

/* atan2 (y, x) in radians, as the C library defines it for finite and
 * infinite arguments and signed zeros: the angle of the smaller over the
 * larger magnitude, reduced by atan (c) with c the float nearest 1 / sqrt 3
 * above tan (pi / 12), a degree-15 odd Taylor polynomial (truncation below
 * 1e-11), then the octant.  Within a few ulps of the true angle. */
static P3DC_HOST_DEVICE float
p3dc_cp_atan2f (float y, float x)
{
  const float c = 0x1.279a74p-1f;       /* 1 / sqrt 3 */
  const float atan_c = 0x1.0c1524p-1f;  /* atan (c), about pi / 6 */
  const float half_pi = 0x1.921fb6p0f;
  const float pi = 0x1.921fb6p1f;
  int y_negative = (p3dc_cp_to_bits (y) >> 31) != 0;
  int x_negative = (p3dc_cp_to_bits (x) >> 31) != 0;
  float ax = fabsf (x), ay = fabsf (y), big, small, t, u, u2, angle, base;

  if (x != x || y != y)
    return x + y;
  big = ax > ay ? ax : ay;
  small = ax > ay ? ay : ax;
  if (big == 0.0f)
    t = 0.0f;
  else if (big - big != 0.0f)   /* infinite */
    t = small - small != 0.0f ? 1.0f : 0.0f;
  else
    t = small / big;
  if (t > 0x1.126146p-2f) {     /* tan (pi / 12) */
    u = (t - c) / (1.0f + c * t);
    base = atan_c;
  } else {
    u = t;
    base = 0.0f;
  }
  u2 = u * u;
  angle = base + (u + u * u2 * (-1.0f / 3.0f + u2 * (1.0f / 5.0f
              + u2 * (-1.0f / 7.0f + u2 * (1.0f / 9.0f + u2 * (-1.0f / 11.0f
                          + u2 * (1.0f / 13.0f + u2 * (-1.0f / 15.0f))))))));
  if (ay > ax)
    angle = half_pi - angle;
  if (x_negative)
    angle = pi - angle;
  return y_negative ? -angle : angle;
}

static P3DC_HOST_DEVICE int
p3dc_cp_finite (float v)
{
  return v - v == 0.0f;
}

/* The box of (class, cell) of a task: 1 when it is finite and inside the
 * post-centre range, 0 when it is dropped. */
static P3DC_HOST_DEVICE int
p3dc_cp_decode_box (const P3dcCenterPointParams * params,
    const P3dcCenterPointTaskMaps * maps, uint32_t label_offset,
    uint32_t class_index, uint32_t y, uint32_t x, float score,
    P3dcBox3d * box, float velocity[2])
{
  float fx, fy;
  int axis;

  fx = (float) x + p3dc_cp_read (&maps->reg, 0, y, x);
  fx = fx * params->out_size_factor;
  fx = fx * params->voxel_size[0];
  box->x = fx + params->pc_range[0];
  fy = (float) y + p3dc_cp_read (&maps->reg, 1, y, x);
  fy = fy * params->out_size_factor;
  fy = fy * params->voxel_size[1];
  box->y = fy + params->pc_range[1];
  box->z = p3dc_cp_read (&maps->height, 0, y, x);
  box->dx = p3dc_cp_read (&maps->dim, 0, y, x);
  box->dy = p3dc_cp_read (&maps->dim, 1, y, x);
  box->dz = p3dc_cp_read (&maps->dim, 2, y, x);
  if (params->norm_bbox) {
    box->dx = p3dc_cp_expf (box->dx);
    box->dy = p3dc_cp_expf (box->dy);
    box->dz = p3dc_cp_expf (box->dz);
  }
  box->yaw = p3dc_cp_atan2f (p3dc_cp_read (&maps->rot, 0, y, x),
      p3dc_cp_read (&maps->rot, 1, y, x));
  box->score = score;
  box->label = (int32_t) (label_offset + class_index);
  if (maps->vel.data != NULL) {
    velocity[0] = p3dc_cp_read (&maps->vel, 0, y, x);
    velocity[1] = p3dc_cp_read (&maps->vel, 1, y, x);
  } else {
    velocity[0] = velocity[1] = 0.0f;
  }
  if (!p3dc_cp_finite (box->x) || !p3dc_cp_finite (box->y)
      || !p3dc_cp_finite (box->z) || !p3dc_cp_finite (box->dx)
      || !p3dc_cp_finite (box->dy) || !p3dc_cp_finite (box->dz)
      || !p3dc_cp_finite (box->yaw))
    return 0;
  for (axis = 0; axis < 3; axis++) {
    float v = axis == 0 ? box->x : axis == 1 ? box->y : box->z;

    if (!(v >= params->post_center_range[axis])
        || !(v <= params->post_center_range[3 + axis]))
      return 0;
  }
  return 1;
}

/* nms_bev's view of a box: through xyxyr and back. */
static P3DC_HOST_DEVICE void
p3dc_cp_nms_round_trip (const P3dcBox3d * box, P3dcBox3d * out)
{
  float half_dx = box->dx / 2.0f, half_dy = box->dy / 2.0f;
  float x1 = box->x - half_dx, x2 = box->x + half_dx;
  float y1 = box->y - half_dy, y2 = box->y + half_dy;

  *out = *box;
  out->x = (x1 + x2) / 2.0f;
  out->y = (y1 + y2) / 2.0f;
  out->dx = x2 - x1;
  out->dy = y2 - y1;
}

/* The NMS task @task runs (its own with P3DC_CENTERPOINT_NMS_PER_TASK). */
static P3DC_HOST_DEVICE P3dcCenterPointNms
p3dc_cp_task_nms (const P3dcCenterPointParams * params, uint32_t task)
{
  return params->nms == P3DC_CENTERPOINT_NMS_PER_TASK ?
      params->tasks[task].nms : params->nms;
}

static P3DC_HOST_DEVICE float
p3dc_cp_task_threshold (const P3dcCenterPointParams * params, uint32_t task)
{
  return params->nms == P3DC_CENTERPOINT_NMS_PER_TASK ?
      params->tasks[task].nms_threshold : params->nms_threshold;
}

/* The NMS's view of @box, made once per box rather than once per pair: the
 * rectangle of the box (for rotate, its dx and dy times @scale, then the
 * round trip above, as BEVDet's Scale-NMS scales box_preds before
 * xywhr2xyxyr).  Circle NMS reads only its centre. */
static P3DC_HOST_DEVICE void
p3dc_cp_nms_rect (P3dcCenterPointNms nms, const P3dcBox3d * box, float scale,
    P3dcBevRect * rect)
{
  P3dcBox3d b = *box;

  if (nms == P3DC_CENTERPOINT_NMS_ROTATE) {
    P3dcBox3d scaled = *box;

    scaled.dx = box->dx * scale;
    scaled.dy = box->dy * scale;
    p3dc_cp_nms_round_trip (&scaled, &b);
  }
  p3dc_bev_rect_set (rect, b.x, b.y, b.dx, b.dy, b.yaw);
}

/* Whether kept box @a (earlier) suppresses @b under the task's NMS, from
 * their p3dc_cp_nms_rect() views. */
static P3DC_HOST_DEVICE int
p3dc_cp_suppresses (P3dcCenterPointNms nms, double min_radius,
    float nms_threshold, const P3dcBevRect * a, const P3dcBevRect * b)
{
  if (nms == P3DC_CENTERPOINT_NMS_CIRCLE) {
    float dx = a->cx - b->cx, dy = a->cy - b->cy;
    float distance = dx * dx + dy * dy;

    /* numpy compares the float32 distance with the Python float */
    return (double) distance <= min_radius;
  }
  return p3dc_bev_rect_iou (a, b) > nms_threshold;
}

/* The sort key of a candidate: task ascending, score descending, index
 * ascending when the keys are sorted descending.  A score in (0, 1] has
 * its bits below 2^30; 0 is the key of no candidate. */
static P3DC_HOST_DEVICE uint64_t
p3dc_cp_key (uint32_t n_tasks, uint32_t task, float score, uint32_t index)
{
  return ((uint64_t) (n_tasks - 1u - task) << (P3DC_CP_SCORE_BITS +
          P3DC_CP_INDEX_BITS))
      | ((uint64_t) p3dc_cp_to_bits (score) << P3DC_CP_INDEX_BITS)
      | (uint64_t) ((1u << P3DC_CP_INDEX_BITS) - 1u - index);
}

#ifdef __cplusplus
}
#endif

#endif /* P3DC_CENTERPOINT_DECODE_PRIVATE_H */
