// Dynamic shared memory beyond the default 48 KB, for kernels whose block
// size in shared memory depends on the call (bevpool's column and run
// kernels).
#ifndef P3DC_SMEM_LIMIT_CUH
#define P3DC_SMEM_LIMIT_CUH

#include <cuda_runtime.h>

// Lets @kernel take as much dynamic shared memory a block as the current
// device allows.  Always the device's largest, never one launch's size:
// the attribute belongs to the kernel, process-wide, so a smaller value set
// by another thread for another call could otherwise undercut a launch
// between its set and the launch itself.  Callers check first that their
// blocks fit.
template <typename Kernel>
static inline cudaError_t p3dc_allow_largest_smem(Kernel kernel) {
  int device = 0, most = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                 device);
  if (err == cudaSuccess)
    err = cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, most);
  return err;
}

#endif  // P3DC_SMEM_LIMIT_CUH
