/* Box sets shared by the nms tests (nms.c checks the reference on them,
 * nms_cuda.c the CUDA path against the reference): detector-like layouts,
 * several jittered candidates around each object, and the special cases of
 * DESIGN.md (identical boxes, equal scores, zero sizes, bad records). */
#ifndef P3D_NMS_CASES_H
#define P3D_NMS_CASES_H

#include <math.h>
#include <string.h>
#include <glib.h>

#include "boxes.h"
#include "nms.h"
#include "p3dtest.h"

G_BEGIN_DECLS

/* Parameters of @mode with its threshold (a distance for circle, an IoU
 * otherwise) at @threshold, the rest at their defaults. */
static inline void
nms_cases_params (P3dcNmsParams * p, P3dcNmsMode mode, float threshold)
{
  p3dc_nms_params_init (p);
  p->mode = mode;
  if (mode == P3DC_NMS_CIRCLE)
    p->distance_threshold = threshold;
  else
    p->iou_threshold = threshold;
}

/* Car, pedestrian and cyclist sizes (dx, dy, dz), by label % 3. */
static const gfloat nms_cases_sizes[3][3] = {
  {4.5f, 1.9f, 1.6f}, {0.8f, 0.6f, 1.7f}, {1.8f, 0.6f, 1.7f}
};

/* @n 3D boxes: objects spread over an @extent metre square in front of the
 * sensor, each with 1 to 2 * @per_object - 1 candidates (centre, size and
 * yaw jittered, scores below the object's own), labels below @n_labels. */
static inline void
nms_cases_objects3d (P3dTestRng * rng, P3dcBox3d * boxes, guint n,
    gfloat extent, guint per_object, guint n_labels)
{
  guint i = 0;

  while (i < n) {
    guint label = p3d_test_rng_below (rng, n_labels);
    const gfloat *size = nms_cases_sizes[label % 3];
    gfloat scale = p3d_test_rng_uniform (rng, 0.85f, 1.15f);
    gfloat x = p3d_test_rng_uniform (rng, 0.0f, extent);
    gfloat y = p3d_test_rng_uniform (rng, -0.5f * extent, 0.5f * extent);
    gfloat z = p3d_test_rng_uniform (rng, -2.0f, 0.0f);
    gfloat yaw = p3d_test_rng_uniform (rng, -3.1415927f, 3.1415927f);
    gfloat score = p3d_test_rng_uniform (rng, 0.2f, 1.0f);
    guint candidates = 1 + p3d_test_rng_below (rng, 2 * per_object - 1);
    guint c;

    for (c = 0; c < candidates && i < n; c++, i++) {
      P3dcBox3d *b = &boxes[i];
      gfloat jitter = 0.2f * size[0] * scale;

      b->x = x + p3d_test_rng_uniform (rng, -jitter, jitter);
      b->y = y + p3d_test_rng_uniform (rng, -jitter, jitter);
      b->z = z + p3d_test_rng_uniform (rng, -0.2f, 0.2f);
      b->dx = size[0] * scale * p3d_test_rng_uniform (rng, 0.9f, 1.1f);
      b->dy = size[1] * scale * p3d_test_rng_uniform (rng, 0.9f, 1.1f);
      b->dz = size[2] * scale * p3d_test_rng_uniform (rng, 0.9f, 1.1f);
      b->yaw = yaw + p3d_test_rng_uniform (rng, -0.3f, 0.3f);
      b->score = score * p3d_test_rng_uniform (rng, 0.3f, 1.0f);
      b->label = (gint32) label;
    }
  }
}

/* @n 2D boxes in a @width x @height image, the same way: objects of 16 to
 * 400 pixels, candidates jittered by up to 15% of the size. */
static inline void
nms_cases_objects2d (P3dTestRng * rng, P3dcBox2d * boxes, guint n,
    gfloat width, gfloat height, guint per_object, guint n_labels)
{
  guint i = 0;

  while (i < n) {
    guint label = p3d_test_rng_below (rng, n_labels);
    gfloat w = p3d_test_rng_uniform (rng, 16.0f, 400.0f);
    gfloat h = w * p3d_test_rng_uniform (rng, 0.5f, 2.0f);
    gfloat cx = p3d_test_rng_uniform (rng, 0.0f, width);
    gfloat cy = p3d_test_rng_uniform (rng, 0.0f, height);
    gfloat score = p3d_test_rng_uniform (rng, 0.2f, 1.0f);
    guint candidates = 1 + p3d_test_rng_below (rng, 2 * per_object - 1);
    guint c;

    for (c = 0; c < candidates && i < n; c++, i++) {
      P3dcBox2d *b = &boxes[i];
      gfloat bx = cx + p3d_test_rng_uniform (rng, -0.15f, 0.15f) * w;
      gfloat by = cy + p3d_test_rng_uniform (rng, -0.15f, 0.15f) * h;
      gfloat bw = w * p3d_test_rng_uniform (rng, 0.85f, 1.15f);
      gfloat bh = h * p3d_test_rng_uniform (rng, 0.85f, 1.15f);

      b->x1 = bx - 0.5f * bw;
      b->y1 = by - 0.5f * bh;
      b->x2 = bx + 0.5f * bw;
      b->y2 = by + 0.5f * bh;
      b->score = score * p3d_test_rng_uniform (rng, 0.3f, 1.0f);
      b->label = (gint32) label;
    }
  }
}

/* Scores from a handful of values, so that many boxes tie, with -0.0 and
 * +0.0 among them. */
static inline void
nms_cases_tie_scores (P3dTestRng * rng, gpointer score, gsize stride,
    guint n)
{
  static const gfloat values[] = { 0.9f, 0.5f, 0.0f, -0.0f, 0.5f, -0.25f };
  guint i;

  for (i = 0; i < n; i++)
    *(gfloat *) ((guint8 *) score + i * stride) =
        values[p3d_test_rng_below (rng, G_N_ELEMENTS (values))];
}

/* Replaces about one record in @every of @boxes (3D) by a bad one: a NaN or
 * infinite field, or a negative size. */
static inline void
nms_cases_spoil3d (P3dTestRng * rng, P3dcBox3d * boxes, guint n, guint every)
{
  guint i;

  for (i = 0; i < n; i++) {
    gfloat *fields = (gfloat *) & boxes[i];

    if (p3d_test_rng_below (rng, every) != 0)
      continue;
    switch (p3d_test_rng_below (rng, 4)) {
      case 0:
        fields[p3d_test_rng_below (rng, 8)] = NAN;
        break;
      case 1:
        fields[p3d_test_rng_below (rng, 8)] = INFINITY;
        break;
      case 2:
        fields[p3d_test_rng_below (rng, 8)] = -INFINITY;
        break;
      default:
        fields[3 + p3d_test_rng_below (rng, 3)] = -0.5f;
        break;
    }
  }
}

static inline void
nms_cases_spoil2d (P3dTestRng * rng, P3dcBox2d * boxes, guint n, guint every)
{
  guint i;

  for (i = 0; i < n; i++) {
    gfloat *fields = (gfloat *) & boxes[i];

    if (p3d_test_rng_below (rng, every) != 0)
      continue;
    switch (p3d_test_rng_below (rng, 3)) {
      case 0:
        fields[p3d_test_rng_below (rng, 5)] = NAN;
        break;
      case 1:
        fields[p3d_test_rng_below (rng, 5)] = INFINITY;
        break;
      default:
        /* x2 < x1 */
        boxes[i].x2 = boxes[i].x1 - 1.0f;
        break;
    }
  }
}

/* Sets the sizes of about one box in @every to zero (one or both). */
static inline void
nms_cases_flatten3d (P3dTestRng * rng, P3dcBox3d * boxes, guint n,
    guint every)
{
  guint i;

  for (i = 0; i < n; i++) {
    if (p3d_test_rng_below (rng, every) != 0)
      continue;
    switch (p3d_test_rng_below (rng, 3)) {
      case 0:
        boxes[i].dx = 0.0f;
        break;
      case 1:
        boxes[i].dy = 0.0f;
        break;
      default:
        boxes[i].dx = boxes[i].dy = 0.0f;
        break;
    }
  }
}

static inline void
nms_cases_flatten2d (P3dTestRng * rng, P3dcBox2d * boxes, guint n,
    guint every)
{
  guint i;

  for (i = 0; i < n; i++) {
    if (p3d_test_rng_below (rng, every) != 0)
      continue;
    if (p3d_test_rng_below (rng, 2))
      boxes[i].x2 = boxes[i].x1;
    else
      boxes[i].y2 = boxes[i].y1;
  }
}

/* Copies of a few boxes over others, so that identical boxes occur (with
 * their scores kept or equal too). */
static inline void
nms_cases_duplicate (P3dTestRng * rng, gpointer boxes, gsize record_size,
    guint n, guint every, gboolean same_score)
{
  guint i;

  for (i = 1; i < n; i++) {
    guint8 *dst = (guint8 *) boxes + i * record_size;
    const guint8 *src;
    gfloat score;

    if (p3d_test_rng_below (rng, every) != 0)
      continue;
    src = (const guint8 *) boxes + p3d_test_rng_below (rng, i) * record_size;
    memcpy (&score, dst + record_size - 8, 4);
    memcpy (dst, src, record_size);
    if (!same_score)
      memcpy (dst + record_size - 8, &score, 4);
  }
}

/* Huge but finite boxes (nms.h, "Huge boxes"), scores descending with the
 * index: two identical boxes of size 1e20 (the second suppressed), two
 * identical small ones at x = y = 1e30 (the second suppressed, as at the
 * origin), two at x = +-3e38 whose centre difference overflows (apart), a
 * small box inside the huge one (IoU about 1e-40, and 7 m from its centre)
 * and one of size FLT_MAX centred at FLT_MAX (apart from all).  Under every
 * 3D mode, at IoU threshold 0.5 or distance 1, the kept indices are
 * nms_cases_huge3d_kept. */
static const P3dcBox3d nms_cases_huge3d[8] = {
  {0, 0, 0, 1e20f, 1e20f, 1e20f, 0, 0.95f, 0},
  {0, 0, 0, 1e20f, 1e20f, 1e20f, 0, 0.9f, 0},
  {1e30f, 1e30f, 0, 4, 2, 1.5f, 0.3f, 0.85f, 0},
  {1e30f, 1e30f, 0, 4, 2, 1.5f, 0.3f, 0.8f, 0},
  {3e38f, 0, 0, 1, 1, 1, 0, 0.75f, 0},
  {-3e38f, 0, 0, 1, 1, 1, 0, 0.7f, 0},
  {5, 5, 0, 1, 1, 1, 0, 0.65f, 0},
  {3.40282347e38f, 3.40282347e38f, 0, 3.40282347e38f, 3.40282347e38f, 1, 0,
      0.6f, 0},
};

static const gint32 nms_cases_huge3d_kept[6] = { 0, 2, 4, 5, 6, 7 };

/* The same in 2D corners: two identical boxes of size 1e20 (the second
 * suppressed), two at x1 = y1 = 1e30 whose 10-pixel width rounds to 0 (no
 * area: both kept), and the whole float plane, whose width overflows
 * (kept: its IoU with the first is about 1e-39). */
static const P3dcBox2d nms_cases_huge2d[5] = {
  {0, 0, 1e20f, 1e20f, 0.9f, 0},
  {0, 0, 1e20f, 1e20f, 0.8f, 0},
  {1e30f, 1e30f, 1e30f + 10, 1e30f + 10, 0.7f, 0},
  {1e30f, 1e30f, 1e30f + 10, 1e30f + 10, 0.65f, 0},
  {-3.40282347e38f, -3.40282347e38f, 3.40282347e38f, 3.40282347e38f, 0.6f,
      0},
};

static const gint32 nms_cases_huge2d_kept[4] = { 0, 2, 3, 4 };

/* Pairs where mmcv's rotated IoU rule (box_overlap.h) and the exact one
 * disagree, worked out by hand (both boxes 2 x 2, area 4 each):
 *  - gap: 5 mm apart side by side.  Exact: 0.  mmcv: the two near corners
 *    of each lie within 1 cm of the other, and the strip between them,
 *    0.005 x 2 = 0.01, is the overlap: IoU 0.01 / (8 - 0.01) = 0.0012516.
 *  - poke: the second shifted by (1.5, 0.004).  Exact: 0.5 x 1.996 = 0.998,
 *    IoU 0.998 / 7.002 = 0.1425307.  mmcv: the corners (0.5, 1.004) and
 *    (1, -1), 4 mm outside the other box, count as inside, adding two
 *    triangles of 0.5 x 0.004 / 2 = 0.001: 1.0, IoU 1 / 7 = 0.1428571. */
static const P3dcBox3d nms_cases_mmcv_gap[2] = {
  {1, 1, 0, 2, 2, 1, 0, 0.9f, 0},
  {3.005f, 1, 0, 2, 2, 1, 0, 0.8f, 0},
};

static const P3dcBox3d nms_cases_mmcv_poke[2] = {
  {0, 0, 0, 2, 2, 1, 0, 0.9f, 0},
  {1.5f, 0.004f, 0, 2, 2, 1, 0, 0.8f, 0},
};

#define NMS_CASES_MMCV_GAP_IOU (0.01 / 7.99)
#define NMS_CASES_MMCV_POKE_IOU (1.0 / 7.0)
#define NMS_CASES_EXACT_POKE_IOU (0.998 / 7.002)

/* @pair (two boxes, the first at the origin of the turn) turned by @angle
 * about the first box's centre, yaws included. */
static inline void
nms_cases_turn_pair (const P3dcBox3d pair[2], float angle, P3dcBox3d out[2])
{
  double c = cos (angle), s = sin (angle);
  double dx = pair[1].x - pair[0].x, dy = pair[1].y - pair[0].y;

  out[0] = pair[0];
  out[1] = pair[1];
  out[0].yaw += angle;
  out[1].yaw += angle;
  out[1].x = (float) (pair[0].x + dx * c - dy * s);
  out[1].y = (float) (pair[0].y + dx * s + dy * c);
}

G_END_DECLS

#endif /* P3D_NMS_CASES_H */
