// CenterPoint decode on the device; the reference is centerpoint_decode_cpu.c
// and the arithmetic both share is in centerpoint_decode-private.h.
//
// Per frame, on one stream, with no allocation and no host synchronization:
//  1. score_kernel: one thread per (task, class, cell); a cell above the
//     threshold appends its sort key (best score first, lower index first
//     on equal scores) to its task's list, in whatever order the atomics
//     give.
//  2. cut_kernel, one block per task, and rank_kernel, many: the max_num
//     largest keys of each task's list, sorted (p3dc_topk_cut and
//     p3dc_topk_rank, decode_lists.cuh: a radix select on the keys' top
//     bits, then a rank for each of the few thousand that can be kept, not
//     a sort of every (class, cell) pair: CUB's device-wide radix sort of
//     all 163,840 of nuScenes took 63 us).
//  3. decode_kernel: one block per task decodes its first max_num
//     candidates and compacts the boxes that pass the range (block scan, so
//     the order is kept).
//  4. mask_kernel: 64 x 64 tiles of the pairwise suppression bits per task
//     (p3dc_nms_mask_tile), from each box's NMS view (p3dc_cp_nms_rect) made
//     once in decode_kernel, not once per pair.
//  5. walk_kernel: one block per task walks its boxes best first
//     (p3dc_nms_walk_list), keeping a box unless a kept one suppressed it,
//     up to post_max_size.
//  6. reduce_kernel: one block writes the tasks' kept boxes one after
//     another, zeroes the rest of the output and writes the count.
#include <cuda_runtime.h>

#include <cub/block/block_scan.cuh>
#include <new>

#include "centerpoint_decode-private.h"
#include "centerpoint_decode.h"
#include "decode_lists.cuh"

namespace {

constexpr unsigned kScoreThreads = 256;
// max_num keys fit one top-k
static_assert(P3DC_CENTERPOINT_MAX_NUM <= kTopkMaxKeys,
              "max_num keys fit one top-k");
constexpr unsigned kDecodeThreads = 256;
// the walk's removed bits are 64 words
static_assert(P3DC_CENTERPOINT_MAX_NUM <= 64 * 64, "at most 64 mask words");
constexpr unsigned kReduceThreads = 256;

struct TaskMapsArray {
  P3dcCenterPointTaskMaps task[P3DC_CENTERPOINT_MAX_TASKS];
};

struct Workspace {
  uint32_t *candidates;  // [tasks]: keys above the threshold
  // [tasks][kTopkMaxKeys]: the keys in play of a list longer than that,
  // and their number
  unsigned long long *gathered;
  uint32_t *gathered_count;
  unsigned long long *top;   // [tasks][max_num]: the kept keys, sorted
  uint32_t *box_count;       // [tasks]: boxes that passed the range
  P3dcBox3d *boxes;          // [tasks][max_num]
  P3dcBevRect *nms_rects;    // [tasks][max_num], as the NMS sees them
  float *velocity;           // [tasks][max_num][2]
  unsigned long long *mask;  // [tasks][max_num][words]
  uint32_t *kept;            // [tasks][max_num]
  uint32_t *kept_count;      // [tasks]
  float *nms_scale;          // [labels], nullptr: every factor 1
};

__device__ uint32_t nms_count(const P3dcCenterPointParams &p, uint32_t task,
                              uint32_t boxes) {
  if (p3dc_cp_task_nms(&p, task) == P3DC_CENTERPOINT_NMS_ROTATE &&
      p.pre_max_size != 0)
    return min(boxes, p.pre_max_size);
  return boxes;
}

__global__ void score_kernel(const P3dcCenterPointParams p,
                             const TaskMapsArray maps,
                             const uint32_t *task_start,
                             unsigned long long *keys, Workspace w,
                             uint32_t total) {
  const uint32_t g = blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= total) return;
  uint32_t task = 0;
  while (task + 1 < p.n_tasks && g >= task_start[task + 1]) task++;
  const uint32_t index = g - task_start[task];
  const uint32_t cells = p.height * p.width;
  const uint32_t cell = index % cells;
  const float score = p3dc_cp_sigmoid(p3dc_cp_read(
      &maps.task[task].heatmap, index / cells, cell / p.width, cell % p.width));
  if (score > p.score_threshold) {
    const uint32_t at = atomicAdd(w.candidates + task, 1u);
    keys[task_start[task] + at] = p3dc_cp_key(p.n_tasks, task, score, index);
  }
}

// The keys in play for task blockIdx.x's max_num largest.  Keys are
// nonzero and unique.
__global__ void __launch_bounds__(kTopkThreads)
    cut_kernel(const P3dcCenterPointParams p, const uint32_t *task_start,
               const unsigned long long *keys, Workspace w) {
  const uint32_t task = blockIdx.x;
  const uint32_t n = w.candidates[task];
  p3dc_topk_cut<P3DC_CP_KEY_BITS>(keys + task_start[task], n, min(n, p.max_num),
                                  w.gathered + (size_t)task * kTopkMaxKeys,
                                  w.gathered_count + task);
}

// Block blockIdx.x's share of task blockIdx.y's max_num largest keys, in
// descending order, into w.top.
__global__ void __launch_bounds__(kTopkRankThreads)
    rank_kernel(const P3dcCenterPointParams p, const uint32_t *task_start,
                const unsigned long long *keys, Workspace w) {
  const uint32_t task = blockIdx.y;
  const uint32_t n = w.candidates[task];
  uint32_t count;
  const unsigned long long *in_play = p3dc_topk_in_play(
      keys + task_start[task], n, w.gathered + (size_t)task * kTopkMaxKeys,
      w.gathered_count + task, &count);
  p3dc_topk_rank(in_play, count, min(n, p.max_num),
                 w.top + (size_t)task * p.max_num, blockIdx.x);
}

__global__ void __launch_bounds__(kDecodeThreads)
    decode_kernel(const P3dcCenterPointParams p, const TaskMapsArray maps,
                  Workspace w) {
  using Scan = cub::BlockScan<uint32_t, kDecodeThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ uint32_t chunk_total;
  const uint32_t task = blockIdx.x;
  const uint32_t cells = p.height * p.width;
  const P3dcCenterPointNms nms = p3dc_cp_task_nms(&p, task);

  uint32_t label_offset = 0;
  for (uint32_t t = 0; t < task; t++) label_offset += p.tasks[t].num_classes;
  const unsigned long long *sorted = w.top + (size_t)task * p.max_num;
  const uint32_t n = min(w.candidates[task], p.max_num);
  P3dcBox3d *boxes = w.boxes + (size_t)task * p.max_num;
  P3dcBevRect *nms_rects = w.nms_rects + (size_t)task * p.max_num;
  float *velocity = w.velocity + (size_t)task * p.max_num * 2;
  uint32_t written = 0;

  for (uint32_t base = 0; base < n; base += kDecodeThreads) {
    const uint32_t k = base + threadIdx.x;
    P3dcBox3d box;
    float vel[2];
    uint32_t valid = 0;
    if (k < n) {
      const unsigned long long key = sorted[k];
      const uint32_t index =
          (1u << P3DC_CP_INDEX_BITS) - 1u -
          (uint32_t)(key & ((1u << P3DC_CP_INDEX_BITS) - 1u));
      const float score =
          p3dc_cp_from_bits((uint32_t)(key >> P3DC_CP_INDEX_BITS) &
                            ((1u << P3DC_CP_SCORE_BITS) - 1u));
      const uint32_t cell = index % cells;
      valid =
          p3dc_cp_decode_box(&p, &maps.task[task], label_offset, index / cells,
                             cell / p.width, cell % p.width, score, &box, vel);
    }
    uint32_t position, total;
    Scan(scan_storage).ExclusiveSum(valid, position, total);
    if (valid) {
      const uint32_t at = written + position;
      boxes[at] = box;
      velocity[2 * at] = vel[0];
      velocity[2 * at + 1] = vel[1];
      if (nms != P3DC_CENTERPOINT_NMS_NONE)
        p3dc_cp_nms_rect(nms, &box,
                         w.nms_scale != nullptr ? w.nms_scale[box.label] : 1.0f,
                         nms_rects + at);
    }
    if (threadIdx.x == 0) chunk_total = total;
    __syncthreads();
    written += chunk_total;
    // scan_storage and chunk_total are reused by the next chunk
    __syncthreads();
  }
  if (threadIdx.x == 0) w.box_count[task] = written;
}

__global__ void __launch_bounds__(kNmsMaskThreads)
    mask_kernel(const P3dcCenterPointParams p, Workspace w, uint32_t words) {
  const uint32_t task = blockIdx.z;
  const P3dcCenterPointNms nms = p3dc_cp_task_nms(&p, task);
  if (nms == P3DC_CENTERPOINT_NMS_NONE) return;
  const double radius = p.tasks[task].min_radius;
  const float threshold = p3dc_cp_task_threshold(&p, task);
  p3dc_nms_mask_tile(w.nms_rects + (size_t)task * p.max_num,
                     nms_count(p, task, w.box_count[task]), blockIdx.y,
                     blockIdx.x, w.mask + (size_t)task * p.max_num * words,
                     words, [&](const P3dcBevRect &a, const P3dcBevRect &b) {
                       return p3dc_cp_suppresses(nms, radius, threshold, &a,
                                                 &b) != 0;
                     });
}

// Task blockIdx.x's kept boxes, best first, and their number.
__global__ void __launch_bounds__(kNmsWalkThreads)
    walk_kernel(const P3dcCenterPointParams p, Workspace w, uint32_t words,
                uint32_t per_task) {
  const uint32_t task = blockIdx.x;
  const uint32_t n = nms_count(p, task, w.box_count[task]);
  uint32_t *kept = w.kept + (size_t)task * p.max_num;
  uint32_t count;
  if (p3dc_cp_task_nms(&p, task) == P3DC_CENTERPOINT_NMS_NONE) {
    count = min(n, per_task);
    for (uint32_t k = threadIdx.x; k < count; k += blockDim.x) kept[k] = k;
  } else {
    count = p3dc_nms_walk_list(w.mask + (size_t)task * p.max_num * words, words,
                               n, per_task, kept);
  }
  if (threadIdx.x == 0) w.kept_count[task] = count;
}

__global__ void __launch_bounds__(kReduceThreads)
    reduce_kernel(const P3dcCenterPointParams p, Workspace w, uint32_t capacity,
                  P3dcCenterPointOutput out) {
  __shared__ uint32_t kept_count[P3DC_CENTERPOINT_MAX_TASKS];
  for (uint32_t t = threadIdx.x; t < p.n_tasks; t += blockDim.x)
    kept_count[t] = w.kept_count[t];
  __syncthreads();

  // the tasks' kept boxes one after another
  uint32_t total = 0;
  for (uint32_t t = 0; t < p.n_tasks; t++) {
    const uint32_t *kept = w.kept + (size_t)t * p.max_num;
    const P3dcBox3d *boxes = w.boxes + (size_t)t * p.max_num;
    const float *velocity = w.velocity + (size_t)t * p.max_num * 2;
    for (uint32_t k = threadIdx.x; k < kept_count[t]; k += blockDim.x) {
      const uint32_t b = kept[k];
      out.boxes[total + k] = boxes[b];
      if (out.velocity) {
        out.velocity[2 * (total + k)] = velocity[2 * b];
        out.velocity[2 * (total + k) + 1] = velocity[2 * b + 1];
      }
    }
    total += kept_count[t];
  }
  const P3dcBox3d zero = {};
  for (uint32_t k = total + threadIdx.x; k < capacity; k += blockDim.x) {
    out.boxes[k] = zero;
    if (out.velocity) {
      out.velocity[2 * k] = 0.0f;
      out.velocity[2 * k + 1] = 0.0f;
    }
  }
  if (threadIdx.x == 0) *out.count = total;
}

}  // namespace

struct _P3dCenterPointDecoder {
  P3dcCenterPointParams params;
  uint32_t total;  // (task, class, cell) keys
  uint32_t words;
  uint32_t per_task;
  uint32_t capacity;
  uint32_t *task_start;      // device [tasks]
  unsigned long long *keys;  // [total]: each task's candidates from its start
  Workspace w;
};

extern "C" void p3dc_centerpoint_decoder_free(P3dcCenterPointDecoder *d) {
  if (d == nullptr) return;
  cudaFree(d->task_start);
  cudaFree(d->keys);
  cudaFree(d->w.top);
  cudaFree(d->w.candidates);
  cudaFree(d->w.gathered);
  cudaFree(d->w.gathered_count);
  cudaFree(d->w.box_count);
  cudaFree(d->w.boxes);
  cudaFree(d->w.nms_rects);
  cudaFree(d->w.velocity);
  cudaFree(d->w.mask);
  cudaFree(d->w.kept);
  cudaFree(d->w.kept_count);
  cudaFree(d->w.nms_scale);
  delete d;
}

template <typename T>
static cudaError_t alloc(T **ptr, size_t count, cudaError_t error) {
  if (error != cudaSuccess) return error;
  return cudaMalloc(reinterpret_cast<void **>(ptr), count * sizeof(T));
}

extern "C" P3dcResult p3dc_centerpoint_decoder_new(
    const P3dcCenterPointParams *params, P3dcCenterPointDecoder **decoder) {
  if (decoder == nullptr) return P3DC_ERROR_INVALID_ARGUMENT;
  *decoder = nullptr;
  P3dcResult result = p3dc_centerpoint_params_validate(params);
  if (result != P3DC_OK) return result;
  P3dcCenterPointDecoder *d = new (std::nothrow) P3dcCenterPointDecoder();
  if (d == nullptr) return P3DC_ERROR_OUT_OF_MEMORY;
  d->params = *params;
  // the host array is copied below; the kernels read the device copy
  d->params.nms_scale = nullptr;
  const uint32_t cells = params->height * params->width;
  uint32_t start[P3DC_CENTERPOINT_MAX_TASKS];
  uint32_t labels = 0;
  d->total = 0;
  for (uint32_t t = 0; t < params->n_tasks; t++) {
    start[t] = d->total;
    d->total += params->tasks[t].num_classes * cells;
    labels += params->tasks[t].num_classes;
  }
  d->words = (params->max_num + 63) / 64;
  d->capacity = p3dc_centerpoint_output_capacity(params);
  d->per_task = d->capacity / params->n_tasks;
  const size_t tasks = params->n_tasks, max_num = params->max_num;

  cudaError_t error = cudaSuccess;
  error = alloc(&d->task_start, tasks, error);
  error = alloc(&d->keys, d->total, error);
  error = alloc(&d->w.top, tasks * max_num, error);
  error = alloc(&d->w.candidates, tasks, error);
  error = alloc(&d->w.gathered, tasks * kTopkMaxKeys, error);
  error = alloc(&d->w.gathered_count, tasks, error);
  error = alloc(&d->w.box_count, tasks, error);
  error = alloc(&d->w.boxes, tasks * max_num, error);
  error = alloc(&d->w.nms_rects, tasks * max_num, error);
  error = alloc(&d->w.velocity, tasks * max_num * 2, error);
  error = alloc(&d->w.mask, tasks * max_num * d->words, error);
  error = alloc(&d->w.kept, tasks * max_num, error);
  error = alloc(&d->w.kept_count, tasks, error);
  if (params->nms_scale != nullptr) {
    error = alloc(&d->w.nms_scale, labels, error);
    if (error == cudaSuccess)
      error = cudaMemcpy(d->w.nms_scale, params->nms_scale,
                         labels * sizeof(float), cudaMemcpyHostToDevice);
  }
  if (error == cudaSuccess)
    error = cudaMemcpy(d->task_start, start, tasks * sizeof(uint32_t),
                       cudaMemcpyHostToDevice);
  if (error != cudaSuccess) {
    p3dc_centerpoint_decoder_free(d);
    return error;
  }
  *decoder = d;
  return P3DC_OK;
}

extern "C" P3dcResult p3dc_centerpoint_decode_cuda(
    P3dcCenterPointDecoder *d, const P3dcCenterPointTaskMaps *maps,
    const P3dcCenterPointOutput *out, P3dcCudaStream stream) {
  if (d == nullptr || maps == nullptr || out == nullptr ||
      out->boxes == nullptr || out->count == nullptr)
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (((uintptr_t)out->boxes & 3) != 0 || ((uintptr_t)out->count & 3) != 0 ||
      ((uintptr_t)out->velocity & 3) != 0)
    return P3DC_ERROR_INVALID_ARGUMENT;
  const P3dcCenterPointParams &p = d->params;
  TaskMapsArray task_maps = {};
  for (uint32_t t = 0; t < p.n_tasks; t++) {
    const P3dcCenterPointTaskMaps &m = maps[t];
    if (m.heatmap.data == nullptr || m.reg.data == nullptr ||
        m.height.data == nullptr || m.dim.data == nullptr ||
        m.rot.data == nullptr)
      return P3DC_ERROR_INVALID_ARGUMENT;
    task_maps.task[t] = m;
  }

  cudaError_t error =
      cudaMemsetAsync(d->w.candidates, 0, p.n_tasks * sizeof(uint32_t), stream);
  if (error != cudaSuccess) return error;
  score_kernel<<<(d->total + kScoreThreads - 1) / kScoreThreads, kScoreThreads,
                 0, stream>>>(p, task_maps, d->task_start, d->keys, d->w,
                              d->total);
  error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  cut_kernel<<<p.n_tasks, kTopkThreads, 0, stream>>>(p, d->task_start, d->keys,
                                                     d->w);
  error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  // blocks for the most keys in play; those past a task's return
  rank_kernel<<<dim3(kTopkRankBlocks, p.n_tasks), kTopkRankThreads, 0,
                stream>>>(p, d->task_start, d->keys, d->w);
  error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  decode_kernel<<<p.n_tasks, kDecodeThreads, 0, stream>>>(p, task_maps, d->w);
  error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  if (p.nms != P3DC_CENTERPOINT_NMS_NONE) {
    const uint32_t tiles = (p.max_num + kNmsMaskTile - 1) / kNmsMaskTile;
    mask_kernel<<<dim3(tiles, tiles, p.n_tasks), kNmsMaskThreads, 0, stream>>>(
        p, d->w, d->words);
    error = cudaGetLastError();
    if (error != cudaSuccess) return error;
  }
  walk_kernel<<<p.n_tasks, kNmsWalkThreads, 0, stream>>>(p, d->w, d->words,
                                                         d->per_task);
  error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  reduce_kernel<<<1, kReduceThreads, 0, stream>>>(p, d->w, d->capacity, *out);
  return cudaGetLastError();
}
