// Pillar features on the device; the reference is pillarfeat_cpu.c and the
// arithmetic both share is in pillarfeat.h.
//
// One persistent kernel.  Point slot s = voxel * max_points + point indexes
// the rows of the features tensor; each block takes tiles of them in a
// grid-stride loop, stages a tile's features in shared memory and writes
// its bytes out with 16-byte stores.  Each voxel's mean is summed in point
// order, as the reference.  Two kernels, by max_points:
//  - by points (every max_points up to 32, and the larger ones up to 256
//    whose tile of whole voxels can be a multiple of 8 slots; PointPillars'
//    32 and CenterPoint's 20 among them): a tile is whole voxels, and its
//    threads take the tile's points, not its slots.  A scan of the
//    voxels' point counts places each point, the tile's slots are zeroed,
//    and only the points are loaded and computed: in the real frames most
//    slots are empty (9 points a voxel on average in nuScenes' 30k pillars
//    of 32 slots), and their warps have no work.  docs/performance.md has
//    the figures against the kernels before.
//  - by slots (the rest): one thread a slot of a 256-slot tile; one thread
//    per voxel the tile touches finds the voxel's point count, center and
//    mean, reading the points again from memory, between two block
//    barriers.
// A tile wholly beyond the count is written as zeros without reading the
// input; tiles wholly beyond max (count, previous count) are skipped when
// the output is clean.
//
// A P3dcPillarFeatCuda chooses the kernel and sizes its grid once, and
// launches it as a one-node CUDA graph (kernel_graph.cuh): a graph launch
// costs the host less than a kernel launch, which is a large part of a
// call on small frames (docs/performance.md, "The floor of a call").
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdlib>
#include <type_traits>

#include "kernel_graph.cuh"
#include "pillarfeat-private.h"
#include "sm_threads.cuh"

namespace {

// Slots per tile of the slot kernel, and its threads a block.  Such a tile
// is 256 * F values of 2 or 4 bytes, so every tile starts and ends on a
// 16-byte boundary.
constexpr unsigned kTileSlots = 256;

// The most slots of a tile of the point kernel (whole voxels, a multiple
// of 8 slots, so that every tile starts and ends on a 16-byte boundary for
// every feature count and value size), its threads a block, and so the
// most points a thread takes in a tile.  Blocks of 128 threads, twelve an
// SM, took 1 us off the nuScenes frame in F32 against 256 threads and
// 512-slot tiles, alike in F16; blocks of 256 threads and 256-slot tiles
// lost 3 us (docs/performance.md).
constexpr unsigned kPointTileSlots = 256;
constexpr unsigned kPointThreads = 128;
constexpr unsigned kPointRounds = kPointTileSlots / kPointThreads;

// Blocks per SM the register budget is cut for: six of 256 threads (twelve
// of 128) fill the 1536 threads of an sm_86/87/89 SM; Turing (sm_75) holds
// 1024 threads, hence fewer there (sm_threads.cuh).
constexpr int kMinBlocksPerSm = p3dc_blocks_an_sm(6, kTileSlots);
constexpr int kPointMinBlocksPerSm = p3dc_blocks_an_sm(12, kPointThreads);

// Division by a runtime constant without a division instruction (which the
// device emulates in a few dozen instructions): the method of Granlund and
// Montgomery, exact for every 32-bit dividend and divisor >= 1.
struct Divider {
  uint32_t multiplier;
  uint32_t shift1;
  uint32_t shift2;
};

Divider make_divider(uint32_t divisor) {
  uint32_t log2_ceil = 0;
  while ((1ull << log2_ceil) < divisor) log2_ceil++;
  Divider d;
  d.multiplier =
      (uint32_t)(((1ull << 32) * ((1ull << log2_ceil) - divisor)) / divisor +
                 1);
  d.shift1 = log2_ceil < 1 ? log2_ceil : 1;
  d.shift2 = log2_ceil > 1 ? log2_ceil - 1 : 0;
  return d;
}

__device__ __forceinline__ uint32_t divide(uint32_t n, const Divider &d) {
  const uint32_t high = __umulhi(n, d.multiplier);
  return (high + ((n - high) >> d.shift1)) >> d.shift2;
}

struct KernelArgs {
  const float *voxels;
  const uint32_t *num_points;
  const int4 *in_coords;
  const uint32_t *in_count;
  uint8_t *features;
  int4 *out_coords;
  uint32_t *out_count;
  uint32_t channels;
  int intensity_channel;
  uint32_t max_points;
  uint32_t tile_voxels;  // the point kernel's voxels a tile, else unused
  Divider by_max_points;
  uint32_t max_voxels;
  float voxel_size[3];
  float center_offset[3];
  uint32_t slots;         // max_voxels * max_points, at most 2^31
  uint32_t ticket_shift;  // bits needed for a count up to max_voxels
  int output_clean;
};

__host__ __device__ constexpr unsigned feature_count_of(int set) {
  return set == P3DC_PILLAR_FEATURES_MMDET3D_9 ? 9u
         : set == P3DC_PILLAR_FEATURES_POINTPILLARS_11 ||
                 set == P3DC_PILLAR_FEATURES_MMDET3D_11
             ? 11u
             : 10u;
}

// The slots of one tile and the voxels they belong to.  Slots are below
// 2^31 and tiles below 2^23, so 32 bits hold every index here.
struct TileSpan {
  uint32_t first_slot;
  uint32_t end_slot;
  uint32_t first_voxel;
  uint32_t voxel_span;  // <= kTileSlots whatever max_points is
};

__device__ TileSpan tile_span(const KernelArgs &a, uint32_t tile) {
  TileSpan span;
  span.first_slot = tile * kTileSlots;
  span.end_slot = min(span.first_slot + kTileSlots, a.slots);
  span.first_voxel = divide(span.first_slot, a.by_max_points);
  span.voxel_span =
      divide(span.end_slot - 1, a.by_max_points) - span.first_voxel + 1;
  return span;
}

// The point count of this thread's voxel of a slot tile, loaded one tile
// ahead so that its latency hides behind the previous tile.  Any voxel below
// max_voxels may be read; the count decides later whether it is used.
__device__ uint32_t load_point_count(const KernelArgs &a, const TileSpan &span,
                                     unsigned thread) {
  if (thread >= span.voxel_span) return 0;
  return a.num_points[span.first_voxel + thread];
}

// load_point_count for the point kernel: the point count of this thread's
// voxel of the tile of @tile_voxels voxels from @first_voxel, or 0 past the
// tile or max_voxels.  The caller decides whether the tile holds voxels.
__device__ __forceinline__ uint32_t load_tile_point_count(const KernelArgs &a,
                                                          uint32_t first_voxel,
                                                          uint32_t tile_voxels,
                                                          unsigned thread) {
  if (thread >= tile_voxels || first_voxel + thread >= a.max_voxels) return 0;
  return a.num_points[first_voxel + thread];
}

// The voxel count, clamped to max_voxels, into *@count, and the voxels whose
// rows this call writes (max (count, previous count) when the output is
// clean, else every one) into *@limit; the same in every block.  @shared:
// two words of the block's shared memory.  Ends with a block barrier.
__device__ void agree_on_counts(const KernelArgs &a, uint32_t *shared,
                                uint32_t *count, uint32_t *limit) {
  if (threadIdx.x == 0) {
    const uint32_t frame_count = min(*a.in_count, a.max_voxels);
    uint32_t rows = a.max_voxels;
    if (a.output_clean) {
      // Every block needs the previous count, and out_count must end up
      // holding the new one: each block adds one ticket above the count
      // bits, reads the previous count from the low bits of what it got,
      // and the last block to arrive (all others have read) stores the
      // new count.  No workspace and no second launch.
      const uint32_t ticket = atomicAdd(a.out_count, 1u << a.ticket_shift);
      const uint32_t previous =
          min(ticket & ((1u << a.ticket_shift) - 1u), a.max_voxels);
      rows = max(frame_count, previous);
      if ((ticket >> a.ticket_shift) == gridDim.x - 1)
        atomicExch(a.out_count, frame_count);
    } else if (blockIdx.x == 0) {
      *a.out_count = frame_count;
    }
    shared[0] = frame_count;
    shared[1] = rows;
  }
  __syncthreads();
  *count = shared[0];
  *limit = shared[1];
}

template <bool kHalf>
__device__ __forceinline__
    typename std::conditional<kHalf, uint16_t, float>::type
    to_value(float value) {
  if constexpr (kHalf)
    return __half_as_ushort(__float2half_rn(value));
  else
    return value;
}

// Copies (or zeroes, when @staging is null) @bytes to @dst: 16-byte stores,
// then the values of a last partial chunk one by one (only the tensor's
// last tile can have one).
template <typename Value, unsigned kThreads>
__device__ void store_tile(uint8_t *dst, const uint4 *staging, size_t bytes,
                           unsigned thread) {
  const unsigned chunks = (unsigned)(bytes / 16);
  uint4 *dst_chunks = reinterpret_cast<uint4 *>(dst);
  for (unsigned c = thread; c < chunks; c += kThreads)
    dst_chunks[c] = staging ? staging[c] : make_uint4(0, 0, 0, 0);
  const unsigned tail_values = (unsigned)(bytes % 16) / sizeof(Value);
  if (thread < tail_values) {
    Value *dst_tail = reinterpret_cast<Value *>(dst_chunks + chunks);
    dst_tail[thread] =
        staging ? reinterpret_cast<const Value *>(staging + chunks)[thread]
                : Value(0);
  }
}

// The center of the voxel of coordinates @coord, into column @column of
// @voxel_center.
template <unsigned kColumns>
__device__ __forceinline__ void stage_center(const KernelArgs &a, int4 coord,
                                             float (*voxel_center)[kColumns],
                                             unsigned column) {
  voxel_center[0][column] =
      p3dc_pillarfeat_center(coord.w, a.voxel_size[0], a.center_offset[0]);
  voxel_center[1][column] =
      p3dc_pillarfeat_center(coord.z, a.voxel_size[1], a.center_offset[1]);
  voxel_center[2][column] =
      p3dc_pillarfeat_center(coord.y, a.voxel_size[2], a.center_offset[2]);
}

// The @kFeatures values of slot @slot of the tile, converted, into the
// staging.
template <bool kHalf, unsigned kFeatures>
__device__ __forceinline__ void stage_values(uint4 *staging, uint32_t slot,
                                             const float *values) {
  using Value = typename std::conditional<kHalf, uint16_t, float>::type;
  Value *staged = reinterpret_cast<Value *>(staging) + slot * kFeatures;
#pragma unroll
  for (unsigned f = 0; f < kFeatures; f++)
    staged[f] = to_value<kHalf>(values[f]);
}

// The staged tile out, once every thread's values are in; the shared
// arrays are free for the next tile when it returns.
template <typename Value, unsigned kThreads>
__device__ __forceinline__ void write_staged_tile(uint8_t *dst,
                                                  const uint4 *staging,
                                                  size_t bytes,
                                                  unsigned thread) {
  __syncthreads();
  store_tile<Value, kThreads>(dst, staging, bytes, thread);
  __syncthreads();
}

template <int kSet, bool kHalf>
__global__ void __launch_bounds__(kTileSlots, kMinBlocksPerSm)
    pillarfeat_slot_kernel(const KernelArgs a) {
  using Value = typename std::conditional<kHalf, uint16_t, float>::type;
  constexpr unsigned kFeatures = feature_count_of(kSet);
  constexpr unsigned kTileBytes = kTileSlots * kFeatures * sizeof(Value);
  static_assert(kTileBytes % 16 == 0, "a tile is whole 16-byte chunks");

  __shared__ uint4 staging[kTileBytes / 16];
  __shared__ uint32_t voxel_points[kTileSlots];
  __shared__ float voxel_mean[3][kTileSlots];
  __shared__ float voxel_center[3][kTileSlots];
  __shared__ uint32_t counts[2];

  const unsigned thread = threadIdx.x;
  const uint32_t tile_stride = gridDim.x;
  uint32_t tile = blockIdx.x;
  TileSpan span = tile_span(a, tile);
  // The first tile's point counts are read before the voxel count is
  // known, so that the two loads overlap.
  uint32_t raw_points = load_point_count(a, span, thread);
  uint32_t count, limit;
  agree_on_counts(a, counts, &count, &limit);
  const uint32_t active_slots = limit * a.max_points;

  for (; span.first_slot < active_slots; tile += tile_stride) {
    const TileSpan cur = span;
    const uint32_t cur_raw_points = raw_points;

    span = tile_span(a, tile + tile_stride);
    raw_points = span.first_slot < active_slots && span.first_voxel < count
                     ? load_point_count(a, span, thread)
                     : 0;

    uint8_t *tile_dst =
        a.features + (size_t)cur.first_slot * kFeatures * sizeof(Value);
    const size_t tile_bytes =
        (size_t)(cur.end_slot - cur.first_slot) * kFeatures * sizeof(Value);

    if (cur.first_voxel >= count) {
      // Beyond the count: zeros, and no shared memory is touched.
      if (thread < cur.voxel_span) {
        const uint32_t voxel = cur.first_voxel + thread;
        if (voxel * a.max_points >= cur.first_slot)
          a.out_coords[voxel] = make_int4(0, 0, 0, 0);
      }
      store_tile<Value, kTileSlots>(tile_dst, nullptr, tile_bytes, thread);
      continue;
    }

    // The voxels of the tile, one per thread: point counts now, for the
    // slots below; coordinates are loaded now and used once the slots'
    // loads are on their way.
    const uint32_t voxel = cur.first_voxel + thread;
    const bool in_tile = thread < cur.voxel_span;
    const bool valid = in_tile && voxel < count;
    const uint32_t point_count = valid ? min(cur_raw_points, a.max_points) : 0;
    int4 coord = make_int4(0, 0, 0, 0);
    if (in_tile) voxel_points[thread] = point_count;
    if (valid) coord = a.in_coords[voxel];
    __syncthreads();

    // This thread's slot: its point is loaded now, so that the lines are
    // on their way before the means below read them.
    const uint32_t slot = cur.first_slot + thread;
    uint32_t local_voxel = 0;
    bool has_point = false;
    float x = 0.0f, y = 0.0f, z = 0.0f;
    float extras[2] = {0.0f, 0.0f};
    if (slot < cur.end_slot) {
      local_voxel =
          divide(slot - cur.first_voxel * a.max_points, a.by_max_points);
      const uint32_t point =
          slot - (cur.first_voxel + local_voxel) * a.max_points;
      has_point = point < voxel_points[local_voxel];
      if (has_point) {
        const float *p = a.voxels + (size_t)slot * a.channels;
        x = p[0];
        y = p[1];
        z = p[2];
        p3dc_pillarfeat_point_extras((P3dcPillarFeatureSet)kSet, p, a.channels,
                                     a.intensity_channel, extras);
      }
    }

    // The voxel's center and mean; the tile that holds a voxel's first
    // slot writes its coordinates.
    if (in_tile) {
      stage_center(a, coord, voxel_center, thread);
      if (voxel * a.max_points >= cur.first_slot) a.out_coords[voxel] = coord;
      if (point_count > 0) {
        const size_t row = (size_t)voxel * a.max_points * a.channels;
        float mean[3];
        p3dc_pillarfeat_mean(a.voxels + row, point_count, a.channels, mean);
        voxel_mean[0][thread] = mean[0];
        voxel_mean[1][thread] = mean[1];
        voxel_mean[2][thread] = mean[2];
      }
    }
    __syncthreads();

    float values[P3DC_PILLAR_FEATURES_MAX];
#pragma unroll
    for (unsigned f = 0; f < P3DC_PILLAR_FEATURES_MAX; f++) values[f] = 0.0f;
    if (has_point) {
      const float mean[3] = {voxel_mean[0][local_voxel],
                             voxel_mean[1][local_voxel],
                             voxel_mean[2][local_voxel]};
      const float center[3] = {voxel_center[0][local_voxel],
                               voxel_center[1][local_voxel],
                               voxel_center[2][local_voxel]};
      p3dc_pillarfeat_point((P3dcPillarFeatureSet)kSet, x, y, z, extras, mean,
                            center, values);
    }
    stage_values<kHalf, kFeatures>(staging, thread, values);
    write_staged_tile<Value, kTileSlots>(tile_dst, staging, tile_bytes, thread);
  }
}

// One point of a tile of the point kernel, held by its thread from its load
// to its features.
struct HeldPoint {
  uint32_t voxel;  // in the tile
  uint32_t slot;   // in the tile
  float xyz[3];
  float extras[2];
};

// The tile's voxel of point @q (< the tile's points): the last voxel whose
// first point is at or before it (voxels of no point share their first
// point with the next).  @first_point: the exclusive prefix of the @voxels
// voxels' point counts, and their total at [voxels].
__device__ __forceinline__ uint32_t voxel_of_point(const uint32_t *first_point,
                                                   uint32_t voxels,
                                                   uint32_t q) {
  uint32_t low = 0, high = voxels;  // first_point[low] <= q < first_point[high]
  while (high - low > 1) {
    const uint32_t middle = (low + high) >> 1;
    if (first_point[middle] <= q)
      low = middle;
    else
      high = middle;
  }
  return low;
}

template <int kSet, bool kHalf>
__global__ void __launch_bounds__(kPointThreads, kPointMinBlocksPerSm)
    pillarfeat_point_kernel(const KernelArgs a) {
  using Value = typename std::conditional<kHalf, uint16_t, float>::type;
  constexpr unsigned kFeatures = feature_count_of(kSet);
  constexpr unsigned kStagingBytes =
      kPointTileSlots * kFeatures * sizeof(Value);
  static_assert(kStagingBytes % 16 == 0, "a tile is whole 16-byte chunks");

  __shared__ uint4 staging[kStagingBytes / 16];
  // the tile's points' x, y and z, voxel after voxel, in point order
  __shared__ float point_xyz[3][kPointTileSlots];
  __shared__ uint32_t first_point[kPointThreads + 1];
  __shared__ float voxel_mean[3][kPointThreads];
  __shared__ float voxel_center[3][kPointThreads];
  __shared__ uint32_t warp_points[kPointThreads / 32];
  __shared__ uint32_t counts[2];

  const unsigned thread = threadIdx.x;
  const uint32_t tile_voxels = a.tile_voxels;
  uint32_t first_voxel = blockIdx.x * tile_voxels;
  // The first tile's point counts are read before the voxel count is
  // known, so that the two loads overlap; then one tile ahead.
  uint32_t raw_points =
      load_tile_point_count(a, first_voxel, tile_voxels, thread);
  uint32_t count, limit;
  agree_on_counts(a, counts, &count, &limit);
  const uint32_t stride = gridDim.x * tile_voxels;

  for (; first_voxel < limit; first_voxel += stride) {
    const uint32_t cur_raw_points = raw_points;
    const uint32_t next = first_voxel + stride;
    raw_points = next < limit && next < count
                     ? load_tile_point_count(a, next, tile_voxels, thread)
                     : 0;

    const uint32_t voxels = min(tile_voxels, a.max_voxels - first_voxel);
    const size_t tile_slots = (size_t)voxels * a.max_points;
    uint8_t *tile_dst = a.features + (size_t)first_voxel * a.max_points *
                                         kFeatures * sizeof(Value);
    const size_t tile_bytes = tile_slots * kFeatures * sizeof(Value);
    const uint32_t voxel = first_voxel + thread;
    const bool in_tile = thread < voxels;

    if (first_voxel >= count) {
      // Beyond the count: zeros, and no shared memory is touched.
      if (in_tile) a.out_coords[voxel] = make_int4(0, 0, 0, 0);
      store_tile<Value, kPointThreads>(tile_dst, nullptr, tile_bytes, thread);
      continue;
    }

    // The voxels, one per thread: where each one's points go among the
    // tile's (a scan of their counts).  The staging is zeroed meanwhile:
    // the empty slots stay so.
    const bool valid = in_tile && voxel < count;
    const uint32_t point_count = valid ? min(cur_raw_points, a.max_points) : 0;
    int4 coord = make_int4(0, 0, 0, 0);
    if (valid) coord = a.in_coords[voxel];
    // By warps, and where a tile has more than 32 voxels (max_points of 6
    // and less) the warps' totals added after a barrier: the tiles of the
    // common sizes need no block barrier for it.
    uint32_t through = point_count;
#pragma unroll
    for (unsigned d = 1; d < 32; d <<= 1) {
      const uint32_t up = __shfl_up_sync(0xffffffffu, through, d);
      if ((thread & 31) >= d) through += up;
    }
    if (tile_voxels > 32) {
      if ((thread & 31) == 31) warp_points[thread >> 5] = through;
      __syncthreads();
      for (unsigned w = 0; w < (thread >> 5); w++) through += warp_points[w];
    }
    if (in_tile) {
      first_point[thread] = through - point_count;
      if (thread == voxels - 1) first_point[voxels] = through;
    }
    const unsigned chunks = (unsigned)((tile_bytes + 15) / 16);
    for (unsigned c = thread; c < chunks; c += kPointThreads)
      staging[c] = make_uint4(0, 0, 0, 0);
    __syncthreads();
    const uint32_t points = first_point[voxels];

    // The tile's points, at most kPointRounds a thread: loaded, and their
    // x, y and z shared for the means.
    HeldPoint held[kPointRounds];
#pragma unroll
    for (unsigned r = 0; r < kPointRounds; r++) {
      const uint32_t q = thread + r * kPointThreads;
      held[r].voxel = kPointTileSlots;  // none
      if (q >= points) continue;
      const uint32_t v = voxel_of_point(first_point, voxels, q);
      held[r].voxel = v;
      held[r].slot = v * a.max_points + (q - first_point[v]);
      const float *p =
          a.voxels +
          ((size_t)first_voxel * a.max_points + held[r].slot) * a.channels;
      held[r].xyz[0] = p[0];
      held[r].xyz[1] = p[1];
      held[r].xyz[2] = p[2];
      p3dc_pillarfeat_point_extras((P3dcPillarFeatureSet)kSet, p, a.channels,
                                   a.intensity_channel, held[r].extras);
    }
    // The coordinates, loaded before the scan, are used only now, once the
    // points' loads are on their way: one round trip to memory before the
    // means, not two.
    if (in_tile) {
      // a voxel of no points keeps its coordinates (pillarfeat.h)
      a.out_coords[voxel] = coord;
      stage_center(a, coord, voxel_center, thread);
    }
#pragma unroll
    for (unsigned r = 0; r < kPointRounds; r++) {
      if (held[r].voxel == kPointTileSlots) continue;
      const uint32_t q = thread + r * kPointThreads;
      point_xyz[0][q] = held[r].xyz[0];
      point_xyz[1][q] = held[r].xyz[1];
      point_xyz[2][q] = held[r].xyz[2];
    }
    __syncthreads();

    // Each voxel's mean, a thread an axis: summed from 0 in point order and
    // divided once, as p3dc_pillarfeat_mean() does.
    for (unsigned j = thread; j < 3 * voxels; j += kPointThreads) {
      const uint32_t v = j / 3, axis = j - 3 * v;
      const uint32_t begin = first_point[v], n = first_point[v + 1] - begin;
      if (n == 0) continue;
      const float *from = point_xyz[axis] + begin;
      float sum = 0.0f;
      for (uint32_t k = 0; k < n; k++) sum = sum + from[k];
      voxel_mean[axis][v] = sum / (float)n;
    }
    __syncthreads();

#pragma unroll
    for (unsigned r = 0; r < kPointRounds; r++) {
      if (held[r].voxel == kPointTileSlots) continue;
      const uint32_t v = held[r].voxel;
      const float mean[3] = {voxel_mean[0][v], voxel_mean[1][v],
                             voxel_mean[2][v]};
      const float center[3] = {voxel_center[0][v], voxel_center[1][v],
                               voxel_center[2][v]};
      float values[P3DC_PILLAR_FEATURES_MAX];
      p3dc_pillarfeat_point((P3dcPillarFeatureSet)kSet, held[r].xyz[0],
                            held[r].xyz[1], held[r].xyz[2], held[r].extras,
                            mean, center, values);
      stage_values<kHalf, kFeatures>(staging, held[r].slot, values);
    }
    write_staged_tile<Value, kPointThreads>(tile_dst, staging, tile_bytes,
                                            thread);
  }
}

using KernelFunc = void (*)(const KernelArgs);

template <int kSet>
KernelFunc kernel_of(bool half, bool by_points) {
  if (half)
    return by_points ? pillarfeat_point_kernel<kSet, true>
                     : pillarfeat_slot_kernel<kSet, true>;
  return by_points ? pillarfeat_point_kernel<kSet, false>
                   : pillarfeat_slot_kernel<kSet, false>;
}

KernelFunc select_kernel(P3dcPillarFeatureSet set, bool half, bool by_points) {
  switch (set) {
    case P3DC_PILLAR_FEATURES_POINTPILLARS_10:
      return kernel_of<P3DC_PILLAR_FEATURES_POINTPILLARS_10>(half, by_points);
    case P3DC_PILLAR_FEATURES_MMDET3D_9:
      return kernel_of<P3DC_PILLAR_FEATURES_MMDET3D_9>(half, by_points);
    case P3DC_PILLAR_FEATURES_POINTPILLARS_11:
      return kernel_of<P3DC_PILLAR_FEATURES_POINTPILLARS_11>(half, by_points);
    case P3DC_PILLAR_FEATURES_MMDET3D_11:
      return kernel_of<P3DC_PILLAR_FEATURES_MMDET3D_11>(half, by_points);
  }
  return nullptr;
}

// The voxels of a tile of the point kernel for @max_points: the most, a
// thread each, whose slots fit kPointTileSlots and are a multiple of 8; 0
// where none is (max_points above 256, or odd above 32, or twice odd above
// 64, or four times odd above 128): those take the slot kernel.
uint32_t point_tile_voxels(uint32_t max_points) {
  uint32_t voxels = kPointTileSlots / max_points;
  if (voxels > kPointThreads) voxels = kPointThreads;
  for (; voxels > 0; voxels--)
    if ((voxels * max_points) % 8 == 0) return voxels;
  return 0;
}

// A block's threads: the point kernel's where a tile holds whole voxels
// (@tile_voxels > 0, point_tile_voxels), else the slot kernel's.
unsigned block_threads(uint32_t tile_voxels) {
  return tile_voxels > 0 ? kPointThreads : kTileSlots;
}

bool aligned(const void *ptr, uintptr_t alignment) {
  return ((uintptr_t)ptr & (alignment - 1)) == 0;
}

}  // namespace

struct _P3dcPillarFeatCuda {
  // the kernel's arguments that follow from the params, computed once (a
  // call adds its tensors and output_clean); zero in every other byte, so
  // that the graph's node compares them alike from call to call
  // (kernel_graph.cuh)
  KernelArgs settings;
  KernelFunc kernel;
  unsigned blocks;
  // built by the first call outside a caller's stream capture
  P3dcKernelGraph graph;
};

extern "C" void p3dc_pillarfeat_cuda_free(P3dcPillarFeatCuda *pf) {
  if (pf == nullptr) return;
  p3dc_kernel_graph_destroy(&pf->graph);
  free(pf);
}

extern "C" int p3dc_pillarfeat_cuda_graph_built(const P3dcPillarFeatCuda *pf) {
  return pf != nullptr && p3dc_kernel_graph_built(&pf->graph);
}

extern "C" uint32_t p3dc_pillarfeat_cuda_tile_voxels(
    const P3dcPillarFeatCuda *pf) {
  return pf != nullptr ? pf->settings.tile_voxels : 0u;
}

extern "C" P3dcResult p3dc_pillarfeat_cuda_new(
    const P3dcPillarFeatParams *params, P3dcPillarFeatCuda **out) {
  if (out == nullptr) return P3DC_ERROR_INVALID_ARGUMENT;
  *out = nullptr;
  P3dcResult result = p3dc_pillarfeat_params_validate(params);
  if (result != P3DC_OK) return result;
  const uint32_t tile_voxels = point_tile_voxels(params->max_points);
  const KernelFunc kernel =
      select_kernel(params->features, params->half, tile_voxels > 0);
  const unsigned threads = block_threads(tile_voxels);
  if (kernel == nullptr) return P3DC_ERROR_INVALID_ARGUMENT;

  int device = 0, multiprocessors = 0, blocks_per_sm = 0;
  cudaError_t error = cudaGetDevice(&device);
  if (error == cudaSuccess)
    error = cudaDeviceGetAttribute(&multiprocessors,
                                   cudaDevAttrMultiProcessorCount, device);
  if (error == cudaSuccess)
    error = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm,
                                                          kernel, threads, 0);
  if (error != cudaSuccess) return error;

  // As many blocks as fit on the device at once, no more than there are
  // tiles, and few enough that every ticket fits above the count bits
  // (max_voxels < 2^31, so the shift is at most 31 and leaves room for at
  // least two blocks' tickets).
  KernelArgs settings = {};
  settings.channels = params->channels;
  settings.intensity_channel = params->intensity_channel;
  settings.max_points = params->max_points;
  settings.max_voxels = params->max_voxels;
  for (int axis = 0; axis < 3; axis++) {
    settings.voxel_size[axis] = params->voxel_size[axis];
    settings.center_offset[axis] = params->center_offset[axis];
  }
  settings.by_max_points = make_divider(params->max_points);
  settings.tile_voxels = tile_voxels;
  // at most P3DC_PILLARFEAT_MAX_SLOTS = 2^31, as validated
  settings.slots = params->max_voxels * params->max_points;
  settings.ticket_shift = 32u - (uint32_t)__builtin_clz(params->max_voxels);

  const uint64_t tiles =
      tile_voxels > 0
          ? ((uint64_t)settings.max_voxels + tile_voxels - 1) / tile_voxels
          : ((uint64_t)settings.slots + kTileSlots - 1) / kTileSlots;
  uint64_t blocks = (uint64_t)(multiprocessors > 0 ? multiprocessors : 1) *
                    (uint64_t)(blocks_per_sm > 0 ? blocks_per_sm : 1);
  if (blocks > tiles) blocks = tiles;
  if (blocks > (1ull << (32u - settings.ticket_shift)))
    blocks = 1ull << (32u - settings.ticket_shift);

  P3dcPillarFeatCuda *pf =
      static_cast<P3dcPillarFeatCuda *>(calloc(1, sizeof(*pf)));
  if (pf == nullptr) return P3DC_ERROR_OUT_OF_MEMORY;
  pf->settings = settings;
  pf->kernel = kernel;
  pf->blocks = (unsigned)blocks;
  *out = pf;
  return P3DC_OK;
}

extern "C" P3dcResult p3dc_pillarfeat_cuda(P3dcPillarFeatCuda *pf,
                                           const P3dcPillarFeatInput *in,
                                           const P3dcPillarFeatOutput *out,
                                           int output_clean,
                                           P3dcCudaStream stream) {
  if (pf == nullptr || in == nullptr || out == nullptr ||
      in->voxels == nullptr || in->num_points == nullptr ||
      in->coords == nullptr || in->count == nullptr ||
      out->features == nullptr || out->coords == nullptr ||
      out->count == nullptr)
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (!aligned(out->features, 16) || !aligned(in->coords, 16) ||
      !aligned(out->coords, 16) || !aligned(in->voxels, 4) ||
      !aligned(in->num_points, 4) || !aligned(in->count, 4) ||
      !aligned(out->count, 4) || in->count == out->count)
    return P3DC_ERROR_INVALID_ARGUMENT;

  KernelArgs args = pf->settings;
  args.voxels = in->voxels;
  args.num_points = in->num_points;
  args.in_coords = reinterpret_cast<const int4 *>(in->coords);
  args.in_count = in->count;
  args.features = static_cast<uint8_t *>(out->features);
  args.out_coords = reinterpret_cast<int4 *>(out->coords);
  args.out_count = out->count;
  args.output_clean = output_clean != 0;

  auto queue = [pf, &args](P3dcLauncher &l) {
    return l.launch(pf->kernel, pf->blocks,
                    block_threads(pf->settings.tile_voxels), 0, false, args);
  };
  return p3dc_kernel_graph_run(&pf->graph, false, queue, (cudaStream_t)stream);
}
