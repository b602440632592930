/* The synthetic street and spinning lidar behind pointcloudtestsrc.
 *
 * GLib only, no GStreamer, so that the geometry is unit-tested on its own.
 *
 * The scene: a straight road along x in the sensor frame (x forward, y left,
 * z up, the sensor at the origin, sensor-height above a flat ground), with
 * lanes, a parking lane, bike lanes and sidewalks, building facades on both
 * sides, and cars, pedestrians and cyclists placed by the seed. Objects move
 * with constant velocity and yaw rate; the stretch of road is periodic
 * (P3D_LIDAR_SCENE_LENGTH metres long, centred on the sensor), so an object
 * that leaves it at one end comes back at the other and a scene lives for
 * ever. Objects of one lane share its speed, so they never overlap.
 *
 * The lidar: beams spread evenly from fov-down to fov-up, each fired
 * points-per-revolution times per revolution, one revolution per frame,
 * starting behind the sensor (azimuth +pi) and turning clockwise seen from
 * above, as a Velodyne does. Each ray returns its nearest hit on the ground
 * plane or a box (analytic ray-plane and ray-oriented-box tests); no hit,
 * a hit beyond max-range (after the range noise), or too weak an echo
 * (intensity * (50 m / range)^2 below 0.005: dark asphalt at a grazing
 * angle fades out beyond ~47 m) gives no point. Points are written firing by
 * firing (column by column, lowest beam first), so time increases along the
 * buffer.
 *
 * Determinism: the same parameters give the same bytes on every machine.
 * Random numbers are SplitMix64 integers; floats only meet +, -, *, /, sqrt,
 * floor and fmod (correctly rounded or exact everywhere, with
 * -ffp-contract=off), sines and cosines come from p3dc_sincos(), and rays are
 * cast in a fixed order. The range noise of a ray depends only on the seed,
 * the frame and the ray's index.
 */
#ifndef __P3D_LIDAR_SCENE_H__
#define __P3D_LIDAR_SCENE_H__

#include <glib.h>

#include "boxes.h"

G_BEGIN_DECLS

typedef enum
{
  P3D_LIDAR_LABEL_CAR = 0,
  P3D_LIDAR_LABEL_PEDESTRIAN = 1,
  P3D_LIDAR_LABEL_CYCLIST = 2,
} P3dLidarLabel;

/* The channels written after x, y and z, in this order when present. */
typedef enum
{
  P3D_LIDAR_CHANNEL_INTENSITY = 1 << 0,
  P3D_LIDAR_CHANNEL_TIME = 1 << 1,
  P3D_LIDAR_CHANNEL_RING = 1 << 2,
} P3dLidarChannels;

/* What a point hit, besides an object index (>= 0). */
#define P3D_LIDAR_HIT_GROUND (-1)
#define P3D_LIDAR_HIT_WALL (-2)

/* Length of the periodic stretch of road, in metres. */
#define P3D_LIDAR_SCENE_LENGTH 200.0

/* Limits on the parameters (the slots the road has room for). */
#define P3D_LIDAR_MAX_BEAMS 1024
#define P3D_LIDAR_MAX_RAYS (1u << 24)
#define P3D_LIDAR_MAX_CARS 64
#define P3D_LIDAR_MAX_PEDESTRIANS 256
#define P3D_LIDAR_MAX_CYCLISTS 64

/* Defaults: near a Velodyne HDL-64E on a KITTI car at 10 Hz. */
#define P3D_LIDAR_DEFAULT_BEAMS 64
#define P3D_LIDAR_DEFAULT_POINTS_PER_REVOLUTION 1900
#define P3D_LIDAR_DEFAULT_FOV_UP 2.0
#define P3D_LIDAR_DEFAULT_FOV_DOWN (-24.8)
#define P3D_LIDAR_DEFAULT_MAX_RANGE 120.0
#define P3D_LIDAR_DEFAULT_RANGE_NOISE 0.02
#define P3D_LIDAR_DEFAULT_SENSOR_HEIGHT 1.73
#define P3D_LIDAR_DEFAULT_FPS_N 10
#define P3D_LIDAR_DEFAULT_FPS_D 1
#define P3D_LIDAR_DEFAULT_CARS 16
#define P3D_LIDAR_DEFAULT_PEDESTRIANS 12
#define P3D_LIDAR_DEFAULT_CYCLISTS 4

/**
 * P3dLidarSceneParams:
 * @beams: lasers, evenly spread in elevation
 * @points_per_revolution: firings of each laser per revolution
 * @fov_up: elevation of the highest beam, degrees
 * @fov_down: elevation of the lowest beam, degrees (below @fov_up)
 * @max_range: hits farther than this (after noise), metres, give no point
 * @range_noise: standard deviation of the Gaussian range noise, metres
 * @sensor_height: height of the sensor above the ground, metres
 * @fps_n: revolutions (frames) per second, numerator
 * @fps_d: revolutions per second, denominator
 * @seed: places everything, and drives the noise
 * @cars: cars on the road
 * @pedestrians: pedestrians on the sidewalks
 * @cyclists: cyclists in the bike lanes
 * @walls: building facades along both sides of the road
 * @ground: the ground plane
 * @motion: objects move; when FALSE every frame is frame 0
 */
typedef struct
{
  guint beams;
  guint points_per_revolution;
  gdouble fov_up;
  gdouble fov_down;
  gdouble max_range;
  gdouble range_noise;
  gdouble sensor_height;
  gint fps_n;
  gint fps_d;
  guint64 seed;
  guint cars;
  guint pedestrians;
  guint cyclists;
  gboolean walls;
  gboolean ground;
  gboolean motion;
} P3dLidarSceneParams;

/**
 * P3dLidarObject:
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
 * @reflectivity: in [0, 1]; a point's intensity is the reflectivity times
 *     the cosine of the incidence angle
 */
typedef struct
{
  P3dLidarLabel label;
  gdouble x, y, yaw;
  gdouble dx, dy, dz;
  gdouble vx, vy, yaw_rate;
  gdouble reflectivity;
} P3dLidarObject;

typedef struct _P3dLidarScene P3dLidarScene;

void p3d_lidar_scene_params_init (P3dLidarSceneParams * params);

/* NULL when @params make a lidar and a scene; otherwise the name of the
 * offending property (as the element calls it) and, in @why, a sentence
 * with its value. */
const gchar *p3d_lidar_scene_params_check (const P3dLidarSceneParams * params,
    gchar ** why);

/* The scene of @params at frame 0, or NULL when they fail the check. */
P3dLidarScene *p3d_lidar_scene_new (const P3dLidarSceneParams * params);
void p3d_lidar_scene_free (P3dLidarScene * scene);

const P3dLidarSceneParams *p3d_lidar_scene_get_params (const P3dLidarScene *
    scene);

/* beams * points_per_revolution: the most points a frame can have. */
guint p3d_lidar_scene_get_n_rays (const P3dLidarScene * scene);

/* 3 plus one per channel in @channels. */
guint p3d_lidar_channels_get_count (P3dLidarChannels channels);

/* Objects, in the order of their indices; adding one places it at frame 0
 * and returns its index. */
guint p3d_lidar_scene_get_n_objects (const P3dLidarScene * scene);
guint p3d_lidar_scene_add_object (P3dLidarScene * scene,
    const P3dLidarObject * object);
void p3d_lidar_scene_clear_objects (P3dLidarScene * scene);

/* Poses the objects at t = frame / framerate (frame 0 without motion). */
void p3d_lidar_scene_set_frame (P3dLidarScene * scene, guint64 frame);

/* The box of object @index in the current frame: score 1, its label. */
void p3d_lidar_scene_get_object_box (const P3dLidarScene * scene, guint index,
    P3dcBox3d * box);

/* Casts every ray of the current frame. Writes at most
 * p3d_lidar_scene_get_n_rays() points of p3d_lidar_channels_get_count()
 * floats to @points (x, y, z, then intensity in [0, 1], time in seconds
 * since the start of the revolution, ring = beam index from the lowest, as
 * @channels asks), and when @hits is not NULL what each point hit (object
 * index, P3D_LIDAR_HIT_GROUND or P3D_LIDAR_HIT_WALL). Returns the number of
 * points. */
gsize p3d_lidar_scene_render (P3dLidarScene * scene,
    P3dLidarChannels channels, gfloat * points, gint32 * hits);

/* The true boxes of the current frame: every object whose centre is within
 * max-range (horizontally), in object order, score 1. Writes at most
 * @capacity and returns how many there are. */
guint p3d_lidar_scene_get_boxes (const P3dLidarScene * scene,
    P3dcBox3d * boxes, guint capacity);

/* A detector's raw output for the current frame: @per_object jittered boxes
 * around each true box (centre, size and yaw jitter; the centre stays inside
 * the true box; score = the object's confidence, in [0.7, 0.98], lowered by
 * up to 60% as the jitter grows, so never below 0.28), plus
 * p3d_lidar_candidates_false_positives() boxes of score below 0.25 where
 * there is no object, all shuffled in a deterministic order. Writes at most
 * @capacity and returns how many there are. */
guint p3d_lidar_scene_get_candidates (const P3dLidarScene * scene,
    guint per_object, P3dcBox3d * boxes, guint capacity);

/* 1 + n_boxes / 8. */
guint p3d_lidar_candidates_false_positives (guint n_boxes);

G_END_DECLS

#endif /* __P3D_LIDAR_SCENE_H__ */
