/* Benchmark of the anchor-head decode and its test NMS at KITTI's
 * PointPillars shapes (432 x 496 pillars, 216 x 248 head maps, 3 classes x
 * 2 rotations: 321,408 anchors):
 *
 *   bench_anchor3d [--runs N] [--heads FILE [--framework openpcdet|mmdet3d]
 *       [--write-boxes FILE] [--heads-only]]
 *
 * The head's outputs are F16 channels-last with each pixel's channels
 * padded to a multiple of 8, as the conv net stores them (cls 18 + box 42 +
 * dir 12 channels in one tensor here).  Synthetic heads: random logits with
 * a set share of the (anchor, class) pairs above 0.1, boxes near their
 * anchors, for OpenPCDet's pointpillar.yaml post-processing (class-agnostic
 * NMS at IoU 0.01 under mmcv's rule, pre-max 4096, post-max 500), its
 * per-class variant, and mmdetection3d's KITTI test_cfg (nms_pre 100,
 * max_num 50; and nms_pre 1000, max_num 500).  --heads: a real head, the
 * heads.f32 that tests/reference/pointpillars_torch.py run writes for the
 * KITTI model of --framework (cls, box, dir, each [channels][248][216]
 * float32), through that framework's post-processing; --write-boxes writes
 * its boxes from the GPU as boxenc's JSON lines, for pointpillars_torch.py
 * compare: decoded from the maps as they are (F32 NCHW), as the reference
 * decodes them, where the timed case reads them stored in F16.
 * --heads-only leaves the synthetic cases out.
 *
 * Every case is first compared with the C reference (bit for bit, or the
 * program fails), then timed: the GPU time of one whole decode (every
 * kernel, launch gaps included) by CUDA events, median (p10, p90) of
 * --runs after a warm-up.  The markdown table comes last. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anchor3d_common.h"
#include "anchor3d_decode.h"
#include "half.h"
#include "p3dbench.h"

#define HEIGHT 248
#define WIDTH 216

typedef struct
{
  P3dcAnchor3dDecoder *decoder;
  P3dcAnchor3dMaps maps;
  P3dcAnchor3dOutput out;
} Run;

static P3dcResult
run_gpu (gpointer user_data, P3dcCudaStream stream)
{
  Run *run = user_data;

  return p3dc_anchor3d_decode_cuda (run->decoder, &run->maps, &run->out,
      stream);
}

typedef struct
{
  gchar *name;
  guint32 candidates;           /* (anchor, class) pairs above 0.1 */
  guint32 kept;
  P3dBenchStats stats;
} Row;

/* boxenc's JSON lines of one frame. */
static void
write_boxes (const gchar * path, const P3dcBox3d * boxes, guint32 count)
{
  FILE *f = fopen (path, "w");
  guint32 i;

  if (f == NULL) {
    g_printerr ("%s: cannot write\n", path);
    exit (1);
  }
  fprintf (f, "{\"frame\":0,\"pts\":null,\"count\":%u,\"type\":\"3d\"}\n",
      count);
  for (i = 0; i < count; i++)
    fprintf (f, "{\"x\":%.9g,\"y\":%.9g,\"z\":%.9g,\"dx\":%.9g,"
        "\"dy\":%.9g,\"dz\":%.9g,\"yaw\":%.9g,\"score\":%.9g,"
        "\"label\":%d}\n", boxes[i].x, boxes[i].y, boxes[i].z, boxes[i].dx,
        boxes[i].dy, boxes[i].dz, boxes[i].yaw, boxes[i].score, boxes[i].label);
  fclose (f);
}

/* Checks the GPU against the reference on @head and times it. */
static void
bench_case (const gchar * name, const P3dcAnchor3dParams * params,
    const P3dcAnchor3dTable * table, P3dTestHead * head,
    P3dcCudaStream stream, guint runs, GArray * rows)
{
  guint32 stride = (p3d_test_head_channels (head) + 7) / 8 * 8;
  gsize bytes = (gsize) head->height * head->width * stride * 2;
  guint16 *nhwc = p3d_test_head_to_nhwc (head, stride);
  guint32 capacity = p3dc_anchor3d_output_capacity (params, table);
  P3dcBox3d *ref = g_new (P3dcBox3d, capacity), *got = g_new (P3dcBox3d,
      capacity);
  guint32 ref_count, got_count, candidates = 0, k, c, y, x;
  P3dcAnchor3dMaps host_maps;
  P3dcAnchor3dOutput host_out = { ref, &ref_count, NULL };
  void *device, *d_boxes, *d_count;
  Run run;
  Row row;

  for (y = 0; y < head->height; y++)
    for (x = 0; x < head->width; x++)
      for (k = 0; k < head->anchors; k++)
        for (c = 0; c < head->classes; c++)
          candidates += *p3d_test_head_cls (head, k, c, y, x) > -2.1972246f;
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&device, bytes));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&d_boxes, capacity * sizeof (P3dcBox3d)));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&d_count, 4));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_htod (device, nhwc, bytes, stream));
  P3D_BENCH_CHECK (p3dc_anchor3d_decoder_new (params, table, &run.decoder));
  p3d_test_head_maps_nhwc (head, device, stride, &run.maps);
  run.out.boxes = d_boxes;
  run.out.count = d_count;
  run.out.velocity = NULL;

  /* the reference reads the same F16 values from the host */
  p3d_test_head_maps_nhwc (head, nhwc, stride, &host_maps);
  P3D_BENCH_CHECK (p3dc_anchor3d_decode_cpu (params, table, &host_maps,
          &host_out));
  P3D_BENCH_CHECK (run_gpu (&run, stream));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (got, d_boxes,
          capacity * sizeof (P3dcBox3d), stream));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (&got_count, d_count, 4, stream));
  P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (stream));
  if (got_count != ref_count
      || memcmp (got, ref, capacity * sizeof (P3dcBox3d)) != 0) {
    g_printerr ("%s: the GPU's %u boxes differ from the reference's %u\n",
        name, got_count, ref_count);
    exit (1);
  }

  P3D_BENCH_CHECK (p3d_bench_gpu (run_gpu, &run, stream, 20, runs, &row.stats));
  row.name = g_strdup (name);
  row.candidates = candidates;
  row.kept = ref_count;
  g_array_append_val (rows, row);
  g_print ("%s: %u pairs above 0.1, %u boxes kept (equal to the reference), "
      "%.1f us (p10 %.1f, p90 %.1f)\n", name, candidates, ref_count,
      row.stats.median_us, row.stats.p10_us, row.stats.p90_us);

  p3dc_anchor3d_decoder_free (run.decoder);
  p3dc_cuda_free (device);
  p3dc_cuda_free (d_boxes);
  p3dc_cuda_free (d_count);
  g_free (nhwc);
  g_free (ref);
  g_free (got);
}

/* The GPU's boxes of @head's F32 NCHW maps, checked bit for bit against
 * the reference, written to @path. */
static void
write_f32_boxes (const P3dcAnchor3dParams * params,
    const P3dcAnchor3dTable * table, P3dTestHead * head,
    P3dcCudaStream stream, const gchar * path)
{
  gsize bytes = (gsize) p3d_test_head_channels (head) * head->height
      * head->width * 4;
  guint32 capacity = p3dc_anchor3d_output_capacity (params, table);
  P3dcBox3d *ref = g_new (P3dcBox3d, capacity), *got = g_new (P3dcBox3d,
      capacity);
  guint32 ref_count, got_count;
  P3dcAnchor3dMaps host_maps;
  P3dcAnchor3dOutput host_out = { ref, &ref_count, NULL };
  void *device, *d_boxes, *d_count;
  Run run;

  P3D_BENCH_CHECK (p3dc_cuda_malloc (&device, bytes));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&d_boxes, capacity * sizeof (P3dcBox3d)));
  P3D_BENCH_CHECK (p3dc_cuda_malloc (&d_count, 4));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_htod (device, head->data, bytes, stream));
  P3D_BENCH_CHECK (p3dc_anchor3d_decoder_new (params, table, &run.decoder));
  p3d_test_head_maps (head, device, &run.maps);
  run.out.boxes = d_boxes;
  run.out.count = d_count;
  run.out.velocity = NULL;
  p3d_test_head_maps (head, head->data, &host_maps);
  P3D_BENCH_CHECK (p3dc_anchor3d_decode_cpu (params, table, &host_maps,
          &host_out));
  P3D_BENCH_CHECK (run_gpu (&run, stream));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (got, d_boxes,
          capacity * sizeof (P3dcBox3d), stream));
  P3D_BENCH_CHECK (p3dc_cuda_memcpy_dtoh (&got_count, d_count, 4, stream));
  P3D_BENCH_CHECK (p3dc_cuda_stream_synchronize (stream));
  if (got_count != ref_count
      || memcmp (got, ref, capacity * sizeof (P3dcBox3d)) != 0) {
    g_printerr ("F32 maps: the GPU's %u boxes differ from the reference's "
        "%u\n", got_count, ref_count);
    exit (1);
  }
  write_boxes (path, got, got_count);
  g_print ("F32 maps: %u boxes (equal to the reference) written to %s\n",
      got_count, path);
  p3dc_anchor3d_decoder_free (run.decoder);
  p3dc_cuda_free (device);
  p3dc_cuda_free (d_boxes);
  p3dc_cuda_free (d_count);
  g_free (ref);
  g_free (got);
}

/* heads.f32 of pointpillars_torch.py: cls, box, dir planes, float32. */
static gboolean
load_heads (const gchar * path, P3dTestHead * head)
{
  gsize size, want = (gsize) p3d_test_head_channels (head) * head->height
      * head->width * 4;
  gpointer data = p3d_bench_read_file (path, &size);

  if (data == NULL)
    return FALSE;
  if (size != want) {
    g_printerr ("%s: %zu bytes, a 216 x 248 head of 6 anchors x (3 classes + "
        "7 + 2) is %zu\n", path, size, want);
    g_free (data);
    return FALSE;
  }
  memcpy (head->data, data, size);
  g_free (data);
  return TRUE;
}

/* The values the F16 storage holds. */
static void
round_to_half (P3dTestHead * head)
{
  gsize n = (gsize) p3d_test_head_channels (head) * head->height
      * head->width, i;

  for (i = 0; i < n; i++)
    head->data[i] = p3dc_half_to_float (p3dc_float_to_half (head->data[i]));
}

int
main (int argc, char **argv)
{
  static const gdouble hit_rates[] = { 0.0005, 0.002, 0.01 };
  gint runs = 500;
  gchar *heads_path = NULL, *framework = NULL, *boxes_path = NULL;
  gboolean heads_only = FALSE;
  GOptionEntry entries[] = {
    {"runs", 0, 0, G_OPTION_ARG_INT, &runs, "timed runs per case (500)", "N"},
    {"heads", 0, 0, G_OPTION_ARG_FILENAME, &heads_path,
        "heads.f32 of pointpillars_torch.py run (KITTI)", "FILE"},
    {"framework", 0, 0, G_OPTION_ARG_STRING, &framework,
        "the --heads model's: openpcdet (default) or mmdet3d", "NAME"},
    {"write-boxes", 0, 0, G_OPTION_ARG_FILENAME, &boxes_path,
        "write the --heads boxes as JSON lines", "FILE"},
    {"heads-only", 0, 0, G_OPTION_ARG_NONE, &heads_only,
        "time the --heads case only", NULL},
    {NULL}
  };
  gboolean mmdet3d_heads;
  GOptionContext *context =
      g_option_context_new ("- time the anchor-head decode and NMS");
  GError *error = NULL;
  P3dcAnchor3dSet sets[3];
  P3dcAnchor3dTable openpcdet, mmdet3d;
  P3dcAnchor3dParams params;
  P3dcCudaStream stream = NULL;
  char device_name[256] = "";
  int major = 0, minor = 0, sms = 0;
  GArray *rows = g_array_new (FALSE, FALSE, sizeof (Row));
  P3dTestHead head;
  P3dTestRng rng;
  guint i, mode;

  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error)) {
    g_printerr ("%s\n", error->message);
    return 2;
  }
  g_option_context_free (context);
  if (runs < 1) {
    g_printerr ("--runs must be at least 1\n");
    return 2;
  }
  if (framework != NULL && g_strcmp0 (framework, "openpcdet") != 0
      && g_strcmp0 (framework, "mmdet3d") != 0) {
    g_printerr ("--framework %s: openpcdet or mmdet3d\n", framework);
    return 2;
  }
  mmdet3d_heads = g_strcmp0 (framework, "mmdet3d") == 0;
  if (p3dc_cuda_device_count () == 0) {
    g_printerr ("no CUDA device: %s\n",
        p3dc_result_string (p3dc_cuda_device_probe ()));
    return 1;
  }
  P3D_BENCH_CHECK (p3dc_cuda_device_describe (0, device_name,
          sizeof device_name, &major, &minor, &sms));
  P3D_BENCH_CHECK (p3dc_cuda_stream_create (&stream));
  P3D_BENCH_CHECK (p3dc_anchor3d_table_init (&openpcdet, sets,
          p3d_test_anchor3d_openpcdet_kitti (sets), HEIGHT, WIDTH));
  P3D_BENCH_CHECK (p3dc_anchor3d_table_init (&mmdet3d, sets,
          p3d_test_anchor3d_mmdet3d_kitti (sets), HEIGHT, WIDTH));

  p3d_test_anchor3d_openpcdet_params (&params);
  p3d_test_head_init (&head, &params, &openpcdet);
  if (heads_path != NULL) {
    if (!load_heads (heads_path, &head))
      return 1;
    if (mmdet3d_heads)
      p3d_test_anchor3d_mmdet3d_params (&params);
    if (boxes_path != NULL)
      write_f32_boxes (&params, mmdet3d_heads ? &mmdet3d : &openpcdet, &head,
          stream, boxes_path);
    round_to_half (&head);
    bench_case (mmdet3d_heads ? "real head, mmdet3d" :
        "real head, OpenPCDet class-agnostic", &params,
        mmdet3d_heads ? &mmdet3d : &openpcdet, &head, stream, runs, rows);
  }
  p3d_test_rng_init (&rng, 26);
  for (i = 0; i < (heads_only ? 0 : G_N_ELEMENTS (hit_rates)); i++) {
    p3d_test_head_fill (&head, &rng, hit_rates[i], FALSE);
    for (mode = 0; mode < 4; mode++) {
      gchar *name;
      const P3dcAnchor3dTable *table = mode < 2 ? &openpcdet : &mmdet3d;

      if (mode < 2) {
        p3d_test_anchor3d_openpcdet_params (&params);
        params.per_class = mode == 1;
      } else {
        p3d_test_anchor3d_mmdet3d_params (&params);
        if (mode == 3) {
          params.pre_max = 1000;
          params.post_max = 500;
        }
      }
      name = g_strdup_printf ("%s, %.2f %% of pairs",
          mode == 0 ? "OpenPCDet class-agnostic" : mode == 1 ?
          "OpenPCDet per class" : mode == 2 ? "mmdet3d nms_pre 100" :
          "mmdet3d nms_pre 1000", 100 * hit_rates[i]);
      /* the mmdetection3d anchors are other sets; the head is the same */
      bench_case (name, &params, table, &head, stream, runs, rows);
      g_free (name);
    }
  }

  g_print ("\n%s (sm_%d%d, %d SMs), %d runs per case after 20 warm-up "
      "runs, F16 NHWC maps, 216 x 248 x 6 anchors x 3 classes\n\n",
      device_name, major, minor, sms, runs);
  g_print ("| case | pairs above 0.1 | boxes kept | decode + NMS, us: median "
      "| p10 | p90 |\n| --- | --- | --- | --- | --- | --- |\n");
  for (i = 0; i < rows->len; i++) {
    Row *row = &g_array_index (rows, Row, i);

    g_print ("| %s | %u | %u | %.1f | %.1f | %.1f |\n", row->name,
        row->candidates, row->kept, row->stats.median_us, row->stats.p10_us,
        row->stats.p90_us);
    g_free (row->name);
  }
  g_array_free (rows, TRUE);
  p3d_test_head_clear (&head);
  p3dc_anchor3d_table_clear (&openpcdet);
  p3dc_anchor3d_table_clear (&mmdet3d);
  p3dc_cuda_stream_destroy (stream);
  g_free (heads_path);
  g_free (framework);
  g_free (boxes_path);
  return 0;
}
