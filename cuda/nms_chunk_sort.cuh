// The sort of nms_sort.cuh's keys for workspaces of kRankCapacity + 1 to
// kChunkSortCapacity boxes, in place of CUB's device radix sort, which
// takes about 68 us for 20000 pairs on the H200 (docs/performance.md): at
// these sizes its passes are round trips between blocks, not bytes.
//
// Two kernels over the call's count n, as key_kernel clamped it and left it
// in the workspace (@sort_count), launched for the whole capacity (a graph's
// nodes do not change from call to call) with the blocks past n returning
// at once:
//  1. chunk_sort_kernel: each block sorts one chunk of kChunkBoxes
//     neighbouring keys with their indices in shared memory (CUB's block
//     radix sort, stable), in place;
//  2. chunk_merge_kernel: each of the first n keys finds its rank in the
//     sort of the first n, its position in its own chunk plus, in every
//     other chunk, the number of keys that sort before it, by binary search
//     over the n keys staged in shared memory, and is written there with
//     its index.
// A chunk holds neighbouring input indices, so a key of an earlier chunk
// sorts before an equal one of a later chunk: in an earlier chunk the keys
// before (key, index) are those <= key, in a later one those < key.  So the
// order is (key, input index), the stable sort's, and every key has a rank
// of its own.  The indices key_kernel writes are the input indices (this
// sort relies on it).  The chunk that holds position n also holds the keys
// from n to its end, which key_kernel wrote as dropped: those take the
// largest key and the highest indices, so the stable sort puts them last,
// and the chunk's first n - base positions are its keys below n.  The
// padding past the capacity, in the last chunk, is the same.  Past n the
// sorted keys are an earlier call's: nothing reads them (item_kernel stops
// at n).
#ifndef P3DC_NMS_CHUNK_SORT_CUH
#define P3DC_NMS_CHUNK_SORT_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include <cub/block/block_radix_sort.cuh>

#include "launch.cuh"

namespace p3dc_nms {

constexpr uint32_t kChunkThreads = 1024;
constexpr uint32_t kChunkItems = 2;
constexpr uint32_t kChunkBoxes = kChunkThreads * kChunkItems;
// the merge stages every key in shared memory: 128 KB at this capacity
constexpr uint32_t kChunkSortCapacity = 32768;
constexpr uint32_t kMergeThreads = 1024;

// Shared memory chunk_merge_kernel takes for @capacity keys.
constexpr size_t chunk_merge_shared_bytes(uint32_t capacity) {
  return (size_t)capacity * sizeof(uint32_t);
}

// @keys and @indices, @capacity of them, each chunk that starts below
// *@sort_count sorted in place.
__global__ void __launch_bounds__(kChunkThreads)
    chunk_sort_kernel(uint32_t *keys, uint32_t *indices, uint32_t capacity,
                      const uint32_t *sort_count) {
  using Sort =
      cub::BlockRadixSort<uint32_t, kChunkThreads, kChunkItems, uint32_t>;
  __shared__ typename Sort::TempStorage storage;
  p3dc_allow_next_kernel();
  p3dc_wait_for_previous_kernel();
  // a chunk past the count holds dropped keys only, which nothing reads;
  // the whole block returns, before the sort's barriers
  if (blockIdx.x * kChunkBoxes >= p3dc_load_after_wait(sort_count)) return;
  // blocked: thread t holds the chunk's keys t * kChunkItems on, as the
  // sort leaves its ranks
  const uint32_t first = blockIdx.x * kChunkBoxes + threadIdx.x * kChunkItems;
  uint32_t key[kChunkItems], index[kChunkItems];
#pragma unroll
  for (uint32_t k = 0; k < kChunkItems; k++) {
    const uint32_t i = first + k;
    key[k] = i < capacity ? keys[i] : 0xffffffffu;
    index[k] = i < capacity ? indices[i] : i;
  }
  Sort(storage).Sort(key, index);
#pragma unroll
  for (uint32_t k = 0; k < kChunkItems; k++) {
    const uint32_t i = first + k;
    if (i < capacity) {
      keys[i] = key[k];
      indices[i] = index[k];
    }
  }
}

// The number of the @n keys at @chunk that sort before a key @key of a
// later chunk (@before_equal: those <= @key) or of an earlier one (< @key).
__device__ __forceinline__ uint32_t keys_before(const uint32_t *chunk,
                                                uint32_t n, uint32_t key,
                                                bool before_equal) {
  uint32_t low = 0, high = n;
  while (low < high) {
    const uint32_t mid = (low + high) / 2;
    const uint32_t v = chunk[mid];
    if (before_equal ? v <= key : v < key)
      low = mid + 1;
    else
      high = mid;
  }
  return low;
}

// The first *@sort_count of @keys and @indices, sorted by chunk
// (chunk_sort_kernel), into @keys_out and @indices_out, sorted whole.
// Dynamic shared memory: chunk_merge_shared_bytes (capacity).
__global__ void __launch_bounds__(kMergeThreads)
    chunk_merge_kernel(const uint32_t *keys, const uint32_t *indices,
                       const uint32_t *sort_count, uint32_t *keys_out,
                       uint32_t *indices_out) {
  extern __shared__ uint32_t staged[];
  p3dc_allow_next_kernel();
  p3dc_wait_for_previous_kernel();
  const uint32_t n = p3dc_load_after_wait(sort_count);
  // the whole block, before its barrier
  if (blockIdx.x * kMergeThreads >= n) return;
  for (uint32_t i = threadIdx.x; i < n; i += kMergeThreads) staged[i] = keys[i];
  __syncthreads();
  const uint32_t i = blockIdx.x * kMergeThreads + threadIdx.x;
  if (i >= n) return;
  const uint32_t own = i / kChunkBoxes;
  const uint32_t chunks = (n + kChunkBoxes - 1) / kChunkBoxes;
  const uint32_t key = staged[i];
  uint32_t rank = i - own * kChunkBoxes;
  for (uint32_t c = 0; c < chunks; c++) {
    if (c == own) continue;
    const uint32_t base = c * kChunkBoxes;
    rank +=
        keys_before(staged + base, min(kChunkBoxes, n - base), key, c < own);
  }
  keys_out[rank] = key;
  indices_out[rank] = indices[i];
}

}  // namespace p3dc_nms

#endif  // P3DC_NMS_CHUNK_SORT_CUH
