/* Builds without CUDA: the device entry points of pillarencode, so that
 * callers link unchanged; a direct caller gets P3D_ERROR_NO_CUDA. */
#include "pillarencode.h"

P3dResult
p3d_pillarencoder_new (const P3dPillarEncodeParams * params,
    const float *weight, const float *bias, P3dPillarEncoder ** encoder)
{
  (void) params;
  (void) weight;
  (void) bias;
  if (encoder != NULL)
    *encoder = NULL;
  return P3D_ERROR_NO_CUDA;
}

void
p3d_pillarencoder_free (P3dPillarEncoder * encoder)
{
  (void) encoder;
}

P3dResult
p3d_pillarencode_cuda (P3dPillarEncoder * encoder,
    const P3dPillarEncodeInput * in, void *canvas, uint32_t * dropped,
    P3dCudaStream stream)
{
  (void) encoder;
  (void) in;
  (void) canvas;
  (void) dropped;
  (void) stream;
  return P3D_ERROR_NO_CUDA;
}
