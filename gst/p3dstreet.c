/* The synthetic street: its parameters, the objects placed on the road and
 * the walls, and their poses frame by frame; see p3dstreet.h. */
#include <math.h>
#include <string.h>

#include "box_overlap.h"
#include "p3dstreet-private.h"

/* Nothing is placed in the lidar's lane within this distance. */
#define EGO_CLEARANCE 7.0

static const P3dStreetTrack car_tracks[] = {
  {-3.5, 0.0, TRUE},
  {0.0, 0.0, FALSE},
  {3.5, G_PI, TRUE},
  {7.0, G_PI, TRUE},
  {-6.6, 0.0, FALSE},
};

static const P3dStreetTrack cyclist_tracks[] = {
  {-8.6, 0.0, TRUE},
  {9.6, G_PI, TRUE},
};

/* Heading 0 here stands for "either way": each track picks one. */
static const P3dStreetTrack pedestrian_tracks[] = {
  {-10.2, 0.0, TRUE},
  {-11.3, 0.0, TRUE},
  {-12.4, 0.0, TRUE},
  {11.2, 0.0, TRUE},
  {12.3, 0.0, TRUE},
  {13.4, 0.0, TRUE},
};

const P3dStreetClass p3d_street_classes[P3D_STREET_N_CLASSES] = {
  {P3D_STREET_LABEL_CAR, car_tracks, G_N_ELEMENTS (car_tracks), 10.0,
        {4.2, 4.9}, {1.75, 2.0}, {1.45, 1.75}, {7.0, 14.0}, {0.3, 0.9}, 0.03,
      0.0, P3D_STREET_STREAM_CARS},
  {P3D_STREET_LABEL_PEDESTRIAN, pedestrian_tracks,
        G_N_ELEMENTS (pedestrian_tracks), 2.5, {0.6, 0.75}, {0.6, 0.75},
        {1.6, 1.9}, {0.8, 1.6}, {0.2, 0.5}, G_PI, 0.5,
      P3D_STREET_STREAM_PEDESTRIANS},
  {P3D_STREET_LABEL_CYCLIST, cyclist_tracks, G_N_ELEMENTS (cyclist_tracks),
        5.0, {1.7, 1.9}, {0.55, 0.7}, {1.6, 1.8}, {3.0, 6.0}, {0.3, 0.6},
      0.03, 0.0, P3D_STREET_STREAM_CYCLISTS},
};

/* x wrapped into [-L/2, L/2): fmod is exact. */
static gdouble
wrap_along_road (gdouble x)
{
  gdouble w = fmod (x + P3D_STREET_LENGTH / 2, P3D_STREET_LENGTH);

  if (w < 0)
    w += P3D_STREET_LENGTH;
  return w - P3D_STREET_LENGTH / 2;
}

gdouble
p3d_street_wrap_angle (gdouble angle)
{
  gdouble w = fmod (angle + G_PI, 2 * G_PI);

  if (w < 0)
    w += 2 * G_PI;
  return w - G_PI;
}

void
p3d_street_params_init (P3dStreetParams * params)
{
  g_return_if_fail (params != NULL);
  memset (params, 0, sizeof (*params));
  params->seed = 0;
  params->cars = P3D_STREET_DEFAULT_CARS;
  params->pedestrians = P3D_STREET_DEFAULT_PEDESTRIANS;
  params->cyclists = P3D_STREET_DEFAULT_CYCLISTS;
  params->walls = TRUE;
  params->ground = TRUE;
  params->motion = TRUE;
  params->sensor_height = P3D_STREET_DEFAULT_SENSOR_HEIGHT;
}

const gchar *
p3d_street_params_check (const P3dStreetParams * params, gchar ** why)
{
  const gchar *property = NULL;
  gchar *sentence = NULL;

  g_return_val_if_fail (params != NULL, "params");

  if (!(params->sensor_height >= 0.0 && params->sensor_height <= 100.0)) {
    property = "sensor-height";
    sentence = g_strdup_printf ("sensor-height is %g: it must be in [0, 100] "
        "metres", params->sensor_height);
  } else if (params->cars > P3D_STREET_MAX_CARS) {
    property = "cars";
    sentence = g_strdup_printf ("cars is %u: the road has room for %u",
        params->cars, P3D_STREET_MAX_CARS);
  } else if (params->pedestrians > P3D_STREET_MAX_PEDESTRIANS) {
    property = "pedestrians";
    sentence = g_strdup_printf ("pedestrians is %u: the sidewalks have room "
        "for %u", params->pedestrians, P3D_STREET_MAX_PEDESTRIANS);
  } else if (params->cyclists > P3D_STREET_MAX_CYCLISTS) {
    property = "cyclists";
    sentence = g_strdup_printf ("cyclists is %u: the bike lanes have room "
        "for %u", params->cyclists, P3D_STREET_MAX_CYCLISTS);
  }

  if (why)
    *why = sentence;
  else
    g_free (sentence);
  return property;
}

/* Places @count objects of @klass in distinct slots of its tracks. */
static void
place_objects (P3dStreet * street, const P3dStreetClass * klass, guint count)
{
  guint slots_per_track = (guint) (P3D_STREET_LENGTH / klass->slot + 0.5);
  guint n_slots = slots_per_track * klass->n_tracks, n_free = 0, i;
  guint *slots = g_new (guint, n_slots);
  gdouble speed[8], heading[8];
  P3dStreetRng rng;

  g_assert (klass->n_tracks <= G_N_ELEMENTS (speed));
  p3d_street_rng_init (&rng, street->params.seed, klass->stream, 0);
  for (i = 0; i < klass->n_tracks; i++) {
    const P3dStreetTrack *track = &klass->tracks[i];

    speed[i] = p3d_street_rng_uniform (&rng, klass->speed[0], klass->speed[1]);
    if (!track->moving)
      speed[i] = 0.0;
    heading[i] = track->heading;
    if (klass->label == P3D_STREET_LABEL_PEDESTRIAN)
      heading[i] = p3d_street_rng_below (&rng, 2) ? G_PI : 0.0;
  }

  /* Free slots, the lidar's own surroundings left out. */
  for (i = 0; i < n_slots; i++) {
    const P3dStreetTrack *track = &klass->tracks[i / slots_per_track];
    gdouble start = -P3D_STREET_LENGTH / 2 +
        klass->slot * (i % slots_per_track);

    if (fabs (track->y) < 1.0 && start < EGO_CLEARANCE
        && start + klass->slot > -EGO_CLEARANCE)
      continue;
    slots[n_free++] = i;
  }

  /* The first @count of a partial Fisher-Yates shuffle. */
  for (i = 0; i < count && i < n_free; i++) {
    guint pick = i + p3d_street_rng_below (&rng, n_free - i);
    guint slot = slots[pick];
    guint track_index = slot / slots_per_track;
    P3dStreetObject object;
    gdouble room;

    slots[pick] = slots[i];
    slots[i] = slot;

    object.label = klass->label;
    object.dx = p3d_street_rng_uniform (&rng, klass->dx[0], klass->dx[1]);
    object.dy = p3d_street_rng_uniform (&rng, klass->dy[0], klass->dy[1]);
    object.dz = p3d_street_rng_uniform (&rng, klass->dz[0], klass->dz[1]);
    /* Room to move within the slot: its length less the object's
     * diagonal (it may turn) and a margin. */
    room = klass->slot - sqrt (object.dx * object.dx + object.dy * object.dy)
        - 0.4;
    object.x = -P3D_STREET_LENGTH / 2 +
        klass->slot * (slot % slots_per_track + 0.5) +
        p3d_street_rng_uniform (&rng, -0.5, 0.5) * MAX (room, 0.0);
    object.y = klass->tracks[track_index].y;
    object.yaw = p3d_street_wrap_angle (heading[track_index] +
        p3d_street_rng_uniform (&rng, -klass->yaw_jitter, klass->yaw_jitter));
    object.vx = heading[track_index] == 0.0 ? speed[track_index] :
        -speed[track_index];
    object.vy = 0.0;
    object.yaw_rate =
        p3d_street_rng_uniform (&rng, -klass->yaw_rate, klass->yaw_rate);
    object.reflectivity =
        p3d_street_rng_uniform (&rng, klass->reflectivity[0],
        klass->reflectivity[1]);
    p3d_street_add_object (street, &object);
  }
  g_free (slots);
}

/* Fills @box's view from the lidar from its pose. */
static void
street_box_update (P3dStreetBox * box)
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
add_walls (P3dStreet * street)
{
  static const gdouble sides[2] = { P3D_STREET_FACADE_RIGHT,
    P3D_STREET_FACADE_LEFT
  };
  guint side;
  P3dStreetRng rng;

  p3d_street_rng_init (&rng, street->params.seed, P3D_STREET_STREAM_WALLS, 0);
  for (side = 0; side < 2; side++) {
    gdouble x = -P3D_STREET_FACADE_EXTENT;

    while (x < P3D_STREET_FACADE_EXTENT) {
      gdouble length = p3d_street_rng_uniform (&rng, 12.0, 40.0);
      gdouble height = p3d_street_rng_uniform (&rng, 4.0, 20.0);
      gdouble gap =
          p3d_street_rng_below (&rng, 10) < 3 ?
          p3d_street_rng_uniform (&rng, 3.0, 8.0) : 0.0;
      P3dStreetBox wall;

      memset (&wall, 0, sizeof (wall));
      wall.x = (gfloat) (x + length / 2);
      wall.y = (gfloat) (sides[side] + (side == 0 ? -P3D_STREET_FACADE_DEPTH :
              P3D_STREET_FACADE_DEPTH) / 2);
      wall.z = (gfloat) (height / 2 - street->params.sensor_height);
      wall.half[0] = (gfloat) (length / 2);
      wall.half[1] = (gfloat) (P3D_STREET_FACADE_DEPTH / 2);
      wall.half[2] = (gfloat) (height / 2);
      wall.reflectivity = (gfloat) p3d_street_rng_uniform (&rng, 0.3, 0.7);
      street_box_update (&wall);
      g_array_append_val (street->walls, wall);
      x += length + gap;
    }
  }
}

P3dStreet *
p3d_street_new (const P3dStreetParams * params)
{
  P3dStreet *street;

  g_return_val_if_fail (params != NULL, NULL);
  if (p3d_street_params_check (params, NULL) != NULL)
    return NULL;

  street = g_new0 (P3dStreet, 1);
  street->params = *params;
  street->fps_n = 1;
  street->fps_d = 1;
  street->objects = g_array_new (FALSE, FALSE, sizeof (P3dStreetObject));
  street->walls = g_array_new (FALSE, FALSE, sizeof (P3dStreetBox));
  street->boxes = g_array_new (FALSE, FALSE, sizeof (P3dStreetBox));
  if (params->walls)
    add_walls (street);
  place_objects (street, &p3d_street_classes[0], params->cars);
  place_objects (street, &p3d_street_classes[1], params->pedestrians);
  place_objects (street, &p3d_street_classes[2], params->cyclists);
  p3d_street_set_frame (street, 0, 1, 1);
  return street;
}

void
p3d_street_free (P3dStreet * street)
{
  if (street == NULL)
    return;
  g_array_unref (street->objects);
  g_array_unref (street->walls);
  g_array_unref (street->boxes);
  g_free (street);
}

const P3dStreetParams *
p3d_street_get_params (const P3dStreet * street)
{
  return &street->params;
}

guint
p3d_street_get_n_objects (const P3dStreet * street)
{
  return street->objects->len;
}

const P3dStreetObject *
p3d_street_get_object (const P3dStreet * street, guint index)
{
  g_return_val_if_fail (index < street->objects->len, NULL);
  return &g_array_index (street->objects, P3dStreetObject, index);
}

/* Rebuilds the boxes: objects at the current frame, then the walls. */
static void
street_update_boxes (P3dStreet * street)
{
  gdouble t = 0.0;
  guint i;

  if (street->params.motion)
    t = (gdouble) street->frame * street->fps_d / street->fps_n;
  g_array_set_size (street->boxes, 0);
  for (i = 0; i < street->objects->len; i++) {
    const P3dStreetObject *object =
        &g_array_index (street->objects, P3dStreetObject, i);
    P3dStreetBox box;

    memset (&box, 0, sizeof (box));
    box.x = (gfloat) wrap_along_road (object->x + object->vx * t);
    box.y = (gfloat) (object->y + object->vy * t);
    box.z = (gfloat) (object->dz / 2 - street->params.sensor_height);
    box.yaw =
        (gfloat) p3d_street_wrap_angle (object->yaw + object->yaw_rate * t);
    box.half[0] = (gfloat) (object->dx / 2);
    box.half[1] = (gfloat) (object->dy / 2);
    box.half[2] = (gfloat) (object->dz / 2);
    box.reflectivity = (gfloat) object->reflectivity;
    street_box_update (&box);
    g_array_append_val (street->boxes, box);
  }
  g_array_append_vals (street->boxes, street->walls->data, street->walls->len);
}

guint
p3d_street_add_object (P3dStreet * street, const P3dStreetObject * object)
{
  g_array_append_val (street->objects, *object);
  street_update_boxes (street);
  return street->objects->len - 1;
}

void
p3d_street_clear_objects (P3dStreet * street)
{
  g_array_set_size (street->objects, 0);
  street_update_boxes (street);
}

void
p3d_street_set_frame (P3dStreet * street, guint64 frame, gint fps_n, gint fps_d)
{
  g_return_if_fail (fps_n > 0 && fps_d > 0);
  street->frame = street->params.motion ? frame : 0;
  street->fps_n = fps_n;
  street->fps_d = fps_d;
  street_update_boxes (street);
}

const P3dStreetBox *
p3d_street_get_boxes (const P3dStreet * street, guint * n_boxes)
{
  *n_boxes = street->boxes->len;
  return (const P3dStreetBox *) street->boxes->data;
}

void
p3d_street_get_object_box (const P3dStreet * street, guint index,
    P3dcBox3d * box)
{
  const P3dStreetObject *object;
  const P3dStreetBox *view;

  g_return_if_fail (index < street->objects->len);
  object = &g_array_index (street->objects, P3dStreetObject, index);
  view = &g_array_index (street->boxes, P3dStreetBox, index);
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

P3dStreetGround
p3d_street_ground_at (gfloat x, gfloat y)
{
  static const gfloat solid[] = { P3D_STREET_ROAD_EDGE_RIGHT, 1.75f,
    P3D_STREET_ROAD_EDGE_LEFT
  };
  static const gfloat dashed[] = { -1.75f, 5.25f };
  const gfloat half_width = 0.075f;
  guint i;

  if (y < P3D_STREET_CURB_RIGHT || y > P3D_STREET_CURB_LEFT)
    return P3D_STREET_GROUND_SIDEWALK;
  for (i = 0; i < G_N_ELEMENTS (solid); i++)
    if (fabsf (y - solid[i]) <= half_width)
      return P3D_STREET_GROUND_MARKING;
  for (i = 0; i < G_N_ELEMENTS (dashed); i++) {
    if (fabsf (y - dashed[i]) <= half_width) {
      gfloat phase = fmodf (x, 9.0f);

      if (phase < 0.0f)
        phase += 9.0f;
      if (phase < 3.0f)
        return P3D_STREET_GROUND_MARKING;
    }
  }
  return P3D_STREET_GROUND_ROAD;
}
