/* backend=cuda against backend=cpu in harnesses; see p3dtest-backend.h. */
#include <gst/check/gstcheck.h>

#include "p3dtest-backend.h"
#include "p3dtest-elem.h"
#include "p3dtest.h"

GstHarness *
backendtest_harness (const BackendtestSetup * setup, const gchar * backend,
    gboolean cuda_out)
{
  gchar *launch = g_strdup_printf ("%s backend=%s %s", setup->element,
      backend, setup->properties);
  gchar *sink_caps = g_strdup_printf ("%s%s%s", setup->sink_media_type,
      cuda_out ? BACKENDTEST_CUDA_FEATURE : "", setup->sink_fields);
  GstHarness *h = gst_harness_new_parse (launch);

  gst_harness_set_src_caps_str (h, setup->src_caps);
  gst_harness_set_sink_caps_str (h, sink_caps);
  g_free (launch);
  g_free (sink_caps);
  return h;
}

void
backendtest_assert_active (GstHarness * h, const gchar * element, gint expected)
{
  GstElement *e = gst_harness_find_element (h, element);
  gint active = -1;

  fail_unless (e != NULL, "no %s", element);
  g_object_get (e, "active-backend", &active, NULL);
  fail_unless_equals_int (active, expected);
  gst_object_unref (e);
}

void
backendtest_assert_same_output (GstBuffer * cuda_out, GstBuffer * cpu_out,
    gboolean cuda_memory, const gchar * what)
{
  guint i, n = gst_buffer_n_memory (cpu_out);

  fail_unless_equals_int (gst_buffer_n_memory (cuda_out), n);
  for (i = 0; i < n; i++) {
    GstMemory *mem = gst_buffer_peek_memory (cuda_out, i);
    gchar *name = g_strdup_printf ("%s, tensor %u", what, i);
    GstMapInfo info;

    fail_unless (!p3d_is_cuda_memory (gst_buffer_peek_memory (cpu_out, i)));
    fail_unless_equals_int (p3d_is_cuda_memory (mem), cuda_memory);
    /* a host map of CUDA memory waits for the kernels and downloads */
    fail_unless (gst_memory_map (gst_buffer_peek_memory (cpu_out, i), &info,
            GST_MAP_READ));
    elemtest_assert_tensor (cuda_out, i, info.data, info.size, name);
    gst_memory_unmap (gst_buffer_peek_memory (cpu_out, i), &info);
    g_free (name);
  }
}

void
backendtest_push_compare (GstHarness * cpu, GstHarness * cuda,
    GstBuffer * input, gboolean cuda_memory, const gchar * what)
{
  GstBuffer *expected, *actual;

  fail_unless_equals_int (gst_harness_push (cpu, gst_buffer_ref (input)),
      GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_push (cuda, gst_buffer_ref (input)),
      GST_FLOW_OK);
  expected = gst_harness_pull (cpu);
  actual = gst_harness_pull (cuda);
  fail_unless (expected != NULL && actual != NULL, "%s: no output", what);
  backendtest_assert_same_output (actual, expected, cuda_memory, what);
  gst_buffer_unref (expected);
  gst_buffer_unref (actual);
}

void
backendtest_compare (const BackendtestSetup * setup, GstBuffer ** inputs,
    guint n_inputs)
{
  guint cuda_out, i;

  for (cuda_out = 0; cuda_out < 2; cuda_out++) {
    GstHarness *cpu = backendtest_harness (setup, "cpu", FALSE);
    GstHarness *cuda = backendtest_harness (setup, "cuda", cuda_out);

    backendtest_assert_active (cuda, setup->element, P3D_BACKEND_CUDA);
    backendtest_assert_active (cpu, setup->element, P3D_BACKEND_CPU);
    for (i = 0; i < n_inputs; i++) {
      gchar *what = g_strdup_printf ("%s %s, output in %s memory, frame %u",
          setup->element, setup->properties, cuda_out ? "CUDA" : "system", i);

      backendtest_push_compare (cpu, cuda, inputs[i], cuda_out, what);
      g_free (what);
    }
    gst_harness_teardown (cpu);
    gst_harness_teardown (cuda);
  }
}

void
backendtest_unref_all (GstBuffer ** buffers, guint n)
{
  guint i;

  for (i = 0; i < n; i++)
    gst_buffer_unref (buffers[i]);
}

const gsize backendtest_frame_points[BACKENDTEST_N_FRAMES] = {
  3000, 400, 0, 6000, 1200, 1, 6000, 50
};

GstBuffer *
backendtest_points_buffer (guint64 seed, gsize n_points, gfloat ** copy)
{
  gfloat *points = g_new (gfloat, n_points * 4 + 1);
  GstBuffer *buffer;
  P3dTestRng rng;
  gsize i;

  p3d_test_rng_init (&rng, seed);
  for (i = 0; i < n_points; i++) {
    points[i * 4 + 0] = p3d_test_rng_uniform (&rng, -2.0f, 12.0f);
    points[i * 4 + 1] = p3d_test_rng_uniform (&rng, -3.0f, 3.0f);
    points[i * 4 + 2] = p3d_test_rng_uniform (&rng, -3.5f, 1.5f);
    points[i * 4 + 3] = p3d_test_rng_uniform (&rng, 0.0f, 1.0f);
  }
  /* an empty sweep: a buffer without memory, as appsrc pushes it */
  buffer = n_points == 0 ? gst_buffer_new () :
      gst_buffer_new_memdup (points, n_points * 16);
  if (copy)
    *copy = points;
  else
    g_free (points);
  return buffer;
}
