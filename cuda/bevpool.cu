// bevpool pooling on the device; the reference is bevpool_cpu.c.
//
// Three kernels, reading the geometry of bevpool_geometry_stages.cuh:
//   0. transpose_kernel: the depth tensor, column by column, into the
//      geometry's workspace as floats, so that a column is one block of
//      memory (in the tensor a column's values are 32-byte sectors apart).
//   1. run_kernel: a block per feature column (camera, u) copies the
//      column's depth values (feat_height x depth_bins), its feature rows
//      (feat_height x channels, converted to float) and the slots of its
//      runs into shared memory, with a byte per point marking where runs
//      start and end.  A thread takes 4 depth bins and 4 channels and walks
//      the column's rows once, carrying the 4 bins' run sums in registers
//      (fmaf from 0 over a run's rows, as the reference): each feature load
//      serves 4 bins.  A run's sum goes to the geometry's run-sum buffer at
//      its slot, so a cell's runs lie side by side.
//   2. cell_kernel: a block per 32 consecutive cells stages their run sums
//      in shared memory (asynchronous copies, whole rows); lane l adds cell
//      l's sums in slot order from 0 for the groups of 4 channels of its
//      warp and writes them (lanes along the cells, so a warp writes a row
//      piece of each channel plane).  Every output element is written: no
//      memset, no atomics.
// A run whose slot is past the buffer's capacity (a geometry of more runs
// than it was sized for) is summed again where cell_kernel stages it, from
// the tensors in memory, with the same arithmetic.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>

#include "bevpool-private.h"
#include "kernel_graph.cuh"
#include "launch.cuh"
#include "sm_threads.cuh"
#include "smem_limit.cuh"

namespace {

// run_kernel: a task is 4 depth bins x 4 channels; 320 threads take the
// 600 tasks of a nuScenes column (30 x 20) in two rounds.  The register
// budget is cut for four blocks an SM (1280 threads), three on Turing
// (sm_75), whose SM holds 1024 (sm_threads.cuh).  (A large column's shared
// memory may allow fewer.)
constexpr unsigned kRunThreads = 320;
constexpr int kRunBlocks = p3dc_blocks_an_sm(4, kRunThreads);
// A column's runs whose slots run_kernel copies into shared memory (a
// nuScenes column has about 260 runs); the slots of later runs are read
// from memory where they are used.
constexpr uint32_t kStagedSlots = 4096;
constexpr unsigned kCellThreads = 256;
constexpr uint32_t kTileSide = 32;  // transpose_kernel's tiles
constexpr uint32_t kCellsPerBlock = 32;
// Shared memory for one slice of a column's feature rows; a column of up to
// P3DC_BEVPOOL_CUDA_COLUMN_SIDE rows still takes 4 channels at a time.
constexpr uint32_t kSliceBytes = 32 * 1024;
static_assert(kSliceBytes >= 16 * P3DC_BEVPOOL_CUDA_COLUMN_SIDE,
              "a slice holds 4 channels of the tallest column");
// cell_kernel: groups of 4 channels per batch (3 per thread: 8 warps; 96
// channels in one batch), and the shared memory that stages a batch's run
// sums.
constexpr uint32_t kBatchGroups = 24;
constexpr int kAccumulators = kBatchGroups / (kCellThreads / 32);
static_assert(kBatchGroups <= 32, "a lane stages each group of a slot");
constexpr uint32_t kStageFloat4 = 1344;  // 64 slots of 20 groups, padded

// A point's mark in run_kernel: the first or the last point of its run.
constexpr uint32_t kStart = 1, kEnd = 2;
// a start, or an end, among 4 depth bins
constexpr uint32_t kStarts = 0x01010101u, kEnds = 0x02020202u;

struct PoolArgs {
  const void *features;
  const void *depth;
  void *out;
  const uint32_t *column_runs;
  const uint2 *run_span;
  const uint32_t *run_slot;
  const uint32_t *cell_start;
  const uint32_t *slot_run;
  float *column_depth;  // the depth values, column by column (kernel 0)
  float *sums;
  uint32_t sum_capacity;
  uint32_t cameras, fw, fh, bins;
  uint32_t bins_padded;  // bins rounded up to 4
  uint32_t column_points;
  uint32_t channels, padded;  // padded: channels rounded up to 4
  uint32_t slice;             // channels per slice of run_kernel, 4 | slice
  uint32_t cells, plane;
};

}  // namespace

// The pooling's three kernels as one CUDA graph for each pair of formats
// (F32 or F16 in, F32 or F16 out; kernel_graph.cuh), built with the
// geometry: a frame then costs the host one graph launch, and a parameter
// update of the nodes whose launches are not the last frame's, instead of
// three launches (docs/performance.md, "The floor of a call").
struct P3dcBevPoolGraphs {
  P3dcKernelGraph pair[4];  // [half_in * 2 + half_out]
};

namespace {

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ void store(float *out, size_t i, float x) {
  out[i] = x;
}
__device__ __forceinline__ void store(__half *out, size_t i, float x) {
  out[i] = __float2half_rn(x);
}

__device__ __forceinline__ void fma4(float4 &acc, float4 f, float w) {
  acc.x = fmaf(f.x, w, acc.x);
  acc.y = fmaf(f.y, w, acc.y);
  acc.z = fmaf(f.z, w, acc.z);
  acc.w = fmaf(f.w, w, acc.w);
}

// 16 bytes from global @src to shared @dst, asynchronously where the device
// can (cp.async), so that a thread's copies are all in flight at once.
__device__ __forceinline__ void copy_16(float4 *dst, const float4 *src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t to = (uint32_t)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to),
               "l"(src));
#else
  *dst = __ldg(src);
#endif
}

// Waits for the thread's copies.
__device__ __forceinline__ void copies_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// One depth bin of a task at a row where a run of one of its 4 bins ends,
// after the row is added: the bin's run, if it is the one ending, writes
// its sum and the bin's next run comes up.
__device__ __forceinline__ void end_step(const PoolArgs &a, uint32_t mark,
                                         const uint32_t *slots,
                                         const uint32_t *later_slots,
                                         float *sums, const float4 &acc,
                                         uint32_t &run) {
  if (mark & kEnd) {
    const uint32_t slot = run < kStagedSlots ? slots[run] : later_slots[run];
    if (slot < a.sum_capacity)
      *reinterpret_cast<float4 *>(sums + (size_t)slot * a.padded) = acc;
    run++;
  }
}

// Kernel 0.  The depth tensor [cameras][bins][fh][fw] goes into the
// geometry's column buffer as floats [cameras][fw][fh][bins_padded] (the
// padding bins zero), so that run_kernel copies a column's depth values as
// one contiguous block instead of one value per 32-byte sector.  For each
// (camera, v), a 32 x 32 tile of (d, u) goes through shared memory: read
// along u, written along d.
template <typename In>
__global__ void __launch_bounds__(kTileSide * 8)
    transpose_kernel(const PoolArgs a) {
  __shared__ float tile[kTileSide][kTileSide + 1];
  const uint32_t u_tiles = (a.fw + kTileSide - 1) / kTileSide;
  const uint32_t row = blockIdx.x / u_tiles;  // camera * fh + v
  const uint32_t camera = row / a.fh, v = row - camera * a.fh;
  const uint32_t u0 = (blockIdx.x - row * u_tiles) * kTileSide;
  const uint32_t d0 = blockIdx.y * kTileSide;
  const uint32_t tx = threadIdx.x % kTileSide, ty = threadIdx.x / kTileSide;
  const In *in = static_cast<const In *>(a.depth) +
                 ((size_t)camera * a.bins * a.fh + v) * a.fw;
#pragma unroll
  for (uint32_t k = ty; k < kTileSide; k += 8) {
    const uint32_t d = d0 + k, u = u0 + tx;
    tile[k][tx] = d < a.bins && u < a.fw
                      ? to_float(in[(size_t)d * a.fh * a.fw + u])
                      : 0.0f;
  }
  __syncthreads();
  float *out = a.column_depth + (size_t)camera * a.fw * a.fh * a.bins_padded +
               (size_t)v * a.bins_padded;
#pragma unroll
  for (uint32_t k = ty; k < kTileSide; k += 8) {
    const uint32_t u = u0 + k, d = d0 + tx;
    if (u < a.fw && d < a.bins_padded)
      out[(size_t)u * a.fh * a.bins_padded + d] = tile[tx][k];
  }
}

// Shared-memory layout of run_kernel, in floats: the depth values
// [fh][bins_padded], the marks [fh][bins_padded] bytes, each depth bin's
// first run [bins_padded], the slots of the column's first runs
// [staged_slots (points)], then (16-byte aligned) a slice of the feature
// rows [fh][slice].
__host__ __device__ inline uint32_t staged_slots(uint32_t points) {
  return points < kStagedSlots ? points : kStagedSlots;
}

__host__ __device__ inline uint32_t rows_offset(uint32_t fh, uint32_t dp,
                                                uint32_t points) {
  return fh * dp + (fh * dp / 4 + dp + staged_slots(points) + 3) / 4 * 4;
}

// Kernel 1.  A task (4 depth bins d0 .. d0 + 3, 4 channels) walks the
// column's rows once: a row's 4 channels are one load for its 4 bins'
// runs, whose sums it carries in registers; the 4 bins' marks are one word.
// Every row is 16 fmaf for every lane, so that the lanes of a warp, whose
// tasks have their run edges at different rows, do not take the additions
// on two paths (docs/performance.md, bevpool pooling).
template <typename In>
__global__ void __launch_bounds__(kRunThreads, kRunBlocks)
    run_kernel(const PoolArgs a) {
  extern __shared__ float4 run_smem[];
  const uint32_t column = blockIdx.x;
  const uint32_t runs = a.column_runs[column];
  if (runs == 0) return;
  const uint32_t camera = column / a.fw, u = column - camera * a.fw;
  const uint32_t fh = a.fh, dp = a.bins_padded, blocks = dp / 4;
  float *const depth = reinterpret_cast<float *>(run_smem);
  uint32_t *const marks = reinterpret_cast<uint32_t *>(depth + fh * dp);
  uint32_t *const first_run = marks + fh * blocks;
  uint32_t *const slots = first_run + dp;
  float *const rows = depth + rows_offset(fh, dp, a.column_points);

  // The column's depth values, already [fh][bins_padded] (kernel 0).
  const float4 *column_in = reinterpret_cast<const float4 *>(
      a.column_depth + (size_t)column * fh * dp);
  for (uint32_t i = threadIdx.x; i < fh * blocks; i += blockDim.x)
    copy_16(reinterpret_cast<float4 *>(depth) + i, column_in + i);
  for (uint32_t i = threadIdx.x; i < fh * blocks; i += blockDim.x) marks[i] = 0;
  __syncthreads();
  const uint64_t id_base = (uint64_t)column * a.column_points;
  uint8_t *const mark_bytes = reinterpret_cast<uint8_t *>(marks);
  for (uint32_t r = threadIdx.x; r < runs; r += blockDim.x) {
    const uint2 span = a.run_span[id_base + r];
    const uint32_t d = span.x / fh;
    const uint32_t v0 = span.y >> 16, count = span.y & 0xffffu;
    // Two byte stores: a run of one point is both.
    mark_bytes[v0 * dp + d] |= kStart;
    mark_bytes[(v0 + count - 1) * dp + d] |= kEnd;
    // A bin's runs are consecutive in the list.
    if (r == 0 || a.run_span[id_base + r - 1].x / fh != d) first_run[d] = r;
  }
  const uint32_t staged = min(runs, kStagedSlots);
  for (uint32_t r = threadIdx.x; r < staged; r += blockDim.x)
    slots[r] = a.run_slot[id_base + r];
  copies_wait();
  const In *rows_in = static_cast<const In *>(a.features) +
                      ((size_t)camera * fh * a.fw + u) * a.channels;
  const size_t row_step = (size_t)a.fw * a.channels;
  const float4 *depth4 = reinterpret_cast<const float4 *>(depth);

  for (uint32_t first = 0; first < a.padded; first += a.slice) {
    const uint32_t width = min(a.slice, a.padded - first);
    const uint32_t groups = width / 4;
    __syncthreads();  // the marks are written, the previous slice is read
#pragma unroll 4
    for (uint32_t i = threadIdx.x; i < fh * width; i += blockDim.x) {
      const uint32_t v = i / width, c = i - v * width;
      rows[i] = first + c < a.channels
                    ? to_float(rows_in[v * row_step + first + c])
                    : 0.0f;
    }
    __syncthreads();
    const float4 *rows4 = reinterpret_cast<const float4 *>(rows);
    for (uint32_t t = threadIdx.x; t < groups * blocks; t += blockDim.x) {
      const uint32_t b = t / groups, g = t - b * groups;
      const uint32_t d0 = 4 * b;
      const uint32_t *const later_slots = a.run_slot + id_base;
      float *const sums = a.sums + first + 4 * g;
      // Read before the bin's first run starts, used from then on (a bin
      // without runs has no mark and never uses its entry).
      uint32_t run0 = first_run[d0], run1 = first_run[d0 + 1];
      uint32_t run2 = first_run[d0 + 2], run3 = first_run[d0 + 3];
      float4 acc0 = make_float4(0.0f, 0.0f, 0.0f, 0.0f), acc1 = acc0,
             acc2 = acc0, acc3 = acc0;
      const uint32_t *mark_at = marks + b;
      const float4 *f_at = rows4 + g, *w_at = depth4 + b;
      // Every row is added to the 4 bins' sums; the 16 fmaf do not depend
      // on the row's mark: a point outside every run (dropped, or a padding
      // bin) only touches the sum of no run, which the next run's start
      // zeroes.  A start zeroes its bin's sum before the row (fmaf from 0,
      // as the reference), an end writes the sum after it; only these
      // depend on the lane's marks.
      const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      for (uint32_t v = 0; v < fh; v++) {
        const uint32_t mark = *mark_at;
        const float4 f = *f_at, w = *w_at;
        mark_at += blocks;
        w_at += blocks;
        f_at += groups;
        if (mark & kStarts) {
          if (mark & kStart) acc0 = zero;
          if ((mark >> 8) & kStart) acc1 = zero;
          if ((mark >> 16) & kStart) acc2 = zero;
          if ((mark >> 24) & kStart) acc3 = zero;
        }
        fma4(acc0, f, w.x);
        fma4(acc1, f, w.y);
        fma4(acc2, f, w.z);
        fma4(acc3, f, w.w);
        if (mark & kEnds) {
          end_step(a, mark, slots, later_slots, sums, acc0, run0);
          end_step(a, mark >> 8, slots, later_slots, sums, acc1, run1);
          end_step(a, mark >> 16, slots, later_slots, sums, acc2, run2);
          end_step(a, mark >> 24, slots, later_slots, sums, acc3, run3);
        }
      }
    }
  }
}

// A run's sum of channels c .. c + 3 (those below the channel count) from
// the tensors in memory: run_kernel's arithmetic, for a slot past the
// run-sum buffer.
template <typename In>
__device__ float4 run_sum_direct(const PoolArgs &a, uint32_t slot, uint32_t c) {
  const uint32_t id = a.slot_run[slot];
  const uint32_t column = id / a.column_points;
  const uint32_t camera = column / a.fw, u = column - camera * a.fw;
  const uint2 span = a.run_span[id];
  const uint32_t v0 = span.y >> 16, count = span.y & 0xffffu;
  const In *depth = static_cast<const In *>(a.depth) +
                    ((size_t)camera * a.column_points + span.x) * a.fw + u;
  const In *row = static_cast<const In *>(a.features) +
                  (((size_t)camera * a.fh + v0) * a.fw + u) * a.channels + c;
  const size_t row_step = (size_t)a.fw * a.channels;
  const uint32_t valid = min(4u, a.channels - c);
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (uint32_t k = 0; k < count; k++, row += row_step) {
    const float w = to_float(depth[(size_t)k * a.fw]);
    float4 f = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    f.x = to_float(row[0]);
    if (valid > 1) f.y = to_float(row[1]);
    if (valid > 2) f.z = to_float(row[2]);
    if (valid > 3) f.w = to_float(row[3]);
    fma4(acc, f, w);
  }
  return acc;
}

__device__ __forceinline__ void add4(float4 &acc, float4 v) {
  acc.x = acc.x + v.x;
  acc.y = acc.y + v.y;
  acc.z = acc.z + v.z;
  acc.w = acc.w + v.w;
}

// Kernel 2.  The block's cells hold one range of slots.  Per batch of up to
// kBatchGroups groups of 4 channels, the range is staged in shared memory
// as many slots at a time as fit (their sums read once, whole rows), and
// lane l adds cell l's slots for groups warp, warp + 8, ... (kAccumulators
// a thread), then writes them.
template <typename In, typename Out>
__global__ void __launch_bounds__(kCellThreads) cell_kernel(const PoolArgs a) {
  __shared__ float4 staged[kStageFloat4];
  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const uint32_t first_cell = blockIdx.x * kCellsPerBlock;
  const uint32_t end_cell = min(first_cell + kCellsPerBlock, a.cells);
  const uint32_t cell = first_cell + lane;
  const uint32_t low = a.cell_start[first_cell], high = a.cell_start[end_cell];
  uint32_t begin = 0, end = 0;
  if (cell < a.cells) {
    begin = a.cell_start[cell];
    end = a.cell_start[cell + 1];
  }
  const uint32_t groups = a.padded / 4;
  const float4 *sums = reinterpret_cast<const float4 *>(a.sums);
  const uint32_t z = cell / a.plane;
  Out *const out = static_cast<Out *>(a.out) +
                   (size_t)z * a.channels * a.plane + (cell - z * a.plane);
  for (uint32_t batch = 0; batch < groups; batch += kBatchGroups) {
    const uint32_t count = min(kBatchGroups, groups - batch);
    // An odd stride of float4, so that lanes reading different slots' rows
    // read different banks.
    const uint32_t stride = count | 1u;
    const uint32_t chunk = kStageFloat4 / stride;
    float4 acc[kAccumulators];
#pragma unroll
    for (int q = 0; q < kAccumulators; q++)
      acc[q] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (uint32_t base = low; base < high; base += chunk) {
      const uint32_t rows = min(chunk, high - base);
      // Warps along the slots, lanes along the groups (count <= 32); the
      // copies are issued together and waited for once.
      if (lane < count)
        for (uint32_t k = warp; k < rows; k += kCellThreads / 32) {
          const uint32_t slot = base + k;
          if (slot < a.sum_capacity)
            copy_16(&staged[k * stride + lane],
                    sums + (size_t)slot * groups + batch + lane);
          else
            staged[k * stride + lane] =
                run_sum_direct<In>(a, slot, 4 * (batch + lane));
        }
      copies_wait();
      __syncthreads();
      const uint32_t from = max(begin, base), to = min(end, base + rows);
#pragma unroll
      for (int q = 0; q < kAccumulators; q++) {
        const uint32_t j = warp + 8 * q;
        if (j < count)
          for (uint32_t s = from; s < to; s++)
            add4(acc[q], staged[(s - base) * stride + j]);
      }
      __syncthreads();  // the chunk is read before the next one lands
    }
    if (cell < a.cells) {
#pragma unroll
      for (int q = 0; q < kAccumulators; q++) {
        const uint32_t j = warp + 8 * q;
        if (j >= count) continue;
        const uint32_t c = 4 * (batch + j);
        store(out, (size_t)c * a.plane, acc[q].x);
        if (c + 1 < a.channels) store(out, (size_t)(c + 1) * a.plane, acc[q].y);
        if (c + 2 < a.channels) store(out, (size_t)(c + 2) * a.plane, acc[q].z);
        if (c + 3 < a.channels) store(out, (size_t)(c + 3) * a.plane, acc[q].w);
      }
    }
  }
}

// A pooling's three kernels with @args, for input @In and output @Out,
// through @l (kernel_graph.cuh): launched on a stream inside a caller's
// capture, added to the format pair's graph, matched against its forms, or
// set in one.
template <typename In, typename Out>
cudaError_t queue_kernels(const PoolArgs &args, size_t smem, P3dcLauncher &l) {
  // Tiles: x the (camera, v, tile of u), y the tile of depth bins (at most
  // 64: depth_bins <= P3DC_BEVPOOL_CUDA_COLUMN_SIDE).
  const uint32_t u_tiles = (args.fw + kTileSide - 1) / kTileSide;
  cudaError_t err =
      l.launch(transpose_kernel<In>,
               dim3(args.cameras * args.fh * u_tiles,
                    (args.bins_padded + kTileSide - 1) / kTileSide),
               dim3(kTileSide * 8), 0, false, args);
  if (err == cudaSuccess)
    err = l.launch(run_kernel<In>, dim3(args.cameras * args.fw),
                   dim3(kRunThreads), smem, false, args);
  if (err == cudaSuccess)
    err = l.launch(cell_kernel<In, Out>,
                   dim3((unsigned)(((uint64_t)args.cells + kCellsPerBlock - 1) /
                                   kCellsPerBlock)),
                   dim3(kCellThreads), 0, false, args);
  return err;
}

cudaError_t queue_pooling(const PoolArgs &args, int half_in, int half_out,
                          size_t smem, P3dcLauncher &l) {
  if (half_in)
    return half_out ? queue_kernels<__half, __half>(args, smem, l)
                    : queue_kernels<__half, float>(args, smem, l);
  return half_out ? queue_kernels<float, __half>(args, smem, l)
                  : queue_kernels<float, float>(args, smem, l);
}

// The widest slice of whole groups of 4 channels that kSliceBytes holds
// (at least one group: feat_height <= P3DC_BEVPOOL_CUDA_COLUMN_SIDE).
uint32_t slice_width(const P3dcBevGeometryCuda *geometry) {
  const uint32_t slice =
      kSliceBytes / (4 * geometry->params.feat_height) / 4 * 4;
  return slice < geometry->channels_padded ? slice : geometry->channels_padded;
}

// @geometry's pooling arguments for these tensors (zero in every byte
// the fields leave, so that two of them compare as memory).
void pool_args(const P3dcBevGeometryCuda *geometry, const void *features,
               const void *depth, void *out, PoolArgs *a) {
  memset(static_cast<void *>(a), 0, sizeof *a);
  PoolArgs &args = *a;
  const P3dcBevPoolParams *params = &geometry->params;
  args.features = features;
  args.depth = depth;
  args.out = out;
  args.column_runs = geometry->column_runs;
  args.run_span = reinterpret_cast<const uint2 *>(geometry->run_span);
  args.run_slot = geometry->run_slot;
  args.cell_start = geometry->cell_start;
  args.slot_run = geometry->slot_run;
  args.column_depth = geometry->column_depth;
  args.sums = geometry->sums;
  args.sum_capacity = geometry->sum_capacity;
  args.cameras = params->cameras;
  args.fw = params->feat_width;
  args.fh = params->feat_height;
  args.bins = params->depth_bins;
  args.bins_padded = geometry->bins_padded;
  args.column_points = geometry->column_points;
  args.channels = params->channels;
  args.padded = geometry->channels_padded;
  args.slice = slice_width(geometry);
  args.cells = geometry->cells;
  args.plane = params->nx * params->ny;
}

// The graph of a format pair's three kernels, holding @geometry's
// arguments with no tensors until a call sets them.
cudaError_t build_graph(const P3dcBevGeometryCuda *geometry, int half_in,
                        int half_out, P3dcKernelGraph *g) {
  const size_t smem = p3dc_bevpool_pool_smem(geometry);
  PoolArgs args;
  pool_args(geometry, nullptr, nullptr, nullptr, &args);
  // a kernel node's shared memory must be allowed when it is added
  if (smem > 48 * 1024) {
    const cudaError_t err = p3dc_allow_largest_smem(
        half_in ? run_kernel<__half> : run_kernel<float>);
    if (err != cudaSuccess) return err;
  }
  return p3dc_kernel_graph_build(g, false, [&](P3dcLauncher &l) {
    return queue_pooling(args, half_in, half_out, smem, l);
  });
}

}  // namespace

extern "C" void p3dc_bevpool_pool_graphs_free(P3dcBevPoolGraphs *graphs) {
  if (graphs == nullptr) return;
  for (P3dcKernelGraph &g : graphs->pair) p3dc_kernel_graph_destroy(&g);
  free(graphs);
}

extern "C" int p3dc_bevpool_pool_graphs_new(const P3dcBevGeometryCuda *geometry,
                                            P3dcBevPoolGraphs **graphs) {
  P3dcBevPoolGraphs *g =
      static_cast<P3dcBevPoolGraphs *>(calloc(1, sizeof(P3dcBevPoolGraphs)));
  if (g == nullptr) return cudaErrorMemoryAllocation;
  cudaError_t err = cudaSuccess;
  for (int pair = 0; pair < 4 && err == cudaSuccess; pair++)
    err = build_graph(geometry, pair >> 1, pair & 1, &g->pair[pair]);
  if (err != cudaSuccess) {
    p3dc_bevpool_pool_graphs_free(g);
    // returned, and not left behind for the next call's cudaGetLastError()
    cudaGetLastError();
    return err;
  }
  *graphs = g;
  return cudaSuccess;
}

extern "C" size_t p3dc_bevpool_pool_smem(const P3dcBevGeometryCuda *geometry) {
  const uint32_t fh = geometry->params.feat_height;
  return ((size_t)rows_offset(fh, geometry->bins_padded,
                              geometry->column_points) +
          (size_t)fh * slice_width(geometry)) *
         sizeof(float);
}

extern "C" P3dcResult p3dc_bevpool_cuda(const P3dcBevGeometryCuda *geometry,
                                        const void *features, const void *depth,
                                        int half_in, void *out, int half_out,
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

  PoolArgs args;
  pool_args(geometry, features, depth, out, &args);
  const size_t smem = p3dc_bevpool_pool_smem(geometry);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  // Inside a capture of the caller's the three kernels are queued as plain
  // launches, which the capture records; the geometry's graphs are left as
  // they are.  (run_kernel's shared memory beyond 48 KB was allowed when
  // the graphs were built.)
  const cudaError_t err = p3dc_kernel_graph_run(
      &geometry->pool_graphs->pair[(half_in ? 2 : 0) + (half_out ? 1 : 0)],
      false,
      [&](P3dcLauncher &l) {
        return queue_pooling(args, half_in, half_out, smem, l);
      },
      s);
  if (err != cudaSuccess) {
    cudaGetLastError();  // returned, not left for a later call
    return err;
  }
  return P3DC_OK;
}
