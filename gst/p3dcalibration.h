/* gst-perception: camera calibration files, read by bevpool,
 * cameratestsrc and boxoverlay.
 *
 * A JSON document with, per camera, the 4x4 row-major intrinsics (a 3x3 is
 * accepted), camera-to-lidar and image-augmentation matrices, and the size
 * of the image the intrinsics describe, in one of two forms
 * (docs/calibration.md):
 *
 *   { "cameras": [ { "name": "CAM_FRONT", "intrinsics": [[...], ...],
 *                    "camera_to_lidar": [[...], ...],
 *                    "img_aug": [[...], ...],
 *                    "image_size": [1600, 900] }, ... ] }
 *
 * or the per-tensor form of CUDA-BEVFusion's example data, as written by
 * mmdetection3d tools: top-level arrays "camera_intrinsics",
 * "camera2lidar" and "img_aug_matrix" of one 4x4 per camera, with an
 * optional "camera_order" of names. img_aug is optional in the first form
 * (identity: the network sees the raw image), and so is image_size (not
 * given: 0 x 0); the second form has no image size.
 */
#ifndef __P3D_CALIBRATION_H__
#define __P3D_CALIBRATION_H__

#include <glib.h>

#include "bevpool.h"

G_BEGIN_DECLS

#define P3D_CALIBRATION_ERROR (p3d_calibration_error_quark ())
GQuark p3d_calibration_error_quark (void);

typedef enum
{
  P3D_CALIBRATION_ERROR_NOT_FOUND,  /* the file does not exist */
  P3D_CALIBRATION_ERROR_READ,       /* the file cannot be read */
  P3D_CALIBRATION_ERROR_SYNTAX,     /* the text is not JSON */
  P3D_CALIBRATION_ERROR_SCHEMA,     /* a key is missing or malformed */
  P3D_CALIBRATION_ERROR_VALUE,      /* a value is not a finite number */
} P3dCalibrationError;

/* Largest calibration file read, in bytes: a calibration is kilobytes
 * (six cameras of BEVFusion's nuScenes rig: 12 KB); a larger file, or one
 * that is not a regular file (a device, a FIFO), is refused before it is
 * read. */
#define P3D_CALIBRATION_MAX_FILE_SIZE (1024 * 1024)

/* Largest image side a file may give. */
#define P3D_CALIBRATION_MAX_IMAGE_SIDE 16384

/* The size of the image a camera's intrinsics describe, in pixels; 0 x 0
 * when the file does not give it. */
typedef struct
{
  guint width;
  guint height;
} P3dCalibrationImageSize;

typedef struct
{
  guint n_cameras;
  gchar **names;                /* n_cameras names (generated when absent) */
  P3dcCameraCalib *cameras;
  P3dCalibrationImageSize *image_sizes;
} P3dCalibration;

/* NULL and @error naming the file, key, camera and row on failure; a JSON
 * document nested deeper than P3D_JSON_MAX_DEPTH is refused before it is
 * parsed (p3djson.h). */
P3dCalibration *p3d_calibration_load (const gchar * path,
    GError ** error);
P3dCalibration *p3d_calibration_parse (const gchar * data,
    gssize length, const gchar * origin, GError ** error);
void p3d_calibration_free (P3dCalibration * calibration);

G_END_DECLS

#endif /* __P3D_CALIBRATION_H__ */
