// The suppression mask of nms.cu for bev-aligned and circle calls of many
// boxes, found through a grid instead of by testing every pair
// (nms_mask.cuh): at 20000 boxes the dense mask tests 200 M pairs where
// the benchmark's boxes have a few hundred thousand.  Only for these two
// modes, whose pair test is a few operations: through the grid, iou and
// bev-rotated measured slower than the dense mask (docs/performance.md,
// nms), the first because detector boxes in an image overlap hundreds of
// others each, so the grid saves few tests, the second because its cost is
// the polygon clips of the pairs, which both find alike.
//
// Every box that can take part (may_take_part) gets a point, its centre, and
// a reach: no pair test can be TRUE between boxes whose centres are farther
// apart along x or along y than the sum of their reaches (grid_point).
// The points are binned by centre on a grid of at most kGridSide x
// kGridSide cells; a pair is then looked for by the box of the pair with the
// larger reach (or, at equal reaches, by the one later in score order), in
// the cells within twice its reach, which hold every box whose reach is not
// larger than its own and that it may suppress or be suppressed by.  Each
// pair found is tested with the very test the reference calls
// (p3dc_nms_item_suppresses, the higher-scored box first), so the grid only
// decides which pairs are tested, never how: the pairs it sets are the dense
// mask's.  A pair the test accepts is always found: the cells a box looks
// in are those of the two ends of its window, through the one monotonic
// function that also placed every centre, and the window is wider than the
// reaches by a margin far above the rounding of the centres (grid_frame).
//
// Stages, after the sort (nms_sort.cuh's item_kernel has already gathered
// the grid's bounds, GridBounds):
//  1. grid_cell_kernel: each box's cell and its slot in it; the mask
//     words the keep reduction's walk may read are zeroed (nms_reduce.cuh
//     reads a row's words from its own tile on; they are set below only
//     where a pair is found);
//  2. grid_scan_kernel: the cells' first slots (one block);
//  3. grid_bin_kernel: the boxes in cell order, with their box numbers;
//  4. grid_pair_kernel: a warp a box reads the boxes of its window's cells,
//     up to 32 rows of cells at a time, tests the pairs it owns, and sets
//     their mask bit and appends them to the two pair lists
//     (nms_common.cuh), as the dense kernel does.
// The dense kernel runs instead (every stage here returns at once, the
// dense kernel does not) when the call has at most kGridMinBoxes boxes, or
// a box whose arithmetic the grid would not follow exactly: a centre or
// reach that is not finite, or a box beyond P3DC_BOX_HUGE, whose pair test
// runs on scaled coordinates (box_overlap.h).
#ifndef P3DC_NMS_GRID_CUH
#define P3DC_NMS_GRID_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "launch.cuh"
#include "nms_common.cuh"
#include "nms_item.h"

namespace p3dc_nms {

// cells along an axis at most: the cell counts and first slots are 2 x 64
// KB, which one block scans in one pass (grid_scan_kernel).  256 made the
// scan of the benchmark's circle call 53 us on its own, for a pair search
// no faster (docs/performance.md).
constexpr uint32_t kGridSide = 128;
constexpr uint32_t kGridCells = kGridSide * kGridSide;
// A cell is an eighth of the largest box's window (twice its reach), or
// larger where the boxes' spread needs it to stay within kGridSide cells:
// the largest box looks in about 17 x 17 cells, a car among trucks in
// fewer.
constexpr float kCellsPerWindow = 8.0f;
// the grid runs above this many boxes, where the pair lists exist
constexpr uint32_t kGridMinBoxes = kColumnBoxes;
constexpr uint32_t kGridThreads = 256;
constexpr uint32_t kGridWarps = kGridThreads / 32;
constexpr uint32_t kNoCell = 0xffffffffu;

// What item_kernel gathers of the boxes that take part, as keys whose
// unsigned order is the floats' order (ordered_key), so that atomicMin and
// atomicMax gather them; reach holds the float's own bits (reaches are >=
// 0).  unusable is set by a box the grid cannot take (see the top).
// key_kernel resets it.
struct GridBounds {
  uint32_t min_x, max_x, min_y, max_y;
  uint32_t reach;
  uint32_t unusable;
};

__device__ __forceinline__ uint32_t ordered_key(float value) {
  const uint32_t bits = __float_as_uint(value);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

__device__ __forceinline__ float ordered_value(uint32_t key) {
  return __uint_as_float((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key);
}

// FALSE for a box whose every pair test fails: a rectangle without area has
// IoU 0 with everything (box_overlap.h); every circle counts.
__device__ __forceinline__ bool may_take_part(const P3dcNmsItem &item,
                                              P3dcNmsMode mode) {
  if (mode == P3DC_NMS_BEV_ROTATED || mode == P3DC_NMS_BEV_ALIGNED)
    return item.shape.rect.area > 0.0f;
  if (mode == P3DC_NMS_CIRCLE) return true;
  return item.shape.aligned.area > 0.0f;
}

struct GridPoint {
  float x, y, reach;
  // the box takes part (may_take_part)
  bool takes_part;
  // finite, and not a box the pair test scales (see the top)
  bool plain;
};

// A box's centre and reach: bev-aligned the larger half size (two
// rectangles overlap only where their centres are within the sum of their
// half sizes along each axis), circle half the distance threshold.
__device__ __forceinline__ GridPoint grid_point(const P3dcNmsItem &item,
                                                const P3dcNmsPairTest &test) {
  GridPoint p;
  p.takes_part = may_take_part(item, test.mode);
  bool huge = false;
  if (test.mode == P3DC_NMS_CIRCLE) {
    p.x = item.shape.centre[0];
    p.y = item.shape.centre[1];
    p.reach = 0.5f * sqrtf(test.threshold);
  } else {
    const P3dcBevRect &r = item.shape.rect;
    p.x = r.cx;
    p.y = r.cy;
    p.reach = fmaxf(r.half_dx, r.half_dy);
    huge = p3dc_bev_rect_is_huge(&r) != 0;
  }
  p.plain = !huge && isfinite(p.x) && isfinite(p.y) && isfinite(p.reach) &&
            p.reach >= 0.0f;
  return p;
}

// The grid of one call, as every kernel derives it from the bounds: cell
// (cx, cy) holds the centres whose cell_of is cx along x and cy along y.
struct GridFrame {
  float x0, y0, inv_cell, margin;
  uint32_t width, height;
};

// Cell @n - 1 at most along an axis whose origin is @origin: a monotonic
// function of @v (a subtraction, a product by a positive number, a floor
// and clamps, each monotonic in float), so that a centre between two
// window ends falls in a cell between theirs.
__device__ __forceinline__ uint32_t cell_of(float v, float origin, float inv,
                                            uint32_t n) {
  float c = floorf((v - origin) * inv);
  c = fminf(fmaxf(c, 0.0f), (float)(n - 1));
  return (uint32_t)c;
}

// TRUE, with @frame, when this call's mask goes through the grid; called
// after p3dc_wait_for_previous_kernel().
__device__ __forceinline__ bool grid_frame(const GridBounds *gathered,
                                           uint32_t m, GridFrame *frame) {
  GridBounds bounds;
  bounds.min_x = p3dc_load_after_wait(&gathered->min_x);
  bounds.max_x = p3dc_load_after_wait(&gathered->max_x);
  bounds.min_y = p3dc_load_after_wait(&gathered->min_y);
  bounds.max_y = p3dc_load_after_wait(&gathered->max_y);
  bounds.reach = p3dc_load_after_wait(&gathered->reach);
  bounds.unusable = p3dc_load_after_wait(&gathered->unusable);
  if (m <= kGridMinBoxes || bounds.unusable != 0 ||
      bounds.min_x > bounds.max_x || bounds.min_y > bounds.max_y)
    return false;
  const float min_x = ordered_value(bounds.min_x);
  const float max_x = ordered_value(bounds.max_x);
  const float min_y = ordered_value(bounds.min_y);
  const float max_y = ordered_value(bounds.max_y);
  const float reach = __uint_as_float(bounds.reach);
  const float span_x = max_x - min_x, span_y = max_y - min_y;
  float cell = fmaxf(2.0f * reach / kCellsPerWindow,
                     fmaxf(span_x, span_y) / (float)kGridSide);
  // every centre at one point, and no reach: one cell
  if (cell == 0.0f) cell = 1.0f;
  // The rounding of a centre, of a window's ends and of the pair tests is
  // a few units in the last place of the coordinates; the margin is about
  // a thousand of them.
  frame->margin = 1e-4f * (fmaxf(fabsf(min_x), fabsf(max_x)) +
                           fmaxf(fabsf(min_y), fabsf(max_y)) + reach);
  frame->inv_cell = 1.0f / cell;
  if (!isfinite(span_x) || !isfinite(span_y) || !isfinite(cell) ||
      !isfinite(frame->inv_cell) || !isfinite(frame->margin) ||
      !isfinite(4.0f * reach + 2.0f * frame->margin))
    return false;
  frame->x0 = min_x;
  frame->y0 = min_y;
  frame->width = cell_of(max_x, min_x, frame->inv_cell, kGridSide) + 1;
  frame->height = cell_of(max_y, min_y, frame->inv_cell, kGridSide) + 1;
  return true;
}

// The bounds' part of item_kernel: each thread adds the points of the
// items it wrote, and bounds_publish(), which all 32 lanes of a warp call,
// gathers them over the warp and adds them to the bounds with one atomic
// each.
struct BoundsPart {
  uint32_t min_x = 0xffffffffu, max_x = 0, min_y = 0xffffffffu, max_y = 0;
  uint32_t reach = 0, unusable = 0;

  __device__ __forceinline__ void add(const GridPoint &p) {
    if (!p.takes_part) return;
    if (!p.plain) {
      unusable = 1;
      return;
    }
    min_x = min(min_x, ordered_key(p.x));
    max_x = max(max_x, ordered_key(p.x));
    min_y = min(min_y, ordered_key(p.y));
    max_y = max(max_y, ordered_key(p.y));
    reach = max(reach, __float_as_uint(p.reach));
  }
};

__device__ __forceinline__ uint32_t warp_min(uint32_t v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v = min(v, __shfl_xor_sync(kFullWarp, v, offset));
  return v;
}

__device__ __forceinline__ uint32_t warp_max(uint32_t v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v = max(v, __shfl_xor_sync(kFullWarp, v, offset));
  return v;
}

__device__ __forceinline__ void bounds_publish(const BoundsPart &part,
                                               GridBounds *bounds) {
  const uint32_t min_x = warp_min(part.min_x), max_x = warp_max(part.max_x);
  const uint32_t min_y = warp_min(part.min_y), max_y = warp_max(part.max_y);
  const uint32_t reach = warp_max(part.reach);
  const uint32_t unusable = warp_max(part.unusable);
  if ((threadIdx.x & 31) != 0 || min_x > max_x) {
    // a warp with no box that takes part has nothing to add, unless one
    // was unusable
    if ((threadIdx.x & 31) == 0 && unusable) atomicOr(&bounds->unusable, 1u);
    return;
  }
  atomicMin(&bounds->min_x, min_x);
  atomicMax(&bounds->max_x, max_x);
  atomicMin(&bounds->min_y, min_y);
  atomicMax(&bounds->max_y, max_y);
  atomicMax(&bounds->reach, reach);
  if (unusable) atomicOr(&bounds->unusable, 1u);
}

__device__ __forceinline__ void bounds_reset(GridBounds *bounds) {
  bounds->min_x = bounds->min_y = 0xffffffffu;
  bounds->max_x = bounds->max_y = 0;
  bounds->reach = 0;
  bounds->unusable = 0;
}

// Stage 1: cell and slot of each box (kNoCell for one that does not take
// part), and the walk's mask words zeroed, a warp a row.
template <P3dcNmsMode kMode>
__global__ void __launch_bounds__(kGridThreads)
    grid_cell_kernel(const P3dcNmsItem *items, const uint32_t *item_count,
                     P3dcNmsPairTest test, const GridBounds *bounds,
                     uint2 *place, uint32_t *cell_counts,
                     unsigned long long *mask) {
  p3dc_allow_next_kernel();
  p3dc_wait_for_previous_kernel();
  const uint32_t m = p3dc_load_after_wait(item_count);
  GridFrame f;
  if (!grid_frame(bounds, m, &f)) return;
  test.mode = kMode;
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < m; i += stride) {
    const GridPoint p = grid_point(items[i], test);
    uint2 at = make_uint2(kNoCell, 0);
    if (p.takes_part) {
      at.x = cell_of(p.y, f.y0, f.inv_cell, f.height) * f.width +
             cell_of(p.x, f.x0, f.inv_cell, f.width);
      at.y = atomicAdd(&cell_counts[at.x], 1u);
    }
    place[i] = at;
  }
  const uint32_t words = (m + kTile - 1) / kTile;
  const uint32_t lane = threadIdx.x & 31;
  const uint32_t warps = stride / 32;
  for (uint32_t row = (blockIdx.x * blockDim.x + threadIdx.x) / 32; row < m;
       row += warps)
    for (uint32_t col = row / kTile + lane; col < words; col += 32)
      mask[(size_t)row * words + col] = 0;
}

// Stage 2, one block of kScanThreads: starts[c] = the boxes of the cells
// before c, starts[cells] = all of them.  Warp w takes the kScanRun x 32
// cells from kScanRun x 32 w, 32 neighbouring cells a load, so that every
// load and store of the warp is whole lines (a thread's own run of 16 cells
// measured 22 us under the profiler, this 7.9), sums them, and, once the
// warps' sums are scanned, writes their starts 32 at a time.
constexpr uint32_t kScanThreads = 1024;
constexpr uint32_t kScanRun = kGridCells / kScanThreads;

__global__ void __launch_bounds__(kScanThreads)
    grid_scan_kernel(const uint32_t *item_count, const GridBounds *bounds,
                     const uint32_t *cell_counts, uint32_t *starts) {
  __shared__ uint32_t warp_sums[kScanThreads / 32];
  p3dc_allow_next_kernel();
  p3dc_wait_for_previous_kernel();
  GridFrame f;
  if (!grid_frame(bounds, p3dc_load_after_wait(item_count), &f)) return;
  const uint32_t cells = f.width * f.height;
  const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const uint32_t first = warp * kScanRun * 32 + lane;
  uint32_t count[kScanRun];
  uint32_t own = 0;
#pragma unroll
  for (uint32_t k = 0; k < kScanRun; k++) {
    const uint32_t c = first + 32 * k;
    count[k] = c < cells ? cell_counts[c] : 0;
    own += count[k];
  }
  for (uint32_t offset = 16; offset > 0; offset >>= 1)
    own += __shfl_xor_sync(kFullWarp, own, offset);
  if (lane == 0) warp_sums[warp] = own;
  // warp_sums complete
  __syncthreads();
  // warp 0 turns the warps' sums into their first slots
  if (warp == 0) {
    const uint32_t sum = warp_sums[lane];
    const uint32_t scanned = warp_inclusive_sum(sum);
    warp_sums[lane] = scanned - sum;
  }
  // warp_sums holds each warp's first slot
  __syncthreads();
  uint32_t carry = warp_sums[warp];
#pragma unroll
  for (uint32_t k = 0; k < kScanRun; k++) {
    const uint32_t inclusive = warp_inclusive_sum(count[k]);
    const uint32_t c = first + 32 * k;
    if (c < cells) starts[c] = carry + inclusive - count[k];
    carry += __shfl_sync(kFullWarp, inclusive, 31);
  }
  // the last warp's carry is every box
  if (threadIdx.x == kScanThreads - 1) starts[cells] = carry;
}

static_assert(kGridCells % kScanThreads == 0, "every warp whole loads");

// Stage 3: the boxes in cell order, and their box numbers, so that a
// warp's lanes read a window's boxes in whole lines.
__global__ void __launch_bounds__(kGridThreads)
    grid_bin_kernel(const P3dcNmsItem *items, const uint32_t *item_count,
                    const GridBounds *bounds, const uint2 *place,
                    const uint32_t *starts, P3dcNmsItem *binned,
                    uint32_t *binned_index) {
  p3dc_allow_next_kernel();
  p3dc_wait_for_previous_kernel();
  const uint32_t m = p3dc_load_after_wait(item_count);
  GridFrame f;
  if (!grid_frame(bounds, m, &f)) return;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < m;
       i += gridDim.x * blockDim.x) {
    const uint2 at = place[i];
    if (at.x == kNoCell) continue;
    const uint32_t slot = starts[at.x] + at.y;
    binned[slot] = items[i];
    binned_index[slot] = i;
  }
}

// One pair found: its mask bit, and its place in both pair lists (as the
// dense kernel appends them: the count always, the box while slots last).
__device__ __forceinline__ void grid_record_pair(uint32_t lo, uint32_t hi,
                                                 uint32_t words,
                                                 unsigned long long *mask,
                                                 const PairLists &lists) {
  atomicOr(&mask[(size_t)lo * words + hi / kTile], 1ull << (hi % kTile));
  const uint32_t row_slot = atomicAdd(&lists.counts[lo].y, 1u);
  if (row_slot < kListSlots)
    lists.rows[(size_t)lo * kListSlots + row_slot] = (uint16_t)hi;
  const uint32_t column_slot = atomicAdd(&lists.counts[hi].x, 1u);
  if (column_slot < kListSlots)
    lists.columns[(size_t)hi * kListSlots + column_slot] = (uint16_t)lo;
}

// Whether the centres of two boxes are close enough for their pair test
// to be TRUE at all, given the sum of their reaches: each axis for
// bev-aligned, the distance for circle; with the reaches widened as the
// window is (grid_frame).
template <P3dcNmsMode kMode>
__device__ __forceinline__ bool grid_near(float dx, float dy, float reaches,
                                          float margin) {
  const float within = reaches * 1.001f + margin;
  if (kMode == P3DC_NMS_CIRCLE) return dx * dx + dy * dy <= within * within;
  return fabsf(dx) <= within && fabsf(dy) <= within;
}

// Stage 4: warp w takes box i = w (and on, a grid stride), and its window:
// the cells within twice its reach and the margin.  The window's rows of
// cells are each a run of the binned points; the warp takes up to 32 rows
// at once, lane r the bounds of row r, and its lanes then share the rows'
// points evenly (a car's window is about 17 short rows, which one row at a
// time left most lanes idle and put a round trip a row on the box's
// chain).  Each lane tests the pairs box i owns (see the top).
template <P3dcNmsMode kMode>
__global__ void __launch_bounds__(kGridThreads)
    grid_pair_kernel(const P3dcNmsItem *items, const uint32_t *item_count,
                     P3dcNmsPairTest test, const GridBounds *bounds,
                     const uint2 *place, const uint32_t *starts,
                     const P3dcNmsItem *binned, const uint32_t *binned_index,
                     unsigned long long *mask, PairLists lists) {
  // per warp: the first point of each of its 32 rows, and the points of
  // the rows up to each one (an inclusive scan)
  __shared__ uint32_t row_first[kGridWarps][32];
  __shared__ uint32_t row_scan[kGridWarps][32];
  p3dc_allow_next_kernel();
  p3dc_wait_for_previous_kernel();
  const uint32_t m = p3dc_load_after_wait(item_count);
  GridFrame f;
  if (!grid_frame(bounds, m, &f)) return;
  test.mode = kMode;
  const uint32_t words = (m + kTile - 1) / kTile;
  const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const uint32_t warps = gridDim.x * kGridWarps;
  for (uint32_t i = (blockIdx.x * blockDim.x + threadIdx.x) / 32; i < m;
       i += warps) {
    if (place[i].x == kNoCell) continue;
    const P3dcNmsItem a = items[i];
    const GridPoint p = grid_point(a, test);
    // >= twice the reach, widened (grid_near), and so >= the reaches of any
    // pair this box owns
    const float window = 2.0f * p.reach * 1.001f + f.margin;
    const uint32_t x_first = cell_of(p.x - window, f.x0, f.inv_cell, f.width);
    const uint32_t x_last = cell_of(p.x + window, f.x0, f.inv_cell, f.width);
    const uint32_t y_first = cell_of(p.y - window, f.y0, f.inv_cell, f.height);
    const uint32_t y_last = cell_of(p.y + window, f.y0, f.inv_cell, f.height);
    for (uint32_t rows = y_first; rows <= y_last; rows += 32) {
      const uint32_t y = rows + lane;
      uint32_t first = 0, count = 0;
      if (y <= y_last) {
        first = starts[y * f.width + x_first];
        count = starts[y * f.width + x_last + 1] - first;
      }
      const uint32_t inclusive = warp_inclusive_sum(count);
      row_first[warp][lane] = first;
      row_scan[warp][lane] = inclusive;
      const uint32_t total = __shfl_sync(kFullWarp, inclusive, 31);
      __syncwarp();
      for (uint32_t t = lane; t < total; t += 32) {
        // the row of the warp's t-th point: the first whose scan is above t
        uint32_t r = 0;
        for (uint32_t step = 16; step > 0; step >>= 1)
          if (row_scan[warp][r + step - 1] <= t) r += step;
        const uint32_t s =
            row_first[warp][r] + t - (r > 0 ? row_scan[warp][r - 1] : 0);
        const P3dcNmsItem other = binned[s];
        const uint32_t j = binned_index[s];
        const GridPoint q = grid_point(other, test);
        const bool owns = q.reach < p.reach || (q.reach == p.reach && j > i);
        if (!owns || !grid_near<kMode>(q.x - p.x, q.y - p.y, p.reach + q.reach,
                                       f.margin))
          continue;
        const bool pair = i < j ? p3dc_nms_item_suppresses(&test, &a, &other)
                                : p3dc_nms_item_suppresses(&test, &other, &a);
        if (pair) grid_record_pair(min(i, j), max(i, j), words, mask, lists);
      }
      // every lane's reads of this batch's rows done before the next
      __syncwarp();
    }
  }
}

}  // namespace p3dc_nms

#endif  // P3DC_NMS_GRID_CUH
