// Anchor-head decode on the device; the reference is anchor3d_decode_cpu.c
// and the arithmetic both share is in anchor3d_decode-private.h.
//
// Per frame, on one stream, with no allocation and no host synchronization:
//  1. score_kernel: one thread per anchor scores it (its largest class
//     score, or each class's for OpenPCDet's per-class NMS) and appends
//     the sort key of a candidate to its list (one atomic per warp and
//     list), in whatever order the atomics give.
//  2. cut_kernel, one block per list, and rank_kernel, many: each list's
//     pre_max largest keys, sorted (p3dc_topk_cut and p3dc_topk_rank,
//     decode_lists.cuh; the keys are unique, so the result is the same
//     whatever the list's order).
//     mmdetection3d: those keep the nms_pre anchors; split_kernel, one
//     block per class, lists those whose class score passes, keyed by
//     score and rank, and rank_kernel sorts them.
//  3. decode_kernel: blocks of kDecodeThreads sorted keys of every list
//     decode their boxes, each with its NMS view, and pack the finite ones
//     at the start of the block's range (block scan, so the order is
//     kept); place_kernel moves each block's boxes after those of the
//     blocks before it.  Decoding is most of the per-box work: one block
//     decoding a whole list took about 30 us a thousand boxes on the H200
//     (Nsight Compute's clocks), the two kernels 20 us for 488; the
//     packing is two passes because a block's place depends on every
//     block before it.
//  4. OpenPCDet's class-agnostic list under a rotated NMS goes to the
//     library's nms (nms.h): its decoded boxes, already in score order, are
//     records that p3dc_nms_cuda takes as they are (its stable sort keeps
//     that order, its greedy rule is the walk's, and it writes the output,
//     zeroes and count), and p3dc_nms_gather_cuda carries the velocities.
//     One list of up to 4096 boxes is what nms's keep reduction is built
//     for; the one-block walk below went 64 boxes a barrier and was half of
//     PointPillars' chain (docs/performance.md).  The other lists (per
//     class, each with its own post_max, or an axis-aligned or no NMS):
//  5. mask_kernel: 64 x 64 tiles of the suppression bits per list
//     (p3dc_nms_mask_tile), a few blocks a multiprocessor walking the
//     tiles the lists' boxes need (none without a NMS).
//  6. walk_kernel: one block per list walks its boxes best first
//     (p3dc_nms_walk_list; without a NMS it takes them all), up to
//     post_max.
//  7. reduce_kernel: one block writes the kept boxes one list after
//     another (mmdetection3d, when they are more than max_num: each box at
//     its rank in the merge of the lists by score), zeroes the rest of the
//     output and writes the count.
#include <cuda_runtime.h>

#include <cub/block/block_scan.cuh>
#include <new>

#include "anchor3d_decode-private.h"
#include "anchor3d_decode.h"
#include "decode_lists.cuh"
#include "nms.h"

namespace {

constexpr unsigned kScoreThreads = 256;
constexpr unsigned kDecodeThreads = 256;
constexpr unsigned kDecodeBlocks =
    (P3DC_ANCHOR3D_MAX_PRE + kDecodeThreads - 1) / kDecodeThreads;
static_assert(P3DC_ANCHOR3D_MAX_PRE <= kTopkMaxKeys,
              "pre_max keys fit one top-k");
static_assert(P3DC_ANCHOR3D_MAX_PRE <= 64 * 64, "at most 64 mask words");
constexpr unsigned kReduceThreads = 256;

// The anchors on the device.
struct Anchors {
  const P3dcAnchor3dShape *shapes;  // [A]
  const float *x;                   // [A][W]
  const float *y;                   // [A][H]
  uint32_t n_anchors, height, width;
};

struct Workspace {
  unsigned long long *keys;  // [stage-1 lists][cells]: candidates
  uint32_t *candidates;      // [stage-1 lists]
  // [stage-1 lists][kTopkMaxKeys]: the keys in play of a list longer than
  // that, and their number
  unsigned long long *gathered;
  uint32_t *gathered_count;
  unsigned long long *top;        // [stage-1 lists][pre_max], sorted
  unsigned long long *split;      // mmdetection3d: [classes][pre_max] listed
  unsigned long long *split_top;  // and sorted
  uint32_t *split_count;          // mmdetection3d: [classes] listed
  uint32_t *box_count;            // [lists]: finite boxes
  P3dcBox3d *boxes;               // [lists][pre_max]
  // [lists][pre_max], as the walk's NMS sees them; nullptr when the
  // library's nms takes the list (it makes its own)
  P3dcA3Rect *rects;
  float *velocity;  // [lists][pre_max][2]
  // decode_kernel's output: each block's finite boxes from the start of
  // its range, and their number
  P3dcBox3d *decoded;         // [lists][pre_max]
  P3dcA3Rect *decoded_rects;  // [lists][pre_max], or nullptr as rects
  float *decoded_velocity;    // [lists][pre_max][2]
  uint32_t *block_count;      // [lists][pre_max / kDecodeThreads]
  unsigned long long *mask;   // [lists][pre_max][words]
  uint32_t *kept;             // [lists][pre_max]
  uint32_t *kept_count;       // [lists]
};

__global__ void __launch_bounds__(kScoreThreads)
    score_kernel(const P3dcAnchor3dParams p, const P3dcAnchor3dMaps maps,
                 const Anchors anchors, Workspace w, uint32_t cells) {
  const uint32_t a = blockIdx.x * blockDim.x + threadIdx.x;
  const bool inside = a < cells;
  const uint32_t k = inside ? a % anchors.n_anchors : 0;
  const uint32_t cell = inside ? a / anchors.n_anchors : 0;
  const uint32_t y = cell / anchors.width, x = cell % anchors.width;
  if (p.rules == P3DC_ANCHOR3D_OPENPCDET && p.per_class) {
    for (uint32_t c = 0; c < p.num_classes; c++) {
      const float s = inside ? p3dc_a3_class_score(&p, &maps, k, c, y, x) : 0;
      p3dc_append_warp(w.keys + (size_t)c * cells, w.candidates + c,
                       inside && p3dc_a3_passes(&p, s), p3dc_a3_key(s, a));
    }
  } else {
    int32_t label;
    const float s =
        inside ? p3dc_a3_best_score(&p, &maps, k, y, x, &label) : 0.0f;
    p3dc_append_warp(w.keys, w.candidates, inside && p3dc_a3_passes(&p, s),
                     p3dc_a3_key(s, a));
  }
}

// The keys in play for list blockIdx.x's pre_max best.
__global__ void __launch_bounds__(kTopkThreads)
    cut_kernel(const P3dcAnchor3dParams p, Workspace w, uint32_t cells) {
  const uint32_t list = blockIdx.x;
  const uint32_t n = w.candidates[list];
  p3dc_topk_cut<P3DC_A3_KEY_BITS>(
      w.keys + (size_t)list * cells, n, min(n, p.pre_max),
      w.gathered + (size_t)list * kTopkMaxKeys, w.gathered_count + list);
}

// Block blockIdx.x's share of list blockIdx.y's pre_max best keys, sorted,
// in w.top; with @split (mmdetection3d), of class blockIdx.y's list, all
// its keys, in w.split_top.
__global__ void __launch_bounds__(kTopkRankThreads)
    rank_kernel(const P3dcAnchor3dParams p, Workspace w, uint32_t cells,
                bool split) {
  const uint32_t list = blockIdx.y;
  if (split) {
    const uint32_t count = w.split_count[list];
    p3dc_topk_rank(w.split + (size_t)list * p.pre_max, count, count,
                   w.split_top + (size_t)list * p.pre_max, blockIdx.x);
    return;
  }
  const uint32_t n = w.candidates[list];
  uint32_t count;
  const unsigned long long *keys =
      p3dc_topk_in_play(w.keys + (size_t)list * cells, n,
                        w.gathered + (size_t)list * kTopkMaxKeys,
                        w.gathered_count + list, &count);
  p3dc_topk_rank(keys, count, min(n, p.pre_max),
                 w.top + (size_t)list * p.pre_max, blockIdx.x);
}

// mmdetection3d: class blockIdx.x's list of the nms_pre anchors, unsorted,
// and its length.
__global__ void __launch_bounds__(kTopkThreads)
    split_kernel(const P3dcAnchor3dParams p, const P3dcAnchor3dMaps maps,
                 const Anchors anchors, Workspace w) {
  __shared__ uint32_t listed;
  const uint32_t c = blockIdx.x;
  const uint32_t n = min(w.candidates[0], p.pre_max);
  unsigned long long *list = w.split + (size_t)c * p.pre_max;
  if (threadIdx.x == 0) listed = 0;
  __syncthreads();
  // whole warps a step, for the warp's one atomic
  for (uint32_t base = 0; base < n; base += blockDim.x) {
    const uint32_t rank = base + threadIdx.x;
    bool take = false;
    unsigned long long key = 0;
    if (rank < n) {
      const uint32_t a = p3dc_a3_key_index(w.top[rank]);
      const uint32_t k = a % anchors.n_anchors, cell = a / anchors.n_anchors;
      const float s = p3dc_a3_class_score(&p, &maps, k, c, cell / anchors.width,
                                          cell % anchors.width);
      take = p3dc_a3_passes(&p, s);
      key = p3dc_a3_key(s, rank);
    }
    p3dc_append_warp(list, &listed, take, key);
  }
  __syncthreads();
  if (threadIdx.x == 0) w.split_count[c] = listed;
}

// Keys [blockIdx.x x kDecodeThreads, + kDecodeThreads) of list blockIdx.y
// (OpenPCDet: its sorted anchor keys; mmdetection3d: the class's sorted
// keys of ranks among the nms_pre) decoded: the finite boxes, in order,
// from the start of the block's range, with their NMS views and velocity,
// and their number.
__global__ void __launch_bounds__(kDecodeThreads)
    decode_kernel(const P3dcAnchor3dParams p, const P3dcAnchor3dMaps maps,
                  const Anchors anchors, Workspace w) {
  using Scan = cub::BlockScan<uint32_t, kDecodeThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  const bool mmdet3d = p.rules == P3DC_ANCHOR3D_MMDET3D;
  const uint32_t list = blockIdx.y;
  const uint32_t n =
      mmdet3d ? w.split_count[list] : min(w.candidates[list], p.pre_max);
  const uint32_t first = blockIdx.x * kDecodeThreads;
  if (first >= n) return;
  const unsigned long long *sorted =
      (mmdet3d ? w.split_top : w.top) + (size_t)list * p.pre_max;
  const uint32_t i = first + threadIdx.x;
  P3dcBox3d box;
  float vel[2], raw_yaw;
  uint32_t valid = 0;
  if (i < n) {
    const unsigned long long key = sorted[i];
    const float score = p3dc_a3_key_score(key);
    uint32_t a = p3dc_a3_key_index(key);
    if (mmdet3d) a = p3dc_a3_key_index(w.top[a]);
    const uint32_t k = a % anchors.n_anchors, cell = a / anchors.n_anchors;
    const uint32_t y = cell / anchors.width, x = cell % anchors.width;
    int32_t label = (int32_t)list;
    if (!mmdet3d && !p.per_class)
      p3dc_a3_best_score(&p, &maps, k, y, x, &label);
    valid = p3dc_a3_decode_box(&p, &anchors.shapes[k],
                               anchors.x[(size_t)k * anchors.width + x],
                               anchors.y[(size_t)k * anchors.height + y], &maps,
                               k, y, x, score, label, &box, &raw_yaw, vel);
  }
  uint32_t position, total;
  Scan(scan_storage).ExclusiveSum(valid, position, total);
  const size_t at = (size_t)list * p.pre_max + first + position;
  if (valid) {
    w.decoded[at] = box;
    w.decoded_velocity[2 * at] = vel[0];
    w.decoded_velocity[2 * at + 1] = vel[1];
    if (w.decoded_rects != nullptr)
      p3dc_a3_nms_rect(&p, &box, raw_yaw, w.decoded_rects + at);
  }
  if (threadIdx.x == 0)
    w.block_count[list * kDecodeBlocks + blockIdx.x] = total;
}

// Block blockIdx.x of list blockIdx.y's decoded boxes after those of the
// blocks before it; block 0 also writes the list's number of boxes.
__global__ void __launch_bounds__(kDecodeThreads)
    place_kernel(const P3dcAnchor3dParams p, Workspace w) {
  const bool mmdet3d = p.rules == P3DC_ANCHOR3D_MMDET3D;
  const uint32_t list = blockIdx.y;
  const uint32_t n =
      mmdet3d ? w.split_count[list] : min(w.candidates[list], p.pre_max);
  const uint32_t blocks = (n + kDecodeThreads - 1) / kDecodeThreads;
  const uint32_t *counts = w.block_count + list * kDecodeBlocks;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    uint32_t total = 0;
    for (uint32_t b = 0; b < blocks; b++) total += counts[b];
    w.box_count[list] = total;
  }
  if (blockIdx.x >= blocks) return;
  uint32_t offset = 0;
  for (uint32_t b = 0; b < blockIdx.x; b++) offset += counts[b];
  if (threadIdx.x >= counts[blockIdx.x]) return;
  const size_t from =
      (size_t)list * p.pre_max + blockIdx.x * kDecodeThreads + threadIdx.x;
  const size_t to = (size_t)list * p.pre_max + offset + threadIdx.x;
  w.boxes[to] = w.decoded[from];
  if (w.rects != nullptr) w.rects[to] = w.decoded_rects[from];
  w.velocity[2 * to] = w.decoded_velocity[2 * from];
  w.velocity[2 * to + 1] = w.decoded_velocity[2 * from + 1];
}

// The lists' mask tiles, only those their boxes need (a list of n boxes
// has ceil (n / 64)^2, half of them below the diagonal and skipped): the
// blocks walk them all, one tile a step, so that a pre_max of 4096 does
// not launch 64 x 64 blocks a list that mostly find nothing to do.
__global__ void __launch_bounds__(kNmsMaskThreads)
    mask_kernel(const P3dcAnchor3dParams p, Workspace w, uint32_t words,
                uint32_t lists) {
  for (uint32_t t = blockIdx.x;; t += gridDim.x) {
    uint32_t list = 0, first = 0, tiles = 0;
    for (; list < lists; list++) {
      tiles = (w.box_count[list] + kNmsMaskTile - 1) / kNmsMaskTile;
      if (t < first + tiles * tiles) break;
      first += tiles * tiles;
    }
    if (list == lists) return;
    p3dc_nms_mask_tile(w.rects + (size_t)list * p.pre_max, w.box_count[list],
                       (t - first) / tiles, (t - first) % tiles,
                       w.mask + (size_t)list * p.pre_max * words, words,
                       [&](const P3dcA3Rect &a, const P3dcA3Rect &b) {
                         return p3dc_a3_suppresses(p.nms, p.nms_threshold, &a,
                                                   &b) != 0;
                       });
    // the tile's shared memory is the next one's
    __syncthreads();
  }
}

// The kept boxes of @list with a score above @score, or equal to it when
// @equal_too: a prefix of the list, whose scores do not increase.
__device__ uint32_t kept_above(const P3dcAnchor3dParams &p, const Workspace &w,
                               uint32_t list, uint32_t count, float score,
                               bool equal_too) {
  const uint32_t *kept = w.kept + (size_t)list * p.pre_max;
  const P3dcBox3d *boxes = w.boxes + (size_t)list * p.pre_max;
  uint32_t low = 0, high = count;
  while (low < high) {
    const uint32_t middle = (low + high) / 2;
    const float s = boxes[kept[middle]].score;
    if (s > score || (equal_too && s == score))
      low = middle + 1;
    else
      high = middle;
  }
  return low;
}

// List blockIdx.x's kept boxes, best first, and their number.
__global__ void __launch_bounds__(kNmsWalkThreads)
    walk_kernel(const P3dcAnchor3dParams p, Workspace w, uint32_t words) {
  const uint32_t list = blockIdx.x;
  uint32_t *kept = w.kept + (size_t)list * p.pre_max;
  uint32_t count;
  if (p.nms == P3DC_ANCHOR3D_NMS_NONE) {
    // no suppression: the list's first post_max boxes
    count = min(w.box_count[list], p.post_max);
    for (uint32_t k = threadIdx.x; k < count; k += blockDim.x) kept[k] = k;
  } else {
    count = p3dc_nms_walk_list(w.mask + (size_t)list * p.pre_max * words, words,
                               w.box_count[list], p.post_max, kept);
  }
  if (threadIdx.x == 0) w.kept_count[list] = count;
}

__global__ void __launch_bounds__(kReduceThreads)
    reduce_kernel(const P3dcAnchor3dParams p, Workspace w, uint32_t lists,
                  uint32_t capacity, P3dcAnchor3dOutput out) {
  __shared__ uint32_t kept_count[P3DC_ANCHOR3D_MAX_CLASSES];
  for (uint32_t l = threadIdx.x; l < lists; l += blockDim.x)
    kept_count[l] = w.kept_count[l];
  __syncthreads();

  uint32_t total = 0;
  for (uint32_t l = 0; l < lists; l++) total += kept_count[l];
  // mmdetection3d keeps the max_num best of all lists, by score
  const bool merge = p.rules == P3DC_ANCHOR3D_MMDET3D && total > p.post_max;
  uint32_t first = 0;
  for (uint32_t l = 0; l < lists; l++) {
    const uint32_t *kept = w.kept + (size_t)l * p.pre_max;
    const P3dcBox3d *boxes = w.boxes + (size_t)l * p.pre_max;
    const float *velocity = w.velocity + (size_t)l * p.pre_max * 2;
    for (uint32_t k = threadIdx.x; k < kept_count[l]; k += blockDim.x) {
      const uint32_t b = kept[k];
      uint32_t at = first + k;
      if (merge) {
        // a stable sort of the lists' concatenation: an earlier list's
        // box of equal score comes first
        at = k;
        for (uint32_t other = 0; other < lists; other++)
          if (other != l)
            at += kept_above(p, w, other, kept_count[other], boxes[b].score,
                             other < l);
        if (at >= p.post_max) continue;
      }
      out.boxes[at] = boxes[b];
      if (out.velocity) {
        out.velocity[2 * at] = velocity[2 * b];
        out.velocity[2 * at + 1] = velocity[2 * b + 1];
      }
    }
    first += kept_count[l];
  }
  const uint32_t written = merge ? p.post_max : total;
  const P3dcBox3d zero = {};
  for (uint32_t k = written + threadIdx.x; k < capacity; k += blockDim.x) {
    out.boxes[k] = zero;
    if (out.velocity) {
      out.velocity[2 * k] = 0.0f;
      out.velocity[2 * k + 1] = 0.0f;
    }
  }
  if (threadIdx.x == 0) *out.count = written;
}

}  // namespace

struct _P3dcAnchor3dDecoder {
  P3dcAnchor3dParams params;
  uint32_t cells;         // H x W x A
  uint32_t select_lists;  // stage-1 lists
  uint32_t lists;         // NMS lists
  uint32_t words;
  uint32_t capacity;
  uint32_t mask_blocks;
  P3dcAnchor3dShape *shapes;
  float *x, *y;
  Anchors anchors;
  Workspace w;
  // the library's nms over the one list (step 4), or nullptr: the walk
  P3dcNms *nms;
  P3dcNmsParams nms_params;
  int32_t *kept_index;  // [capacity]: the list's index of each kept box
};

// Whether the library's nms takes @p's lists, and its parameters: OpenPCDet's
// one class-agnostic list under a rotated NMS.  Its records are the box
// itself (x, y, dx, dy and the final yaw make the rectangle that
// p3dc_a3_nms_rect makes), and the rules are box_overlap.h's on both sides.
// The axis-aligned NMS is not nms's bev-aligned (x1 y1 x2 y2 corners here,
// a centre and half sizes there), and per-class lists each have their own
// post_max, so those keep the walk.
static bool library_nms(const P3dcAnchor3dParams &p, P3dcNmsParams *nms) {
  if (p.rules != P3DC_ANCHOR3D_OPENPCDET || p.per_class ||
      (p.nms != P3DC_ANCHOR3D_NMS_ROTATED &&
       p.nms != P3DC_ANCHOR3D_NMS_ROTATED_MMCV))
    return false;
  p3dc_nms_params_init(nms);
  nms->mode = P3DC_NMS_BEV_ROTATED;
  nms->iou_rule = p.nms == P3DC_ANCHOR3D_NMS_ROTATED_MMCV
                      ? P3DC_NMS_IOU_RULE_MMCV
                      : P3DC_NMS_IOU_RULE_EXACT;
  nms->iou_threshold = p.nms_threshold;
  nms->post_max = p.post_max;
  return true;
}

extern "C" void p3dc_anchor3d_decoder_free(P3dcAnchor3dDecoder *d) {
  if (d == nullptr) return;
  cudaFree(d->shapes);
  cudaFree(d->x);
  cudaFree(d->y);
  cudaFree(d->w.keys);
  cudaFree(d->w.candidates);
  cudaFree(d->w.gathered);
  cudaFree(d->w.gathered_count);
  cudaFree(d->w.top);
  cudaFree(d->w.split);
  cudaFree(d->w.split_top);
  cudaFree(d->w.split_count);
  cudaFree(d->w.box_count);
  cudaFree(d->w.boxes);
  cudaFree(d->w.rects);
  cudaFree(d->w.velocity);
  cudaFree(d->w.mask);
  cudaFree(d->w.decoded);
  cudaFree(d->w.decoded_rects);
  cudaFree(d->w.decoded_velocity);
  cudaFree(d->w.block_count);
  cudaFree(d->w.kept);
  cudaFree(d->w.kept_count);
  p3dc_nms_free(d->nms);
  cudaFree(d->kept_index);
  delete d;
}

template <typename T>
static cudaError_t alloc(T **ptr, size_t count, cudaError_t error) {
  if (error != cudaSuccess) return error;
  return cudaMalloc(reinterpret_cast<void **>(ptr), count * sizeof(T));
}

template <typename T>
static cudaError_t upload(T *device, const T *host, size_t count,
                          cudaError_t error) {
  if (error != cudaSuccess) return error;
  return cudaMemcpy(device, host, count * sizeof(T), cudaMemcpyHostToDevice);
}

extern "C" P3dcResult p3dc_anchor3d_decoder_new(
    const P3dcAnchor3dParams *params, const P3dcAnchor3dTable *table,
    P3dcAnchor3dDecoder **decoder) {
  if (decoder == nullptr) return P3DC_ERROR_INVALID_ARGUMENT;
  *decoder = nullptr;
  P3dcResult result = p3dc_anchor3d_params_validate(params, table);
  if (result != P3DC_OK) return result;
  P3dcAnchor3dDecoder *d = new (std::nothrow) P3dcAnchor3dDecoder();
  if (d == nullptr) return P3DC_ERROR_OUT_OF_MEMORY;
  d->params = *params;
  const uint32_t A = table->n_anchors, H = table->height, W = table->width;
  d->cells = H * W * A;
  d->lists = p3dc_a3_lists(params);
  d->select_lists = params->rules == P3DC_ANCHOR3D_MMDET3D ? 1 : d->lists;
  d->words = (params->pre_max + 63) / 64;
  d->capacity = p3dc_anchor3d_output_capacity(params, table);
  const size_t pre = params->pre_max, lists = d->lists;
  const size_t classes = params->num_classes;

  int device = 0, sms = 0;
  cudaError_t error = cudaGetDevice(&device);
  if (error == cudaSuccess)
    error =
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (error != cudaSuccess) {
    delete d;
    return error;
  }
  if (sms < 1) sms = 1;
  // two tile blocks a multiprocessor, no more than the most tiles there
  // can be
  const uint64_t most_tiles = (uint64_t)d->lists * d->words * d->words;
  d->mask_blocks =
      (uint32_t)(most_tiles < 2ull * (uint32_t)sms ? most_tiles
                                                   : 2ull * (uint32_t)sms);

  error = alloc(&d->shapes, A, error);
  error = alloc(&d->x, (size_t)A * W, error);
  error = alloc(&d->y, (size_t)A * H, error);
  error = alloc(&d->w.keys, (size_t)d->select_lists * d->cells, error);
  error = alloc(&d->w.candidates, d->select_lists, error);
  error = alloc(&d->w.gathered, (size_t)d->select_lists * kTopkMaxKeys, error);
  error = alloc(&d->w.gathered_count, d->select_lists, error);
  error = alloc(&d->w.top, d->select_lists * pre, error);
  if (params->rules == P3DC_ANCHOR3D_MMDET3D) {
    error = alloc(&d->w.split, classes * pre, error);
    error = alloc(&d->w.split_top, classes * pre, error);
    error = alloc(&d->w.split_count, classes, error);
  }
  error = alloc(&d->w.box_count, lists, error);
  error = alloc(&d->w.boxes, lists * pre, error);
  error = alloc(&d->w.velocity, lists * pre * 2, error);
  error = alloc(&d->w.decoded, lists * pre, error);
  error = alloc(&d->w.decoded_velocity, lists * pre * 2, error);
  error = alloc(&d->w.block_count, lists * kDecodeBlocks, error);
  const bool walk = !library_nms(*params, &d->nms_params);
  if (walk) {
    error = alloc(&d->w.rects, lists * pre, error);
    error = alloc(&d->w.decoded_rects, lists * pre, error);
    error = alloc(&d->w.mask, lists * pre * d->words, error);
    error = alloc(&d->w.kept, lists * pre, error);
    error = alloc(&d->w.kept_count, lists, error);
  } else {
    error = alloc(&d->kept_index, d->capacity, error);
  }
  error = upload(d->shapes, table->shapes, A, error);
  error = upload(d->x, table->x, (size_t)A * W, error);
  error = upload(d->y, table->y, (size_t)A * H, error);
  if (error != cudaSuccess) {
    p3dc_anchor3d_decoder_free(d);
    return error;
  }
  if (!walk) {
    result = p3dc_nms_new(params->pre_max, &d->nms);
    if (result != P3DC_OK) {
      p3dc_anchor3d_decoder_free(d);
      return result;
    }
  }
  d->anchors = {d->shapes, d->x, d->y, A, H, W};
  *decoder = d;
  return P3DC_OK;
}

extern "C" P3dcResult p3dc_anchor3d_decode_cuda(P3dcAnchor3dDecoder *d,
                                                const P3dcAnchor3dMaps *maps,
                                                const P3dcAnchor3dOutput *out,
                                                P3dcCudaStream stream) {
  if (d == nullptr || maps == nullptr || out == nullptr ||
      out->boxes == nullptr || out->count == nullptr ||
      maps->cls.data == nullptr || maps->box.data == nullptr ||
      (d->params.dir_bins > 0 && maps->dir.data == nullptr))
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (((uintptr_t)out->boxes & 3) != 0 || ((uintptr_t)out->count & 3) != 0 ||
      ((uintptr_t)out->velocity & 3) != 0)
    return P3DC_ERROR_INVALID_ARGUMENT;
  const P3dcAnchor3dParams &p = d->params;
  const P3dcAnchor3dMaps m = *maps;

  cudaError_t error = cudaMemsetAsync(
      d->w.candidates, 0, d->select_lists * sizeof(uint32_t), stream);
  if (error != cudaSuccess) return error;
  score_kernel<<<(d->cells + kScoreThreads - 1) / kScoreThreads, kScoreThreads,
                 0, stream>>>(p, m, d->anchors, d->w, d->cells);
  error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  cut_kernel<<<d->select_lists, kTopkThreads, 0, stream>>>(p, d->w, d->cells);
  error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  // blocks for the most keys in play; those past a list's return
  rank_kernel<<<dim3(kTopkRankBlocks, d->select_lists), kTopkRankThreads, 0,
                stream>>>(p, d->w, d->cells, false);
  error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  if (p.rules == P3DC_ANCHOR3D_MMDET3D) {
    split_kernel<<<p.num_classes, kTopkThreads, 0, stream>>>(p, m, d->anchors,
                                                             d->w);
    error = cudaGetLastError();
    if (error != cudaSuccess) return error;
    // a class lists at most nms_pre keys
    rank_kernel<<<dim3((p.pre_max + kTopkRankKeys - 1) / kTopkRankKeys,
                       p.num_classes),
                  kTopkRankThreads, 0, stream>>>(p, d->w, d->cells, true);
    error = cudaGetLastError();
    if (error != cudaSuccess) return error;
  }
  // blocks for the longest a list can be; those past its keys return
  const dim3 decode_grid((p.pre_max + kDecodeThreads - 1) / kDecodeThreads,
                         d->lists);
  decode_kernel<<<decode_grid, kDecodeThreads, 0, stream>>>(p, m, d->anchors,
                                                            d->w);
  error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  place_kernel<<<decode_grid, kDecodeThreads, 0, stream>>>(p, d->w);
  error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  if (d->nms != nullptr) {
    // the list's boxes and count as place_kernel left them (step 4)
    P3dcResult result = p3dc_nms_cuda(d->nms, &d->nms_params, d->w.boxes,
                                      d->w.box_count, out->boxes, d->capacity,
                                      out->count, d->kept_index, stream);
    if (result == P3DC_OK && out->velocity != nullptr)
      result = p3dc_nms_gather_cuda(d->kept_index, d->capacity, d->w.velocity,
                                    2, out->velocity, stream);
    return result;
  }
  if (p.nms != P3DC_ANCHOR3D_NMS_NONE) {
    mask_kernel<<<d->mask_blocks, kNmsMaskThreads, 0, stream>>>(
        p, d->w, d->words, d->lists);
    error = cudaGetLastError();
    if (error != cudaSuccess) return error;
  }
  walk_kernel<<<d->lists, kNmsWalkThreads, 0, stream>>>(p, d->w, d->words);
  error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  reduce_kernel<<<1, kReduceThreads, 0, stream>>>(p, d->w, d->lists,
                                                  d->capacity, *out);
  return cudaGetLastError();
}
