/* The pinhole camera of a calibration entry: see p3dcamera.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include "p3dcamera.h"

/* How far the intrinsics' bottom row may be from 0 0 1, and the element
 * below fx from 0 (relative to fy): values written as 0 and 1 in a file
 * are exact, and float32 round trips stay within this. */
#define PINHOLE_TOLERANCE 1e-9

gboolean
p3d_camera_init (P3dCamera * camera, const P3dcCameraCalib * calib,
    const P3dCalibrationImageSize * size, gchar ** why)
{
  const gdouble *k = calib->intrinsics, *m = calib->camera_to_lidar;
  gdouble det, worst = 0.0;
  guint i, j, n;

  *why = NULL;
  if (fabs (k[8]) > PINHOLE_TOLERANCE || fabs (k[9]) > PINHOLE_TOLERANCE
      || fabs (k[10] - 1.0) > PINHOLE_TOLERANCE) {
    *why = g_strdup_printf ("its intrinsics' third row is [%g, %g, %g], not "
        "[0, 0, 1]: they are not a pinhole camera's", k[8], k[9], k[10]);
    return FALSE;
  }
  if (!(k[0] > 0.0 && k[5] > 0.0)) {
    *why = g_strdup_printf ("its focal lengths (intrinsics [0][0] = %g, "
        "[1][1] = %g) must be positive", k[0], k[5]);
    return FALSE;
  }
  if (fabs (k[4]) > PINHOLE_TOLERANCE * k[5]) {
    *why = g_strdup_printf ("its intrinsics [1][0] is %g, not 0: they are "
        "not a pinhole camera's", k[4]);
    return FALSE;
  }
  for (i = 0; i < 3; i++)
    for (j = 0; j < 3; j++) {
      gdouble dot = 0.0;

      for (n = 0; n < 3; n++)
        dot += m[n * 4 + i] * m[n * 4 + j];
      worst = MAX (worst, fabs (dot - (i == j ? 1.0 : 0.0)));
    }
  det = m[0] * (m[5] * m[10] - m[6] * m[9])
      - m[1] * (m[4] * m[10] - m[6] * m[8])
      + m[2] * (m[4] * m[9] - m[5] * m[8]);
  if (!(worst <= P3D_CAMERA_ROTATION_TOLERANCE) || !(det > 0.0)) {
    *why = g_strdup_printf ("its camera_to_lidar is not a rotation and a "
        "translation (R^T R differs from the identity by %g, det R is %g; "
        "a rotation has 0 and 1)", worst, det);
    return FALSE;
  }

  memset (camera, 0, sizeof (*camera));
  camera->width = size != NULL ? size->width : 0;
  camera->height = size != NULL ? size->height : 0;
  camera->fx = k[0];
  camera->skew = k[1];
  camera->cx = k[2];
  camera->fy = k[5];
  camera->cy = k[6];
  for (i = 0; i < 3; i++) {
    for (j = 0; j < 3; j++)
      camera->rotation[i * 3 + j] = m[i * 4 + j];
    camera->position[i] = m[i * 4 + 3];
  }
  return TRUE;
}

void
p3d_camera_from_lidar (const P3dCamera * camera, const gdouble point[3],
    gdouble camera_point[3])
{
  const gdouble *r = camera->rotation;
  gdouble d[3];
  guint i;

  for (i = 0; i < 3; i++)
    d[i] = point[i] - camera->position[i];
  /* R^T (p - t): R is a rotation */
  for (i = 0; i < 3; i++)
    camera_point[i] = r[i] * d[0] + r[3 + i] * d[1] + r[6 + i] * d[2];
}

void
p3d_camera_ray (const P3dCamera * camera, gdouble u, gdouble v,
    gdouble direction[3])
{
  const gdouble *r = camera->rotation;
  gdouble y = (v - camera->cy) / camera->fy;
  gdouble x = (u - camera->cx - camera->skew * y) / camera->fx;
  guint i;

  for (i = 0; i < 3; i++)
    direction[i] = r[i * 3] * x + r[i * 3 + 1] * y + r[i * 3 + 2];
}

gboolean
p3d_camera_project (const P3dCamera * camera, const gdouble camera_point[3],
    gdouble * u, gdouble * v)
{
  gdouble x, y, z = camera_point[2];

  if (!(z >= P3D_CAMERA_NEAR))
    return FALSE;
  x = camera_point[0] / z;
  y = camera_point[1] / z;
  *u = camera->fx * x + camera->skew * y + camera->cx;
  *v = camera->fy * y + camera->cy;
  return TRUE;
}

/* Clips the camera-frame segment @a @b to z >= P3D_CAMERA_NEAR. */
static gboolean
clip_near (gdouble a[3], gdouble b[3])
{
  gboolean a_in = a[2] >= P3D_CAMERA_NEAR, b_in = b[2] >= P3D_CAMERA_NEAR;
  gdouble *out, s;
  const gdouble *in;
  guint i;

  if (a_in && b_in)
    return TRUE;
  if (!a_in && !b_in)
    return FALSE;
  out = a_in ? b : a;
  in = a_in ? a : b;
  /* where the segment crosses the plane; the point in front stays */
  s = (P3D_CAMERA_NEAR - in[2]) / (out[2] - in[2]);
  for (i = 0; i < 2; i++)
    out[i] = in[i] + s * (out[i] - in[i]);
  out[2] = P3D_CAMERA_NEAR;
  return TRUE;
}

gboolean
p3d_camera_project_segment (const P3dCamera * camera, const gdouble a[3],
    const gdouble b[3], P3dCameraSegment * segment)
{
  gdouble ca[3], cb[3];

  p3d_camera_from_lidar (camera, a, ca);
  p3d_camera_from_lidar (camera, b, cb);
  if (!clip_near (ca, cb))
    return FALSE;
  return p3d_camera_project (camera, ca, &segment->u0, &segment->v0)
      && p3d_camera_project (camera, cb, &segment->u1, &segment->v1);
}

void
p3d_camera_box_corners (const gdouble centre[3], gdouble cos_yaw,
    gdouble sin_yaw, const gdouble half[3], gdouble corners[8][3])
{
  /* front left, front right, back right, back left: +x is the front, +y
   * the left */
  static const gdouble signs[4][2] = {
    {1.0, 1.0}, {1.0, -1.0}, {-1.0, -1.0}, {-1.0, 1.0},
  };
  guint k, level;

  for (level = 0; level < 2; level++)
    for (k = 0; k < 4; k++) {
      gdouble l = signs[k][0] * half[0], w = signs[k][1] * half[1];
      gdouble *corner = corners[level * 4 + k];

      corner[0] = centre[0] + l * cos_yaw - w * sin_yaw;
      corner[1] = centre[1] + l * sin_yaw + w * cos_yaw;
      corner[2] = centre[2] + (level == 0 ? -half[2] : half[2]);
    }
}

guint
p3d_camera_project_box (const P3dCamera * camera,
    const gdouble corners[8][3],
    P3dCameraSegment segments[P3D_CAMERA_BOX_EDGES])
{
  static const guint8 edges[P3D_CAMERA_BOX_EDGES][2] = {
    {0, 1}, {1, 2}, {2, 3}, {3, 0},
    {4, 5}, {5, 6}, {6, 7}, {7, 4},
    {0, 4}, {1, 5}, {2, 6}, {3, 7},
  };
  guint k, n = 0;

  for (k = 0; k < P3D_CAMERA_BOX_EDGES; k++)
    if (p3d_camera_project_segment (camera, corners[edges[k][0]],
            corners[edges[k][1]], &segments[n]))
      n++;
  return n;
}
