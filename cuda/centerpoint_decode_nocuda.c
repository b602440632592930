/* Builds without CUDA: the device entry points of centerpoint_decode, so
 * that callers link unchanged; a direct caller gets P3DC_ERROR_NO_CUDA. */
#include "centerpoint_decode.h"

P3dcResult
p3dc_centerpoint_decoder_new (const P3dcCenterPointParams * params,
    P3dcCenterPointDecoder ** decoder)
{
  (void) params;
  if (decoder != NULL)
    *decoder = NULL;
  return P3DC_ERROR_NO_CUDA;
}

void
p3dc_centerpoint_decoder_free (P3dcCenterPointDecoder * decoder)
{
  (void) decoder;
}

P3dcResult
p3dc_centerpoint_decode_cuda (P3dcCenterPointDecoder * decoder,
    const P3dcCenterPointTaskMaps * maps, const P3dcCenterPointOutput * out,
    P3dcCudaStream stream)
{
  (void) decoder;
  (void) maps;
  (void) out;
  (void) stream;
  return P3DC_ERROR_NO_CUDA;
}
