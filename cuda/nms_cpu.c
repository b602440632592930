/* Reference for nms.cu: the semantics of nms.h written as directly as
 * possible, sort, then a greedy walk that tests each candidate against the
 * boxes kept so far. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nms.h"
#include "nms_item.h"

typedef struct
{
  uint32_t key;
  uint32_t index;
} SortEntry;

void
p3dc_nms_params_init (P3dcNmsParams * params)
{
  memset (params, 0, sizeof *params);
  params->mode = P3DC_NMS_IOU;
  params->iou_threshold = 0.5f;
  params->distance_threshold = 0.0f;
  params->offset = 0.0f;
  params->score_threshold = -FLT_MAX;
  params->iou_rule = P3DC_NMS_IOU_RULE_EXACT;
}

P3dcResult
p3dc_nms_params_check (const P3dcNmsParams * params)
{
  if (params == NULL)
    return P3DC_ERROR_INVALID_ARGUMENT;
  switch (params->mode) {
    case P3DC_NMS_IOU:
      if (params->offset != 0.0f && params->offset != 1.0f)
        return P3DC_ERROR_INVALID_ARGUMENT;
      /* fall through */
    case P3DC_NMS_BEV_ROTATED:
    case P3DC_NMS_BEV_ALIGNED:
      if (!(params->iou_threshold >= 0.0f))
        return P3DC_ERROR_INVALID_ARGUMENT;
      break;
    case P3DC_NMS_CIRCLE:
      if (!(params->distance_threshold >= 0.0f)
          || !(params->distance_threshold <= FLT_MAX))
        return P3DC_ERROR_INVALID_ARGUMENT;
      break;
    default:
      return P3DC_ERROR_INVALID_ARGUMENT;
  }
  if (isnan (params->score_threshold))
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (params->iou_rule != P3DC_NMS_IOU_RULE_EXACT
      && params->iou_rule != P3DC_NMS_IOU_RULE_MMCV)
    return P3DC_ERROR_INVALID_ARGUMENT;
  return P3DC_OK;
}

size_t
p3dc_nms_record_size (P3dcNmsMode mode)
{
  return mode == P3DC_NMS_IOU ? sizeof (P3dcBox2d) : sizeof (P3dcBox3d);
}

/* Ascending key, then ascending input index: a stable order from qsort. */
static int
compare_entries (const void *a, const void *b)
{
  const SortEntry *x = a, *y = b;

  if (x->key != y->key)
    return x->key < y->key ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

P3dcResult
p3dc_nms_cpu (const P3dcNmsParams * params, const void *boxes,
    uint32_t n_boxes, void *out, uint32_t out_capacity, uint32_t * out_count,
    int32_t * kept_index)
{
  size_t record_size;
  SortEntry *entries = NULL;
  P3dcNmsItem *items = NULL;
  uint32_t *kept = NULL;
  uint32_t n_valid = 0, n_items, n_kept = 0, limit, i, j;
  P3dcNmsPairTest test;

  if (p3dc_nms_params_check (params) != P3DC_OK || out_count == NULL
      || (boxes == NULL && n_boxes > 0) || (out == NULL && out_capacity > 0))
    return P3DC_ERROR_INVALID_ARGUMENT;
  record_size = p3dc_nms_record_size (params->mode);
  limit = out_capacity;
  if (params->post_max > 0 && params->post_max < limit)
    limit = params->post_max;

  if (n_boxes > 0) {
    entries = malloc ((size_t) n_boxes * sizeof *entries);
    if (entries == NULL)
      return P3DC_ERROR_OUT_OF_MEMORY;
  }
  for (i = 0; i < n_boxes; i++) {
    uint32_t key = p3dc_nms_record_key (params->mode, boxes, i,
        params->score_threshold);

    if (key != P3DC_NMS_KEY_DROPPED) {
      entries[n_valid].key = key;
      entries[n_valid].index = i;
      n_valid++;
    }
  }
  /* entries is NULL for an empty frame, and qsort's pointer must be valid
   * even for a count of 0 (C11 7.22.5) */
  if (n_valid > 1)
    qsort (entries, n_valid, sizeof *entries, compare_entries);
  n_items = n_valid;
  if (params->pre_max > 0 && params->pre_max < n_items)
    n_items = params->pre_max;

  if (n_items > 0 && limit > 0) {
    items = malloc ((size_t) n_items * sizeof *items);
    kept = malloc ((size_t) n_items * sizeof *kept);
    if (items == NULL || kept == NULL) {
      free (entries);
      free (items);
      free (kept);
      return P3DC_ERROR_OUT_OF_MEMORY;
    }
    for (i = 0; i < n_items; i++)
      p3dc_nms_item_set (&items[i], params->mode, boxes, entries[i].index,
          params->offset);
    p3dc_nms_pair_test_init (&test, params);
    /* a kept box is final as soon as it is kept, so the walk can stop at
     * the limit: later boxes never change the earlier decisions */
    for (j = 0; j < n_items && n_kept < limit; j++) {
      int suppressed = 0;

      for (i = 0; i < n_kept && !suppressed; i++)
        suppressed = p3dc_nms_item_suppresses (&test, &items[kept[i]],
            &items[j]);
      if (!suppressed)
        kept[n_kept++] = j;
    }
  }

  for (i = 0; i < n_kept; i++) {
    uint32_t index = entries[kept[i]].index;

    memcpy ((uint8_t *) out + (size_t) i * record_size,
        (const uint8_t *) boxes + (size_t) index * record_size, record_size);
    if (kept_index != NULL)
      kept_index[i] = (int32_t) index;
  }
  if (out_capacity > n_kept)
    memset ((uint8_t *) out + (size_t) n_kept * record_size, 0,
        (size_t) (out_capacity - n_kept) * record_size);
  for (i = n_kept; kept_index != NULL && i < out_capacity; i++)
    kept_index[i] = -1;
  *out_count = n_kept;

  free (entries);
  free (items);
  free (kept);
  return P3DC_OK;
}

P3dcResult
p3dc_nms_gather_cpu (const int32_t * kept_index, uint32_t capacity,
    const void *payload, uint32_t words, void *out)
{
  const uint32_t *in = payload;
  uint32_t *dst = out;
  uint32_t k, w;

  if (words == 0 || (capacity > 0 && (kept_index == NULL || payload == NULL
              || out == NULL)))
    return P3DC_ERROR_INVALID_ARGUMENT;
  for (k = 0; k < capacity; k++)
    for (w = 0; w < words; w++)
      dst[(size_t) k * words + w] = kept_index[k] < 0 ? 0u :
          in[(size_t) kept_index[k] * words + w];
  return P3DC_OK;
}
