/* Builds without CUDA: the device pack of camfeatures, so that callers
 * link unchanged; a direct caller gets P3DC_ERROR_NO_CUDA. */
#include "camfeatures.h"

P3dcResult
p3dc_camfeatures_pack_cuda (const P3dcCamFeaturesPack * pack,
    const P3dcMapView * view, void *out, P3dcCudaStream stream)
{
  (void) pack;
  (void) view;
  (void) out;
  (void) stream;
  return P3DC_ERROR_NO_CUDA;
}
