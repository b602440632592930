/* gst-perception compute library: what pillarfeat's tests reach beyond
 * pillarfeat.h (not installed). */
#ifndef P3DC_PILLARFEAT_PRIVATE_H
#define P3DC_PILLARFEAT_PRIVATE_H

#include "pillarfeat.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether a call on @pf has built its CUDA graph: the tests check that
 * their calls ran as a graph. */
int p3dc_pillarfeat_cuda_graph_built (const P3dcPillarFeatCuda * pf);

/* The voxels a tile of @pf's point kernel takes, 0 where it takes the slot
 * kernel (pillarfeat.cu): the tests check which kernel their shapes
 * reach. */
uint32_t p3dc_pillarfeat_cuda_tile_voxels (const P3dcPillarFeatCuda * pf);

#ifdef __cplusplus
}
#endif

#endif /* P3DC_PILLARFEAT_PRIVATE_H */
