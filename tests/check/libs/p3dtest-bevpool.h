/* What the bevpool tests share: configurations (random, hand-built and
 * nuScenes), a float64 oracle with its own arithmetic (direct projection
 * of every frustum point, no sorting), and checks that say where and by how
 * much a result is wrong. */
#ifndef BEVPOOL_COMMON_H
#define BEVPOOL_COMMON_H

#include <gst/check/gstcheck.h>

#include "bevpool.h"
#include "p3dtest.h"

G_BEGIN_DECLS

/* The oracle's mark for a point outside the grid. */
#define BEVPOOL_TEST_DROPPED G_MAXUINT32

typedef struct
{
  P3dcBevPoolParams params;      /* initialized */
  P3dcCameraCalib *calib;        /* params.cameras of them */
} BevpoolTestCase;

void bevpool_test_case_clear (BevpoolTestCase * tc);

/* Small random sizes (1 to 6 cameras, odd and even sizes, non-square
 * grids, nz 1), random well-conditioned calibrations (every camera its own
 * augmentation, with flips and rotations), both rounding rules and both
 * layouts. */
void bevpool_test_random_case (P3dTestRng * rng, BevpoolTestCase * tc);

/* nuScenes as BEVFusion runs it: 6 cameras, 118 depth bins, 32 x 88 from
 * 256 x 704, 360 x 360 x 1 cells, with the real calibration of a nuScenes
 * sample built in (camera order FRONT, FRONT_RIGHT, FRONT_LEFT, BACK,
 * BACK_LEFT, BACK_RIGHT). */
void bevpool_test_nuscenes_case (guint32 channels, BevpoolTestCase * tc);

/* A camera whose frustum point (u, v, d) lands at lidar (u * ds + offset_x,
 * v * ds + offset_y, ds), ds the depth: identity intrinsics, augmentation
 * and rotation, so a test can place points exactly. */
void bevpool_test_axis_camera (P3dcCameraCalib * calib, gdouble offset_x,
    gdouble offset_y);

/* Hand-built cases, each with an axis camera (see above) unless said
 * otherwise; bevpool.c explains what each one checks.
 * - truncate_floor: points at t = -1.5, -0.5, 0.5, 1.5 along x.
 * - per_camera_aug: 3 to 6 random cameras sharing intrinsics and pose,
 *   each with its own augmentation.
 * - cell_zero: many points in cell 0, more dropped.
 * - last_interval: several points in the last cell (variant 0) or in the
 *   last non-empty cell before an empty one (variant 1).
 * - non_square: nx != ny, both layouts (variants 0 to 3).
 * - one_cell: width x height x bins points, all in a single cell.
 * - boundary: decimal cell sizes, points within ulps of a cell boundary
 *   (variants 0 to 5: three sizes, both rounding rules). */
void bevpool_test_truncate_floor_case (P3dcBevRounding rounding,
    BevpoolTestCase * tc);
void bevpool_test_per_camera_aug_case (P3dTestRng * rng,
    BevpoolTestCase * tc);
void bevpool_test_cell_zero_case (BevpoolTestCase * tc);
void bevpool_test_last_interval_case (gint variant, BevpoolTestCase * tc);
void bevpool_test_non_square_case (gint variant, BevpoolTestCase * tc);
void bevpool_test_one_cell_case (guint width, guint height, guint bins,
    BevpoolTestCase * tc);
void bevpool_test_boundary_case (gint variant, BevpoolTestCase * tc);

/* The oracle: the cell of every frustum point (BEVPOOL_TEST_DROPPED when
 * outside), numbered as the output plane (see bevpool.h). */
void bevpool_test_oracle_cells (const P3dcBevPoolParams * params,
    const P3dcCameraCalib * calib, guint32 * cells);

/* The oracle's pooled output, in double: the sum and the sum of absolute
 * values of feature x depth per output element. */
void bevpool_test_oracle_pool (const P3dcBevPoolParams * params,
    const guint32 * cells, const gfloat * features, const gfloat * depth,
    gdouble * sum, gdouble * magnitude);

/* Fails (naming the first wrong point) unless @geometry holds exactly the
 * oracle's cells, each cell's points in (camera, u, d, v) order. */
void bevpool_test_check_geometry (const P3dcBevGeometry * geometry,
    const P3dcBevPoolParams * params, const guint32 * oracle_cells,
    const gchar * what);

/* Fails (naming the first element out of tolerance) unless every output
 * element is within @relative x magnitude + @floor of the oracle's sum. */
void bevpool_test_check_pooled (const P3dcBevPoolParams * params,
    const void *out, gboolean half_out, const gdouble * sum,
    const gdouble * magnitude, gdouble relative, gdouble floor,
    const gchar * what);

/* Random inputs: features uniform in [-1, 1), depth a softmax-like
 * distribution over the bins of each pixel.  Written as F32 or F16 into
 * @raw, and as the float value of what was written into @values. */
void bevpool_test_random_inputs (P3dTestRng * rng,
    const P3dcBevPoolParams * params, gboolean half, gpointer * raw_features,
    gpointer * raw_depth, gfloat ** features, gfloat ** depth);

/* Tiny depth values: every depth value of each (camera, depth bin) whose
 * index camera * depth_bins + d is a multiple of 3 becomes the smallest
 * subnormal of its format, of either sign, in @raw_depth and @depth.  In
 * F32, a feature in [-1, 1) times 2^-149 rounds to 0 or one step of
 * 2^-149, so that runs' sums underflow to -0 and +0 and add in the
 * subnormal range (an F16 output makes them zeros of either sign); in F16,
 * 2^-24 gives sums of a few 2^-24 at most, exact in float, which an F16
 * output holds as subnormals or rounds to zeros of either sign. */
void bevpool_test_tiny_bins (P3dTestRng * rng,
    const P3dcBevPoolParams * params, gboolean half, gpointer raw_depth,
    gfloat * depth);

/* The summation order of bevpool.h, written out here from its words: a
 * run starts at the cell's first point and at a point that is not in the
 * previous point's camera, column u and depth bin on the next row v; each
 * run's sum starts at 0 and adds its points with fmaf, and the cell's value
 * starts at 0 and adds the run sums.  Returns the F32 value of channel @c
 * of the cell whose sorted points are @points[@begin, @end), counts its
 * runs in *@runs, and adds to *@negative_zero (unless NULL) the count of
 * its runs whose sum is -0. */
gfloat bevpool_test_documented_sum (const P3dcBevPoolParams * params,
    const guint32 * points, guint32 begin, guint32 end,
    const gfloat * features, const gfloat * depth, guint32 c, guint32 * runs,
    guint32 * negative_zero);

G_END_DECLS

#endif /* BEVPOOL_COMMON_H */
