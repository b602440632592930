// What the three voxelize kernels share: the workspace layout and the cell
// table (a dense grid or a hash table of the same entries).
//
// One frame is three kernels, and leaves the workspace as it found it:
//   cells   (voxelize_cells.cuh): per point, its cell entry and a slot in
//           that cell (atomics, one pair per cell and warp); resets the
//           scan's tile states and counters.
//   scan    (voxelize_scan.cuh): a single-pass scan over the points numbers
//           voxels by first appearance and gives each cell its segment of a
//           counting sort; points are scattered into their segments, and
//           voxels of more than kSoloPoints points are listed for the warp
//           path of the gather.
//   gather  (voxelize_gather.cuh): per voxel, the smallest max_points point
//           indices of its segment, in order; writes the output rows (and
//           the zeros the output needs) and resets the cell entries it used.
//
// The frame is one graph (voxelize.cu) whose scan and gather nodes are
// programmatic dependents of the node before them (launch.cuh), so they may
// be scheduled before it ends.
// Why this cannot deadlock, beyond what launch.cuh says: inside the scan, a
// block spins only on tiles of lower tickets (look-back, published
// offsets), and a ticket is taken by a block that is running; see
// voxelize_scan.cuh.  The cells and gather kernels never wait for another
// block.
#ifndef P3DC_VOXELIZE_COMMON_CUH
#define P3DC_VOXELIZE_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include <cub/block/block_scan.cuh>

#include "launch.cuh"
#include "single_pass_scan.cuh"
#include "voxelize.h"

namespace p3dc_voxelize {

// No cell, no segment offset yet, an empty hash slot, a padding index.
constexpr uint32_t kNone = 0xffffffffu;
constexpr unsigned kFullMask = 0xffffffffu;

// Voxels of up to this many points are gathered by one lane of the gather;
// larger ones are listed by the scan and gathered by a whole warp.
constexpr uint32_t kSoloPoints = 8;

// One cell of the dense grid, or one slot of the hash table.  Between frames
// every entry is in its reset state {0, kNone, kNone, kNone}.
struct alignas(16) CellEntry {
  uint32_t count;   // points of this frame in the cell
  uint32_t first;   // the smallest of their indices
  uint32_t key;     // hash table: the linear cell index; dense grid: unused
  uint32_t offset;  // its segment in the sorted point list, kNone until known
};

// One voxel in first-appearance order, numbered over all voxels of the frame
// (kept or beyond max_voxels).
struct alignas(16) VoxelInfo {
  uint32_t cell;   // linear cell index
  uint32_t entry;  // its entry in the cell table
  uint32_t count;  // its points
  // count 1: the point's index itself (such a voxel is not scattered);
  // otherwise its segment in the sorted point list.
  uint32_t offset;
};

// Small device state carried from one kernel to the next.
struct Counters {
  uint32_t tile_counter;  // scan tiles handed out (reset by the cells kernel)
  uint32_t nonfinite;     // points with a non-finite x, y or z (reset by scan)
  uint32_t total_voxels;  // non-empty cells this frame (set by scan)
  uint32_t prev_count;    // voxel rows of the previous output still to clear
  uint32_t long_count;    // entries of the long-voxel list (reset by cells)
};

// The scan value of a point: (1 << 32 | points in its cell) for the first
// point of a cell, 0 otherwise; its prefix sum numbers the voxel (high word)
// and places its segment (low word).  Neither word can carry into the other
// with at most 2^31 points.
using ScanValue = unsigned long long;
using TileState = P3dcScanTileState<ScanValue>;

struct ScanSum {
  __device__ __forceinline__ ScanValue operator()(ScanValue a,
                                                  ScanValue b) const {
    return a + b;
  }
};

struct CellTable {
  CellEntry *entries;
  uint32_t hash_bits;  // 0: dense grid indexed by the cell; else 2^bits slots
};

__device__ __forceinline__ uint32_t hash_home(uint32_t cell, uint32_t bits) {
  // Fibonacci hashing spreads neighbouring cells over the table.
  return (cell * 2654435761u) >> (32 - bits);
}

// The entry of @cell, claimed in the hash table when absent.  The table has
// at least twice as many slots as the frame has points, so a free slot is
// always found.
__device__ __forceinline__ uint32_t cell_entry(const CellTable &table,
                                               uint32_t cell) {
  if (table.hash_bits == 0) return cell;
  const uint32_t mask = (1u << table.hash_bits) - 1u;
  uint32_t slot = hash_home(cell, table.hash_bits);
  for (;;) {
    uint32_t seen = atomicCAS(&table.entries[slot].key, kNone, cell);
    if (seen == kNone || seen == cell) return slot;
    slot = (slot + 1u) & mask;
  }
}

}  // namespace p3dc_voxelize

#endif  // P3DC_VOXELIZE_COMMON_CUH
