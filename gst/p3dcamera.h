/* The pinhole camera of one entry of a calibration file (p3dcalibration.h),
 * as cameratestsrc renders what it sees and boxoverlay draws boxes on its
 * frames.
 *
 * GLib only, no GStreamer.
 *
 * Frames, as in docs/calibration.md: the lidar's (x forward, y left, z up),
 * in which the street and the boxes live, and the camera's (OpenCV's: x
 * right, y down, z forward along the optical axis), related by the file's
 * camera_to_lidar [R | t]: p_lidar = R p_camera + t. A camera point
 * (x, y, z) in front of the camera is at pixel coordinates
 * u = (fx x + skew y) / z + cx, v = fy y / z + cy (the intrinsics), the
 * centre of pixel column c and row r being at u = c, v = r (OpenCV's and
 * mmdetection3d's convention, and bevpool's frustum's). The file's img_aug
 * is not used: these elements see the image the intrinsics describe.
 */
#ifndef __P3D_CAMERA_H__
#define __P3D_CAMERA_H__

#include <glib.h>

#include "p3dcalibration.h"

G_BEGIN_DECLS

/* Nothing nearer the camera than this (metres along its optical axis) is
 * drawn or rendered: the near plane. */
#define P3D_CAMERA_NEAR 0.05

/* How far camera_to_lidar's 3x3 may be from a rotation: the largest element
 * of R^T R - I. */
#define P3D_CAMERA_ROTATION_TOLERANCE 1e-3

/* The edges of a box: 4 of its bottom face, 4 of its top face, 4 upright. */
#define P3D_CAMERA_BOX_EDGES 12

/**
 * P3dCamera:
 * @width: the image the intrinsics describe, from the file; 0 x 0 when the
 *     file gives no image_size
 * @fx: the intrinsics [[fx, skew, cx], [0, fy, cy], [0, 0, 1]]
 * @rotation: camera_to_lidar's 3x3, row-major (camera to lidar)
 * @position: camera_to_lidar's translation: the camera's centre in the
 *     lidar frame
 */
typedef struct
{
  guint width;
  guint height;
  gdouble fx, fy, cx, cy, skew;
  gdouble rotation[9];
  gdouble position[3];
} P3dCamera;

/* A segment in pixel coordinates (u, v), as p3dcamera.h defines them. */
typedef struct
{
  gdouble u0, v0, u1, v1;
} P3dCameraSegment;

/* The camera of @calib and @size (an entry of a P3dCalibration). FALSE,
 * with a sentence in @why (free it), when the intrinsics are not a pinhole
 * camera's (bottom row other than 0 0 1, a non-zero element below the
 * diagonal, a focal length that is not positive) or camera_to_lidar is not
 * a rotation and a translation. */
gboolean p3d_camera_init (P3dCamera * camera, const P3dcCameraCalib * calib,
    const P3dCalibrationImageSize * size, gchar ** why);

/* @point of the lidar frame in the camera's frame. */
void p3d_camera_from_lidar (const P3dCamera * camera, const gdouble point[3],
    gdouble camera_point[3]);

/* The direction in the lidar frame of the ray through pixel coordinates
 * (@u, @v), scaled so that its component along the optical axis is 1: the
 * point camera->position + t @direction is t metres in front of the
 * camera. */
void p3d_camera_ray (const P3dCamera * camera, gdouble u, gdouble v,
    gdouble direction[3]);

/* The pixel coordinates of @camera_point; FALSE when it lies nearer than
 * P3D_CAMERA_NEAR (or behind the camera). */
gboolean p3d_camera_project (const P3dCamera * camera,
    const gdouble camera_point[3], gdouble * u, gdouble * v);

/* The segment from @a to @b (lidar frame) clipped at the near plane and
 * projected; FALSE when none of it lies in front of the near plane. */
gboolean p3d_camera_project_segment (const P3dCamera * camera,
    const gdouble a[3], const gdouble b[3], P3dCameraSegment * segment);

/* The corners of the box of centre @centre (lidar frame), heading
 * (@cos_yaw, @sin_yaw) and half sizes @half along its own axes: bottom
 * face first (front left, front right, back right, back left; front is
 * the box's +x side), then the top face in the same order. */
void p3d_camera_box_corners (const gdouble centre[3], gdouble cos_yaw,
    gdouble sin_yaw, const gdouble half[3], gdouble corners[8][3]);

/* The box's P3D_CAMERA_BOX_EDGES edges, each clipped at the near plane and
 * projected; writes the ones with something in front of the near plane to
 * @segments and returns how many. */
guint p3d_camera_project_box (const P3dCamera * camera,
    const gdouble corners[8][3],
    P3dCameraSegment segments[P3D_CAMERA_BOX_EDGES]);

G_END_DECLS

#endif /* __P3D_CAMERA_H__ */
