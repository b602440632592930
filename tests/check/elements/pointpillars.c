/* PointPillars models (an anchor head, OpenPCDet's and mmdetection3d's
 * conventions: p3dtest-anchormodel.h) through pillarencode ! bevdetect on
 * the reference path: the boxes equal, within 1e-4 of 1 + |value|, every
 * box matched, those of the brute force (the pillar net in float64 from
 * the raw tensors, the network evaluated by the float64 oracle, the head
 * decoded by the anchor decode's reference with parameters written out
 * here), with and without the model's NMS, from F32 and F16 pillar
 * features (an F16 canvas: within 2e-3), frames of every size through one pool (an empty one: the
 * head's biases alone); bevdetect's caps (max-boxes the model's capacity);
 * model-nms=false keeping every box the NMS keeps, and more; a bad
 * PointPillars file refused when the elements start, naming the file and
 * the key; pillar features of another set refused, naming both. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "half.h"
#include "p3dtest-anchormodel.h"
#include "p3dtest-elem.h"
#include "p3dtest-model.h"
#include "p3dtest.h"

static const AnchorModelOptions models[] = {
  {FALSE, FALSE, FALSE, FALSE, 21},
  {FALSE, TRUE, FALSE, FALSE, 22},
  {TRUE, FALSE, FALSE, FALSE, 23},
  {TRUE, FALSE, TRUE, TRUE, 24},
};

static gchar *
pillars_caps (const gchar * format, const gchar * features)
{
  return g_strdup_printf ("application/x-pillar-features, format=%s, "
      "features=%s, max-voxels=(int)%d, max-points=(int)%d, %s", format,
      features, ANCHORMODEL_MAX_VOXELS, ANCHORMODEL_MAX_POINTS,
      ANCHORMODEL_GRID_FIELDS);
}

/* pillarencode ! bevdetect on the CPU (the canvas in the features'
 * format). */
static GstHarness *
chain_harness (const gchar * path, gboolean nms, gboolean half)
{
  gchar *launch = g_strdup_printf ("pillarencode backend=cpu weights=%s ! "
      "bevdetect backend=cpu weights=%s model-nms=%s", path, path,
      nms ? "true" : "false");
  gchar *caps = pillars_caps (half ? "F16" : "F32", "pointpillars-10");
  GstHarness *h = gst_harness_new_parse (launch);

  gst_harness_set_src_caps_str (h, caps);
  gst_harness_set_sink_caps_str (h, "application/x-boxes3d");
  g_free (caps);
  g_free (launch);
  return h;
}

/* The frame as a buffer (F16: the features rounded, in place, so that the
 * brute force reads what the element reads). */
static GstBuffer *
pillars_buffer (AnchorModelPillars * p, gboolean half)
{
  const gsize n = G_N_ELEMENTS (p->features);
  guint16 *halves = g_new (guint16, n);
  gconstpointer data[3];
  gsize sizes[3], i;
  GstBuffer *buffer;

  for (i = 0; i < n; i++) {
    halves[i] = p3dc_float_to_half (p->features[i]);
    if (half)
      p->features[i] = p3dc_half_to_float (halves[i]);
  }
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

static guint
detect (GstHarness * h, AnchorModelPillars * p, gboolean half,
    P3dcBox3d ** boxes)
{
  GstBuffer *out;
  guint count;

  fail_unless_equals_int (gst_harness_push (h, pillars_buffer (p, half)),
      GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless (out != NULL);
  count = modeltest_read_boxes (out, boxes);
  gst_buffer_unref (out);
  return count;
}

/* ---- against the brute force ---------------------------------------- */

typedef struct
{
  guint model;
  gboolean nms;
  gboolean half;
} ChainCase;

static const ChainCase chain_cases[] = {
  {0, TRUE, FALSE}, {0, FALSE, FALSE}, {0, TRUE, TRUE},
  {1, TRUE, FALSE}, {1, FALSE, TRUE},
  {2, TRUE, FALSE}, {2, FALSE, FALSE}, {2, TRUE, TRUE},
  {3, TRUE, FALSE}, {3, FALSE, TRUE},
};

/* An F16 canvas value of the element and of the brute force can round
 * to neighbouring halves (the two differ by float rounding first): one
 * half ulp of a canvas value moves the head's outputs by about 1e-3. */
#define F16_TOLERANCE 2e-3

/* pillars per frame: the count up and down through one pool */
static const guint frame_pillars[] = { 40, 0, ANCHORMODEL_MAX_VOXELS, 7 };

GST_START_TEST (test_chain_against_brute_force)
{
  const ChainCase *cc = &chain_cases[__i__];
  AnchorModel *m = anchormodel_new (&models[cc->model]);
  gchar *path = anchormodel_write (m, NULL, NULL, FALSE, NULL);
  GstHarness *h = chain_harness (path, cc->nms, cc->half);
  guint frame, total = 0;
  gdouble worst = 0;

  for (frame = 0; frame < G_N_ELEMENTS (frame_pillars); frame++) {
    AnchorModelPillars pillars;
    P3dcBox3d *actual, *expected;
    guint n_actual, n_expected;
    gfloat *canvas;
    gchar *what = g_strdup_printf ("case %d (model %u, %s NMS, %s "
        "features), frame %u", __i__, cc->model, cc->nms ? "the model's" :
        "no", cc->half ? "F16" : "F32", frame);

    anchormodel_random_pillars (1000 + 10 * __i__ + frame,
        frame_pillars[frame], &pillars);
    n_actual = detect (h, &pillars, cc->half, &actual);
    canvas = anchormodel_oracle_canvas (m, &pillars);
    if (cc->half) {
      guint i;

      /* the canvas is F16 too; the network reads it rounded */
      for (i = 0; i < ANCHORMODEL_PFN_OUT * ANCHORMODEL_GRID *
          ANCHORMODEL_GRID; i++)
        canvas[i] = p3dc_half_to_float (p3dc_float_to_half (canvas[i]));
    }
    n_expected = anchormodel_oracle_boxes (m, cc->nms, canvas, &expected);
    worst = MAX (worst, anchormodel_match_boxes (actual, n_actual, expected,
            n_expected, cc->half ? F16_TOLERANCE : 1e-4, what));
    GST_INFO ("%s: %u boxes", what, n_actual);
    total += n_actual;
    g_free (what);
    g_free (canvas);
    g_free (actual);
    g_free (expected);
  }
  /* the random models detect something */
  fail_unless (total > 0);
  GST_INFO ("case %d: largest difference %g", __i__, worst);
  gst_harness_teardown (h);
  g_unlink (path);
  g_free (path);
  anchormodel_free (m);
}

GST_END_TEST;

/* ---- caps and model-nms --------------------------------------------- */

static gboolean
box_in (const P3dcBox3d * box, const P3dcBox3d * boxes, guint count)
{
  guint i;

  for (i = 0; i < count; i++)
    if (memcmp (box, &boxes[i], sizeof (P3dcBox3d)) == 0)
      return TRUE;
  return FALSE;
}

/* max-boxes is the model's capacity; without the model's NMS every box it
 * keeps is there, and more. */
GST_START_TEST (test_caps_and_model_nms)
{
  guint model, frame, nms, fewer = 0;

  for (model = 0; model < G_N_ELEMENTS (models); model++) {
    AnchorModel *m = anchormodel_new (&models[model]);
    gchar *path = anchormodel_write (m, NULL, NULL, FALSE, NULL);
    GstHarness *with = chain_harness (path, TRUE, FALSE);
    GstHarness *without = chain_harness (path, FALSE, FALSE);

    for (frame = 0; frame < 3; frame++) {
      AnchorModelPillars pillars;
      P3dcBox3d *kept, *all;
      guint n_kept, n_all, k;

      anchormodel_random_pillars (2000 + frame, 30 + 10 * frame, &pillars);
      n_kept = detect (with, &pillars, FALSE, &kept);
      n_all = detect (without, &pillars, FALSE, &all);
      fail_unless (n_all >= n_kept);
      for (k = 0; k < n_kept; k++)
        fail_unless (box_in (&kept[k], all, n_all), "model %u frame %u: "
            "kept box %u is not a decoded box", model, frame, k);
      fewer += n_kept < n_all;
      GST_INFO ("model %u frame %u: %u boxes, %u after the NMS", model,
          frame, n_all, n_kept);
      g_free (kept);
      g_free (all);
    }
    for (nms = 0; nms < 2; nms++) {
      GstCaps *caps =
          gst_pad_get_current_caps ((nms ? with : without)->sinkpad);
      gint value = 0;

      fail_unless (gst_structure_get_int (gst_caps_get_structure (caps, 0),
              "max-boxes", &value));
      fail_unless_equals_int (value, anchormodel_capacity (m, nms));
      gst_caps_unref (caps);
    }
    gst_harness_teardown (with);
    gst_harness_teardown (without);
    g_unlink (path);
    g_free (path);
    anchormodel_free (m);
  }
  /* the NMS suppressed something somewhere */
  fail_unless (fewer > 0);
}

GST_END_TEST;

/* ---- refusals --------------------------------------------------------- */

/* A PointPillars file that the model layer refuses stops both elements
 * when they start, the message naming the file and the key. */
GST_START_TEST (test_bad_file)
{
  static const gchar *const factories[] = { "pillarencode", "bevdetect" };
  AnchorModel *m = anchormodel_new (&models[0]);
  gchar *path = anchormodel_write (m, "\"nms\": \"rotated-mmcv\"",
      "\"nms\": \"nms_gpu\"", FALSE, NULL);
  guint i;

  for (i = 0; i < G_N_ELEMENTS (factories); i++) {
    GstElement *e = gst_element_factory_make (factories[i], NULL);
    gchar *text;

    gst_util_set_object_arg (G_OBJECT (e), "backend", "cpu");
    g_object_set (e, "weights", path, NULL);
    text = modeltest_expect_start_error (e, GST_STREAM_ERROR,
        GST_STREAM_ERROR_DECODE, path, "\"post.nms\"", NULL);
    GST_INFO ("%s: %s", factories[i], text);
    g_free (text);
    gst_object_unref (e);
  }
  g_unlink (path);
  g_free (path);
  anchormodel_free (m);
}

GST_END_TEST;

/* mmdetection3d's CenterPoint features for an OpenPCDet PointPillars
 * model: refused when pillarencode negotiates, naming both sets. */
GST_START_TEST (test_other_features)
{
  static const gchar *const words[] = {
    "mmdet3d-11", "pointpillars-10", NULL
  };
  AnchorModel *m = anchormodel_new (&models[0]);
  gchar *path = anchormodel_write (m, NULL, NULL, FALSE, NULL);
  gchar *launch = g_strdup_printf ("pillarencode backend=cpu weights=%s",
      path);
  gchar *caps = pillars_caps ("F32", "mmdet3d-11");
  gchar *text = elemtest_expect_caps_refused (launch, caps,
      "application/x-bev-features", GST_CORE_ERROR,
      GST_CORE_ERROR_NEGOTIATION, words);

  GST_INFO ("%s", text);
  g_free (text);
  g_free (caps);
  g_free (launch);
  g_unlink (path);
  g_free (path);
  anchormodel_free (m);
}

GST_END_TEST;

static Suite *
pointpillars_suite (void)
{
  Suite *s = suite_create ("pointpillars");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_loop_test (tc, test_chain_against_brute_force, 0,
      G_N_ELEMENTS (chain_cases));
  tcase_add_loop_test (tc, test_caps_and_model_nms, 0, G_N_ELEMENTS (models));
  tcase_add_test (tc, test_bad_file);
  tcase_add_test (tc, test_other_features);
  return s;
}

P3D_CHECK_MAIN (pointpillars);
