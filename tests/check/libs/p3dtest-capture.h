/* Stream capture, for the tests of code that must also work while its
 * caller captures the stream into a CUDA graph (part of the tests' own CUDA
 * library, libp3dtestcuda, with p3dtest-fill.h).  The streams come from the
 * compute library: a capture is the driver's state of the stream, so it
 * holds for the launches of both runtimes. */
#ifndef P3D_CAPTURE_H
#define P3D_CAPTURE_H

#include <stddef.h>

#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef P3dcResult (*P3dCaptureQueue) (void *user_data,
    P3dcCudaStream stream);

/* Captures what @queue queues on @stream (thread-local mode, so other
 * threads are not disturbed), instantiates the graph, launches it once on
 * @stream and frees it (the launch completes on its own).  Returns P3DC_OK,
 * else the error of @queue or of the first capture step that failed; the
 * capture is always ended.  *nodes: the nodes the graph holds. */
P3dcResult p3d_capture_and_launch (P3dcCudaStream stream,
    P3dCaptureQueue queue, void *user_data, size_t * nodes);

/* Calls @queue (user_data, @stream) while @capturing, another stream,
 * is captured in the global mode (as PyTorch captures): the calls the
 * driver holds unsafe during such a capture, made by @queue, fail and
 * invalidate it.  Returns @queue's error, else the capture's (P3DC_OK when
 * it ended intact); the capture always ends and is discarded. */
P3dcResult p3d_call_beside_global_capture (P3dcCudaStream capturing,
    P3dCaptureQueue queue, void *user_data, P3dcCudaStream stream);

#ifdef __cplusplus
}
#endif

#endif /* P3D_CAPTURE_H */
