// The first stage of nms.cu: the boxes that take part, in score order, as
// the per-box data of the pair test (nms_item.h), and their number m, both
// on the device.  A record that is dropped (nms.h) gets the key that sorts
// last; the kept records, in (key, input index) order, are the stable sort
// by score; the first min (kept, pre_max) become items[], and order[] maps
// them back to their input index.
//
// Both ways also zero the counts of the pair lists (nms_common.cuh) that
// the mask kernel adds to, where the workspace has them (NULL otherwise),
// and the first kernel publishes the call's outputs and fills them
// (nms_common.cuh: publish_call): the first kernel of a call runs after the
// previous call's reduction, the last reader of both.
//
// Up to kRankCapacity boxes: one kernel, rank_kernel, which ranks every box
// by counting the boxes before it, on as many blocks as the capacity needs
// and doing only the work the device count asks for (a block whose boxes are
// past the count returns at once).  Above: the keys and indices of the
// whole capacity (key_kernel), sorted by chunks (nms_chunk_sort.cuh) up to
// kChunkSortCapacity boxes where a block can stage the keys, the chunks
// below the count only, else by CUB's DeviceRadixSort over the whole
// capacity (its count is a host value), and the items in their order
// (item_kernel).
#ifndef P3DC_NMS_SORT_CUH
#define P3DC_NMS_SORT_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "nms_common.cuh"
#include "nms_grid.cuh"
#include "nms_item.h"

namespace p3dc_nms {

// The largest capacity rank_kernel handles: its keys fill 16 KB of shared
// memory, and every block reads every record, so that the traffic grows
// with the square of the count (4096 boxes: 128 blocks x 147 KB from L2).
constexpr uint32_t kRankCapacity = 4096;
// 16 warps a block keep twice the records of 8 in flight.  32 make the
// kernel faster but the whole call slower (docs/performance.md), perhaps
// because the mask kernel, a programmatic dependent, finds fewer free slots
// beside 1024-thread blocks; that was not measured.
constexpr uint32_t kRankThreads = 512;
constexpr uint32_t kRankWarps = kRankThreads / 32;
// boxes ranked per block: one per lane; each of the 16 warps counts a
// sixteenth of the keys for all 32
constexpr uint32_t kRankBoxes = 32;

// A box's rank is the number of kept boxes before it in (key, input index)
// order; the ranks of the kept boxes are 0 .. kept - 1, so the box of rank r
// is the r-th of the stable sort, and writing it to items[r] is the sort.
// Why ranks rather than a radix sort: at detector sizes (4096 boxes) the
// 16.7 M comparisons of two instructions spread over 128 blocks, while a
// one-block radix sort is 8 passes with their barriers and 8 rounds of
// gathers in series; at 500 boxes, 16 blocks and 32 keys a warp.
__global__ void __launch_bounds__(kRankThreads)
    rank_kernel(P3dcNmsMode mode, const void *__restrict__ boxes,
                const uint32_t *__restrict__ n_boxes_device, uint32_t capacity,
                float score_threshold, uint32_t limit, float offset,
                P3dcNmsItem *__restrict__ items, uint32_t *__restrict__ order,
                uint32_t *__restrict__ item_count,
                uint2 *__restrict__ pair_counts, CallOutput call,
                CallOutput *__restrict__ published) {
  __shared__ __align__(16) uint32_t keys[kRankCapacity];
  __shared__ uint32_t before_by_warp[kRankWarps][kRankBoxes];
  __shared__ uint32_t valid_by_warp[kRankWarps];
  const uint32_t lane = threadIdx.x & 31;
  const uint32_t warp = threadIdx.x >> 5;
  p3dc_allow_next_kernel();
  p3dc_wait_for_previous_kernel();
  // by every block, before any returns
  publish_call(call, published);
  uint32_t n = p3dc_load_after_wait(n_boxes_device);
  if (n > capacity) n = capacity;
  const uint32_t first = blockIdx.x * kRankBoxes;
  // block 0 always runs: it writes the count, 0 included
  if (blockIdx.x > 0 && first >= n) return;
  // the positions a block ranks: every position below the count is some
  // running block's
  if (pair_counts != nullptr && threadIdx.x < kRankBoxes &&
      first + threadIdx.x < n)
    pair_counts[first + threadIdx.x] = make_uint2(0, 0);

  // every block computes every key: 8 records a thread at 4096 boxes, so
  // several are kept in flight
  uint32_t valid = 0;
#pragma unroll 4
  for (uint32_t i = threadIdx.x; i < n; i += kRankThreads) {
    const uint32_t key = p3dc_nms_record_key(mode, boxes, i, score_threshold);
    keys[i] = key;
    valid += key != P3DC_NMS_KEY_DROPPED;
  }
  // the keys up to a multiple of 4, which the warps read 4 at a time: dropped
  // (kRankCapacity is a multiple of 4)
  const uint32_t n4 = (n + 3) & ~3u;
  if (threadIdx.x < n4 - n) keys[n + threadIdx.x] = P3DC_NMS_KEY_DROPPED;
  for (uint32_t offset_lanes = 16; offset_lanes > 0; offset_lanes >>= 1)
    valid += __shfl_xor_sync(kFullWarp, valid, offset_lanes);
  if (lane == 0) valid_by_warp[warp] = valid;
  // keys[] and valid_by_warp[] complete
  __syncthreads();

  // Warp w counts, for each of the block's boxes (lane = box), the keys in
  // its sixteenth [lo, hi) that come first.  The loop bounds are the same for
  // the whole warp, so every load is a broadcast, of 4 keys: the bounds are
  // multiples of 4 (the block's boxes start at a multiple of 32), and the
  // keys from n up to n4 are dropped ones, which come first for no kept box.
  // A key before the block's boxes has a lower index: equal counts; after
  // them: only lower counts; among them, compare the indices.  A dropped
  // box's key sorts after every kept key, so it never counts for a kept box
  // (and a dropped box's own rank is not used).
  const uint32_t i = first + lane;
  const uint32_t key = i < n ? keys[i] : P3DC_NMS_KEY_DROPPED;
  const uint32_t share = ((n4 + kRankWarps - 1) / kRankWarps + 3) & ~3u;
  const uint32_t lo = min(warp * share, n4);
  const uint32_t hi = min(lo + share, n4);
  const uint32_t own_end = first + kRankBoxes;
  const uint4 *const keys4 = reinterpret_cast<const uint4 *>(keys);
  uint32_t before = 0;
  for (uint32_t j = lo; j < min(hi, first); j += 4) {
    const uint4 k = keys4[j / 4];
    before += (k.x <= key) + (k.y <= key) + (k.z <= key) + (k.w <= key);
  }
  for (uint32_t j = max(lo, first); j < min(hi, own_end); j += 4) {
    const uint4 k = keys4[j / 4];
    before += (k.x < key || (k.x == key && j < i)) +
              (k.y < key || (k.y == key && j + 1 < i)) +
              (k.z < key || (k.z == key && j + 2 < i)) +
              (k.w < key || (k.w == key && j + 3 < i));
  }
  for (uint32_t j = max(lo, own_end); j < hi; j += 4) {
    const uint4 k = keys4[j / 4];
    before += (k.x < key) + (k.y < key) + (k.z < key) + (k.w < key);
  }
  before_by_warp[warp][lane] = before;
  // before_by_warp[][] complete
  __syncthreads();

  if (warp == 0) {
    uint32_t rank = 0;
    for (uint32_t w = 0; w < kRankWarps; w++) rank += before_by_warp[w][lane];
    if (key != P3DC_NMS_KEY_DROPPED && rank < limit) {
      P3dcNmsItem item;
      p3dc_nms_item_set(&item, mode, boxes, i, offset);
      items[rank] = item;
      order[rank] = i;
    }
    if (blockIdx.x == 0 && lane == 0) {
      uint32_t kept = 0;
      for (uint32_t w = 0; w < kRankWarps; w++) kept += valid_by_warp[w];
      *item_count = kept < limit ? kept : limit;
    }
  }
}

// Also writes the call's count, clamped to the capacity, to @sort_count for
// the sort's kernels and item_kernel, and resets the grid's bounds and
// zeroes its cell counts (nms_grid.cuh), where the call goes through the
// grid (@bounds not NULL).
__global__ void key_kernel(P3dcNmsMode mode, const void *__restrict__ boxes,
                           const uint32_t *__restrict__ n_boxes_device,
                           uint32_t capacity, float score_threshold,
                           uint32_t *__restrict__ keys,
                           uint32_t *__restrict__ indices,
                           uint32_t *__restrict__ sort_count,
                           GridBounds *__restrict__ bounds,
                           uint32_t *__restrict__ cell_counts, CallOutput call,
                           CallOutput *__restrict__ published) {
  p3dc_allow_next_kernel();
  p3dc_wait_for_previous_kernel();
  publish_call(call, published);
  uint32_t n = p3dc_load_after_wait(n_boxes_device);
  if (n > capacity) n = capacity;
  const uint32_t first = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t stride = gridDim.x * blockDim.x;
  if (first == 0) *sort_count = n;
  // the whole capacity: CUB's sort takes all of it, and the chunk sort's
  // chunk that holds position n sorts the dropped keys after n too
  for (uint32_t i = first; i < capacity; i += stride) {
    keys[i] = i < n ? p3dc_nms_record_key(mode, boxes, i, score_threshold)
                    : P3DC_NMS_KEY_DROPPED;
    indices[i] = i;
  }
  if (bounds == nullptr) return;
  if (first == 0) bounds_reset(bounds);
  for (uint32_t c = first; c < kGridCells; c += stride) cell_counts[c] = 0;
}

// After the device sort, which wrote @indices (the order) of the first
// *@sort_count keys (key_kernel's count; the sort by chunks leaves an
// earlier call's keys past it): @limit is pre_max (or the capacity).  The
// one thread at the end of the kept prefix writes its length.  Where the
// call goes through the grid (@bounds not NULL), the items' points are
// gathered into its bounds (nms_grid.cuh).  The boxes are the call's, as
// key_kernel published them (@call), so that a call in other buffers sets
// only the first kernel's node of a graph.
__global__ void item_kernel(P3dcNmsPairTest test, const CallOutput *call,
                            const uint32_t *keys, const uint32_t *indices,
                            const uint32_t *sort_count, uint32_t limit,
                            P3dcNmsItem *items, uint32_t *item_count,
                            uint2 *pair_counts, GridBounds *bounds) {
  p3dc_allow_next_kernel();
  p3dc_wait_for_previous_kernel();
  const void *boxes = call->boxes;
  const uint32_t n = p3dc_load_after_wait(sort_count);
  const uint32_t end = min(n, limit);
  const uint32_t first = blockIdx.x * blockDim.x + threadIdx.x;
  BoundsPart part;
  // the positions below the count, as rank_kernel's are: the pair lists of
  // the items at most
  for (uint32_t i = first; i < n; i += gridDim.x * blockDim.x) {
    if (pair_counts != nullptr) pair_counts[i] = make_uint2(0, 0);
    const bool here = i < end && keys[i] != P3DC_NMS_KEY_DROPPED;
    const bool next = i + 1 < end && keys[i + 1] != P3DC_NMS_KEY_DROPPED;
    if (here) {
      P3dcNmsItem item;
      p3dc_nms_item_set(&item, test.mode, boxes, indices[i], test.offset);
      items[i] = item;
      if (bounds != nullptr) part.add(grid_point(item, test));
    }
    if (here && !next) *item_count = i + 1;
    if (i == 0 && !here) *item_count = 0;
  }
  if (first == 0 && n == 0) *item_count = 0;
  // every lane of the warp leaves the loop (it has no early exit)
  if (bounds != nullptr) bounds_publish(part, bounds);
}

}  // namespace p3dc_nms

#endif  // P3DC_NMS_SORT_CUH
