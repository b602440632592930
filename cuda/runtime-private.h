/* Internal to the compute library: what result.c needs from the runtime. */
#ifndef P3D_RUNTIME_PRIVATE_H
#define P3D_RUNTIME_PRIVATE_H

#include "result.h"

/* The CUDA runtime's text for a positive (cudaError_t) result. */
const char *p3d_runtime_error_string (P3dResult result);

#endif /* P3D_RUNTIME_PRIVATE_H */
