/* The spinning lidar of pointcloudtestsrc over the synthetic street
 * (p3dstreet.h), and a fake detector's boxes of that street.
 *
 * GLib only, no GStreamer, so that the geometry is unit-tested on its own.
 *
 * The lidar: beams spread evenly from fov-down to fov-up, each fired
 * points-per-revolution times per revolution, one revolution per frame,
 * starting behind the sensor (azimuth +pi) and turning clockwise seen from
 * above, as a Velodyne does. The sensor is the street's origin. Each ray
 * returns its nearest hit on the ground plane or a box (analytic ray-plane
 * and ray-oriented-box tests); no hit, a hit beyond max-range (after the
 * range noise), or too weak an echo (intensity * (50 m / range)^2 below
 * 0.005: dark asphalt at a grazing angle fades out beyond ~47 m) gives no
 * point. Points are written firing by firing (column by column, lowest beam
 * first), so time increases along the buffer.
 *
 * Determinism: the same parameters give the same bytes on every machine,
 * as the street does (p3dstreet.h), and rays are cast in a fixed order. The
 * range noise of a ray depends only on the seed, the frame and the ray's
 * index.
 */
#ifndef __P3D_LIDAR_SCENE_H__
#define __P3D_LIDAR_SCENE_H__

#include <glib.h>

#include "p3dstreet.h"

G_BEGIN_DECLS

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

/* Limits on the parameters. */
#define P3D_LIDAR_MAX_BEAMS 1024
#define P3D_LIDAR_MAX_RAYS (1u << 24)

/* Defaults: near a Velodyne HDL-64E on a KITTI car at 10 Hz. */
#define P3D_LIDAR_DEFAULT_BEAMS 64
#define P3D_LIDAR_DEFAULT_POINTS_PER_REVOLUTION 1900
#define P3D_LIDAR_DEFAULT_FOV_UP 2.0
#define P3D_LIDAR_DEFAULT_FOV_DOWN (-24.8)
#define P3D_LIDAR_DEFAULT_MAX_RANGE 120.0
#define P3D_LIDAR_DEFAULT_RANGE_NOISE 0.02
#define P3D_LIDAR_DEFAULT_FPS_N 10
#define P3D_LIDAR_DEFAULT_FPS_D 1

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
 * @cars: the street's (p3dstreet.h), as @seed, @walls, @ground, @motion
 *     and @sensor_height
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

/* Objects of the street, in the order of their indices; adding one places
 * it in the current frame and returns its index. */
guint p3d_lidar_scene_get_n_objects (const P3dLidarScene * scene);
guint p3d_lidar_scene_add_object (P3dLidarScene * scene,
    const P3dStreetObject * object);
void p3d_lidar_scene_clear_objects (P3dLidarScene * scene);

/* Poses the street at t = frame / framerate (frame 0 without motion). */
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
