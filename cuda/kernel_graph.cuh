// A fixed sequence of kernel launches as one CUDA graph, described once.
//
// Why: timed as a call is timed (docs/performance.md, "The floor of a
// call"), each plain launch after the first costs the host 3 to 3.5 us
// while the device waits, and a graph launches all its kernels for about
// the price of one.  Where a call's few kernels do little work, that is
// most of the call.
//
// How: the code that queues a call's kernels does so through a
// P3dcLauncher, and does not know which of four things the launcher does
// with each launch:
//  - on a stream: launches it there (p3dc_launch), as it would without a
//    graph; for calls queued inside a caller's stream capture, and for the
//    configurations that have no graph;
//  - building: adds it to a graph as a kernel node behind the one before,
//    the edge programmatic where the launch is a programmatic dependent
//    (launch.cuh) and the graph takes such edges;
//  - matching: compares the launch with what each executable form of the
//    built graph holds in the next node (below), and launches nothing;
//  - setting: patches the next node of one executable form of the built
//    graph with the launch's arguments, where they differ from those the
//    node holds (a host-side patch: launches already queued keep theirs).
// p3dc_kernel_graph_run() chooses among them for a call.
// The same function describes the launches in all four, so the graph and
// the plain path cannot drift apart.  A graph is built for one
// configuration, one sequence of kernels: the caller keeps one graph per
// sequence its calls can take, and a matching or setting launcher refuses
// a sequence other than the one built.
//
// A node is set again where its launch's grid, block, shared memory or
// arguments differ from what it holds; the arguments are compared by their
// bytes.  Padding inside a structure argument compares too: where it
// differs (a structure that was not zero-initialized), the node is set
// again, needlessly but correctly.
//
// A graph keeps up to kP3dcGraphExecs executable forms (max_forms, where
// its owner sets it), each holding the launches of other calls: a call
// whose launches one of them holds, every node, launches it as it is;
// another sets the nodes of a form no call has launched yet, else of a
// new one while there are fewer, else of the one launched longest ago.
// Why: an element's pool hands out a few buffers in turn, so that its
// calls' buffers change every frame and come back every few; setting a
// node costs the host 0.3 to 1 us a call while the device waits
// (docs/performance.md).  The forms are separate executable graphs, so
// they do not order calls on different streams behind each other: the
// owners' calls serve one stream at a time, or are ordered by events.
#ifndef P3DC_KERNEL_GRAPH_CUH
#define P3DC_KERNEL_GRAPH_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include <tuple>
#include <utility>

#include "launch.cuh"

// The most kernels in a P3dcKernelGraph (nms's bev-aligned and circle calls
// in workspaces that sort by chunks take ten), and the most bytes of
// arguments one of its kernels takes.
constexpr unsigned kP3dcGraphKernels = 10;
// Executable forms a graph keeps at most: the buffers a pool hands out in
// turn.
constexpr unsigned kP3dcGraphExecs = 4;
static_assert(kP3dcGraphExecs <= 32, "a matching launcher's bits");
constexpr size_t kP3dcGraphArgBytes = 256;
// What a node holds, packed: its grid, block and shared memory, then its
// arguments.
constexpr size_t kP3dcGraphShapeBytes = 7 * sizeof(unsigned);
constexpr size_t kP3dcGraphHeldBytes =
    kP3dcGraphShapeBytes + kP3dcGraphArgBytes;

// Each node's launch as a graph or one of its executable forms holds it,
// packed; bytes[k] 0: not known (the next setting launcher of that form
// sets node k).
struct P3dcGraphHeld {
  unsigned char packed[kP3dcGraphKernels][kP3dcGraphHeldBytes];
  size_t bytes[kP3dcGraphKernels];
};

struct P3dcKernelGraph {
  cudaGraph_t graph;
  unsigned kernels;
  cudaGraphNode_t nodes[kP3dcGraphKernels];
  void *functions[kP3dcGraphKernels];
  // what the graph's nodes were added with, where a new form starts
  P3dcGraphHeld built;
  // the executable forms, made in order, NULL where not made yet (the
  // build makes the first); the launch count at each one's last launch, 0
  // where none yet
  cudaGraphExec_t execs[kP3dcGraphExecs];
  P3dcGraphHeld held[kP3dcGraphExecs];
  uint64_t last_launch[kP3dcGraphExecs];
  uint64_t launches;
  // the most forms (1 to kP3dcGraphExecs; 0: kP3dcGraphExecs), which the
  // owner sets where its calls' launches seldom come back (voxelize's hold
  // the frame's point count); kept by p3dc_kernel_graph_destroy
  unsigned max_forms;
  // making a form failed: the made ones serve from then on (kept by
  // p3dc_kernel_graph_destroy)
  bool form_failed;
  // a build failed with both kinds of edges (p3dc_kernel_graph_run): calls
  // launch their kernels one by one
  bool build_failed;
  // nodes set again since the build, for the tests: a call whose buffers
  // change sets only the nodes whose arguments hold them, and only where no
  // form holds all its launches
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
  // @graph built
  static P3dcLauncher matching(P3dcKernelGraph *graph) {
    return P3dcLauncher(kMatch, nullptr, graph, false);
  }
  // @form: one of @graph's executable forms, made
  static P3dcLauncher setting(P3dcKernelGraph *graph, unsigned form) {
    P3dcLauncher l(kSet, nullptr, graph, false);
    l.form_ = form;
    return l;
  }

  // The stream of an on_stream launcher, for the work that is queued on it
  // directly (a library's device-wide call); NULL for the others, whose
  // callers must not reach such work.
  cudaStream_t stream() const { return mode_ == kStream ? stream_ : nullptr; }
  bool on_stream() const { return mode_ == kStream; }
  // The kernels launched through this launcher so far.
  unsigned launched() const { return next_; }
  // A matching launcher's: an executable form that holds every launch so
  // far, or kP3dcGraphExecs.
  unsigned matched_form() const {
    for (unsigned f = 0; f < kP3dcGraphExecs; f++)
      if ((matches_ >> f) & 1u) return f;
    return kP3dcGraphExecs;
  }

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
    if (mode_ == kBuild) return add(node, packed, bytes, dependent);
    return mode_ == kMatch ? match(node, packed, bytes)
                           : set(node, packed, bytes);
  }

 private:
  enum Mode { kStream, kBuild, kMatch, kSet };

  P3dcLauncher(Mode mode, cudaStream_t stream, P3dcKernelGraph *graph,
               bool programmatic)
      : mode_(mode),
        stream_(stream),
        graph_(graph),
        programmatic_(programmatic),
        next_(0),
        form_(0),
        matches_(0) {
    for (unsigned f = 0; graph != nullptr && f < kP3dcGraphExecs; f++)
      if (graph->execs[f] != nullptr) matches_ |= 1u << f;
  }

  static bool holds(const P3dcGraphHeld &held, unsigned k,
                    const unsigned char *packed, size_t bytes) {
    return held.bytes[k] == bytes && memcmp(held.packed[k], packed, bytes) == 0;
  }

  static void hold(P3dcGraphHeld *held, unsigned k, const unsigned char *packed,
                   size_t bytes) {
    memcpy(held->packed[k], packed, bytes);
    held->bytes[k] = bytes;
  }

  // The kernel of the next node is @func: the sequence is the one built.
  bool next_is(const void *func) const {
    return next_ < graph_->kernels && graph_->functions[next_] == func;
  }

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
    hold(&graph_->built, k, packed, bytes);
    graph_->kernels = ++next_;
    return cudaSuccess;
  }

  cudaError_t match(const cudaKernelNodeParams &node,
                    const unsigned char *packed, size_t bytes) {
    // another sequence than the one built: the caller chose the wrong graph
    if (!next_is(node.func)) return cudaErrorInvalidValue;
    const unsigned k = next_++;
    for (unsigned f = 0; f < kP3dcGraphExecs; f++)
      if (((matches_ >> f) & 1u) && !holds(graph_->held[f], k, packed, bytes))
        matches_ &= ~(1u << f);
    return cudaSuccess;
  }

  cudaError_t set(const cudaKernelNodeParams &node, const unsigned char *packed,
                  size_t bytes) {
    if (!next_is(node.func)) return cudaErrorInvalidValue;
    const unsigned k = next_++;
    P3dcGraphHeld *held = &graph_->held[form_];
    if (holds(*held, k, packed, bytes)) return cudaSuccess;
    held->bytes[k] = 0;  // not known until the patch succeeds
    const cudaError_t err = cudaGraphExecKernelNodeSetParams(
        graph_->execs[form_], graph_->nodes[k], &node);
    if (err == cudaSuccess) {
      hold(held, k, packed, bytes);
      graph_->node_sets++;
    }
    return err;
  }

  Mode mode_;
  cudaStream_t stream_;
  P3dcKernelGraph *graph_;
  bool programmatic_;
  unsigned next_;
  // a setting launcher's executable form
  unsigned form_;
  // a matching launcher's: bit f set while form f holds every launch
  unsigned matches_;
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
  for (cudaGraphExec_t exec : g->execs)
    if (exec != nullptr) cudaGraphExecDestroy(exec);
  if (g->graph != nullptr) cudaGraphDestroy(g->graph);
  const unsigned max_forms = g->max_forms;
  const bool form_failed = g->form_failed;
  memset(g, 0, sizeof *g);
  g->max_forms = max_forms;
  g->form_failed = form_failed;
}

// Whether @g is built (its graph and first executable form made).
static inline bool p3dc_kernel_graph_built(const P3dcKernelGraph *g) {
  return g->execs[0] != nullptr;
}

// Runs @work (a callable returning a cudaError_t) in this thread's relaxed
// stream capture mode, then returns to the mode the thread was in.  A
// graph's build and its executable forms come in the middle of a caller's
// work (nms and pillarfeat build at their first call, and a form is made
// at the call that first needs it), maybe while another thread captures a
// stream in the global mode (PyTorch's default): there
// cudaGraphInstantiate is an unsafe call, which would fail and invalidate
// that thread's capture.  The work touches no stream, and the relaxed mode
// allows it.
template <typename Work>
static cudaError_t p3dc_kernel_graph_relaxed(Work work) {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaError_t err = cudaThreadExchangeStreamCaptureMode(&mode);
  const bool exchanged = err == cudaSuccess;
  if (err == cudaSuccess) err = work();
  if (exchanged) {
    const cudaError_t restored = cudaThreadExchangeStreamCaptureMode(&mode);
    if (err == cudaSuccess) err = restored;
  }
  return err;
}

// Makes executable form @form of @g's graph, holding the launches the
// graph was built with.
static inline cudaError_t p3dc_kernel_graph_make_form(P3dcKernelGraph *g,
                                                      unsigned form) {
  const cudaError_t err = p3dc_kernel_graph_relaxed(
      [g, form] { return cudaGraphInstantiate(&g->execs[form], g->graph, 0); });
  if (err == cudaSuccess) {
    g->held[form] = g->built;
    g->last_launch[form] = 0;
  } else {
    // made, where only the capture mode's return failed; the error
    // returned is that one, whatever the destruction says
    if (g->execs[form] != nullptr) (void)cudaGraphExecDestroy(g->execs[form]);
    g->execs[form] = nullptr;
  }
  return err;
}

// Builds @g (zeroed or destroyed) from what @queue (a callable taking a
// P3dcLauncher &) launches, with programmatic edges where @programmatic,
// and makes its first executable form.  On failure @g is left destroyed,
// and the error is returned, not left behind for a later
// cudaGetLastError().
template <typename Queue>
static cudaError_t p3dc_kernel_graph_build(P3dcKernelGraph *g,
                                           bool programmatic, Queue queue) {
  cudaError_t err = p3dc_kernel_graph_relaxed([g, programmatic, &queue] {
    cudaError_t built = cudaGraphCreate(&g->graph, 0);
    if (built == cudaSuccess) {
      P3dcLauncher build = P3dcLauncher::building(g, programmatic);
      built = queue(build);
    }
    if (built == cudaSuccess && g->kernels == 0) built = cudaErrorInvalidValue;
    return built;
  });
  if (err == cudaSuccess) err = p3dc_kernel_graph_make_form(g, 0);
  if (err != cudaSuccess) {
    cudaGetLastError();
    p3dc_kernel_graph_destroy(g);
  }
  return err;
}

// The executable form of @g that a call none holds sets: a made one no
// call has launched (the build's, where its owner built it with
// placeholder launches), else a new one while there are fewer than
// max_forms, else (or where making one fails) the one launched longest
// ago.
static inline unsigned p3dc_kernel_graph_form_to_set(P3dcKernelGraph *g) {
  const unsigned most = g->max_forms >= 1 && g->max_forms < kP3dcGraphExecs
                            ? g->max_forms
                            : kP3dcGraphExecs;
  unsigned oldest = 0;
  for (unsigned f = 0; f < most; f++) {
    if (g->execs[f] == nullptr) {
      if (!g->form_failed) {
        if (p3dc_kernel_graph_make_form(g, f) == cudaSuccess) return f;
        cudaGetLastError();
        g->form_failed = true;
      }
      break;
    }
    if (g->last_launch[f] == 0) return f;
    if (g->last_launch[f] < g->last_launch[oldest]) oldest = f;
  }
  return oldest;
}

// Launches on @stream the executable form of @g that holds what @queue
// launches (the same sequence @g was built from), or, where none does,
// one whose nodes it sets first (p3dc_kernel_graph_form_to_set).
template <typename Queue>
static cudaError_t p3dc_kernel_graph_launch(P3dcKernelGraph *g, Queue queue,
                                            cudaStream_t stream) {
  P3dcLauncher match = P3dcLauncher::matching(g);
  cudaError_t err = queue(match);
  if (err == cudaSuccess && match.launched() != g->kernels)
    err = cudaErrorInvalidValue;
  unsigned form = err == cudaSuccess ? match.matched_form() : 0;
  if (err == cudaSuccess && form == kP3dcGraphExecs) {
    form = p3dc_kernel_graph_form_to_set(g);
    P3dcLauncher set = P3dcLauncher::setting(g, form);
    err = queue(set);
    if (err == cudaSuccess && set.launched() != g->kernels)
      err = cudaErrorInvalidValue;
  }
  if (err == cudaSuccess) {
    g->last_launch[form] = ++g->launches;
    err = cudaGraphLaunch(g->execs[form], stream);
  }
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
// the caller captures it (they go into the caller's graph), else as the
// form of @g that holds them, or one whose nodes are set first
// (p3dc_kernel_graph_launch).  A @g not built yet is
// built first (p3dc_kernel_graph_build_best with @programmatic); where
// that fails, this call and the later ones launch one by one.
template <typename Queue>
static cudaError_t p3dc_kernel_graph_run(P3dcKernelGraph *g, bool programmatic,
                                         Queue queue, cudaStream_t stream) {
  if (!g->build_failed && !p3dc_stream_capturing(stream)) {
    if (!p3dc_kernel_graph_built(g) &&
        p3dc_kernel_graph_build_best(g, programmatic, queue, nullptr) !=
            cudaSuccess)
      g->build_failed = true;
    if (p3dc_kernel_graph_built(g))
      return p3dc_kernel_graph_launch(g, queue, stream);
  }
  P3dcLauncher l = P3dcLauncher::on_stream(stream);
  return queue(l);
}

#endif  // P3DC_KERNEL_GRAPH_CUH
