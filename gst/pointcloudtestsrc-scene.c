/* The lidar of pointcloudtestsrc over the synthetic street: its parameters
 * and the street it sees; see pointcloudtestsrc-scene.h. The ray caster is
 * in pointcloudtestsrc-raycast.c, the fake detector in
 * pointcloudtestsrc-detector.c, the street in p3dstreet.c. */
#include <string.h>

#include "box_overlap.h"
#include "pointcloudtestsrc-scene-private.h"

/* The street's part of @params. */
static void
street_params (const P3dLidarSceneParams * params, P3dStreetParams * street)
{
  p3d_street_params_init (street);
  street->seed = params->seed;
  street->cars = params->cars;
  street->pedestrians = params->pedestrians;
  street->cyclists = params->cyclists;
  street->walls = params->walls;
  street->ground = params->ground;
  street->motion = params->motion;
  street->sensor_height = params->sensor_height;
}

void
p3d_lidar_scene_params_init (P3dLidarSceneParams * params)
{
  P3dStreetParams street;

  g_return_if_fail (params != NULL);
  memset (params, 0, sizeof (*params));
  params->beams = P3D_LIDAR_DEFAULT_BEAMS;
  params->points_per_revolution = P3D_LIDAR_DEFAULT_POINTS_PER_REVOLUTION;
  params->fov_up = P3D_LIDAR_DEFAULT_FOV_UP;
  params->fov_down = P3D_LIDAR_DEFAULT_FOV_DOWN;
  params->max_range = P3D_LIDAR_DEFAULT_MAX_RANGE;
  params->range_noise = P3D_LIDAR_DEFAULT_RANGE_NOISE;
  params->fps_n = P3D_LIDAR_DEFAULT_FPS_N;
  params->fps_d = P3D_LIDAR_DEFAULT_FPS_D;

  p3d_street_params_init (&street);
  params->sensor_height = street.sensor_height;
  params->seed = street.seed;
  params->cars = street.cars;
  params->pedestrians = street.pedestrians;
  params->cyclists = street.cyclists;
  params->walls = street.walls;
  params->ground = street.ground;
  params->motion = street.motion;
}

const gchar *
p3d_lidar_scene_params_check (const P3dLidarSceneParams * params, gchar ** why)
{
  const gchar *property = NULL;
  gchar *sentence = NULL;
  P3dStreetParams street;

  g_return_val_if_fail (params != NULL, "params");

  street_params (params, &street);
  if (params->beams == 0 || params->beams > P3D_LIDAR_MAX_BEAMS) {
    property = "beams";
    sentence = g_strdup_printf ("beams is %u: the lidar needs 1 to %u beams",
        params->beams, P3D_LIDAR_MAX_BEAMS);
  } else if (params->points_per_revolution == 0) {
    property = "points-per-revolution";
    sentence = g_strdup ("points-per-revolution is 0: each beam needs at "
        "least one firing per revolution");
  } else if ((guint64) params->beams * params->points_per_revolution >
      P3D_LIDAR_MAX_RAYS) {
    property = "points-per-revolution";
    sentence = g_strdup_printf ("beams (%u) times points-per-revolution (%u) "
        "is more than %u rays per frame", params->beams,
        params->points_per_revolution, P3D_LIDAR_MAX_RAYS);
  } else if (!(params->fov_up <= 90.0 && params->fov_down >= -90.0)) {
    property = params->fov_up > 90.0 ? "fov-up" : "fov-down";
    sentence = g_strdup_printf ("fov-up (%g) and fov-down (%g) must lie "
        "within [-90, 90] degrees", params->fov_up, params->fov_down);
  } else if (!(params->fov_up > params->fov_down)) {
    property = "fov-up";
    sentence = g_strdup_printf ("fov-up (%g degrees) must be greater than "
        "fov-down (%g degrees)", params->fov_up, params->fov_down);
  } else if (!(params->max_range > 0.0 && params->max_range <= 1e4)) {
    property = "max-range";
    sentence = g_strdup_printf ("max-range is %g: it must be in (0, 10000] "
        "metres", params->max_range);
  } else if (!(params->range_noise >= 0.0 && params->range_noise <= 100.0)) {
    property = "range-noise";
    sentence = g_strdup_printf ("range-noise is %g: it must be in [0, 100] "
        "metres", params->range_noise);
  } else if (params->fps_n <= 0 || params->fps_d <= 0) {
    property = "framerate";
    sentence = g_strdup_printf ("framerate is %d/%d: it must be positive "
        "(one revolution per frame)", params->fps_n, params->fps_d);
  } else {
    return p3d_street_params_check (&street, why);
  }

  if (why)
    *why = sentence;
  else
    g_free (sentence);
  return property;
}

P3dLidarScene *
p3d_lidar_scene_new (const P3dLidarSceneParams * params)
{
  P3dLidarScene *scene;
  P3dStreetParams street;
  guint beams, columns, i;
  gdouble period;

  g_return_val_if_fail (params != NULL, NULL);
  if (p3d_lidar_scene_params_check (params, NULL) != NULL)
    return NULL;

  scene = g_new0 (P3dLidarScene, 1);
  scene->params = *params;
  street_params (params, &street);
  scene->street = p3d_street_new (&street);
  beams = params->beams;
  columns = params->points_per_revolution;
  scene->n_rays = beams * columns;
  scene->max_range = (gfloat) params->max_range;
  scene->range_noise = (gfloat) params->range_noise;
  scene->sensor_height = (gfloat) params->sensor_height;
  /* The noise is at most 6 sigma, so farther hits can never come back
   * within range. */
  scene->hit_limit = scene->max_range + 6.001f * scene->range_noise + 1.0f;

  scene->column_cos = g_new (gfloat, columns);
  scene->column_sin = g_new (gfloat, columns);
  scene->column_time = g_new (gfloat, columns);
  period = (gdouble) params->fps_d / params->fps_n;
  for (i = 0; i < columns; i++) {
    /* From behind (+pi), clockwise seen from above. */
    gfloat azimuth = (gfloat) (G_PI - 2.0 * G_PI * i / columns);

    p3dc_sincos (azimuth, &scene->column_sin[i], &scene->column_cos[i]);
    scene->column_time[i] = (gfloat) (period * i / columns);
  }

  scene->beam_cos = g_new (gfloat, beams);
  scene->beam_sin = g_new (gfloat, beams);
  for (i = 0; i < beams; i++) {
    gdouble degrees = beams == 1 ? (params->fov_up + params->fov_down) / 2 :
        params->fov_down + (params->fov_up - params->fov_down) * i /
        (beams - 1);

    p3dc_sincos ((gfloat) (degrees * (G_PI / 180.0)), &scene->beam_sin[i],
        &scene->beam_cos[i]);
  }

  p3d_lidar_scene_set_frame (scene, 0);
  return scene;
}

void
p3d_lidar_scene_free (P3dLidarScene * scene)
{
  if (scene == NULL)
    return;
  p3d_street_free (scene->street);
  g_free (scene->column_cos);
  g_free (scene->column_sin);
  g_free (scene->column_time);
  g_free (scene->beam_cos);
  g_free (scene->beam_sin);
  g_free (scene->candidates);
  g_free (scene);
}

const P3dLidarSceneParams *
p3d_lidar_scene_get_params (const P3dLidarScene * scene)
{
  return &scene->params;
}

guint
p3d_lidar_scene_get_n_rays (const P3dLidarScene * scene)
{
  return scene->n_rays;
}

guint
p3d_lidar_channels_get_count (P3dLidarChannels channels)
{
  return 3 + ((channels & P3D_LIDAR_CHANNEL_INTENSITY) ? 1 : 0) +
      ((channels & P3D_LIDAR_CHANNEL_TIME) ? 1 : 0) +
      ((channels & P3D_LIDAR_CHANNEL_RING) ? 1 : 0);
}

guint
p3d_lidar_scene_get_n_objects (const P3dLidarScene * scene)
{
  return p3d_street_get_n_objects (scene->street);
}

guint
p3d_lidar_scene_add_object (P3dLidarScene * scene,
    const P3dStreetObject * object)
{
  return p3d_street_add_object (scene->street, object);
}

void
p3d_lidar_scene_clear_objects (P3dLidarScene * scene)
{
  p3d_street_clear_objects (scene->street);
}

void
p3d_lidar_scene_set_frame (P3dLidarScene * scene, guint64 frame)
{
  p3d_street_set_frame (scene->street, frame, scene->params.fps_n,
      scene->params.fps_d);
  scene->noise_frame = scene->params.motion ? frame : 0;
}

void
p3d_lidar_scene_get_object_box (const P3dLidarScene * scene, guint index,
    P3dcBox3d * box)
{
  p3d_street_get_object_box (scene->street, index, box);
}

guint
p3d_lidar_scene_get_boxes (const P3dLidarScene * scene, P3dcBox3d * boxes,
    guint capacity)
{
  gdouble limit = scene->params.max_range;
  guint n_objects = p3d_street_get_n_objects (scene->street);
  guint i, count = 0;

  for (i = 0; i < n_objects; i++) {
    P3dcBox3d box;

    p3d_street_get_object_box (scene->street, i, &box);
    if ((gdouble) box.x * box.x + (gdouble) box.y * box.y > limit * limit)
      continue;
    if (count < capacity)
      boxes[count] = box;
    count++;
  }
  return count;
}
