/* Voxelization of a lidar sweep: points -> voxels (pillars when the grid has
 * one z cell), as mmcv's deterministic hard voxelization defines it.
 *
 * A point belongs to cell floor((p - range_min) / voxel_size) on each axis,
 * computed in float32 (subtract, then divide), when that cell is inside the
 * grid; other points are dropped, and so are points with a NaN or infinite
 * x, y or z (counted apart, whatever their other coordinates).  Voxels are
 * numbered in the order of their first point in the input, points within a
 * voxel keep their input order, and the first max_points points of a voxel
 * and the first max_voxels voxels are kept.  Every channel of a kept point
 * is copied bit for bit, even a non-finite intensity.  The CUDA path returns
 * exactly the reference's bytes on any input.
 *
 * Limits (P3DC_ERROR_TOO_LARGE beyond them): see the P3DC_VOXELIZE_MAX_*
 * macros below; the CUDA path also takes at most P3DC_VOXELIZE_MAX_INPUT
 * points per call.
 */
#ifndef P3DC_VOXELIZE_H
#define P3DC_VOXELIZE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hostdevice.h"
#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Cells along one axis: at most 2^24, so that every cell index and the grid
 * size are exact in float32 and the range test needs no integer conversion. */
#define P3DC_VOXELIZE_MAX_GRID_AXIS (1u << 24)
/* Cells in the whole grid: a cell's linear index fits in 31 bits. */
#define P3DC_VOXELIZE_MAX_GRID_CELLS (1u << 31)
/* Floats per point. */
#define P3DC_VOXELIZE_MAX_CHANNELS 64u
/* Kept points per voxel. */
#define P3DC_VOXELIZE_MAX_POINTS_PER_VOXEL 1024u
/* Kept voxels. */
#define P3DC_VOXELIZE_MAX_VOXELS (1u << 24)
/* Bytes of the voxel points tensor [max_voxels][max_points][channels]. */
#define P3DC_VOXELIZE_MAX_TENSOR_BYTES (((uint64_t) 1) << 36)
/* Points given to one p3dc_voxelize_cuda() call. */
#define P3DC_VOXELIZE_MAX_INPUT 0x7fffffffu

typedef struct {
  float voxel_size[3];   /* x, y, z in metres (float32 as used by the arithmetic) */
  float range_min[3];    /* lower corner x, y, z */
  uint32_t grid[3];      /* cells along x, y, z */
  uint32_t channels;     /* floats per point, >= 3; x, y, z are channels 0..2; all are copied */
  uint32_t max_points;   /* kept points per voxel, >= 1 */
  uint32_t max_voxels;   /* kept voxels, >= 1 */
} P3dcVoxelizeParams;

/* Fills @params from the element's double properties: grid[i] =
 * round((max - min) / size) in double, sizes and minimum converted to float.
 * Refuses (P3DC_ERROR_INVALID_ARGUMENT) sizes <= 0, non-finite values (also
 * after the conversion to float), max <= min, a grid axis of 0 cells,
 * channels < 3, max_points or max_voxels of 0; P3DC_ERROR_TOO_LARGE beyond
 * the P3DC_VOXELIZE_MAX_* limits.  @params is untouched on failure. */
P3dcResult p3dc_voxelize_params_init (P3dcVoxelizeParams *params,
    const double voxel_size[3],
    const double range[6] /* xmin ymin zmin xmax ymax zmax */,
    uint32_t channels, uint32_t max_points, uint32_t max_voxels);

/* The checks of p3dc_voxelize_params_init() on a filled struct (for callers
 * that fill it by hand); every other function refuses what this refuses. */
P3dcResult p3dc_voxelize_params_check (const P3dcVoxelizeParams *params);

typedef struct {
  uint32_t points_in;              /* points given */
  uint32_t points_nonfinite;       /* dropped: NaN or infinite x, y or z */
  uint32_t points_out_of_range;    /* dropped: finite, outside the grid */
  uint32_t points_over_max_points; /* dropped: their voxel already held max_points */
  uint32_t points_over_max_voxels; /* dropped: their voxel came after max_voxels others */
  uint32_t voxels;                 /* voxels output, <= max_voxels (== *count) */
  uint32_t voxels_dropped;         /* non-empty voxels beyond max_voxels */
} P3dcVoxelizeStats;

typedef struct {            /* host pointers for _cpu, device pointers for _cuda */
  float *voxels;            /* [max_voxels][max_points][channels], unused slots 0 */
  uint32_t *num_points;     /* [max_voxels], 0 beyond count */
  int32_t *coords;          /* [max_voxels][4] = (0, z, y, x), all 0 beyond count */
  uint32_t *count;          /* [1] */
  P3dcVoxelizeStats *stats;  /* [1], may be NULL */
} P3dcVoxelizeOutput;

/* The reference: writes every byte of every output tensor.  Counters
 * saturate at UINT32_MAX.  P3DC_ERROR_INVALID_ARGUMENT for bad params or a
 * NULL pointer (points may be NULL when n_points is 0), and
 * P3DC_ERROR_OUT_OF_MEMORY when its hash table cannot be allocated (the
 * outputs then hold an empty result). */
P3dcResult p3dc_voxelize_cpu (const P3dcVoxelizeParams *params,
    const float *points, size_t n_points, const P3dcVoxelizeOutput *out);

typedef struct _P3dVoxelizer P3dcVoxelizer;   /* device workspace for one params */

/* Creates the workspace for @params on the current device, sized for
 * @max_points_hint points per call (0: a default); a later call with more
 * points grows it, which is the one case where p3dc_voxelize_cuda()
 * synchronizes its stream.  Grids of up to 2^21 cells use a dense cell
 * table, larger ones a hash table sized by the point count. */
P3dcResult p3dc_voxelizer_new (const P3dcVoxelizeParams *params,
    size_t max_points_hint, P3dcVoxelizer **voxelizer);
/* Frees the workspace; the caller makes sure no queued work still uses it.
 * NULL is ignored. */
void p3dc_voxelizer_free (P3dcVoxelizer *voxelizer);

/* Queues the voxelization of n_points points (device memory, channels
 * floats each) on @stream, which must be the device's current one of the
 * voxelizer (P3DC_ERROR_INVALID_ARGUMENT otherwise).
 * @output_clean: nonzero when the output tensors hold this voxelizer's (same
 * params) previous output, untouched since; then only what differs from it
 * is written (new voxel rows, and zeros where the previous output had data;
 * the previous count is read from out->count).  Zero: every byte of the
 * output is written.  No host synchronization (but see p3dc_voxelizer_new());
 * counts and stats stay on the device.  Calls on one voxelizer must be
 * ordered (one stream, or streams ordered by events): they share its
 * workspace. */
P3dcResult p3dc_voxelize_cuda (P3dcVoxelizer *voxelizer, const float *points,
    size_t n_points, const P3dcVoxelizeOutput *out, int output_clean,
    P3dcCudaStream stream);

/* Shared by the reference and the kernels: how a point was classified. */
#define P3DC_VOXELIZE_POINT_KEPT 0
#define P3DC_VOXELIZE_POINT_NONFINITE 1
#define P3DC_VOXELIZE_POINT_OUT_OF_RANGE 2

static P3DC_HOST_DEVICE int
p3dc_voxelize_is_finite (float value)
{
  uint32_t bits;

  memcpy (&bits, &value, sizeof bits);
  return (bits & 0x7f800000u) != 0x7f800000u;
}

/* The cell of one axis: the quotient is tested as a float, before any
 * conversion to an integer, so a huge or rounded-up value can never give an
 * index outside [0, grid).  Returns nonzero when inside. */
static P3DC_HOST_DEVICE int
p3dc_voxelize_axis_cell (float p, float range_min, float voxel_size,
    uint32_t grid, uint32_t *cell)
{
  float q = (p - range_min) / voxel_size;

  if (!(q >= 0.0f && q < (float) grid))
    return 0;
  *cell = (uint32_t) q;
  return 1;
}

/* Classifies the point (x, y, z) and, when it is kept, sets @cell to its
 * linear cell index (z * grid_y + y) * grid_x + x. */
static P3DC_HOST_DEVICE int
p3dc_voxelize_point_cell (const P3dcVoxelizeParams *params, float x, float y,
    float z, uint32_t *cell)
{
  uint32_t cx, cy, cz;

  if (!p3dc_voxelize_is_finite (x) || !p3dc_voxelize_is_finite (y)
      || !p3dc_voxelize_is_finite (z))
    return P3DC_VOXELIZE_POINT_NONFINITE;
  if (!p3dc_voxelize_axis_cell (x, params->range_min[0],
          params->voxel_size[0], params->grid[0], &cx)
      || !p3dc_voxelize_axis_cell (y, params->range_min[1],
          params->voxel_size[1], params->grid[1], &cy)
      || !p3dc_voxelize_axis_cell (z, params->range_min[2],
          params->voxel_size[2], params->grid[2], &cz))
    return P3DC_VOXELIZE_POINT_OUT_OF_RANGE;
  *cell = (cz * params->grid[1] + cy) * params->grid[0] + cx;
  return P3DC_VOXELIZE_POINT_KEPT;
}

/* The (z, y, x) coordinates of a linear cell index. */
static P3DC_HOST_DEVICE void
p3dc_voxelize_cell_coords (const P3dcVoxelizeParams *params, uint32_t cell,
    int32_t coords[4])
{
  uint32_t row = cell / params->grid[0];

  coords[0] = 0;
  coords[1] = (int32_t) (row / params->grid[1]);
  coords[2] = (int32_t) (row % params->grid[1]);
  coords[3] = (int32_t) (cell % params->grid[0]);
}

#ifdef __cplusplus
}
#endif

#endif /* P3DC_VOXELIZE_H */
