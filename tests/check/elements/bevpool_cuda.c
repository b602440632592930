/* bevpool's CUDA path as an element: backend=cuda gives exactly the bytes
 * of backend=cpu on the rig of the CPU test (two cameras, 6 x 4 features,
 * 16 x 8 cells), F16/F32 in and out, both layouts and cell roundings and
 * several z cells, with the output negotiated in system memory and in
 * memory:CUDAMemory; a calibration set while playing recomputes the
 * device geometry before the next frame, as the host one; a feature column
 * too tall for the device is refused with a clear error. Needs a GPU. */
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "p3dtest-backend.h"
#include "p3dtest-bevpoolrig.h"
#include "p3dtest-elem.h"
#include "p3dtest.h"

#define N_FRAMES 4

GST_START_TEST (test_bevpool)
{
  static const gchar *const extras[] = { "", "layout=xy",
    "cell-rounding=floor", "zbound=\"<-1,5,2>\""
  };
  const BevpoolrigConfig *c = &bevpoolrig_small_config;
  gchar *dir = bevpoolrig_make_dir ();
  P3dcCameraCalib cameras[2];
  gchar *path = bevpoolrig_write_calibration (dir, "calib.json", c->cameras,
      0, FALSE, cameras);
  guint half_in, half_out, e, i;

  for (half_in = 0; half_in < 2; half_in++) {
    gchar *caps = bevpoolrig_caps (c, BEVPOOLRIG_DEPTH_BINS, half_in);
    GstBuffer *inputs[N_FRAMES];

    for (i = 0; i < N_FRAMES; i++) {
      BevpoolrigFrame f;

      bevpoolrig_frame_make (&f, c, BEVPOOLRIG_DEPTH_BINS, half_in, 300 + i);
      inputs[i] = bevpoolrig_frame_buffer (&f);
      bevpoolrig_frame_clear (&f);
    }
    for (half_out = 0; half_out < 2; half_out++) {
      for (e = 0; e < G_N_ELEMENTS (extras); e++) {
        gchar *properties = bevpoolrig_properties (c, path, extras[e]);
        BackendtestSetup setup = { "bevpool", properties, caps,
          "application/x-bev-features", half_out ? ", format=F16" :
              ", format=F32"
        };

        backendtest_compare (&setup, inputs, N_FRAMES);
        g_free (properties);
      }
    }
    backendtest_unref_all (inputs, N_FRAMES);
    g_free (caps);
  }
  g_free (path);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* A calibration set while playing: the device geometry is recomputed
 * before the next frame, as the host one. */
GST_START_TEST (test_bevpool_calibration_change)
{
  const BevpoolrigConfig *c = &bevpoolrig_small_config;
  gchar *dir = bevpoolrig_make_dir ();
  P3dcCameraCalib cameras[2];
  gchar *path_a = bevpoolrig_write_calibration (dir, "a.json", c->cameras, 0,
      FALSE, cameras);
  gchar *path_b = bevpoolrig_write_calibration (dir, "b.json", c->cameras, 1,
      FALSE, cameras);
  gchar *properties = bevpoolrig_properties (c, path_a, NULL);
  gchar *caps = bevpoolrig_caps (c, BEVPOOLRIG_DEPTH_BINS, FALSE);
  BackendtestSetup setup = { "bevpool", properties, caps,
    "application/x-bev-features", ""
  };
  BevpoolrigFrame f;
  GstBuffer *input;
  guint cuda_out;

  bevpoolrig_frame_make (&f, c, BEVPOOLRIG_DEPTH_BINS, FALSE, 400);
  input = bevpoolrig_frame_buffer (&f);
  bevpoolrig_frame_clear (&f);
  for (cuda_out = 0; cuda_out < 2; cuda_out++) {
    GstHarness *cpu = backendtest_harness (&setup, "cpu", FALSE);
    GstHarness *cuda = backendtest_harness (&setup, "cuda", cuda_out);
    GstElement *b = gst_harness_find_element (cuda, "bevpool");
    guint64 updates = 0;
    guint frame;

    for (frame = 0; frame < 3; frame++) {
      gchar *what = g_strdup_printf ("bevpool calibration change, frame %u",
          frame);

      if (frame == 1) {
        GstElement *a = gst_harness_find_element (cpu, "bevpool");

        g_object_set (a, "calibration", path_b, NULL);
        g_object_set (b, "calibration", path_b, NULL);
        gst_object_unref (a);
      }
      backendtest_push_compare (cpu, cuda, input, cuda_out, what);
      g_free (what);
    }
    g_object_get (b, "geometry-updates", &updates, NULL);
    fail_unless_equals_uint64 (updates, 2);
    gst_object_unref (b);
    gst_harness_teardown (cpu);
    gst_harness_teardown (cuda);
  }
  gst_buffer_unref (input);
  g_free (properties);
  g_free (caps);
  g_free (path_a);
  g_free (path_b);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* A feature column taller than the CUDA path holds (bevpool.h): 1024
 * depth bins of 32 rows, 32,768 points; backend=cuda refuses the caps with
 * an error that gives the sizes and what to change. */
GST_START_TEST (test_column_limit)
{
  BevpoolrigConfig c = bevpoolrig_small_config;
  gchar *dir = bevpoolrig_make_dir ();
  P3dcCameraCalib cameras[2];
  gchar *path = bevpoolrig_write_calibration (dir, "calib.json", c.cameras,
      0, FALSE, cameras);
  static const gchar *const needles[] = { "too tall for bevpool's CUDA path",
    "1024 depth bins x 32 feature rows = 32768", "backend=cpu", NULL
  };
  gchar *properties, *launch, *caps, *text;

  c.feat_height = 32;
  c.dbound[0] = 1.0;
  c.dbound[1] = 1025.0;
  c.dbound[2] = 1.0;
  properties = bevpoolrig_properties (&c, path, "backend=cuda");
  launch = g_strdup_printf ("bevpool %s", properties);
  caps = bevpoolrig_caps (&c, 1024, FALSE);
  text = elemtest_expect_caps_refused (launch, caps,
      "application/x-bev-features", GST_LIBRARY_ERROR,
      GST_LIBRARY_ERROR_SETTINGS, needles);
  g_free (text);
  g_free (caps);
  g_free (launch);
  g_free (properties);
  g_free (path);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

static Suite *
bevpool_cuda_suite (void)
{
  Suite *s = suite_create ("bevpool_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_bevpool);
  tcase_add_test (tc, test_bevpool_calibration_change);
  tcase_add_test (tc, test_column_limit);
  return s;
}

P3D_CHECK_MAIN (bevpool_cuda);
