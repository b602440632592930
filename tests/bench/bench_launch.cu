// The floor under every single-call figure of docs/performance.md: what a
// call of K kernels that do nothing costs, timed the way p3dbench.c times
// the elements (an event on the idle stream, the launches, an event, a
// wait; the median over many calls after a warm-up), so that the host's
// launch calls after the first event count, as they do for the elements.
// Launched four ways: plain stream launches, programmatic dependent
// launches after the first (cuda/launch.cuh), one CUDA graph of the K
// kernels (voxelize's way), and that graph with every kernel's parameters
// set again before each launch (what a call whose buffers change does).  Then
// the floor of the other way to chain a stage's steps, one kernel whose
// blocks wait for each other between steps: a one-kernel graph whose blocks
// meet at B grid barriers (a counter and a generation word, as a
// cooperative grid sync), or, on sm_90, one thread-block cluster meeting at
// B cluster barriers (the hardware's).  Then the host's cost of the device
// queries a stateless entry point makes on each call (pillarfeat's).
//
//   bench_launch [RUNS]        (default 2000, at least 100)
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda/atomic>
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

// Every block of the grid waits here for every other (the grid must be
// resident at once): thread 0 of each takes a ticket; the last one resets
// the counter and moves the generation on, which the others wait for.  The
// block's barrier and the ticket's release order the block's work before
// the generation moves; the generation's acquire orders the work after.
__device__ void grid_barrier(unsigned *count, unsigned *generation) {
  __syncthreads();
  if (threadIdx.x == 0) {
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> ticket(*count);
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> turn(*generation);
    const unsigned now = turn.load(cuda::memory_order_relaxed);
    if (ticket.fetch_add(1u, cuda::memory_order_acq_rel) == gridDim.x - 1) {
      ticket.store(0u, cuda::memory_order_relaxed);
      turn.store(now + 1u, cuda::memory_order_release);
    } else {
      while (turn.load(cuda::memory_order_acquire) == now) {
      }
    }
  }
  __syncthreads();
}

// What the barriers are checked by: each block counts itself in
// arrivals[b] before barrier b and, where @check, reads it after.  A call
// adds the grid to each word, so a barrier that let a block through early
// shows as a word that is not a multiple of the grid (counted in *errors).
__device__ void arrive(unsigned *arrivals, unsigned b) {
  if (threadIdx.x == 0) atomicAdd(&arrivals[b], 1u);
}

__device__ void check_arrivals(unsigned *arrivals, unsigned b, bool check,
                               unsigned *errors) {
  if (check && threadIdx.x == 0 && atomicAdd(&arrivals[b], 0u) % gridDim.x != 0)
    atomicAdd(errors, 1u);
}

// A kernel of @barriers steps that do nothing, its blocks meeting at a grid
// barrier after each.
__global__ void barrier_kernel(unsigned barriers, unsigned *count,
                               unsigned *generation, unsigned *arrivals,
                               bool check, unsigned *errors) {
  for (unsigned b = 0; b < barriers; b++) {
    arrive(arrivals, b);
    grid_barrier(count, generation);
    check_arrivals(arrivals, b, check, errors);
  }
}

// The same in a grid of one cluster, at the cluster's barrier (sm_90 on).
__global__ void cluster_kernel(unsigned barriers, unsigned *arrivals,
                               bool check, unsigned *errors) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cooperative_groups::cluster_group cluster =
      cooperative_groups::this_cluster();
  for (unsigned b = 0; b < barriers; b++) {
    arrive(arrivals, b);
    cluster.sync();
    check_arrivals(arrivals, b, check, errors);
  }
#else
  if (threadIdx.x == 0) atomicAdd(errors, 1u);
#endif
}

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

// One kernel of @barriers steps: @blocks blocks meeting at grid barriers
// or, where @cluster, one cluster of @blocks at cluster barriers.
constexpr unsigned kBarrierThreads = 256;

cudaError_t launch_barriers(bool cluster, unsigned blocks, unsigned barriers,
                            unsigned *words, bool check, cudaStream_t stream) {
  // words: count, generation, errors, then an arrival word a barrier
  unsigned *count = words, *generation = words + 1, *errors = words + 2;
  unsigned *arrivals = words + 3;
  cudaLaunchConfig_t config = {};
  cudaLaunchAttribute attribute;
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(kBarrierThreads);
  config.stream = stream;
  if (cluster) {
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = blocks;
    attribute.val.clusterDim.y = 1;
    attribute.val.clusterDim.z = 1;
    config.attrs = &attribute;
    config.numAttrs = 1;
    return cudaLaunchKernelEx(&config, cluster_kernel, barriers, arrivals,
                              check, errors);
  }
  return cudaLaunchKernelEx(&config, barrier_kernel, barriers, count,
                            generation, arrivals, check, errors);
}

// Whether @blocks blocks (one cluster of them where @cluster) can be
// resident at once.
bool resident(bool cluster, unsigned blocks, int multiprocessors, int major) {
  if (cluster) {
    if (major < 9) return false;
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attribute;
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = blocks;
    attribute.val.clusterDim.y = 1;
    attribute.val.clusterDim.z = 1;
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(kBarrierThreads);
    config.attrs = &attribute;
    config.numAttrs = 1;
    int clusters = 0;
    return cudaOccupancyMaxActiveClusters(&clusters, cluster_kernel, &config) ==
               cudaSuccess &&
           clusters >= 1;
  }
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, barrier_kernel,
                                                      kBarrierThreads, 0));
  return blocks <= (unsigned)(per_sm * multiprocessors);
}

// A call of the one-kernel graph, timed as time_calls times the others;
// then one call more that checks every barrier (exits on a fault).
Stats time_barrier_calls(bool cluster, unsigned blocks, unsigned barriers,
                         int runs, cudaStream_t stream) {
  const unsigned kMaxBarriers = 8;
  unsigned *words = nullptr;
  CHECK(cudaMalloc(&words, (3 + kMaxBarriers) * sizeof(unsigned)));
  CHECK(cudaMemset(words, 0, (3 + kMaxBarriers) * sizeof(unsigned)));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  CHECK(launch_barriers(cluster, blocks, barriers, words, false, stream));
  CHECK(cudaStreamEndCapture(stream, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::vector<double> times;
  const int warmup = 100;
  for (int i = 0; i < warmup + runs; i++) {
    CHECK(cudaEventRecord(start, stream));
    CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (i >= warmup) times.push_back(ms * 1000.0);
  }
  CHECK(launch_barriers(cluster, blocks, barriers, words, true, stream));
  CHECK(cudaStreamSynchronize(stream));
  unsigned errors = 0;
  CHECK(cudaMemcpy(&errors, words + 2, sizeof errors, cudaMemcpyDeviceToHost));
  if (errors != 0) {
    std::fprintf(stderr, "%u blocks passed a %s barrier early\n", errors,
                 cluster ? "cluster" : "grid");
    std::exit(1);
  }
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaFree(words));
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

  // 16 blocks of 256 threads; a block an SM; four an SM (the most of a
  // 256-thread kernel of 64 registers); eight (a full SM); one cluster
  // of 8 (the portable size) and of 16 (sm_90's largest)
  struct Grid {
    bool cluster;
    unsigned blocks;
  };
  const Grid barrier_grids[] = {{false, 16u},
                                {false, (unsigned)multiprocessors},
                                {false, 4u * (unsigned)multiprocessors},
                                {false, 8u * (unsigned)multiprocessors},
                                {true, 8u},
                                {true, 16u}};
  if (prop.major >= 9)
    CHECK(cudaFuncSetAttribute(
        cluster_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  std::printf(
      "\none kernel (a one-kernel graph) of %u-thread blocks whose blocks "
      "meet at barriers, median (p10-p90) us:\n\n| barriers |",
      kBarrierThreads);
  for (const Grid &g : barrier_grids)
    std::printf(" %s %u |", g.cluster ? "one cluster of" : "grid of", g.blocks);
  std::printf("\n| ---: |");
  for (size_t i = 0; i < sizeof barrier_grids / sizeof barrier_grids[0]; i++)
    std::printf(" ---: |");
  std::printf("\n");
  for (unsigned barriers : {0u, 1u, 2u, 4u}) {
    std::printf("| %u |", barriers);
    for (const Grid &g : barrier_grids) {
      if (!resident(g.cluster, g.blocks, multiprocessors, prop.major)) {
        std::printf(" - |");
        continue;
      }
      const Stats s =
          time_barrier_calls(g.cluster, g.blocks, barriers, runs, stream);
      std::printf(" %.1f (%.1f-%.1f) |", s.median, s.p10, s.p90);
    }
    std::printf("\n");
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
