// bevpool pooling on the device; the reference is bevpool_cpu.c.
//
// One block per (tile, channel slice).  A tile is an 8 x 8 block of the
// output plane, or consecutive cells of one where its points are many (the
// geometry cuts tiles at about P3D_BEVPOOL_ROUND_CHUNKS chunks, for load
// balance), and the block is the only writer of those cells' outputs: no
// atomics, no memset, and the sums are in the order bevpool.h defines.  The
// block
//   1. sums every (chunk, channel group) in a thread of its own, so a cell of
//      hundreds of points is spread over many threads, into shared memory;
//   2. adds each cell's chunk sums in chunk order (one thread per cell and
//      channel);
//   3. writes the tile channel by channel, lanes over cells, so that a warp
//      stores rows of 8 contiguous values.
// Steps 1 and 2 repeat when a tile holds more chunks than shared memory
// takes at once.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "bevpool-private.h"

namespace {

constexpr unsigned kThreads = 256;
constexpr uint32_t kTileCells = P3D_BEVPOOL_TILE_CELLS;
constexpr uint32_t kRoundChunks = P3D_BEVPOOL_ROUND_CHUNKS;
// Channels per block: bounds shared memory at about 45 KB, within the 48 KB a
// block gets without asking.
constexpr uint32_t kSliceChannels = 88;

struct PoolArgs {
  const void *features;
  const void *depth;
  void *out;
  const uint32_t *entries;
  const uint32_t *cell_start;
  const uint32_t *chunk_start;
  const uint32_t *tile_first_cell;
  const uint32_t *tile_count;
  P3dBevBlocking blocking;
  uint32_t max_tiles;
  uint32_t channels;
  uint32_t slice_width;
  uint32_t acc_stride;
  uint32_t pixels;  // feature pixels per camera
  uint32_t plane;   // cells per z slice
  uint32_t row_bits;
  int half_out;
};

__device__ __forceinline__ float to_float(float value) { return value; }
__device__ __forceinline__ float to_float(__half value) {
  return __half2float(value);
}

// The values packed in one 32-bit word.
__device__ __forceinline__ void unpack(uint32_t word, float *f, float) {
  f[0] = __uint_as_float(word);
}
__device__ __forceinline__ void unpack(uint32_t word, float *f, __half) {
  f[0] = __half2float(__ushort_as_half((unsigned short)(word & 0xffffu)));
  f[1] = __half2float(__ushort_as_half((unsigned short)(word >> 16)));
}

// G consecutive channels with the widest loads their alignment allows (the
// host picks G so that it holds).
template <typename In, int G>
__device__ __forceinline__ void load_channels(const In *p, float *f) {
  constexpr int kBytes = (int)sizeof(In) * G;
  constexpr int kPerWord = 4 / (int)sizeof(In);
  if constexpr (kBytes >= 16) {
#pragma unroll
    for (int w = 0; w < kBytes / 16; w++) {
      const uint4 v = __ldg(reinterpret_cast<const uint4 *>(p) + w);
      unpack(v.x, f + (4 * w + 0) * kPerWord, In());
      unpack(v.y, f + (4 * w + 1) * kPerWord, In());
      unpack(v.z, f + (4 * w + 2) * kPerWord, In());
      unpack(v.w, f + (4 * w + 3) * kPerWord, In());
    }
  } else if constexpr (kBytes == 8) {
    const uint2 v = __ldg(reinterpret_cast<const uint2 *>(p));
    unpack(v.x, f, In());
    unpack(v.y, f + kPerWord, In());
  } else if constexpr (kBytes == 4) {
    unpack(__ldg(reinterpret_cast<const unsigned int *>(p)), f, In());
  } else {
    f[0] = to_float(__ldg(p));
  }
}

// The sum of one chunk, sorted points [begin, end), for G channels from
// @channel: starts at 0, fmaf per point in order, as the reference.  Four
// points' loads are issued before their products, and the next four entries
// are fetched meanwhile, so each batch waits for memory once.
template <typename In, int G>
__device__ __forceinline__ void chunk_sum(const PoolArgs &a, uint32_t begin,
                                          uint32_t end, uint32_t channel,
                                          float *sum) {
  const In *features = static_cast<const In *>(a.features) + channel;
  const In *depth = static_cast<const In *>(a.depth);
  const uint32_t row_mask = (1u << a.row_bits) - 1u;
#pragma unroll
  for (int q = 0; q < G; q++) sum[q] = 0.0f;
  uint32_t i = begin;
  uint32_t next[4];
  if (i + 4 <= end) {
#pragma unroll
    for (int u = 0; u < 4; u++) next[u] = __ldg(a.entries + i + u);
  }
  for (; i + 4 <= end; i += 4) {
    uint32_t entry[4];
    float weight[4];
    float f[4][G];
#pragma unroll
    for (int u = 0; u < 4; u++) entry[u] = next[u];
    if (i + 8 <= end) {
#pragma unroll
      for (int u = 0; u < 4; u++) next[u] = __ldg(a.entries + i + 4 + u);
    }
#pragma unroll
    for (int u = 0; u < 4; u++) {
      const uint32_t row = entry[u] & row_mask;
      weight[u] =
          to_float(__ldg(depth + row + (entry[u] >> a.row_bits) * a.pixels));
      load_channels<In, G>(features + row * a.channels, f[u]);
    }
#pragma unroll
    for (int u = 0; u < 4; u++)
#pragma unroll
      for (int q = 0; q < G; q++)
        sum[q] = __fmaf_rn(f[u][q], weight[u], sum[q]);
  }
  for (; i < end; i++) {
    const uint32_t entry = __ldg(a.entries + i);
    const uint32_t row = entry & row_mask;
    const float weight =
        to_float(__ldg(depth + row + (entry >> a.row_bits) * a.pixels));
    float f[G];
    load_channels<In, G>(features + row * a.channels, f);
#pragma unroll
    for (int q = 0; q < G; q++) sum[q] = __fmaf_rn(f[q], weight, sum[q]);
  }
}

// The chunk slots [lo, hi) of this round that belong to tile cell j.
__device__ __forceinline__ void round_slots(const uint32_t *s_chunk_start,
                                            uint32_t j, uint32_t chunk_first,
                                            uint32_t round, uint32_t in_round,
                                            uint32_t *lo, uint32_t *hi) {
  const uint32_t first = s_chunk_start[j] - chunk_first;
  const uint32_t last = s_chunk_start[j + 1] - chunk_first;
  *lo = first > round ? first : round;
  *hi = last < round + in_round ? last : round + in_round;
}

template <typename In, int G>
__global__ void __launch_bounds__(kThreads) pool_kernel(const PoolArgs a) {
  extern __shared__ uint32_t smem[];
  uint32_t *s_cell_start = smem;                            // kTileCells + 1
  uint32_t *s_chunk_start = s_cell_start + kTileCells + 1;  // kTileCells + 1
  // Output offsets of the tile's cells, UINT32_MAX past the plane's edge.
  uint32_t *s_out_base = s_chunk_start + kTileCells + 1;  // kTileCells
  uint32_t *s_slot_cell = s_out_base + kTileCells;        // kRoundChunks
  float *s_acc = reinterpret_cast<float *>(s_slot_cell + kRoundChunks);
  float *s_part = s_acc + kTileCells * a.acc_stride;  // kRoundChunks x width

  uint32_t tiles = *a.tile_count;
  if (tiles > a.max_tiles) tiles = a.max_tiles;
  if (blockIdx.x >= tiles) return;  // the grid is an upper bound
  // Cells here are keys (see bevpool-private.h).
  const uint32_t first_cell = a.tile_first_cell[blockIdx.x];
  const uint32_t cells = a.tile_first_cell[blockIdx.x + 1] - first_cell;
  const uint32_t c0 = blockIdx.y * a.slice_width;
  const uint32_t width =
      a.channels - c0 < a.slice_width ? a.channels - c0 : a.slice_width;
  const uint32_t groups = width / G;
  const uint32_t stride = a.acc_stride;
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t warps = blockDim.x / 32;

  for (uint32_t j = threadIdx.x; j <= cells; j += blockDim.x) {
    s_cell_start[j] = a.cell_start[first_cell + j];
    s_chunk_start[j] = a.chunk_start[first_cell + j];
    if (j < cells) {
      const uint32_t cell = p3d_bevpool_block_cell(&a.blocking, first_cell + j);
      const uint32_t z = cell / a.plane;
      s_out_base[j] = cell == UINT32_MAX
                          ? UINT32_MAX
                          : z * a.channels * a.plane + (cell - z * a.plane);
    }
  }
  for (uint32_t i = threadIdx.x; i < cells * stride; i += blockDim.x)
    s_acc[i] = 0.0f;
  __syncthreads();

  const uint32_t chunk_first = s_chunk_start[0];
  const uint32_t chunk_total = s_chunk_start[cells] - chunk_first;
  for (uint32_t round = 0; round < chunk_total; round += kRoundChunks) {
    const uint32_t in_round =
        chunk_total - round < kRoundChunks ? chunk_total - round : kRoundChunks;
    for (uint32_t j = threadIdx.x; j < cells; j += blockDim.x) {
      uint32_t lo, hi;
      round_slots(s_chunk_start, j, chunk_first, round, in_round, &lo, &hi);
      for (uint32_t s = lo; s < hi; s++) s_slot_cell[s - round] = j;
    }
    __syncthreads();

    for (uint32_t item = threadIdx.x; item < in_round * groups;
         item += blockDim.x) {
      const uint32_t slot = item / groups;
      const uint32_t group = item - slot * groups;
      const uint32_t j = s_slot_cell[slot];
      const uint32_t chunk_in_cell =
          chunk_first + round + slot - s_chunk_start[j];
      const uint32_t begin =
          s_cell_start[j] + chunk_in_cell * P3D_BEVPOOL_CHUNK;
      const uint32_t cell_end = s_cell_start[j + 1];
      const uint32_t end = cell_end - begin > P3D_BEVPOOL_CHUNK
                               ? begin + P3D_BEVPOOL_CHUNK
                               : cell_end;
      float sum[G];
      chunk_sum<In, G>(a, begin, end, c0 + group * G, sum);
      float *dst = s_part + slot * width + group * G;
#pragma unroll
      for (int q = 0; q < G; q++) dst[q] = sum[q];
    }
    __syncthreads();

    for (uint32_t j = warp; j < cells; j += warps) {
      uint32_t lo, hi;
      round_slots(s_chunk_start, j, chunk_first, round, in_round, &lo, &hi);
      for (uint32_t c = lane; c < width && lo < hi; c += 32) {
        float value = s_acc[j * stride + c];
        for (uint32_t s = lo; s < hi; s++)
          value = __fadd_rn(value, s_part[(s - round) * width + c]);
        s_acc[j * stride + c] = value;
      }
    }
    __syncthreads();
  }

  for (uint32_t c = warp; c < width; c += warps) {
    for (uint32_t j = lane; j < cells; j += 32) {
      if (s_out_base[j] == UINT32_MAX) continue;
      const float value = s_acc[j * stride + c];
      const uint32_t o = s_out_base[j] + (c0 + c) * a.plane;
      if (a.half_out)
        static_cast<__half *>(a.out)[o] = __float2half_rn(value);
      else
        static_cast<float *>(a.out)[o] = value;
    }
  }
}

// The widest channel group (8, 4, 2 or 1 values) that divides the channel
// count and whose loads the features' alignment allows.
int channel_group(const void *features, uint32_t channels, size_t value_size) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(features);
  for (int g = 8; g > 1; g /= 2) {
    const size_t bytes = g * value_size;
    const size_t align = bytes < 16 ? bytes : 16;
    if (channels % g == 0 && address % align == 0) return g;
  }
  return 1;
}

template <typename In>
cudaError_t launch(const PoolArgs &args, int group, dim3 grid, size_t smem,
                   cudaStream_t stream) {
  switch (group) {
    case 8:
      pool_kernel<In, 8><<<grid, kThreads, smem, stream>>>(args);
      break;
    case 4:
      pool_kernel<In, 4><<<grid, kThreads, smem, stream>>>(args);
      break;
    case 2:
      pool_kernel<In, 2><<<grid, kThreads, smem, stream>>>(args);
      break;
    default:
      pool_kernel<In, 1><<<grid, kThreads, smem, stream>>>(args);
      break;
  }
  return cudaGetLastError();
}

}  // namespace

extern "C" P3dResult p3d_bevpool_cuda(const P3dBevGeometryCuda *geometry,
                                      const void *features, const void *depth,
                                      int half_in, void *out, int half_out,
                                      P3dCudaStream stream) {
  if (geometry == nullptr || !geometry->computed || features == nullptr ||
      depth == nullptr || out == nullptr)
    return P3D_ERROR_INVALID_ARGUMENT;
  const size_t value_size = half_in ? 2 : 4;
  const uintptr_t natural = value_size - 1;
  if ((reinterpret_cast<uintptr_t>(features) & natural) != 0 ||
      (reinterpret_cast<uintptr_t>(depth) & natural) != 0 ||
      (reinterpret_cast<uintptr_t>(out) & (half_out ? 1 : 3)) != 0)
    return P3D_ERROR_INVALID_ARGUMENT;

  const P3dBevPoolParams *params = &geometry->params;
  const uint32_t channels = params->channels;
  const int group = channel_group(features, channels, value_size);
  // Equal slices of at most kSliceChannels, each a multiple of the group
  // (kSliceChannels is a multiple of 8, so rounding up stays within it).
  const uint32_t slices_wanted =
      (channels + kSliceChannels - 1) / kSliceChannels;
  uint32_t width = (channels + slices_wanted - 1) / slices_wanted;
  width = (width + group - 1) / group * group;
  const uint32_t slices = (channels + width - 1) / width;
  if (slices > 65535) return P3D_ERROR_TOO_LARGE;

  PoolArgs args;
  args.features = features;
  args.depth = depth;
  args.out = out;
  args.entries = geometry->entries_out;
  args.cell_start = geometry->cell_start;
  args.chunk_start = geometry->chunk_start;
  args.tile_first_cell = geometry->tile_first_cell;
  args.tile_count = geometry->tile_count;
  args.blocking = geometry->blocking;
  args.max_tiles = geometry->max_tiles;
  args.channels = channels;
  args.slice_width = width;
  // An odd row stride keeps step 3's reads (lanes over cells) free of
  // shared-memory bank conflicts.
  args.acc_stride = width | 1u;
  args.pixels = params->feat_width * params->feat_height;
  args.plane = params->nx * params->ny;
  args.row_bits = geometry->row_bits;
  args.half_out = half_out ? 1 : 0;

  const size_t smem =
      sizeof(uint32_t) * (2 * (kTileCells + 1) + kTileCells + kRoundChunks) +
      sizeof(float) * (kTileCells * args.acc_stride + kRoundChunks * width);
  const dim3 grid(geometry->max_tiles, slices);
  if (half_in) return launch<__half>(args, group, grid, smem, stream);
  return launch<float>(args, group, grid, smem, stream);
}
