/* What the users of the street share beyond p3dstreet.h: its struct, the
 * random streams each part draws from, and the object classes.
 *
 * p3dstreet.c builds and moves the street; pointcloudtestsrc's lidar and
 * fake detector (pointcloudtestsrc-raycast.c, -detector.c) and
 * cameratestsrc's renderer (cameratestsrc-render.c) read it. Not
 * installed. */
#ifndef __P3D_STREET_PRIVATE_H__
#define __P3D_STREET_PRIVATE_H__

#include "p3dstreet-rng.h"
#include "p3dstreet.h"

G_BEGIN_DECLS

/* Independent random streams, so that changing one part of the world (say,
 * the number of cars) or of a sensor leaves the others where they were.
 * One list for every user of the street, so that no two share a stream. */
enum
{
  P3D_STREET_STREAM_WALLS = 1,
  P3D_STREET_STREAM_CARS,
  P3D_STREET_STREAM_PEDESTRIANS,
  P3D_STREET_STREAM_CYCLISTS,
  /* the lidar's range noise */
  P3D_STREET_STREAM_LIDAR_NOISE,
  /* the fake detector's boxes */
  P3D_STREET_STREAM_CANDIDATES,
  /* a camera's sensor noise */
  P3D_STREET_STREAM_CAMERA_NOISE,
  /* the colours the cameras give the objects, walls and ground */
  P3D_STREET_STREAM_CAMERA_LOOK,
};

/* A lane or a walking track: its centre across the road, the heading of
 * whoever uses it, and whether they move. */
typedef struct
{
  gdouble y;
  gdouble heading;
  gboolean moving;
} P3dStreetTrack;

/* Per class: slot length along the road, size ranges, speed range,
 * reflectivity range. An object sits in its slot with a margin, so objects
 * of one track, which share its speed, never touch. */
typedef struct
{
  P3dStreetLabel label;
  const P3dStreetTrack *tracks;
  guint n_tracks;
  gdouble slot;
  gdouble dx[2], dy[2], dz[2];
  gdouble speed[2];
  gdouble reflectivity[2];
  gdouble yaw_jitter;
  gdouble yaw_rate;
  guint stream;
} P3dStreetClass;

/* Cars, pedestrians, cyclists: the classes an object is drawn from. */
#define P3D_STREET_N_CLASSES 3
extern const P3dStreetClass p3d_street_classes[P3D_STREET_N_CLASSES];

struct _P3dStreet
{
  P3dStreetParams params;

  GArray *objects;
  GArray *walls;
  /* objects first (box i is object i), then the walls */
  GArray *boxes;

  /* the pose of the current frame, kept for objects added later */
  guint64 frame;
  gint fps_n;
  gint fps_d;
};

G_END_DECLS

#endif /* __P3D_STREET_PRIVATE_H__ */
