/* bevdetect on the reference path: the caps come from the model (canvas
 * channels and size on the sink side, max-boxes = the model's capacity on
 * the source side); the boxes equal those of the compute library's
 * reference called directly on the same canvas (F32 and F16 input, circle
 * and rotate NMS, one and two tasks, with and without the model's NMS,
 * heads apart and merged into one buffer); a
 * head whose weights are zero except its biases gives boxes worked out by
 * hand; model-nms=false never gives fewer boxes, and every box the NMS
 * keeps is among them; every bad weights file refused when the element
 * starts; BEV caps that are not the model's refused naming both values;
 * precision readable; backend=auto equal to backend=cpu. */
#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "p3dtest-elem.h"
#include "p3dtest-model.h"
#include "p3dperception.h"
#include "p3dtest.h"
#include "runtime.h"

static GstHarness *
detect_harness (const gchar * weights, const gchar * backend,
    const gchar * properties, const gchar * format)
{
  gchar *launch = g_strdup_printf ("bevdetect backend=%s weights=%s %s",
      backend, weights, properties);
  gchar *caps = modeltest_bev_caps (format);
  GstHarness *h = gst_harness_new_parse (launch);

  gst_harness_set_src_caps_str (h, caps);
  gst_harness_set_sink_caps_str (h, "application/x-boxes3d");
  g_free (caps);
  g_free (launch);
  return h;
}

/* Pushes @canvas (F16 when @half: @canvas is rounded in place) and returns
 * the output's boxes (and in @velocity, when not NULL, its velocities,
 * NULL when it has none). */
static guint
detect_velocity (GstHarness * h, gfloat * canvas, gboolean half,
    P3dcBox3d ** boxes, gfloat ** velocity)
{
  GstBuffer *out;
  guint count;

  fail_unless_equals_int (gst_harness_push (h,
          modeltest_canvas_buffer (canvas, half)), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless (out != NULL);
  count = modeltest_read_boxes_velocity (out, boxes, velocity);
  gst_buffer_unref (out);
  return count;
}

static guint
detect (GstHarness * h, gfloat * canvas, gboolean half, P3dcBox3d ** boxes)
{
  return detect_velocity (h, canvas, half, boxes, NULL);
}

/* ---- caps ----------------------------------------------------------- */

GST_START_TEST (test_caps_from_model)
{
  static const ModeltestOptions models[] = { {2, FALSE, 3}, {1, TRUE, 4} };
  guint i, nms;

  for (i = 0; i < G_N_ELEMENTS (models); i++) {
    ModeltestModel *m = modeltest_model_new (&models[i]);
    gchar *path = modeltest_model_write (m, NULL);

    for (nms = 0; nms < 2; nms++) {
      GstHarness *h = detect_harness (path, "cpu",
          nms ? "model-nms=true" : "model-nms=false", nms ? "F32" : "F16");
      GstElement *e = gst_harness_find_element (h, "bevdetect");
      GstPad *sinkpad = gst_element_get_static_pad (e, "sink");
      gfloat *canvas = modeltest_random_canvas (1);
      P3dcBox3d *boxes;
      GstCaps *caps;
      GstStructure *s;
      gint value;

      caps = gst_pad_query_caps (sinkpad, NULL);
      s = gst_caps_get_structure (caps, 0);
      fail_unless (gst_structure_get_int (s, "channels", &value));
      fail_unless_equals_int (value, MODELTEST_PFN_OUT);
      fail_unless (gst_structure_get_int (s, "width", &value));
      fail_unless_equals_int (value, MODELTEST_GRID);
      fail_unless (gst_structure_get_int (s, "height", &value));
      fail_unless_equals_int (value, MODELTEST_GRID);
      gst_caps_unref (caps);

      detect (h, canvas, !nms, &boxes);
      caps = gst_pad_get_current_caps (h->sinkpad);
      s = gst_caps_get_structure (caps, 0);
      fail_unless (gst_structure_has_name (s, "application/x-boxes3d"));
      fail_unless (gst_structure_get_int (s, "max-boxes", &value));
      fail_unless_equals_int (value, modeltest_capacity (&models[i], nms));
      gst_caps_unref (caps);
      g_free (boxes);
      g_free (canvas);
      gst_object_unref (sinkpad);
      gst_object_unref (e);
      gst_harness_teardown (h);
    }
    modeltest_remove (path);
    modeltest_model_free (m);
  }
}

GST_END_TEST;

/* ---- against the reference ------------------------------------------ */

static void
assert_same_boxes (const P3dcBox3d * actual, guint actual_count,
    const P3dcBox3d * expected, guint expected_count, const gchar * what)
{
  guint i;

  fail_unless_equals_int (actual_count, expected_count);
  for (i = 0; i < expected_count; i++) {
    gchar *name = g_strdup_printf ("%s, box %u", what, i);

    elemtest_assert_bytes (&actual[i], &expected[i], sizeof (P3dcBox3d), name);
    g_free (name);
  }
}

typedef struct
{
  ModeltestOptions model;
  gboolean nms;
  gboolean half;
} ReferenceCase;

static const ReferenceCase reference_cases[] = {
  {{2, FALSE, 21}, TRUE, FALSE},
  {{2, FALSE, 21}, FALSE, FALSE},
  {{2, FALSE, 22}, TRUE, TRUE},
  {{1, TRUE, 23}, TRUE, FALSE},
  {{1, TRUE, 23}, FALSE, TRUE},
  {{2, TRUE, 24}, TRUE, TRUE},
  /* heads of 32 channels: merged, their maps slices of one buffer */
  {{2, FALSE, 25, 32}, TRUE, FALSE},
  {{2, TRUE, 26, 32}, FALSE, TRUE},
};

GST_START_TEST (test_reference_boxes)
{
  const ReferenceCase *rc = &reference_cases[__i__];
  ModeltestModel *m = modeltest_model_new (&rc->model);
  gchar *path = modeltest_model_write (m, NULL);
  GstHarness *h = detect_harness (path, "cpu", rc->nms ? "model-nms=true" :
      "model-nms=false", rc->half ? "F16" : "F32");
  guint frame, total = 0;

  /* 32-channel heads are merged: every map a slice of one buffer */
  fail_unless_equals_int (modeltest_head_buffers (path),
      rc->model.head_conv >= 32 ? 1 : 6 * rc->model.n_tasks);

  /* frames through one pool: the count goes up and down */
  for (frame = 0; frame < 3; frame++) {
    gfloat *canvas = modeltest_random_canvas (1000 + 10 * __i__ + frame);
    P3dcBox3d *actual, *expected;
    gfloat *actual_velocity, *expected_velocity;
    guint actual_count, expected_count;
    gchar *what = g_strdup_printf ("case %d frame %u", __i__, frame);

    if (frame == 1)             /* an empty canvas: the head's biases only */
      memset (canvas, 0, MODELTEST_CANVAS_VALUES * sizeof (gfloat));
    actual_count = detect_velocity (h, canvas, rc->half, &actual,
        &actual_velocity);
    expected_count = modeltest_reference_boxes (path, &rc->model, rc->nms,
        canvas, &expected, &expected_velocity);
    assert_same_boxes (actual, actual_count, expected, expected_count, what);
    /* the model has vel heads: every box's velocity, zeros after them */
    fail_unless (actual_velocity != NULL, "%s: no velocity", what);
    elemtest_assert_bytes (actual_velocity, expected_velocity,
        modeltest_capacity (&rc->model, rc->nms) * 8, what);
    GST_INFO ("%s: %u boxes", what, actual_count);
    total += actual_count;
    g_free (what);
    g_free (actual);
    g_free (expected);
    g_free (actual_velocity);
    g_free (expected_velocity);
    g_free (canvas);
  }
  /* the random models detect something */
  fail_unless (total > 0);
  gst_harness_teardown (h);
  modeltest_remove (path);
  modeltest_model_free (m);
}

GST_END_TEST;

/* ---- a head worked out by hand -------------------------------------- */

static void
set_bias (ModeltestModel * m, const gchar * head, const gfloat * values,
    guint n)
{
  gchar *name = g_strdup_printf ("pts_bbox_head.task_heads.0.%s.1.bias",
      head);
  ModeltestTensor *t = modeltest_model_get (m, name);

  fail_unless_equals_int (t->count, n);
  memcpy (t->values, values, n * sizeof (gfloat));
  g_free (name);
}

/* Every head map holds its bias: every cell scores sigmoid (0.5), the
 * ties go in cell order (y, then x), so the boxes are the first max-num
 * cells (30; the rotate NMS keeps the first post-max, 20, as boxes of
 * 0.14 x 0.22 m one metre apart never overlap), each at
 *   x = ((ix + 0.25) * 2) * 0.5 - 4, y = ((iy + 0.75) * 2) * 0.5 - 4,
 *   z = 0.5, sizes exp (-2, -1.5, -1), yaw atan2 (0.6, 0.8), label 0.
 * A heatmap bias of -3 (score 0.047, under the threshold) gives none. */
GST_START_TEST (test_hand_worked_head)
{
  static const gfloat reg[2] = { 0.25f, 0.75f }, height[1] = { 0.5f },
      dim[3] = { -2.0f, -1.5f, -1.0f }, rot[2] = { 0.6f, 0.8f },
      vel[2] = { 0.1f, 0.2f }, heat[1] = { 0.5f }, cold[1] = { -3.0f };
  const ModeltestOptions options = { 1, TRUE, 8 };
  guint pass, nms;

  for (pass = 0; pass < 2; pass++) {
    ModeltestModel *m = modeltest_model_new (&options);
    gchar *path;

    modeltest_model_zero_head (m);
    set_bias (m, "reg", reg, 2);
    set_bias (m, "height", height, 1);
    set_bias (m, "dim", dim, 3);
    set_bias (m, "rot", rot, 2);
    set_bias (m, "vel", vel, 2);
    set_bias (m, "heatmap", pass == 0 ? heat : cold, 1);
    path = modeltest_model_write (m, NULL);
    for (nms = 0; nms < 2; nms++) {
      GstHarness *h = detect_harness (path, "cpu", nms ? "model-nms=true" :
          "model-nms=false", "F32");
      gfloat *canvas = modeltest_random_canvas (9);
      P3dcBox3d *boxes;
      guint count = detect (h, canvas, FALSE, &boxes), i;
      guint expected_count = pass == 1 ? 0 : nms ? MODELTEST_POST_MAX :
          MODELTEST_MAX_NUM;

      fail_unless_equals_int (count, expected_count);
      for (i = 0; i < count; i++) {
        const P3dcBox3d *b = &boxes[i];
        guint ix = i % MODELTEST_HEAD_GRID, iy = i / MODELTEST_HEAD_GRID;
        const gdouble expected[8] = {
          ((ix + 0.25) * 2) * 0.5 - 4, ((iy + 0.75) * 2) * 0.5 - 4, 0.5,
          exp (-2.0), exp (-1.5), exp (-1.0), atan2 (0.6f, 0.8f),
          1 / (1 + exp (-0.5))
        };
        const gfloat actual[8] = {
          b->x, b->y, b->z, b->dx, b->dy, b->dz, b->yaw, b->score
        };
        guint k;

        for (k = 0; k < 8; k++)
          fail_unless (fabs (actual[k] - expected[k]) <=
              2e-6 * (1 + fabs (expected[k])), "box %u field %u: %.9g, "
              "expected %.9g", i, k, actual[k], expected[k]);
        fail_unless_equals_int (b->label, 0);
      }
      g_free (boxes);
      g_free (canvas);
      gst_harness_teardown (h);
    }
    modeltest_remove (path);
    modeltest_model_free (m);
  }
}

GST_END_TEST;

/* ---- model-nms ------------------------------------------------------- */

static gboolean
box_in (const P3dcBox3d * box, const P3dcBox3d * boxes, guint count)
{
  guint i;

  for (i = 0; i < count; i++)
    if (memcmp (box, &boxes[i], sizeof (P3dcBox3d)) == 0)
      return TRUE;
  return FALSE;
}

GST_START_TEST (test_model_nms_keeps_a_subset)
{
  static const ModeltestOptions models[] = { {2, FALSE, 31}, {1, TRUE, 32} };
  guint i, frame, fewer = 0;

  for (i = 0; i < G_N_ELEMENTS (models); i++) {
    ModeltestModel *m = modeltest_model_new (&models[i]);
    gchar *path = modeltest_model_write (m, NULL);
    GstHarness *with = detect_harness (path, "cpu", "model-nms=true", "F32");
    GstHarness *without = detect_harness (path, "cpu", "model-nms=false",
        "F32");

    for (frame = 0; frame < 4; frame++) {
      gfloat *canvas = modeltest_random_canvas (300 + frame);
      P3dcBox3d *kept, *all;
      guint n_kept = detect (with, canvas, FALSE, &kept), k;
      guint n_all = detect (without, canvas, FALSE, &all);

      fail_unless (n_all >= n_kept, "model %u frame %u: %u boxes without "
          "the NMS, %u with it", i, frame, n_all, n_kept);
      for (k = 0; k < n_kept; k++)
        fail_unless (box_in (&kept[k], all, n_all), "model %u frame %u: "
            "kept box %u is not a decoded box", i, frame, k);
      fewer += n_kept < n_all;
      GST_INFO ("model %u frame %u: %u boxes, %u after the NMS", i, frame,
          n_all, n_kept);
      g_free (kept);
      g_free (all);
      g_free (canvas);
    }
    gst_harness_teardown (with);
    gst_harness_teardown (without);
    modeltest_remove (path);
    modeltest_model_free (m);
  }
  /* the NMS suppressed something somewhere */
  fail_unless (fewer > 0);
}

GST_END_TEST;

/* ---- properties ------------------------------------------------------ */

static gchar *
precision_nick (GstElement * e)
{
  GParamSpec *spec = g_object_class_find_property (G_OBJECT_GET_CLASS (e),
      "precision");
  GEnumClass *klass;
  GEnumValue *value;
  gint precision = -1;
  gchar *nick;

  fail_unless (spec != NULL && G_IS_PARAM_SPEC_ENUM (spec));
  g_object_get (e, "precision", &precision, NULL);
  klass = g_type_class_ref (spec->value_type);
  value = g_enum_get_value (klass, precision);
  fail_unless (value != NULL);
  nick = g_strdup (value->value_nick);
  g_type_class_unref (klass);
  return nick;
}

GST_START_TEST (test_precision_property)
{
  GstElement *e = gst_element_factory_make ("bevdetect", NULL);
  gchar *nick;
  gboolean model_nms = FALSE;

  fail_unless (e != NULL);
  nick = precision_nick (e);
  fail_unless_equals_string (nick, "f16");
  g_free (nick);
  gst_util_set_object_arg (G_OBJECT (e), "precision", "f32");
  nick = precision_nick (e);
  fail_unless_equals_string (nick, "f32");
  g_free (nick);
  g_object_get (e, "model-nms", &model_nms, NULL);
  fail_unless (model_nms);
  gst_object_unref (e);
}

GST_END_TEST;

/* ---- bad weights and mismatched caps --------------------------------- */

GST_START_TEST (test_bad_weights)
{
  modeltest_check_bad_weights ("bevdetect", __i__);
}

GST_END_TEST;

typedef struct
{
  const gchar *caps;
  const gchar *words[3];
} CapsMismatch;

static const CapsMismatch caps_mismatches[] = {
  {"application/x-bev-features, format=F32, channels=(int)4, "
        "width=(int)16, height=(int)16", {"channels=4", "channels=8",
          NULL}},
  {"application/x-bev-features, format=F32, channels=(int)8, "
        "width=(int)12, height=(int)16", {"width=12", "width=16", NULL}},
  {"application/x-bev-features, format=F16, channels=(int)8, "
        "width=(int)16, height=(int)32", {"height=32", "height=16", NULL}},
  {"application/x-bev-features, format=F32, channels=(int)8, "
        "width=(int)16, height=(int)16, layout=xy", {"layout=xy",
          "layout=yx", NULL}},
};

GST_START_TEST (test_caps_mismatch)
{
  const CapsMismatch *mismatch = &caps_mismatches[__i__];
  const ModeltestOptions options = { 1, FALSE, 5 };
  ModeltestModel *m = modeltest_model_new (&options);
  gchar *path = modeltest_model_write (m, NULL);
  gchar *launch = g_strdup_printf ("bevdetect backend=cpu weights=%s", path);
  gchar *text = elemtest_expect_caps_refused (launch, mismatch->caps,
      "application/x-boxes3d", GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
      mismatch->words);

  GST_INFO ("%s", text);
  g_free (text);
  g_free (launch);
  modeltest_remove (path);
  modeltest_model_free (m);
}

GST_END_TEST;

/* ---- backends ---------------------------------------------------------- */

GST_START_TEST (test_backend_auto)
{
  const ModeltestOptions options = { 2, FALSE, 41 };
  ModeltestModel *m = modeltest_model_new (&options);
  gchar *path = modeltest_model_write (m, NULL);
  /* F32 on the device, so that auto's boxes equal the reference's
   * wherever auto picks the GPU (up to float rounding there) */
  GstHarness *cpu = detect_harness (path, "cpu", "", "F32");
  GstHarness *automatic = detect_harness (path, "auto", "precision=f32",
      "F32");
  GstElement *e = gst_harness_find_element (automatic, "bevdetect");
  gfloat *canvas = modeltest_random_canvas (42);
  P3dcBox3d *expected, *actual;
  guint n_expected, n_actual;
  gint active = -1;

  g_object_get (e, "active-backend", &active, NULL);
  n_expected = detect (cpu, canvas, FALSE, &expected);
  n_actual = detect (automatic, canvas, FALSE, &actual);
  if (p3dc_cuda_device_count () == 0) {
    fail_unless_equals_int (active, P3D_BACKEND_CPU);
    assert_same_boxes (actual, n_actual, expected, n_expected, "auto");
  } else {
    /* network_cuda compares the paths box by box */
    fail_unless_equals_int (active, P3D_BACKEND_CUDA);
  }
  g_free (expected);
  g_free (actual);
  g_free (canvas);
  gst_object_unref (e);
  gst_harness_teardown (cpu);
  gst_harness_teardown (automatic);
  modeltest_remove (path);
  modeltest_model_free (m);
}

GST_END_TEST;

/* ---- a camera model: BEVDet's BEV encoder and head -------------------- */

/* bevdetect on a tiny BEVDet model (ResNetForBEVDet, FPN_LSS, a CenterHead
 * of two tasks with vel, Scale-NMS) fed what bevpool outputs on its grid,
 * F32 and F16: the boxes and velocities the model layer's reference
 * makes, bit for bit, and the velocity tensor left out when downstream
 * asks for the records alone. */
GST_START_TEST (test_camera_model)
{
  P3dTestBevDetArch arch;
  gchar *path;
  guint half, velocity, frame, total = 0;

  p3d_test_bevdet_arch_init (&arch);
  path = modeltest_bevdet_write (&arch, 91);
  for (half = 0; half < 2; half++)
    for (velocity = 0; velocity < 2; velocity++) {
      gchar *caps = modeltest_bevdet_caps (&arch, half ? "F16" : "F32");
      gchar *launch = g_strdup_printf ("bevdetect backend=cpu weights=%s",
          path);
      GstHarness *h = gst_harness_new_parse (launch);

      gst_harness_set_src_caps_str (h, caps);
      gst_harness_set_sink_caps_str (h, velocity ? "application/x-boxes3d" :
          "application/x-boxes3d, velocity=false");
      for (frame = 0; frame < 2; frame++) {
        gfloat *canvas = modeltest_bevdet_canvas (&arch, 40 + frame);
        P3dcBox3d *actual, *expected;
        gfloat *actual_velocity, *expected_velocity;
        guint actual_count, expected_count, capacity;
        gchar *what = g_strdup_printf ("camera model, %s input, %s, frame "
            "%u", half ? "F16" : "F32", velocity ? "velocity" :
            "records alone", frame);
        GstBuffer *out;

        fail_unless_equals_int (gst_harness_push (h,
                modeltest_bevdet_buffer (&arch, canvas, half)), GST_FLOW_OK);
        out = gst_harness_pull (h);
        actual_count = modeltest_read_boxes_velocity (out, &actual,
            &actual_velocity);
        gst_buffer_unref (out);
        expected_count = modeltest_bevdet_reference (path, TRUE, canvas,
            &expected, &expected_velocity, &capacity);
        assert_same_boxes (actual, actual_count, expected, expected_count,
            what);
        if (velocity) {
          fail_unless (actual_velocity != NULL, "%s: no velocity", what);
          elemtest_assert_bytes (actual_velocity, expected_velocity,
              capacity * 8, what);
        } else {
          fail_unless (actual_velocity == NULL, "%s: a velocity", what);
        }
        total += actual_count;
        g_free (actual);
        g_free (expected);
        g_free (actual_velocity);
        g_free (expected_velocity);
        g_free (canvas);
        g_free (what);
      }
      gst_harness_teardown (h);
      g_free (launch);
      g_free (caps);
    }
  fail_unless (total > 0);
  modeltest_remove (path);
}

GST_END_TEST;

/* A head without vel: the output has no velocity, and a downstream that
 * wants one is refused with a negotiation error. */
GST_START_TEST (test_camera_model_without_velocity)
{
  P3dTestBevDetArch arch;
  gchar *path, *caps, *launch, *message;
  GstHarness *h;
  gfloat *canvas;
  GstBuffer *out;
  GstCaps *current;
  gboolean velocity = TRUE;

  p3d_test_bevdet_arch_init (&arch);
  arch.head.vel = FALSE;
  path = modeltest_bevdet_write (&arch, 92);
  caps = modeltest_bevdet_caps (&arch, "F32");
  launch = g_strdup_printf ("bevdetect backend=cpu weights=%s", path);
  h = gst_harness_new_parse (launch);
  gst_harness_set_src_caps_str (h, caps);
  gst_harness_set_sink_caps_str (h, "application/x-boxes3d");
  canvas = modeltest_bevdet_canvas (&arch, 3);
  fail_unless_equals_int (gst_harness_push (h, modeltest_bevdet_buffer (&arch,
              canvas, FALSE)), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless_equals_int (gst_buffer_n_memory (out), 2);
  gst_buffer_unref (out);
  current = gst_pad_get_current_caps (h->sinkpad);
  fail_unless (gst_structure_get_boolean (gst_caps_get_structure (current, 0),
          "velocity", &velocity));
  fail_if (velocity);
  gst_caps_unref (current);
  gst_harness_teardown (h);
  g_free (launch);

  launch = g_strdup_printf ("bevdetect backend=cpu weights=%s", path);
  message = elemtest_expect_caps_refused (launch, caps,
      "application/x-boxes3d, velocity=true", GST_CORE_ERROR,
      GST_CORE_ERROR_NEGOTIATION, NULL);
  g_free (message);
  g_free (launch);
  g_free (canvas);
  g_free (caps);
  modeltest_remove (path);
}

GST_END_TEST;

static Suite *
bevdetect_suite (void)
{
  Suite *s = suite_create ("bevdetect");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_caps_from_model);
  tcase_add_loop_test (tc, test_reference_boxes, 0,
      G_N_ELEMENTS (reference_cases));
  tcase_add_test (tc, test_hand_worked_head);
  tcase_add_test (tc, test_model_nms_keeps_a_subset);
  tcase_add_test (tc, test_precision_property);
  tcase_add_loop_test (tc, test_bad_weights, 0, modeltest_n_bad_weights ());
  tcase_add_loop_test (tc, test_caps_mismatch, 0,
      G_N_ELEMENTS (caps_mismatches));
  tcase_add_test (tc, test_backend_auto);
  tcase_add_test (tc, test_camera_model);
  tcase_add_test (tc, test_camera_model_without_velocity);
  return s;
}

P3D_CHECK_MAIN (bevdetect);
