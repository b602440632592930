// bevpool geometry on the device: project every frustum point (the float64
// arithmetic of bevpool-private.h, shared with the reference), sort the
// points by cell with CUB (cells ordered by their block key, see
// bevpool-private.h), then find each cell's points, its chunks and the
// pooling tiles.  Everything is queued on the caller's stream; no count
// ever comes back to the host.  The reference is bevpool_geometry_cpu.c.
#include <cuda_runtime.h>

#include <cstdlib>
#include <cub/cub.cuh>

#include "bevpool-private.h"

namespace {

constexpr unsigned kThreads = 256;
// Cameras whose constants travel in one launch's parameters (8 x 192 bytes
// stays well inside the 4 KB parameter space), so no host buffer has to
// outlive the call.
constexpr uint32_t kCamerasPerLaunch = 8;

struct CameraBatch {
  P3dBevCamera cameras[kCamerasPerLaunch];
  uint32_t first;
  uint32_t count;
};

unsigned blocks_for(uint64_t items) {
  uint64_t blocks = (items + kThreads - 1) / kThreads;
  if (blocks < 1) blocks = 1;
  // A grid-stride loop covers the rest.
  return blocks > 65535 * 16 ? 65535 * 16 : (unsigned)blocks;
}

// keys[p]: the block key of frustum point p's cell (key_count when
// dropped); entries[p]: its packed feature row and depth offset.
__global__ void project_kernel(const P3dBevFrustumGrid grid,
                               const P3dBevBlocking blocking,
                               const CameraBatch batch, uint32_t key_count,
                               uint32_t row_bits, uint32_t *keys,
                               uint32_t *entries) {
  const uint32_t pixels = grid.feat_width * grid.feat_height;
  const uint32_t camera_points = grid.depth_bins * pixels;
  const uint32_t total = batch.count * camera_points;
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    const uint32_t local = i / camera_points;
    const uint32_t rest = i - local * camera_points;
    const uint32_t d = rest / pixels;
    const uint32_t pixel = rest - d * pixels;
    const uint32_t v = pixel / grid.feat_width;
    const uint32_t u = pixel - v * grid.feat_width;
    const uint32_t camera = batch.first + local;
    const uint32_t p = camera * camera_points + rest;
    const uint32_t cell =
        p3d_bevpool_point_cell(&grid, &batch.cameras[local], u, v, d);
    keys[p] =
        cell < grid.cells ? p3d_bevpool_block_key(&blocking, cell) : key_count;
    entries[p] = p3d_bevpool_entry_pack(
        camera * pixels + pixel, camera * (grid.depth_bins - 1) + d, row_bits);
  }
}

// The number of sorted keys below @key.
__device__ uint32_t lower_bound(const uint32_t *keys, uint32_t count,
                                uint32_t key) {
  uint32_t lo = 0, hi = count;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// cell_start[k] for k <= keys (the last is the kept count, since dropped
// points carry key == keys), and the chunk count of every key.
__global__ void cell_bounds_kernel(const uint32_t *sorted_keys, uint32_t points,
                                   uint32_t keys, uint32_t *cell_start,
                                   uint32_t *chunk_counts) {
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k <= keys;
       k += stride) {
    const uint32_t begin = lower_bound(sorted_keys, points, k);
    cell_start[k] = begin;
    if (k < keys) {
      const uint32_t end = lower_bound(sorted_keys, points, k + 1);
      chunk_counts[k] =
          (end - begin + P3D_BEVPOOL_CHUNK - 1) / P3D_BEVPOOL_CHUNK;
    } else {
      chunk_counts[k] = 0;
    }
  }
}

// A tile starts every P3D_BEVPOOL_TILE_CELLS keys (a block of the plane) and
// wherever the chunk count crosses a multiple of P3D_BEVPOOL_ROUND_CHUNKS.
__global__ void tile_flags_kernel(const uint32_t *chunk_start, uint32_t keys,
                                  uint32_t *flags) {
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k <= keys;
       k += stride) {
    uint32_t flag = 0;
    if (k < keys)
      flag = k % P3D_BEVPOOL_TILE_CELLS == 0 ||
             chunk_start[k] / P3D_BEVPOOL_ROUND_CHUNKS !=
                 chunk_start[k - 1] / P3D_BEVPOOL_ROUND_CHUNKS;
    flags[k] = flag;
  }
}

// tile_first_cell[t] for every tile, the sentinel (the key count) after the
// last, and the tile count.  tile_pos is the exclusive sum of the flags.
__global__ void tile_scatter_kernel(const uint32_t *flags,
                                    const uint32_t *tile_pos, uint32_t keys,
                                    uint32_t max_tiles,
                                    uint32_t *tile_first_cell,
                                    uint32_t *tile_count) {
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k <= keys;
       k += stride) {
    const uint32_t pos = tile_pos[k];
    // pos <= max_tiles by construction (see max_tiles_for); checked anyway
    // so a mistake there cannot write out of bounds.
    if (pos > max_tiles) continue;
    if (k == keys) {
      tile_first_cell[pos] = keys;
      *tile_count = pos;
    } else if (flags[k]) {
      tile_first_cell[pos] = k;
    }
  }
}

// Tiles start at multiples of the tile size (ceil (keys / size) of them)
// and where floor (chunk_start / round) changes, which it does at most
// chunks / round times; chunks <= points / chunk + non-empty keys.
uint32_t max_tiles_for(uint64_t keys, uint64_t points) {
  uint64_t nonempty = keys < points ? keys : points;
  uint64_t chunks =
      (points + P3D_BEVPOOL_CHUNK - 1) / P3D_BEVPOOL_CHUNK + nonempty;
  uint64_t tiles =
      (keys + P3D_BEVPOOL_TILE_CELLS - 1) / P3D_BEVPOOL_TILE_CELLS +
      chunks / P3D_BEVPOOL_ROUND_CHUNKS + 1;
  return tiles > 0x7fffffffu ? 0x7fffffffu : (uint32_t)tiles;
}

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

}  // namespace

extern "C" void p3d_bevpool_geometry_cuda_free(P3dBevGeometryCuda *geometry) {
  if (geometry == nullptr) return;
  // Errors are ignored: a failed free leaves nothing the caller can do.
  cudaFree(geometry->keys_in);
  cudaFree(geometry->keys_out);
  cudaFree(geometry->entries_in);
  cudaFree(geometry->entries_out);
  cudaFree(geometry->cell_start);
  cudaFree(geometry->chunk_start);
  cudaFree(geometry->scan_in);
  cudaFree(geometry->tile_pos);
  cudaFree(geometry->tile_first_cell);
  cudaFree(geometry->tile_count);
  cudaFree(geometry->temp);
  free(geometry);
}

extern "C" P3dResult p3d_bevpool_geometry_cuda_new(
    const P3dBevPoolParams *params, P3dBevGeometryCuda **geometry) {
  if (params == nullptr || geometry == nullptr)
    return P3D_ERROR_INVALID_ARGUMENT;
  *geometry = nullptr;
  P3dBevGeometryCuda *self =
      static_cast<P3dBevGeometryCuda *>(calloc(1, sizeof(*self)));
  if (self == nullptr) return P3D_ERROR_OUT_OF_MEMORY;
  self->params = *params;
  P3dResult result = p3d_bevpool_params_init(&self->params);
  if (result != P3D_OK) {
    free(self);
    return result;
  }
  p3d_bevpool_frustum_grid_init(&self->params, &self->grid);
  const bool xy = self->params.layout == P3D_BEV_LAYOUT_XY;
  const uint32_t side = P3D_BEVPOOL_BLOCK_SIDE;
  P3dBevBlocking *blocking = &self->blocking;
  blocking->rows = xy ? self->params.nx : self->params.ny;
  blocking->cols = xy ? self->params.ny : self->params.nx;
  blocking->block_rows = (blocking->rows + side - 1) / side;
  blocking->block_cols = (blocking->cols + side - 1) / side;
  blocking->nz = self->params.nz;
  const uint64_t keys = (uint64_t)blocking->nz * blocking->block_rows *
                        blocking->block_cols * P3D_BEVPOOL_TILE_CELLS;
  // Keys, plus the dropped key, plus one, are counted in int by CUB.
  if (keys >= 0x7ffffffeu) {
    free(self);
    return P3D_ERROR_TOO_LARGE;
  }
  self->keys = (uint32_t)keys;
  self->frustum_points = (uint32_t)p3d_bevpool_depth_size(&self->params);
  self->cells = self->grid.cells;
  self->row_bits = p3d_bevpool_row_bits(&self->params);
  // The dropped key is the key count itself, so it needs its bits too.
  self->key_bits = bit_width(self->keys);
  self->max_tiles = max_tiles_for(self->keys, self->frustum_points);

  const uint64_t points = self->frustum_points;
  const uint64_t bounds = (uint64_t)self->keys + 1;
  cudaError_t err = cudaSuccess;
  if (err == cudaSuccess) err = alloc(&self->keys_in, points);
  if (err == cudaSuccess) err = alloc(&self->keys_out, points);
  if (err == cudaSuccess) err = alloc(&self->entries_in, points);
  if (err == cudaSuccess) err = alloc(&self->entries_out, points);
  if (err == cudaSuccess) err = alloc(&self->cell_start, bounds);
  if (err == cudaSuccess) err = alloc(&self->chunk_start, bounds);
  if (err == cudaSuccess) err = alloc(&self->scan_in, bounds);
  if (err == cudaSuccess) err = alloc(&self->tile_pos, bounds);
  if (err == cudaSuccess)
    err = alloc(&self->tile_first_cell, (uint64_t)self->max_tiles + 1);
  if (err == cudaSuccess) err = alloc(&self->tile_count, 1);

  // CUB's temporary storage, sized once for the largest of its uses.
  size_t sort_bytes = 0, scan_bytes = 0;
  if (err == cudaSuccess)
    err = cub::DeviceRadixSort::SortPairs(
        nullptr, sort_bytes, self->keys_in, self->keys_out, self->entries_in,
        self->entries_out, (int)points, 0, (int)self->key_bits);
  if (err == cudaSuccess)
    err = cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, self->scan_in,
                                        self->chunk_start, (int)bounds);
  if (err == cudaSuccess) {
    self->temp_bytes = sort_bytes > scan_bytes ? sort_bytes : scan_bytes;
    err = cudaMalloc(&self->temp, self->temp_bytes > 0 ? self->temp_bytes : 1);
  }
  if (err != cudaSuccess) {
    p3d_bevpool_geometry_cuda_free(self);
    return err;
  }
  *geometry = self;
  return P3D_OK;
}

extern "C" P3dResult p3d_bevpool_geometry_compute_cuda(
    P3dBevGeometryCuda *geometry, const P3dCameraCalib *calib,
    P3dCudaStream stream) {
  if (geometry == nullptr || calib == nullptr)
    return P3D_ERROR_INVALID_ARGUMENT;
  geometry->computed = 0;
  P3dResult result = p3d_bevpool_calib_check(&geometry->params, calib);
  if (result != P3D_OK) return result;

  const P3dBevPoolParams *params = &geometry->params;
  const uint32_t points = geometry->frustum_points;
  const uint32_t keys = geometry->keys;
  const uint64_t camera_points =
      (uint64_t)params->depth_bins * params->feat_width * params->feat_height;
  cudaError_t err;

  for (uint32_t first = 0; first < params->cameras;
       first += kCamerasPerLaunch) {
    CameraBatch batch;
    batch.first = first;
    batch.count = params->cameras - first < kCamerasPerLaunch
                      ? params->cameras - first
                      : kCamerasPerLaunch;
    for (uint32_t i = 0; i < batch.count; i++)
      p3d_bevpool_camera_derive(&calib[first + i], &batch.cameras[i]);
    project_kernel<<<blocks_for(batch.count * camera_points), kThreads, 0,
                     stream>>>(geometry->grid, geometry->blocking, batch, keys,
                               geometry->row_bits, geometry->keys_in,
                               geometry->entries_in);
    if ((err = cudaGetLastError()) != cudaSuccess) return err;
  }

  // Radix sort is stable: within a cell, points stay in frustum order.
  size_t temp_bytes = geometry->temp_bytes;
  err = cub::DeviceRadixSort::SortPairs(
      geometry->temp, temp_bytes, geometry->keys_in, geometry->keys_out,
      geometry->entries_in, geometry->entries_out, (int)points, 0,
      (int)geometry->key_bits, stream);
  if (err != cudaSuccess) return err;

  const unsigned bound_blocks = blocks_for((uint64_t)keys + 1);
  cell_bounds_kernel<<<bound_blocks, kThreads, 0, stream>>>(
      geometry->keys_out, points, keys, geometry->cell_start,
      geometry->scan_in);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;

  temp_bytes = geometry->temp_bytes;
  err = cub::DeviceScan::ExclusiveSum(geometry->temp, temp_bytes,
                                      geometry->scan_in, geometry->chunk_start,
                                      (int)keys + 1, stream);
  if (err != cudaSuccess) return err;

  tile_flags_kernel<<<bound_blocks, kThreads, 0, stream>>>(
      geometry->chunk_start, keys, geometry->scan_in);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;

  temp_bytes = geometry->temp_bytes;
  err = cub::DeviceScan::ExclusiveSum(geometry->temp, temp_bytes,
                                      geometry->scan_in, geometry->tile_pos,
                                      (int)keys + 1, stream);
  if (err != cudaSuccess) return err;

  tile_scatter_kernel<<<bound_blocks, kThreads, 0, stream>>>(
      geometry->scan_in, geometry->tile_pos, keys, geometry->max_tiles,
      geometry->tile_first_cell, geometry->tile_count);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;

  geometry->computed = 1;
  return P3D_OK;
}

extern "C" P3dResult p3d_bevpool_geometry_cuda_download(
    const P3dBevGeometryCuda *geometry, P3dBevGeometry *host,
    P3dCudaStream stream) {
  if (geometry == nullptr || host == nullptr || !geometry->computed)
    return P3D_ERROR_INVALID_ARGUMENT;
  const P3dBevPoolParams *a = &geometry->params, *b = &host->params;
  if (a->cameras != b->cameras || a->depth_bins != b->depth_bins ||
      a->feat_width != b->feat_width || a->feat_height != b->feat_height ||
      a->nx != b->nx || a->ny != b->ny || a->nz != b->nz ||
      a->layout != b->layout)
    return P3D_ERROR_INVALID_ARGUMENT;

  host->computed = 0;
  // The device's arrays are in key order: fetch its starts per key, then
  // lay the points out again in output-cell order.
  const uint32_t keys = geometry->keys;
  uint32_t *key_start =
      static_cast<uint32_t *>(malloc(((size_t)keys + 1) * sizeof(uint32_t)));
  uint32_t *entries = static_cast<uint32_t *>(
      malloc((size_t)geometry->frustum_points * sizeof(uint32_t)));
  P3dResult result = P3D_OK;
  if (key_start == nullptr || entries == nullptr)
    result = P3D_ERROR_OUT_OF_MEMORY;
  if (result == P3D_OK)
    result = cudaMemcpyAsync(key_start, geometry->cell_start,
                             ((size_t)keys + 1) * sizeof(uint32_t),
                             cudaMemcpyDeviceToHost, stream);
  if (result == P3D_OK) result = cudaStreamSynchronize(stream);
  const uint32_t kept = result == P3D_OK ? key_start[keys] : 0;
  if (kept > geometry->frustum_points) result = P3D_ERROR_INVALID_ARGUMENT;
  if (result == P3D_OK)
    result = cudaMemcpyAsync(entries, geometry->entries_out,
                             (size_t)kept * sizeof(uint32_t),
                             cudaMemcpyDeviceToHost, stream);
  if (result == P3D_OK) result = cudaStreamSynchronize(stream);

  // Checked as it goes, so that a wrong device geometry is reported, not
  // written past the host arrays.
  const uint32_t pixels = a->feat_width * a->feat_height;
  uint32_t placed = 0;
  for (uint32_t cell = 0; cell < geometry->cells && result == P3D_OK; cell++) {
    const uint32_t key = p3d_bevpool_block_key(&geometry->blocking, cell);
    const uint32_t begin = key_start[key], end = key_start[key + 1];
    if (begin > end || end > kept || end - begin > kept - placed) {
      result = P3D_ERROR_INVALID_ARGUMENT;
      break;
    }
    host->cell_start[cell] = placed;
    for (uint32_t i = begin; i < end; i++)
      host->points[placed++] = p3d_bevpool_entry_depth_offset(
          entries[i], geometry->row_bits, pixels);
  }
  free(key_start);
  free(entries);
  if (result != P3D_OK) return result;
  host->cell_start[geometry->cells] = placed;
  // Every kept point belongs to a cell of the plane, never to padding.
  if (placed != kept) return P3D_ERROR_INVALID_ARGUMENT;
  host->kept = placed;
  host->computed = 1;
  return P3D_OK;
}
