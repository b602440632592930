// The greedy keep-reduction of nms.cu, on the GPU: the kept boxes decided
// and their records written.  Calls of at most 1024 boxes try the sweeps
// first (sweep_keep below, one block), larger ones the rounds over the pair
// lists (list_keep, every block of a cluster where the device has them);
// calls these do not settle walk the 64-box tiles in score order, in one
// block:
//
// The walk is a chain of dependent steps: tile t can be decided only once
// every kept box before it has removed what it suppresses.  A barrier of the
// whole block and a round trip to global memory per tile would put both on
// that chain, so the walk takes steps of a chunk of 4 tiles (256 boxes) and
// keeps global memory off the chain:
//
//  - the band of chunk s, the mask words of its 256 rows for the columns of
//    chunks s and s + 1 (16 KB), is loaded into shared memory during step
//    s - 1, for every row, kept or not, so the load waits for nothing;
//  - phase A of step s (all threads, from the band of chunk s - 1): the
//    boxes kept in chunk s - 1 remove their bits in the tiles of chunk s;
//  - phase B, warp 0: decides the 4 tiles of chunk s one after the other,
//    each from its word in tile_bits[] and its diagonal words in the band,
//    and ORs the kept boxes' band words into the chunk's later tiles itself;
//  - phase B, the other 31 warps, meanwhile: the boxes kept in chunk s - 1
//    remove their bits in the tiles of chunks s + 1 and on (global loads,
//    needed only from step s + 1), and the band of chunk s + 1 is loaded.
//
// So a step is two barriers, and warp 0's work on 4 tiles overlaps one round
// of global loads.  Every kept box reaches every later tile: its own chunk
// through warp 0, the next chunk in phase A, the chunks after through the
// other warps, each before the tile is decided.  What is left on the chain
// is warp 0's work, one step of the greedy walk per kept box (the measured
// times are in docs/performance.md).  The walk stops early once the output
// is full (post_max).
#ifndef P3DC_NMS_REDUCE_CUH
#define P3DC_NMS_REDUCE_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "cluster.cuh"
#include "greedy_walk.cuh"
#include "nms.h"
#include "nms_common.cuh"

namespace p3dc_nms {

constexpr uint32_t kReduceThreads = 1024;
// the most blocks of the rounds' cluster (list_keep): the most a cluster
// may have on every device with clusters
constexpr uint32_t kReduceMaxClusterBlocks = 8;
constexpr uint32_t kMaxWords = P3DC_NMS_MAX_CAPACITY / kTile;
// tiles a step decides
constexpr uint32_t kChunkTiles = 4;
constexpr uint32_t kChunkRows = kChunkTiles * kTile;
// a band row: the words of the chunk's own tiles, then of the next chunk's
constexpr uint32_t kBandWords = 2 * kChunkTiles;
// a band row in shared memory, padded by a word so that warp 0's reads of
// one column down 32 rows fall in different banks
constexpr uint32_t kBandStride = kBandWords + 1;
constexpr uint32_t kAppliers = kReduceThreads - 32;
// band words each applier thread loads
constexpr uint32_t kBandLoads =
    (kChunkRows * kBandWords + kAppliers - 1) / kAppliers;
// global loads an applier thread keeps in flight
constexpr uint32_t kFarBatch = 4;

// The mask word of row @row (a sorted box) for tile @col, as the band holds
// it: 0 where the mask kernel writes nothing (a column before the row's own
// tile, a row or column past the boxes), so the band never holds a word
// that was not written.
__device__ __forceinline__ unsigned long long band_word(
    const unsigned long long *mask, uint32_t m, uint32_t words, uint32_t row,
    uint32_t col) {
  if (row >= m || col >= words || col < row / kTile) return 0;
  return mask[(size_t)row * words + col];
}

static_assert(kReduceThreads == kChunkRows * kChunkTiles,
              "phase A gives each warp 32 rows of one tile");

// The OR of @w over the 32 lanes of the warp: the warp reduction
// instruction where the device has it (sm_80 and later), else shuffles.
__device__ __forceinline__ unsigned long long warp_or(unsigned long long w) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t lo = __reduce_or_sync(kFullWarp, (uint32_t)w);
  const uint32_t hi = __reduce_or_sync(kFullWarp, (uint32_t)(w >> 32));
  return ((unsigned long long)hi << 32) | lo;
#else
  for (int offset = 16; offset > 0; offset /= 2)
    w |= __shfl_xor_sync(kFullWarp, w, offset);
  return w;
#endif
}

// Calls of at most kColumnBoxes boxes are first reduced by sweeps: box i is
// kept when no box kept in the previous sweep suppresses it, all boxes at
// once, one thread a box holding its suppressors (its column of the mask,
// nms_common.cuh) in registers.  Box i's answer is exact once the sweeps
// before it have settled boxes 0 .. i - 1, so sweep s has settled boxes 0
// .. s at least; a sweep that changes nothing has reached the one set that
// answers every box by the greedy rule, the walk's result.  Clusters of
// detections settle in a few sweeps (a box chained to ones it does not
// suppress through ones that suppress it); a call still changing after
// kMaxSweeps falls back to the walk below.
constexpr uint32_t kMaxSweeps = 32;
static_assert(kColumnBoxes == kReduceThreads, "a thread a box in the sweeps");

// After the sweeps or the rounds: tile_bits[0 .. words) hold each tile's
// kept boxes; warp 0 writes tile_start[], *kept_total and *decided_tiles as
// the walk writes them, a warp-wide scan over 32 tiles at a time.
__device__ __forceinline__ void publish_kept(
    const unsigned long long *tile_bits, uint32_t words, uint16_t *tile_start,
    uint32_t *kept_total, uint32_t *decided_tiles) {
  const uint32_t lane = threadIdx.x & 31;
  if (threadIdx.x >= 32) return;
  uint32_t before = 0;
  for (uint32_t first = 0; first < words; first += 32) {
    const uint32_t t = first + lane;
    const uint32_t own = t < words ? __popcll(tile_bits[t]) : 0;
    const uint32_t inclusive = warp_inclusive_sum(own);
    if (t < words) tile_start[t] = (uint16_t)(before + inclusive - own);
    before += __shfl_sync(kFullWarp, inclusive, 31);
  }
  if (lane == 0) {
    *kept_total = before;
    *decided_tiles = words;
  }
}

// Thread i's column for the sweeps, words 0 .. i / 64 (the ones the mask
// kernel writes; nms_common.cuh).  Words of columns past a call's count
// hold what an earlier call wrote, or zeros; the sweeps never look at them.
__device__ __forceinline__ void load_column(
    const unsigned long long *column_mask,
    unsigned long long (&suppressors)[kColumnWords]) {
  const uint32_t i = threadIdx.x;
#pragma unroll
  for (uint32_t w = 0; w < kColumnWords; w++)
    suppressors[w] =
        w <= i / kTile ? column_mask[(size_t)w * kColumnBoxes + i] : 0ull;
}

// The sweeps, from each thread's column (load_column); TRUE (in every
// thread) when they settled, with tile_bits[] (each tile's kept boxes),
// tile_start[], *kept_total and *decided_tiles written as the walk writes
// them, and visible.
//
// A sweep is a barrier and, per box, its column's words against the kept
// set: a warp's 32 boxes lie in one 64-box tile, so they have the same
// number of words, and a warp stops after them (warps past the count do
// nothing).  Each word is one 64-bit read of the kept set.  Every thread
// going through all 16 words, predicated, made the sweeps issue-bound at
// 32 warps (2.9 us of a 16.5 us call at 500 boxes, H200).
__device__ __forceinline__ bool sweep_keep(
    const unsigned long long (&suppressors)[kColumnWords], uint32_t m,
    unsigned long long *tile_bits, uint16_t *tile_start, uint32_t *kept_total,
    uint32_t *decided_tiles) {
  // the kept boxes of a sweep as 32-bit words, a warp's each, by sweep
  // parity; read as 64-bit words, a tile's each
  __shared__ __align__(8) uint32_t kept[2][kReduceThreads / 32];
  const uint32_t i = threadIdx.x;
  const uint32_t lane = i & 31, warp = i >> 5;
  // the words of the warp's tile's columns, 0 where the warp has no box
  const uint32_t warp_words = warp * 32 < m ? warp * 32 / kTile + 1 : 0;
  const uint32_t boxes = __ballot_sync(kFullWarp, i < m);
  if (lane == 0) kept[0][warp] = boxes;
  // kept[0] holds every box
  __syncthreads();
  uint32_t cur = 0;
  bool settled = false;
  for (uint32_t sweep = 0; sweep < kMaxSweeps && !settled; sweep++) {
    const unsigned long long *kept_words =
        reinterpret_cast<const unsigned long long *>(kept[cur]);
    unsigned long long hit = 0;
#pragma unroll
    for (uint32_t w = 0; w < kColumnWords; w++) {
      if (w >= warp_words) break;
      hit |= suppressors[w] & kept_words[w];
    }
    const bool keep = i < m && hit == 0;
    const uint32_t next = __ballot_sync(kFullWarp, keep);
    if (lane == 0) kept[cur ^ 1][warp] = next;
    // kept[cur ^ 1] complete; every read of kept[cur] came before, so the
    // next sweep may write it
    settled = !__syncthreads_or(lane == 0 && next != kept[cur][warp]);
    cur ^= 1;
  }
  const uint32_t words = (m + kTile - 1) / kTile;
  if (settled && i < words)
    tile_bits[i] =
        (unsigned long long)kept[cur][2 * i + 1] << 32 | kept[cur][2 * i];
  // tile_bits complete
  __syncthreads();
  if (settled)
    publish_kept(tile_bits, words, tile_start, kept_total, decided_tiles);
  // tile_bits, tile_start and the totals visible (or nothing written)
  __syncthreads();
  return settled;
}

// Larger calls are reduced in rounds over the pair lists (nms_common.cuh),
// each box undecided, kept or removed.  A box is removed once one of its
// suppressors is kept, and kept once all of them are removed.  A round:
//  A. the doomed boxes (a kept suppressor has marked them) are removed;
//  B. each box still undecided and not doomed looks at its column list: if
//     every suppressor in it is removed, it is kept; else it notes the
//     first that is not (waiting[]), and looks again only once that box is
//     removed;
//  C. the boxes kept in B mark the boxes of their row lists doomed.
// A box is decided only from decided boxes, so every decision is the greedy
// rule's, and each round decides at least the first box still undecided,
// whose suppressors all come before it: the rounds settle in as many rounds
// as the longest chain of boxes that wait for one another.  The work is the
// kept boxes' rows and the looks of the boxes that wait, not every pair:
// most boxes are doomed by the first kept box of their cluster and never
// read a list.  A call with a box of more than kListPairs pairs either way,
// or whose longest chain needs more than kMaxSweeps rounds, falls back to
// the walk.
//
// The rounds run on every block of the kernel's cluster (cluster.cuh; one
// block where there are none).  A warp owns 32 neighbouring boxes at a time
// (a group) and writes their states as one word: group g is block g %
// blocks's, and its warp (g / blocks) % 32's, so that the groups of the
// first boxes, which are decided first, are spread over every block.  A
// block keeps in its shared memory the kept boxes of its groups, the boxes
// its kept boxes doom, and the removed boxes of every group (B looks at any
// box); A gathers the first two from every block (the only reads of
// another block's memory), so a round is:
//   (X) cluster barrier: every block's round before in place
//   A   every group's kept and doomed boxes gathered; removed boxes
//   (Y) arrive: this block has read the others'
//   (R1) block barrier
//   B   the block's groups look
//   (R2) block barrier; (Y) wait: no block reads this one's states now
//   C   the block's kept boxes in place and their rows doomed; its state
//   (X) arrive
// A block reads another's states only between (X) and (Y), and writes the
// words the others read (its groups' kept boxes, its doomed boxes, its state
// word) only between (Y) and (X), so no read sees a write of the same
// round; what else it writes in A (its removed boxes, its copies of the
// other blocks' kept boxes) no other block reads.
// Every block decides alike whether the rounds go on: in A each reads every
// block's state word, written in C before (X).
constexpr uint32_t kReduceWarps = kReduceThreads / 32;
constexpr uint32_t kListPairs = 255;
static_assert(kListPairs <= kListSlots, "a listed box fits its slots");
// a lane's list loads at once: 32 boxes of a list
constexpr uint32_t kListLoads = 4;
static_assert(8 * kListLoads <= kListSlots, "the first loads stay in the list");
// waiting[] of a box that has not looked at its column list yet (box 65535,
// the last of the largest workspace, suppresses nothing)
constexpr uint32_t kNotLooked = 0xffffu;
// the rounds' shared memory (dynamic) for @boxes boxes: per box the
// suppressor it waits for, 16 bits, two boxes a word; then the boxes the
// block's kept boxes doom and the removed boxes, a bit each
__host__ __device__ constexpr uint32_t waiting_words(uint32_t boxes) {
  return (boxes + 1) / 2;
}
__host__ __device__ constexpr uint32_t group_words(uint32_t boxes) {
  return (boxes + 31) / 32;
}
// The bits of 32-box group @g that are boxes: a half of its tile's.
__device__ __forceinline__ uint32_t group_boxes(uint32_t m, uint32_t g) {
  return (uint32_t)(tile_boxes(m, g / 2) >> (32 * (g & 1)));
}
constexpr size_t list_shared_bytes(uint32_t boxes) {
  return (size_t)(waiting_words(boxes) + 2 * group_words(boxes)) *
         sizeof(uint32_t);
}
// A block's state word, as A reads it: its groups have boxes undecided; one
// of its boxes has too many pairs for the rounds.
constexpr uint32_t kBlockOpen = 1;
constexpr uint32_t kBlockTooLong = 2;

// A list of @n boxes at @list (16-byte aligned), kListLoads loads of 8 at a
// time, the first issued before @n is known; @visit (box) returns FALSE to
// stop.
template <typename Visit>
__device__ __forceinline__ void visit_list(const uint16_t *list,
                                           const uint32_t *n_at, Visit visit) {
  const uint4 *slots = reinterpret_cast<const uint4 *>(list);
  uint4 loaded[kListLoads];
#pragma unroll
  for (uint32_t v = 0; v < kListLoads; v++) loaded[v] = slots[v];
  const uint32_t n = *n_at;
  for (uint32_t q = 0; q < n; q += 8 * kListLoads) {
    if (q > 0) {
#pragma unroll
      for (uint32_t v = 0; v < kListLoads; v++)
        if (q + 8 * v < n) loaded[v] = slots[q / 8 + v];
    }
#pragma unroll
    for (uint32_t v = 0; v < kListLoads; v++) {
      const uint32_t pairs[4] = {loaded[v].x, loaded[v].y, loaded[v].z,
                                 loaded[v].w};
#pragma unroll
      for (uint32_t u = 0; u < 8; u++) {
        if (q + 8 * v + u >= n) return;
        if (!visit((pairs[u / 2] >> (16 * (u & 1))) & 0xffffu)) return;
      }
    }
  }
}

// TRUE (in every thread of every block) when the rounds settled, with the
// results written as sweep_keep writes them, in every block; tile_bits[]
// holds the kept boxes of the block's groups throughout, and of every group
// once settled.  @kMaxBlocks: the most blocks the kernel's cluster can
// have, the length of A's unrolled loops over the blocks.
template <uint32_t kMaxBlocks>
__device__ bool list_keep(const uint2 *counts, const uint16_t *columns,
                          const uint16_t *rows, uint32_t m, uint32_t *shared,
                          unsigned long long *tile_bits, uint16_t *tile_start,
                          uint32_t *kept_total, uint32_t *decided_tiles) {
  // this block's state word (kBlockOpen, kBlockTooLong), for A
  __shared__ uint32_t block_state;
  uint32_t *waiting = shared;
  uint32_t *doomed = waiting + waiting_words(m);
  uint32_t *removed = doomed + group_words(m);
  uint32_t *kept = reinterpret_cast<uint32_t *>(tile_bits);
  uint16_t *waiting_for = reinterpret_cast<uint16_t *>(waiting);
  const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const uint32_t rank = p3dc_cluster_rank(), blocks = p3dc_cluster_blocks();
  const uint32_t words = (m + kTile - 1) / kTile;
  const uint32_t groups = group_words(m);
  // this warp's k-th group
  const auto group_of = [&](uint32_t k) {
    return rank + blocks * (warp + kReduceWarps * k);
  };
  // The boxes without suppressors are kept from the start; bit k of fresh:
  // this lane's box of the warp's k-th group is kept, and its row not yet
  // doomed.  Bit k of open_groups: that group has boxes undecided.
  bool too_long = false;
  unsigned long long fresh = 0, open_groups = 0;
  for (uint32_t k = 0, g = group_of(0); g < groups; g = group_of(++k)) {
    const uint32_t j = g * 32 + lane;
    const uint2 n = j < m ? counts[j] : make_uint2(kListPairs + 1, 0);
    too_long = too_long || (j < m && (n.x > kListPairs || n.y > kListPairs));
    const uint32_t free_boxes = __ballot_sync(kFullWarp, n.x == 0);
    if (lane == 0) kept[g] = free_boxes;
    fresh |= (unsigned long long)(n.x == 0) << k;
    open_groups |= 1ull << k;
  }
  for (uint32_t g = threadIdx.x; g < groups; g += kReduceThreads) {
    doomed[g] = 0;
    removed[g] = 0;
  }
  if (threadIdx.x == 0 && groups % 2 != 0) kept[groups] = 0;
  for (uint32_t p = threadIdx.x; p < waiting_words(m); p += kReduceThreads)
    waiting[p] = kNotLooked | kNotLooked << 16;
  too_long = __syncthreads_or(too_long);
  const bool open = __syncthreads_or(open_groups != 0);
  if (threadIdx.x == 0)
    block_state = (open ? kBlockOpen : 0u) | (too_long ? kBlockTooLong : 0u);
  // (X) the states in place
  p3dc_cluster_arrive();
  bool settled = false;
  for (uint32_t round = 0;; round++) {
    // (X)
    p3dc_cluster_wait();
    // A. every block's state; every group's kept boxes from the block that
    // owns it and the boxes every block dooms in it, the doomed boxes
    // removed (none in the first round)
    // (the loops unrolled, so that the blocks' loads are in flight at once)
    uint32_t state = 0;
#pragma unroll
    for (uint32_t r = 0; r < kMaxBlocks; r++)
      if (r < blocks) state |= *p3dc_cluster_shared(&block_state, r);
    for (uint32_t g = threadIdx.x; g < groups; g += kReduceThreads) {
      const uint32_t owner = g % blocks;
      const uint32_t kept_boxes = *p3dc_cluster_shared(&kept[g], owner);
      uint32_t doomed_boxes = 0;
#pragma unroll
      for (uint32_t r = 0; r < kMaxBlocks; r++)
        if (r < blocks) doomed_boxes |= *p3dc_cluster_shared(&doomed[g], r);
      if (owner != rank) kept[g] = kept_boxes;
      removed[g] |= doomed_boxes & ~kept_boxes;
    }
    settled = state == 0;
    // (Y) this block has read the others' states
    p3dc_cluster_arrive();
    if (state != kBlockOpen || round == kMaxSweeps) {
      // no block reads another's memory after this: a block may return
      p3dc_cluster_wait();
      break;
    }
    // (R1) the removed boxes in place
    __syncthreads();
    // B. the others look at their suppressors (from the second round on:
    // nothing but the free boxes is decided before)
    for (unsigned long long open = open_groups; open != 0; open &= open - 1) {
      const uint32_t k = __ffsll((long long)open) - 1;
      const uint32_t g = group_of(k);
      const uint32_t boxes = group_boxes(m, g);
      const uint32_t undecided = boxes & ~(kept[g] | removed[g]);
      const uint32_t j = g * 32 + lane;
      bool keep = false;
      if ((undecided >> lane) & 1u) {
        const uint32_t w = waiting_for[j];
        const bool looked = w != kNotLooked;
        // a box looks when the one it waits for is removed
        const bool look =
            looked ? (removed[w / 32] >> (w & 31)) & 1u : round > 0;
        if (look) {
          uint32_t first_not_removed = kNotLooked;
          visit_list(columns + (size_t)j * kListSlots, &counts[j].x,
                     [&](uint32_t b) {
                       if ((removed[b / 32] >> (b & 31)) & 1u) return true;
                       first_not_removed = b;
                       return false;
                     });
          keep = first_not_removed == kNotLooked;
          if (!keep) waiting_for[j] = (uint16_t)first_not_removed;
        }
      }
      const uint32_t kept_now = __ballot_sync(kFullWarp, keep);
      fresh |= (unsigned long long)((kept_now >> lane) & 1u) << k;
    }
    // (R2) every look at this round's states done
    __syncthreads();
    // (Y) no block reads this one's kept and doomed boxes now
    p3dc_cluster_wait();
    // C. the kept boxes in place, and their rows doomed
    for (unsigned long long open = open_groups; open != 0; open &= open - 1) {
      const uint32_t k = __ffsll((long long)open) - 1;
      const uint32_t g = group_of(k);
      const uint32_t kept_now = __ballot_sync(kFullWarp, (fresh >> k) & 1ull);
      const uint32_t boxes = group_boxes(m, g);
      const uint32_t now = kept[g] | kept_now;
      // every lane has read kept[g] before lane 0 replaces it
      __syncwarp();
      if (lane == 0) kept[g] = now;
      // (a doomed box is removed in the next round's A)
      if ((boxes & ~(now | removed[g])) == 0) open_groups &= ~(1ull << k);
    }
    for (unsigned long long f = fresh; f != 0; f &= f - 1) {
      const uint32_t j = group_of(__ffsll((long long)f) - 1) * 32 + lane;
      visit_list(rows + (size_t)j * kListSlots, &counts[j].y, [&](uint32_t b) {
        atomicOr(&doomed[b / 32], 1u << (b & 31));
        return true;
      });
    }
    fresh = 0;
    // (R3) the round's kept boxes in place and their rows doomed
    const bool still_open = __syncthreads_or(open_groups != 0);
    if (threadIdx.x == 0) block_state = still_open ? kBlockOpen : 0u;
    // (X)
    p3dc_cluster_arrive();
  }
  if (settled)
    publish_kept(tile_bits, words, tile_start, kept_total, decided_tiles);
  // tile_start and the totals visible
  __syncthreads();
  return settled;
}

// @capacity: the workspace's; @order maps sorted positions to input
// indices; @call: the call's records and outputs as its first kernel
// published them (nms_common.cuh), records of @record_words 32-bit words;
// @limit = min (post_max, out_capacity).  That kernel has zeroed the
// output; this one writes the kept records and kept_index over its first
// entries.  The rounds (list_keep) and the output take every block of the
// cluster; the sweeps and the walk block 0 alone.  @kMaxBlocks: list_keep's.
template <uint32_t kMaxBlocks>
__device__ __forceinline__ void reduce(
    const unsigned long long *mask, const unsigned long long *column_mask,
    uint32_t capacity, const uint2 *pair_counts, const uint16_t *pair_columns,
    const uint16_t *pair_rows, const uint32_t *item_count,
    const uint32_t *order, const CallOutput *call, uint32_t record_words,
    uint32_t limit) {
  // tile_bits[t]: until tile t is decided, the bits of its boxes that kept
  // boxes remove; from then on, the bits of its kept boxes.  Nothing writes
  // a tile's word after it is decided but warp 0, which decides it.
  __shared__ unsigned long long tile_bits[kMaxWords];
  // tile_start[t]: the kept boxes before tile t, which warp 0 writes as it
  // decides the tile: the output position of the tile's first kept box
  // (below the capacity, 2^16, wherever it is read), so that the output
  // needs no scan of the tiles' counts
  __shared__ uint16_t tile_start[kMaxWords];
  // the bands of two chunks, by step parity
  __shared__ unsigned long long bands[2][kChunkRows * kBandStride];
  // list_keep's, list_shared_bytes (m)
  extern __shared__ uint32_t list_shared[];
  // the kept rows of a chunk (offsets in the chunk), for the next step's
  // appliers; by step parity
  __shared__ uint16_t kept_rows[2][kChunkRows];
  __shared__ uint32_t kept_rows_count[2];
  __shared__ uint32_t kept_total;
  __shared__ uint32_t decided_tiles;

  const uint32_t tid = threadIdx.x;
  const uint32_t lane = tid & 31;
  const uint32_t warp = tid >> 5;
  const uint32_t rank = p3dc_cluster_rank(), blocks = p3dc_cluster_blocks();
  p3dc_allow_next_kernel();
  p3dc_wait_for_previous_kernel();
  // The columns of the sweeps.  Where no call can have more boxes than the
  // sweeps take, they are loaded beside the count, not after it: the count
  // only decides which words count, and waiting for it put a second round
  // trip to L2 on the call's path.  Larger workspaces load them only for
  // calls that sweep, so that a call of more boxes does not load 1024
  // columns it never reads (laid out by column, that cost 5 us at 4096).
  unsigned long long suppressors[kColumnWords];
  const bool columns_first = capacity <= kColumnBoxes;
  if (columns_first) load_column(column_mask, suppressors);
  const uint32_t m = p3dc_load_after_wait(item_count);
  if (m <= kColumnBoxes && rank != 0) return;
  if (!columns_first && m <= kColumnBoxes)
    load_column(column_mask, suppressors);
  // read now, used only at the end: the loads leave the walk's chain
  const uint32_t *boxes = call->boxes;
  uint32_t *out = call->out;
  uint32_t *out_count = call->out_count;
  int32_t *kept_index = call->kept_index;
  const uint32_t words = (m + kTile - 1) / kTile;
  const uint32_t chunks = (words + kChunkTiles - 1) / kChunkTiles;

  // The sweeps or the rounds, and the walk only if they did not settle.
  const bool swept =
      m <= kColumnBoxes
          ? sweep_keep(suppressors, m, tile_bits, tile_start, &kept_total,
                       &decided_tiles)
          : list_keep<kMaxBlocks>(pair_counts, pair_columns, pair_rows, m,
                                  list_shared, tile_bits, tile_start,
                                  &kept_total, &decided_tiles);
  // the blocks that write the output: every block after the rounds, which
  // leave every kept box in each; else block 0, the only one left
  const uint32_t writers = swept && m > kColumnBoxes ? blocks : 1;
  if (!swept) {
    if (rank != 0) return;
    for (uint32_t t = tid; t < words; t += kReduceThreads) tile_bits[t] = 0;
    if (tid == 0) {
      kept_total = 0;
      decided_tiles = 0;
    }
    if (limit > 0) {
      for (uint32_t p = tid; p < kChunkRows * kBandWords; p += kReduceThreads)
        bands[0][p / kBandWords * kBandStride + p % kBandWords] =
            band_word(mask, m, words, p / kBandWords, p % kBandWords);
    }
    // tile_bits zeroed, the band of chunk 0 in place
    __syncthreads();

    // warp 0's count of kept boxes (the same in every lane)
    uint32_t kept_so_far = 0;
    for (uint32_t s = 0; s < chunks && limit > 0; s++) {
      const uint32_t cur = s & 1, prev = cur ^ 1;
      const unsigned long long *band = bands[cur];

      // phase A: the kept boxes of chunk s - 1 into the tiles of chunk s, one
      // thread per (row of chunk s - 1, tile of chunk s); chunk s - 1 is
      // whole, as a chunk follows it.  Warp w takes tile j = w % kChunkTiles
      // and the 32 rows from (w / kChunkTiles) * 32: the warp ORs its rows'
      // words together and one lane applies them, so a tile's word takes 8
      // atomics, not one per kept row, and no two lanes contend for a word.
      if (s > 0) {
        const uint32_t j = warp % kChunkTiles;
        const uint32_t r = (warp / kChunkTiles) * 32 + lane;
        const uint32_t c = s * kChunkTiles + j;
        const unsigned long long kept_bits =
            tile_bits[(s - 1) * kChunkTiles + r / kTile];
        const unsigned long long w =
            c < words && ((kept_bits >> (r % kTile)) & 1ull)
                ? bands[prev][r * kBandStride + kChunkTiles + j]
                : 0ull;
        const unsigned long long removed = warp_or(w);
        if (lane == 0 && removed != 0) atomicOr(&tile_bits[c], removed);
      }
      // (A) chunk s's tiles hold every removal but those from chunk s itself
      __syncthreads();

      if (warp == 0) {
        // phase B, warp 0: decide the chunk's tiles in order.  Lane l holds
        // the tile's rows l (lo) and l + 32 (hi).
        uint32_t listed = 0, decided = s * kChunkTiles;
        for (uint32_t j = 0; j < kChunkTiles; j++) {
          const uint32_t t = s * kChunkTiles + j;
          if (t >= words || kept_so_far >= limit) break;
          const uint32_t row_lo = j * kTile + lane, row_hi = row_lo + 32;
          const unsigned long long diag_lo = band[row_lo * kBandStride + j];
          const unsigned long long diag_hi = band[row_hi * kBandStride + j];
          // lowest first: a box's suppressions are applied before any later
          // box of the tile is looked at
          const unsigned long long kept =
              p3dc_greedy_walk_tile(tile_boxes(m, t) & ~tile_bits[t], diag_lo,
                                    diag_hi, [](uint32_t) { return true; });
          const bool keep_lo = (kept >> lane) & 1ull;
          const bool keep_hi = (kept >> (lane + 32)) & 1ull;
          // every lane has read tile_bits[t] before lane 0 replaces it
          __syncwarp();
          if (lane == 0) {
            tile_bits[t] = kept;
            tile_start[t] = (uint16_t)kept_so_far;
          }
          // the kept boxes into the chunk's later tiles: OR-ed across the
          // warp, then written by one lane (in phase B no other warp writes
          // the words of this chunk's tiles)
          for (uint32_t jj = j + 1; jj < kChunkTiles && kept != 0; jj++) {
            const uint32_t c = s * kChunkTiles + jj;
            if (c >= words) break;
            unsigned long long w = 0;
            if (keep_lo) w |= band[row_lo * kBandStride + jj];
            if (keep_hi) w |= band[row_hi * kBandStride + jj];
            const unsigned long long removed = warp_or(w);
            if (lane == 0) tile_bits[c] |= removed;
          }
          if (keep_lo)
            kept_rows[cur][listed + __popcll(kept & ((1ull << lane) - 1))] =
                (uint16_t)row_lo;
          if (keep_hi)
            kept_rows[cur]
                     [listed + __popcll(kept & ((1ull << (lane + 32)) - 1))] =
                         (uint16_t)row_hi;
          listed += __popcll(kept);
          kept_so_far += __popcll(kept);
          decided = t + 1;
          // the ORs into the next tile are seen by its read of tile_bits
          __syncwarp();
        }
        if (lane == 0) {
          kept_rows_count[cur] = listed;
          kept_total = kept_so_far;
          // short of the chunk's end only where post_max stopped the walk:
          // the words of the tiles not decided hold removals, not kept boxes
          decided_tiles = decided;
        }
      } else {
        // phase B, warps 1-31
        const uint32_t a = tid - 32;
        const uint32_t next = s + 1;
        // 1. start loading the band of chunk s + 1 (every row)
        unsigned long long staged[kBandLoads];
#pragma unroll
        for (uint32_t q = 0; q < kBandLoads; q++) {
          const uint32_t p = a + q * kAppliers;
          staged[q] = 0;
          if (next < chunks && p < kChunkRows * kBandWords)
            staged[q] =
                band_word(mask, m, words, next * kChunkRows + p / kBandWords,
                          next * kChunkTiles + p % kBandWords);
        }
        // 2. the kept boxes of chunk s - 1 into the tiles from chunk s + 1 on:
        // pair p is (kept row p / span, tile first + p % span), so that
        // neighbouring threads read neighbouring words of a row
        const uint32_t first = next * kChunkTiles;
        const uint32_t span = words > first ? words - first : 0;
        const uint32_t n_pairs = s > 0 ? kept_rows_count[prev] * span : 0;
        if (n_pairs > 0) {
          const uint32_t row_base = (s - 1) * kChunkRows;
          const uint32_t q_step = kAppliers / span, c_step = kAppliers % span;
          uint32_t q = a / span, c = a % span;
          for (uint32_t p = a; p < n_pairs; p += kFarBatch * kAppliers) {
            unsigned long long w[kFarBatch];
            uint32_t col[kFarBatch];
#pragma unroll
            for (uint32_t u = 0; u < kFarBatch; u++) {
              w[u] = 0;
              col[u] = first + c;
              if (p + u * kAppliers < n_pairs)
                w[u] = mask[(size_t)(row_base + kept_rows[prev][q]) * words +
                            first + c];
              q += q_step;
              c += c_step;
              if (c >= span) {
                c -= span;
                q++;
              }
            }
#pragma unroll
            for (uint32_t u = 0; u < kFarBatch; u++)
              if (w[u] != 0) atomicOr(&tile_bits[col[u]], w[u]);
          }
        }
        // 3. store the band of chunk s + 1 (its buffer was last read in phase
        // A, before barrier (A))
#pragma unroll
        for (uint32_t q = 0; q < kBandLoads; q++) {
          const uint32_t p = a + q * kAppliers;
          if (next < chunks && p < kChunkRows * kBandWords)
            bands[prev][p / kBandWords * kBandStride + p % kBandWords] =
                staged[q];
        }
      }
      // (B) chunk s decided, its kept boxes listed, the far removals of chunk
      // s - 1 and the band of chunk s + 1 in place
      __syncthreads();
      if (kept_total >= limit) break;
    }
  }  // the walk

  // output: the kept boxes in sorted order, at the positions warp 0
  // recorded per tile, a share of them in each block.  The loop above ended
  // on barrier (B), or never ran, after the first barrier: tile_start,
  // kept_total and decided_tiles are visible.
  const uint32_t decided = decided_tiles;
  const uint32_t total = kept_total;
  const uint32_t count = total < limit ? total : limit;
  const uint32_t decided_boxes = min(m, decided * kTile);
  for (uint32_t i = rank * kReduceThreads + tid; i < decided_boxes;
       i += writers * kReduceThreads) {
    const unsigned long long bits = tile_bits[i / kTile];
    const uint32_t b = i % kTile;
    if (!((bits >> b) & 1ull)) continue;
    const uint32_t position =
        tile_start[i / kTile] + __popcll(bits & ((1ull << b) - 1));
    if (position >= count) continue;
    const uint32_t index = order[i];
    const uint32_t *src = boxes + (size_t)index * record_words;
    uint32_t *dst = out + (size_t)position * record_words;
    uint32_t record[P3DC_BOX3D_SIZE / 4];
#pragma unroll
    for (uint32_t w = 0; w < P3DC_BOX3D_SIZE / 4; w++)
      if (w < record_words) record[w] = src[w];
#pragma unroll
    for (uint32_t w = 0; w < P3DC_BOX3D_SIZE / 4; w++)
      if (w < record_words) dst[w] = record[w];
    if (kept_index != nullptr) kept_index[position] = (int32_t)index;
  }
  if (tid == 0 && rank == 0) *out_count = count;
}

// The reduction in one block: workspaces of up to kColumnBoxes boxes, whose
// calls sweep in one block, devices without clusters or with no room for
// one, and workspaces told so (p3dc_nms_limit_reduce_blocks).
__global__ void __launch_bounds__(kReduceThreads, 1)
    reduce_kernel(const unsigned long long *mask,
                  const unsigned long long *column_mask, uint32_t capacity,
                  const uint2 *pair_counts, const uint16_t *pair_columns,
                  const uint16_t *pair_rows, const uint32_t *item_count,
                  const uint32_t *order, const CallOutput *call,
                  uint32_t record_words, uint32_t limit) {
  reduce<1>(mask, column_mask, capacity, pair_counts, pair_columns, pair_rows,
            item_count, order, call, record_words, limit);
}

// The reduction in a cluster of @kBlocks blocks (at most
// kReduceMaxClusterBlocks), launched as one cluster; device code without
// clusters (before sm_90) runs block 0 alone.
template <uint32_t kBlocks>
__global__ void __launch_bounds__(kReduceThreads, 1) P3DC_CLUSTER_DIMS(kBlocks)
    reduce_cluster_kernel(const unsigned long long *mask,
                          const unsigned long long *column_mask,
                          uint32_t capacity, const uint2 *pair_counts,
                          const uint16_t *pair_columns,
                          const uint16_t *pair_rows, const uint32_t *item_count,
                          const uint32_t *order, const CallOutput *call,
                          uint32_t record_words, uint32_t limit) {
  static_assert(kBlocks <= kReduceMaxClusterBlocks, "a portable cluster");
  if (!P3DC_DEVICE_HAS_CLUSTERS && blockIdx.x != 0) return;
  reduce<kBlocks>(mask, column_mask, capacity, pair_counts, pair_columns,
                  pair_rows, item_count, order, call, record_words, limit);
}

}  // namespace p3dc_nms

#endif  // P3DC_NMS_REDUCE_CUH
