/* Builds without CUDA: the capture helper's entry point, for the GPU tests
 * that link it and skip before calling it. */
#include "p3dtest-capture.h"

P3dcResult
p3d_capture_and_launch (P3dcCudaStream stream, P3dCaptureQueue queue,
    void *user_data, size_t *nodes)
{
  (void) stream;
  (void) queue;
  (void) user_data;
  if (nodes)
    *nodes = 0;
  return P3DC_ERROR_NO_CUDA;
}

P3dcResult
p3d_call_beside_global_capture (P3dcCudaStream capturing,
    P3dCaptureQueue queue, void *user_data, P3dcCudaStream stream)
{
  (void) capturing;
  (void) queue;
  (void) user_data;
  (void) stream;
  return P3DC_ERROR_NO_CUDA;
}
