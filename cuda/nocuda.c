/* Builds without CUDA: the device entry points of every operation, so that
 * the elements link unchanged.  They are never reached in practice, since
 * p3d_cuda_device_count() is 0 and every element then takes its reference
 * path, but a direct caller gets a clear P3D_ERROR_NO_CUDA. */
#include "bevpool.h"
#include "bevpool-private.h"
#include "voxelize.h"
#include "nms.h"
#include "pillarfeat.h"

P3dResult
p3d_pillarfeat_cuda (const P3dPillarFeatParams * params,
    const P3dPillarFeatInput * in, const P3dPillarFeatOutput * out,
    int output_clean, P3dCudaStream stream)
{
  (void) params;
  (void) in;
  (void) out;
  (void) output_clean;
  (void) stream;
  return P3D_ERROR_NO_CUDA;
}

P3dResult
p3d_nms_new (uint32_t capacity, P3dNms ** nms)
{
  (void) capacity;
  if (nms != NULL)
    *nms = NULL;
  return P3D_ERROR_NO_CUDA;
}

void
p3d_nms_free (P3dNms * nms)
{
  (void) nms;
}

uint32_t
p3d_nms_get_capacity (const P3dNms * nms)
{
  (void) nms;
  return 0;
}

P3dResult
p3d_nms_cuda (P3dNms * nms, const P3dNmsParams * params, const void *boxes,
    const uint32_t * n_boxes_device, void *out, uint32_t out_capacity,
    uint32_t * out_count, int32_t * kept_index, P3dCudaStream stream)
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
  return P3D_ERROR_NO_CUDA;
}

P3dResult
p3d_voxelizer_new (const P3dVoxelizeParams * params, size_t max_points_hint,
    P3dVoxelizer ** voxelizer)
{
  (void) params;
  (void) max_points_hint;
  if (voxelizer)
    *voxelizer = NULL;
  return P3D_ERROR_NO_CUDA;
}

void
p3d_voxelizer_free (P3dVoxelizer * voxelizer)
{
  (void) voxelizer;
}

P3dResult
p3d_voxelize_cuda (P3dVoxelizer * voxelizer, const float *points,
    size_t n_points, const P3dVoxelizeOutput * out, int output_clean,
    P3dCudaStream stream)
{
  (void) voxelizer;
  (void) points;
  (void) n_points;
  (void) out;
  (void) output_clean;
  (void) stream;
  return P3D_ERROR_NO_CUDA;
}

P3dResult
p3d_bevpool_geometry_cuda_new (const P3dBevPoolParams * params,
    P3dBevGeometryCuda ** geometry)
{
  (void) params;
  if (geometry != NULL)
    *geometry = NULL;
  return P3D_ERROR_NO_CUDA;
}

void
p3d_bevpool_geometry_cuda_free (P3dBevGeometryCuda * geometry)
{
  (void) geometry;
}

P3dResult
p3d_bevpool_geometry_compute_cuda (P3dBevGeometryCuda * geometry,
    const P3dCameraCalib * calib, P3dCudaStream stream)
{
  (void) geometry;
  (void) calib;
  (void) stream;
  return P3D_ERROR_NO_CUDA;
}

P3dResult
p3d_bevpool_geometry_cuda_download (const P3dBevGeometryCuda * geometry,
    P3dBevGeometry * host, P3dCudaStream stream)
{
  (void) geometry;
  (void) host;
  (void) stream;
  return P3D_ERROR_NO_CUDA;
}

P3dResult
p3d_bevpool_geometry_cuda_new_scheduled (const P3dBevPoolParams * params,
    const P3dBevPoolSchedule * schedule, P3dBevGeometryCuda ** geometry)
{
  (void) params;
  (void) schedule;
  if (geometry != NULL)
    *geometry = NULL;
  return P3D_ERROR_NO_CUDA;
}

P3dResult
p3d_bevpool_geometry_compute_cuda_timed (P3dBevGeometryCuda * geometry,
    const P3dCameraCalib * calib, P3dCudaEvent * events, P3dCudaStream stream)
{
  (void) geometry;
  (void) calib;
  (void) events;
  (void) stream;
  return P3D_ERROR_NO_CUDA;
}

P3dResult
p3d_bevpool_cuda (const P3dBevGeometryCuda * geometry, const void *features,
    const void *depth, int half_in, void *out, int half_out,
    P3dCudaStream stream)
{
  (void) geometry;
  (void) features;
  (void) depth;
  (void) half_in;
  (void) out;
  (void) half_out;
  (void) stream;
  return P3D_ERROR_NO_CUDA;
}
