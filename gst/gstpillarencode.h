/* pillarencode: pillar features (application/x-pillar-features) -> the
 * bird's-eye-view canvas of a PointPillars / CenterPoint network
 * (application/x-bev-features), with the learned pillar feature net of a
 * weights file. */
#ifndef __P3D_PILLAR_ENCODE_ELEMENT_H__
#define __P3D_PILLAR_ENCODE_ELEMENT_H__

#include "p3dperception.h"
#include "p3dmodel.h"
#include "pillarencode.h"

G_BEGIN_DECLS

#define P3D_TYPE_PILLAR_ENCODE (p3d_pillar_encode_get_type ())
G_DECLARE_FINAL_TYPE (P3dPillarEncode, p3d_pillar_encode, P3D, PILLAR_ENCODE,
    P3dCudaFilter);

struct _P3dPillarEncode
{
  P3dCudaFilter parent;

  /* property, under the object lock */
  gchar *weights;

  /* loaded in start (): a model with a pillar feature net */
  P3dModel *model;

  /* negotiated */
  P3dPillarsInfo in_info;
  P3dBevFeaturesInfo out_info;
  P3dcPillarEncodeParams params;
  /* the device path's workspace, made for @params */
  P3dcPillarEncoder *encoder;
  /* pillars whose cell lies outside the grid, summed over the stream */
  guint64 dropped;
  gboolean warned_dropped;
};

GST_ELEMENT_REGISTER_DECLARE (pillarencode);

G_END_DECLS

#endif /* __P3D_PILLAR_ENCODE_ELEMENT_H__ */
