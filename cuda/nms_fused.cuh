// nms.cu for workspaces of up to kFusedCapacity boxes: the whole call in one
// kernel launch of one block, so that a frame of a few hundred boxes pays
// one launch instead of three dependent kernels (docs/performance.md: at 500
// boxes the staged path spent more in the gaps between its kernels than in
// their work).
//
// One thread per box slot (the capacity is at most the block):
//  1. each thread computes its record's sort key (nms_item.h), and CUB's
//     BlockRadixSort, stable, sorts (key, input index): the kept records come
//     first in score order, the first m = min (kept, pre_max) of them are
//     the boxes; their pair-test data go to shared memory.
//  2. the greedy walk over the 64-box tiles, in steps.  Step s:
//     A. warp 0 decides tile s - 1: its boxes not removed by the kept boxes
//        of earlier tiles, walked lowest first with the tile's own
//        suppression bits (diag, computed in step s - 1); it lists the kept
//        boxes.  Meanwhile the other warps copy the removal bits to a
//        snapshot (dead) that step B reads while removed[] is being ORed.
//     B. all warps: each box kept in tile s - 1 against every later box not
//        yet removed, ORed into removed[]; and the suppression bits inside
//        tile s (diag) for its rows not yet removed.
//     The pair tests are only those of kept boxes (a box removed before it
//     is reached never suppresses anything), and of the rows still alive
//     inside a tile: in detector layouts a fraction of the full mask, which
//     one block could not compute in time.
//  3. the kept records and the output's zeros and -1s.
//
// The pair tests are those of nms_mask.cuh: a warp tests 32 columns against
// one row with the cheap first pass (first_pass), and the pairs that pass
// go to a list of the warp's own, whose full tests (the IoU with its
// division, or the polygon clip) run 32 at a time with every lane busy.
// Circle mode's first pass is its test.
#ifndef P3DC_NMS_FUSED_CUH
#define P3DC_NMS_FUSED_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include <cub/block/block_radix_sort.cuh>

#include "nms.h"
#include "nms_common.cuh"
#include "nms_item.h"
#include "nms_mask.cuh"

namespace p3dc_nms {

// The largest capacity the one-block path takes: one box a thread in the
// sort, and the boxes' data in shared memory (about 100 KB in all).
constexpr uint32_t kFusedCapacity = 1024;
constexpr uint32_t kFusedThreads = kFusedCapacity;
constexpr uint32_t kFusedWarps = kFusedThreads / 32;
constexpr uint32_t kFusedTiles = kFusedCapacity / kTile;
// the 32-bit halves of the tiles: the bit masks over the boxes are arrays
// of 32-bit words, so that a warp's ballot is one word
constexpr uint32_t kFusedHalves = kFusedCapacity / 32;
// a warp's list of pairs for the full test: fewer than 32 waiting, plus one
// ballot's 32
constexpr uint32_t kPairSlots = 64;

using FusedSort = cub::BlockRadixSort<uint32_t, kFusedThreads, 1, uint32_t>;

struct FusedShared {
  union {
    typename FusedSort::TempStorage sort;
    // after the sort
    struct {
      // bit k of diag[2 * r + h]: sorted box r suppresses box 64 * (r / 64)
      // + 32 * h + k of its own tile (only above the diagonal, and only for
      // rows and columns that were alive when the tile's bits were made)
      uint32_t diag[2 * kFusedCapacity];
      // per warp: pairs (row << 16 | column) waiting for the full test
      uint32_t pairs[kFusedWarps][kPairSlots];
    } walk;
  } u;
  P3dcNmsItem items[kFusedCapacity];
  // what first_pass reads of a column (nms_mask.cuh)
  float4 shapes[kFusedCapacity];
  int32_t labels[kFusedCapacity];
  // sorted position -> input index
  uint32_t order[kFusedCapacity];
  // boxes removed by the kept boxes of decided tiles (ORed in step B)
  uint32_t removed[kFusedHalves];
  // removed[] as step A left it, read by step B
  uint32_t dead[kFusedHalves];
  // the kept boxes of the decided tiles
  uint32_t kept[kFusedHalves];
  // the kept boxes before tile t (kept_before[s]: in the s decided tiles)
  uint32_t kept_before[kFusedTiles + 1];
  // the sorted positions of the boxes kept in the tile step A decided
  uint16_t kept_list[kTile];
  uint32_t kept_count;
  // the output is full (post_max, out_capacity): no further step
  uint32_t stop;
};

// Sets the bit of the full test's pair (row, column) that it suppresses:
// in the tile's own diag bits, or among the removed boxes.
__device__ __forceinline__ void fused_mark(FusedShared &sh, uint32_t row,
                                           uint32_t column) {
  if (row / kTile == column / kTile)
    atomicOr(&sh.u.walk.diag[2 * row + (column % kTile) / 32],
             1u << (column % 32));
  else
    atomicOr(&sh.removed[column / 32], 1u << (column % 32));
}

// The full pair test on the warp's pairs [first, first + count), count <=
// 32, one a lane.
template <P3dcNmsMode kMode, P3dcNmsIouRule kRule>
__device__ __forceinline__ void fused_full_tests(FusedShared &sh,
                                                 const P3dcNmsPairTest &test,
                                                 const uint32_t *pairs,
                                                 uint32_t first, uint32_t count,
                                                 uint32_t lane) {
  uint32_t pair = 0;
  if (lane < count) pair = pairs[first + lane];
  // every lane has its pair before the list is appended to again
  __syncwarp();
  if (lane < count) {
    const uint32_t row = pair >> 16, column = pair & 0xffffu;
    if (p3dc_nms_item_suppresses(&test, &sh.items[row], &sh.items[column]))
      fused_mark(sh, row, column);
  }
}

// @limit = min (post_max, out_capacity); @pre_limit = min (pre_max,
// capacity); the other arguments as reduce_kernel's (nms_reduce.cuh).
// Launched with sizeof (FusedShared) bytes of dynamic shared memory.
template <P3dcNmsMode kMode, P3dcNmsIouRule kRule = P3DC_NMS_IOU_RULE_EXACT>
__global__ void __launch_bounds__(kFusedThreads, 1)
    fused_kernel(const void *__restrict__ boxes,
                 const uint32_t *__restrict__ n_boxes_device, uint32_t capacity,
                 float score_threshold, uint32_t pre_limit, P3dcNmsPairTest test,
                 uint32_t record_words, uint32_t limit,
                 uint32_t *__restrict__ out, uint32_t out_capacity,
                 uint32_t *__restrict__ out_count,
                 int32_t *__restrict__ kept_index) {
  extern __shared__ __align__(16) unsigned char fused_memory[];
  FusedShared &sh = *reinterpret_cast<FusedShared *>(fused_memory);
  constexpr bool kSecondPass = kMode != P3DC_NMS_CIRCLE;
  const uint32_t tid = threadIdx.x;
  const uint32_t lane = tid & 31;
  const uint32_t warp = tid >> 5;
  // lets the compiler drop the other modes and rule from the pair test
  test.mode = kMode;
  test.iou_rule = kRule;

  // 1. keys, sort, items
  uint32_t n = *n_boxes_device;
  if (n > capacity) n = capacity;
  uint32_t key[1], index[1];
  key[0] = tid < n ? p3dc_nms_record_key(kMode, boxes, tid, score_threshold)
                   : P3DC_NMS_KEY_DROPPED;
  index[0] = tid;
  const uint32_t valid = __syncthreads_count(key[0] != P3DC_NMS_KEY_DROPPED);
  FusedSort(sh.u.sort).Sort(key, index);
  const uint32_t m = valid < pre_limit ? valid : pre_limit;
  const uint32_t tiles = (m + kTile - 1) / kTile;
  // (1) the sort's storage is no longer read: the walk's may be written
  __syncthreads();

  // thread tid holds the box of sorted position tid
  if (tid < m) {
    P3dcNmsItem item;
    p3dc_nms_item_set(&item, kMode, boxes, index[0], test.offset);
    sh.items[tid] = item;
    sh.shapes[tid] = filter_shape<kMode>(item);
    sh.labels[tid] = item.label;
    sh.order[tid] = index[0];
  }
  sh.u.walk.diag[2 * tid] = 0;
  sh.u.walk.diag[2 * tid + 1] = 0;
  if (tid < kFusedHalves) {
    sh.removed[tid] = 0;
    sh.kept[tid] = 0;
  }
  if (tid == 0) {
    sh.kept_before[0] = 0;
    sh.stop = 0;
  }
  // (2) the boxes and the zeroed bits are in place
  __syncthreads();

  // 2. the walk; nothing to walk when nothing may be output
  const uint32_t walk_tiles = limit > 0 ? tiles : 0;
  const uint32_t halves = (m + 31) / 32;
  uint32_t *pairs = sh.u.walk.pairs[warp];
  uint32_t kept_so_far = 0;  // warp 0's, the same in every lane
  uint32_t s = 0;
  for (;; s++) {
    // step A
    if (warp == 0) {
      if (s > 0) {
        const uint32_t t = s - 1;
        const uint32_t row_lo = t * kTile + lane, row_hi = row_lo + 32;
        const unsigned long long diag_lo =
            (unsigned long long)sh.u.walk.diag[2 * row_lo + 1] << 32 |
            sh.u.walk.diag[2 * row_lo];
        const unsigned long long diag_hi =
            (unsigned long long)sh.u.walk.diag[2 * row_hi + 1] << 32 |
            sh.u.walk.diag[2 * row_hi];
        const unsigned long long removed =
            (unsigned long long)sh.removed[2 * t + 1] << 32 | sh.removed[2 * t];
        unsigned long long candidates = tile_boxes(m, t) & ~removed;
        unsigned long long kept = 0;
        // lowest first: a box's suppressions are applied before any later
        // box of the tile is looked at
        while (candidates != 0) {
          const uint32_t b = __ffsll((long long)candidates) - 1;
          const unsigned long long bit = 1ull << b;
          const unsigned long long suppressed =
              __shfl_sync(kFullWarp, b < 32 ? diag_lo : diag_hi, b & 31);
          kept |= bit;
          candidates &= ~(suppressed | bit);
        }
        if ((kept >> lane) & 1ull)
          sh.kept_list[__popcll(kept & ((1ull << lane) - 1))] =
              (uint16_t)row_lo;
        if ((kept >> (lane + 32)) & 1ull)
          sh.kept_list[__popcll(kept & ((1ull << (lane + 32)) - 1))] =
              (uint16_t)row_hi;
        kept_so_far += __popcll(kept);
        if (lane == 0) {
          sh.kept[2 * t] = (uint32_t)kept;
          sh.kept[2 * t + 1] = (uint32_t)(kept >> 32);
          sh.kept_count = __popcll(kept);
          sh.kept_before[s] = kept_so_far;
          sh.stop = kept_so_far >= limit;
        }
      }
    } else {
      for (uint32_t h = tid - 32; h < halves; h += kFusedThreads - 32)
        sh.dead[h] = sh.removed[h];
    }
    // (A) tile s - 1 decided and its kept boxes listed; the snapshot taken
    __syncthreads();
    if (s >= walk_tiles || sh.stop) break;

    // step B: work items of a warp each, 32 columns a lane each.  First
    // the kept boxes of tile s - 1 against the columns from tile s on, in
    // 32-column chunks; then the rows of tile s against the two halves of
    // their own tile.
    const uint32_t first_column = s * kTile;
    const uint32_t chunks = (m - first_column + 31) / 32;  // m > first_column
    const uint32_t kept_items = s > 0 ? sh.kept_count * chunks : 0;
    const uint32_t tile_rows = min(m - first_column, kTile);
    const uint32_t items = kept_items + 2 * tile_rows;
    uint32_t waiting = 0;  // pairs in the warp's list
    for (uint32_t x = warp; x < items; x += kFusedWarps) {
      uint32_t row, column;
      bool alive;
      if (x < kept_items) {
        row = sh.kept_list[x / chunks];
        column = first_column + (x % chunks) * 32 + lane;
        alive = true;
      } else {
        const uint32_t y = x - kept_items;
        row = first_column + y / 2;
        column = first_column + (y % 2) * 32 + lane;
        // a removed row is never kept: its bits are never read
        alive = column > row && !((sh.dead[row / 32] >> (row % 32)) & 1u);
      }
      alive = alive && column < m &&
              !((sh.dead[column / 32] >> (column % 32)) & 1u);
      bool hit = false;
      if (alive) {
        const P3dcNmsItem row_item = sh.items[row];
        hit = first_pass<kMode, kRule>(test, row_item, sh.shapes[column],
                                       sh.labels[column]);
      }
      const uint32_t hits = __ballot_sync(kFullWarp, hit);
      if (!kSecondPass) {
        // the test itself: the column half's bits, in one word
        if (lane == 0 && hits != 0) {
          if (x < kept_items)
            atomicOr(&sh.removed[column / 32], hits);
          else
            sh.u.walk.diag[2 * row + (column % kTile) / 32] = hits;
        }
        continue;
      }
      if (hit)
        pairs[waiting + __popc(hits & ((1u << lane) - 1))] = row << 16 | column;
      waiting += __popc(hits);
      // the list is written before other lanes read it
      __syncwarp();
      if (waiting >= 32) {
        waiting -= 32;
        fused_full_tests<kMode, kRule>(sh, test, pairs, waiting, 32, lane);
      }
    }
    if (kSecondPass && waiting > 0)
      fused_full_tests<kMode, kRule>(sh, test, pairs, 0, waiting, lane);
    // (B) the removals of tile s - 1's kept boxes and tile s's own bits are
    // complete
    __syncthreads();
  }

  // 3. output: the loop ended on barrier (A) of step s, with s tiles
  // decided
  const uint32_t total = sh.kept_before[s];
  const uint32_t count = total < limit ? total : limit;
  const uint32_t r = tid;
  if (r < m && r < s * kTile && ((sh.kept[r / 32] >> (r % 32)) & 1u)) {
    const uint32_t t = r / kTile;
    const unsigned long long bits =
        (unsigned long long)sh.kept[2 * t + 1] << 32 | sh.kept[2 * t];
    const uint32_t position =
        sh.kept_before[t] + __popcll(bits & ((1ull << (r % kTile)) - 1));
    if (position < count) {
      const uint32_t input = sh.order[r];
      const uint32_t *src =
          (const uint32_t *)boxes + (size_t)input * record_words;
      uint32_t *dst = out + (size_t)position * record_words;
      uint32_t record[P3DC_BOX3D_SIZE / 4];
#pragma unroll
      for (uint32_t w = 0; w < P3DC_BOX3D_SIZE / 4; w++)
        if (w < record_words) record[w] = src[w];
#pragma unroll
      for (uint32_t w = 0; w < P3DC_BOX3D_SIZE / 4; w++)
        if (w < record_words) dst[w] = record[w];
      if (kept_index != nullptr) kept_index[position] = (int32_t)input;
    }
  }
  const size_t words = (size_t)out_capacity * record_words;
  for (size_t w = (size_t)count * record_words + tid; w < words;
       w += kFusedThreads)
    out[w] = 0;
  if (kept_index != nullptr) {
    for (uint32_t p = count + tid; p < out_capacity; p += kFusedThreads)
      kept_index[p] = -1;
  }
  if (tid == 0) *out_count = count;
}

}  // namespace p3dc_nms

#endif  // P3DC_NMS_FUSED_CUH
