// Non-maximum suppression on the device; the reference is nms_cpu.c.
//
// Three stages queued on the caller's stream, none of them waiting for the
// host, the input count read and the output count written on the device:
//  1. the boxes that take part, sorted by score, and their number m
//     (nms_sort.cuh): up to 4096 boxes one kernel that works only on the
//     count; above, a sort by chunks up to 32768 boxes, of the chunks below
//     the count (nms_chunk_sort.cuh), CUB's device sort over the whole
//     capacity beyond.  The first kernel also fills the output and
//     publishes the call's buffers to the workspace for stage 3
//     (nms_common.cuh: CallOutput);
//  2. the suppression mask, one bit per pair, also transposed up to 1024
//     boxes, as pair lists above.  Every pair is tested (nms_mask.cuh),
//     except in bev-aligned and circle calls of more than 1024 boxes in
//     workspaces of more than 4096: there the pairs are found through a
//     grid of the boxes' centres (nms_grid.cuh);
//  3. the greedy keep-reduction and the kept records (nms_reduce.cuh): up
//     to 1024 boxes by sweeps over the transposed mask in one block, above
//     by rounds over the pair lists in a cluster of blocks (one block on
//     devices without clusters), and, where these do not settle, by a walk
//     over the tiles in one block.
// Stages 2 and 3 read m and do only the work it needs.  Each kernel after
// the first is launched as a programmatic dependent of the one before
// (launch.cuh), on devices that have it.
//
// Workspaces of up to kSmallCapacity boxes do all three in one kernel
// (nms_small.cuh), on the boxes in input order.
//
// Up to kRankCapacity boxes a call is three kernels (one in a small
// workspace), and at a few hundred boxes their launches cost more than
// their work; above, six to ten kernels, some of a few microseconds.  So a
// call launches one CUDA graph of them (kernel_graph.cuh), one graph for
// each mask kernel a call can take, built at the first call that takes it.
// Calls queued inside a caller's stream capture, and workspaces that sort
// with CUB (above kChunkSortCapacity boxes, or from 4097 where a block
// cannot stage the keys: choose_chunk_sort), launch the kernels one by
// one.
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include <cub/device/device_radix_sort.cuh>

#include "kernel_graph.cuh"
#include "launch.cuh"
#include "nms-private.h"
#include "nms_chunk_sort.cuh"
#include "nms_common.cuh"
#include "nms_grid.cuh"
#include "nms_item.h"
#include "nms_mask.cuh"
#include "nms_reduce.cuh"
#include "nms_small.cuh"
#include "nms_sort.cuh"
#include "smem_limit.cuh"

// The graphs of a workspace up to kChunkSortCapacity boxes: one for each
// mask kernel, by mode, and the last for bev-rotated under mmcv's rule.
constexpr unsigned kNmsGraphs = 5;

struct _P3dNms {
  uint32_t capacity;
  // graphs[g] once a call has built it (call_graph())
  P3dcKernelGraph graphs[kNmsGraphs];
  // the device has programmatic dependent launch (compute capability 9.0)
  bool can_chain;
  // for the tests (p3dc_nms_refuse_graph_builds): every graph build fails,
  // as where the driver takes no graph, and calls launch one by one
  bool refuse_graph_builds;
  // blocks of the mask kernels, which loop over the tiles: as many as the
  // GPU holds at once, at most one a tile of a full workspace; by mode, and
  // for bev-rotated under mmcv's rule (0 for capacities up to
  // kSmallCapacity, whose calls take no mask kernel)
  unsigned mask_blocks[4];
  unsigned mmcv_mask_blocks;
  // blocks of the grid's cell kernel (nms_grid.cuh), by mode (bev-aligned
  // and circle, in workspaces that have the grid): a warp a box of a full
  // workspace, but no more than the GPU holds at once, so that a call of
  // fewer boxes does not wait out waves of blocks that return at once.  The
  // pair kernel keeps a warp a box: its boxes' work varies, and a warp that
  // takes several measured slower at full counts (docs/performance.md)
  unsigned grid_cell_blocks[4];
  // nms_small.cuh, for capacities up to kSmallCapacity (NULL otherwise):
  // the boxes' ranks, and the ticket counter of the call's blocks
  uint32_t *ranks;
  uint32_t *done;
  // the three kernels', for capacities above kSmallCapacity (NULL
  // otherwise); the sort's keys and input indices, and the call's count as
  // key_kernel clamped it, above kRankCapacity only
  uint32_t *keys_in, *keys_out;
  uint32_t *index_in, *index_out;
  uint32_t *sort_count;
  P3dcNmsItem *items;
  uint32_t *item_count;
  // the call's buffers, as its first kernel publishes them for the
  // reduction
  p3dc_nms::CallOutput *call;
  unsigned long long *mask;
  // nms_common.cuh: kColumnBoxes columns, whatever the capacity
  unsigned long long *column_mask;
  // nms_common.cuh: the pair lists, for capacities above kColumnBoxes (NULL
  // otherwise), and the reduction's shared memory for them
  uint2 *pair_counts;
  uint16_t *pair_columns;
  uint16_t *pair_rows;
  size_t list_shared_bytes;
  // the reduction's kernel and blocks: in workspaces above kColumnBoxes a
  // cluster where the device has them and one fits (choose_reduce_cluster),
  // else one block (and as p3dc_nms_limit_reduce_blocks says)
  void (*reduce)(const unsigned long long *, const unsigned long long *,
                 uint32_t, const uint2 *, const uint16_t *, const uint16_t *,
                 const uint32_t *, const uint32_t *,
                 const p3dc_nms::CallOutput *, uint32_t, uint32_t);
  unsigned reduce_blocks;
  // above kRankCapacity: the sort by chunks (nms_chunk_sort.cuh) where the
  // device stages the capacity's keys, else CUB's, with its storage
  bool chunk_sort;
  void *sort_storage;
  size_t sort_storage_bytes;
  // nms_grid.cuh, for capacities above kRankCapacity (NULL otherwise): the
  // bounds, each box's cell and slot, the cells' counts and first slots,
  // the boxes in cell order and their box numbers
  p3dc_nms::GridBounds *grid_bounds;
  uint2 *grid_place;
  uint32_t *cell_counts;
  uint32_t *cell_starts;
  P3dcNmsItem *binned;
  uint32_t *binned_index;
};

namespace p3dc_nms {

constexpr unsigned kThreads = 256;

static unsigned grid_for(uint32_t count) {
  uint32_t blocks = (count + kThreads - 1) / kThreads;
  return blocks < 4096 ? blocks : 4096;
}

// Blocks of the grid kernels that give a warp to every box (or row of the
// mask) of a full workspace.
static unsigned warp_grid_for(uint32_t count) {
  uint32_t blocks = (count + kGridWarps - 1) / kGridWarps;
  return blocks < 8192 ? blocks : 8192;
}

// Blocks of @kernel (@threads threads) that fit on the device at once, and
// no more than @wanted (the mask kernels' tiles, the grid's warps).
template <typename Kernel>
static cudaError_t resident_grid(Kernel kernel, unsigned threads,
                                 int multiprocessors, size_t wanted,
                                 unsigned *blocks) {
  int per_multiprocessor = 0;
  cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_multiprocessor, kernel, (int)threads, 0);
  if (err != cudaSuccess) return err;
  size_t most = (size_t)(per_multiprocessor > 0 ? per_multiprocessor : 1) *
                (size_t)(multiprocessors > 0 ? multiprocessors : 1);
  *blocks = (unsigned)(wanted < most ? wanted : most);
  if (*blocks == 0) *blocks = 1;
  return cudaSuccess;
}

// The grid's bounds where this call's mode finds its pairs through the grid
// (nms_grid.cuh), in a workspace that has one; NULL otherwise.
static GridBounds *grid_of(P3dcNms *nms, P3dcNmsMode mode) {
  return mode == P3DC_NMS_BEV_ALIGNED || mode == P3DC_NMS_CIRCLE
             ? nms->grid_bounds
             : nullptr;
}

// p3dc_nms_limit_shared_memory's limit on the device's shared memory a
// block (0: none), for the tests.
static size_t shared_limit = 0;

// @room, a room for @kernel's dynamic shared memory (smem_limit.cuh),
// within the tests' limit.
template <typename Kernel>
static cudaError_t within_test_limit(Kernel kernel, size_t *room) {
  if (shared_limit == 0) return cudaSuccess;
  cudaFuncAttributes attributes = {};
  const cudaError_t err = cudaFuncGetAttributes(&attributes, kernel);
  const size_t limited = shared_limit > attributes.sharedSizeBytes
                             ? shared_limit - attributes.sharedSizeBytes
                             : 0;
  if (err == cudaSuccess && limited < *room) *room = limited;
  return err;
}

// Lets @kernel take @wanted bytes of dynamic shared memory a block, or its
// room where that is less (p3dc_allow_smem), and gives the room, within the
// tests' limit, in *@room: one query of the device for both.
template <typename Kernel>
static cudaError_t allow_smem(Kernel kernel, size_t wanted, size_t *room) {
  cudaError_t err = p3dc_allow_smem(kernel, wanted, room);
  if (err == cudaSuccess) err = within_test_limit(kernel, room);
  return err;
}

// The most boxes whose round state (list_shared_bytes) fits @room bytes;
// workspaces of up to kColumnBoxes take none.
static uint32_t capacity_for_room(size_t room) {
  uint32_t fits = kColumnBoxes, too_many = P3DC_NMS_MAX_CAPACITY + 1;
  // the state grows with the boxes: a bisection
  while (too_many - fits > 1) {
    const uint32_t mid = fits + (too_many - fits) / 2;
    if (list_shared_bytes(mid) <= room)
      fits = mid;
    else
      too_many = mid;
  }
  return fits;
}

// The sort by chunks for @nms's capacity, where it is at most
// kChunkSortCapacity and a block can stage that many keys.
static cudaError_t choose_chunk_sort(P3dcNms *nms) {
  if (nms->capacity > kChunkSortCapacity) return cudaSuccess;
  // the most any workspace asks, the same for every workspace so that none
  // undoes another's setting
  size_t room = 0;
  const cudaError_t err = allow_smem(
      chunk_merge_kernel, chunk_merge_shared_bytes(kChunkSortCapacity), &room);
  if (err == cudaSuccess)
    nms->chunk_sort = chunk_merge_shared_bytes(nms->capacity) <= room;
  return err;
}

// The cluster of the reduction's rounds (nms_reduce.cuh) of @kBlocks
// blocks, where its blocks' shared memory fits and the device has room for
// one such cluster (a static query of the device: a MIG slice may not);
// TRUE when @nms takes it.  A failure here only leaves the one-block
// kernel, and is cleared so that no later check of the last error sees it.
template <uint32_t kBlocks>
static bool try_reduce_cluster(P3dcNms *nms) {
  const auto kernel = reduce_cluster_kernel<kBlocks>;
  size_t room = 0;
  cudaError_t err =
      allow_smem(kernel, list_shared_bytes(P3DC_NMS_MAX_CAPACITY), &room);
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(kBlocks);
  config.blockDim = dim3(kReduceThreads);
  config.dynamicSmemBytes = nms->list_shared_bytes;
  int clusters = 0;
  if (err == cudaSuccess && nms->list_shared_bytes <= room)
    err = cudaOccupancyMaxActiveClusters(&clusters, kernel, &config);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  if (clusters <= 0) return false;
  nms->reduce = kernel;
  nms->reduce_blocks = kBlocks;
  return true;
}

// Where @device has clusters (compute capability 9.0 on) the rounds take
// a cluster of blocks: 4 in a workspace of up to kRankCapacity boxes, 8
// above, or 4 where 8 do not fit.  On the H200 four blocks beat eight by 1
// to 2.5 us at 2048 and 4096 boxes, where the rounds' barriers and gathers
// cost more than eight blocks' share of the work saves, and eight beat four
// by up to 9 us at 20000 (docs/performance.md).  Else @nms keeps the
// one-block kernel; only a failed query of the device is an error.
static cudaError_t choose_reduce_cluster(P3dcNms *nms, int device) {
  int major = 0;
  cudaError_t err =
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (err != cudaSuccess || major < 9) return err;
  if (nms->capacity > kRankCapacity && try_reduce_cluster<8>(nms))
    return cudaSuccess;
  try_reduce_cluster<4>(nms);
  return cudaSuccess;
}

}  // namespace p3dc_nms

using namespace p3dc_nms;

extern "C" void p3dc_nms_free(P3dcNms *nms) {
  if (nms == nullptr) return;
  for (unsigned g = 0; g < kNmsGraphs; g++)
    p3dc_kernel_graph_destroy(&nms->graphs[g]);
  cudaFree(nms->ranks);
  cudaFree(nms->done);
  cudaFree(nms->keys_in);
  cudaFree(nms->keys_out);
  cudaFree(nms->index_in);
  cudaFree(nms->index_out);
  cudaFree(nms->sort_count);
  cudaFree(nms->items);
  cudaFree(nms->item_count);
  cudaFree(nms->call);
  cudaFree(nms->mask);
  cudaFree(nms->column_mask);
  cudaFree(nms->pair_counts);
  cudaFree(nms->pair_columns);
  cudaFree(nms->pair_rows);
  cudaFree(nms->sort_storage);
  cudaFree(nms->grid_bounds);
  cudaFree(nms->grid_place);
  cudaFree(nms->cell_counts);
  cudaFree(nms->cell_starts);
  cudaFree(nms->binned);
  cudaFree(nms->binned_index);
  free(nms);
}

extern "C" uint32_t p3dc_nms_graphs_built(const P3dcNms *nms) {
  uint32_t built = 0;
  for (unsigned g = 0; nms != nullptr && g < kNmsGraphs; g++)
    built += p3dc_kernel_graph_built(&nms->graphs[g]) ? 1u : 0u;
  return built;
}

extern "C" void p3dc_nms_refuse_graph_builds(P3dcNms *nms) {
  if (nms != nullptr) nms->refuse_graph_builds = true;
}

// (kernel_graph.cuh: a graph whose making of a form failed makes no more)
extern "C" void p3dc_nms_refuse_graph_forms(P3dcNms *nms) {
  for (unsigned g = 0; nms != nullptr && g < kNmsGraphs; g++)
    nms->graphs[g].form_failed = true;
}

// As choose_reduce_cluster() where a cluster of 8 does not fit: 4 blocks,
// else one.
extern "C" void p3dc_nms_limit_reduce_blocks(P3dcNms *nms, uint32_t most) {
  if (nms == nullptr || nms->reduce_blocks <= most) return;
  nms->reduce = reduce_kernel;
  nms->reduce_blocks = 1;
  if (most >= 4) try_reduce_cluster<4>(nms);
}

extern "C" void p3dc_nms_limit_shared_memory(size_t bytes) {
  shared_limit = bytes;
}

extern "C" P3dcResult p3dc_nms_device_capacity(uint32_t *capacity) {
  if (capacity == nullptr) return P3DC_ERROR_INVALID_ARGUMENT;
  size_t room = 0;
  cudaError_t err = p3dc_smem_room(reduce_kernel, &room);
  if (err == cudaSuccess) err = within_test_limit(reduce_kernel, &room);
  if (err != cudaSuccess) return err;
  *capacity = capacity_for_room(room);
  return P3DC_OK;
}

extern "C" int p3dc_nms_sorts_by_chunks(const P3dcNms *nms) {
  return nms != nullptr && nms->chunk_sort;
}

extern "C" uint32_t p3dc_nms_reduce_blocks(const P3dcNms *nms) {
  return nms != nullptr ? nms->reduce_blocks : 0;
}

extern "C" uint64_t p3dc_nms_graph_node_sets(const P3dcNms *nms) {
  uint64_t sets = 0;
  for (unsigned g = 0; nms != nullptr && g < kNmsGraphs; g++)
    sets += nms->graphs[g].node_sets;
  return sets;
}

extern "C" uint32_t p3dc_nms_graph_forms(void) { return kP3dcGraphExecs; }

extern "C" uint32_t p3dc_nms_get_capacity(const P3dcNms *nms) {
  return nms != nullptr ? nms->capacity : 0;
}

extern "C" P3dcResult p3dc_nms_new(uint32_t capacity, P3dcNms **nms) {
  if (nms == nullptr) return P3DC_ERROR_INVALID_ARGUMENT;
  *nms = nullptr;
  if (capacity == 0) return P3DC_ERROR_INVALID_ARGUMENT;
  if (capacity > P3DC_NMS_MAX_CAPACITY) return P3DC_ERROR_TOO_LARGE;
  if (capacity > kColumnBoxes) {
    // The round state's shared memory: the reduction may take the most any
    // workspace asks, the same for every workspace so that none undoes
    // another's setting, and this workspace's must fit the room
    // (p3dc_nms_device_capacity).
    size_t room = 0;
    const cudaError_t err = allow_smem(
        reduce_kernel, list_shared_bytes(P3DC_NMS_MAX_CAPACITY), &room);
    if (err != cudaSuccess) return err;
    if (capacity > capacity_for_room(room)) return P3DC_ERROR_TOO_LARGE;
  }

  P3dcNms *self = (P3dcNms *)calloc(1, sizeof(P3dcNms));
  if (self == nullptr) return P3DC_ERROR_OUT_OF_MEMORY;
  self->capacity = capacity;
  self->reduce = reduce_kernel;
  self->reduce_blocks = 1;
  const size_t words = (capacity + kTile - 1) / kTile;
  const size_t tiles = words * (words + 1) / 2;

  // a small workspace's calls are one kernel (nms_small.cuh), which needs
  // none of the three kernels' buffers and grids
  const bool small = capacity <= kSmallCapacity;
  cudaError_t err = cudaSuccess;
  int device = 0, multiprocessors = 0;
  if (err == cudaSuccess) err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&multiprocessors,
                                 cudaDevAttrMultiProcessorCount, device);
  if (err == cudaSuccess)
    err = p3dc_launch_dependent_supported(&self->can_chain);
  if (!small) {
    if (err == cudaSuccess)
      err = resident_grid(mask_kernel<P3DC_NMS_IOU>, kMaskThreads,
                          multiprocessors, tiles,
                          &self->mask_blocks[P3DC_NMS_IOU]);
    if (err == cudaSuccess)
      err = resident_grid(mask_kernel<P3DC_NMS_BEV_ROTATED>, kMaskThreads,
                          multiprocessors, tiles,
                          &self->mask_blocks[P3DC_NMS_BEV_ROTATED]);
    if (err == cudaSuccess)
      err = resident_grid(mask_kernel<P3DC_NMS_BEV_ALIGNED>, kMaskThreads,
                          multiprocessors, tiles,
                          &self->mask_blocks[P3DC_NMS_BEV_ALIGNED]);
    if (err == cudaSuccess)
      err = resident_grid(mask_kernel<P3DC_NMS_CIRCLE>, kMaskThreads,
                          multiprocessors, tiles,
                          &self->mask_blocks[P3DC_NMS_CIRCLE]);
    if (err == cudaSuccess)
      err = resident_grid(
          mask_kernel<P3DC_NMS_BEV_ROTATED, P3DC_NMS_IOU_RULE_MMCV>,
          kMaskThreads, multiprocessors, tiles, &self->mmcv_mask_blocks);
  }

  const size_t bytes = (size_t)capacity * sizeof(uint32_t);
  if (!small) {
    if (err == cudaSuccess) err = cudaMalloc(&self->index_out, bytes);
    if (err == cudaSuccess)
      err = cudaMalloc(&self->items, (size_t)capacity * sizeof(P3dcNmsItem));
    if (err == cudaSuccess)
      err = cudaMalloc(&self->item_count, sizeof(uint32_t));
    if (err == cudaSuccess) err = cudaMalloc(&self->call, sizeof(CallOutput));
    if (err == cudaSuccess)
      err = cudaMalloc(&self->mask,
                       (size_t)capacity * words * sizeof(unsigned long long));
  }
  // whole, and zeroed: the reduction loads words of columns past a call's
  // count before it knows the count (nms_reduce.cuh: load_column)
  const size_t column_bytes =
      (size_t)kColumnBoxes * kColumnWords * sizeof(unsigned long long);
  if (err == cudaSuccess) err = cudaMalloc(&self->column_mask, column_bytes);
  if (err == cudaSuccess) err = cudaMemset(self->column_mask, 0, column_bytes);
  if (capacity > kColumnBoxes) {
    const size_t list_bytes = (size_t)capacity * kListSlots * sizeof(uint16_t);
    self->list_shared_bytes = list_shared_bytes(capacity);
    if (err == cudaSuccess)
      err = cudaMalloc(&self->pair_counts, (size_t)capacity * sizeof(uint2));
    if (err == cudaSuccess) err = cudaMalloc(&self->pair_columns, list_bytes);
    if (err == cudaSuccess) err = cudaMalloc(&self->pair_rows, list_bytes);
    // the reduction loads a list's first slots before it knows its length:
    // never memory nothing wrote
    if (err == cudaSuccess) err = cudaMemset(self->pair_columns, 0, list_bytes);
    if (err == cudaSuccess) err = cudaMemset(self->pair_rows, 0, list_bytes);
    if (err == cudaSuccess) err = choose_reduce_cluster(self, device);
  }
  if (small) {
    if (err == cudaSuccess) err = cudaMalloc(&self->ranks, bytes);
    if (err == cudaSuccess) err = cudaMalloc(&self->done, sizeof(uint32_t));
    if (err == cudaSuccess) err = cudaMemset(self->done, 0, sizeof(uint32_t));
  }
  // the buffers of the device-wide sort, for capacities one kernel can't
  // sort: the chunks' (nms_chunk_sort.cuh) where they fit, else CUB's
  if (capacity > kRankCapacity) {
    if (err == cudaSuccess) err = cudaMalloc(&self->keys_in, bytes);
    if (err == cudaSuccess) err = cudaMalloc(&self->keys_out, bytes);
    if (err == cudaSuccess) err = cudaMalloc(&self->index_in, bytes);
    if (err == cudaSuccess)
      err = cudaMalloc(&self->sort_count, sizeof(uint32_t));
    if (err == cudaSuccess) err = choose_chunk_sort(self);
    if (err == cudaSuccess && !self->chunk_sort)
      err = cub::DeviceRadixSort::SortPairs(
          nullptr, self->sort_storage_bytes, self->keys_in, self->keys_out,
          self->index_in, self->index_out, (int)capacity);
    if (err == cudaSuccess && !self->chunk_sort)
      err = cudaMalloc(&self->sort_storage, self->sort_storage_bytes);
    if (err == cudaSuccess)
      err = resident_grid(grid_cell_kernel<P3DC_NMS_BEV_ALIGNED>, kGridThreads,
                          multiprocessors, warp_grid_for(capacity),
                          &self->grid_cell_blocks[P3DC_NMS_BEV_ALIGNED]);
    if (err == cudaSuccess)
      err = resident_grid(grid_cell_kernel<P3DC_NMS_CIRCLE>, kGridThreads,
                          multiprocessors, warp_grid_for(capacity),
                          &self->grid_cell_blocks[P3DC_NMS_CIRCLE]);
    if (err == cudaSuccess)
      err = cudaMalloc(&self->grid_bounds, sizeof(GridBounds));
    if (err == cudaSuccess)
      err = cudaMalloc(&self->grid_place, (size_t)capacity * sizeof(uint2));
    if (err == cudaSuccess)
      err = cudaMalloc(&self->cell_counts, kGridCells * sizeof(uint32_t));
    if (err == cudaSuccess)
      err = cudaMalloc(&self->cell_starts, (kGridCells + 1) * sizeof(uint32_t));
    if (err == cudaSuccess)
      err = cudaMalloc(&self->binned, (size_t)capacity * sizeof(P3dcNmsItem));
    if (err == cudaSuccess)
      err =
          cudaMalloc(&self->binned_index, (size_t)capacity * sizeof(uint32_t));
  }
  // the fills ran on the legacy stream, which the callers' non-blocking
  // streams do not wait for
  if (err == cudaSuccess) err = cudaStreamSynchronize(0);
  if (err != cudaSuccess) {
    p3dc_nms_free(self);
    return err;
  }
  *nms = self;
  return P3DC_OK;
}

// One call's arguments, as its stages take them.
struct NmsCall {
  const P3dcNmsParams *params;
  P3dcNmsPairTest test;
  const void *boxes;
  const uint32_t *n_boxes_device;
  // zeroed with the call, padding included (p3dc_nms_cuda)
  CallOutput output;
  uint32_t record_words;
  uint32_t limit;
};

// min (pre_max, capacity), pre_max 0 meaning none.
static uint32_t pre_limit_of(const P3dcNms *nms, const NmsCall &c) {
  const uint32_t capacity = nms->capacity;
  return c.params->pre_max > 0 && c.params->pre_max < capacity
             ? c.params->pre_max
             : capacity;
}

// Stage 1 (nms_sort.cuh); its first kernel is never chained: it overwrites
// what the previous call's last kernel reads.  Where CUB sorts (above
// kChunkSortCapacity boxes), on the launcher's stream only: CUB's sort is
// queued there directly (call_graph).
static cudaError_t sort_stage(P3dcNms *nms, const NmsCall &c, P3dcLauncher &l) {
  const float offset = c.test.offset;
  const uint32_t capacity = nms->capacity;
  const uint32_t pre_limit = pre_limit_of(nms, c);
  const P3dcNmsMode mode = c.params->mode;
  const float threshold = c.params->score_threshold;

  if (capacity <= kRankCapacity) {
    const unsigned blocks = (capacity + kRankBoxes - 1) / kRankBoxes;
    return l.launch(rank_kernel, blocks, kRankThreads, 0, false, mode, c.boxes,
                    c.n_boxes_device, capacity, threshold, pre_limit, offset,
                    nms->items, nms->index_out, nms->item_count,
                    nms->pair_counts, c.output, nms->call);
  }

  if (!nms->chunk_sort && !l.on_stream()) return cudaErrorInvalidValue;
  cudaError_t err =
      l.launch(key_kernel, grid_for(capacity), kThreads, 0, false, mode,
               c.boxes, c.n_boxes_device, capacity, threshold, nms->keys_in,
               nms->index_in, nms->sort_count, grid_of(nms, mode),
               nms->cell_counts, c.output, nms->call);
  if (err != cudaSuccess) return err;
  if (nms->chunk_sort) {
    err =
        l.launch(chunk_sort_kernel, (capacity + kChunkBoxes - 1) / kChunkBoxes,
                 kChunkThreads, 0, nms->can_chain, nms->keys_in, nms->index_in,
                 capacity, (const uint32_t *)nms->sort_count);
    if (err == cudaSuccess)
      err = l.launch(
          chunk_merge_kernel, (capacity + kMergeThreads - 1) / kMergeThreads,
          kMergeThreads, chunk_merge_shared_bytes(capacity), nms->can_chain,
          (const uint32_t *)nms->keys_in, (const uint32_t *)nms->index_in,
          (const uint32_t *)nms->sort_count, nms->keys_out, nms->index_out);
  } else {
    size_t sort_bytes = nms->sort_storage_bytes;
    err = cub::DeviceRadixSort::SortPairs(
        nms->sort_storage, sort_bytes, nms->keys_in, nms->keys_out,
        nms->index_in, nms->index_out, (int)capacity, 0, 32, l.stream());
    if (err == cudaSuccess) err = cudaGetLastError();
  }
  if (err != cudaSuccess) return err;
  return l.launch(item_kernel, grid_for(capacity), kThreads, 0, nms->can_chain,
                  c.test, (const CallOutput *)nms->call,
                  (const uint32_t *)nms->keys_out,
                  (const uint32_t *)nms->index_out,
                  (const uint32_t *)nms->sort_count, pre_limit, nms->items,
                  nms->item_count, nms->pair_counts, grid_of(nms, mode));
}

// Stage 2 through the grid (nms_grid.cuh), for the modes grid_of() names:
// its kernels return at once where the call is not for the grid, and the
// dense kernel then runs.
template <P3dcNmsMode kMode>
static cudaError_t grid_stage_for(P3dcNms *nms, const NmsCall &c,
                                  P3dcLauncher &l) {
  const uint32_t capacity = nms->capacity;
  const uint32_t *count = nms->item_count;
  const GridBounds *bounds = nms->grid_bounds;
  const bool chained = nms->can_chain;
  PairLists lists;
  lists.counts = nms->pair_counts;
  lists.columns = nms->pair_columns;
  lists.rows = nms->pair_rows;
  cudaError_t err =
      l.launch(grid_cell_kernel<kMode>, nms->grid_cell_blocks[kMode],
               kGridThreads, 0, chained, (const P3dcNmsItem *)nms->items, count,
               c.test, bounds, nms->grid_place, nms->cell_counts, nms->mask);
  if (err == cudaSuccess)
    err = l.launch(grid_scan_kernel, 1, kScanThreads, 0, chained, count, bounds,
                   (const uint32_t *)nms->cell_counts, nms->cell_starts);
  if (err == cudaSuccess)
    err = l.launch(grid_bin_kernel, grid_for(capacity), kThreads, 0, chained,
                   (const P3dcNmsItem *)nms->items, count, bounds,
                   (const uint2 *)nms->grid_place,
                   (const uint32_t *)nms->cell_starts, nms->binned,
                   nms->binned_index);
  if (err == cudaSuccess)
    err = l.launch(grid_pair_kernel<kMode>, warp_grid_for(capacity),
                   kGridThreads, 0, chained, (const P3dcNmsItem *)nms->items,
                   count, c.test, bounds, (const uint2 *)nms->grid_place,
                   (const uint32_t *)nms->cell_starts,
                   (const P3dcNmsItem *)nms->binned,
                   (const uint32_t *)nms->binned_index, nms->mask, lists);
  return err;
}

static cudaError_t grid_stage(P3dcNms *nms, const NmsCall &c, P3dcLauncher &l) {
  if (c.params->mode == P3DC_NMS_CIRCLE)
    return grid_stage_for<P3DC_NMS_CIRCLE>(nms, c, l);
  return grid_stage_for<P3DC_NMS_BEV_ALIGNED>(nms, c, l);
}

// Stage 2 (nms_mask.cuh).
template <P3dcNmsMode kMode, P3dcNmsIouRule kRule = P3DC_NMS_IOU_RULE_EXACT>
static cudaError_t mask_stage_for(P3dcNms *nms, const NmsCall &c,
                                  unsigned blocks, P3dcLauncher &l) {
  PairLists lists;
  lists.counts = nms->pair_counts;
  lists.columns = nms->pair_columns;
  lists.rows = nms->pair_rows;
  return l.launch(mask_kernel<kMode, kRule>, blocks, kMaskThreads, 0,
                  nms->can_chain, (const P3dcNmsItem *)nms->items,
                  (const uint32_t *)nms->item_count, c.test, nms->mask,
                  nms->column_mask, lists,
                  (const GridBounds *)grid_of(nms, kMode));
}

static cudaError_t mask_stage(P3dcNms *nms, const NmsCall &c, P3dcLauncher &l) {
  const P3dcNmsMode mode = c.params->mode;
  const unsigned blocks = nms->mask_blocks[mode];
  if (mode == P3DC_NMS_BEV_ROTATED && c.test.iou_rule == P3DC_NMS_IOU_RULE_MMCV)
    return mask_stage_for<P3DC_NMS_BEV_ROTATED, P3DC_NMS_IOU_RULE_MMCV>(
        nms, c, nms->mmcv_mask_blocks, l);
  switch (mode) {
    case P3DC_NMS_IOU:
      return mask_stage_for<P3DC_NMS_IOU>(nms, c, blocks, l);
    case P3DC_NMS_BEV_ALIGNED:
      return mask_stage_for<P3DC_NMS_BEV_ALIGNED>(nms, c, blocks, l);
    case P3DC_NMS_CIRCLE:
      return mask_stage_for<P3DC_NMS_CIRCLE>(nms, c, blocks, l);
    default:
      return mask_stage_for<P3DC_NMS_BEV_ROTATED>(nms, c, blocks, l);
  }
}

// A call of a small workspace (nms_small.cuh): one kernel, never chained
// (it overwrites what the previous call's last block reads).
template <P3dcNmsMode kMode, P3dcNmsIouRule kRule = P3DC_NMS_IOU_RULE_EXACT>
static cudaError_t small_call_for(P3dcNms *nms, const NmsCall &c,
                                  P3dcLauncher &l) {
  return l.launch(small_kernel<kMode, kRule>, small_blocks(nms->capacity),
                  kSmallThreads, 0, false, c.boxes, c.n_boxes_device,
                  nms->capacity, c.params->score_threshold,
                  pre_limit_of(nms, c), c.test, nms->column_mask, nms->ranks,
                  nms->done, c.output, c.record_words, c.limit);
}

static cudaError_t small_call(P3dcNms *nms, const NmsCall &c, P3dcLauncher &l) {
  if (c.params->mode == P3DC_NMS_BEV_ROTATED &&
      c.test.iou_rule == P3DC_NMS_IOU_RULE_MMCV)
    return small_call_for<P3DC_NMS_BEV_ROTATED, P3DC_NMS_IOU_RULE_MMCV>(nms, c,
                                                                        l);
  switch (c.params->mode) {
    case P3DC_NMS_IOU:
      return small_call_for<P3DC_NMS_IOU>(nms, c, l);
    case P3DC_NMS_BEV_ALIGNED:
      return small_call_for<P3DC_NMS_BEV_ALIGNED>(nms, c, l);
    case P3DC_NMS_CIRCLE:
      return small_call_for<P3DC_NMS_CIRCLE>(nms, c, l);
    default:
      return small_call_for<P3DC_NMS_BEV_ROTATED>(nms, c, l);
  }
}

// The call's kernels through @l: one in a small workspace, else the three
// stages.
static cudaError_t queue_call(P3dcNms *nms, const NmsCall &c, P3dcLauncher &l) {
  if (nms->capacity <= kSmallCapacity) return small_call(nms, c, l);
  cudaError_t err = sort_stage(nms, c, l);
  if (err == cudaSuccess && grid_of(nms, c.params->mode) != nullptr)
    err = grid_stage(nms, c, l);
  if (err == cudaSuccess) err = mask_stage(nms, c, l);
  if (err != cudaSuccess) return err;
  return l.launch(
      nms->reduce, nms->reduce_blocks, kReduceThreads, nms->list_shared_bytes,
      nms->can_chain, (const unsigned long long *)nms->mask,
      (const unsigned long long *)nms->column_mask, nms->capacity,
      (const uint2 *)nms->pair_counts, (const uint16_t *)nms->pair_columns,
      (const uint16_t *)nms->pair_rows, (const uint32_t *)nms->item_count,
      (const uint32_t *)nms->index_out, (const CallOutput *)nms->call,
      c.record_words, c.limit);
}

// The graph a call on @nms takes: its sequence of kernels is set by the
// mode (which sets the mask kernel, and whether the grid's kernels run)
// and bev-rotated's rule.  NULL where CUB sorts, whose sort is queued on
// the stream: there the kernels are launched one by one.
static P3dcKernelGraph *call_graph(P3dcNms *nms, const NmsCall &c) {
  if (nms->capacity > kRankCapacity && !nms->chunk_sort) return nullptr;
  return &nms->graphs[c.test.iou_rule == P3DC_NMS_IOU_RULE_MMCV
                          ? kNmsGraphs - 1
                          : (unsigned)c.params->mode];
}

extern "C" P3dcResult p3dc_nms_cuda(P3dcNms *nms, const P3dcNmsParams *params,
                                    const void *boxes,
                                    const uint32_t *n_boxes_device, void *out,
                                    uint32_t out_capacity, uint32_t *out_count,
                                    int32_t *kept_index,
                                    P3dcCudaStream stream) {
  if (nms == nullptr || p3dc_nms_params_check(params) != P3DC_OK ||
      boxes == nullptr || n_boxes_device == nullptr || out_count == nullptr ||
      (out == nullptr && out_capacity > 0))
    return P3DC_ERROR_INVALID_ARGUMENT;
  // records are copied as 32-bit words
  if ((((uintptr_t)boxes) | ((uintptr_t)out)) % 4 != 0)
    return P3DC_ERROR_INVALID_ARGUMENT;

  // every byte zeroed, padding included: the graph's nodes compare their
  // arguments by their bytes (kernel_graph.cuh)
  NmsCall c;
  memset(&c, 0, sizeof c);
  c.params = params;
  p3dc_nms_pair_test_init(&c.test, params);
  c.boxes = boxes;
  c.n_boxes_device = n_boxes_device;
  c.record_words =
      (uint32_t)(p3dc_nms_record_size(params->mode) / sizeof(uint32_t));
  c.limit = out_capacity;
  if (params->post_max > 0 && params->post_max < c.limit)
    c.limit = params->post_max;
  c.output.boxes = (const uint32_t *)boxes;
  c.output.out = (uint32_t *)out;
  c.output.kept_index = kept_index;
  c.output.out_count = out_count;
  c.output.words = (size_t)out_capacity * c.record_words;
  c.output.capacity = out_capacity;

  cudaStream_t s = (cudaStream_t)stream;
  auto queue = [nms, &c](P3dcLauncher &l) {
    if (nms->refuse_graph_builds && !l.on_stream())
      return cudaErrorNotSupported;
    return queue_call(nms, c, l);
  };
  P3dcKernelGraph *graph = call_graph(nms, c);
  if (graph != nullptr)
    return p3dc_kernel_graph_run(graph, nms->can_chain, queue, s);
  P3dcLauncher l = P3dcLauncher::on_stream(s);
  return queue(l);
}

namespace {

__global__ void gather_kernel(const int32_t *__restrict__ kept_index,
                              uint32_t capacity,
                              const uint32_t *__restrict__ payload,
                              uint32_t words, uint32_t *__restrict__ out) {
  const size_t total = (size_t)capacity * words;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    const int32_t index = kept_index[i / words];
    out[i] = index < 0 ? 0u : payload[(size_t)index * words + i % words];
  }
}

}  // namespace

extern "C" P3dcResult p3dc_nms_gather_cuda(const int32_t *kept_index,
                                           uint32_t capacity,
                                           const void *payload, uint32_t words,
                                           void *out, P3dcCudaStream stream) {
  if (words == 0 || (capacity > 0 && (kept_index == nullptr ||
                                      payload == nullptr || out == nullptr)))
    return P3DC_ERROR_INVALID_ARGUMENT;
  if ((((uintptr_t)kept_index) | ((uintptr_t)payload) | ((uintptr_t)out)) % 4 !=
      0)
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (capacity == 0) return P3DC_OK;
  const size_t total = (size_t)capacity * words;
  const unsigned threads = 256;
  const unsigned blocks = (unsigned)((total + threads - 1) / threads < 1024
                                         ? (total + threads - 1) / threads
                                         : 1024);
  gather_kernel<<<blocks, threads, 0, (cudaStream_t)stream>>>(
      kept_index, capacity, (const uint32_t *)payload, words, (uint32_t *)out);
  return cudaGetLastError();
}
