/* bevpool: camera features splatted onto a bird's-eye-view grid, as the LSS
 * family (LSS, BEVFusion, BEVDet) does it.
 *
 * Every camera's frustum (feature-map pixels spread over the image, times
 * the depth bins) goes through that camera's inverse image augmentation,
 * inverse intrinsics and camera-to-lidar transform into the BEV grid; each
 * grid cell receives the sum of feature x depth probability over the
 * frustum points that fall in it.
 *
 * The work is split in two, as in CUDA-BEVFusion: the geometry (which cell
 * every frustum point falls in, sorted by cell) depends only on the sizes
 * and the calibration and is computed once per calibration; the pooling
 * runs on every frame.  Each has a C reference and a CUDA implementation;
 * they compute identical geometries and bit-identical pooled outputs (see
 * p3dc_bevpool_cpu()).
 *
 * Tensors (all row-major, densely packed):
 *   features  [cameras][feat_height][feat_width][channels]
 *   depth     [cameras][depth_bins][feat_height][feat_width]
 *   output    [out_channels][ny][nx]  (P3DC_BEV_LAYOUT_YX, the default)
 *             [out_channels][nx][ny]  (P3DC_BEV_LAYOUT_XY, BEVFusion's)
 * features and depth are both F32 or both F16; the output is F32 or F16;
 * sums are accumulated in float32 whatever the formats.
 */
#ifndef P3DC_BEVPOOL_H
#define P3DC_BEVPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "result.h"
#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a coordinate becomes a cell index along one axis, from
 * t = (p - lower) / step.  TRUNCATE converts t toward zero, as LSS,
 * BEVFusion and BEVDet do (`.long()`), so a point less than one step below
 * the lower bound lands in cell 0: models trained with those frameworks
 * expect it.  FLOOR is the geometric rule: a point below the lower bound is
 * dropped. */
typedef enum
{
  P3DC_BEV_ROUND_TRUNCATE = 0,
  P3DC_BEV_ROUND_FLOOR = 1
} P3dcBevRounding;

/* The order of the two grid axes in the output.  YX ([C][ny][nx], rows
 * along y) is the media-type contract; XY ([C][nx][ny], rows along x) is
 * what BEVFusion's bev_pool and CUDA-BEVFusion produce, so a network
 * trained with them reads its input in that order. */
typedef enum
{
  P3DC_BEV_LAYOUT_YX = 0,
  P3DC_BEV_LAYOUT_XY = 1
} P3dcBevLayout;

typedef struct
{
  /* Set by the caller. */
  uint32_t cameras;
  uint32_t channels;
  uint32_t image_width, image_height;   /* the (augmented) network input */
  uint32_t feat_width, feat_height;
  /* { min, max, step } each; depth bins are LSS's arange (min, max, step). */
  double dbound[3];
  double xbound[3], ybound[3], zbound[3];
  P3dcBevRounding rounding;
  P3dcBevLayout layout;

  /* Derived by p3dc_bevpool_params_init(). */
  uint32_t depth_bins;          /* ceil ((max - min) / step), as arange */
  uint32_t nx, ny, nz;          /* round ((max - min) / step) per axis */
  /* nz * channels: with several z cells, the z slices are stacked along the
   * channels (channel z * channels + c), as LSS's and BEVFusion's
   * torch.cat (x.unbind (dim=2), 1) does. */
  uint32_t out_channels;
} P3dcBevPoolParams;

/* Checks the fields the caller sets and fills in the derived ones.
 * P3DC_ERROR_INVALID_ARGUMENT for a zero size, a non-finite bound, a step
 * that is not positive, max <= min, an axis that rounds to no cell, or an
 * unknown rounding or layout; P3DC_ERROR_TOO_LARGE when a tensor or the
 * cell count would reach 2^31 elements. */
P3dcResult p3dc_bevpool_params_init (P3dcBevPoolParams * params);

/* Tensor sizes in elements, for valid params. */
size_t p3dc_bevpool_features_size (const P3dcBevPoolParams * params);
size_t p3dc_bevpool_depth_size (const P3dcBevPoolParams * params);
size_t p3dc_bevpool_output_size (const P3dcBevPoolParams * params);

/* One camera's calibration: 4x4 row-major matrices.  Of the intrinsics the
 * top-left 3x3 is used; of the other two the top-left 3x3 (rotation) and
 * the top three of the last column (translation), as BEVFusion's
 * get_geometry uses post_rots / post_trans and camera2lidar_rots / _trans.
 * img_aug maps raw image pixels to network-input pixels (resize, crop,
 * flip, rotation); the frustum goes through its inverse. */
typedef struct
{
  double intrinsics[16];
  double camera_to_lidar[16];
  double img_aug[16];
} P3dcCameraCalib;

/* P3DC_OK when every camera's intrinsics and augmentation can be inverted
 * and every matrix element used is finite; P3DC_ERROR_INVALID_ARGUMENT
 * otherwise.  @calib holds params->cameras entries. */
P3dcResult p3dc_bevpool_calib_check (const P3dcBevPoolParams * params,
    const P3dcCameraCalib * calib);

/* Geometry on the host: the reference, and what a device geometry
 * downloads into for inspection. */
typedef struct _P3dBevGeometry P3dcBevGeometry;

P3dcResult p3dc_bevpool_geometry_new (const P3dcBevPoolParams * params,
    P3dcBevGeometry ** geometry);
void p3dc_bevpool_geometry_free (P3dcBevGeometry * geometry);

/* Projects every frustum point (float64 arithmetic) and sorts the kept
 * ones by cell; within a cell by camera, then feature column u, then depth
 * bin d, then feature row v (see "Summation order" below). */
P3dcResult p3dc_bevpool_geometry_compute_cpu (P3dcBevGeometry * geometry,
    const P3dcCameraCalib * calib);

/* Reading a computed geometry.  A frustum point is identified by its
 * index in the depth tensor, ((camera * depth_bins + d) * feat_height + v)
 * * feat_width + u.  Cells are numbered as the output plane for one channel
 * is laid out: (z * ny + y) * nx + x for YX, (z * nx + x) * ny + y for XY.
 * points() holds the kept() points sorted by cell, and within a cell in
 * (camera, u, d, v) order; the points of cell k are
 * points()[cell_start()[k] .. cell_start()[k + 1] - 1], and cell_start()
 * has nx * ny * nz + 1 entries, the last equal to kept(). */
uint32_t p3dc_bevpool_geometry_kept (const P3dcBevGeometry * geometry);
const uint32_t *p3dc_bevpool_geometry_points (const P3dcBevGeometry * geometry);
const uint32_t *p3dc_bevpool_geometry_cell_start (const P3dcBevGeometry *
    geometry);

typedef struct
{
  uint32_t frustum_points;      /* cameras x depth bins x feature pixels */
  uint32_t kept_points;         /* of those, inside the grid */
  uint32_t cells;               /* nx * ny * nz */
  uint32_t nonempty_cells;
  uint32_t largest_cell;        /* points in the busiest cell */
} P3dcBevGeometryStats;

P3dcResult p3dc_bevpool_geometry_stats (const P3dcBevGeometry * geometry,
    P3dcBevGeometryStats * stats);

/* Geometry on the device.  Workspaces are allocated by _new, on the
 * current device, which must be current for every later call: about 28
 * bytes per frustum point, and the run sums, 4 bytes per channel of every
 * run (on nuScenes' 6 cameras, 118 depth bins, 32 x 88 features and 80
 * channels: 56 MB and 81 MB).  The device works a feature column (camera,
 * u: depth_bins x feat_height points) per block, in shared memory:
 * P3DC_ERROR_TOO_LARGE for a column of more than
 * P3DC_BEVPOOL_CUDA_COLUMN_POINTS points, depth_bins or feat_height over
 * P3DC_BEVPOOL_CUDA_COLUMN_SIDE, or a column the device's shared memory
 * cannot hold (the largest columns need about 200 KB, which an sm_90 or
 * sm_80 device has and an sm_86 or sm_89 one does not). */
#define P3DC_BEVPOOL_CUDA_COLUMN_POINTS 24576u
#define P3DC_BEVPOOL_CUDA_COLUMN_SIDE 2048u

/* Whether a feature column of @params (initialized) is within the two
 * limits above; the device's shared memory is checked by _new. */
int p3dc_bevpool_cuda_column_fits (const P3dcBevPoolParams * params);

typedef struct _P3dBevGeometryCuda P3dcBevGeometryCuda;

P3dcResult p3dc_bevpool_geometry_cuda_new (const P3dcBevPoolParams * params,
    P3dcBevGeometryCuda ** geometry);
void p3dc_bevpool_geometry_cuda_free (P3dcBevGeometryCuda * geometry);

/* Queues the whole geometry computation on @stream: no host
 * synchronization, no allocation, counts stay on the device.  @calib is
 * read before the call returns.  Pooling that uses the geometry must run on
 * @stream or be ordered after it (an event).  The steps are one CUDA graph,
 * built by _new (launched one by one when @stream is being captured into a
 * graph of the caller's); calls with one geometry must not overlap on the
 * host. */
P3dcResult p3dc_bevpool_geometry_compute_cuda (P3dcBevGeometryCuda * geometry,
    const P3dcCameraCalib * calib, P3dcCudaStream stream);

/* Copies a computed device geometry into @host (made with the same
 * params), for tests and tools; synchronizes @stream. */
P3dcResult p3dc_bevpool_geometry_cuda_download (const P3dcBevGeometryCuda *
    geometry, P3dcBevGeometry * host, P3dcCudaStream stream);

/* Pooling.  @half_in: features and depth are F16 (else F32); @half_out:
 * the output is F16 (else F32).  Every output element is written, zero for
 * cells no point falls in.
 *
 * Summation order.  The float32 sums are defined exactly, so that both
 * paths agree bit for bit.  A cell's points, in the geometry's order
 * (camera, u, d, v), are cut into runs: a run starts at the cell's first
 * point and at a point that is not in the same camera, feature column u
 * and depth bin as the previous point, on the next feature row v.  Each
 * run's sum starts at 0 and adds its points in order as
 * fmaf (feature, depth, sum); the cell's value starts at 0 and adds the run
 * sums in order.  (A run reads one feature column at one depth bin: the
 * device sums every run of a column from that column's depth values and
 * feature rows in shared memory, then adds each cell's run sums.) */
P3dcResult p3dc_bevpool_cpu (const P3dcBevGeometry * geometry,
    const void *features, const void *depth, int half_in, void *out,
    int half_out);

/* The same on the device, queued on @stream, in three kernels: the depth
 * tensor column by column, every run's sum into the geometry's run-sum
 * buffer, then every cell's.  Those buffers belong to @geometry: poolings
 * with one geometry must be ordered (one stream, or events), and must not
 * overlap on the host.  The kernels are one CUDA graph per pair of formats,
 * built by _new; a call whose tensors none of the graph's up to four
 * executable forms holds sets one form's parameters again (launched one by
 * one when @stream is being captured into a graph of the caller's). */
P3dcResult p3dc_bevpool_cuda (const P3dcBevGeometryCuda * geometry,
    const void *features, const void *depth, int half_in, void *out,
    int half_out, P3dcCudaStream stream);

#ifdef __cplusplus
}
#endif

#endif /* P3DC_BEVPOOL_H */
