/* The convolutional network's CUDA entry points for builds without cuDNN's
 * header (or without CUDA): the reference path (convnet_cpu.c) is all
 * there is, and every device call says why. */
#include <stdio.h>

#include "config.h"
#include "convnet.h"

#ifdef P3D_HAVE_CUDA
#define WHY_NOT "this build has no cuDNN (cudnn.h was not found)"
#define WHY_NOT_RESULT P3DC_ERROR_UNSUPPORTED
#else
#define WHY_NOT "this build has no CUDA"
#define WHY_NOT_RESULT P3DC_ERROR_NO_CUDA
#endif

P3dcResult
p3dc_convnet_cuda_available (char *message, size_t message_len)
{
  if (message != NULL && message_len > 0)
    snprintf (message, message_len, "%s", WHY_NOT);
  return WHY_NOT_RESULT;
}

P3dcResult
p3dc_convnet_cuda_new (const P3dcConvNetDesc * desc, int half,
    P3dcConvNet ** net, char *message, size_t message_len)
{
  (void) desc;
  (void) half;
  if (net != NULL)
    *net = NULL;
  return p3dc_convnet_cuda_available (message, message_len);
}

void
p3dc_convnet_cuda_free (P3dcConvNet * net)
{
  (void) net;
}

P3dcResult
p3dc_convnet_cuda_run (P3dcConvNet * net, const void *input, int input_half,
    P3dcCudaStream stream)
{
  (void) net;
  (void) input;
  (void) input_half;
  (void) stream;
  return WHY_NOT_RESULT;
}

P3dcResult
p3dc_convnet_cuda_run_profiled (P3dcConvNet * net, const void *input,
    int input_half, P3dcCudaEvent * events, P3dcCudaStream stream)
{
  (void) events;
  return p3dc_convnet_cuda_run (net, input, input_half, stream);
}

P3dcResult
p3dc_convnet_cuda_view (const P3dcConvNet * net, uint32_t buffer,
    P3dcMapView * view)
{
  (void) net;
  (void) buffer;
  (void) view;
  return WHY_NOT_RESULT;
}

const char *
p3dc_convnet_cuda_launch_mode (const P3dcConvNet * net, int *graph)
{
  (void) net;
  if (graph != NULL)
    *graph = 0;
  return WHY_NOT;
}

void
p3dc_convnet_cuda_describe_layer (const P3dcConvNet * net, uint32_t layer,
    char *text, size_t len)
{
  (void) net;
  (void) layer;
  if (text != NULL && len > 0)
    snprintf (text, len, "%s", WHY_NOT);
}
