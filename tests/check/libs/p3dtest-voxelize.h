/* What the voxelize tests share: parameters from a grid of cells, points,
 * an output on the host, poisoned, and its comparison with another that
 * names the first difference. */
#ifndef VOXELIZE_TEST_H
#define VOXELIZE_TEST_H

#include <gst/check/gstcheck.h>

#include "voxelize.h"

G_BEGIN_DECLS

/* Parameters of a grid of @cells cells of @size from @min; fails unless
 * they are valid and the grid is @cells. */
void voxelize_test_params (P3dcVoxelizeParams * params,
    const gdouble size[3], const gdouble min[3], const guint cells[3],
    guint channels, guint max_points, guint max_voxels);

/* Sets point @i of @points (@channels values each) to (x, y, z), its other
 * channels to @extra + the channel's index. */
void voxelize_test_set_point (gfloat * points, gsize i, guint channels,
    gfloat x, gfloat y, gfloat z, gfloat extra);

/* One voxelize output on the host; @out points at the fields. */
typedef struct
{
  P3dcVoxelizeParams params;
  gfloat *voxels;
  guint32 *num_points;
  gint32 *coords;
  guint32 count;
  P3dcVoxelizeStats stats;
  P3dcVoxelizeOutput out;
} VoxelizeTestResult;

/* The tensors sized for @params and every byte, count and stats included,
 * set to 0xff: what fills it must write them all. */
void voxelize_test_result_init (VoxelizeTestResult * r,
    const P3dcVoxelizeParams * params);

void voxelize_test_result_clear (VoxelizeTestResult * r);

/* The number of floats of the voxels tensor. */
gsize voxelize_test_voxel_floats (const P3dcVoxelizeParams * params);

/* Fails unless @actual is @expected bit for bit (count, stats, num_points,
 * coords, voxels), naming @what and the first difference. */
void voxelize_test_assert_same (const VoxelizeTestResult * expected,
    const VoxelizeTestResult * actual, const gchar * what);

G_END_DECLS

#endif /* VOXELIZE_TEST_H */
