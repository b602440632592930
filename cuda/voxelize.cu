// Voxelization on the device: the workspace and the per-frame launch.  The
// kernels are in voxelize_{cells,scan,gather}.cuh (voxelize_common.cuh says
// how they fit together); the reference is voxelize_cpu.c.
//
// A frame, of any number of points, is one launch of a graph of the three
// kernels (kernel_graph.cuh), built with the voxelizer: one host call and
// one submission instead of three, with programmatic edges between the
// kernels where the device has them (launch.cuh's rule: the scan and the
// gather may be scheduled while the kernel before them drains).  What that
// saves against three stream launches is the host's launch cost
// (docs/performance.md).  The graph's nodes are set again only when their
// launches change (other inputs or outputs, another point count, arrays
// that grew).  The graph keeps one executable form: its launches hold the
// frame's point count, so a frame seldom finds the launches of one a few
// frames back, which more forms would keep (kernel_graph.cuh).  A full
// write (output_clean = 0) needs no memset: the gather zeros the rows.
//
// At the sizes of real frames (20k to 300k points) the time is latency, not
// bytes: a 271k-point frame moves about 15 MB, 5 us at HBM speed, so the
// kernels are few passes with one dependency each rather than a chain of
// library calls.
#include <cuda_runtime.h>
#include <stdlib.h>

#include "kernel_graph.cuh"
#include "launch.cuh"
#include "voxelize.h"
#include "voxelize_cells.cuh"
#include "voxelize_gather.cuh"
#include "voxelize_scan.cuh"

namespace p3dc_voxelize {

// Grids of up to this many cells get a dense table (16 bytes a cell, 32 MiB
// at most); larger ones a hash table of at least twice the points.
constexpr uint64_t kDenseMaxCells = uint64_t(1) << 21;
constexpr size_t kDefaultPointCapacity = size_t(1) << 17;
constexpr uint32_t kMinHashBits = 10;
constexpr uint32_t kMaxHashBits = 31;
constexpr unsigned kResetThreads = 256;
constexpr unsigned kResetMaxBlocks = 4096;

static __global__ void reset_entries_kernel(CellEntry *entries, size_t count) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += stride)
    reinterpret_cast<uint4 *>(entries)[i] = make_uint4(0u, kNone, kNone, kNone);
}

static size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }

// The three kernels of a frame and their grids.  Built in memory zeroed
// first, so that two frames with the same arguments compare equal byte for
// byte (padding included).
struct FrameLaunch {
  CellsArgs cells;
  ScanArgs scan;
  GatherArgs gather;
  unsigned cells_blocks;
  unsigned scan_blocks;
  unsigned gather_blocks;
};

}  // namespace p3dc_voxelize

using namespace p3dc_voxelize;

struct _P3dVoxelizer {
  P3dcVoxelizeParams params;
  int device;
  // The cell table and counters must be put in their reset state on the
  // stream of the next call (after creation, growth or a failed launch).
  bool needs_reset;

  CellTable table;  // hash_bits 0: dense
  size_t table_entries;
  Counters *counters;

  // Per-point arrays, and the scan's tile states, for point_capacity points.
  size_t point_capacity;
  uint2 *point_slots;
  uint32_t *sorted;
  VoxelInfo *voxel_info;
  uint32_t *long_voxels;
  void *tile_storage;
  TileState tile_state;

  void (*gather)(GatherArgs);  // gather_kernel for the point size
  uint32_t gather_warp_words;
  unsigned gather_threads;
  size_t gather_shared;
  size_t gather_max_blocks;

  // the device has programmatic dependent launch (compute capability 9.0)
  bool can_chain;
  // The frame's graph, cells -> scan -> gather (kernel_graph.cuh).
  P3dcKernelGraph graph;
};

static void free_point_arrays(P3dcVoxelizer *v) {
  cudaFree(v->point_slots);
  cudaFree(v->sorted);
  cudaFree(v->voxel_info);
  cudaFree(v->long_voxels);
  cudaFree(v->tile_storage);
  v->point_slots = nullptr;
  v->sorted = nullptr;
  v->voxel_info = nullptr;
  v->long_voxels = nullptr;
  v->tile_storage = nullptr;
  v->point_capacity = 0;
  if (v->table.hash_bits != 0) {
    cudaFree(v->table.entries);
    v->table.entries = nullptr;
    v->table_entries = 0;
  }
}

static cudaError_t alloc_point_arrays(P3dcVoxelizer *v, size_t capacity) {
  cudaError_t err;
  size_t tile_bytes = 0;
  int tiles = (int)div_up(capacity, kScanTile);

  // The gather reads segments of the sorted list as aligned 16-byte chunks:
  // room for the last chunk (cudaMalloc aligns the start).
  if ((err = cudaMalloc(&v->point_slots, capacity * sizeof(uint2))) ||
      (err = cudaMalloc(&v->sorted,
                        (div_up(capacity, 4) * 4 + 4) * sizeof(uint32_t))) ||
      (err = cudaMalloc(&v->voxel_info, capacity * sizeof(VoxelInfo))) ||
      (err = cudaMalloc(&v->long_voxels, capacity * sizeof(uint32_t))) ||
      (err = TileState::AllocationSize(tiles, tile_bytes)) ||
      (err = cudaMalloc(&v->tile_storage, tile_bytes)) ||
      (err = v->tile_state.Init(tiles, v->tile_storage, tile_bytes)))
    return err;
  if (v->table.hash_bits != 0) {
    uint32_t bits = kMinHashBits;
    while (bits < kMaxHashBits && (size_t(1) << bits) < 2 * capacity) bits++;
    v->table.hash_bits = bits;
    v->table_entries = size_t(1) << bits;
    err = cudaMalloc(&v->table.entries, v->table_entries * sizeof(CellEntry));
    if (err != cudaSuccess) return err;
  }
  v->point_capacity = capacity;
  v->needs_reset = true;
  return cudaSuccess;
}

// Makes room for @n_points: waits for the work that may still use the old
// arrays, which is the only host synchronization of a frame.
static P3dcResult grow(P3dcVoxelizer *v, size_t n_points, cudaStream_t stream) {
  size_t capacity = 2 * v->point_capacity;
  if (capacity < n_points) capacity = n_points;
  if (capacity > P3DC_VOXELIZE_MAX_INPUT) capacity = P3DC_VOXELIZE_MAX_INPUT;
  cudaError_t err = cudaStreamSynchronize(stream);
  if (err != cudaSuccess) return err;
  free_point_arrays(v);
  err = alloc_point_arrays(v, capacity);
  if (err != cudaSuccess) {
    free_point_arrays(v);
    cudaGetLastError();
    return err;
  }
  return P3DC_OK;
}

static cudaError_t configure_gather(P3dcVoxelizer *v) {
  int sms = 0, blocks_per_sm = 0;
  cudaError_t err;

  // The point sizes of the common formats (xyz, xyzi, xyzit/xyzir) get a
  // kernel that knows them at compile time.
  switch (v->params.channels) {
    case 3:
      v->gather = gather_kernel<3>;
      break;
    case 4:
      v->gather = gather_kernel<4>;
      break;
    case 5:
      v->gather = gather_kernel<5>;
      break;
    default:
      v->gather = gather_kernel<0>;
      break;
  }
  v->gather_warp_words = gather_warp_words(v->params.max_points);
  const size_t warp_bytes = v->gather_warp_words * sizeof(uint32_t);
  size_t warps = (48 * 1024) / warp_bytes;
  if (warps > (size_t)kGatherMaxWarps) warps = kGatherMaxWarps;
  if (warps < 1) warps = 1;
  v->gather_threads = (unsigned)(32 * warps);
  v->gather_shared = warps * warp_bytes;
  if ((err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount,
                                    v->device)) ||
      (err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
           &blocks_per_sm, v->gather, (int)v->gather_threads,
           v->gather_shared)))
    return err;
  if (blocks_per_sm < 1) blocks_per_sm = 1;
  v->gather_max_blocks = (size_t)sms * blocks_per_sm;
  return cudaSuccess;
}

// The frame's three kernels through @l (kernel_graph.cuh), the scan and the
// gather as programmatic dependents of the kernel before them where the
// device has them: launched on a stream, added to the frame's graph,
// matched against it, or set in it.
static cudaError_t queue_kernels(const P3dcVoxelizer *v, const FrameLaunch &f,
                                 P3dcLauncher &l) {
  cudaError_t err =
      l.launch(cells_kernel, f.cells_blocks, kCellsThreads, 0, false, f.cells);
  if (err == cudaSuccess)
    err = l.launch(scan_kernel, f.scan_blocks, kScanThreads, 0, v->can_chain,
                   f.scan);
  if (err == cudaSuccess)
    err = l.launch(v->gather, f.gather_blocks, v->gather_threads,
                   v->gather_shared, v->can_chain, f.gather);
  return err;
}

// The frame's graph, its nodes holding placeholder parameters (a frame of
// nothing, one block each) until the first frame sets them; programmatic
// edges where the device has them and the driver takes them in a graph,
// plain ones otherwise.
static cudaError_t setup_graph(P3dcVoxelizer *v) {
  FrameLaunch f;
  memset(static_cast<void *>(&f), 0, sizeof f);
  f.cells_blocks = f.scan_blocks = f.gather_blocks = 1;
  auto queue = [v, &f](P3dcLauncher &l) { return queue_kernels(v, f, l); };
  // (the top of this file)
  v->graph.max_forms = 1;
  // without programmatic edges in the graph, the launches inside a caller's
  // capture are plain ones too
  return p3dc_kernel_graph_build_best(&v->graph, v->can_chain, queue,
                                      &v->can_chain);
}

extern "C" void p3dc_voxelizer_free(P3dcVoxelizer *voxelizer) {
  if (voxelizer == nullptr) return;
  p3dc_kernel_graph_destroy(&voxelizer->graph);
  free_point_arrays(voxelizer);
  cudaFree(voxelizer->table.entries);
  cudaFree(voxelizer->counters);
  free(voxelizer);
}

extern "C" P3dcResult p3dc_voxelizer_new(const P3dcVoxelizeParams *params,
                                         size_t max_points_hint,
                                         P3dcVoxelizer **voxelizer) {
  P3dcResult result;
  cudaError_t err;

  if (voxelizer == nullptr) return P3DC_ERROR_INVALID_ARGUMENT;
  *voxelizer = nullptr;
  if ((result = p3dc_voxelize_params_check(params)) != P3DC_OK) return result;
  if (max_points_hint > P3DC_VOXELIZE_MAX_INPUT)
    max_points_hint = P3DC_VOXELIZE_MAX_INPUT;
  if (max_points_hint == 0) max_points_hint = kDefaultPointCapacity;

  P3dcVoxelizer *v = (P3dcVoxelizer *)calloc(1, sizeof(P3dcVoxelizer));
  if (v == nullptr) return P3DC_ERROR_OUT_OF_MEMORY;
  v->params = *params;
  const uint64_t cells =
      (uint64_t)params->grid[0] * params->grid[1] * params->grid[2];
  if ((err = cudaGetDevice(&v->device)) ||
      (err = p3dc_launch_dependent_supported(&v->can_chain)) ||
      (err = configure_gather(v)) ||
      (err = cudaMalloc(&v->counters, sizeof(Counters))))
    goto failed;
  if (cells <= kDenseMaxCells) {
    v->table_entries = (size_t)cells;
    if ((err = cudaMalloc(&v->table.entries,
                          v->table_entries * sizeof(CellEntry))))
      goto failed;
  } else {
    v->table.hash_bits = kMinHashBits;  // sized by alloc_point_arrays
  }
  if ((err = alloc_point_arrays(v, max_points_hint)) || (err = setup_graph(v)))
    goto failed;
  v->needs_reset = true;
  *voxelizer = v;
  return P3DC_OK;

failed:
  cudaGetLastError();
  p3dc_voxelizer_free(v);
  return err;
}

static cudaError_t reset_workspace(P3dcVoxelizer *v, cudaStream_t stream) {
  size_t blocks = div_up(v->table_entries, kResetThreads);
  if (blocks > kResetMaxBlocks) blocks = kResetMaxBlocks;
  // No table after a failed growth: the next frame grows again.
  if (blocks > 0) {
    reset_entries_kernel<<<(unsigned)blocks, kResetThreads, 0, stream>>>(
        v->table.entries, v->table_entries);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  return cudaMemsetAsync(v->counters, 0, sizeof(Counters), stream);
}

static GatherArgs gather_args(const P3dcVoxelizer *v, const float *points,
                              const P3dcVoxelizeOutput *out, int output_clean) {
  GatherArgs g;
  memset(&g, 0, sizeof g);
  g.params = v->params;
  g.points = points;
  g.table = v->table;
  g.sorted = v->sorted;
  g.voxel_info = v->voxel_info;
  g.long_voxels = v->long_voxels;
  g.counters = v->counters;
  g.voxels = out->voxels;
  g.num_points = out->num_points;
  g.coords = out->coords;
  g.stats = out->stats;
  g.output_clean = output_clean ? 1 : 0;
  g.warp_words = v->gather_warp_words;
  return g;
}

// The gather's grid: a warp per row at most, and no more blocks than fit
// on the device at once (the kernel strides over its work).
static unsigned gather_blocks(const P3dcVoxelizer *v, uint32_t n_points) {
  const size_t warps_per_block = v->gather_threads / 32;
  const size_t rows =
      n_points > v->params.max_voxels ? n_points : v->params.max_voxels;
  size_t blocks = div_up(rows, warps_per_block);
  if (blocks > v->gather_max_blocks) blocks = v->gather_max_blocks;
  return (unsigned)blocks;
}

// A frame of no point runs one block of each kernel (see the scan).
static void frame_launch(const P3dcVoxelizer *v, const float *points,
                         uint32_t n_points, const P3dcVoxelizeOutput *out,
                         int output_clean, FrameLaunch *f) {
  memset(static_cast<void *>(f), 0, sizeof *f);
  const int tiles = n_points > 0 ? (int)div_up(n_points, kScanTile) : 1;
  f->cells.params = v->params;
  f->cells.points = points;
  f->cells.n_points = n_points;
  f->cells.table = v->table;
  f->cells.point_slots = v->point_slots;
  f->cells.counters = v->counters;
  f->cells.tile_state = v->tile_state;
  f->cells.num_tiles = tiles;
  f->cells_blocks =
      n_points > 0 ? (unsigned)div_up(n_points, kCellsThreads) : 1u;
  f->scan.n_points = n_points;
  f->scan.max_voxels = v->params.max_voxels;
  f->scan.output_clean = output_clean ? 1 : 0;
  f->scan.table = v->table;
  f->scan.point_slots = v->point_slots;
  f->scan.sorted = v->sorted;
  f->scan.voxel_info = v->voxel_info;
  f->scan.long_voxels = v->long_voxels;
  f->scan.counters = v->counters;
  f->scan.tile_state = v->tile_state;
  f->scan.count = out->count;
  f->scan.stats = out->stats;
  f->scan_blocks = (unsigned)tiles;
  f->gather = gather_args(v, points, out, output_clean);
  f->gather_blocks = gather_blocks(v, n_points);
}

// The frame's graph, with the nodes whose parameters changed since the last
// frame set again (a host-side patch of its one executable form; launches
// already queued keep theirs); inside a caller's stream capture, the
// kernels launched into the caller's graph.
static cudaError_t queue_frame(P3dcVoxelizer *v, const float *points,
                               uint32_t n_points, const P3dcVoxelizeOutput *out,
                               int output_clean, cudaStream_t stream) {
  cudaError_t err;
  // The reset, when due, goes on the stream before the frame.
  if (v->needs_reset) {
    if ((err = reset_workspace(v, stream))) return err;
    v->needs_reset = false;
  }
  FrameLaunch f;
  frame_launch(v, points, n_points, out, output_clean, &f);
  return p3dc_kernel_graph_run(
      &v->graph, v->can_chain,
      [v, &f](P3dcLauncher &l) { return queue_kernels(v, f, l); }, stream);
}

extern "C" P3dcResult p3dc_voxelize_cuda(P3dcVoxelizer *voxelizer,
                                         const float *points, size_t n_points,
                                         const P3dcVoxelizeOutput *out,
                                         int output_clean,
                                         P3dcCudaStream stream) {
  P3dcResult result;
  int device = -1;

  if (voxelizer == nullptr || out == nullptr || out->voxels == nullptr ||
      out->num_points == nullptr || out->coords == nullptr ||
      out->count == nullptr || (points == nullptr && n_points > 0))
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (n_points > P3DC_VOXELIZE_MAX_INPUT) return P3DC_ERROR_TOO_LARGE;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  if (device != voxelizer->device) return P3DC_ERROR_INVALID_ARGUMENT;
  // Every frame needs room for one point at least (a frame of none runs
  // one tile of the scan); a failed growth leaves none.
  const size_t needed = n_points > 0 ? n_points : 1;
  if (needed > voxelizer->point_capacity &&
      (result = grow(voxelizer, needed, stream)) != P3DC_OK)
    return result;
  err = queue_frame(voxelizer, points, (uint32_t)n_points, out, output_clean,
                    stream);
  if (err != cudaSuccess) {
    // Part of the frame may be queued: start the next one from scratch.
    voxelizer->needs_reset = true;
    cudaGetLastError();
  }
  return err;
}
