/* pillarencode on the reference path: the caps come from the model
 * (canvas channels and size, the feature set on the sink side); a
 * hand-worked pillar through hand-set weights; random pillars through a
 * random model against a loop in this test that folds the BatchNorm
 * itself, for F32 and F16 features (the canvas in the same format); every bad weights file
 * refused when the element starts; the caps that disagree with the model
 * (feature set, grid, voxel size, range) refused with both values named;
 * backend=auto equal to backend=cpu. */
#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "p3dtest-elem.h"
#include "half.h"
#include "p3dtest-model.h"
#include "p3dperception.h"
#include "p3dtest.h"
#include "runtime.h"

#define CELLS (MODELTEST_GRID * MODELTEST_GRID)
#define CANVAS_VALUES (MODELTEST_PFN_OUT * CELLS)
#define SLOT_VALUES (MODELTEST_MAX_POINTS * MODELTEST_PFN_IN)

/* One frame of x-pillar-features, as float (what an F16 frame holds is
 * these values rounded, and the expectation uses the rounded ones). */
typedef struct
{
  gfloat features[MODELTEST_MAX_VOXELS * SLOT_VALUES];
  gint32 coords[MODELTEST_MAX_VOXELS * 4];
  guint32 count;
} Frame;

static gchar *
pillars_caps (const gchar * format, const gchar * features,
    const gchar * grid_fields)
{
  return g_strdup_printf ("application/x-pillar-features, format=%s, "
      "features=%s, max-voxels=(int)%d, max-points=(int)%d, %s", format,
      features, MODELTEST_MAX_VOXELS, MODELTEST_MAX_POINTS, grid_fields);
}

static GstHarness *
encode_harness (const gchar * weights, const gchar * backend,
    const gchar * in_format, const gchar * out_format)
{
  gchar *launch = g_strdup_printf ("pillarencode backend=%s weights=%s",
      backend, weights);
  gchar *caps = pillars_caps (in_format, "mmdet3d-11", MODELTEST_GRID_FIELDS);
  gchar *out_caps = g_strdup_printf ("application/x-bev-features, format=%s",
      out_format);
  GstHarness *h = gst_harness_new_parse (launch);

  gst_harness_set_src_caps_str (h, caps);
  gst_harness_set_sink_caps_str (h, out_caps);
  g_free (out_caps);
  g_free (caps);
  g_free (launch);
  return h;
}

/* The frame's tensors; F16 features rounded in @frame itself. */
static GstBuffer *
frame_buffer (Frame * frame, gboolean half)
{
  guint16 halves[G_N_ELEMENTS (frame->features)];
  gconstpointer data[3];
  gsize sizes[3];
  guint i;

  if (half) {
    for (i = 0; i < G_N_ELEMENTS (frame->features); i++) {
      halves[i] = p3dc_float_to_half (frame->features[i]);
      frame->features[i] = p3dc_half_to_float (halves[i]);
    }
  }
  data[0] = half ? (gconstpointer) halves : (gconstpointer) frame->features;
  sizes[0] = G_N_ELEMENTS (frame->features) * (half ? 2 : 4);
  data[1] = frame->coords;
  sizes[1] = sizeof (frame->coords);
  data[2] = &frame->count;
  sizes[2] = 4;
  return elemtest_tensors_buffer (3, data, sizes);
}

/* The canvas of @buffer as float. */
static gfloat *
read_canvas (GstBuffer * buffer, gboolean half)
{
  GstMemory *mem = gst_buffer_peek_memory (buffer, 0);
  gfloat *canvas = g_new (gfloat, CANVAS_VALUES);
  GstMapInfo info;
  guint i;

  fail_unless_equals_int (gst_buffer_n_memory (buffer), 1);
  fail_unless (gst_memory_map (mem, &info, GST_MAP_READ));
  fail_unless_equals_int (info.size, CANVAS_VALUES * (half ? 2 : 4));
  for (i = 0; i < CANVAS_VALUES; i++)
    canvas[i] = half ? p3dc_half_to_float (((const guint16 *) info.data)[i]) :
        ((const gfloat *) info.data)[i];
  gst_memory_unmap (mem, &info);
  return canvas;
}

static GstCaps *
current_sink_caps (GstHarness * h)
{
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);

  fail_unless (caps != NULL);
  return caps;
}

/* ---- caps ----------------------------------------------------------- */

GST_START_TEST (test_caps_from_model)
{
  const ModeltestOptions options = { 2, FALSE, 3 };
  ModeltestModel *m = modeltest_model_new (&options);
  gchar *path = modeltest_model_write (m, NULL);
  const gchar *formats[2] = { "F32", "F16" };
  guint f;

  for (f = 0; f < 2; f++) {
    GstHarness *h = encode_harness (path, "cpu", formats[f], formats[f]);
    GstElement *e = gst_harness_find_element (h, "pillarencode");
    GstPad *sinkpad = gst_element_get_static_pad (e, "sink");
    GstPad *srcpad = gst_element_get_static_pad (e, "src");
    GstCaps *caps;
    GstStructure *s;
    Frame *frame = g_new0 (Frame, 1);
    GstBuffer *out;
    gint value;

    /* before any caps: the sink side asks for the model's feature set,
     * the source side offers the model's canvas */
    caps = gst_pad_query_caps (sinkpad, NULL);
    s = gst_caps_get_structure (caps, 0);
    fail_unless_equals_string (gst_structure_get_string (s, "features"),
        "mmdet3d-11");
    gst_caps_unref (caps);
    caps = gst_pad_peer_query_caps (h->sinkpad, NULL);
    fail_unless (!gst_caps_is_empty (caps));
    s = gst_caps_get_structure (caps, 0);
    fail_unless (gst_structure_get_int (s, "channels", &value));
    fail_unless_equals_int (value, MODELTEST_PFN_OUT);
    gst_caps_unref (caps);

    fail_unless_equals_int (gst_harness_push (h, frame_buffer (frame, f)),
        GST_FLOW_OK);
    out = gst_harness_pull (h);
    caps = current_sink_caps (h);
    s = gst_caps_get_structure (caps, 0);
    fail_unless (gst_structure_has_name (s, "application/x-bev-features"));
    fail_unless_equals_string (gst_structure_get_string (s, "format"),
        formats[f]);
    fail_unless (gst_structure_get_int (s, "channels", &value));
    fail_unless_equals_int (value, MODELTEST_PFN_OUT);
    fail_unless (gst_structure_get_int (s, "width", &value));
    fail_unless_equals_int (value, MODELTEST_GRID);
    fail_unless (gst_structure_get_int (s, "height", &value));
    fail_unless_equals_int (value, MODELTEST_GRID);
    gst_caps_unref (caps);
    gst_buffer_unref (out);
    g_free (frame);
    gst_object_unref (sinkpad);
    gst_object_unref (srcpad);
    gst_object_unref (e);
    gst_harness_teardown (h);
  }
  modeltest_remove (path);
  modeltest_model_free (m);
}

GST_END_TEST;

/* ---- a hand-worked pillar ------------------------------------------- */

/* The PFN made by hand: weight[c][c] = 0.5 (channel 7: -0.5), every other
 * weight 0; BatchNorm gamma 1, mean 0, var 1 - eps (the fold's scale is
 * exactly 1), beta -1 (channel 7: +1). A pillar of two points, features
 * A[i] = i and B[i] = 10 - i, in slots 0 and 1 of 4; slots 2 and 3 are
 * padding (zeros). Per channel c the slots give 0.5 c + beta,
 * 0.5 (10 - c) + beta and beta (padding):
 *   c:        0    1    2    3    4    5    6    7 (weight -0.5, beta 1)
 *   A:       -1 -0.5    0  0.5    1  1.5    2   -2.5
 *   B:        4  3.5    3  2.5    2  1.5    1   -0.5
 *   padding: -1   -1   -1   -1   -1   -1   -1    1
 *   max after ReLU:
 *             4  3.5    3  2.5    2  1.5    2    1   (channel 7: the
 * padded slots win, as in the PyTorch model). */
static const gfloat hand_pillar[MODELTEST_PFN_OUT] =
    { 4, 3.5f, 3, 2.5f, 2, 1.5f, 2, 1 };

#define HAND_X 3
#define HAND_Y 5

static void
set_hand_pfn (ModeltestModel * m)
{
  ModeltestTensor *w = modeltest_model_get (m,
      "pts_voxel_encoder.pfn_layers.0.linear.weight");
  const gchar *prefix = "pts_voxel_encoder.pfn_layers.0.norm";
  gchar *name;
  guint c;

  memset (w->values, 0, w->count * sizeof (gfloat));
  for (c = 0; c < MODELTEST_PFN_OUT; c++) {
    w->values[c * MODELTEST_PFN_IN + c] = c == 7 ? -0.5f : 0.5f;
#define SET(suffix, value) \
    name = g_strdup_printf ("%s.%s", prefix, suffix); \
    modeltest_model_get (m, name)->values[c] = (value); \
    g_free (name)
    SET ("weight", 1.0f);
    SET ("bias", c == 7 ? 1.0f : -1.0f);
    SET ("running_mean", 0.0f);
    SET ("running_var", (gfloat) (1.0 - MODELTEST_PFN_EPS));
#undef SET
  }
}

GST_START_TEST (test_hand_worked_pillar)
{
  const ModeltestOptions options = { 1, FALSE, 4 };
  ModeltestModel *m = modeltest_model_new (&options);
  gchar *path;
  guint f, i, c;

  set_hand_pfn (m);
  path = modeltest_model_write (m, NULL);
  /* the canvas keeps the precision of the features */
  for (f = 0; f < 2; f++) {
    gboolean half_in = f, half_out = f;
    GstHarness *h = encode_harness (path, "cpu", half_in ? "F16" : "F32",
        half_out ? "F16" : "F32");
    Frame *frame = g_new0 (Frame, 1);
    GstBuffer *out;
    gfloat *canvas;

    /* the pillar is the frame's second; the first lies at (0, 0) with
     * all-zero points, so its cell holds ReLU (beta) */
    frame->count = 2;
    frame->coords[4 + 2] = HAND_Y;
    frame->coords[4 + 3] = HAND_X;
    for (i = 0; i < MODELTEST_PFN_IN; i++) {
      frame->features[SLOT_VALUES + i] = (gfloat) i;
      frame->features[SLOT_VALUES + MODELTEST_PFN_IN + i] = (gfloat) (10 - i);
    }
    fail_unless_equals_int (gst_harness_push (h, frame_buffer (frame,
                half_in)), GST_FLOW_OK);
    out = gst_harness_pull (h);
    canvas = read_canvas (out, half_out);
    for (c = 0; c < MODELTEST_PFN_OUT; c++)
      for (i = 0; i < CELLS; i++) {
        gfloat expected = 0.0f;

        if (i == HAND_Y * MODELTEST_GRID + HAND_X)
          expected = hand_pillar[c];
        else if (i == 0)
          expected = c == 7 ? 1.0f : 0.0f;
        fail_unless (canvas[c * CELLS + i] == expected,
            "%s in, %s out: channel %u cell %u is %g, not %g",
            half_in ? "F16" : "F32", half_out ? "F16" : "F32", c, i,
            canvas[c * CELLS + i], expected);
      }
    g_free (canvas);
    gst_buffer_unref (out);
    g_free (frame);
    gst_harness_teardown (h);
  }
  modeltest_remove (path);
  modeltest_model_free (m);
}

GST_END_TEST;

/* ---- random pillars -------------------------------------------------- */

/* Random pillars in distinct cells, each with 1 to max-points points of
 * values like pillarfeat's (metres and offsets), unused slots zero. */
static void
random_frame (Frame * frame, guint64 seed, guint count)
{
  P3dTestRng rng;
  guint cells[CELLS], v, s, i;

  memset (frame, 0, sizeof (*frame));
  p3d_test_rng_init (&rng, seed);
  for (i = 0; i < CELLS; i++)
    cells[i] = i;
  for (i = 0; i < count; i++) {
    guint j = i + p3d_test_rng_below (&rng, CELLS - i), t = cells[i];

    cells[i] = cells[j];
    cells[j] = t;
  }
  frame->count = count;
  for (v = 0; v < count; v++) {
    guint points = 1 + p3d_test_rng_below (&rng, MODELTEST_MAX_POINTS);

    frame->coords[v * 4 + 2] = cells[v] / MODELTEST_GRID;
    frame->coords[v * 4 + 3] = cells[v] % MODELTEST_GRID;
    for (s = 0; s < points; s++)
      for (i = 0; i < MODELTEST_PFN_IN; i++)
        frame->features[v * SLOT_VALUES + s * MODELTEST_PFN_IN + i] =
            p3d_test_rng_uniform (&rng, -4.0f, 4.0f);
  }
}

/* The canvas the model makes of @frame, in double: BatchNorm applied as
 * PyTorch applies it, after the linear layer, then ReLU and the max over
 * every slot, padded ones included. */
static gdouble *
expected_canvas (ModeltestModel * m, const Frame * frame)
{
  const gfloat *w = modeltest_model_get (m,
      "pts_voxel_encoder.pfn_layers.0.linear.weight")->values;
  const gfloat *gamma = modeltest_model_get (m,
      "pts_voxel_encoder.pfn_layers.0.norm.weight")->values;
  const gfloat *beta = modeltest_model_get (m,
      "pts_voxel_encoder.pfn_layers.0.norm.bias")->values;
  const gfloat *mean = modeltest_model_get (m,
      "pts_voxel_encoder.pfn_layers.0.norm.running_mean")->values;
  const gfloat *var = modeltest_model_get (m,
      "pts_voxel_encoder.pfn_layers.0.norm.running_var")->values;
  gdouble *canvas = g_new0 (gdouble, CANVAS_VALUES);
  guint v, s, c, i;

  for (v = 0; v < frame->count; v++) {
    guint cell = frame->coords[v * 4 + 2] * MODELTEST_GRID +
        frame->coords[v * 4 + 3];

    for (c = 0; c < MODELTEST_PFN_OUT; c++) {
      gdouble best = 0.0;       /* ReLU's floor */

      for (s = 0; s < MODELTEST_MAX_POINTS; s++) {
        const gfloat *x = &frame->features[v * SLOT_VALUES +
            s * MODELTEST_PFN_IN];
        gdouble linear = 0.0, y;

        for (i = 0; i < MODELTEST_PFN_IN; i++)
          linear += (gdouble) w[c * MODELTEST_PFN_IN + i] * x[i];
        y = (linear - mean[c]) / sqrt (var[c] + MODELTEST_PFN_EPS) *
            gamma[c] + beta[c];
        best = MAX (best, y);
      }
      canvas[c * CELLS + cell] = best;
    }
  }
  return canvas;
}

GST_START_TEST (test_random_pillars)
{
  const ModeltestOptions options = { 2, FALSE, 11 };
  ModeltestModel *m = modeltest_model_new (&options);
  gchar *path = modeltest_model_write (m, NULL);
  static const guint counts[] = { 40, 3, 0, MODELTEST_MAX_VOXELS, 17 };
  gdouble worst[2] = { 0, 0 };
  guint f, k, i, nonzero = 0;

  /* the canvas keeps the precision of the features */
  for (f = 0; f < 2; f++) {
    gboolean half_in = f, half_out = f;
    GstHarness *h = encode_harness (path, "cpu", half_in ? "F16" : "F32",
        half_out ? "F16" : "F32");
    Frame *frame = g_new (Frame, 1);

    /* frames through one pool, the count up and down, to empty and full */
    for (k = 0; k < G_N_ELEMENTS (counts); k++) {
      GstBuffer *out;
      gfloat *canvas;
      gdouble *expected;

      random_frame (frame, 100 + k, counts[k]);
      fail_unless_equals_int (gst_harness_push (h, frame_buffer (frame,
                  half_in)), GST_FLOW_OK);
      out = gst_harness_pull (h);
      canvas = read_canvas (out, half_out);
      expected = expected_canvas (m, frame);
      for (i = 0; i < CANVAS_VALUES; i++) {
        gdouble e = expected[i], d = fabs (canvas[i] - e);
        /* float32 sums of 11 products and the float fold; an F16 canvas
         * adds its rounding, 2^-11 relative */
        gdouble bound = (half_out ? 4.9e-4 * fabs (e) : 0) +
            1e-5 * (1 + fabs (e));

        worst[half_out] = MAX (worst[half_out], d / (1 + fabs (e)));
        fail_unless (d <= bound, "%s in, %s out, frame %u: value %u (channel "
            "%u cell %u) is %.9g, expected %.9g", half_in ? "F16" : "F32",
            half_out ? "F16" : "F32", k, i, i / CELLS, i % CELLS, canvas[i], e);
        nonzero += canvas[i] != 0.0f;
      }
      g_free (expected);
      g_free (canvas);
      gst_buffer_unref (out);
    }
    g_free (frame);
    gst_harness_teardown (h);
  }
  /* the comparison saw real values, not an empty canvas */
  fail_unless (nonzero > 1000, "only %u nonzero values", nonzero);
  GST_INFO ("worst difference relative to 1 + |expected|: F32 canvas %g, "
      "F16 canvas %g", worst[0], worst[1]);
  modeltest_remove (path);
  modeltest_model_free (m);
}

GST_END_TEST;

/* ---- bad weights and mismatched caps --------------------------------- */

GST_START_TEST (test_bad_weights)
{
  modeltest_check_bad_weights ("pillarencode", __i__);
}

GST_END_TEST;

/* Pushes a frame of @caps into a pillarencode of the model, which must
 * refuse the caps with a negotiation error that contains each string of
 * @words (NULL-terminated). */
static void
check_caps_refused (const gchar * caps, const gchar * const *words)
{
  const ModeltestOptions options = { 1, FALSE, 5 };
  ModeltestModel *m = modeltest_model_new (&options);
  gchar *path = modeltest_model_write (m, NULL);
  gchar *launch = g_strdup_printf ("pillarencode backend=cpu weights=%s",
      path);
  gchar *text = elemtest_expect_caps_refused (launch, caps,
      "application/x-bev-features", GST_CORE_ERROR,
      GST_CORE_ERROR_NEGOTIATION, words);

  GST_INFO ("%s", text);
  g_free (text);
  g_free (launch);
  modeltest_remove (path);
  modeltest_model_free (m);
}

GST_START_TEST (test_feature_set_mismatch)
{
  static const gchar *const ten[] = {
    "features=pointpillars-10 (10 channels)",
    "takes features=mmdet3d-11 (11 channels)",
    "set pillarfeat features=mmdet3d-11", NULL
  };
  static const gchar *const nine[] = { "features=mmdet3d-9 (9 channels)",
    "takes features=mmdet3d-11 (11 channels)", NULL
  };
  gchar *caps = pillars_caps ("F32", "pointpillars-10", MODELTEST_GRID_FIELDS);

  check_caps_refused (caps, ten);
  g_free (caps);
  caps = pillars_caps ("F16", "mmdet3d-9", MODELTEST_GRID_FIELDS);
  check_caps_refused (caps, nine);
  g_free (caps);
}

GST_END_TEST;

GST_START_TEST (test_grid_mismatch)
{
  /* 1 m cells: an 8 x 8 grid over the model's range */
  static const gchar *const coarse[] = { "voxel-size=<1,1,8>",
    "a 8 x 8 x 1 grid", "trained on voxel-size=<0.5,0.5,8>",
    "a 16 x 16 x 1 grid", NULL
  };
  /* the model's cells over a shifted range */
  static const gchar *const shifted[] = { "range=<-3,-4,-5,5,4,3>",
    "trained on range=<-4,-4,-5,4,4,3>",
    "set voxelize range=\"<-4,-4,-5,4,4,3>\"", NULL
  };
  /* the model's grid size, other cells */
  static const gchar *const cells[] = { "voxel-size=<0.25,0.25,8>",
    "voxel-size=<0.5,0.5,8>", NULL
  };
  gchar *caps;

  caps = pillars_caps ("F32", "mmdet3d-11", "grid=(int)<8,8,1>, "
      "voxel-size=(double)<1.0,1.0,8.0>, "
      "range=(double)<-4.0,-4.0,-5.0,4.0,4.0,3.0>");
  check_caps_refused (caps, coarse);
  g_free (caps);
  caps = pillars_caps ("F32", "mmdet3d-11", "grid=(int)<16,16,1>, "
      "voxel-size=(double)<0.5,0.5,8.0>, "
      "range=(double)<-3.0,-4.0,-5.0,5.0,4.0,3.0>");
  check_caps_refused (caps, shifted);
  g_free (caps);
  caps = pillars_caps ("F32", "mmdet3d-11", "grid=(int)<16,16,1>, "
      "voxel-size=(double)<0.25,0.25,8.0>, "
      "range=(double)<-2.0,-2.0,-5.0,2.0,2.0,3.0>");
  check_caps_refused (caps, cells);
  g_free (caps);
}

GST_END_TEST;

/* ---- backends ---------------------------------------------------------- */

/* backend=auto: the CUDA path where a device is, the reference here;
 * either way the canvas is the reference's, bit for bit. */
GST_START_TEST (test_backend_auto)
{
  const ModeltestOptions options = { 1, TRUE, 6 };
  ModeltestModel *m = modeltest_model_new (&options);
  gchar *path = modeltest_model_write (m, NULL);
  GstHarness *cpu = encode_harness (path, "cpu", "F32", "F32");
  GstHarness *automatic = encode_harness (path, "auto", "F32", "F32");
  GstElement *e = gst_harness_find_element (automatic, "pillarencode");
  Frame *frame = g_new (Frame, 1);
  GstBuffer *expected, *actual;
  GstMapInfo info;
  gint active = -1;

  g_object_get (e, "active-backend", &active, NULL);
  fail_unless_equals_int (active, p3dc_cuda_device_count () > 0 ?
      P3D_BACKEND_CUDA : P3D_BACKEND_CPU);
  random_frame (frame, 77, 30);
  fail_unless_equals_int (gst_harness_push (cpu, frame_buffer (frame,
              FALSE)), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_push (automatic, frame_buffer (frame,
              FALSE)), GST_FLOW_OK);
  expected = gst_harness_pull (cpu);
  actual = gst_harness_pull (automatic);
  fail_unless (gst_buffer_map (expected, &info, GST_MAP_READ));
  elemtest_assert_tensor (actual, 0, info.data, info.size, "canvas");
  gst_buffer_unmap (expected, &info);
  gst_buffer_unref (expected);
  gst_buffer_unref (actual);
  g_free (frame);
  gst_object_unref (e);
  gst_harness_teardown (cpu);
  gst_harness_teardown (automatic);
  modeltest_remove (path);
  modeltest_model_free (m);
}

GST_END_TEST;

static Suite *
pillarencode_suite (void)
{
  Suite *s = suite_create ("pillarencode");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_caps_from_model);
  tcase_add_test (tc, test_hand_worked_pillar);
  tcase_add_test (tc, test_random_pillars);
  tcase_add_loop_test (tc, test_bad_weights, 0, modeltest_n_bad_weights ());
  tcase_add_test (tc, test_feature_set_mismatch);
  tcase_add_test (tc, test_grid_mismatch);
  tcase_add_test (tc, test_backend_auto);
  return s;
}

P3D_CHECK_MAIN (pillarencode);
