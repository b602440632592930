// What the kernels of nms.cu share: the 64-box tiles of the suppression
// mask, and the call's outputs, which its first kernel publishes and zeroes.
// The chaining of one kernel to the next (programmatic dependent launch) is
// launch.cuh's.
#ifndef P3DC_NMS_COMMON_CUH
#define P3DC_NMS_COMMON_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "launch.cuh"
#include "nms.h"

namespace p3dc_nms {

// Boxes per mask word: bit k of mask[i * words + c] is set when sorted box i
// suppresses sorted box c * 64 + k.
constexpr uint32_t kTile = 64;
constexpr unsigned kFullWarp = 0xffffffffu;

// The sum of @value over this lane and the lanes below it in the warp
// (every lane of the warp calls it).
__device__ __forceinline__ uint32_t warp_inclusive_sum(uint32_t value) {
  const uint32_t lane = threadIdx.x & 31;
  for (uint32_t offset = 1; offset < 32; offset <<= 1) {
    const uint32_t up = __shfl_up_sync(kFullWarp, value, offset);
    if (lane >= offset) value += up;
  }
  return value;
}

// The sum of @value over the warp (every lane of the warp calls it): the
// warp reduction instruction where the device has it (sm_80 and later),
// else shuffles.
__device__ __forceinline__ uint32_t warp_sum(uint32_t value) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return __reduce_add_sync(kFullWarp, value);
#else
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_xor_sync(kFullWarp, value, offset);
  return value;
#endif
}

// Tile number @linear of the upper triangle, walked column by column:
// linear = col * (col + 1) / 2 + row, row <= col.  The float square root
// only guesses; the two loops make the answer exact.
__device__ __forceinline__ void triangle_tile(uint32_t linear, uint32_t *row,
                                              uint32_t *col) {
  uint32_t c = (uint32_t)((sqrtf(8.0f * (float)linear + 1.0f) - 1.0f) * 0.5f);
  while (c > 0 && c * (c + 1) / 2 > linear) c--;
  while ((c + 1) * (c + 2) / 2 <= linear) c++;
  *col = c;
  *row = linear - c * (c + 1) / 2;
}

// The column mask, for calls of at most kColumnBoxes boxes: bit r of
// column_mask[t * kColumnBoxes + c] is set when sorted box t * 64 + r
// suppresses sorted box c, for t <= c / 64 (the words the mask kernel
// writes; nms_small.cuh fills it with the boxes in input order, every
// t < ceil (m / 64)).  It is the suppression mask transposed, so that the keep
// reduction can give each box its suppressors as a few words
// (nms_reduce.cuh), and laid out word by word, so that a warp of the
// reduction, 32 neighbouring boxes, loads a word each from 256 contiguous
// bytes (laid out by column, each of its loads touched 32 sectors, on the
// one multiprocessor the reduction has).  Every workspace holds all
// kColumnBoxes columns (128 KB), zeroed once.
constexpr uint32_t kColumnBoxes = 1024;
constexpr uint32_t kColumnWords = kColumnBoxes / kTile;

// The pair lists, for calls of more than kColumnBoxes boxes, where a column
// mask would no longer fit a thread's registers.  For sorted box b:
// counts[b].x is the number of boxes that suppress it (its column of the
// mask) and columns[b * kListSlots + s], s < min (counts[b].x, kListSlots),
// are those boxes; counts[b].y and rows[b * kListSlots + s] the same for
// the boxes b suppresses (its row).  The lists are in no particular order
// (the mask kernel's blocks append to them as they finish tiles), and keep
// only their first kListSlots boxes; the keep reduction walks the mask
// instead where a box has more than 255 pairs either way (nms_reduce.cuh).
// Stage 1 zeroes the counts (nms_sort.cuh).  The slots hold 16-bit box
// numbers, enough for any workspace, 8 to an aligned 16-byte load.
constexpr uint32_t kListSlots = 256;
static_assert(P3DC_NMS_MAX_CAPACITY <= 65536u,
              "a pair list holds 16-bit box numbers");

struct PairLists {
  uint2 *counts;
  uint16_t *columns;
  uint16_t *rows;
};

// The bits of tile t that are boxes (the last tile may be partial).
__device__ __forceinline__ unsigned long long tile_boxes(uint32_t m,
                                                         uint32_t t) {
  const uint32_t in_tile = m - t * kTile;
  return in_tile >= kTile ? ~0ull : (1ull << in_tile) - 1;
}

// A call's input records and outputs.  The first kernel of a call takes
// them as arguments and publishes them to the workspace (publish_call), and
// the keep reduction reads them there: so the arguments of the later
// kernels stay the same from call to call where the element's buffer pools
// hand out other buffers every frame, and a call through the graph sets one
// node again instead of three (kernel_graph.cuh; about 1 us a node).  That
// first kernel also writes the output beyond the kept boxes: records
// zeroed, kept_index -1 (nms.h), over the whole output capacity, before the
// one-block reduction writes the kept records over the first ones; at 20000
// boxes that is 720 KB the reduction's single block no longer stores.
struct CallOutput {
  const uint32_t *boxes;
  uint32_t *out;
  int32_t *kept_index;
  uint32_t *out_count;
  size_t words;  // out_capacity * words per record
  uint32_t capacity;
};

// The outputs beyond the kept boxes, written before the kept boxes are:
// records zeroed and kept_index -1 over the whole output capacity, every
// thread of a grid a share.
__device__ __forceinline__ void clear_outputs(const CallOutput &call) {
  const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t w = first; w < call.words; w += stride) call.out[w] = 0;
  if (call.kept_index != nullptr) {
    for (size_t p = first; p < call.capacity; p += stride)
      call.kept_index[p] = -1;
  }
}

// Every thread of the call's first kernel calls it; that kernel is never a
// programmatic dependent, so the previous call's reduction, which read the
// workspace's copy and wrote the outputs, has completed.
__device__ __forceinline__ void publish_call(const CallOutput &call,
                                             CallOutput *published) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *published = call;
  clear_outputs(call);
}

}  // namespace p3dc_nms

#endif  // P3DC_NMS_COMMON_CUH
