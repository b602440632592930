// Pattern fill on the device; the reference is p3dtest-fill_cpu.c.
#include <cuda_runtime.h>

#include "p3dtest-fill.h"

namespace {

__global__ void fill_pattern_kernel(uint32_t *dst, size_t count,
                                    uint32_t seed) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += stride)
    dst[i] = p3d_fill_pattern_value(seed, i);
}

// Spins until the host writes a non-zero flag into mapped host memory, or
// for at most timeout_ns of the GPU's global timer.
__global__ void hold_kernel(const volatile uint32_t *flag,
                            unsigned long long timeout_ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (*flag == 0 && now - start < timeout_ns);
}

}  // namespace

struct P3dFillHold {
  volatile uint32_t *flag;  // mapped pinned host memory
  P3dcCudaStream stream;
};

extern "C" P3dcResult p3d_fill_pattern_cuda(uint32_t *dst, size_t count,
                                            uint32_t seed,
                                            P3dcCudaStream stream) {
  if (count == 0) return P3DC_OK;
  if (dst == nullptr) return P3DC_ERROR_INVALID_ARGUMENT;
  const unsigned threads = 256;
  size_t blocks = (count + threads - 1) / threads;
  if (blocks > 65535) blocks = 65535;
  fill_pattern_kernel<<<(unsigned)blocks, threads, 0, stream>>>(dst, count,
                                                                seed);
  return cudaGetLastError();
}

extern "C" P3dcResult p3d_fill_hold_cuda(P3dcCudaStream stream,
                                         P3dFillHold **hold) {
  if (hold == nullptr) return P3DC_ERROR_INVALID_ARGUMENT;
  *hold = nullptr;
  void *host = nullptr;
  cudaError_t err = cudaHostAlloc(&host, sizeof(uint32_t), cudaHostAllocMapped);
  if (err != cudaSuccess) return err;
  void *device = nullptr;
  err = cudaHostGetDevicePointer(&device, host, 0);
  if (err != cudaSuccess) {
    cudaFreeHost(host);
    return err;
  }
  *(volatile uint32_t *)host = 0;
  hold_kernel<<<1, 1, 0, stream>>>((const volatile uint32_t *)device,
                                   10ull * 1000 * 1000 * 1000);
  err = cudaGetLastError();
  if (err != cudaSuccess) {
    cudaFreeHost(host);
    return err;
  }
  *hold = new P3dFillHold{(volatile uint32_t *)host, stream};
  return P3DC_OK;
}

extern "C" void p3d_fill_hold_release(P3dFillHold *hold) {
  if (hold != nullptr) *hold->flag = 1;
}

extern "C" P3dcResult p3d_fill_hold_free(P3dFillHold *hold) {
  if (hold == nullptr) return P3DC_OK;
  p3d_fill_hold_release(hold);
  cudaError_t err = cudaStreamSynchronize(hold->stream);
  cudaError_t freed = cudaFreeHost((void *)hold->flag);
  delete hold;
  return err != cudaSuccess ? err : freed;
}
