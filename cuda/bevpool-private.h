/* bevpool internals shared by the C reference and the CUDA files: the
 * projection of one frustum point (written once, so both paths compute the
 * same float64 values; the reference's cell rule, which the device follows
 * with a multiplication where it provably gives the same cell:
 * bevpool_geometry_stages.cuh), the run rule of the
 * summation order, the two geometry structs, and the device geometry's
 * constructor with a smaller run-sum buffer, which the tests use to reach
 * the pooling's overflow path. */
#ifndef P3DC_BEVPOOL_PRIVATE_H
#define P3DC_BEVPOOL_PRIVATE_H

#include "bevpool.h"
#include "hostdevice.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One camera's calibration reduced to what the projection needs. */
typedef struct
{
  double aug_rotation_inv[9];   /* inverse of img_aug's 3x3, row-major */
  double aug_translation[3];
  double ray_to_lidar[9];       /* camera_to_lidar's 3x3 x inverse (K) */
  double lidar_translation[3];
} P3dcBevCamera;

/* The frustum and the grid, as the projection sees them. */
typedef struct
{
  uint32_t image_width, image_height, feat_width, feat_height, depth_bins;
  double depth_min, depth_step;
  double lower[3], step[3];
  uint32_t n[3];                /* nx, ny, nz */
  uint32_t cells;               /* nx * ny * nz, also "dropped" */
  int floor_rule;
  int layout_xy;
} P3dcBevFrustumGrid;

/* linspace (0, size - 1, count)[i], exactly where it can be: the product is
 * an exact integer, so the last point is size - 1. */
static P3DC_HOST_DEVICE double
p3dc_bevpool_frustum_coord (uint32_t i, uint32_t count, uint32_t size)
{
  if (count < 2)
    return 0.0;
  return (double) i * (double) (size - 1) / (double) (count - 1);
}

/* BEVFusion's get_geometry for one point: subtract the augmentation's
 * translation, apply its inverse rotation, scale x and y by the depth, then
 * camera_to_lidar x inverse (K), then camera_to_lidar's translation.
 *
 * Split in two so that the device computes what a feature column (u, v)
 * shares once for all its depth bins: each row of the inverse rotation
 * sums its x and y terms first, a[0] * qx + a[1] * qy, before the depth
 * term is added (the left-to-right order of a[0] * qx + a[1] * qy +
 * a[2] * qz), so the split changes no rounding. */
typedef struct
{
  double xy[3];                 /* the x and y terms of each row */
} P3dcBevRay;

static P3DC_HOST_DEVICE void
p3dc_bevpool_column_ray (const P3dcBevFrustumGrid * grid,
    const P3dcBevCamera * cam, uint32_t u, uint32_t v, P3dcBevRay * ray)
{
  const double *a = cam->aug_rotation_inv;
  double xs = p3dc_bevpool_frustum_coord (u, grid->feat_width,
      grid->image_width);
  double ys = p3dc_bevpool_frustum_coord (v, grid->feat_height,
      grid->image_height);
  double qx = xs - cam->aug_translation[0];
  double qy = ys - cam->aug_translation[1];
  int i;

  for (i = 0; i < 3; i++)
    ray->xy[i] = a[3 * i] * qx + a[3 * i + 1] * qy;
}

static P3DC_HOST_DEVICE void
p3dc_bevpool_ray_point (const P3dcBevCamera * cam, const P3dcBevRay * ray,
    double ds, double lidar[3])
{
  const double *a = cam->aug_rotation_inv;
  const double *m = cam->ray_to_lidar;
  double qz = ds - cam->aug_translation[2];
  double rx = ray->xy[0] + a[2] * qz;
  double ry = ray->xy[1] + a[5] * qz;
  double rz = ray->xy[2] + a[8] * qz;
  double sx = rx * rz, sy = ry * rz;
  int i;

  for (i = 0; i < 3; i++)
    lidar[i] = m[3 * i] * sx + m[3 * i + 1] * sy + m[3 * i + 2] * rz
        + cam->lidar_translation[i];
}

/* The cell along one axis: 1 and *cell when inside, 0 when dropped (also
 * for NaN).  t is compared before it is converted, so no out-of-range
 * conversion happens; (int32_t) t truncates toward zero, so t in (-1, 0)
 * gives cell 0 under TRUNCATE. */
static P3DC_HOST_DEVICE int
p3dc_bevpool_axis_cell (double p, double lower, double step, uint32_t n,
    int floor_rule, uint32_t * cell)
{
  double t = (p - lower) / step;

  if (floor_rule ? !(t >= 0.0) : !(t > -1.0))
    return 0;
  if (!(t < (double) n))
    return 0;
  *cell = (uint32_t) (int32_t) t;
  return 1;
}

/* The cell of depth bin @d on the column @ray of @cam, or grid->cells
 * when the point falls outside the grid. */
static P3DC_HOST_DEVICE uint32_t
p3dc_bevpool_ray_cell (const P3dcBevFrustumGrid * grid,
    const P3dcBevCamera * cam, const P3dcBevRay * ray, uint32_t d)
{
  double ds = grid->depth_min + (double) d * grid->depth_step;
  double lidar[3];
  uint32_t x, y, z;

  p3dc_bevpool_ray_point (cam, ray, ds, lidar);
  if (!p3dc_bevpool_axis_cell (lidar[0], grid->lower[0], grid->step[0],
          grid->n[0], grid->floor_rule, &x)
      || !p3dc_bevpool_axis_cell (lidar[1], grid->lower[1], grid->step[1],
          grid->n[1], grid->floor_rule, &y)
      || !p3dc_bevpool_axis_cell (lidar[2], grid->lower[2], grid->step[2],
          grid->n[2], grid->floor_rule, &z))
    return grid->cells;
  if (grid->layout_xy)
    return (z * grid->n[0] + x) * grid->n[1] + y;
  return (z * grid->n[1] + y) * grid->n[0] + x;
}

/* The cell of frustum point (u, v, d) of @cam (as above). */
static P3DC_HOST_DEVICE uint32_t
p3dc_bevpool_point_cell (const P3dcBevFrustumGrid * grid,
    const P3dcBevCamera * cam, uint32_t u, uint32_t v, uint32_t d)
{
  P3dcBevRay ray;

  p3dc_bevpool_column_ray (grid, cam, u, v, &ray);
  return p3dc_bevpool_ray_cell (grid, cam, &ray, d);
}

/* Whether frustum point @p continues the run of @previous, the point
 * before it in its cell's list (bevpool.h, "Summation order"): the same
 * camera, feature column u and depth bin, and the next feature row.  A
 * point's index is ((camera * depth_bins + d) * feat_height + v) *
 * feat_width + u, so the next row is feat_width further on, unless
 * @previous is in the last row (then that index is the next depth bin's
 * first row). */
static P3DC_HOST_DEVICE int
p3dc_bevpool_run_continues (const P3dcBevFrustumGrid * grid,
    uint32_t previous, uint32_t p)
{
  return p == previous + grid->feat_width
      && (previous / grid->feat_width) % grid->feat_height
      != grid->feat_height - 1;
}

/* Host-side reductions of params and calibration, used by both paths. */
void p3dc_bevpool_frustum_grid_init (const P3dcBevPoolParams * params,
    P3dcBevFrustumGrid * grid);
P3dcResult p3dc_bevpool_camera_derive (const P3dcCameraCalib * calib,
    P3dcBevCamera * camera);

struct _P3dBevGeometry
{
  P3dcBevPoolParams params;
  P3dcBevFrustumGrid grid;
  uint32_t frustum_points;
  uint32_t cells;
  int computed;
  uint32_t kept;
  uint32_t *points;             /* frustum_points (kept used) */
  uint32_t *cell_start;         /* cells + 1 */
  uint32_t *cursor;             /* cells: scratch of the counting sort */
  uint32_t *point_cell;         /* frustum_points: scratch */
};

struct _P3dBevGeometryCuda
{
  P3dcBevPoolParams params;
  P3dcBevFrustumGrid grid;
  uint32_t frustum_points;
  uint32_t cells;
  uint32_t columns;             /* cameras x feat_width */
  uint32_t column_points;       /* depth_bins x feat_height: runs at most */
  uint32_t bins_padded;         /* depth_bins rounded up to a multiple of 4 */
  uint32_t channels_padded;     /* channels rounded up to a multiple of 4 */
  /* Runs whose sums the pooling keeps in @sums; the sums of later slots
   * (cells at the end of the plane) are computed where they are added. */
  uint32_t sum_capacity;
  int computed;
  /* device memory.  A run's id is column * column_points + its index in
   * the column (runs in (d, v) order); its slot is its position in the
   * cell-ordered list, cells in plane order and a cell's runs by id. */
  uint32_t *column_runs;        /* columns: runs per column */
  uint32_t *run_cell;           /* ids: the run's cell */
  uint32_t *run_span;           /* ids x 2: first point, v0 << 16 | rows */
  uint32_t *run_slot;           /* ids */
  uint32_t *cell_count;         /* cells + 1: runs per cell, 0 at the end */
  uint32_t *cell_start;         /* cells + 1: first slot per cell */
  uint32_t *cursor;             /* cells + 1, after cell_count: runs placed */
  uint32_t *placed;             /* frustum_points: ids by cell, unordered */
  uint32_t *slot_run;           /* frustum_points: ids by slot */
  /* The pooling's workspace: every frame's depth values column by column,
   * columns x feat_height x (depth_bins rounded up to 4) floats. */
  float *column_depth;
  float *sums;                  /* sum_capacity x channels_padded */
  void *temp;                   /* CUB's temporary storage */
  size_t temp_bytes;
  /* nonzero when cell_count and cursor hold zeros once the work queued so
   * far has run (the last update launched from the geometry's graph ends
   * with a rank step that clears them); 0 on creation and after a failed
   * update, when the next update clears them on its stream */
  int counts_clear;
  /* nonzero when the device takes programmatic dependent launches */
  int can_chain;
  /* the update's launches as one CUDA graph (bevpool_geometry.cu) */
  struct P3dcBevGeometryGraph *update_graph;
  /* the pooling's, one graph for each pair of formats (bevpool.cu) */
  struct P3dcBevPoolGraphs *pool_graphs;
};

/* The pooling graphs of @geometry (whose buffers they hold), built once
 * with it; a cudaError_t. */
int p3dc_bevpool_pool_graphs_new (const P3dcBevGeometryCuda * geometry,
    struct P3dcBevPoolGraphs **graphs);
void p3dc_bevpool_pool_graphs_free (struct P3dcBevPoolGraphs *graphs);

/* The shared memory (bytes) a pooling block of @geometry takes, for
 * p3dc_bevpool_geometry_cuda_new_capacity() to check against the device's
 * limit (bevpool.cu). */
size_t p3dc_bevpool_pool_smem (const P3dcBevGeometryCuda * geometry);

/* p3dc_bevpool_geometry_cuda_new() with room for @sum_capacity run sums
 * (0 and up): the tests reach the pooling's overflow path with it.  The
 * default room: two runs per depth bin of every column and one per cell (a
 * nuScenes rig has about 138,000 runs in 129,600 cells), at most one per
 * frustum point. */
P3dcResult p3dc_bevpool_geometry_cuda_new_capacity (const P3dcBevPoolParams *
    params, uint32_t sum_capacity, P3dcBevGeometryCuda ** geometry);

#ifdef __cplusplus
}
#endif

#endif /* P3DC_BEVPOOL_PRIVATE_H */
