/* gst-perception: one CUDA device for the elements of a pipeline.
 *
 * Every element that picks a device (the GPU filters, and the sources and
 * parsers that write CUDA memory) has the property cuda-device-id, with one
 * meaning: a number names the device; -1 (the default) means the device
 * the pipeline already uses, else device 0. The pipeline's device travels
 * in a GstContext of type P3D_CUDA_DEVICE_CONTEXT_TYPE, as libgstcuda's
 * gstcudautils shares a CUDA context upstream:
 *
 * - when the element starts, p3d_cuda_find_element_device() resolves -1:
 *   the context set on the element (by a bin or the application), else
 *   the answer of a neighbour to a CONTEXT query (downstream first, then
 *   upstream), else the answer of a bin or the application to a
 *   NEED_CONTEXT message, else device 0;
 * - once the element uses a device (it opened it, or allocated memory on
 *   it), p3d_cuda_share_element_device() keeps a context naming it and
 *   posts HAVE_CONTEXT, unless that is the context it holds already;
 * - its set_context calls p3d_cuda_handle_set_context(), and its pads'
 *   query functions p3d_cuda_handle_context_query().
 *
 * The element has the property cuda-device-id (an int), which these
 * functions read, and keeps the context it holds in a GstContext pointer of
 * its own (@held below), NULL at first, which they read and replace under
 * the element's object lock (do not hold it when calling them); it releases
 * it in finalize.
 */
#ifndef __P3D_CUDA_CONTEXT_H__
#define __P3D_CUDA_CONTEXT_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* The GstContext that shares one CUDA device among the elements of a
 * pipeline; its structure holds "device-id" (int). */
#define P3D_CUDA_DEVICE_CONTEXT_TYPE "p3d.cuda.device"

/* A persistent context of that type naming @device_id. */
GstContext *p3d_cuda_device_context_new (gint device_id);

/* The device that @context names, or -1 (NULL, another type, no valid
 * "device-id"). */
gint p3d_cuda_device_context_get_device_id (GstContext * context);

/* The device @element takes when it starts: its cuda-device-id when that
 * is a number (a context held for another device is dropped: it is not the
 * element's), else as the header says; a context found on the way is kept
 * in *@held. */
gint p3d_cuda_find_element_device (GstElement * element, GstContext ** held);

/* Shares @device_id, which @element now uses: keeps a context naming it in
 * *@held and posts HAVE_CONTEXT, unless *@held names it already. */
void p3d_cuda_share_element_device (GstElement * element, gint device_id,
    GstContext ** held);

/* The allocator of @device_id for an element that outputs
 * memory:CUDAMemory, which then shares the device; NULL, with an element
 * error naming the device and the reason, when it cannot be used. */
GstAllocator *p3d_cuda_element_get_allocator (GstElement * element,
    gint device_id, GstContext ** held);

/* For the element's set_context: keeps @context in *@held when it is a
 * device context that the element may take (any device at
 * cuda-device-id=-1, that one for a number). TRUE when kept. Chain up to
 * the parent class's set_context afterwards. */
gboolean p3d_cuda_handle_set_context (GstElement * element,
    GstContext * context, GstContext ** held);

/* For the element's pad query functions: answers a CONTEXT query of our
 * type with *@held, or, while the element holds none (it has not
 * started: a pipeline starts from the sink up), with the device it was
 * given by number, so that a -1 neighbour starting first takes that device
 * instead of device 0. TRUE when answered; FALSE for any other query. */
gboolean p3d_cuda_handle_context_query (GstElement * element,
    GstQuery * query, GstContext ** held);

G_END_DECLS

#endif /* __P3D_CUDA_CONTEXT_H__ */
