// Non-maximum suppression on the device; the reference is nms_cpu.c.
//
// Three stages queued on the caller's stream, none of them waiting for the
// host, the input count read and the output count written on the device:
//  1. the boxes that take part, sorted by score, and their number m
//     (nms_sort.cuh): up to 4096 boxes one kernel that works only on the
//     count; above, CUB's device sort over the whole capacity;
//  2. the suppression mask, one bit per pair (nms_mask.cuh), which also
//     zeroes the output;
//  3. the greedy keep-reduction and the kept records, in one block
//     (nms_reduce.cuh).
// Stages 2 and 3 read m and do only the work it needs.  Each kernel after
// the first is launched as a programmatic dependent of the one before
// (nms_common.cuh), on devices that have it.
//
// nms_legacy.cuh holds the previous design of each stage, which
// p3d_nms_cuda_variant (nms-private.h) can run instead, for the benchmark.
#include <cuda_runtime.h>
#include <stdlib.h>

#include <cub/device/device_radix_sort.cuh>

#include "nms-private.h"
#include "nms.h"
#include "nms_common.cuh"
#include "nms_item.h"
#include "nms_legacy.cuh"
#include "nms_mask.cuh"
#include "nms_reduce.cuh"
#include "nms_sort.cuh"

struct _P3dNms {
  uint32_t capacity;
  // the device has programmatic dependent launch (compute capability 9.0)
  bool can_chain;
  // blocks of the mask kernels, which loop over the tiles: as many as the
  // GPU holds at once, at most one a tile of a full workspace; by mode
  unsigned mask_blocks[4];
  unsigned legacy_mask_blocks;
  uint32_t *keys_in, *keys_out;
  uint32_t *index_in, *index_out;
  P3dNmsItem *items;
  uint32_t *item_count;
  unsigned long long *mask;
  void *sort_storage;
  size_t sort_storage_bytes;
};

namespace p3d_nms {

constexpr unsigned kThreads = 256;

static unsigned grid_for(uint32_t count) {
  uint32_t blocks = (count + kThreads - 1) / kThreads;
  return blocks < 4096 ? blocks : 4096;
}

// Launches @kernel on @stream, and with @chained as a programmatic dependent
// of the kernel before it on the stream: it may start before that one ends,
// and waits for it in wait_for_previous_kernel().  Every kernel of nms.cu
// makes that call before touching global memory.
template <typename... Params, typename... Args>
static cudaError_t launch(bool chained, unsigned blocks, unsigned threads,
                          cudaStream_t stream, void (*kernel)(Params...),
                          Args... args) {
  cudaLaunchAttribute attribute;
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = chained ? 1 : 0;
  cudaError_t err = cudaLaunchKernelEx(&config, kernel, args...);
  if (err == cudaSuccess) err = cudaGetLastError();
  return err;
}

// Blocks of @kernel (kMaskThreads threads) that fit on the device at once,
// and no more than @tiles.
template <typename Kernel>
static cudaError_t mask_grid(Kernel kernel, int multiprocessors, size_t tiles,
                             unsigned *blocks) {
  int per_multiprocessor = 0;
  cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_multiprocessor, kernel, kMaskThreads, 0);
  if (err != cudaSuccess) return err;
  size_t most = (size_t)(per_multiprocessor > 0 ? per_multiprocessor : 1) *
                (size_t)(multiprocessors > 0 ? multiprocessors : 1);
  *blocks = (unsigned)(tiles < most ? tiles : most);
  if (*blocks == 0) *blocks = 1;
  return cudaSuccess;
}

}  // namespace p3d_nms

using namespace p3d_nms;

extern "C" void p3d_nms_free(P3dNms *nms) {
  if (nms == nullptr) return;
  cudaFree(nms->keys_in);
  cudaFree(nms->keys_out);
  cudaFree(nms->index_in);
  cudaFree(nms->index_out);
  cudaFree(nms->items);
  cudaFree(nms->item_count);
  cudaFree(nms->mask);
  cudaFree(nms->sort_storage);
  free(nms);
}

extern "C" uint32_t p3d_nms_get_capacity(const P3dNms *nms) {
  return nms != nullptr ? nms->capacity : 0;
}

extern "C" P3dResult p3d_nms_new(uint32_t capacity, P3dNms **nms) {
  if (nms == nullptr) return P3D_ERROR_INVALID_ARGUMENT;
  *nms = nullptr;
  if (capacity == 0) return P3D_ERROR_INVALID_ARGUMENT;
  if (capacity > P3D_NMS_MAX_CAPACITY) return P3D_ERROR_TOO_LARGE;

  P3dNms *self = (P3dNms *)calloc(1, sizeof(P3dNms));
  if (self == nullptr) return P3D_ERROR_OUT_OF_MEMORY;
  self->capacity = capacity;
  const size_t words = (capacity + kTile - 1) / kTile;
  const size_t tiles = words * (words + 1) / 2;

  cudaError_t err = cudaSuccess;
  int device = 0, multiprocessors = 0, major = 0;
  if (err == cudaSuccess) err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&multiprocessors,
                                 cudaDevAttrMultiProcessorCount, device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                                 device);
  self->can_chain = major >= 9;
  if (err == cudaSuccess)
    err = mask_grid(mask_kernel<P3D_NMS_IOU>, multiprocessors, tiles,
                    &self->mask_blocks[P3D_NMS_IOU]);
  if (err == cudaSuccess)
    err = mask_grid(mask_kernel<P3D_NMS_BEV_ROTATED>, multiprocessors, tiles,
                    &self->mask_blocks[P3D_NMS_BEV_ROTATED]);
  if (err == cudaSuccess)
    err = mask_grid(mask_kernel<P3D_NMS_BEV_ALIGNED>, multiprocessors, tiles,
                    &self->mask_blocks[P3D_NMS_BEV_ALIGNED]);
  if (err == cudaSuccess)
    err = mask_grid(mask_kernel<P3D_NMS_CIRCLE>, multiprocessors, tiles,
                    &self->mask_blocks[P3D_NMS_CIRCLE]);
  // the previous mask kernels: 64-thread blocks, 32 of which fill a
  // multiprocessor
  const size_t legacy_blocks = (size_t)multiprocessors * 32;
  self->legacy_mask_blocks =
      (unsigned)(tiles < legacy_blocks ? tiles : legacy_blocks);
  if (self->legacy_mask_blocks == 0) self->legacy_mask_blocks = 1;

  const size_t bytes = (size_t)capacity * sizeof(uint32_t);
  if (err == cudaSuccess) err = cudaMalloc(&self->index_out, bytes);
  if (err == cudaSuccess)
    err = cudaMalloc(&self->items, (size_t)capacity * sizeof(P3dNmsItem));
  if (err == cudaSuccess) err = cudaMalloc(&self->item_count, sizeof(uint32_t));
  if (err == cudaSuccess)
    err = cudaMalloc(&self->mask,
                     (size_t)capacity * words * sizeof(unsigned long long));
  // the buffers of the device-wide sort, for capacities one kernel can't
  // sort
  if (capacity > kRankCapacity) {
    if (err == cudaSuccess) err = cudaMalloc(&self->keys_in, bytes);
    if (err == cudaSuccess) err = cudaMalloc(&self->keys_out, bytes);
    if (err == cudaSuccess) err = cudaMalloc(&self->index_in, bytes);
    if (err == cudaSuccess)
      err = cub::DeviceRadixSort::SortPairs(
          nullptr, self->sort_storage_bytes, self->keys_in, self->keys_out,
          self->index_in, self->index_out, (int)capacity);
    if (err == cudaSuccess)
      err = cudaMalloc(&self->sort_storage, self->sort_storage_bytes);
  }
  if (err != cudaSuccess) {
    p3d_nms_free(self);
    return err;
  }
  *nms = self;
  return P3D_OK;
}

// Stage 1 (nms_sort.cuh, or the previous one-block sort); its first kernel
// is never chained: it overwrites what the previous call's last kernel
// reads.
static cudaError_t sort_stage(P3dNms *nms, const P3dNmsParams *params,
                              const void *boxes, const uint32_t *n_boxes_device,
                              float offset, P3dNmsSortStage design,
                              bool chained, cudaStream_t s) {
  const uint32_t capacity = nms->capacity;
  uint32_t pre_limit = capacity;
  if (params->pre_max > 0 && params->pre_max < pre_limit)
    pre_limit = params->pre_max;
  const P3dNmsMode mode = params->mode;
  const float threshold = params->score_threshold;

  if (capacity <= kRankCapacity && design == P3D_NMS_SORT_RANK) {
    const unsigned blocks = (capacity + kRankBoxes - 1) / kRankBoxes;
    return launch(false, blocks, kRankThreads, s, rank_kernel, mode, boxes,
                  n_boxes_device, capacity, threshold, pre_limit, offset,
                  nms->items, nms->index_out, nms->item_count);
  }
  if (capacity <= legacy::kTinyCapacity)
    return launch(false, 1, 256, s, legacy::sort_small_kernel<256, 4>, mode,
                  boxes, n_boxes_device, capacity, threshold, pre_limit, offset,
                  nms->items, nms->index_out, nms->item_count);
  if (capacity <= legacy::kSmallCapacity)
    return launch(false, 1, 512, s, legacy::sort_small_kernel<512, 8>, mode,
                  boxes, n_boxes_device, capacity, threshold, pre_limit, offset,
                  nms->items, nms->index_out, nms->item_count);

  cudaError_t err =
      launch(false, grid_for(capacity), kThreads, s, key_kernel, mode, boxes,
             n_boxes_device, capacity, threshold, nms->keys_in, nms->index_in);
  if (err != cudaSuccess) return err;
  size_t sort_bytes = nms->sort_storage_bytes;
  err = cub::DeviceRadixSort::SortPairs(
      nms->sort_storage, sort_bytes, nms->keys_in, nms->keys_out, nms->index_in,
      nms->index_out, (int)capacity, 0, 32, s);
  if (err != cudaSuccess) return err;
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  return launch(chained, grid_for(capacity), kThreads, s, item_kernel, mode,
                boxes, (const uint32_t *)nms->keys_out,
                (const uint32_t *)nms->index_out, capacity, pre_limit, offset,
                nms->items, nms->item_count);
}

// Stage 2 (nms_mask.cuh, or the previous kernels); both zero the output.
static cudaError_t mask_stage(P3dNms *nms, P3dNmsMode mode,
                              const P3dNmsPairTest &test,
                              const OutputFill &fill, P3dNmsMaskStage design,
                              bool chained, cudaStream_t s) {
  const P3dNmsItem *items = nms->items;
  const uint32_t *count = nms->item_count;
  if (design == P3D_NMS_MASK_FILTERED) {
    const unsigned blocks = nms->mask_blocks[mode];
    switch (mode) {
      case P3D_NMS_IOU:
        return launch(chained, blocks, kMaskThreads, s,
                      mask_kernel<P3D_NMS_IOU>, items, count, test, nms->mask,
                      fill);
      case P3D_NMS_BEV_ALIGNED:
        return launch(chained, blocks, kMaskThreads, s,
                      mask_kernel<P3D_NMS_BEV_ALIGNED>, items, count, test,
                      nms->mask, fill);
      case P3D_NMS_CIRCLE:
        return launch(chained, blocks, kMaskThreads, s,
                      mask_kernel<P3D_NMS_CIRCLE>, items, count, test,
                      nms->mask, fill);
      default:
        return launch(chained, blocks, kMaskThreads, s,
                      mask_kernel<P3D_NMS_BEV_ROTATED>, items, count, test,
                      nms->mask, fill);
    }
  }
  const unsigned blocks = nms->legacy_mask_blocks;
  switch (mode) {
    case P3D_NMS_IOU:
      return launch(chained, blocks, kTile, s,
                    legacy::mask_direct_kernel<P3D_NMS_IOU>, items, count, test,
                    nms->mask, fill);
    case P3D_NMS_BEV_ALIGNED:
      return launch(chained, blocks, kTile, s,
                    legacy::mask_direct_kernel<P3D_NMS_BEV_ALIGNED>, items,
                    count, test, nms->mask, fill);
    case P3D_NMS_CIRCLE:
      return launch(chained, blocks, kTile, s,
                    legacy::mask_direct_kernel<P3D_NMS_CIRCLE>, items, count,
                    test, nms->mask, fill);
    default:
      return launch(chained, blocks, kTile, s, legacy::mask_rotated_kernel,
                    items, count, test, nms->mask, fill);
  }
}

extern "C" P3dResult p3d_nms_cuda_variant(
    P3dNms *nms, const P3dNmsParams *params, const void *boxes,
    const uint32_t *n_boxes_device, void *out, uint32_t out_capacity,
    uint32_t *out_count, int32_t *kept_index, P3dCudaStream stream,
    const P3dNmsVariant *variant, P3dCudaEvent *stage_events) {
  if (nms == nullptr || p3d_nms_params_check(params) != P3D_OK ||
      boxes == nullptr || n_boxes_device == nullptr || out_count == nullptr ||
      (out == nullptr && out_capacity > 0))
    return P3D_ERROR_INVALID_ARGUMENT;
  // records are copied as 32-bit words
  if ((((uintptr_t)boxes) | ((uintptr_t)out)) % 4 != 0)
    return P3D_ERROR_INVALID_ARGUMENT;
  P3dNmsVariant defaults;
  if (variant == nullptr) {
    p3d_nms_variant_init(&defaults);
    variant = &defaults;
  }

  const uint32_t record_words =
      (uint32_t)(p3d_nms_record_size(params->mode) / sizeof(uint32_t));
  uint32_t limit = out_capacity;
  if (params->post_max > 0 && params->post_max < limit)
    limit = params->post_max;
  P3dNmsPairTest test;
  p3d_nms_pair_test_init(&test, params);
  // an event between two kernels leaves nothing to chain to
  const bool chained =
      variant->chained && nms->can_chain && stage_events == nullptr;
  cudaStream_t s = (cudaStream_t)stream;
  cudaError_t err;

  err = sort_stage(nms, params, boxes, n_boxes_device, test.offset,
                   variant->sort, chained, s);
  if (err != cudaSuccess) return err;
  if (stage_events != nullptr &&
      (err = cudaEventRecord((cudaEvent_t)stage_events[0], s)) != cudaSuccess)
    return err;

  OutputFill fill;
  fill.out = (uint32_t *)out;
  fill.words = (size_t)out_capacity * record_words;
  fill.kept_index = kept_index;
  fill.capacity = out_capacity;
  err = mask_stage(nms, params->mode, test, fill, variant->mask, chained, s);
  if (err != cudaSuccess) return err;
  if (stage_events != nullptr &&
      (err = cudaEventRecord((cudaEvent_t)stage_events[1], s)) != cudaSuccess)
    return err;

  if (variant->reduce == P3D_NMS_REDUCE_CHUNKED)
    err = launch(chained, 1, kReduceThreads, s, reduce_kernel,
                 (const unsigned long long *)nms->mask,
                 (const uint32_t *)nms->item_count,
                 (const uint32_t *)nms->index_out, (const uint32_t *)boxes,
                 record_words, limit, (uint32_t *)out, out_count, kept_index);
  else
    err = launch(
        chained, 1, legacy::kReduceThreads, s, legacy::reduce_tiled_kernel,
        (const unsigned long long *)nms->mask,
        (const uint32_t *)nms->item_count, (const uint32_t *)nms->index_out,
        (const uint32_t *)boxes, record_words, limit, (uint32_t *)out,
        out_capacity, out_count, kept_index);
  return err;
}

extern "C" P3dResult p3d_nms_cuda(P3dNms *nms, const P3dNmsParams *params,
                                  const void *boxes,
                                  const uint32_t *n_boxes_device, void *out,
                                  uint32_t out_capacity, uint32_t *out_count,
                                  int32_t *kept_index, P3dCudaStream stream) {
  return p3d_nms_cuda_variant(nms, params, boxes, n_boxes_device, out,
                              out_capacity, out_count, kept_index, stream,
                              nullptr, nullptr);
}
