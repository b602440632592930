/* Builds without CUDA: the device entry points of every operation, so that
 * the elements link unchanged.  They are never reached in practice, since
 * p3d_cuda_device_count() is 0 and every element then takes its reference
 * path, but a direct caller gets a clear P3D_ERROR_NO_CUDA. */
#include "fill.h"

P3dResult
p3d_fill_pattern_cuda (uint32_t * dst, size_t count, uint32_t seed,
    P3dCudaStream stream)
{
  (void) dst;
  (void) count;
  (void) seed;
  (void) stream;
  return P3D_ERROR_NO_CUDA;
}
