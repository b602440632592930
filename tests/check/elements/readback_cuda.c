/* The GPU filters' readback of a per-frame device record (P3dCudaFilter's
 * readback_size, readback() and p3d_cuda_filter_readback_slot()), on a GPU:
 * voxelize's statistics on the CUDA path, read back without waiting, are
 * the reference path's, frame by frame, in frame order and with each
 * frame's timestamp, over more frames than the ring holds, whether the
 * output stays on the device or is copied down; and pillarencode's count of
 * pillars outside the grid comes back as its warning, once a stream. */
#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "p3dtest-elem.h"
#include "p3dtest-model.h"
#include "p3dperception.h"
#include "p3dtest.h"

/* More than the ring's 16 slots, so that it wraps and the element waits for
 * the oldest record when every slot is in flight. */
#define FRAMES 40
#define MAX_POINTS 4000

/* Sweeps whose statistics differ from frame to frame: points in and out of
 * the range, non-finite ones, and pillars that hit max-points. */
static GstBuffer *
sweep (P3dTestRng * rng, guint frame)
{
  gsize n_points = 500 + p3d_test_rng_below (rng, MAX_POINTS - 500);
  gfloat *points = g_new (gfloat, n_points * 4);
  GstBuffer *buffer;
  gsize i;

  for (i = 0; i < n_points; i++) {
    gfloat *p = points + i * 4;

    p[0] = p3d_test_rng_uniform (rng, -2.0f, 4.0f + frame * 0.2f);
    p[1] = p3d_test_rng_uniform (rng, -2.0f, 2.0f);
    p[2] = p3d_test_rng_uniform (rng, -3.5f, 1.5f);
    p[3] = p3d_test_rng_uniform (rng, 0.0f, 1.0f);
    if (p3d_test_rng_below (rng, 97) == 0)
      p[1] = NAN;
  }
  buffer = gst_buffer_new_memdup (points, n_points * 4 * sizeof (gfloat));
  GST_BUFFER_PTS (buffer) = frame * GST_MSECOND;
  g_free (points);
  return buffer;
}

typedef struct
{
  GstHarness *h;
  GstBus *bus;
} Run;

static Run
voxelize_run (const gchar * backend, const gchar * out_caps)
{
  gchar *launch = g_strdup_printf ("voxelize backend=%s post-stats=true "
      "max-points=8 max-voxels=300", backend);
  Run run;

  run.h = gst_harness_new_parse (launch);
  run.bus = gst_bus_new ();
  gst_element_set_bus (run.h->element, run.bus);
  gst_harness_set_src_caps_str (run.h, "application/x-point-cloud, "
      "format=xyzi");
  gst_harness_set_sink_caps_str (run.h, out_caps);
  g_free (launch);
  return run;
}

/* The "voxelize-stats" structures @run posted, in order (free with
 * g_ptr_array_unref). */
static GPtrArray *
posted_stats (Run * run)
{
  GPtrArray *all = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_structure_free);
  GstMessage *message;

  while ((message = gst_bus_pop_filtered (run->bus, GST_MESSAGE_ELEMENT))) {
    const GstStructure *s = gst_message_get_structure (message);

    if (gst_structure_has_name (s, "voxelize-stats"))
      g_ptr_array_add (all, gst_structure_copy (s));
    gst_message_unref (message);
  }
  return all;
}

static GstStructure *
stats_property (Run * run)
{
  GstElement *e = gst_harness_find_element (run->h, "voxelize");
  GstStructure *s = NULL;

  g_object_get (e, "stats", &s, NULL);
  gst_object_unref (e);
  return s;
}

static void
run_free (Run * run)
{
  gst_element_set_bus (run->h->element, NULL);
  gst_object_unref (run->bus);
  gst_harness_teardown (run->h);
}

static void
check_voxelize_stats (const gchar * out_caps)
{
  Run cpu = voxelize_run ("cpu", "application/x-voxels");
  Run cuda = voxelize_run ("cuda", out_caps);
  P3dTestRng rng;
  GPtrArray *expected, *actual;
  GstStructure *a, *b;
  guint i;

  p3d_test_rng_init (&rng, 21);
  for (i = 0; i < FRAMES; i++) {
    GstBuffer *in = sweep (&rng, i);

    fail_unless_equals_int (gst_harness_push (cpu.h, gst_buffer_ref (in)),
        GST_FLOW_OK);
    fail_unless_equals_int (gst_harness_push (cuda.h, in), GST_FLOW_OK);
    gst_buffer_unref (gst_harness_pull (cpu.h));
    gst_buffer_unref (gst_harness_pull (cuda.h));
  }
  /* the records still in flight come back at the end of the stream */
  fail_unless (gst_harness_push_event (cpu.h, gst_event_new_eos ()));
  fail_unless (gst_harness_push_event (cuda.h, gst_event_new_eos ()));

  expected = posted_stats (&cpu);
  actual = posted_stats (&cuda);
  fail_unless_equals_int (expected->len, FRAMES);
  fail_unless_equals_int (actual->len, FRAMES);
  for (i = 0; i < FRAMES; i++) {
    guint64 timestamp = G_MAXUINT64;

    a = g_ptr_array_index (actual, i);
    b = g_ptr_array_index (expected, i);
    fail_unless (gst_structure_get_uint64 (a, "timestamp", &timestamp));
    fail_unless_equals_uint64 (timestamp, i * GST_MSECOND);
    fail_unless (gst_structure_is_equal (a, b), "%s, frame %u: %"
        GST_PTR_FORMAT " on the device, %" GST_PTR_FORMAT " on the "
        "reference path", out_caps, i, a, b);
  }
  a = stats_property (&cuda);
  b = stats_property (&cpu);
  fail_unless (gst_structure_is_equal (a, b), "%" GST_PTR_FORMAT " against %"
      GST_PTR_FORMAT, a, b);
  gst_structure_free (a);
  gst_structure_free (b);
  g_ptr_array_unref (expected);
  g_ptr_array_unref (actual);
  run_free (&cpu);
  run_free (&cuda);
}

GST_START_TEST (test_voxelize_stats_device_output)
{
  check_voxelize_stats ("application/x-voxels(" P3D_CAPS_FEATURE_MEMORY_CUDA
      ")");
}

GST_END_TEST;

GST_START_TEST (test_voxelize_stats_host_output)
{
  check_voxelize_stats ("application/x-voxels");
}

GST_END_TEST;

/* One pillar inside the grid and one at x = @x, as pillarencode takes them
 * (F32 features, the tiny model's grid). */
static GstBuffer *
pillars (gint32 x)
{
  static gfloat features[MODELTEST_MAX_VOXELS * MODELTEST_MAX_POINTS *
      MODELTEST_PFN_IN];
  gint32 coords[MODELTEST_MAX_VOXELS * 4] = { 0, };
  guint32 count = 2;
  gconstpointer data[3] = { features, coords, &count };
  gsize sizes[3] = { sizeof (features), sizeof (coords), sizeof (count) };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (features); i++)
    features[i] = (i % 7) * 0.125f;
  /* (batch, z, y, x) */
  coords[2] = 3;
  coords[3] = 5;
  coords[4 + 2] = 3;
  coords[4 + 3] = x;
  return elemtest_tensors_buffer (3, data, sizes);
}

GST_START_TEST (test_pillarencode_dropped)
{
  const ModeltestOptions options = { 1, TRUE, 9 };
  ModeltestModel *m = modeltest_model_new (&options);
  gchar *path = modeltest_model_write (m, NULL);
  gchar *launch = g_strdup_printf ("pillarencode backend=cuda weights=%s",
      path);
  gchar *caps = g_strdup_printf ("application/x-pillar-features, format=F32, "
      "features=mmdet3d-11, max-voxels=(int)%d, max-points=(int)%d, %s",
      MODELTEST_MAX_VOXELS, MODELTEST_MAX_POINTS, MODELTEST_GRID_FIELDS);
  GstHarness *h = gst_harness_new_parse (launch);
  GstBus *bus = gst_bus_new ();
  GstMessage *message;
  gchar *text;
  guint i;

  gst_element_set_bus (h->element, bus);
  gst_harness_set_src_caps_str (h, caps);
  gst_harness_set_sink_caps_str (h, "application/x-bev-features("
      P3D_CAPS_FEATURE_MEMORY_CUDA "), format=F32");
  /* inside the grid: nothing dropped, no warning */
  for (i = 0; i < 20; i++) {
    fail_unless_equals_int (gst_harness_push (h, pillars (MODELTEST_GRID - 1)),
        GST_FLOW_OK);
    gst_buffer_unref (gst_harness_pull (h));
  }
  fail_unless (gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING) == NULL);
  /* then every frame drops one, more frames than the ring holds */
  for (i = 0; i < 20; i++) {
    fail_unless_equals_int (gst_harness_push (h, pillars (MODELTEST_GRID)),
        GST_FLOW_OK);
    gst_buffer_unref (gst_harness_pull (h));
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  message = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING);
  fail_unless (message != NULL, "no warning for the dropped pillars");
  text = elemtest_message_text (message);
  fail_unless (strstr (text, "1 pillars lie outside the 16 x 16 grid") !=
      NULL, "%s", text);
  g_free (text);
  gst_message_unref (message);
  /* once a stream */
  fail_unless (gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING) == NULL);

  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  g_free (caps);
  g_free (launch);
  modeltest_remove (path);
  modeltest_model_free (m);
}

GST_END_TEST;

static Suite *
readback_cuda_suite (void)
{
  Suite *s = suite_create ("readback_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_voxelize_stats_device_output);
  tcase_add_test (tc, test_voxelize_stats_host_output);
  tcase_add_test (tc, test_pillarencode_dropped);
  return s;
}

P3D_CHECK_MAIN (readback_cuda);
