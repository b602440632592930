// The suppression mask of nms.cu: bit k of mask[i * words + c] is set when
// sorted box i suppresses sorted box c * 64 + k (nms_item.h), for i < that
// box.  Only the upper triangle of 64 x 64 tiles is computed, and in a
// diagonal tile only the bits above the diagonal: the reduction never reads
// anything else.  words = ceil (m / 64) for the m boxes of this call, read on
// the device, so the mask is dense whatever the workspace's capacity.  The
// kernel also writes the mask by column for the reduction (nms_common.cuh):
// for calls of at most 1024 boxes whole, the column mask; above, the pair
// lists: each row's and each column's set bits as a list.  Where the call
// finds its pairs through the grid (@grid not NULL, and nms_grid.cuh's
// grid_frame() TRUE), this kernel returns at once.
//
// One block of 256 threads a tile (grid-stride over the tiles), the tile's
// tests those of nms_tile.cuh.
#ifndef P3DC_NMS_MASK_CUH
#define P3DC_NMS_MASK_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "nms_common.cuh"
#include "nms_grid.cuh"
#include "nms_item.h"
#include "nms_tile.cuh"
#include "sm_threads.cuh"

namespace p3dc_nms {

constexpr uint32_t kMaskThreads = 256;

// Blocks an SM that the launch bounds ask room for, which caps the
// registers a thread (nms.cu sizes the grid by the occupancy they leave).
// Exact bev-rotated: 8, 32 registers.  At the compiler's own choice for
// it, 40 registers and 6 blocks an SM, a call measured 73.5 to 75.5 us at
// 4096 boxes and 798 to 801 at 20000, against 71.7 to 71.9 and 756 to 760
// with this bound (H200, 2026-11-29, docs/performance.md).  The others:
// about what the compiler chose for them without a bound when the bounds
// were set (iou and bev-aligned 40 registers, circle 32, bev-rotated under
// mmcv's rule 64), so that a later change of code does not move them by
// chance.  Never more blocks than the SM's
// threads hold (sm_threads.cuh).

template <P3dcNmsMode kMode, P3dcNmsIouRule kRule>
__host__ __device__ constexpr int mask_min_blocks() {
  const unsigned wanted = kMode == P3DC_NMS_BEV_ROTATED
                              ? (kRule == P3DC_NMS_IOU_RULE_EXACT ? 8 : 4)
                              : (kMode == P3DC_NMS_CIRCLE ? 8 : 6);
  return p3dc_blocks_an_sm(wanted, kMaskThreads);
}

template <P3dcNmsMode kMode, P3dcNmsIouRule kRule = P3DC_NMS_IOU_RULE_EXACT>
__global__ void __launch_bounds__(kMaskThreads, mask_min_blocks<kMode, kRule>())
    mask_kernel(const P3dcNmsItem *items, const uint32_t *item_count,
                P3dcNmsPairTest test, unsigned long long *mask,
                unsigned long long *column_mask, PairLists lists,
                const GridBounds *grid) {
  __shared__ TileShared<kMaskThreads> s;
  // bits of the columns that can take part at all, low and high half
  __shared__ uint32_t usable_columns[2];

  const uint32_t tid = threadIdx.x;
  const uint32_t lane = tid & 31;
  const uint32_t warp = tid >> 5;
  const uint32_t row = tid % kTile;
  p3dc_allow_next_kernel();
  p3dc_wait_for_previous_kernel();
  const uint32_t m = p3dc_load_after_wait(item_count);
  // the grid's kernels have found the pairs (nms_grid.cuh)
  GridFrame frame;
  if (grid != nullptr && grid_frame(grid, m, &frame)) return;
  const uint32_t words = (m + kTile - 1) / kTile;
  const uint32_t tiles = words * (words + 1) / 2;
  // lets the compiler drop the other modes and rule from the inlined pair
  // test
  test.mode = kMode;
  test.iou_rule = kRule;

  for (uint32_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    uint32_t row_tile, col_tile;
    triangle_tile(t, &row_tile, &col_tile);
    const uint32_t i = row_tile * kTile + row;
    P3dcNmsItem row_item;
    memset(&row_item, 0, sizeof row_item);
    if (i < m) row_item = items[i];

    // threads 0-63 (warps 0 and 1): column tid, and row tid for pass 2
    if (tid < kTile) {
      const uint32_t j = col_tile * kTile + tid;
      P3dcNmsItem column;
      memset(&column, 0, sizeof column);
      if (j < m) column = items[j];
      tile_stage<kMode>(s, tid, column, row_item);
      const unsigned usable =
          __ballot_sync(kFullWarp, j < m && may_take_part(column, kMode));
      if (lane == 0) usable_columns[warp] = usable;
    }
    // (1) the tile's columns, rows, usable_columns and zeroed row_bits are
    // in shared memory
    __syncthreads();

    unsigned long long candidates = 0;
    if (i < m && may_take_part(row_item, kMode)) {
      // only the pairs above the diagonal, only the columns that are boxes
      const uint32_t first = row_tile == col_tile ? row + 1 : 0;
      const unsigned long long allowed =
          ((unsigned long long)usable_columns[1] << 32 | usable_columns[0]) &
          (first < kTile ? ~0ull << first : 0ull);
      candidates = tile_candidates<kMode, kRule>(s, test, row_item, allowed);
    }
    // (2) row_bits complete, and whether any bit is set.  Until the next
    // tile's barrier (1) threads 0-63 read their own row_bits word and then
    // write their own slots for the next tile; every other read of this
    // tile's shared data comes before (2), or, where the columns are read,
    // before (3).
    const bool tile_has_pairs = tile_test<kMode>(s, test, candidates);
    if (tid < kTile && i < m) {
      unsigned long long suppressed = s.row_bits[tid];
      mask[(size_t)i * words + col_tile] = suppressed;
      if (m > kColumnBoxes && suppressed != 0) {
        // the row's list: the tile's boxes appended, in slots that the
        // count reserves
        uint32_t slot = atomicAdd(&lists.counts[i].y, __popcll(suppressed));
        for (; suppressed != 0 && slot < kListSlots; slot++) {
          const uint32_t k = __ffsll((long long)suppressed) - 1;
          suppressed &= suppressed - 1;
          lists.rows[(size_t)i * kListSlots + slot] =
              (uint16_t)(col_tile * kTile + k);
        }
      }
    }
    // The tile's columns: the column mask, every word of which the
    // reduction reads, or the column lists, which an empty tile leaves as
    // they are (nms_common.cuh).
    if (m <= kColumnBoxes) {
      // (3) in tile_store_columns
      tile_store_columns(s, column_mask, row_tile, col_tile, m, 0);
    } else if (tile_has_pairs) {
      // the column's list: the piece's rows appended
      uint32_t piece = tile_column_piece(s);
      const uint32_t c = col_tile * kTile + tid % kTile;
      if (piece != 0) {
        const uint32_t first_row =
            row_tile * kTile +
            tid / kTile * TileShape<kMaskThreads>::kPieceRows;
        uint32_t slot = atomicAdd(&lists.counts[c].x, __popc(piece));
        for (; piece != 0 && slot < kListSlots; slot++) {
          const uint32_t r = __ffs(piece) - 1;
          piece &= piece - 1;
          lists.columns[(size_t)c * kListSlots + slot] =
              (uint16_t)(first_row + r);
        }
      }
      // (3) every read of row_bits done
      __syncthreads();
    }
  }
}

}  // namespace p3dc_nms

#endif  // P3DC_NMS_MASK_CUH
