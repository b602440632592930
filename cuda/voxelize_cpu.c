/* Reference for voxelize.cu, and the parameter checks both paths share.
 *
 * One pass over the points in input order, as mmcv's deterministic hard
 * voxelization: a hash table maps each cell seen so far to its voxel (or to
 * "dropped" when it came after max_voxels others), so a voxel's number is the
 * order of its first point and its points are appended in input order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "voxelize.h"

/* A cell that came after max_voxels others: its points are dropped. */
#define VOXEL_DROPPED UINT32_MAX
#define CELL_EMPTY UINT32_MAX

static P3dcResult
check_axis (double size, double min, double max, uint32_t * cells)
{
  double extent, rounded;

  if (!isfinite (size) || !isfinite (min) || !isfinite (max))
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (!(size > 0.0) || !(max > min))
    return P3DC_ERROR_INVALID_ARGUMENT;
  /* The kernels divide by the float size and subtract the float minimum. */
  if (!((float) size > 0.0f) || !isfinite ((float) size)
      || !isfinite ((float) min))
    return P3DC_ERROR_INVALID_ARGUMENT;
  extent = max - min;
  if (!isfinite (extent))
    return P3DC_ERROR_TOO_LARGE;
  rounded = round (extent / size);
  if (rounded < 1.0)
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (rounded > (double) P3DC_VOXELIZE_MAX_GRID_AXIS)
    return P3DC_ERROR_TOO_LARGE;
  *cells = (uint32_t) rounded;
  return P3DC_OK;
}

static P3dcResult
check_sizes (const uint32_t grid[3], uint32_t channels, uint32_t max_points,
    uint32_t max_voxels)
{
  uint64_t cells, tensor_bytes;
  int i;

  if (channels < 3 || max_points == 0 || max_voxels == 0)
    return P3DC_ERROR_INVALID_ARGUMENT;
  for (i = 0; i < 3; i++) {
    if (grid[i] == 0)
      return P3DC_ERROR_INVALID_ARGUMENT;
    if (grid[i] > P3DC_VOXELIZE_MAX_GRID_AXIS)
      return P3DC_ERROR_TOO_LARGE;
  }
  /* Each axis is at most 2^24, so the product of two fits in 64 bits. */
  cells = (uint64_t) grid[0] * grid[1];
  if (cells > P3DC_VOXELIZE_MAX_GRID_CELLS
      || cells * grid[2] > P3DC_VOXELIZE_MAX_GRID_CELLS)
    return P3DC_ERROR_TOO_LARGE;
  if (channels > P3DC_VOXELIZE_MAX_CHANNELS
      || max_points > P3DC_VOXELIZE_MAX_POINTS_PER_VOXEL
      || max_voxels > P3DC_VOXELIZE_MAX_VOXELS)
    return P3DC_ERROR_TOO_LARGE;
  tensor_bytes = (uint64_t) max_voxels *max_points * channels * sizeof (float);
  if (tensor_bytes > P3DC_VOXELIZE_MAX_TENSOR_BYTES
      || tensor_bytes > (uint64_t) SIZE_MAX)
    return P3DC_ERROR_TOO_LARGE;
  return P3DC_OK;
}

P3dcResult
p3dc_voxelize_params_init (P3dcVoxelizeParams * params,
    const double voxel_size[3], const double range[6], uint32_t channels,
    uint32_t max_points, uint32_t max_voxels)
{
  P3dcVoxelizeParams parsed;
  P3dcResult result;
  int i;

  if (params == NULL || voxel_size == NULL || range == NULL)
    return P3DC_ERROR_INVALID_ARGUMENT;
  memset (&parsed, 0, sizeof (parsed));
  for (i = 0; i < 3; i++) {
    result = check_axis (voxel_size[i], range[i], range[3 + i],
        &parsed.grid[i]);
    if (result != P3DC_OK)
      return result;
    parsed.voxel_size[i] = (float) voxel_size[i];
    parsed.range_min[i] = (float) range[i];
  }
  result = check_sizes (parsed.grid, channels, max_points, max_voxels);
  if (result != P3DC_OK)
    return result;
  parsed.channels = channels;
  parsed.max_points = max_points;
  parsed.max_voxels = max_voxels;
  *params = parsed;
  return P3DC_OK;
}

P3dcResult
p3dc_voxelize_params_check (const P3dcVoxelizeParams * params)
{
  int i;

  if (params == NULL)
    return P3DC_ERROR_INVALID_ARGUMENT;
  for (i = 0; i < 3; i++) {
    if (!p3dc_voxelize_is_finite (params->voxel_size[i])
        || !(params->voxel_size[i] > 0.0f)
        || !p3dc_voxelize_is_finite (params->range_min[i]))
      return P3DC_ERROR_INVALID_ARGUMENT;
  }
  return check_sizes (params->grid, params->channels, params->max_points,
      params->max_voxels);
}

static uint32_t
saturate_u32 (size_t value)
{
  return value > UINT32_MAX ? UINT32_MAX : (uint32_t) value;
}

static void
clear_output (const P3dcVoxelizeParams * params, const P3dcVoxelizeOutput * out)
{
  memset (out->voxels, 0, (size_t) params->max_voxels * params->max_points
      * params->channels * sizeof (float));
  memset (out->num_points, 0, (size_t) params->max_voxels * sizeof (uint32_t));
  memset (out->coords, 0, (size_t) params->max_voxels * 4 * sizeof (int32_t));
  *out->count = 0;
}

/* Open addressing with linear probing, at most half full: the table holds
 * at most one entry per distinct cell, and there are no more of those than
 * points or cells. */
typedef struct
{
  uint32_t *cells;
  uint32_t *voxels;
  uint32_t mask;
  int shift;
} CellTable;

static int
cell_table_init (CellTable * table, size_t n_points, uint64_t grid_cells)
{
  uint64_t wanted = n_points < grid_cells ? n_points : grid_cells;
  uint64_t capacity = 16;
  int bits = 4;

  while (capacity < 2 * wanted) {
    capacity *= 2;
    bits++;
  }
  if (capacity > SIZE_MAX / sizeof (uint32_t))
    return 0;
  table->cells = malloc ((size_t) capacity * sizeof (uint32_t));
  table->voxels = malloc ((size_t) capacity * sizeof (uint32_t));
  if (table->cells == NULL || table->voxels == NULL) {
    free (table->cells);
    free (table->voxels);
    return 0;
  }
  memset (table->cells, 0xff, (size_t) capacity * sizeof (uint32_t));
  table->mask = (uint32_t) (capacity - 1);
  table->shift = 32 - bits;
  return 1;
}

/* The slot of @cell, claimed for it when it was not there yet (*is_new). */
static uint32_t
cell_table_find (CellTable * table, uint32_t cell, int *is_new)
{
  /* Fibonacci hashing spreads neighbouring cells over the table. */
  uint32_t slot = (cell * 2654435761u) >> table->shift;

  for (;;) {
    if (table->cells[slot] == cell) {
      *is_new = 0;
      return slot;
    }
    if (table->cells[slot] == CELL_EMPTY) {
      table->cells[slot] = cell;
      *is_new = 1;
      return slot;
    }
    slot = (slot + 1) & table->mask;
  }
}

P3dcResult
p3dc_voxelize_cpu (const P3dcVoxelizeParams * params, const float *points,
    size_t n_points, const P3dcVoxelizeOutput * out)
{
  const size_t row_floats = (size_t) params->max_points * params->channels;
  size_t nonfinite = 0, out_of_range = 0, over_points = 0, over_voxels = 0;
  size_t dropped_voxels = 0;
  uint32_t voxel_count = 0;
  CellTable table;
  size_t i;

  if (p3dc_voxelize_params_check (params) != P3DC_OK || out == NULL
      || out->voxels == NULL || out->num_points == NULL
      || out->coords == NULL || out->count == NULL
      || (points == NULL && n_points > 0))
    return P3DC_ERROR_INVALID_ARGUMENT;
  clear_output (params, out);
  if (out->stats)
    memset (out->stats, 0, sizeof (*out->stats));
  if (!cell_table_init (&table, n_points,
          (uint64_t) params->grid[0] * params->grid[1] * params->grid[2]))
    return P3DC_ERROR_OUT_OF_MEMORY;

  for (i = 0; i < n_points; i++) {
    const float *point = points + i * params->channels;
    uint32_t cell, slot, voxel;
    int kind, is_new;

    kind = p3dc_voxelize_point_cell (params, point[0], point[1], point[2],
        &cell);
    if (kind == P3DC_VOXELIZE_POINT_NONFINITE) {
      nonfinite++;
      continue;
    }
    if (kind == P3DC_VOXELIZE_POINT_OUT_OF_RANGE) {
      out_of_range++;
      continue;
    }
    slot = cell_table_find (&table, cell, &is_new);
    if (is_new) {
      if (voxel_count < params->max_voxels) {
        table.voxels[slot] = voxel_count;
        p3dc_voxelize_cell_coords (params, cell, out->coords + 4 *
            (size_t) voxel_count);
        voxel_count++;
      } else {
        table.voxels[slot] = VOXEL_DROPPED;
        dropped_voxels++;
      }
    }
    voxel = table.voxels[slot];
    if (voxel == VOXEL_DROPPED) {
      over_voxels++;
    } else if (out->num_points[voxel] < params->max_points) {
      /* memcpy keeps every bit, NaN payloads included. */
      memcpy (out->voxels + voxel * row_floats
          + (size_t) out->num_points[voxel] * params->channels, point,
          params->channels * sizeof (float));
      out->num_points[voxel]++;
    } else {
      over_points++;
    }
  }
  free (table.cells);
  free (table.voxels);

  *out->count = voxel_count;
  if (out->stats) {
    out->stats->points_in = saturate_u32 (n_points);
    out->stats->points_nonfinite = saturate_u32 (nonfinite);
    out->stats->points_out_of_range = saturate_u32 (out_of_range);
    out->stats->points_over_max_points = saturate_u32 (over_points);
    out->stats->points_over_max_voxels = saturate_u32 (over_voxels);
    out->stats->voxels = voxel_count;
    out->stats->voxels_dropped = saturate_u32 (dropped_voxels);
  }
  return P3DC_OK;
}
