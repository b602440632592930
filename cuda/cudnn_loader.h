/* cuDNN 9, loaded at run time: libcudnn.so.9 is opened with dlopen on first
 * use and never linked, so the compute library (and the plugin above it)
 * loads on machines without cuDNN; the convolutional network then reports
 * that cuDNN was not found instead.  Only compiled when cudnn.h was found
 * at build time (meson's have_cudnn). */
#ifndef P3DC_CUDNN_LOADER_H
#define P3DC_CUDNN_LOADER_H

#include <stddef.h>

#include <cudnn.h>

#include "result.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The library name dlopen looks for, unless the environment variable
 * PERCEPTION_CUDNN_LIBRARY names another file (a cuDNN 9 outside the
 * loader's search path, or a test of the missing-library path). */
#define P3DC_CUDNN_LIBRARY "libcudnn.so.9"

/* Every cuDNN function the layer graph calls. */
#define P3DC_CUDNN_FUNCTIONS(X) \
  X (cudnnGetVersion) \
  X (cudnnGetErrorString) \
  X (cudnnCreate) \
  X (cudnnDestroy) \
  X (cudnnSetStream) \
  X (cudnnCreateTensorDescriptor) \
  X (cudnnDestroyTensorDescriptor) \
  X (cudnnSetTensor4dDescriptor) \
  X (cudnnCreateFilterDescriptor) \
  X (cudnnDestroyFilterDescriptor) \
  X (cudnnSetFilter4dDescriptor) \
  X (cudnnCreateConvolutionDescriptor) \
  X (cudnnDestroyConvolutionDescriptor) \
  X (cudnnSetConvolution2dDescriptor) \
  X (cudnnSetConvolutionMathType) \
  X (cudnnSetConvolutionGroupCount) \
  X (cudnnGetConvolution2dForwardOutputDim) \
  X (cudnnCreateActivationDescriptor) \
  X (cudnnDestroyActivationDescriptor) \
  X (cudnnSetActivationDescriptor) \
  X (cudnnGetConvolutionForwardAlgorithmMaxCount) \
  X (cudnnGetConvolutionForwardAlgorithm_v7) \
  X (cudnnGetConvolutionForwardWorkspaceSize) \
  X (cudnnConvolutionForward) \
  X (cudnnConvolutionBiasActivationForward)

typedef struct
{
#define P3DC_CUDNN_MEMBER(name) __typeof__ (name) *name;
  P3DC_CUDNN_FUNCTIONS (P3DC_CUDNN_MEMBER)
#undef P3DC_CUDNN_MEMBER
  size_t version;
} P3dcCudnn;

/* The loaded functions (loaded once per process; later calls return the
 * same table), or P3DC_ERROR_UNSUPPORTED with the reason in @message:
 * "cuDNN not found (libcudnn.so.9): <dlerror>", a missing symbol, or a
 * version other than 9. */
P3dcResult p3dc_cudnn_load (const P3dcCudnn ** api, char *message,
    size_t message_len);

#ifdef __cplusplus
}
#endif

#endif /* P3DC_CUDNN_LOADER_H */
