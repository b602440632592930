/* camencode on its reference path, with tiny BEVDet models (two cameras of
 * a 64 x 96 network input unless said otherwise): the output against the
 * compute library's reference on the same frames (p3dtest-camencode.h),
 * every frame format, the transforms in the output caps worked by hand,
 * sets matched by running time, late and missing cameras under each
 * missing-camera policy, cameras at EOS, frames without timestamps, caps
 * changing mid-stream, cameras of other sizes, frames that do not hold
 * their caps, a live rig whose camera stops (no stall), and the errors of a
 * weights file or pads that do not fit. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>

#include <gst/app/gstappsink.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "p3dperception.h"
#include "p3dtest.h"
#include "p3dtest-camencode.h"
#include "p3dtest-elem.h"
#include "p3dtest-model.h"
#include "runtime.h"

/* Camera 0's frames: 160 x 120, which BEVDet's test transform for a 96 x
 * 64 input scales by 96 / 160 + 0.04 = 0.64 to int (102.4) x int (76.8) =
 * 102 x 76 and crops at (int ((102 - 96) / 2), 76 - 64) = (3, 12). Camera
 * 1's: the model's src size, 384 x 256: 96 / 384 + 0.04 = 0.29, int
 * (111.36) x int (74.24) = 111 x 74, crop (7, 10). */
#define W0 160
#define H0 120
#define W1 384
#define H1 256
static const gdouble aug0[6] = { 0.64, 0, -3, 0, 0.64, -12 };
static const gdouble aug1[6] = { 0.29, 0, -7, 0, 0.29, -10 };

/* Enough queued time for a test to push a camera's frames before the
 * other's: an aggregator pad queues up to its latency. */
#define QUEUE "latency=2000000000"

#define F32_OUT "application/x-camera-features, format=F32"

static CamencodeTestModel *model;

static void
setup (void)
{
  model = camencode_test_model_new (2, 27);
}

static void
teardown (void)
{
  camencode_test_model_free (model);
  model = NULL;
}

static void
assert_aug (GstHarness * h, guint camera, const gdouble * want)
{
  gdouble aug[6];
  guint i;

  camencode_test_image_aug (h, camera, aug);
  for (i = 0; i < 6; i++)
    fail_unless (fabs (aug[i] - want[i]) < 1e-12, "camera %u image-aug[%u] "
        "is %.17g, not %g", camera, i, aug[i], want[i]);
}

/* Pulls one set and compares it with the reference on @frames. */
static void
pull_and_check (GstHarness * h, GstBuffer ** frames,
    const gchar * const *caps, gboolean half, GstClockTime pts,
    const gchar * what)
{
  GstBuffer *out = gst_harness_pull (h);
  GBytes *features, *depth;

  fail_unless (out != NULL, "%s: no output", what);
  camencode_test_expected (model->path, frames, caps, half, &features, &depth);
  camencode_test_assert_output (out, features, depth, what);
  if (GST_CLOCK_TIME_IS_VALID (pts))
    fail_unless_equals_uint64 (GST_BUFFER_PTS (out), pts);
  g_bytes_unref (features);
  g_bytes_unref (depth);
  gst_buffer_unref (out);
}

static guint64
get_uint64 (GstHarness * h, const gchar * name)
{
  guint64 value = G_MAXUINT64;

  g_object_get (h->element, name, &value, NULL);
  return value;
}

/* The bus of the harnesses' element (set before the first harness), to
 * read its warnings and errors. */
static GstBus *
attach_bus (GstHarness * h)
{
  GstBus *bus = gst_element_get_bus (h->element);

  fail_unless (bus != NULL);
  return bus;
}

/* One set of two cameras of other sizes and formats: the output equals the
 * reference, F16 by default and F32 when downstream asks, and the caps
 * name the network's input, the feature map and each camera's transform
 * (worked by hand above). */
GST_START_TEST (test_one_set)
{
  guint half;

  for (half = 0; half < 2; half++) {
    gchar *caps[2] = { camencode_test_caps ("RGB", W0, H0, 10),
      camencode_test_caps ("BGRx", W1, H1, 10)
    };
    GstHarness **h = camencode_test_harnesses (model->path, "backend=cpu",
        2, (const gchar * const *) caps, half ? NULL : F32_OUT);
    GstBuffer *frames[2];
    GstCaps *out_caps;
    P3dCameraFeaturesInfo info;
    guint k;

    for (k = 0; k < 2; k++) {
      frames[k] = camencode_test_frame (caps[k], 10 + k, 0);
      fail_unless_equals_int (gst_harness_push (h[k],
              gst_buffer_ref (frames[k])), GST_FLOW_OK);
    }
    pull_and_check (h[0], frames, (const gchar * const *) caps, half, 0,
        half ? "F16" : "F32");
    out_caps = gst_pad_get_current_caps (h[0]->sinkpad);
    fail_unless (p3d_camera_features_info_from_caps (&info, out_caps));
    fail_unless_equals_int (info.format, half ? P3D_DATA_FORMAT_F16 :
        P3D_DATA_FORMAT_F32);
    fail_unless_equals_int (info.cameras, 2);
    fail_unless_equals_int (info.channels, model->arch.context_channels);
    fail_unless_equals_int (info.depth_bins, model->arch.depth_bins);
    fail_unless_equals_int (info.width, 96 / 16);
    fail_unless_equals_int (info.height, 64 / 16);
    fail_unless_equals_int (info.fps_n, 10);
    fail_unless (info.has_image);
    fail_unless_equals_int (info.image_width, 96);
    fail_unless_equals_int (info.image_height, 64);
    gst_caps_unref (out_caps);
    assert_aug (h[0], 0, aug0);
    assert_aug (h[0], 1, aug1);
    for (k = 0; k < 2; k++) {
      gst_buffer_unref (frames[k]);
      g_free (caps[k]);
    }
    camencode_test_harnesses_free (h, 2);
  }
}

GST_END_TEST;

/* Every format camencode takes, on camera 0 (odd sizes) beside an RGB
 * camera 1, and I420 of limited-range BT.709: the output equals the
 * reference on the same bytes. */
GST_START_TEST (test_formats)
{
  const gchar *names[] = { "RGB", "BGR", "RGBA", "BGRA", "RGBx", "BGRx",
    "xRGB", "xBGR", "ARGB", "ABGR", "I420", "YV12", "NV12", "NV21", NULL
  };
  guint f;

  for (f = 0; f < G_N_ELEMENTS (names); f++) {
    gchar *caps[2] = { names[f] ? camencode_test_caps (names[f], W0 + 1,
          H0 + 1, 0) : g_strdup_printf ("video/x-raw, format=I420, "
          "width=%d, height=%d, colorimetry=(string)bt709", W0, H0),
      camencode_test_caps ("RGB", W1, H1, 0)
    };
    GstHarness **h = camencode_test_harnesses (model->path, "backend=cpu",
        2, (const gchar * const *) caps, F32_OUT);
    GstBuffer *frames[2];
    guint k;

    for (k = 0; k < 2; k++) {
      frames[k] = camencode_test_frame (caps[k], 20 + f, 0);
      fail_unless_equals_int (gst_harness_push (h[k],
              gst_buffer_ref (frames[k])), GST_FLOW_OK);
    }
    pull_and_check (h[0], frames, (const gchar * const *) caps, FALSE, 0,
        names[f] ? names[f] : "I420 bt709");
    for (k = 0; k < 2; k++) {
      gst_buffer_unref (frames[k]);
      g_free (caps[k]);
    }
    camencode_test_harnesses_free (h, 2);
  }
}

GST_END_TEST;

/* Frames at 10 per second, camera 1 30 ms after camera 0: one set each
 * 100 ms, each of its own frames (a camera's newest in the set), stamped
 * with the set's start. */
GST_START_TEST (test_sets_by_running_time)
{
  gchar *caps[2] = { camencode_test_caps ("RGB", W0, H0, 10),
    camencode_test_caps ("RGB", W1, H1, 10)
  };
  GstHarness **h = camencode_test_harnesses (model->path,
      "backend=cpu " QUEUE, 2, (const gchar * const *) caps, F32_OUT);
  GstBuffer *frames[3][2];
  guint n, k;

  for (k = 0; k < 2; k++)
    for (n = 0; n < 3; n++) {
      frames[n][k] = camencode_test_frame (caps[k], 100 + 10 * n + k,
          n * 100 * GST_MSECOND + k * 30 * GST_MSECOND);
      fail_unless_equals_int (gst_harness_push (h[k],
              gst_buffer_ref (frames[n][k])), GST_FLOW_OK);
    }
  for (n = 0; n < 3; n++) {
    gchar *what = g_strdup_printf ("set %u", n);

    pull_and_check (h[0], frames[n], (const gchar * const *) caps, FALSE,
        n * 100 * GST_MSECOND, what);
    g_free (what);
  }
  fail_unless_equals_uint64 (get_uint64 (h[0], "frames-repeated"), 0);
  fail_unless_equals_uint64 (get_uint64 (h[0], "sets-dropped"), 0);
  for (n = 0; n < 3; n++)
    for (k = 0; k < 2; k++)
      gst_buffer_unref (frames[n][k]);
  camencode_test_harnesses_free (h, 2);
  for (k = 0; k < 2; k++)
    g_free (caps[k]);
}

GST_END_TEST;

/* Camera 1 sends two frames in set 0 and none in set 1: set 0 takes the
 * newer, set 1 that one again (missing-camera=repeat, the default), with
 * one warning naming the camera and frames-repeated counting it. */
GST_START_TEST (test_missing_repeat)
{
  gchar *caps[2] = { camencode_test_caps ("RGB", W0, H0, 10),
    camencode_test_caps ("RGB", W1, H1, 10)
  };
  GstHarness **h = camencode_test_harnesses (model->path,
      "backend=cpu " QUEUE, 2, (const gchar * const *) caps, F32_OUT);
  GstBus *bus = attach_bus (h[0]);
  const GstClockTime cam1_times[3] = { 0, 50 * GST_MSECOND,
    200 * GST_MSECOND
  };
  GstBuffer *cam0[3], *cam1[3], *set[2];
  gchar *text;
  guint n;

  for (n = 0; n < 3; n++) {
    cam1[n] = camencode_test_frame (caps[1], 200 + n, cam1_times[n]);
    fail_unless_equals_int (gst_harness_push (h[1], gst_buffer_ref (cam1[n])),
        GST_FLOW_OK);
  }
  for (n = 0; n < 3; n++) {
    cam0[n] = camencode_test_frame (caps[0], 210 + n, n * 100 * GST_MSECOND);
    fail_unless_equals_int (gst_harness_push (h[0], gst_buffer_ref (cam0[n])),
        GST_FLOW_OK);
  }
  set[0] = cam0[0];
  set[1] = cam1[1];
  pull_and_check (h[0], set, (const gchar * const *) caps, FALSE, 0,
      "set 0: camera 1's newer frame");
  set[0] = cam0[1];
  pull_and_check (h[0], set, (const gchar * const *) caps, FALSE,
      100 * GST_MSECOND, "set 1: camera 1's frame again");
  set[0] = cam0[2];
  set[1] = cam1[2];
  pull_and_check (h[0], set, (const gchar * const *) caps, FALSE,
      200 * GST_MSECOND, "set 2");
  fail_unless_equals_uint64 (get_uint64 (h[0], "frames-repeated"), 1);
  fail_unless_equals_uint64 (get_uint64 (h[0], "sets-dropped"), 0);
  text = elemtest_expect_message (bus, GST_MESSAGE_WARNING, GST_STREAM_ERROR,
      GST_STREAM_ERROR_FAILED, "Camera 1", "CAM_1", "sink_1",
      "0:00:00.100000000", "used again", NULL);
  g_free (text);
  fail_unless (elemtest_pop (bus, GST_MESSAGE_WARNING) == NULL,
      "a second warning");
  for (n = 0; n < 3; n++) {
    gst_buffer_unref (cam0[n]);
    gst_buffer_unref (cam1[n]);
  }
  gst_element_set_bus (h[0]->element, NULL);
  gst_object_unref (bus);
  camencode_test_harnesses_free (h, 2);
  g_free (caps[0]);
  g_free (caps[1]);
}

GST_END_TEST;

/* The same input with missing-camera=drop: no output for set 1,
 * sets-dropped counts it, one warning; =error: an error naming the
 * camera and the set. */
GST_START_TEST (test_missing_drop_and_error)
{
  gchar *caps[2] = { camencode_test_caps ("RGB", W0, H0, 10),
    camencode_test_caps ("RGB", W1, H1, 10)
  };
  guint policy;

  for (policy = 0; policy < 2; policy++) {
    GstHarness **h = camencode_test_harnesses (model->path, policy ?
        "backend=cpu " QUEUE " missing-camera=error" :
        "backend=cpu " QUEUE " missing-camera=drop", 2,
        (const gchar * const *) caps, F32_OUT);
    GstBus *bus = attach_bus (h[0]);
    GstBuffer *cam0[3], *cam1[2], *set[2];
    gchar *text;
    guint n;

    for (n = 0; n < 2; n++) {
      cam1[n] = camencode_test_frame (caps[1], 300 + n, n * 200 * GST_MSECOND);
      fail_unless_equals_int (gst_harness_push (h[1],
              gst_buffer_ref (cam1[n])), GST_FLOW_OK);
    }
    for (n = 0; n < 3; n++) {
      cam0[n] = camencode_test_frame (caps[0], 310 + n, n * 100 * GST_MSECOND);
      gst_harness_push (h[0], gst_buffer_ref (cam0[n]));
    }
    set[0] = cam0[0];
    set[1] = cam1[0];
    pull_and_check (h[0], set, (const gchar * const *) caps, FALSE, 0, "set 0");
    if (policy == 0) {
      set[0] = cam0[2];
      set[1] = cam1[1];
      pull_and_check (h[0], set, (const gchar * const *) caps, FALSE,
          200 * GST_MSECOND, "set 2 after set 1 dropped");
      fail_unless_equals_uint64 (get_uint64 (h[0], "sets-dropped"), 1);
      text = elemtest_expect_message (bus, GST_MESSAGE_WARNING,
          GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED, "Camera 1", "sink_1",
          "dropped", NULL);
    } else {
      text = elemtest_expect_error (bus, GST_STREAM_ERROR,
          GST_STREAM_ERROR_FAILED, "Camera 1", "sink_1", "0:00:00.100000000",
          "missing-camera=error", NULL);
    }
    g_free (text);
    for (n = 0; n < 3; n++)
      gst_buffer_unref (cam0[n]);
    for (n = 0; n < 2; n++)
      gst_buffer_unref (cam1[n]);
    gst_element_set_bus (h[0]->element, NULL);
    gst_object_unref (bus);
    camencode_test_harnesses_free (h, 2);
  }
  g_free (caps[0]);
  g_free (caps[1]);
}

GST_END_TEST;

/* A camera at EOS: its last frame stands in for the rest of the stream
 * (repeat), a camera that sent none drops every set; either way the
 * stream ends when every camera is at EOS, never waiting. */
GST_START_TEST (test_camera_at_eos)
{
  gchar *caps[2] = { camencode_test_caps ("RGB", W0, H0, 10),
    camencode_test_caps ("RGB", W1, H1, 10)
  };
  guint sent;

  for (sent = 0; sent < 2; sent++) {
    GstHarness **h = camencode_test_harnesses (model->path,
        "backend=cpu " QUEUE, 2, (const gchar * const *) caps, F32_OUT);
    GstBuffer *cam0[3], *cam1 = NULL, *set[2];
    GstEvent *event;
    guint n;

    if (sent) {
      cam1 = camencode_test_frame (caps[1], 400, 0);
      fail_unless_equals_int (gst_harness_push (h[1], gst_buffer_ref (cam1)),
          GST_FLOW_OK);
    }
    fail_unless (gst_harness_push_event (h[1], gst_event_new_eos ()));
    for (n = 0; n < 3; n++) {
      cam0[n] = camencode_test_frame (caps[0], 410 + n, n * 100 * GST_MSECOND);
      fail_unless_equals_int (gst_harness_push (h[0],
              gst_buffer_ref (cam0[n])), GST_FLOW_OK);
    }
    fail_unless (gst_harness_push_event (h[0], gst_event_new_eos ()));
    for (n = 0; sent && n < 3; n++) {
      gchar *what = g_strdup_printf ("set %u", n);

      set[0] = cam0[n];
      set[1] = cam1;
      pull_and_check (h[0], set, (const gchar * const *) caps, FALSE,
          n * 100 * GST_MSECOND, what);
      g_free (what);
    }
    /* then EOS, and nothing else */
    while ((event = gst_harness_pull_event (h[0])) != NULL) {
      gboolean eos = GST_EVENT_TYPE (event) == GST_EVENT_EOS;

      gst_event_unref (event);
      if (eos)
        break;
    }
    fail_unless (event != NULL, "no EOS");
    fail_unless_equals_int (gst_harness_buffers_in_queue (h[0]), 0);
    fail_unless_equals_uint64 (get_uint64 (h[0], "frames-repeated"),
        sent ? 2 : 0);
    fail_unless_equals_uint64 (get_uint64 (h[0], "sets-dropped"), sent ? 0 : 3);
    for (n = 0; n < 3; n++)
      gst_buffer_unref (cam0[n]);
    if (cam1)
      gst_buffer_unref (cam1);
    camencode_test_harnesses_free (h, 2);
  }
  g_free (caps[0]);
  g_free (caps[1]);
}

GST_END_TEST;

/* Frames without timestamps: each camera's next frame goes in the next
 * set. */
GST_START_TEST (test_untimed_frames)
{
  gchar *caps[2] = { camencode_test_caps ("RGB", W0, H0, 0),
    camencode_test_caps ("I420", W1, H1, 0)
  };
  GstHarness **h = camencode_test_harnesses (model->path,
      "backend=cpu " QUEUE, 2, (const gchar * const *) caps, F32_OUT);
  GstBuffer *frames[2][2];
  guint n, k;

  for (k = 0; k < 2; k++)
    for (n = 0; n < 2; n++) {
      frames[n][k] = camencode_test_frame (caps[k], 500 + 10 * n + k,
          GST_CLOCK_TIME_NONE);
      fail_unless_equals_int (gst_harness_push (h[k],
              gst_buffer_ref (frames[n][k])), GST_FLOW_OK);
    }
  for (n = 0; n < 2; n++) {
    gchar *what = g_strdup_printf ("untimed set %u", n);

    pull_and_check (h[0], frames[n], (const gchar * const *) caps, FALSE,
        GST_CLOCK_TIME_NONE, what);
    g_free (what);
  }
  for (n = 0; n < 2; n++)
    for (k = 0; k < 2; k++)
      gst_buffer_unref (frames[n][k]);
  camencode_test_harnesses_free (h, 2);
  g_free (caps[0]);
  g_free (caps[1]);
}

GST_END_TEST;

/* Camera 1 changes from 384 x 256 RGB to 160 x 120 NV12 between two sets:
 * the second set's caps carry its new transform (bevpool recomputes its
 * geometry from them) and its output is the reference's on the new frame;
 * camera 0's transform stays. */
GST_START_TEST (test_caps_change)
{
  gchar *caps[2] = { camencode_test_caps ("RGB", W0, H0, 10),
    camencode_test_caps ("RGB", W1, H1, 10)
  };
  gchar *caps1b = camencode_test_caps ("NV12", W0, H0, 10);
  const gchar *later[2] = { caps[0], caps1b };
  GstHarness **h = camencode_test_harnesses (model->path,
      "backend=cpu " QUEUE, 2, (const gchar * const *) caps, F32_OUT);
  GstBuffer *frames[2][2];
  guint k;

  for (k = 0; k < 2; k++) {
    frames[0][k] = camencode_test_frame (caps[k], 600 + k, 0);
    fail_unless_equals_int (gst_harness_push (h[k],
            gst_buffer_ref (frames[0][k])), GST_FLOW_OK);
  }
  pull_and_check (h[0], frames[0], (const gchar * const *) caps, FALSE, 0,
      "before the change");
  assert_aug (h[0], 1, aug1);
  gst_harness_set_src_caps_str (h[1], caps1b);
  for (k = 0; k < 2; k++) {
    frames[1][k] = camencode_test_frame (later[k], 610 + k, 100 * GST_MSECOND);
    fail_unless_equals_int (gst_harness_push (h[k],
            gst_buffer_ref (frames[1][k])), GST_FLOW_OK);
  }
  pull_and_check (h[0], frames[1], later, FALSE, 100 * GST_MSECOND,
      "after the change");
  assert_aug (h[0], 0, aug0);
  assert_aug (h[0], 1, aug0);
  for (k = 0; k < 2; k++) {
    gst_buffer_unref (frames[0][k]);
    gst_buffer_unref (frames[1][k]);
  }
  camencode_test_harnesses_free (h, 2);
  g_free (caps[0]);
  g_free (caps[1]);
  g_free (caps1b);
}

GST_END_TEST;

/* A camera whose images the model's transform cannot take (1000 x 64:
 * scaled by 0.136 to 136 x 8, less than the input's 64 rows) is refused
 * when its caps come, with an error naming the camera, the size and the
 * input; the stream then stops, not negotiated. */
GST_START_TEST (test_size_not_taken)
{
  gchar *caps[2] = { camencode_test_caps ("RGB", W0, H0, 10),
    camencode_test_caps ("RGB", 1000, 64, 10)
  };
  GstHarness **h = camencode_test_harnesses (model->path, "backend=cpu", 2,
      (const gchar * const *) caps, NULL);
  GstBus *bus = attach_bus (h[0]);
  GstBuffer *frame = camencode_test_frame (caps[1], 700, 0);
  gchar *text;
  guint n;

  /* the aggregator queues the caps with the frame: the push itself goes
   * through */
  gst_harness_push (h[1], frame);
  text = elemtest_expect_error (bus, GST_CORE_ERROR,
      GST_CORE_ERROR_NEGOTIATION, "Camera 1", "sink_1", "1000 x 64",
      "96 x 64", "too small or too wide", NULL);
  g_free (text);
  /* camera 0's frames then meet a stream that stopped */
  for (n = 0; n < 3; n++)
    if (gst_harness_push (h[0], camencode_test_frame (caps[0], 701 + n,
                n * 100 * GST_MSECOND)) == GST_FLOW_NOT_NEGOTIATED)
      break;
  fail_unless (n < 3, "camera 0's frames were taken");
  fail_unless_equals_int (gst_harness_buffers_in_queue (h[0]), 0);
  gst_element_set_bus (h[0]->element, NULL);
  gst_object_unref (bus);
  camencode_test_harnesses_free (h, 2);
  g_free (caps[0]);
  g_free (caps[1]);
}

GST_END_TEST;

/* Frames that do not hold their caps' image (a byte short, empty) stop the
 * element with a format error naming the camera; a frame with bytes to
 * spare after the image is read as every video element reads it. */
GST_START_TEST (test_frame_sizes)
{
  gchar *caps[2] = { camencode_test_caps ("RGB", W0, H0, 10),
    camencode_test_caps ("NV12", W1, H1, 10)
  };
  guint bad;

  for (bad = 0; bad < 3; bad++) {
    GstHarness **h = camencode_test_harnesses (model->path, "backend=cpu",
        2, (const gchar * const *) caps, F32_OUT);
    GstBus *bus = attach_bus (h[0]);
    GstBuffer *frames[2], *pushed;
    gsize size;
    gchar *text;

    frames[0] = camencode_test_frame (caps[0], 800, 0);
    frames[1] = camencode_test_frame (caps[1], 801, 0);
    size = gst_buffer_get_size (frames[1]);
    if (bad == 2) {
      /* bytes to spare */
      pushed = gst_buffer_copy_deep (frames[1]);
      gst_buffer_append_memory (pushed, gst_allocator_alloc (NULL, 1000, NULL));
    } else {
      pushed = gst_buffer_copy_region (frames[1], GST_BUFFER_COPY_ALL, 0,
          bad == 0 ? size - 1 : 0);
    }
    fail_unless_equals_int (gst_harness_push (h[0],
            gst_buffer_ref (frames[0])), GST_FLOW_OK);
    gst_harness_push (h[1], pushed);
    if (bad == 2) {
      pull_and_check (h[0], frames, (const gchar * const *) caps, FALSE, 0,
          "bytes to spare");
    } else {
      text = elemtest_expect_error (bus, GST_STREAM_ERROR,
          GST_STREAM_ERROR_FORMAT, "camera 1", "sink_1", "NV12", "384 x 256",
          NULL);
      g_free (text);
    }
    gst_buffer_unref (frames[0]);
    gst_buffer_unref (frames[1]);
    gst_element_set_bus (h[0]->element, NULL);
    gst_object_unref (bus);
    camencode_test_harnesses_free (h, 2);
  }
  g_free (caps[0]);
  g_free (caps[1]);
}

GST_END_TEST;

/* The model's cameras are the pads sink_0 ... sink_N-1: another number of
 * pads, or other numbers, stop the element when it starts, naming the
 * weights file and both counts. */
GST_START_TEST (test_pads_against_model)
{
  const gchar *const layouts[][4] = { {"sink_0", NULL}, {"sink_0", "sink_1",
      "sink_2", NULL}, {"sink_0", "sink_2", NULL}
  };
  const gchar *const words[][2] = { {"1 sink pads", NULL},
  {"3 sink pads", NULL}, {"2 sink pads", "whose numbers"}
  };
  guint l, p;

  for (l = 0; l < G_N_ELEMENTS (layouts); l++) {
    GstElement *element = gst_element_factory_make ("camencode", NULL);
    gchar *text;

    g_object_set (element, "weights", model->path, NULL);
    gst_util_set_object_arg (G_OBJECT (element), "backend", "cpu");
    for (p = 0; layouts[l][p]; p++)
      gst_object_unref (gst_element_request_pad_simple (element,
              layouts[l][p]));
    text = modeltest_expect_start_error (element, GST_RESOURCE_ERROR,
        GST_RESOURCE_ERROR_SETTINGS, model->path, "for 2 cameras",
        "CAM_0 ... CAM_1", words[l][0], words[l][1], NULL);
    g_free (text);
    gst_object_unref (element);
  }
}

GST_END_TEST;

/* The bad weights every network element refuses, a model without
 * cameras, and a weight that is not a finite number (refused at load,
 * naming the tensor): each an error when the element starts. */
GST_START_TEST (test_bad_weights)
{
  const ModeltestOptions options = { 1, FALSE, 5 };
  ModeltestModel *lidar = modeltest_model_new (&options);
  GstElement *element;
  gchar *path, *text;
  TinyModelTensor *tensor;
  guint i;

  for (i = 0; i < modeltest_n_bad_weights (); i++)
    modeltest_check_bad_weights ("camencode", i);

  /* a lidar model */
  path = modeltest_model_write (lidar, NULL);
  element = gst_element_factory_make ("camencode", NULL);
  g_object_set (element, "weights", path, NULL);
  gst_object_unref (gst_element_request_pad_simple (element, "sink_0"));
  text = modeltest_expect_start_error (element, GST_STREAM_ERROR,
      GST_STREAM_ERROR_DECODE, path, "centerpoint-pillar",
      "no camera encoder", NULL);
  g_free (text);
  gst_object_unref (element);
  modeltest_remove (path);
  modeltest_model_free (lidar);

  /* a non-finite weight */
  tensor = tiny_model_get (model->weights, "img_backbone.conv1.weight");
  tensor->values[5] = NAN;
  path = tiny_model_write (model->weights, model->config, NULL);
  tensor->values[5] = 0.25f;
  element = gst_element_factory_make ("camencode", NULL);
  g_object_set (element, "weights", path, NULL);
  gst_object_unref (gst_element_request_pad_simple (element, "sink_0"));
  gst_object_unref (gst_element_request_pad_simple (element, "sink_1"));
  text = modeltest_expect_start_error (element, GST_STREAM_ERROR,
      GST_STREAM_ERROR_DECODE, path, "img_backbone.conv1.weight",
      "must be finite", NULL);
  g_free (text);
  gst_object_unref (element);
  g_remove (path);
  g_free (path);

}

GST_END_TEST;

/* backend=cuda on a device that does not exist (the first number past the
 * machine's devices) fails to start, naming it. */
GST_START_TEST (test_backend_cuda_without_device)
{
  gint missing = p3dc_cuda_device_count ();
  gchar *device = g_strdup_printf ("device %d", missing);
  GstElement *element = gst_element_factory_make ("camencode", NULL);
  gchar *text;

  g_object_set (element, "weights", model->path, "cuda-device-id", missing,
      NULL);
  gst_util_set_object_arg (G_OBJECT (element), "backend", "cuda");
  gst_object_unref (gst_element_request_pad_simple (element, "sink_0"));
  gst_object_unref (gst_element_request_pad_simple (element, "sink_1"));
  text = modeltest_expect_start_error (element, GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_NOT_FOUND, "backend=cuda", device, NULL);
  g_free (text);
  gst_object_unref (element);
  g_free (device);
}

GST_END_TEST;

/* A live rig of two test sources at 20 frames a second whose camera 1
 * stops sending (a valve closes) without EOS: sets keep coming, each
 * within the set's time plus the latency, camera 1's last frame repeated;
 * nothing waits for it. */
GST_START_TEST (test_live_camera_stops)
{
  gchar *description = g_strdup_printf ("camencode name=enc weights=\"%s\" "
      "backend=cpu ! appsink name=sink sync=false "
      "videotestsrc is-live=true pattern=ball "
      "! video/x-raw,format=RGB,width=%d,height=%d,framerate=20/1 ! enc.sink_0 "
      "videotestsrc is-live=true pattern=snow "
      "! video/x-raw,format=RGB,width=%d,height=%d,framerate=20/1 "
      "! valve name=v ! enc.sink_1", model->path, W0, H0, W1, H1);
  GstElement *pipeline = gst_parse_launch (description, NULL);
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  GstElement *valve = gst_bin_get_by_name (GST_BIN (pipeline), "v");
  GstElement *enc = gst_bin_get_by_name (GST_BIN (pipeline), "enc");
  guint received = 0;
  guint64 repeated = 0;

  fail_unless (pipeline != NULL, "%s", description);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  /* sets keep coming after the valve closes, until camera 1's last frame
   * has stood in three times (frames already queued come first; slow
   * machines and valgrind queue more) */
  while (repeated < 3) {
    GstSample *sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink),
        20 * GST_SECOND);

    fail_unless (sample != NULL, "no set within 20 s (%u sets, %"
        G_GUINT64_FORMAT " repeats)", received, repeated);
    gst_sample_unref (sample);
    if (++received == 3)
      g_object_set (valve, "drop", TRUE, NULL);
    g_object_get (enc, "frames-repeated", &repeated, NULL);
    fail_unless (received < 1000, "%u sets and only %" G_GUINT64_FORMAT
        " repeats", received, repeated);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (enc);
  gst_object_unref (valve);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
  g_free (description);
}

GST_END_TEST;

static Suite *
camencode_suite (void)
{
  Suite *s = suite_create ("camencode");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_one_set);
  tcase_add_test (tc, test_formats);
  tcase_add_test (tc, test_sets_by_running_time);
  tcase_add_test (tc, test_missing_repeat);
  tcase_add_test (tc, test_missing_drop_and_error);
  tcase_add_test (tc, test_camera_at_eos);
  tcase_add_test (tc, test_untimed_frames);
  tcase_add_test (tc, test_caps_change);
  tcase_add_test (tc, test_size_not_taken);
  tcase_add_test (tc, test_frame_sizes);
  tcase_add_test (tc, test_pads_against_model);
  tcase_add_test (tc, test_bad_weights);
  tcase_add_test (tc, test_backend_cuda_without_device);
  tcase_add_test (tc, test_live_camera_stops);
  return s;
}

P3D_CHECK_MAIN (camencode);
