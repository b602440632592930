#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "p3dbench.h"

void
p3d_bench_check (P3dcResult result, const gchar * what, const gchar * file,
    gint line)
{
  if (result == P3DC_OK)
    return;
  g_printerr ("%s:%d: %s failed: %s (%d)\n", file, line, what,
      p3dc_result_string (result), result);
  exit (1);
}

static gint
compare_doubles (gconstpointer a, gconstpointer b)
{
  gdouble x = *(const gdouble *) a, y = *(const gdouble *) b;

  return x < y ? -1 : x > y ? 1 : 0;
}

static void
summarize (gdouble * times, guint runs, P3dBenchStats * stats)
{
  qsort (times, runs, sizeof (gdouble), compare_doubles);
  stats->runs = runs;
  stats->min_us = times[0];
  stats->p10_us = times[runs / 10];
  stats->median_us = (runs % 2) ? times[runs / 2]
      : 0.5 * (times[runs / 2 - 1] + times[runs / 2]);
  stats->p90_us = times[(runs * 9) / 10 < runs ? (runs * 9) / 10 : runs - 1];
}

P3dcResult
p3d_bench_in_turns (gpointer user_data, P3dcCudaStream stream)
{
  P3dBenchTurns *turns = user_data;
  gpointer data = turns->data[turns->next];

  turns->next ^= 1;
  return turns->func (data, stream);
}

P3dcResult
p3d_bench_gpu (P3dBenchFunc func, gpointer user_data, P3dcCudaStream stream,
    guint warmup, guint runs, P3dBenchStats * stats)
{
  P3dcCudaEvent start = NULL, stop = NULL;
  gdouble *times;
  P3dcResult result;
  guint i;

  g_return_val_if_fail (runs > 0, P3DC_ERROR_INVALID_ARGUMENT);
  if ((result = p3dc_cuda_event_create_timed (&start)) != P3DC_OK)
    return result;
  if ((result = p3dc_cuda_event_create_timed (&stop)) != P3DC_OK) {
    p3dc_cuda_event_destroy (start);
    return result;
  }
  times = g_new (gdouble, runs);
  for (i = 0; i < warmup && result == P3DC_OK; i++)
    result = func (user_data, stream);
  if (result == P3DC_OK)
    result = p3dc_cuda_stream_synchronize (stream);
  for (i = 0; i < runs && result == P3DC_OK; i++) {
    gfloat ms = 0.0f;

    if ((result = p3dc_cuda_event_record (start, stream)) != P3DC_OK)
      break;
    if ((result = func (user_data, stream)) != P3DC_OK)
      break;
    if ((result = p3dc_cuda_event_record (stop, stream)) != P3DC_OK)
      break;
    if ((result = p3dc_cuda_event_synchronize (stop)) != P3DC_OK)
      break;
    result = p3dc_cuda_event_elapsed_ms (&ms, start, stop);
    times[i] = ms * 1000.0;
  }
  if (result == P3DC_OK)
    summarize (times, runs, stats);
  g_free (times);
  p3dc_cuda_event_destroy (start);
  p3dc_cuda_event_destroy (stop);
  return result;
}

void
p3d_bench_host (P3dBenchHostFunc func, gpointer user_data, guint warmup,
    guint runs, P3dBenchStats * stats)
{
  gdouble *times = g_new (gdouble, runs);
  guint i;

  for (i = 0; i < warmup; i++)
    func (user_data);
  for (i = 0; i < runs; i++) {
    gint64 begin = g_get_monotonic_time ();

    func (user_data);
    times[i] = (gdouble) (g_get_monotonic_time () - begin);
  }
  summarize (times, runs, stats);
  g_free (times);
}

gpointer
p3d_bench_read_file (const gchar * path, gsize * size)
{
  gchar *contents = NULL;
  GError *error = NULL;

  if (!g_file_get_contents (path, &contents, size, &error)) {
    g_printerr ("cannot read %s: %s\n", path, error->message);
    g_clear_error (&error);
    return NULL;
  }
  return contents;
}

gfloat *
p3d_bench_load_points (const gchar * path, guint file_channels, gboolean half,
    guint out_channels, gsize * n_points)
{
  gsize size = 0, value_size = half ? 2 : 4, n, i;
  guint c;
  guint8 *raw = p3d_bench_read_file (path, &size);
  gfloat *points;

  if (raw == NULL)
    return NULL;
  if (size % (file_channels * value_size) != 0) {
    g_printerr ("%s: %" G_GSIZE_FORMAT " bytes is not a whole number of "
        "%u-channel points\n", path, size, file_channels);
    g_free (raw);
    return NULL;
  }
  n = size / (file_channels * value_size);
  points = g_new0 (gfloat, n * out_channels);
  for (i = 0; i < n; i++) {
    for (c = 0; c < out_channels && c < file_channels; c++) {
      gsize at = (i * file_channels + c) * value_size;

      if (half) {
        guint16 h;

        memcpy (&h, raw + at, 2);
        points[i * out_channels + c] = p3dc_half_to_float (h);
      } else {
        memcpy (&points[i * out_channels + c], raw + at, 4);
      }
    }
  }
  g_free (raw);
  *n_points = n;
  return points;
}

void
p3d_bench_print_row (const gchar * name, const P3dBenchStats * stats)
{
  g_print ("| %s | %.1f | %.1f | %.1f | %u |\n", name, stats->median_us,
      stats->p10_us, stats->p90_us, stats->runs);
}
