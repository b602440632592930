// The kernels of the layer graph's CUDA path: the input's conversion to the
// storage layout, the epilogue of convolutions that cuDNN does not finish
// itself, and every kind other than the convolutions (add, max pool,
// upsampling, softmax, channel slice), each computing the reference's
// formulas (convnet-private.h) in float from the stored values. The
// convolutions are cuDNN's (convnet_cudnn.c).
//
// The epilogue and the element-wise kinds take kLanes F16 channels (one
// 16-byte load or store) a thread where every tensor they touch allows it
// (p3dc_convnet_epilogue_lanes, p3dc_convnet_kernel_lanes), otherwise one
// element: one index computation and one memory access per element left
// the neck's epilogues at about a tenth of the memory's bandwidth. Each
// element's float arithmetic is the same either way, and so are the bits.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "convnet-private.h"

namespace {

constexpr unsigned kTile = 32;
constexpr unsigned kRows = 8;
constexpr uint32_t kLanes = 8;

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

// @V consecutive elements (channels, in NHWC) as they are stored: V is 1,
// or kLanes for F16 at a 16-byte aligned address (one 16-byte load).
template <typename T, uint32_t V>
struct Raw {
  static_assert(V == 1, "one element");
  using type = T;
};
template <>
struct Raw<__half, kLanes> {
  using type = uint4;
};

template <typename T, uint32_t V>
__device__ __forceinline__ typename Raw<T, V>::type load_raw(const T *p) {
  return *reinterpret_cast<const typename Raw<T, V>::type *>(p);
}

// The elements of load_raw as floats.
template <typename T, uint32_t V>
__device__ __forceinline__ void unpack(const typename Raw<T, V>::type &raw,
                                       float (&v)[V]) {
  if constexpr (V == 1) {
    v[0] = load(&raw);
  } else {
    const __half2 *h = reinterpret_cast<const __half2 *>(&raw);
#pragma unroll
    for (uint32_t j = 0; j < V / 2; j++) {
      float2 f = __half22float2(h[j]);
      v[2 * j] = f.x;
      v[2 * j + 1] = f.y;
    }
  }
}

template <typename T, uint32_t V>
__device__ __forceinline__ void load_lanes(const T *p, float (&v)[V]) {
  unpack<T, V>(load_raw<T, V>(p), v);
}

template <typename T, uint32_t V>
__device__ __forceinline__ void store_lanes(T *p, const float (&v)[V]) {
  if constexpr (V == 1) {
    store(p, v[0]);
  } else {
    static_assert(V == kLanes && sizeof(T) == 2, "16 bytes of F16");
    uint4 raw;
    __half2 *h = reinterpret_cast<__half2 *>(&raw);
#pragma unroll
    for (uint32_t j = 0; j < V / 2; j++)
      h[j] = __floats2half2_rn(v[2 * j], v[2 * j + 1]);
    *reinterpret_cast<uint4 *>(p) = raw;
  }
}

template <typename T>
__device__ __forceinline__ const T *at(const P3dcConvTensor &t, uint32_t n,
                                       uint32_t c, uint32_t y, uint32_t x) {
  return static_cast<const T *>(t.data) + n * t.batch + c * t.channel +
         y * t.row + x * t.column;
}

unsigned blocks_for(size_t count, unsigned threads) {
  size_t blocks = (count + threads - 1) / threads;
  if (blocks == 0) blocks = 1;
  return (unsigned)(blocks > 65535 * 8 ? 65535 * 8 : blocks);
}

// [C][HW] to [HW][C] as F16 for inputs stored as kStored = 4 or 8
// channels (an image): a thread takes a pixel's kStored channels (those at
// and past @channels zero), reads each from its plane, consecutive threads
// consecutive pixels, and writes them as one store of 2 kStored bytes.  The
// tile kernel below left 29 of a warp's 32 lanes idle on an image's 3
// channels: BEVDet's six images took 68.6 us there, 8.0 here (Nsight
// Compute, H200, docs/performance.md).
template <typename In, uint32_t kStored>
__global__ void nchw_to_nhwc_pixel_kernel(const In *in, __half *out,
                                          uint32_t channels, uint32_t plane,
                                          uint32_t count) {
  static_assert(kStored == 4 || kStored == 8, "one 8- or 16-byte store");
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const uint32_t p = i % plane;
    const size_t n = i / plane;
    const In *from = in + n * channels * plane + p;
    union {
      uint4 whole;
      uint2 half;
      __half values[8];
    } pixel;
#pragma unroll
    for (uint32_t c = 0; c < kStored; c++)
      pixel.values[c] =
          __float2half_rn(c < channels ? load(from + (size_t)c * plane) : 0.0f);
    __half *to = out + (size_t)i * kStored;
    if constexpr (kStored == 8)
      *reinterpret_cast<uint4 *>(to) = pixel.whole;
    else
      *reinterpret_cast<uint2 *>(to) = pixel.half;
  }
}

// The same for wider inputs, through a shared-memory tile of 32 channels x
// 32 pixels, so that both the reads and the writes are coalesced
// (blockIdx.z is the batch item; the padding channels are not written).
// A thread a pixel and 8 channels took CenterPoint's 64 x 512 x 512 canvas
// from 36.9 to 59.6 us (Nsight Compute, H200): its 16-byte stores, 128
// bytes apart, each touch another line.
template <typename In>
__global__ void nchw_to_nhwc_tile_kernel(const In *in, __half *out,
                                         uint32_t channels, uint32_t stored,
                                         uint32_t plane) {
  __shared__ float tile[kTile][kTile + 1];
  in += (size_t)blockIdx.z * channels * plane;
  out += (size_t)blockIdx.z * stored * plane;
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

// The conversion into @stored F16 channels a pixel, 4 or a multiple of 8
// (what the runner stores, convnet_cudnn.c; any other count is refused): 4
// or 8 a pixel a thread, more through the tile.  A conversion of 2^32 pixel
// threads or more (8 GB and more) is refused.
template <typename In>
P3dcResult launch_nchw_to_nhwc(const In *in, __half *out, uint32_t batch,
                               uint32_t channels, uint32_t stored,
                               uint32_t plane, cudaStream_t stream) {
  if (stored == 0 || (stored != 4 && stored % 8 != 0))
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (stored > 8) {
    dim3 grid((plane + kTile - 1) / kTile, (channels + kTile - 1) / kTile,
              batch);
    dim3 block(kTile, kRows);
    nchw_to_nhwc_tile_kernel<<<grid, block, 0, stream>>>(in, out, channels,
                                                         stored, plane);
    return cudaGetLastError();
  }
  // a thread a pixel
  const unsigned threads = 256;
  const size_t threads_needed = (size_t)batch * plane;
  if (threads_needed > UINT32_MAX) return P3DC_ERROR_INVALID_ARGUMENT;
  const uint32_t count = (uint32_t)threads_needed;
  const unsigned blocks = blocks_for(count, threads);
  if (stored == 8)
    nchw_to_nhwc_pixel_kernel<In, 8>
        <<<blocks, threads, 0, stream>>>(in, out, channels, plane, count);
  else
    nchw_to_nhwc_pixel_kernel<In, 4>
        <<<blocks, threads, 0, stream>>>(in, out, channels, plane, count);
  return cudaGetLastError();
}

template <typename In, typename Out>
__global__ void convert_kernel(const In *in, Out *out, size_t count) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += stride)
    store(out + i, load(in + i));
}

// One output element (n, c, y, x), from a flat index whose fastest part is
// the channel (channels_fastest) or the column. 32-bit: validation keeps
// every buffer below 2^31 elements, and a 64-bit division costs several
// times a 32-bit one in these memory-bound kernels.
struct Position {
  uint32_t n, c, y, x;
};

__device__ __forceinline__ Position position(uint32_t i, bool channels_fastest,
                                             uint32_t channels, uint32_t height,
                                             uint32_t width, uint32_t batch) {
  Position p;
  uint32_t rest;
  if (channels_fastest) {
    p.c = i % channels;
    rest = i / channels;
    p.x = rest % width;
    rest /= width;
  } else {
    p.x = i % width;
    rest = i / width;
    p.y = rest % height;
    rest /= height;
    p.c = rest % channels;
    p.n = batch > 1 ? rest / channels : 0;
    return p;
  }
  if (batch > 1) {
    p.y = rest % height;
    p.n = rest / height;
  } else {
    p.y = rest;
    p.n = 0;
  }
  return p;
}

// One thread per V output channels of a pixel (V: see load_lanes); the
// fastest index follows the source layout (channels for NHWC, columns for
// NCHW, where V is 1) so that loads coalesce.
template <typename T, uint32_t V>
__global__ void epilogue_kernel(P3dcConvEpilogue e) {
  const T *src = static_cast<const T *>(e.src);
  uint32_t vectors = e.out_channels / V;
  uint32_t count = e.batch * vectors * e.out_height * e.out_width;
  uint32_t stride = gridDim.x * blockDim.x;
  bool shuffled = e.shuffle_y > 1 || e.shuffle_x > 1;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    Position p =
        position(i, e.nhwc, vectors, e.out_height, e.out_width, e.batch);
    p.c *= V;
    uint32_t sy = p.y, sx = p.x, sc = p.c;
    if (shuffled) {
      sy = p.y / e.shuffle_y;
      sx = p.x / e.shuffle_x;
      sc = ((p.y - sy * e.shuffle_y) * e.shuffle_x + (p.x - sx * e.shuffle_x)) *
               e.src_group +
           p.c;
    }
    size_t source =
        e.nhwc ? (((size_t)p.n * e.src_height + sy) * e.src_width + sx) *
                         e.src_channels +
                     sc
               : (((size_t)p.n * e.src_channels + sc) * e.src_height + sy) *
                         e.src_width +
                     sx;
    float v[V], r[V];
    load_lanes<T, V>(src + source, v);
    if (e.residual.data != nullptr)
      load_lanes<T, V>(at<T>(e.residual, p.n, p.c, p.y, p.x), r);
#pragma unroll
    for (uint32_t j = 0; j < V; j++) {
      v[j] = v[j] + e.bias[p.c + j];
      if (e.residual.data != nullptr) v[j] = v[j] + r[j];
      v[j] = p3dc_convnet_relu(e.relu, v[j]);
    }
    store_lanes<T, V>(const_cast<T *>(at<T>(e.dst, p.n, p.c, p.y, p.x)), v);
  }
}

// Max pool: the input row and column of tap (ky, kx) of output position
// @p, and whether the tap falls inside the input (padding does not count).
__device__ __forceinline__ bool pool_tap(const P3dcConvKernel &k,
                                         const Position &p, uint32_t ky,
                                         uint32_t kx, uint32_t *iy,
                                         uint32_t *ix) {
  const P3dcConvGeometry &g = k.geometry;
  const int64_t y =
      (int64_t)p.y * g.stride[0] + (int64_t)ky * g.dilation[0] - g.padding[0];
  const int64_t x =
      (int64_t)p.x * g.stride[1] + (int64_t)kx * g.dilation[1] - g.padding[1];
  *iy = (uint32_t)y;
  *ix = (uint32_t)x;
  return y >= 0 && y < k.in_height && x >= 0 && x < k.in_width;
}

// Max pool: @v takes each lane of @x that is larger, or NaN (a NaN in a
// window wins, as in PyTorch).
template <uint32_t V>
__device__ __forceinline__ void keep_max(float (&v)[V], const float (&x)[V]) {
#pragma unroll
  for (uint32_t j = 0; j < V; j++)
    if (x[j] > v[j] || isnan(x[j])) v[j] = x[j];
}

// The other kinds, one thread per V output channels of a pixel (softmax:
// its own kernel, a warp a position).  kPool 3: a max pool of 3 x 3 taps
// (ResNet's stem pool) that loads every tap before it compares, so that a
// thread's nine loads are in flight together rather than one after
// another; 0: the pool's size as the geometry gives it, a tap at a time.
template <typename T, uint32_t V, uint32_t kPool = 0>
__global__ void elementwise_kernel(P3dcConvKernel k) {
  uint32_t vectors = k.channels / V;
  uint32_t count = k.batch * vectors * k.out_height * k.out_width;
  uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    Position p = position(i, k.channels_fastest, vectors, k.out_height,
                          k.out_width, k.batch);
    p.c *= V;
    float v[V];
    switch (k.kind) {
      case P3DC_LAYER_ADD: {
        float b[V];
        load_lanes<T, V>(at<T>(k.in, p.n, p.c, p.y, p.x), v);
        load_lanes<T, V>(at<T>(k.in2, p.n, p.c, p.y, p.x), b);
#pragma unroll
        for (uint32_t j = 0; j < V; j++) v[j] = v[j] + b[j];
        break;
      }
      case P3DC_LAYER_MAX_POOL: {
#pragma unroll
        for (uint32_t j = 0; j < V; j++) v[j] = -INFINITY;
        uint32_t iy, ix;
        if constexpr (kPool != 0) {
          // every tap's load first, then the maximum in the loop's order
          typename Raw<T, V>::type raw[kPool * kPool];
          bool inside[kPool * kPool];
#pragma unroll
          for (uint32_t t = 0; t < kPool * kPool; t++) {
            inside[t] = pool_tap(k, p, t / kPool, t % kPool, &iy, &ix);
            if (inside[t])
              raw[t] = load_raw<T, V>(at<T>(k.in, p.n, p.c, iy, ix));
          }
#pragma unroll
          for (uint32_t t = 0; t < kPool * kPool; t++) {
            if (!inside[t]) continue;
            float x[V];
            unpack<T, V>(raw[t], x);
            keep_max<V>(v, x);
          }
        } else {
          for (uint32_t ky = 0; ky < k.geometry.kernel[0]; ky++) {
            for (uint32_t kx = 0; kx < k.geometry.kernel[1]; kx++) {
              if (!pool_tap(k, p, ky, kx, &iy, &ix)) continue;
              float x[V];
              load_lanes<T, V>(at<T>(k.in, p.n, p.c, iy, ix), x);
              keep_max<V>(v, x);
            }
          }
        }
        break;
      }
      case P3DC_LAYER_UPSAMPLE_NEAREST:
        load_lanes<T, V>(
            at<T>(k.in, p.n, p.c,
                  p3dc_convnet_nearest_source(p.y, k.in_height, k.out_height),
                  p3dc_convnet_nearest_source(p.x, k.in_width, k.out_width)),
            v);
        break;
      case P3DC_LAYER_UPSAMPLE_BILINEAR: {
        uint32_t y0, y1, x0, x1;
        float ly0, ly1, lx0, lx1, a[V], b[V], c[V], d[V];
        p3dc_convnet_bilinear_source(p.y, k.in_height, k.out_height,
                                     k.align_corners, &y0, &y1, &ly0, &ly1);
        p3dc_convnet_bilinear_source(p.x, k.in_width, k.out_width,
                                     k.align_corners, &x0, &x1, &lx0, &lx1);
        load_lanes<T, V>(at<T>(k.in, p.n, p.c, y0, x0), a);
        load_lanes<T, V>(at<T>(k.in, p.n, p.c, y0, x1), b);
        load_lanes<T, V>(at<T>(k.in, p.n, p.c, y1, x0), c);
        load_lanes<T, V>(at<T>(k.in, p.n, p.c, y1, x1), d);
#pragma unroll
        for (uint32_t j = 0; j < V; j++)
          v[j] =
              p3dc_convnet_bilinear(ly0, ly1, lx0, lx1, a[j], b[j], c[j], d[j]);
        break;
      }
      default:  // P3DC_LAYER_SLICE
        load_lanes<T, V>(at<T>(k.in, p.n, p.c, p.y, p.x), v);
        break;
    }
#pragma unroll
    for (uint32_t j = 0; j < V; j++) v[j] = p3dc_convnet_relu(k.relu, v[j]);
    store_lanes<T, V>(const_cast<T *>(at<T>(k.out, p.n, p.c, p.y, p.x)), v);
  }
}

// Softmax over the channels of one position a warp, in the reference's
// order.  The lanes find the maximum together: its order does not matter,
// as at most which of +0 and -0 wins changes, and every x - m is then the
// same value.  Every lane adds the exponentials from 0 in channel order,
// one shuffle each, and the lanes write the quotients.  A thread a
// position, its three passes over the channels one load after another,
// took 45 us for BEVDet's 4,224 positions of 59 bins (H200,
// docs/performance.md).
template <typename T>
__global__ void softmax_kernel(P3dcConvKernel k) {
  constexpr unsigned kFullWarp = 0xffffffffu;
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t count = k.batch * k.out_height * k.out_width;
  const uint32_t warps = gridDim.x * blockDim.x / 32;
  for (uint32_t i = (blockIdx.x * blockDim.x + threadIdx.x) / 32; i < count;
       i += warps) {
    const uint32_t x = i % k.out_width;
    const uint32_t rest = i / k.out_width;
    const uint32_t y = rest % k.out_height;
    const uint32_t n = rest / k.out_height;
    // the largest of channels 1 on, NaN left out; then channel 0 is the
    // maximum unless another exceeds it, so a NaN there stays, as in the
    // reference's loop
    float others = -INFINITY;
    for (uint32_t c = 1 + lane; c < k.channels; c += 32) {
      const float v = load(at<T>(k.in, n, c, y, x));
      if (v > others) others = v;
    }
    for (uint32_t offset = 16; offset > 0; offset /= 2) {
      const float v = __shfl_xor_sync(kFullWarp, others, offset);
      if (v > others) others = v;
    }
    float m = load(at<T>(k.in, n, 0, y, x));
    if (others > m) m = others;
    float sum = 0.0f;
    for (uint32_t first = 0; first < k.channels; first += 32) {
      const uint32_t c = first + lane;
      const float e =
          c < k.channels ? expf(load(at<T>(k.in, n, c, y, x)) - m) : 0.0f;
      const uint32_t here = min(32u, k.channels - first);
      for (uint32_t j = 0; j < here; j++) sum += __shfl_sync(kFullWarp, e, j);
    }
    for (uint32_t c = lane; c < k.channels; c += 32)
      store(const_cast<T *>(at<T>(k.out, n, c, y, x)),
            p3dc_convnet_relu(k.relu,
                              expf(load(at<T>(k.in, n, c, y, x)) - m) / sum));
  }
}

// A tensor whose every kLanes channels of a pixel are one aligned 16-byte
// piece: F16 NHWC (channel stride 1), the other strides and the start
// multiples of kLanes elements.
bool lanes_fit(const P3dcConvTensor &t) {
  return (uintptr_t)t.data % (kLanes * 2) == 0 && t.channel == 1 &&
         t.column % kLanes == 0 && t.row % kLanes == 0 && t.batch % kLanes == 0;
}

}  // namespace

extern "C" uint32_t p3dc_convnet_epilogue_lanes(const P3dcConvEpilogue *e) {
  bool fits = e->half && e->nhwc && e->out_channels % kLanes == 0 &&
              e->src_channels % kLanes == 0 && e->src_group % kLanes == 0 &&
              (uintptr_t)e->src % (kLanes * 2) == 0 && lanes_fit(e->dst) &&
              (e->residual.data == nullptr || lanes_fit(e->residual));
  return fits ? kLanes : 1;
}

extern "C" uint32_t p3dc_convnet_kernel_lanes(const P3dcConvKernel *k) {
  bool fits = k->kind != P3DC_LAYER_SOFTMAX && k->half && k->channels_fastest &&
              k->channels % kLanes == 0 && lanes_fit(k->in) &&
              lanes_fit(k->out) &&
              (k->kind != P3DC_LAYER_ADD || lanes_fit(k->in2));
  return fits ? kLanes : 1;
}

extern "C" P3dcResult p3dc_convnet_convert_input(
    const void *in, int in_half, void *out, int out_half, int nhwc,
    uint32_t batch, uint32_t channels, uint32_t stored_channels,
    uint32_t height, uint32_t width, P3dcCudaStream stream) {
  if (in == nullptr || out == nullptr || (nhwc && !out_half) ||
      (nhwc && stored_channels < channels) || batch < 1)
    return P3DC_ERROR_INVALID_ARGUMENT;
  uint32_t plane = height * width;
  if (nhwc) {
    if (in_half)
      return launch_nchw_to_nhwc(static_cast<const __half *>(in),
                                 static_cast<__half *>(out), batch, channels,
                                 stored_channels, plane, stream);
    return launch_nchw_to_nhwc(static_cast<const float *>(in),
                               static_cast<__half *>(out), batch, channels,
                               stored_channels, plane, stream);
  }
  size_t count = (size_t)batch * channels * plane;
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
  if (e == nullptr || e->src == nullptr || e->dst.data == nullptr ||
      e->bias == nullptr || e->shuffle_y < 1 || e->shuffle_x < 1 ||
      e->src_group < e->out_channels || e->batch < 1)
    return P3DC_ERROR_INVALID_ARGUMENT;
  uint32_t lanes = p3dc_convnet_epilogue_lanes(e);
  size_t count = (size_t)e->batch * (e->out_channels / lanes) * e->out_height *
                 e->out_width;
  const unsigned threads = 256;
  unsigned blocks = blocks_for(count, threads);
  if (lanes == kLanes)
    epilogue_kernel<__half, kLanes><<<blocks, threads, 0, stream>>>(*e);
  else if (e->half)
    epilogue_kernel<__half, 1><<<blocks, threads, 0, stream>>>(*e);
  else
    epilogue_kernel<float, 1><<<blocks, threads, 0, stream>>>(*e);
  return cudaGetLastError();
}

// elementwise_kernel of T and V lanes, its 3 x 3 max pool when @pool3.
template <typename T, uint32_t V>
static cudaError_t launch_elementwise(const P3dcConvKernel &k, bool pool3,
                                      unsigned blocks, unsigned threads,
                                      P3dcCudaStream stream) {
  if (pool3)
    elementwise_kernel<T, V, 3><<<blocks, threads, 0, stream>>>(k);
  else
    elementwise_kernel<T, V><<<blocks, threads, 0, stream>>>(k);
  return cudaGetLastError();
}

extern "C" P3dcResult p3dc_convnet_kernel(const P3dcConvKernel *k,
                                          P3dcCudaStream stream) {
  if (k == nullptr || k->in.data == nullptr || k->out.data == nullptr ||
      k->batch < 1 || k->channels < 1 ||
      (k->kind == P3DC_LAYER_ADD && k->in2.data == nullptr) ||
      (k->kind != P3DC_LAYER_ADD && k->kind != P3DC_LAYER_MAX_POOL &&
       k->kind != P3DC_LAYER_UPSAMPLE_NEAREST &&
       k->kind != P3DC_LAYER_UPSAMPLE_BILINEAR &&
       k->kind != P3DC_LAYER_SOFTMAX && k->kind != P3DC_LAYER_SLICE))
    return P3DC_ERROR_INVALID_ARGUMENT;
  const unsigned threads = 256;
  if (k->kind == P3DC_LAYER_SOFTMAX) {
    // a warp a position
    unsigned blocks = blocks_for(
        (size_t)k->batch * k->out_height * k->out_width * 32, threads);
    if (k->half)
      softmax_kernel<__half><<<blocks, threads, 0, stream>>>(*k);
    else
      softmax_kernel<float><<<blocks, threads, 0, stream>>>(*k);
    return cudaGetLastError();
  }
  uint32_t lanes = p3dc_convnet_kernel_lanes(k);
  unsigned blocks = blocks_for(
      (size_t)k->batch * (k->channels / lanes) * k->out_height * k->out_width,
      threads);
  const bool pool3 = k->kind == P3DC_LAYER_MAX_POOL &&
                     k->geometry.kernel[0] == 3 && k->geometry.kernel[1] == 3;
  if (lanes == kLanes)
    return launch_elementwise<__half, kLanes>(*k, pool3, blocks, threads,
                                              stream);
  if (k->half)
    return launch_elementwise<__half, 1>(*k, pool3, blocks, threads, stream);
  return launch_elementwise<float, 1>(*k, pool3, blocks, threads, stream);
}
