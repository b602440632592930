/* Random nets, the float64 oracle and the comparisons of the convnet tests
 * (see p3dtest-convnet.h). */
#include <math.h>
#include <string.h>

#include "p3dtest-convnet.h"
#include "half.h"

ConvnetTestNet *
convnet_test_net_new (guint32 channels, guint32 height, guint32 width)
{
  ConvnetTestNet *net = g_new0 (ConvnetTestNet, 1);

  net->buffers = g_array_new (FALSE, TRUE, sizeof (P3dcConvBufferDesc));
  net->layers = g_array_new (FALSE, TRUE, sizeof (P3dcConvLayer));
  net->params = g_ptr_array_new_with_free_func (g_free);
  net->heatmap_layers = g_array_new (FALSE, FALSE, sizeof (guint32));
  convnet_test_net_add_buffer (net, channels, height, width);
  return net;
}

void
convnet_test_net_free (ConvnetTestNet * net)
{
  g_array_free (net->buffers, TRUE);
  g_array_free (net->layers, TRUE);
  g_ptr_array_free (net->params, TRUE);
  g_array_free (net->heatmap_layers, TRUE);
  g_free (net->input);
  g_free (net);
}

guint32
convnet_test_net_add_buffer (ConvnetTestNet * net, guint32 channels,
    guint32 height, guint32 width)
{
  P3dcConvBufferDesc buf = { channels, height, width };

  g_array_append_val (net->buffers, buf);
  return net->buffers->len - 1;
}

void
convnet_test_net_add_layer (ConvnetTestNet * net, P3dTestRng * rng,
    P3dcConvKind kind, guint32 input, guint32 output, guint32 offset,
    guint32 out_channels, guint32 kernel, guint32 stride, guint32 padding,
    gboolean relu, gfloat bias_range)
{
  P3dcConvLayer layer;
  guint32 in_channels = g_array_index (net->buffers, P3dcConvBufferDesc,
      input).channels;
  gsize n = (gsize) in_channels * out_channels * kernel * kernel, i;
  guint32 fan_in = kind == P3DC_CONV_2D ? in_channels * kernel * kernel :
      in_channels;
  gfloat range = sqrtf (6.0f / fan_in);
  gfloat *weight = g_new (gfloat, n);
  gfloat *bias = g_new (gfloat, out_channels);

  for (i = 0; i < n; i++)
    weight[i] = p3d_test_rng_uniform (rng, -range, range);
  for (i = 0; i < out_channels; i++)
    bias[i] = p3d_test_rng_uniform (rng, -bias_range, bias_range);
  g_ptr_array_add (net->params, weight);
  g_ptr_array_add (net->params, bias);
  memset (&layer, 0, sizeof layer);
  layer.kind = kind;
  layer.in_channels = in_channels;
  layer.out_channels = out_channels;
  layer.kernel = kernel;
  layer.stride = stride;
  layer.padding = padding;
  layer.relu = relu;
  layer.weight = weight;
  layer.bias = bias;
  layer.input = input;
  layer.output = output;
  layer.output_channel_offset = offset;
  g_array_append_val (net->layers, layer);
}

void
convnet_test_net_finish (ConvnetTestNet * net, P3dTestRng * rng)
{
  const P3dcConvBufferDesc *in;
  gsize n, i;

  net->desc.n_buffers = net->buffers->len;
  net->desc.buffers = (const P3dcConvBufferDesc *) net->buffers->data;
  net->desc.n_layers = net->layers->len;
  net->desc.layers = (const P3dcConvLayer *) net->layers->data;
  in = &net->desc.buffers[0];
  n = (gsize) in->channels * in->height * in->width;
  g_free (net->input);
  net->input = g_new (gfloat, n);
  for (i = 0; i < n; i++)
    net->input[i] = p3d_test_rng_uniform (rng, -1.0f, 1.0f);
}

static guint32
conv_size (guint32 in, guint32 k, guint32 s, guint32 p)
{
  return (in + 2 * p - k) / s + 1;
}

ConvnetTestNet *
convnet_test_net_random (P3dTestRng * rng)
{
  ConvnetTestNet *net = convnet_test_net_new (1 +
      p3d_test_rng_below (rng, 6), 3 + p3d_test_rng_below (rng, 10),
      3 + p3d_test_rng_below (rng, 10));
  guint steps = 3 + p3d_test_rng_below (rng, 4), step;

  for (step = 0; step < steps; step++) {
    guint32 input = p3d_test_rng_below (rng, net->buffers->len);
    P3dcConvBufferDesc in = g_array_index (net->buffers, P3dcConvBufferDesc,
        input);
    guint kind = p3d_test_rng_below (rng, 3);
    gboolean relu = p3d_test_rng_below (rng, 2);
    guint32 out_channels = 1 + p3d_test_rng_below (rng, 6);

    if (kind == 1 && in.height * 3 <= 24 && in.width * 3 <= 24) {
      guint32 s = 2 + p3d_test_rng_below (rng, 2);
      guint32 out = convnet_test_net_add_buffer (net, out_channels,
          in.height * s, in.width * s);

      convnet_test_net_add_layer (net, rng, P3DC_CONV_TRANSPOSED_2D, input,
          out, 0, out_channels, s, s, 0, relu, 0.5f);
    } else if (kind == 2) {
      /* 2 or 3 slices of one buffer, written in a random order, from 1x1
       * and 3x3 "same" convolutions of one stride */
      guint parts = 2 + p3d_test_rng_below (rng, 2), part;
      guint32 s = 1 + p3d_test_rng_below (rng, 2);
      guint32 widths[3], offsets[3], total = 0, out;
      guint32 first = p3d_test_rng_below (rng, parts);

      for (part = 0; part < parts; part++) {
        widths[part] = 1 + p3d_test_rng_below (rng, 4);
        total += widths[part];
      }
      offsets[0] = 0;
      for (part = 1; part < parts; part++)
        offsets[part] = offsets[part - 1] + widths[part - 1];
      out = convnet_test_net_add_buffer (net, total,
          conv_size (in.height, 1, s, 0), conv_size (in.width, 1, s, 0));
      for (part = 0; part < parts; part++) {
        guint32 which = (first + part) % parts;
        gboolean three = p3d_test_rng_below (rng, 2);

        convnet_test_net_add_layer (net, rng, P3DC_CONV_2D, input, out,
            offsets[which], widths[which], three ? 3 : 1, s, three ? 1 : 0,
            p3d_test_rng_below (rng, 2), 0.5f);
      }
    } else {
      guint32 k = 1 + p3d_test_rng_below (rng, 3);
      guint32 s = 1 + p3d_test_rng_below (rng, 2);
      guint32 p = p3d_test_rng_below (rng, k);
      guint32 out;

      if (in.height + 2 * p < k || in.width + 2 * p < k)
        p = k - 1;
      out = convnet_test_net_add_buffer (net, out_channels,
          conv_size (in.height, k, s, p), conv_size (in.width, k, s, p));
      convnet_test_net_add_layer (net, rng, P3DC_CONV_2D, input, out, 0,
          out_channels, k, s, p, relu, 0.5f);
    }
  }
  convnet_test_net_finish (net, rng);
  return net;
}

ConvnetTestNet *
convnet_test_net_centerpoint (P3dTestRng * rng, guint32 in_channels,
    guint32 height, guint32 width, const guint32 widths[3],
    const guint32 layer_nums[3], guint32 neck, guint32 head, guint32 tasks,
    gboolean concat_heads)
{
  static const guint32 head_channels[5] = { 2, 1, 3, 2, 2 };
  static const guint32 nuscenes_classes[6] = { 1, 2, 2, 1, 2, 2 };
  ConvnetTestNet *net = convnet_test_net_new (in_channels, height, width);
  guint32 stage_out[3], previous = 0, h = height, w = width, i, n, t;
  guint32 concat, shared;

  for (i = 0; i < 3; i++) {
    h = conv_size (h, 3, 2, 1);
    w = conv_size (w, 3, 2, 1);
    for (n = 0; n <= layer_nums[i]; n++) {
      guint32 out = convnet_test_net_add_buffer (net, widths[i], h, w);

      convnet_test_net_add_layer (net, rng, P3DC_CONV_2D, previous, out, 0,
          widths[i], 3, n == 0 ? 2 : 1, 1, TRUE, 0.2f);
      previous = out;
    }
    stage_out[i] = previous;
  }
  /* the neck at stage 1's size: strides 0.5, 1, 2 */
  {
    const P3dcConvBufferDesc *mid = &g_array_index (net->buffers,
        P3dcConvBufferDesc, stage_out[1]);

    h = mid->height;
    w = mid->width;
  }
  concat = convnet_test_net_add_buffer (net, 3 * neck, h, w);
  convnet_test_net_add_layer (net, rng, P3DC_CONV_2D, stage_out[0], concat,
      0, neck, 2, 2, 0, TRUE, 0.2f);
  convnet_test_net_add_layer (net, rng, P3DC_CONV_2D, stage_out[1], concat,
      neck, neck, 1, 1, 0, TRUE, 0.2f);
  convnet_test_net_add_layer (net, rng, P3DC_CONV_TRANSPOSED_2D, stage_out[2],
      concat, 2 * neck, neck, 2, 2, 0, TRUE, 0.2f);
  shared = convnet_test_net_add_buffer (net, head, h, w);
  convnet_test_net_add_layer (net, rng, P3DC_CONV_2D, concat, shared, 0, head,
      3, 1, 1, TRUE, 0.2f);
  for (t = 0; t < tasks; t++) {
    guint32 classes = nuscenes_classes[t % 6], channels[6], total = 0;
    guint32 task_out = 0;

    memcpy (channels, head_channels, sizeof head_channels);
    channels[5] = classes;
    for (i = 0; i < 6; i++)
      total += channels[i];
    if (concat_heads)
      task_out = convnet_test_net_add_buffer (net, total, h, w);
    for (i = 0, n = 0; i < 6; n += channels[i], i++) {
      guint32 hidden = convnet_test_net_add_buffer (net, head, h, w);
      guint32 out = concat_heads ? task_out :
          convnet_test_net_add_buffer (net, channels[i], h, w);

      convnet_test_net_add_layer (net, rng, P3DC_CONV_2D, shared, hidden, 0,
          head, 3, 1, 1, TRUE, 0.2f);
      /* the heatmap's bias as CenterPoint initializes it (-2.19) */
      convnet_test_net_add_layer (net, rng, P3DC_CONV_2D, hidden, out,
          concat_heads ? n : 0, channels[i], 3, 1, 1, FALSE,
          i == 5 ? 0.0f : 0.2f);
      if (i == 5) {
        guint32 last = net->layers->len - 1, c;
        gfloat *bias = (gfloat *) g_array_index (net->layers, P3dcConvLayer,
            last).bias;

        for (c = 0; c < classes; c++)
          bias[c] = -2.19f;
        g_array_append_val (net->heatmap_layers, last);
      }
    }
  }
  convnet_test_net_finish (net, rng);
  return net;
}

static gdouble **
buffers_new (const ConvnetTestNet * net)
{
  gdouble **out = g_new0 (gdouble *, net->desc.n_buffers);
  guint32 b;

  for (b = 0; b < net->desc.n_buffers; b++)
    out[b] = g_new0 (gdouble, p3dc_convnet_buffer_elements (&net->desc, b));
  return out;
}

void
convnet_test_buffers_free (const ConvnetTestNet * net, gdouble ** buffers)
{
  guint32 b;

  for (b = 0; b < net->desc.n_buffers; b++)
    g_free (buffers[b]);
  g_free (buffers);
}

/* One layer by scatter: each input tap adds its product to the outputs it
 * reaches (the reference gathers instead), and |w| times the input's own
 * magnitude to the outputs' magnitudes.  The magnitude is carried through
 * the net, not taken from this layer's products alone: an error e on an
 * input reaches the output as |w| e, so when each input's error is at most
 * k u times its magnitude, the carried error is at most k u times the
 * output's magnitude, even where the output's own terms cancel. */
static void
oracle_layer (const P3dcConvLayer * layer, const P3dcConvBufferDesc * in_desc,
    const gdouble * in, const gdouble * in_magnitude,
    const P3dcConvBufferDesc * out_desc, gdouble * out, gdouble * magnitude)
{
  const guint32 k = layer->kernel, s = layer->stride;
  const gsize out_plane = (gsize) out_desc->height * out_desc->width;
  const gsize in_plane = (gsize) in_desc->height * in_desc->width;
  gdouble *sum = g_new0 (gdouble, layer->out_channels * out_plane);
  gdouble *mag = g_new0 (gdouble, layer->out_channels * out_plane);
  guint32 o, i, iy, ix, ky, kx;
  gsize e;

  for (i = 0; i < layer->in_channels; i++) {
    for (iy = 0; iy < in_desc->height; iy++) {
      for (ix = 0; ix < in_desc->width; ix++) {
        gsize at_in = i * in_plane + (gsize) iy * in_desc->width + ix;
        gdouble x = in[at_in], m = in_magnitude[at_in];

        for (o = 0; o < layer->out_channels; o++) {
          for (ky = 0; ky < k; ky++) {
            for (kx = 0; kx < k; kx++) {
              gint64 oy, ox;
              gdouble w;
              gsize at;

              if (layer->kind == P3DC_CONV_TRANSPOSED_2D) {
                w = layer->weight[(((gsize) i * layer->out_channels + o) *
                        k + ky) * k + kx];
                oy = (gint64) iy *s + ky;
                ox = (gint64) ix *s + kx;
              } else {
                gint64 ry = (gint64) iy + layer->padding - ky;
                gint64 rx = (gint64) ix + layer->padding - kx;

                w = layer->weight[(((gsize) o * layer->in_channels + i) *
                        k + ky) * k + kx];
                if (ry < 0 || rx < 0 || ry % s != 0 || rx % s != 0)
                  continue;
                oy = ry / s;
                ox = rx / s;
                if (oy >= out_desc->height || ox >= out_desc->width)
                  continue;
              }
              at = o * out_plane + oy * out_desc->width + ox;
              sum[at] += w * x;
              mag[at] += fabs (w) * m;
            }
          }
        }
      }
    }
  }
  for (o = 0; o < layer->out_channels; o++) {
    gsize first = (layer->output_channel_offset + (gsize) o) * out_plane;

    for (e = 0; e < out_plane; e++) {
      gdouble v = sum[o * out_plane + e] + layer->bias[o];

      out[first + e] = layer->relu && v < 0.0 ? 0.0 : v;
      magnitude[first + e] = mag[o * out_plane + e] + fabs (layer->bias[o]);
    }
  }
  g_free (sum);
  g_free (mag);
}

gdouble **
convnet_test_oracle (const ConvnetTestNet * net, gdouble *** magnitude)
{
  gdouble **out = buffers_new (net);
  gdouble **mag = buffers_new (net);
  gsize n = p3dc_convnet_buffer_elements (&net->desc, 0), e;
  guint32 l;

  for (e = 0; e < n; e++) {
    out[0][e] = net->input[e];
    mag[0][e] = fabs (net->input[e]);
  }
  for (l = 0; l < net->desc.n_layers; l++) {
    const P3dcConvLayer *layer = &net->desc.layers[l];

    oracle_layer (layer, &net->desc.buffers[layer->input], out[layer->input],
        mag[layer->input], &net->desc.buffers[layer->output],
        out[layer->output], mag[layer->output]);
  }
  if (magnitude != NULL)
    *magnitude = mag;
  else
    convnet_test_buffers_free (net, mag);
  return out;
}

guint *
convnet_test_depths (const ConvnetTestNet * net)
{
  guint *depth = g_new0 (guint, net->desc.n_buffers);
  guint32 l;

  for (l = 0; l < net->desc.n_layers; l++) {
    const P3dcConvLayer *layer = &net->desc.layers[l];

    depth[layer->output] = MAX (depth[layer->output], depth[layer->input] + 1);
  }
  return depth;
}

gdouble
convnet_test_view_read (const P3dcMapView * view, guint32 c, guint32 y,
    guint32 x)
{
  gsize at = c * view->channel_stride + y * view->row_stride +
      x * view->column_stride;

  if (view->half)
    return p3dc_half_to_float (((const guint16 *) view->data)[at]);
  return ((const gfloat *) view->data)[at];
}

gdouble
convnet_test_compare (const ConvnetTestNet * net, guint32 b,
    const P3dcMapView * view, const gdouble * expect,
    const gdouble * magnitude, gdouble rel, gdouble abs_tol, const gchar * what)
{
  const P3dcConvBufferDesc *buf = &net->desc.buffers[b];
  gdouble worst = 0.0;
  guint32 c, y, x;

  for (c = 0; c < buf->channels; c++) {
    for (y = 0; y < buf->height; y++) {
      for (x = 0; x < buf->width; x++) {
        gsize e = ((gsize) c * buf->height + y) * buf->width + x;
        gdouble got = convnet_test_view_read (view, c, y, x);
        gdouble diff = fabs (got - expect[e]);
        gdouble scale = magnitude[e] > 0.0 ? magnitude[e] : 1.0;

        fail_unless (diff <= rel * magnitude[e] + abs_tol,
            "%s: buffer %u (%ux%ux%u) at c %u y %u x %u: %.9g, expected "
            "%.9g (magnitude %.6g, allowed %.3g)", what, b, buf->channels,
            buf->height, buf->width, c, y, x, got, expect[e], magnitude[e],
            rel * magnitude[e] + abs_tol);
        worst = MAX (worst, diff / scale);
      }
    }
  }
  return worst;
}
