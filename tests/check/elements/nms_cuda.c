/* nms's CUDA path as an element: backend=cuda keeps exactly the boxes (and
 * their velocities) of
 * backend=cpu, byte for byte, in every mode, at the capacities that pick
 * each of the device path's three sorts, with the output negotiated in
 * system memory and in memory:CUDAMemory, over frames whose counts go up
 * and down, to empty, to full and above max-boxes; and after caps
 * renegotiated to a smaller max-boxes mid-stream. Needs a GPU. */
#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "p3dtest-backend.h"
#include "p3dtest-elem.h"
#include "nms-private.h"
#include "p3dtest.h"

/* Clusters of overlapping boxes, scores with ties, three labels; with
 * @velocity (3D boxes) each box's vx, vy after the count. */
static GstBuffer *
boxes_buffer_velocity (P3dcNmsMode mode, guint max_boxes, guint count, guint32
    count_written, guint64 seed, gboolean velocity)
{
  gsize record_size = p3dc_nms_record_size (mode);
  guint8 *records = g_malloc0 (max_boxes * record_size);
  gfloat *speeds = g_new0 (gfloat, 2 * max_boxes);
  gconstpointer data[3] = { records, &count_written, speeds };
  gsize sizes[3] = { max_boxes * record_size, 4, max_boxes * 8 };
  const gfloat nan_value = NAN;
  gfloat cx = 0, cy = 0, yaw = 0;
  P3dTestRng rng;
  GstBuffer *buffer;
  guint i;

  p3d_test_rng_init (&rng, seed);
  for (i = 0; i < count; i++) {
    gfloat score = p3d_test_rng_below (&rng, 64) / 64.0f;
    gint32 label = (gint32) p3d_test_rng_below (&rng, 3);

    if (i % 6 == 0) {
      cx = p3d_test_rng_uniform (&rng, 0.0f, 70.0f);
      cy = p3d_test_rng_uniform (&rng, -35.0f, 35.0f);
      yaw = p3d_test_rng_uniform (&rng, -3.14f, 3.14f);
    }
    if (mode == P3DC_NMS_IOU) {
      P3dcBox2d *b = (P3dcBox2d *) records + i;
      gfloat x = cx * 10 + p3d_test_rng_uniform (&rng, -4.0f, 4.0f);
      gfloat y = cy * 10 + p3d_test_rng_uniform (&rng, -4.0f, 4.0f);
      gfloat w = p3d_test_rng_uniform (&rng, 10.0f, 40.0f);

      b->x1 = x;
      b->y1 = y;
      b->x2 = x + w;
      b->y2 = y + w * 0.75f;
      b->score = score;
      b->label = label;
    } else {
      P3dcBox3d *b = (P3dcBox3d *) records + i;

      b->x = cx + p3d_test_rng_uniform (&rng, -0.8f, 0.8f);
      b->y = cy + p3d_test_rng_uniform (&rng, -0.8f, 0.8f);
      b->z = -1.0f;
      b->dx = p3d_test_rng_uniform (&rng, 3.5f, 4.3f);
      b->dy = p3d_test_rng_uniform (&rng, 1.5f, 1.8f);
      b->dz = 1.5f;
      b->yaw = yaw + p3d_test_rng_uniform (&rng, -0.3f, 0.3f);
      b->score = score;
      b->label = label;
    }
    /* now and then a record to drop: a NaN first field */
    if (i % 17 == 16)
      memcpy (records + i * record_size, &nan_value, 4);
    speeds[2 * i] = p3d_test_rng_uniform (&rng, -20.0f, 20.0f);
    speeds[2 * i + 1] = p3d_test_rng_uniform (&rng, -20.0f, 20.0f);
  }
  buffer = elemtest_tensors_buffer (velocity ? 3 : 2, data, sizes);
  g_free (records);
  g_free (speeds);
  return buffer;
}

static GstBuffer *
boxes_buffer (P3dcNmsMode mode, guint max_boxes, guint count, guint32
    count_written, guint64 seed)
{
  return boxes_buffer_velocity (mode, max_boxes, count, count_written, seed,
      FALSE);
}

GST_START_TEST (test_nms)
{
  static const struct
  {
    P3dcNmsMode mode;
    const gchar *properties;
  } modes[] = {
    {P3DC_NMS_BEV_ROTATED, "mode=bev-rotated iou-threshold=0.1"},
    {P3DC_NMS_BEV_ALIGNED, "mode=bev-aligned iou-threshold=0.2 per-class=true"},
    {P3DC_NMS_CIRCLE, "mode=circle distance-threshold=1.5 post-max=50"},
    {P3DC_NMS_IOU, "mode=iou iou-threshold=0.5 offset=1 pre-max=300"},
  };
  /* the three sorts of the device path: one small block, one large block,
   * the device radix sort */
  static const guint capacities[] = { 64, 2000, 6000 };
  guint m, c, i;

  for (c = 0; c < G_N_ELEMENTS (capacities); c++) {
    guint max_boxes = capacities[c];
    /* counts up and down, an empty frame, a full one, and a count above
     * max-boxes (clamped) */
    guint counts[] = { max_boxes * 2 / 3, max_boxes / 6, 0, max_boxes,
      max_boxes / 2, 1, max_boxes
    };
    guint32 written[G_N_ELEMENTS (counts)];

    memcpy (written, counts, sizeof (counts));
    written[G_N_ELEMENTS (counts) - 1] = max_boxes + 10;
    for (m = 0; m < G_N_ELEMENTS (modes); m++) {
      GstBuffer *inputs[G_N_ELEMENTS (counts)];
      gchar *caps = g_strdup_printf ("%s, max-boxes=(int)%u",
          modes[m].mode == P3DC_NMS_IOU ? "application/x-boxes2d" :
          "application/x-boxes3d", max_boxes);
      BackendtestSetup setup = { "nms", modes[m].properties, caps,
        modes[m].mode == P3DC_NMS_IOU ? "application/x-boxes2d" :
            "application/x-boxes3d", ""
      };

      for (i = 0; i < G_N_ELEMENTS (counts); i++)
        inputs[i] = boxes_buffer (modes[m].mode, max_boxes, counts[i],
            written[i], 1000 * c + 10 * m + i);
      backendtest_compare (&setup, inputs, G_N_ELEMENTS (inputs));
      backendtest_unref_all (inputs, G_N_ELEMENTS (inputs));
      g_free (caps);
    }
  }
}

GST_END_TEST;

/* 3D boxes with a velocity: the device gather carries the same velocities
 * as the reference path, in each sort of the device path. */
GST_START_TEST (test_nms_velocity)
{
  static const gchar *const modes[] = { "mode=bev-rotated iou-threshold=0.1",
    "mode=circle distance-threshold=1.5 post-max=50"
  };
  static const guint capacities[] = { 64, 2000, 6000 };
  guint m, c, i;

  for (c = 0; c < G_N_ELEMENTS (capacities); c++)
    for (m = 0; m < G_N_ELEMENTS (modes); m++) {
      guint max_boxes = capacities[c];
      guint counts[] = { max_boxes * 2 / 3, 0, max_boxes, max_boxes / 3 };
      GstBuffer *inputs[G_N_ELEMENTS (counts)];
      gchar *caps = g_strdup_printf ("application/x-boxes3d, "
          "max-boxes=(int)%u, velocity=true", max_boxes);
      BackendtestSetup setup = { "nms", modes[m], caps,
        "application/x-boxes3d", ""
      };

      for (i = 0; i < G_N_ELEMENTS (counts); i++)
        inputs[i] = boxes_buffer_velocity (m == 0 ? P3DC_NMS_BEV_ROTATED :
            P3DC_NMS_CIRCLE, max_boxes, counts[i], counts[i],
            5000 + 100 * c + 10 * m + i, TRUE);
      backendtest_compare (&setup, inputs, G_N_ELEMENTS (inputs));
      backendtest_unref_all (inputs, G_N_ELEMENTS (inputs));
      g_free (caps);
    }
}

GST_END_TEST;

/* Caps renegotiated to a smaller max-boxes mid-stream: a workspace sized
 * for the old caps must not read past the new, smaller records tensor when
 * a frame's count is above max-boxes. */
GST_START_TEST (test_nms_renegotiated_smaller)
{
  guint cuda_out;

  for (cuda_out = 0; cuda_out < 2; cuda_out++) {
    BackendtestSetup setup = { "nms", "mode=bev-rotated",
      "application/x-boxes3d, max-boxes=(int)128", "application/x-boxes3d",
      ""
    };
    GstHarness *cpu = backendtest_harness (&setup, "cpu", FALSE);
    GstHarness *cuda = backendtest_harness (&setup, "cuda", cuda_out);
    GstBuffer *frames[2];
    guint f;

    frames[0] = boxes_buffer (P3DC_NMS_BEV_ROTATED, 128, 100, 100, 77);
    frames[1] = boxes_buffer (P3DC_NMS_BEV_ROTATED, 32, 32, 100, 78);
    for (f = 0; f < 2; f++) {
      gchar *what = g_strdup_printf ("renegotiated nms, frame %u, output in "
          "%s memory", f, cuda_out ? "CUDA" : "system");

      if (f == 1) {
        gst_harness_set_src_caps_str (cpu, "application/x-boxes3d, "
            "max-boxes=(int)32");
        gst_harness_set_src_caps_str (cuda, "application/x-boxes3d, "
            "max-boxes=(int)32");
      }
      backendtest_push_compare (cpu, cuda, frames[f], cuda_out, what);
      g_free (what);
    }
    backendtest_unref_all (frames, 2);
    gst_harness_teardown (cpu);
    gst_harness_teardown (cuda);
  }
}

GST_END_TEST;

/* On a GPU whose blocks have less shared memory than Hopper's the CUDA path
 * takes fewer boxes a frame (p3dc_nms_device_capacity: 23,536 with the
 * 99 KB of sm_86, sm_89 and sm_120, simulated here): caps of more are
 * refused with an error that says so and what to change, and caps within
 * it are taken (20000 boxes, or the GPU's own capacity where that is
 * less). */
GST_START_TEST (test_nms_device_capacity)
{
  static const gchar *const needles[] = { "max-boxes 30000",
    "on this GPU", "backend=cpu", NULL
  };
  guint32 most = 0;
  guint n;
  gchar *caps, *text;
  BackendtestSetup setup = { "nms", "mode=circle", NULL,
    "application/x-boxes3d", ""
  };
  GstHarness *cpu, *cuda;
  GstBuffer *frame;

  p3dc_nms_limit_shared_memory (101376);
  fail_unless_equals_int (p3dc_nms_device_capacity (&most), P3DC_OK);
  n = MIN (20000, most);
  text = elemtest_expect_caps_refused ("nms backend=cuda mode=circle",
      "application/x-boxes3d, max-boxes=(int)30000", "application/x-boxes3d",
      GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_SETTINGS, needles);
  g_free (text);
  caps = g_strdup_printf ("application/x-boxes3d, max-boxes=(int)%u", n);
  setup.src_caps = caps;
  cpu = backendtest_harness (&setup, "cpu", FALSE);
  cuda = backendtest_harness (&setup, "cuda", FALSE);
  frame = boxes_buffer (P3DC_NMS_CIRCLE, n, n, n, 79);
  backendtest_push_compare (cpu, cuda, frame, FALSE,
      "boxes within the simulated GPU's capacity");
  backendtest_unref_all (&frame, 1);
  gst_harness_teardown (cpu);
  gst_harness_teardown (cuda);
  g_free (caps);
  p3dc_nms_limit_shared_memory (0);
}

GST_END_TEST;

/* A test that failed before it lifted its shared-memory limit leaves none
 * to the next (under CK_FORK=no they share the process). */
static void
limit_teardown (void)
{
  p3dc_nms_limit_shared_memory (0);
}

static Suite *
nms_cuda_suite (void)
{
  Suite *s = suite_create ("nms_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_checked_fixture (tc, NULL, limit_teardown);
  tcase_add_test (tc, test_nms);
  tcase_add_test (tc, test_nms_renegotiated_smaller);
  tcase_add_test (tc, test_nms_velocity);
  tcase_add_test (tc, test_nms_device_capacity);
  return s;
}

P3D_CHECK_MAIN (nms_cuda);
