// The pair tests of one 64 x 64 tile of the suppression mask, shared by
// the mask kernel (nms_mask.cuh), whose tiles hold boxes in score order,
// and the one-kernel path of small calls (nms_small.cuh), whose tiles hold
// them in input order.  The kernel stages the tile's boxes and says which
// pairs may be tested; the tile's steps test them and leave, for each row,
// the bits of the columns it suppresses.
//
// A block of kThreads threads (256 or 512) takes kRows rows of a tile (all
// 64, or the half of them from row first_row, 0 or 32): thread t takes row
// t % kRows against the 64 / (kThreads / kRows) columns of part t / kRows,
// so that a small call still fills the SMs (at a thread a row, the mask
// kernel's 36 tiles of 500 boxes left 1 SM in 4 with only 2 warps) and
// every warp reads the same column at once.
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
#ifndef P3DC_NMS_TILE_CUH
#define P3DC_NMS_TILE_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "nms_common.cuh"
#include "nms_item.h"

namespace p3dc_nms {

// A tile's parts, columns a part, warps, and the pieces of its columns
// (tile_column_piece), for blocks of kThreads that take kRows rows.
template <uint32_t kThreads, uint32_t kRows = kTile>
struct TileShape {
  static_assert(kThreads == 256 || kThreads == 512, "a block is 8 or 16 warps");
  static_assert(kRows == kTile || kRows == kTile / 2,
                "a block takes a tile's rows or half of them");
  static constexpr uint32_t kParts = kThreads / kRows;
  static constexpr uint32_t kPartColumns = kTile / kParts;
  static constexpr uint32_t kWarps = kThreads / 32;
  static constexpr uint32_t kPieces = kThreads / kTile;
  static constexpr uint32_t kPieceRows = kRows / kPieces;
  static_assert(kPieceRows <= 16, "a piece is 16 bits");
};

// What a tile's tests keep in shared memory.
template <uint32_t kThreads, uint32_t kRows = kTile>
struct TileShared {
  // what the first pass reads of the columns (filter_shape), and labels
  float4 column_shapes[kTile];
  int32_t column_labels[kTile];
  // row r's bits (r counted from first_row): the tile's columns that box r
  // suppresses
  unsigned long long row_bits[kRows];
  // the second pass: the full boxes, and the pairs as row * 64 + column
  // (the row counted from first_row)
  P3dcNmsItem rows[kRows];
  P3dcNmsItem columns[kTile];
  uint16_t pairs[kRows * kTile];
  uint32_t warp_totals[TileShape<kThreads, kRows>::kWarps];
  // the column words' pieces of kPieceRows rows (tile_store_columns)
  uint16_t column_pieces[TileShape<kThreads, kRows>::kPieces][kTile];
};

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

// Threads 0-63, before the tile's first barrier: column @tid of the tile,
// and, in threads below kRows, the thread's row (the second pass reads rows
// from shared memory) and its bits zeroed.
template <P3dcNmsMode kMode, uint32_t kThreads, uint32_t kRows>
__device__ __forceinline__ void tile_stage(TileShared<kThreads, kRows> &s,
                                           uint32_t tid,
                                           const P3dcNmsItem &column,
                                           const P3dcNmsItem &row) {
  s.column_shapes[tid] = filter_shape<kMode>(column);
  s.column_labels[tid] = column.label;
  if (kMode != P3DC_NMS_CIRCLE) s.columns[tid] = column;
  if (tid < kRows) {
    if (kMode != P3DC_NMS_CIRCLE) s.rows[tid] = row;
    s.row_bits[tid] = 0;
  }
}

// The first pass of this thread's row item against its part's columns,
// after the barrier that follows tile_stage: the bits of the columns (of
// the 64) that pass it, among @allowed (those the caller lets the row be
// tested against).
template <P3dcNmsMode kMode, P3dcNmsIouRule kRule, uint32_t kThreads,
          uint32_t kRows>
__device__ __forceinline__ unsigned long long tile_candidates(
    const TileShared<kThreads, kRows> &s, const P3dcNmsPairTest &test,
    const P3dcNmsItem &row_item, unsigned long long allowed) {
  constexpr uint32_t kPartColumns = TileShape<kThreads, kRows>::kPartColumns;
  const uint32_t shift = threadIdx.x / kRows * kPartColumns;
  if (((allowed >> shift) & ((1ull << kPartColumns) - 1)) == 0) return 0;
  uint32_t hits = 0;
#pragma unroll
  for (uint32_t c = 0; c < kPartColumns; c++) {
    const uint32_t k = shift + c;
    hits |= (uint32_t)first_pass<kMode, kRule>(
                test, row_item, s.column_shapes[k], s.column_labels[k])
            << c;
  }
  return ((unsigned long long)hits << shift) & allowed;
}

// The second pass on every thread's candidates (every thread calls it):
// row_bits[] complete on return, and TRUE (in every thread) when any bit
// of the tile is set.  Every read of the staged boxes comes before its last
// barrier.  Until the next tile's tile_stage a thread below kRows may read
// its own row's row_bits word; the other words, before a barrier
// (tile_stage zeroes them with none before it).
template <P3dcNmsMode kMode, uint32_t kThreads, uint32_t kRows>
__device__ __forceinline__ bool tile_test(TileShared<kThreads, kRows> &s,
                                          const P3dcNmsPairTest &test,
                                          unsigned long long candidates) {
  const uint32_t tid = threadIdx.x;
  const uint32_t lane = tid & 31;
  const uint32_t warp = tid >> 5;
  const uint32_t row = tid % kRows;
  // whether this thread set a bit of the tile
  bool marked = false;
  if (kMode == P3DC_NMS_CIRCLE) {
    marked = candidates != 0;
    if (marked) atomicOr(&s.row_bits[row], candidates);
  } else {
    // offsets of each thread's pairs in the list: a scan over the block
    const uint32_t own = __popcll(candidates);
    const uint32_t inclusive = warp_inclusive_sum(own);
    if (lane == 31) s.warp_totals[warp] = inclusive;
    // warp_totals complete
    __syncthreads();
    uint32_t position = inclusive - own, total = 0;
    for (uint32_t w = 0; w < TileShape<kThreads, kRows>::kWarps; w++) {
      const uint32_t count = s.warp_totals[w];
      if (w < warp) position += count;
      total += count;
    }
    while (candidates != 0) {
      const uint32_t k = __ffsll((long long)candidates) - 1;
      candidates &= candidates - 1;
      s.pairs[position++] = (uint16_t)(row * kTile + k);
    }
    // the list is complete
    __syncthreads();
    for (uint32_t p = tid; p < total; p += kThreads) {
      const uint32_t r = s.pairs[p] / kTile;
      const uint32_t k = s.pairs[p] % kTile;
      if (p3dc_nms_item_suppresses(&test, &s.rows[r], &s.columns[k])) {
        atomicOr(&s.row_bits[r], 1ull << k);
        marked = true;
      }
    }
  }
  // row_bits complete, and whether any bit is set
  return __syncthreads_or(marked);
}

// The block's rows of the tile's columns, after tile_test: with h =
// kPieceRows, thread t takes column t % 64 of the block's rows h (t / 64)
// .. h (t / 64) + h - 1 (a warp reads the same row words), and returns
// their bits, bit r for row h (t / 64) + r.
template <uint32_t kThreads, uint32_t kRows>
__device__ __forceinline__ uint32_t
tile_column_piece(const TileShared<kThreads, kRows> &s) {
  constexpr uint32_t kPieceRows = TileShape<kThreads, kRows>::kPieceRows;
  const uint32_t column = threadIdx.x % kTile, piece = threadIdx.x / kTile;
  uint32_t bits = 0;
#pragma unroll
  for (uint32_t r = 0; r < kPieceRows; r++)
    bits |= (uint32_t)((s.row_bits[piece * kPieceRows + r] >> column) & 1ull)
            << r;
  return bits;
}

// The block's rows of the tile's columns as words of the column mask
// (nms_common.cuh), after tile_test (every thread calls it): bit r of
// column c's word for row tile @row_tile is set when row r suppresses
// column c, for the tile's columns below @m.  A block of 64 rows stores
// both 32-bit halves of each word (threads 0-63 the low half of column t %
// 64's word, threads 64-127 the high half; @first_row 0); a block of 32
// rows, the half of @first_row (threads 0-63).  Every read of row_bits
// comes before its barrier.
template <uint32_t kThreads, uint32_t kRows>
__device__ __forceinline__ void tile_store_columns(
    TileShared<kThreads, kRows> &s, unsigned long long *column_mask,
    uint32_t row_tile, uint32_t col_tile, uint32_t m, uint32_t first_row) {
  constexpr uint32_t kPieceRows = TileShape<kThreads, kRows>::kPieceRows;
  constexpr uint32_t kHalfPieces = 32 / kPieceRows;
  constexpr uint32_t kHalves = kRows / 32;
  const uint32_t tid = threadIdx.x;
  const uint32_t column = tid % kTile;
  s.column_pieces[tid / kTile][column] = (uint16_t)tile_column_piece(s);
  // every piece in place, every read of row_bits done
  __syncthreads();
  const uint32_t c = col_tile * kTile + column;
  if (tid >= kHalves * kTile || c >= m) return;
  const uint32_t half = tid / kTile;
  uint32_t bits = 0;
#pragma unroll
  for (uint32_t p = 0; p < kHalfPieces; p++)
    bits |= (uint32_t)s.column_pieces[half * kHalfPieces + p][column]
            << (p * kPieceRows);
  reinterpret_cast<uint32_t *>(
      column_mask)[((size_t)row_tile * kColumnBoxes + c) * 2 + first_row / 32 +
                   half] = bits;
}

}  // namespace p3dc_nms

#endif  // P3DC_NMS_TILE_CUH
