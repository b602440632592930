/* gst-perception compute library: how much two boxes overlap.
 *
 * Every function here is compiled twice, by the C compiler for the reference
 * path and by nvcc for the kernels, and both builds must return the same
 * bits for the same input (the CUDA nms keeps exactly the reference's
 * boxes).  So the functions use only operations that IEEE 754
 * rounds the same way everywhere: +, -, *, / and sqrtf (correctly rounded
 * in CUDA without fast math), floorf, fmodf and fabsf (exact), and
 * comparisons; multiply-adds are never fused (-ffp-contract=off and
 * -fmad=false).  Library sinf() and cosf() are not among them: glibc and
 * CUDA return different bits, hence p3dc_sincos() below.
 *
 * Inputs are assumed finite; nms drops non-finite records before any of
 * this runs.  Finite but huge values are defined (nms.h, "Huge boxes"):
 *  - every pair is computed relative to the first box's centre (rotated and
 *    bev-aligned), so a box far from the origin behaves as the same box near
 *    it; a pair whose centre difference overflows float is apart;
 *  - a pair with a size beyond P3DC_BOX_HUGE, whose areas and products may
 *    overflow float, is computed on both boxes scaled by P3DC_BOX_HUGE_SCALE,
 *    a power of two: the scaling is exact, and IoU does not depend on scale,
 *    so identical huge boxes have IoU 1.  Smaller pairs never take that path,
 *    so their results do not depend on it.
 */
#ifndef P3DC_BOX_OVERLAP_H
#define P3DC_BOX_OVERLAP_H

#include <math.h>
#include <stdint.h>

#include "boxes.h"
#include "hostdevice.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A half size or coordinate beyond which a pair is computed scaled down, and
 * the scale: after it, every value is below 2^48, so areas and the products
 * of the polygon clip (below 2^100) stay finite. */
#define P3DC_BOX_HUGE 0x1p40f
#define P3DC_BOX_HUGE_SCALE 0x1p-80f

/* sin and cos of @angle (radians) from +, - and * only, so that host and
 * device agree to the bit: a Cody-Waite reduction by pi/2 (a three-part
 * constant whose first two parts have few enough bits that k * part is exact
 * for the k that occur) and Taylor polynomials on [-pi/4, pi/4].  Within
 * 1e-7 of the true values for |angle| <= 64; larger angles are first reduced
 * with fmodf by the float nearest 2 pi, which is exact but makes the result
 * drift from the true sine by about |angle| * 2e-7. */
static P3DC_HOST_DEVICE void
p3dc_sincos (float angle, float *sin_out, float *cos_out)
{
  const float two_over_pi = 0x1.45f306p-1f;
  const float pio2_hi = 0x1.92p0f;
  const float pio2_mid = 0x1.fb6p-12f;
  const float pio2_lo = -0x1.777a5cp-25f;
  float k, r, r2, s, c, quadrant;

  if (angle > 64.0f || angle < -64.0f)
    angle = fmodf (angle, 0x1.921fb6p2f);
  k = floorf (angle * two_over_pi + 0.5f);
  r = angle - k * pio2_hi;
  r = r - k * pio2_mid;
  r = r - k * pio2_lo;
  r2 = r * r;
  s = r + r * r2 * (-1.66666667e-1f + r2 * (8.33333333e-3f
          + r2 * (-1.98412698e-4f + r2 * 2.75573192e-6f)));
  c = 1.0f + r2 * (-0.5f + r2 * (4.16666667e-2f + r2 * (-1.38888889e-3f
              + r2 * (2.48015873e-5f + r2 * -2.75573192e-7f))));
  /* k mod 4, exactly: k is an integer-valued float */
  quadrant = k - 4.0f * floorf (k * 0.25f);
  if (quadrant == 0.0f) {
    *sin_out = s;
    *cos_out = c;
  } else if (quadrant == 1.0f) {
    *sin_out = c;
    *cos_out = -s;
  } else if (quadrant == 2.0f) {
    *sin_out = -s;
    *cos_out = -c;
  } else {
    *sin_out = -c;
    *cos_out = s;
  }
}

/* An axis-aligned rectangle with what every pair test needs, computed once
 * per box: its area, and whether a corner lies beyond P3DC_BOX_HUGE (eight
 * comparisons the nms mask kernel would otherwise repeat in every pair
 * test).  @offset is the "+1" of the Faster R-CNN pixel convention (0 or
 * 1): a box from pixel x1 to pixel x2 inclusive is x2 - x1 + 1 wide. */
typedef struct
{
  float x1, y1, x2, y2;
  float area;
  int32_t huge;
} P3dcAlignedRect;

static P3DC_HOST_DEVICE void
p3dc_aligned_rect_set (P3dcAlignedRect * rect, float x1, float y1, float x2,
    float y2, float offset)
{
  rect->x1 = x1;
  rect->y1 = y1;
  rect->x2 = x2;
  rect->y2 = y2;
  rect->area = (x2 - x1 + offset) * (y2 - y1 + offset);
  rect->huge = fabsf (x1) > P3DC_BOX_HUGE || fabsf (y1) > P3DC_BOX_HUGE
      || fabsf (x2) > P3DC_BOX_HUGE || fabsf (y2) > P3DC_BOX_HUGE;
}

/* The width and height of the overlap of @a and @b (with @offset), as
 * p3dc_aligned_rect_iou computes them: the two overlap, and their IoU can be
 * above 0, only when both are > 0.  Reads no area, so that the nms kernels'
 * cheap filter of the pairs (nms_mask.cuh) can call it on the corners alone
 * and reject exactly the pairs whose IoU is 0. */
static P3DC_HOST_DEVICE void
p3dc_aligned_rect_overlap (const P3dcAlignedRect * a, const P3dcAlignedRect * b,
    float offset, float *width, float *height)
{
  float left = a->x1 > b->x1 ? a->x1 : b->x1;
  float right = a->x2 < b->x2 ? a->x2 : b->x2;
  float top = a->y1 > b->y1 ? a->y1 : b->y1;
  float bottom = a->y2 < b->y2 ? a->y2 : b->y2;

  *width = right - left + offset;
  *height = bottom - top + offset;
}

/* p3dc_aligned_rect_iou () without the huge case. */
static P3DC_HOST_DEVICE float
p3dc_aligned_rect_iou_plain (const P3dcAlignedRect * a,
    const P3dcAlignedRect * b, float offset)
{
  float width, height, inter, uni;

  p3dc_aligned_rect_overlap (a, b, offset, &width, &height);
  if (!(a->area > 0.0f) || !(b->area > 0.0f))
    return 0.0f;
  if (!(width > 0.0f) || !(height > 0.0f))
    return 0.0f;
  inter = width * height;
  uni = a->area + b->area - inter;
  return uni > 0.0f ? inter / uni : 0.0f;
}

static P3DC_HOST_DEVICE void
p3dc_aligned_rect_scaled (const P3dcAlignedRect * r, float offset,
    P3dcAlignedRect * out)
{
  const float s = P3DC_BOX_HUGE_SCALE;

  p3dc_aligned_rect_set (out, r->x1 * s, r->y1 * s, r->x2 * s, r->y2 * s,
      offset * s);
}

/* Intersection over union of two axis-aligned rectangles: 0 when either has
 * no area, when they do not overlap, and when the union is 0 (0/0 is 0).
 * Corners beyond P3DC_BOX_HUGE: computed on the picture scaled down, the
 * offset included. */
static P3DC_HOST_DEVICE float
p3dc_aligned_rect_iou (const P3dcAlignedRect * a, const P3dcAlignedRect * b,
    float offset)
{
  P3dcAlignedRect sa, sb;

  if (!a->huge && !b->huge)
    return p3dc_aligned_rect_iou_plain (a, b, offset);
  if (!(a->area > 0.0f) || !(b->area > 0.0f))
    return 0.0f;
  p3dc_aligned_rect_scaled (a, offset, &sa);
  p3dc_aligned_rect_scaled (b, offset, &sb);
  return p3dc_aligned_rect_iou_plain (&sa, &sb, offset * P3DC_BOX_HUGE_SCALE);
}

/* A rotated rectangle in the ground plane, with what every pair test needs
 * computed once per box: the centre, the half sizes, the direction of its
 * x axis, its area and the radius of its bounding circle. */
typedef struct
{
  float cx, cy;
  float half_dx, half_dy;
  float cos_yaw, sin_yaw;
  float area;
  float radius;
} P3dcBevRect;

static P3DC_HOST_DEVICE void
p3dc_bev_rect_set (P3dcBevRect * rect, float x, float y, float dx, float dy,
    float yaw)
{
  rect->cx = x;
  rect->cy = y;
  rect->half_dx = 0.5f * dx;
  rect->half_dy = 0.5f * dy;
  p3dc_sincos (yaw, &rect->sin_yaw, &rect->cos_yaw);
  rect->area = dx * dy;
  rect->radius = 0.5f * sqrtf (dx * dx + dy * dy);
}

/* p3dc_bev_rect_set () of a box whose yaw is ignored (bev-aligned). */
static P3DC_HOST_DEVICE void
p3dc_bev_rect_set_aligned (P3dcBevRect * rect, float x, float y, float dx,
    float dy)
{
  rect->cx = x;
  rect->cy = y;
  rect->half_dx = 0.5f * dx;
  rect->half_dy = 0.5f * dy;
  rect->cos_yaw = 1.0f;
  rect->sin_yaw = 0.0f;
  rect->area = dx * dy;
  rect->radius = 0.5f * sqrtf (dx * dx + dy * dy);
}

static P3DC_HOST_DEVICE int
p3dc_bev_rect_is_huge (const P3dcBevRect * r)
{
  return r->half_dx > P3DC_BOX_HUGE || r->half_dy > P3DC_BOX_HUGE;
}

/* @r scaled by P3DC_BOX_HUGE_SCALE, centred at (cx, cy) (already scaled). */
static P3DC_HOST_DEVICE void
p3dc_bev_rect_scaled (const P3dcBevRect * r, float cx, float cy,
    P3dcBevRect * out)
{
  const float s = P3DC_BOX_HUGE_SCALE;
  float dx = 2.0f * (r->half_dx * s), dy = 2.0f * (r->half_dy * s);

  *out = *r;
  out->cx = cx;
  out->cy = cy;
  out->half_dx = r->half_dx * s;
  out->half_dy = r->half_dy * s;
  out->area = dx * dy;
  out->radius = 0.5f * sqrtf (dx * dx + dy * dy);
}

/* @a and @b of a huge pair scaled down, @a at the origin. */
static P3DC_HOST_DEVICE void
p3dc_bev_rect_pair_scaled (const P3dcBevRect * a, const P3dcBevRect * b,
    P3dcBevRect * sa, P3dcBevRect * sb)
{
  const float s = P3DC_BOX_HUGE_SCALE;

  p3dc_bev_rect_scaled (a, 0.0f, 0.0f, sa);
  p3dc_bev_rect_scaled (b, (b->cx - a->cx) * s, (b->cy - a->cy) * s, sb);
}

/* The width and height of the overlap of @a and @b with their yaws ignored,
 * computed from the difference of their centres (so a pair far from the
 * origin loses nothing to the size of its coordinates): the two overlap only
 * when both are > 0.  Reads no area, so that the nms kernels' cheap filter
 * (nms_mask.cuh) can call it and reject exactly the pairs whose bev-aligned
 * IoU is 0. */
static P3DC_HOST_DEVICE void
p3dc_bev_aligned_overlap (const P3dcBevRect * a, const P3dcBevRect * b,
    float *width, float *height)
{
  float dx = b->cx - a->cx, dy = b->cy - a->cy;
  float lo, hi;

  lo = dx - b->half_dx > -a->half_dx ? dx - b->half_dx : -a->half_dx;
  hi = dx + b->half_dx < a->half_dx ? dx + b->half_dx : a->half_dx;
  *width = hi - lo;
  lo = dy - b->half_dy > -a->half_dy ? dy - b->half_dy : -a->half_dy;
  hi = dy + b->half_dy < a->half_dy ? dy + b->half_dy : a->half_dy;
  *height = hi - lo;
}

static P3DC_HOST_DEVICE float
p3dc_bev_aligned_iou_plain (const P3dcBevRect * a, const P3dcBevRect * b)
{
  float width, height, inter, uni;

  if (!(a->area > 0.0f) || !(b->area > 0.0f))
    return 0.0f;
  p3dc_bev_aligned_overlap (a, b, &width, &height);
  if (!(width > 0.0f) || !(height > 0.0f))
    return 0.0f;
  inter = width * height;
  uni = a->area + b->area - inter;
  return uni > 0.0f ? inter / uni : 0.0f;
}

/* Intersection over union of the footprints of @a and @b with their yaws
 * ignored: 0 when either has no area or when they do not overlap. */
static P3DC_HOST_DEVICE float
p3dc_bev_aligned_iou (const P3dcBevRect * a, const P3dcBevRect * b)
{
  P3dcBevRect sa, sb;

  if (!p3dc_bev_rect_is_huge (a) && !p3dc_bev_rect_is_huge (b))
    return p3dc_bev_aligned_iou_plain (a, b);
  if (!(a->area > 0.0f) || !(b->area > 0.0f))
    return 0.0f;
  p3dc_bev_rect_pair_scaled (a, b, &sa, &sb);
  return p3dc_bev_aligned_iou_plain (&sa, &sb);
}

/* FALSE when the circles of centres (ax, ay) and (bx, by) and radii
 * @a_radius and @b_radius are apart.  The 1e-4 relative margin keeps the test
 * conservative despite the rounding of both sides. */
static P3DC_HOST_DEVICE int
p3dc_bev_circles_meet (float ax, float ay, float a_radius, float bx, float by,
    float b_radius)
{
  float dx = bx - ax;
  float dy = by - ay;
  float reach = a_radius + b_radius;

  return dx * dx + dy * dy <= reach * reach * 1.0001f;
}

/* FALSE when the bounding circles of @a and @b are apart, so that the two
 * rectangles cannot intersect. */
static P3DC_HOST_DEVICE int
p3dc_bev_rect_may_overlap (const P3dcBevRect * a, const P3dcBevRect * b)
{
  return p3dc_bev_circles_meet (a->cx, a->cy, a->radius, b->cx, b->cy,
      b->radius);
}

/* The most vertices a clipped polygon may have: a rectangle clipped by four
 * half-planes has at most 8; the rest is room for vertices duplicated by
 * rounding, and the clip never writes past it. */
#define P3DC_BEV_CLIP_MAX 16

/* One Sutherland-Hodgman step: the polygon (u[i], w[i]) clipped to the
 * half-plane sign * u <= bound (sign is 1 or -1).  Returns the vertex count
 * written to (u_out, w_out). */
static P3DC_HOST_DEVICE int
p3dc_bev_clip (const float *u, const float *w, int n, float *u_out,
    float *w_out, float sign, float bound)
{
  int i, m = 0;

  for (i = 0; i < n; i++) {
    int j = i + 1 == n ? 0 : i + 1;
    float su = sign * u[i];
    float sv = sign * u[j];
    int inside_i = su <= bound;
    int inside_j = sv <= bound;

    if (inside_i && m < P3DC_BEV_CLIP_MAX) {
      u_out[m] = u[i];
      w_out[m] = w[i];
      m++;
    }
    /* su != sv here, so the division is by a non-zero number */
    if (inside_i != inside_j && m < P3DC_BEV_CLIP_MAX) {
      float t = (bound - su) / (sv - su);

      u_out[m] = sign * bound;
      w_out[m] = w[i] + t * (w[j] - w[i]);
      m++;
    }
  }
  return m;
}

/* The exact intersection area of two rotated rectangles: @b is expressed in
 * the frame of @a (centred on it, so that the coordinates are of the size of
 * the boxes, not of their distance to the sensor), where @a is the box
 * |x| <= half_dx, |y| <= half_dy, and clipped to it by four half-planes. */
static P3DC_HOST_DEVICE float
p3dc_bev_rect_intersection (const P3dcBevRect * a, const P3dcBevRect * b)
{
  float px[P3DC_BEV_CLIP_MAX], py[P3DC_BEV_CLIP_MAX];
  float qx[P3DC_BEV_CLIP_MAX], qy[P3DC_BEV_CLIP_MAX];
  float dx, dy, ox, oy, rel_cos, rel_sin, ux, uy, vx, vy, twice_area;
  int n, i;

  if (!p3dc_bev_rect_may_overlap (a, b))
    return 0.0f;
  dx = b->cx - a->cx;
  dy = b->cy - a->cy;
  /* b's centre and axes rotated by -yaw_a */
  ox = dx * a->cos_yaw + dy * a->sin_yaw;
  oy = dy * a->cos_yaw - dx * a->sin_yaw;
  rel_cos = b->cos_yaw * a->cos_yaw + b->sin_yaw * a->sin_yaw;
  rel_sin = b->sin_yaw * a->cos_yaw - b->cos_yaw * a->sin_yaw;
  ux = rel_cos * b->half_dx;
  uy = rel_sin * b->half_dx;
  vx = -(rel_sin * b->half_dy);
  vy = rel_cos * b->half_dy;
  /* b's corners, counter-clockwise */
  px[0] = ox + ux + vx;
  py[0] = oy + uy + vy;
  px[1] = ox - ux + vx;
  py[1] = oy - uy + vy;
  px[2] = ox - ux - vx;
  py[2] = oy - uy - vy;
  px[3] = ox + ux - vx;
  py[3] = oy + uy - vy;
  n = p3dc_bev_clip (px, py, 4, qx, qy, 1.0f, a->half_dx);
  n = p3dc_bev_clip (qx, qy, n, px, py, -1.0f, a->half_dx);
  n = p3dc_bev_clip (py, px, n, qy, qx, 1.0f, a->half_dy);
  n = p3dc_bev_clip (qy, qx, n, py, px, -1.0f, a->half_dy);
  if (n < 3)
    return 0.0f;
  /* shoelace formula */
  twice_area = 0.0f;
  for (i = 0; i < n; i++) {
    int j = i + 1 == n ? 0 : i + 1;

    twice_area = twice_area + (px[i] * py[j] - px[j] * py[i]);
  }
  return 0.5f * fabsf (twice_area);
}

static P3DC_HOST_DEVICE float
p3dc_bev_rect_iou_plain (const P3dcBevRect * a, const P3dcBevRect * b)
{
  float inter, uni;

  if (!(a->area > 0.0f) || !(b->area > 0.0f))
    return 0.0f;
  inter = p3dc_bev_rect_intersection (a, b);
  if (!(inter > 0.0f))
    return 0.0f;
  uni = a->area + b->area - inter;
  return uni > 0.0f ? inter / uni : 0.0f;
}

/* Intersection over union of two rotated rectangles; 0 when either has no
 * area or when they do not intersect. */
static P3DC_HOST_DEVICE float
p3dc_bev_rect_iou (const P3dcBevRect * a, const P3dcBevRect * b)
{
  P3dcBevRect sa, sb;

  if (!p3dc_bev_rect_is_huge (a) && !p3dc_bev_rect_is_huge (b))
    return p3dc_bev_rect_iou_plain (a, b);
  if (!(a->area > 0.0f) || !(b->area > 0.0f))
    return 0.0f;
  p3dc_bev_rect_pair_scaled (a, b, &sa, &sb);
  return p3dc_bev_rect_iou_plain (&sa, &sb);
}

/* ---- mmcv's rotated overlap ----
 *
 * The rule of mmcv's nms3d and boxes_iou3d (mmcv/ops/csrc/common/cuda/
 * iou3d_cuda_kernel.cuh, box_overlap and iou_bev; OpenPCDet's iou3d_nms is
 * the same), which models trained and evaluated with mmcv's 3D NMS expect.
 * It is not the exact intersection:
 *  - a corner of one box counts as inside the other when it lies within
 *    P3DC_MMCV_MARGIN (1 cm) outside it along either of its axes;
 *  - an edge of one box and an edge of the other add their crossing point
 *    only when they cross strictly (each edge's ends on opposite sides of
 *    the other's line: touching and collinear edges add nothing);
 *  - the points found are sorted by angle about their mean and their
 *    polygon's area is the overlap; the union is at least 1e-8.
 * So boxes up to 1 cm apart overlap a little, and a corner poking out of
 * the other box by less than 1 cm adds its small triangle: near the
 * threshold the two rules keep different boxes.
 *
 * Written from that rule in our own arithmetic (the same on the host and
 * the device, as the rest of this file): the points relative to the first
 * box's centre instead of in sensor coordinates, p3dc_sincos instead of the
 * library's sinf / cosf, a pseudo-angle of the same order instead of atan2,
 * and the crossing point from the one formula mmcv uses for every pair but
 * degenerate ones (boxes under about 1e-4 m).  So it agrees with mmcv's own
 * IoU to float rounding, and may decide differently from mmcv only where
 * the IoU lies within rounding of the threshold.  A box without area has
 * IoU 0, as under the exact rule (mmcv divides by its 1e-8 there). */
#define P3DC_MMCV_MARGIN 0.01f
/* corners of two boxes, crossings of their 16 edge pairs */
#define P3DC_MMCV_POINTS 24

/* The corners of @r relative to (ox, oy), counter-clockwise from its
 * (-dx/2, -dy/2) corner, as mmcv orders them. */
static P3DC_HOST_DEVICE void
p3dc_mmcv_corners (const P3dcBevRect * r, float ox, float oy, float *x,
    float *y)
{
  const float sx[4] = { -1.0f, 1.0f, 1.0f, -1.0f };
  const float sy[4] = { -1.0f, -1.0f, 1.0f, 1.0f };
  int k;

  for (k = 0; k < 4; k++) {
    float lx = sx[k] * r->half_dx, ly = sy[k] * r->half_dy;

    x[k] = lx * r->cos_yaw - ly * r->sin_yaw + ox;
    y[k] = lx * r->sin_yaw + ly * r->cos_yaw + oy;
  }
}

/* Whether the point (px, py) lies inside @r (centred at (ox, oy)) grown by
 * @margin along each axis, strictly. */
static P3DC_HOST_DEVICE int
p3dc_mmcv_inside (const P3dcBevRect * r, float ox, float oy, float px, float py,
    float margin)
{
  float dx = px - ox, dy = py - oy;
  float along = dx * r->cos_yaw + dy * r->sin_yaw;
  float across = dy * r->cos_yaw - dx * r->sin_yaw;

  return fabsf (along) < r->half_dx + margin
      && fabsf (across) < r->half_dy + margin;
}

/* (a - o) x (b - o) */
static P3DC_HOST_DEVICE float
p3dc_mmcv_cross (float ox, float oy, float ax, float ay, float bx, float by)
{
  return (ax - ox) * (by - oy) - (bx - ox) * (ay - oy);
}

/* Whether the segments p0-p1 and q0-q1 cross strictly, and where. */
static P3DC_HOST_DEVICE int
p3dc_mmcv_crossing (const float p0[2], const float p1[2], const float q0[2],
    const float q1[2], float *x, float *y)
{
  float s1, s2, s3, s4, s5;

  /* their bounding boxes must meet (ends included) */
  if (!(fminf (p0[0], p1[0]) <= fmaxf (q0[0], q1[0])
          && fminf (q0[0], q1[0]) <= fmaxf (p0[0], p1[0])
          && fminf (p0[1], p1[1]) <= fmaxf (q0[1], q1[1])
          && fminf (q0[1], q1[1]) <= fmaxf (p0[1], p1[1])))
    return 0;
  /* q0 and q1 strictly on opposite sides of the line p, and p0 and p1 of
   * the line q */
  s1 = p3dc_mmcv_cross (p0[0], p0[1], q0[0], q0[1], p1[0], p1[1]);
  s2 = p3dc_mmcv_cross (p0[0], p0[1], p1[0], p1[1], q1[0], q1[1]);
  s3 = p3dc_mmcv_cross (q0[0], q0[1], p0[0], p0[1], q1[0], q1[1]);
  s4 = p3dc_mmcv_cross (q0[0], q0[1], q1[0], q1[1], p1[0], p1[1]);
  if (!(((s1 > 0.0f && s2 > 0.0f) || (s1 < 0.0f && s2 < 0.0f))
          && ((s3 > 0.0f && s4 > 0.0f) || (s3 < 0.0f && s4 < 0.0f))))
    return 0;
  /* s1 and s5 are the sides of q0 and q1 of the line p, of opposite signs
   * here, so s5 - s1 is not 0: the point divides q0-q1 as they do */
  s5 = p3dc_mmcv_cross (p0[0], p0[1], q1[0], q1[1], p1[0], p1[1]);
  *x = (s5 * q0[0] - s1 * q1[0]) / (s5 - s1);
  *y = (s5 * q0[1] - s1 * q1[1]) / (s5 - s1);
  return 1;
}

/* A number that grows with the angle of (dx, dy) from -pi (exclusive) to pi,
 * as atan2 does, from +, - and / only: dy / (|dx| + |dy|) in the right half
 * plane, shifted by 2 on the left.  0 for (0, 0). */
static P3DC_HOST_DEVICE float
p3dc_mmcv_pseudo_angle (float dx, float dy)
{
  float sum = fabsf (dx) + fabsf (dy);
  float p;

  if (!(sum > 0.0f))
    return 0.0f;
  p = dy / sum;
  if (dx >= 0.0f)
    return p;
  return dy >= 0.0f ? 2.0f - p : -2.0f - p;
}

/* The overlap area of @a and @b under mmcv's rule (see above), with the
 * margin @margin, @a centred at the origin and @b at (bx, by). */
static P3DC_HOST_DEVICE float
p3dc_mmcv_overlap (const P3dcBevRect * a, const P3dcBevRect * b, float bx,
    float by, float margin)
{
  float ax4[4], ay4[4], bx4[4], by4[4];
  float px[P3DC_MMCV_POINTS], py[P3DC_MMCV_POINTS], key[P3DC_MMCV_POINTS];
  float cx = 0.0f, cy = 0.0f, twice_area = 0.0f;
  int n = 0, i, j;

  p3dc_mmcv_corners (a, 0.0f, 0.0f, ax4, ay4);
  p3dc_mmcv_corners (b, bx, by, bx4, by4);
  /* edge i of a (corner i to i + 1) against edge j of b, in that order */
  for (i = 0; i < 4; i++) {
    for (j = 0; j < 4; j++) {
      float p0[2] = { ax4[i], ay4[i] };
      float p1[2] = { ax4[(i + 1) % 4], ay4[(i + 1) % 4] };
      float q0[2] = { bx4[j], by4[j] };
      float q1[2] = { bx4[(j + 1) % 4], by4[(j + 1) % 4] };

      if (p3dc_mmcv_crossing (p0, p1, q0, q1, &px[n], &py[n]))
        n++;
    }
  }
  /* then the corners, b's k-th before a's k-th */
  for (i = 0; i < 4; i++) {
    if (p3dc_mmcv_inside (a, 0.0f, 0.0f, bx4[i], by4[i], margin)) {
      px[n] = bx4[i];
      py[n] = by4[i];
      n++;
    }
    if (p3dc_mmcv_inside (b, bx, by, ax4[i], ay4[i], margin)) {
      px[n] = ax4[i];
      py[n] = ay4[i];
      n++;
    }
  }
  if (n < 3)
    return 0.0f;
  for (i = 0; i < n; i++) {
    cx = cx + px[i];
    cy = cy + py[i];
  }
  cx = cx / (float) n;
  cy = cy / (float) n;
  for (i = 0; i < n; i++)
    key[i] = p3dc_mmcv_pseudo_angle (px[i] - cx, py[i] - cy);
  /* a stable sort by angle (mmcv bubble-sorts; equal angles keep their
   * order either way) */
  for (i = 1; i < n; i++) {
    float k = key[i], x = px[i], y = py[i];

    for (j = i - 1; j >= 0 && key[j] > k; j--) {
      key[j + 1] = key[j];
      px[j + 1] = px[j];
      py[j + 1] = py[j];
    }
    key[j + 1] = k;
    px[j + 1] = x;
    py[j + 1] = y;
  }
  /* the fan from the first point */
  for (i = 1; i + 1 < n; i++)
    twice_area = twice_area + ((px[i] - px[0]) * (py[i + 1] - py[0])
        - (py[i] - py[0]) * (px[i + 1] - px[0]));
  return 0.5f * fabsf (twice_area);
}

/* With the margin @margin and the least union @least_union (mmcv's 1e-8;
 * 0 for none). */
static P3DC_HOST_DEVICE float
p3dc_bev_rect_iou_mmcv_plain (const P3dcBevRect * a, const P3dcBevRect * b,
    float margin, float least_union)
{
  float inter, uni;

  if (!(a->area > 0.0f) || !(b->area > 0.0f))
    return 0.0f;
  /* the points of the rule lie in both boxes grown by the margin, hence in
   * both circles grown by its diagonal */
  if (!p3dc_bev_circles_meet (a->cx, a->cy, a->radius + 1.5f * margin, b->cx,
          b->cy, b->radius + 1.5f * margin))
    return 0.0f;
  inter = p3dc_mmcv_overlap (a, b, b->cx - a->cx, b->cy - a->cy, margin);
  uni = a->area + b->area - inter;
  if (uni < least_union)
    uni = least_union;
  return uni > 0.0f ? inter / uni : 0.0f;
}

/* Intersection over union of two rotated rectangles under mmcv's rule.
 * Huge pairs are scaled down as the exact rule does; 1 cm is far below the
 * float resolution of their sizes (mmcv's own test would then count no
 * corner, even of identical boxes), so their margin is 2^-20 of the larger
 * half size instead: a corner on the other box's edge still counts, as it
 * does at everyday sizes; and the least union of 1e-8 m^2, meaningless at
 * that scale, is dropped. */
static P3DC_HOST_DEVICE float
p3dc_bev_rect_iou_mmcv (const P3dcBevRect * a, const P3dcBevRect * b)
{
  P3dcBevRect sa, sb;
  float half;

  if (!p3dc_bev_rect_is_huge (a) && !p3dc_bev_rect_is_huge (b))
    return p3dc_bev_rect_iou_mmcv_plain (a, b, P3DC_MMCV_MARGIN, 1e-8f);
  if (!(a->area > 0.0f) || !(b->area > 0.0f))
    return 0.0f;
  p3dc_bev_rect_pair_scaled (a, b, &sa, &sb);
  half = sa.half_dx;
  half = sa.half_dy > half ? sa.half_dy : half;
  half = sb.half_dx > half ? sb.half_dx : half;
  half = sb.half_dy > half ? sb.half_dy : half;
  return p3dc_bev_rect_iou_mmcv_plain (&sa, &sb, half * 0x1p-20f, 0.0f);
}

/* TRUE when the centres (ax, ay) and (bx, by) are closer than the radius
 * whose square is @radius_squared (strictly). */
static P3DC_HOST_DEVICE int
p3dc_centre_within (float ax, float ay, float bx, float by,
    float radius_squared)
{
  float dx = bx - ax;
  float dy = by - ay;

  return dx * dx + dy * dy < radius_squared;
}

/* The same tests on box records, for callers outside nms. */

static P3DC_HOST_DEVICE float
p3dc_box2d_iou (const P3dcBox2d * a, const P3dcBox2d * b, float offset)
{
  P3dcAlignedRect ra, rb;

  p3dc_aligned_rect_set (&ra, a->x1, a->y1, a->x2, a->y2, offset);
  p3dc_aligned_rect_set (&rb, b->x1, b->y1, b->x2, b->y2, offset);
  return p3dc_aligned_rect_iou (&ra, &rb, offset);
}

static P3DC_HOST_DEVICE float
p3dc_box3d_bev_aligned_iou (const P3dcBox3d * a, const P3dcBox3d * b)
{
  P3dcBevRect ra, rb;

  p3dc_bev_rect_set_aligned (&ra, a->x, a->y, a->dx, a->dy);
  p3dc_bev_rect_set_aligned (&rb, b->x, b->y, b->dx, b->dy);
  return p3dc_bev_aligned_iou (&ra, &rb);
}

static P3DC_HOST_DEVICE float
p3dc_box3d_bev_rotated_iou (const P3dcBox3d * a, const P3dcBox3d * b)
{
  P3dcBevRect ra, rb;

  p3dc_bev_rect_set (&ra, a->x, a->y, a->dx, a->dy, a->yaw);
  p3dc_bev_rect_set (&rb, b->x, b->y, b->dx, b->dy, b->yaw);
  return p3dc_bev_rect_iou (&ra, &rb);
}

/* The same under mmcv's rule. */
static P3DC_HOST_DEVICE float
p3dc_box3d_bev_rotated_iou_mmcv (const P3dcBox3d * a, const P3dcBox3d * b)
{
  P3dcBevRect ra, rb;

  p3dc_bev_rect_set (&ra, a->x, a->y, a->dx, a->dy, a->yaw);
  p3dc_bev_rect_set (&rb, b->x, b->y, b->dx, b->dy, b->yaw);
  return p3dc_bev_rect_iou_mmcv (&ra, &rb);
}

#ifdef __cplusplus
}
#endif

#endif /* P3DC_BOX_OVERLAP_H */
