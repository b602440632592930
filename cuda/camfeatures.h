/* camfeatures: the outputs of a camera encoder's image network into the
 * tensors of application/x-camera-features (docs/media-types.md).
 *
 * The network leaves each output as a channel slice of one of its buffers
 * (convnet.h: F32 [N][C][H][W] on the reference path, F16 [N][H][W][C8]
 * with padded channels or F32 NCHW on the device), read through a
 * P3dcMapView; the media type wants the context features channels last,
 * [N][H][W][C], and the depth distribution channels first, [N][D][H][W],
 * F32 or F16.  A pack copies one slice into one such tensor, converting the
 * element type: F16 values stay bit for bit, F32 values become F16 rounded
 * to nearest even (p3dc_float_to_half(), as __float2half_rn), F16 values
 * become F32 exactly.  Both paths give the same bytes for the same view.
 */
#ifndef P3DC_CAMFEATURES_H
#define P3DC_CAMFEATURES_H

#include <stddef.h>
#include <stdint.h>

#include "convnet.h"
#include "result.h"
#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct
{
  uint32_t batch, channels, height, width;
  int channels_last;            /* [N][H][W][C], else [N][C][H][W] */
  int half_out;                 /* F16, else F32 */
} P3dcCamFeaturesPack;

/* The pack of @view (host memory) into @out (host memory). */
P3dcResult p3dc_camfeatures_pack_cpu (const P3dcCamFeaturesPack * pack,
    const P3dcMapView * view, void *out);

/* The same on the device, queued on @stream. */
P3dcResult p3dc_camfeatures_pack_cuda (const P3dcCamFeaturesPack * pack,
    const P3dcMapView * view, void *out, P3dcCudaStream stream);

#ifdef __cplusplus
}
#endif

#endif /* P3DC_CAMFEATURES_H */
