/* camencode's CUDA path against its reference path on the same frames,
 * with tiny BEVDet models of two and of six cameras (a rig larger than one
 * chunk of the preprocessing kernels):
 *  - precision=f32: every output value within 1e-4 x (1 + |reference|):
 *    the preprocessing is the reference's bit for bit (libs/camprep_cuda),
 *    so the difference is cuDNN's F32 sums in another order than the
 *    reference's loops, through a few layers;
 *  - precision=f16: 99 % of the values within 3e-2 x (1 + |reference|)
 *    and every one within 0.5: F16 storage of every activation and weight
 *    (11 significant bits) through the tiny ResNet-18 of random weights,
 *    its FPN and the depth net's softmax moves a few values far (on the
 *    H200, six cameras: 0.13 at most), where a layout or camera-order
 *    error would move most of them;
 *  - the same CUDA run on frames in system memory and in our CUDA memory,
 *    the output negotiated in system memory and in memory:CUDAMemory: the
 *    same bytes every time;
 *  - frames on another device (with two GPUs): copied device to device,
 *    the same bytes again.
 * Each comparison prints the largest difference it saw. Needs a GPU and
 * cuDNN. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "half.h"
#include "p3dperception.h"
#include "p3dtest.h"
#include "p3dtest-camencode.h"
#include "p3dtest-elem.h"

#define CUDA_FEATURE "(" P3D_CAPS_FEATURE_MEMORY_CUDA ")"

/* The values of tensor @index of @out as floats (F16 widened). */
static gfloat *
tensor_values (GstBuffer * out, guint index, gboolean half, gsize * count)
{
  GBytes *bytes = elemtest_host_bytes (out, index);
  gsize size = g_bytes_get_size (bytes), i;
  const guint8 *data = g_bytes_get_data (bytes, NULL);
  gfloat *values;

  *count = size / (half ? 2 : 4);
  values = g_new (gfloat, *count);
  for (i = 0; i < *count; i++)
    values[i] = half ? p3dc_half_to_float (((const guint16 *) data)[i]) :
        ((const gfloat *) data)[i];
  g_bytes_unref (bytes);
  return values;
}

/* Fails unless the values of @cuda are within @tolerance x (1 + |cpu|) of
 * @cpu's: every one of them in F32; in F16 all but 1 % of them, and every
 * one within 0.5 (F16 storage through a random net can move a few values
 * far, where a layout or camera-order error would move most of them);
 * returns the largest difference relative to 1 + |cpu|. */
static gdouble
assert_close (GstBuffer * cuda, GstBuffer * cpu, gboolean half,
    gdouble tolerance, const gchar * what)
{
  gdouble worst = 0.0;
  gsize total = 0, beyond = 0;
  guint t;

  for (t = 0; t < 2; t++) {
    gsize n, m, i;
    gfloat *a = tensor_values (cuda, t, half, &n);
    gfloat *b = tensor_values (cpu, t, half, &m);

    fail_unless_equals_uint64 (n, m);
    for (i = 0; i < n; i++) {
      gdouble d = fabs ((gdouble) a[i] - b[i]) / (1.0 + fabs (b[i]));

      fail_unless (isfinite (a[i]) && d <= (half ? 0.5 : tolerance),
          "%s: %s[%" G_GSIZE_FORMAT "] is %g on the GPU, %g on the "
          "reference", what, t ? "depth" : "features", i, a[i], b[i]);
      beyond += d > tolerance;
      worst = MAX (worst, d);
    }
    total += n;
    g_free (a);
    g_free (b);
  }
  g_print ("%s: largest difference %.3g x (1 + |reference|), %"
      G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT " values beyond %g\n", what,
      worst, beyond, total, tolerance);
  fail_unless (beyond * 100 <= total, "%s: %" G_GSIZE_FORMAT " of %"
      G_GSIZE_FORMAT " values beyond %g", what, beyond, total, tolerance);
  return worst;
}

/* A copy of @frame in our CUDA memory on device 0. */
static GstBuffer *
device_frame (GstBuffer * frame, gint device)
{
  gchar *why = NULL;
  GstAllocator *allocator = p3d_cuda_allocator_get (device, &why);
  gsize size = gst_buffer_get_size (frame);
  GstMemory *mem;
  GstBuffer *copy;
  GstMapInfo map;

  fail_unless (allocator != NULL, "%s", why);
  mem = p3d_cuda_allocator_alloc (allocator, size);
  fail_unless (gst_memory_map (mem, &map, GST_MAP_WRITE));
  gst_buffer_extract (frame, 0, map.data, size);
  gst_memory_unmap (mem, &map);
  copy = gst_buffer_new ();
  gst_buffer_append_memory (copy, mem);
  gst_buffer_copy_into (copy, frame, GST_BUFFER_COPY_TIMESTAMPS, 0, -1);
  gst_object_unref (allocator);
  return copy;
}

/* Runs one set of @frames through camencode with @properties, frames in
 * CUDA memory on @device when it is not -1, the output in CUDA memory when
 * @cuda_out; returns the output. */
static GstBuffer *
run_set (const gchar * path, const gchar * properties, guint n,
    GstBuffer ** frames, gchar ** caps, gint device, gboolean cuda_out,
    gboolean half)
{
  gchar *sink_caps = g_strdup_printf ("application/x-camera-features%s, "
      "format=%s", cuda_out ? CUDA_FEATURE : "", half ? "F16" : "F32");
  gchar **src_caps = g_new0 (gchar *, n + 1);
  GstHarness **h;
  GstBuffer *out;
  guint k;

  for (k = 0; k < n; k++) {
    if (device >= 0) {
      gchar *rest = strchr (caps[k], ',');

      src_caps[k] = g_strdup_printf ("video/x-raw" CUDA_FEATURE "%s", rest);
    } else {
      src_caps[k] = g_strdup (caps[k]);
    }
  }
  h = camencode_test_harnesses (path, properties, n,
      (const gchar * const *) src_caps, sink_caps);
  for (k = 0; k < n; k++)
    fail_unless_equals_int (gst_harness_push (h[k], device >= 0 ?
            device_frame (frames[k], device) : gst_buffer_ref (frames[k])),
        GST_FLOW_OK);
  out = gst_harness_pull (h[0]);
  fail_unless (out != NULL);
  if (cuda_out)
    fail_unless (p3d_is_cuda_memory (gst_buffer_peek_memory (out, 0)));
  camencode_test_harnesses_free (h, n);
  g_strfreev (src_caps);
  g_free (sink_caps);
  return out;
}

static void
assert_same (GstBuffer * a, GstBuffer * b, const gchar * what)
{
  guint t;

  for (t = 0; t < 2; t++) {
    GBytes *x = elemtest_host_bytes (a, t), *y = elemtest_host_bytes (b, t);
    gchar *label = g_strdup_printf ("%s, tensor %u", what, t);

    fail_unless_equals_uint64 (g_bytes_get_size (x), g_bytes_get_size (y));
    elemtest_assert_bytes (g_bytes_get_data (x, NULL), g_bytes_get_data (y,
            NULL), g_bytes_get_size (x), label);
    g_free (label);
    g_bytes_unref (x);
    g_bytes_unref (y);
  }
}

/* The frames of a rig of @n cameras of mixed formats and sizes. */
static void
rig_frames (guint n, guint64 seed, GstBuffer ** frames, gchar ** caps)
{
  const gchar *formats[] = { "RGB", "I420", "BGRx", "NV12", "RGBA", "YV12" };
  const guint sizes[][2] = { {384, 256}, {160, 120}, {401, 267}, {384, 256},
  {200, 150}, {640, 480}
  };
  guint k;

  for (k = 0; k < n; k++) {
    caps[k] = camencode_test_caps (formats[k % 6], sizes[k % 6][0],
        sizes[k % 6][1], 10);
    frames[k] = camencode_test_frame (caps[k], seed + k, 0);
  }
}

GST_START_TEST (test_cuda_against_reference)
{
  const guint rigs[2] = { 2, 6 };
  guint r, half;

  for (r = 0; r < 2; r++) {
    guint n = rigs[r];
    CamencodeTestModel *model = camencode_test_model_new (n, 40 + r);
    GstBuffer *frames[6];
    gchar *caps[7] = { NULL, };
    guint k;

    rig_frames (n, 50 + 10 * r, frames, caps);
    for (half = 0; half < 2; half++) {
      gchar *cuda_props = g_strdup_printf ("backend=cuda precision=%s",
          half ? "f16" : "f32");
      gchar *what = g_strdup_printf ("%u cameras, precision=%s", n,
          half ? "f16" : "f32");
      GstBuffer *cpu = run_set (model->path, "backend=cpu", n, frames, caps,
          -1, FALSE, half);
      GstBuffer *cuda = run_set (model->path, cuda_props, n, frames, caps,
          -1, FALSE, half);
      GstBuffer *cuda_in = run_set (model->path, cuda_props, n, frames, caps,
          0, FALSE, half);
      GstBuffer *cuda_out = run_set (model->path, cuda_props, n, frames,
          caps, -1, TRUE, half);
      GstBuffer *cuda_both = run_set (model->path, cuda_props, n, frames,
          caps, 0, TRUE, half);

      assert_close (cuda, cpu, half, half ? 3e-2 : 1e-4, what);
      assert_same (cuda_in, cuda, "frames in CUDA memory");
      assert_same (cuda_out, cuda, "output in CUDA memory");
      assert_same (cuda_both, cuda, "frames and output in CUDA memory");
      if (p3d_test_require_gpus (2)) {
        GstBuffer *peer = run_set (model->path, cuda_props, n, frames, caps,
            1, TRUE, half);

        assert_same (peer, cuda, "frames on device 1");
        gst_buffer_unref (peer);
      } else {
        g_print ("one device: frames on another device not tried\n");
      }
      gst_buffer_unref (cpu);
      gst_buffer_unref (cuda);
      gst_buffer_unref (cuda_in);
      gst_buffer_unref (cuda_out);
      gst_buffer_unref (cuda_both);
      g_free (cuda_props);
      g_free (what);
    }
    for (k = 0; k < n; k++) {
      gst_buffer_unref (frames[k]);
      g_free (caps[k]);
    }
    camencode_test_model_free (model);
  }
}

GST_END_TEST;

/* A stream on the CUDA path: sets of frames that change size and format
 * mid-stream (new preprocessing tables while earlier sets may still be
 * queued), each within the F32 tolerance of the reference. */
GST_START_TEST (test_cuda_stream)
{
  CamencodeTestModel *model = camencode_test_model_new (2, 60);
  gchar *caps[2][2] = {
    {camencode_test_caps ("RGB", 384, 256, 10),
        camencode_test_caps ("NV12", 160, 120, 10)},
    {camencode_test_caps ("I420", 200, 150, 10),
        camencode_test_caps ("BGRx", 384, 256, 10)}
  };
  GstHarness **cpu = camencode_test_harnesses (model->path, "backend=cpu", 2,
      (const gchar * const *) caps[0], "application/x-camera-features, "
      "format=F32");
  GstHarness **cuda = camencode_test_harnesses (model->path,
      "backend=cuda precision=f32", 2, (const gchar * const *) caps[0],
      "application/x-camera-features" CUDA_FEATURE ", format=F32");
  guint set, k;

  for (set = 0; set < 6; set++) {
    guint phase = set / 3;
    gchar *what = g_strdup_printf ("set %u", set);
    GstBuffer *a, *b;

    if (set == 3)
      for (k = 0; k < 2; k++) {
        gst_harness_set_src_caps_str (cpu[k], caps[1][k]);
        gst_harness_set_src_caps_str (cuda[k], caps[1][k]);
      }
    for (k = 0; k < 2; k++) {
      GstBuffer *frame = camencode_test_frame (caps[phase][k], 70 + set * 2 +
          k, set * 100 * GST_MSECOND);

      fail_unless_equals_int (gst_harness_push (cpu[k],
              gst_buffer_ref (frame)), GST_FLOW_OK);
      fail_unless_equals_int (gst_harness_push (cuda[k], frame), GST_FLOW_OK);
    }
    a = gst_harness_pull (cuda[0]);
    b = gst_harness_pull (cpu[0]);
    assert_close (a, b, FALSE, 1e-4, what);
    gst_buffer_unref (a);
    gst_buffer_unref (b);
    g_free (what);
  }
  camencode_test_harnesses_free (cpu, 2);
  camencode_test_harnesses_free (cuda, 2);
  for (set = 0; set < 2; set++)
    for (k = 0; k < 2; k++)
      g_free (caps[set][k]);
  camencode_test_model_free (model);
}

GST_END_TEST;

static Suite *
camencode_cuda_suite (void)
{
  Suite *s = suite_create ("camencode_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_cuda_against_reference);
  tcase_add_test (tc, test_cuda_stream);
  return s;
}

P3D_CHECK_MAIN (camencode_cuda);
