/* bevpool parameters, calibration and the reference geometry: every
 * frustum point projected in float64 (bevpool-private.h, shared with the
 * kernel) and the kept points sorted by cell with a counting sort that
 * places them in (camera, u, d, v) order within a cell. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bevpool-private.h"

/* Each tensor, and the cell count plus one (CUB counts in int), stays
 * below 2^31 elements, so 32-bit offsets never overflow. */
#define SIZE_LIMIT ((uint64_t) 1 << 31)

static int
bound_is_valid (const double bound[3])
{
  return isfinite (bound[0]) && isfinite (bound[1]) && isfinite (bound[2])
      && bound[2] > 0.0 && bound[1] > bound[0];
}

/* round ((max - min) / step) cells, 0 when out of range. */
static uint64_t
axis_cells (const double bound[3])
{
  double n = floor ((bound[1] - bound[0]) / bound[2] + 0.5);

  if (!(n >= 1.0))
    return 0;
  return n < (double) SIZE_LIMIT ? (uint64_t) n : SIZE_LIMIT;
}

P3dcResult
p3dc_bevpool_params_init (P3dcBevPoolParams * params)
{
  uint64_t pixels, bins, nx, ny, nz, cells;
  double span;

  if (params == NULL)
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (params->cameras == 0 || params->channels == 0
      || params->image_width == 0 || params->image_height == 0
      || params->feat_width == 0 || params->feat_height == 0)
    return P3DC_ERROR_INVALID_ARGUMENT;
  if ((params->rounding != P3DC_BEV_ROUND_TRUNCATE
          && params->rounding != P3DC_BEV_ROUND_FLOOR)
      || (params->layout != P3DC_BEV_LAYOUT_YX
          && params->layout != P3DC_BEV_LAYOUT_XY))
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (!bound_is_valid (params->dbound) || !bound_is_valid (params->xbound)
      || !bound_is_valid (params->ybound) || !bound_is_valid (params->zbound))
    return P3DC_ERROR_INVALID_ARGUMENT;

  /* As torch.arange: ceil ((end - start) / step) values. */
  span = ceil ((params->dbound[1] - params->dbound[0]) / params->dbound[2]);
  if (!(span >= 1.0))
    return P3DC_ERROR_INVALID_ARGUMENT;
  if (span >= (double) SIZE_LIMIT)
    return P3DC_ERROR_TOO_LARGE;
  bins = (uint64_t) span;
  nx = axis_cells (params->xbound);
  ny = axis_cells (params->ybound);
  nz = axis_cells (params->zbound);
  if (nx == 0 || ny == 0 || nz == 0)
    return P3DC_ERROR_INVALID_ARGUMENT;

  /* Every product below multiplies two factors of at most 2^32 after the
   * checks before it, so none overflows 64 bits. */
  pixels = (uint64_t) params->feat_width * params->feat_height;
  if (nx >= SIZE_LIMIT || ny >= SIZE_LIMIT || nz >= SIZE_LIMIT
      || nx * ny >= SIZE_LIMIT || pixels >= SIZE_LIMIT
      || params->cameras * pixels >= SIZE_LIMIT)
    return P3DC_ERROR_TOO_LARGE;
  cells = nx * ny * nz;
  if (cells >= SIZE_LIMIT - 1 || cells * params->channels >= SIZE_LIMIT
      || params->cameras * pixels * bins >= SIZE_LIMIT
      || params->cameras * pixels * params->channels >= SIZE_LIMIT)
    return P3DC_ERROR_TOO_LARGE;
  params->depth_bins = (uint32_t) bins;

  params->nx = (uint32_t) nx;
  params->ny = (uint32_t) ny;
  params->nz = (uint32_t) nz;
  params->out_channels = (uint32_t) (nz * params->channels);
  return P3DC_OK;
}

int
p3dc_bevpool_cuda_column_fits (const P3dcBevPoolParams * params)
{
  return (uint64_t) params->depth_bins * params->feat_height <=
      P3DC_BEVPOOL_CUDA_COLUMN_POINTS
      && params->depth_bins <= P3DC_BEVPOOL_CUDA_COLUMN_SIDE
      && params->feat_height <= P3DC_BEVPOOL_CUDA_COLUMN_SIDE;
}

size_t
p3dc_bevpool_features_size (const P3dcBevPoolParams * params)
{
  return (size_t) params->cameras * params->feat_height * params->feat_width
      * params->channels;
}

size_t
p3dc_bevpool_depth_size (const P3dcBevPoolParams * params)
{
  return (size_t) params->cameras * params->depth_bins * params->feat_height
      * params->feat_width;
}

size_t
p3dc_bevpool_output_size (const P3dcBevPoolParams * params)
{
  return (size_t) params->out_channels * params->ny * params->nx;
}

/* The inverse of the 3x3 block at the top left of a row-major 4x4 matrix;
 * 0 when it is singular or not finite.  The determinant is compared with
 * the product of the row norms (Hadamard's bound), so the test does not
 * depend on the matrix's scale. */
static int
invert_3x3 (const double *m4, double inv[9])
{
  double a = m4[0], b = m4[1], c = m4[2];
  double d = m4[4], e = m4[5], f = m4[6];
  double g = m4[8], h = m4[9], i = m4[10];
  double co0 = e * i - f * h, co1 = f * g - d * i, co2 = d * h - e * g;
  double det = a * co0 + b * co1 + c * co2;
  double scale = sqrt (a * a + b * b + c * c) * sqrt (d * d + e * e + f * f)
      * sqrt (g * g + h * h + i * i);
  int k;

  if (!isfinite (det) || !(fabs (det) > 1e-12 * scale))
    return 0;
  inv[0] = co0 / det;
  inv[1] = (c * h - b * i) / det;
  inv[2] = (b * f - c * e) / det;
  inv[3] = co1 / det;
  inv[4] = (a * i - c * g) / det;
  inv[5] = (c * d - a * f) / det;
  inv[6] = co2 / det;
  inv[7] = (b * g - a * h) / det;
  inv[8] = (a * e - b * d) / det;
  for (k = 0; k < 9; k++)
    if (!isfinite (inv[k]))
      return 0;
  return 1;
}

P3dcResult
p3dc_bevpool_camera_derive (const P3dcCameraCalib * calib,
    P3dcBevCamera * camera)
{
  double k_inv[9];
  int row, col;

  for (row = 0; row < 3; row++) {
    for (col = 0; col < 4; col++) {
      if (!isfinite (calib->camera_to_lidar[row * 4 + col])
          || !isfinite (calib->img_aug[row * 4 + col]))
        return P3DC_ERROR_INVALID_ARGUMENT;
    }
  }
  if (!invert_3x3 (calib->intrinsics, k_inv)
      || !invert_3x3 (calib->img_aug, camera->aug_rotation_inv))
    return P3DC_ERROR_INVALID_ARGUMENT;
  for (row = 0; row < 3; row++) {
    const double *r = calib->camera_to_lidar + row * 4;

    camera->aug_translation[row] = calib->img_aug[row * 4 + 3];
    camera->lidar_translation[row] = r[3];
    for (col = 0; col < 3; col++)
      camera->ray_to_lidar[row * 3 + col] = r[0] * k_inv[col]
          + r[1] * k_inv[3 + col] + r[2] * k_inv[6 + col];
  }
  return P3DC_OK;
}

P3dcResult
p3dc_bevpool_calib_check (const P3dcBevPoolParams * params,
    const P3dcCameraCalib * calib)
{
  P3dcBevCamera camera;
  uint32_t i;

  if (params == NULL || calib == NULL)
    return P3DC_ERROR_INVALID_ARGUMENT;
  for (i = 0; i < params->cameras; i++) {
    P3dcResult result = p3dc_bevpool_camera_derive (&calib[i], &camera);

    if (result != P3DC_OK)
      return result;
  }
  return P3DC_OK;
}

void
p3dc_bevpool_frustum_grid_init (const P3dcBevPoolParams * params,
    P3dcBevFrustumGrid * grid)
{
  const double *bounds[3] = { params->xbound, params->ybound, params->zbound };
  int axis;

  memset (grid, 0, sizeof (*grid));
  grid->image_width = params->image_width;
  grid->image_height = params->image_height;
  grid->feat_width = params->feat_width;
  grid->feat_height = params->feat_height;
  grid->depth_bins = params->depth_bins;
  grid->depth_min = params->dbound[0];
  grid->depth_step = params->dbound[2];
  for (axis = 0; axis < 3; axis++) {
    grid->lower[axis] = bounds[axis][0];
    grid->step[axis] = bounds[axis][2];
  }
  grid->n[0] = params->nx;
  grid->n[1] = params->ny;
  grid->n[2] = params->nz;
  grid->cells = params->nx * params->ny * params->nz;
  grid->floor_rule = params->rounding == P3DC_BEV_ROUND_FLOOR;
  grid->layout_xy = params->layout == P3DC_BEV_LAYOUT_XY;
}

P3dcResult
p3dc_bevpool_geometry_new (const P3dcBevPoolParams * params,
    P3dcBevGeometry ** geometry)
{
  P3dcBevGeometry *self;
  P3dcResult result;

  if (params == NULL || geometry == NULL)
    return P3DC_ERROR_INVALID_ARGUMENT;
  *geometry = NULL;
  self = calloc (1, sizeof (*self));
  if (self == NULL)
    return P3DC_ERROR_OUT_OF_MEMORY;
  self->params = *params;
  if ((result = p3dc_bevpool_params_init (&self->params)) != P3DC_OK) {
    free (self);
    return result;
  }
  p3dc_bevpool_frustum_grid_init (&self->params, &self->grid);
  self->frustum_points = (uint32_t) p3dc_bevpool_depth_size (&self->params);
  self->cells = self->params.nx * self->params.ny * self->params.nz;
  self->points = malloc ((size_t) self->frustum_points * sizeof (uint32_t));
  self->point_cell = malloc ((size_t) self->frustum_points * sizeof (uint32_t));
  self->cell_start = malloc (((size_t) self->cells + 1) * sizeof (uint32_t));
  self->cursor = malloc ((size_t) self->cells * sizeof (uint32_t));
  if (!self->points || !self->point_cell || !self->cell_start || !self->cursor) {
    p3dc_bevpool_geometry_free (self);
    return P3DC_ERROR_OUT_OF_MEMORY;
  }
  *geometry = self;
  return P3DC_OK;
}

void
p3dc_bevpool_geometry_free (P3dcBevGeometry * geometry)
{
  if (geometry == NULL)
    return;
  free (geometry->points);
  free (geometry->point_cell);
  free (geometry->cell_start);
  free (geometry->cursor);
  free (geometry);
}

P3dcResult
p3dc_bevpool_geometry_compute_cpu (P3dcBevGeometry * geometry,
    const P3dcCameraCalib * calib)
{
  const P3dcBevPoolParams *params;
  const P3dcBevFrustumGrid *grid;
  uint32_t camera, d, u, v, p, k, running;
  P3dcResult result;

  if (geometry == NULL || calib == NULL)
    return P3DC_ERROR_INVALID_ARGUMENT;
  params = &geometry->params;
  grid = &geometry->grid;
  geometry->computed = 0;
  if ((result = p3dc_bevpool_calib_check (params, calib)) != P3DC_OK)
    return result;

  /* Count the points of every cell while projecting them. */
  memset (geometry->cell_start, 0,
      ((size_t) geometry->cells + 1) * sizeof (uint32_t));
  p = 0;
  for (camera = 0; camera < params->cameras; camera++) {
    P3dcBevCamera cam;

    p3dc_bevpool_camera_derive (&calib[camera], &cam);
    for (d = 0; d < params->depth_bins; d++) {
      for (v = 0; v < params->feat_height; v++) {
        for (u = 0; u < params->feat_width; u++, p++) {
          uint32_t cell = p3dc_bevpool_point_cell (grid, &cam, u, v, d);

          geometry->point_cell[p] = cell;
          if (cell < geometry->cells)
            geometry->cell_start[cell]++;
        }
      }
    }
  }

  /* Counts to starts, then place every kept point, visiting them in
   * (camera, u, d, v) order: the order bevpool.h defines within a cell. */
  running = 0;
  for (k = 0; k <= geometry->cells; k++) {
    uint32_t count = geometry->cell_start[k];

    geometry->cell_start[k] = running;
    running += count;
  }
  memcpy (geometry->cursor, geometry->cell_start,
      (size_t) geometry->cells * sizeof (uint32_t));
  for (camera = 0; camera < params->cameras; camera++) {
    for (u = 0; u < params->feat_width; u++) {
      for (d = 0; d < params->depth_bins; d++) {
        for (v = 0; v < params->feat_height; v++) {
          uint32_t cell;

          p = ((camera * params->depth_bins + d) * params->feat_height + v)
              * params->feat_width + u;
          cell = geometry->point_cell[p];
          if (cell < geometry->cells)
            geometry->points[geometry->cursor[cell]++] = p;
        }
      }
    }
  }
  geometry->kept = geometry->cell_start[geometry->cells];
  geometry->computed = 1;
  return P3DC_OK;
}

uint32_t
p3dc_bevpool_geometry_kept (const P3dcBevGeometry * geometry)
{
  return geometry != NULL && geometry->computed ? geometry->kept : 0;
}

const uint32_t *
p3dc_bevpool_geometry_points (const P3dcBevGeometry * geometry)
{
  return geometry != NULL && geometry->computed ? geometry->points : NULL;
}

const uint32_t *
p3dc_bevpool_geometry_cell_start (const P3dcBevGeometry * geometry)
{
  return geometry != NULL && geometry->computed ? geometry->cell_start : NULL;
}

P3dcResult
p3dc_bevpool_geometry_stats (const P3dcBevGeometry * geometry,
    P3dcBevGeometryStats * stats)
{
  uint32_t k;

  if (geometry == NULL || stats == NULL || !geometry->computed)
    return P3DC_ERROR_INVALID_ARGUMENT;
  memset (stats, 0, sizeof (*stats));
  stats->frustum_points = geometry->frustum_points;
  stats->kept_points = geometry->kept;
  stats->cells = geometry->cells;
  for (k = 0; k < geometry->cells; k++) {
    uint32_t count = geometry->cell_start[k + 1] - geometry->cell_start[k];

    if (count > 0)
      stats->nonempty_cells++;
    if (count > stats->largest_cell)
      stats->largest_cell = count;
  }
  return P3DC_OK;
}
