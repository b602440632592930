// The per-list stages of the head decodes (centerpoint_decode.cu: one list
// per task; anchor3d_decode.cu: one per class, or one): the top-k of a list
// of sort keys, a tile of a list's suppression mask, and the greedy walk of
// that mask.
#ifndef P3DC_DECODE_LISTS_CUH
#define P3DC_DECODE_LISTS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "greedy_walk.cuh"

constexpr unsigned kTopkThreads = 1024;
// keys a top-k ranks at once: the most a list may keep
constexpr unsigned kTopkMaxKeys = 4096;
constexpr unsigned kTopkDigitBits = 8;
constexpr unsigned kNmsMaskTile = 64;
constexpr unsigned kNmsMaskRowThreads = 8;
constexpr unsigned kNmsMaskThreads = kNmsMaskTile * kNmsMaskRowThreads;
// kept rows whose later mask words a thread loads at once in the walk
constexpr unsigned kNmsGatherBatch = 8;

// Appends @value to @out at the slot @count (shared or global) gives when
// @take: one atomic per warp, not per value (a thousand threads' atomics
// on one shared counter run one at a time).  Every lane of the warp calls;
// the order of the values is the atomics'.
template <typename T, typename V>
__device__ __forceinline__ void p3dc_append_warp(T *out, uint32_t *count,
                                                 bool take, V value) {
  const unsigned ballot = __ballot_sync(0xffffffffu, take);
  if (ballot == 0) return;
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t leader = __ffs(ballot) - 1;
  uint32_t base = 0;
  if (lane == leader) base = atomicAdd(count, (uint32_t)__popc(ballot));
  base = __shfl_sync(0xffffffffu, base, leader);
  if (take) out[base + __popc(ballot & ((1u << lane) - 1))] = (T)value;
}

// The top-k of a list of sort keys (nonzero, unique, below 2^KeyBits), in
// two kernels: p3dc_topk_cut, one block a list, leaves at most
// kTopkMaxKeys keys in play, and p3dc_topk_rank, many blocks a list, puts
// each key in play at its rank.  Ranking a key against every other one
// spreads over the GPU; the bitonic sort of the keys in one block that it
// replaced was 78 steps of a block barrier each for 4096 slots, 50 us of
// PointPillars' 197-us decode on the H200 (docs/performance.md), and
// CUB's block radix sort of 4096 slots took 14 passes whatever their
// number.  The keys are unique, so the result is the same whatever the
// list's order.

// The keys of a list of @n that p3dc_topk_rank ranks for its @want largest
// (want <= kTopkMaxKeys): a list of at most kTopkMaxKeys is ranked where
// it is, and nothing is written; a longer one is cut by a radix select on
// the keys' top bits (each pass counts 8 bits of the keys still in play)
// to between want and kTopkMaxKeys keys, which go to @gathered in any
// order, their number to *@gathered_count.  One block of kTopkThreads
// threads, every thread calling.
template <unsigned KeyBits>
__device__ __forceinline__ void p3dc_topk_cut(const unsigned long long *list,
                                              uint32_t n, uint32_t want,
                                              unsigned long long *gathered,
                                              uint32_t *gathered_count) {
  __shared__ uint32_t histogram[1u << kTopkDigitBits];
  __shared__ uint32_t in_play_count;
  __shared__ unsigned long long cut;  // the smallest key that stays in play
  if (n <= kTopkMaxKeys) return;

  // Radix select: find a cut with want <= |keys >= cut| <= kTopkMaxKeys.
  // The keys above the bin being refined (prefix) are counted in `above`.
  unsigned long long prefix = 0;
  uint32_t above = 0;
  // digits aligned on multiples of 8 bits, from the one holding the key's
  // top bit down to bits 0-7
  for (int low = (int)((KeyBits - 1) / kTopkDigitBits * kTopkDigitBits);;
       low -= (int)kTopkDigitBits) {
    const unsigned long long high_mask = ~0ull << (low + kTopkDigitBits);
    for (uint32_t b = threadIdx.x; b < (1u << kTopkDigitBits); b += blockDim.x)
      histogram[b] = 0;
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
      const unsigned long long key = list[i];
      if ((key & high_mask) == prefix)
        atomicAdd(&histogram[(key >> low) & ((1u << kTopkDigitBits) - 1)], 1u);
    }
    __syncthreads();
    // every thread walks the 256 bins from the top: the same answer in all
    uint32_t bin = 0, in_play = above;
    for (int b = (1 << kTopkDigitBits) - 1; b >= 0; b--) {
      in_play += histogram[b];
      if (in_play >= want) {
        bin = (uint32_t)b;
        break;
      }
    }
    const unsigned long long bin_prefix =
        prefix | ((unsigned long long)bin << low);
    if (in_play <= kTopkMaxKeys || low == 0) {
      // keys of unique values: at the last digit a bin holds one key, so
      // in_play <= want <= kTopkMaxKeys there
      if (threadIdx.x == 0) cut = bin_prefix;
      break;
    }
    above = in_play - histogram[bin];
    prefix = bin_prefix;
    // the histogram is rewritten by the next pass
    __syncthreads();
  }
  if (threadIdx.x == 0) in_play_count = 0;
  __syncthreads();

  // gather the keys in play, whole warps a step, for the warp's one atomic
  const unsigned long long lowest = cut;
  for (uint32_t base = 0; base < n; base += blockDim.x) {
    const uint32_t i = base + threadIdx.x;
    const unsigned long long key = i < n ? list[i] : 0;
    p3dc_append_warp(gathered, &in_play_count, i < n && key >= lowest, key);
  }
  __syncthreads();
  if (threadIdx.x == 0) *gathered_count = in_play_count;
}

// What p3dc_topk_rank ranks for a list of @n keys at @list: the list
// itself, or what p3dc_topk_cut gathered; their number in *@count.
__device__ __forceinline__ const unsigned long long *p3dc_topk_in_play(
    const unsigned long long *list, uint32_t n,
    const unsigned long long *gathered, const uint32_t *gathered_count,
    uint32_t *count) {
  if (n <= kTopkMaxKeys) {
    *count = n;
    return list;
  }
  *count = *gathered_count;
  return gathered;
}

// Keys a p3dc_topk_rank block ranks, and threads sharing a key's
// comparisons: 64 x 4 threads, so that the 2,723 keys of a KITTI head keep
// 43 blocks busy, each thread comparing a quarter of them.
constexpr unsigned kTopkRankKeys = 64;
constexpr unsigned kTopkRankParts = 4;
constexpr unsigned kTopkRankThreads = kTopkRankKeys * kTopkRankParts;
// blocks a list needs at most
constexpr unsigned kTopkRankBlocks = kTopkMaxKeys / kTopkRankKeys;

// Block @block's share of a top-k: keys [block x kTopkRankKeys, +
// kTopkRankKeys) of the @count (at most kTopkMaxKeys) unique @keys, each
// written to top[rank] (rank: the number of larger keys) when its rank is
// below @want; over blocks 0 .. ceil (count / kTopkRankKeys) - 1, the
// @want largest keys in descending order.  The keys are staged in shared
// memory, where a warp's lanes, all of one part, read the same key at once.
// One block of kTopkRankThreads threads, every thread calling.
__device__ __forceinline__ void p3dc_topk_rank(const unsigned long long *keys,
                                               uint32_t count, uint32_t want,
                                               unsigned long long *top,
                                               uint32_t block) {
  __shared__ unsigned long long staged[kTopkMaxKeys];
  __shared__ uint32_t larger[kTopkRankParts][kTopkRankKeys];
  const uint32_t first = block * kTopkRankKeys;
  if (first >= count) return;
  for (uint32_t j = threadIdx.x; j < count; j += blockDim.x)
    staged[j] = keys[j];
  __syncthreads();
  const uint32_t slot = threadIdx.x % kTopkRankKeys;
  const uint32_t part = threadIdx.x / kTopkRankKeys;
  const uint32_t i = first + slot;
  const unsigned long long key = i < count ? staged[i] : ~0ull;
  uint32_t above = 0;
  for (uint32_t j = part; j < count; j += kTopkRankParts)
    above += staged[j] > key ? 1u : 0u;
  larger[part][slot] = above;
  __syncthreads();
  if (part == 0 && i < count) {
    uint32_t rank = 0;
#pragma unroll
    for (uint32_t q = 0; q < kTopkRankParts; q++) rank += larger[q][slot];
    if (rank < want) top[rank] = key;
  }
}

// Tile (row_tile, column_tile) of the suppression mask of a list of @n
// boxes (their NMS views @rects): bit c % 64 of word c / 64 of row i is set
// when @suppress (rects[i], rects[c]), for i < c < n.  @mask holds the
// list's rows of @words words.  One block of kNmsMaskThreads threads,
// every thread calling; tiles below the diagonal or past n write nothing.
// Eight threads to a row, eight columns each.
template <typename Rect, typename Suppress>
__device__ __forceinline__ void p3dc_nms_mask_tile(
    const Rect *rects, uint32_t n, uint32_t row_tile, uint32_t column_tile,
    unsigned long long *mask, uint32_t words, Suppress suppress) {
  __shared__ Rect column[kNmsMaskTile];
  __shared__ unsigned long long row_bits[kNmsMaskTile];
  if (column_tile < row_tile || row_tile * kNmsMaskTile >= n) return;
  const uint32_t first = column_tile * kNmsMaskTile;
  if (threadIdx.x < kNmsMaskTile) {
    const uint32_t j = first + threadIdx.x;
    if (j < n) column[threadIdx.x] = rects[j];
    row_bits[threadIdx.x] = 0;
  }
  __syncthreads();
  // thread t: row t % 64 of the tile, columns 8 (t / 64) .. + 7
  const uint32_t r = threadIdx.x % kNmsMaskTile;
  const uint32_t part = threadIdx.x / kNmsMaskTile;
  const uint32_t i = row_tile * kNmsMaskTile + r;
  if (i < n) {
    const Rect row = rects[i];
    const uint32_t lo = first + part * (kNmsMaskTile / kNmsMaskRowThreads);
    const uint32_t end = min(lo + kNmsMaskTile / kNmsMaskRowThreads, n);
    unsigned long long bits = 0;
    for (uint32_t c = lo > i + 1 ? lo : i + 1; c < end; c++)
      if (suppress(row, column[c - first])) bits |= 1ull << (c - first);
    if (bits != 0) atomicOr(&row_bits[r], bits);
  }
  __syncthreads();
  if (threadIdx.x < kNmsMaskTile && row_tile * kNmsMaskTile + threadIdx.x < n)
    mask[(size_t)(row_tile * kNmsMaskTile + threadIdx.x) * words +
         column_tile] = row_bits[threadIdx.x];
}

// One block of kNmsWalkThreads threads walks a list's @n boxes best first
// (the mask of p3dc_nms_mask_tile, at most 64 x 64 words), keeping a box
// unless a kept one suppressed it, up to @limit; the kept boxes' indices
// go to @kept in order.  Returns their number, the same in every thread;
// every thread calls.  64 boxes (one mask word) at a time, one block
// barrier a chunk.  Warp 0 walks chunk c from the chunk's own words and
// ORs the kept rows' next word (c + 1), which it fetched with them, into
// the live bits of chunk c + 1 itself; after the barrier the other warps
// gather the words after that (c + 2 on) of chunk c's kept rows into the
// removed bits in shared memory while warp 0 walks chunk c + 1, each
// thread a word of a quarter of the rows, eight rows' loads in flight.  So the
// walk's serial path is the tile walk and the barrier: the gathers' round trips
// to L2 run beside the next chunk's walk, where before they ran between two
// barriers after it.
constexpr unsigned kNmsWalkThreads = 288;

__device__ __forceinline__ uint32_t
p3dc_nms_walk_list(const unsigned long long *mask, uint32_t words, uint32_t n,
                   uint32_t limit, uint32_t *kept) {
  constexpr unsigned kFullWarp = 0xffffffffu;
  constexpr uint32_t kGatherers = kNmsWalkThreads - 32;
  constexpr uint32_t kPhases = kGatherers / 64;
  static_assert(kGatherers % 64 == 0, "whole words a phase");
  __shared__ unsigned long long removed[64];
  // the chunk just walked: its kept bits and the list's kept count, in two
  // slots by the chunk's parity, so that warp 0 writes chunk c + 1's while
  // the gatherers still read chunk c's
  __shared__ unsigned long long chunk_kept[2];
  __shared__ uint32_t kept_total[2];
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  // the words of a row that the walk reads: the columns of the n boxes
  const uint32_t used = (n + 63) / 64;
  for (uint32_t i = threadIdx.x; i < 64; i += blockDim.x) removed[i] = 0;
  uint32_t count = 0;
  // warp 0, lane l: of rows base + l (lo) and base + 32 + l (hi), the
  // chunk's own word (diag) and the next one (next)
  unsigned long long diag_lo = 0, diag_hi = 0, next_lo = 0, next_hi = 0;
  // warp 0: chunk c's live bits that chunk c - 1's kept rows remove
  unsigned long long ahead = 0;
  if (warp == 0 && n > 0) {
    const uint32_t m = min(64u, n);
    if (lane < m) diag_lo = mask[(size_t)lane * words];
    if (lane + 32 < m) diag_hi = mask[(size_t)(32 + lane) * words];
    if (used > 1) {
      if (lane < m) next_lo = mask[(size_t)lane * words + 1];
      if (lane + 32 < m) next_hi = mask[(size_t)(32 + lane) * words + 1];
    }
  }
  __syncthreads();
  uint32_t chunk = 0;
  for (;; chunk++) {
    const uint32_t base = chunk * 64, slot = chunk % 2;
    if (warp == 0) {
      const uint32_t m = min(64u, n - base);
      // removed[chunk] holds the rows of chunks before chunk - 1 (their
      // gathers ended before the last barrier), ahead those of chunk - 1
      const unsigned long long live =
          (m == 64 ? ~0ull : (1ull << m) - 1) & ~removed[chunk] & ~ahead;
      // the chunk's live boxes, best first, until the list's output is full
      const unsigned long long kept_bits =
          p3dc_greedy_walk_tile(live, diag_lo, diag_hi, [&](uint32_t k) {
            if (count >= limit) return false;
            if (lane == 0) kept[count] = base + k;
            count++;
            return true;
          });
      // the kept rows' next words, OR'ed over the warp
      unsigned long long bits =
          ((kept_bits >> lane) & 1ull ? next_lo : 0) |
          ((kept_bits >> (lane + 32)) & 1ull ? next_hi : 0);
#pragma unroll
      for (uint32_t offset = 16; offset > 0; offset /= 2)
        bits |= __shfl_xor_sync(kFullWarp, bits, offset);
      ahead = bits;
      // the next chunk's rows, fetched before the barrier so that their
      // loads overlap it
      const uint32_t next = base + 64;
      diag_lo = diag_hi = next_lo = next_hi = 0;
      if (next < n) {
        const uint32_t next_m = min(64u, n - next);
        const size_t lo = (size_t)(next + lane) * words + chunk + 1;
        const size_t hi = (size_t)(next + 32 + lane) * words + chunk + 1;
        if (lane < next_m) diag_lo = mask[lo];
        if (lane + 32 < next_m) diag_hi = mask[hi];
        if (chunk + 2 < used) {
          if (lane < next_m) next_lo = mask[lo + 1];
          if (lane + 32 < next_m) next_hi = mask[hi + 1];
        }
      }
      if (lane == 0) {
        chunk_kept[slot] = kept_bits;
        kept_total[slot] = count;
      }
    }
    // chunk's kept bits are published, and the gathers of chunk - 1 done
    __syncthreads();
    if (kept_total[slot] >= limit || chunk + 1 >= used) break;
    // gatherer t: word chunk + 2 + t % 64 of the kept rows whose rank
    // among the chunk's kept is t / 64 modulo kPhases
    const uint32_t t = threadIdx.x - 32;
    const uint32_t word = chunk + 2 + t % 64;
    if (warp != 0 && word < used) {
      unsigned long long bits = chunk_kept[slot], gathered = 0;
      for (uint32_t skip = t / 64; skip > 0 && bits != 0; skip--)
        bits &= bits - 1;
      while (bits != 0) {
        unsigned long long got[kNmsGatherBatch];
#pragma unroll
        for (uint32_t u = 0; u < kNmsGatherBatch; u++) {
          got[u] = 0;
          if (bits == 0) continue;
          const uint32_t k = __ffsll((long long)bits) - 1;
          got[u] = mask[(size_t)(base + k) * words + word];
#pragma unroll
          for (uint32_t skip = 0; skip < kPhases; skip++) bits &= bits - 1;
        }
#pragma unroll
        for (uint32_t u = 0; u < kNmsGatherBatch; u++) gathered |= got[u];
      }
      if (gathered != 0) atomicOr(&removed[word], gathered);
    }
  }
  return kept_total[chunk % 2];
}

#endif  // P3DC_DECODE_LISTS_CUH
