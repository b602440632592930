// bevpool geometry on the device: the workspace, the update and the copy
// back to the host; the update's steps are in bevpool_geometry_stages.cuh.
// The reference is bevpool_geometry_cpu.c.
#include <cuda_runtime.h>

#include <cstdlib>
#include <cub/cub.cuh>

#include "bevpool-private.h"
#include "bevpool_geometry_stages.cuh"

namespace {

using namespace p3dc_bevpool_geometry;

template <typename T>
cudaError_t alloc(T **ptr, uint64_t count) {
  return cudaMalloc(reinterpret_cast<void **>(ptr),
                    (count > 0 ? count : 1) * sizeof(T));
}

// The default room for run sums (bevpool-private.h).
uint32_t default_sum_capacity(const P3dcBevPoolParams *params) {
  const uint64_t columns = (uint64_t)params->cameras * params->feat_width;
  const uint64_t points = p3dc_bevpool_depth_size(params);
  const uint64_t wanted = 2 * columns * params->depth_bins +
                          (uint64_t)params->nx * params->ny * params->nz;
  return (uint32_t)(wanted < points ? wanted : points);
}

// Whether the device's shared memory holds the blocks of @geometry's
// geometry and pooling kernels.
cudaError_t check_shared_memory(const P3dcBevGeometryCuda *geometry,
                                bool *fits) {
  int device = 0, most = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                 device);
  if (err != cudaSuccess) return err;
  const size_t need =
      column_smem(geometry->params.depth_bins, geometry->params.feat_height);
  const size_t pool = p3dc_bevpool_pool_smem(geometry);
  *fits = need <= (size_t)most && pool <= (size_t)most;
  return cudaSuccess;
}

}  // namespace

extern "C" void p3dc_bevpool_geometry_cuda_free(P3dcBevGeometryCuda *geometry) {
  if (geometry == nullptr) return;
  // Errors are ignored: a failed free leaves nothing the caller can do.
  cudaFree(geometry->column_runs);
  cudaFree(geometry->run_cell);
  cudaFree(geometry->run_span);
  cudaFree(geometry->run_slot);
  cudaFree(geometry->cell_count);
  cudaFree(geometry->cell_start);
  cudaFree(geometry->placed);
  cudaFree(geometry->slot_run);
  cudaFree(geometry->column_depth);
  cudaFree(geometry->sums);
  cudaFree(geometry->temp);
  free(geometry);
}

extern "C" P3dcResult p3dc_bevpool_geometry_cuda_new_capacity(
    const P3dcBevPoolParams *params, uint32_t sum_capacity,
    P3dcBevGeometryCuda **geometry) {
  if (params == nullptr || geometry == nullptr)
    return P3DC_ERROR_INVALID_ARGUMENT;
  *geometry = nullptr;
  P3dcBevGeometryCuda *self =
      static_cast<P3dcBevGeometryCuda *>(calloc(1, sizeof(*self)));
  if (self == nullptr) return P3DC_ERROR_OUT_OF_MEMORY;
  self->params = *params;
  P3dcResult result = p3dc_bevpool_params_init(&self->params);
  if (result == P3DC_OK && !p3dc_bevpool_cuda_column_fits(&self->params))
    result = P3DC_ERROR_TOO_LARGE;
  if (result != P3DC_OK) {
    free(self);
    return result;
  }
  p3dc_bevpool_frustum_grid_init(&self->params, &self->grid);
  self->frustum_points = (uint32_t)p3dc_bevpool_depth_size(&self->params);
  self->cells = self->grid.cells;
  self->columns = self->params.cameras * self->params.feat_width;
  self->column_points = self->params.depth_bins * self->params.feat_height;
  self->bins_padded = (self->params.depth_bins + 3) / 4 * 4;
  self->channels_padded = (self->params.channels + 3) / 4 * 4;
  self->sum_capacity =
      sum_capacity < self->frustum_points ? sum_capacity : self->frustum_points;

  const uint64_t points = self->frustum_points;
  const uint64_t bounds = (uint64_t)self->cells + 1;
  bool fits = false;
  cudaError_t err = check_shared_memory(self, &fits);
  if (err == cudaSuccess && !fits) {
    free(self);
    return P3DC_ERROR_TOO_LARGE;
  }
  if (err == cudaSuccess) err = alloc(&self->column_runs, self->columns);
  // A column has at most one run per point: ids are frustum positions.
  if (err == cudaSuccess) err = alloc(&self->run_cell, points);
  if (err == cudaSuccess) err = alloc(&self->run_span, 2 * points);
  if (err == cudaSuccess) err = alloc(&self->run_slot, points);
  // The cursors follow the counts, so that one memset clears both.
  if (err == cudaSuccess) err = alloc(&self->cell_count, 2 * bounds);
  if (err == cudaSuccess) self->cursor = self->cell_count + bounds;
  if (err == cudaSuccess) err = alloc(&self->cell_start, bounds);
  if (err == cudaSuccess) err = alloc(&self->placed, points);
  if (err == cudaSuccess) err = alloc(&self->slot_run, points);
  if (err == cudaSuccess)
    err = alloc(
        &self->column_depth,
        (uint64_t)self->columns * self->params.feat_height * self->bins_padded);
  if (err == cudaSuccess)
    err = alloc(&self->sums,
                (uint64_t)self->sum_capacity * self->channels_padded);
  if (err == cudaSuccess)
    err = cub::DeviceScan::ExclusiveSum(nullptr, self->temp_bytes,
                                        self->cell_count, self->cell_start,
                                        (int)bounds);
  if (err == cudaSuccess)
    err = cudaMalloc(&self->temp, self->temp_bytes > 0 ? self->temp_bytes : 1);
  bool chain = false;
  if (err == cudaSuccess) err = p3dc_launch_dependent_supported(&chain);
  self->can_chain = chain;
  if (err != cudaSuccess) {
    p3dc_bevpool_geometry_cuda_free(self);
    return err;
  }
  *geometry = self;
  return P3DC_OK;
}

extern "C" P3dcResult p3dc_bevpool_geometry_cuda_new(
    const P3dcBevPoolParams *params, P3dcBevGeometryCuda **geometry) {
  P3dcBevPoolParams checked;
  if (params == nullptr) return P3DC_ERROR_INVALID_ARGUMENT;
  checked = *params;
  const P3dcResult result = p3dc_bevpool_params_init(&checked);
  if (result != P3DC_OK) {
    if (geometry != nullptr) *geometry = nullptr;
    return result;
  }
  return p3dc_bevpool_geometry_cuda_new_capacity(
      params, default_sum_capacity(&checked), geometry);
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
  // The device holds runs by slot: fetch the cells' first slots, the runs
  // of every slot and their spans, then lay their points out again.
  const uint32_t cells = geometry->cells, points = geometry->frustum_points;
  uint32_t *cell_start =
      static_cast<uint32_t *>(malloc(((size_t)cells + 1) * sizeof(uint32_t)));
  uint32_t *slot_run =
      static_cast<uint32_t *>(malloc((size_t)points * sizeof(uint32_t)));
  uint32_t *span =
      static_cast<uint32_t *>(malloc(2 * (size_t)points * sizeof(uint32_t)));
  P3dcResult result = P3DC_OK;
  if (cell_start == nullptr || slot_run == nullptr || span == nullptr)
    result = P3DC_ERROR_OUT_OF_MEMORY;
  if (result == P3DC_OK)
    result = cudaMemcpyAsync(cell_start, geometry->cell_start,
                             ((size_t)cells + 1) * sizeof(uint32_t),
                             cudaMemcpyDeviceToHost, stream);
  if (result == P3DC_OK) result = cudaStreamSynchronize(stream);
  const uint32_t runs = result == P3DC_OK ? cell_start[cells] : 0;
  if (runs > points) result = P3DC_ERROR_INVALID_ARGUMENT;
  if (result == P3DC_OK)
    result = cudaMemcpyAsync(slot_run, geometry->slot_run,
                             (size_t)runs * sizeof(uint32_t),
                             cudaMemcpyDeviceToHost, stream);
  if (result == P3DC_OK)
    result = cudaMemcpyAsync(span, geometry->run_span,
                             2 * (size_t)points * sizeof(uint32_t),
                             cudaMemcpyDeviceToHost, stream);
  if (result == P3DC_OK) result = cudaStreamSynchronize(stream);

  // Checked as it goes, so that a wrong device geometry is reported, not
  // written past the host arrays.
  const uint32_t fw = a->feat_width, fh = a->feat_height;
  const uint32_t column_points = geometry->column_points;
  uint32_t placed = 0;
  for (uint32_t cell = 0; cell < cells && result == P3DC_OK; cell++) {
    const uint32_t begin = cell_start[cell], end = cell_start[cell + 1];
    if (begin > end || end > runs) {
      result = P3DC_ERROR_INVALID_ARGUMENT;
      break;
    }
    host->cell_start[cell] = placed;
    for (uint32_t slot = begin; slot < end && result == P3DC_OK; slot++) {
      const uint32_t id = slot_run[slot];
      const uint32_t column = id / column_points;
      const uint32_t first = span[2 * (size_t)id];
      const uint32_t v0 = span[2 * (size_t)id + 1] >> 16;
      const uint32_t rows = span[2 * (size_t)id + 1] & 0xffffu;
      const uint32_t d = first / fh;
      if (id >= points || d >= a->depth_bins || first - d * fh != v0 ||
          rows == 0 || v0 + rows > fh || rows > points - placed) {
        result = P3DC_ERROR_INVALID_ARGUMENT;
        break;
      }
      const uint32_t camera = column / fw, u = column - camera * fw;
      for (uint32_t k = 0; k < rows; k++)
        host->points[placed++] =
            ((camera * a->depth_bins + d) * fh + v0 + k) * fw + u;
    }
  }
  free(cell_start);
  free(slot_run);
  free(span);
  if (result != P3DC_OK) return result;
  host->cell_start[cells] = placed;
  host->kept = placed;
  host->computed = 1;
  return P3DC_OK;
}
