/* Builds without CUDA: the device entry points of anchor3d_decode, so that
 * callers link unchanged; a direct caller gets P3DC_ERROR_NO_CUDA. */
#include "anchor3d_decode.h"

P3dcResult
p3dc_anchor3d_decoder_new (const P3dcAnchor3dParams * params,
    const P3dcAnchor3dTable * table, P3dcAnchor3dDecoder ** decoder)
{
  (void) params;
  (void) table;
  if (decoder != NULL)
    *decoder = NULL;
  return P3DC_ERROR_NO_CUDA;
}

void
p3dc_anchor3d_decoder_free (P3dcAnchor3dDecoder * decoder)
{
  (void) decoder;
}

P3dcResult
p3dc_anchor3d_decode_cuda (P3dcAnchor3dDecoder * decoder,
    const P3dcAnchor3dMaps * maps, const P3dcAnchor3dOutput * out,
    P3dcCudaStream stream)
{
  (void) decoder;
  (void) maps;
  (void) out;
  (void) stream;
  return P3DC_ERROR_NO_CUDA;
}
