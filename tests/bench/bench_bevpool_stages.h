/* bench_bevpool's diagnostic: the bevpool geometry's update timed step by
 * step.  Built only with the benchmarks (bench_bevpool_stages.cu), never in
 * the compute library. */
#ifndef P3D_BENCH_BEVPOOL_STAGES_H
#define P3D_BENCH_BEVPOOL_STAGES_H

#include "bevpool.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The update's steps (bevpool_geometry_stages.cuh). */
#define P3D_BENCH_GEOMETRY_STEPS 4
extern const char *const p3d_bench_geometry_step_names[];

/* p3dc_bevpool_geometry_compute_cuda() that also records @events (created by
 * the caller, P3D_BENCH_GEOMETRY_STEPS + 1 of them) on @stream: one before
 * the first step and one after each. */
P3dcResult p3d_bench_geometry_compute_marked (P3dcBevGeometryCuda * geometry,
    const P3dcCameraCalib * calib, P3dcCudaEvent * events,
    P3dcCudaStream stream);

#ifdef __cplusplus
}
#endif

#endif /* P3D_BENCH_BEVPOOL_STAGES_H */
