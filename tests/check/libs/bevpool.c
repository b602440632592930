/* The bevpool reference (geometry and pooling) against a float64 oracle
 * that projects every frustum point on its own, with no sorting: random
 * small configurations, hand-built ones for the truncate / floor rule and
 * for each known fault of CUDA-BEVFusion's precomputation, and nuScenes. */
#include <math.h>
#include <string.h>

#include "p3dtest-bevpool.h"
#include "half.h"

/* Tolerances against the oracle, relative to the cell's magnitude (the
 * sum of |feature x depth| over its points, which bounds every rounding
 * error of a float32 sum of those products), plus a floor:
 * - F32 output: 1e-30, only so that an empty cell (magnitude 0) compares
 *   equal; no input here comes near float32's subnormal range (1e-38).
 * - F16 output: 6e-8 (2^-24, the spacing of half's subnormals), since below
 *   half's smallest normal (6.1e-5) its error is absolute, not relative. */
#define F32_RELATIVE 1e-5
#define F32_FLOOR 1e-30
#define F16_RELATIVE 1e-2
#define F16_FLOOR 6e-8

/* Pools @tc's geometry in all four format pairs and compares each with the
 * oracle. */
static void
check_pooling (const BevpoolTestCase * tc, const P3dcBevGeometry * geometry,
    const guint32 * oracle_cells, P3dTestRng * rng, const gchar * what)
{
  const P3dcBevPoolParams *params = &tc->params;
  gsize out_size = p3dc_bevpool_output_size (params);
  gdouble *sum = g_new (gdouble, out_size);
  gdouble *magnitude = g_new (gdouble, out_size);
  gpointer out = g_malloc (out_size * sizeof (gfloat));
  gint half_in, half_out;

  for (half_in = 0; half_in < 2; half_in++) {
    gpointer raw_features, raw_depth;
    gfloat *features, *depth;

    bevpool_test_random_inputs (rng, params, half_in, &raw_features,
        &raw_depth, &features, &depth);
    bevpool_test_oracle_pool (params, oracle_cells, features, depth, sum,
        magnitude);
    for (half_out = 0; half_out < 2; half_out++) {
      gchar *label = g_strdup_printf ("%s, %s in, %s out", what,
          half_in ? "F16" : "F32", half_out ? "F16" : "F32");

      /* Garbage first: the pooling must write every element. */
      memset (out, 0x7f, out_size * sizeof (gfloat));
      fail_unless_equals_int (p3dc_bevpool_cpu (geometry, raw_features,
              raw_depth, half_in, out, half_out), P3DC_OK);
      bevpool_test_check_pooled (params, out, half_out, sum, magnitude,
          half_out ? F16_RELATIVE : F32_RELATIVE,
          half_out ? F16_FLOOR : F32_FLOOR, label);
      g_free (label);
    }
    g_free (raw_features);
    g_free (raw_depth);
    g_free (features);
    g_free (depth);
  }
  g_free (sum);
  g_free (magnitude);
  g_free (out);
}

/* The reference geometry of @tc, checked against the oracle; the oracle's
 * cells are returned for further checks. */
static P3dcBevGeometry *
checked_geometry (const BevpoolTestCase * tc, guint32 ** oracle_cells,
    const gchar * what)
{
  P3dcBevGeometry *geometry = NULL;

  *oracle_cells = g_new (guint32, p3dc_bevpool_depth_size (&tc->params));
  bevpool_test_oracle_cells (&tc->params, tc->calib, *oracle_cells);
  fail_unless_equals_int (p3dc_bevpool_geometry_new (&tc->params, &geometry),
      P3DC_OK);
  fail_unless_equals_int (p3dc_bevpool_geometry_compute_cpu (geometry,
          tc->calib), P3DC_OK);
  bevpool_test_check_geometry (geometry, &tc->params, *oracle_cells, what);
  return geometry;
}

static void
check_case (const BevpoolTestCase * tc, P3dTestRng * rng, const gchar * what)
{
  guint32 *oracle_cells;
  P3dcBevGeometry *geometry = checked_geometry (tc, &oracle_cells, what);

  check_pooling (tc, geometry, oracle_cells, rng, what);
  p3dc_bevpool_geometry_free (geometry);
  g_free (oracle_cells);
}

GST_START_TEST (test_params)
{
  BevpoolTestCase tc = { {0}, NULL };
  P3dcBevPoolParams p;

  bevpool_test_nuscenes_case (80, &tc);
  fail_unless_equals_int (tc.params.depth_bins, 118);
  fail_unless_equals_int (tc.params.nx, 360);
  fail_unless_equals_int (tc.params.ny, 360);
  fail_unless_equals_int (tc.params.nz, 1);
  fail_unless_equals_int (tc.params.out_channels, 80);
  fail_unless_equals_uint64 (p3dc_bevpool_features_size (&tc.params),
      6 * 32 * 88 * 80);
  fail_unless_equals_uint64 (p3dc_bevpool_depth_size (&tc.params),
      6 * 118 * 32 * 88);
  fail_unless_equals_uint64 (p3dc_bevpool_output_size (&tc.params),
      80 * 360 * 360);

  /* As torch.arange and numpy.arange, ceil ((end - start) / step) values
   * computed in double: arange (1, 1.3, 0.1) has 4 (1.3 - 1 is
   * 0.30000000000000004), the last one at the end bound itself. */
  p = tc.params;
  p.dbound[0] = 1.0;
  p.dbound[1] = 1.3;
  p.dbound[2] = 0.1;
  fail_unless_equals_int (p3dc_bevpool_params_init (&p), P3DC_OK);
  fail_unless_equals_int (p.depth_bins, 4);
  /* Grid sizes round: 108 / 0.3 is 360.00000000000006. */
  p.zbound[0] = -10.0;
  p.zbound[1] = 10.0;
  p.zbound[2] = 2.5;
  fail_unless_equals_int (p3dc_bevpool_params_init (&p), P3DC_OK);
  fail_unless_equals_int (p.nz, 8);
  fail_unless_equals_int (p.out_channels, 8 * 80);

#define EXPECT_INVALID(field, value, expected) G_STMT_START { \
    P3dcBevPoolParams bad = tc.params; \
    bad.field = value; \
    fail_unless_equals_int (p3dc_bevpool_params_init (&bad), expected); \
  } G_STMT_END
  EXPECT_INVALID (cameras, 0, P3DC_ERROR_INVALID_ARGUMENT);
  EXPECT_INVALID (channels, 0, P3DC_ERROR_INVALID_ARGUMENT);
  EXPECT_INVALID (feat_width, 0, P3DC_ERROR_INVALID_ARGUMENT);
  EXPECT_INVALID (image_height, 0, P3DC_ERROR_INVALID_ARGUMENT);
  EXPECT_INVALID (dbound[2], 0.0, P3DC_ERROR_INVALID_ARGUMENT);
  EXPECT_INVALID (dbound[2], -0.5, P3DC_ERROR_INVALID_ARGUMENT);
  EXPECT_INVALID (dbound[1], 1.0, P3DC_ERROR_INVALID_ARGUMENT);
  EXPECT_INVALID (xbound[0], NAN, P3DC_ERROR_INVALID_ARGUMENT);
  EXPECT_INVALID (ybound[1], INFINITY, P3DC_ERROR_INVALID_ARGUMENT);
  EXPECT_INVALID (zbound[2], 1000.0, P3DC_ERROR_INVALID_ARGUMENT);
  EXPECT_INVALID (rounding, (P3dcBevRounding) 7, P3DC_ERROR_INVALID_ARGUMENT);
  EXPECT_INVALID (layout, (P3dcBevLayout) 2, P3DC_ERROR_INVALID_ARGUMENT);
  EXPECT_INVALID (xbound[2], 1e-9, P3DC_ERROR_TOO_LARGE);
  EXPECT_INVALID (channels, 1u << 30, P3DC_ERROR_TOO_LARGE);
  EXPECT_INVALID (dbound[2], 1e-5, P3DC_ERROR_TOO_LARGE);
#undef EXPECT_INVALID
  fail_unless_equals_int (p3dc_bevpool_params_init (NULL),
      P3DC_ERROR_INVALID_ARGUMENT);
  bevpool_test_case_clear (&tc);
}

GST_END_TEST;

GST_START_TEST (test_calib_check)
{
  BevpoolTestCase tc = { {0}, NULL };
  P3dcCameraCalib saved;
  P3dcBevGeometry *geometry = NULL;

  bevpool_test_nuscenes_case (4, &tc);
  fail_unless_equals_int (p3dc_bevpool_calib_check (&tc.params, tc.calib),
      P3DC_OK);
  fail_unless_equals_int (p3dc_bevpool_geometry_new (&tc.params, &geometry),
      P3DC_OK);
  saved = tc.calib[4];

  tc.calib[4].intrinsics[0] = 0.0;      /* fx = 0: singular */
  fail_unless_equals_int (p3dc_bevpool_calib_check (&tc.params, tc.calib),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_bevpool_geometry_compute_cpu (geometry,
          tc.calib), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless (p3dc_bevpool_geometry_points (geometry) == NULL);
  tc.calib[4] = saved;
  tc.calib[4].img_aug[5] = 0.0;
  fail_unless_equals_int (p3dc_bevpool_calib_check (&tc.params, tc.calib),
      P3DC_ERROR_INVALID_ARGUMENT);
  tc.calib[4] = saved;
  tc.calib[4].camera_to_lidar[7] = NAN;
  fail_unless_equals_int (p3dc_bevpool_calib_check (&tc.params, tc.calib),
      P3DC_ERROR_INVALID_ARGUMENT);
  tc.calib[4] = saved;
  tc.calib[4].img_aug[3] = INFINITY;
  fail_unless_equals_int (p3dc_bevpool_calib_check (&tc.params, tc.calib),
      P3DC_ERROR_INVALID_ARGUMENT);
  tc.calib[4] = saved;
  /* The bottom rows are not used: anything there is accepted. */
  tc.calib[4].camera_to_lidar[12] = NAN;
  fail_unless_equals_int (p3dc_bevpool_calib_check (&tc.params, tc.calib),
      P3DC_OK);

  p3dc_bevpool_geometry_free (geometry);
  bevpool_test_case_clear (&tc);
}

GST_END_TEST;

GST_START_TEST (test_random_against_oracle)
{
  guint seed;

  for (seed = 0; seed < 80; seed++) {
    BevpoolTestCase tc = { {0}, NULL };
    P3dTestRng rng;
    gchar *what;

    p3d_test_rng_init (&rng, 1000 + seed);
    bevpool_test_random_case (&rng, &tc);
    what = g_strdup_printf ("seed %u (%u cameras, %u channels, %u x %u x %u "
        "frustum, %u x %u grid, %s, %s)", 1000 + seed, tc.params.cameras,
        tc.params.channels, tc.params.depth_bins, tc.params.feat_height,
        tc.params.feat_width, tc.params.nx, tc.params.ny,
        tc.params.rounding == P3DC_BEV_ROUND_FLOOR ? "floor" : "truncate",
        tc.params.layout == P3DC_BEV_LAYOUT_XY ? "xy" : "yx");
    check_case (&tc, &rng, what);
    g_free (what);
    bevpool_test_case_clear (&tc);
  }
}

GST_END_TEST;

/* Points at t = -1.5, -0.5, 0.5, 1.5 (x cells from 0.5, 1 m wide). */
GST_START_TEST (test_truncate_versus_floor)
{
  static const gint truncate_cells[4] = { -1, 0, 0, 1 };
  static const gint floor_cells[4] = { -1, -1, 0, 1 };
  P3dTestRng rng;
  gint rule;

  p3d_test_rng_init (&rng, 7);
  for (rule = 0; rule < 2; rule++) {
    BevpoolTestCase tc = { {0}, NULL };
    const gint *expected = rule ? floor_cells : truncate_cells;
    guint32 *oracle_cells;
    P3dcBevGeometry *geometry;
    const guint32 *start, *points;
    guint u;

    bevpool_test_truncate_floor_case (rule ? P3DC_BEV_ROUND_FLOOR :
        P3DC_BEV_ROUND_TRUNCATE, &tc);
    geometry = checked_geometry (&tc, &oracle_cells,
        rule ? "floor" : "truncate");

    start = p3dc_bevpool_geometry_cell_start (geometry);
    points = p3dc_bevpool_geometry_points (geometry);
    for (u = 0; u < 4; u++) {
      gint cell = -1, k;
      guint32 i;

      for (k = 0; k < 2; k++)
        for (i = start[k]; i < start[k + 1]; i++)
          if (points[i] == u)
            cell = k;
      fail_unless (cell == expected[u], "%s: u = %u should be in cell %d, is "
          "in %d", rule ? "floor" : "truncate", u, expected[u], cell);
    }
    check_pooling (&tc, geometry, oracle_cells, &rng,
        rule ? "floor" : "truncate");
    p3dc_bevpool_geometry_free (geometry);
    g_free (oracle_cells);
    bevpool_test_case_clear (&tc);
  }
}

GST_END_TEST;

/* nuScenes' single z cell spans [-10, 10); under TRUNCATE a point at
 * z in (-30, -10) still lands in it, under FLOOR it is dropped. */
GST_START_TEST (test_truncate_slab_below_z)
{
  gint rule;
  guint32 kept[2];

  for (rule = 0; rule < 2; rule++) {
    BevpoolTestCase tc = { {0}, NULL };
    P3dcBevGeometry *geometry = NULL;

    /* Axis camera: z = depth, 1 to 6 m, against a z cell [3.5, 5.5). */
    bevpool_test_one_cell_case (2, 2, 6, &tc);
    tc.params.zbound[0] = 3.5;
    tc.params.zbound[1] = 5.5;
    tc.params.zbound[2] = 2.0;
    tc.params.rounding = rule ? P3DC_BEV_ROUND_FLOOR : P3DC_BEV_ROUND_TRUNCATE;
    fail_unless_equals_int (p3dc_bevpool_params_init (&tc.params), P3DC_OK);
    fail_unless_equals_int (p3dc_bevpool_geometry_new (&tc.params, &geometry),
        P3DC_OK);
    fail_unless_equals_int (p3dc_bevpool_geometry_compute_cpu (geometry,
            tc.calib), P3DC_OK);
    kept[rule] = p3dc_bevpool_geometry_kept (geometry);
    p3dc_bevpool_geometry_free (geometry);
    bevpool_test_case_clear (&tc);
  }
  /* Depths 4 and 5 are inside; 2 and 3 are within one cell below (t = -0.75
   * and -0.25); 1 is 1.25 cells below and 6 is past the end. */
  fail_unless_equals_int (kept[0], 4 * 4);
  fail_unless_equals_int (kept[1], 2 * 4);
}

GST_END_TEST;

/* Fault 1: CUDA-BEVFusion inverts the first camera's augmentation and uses
 * it for every camera.  Here the cameras share intrinsics and extrinsics
 * and differ only in their augmentation, so using the wrong one moves
 * points. */
GST_START_TEST (test_fault_per_camera_augmentation)
{
  BevpoolTestCase tc = { {0}, NULL };
  P3dTestRng rng;
  guint32 *oracle_cells, *first_aug_cells;
  P3dcBevGeometry *geometry;
  P3dcCameraCalib *shared_aug;
  gsize per_camera, p, moved = 0;
  guint i;

  p3d_test_rng_init (&rng, 11);
  bevpool_test_per_camera_aug_case (&rng, &tc);
  geometry = checked_geometry (&tc, &oracle_cells, "own augmentation");

  /* The test means something only if the first camera's augmentation puts
   * the other cameras' points elsewhere. */
  shared_aug = g_memdup2 (tc.calib, tc.params.cameras * sizeof (*tc.calib));
  for (i = 1; i < tc.params.cameras; i++)
    memcpy (shared_aug[i].img_aug, tc.calib[0].img_aug,
        sizeof (tc.calib[0].img_aug));
  first_aug_cells = g_new (guint32, p3dc_bevpool_depth_size (&tc.params));
  bevpool_test_oracle_cells (&tc.params, shared_aug, first_aug_cells);
  per_camera = p3dc_bevpool_depth_size (&tc.params) / tc.params.cameras;
  for (p = per_camera; p < p3dc_bevpool_depth_size (&tc.params); p++)
    moved += first_aug_cells[p] != oracle_cells[p];
  fail_unless (moved > per_camera / 4, "only %" G_GSIZE_FORMAT " points move "
      "with the first camera's augmentation", moved);

  check_pooling (&tc, geometry, oracle_cells, &rng, "own augmentation");
  p3dc_bevpool_geometry_free (geometry);
  g_free (oracle_cells);
  g_free (first_aug_cells);
  g_free (shared_aug);
  bevpool_test_case_clear (&tc);
}

GST_END_TEST;

/* Fault 2: CUDA-BEVFusion gives dropped points rank 0, the rank of cell
 * (0, 0), so they are pooled into it or cell 0's points are lost.  Here
 * many points fall in cell 0 and many are dropped. */
GST_START_TEST (test_fault_cell_zero)
{
  BevpoolTestCase tc = { {0}, NULL };
  P3dTestRng rng;
  guint32 *oracle_cells, expected = 0;
  P3dcBevGeometry *geometry;
  const guint32 *start;
  gsize p;

  p3d_test_rng_init (&rng, 12);
  bevpool_test_cell_zero_case (&tc);
  geometry = checked_geometry (&tc, &oracle_cells, "cell zero");
  for (p = 0; p < p3dc_bevpool_depth_size (&tc.params); p++)
    expected += oracle_cells[p] == 0;
  start = p3dc_bevpool_geometry_cell_start (geometry);
  fail_unless (expected >= 4, "the configuration puts only %u points in "
      "cell 0", expected);
  fail_unless (p3dc_bevpool_geometry_kept (geometry) + 20 <=
      p3dc_bevpool_depth_size (&tc.params), "too few dropped points");
  fail_unless_equals_int (start[1] - start[0], expected);
  check_pooling (&tc, geometry, oracle_cells, &rng, "cell zero");
  p3dc_bevpool_geometry_free (geometry);
  g_free (oracle_cells);
  bevpool_test_case_clear (&tc);
}

GST_END_TEST;

/* Fault 3: CUDA-BEVFusion ends the last interval one point early.  Here
 * the last cell of the grid holds several points, and so does the last
 * non-empty cell of a grid whose end is empty. */
GST_START_TEST (test_fault_last_interval)
{
  P3dTestRng rng;
  gint variant;

  p3d_test_rng_init (&rng, 13);
  for (variant = 0; variant < 2; variant++) {
    BevpoolTestCase tc = { {0}, NULL };
    guint32 *oracle_cells, cells, last, expected = 0;
    P3dcBevGeometry *geometry;
    const guint32 *start;
    gsize p;

    bevpool_test_last_interval_case (variant, &tc);
    geometry = checked_geometry (&tc, &oracle_cells, "last interval");
    cells = tc.params.nx * tc.params.ny;
    start = p3dc_bevpool_geometry_cell_start (geometry);
    last = cells - 1;
    while (last > 0 && start[last] == start[last + 1])
      last--;
    for (p = 0; p < p3dc_bevpool_depth_size (&tc.params); p++)
      expected += oracle_cells[p] == last;
    fail_unless (expected >= 2, "the last non-empty cell holds %u points",
        expected);
    fail_unless_equals_int (start[last + 1] - start[last], expected);
    fail_unless_equals_int (start[cells],
        p3dc_bevpool_geometry_kept (geometry));
    check_pooling (&tc, geometry, oracle_cells, &rng, "last interval");
    p3dc_bevpool_geometry_free (geometry);
    g_free (oracle_cells);
    bevpool_test_case_clear (&tc);
  }
}

GST_END_TEST;

/* Fault 4: CUDA-BEVFusion flattens (x, y) with the wrong dimension, which
 * only shows when nx != ny.  Both layouts, on grids wider than tall and
 * taller than wide. */
GST_START_TEST (test_fault_non_square)
{
  P3dTestRng rng;
  gint variant;

  p3d_test_rng_init (&rng, 14);
  for (variant = 0; variant < 4; variant++) {
    BevpoolTestCase tc = { {0}, NULL };
    guint32 *oracle_cells, u, v;
    P3dcBevGeometry *geometry;
    const guint32 *start, *points;
    gchar *what;

    bevpool_test_non_square_case (variant, &tc);
    what = g_strdup_printf ("%u x %u grid, %s", tc.params.nx, tc.params.ny,
        variant & 2 ? "xy" : "yx");
    geometry = checked_geometry (&tc, &oracle_cells, what);

    /* Depth 1 puts pixel (u, v) at (x, y) = (u, v): its cell is known
     * (which may also hold pixel (u / 2, v / 2) at depth 2). */
    start = p3dc_bevpool_geometry_cell_start (geometry);
    points = p3dc_bevpool_geometry_points (geometry);
    for (v = 0; v < 5; v++) {
      for (u = 0; u < 7; u++) {
        guint32 cell = variant & 2 ? u * tc.params.ny + v :
            v * tc.params.nx + u;
        guint32 i = start[cell];

        if (u >= tc.params.nx || v >= tc.params.ny)
          continue;
        while (i < start[cell + 1] && points[i] != v * 7 + u)
          i++;
        fail_unless (i < start[cell + 1], "%s: (%u, %u) not in cell %u",
            what, u, v, cell);
      }
    }
    check_pooling (&tc, geometry, oracle_cells, &rng, what);
    p3dc_bevpool_geometry_free (geometry);
    g_free (oracle_cells);
    g_free (what);
    bevpool_test_case_clear (&tc);
  }
}

GST_END_TEST;

/* Decimal cell sizes put most points within a few ulps of a cell
 * boundary, on both sides of it: the reference's cells are the oracle's,
 * which divides the same float64 values. */
GST_START_TEST (test_cell_boundaries)
{
  P3dTestRng rng;
  gint variant;

  p3d_test_rng_init (&rng, 15);
  for (variant = 0; variant < 6; variant++) {
    BevpoolTestCase tc = { {0}, NULL };
    gchar *what;

    bevpool_test_boundary_case (variant, &tc);
    what = g_strdup_printf ("%g m cells, %s", tc.params.xbound[2],
        variant & 1 ? "floor" : "truncate");
    check_case (&tc, &rng, what);
    g_free (what);
    bevpool_test_case_clear (&tc);
  }
}

GST_END_TEST;

/* Several z cells: stacked along the channels, channel z * C + c, as LSS
 * and BEVFusion collapse them. */
GST_START_TEST (test_stacked_z)
{
  guint seed;

  for (seed = 0; seed < 12; seed++) {
    BevpoolTestCase tc = { {0}, NULL };
    P3dTestRng rng;
    gchar *what;

    p3d_test_rng_init (&rng, 2000 + seed);
    bevpool_test_random_case (&rng, &tc);
    tc.params.zbound[0] = -4.0;
    tc.params.zbound[2] = 1.0 + seed % 3;
    tc.params.zbound[1] = -4.0 + (2 + seed % 3) * tc.params.zbound[2];
    fail_unless_equals_int (p3dc_bevpool_params_init (&tc.params), P3DC_OK);
    fail_unless_equals_int (tc.params.nz, 2 + seed % 3);
    fail_unless_equals_int (tc.params.out_channels,
        tc.params.nz * tc.params.channels);
    what = g_strdup_printf ("seed %u, nz %u", 2000 + seed, tc.params.nz);
    check_case (&tc, &rng, what);
    g_free (what);
    bevpool_test_case_clear (&tc);
  }
}

GST_END_TEST;

/* One cell holding a whole frustum: the F32 output bit for bit equal to
 * the documented order, and the expected number of runs. */
static void
check_documented_order (guint width, guint height, guint bins,
    guint32 expected_runs, guint64 seed)
{
  BevpoolTestCase tc = { {0}, NULL };
  P3dTestRng rng;
  P3dcBevGeometry *geometry = NULL;
  gpointer raw_features, raw_depth;
  gfloat *features, *depth, out[3], expected;
  guint32 kept, c, runs;

  p3d_test_rng_init (&rng, seed);
  bevpool_test_one_cell_case (width, height, bins, &tc);
  fail_unless_equals_int (p3dc_bevpool_geometry_new (&tc.params, &geometry),
      P3DC_OK);
  fail_unless_equals_int (p3dc_bevpool_geometry_compute_cpu (geometry,
          tc.calib), P3DC_OK);
  kept = p3dc_bevpool_geometry_kept (geometry);
  fail_unless_equals_int (kept, width * height * bins);

  bevpool_test_random_inputs (&rng, &tc.params, FALSE, &raw_features,
      &raw_depth, &features, &depth);
  fail_unless_equals_int (p3dc_bevpool_cpu (geometry, raw_features, raw_depth,
          FALSE, out, FALSE), P3DC_OK);
  for (c = 0; c < 3; c++) {
    expected = bevpool_test_documented_sum (&tc.params,
        p3dc_bevpool_geometry_points (geometry), 0, kept, features, depth, c,
        &runs, NULL);
    fail_unless_equals_int (runs, expected_runs);
    fail_unless (memcmp (&out[c], &expected, sizeof (gfloat)) == 0,
        "%u x %u x %u, channel %u: %.9g, the documented order gives %.9g",
        width, height, bins, c, out[c], expected);
  }
  g_free (raw_features);
  g_free (raw_depth);
  g_free (features);
  g_free (depth);
  p3dc_bevpool_geometry_free (geometry);
  bevpool_test_case_clear (&tc);
}

GST_START_TEST (test_summation_order)
{
  /* A run per column and depth bin: 8 x 2 runs of 7 rows.  The last row of
   * depth bin 0 and the first of bin 1 are one feature row apart in the
   * point numbering, and still two runs. */
  check_documented_order (8, 7, 2, 16, 15);
  /* 20 runs of 17 rows. */
  check_documented_order (20, 17, 1, 20, 16);
  /* Columns of one row: every point its own run. */
  check_documented_order (5, 1, 6, 30, 17);
}

GST_END_TEST;

/* Tiny inputs (bevpool_test_tiny_bins) on the cases of libs/bevpool_cuda's
 * test_tiny_inputs (seeds 8100 to 8105, drawn in the same order there):
 * the F32 output of every cell and channel bit for bit the documented
 * order's, where runs whose sums underflow to -0 add to +0 and cells sum in
 * the subnormal range.  Each case has cells whose every run sums to -0
 * (+0 only because the cell's value starts at 0), and subnormal outputs,
 * so that the device test compares those too. */
GST_START_TEST (test_tiny_inputs)
{
  guint seed;

  for (seed = 8100; seed < 8106; seed++) {
    BevpoolTestCase tc = { {0}, NULL };
    P3dTestRng rng;
    P3dcBevGeometry *geometry;
    guint32 *oracle_cells, negative_zero = 0, all_negative = 0;
    guint32 subnormal = 0, runs, c;
    const guint32 *points, *start;
    gpointer raw_features, raw_depth;
    gfloat *features, *depth, *out;
    gsize plane, cells, cell;
    gchar *what = g_strdup_printf ("tiny inputs, seed %u", seed);

    p3d_test_rng_init (&rng, seed);
    bevpool_test_random_case (&rng, &tc);
    geometry = checked_geometry (&tc, &oracle_cells, what);
    bevpool_test_random_inputs (&rng, &tc.params, FALSE, &raw_features,
        &raw_depth, &features, &depth);
    bevpool_test_tiny_bins (&rng, &tc.params, FALSE, raw_depth, depth);
    out = g_new (gfloat, p3dc_bevpool_output_size (&tc.params));
    fail_unless_equals_int (p3dc_bevpool_cpu (geometry, raw_features,
            raw_depth, FALSE, out, FALSE), P3DC_OK);
    points = p3dc_bevpool_geometry_points (geometry);
    start = p3dc_bevpool_geometry_cell_start (geometry);
    plane = (gsize) tc.params.nx * tc.params.ny;
    cells = plane * tc.params.nz;
    for (cell = 0; cell < cells; cell++)
      for (c = 0; c < tc.params.channels; c++) {
        guint32 before = negative_zero;
        gfloat want = bevpool_test_documented_sum (&tc.params, points,
            start[cell], start[cell + 1], features, depth, c, &runs,
            &negative_zero);
        gfloat got = out[(cell / plane * tc.params.channels + c) * plane +
            cell % plane];

        fail_unless (memcmp (&got, &want, sizeof (gfloat)) == 0,
            "%s: cell %" G_GSIZE_FORMAT ", channel %u: %a, the documented "
            "order gives %a", what, cell, c, got, want);
        if (fpclassify (got) == FP_SUBNORMAL)
          subnormal++;
        if (runs > 0 && negative_zero - before == runs)
          all_negative++;
      }
    fail_unless (all_negative > 0, "%s: no cell whose runs all sum to -0 "
        "(%u such runs)", what, negative_zero);
    fail_unless (subnormal > 0, "%s: no output is subnormal", what);
    g_free (out);
    g_free (raw_features);
    g_free (raw_depth);
    g_free (features);
    g_free (depth);
    g_free (oracle_cells);
    g_free (what);
    p3dc_bevpool_geometry_free (geometry);
    bevpool_test_case_clear (&tc);
  }
}

GST_END_TEST;

/* nuScenes with its real calibration: the geometry of all 1,993,728
 * frustum points against the oracle, and the pooling on 2 channels. */
GST_START_TEST (test_nuscenes)
{
  BevpoolTestCase tc = { {0}, NULL };
  P3dTestRng rng;
  guint32 *oracle_cells;
  P3dcBevGeometry *geometry;
  P3dcBevGeometryStats stats;

  p3d_test_rng_init (&rng, 16);
  bevpool_test_nuscenes_case (2, &tc);
  geometry = checked_geometry (&tc, &oracle_cells, "nuScenes");
  fail_unless_equals_int (p3dc_bevpool_geometry_stats (geometry, &stats),
      P3DC_OK);
  fail_unless_equals_int (stats.frustum_points, 1993728);
  fail_unless_equals_int (stats.cells, 129600);
  /* CUDA-BEVFusion's figures for this calibration. */
  fail_unless_equals_int (stats.nonempty_cells, 97326);
  fail_unless_equals_int (stats.largest_cell, 886);
  check_pooling (&tc, geometry, oracle_cells, &rng, "nuScenes");
  p3dc_bevpool_geometry_free (geometry);
  g_free (oracle_cells);
  bevpool_test_case_clear (&tc);
}

GST_END_TEST;

GST_START_TEST (test_errors)
{
  BevpoolTestCase tc = { {0}, NULL };
  P3dcBevGeometry *geometry = NULL;
  P3dcBevGeometryStats stats;
  P3dcBevPoolParams bad;
  gfloat in[16] = { 0 }, out[32];

  bevpool_test_one_cell_case (2, 2, 1, &tc);
  bad = tc.params;
  bad.cameras = 0;
  fail_unless_equals_int (p3dc_bevpool_geometry_new (&bad, &geometry),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless (geometry == NULL);
  fail_unless_equals_int (p3dc_bevpool_geometry_new (NULL, &geometry),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_bevpool_geometry_new (&tc.params, &geometry),
      P3DC_OK);
  /* Not computed yet: nothing to read or pool. */
  fail_unless_equals_int (p3dc_bevpool_geometry_kept (geometry), 0);
  fail_unless (p3dc_bevpool_geometry_cell_start (geometry) == NULL);
  fail_unless_equals_int (p3dc_bevpool_geometry_stats (geometry, &stats),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_bevpool_cpu (geometry, in, in, FALSE, out,
          FALSE), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_bevpool_geometry_compute_cpu (geometry, NULL),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_bevpool_geometry_compute_cpu (geometry,
          tc.calib), P3DC_OK);
  fail_unless_equals_int (p3dc_bevpool_cpu (geometry, NULL, in, FALSE, out,
          FALSE), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_bevpool_cpu (geometry, in, in, FALSE, NULL,
          FALSE), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_bevpool_cpu (geometry, in, in, FALSE, out,
          FALSE), P3DC_OK);
  p3dc_bevpool_geometry_free (geometry);
  p3dc_bevpool_geometry_free (NULL);
  bevpool_test_case_clear (&tc);
}

GST_END_TEST;

static Suite *
bevpool_suite (void)
{
  Suite *s = suite_create ("bevpool");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_params);
  tcase_add_test (tc, test_calib_check);
  tcase_add_test (tc, test_random_against_oracle);
  tcase_add_test (tc, test_truncate_versus_floor);
  tcase_add_test (tc, test_truncate_slab_below_z);
  tcase_add_test (tc, test_fault_per_camera_augmentation);
  tcase_add_test (tc, test_fault_cell_zero);
  tcase_add_test (tc, test_fault_last_interval);
  tcase_add_test (tc, test_fault_non_square);
  tcase_add_test (tc, test_cell_boundaries);
  tcase_add_test (tc, test_stacked_z);
  tcase_add_test (tc, test_summation_order);
  tcase_add_test (tc, test_tiny_inputs);
  tcase_add_test (tc, test_nuscenes);
  tcase_add_test (tc, test_errors);
  return s;
}

GST_CHECK_MAIN (bevpool);
