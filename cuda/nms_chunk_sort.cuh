// The sort of nms_sort.cuh's keys for workspaces of kRankCapacity + 1 to
// kChunkSortCapacity boxes, in place of CUB's device radix sort, which
// takes about 68 us for 20000 pairs on the H200 (docs/performance.md): at
// these sizes its passes are round trips between blocks, not bytes.
//
// Two kernels over the whole capacity, as CUB's sort is:
//  1. chunk_sort_kernel: each block sorts one chunk of kChunkBoxes
//     neighbouring keys with their indices in shared memory (CUB's block
//     radix sort, stable), in place;
//  2. chunk_merge_kernel: each key finds its rank in the whole sort, its
//     position in its own chunk plus, in every other chunk, the number of
//     keys that sort before it, by binary search over all the keys staged in
//     shared memory, and is written there with its index.
// A chunk holds neighbouring input indices, so a key of an earlier chunk
// sorts before an equal one of a later chunk: in an earlier chunk the keys
// before (key, index) are those <= key, in a later one those < key.  So the
// order is (key, input index), the stable sort's, and every key has a rank
// of its own.  The indices key_kernel writes are the input indices (this
// sort relies on it), and the padding past the capacity, in the last
// chunk, takes the largest key and sorts after every key of the chunk.
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

// @keys and @indices, @capacity of them, each chunk sorted in place.
__global__ void __launch_bounds__(kChunkThreads)
    chunk_sort_kernel(uint32_t *keys, uint32_t *indices, uint32_t capacity) {
  using Sort =
      cub::BlockRadixSort<uint32_t, kChunkThreads, kChunkItems, uint32_t>;
  __shared__ typename Sort::TempStorage storage;
  p3dc_allow_next_kernel();
  p3dc_wait_for_previous_kernel();
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

// @keys and @indices sorted by chunk (chunk_sort_kernel) into @keys_out and
// @indices_out, sorted whole.  Dynamic shared memory:
// chunk_merge_shared_bytes (capacity).
__global__ void __launch_bounds__(kMergeThreads)
    chunk_merge_kernel(const uint32_t *keys, const uint32_t *indices,
                       uint32_t capacity, uint32_t *keys_out,
                       uint32_t *indices_out) {
  extern __shared__ uint32_t staged[];
  p3dc_allow_next_kernel();
  p3dc_wait_for_previous_kernel();
  for (uint32_t i = threadIdx.x; i < capacity; i += kMergeThreads)
    staged[i] = keys[i];
  __syncthreads();
  const uint32_t i = blockIdx.x * kMergeThreads + threadIdx.x;
  if (i >= capacity) return;
  const uint32_t own = i / kChunkBoxes;
  const uint32_t chunks = (capacity + kChunkBoxes - 1) / kChunkBoxes;
  const uint32_t key = staged[i];
  uint32_t rank = i - own * kChunkBoxes;
  for (uint32_t c = 0; c < chunks; c++) {
    if (c == own) continue;
    const uint32_t base = c * kChunkBoxes;
    rank += keys_before(staged + base, min(kChunkBoxes, capacity - base), key,
                        c < own);
  }
  keys_out[rank] = key;
  indices_out[rank] = indices[i];
}

}  // namespace p3dc_nms

#endif  // P3DC_NMS_CHUNK_SORT_CUH
