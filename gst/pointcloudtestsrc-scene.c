/* The synthetic street of pointcloudtestsrc: its parameters, the objects
 * placed on the road and the walls, and their poses frame by frame; see
 * pointcloudtestsrc-scene.h. The ray caster is in pointcloudtestsrc-raycast.c, the fake detector in
 * pointcloudtestsrc-detector.c. */
#include <math.h>
#include <string.h>

#include "box_overlap.h"
#include "pointcloudtestsrc-scene-private.h"

/* Nothing is placed in the sensor's lane within this distance. */
#define EGO_CLEARANCE 7.0

static const Track car_tracks[] = {
  {-3.5, 0.0, TRUE},
  {0.0, 0.0, FALSE},
  {3.5, G_PI, TRUE},
  {7.0, G_PI, TRUE},
  {-6.6, 0.0, FALSE},
};

static const Track cyclist_tracks[] = {
  {-8.6, 0.0, TRUE},
  {9.6, G_PI, TRUE},
};

/* Heading 0 here stands for "either way": each track picks one. */
static const Track pedestrian_tracks[] = {
  {-10.2, 0.0, TRUE},
  {-11.3, 0.0, TRUE},
  {-12.4, 0.0, TRUE},
  {11.2, 0.0, TRUE},
  {12.3, 0.0, TRUE},
  {13.4, 0.0, TRUE},
};

const ObjectClass p3d_lidar_object_classes[P3D_LIDAR_N_OBJECT_CLASSES] = {
  {P3D_LIDAR_LABEL_CAR, car_tracks, G_N_ELEMENTS (car_tracks), 10.0,
        {4.2, 4.9}, {1.75, 2.0}, {1.45, 1.75}, {7.0, 14.0}, {0.3, 0.9}, 0.03,
      0.0, STREAM_CARS},
  {P3D_LIDAR_LABEL_PEDESTRIAN, pedestrian_tracks,
        G_N_ELEMENTS (pedestrian_tracks), 2.5, {0.6, 0.75}, {0.6, 0.75},
        {1.6, 1.9}, {0.8, 1.6}, {0.2, 0.5}, G_PI, 0.5,
      STREAM_PEDESTRIANS},
  {P3D_LIDAR_LABEL_CYCLIST, cyclist_tracks, G_N_ELEMENTS (cyclist_tracks),
        5.0, {1.7, 1.9}, {0.55, 0.7}, {1.6, 1.8}, {3.0, 6.0}, {0.3, 0.6},
      0.03, 0.0, STREAM_CYCLISTS},
};

/* x wrapped into [-L/2, L/2): fmod is exact. */
static gdouble
wrap_along_road (gdouble x)
{
  gdouble w = fmod (x + P3D_LIDAR_SCENE_LENGTH / 2, P3D_LIDAR_SCENE_LENGTH);

  if (w < 0)
    w += P3D_LIDAR_SCENE_LENGTH;
  return w - P3D_LIDAR_SCENE_LENGTH / 2;
}

gdouble
p3d_lidar_wrap_angle (gdouble angle)
{
  gdouble w = fmod (angle + G_PI, 2 * G_PI);

  if (w < 0)
    w += 2 * G_PI;
  return w - G_PI;
}

void
p3d_lidar_scene_params_init (P3dLidarSceneParams * params)
{
  g_return_if_fail (params != NULL);
  memset (params, 0, sizeof (*params));
  params->beams = P3D_LIDAR_DEFAULT_BEAMS;
  params->points_per_revolution = P3D_LIDAR_DEFAULT_POINTS_PER_REVOLUTION;
  params->fov_up = P3D_LIDAR_DEFAULT_FOV_UP;
  params->fov_down = P3D_LIDAR_DEFAULT_FOV_DOWN;
  params->max_range = P3D_LIDAR_DEFAULT_MAX_RANGE;
  params->range_noise = P3D_LIDAR_DEFAULT_RANGE_NOISE;
  params->sensor_height = P3D_LIDAR_DEFAULT_SENSOR_HEIGHT;
  params->fps_n = P3D_LIDAR_DEFAULT_FPS_N;
  params->fps_d = P3D_LIDAR_DEFAULT_FPS_D;
  params->seed = 0;
  params->cars = P3D_LIDAR_DEFAULT_CARS;
  params->pedestrians = P3D_LIDAR_DEFAULT_PEDESTRIANS;
  params->cyclists = P3D_LIDAR_DEFAULT_CYCLISTS;
  params->walls = TRUE;
  params->ground = TRUE;
  params->motion = TRUE;
}

const gchar *
p3d_lidar_scene_params_check (const P3dLidarSceneParams * params, gchar ** why)
{
  const gchar *property = NULL;
  gchar *sentence = NULL;

  g_return_val_if_fail (params != NULL, "params");

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
  } else if (!(params->sensor_height >= 0.0 && params->sensor_height <= 100.0)) {
    property = "sensor-height";
    sentence = g_strdup_printf ("sensor-height is %g: it must be in [0, 100] "
        "metres", params->sensor_height);
  } else if (params->fps_n <= 0 || params->fps_d <= 0) {
    property = "framerate";
    sentence = g_strdup_printf ("framerate is %d/%d: it must be positive "
        "(one revolution per frame)", params->fps_n, params->fps_d);
  } else if (params->cars > P3D_LIDAR_MAX_CARS) {
    property = "cars";
    sentence = g_strdup_printf ("cars is %u: the road has room for %u",
        params->cars, P3D_LIDAR_MAX_CARS);
  } else if (params->pedestrians > P3D_LIDAR_MAX_PEDESTRIANS) {
    property = "pedestrians";
    sentence = g_strdup_printf ("pedestrians is %u: the sidewalks have room "
        "for %u", params->pedestrians, P3D_LIDAR_MAX_PEDESTRIANS);
  } else if (params->cyclists > P3D_LIDAR_MAX_CYCLISTS) {
    property = "cyclists";
    sentence = g_strdup_printf ("cyclists is %u: the bike lanes have room "
        "for %u", params->cyclists, P3D_LIDAR_MAX_CYCLISTS);
  }

  if (why)
    *why = sentence;
  else
    g_free (sentence);
  return property;
}

/* Places @count objects of @klass in distinct slots of its tracks. */
static void
place_objects (P3dLidarScene * scene, const ObjectClass * klass, guint count)
{
  guint slots_per_track = (guint) (P3D_LIDAR_SCENE_LENGTH / klass->slot + 0.5);
  guint n_slots = slots_per_track * klass->n_tracks, n_free = 0, i;
  guint *slots = g_new (guint, n_slots);
  gdouble speed[8], heading[8];
  P3dLidarRng rng;

  g_assert (klass->n_tracks <= G_N_ELEMENTS (speed));
  p3d_lidar_rng_init (&rng, scene->params.seed, klass->stream, 0);
  for (i = 0; i < klass->n_tracks; i++) {
    const Track *track = &klass->tracks[i];

    speed[i] = p3d_lidar_rng_uniform (&rng, klass->speed[0], klass->speed[1]);
    if (!track->moving)
      speed[i] = 0.0;
    heading[i] = track->heading;
    if (klass->label == P3D_LIDAR_LABEL_PEDESTRIAN)
      heading[i] = p3d_lidar_rng_below (&rng, 2) ? G_PI : 0.0;
  }

  /* Free slots, the sensor's own surroundings left out. */
  for (i = 0; i < n_slots; i++) {
    const Track *track = &klass->tracks[i / slots_per_track];
    gdouble start = -P3D_LIDAR_SCENE_LENGTH / 2 +
        klass->slot * (i % slots_per_track);

    if (fabs (track->y) < 1.0 && start < EGO_CLEARANCE
        && start + klass->slot > -EGO_CLEARANCE)
      continue;
    slots[n_free++] = i;
  }

  /* The first @count of a partial Fisher-Yates shuffle. */
  for (i = 0; i < count && i < n_free; i++) {
    guint pick = i + p3d_lidar_rng_below (&rng, n_free - i);
    guint slot = slots[pick];
    guint track_index = slot / slots_per_track;
    P3dLidarObject object;
    gdouble room;

    slots[pick] = slots[i];
    slots[i] = slot;

    object.label = klass->label;
    object.dx = p3d_lidar_rng_uniform (&rng, klass->dx[0], klass->dx[1]);
    object.dy = p3d_lidar_rng_uniform (&rng, klass->dy[0], klass->dy[1]);
    object.dz = p3d_lidar_rng_uniform (&rng, klass->dz[0], klass->dz[1]);
    /* Room to move within the slot: its length less the object's
     * diagonal (it may turn) and a margin. */
    room = klass->slot - sqrt (object.dx * object.dx + object.dy * object.dy)
        - 0.4;
    object.x = -P3D_LIDAR_SCENE_LENGTH / 2 +
        klass->slot * (slot % slots_per_track + 0.5) +
        p3d_lidar_rng_uniform (&rng, -0.5, 0.5) * MAX (room, 0.0);
    object.y = klass->tracks[track_index].y;
    object.yaw = p3d_lidar_wrap_angle (heading[track_index] +
        p3d_lidar_rng_uniform (&rng, -klass->yaw_jitter, klass->yaw_jitter));
    object.vx = heading[track_index] == 0.0 ? speed[track_index] :
        -speed[track_index];
    object.vy = 0.0;
    object.yaw_rate =
        p3d_lidar_rng_uniform (&rng, -klass->yaw_rate, klass->yaw_rate);
    object.reflectivity =
        p3d_lidar_rng_uniform (&rng, klass->reflectivity[0],
        klass->reflectivity[1]);
    p3d_lidar_scene_add_object (scene, &object);
  }
  g_free (slots);
}

/* Fills @box's ray-casting view from its pose. */
static void
scene_box_update (SceneBox * box)
{
  gfloat radius, distance2, limit;

  p3dc_sincos (box->yaw, &box->sin_yaw, &box->cos_yaw);
  box->origin[0] = -(box->cos_yaw * box->x + box->sin_yaw * box->y);
  box->origin[1] = box->sin_yaw * box->x - box->cos_yaw * box->y;
  box->origin[2] = -box->z;

  /* The box lies in a vertical cylinder about its centre. A ray may hit
   * it only if its horizontal direction u passes within the radius:
   * u . c >= sqrt(|c|^2 - r^2). The radius is padded so that rounding
   * never culls a ray that hits. */
  radius = sqrtf (box->half[0] * box->half[0] + box->half[1] * box->half[1]);
  radius = radius * 1.01f + 0.1f;
  distance2 = box->x * box->x + box->y * box->y;
  limit = distance2 - radius * radius;
  box->cull_all = limit <= 0.0f;
  box->cull_dot = box->cull_all ? 0.0f : sqrtf (limit);
}

static void
add_walls (P3dLidarScene * scene)
{
  static const gdouble sides[2] = { FACADE_RIGHT, FACADE_LEFT };
  guint side;
  P3dLidarRng rng;

  p3d_lidar_rng_init (&rng, scene->params.seed, STREAM_WALLS, 0);
  for (side = 0; side < 2; side++) {
    gdouble x = -FACADE_EXTENT;

    while (x < FACADE_EXTENT) {
      gdouble length = p3d_lidar_rng_uniform (&rng, 12.0, 40.0);
      gdouble height = p3d_lidar_rng_uniform (&rng, 4.0, 20.0);
      gdouble gap =
          p3d_lidar_rng_below (&rng, 10) < 3 ? p3d_lidar_rng_uniform (&rng, 3.0,
          8.0) : 0.0;
      SceneBox wall;

      memset (&wall, 0, sizeof (wall));
      wall.x = (gfloat) (x + length / 2);
      wall.y = (gfloat) (sides[side] + (side == 0 ? -FACADE_DEPTH :
              FACADE_DEPTH) / 2);
      wall.z = (gfloat) (height / 2 - scene->params.sensor_height);
      wall.half[0] = (gfloat) (length / 2);
      wall.half[1] = (gfloat) (FACADE_DEPTH / 2);
      wall.half[2] = (gfloat) (height / 2);
      wall.reflectivity = (gfloat) p3d_lidar_rng_uniform (&rng, 0.3, 0.7);
      scene_box_update (&wall);
      g_array_append_val (scene->walls, wall);
      x += length + gap;
    }
  }
}

P3dLidarScene *
p3d_lidar_scene_new (const P3dLidarSceneParams * params)
{
  P3dLidarScene *scene;
  guint beams, columns, i;
  gdouble period;

  g_return_val_if_fail (params != NULL, NULL);
  if (p3d_lidar_scene_params_check (params, NULL) != NULL)
    return NULL;

  scene = g_new0 (P3dLidarScene, 1);
  scene->params = *params;
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

  scene->objects = g_array_new (FALSE, FALSE, sizeof (P3dLidarObject));
  scene->walls = g_array_new (FALSE, FALSE, sizeof (SceneBox));
  scene->boxes = g_array_new (FALSE, FALSE, sizeof (SceneBox));
  if (params->walls)
    add_walls (scene);
  place_objects (scene, &p3d_lidar_object_classes[0], params->cars);
  place_objects (scene, &p3d_lidar_object_classes[1], params->pedestrians);
  place_objects (scene, &p3d_lidar_object_classes[2], params->cyclists);
  p3d_lidar_scene_set_frame (scene, 0);
  return scene;
}

void
p3d_lidar_scene_free (P3dLidarScene * scene)
{
  if (scene == NULL)
    return;
  g_free (scene->column_cos);
  g_free (scene->column_sin);
  g_free (scene->column_time);
  g_free (scene->beam_cos);
  g_free (scene->beam_sin);
  g_array_unref (scene->objects);
  g_array_unref (scene->walls);
  g_array_unref (scene->boxes);
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
  return scene->objects->len;
}

/* Rebuilds the ray-casting boxes: objects at the current frame, then the
 * walls. */
static void
scene_update_boxes (P3dLidarScene * scene)
{
  gdouble t = 0.0;
  guint i;

  if (scene->params.motion)
    t = (gdouble) scene->frame * scene->params.fps_d / scene->params.fps_n;
  g_array_set_size (scene->boxes, 0);
  for (i = 0; i < scene->objects->len; i++) {
    const P3dLidarObject *object =
        &g_array_index (scene->objects, P3dLidarObject, i);
    SceneBox box;

    memset (&box, 0, sizeof (box));
    box.x = (gfloat) wrap_along_road (object->x + object->vx * t);
    box.y = (gfloat) (object->y + object->vy * t);
    box.z = (gfloat) (object->dz / 2 - scene->params.sensor_height);
    box.yaw =
        (gfloat) p3d_lidar_wrap_angle (object->yaw + object->yaw_rate * t);
    box.half[0] = (gfloat) (object->dx / 2);
    box.half[1] = (gfloat) (object->dy / 2);
    box.half[2] = (gfloat) (object->dz / 2);
    box.reflectivity = (gfloat) object->reflectivity;
    scene_box_update (&box);
    g_array_append_val (scene->boxes, box);
  }
  g_array_append_vals (scene->boxes, scene->walls->data, scene->walls->len);
  if (scene->candidates_size < scene->boxes->len) {
    g_free (scene->candidates);
    scene->candidates_size = scene->boxes->len;
    scene->candidates = g_new (guint, scene->candidates_size);
  }
}

guint
p3d_lidar_scene_add_object (P3dLidarScene * scene,
    const P3dLidarObject * object)
{
  g_array_append_val (scene->objects, *object);
  scene_update_boxes (scene);
  return scene->objects->len - 1;
}

void
p3d_lidar_scene_clear_objects (P3dLidarScene * scene)
{
  g_array_set_size (scene->objects, 0);
  scene_update_boxes (scene);
}

void
p3d_lidar_scene_set_frame (P3dLidarScene * scene, guint64 frame)
{
  scene->frame = scene->params.motion ? frame : 0;
  scene->noise_frame = scene->frame;
  scene_update_boxes (scene);
}

void
p3d_lidar_scene_get_object_box (const P3dLidarScene * scene, guint index,
    P3dcBox3d * box)
{
  const P3dLidarObject *object;
  const SceneBox *view;

  g_return_if_fail (index < scene->objects->len);
  object = &g_array_index (scene->objects, P3dLidarObject, index);
  view = &g_array_index (scene->boxes, SceneBox, index);
  box->x = view->x;
  box->y = view->y;
  box->z = view->z;
  box->dx = (gfloat) object->dx;
  box->dy = (gfloat) object->dy;
  box->dz = (gfloat) object->dz;
  box->yaw = view->yaw;
  box->score = 1.0f;
  box->label = object->label;
}

guint
p3d_lidar_scene_get_boxes (const P3dLidarScene * scene, P3dcBox3d * boxes,
    guint capacity)
{
  gdouble limit = scene->params.max_range;
  guint i, count = 0;

  for (i = 0; i < scene->objects->len; i++) {
    P3dcBox3d box;

    p3d_lidar_scene_get_object_box (scene, i, &box);
    if ((gdouble) box.x * box.x + (gdouble) box.y * box.y > limit * limit)
      continue;
    if (count < capacity)
      boxes[count] = box;
    count++;
  }
  return count;
}
