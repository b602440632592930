/* gst-perception: what the lidar packet decoders share, free of GStreamer.
 *
 * velodyneparse and ousterparse decode packets straight into the float32
 * records of an application/x-point-cloud sweep: x, y, z (metres, x
 * forward, y left, z up) then the channels the negotiated format has, each
 * at its own index (intensity, time in seconds since the sweep's first
 * firing, ring). A decoder is given the layout and writes every channel the
 * layout names, so no point is copied again to reorder it.
 */
#ifndef __P3D_LIDAR_POINTS_H__
#define __P3D_LIDAR_POINTS_H__

#include <glib.h>

G_BEGIN_DECLS

/**
 * P3dLidarPointLayout:
 * @stride: float32 values per point (3 to 5)
 * @intensity: index of the intensity channel in a point, or -1
 * @time: index of the time channel, or -1
 * @ring: index of the ring channel, or -1
 */
typedef struct
{
  guint stride;
  gint intensity;
  gint time;
  gint ring;
} P3dLidarPointLayout;

/* Which returns of a dual-return stream become points: both (the second
 * dropped when it repeats the first: a single echo), the strongest (the
 * higher intensity; the first of the pair on a tie) or the last (the
 * farther one). A single-return stream has one return per firing and
 * ignores it. */
typedef enum
{
  P3D_LIDAR_RETURNS_BOTH,
  P3D_LIDAR_RETURNS_STRONGEST,
  P3D_LIDAR_RETURNS_LAST,
} P3dLidarReturns;

/* Of two returns of one firing, @first and @second (0: no return), which to
 * keep under @returns: bit 0 the first, bit 1 the second. Both are kept
 * only under P3D_LIDAR_RETURNS_BOTH, and only when they differ; *duplicate
 * is set when the second repeated the first and was dropped. */
static inline guint
p3d_lidar_pick_returns (P3dLidarReturns returns, guint32 first_range,
    guint32 first_intensity, guint32 second_range, guint32 second_intensity,
    gboolean * duplicate)
{
  *duplicate = FALSE;
  if (first_range == 0)
    return second_range != 0 ? 2 : 0;
  if (second_range == 0)
    return 1;
  switch (returns) {
    case P3D_LIDAR_RETURNS_STRONGEST:
      return second_intensity > first_intensity ? 2 : 1;
    case P3D_LIDAR_RETURNS_LAST:
      return second_range > first_range ? 2 : 1;
    case P3D_LIDAR_RETURNS_BOTH:
    default:
      if (first_range == second_range && first_intensity == second_intensity) {
        *duplicate = TRUE;
        return 1;
      }
      return 3;
  }
}

/* Writes one point's channels after x, y and z. */
static inline void
p3d_lidar_point_set_channels (const P3dLidarPointLayout * layout,
    gfloat * point, gfloat intensity, gfloat time, gfloat ring)
{
  if (layout->intensity >= 0)
    point[layout->intensity] = intensity;
  if (layout->time >= 0)
    point[layout->time] = time;
  if (layout->ring >= 0)
    point[layout->ring] = ring;
}

G_END_DECLS

#endif /* __P3D_LIDAR_POINTS_H__ */
