/* bevpool on the device against the reference: the same geometry (same
 * cells, same order: the device geometry is downloaded and compared array
 * for array) and the same pooled output bit for bit (the summation order is
 * defined in bevpool.h and both paths follow it with fmaf), in all four
 * format pairs.  Random configurations, the hand-built fault cases, channel
 * counts that are not multiples of 4 and more than one batch of the cell
 * kernel, cells of thousands of runs, columns of 1024 and 2048 rows,
 * non-finite inputs, tiny inputs (runs that sum to -0, subnormal sums),
 * nuScenes at full size with its real calibration, run-sum buffers too
 * small for the geometry's runs (bevpool-private.h), whose overflow the
 * pooling sums where it adds them, points within ulps of
 * a cell boundary, updates and a pooling inside a caller's stream capture
 * among updates launched from the geometry's own graph, and updates that
 * move the cameras of one column-kernel batch of two. */
#include <math.h>
#include <string.h>

#include "bevpool-private.h"
#include "p3dtest-bevpool.h"
#include "p3dtest-capture.h"
#include "half.h"

/* Only for a report when outputs differ: the reference is itself checked
 * against the float64 oracle in bevpool.c. */
#define F32_RELATIVE 1e-5
#define F16_RELATIVE 1e-2

typedef struct
{
  P3dcCudaStream stream;
  P3dcBevGeometry *reference;   /* computed on the host */
  P3dcBevGeometry *downloaded;  /* the device's, copied back */
  P3dcBevGeometryCuda *device;
} Geometries;

/* The device's two views of its runs agree: every slot's run has that
 * slot (the run kernel writes a run's sum at run_slot[id], the cell kernel
 * and the download read slot_run[slot]), and the columns' run counts add
 * up to the runs the cells hold. */
static void
check_run_slots (const P3dcBevGeometryCuda * device, P3dcCudaStream stream,
    const gchar * what)
{
  guint32 runs = 0, total = 0, s;
  guint32 *column_runs = g_new (guint32, device->columns);
  guint32 *slot_run, *run_slot;

  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (&runs,
          device->cell_start + device->cells, sizeof (runs), stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (column_runs,
          device->column_runs, device->columns * sizeof (guint32), stream),
      P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (stream), P3DC_OK);
  for (s = 0; s < device->columns; s++)
    total += column_runs[s];
  fail_unless (total == runs, "%s: the columns hold %u runs, the cells %u",
      what, total, runs);
  slot_run = g_new (guint32, MAX (runs, 1));
  run_slot = g_new (guint32, device->frustum_points);
  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (slot_run, device->slot_run,
          runs * sizeof (guint32), stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (run_slot, device->run_slot,
          device->frustum_points * sizeof (guint32), stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (stream), P3DC_OK);
  for (s = 0; s < runs; s++) {
    guint32 id = slot_run[s];

    fail_unless (id < device->frustum_points
        && id % device->column_points < column_runs[id /
            device->column_points] && run_slot[id] == s,
        "%s: slot %u holds run %u, which is not a run with that slot", what,
        s, id);
  }
  g_free (column_runs);
  g_free (slot_run);
  g_free (run_slot);
}

/* The default room for run sums. */
#define DEFAULT_CAPACITY G_MAXUINT32

/* Downloads the device's geometry, just computed on g->stream, and
 * compares it with the reference's, computed here from @calib. */
static void
check_geometries (Geometries * g, const BevpoolTestCase * tc,
    const P3dcCameraCalib * calib, const gchar * what)
{
  const guint32 *a, *b;
  guint32 cells = tc->params.nx * tc->params.ny * tc->params.nz, kept, i;

  fail_unless_equals_int (p3dc_bevpool_geometry_compute_cpu (g->reference,
          calib), P3DC_OK);
  fail_unless_equals_int (p3dc_bevpool_geometry_cuda_download (g->device,
          g->downloaded, g->stream), P3DC_OK);

  kept = p3dc_bevpool_geometry_kept (g->reference);
  fail_unless (p3dc_bevpool_geometry_kept (g->downloaded) == kept,
      "%s: the device keeps %u points, the reference %u", what,
      p3dc_bevpool_geometry_kept (g->downloaded), kept);
  a = p3dc_bevpool_geometry_cell_start (g->reference);
  b = p3dc_bevpool_geometry_cell_start (g->downloaded);
  for (i = 0; i <= cells; i++)
    if (a[i] != b[i])
      fail ("%s: cell %u starts at sorted point %u on the device, %u in the "
          "reference", what, i, b[i], a[i]);
  a = p3dc_bevpool_geometry_points (g->reference);
  b = p3dc_bevpool_geometry_points (g->downloaded);
  for (i = 0; i < kept; i++)
    if (a[i] != b[i])
      fail ("%s: sorted point %u is frustum point %u on the device, %u in "
          "the reference", what, i, b[i], a[i]);
  check_run_slots (g->device, g->stream, what);
}

/* The geometries of @tc on both paths, nothing computed yet, the device's
 * made with room for @capacity run sums (DEFAULT_CAPACITY: the default). */
static void
geometries_new (Geometries * g, const BevpoolTestCase * tc, guint32 capacity)
{
  memset (g, 0, sizeof (*g));
  fail_unless_equals_int (p3dc_cuda_stream_create (&g->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_bevpool_geometry_new (&tc->params,
          &g->reference), P3DC_OK);
  fail_unless_equals_int (p3dc_bevpool_geometry_new (&tc->params,
          &g->downloaded), P3DC_OK);
  if (capacity != DEFAULT_CAPACITY) {
    fail_unless_equals_int (p3dc_bevpool_geometry_cuda_new_capacity
        (&tc->params, capacity, &g->device), P3DC_OK);
  } else {
    fail_unless_equals_int (p3dc_bevpool_geometry_cuda_new (&tc->params,
            &g->device), P3DC_OK);
  }
}

/* geometries_new(), then @tc's geometries computed and compared. */
static void
geometries_compute_capacity (Geometries * g, const BevpoolTestCase * tc,
    guint32 capacity, const gchar * what)
{
  geometries_new (g, tc, capacity);
  fail_unless_equals_int (p3dc_bevpool_geometry_compute_cuda (g->device,
          tc->calib, g->stream), P3DC_OK);
  check_geometries (g, tc, tc->calib, what);
}

static void
geometries_compute (Geometries * g, const BevpoolTestCase * tc,
    const gchar * what)
{
  geometries_compute_capacity (g, tc, DEFAULT_CAPACITY, what);
}

static void
geometries_clear (Geometries * g)
{
  p3dc_bevpool_geometry_free (g->reference);
  p3dc_bevpool_geometry_free (g->downloaded);
  p3dc_bevpool_geometry_cuda_free (g->device);
  fail_unless_equals_int (p3dc_cuda_stream_destroy (g->stream), P3DC_OK);
}

static void
compare_outputs (const P3dcBevPoolParams * params, const void *expected,
    const void *actual, gboolean half_out, const gchar * what)
{
  gsize size = p3dc_bevpool_output_size (params), i;
  gsize plane = (gsize) params->nx * params->ny;
  gsize value_size = half_out ? 2 : 4;

  if (memcmp (expected, actual, size * value_size) == 0)
    return;
  for (i = 0; i < size; i++) {
    if (memcmp ((const guint8 *) expected + i * value_size,
            (const guint8 *) actual + i * value_size, value_size) != 0) {
      gdouble e = half_out ? p3dc_half_to_float (((const guint16 *)
              expected)[i]) : ((const gfloat *) expected)[i];
      gdouble a = half_out ? p3dc_half_to_float (((const guint16 *)
              actual)[i]) : ((const gfloat *) actual)[i];
      gdouble relative = half_out ? F16_RELATIVE : F32_RELATIVE;

      fail ("%s: output %" G_GSIZE_FORMAT " (channel %" G_GSIZE_FORMAT
          ", cell %" G_GSIZE_FORMAT ") is %.9g on the device, %.9g in the "
          "reference: not bit-exact, %s %g relative", what, i, i / plane,
          i % plane, a, e, fabs (a - e) <= relative * fabs (e) ?
          "but within" : "and not within", relative);
    }
  }
}

/* What check_pooling writes over its random inputs. */
typedef enum
{
  SPOIL_NONE,
  SPOIL_NON_FINITE,             /* poison () */
  SPOIL_TINY,                   /* bevpool_test_tiny_bins () */
} Spoil;

/* NaN (with and without payload, both signs), +Inf and -Inf over about one
 * value in 50 of the features and the depth, in their storage format. */
static void
poison (P3dTestRng * rng, gpointer features, gsize n_features, gpointer depth,
    gsize n_depth, gboolean half)
{
  static const guint32 f32[] = { 0x7fc00000u, 0x7fa00001u, 0xffc00000u,
    0x7f800000u, 0xff800000u
  };
  static const guint16 f16[] = { 0x7e00u, 0x7d01u, 0xfe00u, 0x7c00u, 0xfc00u };
  gsize i;

  for (i = 0; i < n_features + n_depth; i++) {
    gpointer values = i < n_features ? features : depth;
    gsize k = i < n_features ? i : i - n_features;
    guint32 pick = p3d_test_rng_u32 (rng);

    if (pick % 50 != 0)
      continue;
    if (half)
      ((guint16 *) values)[k] = f16[pick / 50 % G_N_ELEMENTS (f16)];
    else
      memcpy ((guint8 *) values + 4 * k, &f32[pick / 50 % G_N_ELEMENTS (f32)],
          4);
  }
}

/* Pools on the device into @d_out, first filled with 0xff bytes, and
 * copies the @out_size values back into @host (synchronizing). */
static void
pool_into (const Geometries * g, const void *features, const void *depth,
    gboolean half_in, void *d_out, gboolean half_out, gsize out_size,
    gpointer host)
{
  fail_unless_equals_int (p3dc_cuda_memset (d_out, 0xff, out_size * 4,
          g->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_bevpool_cuda (g->device, features, depth,
          half_in, d_out, half_out, g->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (host, d_out,
          out_size * (half_out ? 2 : 4), g->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (g->stream), P3DC_OK);
}

/* Pools in all four format pairs on both paths and compares them; the
 * device features start @feature_offset bytes into their buffer, to try
 * unaligned rows; @spoil writes non-finite or tiny values over some
 * inputs. */
static void
check_pooling (const BevpoolTestCase * tc, const Geometries * g,
    P3dTestRng * rng, gsize feature_offset, Spoil spoil, const gchar * what)
{
  const P3dcBevPoolParams *params = &tc->params;
  gsize out_size = p3dc_bevpool_output_size (params);
  gsize n_features = p3dc_bevpool_features_size (params);
  gsize n_depth = p3dc_bevpool_depth_size (params);
  gpointer expected = g_malloc (out_size * 4), actual = g_malloc (out_size * 4);
  gpointer again = g_malloc (out_size * 4);
  void *d_features = NULL, *d_depth = NULL, *d_out = NULL, *d_again = NULL;
  gint half_in, half_out;

  fail_unless_equals_int (p3dc_cuda_malloc (&d_features,
          n_features * 4 + feature_offset), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_malloc (&d_depth, n_depth * 4), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_malloc (&d_out, out_size * 4), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_malloc (&d_again, out_size * 4), P3DC_OK);
  for (half_in = 0; half_in < 2; half_in++) {
    gsize value_size = half_in ? 2 : 4;
    guint8 *features_at = (guint8 *) d_features + feature_offset;
    gpointer raw_features, raw_depth;
    gfloat *features, *depth;

    bevpool_test_random_inputs (rng, params, half_in, &raw_features,
        &raw_depth, &features, &depth);
    if (spoil == SPOIL_NON_FINITE)
      poison (rng, raw_features, n_features, raw_depth, n_depth, half_in);
    else if (spoil == SPOIL_TINY)
      bevpool_test_tiny_bins (rng, params, half_in, raw_depth, depth);
    fail_unless_equals_int (p3dc_cuda_memcpy_htod (features_at, raw_features,
            n_features * value_size, g->stream), P3DC_OK);
    fail_unless_equals_int (p3dc_cuda_memcpy_htod (d_depth, raw_depth,
            n_depth * value_size, g->stream), P3DC_OK);
    for (half_out = 0; half_out < 2; half_out++) {
      gsize out_bytes = out_size * (half_out ? 2 : 4);
      gchar *label = g_strdup_printf ("%s, %s in, %s out", what,
          half_in ? "F16" : "F32", half_out ? "F16" : "F32");

      fail_unless_equals_int (p3dc_bevpool_cpu (g->reference, raw_features,
              raw_depth, half_in, expected, half_out), P3DC_OK);
      /* Garbage first: the kernel must write every element. */
      pool_into (g, features_at, d_depth, half_in, d_out, half_out,
          out_size, actual);
      compare_outputs (params, expected, actual, half_out, label);
      /* Once more into another buffer: deterministic, and the pooling's
       * graph takes the new output; then with the same tensors again, the
       * graph as it is. */
      pool_into (g, features_at, d_depth, half_in, d_again, half_out,
          out_size, again);
      fail_unless (memcmp (actual, again, out_bytes) == 0,
          "%s: a second run differs", label);
      pool_into (g, features_at, d_depth, half_in, d_again, half_out,
          out_size, again);
      fail_unless (memcmp (actual, again, out_bytes) == 0,
          "%s: a third run, with the second's tensors, differs", label);
      g_free (label);
    }
    g_free (raw_features);
    g_free (raw_depth);
    g_free (features);
    g_free (depth);
  }
  fail_unless_equals_int (p3dc_cuda_free (d_features), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_free (d_depth), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_free (d_out), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_free (d_again), P3DC_OK);
  g_free (expected);
  g_free (actual);
  g_free (again);
}

/* The device geometry against the oracle too, and the pooling. */
static void
check_case_capacity (const BevpoolTestCase * tc, guint32 capacity,
    P3dTestRng * rng, gsize feature_offset, Spoil spoil, const gchar * what)
{
  Geometries g;
  guint32 *oracle_cells =
      g_new (guint32, p3dc_bevpool_depth_size (&tc->params));

  geometries_compute_capacity (&g, tc, capacity, what);
  bevpool_test_oracle_cells (&tc->params, tc->calib, oracle_cells);
  bevpool_test_check_geometry (g.downloaded, &tc->params, oracle_cells, what);
  check_pooling (tc, &g, rng, feature_offset, spoil, what);
  geometries_clear (&g);
  g_free (oracle_cells);
}

static void
check_case (const BevpoolTestCase * tc, P3dTestRng * rng,
    gsize feature_offset, const gchar * what)
{
  check_case_capacity (tc, DEFAULT_CAPACITY, rng, feature_offset, SPOIL_NONE,
      what);
}

/* @n random cases, seeds @first_seed on, each with room for @capacity run
 * sums, their inputs spoilt as @spoil says. */
static void
check_random_cases (guint first_seed, guint n, guint32 capacity,
    Spoil spoil, const gchar * label)
{
  guint seed;

  for (seed = first_seed; seed < first_seed + n; seed++) {
    BevpoolTestCase tc = { {0}, NULL };
    P3dTestRng rng;
    gchar *what = g_strdup_printf ("%s, seed %u", label, seed);

    p3d_test_rng_init (&rng, seed);
    bevpool_test_random_case (&rng, &tc);
    check_case_capacity (&tc, capacity, &rng, 0, spoil, what);
    g_free (what);
    bevpool_test_case_clear (&tc);
  }
}

GST_START_TEST (test_random_cases)
{
  guint seed;

  for (seed = 0; seed < 40; seed++) {
    BevpoolTestCase tc = { {0}, NULL };
    P3dTestRng rng;
    gchar *what;

    p3d_test_rng_init (&rng, 3000 + seed);
    bevpool_test_random_case (&rng, &tc);
    /* Every third case with several z cells. */
    if (seed % 3 == 2) {
      tc.params.zbound[0] = -4.0;
      tc.params.zbound[1] = 4.0;
      tc.params.zbound[2] = 2.0;
      fail_unless_equals_int (p3dc_bevpool_params_init (&tc.params), P3DC_OK);
    }
    what = g_strdup_printf ("seed %u (%u cameras, %u channels, %u x %u x %u "
        "frustum, %u x %u x %u grid, %s, %s)", 3000 + seed,
        tc.params.cameras, tc.params.channels, tc.params.depth_bins,
        tc.params.feat_height, tc.params.feat_width, tc.params.nx,
        tc.params.ny, tc.params.nz,
        tc.params.rounding == P3DC_BEV_ROUND_FLOOR ? "floor" : "truncate",
        tc.params.layout == P3DC_BEV_LAYOUT_XY ? "xy" : "yx");
    check_case (&tc, &rng, 0, what);
    g_free (what);
    bevpool_test_case_clear (&tc);
  }
}

GST_END_TEST;

GST_START_TEST (test_fault_cases)
{
  P3dTestRng rng;
  gint variant;

  p3d_test_rng_init (&rng, 17);
  for (variant = 0; variant < 2; variant++) {
    BevpoolTestCase tc = { {0}, NULL };

    bevpool_test_truncate_floor_case (variant ? P3DC_BEV_ROUND_FLOOR :
        P3DC_BEV_ROUND_TRUNCATE, &tc);
    check_case (&tc, &rng, 0, variant ? "floor" : "truncate");
    bevpool_test_case_clear (&tc);
  }
  {
    BevpoolTestCase tc = { {0}, NULL };

    bevpool_test_per_camera_aug_case (&rng, &tc);
    check_case (&tc, &rng, 0, "fault 1: each camera's own augmentation");
    bevpool_test_case_clear (&tc);
    bevpool_test_cell_zero_case (&tc);
    check_case (&tc, &rng, 0, "fault 2: points in cell 0");
    bevpool_test_case_clear (&tc);
  }
  for (variant = 0; variant < 2; variant++) {
    BevpoolTestCase tc = { {0}, NULL };

    bevpool_test_last_interval_case (variant, &tc);
    check_case (&tc, &rng, 0, "fault 3: the last interval");
    bevpool_test_case_clear (&tc);
  }
  for (variant = 0; variant < 4; variant++) {
    BevpoolTestCase tc = { {0}, NULL };

    bevpool_test_non_square_case (variant, &tc);
    check_case (&tc, &rng, 0, "fault 4: non-square grid");
    bevpool_test_case_clear (&tc);
  }
  /* The device divides only near a boundary (bevpool_geometry_stages.cuh):
   * here most points are within ulps of one. */
  for (variant = 0; variant < 6; variant++) {
    BevpoolTestCase tc = { {0}, NULL };
    gchar *what = g_strdup_printf ("cell boundaries, variant %d", variant);

    bevpool_test_boundary_case (variant, &tc);
    check_case (&tc, &rng, 0, what);
    g_free (what);
    bevpool_test_case_clear (&tc);
  }
}

GST_END_TEST;

/* Channel counts that are not multiples of 4 (the run sums' rows padded)
 * and of more than 96 channels (several batches of the cell kernel), and
 * features that start 4 bytes into their buffer (rows not 8- or 16-byte
 * aligned). */
GST_START_TEST (test_channels_and_alignment)
{
  static const guint channels[] = { 8, 12, 6, 7, 96, 97, 104, 200 };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (channels) * 2; i++) {
    BevpoolTestCase tc = { {0}, NULL };
    P3dTestRng rng;
    gsize offset = i < G_N_ELEMENTS (channels) ? 0 : 4;
    gchar *what;

    p3d_test_rng_init (&rng, 4000 + i);
    bevpool_test_random_case (&rng, &tc);
    tc.params.channels = channels[i % G_N_ELEMENTS (channels)];
    fail_unless_equals_int (p3dc_bevpool_params_init (&tc.params), P3DC_OK);
    what = g_strdup_printf ("%u channels, features at +%" G_GSIZE_FORMAT,
        tc.params.channels, offset);
    check_case (&tc, &rng, offset, what);
    g_free (what);
    bevpool_test_case_clear (&tc);
  }
}

GST_END_TEST;

/* Cells of thousands of points, each holding many runs: the geometry
 * ranks such a cell's runs with a whole warp, the pooling adds them one by
 * one. */
GST_START_TEST (test_heavy_cells)
{
  P3dTestRng rng;
  BevpoolTestCase tc = { {0}, NULL };

  p3d_test_rng_init (&rng, 18);
  /* 64 x 48 x 4 = 12288 points in one cell: 256 runs of 48 rows. */
  bevpool_test_one_cell_case (64, 48, 4, &tc);
  check_case (&tc, &rng, 0, "one cell of 12288 points");
  bevpool_test_case_clear (&tc);

  /* 128 x 64 x 16 = 131072 points in one cell: 2048 runs, placed by 128
   * blocks in no fixed order and ranked by id. */
  bevpool_test_one_cell_case (128, 64, 16, &tc);
  check_case (&tc, &rng, 0, "one cell of 131072 points");
  bevpool_test_case_clear (&tc);

  /* The same points over 4 x 3 cells of 16 m: uneven heavy cells. */
  bevpool_test_one_cell_case (64, 48, 4, &tc);
  tc.params.xbound[1] = 63.5;
  tc.params.xbound[2] = 16.0;
  tc.params.ybound[1] = 47.5;
  tc.params.ybound[2] = 16.0;
  fail_unless_equals_int (p3dc_bevpool_params_init (&tc.params), P3DC_OK);
  check_case (&tc, &rng, 0, "12 heavy cells");
  bevpool_test_case_clear (&tc);

  /* Columns of 1024 rows over 16 cells of 64 m along y, 20 channels: a
   * slice of rows then holds 8 channels (bevpool.cu), so the run sums are
   * made in 3 slices, 8 + 8 + 4 channels. */
  bevpool_test_one_cell_case (3, 1024, 5, &tc);
  tc.params.channels = 20;
  tc.params.ybound[1] = 1023.5;
  tc.params.ybound[2] = 64.0;
  fail_unless_equals_int (p3dc_bevpool_params_init (&tc.params), P3DC_OK);
  check_case (&tc, &rng, 0, "columns of 1024 rows, 20 channels");
  bevpool_test_case_clear (&tc);
}

GST_END_TEST;

/* Run-sum buffers smaller than the geometry's runs: none, one, and a few
 * dozen sums, so that the pooling sums the runs of the later slots again
 * where it adds them (bevpool.cu), on random cases, heavy cells and
 * nuScenes; and the sizes the device refuses. */
GST_START_TEST (test_small_sum_buffer)
{
  static const guint32 capacities[] = { 0, 1, 37 };
  P3dcBevGeometryCuda *device = NULL;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (capacities); i++) {
    gchar *label = g_strdup_printf ("room for %u run sums", capacities[i]);

    check_random_cases (5000 + 100 * i, 6, capacities[i], SPOIL_NONE, label);
    g_free (label);
    {
      BevpoolTestCase tc = { {0}, NULL };
      P3dTestRng rng;

      p3d_test_rng_init (&rng, 5099 + 100 * i);
      bevpool_test_one_cell_case (64, 48, 4, &tc);
      tc.params.xbound[1] = 63.5;
      tc.params.xbound[2] = 16.0;
      tc.params.ybound[1] = 47.5;
      tc.params.ybound[2] = 16.0;
      fail_unless_equals_int (p3dc_bevpool_params_init (&tc.params), P3DC_OK);
      check_case_capacity (&tc, capacities[i], &rng, 0, SPOIL_NONE,
          "12 heavy cells, a small run-sum buffer");
      bevpool_test_case_clear (&tc);
    }
  }
  {
    /* nuScenes with room for half its runs: the second half of the plane
     * pooled from the tensors. */
    BevpoolTestCase tc = { {0}, NULL };
    P3dTestRng rng;

    p3d_test_rng_init (&rng, 5400);
    bevpool_test_nuscenes_case (12, &tc);
    check_case_capacity (&tc, 60000, &rng, 0, SPOIL_NONE,
        "nuScenes, 60000 run sums");
    bevpool_test_case_clear (&tc);
  }

  /* A feature column of more points than a block holds. */
  {
    BevpoolTestCase tc = { {0}, NULL };

    bevpool_test_one_cell_case (2, 256, 97, &tc);
    fail_unless_equals_int (p3dc_bevpool_geometry_cuda_new (&tc.params,
            &device), P3DC_ERROR_TOO_LARGE);
    fail_unless (device == NULL);
    bevpool_test_case_clear (&tc);
    bevpool_test_one_cell_case (2, 256, 96, &tc);
    fail_unless_equals_int (p3dc_bevpool_geometry_cuda_new (&tc.params,
            &device), P3DC_OK);
    p3dc_bevpool_geometry_cuda_free (device);
    device = NULL;
    bevpool_test_case_clear (&tc);
    bevpool_test_one_cell_case (2, 2049, 1, &tc);
    fail_unless_equals_int (p3dc_bevpool_geometry_cuda_new (&tc.params,
            &device), P3DC_ERROR_TOO_LARGE);
    bevpool_test_case_clear (&tc);
  }
}

GST_END_TEST;

/* Geometry shapes the other cases miss: more cameras than one projection
 * launch takes (8), so that two launches fill the columns; and a grid of a
 * million cells (1000 x 1000), whose counts and starts CUB scans in more
 * than one tile. */
GST_START_TEST (test_geometry_shapes)
{
  guint seed;

  for (seed = 0; seed < 6; seed++) {
    BevpoolTestCase tc = { {0}, NULL };
    P3dcCameraCalib *calib;
    P3dTestRng rng;
    guint i, cameras = 9 + seed;
    gchar *what;

    p3d_test_rng_init (&rng, 7000 + seed);
    bevpool_test_random_case (&rng, &tc);
    /* The random case's cameras again, in turn. */
    calib = g_new0 (P3dcCameraCalib, cameras);
    for (i = 0; i < cameras; i++)
      calib[i] = tc.calib[i % tc.params.cameras];
    g_free (tc.calib);
    tc.calib = calib;
    tc.params.cameras = cameras;
    fail_unless_equals_int (p3dc_bevpool_params_init (&tc.params), P3DC_OK);
    what = g_strdup_printf ("seed %u, %u cameras (%u frustum points each)",
        7000 + seed, cameras, tc.params.depth_bins * tc.params.feat_width
        * tc.params.feat_height);
    check_case (&tc, &rng, 0, what);
    g_free (what);
    bevpool_test_case_clear (&tc);
  }

  {
    /* nuScenes over a 1000 x 1000 grid. */
    BevpoolTestCase tc = { {0}, NULL };
    P3dTestRng rng;

    p3d_test_rng_init (&rng, 7100);
    bevpool_test_nuscenes_case (8, &tc);
    tc.params.xbound[2] = 0.108;
    tc.params.ybound[2] = 0.108;
    fail_unless_equals_int (p3dc_bevpool_params_init (&tc.params), P3DC_OK);
    fail_unless_equals_int (tc.params.nx, 1000);
    fail_unless_equals_int (tc.params.ny, 1000);
    check_case (&tc, &rng, 0, "nuScenes, 1000 x 1000 grid");
    bevpool_test_case_clear (&tc);
  }
}

GST_END_TEST;

/* nuScenes at full size (80 channels) with its real calibration. */
GST_START_TEST (test_nuscenes)
{
  BevpoolTestCase tc = { {0}, NULL };
  P3dTestRng rng;
  P3dcBevGeometryStats stats;
  Geometries g;

  p3d_test_rng_init (&rng, 19);
  bevpool_test_nuscenes_case (80, &tc);
  geometries_compute (&g, &tc, "nuScenes");
  fail_unless_equals_int (p3dc_bevpool_geometry_stats (g.downloaded, &stats),
      P3DC_OK);
  fail_unless_equals_int (stats.nonempty_cells, 97326);
  fail_unless_equals_int (stats.largest_cell, 886);
  check_pooling (&tc, &g, &rng, 0, FALSE, "nuScenes");
  geometries_clear (&g);
  bevpool_test_case_clear (&tc);
}

GST_END_TEST;

/* A geometry computed again with another calibration leaves nothing of
 * the first behind. */
GST_START_TEST (test_recompute)
{
  BevpoolTestCase first = { {0}, NULL }, second = { {0}, NULL };
  P3dTestRng rng;
  Geometries g;
  guint32 kept;
  guint i;

  p3d_test_rng_init (&rng, 20);
  bevpool_test_nuscenes_case (16, &first);
  bevpool_test_nuscenes_case (16, &second);
  /* The cameras in another order, and the grid's second half empty. */
  for (i = 0; i < 6; i++)
    second.calib[i] = first.calib[(i + 2) % 6];
  for (i = 0; i < 6; i++)
    second.calib[i].camera_to_lidar[3] += 30.0;

  geometries_compute (&g, &first, "first calibration");
  fail_unless_equals_int (p3dc_bevpool_geometry_compute_cuda (g.device,
          second.calib, g.stream), P3DC_OK);
  fail_unless_equals_int (p3dc_bevpool_geometry_compute_cpu (g.reference,
          second.calib), P3DC_OK);
  fail_unless_equals_int (p3dc_bevpool_geometry_cuda_download (g.device,
          g.downloaded, g.stream), P3DC_OK);
  kept = p3dc_bevpool_geometry_kept (g.reference);
  fail_unless (kept != 0, "the second calibration keeps nothing");
  fail_unless_equals_int (p3dc_bevpool_geometry_kept (g.downloaded), kept);
  fail_unless (memcmp (p3dc_bevpool_geometry_cell_start (g.downloaded),
          p3dc_bevpool_geometry_cell_start (g.reference),
          (129600 + 1) * sizeof (guint32)) == 0,
      "the recomputed cell starts differ");
  fail_unless (memcmp (p3dc_bevpool_geometry_points (g.downloaded),
          p3dc_bevpool_geometry_points (g.reference),
          kept * sizeof (guint32)) == 0, "the recomputed geometry differs");
  check_pooling (&second, &g, &rng, 0, FALSE, "recomputed");
  geometries_clear (&g);
  bevpool_test_case_clear (&first);
  bevpool_test_case_clear (&second);
}

GST_END_TEST;

typedef struct
{
  P3dcBevGeometryCuda *device;
  const P3dcCameraCalib *calib;
  const void *features, *depth;
  void *out;
} QueuedUpdate;

static P3dcResult
queue_update (void *user_data, P3dcCudaStream stream)
{
  const QueuedUpdate *q = user_data;

  return p3dc_bevpool_geometry_compute_cuda (q->device, q->calib, stream);
}

static P3dcResult
queue_pooling (void *user_data, P3dcCudaStream stream)
{
  const QueuedUpdate *q = user_data;

  return p3dc_bevpool_cuda (q->device, q->features, q->depth, FALSE, q->out,
      FALSE, stream);
}

/* A pooling (F32 in and out) queued while the caller captures the stream,
 * against the reference. */
static void
check_captured_pooling (const BevpoolTestCase * tc, const Geometries * g,
    QueuedUpdate * q, const gchar * what)
{
  const P3dcBevPoolParams *params = &tc->params;
  gsize out_size = p3dc_bevpool_output_size (params);
  gsize n_features = p3dc_bevpool_features_size (params);
  gsize n_depth = p3dc_bevpool_depth_size (params);
  gpointer expected = g_malloc (out_size * 4), actual = g_malloc (out_size * 4);
  gpointer raw_features, raw_depth;
  gfloat *features, *depth;
  void *d_features = NULL, *d_depth = NULL, *d_out = NULL;
  P3dTestRng rng;
  gsize nodes = 0;

  p3d_test_rng_init (&rng, 21);
  bevpool_test_random_inputs (&rng, params, FALSE, &raw_features, &raw_depth,
      &features, &depth);
  fail_unless_equals_int (p3dc_cuda_malloc (&d_features, n_features * 4),
      P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_malloc (&d_depth, n_depth * 4), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_malloc (&d_out, out_size * 4), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memcpy_htod (d_features, raw_features,
          n_features * 4, g->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memcpy_htod (d_depth, raw_depth,
          n_depth * 4, g->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memset (d_out, 0xff, out_size * 4,
          g->stream), P3DC_OK);
  q->features = d_features;
  q->depth = d_depth;
  q->out = d_out;
  fail_unless_equals_int (p3d_capture_and_launch (g->stream, queue_pooling, q,
          &nodes), P3DC_OK);
  fail_unless (nodes >= 3, "%s: the capture holds %" G_GSIZE_FORMAT " nodes",
      what, nodes);
  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (actual, d_out, out_size * 4,
          g->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (g->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_bevpool_cpu (g->reference, raw_features,
          raw_depth, FALSE, expected, FALSE), P3DC_OK);
  compare_outputs (params, expected, actual, FALSE, what);
  fail_unless_equals_int (p3dc_cuda_free (d_features), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_free (d_depth), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_free (d_out), P3DC_OK);
  g_free (raw_features);
  g_free (raw_depth);
  g_free (features);
  g_free (depth);
  g_free (expected);
  g_free (actual);
}

/* Updates and a pooling queued while the caller captures the stream (the
 * steps are then launches in the caller's graph), among updates launched
 * from the geometry's own graph: each gives the reference's result.  The
 * first update is a captured one, whose graph must clear the counts
 * itself.  A captured update leaves the geometry's graph as it was, so the
 * update after it, with the calibration the graph holds, sets no parameter
 * and must still give that calibration's geometry. */
GST_START_TEST (test_stream_capture)
{
  BevpoolTestCase one = { {0}, NULL }, other = { {0}, NULL };
  Geometries g;
  QueuedUpdate q;
  gsize nodes = 0;
  guint i;

  bevpool_test_nuscenes_case (16, &one);
  bevpool_test_nuscenes_case (16, &other);
  for (i = 0; i < 6; i++)
    other.calib[i] = one.calib[(i + 2) % 6];

  geometries_new (&g, &one, DEFAULT_CAPACITY);
  q.device = g.device;
  q.calib = other.calib;
  fail_unless_equals_int (p3d_capture_and_launch (g.stream, queue_update, &q,
          &nodes), P3DC_OK);
  /* a memset, the column kernel, CUB's scan (two kernels), place, rank */
  fail_unless (nodes >= 6, "the capture holds %" G_GSIZE_FORMAT " nodes",
      nodes);
  check_geometries (&g, &other, other.calib, "calibration B, captured first");
  fail_unless_equals_int (p3dc_bevpool_geometry_compute_cuda (g.device,
          one.calib, g.stream), P3DC_OK);
  check_geometries (&g, &one, one.calib, "calibration A, the geometry's graph");
  fail_unless_equals_int (p3d_capture_and_launch (g.stream, queue_update, &q,
          &nodes), P3DC_OK);
  check_geometries (&g, &other, other.calib, "calibration B, captured");
  check_captured_pooling (&other, &g, &q, "calibration B, captured pooling");
  fail_unless_equals_int (p3dc_bevpool_geometry_compute_cuda (g.device,
          one.calib, g.stream), P3DC_OK);
  check_geometries (&g, &one, one.calib,
      "calibration A again, the geometry's graph");
  fail_unless_equals_int (p3dc_bevpool_geometry_compute_cuda (g.device,
          other.calib, g.stream), P3DC_OK);
  check_geometries (&g, &other, other.calib,
      "calibration B, the geometry's graph");
  geometries_clear (&g);
  bevpool_test_case_clear (&one);
  bevpool_test_case_clear (&other);
}

GST_END_TEST;

/* Eleven cameras, two launches of the column kernel: an update that
 * changes the cameras of one batch sets only that batch's node, and the
 * other must still hold its own. */
GST_START_TEST (test_camera_batches)
{
  BevpoolTestCase tc = { {0}, NULL };
  P3dcCameraCalib *calib;
  P3dTestRng rng;
  Geometries g;
  guint i;

  p3d_test_rng_init (&rng, 7200);
  bevpool_test_random_case (&rng, &tc);
  calib = g_new0 (P3dcCameraCalib, 11);
  for (i = 0; i < 11; i++)
    calib[i] = tc.calib[i % tc.params.cameras];
  g_free (tc.calib);
  tc.calib = calib;
  tc.params.cameras = 11;
  fail_unless_equals_int (p3dc_bevpool_params_init (&tc.params), P3DC_OK);

  geometries_compute (&g, &tc, "11 cameras");
  /* camera 10, in the second batch, moved */
  tc.calib[10].camera_to_lidar[3] += 0.7;
  fail_unless_equals_int (p3dc_bevpool_geometry_compute_cuda (g.device,
          tc.calib, g.stream), P3DC_OK);
  check_geometries (&g, &tc, tc.calib, "11 cameras, the last one moved");
  /* camera 0, in the first, moved */
  tc.calib[0].camera_to_lidar[7] -= 0.4;
  fail_unless_equals_int (p3dc_bevpool_geometry_compute_cuda (g.device,
          tc.calib, g.stream), P3DC_OK);
  check_geometries (&g, &tc, tc.calib, "11 cameras, the first one moved");
  geometries_clear (&g);
  bevpool_test_case_clear (&tc);
}

GST_END_TEST;

/* Non-finite inputs: NaN (with payloads, both signs) and infinities among
 * the features and depths spread to the cells they fall in, bit for bit as
 * on the host (whose NaNs the reference writes as the device's one NaN). */
GST_START_TEST (test_non_finite)
{
  check_random_cases (8000, 6, DEFAULT_CAPACITY, SPOIL_NON_FINITE,
      "non-finite inputs");
}

GST_END_TEST;

/* Tiny inputs (bevpool_test_tiny_bins): F32 runs whose sums underflow to
 * -0, which a cell's value turns into +0, and sums in the subnormal range;
 * from F16 inputs, sums that an F16 output holds as subnormals or rounds to
 * zeros of either sign; bit for bit as on the host, with every run sum in
 * the buffer and with none (the cell kernel sums them again).
 * libs/bevpool's test_tiny_inputs checks that these cases (seeds 8100 to
 * 8105), in their F32 inputs, have cells whose runs all sum to -0. */
GST_START_TEST (test_tiny_inputs)
{
  check_random_cases (8100, 6, DEFAULT_CAPACITY, SPOIL_TINY, "tiny inputs");
  check_random_cases (8100, 6, 0, SPOIL_TINY, "tiny inputs, no run sums");
}

GST_END_TEST;

/* The largest frustum sides: 33 cameras of one column of 2048 rows and 12
 * depth bins (24,576 points a column, the limit), so that the depth
 * tensor's transposition has 67,584 rows of tiles, more than a grid's y or
 * z can count. */
GST_START_TEST (test_tall_rig)
{
  BevpoolTestCase tc = { {0}, NULL };
  P3dcCameraCalib *calib;
  P3dTestRng rng;
  guint i;

  p3d_test_rng_init (&rng, 8100);
  bevpool_test_one_cell_case (1, 2048, 12, &tc);
  tc.params.ybound[1] = 2047.5;
  tc.params.ybound[2] = 64.0;
  calib = g_new0 (P3dcCameraCalib, 33);
  for (i = 0; i < 33; i++)
    calib[i] = tc.calib[0];
  g_free (tc.calib);
  tc.calib = calib;
  tc.params.cameras = 33;
  fail_unless_equals_int (p3dc_bevpool_params_init (&tc.params), P3DC_OK);
  check_case (&tc, &rng, 0, "33 cameras of 2048 x 12 points");
  bevpool_test_case_clear (&tc);
}

GST_END_TEST;

GST_START_TEST (test_errors)
{
  BevpoolTestCase tc = { {0}, NULL }, other = { {0}, NULL };
  P3dcBevGeometryCuda *device = NULL;
  P3dcBevGeometry *host = NULL, *wrong = NULL;
  P3dcCudaStream stream = NULL;
  P3dcBevPoolParams bad;
  void *buffer = NULL;
  guint8 *features, *depth, *out;

  bevpool_test_one_cell_case (4, 4, 2, &tc);
  bevpool_test_one_cell_case (4, 4, 3, &other);
  fail_unless_equals_int (p3dc_cuda_stream_create (&stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_malloc (&buffer, 4096), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memset (buffer, 0, 4096, stream), P3DC_OK);
  features = buffer;
  depth = features + 1024;
  out = features + 2048;

  bad = tc.params;
  bad.feat_width = 0;
  fail_unless_equals_int (p3dc_bevpool_geometry_cuda_new (&bad, &device),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless (device == NULL);
  fail_unless_equals_int (p3dc_bevpool_geometry_cuda_new (&tc.params,
          &device), P3DC_OK);
  fail_unless_equals_int (p3dc_bevpool_geometry_new (&tc.params, &host),
      P3DC_OK);
  fail_unless_equals_int (p3dc_bevpool_geometry_new (&other.params, &wrong),
      P3DC_OK);

  /* Nothing computed yet. */
  fail_unless_equals_int (p3dc_bevpool_cuda (device, features, depth, FALSE,
          out, FALSE, stream), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_bevpool_geometry_cuda_download (device, host,
          stream), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_bevpool_geometry_compute_cuda (device, NULL,
          stream), P3DC_ERROR_INVALID_ARGUMENT);

  fail_unless_equals_int (p3dc_bevpool_geometry_compute_cuda (device,
          tc.calib, stream), P3DC_OK);
  fail_unless_equals_int (p3dc_bevpool_geometry_cuda_download (device, wrong,
          stream), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_bevpool_cuda (device, NULL, depth, FALSE,
          out, FALSE, stream), P3DC_ERROR_INVALID_ARGUMENT);
  /* F32 tensors must at least be 4-byte aligned. */
  fail_unless_equals_int (p3dc_bevpool_cuda (device, features,
          depth + 2, FALSE, out, FALSE, stream), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_bevpool_cuda (device, features, depth, TRUE,
          out + 2, TRUE, stream), P3DC_OK);

  /* A failed recompute leaves the geometry unusable, not stale. */
  tc.calib[0].intrinsics[0] = 0.0;
  fail_unless_equals_int (p3dc_bevpool_geometry_compute_cuda (device,
          tc.calib, stream), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_bevpool_cuda (device, features, depth, FALSE,
          out, FALSE, stream), P3DC_ERROR_INVALID_ARGUMENT);

  fail_unless_equals_int (p3dc_cuda_stream_synchronize (stream), P3DC_OK);
  p3dc_bevpool_geometry_cuda_free (device);
  p3dc_bevpool_geometry_cuda_free (NULL);
  p3dc_bevpool_geometry_free (host);
  p3dc_bevpool_geometry_free (wrong);
  fail_unless_equals_int (p3dc_cuda_free (buffer), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_destroy (stream), P3DC_OK);
  bevpool_test_case_clear (&tc);
  bevpool_test_case_clear (&other);
}

GST_END_TEST;

static Suite *
bevpool_cuda_suite (void)
{
  Suite *s = suite_create ("bevpool_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_random_cases);
  tcase_add_test (tc, test_fault_cases);
  tcase_add_test (tc, test_channels_and_alignment);
  tcase_add_test (tc, test_heavy_cells);
  tcase_add_test (tc, test_small_sum_buffer);
  tcase_add_test (tc, test_geometry_shapes);
  tcase_add_test (tc, test_nuscenes);
  tcase_add_test (tc, test_recompute);
  tcase_add_test (tc, test_stream_capture);
  tcase_add_test (tc, test_camera_batches);
  tcase_add_test (tc, test_non_finite);
  tcase_add_test (tc, test_tiny_inputs);
  tcase_add_test (tc, test_tall_rig);
  tcase_add_test (tc, test_errors);
  return s;
}

GST_CHECK_MAIN (bevpool_cuda);
