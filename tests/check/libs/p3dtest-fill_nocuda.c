/* Builds without CUDA: the fill kernel's entry point, for the GPU tests that
 * link it and skip before calling it. */
#include "p3dtest-fill.h"

P3dcResult
p3d_fill_pattern_cuda (uint32_t * dst, size_t count, uint32_t seed,
    P3dcCudaStream stream)
{
  (void) dst;
  (void) count;
  (void) seed;
  (void) stream;
  return P3DC_ERROR_NO_CUDA;
}

P3dcResult
p3d_fill_hold_cuda (P3dcCudaStream stream, P3dFillHold ** hold)
{
  (void) stream;
  if (hold)
    *hold = NULL;
  return P3DC_ERROR_NO_CUDA;
}

void
p3d_fill_hold_release (P3dFillHold * hold)
{
  (void) hold;
}

P3dcResult
p3d_fill_hold_free (P3dFillHold * hold)
{
  (void) hold;
  return P3DC_OK;
}
