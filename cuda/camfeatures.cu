// camfeatures on the device: one thread per output element, consecutive
// threads writing consecutive bytes of the output; the reference is
// camfeatures_cpu.c.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "camfeatures.h"

namespace {

constexpr unsigned kThreads = 256;

__global__ void pack_kernel(P3dcCamFeaturesPack pack, P3dcMapView view,
                            void *out, size_t total) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= total) return;
  // the output index's coordinates, in the output's order
  size_t rest = i;
  uint32_t n, c, y, x;
  if (pack.channels_last) {
    c = rest % pack.channels;
    rest /= pack.channels;
    x = rest % pack.width;
    rest /= pack.width;
    y = rest % pack.height;
    n = rest / pack.height;
  } else {
    x = rest % pack.width;
    rest /= pack.width;
    y = rest % pack.height;
    rest /= pack.height;
    c = rest % pack.channels;
    n = rest / pack.channels;
  }
  const size_t from = n * view.batch_stride + c * view.channel_stride +
                      y * view.row_stride + x * view.column_stride;
  if (view.half && pack.half_out)
    static_cast<uint16_t *>(out)[i] =
        static_cast<const uint16_t *>(view.data)[from];
  else if (view.half)
    static_cast<float *>(out)[i] =
        __half2float(static_cast<const __half *>(view.data)[from]);
  else if (pack.half_out)
    static_cast<__half *>(out)[i] =
        __float2half_rn(static_cast<const float *>(view.data)[from]);
  else
    static_cast<float *>(out)[i] = static_cast<const float *>(view.data)[from];
}

}  // namespace

extern "C" P3dcResult p3dc_camfeatures_pack_cuda(
    const P3dcCamFeaturesPack *pack, const P3dcMapView *view, void *out,
    P3dcCudaStream stream) {
  if (pack == nullptr || view == nullptr || view->data == nullptr ||
      out == nullptr)
    return P3DC_ERROR_INVALID_ARGUMENT;
  const size_t total =
      (size_t)pack->batch * pack->channels * pack->height * pack->width;
  if (total == 0) return P3DC_OK;
  const size_t blocks = (total + kThreads - 1) / kThreads;
  pack_kernel<<<(unsigned)blocks, kThreads, 0, stream>>>(*pack, *view, out,
                                                         total);
  return cudaGetLastError();
}
