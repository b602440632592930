/* bevpool: camera features x depth (application/x-camera-features) ->
 * bird's-eye-view features (application/x-bev-features), as BEVFusion. */
#ifndef __P3D_BEVPOOL_H__
#define __P3D_BEVPOOL_H__

#include "bevpool-calibration.h"
#include "bevpool.h"
#include "p3dperception.h"

G_BEGIN_DECLS

#define P3D_TYPE_BEVPOOL (p3d_bevpool_get_type ())
G_DECLARE_FINAL_TYPE (P3dBevpool, p3d_bevpool, P3D, BEVPOOL, P3dCudaFilter);

struct _P3dBevpool
{
  P3dCudaFilter parent;

  /* properties, under the object lock */
  gchar *calibration_path;
  gboolean calibration_changed;
  guint image_width;
  guint image_height;
  gdouble xbound[3];
  gdouble ybound[3];
  gdouble zbound[3];
  gdouble dbound[3];
  P3dBevRounding rounding;
  P3dBevLayout layout;

  /* the loaded calibration's camera count, under the object lock: caps
   * queries read it from any thread */
  guint calibration_cameras;

  /* streaming */
  P3dBevCalibration *calibration;
  P3dCameraFeaturesInfo in_info;
  P3dBevFeaturesInfo out_info;
  P3dBevPoolParams params;
  P3dBevGeometry *geometry;
  P3dBevGeometryCuda *geometry_cuda;
  gboolean geometry_valid;      /* computed for params and calibration */
  guint64 geometry_updates;
};

G_END_DECLS

#endif /* __P3D_BEVPOOL_H__ */
