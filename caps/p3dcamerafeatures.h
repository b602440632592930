/* gst-perception: application/x-camera-features, the input of bevpool.
 *
 * Caps fields: format (F32 or F16, for both tensors), cameras, channels,
 * depth-bins, width and height (of the feature map); optional framerate;
 * optional, the three together, image-width and image-height (the network
 * input the features were computed from) and image-aug (each camera's
 * image augmentation: 6 numbers a camera, the raw image pixel (u, v) going
 * to input pixel (a0 u + a1 v + a2, a3 u + a4 v + a5)), which camencode
 * writes so that bevpool's frustum is the one its network saw.
 *
 * Tensors, in this order:
 *   0 features [cameras][height][width][channels]
 *   1 depth    [cameras][depth-bins][height][width], per pixel a
 *              distribution over the depth bins (as the network gives it)
 */
#ifndef __P3D_CAMERA_FEATURES_H__
#define __P3D_CAMERA_FEATURES_H__

#include <gst/gst.h>

#include "p3dformats.h"
#include "p3dtensor.h"

G_BEGIN_DECLS

#define P3D_MEDIA_TYPE_CAMERA_FEATURES "application/x-camera-features"

#define P3D_CAMERA_FEATURES_CAPS_ALL \
    P3D_MEDIA_TYPE_CAMERA_FEATURES ", format = (string) " P3D_DATA_FORMATS_ALL

enum
{
  P3D_CAMERA_FEATURES_TENSOR_FEATURES = 0,
  P3D_CAMERA_FEATURES_TENSOR_DEPTH = 1,
  P3D_CAMERA_FEATURES_N_TENSORS = 2,
};

/* Limits of the caps fields. */
#define P3D_CAMERA_FEATURES_MAX_CAMERAS 64
#define P3D_CAMERA_FEATURES_MAX_SIDE 8192
#define P3D_CAMERA_FEATURES_MAX_IMAGE_SIDE 65536

typedef struct
{
  P3dDataFormat format;
  guint cameras;
  guint channels;
  guint depth_bins;
  guint width;
  guint height;
  gint fps_n;
  gint fps_d;
  /* image-width, image-height and image-aug: has_image FALSE when the caps
   * carry none of them */
  gboolean has_image;
  guint image_width;
  guint image_height;
  gdouble image_aug[P3D_CAMERA_FEATURES_MAX_CAMERAS][6];

  /*< private > */
  gpointer _gst_reserved[GST_PADDING];
} P3dCameraFeaturesInfo;

void p3d_camera_features_info_init (P3dCameraFeaturesInfo * info);
gboolean p3d_camera_features_info_from_caps (P3dCameraFeaturesInfo * info,
    const GstCaps * caps);
GstCaps *p3d_camera_features_info_to_caps (const P3dCameraFeaturesInfo *
    info);
gboolean p3d_camera_features_info_is_equal (const P3dCameraFeaturesInfo * a,
    const P3dCameraFeaturesInfo * b);
/* Whether @a and @b carry the same image fields (both none, or the same
 * size and transforms). */
gboolean p3d_camera_features_info_image_is_equal (const P3dCameraFeaturesInfo *
    a, const P3dCameraFeaturesInfo * b);
/* Camera @camera's image-aug as a 4x4 row-major matrix in the form of a
 * calibration file's img_aug (docs/calibration.md): [[a0, a1, 0, a2],
 * [a3, a4, 0, a5], [0, 0, 1, 0], [0, 0, 0, 1]]. */
void p3d_camera_features_info_get_img_aug (const P3dCameraFeaturesInfo * info,
    guint camera, gdouble matrix[16]);
/* FALSE when the buffer (both tensors together) would exceed
 * P3D_RECORD_MAX_BYTES, so that filesink can write it. */
gboolean p3d_camera_features_info_get_layout (const P3dCameraFeaturesInfo *
    info, P3dTensorLayout * layout);

G_END_DECLS

#endif /* __P3D_CAMERA_FEATURES_H__ */
