// The pillar feature net and the scatter on the device; the reference is
// pillarencode_cpu.c and the arithmetic both share is in pillarencode.h.
//
// Two kernels per frame.  claim_kernel: one thread per pillar below the
// count writes (frame, pillar) into its cell of an index map with an atomic
// max, so the later pillar of a cell wins (as in the reference) and entries
// of earlier frames, whose frame number is lower, read as empty without a
// clearing pass.  encode_kernel: one block per tile of kTileCells cells
// reads the tile's map entries, writes zeros to every channel of the empty
// cells (coalesced: consecutive threads, consecutive cells of one channel
// plane), and for the tile's pillars, a chunk at a time, stages their
// features in shared memory and computes one (pillar, channel) per thread,
// storing the max straight into the canvas.  A zero row (the padding of a
// pillar with fewer points than max_points) gives ReLU (bias) exactly, so it
// is not multiplied out.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <new>

#include "pillarencode-private.h"
#include "pillarencode.h"

namespace {

constexpr unsigned kTileCells = 256;
// Dynamic shared memory a block may use without opting in (48 KiB), less
// the static arrays and some room.
constexpr size_t kSharedBudget = 44 * 1024;

struct EncodeArgs {
  const float *weight_bias;  // [out][in] then [out]
  const void *features;
  const unsigned long long *owner;
  void *canvas;
  uint32_t *workspace_dropped;
  uint32_t *dropped;
  uint32_t in_channels, out_channels, max_points;
  uint32_t cells;
  uint32_t pillar_values;  // max_points * in
  uint32_t pillar_stride;  // in shared memory: pillar_values, made odd
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

__global__ void __launch_bounds__(kTileCells) encode_kernel(EncodeArgs a) {
  extern __shared__ float shared[];
  float *weight = shared;
  float *bias = weight + a.out_channels * a.in_channels;
  float *x = bias + a.out_channels;
  unsigned char *row_used =
      reinterpret_cast<unsigned char *>(x + a.chunk_pillars * a.pillar_stride);
  __shared__ uint32_t list_cell[kTileCells];
  __shared__ uint32_t list_pillar[kTileCells];
  __shared__ uint32_t list_count;

  const unsigned thread = threadIdx.x;
  const uint32_t tile_start = blockIdx.x * kTileCells;

  // The frame's drop count: claim_kernel has finished before any block
  // of this kernel starts (same stream).
  if (blockIdx.x == 0 && thread == 0) {
    if (a.dropped) *a.dropped = *a.workspace_dropped;
    *a.workspace_dropped = 0;
  }
  if (thread == 0) list_count = 0;
  const uint32_t weight_values = a.out_channels * (a.in_channels + 1);
  for (uint32_t i = thread; i < weight_values; i += kTileCells)
    weight[i] = a.weight_bias[i];
  __syncthreads();

  const uint32_t cell = tile_start + thread;
  bool owned = false;
  if (cell < a.cells) {
    const unsigned long long entry = a.owner[cell];
    if ((uint32_t)(entry >> 32) == a.generation) {
      owned = true;
      const uint32_t k = atomicAdd(&list_count, 1u);
      list_cell[k] = cell;
      list_pillar[k] = (uint32_t)entry;
    }
  }
  if (cell < a.cells && !owned) {
    for (uint32_t c = 0; c < a.out_channels; c++)
      store(a.canvas, (size_t)c * a.cells + cell, 0.0f, a.half_out);
  }
  __syncthreads();
  const uint32_t pillars = list_count;

  for (uint32_t first = 0; first < pillars; first += a.chunk_pillars) {
    const uint32_t n = min(a.chunk_pillars, pillars - first);
    // the chunk's features, each pillar's row contiguous in global memory
    for (uint32_t j = thread; j < n * a.pillar_values; j += kTileCells) {
      const uint32_t p = j / a.pillar_values;
      const uint32_t r = j - p * a.pillar_values;
      const size_t at = (size_t)list_pillar[first + p] * a.pillar_values + r;
      x[p * a.pillar_stride + r] =
          a.half_in ? __half2float(static_cast<const __half *>(a.features)[at])
                    : static_cast<const float *>(a.features)[at];
    }
    __syncthreads();
    for (uint32_t j = thread; j < n * a.max_points; j += kTileCells) {
      const uint32_t p = j / a.max_points;
      const uint32_t s = j - p * a.max_points;
      const float *row = x + p * a.pillar_stride + s * a.in_channels;
      unsigned char used = 0;
      for (uint32_t i = 0; i < a.in_channels; i++) used |= row[i] != 0.0f;
      row_used[j] = used;
    }
    __syncthreads();
    // consecutive threads: consecutive pillars of one channel
    for (uint32_t j = thread; j < n * a.out_channels; j += kTileCells) {
      const uint32_t c = j / n;
      const uint32_t p = j - c * n;
      const float *w = weight + c * a.in_channels;
      const float b = bias[c];
      // what a zero row gives: fmaf of zeros leaves acc at +0, + b is b
      const float zero_row = b > 0.0f ? b : 0.0f;
      const float *rows = x + p * a.pillar_stride;
      const unsigned char *used = row_used + p * a.max_points;
      float best = 0.0f;
      for (uint32_t s = 0; s < a.max_points; s++) {
        const float y = used[s]
                            ? p3d_pillarencode_slot(w, rows + s * a.in_channels,
                                                    a.in_channels, b)
                            : zero_row;
        if (y > best) best = y;
      }
      store(a.canvas, (size_t)c * a.cells + list_cell[first + p], best,
            a.half_out);
    }
    // the next chunk rewrites the staged features
    __syncthreads();
  }
}

}  // namespace

struct _P3dPillarEncoder {
  P3dPillarEncodeParams params;
  float *weight_bias;
  unsigned long long *owner;
  uint32_t *dropped;
  uint32_t generation;
  uint32_t pillar_stride;
  uint32_t chunk_pillars;
  size_t shared_bytes;
};

extern "C" void p3d_pillarencoder_free(P3dPillarEncoder *encoder) {
  if (encoder == nullptr) return;
  cudaFree(encoder->weight_bias);
  cudaFree(encoder->owner);
  cudaFree(encoder->dropped);
  delete encoder;
}

extern "C" P3dResult p3d_pillarencoder_new(const P3dPillarEncodeParams *params,
                                           const float *weight,
                                           const float *bias,
                                           P3dPillarEncoder **encoder) {
  if (encoder == nullptr) return P3D_ERROR_INVALID_ARGUMENT;
  *encoder = nullptr;
  P3dResult result = p3d_pillarencode_params_validate(params);
  if (result != P3D_OK) return result;
  if (weight == nullptr || bias == nullptr ||
      !p3d_pillarencode_weights_finite(params, weight, bias))
    return P3D_ERROR_INVALID_ARGUMENT;

  P3dPillarEncoder *e = new (std::nothrow) P3dPillarEncoder();
  if (e == nullptr) return P3D_ERROR_OUT_OF_MEMORY;
  e->params = *params;
  const uint32_t pillar_values = params->max_points * params->in_channels;
  // an odd stride spreads the pillars of a warp over the banks
  e->pillar_stride = pillar_values | 1u;
  const size_t weight_bytes =
      (size_t)params->out_channels * (params->in_channels + 1) * sizeof(float);
  // validated: weights <= 16 KiB, a pillar <= 16 KiB + 4 KiB of flags
  const size_t per_pillar =
      (size_t)e->pillar_stride * sizeof(float) + params->max_points;
  size_t chunk = (kSharedBudget - weight_bytes) / per_pillar;
  if (chunk > kTileCells) chunk = kTileCells;
  e->chunk_pillars = (uint32_t)chunk;
  e->shared_bytes = weight_bytes + chunk * per_pillar;
  const size_t cells = (size_t)params->grid_x * params->grid_y;

  cudaError_t error =
      cudaMalloc(reinterpret_cast<void **>(&e->weight_bias), weight_bytes);
  if (error == cudaSuccess)
    error = cudaMalloc(reinterpret_cast<void **>(&e->owner),
                       cells * sizeof(unsigned long long));
  if (error == cudaSuccess)
    error =
        cudaMalloc(reinterpret_cast<void **>(&e->dropped), sizeof(uint32_t));
  const size_t matrix = (size_t)params->out_channels * params->in_channels;
  if (error == cudaSuccess)
    error = cudaMemcpy(e->weight_bias, weight, matrix * sizeof(float),
                       cudaMemcpyHostToDevice);
  if (error == cudaSuccess)
    error = cudaMemcpy(e->weight_bias + matrix, bias,
                       params->out_channels * sizeof(float),
                       cudaMemcpyHostToDevice);
  // frame 0 marks every cell empty; frames count from 1
  if (error == cudaSuccess)
    error = cudaMemset(e->owner, 0, cells * sizeof(unsigned long long));
  if (error == cudaSuccess) error = cudaMemset(e->dropped, 0, sizeof(uint32_t));
  // the fills ran on the legacy stream, which the library's non-blocking
  // streams do not wait for
  if (error == cudaSuccess) error = cudaStreamSynchronize(0);
  if (error != cudaSuccess) {
    p3d_pillarencoder_free(e);
    return error;
  }
  *encoder = e;
  return P3D_OK;
}

extern "C" P3dResult p3d_pillarencode_cuda(P3dPillarEncoder *encoder,
                                           const P3dPillarEncodeInput *in,
                                           void *canvas, uint32_t *dropped,
                                           P3dCudaStream stream) {
  if (encoder == nullptr || in == nullptr || in->features == nullptr ||
      in->coords == nullptr || in->count == nullptr || canvas == nullptr)
    return P3D_ERROR_INVALID_ARGUMENT;
  const P3dPillarEncodeParams &p = encoder->params;
  if (((uintptr_t)in->coords & 15) != 0 ||
      ((uintptr_t)canvas & (p.half_out ? 1 : 3)) != 0 ||
      ((uintptr_t)in->features & (p.half_in ? 1 : 3)) != 0 ||
      ((uintptr_t)dropped & 3) != 0)
    return P3D_ERROR_INVALID_ARGUMENT;
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
  args.weight_bias = encoder->weight_bias;
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
  args.pillar_stride = encoder->pillar_stride;
  args.chunk_pillars = encoder->chunk_pillars;
  args.generation = encoder->generation;
  args.half_in = p.half_in != 0;
  args.half_out = p.half_out != 0;
  const unsigned encode_blocks =
      (unsigned)((cells + kTileCells - 1) / kTileCells);
  encode_kernel<<<encode_blocks, kTileCells, encoder->shared_bytes, stream>>>(
      args);
  return cudaGetLastError();
}
