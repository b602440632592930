// A fixed sequence of kernel launches as one CUDA graph, described once.
//
// Why: timed as a call is timed (docs/performance.md, "The floor of a
// call"), each plain launch after the first costs the host 3 to 3.5 us
// while the device waits, and a graph launches all its kernels for about
// the price of one.  Where a call's few kernels do little work, that is
// most of the call.
//
// How: the code that queues a call's kernels does so through a
// P3dcLauncher, and does not know which of three things the launcher does
// with each launch:
//  - on a stream: launches it there (p3dc_launch), as it would without a
//    graph; for calls queued inside a caller's stream capture, and for the
//    configurations that have no graph;
//  - building: adds it to a graph as a kernel node behind the one before,
//    the edge programmatic where the launch is a programmatic dependent
//    (launch.cuh) and the graph takes such edges;
//  - setting: patches the next node of the built graph's executable form
//    with the launch's arguments, where they differ from those the node
//    holds (a host-side patch: launches already queued keep theirs).
// p3dc_kernel_graph_run() chooses among them for a call.
// The same function describes the launches in all three, so the graph and
// the plain path cannot drift apart.  A graph is built for one
// configuration, one sequence of kernels: the caller keeps one graph per
// sequence its calls can take, and a setting launcher refuses a sequence
// other than the one built.
//
// A node is set again where its launch's grid, block, shared memory or
// arguments differ from what it holds; the arguments are compared by their
// bytes.  Padding inside a structure argument compares too: where it
// differs (a structure that was not zero-initialized), the node is set
// again, needlessly but correctly.
#ifndef P3DC_KERNEL_GRAPH_CUH
#define P3DC_KERNEL_GRAPH_CUH

#include <cuda_runtime.h>
#include <string.h>

#include <tuple>
#include <utility>

#include "launch.cuh"

// The most kernels in a P3dcKernelGraph, and the most bytes of arguments
// one of its kernels takes.
constexpr unsigned kP3dcGraphKernels = 8;
constexpr size_t kP3dcGraphArgBytes = 256;
// What a node holds, packed: its grid, block and shared memory, then its
// arguments.
constexpr size_t kP3dcGraphShapeBytes = 7 * sizeof(unsigned);
constexpr size_t kP3dcGraphHeldBytes =
    kP3dcGraphShapeBytes + kP3dcGraphArgBytes;

struct P3dcKernelGraph {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  unsigned kernels;
  cudaGraphNode_t nodes[kP3dcGraphKernels];
  void *functions[kP3dcGraphKernels];
  // each node's launch as it holds it, packed; held_bytes[k] 0: not known
  // (the next setting launcher sets node k)
  unsigned char held[kP3dcGraphKernels][kP3dcGraphHeldBytes];
  size_t held_bytes[kP3dcGraphKernels];
  // a build failed with both kinds of edges (p3dc_kernel_graph_run): calls
  // launch their kernels one by one
  bool build_failed;
  // nodes set again since the build, for the tests: a call whose buffers
  // change sets only the nodes whose arguments hold them
  unsigned long node_sets;
};

class P3dcLauncher {
 public:
  static P3dcLauncher on_stream(cudaStream_t stream) {
    return P3dcLauncher(kStream, stream, nullptr, false);
  }
  // @graph: its cudaGraph_t created and empty; programmatic: whether
  // dependent launches get programmatic edges
  static P3dcLauncher building(P3dcKernelGraph *graph, bool programmatic) {
    return P3dcLauncher(kBuild, nullptr, graph, programmatic);
  }
  static P3dcLauncher setting(P3dcKernelGraph *graph) {
    return P3dcLauncher(kSet, nullptr, graph, false);
  }

  // The stream of an on_stream launcher, for the work that is queued on it
  // directly (a library's device-wide call); NULL for the others, whose
  // callers must not reach such work.
  cudaStream_t stream() const { return mode_ == kStream ? stream_ : nullptr; }
  bool on_stream() const { return mode_ == kStream; }
  // The kernels launched through this launcher so far.
  unsigned launched() const { return next_; }

  // Launches, adds or sets @kernel on @grid x @block (a number of blocks
  // and threads converts) with @shared_bytes of dynamic shared memory and
  // @args, as a programmatic dependent of the kernel before it where
  // @dependent.
  template <typename... Params, typename... Args>
  cudaError_t launch(void (*kernel)(Params...), dim3 grid, dim3 block,
                     size_t shared_bytes, bool dependent, Args... args) {
    if (mode_ == kStream)
      return p3dc_launch(kernel, grid, block, shared_bytes, stream_, dependent,
                         args...);
    static_assert((sizeof(Params) + ... + 0) <= kP3dcGraphArgBytes,
                  "a graph kernel's arguments fit kP3dcGraphArgBytes");
    // the values converted to the kernel's parameter types, as a launch
    // converts them; the node copies them when it is added or set
    const std::tuple<Params...> values(args...);
    void *pointers[sizeof...(Params) + 1];
    unsigned char packed[kP3dcGraphHeldBytes];
    const unsigned shape[7] = {grid.x,
                               grid.y,
                               grid.z,
                               block.x,
                               block.y,
                               block.z,
                               (unsigned)shared_bytes};
    memcpy(packed, shape, kP3dcGraphShapeBytes);
    const size_t bytes = kP3dcGraphShapeBytes +
                         pack(values, pointers, packed + kP3dcGraphShapeBytes,
                              std::index_sequence_for<Params...>());
    cudaKernelNodeParams node = {};
    node.func = reinterpret_cast<void *>(kernel);
    node.gridDim = grid;
    node.blockDim = block;
    node.sharedMemBytes = (unsigned)shared_bytes;
    node.kernelParams = pointers;
    return mode_ == kBuild ? add(node, packed, bytes, dependent)
                           : set(node, packed, bytes);
  }

 private:
  enum Mode { kStream, kBuild, kSet };

  P3dcLauncher(Mode mode, cudaStream_t stream, P3dcKernelGraph *graph,
               bool programmatic)
      : mode_(mode),
        stream_(stream),
        graph_(graph),
        programmatic_(programmatic),
        next_(0) {}

  // @values' addresses in @pointers and their bytes one after the other in
  // @packed; returns the bytes.
  template <typename Tuple, size_t... I>
  static size_t pack(const Tuple &values, void **pointers,
                     unsigned char *packed, std::index_sequence<I...>) {
    size_t at = 0;
    ((pointers[I] =
          const_cast<void *>(static_cast<const void *>(&std::get<I>(values))),
      memcpy(packed + at, &std::get<I>(values), sizeof(std::get<I>(values))),
      at += sizeof(std::get<I>(values))),
     ...);
    return at;
  }

  void hold(unsigned k, const unsigned char *packed, size_t bytes) {
    memcpy(graph_->held[k], packed, bytes);
    graph_->held_bytes[k] = bytes;
  }

  cudaError_t add(const cudaKernelNodeParams &node, const unsigned char *packed,
                  size_t bytes, bool dependent) {
    if (next_ >= kP3dcGraphKernels) return cudaErrorInvalidValue;
    const unsigned k = next_;
    cudaError_t err = cudaGraphAddKernelNode(&graph_->nodes[k], graph_->graph,
                                             nullptr, 0, &node);
    if (err == cudaSuccess && k > 0) {
      cudaGraphEdgeData edge;
      memset(&edge, 0, sizeof edge);
      edge.from_port = cudaGraphKernelNodePortProgrammatic;
      edge.type = cudaGraphDependencyTypeProgrammatic;
      err = cudaGraphAddDependencies(
          graph_->graph, &graph_->nodes[k - 1], &graph_->nodes[k],
          dependent && programmatic_ ? &edge : nullptr, 1);
    }
    if (err != cudaSuccess) return err;
    graph_->functions[k] = node.func;
    hold(k, packed, bytes);
    graph_->kernels = ++next_;
    return cudaSuccess;
  }

  cudaError_t set(const cudaKernelNodeParams &node, const unsigned char *packed,
                  size_t bytes) {
    // another sequence than the one built: the caller chose the wrong graph
    if (next_ >= graph_->kernels || graph_->functions[next_] != node.func)
      return cudaErrorInvalidValue;
    const unsigned k = next_++;
    if (graph_->held_bytes[k] == bytes &&
        memcmp(graph_->held[k], packed, bytes) == 0)
      return cudaSuccess;
    graph_->held_bytes[k] = 0;  // not known until the patch succeeds
    const cudaError_t err =
        cudaGraphExecKernelNodeSetParams(graph_->exec, graph_->nodes[k], &node);
    if (err == cudaSuccess) {
      hold(k, packed, bytes);
      graph_->node_sets++;
    }
    return err;
  }

  Mode mode_;
  cudaStream_t stream_;
  P3dcKernelGraph *graph_;
  bool programmatic_;
  unsigned next_;
};

// Whether work queued on @stream now goes into a capture (the caller's
// graph), where a call launches its kernels plainly; also true where the
// query fails, whose error the plain launches then meet and return.
static inline bool p3dc_stream_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
    cudaGetLastError();
    return true;
  }
  return capture != cudaStreamCaptureStatusNone;
}

static inline void p3dc_kernel_graph_destroy(P3dcKernelGraph *g) {
  if (g->exec != nullptr) cudaGraphExecDestroy(g->exec);
  if (g->graph != nullptr) cudaGraphDestroy(g->graph);
  memset(g, 0, sizeof *g);
}

// Builds @g (zeroed or destroyed) from what @queue (a callable taking a
// P3dcLauncher &) launches, with programmatic edges where @programmatic,
// and instantiates it.  On failure @g is left destroyed, and the error is
// returned, not left behind for a later cudaGetLastError().
//
// The build may come in the middle of a caller's work (nms and pillarfeat
// build at their first call), while another thread captures a stream in
// the global mode (PyTorch's default): there cudaGraphInstantiate is an
// unsafe call, which would fail and invalidate that thread's capture.  The
// build touches no stream, so this thread builds in the relaxed mode,
// which allows it, and then returns to the mode it was in.
template <typename Queue>
static cudaError_t p3dc_kernel_graph_build(P3dcKernelGraph *g,
                                           bool programmatic, Queue queue) {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaError_t err = cudaThreadExchangeStreamCaptureMode(&mode);
  const bool exchanged = err == cudaSuccess;
  if (err == cudaSuccess) err = cudaGraphCreate(&g->graph, 0);
  if (err == cudaSuccess) {
    P3dcLauncher build = P3dcLauncher::building(g, programmatic);
    err = queue(build);
  }
  if (err == cudaSuccess && g->kernels == 0) err = cudaErrorInvalidValue;
  if (err == cudaSuccess) err = cudaGraphInstantiate(&g->exec, g->graph, 0);
  if (exchanged) {
    const cudaError_t restored = cudaThreadExchangeStreamCaptureMode(&mode);
    if (err == cudaSuccess) err = restored;
  }
  if (err != cudaSuccess) {
    cudaGetLastError();
    p3dc_kernel_graph_destroy(g);
  }
  return err;
}

// Sets the nodes of @g whose arguments changed from what @queue launches
// (the same sequence @g was built from) and launches @g on @stream.
template <typename Queue>
static cudaError_t p3dc_kernel_graph_launch(P3dcKernelGraph *g, Queue queue,
                                            cudaStream_t stream) {
  P3dcLauncher set = P3dcLauncher::setting(g);
  cudaError_t err = queue(set);
  if (err == cudaSuccess && set.launched() != g->kernels)
    err = cudaErrorInvalidValue;
  if (err == cudaSuccess) err = cudaGraphLaunch(g->exec, stream);
  if (err != cudaSuccess) cudaGetLastError();
  return err;
}

// Builds @g with programmatic edges where @programmatic, and with plain
// ones where that build fails (a driver that takes no programmatic edge in
// a graph); *@programmatic_edges (may be NULL) says which @g got.
template <typename Queue>
static cudaError_t p3dc_kernel_graph_build_best(P3dcKernelGraph *g,
                                                bool programmatic, Queue queue,
                                                bool *programmatic_edges) {
  const bool with =
      programmatic && p3dc_kernel_graph_build(g, true, queue) == cudaSuccess;
  if (programmatic_edges != nullptr) *programmatic_edges = with;
  return with ? cudaSuccess : p3dc_kernel_graph_build(g, false, queue);
}

// A call's launches, as @queue describes them: one by one on @stream while
// the caller captures it (they go into the caller's graph), else as @g,
// with the nodes whose launches changed set again.  A @g not built yet is
// built first (p3dc_kernel_graph_build_best with @programmatic); where
// that fails, this call and the later ones launch one by one.
template <typename Queue>
static cudaError_t p3dc_kernel_graph_run(P3dcKernelGraph *g, bool programmatic,
                                         Queue queue, cudaStream_t stream) {
  if (!g->build_failed && !p3dc_stream_capturing(stream)) {
    if (g->exec == nullptr &&
        p3dc_kernel_graph_build_best(g, programmatic, queue, nullptr) !=
            cudaSuccess)
      g->build_failed = true;
    if (g->exec != nullptr) return p3dc_kernel_graph_launch(g, queue, stream);
  }
  P3dcLauncher l = P3dcLauncher::on_stream(stream);
  return queue(l);
}

#endif  // P3DC_KERNEL_GRAPH_CUH
