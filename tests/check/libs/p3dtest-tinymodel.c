/* Tiny CenterPoint-pillar models and their weights files
 * (p3dtest-tinymodel.h). */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>

#include "half.h"
#include "p3dcenterpoint.h"
#include "p3dtest.h"
#include "p3dtest-safetensors.h"
#include "p3dtest-tinymodel.h"

static const gchar *const head_names[6] = {
  "reg", "height", "dim", "rot", "vel", "heatmap"
};

static const guint common_channels[5] = { 2, 1, 3, 2, 2 };

static void
tensor_free (gpointer data)
{
  TinyModelTensor *t = data;

  g_free (t->name);
  g_free (t->values);
  g_free (t);
}

TinyModelTensor *
tiny_model_add_tensor (TinyModel * m, P3dTestRng * rng, gchar * name,
    guint n_dims, const gint64 * shape, gfloat lo, gfloat hi)
{
  TinyModelTensor *t = g_new0 (TinyModelTensor, 1);
  gsize i;

  t->name = name;
  t->n_dims = n_dims;
  t->count = 1;
  for (i = 0; i < n_dims; i++) {
    t->shape[i] = shape[i];
    t->count *= shape[i];
  }
  t->values = g_new (gfloat, t->count);
  for (i = 0; i < t->count; i++)
    t->values[i] = p3d_test_rng_uniform (rng, lo, hi);
  /* running means travel as F16, so that the reader's F16 path is part of
   * the model; the values are the rounded ones */
  if (g_str_has_suffix (name, "running_mean")) {
    t->half = TRUE;
    for (i = 0; i < t->count; i++)
      t->values[i] = p3dc_half_to_float (p3dc_float_to_half (t->values[i]));
  }
  g_ptr_array_add (m->tensors, t);
  g_hash_table_insert (m->by_name, t->name, t);
  return t;
}

void
tiny_model_add_conv (TinyModel * m, P3dTestRng * rng, gchar * name, gint64 d0,
    gint64 d1, gint64 k, gint64 fan_in)
{
  const gint64 shape[4] = { d0, d1, k, k };
  gfloat bound = 2.0f / sqrtf ((gfloat) fan_in);

  tiny_model_add_tensor (m, rng, name, 4, shape, -bound, bound);
}

void
tiny_model_add_norm (TinyModel * m, P3dTestRng * rng, gchar * prefix,
    gint64 channels)
{
  const gint64 shape[1] = { channels };
  TinyModelTensor *gamma;
  gsize i;

  gamma =
      tiny_model_add_tensor (m, rng, g_strdup_printf ("%s.weight", prefix), 1,
      shape, 0.5f, 1.5f);
  for (i = 0; i < gamma->count; i += 3)
    gamma->values[i] = -gamma->values[i];
  tiny_model_add_tensor (m, rng, g_strdup_printf ("%s.bias", prefix), 1, shape,
      -0.5f, 0.5f);
  tiny_model_add_tensor (m, rng, g_strdup_printf ("%s.running_mean", prefix), 1,
      shape, -0.3f, 0.3f);
  tiny_model_add_tensor (m, rng, g_strdup_printf ("%s.running_var", prefix), 1,
      shape, 0.05f, 2.0f);
  g_free (prefix);
}

/* A SECONDFPN stage: a transposed conv ([in][out][k][k]) upsampling by its
 * stride, or, below stride 1 (or at 1 with use_conv_for_no_stride), a
 * conv ([out][in][k][k]) downsampling by 1 / stride. */
static void
add_neck_stage (TinyModel * m, P3dTestRng * rng, guint s)
{
  const TinyModelArch *a = &m->arch;
  gdouble stride = a->neck_strides[s];
  gchar *name = g_strdup_printf ("pts_neck.deblocks.%u.0.weight", s);

  if (stride > 1 || (stride == 1 && !a->conv_for_no_stride)) {
    tiny_model_add_conv (m, rng, name, a->stage_channels[s],
        a->neck_channels[s], (gint64) stride, a->stage_channels[s]);
  } else {
    gint64 k = (gint64) round (1 / stride);

    tiny_model_add_conv (m, rng, name, a->neck_channels[s],
        a->stage_channels[s], k, a->stage_channels[s] * k * k);
  }
  tiny_model_add_norm (m, rng, g_strdup_printf ("pts_neck.deblocks.%u.1", s),
      a->neck_channels[s]);
}

static void
add_task (TinyModel * m, P3dTestRng * rng, guint t)
{
  const TinyModelArch *a = &m->arch;
  const guint k = a->final_kernel;
  guint h;

  for (h = 0; h < 6; h++) {
    guint out = h == 5 ? a->task_classes[t] : common_channels[h];
    const gint64 bias_shape[1] = { out };
    const gchar *head = head_names[h];

    if (h == 4 && !a->vel)
      continue;
    tiny_model_add_conv (m, rng,
        g_strdup_printf ("pts_bbox_head.task_heads.%u.%s.0.conv.weight", t,
            head), a->head_conv, a->share_channels, k,
        a->share_channels * k * k);
    tiny_model_add_norm (m, rng,
        g_strdup_printf ("pts_bbox_head.task_heads.%u.%s.0.bn", t, head),
        a->head_conv);
    tiny_model_add_conv (m, rng,
        g_strdup_printf ("pts_bbox_head.task_heads.%u.%s.1.weight", t, head),
        out, a->head_conv, k, a->head_conv * k * k);
    /* heatmap logits around sigmoid^-1 of a 0.1 threshold, so that a share
     * of the cells pass it, as in a trained model's busy frame */
    tiny_model_add_tensor (m, rng,
        g_strdup_printf ("pts_bbox_head.task_heads.%u.%s.1.bias", t, head), 1,
        bias_shape, h == 5 ? -2.5f : -1.0f, h == 5 ? 0.0f : 1.0f);
  }
}

TinyModel *
tiny_model_new_empty (const TinyModelArch * arch)
{
  TinyModel *m = g_new0 (TinyModel, 1);

  if (arch != NULL) {
    fail_unless (arch->n_stages <= TINY_MODEL_MAX_STAGES);
    fail_unless (arch->n_tasks <= TINY_MODEL_MAX_TASKS);
    m->arch = *arch;
  }
  m->tensors = g_ptr_array_new_with_free_func (tensor_free);
  m->by_name = g_hash_table_new (g_str_hash, g_str_equal);
  return m;
}

void
tiny_model_add_center_head (TinyModel * m, P3dTestRng * rng, guint in_channels)
{
  const TinyModelArch *arch = &m->arch;
  guint t;

  tiny_model_add_conv (m, rng,
      g_strdup ("pts_bbox_head.shared_conv.conv.weight"),
      arch->share_channels, in_channels, 3, in_channels * 9);
  tiny_model_add_norm (m, rng, g_strdup ("pts_bbox_head.shared_conv.bn"),
      arch->share_channels);
  for (t = 0; t < arch->n_tasks; t++)
    add_task (m, rng, t);
}

TinyModel *
tiny_model_new (const TinyModelArch * arch, guint64 seed)
{
  TinyModel *m = tiny_model_new_empty (arch);
  const gint64 pfn_shape[2] = { arch->pfn_out, arch->pfn_in };
  guint s, k, in, neck_total = 0;
  P3dTestRng rng;

  p3d_test_rng_init (&rng, seed);

  tiny_model_add_tensor (m, &rng,
      g_strdup ("pts_voxel_encoder.pfn_layers.0.linear.weight"), 2,
      pfn_shape, -0.3f, 0.3f);
  tiny_model_add_norm (m, &rng,
      g_strdup ("pts_voxel_encoder.pfn_layers.0.norm"), arch->pfn_out);
  in = arch->pfn_out;
  for (s = 0; s < arch->n_stages; s++) {
    guint channels = arch->stage_channels[s];

    for (k = 0; k <= arch->stage_layers[s]; k++) {
      guint from = k == 0 ? in : channels;

      tiny_model_add_conv (m, &rng,
          g_strdup_printf ("pts_backbone.blocks.%u.%u.weight", s, 3 * k),
          channels, from, 3, from * 9);
      tiny_model_add_norm (m, &rng,
          g_strdup_printf ("pts_backbone.blocks.%u.%u", s, 3 * k + 1),
          channels);
    }
    in = channels;
  }
  for (s = 0; s < arch->n_stages; s++) {
    add_neck_stage (m, &rng, s);
    neck_total += arch->neck_channels[s];
  }
  tiny_model_add_center_head (m, &rng, neck_total);
  return m;
}

void
tiny_model_free (TinyModel * m)
{
  g_hash_table_unref (m->by_name);
  g_ptr_array_unref (m->tensors);
  g_free (m);
}

TinyModelTensor *
tiny_model_get (TinyModel * m, const gchar * name)
{
  TinyModelTensor *t = g_hash_table_lookup (m->by_name, name);

  fail_unless (t != NULL, "no tensor %s in the test model", name);
  return t;
}

/* Adds @t as @shape (the values padded with 0.5 or cut, the first one
 * negated with @negative, NaN with @nan) in its dtype, or as I32 when
 * @as_i32. */
static void
write_tensor (P3dTestSafetensors * st, const TinyModelTensor * t,
    guint n_dims, const gint64 * shape, gboolean as_i32, gboolean negative,
    gboolean nan)
{
  gsize count = 1, j;
  gfloat *values;

  for (j = 0; j < n_dims; j++)
    count *= shape[j];
  values = g_new (gfloat, MAX (count, 1));
  for (j = 0; j < count; j++)
    values[j] = j < t->count ? t->values[j] : 0.5f;
  if (negative && count > 0)
    values[0] = -values[0];
  if (nan && count > 0)
    values[0] = NAN;
  if (as_i32) {
    gint32 *ints = g_new (gint32, MAX (count, 1));

    for (j = 0; j < count; j++)
      ints[j] = GINT32_TO_LE ((gint32) (values[j] * 100));
    p3d_test_safetensors_add (st, t->name, "I32", n_dims, shape, ints,
        4 * count);
    g_free (ints);
  } else if (t->half) {
    guint16 *halves = g_new (guint16, MAX (count, 1));

    for (j = 0; j < count; j++)
      halves[j] = GUINT16_TO_LE (p3dc_float_to_half (values[j]));
    p3d_test_safetensors_add (st, t->name, "F16", n_dims, shape, halves,
        2 * count);
    g_free (halves);
  } else {
    p3d_test_safetensors_add_f32 (st, t->name, n_dims, shape, values);
  }
  g_free (values);
}

gchar *
tiny_model_write (TinyModel * m, const gchar * config,
    const TinyModelMutation * mutation)
{
  static const TinyModelMutation none = { NULL, };
  P3dTestSafetensors *st = p3d_test_safetensors_new ();
  gchar *path;
  GBytes *bytes;
  gint fd;
  guint i;

  if (mutation == NULL)
    mutation = &none;
  if (config)
    p3d_test_safetensors_set_metadata (st, P3D_CENTERPOINT_METADATA_KEY,
        config);
  p3d_test_safetensors_set_metadata (st, "format", "pt");
  for (i = 0; i < m->tensors->len; i++) {
    TinyModelTensor *t = m->tensors->pdata[i];
    gboolean reshape = g_strcmp0 (mutation->reshape, t->name) == 0;

    if (g_strcmp0 (mutation->drop, t->name) == 0)
      continue;
    write_tensor (st, t, reshape ? mutation->n_dims : t->n_dims,
        reshape ? mutation->shape : t->shape,
        g_strcmp0 (mutation->as_i32, t->name) == 0,
        g_strcmp0 (mutation->negative, t->name) == 0,
        g_strcmp0 (mutation->nan, t->name) == 0);
  }
  bytes = p3d_test_safetensors_serialize (st);
  p3d_test_safetensors_free (st);
  fd = g_file_open_tmp ("p3d-model-XXXXXX.safetensors", &path, NULL);
  fail_unless (fd >= 0);
  g_close (fd, NULL);
  p3d_test_write_bytes (path, bytes);
  g_bytes_unref (bytes);
  return path;
}

gchar *
tiny_model_replace_once (const gchar * text, const gchar * old,
    const gchar * new)
{
  const gchar *at = strstr (text, old);

  fail_unless (at != NULL, "'%s' not in the config", old);
  fail_unless (strstr (at + 1, old) == NULL, "'%s' twice in the config", old);
  return g_strdup_printf ("%.*s%s%s", (gint) (at - text), text, new,
      at + strlen (old));
}
