/* gst-perception compute library: the box records of
 * application/x-boxes3d and application/x-boxes2d (docs/media-types.md).
 *
 * Both records are little-endian and densely packed: every field is four
 * bytes, so the natural C layout is the wire layout, and the static
 * assertions below make sure no compiler pads them.  A tensor of boxes is an
 * array of these records, the one layout shared by the reference path, the
 * kernels, the elements and the files a filesink writes.
 */
#ifndef P3DC_BOXES_H
#define P3DC_BOXES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A 3D box in the LiDAR frame, as OpenPCDet and mmdet3d LiDAR boxes:
 * (x, y, z) is the centre, (dx, dy, dz) the full sizes along the box's own
 * axes, yaw the rotation about +z in radians, counter-clockwise from +x. */
typedef struct
{
  float x, y, z;
  float dx, dy, dz;
  float yaw;
  float score;
  int32_t label;
} P3dcBox3d;

/* An axis-aligned 2D box in pixels: (x1, y1) the top-left corner, (x2, y2)
 * the bottom-right one. */
typedef struct
{
  float x1, y1, x2, y2;
  float score;
  int32_t label;
} P3dcBox2d;

#define P3DC_BOX3D_SIZE 36
#define P3DC_BOX2D_SIZE 24

#ifdef __cplusplus
static_assert (sizeof (P3dcBox3d) == P3DC_BOX3D_SIZE, "P3dcBox3d is 36 bytes");
static_assert (sizeof (P3dcBox2d) == P3DC_BOX2D_SIZE, "P3dcBox2d is 24 bytes");
#else
_Static_assert (sizeof (P3dcBox3d) == P3DC_BOX3D_SIZE, "P3dcBox3d is 36 bytes");
_Static_assert (sizeof (P3dcBox2d) == P3DC_BOX2D_SIZE, "P3dcBox2d is 24 bytes");
#endif

#ifdef __cplusplus
}
#endif

#endif /* P3DC_BOXES_H */
