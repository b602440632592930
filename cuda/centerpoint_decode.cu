// CenterPoint decode on the device; the reference is centerpoint_decode_cpu.c
// and the arithmetic both share is in centerpoint_decode-private.h.
//
// Per frame, on one stream, with no allocation and no host synchronization:
//  1. score_kernel: one thread per (task, class, cell); a cell above the
//     threshold appends its sort key (best score first, lower index first
//     on equal scores) to its task's list, in whatever order the atomics
//     give.
//  2. select_kernel: one block per task takes the max_num largest keys of
//     its list, sorted: at most kSortKeys of them are gathered and sorted
//     in shared memory; a longer list is first cut by a radix select on the
//     keys' top bits (each pass counts 8 bits of the keys still in play),
//     so that only the few thousand candidates that can be kept are
//     sorted, not every (class, cell) pair (CUB's device-wide radix sort
//     of all 163,840 of nuScenes took 63 us).  The keys are unique, so the
//     result is the same whatever the list's order.
//  3. decode_kernel: one block per task decodes its first max_num
//     candidates and compacts the boxes that pass the range (block scan, so
//     the order is kept).
//  4. mask_kernel: 64 x 64 tiles of the pairwise suppression bits per task,
//     eight threads to a row (8 columns each), from each box's NMS view
//     (p3dc_cp_nms_rect) made once in decode_kernel, not once per pair.
//  5. reduce_kernel: one warp per task walks its boxes best first, keeping
//     a box unless a kept one suppressed it, up to post_max_size, 64 boxes
//     (one mask word) at a time: the chunk's own bits are fetched for all
//     its rows at once and walked from registers, and only then are the
//     kept rows' later words gathered, several rows' loads in flight, so
//     the walk never waits on a load;
//     then the block writes the tasks' kept boxes one after another, zeroes
//     the rest of the output and writes the count.
#include <cuda_runtime.h>

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>
#include <new>

#include "centerpoint_decode-private.h"
#include "centerpoint_decode.h"
#include "greedy_walk.cuh"

namespace {

constexpr unsigned kScoreThreads = 256;
constexpr unsigned kSelectThreads = 1024;
constexpr unsigned kSelectItems = 4;
// keys a select block sorts at once; max_num never needs more
constexpr unsigned kSortKeys = kSelectThreads * kSelectItems;
static_assert(P3DC_CENTERPOINT_MAX_NUM <= kSortKeys, "max_num keys fit a sort");
constexpr unsigned kDigitBits = 8;
constexpr unsigned kDecodeThreads = 256;
constexpr unsigned kMaskTile = 64;
constexpr unsigned kMaskRowThreads = 8;
// kept rows whose later mask words a lane loads at once in reduce_kernel
constexpr unsigned kGatherBatch = 8;
constexpr unsigned kMaskThreads = kMaskTile * kMaskRowThreads;
// reduce_kernel's lanes hold two mask words each
static_assert(P3DC_CENTERPOINT_MAX_NUM <= 64 * 64, "at most 64 mask words");

struct TaskMapsArray {
  P3dcCenterPointTaskMaps task[P3DC_CENTERPOINT_MAX_TASKS];
};

struct Workspace {
  uint32_t *candidates;      // [tasks]: keys above the threshold
  unsigned long long *top;   // [tasks][max_num]: the kept keys, sorted
  uint32_t *box_count;       // [tasks]: boxes that passed the range
  P3dcBox3d *boxes;          // [tasks][max_num]
  P3dcBevRect *nms_rects;    // [tasks][max_num], as the NMS sees them
  float *velocity;           // [tasks][max_num][2]
  unsigned long long *mask;  // [tasks][max_num][words]
  uint32_t *kept;            // [tasks][max_num]
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

// The max_num largest keys of task blockIdx.x's list, in descending order,
// into w.top.  Keys are nonzero and unique.
__global__ void __launch_bounds__(kSelectThreads)
    select_kernel(const P3dcCenterPointParams p, const uint32_t *task_start,
                  const unsigned long long *keys, Workspace w) {
  using Sort =
      cub::BlockRadixSort<unsigned long long, kSelectThreads, kSelectItems>;
  __shared__ union {
    unsigned long long gathered[kSortKeys];
    typename Sort::TempStorage sort;
  } shared;
  __shared__ uint32_t histogram[1u << kDigitBits];
  __shared__ uint32_t gathered_count;
  __shared__ unsigned long long cut;  // the smallest key that stays in play
  const uint32_t task = blockIdx.x;
  const unsigned long long *list = keys + task_start[task];
  const uint32_t n = w.candidates[task];
  const uint32_t want = min(n, p.max_num);

  // Radix select: find a cut with want <= |keys >= cut| <= kSortKeys.  The
  // keys above the bin being refined (prefix) are counted in `above`.
  unsigned long long prefix = 0;
  uint32_t above = 0;
  if (threadIdx.x == 0) cut = 1;  // every candidate
  // digits aligned on multiples of 8 bits, from the one holding the key's
  // top bit down to bits 0-7
  for (int low = (int)((P3DC_CP_KEY_BITS - 1) / kDigitBits * kDigitBits);
       n > kSortKeys; low -= (int)kDigitBits) {
    const unsigned long long high_mask = ~0ull << (low + kDigitBits);
    for (uint32_t b = threadIdx.x; b < (1u << kDigitBits); b += blockDim.x)
      histogram[b] = 0;
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
      const unsigned long long key = list[i];
      if ((key & high_mask) == prefix)
        atomicAdd(&histogram[(key >> low) & ((1u << kDigitBits) - 1)], 1u);
    }
    __syncthreads();
    // every thread walks the 256 bins from the top: the same answer in all
    uint32_t bin = 0, in_play = above;
    for (int b = (1 << kDigitBits) - 1; b >= 0; b--) {
      in_play += histogram[b];
      if (in_play >= want) {
        bin = (uint32_t)b;
        break;
      }
    }
    const unsigned long long bin_prefix =
        prefix | ((unsigned long long)bin << low);
    if (in_play <= kSortKeys || low == 0) {
      // keys of unique values: at the last digit a bin holds one key, so
      // in_play <= want <= kSortKeys there
      if (threadIdx.x == 0) cut = bin_prefix;
      __syncthreads();
      break;
    }
    above = in_play - histogram[bin];
    prefix = bin_prefix;
    // the histogram is rewritten by the next pass
    __syncthreads();
  }
  __syncthreads();

  // gather the keys in play, sort them, keep the first want
  if (threadIdx.x == 0) gathered_count = 0;
  __syncthreads();
  const unsigned long long lowest = cut;
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
    const unsigned long long key = list[i];
    if (key >= lowest) shared.gathered[atomicAdd(&gathered_count, 1u)] = key;
  }
  __syncthreads();
  const uint32_t count = gathered_count;
  unsigned long long items[kSelectItems];
#pragma unroll
  for (uint32_t u = 0; u < kSelectItems; u++) {
    const uint32_t at = threadIdx.x * kSelectItems + u;
    items[u] = at < count ? shared.gathered[at] : 0ull;
  }
  // the gathered keys are in registers before the sort reuses the memory
  __syncthreads();
  Sort(shared.sort).SortDescending(items, 0, (int)P3DC_CP_KEY_BITS);
  unsigned long long *top = w.top + (size_t)task * p.max_num;
#pragma unroll
  for (uint32_t u = 0; u < kSelectItems; u++) {
    const uint32_t rank = threadIdx.x * kSelectItems + u;
    if (rank < want) top[rank] = items[u];
  }
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

__global__ void __launch_bounds__(kMaskThreads)
    mask_kernel(const P3dcCenterPointParams p, Workspace w, uint32_t words) {
  __shared__ P3dcBevRect column[kMaskTile];
  __shared__ unsigned long long row_bits[kMaskTile];
  const uint32_t task = blockIdx.z;
  const uint32_t row_tile = blockIdx.y, column_tile = blockIdx.x;
  if (column_tile < row_tile) return;
  const P3dcCenterPointNms nms = p3dc_cp_task_nms(&p, task);
  if (nms == P3DC_CENTERPOINT_NMS_NONE) return;
  const uint32_t n = nms_count(p, task, w.box_count[task]);
  if (row_tile * kMaskTile >= n) return;
  const P3dcBevRect *rects = w.nms_rects + (size_t)task * p.max_num;
  const uint32_t first = column_tile * kMaskTile;
  if (threadIdx.x < kMaskTile) {
    const uint32_t j = first + threadIdx.x;
    if (j < n) column[threadIdx.x] = rects[j];
    row_bits[threadIdx.x] = 0;
  }
  __syncthreads();
  // thread t: row t % 64 of the tile, columns 8 (t / 64) .. + 7
  const uint32_t r = threadIdx.x % kMaskTile;
  const uint32_t part = threadIdx.x / kMaskTile;
  const uint32_t i = row_tile * kMaskTile + r;
  if (i < n) {
    const P3dcBevRect row = rects[i];
    const double radius = p.tasks[task].min_radius;
    const float threshold = p3dc_cp_task_threshold(&p, task);
    const uint32_t lo = first + part * (kMaskTile / kMaskRowThreads);
    const uint32_t end = min(lo + kMaskTile / kMaskRowThreads, n);
    unsigned long long bits = 0;
    for (uint32_t c = lo > i + 1 ? lo : i + 1; c < end; c++)
      if (p3dc_cp_suppresses(nms, radius, threshold, &row, &column[c - first]))
        bits |= 1ull << (c - first);
    if (bits != 0) atomicOr(&row_bits[r], bits);
  }
  __syncthreads();
  if (threadIdx.x < kMaskTile && row_tile * kMaskTile + threadIdx.x < n)
    w.mask[((size_t)task * p.max_num + row_tile * kMaskTile + threadIdx.x) *
               words +
           column_tile] = row_bits[threadIdx.x];
}

__global__ void reduce_kernel(const P3dcCenterPointParams p, Workspace w,
                              uint32_t words, uint32_t per_task,
                              uint32_t capacity, P3dcCenterPointOutput out) {
  __shared__ uint32_t kept_count[P3DC_CENTERPOINT_MAX_TASKS];
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  if (warp < p.n_tasks) {
    const uint32_t task = warp;
    const uint32_t n = nms_count(p, task, w.box_count[task]);
    const unsigned long long *mask = w.mask + (size_t)task * p.max_num * words;
    uint32_t *kept = w.kept + (size_t)task * p.max_num;
    uint32_t count = 0;
    if (p3dc_cp_task_nms(&p, task) == P3DC_CENTERPOINT_NMS_NONE) {
      count = min(n, per_task);
      for (uint32_t k = lane; k < count; k += 32) kept[k] = k;
    } else {
      // lane l holds the removed bits of words l and l + 32
      unsigned long long removed0 = 0, removed1 = 0;
      for (uint32_t chunk = 0; chunk * 64 < n && count < per_task; chunk++) {
        const uint32_t base = chunk * 64, m = min(64u, n - base);
        // the chunk's own word of each of its rows: lane l holds rows
        // base + l and base + 32 + l, all loaded at once
        const unsigned long long diag_lo =
            lane < m ? mask[(size_t)(base + lane) * words + chunk] : 0;
        const unsigned long long diag_hi =
            lane + 32 < m ? mask[(size_t)(base + 32 + lane) * words + chunk]
                          : 0;
        // what earlier chunks removed from this one
        const unsigned long long removed = __shfl_sync(
            0xffffffffu, chunk < 32 ? removed0 : removed1, chunk % 32);
        const unsigned long long live =
            (m == 64 ? ~0ull : (1ull << m) - 1) & ~removed;
        // the chunk's live boxes, best first, until the task's output is
        // full
        unsigned long long kept_bits =
            p3dc_greedy_walk_tile(live, diag_lo, diag_hi, [&](uint32_t k) {
              if (count >= per_task) return false;
              if (lane == 0) kept[count] = base + k;
              count++;
              return true;
            });
        // the kept rows' later words, each lane its own, kGatherBatch rows'
        // loads in flight at once
        const bool lo = lane > chunk && lane < words;
        const bool hi = lane + 32 > chunk && lane + 32 < words;
        while (kept_bits != 0) {
          unsigned long long got_lo[kGatherBatch], got_hi[kGatherBatch];
#pragma unroll
          for (uint32_t u = 0; u < kGatherBatch; u++) {
            got_lo[u] = got_hi[u] = 0;
            if (kept_bits == 0) continue;
            const uint32_t k = __ffsll((long long)kept_bits) - 1;
            kept_bits &= kept_bits - 1;
            const unsigned long long *row = mask + (size_t)(base + k) * words;
            if (lo) got_lo[u] = row[lane];
            if (hi) got_hi[u] = row[lane + 32];
          }
#pragma unroll
          for (uint32_t u = 0; u < kGatherBatch; u++) {
            removed0 |= got_lo[u];
            removed1 |= got_hi[u];
          }
        }
      }
    }
    if (lane == 0) kept_count[task] = count;
  }
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
  cudaFree(d->w.box_count);
  cudaFree(d->w.boxes);
  cudaFree(d->w.nms_rects);
  cudaFree(d->w.velocity);
  cudaFree(d->w.mask);
  cudaFree(d->w.kept);
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
  error = alloc(&d->w.box_count, tasks, error);
  error = alloc(&d->w.boxes, tasks * max_num, error);
  error = alloc(&d->w.nms_rects, tasks * max_num, error);
  error = alloc(&d->w.velocity, tasks * max_num * 2, error);
  error = alloc(&d->w.mask, tasks * max_num * d->words, error);
  error = alloc(&d->w.kept, tasks * max_num, error);
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
  select_kernel<<<p.n_tasks, kSelectThreads, 0, stream>>>(p, d->task_start,
                                                          d->keys, d->w);
  error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  decode_kernel<<<p.n_tasks, kDecodeThreads, 0, stream>>>(p, task_maps, d->w);
  error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  if (p.nms != P3DC_CENTERPOINT_NMS_NONE) {
    const uint32_t tiles = (p.max_num + kMaskTile - 1) / kMaskTile;
    mask_kernel<<<dim3(tiles, tiles, p.n_tasks), kMaskThreads, 0, stream>>>(
        p, d->w, d->words);
    error = cudaGetLastError();
    if (error != cudaSuccess) return error;
  }
  reduce_kernel<<<1, 32 * P3DC_CENTERPOINT_MAX_TASKS, 0, stream>>>(
      p, d->w, d->words, d->per_task, d->capacity, *out);
  return cudaGetLastError();
}
