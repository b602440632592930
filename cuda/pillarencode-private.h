/* pillarencode internals shared by the reference and the CUDA path (not
 * installed). */
#ifndef P3D_PILLARENCODE_PRIVATE_H
#define P3D_PILLARENCODE_PRIVATE_H

#include "pillarencode.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Nonzero when every weight and bias is finite: both paths refuse others,
 * so that the kernel may take a zero row's output as ReLU (bias) without
 * computing 0 * weight (which a non-finite weight would make NaN). */
int p3d_pillarencode_weights_finite (const P3dPillarEncodeParams * params,
    const float *weight, const float *bias);

#ifdef __cplusplus
}
#endif

#endif /* P3D_PILLARENCODE_PRIVATE_H */
