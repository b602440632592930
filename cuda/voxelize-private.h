/* voxelize internals for the benchmark and the tests (not installed): how
 * a frame's kernels are launched, chosen per call, a device-side hold before
 * the frame, and events recorded between the kernels, so that one run on
 * the GPU times each launch design and each kernel.  p3d_voxelize_cuda () is
 * p3d_voxelize_cuda_variant () with the default variant.  The launch design
 * that loses is to be deleted once both have been measured. */
#ifndef P3D_VOXELIZE_PRIVATE_H
#define P3D_VOXELIZE_PRIVATE_H

#include "runtime.h"
#include "voxelize.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum
{
  /* One launch of a graph of the three kernels, with programmatic edges
   * where supported, its kernel parameters updated when they change; frames
   * of 0 points, the first frame after creation or growth, and streams
   * being captured use the stream launches. */
  P3D_VOXELIZE_LAUNCH_GRAPH = 0,
  /* Three launches on the stream, the second and third as programmatic
   * dependents of the one before (compute capability 9.0 and later). */
  P3D_VOXELIZE_LAUNCH_STREAM,
  /* Three launches on the stream, each waiting for the one before. */
  P3D_VOXELIZE_LAUNCH_STREAM_SERIAL
} P3dVoxelizeLaunch;

typedef struct
{
  P3dVoxelizeLaunch launch;
  /* nonzero: a kernel that spins this many microseconds on the device is
   * queued before the frame, so that the host has queued the whole frame
   * before the device starts it: events around the frame then time the
   * device alone, without the host's launch costs */
  uint32_t hold_us;
  /* each one not NULL is recorded on the stream: [0] when the frame's
   * first kernel may start (after the hold and any workspace reset), [1]
   * after the cells kernel, [2] after the scan, [3] after the gather.
   * [1] and [2] are recorded only with stream launches, and turn the
   * programmatic dependent launches off; a frame of 0 points records [0]
   * and [3] only. */
  P3dCudaEvent events[4];
} P3dVoxelizeVariant;

/* The variant p3d_voxelize_cuda () runs. */
static inline void
p3d_voxelize_variant_init (P3dVoxelizeVariant * variant)
{
  memset (variant, 0, sizeof (*variant));
  variant->launch = P3D_VOXELIZE_LAUNCH_GRAPH;
}

/* p3d_voxelize_cuda () as @variant says (NULL: the default). */
P3dResult p3d_voxelize_cuda_variant (P3dVoxelizer * voxelizer,
    const float *points, size_t n_points, const P3dVoxelizeOutput * out,
    int output_clean, P3dCudaStream stream,
    const P3dVoxelizeVariant * variant);

#ifdef __cplusplus
}
#endif

#endif /* P3D_VOXELIZE_PRIVATE_H */
