/* velodyneparse: Velodyne data packets (one per buffer) ->
 * application/x-point-cloud sweeps, one per revolution. */
#ifndef __P3D_VELODYNE_PARSE_H__
#define __P3D_VELODYNE_PARSE_H__

#include "p3dlidarparse.h"
#include "velodyneparse-decoder.h"

G_BEGIN_DECLS

#define P3D_TYPE_VELODYNE_MODEL (p3d_velodyne_model_get_type ())
GType p3d_velodyne_model_get_type (void);

#define P3D_TYPE_VELODYNE_PARSE (p3d_velodyne_parse_get_type ())
G_DECLARE_FINAL_TYPE (P3dVelodyneParse, p3d_velodyne_parse, P3D,
    VELODYNE_PARSE, P3dLidarParse);

struct _P3dVelodyneParse
{
  P3dLidarParse parent;

  /* properties, under the object lock */
  P3dVelodyneModel model;
  gchar *calibration;
  gdouble cut_angle;

  /* streaming: the properties as they were at start */
  P3dVelodyneModel active_model;
  gdouble active_cut_angle;
  /* the calibration file's, NULL without one */
  P3dVelodyneCalibration *file_calibration;
  gchar *calibration_path;
  /* made at start for a given model, at the first packet for auto */
  P3dVelodyneDecoder *decoder;

  /* the open sweep: began at a cut (a whole revolution when it ends at
   * the next), follows a break, its first firing (microseconds since the
   * hour of the stream's first packet) */
  gboolean sweep_whole;
  gboolean sweep_discont;
  gdouble sweep_t0;
};

GST_ELEMENT_REGISTER_DECLARE (velodyneparse);

G_END_DECLS

#endif /* __P3D_VELODYNE_PARSE_H__ */
