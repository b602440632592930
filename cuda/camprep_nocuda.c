/* Builds without CUDA: the device entry points of camprep, so that callers
 * link unchanged; a direct caller gets P3DC_ERROR_NO_CUDA. */
#include "camprep.h"

P3dcResult
p3dc_camprep_cuda_new (const P3dcCamPrepPlan * const *plans,
    uint32_t n_cameras, const P3dcCamPrepNorm * norm, P3dcCamPrepCuda ** prep)
{
  (void) plans;
  (void) n_cameras;
  (void) norm;
  if (prep != NULL)
    *prep = NULL;
  return P3DC_ERROR_NO_CUDA;
}

void
p3dc_camprep_cuda_free (P3dcCamPrepCuda * prep)
{
  (void) prep;
}

P3dcResult
p3dc_camprep_cuda_run (P3dcCamPrepCuda * prep, const P3dcCamPrepFrame * frames,
    void *out, int half_out, P3dcCudaStream stream)
{
  (void) prep;
  (void) frames;
  (void) out;
  (void) half_out;
  (void) stream;
  return P3DC_ERROR_NO_CUDA;
}
