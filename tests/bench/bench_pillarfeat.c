/* Benchmark of pillarfeat on voxels binned from real sweeps.
 *
 *   bench_pillarfeat [--runs N] [--nuscenes FILE] [--kitti FILE]
 *
 * --nuscenes: a float16 x 5 sweep (the 271k-point 10-sweep frame of
 * lidar_ai_solution), binned into 0.2 m pillars over
 * [-51.2, -51.2, -5, 51.2, 51.2, 3] as xyzi; --kitti: a float32 x 4 KITTI
 * sweep, binned with the PointPillars KITTI settings.  voxelize is a
 * separate operation, so the binning here is a plain C loop that keeps the
 * reference's order (voxels by first point, points in input order).
 *
 * Each case times the kernel with CUDA events (median of --runs after a
 * warm-up), in the steady state of an element (output_clean = 1, the same
 * frame again) and writing every byte (output_clean = 0), for max-points 32
 * and 20, F16 and F32, every feature set; also the steady state on two
 * outputs taken in turns, as an element's pool hands them out, where the
 * graph's node is set again on every call (cuda/kernel_graph.cuh); the
 * reference on one CPU core for pointpillars-10.  Every GPU output is
 * compared with the reference first.
 * The markdown table comes last. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pillarfeat.h"
#include "p3dbench.h"

#define MAX_VOXELS 40000
#define CHANNELS 4

typedef struct
{
  const gchar *name;
  double voxel_size[3];
  double range[6];
} Grid;

static const Grid nuscenes_grid = { "nuScenes 271k", {0.2, 0.2, 8.0},
{-51.2, -51.2, -5.0, 51.2, 51.2, 3.0}
};

static const Grid kitti_grid = { "KITTI", {0.16, 0.16, 4.0},
{0.0, -39.68, -3.0, 69.12, 39.68, 1.0}
};

/* An x-voxels tensor set on the host. */
typedef struct
{
  guint32 max_points;
  gfloat *voxels;
  guint32 *num_points;
  gint32 *coords;
  guint32 count;
} HostVoxels;

/* Bins @points (CHANNELS floats each) into voxels: a point goes to cell
 * floor ((p - min) / size) when inside the grid; voxels in order of their
 * first point, points in input order, the first max_points and MAX_VOXELS
 * kept. */
static void
bin_points (const Grid * grid, const gfloat * points, gsize n_points,
    guint32 max_points, HostVoxels * out)
{
  gint32 cells[3];
  gint32 *voxel_of_cell;
  gsize i, n_cells;
  guint axis;

  for (axis = 0; axis < 3; axis++)
    cells[axis] = (gint32) round ((grid->range[axis + 3] - grid->range[axis])
        / grid->voxel_size[axis]);
  n_cells = (gsize) cells[0] * cells[1] * cells[2];
  voxel_of_cell = g_new (gint32, n_cells);
  memset (voxel_of_cell, 0xff, n_cells * sizeof (gint32));

  out->max_points = max_points;
  out->voxels = g_new0 (gfloat, (gsize) MAX_VOXELS * max_points * CHANNELS);
  out->num_points = g_new0 (guint32, MAX_VOXELS);
  out->coords = g_new0 (gint32, MAX_VOXELS * 4);
  out->count = 0;
  for (i = 0; i < n_points; i++) {
    const gfloat *point = points + i * CHANNELS;
    gint32 cell[3];
    gsize flat;
    gint32 voxel;

    for (axis = 0; axis < 3; axis++) {
      gfloat index = floorf ((point[axis] - (gfloat) grid->range[axis]) /
          (gfloat) grid->voxel_size[axis]);

      /* NaN fails both comparisons and is dropped too */
      if (!(index >= 0.0f && index < (gfloat) cells[axis]))
        break;
      cell[axis] = (gint32) index;
    }
    if (axis < 3)
      continue;
    flat = ((gsize) cell[2] * cells[1] + cell[1]) * cells[0] + cell[0];
    voxel = voxel_of_cell[flat];
    if (voxel < 0) {
      if (out->count == MAX_VOXELS)
        continue;
      voxel = voxel_of_cell[flat] = (gint32) out->count++;
      out->coords[voxel * 4 + 1] = cell[2];
      out->coords[voxel * 4 + 2] = cell[1];
      out->coords[voxel * 4 + 3] = cell[0];
    }
    if (out->num_points[voxel] < max_points) {
      memcpy (out->voxels + ((gsize) voxel * max_points +
              out->num_points[voxel]) * CHANNELS, point,
          CHANNELS * sizeof (gfloat));
      out->num_points[voxel]++;
    }
  }
  g_free (voxel_of_cell);
}

static void
host_voxels_clear (HostVoxels * v)
{
  g_free (v->voxels);
  g_free (v->num_points);
  g_free (v->coords);
}

/* One timed configuration: device tensors and the call's arguments. */
typedef struct
{
  P3dcPillarFeatParams params;
  P3dcPillarFeatCuda *pf;
  P3dcPillarFeatInput in;
  P3dcPillarFeatOutput out;
  /* the second output of the calls in turns, and the one the next call
   * takes */
  P3dcPillarFeatOutput other_out;
  guint turn;
  int output_clean;
  /* for the reference */
  P3dcPillarFeatInput host_in;
  P3dcPillarFeatOutput host_out;
} Run;

static P3dcResult
run_gpu (gpointer user_data, P3dcCudaStream stream)
{
  Run *run = user_data;

  return p3dc_pillarfeat_cuda (run->pf, &run->in, &run->out,
      run->output_clean, stream);
}

static P3dcResult
run_gpu_in_turns (gpointer user_data, P3dcCudaStream stream)
{
  Run *run = user_data;

  run->turn ^= 1;
  return p3dc_pillarfeat_cuda (run->pf, &run->in, run->turn ?
      &run->other_out : &run->out, run->output_clean, stream);
}

static void
run_cpu (gpointer user_data)
{
  Run *run = user_data;

  p3dc_pillarfeat_cpu (&run->params, &run->host_in, &run->host_out);
}

static const gchar *
set_name (P3dcPillarFeatureSet set)
{
  switch (set) {
    case P3DC_PILLAR_FEATURES_POINTPILLARS_10:
      return "pointpillars-10";
    case P3DC_PILLAR_FEATURES_MMDET3D_9:
      return "mmdet3d-9";
    default:
      return "pointpillars-11";
  }
}

/* Device buffers big enough for every case of one frame. */
typedef struct
{
  void *voxels, *num_points, *coords, *count;
  void *features, *out_coords, *out_count;
  void *other_features, *other_coords, *other_count;
  guint8 *host_features;
  gint32 *host_coords;
  guint32 host_count;
  guint8 *readback;
} Buffers;

static gboolean
bench_frame (const Grid * grid, const gfloat * points, gsize n_points,
    guint runs, P3dcCudaStream stream, Buffers * b, GString * table)
{
  const guint32 max_points[] = { 32, 20 };
  gboolean all_match = TRUE;
  guint m, half, set;

  for (m = 0; m < G_N_ELEMENTS (max_points); m++) {
    HostVoxels hv;

    bin_points (grid, points, n_points, max_points[m], &hv);
    g_print ("%s: %" G_GSIZE_FORMAT " points, %u voxels, max-points %u\n",
        grid->name, n_points, hv.count, max_points[m]);
    P3D_BENCH_CHECK (p3dc_cuda_memcpy_htod (b->voxels, hv.voxels,
            (gsize) MAX_VOXELS * max_points[m] * CHANNELS * 4, stream));
    P3D_BENCH_CHECK (p3dc_cuda_memcpy_htod (b->num_points, hv.num_points,
            MAX_VOXELS * 4, stream));
    P3D_BENCH_CHECK (p3dc_cuda_memcpy_htod (b->coords, hv.coords,
            MAX_VOXELS * 16, stream));
    P3D_BENCH_CHECK (p3dc_cuda_memcpy_htod (b->count, &hv.count, 4, stream));

    for (half = 0; half < 2; half++) {
      for (set = 0; set < 3; set++) {
        Run run;
        P3dBenchStats clean, full, turns;
        gsize size;

        P3D_BENCH_CHECK (p3dc_pillarfeat_params_init (&run.params,
                (P3dcPillarFeatureSet) set, half, CHANNELS, 3, max_points[m],
                MAX_VOXELS, grid->voxel_size, grid->range));
        P3D_BENCH_CHECK (p3dc_pillarfeat_cuda_new (&run.params, &run.pf));
        run.in.voxels = b->voxels;
        run.in.num_points = b->num_points;
        run.in.coords = b->coords;
        run.in.count = b->count;
        run.out.features = b->features;
        run.out.coords = b->out_coords;
        run.out.count = b->out_count;
        run.other_out.features = b->other_features;
        run.other_out.coords = b->other_coords;
        run.other_out.count = b->other_count;
        run.turn = 0;
        run.host_in.voxels = hv.voxels;
        run.host_in.num_points = hv.num_points;
        run.host_in.coords = hv.coords;
        run.host_in.count = &hv.count;
        run.host_out.features = b->host_features;
        run.host_out.coords = b->host_coords;
        run.host_out.count = &b->host_count;
        size = p3dc_pillarfeat_features_size (&run.params);

        /* a poisoned output written in full, checked against the
         * reference: the steady state below starts from it */
        P3D_BENCH_CHECK (p3dc_cuda_memset (b->features, 0xff, size, stream));
        run.output_clean = 0;
        P3D_BENCH_CHECK (run_gpu (&run, stream));
        P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (b->readback, b->features, size,
                stream));
        P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (stream));
        run_cpu (&run);
        if (memcmp (b->readback, b->host_features, size) != 0) {
          g_printerr ("%s max-points %u %s %s: GPU output differs from the "
              "reference\n", grid->name, max_points[m], half ? "F16" : "F32",
              set_name (set));
          all_match = FALSE;
        }

        run.output_clean = 1;
        P3D_BENCH_CHECK (p3d_bench_gpu (run_gpu, &run, stream, MIN (20, runs),
                runs, &clean));
        run.output_clean = 0;
        P3D_BENCH_CHECK (p3d_bench_gpu (run_gpu, &run, stream, MIN (20, runs),
                runs, &full));
        /* the second output written in full once, then both clean */
        P3D_BENCH_CHECK (run_gpu_in_turns (&run, stream));
        run.output_clean = 1;
        P3D_BENCH_CHECK (p3d_bench_gpu (run_gpu_in_turns, &run, stream,
                MIN (20, runs), runs, &turns));
        /* both outputs are the frame's features: the last call's checked */
        P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (b->readback, run.turn ?
                b->other_features : b->features, size, stream));
        P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (stream));
        if (memcmp (b->readback, b->host_features, size) != 0) {
          g_printerr ("%s max-points %u %s %s: GPU output in turns differs "
              "from the reference\n", grid->name, max_points[m],
              half ? "F16" : "F32", set_name (set));
          all_match = FALSE;
        }
        p3dc_pillarfeat_cuda_free (run.pf);
        g_string_append_printf (table, "| %s | %u | %u | %s | %s | %.1f "
            "(%.1f-%.1f) | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | ", grid->name,
            hv.count, max_points[m], half ? "F16" : "F32", set_name (set),
            clean.median_us, clean.p10_us, clean.p90_us, turns.median_us,
            turns.p10_us, turns.p90_us, full.median_us, full.p10_us,
            full.p90_us);
        if (set == P3DC_PILLAR_FEATURES_POINTPILLARS_10) {
          P3dBenchStats cpu;

          p3d_bench_host (run_cpu, &run, 2, MAX (runs / 10, 5), &cpu);
          g_string_append_printf (table, "%.0f |\n", cpu.median_us);
        } else {
          g_string_append (table, "- |\n");
        }
      }
    }
    host_voxels_clear (&hv);
  }
  return all_match;
}

int
main (int argc, char **argv)
{
  gchar *nuscenes = NULL, *kitti = NULL;
  gint runs = 200;
  GOptionEntry entries[] = {
    {"nuscenes", 0, 0, G_OPTION_ARG_FILENAME, &nuscenes,
        "float16 x 5 sweep (lidar_ai_solution's 271k-point frame)", "FILE"},
    {"kitti", 0, 0, G_OPTION_ARG_FILENAME, &kitti,
        "float32 x 4 KITTI velodyne sweep", "FILE"},
    {"runs", 0, 0, G_OPTION_ARG_INT, &runs, "timed runs per case (200)", "N"},
    {NULL}
  };
  GOptionContext *context = g_option_context_new ("- time pillarfeat");
  GError *error = NULL;
  P3dcCudaStream stream = NULL;
  GString *table = g_string_new (NULL);
  gboolean all_match = TRUE;
  Buffers b;
  gsize max_features = (gsize) MAX_VOXELS * 32 * P3DC_PILLAR_FEATURES_MAX * 4;
  char device_name[256] = "";
  int major = 0, minor = 0, sms = 0;

  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error)) {
    g_printerr ("%s\n", error->message);
    return 2;
  }
  g_option_context_free (context);
  if (nuscenes == NULL && kitti == NULL) {
    g_printerr ("give --nuscenes FILE and/or --kitti FILE (see --help)\n");
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
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&b.voxels,
          (gsize) MAX_VOXELS * 32 * CHANNELS * 4));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&b.num_points, MAX_VOXELS * 4));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&b.coords, MAX_VOXELS * 16));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&b.count, 4));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&b.features, max_features));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&b.out_coords, MAX_VOXELS * 16));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&b.out_count, 4));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&b.other_features, max_features));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&b.other_coords, MAX_VOXELS * 16));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&b.other_count, 4));
  b.host_features = g_malloc (max_features);
  b.host_coords = g_new (gint32, MAX_VOXELS * 4);
  b.readback = g_malloc (max_features);

  g_string_append_printf (table, "\npillarfeat on %s (sm_%d%d, %d SMs), "
      "max-voxels %d, xyzi input; GPU times in us, median (p10-p90) of %d "
      "runs; the reference's median on one CPU core\n\n", device_name,
      major, minor, sms, MAX_VOXELS, runs);
  g_string_append (table, "| frame | voxels | max-points | format | features "
      "| steady state (clean output) | steady state, outputs in turns "
      "| full write | reference (CPU) |\n");
  g_string_append (table, "| --- | ---: | ---: | --- | --- | ---: | ---: "
      "| ---: | ---: |\n");
  if (nuscenes != NULL) {
    gsize n = 0;
    /* x y z intensity time in float16; time is dropped */
    gfloat *points = p3d_bench_load_points (nuscenes, 5, TRUE, CHANNELS, &n);

    if (points == NULL)
      return 1;
    all_match &= bench_frame (&nuscenes_grid, points, n, runs, stream, &b,
        table);
    g_free (points);
  }
  if (kitti != NULL) {
    gsize n = 0;
    gfloat *points = p3d_bench_load_points (kitti, 4, FALSE, CHANNELS, &n);

    if (points == NULL)
      return 1;
    all_match &= bench_frame (&kitti_grid, points, n, runs, stream, &b, table);
    g_free (points);
  }
  g_print ("%s", table->str);
  g_string_free (table, TRUE);

  p3dc_cuda_free (b.voxels);
  p3dc_cuda_free (b.num_points);
  p3dc_cuda_free (b.coords);
  p3dc_cuda_free (b.count);
  p3dc_cuda_free (b.features);
  p3dc_cuda_free (b.out_coords);
  p3dc_cuda_free (b.out_count);
  p3dc_cuda_free (b.other_features);
  p3dc_cuda_free (b.other_coords);
  p3dc_cuda_free (b.other_count);
  p3dc_cuda_stream_destroy (stream);
  g_free (b.host_features);
  g_free (b.host_coords);
  g_free (b.readback);
  g_free (nuscenes);
  g_free (kitti);
  if (!all_match) {
    g_printerr ("some GPU outputs differ from the reference (see above)\n");
    return 1;
  }
  return 0;
}
