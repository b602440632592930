/* pillarencode internals shared by the reference and the CUDA path (not
 * installed). */
#ifndef P3DC_PILLARENCODE_PRIVATE_H
#define P3DC_PILLARENCODE_PRIVATE_H

#include "pillarencode.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Nonzero when every weight and bias is finite: both paths refuse others,
 * so that the kernel may take a zero row's output as ReLU (bias) without
 * computing 0 * weight (which a non-finite weight would make NaN). */
/* The length a slot's row of features is padded to in the CUDA kernel
 * (its row in shared memory and the weights it holds in registers, padded
 * with zeros): 4, 8, 12 or 16, then 24 or 32, then 48 or 64; 0 above
 * P3DC_PILLARENCODE_MAX_IN_CHANNELS.  Few lengths keep few instances of the
 * kernel; the padding costs at most a third more FMAs, and 11 channels
 * take 12. */
static inline uint32_t
p3dc_pillarencode_padded_in (uint32_t in_channels)
{
  if (in_channels <= 16)
    return (in_channels + 3) & ~3u;
  if (in_channels <= 32)
    return (in_channels + 7) & ~7u;
  if (in_channels <= P3DC_PILLARENCODE_MAX_IN_CHANNELS)
    return (in_channels + 15) & ~15u;
  return 0;
}

int p3dc_pillarencode_weights_finite (const P3dcPillarEncodeParams * params,
    const float *weight, const float *bias);

#ifdef __cplusplus
}
#endif

#endif /* P3DC_PILLARENCODE_PRIVATE_H */
