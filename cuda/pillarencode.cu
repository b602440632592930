// The pillar feature net and the scatter on the device; the reference is
// pillarencode_cpu.c and the arithmetic both share is in pillarencode.h.
//
// Two kernels per frame.  claim_kernel: one thread per pillar below the
// count writes (frame, pillar) into its cell of an index map with an atomic
// max, so the later pillar of a cell wins (as in the reference) and entries
// of earlier frames, whose frame number is lower, read as empty without a
// clearing pass.  encode_kernel: one block per tile of kTileCells cells
// lists the tile's pillars from the map and, a chunk of them at a time,
// stages their features in shared memory (a warp per pillar, kStageBatch
// loads in flight per lane), rows padded with zeros to kInPad floats,
// marking each row used or not.  Each warp then takes a pillar at a time,
// each lane one or two output channels whose weights it holds in
// registers: the slot's features are one broadcast read for the whole
// warp, so the work is the FMAs themselves (a (pillar, channel) per thread
// with the weights in shared memory reads two shared words per FMA;
// docs/performance.md).  The results go to a tile of the output in shared
// memory, and the block writes the tile's channel planes whole, zeros in
// the empty cells: consecutive threads, consecutive cells of one plane, so
// every store is coalesced (a pillar's channels stored from its warp land
// in as many planes, one sector each).  A zero row (the padding of a
// pillar with fewer points than max_points) gives ReLU (bias) exactly, so
// it is not multiplied out, and a pillar's loop stops after its last used
// row.  The padded weights and features are zeros: fmaf (0, 0, acc) is acc
// (up to the sign of a zero, which the ReLU erases), so the padded chain
// gives the reference's bits.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <new>

#include "pillarencode-private.h"
#include "pillarencode.h"

namespace {

// A tile of 64 cells per block of 256 threads: the tiles near the sensor,
// where every cell holds a pillar, are the slowest blocks, and small tiles
// spread them over more multiprocessors (docs/performance.md).
constexpr unsigned kTileCells = 64;
constexpr unsigned kThreads = 256;
constexpr unsigned kWarps = kThreads / 32;
// feature values a lane loads before it stores any while staging: loads in
// flight together instead of one global latency each
constexpr unsigned kStageBatch = 8;
// Dynamic shared memory a block may use without opting in (48 KiB), less
// the static arrays and some room.
constexpr size_t kSharedBudget = 44 * 1024;
// The output tile's rows (one per channel of a group) are one float longer
// than the tile, so that a warp's 32 channels of one cell fall in 32 banks.
constexpr unsigned kTileStride = kTileCells + 1;

// Output channels a lane computes: two (c and c + 32) where both weight
// rows fit in registers, which halves what each slot costs besides its
// FMAs (the row's shared-memory reads, the used check, the loop).
__host__ __device__ constexpr uint32_t lane_channels(uint32_t in_pad) {
  return in_pad <= 16 ? 2 : 1;
}

// Bytes of the output tile: a group of 32 * lane_channels channels.
__host__ __device__ constexpr size_t tile_bytes(uint32_t in_pad) {
  return (size_t)32 * lane_channels(in_pad) * kTileStride * sizeof(float);
}

struct EncodeArgs {
  const float *weight;  // [out][in_pad], zero beyond in
  const float *bias;    // [out]
  const void *features;
  const unsigned long long *owner;
  void *canvas;
  uint32_t *workspace_dropped;
  uint32_t *dropped;
  uint32_t in_channels, out_channels, max_points;
  uint32_t cells;
  uint32_t pillar_values;  // max_points * in, in the input
  uint32_t chunk_pillars;
  uint32_t generation;
  int half_in, half_out;
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

__device__ __forceinline__ void store(void *canvas, size_t at, float value,
                                      int half_out) {
  if (half_out)
    static_cast<__half *>(canvas)[at] = __float2half_rn(value);
  else
    static_cast<float *>(canvas)[at] = value;
}

template <uint32_t kInPad>
__global__ void __launch_bounds__(kThreads) encode_kernel(EncodeArgs a) {
  constexpr uint32_t kLane = lane_channels(kInPad);
  constexpr uint32_t kGroup = 32 * kLane;
  extern __shared__ float4 shared_rows[];
  // [kGroup][kTileStride] then [chunk][max_points][kInPad] (every row 16-byte
  // aligned: tile_bytes is a multiple of 16), then a flag per staged row
  float *tile = reinterpret_cast<float *>(shared_rows);
  float *x = tile + kGroup * kTileStride;
  const uint32_t pillar_floats = a.max_points * kInPad;
  unsigned char *row_used = reinterpret_cast<unsigned char *>(
      x + (size_t)a.chunk_pillars * pillar_floats);
  __shared__ uint32_t list_cell[kTileCells];  // within the tile
  __shared__ uint32_t list_pillar[kTileCells];
  // per staged pillar: one past its last used row; whether a row is unused
  __shared__ uint32_t pillar_end[kTileCells];
  __shared__ uint32_t pillar_padded[kTileCells];
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
  // one chunk: staged once for every group of channels
  const bool one_chunk = pillars <= a.chunk_pillars;

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
    for (uint32_t first = 0; first < pillars; first += a.chunk_pillars) {
      const uint32_t n = min(a.chunk_pillars, pillars - first);
      if (!one_chunk || group == 0) {
        // the chunk's features as float, rows padded with zeros: a warp
        // per pillar, its lanes along the pillar's contiguous values
        for (uint32_t p = warp; p < n; p += kWarps) {
          const size_t src = (size_t)list_pillar[first + p] * a.pillar_values;
          float *dst = x + p * pillar_floats;
          for (uint32_t r0 = 0; r0 < pillar_floats; r0 += 32 * kStageBatch) {
            float v[kStageBatch];
#pragma unroll
            for (uint32_t u = 0; u < kStageBatch; u++) {
              const uint32_t r = r0 + u * 32 + lane;
              const uint32_t s = r / kInPad;
              const uint32_t i = r - s * kInPad;
              v[u] = 0.0f;
              if (r < pillar_floats && i < a.in_channels) {
                const size_t at = src + s * a.in_channels + i;
                v[u] = a.half_in ? __half2float(static_cast<const __half *>(
                                       a.features)[at])
                                 : static_cast<const float *>(a.features)[at];
              }
            }
#pragma unroll
            for (uint32_t u = 0; u < kStageBatch; u++) {
              const uint32_t r = r0 + u * 32 + lane;
              if (r < pillar_floats) dst[r] = v[u];
            }
          }
        }
        if (thread < n) pillar_end[thread] = pillar_padded[thread] = 0;
        __syncthreads();
        for (uint32_t j = thread; j < n * a.max_points; j += kThreads) {
          const float4 *row = reinterpret_cast<const float4 *>(x + j * kInPad);
          bool used = false;
#pragma unroll
          for (uint32_t q = 0; q < kInPad / 4; q++) {
            const float4 v = row[q];
            used |= v.x != 0.0f || v.y != 0.0f || v.z != 0.0f || v.w != 0.0f;
          }
          row_used[j] = used;
          const uint32_t p = j / a.max_points;
          if (used)
            atomicMax(&pillar_end[p], j - p * a.max_points + 1);
          else
            pillar_padded[p] = 1;
        }
        __syncthreads();
      }
      for (uint32_t p = warp; p < n; p += kWarps) {
        const float *rows = x + p * pillar_floats;
        const unsigned char *used = row_used + p * a.max_points;
        const uint32_t end = pillar_end[p];
        float best[kLane];
#pragma unroll
        for (uint32_t k = 0; k < kLane; k++) best[k] = 0.0f;
        // used[s] is the same for the whole warp: no divergence
        for (uint32_t s = 0; s < end; s++) {
          if (!used[s]) continue;
          const float *row = static_cast<const float *>(
              __builtin_assume_aligned(rows + s * kInPad, 16));
#pragma unroll
          for (uint32_t k = 0; k < kLane; k++) {
            const float y = p3dc_pillarencode_slot(w[k], row, kInPad, b[k]);
            if (y > best[k]) best[k] = y;
          }
        }
        const uint32_t at = list_cell[first + p];
#pragma unroll
        for (uint32_t k = 0; k < kLane; k++) {
          if (pillar_padded[p] && zero_row[k] > best[k]) best[k] = zero_row[k];
          tile[(lane + 32 * k) * kTileStride + at] = best[k];
        }
      }
      // the next chunk restages the features; the tile is complete
      __syncthreads();
    }
    // the group's planes over the tile, zeros in the empty cells
    for (uint32_t i = thread; i < kGroup * kTileCells; i += kThreads) {
      const uint32_t row = i / kTileCells, at = i % kTileCells;
      const uint32_t c = group + row, cell = tile_start + at;
      if (c < a.out_channels && cell < a.cells) {
        const bool owned = (owned_cells[at / 32] >> (at % 32)) & 1u;
        store(a.canvas, (size_t)c * a.cells + cell,
              owned ? tile[row * kTileStride + at] : 0.0f, a.half_out);
      }
    }
    // the next group rewrites the tile
    __syncthreads();
  }
}

using EncodeKernel = void (*)(EncodeArgs);

EncodeKernel encode_kernel_for(uint32_t in_pad) {
  switch (in_pad) {
    case 4:
      return encode_kernel<4>;
    case 8:
      return encode_kernel<8>;
    case 12:
      return encode_kernel<12>;
    case 16:
      return encode_kernel<16>;
    case 24:
      return encode_kernel<24>;
    case 32:
      return encode_kernel<32>;
    case 48:
      return encode_kernel<48>;
    case 64:
      return encode_kernel<64>;
    default:
      return nullptr;
  }
}

}  // namespace

struct _P3dPillarEncoder {
  P3dcPillarEncodeParams params;
  float *weight_bias;  // [out][in_pad] then [out]
  unsigned long long *owner;
  uint32_t *dropped;
  uint32_t generation;
  uint32_t in_pad;
  uint32_t chunk_pillars;
  size_t shared_bytes;
};

extern "C" void p3dc_pillarencoder_free(P3dcPillarEncoder *encoder) {
  if (encoder == nullptr) return;
  cudaFree(encoder->weight_bias);
  cudaFree(encoder->owner);
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
  // 16 KiB + 1 KiB of flags (max_points <= 1024), and beside the output
  // tile (at most 16.3 KiB) a chunk holds at least one
  const size_t per_pillar =
      (size_t)params->max_points * e->in_pad * sizeof(float) +
      params->max_points;
  size_t chunk = (kSharedBudget - tile_bytes(e->in_pad)) / per_pillar;
  if (chunk > kTileCells) chunk = kTileCells;
  e->chunk_pillars = (uint32_t)chunk;
  e->shared_bytes = tile_bytes(e->in_pad) + chunk * per_pillar;
  const size_t cells = (size_t)params->grid_x * params->grid_y;

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
  args.owner = encoder->owner;
  args.canvas = canvas;
  args.workspace_dropped = encoder->dropped;
  args.dropped = dropped;
  args.in_channels = p.in_channels;
  args.out_channels = p.out_channels;
  args.max_points = p.max_points;
  args.cells = (uint32_t)cells;
  args.pillar_values = p.max_points * p.in_channels;
  args.chunk_pillars = encoder->chunk_pillars;
  args.generation = encoder->generation;
  args.half_in = p.half_in != 0;
  args.half_out = p.half_out != 0;
  const EncodeKernel kernel = encode_kernel_for(encoder->in_pad);
  if (kernel == nullptr) return P3DC_ERROR_INVALID_ARGUMENT;
  const unsigned encode_blocks =
      (unsigned)((cells + kTileCells - 1) / kTileCells);
  kernel<<<encode_blocks, kThreads, encoder->shared_bytes, stream>>>(args);
  return cudaGetLastError();
}
