// The grouped convolution of a merged detection head on the tensor cores
// (convnet-private.h: P3dcConvGrouped).  A head's final layers, merged by the
// model layer into one grouped convolution (a group a head, at most 8
// outputs each), are what cuDNN runs worst: a launch per group on a kernel
// without tensor cores (69 us a group for CenterHead's 36 at 128 x 128 on the
// H200, where the 36 convolutions apart take about 9 us each).  Here a group's
// output is one implicit GEMM whose N is the mma instruction's own 8:
// mma.sync m16n8k16 takes 16 output pixels by 8 outputs by 16 input channels
// of one kernel tap.  A block takes a tile of 8 output rows by 32 columns of
// one group: it first copies the input under the tile (the rows and columns
// its taps reach, the group's channels, zeros in the padding) into shared
// memory with asynchronous 16-byte copies, so that every input value comes
// from memory once a tile and not once a tap (the group's few outputs leave
// nothing else to amortize a load over: loading per tap through L1 measured
// 100 us for CenterHead's 36 groups at 128 x 128); then each warp computes a
// row of 32
// pixels (two m16 tiles) tap by tap, the group's channels 32 at a time.  The
// order of a sum over k is free, so k is permuted to fit the reads: the
// lanes of a fragment row read the 32 channels of their pixel as four
// 16-byte reads (lane k % 4 channels 8 (k % 4) to 8 (k % 4) + 7), the first
// half of each feeding one mma and the second half the next; the weights,
// laid out by the plan in the same order, are then simply the 8 channels of
// the lane's output, one 16-byte load for both mmas.  F32 accumulation, bias
// and ReLU in float, one F16 rounding at the store: what the CUDA path
// promises for every convolution (convnet.h).
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <string.h>

#include "convnet-private.h"
#include "half.h"

namespace {

constexpr unsigned kTileRows = 8;      // output rows of a block: a warp each
constexpr unsigned kTileColumns = 32;  // output columns: two m16 tiles
constexpr unsigned kBlockChannels = 32;
static_assert(kBlockChannels == P3DC_CONVNET_GROUPED_INPUTS &&
                  P3DC_CONVNET_GROUPED_OUTPUTS == 8,
              "the bounds convnet.h promises: a 32-channel block a load "
              "round, the mma's 8 outputs");
// the largest input tile a block stages, in bytes
constexpr size_t kMaxTileBytes = 96 * 1024;

// A staged pixel's bytes: its channels.  The two fragment rows of a quarter
// warp's 16-byte reads (lanes 4 r to 4 r + 7: two neighbouring pixels, the
// same 64 bytes of each) fall on different banks when the pitch is 64 bytes
// past a multiple of 128; at a multiple of 128 an odd pixel's 16-byte
// pieces are stored swapped by halves of 128 bytes (piece k at k ^ 4).
__host__ __device__ constexpr uint32_t pixel_pitch(uint32_t group_in) {
  return group_in * 2;
}

__device__ __forceinline__ uint32_t piece_swap(uint32_t pitch, uint32_t pixel) {
  return pitch % 128 == 0 && (pixel & 1) ? 4u : 0u;
}

__host__ __device__ constexpr size_t tile_bytes(uint32_t group_in,
                                                uint32_t kernel_y,
                                                uint32_t kernel_x) {
  return (size_t)(kTileRows + kernel_y - 1) * (kTileColumns + kernel_x - 1) *
         pixel_pitch(group_in);
}

__device__ __forceinline__ void mma_16x8x16(float d[4], uint32_t a0,
                                            uint32_t a1, uint32_t a2,
                                            uint32_t a3, uint32_t b0,
                                            uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
  // the runner plans this kernel only on devices with mma
  __trap();
#endif
}

// 16 bytes from @src to shared @dst, or 16 zero bytes when not @copy (no
// byte of @src read), without waiting.
__device__ __forceinline__ void copy_16(void *dst, const void *src, bool copy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t to = (uint32_t)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to),
               "l"(src), "r"(copy ? 16 : 0));
#else
  __trap();
#endif
}

// Waits for the thread's copies.
__device__ __forceinline__ void copies_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// blockIdx.x: the tile (columns fastest, then rows, then the batch item);
// blockIdx.y: the group.  Warp w computes output row w of the tile; lane / 4
// is a row of each m16 tile (columns row, row + 8, row + 16, row + 24), lane
// % 4 its channels in each 32-channel block.
__global__ void __launch_bounds__(kTileRows * 32)
    grouped_kernel(const P3dcConvGrouped g) {
  extern __shared__ __align__(16) unsigned char tile[];
  const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const uint32_t group = blockIdx.y;
  const uint32_t tiles_x = (g.out_width + kTileColumns - 1) / kTileColumns;
  const uint32_t tiles_y = (g.out_height + kTileRows - 1) / kTileRows;
  const uint32_t n = blockIdx.x / (tiles_x * tiles_y);
  const uint32_t in_item = blockIdx.x - n * tiles_x * tiles_y;
  const uint32_t y0 = in_item / tiles_x * kTileRows;
  const uint32_t x0 = in_item % tiles_x * kTileColumns;
  const uint32_t span_y = kTileRows + g.kernel_y - 1;
  const uint32_t span_x = kTileColumns + g.kernel_x - 1;
  const uint32_t pitch = pixel_pitch(g.group_in);
  const uint32_t pieces = g.group_in / 8;        // 16-byte pieces of a pixel
  const uint32_t at_once = blockDim.x / pieces;  // pixels staged at once

  // the input under the tile, zeros outside the input: asynchronous
  // copies, all of a thread's in flight at once (loads that each wait for
  // the one before measured 120 us)
  const uint32_t piece = threadIdx.x % pieces;
  uint32_t tx = threadIdx.x / pieces, ty = 0;
  while (tx >= span_x) {
    tx -= span_x;
    ty++;
  }
  for (uint32_t pixel = threadIdx.x / pieces;
       threadIdx.x < at_once * pieces && pixel < span_y * span_x;
       pixel += at_once) {
    const int iy = (int)(y0 + ty) - (int)g.pad_y;
    const int ix = (int)(x0 + tx) - (int)g.pad_x;
    const bool inside =
        iy >= 0 && ix >= 0 && iy < (int)g.in_height && ix < (int)g.in_width;
    const __half *src = static_cast<const __half *>(g.in.data);
    if (inside)
      src += n * g.in.batch + (uint32_t)iy * g.in.row +
             (uint32_t)ix * g.in.column + group * g.group_in + 8 * piece;
    copy_16(tile + pixel * pitch + 16 * (piece ^ piece_swap(pitch, pixel)), src,
            inside);
    for (tx += at_once; tx >= span_x; tx -= span_x) ty++;
  }
  copies_wait();
  __syncthreads();

  const uint32_t row = lane >> 2, quad = lane & 3;
  const uint32_t blocks = g.group_in / kBlockChannels;
  const uint4 *b_words = reinterpret_cast<const uint4 *>(g.weight) +
                         (size_t)group * g.kernel_y * g.kernel_x * blocks * 32 +
                         lane;
  // acc[t]: m16 tile t's fragment
  float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
  for (uint32_t ky = 0; ky < g.kernel_y; ky++)
    for (uint32_t kx = 0; kx < g.kernel_x; kx++) {
      // fragment row r's pixel: column row + 8 r of output row warp (one
      // parity for every r)
      const uint32_t pixel = (warp + ky) * span_x + row + kx;
      const uint32_t swap = piece_swap(pitch, pixel);
      const unsigned char *at = tile + pixel * pitch;
      const uint4 *b_tap =
          b_words + (size_t)(ky * g.kernel_x + kx) * blocks * 32;
      for (uint32_t q = 0; q < blocks; q++) {
        uint4 a[4];
#pragma unroll
        for (uint32_t r = 0; r < 4; r++)
          a[r] = *reinterpret_cast<const uint4 *>(at + 8 * r * pitch +
                                                  16 * ((4 * q + quad) ^ swap));
        const uint4 b = b_tap[q * 32];
#pragma unroll
        for (uint32_t t = 0; t < 2; t++) {
          // a[2 t]: the top row of m16 tile t, a[2 t + 1]: its bottom
          mma_16x8x16(acc[t], a[2 * t].x, a[2 * t + 1].x, a[2 * t].y,
                      a[2 * t + 1].y, b.x, b.y);
          mma_16x8x16(acc[t], a[2 * t].z, a[2 * t + 1].z, a[2 * t].w,
                      a[2 * t + 1].w, b.z, b.w);
        }
      }
    }
  // acc[t][0], [1]: outputs 2 quad, 2 quad + 1 of tile t's top pixel; [2],
  // [3]: of its bottom pixel
  const uint32_t y = y0 + warp;
#pragma unroll
  for (uint32_t t = 0; t < 2; t++)
#pragma unroll
    for (uint32_t k = 0; k < 4; k++) {
      const uint32_t x = x0 + row + 8 * (2 * t + (k >> 1));
      const uint32_t o = 2 * quad + (k & 1);
      if (y >= g.out_height || x >= g.out_width || o >= g.group_out) continue;
      const uint32_t channel = group * g.group_out + o;
      const float v = p3dc_convnet_relu(g.relu, acc[t][k] + g.bias[channel]);
      __half *dst = static_cast<__half *>(const_cast<void *>(g.out.data)) +
                    n * g.out.batch + channel * g.out.channel + y * g.out.row +
                    x * g.out.column;
      *dst = __float2half_rn(v);
    }
}

}  // namespace

extern "C" int p3dc_convnet_grouped_supported(uint32_t in_channels,
                                              uint32_t out_channels,
                                              const P3dcConvGeometry *g) {
  return g->groups > 1 && (in_channels / g->groups) % kBlockChannels == 0 &&
         out_channels / g->groups <= 8 && g->stride[0] == 1 &&
         g->stride[1] == 1 && g->dilation[0] == 1 && g->dilation[1] == 1 &&
         tile_bytes(in_channels / g->groups, g->kernel[0], g->kernel[1]) <=
             kMaxTileBytes;
}

extern "C" size_t p3dc_convnet_grouped_weight_words(uint32_t groups,
                                                    uint32_t group_in,
                                                    uint32_t taps) {
  return (size_t)groups * taps * (group_in / kBlockChannels) * 32 * 4;
}

extern "C" void p3dc_convnet_grouped_weights(const float *weight,
                                             uint32_t groups, uint32_t group_in,
                                             uint32_t group_out, uint32_t taps,
                                             uint32_t *words) {
  const uint32_t blocks = group_in / kBlockChannels;
  for (uint32_t group = 0; group < groups; group++)
    for (uint32_t t = 0; t < taps; t++)
      for (uint32_t q = 0; q < blocks; q++)
        for (uint32_t lane = 0; lane < 32; lane++) {
          // the B fragments of both of the block's mmas: output lane / 4,
          // the 8 channels the lane's A loads read, in order
          const uint32_t n = lane >> 2;
          const uint32_t c0 = q * kBlockChannels + 8 * (lane & 3);
          uint32_t *w =
              words +
              ((((size_t)group * taps + t) * blocks + q) * 32 + lane) * 4;
          for (uint32_t word = 0; word < 4; word++) {
            uint16_t h[2] = {0, 0};
            for (uint32_t e = 0; e < 2; e++) {
              const uint32_t c = c0 + 2 * word + e;
              if (n < group_out)
                h[e] = p3dc_float_to_half(
                    weight[(((size_t)group * group_out + n) * group_in + c) *
                               taps +
                           t]);
            }
            w[word] = (uint32_t)h[0] | (uint32_t)h[1] << 16;
          }
        }
}

extern "C" P3dcResult p3dc_convnet_grouped_prepare(void) {
  return cudaFuncSetAttribute(grouped_kernel,
                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                              (int)kMaxTileBytes);
}

extern "C" P3dcResult p3dc_convnet_grouped(const P3dcConvGrouped *g,
                                           P3dcCudaStream stream) {
  if (g == nullptr || g->in.data == nullptr || g->out.data == nullptr ||
      g->weight == nullptr || g->bias == nullptr || g->batch < 1 ||
      g->groups < 1 || g->groups > 65535 || g->group_in % kBlockChannels != 0 ||
      g->group_out > 8 || g->in.channel != 1 ||
      reinterpret_cast<uintptr_t>(g->in.data) % 16 != 0 ||
      g->in.column % 8 != 0 || g->in.row % 8 != 0 || g->in.batch % 8 != 0)
    return P3DC_ERROR_INVALID_ARGUMENT;
  const size_t smem = tile_bytes(g->group_in, g->kernel_y, g->kernel_x);
  if (smem > kMaxTileBytes) return P3DC_ERROR_INVALID_ARGUMENT;
  const size_t tiles = (size_t)g->batch *
                       ((g->out_height + kTileRows - 1) / kTileRows) *
                       ((g->out_width + kTileColumns - 1) / kTileColumns);
  if (tiles > 0x7fffffffu) return P3DC_ERROR_INVALID_ARGUMENT;
  dim3 grid((unsigned)tiles, g->groups);
  grouped_kernel<<<grid, kTileRows * 32, smem, stream>>>(*g);
  return cudaGetLastError();
}
