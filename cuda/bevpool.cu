// bevpool pooling on the device; the reference is bevpool_cpu.c.
//
// A persistent grid (as many blocks as fit on the device at once, one
// channel slice per blockIdx.y) walks the geometry's units: runs of
// consecutive keys of one 16 x 16 block of the plane, within the schedule's
// chunk and point budgets (bevpool-private.h).  A block owns every output
// element of its unit's cells (no atomics, no memset) and, per unit:
//   1. reads the unit's chunk bounds, the geometry's plan (the order of the
//      chunks: by window, longer first; bevpool.h: a chunk never spans two
//      windows) and, for every point, its depth weight and the
//      shared-memory offset of its feature row (the depth tensor is read
//      once per point, not once per point and channel group);
//   2. per batch (the chunks of one window), copies the window's used
//      feature rows into shared memory (each row read from L2 once per unit
//      and window rather than once per point), then
//      sums every chunk of the batch: one lane group per chunk, a lane per
//      group of G channels, fmaf in point order from 0, as the reference;
//   3. adds each cell's chunk sums in chunk order and writes the cell's
//      channels, lanes along the cells so that a warp writes whole rows of
//      the plane.
// A cell over the unit budget is a unit of its own and goes through 1 to 3
// in passes of chunks, carrying its running sum in shared memory.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstring>
#include <mutex>

#include "bevpool-private.h"

namespace {

constexpr uint32_t kTileCells = P3DC_BEVPOOL_TILE_CELLS;
constexpr uint32_t kWindow = P3DC_BEVPOOL_WINDOW;
// Bytes of one feature row per block: 80 F16 or 40 F32 channels.  A window
// of rows is then 40 KB of shared memory, which with the chunk sums (41.5
// KB) and the points (16 KB) lets two 512-thread blocks share an SM.
constexpr uint32_t kSliceBytes = 160;
constexpr uint32_t kNone = 0xffffffffu;

struct PoolArgs {
  const void *features;
  const void *depth;
  void *out;
  const uint32_t *entries;
  const uint32_t *chunk_start;
  const uint32_t *chunk_begin;
  const uint4 *plan;
  const uint4 *units;
  const uint32_t *unit_count;
  P3dcBevFrustumGrid grid;
  P3dcBevBlocking blocking;
  P3dcBevPoolSchedule schedule;
  uint32_t channels;
  uint32_t slice_width;
  uint32_t plane;  // cells per z slice
  int half_out;
};

// Where each array lives in the dynamic shared memory of a block; the host
// sizes the launch with the same plan.  Every part starts 16-byte aligned.
struct SmemPlan {
  uint32_t chunk_start;  // kTileCells + 1 words: unit-relative first chunk
  uint32_t out_base;     // kTileCells words: output offset, kNone = padding
  uint32_t chunk_begin;  // chunks + 1 words: pass-relative first point
  uint32_t sorted;       // chunks words: chunk at each sorted position
  uint32_t batch_start;  // chunks words: first sorted position of a batch
  uint32_t batch_low;    // chunks words: lowest column key of a batch
  uint32_t batch_high;   // chunks words: highest column key of a batch
  uint32_t carry;        // slice_width floats: a passed cell's running sum
  uint32_t points;       // unit_points uint2: (weight bits, row offset)
  uint32_t rows;         // kWindow x row_stride bytes
  uint32_t partial;      // chunks x part_stride floats
  uint32_t total;
  uint32_t row_stride;   // bytes, a multiple of 16
  uint32_t part_stride;  // floats, odd: conflict-free reads along cells
};

__host__ __device__ inline uint32_t align16(uint32_t bytes) {
  return (bytes + 15u) & ~15u;
}

__host__ __device__ inline SmemPlan plan_smem(uint32_t chunks, uint32_t points,
                                              uint32_t slice_width,
                                              uint32_t value_size) {
  SmemPlan p;
  uint32_t at = 0;
  const uint32_t word = 4;
  p.chunk_start = at;
  at += align16((kTileCells + 1) * word);
  p.out_base = at;
  at += align16(kTileCells * word);
  p.chunk_begin = at;
  at += align16((chunks + 1) * word);
  p.sorted = at;
  at += align16(chunks * word);
  p.batch_start = at;
  at += align16(chunks * word);
  p.batch_low = at;
  at += align16(chunks * word);
  p.batch_high = at;
  at += align16(chunks * word);
  p.carry = at;
  at += align16(slice_width * word);
  p.points = at;
  at += align16(points * 8);
  p.row_stride = align16(slice_width * value_size);
  p.rows = at;
  at += kWindow * p.row_stride;
  p.part_stride = slice_width | 1u;
  p.partial = at;
  at += align16(chunks * p.part_stride * word);
  p.total = at;
  return p;
}

__device__ __forceinline__ float to_float(float value) { return value; }
__device__ __forceinline__ float to_float(__half value) {
  return __half2float(value);
}

// G channels of type In as raw bytes: the unit of the row copies and of
// the shared-memory loads of the sums.
template <int Bytes>
struct Piece;
template <>
struct Piece<32> {
  uint4 a, b;
};
template <>
struct Piece<16> {
  uint4 a;
};
template <>
struct Piece<8> {
  uint2 a;
};
template <>
struct Piece<4> {
  uint32_t a;
};
template <>
struct Piece<2> {
  unsigned short a;
};

template <typename In, int G>
using PieceOf = Piece<(int)sizeof(In) * G>;

// Pieces loaded before the first is used: 4, or 2 of 32 bytes, to stay
// within 64 registers.
template <typename In, int G>
constexpr int kInFlight = sizeof(In) * G > 16 ? 2 : 4;

// The values packed in one 32-bit word.
__device__ __forceinline__ void unpack_word(uint32_t word, float *f, float) {
  f[0] = __uint_as_float(word);
}
__device__ __forceinline__ void unpack_word(uint32_t word, float *f, __half) {
  f[0] = __half2float(__ushort_as_half((unsigned short)(word & 0xffffu)));
  f[1] = __half2float(__ushort_as_half((unsigned short)(word >> 16)));
}

template <typename In>
__device__ __forceinline__ void unpack(const Piece<32> &p, float *f) {
  constexpr int n = 4 / (int)sizeof(In);
  unpack_word(p.a.x, f + 0 * n, In());
  unpack_word(p.a.y, f + 1 * n, In());
  unpack_word(p.a.z, f + 2 * n, In());
  unpack_word(p.a.w, f + 3 * n, In());
  unpack_word(p.b.x, f + 4 * n, In());
  unpack_word(p.b.y, f + 5 * n, In());
  unpack_word(p.b.z, f + 6 * n, In());
  unpack_word(p.b.w, f + 7 * n, In());
}
template <typename In>
__device__ __forceinline__ void unpack(const Piece<16> &p, float *f) {
  constexpr int n = 4 / (int)sizeof(In);
  unpack_word(p.a.x, f + 0 * n, In());
  unpack_word(p.a.y, f + 1 * n, In());
  unpack_word(p.a.z, f + 2 * n, In());
  unpack_word(p.a.w, f + 3 * n, In());
}
template <typename In>
__device__ __forceinline__ void unpack(const Piece<8> &p, float *f) {
  constexpr int n = 4 / (int)sizeof(In);
  unpack_word(p.a.x, f, In());
  unpack_word(p.a.y, f + n, In());
}
template <typename In>
__device__ __forceinline__ void unpack(const Piece<4> &p, float *f) {
  unpack_word(p.a, f, In());
}
template <typename In>
__device__ __forceinline__ void unpack(const Piece<2> &p, float *f) {
  f[0] = __half2float(__ushort_as_half(p.a));
}

// Copies a piece from global to shared memory without holding it in
// registers (cp.async, sm_80+): the copies of a batch's rows are all in
// flight at once, and copy_wait() then the block barrier make them
// visible.  Pieces of 2 bytes (F16, one channel per group) are copied
// plainly.  Turing (sm_75) has no cp.async: it copies through registers
// with loads of the piece's width, which the same barrier orders.  Host
// builds (no __CUDA_ARCH__) copy plainly too.
template <int Bytes>
__device__ __forceinline__ void copy_async(void *shared, const void *global) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  if constexpr (Bytes == 32) {
    const uint4 *from = static_cast<const uint4 *>(global);
    uint4 *into = static_cast<uint4 *>(shared);
    into[0] = __ldg(from);
    into[1] = __ldg(from + 1);
  } else if constexpr (Bytes == 16) {
    *static_cast<uint4 *>(shared) = __ldg(static_cast<const uint4 *>(global));
  } else if constexpr (Bytes == 8) {
    *static_cast<uint2 *>(shared) = __ldg(static_cast<const uint2 *>(global));
  } else if constexpr (Bytes == 4) {
    *static_cast<unsigned int *>(shared) =
        __ldg(static_cast<const unsigned int *>(global));
  } else {
    static_assert(Bytes == 2, "pieces are 2, 4, 8, 16 or 32 bytes");
    *static_cast<unsigned short *>(shared) =
        __ldg(static_cast<const unsigned short *>(global));
  }
#elif defined(__CUDA_ARCH__)
  const uint32_t to = (uint32_t)__cvta_generic_to_shared(shared);
  if constexpr (Bytes == 32) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to),
                 "l"(global)
                 : "memory");
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to + 16),
                 "l"(static_cast<const char *>(global) + 16)
                 : "memory");
  } else if constexpr (Bytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to),
                 "l"(global)
                 : "memory");
  } else if constexpr (Bytes == 8 || Bytes == 4) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(to),
                 "l"(global), "n"(Bytes)
                 : "memory");
  } else {
    static_assert(Bytes == 2, "pieces are 2, 4, 8, 16 or 32 bytes");
    *static_cast<unsigned short *>(shared) =
        __ldg(static_cast<const unsigned short *>(global));
  }
#else
  memcpy(shared, global, Bytes);
#endif
}

// Waits for this thread's copy_async()s.
__device__ __forceinline__ void copy_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// The sum of one chunk for G channels: starts at 0, fmaf per point in
// order, as the reference.  @rows points at this lane's channels of slot 0;
// each point carries its weight and its row's byte offset.  Several
// points' loads are issued before their products.
template <typename In, int G>
__device__ __forceinline__ void chunk_sum(const unsigned char *rows,
                                          const uint2 *points, uint32_t begin,
                                          uint32_t end, float *sum) {
  using P = PieceOf<In, G>;
  constexpr int kBatch = kInFlight<In, G>;
#pragma unroll
  for (int q = 0; q < G; q++) sum[q] = 0.0f;
  uint32_t i = begin;
  for (; i + kBatch <= end; i += kBatch) {
    uint2 point[kBatch];
    P piece[kBatch];
#pragma unroll
    for (int r = 0; r < kBatch; r++) point[r] = points[i + r];
#pragma unroll
    for (int r = 0; r < kBatch; r++)
      piece[r] = *reinterpret_cast<const P *>(rows + point[r].y);
#pragma unroll
    for (int r = 0; r < kBatch; r++) {
      float f[G];
      unpack<In>(piece[r], f);
      const float weight = __uint_as_float(point[r].x);
#pragma unroll
      for (int q = 0; q < G; q++) sum[q] = __fmaf_rn(f[q], weight, sum[q]);
    }
  }
  for (; i < end; i++) {
    const uint2 point = points[i];
    float f[G];
    unpack<In>(*reinterpret_cast<const P *>(rows + point.y), f);
    const float weight = __uint_as_float(point.x);
#pragma unroll
    for (int q = 0; q < G; q++) sum[q] = __fmaf_rn(f[q], weight, sum[q]);
  }
}

template <typename In, int G>
__global__ void __launch_bounds__(1024) pool_kernel(const PoolArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  using P = PieceOf<In, G>;
  const SmemPlan plan =
      plan_smem(a.schedule.unit_chunks, a.schedule.unit_points, a.slice_width,
                sizeof(In));
  uint32_t *s_chunk_start =
      reinterpret_cast<uint32_t *>(smem + plan.chunk_start);
  uint32_t *s_out_base = reinterpret_cast<uint32_t *>(smem + plan.out_base);
  uint32_t *s_chunk_begin =
      reinterpret_cast<uint32_t *>(smem + plan.chunk_begin);
  uint32_t *s_sorted = reinterpret_cast<uint32_t *>(smem + plan.sorted);
  uint32_t *s_batch_start =
      reinterpret_cast<uint32_t *>(smem + plan.batch_start);
  uint32_t *s_batch_low = reinterpret_cast<uint32_t *>(smem + plan.batch_low);
  uint32_t *s_batch_high = reinterpret_cast<uint32_t *>(smem + plan.batch_high);
  float *s_carry = reinterpret_cast<float *>(smem + plan.carry);
  uint2 *s_points = reinterpret_cast<uint2 *>(smem + plan.points);
  unsigned char *s_rows = smem + plan.rows;
  float *s_partial = reinterpret_cast<float *>(smem + plan.partial);

  const P3dcBevFrustumGrid &grid = a.grid;
  const uint32_t col_mask = (1u << grid.col_bits) - 1u;
  const uint32_t c0 = blockIdx.y * a.slice_width;
  const uint32_t width =
      a.channels - c0 < a.slice_width ? a.channels - c0 : a.slice_width;
  const uint32_t groups = width / G;  // 1..32, the host sees to it
  const uint32_t tid = threadIdx.x, threads = blockDim.x;
  const uint32_t warp = tid / 32, lane = tid % 32, warps = threads / 32;
  // Lane groups: `groups` consecutive lanes of one warp sum one chunk, lane
  // g of the group channels c0 + g * G .. + G - 1; lanes past the last
  // whole group of a warp only help with the cell sums.
  const uint32_t per_warp = 32 / groups;
  const uint32_t lane_groups = warps * per_warp;
  const bool in_group = lane < per_warp * groups;
  const uint32_t group = warp * per_warp + (in_group ? lane / groups : 0);
  const uint32_t g = lane % groups;
  const uint32_t piece_bytes = G * (uint32_t)sizeof(In);
  const In *features = static_cast<const In *>(a.features) + c0 + g * G;
  const In *depth = static_cast<const In *>(a.depth);
  const unsigned char *my_rows = s_rows + g * piece_bytes;

  // The next unit's bounds are read while the current one is pooled.
  const uint32_t units = *a.unit_count;
  uint4 next_here = make_uint4(0, 0, 0, 0), next_next = next_here;
  if (blockIdx.x < units) {
    next_here = a.units[blockIdx.x];
    next_next = a.units[blockIdx.x + 1];
  }
  for (uint32_t unit = blockIdx.x; unit < units; unit += gridDim.x) {
    const uint4 here = next_here, next = next_next;
    if (unit + gridDim.x < units) {
      next_here = a.units[unit + gridDim.x];
      next_next = a.units[unit + gridDim.x + 1];
    }
    const uint32_t key0 = here.x, cells = next.x - here.x;
    const uint32_t chunk0 = here.y, chunks = next.y - here.y;
    const uint32_t point0 = here.z, points = next.z - here.z;
    const uint32_t pass_chunks =
        p3dc_bevpool_pass_chunks(&a.schedule, chunks, points);
    // The geometry makes a cell over the budget a unit of its own; the
    // carry below holds one cell.
    if (pass_chunks < chunks && cells != 1) __trap();

    // Cell metadata, read after the first barrier of the first pass.
    for (uint32_t j = tid; j <= cells; j += threads) {
      s_chunk_start[j] = a.chunk_start[key0 + j] - chunk0;
      if (j < cells) {
        const uint32_t cell = p3dc_bevpool_block_cell(&a.blocking, key0 + j);
        const uint32_t z = cell / a.plane;
        s_out_base[j] = cell == kNone
                            ? kNone
                            : z * a.channels * a.plane + (cell - z * a.plane);
      }
    }

    uint32_t pass0 = 0;
    do {
      const uint32_t pass1 =
          chunks - pass0 < pass_chunks ? chunks : pass0 + pass_chunks;
      const uint32_t n = pass1 - pass0;  // <= unit_chunks < threads
      const uint32_t first =
          pass_chunks == chunks ? point0 : a.chunk_begin[chunk0 + pass0];
      const uint32_t count = pass_chunks == chunks
                                 ? points
                                 : a.chunk_begin[chunk0 + pass1] - first;

      // 1. The pass's chunks, plan and points: every load below depends
      // only on the unit's bounds, but the depth weights, which need the
      // points' entries.
      bool batch_here = false;
      if (tid <= n) {
        s_chunk_begin[tid] = a.chunk_begin[chunk0 + pass0 + tid] - first;
        if (tid < n) {
          const uint4 step = a.plan[chunk0 + pass0 + tid];
          s_sorted[tid] = step.x;
          batch_here = step.y != kNone;
          if (batch_here) {
            s_batch_start[tid] = step.y;
            s_batch_low[tid] = step.z;
            s_batch_high[tid] = step.w;
          }
        }
      }
      for (uint32_t base = 0; base < count; base += 4 * threads) {
        uint32_t entry[4];
#pragma unroll
        for (int r = 0; r < 4; r++) {
          const uint32_t i = base + r * threads + tid;
          entry[r] = i < count ? a.entries[first + i] : 0u;
        }
        float weight[4];
#pragma unroll
        for (int r = 0; r < 4; r++) {
          const uint32_t i = base + r * threads + tid;
          weight[r] =
              i < count
                  ? to_float(__ldg(depth + p3dc_bevpool_entry_frustum_index(
                                               &grid, entry[r])))
                  : 0.0f;
        }
#pragma unroll
        for (int r = 0; r < 4; r++) {
          const uint32_t i = base + r * threads + tid;
          if (i < count)
            s_points[i] = make_uint2(
                __float_as_uint(weight[r]),
                (entry[r] & col_mask & (kWindow - 1)) * plan.row_stride);
        }
      }
      // Chunks, plan, points and cell metadata are visible; every thread
      // learns the batch count (the plan's batches are its first ones).
      const uint32_t batches = __syncthreads_count(batch_here);

      // 2. Per batch: the window's rows, then its chunks.
      for (uint32_t b = 0; b < batches; b++) {
        const uint32_t low = s_batch_low[b], high = s_batch_high[b];
        const uint32_t begin = s_batch_start[b];
        const uint32_t end = b + 1 < batches ? s_batch_start[b + 1] : n;
        if (in_group) {
          // Column keys low..high of one window, at slot key % kWindow.
          // Keys past the feature map's edge (the padding of the key) are
          // skipped: no point refers to them.
          for (uint32_t key = low + group; key <= high; key += lane_groups) {
            const uint32_t v = key & ((1u << grid.v_bits) - 1u);
            const uint32_t u =
                (key >> grid.v_bits) & ((1u << grid.u_bits) - 1u);
            const uint32_t camera = key >> (grid.u_bits + grid.v_bits);
            if (u < grid.feat_width && v < grid.feat_height) {
              const uint32_t row =
                  (camera * grid.feat_height + v) * grid.feat_width + u;
              copy_async<(int)sizeof(P)>(
                  s_rows + (key & (kWindow - 1)) * plan.row_stride +
                      g * piece_bytes,
                  features + (size_t)row * a.channels);
            }
          }
        }
        copy_wait();
        __syncthreads();  // the rows are visible
        if (in_group) {
          for (uint32_t q = begin + group; q < end; q += lane_groups) {
            const uint32_t s = s_sorted[q];
            float sum[G];
            chunk_sum<In, G>(my_rows, s_points, s_chunk_begin[s],
                             s_chunk_begin[s + 1], sum);
            float *to = s_partial + s * plan.part_stride + g * G;
#pragma unroll
            for (int r = 0; r < G; r++) to[r] = sum[r];
          }
        }
        __syncthreads();  // sums written; the rows may be replaced
      }

      // 3. Each cell adds its chunks of this pass, in order, to 0 (or to
      // the sum carried from its previous pass).
      const bool last = pass1 == chunks;
      for (uint32_t j = lane; j < cells; j += 32) {
        const uint32_t from = max(s_chunk_start[j], pass0);
        const uint32_t to = min(s_chunk_start[j + 1], pass1);
        const uint32_t out_base = s_out_base[j];
        for (uint32_t c = warp; c < width; c += warps) {
          float value = pass0 > 0 ? s_carry[c] : 0.0f;
          for (uint32_t x = from; x < to; x++)
            value =
                __fadd_rn(value, s_partial[(x - pass0) * plan.part_stride + c]);
          if (!last) {
            s_carry[c] = value;  // one cell: j == 0
          } else if (out_base != kNone) {
            const uint32_t o = out_base + (c0 + c) * a.plane;
            if (a.half_out)
              static_cast<__half *>(a.out)[o] = __float2half_rn(value);
            else
              static_cast<float *>(a.out)[o] = value;
          }
        }
      }
      __syncthreads();  // shared memory is free for the next pass or unit
      pass0 = pass1;
    } while (pass0 < chunks);
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

// What a launch needs from the driver: the blocks of one kernel that fit
// on an SM with a given shared memory, times the SMs.  Asked once per
// kernel, device and size, not per frame: the calls cost microseconds of
// host time, during which a timed stream would sit idle.
struct LaunchCache {
  std::mutex mutex;
  int device = -1;
  size_t smem = 0;
  uint32_t threads = 0;
  unsigned blocks = 0;
};

template <typename In, int G>
cudaError_t launch_kernel(const PoolArgs &args, uint32_t slices,
                          uint32_t threads, size_t smem, cudaStream_t stream) {
  auto kernel = pool_kernel<In, G>;
  static LaunchCache cache;
  int device = 0;
  unsigned blocks = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (cache.device != device || cache.smem != smem ||
        cache.threads != threads) {
      err = cudaFuncSetAttribute(
          kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
      if (err == cudaSuccess)
        err = cudaFuncSetAttribute(
            kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
            cudaSharedmemCarveoutMaxShared);
      int sms = 0, per_sm = 0;
      if (err == cudaSuccess)
        err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount,
                                     device);
      if (err == cudaSuccess)
        err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel,
                                                            (int)threads, smem);
      if (err == cudaSuccess && per_sm < 1) err = cudaErrorInvalidConfiguration;
      if (err != cudaSuccess) return err;
      cache.device = device;
      cache.smem = smem;
      cache.threads = threads;
      cache.blocks = (unsigned)(per_sm * sms);
    }
    blocks = cache.blocks;
  }
  // A persistent grid: every block resident, each walking units
  // blockIdx.x, + gridDim.x, ...  (how many units there are is known only
  // on the device).
  const dim3 grid(blocks, slices);
  kernel<<<grid, threads, smem, stream>>>(args);
  return cudaGetLastError();
}

template <typename In>
cudaError_t launch(const PoolArgs &args, int group, uint32_t slices,
                   uint32_t threads, size_t smem, cudaStream_t stream) {
  switch (group) {
    case 8:
      return launch_kernel<In, 8>(args, slices, threads, smem, stream);
    case 4:
      return launch_kernel<In, 4>(args, slices, threads, smem, stream);
    case 2:
      return launch_kernel<In, 2>(args, slices, threads, smem, stream);
    default:
      return launch_kernel<In, 1>(args, slices, threads, smem, stream);
  }
}

P3dcResult pool(const P3dcBevGeometryCuda *geometry, const void *features,
                const void *depth, int half_in, void *out, int half_out,
                P3dcCudaStream stream) {
  if (geometry == nullptr || !geometry->computed || features == nullptr ||
      depth == nullptr || out == nullptr)
    return P3DC_ERROR_INVALID_ARGUMENT;
  const size_t value_size = half_in ? 2 : 4;
  const uintptr_t natural = value_size - 1;
  if ((reinterpret_cast<uintptr_t>(features) & natural) != 0 ||
      (reinterpret_cast<uintptr_t>(depth) & natural) != 0 ||
      (reinterpret_cast<uintptr_t>(out) & (half_out ? 1 : 3)) != 0)
    return P3DC_ERROR_INVALID_ARGUMENT;

  const P3dcBevPoolParams *params = &geometry->params;
  const P3dcBevPoolSchedule *schedule = &geometry->schedule;
  const uint32_t channels = params->channels;
  const int group = channel_group(features, channels, value_size);
  // Equal slices of at most kSliceBytes per row and at most 32 groups (a
  // lane group fits in a warp), each a multiple of the group.  The maximum
  // is a multiple of the group, so rounding up stays within it.
  uint32_t max_width = kSliceBytes / (uint32_t)value_size;
  if (max_width > 32u * group) max_width = 32u * group;
  const uint32_t slices_wanted = (channels + max_width - 1) / max_width;
  uint32_t width = (channels + slices_wanted - 1) / slices_wanted;
  width = (width + group - 1) / group * group;
  const uint32_t slices = (channels + width - 1) / width;
  if (slices > 65535) return P3DC_ERROR_TOO_LARGE;

  PoolArgs args;
  args.features = features;
  args.depth = depth;
  args.out = out;
  args.entries = geometry->entries;
  args.chunk_start = geometry->chunk_start;
  args.chunk_begin = geometry->chunk_begin;
  args.plan = reinterpret_cast<const uint4 *>(geometry->plan);
  args.units = reinterpret_cast<const uint4 *>(geometry->units);
  args.unit_count = geometry->unit_count;
  args.grid = geometry->grid;
  args.blocking = geometry->blocking;
  args.schedule = *schedule;
  args.channels = channels;
  args.slice_width = width;
  args.plane = params->nx * params->ny;
  args.half_out = half_out ? 1 : 0;

  const SmemPlan plan = plan_smem(schedule->unit_chunks, schedule->unit_points,
                                  width, (uint32_t)value_size);
  const cudaError_t err =
      half_in ? launch<__half>(args, group, slices, schedule->threads,
                               plan.total, stream)
              : launch<float>(args, group, slices, schedule->threads,
                              plan.total, stream);
  return err != cudaSuccess ? err : P3DC_OK;
}

}  // namespace

extern "C" P3dcResult p3dc_bevpool_cuda(const P3dcBevGeometryCuda *geometry,
                                        const void *features, const void *depth,
                                        int half_in, void *out, int half_out,
                                        P3dcCudaStream stream) {
  return pool(geometry, features, depth, half_in, out, half_out, stream);
}
