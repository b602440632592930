/* pillarfeat: voxels (application/x-voxels) -> PointPillars network input
 * (application/x-pillar-features). */
#ifndef __GST_PILLARFEAT_H__
#define __GST_PILLARFEAT_H__

#include "p3dperception.h"
#include "pillarfeat.h"

G_BEGIN_DECLS

#define GST_TYPE_PILLARFEAT (gst_pillarfeat_get_type ())
G_DECLARE_FINAL_TYPE (GstPillarfeat, gst_pillarfeat, GST, PILLARFEAT,
    P3dCudaFilter);

struct _GstPillarfeat
{
  P3dCudaFilter parent;

  /* property, under the object lock */
  P3dFeatureSet features;

  /* negotiated */
  P3dVoxelsInfo in_info;
  P3dPillarsInfo out_info;
  P3dPillarFeatParams params;
};

GST_ELEMENT_REGISTER_DECLARE (pillarfeat);

G_END_DECLS

#endif /* __GST_PILLARFEAT_H__ */
