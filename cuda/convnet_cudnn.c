/* The layer graph's CUDA path: convolutions on cuDNN 9 (loaded at run time,
 * see cudnn_loader.h), every other kind on a kernel of our own
 * (convnet.cu).
 *
 * Creation does everything that allocates or synchronizes: it copies the
 * description, converts the weights to cuDNN's filter layout and the
 * storage type, allocates every buffer, one scratch tensor and one
 * workspace, and plans each convolution once:
 *  - the algorithm: the first deterministic one that fits the workspace in
 *    the ranking of cuDNN's heuristics (cudnnGetConvolutionForwardAlgorithm
 *    _v7), a function of the device model, cuDNN's version and the layer
 *    alone.  Not the fastest of a timed search (cudnnFind...): the timings
 *    vary from run to run, two algorithms round differently, and the same
 *    frame then gave different bits in two runs or on two GPUs of one
 *    machine;
 *  - a fused plan when the layer is a convolution that writes its whole
 *    output buffer (and whose residual, if any, is a whole buffer):
 *    cudnnConvolutionBiasActivationForward (bias, the residual as its z
 *    input, and ReLU in the convolution's epilogue), kept only when a trial
 *    call succeeds;
 *  - otherwise cudnnConvolutionForward into the scratch tensor, then our
 *    epilogue kernel (bias, residual, ReLU, the store into a channel slice:
 *    the neck's concatenation).  A transposed convolution with kernel ==
 *    stride is a 1x1 convolution to stride_y x stride_x x out channels,
 *    whose epilogue scatters each pixel's block (no atomics, so
 *    deterministic).
 * A convolution that reads a channel slice of a buffer (not the whole of
 * it) first copies the slice into an input of its own with our slice
 * kernel: cuDNN's tensor-core kernels want packed tensors.  Grouped
 * convolutions run as cuDNN groups, except in F16 when a group's channels
 * are not a multiple of 8 (the storage pads whole tensors, not groups):
 * there the filter is the dense block-diagonal one, zeros between groups;
 * and except in F16 when the groups have at most 8 outputs (a merged
 * detection head's final layers): cuDNN runs those a launch per group on a
 * kernel without tensor cores, so they run on a tensor-core kernel of our
 * own (convnet_grouped.cu) where the device has mma (sm_80 and later).
 * Last, creation runs the net once with plain launches (so that every
 * kernel is loaded before capture) and captures it into a CUDA graph on a
 * stream of its own: one launch per run instead of a call per layer,
 * whose host cost (tens of microseconds each) otherwise leaves the GPU
 * idle between layers.  The graph reads only the net's own buffers, so a
 * run first converts (or copies) the caller's input into buffer 0 with a
 * launch outside the graph, then launches the graph.  When capture fails,
 * runs fall back to plain launches and p3dc_convnet_cuda_launch_mode() says
 * why.
 *
 * F16 storage is NHWC (tensor cores, CUDNN_TENSOR_OP_MATH, F32
 * accumulation) with every tensor's channels padded to a multiple of 8,
 * the granule of cuDNN's tensor-core kernels, except an input image's, to
 * 4 (the padding channels hold zeros: their weights and biases are zero,
 * and our kernels never write them); F32 storage is NCHW, unpadded, with
 * CUDNN_FMA_MATH, so that no TF32 rounding enters the float path.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "convnet.h"
#include "convnet-private.h"
#include "cudnn_loader.h"
#include "half.h"

/* The F16 input's stored channels when it has this many or fewer: see
 * buffer_stored_channels (). */
#define IMAGE_STORED_CHANNELS 4u

/* The most workspace a layer's algorithm may use. */
#define SEARCH_WORKSPACE_BYTES ((size_t) 256 << 20)

typedef struct
{
  /* every kind: its geometry */
  P3dcConvGeometry geometry;
  /* kinds other than the convolutions: the kernel's arguments */
  P3dcConvKernel kernel;
  /* convolutions */
  cudnnTensorDescriptor_t x, y, bias_storage_desc, bias_float_desc;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  cudnnConvolutionFwdAlgo_t algo;
  size_t workspace;
  /* 0: convolution + epilogue kernel; 1: fused, bias in the storage type;
   * 2: fused, bias in F32 */
  int fused;
  int fused_residual;           /* the fused call adds buffer input2 */
  int grouped;                  /* cuDNN groups (else one dense filter) */
  void *weight;                 /* device, cuDNN filter layout */
  void *bias_storage;           /* device, [K] in the storage type */
  float *bias_float;            /* device, [out] F32 */
  /* the input slice's own copy, or NULL: the convolution reads the whole
   * input buffer */
  void *input_copy;
  P3dcConvKernel copy;
  uint32_t in_stored;           /* channels of the convolution's input */
  /* the convolution's own output: K channels of height x width */
  uint32_t conv_channels, conv_height, conv_width;
  /* the layer's output channels as stored (padded in F16) */
  uint32_t out_stored;
  /* our grouped kernel's arguments, when it runs the layer (own_grouped) */
  int own_grouped;
  P3dcConvGrouped own;
  void *own_weight;             /* device, the kernel's fragments */
} Step;

struct P3dcConvNet
{
  const P3dcCudnn *api;
  cudnnHandle_t handle;
  cudnnActivationDescriptor_t relu, identity;
  int half;                     /* F16 NHWC storage, else F32 NCHW */
  uint32_t batch;
  uint32_t n_buffers, n_layers;
  P3dcConvBufferDesc *buffers;
  P3dcConvLayer *layers;        /* weight and bias pointers cleared */
  uint32_t *channels;           /* stored channels of each buffer */
  void **storage;               /* device, one per buffer */
  Step *steps;
  void *scratch;
  void *workspace;
  size_t workspace_bytes;
  cudaGraphExec_t graph;        /* the whole net, or NULL: plain launches */
  char launch_mode[256];        /* how runs launch, and why */
};

static int
is_conv (P3dcConvKind kind)
{
  return kind == P3DC_CONV_2D || kind == P3DC_CONV_TRANSPOSED_2D;
}

static size_t
element_size (const P3dcConvNet * net)
{
  return net->half ? 2 : 4;
}

/* Channels as stored: a multiple of 8 in F16 (NHWC, tensor cores). */
static uint32_t
stored_channels (const P3dcConvNet * net, uint32_t channels)
{
  return net->half ? (channels + P3DC_CONVNET_CHANNEL_GRANULE - 1) /
      P3DC_CONVNET_CHANNEL_GRANULE * P3DC_CONVNET_CHANNEL_GRANULE : channels;
}

/* Channels as buffer @b stores them: in F16 an input of 4 channels or
 * fewer (an image) at 4, the width cuDNN's kernels for a network's first
 * layer read (BEVDet's ResNet-50 stem, 7x7 stride 2 on 3 channels: about
 * 140 us stored as 8 channels, 60 as 4; H200, docs/performance.md); the
 * others as stored_channels (). */
static uint32_t
buffer_stored_channels (const P3dcConvNet * net, uint32_t b, uint32_t channels)
{
  if (net->half && b == 0 && channels <= IMAGE_STORED_CHANNELS)
    return IMAGE_STORED_CHANNELS;
  return stored_channels (net, channels);
}

static cudnnDataType_t
storage_type (const P3dcConvNet * net)
{
  return net->half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
}

static cudnnTensorFormat_t
storage_format (const P3dcConvNet * net)
{
  return net->half ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
}

/* Channels [@offset, ...) of a packed tensor in the net's layout, of
 * @stored channels per pixel and @height x @width. */
static P3dcConvTensor
tensor_at (const P3dcConvNet * net, const void *data, uint32_t stored,
    uint32_t height, uint32_t width, uint32_t offset)
{
  P3dcConvTensor t;

  if (net->half) {
    t.channel = 1;
    t.column = stored;
    t.row = (size_t) width *stored;
  } else {
    t.column = 1;
    t.row = width;
    t.channel = (size_t) height *width;
  }
  t.batch = (size_t) stored *height * width;
  t.data = (const char *) data + offset * t.channel * element_size (net);
  return t;
}

/* Channels [@offset, ...) of buffer @b. */
static P3dcConvTensor
buffer_tensor (const P3dcConvNet * net, uint32_t b, uint32_t offset)
{
  return tensor_at (net, net->storage[b], net->channels[b],
      net->buffers[b].height, net->buffers[b].width, offset);
}

static void
set_message (char *message, size_t message_len, const char *format, ...)
{
  va_list args;

  if (message == NULL || message_len == 0)
    return;
  va_start (args, format);
  vsnprintf (message, message_len, format, args);
  va_end (args);
}

/* Checks inside creation: on failure, the message names the call. */
#define CUDNN_TRY(call) do { \
    cudnnStatus_t status_ = (call); \
    if (status_ != CUDNN_STATUS_SUCCESS) { \
      set_message (message, message_len, "%s failed: %s", #call, \
          net->api->cudnnGetErrorString (status_)); \
      result = P3DC_ERROR_CUDNN; \
      goto fail; \
    } \
  } while (0)
#define CUDA_TRY(call) do { \
    cudaError_t error_ = (call); \
    if (error_ != cudaSuccess) { \
      set_message (message, message_len, "%s failed: %s", #call, \
          cudaGetErrorString (error_)); \
      result = (P3dcResult) error_; \
      goto fail; \
    } \
  } while (0)

P3dcResult
p3dc_convnet_cuda_available (char *message, size_t message_len)
{
  return p3dc_cudnn_load (NULL, message, message_len);
}

/* The weights of @layer in cuDNN's filter layout, as floats, zero for the
 * padding channels: a convolution [out][in][ky][kx] (NCHW) or
 * [out][ky][kx][in] (NHWC), over @in_filter input channels per filter (the
 * group's with cuDNN groups, else all @in_stored of the input, zero
 * outside the filter's group); a transposed one as a 1x1 convolution,
 * filter q = (ky * sx + kx) * out_stored + o over input channel i (the same
 * memory in both layouts). */
static float *
filter_layout (const P3dcConvLayer * layer, const P3dcConvGeometry * g,
    int nhwc, int grouped, uint32_t in_stored, uint32_t out_stored,
    size_t *count)
{
  const uint32_t kh = g->kernel[0], kw = g->kernel[1];
  const uint32_t in = layer->in_channels, out = layer->out_channels;
  const uint32_t in_per_group = in / g->groups;
  const uint32_t out_per_group = out / g->groups;
  uint32_t in_filter = grouped ? in_per_group : in_stored;
  float *w;
  uint32_t o, i, ky, kx;

  if (layer->kind == P3DC_CONV_TRANSPOSED_2D)
    in_filter = in_stored;
  *count = (size_t) out_stored *in_filter * kh * kw;
  w = calloc (*count, sizeof (float));
  if (w == NULL)
    return NULL;
  for (o = 0; o < out; o++) {
    uint32_t first_in = o / out_per_group * in_per_group;

    for (i = 0; i < (layer->kind == P3DC_CONV_TRANSPOSED_2D ? in :
            in_per_group); i++) {
      for (ky = 0; ky < kh; ky++) {
        for (kx = 0; kx < kw; kx++) {
          size_t to;
          float v;

          if (layer->kind == P3DC_CONV_TRANSPOSED_2D) {
            v = layer->weight[(((size_t) i * out + o) * kh + ky) * kw + kx];
            to = ((size_t) (ky * kw + kx) * out_stored + o) * in_filter + i;
          } else {
            /* the channel this tap reads, counted in the filter */
            uint32_t c = grouped ? i : first_in + i;

            v = layer->weight[(((size_t) o * in_per_group + i) * kh + ky) *
                kw + kx];
            to = nhwc ? (((size_t) o * kh + ky) * kw + kx) * in_filter + c
                : (((size_t) o * in_filter + c) * kh + ky) * kw + kx;
          }
          w[to] = v;
        }
      }
    }
  }
  return w;
}

/* Uploads @count floats as the storage type. */
static P3dcResult
upload (const float *values, size_t count, int as_half, void **device)
{
  size_t bytes = count * (as_half ? 2 : 4);
  uint16_t *halves = NULL;
  const void *src = values;
  cudaError_t error;
  size_t i;

  if (as_half) {
    halves = malloc (count * sizeof (uint16_t));
    if (halves == NULL)
      return P3DC_ERROR_OUT_OF_MEMORY;
    for (i = 0; i < count; i++)
      halves[i] = p3dc_float_to_half (values[i]);
    src = halves;
  }
  error = cudaMalloc (device, bytes);
  if (error == cudaSuccess)
    error = cudaMemcpy (*device, src, bytes, cudaMemcpyHostToDevice);
  free (halves);
  return error;
}

static const char *
algo_name (cudnnConvolutionFwdAlgo_t algo)
{
  switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "implicit-gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "implicit-precomp-gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "direct";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "fft";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "fft-tiling";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "winograd";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "winograd-nonfused";
    default:
      return "unknown";
  }
}

/* The device pointer a convolution reads: always the net's own, so that a
 * captured graph stays valid from frame to frame. */
static const void *
conv_input (const P3dcConvNet * net, uint32_t l)
{
  const Step *step = &net->steps[l];

  return step->input_copy != NULL ? step->input_copy :
      net->storage[net->layers[l].input];
}

/* The end of an unfused convolution @l: bias, residual, ReLU, and the
 * store into its slice. */
static void
epilogue_args (const P3dcConvNet * net, uint32_t l, P3dcConvEpilogue * ep)
{
  const P3dcConvLayer *layer = &net->layers[l];
  const Step *step = &net->steps[l];
  const P3dcConvBufferDesc *out = &net->buffers[layer->output];
  P3dcConvEpilogue e;

  memset (&e, 0, sizeof e);
  e.src = net->scratch;
  e.batch = net->batch;
  e.src_channels = step->conv_channels;
  e.src_group = step->out_stored;
  e.src_height = step->conv_height;
  e.src_width = step->conv_width;
  e.out_channels = layer->out_channels;
  e.out_height = out->height;
  e.out_width = out->width;
  if (layer->kind == P3DC_CONV_TRANSPOSED_2D) {
    e.shuffle_y = step->geometry.stride[0];
    e.shuffle_x = step->geometry.stride[1];
  } else {
    e.shuffle_y = e.shuffle_x = 1;
  }
  e.bias = step->bias_float;
  e.relu = layer->relu;
  e.half = net->half;
  e.nhwc = net->half;
  e.dst = buffer_tensor (net, layer->output, layer->output_channel_offset);
  if (layer->kind == P3DC_CONV_2D && layer->residual)
    e.residual = buffer_tensor (net, layer->input2,
        layer->input2_channel_offset);
  *ep = e;
}

static P3dcResult
run_epilogue (const P3dcConvNet * net, uint32_t l, P3dcCudaStream stream)
{
  P3dcConvEpilogue e;

  epilogue_args (net, l, &e);
  return p3dc_convnet_epilogue (&e, stream);
}

/* Queues convolution @l with its plan (and, at creation, tries a fused
 * plan). */
static cudnnStatus_t
run_conv (const P3dcConvNet * net, uint32_t l, int fused,
    cudnnConvolutionFwdAlgo_t algo, void *workspace, size_t workspace_bytes)
{
  const P3dcConvLayer *layer = &net->layers[l];
  const Step *step = &net->steps[l];
  const float one = 1.0f, zero = 0.0f;

  if (fused) {
    void *y = net->storage[layer->output];
    const void *z = step->fused_residual ? net->storage[layer->input2] : y;

    return net->api->cudnnConvolutionBiasActivationForward (net->handle,
        &one, step->x, conv_input (net, l), step->w, step->weight,
        step->conv, algo, workspace, workspace_bytes,
        step->fused_residual ? &one : &zero, step->y, z,
        fused == 1 ? step->bias_storage_desc : step->bias_float_desc,
        fused == 1 ? step->bias_storage : (const void *) step->bias_float,
        layer->relu ? net->relu : net->identity, step->y, y);
  }
  return net->api->cudnnConvolutionForward (net->handle, &one, step->x,
      conv_input (net, l), step->w, step->weight, step->conv, algo,
      workspace, workspace_bytes, &zero, step->y, net->scratch);
}

/* The first deterministic algorithm cuDNN supports here, in the order of
 * @perf (the heuristics' ranking), that fits the workspace. */
static int
pick_algorithm (const cudnnConvolutionFwdAlgoPerf_t * perf, int count,
    cudnnMathType_t math, cudnnConvolutionFwdAlgo_t * algo, size_t *memory)
{
  int pass, i;

  /* First an algorithm with the math we asked for, then any: cuDNN runs
   * with the descriptor's math type whatever the result reports. */
  for (pass = 0; pass < 2; pass++) {
    for (i = 0; i < count; i++) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS
          || perf[i].determinism != CUDNN_DETERMINISTIC
          || perf[i].memory > SEARCH_WORKSPACE_BYTES)
        continue;
      if (pass == 0 && perf[i].mathType != math)
        continue;
      *algo = perf[i].algo;
      *memory = perf[i].memory;
      return 1;
    }
  }
  return 0;
}

static int
algorithm_deterministic (const cudnnConvolutionFwdAlgoPerf_t * perf,
    int count, cudnnConvolutionFwdAlgo_t algo)
{
  int i;

  for (i = 0; i < count; i++)
    if (perf[i].algo == algo)
      return perf[i].status == CUDNN_STATUS_SUCCESS
          && perf[i].determinism == CUDNN_DETERMINISTIC;
  return 0;
}

/* Frees what planning a convolution made (descriptors, weights, the input
 * copy), so that it may be planned again or the net freed. */
static void
step_clear (const P3dcConvNet * net, Step * step)
{
  if (step->x != NULL)
    net->api->cudnnDestroyTensorDescriptor (step->x);
  if (step->y != NULL)
    net->api->cudnnDestroyTensorDescriptor (step->y);
  if (step->bias_storage_desc != NULL)
    net->api->cudnnDestroyTensorDescriptor (step->bias_storage_desc);
  if (step->bias_float_desc != NULL)
    net->api->cudnnDestroyTensorDescriptor (step->bias_float_desc);
  if (step->w != NULL)
    net->api->cudnnDestroyFilterDescriptor (step->w);
  if (step->conv != NULL)
    net->api->cudnnDestroyConvolutionDescriptor (step->conv);
  cudaFree (step->weight);
  cudaFree (step->bias_storage);
  cudaFree (step->bias_float);
  cudaFree (step->input_copy);
  cudaFree (step->own_weight);
  step->own_weight = NULL;
  step->own_grouped = 0;
  step->x = step->y = step->bias_storage_desc = step->bias_float_desc = NULL;
  step->w = NULL;
  step->conv = NULL;
  step->weight = step->bias_storage = step->input_copy = NULL;
  step->bias_float = NULL;
}

/* The arguments of our kernel for a layer of another kind than the
 * convolutions. */
static void
plan_kernel (P3dcConvNet * net, const P3dcConvLayer * layer, Step * step)
{
  const P3dcConvBufferDesc *in = &net->buffers[layer->input];
  const P3dcConvBufferDesc *out = &net->buffers[layer->output];
  P3dcConvKernel *k = &step->kernel;

  memset (k, 0, sizeof *k);
  k->kind = layer->kind;
  k->batch = net->batch;
  k->channels = layer->out_channels;
  k->in_height = in->height;
  k->in_width = in->width;
  k->out_height = out->height;
  k->out_width = out->width;
  k->in = buffer_tensor (net, layer->input, layer->input_channel_offset);
  k->out = buffer_tensor (net, layer->output, layer->output_channel_offset);
  if (layer->kind == P3DC_LAYER_ADD)
    k->in2 = buffer_tensor (net, layer->input2, layer->input2_channel_offset);
  k->geometry = step->geometry;
  k->align_corners = layer->align_corners;
  k->relu = layer->relu;
  k->half = net->half;
  k->channels_fastest = net->half;
}

/* Descriptors, weights and the plan of convolution @l, with cuDNN's
 * groups when @grouped; @search is a workspace of SEARCH_WORKSPACE_BYTES,
 * @stream the handle's.  P3DC_ERROR_UNSUPPORTED when cuDNN has no
 * deterministic algorithm for it. */
static P3dcResult
plan_conv (P3dcConvNet * net, const P3dcConvLayer * layer, uint32_t l,
    int grouped, void *search, cudaStream_t stream, char *message,
    size_t message_len)
{
  Step *step = &net->steps[l];
  const P3dcConvGeometry *g = &step->geometry;
  const P3dcConvBufferDesc *in = &net->buffers[layer->input];
  const P3dcConvBufferDesc *out = &net->buffers[layer->output];
  const int transposed = layer->kind == P3DC_CONV_TRANSPOSED_2D;
  const int residual = layer->kind == P3DC_CONV_2D && layer->residual;
  const uint32_t kh = transposed ? 1 : g->kernel[0];
  const uint32_t kw = transposed ? 1 : g->kernel[1];
  const cudnnMathType_t math = net->half ? CUDNN_TENSOR_OP_MATH :
      CUDNN_FMA_MATH;
  cudnnConvolutionFwdAlgoPerf_t *perf = NULL;
  int n_algos = 0, returned = 0, dim[4], a, bias_type;
  float *filter = NULL, *bias_k = NULL;
  size_t count, memory = 0;
  P3dcResult result = P3DC_OK;
  cudnnConvolutionFwdAlgo_t candidates[2];
  int n_candidates = 0;

  step->out_stored = stored_channels (net, layer->out_channels);
  step->conv_channels = transposed ? step->out_stored * g->stride[0] *
      g->stride[1] : step->out_stored;
  step->conv_height = transposed ? in->height : out->height;
  step->conv_width = transposed ? in->width : out->width;

  /* a slice of the input buffer: a packed copy of its own */
  if (layer->input_channel_offset != 0 || layer->in_channels != in->channels) {
    size_t bytes;

    step->in_stored = stored_channels (net, layer->in_channels);
    bytes = (size_t) net->batch * step->in_stored * in->height * in->width *
        element_size (net);
    CUDA_TRY (cudaMalloc (&step->input_copy, bytes));
    /* the padding channels stay zero: the copy never writes them */
    CUDA_TRY (cudaMemsetAsync (step->input_copy, 0, bytes, stream));
    memset (&step->copy, 0, sizeof step->copy);
    step->copy.kind = P3DC_LAYER_SLICE;
    step->copy.batch = net->batch;
    step->copy.channels = layer->in_channels;
    step->copy.in_height = step->copy.out_height = in->height;
    step->copy.in_width = step->copy.out_width = in->width;
    step->copy.in = buffer_tensor (net, layer->input,
        layer->input_channel_offset);
    step->copy.out = tensor_at (net, step->input_copy, step->in_stored,
        in->height, in->width, 0);
    step->copy.half = net->half;
    step->copy.channels_fastest = net->half;
  } else {
    step->in_stored = net->channels[layer->input];
  }
  step->grouped = grouped;

  CUDNN_TRY (net->api->cudnnCreateTensorDescriptor (&step->x));
  CUDNN_TRY (net->api->cudnnCreateTensorDescriptor (&step->y));
  CUDNN_TRY (net->api->cudnnCreateTensorDescriptor (&step->bias_storage_desc));
  CUDNN_TRY (net->api->cudnnCreateTensorDescriptor (&step->bias_float_desc));
  CUDNN_TRY (net->api->cudnnCreateFilterDescriptor (&step->w));
  CUDNN_TRY (net->api->cudnnCreateConvolutionDescriptor (&step->conv));
  CUDNN_TRY (net->api->cudnnSetTensor4dDescriptor (step->x,
          storage_format (net), storage_type (net), (int) net->batch,
          (int) step->in_stored, (int) in->height, (int) in->width));
  CUDNN_TRY (net->api->cudnnSetTensor4dDescriptor (step->y,
          storage_format (net), storage_type (net), (int) net->batch,
          (int) step->conv_channels, (int) step->conv_height,
          (int) step->conv_width));
  CUDNN_TRY (net->api->cudnnSetTensor4dDescriptor (step->bias_storage_desc,
          storage_format (net), storage_type (net), 1,
          (int) step->conv_channels, 1, 1));
  CUDNN_TRY (net->api->cudnnSetTensor4dDescriptor (step->bias_float_desc,
          storage_format (net), CUDNN_DATA_FLOAT, 1,
          (int) step->conv_channels, 1, 1));
  CUDNN_TRY (net->api->cudnnSetFilter4dDescriptor (step->w,
          storage_type (net), storage_format (net),
          (int) step->conv_channels, (int) (step->grouped ?
              step->in_stored / g->groups : step->in_stored), (int) kh,
          (int) kw));
  CUDNN_TRY (net->api->cudnnSetConvolution2dDescriptor (step->conv,
          transposed ? 0 : (int) g->padding[0],
          transposed ? 0 : (int) g->padding[1],
          transposed ? 1 : (int) g->stride[0],
          transposed ? 1 : (int) g->stride[1],
          transposed ? 1 : (int) g->dilation[0],
          transposed ? 1 : (int) g->dilation[1],
          CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  CUDNN_TRY (net->api->cudnnSetConvolutionMathType (step->conv, math));
  if (step->grouped)
    CUDNN_TRY (net->api->cudnnSetConvolutionGroupCount (step->conv,
            (int) g->groups));
  CUDNN_TRY (net->api->cudnnGetConvolution2dForwardOutputDim (step->conv,
          step->x, step->w, &dim[0], &dim[1], &dim[2], &dim[3]));
  if (dim[0] != (int) net->batch || dim[1] != (int) step->conv_channels
      || dim[2] != (int) step->conv_height
      || dim[3] != (int) step->conv_width) {
    set_message (message, message_len, "layer %u: cuDNN computes a "
        "%dx%dx%dx%d output, the description %ux%ux%ux%u", l, dim[0],
        dim[1], dim[2], dim[3], net->batch, step->conv_channels,
        step->conv_height, step->conv_width);
    result = P3DC_ERROR_INVALID_ARGUMENT;
    goto fail;
  }

  filter = filter_layout (layer, g, net->half, step->grouped,
      step->in_stored, step->out_stored, &count);
  bias_k = malloc (step->conv_channels * sizeof (float));
  if (filter == NULL || bias_k == NULL) {
    result = P3DC_ERROR_OUT_OF_MEMORY;
    goto fail;
  }
  memset (bias_k, 0, step->conv_channels * sizeof (float));
  memcpy (bias_k, layer->bias, layer->out_channels * sizeof (float));
  result = upload (filter, count, net->half, &step->weight);
  if (result == P3DC_OK)
    result = upload (bias_k, step->conv_channels, net->half,
        &step->bias_storage);
  if (result == P3DC_OK)
    result = upload (bias_k, step->conv_channels, 0,
        (void **) &step->bias_float);
  if (result != P3DC_OK) {
    set_message (message, message_len, "layer %u: weight upload failed: %s",
        l, p3dc_result_string (result));
    goto fail;
  }

  CUDNN_TRY (net->api->cudnnGetConvolutionForwardAlgorithmMaxCount
      (net->handle, &n_algos));
  perf = calloc (n_algos > 0 ? n_algos : 1, sizeof *perf);
  if (perf == NULL) {
    result = P3DC_ERROR_OUT_OF_MEMORY;
    goto fail;
  }
  CUDNN_TRY (net->api->cudnnGetConvolutionForwardAlgorithm_v7 (net->handle,
          step->x, step->w, step->conv, step->y, n_algos, &returned, perf));
  if (!pick_algorithm (perf, returned, math, &step->algo, &memory)) {
    set_message (message, message_len, "layer %u: cuDNN has no "
        "deterministic algorithm for this convolution", l);
    result = P3DC_ERROR_UNSUPPORTED;
    goto fail;
  }
  step->workspace = memory;
  step->fused = 0;

  /* The fused call, when the layer writes its whole output buffer (and
   * its residual is a whole buffer of the output's shape): the chosen
   * algorithm, and implicit-precomp-gemm, the one that cuDNN documents for
   * the identity activation. */
  step->fused_residual = residual;
  if (!transposed && layer->output_channel_offset == 0
      && layer->out_channels == out->channels && (!residual
          || (layer->input2_channel_offset == 0
              && net->buffers[layer->input2].channels ==
              layer->out_channels))) {
    if (layer->relu)
      candidates[n_candidates++] = step->algo;
    if (step->algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM
        && algorithm_deterministic (perf, returned,
            CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM))
      candidates[n_candidates++] =
          CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    if (!layer->relu && step->algo ==
        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
      candidates[n_candidates++] = step->algo;
  }
  for (a = 0; a < n_candidates && !step->fused; a++) {
    size_t need = 0;

    if (net->api->cudnnGetConvolutionForwardWorkspaceSize (net->handle,
            step->x, step->w, step->conv, step->y, candidates[a],
            &need) != CUDNN_STATUS_SUCCESS || need > SEARCH_WORKSPACE_BYTES)
      continue;
    for (bias_type = 1; bias_type <= 2 && !step->fused; bias_type++) {
      if (run_conv (net, l, bias_type, candidates[a], search,
              SEARCH_WORKSPACE_BYTES) == CUDNN_STATUS_SUCCESS) {
        step->fused = bias_type;
        step->algo = candidates[a];
        step->workspace = need;
      }
    }
  }
  if (!step->fused)
    step->fused_residual = 0;
  /* A failed trial may leave an error behind for the next call. */
  cudaGetLastError ();

fail:
  free (perf);
  free (filter);
  free (bias_k);
  return result;
}

/* Plans convolution @l on our grouped kernel (F16, P3dcConvGrouped): its
 * fragments and F32 bias uploaded, its arguments set. */
static P3dcResult
plan_own_grouped (P3dcConvNet * net, const P3dcConvLayer * layer, uint32_t l)
{
  Step *step = &net->steps[l];
  const P3dcConvGeometry *g = &step->geometry;
  const P3dcConvBufferDesc *in = &net->buffers[layer->input];
  const P3dcConvBufferDesc *out = &net->buffers[layer->output];
  const uint32_t taps = g->kernel[0] * g->kernel[1];
  const uint32_t group_in = layer->in_channels / g->groups;
  size_t words = p3dc_convnet_grouped_weight_words (g->groups, group_in, taps);
  uint32_t *host = malloc (words * sizeof (uint32_t));
  cudaError_t error;
  P3dcResult result;

  if (host == NULL)
    return P3DC_ERROR_OUT_OF_MEMORY;
  result = p3dc_convnet_grouped_prepare ();
  if (result != P3DC_OK) {
    free (host);
    return result;
  }
  p3dc_convnet_grouped_weights (layer->weight, g->groups, group_in,
      layer->out_channels / g->groups, taps, host);
  error = cudaMalloc (&step->own_weight, words * sizeof (uint32_t));
  if (error == cudaSuccess)
    error = cudaMemcpy (step->own_weight, host, words * sizeof (uint32_t),
        cudaMemcpyHostToDevice);
  free (host);
  if (error != cudaSuccess)
    return (P3dcResult) error;
  result = upload (layer->bias, layer->out_channels, 0,
      (void **) &step->bias_float);
  if (result != P3DC_OK)
    return result;
  memset (&step->own, 0, sizeof step->own);
  step->own.in = buffer_tensor (net, layer->input, layer->input_channel_offset);
  step->own.out = buffer_tensor (net, layer->output,
      layer->output_channel_offset);
  step->own.batch = net->batch;
  step->own.in_height = in->height;
  step->own.in_width = in->width;
  step->own.out_height = out->height;
  step->own.out_width = out->width;
  step->own.groups = g->groups;
  step->own.group_in = group_in;
  step->own.group_out = layer->out_channels / g->groups;
  step->own.kernel_y = g->kernel[0];
  step->own.kernel_x = g->kernel[1];
  step->own.pad_y = g->padding[0];
  step->own.pad_x = g->padding[1];
  step->own.weight = step->own_weight;
  step->own.bias = step->bias_float;
  step->own.relu = layer->relu;
  step->own_grouped = 1;
  step->grouped = 1;
  return P3DC_OK;
}

/* Nonzero when convolution @layer runs on our grouped kernel: F16, a
 * layout the kernel reads (an input offset of whole 16-byte loads), no
 * residual, a device with mma. */
static int
own_grouped_fits (const P3dcConvNet * net, const P3dcConvLayer * layer,
    const P3dcConvGeometry * g)
{
  int device = 0, major = 0;

  if (!net->half || layer->kind != P3DC_CONV_2D || layer->residual
      || layer->input_channel_offset % 8 != 0
      || !p3dc_convnet_grouped_supported (layer->in_channels,
          layer->out_channels, g))
    return 0;
  if (cudaGetDevice (&device) != cudaSuccess
      || cudaDeviceGetAttribute (&major, cudaDevAttrComputeCapabilityMajor,
          device) != cudaSuccess)
    return 0;
  return major >= 8;
}

/* Plans convolution @l: with cuDNN's groups where they can be had (whole
 * groups of stored channels: in F16, group channel counts that are
 * multiples of 8, so that nothing inside a group is padding), else, or
 * when cuDNN has no deterministic grouped algorithm, with the dense
 * block-diagonal filter. */
static P3dcResult
plan_conv_groups (P3dcConvNet * net, const P3dcConvLayer * layer, uint32_t l,
    void *search, cudaStream_t stream, char *message, size_t message_len)
{
  const P3dcConvGeometry *g = &net->steps[l].geometry;
  P3dcResult result;

  if (own_grouped_fits (net, layer, g)) {
    result = plan_own_grouped (net, layer, l);
    if (result != P3DC_OK)
      set_message (message, message_len, "layer %u: the grouped kernel's "
          "plan failed: %s", l, p3dc_result_string (result));
    return result;
  }
  if (g->groups > 1 && (!net->half
          || ((layer->in_channels / g->groups) %
              P3DC_CONVNET_CHANNEL_GRANULE == 0
              && (layer->out_channels / g->groups) %
              P3DC_CONVNET_CHANNEL_GRANULE == 0))) {
    result = plan_conv (net, layer, l, 1, search, stream, message, message_len);
    if (result != P3DC_ERROR_UNSUPPORTED)
      return result;
    step_clear (net, &net->steps[l]);
  }
  result = plan_conv (net, layer, l, 0, search, stream, message, message_len);
  /* no algorithm at all is cuDNN's refusal */
  return result == P3DC_ERROR_UNSUPPORTED ? P3DC_ERROR_CUDNN : result;
}

/* Queues every layer on @stream with plain launches, recording events[1 +
 * l] after layer l when @events is not NULL.  With @set_stream, first
 * points the cuDNN handle at @stream (else it already is: under capture,
 * nothing but the work itself is called). */
static P3dcResult
queue_layers (P3dcConvNet * net, P3dcCudaEvent * events, int set_stream,
    cudaStream_t stream)
{
  P3dcResult result;
  uint32_t l;

  if (set_stream && net->api->cudnnSetStream (net->handle, stream) !=
      CUDNN_STATUS_SUCCESS)
    return P3DC_ERROR_CUDNN;
  for (l = 0; l < net->n_layers; l++) {
    const Step *step = &net->steps[l];

    if (step->own_grouped) {
      result = p3dc_convnet_grouped (&step->own, stream);
      if (result != P3DC_OK)
        return result;
    } else if (is_conv (net->layers[l].kind)) {
      if (step->input_copy != NULL) {
        result = p3dc_convnet_kernel (&step->copy, stream);
        if (result != P3DC_OK)
          return result;
      }
      if (run_conv (net, l, step->fused, step->algo, net->workspace,
              net->workspace_bytes) != CUDNN_STATUS_SUCCESS)
        return P3DC_ERROR_CUDNN;
      if (!step->fused) {
        result = run_epilogue (net, l, stream);
        if (result != P3DC_OK)
          return result;
      }
    } else {
      result = p3dc_convnet_kernel (&step->kernel, stream);
      if (result != P3DC_OK)
        return result;
    }
    if (events != NULL) {
      result = cudaEventRecord (events[1 + l], stream);
      if (result != P3DC_OK)
        return result;
    }
  }
  return P3DC_OK;
}

/* Captures every layer into net->graph on @stream (idle, not the legacy
 * stream, and already the cuDNN handle's stream) and checks one launch of
 * it.  A capture or instantiation that fails leaves net->graph NULL, says
 * why in net->launch_mode and returns P3DC_OK (runs then use plain
 * launches); an error of the launch itself, or of the device, is
 * returned. */
static P3dcResult
capture_graph (P3dcConvNet * net, cudaStream_t stream)
{
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  cudaError_t error;
  P3dcResult queued;

  /* thread-local: cuDNN's calls on this thread that are unsafe under
   * capture fail (and we fall back) instead of corrupting it */
  error = cudaStreamBeginCapture (stream, cudaStreamCaptureModeThreadLocal);
  if (error != cudaSuccess) {
    snprintf (net->launch_mode, sizeof net->launch_mode, "plain launches "
        "(cudaStreamBeginCapture failed: %s)", cudaGetErrorString (error));
    cudaGetLastError ();
    return P3DC_OK;
  }
  queued = queue_layers (net, NULL, 0, stream);
  /* the capture always ends, whatever happened inside it */
  error = cudaStreamEndCapture (stream, &graph);
  if (queued != P3DC_OK || error != cudaSuccess) {
    snprintf (net->launch_mode, sizeof net->launch_mode, "plain launches "
        "(capture failed: queuing the layers gave %s, "
        "cudaStreamEndCapture %s)", p3dc_result_string (queued),
        cudaGetErrorString (error));
    if (graph != NULL)
      cudaGraphDestroy (graph);
    cudaGetLastError ();
    return P3DC_OK;
  }
  error = cudaGraphInstantiate (&exec, graph, 0);
  cudaGraphDestroy (graph);
  if (error != cudaSuccess) {
    snprintf (net->launch_mode, sizeof net->launch_mode, "plain launches "
        "(cudaGraphInstantiate failed: %s)", cudaGetErrorString (error));
    cudaGetLastError ();
    return P3DC_OK;
  }
  error = cudaGraphLaunch (exec, stream);
  if (error == cudaSuccess)
    error = cudaStreamSynchronize (stream);
  if (error != cudaSuccess) {
    snprintf (net->launch_mode, sizeof net->launch_mode, "plain launches "
        "(the graph's trial launch failed: %s)", cudaGetErrorString (error));
    cudaGraphExecDestroy (exec);
    return (P3dcResult) error;
  }
  net->graph = exec;
  snprintf (net->launch_mode, sizeof net->launch_mode, "CUDA graph "
      "(%u layers captured)", net->n_layers);
  return P3DC_OK;
}

P3dcResult
p3dc_convnet_cuda_new (const P3dcConvNetDesc * desc, int half,
    P3dcConvNet ** out_net, char *message, size_t message_len)
{
  P3dcConvNet *net = NULL;
  P3dcResult result;
  const P3dcCudnn *api;
  void *search = NULL;
  cudaStream_t stream = NULL;
  size_t scratch_bytes = 0;
  uint32_t b, l;

  if (message != NULL && message_len > 0)
    message[0] = '\0';
  if (out_net == NULL)
    return P3DC_ERROR_INVALID_ARGUMENT;
  *out_net = NULL;
  result = p3dc_convnet_validate (desc, message, message_len);
  if (result != P3DC_OK)
    return result;
  result = p3dc_cudnn_load (&api, message, message_len);
  if (result != P3DC_OK)
    return result;

  net = calloc (1, sizeof *net);
  if (net == NULL)
    return P3DC_ERROR_OUT_OF_MEMORY;
  net->api = api;
  net->half = half ? 1 : 0;
  net->batch = p3dc_convnet_batch (desc);
  net->n_buffers = desc->n_buffers;
  net->n_layers = desc->n_layers;
  net->buffers = calloc (desc->n_buffers, sizeof *net->buffers);
  net->layers = calloc (desc->n_layers, sizeof *net->layers);
  net->storage = calloc (desc->n_buffers, sizeof *net->storage);
  net->steps = calloc (desc->n_layers, sizeof *net->steps);
  net->channels = calloc (desc->n_buffers, sizeof *net->channels);
  if (net->buffers == NULL || net->layers == NULL || net->storage == NULL
      || net->steps == NULL || net->channels == NULL) {
    result = P3DC_ERROR_OUT_OF_MEMORY;
    goto fail;
  }
  memcpy (net->buffers, desc->buffers, desc->n_buffers * sizeof
      (*net->buffers));

  /* The runtime's context must be current before cuDNN takes it. */
  CUDA_TRY (cudaFree (NULL));
  CUDNN_TRY (api->cudnnCreate (&net->handle));
  CUDA_TRY (cudaStreamCreateWithFlags (&stream, cudaStreamNonBlocking));
  CUDNN_TRY (api->cudnnSetStream (net->handle, stream));
  CUDNN_TRY (api->cudnnCreateActivationDescriptor (&net->relu));
  CUDNN_TRY (api->cudnnSetActivationDescriptor (net->relu,
          CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  CUDNN_TRY (api->cudnnCreateActivationDescriptor (&net->identity));
  CUDNN_TRY (api->cudnnSetActivationDescriptor (net->identity,
          CUDNN_ACTIVATION_IDENTITY, CUDNN_PROPAGATE_NAN, 0.0));

  for (b = 0; b < desc->n_buffers; b++) {
    const P3dcConvBufferDesc *buf = &desc->buffers[b];
    size_t bytes;

    net->channels[b] = buffer_stored_channels (net, b, buf->channels);
    bytes = (size_t) net->batch * net->channels[b] * buf->height *
        buf->width * element_size (net);

    CUDA_TRY (cudaMalloc (&net->storage[b], bytes));
    /* Defined contents for the trial calls, and
     * the padding channels' zeros, which nothing writes again. */
    CUDA_TRY (cudaMemsetAsync (net->storage[b], 0, bytes, stream));
  }
  for (l = 0; l < desc->n_layers; l++) {
    const P3dcConvLayer *layer = &desc->layers[l];
    const P3dcConvBufferDesc *out = &desc->buffers[layer->output];

    net->layers[l] = *layer;
    net->layers[l].weight = NULL;
    net->layers[l].bias = NULL;
    p3dc_convnet_layer_geometry (layer, &net->steps[l].geometry);
    if (is_conv (layer->kind)) {
      /* a transposed layer's 1x1 result has as many elements as its
       * output */
      size_t bytes = (size_t) net->batch *
          stored_channels (net, layer->out_channels) * out->height *
          out->width * element_size (net);

      if (bytes > scratch_bytes)
        scratch_bytes = bytes;
    }
  }
  if (scratch_bytes > 0) {
    CUDA_TRY (cudaMalloc (&net->scratch, scratch_bytes));
    CUDA_TRY (cudaMemsetAsync (net->scratch, 0, scratch_bytes, stream));
  }
  CUDA_TRY (cudaMalloc (&search, SEARCH_WORKSPACE_BYTES));
  CUDA_TRY (cudaStreamSynchronize (stream));

  for (l = 0; l < desc->n_layers; l++) {
    if (!is_conv (desc->layers[l].kind)) {
      plan_kernel (net, &desc->layers[l], &net->steps[l]);
      continue;
    }
    result = plan_conv_groups (net, &desc->layers[l], l, search, stream,
        message, message_len);
    if (result != P3DC_OK)
      goto fail;
    if (net->steps[l].workspace > net->workspace_bytes)
      net->workspace_bytes = net->steps[l].workspace;
  }
  CUDA_TRY (cudaStreamSynchronize (stream));
  CUDA_TRY (cudaFree (search));
  search = NULL;
  if (net->workspace_bytes > 0)
    CUDA_TRY (cudaMalloc (&net->workspace, net->workspace_bytes));
  /* one plain run loads every kernel (lazy loading) before the capture */
  result = queue_layers (net, NULL, 1, stream);
  if (result != P3DC_OK) {
    set_message (message, message_len, "the first run failed: %s",
        p3dc_result_string (result));
    goto fail;
  }
  CUDA_TRY (cudaStreamSynchronize (stream));
  result = capture_graph (net, stream);
  if (result != P3DC_OK) {
    set_message (message, message_len, "%s", net->launch_mode);
    goto fail;
  }
  CUDNN_TRY (api->cudnnSetStream (net->handle, NULL));
  CUDA_TRY (cudaStreamDestroy (stream));
  *out_net = net;
  return P3DC_OK;

fail:
  if (stream != NULL) {
    cudaStreamSynchronize (stream);
    if (net->handle != NULL)
      api->cudnnSetStream (net->handle, NULL);
    cudaStreamDestroy (stream);
  }
  if (search != NULL)
    cudaFree (search);
  p3dc_convnet_cuda_free (net);
  return result;
}

void
p3dc_convnet_cuda_free (P3dcConvNet * net)
{
  uint32_t i;

  if (net == NULL)
    return;
  if (net->steps != NULL) {
    for (i = 0; i < net->n_layers; i++)
      step_clear (net, &net->steps[i]);
  }
  if (net->graph != NULL)
    cudaGraphExecDestroy (net->graph);
  if (net->storage != NULL)
    for (i = 0; i < net->n_buffers; i++)
      cudaFree (net->storage[i]);
  cudaFree (net->scratch);
  cudaFree (net->workspace);
  if (net->relu != NULL)
    net->api->cudnnDestroyActivationDescriptor (net->relu);
  if (net->identity != NULL)
    net->api->cudnnDestroyActivationDescriptor (net->identity);
  if (net->handle != NULL)
    net->api->cudnnDestroy (net->handle);
  free (net->buffers);
  free (net->layers);
  free (net->storage);
  free (net->steps);
  free (net->channels);
  free (net);
}

/* Converts or copies @input into buffer 0, then queues the layers: the
 * graph when @use_graph and there is one, else plain launches. */
static P3dcResult
run_net (P3dcConvNet * net, const void *input, int input_half,
    P3dcCudaEvent * events, int use_graph, P3dcCudaStream stream)
{
  const P3dcConvBufferDesc *in;
  P3dcResult result;

  if (net == NULL || input == NULL)
    return P3DC_ERROR_INVALID_ARGUMENT;
  in = &net->buffers[0];
  /* cuDNN launches through the driver in the current context: make sure
   * this thread has the runtime's. */
  result = cudaFree (NULL);
  if (result != P3DC_OK)
    return result;
  if (events != NULL) {
    result = cudaEventRecord (events[0], stream);
    if (result != P3DC_OK)
      return result;
  }
  if (net->half || input_half) {
    result = p3dc_convnet_convert_input (input, input_half, net->storage[0],
        net->half, net->half, net->batch, in->channels, net->channels[0],
        in->height, in->width, stream);
  } else {
    /* F32 into F32 NCHW: the same bytes, into the buffer the graph reads */
    result = cudaMemcpyAsync (net->storage[0], input, (size_t) net->batch *
        in->channels * in->height * in->width * sizeof (float),
        cudaMemcpyDeviceToDevice, stream);
  }
  if (result != P3DC_OK)
    return result;
  if (use_graph && net->graph != NULL)
    return cudaGraphLaunch (net->graph, stream);
  return queue_layers (net, events, 1, stream);
}

P3dcResult
p3dc_convnet_cuda_run_profiled (P3dcConvNet * net, const void *input,
    int input_half, P3dcCudaEvent * events, P3dcCudaStream stream)
{
  return run_net (net, input, input_half, events, 0, stream);
}

P3dcResult
p3dc_convnet_cuda_run (P3dcConvNet * net, const void *input, int input_half,
    P3dcCudaStream stream)
{
  return run_net (net, input, input_half, NULL, 1, stream);
}

const char *
p3dc_convnet_cuda_launch_mode (const P3dcConvNet * net, int *graph)
{
  if (graph != NULL)
    *graph = net != NULL && net->graph != NULL;
  return net != NULL ? net->launch_mode : "no net";
}

P3dcResult
p3dc_convnet_cuda_view (const P3dcConvNet * net, uint32_t buffer,
    P3dcMapView * view)
{
  P3dcConvTensor t;

  if (net == NULL || view == NULL || buffer >= net->n_buffers)
    return P3DC_ERROR_INVALID_ARGUMENT;
  t = buffer_tensor (net, buffer, 0);
  view->data = t.data;
  view->half = net->half;
  view->channel_stride = t.channel;
  view->row_stride = t.row;
  view->column_stride = t.column;
  view->batch_stride = t.batch;
  return P3DC_OK;
}

void
p3dc_convnet_cuda_describe_layer (const P3dcConvNet * net, uint32_t layer,
    char *text, size_t len)
{
  const P3dcConvLayer *l;
  const Step *step;
  const P3dcConvGeometry *g;
  P3dcConvEpilogue e;
  char epilogue[64];

  if (text == NULL || len == 0)
    return;
  if (net == NULL || layer >= net->n_layers) {
    text[0] = '\0';
    return;
  }
  l = &net->layers[layer];
  step = &net->steps[layer];
  g = &step->geometry;
  if (!is_conv (l->kind)) {
    snprintf (text, len, "%s %u %ux%u -> %ux%u: our kernel%s, %u-channel "
        "loads", p3dc_convnet_kind_name (l->kind), l->out_channels,
        net->buffers[l->input].height, net->buffers[l->input].width,
        net->buffers[l->output].height, net->buffers[l->output].width,
        l->relu ? " + ReLU" : "", p3dc_convnet_kernel_lanes (&step->kernel));
    return;
  }
  if (step->own_grouped) {
    snprintf (text, len, "%s %u->%u k%ux%u g%u %ux%u: our tensor-core "
        "grouped kernel%s", p3dc_convnet_kind_name (l->kind), l->in_channels,
        l->out_channels, g->kernel[0], g->kernel[1], g->groups,
        net->buffers[l->output].height, net->buffers[l->output].width,
        l->relu ? " + ReLU" : "");
    return;
  }
  if (step->fused) {
    snprintf (epilogue, sizeof epilogue, "fused bias%s",
        step->fused == 2 ? " (F32)" : "");
  } else {
    epilogue_args (net, layer, &e);
    snprintf (epilogue, sizeof epilogue, "+ epilogue (%u-channel loads)",
        p3dc_convnet_epilogue_lanes (&e));
  }
  snprintf (text, len, "%s %u->%u k%ux%u s%ux%u d%ux%u g%u %ux%u: %s %s%s%s"
      "%s, %zu bytes workspace", p3dc_convnet_kind_name (l->kind),
      l->in_channels, l->out_channels, g->kernel[0], g->kernel[1],
      g->stride[0], g->stride[1], g->dilation[0], g->dilation[1], g->groups,
      net->buffers[l->output].height, net->buffers[l->output].width,
      algo_name (step->algo), epilogue,
      step->fused_residual ? " + residual" : "",
      step->input_copy != NULL ? ", input slice copied" : "",
      g->groups > 1 && !step->grouped ? ", groups as one dense filter" : "",
      step->workspace);
}
