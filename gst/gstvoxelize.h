/* voxelize: lidar sweep (application/x-point-cloud) -> voxels
 * (application/x-voxels); PointPillars pillars when the grid has one z cell. */
#ifndef __P3D_VOXELIZE_H__
#define __P3D_VOXELIZE_H__

#include "p3dperception.h"
#include "voxelize.h"

G_BEGIN_DECLS

#define P3D_TYPE_VOXELIZE (p3d_voxelize_get_type ())
G_DECLARE_FINAL_TYPE (P3dVoxelize, p3d_voxelize, P3D, VOXELIZE,
    P3dCudaFilter);

struct _P3dVoxelize
{
  P3dCudaFilter parent;

  /* properties, under the object lock */
  gdouble voxel_size[3];
  gdouble range[6];
  guint max_points;
  guint max_voxels;
  gboolean post_stats;

  /* negotiated */
  P3dPointCloudInfo in_info;
  P3dVoxelsInfo out_info;
  P3dcVoxelizeParams params;

  /* device */
  P3dcVoxelizer *voxelizer;

  /* statistics, under the object lock */
  P3dcVoxelizeStats last_stats;
  guint64 frames;
  guint64 saturated_frames;
  gboolean saturated;
  /* the warning for a frame without a point in the range was posted */
  gboolean warned_empty;

  /* streaming: the first input buffer's size and byte offsets, to tell
   * sweeps that are a file reader's blocks (-1: not seen; 0: checked) */
  gint64 first_size;
  guint64 first_offset_end;
};

GST_ELEMENT_REGISTER_DECLARE (voxelize);

G_END_DECLS

#endif /* __P3D_VOXELIZE_H__ */
