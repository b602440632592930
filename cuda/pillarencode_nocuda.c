/* Builds without CUDA: the device entry points of pillarencode, so that
 * callers link unchanged; a direct caller gets P3DC_ERROR_NO_CUDA. */
#include "pillarencode.h"

P3dcResult
p3dc_pillarencoder_new (const P3dcPillarEncodeParams * params,
    const float *weight, const float *bias, P3dcPillarEncoder ** encoder)
{
  (void) params;
  (void) weight;
  (void) bias;
  if (encoder != NULL)
    *encoder = NULL;
  return P3DC_ERROR_NO_CUDA;
}

void
p3dc_pillarencoder_free (P3dcPillarEncoder * encoder)
{
  (void) encoder;
}

P3dcResult
p3dc_pillarencode_cuda (P3dcPillarEncoder * encoder,
    const P3dcPillarEncodeInput * in, void *canvas, uint32_t * dropped,
    P3dcCudaStream stream)
{
  (void) encoder;
  (void) in;
  (void) canvas;
  (void) dropped;
  (void) stream;
  return P3DC_ERROR_NO_CUDA;
}
