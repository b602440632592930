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
convnet_test_net_add (ConvnetTestNet * net, P3dTestRng * rng,
    const P3dcConvLayer * layer, gfloat bias_range)
{
  P3dcConvLayer copy = *layer;

  if (layer->kind == P3DC_CONV_2D || layer->kind == P3DC_CONV_TRANSPOSED_2D) {
    P3dcConvGeometry g;
    gsize n, i;
    guint32 fan_in;
    gfloat range, *weight, *bias;

    p3dc_convnet_layer_geometry (layer, &g);
    n = (gsize) layer->in_channels / g.groups * layer->out_channels *
        g.kernel[0] * g.kernel[1];
    fan_in = layer->kind == P3DC_CONV_2D ? layer->in_channels / g.groups *
        g.kernel[0] * g.kernel[1] : layer->in_channels;
    range = sqrtf (6.0f / fan_in);
    weight = g_new (gfloat, n);
    bias = g_new (gfloat, layer->out_channels);
    for (i = 0; i < n; i++)
      weight[i] = p3d_test_rng_uniform (rng, -range, range);
    for (i = 0; i < layer->out_channels; i++)
      bias[i] = p3d_test_rng_uniform (rng, -bias_range, bias_range);
    g_ptr_array_add (net->params, weight);
    g_ptr_array_add (net->params, bias);
    copy.weight = weight;
    copy.bias = bias;
  } else {
    copy.weight = NULL;
    copy.bias = NULL;
  }
  g_array_append_val (net->layers, copy);
}

void
convnet_test_net_add_layer (ConvnetTestNet * net, P3dTestRng * rng,
    P3dcConvKind kind, guint32 input, guint32 output, guint32 offset,
    guint32 out_channels, guint32 kernel, guint32 stride, guint32 padding,
    gboolean relu, gfloat bias_range)
{
  P3dcConvLayer layer;

  memset (&layer, 0, sizeof layer);
  layer.kind = kind;
  layer.in_channels = g_array_index (net->buffers, P3dcConvBufferDesc,
      input).channels;
  layer.out_channels = out_channels;
  layer.kernel = kernel;
  layer.stride = stride;
  layer.padding = padding;
  layer.relu = relu;
  layer.input = input;
  layer.output = output;
  layer.output_channel_offset = offset;
  convnet_test_net_add (net, rng, &layer, bias_range);
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
  n = (gsize) p3dc_convnet_batch (&net->desc) * in->channels * in->height *
      in->width;
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

/* CenterHead's common heads: reg, height, dim, rot, vel (then the
 * heatmap, of the task's classes) */
static const guint32 head_channels[5] = { 2, 1, 3, 2, 2 };

ConvnetTestNet *
convnet_test_net_centerpoint (P3dTestRng * rng, guint32 in_channels,
    guint32 height, guint32 width, const guint32 widths[3],
    const guint32 layer_nums[3], guint32 neck, guint32 head, guint32 tasks,
    ConvnetTestHeads heads)
{
  static const guint32 nuscenes_classes[6] = { 1, 2, 2, 1, 2, 2 };
  const gboolean concat_heads = heads == CONVNET_TEST_HEADS_BY_TASK;
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
  if (heads == CONVNET_TEST_HEADS_MERGED) {
    guint32 classes[64];

    g_assert (tasks <= G_N_ELEMENTS (classes));
    for (t = 0; t < tasks; t++)
      classes[t] = nuscenes_classes[t % 6];
    convnet_test_net_add_merged_heads (net, rng, shared, head, tasks, classes);
    tasks = 0;
  }
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

void
convnet_test_net_add_merged_heads (ConvnetTestNet * net, P3dTestRng * rng,
    guint32 shared, guint32 head, guint32 tasks, const guint32 * classes)
{
  const P3dcConvBufferDesc *in = &g_array_index (net->buffers,
      P3dcConvBufferDesc, shared);
  const guint32 h = in->height, w = in->width, n = tasks * 6;
  const guint32 group_out = P3DC_CONVNET_GROUPED_OUTPUTS;
  guint32 hidden, out, t, i, c;
  P3dcConvLayer layer;
  gfloat *weight, *bias;

  for (t = 0; t < tasks; t++)
    g_assert (classes[t] <= group_out);
  hidden = convnet_test_net_add_buffer (net, n * head, h, w);
  out = convnet_test_net_add_buffer (net, n * group_out, h, w);
  convnet_test_net_add_layer (net, rng, P3DC_CONV_2D, shared, hidden, 0,
      n * head, 3, 1, 1, TRUE, 0.2f);
  memset (&layer, 0, sizeof layer);
  layer.kind = P3DC_CONV_2D;
  layer.in_channels = n * head;
  layer.out_channels = n * group_out;
  layer.kernel = 3;
  layer.stride = 1;
  layer.padding = 1;
  layer.groups = n;
  layer.input = hidden;
  layer.output = out;
  convnet_test_net_add (net, rng, &layer, 0.2f);
  weight = (gfloat *) g_array_index (net->layers, P3dcConvLayer,
      net->layers->len - 1).weight;
  bias = (gfloat *) g_array_index (net->layers, P3dcConvLayer,
      net->layers->len - 1).bias;
  for (t = 0; t < tasks; t++)
    for (i = 0; i < 6; i++) {
      guint32 group = t * 6 + i;
      guint32 used = i == 5 ? classes[t] : head_channels[i];

      for (c = 0; c < group_out; c++) {
        guint32 o = group * group_out + c;

        if (c >= used) {
          memset (weight + (gsize) o * head * 9, 0, head * 9 * sizeof (gfloat));
          bias[o] = 0.0f;
        } else if (i == 5) {
          bias[o] = -2.19f;
        }
      }
    }
  g_array_append_val (net->heatmap_layers, (guint32) {
      net->layers->len - 1}
  );
}

/* ---- random graphs of every kind ------------------------------------ */

static P3dcConvBufferDesc
buffer_get (const ConvnetTestNet * net, guint32 b)
{
  return g_array_index (net->buffers, P3dcConvBufferDesc, b);
}

static guint32
below (P3dTestRng * rng, guint32 n)
{
  return p3d_test_rng_below (rng, n);
}

/* A channel range of @channels: [*offset, *offset + *count), the whole of
 * it half the time. */
static void
random_range (P3dTestRng * rng, guint32 channels, guint32 * offset,
    guint32 * count)
{
  if (channels == 1 || below (rng, 2) == 0) {
    *offset = 0;
    *count = channels;
    return;
  }
  *count = 1 + below (rng, channels);
  *offset = below (rng, channels - *count + 1);
}

/* A convolution of @in into a new buffer (or into @out at @out_offset
 * when @out is nonzero): random kernel, stride, padding, dilation and
 * groups per axis, a channel slice read, a residual when a buffer of the
 * output's size holds enough channels. */
static void
random_conv (ConvnetTestNet * net, P3dTestRng * rng, guint32 input,
    guint32 out, guint32 out_offset, guint32 out_channels, gboolean same,
    guint32 stride)
{
  P3dcConvBufferDesc in = buffer_get (net, input);
  P3dcConvLayer layer;
  guint32 groups, a, b, sizes[2], in_size[2] = { in.height, in.width };

  memset (&layer, 0, sizeof layer);
  layer.kind = P3DC_CONV_2D;
  layer.input = input;
  random_range (rng, in.channels, &layer.input_channel_offset,
      &layer.in_channels);
  /* groups dividing both counts */
  groups = 1;
  for (a = 3; a >= 2; a--)
    if (layer.in_channels % a == 0 && below (rng, 3) == 0) {
      groups = a;
      break;
    }
  if (out_channels == 0)
    out_channels = groups * (1 + below (rng, 3));
  if (out_channels % groups != 0)
    groups = 1;
  layer.groups = groups;
  layer.out_channels = out_channels;
  layer.relu = below (rng, 2);
  for (a = 0; a < 2; a++) {
    guint32 k = 1 + below (rng, 3);
    guint32 d = k > 1 && below (rng, 3) == 0 ? 2 : 1;
    guint32 s = same ? stride : 1 + below (rng, 2);
    guint32 extent = d * (k - 1) + 1;
    guint32 p = same ? extent / 2 : below (rng, extent);

    if (same && extent % 2 == 0) {
      /* an even kernel cannot keep the size: 1 instead */
      k = 1;
      d = 1;
      extent = 1;
      p = 0;
    }
    if (in_size[a] + 2 * p < extent) {
      p = extent - 1;
      if (in_size[a] + 2 * p < extent) {
        k = 1;
        d = 1;
        extent = 1;
        p = 0;
      }
    }
    sizes[a] = (in_size[a] + 2 * p - extent) / s + 1;
    if (a == 0) {
      layer.kernel = k;
      layer.stride = s;
      layer.padding = p;
      layer.dilation = d;
    } else {
      layer.kernel_x = k;
      layer.stride_x = s;
      layer.padding_x = p;
      layer.dilation_x = d;
    }
  }
  if (out == 0)
    out = convnet_test_net_add_buffer (net, out_channels, sizes[0], sizes[1]);
  layer.output = out;
  layer.output_channel_offset = out_offset;
  /* a residual from any earlier buffer of the output's size */
  if (below (rng, 3) == 0) {
    for (b = 0; b < net->buffers->len; b++) {
      P3dcConvBufferDesc r = buffer_get (net, b);

      if (b != out && r.height == sizes[0] && r.width == sizes[1]
          && r.channels >= out_channels) {
        layer.residual = 1;
        layer.input2 = b;
        layer.input2_channel_offset = below (rng,
            r.channels - out_channels + 1);
        break;
      }
    }
  }
  convnet_test_net_add (net, rng, &layer, 0.5f);
}

static guint32
upsample_size (P3dTestRng * rng, guint32 in)
{
  switch (below (rng, 3)) {
    case 0:
      return in * (2 + below (rng, 2));
    case 1:
      return 1 + below (rng, 2 * in + 1);
    default:
      return in;
  }
}

ConvnetTestNet *
convnet_test_net_random_graph (P3dTestRng * rng, guint32 batch)
{
  ConvnetTestNet *net = convnet_test_net_new (1 + below (rng, 8),
      4 + below (rng, 11), 4 + below (rng, 11));
  guint steps = 4 + below (rng, 5), step;

  net->desc.batch = batch ? batch : 1 + below (rng, 3);
  for (step = 0; step < steps; step++) {
    guint32 input = below (rng, net->buffers->len);
    P3dcConvBufferDesc in = buffer_get (net, input);
    P3dcConvLayer layer;
    guint kind = below (rng, 9);

    memset (&layer, 0, sizeof layer);
    layer.input = input;
    layer.relu = below (rng, 2);
    if (kind == 0 || kind == 1) {
      random_conv (net, rng, input, 0, 0, 0, FALSE, 1);
    } else if (kind == 2 && in.height * 3 <= 30 && in.width * 3 <= 30) {
      guint32 sy = 1 + below (rng, 3), sx = 1 + below (rng, 3);

      layer.kind = P3DC_CONV_TRANSPOSED_2D;
      random_range (rng, in.channels, &layer.input_channel_offset,
          &layer.in_channels);
      layer.out_channels = 1 + below (rng, 5);
      layer.kernel = layer.stride = sy;
      if (sx != sy) {
        layer.kernel_x = layer.stride_x = sx;
      }
      layer.output = convnet_test_net_add_buffer (net, layer.out_channels,
          in.height * sy, in.width * sx);
      convnet_test_net_add (net, rng, &layer, 0.5f);
    } else if (kind == 3) {
      /* 2 or 3 slices of one buffer written in a random order by
       * size-keeping convolutions, slices and max pools of one stride */
      guint parts = 2 + below (rng, 2), part;
      guint32 s = 1 + below (rng, 2), widths[3], offsets[3], total = 0, out;
      guint32 first = below (rng, parts);

      for (part = 0; part < parts; part++) {
        widths[part] = 1 + below (rng, 4);
        total += widths[part];
      }
      offsets[0] = 0;
      for (part = 1; part < parts; part++)
        offsets[part] = offsets[part - 1] + widths[part - 1];
      out = convnet_test_net_add_buffer (net, total,
          (in.height - 1) / s + 1, (in.width - 1) / s + 1);
      for (part = 0; part < parts; part++) {
        guint32 which = (first + part) % parts;

        if (s == 1 && widths[which] <= in.channels && below (rng, 3) == 0) {
          P3dcConvLayer copy;

          memset (&copy, 0, sizeof copy);
          copy.kind = P3DC_LAYER_SLICE;
          copy.input = input;
          copy.in_channels = copy.out_channels = widths[which];
          copy.input_channel_offset = below (rng,
              in.channels - widths[which] + 1);
          copy.output = out;
          copy.output_channel_offset = offsets[which];
          copy.relu = below (rng, 2);
          convnet_test_net_add (net, rng, &copy, 0.0f);
        } else {
          random_conv (net, rng, input, out, offsets[which], widths[which],
              TRUE, s);
        }
      }
    } else if (kind == 4) {
      /* an add of two slices of buffers of one size, possibly the same
       * buffer */
      guint32 b, other = input, count;

      for (b = 0; b < net->buffers->len; b++) {
        P3dcConvBufferDesc o = buffer_get (net, (input + 1 + b) %
            net->buffers->len);

        if (o.height == in.height && o.width == in.width) {
          other = (input + 1 + b) % net->buffers->len;
          break;
        }
      }
      count = MIN (in.channels, buffer_get (net, other).channels);
      count = 1 + below (rng, count);
      layer.kind = P3DC_LAYER_ADD;
      layer.in_channels = layer.out_channels = count;
      layer.input_channel_offset = below (rng, in.channels - count + 1);
      layer.input2 = other;
      layer.input2_channel_offset = below (rng,
          buffer_get (net, other).channels - count + 1);
      layer.output = convnet_test_net_add_buffer (net, count, in.height,
          in.width);
      convnet_test_net_add (net, rng, &layer, 0.0f);
    } else if (kind == 5) {
      guint32 a, sizes[2], in_size[2] = { in.height, in.width };

      layer.kind = P3DC_LAYER_MAX_POOL;
      random_range (rng, in.channels, &layer.input_channel_offset,
          &layer.in_channels);
      layer.out_channels = layer.in_channels;
      for (a = 0; a < 2; a++) {
        guint32 k = 1 + below (rng, 3), s = 1 + below (rng, 2);
        guint32 d = k > 1 && below (rng, 4) == 0 ? 2 : 1;
        guint32 p = below (rng, k / 2 + 1), extent = d * (k - 1) + 1;

        if (in_size[a] + 2 * p < extent) {
          k = 1;
          d = 1;
          p = 0;
          extent = 1;
        }
        sizes[a] = (in_size[a] + 2 * p - extent) / s + 1;
        if (a == 0) {
          layer.kernel = k;
          layer.stride = s;
          layer.padding = p;
          layer.dilation = d;
        } else {
          layer.kernel_x = k;
          layer.stride_x = s;
          layer.padding_x = p;
          layer.dilation_x = d;
        }
      }
      layer.output = convnet_test_net_add_buffer (net, layer.out_channels,
          sizes[0], sizes[1]);
      convnet_test_net_add (net, rng, &layer, 0.0f);
    } else if (kind == 6) {
      layer.kind = below (rng, 2) ? P3DC_LAYER_UPSAMPLE_BILINEAR :
          P3DC_LAYER_UPSAMPLE_NEAREST;
      layer.align_corners = below (rng, 2);
      random_range (rng, in.channels, &layer.input_channel_offset,
          &layer.in_channels);
      layer.out_channels = layer.in_channels;
      layer.output = convnet_test_net_add_buffer (net, layer.out_channels,
          MIN (upsample_size (rng, in.height), 30),
          MIN (upsample_size (rng, in.width), 30));
      convnet_test_net_add (net, rng, &layer, 0.0f);
    } else if (kind == 7) {
      layer.kind = P3DC_LAYER_SOFTMAX;
      random_range (rng, in.channels, &layer.input_channel_offset,
          &layer.in_channels);
      layer.out_channels = layer.in_channels;
      layer.relu = 0;
      layer.output = convnet_test_net_add_buffer (net, layer.out_channels,
          in.height, in.width);
      convnet_test_net_add (net, rng, &layer, 0.0f);
    } else {
      layer.kind = P3DC_LAYER_SLICE;
      random_range (rng, in.channels, &layer.input_channel_offset,
          &layer.in_channels);
      layer.out_channels = layer.in_channels;
      layer.output = convnet_test_net_add_buffer (net, layer.out_channels,
          in.height, in.width);
      convnet_test_net_add (net, rng, &layer, 0.0f);
    }
  }
  convnet_test_net_finish (net, rng);
  return net;
}

guint32
convnet_test_layer_terms (const P3dcConvLayer * layer)
{
  P3dcConvGeometry g;

  p3dc_convnet_layer_geometry (layer, &g);
  switch (layer->kind) {
    case P3DC_CONV_2D:
      return layer->in_channels / g.groups * g.kernel[0] * g.kernel[1] +
          (layer->residual ? 1 : 0);
    case P3DC_CONV_TRANSPOSED_2D:
      return layer->in_channels;
    case P3DC_LAYER_SOFTMAX:
      return layer->in_channels;
    case P3DC_LAYER_UPSAMPLE_BILINEAR:
      return 4;
    case P3DC_LAYER_ADD:
      return 2;
    default:
      return 1;
  }
}

/* ---- the oracle ------------------------------------------------------- */

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

/* One batch item's channel slice of an oracle buffer and its magnitude. */
typedef struct
{
  gdouble *x, *m;
  guint32 height, width;
  gsize plane;
} Part;

static Part
part_of (const ConvnetTestNet * net, gdouble ** out, gdouble ** mag,
    guint32 b, guint32 n, guint32 offset)
{
  const P3dcConvBufferDesc *buf = &net->desc.buffers[b];
  Part p;
  gsize first;

  p.height = buf->height;
  p.width = buf->width;
  p.plane = (gsize) buf->height * buf->width;
  first = ((gsize) n * buf->channels + offset) * p.plane;
  p.x = out[b] + first;
  p.m = mag[b] + first;
  return p;
}

static gdouble
relu64 (gboolean relu, gdouble v)
{
  return relu && !(v > 0.0) ? 0.0 : v;
}

/* A convolution by scatter: each input tap adds its product to the
 * outputs it reaches (the reference gathers instead), and |w| times the
 * input's own magnitude to the outputs' magnitudes.  The magnitude is
 * carried through the net, not taken from this layer's products alone: an
 * error e on an input reaches the output as |w| e, so when each input's
 * error is at most k u times its magnitude, the carried error is at most
 * k u times the output's magnitude, even where the output's own terms
 * cancel. */
static void
oracle_conv (const P3dcConvLayer * layer, const Part * in, const Part * out,
    const Part * residual)
{
  P3dcConvGeometry g;
  gsize plane = out->plane;
  gdouble *sum = g_new0 (gdouble, layer->out_channels * plane);
  gdouble *mag = g_new0 (gdouble, layer->out_channels * plane);
  guint32 in_pg, out_pg, i, iy, ix, o, ky, kx;
  gsize e;

  p3dc_convnet_layer_geometry (layer, &g);
  in_pg = layer->in_channels / g.groups;
  out_pg = layer->out_channels / g.groups;
  for (i = 0; i < layer->in_channels; i++) {
    guint32 group = i / in_pg;
    guint32 first_o = layer->kind == P3DC_CONV_2D ? group * out_pg : 0;
    guint32 last_o = layer->kind == P3DC_CONV_2D ? first_o + out_pg :
        layer->out_channels;

    for (iy = 0; iy < in->height; iy++) {
      for (ix = 0; ix < in->width; ix++) {
        gsize at_in = i * in->plane + (gsize) iy * in->width + ix;
        gdouble x = in->x[at_in], m = in->m[at_in];

        for (o = first_o; o < last_o; o++) {
          for (ky = 0; ky < g.kernel[0]; ky++) {
            for (kx = 0; kx < g.kernel[1]; kx++) {
              gint64 oy, ox;
              gdouble w;
              gsize at;

              if (layer->kind == P3DC_CONV_TRANSPOSED_2D) {
                w = layer->weight[(((gsize) i * layer->out_channels + o) *
                        g.kernel[0] + ky) * g.kernel[1] + kx];
                oy = (gint64) iy *g.stride[0] + ky;
                ox = (gint64) ix *g.stride[1] + kx;
              } else {
                gint64 ry = (gint64) iy + g.padding[0] -
                    (gint64) ky * g.dilation[0];
                gint64 rx = (gint64) ix + g.padding[1] -
                    (gint64) kx * g.dilation[1];

                w = layer->weight[(((gsize) o * in_pg + i % in_pg) *
                        g.kernel[0] + ky) * g.kernel[1] + kx];
                if (ry < 0 || rx < 0 || ry % g.stride[0] != 0
                    || rx % g.stride[1] != 0)
                  continue;
                oy = ry / g.stride[0];
                ox = rx / g.stride[1];
                if (oy >= out->height || ox >= out->width)
                  continue;
              }
              at = o * plane + oy * out->width + ox;
              sum[at] += w * x;
              mag[at] += fabs (w) * m;
            }
          }
        }
      }
    }
  }
  for (o = 0; o < layer->out_channels; o++) {
    for (e = 0; e < plane; e++) {
      gdouble v = sum[o * plane + e] + layer->bias[o];
      gdouble m = mag[o * plane + e] + fabs (layer->bias[o]);

      if (residual != NULL) {
        v += residual->x[o * residual->plane + e];
        m += residual->m[o * residual->plane + e];
      }
      out->x[o * plane + e] = relu64 (layer->relu, v);
      out->m[o * plane + e] = m;
    }
  }
  g_free (sum);
  g_free (mag);
}

/* The upsampling rules (F.interpolate's, in float) written here again,
 * apart from the library's: the source cells of output @o. */
static guint32
oracle_nearest (guint32 o, guint32 in, guint32 out)
{
  gfloat scale = (gfloat) in / (gfloat) out;
  gfloat s = floorf ((gfloat) o * scale);

  return MIN ((guint32) s, in - 1);
}

static void
oracle_bilinear_taps (guint32 o, guint32 in, guint32 out, gboolean align,
    guint32 * i0, guint32 * i1, gdouble * l0, gdouble * l1)
{
  gfloat r, lambda;

  if (align) {
    gfloat scale = out > 1 ? (gfloat) (in - 1) / (gfloat) (out - 1) : 0.0f;

    r = scale * (gfloat) o;
  } else {
    gfloat scale = (gfloat) in / (gfloat) out;

    r = MAX (scale * ((gfloat) o + 0.5f) - 0.5f, 0.0f);
  }
  *i0 = MIN ((guint32) r, in - 1);
  *i1 = *i0 < in - 1 ? *i0 + 1 : *i0;
  lambda = r - (gfloat) * i0;
  *l1 = lambda;
  *l0 = 1.0f - lambda;
}

static void
oracle_other (const P3dcConvLayer * layer, const Part * in, const Part * in2,
    const Part * out)
{
  P3dcConvGeometry g;
  guint32 c, oy, ox, ky, kx;

  p3dc_convnet_layer_geometry (layer, &g);
  if (layer->kind == P3DC_LAYER_SOFTMAX) {
    gsize e;

    for (e = 0; e < out->plane; e++) {
      gdouble m = -G_MAXDOUBLE, mm = 0.0, sum = 0.0;

      for (c = 0; c < layer->in_channels; c++) {
        m = MAX (m, in->x[c * in->plane + e]);
        mm = MAX (mm, in->m[c * in->plane + e]);
      }
      for (c = 0; c < layer->in_channels; c++)
        sum += exp (in->x[c * in->plane + e] - m);
      for (c = 0; c < layer->in_channels; c++) {
        out->x[c * out->plane + e] = exp (in->x[c * in->plane + e] - m) / sum;
        out->m[c * out->plane + e] = 1.0 + mm;
      }
    }
    return;
  }
  for (c = 0; c < layer->out_channels; c++) {
    const gdouble *x = in->x + c * in->plane, *xm = in->m + c * in->plane;

    for (oy = 0; oy < out->height; oy++) {
      for (ox = 0; ox < out->width; ox++) {
        gsize at = c * out->plane + (gsize) oy * out->width + ox;
        gdouble v = 0.0, m = 0.0;

        switch (layer->kind) {
          case P3DC_LAYER_ADD:
            v = x[at - c * out->plane] + in2->x[c * in2->plane +
                (gsize) oy * out->width + ox];
            m = xm[at - c * out->plane] + in2->m[c * in2->plane +
                (gsize) oy * out->width + ox];
            break;
          case P3DC_LAYER_MAX_POOL:
            v = -G_MAXDOUBLE;
            for (ky = 0; ky < g.kernel[0]; ky++) {
              for (kx = 0; kx < g.kernel[1]; kx++) {
                gint64 iy = (gint64) oy * g.stride[0] +
                    (gint64) ky * g.dilation[0] - g.padding[0];
                gint64 ix = (gint64) ox * g.stride[1] +
                    (gint64) kx * g.dilation[1] - g.padding[1];

                if (iy < 0 || ix < 0 || iy >= in->height || ix >= in->width)
                  continue;
                v = MAX (v, x[iy * in->width + ix]);
                m = MAX (m, xm[iy * in->width + ix]);
              }
            }
            break;
          case P3DC_LAYER_UPSAMPLE_NEAREST:{
            gsize src = (gsize) oracle_nearest (oy, in->height, out->height) *
                in->width + oracle_nearest (ox, in->width, out->width);

            v = x[src];
            m = xm[src];
            break;
          }
          case P3DC_LAYER_UPSAMPLE_BILINEAR:{
            guint32 y[2], xx[2], a, b;
            gdouble ly[2], lx[2];

            oracle_bilinear_taps (oy, in->height, out->height,
                layer->align_corners, &y[0], &y[1], &ly[0], &ly[1]);
            oracle_bilinear_taps (ox, in->width, out->width,
                layer->align_corners, &xx[0], &xx[1], &lx[0], &lx[1]);
            for (a = 0; a < 2; a++)
              for (b = 0; b < 2; b++) {
                gsize src = (gsize) y[a] * in->width + xx[b];

                v += ly[a] * lx[b] * x[src];
                m += fabs (ly[a] * lx[b]) * xm[src];
              }
            break;
          }
          default:             /* P3DC_LAYER_SLICE */
            v = x[(gsize) oy * in->width + ox];
            m = xm[(gsize) oy * in->width + ox];
            break;
        }
        out->x[at] = relu64 (layer->relu, v);
        out->m[at] = m;
      }
    }
  }
}

gdouble **
convnet_test_oracle (const ConvnetTestNet * net, gdouble *** magnitude)
{
  gdouble **out = buffers_new (net);
  gdouble **mag = buffers_new (net);
  gsize n = p3dc_convnet_buffer_elements (&net->desc, 0), e;
  guint32 l, item;

  for (e = 0; e < n; e++) {
    out[0][e] = net->input[e];
    mag[0][e] = fabs (net->input[e]);
  }
  for (l = 0; l < net->desc.n_layers; l++) {
    const P3dcConvLayer *layer = &net->desc.layers[l];

    for (item = 0; item < p3dc_convnet_batch (&net->desc); item++) {
      Part in = part_of (net, out, mag, layer->input, item,
          layer->input_channel_offset);
      Part o = part_of (net, out, mag, layer->output, item,
          layer->output_channel_offset);
      Part in2 = in;

      if (layer->kind == P3DC_LAYER_ADD || (layer->kind == P3DC_CONV_2D
              && layer->residual))
        in2 = part_of (net, out, mag, layer->input2, item,
            layer->input2_channel_offset);
      if (layer->kind == P3DC_CONV_2D || layer->kind == P3DC_CONV_TRANSPOSED_2D)
        oracle_conv (layer, &in, &o, layer->kind == P3DC_CONV_2D
            && layer->residual ? &in2 : NULL);
      else
        oracle_other (layer, &in, &in2, &o);
    }
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
    guint from = depth[layer->input];

    if (layer->kind == P3DC_LAYER_ADD || (layer->kind == P3DC_CONV_2D
            && layer->residual))
      from = MAX (from, depth[layer->input2]);
    depth[layer->output] = MAX (depth[layer->output], from + 1);
  }
  return depth;
}

gdouble
convnet_test_view_read_item (const P3dcMapView * view, guint32 n, guint32 c,
    guint32 y, guint32 x)
{
  gsize at = n * view->batch_stride + c * view->channel_stride +
      y * view->row_stride + x * view->column_stride;

  if (view->half)
    return p3dc_half_to_float (((const guint16 *) view->data)[at]);
  return ((const gfloat *) view->data)[at];
}

gdouble
convnet_test_view_read (const P3dcMapView * view, guint32 c, guint32 y,
    guint32 x)
{
  return convnet_test_view_read_item (view, 0, c, y, x);
}

gdouble
convnet_test_compare (const ConvnetTestNet * net, guint32 b,
    const P3dcMapView * view, const gdouble * expect,
    const gdouble * magnitude, gdouble rel, gdouble abs_tol, const gchar * what)
{
  const P3dcConvBufferDesc *buf = &net->desc.buffers[b];
  gdouble worst = 0.0;
  guint32 n, c, y, x;

  for (n = 0; n < p3dc_convnet_batch (&net->desc); n++) {
    for (c = 0; c < buf->channels; c++) {
      for (y = 0; y < buf->height; y++) {
        for (x = 0; x < buf->width; x++) {
          gsize e = (((gsize) n * buf->channels + c) * buf->height + y) *
              buf->width + x;
          gdouble got = convnet_test_view_read_item (view, n, c, y, x);
          gdouble diff = fabs (got - expect[e]);
          gdouble scale = magnitude[e] > 0.0 ? magnitude[e] : 1.0;

          fail_unless (diff <= rel * magnitude[e] + abs_tol,
              "%s: buffer %u (%ux%ux%u) at n %u c %u y %u x %u: %.9g, "
              "expected %.9g (magnitude %.6g, allowed %.3g)", what, b,
              buf->channels, buf->height, buf->width, n, c, y, x, got,
              expect[e], magnitude[e], rel * magnitude[e] + abs_tol);
          worst = MAX (worst, diff / scale);
        }
      }
    }
  }
  return worst;
}
