/* The bevdet model family (caps/p3dmodel-bevdet.c): tiny BEVDet-shaped
 * models (p3dtest-bevdet.h) with random weights, their "image" and "bev"
 * networks run by the compute library's reference against BEVDet's
 * modules evaluated here in float64 from the raw tensors by their PyTorch
 * definitions (mmdet's ResNet with BasicBlocks and Bottlenecks, pytorch and
 * caffe style; FPNForBEVDet; the LSS depth net and its softmax;
 * ResNetForBEVDet; FPN_LSS; the CenterHead), the cameras and the test-time
 * image transform, the Scale-NMS the decoder takes from the config, and
 * every fault of a config refused with a message naming the key. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>

#include "boxes.h"
#include "p3dmodel.h"
#include "p3dtest.h"
#include "p3dweights.h"
#include "p3dtest-bevdet.h"

/* ---- float64 tensors and PyTorch's layers ------------------------------ */

typedef struct
{
  guint n, c, h, w;
  gdouble *v;
} Value;

static Value *
value_new (guint n, guint c, guint h, guint w)
{
  Value *v = g_new0 (Value, 1);

  v->n = n;
  v->c = c;
  v->h = h;
  v->w = w;
  v->v = g_new0 (gdouble, (gsize) n * c * h * w);
  return v;
}

static void
value_free (Value * v)
{
  g_free (v->v);
  g_free (v);
}

static gdouble *
at (const Value * v, guint n, guint c, guint y, guint x)
{
  return v->v + (((gsize) n * v->c + c) * v->h + y) * v->w + x;
}

static gsize
value_size (const Value * v)
{
  return (gsize) v->n * v->c * v->h * v->w;
}

static const gfloat *
param (TinyModel * m, const gchar * format, ...)
G_GNUC_PRINTF (2, 3);

     static const gfloat *param (TinyModel * m, const gchar * format, ...)
{
  va_list args;
  gchar *name;
  TinyModelTensor *t;

  va_start (args, format);
  name = g_strdup_vprintf (format, args);
  va_end (args);
  t = tiny_model_get (m, name);
  g_free (name);
  return t->values;
}

/* Conv2d (square kernel) with an optional bias, then BatchNorm2d in
 * inference (@norm its prefix, eps 1e-5) and ReLU when asked.  Consumes
 * nothing; returns a new value. */
static Value *
conv (TinyModel * m, const Value * in, const gchar * weight,
    const gchar * bias, const gchar * norm, guint out_channels, guint k,
    guint stride, guint pad, gboolean relu)
{
  guint oh = (in->h + 2 * pad - k) / stride + 1;
  guint ow = (in->w + 2 * pad - k) / stride + 1;
  Value *out = value_new (in->n, out_channels, oh, ow);
  const gfloat *w = tiny_model_get (m, weight)->values;
  const gfloat *b = bias ? tiny_model_get (m, bias)->values : NULL;
  const gfloat *gamma = NULL, *beta = NULL, *mean = NULL, *var = NULL;
  guint n, o, i, y, x, ky, kx;

  if (norm != NULL) {
    gamma = param (m, "%s.weight", norm);
    beta = param (m, "%s.bias", norm);
    mean = param (m, "%s.running_mean", norm);
    var = param (m, "%s.running_var", norm);
  }
  for (n = 0; n < in->n; n++)
    for (o = 0; o < out_channels; o++)
      for (y = 0; y < oh; y++)
        for (x = 0; x < ow; x++) {
          gdouble s = b ? b[o] : 0.0;

          for (i = 0; i < in->c; i++)
            for (ky = 0; ky < k; ky++)
              for (kx = 0; kx < k; kx++) {
                gint iy = (gint) (y * stride + ky) - (gint) pad;
                gint ix = (gint) (x * stride + kx) - (gint) pad;

                if (iy < 0 || ix < 0 || iy >= (gint) in->h
                    || ix >= (gint) in->w)
                  continue;
                s += w[((o * in->c + i) * k + ky) * k + kx] *
                    *at (in, n, i, iy, ix);
              }
          if (norm != NULL)
            s = (s - mean[o]) / sqrt ((gdouble) var[o] + 1e-5) * gamma[o] +
                beta[o];
          *at (out, n, o, y, x) = relu ? MAX (s, 0.0) : s;
        }
  return out;
}

static Value *
max_pool_3x3_s2 (const Value * in)
{
  Value *out = value_new (in->n, in->c, (in->h - 1) / 2 + 1,
      (in->w - 1) / 2 + 1);
  guint n, c, y, x, ky, kx;

  for (n = 0; n < in->n; n++)
    for (c = 0; c < in->c; c++)
      for (y = 0; y < out->h; y++)
        for (x = 0; x < out->w; x++) {
          gdouble best = -INFINITY;

          for (ky = 0; ky < 3; ky++)
            for (kx = 0; kx < 3; kx++) {
              gint iy = (gint) (2 * y + ky) - 1, ix = (gint) (2 * x + kx) - 1;

              if (iy >= 0 && ix >= 0 && iy < (gint) in->h && ix < (gint) in->w)
                best = MAX (best, *at (in, n, c, iy, ix));
            }
          *at (out, n, c, y, x) = best;
        }
  return out;
}

/* a += b (then ReLU when asked), in place. */
static void
add_into (Value * a, const Value * b, gboolean relu)
{
  gsize e;

  for (e = 0; e < value_size (a); e++) {
    a->v[e] += b->v[e];
    if (relu)
      a->v[e] = MAX (a->v[e], 0.0);
  }
}

/* F.interpolate (size=(h, w), mode="nearest"): PyTorch's float scale. */
static Value *
nearest (const Value * in, guint h, guint w)
{
  Value *out = value_new (in->n, in->c, h, w);
  gfloat sy = (gfloat) in->h / (gfloat) h, sx = (gfloat) in->w / (gfloat) w;
  guint n, c, y, x;

  for (n = 0; n < in->n; n++)
    for (c = 0; c < in->c; c++)
      for (y = 0; y < h; y++)
        for (x = 0; x < w; x++)
          *at (out, n, c, y, x) = *at (in, n, c,
              MIN ((guint) floorf (y * sy), in->h - 1),
              MIN ((guint) floorf (x * sx), in->w - 1));
  return out;
}

/* nn.Upsample (scale_factor=s, mode="bilinear", align_corners=True), in
 * double. */
static Value *
bilinear_aligned (const Value * in, guint s)
{
  Value *out = value_new (in->n, in->c, in->h * s, in->w * s);
  guint n, c, y, x;

  for (n = 0; n < in->n; n++)
    for (c = 0; c < in->c; c++)
      for (y = 0; y < out->h; y++)
        for (x = 0; x < out->w; x++) {
          gdouble ry = out->h > 1 ? (gdouble) y * (in->h - 1) / (out->h - 1)
          : 0, rx = out->w > 1 ? (gdouble) x *(in->w - 1) / (out->w - 1)
          : 0;
          guint y0 = MIN ((guint) ry, in->h - 1), x0 = MIN ((guint) rx,
              in->w - 1);
          guint y1 = MIN (y0 + 1, in->h - 1), x1 = MIN (x0 + 1, in->w - 1);
          gdouble ly = ry - y0, lx = rx - x0;

          *at (out, n, c, y, x) = (1 - ly) * ((1 - lx) * *at (in, n, c, y0,
                  x0) + lx * *at (in, n, c, y0, x1)) + ly * ((1 - lx) *
              *at (in, n, c, y1, x0) + lx * *at (in, n, c, y1, x1));
        }
  return out;
}

static Value *
concat (const Value * a, const Value * b)
{
  Value *out = value_new (a->n, a->c + b->c, a->h, a->w);
  guint n, c;

  fail_unless (a->h == b->h && a->w == b->w);
  for (n = 0; n < a->n; n++) {
    for (c = 0; c < a->c; c++)
      memcpy (at (out, n, c, 0, 0), at (a, n, c, 0, 0),
          sizeof (gdouble) * a->h * a->w);
    for (c = 0; c < b->c; c++)
      memcpy (at (out, n, a->c + c, 0, 0), at (b, n, c, 0, 0),
          sizeof (gdouble) * a->h * a->w);
  }
  return out;
}

/* ---- BEVDet's modules ------------------------------------------------- */

/* mmdet's BasicBlock / Bottleneck (a ResNet's 1x1 + BN shortcut, or
 * ResNetForBEVDet's 3x3 conv with bias); consumes @x. */
static Value *
block (TinyModel * m, Value * x, const gchar * prefix, gboolean bottleneck,
    gboolean caffe, guint planes, guint out, guint stride, guint shortcut)
{
  gchar *w1 = g_strdup_printf ("%s.conv1.weight", prefix);
  gchar *n1 = g_strdup_printf ("%s.bn1", prefix);
  gchar *w2 = g_strdup_printf ("%s.conv2.weight", prefix);
  gchar *n2 = g_strdup_printf ("%s.bn2", prefix);
  gchar *w3 = g_strdup_printf ("%s.conv3.weight", prefix);
  gchar *n3 = g_strdup_printf ("%s.bn3", prefix);
  gchar *ws = g_strdup_printf (shortcut == 1 ? "%s.downsample.0.weight" :
      "%s.downsample.weight", prefix);
  gchar *ns = g_strdup_printf ("%s.downsample.1", prefix);
  gchar *bs = g_strdup_printf ("%s.downsample.bias", prefix);
  Value *a, *b, *identity;

  if (bottleneck) {
    a = conv (m, x, w1, NULL, n1, planes, 1, caffe ? stride : 1, 0, TRUE);
    b = conv (m, a, w2, NULL, n2, planes, 3, caffe ? 1 : stride, 1, TRUE);
    value_free (a);
    a = conv (m, b, w3, NULL, n3, out, 1, 1, 0, FALSE);
    value_free (b);
  } else {
    b = conv (m, x, w1, NULL, n1, planes, 3, stride, 1, TRUE);
    a = conv (m, b, w2, NULL, n2, out, 3, 1, 1, FALSE);
    value_free (b);
  }
  if (shortcut == 1)
    identity = conv (m, x, ws, NULL, ns, out, 1, stride, 0, FALSE);
  else if (shortcut == 3)
    identity = conv (m, x, ws, bs, NULL, out, 3, stride, 1, FALSE);
  else
    identity = NULL;
  add_into (a, identity ? identity : x, TRUE);
  if (identity)
    value_free (identity);
  value_free (x);
  g_free (w1);
  g_free (n1);
  g_free (w2);
  g_free (n2);
  g_free (w3);
  g_free (n3);
  g_free (ws);
  g_free (ns);
  g_free (bs);
  return a;
}

/* BEVDet's image_encoder and depth net: (depth probabilities, context). */
static void
image_forward (TinyModel * m, const P3dTestBevDetArch * arch, Value * img,
    Value ** depth, Value ** context)
{
  static const guint blocks[2][4] = { {2, 2, 2, 2}, {3, 4, 6, 3} };
  gboolean bottleneck = arch->depth >= 50;
  guint expansion = bottleneck ? 4 : 1, s, k, in = arch->base_channels;
  guint d = arch->depth_bins, n, c, y, x;
  Value *stem, *xv, *c3 = NULL, *l0, *l1, *up, *neck, *net;

  stem = conv (m, img, "img_backbone.conv1.weight", NULL, "img_backbone.bn1",
      arch->base_channels, 7, 2, 3, TRUE);
  xv = max_pool_3x3_s2 (stem);
  value_free (stem);
  for (s = 0; s < 4; s++) {
    guint planes = arch->base_channels << s, out = planes * expansion;

    for (k = 0; k < blocks[arch->depth == 18 ? 0 : 1][s]; k++) {
      gchar *prefix = g_strdup_printf ("img_backbone.layer%u.%u", s + 1, k);
      guint stride = k == 0 && s > 0 ? 2 : 1;

      xv = block (m, xv, prefix, bottleneck, arch->caffe, planes, out, stride,
          k == 0 && (stride != 1 || in != out) ? 1 : 0);
      g_free (prefix);
      in = out;
    }
    if (s == 2) {
      c3 = value_new (xv->n, xv->c, xv->h, xv->w);
      memcpy (c3->v, xv->v, sizeof (gdouble) * value_size (xv));
    }
  }
  /* FPNForBEVDet: laterals, top-down nearest to the lower size, fpn conv */
  l0 = conv (m, c3, "img_neck.lateral_convs.0.conv.weight",
      "img_neck.lateral_convs.0.conv.bias", NULL, arch->fpn_channels, 1, 1, 0,
      FALSE);
  l1 = conv (m, xv, "img_neck.lateral_convs.1.conv.weight",
      "img_neck.lateral_convs.1.conv.bias", NULL, arch->fpn_channels, 1, 1, 0,
      FALSE);
  up = nearest (l1, l0->h, l0->w);
  add_into (l0, up, FALSE);
  neck = conv (m, l0, "img_neck.fpn_convs.0.conv.weight",
      "img_neck.fpn_convs.0.conv.bias", NULL, arch->fpn_channels, 3, 1, 1,
      FALSE);
  net = conv (m, neck, "img_view_transformer.depthnet.weight",
      "img_view_transformer.depthnet.bias", NULL,
      d + arch->context_channels, 1, 1, 0, FALSE);
  *depth = value_new (net->n, d, net->h, net->w);
  *context = value_new (net->n, arch->context_channels, net->h, net->w);
  for (n = 0; n < net->n; n++)
    for (y = 0; y < net->h; y++)
      for (x = 0; x < net->w; x++) {
        gdouble sum = 0, top = -INFINITY;

        for (c = 0; c < d; c++)
          top = MAX (top, *at (net, n, c, y, x));
        for (c = 0; c < d; c++)
          sum += exp (*at (net, n, c, y, x) - top);
        for (c = 0; c < d; c++)
          *at (*depth, n, c, y, x) = exp (*at (net, n, c, y, x) - top) / sum;
        for (c = 0; c < arch->context_channels; c++)
          *at (*context, n, c, y, x) = *at (net, n, d + c, y, x);
      }
  value_free (xv);
  value_free (c3);
  value_free (l0);
  value_free (l1);
  value_free (up);
  value_free (neck);
  value_free (net);
}

static const gchar *const head_names[6] = {
  "reg", "height", "dim", "rot", "vel", "heatmap"
};

static const guint head_channels[5] = { 2, 1, 3, 2, 2 };

/* BEVDet's bev_encoder and CenterHead: the head outputs, per task
 * [6] (NULL for an absent vel). */
static void
bev_forward (TinyModel * m, const P3dTestBevDetArch * arch, Value * bev,
    Value * heads[][6])
{
  guint s, k, t, h, K = arch->head.final_kernel;
  Value *xv = bev, *feats[3], *up, *cat, *a, *b, *shared;
  gchar *w, *nrm;

  for (s = 0; s < 3; s++) {
    guint out = arch->bev_channels[s];

    for (k = 0; k < arch->bev_layers[s]; k++) {
      gchar *prefix =
          g_strdup_printf ("img_bev_encoder_backbone.layers.%u.%u", s, k);

      xv = block (m, xv, prefix, arch->bev_bottleneck, FALSE,
          arch->bev_bottleneck ? out / 4 : out, out, k == 0 ? 2 : 1,
          k == 0 ? 3 : 0);
      g_free (prefix);
    }
    feats[s] = value_new (xv->n, xv->c, xv->h, xv->w);
    memcpy (feats[s]->v, xv->v, sizeof (gdouble) * value_size (xv));
  }
  value_free (xv);
  /* FPN_LSS */
  up = bilinear_aligned (feats[2], 4);
  cat = concat (feats[0], up);
  a = conv (m, cat, "img_bev_encoder_neck.conv.0.weight", NULL,
      "img_bev_encoder_neck.conv.1", 2 * arch->lss_channels, 3, 1, 1, TRUE);
  b = conv (m, a, "img_bev_encoder_neck.conv.3.weight", NULL,
      "img_bev_encoder_neck.conv.4", 2 * arch->lss_channels, 3, 1, 1, TRUE);
  value_free (a);
  a = bilinear_aligned (b, 2);
  value_free (b);
  b = conv (m, a, "img_bev_encoder_neck.up2.1.weight", NULL,
      "img_bev_encoder_neck.up2.2", arch->lss_channels, 3, 1, 1, TRUE);
  value_free (a);
  a = conv (m, b, "img_bev_encoder_neck.up2.4.weight",
      "img_bev_encoder_neck.up2.4.bias", NULL, arch->lss_channels, 1, 1, 0,
      FALSE);
  value_free (b);
  shared = conv (m, a, "pts_bbox_head.shared_conv.conv.weight", NULL,
      "pts_bbox_head.shared_conv.bn", arch->head.share_channels, 3, 1, 1, TRUE);
  value_free (a);
  for (t = 0; t < arch->head.n_tasks; t++)
    for (h = 0; h < 6; h++) {
      guint out = h == 5 ? arch->head.task_classes[t] : head_channels[h];
      gchar *bias;

      heads[t][h] = NULL;
      if (h == 4 && !arch->head.vel)
        continue;
      w = g_strdup_printf ("pts_bbox_head.task_heads.%u.%s.0.conv.weight", t,
          head_names[h]);
      nrm = g_strdup_printf ("pts_bbox_head.task_heads.%u.%s.0.bn", t,
          head_names[h]);
      a = conv (m, shared, w, NULL, nrm, arch->head.head_conv, K, 1, K / 2,
          TRUE);
      g_free (w);
      g_free (nrm);
      w = g_strdup_printf ("pts_bbox_head.task_heads.%u.%s.1.weight", t,
          head_names[h]);
      bias = g_strdup_printf ("pts_bbox_head.task_heads.%u.%s.1.bias", t,
          head_names[h]);
      heads[t][h] = conv (m, a, w, bias, NULL, out, K, 1, K / 2, FALSE);
      value_free (a);
      g_free (w);
      g_free (bias);
    }
  for (s = 0; s < 3; s++)
    value_free (feats[s]);
  value_free (up);
  value_free (cat);
  value_free (shared);
}

/* ---- the model ---------------------------------------------------------- */

static P3dModel *
load (TinyModel * m, const gchar * config, GError ** error)
{
  gchar *path = tiny_model_write (m, config, NULL);
  P3dWeights *weights = p3d_weights_open (path, error);
  P3dModel *model = NULL;

  fail_unless (weights != NULL, "%s", error && *error ? (*error)->message : "");
  model = p3d_model_new (weights, error);
  p3d_weights_free (weights);
  g_unlink (path);
  g_free (path);
  return model;
}

static P3dModel *
load_ok (TinyModel * m, const gchar * config)
{
  GError *error = NULL;
  P3dModel *model = load (m, config, &error);

  fail_unless (model != NULL, "%s", error ? error->message : "");
  return model;
}

/* Output @name of @network after p3dc_convnet_cpu against @want. */
static void
compare_output (const P3dModelNetwork * network, float **buffers,
    const gchar * name, const Value * want)
{
  const P3dModelOutput *out = p3d_model_network_get_output (network, name);
  gdouble scale = 0, worst = 0;
  P3dcMapView view;
  guint n, c, y, x;
  gsize e;

  fail_unless (out != NULL, "no output %s", name);
  fail_unless_equals_int (out->channels, want->c);
  fail_unless_equals_int (network->desc.buffers[out->buffer].height, want->h);
  fail_unless_equals_int (network->desc.buffers[out->buffer].width, want->w);
  fail_unless_equals_int (p3dc_convnet_batch (&network->desc), want->n);
  for (e = 0; e < value_size (want); e++)
    scale = MAX (scale, fabs (want->v[e]));
  p3dc_convnet_cpu_view (&network->desc, out->buffer, buffers[out->buffer],
      &view);
  p3dc_map_view_offset_channels (&view, out->channel_offset);
  for (n = 0; n < want->n; n++)
    for (c = 0; c < want->c; c++)
      for (y = 0; y < want->h; y++)
        for (x = 0; x < want->w; x++) {
          gdouble got = ((const gfloat *) view.data)[n * view.batch_stride +
              c * view.channel_stride + y * view.row_stride + x];
          gdouble expect = *at (want, n, c, y, x);

          worst = MAX (worst, fabs (got - expect));
          fail_unless (fabs (got - expect) <= 1e-4 * (scale + 1e-3),
              "%s at n %u c %u y %u x %u: %.9g, BEVDet's modules give %.9g",
              name, n, c, y, x, got, expect);
        }
  GST_INFO ("%s: largest difference %g (scale %g)", name, worst, scale);
}

static Value *
random_value (P3dTestRng * rng, guint n, guint c, guint h, guint w)
{
  Value *v = value_new (n, c, h, w);
  gsize e;

  for (e = 0; e < value_size (v); e++)
    v->v[e] = p3d_test_rng_uniform (rng, -2.0f, 2.0f);
  return v;
}

/* Runs network @name of @model on @input (float32 copies of it). */
static float **
run (const P3dModelNetwork * network, const Value * input)
{
  float **buffers = p3dc_convnet_cpu_buffers_new (&network->desc);
  gfloat *in = g_new (gfloat, value_size (input));
  gsize e;

  fail_unless (buffers != NULL);
  for (e = 0; e < value_size (input); e++)
    in[e] = (gfloat) input->v[e];
  fail_unless_equals_int (p3dc_convnet_cpu (&network->desc, in, buffers),
      P3DC_OK);
  /* the oracle reads the float32 input too */
  for (e = 0; e < value_size (input); e++)
    input->v[e] = in[e];
  g_free (in);
  return buffers;
}

static void
check_image (const P3dTestBevDetArch * arch, guint64 seed)
{
  TinyModel *m = p3d_test_bevdet_model_new (arch, seed);
  gchar *config = p3d_test_bevdet_config (arch, FALSE);
  P3dModel *model = load_ok (m, config);
  const P3dModelNetwork *image = p3d_model_get_network (model, "image");
  P3dTestRng rng;
  Value *img, *depth, *context;
  float **buffers;

  fail_unless (image != NULL);
  fail_unless_equals_string (image->input_name, "img");
  p3d_test_rng_init (&rng, seed + 1);
  img = random_value (&rng, arch->cameras, 3, arch->input_height,
      arch->input_width);
  buffers = run (image, img);
  image_forward (m, arch, img, &depth, &context);
  fail_unless_equals_int (depth->h, arch->input_height / 16);
  fail_unless_equals_int (depth->w, arch->input_width / 16);
  compare_output (image, buffers, "depth", depth);
  compare_output (image, buffers, "features", context);
  p3dc_convnet_cpu_buffers_free (&image->desc, buffers);
  value_free (img);
  value_free (depth);
  value_free (context);
  p3d_model_free (model);
  g_free (config);
  tiny_model_free (m);
}

GST_START_TEST (test_image_resnet18)
{
  P3dTestBevDetArch arch;

  p3d_test_bevdet_arch_init (&arch);
  check_image (&arch, 11);
}

GST_END_TEST;

/* ResNet-50's Bottlenecks (the 1x1 shortcut of the first stage too), three
 * cameras of another size, and caffe style's stride on the first 1x1. */
GST_START_TEST (test_image_resnet50)
{
  P3dTestBevDetArch arch;

  p3d_test_bevdet_arch_init (&arch);
  arch.depth = 50;
  arch.base_channels = 2;
  arch.cameras = 3;
  arch.input_height = 32;
  arch.input_width = 64;
  check_image (&arch, 12);
  arch.caffe = TRUE;
  check_image (&arch, 13);
}

GST_END_TEST;

static void
check_bev (const P3dTestBevDetArch * arch, guint64 seed)
{
  TinyModel *m = p3d_test_bevdet_model_new (arch, seed);
  gchar *config = p3d_test_bevdet_config (arch, FALSE);
  P3dModel *model = load_ok (m, config);
  const P3dModelNetwork *bev = p3d_model_get_network (model, "bev");
  Value *heads[TINY_MODEL_MAX_TASKS][6];
  P3dTestRng rng;
  Value *input;
  float **buffers;
  guint t, h;

  fail_unless (bev != NULL);
  fail_unless_equals_string (bev->input_name, "bev");
  fail_unless_equals_int (bev->desc.buffers[0].channels,
      arch->context_channels);
  /* rows along y, as BEVDet's pooled features (and bevpool's yx) */
  fail_unless_equals_int (bev->desc.buffers[0].height, arch->grid_y);
  fail_unless_equals_int (bev->desc.buffers[0].width, arch->grid_x);
  p3d_test_rng_init (&rng, seed + 1);
  input = random_value (&rng, 1, arch->context_channels, arch->grid_y,
      arch->grid_x);
  buffers = run (bev, input);
  bev_forward (m, arch, input, heads);
  for (t = 0; t < arch->head.n_tasks; t++)
    for (h = 0; h < 6; h++) {
      gchar *name;

      if (heads[t][h] == NULL) {
        fail_unless (h == 4 && !arch->head.vel);
        continue;
      }
      name = g_strdup_printf ("task%u.%s", t, head_names[h]);
      compare_output (bev, buffers, name, heads[t][h]);
      value_free (heads[t][h]);
      g_free (name);
    }
  p3dc_convnet_cpu_buffers_free (&bev->desc, buffers);
  p3d_model_free (model);
  g_free (config);
  tiny_model_free (m);
}

GST_START_TEST (test_bev)
{
  P3dTestBevDetArch arch;

  p3d_test_bevdet_arch_init (&arch);
  check_bev (&arch, 21);
  /* BottleNeck blocks, two per stage, no vel head */
  arch.bev_bottleneck = TRUE;
  arch.bev_channels[0] = 8;
  arch.bev_channels[1] = 12;
  arch.bev_channels[2] = 16;
  arch.bev_layers[1] = 2;
  arch.head.vel = FALSE;
  check_bev (&arch, 22);
}

GST_END_TEST;

/* The cameras: the config's data and grid, and BEVDet's test-time resize
 * and crop worked out by hand. */
GST_START_TEST (test_cameras)
{
  P3dTestBevDetArch arch;
  TinyModel *m;
  gchar *config;
  P3dModel *model;
  const P3dModelCameras *cameras;
  P3dModelImageTransform t;
  P3dModelCameras nus;

  p3d_test_bevdet_arch_init (&arch);
  m = p3d_test_bevdet_model_new (&arch, 5);
  config = p3d_test_bevdet_config (&arch, FALSE);
  model = load_ok (m, config);
  cameras = model->cameras;
  fail_unless (cameras != NULL);
  fail_unless_equals_int (cameras->n_cameras, 2);
  fail_unless_equals_string (cameras->names[0], "CAM_0");
  fail_unless_equals_string (cameras->names[1], "CAM_1");
  fail_unless (cameras->names[2] == NULL);
  fail_unless_equals_int (cameras->input_width, 96);
  fail_unless_equals_int (cameras->input_height, 64);
  fail_unless_equals_int (cameras->src_width, 384);
  fail_unless_equals_int (cameras->src_height, 256);
  fail_unless_equals_float (cameras->resize_test, 0.04);
  fail_unless_equals_float (cameras->crop_h, 0.0);
  fail_unless_equals_float (cameras->mean[1], 0.456);
  fail_unless_equals_float (cameras->std[2], 0.225);
  fail_unless_equals_float (cameras->xbound[0], -8.0);
  fail_unless_equals_float (cameras->ybound[1], 12.0);
  fail_unless_equals_float (cameras->zbound[2], 20.0);
  fail_unless_equals_float (cameras->dbound[1], 5.0);
  fail_unless_equals_int (cameras->depth_bins, 4);
  fail_unless_equals_int (cameras->feature_channels, 3);
  fail_unless_equals_int (cameras->downsample, 16);
  /* 384 x 256: scale 96 / 384 + 0.04 = 0.29, 111 x 74 (111.36, 74.24),
   * crop y 74 - 64 = 10, crop x (111 - 96) / 2 = 7 (7.5 truncated) */
  fail_unless (p3d_model_cameras_image_transform (cameras, 384, 256, &t));
  fail_unless_equals_float (t.scale, 96.0 / 384.0 + 0.04);
  fail_unless_equals_int (t.scaled_width, 111);
  fail_unless_equals_int (t.scaled_height, 74);
  fail_unless_equals_int (t.crop_x, 7);
  fail_unless_equals_int (t.crop_y, 10);
  /* an image too small for the window */
  fail_if (p3d_model_cameras_image_transform (cameras, 384, 200, &t));
  fail_if (p3d_model_cameras_image_transform (cameras, 0, 256, &t));
  p3d_model_free (model);
  g_free (config);
  tiny_model_free (m);

  /* bevdet-r50.py on nuScenes: 1600 x 900 to 768 x 432 (0.48), cropped at
   * (32, 176); crop_h [0.1, 0.3] keeps the window 0.2 of 432 above the
   * bottom: (0.8 x 432 = 345.6) 345 - 256 = 89 */
  memset (&nus, 0, sizeof (nus));
  nus.input_width = 704;
  nus.input_height = 256;
  nus.resize_test = 0.04;
  fail_unless (p3d_model_cameras_image_transform (&nus, 1600, 900, &t));
  fail_unless_equals_int (t.scaled_width, 768);
  fail_unless_equals_int (t.scaled_height, 432);
  fail_unless_equals_int (t.crop_x, 32);
  fail_unless_equals_int (t.crop_y, 176);
  fail_unless (fabs (t.scale - 0.48) < 1e-15);
  nus.crop_h = 0.2;
  fail_unless (p3d_model_cameras_image_transform (&nus, 1600, 900, &t));
  fail_unless_equals_int (t.crop_y, 89);
}

GST_END_TEST;

/* ---- Scale-NMS, through the model's decoder ---------------------------- */

/* Writes value @v at channel @c, cell (y, x) of output @name. */
static void
put (const P3dModelNetwork * network, float **buffers, const gchar * name,
    guint c, guint y, guint x, gfloat v)
{
  const P3dModelOutput *out = p3d_model_network_get_output (network, name);
  const P3dcConvBufferDesc *b;

  fail_unless (out != NULL);
  b = &network->desc.buffers[out->buffer];
  buffers[out->buffer][((gsize) (out->channel_offset + c) * b->height + y) *
      b->width + x] = v;
}

/* Two pedestrians 0.4 m apart, each 0.3 x 0.3 m, side by side along x:
 * they do not overlap, so a plain rotate NMS keeps both; Scale-NMS's
 * factor 4.5 for pedestrians makes them 1.35 m squares whose IoU (0.95 /
 * 1.75 = 0.54) is above 0.5, so the second goes.  Two traffic cones alike
 * (factor 9) with an IoU above 0.5 under the factor; a car pair (factor 1)
 * 0.4 m apart of 4 x 2 m overlaps (IoU 0.82) and loses its second. */
static void
scale_nms_maps (const P3dModelNetwork * bev, float **buffers)
{
  const P3dcConvBufferDesc *map;
  guint t, y, x, c, h;

  /* every cell cold, every regression 0 */
  for (t = 0; t < 2; t++)
    for (h = 0; h < 6; h++) {
      gchar *name = g_strdup_printf ("task%u.%s", t, head_names[h]);
      const P3dModelOutput *out = p3d_model_network_get_output (bev, name);

      g_free (name);
      map = &bev->desc.buffers[out->buffer];
      for (c = 0; c < out->channels; c++)
        for (y = 0; y < map->height; y++)
          for (x = 0; x < map->width; x++)
            buffers[out->buffer][((gsize) (out->channel_offset + c) *
                    map->height + y) * map->width + x] = h == 5 ? -20.0f :
                h == 3 && c == 1 ? 1.0f : 0.0f;
    }
  /* cars at cells (y 3, x 2) and (y 3, x 2) + 0.4 m in x: reg 0.4 */
  put (bev, buffers, "task0.heatmap", 0, 3, 2, 3.0f);
  put (bev, buffers, "task0.heatmap", 0, 3, 3, 2.0f);
  put (bev, buffers, "task0.reg", 0, 3, 3, -0.6f);
  put (bev, buffers, "task0.dim", 0, 3, 2, logf (4.0f));
  put (bev, buffers, "task0.dim", 1, 3, 2, logf (2.0f));
  put (bev, buffers, "task0.dim", 0, 3, 3, logf (4.0f));
  put (bev, buffers, "task0.dim", 1, 3, 3, logf (2.0f));
  /* pedestrians (class 0 of task 1) at (y 10, x 5) and 0.4 m further */
  put (bev, buffers, "task1.heatmap", 0, 10, 5, 3.0f);
  put (bev, buffers, "task1.heatmap", 0, 10, 6, 2.0f);
  put (bev, buffers, "task1.reg", 0, 10, 6, -0.6f);
  /* cones (class 1) at (y 20, x 8) and 0.2 m further */
  put (bev, buffers, "task1.heatmap", 1, 20, 8, 3.0f);
  put (bev, buffers, "task1.heatmap", 1, 20, 9, 2.0f);
  put (bev, buffers, "task1.reg", 0, 20, 9, -0.8f);
  for (x = 5; x < 10; x++)
    for (y = 10; y <= 20; y += 10)
      for (c = 0; c < 2; c++)
        put (bev, buffers, "task1.dim", c, y, x, logf (0.3f));
}

static guint
decode (const P3dModel * model, float **buffers, P3dcBox3d * boxes,
    gfloat * velocity)
{
  GError *error = NULL;
  P3dModelDecoder *decoder = p3d_model_decoder_new (model, "bev", TRUE,
      &error);
  P3dModelBoxes out;
  guint32 count = 0;

  fail_unless (decoder != NULL, "%s", error ? error->message : "");
  fail_unless_equals_int (p3d_model_decoder_get_capacity (decoder), 24);
  out.boxes = boxes;
  out.count = &count;
  out.velocity = velocity;
  fail_unless_equals_int (p3d_model_decoder_run_cpu (decoder, buffers, &out),
      P3DC_OK);
  p3d_model_decoder_free (decoder);
  return count;
}

GST_START_TEST (test_scale_nms)
{
  P3dTestBevDetArch arch;
  TinyModel *m;
  gchar *config;
  P3dModel *model, *first;
  const P3dModelNetwork *bev;
  float **buffers;
  P3dcBox3d boxes[24];
  gfloat velocity[48];
  guint count;

  p3d_test_bevdet_arch_init (&arch);
  m = p3d_test_bevdet_model_new (&arch, 5);
  /* both tasks rotate: task 1 with the factors [4.5, 9] */
  config = p3d_test_bevdet_config (&arch, TRUE);
  first = model = load_ok (m, config);
  bev = p3d_model_get_network (model, "bev");
  buffers = p3dc_convnet_cpu_buffers_new (&bev->desc);
  scale_nms_maps (bev, buffers);
  count = decode (model, buffers, boxes, velocity);
  /* one car, one pedestrian, one cone */
  fail_unless_equals_int (count, 3);
  fail_unless_equals_int (boxes[0].label, 0);
  fail_unless_equals_float (boxes[0].x, 2 - 8.0f);
  fail_unless_equals_int (boxes[1].label, 1);
  fail_unless_equals_float (boxes[1].x, 5 - 8.0f);
  /* the sizes output are the decoded ones, not the scaled */
  fail_unless (fabsf (boxes[1].dx - 0.3f) < 1e-6f);
  fail_unless_equals_int (boxes[2].label, 2);
  fail_unless_equals_float (boxes[2].y, 20 - 12.0f);
  g_free (config);

  /* factor 1 for pedestrians: both stay */
  config = p3d_test_bevdet_config (&arch, TRUE);
  {
    gchar *one = tiny_model_replace_once (config, "[1.0, [4.5, 9.0]]",
        "[1.0, [1.0, 9.0]]");

    g_free (config);
    config = one;
  }
  model = load_ok (m, config);
  count = decode (model, buffers, boxes, velocity);
  /* task 1 by score: pedestrian, cone (equal: the lower class first), the
   * second pedestrian */
  fail_unless_equals_int (count, 4);
  fail_unless_equals_int (boxes[1].label, 1);
  fail_unless_equals_int (boxes[2].label, 2);
  fail_unless_equals_int (boxes[3].label, 1);
  fail_unless (fabsf (boxes[3].x - (6 - 0.6f - 8)) < 1e-6f);
  p3d_model_free (model);
  g_free (config);

  /* circle for task 1 (min_radius 0.175: squared distances 0.16 and 0.04
   * are within it): the factors do not apply, one of each stays */
  config = p3d_test_bevdet_config (&arch, FALSE);
  model = load_ok (m, config);
  count = decode (model, buffers, boxes, velocity);
  fail_unless_equals_int (count, 3);
  fail_unless_equals_int (boxes[1].label, 1);
  fail_unless_equals_int (boxes[2].label, 2);
  p3dc_convnet_cpu_buffers_free (&bev->desc, buffers);
  p3d_model_free (model);
  p3d_model_free (first);
  g_free (config);
  tiny_model_free (m);
}

GST_END_TEST;

/* ---- faults ------------------------------------------------------------ */

typedef struct
{
  const gchar *old, *new;
  const gchar *words[2];        /* in the message */
} BadConfig;

static const BadConfig bad_configs[] = {
  {"\"cams\": [\"CAM_0\", \"CAM_1\"]", "\"cams\": []",
      {"\"data_config.cams\"", NULL}},
  {"\"Ncams\": 2", "\"Ncams\": 3", {"\"data_config.Ncams\"", "every camera"}},
  {"\"input_size\": [64, 96]", "\"input_size\": [64]",
      {"\"data_config.input_size\"", NULL}},
  {"\"std\": [0.229, 0.224, 0.225]", "\"std\": [0.229, 0, 0.225]",
      {"\"data_config.std\"", NULL}},
  {"\"crop_h\": [0.0, 0.0], ", "", {"\"data_config.crop_h\"", "missing"}},
  {"\"flip\": true", "\"flipp\": true", {"\"data_config.flipp\"",
          "not a key"}},
  {"\"xbound\": [-8, 8, 1.0]", "\"xbound\": [-8, 8, 0.7]",
      {"\"grid_config.xbound\"", "whole number"}},
  {"\"ybound\": [-12, 12, 1.0]", "\"ybound\": [12, -12, 1.0]",
      {"\"grid_config.ybound\"", "max above min"}},
  {"\"depth\": 18", "\"depth\": 19", {"\"img_backbone.depth\"", "34, 50"}},
  {"\"out_indices\": [2, 3]", "\"out_indices\": [3, 2]",
      {"\"img_backbone.out_indices\"", "increasing"}},
  {"\"style\": \"pytorch\"", "\"style\": \"tf\"", {"\"img_backbone.style\"",
          NULL}},
  {"\"num_stages\": 4", "\"num_stages\": 4, \"dilations\": [1, 1, 2, 2]",
      {"\"img_backbone.dilations\"", "not supported"}},
  {"\"in_channels\": [16, 32]", "\"in_channels\": [16, 30]",
      {"\"img_neck.in_channels\"", "ResNet-18 has 32"}},
  {"\"out_ids\": [0]", "\"out_ids\": [1]", {"\"img_neck.out_ids\"", NULL}},
  {"\"numC_input\": 8", "\"numC_input\": 9",
      {"\"img_view_transformer.numC_input\"", "img_neck.out_channels"}},
  {"\"ViewTransformerLiftSplatShoot\"", "\"LSSViewTransformer\"",
      {"\"img_view_transformer.type\"", NULL}},
  {"\"numC_input\": 3", "\"numC_input\": 4",
      {"\"img_bev_encoder_backbone.numC_input\"", "numC_Trans"}},
  {"\"block_type\": \"Basic\"", "\"block_type\": \"Fancy\"",
      {"\"img_bev_encoder_backbone.block_type\"", NULL}},
  {"\"in_channels\": 30", "\"in_channels\": 31",
      {"\"img_bev_encoder_neck.in_channels\"", "30 channels"}},
  {"\"out_channels\": 8}", "\"out_channels\": 8, \"lateral\": 6}",
      {"\"img_bev_encoder_neck.lateral\"", "not supported"}},
  {"\"nms_type\": [\"rotate\", \"circle\"]", "\"nms_type\": [\"rotate\"]",
      {"\"test_nms.nms_type\"", "list of 2"}},
  {"\"nms_type\": [\"rotate\", \"circle\"]",
        "\"nms_type\": [\"rotate\", \"square\"]",
      {"\"test_nms.nms_type\"", "rotate or circle"}},
  {"\"nms_thr\": [0.2, 0.5]", "\"nms_thr\": [0.2, 1.5]",
      {"\"test_nms.nms_thr\"", NULL}},
  {"[1.0, [4.5, 9.0]]", "[1.0, [4.5]]", {"\"test_nms.nms_rescale_factor\"",
          "entry 1"}},
  {"[1.0, [4.5, 9.0]]", "[-1.0, [4.5, 9.0]]",
      {"\"test_nms.nms_rescale_factor\"", "entry 0"}},
  {"\"min_radius\": [4, 0.175], ", "", {"\"test_nms.min_radius\"",
          "missing"}},
  {"\"pc_range\": [-8, -12]", "\"pc_range\": [-8, -11]",
      {"places the 24 head cells along y", NULL}},
  {"\"voxel_size\": [1.0, 1.0]", "\"voxel_size\": [0.5, 1.0]",
      {"along x", "[-8, 8]"}},
  {"\"max_num\": 40", "\"max_num\": 400", {"coder.max_num 400", NULL}},
  {"\"downsample\": 16", "\"downsample\": 8", {"to 6 x 4 features",
          "is 12 x 8"}},
};

GST_START_TEST (test_bad_config)
{
  const BadConfig *bad = &bad_configs[__i__];
  P3dTestBevDetArch arch;
  TinyModel *m;
  gchar *config, *broken;
  GError *error = NULL;
  P3dModel *model;
  guint w;

  p3d_test_bevdet_arch_init (&arch);
  m = p3d_test_bevdet_model_new (&arch, 5);
  config = p3d_test_bevdet_config (&arch, FALSE);
  broken = tiny_model_replace_once (config, bad->old, bad->new);
  model = load (m, broken, &error);
  fail_unless (model == NULL, "%s was accepted", bad->new);
  fail_unless (g_error_matches (error, P3D_WEIGHTS_ERROR,
          P3D_WEIGHTS_ERROR_BAD_METADATA), "%s", error->message);
  for (w = 0; w < 2 && bad->words[w]; w++)
    fail_unless (strstr (error->message, bad->words[w]) != NULL,
        "'%s' not in: %s", bad->words[w], error->message);
  g_error_free (error);
  g_free (broken);
  g_free (config);
  tiny_model_free (m);
}

GST_END_TEST;

/* A tensor of the model missing, or one the config does not describe. */
GST_START_TEST (test_bad_tensors)
{
  P3dTestBevDetArch arch;
  TinyModel *m;
  gchar *config, *path;
  GError *error = NULL;
  P3dWeights *weights;
  TinyModelMutation drop = { "img_backbone.layer3.1.bn2.running_var", };
  TinyModelMutation shape = { NULL, "img_view_transformer.depthnet.weight", 4,
    {8, 8, 1, 1}
  };

  p3d_test_bevdet_arch_init (&arch);
  m = p3d_test_bevdet_model_new (&arch, 5);
  config = p3d_test_bevdet_config (&arch, FALSE);

  path = tiny_model_write (m, config, &drop);
  weights = p3d_weights_open (path, &error);
  fail_unless (weights != NULL);
  fail_unless (p3d_model_new (weights, &error) == NULL);
  fail_unless (g_error_matches (error, P3D_WEIGHTS_ERROR,
          P3D_WEIGHTS_ERROR_MISSING_TENSOR), "%s", error->message);
  fail_unless (strstr (error->message, drop.drop) != NULL, "%s",
      error->message);
  g_clear_error (&error);
  p3d_weights_free (weights);
  g_unlink (path);
  g_free (path);

  path = tiny_model_write (m, config, &shape);
  weights = p3d_weights_open (path, &error);
  fail_unless (p3d_model_new (weights, &error) == NULL);
  fail_unless (g_error_matches (error, P3D_WEIGHTS_ERROR,
          P3D_WEIGHTS_ERROR_BAD_SHAPE), "%s", error->message);
  g_clear_error (&error);
  p3d_weights_free (weights);
  g_unlink (path);
  g_free (path);

  /* the vel heads in the file, the config without them */
  {
    gchar *no_vel = tiny_model_replace_once (config, ", \"vel\": 2", "");

    fail_unless (load (m, no_vel, &error) == NULL);
    fail_unless (strstr (error->message, "pts_bbox_head.task_heads.0.vel")
        != NULL, "%s", error->message);
    g_clear_error (&error);
    g_free (no_vel);
  }
  g_free (config);
  tiny_model_free (m);
}

GST_END_TEST;

static Suite *
bevdet_model_suite (void)
{
  Suite *s = suite_create ("bevdet_model");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 300);
  tcase_add_test (tc, test_image_resnet18);
  tcase_add_test (tc, test_image_resnet50);
  tcase_add_test (tc, test_bev);
  tcase_add_test (tc, test_cameras);
  tcase_add_test (tc, test_scale_nms);
  tcase_add_loop_test (tc, test_bad_config, 0, G_N_ELEMENTS (bad_configs));
  tcase_add_test (tc, test_bad_tensors);
  return s;
}

P3D_CHECK_MAIN (bevdet_model);
