/* Reference for centerpoint_decode.cu (plain loops and qsort), and the
 * parameter checks both paths share. */
#include <stdlib.h>
#include <string.h>

#include "centerpoint_decode.h"
#include "centerpoint_decode-private.h"

static int
finite_float (float v)
{
  return v - v == 0.0f;
}

P3dcResult
p3dc_centerpoint_params_validate (const P3dcCenterPointParams * params)
{
  uint32_t t, axis;

  if (params == NULL || params->n_tasks == 0 || params->height == 0
      || params->width == 0 || params->max_num == 0)
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (params->n_tasks > P3DC_CENTERPOINT_MAX_TASKS
      || params->max_num > P3DC_CENTERPOINT_MAX_NUM)
    return P3DC_ERROR_TOO_LARGE;
  for (t = 0; t < params->n_tasks; t++) {
    const P3dcCenterPointTask *task = &params->tasks[t];

    if (task->num_classes == 0 || !(task->min_radius >= 0.0))
      return P3DC_ERROR_INVALID_ARGUMENT;
    if ((uint64_t) task->num_classes * params->height * params->width >
        P3DC_CENTERPOINT_MAX_TASK_CELLS)
      return P3DC_ERROR_TOO_LARGE;
  }
  /* scores are in [0, 1]: a threshold of 0 keeps every positive one */
  if (!(params->score_threshold >= 0.0f)
      || !finite_float (params->score_threshold)
      || !finite_float (params->out_size_factor)
      || !finite_float (params->nms_threshold))
    return P3DC_ERROR_INVALID_ARGUMENT;
  for (axis = 0; axis < 2; axis++)
    if (!finite_float (params->voxel_size[axis])
        || !finite_float (params->pc_range[axis]))
      return P3DC_ERROR_INVALID_ARGUMENT;
  for (axis = 0; axis < 6; axis++)
    if (params->post_center_range[axis] != params->post_center_range[axis])
      return P3DC_ERROR_INVALID_ARGUMENT;
  if (params->nms != P3DC_CENTERPOINT_NMS_NONE
      && params->nms != P3DC_CENTERPOINT_NMS_CIRCLE
      && params->nms != P3DC_CENTERPOINT_NMS_ROTATE
      && params->nms != P3DC_CENTERPOINT_NMS_PER_TASK)
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (params->nms == P3DC_CENTERPOINT_NMS_PER_TASK) {
    for (t = 0; t < params->n_tasks; t++) {
      const P3dcCenterPointTask *task = &params->tasks[t];

      if ((task->nms != P3DC_CENTERPOINT_NMS_NONE
              && task->nms != P3DC_CENTERPOINT_NMS_CIRCLE
              && task->nms != P3DC_CENTERPOINT_NMS_ROTATE)
          || !finite_float (task->nms_threshold))
        return P3DC_ERROR_INVALID_ARGUMENT;
    }
  }
  if (params->nms_scale != NULL) {
    uint32_t labels = 0, label;

    for (t = 0; t < params->n_tasks; t++)
      labels += params->tasks[t].num_classes;
    for (label = 0; label < labels; label++)
      if (!(params->nms_scale[label] > 0.0f)
          || !finite_float (params->nms_scale[label]))
        return P3DC_ERROR_INVALID_ARGUMENT;
  }
  return P3DC_OK;
}

uint32_t
p3dc_centerpoint_output_capacity (const P3dcCenterPointParams * params)
{
  uint32_t per_task;

  if (p3dc_centerpoint_params_validate (params) != P3DC_OK)
    return 0;
  per_task = params->max_num;
  if (params->post_max_size != 0 && params->post_max_size < per_task)
    per_task = params->post_max_size;
  return per_task * params->n_tasks;
}

typedef struct
{
  float score;
  uint32_t index;
} Candidate;

static int
compare_candidates (const void *a, const void *b)
{
  const Candidate *ca = a, *cb = b;

  if (ca->score != cb->score)
    return ca->score > cb->score ? -1 : 1;
  return ca->index < cb->index ? -1 : ca->index > cb->index;
}

/* One task: its kept boxes appended at out->boxes[*written] on. */
static P3dcResult
decode_task (const P3dcCenterPointParams * params, uint32_t task,
    uint32_t label_offset, const P3dcCenterPointTaskMaps * maps,
    const P3dcCenterPointOutput * out, uint32_t * written)
{
  const uint32_t cells = params->height * params->width;
  const uint32_t pairs = params->tasks[task].num_classes * cells;
  const P3dcCenterPointNms nms = p3dc_cp_task_nms (params, task);
  const float threshold = p3dc_cp_task_threshold (params, task);
  Candidate *candidates = malloc (sizeof (Candidate) * pairs);
  P3dcBox3d *boxes = malloc (sizeof (P3dcBox3d) * params->max_num);
  P3dcBevRect *nms_rects = malloc (sizeof (P3dcBevRect) * params->max_num);
  float *velocity = malloc (sizeof (float) * 2 * params->max_num);
  unsigned char *removed = calloc (params->max_num, 1);
  uint32_t n = 0, index, k, boxes_n = 0, considered, kept = 0, limit, j;

  if (candidates == NULL || boxes == NULL || nms_rects == NULL
      || velocity == NULL || removed == NULL) {
    free (candidates);
    free (boxes);
    free (nms_rects);
    free (velocity);
    free (removed);
    return P3DC_ERROR_OUT_OF_MEMORY;
  }
  for (index = 0; index < pairs; index++) {
    uint32_t cell = index % cells;
    float score = p3dc_cp_sigmoid (p3dc_cp_read (&maps->heatmap, index / cells,
            cell / params->width, cell % params->width));

    if (score > params->score_threshold) {
      candidates[n].score = score;
      candidates[n].index = index;
      n++;
    }
  }
  qsort (candidates, n, sizeof (Candidate), compare_candidates);
  if (n > params->max_num)
    n = params->max_num;
  for (k = 0; k < n; k++) {
    uint32_t cell = candidates[k].index % cells;

    if (p3dc_cp_decode_box (params, maps, label_offset,
            candidates[k].index / cells, cell / params->width,
            cell % params->width, candidates[k].score, &boxes[boxes_n],
            velocity + 2 * boxes_n))
      boxes_n++;
  }

  considered = boxes_n;
  if (nms == P3DC_CENTERPOINT_NMS_ROTATE && params->pre_max_size != 0
      && params->pre_max_size < considered)
    considered = params->pre_max_size;
  limit = params->post_max_size != 0 ? params->post_max_size : considered;
  for (k = 0; k < considered; k++)
    p3dc_cp_nms_rect (nms, &boxes[k], params->nms_scale != NULL ?
        params->nms_scale[boxes[k].label] : 1.0f, &nms_rects[k]);
  /* greedy, best first: a box survives unless a kept one suppresses it */
  for (k = 0; k < considered && kept < limit; k++) {
    if (removed[k])
      continue;
    out->boxes[*written + kept] = boxes[k];
    if (out->velocity != NULL) {
      out->velocity[2 * (*written + kept)] = velocity[2 * k];
      out->velocity[2 * (*written + kept) + 1] = velocity[2 * k + 1];
    }
    kept++;
    if (nms == P3DC_CENTERPOINT_NMS_NONE)
      continue;
    for (j = k + 1; j < considered; j++)
      if (!removed[j] && p3dc_cp_suppresses (nms,
              params->tasks[task].min_radius, threshold, &nms_rects[k],
              &nms_rects[j]))
        removed[j] = 1;
  }
  *written += kept;
  free (candidates);
  free (boxes);
  free (nms_rects);
  free (velocity);
  free (removed);
  return P3DC_OK;
}

P3dcResult
p3dc_centerpoint_decode_cpu (const P3dcCenterPointParams * params,
    const P3dcCenterPointTaskMaps * maps, const P3dcCenterPointOutput * out)
{
  uint32_t capacity, written = 0, label_offset = 0, t;
  P3dcResult result;

  result = p3dc_centerpoint_params_validate (params);
  if (result != P3DC_OK)
    return result;
  if (maps == NULL || out == NULL || out->boxes == NULL || out->count == NULL)
    return P3DC_ERROR_INVALID_ARGUMENT;
  for (t = 0; t < params->n_tasks; t++)
    if (maps[t].heatmap.data == NULL || maps[t].reg.data == NULL
        || maps[t].height.data == NULL || maps[t].dim.data == NULL
        || maps[t].rot.data == NULL)
      return P3DC_ERROR_INVALID_ARGUMENT;
  capacity = p3dc_centerpoint_output_capacity (params);
  memset (out->boxes, 0, sizeof (P3dcBox3d) * capacity);
  if (out->velocity != NULL)
    memset (out->velocity, 0, sizeof (float) * 2 * capacity);
  for (t = 0; t < params->n_tasks; t++) {
    result = decode_task (params, t, label_offset, &maps[t], out, &written);
    if (result != P3DC_OK)
      return result;
    label_offset += params->tasks[t].num_classes;
  }
  *out->count = written;
  return P3DC_OK;
}
