/* The runtime.h functions for builds without CUDA: no device exists, and
 * every device call says why. The C reference path needs none of them. */
#include "runtime.h"
#include "runtime-private.h"

const char *
p3dc_runtime_error_string (P3dcResult result)
{
  (void) result;
  return "CUDA error (this build has no CUDA)";
}

int
p3dc_cuda_built (void)
{
  return 0;
}

int
p3dc_cuda_device_count (void)
{
  return 0;
}

P3dcResult
p3dc_cuda_device_probe (void)
{
  return P3DC_ERROR_NO_CUDA;
}

P3dcResult
p3dc_cuda_device_describe (int device, char *name, size_t name_len,
    int *major, int *minor, int *multiprocessors)
{
  (void) device;
  (void) major;
  (void) minor;
  (void) multiprocessors;
  if (name && name_len > 0)
    name[0] = '\0';
  return P3DC_ERROR_NO_CUDA;
}

/* *INDENT-OFF* */
P3dcResult p3dc_cuda_device_push (int d, int *p) { (void) d; *p = -1; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_device_pop (int p) { (void) p; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_malloc (void **p, size_t s) { (void) s; *p = NULL; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_free (void *p) { (void) p; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_host_alloc (void **p, size_t s) { (void) s; *p = NULL; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_host_free (void *p) { (void) p; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_memcpy_htod (void *d, const void *s, size_t n, P3dcCudaStream st) { (void) d; (void) s; (void) n; (void) st; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_memcpy_dtoh (void *d, const void *s, size_t n, P3dcCudaStream st) { (void) d; (void) s; (void) n; (void) st; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_memcpy_dtod (void *d, const void *s, size_t n, P3dcCudaStream st) { (void) d; (void) s; (void) n; (void) st; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_enable_peer_access (int p, int *e) { (void) p; *e = 0; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_memcpy_peer (void *d, int dd, const void *s, int sd, size_t n, P3dcCudaStream st) { (void) d; (void) dd; (void) s; (void) sd; (void) n; (void) st; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_memset (void *d, int v, size_t n, P3dcCudaStream st) { (void) d; (void) v; (void) n; (void) st; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_stream_create (P3dcCudaStream *s) { *s = NULL; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_stream_destroy (P3dcCudaStream s) { (void) s; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_stream_synchronize (P3dcCudaStream s) { (void) s; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_event_create (P3dcCudaEvent *e) { *e = NULL; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_event_create_timed (P3dcCudaEvent *e) { *e = NULL; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_event_destroy (P3dcCudaEvent e) { (void) e; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_event_record (P3dcCudaEvent e, P3dcCudaStream s) { (void) e; (void) s; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_event_synchronize (P3dcCudaEvent e) { (void) e; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_event_query (P3dcCudaEvent e) { (void) e; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_event_elapsed_ms (float *ms, P3dcCudaEvent a, P3dcCudaEvent b) { (void) a; (void) b; *ms = 0.0f; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_stream_wait_event (P3dcCudaStream s, P3dcCudaEvent e) { (void) s; (void) e; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_memory_info (size_t *f, size_t *t) { *f = 0; *t = 0; return P3DC_ERROR_NO_CUDA; }
P3dcResult p3dc_cuda_last_error (void) { return P3DC_ERROR_NO_CUDA; }
/* *INDENT-ON* */
