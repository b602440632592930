/* The anchor-head decode kernels against the reference, which they must
 * match bit for bit (sigmoid and exp are the shared versions made of +, -,
 * * and /, so the measured tolerance is 0): KITTI's PointPillars head (432
 * x 496 pillars, 216 x 248 maps, 3 classes x 2 rotations) in OpenPCDet's
 * class-agnostic and per-class NMS and in mmdetection3d's, and without a
 * NMS, from F32 NCHW maps and from F16 channels-last maps (the conv net's
 * buffers), many equal scores, every candidate above a threshold of 0,
 * long chains of suppressions, frames in sequence through one workspace,
 * guard bytes behind the output. */
#include <string.h>
#include <gst/check/gstcheck.h>

#include "anchor3d_common.h"
#include "anchor3d_decode.h"
#include "half.h"
#include "p3dtest.h"

#define GUARD_BYTES 256
#define GUARD_VALUE 0x5a

typedef struct
{
  P3dcAnchor3dParams params;
  P3dcAnchor3dTable table;
  P3dTestHead head;
  guint32 capacity, stride;
  gboolean half;
  void *device;                 /* the head: NCHW F32 or NHWC F16 */
  P3dcCudaStream stream;
  P3dcAnchor3dDecoder *decoder;
  void *d_boxes, *d_count, *d_velocity;
} GpuCase;

static gsize
device_bytes (const GpuCase * c)
{
  gsize plane = (gsize) c->head.height * c->head.width;

  return c->half ? plane * c->stride * 2
      : plane * p3d_test_head_channels (&c->head) * 4;
}

static GpuCase *
gpu_case_new (const P3dcAnchor3dParams * params, gboolean mmdet3d,
    guint32 height, guint32 width, gboolean half)
{
  GpuCase *c = g_new0 (GpuCase, 1);
  P3dcAnchor3dSet sets[3];
  guint n = mmdet3d ? p3d_test_anchor3d_mmdet3d_kitti (sets) :
      p3d_test_anchor3d_openpcdet_kitti (sets);

  c->params = *params;
  c->half = half;
  fail_unless_equals_int (p3dc_anchor3d_table_init (&c->table, sets, n,
          height, width), P3DC_OK);
  p3d_test_head_init (&c->head, params, &c->table);
  c->stride = (p3d_test_head_channels (&c->head) + 7) / 8 * 8;
  c->capacity = p3dc_anchor3d_output_capacity (params, &c->table);
  fail_unless (c->capacity > 0);
  fail_unless_equals_int (p3dc_cuda_stream_create (&c->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_anchor3d_decoder_new (params, &c->table,
          &c->decoder), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_malloc (&c->device, device_bytes (c)),
      P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_malloc (&c->d_boxes,
          c->capacity * sizeof (P3dcBox3d) + GUARD_BYTES), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_malloc (&c->d_count, 4 + GUARD_BYTES),
      P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_malloc (&c->d_velocity,
          c->capacity * 8 + GUARD_BYTES), P3DC_OK);
  return c;
}

static void
gpu_case_free (GpuCase * c)
{
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (c->stream), P3DC_OK);
  p3dc_anchor3d_decoder_free (c->decoder);
  p3dc_cuda_free (c->device);
  p3dc_cuda_free (c->d_boxes);
  p3dc_cuda_free (c->d_count);
  p3dc_cuda_free (c->d_velocity);
  p3dc_cuda_stream_destroy (c->stream);
  p3d_test_head_clear (&c->head);
  p3dc_anchor3d_table_clear (&c->table);
  g_free (c);
}

/* Copies the host head to the device, as the case's storage wants it. */
static void
gpu_case_upload (GpuCase * c)
{
  guint16 *staged = NULL;

  if (c->half)
    staged = p3d_test_head_to_nhwc (&c->head, c->stride);
  fail_unless_equals_int (p3dc_cuda_memcpy_htod (c->device,
          c->half ? (gpointer) staged : (gpointer) c->head.data,
          device_bytes (c), c->stream), P3DC_OK);
  /* the copy reads @staged before the synchronization below frees it */
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (c->stream), P3DC_OK);
  g_free (staged);
}

static void
gpu_case_fill (GpuCase * c, P3dTestRng * rng, gdouble hit_rate, gboolean ties)
{
  p3d_test_head_fill (&c->head, rng, hit_rate, ties);
  gpu_case_upload (c);
}

static void
gpu_case_run_check (GpuCase * c, const gchar * what, guint32 min_boxes)
{
  P3dcAnchor3dMaps d_maps, h_maps;
  P3dcAnchor3dOutput d_out = { c->d_boxes, c->d_count, c->d_velocity };
  P3dcAnchor3dOutput h_out;
  gsize box_bytes = c->capacity * sizeof (P3dcBox3d);
  guint8 *boxes = g_malloc (box_bytes + GUARD_BYTES);
  guint8 *velocity = g_malloc (c->capacity * 8 + GUARD_BYTES);
  guint8 count[4 + GUARD_BYTES];
  P3dcBox3d *ref_boxes = g_new (P3dcBox3d, c->capacity);
  gfloat *ref_velocity = g_new (gfloat, 2 * c->capacity);
  guint32 ref_count = 0, device_count, i;

  if (c->half)
    p3d_test_head_maps_nhwc (&c->head, c->device, c->stride, &d_maps);
  else
    p3d_test_head_maps (&c->head, c->device, &d_maps);
  p3d_test_head_maps (&c->head, c->head.data, &h_maps);
  fail_unless_equals_int (p3dc_cuda_memset (c->d_boxes, GUARD_VALUE,
          box_bytes + GUARD_BYTES, c->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memset (c->d_count, GUARD_VALUE,
          4 + GUARD_BYTES, c->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memset (c->d_velocity, GUARD_VALUE,
          c->capacity * 8 + GUARD_BYTES, c->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_anchor3d_decode_cuda (c->decoder, &d_maps,
          &d_out, c->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (boxes, c->d_boxes,
          box_bytes + GUARD_BYTES, c->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (count, c->d_count,
          4 + GUARD_BYTES, c->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (velocity, c->d_velocity,
          c->capacity * 8 + GUARD_BYTES, c->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (c->stream), P3DC_OK);

  h_out.boxes = ref_boxes;
  h_out.count = &ref_count;
  h_out.velocity = ref_velocity;
  fail_unless_equals_int (p3dc_anchor3d_decode_cpu (&c->params, &c->table,
          &h_maps, &h_out), P3DC_OK);
  memcpy (&device_count, count, 4);
  fail_unless_equals_int (device_count, ref_count);
  /* enough boxes that a mistake would show */
  fail_unless (ref_count >= min_boxes, "%s: only %u boxes", what, ref_count);
  for (i = 0; i < c->capacity; i++) {
    const P3dcBox3d *d = (const P3dcBox3d *) boxes + i, *r = ref_boxes + i;

    if (memcmp (d, r, sizeof (P3dcBox3d)) != 0)
      fail ("%s: box %u of %u: (%g %g %g %g %g %g %g %g %d), reference (%g %g "
          "%g %g %g %g %g %g %d)", what, i, ref_count, d->x, d->y, d->z,
          d->dx, d->dy, d->dz, d->yaw, d->score, d->label, r->x, r->y, r->z,
          r->dx, r->dy, r->dz, r->yaw, r->score, r->label);
  }
  fail_unless (memcmp (velocity, ref_velocity, c->capacity * 8) == 0,
      "%s: velocities differ", what);
  for (i = 0; i < GUARD_BYTES; i++) {
    fail_unless (boxes[box_bytes + i] == GUARD_VALUE, "%s: box guard", what);
    fail_unless (count[4 + i] == GUARD_VALUE, "%s: count guard", what);
    fail_unless (velocity[c->capacity * 8 + i] == GUARD_VALUE,
        "%s: velocity guard", what);
  }
  g_free (boxes);
  g_free (velocity);
  g_free (ref_boxes);
  g_free (ref_velocity);
}

/* The three rule sets on KITTI's map, both frameworks without a NMS, and
 * OpenPCDet's class-agnostic list under the exact rotated IoU (mode 6; mode
 * 0 is mmcv's rule, both through the library's nms), F32 and F16. */
GST_START_TEST (test_kitti_every_mode)
{
  guint mode, half;

  for (mode = 0; mode < 7; mode++) {
    for (half = 0; half < 2; half++) {
      P3dcAnchor3dParams p;
      GpuCase *c;
      P3dTestRng rng;
      gchar *what;

      if (mode < 3 || mode == 4 || mode == 6) {
        p3d_test_anchor3d_openpcdet_params (&p);
        p.per_class = mode == 1;
        if (mode == 2)
          p.nms = P3DC_ANCHOR3D_NMS_ALIGNED;
        if (mode == 6)
          p.nms = P3DC_ANCHOR3D_NMS_ROTATED;
      } else {
        p3d_test_anchor3d_mmdet3d_params (&p);
        p.pre_max = 1000;
        p.post_max = 300;
      }
      /* without a NMS, as bevdetect's model-nms=false asks for it */
      if (mode >= 4) {
        p.nms = P3DC_ANCHOR3D_NMS_NONE;
        p.post_max = p.rules == P3DC_ANCHOR3D_MMDET3D ?
            p.num_classes * p.pre_max : p.pre_max;
      }
      what = g_strdup_printf ("mode %u %s", mode,
          half ? "F16 NHWC" : "F32 NCHW");
      c = gpu_case_new (&p, mode == 3 || mode == 5, 248, 216, half);
      p3d_test_rng_init (&rng, 10 * mode + half);
      /* 0.5 % of the 964,224 (anchor, class) pairs: about 4800 */
      gpu_case_fill (c, &rng, 0.005, FALSE);
      gpu_case_run_check (c, what, 100);
      g_free (what);
      gpu_case_free (c);
    }
  }
}

GST_END_TEST;

/* Equal scores everywhere, every list length around a mask word, a
 * threshold of 0 (every anchor a candidate: the radix select's longest
 * lists), max_num below and above what the lists keep. */
GST_START_TEST (test_ties_and_limits)
{
  const guint32 pre_maxes[] = { 1, 63, 64, 65, 4096 };
  guint i, rules;

  for (rules = 0; rules < 2; rules++) {
    for (i = 0; i < G_N_ELEMENTS (pre_maxes); i++) {
      P3dcAnchor3dParams p;
      GpuCase *c;
      P3dTestRng rng;
      gchar *what;

      if (rules == 0) {
        p3d_test_anchor3d_openpcdet_params (&p);
        p.per_class = i % 2;
        p.post_max = i == 4 ? 500 : 40;
      } else {
        p3d_test_anchor3d_mmdet3d_params (&p);
        p.post_max = i % 2 ? 50 : 5000;
      }
      p.pre_max = pre_maxes[i];
      if (i == 4)
        p.score_threshold = 0.0f;
      what = g_strdup_printf ("rules %u, pre-max %u, threshold %g", rules,
          p.pre_max, p.score_threshold);
      c = gpu_case_new (&p, rules == 1, 60, 50, i % 2);
      p3d_test_rng_init (&rng, 50 + i + 10 * rules);
      gpu_case_fill (c, &rng, 0.05, TRUE);
      gpu_case_run_check (c, what, 1);
      g_free (what);
      gpu_case_free (c);
    }
  }
}

GST_END_TEST;

/* Two rows of cars whose scores fall along x, so that each box overlaps
 * its neighbours in score order: the test NMS keeps every fifth (cars
 * across, 1.6 m wide at 0.32 m a cell) or thirteenth (cars along, 3.9 m)
 * box of a row, long chains of suppressions inside each 64-box chunk of
 * the walk, and across chunks; the rows' scores interleave in the sorted
 * list.  Every other anchor scores below the threshold. */
GST_START_TEST (test_suppression_chains)
{
  guint rules, half;

  for (rules = 0; rules < 3; rules++) {
    for (half = 0; half < 2; half++) {
      P3dcAnchor3dParams p;
      GpuCase *c;
      gchar *what;
      guint32 i, x, k, car, car_class;

      if (rules < 2) {
        p3d_test_anchor3d_openpcdet_params (&p);
        p.per_class = rules == 1;
        car = 0;                /* OpenPCDet's sets: Car first */
        car_class = 0;
      } else {
        p3d_test_anchor3d_mmdet3d_params (&p);
        p.pre_max = 1000;
        p.post_max = 300;
        car = 4;                /* Pedestrian, Cyclist, Car */
        car_class = 2;
      }
      c = gpu_case_new (&p, rules == 2, 248, 216, half);
      for (i = 0; i < c->head.height * c->head.width *
          p3d_test_head_channels (&c->head); i++)
        c->head.data[i] = 0.0f;
      for (k = 0; k < c->head.anchors; k++)
        for (i = 0; i < c->head.classes; i++)
          for (x = 0; x < c->head.width * c->head.height; x++)
            *p3d_test_head_cls (&c->head, k, i, x / c->head.width,
                x % c->head.width) = -8.0f;
      for (x = 0; x < c->head.width; x++) {
        /* logits 2 - x / 64 (every one F16-exact, scores above 0.2) on
         * the cars across at row 100, 1/128 lower on those along at 20 */
        *p3d_test_head_cls (&c->head, car + 1, car_class, 100, x) =
            2.0f - (gfloat) x / 64.0f;
        *p3d_test_head_cls (&c->head, car, car_class, 20, x) =
            2.0f - (gfloat) x / 64.0f - 1.0f / 128.0f;
      }
      gpu_case_upload (c);
      what = g_strdup_printf ("suppression chains, rules %u, %s", rules,
          half ? "F16 NHWC" : "F32 NCHW");
      /* 216 / 5 + 216 / 13 boxes kept, about */
      gpu_case_run_check (c, what, 50);
      g_free (what);
      gpu_case_free (c);
    }
  }
}

GST_END_TEST;

/* One workspace, several frames: nothing of a frame leaks into the next
 * (an empty frame among them). */
GST_START_TEST (test_frame_sequence)
{
  guint rules;

  for (rules = 0; rules < 2; rules++) {
    P3dcAnchor3dParams p;
    GpuCase *c;
    P3dTestRng rng;
    guint frame;

    if (rules == 0)
      p3d_test_anchor3d_openpcdet_params (&p);
    else
      p3d_test_anchor3d_mmdet3d_params (&p);
    c = gpu_case_new (&p, rules == 1, 248, 216, TRUE);
    p3d_test_rng_init (&rng, 99 + rules);
    for (frame = 0; frame < 4; frame++) {
      gchar *what = g_strdup_printf ("rules %u frame %u", rules, frame);

      gpu_case_fill (c, &rng, frame == 2 ? 1e-9 : 0.002, frame == 3);
      gpu_case_run_check (c, what, frame == 2 ? 0 : 20);
      g_free (what);
    }
    gpu_case_free (c);
  }
}

GST_END_TEST;

GST_START_TEST (test_invalid_arguments)
{
  P3dcAnchor3dParams p;
  P3dcAnchor3dDecoder *d = (P3dcAnchor3dDecoder *) 1;
  GpuCase *c;
  P3dcAnchor3dMaps maps;
  P3dcAnchor3dOutput out;

  p3d_test_anchor3d_openpcdet_params (&p);
  c = gpu_case_new (&p, FALSE, 20, 20, FALSE);
  p.pre_max = 0;
  fail_unless_equals_int (p3dc_anchor3d_decoder_new (&p, &c->table, &d),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless (d == NULL);
  p3d_test_head_maps (&c->head, c->device, &maps);
  out.boxes = c->d_boxes;
  out.count = c->d_count;
  out.velocity = NULL;
  fail_unless_equals_int (p3dc_anchor3d_decode_cuda (NULL, &maps, &out,
          c->stream), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_anchor3d_decode_cuda (c->decoder, NULL, &out,
          c->stream), P3DC_ERROR_INVALID_ARGUMENT);
  maps.dir.data = NULL;
  fail_unless_equals_int (p3dc_anchor3d_decode_cuda (c->decoder, &maps, &out,
          c->stream), P3DC_ERROR_INVALID_ARGUMENT);
  p3d_test_head_maps (&c->head, c->device, &maps);
  out.count = (guint32 *) ((guint8 *) c->d_count + 1);
  fail_unless_equals_int (p3dc_anchor3d_decode_cuda (c->decoder, &maps, &out,
          c->stream), P3DC_ERROR_INVALID_ARGUMENT);
  gpu_case_free (c);
}

GST_END_TEST;

static Suite *
anchor3d_decode_cuda_suite (void)
{
  Suite *s = suite_create ("anchor3d_decode_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_kitti_every_mode);
  tcase_add_test (tc, test_ties_and_limits);
  tcase_add_test (tc, test_suppression_chains);
  tcase_add_test (tc, test_frame_sequence);
  tcase_add_test (tc, test_invalid_arguments);
  return s;
}

P3D_CHECK_MAIN (anchor3d_decode_cuda);
