/* The synthetic street that pointcloudtestsrc's lidar and cameratestsrc's
 * cameras see: one world, so that a pipeline with both sources sees the
 * same objects at the same timestamps.
 *
 * GLib only, no GStreamer, so that the world is unit-tested on its own.
 *
 * The street, in the lidar's frame (x forward, y left, z up, the lidar at
 * the origin, sensor-height above a flat ground): a straight road along x
 * with lanes, a parking lane, bike lanes and sidewalks, building facades on
 * both sides, and cars, pedestrians and cyclists placed by the seed.
 * Objects move with constant velocity and yaw rate; the stretch of road is
 * periodic (P3D_STREET_LENGTH metres long, centred on the lidar), so an
 * object that leaves it at one end comes back at the other and a scene
 * lives for ever. Objects of one lane share its speed, so they never
 * overlap.
 *
 * Time: a sensor poses the street for its frame n at t = n / framerate
 * (its own framerate), computed as (double) n * fps_d / fps_n, one
 * correctly rounded division of exact integers: two sensors at different
 * rates that reach the same instant (lidar frame 1 at 10/1, camera frame 2
 * at 20/1) get the same t, hence the same poses, to the bit.
 *
 * Determinism: the same parameters give the same world on every machine.
 * Random numbers are SplitMix64 integers (p3dstreet-rng.h); floats only
 * meet +, -, *, /, sqrt, floor and fmod (correctly rounded or exact
 * everywhere, with -ffp-contract=off), and sines and cosines come from
 * p3dc_sincos().
 */
#ifndef __P3D_STREET_H__
#define __P3D_STREET_H__

#include <glib.h>

#include "boxes.h"

G_BEGIN_DECLS

/* The class of an object: the label of its box in application/x-boxes3d. */
typedef enum
{
  P3D_STREET_LABEL_CAR = 0,
  P3D_STREET_LABEL_PEDESTRIAN = 1,
  P3D_STREET_LABEL_CYCLIST = 2,
} P3dStreetLabel;

/* Length of the periodic stretch of road, in metres. */
#define P3D_STREET_LENGTH 200.0

/* The slots the road has room for. */
#define P3D_STREET_MAX_CARS 64
#define P3D_STREET_MAX_PEDESTRIANS 256
#define P3D_STREET_MAX_CYCLISTS 64

/* Defaults: a KITTI car (the lidar 1.73 m above the ground) in a street. */
#define P3D_STREET_DEFAULT_CARS 16
#define P3D_STREET_DEFAULT_PEDESTRIANS 12
#define P3D_STREET_DEFAULT_CYCLISTS 4
#define P3D_STREET_DEFAULT_SENSOR_HEIGHT 1.73

/* The road across y (metres, +y to the left of the lidar): lanes 3.5 m
 * wide centred on -3.5 (with the traffic), 0 (the lidar's own lane, a
 * stopped queue), 3.5 and 7 (oncoming); a parking lane on the right; bike
 * lanes on both sides; sidewalks with three walking tracks each; facades
 * behind them. */
#define P3D_STREET_ROAD_EDGE_RIGHT -5.25f
#define P3D_STREET_ROAD_EDGE_LEFT 8.75f
#define P3D_STREET_CURB_RIGHT -9.5f
#define P3D_STREET_CURB_LEFT 10.5f
#define P3D_STREET_FACADE_RIGHT -13.5
#define P3D_STREET_FACADE_LEFT 14.5
#define P3D_STREET_FACADE_DEPTH 10.0
#define P3D_STREET_FACADE_EXTENT 150.0

/**
 * P3dStreetParams:
 * @seed: places everything
 * @cars: cars on the road
 * @pedestrians: pedestrians on the sidewalks
 * @cyclists: cyclists in the bike lanes
 * @walls: building facades along both sides of the road
 * @ground: the ground plane
 * @motion: objects move; when FALSE every frame is frame 0
 * @sensor_height: height of the lidar (the frame's origin) above the
 *     ground, metres: the ground is the plane z = -sensor_height
 */
typedef struct
{
  guint64 seed;
  guint cars;
  guint pedestrians;
  guint cyclists;
  gboolean walls;
  gboolean ground;
  gboolean motion;
  gdouble sensor_height;
} P3dStreetParams;

/**
 * P3dStreetObject:
 * @label: what it is (the label of its box)
 * @x: centre along the road at frame 0, metres
 * @y: centre across the road, metres
 * @yaw: heading at frame 0, radians about +z from +x
 * @dx: length
 * @dy: width
 * @dz: height (the object stands on the ground)
 * @vx: velocity along x, m/s
 * @vy: velocity along y, m/s
 * @yaw_rate: rad/s
 * @reflectivity: in [0, 1]; a lidar point's intensity is the reflectivity
 *     times the cosine of the incidence angle, and a camera sees an object
 *     brighter the higher it is
 */
typedef struct
{
  P3dStreetLabel label;
  gdouble x, y, yaw;
  gdouble dx, dy, dz;
  gdouble vx, vy, yaw_rate;
  gdouble reflectivity;
} P3dStreetObject;

/**
 * P3dStreetBox:
 * @x: centre, metres (float32, as every sensor sees it)
 * @yaw: heading, radians
 * @cos_yaw: p3dc_sincos() of @yaw
 * @half: half sizes along the box's own axes
 * @origin: the lidar (the frame's origin) in the box's frame
 * @cull_dot: a ray from the origin whose horizontal direction u has
 *     u . (x, y) >= cull_dot may hit the box; every ray may when @cull_all
 * @reflectivity: as the object's, or the wall's
 *
 * An object or a wall as the sensors see it in the current frame.
 */
typedef struct
{
  gfloat x, y, z;
  gfloat yaw;
  gfloat cos_yaw, sin_yaw;
  gfloat half[3];
  gfloat origin[3];
  gfloat cull_dot;
  gboolean cull_all;
  gfloat reflectivity;
} P3dStreetBox;

/* What the ground is made of at a point. */
typedef enum
{
  P3D_STREET_GROUND_ROAD = 0,
  P3D_STREET_GROUND_MARKING = 1,
  P3D_STREET_GROUND_SIDEWALK = 2,
} P3dStreetGround;

typedef struct _P3dStreet P3dStreet;

void p3d_street_params_init (P3dStreetParams * params);

/* NULL when @params make a street; otherwise the name of the offending
 * property (as the elements call it) and, in @why, a sentence with its
 * value. */
const gchar *p3d_street_params_check (const P3dStreetParams * params,
    gchar ** why);

/* The street of @params at frame 0, or NULL when they fail the check. */
P3dStreet *p3d_street_new (const P3dStreetParams * params);
void p3d_street_free (P3dStreet * street);

const P3dStreetParams *p3d_street_get_params (const P3dStreet * street);

/* Objects, in the order of their indices; adding one places it in the
 * current frame and returns its index. */
guint p3d_street_get_n_objects (const P3dStreet * street);
const P3dStreetObject *p3d_street_get_object (const P3dStreet * street,
    guint index);
guint p3d_street_add_object (P3dStreet * street,
    const P3dStreetObject * object);
void p3d_street_clear_objects (P3dStreet * street);

/* Poses the objects at t = @frame * @fps_d / @fps_n seconds (at 0 without
 * motion). */
void p3d_street_set_frame (P3dStreet * street, guint64 frame, gint fps_n,
    gint fps_d);

/* The boxes of the current frame: the objects first (box i is object i),
 * then the walls; @n_boxes of them. */
const P3dStreetBox *p3d_street_get_boxes (const P3dStreet * street,
    guint * n_boxes);

/* The box of object @index in the current frame: score 1, its label. */
void p3d_street_get_object_box (const P3dStreet * street, guint index,
    P3dcBox3d * box);

/* The ground at (@x, @y): asphalt, lane markings (solid road edges and
 * centre line, dashed lane lines: 3 m every 9 m), concrete sidewalks. */
P3dStreetGround p3d_street_ground_at (gfloat x, gfloat y);

/* An angle wrapped into [-pi, pi). */
gdouble p3d_street_wrap_angle (gdouble angle);

/* The entry of the ray @origin + t @dir into @box, both in the box's own
 * frame (centred, axes along its sides; rotate a direction of the street's
 * frame by -yaw to get there): its t and the axis of the face it enters
 * by. FALSE when it misses, or starts inside. Inline: the ray casters call
 * it for every ray and box. */
static inline gboolean
p3d_street_ray_box (const P3dStreetBox * box, const gfloat origin[3],
    const gfloat local[3], gfloat * t_hit, gint * entry_axis)
{
  gfloat t_near = -G_MAXFLOAT, t_far = G_MAXFLOAT;
  gint axis, entry = -1;

  for (axis = 0; axis < 3; axis++) {
    gfloat start = origin[axis], half = box->half[axis], t1, t2;

    if (local[axis] == 0.0f) {
      /* Parallel to this slab: inside it or never. */
      if (start < -half || start > half)
        return FALSE;
      continue;
    }
    t1 = (-half - start) / local[axis];
    t2 = (half - start) / local[axis];
    if (t1 > t2) {
      gfloat swap = t1;

      t1 = t2;
      t2 = swap;
    }
    if (t1 > t_near) {
      t_near = t1;
      entry = axis;
    }
    if (t2 < t_far)
      t_far = t2;
    if (t_near > t_far)
      return FALSE;
  }
  if (entry < 0 || t_near <= 0.0f)
    return FALSE;
  *t_hit = t_near;
  *entry_axis = entry;
  return TRUE;
}

/* A direction of the street's frame in @box's frame. */
static inline void
p3d_street_box_local_direction (const P3dStreetBox * box, const gfloat dir[3],
    gfloat local[3])
{
  local[0] = box->cos_yaw * dir[0] + box->sin_yaw * dir[1];
  local[1] = box->cos_yaw * dir[1] - box->sin_yaw * dir[0];
  local[2] = dir[2];
}

G_END_DECLS

#endif /* __P3D_STREET_H__ */
