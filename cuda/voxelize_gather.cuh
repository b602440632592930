// Kernel 3 of 3: writes the output rows and cleans up.
//
// A voxel's segment holds its point indices in no particular order; the
// smallest max_points of them, in increasing order, are the points the
// reference keeps.  Two kinds of work share the grid:
//   - long voxels (more than kSoloPoints points, listed by the scan): one
//     warp each.  Up to 32 points: a warp sort.  More (max_points <= 32): a
//     threshold selection in two coalesced passes over the segment (the two
//     smallest indices of each lane bound the max_points-th smallest from
//     above; the indices under that bound, about max_points of them, are
//     sorted), whatever the segment's length; the exact merge selection is
//     kept for max_points > 32 and for the rare overflow of the candidates.
//   - rows in groups of 32 consecutive rows, one per lane: a lane gathers a
//     voxel of up to kSoloPoints points alone (most voxels: 88 % of the
//     nuScenes pillars, 97 % of CenterPoint's 3D voxels), writes num_points
//     and coords, and clears what the previous output left in the row.
// Slots that the previous output filled and this one does not are zeroed,
// rows past this frame's count that the previous output used are cleared
// (with output_clean = 0: every row past it, here, instead of a memset),
// and every cell entry of the frame (voxels beyond max_voxels included) is
// reset for the next one: the workspace needs no memset.
//
// Why a threshold selection for the long voxels: merging a long voxel's
// points chunk by chunk into a running selection makes its time grow with
// its length (a 2086-point nuScenes pillar is about 44 sorts and merges in
// one warp, while the rest of the GPU idles); the selection reads the
// segment twice (17 16-byte loads a lane per pass) and sorts 64 then 128
// values, whatever the voxel's length.
#ifndef P3DC_VOXELIZE_GATHER_CUH
#define P3DC_VOXELIZE_GATHER_CUH

#include "voxelize_common.cuh"

namespace p3dc_voxelize {

// Chunks of 32 indices a lane loads at once in the merge selection.
constexpr int kSegmentBatch = 8;
// Warps a block: small blocks spread a small frame's rows over more
// multiprocessors, and fewer than 4 lose on large frames
// (docs/performance.md).
constexpr int kGatherMaxWarps = 4;
// The threshold selection's candidates: 4 per lane, in shared memory.
constexpr int kCandidateRounds = 4;
constexpr uint32_t kCandidates = 32 * kCandidateRounds;
// 16-byte loads in flight per lane in a pass over a long segment.
constexpr int kPassUnroll = 4;

struct GatherArgs {
  P3dcVoxelizeParams params;
  const float *points;
  CellTable table;
  const uint32_t *sorted;  // 16-byte aligned, readable to a multiple of 4
  const VoxelInfo *voxel_info;
  const uint32_t *long_voxels;
  const Counters *counters;
  float *voxels;
  uint32_t *num_points;
  int32_t *coords;
  P3dcVoxelizeStats *stats;  // may be null
  int output_clean;
  uint32_t warp_words;  // shared words per warp (see gather_warp_words)
};

// Shared words a warp needs: the candidates, or the merge selection's two
// lists of max_points and a chunk of 32.
static inline uint32_t gather_warp_words(uint32_t max_points) {
  const uint32_t merge = 2 * max_points + 32;
  return merge > kCandidates ? merge : kCandidates;
}

// Bitonic sort of 32 * R values, R per lane (value e = r * 32 + lane in
// v[r]), ascending in e.  Partners closer than 32 are in other lanes
// (shuffles), farther ones in the same lane (registers).
template <int R>
static __device__ __forceinline__ void warp_sort_rounds(uint32_t (&v)[R],
                                                        int lane) {
#pragma unroll
  for (int size = 2; size <= 32 * R; size <<= 1) {
#pragma unroll
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      if (stride >= 32) {
#pragma unroll
        for (int r = 0; r < R; r++) {
          const int p = r ^ (stride / 32);
          if (p > r) {
            const bool ascending = ((r * 32 + lane) & size) == 0;
            const uint32_t low = min(v[r], v[p]), high = max(v[r], v[p]);
            v[r] = ascending ? low : high;
            v[p] = ascending ? high : low;
          }
        }
      } else {
#pragma unroll
        for (int r = 0; r < R; r++) {
          const uint32_t other = __shfl_xor_sync(kFullMask, v[r], stride);
          const bool ascending = ((r * 32 + lane) & size) == 0;
          const bool lower = (lane & stride) == 0;
          v[r] = (lower == ascending) ? min(v[r], other) : max(v[r], other);
        }
      }
    }
  }
}

static __device__ __forceinline__ uint32_t warp_sort(uint32_t value, int lane) {
  uint32_t v[1] = {value};
  warp_sort_rounds<1>(v, lane);
  return v[0];
}

// The same network on kSoloPoints values held by one thread.
static __device__ __forceinline__ void thread_sort(uint32_t (&v)[kSoloPoints]) {
#pragma unroll
  for (int size = 2; size <= (int)kSoloPoints; size <<= 1) {
#pragma unroll
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
#pragma unroll
      for (int i = 0; i < (int)kSoloPoints; i++) {
        const int j = i ^ stride;
        if (j > i) {
          const bool ascending = (i & size) == 0;
          const uint32_t low = min(v[i], v[j]), high = max(v[i], v[j]);
          v[i] = ascending ? low : high;
          v[j] = ascending ? high : low;
        }
      }
    }
  }
}

// The number of values in sorted[0, n) smaller than @value.
static __device__ __forceinline__ uint32_t count_below(const uint32_t *sorted,
                                                       uint32_t n,
                                                       uint32_t value) {
  uint32_t low = 0, high = n;
  while (low < high) {
    const uint32_t middle = (low + high) >> 1;
    if (sorted[middle] < value)
      low = middle + 1;
    else
      high = middle;
  }
  return low;
}

// The @limit smallest of a segment of more than 32 distinct indices, sorted,
// in shared memory: a running selection merged with each chunk of 32 that
// has an index below the current limit-th smallest (other chunks cost one
// ballot).  @best and @spare hold @limit words, @chunk 32.  Exact for any
// limit, but serial in the chunks that enter: the fallback.
static __device__ const uint32_t *select_long(const uint32_t *segment,
                                              uint32_t count, uint32_t limit,
                                              uint32_t *best, uint32_t *spare,
                                              uint32_t *chunk, int lane,
                                              uint32_t *kept) {
  uint32_t filled = 0;
  for (uint32_t start = 0; start < count; start += 32 * kSegmentBatch) {
    uint32_t loaded[kSegmentBatch];
#pragma unroll
    for (int b = 0; b < kSegmentBatch; b++) {
      const uint32_t at = start + 32 * b + lane;
      loaded[b] = at < count ? segment[at] : kNone;
    }
#pragma unroll
    for (int b = 0; b < kSegmentBatch; b++) {
      const uint32_t bound = filled == limit ? best[limit - 1] : kNone;
      uint32_t value = loaded[b] < bound ? loaded[b] : kNone;
      const unsigned entering = __ballot_sync(kFullMask, value != kNone);
      if (entering == 0) continue;
      value = warp_sort(value, lane);
      const uint32_t entering_count = __popc(entering);
      chunk[lane] = value;
      __syncwarp();
      // Merge by rank: every value's place is its index in its own sorted
      // list plus the number of smaller values in the other list.
      for (uint32_t i = lane; i < filled; i += 32) {
        const uint32_t held = best[i];
        const uint32_t at = i + count_below(chunk, entering_count, held);
        if (at < limit) spare[at] = held;
      }
      if ((uint32_t)lane < entering_count) {
        const uint32_t at = lane + count_below(best, filled, value);
        if (at < limit) spare[at] = value;
      }
      __syncwarp();
      uint32_t *swap = best;
      best = spare;
      spare = swap;
      filled = min(limit, filled + entering_count);
    }
  }
  *kept = filled;
  return best;
}

// The kept point indices of a long voxel when max_points > 32, sorted, in
// the warp's shared words.
static __device__ const uint32_t *select_points(const uint32_t *segment,
                                                uint32_t count, uint32_t limit,
                                                uint32_t *warp_shared, int lane,
                                                uint32_t *kept) {
  uint32_t *best = warp_shared;
  uint32_t *spare = warp_shared + limit;
  uint32_t *chunk = warp_shared + 2 * limit;
  if (count > 32)
    return select_long(segment, count, limit, best, spare, chunk, lane, kept);
  uint32_t value = (uint32_t)lane < count ? segment[lane] : kNone;
  value = warp_sort(value, lane);
  *kept = min(count, limit);
  if ((uint32_t)lane < *kept) best[lane] = value;
  __syncwarp();
  return best;
}

// The word @w of the segment [offset, offset + count) of @sorted, read as
// 16-byte chunks from the aligned word offset & ~3: words of the chunks
// outside the segment read as kNone.  Chunk q of the segment is
// chunks[q]; it has words 4q .. 4q + 3, counted from the aligned start.
struct SegmentChunks {
  const uint4 *chunks;
  uint32_t head;  // words before the segment in the first chunk
  uint32_t end;   // head + count
  uint32_t n;     // chunks
};

static __device__ __forceinline__ SegmentChunks
segment_chunks(const uint32_t *sorted, uint32_t offset, uint32_t count) {
  SegmentChunks s;
  s.head = offset & 3u;
  s.chunks = reinterpret_cast<const uint4 *>(sorted + (offset - s.head));
  s.end = s.head + count;
  s.n = (s.end + 3u) / 4u;
  return s;
}

// Loads chunk @q (kNone words outside the segment) as four words.
static __device__ __forceinline__ void load_chunk(const SegmentChunks &s,
                                                  uint32_t q,
                                                  uint32_t (&w)[4]) {
  uint4 c = make_uint4(kNone, kNone, kNone, kNone);
  if (q < s.n) c = s.chunks[q];
  w[0] = c.x;
  w[1] = c.y;
  w[2] = c.z;
  w[3] = c.w;
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const uint32_t word = 4 * q + j;
    if (q >= s.n || word < s.head || word >= s.end) w[j] = kNone;
  }
}

// The @limit (<= 32) smallest indices of a segment of more than 32, sorted:
// returns @limit with slot s's index in lane s's *value, or 0 when more
// than kCandidates indices fall under the bound (then nothing is selected).
//
// Pass 1: every lane keeps the two smallest of its words; the limit-th
// smallest u of those 64 values bounds the limit-th smallest of the
// segment from above (it is the limit-th smallest of a subset).  Pass 2:
// every index <= u is a candidate (at least limit of them, about limit in
// practice); sorted, their first limit are the answer.  With fewer than
// limit real values among the 64 (a segment of under 64 indices), u is
// kNone and every index is a candidate: at most 64 <= kCandidates.
static __device__ uint32_t select_threshold(const uint32_t *sorted,
                                            uint32_t offset, uint32_t count,
                                            uint32_t limit,
                                            uint32_t *candidates, int lane,
                                            uint32_t *value) {
  const SegmentChunks s = segment_chunks(sorted, offset, count);
  uint32_t pool[2] = {kNone, kNone};
  // Loops run the same trips on every lane: the ballots see the whole warp.
  for (uint32_t first = 0; first < s.n; first += 32 * kPassUnroll) {
    uint32_t w[kPassUnroll][4];
#pragma unroll
    for (int u = 0; u < kPassUnroll; u++)
      load_chunk(s, first + 32 * u + lane, w[u]);
#pragma unroll
    for (int u = 0; u < kPassUnroll; u++)
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const uint32_t high = max(pool[0], w[u][j]);
        pool[0] = min(pool[0], w[u][j]);
        pool[1] = min(pool[1], high);
      }
  }
  warp_sort_rounds<2>(pool, lane);
  const uint32_t bound = __shfl_sync(kFullMask, pool[0], limit - 1);

  const unsigned below = (1u << lane) - 1u;
  uint32_t total = 0;
  for (uint32_t first = 0; first < s.n; first += 32 * kPassUnroll) {
    uint32_t w[kPassUnroll][4];
#pragma unroll
    for (int u = 0; u < kPassUnroll; u++)
      load_chunk(s, first + 32 * u + lane, w[u]);
#pragma unroll
    for (int u = 0; u < kPassUnroll; u++)
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const bool take = w[u][j] <= bound && w[u][j] != kNone;
        const unsigned takers = __ballot_sync(kFullMask, take);
        const uint32_t at = total + __popc(takers & below);
        if (take && at < kCandidates) candidates[at] = w[u][j];
        total += __popc(takers);
      }
  }
  // The candidates written above are visible to the whole warp, and (on
  // overflow) the caller may reuse the words.
  __syncwarp();
  if (total > kCandidates) return 0;
  uint32_t v[kCandidateRounds];
#pragma unroll
  for (int r = 0; r < kCandidateRounds; r++) {
    const uint32_t e = 32 * r + lane;
    v[r] = e < total ? candidates[e] : kNone;
  }
  // Read before the next voxel of this warp rewrites them.
  __syncwarp();
  warp_sort_rounds<kCandidateRounds>(v, lane);
  *value = v[0];
  return limit;
}

static __device__ __forceinline__ uint32_t *row_words(const GatherArgs &a,
                                                      uint32_t voxel) {
  return reinterpret_cast<uint32_t *>(a.voxels) +
         (size_t)voxel * a.params.max_points * a.params.channels;
}

// The warp writes points[indices[slot]] into slots [0, kept) of row
// @voxel, indices in shared memory.  Bits are copied as integers, so NaN
// payloads survive.
static __device__ void write_row(const GatherArgs &a, uint32_t voxel,
                                 const uint32_t *indices, uint32_t kept,
                                 int lane) {
  const uint32_t channels = a.params.channels;
  const uint32_t *source = reinterpret_cast<const uint32_t *>(a.points);
  uint32_t *row = row_words(a, voxel);
  const uint32_t words = kept * channels;
  const uint32_t slot_step = 32 / channels;
  const uint32_t channel_step = 32 % channels;
  uint32_t slot = lane / channels;
  uint32_t channel = lane % channels;
  for (uint32_t word = lane; word < words; word += 32 * 4) {
    uint32_t bits[4];
    // Loads first, stores after: the four loads overlap.
#pragma unroll
    for (int u = 0; u < 4; u++) {
      bits[u] = 0;
      if (word + 32 * u < words)
        bits[u] = __ldg(source + (size_t)indices[slot] * channels + channel);
      slot += slot_step;
      channel += channel_step;
      if (channel >= channels) {
        channel -= channels;
        slot++;
      }
    }
#pragma unroll
    for (int u = 0; u < 4; u++)
      if (word + 32 * u < words) row[word + 32 * u] = bits[u];
  }
}

// The same with slot s's index in lane s's @value (kept <= 32).
template <int kChannels>
static __device__ void write_row_lanes(const GatherArgs &a, uint32_t voxel,
                                       uint32_t value, uint32_t kept,
                                       int lane) {
  const uint32_t channels = kChannels > 0 ? kChannels : a.params.channels;
  const uint32_t *source = reinterpret_cast<const uint32_t *>(a.points);
  uint32_t *row = row_words(a, voxel);
  const uint32_t words = kept * channels;
  for (uint32_t first = 0; first < words; first += 32 * 4) {
    uint32_t bits[4];
#pragma unroll
    for (int u = 0; u < 4; u++) {
      const uint32_t word = first + 32 * u + lane;
      const uint32_t slot = word / channels;
      // Every lane shuffles (the loop trips are the same on all lanes).
      const uint32_t index = __shfl_sync(kFullMask, value, slot & 31u);
      bits[u] = 0;
      if (word < words)
        bits[u] =
            __ldg(source + (size_t)index * channels + (word - slot * channels));
    }
#pragma unroll
    for (int u = 0; u < 4; u++) {
      const uint32_t word = first + 32 * u + lane;
      if (word < words) row[word] = bits[u];
    }
  }
}

// The warp zeros slots [from, to) of row @voxel.
static __device__ void zero_slots(const GatherArgs &a, uint32_t voxel,
                                  uint32_t from, uint32_t to, int lane) {
  uint32_t *row = row_words(a, voxel);
  const uint32_t end = to * a.params.channels;
  for (uint32_t word = from * a.params.channels + lane; word < end; word += 32)
    row[word] = 0;
}

// The grid zeros words [begin, end) of @words (4-byte aligned): single
// words up to a 16-byte boundary and after the last one, 16-byte stores
// between.
static __device__ void zero_words(uint32_t *words, size_t begin, size_t end,
                                  size_t thread, size_t threads) {
  if (begin >= end) return;
  uint32_t *p = words + begin;
  const size_t n = end - begin;
  size_t head = ((16u - ((uintptr_t)p & 15u)) & 15u) / 4u;
  if (head > n) head = n;
  const size_t body = (n - head) / 4;
  const size_t tail = n - head - 4 * body;
  if (thread < head) p[thread] = 0;
  uint4 *vectors = reinterpret_cast<uint4 *>(p + head);
  for (size_t i = thread; i < body; i += threads)
    vectors[i] = make_uint4(0u, 0u, 0u, 0u);
  if (thread < tail) p[head + 4 * body + thread] = 0;
}

static __device__ __forceinline__ void write_row_info(const GatherArgs &a,
                                                      uint32_t voxel,
                                                      uint32_t kept,
                                                      uint32_t cell,
                                                      bool has_voxel) {
  int32_t coords[4] = {0, 0, 0, 0};
  if (has_voxel) p3dc_voxelize_cell_coords(&a.params, cell, coords);
  a.num_points[voxel] = kept;
  a.coords[4 * (size_t)voxel + 0] = coords[0];
  a.coords[4 * (size_t)voxel + 1] = coords[1];
  a.coords[4 * (size_t)voxel + 2] = coords[2];
  a.coords[4 * (size_t)voxel + 3] = coords[3];
}

static __device__ __forceinline__ void reset_entry(const GatherArgs &a,
                                                   uint32_t entry) {
  reinterpret_cast<uint4 *>(a.table.entries)[entry] =
      make_uint4(0u, kNone, kNone, kNone);
}

// What the previous output held in row @voxel (read before it is replaced):
// its num_points when clean, else anything (the whole row is rewritten).
static __device__ __forceinline__ uint32_t previous_points(const GatherArgs &a,
                                                           uint32_t voxel) {
  const uint32_t max_points = a.params.max_points;
  return a.output_clean ? min(a.num_points[voxel], max_points) : max_points;
}

// One lane gathers a voxel of at most kSoloPoints points; returns the points
// kept.  kChannels is the point size when known at compile time (0: read
// it from the params), so that every load can be issued before the stores.
template <int kChannels>
static __device__ uint32_t gather_alone(const GatherArgs &a, uint32_t voxel,
                                        const VoxelInfo &info) {
  uint32_t index[kSoloPoints];
  // A one-point voxel's info holds the point itself.
#pragma unroll
  for (uint32_t r = 0; r < kSoloPoints; r++)
    index[r] = r >= info.count   ? kNone
               : info.count == 1 ? info.offset
                                 : a.sorted[info.offset + r];
  if (info.count > 1) thread_sort(index);
  const uint32_t kept = min(info.count, a.params.max_points);
  const uint32_t *source = reinterpret_cast<const uint32_t *>(a.points);
  uint32_t *row = row_words(a, voxel);
  if constexpr (kChannels > 0) {
    // Half the slots at a time: the loads of a half overlap, and the
    // registers they need leave room for four blocks per multiprocessor.
#pragma unroll
    for (uint32_t first = 0; first < kSoloPoints; first += kSoloPoints / 2) {
      if (first >= kept) break;
      uint32_t bits[kSoloPoints / 2][kChannels];
#pragma unroll
      for (uint32_t r = 0; r < kSoloPoints / 2; r++)
        if (first + r < kept)
#pragma unroll
          for (int c = 0; c < kChannels; c++)
            bits[r][c] =
                __ldg(source + (size_t)index[first + r] * kChannels + c);
#pragma unroll
      for (uint32_t r = 0; r < kSoloPoints / 2; r++)
        if (first + r < kept)
#pragma unroll
          for (int c = 0; c < kChannels; c++)
            row[(first + r) * kChannels + c] = bits[r][c];
    }
  } else {
    const uint32_t channels = a.params.channels;
#pragma unroll
    for (uint32_t r = 0; r < kSoloPoints; r++)
      if (r < kept)
        for (uint32_t c = 0; c < channels; c++)
          row[r * channels + c] =
              __ldg(source + (size_t)index[r] * channels + c);
  }
  return kept;
}

// The warp gathers listed voxel @voxel (more than kSoloPoints points, with
// an output row): its row, the zeros after it, num_points and coords, and
// its entry's reset.  Returns (on lane 0) the points it drops.
template <int kChannels>
static __device__ uint32_t gather_long(const GatherArgs &a, uint32_t voxel,
                                       uint32_t *warp_shared, int lane) {
  const VoxelInfo info = a.voxel_info[voxel];
  const uint32_t max_points = a.params.max_points;
  // One lane reads what the row held (lane 0 rewrites num_points below);
  // the load is in flight during the selection, shared after it.
  uint32_t previous = lane == 0 ? previous_points(a, voxel) : 0u;
  uint32_t kept = 0;
  if (max_points <= 32) {
    uint32_t value = kNone;
    if (info.count <= 32) {
      value =
          (uint32_t)lane < info.count ? a.sorted[info.offset + lane] : kNone;
      value = warp_sort(value, lane);
      kept = min(info.count, max_points);
    } else {
      kept = select_threshold(a.sorted, info.offset, info.count, max_points,
                              warp_shared, lane, &value);
      if (kept == 0) {
        const uint32_t *best =
            select_long(a.sorted + info.offset, info.count, max_points,
                        warp_shared, warp_shared + max_points,
                        warp_shared + 2 * max_points, lane, &kept);
        value = (uint32_t)lane < kept ? best[lane] : kNone;
        // Read before the next voxel of this warp rewrites them.
        __syncwarp();
      }
    }
    write_row_lanes<kChannels>(a, voxel, value, kept, lane);
  } else {
    const uint32_t *indices =
        select_points(a.sorted + info.offset, info.count, max_points,
                      warp_shared, lane, &kept);
    write_row(a, voxel, indices, kept, lane);
    // Read before the next voxel of this warp rewrites them.
    __syncwarp();
  }
  previous = __shfl_sync(kFullMask, previous, 0);
  if (previous > kept) zero_slots(a, voxel, kept, previous, lane);
  if (lane != 0) return 0;
  write_row_info(a, voxel, kept, info.cell, true);
  reset_entry(a, info.entry);
  return info.count - kept;
}

template <int kChannels>
static __global__ __launch_bounds__(kGatherMaxWarps * 32,
                                    4) void gather_kernel(GatherArgs a) {
  extern __shared__ uint32_t shared_words[];
  __shared__ uint32_t block_over_points, block_over_voxels;

  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const uint32_t warps_in_block = blockDim.x >> 5;
  const uint32_t warp_id = blockIdx.x * warps_in_block + warp;
  const uint32_t warp_count = gridDim.x * warps_in_block;
  uint32_t *warp_shared = shared_words + warp * a.warp_words;
  const uint32_t max_voxels = a.params.max_voxels;
  if (threadIdx.x == 0) {
    block_over_points = 0;
    block_over_voxels = 0;
  }
  p3dc_wait_for_previous_kernel();
  __syncthreads();

  const uint32_t total = a.counters->total_voxels;
  const uint32_t rows = max(total, a.counters->prev_count);
  const uint32_t n_long = a.counters->long_count;
  uint32_t over_points = 0, over_voxels = 0;

  // A full write: rows past this frame's count become zeros here (stores
  // only, issued before the latency-bound work below); rows before it are
  // written whole by their owners (previous_points() is max_points).
  if (!a.output_clean) {
    const size_t thread = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t threads = (size_t)gridDim.x * blockDim.x;
    const size_t kept_rows = min(total, max_voxels);
    const size_t row = (size_t)a.params.max_points * a.params.channels;
    zero_words(reinterpret_cast<uint32_t *>(a.voxels), kept_rows * row,
               (size_t)max_voxels * row, thread, threads);
    zero_words(a.num_points, kept_rows, max_voxels, thread, threads);
    zero_words(reinterpret_cast<uint32_t *>(a.coords), 4 * kept_rows,
               4 * (size_t)max_voxels, thread, threads);
  }

  // Long voxels, one per warp: the longest work first.
  for (uint32_t item = warp_id; item < n_long; item += warp_count)
    over_points +=
        gather_long<kChannels>(a, a.long_voxels[item], warp_shared, lane);

  // Rows, 32 consecutive ones per warp, dealt from the last warp down so
  // that the warps with long voxels get fewer of them.
  const uint32_t group_warp = warp_count - 1 - warp_id;
  for (size_t group = (size_t)group_warp * 32; group < rows;
       group += (size_t)32 * warp_count) {
    const size_t item = group + lane;
    const uint32_t voxel = item < rows ? (uint32_t)item : kNone;
    const bool has_voxel = voxel < total;
    const bool has_row = voxel < max_voxels;  // kNone is never below it
    VoxelInfo info = {0u, 0u, 0u, 0u};
    if (has_voxel) info = a.voxel_info[voxel];
    // A listed voxel is the long path's, row and entry included (the
    // scan's listing rule).
    const bool listed = has_voxel && has_row && info.count > kSoloPoints;
    const bool row_owner = has_row && !listed;
    const uint32_t previous = row_owner ? previous_points(a, voxel) : 0u;
    uint32_t kept = 0;
    if (row_owner && has_voxel) kept = gather_alone<kChannels>(a, voxel, info);
    if (row_owner) write_row_info(a, voxel, kept, info.cell, has_voxel);
    if (has_voxel && !listed) {
      if (has_row)
        over_points += info.count - kept;
      else
        over_voxels += info.count;
      reset_entry(a, info.entry);
    }

    unsigned zeroing = __ballot_sync(kFullMask, previous > kept);
    while (zeroing != 0) {
      const int owner = __ffs(zeroing) - 1;
      zeroing &= zeroing - 1;
      zero_slots(a, __shfl_sync(kFullMask, voxel, owner),
                 __shfl_sync(kFullMask, kept, owner),
                 __shfl_sync(kFullMask, previous, owner), lane);
    }
  }

#pragma unroll
  for (int stride = 16; stride > 0; stride >>= 1) {
    over_points += __shfl_xor_sync(kFullMask, over_points, stride);
    over_voxels += __shfl_xor_sync(kFullMask, over_voxels, stride);
  }
  if (lane == 0 && over_points != 0) atomicAdd(&block_over_points, over_points);
  if (lane == 0 && over_voxels != 0) atomicAdd(&block_over_voxels, over_voxels);
  __syncthreads();
  if (threadIdx.x == 0 && a.stats != nullptr) {
    if (block_over_points != 0)
      atomicAdd(&a.stats->points_over_max_points, block_over_points);
    if (block_over_voxels != 0)
      atomicAdd(&a.stats->points_over_max_voxels, block_over_voxels);
  }
}

}  // namespace p3dc_voxelize

#endif  // P3DC_VOXELIZE_GATHER_CUH
