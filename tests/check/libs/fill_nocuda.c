/* Builds without CUDA: the fill kernel's entry point, for the GPU tests that
 * link it and skip before calling it. */
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
