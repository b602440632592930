/* Internal to the compute library: what result.c needs from the runtime. */
#ifndef P3DC_RUNTIME_PRIVATE_H
#define P3DC_RUNTIME_PRIVATE_H

#include "result.h"

/* The CUDA runtime's text for a positive (cudaError_t) result. */
const char *p3dc_runtime_error_string (P3dcResult result);

#endif /* P3DC_RUNTIME_PRIVATE_H */
