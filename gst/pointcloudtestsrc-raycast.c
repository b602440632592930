/* The spinning lidar of pointcloudtestsrc's scene: every ray of a
 * revolution cast against the ground and the boxes; see pointcloudtestsrc-scene.h. */
#include <math.h>

#include "pointcloudtestsrc-scene-private.h"

/* Random draws per ray for its range noise. */
#define NOISE_DRAWS 3

/* An echo is detected when intensity * (DETECTION_RANGE / range)^2 is at
 * least DETECTION_THRESHOLD. */
#define DETECTION_RANGE 50.0f
#define DETECTION_THRESHOLD 0.005f

/* The entry of a ray from the origin along @dir into @box: its distance
 * (in units of |dir|) and the cosine of the incidence angle on the face it
 * enters by. FALSE when it misses, or starts inside. */
static gboolean
ray_box (const SceneBox * box, const gfloat dir[3], gfloat * t_hit,
    gfloat * cos_incidence)
{
  gfloat local[3], t_near = -G_MAXFLOAT, t_far = G_MAXFLOAT;
  gint axis, entry_axis = -1;

  local[0] = box->cos_yaw * dir[0] + box->sin_yaw * dir[1];
  local[1] = box->cos_yaw * dir[1] - box->sin_yaw * dir[0];
  local[2] = dir[2];
  for (axis = 0; axis < 3; axis++) {
    gfloat origin = box->origin[axis], half = box->half[axis], t1, t2;

    if (local[axis] == 0.0f) {
      /* Parallel to this slab: inside it or never. */
      if (origin < -half || origin > half)
        return FALSE;
      continue;
    }
    t1 = (-half - origin) / local[axis];
    t2 = (half - origin) / local[axis];
    if (t1 > t2) {
      gfloat swap = t1;

      t1 = t2;
      t2 = swap;
    }
    if (t1 > t_near) {
      t_near = t1;
      entry_axis = axis;
    }
    if (t2 < t_far)
      t_far = t2;
    if (t_near > t_far)
      return FALSE;
  }
  if (entry_axis < 0 || t_near <= 0.0f)
    return FALSE;
  *t_hit = t_near;
  *cos_incidence = fabsf (local[entry_axis]);
  return TRUE;
}

/* Reflectivity of the ground at (x, y): asphalt, lane markings (solid
 * road edges and centre line, dashed lane lines: 3 m every 9 m), concrete
 * sidewalks. */
static gfloat
ground_reflectivity (gfloat x, gfloat y)
{
  static const gfloat solid[] = { ROAD_EDGE_RIGHT, 1.75f, ROAD_EDGE_LEFT };
  static const gfloat dashed[] = { -1.75f, 5.25f };
  const gfloat half_width = 0.075f;
  guint i;

  if (y < CURB_RIGHT || y > CURB_LEFT)
    return 0.3f;
  for (i = 0; i < G_N_ELEMENTS (solid); i++)
    if (fabsf (y - solid[i]) <= half_width)
      return 0.6f;
  for (i = 0; i < G_N_ELEMENTS (dashed); i++) {
    if (fabsf (y - dashed[i]) <= half_width) {
      gfloat phase = fmodf (x, 9.0f);

      if (phase < 0.0f)
        phase += 9.0f;
      if (phase < 3.0f)
        return 0.6f;
    }
  }
  return 0.12f;
}

gsize
p3d_lidar_scene_render (P3dLidarScene * scene, P3dLidarChannels channels,
    gfloat * points, gint32 * hits)
{
  const P3dLidarSceneParams *params = &scene->params;
  const SceneBox *boxes = (const SceneBox *) scene->boxes->data;
  guint n_boxes = scene->boxes->len, n_objects = scene->objects->len;
  guint columns = params->points_per_revolution, beams = params->beams;
  guint stride = p3d_lidar_channels_get_count (channels);
  guint64 noise_base = p3d_lidar_rng_stream_state (params->seed, STREAM_NOISE,
      scene->noise_frame);
  gboolean noisy = scene->range_noise > 0.0f;
  gfloat *out = points;
  gsize count = 0;
  guint column, beam, i;

  for (column = 0; column < columns; column++) {
    gfloat ucos = scene->column_cos[column], usin = scene->column_sin[column];
    guint n_candidates = 0;

    /* Only boxes in this firing's sector are tested. */
    for (i = 0; i < n_boxes; i++)
      if (boxes[i].cull_all
          || ucos * boxes[i].x + usin * boxes[i].y >= boxes[i].cull_dot)
        scene->candidates[n_candidates++] = i;

    for (beam = 0; beam < beams; beam++) {
      guint ray = column * beams + beam;
      gfloat dir[3], best = scene->hit_limit, cos_incidence = 0.0f;
      gfloat reflectivity = 0.0f, intensity, range;
      gint32 hit = G_MININT32;

      dir[0] = scene->beam_cos[beam] * ucos;
      dir[1] = scene->beam_cos[beam] * usin;
      dir[2] = scene->beam_sin[beam];

      if (params->ground && dir[2] < 0.0f) {
        gfloat t = -scene->sensor_height / dir[2];

        if (t < best) {
          best = t;
          hit = P3D_LIDAR_HIT_GROUND;
          cos_incidence = -dir[2];
        }
      }
      for (i = 0; i < n_candidates; i++) {
        guint index = scene->candidates[i];
        gfloat t, cosine;

        if (ray_box (&boxes[index], dir, &t, &cosine) && t < best) {
          best = t;
          hit = index < n_objects ? (gint32) index : P3D_LIDAR_HIT_WALL;
          cos_incidence = cosine;
          reflectivity = boxes[index].reflectivity;
        }
      }
      if (hit == G_MININT32)
        continue;
      if (hit == P3D_LIDAR_HIT_GROUND)
        reflectivity = ground_reflectivity (dir[0] * best, dir[1] * best);
      intensity = CLAMP (reflectivity * cos_incidence, 0.0f, 1.0f);
      /* Too weak an echo is no echo: dark asphalt at a grazing angle fades
       * out with distance, as on a real sensor. */
      if (intensity * (DETECTION_RANGE * DETECTION_RANGE) <
          DETECTION_THRESHOLD * best * best)
        continue;

      range = best;
      if (noisy) {
        guint64 words[NOISE_DRAWS];
        P3dLidarRng rng;

        /* Draws NOISE_DRAWS * ray .. of the frame's noise stream: each
         * ray's noise is its own, whatever the others hit. */
        rng.state =
            noise_base + P3D_LIDAR_RNG_GAMMA * NOISE_DRAWS * (guint64) ray;
        for (i = 0; i < NOISE_DRAWS; i++)
          words[i] = p3d_lidar_rng_next (&rng);
        range = best + scene->range_noise * p3d_lidar_gauss_from_words (words);
      }
      if (!(range > 0.0f && range <= scene->max_range))
        continue;

      out[0] = dir[0] * range;
      out[1] = dir[1] * range;
      out[2] = dir[2] * range;
      i = 3;
      if (channels & P3D_LIDAR_CHANNEL_INTENSITY)
        out[i++] = intensity;
      if (channels & P3D_LIDAR_CHANNEL_TIME)
        out[i++] = scene->column_time[column];
      if (channels & P3D_LIDAR_CHANNEL_RING)
        out[i++] = (gfloat) beam;
      out += stride;
      if (hits)
        hits[count] = hit;
      count++;
    }
  }
  return count;
}
