/* What the parts of pointcloudtestsrc's lidar share: the scene struct.
 *
 * pointcloudtestsrc-scene.c builds the lidar over its street,
 * pointcloudtestsrc-raycast.c renders a sweep of it,
 * pointcloudtestsrc-detector.c makes a detector's boxes from it. Not
 * installed; users of the scene include pointcloudtestsrc-scene.h. */
#ifndef __P3D_LIDAR_SCENE_PRIVATE_H__
#define __P3D_LIDAR_SCENE_PRIVATE_H__

#include "p3dstreet-private.h"
#include "pointcloudtestsrc-scene.h"

G_BEGIN_DECLS

struct _P3dLidarScene
{
  P3dLidarSceneParams params;
  P3dStreet *street;
  guint n_rays;
  gfloat max_range;
  gfloat range_noise;
  gfloat sensor_height;
  /* the farthest hit that could still give a point, noise included */
  gfloat hit_limit;

  /* per column (firing) and per beam */
  gfloat *column_cos, *column_sin, *column_time;
  gfloat *beam_cos, *beam_sin;

  /* the boxes a firing may hit, room for every box of the street */
  guint *candidates;
  guint candidates_size;

  guint64 noise_frame;
};

G_END_DECLS

#endif /* __P3D_LIDAR_SCENE_PRIVATE_H__ */
