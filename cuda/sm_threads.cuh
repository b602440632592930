// The threads one SM holds, for the architecture being compiled: what
// caps the blocks an SM that a kernel's launch bounds may ask room for
// (bevpool.cu, pillarfeat.cu, nms_mask.cuh).  2048 on sm_80, sm_90 and
// sm_100; 1536 on sm_86 to sm_89 and sm_120, and on any other sm_80 or
// later (the fewest of those); 1024 on sm_75.  The host pass, where the
// bounds are not used, takes 2048.
#ifndef P3DC_SM_THREADS_CUH
#define P3DC_SM_THREADS_CUH

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ == 800 || __CUDA_ARCH__ == 900 || \
    __CUDA_ARCH__ == 1000
constexpr unsigned kP3dcSmThreads = 2048;
#elif __CUDA_ARCH__ >= 800
constexpr unsigned kP3dcSmThreads = 1536;
#else
constexpr unsigned kP3dcSmThreads = 1024;
#endif

// @wanted blocks of @threads threads an SM, or as many as the SM holds.
__host__ __device__ constexpr int p3dc_blocks_an_sm(unsigned wanted,
                                                    unsigned threads) {
  return (int)(wanted < kP3dcSmThreads / threads ? wanted
                                                 : kP3dcSmThreads / threads);
}

#endif  // P3DC_SM_THREADS_CUH
