// bevpool geometry on the device: the workspace, the update and the copy
// back to the host; the update's stages are in bevpool_geometry_stages.cuh.
// The reference is bevpool_geometry_cpu.c.
#include <cuda_runtime.h>

#include <cstdlib>
#include <cub/cub.cuh>

#include "bevpool-private.h"
#include "bevpool_geometry_stages.cuh"

namespace {

using namespace p3dc_bevpool_order;

uint32_t bit_width(uint64_t value) {
  uint32_t bits = 0;
  while (value != 0) {
    bits++;
    value >>= 1;
  }
  return bits;
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
  return compute_stages(geometry, calib, NoMarks(), stream);
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
