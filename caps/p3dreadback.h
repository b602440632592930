/* gst-perception: reading small device results back without waiting.
 *
 * A GPU element that reports per-frame numbers its kernels computed (how
 * many points voxelize dropped) must not synchronize the host with its
 * stream to learn them. A readback ring gives each frame a device slot for
 * the kernel to write, copies it to page-locked host memory behind the
 * frame's work with an event, and hands back finished records in frame
 * order when the element next looks (each frame, and at the end of the
 * stream, where it waits). When every slot is in flight, the element pops
 * the oldest with wait = TRUE before taking a new slot.
 *
 * The ring lives on one device, which it makes current itself where it
 * needs to (creation, pop, free); next_slot and push are called with that
 * device current, as a P3dCudaFilter's process_cuda is.
 */
#ifndef __P3D_READBACK_H__
#define __P3D_READBACK_H__

#include <gst/gst.h>

#include "runtime.h"

G_BEGIN_DECLS

typedef struct _P3dReadback P3dReadback;

/* On @device_id; NULL and @result set on failure. */
P3dReadback *p3d_readback_new (gint device_id, gsize record_size,
    guint depth, P3dcResult * result);
void p3d_readback_free (P3dReadback * readback);

/* The device slot for the next frame's record; P3DC_ERROR_NOT_READY when
 * every slot is in flight (pop one first). */
P3dcResult p3d_readback_next_slot (P3dReadback * readback, gpointer * slot);
/* Queues the copy of the slot given by the last next_slot() behind the
 * work on @stream, tagged with @pts. */
P3dcResult p3d_readback_push (P3dReadback * readback, P3dcCudaStream stream,
    GstClockTime pts);
/* The oldest record whose copy has finished (waiting for it when @wait):
 * TRUE with @record and @pts filled, FALSE when none is ready or none is
 * queued. */
gboolean p3d_readback_pop (P3dReadback * readback, gboolean wait,
    gpointer record, GstClockTime * pts);
gboolean p3d_readback_is_full (P3dReadback * readback);

G_END_DECLS

#endif /* __P3D_READBACK_H__ */
