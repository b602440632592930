/* nms on the GPU: the time from boxes on the device to the kept list on the
 * device (CUDA events, after a warm-up, median of many runs), for every mode
 * at N = 500, 4096 and 20000 boxes, each result checked against the
 * reference.
 *
 * The boxes are detector-like: objects with 1 to 9 jittered candidates each
 * (5 on average), the candidates of an object scoring below the object's
 * own confidence; 3D objects are cars, pedestrians and cyclists (or the
 * sizes of the ground-truth boxes of an mmdet3d info file given with
 * --objects) over a 70 m square in front of the sensor, 2D ones are 16 to
 * 400 pixel boxes of 10 classes in a 1920 x 1080 image.  Scores are made
 * distinct (their rank order kept) so that other implementations, which
 * may not sort stably, keep the same boxes.
 *
 * --write-boxes DIR writes the 2D boxes (P3dcBox2d records,
 * boxes2d_<N>.bin), the kept indices of the iou runs (kept_iou_<N>.bin and
 * kept_iou_classes_<N>.bin, int32) and the iou timings (p3d_iou.tsv) for
 * bench_nms_torchvision.py, which times torchvision on the same boxes.
 *
 * --sizes times other box counts than 500, 4096 and 20000.  --workspace
 * CAPACITY makes each call's workspace CAPACITY boxes (max-boxes) where
 * the count is smaller, as in a pipeline whose max-boxes is set for its largest frame:
 * a count's time in a larger workspace.
 *
 * --warmup sets the untimed calls before each timing (20; the timing in
 * turns makes at least one, so that both sets of buffers are written
 * before they are checked).  Under compute-sanitizer's racecheck a call
 * takes tens of milliseconds even at 64 boxes, and far longer at
 * thousands: --warmup 0 --runs 1 makes each mode and size three calls,
 * every output checked against the reference.
 *
 * "in turns" times calls that take two sets of buffers in turns (the same
 * boxes in both), as in a pipeline whose buffer pools hand out other
 * buffers each frame: a workspace of up to 4096 boxes then sets its
 * graph's nodes again on every call (cuda/kernel_graph.cuh), which the
 * calls on one set of buffers do not.
 *
 * The per-stage times and the designs the library no longer has are
 * recorded in docs/performance.md.
 *
 *   bench_nms [--runs R] [--warmup W] [--reference] [--objects info.json]
 *             [--write-boxes DIR] [--sizes N,N,...] [--cases C,C,...]
 *             [--workspace CAPACITY]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-glib/json-glib.h>

#include "nms.h"
#include "p3dbench.h"

typedef struct
{
  gfloat dx, dy, dz;
  gint32 label;
} ObjectSize;

/* Car, pedestrian, cyclist (KITTI), in the proportions of a street. */
static const ObjectSize default_sizes[] = {
  {4.5f, 1.9f, 1.6f, 0}, {4.5f, 1.9f, 1.6f, 0}, {4.5f, 1.9f, 1.6f, 0},
  {0.8f, 0.6f, 1.7f, 1}, {0.8f, 0.6f, 1.7f, 1}, {1.8f, 0.6f, 1.7f, 2},
};

typedef struct
{
  P3dcNms *nms;
  P3dcNmsParams params;
  gpointer boxes, count, out, out_count, kept_index;
  guint capacity;
  /* for the reference */
  gconstpointer host_boxes;
  gpointer host_out;
} Run;

static P3dcResult
run_once (gpointer user_data, P3dcCudaStream stream)
{
  Run *run = user_data;

  return p3dc_nms_cuda (run->nms, &run->params, run->boxes, run->count,
      run->out, run->capacity, run->out_count, run->kept_index, stream);
}

/* Buffers of @run's own for @n records of @record_size bytes, the boxes
 * @host_boxes. */
static void
alloc_buffers (Run * run, guint n, gsize record_size,
    gconstpointer host_boxes, P3dcCudaStream stream)
{
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&run->boxes, n * record_size));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&run->count, sizeof (guint32)));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&run->out, n * record_size));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&run->out_count, sizeof (guint32)));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&run->kept_index, n * 4));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_htod (run->boxes, host_boxes,
          n * record_size, stream));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_htod (run->count, &n, sizeof (guint32),
          stream));
}

static void
free_buffers (Run * run)
{
  P3D_BENCH_CHECK (p3dc_cuda_free (run->boxes));
  P3D_BENCH_CHECK (p3dc_cuda_free (run->count));
  P3D_BENCH_CHECK (p3dc_cuda_free (run->out));
  P3D_BENCH_CHECK (p3dc_cuda_free (run->out_count));
  P3D_BENCH_CHECK (p3dc_cuda_free (run->kept_index));
}

/* The last run's output on the device against the reference's. */
static gboolean
same_as_reference (Run * run, gsize record_size, guint32 want_count,
    const guint8 * want_out, const gint32 * want_index, P3dcCudaStream stream,
    guint32 * got_count, gint32 * got_index)
{
  guint n = run->capacity;
  guint8 *got_out = g_malloc (n * record_size);
  gboolean same;

  P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (got_count, run->out_count,
          sizeof (guint32), stream));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (got_out, run->out, n * record_size,
          stream));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (got_index, run->kept_index, n * 4,
          stream));
  P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (stream));
  same = *got_count == want_count
      && memcmp (got_index, want_index, n * 4) == 0
      && memcmp (got_out, want_out, n * record_size) == 0;
  g_free (got_out);
  return same;
}

/* The sizes and labels of the ground-truth boxes of an mmdet3d info file. */
static GArray *
load_object_sizes (const gchar * path)
{
  JsonParser *parser = json_parser_new ();
  GArray *sizes = g_array_new (FALSE, FALSE, sizeof (ObjectSize));
  GError *error = NULL;
  JsonObject *root;
  JsonArray *list;
  guint f, i;

  if (!json_parser_load_from_file (parser, path, &error)) {
    g_printerr ("%s: %s\n", path, error->message);
    exit (1);
  }
  root = json_node_get_object (json_parser_get_root (parser));
  list = json_object_get_array_member (root, "data_list");
  for (f = 0; list != NULL && f < json_array_get_length (list); f++) {
    JsonObject *frame = json_array_get_object_element (list, f);
    JsonArray *instances = json_object_get_array_member (frame, "instances");
    guint n_instances = instances ? json_array_get_length (instances) : 0;

    for (i = 0; i < n_instances; i++) {
      JsonObject *instance = json_array_get_object_element (instances, i);
      JsonArray *box = json_object_get_array_member (instance, "bbox_3d");
      ObjectSize size;

      if (box == NULL || json_array_get_length (box) < 7)
        continue;
      size.dx = json_array_get_double_element (box, 3);
      size.dy = json_array_get_double_element (box, 4);
      size.dz = json_array_get_double_element (box, 5);
      size.label = json_object_get_int_member (instance, "bbox_label_3d");
      if (size.dx > 0 && size.dy > 0 && size.label >= 0)
        g_array_append_val (sizes, size);
    }
  }
  g_object_unref (parser);
  if (sizes->len == 0) {
    g_printerr ("%s: no usable instances[].bbox_3d\n", path);
    exit (1);
  }
  return sizes;
}

/* Replaces the scores by distinct ones in the same order. */
typedef struct
{
  gfloat score;
  guint index;
} Ranked;

static gint
compare_ranked (gconstpointer pa, gconstpointer pb)
{
  const Ranked *a = pa, *b = pb;

  if (a->score != b->score)
    return a->score < b->score ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

static void
make_scores_distinct (gpointer boxes, gsize record_size, guint n)
{
  Ranked *ranked = g_new (Ranked, n);
  guint i;

  for (i = 0; i < n; i++) {
    memcpy (&ranked[i].score, (guint8 *) boxes + i * record_size +
        record_size - 8, 4);
    ranked[i].index = i;
  }
  qsort (ranked, n, sizeof *ranked, compare_ranked);
  for (i = 0; i < n; i++) {
    gfloat score = 0.05f + 0.95f * (gfloat) (i + 1) / (gfloat) n;

    memcpy ((guint8 *) boxes + ranked[i].index * record_size +
        record_size - 8, &score, 4);
  }
  g_free (ranked);
}

static P3dcBox3d *
make_boxes3d (GRand * rand, guint n, const ObjectSize * sizes, guint n_sizes)
{
  P3dcBox3d *boxes = g_new (P3dcBox3d, n);
  guint i = 0;

  while (i < n) {
    const ObjectSize *size = &sizes[g_rand_int_range (rand, 0, n_sizes)];
    gfloat x = g_rand_double_range (rand, 0, 70);
    gfloat y = g_rand_double_range (rand, -35, 35);
    gfloat z = g_rand_double_range (rand, -2, 0);
    gfloat yaw = g_rand_double_range (rand, -G_PI, G_PI);
    gfloat confidence = g_rand_double_range (rand, 0.1, 1.0);
    gfloat jitter = 0.15f * MAX (size->dx, size->dy);
    guint candidates = g_rand_int_range (rand, 1, 10);
    guint c;

    confidence *= confidence;
    for (c = 0; c < candidates && i < n; c++, i++) {
      P3dcBox3d *b = &boxes[i];

      b->x = x + g_rand_double_range (rand, -jitter, jitter);
      b->y = y + g_rand_double_range (rand, -jitter, jitter);
      b->z = z + g_rand_double_range (rand, -0.2, 0.2);
      b->dx = size->dx * g_rand_double_range (rand, 0.9, 1.1);
      b->dy = size->dy * g_rand_double_range (rand, 0.9, 1.1);
      b->dz = size->dz * g_rand_double_range (rand, 0.9, 1.1);
      b->yaw = yaw + g_rand_double_range (rand, -0.2, 0.2);
      b->score = confidence * g_rand_double_range (rand, 0.4, 1.0);
      b->label = size->label;
    }
  }
  make_scores_distinct (boxes, sizeof (P3dcBox3d), n);
  return boxes;
}

static P3dcBox2d *
make_boxes2d (GRand * rand, guint n)
{
  P3dcBox2d *boxes = g_new (P3dcBox2d, n);
  guint i = 0;

  while (i < n) {
    gfloat w = g_rand_double_range (rand, 16, 400);
    gfloat h = w * g_rand_double_range (rand, 0.5, 2.0);
    gfloat cx = g_rand_double_range (rand, 0, 1920);
    gfloat cy = g_rand_double_range (rand, 0, 1080);
    gfloat confidence = g_rand_double_range (rand, 0.1, 1.0);
    gint32 label = g_rand_int_range (rand, 0, 10);
    guint candidates = g_rand_int_range (rand, 1, 10);
    guint c;

    confidence *= confidence;
    for (c = 0; c < candidates && i < n; c++, i++) {
      P3dcBox2d *b = &boxes[i];
      gfloat bx = cx + g_rand_double_range (rand, -0.1, 0.1) * w;
      gfloat by = cy + g_rand_double_range (rand, -0.1, 0.1) * h;
      gfloat bw = w * g_rand_double_range (rand, 0.9, 1.1);
      gfloat bh = h * g_rand_double_range (rand, 0.9, 1.1);

      b->x1 = bx - 0.5f * bw;
      b->y1 = by - 0.5f * bh;
      b->x2 = bx + 0.5f * bw;
      b->y2 = by + 0.5f * bh;
      b->score = confidence * g_rand_double_range (rand, 0.4, 1.0);
      b->label = label;
    }
  }
  make_scores_distinct (boxes, sizeof (P3dcBox2d), n);
  return boxes;
}

static void
write_file (const gchar * dir, const gchar * name, gconstpointer data,
    gsize size)
{
  gchar *path = g_build_filename (dir, name, NULL);
  GError *error = NULL;

  if (!g_file_set_contents (path, data, size, &error)) {
    g_printerr ("%s: %s\n", path, error->message);
    exit (1);
  }
  g_free (path);
}

static void
host_reference (gpointer user_data)
{
  const Run *run = user_data;
  guint32 count;

  p3dc_nms_cpu (&run->params, run->host_boxes, run->capacity, run->host_out,
      run->capacity, &count, NULL);
}

/* The latency targets of docs/performance.md, microseconds, at 500, 4096
 * and 20000 boxes; 0 at other sizes. */
static gdouble
nms_target (P3dcNmsMode mode, guint n)
{
  const guint sizes[] = { 500, 4096, 20000 };
  const gdouble iou[] = { 20, 60, 500 };
  const gdouble circle[] = { 20, 60, 300 };
  const gdouble rotated[] = { 25, 100, 700 };
  guint s;

  for (s = 0; s < G_N_ELEMENTS (sizes); s++) {
    if (sizes[s] != n)
      continue;
    if (mode == P3DC_NMS_BEV_ROTATED)
      return rotated[s];
    return mode == P3DC_NMS_CIRCLE ? circle[s] : iou[s];
  }
  return 0;
}

/* The comma-separated numbers of @list, at most @most of them, each @low to
 * @high, into @values: their number, or 0 (said on stderr, as option
 * @option's) for a bad list or an empty one. */
static guint
parse_numbers (const gchar * option, const gchar * list, guint * values,
    guint most, guint64 low, guint64 high)
{
  gchar **parts = g_strsplit (list, ",", -1);
  guint n;

  for (n = 0; parts[n] != NULL; n++) {
    gchar *end = NULL;
    guint64 value = g_ascii_strtoull (parts[n], &end, 10);

    if (n == most || end == parts[n] || *end != '\0' || value < low
        || value > high) {
      g_printerr ("%s: at most %u numbers of %" G_GUINT64_FORMAT " to %"
          G_GUINT64_FORMAT ", comma-separated\n", option, most, low, high);
      g_strfreev (parts);
      return 0;
    }
    values[n] = (guint) value;
  }
  g_strfreev (parts);
  if (n == 0)
    g_printerr ("%s: no number given\n", option);
  return n;
}

int
main (int argc, char **argv)
{
  guint sizes[16] = { 500, 4096, 20000 };
  guint n_sizes = 3;
  gchar *size_list = NULL, *case_list = NULL;
  struct
  {
    const gchar *name;
    P3dcNmsMode mode;
    gboolean per_class;
    gfloat threshold;
  } cases[] = {
    {"iou", P3DC_NMS_IOU, FALSE, 0.5f},
    {"iou, per class (10)", P3DC_NMS_IOU, TRUE, 0.5f},
    {"bev-aligned", P3DC_NMS_BEV_ALIGNED, FALSE, 0.1f},
    {"bev-rotated", P3DC_NMS_BEV_ROTATED, FALSE, 0.1f},
    {"bev-rotated, per class", P3DC_NMS_BEV_ROTATED, TRUE, 0.1f},
    {"circle", P3DC_NMS_CIRCLE, FALSE, 2.0f},
  };
  gboolean take_case[G_N_ELEMENTS (cases)];
  gint runs = 200, warmup = 20, workspace = 0;
  gboolean reference = FALSE;
  gchar *objects = NULL, *write_dir = NULL;
  GOptionEntry entries[] = {
    {"runs", 'r', 0, G_OPTION_ARG_INT, &runs, "Timed runs per case", "R"},
    {"warmup", 0, 0, G_OPTION_ARG_INT, &warmup,
        "Untimed calls before each timing (default 20)", "W"},
    {"reference", 0, 0, G_OPTION_ARG_NONE, &reference,
        "Also time the C reference", NULL},
    {"objects", 0, 0, G_OPTION_ARG_FILENAME, &objects,
          "mmdet3d info JSON whose ground-truth box sizes make the 3D objects",
        "FILE"},
    {"write-boxes", 0, 0, G_OPTION_ARG_FILENAME, &write_dir,
        "Write the 2D boxes, kept indices and timings for "
          "bench_nms_torchvision.py", "DIR"},
    {"sizes", 0, 0, G_OPTION_ARG_STRING, &size_list,
          "Box counts to time, comma-separated (default 500,4096,20000)",
        "LIST"},
    {"workspace", 0, 0, G_OPTION_ARG_INT, &workspace,
        "Each workspace's capacity in boxes where the count is smaller "
          "(default: the count)", "CAPACITY"},
    {"cases", 0, 0, G_OPTION_ARG_STRING, &case_list,
        "The cases to run, comma-separated numbers (default all): 0 iou, "
          "1 iou per class, 2 bev-aligned, 3 bev-rotated, 4 bev-rotated per "
          "class, 5 circle", "LIST"},
    {NULL}
  };
  GOptionContext *context = g_option_context_new ("- time nms on the GPU");
  GError *error = NULL;
  GString *table = g_string_new (NULL), *tsv = g_string_new (NULL);
  const ObjectSize *object_sizes = default_sizes;
  guint n_object_sizes = G_N_ELEMENTS (default_sizes);
  GArray *loaded = NULL;
  P3dcCudaStream stream = NULL;
  gchar device_name[256] = "";
  gint major = 0, minor = 0, multiprocessors = 0;
  guint s, c;

  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error)) {
    g_printerr ("%s\n", error->message);
    return 2;
  }
  g_option_context_free (context);
  if (runs < 1)
    runs = 1;
  if (warmup < 0)
    warmup = 0;
  if (workspace < 0 || workspace > (gint) P3DC_NMS_MAX_CAPACITY) {
    g_printerr ("--workspace: 0 to %u boxes\n", P3DC_NMS_MAX_CAPACITY);
    return 2;
  }
  if (size_list != NULL) {
    n_sizes = parse_numbers ("--sizes", size_list, sizes, G_N_ELEMENTS (sizes),
        1, P3DC_NMS_MAX_CAPACITY);
    if (n_sizes == 0)
      return 2;
  }
  for (c = 0; c < G_N_ELEMENTS (cases); c++)
    take_case[c] = case_list == NULL;
  if (case_list != NULL) {
    guint picked[G_N_ELEMENTS (cases)], n_picked, i;

    n_picked = parse_numbers ("--cases", case_list, picked,
        G_N_ELEMENTS (picked), 0, G_N_ELEMENTS (cases) - 1);
    if (n_picked == 0)
      return 2;
    for (i = 0; i < n_picked; i++)
      take_case[picked[i]] = TRUE;
  }
  if (objects != NULL) {
    loaded = load_object_sizes (objects);
    object_sizes = (const ObjectSize *) loaded->data;
    n_object_sizes = loaded->len;
  }
  if (p3dc_cuda_device_count () == 0) {
    g_printerr ("no CUDA device: %s\n",
        p3dc_result_string (p3dc_cuda_device_probe ()));
    return 1;
  }
  P3D_BENCH_CHECK (p3dc_cuda_device_describe (0, device_name,
          sizeof device_name, &major, &minor, &multiprocessors));
  P3D_BENCH_CHECK (p3dc_cuda_stream_create (&stream));
  g_print ("device: %s (sm_%d%d, %d SMs); %d timed runs per case after %d "
      "warm-up calls; 3D objects: %s", device_name, major, minor,
      multiprocessors, runs, warmup,
      objects ? objects : "car / pedestrian / cyclist");
  if (workspace > 0)
    g_print ("; workspaces of %d boxes where N is smaller (N in W)", workspace);
  g_print ("\n\n");
  g_string_append (table, "| mode | N | threshold | kept | median us | "
      "p10 us | p90 us | in turns, median us | target us | "
      "same as reference |");
  if (reference)
    g_string_append (table, " reference (CPU) ms |");
  g_string_append (table, "\n|---|---|---|---|---|---|---|---|---|---|");
  if (reference)
    g_string_append (table, "---|");
  g_string_append (table, "\n");

  for (c = 0; c < G_N_ELEMENTS (cases); c++) {
    if (!take_case[c])
      continue;
    for (s = 0; s < n_sizes; s++) {
      guint n = sizes[s], capacity = MAX (n, (guint) workspace);
      GRand *rand = g_rand_new_with_seed (1000 + n);
      gsize record_size = p3dc_nms_record_size (cases[c].mode);
      gpointer host_boxes;
      Run bench, *run = &bench, second;
      P3dBenchTurns turns;
      P3dBenchStats stats, turn_stats, host_stats;
      guint8 *want_out;
      gint32 *want_index, *got_index;
      guint32 want_count = 0, got_count = 0;
      gboolean same;
      gdouble target;

      if (cases[c].mode == P3DC_NMS_IOU)
        host_boxes = make_boxes2d (rand, n);
      else
        host_boxes = make_boxes3d (rand, n, object_sizes, n_object_sizes);
      g_rand_free (rand);

      memset (&bench, 0, sizeof bench);
      p3dc_nms_params_init (&run->params);
      run->params.mode = cases[c].mode;
      run->params.per_class = cases[c].per_class;
      if (cases[c].mode == P3DC_NMS_CIRCLE)
        run->params.distance_threshold = cases[c].threshold;
      else
        run->params.iou_threshold = cases[c].threshold;
      run->capacity = n;
      P3D_BENCH_CHECK (p3dc_nms_new (capacity, &run->nms));
      alloc_buffers (run, n, record_size, host_boxes, stream);
      second = bench;
      alloc_buffers (&second, n, record_size, host_boxes, stream);

      want_out = g_malloc (n * record_size);
      want_index = g_new (gint32, n);
      got_index = g_new (gint32, n);
      P3D_BENCH_CHECK (p3dc_nms_cpu (&run->params, host_boxes, n, want_out, n,
              &want_count, want_index));

      /* the library's design, through the public entry point */
      P3D_BENCH_CHECK (p3d_bench_gpu (run_once, run, stream, warmup, runs,
              &stats));
      same = same_as_reference (run, record_size, want_count, want_out,
          want_index, stream, &got_count, got_index);
      turns.func = run_once;
      turns.data[0] = run;
      turns.data[1] = &second;
      turns.next = 0;
      P3D_BENCH_CHECK (p3d_bench_gpu (p3d_bench_in_turns, &turns, stream,
              MAX (warmup, 1), runs, &turn_stats));
      same = same && same_as_reference (run, record_size, want_count,
          want_out, want_index, stream, &got_count, got_index)
          && same_as_reference (&second, record_size, want_count, want_out,
          want_index, stream, &got_count, got_index);

      if (reference) {
        run->host_boxes = host_boxes;
        run->host_out = want_out;
        p3d_bench_host (host_reference, run, 1, n > 5000 ? 3 : 20, &host_stats);
      }

      target = capacity == n ? nms_target (cases[c].mode, n) : 0;
      g_string_append_printf (table, "| %s | %u", cases[c].name, n);
      if (capacity > n)
        g_string_append_printf (table, " in %u", capacity);
      g_string_append_printf (table, " | %g | %u | %.1f | %.1f | %.1f | "
          "%.1f | ", cases[c].threshold, got_count, stats.median_us,
          stats.p10_us, stats.p90_us, turn_stats.median_us);
      if (target > 0)
        g_string_append_printf (table, "%.0f", target);
      g_string_append_printf (table, " | %s |", same ? "yes" : "**NO**");
      if (reference)
        g_string_append_printf (table, " %.2f |", host_stats.median_us / 1000);
      g_string_append (table, "\n");

      if (write_dir != NULL && cases[c].mode == P3DC_NMS_IOU) {
        gchar *name;

        g_mkdir_with_parents (write_dir, 0755);
        name = g_strdup_printf ("boxes2d_%u.bin", n);
        write_file (write_dir, name, host_boxes, n * record_size);
        g_free (name);
        name = g_strdup_printf ("kept_iou%s_%u.bin",
            cases[c].per_class ? "_classes" : "", n);
        write_file (write_dir, name, got_index, got_count * 4);
        g_free (name);
        g_string_append_printf (tsv, "%u\t%d\t%g\t%u\t%.2f\t%.2f\t%.2f\n", n,
            cases[c].per_class, cases[c].threshold, got_count,
            stats.median_us, stats.p10_us, stats.p90_us);
      }
      if (!same)
        g_printerr ("%s, N = %u: CUDA keeps %u boxes, the reference %u, or "
            "their indices or bytes differ\n", cases[c].name, n, got_count,
            want_count);

      g_free (want_out);
      g_free (want_index);
      g_free (got_index);
      free_buffers (run);
      free_buffers (&second);
      p3dc_nms_free (run->nms);
      g_free (host_boxes);
    }
  }
  if (write_dir != NULL)
    write_file (write_dir, "p3d_iou.tsv", tsv->str, tsv->len);
  g_print ("%s", table->str);
  g_string_free (table, TRUE);
  g_string_free (tsv, TRUE);
  if (loaded != NULL)
    g_array_free (loaded, TRUE);
  g_free (size_list);
  g_free (case_list);
  P3D_BENCH_CHECK (p3dc_cuda_stream_destroy (stream));
  return 0;
}
