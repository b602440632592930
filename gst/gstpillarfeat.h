/* pillarfeat: voxels (application/x-voxels) -> PointPillars network input
 * (application/x-pillar-features). */
#ifndef __P3D_PILLARFEAT_H__
#define __P3D_PILLARFEAT_H__

#include "p3dperception.h"
#include "pillarfeat.h"

G_BEGIN_DECLS

#define P3D_TYPE_PILLARFEAT (p3d_pillarfeat_get_type ())
G_DECLARE_FINAL_TYPE (P3dPillarfeat, p3d_pillarfeat, P3D, PILLARFEAT,
    P3dCudaFilter);

struct _P3dPillarfeat
{
  P3dCudaFilter parent;

  /* property, under the object lock */
  P3dFeatureSet features;

  /* negotiated */
  P3dVoxelsInfo in_info;
  P3dPillarsInfo out_info;
  P3dPillarFeatParams params;

  /* the reference path warned of a voxel count over max-voxels in this
   * stream */
  gboolean warned_count;
};

G_END_DECLS

#endif /* __P3D_PILLARFEAT_H__ */
