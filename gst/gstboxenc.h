/* boxenc: application/x-boxes3d or application/x-boxes2d -> JSON lines or
 * KITTI label lines, one output buffer per frame. */
#ifndef __P3D_BOX_ENC_H__
#define __P3D_BOX_ENC_H__

#include <gst/base/gstbasetransform.h>

#include "p3dboxtext.h"
#include "p3dperception.h"

G_BEGIN_DECLS

#define P3D_TYPE_BOX_ENC (p3d_box_enc_get_type ())
G_DECLARE_FINAL_TYPE (P3dBoxEnc, p3d_box_enc, P3D, BOX_ENC, GstBaseTransform);

struct _P3dBoxEnc
{
  GstBaseTransform parent;

  /* properties, under the object lock */
  P3dBoxTextFormat format;
  gchar *labels_text;
  gchar **labels;
  gboolean separate_frames;

  /* negotiated */
  P3dBoxTextFormat out_format;
  P3dBoxKind kind;
  guint max_boxes;
  gboolean velocity;           /* 3D boxes with the velocity tensor */
  P3dTensorLayout layout;

  /* streaming */
  guint64 frame_number;
};

GST_ELEMENT_REGISTER_DECLARE (boxenc);

G_END_DECLS

#endif /* __P3D_BOX_ENC_H__ */
