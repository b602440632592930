// camprep on the device; the reference is camprep_cpu.c and the arithmetic
// both run is in camprep-private.h, so the two agree bit for bit.
//
// Two kernels per rig and frame, each over every camera at once (a chunk of
// kChunk cameras per launch, their planes passed by value).
// horizontal_kernel: one thread per (camera, frame row the output reads,
// output column) sums the column's taps of that row, the YUV conversion
// done per tap, into an 8-bit work plane per colour, as PIL's first pass.
// vertical_kernel: one thread per (camera, output row, output column) sums
// the row's taps down the work planes, clips to a byte and writes the
// normalised value of each output channel.  Consecutive threads take
// consecutive columns, so the work planes and the output are written
// coalesced.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <new>

#include "camprep-private.h"

namespace {

constexpr uint32_t kChunk = 8;
constexpr unsigned kThreads = 128;
// device allocations are cut at this alignment
constexpr size_t kAlign = 256;

struct CameraDesc {
  P3dcCamPrepSource source;
  const int32_t *column_bounds;
  const int32_t *column_weights;
  const int32_t *row_bounds;
  const int32_t *row_weights;
  uint32_t column_ksize, row_ksize;
  uint32_t row_first, row_count;
  uint8_t *work;  // [3][row_count][out_width]
};

// What changes every frame: the planes of a chunk's cameras.
struct ChunkFrames {
  const uint8_t *planes[kChunk][3];
  int32_t strides[kChunk][3];
};

struct NormChannels {
  uint32_t channel[3];
};

__global__ void horizontal_kernel(const CameraDesc *cameras, ChunkFrames frames,
                                  uint32_t out_width) {
  const uint32_t camera = blockIdx.z;
  const CameraDesc *d = cameras + camera;
  const uint32_t column = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t row = blockIdx.y;
  if (column >= out_width || row >= d->row_count) return;
  const P3dcCamPrepSource source = d->source;
  const uint8_t *planes[3] = {frames.planes[camera][0],
                              frames.planes[camera][1],
                              frames.planes[camera][2]};
  const int32_t strides[3] = {frames.strides[camera][0],
                              frames.strides[camera][1],
                              frames.strides[camera][2]};
  uint8_t rgb[3];
  p3dc_camprep_horizontal(&source, planes, strides, d->column_bounds,
                          d->column_weights, d->column_ksize, column,
                          d->row_first + row, rgb);
  const size_t plane = (size_t)d->row_count * out_width;
  const size_t at = (size_t)row * out_width + column;
  d->work[at] = rgb[0];
  d->work[plane + at] = rgb[1];
  d->work[2 * plane + at] = rgb[2];
}

__global__ void vertical_kernel(const CameraDesc *cameras, const float *table,
                                NormChannels norm, void *out, int half_out,
                                uint32_t out_width, uint32_t out_height) {
  const uint32_t camera = blockIdx.z;
  const CameraDesc *d = cameras + camera;
  const uint32_t column = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t row = blockIdx.y;
  if (column >= out_width) return;
  const size_t plane = (size_t)d->row_count * out_width;
  const size_t out_plane = (size_t)out_height * out_width;
  for (uint32_t c = 0; c < 3; c++) {
    const int byte = p3dc_camprep_vertical(
        d->work + norm.channel[c] * plane, out_width, d->row_first,
        d->row_bounds, d->row_weights, d->row_ksize, column, row);
    const float value = table[c * 256 + byte];
    const size_t at =
        ((size_t)camera * 3 + c) * out_plane + (size_t)row * out_width + column;
    if (half_out)
      static_cast<__half *>(out)[at] = __float2half_rn(value);
    else
      static_cast<float *>(out)[at] = value;
  }
}

size_t align_up(size_t size) { return (size + kAlign - 1) / kAlign * kAlign; }

}  // namespace

struct _P3dcCamPrepCuda {
  uint32_t n_cameras;
  uint32_t out_width, out_height;
  // the largest row_count of each chunk, the grid's rows
  uint32_t chunk_rows[P3DC_CAMPREP_MAX_CAMERAS / kChunk];
  NormChannels norm;
  uint8_t *device;  // one allocation: descriptors, table, tables, work
  CameraDesc *cameras;
  float *table;
};

extern "C" void p3dc_camprep_cuda_free(P3dcCamPrepCuda *prep) {
  if (prep == nullptr) return;
  if (prep->device) cudaFree(prep->device);
  delete prep;
}

extern "C" P3dcResult p3dc_camprep_cuda_new(const P3dcCamPrepPlan *const *plans,
                                            uint32_t n_cameras,
                                            const P3dcCamPrepNorm *norm,
                                            P3dcCamPrepCuda **prep) {
  if (prep == nullptr) return P3DC_ERROR_INVALID_ARGUMENT;
  *prep = nullptr;
  if (plans == nullptr || norm == nullptr || n_cameras == 0 ||
      n_cameras > P3DC_CAMPREP_MAX_CAMERAS)
    return P3DC_ERROR_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < n_cameras; i++) {
    if (plans[i] == nullptr ||
        plans[i]->params.out_width != plans[0]->params.out_width ||
        plans[i]->params.out_height != plans[0]->params.out_height)
      return P3DC_ERROR_INVALID_ARGUMENT;
  }
  for (uint32_t k = 0; k < 3; k++)
    if (norm->channel[k] > 2) return P3DC_ERROR_INVALID_ARGUMENT;
  const uint32_t out_width = plans[0]->params.out_width;
  const uint32_t out_height = plans[0]->params.out_height;

  // the layout of the one allocation
  size_t offset = align_up(n_cameras * sizeof(CameraDesc));
  const size_t table_at = offset;
  offset += align_up(3 * 256 * sizeof(float));
  size_t at[P3DC_CAMPREP_MAX_CAMERAS][5];
  for (uint32_t i = 0; i < n_cameras; i++) {
    const P3dcCamPrepPlan *p = plans[i];
    const size_t sizes[5] = {
        (size_t)out_width * 2 * sizeof(int32_t),
        (size_t)out_width * p->columns.ksize * sizeof(int32_t),
        (size_t)out_height * 2 * sizeof(int32_t),
        (size_t)out_height * p->rows.ksize * sizeof(int32_t),
        (size_t)3 * p->row_count * out_width};
    for (int k = 0; k < 5; k++) {
      at[i][k] = offset;
      offset += align_up(sizes[k] > 0 ? sizes[k] : 1);
    }
  }

  P3dcCamPrepCuda *c = new (std::nothrow) P3dcCamPrepCuda();
  CameraDesc *descs = new (std::nothrow) CameraDesc[n_cameras]();
  if (c == nullptr || descs == nullptr) {
    delete c;
    delete[] descs;
    return P3DC_ERROR_OUT_OF_MEMORY;
  }
  c->n_cameras = n_cameras;
  c->out_width = out_width;
  c->out_height = out_height;
  for (uint32_t k = 0; k < 3; k++) c->norm.channel[k] = norm->channel[k];
  cudaError_t error = cudaMalloc(reinterpret_cast<void **>(&c->device), offset);
  if (error == cudaSuccess) {
    c->cameras = reinterpret_cast<CameraDesc *>(c->device);
    c->table = reinterpret_cast<float *>(c->device + table_at);
    for (uint32_t i = 0; i < n_cameras; i++) {
      const P3dcCamPrepPlan *p = plans[i];
      CameraDesc *d = descs + i;
      p3dc_camprep_source_from_params(&d->source, &p->params);
      d->column_bounds = reinterpret_cast<int32_t *>(c->device + at[i][0]);
      d->column_weights = reinterpret_cast<int32_t *>(c->device + at[i][1]);
      d->row_bounds = reinterpret_cast<int32_t *>(c->device + at[i][2]);
      d->row_weights = reinterpret_cast<int32_t *>(c->device + at[i][3]);
      d->work = c->device + at[i][4];
      d->column_ksize = p->columns.ksize;
      d->row_ksize = p->rows.ksize;
      d->row_first = p->row_first;
      d->row_count = p->row_count;
      if (p->row_count > c->chunk_rows[i / kChunk])
        c->chunk_rows[i / kChunk] = p->row_count;
    }
    error = cudaMemcpy(c->device, descs, n_cameras * sizeof(CameraDesc),
                       cudaMemcpyHostToDevice);
  }
  if (error == cudaSuccess)
    error = cudaMemcpy(c->table, norm->table, sizeof(norm->table),
                       cudaMemcpyHostToDevice);
  for (uint32_t i = 0; i < n_cameras && error == cudaSuccess; i++) {
    const P3dcCamPrepPlan *p = plans[i];
    error = cudaMemcpy(c->device + at[i][0], p->columns.bounds,
                       (size_t)out_width * 2 * sizeof(int32_t),
                       cudaMemcpyHostToDevice);
    if (error == cudaSuccess)
      error = cudaMemcpy(c->device + at[i][1], p->columns.weights,
                         (size_t)out_width * p->columns.ksize * sizeof(int32_t),
                         cudaMemcpyHostToDevice);
    if (error == cudaSuccess)
      error = cudaMemcpy(c->device + at[i][2], p->rows.bounds,
                         (size_t)out_height * 2 * sizeof(int32_t),
                         cudaMemcpyHostToDevice);
    if (error == cudaSuccess)
      error = cudaMemcpy(c->device + at[i][3], p->rows.weights,
                         (size_t)out_height * p->rows.ksize * sizeof(int32_t),
                         cudaMemcpyHostToDevice);
  }
  delete[] descs;
  if (error != cudaSuccess) {
    p3dc_camprep_cuda_free(c);
    return error;
  }
  *prep = c;
  return P3DC_OK;
}

extern "C" P3dcResult p3dc_camprep_cuda_run(P3dcCamPrepCuda *prep,
                                            const P3dcCamPrepFrame *frames,
                                            void *out, int half_out,
                                            P3dcCudaStream stream) {
  if (prep == nullptr || frames == nullptr || out == nullptr)
    return P3DC_ERROR_INVALID_ARGUMENT;
  const size_t per_camera = (size_t)3 * prep->out_height * prep->out_width *
                            (half_out ? sizeof(__half) : sizeof(float));
  const dim3 threads(kThreads);
  const unsigned column_blocks = (prep->out_width + kThreads - 1) / kThreads;
  for (uint32_t base = 0; base < prep->n_cameras; base += kChunk) {
    const uint32_t n =
        prep->n_cameras - base < kChunk ? prep->n_cameras - base : kChunk;
    ChunkFrames chunk = {};
    for (uint32_t i = 0; i < n; i++)
      for (int k = 0; k < 3; k++) {
        chunk.planes[i][k] = frames[base + i].planes[k];
        chunk.strides[i][k] = frames[base + i].strides[k];
      }
    const uint32_t rows = prep->chunk_rows[base / kChunk];
    if (rows > 0)
      horizontal_kernel<<<dim3(column_blocks, rows, n), threads, 0, stream>>>(
          prep->cameras + base, chunk, prep->out_width);
    vertical_kernel<<<dim3(column_blocks, prep->out_height, n), threads, 0,
                      stream>>>(prep->cameras + base, prep->table, prep->norm,
                                static_cast<uint8_t *>(out) + base * per_camera,
                                half_out, prep->out_width, prep->out_height);
  }
  return cudaGetLastError();
}
