// Stages 1 to 3 of bevpool_geometry.cu: the kept frustum points in key
// order, stable (within a key in frustum order, (camera, u, v, d)), with
// each key's first position and each point's chunk flag, without a
// device-wide sort.
//
// The frustum is cut into pieces of kPiece consecutive points:
//  1. piece_kernel, a block per piece: projects its points, sorts them by
//     key in shared memory (CUB's block radix sort, which is stable),
//     stages the sorted entries and lists the piece's segments, one per key
//     it holds, as (key, start, count); each segment adds one segment and
//     its points to its key's counts;
//  2. an exclusive sum of the counts over the keys gives each key its first
//     position (cell_start) and its first slot in the segment lists; then
//     list_kernel files every segment under its key (in any order) and
//     writes cell_start;
//  3. place_kernel, a block per piece: a segment's position in its key is
//     the key's first position plus the counts of the key's segments from
//     earlier pieces, summed from the key's list; then the staged entries
//     go to their positions, with their chunk flags (bevpool.h's rule).
//
// Why not CUB's device radix sort of every point by key: its histogram and
// passes over every frustum point were nearly half of the geometry's time
// (docs/performance.md).  Here each point is sorted once, on chip.  A piece
// holds few keys: its points are about 17 neighbouring image rows of one
// feature column, and the rows' points at one depth bin mostly share a cell
// (the grid has one z cell), so a key's list of segments stays short (at
// most 52 on the nuScenes calibration).  A key in many pieces (a huge cell)
// costs its segments a longer list; the tests include one cell of 64 pieces.
#ifndef P3DC_BEVPOOL_GEOMETRY_ORDER_CUH
#define P3DC_BEVPOOL_GEOMETRY_ORDER_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>

#include "bevpool-private.h"

namespace p3dc_bevpool_order {

constexpr uint32_t kPieceThreads = 256;
constexpr uint32_t kPieceItems = 8;
constexpr uint32_t kPiece = kPieceThreads * kPieceItems;
// Bits per pass of the pieces' block sort: 18-bit keys (nuScenes) sort in
// 5 passes; 5 or 6 bits (fewer passes, more shared memory) were no faster
// (docs/performance.md).
constexpr int kPieceRadixBits = 4;
static_assert(kPieceItems <= 32, "a thread's segment starts fit a word");
// A segment's start and count share a word: start in the low 16 bits.
static_assert(kPiece < (1u << 16), "a piece position fits in 16 bits");

// Cameras whose constants travel in one launch's parameters (8 x 192 bytes
// stays well inside the 4 KB parameter space), so no host buffer has to
// outlive the call.
constexpr uint32_t kCamerasPerLaunch = 8;

struct CameraBatch {
  P3dcBevCamera cameras[kCamerasPerLaunch];
  uint32_t first;
  uint32_t count;
};

struct PieceArgs {
  P3dcBevFrustumGrid grid;
  P3dcBevBlocking blocking;
  CameraBatch batch;
  uint32_t first_piece;  // the batch's first piece
  uint32_t keys;         // also the key of a dropped point
  uint32_t key_bits;
  uint32_t *staged;          // [pieces * kPiece] entries, piece-sorted
  uint2 *segments;           // [pieces * kPiece] (key, start | count << 16)
  uint32_t *piece_segments;  // [pieces]
  unsigned long long *key_counts;  // [keys + 1] segments << 32 | points
  // [keys + 1] the lists' cursors, which the first batch's launch clears
  // (list_kernel is the next to touch them); null for the other batches
  uint32_t *cursor;
};

__device__ __forceinline__ uint32_t segment_word(uint32_t start,
                                                 uint32_t count) {
  return start | count << 16;
}

// Stage 1.  Thread t projects points t * kPieceItems + j of the piece, so
// that its items are consecutive depth bins of (mostly) one column: the
// column's ray is computed when the column changes, and no division splits
// an index after the first.  Items past the batch, like dropped points,
// carry the key `keys`, which sorts last and is not listed.
static __global__ void __launch_bounds__(kPieceThreads)
    piece_kernel(const PieceArgs a) {
  using Sort = cub::BlockRadixSort<uint32_t, kPieceThreads, kPieceItems,
                                   uint32_t, kPieceRadixBits>;
  using Scan = cub::BlockScan<uint32_t, kPieceThreads>;
  // the sort's storage, then the segments'
  __shared__ union {
    typename Sort::TempStorage sort;
    struct {
      typename Scan::TempStorage scan;
      uint32_t start[kPiece + 1];
      uint32_t key[kPiece];
    } segments;
  } temp;
  __shared__ uint32_t last_key[kPieceThreads];
  __shared__ uint32_t seg_total;
  uint32_t *const seg_start = temp.segments.start;
  uint32_t *const seg_key = temp.segments.key;

  const P3dcBevFrustumGrid &grid = a.grid;
  const uint32_t bins = grid.depth_bins;
  const uint32_t column_points = grid.feat_height * bins;
  const uint32_t camera_points = grid.feat_width * column_points;
  const uint32_t batch_points = a.batch.count * camera_points;
  const uint32_t piece = a.first_piece + blockIdx.x;
  const uint32_t tid = threadIdx.x;

  // The first item's (camera, u, v, d) in the batch, then step by step.
  uint32_t i = blockIdx.x * kPiece + tid * kPieceItems;
  uint32_t local = i / camera_points;
  uint32_t rest = i - local * camera_points;
  uint32_t u = rest / column_points;
  rest -= u * column_points;
  uint32_t v = rest / bins;
  uint32_t d = rest - v * bins;
  uint32_t keys[kPieceItems], entries[kPieceItems];
  P3dcBevRay ray;
  bool have_ray = false;
#pragma unroll
  for (uint32_t j = 0; j < kPieceItems; j++, i++) {
    keys[j] = a.keys;
    entries[j] = 0;
    if (i < batch_points) {
      const uint32_t camera = a.batch.first + local;
      const P3dcBevCamera *cam = &a.batch.cameras[local];
      if (!have_ray) p3dc_bevpool_column_ray(&grid, cam, u, v, &ray);
      have_ray = true;
      const uint32_t cell = p3dc_bevpool_ray_cell(&grid, cam, &ray, d);
      if (cell < grid.cells)
        keys[j] = p3dc_bevpool_block_key(&a.blocking, cell);
      entries[j] = p3dc_bevpool_entry_pack(
          p3dc_bevpool_column_key(&grid, camera, u, v), d, grid.col_bits);
    }
    if (++d == bins) {
      d = 0;
      have_ray = false;
      if (++v == grid.feat_height) {
        v = 0;
        if (++u == grid.feat_width) {
          u = 0;
          local++;
        }
      }
    }
  }

  Sort(temp.sort).Sort(keys, entries, 0, (int)a.key_bits);
  // Sorted position tid * kPieceItems + j: stage the entry; a position
  // starts a segment where its key differs from the one before.
  uint32_t *staged = a.staged + (size_t)piece * kPiece;
#pragma unroll
  for (uint32_t j = 0; j < kPieceItems; j++)
    staged[tid * kPieceItems + j] = entries[j];
  last_key[tid] = keys[kPieceItems - 1];
  // last_key complete; the sort's storage is free for the scan
  __syncthreads();
  // bit j: sorted position tid * kPieceItems + j starts a segment
  uint32_t starts = 0;
#pragma unroll
  for (uint32_t j = 0; j < kPieceItems; j++) {
    const uint32_t before =
        j > 0 ? keys[j - 1] : (tid > 0 ? last_key[tid - 1] : ~0u);
    starts |= (uint32_t)(keys[j] != before) << j;
  }
  uint32_t index, total;
  Scan(temp.segments.scan).ExclusiveSum((uint32_t)__popc(starts), index, total);
#pragma unroll
  for (uint32_t j = 0; j < kPieceItems; j++) {
    if ((starts >> j) & 1u) {
      seg_start[index] = tid * kPieceItems + j;
      seg_key[index] = keys[j];
      index++;
    }
  }
  if (tid == 0) {
    // The dropped key, when the piece has it, is the last segment: the
    // kept points end where it starts.
    seg_total = total;
    seg_start[total] = kPiece;
  }
  // seg_start[], seg_key[] and seg_total complete
  __syncthreads();
  uint32_t kept_segments = seg_total;
  if (kept_segments > 0 && seg_key[kept_segments - 1] == a.keys)
    kept_segments--;
  uint2 *segments = a.segments + (size_t)piece * kPiece;
  for (uint32_t s = tid; s < kept_segments; s += kPieceThreads) {
    const uint32_t key = seg_key[s];
    const uint32_t count = seg_start[s + 1] - seg_start[s];
    segments[s] = make_uint2(key, segment_word(seg_start[s], count));
    atomicAdd(&a.key_counts[key], (1ull << 32) | count);
  }
  if (tid == 0) a.piece_segments[piece] = kept_segments;
  if (a.cursor != nullptr)
    for (uint32_t k = blockIdx.x * kPieceThreads + tid; k <= a.keys;
         k += gridDim.x * kPieceThreads)
      a.cursor[k] = 0;
}

// Stage 2, after the exclusive sum of key_counts into key_bases: a block
// per piece files the piece's segments in their keys' lists, as the
// segment's slot (piece * kPiece + its index) and its start and count (the
// cursors were cleared in stage 1).  The grid also writes the first
// position of every key (the last, keys, is the kept count) and clears the
// chunk flags past the kept points (the chunk scan reads points + 1 of
// them).
static __global__ void list_kernel(const uint2 *segments,
                                   const uint32_t *piece_segments,
                                   const unsigned long long *key_bases,
                                   uint32_t keys, uint32_t points,
                                   uint32_t *cursor, uint2 *lists,
                                   uint32_t *cell_start,
                                   uint32_t *chunk_flags) {
  const uint32_t first = blockIdx.x * kPiece;
  const uint32_t count = piece_segments[blockIdx.x];
  for (uint32_t s = threadIdx.x; s < count; s += blockDim.x) {
    const uint2 segment = segments[first + s];
    const uint32_t at = (uint32_t)(key_bases[segment.x] >> 32) +
                        atomicAdd(&cursor[segment.x], 1u);
    lists[at] = make_uint2(first + s, segment.y);
  }
  const uint32_t stride = gridDim.x * blockDim.x;
  const uint32_t thread = blockIdx.x * blockDim.x + threadIdx.x;
  for (uint32_t k = thread; k <= keys; k += stride)
    cell_start[k] = (uint32_t)key_bases[k];
  const uint32_t kept = (uint32_t)key_bases[keys];
  for (uint32_t i = kept + thread; i <= points; i += stride) chunk_flags[i] = 0;
}

// Stage 3, a block per piece.  First a thread per segment: the segment
// goes after its key's points in earlier pieces (the sum of their counts in
// the key's list), and its first point after the last of them.  Then a
// thread per staged position: the entry to its position in key order, with
// its chunk flag; a position finds its segment by a binary search of the
// starts.
static __global__ void __launch_bounds__(kPieceThreads)
    place_kernel(const uint2 *segments, const uint32_t *piece_segments,
                 const unsigned long long *key_bases, const uint2 *lists,
                 const uint32_t *staged, uint32_t col_mask, uint32_t *entries,
                 uint32_t *chunk_flags) {
  // The staged entries are read twice (entry and predecessor): from shared
  // memory, though 36 KB of it leave 6 blocks on an SM, not 8 (from global
  // memory, with 8 blocks an SM, the stage was slower).
  __shared__ uint32_t s_entry[kPiece];
  __shared__ uint16_t s_start[kPiece];
  __shared__ uint32_t s_first[kPiece], s_before[kPiece], s_previous[kPiece];
  const uint32_t piece = blockIdx.x;
  const uint32_t first = piece * kPiece;
  const uint32_t count = piece_segments[piece];
  for (uint32_t p = threadIdx.x; p < kPiece; p += kPieceThreads)
    s_entry[p] = staged[first + p];
  for (uint32_t s = threadIdx.x; s < count; s += kPieceThreads) {
    const uint2 segment = segments[first + s];
    const unsigned long long base = key_bases[segment.x];
    const uint32_t list = (uint32_t)(base >> 32);
    const uint32_t listed = (uint32_t)(key_bases[segment.x + 1] >> 32) - list;
    // before: the key's points in earlier pieces; latest: the staged index
    // + 1 of the last of them (0: none), the greatest piece's
    uint32_t before = 0, latest = 0;
    for (uint32_t i = 0; i < listed; i++) {
      const uint2 other = lists[list + i];
      if (other.x < first) {
        const uint32_t other_count = other.y >> 16;
        before += other_count;
        const uint32_t last =
            other.x / kPiece * kPiece + (other.y & 0xffffu) + other_count;
        latest = last > latest ? last : latest;
      }
    }
    s_start[s] = (uint16_t)(segment.y & 0xffffu);
    s_first[s] = (uint32_t)base + before;
    s_before[s] = before;
    s_previous[s] = latest > 0 ? staged[latest - 1] & col_mask : 0;
  }
  // the piece's kept points end where its last segment does
  uint32_t end = 0;
  if (count > 0) {
    const uint32_t last = segments[first + count - 1].y;
    end = (last & 0xffffu) + (last >> 16);
  }
  // the shared arrays complete
  __syncthreads();
  for (uint32_t p = threadIdx.x; p < end; p += kPieceThreads) {
    uint32_t lo = 0, hi = count - 1;  // the last segment starting at <= p
    while (lo < hi) {
      const uint32_t mid = (lo + hi + 1) / 2;
      if (s_start[mid] <= p)
        lo = mid;
      else
        hi = mid - 1;
    }
    const uint32_t offset = p - s_start[lo];
    const uint32_t entry = s_entry[p];
    const uint32_t prior =
        offset > 0 ? s_entry[p - 1] & col_mask : s_previous[lo];
    entries[s_first[lo] + offset] = entry;
    chunk_flags[s_first[lo] + offset] =
        p3dc_bevpool_chunk_starts(s_before[lo] + offset, prior,
                                  entry & col_mask)
            ? 1u
            : 0u;
  }
}

}  // namespace p3dc_bevpool_order

#endif  // P3DC_BEVPOOL_GEOMETRY_ORDER_CUH
