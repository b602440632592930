/* The float64 oracle of a model graph (p3dtest-modeloracle.h). */
#include <math.h>
#include <string.h>

#include "p3dtest-modeloracle.h"

static OracleValue *
value_new (guint n, guint c, guint h, guint w)
{
  OracleValue *v = g_new0 (OracleValue, 1);

  v->n = n;
  v->c = c;
  v->h = h;
  v->w = w;
  v->v = g_new0 (gdouble, (gsize) n * c * h * w);
  return v;
}

static void
value_free (gpointer data)
{
  OracleValue *v = data;

  g_free (v->v);
  g_free (v);
}

gdouble *
model_oracle_at (const OracleValue * v, guint n, guint c, guint y, guint x)
{
  return v->v + (((gsize) n * v->c + c) * v->h + y) * v->w + x;
}

/* BatchNorm in inference, as PyTorch computes it. */
static gdouble
norm (const ModelOracleTensors * t, const gchar * prefix, gdouble eps, guint c,
    gdouble x)
{
  gchar *names[4];
  gdouble r;
  guint i;
  static const gchar *const parts[4] = {
    "weight", "bias", "running_mean", "running_var"
  };
  const gfloat *p[4];

  for (i = 0; i < 4; i++) {
    names[i] = g_strdup_printf ("%s.%s", prefix, parts[i]);
    p[i] = t->lookup (t->user_data, names[i]);
    g_free (names[i]);
  }
  r = (x - p[2][c]) / sqrt ((gdouble) p[3][c] + eps) * p[0][c] + p[1][c];
  return r;
}

static OracleValue *
eval_conv (const ModelOracleTensors * t, const P3dModelLayer * l,
    const OracleValue * in)
{
  guint oh = (in->h + 2 * l->padding[0] - l->dilation[0] * (l->kernel[0] -
          1) - 1) / l->stride[0] + 1;
  guint ow = (in->w + 2 * l->padding[1] - l->dilation[1] * (l->kernel[1] -
          1) - 1) / l->stride[1] + 1;
  OracleValue *out = value_new (in->n, l->out_channels, oh, ow);
  const gfloat *w = t->lookup (t->user_data, l->weight);
  const gfloat *b = l->bias ? t->lookup (t->user_data, l->bias) : NULL;
  guint in_pg = in->c / l->groups, out_pg = l->out_channels / l->groups;
  guint n, o, i, y, x, ky, kx;

  for (n = 0; n < in->n; n++)
    for (o = 0; o < l->out_channels; o++)
      for (y = 0; y < oh; y++)
        for (x = 0; x < ow; x++) {
          gdouble s = b ? b[o] : 0.0;

          for (i = 0; i < in_pg; i++)
            for (ky = 0; ky < l->kernel[0]; ky++)
              for (kx = 0; kx < l->kernel[1]; kx++) {
                gint iy = (gint) (y * l->stride[0] + ky * l->dilation[0]) -
                    (gint) l->padding[0];
                gint ix = (gint) (x * l->stride[1] + kx * l->dilation[1]) -
                    (gint) l->padding[1];

                if (iy < 0 || ix < 0 || iy >= (gint) in->h
                    || ix >= (gint) in->w)
                  continue;
                s += w[((o * in_pg + i) * l->kernel[0] + ky) * l->kernel[1] +
                    kx] * *model_oracle_at (in, n, o / out_pg * in_pg + i, iy,
                    ix);
              }
          if (l->norm)
            s = norm (t, l->norm, l->norm_eps, o, s);
          *model_oracle_at (out, n, o, y, x) = s;
        }
  return out;
}

static OracleValue *
eval_deconv (const ModelOracleTensors * t, const P3dModelLayer * l,
    const OracleValue * in)
{
  OracleValue *out = value_new (in->n, l->out_channels, in->h * l->kernel[0],
      in->w * l->kernel[1]);
  const gfloat *w = t->lookup (t->user_data, l->weight);
  guint n, o, i, y, x;

  for (n = 0; n < in->n; n++)
    for (o = 0; o < out->c; o++)
      for (y = 0; y < out->h; y++)
        for (x = 0; x < out->w; x++) {
          gdouble s = 0.0;
          guint ky = y % l->kernel[0], kx = x % l->kernel[1];

          for (i = 0; i < in->c; i++)
            s += w[((i * out->c + o) * l->kernel[0] + ky) * l->kernel[1] +
                kx] * *model_oracle_at (in, n, i, y / l->kernel[0],
                x / l->kernel[1]);
          if (l->norm)
            s = norm (t, l->norm, l->norm_eps, o, s);
          *model_oracle_at (out, n, o, y, x) = s;
        }
  return out;
}

/* F.interpolate's source index rules, in float as PyTorch computes them. */
static guint
source_nearest (guint o, guint in, guint out)
{
  gfloat scale = (gfloat) in / (gfloat) out;

  return MIN ((guint) floorf ((gfloat) o * scale), in - 1);
}

static void
source_bilinear (guint o, guint in, guint out, gboolean align, guint * i0,
    guint * i1, gdouble * l1)
{
  gfloat r;

  if (align)
    r = (out > 1 ? (gfloat) (in - 1) / (gfloat) (out - 1) : 0.0f) * o;
  else
    r = MAX ((gfloat) in / (gfloat) out * (o + 0.5f) - 0.5f, 0.0f);
  *i0 = MIN ((guint) r, in - 1);
  *i1 = *i0 < in - 1 ? *i0 + 1 : *i0;
  *l1 = r - (gfloat) * i0;
}

static OracleValue *
eval_upsample (const P3dModelLayer * l, const OracleValue * in, guint h,
    guint w)
{
  OracleValue *out = value_new (in->n, in->c, h, w);
  guint n, c, y, x;

  for (n = 0; n < in->n; n++)
    for (c = 0; c < in->c; c++)
      for (y = 0; y < h; y++)
        for (x = 0; x < w; x++) {
          if (!l->bilinear) {
            *model_oracle_at (out, n, c, y, x) =
                *model_oracle_at (in, n, c, source_nearest (y, in->h, h),
                source_nearest (x, in->w, w));
          } else {
            guint y0, y1, x0, x1;
            gdouble ly, lx;

            source_bilinear (y, in->h, h, l->align_corners, &y0, &y1, &ly);
            source_bilinear (x, in->w, w, l->align_corners, &x0, &x1, &lx);
            *model_oracle_at (out, n, c, y, x) =
                (1 - ly) * ((1 - lx) * *model_oracle_at (in, n, c, y0, x0) +
                lx * *model_oracle_at (in, n, c, y0, x1)) +
                ly * ((1 - lx) * *model_oracle_at (in, n, c, y1, x0) +
                lx * *model_oracle_at (in, n, c, y1, x1));
          }
        }
  return out;
}

static OracleValue *
eval_max_pool (const P3dModelLayer * l, const OracleValue * in)
{
  guint oh = (in->h + 2 * l->padding[0] - l->kernel[0]) / l->stride[0] + 1;
  guint ow = (in->w + 2 * l->padding[1] - l->kernel[1]) / l->stride[1] + 1;
  OracleValue *out = value_new (in->n, in->c, oh, ow);
  guint n, c, y, x, ky, kx;

  for (n = 0; n < in->n; n++)
    for (c = 0; c < in->c; c++)
      for (y = 0; y < oh; y++)
        for (x = 0; x < ow; x++) {
          gdouble m = -INFINITY;

          for (ky = 0; ky < l->kernel[0]; ky++)
            for (kx = 0; kx < l->kernel[1]; kx++) {
              gint iy = (gint) (y * l->stride[0] + ky) - (gint) l->padding[0];
              gint ix = (gint) (x * l->stride[1] + kx) - (gint) l->padding[1];

              if (iy >= 0 && ix >= 0 && iy < (gint) in->h && ix < (gint) in->w)
                m = MAX (m, *model_oracle_at (in, n, c, iy, ix));
            }
          *model_oracle_at (out, n, c, y, x) = m;
        }
  return out;
}

GHashTable *
model_oracle_evaluate (const P3dModelGraph * graph,
    const ModelOracleTensors * t, const gfloat * input)
{
  GHashTable *values = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
      value_free);
  OracleValue *x = value_new (graph->batch, graph->channels, graph->height,
      graph->width);
  guint i, k;
  gsize e;

  for (e = 0; e < (gsize) x->n * x->c * x->h * x->w; e++)
    x->v[e] = input[e];
  g_hash_table_insert (values, graph->input, x);
  for (i = 0; i < graph->layers->len; i++) {
    const P3dModelLayer *l = graph->layers->pdata[i];
    const OracleValue *in = g_hash_table_lookup (values, l->inputs[0]);
    OracleValue *out = NULL;
    gsize count;

    switch (l->op) {
      case P3D_MODEL_OP_CONV:
        out = eval_conv (t, l, in);
        break;
      case P3D_MODEL_OP_DECONV:
        out = eval_deconv (t, l, in);
        break;
      case P3D_MODEL_OP_ADD:{
        const OracleValue *in2 = g_hash_table_lookup (values, l->inputs[1]);

        out = value_new (in->n, in->c, in->h, in->w);
        for (e = 0; e < (gsize) in->n * in->c * in->h * in->w; e++)
          out->v[e] = in->v[e] + in2->v[e];
        break;
      }
      case P3D_MODEL_OP_MAX_POOL:
        out = eval_max_pool (l, in);
        break;
      case P3D_MODEL_OP_UPSAMPLE:{
        guint h = in->h * l->scale[0], w = in->w * l->scale[1];

        if (l->size_of != NULL) {
          const OracleValue *like = g_hash_table_lookup (values, l->size_of);

          h = like->h;
          w = like->w;
        } else if (l->size[0] != 0) {
          h = l->size[0];
          w = l->size[1];
        }
        out = eval_upsample (l, in, h, w);
        break;
      }
      case P3D_MODEL_OP_CONCAT:{
        guint c = 0, offset = 0, n, cc;

        for (k = 0; l->inputs[k] != NULL; k++)
          c += ((OracleValue *) g_hash_table_lookup (values, l->inputs[k]))->c;
        out = value_new (in->n, c, in->h, in->w);
        for (k = 0; l->inputs[k] != NULL; k++) {
          const OracleValue *part = g_hash_table_lookup (values, l->inputs[k]);

          for (n = 0; n < in->n; n++)
            for (cc = 0; cc < part->c; cc++)
              memcpy (model_oracle_at (out, n, offset + cc, 0, 0),
                  model_oracle_at (part, n, cc, 0, 0),
                  sizeof (gdouble) * in->h * in->w);
          offset += part->c;
        }
        break;
      }
      case P3D_MODEL_OP_SLICE:{
        guint n, c;

        out = value_new (in->n, l->end - l->begin, in->h, in->w);
        for (n = 0; n < in->n; n++)
          for (c = l->begin; c < l->end; c++)
            memcpy (model_oracle_at (out, n, c - l->begin, 0, 0),
                model_oracle_at (in, n, c, 0, 0),
                sizeof (gdouble) * in->h * in->w);
        break;
      }
      case P3D_MODEL_OP_SOFTMAX:{
        guint n, c, y, xx;

        out = value_new (in->n, in->c, in->h, in->w);
        for (n = 0; n < in->n; n++)
          for (y = 0; y < in->h; y++)
            for (xx = 0; xx < in->w; xx++) {
              gdouble sum = 0.0;

              for (c = 0; c < in->c; c++)
                sum += exp (*model_oracle_at (in, n, c, y, xx));
              for (c = 0; c < in->c; c++)
                *model_oracle_at (out, n, c, y, xx) =
                    exp (*model_oracle_at (in, n, c, y, xx)) / sum;
            }
        break;
      }
      default:                 /* relu */
        out = value_new (in->n, in->c, in->h, in->w);
        memcpy (out->v, in->v, sizeof (gdouble) * in->n * in->c * in->h *
            in->w);
        break;
    }
    count = (gsize) out->n * out->c * out->h * out->w;
    if (l->relu || l->op == P3D_MODEL_OP_RELU)
      for (e = 0; e < count; e++)
        out->v[e] = MAX (out->v[e], 0.0);
    g_hash_table_insert (values, l->name, out);
  }
  return values;
}
