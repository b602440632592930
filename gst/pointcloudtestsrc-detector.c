/* The fake detector of pointcloudtestsrc: jittered boxes around the
 * street's true ones and false positives where there is nothing; see
 * pointcloudtestsrc-scene.h. */
#include <math.h>
#include <string.h>

#include "box_overlap.h"
#include "pointcloudtestsrc-scene-private.h"

guint
p3d_lidar_candidates_false_positives (guint n_boxes)
{
  return 1 + n_boxes / 8;
}

static gfloat
clamped_gauss (P3dStreetRng * rng)
{
  return CLAMP (p3d_street_rng_gauss (rng), -2.5f, 2.5f);
}

/* TRUE when (x, y) lies within @box's footprint. */
static gboolean
box_contains_xy (const P3dcBox3d * box, gfloat x, gfloat y)
{
  gfloat s, c, local_x, local_y;

  p3dc_sincos (box->yaw, &s, &c);
  local_x = c * (x - box->x) + s * (y - box->y);
  local_y = c * (y - box->y) - s * (x - box->x);
  return fabsf (local_x) <= box->dx / 2 && fabsf (local_y) <= box->dy / 2;
}

/* A box jittered about @truth, with a score that falls as it strays. */
static void
jitter_box (P3dStreetRng * rng, const P3dcBox3d * truth, gfloat confidence,
    P3dcBox3d * out)
{
  gfloat strength = (gfloat) p3d_street_rng_uniform (rng, 0.1, 1.0);
  gfloat g[7], s, c, along, across, spread;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (g); i++)
    g[i] = clamped_gauss (rng);
  /* Along and across the box, at most a quarter of its size: the centre
   * stays inside the true box. */
  along = strength * 0.1f * truth->dx * g[0];
  across = strength * 0.1f * truth->dy * g[1];
  p3dc_sincos (truth->yaw, &s, &c);
  *out = *truth;
  out->x = truth->x + (c * along - s * across);
  out->y = truth->y + (s * along + c * across);
  out->z = truth->z + strength * 0.05f * truth->dz * g[2];
  out->dx = truth->dx * (1.0f + strength * 0.06f * g[3]);
  out->dy = truth->dy * (1.0f + strength * 0.06f * g[4]);
  out->dz = truth->dz * (1.0f + strength * 0.06f * g[5]);
  out->yaw =
      (gfloat) p3d_street_wrap_angle (truth->yaw + strength * 0.1f * g[6]);
  spread = strength * (fabsf (g[0]) + fabsf (g[1]) + fabsf (g[6])) / 7.5f;
  out->score = confidence * (1.0f - 0.6f * MIN (spread, 1.0f));
}

/* A low-score box on the road or a sidewalk, away from every true box. */
static void
false_positive (P3dStreetRng * rng, const P3dLidarScene * scene,
    const P3dcBox3d * truths, guint n_truths, P3dcBox3d * out)
{
  gdouble reach = MIN (scene->params.max_range, P3D_STREET_LENGTH / 2) * 0.8;
  const P3dStreetClass *klass;
  guint attempt, i, class_index;

  class_index = p3d_street_rng_below (rng, P3D_STREET_N_CLASSES);
  klass = &p3d_street_classes[class_index];
  out->dx = (gfloat) p3d_street_rng_uniform (rng, klass->dx[0], klass->dx[1]);
  out->dy = (gfloat) p3d_street_rng_uniform (rng, klass->dy[0], klass->dy[1]);
  out->dz = (gfloat) p3d_street_rng_uniform (rng, klass->dz[0], klass->dz[1]);
  out->yaw = (gfloat) p3d_street_rng_uniform (rng, -G_PI, G_PI);
  out->score = (gfloat) p3d_street_rng_uniform (rng, 0.05, 0.25);
  out->label = klass->label;
  /* A few tries at a free spot; the last one stays regardless. */
  for (attempt = 0; attempt < 8; attempt++) {
    gboolean free = TRUE;

    out->x = (gfloat) p3d_street_rng_uniform (rng, -reach, reach);
    out->y =
        (gfloat) p3d_street_rng_uniform (rng, P3D_STREET_CURB_RIGHT - 2.0,
        P3D_STREET_CURB_LEFT + 2.0);
    for (i = 0; i < n_truths && free; i++)
      free = !box_contains_xy (&truths[i], out->x, out->y);
    if (free)
      break;
  }
  out->z = out->dz / 2 - scene->sensor_height;
}

guint
p3d_lidar_scene_get_candidates (const P3dLidarScene * scene,
    guint per_object, P3dcBox3d * boxes, guint capacity)
{
  guint n_truths = p3d_lidar_scene_get_boxes (scene, NULL, 0);
  guint n_false = p3d_lidar_candidates_false_positives (n_truths);
  guint total = n_truths * per_object + n_false, i, k, n = 0;
  P3dcBox3d *truths = g_new (P3dcBox3d, MAX (n_truths, 1));
  P3dcBox3d *all = g_new (P3dcBox3d, total);
  P3dStreetRng rng;

  p3d_lidar_scene_get_boxes (scene, truths, n_truths);
  p3d_street_rng_init (&rng, scene->params.seed, P3D_STREET_STREAM_CANDIDATES,
      scene->noise_frame);
  for (i = 0; i < n_truths; i++) {
    gfloat confidence = (gfloat) p3d_street_rng_uniform (&rng, 0.7, 0.98);

    for (k = 0; k < per_object; k++)
      jitter_box (&rng, &truths[i], confidence, &all[n++]);
  }
  for (i = 0; i < n_false; i++)
    false_positive (&rng, scene, truths, n_truths, &all[n++]);

  /* Fisher-Yates, so that no box's position gives its object away. */
  for (i = total; i > 1; i--) {
    guint j = p3d_street_rng_below (&rng, i);
    P3dcBox3d swap = all[i - 1];

    all[i - 1] = all[j];
    all[j] = swap;
  }
  if (capacity > 0)
    memcpy (boxes, all, MIN (total, capacity) * sizeof (P3dcBox3d));
  g_free (all);
  g_free (truths);
  return total;
}
