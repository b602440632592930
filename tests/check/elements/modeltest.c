/* Tiny CenterPoint-pillar models for the element tests (modeltest.h). */
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>

#include "elemtest.h"
#include "half.h"
#include "modeltest.h"
#include "p3dcenterpoint.h"
#include "safetensors_writer.h"

#define N_STAGES 2
static const guint stage_channels[N_STAGES] = { 8, 16 };
static const guint stage_layers[N_STAGES] = { 1, 1 };
static const guint neck_channels[N_STAGES] = { 8, 8 };
static const guint neck_strides[N_STAGES] = { 1, 2 };

static const guint share_channels = 8, head_conv = 8, final_kernel = 3;
static const guint common_channels[5] = { 2, 1, 3, 2, 2 };

static const gchar *const head_names[6] = {
  "reg", "height", "dim", "rot", "vel", "heatmap"
};

static const gchar *const task_json[2] = {
  "{\"class_names\": [\"car\"]}",
  "{\"class_names\": [\"pedestrian\", \"cyclist\"]}",
};

static gchar *
config_json (const ModeltestOptions * options)
{
  const gchar *radius = options->n_tasks == 1 ? "[4]" : "[4, 0.5]";
  gchar *tasks = options->n_tasks == 1 ? g_strdup (task_json[0]) :
      g_strdup_printf ("%s, %s", task_json[0], task_json[1]);
  gchar *nms = options->rotate ?
      g_strdup ("\"type\": \"rotate\", \"nms_thr\": 0.2") :
      g_strdup_printf ("\"type\": \"circle\", \"min_radius\": %s, "
      "\"nms_thr\": 0.2", radius);
  gchar *json;

  json = g_strdup_printf ("{\"architecture\": \"centerpoint-pillar\", "
      "\"version\": 1, \"point_channels\": 5, \"features\": \"mmdet3d-11\", "
      "\"voxel_size\": [0.5, 0.5, 8], "
      "\"point_cloud_range\": [-4, -4, -5, 4, 4, 3], "
      "\"max_points\": %d, \"max_voxels\": %d, \"grid\": [16, 16, 1], "
      "\"pfn\": {\"channels\": [8], \"bn_eps\": 0.0009765625}, "
      "\"backbone\": {\"out_channels\": [8, 16], \"layer_nums\": [1, 1], "
      "\"layer_strides\": [2, 2], \"bn_eps\": 0.001}, "
      "\"neck\": {\"out_channels\": [8, 8], \"upsample_strides\": [1, 2], "
      "\"use_conv_for_no_stride\": false, \"bn_eps\": 0.001}, "
      "\"head\": {\"share_conv_channel\": 8, \"head_conv\": 8, "
      "\"final_kernel\": 3, \"bn_eps\": 1e-05, \"tasks\": [%s], "
      "\"common_heads\": {\"reg\": 2, \"height\": 1, \"dim\": 3, \"rot\": 2, "
      "\"vel\": 2}, \"norm_bbox\": true}, "
      "\"coder\": {\"post_center_range\": [-10, -10, -10, 10, 10, 10], "
      "\"max_num\": %d, \"score_threshold\": 0.1, \"out_size_factor\": 2, "
      "\"voxel_size\": [0.5, 0.5], \"pc_range\": [-4, -4]}, "
      "\"test_nms\": {%s, \"pre_max_size\": 100, \"post_max_size\": %d}}",
      MODELTEST_MAX_POINTS, MODELTEST_MAX_VOXELS, tasks, MODELTEST_MAX_NUM,
      nms, MODELTEST_POST_MAX);
  g_free (tasks);
  g_free (nms);
  return json;
}

static void
tensor_free (gpointer data)
{
  ModeltestTensor *t = data;

  g_free (t->name);
  g_free (t->values);
  g_free (t);
}

/* A tensor of random values in [lo, hi). */
static ModeltestTensor *
add_tensor (ModeltestModel * m, P3dTestRng * rng, gchar * name,
    guint n_dims, const gint64 * shape, gfloat lo, gfloat hi)
{
  ModeltestTensor *t = g_new0 (ModeltestTensor, 1);
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
      t->values[i] = p3d_half_to_float (p3d_float_to_half (t->values[i]));
  }
  g_ptr_array_add (m->tensors, t);
  g_hash_table_insert (m->by_name, t->name, t);
  return t;
}

/* A conv weight, PyTorch's default scale doubled. */
static void
add_conv (ModeltestModel * m, P3dTestRng * rng, gchar * name, gint64 d0,
    gint64 d1, gint64 k, gint64 fan_in)
{
  const gint64 shape[4] = { d0, d1, k, k };
  gfloat bound = 2.0f / sqrtf ((gfloat) fan_in);

  add_tensor (m, rng, name, 4, shape, -bound, bound);
}

/* BatchNorm with statistics and affine parameters far from the identity,
 * a third of the gammas negative. */
static void
add_norm (ModeltestModel * m, P3dTestRng * rng, const gchar * prefix,
    gint64 channels)
{
  const gint64 shape[1] = { channels };
  ModeltestTensor *gamma;
  gsize i;

  gamma = add_tensor (m, rng, g_strdup_printf ("%s.weight", prefix), 1,
      shape, 0.5f, 1.5f);
  for (i = 0; i < gamma->count; i += 3)
    gamma->values[i] = -gamma->values[i];
  add_tensor (m, rng, g_strdup_printf ("%s.bias", prefix), 1, shape, -0.5f,
      0.5f);
  add_tensor (m, rng, g_strdup_printf ("%s.running_mean", prefix), 1, shape,
      -0.3f, 0.3f);
  add_tensor (m, rng, g_strdup_printf ("%s.running_var", prefix), 1, shape,
      0.05f, 2.0f);
}

ModeltestModel *
modeltest_model_new (const ModeltestOptions * options)
{
  ModeltestModel *m = g_new0 (ModeltestModel, 1);
  const gint64 pfn_shape[2] = { MODELTEST_PFN_OUT, MODELTEST_PFN_IN };
  guint s, k, t, h, in, neck_total = 0;
  P3dTestRng rng;
  gchar *name;

  fail_unless (options->n_tasks == 1 || options->n_tasks == 2);
  m->tensors = g_ptr_array_new_with_free_func (tensor_free);
  m->by_name = g_hash_table_new (g_str_hash, g_str_equal);
  m->config = config_json (options);
  m->n_tasks = options->n_tasks;
  m->n_classes = options->n_tasks == 1 ? 1 : 3;
  p3d_test_rng_init (&rng, options->seed);

  add_tensor (m, &rng,
      g_strdup ("pts_voxel_encoder.pfn_layers.0.linear.weight"), 2,
      pfn_shape, -0.3f, 0.3f);
  add_norm (m, &rng, "pts_voxel_encoder.pfn_layers.0.norm", MODELTEST_PFN_OUT);
  in = MODELTEST_PFN_OUT;
  for (s = 0; s < N_STAGES; s++) {
    for (k = 0; k <= stage_layers[s]; k++) {
      guint from = k == 0 ? in : stage_channels[s];

      add_conv (m, &rng, g_strdup_printf ("pts_backbone.blocks.%u.%u.weight",
              s, 3 * k), stage_channels[s], from, 3, from * 9);
      name = g_strdup_printf ("pts_backbone.blocks.%u.%u", s, 3 * k + 1);
      add_norm (m, &rng, name, stage_channels[s]);
      g_free (name);
    }
    in = stage_channels[s];
  }
  /* every neck stage is a transposed conv ([in][out][k][k]): stride 1
   * without use_conv_for_no_stride is one of kernel 1 */
  for (s = 0; s < N_STAGES; s++) {
    add_conv (m, &rng, g_strdup_printf ("pts_neck.deblocks.%u.0.weight", s),
        stage_channels[s], neck_channels[s], neck_strides[s],
        stage_channels[s]);
    name = g_strdup_printf ("pts_neck.deblocks.%u.1", s);
    add_norm (m, &rng, name, neck_channels[s]);
    g_free (name);
    neck_total += neck_channels[s];
  }
  add_conv (m, &rng, g_strdup ("pts_bbox_head.shared_conv.conv.weight"),
      share_channels, neck_total, 3, neck_total * 9);
  add_norm (m, &rng, "pts_bbox_head.shared_conv.bn", share_channels);
  for (t = 0; t < options->n_tasks; t++) {
    for (h = 0; h < 6; h++) {
      guint out = h == 5 ? (t == 0 ? 1 : 2) : common_channels[h];
      const gint64 bias_shape[1] = { out };

      add_conv (m, &rng,
          g_strdup_printf ("pts_bbox_head.task_heads.%u.%s.0.conv.weight", t,
              head_names[h]), head_conv, share_channels, final_kernel,
          share_channels * final_kernel * final_kernel);
      name = g_strdup_printf ("pts_bbox_head.task_heads.%u.%s.0.bn", t,
          head_names[h]);
      add_norm (m, &rng, name, head_conv);
      g_free (name);
      add_conv (m, &rng,
          g_strdup_printf ("pts_bbox_head.task_heads.%u.%s.1.weight", t,
              head_names[h]), out, head_conv, final_kernel,
          head_conv * final_kernel * final_kernel);
      /* heatmap logits around sigmoid^-1 of the threshold, so that a
       * share of the cells pass it, as in a trained model's busy frame */
      add_tensor (m, &rng,
          g_strdup_printf ("pts_bbox_head.task_heads.%u.%s.1.bias", t,
              head_names[h]), 1, bias_shape, h == 5 ? -2.5f : -1.0f,
          h == 5 ? 0.0f : 1.0f);
    }
  }
  return m;
}

void
modeltest_model_free (ModeltestModel * m)
{
  g_hash_table_unref (m->by_name);
  g_ptr_array_unref (m->tensors);
  g_free (m->config);
  g_free (m);
}

ModeltestTensor *
modeltest_model_get (ModeltestModel * m, const gchar * name)
{
  ModeltestTensor *t = g_hash_table_lookup (m->by_name, name);

  fail_unless (t != NULL, "no tensor %s in the test model", name);
  return t;
}

void
modeltest_model_zero_head (ModeltestModel * m)
{
  guint i;

  for (i = 0; i < m->tensors->len; i++) {
    ModeltestTensor *t = m->tensors->pdata[i];

    if (g_str_has_prefix (t->name, "pts_bbox_head.task_heads.")
        && g_str_has_suffix (t->name, ".1.weight"))
      memset (t->values, 0, t->count * sizeof (gfloat));
  }
}

/* @text with its one occurrence of @old replaced by @new. */
static gchar *
replace_once (const gchar * text, const gchar * old, const gchar * new)
{
  const gchar *at = strstr (text, old);

  fail_unless (at != NULL, "'%s' not in the config", old);
  fail_unless (strstr (at + 1, old) == NULL, "'%s' twice in the config", old);
  return g_strdup_printf ("%.*s%s%s", (gint) (at - text), text, new,
      at + strlen (old));
}

/* Adds @t as @shape (the values padded with 0.5 or cut) in its dtype, or
 * as I32 when @as_i32. */
static void
write_tensor (P3dTestSafetensors * st, const ModeltestTensor * t,
    guint n_dims, const gint64 * shape, gboolean as_i32)
{
  gsize count = 1, j;
  gfloat *values;

  for (j = 0; j < n_dims; j++)
    count *= shape[j];
  values = g_new (gfloat, MAX (count, 1));
  for (j = 0; j < count; j++)
    values[j] = j < t->count ? t->values[j] : 0.5f;
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
      halves[j] = GUINT16_TO_LE (p3d_float_to_half (values[j]));
    p3d_test_safetensors_add (st, t->name, "F16", n_dims, shape, halves,
        2 * count);
    g_free (halves);
  } else {
    p3d_test_safetensors_add_f32 (st, t->name, n_dims, shape, values);
  }
  g_free (values);
}

gchar *
modeltest_model_write (ModeltestModel * m, const ModeltestMutation * mutation)
{
  static const ModeltestMutation none = { NULL, };
  P3dTestSafetensors *st = p3d_test_safetensors_new ();
  gchar *config, *path;
  GBytes *bytes;
  gint fd;
  guint i;

  if (mutation == NULL)
    mutation = &none;
  config = mutation->config_old ? replace_once (m->config,
      mutation->config_old, mutation->config_new) : g_strdup (m->config);
  if (!mutation->no_config)
    p3d_test_safetensors_set_metadata (st, P3D_CENTERPOINT_METADATA_KEY,
        config);
  p3d_test_safetensors_set_metadata (st, "format", "pt");
  for (i = 0; i < m->tensors->len; i++) {
    ModeltestTensor *t = m->tensors->pdata[i];
    gboolean reshape = g_strcmp0 (mutation->reshape, t->name) == 0;

    if (g_strcmp0 (mutation->drop, t->name) == 0)
      continue;
    write_tensor (st, t, reshape ? mutation->n_dims : t->n_dims,
        reshape ? mutation->shape : t->shape,
        g_strcmp0 (mutation->as_i32, t->name) == 0);
  }
  bytes = p3d_test_safetensors_serialize (st);
  p3d_test_safetensors_free (st);
  fd = g_file_open_tmp ("p3d-model-XXXXXX.safetensors", &path, NULL);
  fail_unless (fd >= 0);
  g_close (fd, NULL);
  p3d_test_write_bytes (path, bytes);
  g_bytes_unref (bytes);
  g_free (config);
  return path;
}

void
modeltest_remove (gchar * path)
{
  g_unlink (path);
  g_free (path);
}

gchar *
modeltest_expect_start_error (GstElement * element, GQuark domain, gint code,
    ...)
{
  GstBus *bus = gst_bus_new ();
  GstMessage *message;
  GError *error = NULL;
  gchar *text;
  const gchar *needle;
  va_list args;

  gst_element_set_bus (element, bus);
  fail_unless_equals_int (gst_element_set_state (element, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  message = elemtest_pop (bus, GST_MESSAGE_ERROR);
  fail_unless (message != NULL, "%s failed to start without an error",
      GST_ELEMENT_NAME (element));
  text = elemtest_message_text (message);
  gst_message_parse_error (message, &error, NULL);
  fail_unless (error->domain == domain && error->code == code,
      "error %s %d: %s", g_quark_to_string (error->domain), error->code, text);
  fail_unless (GST_MESSAGE_SRC (message) == GST_OBJECT (element));
  va_start (args, code);
  while ((needle = va_arg (args, const gchar *)))
      fail_unless (strstr (text, needle) != NULL, "'%s' not in '%s'", needle,
        text);
  va_end (args);
  g_clear_error (&error);
  gst_message_unref (message);
  gst_element_set_state (element, GST_STATE_NULL);
  gst_element_set_bus (element, NULL);
  gst_object_unref (bus);
  return text;
}

typedef struct
{
  const gchar *what;
  ModeltestMutation mutation;
  gint file;                    /* 0 the model, 1 none, 2 missing, 3 text */
  GQuark domain;                /* 0: GST_STREAM_ERROR */
  gint code;                    /* with domain 0: GST_STREAM_ERROR_DECODE */
  const gchar *words[4];        /* NULL-terminated; the path is checked too */
} BadWeights;

#define NO_MUTATION {NULL, NULL, 0, {0}, NULL, NULL, NULL, FALSE}

static const BadWeights bad_weights[] = {
  {"no weights property", NO_MUTATION, 1, 0, 0, {"No weights file given",
          "weights property"}},
  {"a missing file", NO_MUTATION, 2, 0, 0, {"does not exist"}},
  {"not safetensors", NO_MUTATION, 3, 0, 0, {"not a usable weights file",
          "not a safetensors file"}},
  {"a missing tensor", {"pts_neck.deblocks.1.1.running_var", NULL, 0, {0},
          NULL, NULL, NULL, FALSE}, 0, 0, 0,
      {"does not hold a model", "'pts_neck.deblocks.1.1.running_var'"}},
  {"a wrong shape", {NULL, "pts_voxel_encoder.pfn_layers.0.linear.weight", 2,
          {8, 10}, NULL, NULL, NULL, FALSE}, 0, 0, 0,
      {"'pts_voxel_encoder.pfn_layers.0.linear.weight'", "[8, 10]",
          "[8, 11]"}},
  {"a wrong head shape", {NULL, "pts_bbox_head.task_heads.0.dim.1.weight", 4,
          {2, 8, 3, 3}, NULL, NULL, NULL, FALSE}, 0, 0, 0,
      {"'pts_bbox_head.task_heads.0.dim.1.weight'", "[2, 8, 3, 3]",
          "[3, 8, 3, 3]"}},
  {"an unsupported dtype", {NULL, NULL, 0, {0},
          "pts_bbox_head.shared_conv.bn.weight", NULL, NULL, FALSE}, 0, 0, 0,
      {"'pts_bbox_head.shared_conv.bn.weight'", "I32"}},
  {"bad metadata", {NULL, NULL, 0, {0}, NULL, "\"version\": 1",
          "\"version\": 7", FALSE}, 0, 0, 0, {"\"version\"", "1..1"}},
  {"metadata that is not JSON", {NULL, NULL, 0, {0}, NULL,
          "{\"architecture\"", "{\"architecture\" {", FALSE}, 0, 0, 0,
      {"not valid JSON"}},
  {"no metadata", {NULL, NULL, 0, {0}, NULL, NULL, NULL, TRUE}, 0, 0, 0,
      {"no \"p3d.model\" metadata"}},
};

guint
modeltest_n_bad_weights (void)
{
  return G_N_ELEMENTS (bad_weights);
}

void
modeltest_check_bad_weights (const gchar * factory, guint index)
{
  const BadWeights *bad = &bad_weights[index];
  const ModeltestOptions options = { 2, FALSE, 7 };
  ModeltestModel *m = modeltest_model_new (&options);
  GstElement *element = gst_element_factory_make (factory, NULL);
  GQuark domain = bad->domain ? bad->domain : GST_STREAM_ERROR;
  gint code = bad->domain ? bad->code : GST_STREAM_ERROR_DECODE;
  gchar *path = NULL, *text;
  guint i;

  fail_unless (element != NULL, "no %s", factory);
  gst_util_set_object_arg (G_OBJECT (element), "backend", "cpu");
  switch (bad->file) {
    case 0:
      path = modeltest_model_write (m, &bad->mutation);
      break;
    case 1:
      domain = GST_RESOURCE_ERROR;
      code = GST_RESOURCE_ERROR_NOT_FOUND;
      break;
    case 2:
      path = g_build_filename (g_get_tmp_dir (), "p3d-no-such-model.st", NULL);
      domain = GST_RESOURCE_ERROR;
      code = GST_RESOURCE_ERROR_NOT_FOUND;
      break;
    default:{
      gint fd = g_file_open_tmp ("p3d-model-XXXXXX.txt", &path, NULL);

      fail_unless (fd >= 0);
      g_close (fd, NULL);
      fail_unless (g_file_set_contents (path, "# a text file, not a model\n",
              -1, NULL));
      break;
    }
  }
  if (path)
    g_object_set (element, "weights", path, NULL);
  text = modeltest_expect_start_error (element, domain, code, NULL);
  if (path)
    fail_unless (strstr (text, path) != NULL, "%s: the path is not in '%s'",
        bad->what, text);
  for (i = 0; bad->words[i]; i++)
    fail_unless (strstr (text, bad->words[i]) != NULL, "%s: '%s' not in '%s'",
        bad->what, bad->words[i], text);
  GST_INFO ("%s, %s: %s", factory, bad->what, text);
  g_free (text);
  gst_object_unref (element);
  if (path && bad->file != 2)
    modeltest_remove (path);
  else
    g_free (path);
  modeltest_model_free (m);
}

/* ---- bevdetect's input and output ------------------------------------ */

gfloat *
modeltest_random_canvas (guint64 seed)
{
  gfloat *canvas = g_new (gfloat, MODELTEST_CANVAS_VALUES);
  P3dTestRng rng;
  guint i;

  p3d_test_rng_init (&rng, seed);
  for (i = 0; i < MODELTEST_CANVAS_VALUES; i++)
    canvas[i] = p3d_test_rng_below (&rng, 3) == 0 ? 0.0f :
        p3d_test_rng_uniform (&rng, 0.0f, 3.0f);
  return canvas;
}

GstBuffer *
modeltest_canvas_buffer (gfloat * canvas, gboolean half)
{
  guint i;

  if (half) {
    guint16 *halves = g_new (guint16, MODELTEST_CANVAS_VALUES);

    for (i = 0; i < MODELTEST_CANVAS_VALUES; i++) {
      halves[i] = p3d_float_to_half (canvas[i]);
      canvas[i] = p3d_half_to_float (halves[i]);
    }
    return gst_buffer_new_wrapped (halves, MODELTEST_CANVAS_VALUES * 2);
  }
  return gst_buffer_new_memdup (canvas, MODELTEST_CANVAS_VALUES * 4);
}

gchar *
modeltest_bev_caps (const gchar * format)
{
  return g_strdup_printf ("application/x-bev-features, format=%s, "
      "channels=(int)%d, width=(int)%d, height=(int)%d", format,
      MODELTEST_PFN_OUT, MODELTEST_GRID, MODELTEST_GRID);
}

guint
modeltest_read_boxes (GstBuffer * buffer, P3dBox3d ** boxes)
{
  GstMemory *records = gst_buffer_peek_memory (buffer, 0);
  GstMemory *count_mem = gst_buffer_peek_memory (buffer, 1);
  GstMapInfo info;
  guint32 count;

  fail_unless_equals_int (gst_buffer_n_memory (buffer), 2);
  fail_unless (gst_memory_map (count_mem, &info, GST_MAP_READ));
  fail_unless_equals_int (info.size, 4);
  memcpy (&count, info.data, 4);
  gst_memory_unmap (count_mem, &info);
  fail_unless (gst_memory_map (records, &info, GST_MAP_READ));
  fail_unless (count <= info.size / sizeof (P3dBox3d), "count %u of %"
      G_GSIZE_FORMAT " records", count, info.size / sizeof (P3dBox3d));
  *boxes = g_memdup2 (info.data, MAX (count, 1) * sizeof (P3dBox3d));
  gst_memory_unmap (records, &info);
  return count;
}

guint
modeltest_capacity (const ModeltestOptions * options, gboolean nms)
{
  return options->n_tasks * (nms ? MIN (MODELTEST_MAX_NUM,
          MODELTEST_POST_MAX) : MODELTEST_MAX_NUM);
}

/* The decode's parameters as the config in config_json() gives them. */
static void
decode_params (const ModeltestOptions * options, gboolean nms,
    P3dCenterPointParams * params)
{
  guint t;

  memset (params, 0, sizeof (*params));
  params->n_tasks = options->n_tasks;
  for (t = 0; t < options->n_tasks; t++) {
    params->tasks[t].num_classes = t == 0 ? 1 : 2;
    params->tasks[t].min_radius = t == 0 ? 4.0 : 0.5;
  }
  params->height = params->width = MODELTEST_HEAD_GRID;
  params->max_num = MODELTEST_MAX_NUM;
  params->score_threshold = (float) MODELTEST_SCORE_THRESHOLD;
  params->out_size_factor = 2;
  params->voxel_size[0] = params->voxel_size[1] = 0.5f;
  params->pc_range[0] = params->pc_range[1] = -4.0f;
  for (t = 0; t < 3; t++) {
    params->post_center_range[t] = -10.0f;
    params->post_center_range[3 + t] = 10.0f;
  }
  params->norm_bbox = 1;
  params->nms = !nms ? P3D_CENTERPOINT_NMS_NONE : options->rotate ?
      P3D_CENTERPOINT_NMS_ROTATE : P3D_CENTERPOINT_NMS_CIRCLE;
  params->nms_threshold = 0.2f;
  params->pre_max_size = nms ? 100 : 0;
  params->post_max_size = nms ? MODELTEST_POST_MAX : 0;
}

guint
modeltest_reference_boxes (const gchar * path,
    const ModeltestOptions * options, gboolean nms, const gfloat * canvas,
    P3dBox3d ** boxes)
{
  GError *error = NULL;
  P3dWeights *weights = p3d_weights_open (path, &error);
  P3dCenterPointModel *model;
  P3dCenterPointParams params;
  P3dCenterPointTaskMaps maps[P3D_CENTERPOINT_MAX_TASKS];
  P3dCenterPointOutput output;
  guint capacity = modeltest_capacity (options, nms), t;
  guint32 count = 0;
  float **buffers;

  fail_unless (weights != NULL, "%s", error ? error->message : "");
  model = p3d_centerpoint_model_new (weights, &error);
  fail_unless (model != NULL, "%s", error ? error->message : "");
  p3d_weights_free (weights);
  decode_params (options, nms, &params);
  fail_unless_equals_int (p3d_centerpoint_output_capacity (&params), capacity);
  buffers = p3d_convnet_cpu_buffers_new (&model->net);
  fail_unless (buffers != NULL);
  fail_unless_equals_int (p3d_convnet_cpu (&model->net, canvas, buffers),
      P3D_OK);
  memset (maps, 0, sizeof (maps));
  for (t = 0; t < options->n_tasks; t++) {
    const P3dCenterPointHeadOutput *heads = model->heads[t];
    P3dMapView *views[P3D_CENTERPOINT_N_HEADS] = {
      &maps[t].reg, &maps[t].height, &maps[t].dim, &maps[t].rot,
      &maps[t].vel, &maps[t].heatmap
    };
    guint h;

    for (h = 0; h < P3D_CENTERPOINT_N_HEADS; h++)
      p3d_convnet_cpu_view (&model->net, heads[h].buffer,
          buffers[heads[h].buffer], views[h]);
  }
  *boxes = g_new0 (P3dBox3d, capacity);
  output.boxes = *boxes;
  output.count = &count;
  output.velocity = NULL;
  fail_unless_equals_int (p3d_centerpoint_decode_cpu (&params, maps,
          &output), P3D_OK);
  p3d_convnet_cpu_buffers_free (&model->net, buffers);
  p3d_centerpoint_model_free (model);
  return count;
}
