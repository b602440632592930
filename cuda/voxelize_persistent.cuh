// The frame's three phases in one kernel, for the benchmark's comparison
// with the graph of three kernels (voxelize.cu): cells, scan and gather run
// one after the other in every block of a grid that is resident on the
// device all at once, separated by two grid barriers instead of two kernel
// boundaries.  The phases are the kernels' own code (cells_point,
// scan_tile, gather_frame), so the output is the same bit for bit.
//
// Why nothing can hang:
//   - the kernel is a cooperative launch (cudaLaunchAttributeCooperative)
//     of at most the blocks the device holds at once (occupancy times
//     multiprocessors, voxelize.cu): the launch fails rather than starts a
//     grid whose blocks are not all resident, so every block reaches every
//     barrier;
//   - in the scan phase a block takes tiles by ticket, in order, and
//     finishes a tile before it takes the next one; a tile waits only for
//     tiles of lower tickets (look-back, published offsets), which blocks
//     that are running hold: by induction on the ticket every tile ends.
#ifndef P3DC_VOXELIZE_PERSISTENT_CUH
#define P3DC_VOXELIZE_PERSISTENT_CUH

#include <cuda/atomic>

#include "voxelize_cells.cuh"
#include "voxelize_gather.cuh"
#include "voxelize_scan.cuh"

namespace p3dc_voxelize {

// The gather's block (kGatherMaxWarps warps): the persistent design is
// offered only when the gather takes blocks of that size.
constexpr int kPersistentThreads = kGatherMaxWarps * 32;
constexpr int kPersistentTile = kPersistentThreads * kScanItems;

struct PersistentArgs {
  CellsArgs cells;  // num_tiles counts tiles of kPersistentTile points
  ScanArgs scan;
  GatherArgs gather;
};

// Every block of the grid waits here until all have arrived, and what any
// of them wrote before is then visible to all.  Block 0 adds 2^31 - (blocks
// - 1), the others 1: the sum of a round is 2^31, so the counter's top bit
// flips exactly when the last block arrives and its low bits return to 0
// (the counter never needs a reset between barriers or frames).
static __device__ __forceinline__ void grid_barrier(uint32_t *counter) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const uint32_t add = blockIdx.x == 0 ? 0x80000000u - (gridDim.x - 1u) : 1u;
    cuda::atomic_ref<uint32_t, cuda::thread_scope_device> arrived(*counter);
    const uint32_t before = arrived.fetch_add(add, cuda::memory_order_acq_rel);
    while (((before ^ arrived.load(cuda::memory_order_acquire)) &
            0x80000000u) == 0)
      __nanosleep(32);
  }
  __syncthreads();
}

template <int kChannels>
static __global__ __launch_bounds__(kPersistentThreads) void persistent_kernel(
    PersistentArgs a) {
  __shared__ typename ScanBlock<kPersistentThreads>::TempStorage temp;
  __shared__ uint32_t tile_shared;
  const int lane = threadIdx.x & 31;

  // Cells: the host makes the grid's threads at least the tiles.
  cells_reset(a.cells);
  // Whole blocks loop the same number of times: every warp's lanes are all
  // in cells_point's ballots.
  const uint32_t stride = gridDim.x * kPersistentThreads;
  for (uint32_t first = blockIdx.x * kPersistentThreads;
       first < a.cells.n_points; first += stride)
    cells_point(a.cells, first + threadIdx.x, lane);
  grid_barrier(&a.cells.counters->barrier);

  // Scan: tiles by ticket until none is left.
  const uint32_t tiles = (uint32_t)a.cells.num_tiles;
  for (;;) {
    if (threadIdx.x == 0)
      tile_shared = atomicAdd(&a.scan.counters->tile_counter, 1u);
    __syncthreads();
    const uint32_t tile = tile_shared;
    if (tile >= tiles) break;
    scan_tile<kPersistentThreads>(a.scan, tile, temp);
    // temp and tile_shared are free for the next tile.
    __syncthreads();
  }
  grid_barrier(&a.scan.counters->barrier);

  gather_frame<kChannels>(a.gather);
}

}  // namespace p3dc_voxelize

#endif  // P3DC_VOXELIZE_PERSISTENT_CUH
