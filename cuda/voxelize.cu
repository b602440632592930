// Voxelization on the device: the workspace and the per-frame launches.  The
// kernels are in voxelize_{cells,scan,gather}.cuh (voxelize_common.cuh says
// how they fit together); the reference is voxelize_cpu.c.
//
// A frame is three kernels.  By default they are one launch of a graph
// built with the voxelizer (voxelize-private.h has the other launch
// designs, for the benchmark): one host call instead of three, with the
// same programmatic edges as the stream launches.  A full write
// (output_clean = 0) needs no memset: the gather zeros the rows.
//
// The real frames (benchmark data), points per non-empty voxel:
//   KITTI 000000-000009, 0.16 m pillars: 17-20k points, 3.0-8.6k voxels,
//     max 22-231 points, 0-100 voxels over max-points 32; a warp of 32
//     consecutive points touches 14-18 cells.
//   nuScenes 271k, 0.2 m pillars: 30059 voxels (9053 of 1 point, 14918 of
//     2-8, 4752 of 9-32, 1335 of 33-2048, one of 2086); 2497 voxels over
//     max-points 20 hold 125621 points; 20 cells per warp of 32.
//   nuScenes 271k, CenterPoint 3D: 105086 voxels (62869 of 1 point, 39098
//     of 2-8, 2986 of 9-32, 133 of 33-1051); 26 cells per warp of 32.
// Floors at these sizes are latency, not bytes: the nuScenes frame moves
// about 15 MB (points read twice, per-point slots and sorted indices,
// 3.2 MB of kept points written), 5 us at HBM speed and less from L2.
#include <cuda_runtime.h>
#include <stdlib.h>

#include "voxelize-private.h"
#include "voxelize.h"
#include "voxelize_cells.cuh"
#include "voxelize_gather.cuh"
#include "voxelize_scan.cuh"

namespace p3d_voxelize {

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

// Spins @ns nanoseconds of the device's global timer (diagnostics: lets the
// host queue a whole frame before the device starts it).
static __global__ void hold_kernel(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

// A launch that may overlap the end of the previous kernel in the stream
// (@dependent, Hopper and later: the kernel waits for it before reading).
template <typename Args>
static cudaError_t launch(void (*kernel)(Args), unsigned blocks,
                          unsigned threads, size_t shared, cudaStream_t stream,
                          bool dependent, Args args) {
  cudaLaunchAttribute attribute;
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  config.attrs = dependent ? &attribute : nullptr;
  config.numAttrs = dependent ? 1 : 0;
  cudaError_t err = cudaLaunchKernelEx(&config, kernel, args);
  return err != cudaSuccess ? err : cudaGetLastError();
}

static size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }

// The three launches of a frame of at least one point.  Built in memory
// zeroed first, so that two frames with the same arguments compare equal
// byte for byte (padding included).
struct FrameLaunch {
  CellsArgs cells;
  ScanArgs scan;
  GatherArgs gather;
  unsigned cells_blocks;
  unsigned scan_blocks;
  unsigned gather_blocks;
};

}  // namespace p3d_voxelize

using namespace p3d_voxelize;

struct _P3dVoxelizer {
  P3dVoxelizeParams params;
  int device;
  bool dependent_launch;  // programmatic dependent launch (sm_90 and later)
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

  // The frame's graph (null when it could not be built: stream launches),
  // and the parameters its nodes hold now.
  cudaGraph_t graph;
  cudaGraphExec_t graph_exec;
  cudaGraphNode_t graph_nodes[3];  // cells, scan, gather
  FrameLaunch graph_frame;
  bool graph_frame_set;
};

static void free_point_arrays(P3dVoxelizer *v) {
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

static cudaError_t alloc_point_arrays(P3dVoxelizer *v, size_t capacity) {
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
static P3dResult grow(P3dVoxelizer *v, size_t n_points, cudaStream_t stream) {
  size_t capacity = 2 * v->point_capacity;
  if (capacity < n_points) capacity = n_points;
  if (capacity > P3D_VOXELIZE_MAX_INPUT) capacity = P3D_VOXELIZE_MAX_INPUT;
  cudaError_t err = cudaStreamSynchronize(stream);
  if (err != cudaSuccess) return err;
  free_point_arrays(v);
  err = alloc_point_arrays(v, capacity);
  if (err != cudaSuccess) {
    free_point_arrays(v);
    cudaGetLastError();
    return err;
  }
  return P3D_OK;
}

static cudaError_t configure_gather(P3dVoxelizer *v) {
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

static cudaKernelNodeParams node_params(void *func, unsigned blocks,
                                        unsigned threads, size_t shared,
                                        void **args) {
  cudaKernelNodeParams p = {};
  p.func = func;
  p.gridDim = dim3(blocks);
  p.blockDim = dim3(threads);
  p.sharedMemBytes = (unsigned)shared;
  p.kernelParams = args;
  p.extra = nullptr;
  return p;
}

static void destroy_graph(P3dVoxelizer *v) {
  if (v->graph_exec) cudaGraphExecDestroy(v->graph_exec);
  if (v->graph) cudaGraphDestroy(v->graph);
  v->graph_exec = nullptr;
  v->graph = nullptr;
}

// The graph cells -> scan -> gather, its parameters set per frame, with
// programmatic edges (the scan and the gather are scheduled early, as the
// stream launches with the attribute) or plain ones.
static cudaError_t build_graph(P3dVoxelizer *v, bool programmatic) {
  FrameLaunch f;
  memset(static_cast<void *>(&f), 0, sizeof f);
  void *cells_args[] = {&f.cells};
  void *scan_args[] = {&f.scan};
  void *gather_args[] = {&f.gather};
  cudaKernelNodeParams p[3] = {
      node_params((void *)cells_kernel, 1, kCellsThreads, 0, cells_args),
      node_params((void *)scan_kernel, 1, kScanThreads, 0, scan_args),
      node_params((void *)v->gather, 1, v->gather_threads, v->gather_shared,
                  gather_args)};
  cudaError_t err = cudaGraphCreate(&v->graph, 0);
  if (err != cudaSuccess) return err;
  for (int i = 0; i < 3; i++)
    if ((err = cudaGraphAddKernelNode(&v->graph_nodes[i], v->graph, nullptr, 0,
                                      &p[i])))
      return err;
  cudaGraphNode_t from[2] = {v->graph_nodes[0], v->graph_nodes[1]};
  cudaGraphNode_t to[2] = {v->graph_nodes[1], v->graph_nodes[2]};
  cudaGraphEdgeData edges[2];
  memset(edges, 0, sizeof edges);
  for (int i = 0; i < 2; i++) {
    edges[i].from_port = cudaGraphKernelNodePortProgrammatic;
    edges[i].type = cudaGraphDependencyTypeProgrammatic;
  }
  if ((err = cudaGraphAddDependencies(v->graph, from, to,
                                      programmatic ? edges : nullptr, 2)))
    return err;
  return cudaGraphInstantiate(&v->graph_exec, v->graph, 0);
}

// Builds the frame's graph, with programmatic edges where the device and
// the driver take them; without a graph the frames use stream launches.
static void setup_graph(P3dVoxelizer *v) {
  if (v->dependent_launch && build_graph(v, true) == cudaSuccess) return;
  cudaGetLastError();
  destroy_graph(v);
  if (build_graph(v, false) == cudaSuccess) return;
  cudaGetLastError();
  destroy_graph(v);
}

extern "C" void p3d_voxelizer_free(P3dVoxelizer *voxelizer) {
  if (voxelizer == nullptr) return;
  destroy_graph(voxelizer);
  free_point_arrays(voxelizer);
  cudaFree(voxelizer->table.entries);
  cudaFree(voxelizer->counters);
  free(voxelizer);
}

extern "C" P3dResult p3d_voxelizer_new(const P3dVoxelizeParams *params,
                                       size_t max_points_hint,
                                       P3dVoxelizer **voxelizer) {
  P3dResult result;
  cudaError_t err;
  int major = 0;

  if (voxelizer == nullptr) return P3D_ERROR_INVALID_ARGUMENT;
  *voxelizer = nullptr;
  if ((result = p3d_voxelize_params_check(params)) != P3D_OK) return result;
  if (max_points_hint > P3D_VOXELIZE_MAX_INPUT)
    max_points_hint = P3D_VOXELIZE_MAX_INPUT;
  if (max_points_hint == 0) max_points_hint = kDefaultPointCapacity;

  P3dVoxelizer *v = (P3dVoxelizer *)calloc(1, sizeof(P3dVoxelizer));
  if (v == nullptr) return P3D_ERROR_OUT_OF_MEMORY;
  v->params = *params;
  const uint64_t cells =
      (uint64_t)params->grid[0] * params->grid[1] * params->grid[2];
  if ((err = cudaGetDevice(&v->device)) ||
      (err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                                    v->device)) ||
      (err = configure_gather(v)) ||
      (err = cudaMalloc(&v->counters, sizeof(Counters))))
    goto failed;
  v->dependent_launch = major >= 9;
  if (cells <= kDenseMaxCells) {
    v->table_entries = (size_t)cells;
    if ((err = cudaMalloc(&v->table.entries,
                          v->table_entries * sizeof(CellEntry))))
      goto failed;
  } else {
    v->table.hash_bits = kMinHashBits;  // sized by alloc_point_arrays
  }
  if ((err = alloc_point_arrays(v, max_points_hint))) goto failed;
  setup_graph(v);
  v->needs_reset = true;
  *voxelizer = v;
  return P3D_OK;

failed:
  cudaGetLastError();
  p3d_voxelizer_free(v);
  return err;
}

static cudaError_t reset_workspace(P3dVoxelizer *v, cudaStream_t stream) {
  size_t blocks = div_up(v->table_entries, kResetThreads);
  if (blocks > kResetMaxBlocks) blocks = kResetMaxBlocks;
  // No table after a failed growth: the next frame with points grows again.
  if (blocks > 0) {
    reset_entries_kernel<<<(unsigned)blocks, kResetThreads, 0, stream>>>(
        v->table.entries, v->table_entries);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  return cudaMemsetAsync(v->counters, 0, sizeof(Counters), stream);
}

static GatherArgs gather_args(const P3dVoxelizer *v, const float *points,
                              const P3dVoxelizeOutput *out, int output_clean) {
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
static unsigned gather_blocks(const P3dVoxelizer *v, uint32_t n_points) {
  const size_t warps_per_block = v->gather_threads / 32;
  const size_t rows =
      n_points > v->params.max_voxels ? n_points : v->params.max_voxels;
  size_t blocks = div_up(rows, warps_per_block);
  if (blocks > v->gather_max_blocks) blocks = v->gather_max_blocks;
  return (unsigned)blocks;
}

static void frame_launch(const P3dVoxelizer *v, const float *points,
                         uint32_t n_points, const P3dVoxelizeOutput *out,
                         int output_clean, FrameLaunch *f) {
  memset(static_cast<void *>(f), 0, sizeof *f);
  const int tiles = (int)div_up(n_points, kScanTile);
  f->cells.params = v->params;
  f->cells.points = points;
  f->cells.n_points = n_points;
  f->cells.table = v->table;
  f->cells.point_slots = v->point_slots;
  f->cells.counters = v->counters;
  f->cells.tile_state = v->tile_state;
  f->cells.num_tiles = tiles;
  f->cells_blocks = (unsigned)div_up(n_points, kCellsThreads);
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

static cudaError_t record(P3dCudaEvent event, cudaStream_t stream) {
  return event != nullptr ? cudaEventRecord((cudaEvent_t)event, stream)
                          : cudaSuccess;
}

// The frame's graph with @f's parameters: only the nodes whose parameters
// changed since the last frame are updated (a host-side patch of the
// executable graph; launches already queued keep theirs).
static cudaError_t launch_graph(P3dVoxelizer *v, FrameLaunch *f,
                                cudaStream_t stream) {
  FrameLaunch &last = v->graph_frame;
  const bool set = v->graph_frame_set;
  cudaError_t err;
  // Until every update succeeded the nodes' parameters are not known.
  v->graph_frame_set = false;
  void *cells_args[] = {&f->cells};
  void *scan_args[] = {&f->scan};
  void *gather_args[] = {&f->gather};
  if (!set || f->cells_blocks != last.cells_blocks ||
      memcmp(&f->cells, &last.cells, sizeof f->cells) != 0) {
    const cudaKernelNodeParams p = node_params(
        (void *)cells_kernel, f->cells_blocks, kCellsThreads, 0, cells_args);
    if ((err = cudaGraphExecKernelNodeSetParams(v->graph_exec,
                                                v->graph_nodes[0], &p)))
      return err;
  }
  if (!set || f->scan_blocks != last.scan_blocks ||
      memcmp(&f->scan, &last.scan, sizeof f->scan) != 0) {
    const cudaKernelNodeParams p = node_params(
        (void *)scan_kernel, f->scan_blocks, kScanThreads, 0, scan_args);
    if ((err = cudaGraphExecKernelNodeSetParams(v->graph_exec,
                                                v->graph_nodes[1], &p)))
      return err;
  }
  if (!set || f->gather_blocks != last.gather_blocks ||
      memcmp(&f->gather, &last.gather, sizeof f->gather) != 0) {
    const cudaKernelNodeParams p =
        node_params((void *)v->gather, f->gather_blocks, v->gather_threads,
                    v->gather_shared, gather_args);
    if ((err = cudaGraphExecKernelNodeSetParams(v->graph_exec,
                                                v->graph_nodes[2], &p)))
      return err;
  }
  last = *f;
  v->graph_frame_set = true;
  return cudaGraphLaunch(v->graph_exec, stream);
}

static bool stream_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    cudaGetLastError();
    return true;  // unknown: take the launches that work everywhere
  }
  return status != cudaStreamCaptureStatusNone;
}

static cudaError_t queue_frame(P3dVoxelizer *v, const float *points,
                               uint32_t n_points, const P3dVoxelizeOutput *out,
                               int output_clean, cudaStream_t stream,
                               const P3dVoxelizeVariant *variant) {
  const P3dVoxelizeParams &params = v->params;
  const P3dCudaEvent *events = variant->events;
  const bool phase_events = events[1] != nullptr || events[2] != nullptr;
  const bool dependent = v->dependent_launch &&
                         variant->launch != P3D_VOXELIZE_LAUNCH_STREAM_SERIAL &&
                         !phase_events;
  cudaError_t err;

  if (variant->hold_us > 0) {
    hold_kernel<<<1, 1, 0, stream>>>(1000ull * variant->hold_us);
    if ((err = cudaGetLastError())) return err;
  }
  // The graph's nodes start from a workspace in its reset state: the
  // reset goes on the stream first, and that frame uses stream launches
  // (so does a frame of 0 points, which is two other kernels).
  const bool graph = variant->launch == P3D_VOXELIZE_LAUNCH_GRAPH &&
                     v->graph_exec != nullptr && !v->needs_reset &&
                     n_points > 0 && !stream_capturing(stream);
  if (v->needs_reset) {
    if ((err = reset_workspace(v, stream))) return err;
    v->needs_reset = false;
  }
  if ((err = record(events[0], stream))) return err;

  if (n_points == 0) {
    empty_frame_kernel<<<1, 1, 0, stream>>>(
        params.max_voxels, output_clean, out->count, out->stats, v->counters);
    if ((err = cudaGetLastError())) return err;
    GatherArgs g = gather_args(v, points, out, output_clean);
    if ((err = launch(v->gather, gather_blocks(v, 0), v->gather_threads,
                      v->gather_shared, stream, dependent, g)))
      return err;
    return record(events[3], stream);
  }

  FrameLaunch f;
  frame_launch(v, points, n_points, out, output_clean, &f);
  if (graph) {
    if ((err = launch_graph(v, &f, stream))) return err;
    return record(events[3], stream);
  }
  if ((err = launch(cells_kernel, f.cells_blocks, kCellsThreads, 0, stream,
                    false, f.cells)) ||
      (err = record(events[1], stream)) ||
      (err = launch(scan_kernel, f.scan_blocks, kScanThreads, 0, stream,
                    dependent, f.scan)) ||
      (err = record(events[2], stream)) ||
      (err = launch(v->gather, f.gather_blocks, v->gather_threads,
                    v->gather_shared, stream, dependent, f.gather)))
    return err;
  return record(events[3], stream);
}

extern "C" P3dResult p3d_voxelize_cuda_variant(
    P3dVoxelizer *voxelizer, const float *points, size_t n_points,
    const P3dVoxelizeOutput *out, int output_clean, P3dCudaStream stream,
    const P3dVoxelizeVariant *variant) {
  P3dVoxelizeVariant default_variant;
  P3dResult result;
  int device = -1;

  if (voxelizer == nullptr || out == nullptr || out->voxels == nullptr ||
      out->num_points == nullptr || out->coords == nullptr ||
      out->count == nullptr || (points == nullptr && n_points > 0))
    return P3D_ERROR_INVALID_ARGUMENT;
  if (n_points > P3D_VOXELIZE_MAX_INPUT) return P3D_ERROR_TOO_LARGE;
  if (variant == nullptr) {
    p3d_voxelize_variant_init(&default_variant);
    variant = &default_variant;
  }
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  if (device != voxelizer->device) return P3D_ERROR_INVALID_ARGUMENT;
  if (n_points > voxelizer->point_capacity &&
      (result = grow(voxelizer, n_points, stream)) != P3D_OK)
    return result;
  err = queue_frame(voxelizer, points, (uint32_t)n_points, out, output_clean,
                    stream, variant);
  if (err != cudaSuccess) {
    // Part of the frame may be queued: start the next one from scratch.
    voxelizer->needs_reset = true;
    cudaGetLastError();
  }
  return err;
}

extern "C" P3dResult p3d_voxelize_cuda(P3dVoxelizer *voxelizer,
                                       const float *points, size_t n_points,
                                       const P3dVoxelizeOutput *out,
                                       int output_clean, P3dCudaStream stream) {
  return p3d_voxelize_cuda_variant(voxelizer, points, n_points, out,
                                   output_clean, stream, nullptr);
}
