/* gst-perception compute library: how much two boxes overlap.
 *
 * Every function here is compiled twice, by the C compiler for the reference
 * path and by nvcc for the kernels, and both builds must return the same
 * bits for the same input (DESIGN.md: the CUDA nms keeps exactly the
 * reference's boxes).  So the functions use only operations that IEEE 754
 * rounds the same way everywhere: +, -, *, / and sqrtf (correctly rounded
 * in CUDA without fast math), floorf, fmodf and fabsf (exact), and
 * comparisons; multiply-adds are never fused (-ffp-contract=off and
 * -fmad=false).  Library sinf() and cosf() are not among them: glibc and
 * CUDA return different bits, hence p3d_sincos() below.
 *
 * Inputs are assumed finite; nms drops non-finite records before any of
 * this runs.
 */
#ifndef P3D_BOX_OVERLAP_H
#define P3D_BOX_OVERLAP_H

#include <math.h>
#include <stdint.h>

#include "boxes.h"
#include "hostdevice.h"

#ifdef __cplusplus
extern "C" {
#endif

/* sin and cos of @angle (radians) from +, - and * only, so that host and
 * device agree to the bit: a Cody-Waite reduction by pi/2 (a three-part
 * constant whose first two parts have few enough bits that k * part is exact
 * for the k that occur) and Taylor polynomials on [-pi/4, pi/4].  Within
 * 1e-7 of the true values for |angle| <= 64; larger angles are first reduced
 * with fmodf by the float nearest 2 pi, which is exact but makes the result
 * drift from the true sine by about |angle| * 2e-7. */
static P3D_HOST_DEVICE void
p3d_sincos (float angle, float *sin_out, float *cos_out)
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

/* An axis-aligned rectangle with its area, computed once per box.  @offset
 * is the "+1" of the Faster R-CNN pixel convention (0 or 1): a box from
 * pixel x1 to pixel x2 inclusive is x2 - x1 + 1 wide. */
typedef struct
{
  float x1, y1, x2, y2;
  float area;
} P3dAlignedRect;

static P3D_HOST_DEVICE void
p3d_aligned_rect_set (P3dAlignedRect * rect, float x1, float y1, float x2,
    float y2, float offset)
{
  rect->x1 = x1;
  rect->y1 = y1;
  rect->x2 = x2;
  rect->y2 = y2;
  rect->area = (x2 - x1 + offset) * (y2 - y1 + offset);
}

/* The width and height of the overlap of @a and @b (with @offset), as
 * p3d_aligned_rect_iou computes them: the two overlap, and their IoU can be
 * above 0, only when both are > 0.  Reads no area, so that the nms kernels'
 * cheap filter of the pairs (nms_mask.cuh) can call it on the corners alone
 * and reject exactly the pairs whose IoU is 0. */
static P3D_HOST_DEVICE void
p3d_aligned_rect_overlap (const P3dAlignedRect * a, const P3dAlignedRect * b,
    float offset, float *width, float *height)
{
  float left = a->x1 > b->x1 ? a->x1 : b->x1;
  float right = a->x2 < b->x2 ? a->x2 : b->x2;
  float top = a->y1 > b->y1 ? a->y1 : b->y1;
  float bottom = a->y2 < b->y2 ? a->y2 : b->y2;

  *width = right - left + offset;
  *height = bottom - top + offset;
}

/* Intersection over union of two axis-aligned rectangles: 0 when either has
 * no area, when they do not overlap, and when the union is 0 (0/0 is 0). */
static P3D_HOST_DEVICE float
p3d_aligned_rect_iou (const P3dAlignedRect * a, const P3dAlignedRect * b,
    float offset)
{
  float width, height, inter, uni;

  p3d_aligned_rect_overlap (a, b, offset, &width, &height);
  if (!(a->area > 0.0f) || !(b->area > 0.0f))
    return 0.0f;
  if (!(width > 0.0f) || !(height > 0.0f))
    return 0.0f;
  inter = width * height;
  uni = a->area + b->area - inter;
  return uni > 0.0f ? inter / uni : 0.0f;
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
} P3dBevRect;

static P3D_HOST_DEVICE void
p3d_bev_rect_set (P3dBevRect * rect, float x, float y, float dx, float dy,
    float yaw)
{
  rect->cx = x;
  rect->cy = y;
  rect->half_dx = 0.5f * dx;
  rect->half_dy = 0.5f * dy;
  p3d_sincos (yaw, &rect->sin_yaw, &rect->cos_yaw);
  rect->area = dx * dy;
  rect->radius = 0.5f * sqrtf (dx * dx + dy * dy);
}

/* FALSE when the circles of centres (ax, ay) and (bx, by) and radii
 * @a_radius and @b_radius are apart.  The 1e-4 relative margin keeps the test
 * conservative despite the rounding of both sides. */
static P3D_HOST_DEVICE int
p3d_bev_circles_meet (float ax, float ay, float a_radius, float bx, float by,
    float b_radius)
{
  float dx = bx - ax;
  float dy = by - ay;
  float reach = a_radius + b_radius;

  return dx * dx + dy * dy <= reach * reach * 1.0001f;
}

/* FALSE when the bounding circles of @a and @b are apart, so that the two
 * rectangles cannot intersect. */
static P3D_HOST_DEVICE int
p3d_bev_rect_may_overlap (const P3dBevRect * a, const P3dBevRect * b)
{
  return p3d_bev_circles_meet (a->cx, a->cy, a->radius, b->cx, b->cy,
      b->radius);
}

/* The most vertices a clipped polygon may have: a rectangle clipped by four
 * half-planes has at most 8; the rest is room for vertices duplicated by
 * rounding, and the clip never writes past it. */
#define P3D_BEV_CLIP_MAX 16

/* One Sutherland-Hodgman step: the polygon (u[i], w[i]) clipped to the
 * half-plane sign * u <= bound (sign is 1 or -1).  Returns the vertex count
 * written to (u_out, w_out). */
static P3D_HOST_DEVICE int
p3d_bev_clip (const float *u, const float *w, int n, float *u_out,
    float *w_out, float sign, float bound)
{
  int i, m = 0;

  for (i = 0; i < n; i++) {
    int j = i + 1 == n ? 0 : i + 1;
    float su = sign * u[i];
    float sv = sign * u[j];
    int inside_i = su <= bound;
    int inside_j = sv <= bound;

    if (inside_i && m < P3D_BEV_CLIP_MAX) {
      u_out[m] = u[i];
      w_out[m] = w[i];
      m++;
    }
    /* su != sv here, so the division is by a non-zero number */
    if (inside_i != inside_j && m < P3D_BEV_CLIP_MAX) {
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
static P3D_HOST_DEVICE float
p3d_bev_rect_intersection (const P3dBevRect * a, const P3dBevRect * b)
{
  float px[P3D_BEV_CLIP_MAX], py[P3D_BEV_CLIP_MAX];
  float qx[P3D_BEV_CLIP_MAX], qy[P3D_BEV_CLIP_MAX];
  float dx, dy, ox, oy, rel_cos, rel_sin, ux, uy, vx, vy, twice_area;
  int n, i;

  if (!p3d_bev_rect_may_overlap (a, b))
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
  n = p3d_bev_clip (px, py, 4, qx, qy, 1.0f, a->half_dx);
  n = p3d_bev_clip (qx, qy, n, px, py, -1.0f, a->half_dx);
  n = p3d_bev_clip (py, px, n, qy, qx, 1.0f, a->half_dy);
  n = p3d_bev_clip (qy, qx, n, py, px, -1.0f, a->half_dy);
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

/* Intersection over union of two rotated rectangles; 0 when either has no
 * area or when they do not intersect. */
static P3D_HOST_DEVICE float
p3d_bev_rect_iou (const P3dBevRect * a, const P3dBevRect * b)
{
  float inter, uni;

  if (!(a->area > 0.0f) || !(b->area > 0.0f))
    return 0.0f;
  inter = p3d_bev_rect_intersection (a, b);
  if (!(inter > 0.0f))
    return 0.0f;
  uni = a->area + b->area - inter;
  return uni > 0.0f ? inter / uni : 0.0f;
}

/* TRUE when the centres (ax, ay) and (bx, by) are closer than the radius
 * whose square is @radius_squared (strictly). */
static P3D_HOST_DEVICE int
p3d_centre_within (float ax, float ay, float bx, float by,
    float radius_squared)
{
  float dx = bx - ax;
  float dy = by - ay;

  return dx * dx + dy * dy < radius_squared;
}

/* The same tests on box records, for callers outside nms. */

static P3D_HOST_DEVICE float
p3d_box2d_iou (const P3dBox2d * a, const P3dBox2d * b, float offset)
{
  P3dAlignedRect ra, rb;

  p3d_aligned_rect_set (&ra, a->x1, a->y1, a->x2, a->y2, offset);
  p3d_aligned_rect_set (&rb, b->x1, b->y1, b->x2, b->y2, offset);
  return p3d_aligned_rect_iou (&ra, &rb, offset);
}

/* The ground-plane footprint of @box with its yaw ignored. */
static P3D_HOST_DEVICE void
p3d_box3d_bev_aligned_rect (P3dAlignedRect * rect, const P3dBox3d * box)
{
  float half_dx = 0.5f * box->dx;
  float half_dy = 0.5f * box->dy;

  p3d_aligned_rect_set (rect, box->x - half_dx, box->y - half_dy,
      box->x + half_dx, box->y + half_dy, 0.0f);
}

static P3D_HOST_DEVICE float
p3d_box3d_bev_aligned_iou (const P3dBox3d * a, const P3dBox3d * b)
{
  P3dAlignedRect ra, rb;

  p3d_box3d_bev_aligned_rect (&ra, a);
  p3d_box3d_bev_aligned_rect (&rb, b);
  return p3d_aligned_rect_iou (&ra, &rb, 0.0f);
}

static P3D_HOST_DEVICE float
p3d_box3d_bev_rotated_iou (const P3dBox3d * a, const P3dBox3d * b)
{
  P3dBevRect ra, rb;

  p3d_bev_rect_set (&ra, a->x, a->y, a->dx, a->dy, a->yaw);
  p3d_bev_rect_set (&rb, b->x, b->y, b->dx, b->dy, b->yaw);
  return p3d_bev_rect_iou (&ra, &rb);
}

#ifdef __cplusplus
}
#endif

#endif /* P3D_BOX_OVERLAP_H */
