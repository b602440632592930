/* gst-perception: camera calibration files for bevpool.
 *
 * A JSON document with, per camera, the 4x4 row-major intrinsics (a 3x3 is
 * accepted), camera-to-lidar and image-augmentation matrices, in one of
 * two forms (docs/calibration.md):
 *
 *   { "cameras": [ { "name": "CAM_FRONT", "intrinsics": [[...], ...],
 *                    "camera_to_lidar": [[...], ...],
 *                    "img_aug": [[...], ...] }, ... ] }
 *
 * or the per-tensor form of CUDA-BEVFusion's example data, as written by
 * mmdetection3d tools: top-level arrays "camera_intrinsics",
 * "camera2lidar" and "img_aug_matrix" of one 4x4 per camera, with an
 * optional "camera_order" of names. img_aug is optional in the first form
 * (identity: the network sees the raw image).
 */
#ifndef __P3D_BEV_CALIBRATION_H__
#define __P3D_BEV_CALIBRATION_H__

#include <glib.h>

#include "bevpool.h"

G_BEGIN_DECLS

#define P3D_BEV_CALIBRATION_ERROR (p3d_bev_calibration_error_quark ())
GQuark p3d_bev_calibration_error_quark (void);

typedef enum
{
  P3D_BEV_CALIBRATION_ERROR_NOT_FOUND,  /* the file does not exist */
  P3D_BEV_CALIBRATION_ERROR_READ,       /* the file cannot be read */
  P3D_BEV_CALIBRATION_ERROR_SYNTAX,     /* the text is not JSON */
  P3D_BEV_CALIBRATION_ERROR_SCHEMA,     /* a key is missing or malformed */
  P3D_BEV_CALIBRATION_ERROR_VALUE,      /* a value is not a finite number */
} P3dBevCalibrationError;

typedef struct
{
  guint n_cameras;
  gchar **names;                /* n_cameras names (generated when absent) */
  P3dcCameraCalib *cameras;
} P3dBevCalibration;

/* NULL and @error naming the file, key, camera and row on failure. */
P3dBevCalibration *p3d_bev_calibration_load (const gchar * path,
    GError ** error);
P3dBevCalibration *p3d_bev_calibration_parse (const gchar * data,
    gssize length, const gchar * origin, GError ** error);
void p3d_bev_calibration_free (P3dBevCalibration * calibration);

G_END_DECLS

#endif /* __P3D_BEV_CALIBRATION_H__ */
