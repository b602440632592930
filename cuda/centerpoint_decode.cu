// CenterPoint decode on the device; the reference is centerpoint_decode_cpu.c
// and the arithmetic both share is in centerpoint_decode-private.h.
//
// Per frame, on one stream, with no allocation and no host synchronization:
//  1. score_kernel: one thread per (task, class, cell) writes its sort key
//     (0 below the threshold) and counts the task's candidates.
//  2. CUB's radix sort of the keys, descending: task by task, best score
//     first, lower index first on equal scores; the zero keys go last.
//  3. decode_kernel: one block per task decodes its first max_num
//     candidates and compacts the boxes that pass the range (block scan, so
//     the order is kept).
//  4. mask_kernel: 64 x 64 tiles of the pairwise suppression bits per task,
//     eight threads to a row (8 columns each), from each box's NMS view
//     (p3d_cp_nms_rect) made once in decode_kernel, not once per pair.
//  5. reduce_kernel: one warp per task walks its boxes best first, keeping
//     a box unless a kept one suppressed it, up to post_max_size, 64 boxes
//     (one mask word) at a time: the chunk's own bits are fetched for all
//     its rows at once and walked from registers, and only then are the
//     kept rows' later words gathered, several rows' loads in flight, so
//     the walk never waits on a load;
//     then the block writes the tasks' kept boxes one after another, zeroes
//     the rest of the output and writes the count.
#include <cuda_runtime.h>

#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <new>

#include "centerpoint_decode-private.h"
#include "centerpoint_decode.h"

namespace {

constexpr unsigned kScoreThreads = 256;
constexpr unsigned kDecodeThreads = 256;
constexpr unsigned kMaskTile = 64;
constexpr unsigned kMaskRowThreads = 8;
// kept rows whose later mask words a lane loads at once in reduce_kernel
constexpr unsigned kGatherBatch = 8;
constexpr unsigned kMaskThreads = kMaskTile * kMaskRowThreads;
// reduce_kernel's lanes hold two mask words each
static_assert(P3D_CENTERPOINT_MAX_NUM <= 64 * 64, "at most 64 mask words");

struct TaskMapsArray {
  P3dCenterPointTaskMaps task[P3D_CENTERPOINT_MAX_TASKS];
};

struct Workspace {
  uint32_t *candidates;      // [tasks]: keys above the threshold
  uint32_t *box_count;       // [tasks]: boxes that passed the range
  P3dBox3d *boxes;           // [tasks][max_num]
  P3dBevRect *nms_rects;     // [tasks][max_num], as the NMS sees them
  float *velocity;           // [tasks][max_num][2]
  unsigned long long *mask;  // [tasks][max_num][words]
  uint32_t *kept;            // [tasks][max_num]
};

__device__ uint32_t nms_count(const P3dCenterPointParams &p, uint32_t boxes) {
  if (p.nms == P3D_CENTERPOINT_NMS_ROTATE && p.pre_max_size != 0)
    return min(boxes, p.pre_max_size);
  return boxes;
}

__global__ void score_kernel(const P3dCenterPointParams p,
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
  const float score = p3d_cp_sigmoid(p3d_cp_read(
      &maps.task[task].heatmap, index / cells, cell / p.width, cell % p.width));
  unsigned long long key = 0;
  if (score > p.score_threshold) {
    key = p3d_cp_key(p.n_tasks, task, score, index);
    atomicAdd(w.candidates + task, 1u);
  }
  keys[g] = key;
}

__global__ void __launch_bounds__(kDecodeThreads)
    decode_kernel(const P3dCenterPointParams p, const TaskMapsArray maps,
                  const unsigned long long *sorted, Workspace w) {
  using Scan = cub::BlockScan<uint32_t, kDecodeThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ uint32_t chunk_total;
  const uint32_t task = blockIdx.x;
  const uint32_t cells = p.height * p.width;

  uint32_t start = 0, label_offset = 0;
  for (uint32_t t = 0; t < task; t++) {
    start += w.candidates[t];
    label_offset += p.tasks[t].num_classes;
  }
  const uint32_t n = min(w.candidates[task], p.max_num);
  P3dBox3d *boxes = w.boxes + (size_t)task * p.max_num;
  P3dBevRect *nms_rects = w.nms_rects + (size_t)task * p.max_num;
  float *velocity = w.velocity + (size_t)task * p.max_num * 2;
  uint32_t written = 0;

  for (uint32_t base = 0; base < n; base += kDecodeThreads) {
    const uint32_t k = base + threadIdx.x;
    P3dBox3d box;
    float vel[2];
    uint32_t valid = 0;
    if (k < n) {
      const unsigned long long key = sorted[start + k];
      const uint32_t index = (1u << P3D_CP_INDEX_BITS) - 1u -
                             (uint32_t)(key & ((1u << P3D_CP_INDEX_BITS) - 1u));
      const float score =
          p3d_cp_from_bits((uint32_t)(key >> P3D_CP_INDEX_BITS) &
                           ((1u << P3D_CP_SCORE_BITS) - 1u));
      const uint32_t cell = index % cells;
      valid =
          p3d_cp_decode_box(&p, &maps.task[task], label_offset, index / cells,
                            cell / p.width, cell % p.width, score, &box, vel);
    }
    uint32_t position, total;
    Scan(scan_storage).ExclusiveSum(valid, position, total);
    if (valid) {
      const uint32_t at = written + position;
      boxes[at] = box;
      velocity[2 * at] = vel[0];
      velocity[2 * at + 1] = vel[1];
      if (p.nms != P3D_CENTERPOINT_NMS_NONE)
        p3d_cp_nms_rect(p.nms, &box, nms_rects + at);
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
    mask_kernel(const P3dCenterPointParams p, Workspace w, uint32_t words) {
  __shared__ P3dBevRect column[kMaskTile];
  __shared__ unsigned long long row_bits[kMaskTile];
  const uint32_t task = blockIdx.z;
  const uint32_t row_tile = blockIdx.y, column_tile = blockIdx.x;
  if (column_tile < row_tile) return;
  const uint32_t n = nms_count(p, w.box_count[task]);
  if (row_tile * kMaskTile >= n) return;
  const P3dBevRect *rects = w.nms_rects + (size_t)task * p.max_num;
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
    const P3dBevRect row = rects[i];
    const double radius = p.tasks[task].min_radius;
    const uint32_t lo = first + part * (kMaskTile / kMaskRowThreads);
    const uint32_t end = min(lo + kMaskTile / kMaskRowThreads, n);
    unsigned long long bits = 0;
    for (uint32_t c = lo > i + 1 ? lo : i + 1; c < end; c++)
      if (p3d_cp_suppresses(p.nms, radius, p.nms_threshold, &row,
                            &column[c - first]))
        bits |= 1ull << (c - first);
    if (bits != 0) atomicOr(&row_bits[r], bits);
  }
  __syncthreads();
  if (threadIdx.x < kMaskTile && row_tile * kMaskTile + threadIdx.x < n)
    w.mask[((size_t)task * p.max_num + row_tile * kMaskTile + threadIdx.x) *
               words +
           column_tile] = row_bits[threadIdx.x];
}

__global__ void reduce_kernel(const P3dCenterPointParams p, Workspace w,
                              uint32_t words, uint32_t per_task,
                              uint32_t capacity, P3dCenterPointOutput out) {
  __shared__ uint32_t kept_count[P3D_CENTERPOINT_MAX_TASKS];
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  if (warp < p.n_tasks) {
    const uint32_t task = warp;
    const uint32_t n = nms_count(p, w.box_count[task]);
    const unsigned long long *mask = w.mask + (size_t)task * p.max_num * words;
    uint32_t *kept = w.kept + (size_t)task * p.max_num;
    uint32_t count = 0;
    if (p.nms == P3D_CENTERPOINT_NMS_NONE) {
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
        unsigned long long current = __shfl_sync(
            0xffffffffu, chunk < 32 ? removed0 : removed1, chunk % 32);
        unsigned long long kept_bits = 0;
        for (uint32_t k = 0; k < m && count < per_task; k++) {
          const unsigned long long row_word =
              __shfl_sync(0xffffffffu, k < 32 ? diag_lo : diag_hi, k % 32);
          if ((current >> k) & 1ull) continue;
          kept_bits |= 1ull << k;
          if (lane == 0) kept[count] = base + k;
          count++;
          current |= row_word;
        }
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
    const P3dBox3d *boxes = w.boxes + (size_t)t * p.max_num;
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
  const P3dBox3d zero = {};
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
  P3dCenterPointParams params;
  uint32_t total;  // (task, class, cell) keys
  uint32_t words;
  uint32_t per_task;
  uint32_t capacity;
  uint32_t *task_start;  // device [tasks]
  unsigned long long *keys, *sorted;
  void *sort_scratch;
  size_t sort_scratch_bytes;
  Workspace w;
};

extern "C" void p3d_centerpoint_decoder_free(P3dCenterPointDecoder *d) {
  if (d == nullptr) return;
  cudaFree(d->task_start);
  cudaFree(d->keys);
  cudaFree(d->sorted);
  cudaFree(d->sort_scratch);
  cudaFree(d->w.candidates);
  cudaFree(d->w.box_count);
  cudaFree(d->w.boxes);
  cudaFree(d->w.nms_rects);
  cudaFree(d->w.velocity);
  cudaFree(d->w.mask);
  cudaFree(d->w.kept);
  delete d;
}

template <typename T>
static cudaError_t alloc(T **ptr, size_t count, cudaError_t error) {
  if (error != cudaSuccess) return error;
  return cudaMalloc(reinterpret_cast<void **>(ptr), count * sizeof(T));
}

extern "C" P3dResult p3d_centerpoint_decoder_new(
    const P3dCenterPointParams *params, P3dCenterPointDecoder **decoder) {
  if (decoder == nullptr) return P3D_ERROR_INVALID_ARGUMENT;
  *decoder = nullptr;
  P3dResult result = p3d_centerpoint_params_validate(params);
  if (result != P3D_OK) return result;
  P3dCenterPointDecoder *d = new (std::nothrow) P3dCenterPointDecoder();
  if (d == nullptr) return P3D_ERROR_OUT_OF_MEMORY;
  d->params = *params;
  const uint32_t cells = params->height * params->width;
  uint32_t start[P3D_CENTERPOINT_MAX_TASKS];
  d->total = 0;
  for (uint32_t t = 0; t < params->n_tasks; t++) {
    start[t] = d->total;
    d->total += params->tasks[t].num_classes * cells;
  }
  d->words = (params->max_num + 63) / 64;
  d->capacity = p3d_centerpoint_output_capacity(params);
  d->per_task = d->capacity / params->n_tasks;
  const size_t tasks = params->n_tasks, max_num = params->max_num;

  cudaError_t error = cudaSuccess;
  error = alloc(&d->task_start, tasks, error);
  error = alloc(&d->keys, d->total, error);
  error = alloc(&d->sorted, d->total, error);
  error = alloc(&d->w.candidates, tasks, error);
  error = alloc(&d->w.box_count, tasks, error);
  error = alloc(&d->w.boxes, tasks * max_num, error);
  error = alloc(&d->w.nms_rects, tasks * max_num, error);
  error = alloc(&d->w.velocity, tasks * max_num * 2, error);
  error = alloc(&d->w.mask, tasks * max_num * d->words, error);
  error = alloc(&d->w.kept, tasks * max_num, error);
  if (error == cudaSuccess)
    error = cub::DeviceRadixSort::SortKeysDescending(
        nullptr, d->sort_scratch_bytes, d->keys, d->sorted, (int)d->total, 0,
        (int)P3D_CP_KEY_BITS);
  if (error == cudaSuccess)
    error = cudaMalloc(&d->sort_scratch, d->sort_scratch_bytes);
  if (error == cudaSuccess)
    error = cudaMemcpy(d->task_start, start, tasks * sizeof(uint32_t),
                       cudaMemcpyHostToDevice);
  if (error != cudaSuccess) {
    p3d_centerpoint_decoder_free(d);
    return error;
  }
  *decoder = d;
  return P3D_OK;
}

extern "C" P3dResult p3d_centerpoint_decode_cuda(
    P3dCenterPointDecoder *d, const P3dCenterPointTaskMaps *maps,
    const P3dCenterPointOutput *out, P3dCudaStream stream) {
  if (d == nullptr || maps == nullptr || out == nullptr ||
      out->boxes == nullptr || out->count == nullptr)
    return P3D_ERROR_INVALID_ARGUMENT;
  if (((uintptr_t)out->boxes & 3) != 0 || ((uintptr_t)out->count & 3) != 0 ||
      ((uintptr_t)out->velocity & 3) != 0)
    return P3D_ERROR_INVALID_ARGUMENT;
  const P3dCenterPointParams &p = d->params;
  TaskMapsArray task_maps = {};
  for (uint32_t t = 0; t < p.n_tasks; t++) {
    const P3dCenterPointTaskMaps &m = maps[t];
    if (m.heatmap.data == nullptr || m.reg.data == nullptr ||
        m.height.data == nullptr || m.dim.data == nullptr ||
        m.rot.data == nullptr)
      return P3D_ERROR_INVALID_ARGUMENT;
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
  size_t scratch_bytes = d->sort_scratch_bytes;
  error = cub::DeviceRadixSort::SortKeysDescending(
      d->sort_scratch, scratch_bytes, d->keys, d->sorted, (int)d->total, 0,
      (int)P3D_CP_KEY_BITS, stream);
  if (error != cudaSuccess) return error;
  decode_kernel<<<p.n_tasks, kDecodeThreads, 0, stream>>>(p, task_maps,
                                                          d->sorted, d->w);
  error = cudaGetLastError();
  if (error != cudaSuccess) return error;
  if (p.nms != P3D_CENTERPOINT_NMS_NONE) {
    const uint32_t tiles = (p.max_num + kMaskTile - 1) / kMaskTile;
    mask_kernel<<<dim3(tiles, tiles, p.n_tasks), kMaskThreads, 0, stream>>>(
        p, d->w, d->words);
    error = cudaGetLastError();
    if (error != cudaSuccess) return error;
  }
  reduce_kernel<<<1, 32 * P3D_CENTERPOINT_MAX_TASKS, 0, stream>>>(
      p, d->w, d->words, d->per_task, d->capacity, *out);
  return cudaGetLastError();
}
