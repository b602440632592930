/* The convolutional network's C reference against hand-worked cases (a
 * padded 3x3 convolution with ReLU, a strided two-channel one, a transposed
 * one, a concatenation into channel slices), against the float64 scatter
 * oracle on random nets, and the checks of the description; plus what the
 * CUDA entry points say where cuDNN cannot be had. */
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
  gsize i;

  fail_unless (buffers != NULL);
  fail_unless_equals_int (p3dc_convnet_cpu (desc, input, buffers), P3DC_OK);
  for (i = 0; i < n; i++)
    fail_unless (buffers[buffer][i] == expect[i],
        "element %" G_GSIZE_FORMAT ": %.9g, expected %.9g", i,
        buffers[buffer][i], expect[i]);
  p3dc_convnet_cpu_buffers_free (desc, buffers);
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

  for (l = 0; l < net->desc.n_layers; l++) {
    const P3dcConvLayer *layer = &net->desc.layers[l];

    taps = MAX (taps, layer->in_channels * layer->kernel * layer->kernel);
  }
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

GST_START_TEST (test_centerpoint_pattern)
{
  static const guint32 widths[3] = { 4, 6, 8 }, layer_nums[3] = { 1, 2, 1 };
  P3dTestRng rng;
  guint concat;

  p3d_test_rng_init (&rng, 13);
  for (concat = 0; concat < 2; concat++) {
    ConvnetTestNet *net = convnet_test_net_centerpoint (&rng, 3, 16, 24,
        widths, layer_nums, 4, 4, 2, concat);

    check_against_oracle (net, concat ? "centerpoint (task buffers)" :
        "centerpoint (head buffers)");
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
  n.layers[0].kind = (P3dcConvKind) 5;
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
  tcase_add_test (tc, test_random_nets);
  tcase_add_test (tc, test_centerpoint_pattern);
  tcase_add_test (tc, test_validate);
  tcase_add_test (tc, test_cuda_without_cudnn);
  return s;
}

P3D_CHECK_MAIN (convnet);
