/* Tiny CenterPoint-pillar models for the element tests (p3dtest-model.h). */
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>

#include "p3dtest-elem.h"
#include "half.h"
#include "p3dtest-model.h"
#include "p3dcenterpoint.h"
#include "p3dmodel.h"
#include "p3dtest-tinymodel.h"

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
      "\"head\": {\"share_conv_channel\": 8, \"head_conv\": %u, "
      "\"final_kernel\": 3, \"bn_eps\": 1e-05, \"tasks\": [%s], "
      "\"common_heads\": {\"reg\": 2, \"height\": 1, \"dim\": 3, \"rot\": 2, "
      "\"vel\": 2}, \"norm_bbox\": true}, "
      "\"coder\": {\"post_center_range\": [-10, -10, -10, 10, 10, 10], "
      "\"max_num\": %d, \"score_threshold\": 0.1, \"out_size_factor\": 2, "
      "\"voxel_size\": [0.5, 0.5], \"pc_range\": [-4, -4]}, "
      "\"test_nms\": {%s, \"pre_max_size\": 100, \"post_max_size\": %d}}",
      MODELTEST_MAX_POINTS, MODELTEST_MAX_VOXELS,
      options->head_conv ? options->head_conv : 8, tasks, MODELTEST_MAX_NUM,
      nms, MODELTEST_POST_MAX);
  g_free (tasks);
  g_free (nms);
  return json;
}

/* The architecture the config above describes. */
static const TinyModelArch arch = {
  MODELTEST_PFN_IN, MODELTEST_PFN_OUT, 2, {8, 16}, {1, 1}, {8, 8}, {1, 2},
  FALSE, 8, 8, 3, 0, {1, 2}, TRUE
};

ModeltestModel *
modeltest_model_new (const ModeltestOptions * options)
{
  ModeltestModel *m = g_new0 (ModeltestModel, 1);
  TinyModelArch a = arch;

  fail_unless (options->n_tasks == 1 || options->n_tasks == 2);
  a.n_tasks = options->n_tasks;
  if (options->head_conv != 0)
    a.head_conv = options->head_conv;
  m->weights = tiny_model_new (&a, options->seed);
  m->config = config_json (options);
  m->n_tasks = options->n_tasks;
  m->n_classes = options->n_tasks == 1 ? 1 : 3;
  return m;
}

void
modeltest_model_free (ModeltestModel * m)
{
  tiny_model_free (m->weights);
  g_free (m->config);
  g_free (m);
}

ModeltestTensor *
modeltest_model_get (ModeltestModel * m, const gchar * name)
{
  return tiny_model_get (m->weights, name);
}

void
modeltest_model_zero_head (ModeltestModel * m)
{
  guint i;

  for (i = 0; i < m->weights->tensors->len; i++) {
    ModeltestTensor *t = m->weights->tensors->pdata[i];

    if (g_str_has_prefix (t->name, "pts_bbox_head.task_heads.")
        && g_str_has_suffix (t->name, ".1.weight"))
      memset (t->values, 0, t->count * sizeof (gfloat));
  }
}

gchar *
modeltest_model_write (ModeltestModel * m, const ModeltestMutation * mutation)
{
  static const ModeltestMutation none = { NULL, };
  TinyModelMutation tensors = { NULL, };
  gchar *config = NULL, *path;

  if (mutation == NULL)
    mutation = &none;
  tensors.drop = mutation->drop;
  tensors.reshape = mutation->reshape;
  tensors.n_dims = mutation->n_dims;
  memcpy (tensors.shape, mutation->shape, sizeof (tensors.shape));
  tensors.as_i32 = mutation->as_i32;
  if (!mutation->no_config)
    config = mutation->config_old ? tiny_model_replace_once (m->config,
        mutation->config_old, mutation->config_new) : g_strdup (m->config);
  path = tiny_model_write (m->weights, config, &tensors);
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
      halves[i] = p3dc_float_to_half (canvas[i]);
      canvas[i] = p3dc_half_to_float (halves[i]);
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
modeltest_read_boxes (GstBuffer * buffer, P3dcBox3d ** boxes)
{
  return modeltest_read_boxes_velocity (buffer, boxes, NULL);
}

guint
modeltest_read_boxes_velocity (GstBuffer * buffer, P3dcBox3d ** boxes,
    gfloat ** velocity)
{
  GstMemory *records = gst_buffer_peek_memory (buffer, 0);
  GstMemory *count_mem = gst_buffer_peek_memory (buffer, 1);
  guint n_memories = gst_buffer_n_memory (buffer);
  GstMapInfo info;
  guint32 count;

  fail_unless (n_memories == 2 || n_memories == 3, "%u memories", n_memories);
  if (velocity != NULL) {
    *velocity = NULL;
    if (n_memories == 3) {
      GstMemory *v = gst_buffer_peek_memory (buffer, 2);
      gsize capacity = gst_memory_get_sizes (records, NULL, NULL) /
          sizeof (P3dcBox3d);

      fail_unless (gst_memory_map (v, &info, GST_MAP_READ));
      fail_unless_equals_int (info.size, capacity * 8);
      *velocity = g_memdup2 (info.data, info.size);
      gst_memory_unmap (v, &info);
    }
  }
  fail_unless (gst_memory_map (count_mem, &info, GST_MAP_READ));
  fail_unless_equals_int (info.size, 4);
  memcpy (&count, info.data, 4);
  gst_memory_unmap (count_mem, &info);
  fail_unless (gst_memory_map (records, &info, GST_MAP_READ));
  fail_unless (count <= info.size / sizeof (P3dcBox3d), "count %u of %"
      G_GSIZE_FORMAT " records", count, info.size / sizeof (P3dcBox3d));
  *boxes = g_memdup2 (info.data, MAX (count, 1) * sizeof (P3dcBox3d));
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
    P3dcCenterPointParams * params)
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
  params->nms = !nms ? P3DC_CENTERPOINT_NMS_NONE : options->rotate ?
      P3DC_CENTERPOINT_NMS_ROTATE : P3DC_CENTERPOINT_NMS_CIRCLE;
  params->nms_threshold = 0.2f;
  params->pre_max_size = nms ? 100 : 0;
  params->post_max_size = nms ? MODELTEST_POST_MAX : 0;
}

/* The CenterPoint model in the weights file @path, which must load. */
static P3dCenterPointModel *
load_centerpoint (const gchar * path)
{
  GError *error = NULL;
  P3dWeights *weights = p3d_weights_open (path, &error);
  P3dCenterPointModel *model;

  fail_unless (weights != NULL, "%s", error ? error->message : "");
  model = p3d_centerpoint_model_new (weights, &error);
  fail_unless (model != NULL, "%s", error ? error->message : "");
  p3d_weights_free (weights);
  return model;
}

guint
modeltest_reference_boxes (const gchar * path,
    const ModeltestOptions * options, gboolean nms, const gfloat * canvas,
    P3dcBox3d ** boxes, gfloat ** velocity)
{
  P3dCenterPointModel *model = load_centerpoint (path);
  P3dcCenterPointParams params;
  P3dcCenterPointTaskMaps maps[P3DC_CENTERPOINT_MAX_TASKS];
  P3dcCenterPointOutput output;
  guint capacity = modeltest_capacity (options, nms), t;
  guint32 count = 0;
  float **buffers;

  decode_params (options, nms, &params);
  fail_unless_equals_int (p3dc_centerpoint_output_capacity (&params), capacity);
  buffers = p3dc_convnet_cpu_buffers_new (&model->net);
  fail_unless (buffers != NULL);
  fail_unless_equals_int (p3dc_convnet_cpu (&model->net, canvas, buffers),
      P3DC_OK);
  memset (maps, 0, sizeof (maps));
  for (t = 0; t < options->n_tasks; t++) {
    const P3dCenterPointHeadOutput *heads = model->heads[t];
    P3dcMapView *views[P3D_CENTERPOINT_N_HEADS] = {
      &maps[t].reg, &maps[t].height, &maps[t].dim, &maps[t].rot,
      &maps[t].vel, &maps[t].heatmap
    };
    guint h;

    for (h = 0; h < P3D_CENTERPOINT_N_HEADS; h++) {
      /* a head may be a channel slice (the build merges the heads) */
      p3dc_convnet_cpu_view (&model->net, heads[h].buffer,
          buffers[heads[h].buffer], views[h]);
      p3dc_map_view_offset_channels (views[h], heads[h].channel_offset);
    }
  }
  *boxes = g_new0 (P3dcBox3d, capacity);
  output.boxes = *boxes;
  output.count = &count;
  output.velocity = velocity ? (*velocity = g_new0 (gfloat, 2 * capacity)) :
      NULL;
  fail_unless_equals_int (p3dc_centerpoint_decode_cpu (&params, maps,
          &output), P3DC_OK);
  p3dc_convnet_cpu_buffers_free (&model->net, buffers);
  p3d_centerpoint_model_free (model);
  return count;
}

guint
modeltest_head_buffers (const gchar * path)
{
  P3dCenterPointModel *model = load_centerpoint (path);
  GHashTable *buffers = g_hash_table_new (NULL, NULL);
  guint t, h, n;

  for (t = 0; t < model->config.n_tasks; t++)
    for (h = 0; h < P3D_CENTERPOINT_N_HEADS; h++)
      if (model->heads[t][h].channels > 0)
        g_hash_table_add (buffers,
            GUINT_TO_POINTER (model->heads[t][h].buffer));
  n = g_hash_table_size (buffers);
  g_hash_table_unref (buffers);
  p3d_centerpoint_model_free (model);
  return n;
}

/* ---- tiny camera models -------------------------------------------------- */

gchar *
modeltest_bevdet_write (const P3dTestBevDetArch * arch, guint64 seed)
{
  TinyModel *m = p3d_test_bevdet_model_new (arch, seed);
  gchar *config = p3d_test_bevdet_config (arch, FALSE);
  gchar *path = tiny_model_write (m, config, NULL);

  g_free (config);
  tiny_model_free (m);
  return path;
}

gchar *
modeltest_bevdet_caps (const P3dTestBevDetArch * arch, const gchar * format)
{
  return g_strdup_printf ("application/x-bev-features, format=%s, "
      "channels=(int)%u, width=(int)%u, height=(int)%u, layout=yx, "
      "range=<%.1f, %.1f, -10.0, %.1f, %.1f, 10.0>", format,
      arch->context_channels,
      arch->grid_x, arch->grid_y, -(gdouble) arch->grid_x / 2.0,
      -(gdouble) arch->grid_y / 2.0, arch->grid_x / 2.0, arch->grid_y / 2.0);
}

static gsize
bevdet_canvas_values (const P3dTestBevDetArch * arch)
{
  return (gsize) arch->context_channels * arch->grid_x * arch->grid_y;
}

gfloat *
modeltest_bevdet_canvas (const P3dTestBevDetArch * arch, guint64 seed)
{
  gsize n = bevdet_canvas_values (arch), i;
  gfloat *canvas = g_new (gfloat, n);
  P3dTestRng rng;

  p3d_test_rng_init (&rng, seed);
  for (i = 0; i < n; i++)
    canvas[i] = p3d_test_rng_below (&rng, 3) == 0 ? 0.0f :
        p3d_test_rng_uniform (&rng, 0.0f, 3.0f);
  return canvas;
}

GstBuffer *
modeltest_bevdet_buffer (const P3dTestBevDetArch * arch, gfloat * canvas,
    gboolean half)
{
  gsize n = bevdet_canvas_values (arch), i;

  if (half) {
    guint16 *halves = g_new (guint16, n);

    for (i = 0; i < n; i++) {
      halves[i] = p3dc_float_to_half (canvas[i]);
      canvas[i] = p3dc_half_to_float (halves[i]);
    }
    return gst_buffer_new_wrapped (halves, n * 2);
  }
  return gst_buffer_new_memdup (canvas, n * 4);
}

guint
modeltest_bevdet_reference (const gchar * path, gboolean nms,
    const gfloat * canvas, P3dcBox3d ** boxes, gfloat ** velocity,
    guint * capacity)
{
  GError *error = NULL;
  P3dWeights *weights = p3d_weights_open (path, &error);
  P3dModel *model;
  const P3dModelNetwork *bev;
  P3dModelDecoder *decoder;
  P3dModelBoxes out;
  guint32 count = 0;
  float **buffers;

  fail_unless (weights != NULL, "%s", error ? error->message : "");
  model = p3d_model_new (weights, &error);
  fail_unless (model != NULL, "%s", error ? error->message : "");
  p3d_weights_free (weights);
  bev = p3d_model_get_network (model, "bev");
  decoder = p3d_model_decoder_new (model, "bev", nms, &error);
  fail_unless (decoder != NULL, "%s", error ? error->message : "");
  *capacity = p3d_model_decoder_get_capacity (decoder);
  buffers = p3dc_convnet_cpu_buffers_new (&bev->desc);
  fail_unless_equals_int (p3dc_convnet_cpu (&bev->desc, canvas, buffers),
      P3DC_OK);
  *boxes = g_new0 (P3dcBox3d, *capacity);
  *velocity = g_new0 (gfloat, 2 * *capacity);
  out.boxes = *boxes;
  out.count = &count;
  out.velocity = *velocity;
  fail_unless_equals_int (p3d_model_decoder_run_cpu (decoder, buffers, &out),
      P3DC_OK);
  p3dc_convnet_cpu_buffers_free (&bev->desc, buffers);
  p3d_model_decoder_free (decoder);
  p3d_model_free (model);
  return count;
}
