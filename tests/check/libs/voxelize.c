/* The voxelize reference (p3dc_voxelize_cpu) against a brute-force oracle
 * written here from the definition: every point compared with every voxel
 * found so far, the cell computed with floor() in double of the float32
 * quotient.  Random clouds concentrated on small grids so that voxels fill
 * up, the edges of max-points, max-voxels and the range, non-finite points,
 * and golden hashes of the output. */
#include <gst/check/gstcheck.h>
#include <math.h>
#include <string.h>

#include "p3dtest-voxelize.h"
#include "p3dtest.h"
#include "voxelize.h"

/* ---- the oracle ---- */

typedef struct
{
  gint64 cell[3];
  gboolean kept;
  guint32 voxel;
} OracleCell;

static gboolean
oracle_axis (gfloat p, gfloat min, gfloat size, guint32 grid, gint64 * cell)
{
  volatile gfloat q = (p - min) / size;
  gdouble f = floor ((gdouble) q);

  if (!(f >= 0.0 && f < (gdouble) grid))
    return FALSE;
  *cell = (gint64) f;
  return TRUE;
}

static void
oracle_voxelize (const P3dcVoxelizeParams * p, const gfloat * points,
    gsize n_points, VoxelizeTestResult * r)
{
  gsize row = (gsize) p->max_points * p->channels, n_cells = 0, i, j;
  OracleCell *cells = g_new (OracleCell, n_points + 1);
  guint32 kept_voxels = 0;

  memset (r->voxels, 0, p->max_voxels * row * 4);
  memset (r->num_points, 0, p->max_voxels * 4);
  memset (r->coords, 0, p->max_voxels * 16);
  memset (&r->stats, 0, sizeof (r->stats));
  r->stats.points_in = n_points;
  for (i = 0; i < n_points; i++) {
    const gfloat *pt = points + i * p->channels;
    gint64 cell[3];
    OracleCell *found = NULL;

    if (!isfinite (pt[0]) || !isfinite (pt[1]) || !isfinite (pt[2])) {
      r->stats.points_nonfinite++;
      continue;
    }
    if (!oracle_axis (pt[0], p->range_min[0], p->voxel_size[0], p->grid[0],
            &cell[0])
        || !oracle_axis (pt[1], p->range_min[1], p->voxel_size[1],
            p->grid[1], &cell[1])
        || !oracle_axis (pt[2], p->range_min[2], p->voxel_size[2],
            p->grid[2], &cell[2])) {
      r->stats.points_out_of_range++;
      continue;
    }
    for (j = 0; j < n_cells && found == NULL; j++) {
      if (cells[j].cell[0] == cell[0] && cells[j].cell[1] == cell[1]
          && cells[j].cell[2] == cell[2])
        found = &cells[j];
    }
    if (found == NULL) {
      found = &cells[n_cells++];
      memcpy (found->cell, cell, sizeof (cell));
      found->kept = kept_voxels < p->max_voxels;
      if (found->kept) {
        found->voxel = kept_voxels++;
        r->coords[found->voxel * 4 + 0] = 0;
        r->coords[found->voxel * 4 + 1] = (gint32) cell[2];
        r->coords[found->voxel * 4 + 2] = (gint32) cell[1];
        r->coords[found->voxel * 4 + 3] = (gint32) cell[0];
      } else {
        r->stats.voxels_dropped++;
      }
    }
    if (!found->kept) {
      r->stats.points_over_max_voxels++;
    } else if (r->num_points[found->voxel] == p->max_points) {
      r->stats.points_over_max_points++;
    } else {
      memcpy (r->voxels + found->voxel * row
          + r->num_points[found->voxel] * p->channels, pt, p->channels * 4);
      r->num_points[found->voxel]++;
    }
  }
  r->count = kept_voxels;
  r->stats.voxels = kept_voxels;
  g_free (cells);
}

/* Runs the reference and the oracle on one cloud and compares them. */
static void
check_cloud (const P3dcVoxelizeParams * params, const gfloat * points,
    gsize n_points, const gchar * what, VoxelizeTestResult * kept)
{
  VoxelizeTestResult expected, actual;

  voxelize_test_result_init (&expected, params);
  voxelize_test_result_init (&actual, params);
  oracle_voxelize (params, points, n_points, &expected);
  fail_unless_equals_int (p3dc_voxelize_cpu (params, points, n_points,
          &actual.out), P3DC_OK);
  voxelize_test_assert_same (&expected, &actual, what);
  if (kept != NULL)
    *kept = actual;
  else
    voxelize_test_result_clear (&actual);
  voxelize_test_result_clear (&expected);
}

/* ---- tests ---- */

GST_START_TEST (test_params_init)
{
  const gdouble kitti_size[3] = { 0.16, 0.16, 4.0 };
  const gdouble kitti_range[6] = { 0, -39.68, -3, 69.12, 39.68, 1 };
  const gdouble nus_size[3] = { 0.2, 0.2, 8.0 };
  const gdouble nus_range[6] = { -51.2, -51.2, -5, 51.2, 51.2, 3 };
  const gdouble cp_size[3] = { 0.075, 0.075, 0.2 };
  const gdouble cp_range[6] = { -54, -54, -5, 54, 54, 3 };
  gdouble size[3], range[6];
  P3dcVoxelizeParams p, untouched;

  fail_unless_equals_int (p3dc_voxelize_params_init (&p, kitti_size,
          kitti_range, 4, 32, 40000), P3DC_OK);
  fail_unless (p.grid[0] == 432 && p.grid[1] == 496 && p.grid[2] == 1);
  fail_unless (p.voxel_size[0] == 0.16f && p.range_min[1] == -39.68f);
  fail_unless (p.channels == 4 && p.max_points == 32 && p.max_voxels == 40000);
  fail_unless_equals_int (p3dc_voxelize_params_check (&p), P3DC_OK);
  fail_unless_equals_int (p3dc_voxelize_params_init (&p, nus_size, nus_range,
          5, 20, 40000), P3DC_OK);
  fail_unless (p.grid[0] == 512 && p.grid[1] == 512 && p.grid[2] == 1);
  fail_unless_equals_int (p3dc_voxelize_params_init (&p, cp_size, cp_range,
          5, 10, 160000), P3DC_OK);
  fail_unless (p.grid[0] == 1440 && p.grid[1] == 1440 && p.grid[2] == 40);

  /* Refusals leave the struct alone. */
  memset (&untouched, 0x5a, sizeof (untouched));
#define REFUSED(expect, ch, mp, mv) G_STMT_START { \
    p = untouched; \
    fail_unless_equals_int (p3dc_voxelize_params_init (&p, size, range, \
            ch, mp, mv), expect); \
    fail_unless (memcmp (&p, &untouched, sizeof (p)) == 0); \
  } G_STMT_END
#define RESET() G_STMT_START { \
    memcpy (size, kitti_size, sizeof (size)); \
    memcpy (range, kitti_range, sizeof (range)); \
  } G_STMT_END
  RESET ();
  size[0] = 0.0;
  REFUSED (P3DC_ERROR_INVALID_ARGUMENT, 4, 32, 40000);
  RESET ();
  size[1] = -0.16;
  REFUSED (P3DC_ERROR_INVALID_ARGUMENT, 4, 32, 40000);
  RESET ();
  size[2] = NAN;
  REFUSED (P3DC_ERROR_INVALID_ARGUMENT, 4, 32, 40000);
  RESET ();
  size[0] = INFINITY;
  REFUSED (P3DC_ERROR_INVALID_ARGUMENT, 4, 32, 40000);
  RESET ();
  size[0] = 1e-60;              /* 0 as a float */
  REFUSED (P3DC_ERROR_INVALID_ARGUMENT, 4, 32, 40000);
  RESET ();
  range[0] = NAN;
  REFUSED (P3DC_ERROR_INVALID_ARGUMENT, 4, 32, 40000);
  RESET ();
  range[4] = INFINITY;
  REFUSED (P3DC_ERROR_INVALID_ARGUMENT, 4, 32, 40000);
  RESET ();
  range[1] = -1e39;             /* -inf as a float */
  REFUSED (P3DC_ERROR_INVALID_ARGUMENT, 4, 32, 40000);
  RESET ();
  range[3] = range[0];          /* max == min */
  REFUSED (P3DC_ERROR_INVALID_ARGUMENT, 4, 32, 40000);
  RESET ();
  range[5] = -4.0;              /* max < min */
  REFUSED (P3DC_ERROR_INVALID_ARGUMENT, 4, 32, 40000);
  RESET ();
  size[2] = 10.0;               /* round (4 / 10) = 0 cells */
  REFUSED (P3DC_ERROR_INVALID_ARGUMENT, 4, 32, 40000);
  RESET ();
  REFUSED (P3DC_ERROR_INVALID_ARGUMENT, 2, 32, 40000);
  REFUSED (P3DC_ERROR_INVALID_ARGUMENT, 4, 0, 40000);
  REFUSED (P3DC_ERROR_INVALID_ARGUMENT, 4, 32, 0);
  REFUSED (P3DC_ERROR_TOO_LARGE, P3DC_VOXELIZE_MAX_CHANNELS + 1, 32, 40000);
  REFUSED (P3DC_ERROR_TOO_LARGE, 4, P3DC_VOXELIZE_MAX_POINTS_PER_VOXEL + 1,
      40000);
  REFUSED (P3DC_ERROR_TOO_LARGE, 4, 32, P3DC_VOXELIZE_MAX_VOXELS + 1);
  /* 2^24 voxels of 1024 points of 64 channels: 2^42 bytes. */
  REFUSED (P3DC_ERROR_TOO_LARGE, 64, 1024, P3DC_VOXELIZE_MAX_VOXELS);
  RESET ();
  size[0] = 1e-6;               /* 69 million cells along x */
  REFUSED (P3DC_ERROR_TOO_LARGE, 4, 32, 40000);
  RESET ();
  size[0] = size[1] = 0.01;     /* 6912 x 7936 x 1: under 2^31 cells */
  fail_unless_equals_int (p3dc_voxelize_params_init (&p, size, range, 4, 32,
          40000), P3DC_OK);
  fail_unless (p.grid[0] == 6912 && p.grid[1] == 7936);
  RESET ();
  size[0] = size[1] = 0.001;    /* 69120 x 79360: too many cells */
  REFUSED (P3DC_ERROR_TOO_LARGE, 4, 32, 40000);
#undef REFUSED
#undef RESET

  fail_unless_equals_int (p3dc_voxelize_params_init (NULL, kitti_size,
          kitti_range, 4, 32, 40000), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_voxelize_params_check (NULL),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_voxelize_params_init (&p, kitti_size,
          kitti_range, 4, 32, 40000), P3DC_OK);
  p.voxel_size[0] = -1.0f;
  fail_unless_equals_int (p3dc_voxelize_params_check (&p),
      P3DC_ERROR_INVALID_ARGUMENT);
  p.voxel_size[0] = 0.16f;
  p.grid[2] = 0;
  fail_unless_equals_int (p3dc_voxelize_params_check (&p),
      P3DC_ERROR_INVALID_ARGUMENT);
}

GST_END_TEST;

/* Small random clouds on small grids: voxels fill up and overflow, some
 * points fall outside, a few are not finite. */
GST_START_TEST (test_random_clouds)
{
  guint seed;

  for (seed = 1; seed <= 400; seed++) {
    P3dTestRng rng;
    gdouble size[3], min[3];
    guint cells[3], a, channels, max_points, max_voxels;
    gsize n, i;
    gfloat *points;
    P3dcVoxelizeParams params;
    gchar *what;

    p3d_test_rng_init (&rng, seed);
    channels = 3 + p3d_test_rng_below (&rng, 3);
    for (a = 0; a < 3; a++) {
      size[a] = 0.05 + 0.05 * p3d_test_rng_below (&rng, 8);
      min[a] = -1.0 + 0.25 * p3d_test_rng_below (&rng, 8);
      cells[a] = 1 + p3d_test_rng_below (&rng, a == 2 ? 4 : 9);
    }
    max_points = 1 + p3d_test_rng_below (&rng, seed % 4 == 0 ? 70 : 12);
    max_voxels = 1 + p3d_test_rng_below (&rng, seed % 3 == 0 ? 10 : 90);
    voxelize_test_params (&params, size, min, cells, channels, max_points,
        max_voxels);
    n = p3d_test_rng_below (&rng, seed % 5 == 0 ? 3000 : 600);
    points = g_new (gfloat, n * channels + 1);
    for (i = 0; i < n; i++) {
      gfloat xyz[3];
      guint special = p3d_test_rng_below (&rng, 100);

      for (a = 0; a < 3; a++) {
        gdouble extent = size[a] * cells[a];

        xyz[a] = p3d_test_rng_uniform (&rng, min[a] - 0.1 * extent,
            min[a] + 1.1 * extent);
      }
      if (special == 0)
        xyz[p3d_test_rng_below (&rng, 3)] = NAN;
      else if (special == 1)
        xyz[p3d_test_rng_below (&rng, 3)] = -INFINITY;
      else if (special == 2)
        xyz[p3d_test_rng_below (&rng, 3)] = params.range_min[0];
      else if (special == 3 && i > 0)
        memcpy (xyz, points + (i - 1) * channels, sizeof (xyz));
      voxelize_test_set_point (points, i, channels, xyz[0], xyz[1], xyz[2],
          (gfloat) i);
      if (special == 4 && channels > 3)
        points[i * channels + 3] = NAN;
    }
    what = g_strdup_printf ("seed %u (%" G_GSIZE_FORMAT " points, grid %ux%ux"
        "%u, %u channels, max_points %u, max_voxels %u)", seed, n, cells[0],
        cells[1], cells[2], channels, max_points, max_voxels);
    check_cloud (&params, points, n, what, NULL);
    g_free (what);
    g_free (points);
  }
}

GST_END_TEST;

/* One voxel given max_points - 1 .. max_points + 2 points, interleaved with
 * points of another voxel: the first max_points in input order are kept. */
GST_START_TEST (test_max_points_edges)
{
  const gdouble size[3] = { 1, 1, 1 }, min[3] = { 0, 0, 0 };
  const guint cells[3] = { 4, 4, 2 };
  guint max_points, extra;

  for (max_points = 1; max_points <= 40; max_points += 13) {
    for (extra = 0; extra <= 3; extra++) {
      guint n_first = max_points + extra - 1, n = 2 * n_first, i;
      gfloat *points = g_new (gfloat, n * 4 + 1);
      P3dcVoxelizeParams params;
      VoxelizeTestResult r;
      gchar *what;

      voxelize_test_params (&params, size, min, cells, 4, max_points, 8);
      for (i = 0; i < n; i++) {
        if (i % 2 == 0)
          voxelize_test_set_point (points, i, 4, 0.5f, 2.25f, 1.5f, (gfloat) i);
        else
          voxelize_test_set_point (points, i, 4, 3.5f, 0.5f, 0.5f, (gfloat) i);
      }
      what = g_strdup_printf ("max_points %u, %u points in a voxel",
          max_points, n_first);
      check_cloud (&params, points, n, what, &r);
      fail_unless_equals_int (r.count, n_first > 0 ? 2 : 0);
      if (n_first > 0) {
        guint kept = MIN (n_first, max_points);

        fail_unless_equals_int (r.num_points[0], kept);
        fail_unless_equals_int (r.stats.points_over_max_points,
            2 * (n_first - kept));
        /* (0, z, y, x) of the first voxel, and its last kept point. */
        fail_unless (r.coords[1] == 1 && r.coords[2] == 2 && r.coords[3] == 0);
        fail_unless (r.voxels[(kept - 1) * 4 + 3] == 2 * (kept - 1) + 3);
      }
      voxelize_test_result_clear (&r);
      g_free (what);
      g_free (points);
    }
  }
}

GST_END_TEST;

/* max_voxels - 1 .. max_voxels + 2 distinct cells, each given twice. */
GST_START_TEST (test_max_voxels_edges)
{
  const gdouble size[3] = { 0.5, 0.5, 0.5 }, min[3] = { -1, -1, -1 };
  const guint cells[3] = { 4, 4, 4 };
  guint max_voxels, extra;

  for (max_voxels = 1; max_voxels <= 33; max_voxels += 8) {
    for (extra = 0; extra <= 3; extra++) {
      guint n_cells = max_voxels + extra - 1, n = 2 * n_cells, i;
      gfloat *points = g_new (gfloat, n * 3 + 1);
      P3dcVoxelizeParams params;
      VoxelizeTestResult r;
      gchar *what;

      voxelize_test_params (&params, size, min, cells, 3, 4, max_voxels);
      for (i = 0; i < n; i++) {
        guint cell = (i % n_cells) * 7 % 64;

        voxelize_test_set_point (points, i, 3, -0.75f + 0.5f * (cell % 4),
            -0.75f + 0.5f * (cell / 4 % 4), -0.75f + 0.5f * (cell / 16), 0);
      }
      what = g_strdup_printf ("max_voxels %u, %u cells", max_voxels, n_cells);
      check_cloud (&params, points, n, what, &r);
      fail_unless_equals_int (r.count, MIN (n_cells, max_voxels));
      fail_unless_equals_int (r.stats.voxels_dropped,
          n_cells - MIN (n_cells, max_voxels));
      fail_unless_equals_int (r.stats.points_over_max_voxels,
          2 * (n_cells - MIN (n_cells, max_voxels)));
      voxelize_test_result_clear (&r);
      g_free (what);
      g_free (points);
    }
  }
}

GST_END_TEST;

/* The largest float below @max whose quotient rounds up to the grid size,
 * if there is one within a few hundred ulps. */
static gboolean
find_rounding_up (gfloat min, gfloat size, guint32 grid, gfloat max,
    gfloat * found)
{
  gfloat p = max;
  guint i;

  for (i = 0; i < 400; i++) {
    p = nextafterf (p, -INFINITY);
    if ((p - min) / size == (gfloat) grid) {
      *found = p;
      return TRUE;
    }
  }
  return FALSE;
}

/* The cell of one point along @axis, or -1 when it is dropped. */
static gint
single_point_cell (const P3dcVoxelizeParams * params, const gfloat p[3],
    guint axis)
{
  gfloat point[4] = { p[0], p[1], p[2], 1.0f };
  VoxelizeTestResult r;
  gint cell;

  check_cloud (params, point, 1, "single point", &r);
  if (r.count == 1) {
    cell = r.coords[3 - axis];
    fail_unless_equals_int (r.stats.points_out_of_range, 0);
  } else {
    cell = -1;
    fail_unless_equals_int (r.stats.points_out_of_range, 1);
  }
  voxelize_test_result_clear (&r);
  return cell;
}

/* Points on every face of the range: the min face is kept (cell 0), -0 too
 * where the face is 0, the max face dropped; a point just below max whose
 * quotient rounds up to the grid size is dropped, never given the index
 * grid. */
GST_START_TEST (test_range_faces)
{
  const gdouble kitti_size[3] = { 0.16, 0.16, 4.0 };
  const gdouble kitti_range[6] = { 0, -39.68, -3, 69.12, 39.68, 1 };
  P3dcVoxelizeParams params;
  gfloat points[64 * 4];
  gfloat mid[3];
  guint n = 0, a, rounded = 0;
  VoxelizeTestResult r;

  fail_unless_equals_int (p3dc_voxelize_params_init (&params, kitti_size,
          kitti_range, 4, 32, 100), P3DC_OK);
  for (a = 0; a < 3; a++)
    mid[a] = params.range_min[a] + 0.5f * params.voxel_size[a]
        * params.grid[a];
  for (a = 0; a < 3; a++) {
    gfloat p[3], below, max_face = (gfloat) kitti_range[3 + a];
    gint last = (gint) params.grid[a] - 1;

    memcpy (p, mid, sizeof (p));
    p[a] = params.range_min[a];
    fail_unless_equals_int (single_point_cell (&params, p, a), 0);
    voxelize_test_set_point (points, n++, 4, p[0], p[1], p[2], 10.0f * a);
    p[a] = nextafterf (params.range_min[a], -INFINITY);
    fail_unless_equals_int (single_point_cell (&params, p, a), -1);
    voxelize_test_set_point (points, n++, 4, p[0], p[1], p[2], 10.0f * a + 1);
    if (params.range_min[a] == 0.0f) {
      /* KITTI's x face is 0: -0 lies on it (its quotient -0 is >= 0), where
       * the float below it, -2^-149, lies outside */
      p[a] = -0.0f;
      fail_unless_equals_int (single_point_cell (&params, p, a), 0);
      voxelize_test_set_point (points, n++, 4, p[0], p[1], p[2], 10.0f * a + 6);
    }
    p[a] = max_face;
    fail_unless_equals_int (single_point_cell (&params, p, a), -1);
    voxelize_test_set_point (points, n++, 4, p[0], p[1], p[2], 10.0f * a + 2);
    /* The max face as float arithmetic gives it: kept or dropped as its
     * quotient says, never a cell == grid (the oracle checks which). */
    p[a] = params.range_min[a] + params.voxel_size[a] * params.grid[a];
    fail_unless (single_point_cell (&params, p, a) <= last);
    voxelize_test_set_point (points, n++, 4, p[0], p[1], p[2], 10.0f * a + 3);
    if (find_rounding_up (params.range_min[a], params.voxel_size[a],
            params.grid[a], max_face, &below)) {
      /* Below max in float, but its cell would be grid: dropped. */
      p[a] = below;
      fail_unless_equals_int (single_point_cell (&params, p, a), -1);
      voxelize_test_set_point (points, n++, 4, p[0], p[1], p[2], 10.0f * a + 4);
      rounded++;
    }
    /* The largest value whose quotient stays below the grid: last cell. */
    p[a] = max_face;
    while ((p[a] - params.range_min[a]) / params.voxel_size[a]
        >= (gfloat) params.grid[a])
      p[a] = nextafterf (p[a], -INFINITY);
    fail_unless_equals_int (single_point_cell (&params, p, a), last);
    voxelize_test_set_point (points, n++, 4, p[0], p[1], p[2], 10.0f * a + 5);
  }
  /* The KITTI y and z axes have such values; if the constants change, this
   * test must find others. */
  fail_unless (rounded >= 2, "only %u axes round up below max", rounded);
  check_cloud (&params, points, n, "range faces", &r);
  fail_unless_equals_int (r.stats.points_in, n);
  for (a = 0; a < r.count; a++) {
    fail_unless (r.coords[4 * a + 1] >= 0
        && r.coords[4 * a + 1] < (gint32) params.grid[2]);
    fail_unless (r.coords[4 * a + 2] >= 0
        && r.coords[4 * a + 2] < (gint32) params.grid[1]);
    fail_unless (r.coords[4 * a + 3] >= 0
        && r.coords[4 * a + 3] < (gint32) params.grid[0]);
  }
  voxelize_test_result_clear (&r);
}

GST_END_TEST;

/* NaN and infinities in each coordinate are dropped as non-finite, even
 * when another coordinate is out of range; a NaN intensity (with its
 * payload) is copied as it is. */
GST_START_TEST (test_nonfinite)
{
  const gdouble size[3] = { 1, 1, 1 }, min[3] = { 0, 0, 0 };
  const guint cells[3] = { 2, 2, 2 };
  const gfloat bad[3] = { NAN, INFINITY, -INFINITY };
  gfloat points[40 * 4];
  guint32 payload_nan = 0x7fc01234u, signalling_nan = 0xff800001u;
  P3dcVoxelizeParams params;
  guint n = 0, a, b;
  VoxelizeTestResult r;

  voxelize_test_params (&params, size, min, cells, 4, 8, 8);
  for (a = 0; a < 3; a++) {
    for (b = 0; b < 3; b++) {
      gfloat p[3] = { 0.5f, 0.5f, 0.5f };

      p[a] = bad[b];
      voxelize_test_set_point (points, n++, 4, p[0], p[1], p[2], 0);
      p[(a + 1) % 3] = 100.0f;  /* also out of range: still non-finite */
      voxelize_test_set_point (points, n++, 4, p[0], p[1], p[2], 0);
    }
  }
  voxelize_test_set_point (points, n, 4, 1.5f, 0.5f, 0.5f, 0);
  memcpy (&points[n * 4 + 3], &payload_nan, 4);
  n++;
  voxelize_test_set_point (points, n, 4, 1.5f, 0.5f, 0.5f, 0);
  memcpy (&points[n * 4 + 3], &signalling_nan, 4);
  n++;
  voxelize_test_set_point (points, n++, 4, 0.5f, 1.5f, 0.5f, INFINITY);
  check_cloud (&params, points, n, "non-finite", &r);
  fail_unless_equals_int (r.stats.points_nonfinite, 18);
  fail_unless_equals_int (r.stats.points_out_of_range, 0);
  fail_unless_equals_int (r.count, 2);
  fail_unless (memcmp (&r.voxels[3], &payload_nan, 4) == 0);
  fail_unless (memcmp (&r.voxels[7], &signalling_nan, 4) == 0);
  fail_unless (isinf (r.voxels[8 * 4 + 3]));
  voxelize_test_result_clear (&r);
}

GST_END_TEST;

GST_START_TEST (test_empty_and_one_point)
{
  const gdouble size[3] = { 0.2, 0.2, 8 }, min[3] = { -51.2, -51.2, -5 };
  const guint cells[3] = { 512, 512, 1 };
  gfloat point[5] = { 1.0f, -2.0f, 0.5f, 7.0f, 0.25f };
  P3dcVoxelizeParams params;
  VoxelizeTestResult r;

  voxelize_test_params (&params, size, min, cells, 5, 20, 1000);
  check_cloud (&params, NULL, 0, "empty sweep", &r);
  fail_unless_equals_int (r.count, 0);
  fail_unless_equals_int (r.stats.points_in, 0);
  voxelize_test_result_clear (&r);

  check_cloud (&params, point, 1, "one point", &r);
  fail_unless_equals_int (r.count, 1);
  fail_unless_equals_int (r.num_points[0], 1);
  fail_unless (memcmp (r.voxels, point, sizeof (point)) == 0);
  fail_unless (r.coords[0] == 0 && r.coords[1] == 0 && r.coords[2] == 246
      && r.coords[3] == 261);
  voxelize_test_result_clear (&r);
}

GST_END_TEST;

/* channels 3, 4 and 5 on a CenterPoint-like 3D grid, with clusters dense
 * enough to fill voxels. */
GST_START_TEST (test_3d_grid_channels)
{
  const gdouble size[3] = { 0.075, 0.075, 0.2 };
  const gdouble range[6] = { -54, -54, -5, 54, 54, 3 };
  guint channels;

  for (channels = 3; channels <= 5; channels++) {
    P3dcVoxelizeParams params;
    P3dTestRng rng;
    gsize n = 4000, i;
    gfloat *points = g_new (gfloat, n * channels);
    gchar *what;

    fail_unless_equals_int (p3dc_voxelize_params_init (&params, size, range,
            channels, 10, 300), P3DC_OK);
    p3d_test_rng_init (&rng, 77 + channels);
    for (i = 0; i < n; i++) {
      gfloat cx = 10.0f * (i % 3), cy = -5.0f * (i % 5);

      voxelize_test_set_point (points, i, channels,
          cx + p3d_test_rng_uniform (&rng, 0, 0.4f),
          cy + p3d_test_rng_uniform (&rng, 0, 0.4f), p3d_test_rng_uniform (&rng,
              -5.5f, 3.5f), (gfloat) i);
    }
    what = g_strdup_printf ("3D grid, %u channels", channels);
    check_cloud (&params, points, n, what, NULL);
    g_free (what);
    g_free (points);
  }
}

GST_END_TEST;

GST_START_TEST (test_bad_arguments)
{
  const gdouble size[3] = { 1, 1, 1 }, min[3] = { 0, 0, 0 };
  const guint cells[3] = { 2, 2, 2 };
  P3dcVoxelizeParams params;
  gfloat point[3] = { 0.5f, 0.5f, 0.5f };
  VoxelizeTestResult r;
  P3dcVoxelizeOutput out;

  voxelize_test_params (&params, size, min, cells, 3, 2, 2);
  voxelize_test_result_init (&r, &params);
  fail_unless_equals_int (p3dc_voxelize_cpu (&params, NULL, 1, &r.out),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_voxelize_cpu (&params, point, 1, NULL),
      P3DC_ERROR_INVALID_ARGUMENT);
  out = r.out;
  out.coords = NULL;
  fail_unless_equals_int (p3dc_voxelize_cpu (&params, point, 1, &out),
      P3DC_ERROR_INVALID_ARGUMENT);
  params.channels = 2;
  fail_unless_equals_int (p3dc_voxelize_cpu (&params, point, 1, &r.out),
      P3DC_ERROR_INVALID_ARGUMENT);
  params.channels = 3;
  /* Stats are optional. */
  out = r.out;
  out.stats = NULL;
  fail_unless_equals_int (p3dc_voxelize_cpu (&params, point, 1, &out), P3DC_OK);
  fail_unless_equals_int (r.count, 1);
  voxelize_test_result_clear (&r);
}

GST_END_TEST;

/* The SHA-256 of the reference's output on two fixed clouds, pinned, so
 * that "the same bytes on every machine" is checked across machines,
 * compilers and C libraries, not only within one process (the CUDA path is
 * compared with this one bit for bit by voxelize_cuda). The cloud is drawn
 * from the seeded SplitMix64 generator, whose floats are exact; its own hash
 * is pinned too, so a failure says whether the input or the output moved.
 * The hashes were computed once by this test on x86-64 (gcc 12, glibc,
 * -ffp-contract=off), printed by its failure message, and written here;
 * after a deliberate change of the output, take the new values from the
 * message once the other tests pass. */
static gchar *
sha256_of (const void *data, gsize size)
{
  return g_compute_checksum_for_data (G_CHECKSUM_SHA256, data, size);
}

static void
assert_sha256 (const void *data, gsize size, const gchar * expected,
    const gchar * what)
{
  gchar *actual = sha256_of (data, size);

  fail_unless (strcmp (actual, expected) == 0,
      "%s (%" G_GSIZE_FORMAT " bytes): SHA-256 %s, pinned %s", what, size,
      actual, expected);
  g_free (actual);
}

GST_START_TEST (test_golden_hashes)
{
  static const struct
  {
    const gchar *name;
    gdouble size[3];
    gdouble min[3];
    guint cells[3];
    guint channels, max_points, max_voxels;
    guint n_points;
    guint64 seed;
    guint32 count;
    const gchar *points, *voxels, *num_points, *coords;
  } cases[] = {
    /* pillars, KITTI-like settings on a small grid: no cap is hit */
    {"pillars", {0.16, 0.16, 4.0}, {0.0, -8.0, -3.0}, {100, 100, 1},
        4, 32, 12000, 20000, 1, 8137,
        "cb5eeb89f9d4551301375bc98ab69ccee5353aa72d489a9db099bce60857e490",
        "d53c6235d4217ba1ac4d4a71e6a6a4af43e4dd269f9cf83b665c1e7e6954d794",
        "899cee0241595761d7d471e6dbad481c0b4876ce44243e4fb3e6350d59632aef",
        "3b7694992f2bd0e93a35af27112b94b294a7d23f888a44a9c99b70d5c354464a"},
    /* a 3D grid with both caps hit, NaN and out-of-range points */
    {"3d", {0.2, 0.2, 0.25}, {-2.0, -2.0, -1.0}, {20, 20, 8},
        5, 5, 600, 12000, 2, 600,
        "4559b04c01048bd9e4dad20cc8d32f32da2be43ab90a5828abec5ca8122b1593",
        "d93019f4317d4269628475459b6283a40c40ef6f33a9097245ec36bff4ad562d",
        "c3b2f1a1ce66d96069cd231e34a3eb6a9aa33cc6f4924bc062868e324fa94c97",
        "90724c6a0f63e7c07f597a06345095570c25ee638b4f18463bf3c777d412a968"},
  };
  guint c;

  for (c = 0; c < G_N_ELEMENTS (cases); c++) {
    P3dcVoxelizeParams params;
    P3dTestRng rng;
    VoxelizeTestResult r;
    gfloat *points;
    guint channels = cases[c].channels, i, a;
    gchar *what;

    voxelize_test_params (&params, cases[c].size, cases[c].min, cases[c].cells,
        channels, cases[c].max_points, cases[c].max_voxels);
    p3d_test_rng_init (&rng, cases[c].seed);
    points = g_new (gfloat, (gsize) cases[c].n_points * channels);
    for (i = 0; i < cases[c].n_points; i++) {
      gfloat xyz[3];

      /* a tenth of the points outside the grid on some axis */
      for (a = 0; a < 3; a++) {
        gfloat extent = (gfloat) (cases[c].size[a] * cases[c].cells[a]);

        xyz[a] = p3d_test_rng_uniform (&rng,
            (gfloat) cases[c].min[a] - 0.03f * extent,
            (gfloat) cases[c].min[a] + 1.03f * extent);
      }
      if (p3d_test_rng_below (&rng, 200) == 0)
        xyz[p3d_test_rng_below (&rng, 3)] = NAN;
      voxelize_test_set_point (points, i, channels, xyz[0], xyz[1], xyz[2],
          p3d_test_rng_uniform (&rng, 0.0f, 1.0f));
    }
    what = g_strdup_printf ("%s: the input cloud", cases[c].name);
    assert_sha256 (points, (gsize) cases[c].n_points * channels *
        sizeof (gfloat), cases[c].points, what);
    g_free (what);

    voxelize_test_result_init (&r, &params);
    fail_unless_equals_int (p3dc_voxelize_cpu (&params, points,
            cases[c].n_points, &r.out), P3DC_OK);
    fail_unless_equals_int (r.count, cases[c].count);
    what = g_strdup_printf ("%s: voxel points", cases[c].name);
    assert_sha256 (r.voxels, (gsize) params.max_voxels * params.max_points *
        channels * sizeof (gfloat), cases[c].voxels, what);
    g_free (what);
    what = g_strdup_printf ("%s: points per voxel", cases[c].name);
    assert_sha256 (r.num_points, (gsize) params.max_voxels *
        sizeof (guint32), cases[c].num_points, what);
    g_free (what);
    what = g_strdup_printf ("%s: voxel coordinates", cases[c].name);
    assert_sha256 (r.coords, (gsize) params.max_voxels * 4 * sizeof (gint32),
        cases[c].coords, what);
    g_free (what);
    voxelize_test_result_clear (&r);
    g_free (points);
  }
}

GST_END_TEST;

static Suite *
voxelize_suite (void)
{
  Suite *s = suite_create ("voxelize");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_params_init);
  tcase_add_test (tc, test_random_clouds);
  tcase_add_test (tc, test_max_points_edges);
  tcase_add_test (tc, test_max_voxels_edges);
  tcase_add_test (tc, test_range_faces);
  tcase_add_test (tc, test_nonfinite);
  tcase_add_test (tc, test_empty_and_one_point);
  tcase_add_test (tc, test_3d_grid_channels);
  tcase_add_test (tc, test_bad_arguments);
  tcase_add_test (tc, test_golden_hashes);
  return s;
}

P3D_CHECK_MAIN (voxelize);
