/* nms internals for the benchmark and the tests (not installed): the stages
 * of the CUDA path in their current and their previous design, chosen per
 * call, and events recorded between the stages, so that one run on the GPU
 * times each design and each stage.  p3d_nms_cuda () is
 * p3d_nms_cuda_variant () with the default variant and no events.  The
 * previous designs are to be deleted once the new ones have been measured. */
#ifndef P3D_NMS_PRIVATE_H
#define P3D_NMS_PRIVATE_H

#include "nms.h"
#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Workspaces of up to 4096 boxes; above, both sort with CUB's device radix
 * sort over the whole capacity. */
typedef enum
{
  P3D_NMS_SORT_RANK = 0,        /* ranks counted on many blocks */
  P3D_NMS_SORT_BLOCK_RADIX      /* previous: one-block radix sort */
} P3dNmsSortStage;

typedef enum
{
  P3D_NMS_MASK_FILTERED = 0,    /* cheap test on every pair, full on the rest */
  P3D_NMS_MASK_DIRECT           /* previous: full test on every pair */
} P3dNmsMaskStage;

typedef enum
{
  P3D_NMS_REDUCE_CHUNKED = 0,   /* steps of 4 tiles, mask bands prefetched */
  P3D_NMS_REDUCE_TILED          /* previous: one step and round trip a tile */
} P3dNmsReduceStage;

typedef struct
{
  P3dNmsSortStage sort;
  P3dNmsMaskStage mask;
  P3dNmsReduceStage reduce;
  /* nonzero: each kernel after the first of a call is launched as a
   * programmatic dependent of the one before (on devices of compute
   * capability 9.0 and later; ignored before) */
  int chained;
} P3dNmsVariant;

/* The variant p3d_nms_cuda () runs. */
static inline void
p3d_nms_variant_init (P3dNmsVariant * variant)
{
  variant->sort = P3D_NMS_SORT_RANK;
  variant->mask = P3D_NMS_MASK_FILTERED;
  variant->reduce = P3D_NMS_REDUCE_CHUNKED;
  variant->chained = 1;
}

/* p3d_nms_cuda () with the stages @variant names (NULL: the default), and,
 * when @stage_events is not NULL, stage_events[0] recorded on @stream after
 * the sort stage and stage_events[1] after the mask stage (which breaks the
 * chaining at those two points). */
P3dResult p3d_nms_cuda_variant (P3dNms * nms, const P3dNmsParams * params,
    const void *boxes, const uint32_t * n_boxes_device, void *out,
    uint32_t out_capacity, uint32_t * out_count, int32_t * kept_index,
    P3dCudaStream stream, const P3dNmsVariant * variant,
    P3dCudaEvent * stage_events);

#ifdef __cplusplus
}
#endif

#endif /* P3D_NMS_PRIVATE_H */
