/* nms: non-maximum suppression of 3D (BEV) or 2D boxes. */
#ifndef __P3D_NMS_FILTER_H__
#define __P3D_NMS_FILTER_H__

#include "nms.h"
#include "p3dperception.h"

G_BEGIN_DECLS

#define P3D_TYPE_NMS_FILTER (p3d_nms_filter_get_type ())
G_DECLARE_FINAL_TYPE (P3dNmsFilter, p3d_nms_filter, P3D, NMS_FILTER, P3dCudaFilter);

struct _P3dNmsFilter
{
  P3dCudaFilter parent;

  /* properties, under the object lock; thresholds may change while
   * playing and are read once per frame */
  P3dNmsParams params;

  /* negotiated: the mode decides the record size, so frames keep the
   * negotiated one whatever the property says until the next caps */
  guint max_boxes;
  P3dNmsMode mode;
  gboolean warned_count;

  /* device */
  P3dNms *nms;
};

G_END_DECLS

#endif /* __P3D_NMS_FILTER_H__ */
