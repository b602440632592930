/* Benchmark of voxelize on real sweeps.
 *
 *   bench_voxelize [--runs N] [--kitti FILE]... [--nuscenes FILE]
 *
 * --kitti (repeatable): float32 x 4 KITTI sweeps, with the PointPillars
 * KITTI settings (0.16 x 0.16 x 4 m over [0, -39.68, -3, 69.12, 39.68, 1],
 * max-points 32, max-voxels 40000); --nuscenes: the float16 x 5 10-sweep
 * frame of lidar_ai_solution, widened to xyzit float32, with 0.2 m pillars
 * over [-51.2, -51.2, -5, 51.2, 51.2, 3] (max-points 20, and 32 to compare
 * with CUDA-PointPillars) and with CenterPoint's 3D grid (0.075 x 0.075 x
 * 0.2 m over [-54, -54, -5, 54, 54, 3], max-points 10, max-voxels 160000).
 *
 * Every case first checks the GPU output against the reference, bit for
 * bit, then times p3dc_voxelize_cuda() exactly as
 * the element calls it, with CUDA events (median of --runs after a
 * warm-up, each run alone on the stream): in the steady state
 * (output_clean = 1, the same output buffers every run) and, for the first
 * sweep of each kind, writing every byte (output_clean = 0).  A "back to
 * back" row queues 100 frames between one pair of events, as a pipeline
 * does, and gives the time per frame; with several KITTI sweeps, one more
 * such row cycles through all of them (another input and point count every
 * frame, as a live sensor gives).  The reference runs on one CPU core.
 * The table is markdown.  The per-kernel times, and the designs the
 * library no longer has (stream launches, one persistent kernel), are
 * recorded in docs/performance.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p3dbench.h"
#include "voxelize.h"

#define BACK_TO_BACK_FRAMES 100

typedef struct
{
  const gchar *name;
  gdouble voxel_size[3];
  gdouble range[6];
  guint channels;
  guint max_points;
  guint max_voxels;
} Config;

static const Config kitti_config = { "KITTI pillars", {0.16, 0.16, 4.0},
{0.0, -39.68, -3.0, 69.12, 39.68, 1.0}, 4, 32, 40000
};

static const Config nuscenes_configs[] = {
  {"nuScenes 0.2 m pillars", {0.2, 0.2, 8.0},
      {-51.2, -51.2, -5.0, 51.2, 51.2, 3.0}, 5, 20, 40000},
  {"nuScenes 0.2 m pillars", {0.2, 0.2, 8.0},
      {-51.2, -51.2, -5.0, 51.2, 51.2, 3.0}, 5, 32, 40000},
  {"nuScenes CenterPoint 3D grid", {0.075, 0.075, 0.2},
      {-54.0, -54.0, -5.0, 54.0, 54.0, 3.0}, 5, 10, 160000},
};

/* One configuration on one or more sweeps: device and host tensors. */
typedef struct
{
  P3dcVoxelizeParams params;
  P3dcVoxelizer *voxelizer;
  guint n_sweeps;
  const gfloat **host_points;
  void **points;
  gsize *n_points;
  guint current;                /* sweep of the next frame */
  P3dcVoxelizeOutput out;
  P3dcVoxelizeOutput host_out;
  P3dcVoxelizeStats host_stats;
  guint32 host_count;
  int output_clean;
} Run;

/* One frame of the current sweep; the next frame takes the next sweep. */
static P3dcResult
run_gpu (gpointer user_data, P3dcCudaStream stream)
{
  Run *run = user_data;
  guint s = run->current;

  run->current = (s + 1) % run->n_sweeps;
  return p3dc_voxelize_cuda (run->voxelizer, run->points[s], run->n_points[s],
      &run->out, run->output_clean, stream);
}

static P3dcResult
run_gpu_back_to_back (gpointer user_data, P3dcCudaStream stream)
{
  P3dcResult result = P3DC_OK;
  guint i;

  for (i = 0; i < BACK_TO_BACK_FRAMES && result == P3DC_OK; i++)
    result = run_gpu (user_data, stream);
  return result;
}

/* The reference on sweep @s. */
static void
run_cpu_sweep (Run * run, guint s)
{
  P3D_BENCH_CHECK (p3dc_voxelize_cpu (&run->params, run->host_points[s],
          run->n_points[s], &run->host_out));
}

static void
run_cpu (gpointer user_data)
{
  run_cpu_sweep (user_data, 0);
}

static gsize
voxels_bytes (const P3dcVoxelizeParams * p)
{
  return (gsize) p->max_voxels * p->max_points * p->channels * 4;
}

static void
run_init (Run * run, const Config * config, const gfloat ** points,
    const gsize * n, guint n_sweeps, P3dcCudaStream stream)
{
  P3dcVoxelizeParams *p = &run->params;
  gsize most = 0;
  guint s;

  memset (run, 0, sizeof (*run));
  P3D_BENCH_CHECK (p3dc_voxelize_params_init (p, config->voxel_size,
          config->range, config->channels, config->max_points,
          config->max_voxels));
  run->n_sweeps = n_sweeps;
  run->host_points = g_new (const gfloat *, n_sweeps);
  run->points = g_new0 (void *, n_sweeps);
  run->n_points = g_new (gsize, n_sweeps);
  for (s = 0; s < n_sweeps; s++) {
    run->host_points[s] = points[s];
    run->n_points[s] = n[s];
    most = MAX (most, n[s]);
    P3D_BENCH_CHECK (p3dc_cuda_malloc (&run->points[s],
            n[s] * p->channels * 4 + 4));
    P3D_BENCH_CHECK (p3dc_cuda_memcpy_htod (run->points[s], points[s],
            n[s] * p->channels * 4, stream));
  }
  P3D_BENCH_CHECK (p3dc_voxelizer_new (p, most, &run->voxelizer));
  P3D_BENCH_CHECK (p3dc_cuda_malloc ((void **) &run->out.voxels,
          voxels_bytes (p)));
  P3D_BENCH_CHECK (p3dc_cuda_malloc ((void **) &run->out.num_points,
          (gsize) p->max_voxels * 4));
  P3D_BENCH_CHECK (p3dc_cuda_malloc ((void **) &run->out.coords,
          (gsize) p->max_voxels * 16));
  P3D_BENCH_CHECK (p3dc_cuda_malloc ((void **) &run->out.count, 4));
  P3D_BENCH_CHECK (p3dc_cuda_malloc ((void **) &run->out.stats,
          sizeof (P3dcVoxelizeStats)));
  run->host_out.voxels = g_malloc (voxels_bytes (p));
  run->host_out.num_points = g_new (guint32, p->max_voxels);
  run->host_out.coords = g_new (gint32, (gsize) p->max_voxels * 4);
  run->host_out.count = &run->host_count;
  run->host_out.stats = &run->host_stats;
}

static void
run_clear (Run * run, P3dcCudaStream stream)
{
  guint s;

  P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (stream));
  p3dc_voxelizer_free (run->voxelizer);
  for (s = 0; s < run->n_sweeps; s++)
    p3dc_cuda_free (run->points[s]);
  g_free (run->points);
  g_free (run->host_points);
  g_free (run->n_points);
  p3dc_cuda_free (run->out.voxels);
  p3dc_cuda_free (run->out.num_points);
  p3dc_cuda_free (run->out.coords);
  p3dc_cuda_free (run->out.count);
  p3dc_cuda_free (run->out.stats);
  g_free (run->host_out.voxels);
  g_free (run->host_out.num_points);
  g_free (run->host_out.coords);
}

/* The device output against the reference's (host_out) bit for bit. */
static gboolean
same_as_reference (Run * run, P3dcCudaStream stream)
{
  const P3dcVoxelizeParams *p = &run->params;
  gsize bytes = voxels_bytes (p);
  guint8 *voxels = g_malloc (bytes);
  guint32 *num_points = g_new (guint32, p->max_voxels);
  gint32 *coords = g_new (gint32, (gsize) p->max_voxels * 4);
  guint32 count;
  P3dcVoxelizeStats stats;
  gboolean same;

  P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (voxels, run->out.voxels, bytes,
          stream));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (num_points, run->out.num_points,
          (gsize) p->max_voxels * 4, stream));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (coords, run->out.coords,
          (gsize) p->max_voxels * 16, stream));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (&count, run->out.count, 4, stream));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (&stats, run->out.stats,
          sizeof (stats), stream));
  P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (stream));
  same = count == run->host_count
      && memcmp (&stats, &run->host_stats, sizeof (stats)) == 0
      && memcmp (voxels, run->host_out.voxels, bytes) == 0
      && memcmp (num_points, run->host_out.num_points,
      (gsize) p->max_voxels * 4) == 0
      && memcmp (coords, run->host_out.coords, (gsize) p->max_voxels * 16) == 0;
  g_free (voxels);
  g_free (num_points);
  g_free (coords);
  return same;
}

/* Runs sweep 0 on a poisoned output, then again on the clean one, and
 * compares both with the reference; leaves the output clean and the next
 * frame on sweep 0. */
static gboolean
check_run (Run * run, P3dcCudaStream stream)
{
  const P3dcVoxelizeParams *p = &run->params;
  gboolean same = TRUE;
  guint pass;

  run_cpu_sweep (run, 0);
  for (pass = 0; pass < 2; pass++) {
    run->output_clean = pass;
    run->current = 0;
    if (!pass) {
      P3D_BENCH_CHECK (p3dc_cuda_memset (run->out.voxels, 0xff,
              voxels_bytes (p), stream));
      P3D_BENCH_CHECK (p3dc_cuda_memset (run->out.num_points, 0xff,
              (gsize) p->max_voxels * 4, stream));
      P3D_BENCH_CHECK (p3dc_cuda_memset (run->out.coords, 0xff,
              (gsize) p->max_voxels * 16, stream));
    }
    P3D_BENCH_CHECK (run_gpu (run, stream));
    same &= same_as_reference (run, stream);
  }
  run->current = 0;
  return same;
}

static void
add_row (GString * table, const gchar * name, const P3dcVoxelizeStats * s,
    const P3dBenchStats * t, gdouble divide)
{
  g_string_append_printf (table, "| %s | %u | %u | %u | %u | %.1f | %.1f | "
      "%.1f | %u |\n", name, s->points_in, s->voxels,
      s->points_in - s->points_nonfinite - s->points_out_of_range
      - s->points_over_max_points - s->points_over_max_voxels,
      s->voxels_dropped, t->median_us / divide, t->p10_us / divide,
      t->p90_us / divide, t->runs);
}

/* Checks and times one configuration on its sweeps (@n_sweeps > 1: the
 * round-robin rows only). */
static gboolean
bench_case (const Config * config, const gchar * sweep,
    const gfloat ** points, const gsize * n, guint n_sweeps, guint runs,
    gboolean full, P3dcCudaStream stream, GString * table)
{
  P3dBenchStats t;
  gboolean same;
  gchar *name;
  Run run;

  run_init (&run, config, points, n, n_sweeps, stream);
  same = check_run (&run, stream);

  if (n_sweeps > 1) {
    /* Every sweep in turn, back to back; then the last frame (the last
     * sweep) against the reference. */
    run.output_clean = 1;
    run.current = 0;
    P3D_BENCH_CHECK (p3d_bench_gpu (run_gpu_back_to_back, &run, stream, 1,
            MAX (runs / 10, 10), &t));
    name = g_strdup_printf ("%s, %u sweeps in turn, max-points %u, clean, "
        "%d frames back to back (per frame)", config->name, n_sweeps,
        config->max_points, BACK_TO_BACK_FRAMES);
    run_cpu_sweep (&run, (run.current + n_sweeps - 1) % n_sweeps);
    same &= same_as_reference (&run, stream);
    add_row (table, name, &run.host_stats, &t, BACK_TO_BACK_FRAMES);
    g_free (name);
    g_print ("%s, %u sweeps in turn: %s\n", config->name, n_sweeps,
        same ? "same as the reference" : "DIFFERS FROM THE REFERENCE");
    run_clear (&run, stream);
    return same;
  }

  g_print ("%s, %s: %u points, %u voxels, %u dropped voxels, %u points over "
      "max-points: %s\n", config->name, sweep, run.host_stats.points_in,
      run.host_stats.voxels, run.host_stats.voxels_dropped,
      run.host_stats.points_over_max_points,
      same ? "same as the reference" : "DIFFERS FROM THE REFERENCE");

  run.output_clean = 1;
  P3D_BENCH_CHECK (p3d_bench_gpu (run_gpu, &run, stream, 20, runs, &t));
  name = g_strdup_printf ("%s %s, max-points %u, clean", config->name, sweep,
      config->max_points);
  add_row (table, name, &run.host_stats, &t, 1.0);
  g_free (name);
  if (full) {
    P3D_BENCH_CHECK (p3d_bench_gpu (run_gpu_back_to_back, &run, stream, 1,
            MAX (runs / 10, 10), &t));
    name = g_strdup_printf ("%s %s, max-points %u, clean, %d frames back "
        "to back (per frame)", config->name, sweep, config->max_points,
        BACK_TO_BACK_FRAMES);
    add_row (table, name, &run.host_stats, &t, BACK_TO_BACK_FRAMES);
    g_free (name);

    run.output_clean = 0;
    P3D_BENCH_CHECK (p3d_bench_gpu (run_gpu, &run, stream, 20, runs, &t));
    name = g_strdup_printf ("%s %s, max-points %u, full write", config->name,
        sweep, config->max_points);
    add_row (table, name, &run.host_stats, &t, 1.0);
    g_free (name);
    /* The last frame wrote every byte: still the reference's. */
    same &= same_as_reference (&run, stream);

    p3d_bench_host (run_cpu, &run, 2, MAX (runs / 10, 5), &t);
    name = g_strdup_printf ("%s %s, max-points %u, reference, one CPU core",
        config->name, sweep, config->max_points);
    add_row (table, name, &run.host_stats, &t, 1.0);
    g_free (name);
  }
  run_clear (&run, stream);
  return same;
}

int
main (int argc, char **argv)
{
  gchar **kitti = NULL, *nuscenes = NULL;
  gint runs = 200;
  GOptionEntry entries[] = {
    {"kitti", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &kitti,
        "float32 x 4 KITTI velodyne sweep (repeatable)", "FILE"},
    {"nuscenes", 0, 0, G_OPTION_ARG_FILENAME, &nuscenes,
        "float16 x 5 sweep (lidar_ai_solution's 271k-point frame)", "FILE"},
    {"runs", 0, 0, G_OPTION_ARG_INT, &runs, "timed runs per case (200)", "N"},
    {NULL}
  };
  GOptionContext *context = g_option_context_new ("- time voxelize");
  GError *error = NULL;
  P3dcCudaStream stream = NULL;
  GString *table = g_string_new (NULL);
  gboolean all_same = TRUE;
  char device_name[256] = "";
  int major = 0, minor = 0, sms = 0;
  guint i, n_kitti = 0;
  gfloat **kitti_points = NULL;
  gsize *kitti_n = NULL;

  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error)) {
    g_printerr ("%s\n", error->message);
    return 2;
  }
  g_option_context_free (context);
  if (kitti == NULL && nuscenes == NULL) {
    g_printerr ("give --kitti FILE... and/or --nuscenes FILE (see --help)\n");
    return 2;
  }
  if (runs < 1) {
    g_printerr ("--runs must be at least 1\n");
    return 2;
  }
  if (p3dc_cuda_device_count () == 0) {
    g_printerr ("no CUDA device: %s\n",
        p3dc_result_string (p3dc_cuda_device_probe ()));
    return 1;
  }
  P3D_BENCH_CHECK (p3dc_cuda_device_describe (0, device_name,
          sizeof device_name, &major, &minor, &sms));
  P3D_BENCH_CHECK (p3dc_cuda_stream_create (&stream));

  g_string_append_printf (table, "\nvoxelize on %s (sm_%d%d, %d SMs), GPU "
      "time in us\n\n", device_name, major, minor, sms);
  g_string_append (table, "| case | points | voxels | points kept | "
      "voxels dropped | median | p10 | p90 | runs |\n");
  g_string_append (table, "| --- | ---: | ---: | ---: | ---: | ---: | ---: "
      "| ---: | ---: |\n");

  if (kitti != NULL)
    n_kitti = g_strv_length (kitti);
  kitti_points = g_new0 (gfloat *, n_kitti + 1);
  kitti_n = g_new0 (gsize, n_kitti + 1);
  for (i = 0; i < n_kitti; i++) {
    gchar *sweep;

    kitti_points[i] = p3d_bench_load_points (kitti[i], 4, FALSE, 4,
        &kitti_n[i]);
    if (kitti_points[i] == NULL)
      return 1;
    sweep = g_path_get_basename (kitti[i]);
    all_same &= bench_case (&kitti_config, sweep,
        (const gfloat **) &kitti_points[i], &kitti_n[i], 1, runs, i == 0,
        stream, table);
    g_free (sweep);
  }
  if (n_kitti > 1)
    all_same &= bench_case (&kitti_config, NULL,
        (const gfloat **) kitti_points, kitti_n, n_kitti, runs, FALSE, stream,
        table);
  for (i = 0; i < n_kitti; i++)
    g_free (kitti_points[i]);
  g_free (kitti_points);
  g_free (kitti_n);
  if (nuscenes != NULL) {
    gsize n = 0;
    gfloat *points = p3d_bench_load_points (nuscenes, 5, TRUE, 5, &n);

    if (points == NULL)
      return 1;
    for (i = 0; i < G_N_ELEMENTS (nuscenes_configs); i++)
      all_same &= bench_case (&nuscenes_configs[i], "271k",
          (const gfloat **) &points, &n, 1, runs, i != 1, stream, table);
    g_free (points);
  }
  g_print ("%s", table->str);
  g_string_free (table, TRUE);
  p3dc_cuda_stream_destroy (stream);
  g_strfreev (kitti);
  g_free (nuscenes);
  if (!all_same) {
    g_printerr ("some GPU outputs differ from the reference (see above)\n");
    return 1;
  }
  return 0;
}
