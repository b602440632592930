/* nms: non-maximum suppression of 3D (BEV) or 2D boxes. */
#ifndef __GST_NMS_H__
#define __GST_NMS_H__

#include "nms.h"
#include "p3dperception.h"

G_BEGIN_DECLS

#define GST_TYPE_NMS (gst_nms_get_type ())
G_DECLARE_FINAL_TYPE (GstNms, gst_nms, GST, NMS, P3dCudaFilter);

struct _GstNms
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

GST_ELEMENT_REGISTER_DECLARE (nms);

G_END_DECLS

#endif /* __GST_NMS_H__ */
