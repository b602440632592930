// Programmatic dependent launch (compute capability 9.0 and later), shared
// by the kernels of voxelize.cu, nms.cu and the bevpool geometry (their
// launches go through kernel_graph.cuh, or p3dc_launch_node here).
//
// A kernel launched with p3dc_launch(..., dependent = true) may be scheduled
// while the kernel before it on the stream is still running, instead of
// after a full drain and a fresh launch (a few microseconds a boundary, a
// large part of a frame of small work).  Hence the rule every such kernel
// follows: p3dc_wait_for_previous_kernel() comes before its first access to
// anything the kernel before it writes; it returns once that kernel has
// completed and its writes are visible, exactly what plain stream order
// gives.  Without the launch attribute, or on devices before sm_90, both
// device calls do nothing and the launches are plain stream launches.
//
// And a second rule: what the kernels before it write, such a kernel reads
// through plain pointers (no const __restrict__ on them, nor on the
// pointers it writes, which would let the compiler prove the others
// read-only), and the first values it needs with p3dc_load_after_wait().
// The read-only path a const __restrict__ pointer allows is for data no
// kernel writes while this one runs, which is not so before the wait
// returns, and ptxas moves its loads above the wait: nms.cu's mask kernel
// read the box count before it, and so worked on the previous call's count
// (sm_90 SASS: LDG.E.CONSTANT before ACQBULK).  tests/pdl-loads-check.sh
// looks for such loads in the built library.
//
// Why a chain of such kernels cannot deadlock: a dependent grid is
// scheduled only once every block of the kernel before it has called
// p3dc_allow_next_kernel() or exited (driver_types.h, the programmatic
// port), so every block of that kernel already holds its resources; and a
// dependent block waits before it spins on anything, so it never holds up
// the kernel it depends on.
#ifndef P3DC_LAUNCH_CUH
#define P3DC_LAUNCH_CUH

#include <cuda_runtime.h>
#include <stdint.h>

// Blocks until the kernel before this one on the stream has completed and
// its memory operations are visible.
__device__ __forceinline__ void p3dc_wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
#endif
}

// A word the kernels before this one wrote, read after
// p3dc_wait_for_previous_kernel(): a strong load (ld.relaxed.gpu), in an
// asm statement kept in order with the wait's (libs/nms_cuda, whose calls
// change their counts from one to the next, passes with it).  Whether a
// weak load (__ldcg ()) always stays after the wait was not established.
__device__ __forceinline__ uint32_t p3dc_load_after_wait(const uint32_t *p) {
  uint32_t value;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];"
               : "=r"(value)
               : "l"(p)
               : "memory");
  return value;
}

// Lets the next kernel's blocks be scheduled once every block of this one
// has called it (or exited); they then wait in p3dc_wait_for_previous_kernel.
// Called early: all of a kernel's blocks are resident by then, so the early
// blocks of the next one take no room this one still needs.
__device__ __forceinline__ void p3dc_allow_next_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}

// Whether the current device takes programmatic dependent launches.
static inline cudaError_t p3dc_launch_dependent_supported(bool *supported) {
  int device = 0, major = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                                 device);
  *supported = err == cudaSuccess && major >= 9;
  return err;
}

// A launch's configuration on @stream; with @dependent, a programmatic
// dependent of the kernel before it (see the top of this file), its
// attribute kept in @attribute.
static inline cudaLaunchConfig_t p3dc_launch_config(
    dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
    bool dependent, cudaLaunchAttribute *attribute) {
  attribute->id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute->val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = dependent ? attribute : nullptr;
  config.numAttrs = dependent ? 1 : 0;
  return config;
}

// Launches @kernel on @stream, with @dependent as a programmatic dependent
// of the kernel before it; returns the launch's error, or the one the
// launch left behind.
template <typename... Params, typename... Args>
static cudaError_t p3dc_launch(void (*kernel)(Params...), dim3 grid, dim3 block,
                               size_t shared_bytes, cudaStream_t stream,
                               bool dependent, Args... args) {
  cudaLaunchAttribute attribute;
  const cudaLaunchConfig_t config = p3dc_launch_config(
      grid, block, shared_bytes, stream, dependent, &attribute);
  cudaError_t err = cudaLaunchKernelEx(&config, kernel, args...);
  return err != cudaSuccess ? err : cudaGetLastError();
}

// Launches the kernel @node describes (as a graph's kernel node would run
// it) on @stream, with @dependent as above.
static inline cudaError_t p3dc_launch_node(const cudaKernelNodeParams *node,
                                           cudaStream_t stream,
                                           bool dependent) {
  cudaLaunchAttribute attribute;
  const cudaLaunchConfig_t config =
      p3dc_launch_config(node->gridDim, node->blockDim, node->sharedMemBytes,
                         stream, dependent, &attribute);
  cudaError_t err =
      cudaLaunchKernelExC(&config, node->func, node->kernelParams);
  return err != cudaSuccess ? err : cudaGetLastError();
}

#endif  // P3DC_LAUNCH_CUH
