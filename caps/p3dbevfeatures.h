/* gst-perception: application/x-bev-features, the output of bevpool.
 *
 * Caps fields: format (F32 or F16), channels, width and height (cells along
 * the tensor's last and middle axes), optional layout (yx, the default:
 * rows along y, width = cells along x; or xy: rows along x, width = cells
 * along y, the order of LSS, BEVFusion and CUDA-BEVFusion), optional range
 * <xmin, ymin, zmin, xmax, ymax, zmax> in metres (the area the grid
 * covers, for renderers), optional framerate.
 *
 * Tensors: 0 features [channels][height][width]; cell (0, 0) is the one at
 * (xmin, ymin).
 */
#ifndef __P3D_BEV_FEATURES_H__
#define __P3D_BEV_FEATURES_H__

#include <gst/gst.h>

#include "p3dformats.h"
#include "p3dtensor.h"

G_BEGIN_DECLS

#define P3D_MEDIA_TYPE_BEV_FEATURES "application/x-bev-features"

#define P3D_BEV_FEATURES_CAPS_ALL \
    P3D_MEDIA_TYPE_BEV_FEATURES ", format = (string) " P3D_DATA_FORMATS_ALL

enum
{
  P3D_BEV_FEATURES_TENSOR_FEATURES = 0,
  P3D_BEV_FEATURES_N_TENSORS = 1,
};

#define P3D_BEV_FEATURES_MAX_SIDE 16384

typedef enum
{
  P3D_BEV_FEATURES_LAYOUT_YX = 0,
  P3D_BEV_FEATURES_LAYOUT_XY = 1,
} P3dBevFeaturesLayout;

typedef struct
{
  P3dDataFormat format;
  guint channels;
  guint width;
  guint height;
  P3dBevFeaturesLayout layout;
  gboolean has_range;
  gdouble range[6];
  gint fps_n;
  gint fps_d;

  /*< private > */
  gpointer _gst_reserved[GST_PADDING];
} P3dBevFeaturesInfo;

void p3d_bev_features_info_init (P3dBevFeaturesInfo * info);
gboolean p3d_bev_features_info_from_caps (P3dBevFeaturesInfo * info,
    const GstCaps * caps);
GstCaps *p3d_bev_features_info_to_caps (const P3dBevFeaturesInfo * info);
gboolean p3d_bev_features_info_is_equal (const P3dBevFeaturesInfo * a,
    const P3dBevFeaturesInfo * b);
/* FALSE when the buffer (its one tensor) would exceed
 * P3D_RECORD_MAX_BYTES, so that filesink can write it. */
gboolean p3d_bev_features_info_get_layout (const P3dBevFeaturesInfo * info,
    P3dTensorLayout * layout);

G_END_DECLS

#endif /* __P3D_BEV_FEATURES_H__ */
