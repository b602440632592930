/* bevpool internals shared by the C reference and the CUDA files: the
 * projection of one frustum point (written once, so both paths compute the
 * same float64 values and hence the same cells), the column key and chunk
 * rule of the summation order, the packed point entry of the device
 * geometry, the two geometry structs, and the constructor with another
 * pooling schedule, which the tests use to reach the multi-pass paths and
 * bench_bevpool to time other schedules. */
#ifndef P3DC_BEVPOOL_PRIVATE_H
#define P3DC_BEVPOOL_PRIVATE_H

#include "bevpool.h"
#include "hostdevice.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The device sorts cells by a key that orders the output plane in blocks
 * of 16 x 16 cells (row-major within a block, blocks row-major, then z).
 * The pooling works on runs of consecutive keys inside one block (a
 * "unit"), so a unit is a compact patch of the plane: the rays that cross
 * it share feature rows, which the pooling reads once per unit (on
 * nuScenes a 16 x 16 block reads each of its feature rows for ~7 points). */
#define P3DC_BEVPOOL_BLOCK_SIDE 16
#define P3DC_BEVPOOL_TILE_CELLS (P3DC_BEVPOOL_BLOCK_SIDE * P3DC_BEVPOOL_BLOCK_SIDE)
/* Column keys per window, the rows one pooling batch holds. */
#define P3DC_BEVPOOL_WINDOW (1u << P3DC_BEVPOOL_WINDOW_BITS)

/* The output plane as rows x cols (ny x nx for YX, nx x ny for XY), so a
 * cell is (z * rows + row) * cols + col in either layout, and its blocks. */
typedef struct
{
  uint32_t rows, cols;
  uint32_t block_rows, block_cols;      /* blocks down and across */
  uint32_t nz;
} P3dcBevBlocking;

/* The sort key of an output cell. */
static P3DC_HOST_DEVICE uint32_t
p3dc_bevpool_block_key (const P3dcBevBlocking * b, uint32_t cell)
{
  const uint32_t side = P3DC_BEVPOOL_BLOCK_SIDE;
  uint32_t plane = b->rows * b->cols;
  uint32_t z = cell / plane, rest = cell - z * plane;
  uint32_t row = rest / b->cols, col = rest - row * b->cols;

  return ((z * b->block_rows + row / side) * b->block_cols + col / side)
      * P3DC_BEVPOOL_TILE_CELLS + (row % side) * side + col % side;
}

/* The output cell of a sort key, or UINT32_MAX for a key past the plane's
 * edge (blocks there are padded). */
static P3DC_HOST_DEVICE uint32_t
p3dc_bevpool_block_cell (const P3dcBevBlocking * b, uint32_t key)
{
  const uint32_t side = P3DC_BEVPOOL_BLOCK_SIDE;
  uint32_t block = key / P3DC_BEVPOOL_TILE_CELLS;
  uint32_t local = key - block * P3DC_BEVPOOL_TILE_CELLS;
  uint32_t per_z = b->block_rows * b->block_cols;
  uint32_t z = block / per_z, rest = block - z * per_z;
  uint32_t row = rest / b->block_cols * side + local / side;
  uint32_t col = rest % b->block_cols * side + local % side;

  if (row >= b->rows || col >= b->cols)
    return UINT32_MAX;
  return (z * b->rows + row) * b->cols + col;
}

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
  /* The column key (bevpool.h): v in the low v_bits, u above it, the
   * camera above both; col_bits in all (at most 31). */
  uint32_t u_bits, v_bits, col_bits;
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

/* The column key of (camera, u, v): see bevpool.h. */
static P3DC_HOST_DEVICE uint32_t
p3dc_bevpool_column_key (const P3dcBevFrustumGrid * grid, uint32_t camera,
    uint32_t u, uint32_t v)
{
  return (((camera << grid->u_bits) | u) << grid->v_bits) | v;
}

/* Whether the point at @position of its cell's sorted points starts a
 * chunk, given its column key and the previous point's (not read when
 * @position is 0). */
static P3DC_HOST_DEVICE int
p3dc_bevpool_chunk_starts (uint32_t position, uint32_t previous_key,
    uint32_t key)
{
  return position % P3DC_BEVPOOL_CHUNK == 0
      || (previous_key >> P3DC_BEVPOOL_WINDOW_BITS)
      != (key >> P3DC_BEVPOOL_WINDOW_BITS);
}

/* The device geometry stores each kept point as one 32-bit word: its
 * column key in the low col_bits bits and its depth bin above them
 * (params_init checks that both fit). */
static P3DC_HOST_DEVICE uint32_t
p3dc_bevpool_entry_pack (uint32_t column_key, uint32_t d, uint32_t col_bits)
{
  return column_key | (d << col_bits);
}

/* The frustum index (= depth offset) of a packed entry. */
static P3DC_HOST_DEVICE uint32_t
p3dc_bevpool_entry_frustum_index (const P3dcBevFrustumGrid * grid,
    uint32_t entry)
{
  uint32_t key = entry & ((1u << grid->col_bits) - 1u);
  uint32_t d = entry >> grid->col_bits;
  uint32_t v = key & ((1u << grid->v_bits) - 1u);
  uint32_t u = (key >> grid->v_bits) & ((1u << grid->u_bits) - 1u);
  uint32_t camera = key >> (grid->u_bits + grid->v_bits);

  return ((camera * grid->depth_bins + d) * grid->feat_height + v)
      * grid->feat_width + u;
}

/* The column key of frustum index @p (the C reference's way back). */
static P3DC_HOST_DEVICE uint32_t
p3dc_bevpool_point_column_key (const P3dcBevFrustumGrid * grid, uint32_t p)
{
  uint32_t pixels = grid->feat_width * grid->feat_height;
  uint32_t camera = p / (grid->depth_bins * pixels);
  uint32_t pixel = p % pixels;

  return p3dc_bevpool_column_key (grid, camera, pixel % grid->feat_width,
      pixel / grid->feat_width);
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

/* How the device pools, decided when the geometry is made: a unit (the
 * work of one block) is a run of keys of one 16 x 16 block holding at most
 * unit_chunks chunks and unit_points points (a cell over either limit is a
 * unit of its own, pooled in several passes), and the pooling block has
 * threads threads.  p3dc_bevpool_geometry_cuda_new() takes
 * P3DC_BEVPOOL_SCHEDULE_DEFAULT. */
typedef struct
{
  uint32_t unit_chunks;
  uint32_t unit_points;
  uint32_t threads;
} P3dcBevPoolSchedule;

/* The chunks per pass of a unit holding @chunks chunks and @points points:
 * all of them when the unit is within the schedule's budget, else (a
 * single cell, see above) at most unit_chunks chunks of at most
 * P3DC_BEVPOOL_CHUNK points each, within unit_points.  The geometry orders
 * each pass's chunks, the pooling pools them: both cut the passes here. */
static P3DC_HOST_DEVICE uint32_t
p3dc_bevpool_pass_chunks (const P3dcBevPoolSchedule * s, uint32_t chunks,
    uint32_t points)
{
  uint32_t most = s->unit_points / P3DC_BEVPOOL_CHUNK;

  if (chunks <= s->unit_chunks && points <= s->unit_points)
    return chunks;
  return most < s->unit_chunks ? most : s->unit_chunks;
}

/* 2 blocks of 512 threads per SM (about 105 KB of shared memory each). */
#define P3DC_BEVPOOL_SCHEDULE_DEFAULT { 128, 2048, 512 }

struct _P3dBevGeometryCuda
{
  P3dcBevPoolParams params;
  P3dcBevFrustumGrid grid;
  P3dcBevBlocking blocking;
  P3dcBevPoolSchedule schedule;
  uint32_t frustum_points;
  uint32_t cells;
  uint32_t keys;                /* sort keys: cells padded to whole blocks */
  uint32_t key_bits;            /* block-sort bits: enough for keys itself */
  uint32_t pieces;              /* frustum pieces (bevpool_geometry_order.cuh) */
  int computed;
  /* device memory; per key arrays are in key order */
  uint32_t *staged;             /* pieces x piece: entries, sorted by piece */
  uint32_t *segments;           /* pieces x piece x 2: key, start | count */
  uint32_t *piece_segments;     /* pieces: segments per piece */
  uint64_t *key_counts;         /* keys + 1: segments << 32 | points */
  uint64_t *key_bases;          /* keys + 1: exclusive sum of the counts */
  uint32_t *cursor;             /* keys + 1: filled slots of each list */
  uint32_t *lists;              /* frustum_points x 2: segment, start | count */
  uint32_t *entries;            /* frustum_points: packed entries, by key */
  uint32_t *chunk_flags;        /* frustum_points + 1 */
  uint32_t *chunk_ids;          /* frustum_points + 1: their exclusive sum */
  uint32_t *cell_start;         /* keys + 1: first point (by key) per key */
  uint32_t *chunk_start;        /* keys + 1: first chunk per key */
  uint32_t *chunk_begin;        /* frustum_points + 1: first point per chunk */
  uint32_t *unit_flags;         /* keys + 1: 1 where a unit starts */
  uint32_t *unit_pos;           /* keys + 1: exclusive sum of the flags */
  uint32_t *units;              /* (keys + 1) x 4: first key, chunk, point */
  uint32_t *unit_count;         /* 1 */
  /* frustum_points x 4, per chunk position c of a pass (sorted position q
   * = c - the pass's first chunk): the chunk pooled q-th (the pass's
   * chunks by window, longer first), and for q < the pass's batch count
   * the first position of batch q and its lowest and highest column key,
   * else UINT32_MAX, 0, 0. */
  uint32_t *plan;
  void *temp;                   /* CUB's temporary storage */
  size_t temp_bytes;
};

/* p3dc_bevpool_geometry_cuda_new() with another schedule (the tests run
 * small units to reach the multi-pass paths); P3DC_ERROR_INVALID_ARGUMENT for a schedule the pooling
 * cannot run (threads not a multiple of 32 in 64..1024, unit_chunks not in
 * 1..threads / 4, unit_points < P3DC_BEVPOOL_CHUNK or over 8192). */
P3dcResult p3dc_bevpool_geometry_cuda_new_scheduled (const P3dcBevPoolParams *
    params, const P3dcBevPoolSchedule * schedule,
    P3dcBevGeometryCuda ** geometry);

#ifdef __cplusplus
}
#endif

#endif /* P3DC_BEVPOOL_PRIVATE_H */
