// What the kernels of nms.cu share: the 64-box tiles of the suppression
// mask, the chaining of one kernel to the next (programmatic dependent
// launch), and the zeroing of the output.
#ifndef P3D_NMS_COMMON_CUH
#define P3D_NMS_COMMON_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

namespace p3d_nms {

// Boxes per mask word: bit k of mask[i * words + c] is set when sorted box i
// suppresses sorted box c * 64 + k.
constexpr uint32_t kTile = 64;
constexpr unsigned kFullWarp = 0xffffffffu;

// Tile number @linear of the upper triangle, walked column by column:
// linear = col * (col + 1) / 2 + row, row <= col.  The float square root
// only guesses; the two loops make the answer exact.
__device__ __forceinline__ void triangle_tile(uint32_t linear, uint32_t *row,
                                              uint32_t *col) {
  uint32_t c = (uint32_t)((sqrtf(8.0f * (float)linear + 1.0f) - 1.0f) * 0.5f);
  while (c > 0 && c * (c + 1) / 2 > linear) c--;
  while ((c + 1) * (c + 2) / 2 <= linear) c++;
  *col = c;
  *row = linear - c * (c + 1) / 2;
}

// The bits of tile t that are boxes (the last tile may be partial).
__device__ __forceinline__ unsigned long long tile_boxes(uint32_t m,
                                                         uint32_t t) {
  const uint32_t in_tile = m - t * kTile;
  return in_tile >= kTile ? ~0ull : (1ull << in_tile) - 1;
}

// Programmatic dependent launch (sm_90).  nms.cu launches every kernel but
// the first of a call with the programmatic-serialization attribute, so the
// GPU may start it while the kernel before it is still running instead of
// after a full drain and launch (a few microseconds a boundary, which at 500
// boxes is a large part of the whole).  Hence the rule every kernel here
// follows: wait_for_previous_kernel() comes before its first access to
// global memory, read or write; it returns once the previous kernel has
// completed and its writes are visible, exactly what plain stream order
// gives.  Without the attribute, or before sm_90, it returns at once.
__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next kernel's blocks be scheduled once every block of this one
// has called it (or exited); they then wait in wait_for_previous_kernel().
// Called at the top of each kernel: all of a kernel's blocks are resident by
// then, so the early blocks of the next one take no room this one needs.
__device__ __forceinline__ void allow_next_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// The output beyond the kept boxes: records zeroed, kept_index -1 (nms.h).
// The mask kernels, which run on the whole GPU, write it over the whole
// output capacity before the one-block reduction writes the kept records
// over the first ones; at 20000 boxes that is 720 KB the reduction's single
// block no longer stores.
struct OutputFill {
  uint32_t *out;
  size_t words;  // out_capacity * words per record
  int32_t *kept_index;
  uint32_t capacity;
};

__device__ __forceinline__ void fill_output(const OutputFill &fill) {
  const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t w = first; w < fill.words; w += stride) fill.out[w] = 0;
  if (fill.kept_index != nullptr) {
    for (size_t p = first; p < fill.capacity; p += stride)
      fill.kept_index[p] = -1;
  }
}

}  // namespace p3d_nms

#endif  // P3D_NMS_COMMON_CUH
