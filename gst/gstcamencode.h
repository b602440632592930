/* camencode: the frames of a rig's cameras (video/x-raw, one request pad
 * each) -> application/x-camera-features, through a camera model's
 * test-time preprocessing and its "image" network (BEVDet's backbone, neck
 * and depth net), for bevpool. */
#ifndef __P3D_CAM_ENCODE_H__
#define __P3D_CAM_ENCODE_H__

#include <gst/base/gstaggregator.h>
#include <gst/video/video.h>

#include "camfeatures.h"
#include "camprep.h"
#include "convnet.h"
#include "gstbevdetect.h"
#include "p3dmodel.h"
#include "p3dperception.h"

G_BEGIN_DECLS

/**
 * P3dCamEncodeMissing:
 * @P3D_CAM_ENCODE_MISSING_REPEAT: the camera's last frame stands in for
 *     the missing one (a set is dropped while a camera has sent none yet)
 * @P3D_CAM_ENCODE_MISSING_DROP: the set is dropped
 * @P3D_CAM_ENCODE_MISSING_ERROR: the element stops with an error
 *
 * What camencode does with a set in which a camera has no frame.
 */
typedef enum
{
  P3D_CAM_ENCODE_MISSING_REPEAT = 0,
  P3D_CAM_ENCODE_MISSING_DROP = 1,
  P3D_CAM_ENCODE_MISSING_ERROR = 2,
} P3dCamEncodeMissing;

#define P3D_TYPE_CAM_ENCODE_PAD (p3d_cam_encode_pad_get_type ())
G_DECLARE_FINAL_TYPE (P3dCamEncodePad, p3d_cam_encode_pad, P3D,
    CAM_ENCODE_PAD, GstAggregatorPad);

/* One camera: sink_K is camera K of the model's rig. */
struct _P3dCamEncodePad
{
  GstAggregatorPad parent;

  guint camera;
  /* the latest caps, or that the latest were refused */
  gboolean negotiated;
  gboolean refused;
  GstVideoInfo info;
  /* the frame of the set being made, or of the last one, with the caps it
   * came with and its running time (NONE without a timestamp) */
  GstBuffer *frame;
  GstVideoInfo frame_info;
  GstClockTime frame_time;
  /* the frame is new for the set being made */
  gboolean fresh;
  gboolean warned_missing;
};

#define P3D_TYPE_CAM_ENCODE (p3d_cam_encode_get_type ())
G_DECLARE_FINAL_TYPE (P3dCamEncode, p3d_cam_encode, P3D, CAM_ENCODE,
    GstAggregator);

struct _P3dCamEncode
{
  GstAggregator parent;

  /* properties, under the object lock */
  gchar *weights;
  P3dBackend backend;
  gint requested_device_id;
  P3dPrecision precision;
  P3dCamEncodeMissing missing;
  guint64 sets_dropped;
  guint64 frames_repeated;
  gboolean started;

  /* loaded in start (): the model, its "image" network, the outputs
   * bevpool takes, and the normalisation of its data config */
  P3dModel *model;
  const P3dModelCameras *cameras;
  const P3dModelNetwork *network;
  const P3dModelOutput *depth;
  const P3dModelOutput *features;
  P3dcCamPrepNorm norm;

  /* the device, when frames run there */
  gboolean use_cuda;
  gint device_id;
  P3dcCudaStream stream;
  /* recorded after reading frames of another device, for their memories */
  P3dcCudaEvent peer_event;
  GstAllocator *allocator;
  GstContext *context;

  /* the output */
  gboolean negotiated;
  P3dCameraFeaturesInfo out_info;
  P3dTensorLayout out_layout;
  gboolean out_cuda;
  gint fps_n, fps_d;

  /* each camera's preprocessing, for the size and format of its frames */
  P3dcCamPrepPlan *plans[P3D_CAMERA_FEATURES_MAX_CAMERAS];
  GstVideoInfo plan_info[P3D_CAMERA_FEATURES_MAX_CAMERAS];
  gboolean prep_stale;

  /* the reference path's input and activations */
  gfloat *cpu_input;
  gfloat **cpu_buffers;
  /* the device path's: the network, the preprocessing of the rig, the
   * network's input, frames uploaded or copied from another device, and
   * the outputs packed on the device for a host buffer */
  P3dcConvNet *net;
  gboolean half;
  P3dcCamPrepCuda *prep;
  gpointer device_input;
  gpointer uploads[P3D_CAMERA_FEATURES_MAX_CAMERAS];
  gsize upload_sizes[P3D_CAMERA_FEATURES_MAX_CAMERAS];
  gpointer scratch[P3D_CAMERA_FEATURES_N_TENSORS];
  gsize scratch_sizes[P3D_CAMERA_FEATURES_N_TENSORS];
  gchar net_message[256];

  /* the sets: set n covers running time [base_time + n / fps,
   * base_time + (n + 1) / fps) */
  GstClockTime base_time;
  guint64 set_index;
};

GST_ELEMENT_REGISTER_DECLARE (camencode);

G_END_DECLS

#endif /* __P3D_CAM_ENCODE_H__ */
