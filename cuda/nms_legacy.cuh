// The previous design of nms.cu's three stages, as measured on the H100
// (docs: brief results, bench-nms.md): a one-block radix sort up to 4096
// boxes, mask kernels of one 64-thread block per tile, and a reduction that
// takes one step of two barriers and a round trip to global memory per
// 64-box tile.  Kept so that the benchmark can time each new stage against
// the old one in the same run (p3d_nms_cuda_variant, nms-private.h) and so
// that a stage can fall back to it; to be deleted once the new stages have
// been measured.  Each kernel now also waits for the previous one before
// touching global memory (nms_common.cuh), and the mask kernels zero the
// output as the new ones do.
#ifndef P3D_NMS_LEGACY_CUH
#define P3D_NMS_LEGACY_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>

#include "nms_common.cuh"
#include "nms_item.h"

namespace p3d_nms {
namespace legacy {

// The largest capacities sort_small_kernel<256, 4> and <512, 8> handle.
constexpr uint32_t kTinyCapacity = 256 * 4;
constexpr uint32_t kSmallCapacity = 512 * 8;

// The whole first stage in one block (CUB's BlockRadixSort, which is
// stable): every slot of the capacity gets its record's sort key, or the key
// that sorts last; the first min (kept, limit) sorted slots become items.
template <uint32_t kBlockThreads, uint32_t kItemsPerThread>
__global__ void __launch_bounds__(kBlockThreads)
    sort_small_kernel(P3dNmsMode mode, const void *__restrict__ boxes,
                      const uint32_t *__restrict__ n_boxes_device,
                      uint32_t capacity, float score_threshold, uint32_t limit,
                      float offset, P3dNmsItem *__restrict__ items,
                      uint32_t *__restrict__ order,
                      uint32_t *__restrict__ item_count) {
  using Sort =
      cub::BlockRadixSort<uint32_t, kBlockThreads, kItemsPerThread, uint32_t>;
  __shared__ typename Sort::TempStorage storage;
  allow_next_kernel();
  wait_for_previous_kernel();
  uint32_t n = *n_boxes_device;
  if (n > capacity) n = capacity;

  // blocked arrangement: thread t holds slots t * kItemsPerThread + k, in and
  // out of the sort
  uint32_t keys[kItemsPerThread], indices[kItemsPerThread];
  for (uint32_t k = 0; k < kItemsPerThread; k++) {
    const uint32_t i = threadIdx.x * kItemsPerThread + k;
    keys[k] = i < n ? p3d_nms_record_key(mode, boxes, i, score_threshold)
                    : P3D_NMS_KEY_DROPPED;
    indices[k] = i;
  }
  Sort(storage).Sort(keys, indices);

  // the kept slots are a prefix: m is how many there are
  uint32_t m = 0;
  for (uint32_t k = 0; k < kItemsPerThread; k++) {
    const uint32_t i = threadIdx.x * kItemsPerThread + k;
    const bool here = i < limit && keys[k] != P3D_NMS_KEY_DROPPED;
    if (here) {
      P3dNmsItem item;
      p3d_nms_item_set(&item, mode, boxes, indices[k], offset);
      items[i] = item;
      order[i] = indices[k];
    }
    m += __syncthreads_count(here);
  }
  if (threadIdx.x == 0) *item_count = m;
}

// Mask kernels: bit k of mask[i * words + c] for sorted box i and box
// c * 64 + k, upper triangle only (as nms_mask.cuh).

// A column box of the direct kernel in shared memory, packed into the fewest
// vector loads: the inner loop reads one per pair, so its loads, not its
// arithmetic, would bound it otherwise.  Axis-aligned: (x1, y1, x2, y2) and
// (area, label); circle: (x, y, label).  Unpacking gives back the very item.
template <P3dNmsMode kMode>
struct PackedColumn {
  float4 a;
  float2 b;

  __device__ __forceinline__ void pack(const P3dNmsItem &item) {
    if (kMode == P3D_NMS_CIRCLE) {
      a = make_float4(item.shape.centre[0], item.shape.centre[1],
                      __int_as_float(item.label), 0.0f);
    } else {
      a = make_float4(item.shape.aligned.x1, item.shape.aligned.y1,
                      item.shape.aligned.x2, item.shape.aligned.y2);
      b = make_float2(item.shape.aligned.area, __int_as_float(item.label));
    }
  }

  __device__ __forceinline__ P3dNmsItem unpack() const {
    P3dNmsItem item;
    if (kMode == P3D_NMS_CIRCLE) {
      const float4 v = a;
      item.shape.centre[0] = v.x;
      item.shape.centre[1] = v.y;
      item.label = __float_as_int(v.z);
    } else {
      const float4 v = a;
      const float2 w = b;
      item.shape.aligned.x1 = v.x;
      item.shape.aligned.y1 = v.y;
      item.shape.aligned.x2 = v.z;
      item.shape.aligned.y2 = v.w;
      item.shape.aligned.area = w.x;
      item.label = __float_as_int(w.y);
    }
    return item;
  }
};

// Pair tests cheap enough to run on all 64 x 64 pairs of a tile directly:
// axis-aligned IoU and centre distance.  One thread per row box, the column
// boxes in shared memory.
template <P3dNmsMode kMode>
__global__ void __launch_bounds__(kTile)
    mask_direct_kernel(const P3dNmsItem *__restrict__ items,
                       const uint32_t *__restrict__ item_count,
                       P3dNmsPairTest test,
                       unsigned long long *__restrict__ mask, OutputFill fill) {
  __shared__ PackedColumn<kMode> columns[kTile];
  allow_next_kernel();
  wait_for_previous_kernel();
  fill_output(fill);
  const uint32_t m = *item_count;
  const uint32_t words = (m + kTile - 1) / kTile;
  const uint32_t tiles = words * (words + 1) / 2;
  // lets the compiler drop the other modes from the inlined pair test
  test.mode = kMode;

  for (uint32_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    uint32_t row_tile, col_tile;
    triangle_tile(t, &row_tile, &col_tile);
    const uint32_t j = col_tile * kTile + threadIdx.x;
    if (j < m) columns[threadIdx.x].pack(items[j]);
    __syncthreads();

    const uint32_t i = row_tile * kTile + threadIdx.x;
    if (i < m) {
      const P3dNmsItem row = items[i];
      const uint32_t remaining = m - col_tile * kTile;
      const uint32_t count = remaining < kTile ? remaining : kTile;
      const uint32_t first = row_tile == col_tile ? threadIdx.x + 1 : 0;
      unsigned long long bits = 0;
      for (uint32_t k = first; k < count; k++) {
        const P3dNmsItem column = columns[k].unpack();
        if (p3d_nms_item_suppresses(&test, &row, &column)) bits |= 1ull << k;
      }
      mask[(size_t)i * words + col_tile] = bits;
    }
    __syncthreads();
  }
}

// Rotated IoU is a polygon clip, far dearer than the bounding-circle test
// that rejects most pairs; run per thread, a warp would pay the clip for a
// column whenever any of its 32 rows needed it.  So each tile is done in two
// passes: the circle test on all pairs, compacting the survivors into a list
// in shared memory, then the exact test on the list, one pair per thread.
__global__ void __launch_bounds__(kTile)
    mask_rotated_kernel(const P3dNmsItem *__restrict__ items,
                        const uint32_t *__restrict__ item_count,
                        P3dNmsPairTest test,
                        unsigned long long *__restrict__ mask,
                        OutputFill fill) {
  __shared__ P3dNmsItem rows[kTile];
  __shared__ P3dNmsItem columns[kTile];
  __shared__ unsigned long long row_bits[kTile];
  // a pair as row * 64 + column
  __shared__ uint16_t pairs[kTile * kTile];
  __shared__ uint32_t warp_totals[kTile / 32];
  allow_next_kernel();
  wait_for_previous_kernel();
  fill_output(fill);
  const uint32_t m = *item_count;
  const uint32_t words = (m + kTile - 1) / kTile;
  const uint32_t tiles = words * (words + 1) / 2;
  const uint32_t lane = threadIdx.x & 31;
  const uint32_t warp = threadIdx.x >> 5;
  test.mode = P3D_NMS_BEV_ROTATED;

  for (uint32_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    uint32_t row_tile, col_tile;
    triangle_tile(t, &row_tile, &col_tile);
    const uint32_t i = row_tile * kTile + threadIdx.x;
    const uint32_t j = col_tile * kTile + threadIdx.x;
    if (i < m) rows[threadIdx.x] = items[i];
    if (j < m) columns[threadIdx.x] = items[j];
    row_bits[threadIdx.x] = 0;
    __syncthreads();

    // pass 1: the pairs whose bounding circles meet (and labels match)
    unsigned long long candidates = 0;
    if (i < m) {
      const P3dNmsItem *row = &rows[threadIdx.x];
      const uint32_t remaining = m - col_tile * kTile;
      const uint32_t count = remaining < kTile ? remaining : kTile;
      const uint32_t first = row_tile == col_tile ? threadIdx.x + 1 : 0;
      for (uint32_t k = first; k < count; k++) {
        const P3dNmsItem *column = &columns[k];
        if ((!test.per_class || row->label == column->label) &&
            p3d_bev_rect_may_overlap(&row->shape.rect, &column->shape.rect))
          candidates |= 1ull << k;
      }
    }
    // offsets of each row's pairs in the list: a scan over the two warps
    const uint32_t own = __popcll(candidates);
    uint32_t inclusive = own;
    for (uint32_t offset = 1; offset < 32; offset <<= 1) {
      const uint32_t up = __shfl_up_sync(0xffffffffu, inclusive, offset);
      if (lane >= offset) inclusive += up;
    }
    if (lane == 31) warp_totals[warp] = inclusive;
    __syncthreads();
    uint32_t position = inclusive - own + (warp > 0 ? warp_totals[0] : 0);
    const uint32_t total = warp_totals[0] + warp_totals[1];
    while (candidates != 0) {
      const uint32_t k = __ffsll((long long)candidates) - 1;
      candidates &= candidates - 1;
      pairs[position++] = (uint16_t)(threadIdx.x * kTile + k);
    }
    __syncthreads();

    // pass 2: the exact test, which repeats the circle test, so that a pair
    // gets the very answer the reference computes
    for (uint32_t p = threadIdx.x; p < total; p += kTile) {
      const uint32_t r = pairs[p] / kTile;
      const uint32_t k = pairs[p] % kTile;
      if (p3d_nms_item_suppresses(&test, &rows[r], &columns[k]))
        atomicOr(&row_bits[r], 1ull << k);
    }
    __syncthreads();
    if (i < m) mask[(size_t)i * words + col_tile] = row_bits[threadIdx.x];
    __syncthreads();
  }
}

// The greedy keep-reduction, one block walking the 64-box tiles in score
// order.  Tile t's boxes are decided by warp 0 from removed[t] and the
// tile's diagonal words; warp 0 carries its kept boxes into column t + 1
// itself, and the other 31 warps OR them into columns t + 2 and on during
// the next step.  One barrier and one round of global loads per tile.

constexpr uint32_t kReduceThreads = 1024;
constexpr uint32_t kMaxWords = P3D_NMS_MAX_CAPACITY / kTile;
static_assert(kMaxWords <= kReduceThreads, "one thread per tile in the scan");

// Warp 0's words for tile t: lane l holds rows t * 64 + l (lo) and
// t * 64 + 32 + l (hi); diag is their word of column t, next of column t + 1.
// Zero where there is no such row or column.
struct TileWords {
  unsigned long long diag_lo, diag_hi, next_lo, next_hi;
};

__device__ __forceinline__ TileWords
load_tile(const unsigned long long *__restrict__ mask, uint32_t m,
          uint32_t words, uint32_t t, uint32_t lane) {
  TileWords tile = {0, 0, 0, 0};
  if (t >= words) return tile;
  const uint32_t row_lo = t * kTile + lane;
  const uint32_t row_hi = row_lo + 32;
  if (row_lo < m) {
    const unsigned long long *row = mask + (size_t)row_lo * words;
    tile.diag_lo = row[t];
    if (t + 1 < words) tile.next_lo = row[t + 1];
  }
  if (row_hi < m) {
    const unsigned long long *row = mask + (size_t)row_hi * words;
    tile.diag_hi = row[t];
    if (t + 1 < words) tile.next_hi = row[t + 1];
  }
  return tile;
}

// @order maps sorted positions to input indices; @boxes and @out are records
// of @record_words 32-bit words; @limit = min (post_max, out_capacity).
__global__ void __launch_bounds__(kReduceThreads, 1) reduce_tiled_kernel(
    const unsigned long long *__restrict__ mask,
    const uint32_t *__restrict__ item_count, const uint32_t *__restrict__ order,
    const uint32_t *__restrict__ boxes, uint32_t record_words, uint32_t limit,
    uint32_t *__restrict__ out, uint32_t out_capacity,
    uint32_t *__restrict__ out_count, int32_t *__restrict__ kept_index) {
  using Scan = cub::BlockScan<uint32_t, kReduceThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ unsigned long long removed[kMaxWords];
  __shared__ unsigned long long keep[kMaxWords];
  // double-buffered by step parity: written in step t, read in step t + 1
  __shared__ uint32_t kept_rows[2][kTile];
  __shared__ uint32_t kept_total[2];

  const uint32_t tid = threadIdx.x;
  const uint32_t lane = tid & 31;
  const uint32_t warp = tid >> 5;
  allow_next_kernel();
  wait_for_previous_kernel();
  const uint32_t m = *item_count;
  const uint32_t words = (m + kTile - 1) / kTile;

  for (uint32_t c = tid; c < kMaxWords; c += kReduceThreads) {
    removed[c] = 0;
    keep[c] = 0;
  }
  __syncthreads();

  TileWords tile = {0, 0, 0, 0};
  unsigned long long carry = 0;  // tile t - 1's kept boxes' OR of column t
  uint32_t kept_so_far = 0;
  if (warp == 0 && limit > 0) tile = load_tile(mask, m, words, 0, lane);

  for (uint32_t t = 0; t < words && limit > 0; t++) {
    if (warp == 0) {
      const TileWords ahead = load_tile(mask, m, words, t + 1, lane);
      unsigned long long candidates = ~(removed[t] | carry) & tile_boxes(m, t);
      unsigned long long kept = 0;
      // lowest first: a box's suppressions are applied before any later box
      // of the tile is looked at
      while (candidates != 0) {
        const uint32_t b = __ffsll((long long)candidates) - 1;
        const unsigned long long bit = 1ull << b;
        const unsigned long long row = __shfl_sync(
            kFullWarp, b < 32 ? tile.diag_lo : tile.diag_hi, b & 31);
        kept |= bit;
        candidates &= ~(row | bit);
      }

      unsigned long long contribution =
          (((kept >> lane) & 1ull) ? tile.next_lo : 0ull) |
          (((kept >> (lane + 32)) & 1ull) ? tile.next_hi : 0ull);
      for (uint32_t offset = 16; offset > 0; offset >>= 1)
        contribution |= __shfl_xor_sync(kFullWarp, contribution, offset);
      carry = contribution;

      if ((kept >> lane) & 1ull)
        kept_rows[t & 1][__popcll(kept & ((1ull << lane) - 1))] =
            t * kTile + lane;
      if ((kept >> (lane + 32)) & 1ull)
        kept_rows[t & 1][__popcll(kept & ((1ull << (lane + 32)) - 1))] =
            t * kTile + lane + 32;
      kept_so_far += __popcll(kept);
      if (lane == 0) {
        keep[t] = kept;
        kept_total[t & 1] = kept_so_far;
      }
      tile = ahead;
    } else if (t > 0) {
      // the bulk: tile t - 1's kept boxes into columns t + 1 and on; one
      // thread per (column, group of kept rows), so that the loads of a
      // thread are independent and the columns coalesce
      const unsigned long long kept = keep[t - 1];
      const uint32_t n_kept = __popcll(kept);
      const uint32_t first = t + 1;
      if (n_kept > 0 && first < words) {
        const uint32_t columns = words - first;
        const uint32_t workers = kReduceThreads - 32;
        uint32_t groups = workers / columns;
        if (groups == 0) groups = 1;
        if (groups > n_kept) groups = n_kept;
        const uint32_t *rows = kept_rows[(t - 1) & 1];
        for (uint32_t p = tid - 32; p < columns * groups; p += workers) {
          const uint32_t c = first + p % columns;
          unsigned long long acc = 0;
          for (uint32_t q = p / columns; q < n_kept; q += groups)
            acc |= mask[(size_t)rows[q] * words + c];
          if (acc != 0) atomicOr(&removed[c], acc);
        }
      }
    }
    __syncthreads();
    if (kept_total[t & 1] >= limit) break;
  }

  // output: kept boxes in sorted order, at the positions a scan of the
  // per-tile counts gives
  const uint32_t ones = tid < words ? __popcll(keep[tid]) : 0;
  uint32_t before, total;
  Scan(scan_storage).ExclusiveSum(ones, before, total);
  const uint32_t count = total < limit ? total : limit;
  if (tid < words) {
    unsigned long long bits = keep[tid];
    for (uint32_t position = before; bits != 0 && position < count;
         position++) {
      const uint32_t b = __ffsll((long long)bits) - 1;
      bits &= bits - 1;
      const uint32_t index = order[tid * kTile + b];
      const uint32_t *src = boxes + (size_t)index * record_words;
      uint32_t *dst = out + (size_t)position * record_words;
      for (uint32_t w = 0; w < record_words; w++) dst[w] = src[w];
      if (kept_index != nullptr) kept_index[position] = (int32_t)index;
    }
  }
  const size_t total_words = (size_t)out_capacity * record_words;
  for (size_t w = (size_t)count * record_words + tid; w < total_words;
       w += kReduceThreads)
    out[w] = 0;
  if (kept_index != nullptr) {
    for (uint32_t p = count + tid; p < out_capacity; p += kReduceThreads)
      kept_index[p] = -1;
  }
  if (tid == 0) *out_count = count;
}

}  // namespace legacy
}  // namespace p3d_nms

#endif  // P3D_NMS_LEGACY_CUH
