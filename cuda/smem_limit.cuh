// Dynamic shared memory beyond the default 48 KB, for kernels whose block
// size in shared memory depends on the call (bevpool's run and column
// kernels, nms's keep reduction and the merge of its sort by chunks).
#ifndef P3DC_SMEM_LIMIT_CUH
#define P3DC_SMEM_LIMIT_CUH

#include <cuda_runtime.h>
#include <stddef.h>

// The dynamic shared memory a block of @kernel can have on the current
// device, in *@room: the opt-in maximum less the kernel's static shared
// memory, since the driver refuses a dynamic size whose sum with the
// static one is more than the maximum (the H200's 227 KB; 163 KB on sm_80
// and sm_87, 99 KB on sm_86, sm_89 and sm_120, 64 KB on sm_75).
template <typename Kernel>
static inline cudaError_t p3dc_smem_room(Kernel kernel, size_t *room) {
  int device = 0, most = 0;
  cudaFuncAttributes attributes = {};
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                 device);
  if (err == cudaSuccess) err = cudaFuncGetAttributes(&attributes, kernel);
  if (err != cudaSuccess) return err;
  *room = (size_t)most > attributes.sharedSizeBytes
              ? (size_t)most - attributes.sharedSizeBytes
              : 0;
  return cudaSuccess;
}

// Lets @kernel take up to @wanted bytes of dynamic shared memory a block,
// or its room (above) where that is less, which it leaves in *@room (may
// be NULL).  Always the same value for the same @wanted, never one
// launch's size: the attribute belongs to the kernel, for every thread of
// the process on the device, so a smaller value set by another thread for
// another call could otherwise undercut a launch between its set and the
// launch itself.  Callers check
// that their blocks fit the room.
template <typename Kernel>
static inline cudaError_t p3dc_allow_smem(Kernel kernel, size_t wanted,
                                          size_t *room) {
  size_t most = 0;
  cudaError_t err = p3dc_smem_room(kernel, &most);
  if (err == cudaSuccess)
    err = cudaFuncSetAttribute(kernel,
                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                               (int)(wanted < most ? wanted : most));
  if (err == cudaSuccess && room != nullptr) *room = most;
  return err;
}

// Lets @kernel take as much dynamic shared memory a block as the current
// device allows it.
template <typename Kernel>
static inline cudaError_t p3dc_allow_largest_smem(Kernel kernel) {
  return p3dc_allow_smem(kernel, (size_t)-1, nullptr);
}

#endif  // P3DC_SMEM_LIMIT_CUH
