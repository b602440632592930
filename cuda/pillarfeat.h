/* Pillar features: the per-point input of a PointPillars network, computed
 * from the voxels that voxelize produced (application/x-voxels in,
 * application/x-pillar-features out; see docs/media-types.md).
 *
 * For a voxel v below the count, with n = min (num_points[v], max_points)
 * valid points, point p < n at (x, y, z) gets, in this order:
 *   x, y, z, i                       the point (i = 0 when there is no
 *                                    intensity channel)
 *   x - mean_x, y - mean_y, z - mean_z   mean of the voxel's valid points
 *   x - center_x, y - center_y, z - center_z   center of the voxel's cell
 *   sqrt (x * x + y * y + z * z)     (pointpillars-11 only)
 * mmdet3d-9 leaves out z - center_z.  mmdet3d-11 is what mmdetection3d's
 * PillarFeatureNet (legacy=False, in_channels=5, with_distance=False) builds:
 *   x, y, z, c3, c4                  the point's own channels 3 and 4 (0 for
 *                                    a channel the format lacks; the
 *                                    intensity_channel is not consulted)
 *   x - mean_x, y - mean_y, z - mean_z, x - center_x, y - center_y,
 *   z - center_z                     as above  Every unused point slot (p >= n), and
 * every row of a voxel at or beyond the count, is zero.
 *
 * Arithmetic is float32, written once below for the reference and the
 * kernel: mean_x = (((0 + x_0) + x_1) + ... + x_(n-1)) / (float) n, and
 * center_x = (float) coords[v][3] * voxel_size[0] + center_offset[0] (x is
 * coords[v][3], y coords[v][2], z coords[v][1]), each operation rounded on
 * its own (no fused multiply-add on either path).  The CUDA path therefore
 * returns the reference's output bit for bit, F16 included (the F32 value
 * rounded to nearest, ties to even), for every finite input.
 *
 * Malformed input is clamped, never read out of bounds: a count above
 * max_voxels is taken as max_voxels (and that is the count written out), a
 * num_points above max_points as max_points, and a voxel below the count
 * with num_points 0 gets all-zero features (no 0 / 0) and its coordinates.
 * num_points and coords of voxels at or beyond the count are ignored, and
 * point slots beyond a voxel's (clamped) num_points are never read.
 */
#ifndef P3DC_PILLARFEAT_H
#define P3DC_PILLARFEAT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "hostdevice.h"
#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum
{
  /* x y z i, x-mean y-mean z-mean, x-cx y-cy z-cz */
  P3DC_PILLAR_FEATURES_POINTPILLARS_10 = 0,
  /* as above without z - center_z */
  P3DC_PILLAR_FEATURES_MMDET3D_9 = 1,
  /* pointpillars-10 then sqrt (x^2 + y^2 + z^2) */
  P3DC_PILLAR_FEATURES_POINTPILLARS_11 = 2,
  /* x y z c3 c4, x-mean y-mean z-mean, x-cx y-cy z-cz (mmdetection3d's
   * PillarFeatureNet with in_channels=5, legacy=False) */
  P3DC_PILLAR_FEATURES_MMDET3D_11 = 3,
} P3dcPillarFeatureSet;

/* The most features a point gets in any set. */
#define P3DC_PILLAR_FEATURES_MAX 11

/* Limits that params_init enforces, so that every size and index fits:
 * max_voxels, max_points, and their product (point slots). */
#define P3DC_PILLARFEAT_MAX_VOXELS 0x7fffffffu
#define P3DC_PILLARFEAT_MAX_POINTS 65536u
#define P3DC_PILLARFEAT_MAX_SLOTS 0x80000000u

/* 10, 9 or 11 (pointpillars-11 and mmdet3d-11); 0 for a value that is not a P3dcPillarFeatureSet. */
uint32_t p3dc_pillar_feature_count (P3dcPillarFeatureSet set);

typedef struct
{
  P3dcPillarFeatureSet features;
  /* nonzero: F16 output (exact RNE rounding of the F32 result) */
  int half;
  /* floats per input point, >= 3; x, y, z are channels 0, 1, 2 */
  uint32_t channels;
  /* index of the intensity in a point (3 .. channels - 1), -1 when the
   * format has none: the i feature is then 0 */
  int intensity_channel;
  uint32_t max_points, max_voxels;
  float voxel_size[3];
  /* (float) (voxel_size / 2 + range_min) computed in double, as OpenPCDet's
   * x_offset: center = (float) coord * size + offset */
  float center_offset[3];
} P3dcPillarFeatParams;

/* Fills @params from doubles (computes center_offset in double) and
 * validates it: P3DC_ERROR_INVALID_ARGUMENT for an unknown feature set,
 * channels < 3, an intensity channel outside 3 .. channels - 1 (other than
 * -1), a zero max_points or max_voxels, or a voxel size that is not finite
 * and positive in float, or a range_min or offset that is not finite;
 * P3DC_ERROR_TOO_LARGE beyond P3DC_PILLARFEAT_MAX_VOXELS, _MAX_POINTS or
 * _MAX_SLOTS. */
P3dcResult p3dc_pillarfeat_params_init (P3dcPillarFeatParams * params,
    P3dcPillarFeatureSet set, int half, uint32_t channels,
    int intensity_channel, uint32_t max_points, uint32_t max_voxels,
    const double voxel_size[3], const double range_min[3]);

/* The checks of p3dc_pillarfeat_params_init() on a filled struct. */
P3dcResult p3dc_pillarfeat_params_validate (const P3dcPillarFeatParams * params);

/* Bytes of the features tensor: max_voxels * max_points * feature count *
 * (2 or 4); 0 when @params is not valid. */
size_t p3dc_pillarfeat_features_size (const P3dcPillarFeatParams * params);

/* The x-voxels tensors (device pointers for the CUDA path):
 * voxels [max_voxels][max_points][channels] float32,
 * num_points [max_voxels] uint32, coords [max_voxels][4] int32
 * (0, z, y, x), count [1] uint32. */
typedef struct
{
  const float *voxels;
  const uint32_t *num_points;
  const int32_t *coords;
  const uint32_t *count;
} P3dcPillarFeatInput;

/* The x-pillar-features tensors: features [max_voxels][max_points][F]
 * float32 or float16, coords [max_voxels][4] int32 (the input's, 0 beyond
 * the count), count [1] uint32 (the input's, clamped to max_voxels). */
typedef struct
{
  void *features;
  int32_t *coords;
  uint32_t *count;
} P3dcPillarFeatOutput;

/* The reference.  Writes every byte of the outputs.  Nothing is written
 * when @params is not valid or a pointer is NULL. */
void p3dc_pillarfeat_cpu (const P3dcPillarFeatParams * params,
    const P3dcPillarFeatInput * in, const P3dcPillarFeatOutput * out);

/* The device path for one set of params, on the device current when it is
 * created: the kernel chosen and its grid sized once, the launch kept as a
 * CUDA graph.  P3DC_ERROR_INVALID_ARGUMENT for invalid params, else the
 * CUDA error of the device queries; *@pf NULL on failure. */
typedef struct _P3dcPillarFeatCuda P3dcPillarFeatCuda;
P3dcResult p3dc_pillarfeat_cuda_new (const P3dcPillarFeatParams * params,
    P3dcPillarFeatCuda ** pf);
void p3dc_pillarfeat_cuda_free (P3dcPillarFeatCuda * pf);

/* Queued on @stream, no host sync; the count is read on the device.  A call
 * outside a capture of @stream is one CUDA graph launch (the first one
 * builds the graph); inside one, the kernel is launched into the caller's
 * graph.  Calls on one @pf must not overlap on the host.
 * @output_clean: nonzero when @out holds this function's previous output for
 * the same params, untouched since (its previous count is in out->count):
 * then rows of voxels >= max (new count, old count) need no writing, and are
 * not written.  Zero: every byte is written.  While the kernel runs,
 * out->count holds an intermediate value (it is how the blocks agree on the
 * old count without a workspace); it holds the new count when the work on
 * @stream is done.
 *
 * Device pointers; in->count and out->count must be different words, and
 * no output may overlap an input.  out->features, in->coords and
 * out->coords must be 16-byte aligned (every cudaMalloc is), in->voxels
 * 4-byte aligned.  Returns P3DC_ERROR_INVALID_ARGUMENT for a NULL @pf, a
 * NULL or misaligned pointer, or the launch error. */
P3dcResult p3dc_pillarfeat_cuda (P3dcPillarFeatCuda * pf,
    const P3dcPillarFeatInput * in, const P3dcPillarFeatOutput * out,
    int output_clean, P3dcCudaStream stream);

/* The arithmetic shared by the reference and the kernel. */

/* The mean of the first @point_count (> 0) points of a voxel row, summed in
 * point order. */
static P3DC_HOST_DEVICE void
p3dc_pillarfeat_mean (const float *points, uint32_t point_count,
    uint32_t channels, float mean[3])
{
  float sum_x = 0.0f, sum_y = 0.0f, sum_z = 0.0f, divisor;
  uint32_t p;

  /* unrolled so that the loads of several points are in flight at once;
   * the additions keep their order */
#ifdef __CUDA_ARCH__
#pragma unroll 2
#endif
  for (p = 0; p < point_count; p++) {
    const float *point = points + (size_t) p * channels;

    sum_x = sum_x + point[0];
    sum_y = sum_y + point[1];
    sum_z = sum_z + point[2];
  }
  divisor = (float) point_count;
  mean[0] = sum_x / divisor;
  mean[1] = sum_y / divisor;
  mean[2] = sum_z / divisor;
}

/* The center of a cell along one axis. */
static P3DC_HOST_DEVICE float
p3dc_pillarfeat_center (int32_t coord, float voxel_size, float center_offset)
{
  return (float) coord * voxel_size + center_offset;
}

/* The values a point passes through unchanged after x, y and z: the
 * intensity (0 without one) for the PointPillars sets and mmdet3d-9, the
 * point's channels 3 and 4 (0 where the format has fewer channels) for
 * mmdet3d-11. */
static P3DC_HOST_DEVICE void
p3dc_pillarfeat_point_extras (P3dcPillarFeatureSet set, const float *point,
    uint32_t channels, int intensity_channel, float extras[2])
{
  if (set == P3DC_PILLAR_FEATURES_MMDET3D_11) {
    extras[0] = channels > 3 ? point[3] : 0.0f;
    extras[1] = channels > 4 ? point[4] : 0.0f;
  } else {
    extras[0] = intensity_channel >= 0 ? point[intensity_channel] : 0.0f;
    extras[1] = 0.0f;
  }
}

/* The features of one valid point, p3dc_pillar_feature_count (@set) of them,
 * into @features; @extras from p3dc_pillarfeat_point_extras(). */
static P3DC_HOST_DEVICE void
p3dc_pillarfeat_point (P3dcPillarFeatureSet set, float x, float y, float z,
    const float extras[2], const float mean[3], const float center[3],
    float *features)
{
  features[0] = x;
  features[1] = y;
  features[2] = z;
  features[3] = extras[0];
  if (set == P3DC_PILLAR_FEATURES_MMDET3D_11) {
    /* one more pass-through channel, then the six offsets */
    features[4] = extras[1];
    features += 1;
  }
  features[4] = x - mean[0];
  features[5] = y - mean[1];
  features[6] = z - mean[2];
  features[7] = x - center[0];
  features[8] = y - center[1];
  if (set == P3DC_PILLAR_FEATURES_MMDET3D_9)
    return;
  features[9] = z - center[2];
  if (set == P3DC_PILLAR_FEATURES_POINTPILLARS_11)
    features[10] = sqrtf (x * x + y * y + z * z);
}

#ifdef __cplusplus
}
#endif

#endif /* P3DC_PILLARFEAT_H */
