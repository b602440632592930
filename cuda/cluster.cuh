// A kernel's thread-block cluster (sm_90 and later): the blocks of one
// cluster run at once on neighbouring multiprocessors, read each other's
// shared memory and meet at a hardware barrier that costs 0.2 to 0.5 us
// where a grid barrier costs 1.5 to 5 (docs/performance.md, "The floor of a
// call").  Code written with these functions runs as one block where there
// are no clusters: the device code of an earlier architecture, or a launch
// without cluster dimensions (a cluster of one block).
//
// The barrier is split: p3dc_cluster_arrive () releases what the thread
// wrote before it, and p3dc_cluster_wait () returns once every thread of
// every block of the cluster has arrived, acquiring what they released.
// Each thread arrives once, then waits once, in that order, every thread
// of a warp together.  Between the
// two a thread may work on its own block's memory but must not count on the
// other threads having arrived; the wait is also a barrier of the block.
#ifndef P3DC_CLUSTER_CUH
#define P3DC_CLUSTER_CUH

#include <cooperative_groups.h>
#include <stdint.h>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define P3DC_DEVICE_HAS_CLUSTERS 1
#else
#define P3DC_DEVICE_HAS_CLUSTERS 0
#endif

// A kernel attribute: launched in clusters of @blocks blocks (its grid a
// multiple of them).  Only device code for sm_90 and later takes it (the
// macro leaves it out of earlier architectures' code); the host's view of
// the kernel keeps it, and a caller launches such a kernel only on a device
// with clusters (cudaOccupancyMaxActiveClusters says whether one fits).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define P3DC_CLUSTER_DIMS(blocks) __cluster_dims__(blocks, 1, 1)
#else
#define P3DC_CLUSTER_DIMS(blocks)
#endif

// This block's rank in its cluster, and the cluster's blocks.
__device__ __forceinline__ uint32_t p3dc_cluster_rank() {
#if P3DC_DEVICE_HAS_CLUSTERS
  return cooperative_groups::this_cluster().block_rank();
#else
  return 0;
#endif
}

__device__ __forceinline__ uint32_t p3dc_cluster_blocks() {
#if P3DC_DEVICE_HAS_CLUSTERS
  return cooperative_groups::this_cluster().num_blocks();
#else
  return 1;
#endif
}

// The variable at @local in this block's shared memory, as block @rank of
// the cluster holds it.
template <typename T>
__device__ __forceinline__ T *p3dc_cluster_shared(T *local, uint32_t rank) {
#if P3DC_DEVICE_HAS_CLUSTERS
  return cooperative_groups::this_cluster().map_shared_rank(local, (int)rank);
#else
  (void)rank;
  return local;
#endif
}

// The .aligned forms ask every thread of the warp to execute the same
// barrier instruction together; a warp that left a loop of a different
// count on each thread need not have reconverged by then (independent
// thread scheduling), so each first meets its warp at __syncwarp ().
__device__ __forceinline__ void p3dc_cluster_arrive() {
#if P3DC_DEVICE_HAS_CLUSTERS
  __syncwarp();
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#endif
}

__device__ __forceinline__ void p3dc_cluster_wait() {
#if P3DC_DEVICE_HAS_CLUSTERS
  __syncwarp();
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#else
  __syncthreads();
#endif
}

#endif  // P3DC_CLUSTER_CUH
