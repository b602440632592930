// The greedy keep-walk over one 64-box tile of a suppression mask, which
// nms.cu's keep reduction and the head decodes' test NMS (decode_lists.cuh)
// both make on their serial path: the tile's live boxes, lowest first, each
// kept unless a box kept before it suppresses it.
#ifndef P3DC_GREEDY_WALK_CUH
#define P3DC_GREEDY_WALK_CUH

#include <cuda_runtime.h>
#include <stdint.h>

// One warp, every lane with the same @live (the tile's boxes not yet
// removed); lane l holds the tile's own mask words of rows l (@row_low) and
// l + 32 (@row_high).  @take (k) is asked, the same in every lane, before
// box k is kept, and stops the walk by returning false (a cap on the kept
// boxes).  Returns the kept boxes' bits.
//
// The walk takes the tile's two halves in turn with 32-bit words, which
// keeps each step of this dependent chain to one find-first-set and a
// shuffle or two: a kept box of the low half removes boxes of both halves
// (its row's two words, from its lane), one of the high half only boxes of
// the high half (the low half is decided).
template <typename Take>
__device__ __forceinline__ unsigned long long p3dc_greedy_walk_tile(
    unsigned long long live, unsigned long long row_low,
    unsigned long long row_high, Take take) {
  constexpr unsigned kFullWarp = 0xffffffffu;
  uint32_t low = (uint32_t)live, high = (uint32_t)(live >> 32);
  uint32_t kept_low = 0, kept_high = 0;
  while (low != 0) {
    const uint32_t k = __ffs(low) - 1;
    if (!take(k)) return kept_low;
    const uint32_t removes_low = __shfl_sync(kFullWarp, (uint32_t)row_low, k);
    const uint32_t removes_high =
        __shfl_sync(kFullWarp, (uint32_t)(row_low >> 32), k);
    kept_low |= 1u << k;
    low &= ~(removes_low | (1u << k));
    high &= ~removes_high;
  }
  while (high != 0) {
    const uint32_t k = __ffs(high) - 1;
    if (!take(k + 32)) break;
    const uint32_t removes =
        __shfl_sync(kFullWarp, (uint32_t)(row_high >> 32), k);
    kept_high |= 1u << k;
    high &= ~(removes | (1u << k));
  }
  return ((unsigned long long)kept_high << 32) | kept_low;
}

#endif  // P3DC_GREEDY_WALK_CUH
