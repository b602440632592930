/* The spinning lidar of pointcloudtestsrc: every ray of a revolution cast
 * against the street's ground and boxes; see pointcloudtestsrc-scene.h. */
#include <math.h>

#include "pointcloudtestsrc-scene-private.h"

/* Random draws per ray for its range noise. */
#define NOISE_DRAWS 3

/* An echo is detected when intensity * (DETECTION_RANGE / range)^2 is at
 * least DETECTION_THRESHOLD. */
#define DETECTION_RANGE 50.0f
#define DETECTION_THRESHOLD 0.005f

/* Reflectivity of the ground at (x, y) by what it is made of. */
static gfloat
ground_reflectivity (gfloat x, gfloat y)
{
  switch (p3d_street_ground_at (x, y)) {
    case P3D_STREET_GROUND_SIDEWALK:
      return 0.3f;
    case P3D_STREET_GROUND_MARKING:
      return 0.6f;
    default:
      return 0.12f;
  }
}

gsize
p3d_lidar_scene_render (P3dLidarScene * scene, P3dLidarChannels channels,
    gfloat * points, gint32 * hits)
{
  const P3dLidarSceneParams *params = &scene->params;
  guint n_boxes, n_objects = p3d_street_get_n_objects (scene->street);
  const P3dStreetBox *boxes = p3d_street_get_boxes (scene->street, &n_boxes);
  guint columns = params->points_per_revolution, beams = params->beams;
  guint stride = p3d_lidar_channels_get_count (channels);
  guint64 noise_base = p3d_street_rng_stream_state (params->seed,
      P3D_STREET_STREAM_LIDAR_NOISE, scene->noise_frame);
  gboolean noisy = scene->range_noise > 0.0f;
  gfloat *out = points;
  gsize count = 0;
  guint column, beam, i;

  if (scene->candidates_size < n_boxes) {
    g_free (scene->candidates);
    scene->candidates_size = n_boxes;
    scene->candidates = g_new (guint, scene->candidates_size);
  }
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
        gfloat local[3], t;
        gint axis;

        p3d_street_box_local_direction (&boxes[index], dir, local);
        if (p3d_street_ray_box (&boxes[index], boxes[index].origin, local, &t,
                &axis) && t < best) {
          best = t;
          hit = index < n_objects ? (gint32) index : P3D_LIDAR_HIT_WALL;
          cos_incidence = fabsf (local[axis]);
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
        P3dStreetRng rng;

        /* Draws NOISE_DRAWS * ray .. of the frame's noise stream: each
         * ray's noise is its own, whatever the others hit. */
        rng.state =
            noise_base + P3D_STREET_RNG_GAMMA * NOISE_DRAWS * (guint64) ray;
        for (i = 0; i < NOISE_DRAWS; i++)
          words[i] = p3d_street_rng_next (&rng);
        range = best + scene->range_noise * p3d_street_gauss_from_words (words);
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
