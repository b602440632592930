/* The layer graph's CUDA path (cuDNN and our kernels) against the C
 * reference, on random small nets (free-form chains with transposed
 * convolutions and concatenations), on random graphs of every kind with a
 * batch (convolutions with groups, dilation, non-square kernels, residuals
 * and channel slices read; adds, max pools, nearest and bilinear upsampling
 * with both corner rules, softmax, slices), on a net that takes each plan
 * of the cuDNN runner (cuDNN groups and the dense filter, the fused
 * residual and the epilogue's, an input slice copied, epilogues and kinds
 * of ours a channel and 8 channels a thread), on grouped convolutions of
 * few outputs a group (our tensor-core kernel in F16), and on the
 * CenterPoint pattern (3 strided stages, a neck of a stride-2, a 1x1 and a
 * transposed convolution concatenated, the shared head convolution and 6
 * heads per task), F32 and F16 storage, F32 and F16 input.  Each kind our
 * kernels run is also checked alone, bit for bit in F32 (softmax within
 * float rounding: CUDA's expf is not glibc's) and against the reference's
 * value rounded to F16 in F16.
 *
 * An F16 input is the reference's input rounded to F16: the reference then
 * runs on those rounded values (exact in float), so that its rounding is
 * not charged to the net, and the F32 bound below holds for F32 storage
 * whatever the input type.  Every net runs three times: the CUDA graph
 * (p3dc_convnet_cuda_run, which must have captured), plain launches
 * (p3dc_convnet_cuda_run_profiled) and, with an F16 input, the graph again
 * on the same rounded values given as F32; the three must agree bit for
 * bit (same algorithms, deterministic), so that an extra rounding of the
 * F16 input's path, or a graph that differs from the launches it
 * captured, fails exactly.
 *
 * Bounds, per element, against its magnitude M (p3dtest-convnet.h: |x| for
 * the input; for a layer's output the sum over the taps of |w| times the
 * tap input's M, plus |b|; the scale at which the rounding of a sum acts,
 * carried through the net so that earlier layers' errors stay bounded
 * where a sum cancels):
 *  - F32: |cuda - reference| <= 1e-4 M (the 1e-4 relative; no TF32,
 *    so the two differ only in the order of the float sums).
 *  - F16: with u = 2^-11 (F16's unit roundoff) and d the number of layers
 *    on the longest path to the buffer: |cuda - reference| <=
 *    (4 d + 2) u M + 1e-5.  One layer's own rounding is at most 4 u M:
 *    weights and bias rounded to F16 (u (|w| |x| + |b|) <= u M), the F32
 *    sum (n 2^-24 M <= u M for the n <= 2048 products of these nets), the
 *    F16 store (u |y| <= u M) and, when cuDNN cannot fuse the bias, one
 *    more F16 rounding of the sum before our epilogue adds it (u M); the
 *    input's own rounding and the first sums take 2 u M.  An input error of
 *    k u M_in reaches the output as at most k u M (ReLU does not grow it),
 *    so the budgets add along the path: a bound to first order in u, which
 *    the largest error seen, printed in units of u M, measures against.
 *    1e-5 covers F16 subnormals near zero.
 * Skips (77) without a device or without cuDNN (libcudnn.so.9), and fails
 * instead under PERCEPTION_REQUIRE_GPU=1. */
#include <math.h>
#include <string.h>
#include <gst/check/gstcheck.h>

#include "convnet.h"
#include "p3dtest-convnet.h"
#include "half.h"
#include "p3dtest.h"

/* The largest error / (u M) seen in F16, and error / M in F32. */
static gdouble worst_half, worst_float;

typedef struct
{
  P3dcCudaStream stream;
  void *input;                  /* device */
  gboolean input_half;
  /* with an F16 input: its values as F32, on the device and on the host */
  void *rounded;
  gfloat *rounded_host;
} DeviceInput;

static void
device_input_init (DeviceInput * in, const ConvnetTestNet * net, gboolean half)
{
  gsize n = p3dc_convnet_buffer_elements (&net->desc, 0), i;

  fail_unless_equals_int (p3dc_cuda_stream_create (&in->stream), P3DC_OK);
  in->input_half = half;
  in->rounded = NULL;
  in->rounded_host = NULL;
  fail_unless_equals_int (p3dc_cuda_malloc (&in->input, n * (half ? 2 : 4)),
      P3DC_OK);
  if (half) {
    guint16 *h = g_new (guint16, n);

    in->rounded_host = g_new (gfloat, n);
    for (i = 0; i < n; i++) {
      h[i] = p3dc_float_to_half (net->input[i]);
      in->rounded_host[i] = p3dc_half_to_float (h[i]);
    }
    fail_unless_equals_int (p3dc_cuda_memcpy_htod (in->input, h, n * 2,
            in->stream), P3DC_OK);
    fail_unless_equals_int (p3dc_cuda_malloc (&in->rounded, n * 4), P3DC_OK);
    fail_unless_equals_int (p3dc_cuda_memcpy_htod (in->rounded,
            in->rounded_host, n * 4, in->stream), P3DC_OK);
    fail_unless_equals_int (p3dc_cuda_stream_synchronize (in->stream), P3DC_OK);
    g_free (h);
  } else {
    fail_unless_equals_int (p3dc_cuda_memcpy_htod (in->input, net->input,
            n * 4, in->stream), P3DC_OK);
    fail_unless_equals_int (p3dc_cuda_stream_synchronize (in->stream), P3DC_OK);
  }
}

static void
device_input_clear (DeviceInput * in)
{
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (in->stream), P3DC_OK);
  p3dc_cuda_free (in->input);
  if (in->rounded != NULL)
    p3dc_cuda_free (in->rounded);
  g_free (in->rounded_host);
  p3dc_cuda_stream_destroy (in->stream);
}

/* The CUDA net of @net in F16 (@half) or F32 storage, which must be
 * made; @what names the case in a failure. */
static P3dcConvNet *
cuda_net_new (const ConvnetTestNet * net, gboolean half, const gchar * what)
{
  P3dcConvNet *cnet = NULL;
  char message[512];

  fail_unless (p3dc_convnet_cuda_new (&net->desc, half, &cnet, message,
          sizeof message) == P3DC_OK, "%s: %s", what, message);
  return cnet;
}

/* Buffer @b of @cnet, copied to the host; @view then points there. */
static guint8 *
download (const ConvnetTestNet * net, P3dcConvNet * cnet, guint32 b,
    P3dcCudaStream stream, P3dcMapView * view, gsize * bytes)
{
  guint8 *host;

  const P3dcConvBufferDesc *buf = &net->desc.buffers[b];

  fail_unless_equals_int (p3dc_convnet_cuda_view (cnet, b, view), P3DC_OK);
  /* up to the last element: the storage may hold padding channels */
  *bytes = ((p3dc_convnet_batch (&net->desc) - 1) * view->batch_stride +
      (buf->channels - 1) * view->channel_stride + (buf->height - 1) *
      view->row_stride + (buf->width - 1) * view->column_stride + 1) *
      (view->half ? 2 : 4);
  host = g_malloc (*bytes);
  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (host, view->data, *bytes,
          stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (stream), P3DC_OK);
  view->data = host;
  return host;
}

/* Runs @net on the device (graph, plain launches, and the graph on the
 * F16 input's values as F32) and compares every buffer with the reference
 * (within the bounds above) and the runs with each other bit for bit. */
static void
check_net (const ConvnetTestNet * given, gboolean half, gboolean input_half,
    const gchar * what)
{
  ConvnetTestNet rounded_net = *given;
  const ConvnetTestNet *net = &rounded_net;
  float **reference = p3dc_convnet_cpu_buffers_new (&net->desc);
  gdouble **magnitude, **oracle;
  guint *depth = convnet_test_depths (net);
  const gdouble u = ldexp (1.0, -11);
  P3dcConvNet *cnet = NULL;
  DeviceInput in;
  char message[512];
  const char *mode;
  gchar *label;
  guint8 **first;
  guint32 b, l;
  guint run;
  int graph = 0;

  fail_unless (reference != NULL);
  device_input_init (&in, given, input_half);
  /* the reference and the oracle read what the device reads */
  if (input_half)
    rounded_net.input = in.rounded_host;
  oracle = convnet_test_oracle (net, &magnitude);
  fail_unless_equals_int (p3dc_convnet_cpu (&net->desc, net->input,
          reference), P3DC_OK);
  cnet = cuda_net_new (net, half, what);
  mode = p3dc_convnet_cuda_launch_mode (cnet, &graph);
  GST_INFO ("%s: %s", what, mode);
  fail_unless (graph, "%s: no CUDA graph: %s", what, mode);
  for (l = 0; l < net->desc.n_layers; l++) {
    p3dc_convnet_cuda_describe_layer (cnet, l, message, sizeof message);
    GST_DEBUG ("%s layer %u: %s", what, l, message);
  }
  label = g_strdup_printf ("%s (%s storage, %s input)", what,
      half ? "F16" : "F32", input_half ? "F16" : "F32");
  first = g_new0 (guint8 *, net->desc.n_buffers);
  for (run = 0; run < (input_half ? 3u : 2u); run++) {
    static const char *const runs[3] = { "the graph", "plain launches",
      "the graph on the F16 input's values as F32"
    };

    P3dcResult ran;

    if (run == 0)
      ran = p3dc_convnet_cuda_run (cnet, in.input, input_half, in.stream);
    else if (run == 1)
      ran = p3dc_convnet_cuda_run_profiled (cnet, in.input, input_half, NULL,
          in.stream);
    else
      ran = p3dc_convnet_cuda_run (cnet, in.rounded, FALSE, in.stream);
    fail_unless_equals_int (ran, P3DC_OK);
    for (b = 1; b < net->desc.n_buffers; b++) {
      P3dcMapView view;
      gdouble *expect;
      gsize bytes, n = p3dc_convnet_buffer_elements (&net->desc, b), e;
      guint8 *host = download (net, cnet, b, in.stream, &view, &bytes);

      if (run > 0) {
        fail_unless (memcmp (host, first[b], bytes) == 0,
            "%s: buffer %u of %s differs from the graph's first run", label,
            b, runs[run]);
        g_free (host);
        continue;
      }
      first[b] = host;
      expect = g_new (gdouble, n);
      for (e = 0; e < n; e++)
        expect[e] = reference[b][e];
      if (half) {
        gdouble rel = (4.0 * depth[b] + 2.0) * u;
        gdouble seen = convnet_test_compare (net, b, &view, expect,
            magnitude[b], rel, 1e-5, label);

        worst_half = MAX (worst_half, seen / u);
      } else {
        gdouble seen = convnet_test_compare (net, b, &view, expect,
            magnitude[b], 1e-4, 0.0, label);

        worst_float = MAX (worst_float, seen);
      }
      g_free (expect);
    }
  }
  for (b = 0; b < net->desc.n_buffers; b++)
    g_free (first[b]);
  g_free (first);
  g_free (label);
  p3dc_convnet_cuda_free (cnet);
  device_input_clear (&in);
  g_free (depth);
  convnet_test_buffers_free (net, magnitude);
  convnet_test_buffers_free (net, oracle);
  p3dc_convnet_cpu_buffers_free (&net->desc, reference);
}

GST_START_TEST (test_random_nets)
{
  P3dTestRng rng;
  guint n;

  p3d_test_rng_init (&rng, 21);
  for (n = 0; n < 24; n++) {
    ConvnetTestNet *net = convnet_test_net_random (&rng);
    gchar *what = g_strdup_printf ("random net %u", n);

    /* every storage type with every input type over the nets */
    check_net (net, n % 2, (n / 2) % 2, what);
    g_free (what);
    convnet_test_net_free (net);
  }
}

GST_END_TEST;

GST_START_TEST (test_random_graphs)
{
  P3dTestRng rng;
  guint n;

  p3d_test_rng_init (&rng, 24);
  for (n = 0; n < 40; n++) {
    ConvnetTestNet *net = convnet_test_net_random_graph (&rng, 0);
    gchar *what = g_strdup_printf ("random graph %u (batch %u)", n,
        p3dc_convnet_batch (&net->desc));

    check_net (net, n % 2, (n / 2) % 2, what);
    g_free (what);
    convnet_test_net_free (net);
  }
  g_print ("random graphs, largest error: F32 %.3g M, F16 %.3g u M\n",
      worst_float, worst_half);
}

GST_END_TEST;

/* Layer @l's plan, as the runner describes it, holds @fragment or not. */
static void
expect_plan (P3dcConvNet * cnet, guint32 l, const gchar * fragment,
    gboolean present)
{
  char text[512];

  p3dc_convnet_cuda_describe_layer (cnet, l, text, sizeof text);
  fail_unless ((strstr (text, fragment) != NULL) == present,
      "layer %u: \"%s\" %s \"%s\"", l, text, present ? "lacks" : "holds",
      fragment);
}

/* A transposed convolution with ReLU, kernel and stride 2 x 3, from buffer
 * @input (@in channels) into @out channels at @offset of buffer @output. */
static void
add_transposed_2x3 (ConvnetTestNet * net, P3dTestRng * rng, guint32 input,
    guint32 in, guint32 output, guint32 offset, guint32 out)
{
  P3dcConvLayer l;

  memset (&l, 0, sizeof l);
  l.kind = P3DC_CONV_TRANSPOSED_2D;
  l.in_channels = in;
  l.out_channels = out;
  l.kernel = l.stride = 2;
  l.kernel_x = l.stride_x = 3;
  l.input = input;
  l.output = output;
  l.output_channel_offset = offset;
  l.relu = 1;
  convnet_test_net_add (net, rng, &l, 0.5f);
}

/* A 1x1 convolution without ReLU from buffer @input (@in channels) into
 * the first @out channels of buffer @output. */
static void
add_conv_1x1 (ConvnetTestNet * net, P3dTestRng * rng, guint32 input,
    guint32 in, guint32 output, guint32 out)
{
  P3dcConvLayer l;

  memset (&l, 0, sizeof l);
  l.kind = P3DC_CONV_2D;
  l.kernel = l.stride = 1;
  l.in_channels = in;
  l.out_channels = out;
  l.input = input;
  l.output = output;
  convnet_test_net_add (net, rng, &l, 0.5f);
}

/* Frees what a case of one net made: its CUDA net, input and reference. */
static void
case_free (P3dcConvNet * cnet, DeviceInput * in, ConvnetTestNet * net,
    float **reference)
{
  p3dc_convnet_cuda_free (cnet);
  device_input_clear (in);
  p3dc_convnet_cpu_buffers_free (&net->desc, reference);
  convnet_test_net_free (net);
}

/* ResNet's stem pool (3x3, stride 2, padding 1) of @channels channels from
 * buffer @input into buffer @output. */
static void
add_stem_pool (ConvnetTestNet * net, P3dTestRng * rng, guint32 input,
    guint32 output, guint32 channels)
{
  P3dcConvLayer l;

  memset (&l, 0, sizeof l);
  l.kind = P3DC_LAYER_MAX_POOL;
  l.in_channels = l.out_channels = channels;
  l.kernel = 3;
  l.stride = 2;
  l.padding = 1;
  l.input = input;
  l.output = output;
  convnet_test_net_add (net, rng, &l, 0.0f);
}

/* One net whose layers take each of the runner's plans, checked against
 * the reference like the others, and the plans themselves. */
GST_START_TEST (test_conv_plans)
{
  P3dTestRng rng;
  ConvnetTestNet *net;
  P3dcConvLayer l;
  guint32 b1, b2, b3, b4, b5, b6, b7, b8;
  guint half, input_half;
  gchar *lanes;

  p3d_test_rng_init (&rng, 25);
  net = convnet_test_net_new (16, 12, 12);
  net->desc.batch = 2;
  memset (&l, 0, sizeof l);
  l.kind = P3DC_CONV_2D;
  l.kernel = l.stride = 1;
  /* 0: 2 groups of 8: cuDNN groups in F16 too */
  b1 = convnet_test_net_add_buffer (net, 16, 12, 12);
  l.in_channels = l.out_channels = 16;
  l.kernel = 3;
  l.padding = 1;
  l.groups = 2;
  l.relu = 1;
  l.output = b1;
  convnet_test_net_add (net, &rng, &l, 0.5f);
  /* 1: 4 groups of 4: one dense filter in F16 */
  b2 = convnet_test_net_add_buffer (net, 16, 12, 12);
  l.groups = 4;
  l.relu = 0;
  l.output = b2;
  convnet_test_net_add (net, &rng, &l, 0.5f);
  /* 2: dilated 3x1 with a whole-buffer residual: fused */
  b3 = convnet_test_net_add_buffer (net, 16, 12, 12);
  l.input = b1;
  l.groups = 0;
  l.dilation = 2;
  l.padding = 2;
  l.kernel_x = 1;
  l.stride_x = 1;
  l.padding_x = 0;
  l.residual = 1;
  l.input2 = b2;
  l.relu = 1;
  l.output = b3;
  convnet_test_net_add (net, &rng, &l, 0.5f);
  /* 3: a slice of b3 read (copied), a residual slice of b1 (epilogue) */
  b4 = convnet_test_net_add_buffer (net, 8, 12, 12);
  memset (&l, 0, sizeof l);
  l.kind = P3DC_CONV_2D;
  l.kernel = l.stride = 1;
  l.input = b3;
  l.input_channel_offset = 3;
  l.in_channels = 8;
  l.out_channels = 8;
  l.residual = 1;
  l.input2 = b1;
  l.input2_channel_offset = 4;
  l.output = b4;
  convnet_test_net_add (net, &rng, &l, 0.5f);
  /* 4: a non-square transposed convolution */
  b5 = convnet_test_net_add_buffer (net, 5, 24, 36);
  add_transposed_2x3 (net, &rng, b4, 8, b5, 0, 5);
  /* 5: ResNet's stem pool, 6: bilinear back up, 7: softmax on a slice */
  b6 = convnet_test_net_add_buffer (net, 16, 6, 6);
  add_stem_pool (net, &rng, b3, b6, 16);
  b7 = convnet_test_net_add_buffer (net, 16, 12, 12);
  memset (&l, 0, sizeof l);
  l.kind = P3DC_LAYER_UPSAMPLE_BILINEAR;
  l.align_corners = 1;
  l.in_channels = l.out_channels = 16;
  l.input = b6;
  l.output = b7;
  convnet_test_net_add (net, &rng, &l, 0.0f);
  l.kind = P3DC_LAYER_SOFTMAX;
  l.input = b5;
  l.input_channel_offset = 1;
  l.in_channels = l.out_channels = 4;
  l.output = convnet_test_net_add_buffer (net, 4, 24, 36);
  convnet_test_net_add (net, &rng, &l, 0.0f);
  /* 8, 9: a transposed and a 1x1 convolution into the two halves of one
   * buffer, whose epilogues take 8 channels a thread in F16 */
  b8 = convnet_test_net_add_buffer (net, 16, 24, 36);
  add_transposed_2x3 (net, &rng, b3, 16, b8, 8, 8);
  add_conv_1x1 (net, &rng, b5, 5, b8, 8);
  convnet_test_net_finish (net, &rng);

  for (half = 0; half < 2; half++) {
    P3dcConvNet *cnet = cuda_net_new (net, half, "conv plans");

    expect_plan (cnet, 0, "dense filter", FALSE);
    expect_plan (cnet, 1, "dense filter", half);
    expect_plan (cnet, 2, "fused bias", TRUE);
    expect_plan (cnet, 2, "+ residual", TRUE);
    expect_plan (cnet, 3, "+ epilogue", TRUE);
    expect_plan (cnet, 3, "input slice copied", TRUE);
    expect_plan (cnet, 4, "+ epilogue (1-channel loads)", TRUE);
    expect_plan (cnet, 5, "our kernel", TRUE);
    /* 16-byte loads only for F16 channels in whole, aligned pieces of 8 */
    lanes = g_strdup_printf ("%u-channel loads", half ? 8 : 1);
    expect_plan (cnet, 3, "(1-channel loads)", TRUE);
    expect_plan (cnet, 5, lanes, TRUE);
    expect_plan (cnet, 6, lanes, TRUE);
    expect_plan (cnet, 7, "1-channel loads", TRUE);
    expect_plan (cnet, 8, lanes, TRUE);
    expect_plan (cnet, 9, lanes, TRUE);
    g_free (lanes);
    p3dc_convnet_cuda_free (cnet);
    for (input_half = 0; input_half < 2; input_half++)
      check_net (net, half, input_half, "conv plans");
  }
  convnet_test_net_free (net);
}

GST_END_TEST;

/* An image's network: ResNet's stem (7x7, stride 2, padding 3) on a
 * 3-channel input, which F16 stores as 4 channels for cuDNN's first-layer
 * kernels, then its max pool and a 1x1 convolution; and a 1-channel input
 * under a 3x3 stride-2 convolution.  Each against the reference. */
GST_START_TEST (test_image_input)
{
  static const guint32 channels[2] = { 3, 1 };
  P3dTestRng rng;
  guint shape, half, input_half;

  p3d_test_rng_init (&rng, 27);
  for (shape = 0; shape < 2; shape++) {
    ConvnetTestNet *net = convnet_test_net_new (channels[shape], 38, 54);
    guint32 stem, pool;

    net->desc.batch = 2;
    stem = convnet_test_net_add_buffer (net, 16, 19, 27);
    convnet_test_net_add_layer (net, &rng, P3DC_CONV_2D, 0, stem, 0, 16,
        shape == 0 ? 7 : 3, 2, shape == 0 ? 3 : 1, TRUE, 0.5f);
    pool = convnet_test_net_add_buffer (net, 16, 10, 14);
    add_stem_pool (net, &rng, stem, pool, 16);
    add_conv_1x1 (net, &rng, pool, 16, convnet_test_net_add_buffer (net, 8,
            10, 14), 8);
    convnet_test_net_finish (net, &rng);
    for (half = 0; half < 2; half++)
      for (input_half = 0; input_half < 2; input_half++)
        check_net (net, half, input_half, shape == 0 ? "image stem" :
            "one-channel input");
    convnet_test_net_free (net);
  }
}

GST_END_TEST;

/* Softmax over more channels than a warp has lanes (70, read from channel
 * 3 of 75, and 33 in place beside them), with non-finite values: a NaN in
 * the first channel or in another, an infinity (inf - inf), every channel
 * -inf (-inf - -inf): each makes every result of its position NaN, as the
 * reference's sum is; and +0 and -0 as the largest value.  F32 storage
 * within 8 float roundings of the reference, F16 within one F16 step; NaN
 * where the reference has NaN. */
GST_START_TEST (test_softmax_wide)
{
  P3dTestRng rng;
  guint half;

  p3d_test_rng_init (&rng, 28);
  for (half = 0; half < 2; half++) {
    const guint32 height = 5, width = 6, plane = height * width;
    ConvnetTestNet *net = convnet_test_net_new (75, height, width);
    P3dcConvLayer l;
    P3dcConvNet *cnet;
    DeviceInput in;
    float **reference;
    guint32 item, c, p, out;
    gsize n, e;

    net->desc.batch = 2;
    memset (&l, 0, sizeof l);
    l.kind = P3DC_LAYER_SOFTMAX;
    l.input_channel_offset = 3;
    l.in_channels = l.out_channels = 70;
    out = convnet_test_net_add_buffer (net, 103, height, width);
    l.output = out;
    convnet_test_net_add (net, &rng, &l, 0.0f);
    /* the first 33 channels of the output again, in place */
    l.input = out;
    l.input_channel_offset = 0;
    l.in_channels = l.out_channels = 33;
    l.output = out;
    l.output_channel_offset = 70;
    convnet_test_net_add (net, &rng, &l, 0.0f);
    convnet_test_net_finish (net, &rng);
    n = p3dc_convnet_buffer_elements (&net->desc, 0);
    for (e = 0; e < n; e++)
      net->input[e] = p3d_test_rng_uniform (&rng, -8.0f, 8.0f);
    /* item 0's first positions: the non-finite cases (channel c of the
     * softmax is input channel 3 + c) */
    net->input[(3 + 0) * plane + 0] = NAN;
    net->input[(3 + 40) * plane + 1] = NAN;
    net->input[(3 + 65) * plane + 2] = INFINITY;
    for (c = 0; c < 70; c++) {
      net->input[(3 + c) * plane + 3] = -INFINITY;
      net->input[(3 + c) * plane + 4] = c % 2 ? 0.0f : -0.0f;
      net->input[(3 + c) * plane + 5] = -(float) c;
    }
    if (half)
      for (e = 0; e < n; e++)
        net->input[e] = p3dc_half_to_float (p3dc_float_to_half (net->input[e]));
    reference = p3dc_convnet_cpu_buffers_new (&net->desc);
    fail_unless_equals_int (p3dc_convnet_cpu (&net->desc, net->input,
            reference), P3DC_OK);
    device_input_init (&in, net, FALSE);
    cnet = cuda_net_new (net, half, "wide softmax");
    fail_unless_equals_int (p3dc_convnet_cuda_run (cnet, in.input, FALSE,
            in.stream), P3DC_OK);
    {
      P3dcMapView view;
      gsize bytes;
      guint8 *host = download (net, cnet, out, in.stream, &view, &bytes);

      for (item = 0; item < 2; item++)
        for (c = 0; c < 103; c++)
          for (p = 0; p < plane; p++) {
            gfloat want = reference[out][(item * 103 + c) * plane + p];
            gdouble got = convnet_test_view_read_item (&view, item, c,
                p / width, p % width);
            gdouble allowed;

            if (half)
              want = p3dc_half_to_float (p3dc_float_to_half (want));
            /* one F16 step, subnormal ones included */
            allowed = half ? MAX (ldexp (fabs (want), -10), ldexp (1.0,
                    -24)) : 8 * ldexp (fabs (want), -24);
            if (isnan (want))
              fail_unless (isnan (got), "%s softmax at n %u c %u position "
                  "%u: %.9g, the reference NaN", half ? "F16" : "F32",
                  item, c, p, got);
            else
              fail_unless (fabs (got - want) <= allowed, "%s softmax at n "
                  "%u c %u position %u: %.9g, the reference %.9g",
                  half ? "F16" : "F32", item, c, p, got, want);
          }
      /* the cases took the paths they name */
      fail_unless (isnan (reference[out][0]));
      fail_unless (isnan (reference[out][1]));
      fail_unless (isnan (reference[out][3]));
      fail_unless (isnan (reference[out][65 * plane + 2]));
      fail_unless (fabs (reference[out][4] - 1.0 / 70) < 1e-6);
      g_free (host);
    }
    case_free (cnet, &in, net, reference);
  }
}

GST_END_TEST;

/* Grouped convolutions of few outputs a group (a merged head's final
 * layers): in F16 our tensor-core kernel runs those with groups of a
 * multiple of 32 inputs (1x3, 3x3 and 5x5 kernels with padding, 3, 5, 7
 * and 8 outputs a group, groups of 32 and of 64 inputs, whose staged
 * pixels are stored swizzled, an input slice at channel 32 read in place,
 * an output slice), cuDNN the ones at input offsets that are not whole
 * 16-byte loads (4) and with groups of 16 inputs; each against the
 * reference as every net is. */
GST_START_TEST (test_grouped_kernel)
{
  static const struct
  {
    guint32 in_offset, in, out, groups, kernel, kernel_x, padding, padding_x;
    gboolean relu, ours;
  } convs[] = {
    {0, 96, 9, 3, 1, 3, 0, 1, TRUE, TRUE},
    {32, 64, 16, 2, 3, 0, 1, 0, TRUE, TRUE},
    {0, 128, 20, 4, 5, 0, 2, 0, FALSE, TRUE},
    {0, 128, 14, 2, 3, 0, 1, 0, TRUE, TRUE},
    {4, 64, 8, 2, 3, 0, 1, 0, FALSE, FALSE},
    {0, 64, 8, 4, 3, 0, 1, 0, FALSE, FALSE},
  };
  P3dTestRng rng;
  ConvnetTestNet *net;
  P3dcConvLayer l;
  guint32 sliced, i;
  guint half, input_half;

  p3d_test_rng_init (&rng, 29);
  net = convnet_test_net_new (128, 7, 9);
  net->desc.batch = 2;
  /* the first layer's output lands at channel 3 of a buffer whose channels
   * 0-2 a 1x1 convolution writes */
  sliced = convnet_test_net_add_buffer (net, 12, 7, 9);
  for (i = 0; i < G_N_ELEMENTS (convs); i++) {
    memset (&l, 0, sizeof l);
    l.kind = P3DC_CONV_2D;
    l.input_channel_offset = convs[i].in_offset;
    l.in_channels = convs[i].in;
    l.out_channels = convs[i].out;
    l.groups = convs[i].groups;
    l.kernel = convs[i].kernel;
    l.stride = 1;
    l.padding = convs[i].padding;
    if (convs[i].kernel_x != 0) {
      l.kernel_x = convs[i].kernel_x;
      l.stride_x = 1;
      l.padding_x = convs[i].padding_x;
    }
    l.relu = convs[i].relu;
    l.output = i == 0 ? sliced : convnet_test_net_add_buffer (net,
        convs[i].out, 7, 9);
    l.output_channel_offset = i == 0 ? 3 : 0;
    convnet_test_net_add (net, &rng, &l, 0.5f);
  }
  add_conv_1x1 (net, &rng, 0, 128, sliced, 3);
  convnet_test_net_finish (net, &rng);

  for (half = 0; half < 2; half++) {
    P3dcConvNet *cnet = cuda_net_new (net, half, "grouped kernel");

    for (i = 0; i < G_N_ELEMENTS (convs); i++)
      expect_plan (cnet, i, "our tensor-core grouped kernel",
          half && convs[i].ours);
    p3dc_convnet_cuda_free (cnet);
    for (input_half = 0; input_half < 2; input_half++)
      check_net (net, half, input_half, "grouped kernel");
  }
  convnet_test_net_free (net);
}

GST_END_TEST;

/* One layer of each kind our kernels run, alone, on a batch of 2 with
 * channel slices: F32 storage equals the reference bit for bit (softmax
 * within 8 float roundings), F16 storage equals the reference's value on
 * the F16 input rounded to F16 (softmax within one F16 step).  Each kind
 * twice: 3 channels at odd offsets (a channel a thread), and 16 at offsets
 * that are multiples of 8 (8 channels a thread in F16). */
GST_START_TEST (test_kinds_alone)
{
  static const P3dcConvKind kinds[] = {
    P3DC_LAYER_ADD, P3DC_LAYER_MAX_POOL, P3DC_LAYER_UPSAMPLE_NEAREST,
    P3DC_LAYER_UPSAMPLE_BILINEAR, P3DC_LAYER_UPSAMPLE_BILINEAR,
    P3DC_LAYER_SOFTMAX, P3DC_LAYER_SLICE,
  };
  P3dTestRng rng;
  guint k, half, wide;

  p3d_test_rng_init (&rng, 26);
  for (k = 0; k < G_N_ELEMENTS (kinds) * 2; k++) {
    wide = k % 2;
    for (half = 0; half < 2; half++) {
      const P3dcConvKind kind = kinds[k / 2];
      const guint32 channels = wide ? 16 : 3;
      ConvnetTestNet *net = convnet_test_net_new (wide ? 40 : 6, 7, 9);
      P3dcConvLayer l;
      P3dcConvNet *cnet = NULL;
      float **reference;
      DeviceInput in;
      P3dcMapView view;
      gchar *lanes;
      gsize bytes, n, e;
      guint8 *host;
      guint32 c, y, x, item, out_h = 7, out_w = 9;

      net->desc.batch = 2;
      memset (&l, 0, sizeof l);
      l.kind = kind;
      l.in_channels = l.out_channels = channels;
      l.input_channel_offset = wide ? 8 : 2;
      l.relu = kind == P3DC_LAYER_SOFTMAX ? 0 : 1;
      if (kind == P3DC_LAYER_ADD) {
        l.input2_channel_offset = wide ? 24 : 1;
      } else if (kind == P3DC_LAYER_MAX_POOL) {
        l.kernel = 3;
        l.stride = 2;
        l.padding = 1;
        out_h = 4;
        out_w = 5;
      } else if (kind == P3DC_LAYER_UPSAMPLE_NEAREST) {
        out_h = 11;
        out_w = 18;
      } else if (kind == P3DC_LAYER_UPSAMPLE_BILINEAR) {
        /* both corner rules, at a size that is not a multiple */
        l.align_corners = k / 2 == 3;
        out_h = 13;
        out_w = 20;
      }
      l.output = convnet_test_net_add_buffer (net, channels, out_h, out_w);
      convnet_test_net_add (net, &rng, &l, 0.0f);
      convnet_test_net_finish (net, &rng);
      /* the reference on the input as the device stores it */
      n = p3dc_convnet_buffer_elements (&net->desc, 0);
      if (half)
        for (e = 0; e < n; e++)
          net->input[e] = p3dc_half_to_float (p3dc_float_to_half
              (net->input[e]));
      reference = p3dc_convnet_cpu_buffers_new (&net->desc);
      fail_unless_equals_int (p3dc_convnet_cpu (&net->desc, net->input,
              reference), P3DC_OK);
      device_input_init (&in, net, FALSE);
      cnet = cuda_net_new (net, half, p3dc_convnet_kind_name (kind));
      lanes = g_strdup_printf ("%u-channel loads", wide && half &&
          kind != P3DC_LAYER_SOFTMAX ? 8 : 1);
      expect_plan (cnet, 0, lanes, TRUE);
      g_free (lanes);
      fail_unless_equals_int (p3dc_convnet_cuda_run (cnet, in.input, FALSE,
              in.stream), P3DC_OK);
      host = download (net, cnet, 1, in.stream, &view, &bytes);
      for (item = 0; item < 2; item++)
        for (c = 0; c < channels; c++)
          for (y = 0; y < out_h; y++)
            for (x = 0; x < out_w; x++) {
              gfloat want = reference[1][((item * channels + c) * out_h + y) *
                  out_w + x];
              gdouble got = convnet_test_view_read_item (&view, item, c, y,
                  x);
              gdouble allowed = 0.0;

              if (half)
                want = p3dc_half_to_float (p3dc_float_to_half (want));
              if (kind == P3DC_LAYER_SOFTMAX)
                allowed = half ? ldexp (fabs (want), -10) :
                    8 * ldexp (fabs (want), -24);
              fail_unless (fabs (got - want) <= allowed,
                  "%s (%s storage) at n %u c %u y %u x %u: %.9g, the "
                  "reference %.9g", p3dc_convnet_kind_name (kind),
                  half ? "F16" : "F32", item, c, y, x, got, want);
            }
      g_free (host);
      case_free (cnet, &in, net, reference);
    }
  }
}

GST_END_TEST;

GST_START_TEST (test_centerpoint_pattern)
{
  /* channel counts that tensor cores like, and odd ones */
  static const guint32 widths[2][3] = { {16, 32, 64}, {8, 12, 20} };
  static const guint32 layer_nums[3] = { 2, 3, 2 };
  static const guint32 necks[2] = { 16, 12 }, heads[2] = { 32, 8 };
  static const guint32 inputs[2] = { 16, 5 };
  static const guint32 sizes[2][2] = { {64, 64}, {40, 56} };
  P3dTestRng rng;
  guint shape, half, input_half;

  p3d_test_rng_init (&rng, 22);
  for (shape = 0; shape < 2; shape++) {
    ConvnetTestNet *net = convnet_test_net_centerpoint (&rng, inputs[shape],
        sizes[shape][0], sizes[shape][1], widths[shape], layer_nums,
        necks[shape], heads[shape], 3, shape == 1 ?
        CONVNET_TEST_HEADS_BY_TASK : CONVNET_TEST_HEADS_MERGED);

    for (half = 0; half < 2; half++)
      for (input_half = 0; input_half < 2; input_half++)
        check_net (net, half, input_half, shape == 0 ?
            "centerpoint (merged heads)" :
            "centerpoint (odd channels, task buffers)");
    convnet_test_net_free (net);
  }
  g_print ("largest error: F32 %.3g M, F16 %.3g u M (bounds 1e-4 M and "
      "(4 depth + 2) u M)\n", worst_float, worst_half);
}

GST_END_TEST;

GST_START_TEST (test_views_and_arguments)
{
  static const guint32 widths[3] = { 8, 8, 8 }, layer_nums[3] = { 0, 0, 0 };
  P3dTestRng rng;
  ConvnetTestNet *net;
  P3dcConvNet *cnet = NULL;
  DeviceInput in;
  P3dcMapView view;
  char message[512];
  guint half;

  p3d_test_rng_init (&rng, 23);
  net = convnet_test_net_centerpoint (&rng, 8, 16, 16, widths, layer_nums,
      8, 8, 1, CONVNET_TEST_HEADS_APART);
  for (half = 0; half < 2; half++) {
    const P3dcConvBufferDesc *buf = &net->desc.buffers[3];
    const P3dcConvBufferDesc *buf0 = &net->desc.buffers[0];
    int graph = -1;
    gsize bytes, n = p3dc_convnet_buffer_elements (&net->desc, 0), i;
    guint8 *host;

    device_input_init (&in, net, FALSE);
    cnet = cuda_net_new (net, half, "views");
    g_print ("%s storage runs on: %s\n", half ? "F16" : "F32",
        p3dc_convnet_cuda_launch_mode (cnet, &graph));
    fail_unless_equals_int (graph, 1);
    fail_unless_equals_int (p3dc_convnet_cuda_run (cnet, in.input, FALSE,
            in.stream), P3DC_OK);
    fail_unless_equals_int (p3dc_convnet_cuda_view (cnet, 3, &view), P3DC_OK);
    fail_unless_equals_int (view.half, half);
    if (half) {
      /* NHWC, channels padded for the tensor cores */
      fail_unless_equals_int (view.channel_stride, 1);
      fail_unless (view.column_stride >= buf->channels);
      fail_unless_equals_int (view.row_stride, buf->width * view.column_stride);
    } else {
      fail_unless_equals_int (view.column_stride, 1);
      fail_unless_equals_int (view.row_stride, buf->width);
      fail_unless_equals_int (view.channel_stride, buf->width * buf->height);
    }
    /* buffer 0 is the net's own copy of the input (the graph reads only
     * the net's buffers), exact in F32, rounded to F16 in F16 */
    host = download (net, cnet, 0, in.stream, &view, &bytes);
    for (i = 0; i < n; i++) {
      guint32 x = i % buf0->width, y = i / buf0->width % buf0->height;
      guint32 c = i / ((gsize) buf0->width * buf0->height);
      gdouble want = half ? p3dc_half_to_float (p3dc_float_to_half
          (net->input[i])) : net->input[i];

      fail_unless (convnet_test_view_read (&view, c, y, x) == want,
          "%s storage: input element %zu copied wrong", half ? "F16" : "F32",
          i);
    }
    g_free (host);
    fail_unless_equals_int (p3dc_convnet_cuda_view (cnet, 0, &view), P3DC_OK);
    fail_unless (view.data != in.input);
    fail_unless_equals_int (p3dc_convnet_cuda_view (cnet,
            net->desc.n_buffers, &view), P3DC_ERROR_INVALID_ARGUMENT);
    fail_unless_equals_int (p3dc_convnet_cuda_view (NULL, 0, &view),
        P3DC_ERROR_INVALID_ARGUMENT);
    fail_unless_equals_int (p3dc_convnet_cuda_run (cnet, NULL, FALSE,
            in.stream), P3DC_ERROR_INVALID_ARGUMENT);
    fail_unless_equals_int (p3dc_convnet_cuda_run (NULL, in.input, FALSE,
            in.stream), P3DC_ERROR_INVALID_ARGUMENT);
    p3dc_convnet_cuda_free (cnet);
    device_input_clear (&in);
  }
  /* an invalid description names the layer */
  ((P3dcConvLayer *) net->desc.layers)[2].padding = 0;
  fail_unless_equals_int (p3dc_convnet_cuda_new (&net->desc, 1, &cnet,
          message, sizeof message), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless (cnet == NULL);
  fail_unless (strstr (message, "layer 2") != NULL, "%s", message);
  fail_unless_equals_int (p3dc_convnet_cuda_new (&net->desc, 1, NULL,
          message, sizeof message), P3DC_ERROR_INVALID_ARGUMENT);
  convnet_test_net_free (net);
}

GST_END_TEST;

/* Skips (77) where cuDNN cannot be loaded, unless a GPU run is required. */
static void
require_cudnn (void)
{
  char message[512];

  if (p3dc_convnet_cuda_available (message, sizeof message) == P3DC_OK)
    return;
  if (p3d_test_gpu_required ()) {
    g_printerr ("PERCEPTION_REQUIRE_GPU=1 but cuDNN is unusable: %s\n",
        message);
    exit (1);
  }
  g_print ("SKIP: %s\n", message);
  exit (77);
}

static Suite *
convnet_cuda_suite (void)
{
  Suite *s = suite_create ("convnet_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  require_cudnn ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_random_nets);
  tcase_add_test (tc, test_random_graphs);
  tcase_add_test (tc, test_conv_plans);
  tcase_add_test (tc, test_grouped_kernel);
  tcase_add_test (tc, test_kinds_alone);
  tcase_add_test (tc, test_image_input);
  tcase_add_test (tc, test_softmax_wide);
  tcase_add_test (tc, test_centerpoint_pattern);
  tcase_add_test (tc, test_views_and_arguments);
  return s;
}

P3D_CHECK_MAIN (convnet_cuda);
