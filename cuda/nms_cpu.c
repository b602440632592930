/* Reference for nms.cu: the semantics of nms.h written as directly as
 * possible, sort, then a greedy walk that tests each candidate against the
 * boxes kept so far that may overlap it.
 *
 * Which kept boxes may: every pair test of nms_item.h is 0 for two boxes
 * whose ground footprints (grown by the mmcv rule's margin, or by half the
 * circle's distance) are apart, so the walk keeps the kept boxes in a grid
 * of cells over the ground plane and tests a candidate only against those
 * in the cells its footprint's bounding square covers, with a margin that
 * covers the float rounding of the tests. A kept box whose square covers
 * many cells (a huge box), or is not finite, is tested against every
 * candidate. The decisions are the tests' own, so the kept boxes are the
 * ones the quadratic walk keeps (tests/check/libs/nms.c compares them);
 * scattered boxes cost about a test each instead of one per kept box
 * (65 536 of them: 14.7 s a frame before). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nms-private.h"
#include "nms.h"
#include "nms_item.h"

/* A box whose square covers more cells than this is tested against every
 * candidate rather than listed in each cell. */
#define MAX_CELLS_PER_BOX 16
/* The grid has at most this many cells per box, and per axis. */
#define CELLS_PER_BOX 2
#define MAX_GRID_SIDE 65536

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

/* The square, in double, that holds every point of @item's footprint
 * that a pair test can see: a pair whose squares are apart is never
 * suppressed. FALSE when it is not finite. */
static int
item_square (const P3dcNmsPairTest * test, const P3dcNmsItem * item,
    double *lo_x, double *lo_y, double *hi_x, double *hi_y)
{
  double cx, cy, reach, margin;

  switch (test->mode) {
    case P3DC_NMS_IOU:
      /* overlapping when right - left + offset > 0 on both axes */
      *lo_x = item->shape.aligned.x1;
      *lo_y = item->shape.aligned.y1;
      *hi_x = (double) item->shape.aligned.x2 + test->offset;
      *hi_y = (double) item->shape.aligned.y2 + test->offset;
      margin = 1e-3 * (fabs (*hi_x - *lo_x) + fabs (*hi_y - *lo_y))
          + 1e-5 * (fabs (*lo_x) + fabs (*lo_y) + fabs (*hi_x) + fabs (*hi_y))
          + 1e-6;
      *lo_x -= margin;
      *lo_y -= margin;
      *hi_x += margin;
      *hi_y += margin;
      return isfinite (*lo_x) && isfinite (*lo_y) && isfinite (*hi_x)
          && isfinite (*hi_y);
    case P3DC_NMS_CIRCLE:
      /* two centres closer than the distance: squares of half of it meet */
      cx = item->shape.centre[0];
      cy = item->shape.centre[1];
      reach = 0.5 * sqrt ((double) test->threshold);
      break;
    default:
      /* bounding circle; the mmcv rule counts corners 1 cm outside */
      cx = item->shape.rect.cx;
      cy = item->shape.rect.cy;
      reach = item->shape.rect.radius + 2.0 * P3DC_MMCV_MARGIN;
      break;
  }
  margin = 1e-3 * reach + 1e-5 * (fabs (cx) + fabs (cy)) + 1e-6;
  *lo_x = cx - reach - margin;
  *lo_y = cy - reach - margin;
  *hi_x = cx + reach + margin;
  *hi_y = cy + reach + margin;
  return isfinite (*lo_x) && isfinite (*lo_y) && isfinite (*hi_x)
      && isfinite (*hi_y);
}

typedef struct
{
  double x0, y0, cell;
  uint32_t columns, rows;
} Grid;

static uint32_t
cell_of (double v, double v0, double cell, uint32_t n)
{
  double c = floor ((v - v0) / cell);

  if (!(c > 0.0))
    return 0;
  return c >= (double) n ? n - 1 : (uint32_t) c;
}

static int
compare_doubles (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

/* A grid over the squares' lower corners, cells about the median square's
 * size (or, for sparse boxes, the spacing of n boxes over the area), at
 * most CELLS_PER_BOX cells a box. FALSE when no square is finite. */
static int
grid_init (Grid * grid, const double *squares, const int *finite, uint32_t n,
    double *scratch)
{
  double lo_x = INFINITY, lo_y = INFINITY, hi_x = -INFINITY, hi_y = -INFINITY;
  double side, width, height;
  uint32_t i, m = 0;

  for (i = 0; i < n; i++) {
    const double *sq = squares + 4 * (size_t) i;

    if (!finite[i])
      continue;
    lo_x = sq[0] < lo_x ? sq[0] : lo_x;
    lo_y = sq[1] < lo_y ? sq[1] : lo_y;
    hi_x = sq[2] > hi_x ? sq[2] : hi_x;
    hi_y = sq[3] > hi_y ? sq[3] : hi_y;
    scratch[m++] = sq[2] - sq[0] > sq[3] - sq[1] ? sq[2] - sq[0] :
        sq[3] - sq[1];
  }
  if (m == 0)
    return 0;
  qsort (scratch, m, sizeof *scratch, compare_doubles);
  width = hi_x - lo_x;
  height = hi_y - lo_y;
  side = scratch[m / 2];
  if (!(side > sqrt (width * height / m)))
    side = sqrt (width * height / m);
  if (!(side > 0.0) || !isfinite (side))
    side = width > height ? width : height;
  if (!(side > 0.0) || !isfinite (side))
    side = 1.0;
  /* not more cells than CELLS_PER_BOX a box, nor MAX_GRID_SIDE a side */
  while (width / side + 1.0 > MAX_GRID_SIDE
      || height / side + 1.0 > MAX_GRID_SIDE
      || (width / side + 1.0) * (height / side + 1.0) >
      (double) CELLS_PER_BOX * n + 16.0)
    side *= 2.0;
  grid->x0 = lo_x;
  grid->y0 = lo_y;
  grid->cell = side;
  grid->columns = (uint32_t) (width / side) + 1;
  grid->rows = (uint32_t) (height / side) + 1;
  return 1;
}

typedef struct
{
  uint32_t item;
  int32_t next;
} CellEntry;

/* The greedy walk of nms.h's step 5 over @items (sorted), at most @limit
 * kept; the kept items' indices into @kept. */
static P3dcResult
walk (const P3dcNmsPairTest * test,
    const P3dcNmsItem * items, uint32_t n_items, uint32_t limit,
    uint32_t * kept, uint32_t * n_kept_out, uint64_t * pair_tests)
{
  double *squares = malloc ((size_t) n_items * 4 * sizeof *squares);
  double *scratch = malloc ((size_t) n_items * sizeof *scratch);
  int *finite = malloc ((size_t) n_items * sizeof *finite);
  uint32_t *stamp = malloc ((size_t) n_items * sizeof *stamp);
  uint32_t *everywhere = malloc ((size_t) n_items * sizeof *everywhere);
  int32_t *heads = NULL;
  CellEntry *entries = NULL;
  size_t n_entries = 0, entries_capacity = 0;
  uint32_t n_kept = 0, n_everywhere = 0, i, j;
  uint64_t tests = 0;
  P3dcResult result = P3DC_OK;
  Grid grid = { 0.0, 0.0, 1.0, 1, 1 };
  int have_grid;

  if (squares == NULL || scratch == NULL || finite == NULL || stamp == NULL
      || everywhere == NULL) {
    result = P3DC_ERROR_OUT_OF_MEMORY;
    goto done;
  }
  for (i = 0; i < n_items; i++) {
    double *sq = squares + 4 * (size_t) i;

    finite[i] = item_square (test, &items[i], &sq[0], &sq[1], &sq[2], &sq[3]);
    stamp[i] = UINT32_MAX;
  }
  have_grid = grid_init (&grid, squares, finite, n_items, scratch);
  if (have_grid) {
    heads = malloc ((size_t) grid.columns * grid.rows * sizeof *heads);
    if (heads == NULL) {
      result = P3DC_ERROR_OUT_OF_MEMORY;
      goto done;
    }
    for (i = 0; i < grid.columns * grid.rows; i++)
      heads[i] = -1;
  }

  /* a kept box is final as soon as it is kept, so the walk can stop at
   * the limit: later boxes never change the earlier decisions */
  for (j = 0; j < n_items && n_kept < limit; j++) {
    const double *sq = squares + 4 * (size_t) j;
    uint32_t c0 = 0, c1 = 0, r0 = 0, r1 = 0, c, r;
    int suppressed = 0, listed;

    if (finite[j] && have_grid) {
      c0 = cell_of (sq[0], grid.x0, grid.cell, grid.columns);
      c1 = cell_of (sq[2], grid.x0, grid.cell, grid.columns);
      r0 = cell_of (sq[1], grid.y0, grid.cell, grid.rows);
      r1 = cell_of (sq[3], grid.y0, grid.cell, grid.rows);
    }
    listed = finite[j] && have_grid
        && (uint64_t) (c1 - c0 + 1) * (r1 - r0 + 1) <= MAX_CELLS_PER_BOX;
    if (!listed || (uint64_t) (c1 - c0 + 1) * (r1 - r0 + 1) > n_kept) {
      /* a huge candidate: every kept box */
      for (i = 0; i < n_kept && !suppressed; i++, tests++)
        suppressed = p3dc_nms_item_suppresses (test, &items[kept[i]],
            &items[j]);
    } else {
      for (i = 0; i < n_everywhere && !suppressed; i++, tests++)
        suppressed = p3dc_nms_item_suppresses (test, &items[everywhere[i]],
            &items[j]);
      for (r = r0; r <= r1 && !suppressed; r++) {
        for (c = c0; c <= c1 && !suppressed; c++) {
          int32_t e;

          for (e = heads[(size_t) r * grid.columns + c]; e >= 0
              && !suppressed; e = entries[e].next) {
            uint32_t k = entries[e].item;

            /* a box listed in several of these cells is tested once */
            if (stamp[k] == j)
              continue;
            stamp[k] = j;
            tests++;
            suppressed = p3dc_nms_item_suppresses (test, &items[k], &items[j]);
          }
        }
      }
    }
    if (suppressed)
      continue;
    kept[n_kept++] = j;
    if (!listed) {
      everywhere[n_everywhere++] = j;
      continue;
    }
    for (r = r0; r <= r1; r++) {
      for (c = c0; c <= c1; c++) {
        size_t cell = (size_t) r * grid.columns + c;

        if (n_entries == entries_capacity) {
          size_t capacity = entries_capacity ? 2 * entries_capacity : 1024;
          CellEntry *grown = realloc (entries, capacity * sizeof *entries);

          if (grown == NULL) {
            result = P3DC_ERROR_OUT_OF_MEMORY;
            goto done;
          }
          entries = grown;
          entries_capacity = capacity;
        }
        entries[n_entries].item = j;
        entries[n_entries].next = heads[cell];
        heads[cell] = (int32_t) n_entries;
        n_entries++;
      }
    }
  }
  *n_kept_out = n_kept;

done:
  if (pair_tests != NULL)
    *pair_tests = tests;
  free (squares);
  free (scratch);
  free (finite);
  free (stamp);
  free (everywhere);
  free (heads);
  free (entries);
  return result;
}

P3dcResult
p3dc_nms_cpu (const P3dcNmsParams * params, const void *boxes,
    uint32_t n_boxes, void *out, uint32_t out_capacity, uint32_t * out_count,
    int32_t * kept_index)
{
  return p3dc_nms_cpu_counted (params, boxes, n_boxes, out, out_capacity,
      out_count, kept_index, NULL);
}

P3dcResult
p3dc_nms_cpu_counted (const P3dcNmsParams * params, const void *boxes,
    uint32_t n_boxes, void *out, uint32_t out_capacity, uint32_t * out_count,
    int32_t * kept_index, uint64_t * pair_tests)
{
  size_t record_size;
  SortEntry *entries = NULL;
  P3dcNmsItem *items = NULL;
  uint32_t *kept = NULL;
  uint32_t n_valid = 0, n_items, n_kept = 0, limit, i;
  P3dcNmsPairTest test;
  P3dcResult result;

  if (pair_tests != NULL)
    *pair_tests = 0;
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
    result = walk (&test, items, n_items, limit, kept, &n_kept, pair_tests);
    if (result != P3DC_OK) {
      free (entries);
      free (items);
      free (kept);
      return result;
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
