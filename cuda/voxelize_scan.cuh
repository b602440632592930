// Kernel 2 of 3: numbers voxels by first appearance and scatters every
// point into its cell's segment.
//
// A single-pass scan (CUB's block scan with decoupled look-back over tile
// states) of one value per point: (1 << 32 | cell count) at the first point
// of a cell, 0 elsewhere.  At a first point the exclusive prefix is the
// voxel's number (high word) and its segment's offset (low word); the point
// publishes the offset in the cell entry, and the cell's other points, all
// later in the input, read it there.  Tiles are handed out in order through
// an atomic counter, so a tile only ever waits for tiles of lower tickets
// (look-back, published offsets), and a block that holds a ticket is
// running: the waits cannot deadlock.  A voxel of one point is not
// scattered at all (its info carries the point's index), and voxels of more
// than kSoloPoints points are appended to the long-voxel list that the
// gather's warps take one at a time.
#ifndef P3DC_VOXELIZE_SCAN_CUH
#define P3DC_VOXELIZE_SCAN_CUH

#include <cuda/atomic>

#include "voxelize_common.cuh"

namespace p3dc_voxelize {

// One point per thread, 256-point tiles: a tile's time is its own serial
// work (the scan, then waiting for the offsets its cells' first points
// publish), not the look-back across tiles, so small tiles win (the sizes
// measured are in docs/performance.md).
constexpr int kScanThreads = 256;
constexpr int kScanItems = 1;
constexpr int kScanTile = kScanThreads * kScanItems;

struct ScanArgs {
  uint32_t n_points;
  uint32_t max_voxels;
  int output_clean;
  CellTable table;
  const uint2 *point_slots;  // from cells_kernel
  uint32_t *sorted;          // [n_points] point indices, grouped by cell
  VoxelInfo *voxel_info;     // [n_points] per voxel, first-appearance order
  uint32_t *long_voxels;     // [n_points] voxels for the gather's warp path
  Counters *counters;
  TileState tile_state;
  uint32_t *count;           // out->count
  P3dcVoxelizeStats *stats;  // out->stats, may be null
};

using BlockScan =
    cub::BlockScan<ScanValue, kScanThreads, cub::BLOCK_SCAN_WARP_SCANS>;
using TilePrefix = P3dcTilePrefix<ScanValue, ScanSum>;

// The frame's totals, written once by one thread after the counts are known
// (the last point's thread, or thread 0 of tile 0 in a frame of no point).  The
// gather kernel adds the two over_max counters to the zeros written here.
static __device__ void finish_frame(uint32_t n_points, uint32_t in_range,
                                    uint32_t total_voxels, uint32_t max_voxels,
                                    int output_clean, uint32_t *count,
                                    P3dcVoxelizeStats *stats,
                                    Counters *counters) {
  const uint32_t kept = min(total_voxels, max_voxels);
  // A clean output's rows up to its previous count must be cleared where
  // this frame does not overwrite them; the count is clamped in case the
  // tensor was not what the caller said it was.
  const uint32_t previous = output_clean ? min(*count, max_voxels) : 0u;
  const uint32_t nonfinite = counters->nonfinite;
  counters->nonfinite = 0;
  counters->total_voxels = total_voxels;
  counters->prev_count = previous;
  *count = kept;
  if (stats != nullptr) {
    stats->points_in = n_points;
    stats->points_nonfinite = nonfinite;
    stats->points_out_of_range = n_points - nonfinite - in_range;
    stats->points_over_max_points = 0;
    stats->points_over_max_voxels = 0;
    stats->voxels = kept;
    stats->voxels_dropped = total_voxels - kept;
  }
}

static __device__ __forceinline__ uint32_t wait_for_offset(uint32_t *offset) {
  cuda::atomic_ref<uint32_t, cuda::thread_scope_device> published(*offset);
  uint32_t value = published.load(cuda::memory_order_relaxed);
  while (value == kNone) {
    __nanosleep(64);
    value = published.load(cuda::memory_order_relaxed);
  }
  return value;
}

static __global__ __launch_bounds__(kScanThreads) void scan_kernel(ScanArgs a) {
  __shared__ struct {
    typename TilePrefix::TempStorage prefix;
    typename BlockScan::TempStorage scan;
  } temp;
  __shared__ uint32_t tile_shared;

  p3dc_wait_for_previous_kernel();
  p3dc_allow_next_kernel();
  if (threadIdx.x == 0) tile_shared = atomicAdd(&a.counters->tile_counter, 1u);
  __syncthreads();
  const uint32_t tile = tile_shared;
  const uint32_t base = tile * kScanTile + threadIdx.x * kScanItems;

  uint2 slots[kScanItems];
  ScanValue own[kScanItems];
  ScanValue before[kScanItems];
#pragma unroll
  for (int k = 0; k < kScanItems; k++) {
    const uint32_t i = base + k;
    slots[k] = i < a.n_points ? a.point_slots[i] : make_uint2(kNone, 0u);
  }
#pragma unroll
  for (int k = 0; k < kScanItems; k++) {
    own[k] = 0;
    if (slots[k].x != kNone) {
      // count and first only: the offset beside them changes in this kernel.
      const uint2 count_first =
          *reinterpret_cast<const uint2 *>(&a.table.entries[slots[k].x]);
      if (count_first.y == base + k)
        own[k] = (ScanValue(1) << 32) | count_first.x;
    }
  }

  if (tile == 0) {
    ScanValue aggregate;
    BlockScan(temp.scan).ExclusiveScan(own, before, ScanValue(0), ScanSum(),
                                       aggregate);
    if (threadIdx.x == 0) a.tile_state.SetInclusive(0, aggregate);
  } else {
    TilePrefix prefix(a.tile_state, temp.prefix, ScanSum(), (int)tile);
    BlockScan(temp.scan).ExclusiveScan(own, before, ScanSum(), prefix);
  }

  // First points: describe the voxel, publish the segment, place the point.
  // A voxel of one point has no other point waiting for its offset and
  // needs no segment: its info carries the point's index instead.
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int k = 0; k < kScanItems; k++) {
    const uint32_t count = (uint32_t)own[k];
    const uint32_t voxel = (uint32_t)(before[k] >> 32);
    if (own[k] != 0) {
      const uint32_t offset = (uint32_t)before[k];
      const uint32_t entry = slots[k].x;
      VoxelInfo info;
      info.cell = a.table.hash_bits == 0 ? entry : a.table.entries[entry].key;
      info.entry = entry;
      info.count = count;
      info.offset = count == 1 ? base + k : offset;
      a.voxel_info[voxel] = info;
      if (count > 1) {
        cuda::atomic_ref<uint32_t, cuda::thread_scope_device> published(
            a.table.entries[entry].offset);
        published.store(offset, cuda::memory_order_relaxed);
        a.sorted[offset + slots[k].y] = base + k;
      }
    }
    // Voxels too large for one lane, and with an output row, are listed for
    // the gather's warps: one atomic per warp (the list's order does not
    // matter, each entry names its voxel).  Every thread of the block runs
    // this loop, so the warp-wide ballot is complete.
    const bool listed =
        own[k] != 0 && count > kSoloPoints && voxel < a.max_voxels;
    const unsigned listing = __ballot_sync(kFullMask, listed);
    if (listing != 0) {
      const int leader = __ffs(listing) - 1;
      uint32_t at = 0;
      if (lane == leader)
        at = atomicAdd(&a.counters->long_count, (uint32_t)__popc(listing));
      at = __shfl_sync(kFullMask, at, leader);
      if (listed)
        a.long_voxels[at + __popc(listing & ((1u << lane) - 1u))] = voxel;
    }
  }
  // Offsets published in this tile are now visible to the whole block.
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kScanItems; k++) {
    if (slots[k].x == kNone || own[k] != 0) continue;
    const uint32_t offset =
        wait_for_offset(&a.table.entries[slots[k].x].offset);
    a.sorted[offset + slots[k].y] = base + k;
  }

  // A frame of no point runs one tile of no item, so that every frame is
  // the same three kernels.
  if (a.n_points == 0 && base == 0)
    finish_frame(0, 0, 0, a.max_voxels, a.output_clean, a.count, a.stats,
                 a.counters);
#pragma unroll
  for (int k = 0; k < kScanItems; k++) {
    if (base + k == a.n_points - 1) {
      const ScanValue totals = before[k] + own[k];
      finish_frame(a.n_points, (uint32_t)totals, (uint32_t)(totals >> 32),
                   a.max_voxels, a.output_clean, a.count, a.stats, a.counters);
    }
  }
}

}  // namespace p3dc_voxelize

#endif  // P3DC_VOXELIZE_SCAN_CUH
