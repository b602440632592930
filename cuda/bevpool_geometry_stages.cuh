// The bevpool geometry's update on the device, for bevpool_geometry.cu; the
// reference is bevpool_geometry_cpu.c.
//
// The update works on runs (bevpool.h, "Summation order"): the points of
// one feature column (camera, u) and depth bin d on consecutive feature rows
// v that fall in one cell.  Steps, all queued on the caller's stream (no
// count ever comes back to the host):
//   1. project and cut runs: a block per feature column projects its
//      depth_bins x feat_height points into shared memory, cuts each depth
//      bin's rows into runs, writes them in (d, v) order as the column's
//      runs and counts them per cell;
//   2. cell starts: an exclusive sum of the counts, each cell's first slot;
//   3. place: each run takes a place among its cell's slots (atomically,
//      so in no fixed order);
//   4. rank: each cell orders its runs by id, which is (camera, u, d, v)
//      order, the order bevpool.h defines: a run's slot is its cell's first
//      slot plus the number of the cell's runs with a lower id; and clears
//      the cell's count and cursor for the next update.
// Step 4 follows step 3 over a programmatic edge in the library's graph
// (launch.cuh); the benchmark's step-by-step launches chain steps 3 and 4.
// The rank step leaves the counts clear for the next update, so an update
// needs a memset only when the last one did not end that way: the first,
// one after a failure, and one queued into a caller's stream capture.
//
// step_launch() describes each kernel launch once.  The library adds them
// to one CUDA graph with CUB's scan (bevpool_geometry.cu), and queues them
// one by one through enqueue_steps() where its caller captures the stream.
// enqueue_steps() is a template over what happens between the steps: the
// library marks nothing (NoMarks); tests/bench/bench_bevpool_stages.cu,
// which only the benchmarks build, records a CUDA event at each mark to
// time the steps.  Everything here has internal linkage, so that the
// benchmark's copy and the library's link into one program.
#ifndef P3DC_BEVPOOL_GEOMETRY_STAGES_CUH
#define P3DC_BEVPOOL_GEOMETRY_STAGES_CUH

#include <cuda_runtime.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cub/cub.cuh>

#include "bevpool-private.h"
#include "launch.cuh"
#include "smem_limit.cuh"

namespace p3dc_bevpool_geometry {

constexpr int kGeometryStages = 4;
constexpr unsigned kColumnThreads = 128;
constexpr unsigned kPlaceThreads = 128;
constexpr unsigned kRankThreads = 256;
// A cell of more runs than kRankAlone is ranked by a warp, one of more than
// kRankWarp by a block.  A thread alone compares a cell's runs pairwise, so
// the cells near the cameras (9 to 29 runs on the nuScenes calibration)
// would hold their warps for up to 841 loads: with 8, the update measured
// 60.3 and 63.6 us against 67.7 and 68.9 with 32 (docs/performance.md).
constexpr uint32_t kRankAlone = 8;
constexpr uint32_t kRankWarp = 1024;

// Cameras whose constants travel in one launch's parameters (8 x 192 bytes
// stays well inside the 4 KB parameter space), so no host buffer has to
// outlive the call.
constexpr uint32_t kCamerasPerLaunch = 8;

struct CameraBatch {
  P3dcBevCamera cameras[kCamerasPerLaunch];
  uint32_t first;
  uint32_t count;
};

struct ColumnArgs {
  P3dcBevFrustumGrid grid;
  // 1 / grid.step, or 0 where that is not a normal double (no fast path)
  double inv_step[3];
  CameraBatch batch;
  uint32_t column_points;
  uint32_t cell_stride;  // a depth bin's row of cells in shared memory
  uint32_t *column_runs;
  uint32_t *run_cell;
  uint2 *run_span;
  uint32_t *cell_count;
};

// The shared-memory row of a depth bin's cells: odd, so that the threads of
// step 1's run cut, one per depth bin, read different banks.
static inline uint32_t cell_stride(uint32_t feat_height) {
  return feat_height | 1u;
}

static inline size_t column_smem(uint32_t depth_bins, uint32_t feat_height) {
  return ((size_t)depth_bins * cell_stride(feat_height) + depth_bins) *
         sizeof(uint32_t);
}

// The cell of depth bin @d on the column @ray of @cam, as
// p3dc_bevpool_ray_cell() gives it, with a multiplication by 1 / step in
// place of each axis's division where that provably gives the same cell,
// and the division where it might not.  The quotient and the product
// differ by less than 2^-51 of the product when both are normal doubles
// (three roundings of 2^-53), so when the product lies further than 2^-50
// of itself from the nearest integer, both lie strictly between the same
// two integers, and every test the rule makes (against 0, -1 and n) and
// the truncation agree.  Near an integer, below 2^-1000 (where rounding may
// underflow differently), beyond 2^49 (where the margin covers the whole
// interval), for NaN and infinity, and when inv_step is 0, the division
// decides, as in the reference.  The three axes are computed without a
// branch but the rare division's, so that their float64 work overlaps.
__device__ __forceinline__ uint32_t ray_cell(const P3dcBevFrustumGrid &grid,
                                             const double inv_step[3],
                                             const P3dcBevCamera *cam,
                                             const P3dcBevRay *ray,
                                             uint32_t d) {
  const double ds = grid.depth_min + (double)d * grid.depth_step;
  double lidar[3], q[3], t[3];
  bool close[3], any_close = false;
  p3dc_bevpool_ray_point(cam, ray, ds, lidar);
#pragma unroll
  for (int axis = 0; axis < 3; axis++) {
    q[axis] = lidar[axis] - grid.lower[axis];
    t[axis] = q[axis] * inv_step[axis];
    const double magnitude = fabs(t[axis]);
    close[axis] = !(magnitude >= 0x1p-1000 &&
                    fabs(t[axis] - rint(t[axis])) > magnitude * 0x1p-50);
    any_close |= close[axis];
  }
  if (any_close) {
#pragma unroll
    for (int axis = 0; axis < 3; axis++)
      if (close[axis]) t[axis] = q[axis] / grid.step[axis];
  }
  bool inside = true;
  uint32_t cell[3];
#pragma unroll
  for (int axis = 0; axis < 3; axis++) {
    inside &= grid.floor_rule ? t[axis] >= 0.0 : t[axis] > -1.0;
    inside &= t[axis] < (double)grid.n[axis];
    // converted only where inside, so no out-of-range conversion happens
    cell[axis] = inside ? (uint32_t)(int32_t)t[axis] : 0u;
  }
  if (!inside) return grid.cells;
  if (grid.layout_xy)
    return (cell[2] * grid.n[0] + cell[0]) * grid.n[1] + cell[1];
  return (cell[2] * grid.n[1] + cell[1]) * grid.n[0] + cell[0];
}

// Step 1.  Block: one feature column of the batch.  The points are taken
// v-major in contiguous stretches per thread, so that a thread computes a
// row's ray once for its depth bins; a thread per depth bin then cuts its
// row into runs, twice (count, then write at the bin's offset in the
// column's list).
static __global__ void __launch_bounds__(kColumnThreads)
    column_kernel(const ColumnArgs a) {
  extern __shared__ uint32_t column_smem_words[];
  const P3dcBevFrustumGrid &grid = a.grid;
  const uint32_t fw = grid.feat_width, fh = grid.feat_height;
  const uint32_t bins = grid.depth_bins, stride = a.cell_stride;
  uint32_t *const cells = column_smem_words;        // [bins][stride]
  uint32_t *const offsets = cells + bins * stride;  // [bins]
  const uint32_t local = blockIdx.x / fw;
  const uint32_t u = blockIdx.x - local * fw;
  const uint32_t column = (a.batch.first + local) * fw + u;
  const P3dcBevCamera *cam = &a.batch.cameras[local];
  const uint32_t points = a.column_points;
  const uint32_t per_thread = (points + blockDim.x - 1) / blockDim.x;

  uint32_t i = threadIdx.x * per_thread;
  const uint32_t end = min(i + per_thread, points);
  // (v, d) of point i, then stepped along: one division per thread
  uint32_t v = i / bins, d = i - v * bins;
  P3dcBevRay ray;
  if (i < end) p3dc_bevpool_column_ray(&grid, cam, u, v, &ray);
  for (; i < end; i++) {
    cells[d * stride + v] = ray_cell(grid, a.inv_step, cam, &ray, d);
    if (++d == bins && i + 1 < end) {
      d = 0;
      v++;
      p3dc_bevpool_column_ray(&grid, cam, u, v, &ray);
    }
  }
  __syncthreads();

  // Runs per depth bin: a kept point starts one unless the row above it
  // holds the same cell.
  for (uint32_t d = threadIdx.x; d < bins; d += blockDim.x) {
    const uint32_t *row = cells + d * stride;
    uint32_t count = 0, previous = grid.cells;
    for (uint32_t v = 0; v < fh; v++) {
      const uint32_t cell = row[v];
      count += cell < grid.cells && cell != previous;
      previous = cell;
    }
    offsets[d] = count;
  }
  __syncthreads();
  // Offsets: one warp sums the counts, 32 bins at a time.
  if (threadIdx.x < 32) {
    using WarpScan = cub::WarpScan<uint32_t>;
    __shared__ typename WarpScan::TempStorage scan;
    const unsigned lane = threadIdx.x;
    uint32_t carry = 0;
    for (uint32_t base = 0; base < bins; base += 32) {
      const uint32_t d = base + lane;
      uint32_t offset, total;
      WarpScan(scan).ExclusiveSum(d < bins ? offsets[d] : 0u, offset, total);
      if (d < bins) offsets[d] = carry + offset;
      carry += total;
    }
    if (lane == 0) a.column_runs[column] = carry;
  }
  __syncthreads();

  const uint64_t column_base = (uint64_t)column * points;
  for (uint32_t d = threadIdx.x; d < bins; d += blockDim.x) {
    const uint32_t *row = cells + d * stride;
    uint64_t id = column_base + offsets[d];
    uint32_t v = 0;
    while (v < fh) {
      const uint32_t cell = row[v];
      uint32_t rows = 1;
      while (v + rows < fh && row[v + rows] == cell) rows++;
      if (cell < grid.cells) {
        a.run_cell[id] = cell;
        a.run_span[id] = make_uint2(d * fh + v, v << 16 | rows);
        atomicAdd(&a.cell_count[cell], 1u);
        id++;
      }
      v += rows;
    }
  }
}

// Step 3.  Block: one feature column; its runs take places in their cells.
// Launched as a programmatic dependent, it waits for the kernel before it
// on the device (launch.cuh), as step 4 does.
struct PlaceArgs {
  const uint32_t *column_runs;
  const uint32_t *run_cell;
  const uint32_t *cell_start;
  uint32_t *cursor;
  uint32_t *placed;
  uint32_t column_points;
};

static __global__ void __launch_bounds__(kPlaceThreads)
    place_kernel(const PlaceArgs a) {
  p3dc_wait_for_previous_kernel();
  p3dc_allow_next_kernel();
  const uint32_t column = blockIdx.x;
  const uint32_t runs = p3dc_load_after_wait(&a.column_runs[column]);
  const uint64_t base = (uint64_t)column * a.column_points;
  for (uint32_t i = threadIdx.x; i < runs; i += blockDim.x) {
    const uint32_t id = (uint32_t)(base + i);
    const uint32_t cell = a.run_cell[id];
    a.placed[a.cell_start[cell] + atomicAdd(&a.cursor[cell], 1u)] = id;
  }
}

// The slot of each of the ids placed[begin + first], + step, ...: @begin
// plus the number of lower ids in [begin, end).  Ids are distinct.
__device__ __forceinline__ void rank_runs(const uint32_t *placed,
                                          uint32_t begin, uint32_t end,
                                          uint32_t first, uint32_t step,
                                          uint32_t *run_slot,
                                          uint32_t *slot_run) {
  for (uint32_t i = begin + first; i < end; i += step) {
    const uint32_t id = placed[i];
    uint32_t lower = 0;
    for (uint32_t j = begin; j < end; j++) lower += placed[j] < id;
    run_slot[id] = begin + lower;
    slot_run[begin + lower] = id;
  }
}

// Step 4.  A thread per cell ranks a cell of at most kRankAlone runs, a
// warp each cell of up to kRankWarp, the whole block each larger one (the
// work is quadratic in a cell's runs: a grid of one cell holding a whole
// rig's 62,000 runs stays within tens of milliseconds).  The block's cells
// for warps are shared by all its warps, not left to the warp whose
// threads they are: the cells that take many runs lie side by side (near
// the cameras), so one warp would otherwise rank them one after the other
// while the block's other warps have none.  The cell's count and cursor
// have done their work by then: the kernel clears them for the next
// update, which then needs no memset (P3dcBevGeometryCuda.counts_clear).
struct RankArgs {
  const uint32_t *cell_start;
  const uint32_t *placed;
  uint32_t cells;
  uint32_t *run_slot;
  uint32_t *slot_run;
  uint32_t *cell_count;
  uint32_t *cursor;
};

static __global__ void __launch_bounds__(kRankThreads)
    rank_kernel(const RankArgs a) {
  const uint32_t *const cell_start = a.cell_start, *const placed = a.placed;
  const uint32_t cells = a.cells;
  uint32_t *const run_slot = a.run_slot, *const slot_run = a.slot_run;
  constexpr unsigned kWarps = kRankThreads / 32;
  __shared__ uint32_t by_warp[kRankThreads], by_block[kRankThreads];
  __shared__ uint32_t by_warp_count, by_block_count;
  const uint32_t cell = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) by_warp_count = by_block_count = 0;
  p3dc_wait_for_previous_kernel();
  uint32_t begin = 0, end = 0;
  if (cell < cells) {
    begin = p3dc_load_after_wait(&cell_start[cell]);
    end = p3dc_load_after_wait(&cell_start[cell + 1]);
    a.cell_count[cell] = 0;
    a.cursor[cell] = 0;
  }
  const uint32_t runs = end - begin;
  if (runs <= kRankAlone)
    rank_runs(placed, begin, end, 0, 1, run_slot, slot_run);
  __syncthreads();  // the block's list counts are cleared
  if (runs > kRankWarp)
    by_block[atomicAdd(&by_block_count, 1u)] = cell;
  else if (runs > kRankAlone)
    by_warp[atomicAdd(&by_warp_count, 1u)] = cell;
  __syncthreads();
  for (uint32_t k = warp; k < by_warp_count; k += kWarps) {
    const uint32_t c = by_warp[k];
    rank_runs(placed, cell_start[c], cell_start[c + 1], lane, 32, run_slot,
              slot_run);
  }
  for (uint32_t k = 0; k < by_block_count; k++) {
    const uint32_t c = by_block[k];
    rank_runs(placed, cell_start[c], cell_start[c + 1], threadIdx.x, blockDim.x,
              run_slot, slot_run);
  }
}

static unsigned blocks_for(uint64_t items, unsigned threads) {
  return (unsigned)((items + threads - 1) / threads);
}

struct NoMarks {
  cudaError_t operator()(int, cudaStream_t) const { return cudaSuccess; }
};

// Launches of the column kernel an update takes: one a kCamerasPerLaunch
// cameras.
static uint32_t column_batches(const P3dcBevPoolParams *params) {
  return (params->cameras + kCamerasPerLaunch - 1) / kCamerasPerLaunch;
}

// The column kernel's arguments for each of @geometry's camera batches
// (column_batches() of them), the cameras' constants derived from @calib,
// or zero where @calib is null (the placeholders a graph is built with).
static void column_args(const P3dcBevGeometryCuda *geometry,
                        const P3dcCameraCalib *calib, ColumnArgs *batches) {
  const P3dcBevPoolParams *params = &geometry->params;
  for (uint32_t b = 0; b < column_batches(params); b++) {
    ColumnArgs &args = batches[b];
    memset(static_cast<void *>(&args), 0, sizeof args);
    args.grid = geometry->grid;
    for (int axis = 0; axis < 3; axis++) {
      const double inv = 1.0 / geometry->grid.step[axis];
      args.inv_step[axis] = std::isnormal(inv) ? inv : 0.0;
    }
    args.column_points = geometry->column_points;
    args.cell_stride = cell_stride(params->feat_height);
    args.column_runs = geometry->column_runs;
    args.run_cell = geometry->run_cell;
    args.run_span = reinterpret_cast<uint2 *>(geometry->run_span);
    args.cell_count = geometry->cell_count;
    CameraBatch *batch = &args.batch;
    batch->first = b * kCamerasPerLaunch;
    batch->count = params->cameras - batch->first < kCamerasPerLaunch
                       ? params->cameras - batch->first
                       : kCamerasPerLaunch;
    if (calib != nullptr)
      for (uint32_t i = 0; i < batch->count; i++)
        p3dc_bevpool_camera_derive(&calib[batch->first + i],
                                   &batch->cameras[i]);
  }
}

// What an update does before its launches: checks @calib and clears the
// counts on @stream unless the last update's rank step did.  Until this
// update's rank step is queued they are not known to be clear.
static P3dcResult begin_update(P3dcBevGeometryCuda *geometry,
                               const P3dcCameraCalib *calib,
                               cudaStream_t stream) {
  if (geometry == nullptr || calib == nullptr)
    return P3DC_ERROR_INVALID_ARGUMENT;
  geometry->computed = 0;
  P3dcResult result = p3dc_bevpool_calib_check(&geometry->params, calib);
  if (result != P3DC_OK) return result;
  cudaError_t err;
  // the counts and, after them, the place step's cursors
  if (!geometry->counts_clear &&
      (err =
           cudaMemsetAsync(geometry->cell_count, 0,
                           2 * ((size_t)geometry->cells + 1) * sizeof(uint32_t),
                           stream)) != cudaSuccess)
    return err;
  geometry->counts_clear = 0;
  return P3DC_OK;
}

// The arguments of an update's kernels: the column kernel's of each
// camera batch (column_args()), the place and rank steps'.
struct UpdateArgs {
  ColumnArgs *batches;
  PlaceArgs place;
  RankArgs rank;
};

// The place and rank steps' arguments: @geometry's buffers.
static void step_args(const P3dcBevGeometryCuda *geometry, UpdateArgs *u) {
  u->place.column_runs = geometry->column_runs;
  u->place.run_cell = geometry->run_cell;
  u->place.cell_start = geometry->cell_start;
  u->place.cursor = geometry->cursor;
  u->place.placed = geometry->placed;
  u->place.column_points = geometry->column_points;
  u->rank.cell_start = geometry->cell_start;
  u->rank.placed = geometry->placed;
  u->rank.cells = geometry->cells;
  u->rank.run_slot = geometry->run_slot;
  u->rank.slot_run = geometry->slot_run;
  u->rank.cell_count = geometry->cell_count;
  u->rank.cursor = geometry->cursor;
}

// Kernel step @i of an update as a launch: 0 to column_batches() - 1 the
// column kernel's batches, then place, then rank (CUB's scan, between the
// columns and place, is not a kernel of ours).  The one description of
// these launches, which the library's graph, the launches in a caller's
// capture and the benchmark's marked launches all use.  The parameters
// point at @arg, which points into @u; both must outlive their use.
static void step_launch(const P3dcBevGeometryCuda *geometry,
                        const UpdateArgs *u, uint32_t i,
                        cudaKernelNodeParams *p, void **arg) {
  const uint32_t batches = column_batches(&geometry->params);
  *p = cudaKernelNodeParams{};
  if (i < batches) {
    p->func = reinterpret_cast<void *>(column_kernel);
    p->gridDim = dim3(u->batches[i].batch.count * geometry->params.feat_width);
    p->blockDim = dim3(kColumnThreads);
    p->sharedMemBytes = (unsigned)column_smem(geometry->params.depth_bins,
                                              geometry->params.feat_height);
    *arg = const_cast<ColumnArgs *>(&u->batches[i]);
  } else if (i == batches) {
    p->func = reinterpret_cast<void *>(place_kernel);
    p->gridDim = dim3(geometry->columns);
    p->blockDim = dim3(kPlaceThreads);
    *arg = const_cast<PlaceArgs *>(&u->place);
  } else {
    p->func = reinterpret_cast<void *>(rank_kernel);
    p->gridDim = dim3(blocks_for(geometry->cells, kRankThreads));
    p->blockDim = dim3(kRankThreads);
    *arg = const_cast<RankArgs *>(&u->rank);
  }
  p->kernelParams = arg;
}

// Step 2: CUB's exclusive sum of the counts into the cells' first slots.
static cudaError_t enqueue_scan(const P3dcBevGeometryCuda *geometry,
                                cudaStream_t stream) {
  size_t temp_bytes = geometry->temp_bytes;
  return cub::DeviceScan::ExclusiveSum(
      geometry->temp, temp_bytes, geometry->cell_count, geometry->cell_start,
      (int)geometry->cells + 1, stream);
}

// Steps 1 to 4 on @stream, launch by launch, with @u's arguments; a mark
// before the first step and after each.  The library launches the same
// steps as one graph (bevpool_geometry.cu) except where its caller is
// capturing the stream, where it queues them here.
template <typename Mark>
static cudaError_t enqueue_steps(const P3dcBevGeometryCuda *geometry,
                                 const UpdateArgs *u, bool chain,
                                 const Mark &mark, cudaStream_t stream) {
  const uint32_t batches = column_batches(&geometry->params);
  cudaKernelNodeParams p;
  void *arg[1];
  cudaError_t err;
  if ((err = mark(0, stream)) != cudaSuccess) return err;
  for (uint32_t b = 0; b < batches; b++) {
    step_launch(geometry, u, b, &p, arg);
    if ((err = p3dc_launch_node(&p, stream, false)) != cudaSuccess) return err;
  }
  if ((err = mark(1, stream)) != cudaSuccess) return err;
  if ((err = enqueue_scan(geometry, stream)) != cudaSuccess) return err;
  if ((err = mark(2, stream)) != cudaSuccess) return err;
  step_launch(geometry, u, batches, &p, arg);
  if ((err = p3dc_launch_node(&p, stream, chain)) != cudaSuccess) return err;
  if ((err = mark(3, stream)) != cudaSuccess) return err;
  step_launch(geometry, u, batches + 1, &p, arg);
  if ((err = p3dc_launch_node(&p, stream, chain)) != cudaSuccess) return err;
  return mark(4, stream);
}

// An update with a mark between its steps, launched step by step (the
// benchmark's diagnostic; the library launches the same steps as one
// graph).  The benchmark's copy of the column kernel is its own, so its
// shared memory is allowed here (the library's is when its graph is
// built).
template <typename Mark>
static P3dcResult compute_stages(P3dcBevGeometryCuda *geometry,
                                 const P3dcCameraCalib *calib, const Mark &mark,
                                 P3dcCudaStream stream) {
  if (geometry != nullptr &&
      column_smem(geometry->params.depth_bins, geometry->params.feat_height) >
          48 * 1024) {
    const cudaError_t err = p3dc_allow_largest_smem(column_kernel);
    if (err != cudaSuccess) return err;
  }
  P3dcResult result = begin_update(geometry, calib, stream);
  if (result != P3DC_OK) return result;
  UpdateArgs u;
  u.batches = static_cast<ColumnArgs *>(
      malloc(column_batches(&geometry->params) * sizeof(ColumnArgs)));
  if (u.batches == nullptr) return P3DC_ERROR_OUT_OF_MEMORY;
  column_args(geometry, calib, u.batches);
  step_args(geometry, &u);
  const cudaError_t err =
      enqueue_steps(geometry, &u, geometry->can_chain != 0, mark, stream);
  free(u.batches);
  if (err != cudaSuccess) return err;
  geometry->counts_clear = 1;
  geometry->computed = 1;
  return P3DC_OK;
}

}  // namespace p3dc_bevpool_geometry

#endif  // P3DC_BEVPOOL_GEOMETRY_STAGES_CUH
