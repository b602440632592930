/* bevpool on the nuScenes configuration BEVFusion runs (6 cameras, 80
 * channels, 118 depth bins, 32 x 88 features from 256 x 704 images,
 * 360 x 360 cells of 0.3 m, one z cell), with a real calibration, on random
 * features and softmax-like depth: the geometry update and the pooling in
 * F16 and F32, timed with CUDA events (warm, median of many runs), and the
 * C reference for scale; every pooled output is checked bit for bit
 * against the reference.  The F16 pooling is also timed on two sets of
 * tensors taken in turns, as a pipeline's buffer pools hand them out, so
 * that every frame's tensors differ from the frame before's.  A diagnostic table follows the main one: the
 * geometry update step by step (CUDA events between its steps, recorded by
 * bench_bevpool_stages.cu, which only the benchmarks build).
 *
 *   bench_bevpool .../demo_nuscenes/bevfusion_camera_matrices.json [runs]
 *
 * The JSON file gives the calibration (camera_intrinsics, camera2lidar,
 * img_aug_matrix: per camera 4x4 row-major) and the DepthLSS grid
 * (bevfusion_depth_lss_params_from_mmdet3d_config). */
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_bevpool_stages.h"
#include "bevpool.h"
#include "bevpool-private.h"
#include "half.h"
#include "p3dbench.h"

typedef struct
{
  P3dcBevGeometryCuda *geometry;
  const P3dcCameraCalib *calib;
  const void *features, *depth;
  void *out;
  gboolean half_in, half_out;
} Work;

static P3dcResult
run_geometry (gpointer user_data, P3dcCudaStream stream)
{
  Work *w = user_data;

  return p3dc_bevpool_geometry_compute_cuda (w->geometry, w->calib, stream);
}

static P3dcResult
run_pool (gpointer user_data, P3dcCudaStream stream)
{
  Work *w = user_data;

  return p3dc_bevpool_cuda (w->geometry, w->features, w->depth, w->half_in,
      w->out, w->half_out, stream);
}

typedef struct
{
  P3dcBevGeometry *geometry;
  const P3dcCameraCalib *calib;
  const void *features, *depth;
  void *out;
} HostWork;

static void
run_host_geometry (gpointer user_data)
{
  HostWork *w = user_data;

  P3D_BENCH_CHECK (p3dc_bevpool_geometry_compute_cpu (w->geometry, w->calib));
}

static void
run_host_pool (gpointer user_data)
{
  HostWork *w = user_data;

  P3D_BENCH_CHECK (p3dc_bevpool_cpu (w->geometry, w->features, w->depth,
          FALSE, w->out, FALSE));
}

static JsonArray *
member_array (JsonObject * object, const gchar * name)
{
  JsonNode *node = json_object_get_member (object, name);

  if (node == NULL || !JSON_NODE_HOLDS_ARRAY (node)) {
    g_printerr ("no array \"%s\" in the calibration file\n", name);
    exit (1);
  }
  return json_node_get_array (node);
}

static gdouble
number_at (JsonArray * array, guint index)
{
  JsonNode *node = index < json_array_get_length (array) ?
      json_array_get_element (array, index) : NULL;

  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node)) {
    g_printerr ("a number is missing in the calibration file\n");
    exit (1);
  }
  return json_node_get_double (node);
}

/* camera -> 4 rows -> 4 numbers. */
static void
read_matrices (JsonObject * root, const gchar * name, guint cameras,
    gsize offset, P3dcCameraCalib * calib)
{
  JsonArray *all = member_array (root, name);
  guint camera, row, col;

  if (json_array_get_length (all) != cameras) {
    g_printerr ("\"%s\" has %u cameras, not %u\n", name,
        json_array_get_length (all), cameras);
    exit (1);
  }
  for (camera = 0; camera < cameras; camera++) {
    JsonArray *rows = json_array_get_array_element (all, camera);
    gdouble *m = (gdouble *) ((guint8 *) & calib[camera] + offset);

    for (row = 0; row < 4; row++) {
      JsonArray *values = json_array_get_array_element (rows, row);

      for (col = 0; col < 4; col++)
        m[row * 4 + col] = number_at (values, col);
    }
  }
}

static void
read_bound (JsonObject * grid, const gchar * name, gdouble bound[3])
{
  JsonArray *values = member_array (grid, name);
  guint i;

  for (i = 0; i < 3; i++)
    bound[i] = number_at (values, i);
}

static P3dcCameraCalib *
load_calibration (const gchar * path, P3dcBevPoolParams * params)
{
  JsonParser *parser = json_parser_new ();
  GError *error = NULL;
  JsonObject *root, *grid;
  P3dcCameraCalib *calib;
  JsonArray *size;
  guint cameras;

  if (!json_parser_load_from_file (parser, path, &error)) {
    g_printerr ("cannot read %s: %s\n", path, error->message);
    exit (1);
  }
  root = json_node_get_object (json_parser_get_root (parser));
  cameras = json_array_get_length (member_array (root, "camera_intrinsics"));
  grid = json_object_get_object_member (root,
      "bevfusion_depth_lss_params_from_mmdet3d_config");
  if (grid == NULL) {
    g_printerr ("%s has no DepthLSS parameters\n", path);
    exit (1);
  }
  memset (params, 0, sizeof (*params));
  params->cameras = cameras;
  params->channels = (guint32) json_object_get_int_member (grid,
      "out_channels");
  size = member_array (grid, "image_size");     /* [height, width] */
  params->image_height = (guint32) number_at (size, 0);
  params->image_width = (guint32) number_at (size, 1);
  size = member_array (grid, "feature_size");
  params->feat_height = (guint32) number_at (size, 0);
  params->feat_width = (guint32) number_at (size, 1);
  read_bound (grid, "dbound", params->dbound);
  read_bound (grid, "xbound", params->xbound);
  read_bound (grid, "ybound", params->ybound);
  read_bound (grid, "zbound", params->zbound);
  params->rounding = P3DC_BEV_ROUND_TRUNCATE;
  params->layout = P3DC_BEV_LAYOUT_YX;
  P3D_BENCH_CHECK (p3dc_bevpool_params_init (params));

  calib = g_new0 (P3dcCameraCalib, cameras);
  read_matrices (root, "camera_intrinsics", cameras,
      G_STRUCT_OFFSET (P3dcCameraCalib, intrinsics), calib);
  read_matrices (root, "camera2lidar", cameras,
      G_STRUCT_OFFSET (P3dcCameraCalib, camera_to_lidar), calib);
  read_matrices (root, "img_aug_matrix", cameras,
      G_STRUCT_OFFSET (P3dcCameraCalib, img_aug), calib);
  g_object_unref (parser);
  return calib;
}

/* Features uniform in [-1, 1); depth a softmax of random logits over the
 * bins of each pixel.  Deterministic (GLib's generator, fixed seed). */
static void
make_inputs (const P3dcBevPoolParams * params, gfloat ** features,
    gfloat ** depth)
{
  gsize n_features = p3dc_bevpool_features_size (params);
  gsize pixels = (gsize) params->feat_width * params->feat_height;
  GRand *rand = g_rand_new_with_seed (5);
  gdouble *logits = g_new (gdouble, params->depth_bins);
  gsize i, d;

  *features = g_new (gfloat, n_features);
  *depth = g_new (gfloat, p3dc_bevpool_depth_size (params));
  for (i = 0; i < n_features; i++)
    (*features)[i] = (gfloat) g_rand_double_range (rand, -1.0, 1.0);
  for (i = 0; i < params->cameras * pixels; i++) {
    gsize camera = i / pixels, pixel = i % pixels;
    gdouble total = 0.0;

    for (d = 0; d < params->depth_bins; d++) {
      logits[d] = exp (g_rand_double_range (rand, 0.0, 6.0));
      total += logits[d];
    }
    for (d = 0; d < params->depth_bins; d++)
      (*depth)[(camera * params->depth_bins + d) * pixels + pixel] =
          (gfloat) (logits[d] / total);
  }
  g_free (logits);
  g_rand_free (rand);
}

static gint
compare_us (gconstpointer a, gconstpointer b)
{
  gdouble x = *(const gdouble *) a, y = *(const gdouble *) b;

  return x < y ? -1 : x > y ? 1 : 0;
}

static guint16 *
to_half (const gfloat * values, gsize count)
{
  guint16 *out = g_new (guint16, count);
  gsize i;

  for (i = 0; i < count; i++)
    out[i] = p3dc_float_to_half (values[i]);
  return out;
}

static void *
upload (const void *host, gsize bytes, P3dcCudaStream stream)
{
  void *device = NULL;

  P3D_BENCH_CHECK (p3dc_cuda_malloc (&device, bytes));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_htod (device, host, bytes, stream));
  return device;
}

/* Median time of each step of the geometry update over @runs updates. */
static void
time_geometry_steps (P3dcBevGeometryCuda * geometry,
    const P3dcCameraCalib * calib, P3dcCudaStream stream, guint runs,
    gdouble medians[P3D_BENCH_GEOMETRY_STEPS])
{
  P3dcCudaEvent events[P3D_BENCH_GEOMETRY_STEPS + 1];
  gdouble *times = g_new (gdouble, (gsize) runs);
  guint i, r, step;

  for (i = 0; i <= P3D_BENCH_GEOMETRY_STEPS; i++)
    P3D_BENCH_CHECK (p3dc_cuda_event_create_timed (&events[i]));
  for (step = 0; step < P3D_BENCH_GEOMETRY_STEPS; step++) {
    for (r = 0; r < runs; r++) {
      gfloat ms = 0.0f;

      P3D_BENCH_CHECK (p3d_bench_geometry_compute_marked (geometry, calib,
              events, stream));
      P3D_BENCH_CHECK (p3dc_cuda_event_synchronize (events
              [P3D_BENCH_GEOMETRY_STEPS]));
      P3D_BENCH_CHECK (p3dc_cuda_event_elapsed_ms (&ms, events[step],
              events[step + 1]));
      times[r] = ms * 1000.0;
    }
    qsort (times, runs, sizeof (gdouble), compare_us);
    medians[step] = times[runs / 2];
  }
  for (i = 0; i <= P3D_BENCH_GEOMETRY_STEPS; i++)
    P3D_BENCH_CHECK (p3dc_cuda_event_destroy (events[i]));
  g_free (times);
}

/* Whether the device output of @w equals the reference's, bit for bit. */
static gboolean
matches_reference (Work * w, P3dcBevGeometry * reference,
    const P3dcBevPoolParams * params, const void *features, const void *depth,
    P3dcCudaStream stream)
{
  gsize bytes = p3dc_bevpool_output_size (params) * (w->half_out ? 2 : 4);
  gpointer expected = g_malloc (bytes), actual = g_malloc (bytes);
  gboolean same;

  P3D_BENCH_CHECK (p3dc_bevpool_cpu (reference, features, depth, w->half_in,
          expected, w->half_out));
  P3D_BENCH_CHECK (run_pool (w, stream));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (actual, w->out, bytes, stream));
  P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (stream));
  same = memcmp (expected, actual, bytes) == 0;
  g_free (expected);
  g_free (actual);
  return same;
}

/* How the runs fall into cells and feature columns, from the reference's
 * geometry, whose points are sorted by cell and within a cell in (camera,
 * u, d, v) order: a run is a stretch of one column and depth bin on
 * consecutive rows.  The run sums of a cell whose runs all come from one
 * column (or from columns one block holds) need not go through memory
 * (docs/performance.md, bevpool pooling). */
static void
print_run_layout (const P3dcBevGeometry * reference,
    const P3dcBevPoolParams * params)
{
  const guint32 *points = p3dc_bevpool_geometry_points (reference);
  const guint32 *start = p3dc_bevpool_geometry_cell_start (reference);
  const guint32 cells = params->nx * params->ny * params->nz;
  const guint32 fw = params->feat_width, fh = params->feat_height;
  guint64 by_runs[8] = { 0 }, by_columns[8] = { 0 }, runs_by_columns[8] = { 0 };
  guint64 runs = 0, adjacent_cells = 0, adjacent_runs = 0;
  guint32 cell, i, k;

  for (cell = 0; cell < cells; cell++) {
    guint32 cell_runs = 0, columns = 0, first_column = 0, column = 0;
    guint32 bin = 0, row = 0;

    for (i = start[cell]; i < start[cell + 1]; i++) {
      const guint32 id = points[i], u = id % fw, v = id / fw % fh;
      const guint32 rest = id / fw / fh;        /* camera * depth_bins + d */
      const guint32 d = rest % params->depth_bins;
      const guint32 c = rest / params->depth_bins * fw + u;

      if (i == start[cell] || c != column) {
        if (columns == 0)
          first_column = c;
        columns++;
      }
      if (i == start[cell] || c != column || d != bin || v != row + 1)
        cell_runs++;
      column = c;
      bin = d;
      row = v;
    }
    if (cell_runs == 0)
      continue;
    runs += cell_runs;
    by_runs[MIN (cell_runs, 7)]++;
    by_columns[MIN (columns, 7)]++;
    runs_by_columns[MIN (columns, 7)] += cell_runs;
    /* two neighbouring columns of one camera */
    if (columns == 2 && column == first_column + 1 && column % fw != 0) {
      adjacent_cells++;
      adjacent_runs += cell_runs;
    }
  }
  g_print ("\n| non-empty cells (%" G_GUINT64_FORMAT " runs) | 1 | 2 | 3 | 4 "
      "| 5 | 6 | 7 or more |\n| --- |", runs);
  for (k = 1; k < 8; k++)
    g_print (" ---: |");
  g_print ("\n| cells of that many runs |");
  for (k = 1; k < 8; k++)
    g_print (" %" G_GUINT64_FORMAT " |", by_runs[k]);
  g_print ("\n| cells of that many feature columns |");
  for (k = 1; k < 8; k++)
    g_print (" %" G_GUINT64_FORMAT " |", by_columns[k]);
  g_print ("\n| runs of the cells of that many feature columns, %% of all |");
  for (k = 1; k < 8; k++)
    g_print (" %.1f |", runs ? 100.0 * runs_by_columns[k] / runs : 0.0);
  g_print ("\n\ncells of two neighbouring columns of one camera: %"
      G_GUINT64_FORMAT ", their runs %.1f %% of all\n", adjacent_cells,
      runs ? 100.0 * adjacent_runs / runs : 0.0);
}

int
main (int argc, char **argv)
{
  P3dcBevPoolParams params;
  P3dcCameraCalib *calib;
  P3dcCudaStream stream = NULL;
  P3dcBevGeometryCuda *geometry = NULL;
  P3dcBevGeometry *reference = NULL, *downloaded = NULL;
  P3dcBevGeometryStats stats;
  P3dBenchStats t_geometry, t_f16, t_f32, t_mixed, t_turns;
  P3dBenchStats t_host_geometry, t_host_pool;
  gdouble step_us[P3D_BENCH_GEOMETRY_STEPS], step_total = 0.0;
  guint i;
  gfloat *features, *depth;
  guint16 *features_h, *depth_h;
  void *d_features, *d_depth, *d_features_h, *d_depth_h, *d_out;
  void *d_features_h2, *d_depth_h2, *d_out2;
  gsize n_features, n_depth, n_out;
  guint runs = 500;
  gboolean exact_f16, exact_f32, exact_turns, same_geometry;
  Work w, w2;
  P3dBenchTurns turns;
  HostWork hw;
  gchar name[256];
  gint major, minor, sms;
  guint32 run_count = 0;

  if (argc < 2) {
    g_printerr ("usage: %s bevfusion_camera_matrices.json [runs]\n", argv[0]);
    return 2;
  }
  if (argc > 2)
    runs = MAX (100, atoi (argv[2]));
  calib = load_calibration (argv[1], &params);
  g_print ("configuration: %u cameras, %u channels, %u depth bins, %u x %u "
      "features from %u x %u images, %u x %u x %u cells\n", params.cameras,
      params.channels, params.depth_bins, params.feat_height,
      params.feat_width, params.image_height, params.image_width, params.nx,
      params.ny, params.nz);
  if (p3dc_cuda_device_count () == 0) {
    g_printerr ("no CUDA device\n");
    return 1;
  }
  P3D_BENCH_CHECK (p3dc_cuda_device_describe (0, name, sizeof (name), &major,
          &minor, &sms));
  P3D_BENCH_CHECK (p3dc_cuda_stream_create (&stream));

  /* Geometry on both paths, compared. */
  P3D_BENCH_CHECK (p3dc_bevpool_geometry_cuda_new (&params, &geometry));
  P3D_BENCH_CHECK (p3dc_bevpool_geometry_new (&params, &reference));
  P3D_BENCH_CHECK (p3dc_bevpool_geometry_new (&params, &downloaded));
  P3D_BENCH_CHECK (p3dc_bevpool_geometry_compute_cuda (geometry, calib,
          stream));
  P3D_BENCH_CHECK (p3dc_bevpool_geometry_cuda_download (geometry, downloaded,
          stream));
  P3D_BENCH_CHECK (p3dc_bevpool_geometry_compute_cpu (reference, calib));
  P3D_BENCH_CHECK (p3dc_bevpool_geometry_stats (downloaded, &stats));
  same_geometry = p3dc_bevpool_geometry_kept (reference) == stats.kept_points
      && memcmp (p3dc_bevpool_geometry_cell_start (reference),
      p3dc_bevpool_geometry_cell_start (downloaded),
      ((gsize) stats.cells + 1) * 4) == 0
      && memcmp (p3dc_bevpool_geometry_points (reference),
      p3dc_bevpool_geometry_points (downloaded),
      (gsize) stats.kept_points * 4) == 0;
  /* The runs: the device's last cell start. */
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (&run_count,
          geometry->cell_start + geometry->cells, sizeof (run_count), stream));
  P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (stream));

  /* Inputs in both formats. */
  n_features = p3dc_bevpool_features_size (&params);
  n_depth = p3dc_bevpool_depth_size (&params);
  n_out = p3dc_bevpool_output_size (&params);
  make_inputs (&params, &features, &depth);
  features_h = to_half (features, n_features);
  depth_h = to_half (depth, n_depth);
  d_features = upload (features, n_features * 4, stream);
  d_depth = upload (depth, n_depth * 4, stream);
  d_features_h = upload (features_h, n_features * 2, stream);
  d_depth_h = upload (depth_h, n_depth * 2, stream);
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&d_out, n_out * 4));

  memset (&w, 0, sizeof (w));
  w.geometry = geometry;
  w.calib = calib;
  w.out = d_out;
  P3D_BENCH_CHECK (p3d_bench_gpu (run_geometry, &w, stream, 10, MAX (100,
              runs / 5), &t_geometry));

  time_geometry_steps (geometry, calib, stream, MAX (100, runs / 5), step_us);

  w.features = d_features_h;
  w.depth = d_depth_h;
  w.half_in = w.half_out = TRUE;
  P3D_BENCH_CHECK (p3d_bench_gpu (run_pool, &w, stream, 20, runs, &t_f16));
  exact_f16 = matches_reference (&w, reference, &params, features_h, depth_h,
      stream);
  /* the same inputs in a second set of buffers, the two sets in turns */
  d_features_h2 = upload (features_h, n_features * 2, stream);
  d_depth_h2 = upload (depth_h, n_depth * 2, stream);
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&d_out2, n_out * 4));
  w2 = w;
  w2.features = d_features_h2;
  w2.depth = d_depth_h2;
  w2.out = d_out2;
  turns.func = run_pool;
  turns.data[0] = &w;
  turns.data[1] = &w2;
  turns.next = 0;
  P3D_BENCH_CHECK (p3d_bench_gpu (p3d_bench_in_turns, &turns, stream, 20,
          runs, &t_turns));
  exact_turns = matches_reference (&w2, reference, &params, features_h,
      depth_h, stream) && matches_reference (&w, reference, &params,
      features_h, depth_h, stream);
  w.half_out = FALSE;
  P3D_BENCH_CHECK (p3d_bench_gpu (run_pool, &w, stream, 20, runs, &t_mixed));
  w.features = d_features;
  w.depth = d_depth;
  w.half_in = w.half_out = FALSE;
  P3D_BENCH_CHECK (p3d_bench_gpu (run_pool, &w, stream, 20, runs, &t_f32));
  exact_f32 = matches_reference (&w, reference, &params, features, depth,
      stream);

  hw.geometry = reference;
  hw.calib = calib;
  hw.features = features;
  hw.depth = depth;
  hw.out = g_malloc (n_out * 4);
  p3d_bench_host (run_host_geometry, &hw, 1, 3, &t_host_geometry);
  p3d_bench_host (run_host_pool, &hw, 1, 3, &t_host_pool);

  g_print ("device: %s (sm_%d%d, %d SMs)\n", name, major, minor, sms);
  g_print ("frustum points: %u, kept: %u, non-empty cells: %u of %u, "
      "largest cell: %u points\n", stats.frustum_points, stats.kept_points,
      stats.nonempty_cells, stats.cells, stats.largest_cell);
  g_print ("device geometry identical to the reference: %s; pooled output "
      "bit-exact: F16 %s, F32 %s, F16 tensors in turns %s\n",
      same_geometry ? "yes" : "NO", exact_f16 ? "yes" : "NO",
      exact_f32 ? "yes" : "NO", exact_turns ? "yes" : "NO");
  g_print ("runs: %u (room for %u sums); output %.1f MB (F16), read per "
      "frame: features %.1f MB + depth %.1f MB (F16), run sums written and "
      "read %.1f MB\n\n", run_count, geometry->sum_capacity, n_out * 2 / 1e6,
      n_features * 2 / 1e6, n_depth * 2 / 1e6,
      (gdouble) run_count * geometry->channels_padded * 4 / 1e6);
  g_print ("| bevpool, nuScenes (us) | median | p10 | p90 | runs |\n");
  g_print ("| --- | --- | --- | --- | --- |\n");
  p3d_bench_print_row ("pooling F16 -> F16", &t_f16);
  p3d_bench_print_row ("pooling F16 -> F16, two sets of tensors in turns",
      &t_turns);
  p3d_bench_print_row ("pooling F16 -> F32", &t_mixed);
  p3d_bench_print_row ("pooling F32 -> F32", &t_f32);
  p3d_bench_print_row ("geometry update (no host sync)", &t_geometry);
  p3d_bench_print_row ("C reference: pooling F32", &t_host_pool);
  p3d_bench_print_row ("C reference: geometry", &t_host_geometry);

  /* Diagnostics: where the time goes. */
  g_print ("\n| geometry step (us, median of %u) | time |\n",
      MAX (100, runs / 5));
  g_print ("| --- | --- |\n");
  for (i = 0; i < P3D_BENCH_GEOMETRY_STEPS; i++) {
    g_print ("| %s | %.1f |\n", p3d_bench_geometry_step_names[i], step_us[i]);
    step_total += step_us[i];
  }
  g_print ("| sum of the steps | %.1f |\n", step_total);
  print_run_layout (reference, &params);

  P3D_BENCH_CHECK (p3dc_cuda_free (d_features));
  P3D_BENCH_CHECK (p3dc_cuda_free (d_depth));
  P3D_BENCH_CHECK (p3dc_cuda_free (d_features_h));
  P3D_BENCH_CHECK (p3dc_cuda_free (d_depth_h));
  P3D_BENCH_CHECK (p3dc_cuda_free (d_out));
  P3D_BENCH_CHECK (p3dc_cuda_free (d_features_h2));
  P3D_BENCH_CHECK (p3dc_cuda_free (d_depth_h2));
  P3D_BENCH_CHECK (p3dc_cuda_free (d_out2));
  p3dc_bevpool_geometry_cuda_free (geometry);
  p3dc_bevpool_geometry_free (reference);
  p3dc_bevpool_geometry_free (downloaded);
  P3D_BENCH_CHECK (p3dc_cuda_stream_destroy (stream));
  g_free (features);
  g_free (depth);
  g_free (features_h);
  g_free (depth_h);
  g_free (hw.out);
  g_free (calib);
  return same_geometry && exact_f16 && exact_f32 ? 0 : 1;
}
