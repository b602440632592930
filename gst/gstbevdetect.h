/* bevdetect: a bird's-eye-view feature map (application/x-bev-features) ->
 * scored, labelled 3D boxes (application/x-boxes3d), through the 2D
 * backbone, neck and detection head of a weights file and the decode of the
 * head's maps. */
#ifndef __P3D_BEV_DETECT_H__
#define __P3D_BEV_DETECT_H__

#include "p3dperception.h"
#include "p3dmodel.h"
#include "convnet.h"

G_BEGIN_DECLS

/**
 * P3dPrecision:
 * @P3D_PRECISION_F16: F16 storage, F32 accumulation (tensor cores)
 * @P3D_PRECISION_F32: F32 storage and accumulation
 *
 * The storage of the network's activations and weights on the device.
 */
typedef enum
{
  P3D_PRECISION_F16 = 0,
  P3D_PRECISION_F32 = 1,
} P3dPrecision;

#define P3D_TYPE_PRECISION (p3d_precision_get_type ())
GType p3d_precision_get_type (void);

#define P3D_TYPE_BEV_DETECT (p3d_bev_detect_get_type ())
G_DECLARE_FINAL_TYPE (P3dBevDetect, p3d_bev_detect, P3D, BEV_DETECT,
    P3dCudaFilter);

struct _P3dBevDetect
{
  P3dCudaFilter parent;

  /* properties, under the object lock */
  gchar *weights;
  gboolean model_nms;
  P3dPrecision precision;

  /* loaded in start (): the model, its "bev" network and the decode of
   * its head */
  P3dModel *model;
  const P3dModelNetwork *network;
  P3dModelDecoder *decoder;

  /* negotiated */
  P3dBevFeaturesInfo in_info;
  P3dBoxes3dInfo out_info;
  gboolean half;                /* the device net's storage */

  /* the reference path's activations, and the input widened to F32 */
  float **cpu_buffers;
  float *cpu_input;
  /* the device path's workspaces */
  P3dcConvNet *net;
  P3dModelDecodeWorkspace *decode_workspace;
  /* what cuDNN said when the network could not be set up */
  gchar net_message[256];
};

GST_ELEMENT_REGISTER_DECLARE (bevdetect);

G_END_DECLS

#endif /* __P3D_BEV_DETECT_H__ */
