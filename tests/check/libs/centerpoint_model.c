/* The CenterPoint model (caps/p3dcenterpoint.c) built from a tiny model this
 * test writes in mmdetection3d's state_dict names: BatchNorm folding on a
 * hand-worked case; the config and the layer table of the tiny model (three
 * backbone stages, a neck with a strided conv, a 1x1 conv and a transposed
 * conv, two tasks); the table run layer by layer against the same network
 * written out directly with unfolded BatchNorm; and every bad metadata or
 * tensor refused with a message naming the key or the tensor. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>

#include "p3dcenterpoint.h"
#include "p3dmodel.h"
#include "p3dtest.h"
#include "p3dtest-tinymodel.h"

/* ---- the tiny model ------------------------------------------------- */

/* Its config: keep in step with the constants below. */
static const gchar tiny_config[] =
    "{\"architecture\": \"centerpoint-pillar\", \"version\": 1, "
    "\"point_channels\": 5, \"features\": \"pointpillars-10\", "
    "\"voxel_size\": [1.0, 1.0, 8], "
    "\"point_cloud_range\": [-4, -4, -5, 4, 4, 3], "
    "\"max_points\": 4, \"max_voxels\": 64, \"grid\": [8, 8, 1], "
    "\"pfn\": {\"channels\": [4], \"bn_eps\": 0.001}, "
    "\"backbone\": {\"out_channels\": [4, 6, 8], \"layer_nums\": [1, 2, 0], "
    "\"layer_strides\": [1, 2, 2], \"bn_eps\": 0.001}, "
    "\"neck\": {\"out_channels\": [3, 2, 3], "
    "\"upsample_strides\": [0.5, 1, 2], \"use_conv_for_no_stride\": true, "
    "\"bn_eps\": 0.001}, "
    "\"head\": {\"share_conv_channel\": 5, \"head_conv\": 4, "
    "\"final_kernel\": 3, \"bn_eps\": 1e-05, "
    "\"tasks\": [{\"class_names\": [\"car\"]}, "
    "{\"class_names\": [\"pedestrian\", \"cyclist\"]}], "
    "\"common_heads\": {\"reg\": 2, \"height\": 1, \"dim\": 3, \"rot\": 2, "
    "\"vel\": 2}, \"norm_bbox\": true}, "
    "\"coder\": {\"post_center_range\": [-6, -6, -10, 6, 6, 10], "
    "\"max_num\": 10, \"score_threshold\": 0.1, \"out_size_factor\": 2, "
    "\"voxel_size\": [1.0, 1.0], \"pc_range\": [-4, -4]}, "
    "\"test_nms\": {\"type\": \"circle\", \"min_radius\": [4, 0.5], "
    "\"nms_thr\": 0.2, \"pre_max_size\": 100, \"post_max_size\": 20}}";

#define GRID 8
#define N_STAGES 3
#define N_TASKS 2

/* The architecture the config describes, for 10 point features. */
static const TinyModelArch arch = {
  10, 4, N_STAGES, {4, 6, 8}, {1, 2, 0}, {3, 2, 3}, {0.5, 1, 2}, TRUE,
  5, 4, 3, N_TASKS, {1, 2}, TRUE
};

static const guint stage_strides[N_STAGES] = { 1, 2, 2 };
static const guint common_channels[5] = { 2, 1, 3, 2, 2 };

static const gchar *const head_names[6] = {
  "reg", "height", "dim", "rot", "vel", "heatmap"
};

#define BACKBONE_EPS 0.001
#define HEAD_EPS 1e-05

/* The tiny model for @pfn_in point features, with or without the vel
 * heads. */
static TinyModel *
tiny_new (guint pfn_in, gboolean vel)
{
  TinyModelArch a = arch;

  a.pfn_in = pfn_in;
  a.vel = vel;
  return tiny_model_new (&a, 12);
}

static const gfloat *
raw (TinyModel * m, const gchar * format, ...)
G_GNUC_PRINTF (2, 3);

     static const gfloat *raw (TinyModel * m, const gchar * format, ...)
{
  va_list args;
  gchar *name;
  const gfloat *values;

  va_start (args, format);
  name = g_strdup_vprintf (format, args);
  va_end (args);
  values = tiny_model_get (m, name)->values;
  g_free (name);
  return values;
}

static P3dCenterPointModel *
load (const gchar * path, GError ** error)
{
  P3dWeights *weights = p3d_weights_open (path, error);
  P3dCenterPointModel *model;

  if (weights == NULL)
    return NULL;
  model = p3d_centerpoint_model_new (weights, error);
  /* the model keeps nothing of the file */
  p3d_weights_free (weights);
  return model;
}

/* ---- the network, twice --------------------------------------------- */

static void
conv2d (const gfloat * in, guint channels, guint height, guint width,
    const gfloat * weight, const gfloat * bias, guint out_channels,
    guint kernel, guint stride, guint padding, gfloat * out, guint out_height,
    guint out_width)
{
  guint o, c, y, x, ky, kx;

  for (o = 0; o < out_channels; o++)
    for (y = 0; y < out_height; y++)
      for (x = 0; x < out_width; x++) {
        gdouble sum = bias ? bias[o] : 0.0;

        for (c = 0; c < channels; c++)
          for (ky = 0; ky < kernel; ky++)
            for (kx = 0; kx < kernel; kx++) {
              gint iy = (gint) (y * stride + ky) - (gint) padding;
              gint ix = (gint) (x * stride + kx) - (gint) padding;

              if (iy < 0 || ix < 0 || iy >= (gint) height || ix >= (gint) width)
                continue;
              sum += (gdouble) in[(c * height + iy) * width + ix] *
                  weight[((o * channels + c) * kernel + ky) * kernel + kx];
            }
        out[(o * out_height + y) * out_width + x] = (gfloat) sum;
      }
}

/* kernel == stride, no padding: every output cell has one source cell. */
static void
conv_transposed2d (const gfloat * in, guint channels, guint height,
    guint width, const gfloat * weight, const gfloat * bias,
    guint out_channels, guint kernel, gfloat * out)
{
  guint o, c, y, x, ky, kx, out_width = width * kernel;

  for (o = 0; o < out_channels; o++)
    for (y = 0; y < height * kernel; y++)
      for (x = 0; x < out_width; x++) {
        gdouble sum = bias ? bias[o] : 0.0;

        ky = y % kernel;
        kx = x % kernel;
        for (c = 0; c < channels; c++)
          sum += (gdouble) in[(c * height + y / kernel) * width + x / kernel]
              * weight[((c * out_channels + o) * kernel + ky) * kernel + kx];
        out[(o * height * kernel + y) * out_width + x] = (gfloat) sum;
      }
}

/* BatchNorm in inference, as PyTorch computes it, then ReLU. */
static void
norm_relu (TinyModel * m, const gchar * prefix, gdouble eps, gfloat * x,
    guint channels, gsize plane)
{
  const gfloat *gamma = raw (m, "%s.weight", prefix);
  const gfloat *beta = raw (m, "%s.bias", prefix);
  const gfloat *mean = raw (m, "%s.running_mean", prefix);
  const gfloat *var = raw (m, "%s.running_var", prefix);
  guint c;
  gsize i;

  for (c = 0; c < channels; c++)
    for (i = 0; i < plane; i++) {
      gdouble v = ((gdouble) x[c * plane + i] - mean[c]) /
          sqrt ((gdouble) var[c] + eps) * gamma[c] + beta[c];

      x[c * plane + i] = (gfloat) MAX (v, 0.0);
    }
}

/* The tiny network written out from the raw tensors, BatchNorm unfolded:
 * the head outputs [task][head] (NULL for an absent vel). */
static void
direct_forward (TinyModel * m, const gfloat * input,
    gfloat * outputs[N_TASKS][6])
{
  gfloat *stage_out[N_STAGES], *x = g_memdup2 (input,
      sizeof (gfloat) * arch.pfn_out * GRID * GRID);
  guint channels = arch.pfn_out, size = GRID, s, k, t, h, offset = 0;
  guint stage_size[N_STAGES];
  guint head_size = GRID / 2;
  gfloat *concat = g_new0 (gfloat, 8 * head_size * head_size);
  gfloat *shared = g_new (gfloat, arch.share_channels * head_size * head_size);
  gfloat *hidden = g_new (gfloat, arch.head_conv * head_size * head_size);
  gchar *prefix;

  for (s = 0; s < N_STAGES; s++) {
    for (k = 0; k <= arch.stage_layers[s]; k++) {
      guint stride = k == 0 ? stage_strides[s] : 1;
      guint out_size = (size - 1) / stride + 1;
      gfloat *y = g_new (gfloat, arch.stage_channels[s] * out_size * out_size);

      conv2d (x, channels, size, size, raw (m,
              "pts_backbone.blocks.%u.%u.weight", s, 3 * k), NULL,
          arch.stage_channels[s], 3, stride, 1, y, out_size, out_size);
      prefix = g_strdup_printf ("pts_backbone.blocks.%u.%u", s, 3 * k + 1);
      norm_relu (m, prefix, BACKBONE_EPS, y, arch.stage_channels[s],
          out_size * out_size);
      g_free (prefix);
      if (k > 0 || s == 0)
        g_free (x);
      x = y;
      channels = arch.stage_channels[s];
      size = out_size;
    }
    stage_out[s] = x;
    stage_size[s] = size;
  }
  for (s = 0; s < N_STAGES; s++) {
    gfloat *y = concat + offset * head_size * head_size;
    guint in_size = stage_size[s];
    const gfloat *w = raw (m, "pts_neck.deblocks.%u.0.weight", s);

    if (arch.neck_strides[s] > 1)
      conv_transposed2d (stage_out[s], arch.stage_channels[s], in_size, in_size,
          w, NULL, arch.neck_channels[s], (guint) arch.neck_strides[s], y);
    else
      conv2d (stage_out[s], arch.stage_channels[s], in_size, in_size, w, NULL,
          arch.neck_channels[s], (guint) round (1 / arch.neck_strides[s]),
          (guint) round (1 / arch.neck_strides[s]), 0, y, head_size, head_size);
    prefix = g_strdup_printf ("pts_neck.deblocks.%u.1", s);
    norm_relu (m, prefix, BACKBONE_EPS, y, arch.neck_channels[s],
        head_size * head_size);
    g_free (prefix);
    offset += arch.neck_channels[s];
  }
  conv2d (concat, offset, head_size, head_size, raw (m,
          "pts_bbox_head.shared_conv.conv.weight"), NULL, arch.share_channels,
      3, 1, 1, shared, head_size, head_size);
  norm_relu (m, "pts_bbox_head.shared_conv.bn", HEAD_EPS, shared,
      arch.share_channels, head_size * head_size);
  for (t = 0; t < N_TASKS; t++) {
    for (h = 0; h < 6; h++) {
      guint out = h == 5 ? arch.task_classes[t] : common_channels[h];

      outputs[t][h] = NULL;
      if (h == 4 && !m->arch.vel)
        continue;
      conv2d (shared, arch.share_channels, head_size, head_size, raw (m,
              "pts_bbox_head.task_heads.%u.%s.0.conv.weight", t,
              head_names[h]), NULL, arch.head_conv, arch.final_kernel, 1,
          arch.final_kernel / 2, hidden, head_size, head_size);
      prefix = g_strdup_printf ("pts_bbox_head.task_heads.%u.%s.0.bn", t,
          head_names[h]);
      norm_relu (m, prefix, HEAD_EPS, hidden, arch.head_conv,
          head_size * head_size);
      g_free (prefix);
      outputs[t][h] = g_new (gfloat, out * head_size * head_size);
      conv2d (hidden, arch.head_conv, head_size, head_size, raw (m,
              "pts_bbox_head.task_heads.%u.%s.1.weight", t, head_names[h]),
          raw (m, "pts_bbox_head.task_heads.%u.%s.1.bias", t, head_names[h]),
          out, arch.final_kernel, 1, arch.final_kernel / 2, outputs[t][h],
          head_size, head_size);
    }
  }
  for (s = 0; s < N_STAGES; s++)
    g_free (stage_out[s]);
  g_free (concat);
  g_free (shared);
  g_free (hidden);
}

/* The model's layer table run in order on buffers of its own shapes. */
static gfloat **
table_forward (const P3dCenterPointModel * model, const gfloat * input)
{
  const P3dcConvNetDesc *net = &model->net;
  gfloat **buffers = g_new0 (gfloat *, net->n_buffers);
  guint b, l;

  for (b = 0; b < net->n_buffers; b++)
    buffers[b] = g_new0 (gfloat, net->buffers[b].channels *
        net->buffers[b].height * net->buffers[b].width);
  memcpy (buffers[0], input, sizeof (gfloat) * arch.pfn_out * GRID * GRID);
  for (l = 0; l < net->n_layers; l++) {
    const P3dcConvLayer *layer = &net->layers[l];
    const P3dcConvBufferDesc *in = &net->buffers[layer->input];
    const P3dcConvBufferDesc *out = &net->buffers[layer->output];
    gsize plane = (gsize) out->height * out->width;
    gfloat *dest = buffers[layer->output] + layer->output_channel_offset *
        plane;
    gsize i;

    fail_unless_equals_int (in->channels, layer->in_channels);
    fail_unless (layer->output_channel_offset + layer->out_channels <=
        out->channels);
    if (layer->kind == P3DC_CONV_2D) {
      fail_unless_equals_int (out->height, (in->height + 2 * layer->padding -
              layer->kernel) / layer->stride + 1);
      conv2d (buffers[layer->input], in->channels, in->height, in->width,
          layer->weight, layer->bias, layer->out_channels, layer->kernel,
          layer->stride, layer->padding, dest, out->height, out->width);
    } else {
      fail_unless_equals_int (layer->kernel, layer->stride);
      fail_unless_equals_int (out->height, in->height * layer->kernel);
      conv_transposed2d (buffers[layer->input], in->channels, in->height,
          in->width, layer->weight, layer->bias, layer->out_channels,
          layer->kernel, dest);
    }
    if (layer->relu)
      for (i = 0; i < layer->out_channels * plane; i++)
        dest[i] = MAX (dest[i], 0.0f);
  }
  return buffers;
}

/* ---- tests ----------------------------------------------------------- */

/* scale = gamma / sqrt (var + eps): 1 / 2 and -2 / 1 with eps 1. */
GST_START_TEST (test_fold_hand_worked)
{
  const gfloat gamma[2] = { 1.0f, -2.0f }, beta[2] = { 1.0f, 0.5f };
  const gfloat mean[2] = { 4.0f, -1.0f }, var[2] = { 3.0f, 0.0f };
  const gfloat layer_bias[2] = { 1.0f, 2.0f };
  gfloat conv[6] = { 2.0f, -6.0f, 1.0f, 0.5f, 0.25f, -1.0f };
  const gfloat conv_expected[6] = { 1.0f, -3.0f, 0.5f, -1.0f, -0.5f, 2.0f };
  /* ConvTranspose2d [in 2][out 2][1][1]: the output channel is dim 1 */
  gfloat transposed[4] = { 2.0f, 0.5f, -6.0f, 0.25f };
  const gfloat transposed_expected[4] = { 1.0f, -1.0f, -3.0f, -0.5f };
  gfloat bias[2];
  guint i;

  p3d_centerpoint_fold_batchnorm (conv, 1, 2, 3, NULL, gamma, beta, mean,
      var, 1.0, bias);
  for (i = 0; i < 6; i++)
    fail_unless_equals_float (conv[i], conv_expected[i]);
  /* b' = beta - mean * scale */
  fail_unless_equals_float (bias[0], -1.0f);
  fail_unless_equals_float (bias[1], -1.5f);

  p3d_centerpoint_fold_batchnorm (transposed, 2, 2, 1, NULL, gamma, beta,
      mean, var, 1.0, bias);
  for (i = 0; i < 4; i++)
    fail_unless_equals_float (transposed[i], transposed_expected[i]);

  /* a layer's own bias goes through the norm: beta + (b - mean) * scale */
  memcpy (conv, conv_expected, sizeof (conv));
  p3d_centerpoint_fold_batchnorm (conv, 1, 2, 3, layer_bias, gamma, beta,
      mean, var, 1.0, bias);
  fail_unless_equals_float (bias[0], -0.5f);
  fail_unless_equals_float (bias[1], -5.5f);
}

GST_END_TEST;

GST_START_TEST (test_config)
{
  P3dCenterPointConfig config;
  GError *error = NULL;

  fail_unless (p3d_centerpoint_config_parse (&config, tiny_config, &error),
      "%s", error ? error->message : "");
  fail_unless_equals_int (config.pillar.point_channels, 5);
  fail_unless_equals_int (config.pillar.features,
      P3D_FEATURE_SET_POINTPILLARS_10);
  fail_unless_equals_float (config.pillar.point_cloud_range[2], -5.0);
  fail_unless_equals_int (config.pillar.grid[0], 8);
  fail_unless_equals_int (config.pillar.max_voxels, 64);
  fail_unless_equals_int (config.pillar.pfn_channels, 4);
  fail_unless_equals_int (config.pillar.n_stages, 3);
  fail_unless_equals_int (config.pillar.backbone_layer_nums[1], 2);
  fail_unless_equals_float (config.pillar.neck_upsample_strides[0], 0.5);
  fail_unless (config.pillar.neck_use_conv_for_no_stride);
  fail_unless_equals_float (config.head_bn_eps, 1e-5);
  fail_unless_equals_int (config.n_tasks, 2);
  fail_unless_equals_int (config.n_classes, 3);
  fail_unless_equals_int (config.tasks[1].n_classes, 2);
  fail_unless_equals_int (config.tasks[1].label_offset, 1);
  fail_unless_equals_string (config.tasks[1].class_names[1], "cyclist");
  fail_unless (config.tasks[1].class_names[2] == NULL);
  fail_unless_equals_float (config.tasks[0].min_radius, 4.0);
  fail_unless_equals_float (config.tasks[1].min_radius, 0.5);
  fail_unless_equals_int (config.head_channels[P3D_CENTERPOINT_HEAD_DIM], 3);
  fail_unless (config.norm_bbox);
  fail_unless_equals_int (config.max_num, 10);
  fail_unless_equals_float (config.score_threshold, 0.1);
  fail_unless_equals_int (config.out_size_factor, 2);
  fail_unless_equals_float (config.coder_pc_range[1], -4.0);
  fail_unless_equals_int (config.nms_type, P3DC_CENTERPOINT_NMS_CIRCLE);
  fail_unless_equals_int (config.post_max_size, 20);
  p3d_centerpoint_config_clear (&config);
}

GST_END_TEST;

/* The layer table of the tiny model, written out by hand. */
typedef struct
{
  P3dcConvKind kind;
  guint in, out, kernel, stride, padding, relu, input, output, offset;
} ExpectedLayer;

static const ExpectedLayer expected_layers[] = {
  /* backbone stage 0 (8 x 8): every layer writes a buffer of its own */
  {P3DC_CONV_2D, 4, 4, 3, 1, 1, 1, 0, 1, 0},
  {P3DC_CONV_2D, 4, 4, 3, 1, 1, 1, 1, 2, 0},
  /* stage 1 (4 x 4): 3, 4, 5 */
  {P3DC_CONV_2D, 4, 6, 3, 2, 1, 1, 2, 3, 0},
  {P3DC_CONV_2D, 6, 6, 3, 1, 1, 1, 3, 4, 0},
  {P3DC_CONV_2D, 6, 6, 3, 1, 1, 1, 4, 5, 0},
  /* stage 2 (2 x 2): one conv into 6 */
  {P3DC_CONV_2D, 6, 8, 3, 2, 1, 1, 5, 6, 0},
  /* neck into buffer 7 (8 x 4 x 4) */
  {P3DC_CONV_2D, 4, 3, 2, 2, 0, 1, 2, 7, 0},
  {P3DC_CONV_2D, 6, 2, 1, 1, 0, 1, 5, 7, 3},
  {P3DC_CONV_TRANSPOSED_2D, 8, 3, 2, 2, 0, 1, 6, 7, 5},
  /* shared conv into 8, task 0's reg through its own hidden 9 into 10 */
  {P3DC_CONV_2D, 8, 5, 3, 1, 1, 1, 7, 8, 0},
  {P3DC_CONV_2D, 5, 4, 3, 1, 1, 1, 8, 9, 0},
  {P3DC_CONV_2D, 4, 2, 3, 1, 1, 0, 9, 10, 0},
};

GST_START_TEST (test_layer_table)
{
  TinyModel *m = tiny_new (10, TRUE);
  gchar *path = tiny_model_write (m, tiny_config, NULL);
  GError *error = NULL;
  P3dCenterPointModel *model = load (path, &error);
  const P3dcConvNetDesc *net;
  const guint buffer_shapes[10][3] = {
    {4, 8, 8}, {4, 8, 8}, {4, 8, 8}, {6, 4, 4}, {6, 4, 4}, {6, 4, 4},
    {8, 2, 2}, {8, 4, 4}, {5, 4, 4}, {4, 4, 4}
  };
  guint i, t, h, next = 9;

  fail_unless (model != NULL, "%s", error ? error->message : "");
  net = &model->net;
  /* 9 before the heads, then each head's hidden buffer and output */
  fail_unless_equals_int (net->n_buffers, 9 + 2 * (6 + 6));
  fail_unless_equals_int (net->n_layers, 12 + 11 * 2);
  for (i = 0; i < 10; i++) {
    fail_unless_equals_int (net->buffers[i].channels, buffer_shapes[i][0]);
    fail_unless_equals_int (net->buffers[i].height, buffer_shapes[i][1]);
    fail_unless_equals_int (net->buffers[i].width, buffer_shapes[i][2]);
  }
  for (i = 0; i < G_N_ELEMENTS (expected_layers); i++) {
    const ExpectedLayer *e = &expected_layers[i];
    const P3dcConvLayer *l = &net->layers[i];

    fail_unless_equals_int (l->kind, e->kind);
    fail_unless_equals_int (l->in_channels, e->in);
    fail_unless_equals_int (l->out_channels, e->out);
    fail_unless_equals_int (l->kernel, e->kernel);
    fail_unless_equals_int (l->stride, e->stride);
    fail_unless_equals_int (l->padding, e->padding);
    fail_unless_equals_int (!!l->relu, e->relu);
    fail_unless_equals_int (l->input, e->input);
    fail_unless_equals_int (l->output, e->output);
    fail_unless_equals_int (l->output_channel_offset, e->offset);
    fail_unless (l->weight != NULL && l->bias != NULL);
  }
  fail_unless_equals_int (model->neck_output, 7);
  fail_unless_equals_int (model->head_height, 4);
  fail_unless_equals_int (model->head_width, 4);
  /* every head a hidden buffer and an output of its own, in task and head
   * order */
  for (t = 0; t < N_TASKS; t++) {
    for (h = 0; h < P3D_CENTERPOINT_N_HEADS; h++) {
      guint channels = h == 5 ? arch.task_classes[t] : common_channels[h];

      fail_unless_equals_int (model->heads[t][h].buffer, next + 1);
      fail_unless_equals_int (model->heads[t][h].channels, channels);
      fail_unless_equals_int (net->buffers[next].channels, 4);
      fail_unless_equals_int (net->buffers[next + 1].channels, channels);
      fail_unless_equals_int (net->buffers[next + 1].height, 4);
      next += 2;
    }
  }
  fail_unless_equals_string (p3d_centerpoint_head_to_string
      (P3D_CENTERPOINT_HEAD_HEATMAP), "heatmap");

  p3d_centerpoint_model_free (model);
  g_unlink (path);
  g_free (path);
  tiny_model_free (m);
}

GST_END_TEST;

/* Folded PFN: W' x + b' equals BatchNorm (W x) for random x. */
GST_START_TEST (test_pfn_fold)
{
  TinyModel *m = tiny_new (10, TRUE);
  gchar *path = tiny_model_write (m, tiny_config, NULL);
  P3dCenterPointModel *model = load (path, NULL);
  const gfloat *w = raw (m, "pts_voxel_encoder.pfn_layers.0.linear.weight");
  const gfloat *gamma = raw (m, "pts_voxel_encoder.pfn_layers.0.norm.weight");
  const gfloat *beta = raw (m, "pts_voxel_encoder.pfn_layers.0.norm.bias");
  const gfloat *mean =
      raw (m, "pts_voxel_encoder.pfn_layers.0.norm.running_mean");
  const gfloat *var =
      raw (m, "pts_voxel_encoder.pfn_layers.0.norm.running_var");
  P3dTestRng rng;
  guint trial, o, i;

  fail_unless (model != NULL);
  fail_unless_equals_int (model->pfn_in_channels, 10);
  fail_unless_equals_int (model->pfn_out_channels, 4);
  p3d_test_rng_init (&rng, 5);
  for (trial = 0; trial < 20; trial++) {
    gfloat x[10];

    for (i = 0; i < 10; i++)
      x[i] = p3d_test_rng_uniform (&rng, -30.0f, 30.0f);
    for (o = 0; o < 4; o++) {
      gdouble linear = 0, folded = model->pfn_bias[o], expected;

      for (i = 0; i < 10; i++) {
        linear += (gdouble) w[o * 10 + i] * x[i];
        folded += (gdouble) model->pfn_weight[o * 10 + i] * x[i];
      }
      expected = (linear - mean[o]) / sqrt (var[o] + 0.001) * gamma[o] +
          beta[o];
      fail_unless (fabs (folded - expected) <= 1e-5 * (1 + fabs (expected)),
          "channel %u: folded %g, BatchNorm %g", o, folded, expected);
    }
  }
  p3d_centerpoint_model_free (model);
  g_unlink (path);
  g_free (path);
  tiny_model_free (m);
}

GST_END_TEST;

/* The layer table with folded weights computes what the network with its
 * BatchNorms computes, for every head of every task. */
static void
check_forward (gboolean vel)
{
  TinyModel *m = tiny_new (10, vel);
  gchar *path = tiny_model_write (m, tiny_config, NULL);
  gchar *config = NULL;
  P3dCenterPointModel *model;
  GError *error = NULL;
  gfloat *input = g_new (gfloat, arch.pfn_out * GRID * GRID);
  gfloat *direct[N_TASKS][6], **table;
  P3dTestRng rng;
  guint t, h, i;
  gdouble worst = 0;

  if (!vel) {
    config = tiny_model_replace_once (tiny_config, ", \"vel\": 2", "");
    g_unlink (path);
    g_free (path);
    path = tiny_model_write (m, config, NULL);
  }
  model = load (path, &error);
  fail_unless (model != NULL, "%s", error ? error->message : "");
  p3d_test_rng_init (&rng, 99);
  /* a canvas as the scatter leaves it: ReLU outputs, zero where no pillar */
  for (i = 0; i < arch.pfn_out * GRID * GRID; i++)
    input[i] = p3d_test_rng_below (&rng, 3) == 0 ? 0.0f :
        p3d_test_rng_uniform (&rng, 0.0f, 3.0f);
  direct_forward (m, input, direct);
  table = table_forward (model, input);
  for (t = 0; t < N_TASKS; t++) {
    for (h = 0; h < P3D_CENTERPOINT_N_HEADS; h++) {
      const P3dCenterPointHeadOutput *out = &model->heads[t][h];

      if (h == P3D_CENTERPOINT_HEAD_VEL && !vel) {
        fail_unless_equals_int (out->channels, 0);
        fail_unless (direct[t][h] == NULL);
        continue;
      }
      for (i = 0; i < out->channels * 16; i++) {
        gdouble a = table[out->buffer][out->channel_offset * 16 + i];
        gdouble b = direct[t][h][i];

        worst = MAX (worst, fabs (a - b) / (1 + fabs (b)));
        fail_unless (fabs (a - b) <= 1e-5 * (1 + fabs (b)),
            "task %u head %s value %u: table %g, direct %g", t,
            head_names[h], i, a, b);
      }
      g_free (direct[t][h]);
    }
  }
  GST_INFO ("worst relative difference %g", worst);
  /* and the outputs are not trivially zero */
  for (i = 0; i < 16; i++)
    if (table[model->heads[1][P3D_CENTERPOINT_HEAD_HEATMAP].buffer]
        [model->heads[1][P3D_CENTERPOINT_HEAD_HEATMAP].channel_offset * 16 +
            i] != 0)
      break;
  fail_unless (i < 16);
  for (i = 0; i < model->net.n_buffers; i++)
    g_free (table[i]);
  g_free (table);
  g_free (input);
  p3d_centerpoint_model_free (model);
  g_unlink (path);
  g_free (path);
  g_free (config);
  tiny_model_free (m);
}

GST_START_TEST (test_forward)
{
  check_forward (TRUE);
}

GST_END_TEST;

GST_START_TEST (test_forward_without_vel)
{
  check_forward (FALSE);
}

GST_END_TEST;

/* A feature set added to pillarfeat later (mmdetection3d's 11 channels)
 * works as soon as the caps library knows it. */
GST_START_TEST (test_other_feature_sets)
{
  const gchar *sets[] = { "mmdet3d-9", "pointpillars-11", "mmdet3d-11" };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (sets); i++) {
    P3dFeatureSet set = p3d_feature_set_from_string (sets[i]);
    gchar *features, *config, *path;
    TinyModel *m;
    P3dCenterPointModel *model;
    GError *error = NULL;

    if (set == P3D_FEATURE_SET_UNKNOWN) {
      GST_INFO ("feature set %s not known yet", sets[i]);
      continue;
    }
    features = g_strdup_printf ("\"features\": \"%s\"", sets[i]);
    config =
        tiny_model_replace_once (tiny_config,
        "\"features\": \"pointpillars-10\"", features);
    m = tiny_new (p3d_feature_set_get_channels (set), TRUE);
    path = tiny_model_write (m, config, NULL);
    model = load (path, &error);
    fail_unless (model != NULL, "%s", error ? error->message : "");
    fail_unless_equals_int (model->pfn_in_channels,
        p3d_feature_set_get_channels (set));
    p3d_centerpoint_model_free (model);
    g_unlink (path);
    g_free (path);
    g_free (config);
    g_free (features);
    tiny_model_free (m);
  }
}

GST_END_TEST;

/* A bad config (the tiny one with @old replaced by @new, or no metadata at
 * all when @old is NULL) or a bad tensor, and how it must be refused. */
typedef struct
{
  const gchar *old;
  const gchar *new;
  TinyModelMutation mutation;
  guint pfn_in;                 /* 0: the config's 10 */
  gint code;
  const gchar *words[4];        /* NULL-terminated */
} BadModel;

#define NO_CHANGE "\"version\": 1", "\"version\": 1"
#define NO_MUTATION {NULL, NULL, 0, {0}, NULL, NULL}

static const BadModel bad_models[] = {
  {NULL, NULL, NO_MUTATION, 0, P3D_WEIGHTS_ERROR_MISSING_METADATA,
      {"no \"p3d.model\" metadata", "convert_mmdet3d_centerpoint.py"}},
  {"{\"architecture\"", "{\"architecture\" {", NO_MUTATION, 0,
      P3D_WEIGHTS_ERROR_BAD_METADATA, {"not valid JSON"}},
  {"\"centerpoint-pillar\"", "\"pointrcnn\"", NO_MUTATION, 0,
        P3D_WEIGHTS_ERROR_BAD_METADATA, {"\"architecture\"",
          "centerpoint-pillar, bevdet or pointpillars"}},
  {"\"version\": 1", "\"version\": 2", NO_MUTATION, 0,
      P3D_WEIGHTS_ERROR_BAD_METADATA, {"\"version\"", "1..1"}},
  {"\"max_points\": 4", "\"max_points\": 0", NO_MUTATION, 0,
      P3D_WEIGHTS_ERROR_BAD_METADATA, {"\"max_points\"", "1..1024"}},
  {"\"max_voxels\": 64", "\"max_voxels\": \"64\"", NO_MUTATION, 0,
      P3D_WEIGHTS_ERROR_BAD_METADATA, {"\"max_voxels\"", "integer"}},
  {"\"layer_nums\": [1, 2, 0], ", "", NO_MUTATION, 0,
      P3D_WEIGHTS_ERROR_BAD_METADATA, {"\"backbone.layer_nums\"", "missing"}},
  {"\"layer_nums\": [1, 2, 0]", "\"layer_nums\": [1, 2]", NO_MUTATION, 0,
        P3D_WEIGHTS_ERROR_BAD_METADATA, {"\"backbone.layer_nums\"",
          "3 entries"}},
  {"\"layer_strides\": [1, 2, 2]", "\"layer_strides\": [1, -2, 2]",
        NO_MUTATION, 0, P3D_WEIGHTS_ERROR_BAD_METADATA,
      {"\"backbone.layer_strides\"", "entry 1"}},
  {"\"pointpillars-10\"", "\"foo-12\"", NO_MUTATION, 0,
      P3D_WEIGHTS_ERROR_BAD_METADATA, {"\"features\""}},
  {"\"grid\": [8, 8, 1]", "\"grid\": [9, 8, 1]", NO_MUTATION, 0,
      P3D_WEIGHTS_ERROR_BAD_METADATA, {"\"grid\"", "disagrees"}},
  {"\"voxel_size\": [1.0, 1.0, 8]", "\"voxel_size\": [1.0, 1.0, 4]",
        NO_MUTATION, 0, P3D_WEIGHTS_ERROR_BAD_METADATA, {"\"grid\"",
          "disagrees"}},
  {"\"voxel_size\": [1.0, 1.0, 8], \"point_cloud_range\": [-4, -4, -5, 4, 4, 3], " "\"max_points\": 4, \"max_voxels\": 64, \"grid\": [8, 8, 1]",
        "\"voxel_size\": [1.0, 1.0, 4], \"point_cloud_range\": [-4, -4, -5, 4, 4, 3], "
        "\"max_points\": 4, \"max_voxels\": 64, \"grid\": [8, 8, 2]",
        NO_MUTATION, 0, P3D_WEIGHTS_ERROR_BAD_METADATA, {"\"grid\"",
          "one z cell"}},
  {"\"channels\": [4]", "\"channels\": [4, 4]", NO_MUTATION, 0,
      P3D_WEIGHTS_ERROR_BAD_METADATA, {"\"pfn.channels\""}},
  {"\"reg\": 2", "\"reg\": 3", NO_MUTATION, 0,
        P3D_WEIGHTS_ERROR_BAD_METADATA, {"\"head.common_heads.reg\"",
          "must be 2"}},
  {"\"reg\": 2, ", "", NO_MUTATION, 0, P3D_WEIGHTS_ERROR_BAD_METADATA,
      {"\"head.common_heads.reg\"", "missing"}},
  {"\"reg\": 2", "\"iou\": 1, \"reg\": 2", NO_MUTATION, 0,
      P3D_WEIGHTS_ERROR_BAD_METADATA, {"\"head.common_heads.iou\""}},
  {"\"final_kernel\": 3", "\"final_kernel\": 2", NO_MUTATION, 0,
      P3D_WEIGHTS_ERROR_BAD_METADATA, {"\"head.final_kernel\"", "odd"}},
  {"\"tasks\": [{\"class_names\": [\"car\"]}, ", "\"tasks\": [], \"x\": [",
        NO_MUTATION, 0, P3D_WEIGHTS_ERROR_BAD_METADATA, {"\"head.tasks\"",
          "1 to 16"}},
  {"[\"car\"]", "[1]", NO_MUTATION, 0, P3D_WEIGHTS_ERROR_BAD_METADATA,
      {"\"head.tasks[0].class_names\"", "strings"}},
  {"\"min_radius\": [4, 0.5], ", "", NO_MUTATION, 0,
        P3D_WEIGHTS_ERROR_BAD_METADATA, {"\"test_nms.min_radius\"",
          "missing"}},
  {"\"min_radius\": [4, 0.5]", "\"min_radius\": [4]", NO_MUTATION, 0,
        P3D_WEIGHTS_ERROR_BAD_METADATA, {"\"test_nms.min_radius\"",
          "2 entries"}},
  {"\"type\": \"circle\"", "\"type\": \"nms\"", NO_MUTATION, 0,
      P3D_WEIGHTS_ERROR_BAD_METADATA, {"\"test_nms.type\""}},
  {"\"score_threshold\": 0.1", "\"score_threshold\": 1.5", NO_MUTATION, 0,
      P3D_WEIGHTS_ERROR_BAD_METADATA, {"\"coder.score_threshold\""}},
  {"\"upsample_strides\": [0.5, 1, 2]", "\"upsample_strides\": [0.3, 1, 2]",
        NO_MUTATION, 0, P3D_WEIGHTS_ERROR_BAD_METADATA,
      {"\"neck.upsample_strides\"", "0.3"}},
  {"\"upsample_strides\": [0.5, 1, 2]", "\"upsample_strides\": [0.5, 1, 4]",
        NO_MUTATION, 0, P3D_WEIGHTS_ERROR_BAD_METADATA,
      {"neck stage 2 gives a 8 x 8", "upsample_strides"}},
  {"\"out_size_factor\": 2", "\"out_size_factor\": 4", NO_MUTATION, 0,
      P3D_WEIGHTS_ERROR_BAD_METADATA, {"out_size_factor 4", "4 x 4"}},
  {"\"max_num\": 10", "\"max_num\": 17", NO_MUTATION, 0,
      P3D_WEIGHTS_ERROR_BAD_METADATA, {"max_num 17", "16"}},
  /* a config with fewer layers or heads than the weights */
  {"\"layer_nums\": [1, 2, 0]", "\"layer_nums\": [1, 1, 0]", NO_MUTATION, 0,
        P3D_WEIGHTS_ERROR_BAD_METADATA, {"'pts_backbone.blocks.1.6.weight'",
          "belongs to no layer"}},
  {", \"vel\": 2", "", NO_MUTATION, 0, P3D_WEIGHTS_ERROR_BAD_METADATA,
        {"'pts_bbox_head.task_heads.0.vel.0.conv.weight'",
          "belongs to no layer"}},
  /* tensors */
  {NO_CHANGE, {"pts_neck.deblocks.1.1.running_var", NULL, 0, {0}, NULL,
          NULL}, 0, P3D_WEIGHTS_ERROR_MISSING_TENSOR,
      {"'pts_neck.deblocks.1.1.running_var'"}},
  {NO_CHANGE, {"pts_bbox_head.task_heads.1.heatmap.1.bias", NULL, 0, {0},
          NULL, NULL}, 0, P3D_WEIGHTS_ERROR_MISSING_TENSOR,
      {"'pts_bbox_head.task_heads.1.heatmap.1.bias'"}},
  {NO_CHANGE, {NULL, "pts_backbone.blocks.1.0.weight", 4, {6, 3, 3, 3}, NULL,
          NULL}, 0, P3D_WEIGHTS_ERROR_BAD_SHAPE,
      {"'pts_backbone.blocks.1.0.weight'", "has shape [6, 3, 3, 3]",
          "expects [6, 4, 3, 3]"}},
  /* a transposed conv's weight in the conv layout */
  {NO_CHANGE, {NULL, "pts_neck.deblocks.2.0.weight", 4, {3, 8, 2, 2}, NULL,
          NULL}, 0, P3D_WEIGHTS_ERROR_BAD_SHAPE,
      {"'pts_neck.deblocks.2.0.weight'", "[3, 8, 2, 2]", "[8, 3, 2, 2]"}},
  {NO_CHANGE, {NULL, "pts_bbox_head.task_heads.1.heatmap.1.bias", 1, {3},
          NULL, NULL}, 0, P3D_WEIGHTS_ERROR_BAD_SHAPE,
      {"heatmap.1.bias'", "has shape [3]", "expects [2]"}},
  {NO_CHANGE, NO_MUTATION, 9, P3D_WEIGHTS_ERROR_BAD_SHAPE,
        {"'pts_voxel_encoder.pfn_layers.0.linear.weight'", "[4, 9]",
          "[4, 10]"}},
  {NO_CHANGE, {NULL, NULL, 0, {0}, "pts_bbox_head.shared_conv.bn.weight",
          NULL}, 0, P3D_WEIGHTS_ERROR_UNSUPPORTED_DTYPE,
      {"'pts_bbox_head.shared_conv.bn.weight'", "I32"}},
  {NO_CHANGE, {NULL, NULL, 0, {0}, NULL,
          "pts_backbone.blocks.0.1.running_var"}, 0,
      P3D_WEIGHTS_ERROR_BAD_VALUE, {"pts_backbone.blocks.0.1.running_var[0]",
          "negative"}},
  /* weights that cannot be right, refused at load, not per frame */
  {NO_CHANGE, {NULL, NULL, 0, {0}, NULL, NULL,
          "pts_backbone.blocks.1.3.weight"}, 0, P3D_WEIGHTS_ERROR_BAD_VALUE,
      {"tensor 'pts_backbone.blocks.1.3.weight' holds nan at element 0",
          "finite"}},
  {NO_CHANGE, {NULL, NULL, 0, {0}, NULL, NULL,
          "pts_voxel_encoder.pfn_layers.0.linear.weight"}, 0,
      P3D_WEIGHTS_ERROR_BAD_VALUE,
      {"'pts_voxel_encoder.pfn_layers.0.linear.weight' holds nan"}},
};

GST_START_TEST (test_bad_model)
{
  const BadModel *bad = &bad_models[__i__];
  TinyModel *m = tiny_new (bad->pfn_in ? bad->pfn_in : 10, TRUE);
  gchar *config =
      bad->old ? tiny_model_replace_once (tiny_config, bad->old, bad->new)
      : NULL;
  gchar *path = tiny_model_write (m, config, &bad->mutation);
  GError *error = NULL;
  P3dCenterPointModel *model = load (path, &error);
  const gchar *const *word;

  fail_unless (model == NULL, "case %d loaded", __i__);
  fail_unless (error != NULL && error->domain == P3D_WEIGHTS_ERROR);
  fail_unless_equals_int (error->code, bad->code);
  /* every message names the file */
  fail_unless (strstr (error->message, path) != NULL, "%s", error->message);
  for (word = bad->words; *word; word++)
    fail_unless (strstr (error->message, *word) != NULL, "'%s' not in '%s'",
        *word, error->message);
  GST_INFO ("case %d: %s", __i__, error->message);
  g_error_free (error);
  g_unlink (path);
  g_free (path);
  g_free (config);
  tiny_model_free (m);
}

GST_END_TEST;

/* The class names, in label order over the tasks, from the metadata alone
 * (bevrender's legend reads them). */
GST_START_TEST (test_class_names)
{
  TinyModel *m = tiny_new (10, TRUE);
  gchar *path = tiny_model_write (m, tiny_config, NULL);
  gchar *no_config = tiny_model_write (m, NULL, NULL);
  GError *error = NULL;
  P3dWeights *weights;
  gchar **names;

  weights = p3d_weights_open (path, &error);
  fail_unless (weights != NULL);
  names = p3d_model_read_class_names (weights, &error);
  fail_unless (names != NULL, "%s", error ? error->message : "");
  fail_unless_equals_int (g_strv_length (names), 3);
  fail_unless_equals_string (names[0], "car");
  fail_unless_equals_string (names[1], "pedestrian");
  fail_unless_equals_string (names[2], "cyclist");
  g_strfreev (names);
  p3d_weights_free (weights);
  weights = p3d_weights_open (no_config, &error);
  fail_if (p3d_model_read_class_names (weights, &error));
  fail_unless (g_error_matches (error, P3D_WEIGHTS_ERROR,
          P3D_WEIGHTS_ERROR_MISSING_METADATA));
  g_clear_error (&error);
  p3d_weights_free (weights);
  g_unlink (path);
  g_unlink (no_config);
  g_free (path);
  g_free (no_config);
  tiny_model_free (m);
}

GST_END_TEST;

/* A `p3d.model` document nested 100 000 levels deep overflowed json-glib's
 * recursion (issue 32.1): refused by the depth scan, naming the file. */
GST_START_TEST (test_deep_metadata)
{
  TinyModel *m = tiny_new (10, TRUE);
  GString *config = g_string_new ("{\"architecture\": ");
  gchar *path;
  GError *error = NULL;
  guint i;

  for (i = 0; i < 100000; i++)
    g_string_append (config, "[");
  for (i = 0; i < 100000; i++)
    g_string_append (config, "]");
  g_string_append (config, "}");
  path = tiny_model_write (m, config->str, NULL);
  fail_if (load (path, &error));
  fail_unless (g_error_matches (error, P3D_WEIGHTS_ERROR,
          P3D_WEIGHTS_ERROR_BAD_METADATA));
  fail_unless (strstr (error->message, path) != NULL
      && strstr (error->message, "not valid JSON: nested more than 64 levels "
          "deep") != NULL, "%s", error->message);
  g_clear_error (&error);
  g_unlink (path);
  g_free (path);
  g_string_free (config, TRUE);
  tiny_model_free (m);
}

GST_END_TEST;

/* A rotate-NMS config may leave out min_radius; a file without the vel
 * tensors needs no vel head. */
GST_START_TEST (test_rotate_without_radius)
{
  gchar *config = tiny_model_replace_once (tiny_config,
      "\"type\": \"circle\", \"min_radius\": [4, 0.5], ",
      "\"type\": \"rotate\", ");
  P3dCenterPointConfig parsed;
  GError *error = NULL;

  fail_unless (p3d_centerpoint_config_parse (&parsed, config, &error), "%s",
      error ? error->message : "");
  fail_unless_equals_int (parsed.nms_type, P3DC_CENTERPOINT_NMS_ROTATE);
  fail_unless_equals_float (parsed.tasks[1].min_radius, 0.0);
  fail_unless_equals_float (parsed.nms_thr, 0.2);
  p3d_centerpoint_config_clear (&parsed);
  g_free (config);
}

GST_END_TEST;

static Suite *
centerpoint_model_suite (void)
{
  Suite *s = suite_create ("centerpoint_model");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_fold_hand_worked);
  tcase_add_test (tc, test_config);
  tcase_add_test (tc, test_layer_table);
  tcase_add_test (tc, test_pfn_fold);
  tcase_add_test (tc, test_forward);
  tcase_add_test (tc, test_forward_without_vel);
  tcase_add_test (tc, test_other_feature_sets);
  tcase_add_loop_test (tc, test_bad_model, 0, G_N_ELEMENTS (bad_models));
  tcase_add_test (tc, test_deep_metadata);
  tcase_add_test (tc, test_class_names);
  tcase_add_test (tc, test_rotate_without_radius);
  return s;
}

P3D_CHECK_MAIN (centerpoint_model);
