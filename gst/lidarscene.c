/* The synthetic street and spinning lidar of pointcloudtestsrc; see
 * lidarscene.h. */
#include <math.h>
#include <string.h>

#include "box_overlap.h"
#include "lidarscene.h"

/* Independent random streams, so that changing one part of the scene (say,
 * the number of cars) leaves the others where they were. */
enum
{
  STREAM_WALLS = 1,
  STREAM_CARS,
  STREAM_PEDESTRIANS,
  STREAM_CYCLISTS,
  STREAM_NOISE,
  STREAM_CANDIDATES,
};

/* Random draws per ray for its range noise. */
#define NOISE_DRAWS 3
#define GOLDEN_GAMMA G_GUINT64_CONSTANT (0x9E3779B97F4A7C15)

/* The road across y (metres, +y to the left of the sensor): lanes 3.5 m
 * wide centred on -3.5 (with the traffic), 0 (the sensor's own lane, a
 * stopped queue), 3.5 and 7 (oncoming); a parking lane on the right; bike
 * lanes on both sides; sidewalks with three walking tracks each; facades
 * behind them. */
#define ROAD_EDGE_RIGHT -5.25f
#define ROAD_EDGE_LEFT 8.75f
#define CURB_RIGHT -9.5f
#define CURB_LEFT 10.5f
#define FACADE_RIGHT -13.5
#define FACADE_LEFT 14.5
#define FACADE_DEPTH 10.0
#define FACADE_EXTENT 150.0

/* An echo is detected when intensity * (DETECTION_RANGE / range)^2 is at
 * least DETECTION_THRESHOLD. */
#define DETECTION_RANGE 50.0f
#define DETECTION_THRESHOLD 0.005f

/* Nothing is placed in the sensor's lane within this distance. */
#define EGO_CLEARANCE 7.0

typedef struct
{
  gdouble y;
  gdouble heading;
  gboolean moving;
} Track;

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

/* Per class: slot length along the road, size ranges, speed range,
 * reflectivity range. An object sits in its slot with a margin, so objects
 * of one track, which share its speed, never touch. */
typedef struct
{
  P3dLidarLabel label;
  const Track *tracks;
  guint n_tracks;
  gdouble slot;
  gdouble dx[2], dy[2], dz[2];
  gdouble speed[2];
  gdouble reflectivity[2];
  gdouble yaw_jitter;
  gdouble yaw_rate;
  guint stream;
} ObjectClass;

static const ObjectClass object_classes[] = {
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

/* A box as the ray caster sees it in the current frame. */
typedef struct
{
  gfloat x, y, z;
  gfloat yaw;
  gfloat cos_yaw, sin_yaw;
  gfloat half[3];
  /* the sensor (the origin) in the box's frame */
  gfloat origin[3];
  /* a ray whose horizontal direction u has u . (x, y) >= cull_dot may
   * hit the box; every ray may when cull_all */
  gfloat cull_dot;
  gboolean cull_all;
  gfloat reflectivity;
} SceneBox;

struct _P3dLidarScene
{
  P3dLidarSceneParams params;
  guint n_rays;
  gfloat max_range;
  gfloat range_noise;
  gfloat sensor_height;
  /* the farthest hit that could still give a point, noise included */
  gfloat hit_limit;

  /* per column (firing) and per beam */
  gfloat *column_cos, *column_sin, *column_time;
  gfloat *beam_cos, *beam_sin;

  /* objects first (box i is object i), then the walls */
  GArray *objects;
  GArray *walls;
  GArray *boxes;
  guint *candidates;
  guint candidates_size;

  guint64 frame;
  guint64 noise_frame;
};

/* SplitMix64. */
typedef struct
{
  guint64 state;
} Rng;

static guint64
mix64 (guint64 z)
{
  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT (0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT (0x94D049BB133111EB);
  return z ^ (z >> 31);
}

static guint64
rng_next (Rng * rng)
{
  rng->state += GOLDEN_GAMMA;
  return mix64 (rng->state);
}

/* The start of stream @stream of @seed for frame @frame. */
static guint64
stream_state (guint64 seed, guint stream, guint64 frame)
{
  return mix64 (mix64 (seed + GOLDEN_GAMMA * stream) + frame);
}

static void
rng_init (Rng * rng, guint64 seed, guint stream, guint64 frame)
{
  rng->state = stream_state (seed, stream, frame);
}

/* Uniform in [lo, hi), from 53 random bits (every step exact but the
 * last multiply-add, which is correctly rounded). */
static gdouble
rng_uniform (Rng * rng, gdouble lo, gdouble hi)
{
  gdouble unit = (gdouble) (rng_next (rng) >> 11) * (1.0 / 9007199254740992.0);

  return lo + (hi - lo) * unit;
}

static guint
rng_below (Rng * rng, guint bound)
{
  return (guint) (((rng_next (rng) >> 32) * bound) >> 32);
}

/* Standard normal, approximately: the Irwin-Hall sum of twelve uniform
 * 16-bit integers, centred and scaled by 2^-16. Integer sums and a power
 * of two scale are exact, so every machine gets the same value; no libm
 * log or cos. Bounded by +-6. */
static gfloat
gauss_from_words (const guint64 words[3])
{
  gint32 sum = 0;
  guint i, j;

  for (i = 0; i < 3; i++)
    for (j = 0; j < 4; j++)
      sum += (gint32) ((words[i] >> (16 * j)) & 0xffff);
  return (gfloat) (sum - 6 * 65535) * (1.0f / 65536.0f);
}

static gfloat
rng_gauss (Rng * rng)
{
  guint64 words[3];

  words[0] = rng_next (rng);
  words[1] = rng_next (rng);
  words[2] = rng_next (rng);
  return gauss_from_words (words);
}

/* x wrapped into [-L/2, L/2): fmod is exact. */
static gdouble
wrap_along_road (gdouble x)
{
  gdouble w = fmod (x + P3D_LIDAR_SCENE_LENGTH / 2, P3D_LIDAR_SCENE_LENGTH);

  if (w < 0)
    w += P3D_LIDAR_SCENE_LENGTH;
  return w - P3D_LIDAR_SCENE_LENGTH / 2;
}

/* An angle wrapped into [-pi, pi). */
static gdouble
wrap_angle (gdouble angle)
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
  Rng rng;

  g_assert (klass->n_tracks <= G_N_ELEMENTS (speed));
  rng_init (&rng, scene->params.seed, klass->stream, 0);
  for (i = 0; i < klass->n_tracks; i++) {
    const Track *track = &klass->tracks[i];

    speed[i] = rng_uniform (&rng, klass->speed[0], klass->speed[1]);
    if (!track->moving)
      speed[i] = 0.0;
    heading[i] = track->heading;
    if (klass->label == P3D_LIDAR_LABEL_PEDESTRIAN)
      heading[i] = rng_below (&rng, 2) ? G_PI : 0.0;
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
    guint pick = i + rng_below (&rng, n_free - i);
    guint slot = slots[pick];
    guint track_index = slot / slots_per_track;
    P3dLidarObject object;
    gdouble room;

    slots[pick] = slots[i];
    slots[i] = slot;

    object.label = klass->label;
    object.dx = rng_uniform (&rng, klass->dx[0], klass->dx[1]);
    object.dy = rng_uniform (&rng, klass->dy[0], klass->dy[1]);
    object.dz = rng_uniform (&rng, klass->dz[0], klass->dz[1]);
    /* Room to move within the slot: its length less the object's
     * diagonal (it may turn) and a margin. */
    room = klass->slot - sqrt (object.dx * object.dx + object.dy * object.dy)
        - 0.4;
    object.x = -P3D_LIDAR_SCENE_LENGTH / 2 +
        klass->slot * (slot % slots_per_track + 0.5) +
        rng_uniform (&rng, -0.5, 0.5) * MAX (room, 0.0);
    object.y = klass->tracks[track_index].y;
    object.yaw = wrap_angle (heading[track_index] +
        rng_uniform (&rng, -klass->yaw_jitter, klass->yaw_jitter));
    object.vx = heading[track_index] == 0.0 ? speed[track_index] :
        -speed[track_index];
    object.vy = 0.0;
    object.yaw_rate = rng_uniform (&rng, -klass->yaw_rate, klass->yaw_rate);
    object.reflectivity = rng_uniform (&rng, klass->reflectivity[0],
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

  p3d_sincos (box->yaw, &box->sin_yaw, &box->cos_yaw);
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
  Rng rng;

  rng_init (&rng, scene->params.seed, STREAM_WALLS, 0);
  for (side = 0; side < 2; side++) {
    gdouble x = -FACADE_EXTENT;

    while (x < FACADE_EXTENT) {
      gdouble length = rng_uniform (&rng, 12.0, 40.0);
      gdouble height = rng_uniform (&rng, 4.0, 20.0);
      gdouble gap = rng_below (&rng, 10) < 3 ? rng_uniform (&rng, 3.0,
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
      wall.reflectivity = (gfloat) rng_uniform (&rng, 0.3, 0.7);
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

    p3d_sincos (azimuth, &scene->column_sin[i], &scene->column_cos[i]);
    scene->column_time[i] = (gfloat) (period * i / columns);
  }

  scene->beam_cos = g_new (gfloat, beams);
  scene->beam_sin = g_new (gfloat, beams);
  for (i = 0; i < beams; i++) {
    gdouble degrees = beams == 1 ? (params->fov_up + params->fov_down) / 2 :
        params->fov_down + (params->fov_up - params->fov_down) * i /
        (beams - 1);

    p3d_sincos ((gfloat) (degrees * (G_PI / 180.0)), &scene->beam_sin[i],
        &scene->beam_cos[i]);
  }

  scene->objects = g_array_new (FALSE, FALSE, sizeof (P3dLidarObject));
  scene->walls = g_array_new (FALSE, FALSE, sizeof (SceneBox));
  scene->boxes = g_array_new (FALSE, FALSE, sizeof (SceneBox));
  if (params->walls)
    add_walls (scene);
  place_objects (scene, &object_classes[0], params->cars);
  place_objects (scene, &object_classes[1], params->pedestrians);
  place_objects (scene, &object_classes[2], params->cyclists);
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
    box.yaw = (gfloat) wrap_angle (object->yaw + object->yaw_rate * t);
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
    P3dBox3d * box)
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
  guint64 noise_base = stream_state (params->seed, STREAM_NOISE,
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
        Rng rng;

        /* Draws NOISE_DRAWS * ray .. of the frame's noise stream: each
         * ray's noise is its own, whatever the others hit. */
        rng.state = noise_base + GOLDEN_GAMMA * NOISE_DRAWS * (guint64) ray;
        for (i = 0; i < NOISE_DRAWS; i++)
          words[i] = rng_next (&rng);
        range = best + scene->range_noise * gauss_from_words (words);
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

guint
p3d_lidar_scene_get_boxes (const P3dLidarScene * scene, P3dBox3d * boxes,
    guint capacity)
{
  gdouble limit = scene->params.max_range;
  guint i, count = 0;

  for (i = 0; i < scene->objects->len; i++) {
    P3dBox3d box;

    p3d_lidar_scene_get_object_box (scene, i, &box);
    if ((gdouble) box.x * box.x + (gdouble) box.y * box.y > limit * limit)
      continue;
    if (count < capacity)
      boxes[count] = box;
    count++;
  }
  return count;
}

guint
p3d_lidar_candidates_false_positives (guint n_boxes)
{
  return 1 + n_boxes / 8;
}

static gfloat
clamped_gauss (Rng * rng)
{
  return CLAMP (rng_gauss (rng), -2.5f, 2.5f);
}

/* TRUE when (x, y) lies within @box's footprint. */
static gboolean
box_contains_xy (const P3dBox3d * box, gfloat x, gfloat y)
{
  gfloat s, c, local_x, local_y;

  p3d_sincos (box->yaw, &s, &c);
  local_x = c * (x - box->x) + s * (y - box->y);
  local_y = c * (y - box->y) - s * (x - box->x);
  return fabsf (local_x) <= box->dx / 2 && fabsf (local_y) <= box->dy / 2;
}

/* A box jittered about @truth, with a score that falls as it strays. */
static void
jitter_box (Rng * rng, const P3dBox3d * truth, gfloat confidence,
    P3dBox3d * out)
{
  gfloat strength = (gfloat) rng_uniform (rng, 0.1, 1.0);
  gfloat g[7], s, c, along, across, spread;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (g); i++)
    g[i] = clamped_gauss (rng);
  /* Along and across the box, at most a quarter of its size: the centre
   * stays inside the true box. */
  along = strength * 0.1f * truth->dx * g[0];
  across = strength * 0.1f * truth->dy * g[1];
  p3d_sincos (truth->yaw, &s, &c);
  *out = *truth;
  out->x = truth->x + (c * along - s * across);
  out->y = truth->y + (s * along + c * across);
  out->z = truth->z + strength * 0.05f * truth->dz * g[2];
  out->dx = truth->dx * (1.0f + strength * 0.06f * g[3]);
  out->dy = truth->dy * (1.0f + strength * 0.06f * g[4]);
  out->dz = truth->dz * (1.0f + strength * 0.06f * g[5]);
  out->yaw = (gfloat) wrap_angle (truth->yaw + strength * 0.1f * g[6]);
  spread = strength * (fabsf (g[0]) + fabsf (g[1]) + fabsf (g[6])) / 7.5f;
  out->score = confidence * (1.0f - 0.6f * MIN (spread, 1.0f));
}

/* A low-score box on the road or a sidewalk, away from every true box. */
static void
false_positive (Rng * rng, const P3dLidarScene * scene,
    const P3dBox3d * truths, guint n_truths, P3dBox3d * out)
{
  gdouble reach = MIN (scene->params.max_range,
      P3D_LIDAR_SCENE_LENGTH / 2) * 0.8;
  const ObjectClass *klass;
  guint attempt, i;

  klass = &object_classes[rng_below (rng, G_N_ELEMENTS (object_classes))];
  out->dx = (gfloat) rng_uniform (rng, klass->dx[0], klass->dx[1]);
  out->dy = (gfloat) rng_uniform (rng, klass->dy[0], klass->dy[1]);
  out->dz = (gfloat) rng_uniform (rng, klass->dz[0], klass->dz[1]);
  out->yaw = (gfloat) rng_uniform (rng, -G_PI, G_PI);
  out->score = (gfloat) rng_uniform (rng, 0.05, 0.25);
  out->label = klass->label;
  /* A few tries at a free spot; the last one stays regardless. */
  for (attempt = 0; attempt < 8; attempt++) {
    gboolean free = TRUE;

    out->x = (gfloat) rng_uniform (rng, -reach, reach);
    out->y = (gfloat) rng_uniform (rng, CURB_RIGHT - 2.0, CURB_LEFT + 2.0);
    for (i = 0; i < n_truths && free; i++)
      free = !box_contains_xy (&truths[i], out->x, out->y);
    if (free)
      break;
  }
  out->z = out->dz / 2 - scene->sensor_height;
}

guint
p3d_lidar_scene_get_candidates (const P3dLidarScene * scene,
    guint per_object, P3dBox3d * boxes, guint capacity)
{
  guint n_truths = p3d_lidar_scene_get_boxes (scene, NULL, 0);
  guint n_false = p3d_lidar_candidates_false_positives (n_truths);
  guint total = n_truths * per_object + n_false, i, k, n = 0;
  P3dBox3d *truths = g_new (P3dBox3d, MAX (n_truths, 1));
  P3dBox3d *all = g_new (P3dBox3d, total);
  Rng rng;

  p3d_lidar_scene_get_boxes (scene, truths, n_truths);
  rng_init (&rng, scene->params.seed, STREAM_CANDIDATES, scene->noise_frame);
  for (i = 0; i < n_truths; i++) {
    gfloat confidence = (gfloat) rng_uniform (&rng, 0.7, 0.98);

    for (k = 0; k < per_object; k++)
      jitter_box (&rng, &truths[i], confidence, &all[n++]);
  }
  for (i = 0; i < n_false; i++)
    false_positive (&rng, scene, truths, n_truths, &all[n++]);

  /* Fisher-Yates, so that no box's position gives its object away. */
  for (i = total; i > 1; i--) {
    guint j = rng_below (&rng, i);
    P3dBox3d swap = all[i - 1];

    all[i - 1] = all[j];
    all[j] = swap;
  }
  if (capacity > 0)
    memcpy (boxes, all, MIN (total, capacity) * sizeof (P3dBox3d));
  g_free (all);
  g_free (truths);
  return total;
}
