/* gst-perception: loading the weights file of the network elements. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "p3dmodelfile.h"

P3dCenterPointModel *
p3d_model_file_load (GstElement * element, const gchar * path)
{
  P3dWeights *weights;
  P3dCenterPointModel *model;
  GError *error = NULL;

  if (path == NULL || path[0] == '\0') {
    GST_ELEMENT_ERROR (element, RESOURCE, NOT_FOUND,
        ("No weights file given"),
        ("set the weights property to the model's .safetensors file"));
    return NULL;
  }
  weights = p3d_weights_open (path, &error);
  if (weights == NULL) {
    /* the reader reports a file it cannot open or map as ERROR_OPEN: a
     * resource error, as filesrc posts it; anything else is the content */
    if (!g_file_test (path, G_FILE_TEST_EXISTS))
      GST_ELEMENT_ERROR (element, RESOURCE, NOT_FOUND,
          ("The weights file \"%s\" does not exist", path), ("%s",
              error->message));
    else if (g_error_matches (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_OPEN))
      GST_ELEMENT_ERROR (element, RESOURCE, OPEN_READ,
          ("Cannot read the weights file \"%s\"", path), ("%s",
              error->message));
    else
      GST_ELEMENT_ERROR (element, STREAM, DECODE,
          ("\"%s\" is not a usable weights file: %s", path, error->message),
          (NULL));
    g_error_free (error);
    return NULL;
  }
  model = p3d_centerpoint_model_new (weights, &error);
  p3d_weights_free (weights);
  if (model == NULL) {
    GST_ELEMENT_ERROR (element, STREAM, DECODE,
        ("The weights file \"%s\" does not hold a model we run: %s", path,
            error->message), (NULL));
    g_error_free (error);
    return NULL;
  }
  return model;
}

void
p3d_model_file_decode_params (const P3dCenterPointModel * model,
    gboolean model_nms, P3dCenterPointParams * params)
{
  const P3dCenterPointConfig *config = &model->config;
  guint t, i;

  memset (params, 0, sizeof (*params));
  params->n_tasks = config->n_tasks;
  for (t = 0; t < config->n_tasks; t++) {
    params->tasks[t].num_classes = config->tasks[t].n_classes;
    params->tasks[t].min_radius = config->tasks[t].min_radius;
  }
  params->height = model->head_height;
  params->width = model->head_width;
  params->max_num = config->max_num;
  params->score_threshold = (float) config->score_threshold;
  params->out_size_factor = (float) config->out_size_factor;
  for (i = 0; i < 2; i++) {
    params->voxel_size[i] = (float) config->coder_voxel_size[i];
    params->pc_range[i] = (float) config->coder_pc_range[i];
  }
  for (i = 0; i < 6; i++)
    params->post_center_range[i] = (float) config->post_center_range[i];
  params->norm_bbox = config->norm_bbox;
  params->nms = model_nms ? config->nms_type : P3D_CENTERPOINT_NMS_NONE;
  params->nms_threshold = (float) config->nms_thr;
  /* pre_max_size and post_max_size belong to the NMS: without it every
   * decoded box stays, up to max_num per task */
  params->pre_max_size = model_nms ? config->pre_max_size : 0;
  params->post_max_size = model_nms ? config->post_max_size : 0;
}
