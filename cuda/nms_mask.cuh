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
// One block of 256 threads per tile (grid-stride over the tiles): thread t
// takes row t % 64 against the 16 columns of part t / 64, so that a small
// call still fills the SMs (at a thread a row, 500 boxes' 36 tiles left 1
// SM in 4 with only 2 warps) and every warp reads the same column at once.
//
// Two passes.  The first runs a cheap test on every pair: for iou and
// bev-aligned, whether the rectangles overlap (p3dc_aligned_rect_overlap or
// p3dc_bev_aligned_overlap, the very arithmetic of the IoU, with no
// division); for bev-rotated, whether the bounding circles meet
// (p3dc_bev_circles_meet, the IoU's own first test, with the circles grown as
// mmcv's rule grows them under that rule); and labels, per class.  A pair it
// rejects has an IoU of 0, which never exceeds a threshold >= 0
// (p3dc_nms_params_check), so the test is exact to skip.  The second pass runs
// the full pair test, the very function the reference calls, on the survivors
// only, compacted into a list so that every thread has one (the IoU with its
// division, or the polygon clip, is 3 to 30 times the cheap test, and only 1 to
// 10 per cent of the pairs survive in the benchmark's layouts).  Circle mode
// has no second pass: its test is as cheap as any filter.
#ifndef P3DC_NMS_MASK_CUH
#define P3DC_NMS_MASK_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "nms_common.cuh"
#include "nms_grid.cuh"
#include "nms_item.h"

namespace p3dc_nms {

constexpr uint32_t kMaskThreads = 256;
constexpr uint32_t kMaskParts = kMaskThreads / kTile;
constexpr uint32_t kPartColumns = kTile / kMaskParts;
constexpr uint32_t kMaskWarps = kMaskThreads / 32;
static_assert(kPartColumns == 16, "a part's hits are 16 bits");

// What the first pass reads of a column box, one 16-byte load: the corners
// (iou), centre and half sizes (bev-aligned), centre and bounding radius
// (bev-rotated), centre (circle).
template <P3dcNmsMode kMode>
__device__ __forceinline__ float4 filter_shape(const P3dcNmsItem &item) {
  if (kMode == P3DC_NMS_BEV_ROTATED)
    return make_float4(item.shape.rect.cx, item.shape.rect.cy,
                       item.shape.rect.radius, 0.0f);
  if (kMode == P3DC_NMS_BEV_ALIGNED)
    return make_float4(item.shape.rect.cx, item.shape.rect.cy,
                       item.shape.rect.half_dx, item.shape.rect.half_dy);
  if (kMode == P3DC_NMS_CIRCLE)
    return make_float4(item.shape.centre[0], item.shape.centre[1], 0.0f, 0.0f);
  return make_float4(item.shape.aligned.x1, item.shape.aligned.y1,
                     item.shape.aligned.x2, item.shape.aligned.y2);
}

// The first pass on one pair: for circle the pair test itself; otherwise
// FALSE only where the pair test is FALSE (see the top of this file).
template <P3dcNmsMode kMode, P3dcNmsIouRule kRule>
__device__ __forceinline__ bool first_pass(const P3dcNmsPairTest &test,
                                           const P3dcNmsItem &row, float4 shape,
                                           int32_t label) {
  if (kMode == P3DC_NMS_CIRCLE) {
    P3dcNmsItem column;
    column.shape.centre[0] = shape.x;
    column.shape.centre[1] = shape.y;
    column.label = label;
    return p3dc_nms_item_suppresses(&test, &row, &column);
  }
  if (test.per_class && label != row.label) return false;
  if (kMode == P3DC_NMS_BEV_ROTATED) {
    // mmcv's rule: the test of p3dc_bev_rect_iou_mmcv_plain
    const float grow =
        kRule == P3DC_NMS_IOU_RULE_MMCV ? 1.5f * P3DC_MMCV_MARGIN : 0.0f;
    return p3dc_bev_circles_meet(row.shape.rect.cx, row.shape.rect.cy,
                                 row.shape.rect.radius + grow, shape.x, shape.y,
                                 shape.z + grow);
  }
  if (kMode == P3DC_NMS_BEV_ALIGNED) {
    P3dcBevRect column;
    column.cx = shape.x;
    column.cy = shape.y;
    column.half_dx = shape.z;
    column.half_dy = shape.w;
    float width, height;
    p3dc_bev_aligned_overlap(&row.shape.rect, &column, &width, &height);
    return width > 0.0f && height > 0.0f;
  }
  P3dcAlignedRect column;
  column.x1 = shape.x;
  column.y1 = shape.y;
  column.x2 = shape.z;
  column.y2 = shape.w;
  // not read by the overlap
  column.area = 0.0f;
  column.huge = 0;
  float width, height;
  p3dc_aligned_rect_overlap(&row.shape.aligned, &column, test.offset, &width,
                            &height);
  return width > 0.0f && height > 0.0f;
}

template <P3dcNmsMode kMode, P3dcNmsIouRule kRule = P3DC_NMS_IOU_RULE_EXACT>
__global__ void __launch_bounds__(kMaskThreads)
    mask_kernel(const P3dcNmsItem *items, const uint32_t *item_count,
                P3dcNmsPairTest test, unsigned long long *mask,
                unsigned long long *column_mask, PairLists lists,
                const GridBounds *grid) {
  constexpr bool kSecondPass = kMode != P3DC_NMS_CIRCLE;
  __shared__ float4 column_shapes[kTile];
  __shared__ int32_t column_labels[kTile];
  // bits of the columns that can take part at all, low and high half
  __shared__ uint32_t usable_columns[2];
  __shared__ unsigned long long row_bits[kTile];
  // the second pass: the full boxes, and the pairs as row * 64 + column
  __shared__ P3dcNmsItem rows[kTile];
  __shared__ P3dcNmsItem columns[kTile];
  __shared__ uint16_t pairs[kTile * kTile];
  __shared__ uint32_t warp_totals[kMaskWarps];
  // the column mask's 16-row pieces of the tile's columns
  __shared__ uint16_t column_pieces[kMaskParts][kTile];

  const uint32_t tid = threadIdx.x;
  const uint32_t lane = tid & 31;
  const uint32_t warp = tid >> 5;
  const uint32_t row = tid % kTile;
  const uint32_t part = tid / kTile;
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
      column_shapes[tid] = filter_shape<kMode>(column);
      column_labels[tid] = column.label;
      if (kSecondPass) {
        columns[tid] = column;
        rows[tid] = row_item;
      }
      row_bits[tid] = 0;
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
      const uint32_t shift = part * kPartColumns;
      if (((allowed >> shift) & 0xffffull) != 0) {
        uint32_t hits = 0;
#pragma unroll
        for (uint32_t c = 0; c < kPartColumns; c++) {
          const uint32_t k = shift + c;
          hits |= (uint32_t)first_pass<kMode, kRule>(
                      test, row_item, column_shapes[k], column_labels[k])
                  << c;
        }
        candidates = ((unsigned long long)hits << shift) & allowed;
      }
    }

    // whether this thread set a bit of the tile
    bool marked = false;
    if (!kSecondPass) {
      marked = candidates != 0;
      if (marked) atomicOr(&row_bits[row], candidates);
    } else {
      // offsets of each thread's pairs in the list: a scan over the block
      const uint32_t own = __popcll(candidates);
      const uint32_t inclusive = warp_inclusive_sum(own);
      if (lane == 31) warp_totals[warp] = inclusive;
      // (2) warp_totals complete
      __syncthreads();
      uint32_t position = inclusive - own, total = 0;
      for (uint32_t w = 0; w < kMaskWarps; w++) {
        const uint32_t count = warp_totals[w];
        if (w < warp) position += count;
        total += count;
      }
      while (candidates != 0) {
        const uint32_t k = __ffsll((long long)candidates) - 1;
        candidates &= candidates - 1;
        pairs[position++] = (uint16_t)(row * kTile + k);
      }
      // (3) the list is complete
      __syncthreads();
      for (uint32_t p = tid; p < total; p += kMaskThreads) {
        const uint32_t r = pairs[p] / kTile;
        const uint32_t k = pairs[p] % kTile;
        if (p3dc_nms_item_suppresses(&test, &rows[r], &columns[k])) {
          atomicOr(&row_bits[r], 1ull << k);
          marked = true;
        }
      }
    }
    // (4) row_bits complete, and whether any bit is set.  Until the next
    // tile's barrier (1) threads 0-63 read their own row_bits word and then
    // write their own slots for the next tile; every other read of this
    // tile's shared data comes before (4), or, where the columns are read,
    // before (5).
    const bool tile_has_pairs = __syncthreads_or(marked);
    if (tid < kTile && i < m) {
      unsigned long long suppressed = row_bits[tid];
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
    // they are (nms_common.cuh).  Thread t takes column t % 64 of
    // rows 16 (t / 64) .. 16 (t / 64) + 15 (a warp reads the same row
    // words).
    if (m <= kColumnBoxes || tile_has_pairs) {
      const uint32_t column = tid % kTile, part = tid / kTile;
      uint32_t piece = 0;
#pragma unroll
      for (uint32_t r = 0; r < kTile / kMaskParts; r++)
        piece |=
            (uint32_t)((row_bits[part * (kTile / kMaskParts) + r] >> column) &
                       1ull)
            << r;
      const uint32_t c = col_tile * kTile + column;
      if (m > kColumnBoxes) {
        // the column's list: the piece's rows appended
        if (piece != 0) {
          const uint32_t first_row =
              row_tile * kTile + part * (kTile / kMaskParts);
          uint32_t slot = atomicAdd(&lists.counts[c].x, __popc(piece));
          for (; piece != 0 && slot < kListSlots; slot++) {
            const uint32_t r = __ffs(piece) - 1;
            piece &= piece - 1;
            lists.columns[(size_t)c * kListSlots + slot] =
                (uint16_t)(first_row + r);
          }
        }
      } else {
        column_pieces[part][column] = (uint16_t)piece;
      }
      // (5) every read of row_bits done, and the pieces complete
      __syncthreads();
      // 128 threads join the four 16-row pieces into the column mask's two
      // 32-bit halves
      if (m <= kColumnBoxes && tid < 2 * kTile && c < m) {
        const uint32_t half = tid / kTile;
        reinterpret_cast<uint32_t *>(
            column_mask)[((size_t)row_tile * kColumnBoxes + c) * 2 + half] =
            column_pieces[2 * half][column] |
            (uint32_t)column_pieces[2 * half + 1][column] << 16;
      }
    }
  }
}

}  // namespace p3dc_nms

#endif  // P3DC_NMS_MASK_CUH
