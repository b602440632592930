// Stream capture for the tests (p3dtest-capture.h).
#include <cuda_runtime.h>

#include "p3dtest-capture.h"

extern "C" P3dcResult p3d_capture_and_launch(P3dcCudaStream stream,
                                             P3dCaptureQueue queue,
                                             void *user_data, size_t *nodes) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  *nodes = 0;
  cudaError_t err = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  if (err != cudaSuccess) return err;
  const P3dcResult queued = queue(user_data, stream);
  err = cudaStreamEndCapture(s, &graph);
  if (queued != P3DC_OK) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    return queued;
  }
  if (err == cudaSuccess) err = cudaGraphGetNodes(graph, nullptr, nodes);
  if (err == cudaSuccess) err = cudaGraphInstantiate(&exec, graph, 0);
  if (err == cudaSuccess) err = cudaGraphLaunch(exec, s);
  if (exec != nullptr) cudaGraphExecDestroy(exec);
  if (graph != nullptr) cudaGraphDestroy(graph);
  return err;
}

extern "C" P3dcResult p3d_call_beside_global_capture(P3dcCudaStream capturing,
                                                     P3dCaptureQueue queue,
                                                     void *user_data,
                                                     P3dcCudaStream stream) {
  cudaStream_t c = static_cast<cudaStream_t>(capturing);
  cudaGraph_t graph = nullptr;
  cudaError_t err = cudaStreamBeginCapture(c, cudaStreamCaptureModeGlobal);
  if (err != cudaSuccess) return err;
  const P3dcResult queued = queue(user_data, stream);
  err = cudaStreamEndCapture(c, &graph);
  if (graph != nullptr) cudaGraphDestroy(graph);
  // an invalidated capture leaves its error for the next call too
  if (err != cudaSuccess) cudaGetLastError();
  return queued != P3DC_OK ? queued : err;
}
