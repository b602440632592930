// The bevpool geometry's update on the device, for bevpool_geometry.cu; the
// reference is bevpool_geometry_cpu.c.
//
// Stages (all queued on the caller's stream, no count ever comes back to the
// host):
//   1-3. the kept frustum points in key order, stable (within a cell in
//      (camera, u, v, d) order, the order bevpool.h defines), packed as
//      entries, with the first position of every key and every point's chunk
//      flag (bevpool_geometry_order.cuh: pieces sorted in shared memory,
//      then placed by key);
//   4. chunk numbers: an exclusive sum of the chunk flags;
//   5. the first point of every chunk and the first chunk of every key;
//   6. units, the pooling's work items: each 16 x 16 block of keys cut
//      greedily into runs within the schedule's chunk and point budgets (5
//      and 6 are one launch);
//   7. the list of units (an exclusive sum of the unit starts, a scatter);
//   8. the chunk plan: per unit (and pass), the order in which the pooling
//      takes its chunks (by window, longer first) and its batches (one per
//      window) with their column-key bounds, so that every frame the
//      pooling reads them instead of sorting.
//
// The sequence is a template over what happens between the stages: the
// library marks nothing (NoMarks); tests/bench/bench_bevpool_stages.cu,
// which only the benchmarks build, records a CUDA event at each mark to time
// the stages.  Everything here has internal linkage, so that the
// benchmark's copy and the library's link into one program.
#ifndef P3DC_BEVPOOL_GEOMETRY_STAGES_CUH
#define P3DC_BEVPOOL_GEOMETRY_STAGES_CUH

#include <cuda_runtime.h>

#include <cub/cub.cuh>

#include "bevpool-private.h"
#include "bevpool_geometry_order.cuh"

namespace p3dc_bevpool_order {

constexpr unsigned kThreads = 256;
constexpr uint32_t kTileCells = P3DC_BEVPOOL_TILE_CELLS;
static_assert(kTileCells == kThreads,
              "unit_cut_kernel gives each key of a block one thread");

static unsigned blocks_for(uint64_t items) {
  uint64_t blocks = (items + kThreads - 1) / kThreads;
  if (blocks < 1) blocks = 1;
  // A grid-stride loop covers the rest.
  return blocks > 65535 * 16 ? 65535 * 16 : (unsigned)blocks;
}

// Stages 5 and 6, one launch.  ids[i] is the exclusive sum of the chunk
// flags (ids[kept] is the chunk count).
//  - Every thread of the grid, over the sorted points: chunk_begin[c] for
//    every chunk and the sentinel chunk_begin[count] = kept.
//  - Block b < keys / kTileCells, over the 16 x 16 block of keys b:
//    chunk_start[k] (and the sentinel chunk_start[keys]), and the unit cut.
//    A unit starts at the block's first key, before and after a key whose
//    chunks or points alone exceed the budget (it is pooled in passes,
//    alone), and before a key that would take the running unit over either
//    budget.  A greedy cut is sequential, so one thread runs it over counts
//    the block loaded into shared memory (256 steps).
static __global__ void __launch_bounds__(kTileCells)
    chunk_unit_kernel(const uint32_t *ids, const uint32_t *cell_start,
                      uint32_t points, uint32_t keys, uint32_t unit_chunks,
                      uint32_t unit_points, uint32_t *chunk_begin,
                      uint32_t *chunk_start, uint32_t *flags) {
  __shared__ uint32_t s_chunks[kTileCells], s_points[kTileCells];
  __shared__ uint32_t s_flags[kTileCells];
  const uint32_t kept = cell_start[keys];
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i <= kept;
       i += stride) {
    if (i < kept) {
      if (ids[i + 1] != ids[i]) chunk_begin[ids[i]] = i;
    } else {
      chunk_begin[ids[kept]] = kept;
    }
  }
  if (blockIdx.x >= keys / kTileCells) return;

  const uint32_t k = blockIdx.x * kTileCells + threadIdx.x;
  const uint32_t first = cell_start[k], next = cell_start[k + 1];
  const uint32_t chunk = ids[first];
  chunk_start[k] = chunk;
  if (k + 1 == keys) chunk_start[keys] = ids[next];
  s_chunks[threadIdx.x] = ids[next] - chunk;
  s_points[threadIdx.x] = next - first;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t chunks = 0, points = 0;
    bool previous_alone = false;
    for (uint32_t j = 0; j < kTileCells; j++) {
      const uint32_t c = s_chunks[j], p = s_points[j];
      const bool alone = c > unit_chunks || p > unit_points;
      const bool start = j == 0 || alone || previous_alone ||
                         chunks + c > unit_chunks || points + p > unit_points;
      if (start) {
        chunks = c;
        points = p;
      } else {
        chunks += c;
        points += p;
      }
      s_flags[j] = start ? 1u : 0u;
      previous_alone = alone;
    }
  }
  __syncthreads();
  flags[k] = s_flags[threadIdx.x];
  // The sentinel after the last key, so the sum over keys + 1 entries ends
  // with the unit count.
  if (k == 0) flags[keys] = 0;
}

// Stage 7.  units[u] = (first key, first chunk, first point, 0) of unit u,
// and after the last one the sentinel (keys, chunk count, kept, 0).
static __global__ void unit_list_kernel(const uint32_t *flags,
                                        const uint32_t *pos,
                                        const uint32_t *cell_start,
                                        const uint32_t *chunk_start,
                                        uint32_t keys, uint4 *units,
                                        uint32_t *unit_count) {
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k <= keys;
       k += stride) {
    if (k == keys || flags[k])
      units[pos[k]] = make_uint4(k, chunk_start[k], cell_start[k], 0u);
    if (k == keys) *unit_count = pos[keys];
  }
}

// Stage 8.  A persistent grid walks the units; per pass of a unit (see
// p3dc_bevpool_pass_chunks()), thread s takes chunk s of the pass:
//   - its window, length and column-key bounds;
//   - its rank among the pass's chunks by (window, longer first, index), and
//     the lowest and highest column key of its window (both by a scan over
//     the pass's chunks: n <= 256, once per calibration);
//   - then thread q takes sorted position q: it starts a batch where the
//     window changes, and the batch's number is the count of starts before
//     it (ballots per warp, their counts summed).
// plan[pass's first chunk + q] = (chunk at position q, pass-relative; the
// start, low and high of batch q, or UINT32_MAX, 0, 0 past the last batch).
constexpr unsigned kPlanThreads = 256;

static __global__ void __launch_bounds__(kPlanThreads)
    chunk_plan_kernel(const uint32_t *entries, const uint32_t *chunk_begin,
                      const uint4 *units, const uint32_t *unit_count,
                      const P3dcBevPoolSchedule schedule, uint32_t col_mask,
                      uint32_t *plan) {
  __shared__ uint32_t s_key[kPlanThreads], s_first[kPlanThreads];
  __shared__ uint32_t s_last[kPlanThreads], s_low[kPlanThreads];
  __shared__ uint32_t s_high[kPlanThreads], s_sorted[kPlanThreads];
  __shared__ uint32_t s_starts[kPlanThreads / 32];
  constexpr uint32_t kWindowBits = P3DC_BEVPOOL_WINDOW_BITS;
  const uint32_t tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const uint32_t count = *unit_count;
  for (uint32_t u = blockIdx.x; u < count; u += gridDim.x) {
    const uint4 here = units[u], next = units[u + 1];
    const uint32_t chunks = next.y - here.y, points = next.z - here.z;
    const uint32_t pass = p3dc_bevpool_pass_chunks(&schedule, chunks, points);
    for (uint32_t pass0 = 0; pass0 < chunks; pass0 += pass) {
      const uint32_t n = chunks - pass0 < pass ? chunks - pass0 : pass;
      const uint32_t base = here.y + pass0;
      if (tid < n) {
        const uint32_t begin = chunk_begin[base + tid];
        const uint32_t end = chunk_begin[base + tid + 1];
        const uint32_t first = entries[begin] & col_mask;
        s_first[tid] = first;
        s_last[tid] = entries[end - 1] & col_mask;
        s_key[tid] =
            (first >> kWindowBits) << 6 | (P3DC_BEVPOOL_CHUNK - (end - begin));
      }
      __syncthreads();  // every chunk's key and bounds are visible
      if (tid < n) {
        const uint32_t key = s_key[tid], window = s_first[tid] >> kWindowBits;
        uint32_t rank = 0, low = s_first[tid], high = s_last[tid];
        for (uint32_t t = 0; t < n; t++) {
          const uint32_t other = s_key[t];
          rank += other < key || (other == key && t < tid);
          if (s_first[t] >> kWindowBits == window) {
            low = min(low, s_first[t]);
            high = max(high, s_last[t]);
          }
        }
        s_sorted[rank] = tid;
        s_low[tid] = low;
        s_high[tid] = high;
      }
      __syncthreads();  // the order is complete
      bool starts = false;
      uint32_t chunk = 0;
      if (tid < n) {
        chunk = s_sorted[tid];
        starts = tid == 0 || s_first[chunk] >> kWindowBits !=
                                 s_first[s_sorted[tid - 1]] >> kWindowBits;
      }
      const uint32_t mask = __ballot_sync(0xffffffffu, starts);
      if (lane == 0) s_starts[warp] = __popc(mask);
      __syncthreads();  // every warp's count of starts is visible
      uint32_t before = 0, batches = 0;
      for (uint32_t w = 0; w < kPlanThreads / 32; w++) {
        before += w < warp ? s_starts[w] : 0;
        batches += s_starts[w];
      }
      if (tid < n) {
        uint32_t *at = plan + 4 * (size_t)(base + tid);
        at[0] = chunk;
        if (tid >= batches) {
          at[1] = 0xffffffffu;
          at[2] = 0;
          at[3] = 0;
        }
      }
      if (starts) {
        // Fields 1..3 of position `batch` (< batches <= n): this thread is
        // their only writer; field 0 there belongs to thread `batch`.
        const uint32_t batch = before + __popc(mask & ((1u << lane) - 1u));
        uint32_t *at = plan + 4 * (size_t)(base + batch);
        at[1] = tid;
        at[2] = s_low[chunk];
        at[3] = s_high[chunk];
      }
      __syncthreads();  // shared memory is free for the next pass
    }
  }
}

// The cameras of the launch that starts at camera @first of @cameras, and
// its pieces (bevpool_geometry_order.cuh).
static uint32_t batch_cameras(uint32_t cameras, uint32_t first) {
  return cameras - first < kCamerasPerLaunch ? cameras - first
                                             : kCamerasPerLaunch;
}

static uint32_t batch_pieces(uint64_t camera_points, uint32_t cameras,
                             uint32_t first) {
  return (
      uint32_t)((camera_points * batch_cameras(cameras, first) + kPiece - 1) /
                kPiece);
}

// The update's steps between its marks: mark (0, stream) comes before the
// first, mark (s, stream) after step s: 1 projects and sorts the pieces
// (stage 1), 2 the key starts and lists (2), 3 places (3), 4 the chunk
// scan (4), 5 the chunk starts and unit cut (5 and 6), 6 the unit list (7),
// 7 the chunk plan (8).
constexpr int kGeometryStages = 7;

// The library's marks: none.
struct NoMarks {
  cudaError_t operator()(int, cudaStream_t) const { return cudaSuccess; }
};

// p3dc_bevpool_geometry_compute_cuda() with @mark called between the steps
// (cudaError_t (int step, cudaStream_t)); an error it returns ends the
// update.
template <typename Mark>
static P3dcResult compute_stages(P3dcBevGeometryCuda *geometry,
                                 const P3dcCameraCalib *calib, const Mark &mark,
                                 P3dcCudaStream stream) {
  if (geometry == nullptr || calib == nullptr)
    return P3DC_ERROR_INVALID_ARGUMENT;
  geometry->computed = 0;
  P3dcResult result = p3dc_bevpool_calib_check(&geometry->params, calib);
  if (result != P3DC_OK) return result;

  const P3dcBevPoolParams *params = &geometry->params;
  const uint32_t points = geometry->frustum_points;
  const uint32_t keys = geometry->keys;
  const uint64_t camera_points =
      (uint64_t)params->depth_bins * params->feat_width * params->feat_height;
  uint64_t *const counts = geometry->key_counts;
  cudaError_t err;

  if ((err = mark(0, stream)) != cudaSuccess) return err;
  // Stage 1: every piece sorted, its segments counted by key.
  if ((err = cudaMemsetAsync(counts, 0, ((size_t)keys + 1) * sizeof(*counts),
                             stream)) != cudaSuccess)
    return err;

  PieceArgs args;
  args.grid = geometry->grid;
  args.blocking = geometry->blocking;
  args.keys = keys;
  args.key_bits = geometry->key_bits;
  args.staged = geometry->staged;
  args.segments = reinterpret_cast<uint2 *>(geometry->segments);
  args.piece_segments = geometry->piece_segments;
  args.key_counts = reinterpret_cast<unsigned long long *>(counts);
  args.first_piece = 0;
  args.cursor = geometry->cursor;
  for (uint32_t first = 0; first < params->cameras;
       first += kCamerasPerLaunch) {
    CameraBatch *batch = &args.batch;
    batch->first = first;
    batch->count = batch_cameras(params->cameras, first);
    for (uint32_t i = 0; i < batch->count; i++)
      p3dc_bevpool_camera_derive(&calib[first + i], &batch->cameras[i]);
    const uint32_t pieces = batch_pieces(camera_points, params->cameras, first);
    piece_kernel<<<pieces, kPieceThreads, 0, stream>>>(args);
    if ((err = cudaGetLastError()) != cudaSuccess) return err;
    args.first_piece += pieces;
    args.cursor = nullptr;
  }
  if ((err = mark(1, stream)) != cudaSuccess) return err;

  // Stage 2: each key's first position and list slot, the lists filled.
  const unsigned long long *bases =
      reinterpret_cast<const unsigned long long *>(geometry->key_bases);
  size_t temp_bytes = geometry->temp_bytes;
  err =
      cub::DeviceScan::ExclusiveSum(geometry->temp, temp_bytes, counts,
                                    geometry->key_bases, (int)keys + 1, stream);
  if (err != cudaSuccess) return err;
  const unsigned key_blocks = blocks_for((uint64_t)keys + 1);
  const uint2 *segments = reinterpret_cast<const uint2 *>(geometry->segments);
  uint2 *lists = reinterpret_cast<uint2 *>(geometry->lists);
  list_kernel<<<geometry->pieces, kThreads, 0, stream>>>(
      segments, geometry->piece_segments, bases, keys, points, geometry->cursor,
      lists, geometry->cell_start, geometry->chunk_flags);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  if ((err = mark(2, stream)) != cudaSuccess) return err;

  // Stage 3: the points in key order, with their chunk flags.
  place_kernel<<<geometry->pieces, kPieceThreads, 0, stream>>>(
      segments, geometry->piece_segments, bases, lists, geometry->staged,
      (1u << geometry->grid.col_bits) - 1u, geometry->entries,
      geometry->chunk_flags);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  if ((err = mark(3, stream)) != cudaSuccess) return err;

  // Stage 4: chunk numbers over every sorted position (flags past the kept
  // points are 0).
  temp_bytes = geometry->temp_bytes;
  err = cub::DeviceScan::ExclusiveSum(
      geometry->temp, temp_bytes, geometry->chunk_flags, geometry->chunk_ids,
      (int)points + 1, stream);
  if (err != cudaSuccess) return err;
  if ((err = mark(4, stream)) != cudaSuccess) return err;

  // Stages 5 and 6: enough blocks for the kept points or the key blocks.
  const uint32_t key_tiles = keys / kTileCells;
  unsigned chunk_blocks = blocks_for((uint64_t)points + 1);
  if (chunk_blocks < key_tiles) chunk_blocks = key_tiles;
  chunk_unit_kernel<<<chunk_blocks, kTileCells, 0, stream>>>(
      geometry->chunk_ids, geometry->cell_start, points, keys,
      geometry->schedule.unit_chunks, geometry->schedule.unit_points,
      geometry->chunk_begin, geometry->chunk_start, geometry->unit_flags);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  if ((err = mark(5, stream)) != cudaSuccess) return err;

  temp_bytes = geometry->temp_bytes;
  err = cub::DeviceScan::ExclusiveSum(geometry->temp, temp_bytes,
                                      geometry->unit_flags, geometry->unit_pos,
                                      (int)keys + 1, stream);
  if (err != cudaSuccess) return err;
  unit_list_kernel<<<key_blocks, kThreads, 0, stream>>>(
      geometry->unit_flags, geometry->unit_pos, geometry->cell_start,
      geometry->chunk_start, keys, reinterpret_cast<uint4 *>(geometry->units),
      geometry->unit_count);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  if ((err = mark(6, stream)) != cudaSuccess) return err;

  int device = 0, sms = 0;
  if ((err = cudaGetDevice(&device)) != cudaSuccess) return err;
  if ((err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount,
                                    device)) != cudaSuccess)
    return err;
  // A few blocks per SM: units are ~1,300 on nuScenes, their count is on
  // the device.
  chunk_plan_kernel<<<(unsigned)(sms > 0 ? 8 * sms : 8), kPlanThreads, 0,
                      stream>>>(
      geometry->entries, geometry->chunk_begin,
      reinterpret_cast<const uint4 *>(geometry->units), geometry->unit_count,
      geometry->schedule, (1u << geometry->grid.col_bits) - 1u, geometry->plan);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  if ((err = mark(7, stream)) != cudaSuccess) return err;

  geometry->computed = 1;
  return P3DC_OK;
}

}  // namespace p3dc_bevpool_order

#endif  // P3DC_BEVPOOL_GEOMETRY_STAGES_CUH
