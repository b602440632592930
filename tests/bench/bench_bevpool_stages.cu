// bench_bevpool's diagnostic: the library's geometry update steps,
// instantiated here with a CUDA event at each mark between them, so
// launched one by one (the library launches the same kernels, described
// by the same code, as one graph); only the benchmarks build this file,
// and bench_bevpool links the compute library's objects statically beside
// it, so that the process holds one CUDA runtime.
#include <cuda_runtime.h>

#include "bench_bevpool_stages.h"
#include "bevpool_geometry_stages.cuh"

static_assert(P3D_BENCH_GEOMETRY_STEPS ==
                  p3dc_bevpool_geometry::kGeometryStages,
              "one name and one event interval per step");

namespace {

struct EventMarks {
  P3dcCudaEvent *events;
  cudaError_t operator()(int step, cudaStream_t stream) const {
    return cudaEventRecord(events[step], stream);
  }
};

}  // namespace

extern "C" const char *const p3d_bench_geometry_step_names[] = {
    "project and cut runs", "cell starts", "place runs", "rank runs"};

extern "C" P3dcResult p3d_bench_geometry_compute_marked(
    P3dcBevGeometryCuda *geometry, const P3dcCameraCalib *calib,
    P3dcCudaEvent *events, P3dcCudaStream stream) {
  if (events == nullptr) return P3DC_ERROR_INVALID_ARGUMENT;
  return p3dc_bevpool_geometry::compute_stages(geometry, calib,
                                               EventMarks{events}, stream);
}
