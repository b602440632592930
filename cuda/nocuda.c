/* Builds without CUDA: the device entry points of voxelize, pillarfeat, nms
 * and bevpool, so that the elements link unchanged (pillarencode's,
 * centerpoint_decode's and convnet's are in their own *_nocuda.c and
 * convnet_nocudnn.c files, the runtime's in runtime_nocuda.c).  They are
 * never reached in practice, since p3dc_cuda_device_count() is 0 and every
 * element then takes its reference path, but a direct caller gets a clear
 * P3DC_ERROR_NO_CUDA. */
#include "bevpool.h"
#include "bevpool-private.h"
#include "voxelize.h"
#include "nms-private.h"
#include "pillarfeat-private.h"

P3dcResult
p3dc_pillarfeat_cuda_new (const P3dcPillarFeatParams * params,
    P3dcPillarFeatCuda ** pf)
{
  (void) params;
  if (pf != NULL)
    *pf = NULL;
  return P3DC_ERROR_NO_CUDA;
}

void
p3dc_pillarfeat_cuda_free (P3dcPillarFeatCuda * pf)
{
  (void) pf;
}

int
p3dc_pillarfeat_cuda_graph_built (const P3dcPillarFeatCuda * pf)
{
  (void) pf;
  return 0;
}

uint32_t
p3dc_pillarfeat_cuda_tile_voxels (const P3dcPillarFeatCuda * pf)
{
  (void) pf;
  return 0;
}

P3dcResult
p3dc_pillarfeat_cuda (P3dcPillarFeatCuda * pf,
    const P3dcPillarFeatInput * in, const P3dcPillarFeatOutput * out,
    int output_clean, P3dcCudaStream stream)
{
  (void) pf;
  (void) in;
  (void) out;
  (void) output_clean;
  (void) stream;
  return P3DC_ERROR_NO_CUDA;
}

P3dcResult
p3dc_nms_new (uint32_t capacity, P3dcNms ** nms)
{
  (void) capacity;
  if (nms != NULL)
    *nms = NULL;
  return P3DC_ERROR_NO_CUDA;
}

void
p3dc_nms_free (P3dcNms * nms)
{
  (void) nms;
}

uint32_t
p3dc_nms_graphs_built (const P3dcNms * nms)
{
  (void) nms;
  return 0;
}

void
p3dc_nms_refuse_graph_builds (P3dcNms * nms)
{
  (void) nms;
}

uint64_t
p3dc_nms_graph_node_sets (const P3dcNms * nms)
{
  (void) nms;
  return 0;
}

uint32_t
p3dc_nms_graph_forms (void)
{
  return 0;
}

void
p3dc_nms_refuse_graph_forms (P3dcNms * nms)
{
  (void) nms;
}

void
p3dc_nms_limit_reduce_blocks (P3dcNms * nms, uint32_t most)
{
  (void) nms;
  (void) most;
}

uint32_t
p3dc_nms_reduce_blocks (const P3dcNms * nms)
{
  (void) nms;
  return 0;
}

int
p3dc_nms_sorts_by_chunks (const P3dcNms * nms)
{
  (void) nms;
  return 0;
}

void
p3dc_nms_limit_shared_memory (size_t bytes)
{
  (void) bytes;
}

P3dcResult
p3dc_nms_device_capacity (uint32_t * capacity)
{
  if (capacity != NULL)
    *capacity = 0;
  return P3DC_ERROR_NO_CUDA;
}

uint32_t
p3dc_nms_get_capacity (const P3dcNms * nms)
{
  (void) nms;
  return 0;
}

P3dcResult
p3dc_nms_cuda (P3dcNms * nms, const P3dcNmsParams * params, const void *boxes,
    const uint32_t * n_boxes_device, void *out, uint32_t out_capacity,
    uint32_t * out_count, int32_t * kept_index, P3dcCudaStream stream)
{
  (void) nms;
  (void) params;
  (void) boxes;
  (void) n_boxes_device;
  (void) out;
  (void) out_capacity;
  (void) out_count;
  (void) kept_index;
  (void) stream;
  return P3DC_ERROR_NO_CUDA;
}

P3dcResult
p3dc_nms_gather_cuda (const int32_t * kept_index, uint32_t capacity,
    const void *payload, uint32_t words, void *out, P3dcCudaStream stream)
{
  (void) kept_index;
  (void) capacity;
  (void) payload;
  (void) words;
  (void) out;
  (void) stream;
  return P3DC_ERROR_NO_CUDA;
}

P3dcResult
p3dc_voxelizer_new (const P3dcVoxelizeParams * params, size_t max_points_hint,
    P3dcVoxelizer ** voxelizer)
{
  (void) params;
  (void) max_points_hint;
  if (voxelizer)
    *voxelizer = NULL;
  return P3DC_ERROR_NO_CUDA;
}

void
p3dc_voxelizer_free (P3dcVoxelizer * voxelizer)
{
  (void) voxelizer;
}

P3dcResult
p3dc_voxelize_cuda (P3dcVoxelizer * voxelizer, const float *points,
    size_t n_points, const P3dcVoxelizeOutput * out, int output_clean,
    P3dcCudaStream stream)
{
  (void) voxelizer;
  (void) points;
  (void) n_points;
  (void) out;
  (void) output_clean;
  (void) stream;
  return P3DC_ERROR_NO_CUDA;
}

P3dcResult
p3dc_bevpool_geometry_cuda_new (const P3dcBevPoolParams * params,
    P3dcBevGeometryCuda ** geometry)
{
  (void) params;
  if (geometry != NULL)
    *geometry = NULL;
  return P3DC_ERROR_NO_CUDA;
}

void
p3dc_bevpool_geometry_cuda_free (P3dcBevGeometryCuda * geometry)
{
  (void) geometry;
}

P3dcResult
p3dc_bevpool_geometry_compute_cuda (P3dcBevGeometryCuda * geometry,
    const P3dcCameraCalib * calib, P3dcCudaStream stream)
{
  (void) geometry;
  (void) calib;
  (void) stream;
  return P3DC_ERROR_NO_CUDA;
}

P3dcResult
p3dc_bevpool_geometry_cuda_download (const P3dcBevGeometryCuda * geometry,
    P3dcBevGeometry * host, P3dcCudaStream stream)
{
  (void) geometry;
  (void) host;
  (void) stream;
  return P3DC_ERROR_NO_CUDA;
}

P3dcResult
p3dc_bevpool_geometry_cuda_new_capacity (const P3dcBevPoolParams * params,
    uint32_t sum_capacity, P3dcBevGeometryCuda ** geometry)
{
  (void) params;
  (void) sum_capacity;
  if (geometry != NULL)
    *geometry = NULL;
  return P3DC_ERROR_NO_CUDA;
}

P3dcResult
p3dc_bevpool_cuda (const P3dcBevGeometryCuda * geometry, const void *features,
    const void *depth, int half_in, void *out, int half_out,
    P3dcCudaStream stream)
{
  (void) geometry;
  (void) features;
  (void) depth;
  (void) half_in;
  (void) out;
  (void) half_out;
  (void) stream;
  return P3DC_ERROR_NO_CUDA;
}
