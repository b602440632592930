/* The CUDA path of pillarencode and bevdetect as elements, against their
 * reference path on the same input, the output negotiated in system memory
 * and in memory:CUDAMemory (read back through the host copy of a map):
 *  - pillarencode: the canvas bit for bit (F32 and F16);
 *  - bevdetect precision=f32: the same number of boxes, each matched (same
 *    label) within 1e-4 of 1 + |value| on every field (yaw modulo 2 pi);
 *  - bevdetect precision=f16: F16 storage moves the heatmap, so boxes near
 *    the score threshold may appear on one side only. Compared without the
 *    model's NMS on a one-task model with max-num 64 (every cell: no top-k
 *    cut), so that the threshold is the only place where a box can flip:
 *    every box scoring more than threshold + 0.01 on one side has a match
 *    on the other (same label, position within 0.05 m, sizes within 5 %,
 *    yaw within 0.1 rad, score within 0.02), and the counts differ by at
 *    most the boxes within 0.01 of the threshold. With the model's NMS a
 *    flip can change a suppression: the counts are compared within
 *    2 + 25 %.
 *  - the chain pillarencode ! bevdetect with CUDA memory between them
 *    equals the reference chain as above;
 *  - bevdetect on a tiny BEVDet model (camera BEV features, Scale-NMS,
 *    velocity) as for CenterPoint, the velocities of matched boxes too.
 *  - PointPillars models (an anchor head, OpenPCDet's and mmdetection3d's
 *    conventions, p3dtest-anchormodel.h) through the same chain, F32 and
 *    F16, with and without the model's NMS, compared as above (in F16 a
 *    box whose two direction logits nearly tie may have its yaw half a
 *    turn off: the same rectangle, counted as a flip and printed).
 * Each comparison prints what it measured (largest differences, counts).
 * Needs a GPU (and cuDNN for bevdetect). */
#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include <glib/gstdio.h>

#include "p3dtest-anchormodel.h"
#include "p3dtest-elem.h"
#include "half.h"
#include "p3dtest-model.h"
#include "p3dperception.h"
#include "p3dtest.h"

#define CUDA_FEATURE "(" P3D_CAPS_FEATURE_MEMORY_CUDA ")"
#define F16_MARGIN 0.01
/* yaw is atan2 (sin, cos) of two head outputs: their F16 rounding turns
 * into a yaw error inversely proportional to |(sin, cos)|, which the random
 * weights of these small models do not keep near 1 (the largest seen on the
 * H100, 0.055 rad, for a box whose centre, size and score matched within
 * 0.002); position, size and score keep their tight bounds */
#define F16_YAW_TOLERANCE 0.1

static GstHarness *
harness (const gchar * launch, const gchar * src_caps,
    const gchar * sink_media_type, gboolean cuda_out)
{
  gchar *sink_caps = g_strdup_printf ("%s%s", sink_media_type,
      cuda_out ? CUDA_FEATURE : "");
  GstHarness *h = gst_harness_new_parse (launch);

  gst_harness_set_src_caps_str (h, src_caps);
  gst_harness_set_sink_caps_str (h, sink_caps);
  g_free (sink_caps);
  return h;
}

static void
assert_backend (GstHarness * h, const gchar * factory, gint expected)
{
  GstElement *e = gst_harness_find_element (h, factory);
  gint active = -1;

  fail_unless (e != NULL);
  g_object_get (e, "active-backend", &active, NULL);
  fail_unless_equals_int (active, expected);
  gst_object_unref (e);
}

static GstBuffer *
push_pull (GstHarness * h, GstBuffer * in)
{
  GstBuffer *out;

  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless (out != NULL);
  return out;
}

static void
assert_memory (GstBuffer * buffer, gboolean cuda)
{
  guint i;

  for (i = 0; i < gst_buffer_n_memory (buffer); i++)
    fail_unless_equals_int (p3d_is_cuda_memory (gst_buffer_peek_memory
            (buffer, i)), cuda);
}

/* ---- pillarencode ---------------------------------------------------- */

/* Random pillars in distinct cells, 1 to max-points points each. */
static GstBuffer *
pillars_buffer (guint64 seed, guint count, gboolean half)
{
  const gsize slot = MODELTEST_MAX_POINTS * MODELTEST_PFN_IN;
  gsize n_features = MODELTEST_MAX_VOXELS * slot;
  gfloat *features = g_new0 (gfloat, n_features);
  guint16 *halves = g_new0 (guint16, n_features);
  gint32 coords[MODELTEST_MAX_VOXELS * 4] = { 0 };
  guint32 n = count;
  gboolean used[MODELTEST_GRID * MODELTEST_GRID] = { FALSE };
  gconstpointer data[3];
  gsize sizes[3], i;
  P3dTestRng rng;
  GstBuffer *buffer;
  guint v, s;

  p3d_test_rng_init (&rng, seed);
  for (v = 0; v < count; v++) {
    guint cell, points = 1 + p3d_test_rng_below (&rng, MODELTEST_MAX_POINTS);

    do
      cell = p3d_test_rng_below (&rng, MODELTEST_GRID * MODELTEST_GRID);
    while (used[cell]);
    used[cell] = TRUE;
    coords[v * 4 + 2] = cell / MODELTEST_GRID;
    coords[v * 4 + 3] = cell % MODELTEST_GRID;
    for (s = 0; s < points * MODELTEST_PFN_IN; s++)
      features[v * slot + s] = p3d_test_rng_uniform (&rng, -4.0f, 4.0f);
  }
  for (i = 0; i < n_features; i++)
    halves[i] = p3dc_float_to_half (features[i]);
  data[0] = half ? (gconstpointer) halves : (gconstpointer) features;
  sizes[0] = n_features * (half ? 2 : 4);
  data[1] = coords;
  sizes[1] = sizeof (coords);
  data[2] = &n;
  sizes[2] = 4;
  buffer = elemtest_tensors_buffer (3, data, sizes);
  g_free (features);
  g_free (halves);
  return buffer;
}

static gchar *
pillars_caps (const gchar * format)
{
  return g_strdup_printf ("application/x-pillar-features, format=%s, "
      "features=mmdet3d-11, max-voxels=(int)%d, max-points=(int)%d, %s",
      format, MODELTEST_MAX_VOXELS, MODELTEST_MAX_POINTS,
      MODELTEST_GRID_FIELDS);
}

GST_START_TEST (test_pillarencode)
{
  static const guint counts[] = { 40, 3, 0, MODELTEST_MAX_VOXELS, 17 };
  const ModeltestOptions options = { 2, FALSE, 11 };
  ModeltestModel *m = modeltest_model_new (&options);
  gchar *path = modeltest_model_write (m, NULL);
  guint half, cuda_out, k;

  for (half = 0; half < 2; half++)
    for (cuda_out = 0; cuda_out < 2; cuda_out++) {
      gchar *caps = pillars_caps (half ? "F16" : "F32");
      gchar *cpu_launch = g_strdup_printf ("pillarencode backend=cpu "
          "weights=%s", path);
      gchar *cuda_launch = g_strdup_printf ("pillarencode backend=cuda "
          "weights=%s", path);
      GstHarness *cpu = harness (cpu_launch, caps,
          "application/x-bev-features", FALSE);
      GstHarness *cuda = harness (cuda_launch, caps,
          "application/x-bev-features", cuda_out);

      assert_backend (cpu, "pillarencode", P3D_BACKEND_CPU);
      assert_backend (cuda, "pillarencode", P3D_BACKEND_CUDA);
      /* the count up and down through one pool (the clean-output path) */
      for (k = 0; k < G_N_ELEMENTS (counts); k++) {
        GstBuffer *expected = push_pull (cpu, pillars_buffer (50 + k,
                counts[k], half));
        GstBuffer *actual = push_pull (cuda, pillars_buffer (50 + k,
                counts[k], half));
        gchar *what = g_strdup_printf ("pillarencode %s, output in %s "
            "memory, frame %u", half ? "F16" : "F32",
            cuda_out ? "CUDA" : "system", k);
        GstMapInfo info;

        assert_memory (actual, cuda_out);
        fail_unless (gst_buffer_map (expected, &info, GST_MAP_READ));
        elemtest_assert_tensor (actual, 0, info.data, info.size, what);
        gst_buffer_unmap (expected, &info);
        gst_buffer_unref (expected);
        gst_buffer_unref (actual);
        g_free (what);
      }
      g_print ("network_cuda: pillarencode %s, output in %s memory: %u "
          "canvases identical\n", half ? "F16" : "F32",
          cuda_out ? "CUDA" : "system", (guint) G_N_ELEMENTS (counts));
      gst_harness_teardown (cpu);
      gst_harness_teardown (cuda);
      g_free (cpu_launch);
      g_free (cuda_launch);
      g_free (caps);
    }
  modeltest_remove (path);
  modeltest_model_free (m);
}

GST_END_TEST;

/* ---- box comparisons ------------------------------------------------- */

static gdouble
yaw_difference (gdouble a, gdouble b)
{
  gdouble d = fmod (fabs (a - b), 2 * G_PI);

  return MIN (d, 2 * G_PI - d);
}

/* The largest difference of @a from @e over the fields, each relative to
 * 1 + |expected| (yaw: modulo 2 pi). */
static gdouble
box_difference (const P3dcBox3d * a, const P3dcBox3d * e)
{
  const gfloat av[7] = { a->x, a->y, a->z, a->dx, a->dy, a->dz, a->score };
  const gfloat ev[7] = { e->x, e->y, e->z, e->dx, e->dy, e->dz, e->score };
  gdouble worst = yaw_difference (a->yaw, e->yaw) / (1 + fabs (e->yaw));
  guint k;

  for (k = 0; k < 7; k++)
    worst = MAX (worst, fabs (av[k] - ev[k]) / (1 + fabs (ev[k])));
  return worst;
}

/* F32: every box of @expected matched by one of @actual (same label,
 * closest first) within 1e-4; returns the largest difference. */
static gdouble
match_f32 (const P3dcBox3d * actual, guint n_actual, const P3dcBox3d * expected,
    guint n_expected, const gchar * what)
{
  gboolean *taken = g_new0 (gboolean, MAX (n_actual, 1));
  gdouble worst = 0;
  guint i, j;

  fail_unless_equals_int (n_actual, n_expected);
  for (i = 0; i < n_expected; i++) {
    gdouble best = G_MAXDOUBLE;
    guint best_j = 0;

    for (j = 0; j < n_actual; j++) {
      gdouble d;

      if (taken[j] || actual[j].label != expected[i].label)
        continue;
      d = box_difference (&actual[j], &expected[i]);
      if (d < best) {
        best = d;
        best_j = j;
      }
    }
    fail_unless (best <= 1e-4, "%s: reference box %u (x %g y %g score %g "
        "label %d) has no CUDA box within 1e-4 (closest %g)", what, i,
        expected[i].x, expected[i].y, expected[i].score, expected[i].label,
        best);
    taken[best_j] = TRUE;
    worst = MAX (worst, best);
  }
  g_free (taken);
  return worst;
}

/* Whether @box is within the F16 tolerances of @e, the yaw modulo
 * @yaw_period. */
static gboolean
f16_match (const P3dcBox3d * box, const P3dcBox3d * e, gdouble yaw_period)
{
  return box->label == e->label && fabs (box->x - e->x) <= 0.05
      && fabs (box->y - e->y) <= 0.05 && fabs (box->z - e->z) <= 0.05
      && fabs (box->dx - e->dx) <= 0.05 * e->dx
      && fabs (box->dy - e->dy) <= 0.05 * e->dy
      && fabs (box->dz - e->dz) <= 0.05 * e->dz
      && MIN (yaw_difference (box->yaw, e->yaw), yaw_difference (box->yaw +
          2 * G_PI - yaw_period, e->yaw)) <= F16_YAW_TOLERANCE
      && fabs (box->score - e->score) <= 0.02;
}

typedef struct
{
  guint compared, near_threshold;
  guint flips;                  /* matched with the yaw half a turn off */
  gdouble position, size, yaw, score;   /* largest differences */
} F16Stats;

/* The box of @to with @b's label nearest to it in x and y, or NULL: what a
 * failed match prints, to tell a moved box from a missing one. */
static const P3dcBox3d *
nearest_same_label (const P3dcBox3d * b, const P3dcBox3d * to, guint n_to)
{
  const P3dcBox3d *best = NULL;
  gdouble best_d = G_MAXDOUBLE;
  guint j;

  for (j = 0; j < n_to; j++) {
    gdouble d = hypot (to[j].x - b->x, to[j].y - b->y);

    if (to[j].label == b->label && d < best_d) {
      best_d = d;
      best = &to[j];
    }
  }
  return best;
}

/* Every box of @from scoring above threshold + margin has an F16 match in
 * @to; its differences go to @stats. */
static void
match_f16_one_way (const P3dcBox3d * from, guint n_from, const P3dcBox3d * to,
    guint n_to, gdouble yaw_period, F16Stats * stats, const gchar * what,
    const gchar * side)
{
  guint i, j;

  for (i = 0; i < n_from; i++) {
    const P3dcBox3d *b = &from[i];
    gboolean found = FALSE;

    if (b->score <= MODELTEST_SCORE_THRESHOLD + F16_MARGIN) {
      stats->near_threshold++;
      continue;
    }
    for (j = 0; j < n_to && !found; j++) {
      const P3dcBox3d *c = &to[j];

      if (!f16_match (c, b, yaw_period))
        continue;
      found = TRUE;
      stats->compared++;
      if (yaw_difference (c->yaw, b->yaw) > F16_YAW_TOLERANCE) {
        stats->flips++;
        continue;
      }
      stats->position = MAX (stats->position, MAX (fabs (c->x - b->x),
              MAX (fabs (c->y - b->y), fabs (c->z - b->z))));
      stats->size = MAX (stats->size, MAX (fabs (c->dx - b->dx) / b->dx,
              MAX (fabs (c->dy - b->dy) / b->dy, fabs (c->dz - b->dz) /
                  b->dz)));
      stats->yaw = MAX (stats->yaw, yaw_difference (c->yaw, b->yaw));
      stats->score = MAX (stats->score, fabs (c->score - b->score));
    }
    if (!found) {
      const P3dcBox3d *c = nearest_same_label (b, to, n_to);

      fail_unless (c != NULL, "%s: %s box %u (x %g y %g z %g score %g label "
          "%d) has no box of its label on the other side", what, side, i,
          b->x, b->y, b->z, b->score, b->label);
      fail ("%s: %s box %u (x %g y %g z %g dx %g dy %g dz %g yaw %g score %g "
          "label %d) has no match on the other side; the nearest of its "
          "label: x %g y %g z %g dx %g dy %g dz %g yaw %g score %g", what,
          side, i, b->x, b->y, b->z, b->dx, b->dy, b->dz, b->yaw, b->score,
          b->label, c->x, c->y, c->z, c->dx, c->dy, c->dz, c->yaw, c->score);
    }
  }
}

static void
match_f16 (const P3dcBox3d * actual, guint n_actual, const P3dcBox3d * expected,
    guint n_expected, gdouble yaw_period, const gchar * what)
{
  F16Stats stats = { 0, };

  match_f16_one_way (expected, n_expected, actual, n_actual, yaw_period,
      &stats, what, "reference");
  match_f16_one_way (actual, n_actual, expected, n_expected, yaw_period,
      &stats, what, "CUDA");
  fail_unless (ABS ((gint) n_actual - (gint) n_expected) <=
      (gint) stats.near_threshold, "%s: %u CUDA boxes, %u reference boxes, "
      "only %u within %g of the threshold", what, n_actual, n_expected,
      stats.near_threshold, F16_MARGIN);
  g_print ("network_cuda: %s: %u reference boxes, %u CUDA boxes, %u near "
      "the threshold, %u with the direction flipped; largest differences: "
      "position %.3g m, size %.3g relative, yaw %.3g rad, score %.3g\n", what,
      n_expected, n_actual, stats.near_threshold, stats.flips,
      stats.position, stats.size, stats.yaw, stats.score);
}

/* ---- bevdetect --------------------------------------------------------- */

typedef struct
{
  ModeltestOptions model;
  gboolean full_max_num;        /* max_num 64: no top-k cut */
  gboolean nms;
  gboolean f16;
} DetectCase;

/* The last two: heads of 32 channels, which the build merges into one
 * grouped convolution (8-channel heads stay apart). */
static const DetectCase detect_cases[] = {
  {{2, FALSE, 61}, FALSE, TRUE, FALSE},
  {{2, FALSE, 61}, FALSE, FALSE, FALSE},
  {{1, TRUE, 62}, FALSE, TRUE, FALSE},
  {{1, FALSE, 63}, TRUE, FALSE, TRUE},
  {{1, TRUE, 64}, TRUE, FALSE, TRUE},
  {{2, FALSE, 65}, FALSE, TRUE, TRUE},
  {{2, FALSE, 66, 32}, FALSE, FALSE, FALSE},
  {{2, TRUE, 67, 32}, TRUE, FALSE, TRUE},
};

static const ModeltestMutation full_max_num = {
  NULL, NULL, 0, {0}, NULL, "\"max_num\": 30", "\"max_num\": 64", FALSE
};

static void
compare_boxes (GstBuffer * cuda_out, GstBuffer * cpu_out, gboolean f16,
    gboolean nms, gdouble yaw_period, const gchar * what, gdouble * worst)
{
  P3dcBox3d *actual, *expected;
  guint n_actual = modeltest_read_boxes (cuda_out, &actual);
  guint n_expected = modeltest_read_boxes (cpu_out, &expected);

  if (!f16) {
    gdouble d = match_f32 (actual, n_actual, expected, n_expected, what);

    *worst = MAX (*worst, d);
  } else if (!nms) {
    match_f16 (actual, n_actual, expected, n_expected, yaw_period, what);
  } else {
    fail_unless (ABS ((gint) n_actual - (gint) n_expected) <=
        2 + (gint) n_expected / 4, "%s: %u CUDA boxes, %u reference boxes",
        what, n_actual, n_expected);
    g_print ("network_cuda: %s: %u reference boxes, %u CUDA boxes\n", what,
        n_expected, n_actual);
  }
  g_free (actual);
  g_free (expected);
}

GST_START_TEST (test_bevdetect)
{
  const DetectCase *dc = &detect_cases[__i__];
  ModeltestModel *m = modeltest_model_new (&dc->model);
  gchar *path = modeltest_model_write (m,
      dc->full_max_num ? &full_max_num : NULL);
  gchar *properties = g_strdup_printf ("weights=%s model-nms=%s "
      "precision=%s", path, dc->nms ? "true" : "false", dc->f16 ? "f16" :
      "f32");
  gchar *cpu_launch = g_strdup_printf ("bevdetect backend=cpu %s",
      properties);
  gchar *cuda_launch = g_strdup_printf ("bevdetect backend=cuda %s",
      properties);
  guint in_half, cuda_out, frame;
  gdouble worst = 0;

  for (in_half = 0; in_half < 2; in_half++)
    for (cuda_out = 0; cuda_out < 2; cuda_out++) {
      gchar *caps = modeltest_bev_caps (in_half ? "F16" : "F32");
      GstHarness *cpu = harness (cpu_launch, caps, "application/x-boxes3d",
          FALSE);
      GstHarness *cuda = harness (cuda_launch, caps, "application/x-boxes3d",
          cuda_out);

      assert_backend (cuda, "bevdetect", P3D_BACKEND_CUDA);
      for (frame = 0; frame < 3; frame++) {
        gfloat *canvas = modeltest_random_canvas (700 + frame);
        gchar *what = g_strdup_printf ("bevdetect case %d (%u task%s, %s, "
            "%s NMS, precision %s, %u-channel heads), %s input, output in "
            "%s memory, frame %u", __i__, dc->model.n_tasks,
            dc->model.n_tasks > 1 ? "s" : "",
            dc->model.rotate ? "rotate" : "circle", dc->nms ? "model" : "no",
            dc->f16 ? "f16" : "f32",
            dc->model.head_conv ? dc->model.head_conv : 8,
            in_half ? "F16" : "F32", cuda_out ? "CUDA" : "system", frame);
        GstBuffer *expected = push_pull (cpu,
            modeltest_canvas_buffer (canvas, in_half));
        GstBuffer *actual = push_pull (cuda,
            modeltest_canvas_buffer (canvas, in_half));

        assert_memory (actual, cuda_out);
        compare_boxes (actual, expected, dc->f16, dc->nms, 2 * G_PI, what,
            &worst);
        gst_buffer_unref (expected);
        gst_buffer_unref (actual);
        g_free (what);
        g_free (canvas);
      }
      gst_harness_teardown (cpu);
      gst_harness_teardown (cuda);
      g_free (caps);
    }
  if (!dc->f16)
    g_print ("network_cuda: bevdetect case %d, precision f32: largest "
        "difference of a matched box %.3g (relative to 1 + |value|; bound "
        "1e-4)\n", __i__, worst);
  g_free (properties);
  g_free (cpu_launch);
  g_free (cuda_launch);
  modeltest_remove (path);
  modeltest_model_free (m);
}

GST_END_TEST;

/* ---- a camera model ------------------------------------------------------ */

/* bevdetect on a tiny BEVDet model (its "bev" network: ResNetForBEVDet,
 * FPN_LSS with bilinear align_corners, a CenterHead with vel, Scale-NMS)
 * on bevpool-shaped features: precision=f32 against backend=cpu, every box
 * matched within 1e-4 and each matched box's velocity within 1e-4 of
 * 1 + |v|; precision=f16 with the model's NMS, the counts within 2 + 25 %
 * as for CenterPoint. */
GST_START_TEST (test_bevdetect_camera_model)
{
  P3dTestBevDetArch arch;
  gchar *path, *caps;
  guint f16, cuda_out, frame;
  gdouble worst = 0;

  p3d_test_bevdet_arch_init (&arch);
  path = modeltest_bevdet_write (&arch, 93);
  caps = modeltest_bevdet_caps (&arch, "F32");
  for (f16 = 0; f16 < 2; f16++)
    for (cuda_out = 0; cuda_out < 2; cuda_out++) {
      gchar *cpu_launch = g_strdup_printf ("bevdetect backend=cpu "
          "weights=%s", path);
      gchar *cuda_launch = g_strdup_printf ("bevdetect backend=cuda "
          "precision=%s weights=%s", f16 ? "f16" : "f32", path);
      GstHarness *cpu = harness (cpu_launch, caps, "application/x-boxes3d",
          FALSE);
      GstHarness *cuda = harness (cuda_launch, caps, "application/x-boxes3d",
          cuda_out);

      for (frame = 0; frame < 3; frame++) {
        gfloat *canvas = modeltest_bevdet_canvas (&arch, 60 + frame);
        GstBuffer *expected = push_pull (cpu, modeltest_bevdet_buffer (&arch,
                canvas, FALSE));
        GstBuffer *actual = push_pull (cuda, modeltest_bevdet_buffer (&arch,
                canvas, FALSE));
        gchar *what = g_strdup_printf ("camera model, precision %s, output "
            "in %s memory, frame %u", f16 ? "f16" : "f32",
            cuda_out ? "CUDA" : "system", frame);
        P3dcBox3d *a, *e;
        gfloat *av, *ev;
        guint na, ne, i, j;

        assert_memory (actual, cuda_out);
        na = modeltest_read_boxes_velocity (actual, &a, &av);
        ne = modeltest_read_boxes_velocity (expected, &e, &ev);
        fail_unless (av != NULL && ev != NULL, "%s: no velocity", what);
        if (!f16) {
          worst = MAX (worst, match_f32 (a, na, e, ne, what));
          /* the velocity of each reference box's closest match */
          for (i = 0; i < ne; i++) {
            guint best = 0;
            gdouble best_d = G_MAXDOUBLE;

            for (j = 0; j < na; j++)
              if (a[j].label == e[i].label && box_difference (&a[j], &e[i])
                  < best_d) {
                best_d = box_difference (&a[j], &e[i]);
                best = j;
              }
            fail_unless (fabs (av[2 * best] - ev[2 * i]) <= 1e-4 * (1 +
                    fabs (ev[2 * i])) && fabs (av[2 * best + 1] -
                    ev[2 * i + 1]) <= 1e-4 * (1 + fabs (ev[2 * i + 1])),
                "%s: box %u velocity (%g, %g), reference (%g, %g)", what, i,
                av[2 * best], av[2 * best + 1], ev[2 * i], ev[2 * i + 1]);
          }
        } else {
          fail_unless (ABS ((gint) na - (gint) ne) <= 2 + (gint) ne / 4,
              "%s: %u CUDA boxes, %u reference boxes", what, na, ne);
          g_print ("network_cuda: %s: %u reference boxes, %u CUDA boxes\n",
              what, ne, na);
        }
        g_free (a);
        g_free (e);
        g_free (av);
        g_free (ev);
        gst_buffer_unref (expected);
        gst_buffer_unref (actual);
        g_free (what);
        g_free (canvas);
      }
      gst_harness_teardown (cpu);
      gst_harness_teardown (cuda);
      g_free (cpu_launch);
      g_free (cuda_launch);
    }
  g_print ("network_cuda: camera model, precision f32: largest difference of "
      "a matched box %.3g (relative to 1 + |value|; bound 1e-4)\n", worst);
  g_free (caps);
  modeltest_remove (path);
}

GST_END_TEST;

/* ---- the chain --------------------------------------------------------- */

/* pillarencode ! bevdetect on the device, the canvas in CUDA memory
 * between them, against the reference chain. */
GST_START_TEST (test_chain)
{
  const ModeltestOptions options = { 2, FALSE, 71 };
  ModeltestModel *m = modeltest_model_new (&options);
  gchar *path = modeltest_model_write (m, NULL);
  gchar *caps = pillars_caps ("F32");
  gchar *cpu_launch = g_strdup_printf ("pillarencode backend=cpu weights=%s "
      "! bevdetect backend=cpu weights=%s", path, path);
  gchar *cuda_launch = g_strdup_printf ("pillarencode backend=cuda "
      "weights=%s ! application/x-bev-features" CUDA_FEATURE " ! bevdetect "
      "backend=cuda precision=f32 weights=%s", path,
      path);
  GstHarness *cpu = harness (cpu_launch, caps, "application/x-boxes3d",
      FALSE);
  GstHarness *cuda = harness (cuda_launch, caps, "application/x-boxes3d",
      TRUE);
  GstElement *detect = gst_harness_find_element (cuda, "bevdetect");
  GstPad *pad = gst_element_get_static_pad (detect, "sink");
  gdouble worst = 0;
  guint frame;

  for (frame = 0; frame < 4; frame++) {
    GstBuffer *expected = push_pull (cpu, pillars_buffer (80 + frame,
            20 + 10 * frame, FALSE));
    GstBuffer *actual = push_pull (cuda, pillars_buffer (80 + frame,
            20 + 10 * frame, FALSE));
    gchar *what = g_strdup_printf ("chain, frame %u", frame);

    compare_boxes (actual, expected, FALSE, TRUE, 2 * G_PI, what, &worst);
    gst_buffer_unref (expected);
    gst_buffer_unref (actual);
    g_free (what);
  }
  {
    GstCaps *between = gst_pad_get_current_caps (pad);

    fail_unless (between != NULL);
    fail_unless (p3d_caps_is_cuda (between), "the canvas is not in CUDA "
        "memory: %" GST_PTR_FORMAT, between);
    gst_caps_unref (between);
  }
  g_print ("network_cuda: chain pillarencode ! bevdetect precision=f32: "
      "largest difference of a matched box %.3g\n", worst);
  gst_object_unref (pad);
  gst_object_unref (detect);
  gst_harness_teardown (cpu);
  gst_harness_teardown (cuda);
  g_free (cpu_launch);
  g_free (cuda_launch);
  g_free (caps);
  modeltest_remove (path);
  modeltest_model_free (m);
}

GST_END_TEST;

/* ---- PointPillars ------------------------------------------------------ */

typedef struct
{
  AnchorModelOptions model;
  gboolean nms;
  gboolean f16;                 /* features, canvas and network */
} AnchorCase;

static const AnchorCase anchor_cases[] = {
  {{FALSE, FALSE, FALSE, FALSE, 81}, TRUE, FALSE},
  {{FALSE, FALSE, FALSE, FALSE, 81}, FALSE, FALSE},
  {{FALSE, TRUE, FALSE, FALSE, 82}, TRUE, FALSE},
  {{TRUE, FALSE, FALSE, FALSE, 83}, TRUE, FALSE},
  {{TRUE, FALSE, TRUE, TRUE, 84}, FALSE, FALSE},
  {{FALSE, FALSE, FALSE, FALSE, 85}, FALSE, TRUE},
  {{TRUE, FALSE, FALSE, FALSE, 86}, FALSE, TRUE},
  {{FALSE, TRUE, FALSE, FALSE, 87}, TRUE, TRUE},
  {{TRUE, FALSE, FALSE, FALSE, 88}, TRUE, TRUE},
};

/* The frame as x-pillar-features (F16: the features rounded). */
static GstBuffer *
anchor_pillars_buffer (const AnchorModelPillars * p, gboolean half)
{
  const gsize n = G_N_ELEMENTS (p->features);
  guint16 *halves = g_new (guint16, n);
  gconstpointer data[3];
  gsize sizes[3], i;
  GstBuffer *buffer;

  for (i = 0; i < n; i++)
    halves[i] = p3dc_float_to_half (p->features[i]);
  data[0] = half ? (gconstpointer) halves : (gconstpointer) p->features;
  sizes[0] = n * (half ? 2 : 4);
  data[1] = p->coords;
  sizes[1] = sizeof (p->coords);
  data[2] = &p->count;
  sizes[2] = 4;
  buffer = elemtest_tensors_buffer (3, data, sizes);
  g_free (halves);
  return buffer;
}

/* pillarencode ! bevdetect of a PointPillars model, CUDA against the
 * reference: F32 every box matched within 1e-4; F16 as the CenterPoint
 * cases (without the model's NMS, pre-max raised to 4096 so that the score
 * threshold is the only place a box can flip). */
GST_START_TEST (test_pointpillars)
{
  static const guint frame_pillars[] = { 40, 0, ANCHORMODEL_MAX_VOXELS, 20 };
  const AnchorCase *ac = &anchor_cases[__i__];
  AnchorModel *m = anchormodel_new (&ac->model);
  const gchar *pre = ac->model.mmdet3d ? "\"pre_max\": 50" : "\"pre_max\": 100";
  gchar *path = anchormodel_write (m, pre, ac->f16 && !ac->nms ?
      "\"pre_max\": 4096" : pre, FALSE, NULL);
  gchar *caps = g_strdup_printf ("application/x-pillar-features, format=%s, "
      "features=pointpillars-10, max-voxels=(int)%d, max-points=(int)%d, %s",
      ac->f16 ? "F16" : "F32", ANCHORMODEL_MAX_VOXELS, ANCHORMODEL_MAX_POINTS,
      ANCHORMODEL_GRID_FIELDS);
  guint cuda_out, frame;
  gdouble worst = 0;

  for (cuda_out = 0; cuda_out < 2; cuda_out++) {
    gchar *launch[2];
    GstHarness *h[2];
    guint b;

    for (b = 0; b < 2; b++) {
      launch[b] = g_strdup_printf ("pillarencode backend=%s weights=%s ! "
          "bevdetect backend=%s weights=%s model-nms=%s precision=%s",
          b ? "cuda" : "cpu", path, b ? "cuda" : "cpu", path,
          ac->nms ? "true" : "false", ac->f16 ? "f16" : "f32");
      h[b] = harness (launch[b], caps, "application/x-boxes3d", b && cuda_out);
    }
    assert_backend (h[1], "bevdetect", P3D_BACKEND_CUDA);
    for (frame = 0; frame < G_N_ELEMENTS (frame_pillars); frame++) {
      AnchorModelPillars pillars;
      GstBuffer *expected, *actual;
      gchar *what = g_strdup_printf ("pointpillars case %d (%s%s%s, %s "
          "NMS, %s), output in %s memory, frame %u", __i__,
          ac->model.mmdet3d ? "mmdet3d" : "openpcdet",
          ac->model.per_class ? ", per class" : "",
          ac->model.velocity ? ", velocity" : "",
          ac->nms ? "model" : "no", ac->f16 ? "f16" : "f32",
          cuda_out ? "CUDA" : "system", frame);

      anchormodel_random_pillars (900 + 10 * __i__ + frame,
          frame_pillars[frame], &pillars);
      expected = push_pull (h[0], anchor_pillars_buffer (&pillars, ac->f16));
      actual = push_pull (h[1], anchor_pillars_buffer (&pillars, ac->f16));
      assert_memory (actual, cuda_out);
      /* F16 can flip the direction bin of a box whose two direction logits
       * are nearly equal: its yaw then moves by half a turn, the same
       * rectangle (counted as a flip) */
      compare_boxes (actual, expected, ac->f16, ac->nms, G_PI, what, &worst);
      gst_buffer_unref (expected);
      gst_buffer_unref (actual);
      g_free (what);
    }
    for (b = 0; b < 2; b++) {
      gst_harness_teardown (h[b]);
      g_free (launch[b]);
    }
  }
  if (!ac->f16)
    g_print ("network_cuda: pointpillars case %d, precision f32: largest "
        "difference of a matched box %.3g (relative to 1 + |value|; bound "
        "1e-4)\n", __i__, worst);
  g_free (caps);
  g_unlink (path);
  g_free (path);
  anchormodel_free (m);
}

GST_END_TEST;

static Suite *
network_cuda_suite (void)
{
  Suite *s = suite_create ("network_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_pillarencode);
  tcase_add_loop_test (tc, test_bevdetect, 0, G_N_ELEMENTS (detect_cases));
  tcase_add_test (tc, test_chain);
  tcase_add_test (tc, test_bevdetect_camera_model);
  tcase_add_loop_test (tc, test_pointpillars, 0, G_N_ELEMENTS (anchor_cases));
  return s;
}

P3D_CHECK_MAIN (network_cuda);
