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
#include "p3dtest.h"

G_BEGIN_DECLS

/* Car, pedestrian and cyclist sizes (dx, dy, dz), by label % 3. */
static const gfloat nms_cases_sizes[3][3] = {
  {4.5f, 1.9f, 1.6f}, {0.8f, 0.6f, 1.7f}, {1.8f, 0.6f, 1.7f}
};

/* @n 3D boxes: objects spread over an @extent metre square in front of the
 * sensor, each with 1 to 2 * @per_object - 1 candidates (centre, size and
 * yaw jittered, scores below the object's own), labels below @n_labels. */
static inline void
nms_cases_objects3d (P3dTestRng * rng, P3dBox3d * boxes, guint n,
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
      P3dBox3d *b = &boxes[i];
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
nms_cases_objects2d (P3dTestRng * rng, P3dBox2d * boxes, guint n,
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
      P3dBox2d *b = &boxes[i];
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
nms_cases_spoil3d (P3dTestRng * rng, P3dBox3d * boxes, guint n, guint every)
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
nms_cases_spoil2d (P3dTestRng * rng, P3dBox2d * boxes, guint n, guint every)
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
nms_cases_flatten3d (P3dTestRng * rng, P3dBox3d * boxes, guint n,
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
nms_cases_flatten2d (P3dTestRng * rng, P3dBox2d * boxes, guint n,
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

G_END_DECLS

#endif /* P3D_NMS_CASES_H */
