/* The convolutional network's CUDA entry points for builds without cuDNN's
 * header (or without CUDA): the reference path (convnet_cpu.c) is all
 * there is, and every device call says why. */
#include <stdio.h>

#include "config.h"
#include "convnet.h"

#ifdef P3D_HAVE_CUDA
#define WHY_NOT "this build has no cuDNN (cudnn.h was not found)"
#define WHY_NOT_RESULT P3D_ERROR_UNSUPPORTED
#else
#define WHY_NOT "this build has no CUDA"
#define WHY_NOT_RESULT P3D_ERROR_NO_CUDA
#endif

P3dResult
p3d_convnet_cuda_available (char *message, size_t message_len)
{
  if (message != NULL && message_len > 0)
    snprintf (message, message_len, "%s", WHY_NOT);
  return WHY_NOT_RESULT;
}

P3dResult
p3d_convnet_cuda_new (const P3dConvNetDesc * desc, int half,
    P3dConvNet ** net, char *message, size_t message_len)
{
  (void) desc;
  (void) half;
  if (net != NULL)
    *net = NULL;
  return p3d_convnet_cuda_available (message, message_len);
}

void
p3d_convnet_cuda_free (P3dConvNet * net)
{
  (void) net;
}

P3dResult
p3d_convnet_cuda_run (P3dConvNet * net, const void *input, int input_half,
    P3dCudaStream stream)
{
  (void) net;
  (void) input;
  (void) input_half;
  (void) stream;
  return WHY_NOT_RESULT;
}

P3dResult
p3d_convnet_cuda_run_profiled (P3dConvNet * net, const void *input,
    int input_half, P3dCudaEvent * events, P3dCudaStream stream)
{
  (void) events;
  return p3d_convnet_cuda_run (net, input, input_half, stream);
}

P3dResult
p3d_convnet_cuda_view (const P3dConvNet * net, uint32_t buffer,
    P3dMapView * view)
{
  (void) net;
  (void) buffer;
  (void) view;
  return WHY_NOT_RESULT;
}

const char *
p3d_convnet_cuda_launch_mode (const P3dConvNet * net, int *graph)
{
  (void) net;
  if (graph != NULL)
    *graph = 0;
  return WHY_NOT;
}

void
p3d_convnet_cuda_describe_layer (const P3dConvNet * net, uint32_t layer,
    char *text, size_t len)
{
  (void) net;
  (void) layer;
  if (text != NULL && len > 0)
    snprintf (text, len, "%s", WHY_NOT);
}
