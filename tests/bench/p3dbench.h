/* Helpers shared by the benchmark programs: GPU timing with CUDA events after
 * a warm-up, medians over many runs, and loaders for the real data files the
 * benchmarks are run on (they are never needed by the tests). */
#ifndef P3D_BENCH_H
#define P3D_BENCH_H

#include <glib.h>

#include "runtime.h"

G_BEGIN_DECLS

/* One run of the work to time: queue it on @stream and return. */
typedef P3dcResult (*P3dBenchFunc) (gpointer user_data, P3dcCudaStream stream);
/* One run of host work to time. */
typedef void (*P3dBenchHostFunc) (gpointer user_data);

typedef struct
{
  gdouble median_us;
  gdouble p10_us;
  gdouble p90_us;
  gdouble min_us;
  guint runs;
} P3dBenchStats;

/* Times @func with an event pair around each run, after @warmup untimed
 * runs; every run is synchronized before the next, so each time is one
 * run's GPU time alone. */
P3dcResult p3d_bench_gpu (P3dBenchFunc func, gpointer user_data,
    P3dcCudaStream stream, guint warmup, guint runs, P3dBenchStats * stats);

/* @func on two data taken in turns, one a call, as a pipeline's buffer
 * pools hand out other buffers every frame: p3d_bench_gpu
 * (p3d_bench_in_turns, &turns, ...) times calls whose buffers are never
 * the call before's. */
typedef struct
{
  P3dBenchFunc func;
  gpointer data[2];
  guint next;
} P3dBenchTurns;
P3dcResult p3d_bench_in_turns (gpointer user_data, P3dcCudaStream stream);

/* Times @func on the host clock (for the C reference path). */
void p3d_bench_host (P3dBenchHostFunc func, gpointer user_data, guint warmup,
    guint runs, P3dBenchStats * stats);

/* Reads a whole file; NULL and a message on stderr when it cannot. */
gpointer p3d_bench_read_file (const gchar * path, gsize * size);

/* Reads a headerless lidar sweep of @file_channels values per point, float32
 * or (when @half) float16, and returns it as float32 with @out_channels per
 * point (extra channels dropped, missing ones zero). */
gfloat *p3d_bench_load_points (const gchar * path, guint file_channels,
    gboolean half, guint out_channels, gsize * n_points);

/* Prints "| name | median | p10 | p90 |" for a markdown table. */
void p3d_bench_print_row (const gchar * name, const P3dBenchStats * stats);

/* Exits with a message when @result is not P3DC_OK. */
#define P3D_BENCH_CHECK(call) p3d_bench_check ((call), #call, __FILE__, __LINE__)
void p3d_bench_check (P3dcResult result, const gchar * what,
    const gchar * file, gint line);

G_END_DECLS

#endif /* P3D_BENCH_H */
