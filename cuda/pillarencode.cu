// The pillar feature net and the scatter on the device; the reference is
// pillarencode_cpu.c and the arithmetic both share is in pillarencode.h.
//
// Three kernels per frame.  claim_kernel: one thread per pillar below the
// count writes (frame, pillar) into its cell of an index map with an atomic
// max, so the later pillar of a cell wins (as in the reference) and entries
// of earlier frames, whose frame number is lower, read as empty without a
// clearing pass.  pillar_kernel: a warp per kWarpPillars pillars stages
// their features in its own slice of shared memory, rows padded with zeros
// to kInPad floats, finds each one's used rows with a ballot, and computes
// the net with each lane holding the weights of one or two output channels
// in registers: a slot's features are one broadcast read for the whole
// warp, so the work is the FMAs themselves (a (pillar, channel) per thread
// with the weights in shared memory reads two shared words per FMA;
// docs/performance.md).  It writes the pillar's channels, already in the
// canvas type, as one row of a workspace.  canvas_kernel: one block per
// tile of kTileCells cells gathers its pillars' rows into a tile in shared
// memory and writes the tile's channel planes whole, zeros in the empty
// cells: consecutive threads, consecutive pieces of one plane, so every
// store is coalesced.  Computing per pillar spreads the work evenly: with
// the net in the tile's block, the blocks of the tiles near the sensor,
// full of pillars, staged and computed them a chunk at a time behind block
// barriers while the rest of the GPU had finished (docs/performance.md).
// A zero row (the padding of a pillar with fewer points than max_points)
// gives ReLU (bias) exactly, so it is not multiplied out.  The padded
// weights and features are zeros: fmaf (0, 0, acc) is acc (up to the sign
// of a zero, which the ReLU erases), so the padded chain gives the
// reference's bits, and a value rounded to F16 once, in pillar_kernel, is
// stored as it is.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <new>

#include "pillarencode-private.h"
#include "pillarencode.h"

namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kWarps = kThreads / 32;
// A tile of 64 cells: a plane's piece of the tile is 128 bytes in F16.
constexpr unsigned kTileCells = 64;
// Channels a tile holds at a time; its rows are one float longer than the
// tile, so that consecutive channels of one cell fall in distinct banks.
constexpr unsigned kTileChannels = 64;
constexpr unsigned kTileStride = kTileCells + 1;
// feature values a lane loads before it stores any while staging: loads in
// flight together instead of one global latency each
constexpr unsigned kStageBatch = 8;
// Dynamic shared memory a block of pillar_kernel may use without opting in
// (48 KiB), less some room: at least one warp's kWarpPillars pillars (16
// KiB each at most, P3DC_PILLARENCODE_MAX_PILLAR_VALUES floats).
constexpr size_t kSharedBudget = 44 * 1024;
// pillar_kernel's grid at most: more pillars than its warps take turns
constexpr size_t kPillarBlocks = 65536;
// Pillars a warp stages together: their loads in flight at once, one
// global latency for both.
constexpr uint32_t kWarpPillars = 2;
static_assert(kWarpPillars * P3DC_PILLARENCODE_MAX_PILLAR_VALUES *
                      sizeof(float) <=
                  kSharedBudget,
              "a block holds at least one warp's pillars");

// Output channels a lane computes: two (c and c + 32) where both weight
// rows fit in registers, which halves what each slot costs besides its
// FMAs (the row's shared-memory reads, the loop).
__host__ __device__ constexpr uint32_t lane_channels(uint32_t in_pad) {
  return in_pad <= 16 ? 2 : 1;
}

struct EncodeArgs {
  const float *weight;  // [out][in_pad], zero beyond in
  const float *bias;    // [out]
  const void *features;
  const uint32_t *count;
  const unsigned long long *owner;
  // [max_voxels][out] in the canvas type: pillar_kernel's output,
  // canvas_kernel's input
  void *rows;
  void *canvas;
  uint32_t *workspace_dropped;
  uint32_t *dropped;
  uint32_t in_channels, out_channels, max_points, max_voxels;
  uint32_t cells;
  uint32_t pillar_values;  // max_points * in, in the input
  uint32_t generation;
  int half_in;
  // the canvas is 16-byte aligned and its planes a whole number of 16-byte
  // pieces: the tile goes out 16 bytes a thread
  int wide_out;
};

__global__ void claim_kernel(const int4 *coords, const uint32_t *count,
                             uint32_t max_voxels, uint32_t grid_x,
                             uint32_t grid_y, uint32_t generation,
                             unsigned long long *owner, uint32_t *dropped) {
  const uint32_t pillar = blockIdx.x * blockDim.x + threadIdx.x;
  if (pillar >= min(*count, max_voxels)) return;
  const int4 coord = coords[pillar];
  const int32_t x = coord.w, y = coord.z;
  if (x < 0 || y < 0 || (uint32_t)x >= grid_x || (uint32_t)y >= grid_y) {
    atomicAdd(dropped, 1u);
    return;
  }
  atomicMax(owner + (size_t)y * grid_x + (uint32_t)x,
            ((unsigned long long)generation << 32) | pillar);
}

template <typename T>
__device__ __forceinline__ void store(T *to, float v) {
  if constexpr (sizeof(T) == 2)
    *to = __float2half_rn(v);
  else
    *to = v;
}

__device__ __forceinline__ float load(const __half *from) {
  return __half2float(*from);
}
__device__ __forceinline__ float load(const float *from) { return *from; }

// blockDim.x / 32 warps, each kWarpPillars consecutive pillars at a time,
// staged in its own kWarpPillars * pillar_floats of dynamic shared memory.
// Every pillar below the count is computed, also the few that lost their
// cell or lie outside the grid, whose rows canvas_kernel never reads: a
// check first would put two dependent loads (the coordinates, the cell map)
// before the features' on every pillar's path.
template <uint32_t kInPad, typename T>
__global__ void __launch_bounds__(kThreads) pillar_kernel(EncodeArgs a) {
  constexpr uint32_t kLane = lane_channels(kInPad);
  constexpr uint32_t kGroup = 32 * kLane;
  extern __shared__ float4 shared_rows[];
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const unsigned warps = blockDim.x / 32;
  const uint32_t pillar_floats = a.max_points * kInPad;
  // 16-byte aligned rows: pillar_floats is a multiple of kInPad, itself of 4
  float *x = reinterpret_cast<float *>(shared_rows) +
             warp * kWarpPillars * pillar_floats;
  const uint32_t count = min(*a.count, a.max_voxels);

  for (uint32_t group = 0; group < a.out_channels; group += kGroup) {
    float w[kLane][kInPad], b[kLane], zero_row[kLane];
#pragma unroll
    for (uint32_t k = 0; k < kLane; k++) {
      const uint32_t c = group + lane + 32 * k;
      const bool real = c < a.out_channels;
#pragma unroll
      for (uint32_t i = 0; i < kInPad; i++)
        w[k][i] = real ? a.weight[(size_t)c * kInPad + i] : 0.0f;
      b[k] = real ? a.bias[c] : 0.0f;
      // what a zero row gives: fmaf of zeros leaves acc at +0, + b is b
      zero_row[k] = b[k] > 0.0f ? b[k] : 0.0f;
    }
    for (uint32_t first = (blockIdx.x * warps + warp) * kWarpPillars;
         first < count; first += gridDim.x * warps * kWarpPillars) {
      // the pillars' features as float, rows padded with zeros, the lanes
      // along their contiguous values (consecutive pillars are contiguous)
      const uint32_t n = min(kWarpPillars, count - first);
      const uint32_t floats = n * pillar_floats;
      const size_t src = (size_t)first * a.pillar_values;
      for (uint32_t r0 = 0; r0 < floats; r0 += 32 * kStageBatch) {
        float v[kStageBatch];
#pragma unroll
        for (uint32_t u = 0; u < kStageBatch; u++) {
          const uint32_t r = r0 + u * 32 + lane;
          const uint32_t s = r / kInPad;
          const uint32_t i = r - s * kInPad;
          v[u] = 0.0f;
          if (r < floats && i < a.in_channels) {
            const size_t at = src + s * a.in_channels + i;
            v[u] = a.half_in
                       ? load(static_cast<const __half *>(a.features) + at)
                       : load(static_cast<const float *>(a.features) + at);
          }
        }
#pragma unroll
        for (uint32_t u = 0; u < kStageBatch; u++) {
          const uint32_t r = r0 + u * 32 + lane;
          if (r < floats) x[r] = v[u];
        }
      }
      __syncwarp();

      for (uint32_t j = 0; j < n; j++) {
        const float *rows = x + j * pillar_floats;
        float best[kLane];
#pragma unroll
        for (uint32_t k = 0; k < kLane; k++) best[k] = 0.0f;
        bool padded = false;
        // 32 slots at a time: lane l tells whether slot s0 + l is used,
        // and the warp takes the used ones in order
        for (uint32_t s0 = 0; s0 < a.max_points; s0 += 32) {
          const uint32_t s = s0 + lane;
          bool used = false;
          if (s < a.max_points) {
            const float4 *row =
                reinterpret_cast<const float4 *>(rows + s * kInPad);
#pragma unroll
            for (uint32_t q = 0; q < kInPad / 4; q++) {
              const float4 v = row[q];
              used |= v.x != 0.0f || v.y != 0.0f || v.z != 0.0f || v.w != 0.0f;
            }
          }
          uint32_t mask = __ballot_sync(0xffffffffu, used);
          padded |= (uint32_t)__popc(mask) < min(32u, a.max_points - s0);
          while (mask != 0) {
            const uint32_t slot = s0 + __ffs(mask) - 1;
            mask &= mask - 1;
            const float *row = static_cast<const float *>(
                __builtin_assume_aligned(rows + slot * kInPad, 16));
#pragma unroll
            for (uint32_t k = 0; k < kLane; k++) {
              const float y = p3dc_pillarencode_slot(w[k], row, kInPad, b[k]);
              if (y > best[k]) best[k] = y;
            }
          }
        }
        T *out =
            static_cast<T *>(a.rows) + (size_t)(first + j) * a.out_channels;
#pragma unroll
        for (uint32_t k = 0; k < kLane; k++) {
          const uint32_t c = group + lane + 32 * k;
          if (padded && zero_row[k] > best[k]) best[k] = zero_row[k];
          if (c < a.out_channels) store(out + c, best[k]);
        }
      }
      // the next pillars restage the features
      __syncwarp();
    }
  }
}

// Rows [0, rows) of the output tile to the canvas planes of channels
// group + row, P cells a thread (16 bytes, where the planes allow it), so
// that consecutive threads write consecutive pieces of one plane; zeros in
// the cells no pillar owns.
template <uint32_t P, typename T>
__device__ __forceinline__ void write_planes(const EncodeArgs &a,
                                             const float *tile,
                                             const uint32_t *owned_cells,
                                             uint32_t group, uint32_t rows,
                                             uint32_t tile_start) {
  constexpr uint32_t kPieces = kTileCells / P;
  for (uint32_t i = threadIdx.x; i < rows * kPieces; i += kThreads) {
    const uint32_t row = i / kPieces, at = (i % kPieces) * P;
    const uint32_t c = group + row, cell = tile_start + at;
    // a piece lies wholly inside the grid: P divides the cell count
    if (c >= a.out_channels || cell >= a.cells) continue;
    // at % 32 + P <= 32: the piece's cells are bits of one word
    const uint32_t owned = owned_cells[at / 32] >> (at % 32);
    const float *from = tile + row * kTileStride + at;
    T *to = static_cast<T *>(a.canvas) + (size_t)c * a.cells + cell;
    float v[P];
#pragma unroll
    for (uint32_t e = 0; e < P; e++) v[e] = (owned >> e) & 1u ? from[e] : 0.0f;
    if constexpr (P == 1) {
      store(to, v[0]);
    } else if constexpr (sizeof(T) == 2) {
      static_assert(P == 8, "16 bytes of F16");
      uint4 raw;
      __half2 *h = reinterpret_cast<__half2 *>(&raw);
#pragma unroll
      for (uint32_t j = 0; j < P / 2; j++)
        h[j] = __floats2half2_rn(v[2 * j], v[2 * j + 1]);
      *reinterpret_cast<uint4 *>(to) = raw;
    } else {
      static_assert(P == 4, "16 bytes of F32");
      *reinterpret_cast<float4 *>(to) = make_float4(v[0], v[1], v[2], v[3]);
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) canvas_kernel(EncodeArgs a) {
  __shared__ float tile[kTileChannels * kTileStride];
  __shared__ uint32_t list_cell[kTileCells];  // within the tile
  __shared__ uint32_t list_pillar[kTileCells];
  __shared__ uint32_t owned_cells[kTileCells / 32];
  __shared__ uint32_t list_count;

  const unsigned thread = threadIdx.x;
  const unsigned warp = thread / 32, lane = thread % 32;
  const uint32_t tile_start = blockIdx.x * kTileCells;

  // The frame's drop count: claim_kernel has finished before any block
  // of this kernel starts (same stream).
  if (blockIdx.x == 0 && thread == 0) {
    if (a.dropped) *a.dropped = *a.workspace_dropped;
    *a.workspace_dropped = 0;
  }
  if (thread == 0) list_count = 0;
  __syncthreads();

  // the first kTileCells threads (whole warps): one cell each
  if (thread < kTileCells) {
    const uint32_t cell = tile_start + thread;
    bool owned = false;
    if (cell < a.cells) {
      const unsigned long long entry = a.owner[cell];
      owned = (uint32_t)(entry >> 32) == a.generation;
      if (owned) {
        const uint32_t k = atomicAdd(&list_count, 1u);
        list_cell[k] = thread;
        list_pillar[k] = (uint32_t)entry;
      }
    }
    const uint32_t mask = __ballot_sync(0xffffffffu, owned);
    if (lane == 0) owned_cells[warp] = mask;
  }
  __syncthreads();
  const uint32_t pillars = list_count;

  for (uint32_t group = 0; group < a.out_channels; group += kTileChannels) {
    const uint32_t channels = min(kTileChannels, a.out_channels - group);
    // the pillars' rows, consecutive threads along one row's channels
    for (uint32_t i = thread; i < pillars * channels; i += kThreads) {
      const uint32_t k = i / channels, c = i - k * channels;
      const T *row = static_cast<const T *>(a.rows) +
                     (size_t)list_pillar[k] * a.out_channels;
      tile[c * kTileStride + list_cell[k]] = load(row + group + c);
    }
    __syncthreads();
    if (a.wide_out)
      write_planes<16 / sizeof(T), T>(a, tile, owned_cells, group, channels,
                                      tile_start);
    else
      write_planes<1, T>(a, tile, owned_cells, group, channels, tile_start);
    // the next group rewrites the tile
    __syncthreads();
  }
}

using PillarKernel = void (*)(EncodeArgs);

template <typename T>
PillarKernel pillar_kernel_for(uint32_t in_pad) {
  switch (in_pad) {
    case 4:
      return pillar_kernel<4, T>;
    case 8:
      return pillar_kernel<8, T>;
    case 12:
      return pillar_kernel<12, T>;
    case 16:
      return pillar_kernel<16, T>;
    case 24:
      return pillar_kernel<24, T>;
    case 32:
      return pillar_kernel<32, T>;
    case 48:
      return pillar_kernel<48, T>;
    case 64:
      return pillar_kernel<64, T>;
    default:
      return nullptr;
  }
}

}  // namespace

struct _P3dPillarEncoder {
  P3dcPillarEncodeParams params;
  float *weight_bias;  // [out][in_pad] then [out]
  unsigned long long *owner;
  void *rows;  // [max_voxels][out], the canvas type
  uint32_t *dropped;
  uint32_t generation;
  uint32_t in_pad;
  uint32_t pillar_warps;  // a block of pillar_kernel
};

extern "C" void p3dc_pillarencoder_free(P3dcPillarEncoder *encoder) {
  if (encoder == nullptr) return;
  cudaFree(encoder->weight_bias);
  cudaFree(encoder->owner);
  cudaFree(encoder->rows);
  cudaFree(encoder->dropped);
  delete encoder;
}

extern "C" P3dcResult p3dc_pillarencoder_new(
    const P3dcPillarEncodeParams *params, const float *weight,
    const float *bias, P3dcPillarEncoder **encoder) {
  if (encoder == nullptr) return P3DC_ERROR_INVALID_ARGUMENT;
  *encoder = nullptr;
  P3dcResult result = p3dc_pillarencode_params_validate(params);
  if (result != P3DC_OK) return result;
  if (weight == nullptr || bias == nullptr ||
      !p3dc_pillarencode_weights_finite(params, weight, bias))
    return P3DC_ERROR_INVALID_ARGUMENT;

  P3dcPillarEncoder *e = new (std::nothrow) P3dcPillarEncoder();
  if (e == nullptr) return P3DC_ERROR_OUT_OF_MEMORY;
  e->params = *params;
  const uint32_t in = params->in_channels, out = params->out_channels;
  e->in_pad = p3dc_pillarencode_padded_in(in);
  // validated: max_points * in_pad <= 4096, so a pillar takes at most
  // 16 KiB and a block holds at least one warp
  const size_t per_pillar =
      (size_t)params->max_points * e->in_pad * sizeof(float) * kWarpPillars;
  size_t warps = kSharedBudget / per_pillar;
  e->pillar_warps = (uint32_t)(warps > kWarps ? kWarps : warps);
  const size_t cells = (size_t)params->grid_x * params->grid_y;
  const size_t row_bytes = (size_t)params->max_voxels * out *
                           (params->half_out ? sizeof(__half) : sizeof(float));

  // the weights padded with zeros to in_pad per row, then the biases
  const size_t matrix = (size_t)out * e->in_pad;
  float *padded = new (std::nothrow) float[matrix + out]();
  if (padded == nullptr) {
    delete e;
    return P3DC_ERROR_OUT_OF_MEMORY;
  }
  for (uint32_t c = 0; c < out; c++)
    for (uint32_t i = 0; i < in; i++)
      padded[(size_t)c * e->in_pad + i] = weight[(size_t)c * in + i];
  for (uint32_t c = 0; c < out; c++) padded[matrix + c] = bias[c];

  cudaError_t error = cudaMalloc(reinterpret_cast<void **>(&e->weight_bias),
                                 (matrix + out) * sizeof(float));
  if (error == cudaSuccess)
    error = cudaMalloc(reinterpret_cast<void **>(&e->owner),
                       cells * sizeof(unsigned long long));
  if (error == cudaSuccess) error = cudaMalloc(&e->rows, row_bytes);
  if (error == cudaSuccess)
    error =
        cudaMalloc(reinterpret_cast<void **>(&e->dropped), sizeof(uint32_t));
  if (error == cudaSuccess)
    error = cudaMemcpy(e->weight_bias, padded, (matrix + out) * sizeof(float),
                       cudaMemcpyHostToDevice);
  delete[] padded;
  // frame 0 marks every cell empty; frames count from 1
  if (error == cudaSuccess)
    error = cudaMemset(e->owner, 0, cells * sizeof(unsigned long long));
  if (error == cudaSuccess) error = cudaMemset(e->dropped, 0, sizeof(uint32_t));
  // the fills ran on the legacy stream, which the library's non-blocking
  // streams do not wait for
  if (error == cudaSuccess) error = cudaStreamSynchronize(0);
  if (error != cudaSuccess) {
    p3dc_pillarencoder_free(e);
    return error;
  }
  *encoder = e;
  return P3DC_OK;
}

extern "C" P3dcResult p3dc_pillarencode_cuda(P3dcPillarEncoder *encoder,
                                             const P3dcPillarEncodeInput *in,
                                             void *canvas, uint32_t *dropped,
                                             P3dcCudaStream stream) {
  if (encoder == nullptr || in == nullptr || in->features == nullptr ||
      in->coords == nullptr || in->count == nullptr || canvas == nullptr)
    return P3DC_ERROR_INVALID_ARGUMENT;
  const P3dcPillarEncodeParams &p = encoder->params;
  if (((uintptr_t)in->coords & 15) != 0 ||
      ((uintptr_t)canvas & (p.half_out ? 1 : 3)) != 0 ||
      ((uintptr_t)in->features & (p.half_in ? 1 : 3)) != 0 ||
      ((uintptr_t)dropped & 3) != 0)
    return P3DC_ERROR_INVALID_ARGUMENT;
  const size_t cells = (size_t)p.grid_x * p.grid_y;

  // A new frame number; when it wraps, the map is cleared once instead.
  encoder->generation++;
  if (encoder->generation == 0) {
    cudaError_t error = cudaMemsetAsync(
        encoder->owner, 0, cells * sizeof(unsigned long long), stream);
    if (error != cudaSuccess) return error;
    encoder->generation = 1;
  }

  const unsigned claim_blocks = (p.max_voxels + 255) / 256;
  claim_kernel<<<claim_blocks, 256, 0, stream>>>(
      reinterpret_cast<const int4 *>(in->coords), in->count, p.max_voxels,
      p.grid_x, p.grid_y, encoder->generation, encoder->owner,
      encoder->dropped);
  cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) return error;

  EncodeArgs args;
  args.weight = encoder->weight_bias;
  args.bias = encoder->weight_bias + (size_t)p.out_channels * encoder->in_pad;
  args.features = in->features;
  args.count = in->count;
  args.owner = encoder->owner;
  args.rows = encoder->rows;
  args.canvas = canvas;
  args.workspace_dropped = encoder->dropped;
  args.dropped = dropped;
  args.in_channels = p.in_channels;
  args.out_channels = p.out_channels;
  args.max_points = p.max_points;
  args.max_voxels = p.max_voxels;
  args.cells = (uint32_t)cells;
  args.pillar_values = p.max_points * p.in_channels;
  args.generation = encoder->generation;
  args.half_in = p.half_in != 0;
  args.wide_out =
      ((uintptr_t)canvas & 15) == 0 && cells % (p.half_out ? 8 : 4) == 0;
  const PillarKernel pillar = p.half_out
                                  ? pillar_kernel_for<__half>(encoder->in_pad)
                                  : pillar_kernel_for<float>(encoder->in_pad);
  if (pillar == nullptr) return P3DC_ERROR_INVALID_ARGUMENT;
  // a warp per kWarpPillars possible pillars (those past the count return
  // at once), up to kPillarBlocks blocks, whose warps then take more
  const uint32_t warps = encoder->pillar_warps;
  const size_t per_block = (size_t)warps * kWarpPillars;
  const unsigned pillar_blocks = (unsigned)std::min<size_t>(
      kPillarBlocks, ((size_t)p.max_voxels + per_block - 1) / per_block);
  const size_t shared =
      per_block * p.max_points * encoder->in_pad * sizeof(float);
  pillar<<<pillar_blocks, warps * 32, shared, stream>>>(args);
  error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  const unsigned tiles = (unsigned)((cells + kTileCells - 1) / kTileCells);
  if (p.half_out)
    canvas_kernel<__half><<<tiles, kThreads, 0, stream>>>(args);
  else
    canvas_kernel<float><<<tiles, kThreads, 0, stream>>>(args);
  return cudaGetLastError();
}
