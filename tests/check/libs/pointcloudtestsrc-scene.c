/* The synthetic lidar scene of pointcloudtestsrc: determinism against a
 * second, independent generation, geometry against hand-worked cases (a
 * box in front of the sensor, the bare ground), ranges, channels, and the
 * true and candidate boxes against the points. */
#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>

#include "pointcloudtestsrc-scene.h"
#include "p3dtest.h"

#define ALL_CHANNELS \
    (P3D_LIDAR_CHANNEL_INTENSITY | P3D_LIDAR_CHANNEL_TIME | \
     P3D_LIDAR_CHANNEL_RING)

/* One rendered frame. */
typedef struct
{
  gsize n_points;
  guint stride;
  gfloat *points;
  gint32 *hits;
} Frame;

static void
frame_render (Frame * frame, P3dLidarScene * scene, guint64 index,
    P3dLidarChannels channels)
{
  guint n_rays = p3d_lidar_scene_get_n_rays (scene);

  frame->stride = p3d_lidar_channels_get_count (channels);
  frame->points = g_new (gfloat, (gsize) n_rays * frame->stride);
  frame->hits = g_new (gint32, n_rays);
  p3d_lidar_scene_set_frame (scene, index);
  frame->n_points = p3d_lidar_scene_render (scene, channels, frame->points,
      frame->hits);
}

static void
frame_clear (Frame * frame)
{
  g_free (frame->points);
  g_free (frame->hits);
  memset (frame, 0, sizeof (*frame));
}

/* Asserts two frames are equal byte for byte, naming the first float that
 * differs. */
static void
assert_frames_equal (const Frame * a, const Frame * b, const gchar * what)
{
  gsize i, n;

  fail_unless_equals_uint64 (a->n_points, b->n_points);
  n = a->n_points * a->stride;
  for (i = 0; i < n; i++) {
    if (memcmp (&a->points[i], &b->points[i], sizeof (gfloat)) != 0)
      fail ("%s: float %" G_GSIZE_FORMAT " (point %" G_GSIZE_FORMAT
          ", channel %u) differs: %.9g vs %.9g", what, i, i / a->stride,
          (guint) (i % a->stride), a->points[i], b->points[i]);
  }
  fail_unless (memcmp (a->hits, b->hits, a->n_points * sizeof (gint32)) == 0,
      "%s: hits differ", what);
}

static gboolean
frames_differ (const Frame * a, const Frame * b)
{
  return a->n_points != b->n_points || memcmp (a->points, b->points,
      a->n_points * a->stride * sizeof (gfloat)) != 0;
}

/* TRUE when @p lies in @box, grown by @margin. */
static gboolean
box_contains (const P3dcBox3d * box, const gfloat * p, gdouble margin)
{
  gdouble c = cos (box->yaw), s = sin (box->yaw);
  gdouble x = p[0] - box->x, y = p[1] - box->y;
  gdouble along = c * x + s * y, across = -s * x + c * y;

  return fabs (along) <= box->dx / 2 + margin
      && fabs (across) <= box->dy / 2 + margin
      && fabs (p[2] - box->z) <= box->dz / 2 + margin;
}

/* A scene with nothing in it, exact ranges. */
static void
empty_params (P3dLidarSceneParams * params)
{
  p3d_lidar_scene_params_init (params);
  params->cars = params->pedestrians = params->cyclists = 0;
  params->walls = FALSE;
  params->ground = FALSE;
  params->range_noise = 0.0;
}

GST_START_TEST (test_determinism)
{
  P3dLidarSceneParams params;
  P3dLidarScene *first, *second, *other;
  static const guint64 frames[] = { 0, 3, 17, 1000 };
  guint i;

  p3d_lidar_scene_params_init (&params);
  params.seed = 42;
  first = p3d_lidar_scene_new (&params);
  second = p3d_lidar_scene_new (&params);
  params.seed = 43;
  other = p3d_lidar_scene_new (&params);
  fail_unless (first && second && other);

  for (i = 0; i < G_N_ELEMENTS (frames); i++) {
    Frame a, b, c;
    P3dcBox3d boxes_a[128], boxes_b[128];
    guint n_a, n_b;

    frame_render (&a, first, frames[i], ALL_CHANNELS);
    frame_render (&b, second, frames[i], ALL_CHANNELS);
    frame_render (&c, other, frames[i], ALL_CHANNELS);
    assert_frames_equal (&a, &b, "same seed");
    fail_unless (frames_differ (&a, &c), "seeds 42 and 43 gave the same "
        "frame %" G_GUINT64_FORMAT, frames[i]);
    /* A realistic frame: most rays return. */
    fail_unless (a.n_points > p3d_lidar_scene_get_n_rays (first) * 9 / 10,
        "only %" G_GSIZE_FORMAT " points", a.n_points);

    n_a = p3d_lidar_scene_get_boxes (first, boxes_a, G_N_ELEMENTS (boxes_a));
    n_b = p3d_lidar_scene_get_boxes (second, boxes_b, G_N_ELEMENTS (boxes_b));
    fail_unless_equals_int (n_a, n_b);
    fail_unless (memcmp (boxes_a, boxes_b, n_a * sizeof (P3dcBox3d)) == 0);
    frame_clear (&a);
    frame_clear (&b);
    frame_clear (&c);
  }

  /* The same frame rendered again by the same scene, after others. */
  {
    Frame a, b;

    frame_render (&a, first, 5, ALL_CHANNELS);
    frame_render (&b, first, 6, ALL_CHANNELS);
    frame_clear (&b);
    frame_render (&b, first, 5, ALL_CHANNELS);
    assert_frames_equal (&a, &b, "frame 5 twice");
    frame_clear (&a);
    frame_clear (&b);
  }

  p3d_lidar_scene_free (first);
  p3d_lidar_scene_free (second);
  p3d_lidar_scene_free (other);
}

GST_END_TEST;

GST_START_TEST (test_motion)
{
  P3dLidarSceneParams params;
  P3dLidarScene *moving, *frozen;
  Frame a, b;

  p3d_lidar_scene_params_init (&params);
  params.seed = 7;
  moving = p3d_lidar_scene_new (&params);
  params.motion = FALSE;
  frozen = p3d_lidar_scene_new (&params);

  frame_render (&a, moving, 0, ALL_CHANNELS);
  frame_render (&b, moving, 4, ALL_CHANNELS);
  fail_unless (frames_differ (&a, &b), "frames 0 and 4 are the same with "
      "motion");
  frame_clear (&b);

  /* Without motion every frame is frame 0, noise included. */
  frame_render (&b, frozen, 4, ALL_CHANNELS);
  assert_frames_equal (&a, &b, "frame 4 without motion");
  frame_clear (&a);
  frame_clear (&b);

  p3d_lidar_scene_free (moving);
  p3d_lidar_scene_free (frozen);
}

GST_END_TEST;

/* An object moves with its velocity and yaw rate, and comes back at the
 * other end of the road. */
GST_START_TEST (test_object_motion)
{
  P3dLidarSceneParams params;
  P3dLidarScene *scene;
  P3dStreetObject object = { P3D_STREET_LABEL_CAR, 10.0, 3.5, 0.0, 4.0, 2.0,
    1.5, 10.0, 0.0, 0.5, 0.5
  };
  P3dcBox3d box;
  guint index;

  empty_params (&params);
  params.fps_n = 10;
  scene = p3d_lidar_scene_new (&params);
  index = p3d_lidar_scene_add_object (scene, &object);
  fail_unless_equals_int (index, 0);

  p3d_lidar_scene_set_frame (scene, 3);
  p3d_lidar_scene_get_object_box (scene, index, &box);
  fail_unless (fabsf (box.x - 13.0f) < 1e-5f, "x %g after 0.3 s", box.x);
  fail_unless (fabsf (box.y - 3.5f) < 1e-6f);
  fail_unless (fabsf (box.yaw - 0.15f) < 1e-6f, "yaw %g", box.yaw);
  fail_unless (fabsf (box.z - (0.75f - 1.73f)) < 1e-6f, "z %g", box.z);
  fail_unless_equals_int (box.label, P3D_STREET_LABEL_CAR);
  fail_unless_equals_float (box.score, 1.0f);

  /* 10 m + 9.5 s * 10 m/s = 105 m: past the end (100), back at -95. */
  p3d_lidar_scene_set_frame (scene, 95);
  p3d_lidar_scene_get_object_box (scene, index, &box);
  fail_unless (fabsf (box.x - (-95.0f)) < 1e-4f, "x %g after 9.5 s", box.x);
  fail_unless (box.yaw >= -G_PI && box.yaw < G_PI, "yaw %g", box.yaw);
  p3d_lidar_scene_free (scene);
}

GST_END_TEST;

/* Whether the ray from the origin along @d enters the box of @object
 * grown by @margin on every side (double precision, libm sin and cos). */
static gboolean
oracle_ray_hits (const P3dStreetObject * object, gdouble height,
    const gdouble d[3], gdouble margin)
{
  gdouble c = cos (object->yaw), s = sin (object->yaw);
  gdouble centre[3] = { object->x, object->y, object->dz / 2 - height };
  gdouble half[3] = { object->dx / 2 + margin, object->dy / 2 + margin,
    object->dz / 2 + margin
  };
  gdouble origin[3], dir[3], t_near = -G_MAXDOUBLE, t_far = G_MAXDOUBLE;
  guint axis;

  origin[0] = -(c * centre[0] + s * centre[1]);
  origin[1] = s * centre[0] - c * centre[1];
  origin[2] = -centre[2];
  dir[0] = c * d[0] + s * d[1];
  dir[1] = c * d[1] - s * d[0];
  dir[2] = d[2];
  for (axis = 0; axis < 3; axis++) {
    gdouble t1, t2;

    if (dir[axis] == 0.0) {
      if (fabs (origin[axis]) > half[axis])
        return FALSE;
      continue;
    }
    t1 = (-half[axis] - origin[axis]) / dir[axis];
    t2 = (half[axis] - origin[axis]) / dir[axis];
    t_near = MAX (t_near, MIN (t1, t2));
    t_far = MIN (t_far, MAX (t1, t2));
  }
  return t_near <= t_far && t_near > 0;
}

/* How many rays of @params hit @object alone: at least @strict (they hit
 * it shrunk by @margin), at most @loose (they hit it grown by @margin). */
static void
oracle_count (const P3dLidarSceneParams * params,
    const P3dStreetObject * object, gdouble margin, guint * strict,
    guint * loose)
{
  guint column, beam;

  *strict = *loose = 0;
  for (column = 0; column < params->points_per_revolution; column++) {
    gdouble azimuth = G_PI - 2.0 * G_PI * column /
        params->points_per_revolution;

    for (beam = 0; beam < params->beams; beam++) {
      gdouble elevation = (params->fov_down + (params->fov_up -
              params->fov_down) * beam / (params->beams - 1)) * G_PI / 180.0;
      gdouble d[3] = { cos (elevation) * cos (azimuth),
        cos (elevation) * sin (azimuth), sin (elevation)
      };

      *strict += oracle_ray_hits (object, params->sensor_height, d, -margin);
      *loose += oracle_ray_hits (object, params->sensor_height, d, margin);
    }
  }
}

/* The hand-worked case: a 4 x 2 x 1.5 m box whose front face is 8 m ahead.
 * Its points lie on the front face (x = 8) or the top (z = 1.5 - 1.73),
 * within the faces, with intensity = reflectivity * cos(incidence); their
 * number matches a double-precision count of the rays that hit it. */
GST_START_TEST (test_box_in_front)
{
  P3dLidarSceneParams params;
  P3dLidarScene *scene;
  P3dStreetObject object = { P3D_STREET_LABEL_CAR, 10.0, 0.0, 0.0, 4.0, 2.0,
    1.5, 0.0, 0.0, 0.0, 0.5
  };
  const gdouble h = 1.73, top = 1.5 - 1.73, eps = 1e-4;
  guint n_front = 0, n_top = 0, strict, loose;
  gsize i;
  Frame frame;

  empty_params (&params);
  scene = p3d_lidar_scene_new (&params);
  p3d_lidar_scene_add_object (scene, &object);
  frame_render (&frame, scene, 0, P3D_LIDAR_CHANNEL_INTENSITY);
  fail_unless (frame.n_points > 0);

  for (i = 0; i < frame.n_points; i++) {
    const gfloat *p = &frame.points[i * 4];
    gdouble range = sqrt ((gdouble) p[0] * p[0] + (gdouble) p[1] * p[1] +
        (gdouble) p[2] * p[2]);

    fail_unless_equals_int (frame.hits[i], 0);
    fail_unless (fabs (p[1]) <= 1.0 + eps && p[2] >= -h - eps
        && p[2] <= top + eps && p[0] >= 8.0 - eps && p[0] <= 12.0 + eps,
        "point %" G_GSIZE_FORMAT " (%g, %g, %g) outside the box", i, p[0],
        p[1], p[2]);
    if (fabs (p[0] - 8.0) <= eps) {
      /* front face, normal -x */
      n_front++;
      fail_unless (fabs (p[3] - 0.5 * p[0] / range) < 1e-5,
          "front point %" G_GSIZE_FORMAT " intensity %g, expected %g", i,
          p[3], 0.5 * p[0] / range);
    } else {
      fail_unless (fabs (p[2] - top) <= eps, "point %" G_GSIZE_FORMAT
          " (%g, %g, %g) neither on the front nor on the top", i, p[0], p[1],
          p[2]);
      n_top++;
      fail_unless (fabs (p[3] - 0.5 * fabs (p[2]) / range) < 1e-5,
          "top point %" G_GSIZE_FORMAT " intensity %g", i, p[3]);
    }
  }
  fail_unless (n_front > 0 && n_top > 0, "front %u, top %u", n_front, n_top);

  oracle_count (&params, &object, 1e-4, &strict, &loose);
  fail_unless (frame.n_points >= strict && frame.n_points <= loose,
      "%" G_GSIZE_FORMAT " points, the oracle says %u to %u",
      frame.n_points, strict, loose);
  frame_clear (&frame);
  p3d_lidar_scene_free (scene);
}

GST_END_TEST;

/* Boxes turned and placed around the sensor, one at a time: every point
 * lies on the box's surface, and every ray that hits it returns. */
GST_START_TEST (test_boxes_around)
{
  static const P3dStreetObject objects[] = {
    {P3D_STREET_LABEL_CAR, 3.0, 4.0, 0.7, 4.5, 1.9, 1.6, 0, 0, 0, 0.6},
    {P3D_STREET_LABEL_CYCLIST, -6.0, 2.0, 2.5, 1.8, 0.6, 1.7, 0, 0, 0, 0.4},
    {P3D_STREET_LABEL_PEDESTRIAN, 1.0, -1.5, -1.2, 0.7, 0.7, 1.75, 0, 0, 0,
        0.3},
    {P3D_STREET_LABEL_CAR, 40.0, -20.0, 3.0, 4.5, 1.9, 1.6, 0, 0, 0, 0.6},
  };
  guint k;

  for (k = 0; k < G_N_ELEMENTS (objects); k++) {
    P3dLidarSceneParams params;
    P3dLidarScene *scene;
    P3dcBox3d box, shrunk;
    guint strict, loose;
    Frame frame;
    gsize i;

    empty_params (&params);
    scene = p3d_lidar_scene_new (&params);
    p3d_lidar_scene_add_object (scene, &objects[k]);
    p3d_lidar_scene_get_object_box (scene, 0, &box);
    shrunk = box;
    shrunk.dx -= 2e-3f;
    shrunk.dy -= 2e-3f;
    shrunk.dz -= 2e-3f;
    frame_render (&frame, scene, 0, 0);
    for (i = 0; i < frame.n_points; i++) {
      const gfloat *p = &frame.points[i * 3];

      fail_unless (box_contains (&box, p, 1e-3)
          && !box_contains (&shrunk, p, 0.0), "object %u: point %"
          G_GSIZE_FORMAT " (%g, %g, %g) is not on the surface", k, i, p[0],
          p[1], p[2]);
    }
    oracle_count (&params, &objects[k], 1e-4, &strict, &loose);
    fail_unless (strict > 0, "object %u is not seen", k);
    fail_unless (frame.n_points >= strict && frame.n_points <= loose,
        "object %u: %" G_GSIZE_FORMAT " points, the oracle says %u to %u",
        k, frame.n_points, strict, loose);
    frame_clear (&frame);
    p3d_lidar_scene_free (scene);
  }
}

GST_END_TEST;

/* Range noise moves each point along its own ray, by at most 6 sigma. */
GST_START_TEST (test_range_noise)
{
  P3dLidarSceneParams params;
  P3dLidarScene *exact, *noisy;
  P3dStreetObject object = { P3D_STREET_LABEL_CAR, 10.0, 0.0, 0.0, 4.0, 2.0,
    1.5, 0.0, 0.0, 0.0, 0.5
  };
  gdouble sum = 0.0, sum2 = 0.0, sigma = 0.05;
  Frame a, b;
  gsize i;

  empty_params (&params);
  params.ground = TRUE;
  exact = p3d_lidar_scene_new (&params);
  params.range_noise = sigma;
  noisy = p3d_lidar_scene_new (&params);
  p3d_lidar_scene_add_object (exact, &object);
  p3d_lidar_scene_add_object (noisy, &object);
  frame_render (&a, exact, 0, 0);
  frame_render (&b, noisy, 0, 0);
  fail_unless_equals_uint64 (a.n_points, b.n_points);
  for (i = 0; i < a.n_points; i++) {
    const gfloat *p = &a.points[i * 3], *q = &b.points[i * 3];
    gdouble r = sqrt ((gdouble) p[0] * p[0] + (gdouble) p[1] * p[1] +
        (gdouble) p[2] * p[2]);
    gdouble s = sqrt ((gdouble) q[0] * q[0] + (gdouble) q[1] * q[1] +
        (gdouble) q[2] * q[2]);
    guint k;

    fail_unless (fabs (s - r) <= 6 * sigma + 1e-4, "point %" G_GSIZE_FORMAT
        " moved by %g", i, s - r);
    /* along the same ray */
    for (k = 0; k < 3; k++)
      fail_unless (fabs (q[k] / s - p[k] / r) < 1e-5, "point %"
          G_GSIZE_FORMAT " left its ray", i);
    sum += s - r;
    sum2 += (s - r) * (s - r);
  }
  /* Tens of thousands of samples: mean near 0, deviation near sigma. */
  fail_unless (a.n_points > 10000);
  fail_unless (fabs (sum / a.n_points) < sigma * 0.05, "mean %g",
      sum / a.n_points);
  fail_unless (fabs (sqrt (sum2 / a.n_points) - sigma) < sigma * 0.05,
      "deviation %g", sqrt (sum2 / a.n_points));
  frame_clear (&a);
  frame_clear (&b);
  p3d_lidar_scene_free (exact);
  p3d_lidar_scene_free (noisy);
}

GST_END_TEST;

/* The bare ground seen by beams that all point down: every ray returns
 * (the count is beams * points-per-revolution), at z = -height, at the
 * horizontal distance height / tan(-elevation) of its beam, with the time
 * of its column. */
GST_START_TEST (test_ground_only)
{
  P3dLidarSceneParams params;
  P3dLidarScene *scene;
  Frame frame;
  gdouble period;
  gsize i;

  empty_params (&params);
  params.ground = TRUE;
  params.beams = 16;
  params.points_per_revolution = 360;
  params.fov_up = -10.0;
  params.fov_down = -30.0;
  params.sensor_height = 2.5;
  params.fps_n = 20;
  period = 1.0 / 20;
  scene = p3d_lidar_scene_new (&params);
  fail_unless_equals_int (p3d_lidar_scene_get_n_rays (scene), 16 * 360);
  frame_render (&frame, scene, 0, ALL_CHANNELS);
  fail_unless_equals_uint64 (frame.n_points, 16 * 360);

  for (i = 0; i < frame.n_points; i++) {
    const gfloat *p = &frame.points[i * 6];
    guint column = i / 16, beam = i % 16;
    gdouble elevation = (-30.0 + 20.0 * beam / 15) * G_PI / 180.0;
    gdouble distance = sqrt ((gdouble) p[0] * p[0] + (gdouble) p[1] * p[1]);

    fail_unless_equals_int (frame.hits[i], P3D_LIDAR_HIT_GROUND);
    fail_unless (fabs (p[2] + 2.5) < 1e-5, "point %" G_GSIZE_FORMAT
        " z %.7g", i, p[2]);
    fail_unless (fabs (distance - 2.5 / tan (-elevation)) < 1e-4,
        "point %" G_GSIZE_FORMAT " at %g m, expected %g", i, distance,
        2.5 / tan (-elevation));
    fail_unless_equals_float (p[5], (gfloat) beam);
    fail_unless (fabs (p[4] - period * column / 360) < 1e-8,
        "point %" G_GSIZE_FORMAT " time %g", i, p[4]);
    fail_unless (p[3] >= 0.0f && p[3] <= 1.0f);
  }
  frame_clear (&frame);
  p3d_lidar_scene_free (scene);
}

GST_END_TEST;

/* Nothing to hit: no point at all. Objects only: only object hits. */
GST_START_TEST (test_empty_scene)
{
  P3dLidarSceneParams params;
  P3dLidarScene *scene;
  Frame frame;
  gsize i;

  empty_params (&params);
  scene = p3d_lidar_scene_new (&params);
  frame_render (&frame, scene, 0, ALL_CHANNELS);
  fail_unless_equals_uint64 (frame.n_points, 0);
  frame_clear (&frame);
  p3d_lidar_scene_free (scene);

  p3d_lidar_scene_params_init (&params);
  params.walls = FALSE;
  params.ground = FALSE;
  scene = p3d_lidar_scene_new (&params);
  frame_render (&frame, scene, 0, 0);
  fail_unless (frame.n_points > 0);
  for (i = 0; i < frame.n_points; i++)
    fail_unless (frame.hits[i] >= 0, "point %" G_GSIZE_FORMAT " hit %d", i,
        frame.hits[i]);
  frame_clear (&frame);
  p3d_lidar_scene_free (scene);
}

GST_END_TEST;

GST_START_TEST (test_max_range)
{
  P3dLidarSceneParams params;
  P3dLidarScene *full, *near;
  Frame a, b;
  gsize i;

  p3d_lidar_scene_params_init (&params);
  params.seed = 3;
  params.range_noise = 0.5;
  full = p3d_lidar_scene_new (&params);
  params.max_range = 25.0;
  near = p3d_lidar_scene_new (&params);
  frame_render (&a, full, 2, 0);
  frame_render (&b, near, 2, 0);
  fail_unless (b.n_points < a.n_points);
  for (i = 0; i < a.n_points; i++) {
    const gfloat *p = &a.points[i * 3];

    fail_unless (sqrt ((gdouble) p[0] * p[0] + (gdouble) p[1] * p[1] +
            (gdouble) p[2] * p[2]) <= 120.0 * (1 + 1e-6));
  }
  for (i = 0; i < b.n_points; i++) {
    const gfloat *p = &b.points[i * 3];
    gdouble range = sqrt ((gdouble) p[0] * p[0] + (gdouble) p[1] * p[1] +
        (gdouble) p[2] * p[2]);

    fail_unless (range <= 25.0 * (1 + 1e-6), "point %" G_GSIZE_FORMAT
        " at %g m", i, range);
  }
  frame_clear (&a);
  frame_clear (&b);
  p3d_lidar_scene_free (full);
  p3d_lidar_scene_free (near);
}

GST_END_TEST;

/* Channels: time strictly increases within each ring, lies within the
 * revolution; intensity in [0, 1]; ring is a beam index. */
GST_START_TEST (test_channels)
{
  P3dLidarSceneParams params;
  P3dLidarScene *scene;
  gfloat last_time[64];
  Frame frame;
  gsize i;
  guint ring;

  p3d_lidar_scene_params_init (&params);
  params.seed = 11;
  scene = p3d_lidar_scene_new (&params);
  frame_render (&frame, scene, 9, ALL_CHANNELS);
  for (ring = 0; ring < 64; ring++)
    last_time[ring] = -1.0f;
  for (i = 0; i < frame.n_points; i++) {
    const gfloat *p = &frame.points[i * 6];

    fail_unless (isfinite (p[0]) && isfinite (p[1]) && isfinite (p[2]));
    fail_unless (p[3] >= 0.0f && p[3] <= 1.0f, "intensity %g", p[3]);
    fail_unless (p[4] >= 0.0f && p[4] < 0.1f, "time %g", p[4]);
    ring = (guint) p[5];
    fail_unless (p[5] == (gfloat) ring && ring < 64, "ring %g", p[5]);
    fail_unless (p[4] > last_time[ring], "point %" G_GSIZE_FORMAT
        ": time %g after %g in ring %u", i, p[4], last_time[ring], ring);
    last_time[ring] = p[4];
  }

  /* Formats without some channels write the same x, y, z. */
  {
    Frame xyz;

    frame_render (&xyz, scene, 9, 0);
    fail_unless_equals_uint64 (xyz.n_points, frame.n_points);
    for (i = 0; i < frame.n_points; i++)
      fail_unless (memcmp (&xyz.points[i * 3], &frame.points[i * 6],
              3 * sizeof (gfloat)) == 0);
    frame_clear (&xyz);
  }
  frame_clear (&frame);
  p3d_lidar_scene_free (scene);
}

GST_END_TEST;

/* Every object of the default scene is where its box says: the points
 * that hit it lie in it, the ground points on the ground. */
GST_START_TEST (test_boxes_contain_points)
{
  P3dLidarSceneParams params;
  P3dLidarScene *scene;
  static const guint64 frames[] = { 0, 50 };
  guint f;

  p3d_lidar_scene_params_init (&params);
  params.range_noise = 0.0;
  params.seed = 5;
  scene = p3d_lidar_scene_new (&params);
  fail_unless_equals_int (p3d_lidar_scene_get_n_objects (scene),
      params.cars + params.pedestrians + params.cyclists);

  for (f = 0; f < G_N_ELEMENTS (frames); f++) {
    guint n_objects = p3d_lidar_scene_get_n_objects (scene), i;
    guint *hits_per_object = g_new0 (guint, n_objects);
    guint labels[3] = { 0, 0, 0 };
    P3dcBox3d boxes[64];
    guint n_boxes;
    Frame frame;
    gsize p;

    frame_render (&frame, scene, frames[f], 0);
    for (p = 0; p < frame.n_points; p++) {
      const gfloat *point = &frame.points[p * 3];
      gint32 hit = frame.hits[p];

      if (hit >= 0) {
        P3dcBox3d box;

        p3d_lidar_scene_get_object_box (scene, hit, &box);
        fail_unless (box_contains (&box, point, 1e-3), "frame %"
            G_GUINT64_FORMAT ": point %" G_GSIZE_FORMAT " (%g, %g, %g) is "
            "not in the box of object %d at (%g, %g, %g)", frames[f], p,
            point[0], point[1], point[2], hit, box.x, box.y, box.z);
        hits_per_object[hit]++;
      } else if (hit == P3D_LIDAR_HIT_GROUND) {
        fail_unless (fabsf (point[2] + 1.73f) < 1e-4f, "ground point %"
            G_GSIZE_FORMAT " at z %g", p, point[2]);
      } else {
        fail_unless_equals_int (hit, P3D_LIDAR_HIT_WALL);
      }
    }

    /* All objects lie within 120 m: the true boxes are all of them. */
    n_boxes = p3d_lidar_scene_get_boxes (scene, boxes, G_N_ELEMENTS (boxes));
    fail_unless_equals_int (n_boxes, n_objects);
    for (i = 0; i < n_boxes; i++) {
      P3dcBox3d box;

      p3d_lidar_scene_get_object_box (scene, i, &box);
      fail_unless (memcmp (&box, &boxes[i], sizeof (box)) == 0);
      fail_unless_equals_float (boxes[i].score, 1.0f);
      fail_unless (boxes[i].label >= 0 && boxes[i].label <= 2);
      labels[boxes[i].label]++;
    }
    fail_unless_equals_int (labels[P3D_STREET_LABEL_CAR], params.cars);
    fail_unless_equals_int (labels[P3D_STREET_LABEL_PEDESTRIAN],
        params.pedestrians);
    fail_unless_equals_int (labels[P3D_STREET_LABEL_CYCLIST], params.cyclists);

    /* Some objects are seen at all (others may hide behind them). */
    for (i = 0, p = 0; i < n_objects; i++)
      p += hits_per_object[i] > 0;
    fail_unless (p >= n_objects / 3, "only %" G_GSIZE_FORMAT " of %u "
        "objects seen", p, n_objects);
    g_free (hits_per_object);
    frame_clear (&frame);
  }
  p3d_lidar_scene_free (scene);
}

GST_END_TEST;

/* Half extents along x and y of @box's footprint's bounding rectangle. */
static void
aabb_half (const P3dcBox3d * box, gdouble * half_x, gdouble * half_y)
{
  gdouble c = fabs (cos (box->yaw)), s = fabs (sin (box->yaw));

  *half_x = box->dx / 2 * c + box->dy / 2 * s;
  *half_y = box->dx / 2 * s + box->dy / 2 * c;
}

/* Objects never overlap, with the most objects the road takes,
 * at any time. */
GST_START_TEST (test_objects_apart)
{
  P3dLidarSceneParams params;
  P3dLidarScene *scene;
  static const guint64 frames[] = { 0, 37, 1234 };
  guint f, i, j, n;

  p3d_lidar_scene_params_init (&params);
  params.cars = P3D_STREET_MAX_CARS;
  params.pedestrians = P3D_STREET_MAX_PEDESTRIANS;
  params.cyclists = P3D_STREET_MAX_CYCLISTS;
  scene = p3d_lidar_scene_new (&params);
  n = p3d_lidar_scene_get_n_objects (scene);
  fail_unless_equals_int (n, P3D_STREET_MAX_CARS + P3D_STREET_MAX_PEDESTRIANS +
      P3D_STREET_MAX_CYCLISTS);

  for (f = 0; f < G_N_ELEMENTS (frames); f++) {
    P3dcBox3d *boxes = g_new (P3dcBox3d, n);

    p3d_lidar_scene_set_frame (scene, frames[f]);
    for (i = 0; i < n; i++)
      p3d_lidar_scene_get_object_box (scene, i, &boxes[i]);
    for (i = 0; i < n; i++) {
      gdouble xi, yi;

      /* Nothing stands on the sensor. */
      aabb_half (&boxes[i], &xi, &yi);
      fail_unless (fabs (boxes[i].x) > xi + 0.5 || fabs (boxes[i].y) > yi
          + 0.5, "object %u at (%g, %g) covers the sensor", i, boxes[i].x,
          boxes[i].y);
      for (j = i + 1; j < n; j++) {
        gdouble xj, yj, dx = fabs (boxes[i].x - boxes[j].x);

        aabb_half (&boxes[j], &xj, &yj);
        dx = MIN (dx, P3D_STREET_LENGTH - dx);
        fail_unless (fabs (boxes[i].y - boxes[j].y) >= yi + yj
            || dx >= xi + xj, "frame %" G_GUINT64_FORMAT ": objects %u and "
            "%u overlap at (%g, %g) and (%g, %g)", frames[f], i, j,
            boxes[i].x, boxes[i].y, boxes[j].x, boxes[j].y);
      }
    }
    g_free (boxes);
  }
  p3d_lidar_scene_free (scene);
}

GST_END_TEST;

/* Candidates: per_object boxes around each true box, centred inside it,
 * with its label and a score in [0.28, 0.98]; false positives below 0.25;
 * deterministic; a smaller capacity keeps a prefix. */
GST_START_TEST (test_candidates)
{
  P3dLidarSceneParams params;
  P3dLidarScene *scene, *again;
  P3dcBox3d truths[64], *candidates, *second, *prefix;
  guint n_truths, n_candidates, per_object = 6, n_false = 0, i, j;
  guint *around;

  p3d_lidar_scene_params_init (&params);
  params.seed = 21;
  scene = p3d_lidar_scene_new (&params);
  again = p3d_lidar_scene_new (&params);
  p3d_lidar_scene_set_frame (scene, 12);
  p3d_lidar_scene_set_frame (again, 12);

  n_truths = p3d_lidar_scene_get_boxes (scene, truths, G_N_ELEMENTS (truths));
  n_candidates = p3d_lidar_scene_get_candidates (scene, per_object, NULL, 0);
  fail_unless_equals_int (n_candidates, n_truths * per_object +
      p3d_lidar_candidates_false_positives (n_truths));
  candidates = g_new (P3dcBox3d, n_candidates);
  second = g_new (P3dcBox3d, n_candidates);
  prefix = g_new (P3dcBox3d, 10);
  fail_unless_equals_int (p3d_lidar_scene_get_candidates (scene, per_object,
          candidates, n_candidates), n_candidates);
  fail_unless_equals_int (p3d_lidar_scene_get_candidates (again, per_object,
          second, n_candidates), n_candidates);
  fail_unless (memcmp (candidates, second,
          n_candidates * sizeof (P3dcBox3d)) == 0);
  fail_unless_equals_int (p3d_lidar_scene_get_candidates (scene, per_object,
          prefix, 10), n_candidates);
  fail_unless (memcmp (candidates, prefix, 10 * sizeof (P3dcBox3d)) == 0);

  around = g_new0 (guint, n_truths);
  for (i = 0; i < n_candidates; i++) {
    const P3dcBox3d *c = &candidates[i];
    gfloat centre[3] = { c->x, c->y, c->z };
    guint found = 0;

    fail_unless (c->label >= 0 && c->label <= 2);
    fail_unless (c->dx > 0 && c->dy > 0 && c->dz > 0);
    fail_unless (c->yaw >= -G_PI && c->yaw < G_PI);
    if (c->score < 0.25f) {
      n_false++;
      fail_unless (c->score >= 0.05f);
      continue;
    }
    fail_unless (c->score >= 0.28f && c->score <= 0.98f, "score %g", c->score);
    for (j = 0; j < n_truths; j++) {
      if (truths[j].label == c->label && box_contains (&truths[j], centre,
              1e-4)) {
        around[j]++;
        found++;
      }
    }
    fail_unless_equals_int (found, 1);
  }
  fail_unless_equals_int (n_false,
      p3d_lidar_candidates_false_positives (n_truths));
  for (j = 0; j < n_truths; j++)
    fail_unless_equals_int (around[j], per_object);

  /* Shuffled: the first per_object candidates are not all of one object. */
  for (i = 1; i < per_object; i++)
    if (candidates[i].label != candidates[0].label
        || fabsf (candidates[i].x - candidates[0].x) > 3.0f)
      break;
  fail_unless (i < per_object, "candidates are not shuffled");

  g_free (around);
  g_free (candidates);
  g_free (second);
  g_free (prefix);
  p3d_lidar_scene_free (scene);
  p3d_lidar_scene_free (again);
}

GST_END_TEST;

GST_START_TEST (test_params_check)
{
  P3dLidarSceneParams params;
  gchar *why = NULL;

  p3d_lidar_scene_params_init (&params);
  fail_unless (p3d_lidar_scene_params_check (&params, &why) == NULL);
  fail_unless (why == NULL);

  params.beams = 0;
  fail_unless_equals_string (p3d_lidar_scene_params_check (&params, &why),
      "beams");
  fail_unless (strstr (why, "0") != NULL, "%s", why);
  g_clear_pointer (&why, g_free);
  fail_unless (p3d_lidar_scene_new (&params) == NULL);

  p3d_lidar_scene_params_init (&params);
  params.fov_up = -30.0;
  params.fov_down = -20.0;
  fail_unless_equals_string (p3d_lidar_scene_params_check (&params, &why),
      "fov-up");
  fail_unless (strstr (why, "-30") && strstr (why, "-20"), "%s", why);
  g_clear_pointer (&why, g_free);
  params.fov_up = params.fov_down;
  fail_unless_equals_string (p3d_lidar_scene_params_check (&params, NULL),
      "fov-up");

  p3d_lidar_scene_params_init (&params);
  params.points_per_revolution = 0;
  fail_unless_equals_string (p3d_lidar_scene_params_check (&params, NULL),
      "points-per-revolution");
  params.points_per_revolution = P3D_LIDAR_MAX_RAYS;
  fail_unless_equals_string (p3d_lidar_scene_params_check (&params, NULL),
      "points-per-revolution");

  p3d_lidar_scene_params_init (&params);
  params.fps_n = 0;
  fail_unless_equals_string (p3d_lidar_scene_params_check (&params, NULL),
      "framerate");

  p3d_lidar_scene_params_init (&params);
  params.max_range = 0.0;
  fail_unless_equals_string (p3d_lidar_scene_params_check (&params, NULL),
      "max-range");

  p3d_lidar_scene_params_init (&params);
  params.cars = P3D_STREET_MAX_CARS + 1;
  fail_unless_equals_string (p3d_lidar_scene_params_check (&params, NULL),
      "cars");
}

GST_END_TEST;

/* The default frame and the 32-beam setting are the sizes the docs give. */
GST_START_TEST (test_frame_sizes)
{
  P3dLidarSceneParams params;
  P3dLidarScene *scene;
  Frame frame;

  p3d_lidar_scene_params_init (&params);
  scene = p3d_lidar_scene_new (&params);
  fail_unless_equals_int (p3d_lidar_scene_get_n_rays (scene), 64 * 1900);
  frame_render (&frame, scene, 0, 0);
  fail_unless (frame.n_points > 115000 && frame.n_points < 125000,
      "%" G_GSIZE_FORMAT " points", frame.n_points);
  frame_clear (&frame);
  p3d_lidar_scene_free (scene);

  params.beams = 32;
  params.fov_up = 10.0;
  params.fov_down = -30.0;
  params.points_per_revolution = 1084;
  params.fps_n = 20;
  scene = p3d_lidar_scene_new (&params);
  frame_render (&frame, scene, 0, 0);
  fail_unless (frame.n_points > 30000 && frame.n_points < 34688,
      "%" G_GSIZE_FORMAT " points", frame.n_points);
  frame_clear (&frame);
  p3d_lidar_scene_free (scene);
}

GST_END_TEST;

static Suite *
pointcloudtestsrc_scene_suite (void)
{
  Suite *s = suite_create ("pointcloudtestsrc_scene");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_determinism);
  tcase_add_test (tc, test_motion);
  tcase_add_test (tc, test_object_motion);
  tcase_add_test (tc, test_box_in_front);
  tcase_add_test (tc, test_boxes_around);
  tcase_add_test (tc, test_range_noise);
  tcase_add_test (tc, test_ground_only);
  tcase_add_test (tc, test_empty_scene);
  tcase_add_test (tc, test_max_range);
  tcase_add_test (tc, test_channels);
  tcase_add_test (tc, test_boxes_contain_points);
  tcase_add_test (tc, test_objects_apart);
  tcase_add_test (tc, test_candidates);
  tcase_add_test (tc, test_params_check);
  tcase_add_test (tc, test_frame_sizes);
  return s;
}

P3D_CHECK_MAIN (pointcloudtestsrc_scene);
