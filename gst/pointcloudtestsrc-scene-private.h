/* What the parts of pointcloudtestsrc's scene share: the scene struct, the
 * boxes the ray caster sees, the object classes and the road's layout.
 *
 * pointcloudtestsrc-scene.c builds and moves the scene, pointcloudtestsrc-raycast.c renders a sweep
 * of it, pointcloudtestsrc-detector.c makes a detector's boxes from it. Not installed;
 * users of the scene include pointcloudtestsrc-scene.h. */
#ifndef __P3D_LIDAR_SCENE_PRIVATE_H__
#define __P3D_LIDAR_SCENE_PRIVATE_H__

#include "pointcloudtestsrc-rng.h"
#include "pointcloudtestsrc-scene.h"

G_BEGIN_DECLS

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

/* A lane or a walking track: its centre across the road, the heading of
 * whoever uses it, and whether they move. */
typedef struct
{
  gdouble y;
  gdouble heading;
  gboolean moving;
} Track;

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

/* Cars, pedestrians, cyclists: the classes an object is drawn from. */
#define P3D_LIDAR_N_OBJECT_CLASSES 3
extern const ObjectClass p3d_lidar_object_classes[P3D_LIDAR_N_OBJECT_CLASSES];

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

/* An angle wrapped into [-pi, pi). */
gdouble p3d_lidar_wrap_angle (gdouble angle);

G_END_DECLS

#endif /* __P3D_LIDAR_SCENE_PRIVATE_H__ */
