/* bevpool: camera features x depth (application/x-camera-features) ->
 * bird's-eye-view features (application/x-bev-features), as BEVFusion. */
#ifndef __P3D_BEV_POOL_H__
#define __P3D_BEV_POOL_H__

#include "p3dcalibration.h"
#include "bevpool.h"
#include "p3dperception.h"

G_BEGIN_DECLS

#define P3D_TYPE_BEV_POOL (p3d_bev_pool_get_type ())
G_DECLARE_FINAL_TYPE (P3dBevPool, p3d_bev_pool, P3D, BEV_POOL, P3dCudaFilter);

struct _P3dBevPool
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
  P3dcBevRounding rounding;
  P3dcBevLayout layout;

  /* the loaded calibration's camera count, under the object lock: caps
   * queries read it from any thread */
  guint calibration_cameras;

  /* streaming */
  P3dCalibration *calibration;
  P3dCameraFeaturesInfo in_info;
  P3dBevFeaturesInfo out_info;
  P3dcBevPoolParams params;
  P3dcBevGeometry *geometry;
  P3dcBevGeometryCuda *geometry_cuda;
  gboolean geometry_valid;      /* computed for params and calibration */
  guint64 geometry_updates;
};

GST_ELEMENT_REGISTER_DECLARE (bevpool);

G_END_DECLS

#endif /* __P3D_BEV_POOL_H__ */
