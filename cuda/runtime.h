/* gst-perception compute library: the part of the CUDA runtime we use.
 *
 * The runtime is linked statically into the compute library and nowhere
 * else, so a process holds one copy of it; GStreamer code (caps/, gst/) and
 * the tests reach the device only through these functions.  Every function
 * returns a P3dcResult and never aborts.  Built without CUDA, every function
 * returns P3DC_ERROR_NO_CUDA and p3dc_cuda_device_count() returns 0.
 *
 * Device selection is per host thread in CUDA; p3dc_cuda_device_push() and
 * p3dc_cuda_device_pop() bracket work for one device and put the caller's
 * device back, so an element never changes the device of a thread it does
 * not own for longer than one call.
 */
#ifndef P3DC_RUNTIME_H
#define P3DC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "result.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The same types as cudaStream_t and cudaEvent_t, declared here so that code
 * built without the CUDA headers can hold them. */
#ifndef P3DC_CUDA_STREAM_DEFINED
#define P3DC_CUDA_STREAM_DEFINED
typedef struct CUstream_st *P3dcCudaStream;
typedef struct CUevent_st *P3dcCudaEvent;
#endif

/* TRUE when the library was built with CUDA. */
int p3dc_cuda_built (void);

/* The number of usable devices: 0 when built without CUDA, when no driver is
 * installed, or when the driver finds no device.  Never fails. */
int p3dc_cuda_device_count (void);

/* Why p3dc_cuda_device_count() is 0 (or P3DC_OK when it is not). */
P3dcResult p3dc_cuda_device_probe (void);

/* The device's name and compute capability. */
P3dcResult p3dc_cuda_device_describe (int device, char *name, size_t name_len,
    int *major, int *minor, int *multiprocessors);

/* Make @device current on this thread; @previous receives the device that
 * was current, for p3dc_cuda_device_pop(). */
P3dcResult p3dc_cuda_device_push (int device, int *previous);
P3dcResult p3dc_cuda_device_pop (int previous);

/* Device memory (linear, on the current device). */
P3dcResult p3dc_cuda_malloc (void **ptr, size_t size);
P3dcResult p3dc_cuda_free (void *ptr);

/* Page-locked host memory, for staging copies that run asynchronously. */
P3dcResult p3dc_cuda_host_alloc (void **ptr, size_t size);
P3dcResult p3dc_cuda_host_free (void *ptr);

/* Copies and fills, queued on @stream. */
P3dcResult p3dc_cuda_memcpy_htod (void *dst, const void *src, size_t size,
    P3dcCudaStream stream);
P3dcResult p3dc_cuda_memcpy_dtoh (void *dst, const void *src, size_t size,
    P3dcCudaStream stream);
P3dcResult p3dc_cuda_memcpy_dtod (void *dst, const void *src, size_t size,
    P3dcCudaStream stream);
/* Lets the current device read and write @peer's memory directly (NVLink
 * or PCIe peer to peer), so that copies from @peer are not staged through
 * host memory.  *enabled is 1 when access is on (now or before), 0 when
 * the pair cannot (then copies still work, staged); P3DC_OK either way. */
P3dcResult p3dc_cuda_enable_peer_access (int peer, int *enabled);
/* A copy between devices (@dst on @dst_device, @src on @src_device). */
P3dcResult p3dc_cuda_memcpy_peer (void *dst, int dst_device, const void *src,
    int src_device, size_t size, P3dcCudaStream stream);
P3dcResult p3dc_cuda_memset (void *dst, int value, size_t size,
    P3dcCudaStream stream);

/* Streams are non-blocking: they never wait on the legacy default stream. */
P3dcResult p3dc_cuda_stream_create (P3dcCudaStream * stream);
P3dcResult p3dc_cuda_stream_destroy (P3dcCudaStream stream);
P3dcResult p3dc_cuda_stream_synchronize (P3dcCudaStream stream);

/* Events without timing (cheap) or with timing (for benchmarks). */
P3dcResult p3dc_cuda_event_create (P3dcCudaEvent * event);
P3dcResult p3dc_cuda_event_create_timed (P3dcCudaEvent * event);
P3dcResult p3dc_cuda_event_destroy (P3dcCudaEvent event);
P3dcResult p3dc_cuda_event_record (P3dcCudaEvent event, P3dcCudaStream stream);
P3dcResult p3dc_cuda_event_synchronize (P3dcCudaEvent event);
/* P3DC_OK when all work before the last record has finished,
 * P3DC_ERROR_NOT_READY when it has not. */
P3dcResult p3dc_cuda_event_query (P3dcCudaEvent event);
P3dcResult p3dc_cuda_event_elapsed_ms (float *ms, P3dcCudaEvent start,
    P3dcCudaEvent stop);
/* Queue on @stream a wait for the work before @event's last record. */
P3dcResult p3dc_cuda_stream_wait_event (P3dcCudaStream stream,
    P3dcCudaEvent event);

/* Bytes of device memory free and in total on the current device. */
P3dcResult p3dc_cuda_memory_info (size_t *free_bytes, size_t *total_bytes);

/* The last error raised by a kernel launch on this thread, cleared. */
P3dcResult p3dc_cuda_last_error (void);

#ifdef __cplusplus
}
#endif

#endif /* P3DC_RUNTIME_H */
