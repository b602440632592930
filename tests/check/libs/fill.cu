// Pattern fill on the device; the reference is fill_cpu.c.
#include <cuda_runtime.h>

#include "fill.h"

namespace {

__global__ void fill_pattern_kernel(uint32_t *dst, size_t count,
                                    uint32_t seed) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += stride)
    dst[i] = p3d_fill_pattern_value(seed, i);
}

}  // namespace

extern "C" P3dResult p3d_fill_pattern_cuda(uint32_t *dst, size_t count,
                                           uint32_t seed,
                                           P3dCudaStream stream) {
  if (count == 0) return P3D_OK;
  if (dst == nullptr) return P3D_ERROR_INVALID_ARGUMENT;
  const unsigned threads = 256;
  size_t blocks = (count + threads - 1) / threads;
  if (blocks > 65535) blocks = 65535;
  fill_pattern_kernel<<<(unsigned)blocks, threads, 0, stream>>>(dst, count,
                                                                seed);
  return cudaGetLastError();
}
