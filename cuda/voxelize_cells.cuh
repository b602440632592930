// Kernel 1 of 3: every point finds its cell entry and takes a slot in it.
//
// The slot is the point's place in its cell's segment of the counting sort;
// atomics hand slots out in no particular order, which is fine: the gather
// kernel orders each segment.  The entry's smallest point index (atomicMin)
// is what the scan numbers voxels by.  The lanes of a warp that fall in one
// cell share one pair of atomics (__match_any_sync): in the real frames a
// warp of 32 points touches 15 (KITTI) to 26 (nuScenes, CenterPoint's 3D
// grid) cells, against 17 to 31 runs of consecutive points, so this issues
// 10-30 % fewer global atomics than merging runs, and the hot cells near the
// sensor (up to 2086 points in one nuScenes pillar) serialize fewer of them.
#ifndef P3DC_VOXELIZE_CELLS_CUH
#define P3DC_VOXELIZE_CELLS_CUH

#include "voxelize_common.cuh"

namespace p3dc_voxelize {

constexpr int kCellsThreads = 256;

struct CellsArgs {
  P3dcVoxelizeParams params;
  const float *points;
  uint32_t n_points;
  CellTable table;
  uint2 *point_slots;  // [n_points] (entry, slot); entry kNone when dropped
  Counters *counters;
  TileState tile_state;  // the scan's, initialized here for num_tiles
  int num_tiles;
};

static __global__ __launch_bounds__(kCellsThreads) void cells_kernel(
    CellsArgs a) {
  // The scan's blocks may be scheduled now; they wait for this grid to end
  // (p3dc_wait_for_previous_kernel) before reading anything written here.
  p3dc_allow_next_kernel();
  // One thread per tile at least: the grid has n_points threads (one block
  // when there is no point) and a tile kScanTile >= 1 points.
  a.tile_state.InitializeStatus(a.num_tiles);

  const uint32_t i = blockIdx.x * kCellsThreads + threadIdx.x;
  const int lane = threadIdx.x & 31;
  if (i == 0) {
    a.counters->tile_counter = 0;
    a.counters->long_count = 0;
  }

  uint32_t cell = kNone;
  int nonfinite = 0;
  if (i < a.n_points) {
    const float *point = a.points + (size_t)i * a.params.channels;
    int kind = p3dc_voxelize_point_cell(&a.params, point[0], point[1], point[2],
                                        &cell);
    if (kind != P3DC_VOXELIZE_POINT_KEPT) {
      cell = kNone;
      nonfinite = kind == P3DC_VOXELIZE_POINT_NONFINITE;
    }
  }
  const unsigned nonfinite_lanes = __ballot_sync(kFullMask, nonfinite);
  if (lane == 0 && nonfinite_lanes != 0)
    atomicAdd(&a.counters->nonfinite, (uint32_t)__popc(nonfinite_lanes));

  // The lanes in one cell (dropped lanes form a group too, unused); the
  // group's lowest lane holds its smallest index and claims its slots.
  const unsigned group = __match_any_sync(kFullMask, cell);
  const int leader = __ffs(group) - 1;
  const bool kept = cell != kNone;
  uint32_t entry = kNone;
  uint32_t base = 0;
  if (kept && lane == leader) {
    entry = cell_entry(a.table, cell);
    base = atomicAdd(&a.table.entries[entry].count, (uint32_t)__popc(group));
    atomicMin(&a.table.entries[entry].first, i);
  }
  entry = __shfl_sync(kFullMask, entry, leader);
  base = __shfl_sync(kFullMask, base, leader);
  const unsigned below = (1u << lane) - 1u;
  const uint32_t slot = base + (uint32_t)__popc(group & below);
  if (i < a.n_points)
    a.point_slots[i] = kept ? make_uint2(entry, slot) : make_uint2(kNone, 0u);
}

}  // namespace p3dc_voxelize

#endif  // P3DC_VOXELIZE_CELLS_CUH
