/* Reference for anchor3d_decode.cu (plain loops and qsort), the anchor
 * table both paths read, and the parameter checks both share. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "anchor3d_decode.h"
#include "anchor3d_decode-private.h"

static int
finite_double (double v)
{
  return v - v == 0.0;
}

static int
finite_float (float v)
{
  return v - v == 0.0f;
}

/* Position i of @n along [start, end] by @placement, in double, rounded
 * once. */
static float
place (P3dcAnchor3dPlacement placement, const double range[2], uint32_t i,
    uint32_t n)
{
  double span = range[1] - range[0];

  switch (placement) {
    case P3DC_ANCHOR3D_SPAN:
      return (float) (range[0] + (double) i * (span / (double) (n - 1)));
    case P3DC_ANCHOR3D_CENTERS:
      return (float) (range[0] + ((double) i + 0.5) * (span / (double) n));
    default:
      return (float) (range[0] + (double) i * (span / (double) n));
  }
}

P3dcResult
p3dc_anchor3d_table_init (P3dcAnchor3dTable * table,
    const P3dcAnchor3dSet * sets, uint32_t n_sets, uint32_t height,
    uint32_t width)
{
  uint32_t n = 0, s, i, r, k, j;

  if (table == NULL)
    return P3DC_ERROR_INVALID_ARGUMENT;
  memset (table, 0, sizeof (*table));
  if (sets == NULL || n_sets == 0 || height == 0 || width == 0)
    return P3DC_ERROR_INVALID_ARGUMENT;
  for (s = 0; s < n_sets; s++) {
    const P3dcAnchor3dSet *set = &sets[s];

    if (set->n_sizes == 0 || set->n_rotations == 0)
      return P3DC_ERROR_INVALID_ARGUMENT;
    if (set->n_sizes > P3DC_ANCHOR3D_MAX_SIZES
        || set->n_rotations > P3DC_ANCHOR3D_MAX_ROTATIONS)
      return P3DC_ERROR_TOO_LARGE;
    if (set->placement != P3DC_ANCHOR3D_SPAN
        && set->placement != P3DC_ANCHOR3D_CENTERS
        && set->placement != P3DC_ANCHOR3D_CORNERS)
      return P3DC_ERROR_INVALID_ARGUMENT;
    /* a span of one anchor divides by zero in both frameworks */
    if (set->placement == P3DC_ANCHOR3D_SPAN && (height < 2 || width < 2))
      return P3DC_ERROR_INVALID_ARGUMENT;
    if (!finite_double (set->x_range[0]) || !finite_double (set->x_range[1])
        || !finite_double (set->y_range[0])
        || !finite_double (set->y_range[1]) || !finite_double (set->bottom))
      return P3DC_ERROR_INVALID_ARGUMENT;
    for (i = 0; i < set->n_sizes; i++)
      for (j = 0; j < 3; j++)
        if (!finite_double (set->sizes[i][j]) || !(set->sizes[i][j] > 0.0))
          return P3DC_ERROR_INVALID_ARGUMENT;
    for (r = 0; r < set->n_rotations; r++)
      if (!finite_double (set->rotations[r]))
        return P3DC_ERROR_INVALID_ARGUMENT;
    n += set->n_sizes * set->n_rotations;
    if (n > P3DC_ANCHOR3D_MAX_ANCHORS)
      return P3DC_ERROR_TOO_LARGE;
  }
  if ((uint64_t) height * width * n > P3DC_ANCHOR3D_MAX_CELLS)
    return P3DC_ERROR_TOO_LARGE;
  table->x = malloc (sizeof (float) * n * width);
  table->y = malloc (sizeof (float) * n * height);
  if (table->x == NULL || table->y == NULL) {
    p3dc_anchor3d_table_clear (table);
    return P3DC_ERROR_OUT_OF_MEMORY;
  }
  table->n_anchors = n;
  table->height = height;
  table->width = width;
  k = 0;
  for (s = 0; s < n_sets; s++) {
    const P3dcAnchor3dSet *set = &sets[s];

    for (i = 0; i < set->n_sizes; i++) {
      for (r = 0; r < set->n_rotations; r++, k++) {
        P3dcAnchor3dShape *a = &table->shapes[k];

        a->dx = (float) set->sizes[i][0];
        a->dy = (float) set->sizes[i][1];
        a->dz = (float) set->sizes[i][2];
        a->yaw = (float) set->rotations[r];
        /* both frameworks add half the float height to the float bottom */
        a->z = (float) set->bottom + a->dz / 2.0f;
        a->diagonal = sqrtf (a->dx * a->dx + a->dy * a->dy);
        for (j = 0; j < width; j++)
          table->x[(size_t) k * width + j] = place (set->placement,
              set->x_range, j, width);
        for (j = 0; j < height; j++)
          table->y[(size_t) k * height + j] = place (set->placement,
              set->y_range, j, height);
      }
    }
  }
  return P3DC_OK;
}

void
p3dc_anchor3d_table_clear (P3dcAnchor3dTable * table)
{
  if (table == NULL)
    return;
  free (table->x);
  free (table->y);
  memset (table, 0, sizeof (*table));
}

P3dcResult
p3dc_anchor3d_params_validate (const P3dcAnchor3dParams * params,
    const P3dcAnchor3dTable * table)
{
  if (params == NULL || table == NULL || table->n_anchors == 0
      || table->height == 0 || table->width == 0 || table->x == NULL
      || table->y == NULL)
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (params->rules != P3DC_ANCHOR3D_OPENPCDET
      && params->rules != P3DC_ANCHOR3D_MMDET3D)
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (params->nms != P3DC_ANCHOR3D_NMS_ROTATED
      && params->nms != P3DC_ANCHOR3D_NMS_ROTATED_MMCV
      && params->nms != P3DC_ANCHOR3D_NMS_ALIGNED
      && params->nms != P3DC_ANCHOR3D_NMS_NONE)
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (params->num_classes == 0 || params->pre_max == 0 || params->post_max == 0)
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (params->num_classes > P3DC_ANCHOR3D_MAX_CLASSES
      || params->pre_max > P3DC_ANCHOR3D_MAX_PRE
      || table->n_anchors > P3DC_ANCHOR3D_MAX_ANCHORS
      || (uint64_t) table->height * table->width * table->n_anchors >
      P3DC_ANCHOR3D_MAX_CELLS)
    return P3DC_ERROR_TOO_LARGE;
  if (params->code_size != 7 && params->code_size != 9)
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (params->dir_bins > 16
      || (params->rules == P3DC_ANCHOR3D_MMDET3D && params->dir_bins != 0
          && params->dir_bins != 2))
    return P3DC_ERROR_INVALID_ARGUMENT;
  /* scores are in [0, 1]: the threshold is a score */
  if (!(params->score_threshold >= 0.0f)
      || !finite_float (params->score_threshold)
      || !(params->nms_threshold >= 0.0f)
      || !finite_float (params->nms_threshold)
      || !finite_float (params->dir_offset)
      || !finite_float (params->dir_limit_offset))
    return P3DC_ERROR_INVALID_ARGUMENT;
  return P3DC_OK;
}

uint32_t
p3dc_anchor3d_output_capacity (const P3dcAnchor3dParams * params,
    const P3dcAnchor3dTable * table)
{
  uint32_t per_list;

  if (p3dc_anchor3d_params_validate (params, table) != P3DC_OK)
    return 0;
  if (params->rules == P3DC_ANCHOR3D_MMDET3D) {
    uint64_t all = (uint64_t) params->num_classes * params->pre_max;

    return all < params->post_max ? (uint32_t) all : params->post_max;
  }
  per_list = params->pre_max < params->post_max ? params->pre_max :
      params->post_max;
  return per_list * p3dc_a3_lists (params);
}

typedef struct
{
  float score;
  uint32_t index;               /* anchor, or rank among the nms_pre */
  int32_t label;
} Entry;

/* score descending, then index ascending */
static int
compare_entries (const void *a, const void *b)
{
  const Entry *ea = a, *eb = b;

  if (ea->score != eb->score)
    return ea->score > eb->score ? -1 : 1;
  return ea->index < eb->index ? -1 : ea->index > eb->index;
}

typedef struct
{
  P3dcBox3d box;
  float velocity[2];
  uint32_t position;            /* in the concatenation of the lists */
} Kept;

static int
compare_kept (const void *a, const void *b)
{
  const Kept *ka = a, *kb = b;

  if (ka->box.score != kb->box.score)
    return ka->box.score > kb->box.score ? -1 : 1;
  return ka->position < kb->position ? -1 : ka->position > kb->position;
}

/* Decodes @n entries of a list (anchor indices), runs its NMS and appends
 * its kept boxes to @kept. */
static P3dcResult
nms_list (const P3dcAnchor3dParams * p, const P3dcAnchor3dTable * table,
    const P3dcAnchor3dMaps * maps, const Entry * entries, uint32_t n,
    Kept * kept, uint32_t * n_kept)
{
  P3dcBox3d *boxes = malloc (sizeof (P3dcBox3d) * (n ? n : 1));
  float *velocity = malloc (sizeof (float) * 2 * (n ? n : 1));
  P3dcA3Rect *rects = malloc (sizeof (P3dcA3Rect) * (n ? n : 1));
  unsigned char *removed = calloc (n ? n : 1, 1);
  uint32_t a_per_row = table->width * table->n_anchors, boxes_n = 0, i, j;
  uint32_t count = 0;

  if (boxes == NULL || velocity == NULL || rects == NULL || removed == NULL) {
    free (boxes);
    free (velocity);
    free (rects);
    free (removed);
    return P3DC_ERROR_OUT_OF_MEMORY;
  }
  for (i = 0; i < n; i++) {
    uint32_t a = entries[i].index;
    uint32_t y = a / a_per_row, x = (a / table->n_anchors) % table->width;
    uint32_t k = a % table->n_anchors;
    float raw_yaw;

    if (p3dc_a3_decode_box (p, &table->shapes[k],
            table->x[(size_t) k * table->width + x],
            table->y[(size_t) k * table->height + y], maps, k, y, x,
            entries[i].score, entries[i].label, &boxes[boxes_n], &raw_yaw,
            velocity + 2 * boxes_n)) {
      p3dc_a3_nms_rect (p, &boxes[boxes_n], raw_yaw, &rects[boxes_n]);
      boxes_n++;
    }
  }
  /* greedy, best first: a box survives unless a kept one suppresses it */
  for (i = 0; i < boxes_n && count < p->post_max; i++) {
    if (removed[i])
      continue;
    kept[*n_kept].box = boxes[i];
    kept[*n_kept].velocity[0] = velocity[2 * i];
    kept[*n_kept].velocity[1] = velocity[2 * i + 1];
    kept[*n_kept].position = *n_kept;
    (*n_kept)++;
    count++;
    for (j = i + 1; j < boxes_n && p->nms != P3DC_ANCHOR3D_NMS_NONE; j++)
      if (!removed[j] && p3dc_a3_suppresses (p->nms, p->nms_threshold,
              &rects[i], &rects[j]))
        removed[j] = 1;
  }
  free (boxes);
  free (velocity);
  free (rects);
  free (removed);
  return P3DC_OK;
}

P3dcResult
p3dc_anchor3d_decode_cpu (const P3dcAnchor3dParams * params,
    const P3dcAnchor3dTable * table, const P3dcAnchor3dMaps * maps,
    const P3dcAnchor3dOutput * out)
{
  const uint32_t n_anchors = table != NULL ? table->n_anchors : 0;
  uint32_t capacity, lists, total, l, a, i, n_kept = 0, written;
  Entry *entries = NULL, *list = NULL;
  Kept *kept = NULL;
  uint32_t n_entries = 0;
  P3dcResult result;

  result = p3dc_anchor3d_params_validate (params, table);
  if (result != P3DC_OK)
    return result;
  if (maps == NULL || out == NULL || out->boxes == NULL || out->count == NULL
      || maps->cls.data == NULL || maps->box.data == NULL
      || (params->dir_bins > 0 && maps->dir.data == NULL))
    return P3DC_ERROR_INVALID_ARGUMENT;
  capacity = p3dc_anchor3d_output_capacity (params, table);
  lists = p3dc_a3_lists (params);
  total = table->height * table->width * n_anchors;
  entries = malloc (sizeof (Entry) * total);
  list = malloc (sizeof (Entry) * params->pre_max);
  kept = malloc (sizeof (Kept) * (size_t) lists * params->pre_max);
  if (entries == NULL || list == NULL || kept == NULL) {
    result = P3DC_ERROR_OUT_OF_MEMORY;
    goto done;
  }

  if (params->rules == P3DC_ANCHOR3D_MMDET3D) {
    /* the nms_pre anchors of largest score, then a list per class */
    uint32_t n_pre;

    for (a = 0; a < total; a++) {
      uint32_t k = a % n_anchors, cell = a / n_anchors;
      int32_t label;
      float s = p3dc_a3_best_score (params, maps, k, cell / table->width,
          cell % table->width, &label);

      if (p3dc_a3_passes (params, s)) {
        entries[n_entries].score = s;
        entries[n_entries].index = a;
        entries[n_entries].label = label;
        n_entries++;
      }
    }
    qsort (entries, n_entries, sizeof (Entry), compare_entries);
    n_pre = n_entries < params->pre_max ? n_entries : params->pre_max;
    for (l = 0; l < lists; l++) {
      uint32_t n = 0;

      for (i = 0; i < n_pre; i++) {
        uint32_t k = entries[i].index % n_anchors;
        uint32_t cell = entries[i].index / n_anchors;
        float s = p3dc_a3_class_score (params, maps, k, l,
            cell / table->width, cell % table->width);

        if (p3dc_a3_passes (params, s)) {
          list[n].score = s;
          list[n].index = i;    /* the rank, for the tie order */
          list[n].label = (int32_t) l;
          n++;
        }
      }
      qsort (list, n, sizeof (Entry), compare_entries);
      for (i = 0; i < n; i++)
        list[i].index = entries[list[i].index].index;
      result = nms_list (params, table, maps, list, n, kept, &n_kept);
      if (result != P3DC_OK)
        goto done;
    }
    /* more than max_num: the max_num best, a stable sort by score */
    if (n_kept > params->post_max) {
      qsort (kept, n_kept, sizeof (Kept), compare_kept);
      n_kept = params->post_max;
    }
  } else {
    for (l = 0; l < lists; l++) {
      uint32_t n;

      n_entries = 0;
      for (a = 0; a < total; a++) {
        uint32_t k = a % n_anchors, cell = a / n_anchors;
        uint32_t y = cell / table->width, x = cell % table->width;
        int32_t label = (int32_t) l;
        float s = params->per_class ? p3dc_a3_class_score (params, maps, k, l,
            y, x) : p3dc_a3_best_score (params, maps, k, y, x, &label);

        if (p3dc_a3_passes (params, s)) {
          entries[n_entries].score = s;
          entries[n_entries].index = a;
          entries[n_entries].label = label;
          n_entries++;
        }
      }
      qsort (entries, n_entries, sizeof (Entry), compare_entries);
      n = n_entries < params->pre_max ? n_entries : params->pre_max;
      result = nms_list (params, table, maps, entries, n, kept, &n_kept);
      if (result != P3DC_OK)
        goto done;
    }
  }

  written = n_kept < capacity ? n_kept : capacity;
  memset (out->boxes, 0, sizeof (P3dcBox3d) * capacity);
  if (out->velocity != NULL)
    memset (out->velocity, 0, sizeof (float) * 2 * capacity);
  for (i = 0; i < written; i++) {
    out->boxes[i] = kept[i].box;
    if (out->velocity != NULL) {
      out->velocity[2 * i] = kept[i].velocity[0];
      out->velocity[2 * i + 1] = kept[i].velocity[1];
    }
  }
  *out->count = written;

done:
  free (entries);
  free (list);
  free (kept);
  return result;
}
