/* The CUDA runtime wrappers of runtime.h, for builds with CUDA.
 *
 * Compiled as C against cuda_runtime_api.h; the runtime itself is linked
 * statically into the compute library, and it loads the driver (libcuda)
 * with dlopen on first use, so this file also runs on machines without one:
 * every call then fails with cudaErrorInsufficientDriver or
 * cudaErrorNoDevice, which p3dc_cuda_device_count() turns into 0.
 */
#include <cuda_runtime_api.h>

#include "runtime.h"
#include "runtime-private.h"

const char *
p3dc_runtime_error_string (P3dcResult result)
{
  int driver_version = 0;

  /* Without a driver the runtime reports an "insufficient" driver, which
   * sends people to upgrade one they do not have: say what is missing. */
  if (result == (P3dcResult) cudaErrorInsufficientDriver
      && (cudaDriverGetVersion (&driver_version) != cudaSuccess
          || driver_version == 0))
    return "no CUDA device: no NVIDIA driver is installed";
  if (result == (P3dcResult) cudaErrorNoDevice)
    return "no CUDA device: the driver finds no GPU";
  return cudaGetErrorString ((cudaError_t) result);
}

int
p3dc_cuda_built (void)
{
  return 1;
}

P3dcResult
p3dc_cuda_device_probe (void)
{
  int count = 0;
  cudaError_t err = cudaGetDeviceCount (&count);

  if (err != cudaSuccess) {
    /* Leave no sticky error behind for the next caller on this thread. */
    cudaGetLastError ();
    return err;
  }
  return count > 0 ? P3DC_OK : (P3dcResult) cudaErrorNoDevice;
}

int
p3dc_cuda_device_count (void)
{
  int count = 0;

  if (cudaGetDeviceCount (&count) != cudaSuccess) {
    cudaGetLastError ();
    return 0;
  }
  return count;
}

P3dcResult
p3dc_cuda_device_describe (int device, char *name, size_t name_len,
    int *major, int *minor, int *multiprocessors)
{
  struct cudaDeviceProp prop;
  cudaError_t err = cudaGetDeviceProperties (&prop, device);
  size_t i;

  if (err != cudaSuccess)
    return err;
  if (name && name_len > 0) {
    for (i = 0; i + 1 < name_len && prop.name[i] != '\0'; i++)
      name[i] = prop.name[i];
    name[i] = '\0';
  }
  if (major)
    *major = prop.major;
  if (minor)
    *minor = prop.minor;
  if (multiprocessors)
    *multiprocessors = prop.multiProcessorCount;
  return P3DC_OK;
}

P3dcResult
p3dc_cuda_device_push (int device, int *previous)
{
  cudaError_t err = cudaGetDevice (previous);

  if (err != cudaSuccess)
    return err;
  if (*previous == device)
    return P3DC_OK;
  return cudaSetDevice (device);
}

P3dcResult
p3dc_cuda_device_pop (int previous)
{
  int current = -1;
  cudaError_t err = cudaGetDevice (&current);

  if (err != cudaSuccess)
    return err;
  if (current == previous)
    return P3DC_OK;
  return cudaSetDevice (previous);
}

P3dcResult
p3dc_cuda_malloc (void **ptr, size_t size)
{
  if (ptr == NULL || size == 0)
    return P3DC_ERROR_INVALID_ARGUMENT;
  return cudaMalloc (ptr, size);
}

P3dcResult
p3dc_cuda_free (void *ptr)
{
  return cudaFree (ptr);
}

P3dcResult
p3dc_cuda_host_alloc (void **ptr, size_t size)
{
  if (ptr == NULL || size == 0)
    return P3DC_ERROR_INVALID_ARGUMENT;
  return cudaMallocHost (ptr, size);
}

P3dcResult
p3dc_cuda_host_free (void *ptr)
{
  return cudaFreeHost (ptr);
}

P3dcResult
p3dc_cuda_memcpy_htod (void *dst, const void *src, size_t size,
    P3dcCudaStream stream)
{
  if (size == 0)
    return P3DC_OK;
  return cudaMemcpyAsync (dst, src, size, cudaMemcpyHostToDevice, stream);
}

P3dcResult
p3dc_cuda_memcpy_dtoh (void *dst, const void *src, size_t size,
    P3dcCudaStream stream)
{
  if (size == 0)
    return P3DC_OK;
  return cudaMemcpyAsync (dst, src, size, cudaMemcpyDeviceToHost, stream);
}

P3dcResult
p3dc_cuda_memcpy_dtod (void *dst, const void *src, size_t size,
    P3dcCudaStream stream)
{
  if (size == 0)
    return P3DC_OK;
  return cudaMemcpyAsync (dst, src, size, cudaMemcpyDeviceToDevice, stream);
}

/* What p3dc_cuda_enable_peer_access() found for (current, peer) in this
 * process: 0 not asked yet, 1 on, 2 not possible.  Peer access belongs to
 * the process's contexts, and asking CUDA again is an error it reports
 * (compute-sanitizer counts it), so each pair is asked once. */
#define PEER_PAIRS 64
static int peer_pairs[PEER_PAIRS][PEER_PAIRS];

P3dcResult
p3dc_cuda_enable_peer_access (int peer, int *enabled)
{
  int current = -1, can = 0, known = 0;
  cudaError_t err;

  *enabled = 0;
  err = cudaGetDevice (&current);
  if (err != cudaSuccess)
    return err;
  if (current == peer) {
    *enabled = 1;
    return P3DC_OK;
  }
  if (current < PEER_PAIRS && peer >= 0 && peer < PEER_PAIRS)
    known = __atomic_load_n (&peer_pairs[current][peer], __ATOMIC_ACQUIRE);
  if (known != 0) {
    *enabled = known == 1;
    return P3DC_OK;
  }
  err = cudaDeviceCanAccessPeer (&can, current, peer);
  if (err != cudaSuccess)
    return err;
  if (!can) {
    if (current < PEER_PAIRS && peer >= 0 && peer < PEER_PAIRS)
      __atomic_store_n (&peer_pairs[current][peer], 2, __ATOMIC_RELEASE);
    return P3DC_OK;
  }
  err = cudaDeviceEnablePeerAccess (peer, 0);
  if (err == cudaErrorPeerAccessAlreadyEnabled) {
    /* another thread of ours, or other code in the process, came first;
     * reported as the last error too: cleared, so that a later launch
     * check does not take it for its own */
    (void) cudaGetLastError ();
    err = cudaSuccess;
  }
  if (err != cudaSuccess)
    return err;
  if (current < PEER_PAIRS && peer >= 0 && peer < PEER_PAIRS)
    __atomic_store_n (&peer_pairs[current][peer], 1, __ATOMIC_RELEASE);
  *enabled = 1;
  return P3DC_OK;
}

P3dcResult
p3dc_cuda_memcpy_peer (void *dst, int dst_device, const void *src,
    int src_device, size_t size, P3dcCudaStream stream)
{
  if (size == 0)
    return P3DC_OK;
  return cudaMemcpyPeerAsync (dst, dst_device, src, src_device, size, stream);
}

P3dcResult
p3dc_cuda_memset (void *dst, int value, size_t size, P3dcCudaStream stream)
{
  if (size == 0)
    return P3DC_OK;
  return cudaMemsetAsync (dst, value, size, stream);
}

P3dcResult
p3dc_cuda_stream_create (P3dcCudaStream * stream)
{
  return cudaStreamCreateWithFlags ((cudaStream_t *) stream,
      cudaStreamNonBlocking);
}

P3dcResult
p3dc_cuda_stream_destroy (P3dcCudaStream stream)
{
  return cudaStreamDestroy (stream);
}

P3dcResult
p3dc_cuda_stream_synchronize (P3dcCudaStream stream)
{
  return cudaStreamSynchronize (stream);
}

P3dcResult
p3dc_cuda_event_create (P3dcCudaEvent * event)
{
  return cudaEventCreateWithFlags ((cudaEvent_t *) event,
      cudaEventDisableTiming);
}

P3dcResult
p3dc_cuda_event_create_timed (P3dcCudaEvent * event)
{
  return cudaEventCreate ((cudaEvent_t *) event);
}

P3dcResult
p3dc_cuda_event_destroy (P3dcCudaEvent event)
{
  return cudaEventDestroy (event);
}

P3dcResult
p3dc_cuda_event_record (P3dcCudaEvent event, P3dcCudaStream stream)
{
  return cudaEventRecord (event, stream);
}

P3dcResult
p3dc_cuda_event_synchronize (P3dcCudaEvent event)
{
  return cudaEventSynchronize (event);
}

P3dcResult
p3dc_cuda_event_query (P3dcCudaEvent event)
{
  cudaError_t err = cudaEventQuery (event);

  if (err == cudaErrorNotReady)
    return P3DC_ERROR_NOT_READY;
  return err;
}

P3dcResult
p3dc_cuda_event_elapsed_ms (float *ms, P3dcCudaEvent start, P3dcCudaEvent stop)
{
  return cudaEventElapsedTime (ms, start, stop);
}

P3dcResult
p3dc_cuda_stream_wait_event (P3dcCudaStream stream, P3dcCudaEvent event)
{
  return cudaStreamWaitEvent (stream, event, 0);
}

P3dcResult
p3dc_cuda_memory_info (size_t *free_bytes, size_t *total_bytes)
{
  return cudaMemGetInfo (free_bytes, total_bytes);
}

P3dcResult
p3dc_cuda_last_error (void)
{
  return cudaGetLastError ();
}
