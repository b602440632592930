// bevpool geometry on the device; the reference is bevpool_geometry_cpu.c.
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
#include <cuda_runtime.h>

#include <cstdlib>
#include <cub/cub.cuh>

#include "bevpool-private.h"
#include "bevpool_geometry_order.cuh"

namespace {

using namespace p3dc_bevpool_order;

constexpr unsigned kThreads = 256;
constexpr uint32_t kTileCells = P3DC_BEVPOOL_TILE_CELLS;
static_assert(kTileCells == kThreads,
              "unit_cut_kernel gives each key of a block one thread");

unsigned blocks_for(uint64_t items) {
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
__global__ void __launch_bounds__(kTileCells)
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
__global__ void unit_list_kernel(const uint32_t *flags, const uint32_t *pos,
                                 const uint32_t *cell_start,
                                 const uint32_t *chunk_start, uint32_t keys,
                                 uint4 *units, uint32_t *unit_count) {
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

__global__ void __launch_bounds__(kPlanThreads)
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

uint32_t bit_width(uint64_t value) {
  uint32_t bits = 0;
  while (value != 0) {
    bits++;
    value >>= 1;
  }
  return bits;
}

// The cameras of the launch that starts at camera @first of @cameras, and
// its pieces (bevpool_geometry_order.cuh).
uint32_t batch_cameras(uint32_t cameras, uint32_t first) {
  return cameras - first < kCamerasPerLaunch ? cameras - first
                                             : kCamerasPerLaunch;
}

uint32_t batch_pieces(uint64_t camera_points, uint32_t cameras,
                      uint32_t first) {
  return (
      uint32_t)((camera_points * batch_cameras(cameras, first) + kPiece - 1) /
                kPiece);
}

template <typename T>
cudaError_t alloc(T **ptr, uint64_t count) {
  return cudaMalloc(reinterpret_cast<void **>(ptr),
                    (count > 0 ? count : 1) * sizeof(T));
}

bool schedule_is_valid(const P3dcBevPoolSchedule *s) {
  // unit_chunks <= threads / 4 also keeps it within the plan kernel's
  // 256 threads, one per chunk of a pass.
  return s->threads >= 64 && s->threads <= 1024 && s->threads % 32 == 0 &&
         s->unit_chunks >= 1 && s->unit_chunks <= s->threads / 4 &&
         s->unit_points >= P3DC_BEVPOOL_CHUNK && s->unit_points <= 8192;
}

cudaError_t record(P3dcCudaEvent *events, int index, cudaStream_t stream) {
  if (events == nullptr) return cudaSuccess;
  return cudaEventRecord(events[index], stream);
}

P3dcResult compute(P3dcBevGeometryCuda *geometry, const P3dcCameraCalib *calib,
                   P3dcCudaEvent *events, P3dcCudaStream stream) {
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

  if ((err = record(events, 0, stream)) != cudaSuccess) return err;
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
  if ((err = record(events, 1, stream)) != cudaSuccess) return err;

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
  if ((err = record(events, 2, stream)) != cudaSuccess) return err;

  // Stage 3: the points in key order, with their chunk flags.
  place_kernel<<<geometry->pieces, kPieceThreads, 0, stream>>>(
      segments, geometry->piece_segments, bases, lists, geometry->staged,
      (1u << geometry->grid.col_bits) - 1u, geometry->entries,
      geometry->chunk_flags);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  if ((err = record(events, 3, stream)) != cudaSuccess) return err;

  // Stage 4: chunk numbers over every sorted position (flags past the kept
  // points are 0).
  temp_bytes = geometry->temp_bytes;
  err = cub::DeviceScan::ExclusiveSum(
      geometry->temp, temp_bytes, geometry->chunk_flags, geometry->chunk_ids,
      (int)points + 1, stream);
  if (err != cudaSuccess) return err;
  if ((err = record(events, 4, stream)) != cudaSuccess) return err;

  // Stages 5 and 6: enough blocks for the kept points or the key blocks.
  const uint32_t key_tiles = keys / kTileCells;
  unsigned chunk_blocks = blocks_for((uint64_t)points + 1);
  if (chunk_blocks < key_tiles) chunk_blocks = key_tiles;
  chunk_unit_kernel<<<chunk_blocks, kTileCells, 0, stream>>>(
      geometry->chunk_ids, geometry->cell_start, points, keys,
      geometry->schedule.unit_chunks, geometry->schedule.unit_points,
      geometry->chunk_begin, geometry->chunk_start, geometry->unit_flags);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  if ((err = record(events, 5, stream)) != cudaSuccess) return err;

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
  if ((err = record(events, 6, stream)) != cudaSuccess) return err;

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
  if ((err = record(events, 7, stream)) != cudaSuccess) return err;

  geometry->computed = 1;
  return P3DC_OK;
}

}  // namespace

extern "C" void p3dc_bevpool_geometry_cuda_free(P3dcBevGeometryCuda *geometry) {
  if (geometry == nullptr) return;
  // Errors are ignored: a failed free leaves nothing the caller can do.
  cudaFree(geometry->staged);
  cudaFree(geometry->segments);
  cudaFree(geometry->piece_segments);
  cudaFree(geometry->key_counts);
  cudaFree(geometry->key_bases);
  cudaFree(geometry->cursor);
  cudaFree(geometry->lists);
  cudaFree(geometry->entries);
  cudaFree(geometry->chunk_flags);
  cudaFree(geometry->chunk_ids);
  cudaFree(geometry->cell_start);
  cudaFree(geometry->chunk_start);
  cudaFree(geometry->chunk_begin);
  cudaFree(geometry->unit_flags);
  cudaFree(geometry->unit_pos);
  cudaFree(geometry->units);
  cudaFree(geometry->unit_count);
  cudaFree(geometry->plan);
  cudaFree(geometry->temp);
  free(geometry);
}

extern "C" P3dcResult p3dc_bevpool_geometry_cuda_new_scheduled(
    const P3dcBevPoolParams *params, const P3dcBevPoolSchedule *schedule,
    P3dcBevGeometryCuda **geometry) {
  if (params == nullptr || schedule == nullptr || geometry == nullptr)
    return P3DC_ERROR_INVALID_ARGUMENT;
  *geometry = nullptr;
  if (!schedule_is_valid(schedule)) return P3DC_ERROR_INVALID_ARGUMENT;
  P3dcBevGeometryCuda *self =
      static_cast<P3dcBevGeometryCuda *>(calloc(1, sizeof(*self)));
  if (self == nullptr) return P3DC_ERROR_OUT_OF_MEMORY;
  self->params = *params;
  self->schedule = *schedule;
  P3dcResult result = p3dc_bevpool_params_init(&self->params);
  if (result != P3DC_OK) {
    free(self);
    return result;
  }
  p3dc_bevpool_frustum_grid_init(&self->params, &self->grid);
  const bool xy = self->params.layout == P3DC_BEV_LAYOUT_XY;
  const uint32_t side = P3DC_BEVPOOL_BLOCK_SIDE;
  P3dcBevBlocking *blocking = &self->blocking;
  blocking->rows = xy ? self->params.nx : self->params.ny;
  blocking->cols = xy ? self->params.ny : self->params.nx;
  blocking->block_rows = (blocking->rows + side - 1) / side;
  blocking->block_cols = (blocking->cols + side - 1) / side;
  blocking->nz = self->params.nz;
  const uint64_t keys = (uint64_t)blocking->nz * blocking->block_rows *
                        blocking->block_cols * P3DC_BEVPOOL_TILE_CELLS;
  // Keys, plus the dropped key, plus one, are counted in int by CUB; so are
  // the frustum points plus one.
  if (keys >= 0x7ffffffeu) {
    free(self);
    return P3DC_ERROR_TOO_LARGE;
  }
  self->keys = (uint32_t)keys;
  self->frustum_points = (uint32_t)p3dc_bevpool_depth_size(&self->params);
  self->cells = self->grid.cells;
  // The dropped key is the key count itself, so it needs its bits too.
  self->key_bits = bit_width(self->keys);
  const uint64_t camera_points = self->frustum_points / self->params.cameras;
  for (uint32_t first = 0; first < self->params.cameras;
       first += kCamerasPerLaunch) {
    self->pieces += batch_pieces(camera_points, self->params.cameras, first);
  }

  const uint64_t points = self->frustum_points;
  const uint64_t bounds = (uint64_t)self->keys + 1;
  cudaError_t err = cudaSuccess;
  const uint64_t staging = (uint64_t)self->pieces * kPiece;
  if (err == cudaSuccess) err = alloc(&self->staged, staging);
  if (err == cudaSuccess) err = alloc(&self->segments, 2 * staging);
  if (err == cudaSuccess) err = alloc(&self->piece_segments, self->pieces);
  if (err == cudaSuccess) err = alloc(&self->key_counts, bounds);
  if (err == cudaSuccess) err = alloc(&self->key_bases, bounds);
  if (err == cudaSuccess) err = alloc(&self->cursor, bounds);
  // A segment holds at least one kept point.
  if (err == cudaSuccess) err = alloc(&self->lists, 2 * points);
  if (err == cudaSuccess) err = alloc(&self->entries, points);
  if (err == cudaSuccess) err = alloc(&self->chunk_flags, points + 1);
  if (err == cudaSuccess) err = alloc(&self->chunk_ids, points + 1);
  if (err == cudaSuccess) err = alloc(&self->cell_start, bounds);
  if (err == cudaSuccess) err = alloc(&self->chunk_start, bounds);
  if (err == cudaSuccess) err = alloc(&self->chunk_begin, points + 1);
  if (err == cudaSuccess) err = alloc(&self->unit_flags, bounds);
  if (err == cudaSuccess) err = alloc(&self->unit_pos, bounds);
  // Every unit holds at least one key: at most keys units and the sentinel.
  if (err == cudaSuccess) err = alloc(&self->units, 4 * bounds);
  if (err == cudaSuccess) err = alloc(&self->unit_count, 1);
  // Chunks are at most the kept points.
  if (err == cudaSuccess) err = alloc(&self->plan, 4 * points);

  // CUB's temporary storage, sized once for the largest of its uses.
  size_t key_bytes = 0, chunk_bytes = 0, unit_bytes = 0;
  if (err == cudaSuccess)
    err = cub::DeviceScan::ExclusiveSum(nullptr, key_bytes, self->key_counts,
                                        self->key_bases, (int)bounds);
  if (err == cudaSuccess)
    err = cub::DeviceScan::ExclusiveSum(nullptr, chunk_bytes, self->chunk_flags,
                                        self->chunk_ids, (int)points + 1);
  if (err == cudaSuccess)
    err = cub::DeviceScan::ExclusiveSum(nullptr, unit_bytes, self->unit_flags,
                                        self->unit_pos, (int)bounds);
  if (err == cudaSuccess) {
    self->temp_bytes = key_bytes;
    if (chunk_bytes > self->temp_bytes) self->temp_bytes = chunk_bytes;
    if (unit_bytes > self->temp_bytes) self->temp_bytes = unit_bytes;
    err = cudaMalloc(&self->temp, self->temp_bytes > 0 ? self->temp_bytes : 1);
  }
  if (err != cudaSuccess) {
    p3dc_bevpool_geometry_cuda_free(self);
    return err;
  }
  *geometry = self;
  return P3DC_OK;
}

extern "C" P3dcResult p3dc_bevpool_geometry_cuda_new(
    const P3dcBevPoolParams *params, P3dcBevGeometryCuda **geometry) {
  const P3dcBevPoolSchedule schedule = P3DC_BEVPOOL_SCHEDULE_DEFAULT;
  return p3dc_bevpool_geometry_cuda_new_scheduled(params, &schedule, geometry);
}

extern "C" P3dcResult p3dc_bevpool_geometry_compute_cuda(
    P3dcBevGeometryCuda *geometry, const P3dcCameraCalib *calib,
    P3dcCudaStream stream) {
  return compute(geometry, calib, nullptr, stream);
}

extern "C" P3dcResult p3dc_bevpool_geometry_compute_cuda_timed(
    P3dcBevGeometryCuda *geometry, const P3dcCameraCalib *calib,
    P3dcCudaEvent *events, P3dcCudaStream stream) {
  if (events == nullptr) return P3DC_ERROR_INVALID_ARGUMENT;
  return compute(geometry, calib, events, stream);
}

extern "C" P3dcResult p3dc_bevpool_geometry_cuda_download(
    const P3dcBevGeometryCuda *geometry, P3dcBevGeometry *host,
    P3dcCudaStream stream) {
  if (geometry == nullptr || host == nullptr || !geometry->computed)
    return P3DC_ERROR_INVALID_ARGUMENT;
  const P3dcBevPoolParams *a = &geometry->params, *b = &host->params;
  if (a->cameras != b->cameras || a->depth_bins != b->depth_bins ||
      a->feat_width != b->feat_width || a->feat_height != b->feat_height ||
      a->nx != b->nx || a->ny != b->ny || a->nz != b->nz ||
      a->layout != b->layout)
    return P3DC_ERROR_INVALID_ARGUMENT;

  host->computed = 0;
  // The device's arrays are in key order: fetch its starts per key, then
  // lay the points out again in output-cell order.
  const uint32_t keys = geometry->keys;
  uint32_t *key_start =
      static_cast<uint32_t *>(malloc(((size_t)keys + 1) * sizeof(uint32_t)));
  uint32_t *entries = static_cast<uint32_t *>(
      malloc((size_t)geometry->frustum_points * sizeof(uint32_t)));
  P3dcResult result = P3DC_OK;
  if (key_start == nullptr || entries == nullptr)
    result = P3DC_ERROR_OUT_OF_MEMORY;
  if (result == P3DC_OK)
    result = cudaMemcpyAsync(key_start, geometry->cell_start,
                             ((size_t)keys + 1) * sizeof(uint32_t),
                             cudaMemcpyDeviceToHost, stream);
  if (result == P3DC_OK) result = cudaStreamSynchronize(stream);
  const uint32_t kept = result == P3DC_OK ? key_start[keys] : 0;
  if (kept > geometry->frustum_points) result = P3DC_ERROR_INVALID_ARGUMENT;
  if (result == P3DC_OK)
    result = cudaMemcpyAsync(entries, geometry->entries,
                             (size_t)kept * sizeof(uint32_t),
                             cudaMemcpyDeviceToHost, stream);
  if (result == P3DC_OK) result = cudaStreamSynchronize(stream);

  // Checked as it goes, so that a wrong device geometry is reported, not
  // written past the host arrays.
  uint32_t placed = 0;
  for (uint32_t cell = 0; cell < geometry->cells && result == P3DC_OK; cell++) {
    const uint32_t key = p3dc_bevpool_block_key(&geometry->blocking, cell);
    const uint32_t begin = key_start[key], end = key_start[key + 1];
    if (begin > end || end > kept || end - begin > kept - placed) {
      result = P3DC_ERROR_INVALID_ARGUMENT;
      break;
    }
    host->cell_start[cell] = placed;
    for (uint32_t i = begin; i < end; i++) {
      const uint32_t p =
          p3dc_bevpool_entry_frustum_index(&geometry->grid, entries[i]);
      if (p >= geometry->frustum_points) {
        result = P3DC_ERROR_INVALID_ARGUMENT;
        break;
      }
      host->points[placed++] = p;
    }
  }
  free(key_start);
  free(entries);
  if (result != P3DC_OK) return result;
  host->cell_start[geometry->cells] = placed;
  // Every kept point belongs to a cell of the plane, never to padding.
  if (placed != kept) return P3DC_ERROR_INVALID_ARGUMENT;
  host->kept = placed;
  host->computed = 1;
  return P3DC_OK;
}
