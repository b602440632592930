/* nms: non-maximum suppression of 3D (BEV) or 2D boxes. */
#ifndef __P3D_NMS_H__
#define __P3D_NMS_H__

#include "nms.h"
#include "p3dperception.h"

G_BEGIN_DECLS

#define P3D_TYPE_NMS (p3d_nms_get_type ())
G_DECLARE_FINAL_TYPE (P3dNms, p3d_nms, P3D, NMS, P3dCudaFilter);

struct _P3dNms
{
  P3dCudaFilter parent;

  /* properties, under the object lock; thresholds may change while
   * playing and are read once per frame */
  P3dcNmsParams params;

  /* negotiated: the mode decides the record size, so frames keep the
   * negotiated one whatever the property says until the next caps */
  guint max_boxes;
  P3dcNmsMode mode;
  gboolean warned_count;
  /* the boxes carry a velocity, which follows each kept box */
  gboolean velocity;
  /* the kept boxes' input indices, to carry their velocities: host for
   * the reference path, device for the CUDA one (max_boxes entries) */
  gint32 *kept_index;

  /* device */
  P3dcNms *nms;
  gint32 *kept_index_device;
};

GST_ELEMENT_REGISTER_DECLARE (nms);

G_END_DECLS

#endif /* __P3D_NMS_H__ */
