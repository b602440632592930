/* The layer graph: description checks, and the C reference that defines
 * the results (plain NCHW float32 loops in a fixed order, see convnet.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convnet.h"
#include "convnet-private.h"

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

void
p3dc_convnet_layer_geometry (const P3dcConvLayer * layer, P3dcConvGeometry * g)
{
  g->kernel[0] = layer->kernel;
  g->stride[0] = layer->stride;
  g->padding[0] = layer->padding;
  g->dilation[0] = layer->dilation ? layer->dilation : 1;
  /* kernel_x 0: square; else the x axis is given in full */
  g->kernel[1] = layer->kernel_x ? layer->kernel_x : layer->kernel;
  g->stride[1] = layer->kernel_x ? layer->stride_x : layer->stride;
  g->padding[1] = layer->kernel_x ? layer->padding_x : layer->padding;
  g->dilation[1] = layer->dilation_x ? layer->dilation_x : g->dilation[0];
  g->groups = layer->groups ? layer->groups : 1;
}

uint32_t
p3dc_convnet_batch (const P3dcConvNetDesc * desc)
{
  return desc->batch ? desc->batch : 1;
}

const char *
p3dc_convnet_kind_name (P3dcConvKind kind)
{
  static const char *const names[P3DC_N_LAYER_KINDS] = {
    "conv", "deconv", "add", "max-pool", "upsample-nearest",
    "upsample-bilinear", "softmax", "slice",
  };

  return (unsigned) kind < P3DC_N_LAYER_KINDS ? names[kind] : "unknown";
}

void
p3dc_map_view_offset_channels (P3dcMapView * view, uint32_t channels)
{
  view->data =
      (const char *) view->data +
      (size_t) channels *view->channel_stride * (view->half ? 2 : 4);
}

static int
is_conv (P3dcConvKind kind)
{
  return kind == P3DC_CONV_2D || kind == P3DC_CONV_TRANSPOSED_2D;
}

static int
has_input2 (const P3dcConvLayer * layer)
{
  return layer->kind == P3DC_LAYER_ADD || (layer->kind == P3DC_CONV_2D
      && layer->residual);
}

/* The output size of a layer along axis @a of @in cells, or 0 when the
 * layer cannot produce one; @out is the output buffer's size there, which
 * the upsampling kinds take as given. */
static uint64_t
layer_output_size (const P3dcConvLayer * layer, const P3dcConvGeometry * g,
    int a, uint32_t in, uint32_t out)
{
  uint64_t padded = (uint64_t) in + 2u * (uint64_t) g->padding[a];
  uint64_t extent = (uint64_t) g->dilation[a] * (g->kernel[a] - 1) + 1;

  switch (layer->kind) {
    case P3DC_CONV_TRANSPOSED_2D:
      return (uint64_t) in *g->stride[a];
    case P3DC_CONV_2D:
    case P3DC_LAYER_MAX_POOL:
      if (padded < extent)
        return 0;
      return (padded - extent) / g->stride[a] + 1;
    case P3DC_LAYER_UPSAMPLE_NEAREST:
    case P3DC_LAYER_UPSAMPLE_BILINEAR:
      return out;
    default:
      return in;
  }
}

/* Channels [offset, offset + count) inside a buffer of @channels. */
static int
slice_inside (uint32_t offset, uint32_t count, uint32_t channels)
{
  return (uint64_t) offset + count <= channels;
}

static P3dcResult
validate_geometry (const P3dcConvLayer * layer, uint32_t index,
    const P3dcConvGeometry * g, char *message, size_t message_len)
{
  int a;

  for (a = 0; a < 2; a++) {
    if (g->kernel[a] < 1 || g->kernel[a] > P3DC_CONVNET_MAX_KERNEL
        || g->stride[a] < 1 || g->stride[a] > P3DC_CONVNET_MAX_KERNEL)
      return invalid (message, message_len,
          "layer %u: kernel %u and stride %u must be 1 to %u", index,
          g->kernel[a], g->stride[a], P3DC_CONVNET_MAX_KERNEL);
    if (g->dilation[a] > P3DC_CONVNET_MAX_DILATION)
      return invalid (message, message_len,
          "layer %u: dilation %u must be 1 to %u", index, g->dilation[a],
          P3DC_CONVNET_MAX_DILATION);
  }
  if (layer->kind == P3DC_CONV_TRANSPOSED_2D) {
    for (a = 0; a < 2; a++)
      if (g->kernel[a] != g->stride[a] || g->padding[a] != 0
          || g->dilation[a] != 1)
        return invalid (message, message_len,
            "layer %u: a transposed convolution needs kernel == stride and "
            "padding 0 (kernel %u, stride %u, padding %u, dilation %u)",
            index, g->kernel[a], g->stride[a], g->padding[a], g->dilation[a]);
    if (g->groups != 1)
      return invalid (message, message_len,
          "layer %u: a transposed convolution has one group, not %u", index,
          g->groups);
  }
  if (layer->kind == P3DC_CONV_2D) {
    for (a = 0; a < 2; a++)
      if ((uint64_t) g->padding[a] >= (uint64_t) g->dilation[a] *
          (g->kernel[a] - 1) + 1)
        return invalid (message, message_len,
            "layer %u: padding %u must be below the kernel %u", index,
            g->padding[a], g->dilation[a] * (g->kernel[a] - 1) + 1);
    if (g->groups < 1 || layer->in_channels % g->groups != 0
        || layer->out_channels % g->groups != 0)
      return invalid (message, message_len,
          "layer %u: %u groups must divide %u input and %u output channels",
          index, g->groups, layer->in_channels, layer->out_channels);
  }
  if (layer->kind == P3DC_LAYER_MAX_POOL) {
    for (a = 0; a < 2; a++)
      if (g->padding[a] > g->kernel[a] / 2)
        return invalid (message, message_len,
            "layer %u: a max pool's padding %u must be at most half its "
            "kernel %u", index, g->padding[a], g->kernel[a]);
  }
  return P3DC_OK;
}

static P3dcResult
validate_layer (const P3dcConvNetDesc * desc, uint32_t index,
    char *message, size_t message_len)
{
  const P3dcConvLayer *layer = &desc->layers[index];
  const P3dcConvBufferDesc *in, *out;
  P3dcConvGeometry g;
  P3dcResult result;

  if ((unsigned) layer->kind >= P3DC_N_LAYER_KINDS)
    return invalid (message, message_len, "layer %u: unknown kind %d", index,
        (int) layer->kind);
  if (is_conv (layer->kind) && (layer->weight == NULL || layer->bias == NULL))
    return invalid (message, message_len, "layer %u: no %s", index,
        layer->weight == NULL ? "weight" : "bias");
  p3dc_convnet_layer_geometry (layer, &g);
  if (is_conv (layer->kind) || layer->kind == P3DC_LAYER_MAX_POOL) {
    result = validate_geometry (layer, index, &g, message, message_len);
    if (result != P3DC_OK)
      return result;
  }
  if (layer->in_channels < 1 || layer->out_channels < 1)
    return invalid (message, message_len, "layer %u: no channels", index);
  if (!is_conv (layer->kind) && layer->in_channels != layer->out_channels)
    return invalid (message, message_len,
        "layer %u (%s) writes as many channels as it reads (%u, %u)",
        index, p3dc_convnet_kind_name (layer->kind), layer->in_channels,
        layer->out_channels);
  if (layer->input >= desc->n_buffers || layer->output >= desc->n_buffers
      || (has_input2 (layer) && layer->input2 >= desc->n_buffers))
    return invalid (message, message_len,
        "layer %u: buffer %u or %u does not exist (%u buffers)", index,
        layer->input, has_input2 (layer) && layer->input2 >= desc->n_buffers ?
        layer->input2 : layer->output, desc->n_buffers);
  if (layer->output == 0)
    return invalid (message, message_len,
        "layer %u: buffer 0 is the input and is never written", index);
  in = &desc->buffers[layer->input];
  out = &desc->buffers[layer->output];
  /* reading and writing one channel of one buffer: the reference would
   * read what it has just written */
  if (layer->output == layer->input
      && layer->input_channel_offset < (uint64_t) layer->output_channel_offset
      + layer->out_channels && layer->output_channel_offset <
      (uint64_t) layer->input_channel_offset + layer->in_channels)
    return invalid (message, message_len, "layer %u: reads and writes buffer "
        "%u", index, layer->input);
  if (has_input2 (layer) && layer->output == layer->input2
      && layer->input2_channel_offset < (uint64_t) layer->output_channel_offset
      + layer->out_channels && layer->output_channel_offset <
      (uint64_t) layer->input2_channel_offset + layer->out_channels)
    return invalid (message, message_len, "layer %u: reads and writes buffer "
        "%u", index, layer->input2);
  if (!slice_inside (layer->input_channel_offset, layer->in_channels,
          in->channels)) {
    if (layer->input_channel_offset == 0)
      return invalid (message, message_len,
          "layer %u: %u input channels, buffer %u has %u", index,
          layer->in_channels, layer->input, in->channels);
    return invalid (message, message_len,
        "layer %u: input channels %u to %llu are outside buffer %u (%u "
        "channels)", index, layer->input_channel_offset,
        layer->input_channel_offset + (unsigned long long) layer->in_channels
        - 1, layer->input, in->channels);
  }
  if (!slice_inside (layer->output_channel_offset, layer->out_channels,
          out->channels))
    return invalid (message, message_len,
        "layer %u: channels %u to %llu are outside buffer %u (%u channels)",
        index, layer->output_channel_offset,
        layer->output_channel_offset + (unsigned long long)
        layer->out_channels - 1, layer->output, out->channels);
  if (layer_output_size (layer, &g, 0, in->height, out->height) !=
      out->height
      || layer_output_size (layer, &g, 1, in->width, out->width) != out->width)
    return invalid (message, message_len,
        "layer %u: %ux%u in gives %llux%llu, buffer %u is %ux%u", index,
        in->height, in->width, (unsigned long long) layer_output_size (layer,
            &g, 0, in->height, out->height),
        (unsigned long long) layer_output_size (layer, &g, 1, in->width,
            out->width), layer->output, out->height, out->width);
  if (has_input2 (layer)) {
    const P3dcConvBufferDesc *in2 = &desc->buffers[layer->input2];

    if (!slice_inside (layer->input2_channel_offset, layer->out_channels,
            in2->channels))
      return invalid (message, message_len,
          "layer %u: second input channels %u to %llu are outside buffer %u "
          "(%u channels)", index, layer->input2_channel_offset,
          layer->input2_channel_offset + (unsigned long long)
          layer->out_channels - 1, layer->input2, in2->channels);
    if (in2->height != out->height || in2->width != out->width)
      return invalid (message, message_len,
          "layer %u: second input buffer %u is %ux%u, the output %ux%u",
          index, layer->input2, in2->height, in2->width, out->height,
          out->width);
  }
  return P3DC_OK;
}

/* Checks the channels [offset, offset + count) of @buffer that layer @l
 * reads: each written (or of the input) by a layer before @l. */
static P3dcResult
check_read (const P3dcConvNetDesc * desc, const size_t *first_channel,
    const uint32_t * writer, uint32_t l, uint32_t buffer, uint32_t offset,
    uint32_t count, char *message, size_t message_len)
{
  uint32_t c;

  if (buffer == 0)
    return P3DC_OK;
  for (c = offset; c < offset + count; c++) {
    uint32_t w = writer[first_channel[buffer] + c];

    if (w > l)
      return invalid (message, message_len,
          "layer %u: reads buffer %u before layer %u writes it", l, buffer,
          w - 1);
  }
  (void) desc;
  return P3DC_OK;
}

P3dcResult
p3dc_convnet_validate (const P3dcConvNetDesc * desc, char *message,
    size_t message_len)
{
  uint32_t b, l, c;
  size_t total_channels = 0;
  size_t *first_channel;
  uint32_t *writer;
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
  if (p3dc_convnet_batch (desc) > P3DC_CONVNET_MAX_BATCH)
    return invalid (message, message_len, "a batch of %u: at most %u",
        desc->batch, P3DC_CONVNET_MAX_BATCH);
  for (b = 0; b < desc->n_buffers; b++) {
    const P3dcConvBufferDesc *buf = &desc->buffers[b];
    uint64_t elements = (uint64_t) buf->channels * buf->height * buf->width *
        p3dc_convnet_batch (desc);

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

  /* Which layer writes each channel (layer + 1, 0 for none); a channel is
   * read only after its writer has run. */
  first_channel = calloc (desc->n_buffers, sizeof (size_t));
  writer = calloc (total_channels, sizeof (uint32_t));
  if (first_channel == NULL || writer == NULL) {
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
    const P3dcConvLayer *layer = &desc->layers[l];

    result = check_read (desc, first_channel, writer, l, layer->input,
        layer->input_channel_offset, layer->in_channels, message, message_len);
    if (result == P3DC_OK && has_input2 (layer))
      result = check_read (desc, first_channel, writer, l, layer->input2,
          layer->input2_channel_offset, layer->out_channels, message,
          message_len);
  }
done:
  free (first_channel);
  free (writer);
  return result;
}

size_t
p3dc_convnet_buffer_elements (const P3dcConvNetDesc * desc, uint32_t buffer)
{
  const P3dcConvBufferDesc *buf = &desc->buffers[buffer];

  return (size_t) p3dc_convnet_batch (desc) * buf->channels * buf->height *
      buf->width;
}

/* ---- the reference --------------------------------------------------- */

/* One batch item's channel slice of a buffer: channel c of the slice is
 * at data + c * plane. */
typedef struct
{
  float *data;
  uint32_t height, width;
  size_t plane;
} Slice;

static Slice
slice_of (const P3dcConvNetDesc * desc, float *const *buffers,
    const float *input, uint32_t buffer, uint32_t n, uint32_t offset)
{
  const P3dcConvBufferDesc *buf = &desc->buffers[buffer];
  float *base = buffer == 0 ? (float *) input : buffers[buffer];
  Slice s;

  s.height = buf->height;
  s.width = buf->width;
  s.plane = (size_t) buf->height * buf->width;
  s.data = base + ((size_t) n * buf->channels + offset) * s.plane;
  return s;
}

static void
conv2d_cpu (const P3dcConvLayer * layer, const P3dcConvGeometry * g,
    const Slice * in, const Slice * out, const Slice * residual)
{
  const uint32_t kh = g->kernel[0], kw = g->kernel[1];
  const uint32_t in_per_group = layer->in_channels / g->groups;
  const uint32_t out_per_group = layer->out_channels / g->groups;
  uint32_t o, i, oy, ox, ky, kx;

  for (o = 0; o < layer->out_channels; o++) {
    const uint32_t first_in = o / out_per_group * in_per_group;
    float *plane = out->data + o * out->plane;

    for (oy = 0; oy < out->height; oy++) {
      for (ox = 0; ox < out->width; ox++) {
        float sum = 0.0f;

        for (i = 0; i < in_per_group; i++) {
          const float *w = layer->weight + ((size_t) o * in_per_group + i) *
              kh * kw;
          const float *x = in->data + (first_in + i) * in->plane;

          for (ky = 0; ky < kh; ky++) {
            int64_t iy = (int64_t) oy * g->stride[0] +
                (int64_t) ky * g->dilation[0] - g->padding[0];

            if (iy < 0 || iy >= in->height)
              continue;
            for (kx = 0; kx < kw; kx++) {
              int64_t ix = (int64_t) ox * g->stride[1] +
                  (int64_t) kx * g->dilation[1] - g->padding[1];

              if (ix < 0 || ix >= in->width)
                continue;
              sum += w[ky * kw + kx] * x[iy * in->width + ix];
            }
          }
        }
        sum += layer->bias[o];
        if (residual != NULL)
          sum += residual->data[o * residual->plane +
              (size_t) oy * out->width + ox];
        plane[(size_t) oy * out->width + ox] =
            p3dc_convnet_relu (layer->relu, sum);
      }
    }
  }
}

static void
transposed2d_cpu (const P3dcConvLayer * layer, const P3dcConvGeometry * g,
    const Slice * in, const Slice * out)
{
  const uint32_t kh = g->kernel[0], kw = g->kernel[1];
  uint32_t o, i, iy, ix, ky, kx;

  for (o = 0; o < layer->out_channels; o++) {
    float *plane = out->data + o * out->plane;

    for (iy = 0; iy < in->height; iy++) {
      for (ix = 0; ix < in->width; ix++) {
        for (ky = 0; ky < kh; ky++) {
          for (kx = 0; kx < kw; kx++) {
            float sum = 0.0f;

            /* kernel == stride: each output cell takes exactly one tap of
             * each input channel */
            for (i = 0; i < layer->in_channels; i++)
              sum += layer->weight[(((size_t) i * layer->out_channels + o) *
                      kh + ky) * kw + kx] * in->data[i * in->plane +
                  (size_t) iy * in->width + ix];
            sum += layer->bias[o];
            plane[((size_t) iy * kh + ky) * out->width +
                (size_t) ix * kw + kx] = p3dc_convnet_relu (layer->relu, sum);
          }
        }
      }
    }
  }
}

static void
add_cpu (const P3dcConvLayer * layer, const Slice * in, const Slice * in2,
    const Slice * out)
{
  uint32_t c;
  size_t e;

  for (c = 0; c < layer->out_channels; c++)
    for (e = 0; e < out->plane; e++)
      out->data[c * out->plane + e] = p3dc_convnet_relu (layer->relu,
          in->data[c * in->plane + e] + in2->data[c * in2->plane + e]);
}

static void
max_pool_cpu (const P3dcConvLayer * layer, const P3dcConvGeometry * g,
    const Slice * in, const Slice * out)
{
  uint32_t c, oy, ox, ky, kx;

  for (c = 0; c < layer->out_channels; c++) {
    const float *x = in->data + c * in->plane;

    for (oy = 0; oy < out->height; oy++) {
      for (ox = 0; ox < out->width; ox++) {
        float m = -INFINITY;

        for (ky = 0; ky < g->kernel[0]; ky++) {
          int64_t iy = (int64_t) oy * g->stride[0] +
              (int64_t) ky * g->dilation[0] - g->padding[0];

          if (iy < 0 || iy >= in->height)
            continue;
          for (kx = 0; kx < g->kernel[1]; kx++) {
            int64_t ix = (int64_t) ox * g->stride[1] +
                (int64_t) kx * g->dilation[1] - g->padding[1];
            float v;

            if (ix < 0 || ix >= in->width)
              continue;
            v = x[iy * in->width + ix];
            if (v > m || isnan (v))
              m = v;
          }
        }
        out->data[c * out->plane + (size_t) oy * out->width + ox] =
            p3dc_convnet_relu (layer->relu, m);
      }
    }
  }
}

static void
upsample_cpu (const P3dcConvLayer * layer, const Slice * in, const Slice * out)
{
  const int bilinear = layer->kind == P3DC_LAYER_UPSAMPLE_BILINEAR;
  uint32_t c, oy, ox;

  for (c = 0; c < layer->out_channels; c++) {
    const float *x = in->data + c * in->plane;

    for (oy = 0; oy < out->height; oy++) {
      for (ox = 0; ox < out->width; ox++) {
        float v;

        if (bilinear) {
          uint32_t y0, y1, x0, x1;
          float ly0, ly1, lx0, lx1;

          p3dc_convnet_bilinear_source (oy, in->height, out->height,
              layer->align_corners, &y0, &y1, &ly0, &ly1);
          p3dc_convnet_bilinear_source (ox, in->width, out->width,
              layer->align_corners, &x0, &x1, &lx0, &lx1);
          v = p3dc_convnet_bilinear (ly0, ly1, lx0, lx1,
              x[(size_t) y0 * in->width + x0], x[(size_t) y0 * in->width + x1],
              x[(size_t) y1 * in->width + x0], x[(size_t) y1 * in->width + x1]);
        } else {
          v = x[(size_t) p3dc_convnet_nearest_source (oy, in->height,
                  out->height) * in->width +
              p3dc_convnet_nearest_source (ox, in->width, out->width)];
        }
        out->data[c * out->plane + (size_t) oy * out->width + ox] =
            p3dc_convnet_relu (layer->relu, v);
      }
    }
  }
}

static void
softmax_cpu (const P3dcConvLayer * layer, const Slice * in, const Slice * out)
{
  const uint32_t channels = layer->in_channels;
  uint32_t c;
  size_t e;

  for (e = 0; e < out->plane; e++) {
    float m = in->data[e], sum = 0.0f;

    for (c = 1; c < channels; c++)
      if (in->data[c * in->plane + e] > m)
        m = in->data[c * in->plane + e];
    for (c = 0; c < channels; c++)
      sum += expf (in->data[c * in->plane + e] - m);
    for (c = 0; c < channels; c++)
      out->data[c * out->plane + e] = p3dc_convnet_relu (layer->relu,
          expf (in->data[c * in->plane + e] - m) / sum);
  }
}

static void
slice_cpu (const P3dcConvLayer * layer, const Slice * in, const Slice * out)
{
  uint32_t c;
  size_t e;

  for (c = 0; c < layer->out_channels; c++)
    for (e = 0; e < out->plane; e++)
      out->data[c * out->plane + e] = p3dc_convnet_relu (layer->relu,
          in->data[c * in->plane + e]);
}

P3dcResult
p3dc_convnet_cpu (const P3dcConvNetDesc * desc, const float *input,
    float *const *buffers)
{
  P3dcResult result;
  uint32_t l, b, n;

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
    P3dcConvGeometry g;

    p3dc_convnet_layer_geometry (layer, &g);
    for (n = 0; n < p3dc_convnet_batch (desc); n++) {
      Slice in = slice_of (desc, buffers, input, layer->input, n,
          layer->input_channel_offset);
      Slice out = slice_of (desc, buffers, input, layer->output, n,
          layer->output_channel_offset);
      Slice in2;

      if (has_input2 (layer))
        in2 = slice_of (desc, buffers, input, layer->input2, n,
            layer->input2_channel_offset);
      switch (layer->kind) {
        case P3DC_CONV_2D:
          conv2d_cpu (layer, &g, &in, &out, layer->residual ? &in2 : NULL);
          break;
        case P3DC_CONV_TRANSPOSED_2D:
          transposed2d_cpu (layer, &g, &in, &out);
          break;
        case P3DC_LAYER_ADD:
          add_cpu (layer, &in, &in2, &out);
          break;
        case P3DC_LAYER_MAX_POOL:
          max_pool_cpu (layer, &g, &in, &out);
          break;
        case P3DC_LAYER_UPSAMPLE_NEAREST:
        case P3DC_LAYER_UPSAMPLE_BILINEAR:
          upsample_cpu (layer, &in, &out);
          break;
        case P3DC_LAYER_SOFTMAX:
          softmax_cpu (layer, &in, &out);
          break;
        case P3DC_LAYER_SLICE:
        default:
          slice_cpu (layer, &in, &out);
          break;
      }
    }
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
  view->batch_stride = (size_t) buf->channels * view->channel_stride;
}
