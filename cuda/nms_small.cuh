// Small calls in one kernel: workspaces of up to kSmallCapacity boxes.
//
// Why: at a few hundred boxes the three kernels of a call (nms_sort.cuh,
// nms_mask.cuh, nms_reduce.cuh) spend most of their time being launched
// and handing over to one another, and in dependent round trips to memory
// (the boxes, then the sorted items, then the mask, then the order, then
// the boxes again).  Without the rank kernel (its work left undone, for
// timing only) a call at 500 boxes took 2 to 3 us less on the H200
// (docs/performance.md).  So here one kernel does everything, and nothing
// waits for a sort:
//
//  - no box is moved into score order.  Each block holds every box's sort
//    key (nms_item.h) in shared memory; a pair of boxes is tested, with the
//    earlier box (in (key, input index) order) first, in the tile of the
//    earlier box's row and the later box's column, so the tiles cover the
//    whole square of the boxes in input order.  Bit r of column word
//    column_mask[t * kColumnBoxes + c] (nms_common.cuh) is set when box
//    t * 64 + r comes before box c and suppresses it;
//  - each block also ranks a slice of the boxes (the number of boxes
//    before each), for pre_max and for the order of the output;
//  - the block that finishes last (a ticket: an acquire-release atomic)
//    decides the kept boxes by sweeps over those columns, as
//    nms_reduce.cuh's sweep_keep: a box is kept when no box kept in the
//    previous sweep suppresses it.  Its suppressors all come before it, so
//    sweep s has decided every box with at most s boxes in its chain of
//    suppressors, and a sweep that changes nothing has reached the greedy
//    rule's one answer.  There is no walk to fall back to: the sweeps go on
//    until they settle, at most one more than the boxes (a chain through every
//    box; detector layouts settle in a few);
//  - the kept boxes' output positions are their ranks among the kept
//    boxes: a flag at each kept box's rank, the flags as bits, the bits
//    below each kept box's rank counted.
//
// pre_max: a box of rank pre_max or more neither is kept nor suppresses.
// The tiles test it as any other, but its bits only ever suppress boxes
// after it, which are all out as well, so leaving it out of the sweeps is
// enough.
//
// Two blocks a tile of the workspace's square of tiles, each with half the
// tile's rows (those past the call's count do no tile): 128 blocks at a
// capacity of 449 to 512 boxes, within the H200's 132 SMs, each with half the
// first pass, pair tests and column bits of a whole tile; about 0.5 us less a
// call than a block a tile at 500 boxes for iou and bev-rotated, the same for
// circle (docs/performance.md).
#ifndef P3DC_NMS_SMALL_CUH
#define P3DC_NMS_SMALL_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include <cuda/atomic>

#include "nms.h"
#include "nms_common.cuh"
#include "nms_grid.cuh"
#include "nms_item.h"
#include "nms_tile.cuh"

namespace p3dc_nms {

constexpr uint32_t kSmallCapacity = 512;
// a thread a box: each warp has half the keys and first-pass tests that a
// block of 256 threads on the same rows gave it (a block's work is a chain
// of dependent instructions on few warps, not issue-bound;
// docs/performance.md)
constexpr uint32_t kSmallThreads = 512;
constexpr uint32_t kSmallWarps = kSmallThreads / 32;
// a block's rows of its tile
constexpr uint32_t kSmallRows = kTile / 2;
constexpr uint32_t kSmallWords = kSmallCapacity / kTile;
// boxes a thread of the last block holds in the sweeps
constexpr uint32_t kSmallBoxesPerThread = kSmallCapacity / kSmallThreads;
// words of a set of boxes, a bit each
constexpr uint32_t kSmallBitWords = kSmallCapacity / 32;
static_assert(kSmallCapacity <= kColumnBoxes,
              "the small path's columns are the column mask's");

// Blocks of a small call in a workspace of @capacity boxes: two a tile of
// the square.
__host__ __device__ constexpr uint32_t small_blocks(uint32_t capacity) {
  return (kTile / kSmallRows) * ((capacity + kTile - 1) / kTile) *
         ((capacity + kTile - 1) / kTile);
}

// Box @j comes after box @i in score order (keys, then input index).
__device__ __forceinline__ bool comes_after(uint32_t key_j, uint32_t j,
                                            uint32_t key_i, uint32_t i) {
  return key_j > key_i || (key_j == key_i && j > i);
}

// The item of box @index, or zeros from @n on.
__device__ __forceinline__ P3dcNmsItem small_item(P3dcNmsMode mode,
                                                  const void *boxes,
                                                  uint32_t index, uint32_t n,
                                                  float offset) {
  P3dcNmsItem item;
  if (index < n)
    p3dc_nms_item_set(&item, mode, boxes, index, offset);
  else
    memset(&item, 0, sizeof item);
  return item;
}

// @done: the workspace's ticket counter, 0 between calls (the last block
// sets it back); @ranks: capacity words; @column_mask: nms_common.cuh's;
// @pre_limit: min (pre_max, capacity); @limit: min (post_max,
// out_capacity); @call: the outputs, @record_words 32-bit words a record.
template <P3dcNmsMode kMode, P3dcNmsIouRule kRule = P3DC_NMS_IOU_RULE_EXACT>
__global__ void __launch_bounds__(kSmallThreads)
    small_kernel(const void *__restrict__ boxes,
                 const uint32_t *__restrict__ n_boxes_device, uint32_t capacity,
                 float score_threshold, uint32_t pre_limit,
                 P3dcNmsPairTest test, unsigned long long *column_mask,
                 uint32_t *ranks, uint32_t *done, CallOutput call,
                 uint32_t record_words, uint32_t limit) {
  __shared__ uint32_t keys[kSmallCapacity];
  __shared__ TileShared<kSmallThreads, kSmallRows> s;
  // the tile's columns that may take part, low and high half
  __shared__ uint32_t usable_columns[2];
  __shared__ bool last_block;
  // the last block's: the kept boxes of a sweep by parity, then the kept
  // boxes by rank, a byte each and a bit each
  __shared__ __align__(8) uint32_t kept[2][kSmallBitWords];
  __shared__ uint8_t kept_at_rank[kSmallCapacity];
  __shared__ uint32_t kept_by_rank[kSmallBitWords];

  const uint32_t tid = threadIdx.x;
  const uint32_t lane = tid & 31;
  const uint32_t warp = tid >> 5;
  const uint32_t row = tid % kSmallRows;
  const uint32_t side = (capacity + kTile - 1) / kTile;
  const uint32_t tile = blockIdx.x / (kTile / kSmallRows);
  const uint32_t first_row = blockIdx.x % (kTile / kSmallRows) * kSmallRows;
  const uint32_t row_tile = tile / side;
  const uint32_t col_tile = tile % side;
  // lets the compiler drop the other modes and rule from the inlined pair
  // test
  test.mode = kMode;
  test.iou_rule = kRule;

  // The count, then everything this block reads of the records at once:
  // every record's key, the tile's row and column.  Only the records below
  // the count are read, though nms.h asks for the capacity's: callers
  // whose buffers hold the count's records worked before this kernel.
  const uint32_t n = min(*n_boxes_device, capacity);
#pragma unroll
  for (uint32_t k = 0; k < kSmallBoxesPerThread; k++) {
    const uint32_t b = tid + k * kSmallThreads;
    keys[b] = b < n ? p3dc_nms_record_key(kMode, boxes, b, score_threshold)
                    : P3DC_NMS_KEY_DROPPED;
  }
  const uint32_t i = row_tile * kTile + first_row + row;
  const P3dcNmsItem row_item = small_item(kMode, boxes, i, n, test.offset);
  P3dcNmsItem column_item;
  if (tid < kTile)
    column_item =
        small_item(kMode, boxes, col_tile * kTile + tid, n, test.offset);

  // the outputs zeroed and kept_index -1 beyond the kept boxes, over the
  // whole output capacity, before the last block writes the kept ones (its
  // ticket comes after every block's release)
  clear_outputs(call);
  if (tid < kTile) {
    const uint32_t j = col_tile * kTile + tid;
    tile_stage<kMode>(s, tid, column_item, row_item);
    const unsigned usable =
        __ballot_sync(kFullWarp, j < n && may_take_part(column_item, kMode));
    if (lane == 0) usable_columns[warp] = usable;
  }
  // (1) keys[], the tile's columns and this block's rows, usable_columns
  // and zeroed row_bits in shared memory
  __syncthreads();

  // This block's slice of the ranks: a warp a box, its lanes counting the
  // boxes before it 32 at a time.
  const uint32_t slice = (capacity + gridDim.x - 1) / gridDim.x;
  for (uint32_t b = blockIdx.x * slice + warp;
       b < min(n, (blockIdx.x + 1) * slice); b += kSmallWarps) {
    const uint32_t key = keys[b];
    uint32_t before = 0;
    for (uint32_t j = lane; j < n; j += 32)
      before += comes_after(key, b, keys[j], j);
    before = warp_sum(before);
    if (lane == 0) ranks[b] = before;
  }

  // The tile: row i against the columns after it in score order.
  const uint32_t words = (n + kTile - 1) / kTile;
  const bool tile_in_call = row_tile < words && col_tile < words;
  if (tile_in_call) {
    unsigned long long candidates = 0;
    // (i and every column of the tile are below kSmallCapacity)
    const uint32_t key_i = keys[i];
    if (i < n && key_i != P3DC_NMS_KEY_DROPPED &&
        may_take_part(row_item, kMode)) {
      constexpr uint32_t kPartColumns =
          TileShape<kSmallThreads, kSmallRows>::kPartColumns;
      const uint32_t shift = tid / kSmallRows * kPartColumns;
      uint32_t after = 0;
#pragma unroll
      for (uint32_t c = 0; c < kPartColumns; c++) {
        const uint32_t j = col_tile * kTile + shift + c;
        after |= (uint32_t)(keys[j] != P3DC_NMS_KEY_DROPPED &&
                            comes_after(keys[j], j, key_i, i))
                 << c;
      }
      const unsigned long long allowed =
          ((unsigned long long)usable_columns[1] << 32 | usable_columns[0]) &
          ((unsigned long long)after << shift);
      candidates = tile_candidates<kMode, kRule>(s, test, row_item, allowed);
    }
    tile_test<kMode>(s, test, candidates);
    tile_store_columns(s, column_mask, row_tile, col_tile, n, first_row);
  }

  // The ticket, as a grid barrier takes it (CUTLASS's generic barrier
  // follows the same pattern, a release by thread 0 after the block's
  // barrier and an acquire before the next): the block's stores ordered
  // before thread 0's by the barrier,
  // and before the ticket by its release, which is cumulative; in the last
  // block, the ticket's acquire orders every block's stores before the
  // loads that follow the second barrier.  One acquire-release atomic:
  // a fence (sequentially consistent) on each side of a relaxed one cost
  // 0.15 to 0.5 us more a call at 500 boxes (docs/performance.md).
  __syncthreads();
  if (tid == 0) {
    cuda::atomic_ref<uint32_t, cuda::thread_scope_device> ticket(*done);
    last_block =
        ticket.fetch_add(1u, cuda::memory_order_acq_rel) == gridDim.x - 1;
    // the next call's kernel comes after this one's end
    if (last_block) ticket.store(0u, cuda::memory_order_relaxed);
  }
  __syncthreads();
  if (!last_block) return;

  // The last block: thread t holds box t (kSmallBoxesPerThread boxes a
  // thread), its column and rank (written by other blocks: loads through
  // L2), and its record, loaded now so that the output does not wait for
  // it.
  unsigned long long suppressors[kSmallBoxesPerThread][kSmallWords];
  uint32_t rank[kSmallBoxesPerThread];
  bool takes_part[kSmallBoxesPerThread];
  uint32_t record[kSmallBoxesPerThread][P3DC_BOX3D_SIZE / 4];
#pragma unroll
  for (uint32_t k = 0; k < kSmallBoxesPerThread; k++) {
    const uint32_t b = tid + k * kSmallThreads;
    const bool in_call = b < n;
#pragma unroll
    for (uint32_t w = 0; w < P3DC_BOX3D_SIZE / 4; w++)
      record[k][w] = in_call && w < record_words
                         ? call.boxes[(size_t)b * record_words + w]
                         : 0u;
#pragma unroll
    for (uint32_t w = 0; w < kSmallWords; w++)
      suppressors[k][w] =
          in_call && w < words
              ? __ldcg(&column_mask[(size_t)w * kColumnBoxes + b])
              : 0ull;
    rank[k] = in_call ? __ldcg(&ranks[b]) : 0;
    takes_part[k] =
        in_call && keys[b] != P3DC_NMS_KEY_DROPPED && rank[k] < pre_limit;
  }
#pragma unroll
  for (uint32_t k = 0; k < kSmallBoxesPerThread; k++) {
    const uint32_t taking = __ballot_sync(kFullWarp, takes_part[k]);
    if (lane == 0) kept[0][k * kSmallWarps + warp] = taking;
  }
#pragma unroll
  for (uint32_t k = 0; k < kSmallBoxesPerThread; k++)
    kept_at_rank[tid + k * kSmallThreads] = 0;
  // kept[0] holds every box that takes part
  __syncthreads();
  uint32_t cur = 0;
  for (bool settled = false; !settled; cur ^= 1) {
    const unsigned long long *kept_words =
        reinterpret_cast<const unsigned long long *>(kept[cur]);
    bool changed = false;
#pragma unroll
    for (uint32_t k = 0; k < kSmallBoxesPerThread; k++) {
      unsigned long long hit = 0;
#pragma unroll
      for (uint32_t w = 0; w < kSmallWords; w++)
        hit |= suppressors[k][w] & kept_words[w];
      const uint32_t next = __ballot_sync(kFullWarp, takes_part[k] && hit == 0);
      const uint32_t word = k * kSmallWarps + warp;
      if (lane == 0) kept[cur ^ 1][word] = next;
      changed = changed || next != kept[cur][word];
    }
    // kept[cur ^ 1] complete; every read of kept[cur] came before, so the
    // next sweep may write it
    settled = !__syncthreads_or(lane == 0 && changed);
  }

  // The output positions: each kept box's flag at its rank (the ranks are
  // distinct, so no two threads write one byte, where bits set with atomics
  // would queue on 16 words), the flags as bits, then the kept bits below
  // each kept box's rank counted.
  bool keep[kSmallBoxesPerThread];
#pragma unroll
  for (uint32_t k = 0; k < kSmallBoxesPerThread; k++) {
    const uint32_t b = tid + k * kSmallThreads;
    keep[k] = (kept[cur][b / 32] >> lane) & 1u;
    if (keep[k]) kept_at_rank[rank[k]] = 1;
  }
  // kept_at_rank complete
  __syncthreads();
#pragma unroll
  for (uint32_t k = 0; k < kSmallBoxesPerThread; k++) {
    const uint32_t bits =
        __ballot_sync(kFullWarp, kept_at_rank[tid + k * kSmallThreads] != 0);
    if (lane == 0) kept_by_rank[k * kSmallWarps + warp] = bits;
  }
  // kept_by_rank complete
  __syncthreads();
  uint32_t total = 0;
  for (uint32_t w = 0; w < kSmallBitWords; w++)
    total += __popc(kept_by_rank[w]);
  const uint32_t count = total < limit ? total : limit;
#pragma unroll
  for (uint32_t k = 0; k < kSmallBoxesPerThread; k++) {
    if (!keep[k]) continue;
    const uint32_t b = tid + k * kSmallThreads;
    const uint32_t r = rank[k];
    uint32_t position = __popc(kept_by_rank[r / 32] & ((1u << (r % 32)) - 1));
    for (uint32_t w = 0; w < r / 32; w++) position += __popc(kept_by_rank[w]);
    if (position >= count) continue;
    uint32_t *dst = call.out + (size_t)position * record_words;
#pragma unroll
    for (uint32_t w = 0; w < P3DC_BOX3D_SIZE / 4; w++)
      if (w < record_words) dst[w] = record[k][w];
    if (call.kept_index != nullptr) call.kept_index[position] = (int32_t)b;
  }
  if (tid == 0) *call.out_count = count;
}

}  // namespace p3dc_nms

#endif  // P3DC_NMS_SMALL_CUH
