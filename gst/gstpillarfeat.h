/* pillarfeat: voxels (application/x-voxels) -> PointPillars network input
 * (application/x-pillar-features). */
#ifndef __P3D_PILLAR_FEAT_H__
#define __P3D_PILLAR_FEAT_H__

#include "p3dperception.h"
#include "pillarfeat.h"

G_BEGIN_DECLS

#define P3D_TYPE_PILLAR_FEAT (p3d_pillar_feat_get_type ())
G_DECLARE_FINAL_TYPE (P3dPillarFeat, p3d_pillar_feat, P3D, PILLAR_FEAT,
    P3dCudaFilter);

struct _P3dPillarFeat
{
  P3dCudaFilter parent;

  /* property, under the object lock */
  P3dFeatureSet features;

  /* negotiated */
  P3dVoxelsInfo in_info;
  P3dPillarsInfo out_info;
  P3dcPillarFeatParams params;
  /* the device path for params (use-cuda only) */
  P3dcPillarFeatCuda *cuda;

  /* the reference path warned of a voxel count over max-voxels in this
   * stream */
  gboolean warned_count;
};

GST_ELEMENT_REGISTER_DECLARE (pillarfeat);

G_END_DECLS

#endif /* __P3D_PILLAR_FEAT_H__ */
