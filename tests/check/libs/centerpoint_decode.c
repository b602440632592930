/* The CenterPoint decode reference: its exp, sigmoid and atan2 against the
 * C library in double (the measured bound is printed), boxes worked out by
 * hand, the top-k order against a brute-force oracle (many equal scores),
 * circle and rotate NMS and BEVDet's Scale-NMS against hand-worked cases
 * and a brute-force greedy,
 * F16 and channels-last views equal to F32 NCHW. */
#include <math.h>
#include <string.h>
#include <gst/check/gstcheck.h>

#include "centerpoint_decode.h"
#include "centerpoint_decode-private.h"
#include "half.h"
#include "p3dtest.h"

/* Maps of one task in one NCHW float32 tensor: heatmap classes, then reg 2,
 * height 1, dim 3, rot 2, vel 2. */
#define HEAD_CHANNELS(classes) ((classes) + 10)

typedef struct
{
  guint32 classes, height, width;
  gfloat *data;                 /* [channels][H][W] */
} TaskTensor;

static void
task_tensor_init (TaskTensor * t, guint32 classes, guint32 height,
    guint32 width)
{
  t->classes = classes;
  t->height = height;
  t->width = width;
  t->data = g_new0 (gfloat, (gsize) HEAD_CHANNELS (classes) * height * width);
}

static gfloat *
at (TaskTensor * t, guint32 channel, guint32 y, guint32 x)
{
  return t->data + ((gsize) channel * t->height + y) * t->width + x;
}

/* NCHW float32 views of @t. */
static void
task_tensor_maps (const TaskTensor * t, P3dcCenterPointTaskMaps * maps)
{
  gsize plane = (gsize) t->height * t->width;
  P3dcMapView view = { t->data, 0, plane, t->width, 1 };

  memset (maps, 0, sizeof (*maps));
  maps->heatmap = view;
  view.data = t->data + plane * t->classes;
  maps->reg = view;
  view.data = t->data + plane * (t->classes + 2);
  maps->height = view;
  view.data = t->data + plane * (t->classes + 3);
  maps->dim = view;
  view.data = t->data + plane * (t->classes + 6);
  maps->rot = view;
  view.data = t->data + plane * (t->classes + 8);
  maps->vel = view;
}

static void
params_init (P3dcCenterPointParams * p, guint32 n_tasks,
    const guint32 * classes, guint32 height, guint32 width)
{
  guint32 t;

  memset (p, 0, sizeof (*p));
  p->n_tasks = n_tasks;
  for (t = 0; t < n_tasks; t++) {
    p->tasks[t].num_classes = classes[t];
    p->tasks[t].min_radius = 4.0;
  }
  p->height = height;
  p->width = width;
  p->max_num = 500;
  p->score_threshold = 0.1f;
  p->out_size_factor = 4.0f;
  p->voxel_size[0] = p->voxel_size[1] = 0.25f;
  p->pc_range[0] = p->pc_range[1] = -2.0f;
  p->post_center_range[0] = p->post_center_range[1] = -100.0f;
  p->post_center_range[2] = -10.0f;
  p->post_center_range[3] = p->post_center_range[4] = 100.0f;
  p->post_center_range[5] = 10.0f;
  p->norm_bbox = 1;
  p->nms = P3DC_CENTERPOINT_NMS_NONE;
  p->nms_threshold = 0.2f;
  p->pre_max_size = 1000;
  p->post_max_size = 0;
}

typedef struct
{
  P3dcBox3d *boxes;
  gfloat *velocity;
  guint32 count, capacity;
} Output;

static void
run_decode (const P3dcCenterPointParams * p,
    const P3dcCenterPointTaskMaps * maps, Output * o)
{
  P3dcCenterPointOutput out;

  o->capacity = p3dc_centerpoint_output_capacity (p);
  fail_unless (o->capacity > 0);
  o->boxes = g_new (P3dcBox3d, o->capacity);
  o->velocity = g_new (gfloat, 2 * o->capacity);
  memset (o->boxes, 0xa5, sizeof (P3dcBox3d) * o->capacity);
  o->count = 12345;
  out.boxes = o->boxes;
  out.count = &o->count;
  out.velocity = o->velocity;
  fail_unless_equals_int (p3dc_centerpoint_decode_cpu (p, maps, &out), P3DC_OK);
  fail_unless (o->count <= o->capacity);
}

static void
output_clear (Output * o)
{
  g_free (o->boxes);
  g_free (o->velocity);
}

static gdouble
ulps (gfloat got, gdouble want)
{
  gfloat nearest = (gfloat) want;
  gdouble ulp = nextafterf (fabsf (nearest), INFINITY) - fabsf (nearest);

  return fabs (got - want) / ulp;
}

GST_START_TEST (test_math_against_libm)
{
  gdouble worst_exp = 0, worst_sigmoid = 0, worst_atan2 = 0;
  P3dTestRng rng;
  guint i;

  p3d_test_rng_init (&rng, 1);
  for (i = 0; i < 200000; i++) {
    gfloat x = p3d_test_rng_uniform (&rng, -87.0f, 88.0f);
    gfloat s = p3d_test_rng_uniform (&rng, -20.0f, 20.0f);
    gfloat ay = p3d_test_rng_uniform (&rng, -3.0f, 3.0f);
    gfloat ax = p3d_test_rng_uniform (&rng, -3.0f, 3.0f);
    gdouble want_atan = atan2 (ay, ax);

    if (i % 4 == 0)
      x = p3d_test_rng_uniform (&rng, -3.0f, 3.0f);
    worst_exp = MAX (worst_exp, ulps (p3dc_cp_expf (x), exp ((gdouble) x)));
    worst_sigmoid = MAX (worst_sigmoid, ulps (p3dc_cp_sigmoid (s),
            1.0 / (1.0 + exp (-(gdouble) s))));
    worst_atan2 = MAX (worst_atan2, fabs (p3dc_cp_atan2f (ay, ax) - want_atan));
  }
  g_print ("p3dc_cp_expf: %.2f ulp, sigmoid %.2f ulp, atan2 %.3g rad at most "
      "(200000 random arguments)\n", worst_exp, worst_sigmoid, worst_atan2);
  fail_unless (worst_exp <= 4.0, "exp off by %g ulp", worst_exp);
  fail_unless (worst_sigmoid <= 4.0, "sigmoid off by %g ulp", worst_sigmoid);
  fail_unless (worst_atan2 <= 1e-6, "atan2 off by %g", worst_atan2);

  /* exact points and the C library's special cases */
  fail_unless (p3dc_cp_expf (0.0f) == 1.0f);
  fail_unless (p3dc_cp_expf (-100.0f) == 0.0f);
  fail_unless (isinf (p3dc_cp_expf (100.0f)));
  fail_unless (isnan (p3dc_cp_expf (NAN)));
  fail_unless (p3dc_cp_sigmoid (0.0f) == 0.5f);
  fail_unless (p3dc_cp_sigmoid (-INFINITY) == 0.0f);
  fail_unless (p3dc_cp_sigmoid (INFINITY) == 1.0f);
  fail_unless (p3dc_cp_atan2f (0.0f, 1.0f) == 0.0f);
  fail_unless (p3dc_cp_atan2f (1.0f, 0.0f) == (gfloat) G_PI_2);
  fail_unless (p3dc_cp_atan2f (-1.0f, 0.0f) == -(gfloat) G_PI_2);
  fail_unless (p3dc_cp_atan2f (0.0f, -1.0f) == (gfloat) G_PI);
  fail_unless (p3dc_cp_atan2f (-0.0f, -1.0f) == -(gfloat) G_PI);
  fail_unless (p3dc_cp_atan2f (0.0f, -0.0f) == (gfloat) G_PI);
  fail_unless (signbit (p3dc_cp_atan2f (-0.0f, 0.0f)));
  fail_unless (fabs (p3dc_cp_atan2f (INFINITY, INFINITY) - G_PI / 4) < 1e-7);
  fail_unless (fabs (p3dc_cp_atan2f (-1.0f, -INFINITY) + G_PI) < 1e-7);
  fail_unless (isnan (p3dc_cp_atan2f (NAN, 1.0f)));
}

GST_END_TEST;

GST_START_TEST (test_params)
{
  const guint32 classes[6] = { 1, 2, 2, 1, 2, 2 };
  P3dcCenterPointParams p;

  params_init (&p, 6, classes, 128, 128);
  fail_unless_equals_int (p3dc_centerpoint_params_validate (&p), P3DC_OK);
  fail_unless_equals_int (p3dc_centerpoint_output_capacity (&p), 3000);
  p.post_max_size = 83;
  fail_unless_equals_int (p3dc_centerpoint_output_capacity (&p), 498);
  p.score_threshold = -0.1f;
  fail_unless_equals_int (p3dc_centerpoint_params_validate (&p),
      P3DC_ERROR_INVALID_ARGUMENT);
  p.score_threshold = NAN;
  fail_unless_equals_int (p3dc_centerpoint_params_validate (&p),
      P3DC_ERROR_INVALID_ARGUMENT);
  p.score_threshold = 0.1f;
  p.tasks[2].num_classes = 0;
  fail_unless_equals_int (p3dc_centerpoint_params_validate (&p),
      P3DC_ERROR_INVALID_ARGUMENT);
  p.tasks[2].num_classes = 64;  /* 64 x 128 x 128 = 2^20 pairs: the most */
  fail_unless_equals_int (p3dc_centerpoint_params_validate (&p), P3DC_OK);
  p.tasks[2].num_classes = 65;
  fail_unless_equals_int (p3dc_centerpoint_params_validate (&p),
      P3DC_ERROR_TOO_LARGE);
  p.tasks[2].num_classes = 2;
  p.max_num = 4097;
  fail_unless_equals_int (p3dc_centerpoint_params_validate (&p),
      P3DC_ERROR_TOO_LARGE);
  p.max_num = 0;
  fail_unless_equals_int (p3dc_centerpoint_params_validate (&p),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_centerpoint_output_capacity (&p), 0);
  p.max_num = 500;
  p.n_tasks = 17;
  fail_unless_equals_int (p3dc_centerpoint_params_validate (&p),
      P3DC_ERROR_TOO_LARGE);
  p.n_tasks = 6;
  p.nms = (P3dcCenterPointNms) 4;
  fail_unless_equals_int (p3dc_centerpoint_params_validate (&p),
      P3DC_ERROR_INVALID_ARGUMENT);
  /* Scale-NMS: each task's own kind (none, circle or rotate) and a
   * finite threshold, factors finite and positive */
  {
    gfloat scale[10] = { 1, 0.7f, 0.7f, 0.4f, 0.55f, 1.1f, 1, 1, 4.5f, 9 };
    guint32 t;

    p.nms = P3DC_CENTERPOINT_NMS_PER_TASK;
    for (t = 0; t < 6; t++) {
      p.tasks[t].nms = t == 3 ? P3DC_CENTERPOINT_NMS_CIRCLE :
          P3DC_CENTERPOINT_NMS_ROTATE;
      p.tasks[t].nms_threshold = 0.2f;
    }
    p.nms_scale = scale;
    fail_unless_equals_int (p3dc_centerpoint_params_validate (&p), P3DC_OK);
    p.tasks[4].nms = P3DC_CENTERPOINT_NMS_PER_TASK;
    fail_unless_equals_int (p3dc_centerpoint_params_validate (&p),
        P3DC_ERROR_INVALID_ARGUMENT);
    p.tasks[4].nms = P3DC_CENTERPOINT_NMS_NONE;
    p.tasks[5].nms_threshold = NAN;
    fail_unless_equals_int (p3dc_centerpoint_params_validate (&p),
        P3DC_ERROR_INVALID_ARGUMENT);
    p.tasks[5].nms_threshold = 0.5f;
    scale[9] = 0.0f;
    fail_unless_equals_int (p3dc_centerpoint_params_validate (&p),
        P3DC_ERROR_INVALID_ARGUMENT);
    scale[9] = INFINITY;
    fail_unless_equals_int (p3dc_centerpoint_params_validate (&p),
        P3DC_ERROR_INVALID_ARGUMENT);
    p.nms_scale = NULL;
    fail_unless_equals_int (p3dc_centerpoint_params_validate (&p), P3DC_OK);
  }
  p.nms = P3DC_CENTERPOINT_NMS_CIRCLE;
  p.tasks[0].min_radius = -1.0;
  fail_unless_equals_int (p3dc_centerpoint_params_validate (&p),
      P3DC_ERROR_INVALID_ARGUMENT);
}

GST_END_TEST;

/* Two tasks on a 4 x 4 head (out-size-factor 4, 0.25 m voxels from -2 m):
 *  task 0 (1 class): cell (x 2, y 1), logit 0 -> score 0.5, reg (0.25,
 *    0.5), height 1.5, dim 0 -> size 1, rot (0, 1) -> yaw 0:
 *    x = ((2 + 0.25) * 4) * 0.25 - 2 = 0.25, y = ((1 + 0.5) * 4) * 0.25 -
 *    2 = -0.5; vel (3, -4).
 *  task 1 (2 classes): class 1 at cell (x 0, y 3), logit 1, reg (0, 0),
 *    height -1, rot (1, 0) -> yaw pi / 2: x = -2, y = 1, label 1 + 1 = 2;
 *    class 0 at cell (3, 3) with x = ((3 + 1) * 4) * 0.25 - 2 = 2 outside
 *    a post-centre range ending at 1.5: dropped.
 * Every other logit is -10 (score 4.5e-5, below 0.1). */
GST_START_TEST (test_hand_worked_boxes)
{
  const guint32 classes[2] = { 1, 2 };
  P3dcCenterPointParams p;
  P3dcCenterPointTaskMaps maps[2];
  TaskTensor t0, t1;
  Output o;
  guint32 y, x, c;

  params_init (&p, 2, classes, 4, 4);
  p.post_center_range[3] = 1.5f;
  task_tensor_init (&t0, 1, 4, 4);
  task_tensor_init (&t1, 2, 4, 4);
  for (y = 0; y < 4; y++)
    for (x = 0; x < 4; x++) {
      *at (&t0, 0, y, x) = -10.0f;
      for (c = 0; c < 2; c++)
        *at (&t1, c, y, x) = -10.0f;
    }
  *at (&t0, 0, 1, 2) = 0.0f;
  *at (&t0, 1, 1, 2) = 0.25f;
  *at (&t0, 2, 1, 2) = 0.5f;
  *at (&t0, 3, 1, 2) = 1.5f;
  *at (&t0, 8, 1, 2) = 1.0f;    /* rot cosine */
  *at (&t0, 9, 1, 2) = 3.0f;
  *at (&t0, 10, 1, 2) = -4.0f;
  *at (&t1, 1, 3, 0) = 1.0f;
  *at (&t1, 4, 3, 0) = -1.0f;
  *at (&t1, 8, 3, 0) = 1.0f;    /* rot sine */
  *at (&t1, 0, 3, 3) = 2.0f;
  *at (&t1, 2, 3, 3) = 1.0f;
  task_tensor_maps (&t0, &maps[0]);
  task_tensor_maps (&t1, &maps[1]);
  run_decode (&p, maps, &o);

  fail_unless_equals_int (o.count, 2);
  fail_unless (o.boxes[0].x == 0.25f && o.boxes[0].y == -0.5f
      && o.boxes[0].z == 1.5f, "box 0 at %g %g %g", o.boxes[0].x,
      o.boxes[0].y, o.boxes[0].z);
  fail_unless (o.boxes[0].dx == 1.0f && o.boxes[0].dy == 1.0f
      && o.boxes[0].dz == 1.0f && o.boxes[0].yaw == 0.0f);
  fail_unless (o.boxes[0].score == 0.5f);
  fail_unless_equals_int (o.boxes[0].label, 0);
  fail_unless (o.velocity[0] == 3.0f && o.velocity[1] == -4.0f);
  fail_unless (o.boxes[1].x == -2.0f && o.boxes[1].y == 1.0f
      && o.boxes[1].z == -1.0f, "box 1 at %g %g %g", o.boxes[1].x,
      o.boxes[1].y, o.boxes[1].z);
  fail_unless (o.boxes[1].yaw == (gfloat) G_PI_2);
  fail_unless (fabs (o.boxes[1].score - 1.0 / (1.0 + exp (-1.0))) < 1e-7);
  fail_unless_equals_int (o.boxes[1].label, 2);
  /* the rest of the output zeroed */
  for (c = 2; c < o.capacity; c++)
    fail_unless (o.boxes[c].x == 0.0f && o.boxes[c].label == 0
        && o.velocity[2 * c] == 0.0f);
  output_clear (&o);

  /* the threshold is strict: score 0.5 is not above 0.5 */
  p.score_threshold = 0.5f;
  run_decode (&p, maps, &o);
  fail_unless_equals_int (o.count, 1);
  fail_unless_equals_int (o.boxes[0].label, 2);
  output_clear (&o);

  /* sizes without norm_bbox are the map's values; with it, exp */
  p.score_threshold = 0.1f;
  *at (&t0, 4, 1, 2) = 0.6931472f;
  *at (&t0, 5, 1, 2) = 1.3862944f;
  run_decode (&p, maps, &o);
  fail_unless (fabs (o.boxes[0].dx - 2.0) < 4e-7 && fabs (o.boxes[0].dy -
          4.0) < 8e-7 && o.boxes[0].dz == 1.0f);
  output_clear (&o);
  p.norm_bbox = 0;
  run_decode (&p, maps, &o);
  fail_unless (o.boxes[0].dx == 0.6931472f && o.boxes[0].dz == 0.0f);
  output_clear (&o);
  g_free (t0.data);
  g_free (t1.data);
}

GST_END_TEST;

typedef struct
{
  gfloat score;
  guint32 index;
} Pick;

/* The top-k by brute force: k passes, each taking the best remaining
 * (higher score, then lower index). */
static guint32
oracle_topk (const TaskTensor * t, gfloat threshold, guint32 k, Pick * picks)
{
  guint32 cells = t->height * t->width, pairs = t->classes * cells, i, n;
  gboolean *taken = g_new0 (gboolean, pairs);

  for (n = 0; n < k; n++) {
    gint64 best = -1;
    gfloat best_score = 0;

    for (i = 0; i < pairs; i++) {
      gfloat s = p3dc_cp_sigmoid (t->data[i]);

      if (!taken[i] && (best < 0 || s > best_score)) {
        best = i;
        best_score = s;
      }
    }
    if (best < 0 || !(best_score > threshold))
      break;
    taken[best] = TRUE;
    picks[n].score = best_score;
    picks[n].index = best;
  }
  g_free (taken);
  return n;
}

static void
fill_random_task (TaskTensor * t, P3dTestRng * rng, gboolean ties)
{
  guint32 plane = t->height * t->width, i, c;

  for (c = 0; c < HEAD_CHANNELS (t->classes); c++) {
    for (i = 0; i < plane; i++) {
      gfloat v;

      if (c < t->classes)
        /* logits: a fifth of the cells above the 0.1 threshold; with
         * @ties, a few values only, so that many scores are equal */
        v = ties ? (gfloat) p3d_test_rng_below (rng, 6) - 4.0f
            : p3d_test_rng_uniform (rng, -6.0f, 1.0f);
      else if (c < t->classes + 2)
        v = p3d_test_rng_uniform (rng, 0.0f, 1.0f);
      else
        v = p3d_test_rng_uniform (rng, -1.0f, 1.0f);
      t->data[(gsize) c * plane + i] = v;
    }
  }
}

GST_START_TEST (test_topk_against_oracle)
{
  const guint32 classes[3] = { 1, 3, 2 };
  const guint32 max_nums[] = { 1, 7, 100, 500 };
  guint m, ties;

  for (m = 0; m < G_N_ELEMENTS (max_nums); m++) {
    for (ties = 0; ties < 2; ties++) {
      P3dcCenterPointParams p;
      P3dcCenterPointTaskMaps maps[3];
      TaskTensor tensors[3];
      P3dTestRng rng;
      Output o;
      guint32 t, k, written = 0, label_offset = 0;

      params_init (&p, 3, classes, 13, 11);
      p.max_num = max_nums[m];
      p3d_test_rng_init (&rng, 10 * m + ties);
      for (t = 0; t < 3; t++) {
        task_tensor_init (&tensors[t], classes[t], 13, 11);
        fill_random_task (&tensors[t], &rng, ties);
        task_tensor_maps (&tensors[t], &maps[t]);
      }
      run_decode (&p, maps, &o);
      for (t = 0; t < 3; t++) {
        Pick *picks = g_new (Pick, p.max_num);
        guint32 n = oracle_topk (&tensors[t], p.score_threshold, p.max_num,
            picks);

        fail_unless (n > 0);
        for (k = 0; k < n; k++) {
          guint32 cell = picks[k].index % (13 * 11);
          guint32 x = cell % 11, y = cell / 11;
          const P3dcBox3d *b = &o.boxes[written + k];
          gfloat want_x = (((gfloat) x + *at (&tensors[t], classes[t], y, x))
              * 4.0f) * 0.25f + -2.0f;

          fail_unless (written + k < o.count);
          if (b->score != picks[k].score || b->label != (gint32) (label_offset
                  + picks[k].index / (13 * 11)) || b->x != want_x)
            fail ("max-num %u ties %u task %u pick %u: score %g label %d x "
                "%g, oracle %g %u %g", p.max_num, ties, t, k, b->score,
                b->label, b->x, picks[k].score,
                label_offset + picks[k].index / (13 * 11), want_x);
        }
        written += n;
        label_offset += classes[t];
        g_free (picks);
        g_free (tensors[t].data);
      }
      fail_unless_equals_int (o.count, written);
      output_clear (&o);
    }
  }
}

GST_END_TEST;

/* A 1 x 8 head, 1 m cells from 0, out-size-factor 1: boxes at the cell's x
 * plus reg.  A (score from logit 3) at x 0, B (logit 2) at x 2, C (logit 1)
 * at x 4 - 1.875 = 2.125: B is at squared distance 4 from A, C at 4.515625
 * from A and 0.015625 from B. */
static void
circle_case (TaskTensor * t, P3dcCenterPointParams * p)
{
  const guint32 classes[1] = { 1 };
  guint32 x;

  params_init (p, 1, classes, 1, 8);
  p->out_size_factor = 1.0f;
  p->voxel_size[0] = p->voxel_size[1] = 1.0f;
  p->pc_range[0] = p->pc_range[1] = 0.0f;
  p->nms = P3DC_CENTERPOINT_NMS_CIRCLE;
  task_tensor_init (t, 1, 1, 8);
  for (x = 0; x < 8; x++)
    *at (t, 0, 0, x) = -10.0f;
  *at (t, 0, 0, 0) = 3.0f;
  *at (t, 0, 0, 2) = 2.0f;
  *at (t, 0, 0, 4) = 1.0f;
  *at (t, 1, 0, 4) = -1.875f;
}

GST_START_TEST (test_circle_nms)
{
  P3dcCenterPointParams p;
  P3dcCenterPointTaskMaps maps;
  TaskTensor t;
  Output o;

  circle_case (&t, &p);
  task_tensor_maps (&t, &maps);
  /* radius 4: B suppressed at equal distance (<=), C kept */
  run_decode (&p, &maps, &o);
  fail_unless_equals_int (o.count, 2);
  fail_unless (o.boxes[0].x == 0.0f && o.boxes[1].x == 2.125f);
  output_clear (&o);
  /* just below 4: B kept, and it suppresses C */
  p.tasks[0].min_radius = 3.999;
  run_decode (&p, &maps, &o);
  fail_unless_equals_int (o.count, 2);
  fail_unless (o.boxes[0].x == 0.0f && o.boxes[1].x == 2.0f);
  output_clear (&o);
  /* post_max_size 1 */
  p.post_max_size = 1;
  run_decode (&p, &maps, &o);
  fail_unless_equals_int (o.count, 1);
  fail_unless_equals_int (o.capacity, 1);
  output_clear (&o);
  /* radius 0: nothing suppressed */
  p.post_max_size = 0;
  p.tasks[0].min_radius = 0.0;
  run_decode (&p, &maps, &o);
  fail_unless_equals_int (o.count, 3);
  output_clear (&o);
  g_free (t.data);
}

GST_END_TEST;

GST_START_TEST (test_rotate_nms)
{
  P3dcCenterPointParams p;
  P3dcCenterPointTaskMaps maps;
  TaskTensor t;
  Output o;

  /* unit boxes (dim 0), yaw 0, at x 0, 2 and 2.125: IoU of B and C is
   * 0.875 / 1.125 = 0.78, A overlaps neither */
  circle_case (&t, &p);
  p.nms = P3DC_CENTERPOINT_NMS_ROTATE;
  *at (&t, 8, 0, 0) = *at (&t, 8, 0, 2) = *at (&t, 8, 0, 4) = 1.0f;
  task_tensor_maps (&t, &maps);
  run_decode (&p, &maps, &o);
  fail_unless_equals_int (o.count, 2);
  fail_unless (o.boxes[0].x == 0.0f && o.boxes[1].x == 2.0f);
  output_clear (&o);
  /* an IoU threshold above 0.78 keeps all */
  p.nms_threshold = 0.8f;
  run_decode (&p, &maps, &o);
  fail_unless_equals_int (o.count, 3);
  output_clear (&o);
  /* pre_max_size 2: C is never considered */
  p.pre_max_size = 2;
  run_decode (&p, &maps, &o);
  fail_unless_equals_int (o.count, 2);
  output_clear (&o);
  g_free (t.data);
}

GST_END_TEST;

/* Scale-NMS, per task.  Task 0 (one class, rotate, threshold 0.2): unit
 * boxes A at x 0 (logit 3) and B at x 1.5 (logit 2, cell 1 + reg 0.5),
 * apart; scaled by 2 they are 2 m squares overlapping by 0.5 x 2 (IoU 1 /
 * 7 = 0.14), by 4 4 m squares overlapping by 2.5 x 4 (IoU 10 / 22 = 0.45).
 * Task 1 (two classes, circle, min_radius 1): class 0 at x 4 (logit 3),
 * class 1 at x 4.8 (logit 2, cell 5 + reg -0.2), squared distance 0.64:
 * suppressed whatever the factors.  The params' own threshold (0.9) and
 * kind (the per-task marker) are not the tasks'. */
GST_START_TEST (test_scale_nms)
{
  const guint32 classes[2] = { 1, 2 };
  gfloat scale[3] = { 4.0f, 100.0f, 100.0f };
  P3dcCenterPointParams p;
  P3dcCenterPointTaskMaps maps[2];
  TaskTensor t[2];
  Output o;
  guint32 x, k;

  params_init (&p, 2, classes, 1, 8);
  p.out_size_factor = 1.0f;
  p.voxel_size[0] = p.voxel_size[1] = 1.0f;
  p.pc_range[0] = p.pc_range[1] = 0.0f;
  p.nms = P3DC_CENTERPOINT_NMS_PER_TASK;
  p.nms_threshold = 0.9f;
  p.tasks[0].nms = P3DC_CENTERPOINT_NMS_ROTATE;
  p.tasks[0].nms_threshold = 0.2f;
  p.tasks[1].nms = P3DC_CENTERPOINT_NMS_CIRCLE;
  p.tasks[1].min_radius = 1.0;
  p.nms_scale = scale;
  for (k = 0; k < 2; k++) {
    task_tensor_init (&t[k], classes[k], 1, 8);
    for (x = 0; x < 8; x++) {
      *at (&t[k], 0, 0, x) = -10.0f;
      if (k == 1)
        *at (&t[k], 1, 0, x) = -10.0f;
      /* rot (0, 1): yaw 0 */
      *at (&t[k], classes[k] + 7, 0, x) = 1.0f;
    }
    task_tensor_maps (&t[k], &maps[k]);
  }
  *at (&t[0], 0, 0, 0) = 3.0f;
  *at (&t[0], 0, 0, 1) = 2.0f;
  *at (&t[0], 1, 0, 1) = 0.5f;
  *at (&t[1], 0, 0, 4) = 3.0f;
  *at (&t[1], 1, 0, 5) = 2.0f;
  *at (&t[1], 2, 0, 5) = -0.2f;

  /* x4: B goes; the cone goes too (circle) */
  run_decode (&p, maps, &o);
  fail_unless_equals_int (o.count, 2);
  fail_unless (o.boxes[0].x == 0.0f && o.boxes[0].label == 0);
  /* the boxes keep their decoded sizes */
  fail_unless (o.boxes[0].dx == 1.0f && o.boxes[0].dy == 1.0f);
  fail_unless (o.boxes[1].x == 4.0f && o.boxes[1].label == 1);
  output_clear (&o);
  /* x2: IoU 0.14, B stays */
  scale[0] = 2.0f;
  run_decode (&p, maps, &o);
  fail_unless_equals_int (o.count, 3);
  fail_unless (o.boxes[1].x == 1.5f);
  output_clear (&o);
  /* ... unless the task's threshold is below it */
  p.tasks[0].nms_threshold = 0.1f;
  run_decode (&p, maps, &o);
  fail_unless_equals_int (o.count, 2);
  output_clear (&o);
  /* no factors: unit boxes 1.5 m apart stay */
  p.nms_scale = NULL;
  run_decode (&p, maps, &o);
  fail_unless_equals_int (o.count, 3);
  output_clear (&o);
  /* task 1 without NMS: both its boxes */
  p.tasks[1].nms = P3DC_CENTERPOINT_NMS_NONE;
  run_decode (&p, maps, &o);
  fail_unless_equals_int (o.count, 4);
  fail_unless (o.boxes[3].x == 4.8f && o.boxes[3].label == 2);
  output_clear (&o);
  g_free (t[0].data);
  g_free (t[1].data);
}

GST_END_TEST;

/* The NMS on random maps against a brute-force greedy over the boxes the
 * decode keeps without NMS: circle, rotate, and Scale-NMS (task 0 rotate
 * with its two classes' sizes scaled by 1.5 and 0.5, task 1 circle). */
GST_START_TEST (test_nms_against_greedy)
{
  const guint32 classes[2] = { 2, 1 };
  const gfloat scale[3] = { 1.5f, 0.5f, 3.0f };
  guint mode, seed;

  for (mode = 0; mode < 3; mode++) {
    for (seed = 0; seed < 3; seed++) {
      P3dcCenterPointParams p;
      P3dcCenterPointTaskMaps maps[2];
      TaskTensor tensors[2];
      P3dTestRng rng;
      Output all, kept;
      guint32 t, i, j, from = 0, written = 0;

      params_init (&p, 2, classes, 20, 20);
      p.max_num = 300;
      p.tasks[0].min_radius = 1.0;
      p.tasks[1].min_radius = 0.3;
      p3d_test_rng_init (&rng, 100 + 10 * mode + seed);
      for (t = 0; t < 2; t++) {
        task_tensor_init (&tensors[t], classes[t], 20, 20);
        fill_random_task (&tensors[t], &rng, FALSE);
        task_tensor_maps (&tensors[t], &maps[t]);
      }
      run_decode (&p, maps, &all);
      p.nms = mode == 2 ? P3DC_CENTERPOINT_NMS_PER_TASK : mode ?
          P3DC_CENTERPOINT_NMS_ROTATE : P3DC_CENTERPOINT_NMS_CIRCLE;
      p.tasks[0].nms = P3DC_CENTERPOINT_NMS_ROTATE;
      p.tasks[0].nms_threshold = 0.2f;
      p.tasks[1].nms = P3DC_CENTERPOINT_NMS_CIRCLE;
      p.nms_scale = mode == 2 ? scale : NULL;
      p.pre_max_size = 250;
      p.post_max_size = 40;
      run_decode (&p, maps, &kept);
      for (t = 0; t < 2; t++) {
        guint32 n = 0, count = 0, label_end = t == 0 ? 2 : 3;
        gboolean rotate = mode == 1 || (mode == 2 && t == 0);
        gboolean *removed;

        while (from + n < all.count && all.boxes[from + n].label
            < (gint32) label_end)
          n++;
        if (rotate && n > 250)
          n = 250;
        removed = g_new0 (gboolean, n);
        for (i = 0; i < n && count < 40; i++) {
          if (removed[i])
            continue;
          fail_unless (memcmp (&kept.boxes[written + count],
                  &all.boxes[from + i], sizeof (P3dcBox3d)) == 0,
              "mode %u seed %u task %u: kept box %u differs", mode, seed, t,
              count);
          count++;
          for (j = i + 1; j < n; j++) {
            P3dcBox3d a = all.boxes[from + i], b = all.boxes[from + j];
            gboolean hit;

            if (rotate) {
              P3dcBox3d sa = a, sb = b;

              if (mode == 2) {
                sa.dx = a.dx * scale[a.label];
                sa.dy = a.dy * scale[a.label];
                sb.dx = b.dx * scale[b.label];
                sb.dy = b.dy * scale[b.label];
              }
              p3dc_cp_nms_round_trip (&sa, &a);
              p3dc_cp_nms_round_trip (&sb, &b);
              hit = p3dc_box3d_bev_rotated_iou (&a, &b) > 0.2f;
            } else {
              gfloat dx = a.x - b.x, dy = a.y - b.y;

              hit = (gdouble) (dx * dx + dy * dy) <= p.tasks[t].min_radius;
            }
            removed[j] = removed[j] || hit;
          }
        }
        /* enough boxes that the NMS had work to do */
        fail_unless (count > 3 && count < n, "mode %u task %u: kept %u of %u",
            mode, t, count, n);
        written += count;
        while (from < all.count && all.boxes[from].label < (gint32) label_end)
          from++;
        g_free (removed);
      }
      fail_unless_equals_int (kept.count, written);
      output_clear (&all);
      output_clear (&kept);
      for (t = 0; t < 2; t++)
        g_free (tensors[t].data);
    }
  }
}

GST_END_TEST;

/* The same values through F16 channels-last views: the same boxes. */
GST_START_TEST (test_half_nhwc_views)
{
  const guint32 classes[2] = { 2, 1 };
  P3dcCenterPointParams p;
  P3dcCenterPointTaskMaps maps[2], half_maps[2];
  TaskTensor tensors[2];
  guint16 *nhwc[2];
  P3dTestRng rng;
  Output a, b;
  guint32 t, c, i;

  params_init (&p, 2, classes, 9, 14);
  p.nms = P3DC_CENTERPOINT_NMS_ROTATE;
  p3d_test_rng_init (&rng, 5);
  for (t = 0; t < 2; t++) {
    guint32 channels = HEAD_CHANNELS (classes[t]), plane = 9 * 14;
    P3dcMapView view = { NULL, 1, 1, 14 * channels, channels };

    task_tensor_init (&tensors[t], classes[t], 9, 14);
    fill_random_task (&tensors[t], &rng, FALSE);
    nhwc[t] = g_new (guint16, (gsize) channels * plane);
    for (c = 0; c < channels; c++) {
      for (i = 0; i < plane; i++) {
        gfloat *v = &tensors[t].data[(gsize) c * plane + i];

        /* values an F16 holds exactly */
        *v = p3dc_half_to_float (p3dc_float_to_half (*v));
        nhwc[t][(gsize) i * channels + c] = p3dc_float_to_half (*v);
      }
    }
    task_tensor_maps (&tensors[t], &maps[t]);
    view.data = nhwc[t];
    half_maps[t].heatmap = view;
    view.data = nhwc[t] + classes[t];
    half_maps[t].reg = view;
    view.data = nhwc[t] + classes[t] + 2;
    half_maps[t].height = view;
    view.data = nhwc[t] + classes[t] + 3;
    half_maps[t].dim = view;
    view.data = nhwc[t] + classes[t] + 6;
    half_maps[t].rot = view;
    view.data = nhwc[t] + classes[t] + 8;
    half_maps[t].vel = view;
  }
  run_decode (&p, maps, &a);
  run_decode (&p, half_maps, &b);
  fail_unless (a.count > 10);
  fail_unless_equals_int (a.count, b.count);
  fail_unless (memcmp (a.boxes, b.boxes, sizeof (P3dcBox3d) * a.capacity) == 0);
  fail_unless (memcmp (a.velocity, b.velocity,
          sizeof (gfloat) * 2 * a.capacity) == 0);
  output_clear (&a);
  output_clear (&b);
  for (t = 0; t < 2; t++) {
    g_free (tensors[t].data);
    g_free (nhwc[t]);
  }
}

GST_END_TEST;

static Suite *
centerpoint_decode_suite (void)
{
  Suite *s = suite_create ("centerpoint_decode");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_math_against_libm);
  tcase_add_test (tc, test_params);
  tcase_add_test (tc, test_hand_worked_boxes);
  tcase_add_test (tc, test_topk_against_oracle);
  tcase_add_test (tc, test_circle_nms);
  tcase_add_test (tc, test_rotate_nms);
  tcase_add_test (tc, test_scale_nms);
  tcase_add_test (tc, test_nms_against_greedy);
  tcase_add_test (tc, test_half_nhwc_views);
  return s;
}

P3D_CHECK_MAIN (centerpoint_decode);
