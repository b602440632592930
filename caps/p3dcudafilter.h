/* gst-perception: the abstract base of our GPU filters.
 *
 * It holds what every filter needs, so that elements keep only their own
 * logic: the backend choice (property "backend": auto, cuda, cpu, and
 * "cuda-device-id"), the device and a stream of the element's own, caps
 * negotiation in system and CUDA memory on both pads, a tensor buffer pool
 * for the output in the negotiated memory, and the moves of tensors between
 * host and device when a buffer is not where the backend runs.
 *
 * The device. It is looked for in start(), never at registration: the
 * elements exist on every machine. cuda-device-id means what it means for
 * every element (p3dcudacontext.h): a number, or with -1 the device that
 * the pipeline already uses, else device 0, which the filter then shares.
 * A filter at -1 also follows its input: when a frame arrives on another
 * device it moves there, so a pipeline whose first element was placed on
 * device 1 runs on device 1 end to end. A filter given a device by number
 * stays on it and copies input from other devices device to device.
 *
 * What a subclass writes:
 * - transform_media_caps: the media caps on the other pad;
 * - set_info: parses the fixed caps into the tensor layouts of both pads,
 *   and (re)creates its device workspaces with
 *   p3d_cuda_filter_replace_workspace(); on refusal it returns FALSE with a
 *   GError naming the field and the two values that disagree, which the
 *   base class posts as the element's error;
 * - start_device / stop_device (optional): resources that live as long as
 *   the device is used;
 * - process_cpu: one frame with host pointers;
 * - process_cuda: one frame with device pointers, queued on @self->stream;
 * - readback_size and readback (optional): a small record per frame that
 *   process_cuda's kernels write into p3d_cuda_filter_readback_slot()
 *   (statistics, a count) and the base class reads back without waiting
 *   for the stream, handing each to readback in frame order.
 * set_info, start_device, stop_device and process_cuda run with the
 * element's device current on the calling thread: a subclass never selects
 * a device, synchronizes the stream or orders memories itself.
 */
#ifndef __P3D_CUDA_FILTER_H__
#define __P3D_CUDA_FILTER_H__

#include <gst/base/gstbasetransform.h>
#include <gst/gst.h>

#include "p3dcudacontext.h"
#include "p3dcudamemory.h"
#include "p3dreadback.h"
#include "p3dtensor.h"

G_BEGIN_DECLS

typedef enum
{
  P3D_BACKEND_AUTO = 0,
  P3D_BACKEND_CUDA = 1,
  P3D_BACKEND_CPU = 2,
} P3dBackend;

#define P3D_TYPE_BACKEND (p3d_backend_get_type ())
GType p3d_backend_get_type (void);

#define P3D_TYPE_CUDA_FILTER (p3d_cuda_filter_get_type ())
#define P3D_CUDA_FILTER(obj) \
    (G_TYPE_CHECK_INSTANCE_CAST ((obj), P3D_TYPE_CUDA_FILTER, P3dCudaFilter))
#define P3D_CUDA_FILTER_CLASS(klass) \
    (G_TYPE_CHECK_CLASS_CAST ((klass), P3D_TYPE_CUDA_FILTER, P3dCudaFilterClass))
#define P3D_CUDA_FILTER_GET_CLASS(obj) \
    (G_TYPE_INSTANCE_GET_CLASS ((obj), P3D_TYPE_CUDA_FILTER, P3dCudaFilterClass))
#define P3D_IS_CUDA_FILTER(obj) \
    (G_TYPE_CHECK_INSTANCE_TYPE ((obj), P3D_TYPE_CUDA_FILTER))

typedef struct _P3dCudaFilter P3dCudaFilter;
typedef struct _P3dCudaFilterClass P3dCudaFilterClass;

/**
 * P3dCudaFilter:
 * @use_cuda: whether frames run on the device (decided in start())
 * @device_id: the device in use when @use_cuda
 * @stream: the element's stream when @use_cuda
 * @in_layout: the tensors of the negotiated input caps
 * @out_layout: the tensors of the negotiated output caps
 *
 * Read-only for subclasses.
 */
struct _P3dCudaFilter
{
  GstBaseTransform parent;

  gboolean use_cuda;
  gint device_id;
  P3dcCudaStream stream;
  P3dTensorLayout in_layout;
  P3dTensorLayout out_layout;

  /*< private > */
  P3dBackend backend;
  gint requested_device_id;
  gboolean started;
  GstAllocator *allocator;
  gboolean out_cuda;
  GstCaps *incaps;
  GstCaps *outcaps;
  /* the last caps set_info refused, posted once */
  GstCaps *refused_incaps;
  GstCaps *refused_outcaps;
  GstContext *context;
  P3dReadback *readback;
  gpointer readback_record;
  gboolean readback_taken;
  P3dcCudaEvent peer_event;
  /* bit d: peer access to device d asked for since the device opened */
  guint64 peers_asked;
  gpointer scratch[2][P3D_MAX_TENSORS];
  gsize scratch_size[2][P3D_MAX_TENSORS];
  gboolean scratch_out_clean;
  gpointer _gst_reserved[GST_PADDING];
};

/**
 * P3dCudaFilterClass:
 * @transform_media_caps: the caps on the other pad for @caps (features
 *     removed from both: the base class offers each result in system and
 *     in CUDA memory)
 * @set_info: parses the fixed caps and fills the tensor layouts of both
 *     pads, and prepares what processing needs (device workspaces with
 *     p3d_cuda_filter_replace_workspace() when @self->use_cuda); called
 *     with the device current. FALSE refuses the caps: set @error
 *     (GST_CORE_ERROR_NEGOTIATION for caps that disagree with each other or
 *     with a property, naming the field and both values; another domain
 *     when that says more), and the base class posts it as the element's
 *     error
 * @start_device: optional, with the device current: allocates resources
 *     that live while the device is used; called in start() when the CUDA
 *     path is taken, and again after a move to another device
 * @stop_device: optional, with the device current, after the stream has
 *     finished: frees them and every workspace
 * @process_cpu: processes a frame with host pointers; every byte of @out
 *     must be written
 * @process_cuda: with the device current, queues the processing of a frame
 *     on @self->stream with device pointers; @out_clean is TRUE when @out
 *     holds this element's previous output, untouched since, so that only
 *     what differs needs writing; FALSE: every byte must be written
 * @readback_size: optional: the size of the record that process_cuda's
 *     kernels write for each frame into p3d_cuda_filter_readback_slot()
 * @readback: with @readback_size: receives each frame's record on the
 *     host with the frame's pts, in frame order, without the stream being
 *     waited for (p3dreadback.h): as later frames are processed, and at
 *     the end of the stream
 * @bad_input_hint: optional: what the user may change when an input buffer
 *     does not hold the tensors its caps describe, added to that error
 * @sink_fallback_caps: optional, where a property or a model constrains
 *     the sink caps: media caps (a pad template's) offered on the sink pad
 *     after what transform_media_caps gives
 * @src_fallback_caps: the same for the src pad
 *
 * The fallbacks: caps that contradict a property or a model are then still
 * negotiated when the peer takes nothing else, and this element refuses
 * them with the field, both values and what to set (set_info's error, or
 * the base class's when the output caps are not what transform_media_caps
 * makes of the input), instead of a caps query that comes back empty and
 * a bare not-negotiated from a source upstream. Peers that can follow the
 * constraint still get it: it comes first.
 */
struct _P3dCudaFilterClass
{
  GstBaseTransformClass parent_class;

  GstCaps *(*transform_media_caps) (P3dCudaFilter * self,
      GstPadDirection direction, GstCaps * caps);
  gboolean (*set_info) (P3dCudaFilter * self, GstCaps * incaps,
      P3dTensorLayout * in_layout, GstCaps * outcaps,
      P3dTensorLayout * out_layout, GError ** error);
  gboolean (*start_device) (P3dCudaFilter * self);
  void (*stop_device) (P3dCudaFilter * self);
  GstFlowReturn (*process_cpu) (P3dCudaFilter * self, GstBuffer * inbuf,
      P3dTensorMap * in, P3dTensorMap * out);
  GstFlowReturn (*process_cuda) (P3dCudaFilter * self, GstBuffer * inbuf,
      P3dTensorMap * in, P3dTensorMap * out, gboolean out_clean);
  gsize readback_size;
  void (*readback) (P3dCudaFilter * self, gconstpointer record,
      GstClockTime pts);
  const gchar *bad_input_hint;
  const gchar *sink_fallback_caps;
  const gchar *src_fallback_caps;

  /*< private > */
  gpointer _gst_reserved[GST_PADDING];
};

GType p3d_cuda_filter_get_type (void);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (P3dCudaFilter, gst_object_unref);

/* Turns a failed P3dcResult into an element error naming @what and returns
 * FALSE; TRUE for P3DC_OK. For use in process_cuda and start_device. */
gboolean p3d_cuda_filter_check (P3dCudaFilter * self, gint result,
    const gchar * what);

/* For process_cuda of a class with readback_size: the device slot where
 * this frame's kernels write its record, which the base class reads back
 * behind them. NULL, with an element error posted, when that fails. */
gpointer p3d_cuda_filter_readback_slot (P3dCudaFilter * self);

/* Creates a device workspace into *@workspace (P3DC_OK or the error). */
typedef gint (*P3dCudaWorkspaceNew) (P3dCudaFilter * self,
    gpointer * workspace);

/* For set_info: replaces the device workspace *@workspace (NULL for none)
 * with a new one from @create. The work queued on the element's stream may
 * still read the old one, so the stream is waited for first; the old one is
 * then freed with @free_func. FALSE, with *@workspace NULL and @error set
 * (a RESOURCE error naming @what), when waiting or creating fails. */
gboolean p3d_cuda_filter_replace_workspace (P3dCudaFilter * self,
    gpointer * workspace, GDestroyNotify free_func,
    P3dCudaWorkspaceNew create, const gchar * what, GError ** error);

/* Adds the pad templates of a filter whose pads carry @sink_caps and
 * @src_caps (media caps without features): each is offered in system and
 * in CUDA memory. */
void p3d_cuda_filter_class_add_pad_templates (P3dCudaFilterClass * klass,
    GstCaps * sink_caps, GstCaps * src_caps);

G_END_DECLS

#endif /* __P3D_CUDA_FILTER_H__ */
