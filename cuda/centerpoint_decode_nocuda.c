/* Builds without CUDA: the device entry points of centerpoint_decode, so
 * that callers link unchanged; a direct caller gets P3D_ERROR_NO_CUDA. */
#include "centerpoint_decode.h"

P3dResult
p3d_centerpoint_decoder_new (const P3dCenterPointParams * params,
    P3dCenterPointDecoder ** decoder)
{
  (void) params;
  if (decoder != NULL)
    *decoder = NULL;
  return P3D_ERROR_NO_CUDA;
}

void
p3d_centerpoint_decoder_free (P3dCenterPointDecoder * decoder)
{
  (void) decoder;
}

P3dResult
p3d_centerpoint_decode_cuda (P3dCenterPointDecoder * decoder,
    const P3dCenterPointTaskMaps * maps, const P3dCenterPointOutput * out,
    P3dCudaStream stream)
{
  (void) decoder;
  (void) maps;
  (void) out;
  (void) stream;
  return P3D_ERROR_NO_CUDA;
}
