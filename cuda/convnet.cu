// The small kernels of the convolutional network's CUDA path: the input's
// conversion to the storage layout and the epilogue of layers that cuDNN
// does not finish itself (see convnet-private.h). The convolutions are
// cuDNN's (convnet_cudnn.c).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "convnet-private.h"

namespace {

constexpr unsigned kTile = 32;
constexpr unsigned kRows = 8;

template <typename T>
__device__ __forceinline__ float load(const T *p);
template <>
__device__ __forceinline__ float load<float>(const float *p) {
  return *p;
}
template <>
__device__ __forceinline__ float load<__half>(const __half *p) {
  return __half2float(*p);
}

template <typename T>
__device__ __forceinline__ void store(T *p, float v);
template <>
__device__ __forceinline__ void store<float>(float *p, float v) {
  *p = v;
}
template <>
__device__ __forceinline__ void store<__half>(__half *p, float v) {
  *p = __float2half_rn(v);
}

// [C][HW] to [HW][C] as F16 through a shared-memory tile, so that both the
// reads and the writes are coalesced.
template <typename In>
__global__ void nchw_to_nhwc_kernel(const In *in, __half *out,
                                    uint32_t channels, uint32_t stored,
                                    uint32_t plane) {
  __shared__ float tile[kTile][kTile + 1];
  uint32_t pixel = blockIdx.x * kTile + threadIdx.x;
  uint32_t channel0 = blockIdx.y * kTile;
  for (uint32_t r = threadIdx.y; r < kTile; r += kRows) {
    uint32_t c = channel0 + r;
    if (c < channels && pixel < plane)
      tile[r][threadIdx.x] = load(in + (size_t)c * plane + pixel);
  }
  __syncthreads();
  uint32_t c = channel0 + threadIdx.x;
  for (uint32_t r = threadIdx.y; r < kTile; r += kRows) {
    uint32_t p = blockIdx.x * kTile + r;
    if (c < channels && p < plane)
      out[(size_t)p * stored + c] = __float2half_rn(tile[threadIdx.x][r]);
  }
}

template <typename In, typename Out>
__global__ void convert_kernel(const In *in, Out *out, size_t count) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += stride)
    store(out + i, load(in + i));
}

// One thread per output element; the fastest index follows the source
// layout (channels for NHWC, columns for NCHW) so that loads coalesce.
template <typename T>
__global__ void epilogue_kernel(P3dcConvEpilogue e) {
  const T *src = static_cast<const T *>(e.src);
  T *dst = static_cast<T *>(e.dst);
  size_t count = (size_t)e.out_channels * e.out_height * e.out_width;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    uint32_t o, y, x;
    if (e.nhwc) {
      o = (uint32_t)(i % e.out_channels);
      size_t pixel = i / e.out_channels;
      x = (uint32_t)(pixel % e.out_width);
      y = (uint32_t)(pixel / e.out_width);
    } else {
      x = (uint32_t)(i % e.out_width);
      size_t rest = i / e.out_width;
      y = (uint32_t)(rest % e.out_height);
      o = (uint32_t)(rest / e.out_height);
    }
    uint32_t s = e.shuffle;
    uint32_t sy = y / s, sx = x / s;
    uint32_t sc = ((y % s) * s + x % s) * e.src_group + o;
    size_t at = e.nhwc ? ((size_t)sy * e.src_width + sx) * e.src_channels + sc
                       : ((size_t)sc * e.src_height + sy) * e.src_width + sx;
    float v = load(src + at) + e.bias[o];
    if (e.relu && !(v > 0.0f)) v = 0.0f;
    store(dst + o * e.dst_channel_stride + y * e.dst_row_stride +
              x * e.dst_column_stride,
          v);
  }
}

unsigned blocks_for(size_t count, unsigned threads) {
  size_t blocks = (count + threads - 1) / threads;
  return (unsigned)(blocks > 65535 * 8 ? 65535 * 8 : blocks);
}

}  // namespace

extern "C" P3dcResult p3dc_convnet_convert_input(
    const void *in, int in_half, void *out, int out_half, int nhwc,
    uint32_t channels, uint32_t stored_channels, uint32_t height,
    uint32_t width, P3dcCudaStream stream) {
  if (in == nullptr || out == nullptr || (nhwc && !out_half) ||
      (nhwc && stored_channels < channels))
    return P3DC_ERROR_INVALID_ARGUMENT;
  uint32_t plane = height * width;
  if (nhwc) {
    dim3 grid((plane + kTile - 1) / kTile, (channels + kTile - 1) / kTile);
    dim3 block(kTile, kRows);
    if (in_half)
      nchw_to_nhwc_kernel<<<grid, block, 0, stream>>>(
          static_cast<const __half *>(in), static_cast<__half *>(out), channels,
          stored_channels, plane);
    else
      nchw_to_nhwc_kernel<<<grid, block, 0, stream>>>(
          static_cast<const float *>(in), static_cast<__half *>(out), channels,
          stored_channels, plane);
    return cudaGetLastError();
  }
  size_t count = (size_t)channels * plane;
  const unsigned threads = 256;
  unsigned blocks = blocks_for(count, threads);
  if (in_half && out_half)
    convert_kernel<<<blocks, threads, 0, stream>>>(
        static_cast<const __half *>(in), static_cast<__half *>(out), count);
  else if (in_half)
    convert_kernel<<<blocks, threads, 0, stream>>>(
        static_cast<const __half *>(in), static_cast<float *>(out), count);
  else if (out_half)
    convert_kernel<<<blocks, threads, 0, stream>>>(
        static_cast<const float *>(in), static_cast<__half *>(out), count);
  else
    convert_kernel<<<blocks, threads, 0, stream>>>(
        static_cast<const float *>(in), static_cast<float *>(out), count);
  return cudaGetLastError();
}

extern "C" P3dcResult p3dc_convnet_epilogue(const P3dcConvEpilogue *e,
                                            P3dcCudaStream stream) {
  if (e == nullptr || e->src == nullptr || e->dst == nullptr ||
      e->bias == nullptr || e->shuffle < 1 || e->src_group < e->out_channels)
    return P3DC_ERROR_INVALID_ARGUMENT;
  size_t count = (size_t)e->out_channels * e->out_height * e->out_width;
  const unsigned threads = 256;
  unsigned blocks = blocks_for(count, threads);
  if (e->half)
    epilogue_kernel<__half><<<blocks, threads, 0, stream>>>(*e);
  else
    epilogue_kernel<float><<<blocks, threads, 0, stream>>>(*e);
  return cudaGetLastError();
}
