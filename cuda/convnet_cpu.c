/* The convolutional network: description checks, and the C reference that
 * defines the results (plain NCHW float32 loops in a fixed order). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convnet.h"

static P3dcResult
invalid (char *message, size_t message_len, const char *format, ...)
{
  va_list args;

  if (message != NULL && message_len > 0) {
    va_start (args, format);
    vsnprintf (message, message_len, format, args);
    va_end (args);
  }
  return P3DC_ERROR_INVALID_ARGUMENT;
}

/* The output size of a layer along one axis of @in cells, or 0 when the
 * layer cannot produce one. */
static uint64_t
layer_output_size (const P3dcConvLayer * layer, uint32_t in)
{
  uint64_t padded = (uint64_t) in + 2u * (uint64_t) layer->padding;

  if (layer->kind == P3DC_CONV_TRANSPOSED_2D)
    return (uint64_t) in *layer->stride;
  if (padded < layer->kernel)
    return 0;
  return (padded - layer->kernel) / layer->stride + 1;
}

static P3dcResult
validate_layer (const P3dcConvNetDesc * desc, uint32_t index,
    char *message, size_t message_len)
{
  const P3dcConvLayer *layer = &desc->layers[index];
  const P3dcConvBufferDesc *in, *out;

  if (layer->kind != P3DC_CONV_2D && layer->kind != P3DC_CONV_TRANSPOSED_2D)
    return invalid (message, message_len, "layer %u: unknown kind %d", index,
        (int) layer->kind);
  if (layer->weight == NULL || layer->bias == NULL)
    return invalid (message, message_len, "layer %u: no %s", index,
        layer->weight == NULL ? "weight" : "bias");
  if (layer->kernel < 1 || layer->kernel > P3DC_CONVNET_MAX_KERNEL
      || layer->stride < 1 || layer->stride > P3DC_CONVNET_MAX_KERNEL)
    return invalid (message, message_len,
        "layer %u: kernel %u and stride %u must be 1 to %u", index,
        layer->kernel, layer->stride, P3DC_CONVNET_MAX_KERNEL);
  if (layer->kind == P3DC_CONV_TRANSPOSED_2D
      && (layer->kernel != layer->stride || layer->padding != 0))
    return invalid (message, message_len,
        "layer %u: a transposed convolution needs kernel == stride and "
        "padding 0 (kernel %u, stride %u, padding %u)", index, layer->kernel,
        layer->stride, layer->padding);
  if (layer->kind == P3DC_CONV_2D && layer->padding >= layer->kernel)
    return invalid (message, message_len,
        "layer %u: padding %u must be below the kernel %u", index,
        layer->padding, layer->kernel);
  if (layer->in_channels < 1 || layer->out_channels < 1)
    return invalid (message, message_len, "layer %u: no channels", index);
  if (layer->input >= desc->n_buffers || layer->output >= desc->n_buffers)
    return invalid (message, message_len,
        "layer %u: buffer %u or %u does not exist (%u buffers)", index,
        layer->input, layer->output, desc->n_buffers);
  if (layer->output == 0)
    return invalid (message, message_len,
        "layer %u: buffer 0 is the input and is never written", index);
  if (layer->output == layer->input)
    return invalid (message, message_len,
        "layer %u: reads and writes buffer %u", index, layer->input);
  in = &desc->buffers[layer->input];
  out = &desc->buffers[layer->output];
  if (in->channels != layer->in_channels)
    return invalid (message, message_len,
        "layer %u: %u input channels, buffer %u has %u", index,
        layer->in_channels, layer->input, in->channels);
  if ((uint64_t) layer->output_channel_offset + layer->out_channels >
      out->channels)
    return invalid (message, message_len,
        "layer %u: channels %u to %u are outside buffer %u (%u channels)",
        index, layer->output_channel_offset,
        layer->output_channel_offset + (uint64_t) layer->out_channels - 1,
        layer->output, out->channels);
  if (layer_output_size (layer, in->height) != out->height
      || layer_output_size (layer, in->width) != out->width)
    return invalid (message, message_len,
        "layer %u: %ux%u in gives %llux%llu, buffer %u is %ux%u", index,
        in->height, in->width,
        (unsigned long long) layer_output_size (layer, in->height),
        (unsigned long long) layer_output_size (layer, in->width),
        layer->output, out->height, out->width);
  return P3DC_OK;
}

P3dcResult
p3dc_convnet_validate (const P3dcConvNetDesc * desc, char *message,
    size_t message_len)
{
  uint32_t b, l, c;
  size_t total_channels = 0;
  size_t *first_channel;
  uint32_t *writer, *last_writer;
  P3dcResult result = P3DC_OK;

  if (message != NULL && message_len > 0)
    message[0] = '\0';
  if (desc == NULL)
    return invalid (message, message_len, "no description");
  if (desc->n_buffers < 2 || desc->n_buffers > P3DC_CONVNET_MAX_BUFFERS
      || desc->buffers == NULL)
    return invalid (message, message_len,
        "%u buffers: a net needs 2 to %u", desc->n_buffers,
        P3DC_CONVNET_MAX_BUFFERS);
  if (desc->n_layers < 1 || desc->n_layers > P3DC_CONVNET_MAX_LAYERS
      || desc->layers == NULL)
    return invalid (message, message_len,
        "%u layers: a net needs 1 to %u", desc->n_layers,
        P3DC_CONVNET_MAX_LAYERS);
  for (b = 0; b < desc->n_buffers; b++) {
    const P3dcConvBufferDesc *buf = &desc->buffers[b];
    uint64_t elements = (uint64_t) buf->channels * buf->height * buf->width;

    if (elements == 0 || elements > P3DC_CONVNET_MAX_ELEMENTS)
      return invalid (message, message_len,
          "buffer %u: %ux%ux%u is empty or above %u elements", b,
          buf->channels, buf->height, buf->width, P3DC_CONVNET_MAX_ELEMENTS);
    total_channels += buf->channels;
  }
  for (l = 0; l < desc->n_layers; l++) {
    result = validate_layer (desc, l, message, message_len);
    if (result != P3DC_OK)
      return result;
  }

  /* Which layer writes each channel (layer + 1, 0 for none), then the last
   * writer of each buffer, which every reader must follow. */
  first_channel = calloc (desc->n_buffers, sizeof (size_t));
  writer = calloc (total_channels, sizeof (uint32_t));
  last_writer = calloc (desc->n_buffers, sizeof (uint32_t));
  if (first_channel == NULL || writer == NULL || last_writer == NULL) {
    result = P3DC_ERROR_OUT_OF_MEMORY;
    goto done;
  }
  for (b = 1; b < desc->n_buffers; b++)
    first_channel[b] = first_channel[b - 1] + desc->buffers[b - 1].channels;
  for (l = 0; l < desc->n_layers && result == P3DC_OK; l++) {
    const P3dcConvLayer *layer = &desc->layers[l];
    uint32_t *slot = writer + first_channel[layer->output]
        + layer->output_channel_offset;

    for (c = 0; c < layer->out_channels; c++) {
      if (slot[c] != 0) {
        result = invalid (message, message_len,
            "layer %u: channel %u of buffer %u is already written by layer "
            "%u", l, layer->output_channel_offset + c, layer->output,
            slot[c] - 1);
        break;
      }
      slot[c] = l + 1;
    }
    last_writer[layer->output] = l + 1;
  }
  for (b = 1; b < desc->n_buffers && result == P3DC_OK; b++) {
    for (c = 0; c < desc->buffers[b].channels; c++) {
      if (writer[first_channel[b] + c] == 0) {
        result = invalid (message, message_len,
            "buffer %u: channel %u is written by no layer", b, c);
        break;
      }
    }
  }
  for (l = 0; l < desc->n_layers && result == P3DC_OK; l++) {
    uint32_t input = desc->layers[l].input;

    if (input != 0 && last_writer[input] > l)
      result = invalid (message, message_len,
          "layer %u: reads buffer %u before layer %u writes it", l, input,
          last_writer[input] - 1);
  }
done:
  free (first_channel);
  free (writer);
  free (last_writer);
  return result;
}

size_t
p3dc_convnet_buffer_elements (const P3dcConvNetDesc * desc, uint32_t buffer)
{
  const P3dcConvBufferDesc *buf = &desc->buffers[buffer];

  return (size_t) buf->channels * buf->height * buf->width;
}

static void
conv2d_cpu (const P3dcConvLayer * layer, const P3dcConvBufferDesc * in_desc,
    const float *in, const P3dcConvBufferDesc * out_desc, float *out)
{
  const uint32_t k = layer->kernel, s = layer->stride;
  const int64_t pad = layer->padding;
  const size_t in_plane = (size_t) in_desc->height * in_desc->width;
  const size_t out_plane = (size_t) out_desc->height * out_desc->width;
  uint32_t o, i, oy, ox, ky, kx;

  for (o = 0; o < layer->out_channels; o++) {
    float *plane = out + (layer->output_channel_offset + (size_t) o) *
        out_plane;

    for (oy = 0; oy < out_desc->height; oy++) {
      for (ox = 0; ox < out_desc->width; ox++) {
        float sum = 0.0f;

        for (i = 0; i < layer->in_channels; i++) {
          const float *w = layer->weight + ((size_t) o * layer->in_channels
              + i) * k * k;
          const float *x = in + i * in_plane;

          for (ky = 0; ky < k; ky++) {
            int64_t iy = (int64_t) oy * s + ky - pad;

            if (iy < 0 || iy >= in_desc->height)
              continue;
            for (kx = 0; kx < k; kx++) {
              int64_t ix = (int64_t) ox * s + kx - pad;

              if (ix < 0 || ix >= in_desc->width)
                continue;
              sum += w[ky * k + kx] * x[iy * in_desc->width + ix];
            }
          }
        }
        sum += layer->bias[o];
        if (layer->relu && !(sum > 0.0f))
          sum = 0.0f;
        plane[(size_t) oy * out_desc->width + ox] = sum;
      }
    }
  }
}

static void
transposed2d_cpu (const P3dcConvLayer * layer,
    const P3dcConvBufferDesc * in_desc, const float *in,
    const P3dcConvBufferDesc * out_desc, float *out)
{
  const uint32_t k = layer->kernel;
  const size_t in_plane = (size_t) in_desc->height * in_desc->width;
  const size_t out_plane = (size_t) out_desc->height * out_desc->width;
  uint32_t o, i, iy, ix, ky, kx;

  for (o = 0; o < layer->out_channels; o++) {
    float *plane = out + (layer->output_channel_offset + (size_t) o) *
        out_plane;

    for (iy = 0; iy < in_desc->height; iy++) {
      for (ix = 0; ix < in_desc->width; ix++) {
        for (ky = 0; ky < k; ky++) {
          for (kx = 0; kx < k; kx++) {
            float sum = 0.0f;

            /* kernel == stride: each output cell takes exactly one tap of
             * each input channel */
            for (i = 0; i < layer->in_channels; i++)
              sum += layer->weight[(((size_t) i * layer->out_channels + o) *
                      k + ky) * k + kx] * in[i * in_plane +
                  (size_t) iy * in_desc->width + ix];
            sum += layer->bias[o];
            if (layer->relu && !(sum > 0.0f))
              sum = 0.0f;
            plane[((size_t) iy * k + ky) * out_desc->width +
                (size_t) ix * k + kx] = sum;
          }
        }
      }
    }
  }
}

P3dcResult
p3dc_convnet_cpu (const P3dcConvNetDesc * desc, const float *input,
    float *const *buffers)
{
  P3dcResult result;
  uint32_t l, b;

  result = p3dc_convnet_validate (desc, NULL, 0);
  if (result != P3DC_OK)
    return result;
  if (input == NULL || buffers == NULL)
    return P3DC_ERROR_INVALID_ARGUMENT;
  for (b = 1; b < desc->n_buffers; b++)
    if (buffers[b] == NULL)
      return P3DC_ERROR_INVALID_ARGUMENT;

  for (l = 0; l < desc->n_layers; l++) {
    const P3dcConvLayer *layer = &desc->layers[l];
    const float *in = layer->input == 0 ? input : buffers[layer->input];

    if (layer->kind == P3DC_CONV_2D)
      conv2d_cpu (layer, &desc->buffers[layer->input], in,
          &desc->buffers[layer->output], buffers[layer->output]);
    else
      transposed2d_cpu (layer, &desc->buffers[layer->input], in,
          &desc->buffers[layer->output], buffers[layer->output]);
  }
  return P3DC_OK;
}

float **
p3dc_convnet_cpu_buffers_new (const P3dcConvNetDesc * desc)
{
  float **buffers;
  uint32_t b;

  if (p3dc_convnet_validate (desc, NULL, 0) != P3DC_OK)
    return NULL;
  buffers = calloc (desc->n_buffers, sizeof (float *));
  if (buffers == NULL)
    return NULL;
  for (b = 1; b < desc->n_buffers; b++) {
    buffers[b] =
        calloc (p3dc_convnet_buffer_elements (desc, b), sizeof (float));
    if (buffers[b] == NULL) {
      p3dc_convnet_cpu_buffers_free (desc, buffers);
      return NULL;
    }
  }
  return buffers;
}

void
p3dc_convnet_cpu_buffers_free (const P3dcConvNetDesc * desc, float **buffers)
{
  uint32_t b;

  if (buffers == NULL)
    return;
  for (b = 0; b < desc->n_buffers; b++)
    free (buffers[b]);
  free (buffers);
}

void
p3dc_convnet_cpu_view (const P3dcConvNetDesc * desc, uint32_t buffer,
    const float *data, P3dcMapView * view)
{
  const P3dcConvBufferDesc *buf = &desc->buffers[buffer];

  view->data = data;
  view->half = 0;
  view->column_stride = 1;
  view->row_stride = buf->width;
  view->channel_stride = (size_t) buf->height * buf->width;
}
