// The floor under every single-call figure of docs/performance.md: what a
// call of K kernels that do nothing costs, timed the way p3dbench.c times
// the elements (an event on the idle stream, the launches, an event, a
// wait; the median over many calls after a warm-up), so that the host's
// launch calls after the first event count, as they do for the elements.
// Launched four ways: plain stream launches, programmatic dependent
// launches after the first (cuda/launch.cuh), one CUDA graph of the K
// kernels (voxelize's way), and that graph with every kernel's parameters
// set again before each launch (what a call whose buffers change does).  Then
// the host's cost of the device queries a stateless entry point makes on each
// call (pillarfeat's).
//
//   bench_launch [RUNS]        (default 2000, at least 100)
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "launch.cuh"

namespace {

#define CHECK(call)                                                      \
  do {                                                                   \
    const cudaError_t check_err = (call);                                \
    if (check_err != cudaSuccess) {                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorString(check_err));                       \
      std::exit(1);                                                      \
    }                                                                    \
  } while (0)

// Does nothing, but the compiler cannot know: a block never has 2^30
// threads.
__global__ void idle_kernel(int *sink) {
  if (sink != nullptr && threadIdx.x == 1u << 30) *sink = 1;
}

// The same after the wait a programmatic dependent kernel makes.
__global__ void chained_kernel(int *sink) {
  p3dc_wait_for_previous_kernel();
  p3dc_allow_next_kernel();
  if (sink != nullptr && threadIdx.x == 1u << 30) *sink = 1;
}

constexpr unsigned kThreads = 128;

enum Way { kPlain, kChained, kGraph, kGraphSet };
const char *const kWayNames[] = {"plain launches", "chained (programmatic)",
                                 "one CUDA graph",
                                 "the graph, parameters set each call"};

// The library's own launch helper (cuda/launch.cuh), as its callers use it.
void launch(bool chained, unsigned blocks, cudaStream_t stream) {
  int *sink = nullptr;
  void *args[] = {&sink};
  cudaKernelNodeParams node = {};
  node.func = reinterpret_cast<void *>(chained ? chained_kernel : idle_kernel);
  node.gridDim = dim3(blocks);
  node.blockDim = dim3(kThreads);
  node.kernelParams = args;
  CHECK(p3dc_launch_node(&node, stream, chained));
}

// The graph of @kernels launches; its kernel nodes in @nodes.
cudaGraphExec_t build_graph(int kernels, unsigned blocks, cudaStream_t stream,
                            cudaGraph_t *graph,
                            std::vector<cudaGraphNode_t> *nodes) {
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int k = 0; k < kernels; k++) launch(false, blocks, stream);
  CHECK(cudaStreamEndCapture(stream, graph));
  CHECK(cudaGraphInstantiate(&exec, *graph, 0));
  size_t count = 0;
  CHECK(cudaGraphGetNodes(*graph, nullptr, &count));
  nodes->resize(count);
  CHECK(cudaGraphGetNodes(*graph, nodes->data(), &count));
  return exec;
}

// What a call with new buffers does before it launches: every kernel
// node's parameter set again, to @sink.
void set_parameters(cudaGraphExec_t exec,
                    const std::vector<cudaGraphNode_t> &nodes, int *sink) {
  void *args[] = {&sink};
  for (cudaGraphNode_t node : nodes) {
    cudaKernelNodeParams params;
    CHECK(cudaGraphKernelNodeGetParams(node, &params));
    params.kernelParams = args;
    params.extra = nullptr;
    CHECK(cudaGraphExecKernelNodeSetParams(exec, node, &params));
  }
}

struct Stats {
  double median, p10, p90;
};

Stats summarize(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  const size_t n = times.size();
  return {times[n / 2], times[n / 10], times[n * 9 / 10]};
}

Stats time_calls(Way way, int kernels, unsigned blocks, int runs,
                 cudaStream_t stream) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  cudaGraphExec_t exec = nullptr;
  cudaGraph_t graph = nullptr;
  std::vector<cudaGraphNode_t> nodes;
  // two buffers the calls alternate between (the kernels never write them)
  int *sinks = nullptr;
  CHECK(cudaMalloc(&sinks, 2 * sizeof(int)));
  if (way == kGraph || way == kGraphSet)
    exec = build_graph(kernels, blocks, stream, &graph, &nodes);
  std::vector<double> times;
  const int warmup = 100;
  for (int i = 0; i < warmup + runs; i++) {
    CHECK(cudaEventRecord(start, stream));
    if (way == kGraphSet) set_parameters(exec, nodes, sinks + i % 2);
    if (way == kGraph || way == kGraphSet)
      CHECK(cudaGraphLaunch(exec, stream));
    else
      for (int k = 0; k < kernels; k++)
        launch(way == kChained && k > 0, blocks, stream);
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (i >= warmup) times.push_back(ms * 1000.0);
  }
  if (exec != nullptr) CHECK(cudaGraphExecDestroy(exec));
  if (graph != nullptr) CHECK(cudaGraphDestroy(graph));
  CHECK(cudaFree(sinks));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  return summarize(times);
}

template <typename Func>
double host_median_us(Func func, int runs) {
  std::vector<double> times;
  for (int i = 0; i < runs; i++) {
    const auto begin = std::chrono::steady_clock::now();
    func();
    const auto end = std::chrono::steady_clock::now();
    times.push_back(
        std::chrono::duration<double, std::micro>(end - begin).count());
  }
  return summarize(times).median;
}

}  // namespace

int main(int argc, char **argv) {
  const int runs = argc > 1 ? std::max(100, std::atoi(argv[1])) : 2000;
  int device = 0, multiprocessors = 0;
  cudaDeviceProp prop;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaGetDeviceProperties(&prop, device));
  multiprocessors = prop.multiProcessorCount;
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  std::printf("device: %s (sm_%d%d, %d SMs); %d calls each\n\n", prop.name,
              prop.major, prop.minor, multiprocessors, runs);
  std::printf("| kernels a call | blocks a kernel | %s | %s | %s | %s |\n",
              kWayNames[kPlain], kWayNames[kChained], kWayNames[kGraph],
              kWayNames[kGraphSet]);
  std::printf("| ---: | ---: | ---: | ---: | ---: | ---: |\n");
  // one block, and 8 blocks of 128 threads an SM (a full grid)
  const unsigned grids[] = {1u, 8u * (unsigned)multiprocessors};
  for (int kernels : {1, 2, 3, 5}) {
    for (unsigned blocks : grids) {
      std::printf("| %d | %u |", kernels, blocks);
      for (Way way : {kPlain, kChained, kGraph, kGraphSet}) {
        const Stats s = time_calls(way, kernels, blocks, runs, stream);
        std::printf(" %.1f (%.1f-%.1f) |", s.median, s.p10, s.p90);
      }
      std::printf("\n");
    }
  }

  int attribute = 0, per_sm = 0;
  const double attribute_us = host_median_us(
      [&] {
        CHECK(cudaGetDevice(&device));
        CHECK(cudaDeviceGetAttribute(&attribute, cudaDevAttrMultiProcessorCount,
                                     device));
      },
      runs);
  const double occupancy_us = host_median_us(
      [&] {
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, idle_kernel, 256, 0));
      },
      runs);
  std::printf(
      "\nhost, median us a call: cudaGetDevice and cudaDeviceGetAttribute "
      "%.2f; cudaOccupancyMaxActiveBlocksPerMultiprocessor %.2f\n",
      attribute_us, occupancy_us);
  CHECK(cudaStreamDestroy(stream));
  return 0;
}
