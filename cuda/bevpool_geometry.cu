// bevpool geometry on the device: the workspace, the update and the copy
// back to the host; the update's steps are in bevpool_geometry_stages.cuh.
// The reference is bevpool_geometry_cpu.c.
#include <cuda_runtime.h>

#include <cstdlib>
#include <cub/cub.cuh>

#include "bevpool-private.h"
#include "bevpool_geometry_stages.cuh"

// The update as one CUDA graph: a call costs the host one graph launch,
// and a parameter update of the column kernel's nodes where the
// calibration changed, instead of a launch a step (a few microseconds of
// the host's time each, while the device waits: docs/performance.md,
// "The floor of a call").  The column kernels, CUB's scan (captured into
// a child graph), place and rank, the edge between the last two
// programmatic where the device has such edges.
struct P3dcBevGeometryGraph {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaGraphNode_t *columns;  // the column kernel's node of each batch
  p3dc_bevpool_geometry::ColumnArgs *held;  // the arguments they hold
  p3dc_bevpool_geometry::ColumnArgs *next;  // a call's
};

namespace {

using namespace p3dc_bevpool_geometry;

void destroy_graph(P3dcBevGeometryGraph *g) {
  if (g == nullptr) return;
  if (g->exec != nullptr) cudaGraphExecDestroy(g->exec);
  if (g->graph != nullptr) cudaGraphDestroy(g->graph);
  free(g->columns);
  free(g->held);
  free(g->next);
  free(g);
}

// CUB's scan (step 2) captured into a graph of its own, on a stream of
// its own.
cudaError_t capture_scan(const P3dcBevGeometryCuda *geometry,
                         cudaGraph_t *scan) {
  cudaStream_t stream = nullptr;
  cudaError_t err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (err != cudaSuccess) return err;
  err = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (err == cudaSuccess) {
    const cudaError_t queued = enqueue_scan(geometry, stream);
    // the capture always ends, whatever happened inside it
    err = cudaStreamEndCapture(stream, scan);
    if (err == cudaSuccess && queued != cudaSuccess) {
      cudaGraphDestroy(*scan);
      *scan = nullptr;
      err = queued;
    }
  }
  cudaStreamDestroy(stream);
  return err;
}

// @geometry's update graph, its column nodes holding placeholder
// arguments (no cameras) until a call sets them.
cudaError_t build_graph(P3dcBevGeometryCuda *geometry, bool programmatic,
                        P3dcBevGeometryGraph **out) {
  const uint32_t batches = column_batches(&geometry->params);
  P3dcBevGeometryGraph *g =
      static_cast<P3dcBevGeometryGraph *>(calloc(1, sizeof(*g)));
  if (g == nullptr) return cudaErrorMemoryAllocation;
  g->columns =
      static_cast<cudaGraphNode_t *>(calloc(batches, sizeof(cudaGraphNode_t)));
  g->held = static_cast<ColumnArgs *>(malloc(batches * sizeof(ColumnArgs)));
  g->next = static_cast<ColumnArgs *>(malloc(batches * sizeof(ColumnArgs)));
  if (g->columns == nullptr || g->held == nullptr || g->next == nullptr) {
    destroy_graph(g);
    return cudaErrorMemoryAllocation;
  }
  UpdateArgs u;
  u.batches = g->held;
  column_args(geometry, nullptr, u.batches);
  step_args(geometry, &u);

  cudaKernelNodeParams p;
  void *arg[1];
  cudaGraph_t scan = nullptr;
  cudaGraphNode_t scan_node = nullptr, place_node = nullptr,
                  rank_node = nullptr;
  cudaError_t err = cudaSuccess;
  // a kernel node's shared memory must be allowed when it is added
  if (column_smem(geometry->params.depth_bins, geometry->params.feat_height) >
      48 * 1024)
    err = p3dc_allow_largest_smem(column_kernel);
  if (err == cudaSuccess) err = cudaGraphCreate(&g->graph, 0);
  for (uint32_t b = 0; b < batches && err == cudaSuccess; b++) {
    step_launch(geometry, &u, b, &p, arg);
    err = cudaGraphAddKernelNode(&g->columns[b], g->graph, nullptr, 0, &p);
  }
  if (err == cudaSuccess) err = capture_scan(geometry, &scan);
  if (err == cudaSuccess)
    err = cudaGraphAddChildGraphNode(&scan_node, g->graph, g->columns, batches,
                                     scan);
  if (scan != nullptr) cudaGraphDestroy(scan);  // the node holds a copy
  if (err == cudaSuccess) {
    step_launch(geometry, &u, batches, &p, arg);
    err = cudaGraphAddKernelNode(&place_node, g->graph, &scan_node, 1, &p);
  }
  if (err == cudaSuccess) {
    step_launch(geometry, &u, batches + 1, &p, arg);
    err = cudaGraphAddKernelNode(&rank_node, g->graph, nullptr, 0, &p);
  }
  if (err == cudaSuccess) {
    cudaGraphEdgeData edge;
    memset(&edge, 0, sizeof edge);
    edge.from_port = cudaGraphKernelNodePortProgrammatic;
    edge.type = cudaGraphDependencyTypeProgrammatic;
    err = cudaGraphAddDependencies(g->graph, &place_node, &rank_node,
                                   programmatic ? &edge : nullptr, 1);
  }
  if (err == cudaSuccess) err = cudaGraphInstantiate(&g->exec, g->graph, 0);
  if (err != cudaSuccess) {
    destroy_graph(g);
    return err;
  }
  *out = g;
  return cudaSuccess;
}

// The update graph with a programmatic edge where the device and the
// driver take one in a graph, with plain edges otherwise.  A failure is
// returned, and not left behind for the next call's cudaGetLastError().
cudaError_t setup_graph(P3dcBevGeometryCuda *geometry) {
  if (geometry->can_chain &&
      build_graph(geometry, true, &geometry->update_graph) == cudaSuccess)
    return cudaSuccess;
  cudaGetLastError();  // the programmatic build's failure, if any
  const cudaError_t err = build_graph(geometry, false, &geometry->update_graph);
  if (err != cudaSuccess) cudaGetLastError();
  return err;
}

// Launches the update graph with @batches' column arguments: only the
// column nodes whose arguments changed since the last launch are set (a
// host-side patch of the executable graph; launches already queued keep
// theirs).
cudaError_t launch_graph(const P3dcBevGeometryCuda *geometry,
                         P3dcBevGeometryGraph *g, cudaStream_t stream) {
  UpdateArgs u;
  u.batches = g->next;
  step_args(geometry, &u);
  for (uint32_t b = 0; b < column_batches(&geometry->params); b++) {
    if (memcmp(static_cast<const void *>(&g->next[b]),
               static_cast<const void *>(&g->held[b]), sizeof(ColumnArgs)) == 0)
      continue;
    cudaKernelNodeParams p;
    void *arg[1];
    step_launch(geometry, &u, b, &p, arg);
    const cudaError_t err =
        cudaGraphExecKernelNodeSetParams(g->exec, g->columns[b], &p);
    if (err != cudaSuccess) return err;
    memcpy(static_cast<void *>(&g->held[b]),
           static_cast<const void *>(&g->next[b]), sizeof(ColumnArgs));
  }
  return cudaGraphLaunch(g->exec, stream);
}

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
  destroy_graph(geometry->update_graph);
  p3dc_bevpool_pool_graphs_free(geometry->pool_graphs);
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
  if (err == cudaSuccess) err = setup_graph(self);
  if (err == cudaSuccess)
    err = (cudaError_t)p3dc_bevpool_pool_graphs_new(self, &self->pool_graphs);
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
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (geometry == nullptr) return P3DC_ERROR_INVALID_ARGUMENT;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaError_t err = cudaStreamIsCapturing(s, &capture);
  if (err != cudaSuccess) {
    cudaGetLastError();  // returned, not left for a later call
    return err;
  }
  if (capture != cudaStreamCaptureStatusNone) {
    // Inside a capture of the caller's the steps are queued as plain
    // launches, which the capture records (as voxelize.cu does).  Nothing
    // runs now, and the caller's graph may run at any later time: it
    // clears the counts itself, and what is known of them here stays as
    // it was.  The geometry's own graph is left as it is.
    const int clear = geometry->counts_clear;
    geometry->counts_clear = 0;
    P3dcResult result = begin_update(geometry, calib, s);
    geometry->counts_clear = clear;
    if (result != P3DC_OK) return result;
    UpdateArgs u;
    u.batches = geometry->update_graph->next;
    column_args(geometry, calib, u.batches);
    step_args(geometry, &u);
    err = enqueue_steps(geometry, &u, false, NoMarks(), s);
  } else {
    P3dcResult result = begin_update(geometry, calib, s);
    if (result != P3DC_OK) return result;
    column_args(geometry, calib, geometry->update_graph->next);
    err = launch_graph(geometry, geometry->update_graph, s);
    if (err == cudaSuccess) geometry->counts_clear = 1;
  }
  if (err != cudaSuccess) {
    cudaGetLastError();  // returned, not left for a later call
    return err;
  }
  geometry->computed = 1;
  return P3DC_OK;
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
