/* The CenterPoint decode kernels against the reference, which they must
 * match bit for bit (sigmoid, exp and atan2 are the shared versions made of +, -, * and /, so
 * the measured tolerance is 0): the nuScenes head (6 tasks, 10 classes,
 * 128 x 128, max-num 500, post-max 83) in every NMS mode (BEVDet's
 * Scale-NMS among them: per-task kinds and sizes scaled per class), from F32 NCHW
 * maps and from F16 channels-last maps (the conv net's buffers), many equal
 * scores, frames in sequence through one workspace, guard bytes behind the
 * output. */
#include <string.h>
#include <gst/check/gstcheck.h>

#include "centerpoint_decode.h"
#include "half.h"
#include "p3dtest.h"

#define MAX_TASKS 6

static const guint32 nus_classes[MAX_TASKS] = { 1, 2, 2, 1, 2, 2 };

typedef struct
{
  P3dcCenterPointParams params;
  guint32 capacity;
  gsize channels[MAX_TASKS];
  gfloat *host[MAX_TASKS];      /* [channels][H][W] F32, F16-exact values */
  void *device[MAX_TASKS];      /* the same, NCHW F32 or NHWC F16 */
  gboolean half;
  P3dcCudaStream stream;
  P3dcCenterPointDecoder *decoder;
  void *d_boxes, *d_count, *d_velocity;
} GpuCase;

static void
params_nuscenes (P3dcCenterPointParams * p, guint32 n_tasks,
    P3dcCenterPointNms nms)
{
  const gdouble radius[MAX_TASKS] = { 4, 12, 10, 1, 0.85, 0.175 };
  guint32 t;

  memset (p, 0, sizeof (*p));
  p->n_tasks = n_tasks;
  for (t = 0; t < n_tasks; t++) {
    p->tasks[t].num_classes = nus_classes[t];
    p->tasks[t].min_radius = radius[t];
  }
  p->height = p->width = 128;
  p->max_num = 500;
  p->score_threshold = 0.1f;
  p->out_size_factor = 4.0f;
  p->voxel_size[0] = p->voxel_size[1] = 0.2f;
  p->pc_range[0] = p->pc_range[1] = -51.2f;
  p->post_center_range[0] = p->post_center_range[1] = -61.2f;
  p->post_center_range[2] = -10.0f;
  p->post_center_range[3] = p->post_center_range[4] = 61.2f;
  p->post_center_range[5] = 10.0f;
  p->norm_bbox = 1;
  p->nms = nms;
  p->nms_threshold = 0.2f;
  p->pre_max_size = 1000;
  p->post_max_size = 83;
}

static P3dcMapView
view_of (const GpuCase * c, const void *base, guint32 t, guint32 channel)
{
  gsize plane = (gsize) c->params.height * c->params.width;
  P3dcMapView v;

  if (c->half) {
    v.data = (const guint16 *) base + channel;
    v.half = 1;
    v.channel_stride = 1;
    v.row_stride = c->params.width * c->channels[t];
    v.column_stride = c->channels[t];
  } else {
    v.data = (const gfloat *) base + plane * channel;
    v.half = 0;
    v.channel_stride = plane;
    v.row_stride = c->params.width;
    v.column_stride = 1;
  }
  return v;
}

static void
maps_of (const GpuCase * c, gboolean device, P3dcCenterPointTaskMaps * maps)
{
  guint32 t;

  for (t = 0; t < c->params.n_tasks; t++) {
    const void *base = device ? c->device[t] : c->host[t];
    guint32 k = c->params.tasks[t].num_classes;
    GpuCase host_view = *c;

    /* the host copy is always NCHW F32 */
    if (!device)
      host_view.half = FALSE;
    maps[t].heatmap = view_of (&host_view, base, t, 0);
    maps[t].reg = view_of (&host_view, base, t, k);
    maps[t].height = view_of (&host_view, base, t, k + 2);
    maps[t].dim = view_of (&host_view, base, t, k + 3);
    maps[t].rot = view_of (&host_view, base, t, k + 6);
    maps[t].vel = view_of (&host_view, base, t, k + 8);
  }
}

static GpuCase *
gpu_case_new (const P3dcCenterPointParams * params, gboolean half)
{
  GpuCase *c = g_new0 (GpuCase, 1);
  gsize plane = (gsize) params->height * params->width;
  guint32 t;

  c->params = *params;
  c->half = half;
  c->capacity = p3dc_centerpoint_output_capacity (params);
  fail_unless (c->capacity > 0);
  fail_unless_equals_int (p3dc_cuda_stream_create (&c->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_centerpoint_decoder_new (params, &c->decoder),
      P3DC_OK);
  for (t = 0; t < params->n_tasks; t++) {
    c->channels[t] = params->tasks[t].num_classes + 10;
    c->host[t] = g_new0 (gfloat, c->channels[t] * plane);
    fail_unless_equals_int (p3dc_cuda_malloc (&c->device[t],
            c->channels[t] * plane * (half ? 2 : 4)), P3DC_OK);
  }
  c->d_boxes = p3d_test_device_alloc (c->capacity * sizeof (P3dcBox3d),
      P3D_TEST_GUARD_BYTES, c->stream);
  c->d_count = p3d_test_device_alloc (4, P3D_TEST_GUARD_BYTES, c->stream);
  c->d_velocity = p3d_test_device_alloc (c->capacity * 8,
      P3D_TEST_GUARD_BYTES, c->stream);
  return c;
}

static void
gpu_case_free (GpuCase * c)
{
  guint32 t;

  fail_unless_equals_int (p3dc_cuda_stream_synchronize (c->stream), P3DC_OK);
  p3dc_centerpoint_decoder_free (c->decoder);
  for (t = 0; t < c->params.n_tasks; t++) {
    p3dc_cuda_free (c->device[t]);
    g_free (c->host[t]);
  }
  p3dc_cuda_free (c->d_boxes);
  p3dc_cuda_free (c->d_count);
  p3dc_cuda_free (c->d_velocity);
  p3dc_cuda_stream_destroy (c->stream);
  g_free (c);
}

/* Random head outputs, F16-exact; heatmap logits biased so that about a
 * tenth of the cells pass 0.1 (an untrained head with the usual -2.19 bias),
 * or few distinct values with @ties. */
static void
gpu_case_fill (GpuCase * c, P3dTestRng * rng, gboolean ties)
{
  gsize plane = (gsize) c->params.height * c->params.width, i;
  guint32 t, ch;

  for (t = 0; t < c->params.n_tasks; t++) {
    guint32 k = c->params.tasks[t].num_classes;
    guint16 *staged = g_new (guint16, c->channels[t] * plane);

    for (ch = 0; ch < c->channels[t]; ch++) {
      for (i = 0; i < plane; i++) {
        gfloat v;

        if (ch < k)
          v = ties ? (gfloat) p3d_test_rng_below (rng, 4) - 4.0f
              : p3d_test_rng_uniform (rng, -6.0f, -0.5f);
        else if (ch < k + 2)
          v = p3d_test_rng_uniform (rng, 0.0f, 1.0f);
        else
          v = p3d_test_rng_uniform (rng, -1.5f, 1.5f);
        v = p3dc_half_to_float (p3dc_float_to_half (v));
        c->host[t][ch * plane + i] = v;
        if (c->half)
          staged[i * c->channels[t] + ch] = p3dc_float_to_half (v);
      }
    }
    fail_unless_equals_int (p3dc_cuda_memcpy_htod (c->device[t],
            c->half ? (gpointer) staged : (gpointer) c->host[t],
            c->channels[t] * plane * (c->half ? 2 : 4), c->stream), P3DC_OK);
    /* the copy reads @staged before the synchronization below frees it */
    fail_unless_equals_int (p3dc_cuda_stream_synchronize (c->stream), P3DC_OK);
    g_free (staged);
  }
}

static void
gpu_case_run_check (GpuCase * c, const gchar * what)
{
  P3dcCenterPointTaskMaps d_maps[MAX_TASKS], h_maps[MAX_TASKS];
  P3dcCenterPointOutput d_out = { c->d_boxes, c->d_count, c->d_velocity };
  P3dcCenterPointOutput h_out;
  gsize box_bytes = c->capacity * sizeof (P3dcBox3d);
  guint8 *boxes = g_malloc (box_bytes + P3D_TEST_GUARD_BYTES);
  guint8 *velocity = g_malloc (c->capacity * 8 + P3D_TEST_GUARD_BYTES);
  guint8 count[4 + P3D_TEST_GUARD_BYTES];
  P3dcBox3d *ref_boxes = g_new (P3dcBox3d, c->capacity);
  gfloat *ref_velocity = g_new (gfloat, 2 * c->capacity);
  guint32 ref_count = 0, device_count, i;

  maps_of (c, TRUE, d_maps);
  maps_of (c, FALSE, h_maps);
  p3d_test_guard_fill (c->d_boxes, box_bytes, c->stream);
  p3d_test_guard_fill (c->d_count, 4, c->stream);
  p3d_test_guard_fill (c->d_velocity, c->capacity * 8, c->stream);
  fail_unless_equals_int (p3dc_centerpoint_decode_cuda (c->decoder, d_maps,
          &d_out, c->stream), P3DC_OK);
  p3d_test_guarded_download (boxes, c->d_boxes, box_bytes, c->stream);
  p3d_test_guarded_download (count, c->d_count, 4, c->stream);
  p3d_test_guarded_download (velocity, c->d_velocity, c->capacity * 8,
      c->stream);
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (c->stream), P3DC_OK);

  h_out.boxes = ref_boxes;
  h_out.count = &ref_count;
  h_out.velocity = ref_velocity;
  fail_unless_equals_int (p3dc_centerpoint_decode_cpu (&c->params, h_maps,
          &h_out), P3DC_OK);
  memcpy (&device_count, count, 4);
  fail_unless_equals_int (device_count, ref_count);
  /* enough boxes that a mistake would show */
  fail_unless (ref_count >= MIN (20, c->params.max_num), "%s: only %u boxes",
      what, ref_count);
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
  p3d_test_assert_guard (boxes, box_bytes, "the boxes", what);
  p3d_test_assert_guard (count, 4, "the count", what);
  p3d_test_assert_guard (velocity, c->capacity * 8, "the velocities", what);
  g_free (boxes);
  g_free (velocity);
  g_free (ref_boxes);
  g_free (ref_velocity);
}

/* One case: a workspace for @p, maps filled from seed @seed (equal scores
 * with @ties), the decode checked against the reference. */
static void
run_case (const P3dcCenterPointParams * p, gboolean half, guint32 seed,
    gboolean ties, const gchar * what)
{
  GpuCase *c = gpu_case_new (p, half);
  P3dTestRng rng;

  p3d_test_rng_init (&rng, seed);
  gpu_case_fill (c, &rng, ties);
  gpu_case_run_check (c, what);
  gpu_case_free (c);
}

/* BEVDet's test_cfg: per task its NMS and threshold, and the sizes of each
 * label scaled for the overlap test (a factor per global label). */
static const P3dcCenterPointNms bevdet_nms[MAX_TASKS] = {
  P3DC_CENTERPOINT_NMS_ROTATE, P3DC_CENTERPOINT_NMS_ROTATE,
  P3DC_CENTERPOINT_NMS_ROTATE, P3DC_CENTERPOINT_NMS_CIRCLE,
  P3DC_CENTERPOINT_NMS_ROTATE, P3DC_CENTERPOINT_NMS_ROTATE,
};

static const gfloat bevdet_thr[MAX_TASKS] = { 0.2f, 0.2f, 0.2f, 0.2f, 0.2f,
  0.5f
};

static const gfloat bevdet_scale[10] = { 1.0f, 0.7f, 0.7f, 0.4f, 0.55f, 1.1f,
  1.0f, 1.0f, 4.5f, 9.0f
};

static void
params_scale_nms (P3dcCenterPointParams * p)
{
  guint32 t;

  for (t = 0; t < p->n_tasks; t++) {
    p->tasks[t].nms = bevdet_nms[t];
    p->tasks[t].nms_threshold = bevdet_thr[t];
  }
  p->nms_scale = bevdet_scale;
}

GST_START_TEST (test_nuscenes_every_mode)
{
  const P3dcCenterPointNms modes[] = { P3DC_CENTERPOINT_NMS_CIRCLE,
    P3DC_CENTERPOINT_NMS_ROTATE, P3DC_CENTERPOINT_NMS_NONE,
    P3DC_CENTERPOINT_NMS_PER_TASK
  };
  guint m, half;

  for (m = 0; m < G_N_ELEMENTS (modes); m++) {
    for (half = 0; half < 2; half++) {
      P3dcCenterPointParams p;
      gchar *what = g_strdup_printf ("mode %d %s", modes[m],
          half ? "F16 NHWC" : "F32 NCHW");

      params_nuscenes (&p, MAX_TASKS, modes[m]);
      if (modes[m] == P3DC_CENTERPOINT_NMS_PER_TASK)
        params_scale_nms (&p);
      run_case (&p, half, 10 * m + half, FALSE, what);
      g_free (what);
    }
  }
}

GST_END_TEST;

/* Equal scores everywhere, small max-num, pre-max below the box count, no
 * post-max: the tie rule and every limit on both paths. */
GST_START_TEST (test_ties_and_limits)
{
  const guint32 max_nums[] = { 1, 63, 64, 65, 700 };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (max_nums); i++) {
    P3dcCenterPointParams p;
    gchar *what = g_strdup_printf ("ties, max-num %u", max_nums[i]);

    params_nuscenes (&p, 3, i % 2 ? P3DC_CENTERPOINT_NMS_ROTATE :
        P3DC_CENTERPOINT_NMS_CIRCLE);
    p.max_num = max_nums[i];
    p.pre_max_size = max_nums[i] / 2;
    p.post_max_size = i == 4 ? 0 : 83;
    run_case (&p, i % 2, 50 + i, TRUE, what);
    g_free (what);
  }
}

GST_END_TEST;

/* Short lists: a threshold that about 2 % of the cells pass (a few
 * hundred a task, some above max-num and some below), so that each task's
 * keys are ranked where they are listed, without the radix select's cut
 * that the lists of the other cases (thousands a task) go through. */
GST_START_TEST (test_short_lists)
{
  guint half;

  for (half = 0; half < 2; half++) {
    P3dcCenterPointParams p;
    gchar *what = g_strdup_printf ("short lists, %s",
        half ? "F16 NHWC" : "F32 NCHW");

    params_nuscenes (&p, MAX_TASKS, P3DC_CENTERPOINT_NMS_CIRCLE);
    /* logits above -0.62 of uniform (-6, -0.5) */
    p.score_threshold = 0.35f;
    run_case (&p, half, 70 + half, FALSE, what);
    g_free (what);
  }
}

GST_END_TEST;

/* One workspace, several frames: nothing of a frame leaks into the next. */
GST_START_TEST (test_frame_sequence)
{
  P3dcCenterPointParams p;
  GpuCase *c;
  P3dTestRng rng;
  guint frame;

  params_nuscenes (&p, MAX_TASKS, P3DC_CENTERPOINT_NMS_CIRCLE);
  c = gpu_case_new (&p, TRUE);
  p3d_test_rng_init (&rng, 99);
  for (frame = 0; frame < 4; frame++) {
    gchar *what = g_strdup_printf ("frame %u", frame);

    gpu_case_fill (c, &rng, frame == 2);
    gpu_case_run_check (c, what);
    g_free (what);
  }
  gpu_case_free (c);
}

GST_END_TEST;

GST_START_TEST (test_invalid_arguments)
{
  P3dcCenterPointParams p;
  P3dcCenterPointDecoder *d = (P3dcCenterPointDecoder *) 1;
  GpuCase *c;
  P3dcCenterPointTaskMaps maps[MAX_TASKS];
  P3dcCenterPointOutput out;

  params_nuscenes (&p, 2, P3DC_CENTERPOINT_NMS_CIRCLE);
  p.max_num = 0;
  fail_unless_equals_int (p3dc_centerpoint_decoder_new (&p, &d),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless (d == NULL);
  params_nuscenes (&p, 2, P3DC_CENTERPOINT_NMS_CIRCLE);
  c = gpu_case_new (&p, FALSE);
  maps_of (c, TRUE, maps);
  out.boxes = c->d_boxes;
  out.count = c->d_count;
  out.velocity = NULL;
  fail_unless_equals_int (p3dc_centerpoint_decode_cuda (NULL, maps, &out,
          c->stream), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_centerpoint_decode_cuda (c->decoder, NULL, &out,
          c->stream), P3DC_ERROR_INVALID_ARGUMENT);
  maps[1].rot.data = NULL;
  fail_unless_equals_int (p3dc_centerpoint_decode_cuda (c->decoder, maps, &out,
          c->stream), P3DC_ERROR_INVALID_ARGUMENT);
  gpu_case_free (c);
}

GST_END_TEST;

static Suite *
centerpoint_decode_cuda_suite (void)
{
  Suite *s = suite_create ("centerpoint_decode_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_nuscenes_every_mode);
  tcase_add_test (tc, test_ties_and_limits);
  tcase_add_test (tc, test_short_lists);
  tcase_add_test (tc, test_frame_sequence);
  tcase_add_test (tc, test_invalid_arguments);
  return s;
}

P3D_CHECK_MAIN (centerpoint_decode_cuda);
