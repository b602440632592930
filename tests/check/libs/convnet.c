/* The layer graph's C reference against hand-worked cases (a padded 3x3
 * convolution with ReLU, a strided two-channel one, a transposed one, a
 * concatenation into channel slices; grouped, dilated, non-square and
 * residual convolutions; a non-square transposed one; add, max pool,
 * nearest and bilinear upsampling with both corner rules, softmax, slices,
 * a batch), against the float64 oracle on random nets and random graphs of
 * every kind, and the checks of the description; plus what the CUDA entry
 * points say where cuDNN cannot be had. */
#include <math.h>
#include <string.h>
#include <gst/check/gstcheck.h>

#include "convnet.h"
#include "p3dtest-convnet.h"
#include "p3dtest.h"

static void
run_reference (const P3dcConvNetDesc * desc, const float *input,
    guint32 buffer, const float *expect, gsize n)
{
  float **buffers = p3dc_convnet_cpu_buffers_new (desc);
  char message[256];
  gsize i;

  fail_unless (buffers != NULL, "%s", (p3dc_convnet_validate (desc, message,
              sizeof message), message));
  fail_unless_equals_int (p3dc_convnet_cpu (desc, input, buffers), P3DC_OK);
  fail_unless_equals_int (p3dc_convnet_buffer_elements (desc, buffer), n);
  for (i = 0; i < n; i++)
    fail_unless (buffers[buffer][i] == expect[i],
        "element %" G_GSIZE_FORMAT ": %.9g, expected %.9g", i,
        buffers[buffer][i], expect[i]);
  p3dc_convnet_cpu_buffers_free (desc, buffers);
}

/* A one-layer net from @input's shape to @output's. */
static P3dcConvNetDesc
one_layer (P3dcConvBufferDesc * buffers, P3dcConvLayer * layer, guint32 batch)
{
  P3dcConvNetDesc desc = { 2, buffers, 1, layer, batch };

  layer->input = 0;
  layer->output = 1;
  return desc;
}

GST_START_TEST (test_padded_3x3_relu)
{
  /* cross-correlation (not flipped): the 2 at the top left weighs the
   * input one row up and one column left */
  static const float input[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
  static const float weight[9] = { 2, 1, 0, 1, 1, 1, 0, 1, 0 };
  static const float bias[1] = { -10 };
  /* before the bias: 7 11 11 / 17 27 27 / 19 37 33 */
  static const float expect[9] = { 0, 1, 1, 7, 17, 17, 9, 27, 23 };
  const P3dcConvBufferDesc buffers[2] = { {1, 3, 3}, {1, 3, 3} };
  P3dcConvLayer layer = { P3DC_CONV_2D, 1, 1, 3, 1, 1, 1, weight, bias, 0, 1,
    0
  };
  P3dcConvNetDesc desc = { 2, buffers, 1, &layer };
  static const float expect_linear[9] = { -3, 1, 1, 7, 17, 17, 9, 27, 23 };

  run_reference (&desc, input, 1, expect, 9);
  layer.relu = 0;
  run_reference (&desc, input, 1, expect_linear, 9);
}

GST_END_TEST;

GST_START_TEST (test_strided_two_channels)
{
  float input[32];
  float weight[18];
  static const float bias[1] = { 0 };
  /* channel 0: 0..15 under a ones kernel; channel 1: ones under 0.5 per
   * tap (in-bounds taps 4, 6, 6, 9) */
  static const float expect[4] = { 12, 27, 54, 94.5f };
  const P3dcConvBufferDesc buffers[2] = { {2, 4, 4}, {1, 2, 2} };
  const P3dcConvLayer layer = { P3DC_CONV_2D, 2, 1, 3, 2, 1, 0, weight, bias,
    0, 1, 0
  };
  const P3dcConvNetDesc desc = { 2, buffers, 1, &layer };
  guint i;

  for (i = 0; i < 16; i++) {
    input[i] = i;
    input[16 + i] = 1;
  }
  for (i = 0; i < 9; i++) {
    weight[i] = 1;
    weight[9 + i] = 0.5f;
  }
  run_reference (&desc, input, 1, expect, 4);
}

GST_END_TEST;

GST_START_TEST (test_transposed)
{
  /* channels [1 2] and [3 4]; weight [in][out][ky][kx] */
  static const float input[4] = { 1, 2, 3, 4 };
  static const float weight[8] = { 1, 2, 3, 4, 0, 1, -1, 0 };
  static const float bias[1] = { 0.25f };
  static const float expect[8] = { 1.25f, 5.25f, 2.25f, 8.25f,
    0.25f, 4.25f, 2.25f, 8.25f
  };
  const P3dcConvBufferDesc buffers[2] = { {2, 1, 2}, {1, 2, 4} };
  const P3dcConvLayer layer = { P3DC_CONV_TRANSPOSED_2D, 2, 1, 2, 2, 0, 0,
    weight, bias, 0, 1, 0
  };
  const P3dcConvNetDesc desc = { 2, buffers, 1, &layer };

  run_reference (&desc, input, 1, expect, 8);
}

GST_END_TEST;

GST_START_TEST (test_concat_slices)
{
  static const float input[4] = { 1, -2, 3, -4 };
  static const float two[1] = { 2 }, minus_one[1] = { -1 };
  static const float mix[2] = { 1, 10 }, zero[1] = { 0 };
  /* buffer 1: channel 0 = ReLU (-x) (written second), channel 1 = 2 x */
  static const float expect_concat[8] = { 0, 2, 0, 4, 2, -4, 6, -8 };
  static const float expect_mix[4] = { 20, -38, 60, -76 };
  const P3dcConvBufferDesc buffers[3] = { {1, 2, 2}, {2, 2, 2}, {1, 2, 2} };
  const P3dcConvLayer layers[3] = {
    {P3DC_CONV_2D, 1, 1, 1, 1, 0, 0, two, zero, 0, 1, 1},
    {P3DC_CONV_2D, 1, 1, 1, 1, 0, 1, minus_one, zero, 0, 1, 0},
    {P3DC_CONV_2D, 2, 1, 1, 1, 0, 0, mix, zero, 1, 2, 0},
  };
  const P3dcConvNetDesc desc = { 3, buffers, 3, layers };

  run_reference (&desc, input, 1, expect_concat, 8);
  run_reference (&desc, input, 2, expect_mix, 4);
}

GST_END_TEST;

GST_START_TEST (test_grouped)
{
  /* 4 channels in 2 groups to 2 channels: output 0 sees channels 0 and 1,
   * output 1 channels 2 and 3; weight [out][in / groups][1][1] */
  static const float input[8] = { 1, 2, 10, 20, 100, 200, 1000, 2000 };
  static const float weight[4] = { 1, 2, 3, -1 };
  static const float bias[2] = { 0, 0.5f };
  /* o0 = x0 + 2 x1; o1 = 3 x2 - x3 + 0.5 */
  static const float expect[4] = { 21, 42, -699.5f, -1399.5f };
  P3dcConvBufferDesc buffers[2] = { {4, 1, 2}, {2, 1, 2} };
  P3dcConvLayer layer = { P3DC_CONV_2D, 4, 2, 1, 1, 0, 0, weight, bias };
  P3dcConvNetDesc desc;

  layer.groups = 2;
  desc = one_layer (buffers, &layer, 1);
  run_reference (&desc, input, 1, expect, 4);
}

GST_END_TEST;

GST_START_TEST (test_dilated_non_square)
{
  /* 1 x 5 row; a 1x2 kernel [1, 10] with dilation 2 along x, stride 1 and
   * padding 1: y[ox] = x[ox - 1] + 10 x[ox + 1] */
  static const float input[5] = { 1, 2, 3, 4, 5 };
  static const float weight[2] = { 1, 10 };
  static const float bias[1] = { 0 };
  static const float expect[5] = { 20, 31, 42, 53, 4 };
  /* a 3x1 kernel of ones along y on 3 x 2, stride (1, 2): the column sums */
  static const float input2[6] = { 1, 2, 3, 4, 5, 6 };
  static const float ones[3] = { 1, 1, 1 };
  static const float expect2[1] = { 9 };
  P3dcConvBufferDesc buffers[2] = { {1, 1, 5}, {1, 1, 5} };
  P3dcConvBufferDesc buffers2[2] = { {1, 3, 2}, {1, 1, 1} };
  P3dcConvLayer layer = { P3DC_CONV_2D, 1, 1, 1, 1, 0, 0, weight, bias };
  P3dcConvNetDesc desc;

  layer.kernel_x = 2;
  layer.stride_x = 1;
  layer.padding_x = 1;
  layer.dilation_x = 2;
  desc = one_layer (buffers, &layer, 1);
  run_reference (&desc, input, 1, expect, 5);

  memset (&layer, 0, sizeof layer);
  layer.kind = P3DC_CONV_2D;
  layer.in_channels = layer.out_channels = 1;
  layer.kernel = 3;
  layer.stride = 1;
  layer.kernel_x = 1;
  layer.stride_x = 2;
  layer.weight = ones;
  layer.bias = bias;
  desc = one_layer (buffers2, &layer, 1);
  run_reference (&desc, input2, 1, expect2, 1);
}

GST_END_TEST;

GST_START_TEST (test_residual_and_add)
{
  /* buffer 1 = 2 x - 1 (1x1 conv); buffer 2 = ReLU (conv (x) + buffer 1)
   * with conv = -3 x + 1, a residual; buffer 3 = ReLU (x + buffer 1) */
  static const float input[4] = { 1, -2, 0.5f, 3 };
  static const float two[1] = { 2 }, minus_one[1] = { -1 };
  static const float minus_three[1] = { -3 }, one[1] = { 1 };
  /* b1: 1 -5 0 5; conv: -2 7 -0.5 -8; sum: -1 2 -0.5 -3 */
  static const float expect_residual[4] = { 0, 2, 0, 0 };
  /* x + b1: 2 -7 0.5 8 */
  static const float expect_add[4] = { 2, 0, 0.5f, 8 };
  P3dcConvBufferDesc buffers[4] = { {1, 2, 2}, {1, 2, 2}, {1, 2, 2},
  {1, 2, 2}
  };
  P3dcConvLayer layers[3] = {
    {P3DC_CONV_2D, 1, 1, 1, 1, 0, 0, two, minus_one, 0, 1, 0},
    {P3DC_CONV_2D, 1, 1, 1, 1, 0, 1, minus_three, one, 0, 2, 0},
    {P3DC_LAYER_ADD, 1, 1, 0, 0, 0, 1, NULL, NULL, 0, 3, 0},
  };
  P3dcConvNetDesc desc = { 4, buffers, 3, layers };

  layers[1].residual = 1;
  layers[1].input2 = 1;
  layers[2].input2 = 1;
  run_reference (&desc, input, 2, expect_residual, 4);
  run_reference (&desc, input, 3, expect_add, 4);
}

GST_END_TEST;

GST_START_TEST (test_transposed_non_square)
{
  /* one input cell, kernel == stride 1 x 3: weight [1][1][1][3] */
  static const float input[2] = { 2, -1 };
  static const float weight[3] = { 1, 2, 3 };
  static const float bias[1] = { 1 };
  static const float expect[6] = { 3, 5, 7, 0, -1, -2 };
  P3dcConvBufferDesc buffers[2] = { {1, 2, 1}, {1, 2, 3} };
  P3dcConvLayer layer = { P3DC_CONV_TRANSPOSED_2D, 1, 1, 1, 1, 0, 0, weight,
    bias
  };
  P3dcConvNetDesc desc;

  layer.kernel_x = layer.stride_x = 3;
  desc = one_layer (buffers, &layer, 1);
  run_reference (&desc, input, 1, expect, 6);
}

GST_END_TEST;

GST_START_TEST (test_max_pool)
{
  /* ResNet's stem pool: 3x3, stride 2, padding 1 on 4 x 4; -inf padding,
   * so negative values survive at the border */
  static const float input[16] = {
    -1, -2, -3, -4,
    -5, -6, -7, -8,
    -9, 10, -11, -12,
    -13, -14, -15, -16
  };
  static const float expect[4] = { -1, -2, 10, 10 };
  P3dcConvBufferDesc buffers[2] = { {1, 4, 4}, {1, 2, 2} };
  P3dcConvLayer layer = { P3DC_LAYER_MAX_POOL, 1, 1, 3, 2, 1, 0 };
  P3dcConvNetDesc desc = one_layer (buffers, &layer, 1);
  float with_nan[16];

  run_reference (&desc, input, 1, expect, 4);
  /* a NaN wins its windows, as in PyTorch; ReLU then makes it 0 */
  memcpy (with_nan, input, sizeof with_nan);
  with_nan[0] = NAN;
  {
    float **out = p3dc_convnet_cpu_buffers_new (&desc);

    fail_unless_equals_int (p3dc_convnet_cpu (&desc, with_nan, out), P3DC_OK);
    fail_unless (isnan (out[1][0]));
    fail_unless_equals_float (out[1][1], -2);
    layer.relu = 1;
    fail_unless_equals_int (p3dc_convnet_cpu (&desc, with_nan, out), P3DC_OK);
    fail_unless_equals_float (out[1][0], 0);
    p3dc_convnet_cpu_buffers_free (&desc, out);
  }
}

GST_END_TEST;

GST_START_TEST (test_upsample_nearest)
{
  static const float input[6] = { 1, 2, 3, 4, 5, 6 };
  /* 2 x 3 to 4 x 6: every cell twice (floor (o * 1 / 2)) */
  static const float expect_double[24] = {
    1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3,
    4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6
  };
  /* 2 x 3 to 3 x 5: rows floor (o * 2 / 3) = 0 0 1, columns floor (o *
   * 3 / 5) = 0 0 1 1 2 */
  static const float expect_odd[15] = {
    1, 1, 2, 2, 3, 1, 1, 2, 2, 3, 4, 4, 5, 5, 6
  };
  P3dcConvBufferDesc buffers[2] = { {1, 2, 3}, {1, 4, 6} };
  P3dcConvLayer layer = { P3DC_LAYER_UPSAMPLE_NEAREST, 1, 1 };
  P3dcConvNetDesc desc = one_layer (buffers, &layer, 1);

  run_reference (&desc, input, 1, expect_double, 24);
  buffers[1].height = 3;
  buffers[1].width = 5;
  run_reference (&desc, input, 1, expect_odd, 15);
}

GST_END_TEST;

GST_START_TEST (test_upsample_bilinear)
{
  /* F.interpolate of [[1, 2], [3, 4]], scale 2, align_corners=False, and
   * to 3 x 3 with align_corners=True (PyTorch gives these) */
  static const float input[4] = { 1, 2, 3, 4 };
  static const float expect_half_pixel[16] = {
    1, 1.25f, 1.75f, 2,
    1.5f, 1.75f, 2.25f, 2.5f,
    2.5f, 2.75f, 3.25f, 3.5f,
    3, 3.25f, 3.75f, 4
  };
  static const float expect_corners[9] = {
    1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4
  };
  /* down to 1 x 1: align_corners takes the first cell, the half-pixel
   * rule the centre */
  static const float expect_corner_one[1] = { 1 };
  static const float expect_centre_one[1] = { 2.5f };
  P3dcConvBufferDesc buffers[2] = { {1, 2, 2}, {1, 4, 4} };
  P3dcConvLayer layer = { P3DC_LAYER_UPSAMPLE_BILINEAR, 1, 1 };
  P3dcConvNetDesc desc = one_layer (buffers, &layer, 1);

  run_reference (&desc, input, 1, expect_half_pixel, 16);
  layer.align_corners = 1;
  buffers[1].height = buffers[1].width = 3;
  run_reference (&desc, input, 1, expect_corners, 9);
  buffers[1].height = buffers[1].width = 1;
  run_reference (&desc, input, 1, expect_corner_one, 1);
  layer.align_corners = 0;
  run_reference (&desc, input, 1, expect_centre_one, 1);
}

GST_END_TEST;

GST_START_TEST (test_softmax)
{
  /* per position over 4 channels: equal logits give 1/4 exactly; large
   * logits do not overflow (the maximum is subtracted first); the last
   * position against exp in double */
  static const float input[12] = {
    5, 1000, 0,
    5, 1000, 1,
    5, -1000, 2,
    5, -1000, 3
  };
  P3dcConvBufferDesc buffers[2] = { {4, 1, 3}, {4, 1, 3} };
  P3dcConvLayer layer = { P3DC_LAYER_SOFTMAX, 4, 4 };
  P3dcConvNetDesc desc = one_layer (buffers, &layer, 1);
  float **out = p3dc_convnet_cpu_buffers_new (&desc);
  gdouble sum = 0;
  guint c;

  fail_unless_equals_int (p3dc_convnet_cpu (&desc, input, out), P3DC_OK);
  for (c = 0; c < 4; c++) {
    fail_unless (out[1][c * 3] == 0.25f);
    fail_unless (out[1][c * 3 + 1] == (c < 2 ? 0.5f : 0.0f));
    sum += exp (c);
  }
  for (c = 0; c < 4; c++)
    fail_unless (fabs (out[1][c * 3 + 2] - exp (c) / sum) < 1e-6,
        "channel %u: %.9g, expected %.9g", c, out[1][c * 3 + 2], exp (c) / sum);
  p3dc_convnet_cpu_buffers_free (&desc, out);
}

GST_END_TEST;

/* Slices read and written: a depth net's output split into a softmax over
 * its first channels and a copy of the rest, a ReLU slice written beside
 * its source in one buffer, and a batch of two whose items stay apart. */
GST_START_TEST (test_slices_and_batch)
{
  /* batch 2 of 3 channels x 1 x 2 */
  static const float input[12] = {
    0, 0, 0, 0, -1, 2,
    7, 7, 7, 7, 3, -4
  };
  /* buffer 1: softmax of channels 0-1 (equal: 1/2) then a ReLU copy of
   * channel 2 into channel 2; buffer 1's channel 3: a copy of its own
   * channel 2 */
  static const float expect[16] = {
    0.5f, 0.5f, 0.5f, 0.5f, 0, 2, 0, 2,
    0.5f, 0.5f, 0.5f, 0.5f, 3, 0, 3, 0
  };
  P3dcConvBufferDesc buffers[2] = { {3, 1, 2}, {4, 1, 2} };
  P3dcConvLayer layers[3] = {
    {P3DC_LAYER_SOFTMAX, 2, 2, 0, 0, 0, 0, NULL, NULL, 0, 1, 0},
    {P3DC_LAYER_SLICE, 1, 1, 0, 0, 0, 1, NULL, NULL, 0, 1, 2},
    {P3DC_LAYER_SLICE, 1, 1, 0, 0, 0, 0, NULL, NULL, 1, 1, 3},
  };
  P3dcConvNetDesc desc = { 2, buffers, 3, layers, 2 };

  layers[1].input_channel_offset = 2;
  layers[2].input_channel_offset = 2;
  run_reference (&desc, input, 1, expect, 16);
}

GST_END_TEST;

/* The reference against the float64 oracle: within float rounding of the
 * sums.  A float sum of n products is within (n + 2) 2^-24 of its
 * magnitude (p3dtest-convnet.h: its terms' absolute values, bias included,
 * each input at its own magnitude, so that an earlier layer's error is
 * bounded by the same scale); the budget is that bound at the widest
 * layer, once per layer on the longest path to the buffer. */
static void
check_against_oracle (const ConvnetTestNet * net, const gchar * what)
{
  float **buffers = p3dc_convnet_cpu_buffers_new (&net->desc);
  gdouble **magnitude;
  gdouble **expect = convnet_test_oracle (net, &magnitude);
  guint *depth = convnet_test_depths (net);
  guint32 b, l, taps = 0;

  for (l = 0; l < net->desc.n_layers; l++)
    taps = MAX (taps, convnet_test_layer_terms (&net->desc.layers[l]));
  fail_unless (buffers != NULL);
  fail_unless_equals_int (p3dc_convnet_cpu (&net->desc, net->input, buffers),
      P3DC_OK);
  for (b = 1; b < net->desc.n_buffers; b++) {
    P3dcMapView view;

    p3dc_convnet_cpu_view (&net->desc, b, buffers[b], &view);
    convnet_test_compare (net, b, &view, expect[b], magnitude[b],
        depth[b] * (taps + 2) * ldexp (1.0, -24), 0.0, what);
  }
  g_free (depth);
  convnet_test_buffers_free (net, expect);
  convnet_test_buffers_free (net, magnitude);
  p3dc_convnet_cpu_buffers_free (&net->desc, buffers);
}

GST_START_TEST (test_random_nets)
{
  P3dTestRng rng;
  guint n;

  p3d_test_rng_init (&rng, 12);
  for (n = 0; n < 60; n++) {
    ConvnetTestNet *net = convnet_test_net_random (&rng);
    gchar *what = g_strdup_printf ("random net %u", n);

    fail_unless_equals_int (p3dc_convnet_validate (&net->desc, NULL, 0),
        P3DC_OK);
    check_against_oracle (net, what);
    g_free (what);
    convnet_test_net_free (net);
  }
}

GST_END_TEST;

GST_START_TEST (test_random_graphs)
{
  P3dTestRng rng;
  guint n;

  p3d_test_rng_init (&rng, 14);
  for (n = 0; n < 80; n++) {
    ConvnetTestNet *net = convnet_test_net_random_graph (&rng, 0);
    gchar *what = g_strdup_printf ("random graph %u", n);
    char message[256];

    fail_unless (p3dc_convnet_validate (&net->desc, message,
            sizeof message) == P3DC_OK, "%s: %s", what, message);
    check_against_oracle (net, what);
    g_free (what);
    convnet_test_net_free (net);
  }
}

GST_END_TEST;

GST_START_TEST (test_centerpoint_pattern)
{
  static const guint32 widths[3] = { 4, 6, 8 }, layer_nums[3] = { 1, 2, 1 };
  P3dTestRng rng;
  static const gchar *const names[3] = {
    "centerpoint (head buffers)", "centerpoint (task buffers)",
    "centerpoint (merged heads)",
  };
  guint heads;

  p3d_test_rng_init (&rng, 13);
  for (heads = 0; heads < 3; heads++) {
    ConvnetTestNet *net = convnet_test_net_centerpoint (&rng, 3, 16, 24,
        widths, layer_nums, 4, 8, 2, (ConvnetTestHeads) heads);

    check_against_oracle (net, names[heads]);
    convnet_test_net_free (net);
  }
}

GST_END_TEST;

/* A valid two-layer net to break one field at a time. */
typedef struct
{
  P3dcConvBufferDesc buffers[3];
  P3dcConvLayer layers[2];
  P3dcConvNetDesc desc;
  float weight[128], bias[4];
} SmallNet;

static void
layer_init (P3dcConvLayer * layer, P3dcConvKind kind, guint32 in_channels,
    guint32 out_channels, guint32 kernel, guint32 stride, guint32 padding,
    gboolean relu, SmallNet * n, guint32 input, guint32 output)
{
  memset (layer, 0, sizeof *layer);
  layer->kind = kind;
  layer->in_channels = in_channels;
  layer->out_channels = out_channels;
  layer->kernel = kernel;
  layer->stride = stride;
  layer->padding = padding;
  layer->relu = relu;
  layer->weight = n->weight;
  layer->bias = n->bias;
  layer->input = input;
  layer->output = output;
}

static void
small_net_init (SmallNet * n)
{
  const P3dcConvBufferDesc buffers[3] = { {2, 8, 8}, {4, 4, 4}, {3, 8, 8} };
  guint i;

  memset (n, 0, sizeof *n);
  memcpy (n->buffers, buffers, sizeof buffers);
  for (i = 0; i < G_N_ELEMENTS (n->weight); i++)
    n->weight[i] = 0.01f * i;
  layer_init (&n->layers[0], P3DC_CONV_2D, 2, 4, 3, 2, 1, 1, n, 0, 1);
  layer_init (&n->layers[1], P3DC_CONV_TRANSPOSED_2D, 4, 3, 2, 2, 0, 0, n, 1,
      2);
  n->desc.n_buffers = 3;
  n->desc.buffers = n->buffers;
  n->desc.n_layers = 2;
  n->desc.layers = n->layers;
}

static void
expect_invalid (SmallNet * n, const gchar * fragment)
{
  char message[256];

  fail_unless_equals_int (p3dc_convnet_validate (&n->desc, message,
          sizeof message), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless (strstr (message, fragment) != NULL,
      "message \"%s\" lacks \"%s\"", message, fragment);
  small_net_init (n);
}

GST_START_TEST (test_validate)
{
  SmallNet n;
  char message[256];
  float input[128] = { 0 };
  float out1[64], out2[192];
  float *buffers[3] = { NULL, out1, out2 };

  small_net_init (&n);
  fail_unless_equals_int (p3dc_convnet_validate (&n.desc, message,
          sizeof message), P3DC_OK);
  fail_unless_equals_int (p3dc_convnet_cpu (&n.desc, input, buffers), P3DC_OK);

  fail_unless_equals_int (p3dc_convnet_validate (NULL, NULL, 0),
      P3DC_ERROR_INVALID_ARGUMENT);
  n.layers[1].kernel = 3;
  expect_invalid (&n, "kernel == stride");
  n.layers[1].padding = 1;
  expect_invalid (&n, "padding 0");
  n.layers[0].padding = 3;
  expect_invalid (&n, "below the kernel");
  n.layers[0].stride = 1;
  expect_invalid (&n, "buffer 1 is 4x4");
  n.buffers[2].height = 7;
  expect_invalid (&n, "layer 1: 4x4 in gives 8x8");
  n.layers[0].in_channels = 3;
  expect_invalid (&n, "3 input channels, buffer 0 has 2");
  n.layers[1].output_channel_offset = 1;
  expect_invalid (&n, "outside buffer 2");
  n.layers[1].out_channels = 2;
  expect_invalid (&n, "buffer 2: channel 2 is written by no layer");
  n.layers[0].output = 0;
  expect_invalid (&n, "never written");
  n.layers[1].input = 2;
  expect_invalid (&n, "reads and writes buffer 2");
  n.layers[1].output = 7;
  expect_invalid (&n, "does not exist");
  n.layers[0].weight = NULL;
  expect_invalid (&n, "layer 0: no weight");
  n.layers[1].bias = NULL;
  expect_invalid (&n, "layer 1: no bias");
  n.layers[0].kind = (P3dcConvKind) P3DC_N_LAYER_KINDS;
  expect_invalid (&n, "unknown kind");
  n.layers[0].kernel = 0;
  expect_invalid (&n, "must be 1 to");
  n.buffers[1].width = 0;
  expect_invalid (&n, "buffer 1: 4x4x0");
  n.desc.n_layers = 0;
  expect_invalid (&n, "0 layers");
  n.desc.n_buffers = 1;
  expect_invalid (&n, "1 buffers");

  /* read before written: layer 0 reads buffer 1, written by layer 1 */
  n.buffers[0].channels = 4;
  n.buffers[0].height = n.buffers[0].width = 4;
  n.buffers[2].height = n.buffers[2].width = 4;
  layer_init (&n.layers[0], P3DC_CONV_2D, 4, 3, 1, 1, 0, 0, &n, 1, 2);
  layer_init (&n.layers[1], P3DC_CONV_2D, 4, 4, 1, 1, 0, 0, &n, 0, 1);
  expect_invalid (&n, "layer 0: reads buffer 1 before layer 1 writes it");

  /* two layers on one channel */
  n.layers[1] = n.layers[0];
  n.layers[1].out_channels = 1;
  expect_invalid (&n, "channel 0 of buffer 1 is already written by layer 0");

  /* the reference refuses what validation refuses, and missing buffers */
  n.layers[0].weight = NULL;
  fail_unless_equals_int (p3dc_convnet_cpu (&n.desc, input, buffers),
      P3DC_ERROR_INVALID_ARGUMENT);
  small_net_init (&n);
  buffers[2] = NULL;
  fail_unless_equals_int (p3dc_convnet_cpu (&n.desc, input, buffers),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_convnet_cpu (&n.desc, NULL, buffers),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless (p3dc_convnet_cpu_buffers_new (NULL) == NULL);
}

GST_END_TEST;

/* @layer from a 4 x 6 x 6 input into a buffer of @out shape (buffer 2,
 * 2 x 3 x 3, may be its second input), which must be refused with
 * @fragment in the message. */
static void
expect_invalid_layer (const P3dcConvLayer * layer,
    const P3dcConvBufferDesc * out, guint32 batch, const gchar * fragment)
{
  P3dcConvBufferDesc buffers[3] = { {4, 6, 6}, *out, {2, 3, 3} };
  P3dcConvLayer layers[2];
  P3dcConvNetDesc desc = { 3, buffers, 2, layers, batch };
  static const float weight[256] = { 0 }, bias[16] = { 0 };
  char message[256];

  /* buffer 2 written first, so that a layer may read it */
  memset (&layers[0], 0, sizeof layers[0]);
  layers[0].kind = P3DC_LAYER_MAX_POOL;
  layers[0].in_channels = layers[0].out_channels = 2;
  layers[0].kernel = 3;
  layers[0].stride = 2;
  layers[0].padding = 1;
  layers[0].output = 2;
  layers[1] = *layer;
  if (layers[1].kind == P3DC_CONV_2D
      || layers[1].kind == P3DC_CONV_TRANSPOSED_2D) {
    layers[1].weight = weight;
    layers[1].bias = bias;
  }
  layers[1].output = 1;
  fail_unless_equals_int (p3dc_convnet_validate (&desc, message,
          sizeof message), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless (strstr (message, fragment) != NULL,
      "message \"%s\" lacks \"%s\"", message, fragment);
}

GST_START_TEST (test_validate_kinds)
{
  const P3dcConvBufferDesc same = { 4, 6, 6 }, half = { 4, 3, 3 };
  P3dcConvLayer l;

  memset (&l, 0, sizeof l);
  l.kind = P3DC_CONV_2D;
  l.in_channels = l.out_channels = 4;
  l.kernel = l.stride = 1;
  l.groups = 3;
  expect_invalid_layer (&l, &same, 1, "3 groups must divide 4 input");
  l.groups = 1;
  l.dilation = 65;
  l.kernel = 3;
  l.padding = 1;
  expect_invalid_layer (&l, &same, 1, "dilation 65 must be 1 to 64");
  l.dilation = 2;
  l.padding = 5;
  expect_invalid_layer (&l, &same, 1, "padding 5 must be below the kernel 5");
  l.padding = 2;
  l.kernel_x = 3;
  l.stride_x = 2;
  l.padding_x = 1;
  l.dilation_x = 1;
  /* x: (6 + 2 - 3) / 2 + 1 = 3 */
  expect_invalid_layer (&l, &same, 1, "6x6 in gives 6x3");
  l.kernel_x = l.stride_x = l.padding_x = l.dilation_x = 0;
  l.residual = 1;
  l.input2 = 2;
  expect_invalid_layer (&l, &same, 1, "second input channels 0 to 3 are "
      "outside buffer 2");
  l.residual = 0;
  l.input_channel_offset = 1;
  expect_invalid_layer (&l, &same, 1, "input channels 1 to 4 are outside "
      "buffer 0");

  memset (&l, 0, sizeof l);
  l.kind = P3DC_CONV_TRANSPOSED_2D;
  l.in_channels = l.out_channels = 4;
  l.kernel = l.stride = 2;
  l.groups = 2;
  expect_invalid_layer (&l, &same, 1, "one group, not 2");
  l.groups = 0;
  l.dilation = 2;
  expect_invalid_layer (&l, &same, 1, "kernel == stride");

  memset (&l, 0, sizeof l);
  l.kind = P3DC_LAYER_MAX_POOL;
  l.in_channels = l.out_channels = 4;
  l.kernel = 3;
  l.stride = 2;
  l.padding = 2;
  expect_invalid_layer (&l, &half, 1, "padding 2 must be at most half its "
      "kernel 3");
  l.padding = 1;
  l.out_channels = 3;
  expect_invalid_layer (&l, &half, 1, "(max-pool) writes as many channels "
      "as it reads (4, 3)");

  memset (&l, 0, sizeof l);
  l.kind = P3DC_LAYER_ADD;
  l.in_channels = l.out_channels = 2;
  l.input2 = 2;
  expect_invalid_layer (&l, &same, 1, "second input buffer 2 is 3x3, the "
      "output 6x6");
  l.input2_channel_offset = 1;
  expect_invalid_layer (&l, &same, 1, "second input channels 1 to 2");
  l.input2_channel_offset = 0;
  l.input2 = 3;
  expect_invalid_layer (&l, &same, 1, "buffer 0 or 3 does not exist");

  memset (&l, 0, sizeof l);
  l.kind = P3DC_LAYER_SOFTMAX;
  l.in_channels = l.out_channels = 4;
  expect_invalid_layer (&l, &same, 65, "a batch of 65");
  l.kind = (P3dcConvKind) P3DC_N_LAYER_KINDS;
  expect_invalid_layer (&l, &same, 1, "unknown kind");
}

GST_END_TEST;

/* Within one buffer: disjoint slices read and written are fine, a slice
 * read is checked channel by channel against its writer, and an overlap
 * is refused. */
GST_START_TEST (test_validate_slices)
{
  P3dcConvBufferDesc buffers[2] = { {2, 2, 2}, {4, 2, 2}
  };
  P3dcConvLayer layers[3];
  P3dcConvNetDesc desc = { 2, buffers, 3, layers };
  char message[256];
  guint i;

  for (i = 0; i < 3; i++) {
    memset (&layers[i], 0, sizeof layers[i]);
    layers[i].kind = P3DC_LAYER_SLICE;
    layers[i].in_channels = layers[i].out_channels = 1;
    layers[i].output = 1;
  }
  /* buffer 1: channel 0 from the input, channels 1-2 from the input,
   * channel 3 from buffer 1's channel 1 */
  layers[1].in_channels = layers[1].out_channels = 2;
  layers[1].output_channel_offset = 1;
  layers[2].input = 1;
  layers[2].input_channel_offset = 1;
  layers[2].output_channel_offset = 3;
  fail_unless (p3dc_convnet_validate (&desc, message,
          sizeof message) == P3DC_OK, "%s", message);
  /* channel 1 read before layer 1 writes it */
  layers[1].output_channel_offset = 3;
  layers[1].in_channels = layers[1].out_channels = 1;
  layers[2].output_channel_offset = 1;
  layers[2].in_channels = layers[2].out_channels = 2;
  layers[2].input_channel_offset = 2;
  fail_unless_equals_int (p3dc_convnet_validate (&desc, message,
          sizeof message), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless (strstr (message, "reads and writes buffer 1") != NULL, "%s",
      message);
  layers[2].input_channel_offset = 3;
  layers[2].in_channels = layers[2].out_channels = 1;
  layers[2].output_channel_offset = 2;
  layers[0].output_channel_offset = 1;
  fail_unless_equals_int (p3dc_convnet_validate (&desc, message,
          sizeof message), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless (strstr (message, "channel 0 is written by no layer") != NULL,
      "%s", message);
  /* layer 0 reads channel 3, which layer 1 writes after it */
  layers[0].input = 1;
  layers[0].input_channel_offset = 3;
  layers[0].output_channel_offset = 0;
  layers[1].input_channel_offset = 0;
  layers[2].input = 0;
  layers[2].input_channel_offset = 0;
  layers[2].in_channels = layers[2].out_channels = 2;
  layers[2].output_channel_offset = 1;
  fail_unless_equals_int (p3dc_convnet_validate (&desc, message,
          sizeof message), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless (strstr (message, "layer 0: reads buffer 1 before layer 1 "
          "writes it") != NULL, "%s", message);
}

GST_END_TEST;

/* Where cuDNN cannot be loaded (a library name that does not exist), the
 * CUDA path refuses clearly, names the library, and nothing crashes; the
 * build without cuDNN or CUDA says so instead. */
GST_START_TEST (test_cuda_without_cudnn)
{
  SmallNet n;
  P3dcConvNet *net = (P3dcConvNet *) & n;
  char message[512];
  P3dcResult result;

  small_net_init (&n);
  g_setenv ("PERCEPTION_CUDNN_LIBRARY", "libcudnn-absent-for-a-test.so.9",
      TRUE);
  result = p3dc_convnet_cuda_available (message, sizeof message);
  fail_if (result == P3DC_OK);
  if (result == P3DC_ERROR_UNSUPPORTED && strstr (message, "cudnn.h") == NULL)
    fail_unless (g_str_has_prefix (message,
            "cuDNN not found (libcudnn-absent-for-a-test.so.9)"),
        "message: %s", message);
  else
    fail_unless (strstr (message, "this build has no") != NULL, "message: %s",
        message);
  fail_unless_equals_int (p3dc_convnet_cuda_new (&n.desc, 1, &net, message,
          sizeof message), result);
  fail_unless (net == NULL);
  fail_unless (strlen (message) > 0);
  /* an invalid description is refused before any library is looked for,
   * in builds with cuDNN; the stub refuses everything the same way */
  n.layers[0].weight = NULL;
  fail_unless (p3dc_convnet_cuda_new (&n.desc, 0, &net, message,
          sizeof message) != P3DC_OK);
  fail_unless (net == NULL);
  p3dc_convnet_cuda_free (NULL);
  g_unsetenv ("PERCEPTION_CUDNN_LIBRARY");
}

GST_END_TEST;

static Suite *
convnet_suite (void)
{
  Suite *s = suite_create ("convnet");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_padded_3x3_relu);
  tcase_add_test (tc, test_strided_two_channels);
  tcase_add_test (tc, test_transposed);
  tcase_add_test (tc, test_concat_slices);
  tcase_add_test (tc, test_grouped);
  tcase_add_test (tc, test_dilated_non_square);
  tcase_add_test (tc, test_residual_and_add);
  tcase_add_test (tc, test_transposed_non_square);
  tcase_add_test (tc, test_max_pool);
  tcase_add_test (tc, test_upsample_nearest);
  tcase_add_test (tc, test_upsample_bilinear);
  tcase_add_test (tc, test_softmax);
  tcase_add_test (tc, test_slices_and_batch);
  tcase_add_test (tc, test_random_nets);
  tcase_add_test (tc, test_random_graphs);
  tcase_add_test (tc, test_centerpoint_pattern);
  tcase_add_test (tc, test_validate);
  tcase_add_test (tc, test_validate_kinds);
  tcase_add_test (tc, test_validate_slices);
  tcase_add_test (tc, test_cuda_without_cudnn);
  return s;
}

P3D_CHECK_MAIN (convnet);
