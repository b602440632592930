/* The CUDA path of voxelize, pillarfeat, nms and bevpool as elements:
 * backend=cuda gives exactly the bytes of backend=cpu on the same inputs,
 * with the output negotiated in system memory and in memory:CUDAMemory
 * (read back through the host copy of a map), over several frames whose
 * counts go up and down through the same pool (the output_clean steady
 * state); the chain voxelize ! pillarfeat with CUDA memory between them
 * equals the CPU chain; active-backend reads cuda. Needs a GPU. */
#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "bevpool.h"
#include "elemtest.h"
#include "half.h"
#include "nms.h"
#include "p3dperception.h"
#include "p3dtest.h"
#include "voxelize.h"

#define CUDA_FEATURE "(" P3D_CAPS_FEATURE_MEMORY_CUDA ")"

/* What one element is compared on: its properties (without backend), its
 * input caps, the media type and fields of its output caps. */
typedef struct
{
  const gchar *element;
  const gchar *properties;
  const gchar *src_caps;
  const gchar *sink_media_type;
  const gchar *sink_fields;
} Setup;

static GstHarness *
setup_harness (const Setup * setup, const gchar * backend, gboolean cuda_out)
{
  gchar *launch = g_strdup_printf ("%s backend=%s %s", setup->element,
      backend, setup->properties);
  gchar *sink_caps = g_strdup_printf ("%s%s%s", setup->sink_media_type,
      cuda_out ? CUDA_FEATURE : "", setup->sink_fields);
  GstHarness *h = gst_harness_new_parse (launch);

  gst_harness_set_src_caps_str (h, setup->src_caps);
  gst_harness_set_sink_caps_str (h, sink_caps);
  g_free (launch);
  g_free (sink_caps);
  return h;
}

static void
assert_active_backend (GstHarness * h, const gchar * element, gint expected)
{
  GstElement *e = gst_harness_find_element (h, element);
  gint active = -1;

  fail_unless (e != NULL, "no %s", element);
  g_object_get (e, "active-backend", &active, NULL);
  fail_unless_equals_int (active, expected);
  gst_object_unref (e);
}

/* Every tensor of @cuda_out equals @cpu_out's, and lives in CUDA memory
 * exactly when @cuda_memory. */
static void
assert_same_output (GstBuffer * cuda_out, GstBuffer * cpu_out,
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

/* Pushes @inputs in order through backend=cuda (output in system memory,
 * then in CUDA memory) and backend=cpu, comparing frame by frame. */
static void
compare_backends (const Setup * setup, GstBuffer ** inputs, guint n_inputs)
{
  guint cuda_out, i;

  for (cuda_out = 0; cuda_out < 2; cuda_out++) {
    GstHarness *cpu = setup_harness (setup, "cpu", FALSE);
    GstHarness *cuda = setup_harness (setup, "cuda", cuda_out);

    assert_active_backend (cuda, setup->element, P3D_BACKEND_CUDA);
    assert_active_backend (cpu, setup->element, P3D_BACKEND_CPU);
    for (i = 0; i < n_inputs; i++) {
      gchar *what = g_strdup_printf ("%s %s, output in %s memory, frame %u",
          setup->element, setup->properties, cuda_out ? "CUDA" : "system", i);
      GstBuffer *expected, *actual;

      fail_unless_equals_int (gst_harness_push (cpu,
              gst_buffer_ref (inputs[i])), GST_FLOW_OK);
      fail_unless_equals_int (gst_harness_push (cuda,
              gst_buffer_ref (inputs[i])), GST_FLOW_OK);
      expected = gst_harness_pull (cpu);
      actual = gst_harness_pull (cuda);
      fail_unless (expected != NULL && actual != NULL, "%s: no output", what);
      assert_same_output (actual, expected, cuda_out, what);
      gst_buffer_unref (expected);
      gst_buffer_unref (actual);
      g_free (what);
    }
    gst_harness_teardown (cpu);
    gst_harness_teardown (cuda);
  }
}

static void
unref_all (GstBuffer ** buffers, guint n)
{
  guint i;

  for (i = 0; i < n; i++)
    gst_buffer_unref (buffers[i]);
}

/* Random xyzi points, most of them in a small part of the KITTI range. */
static GstBuffer *
points_buffer (guint64 seed, gsize n_points, gfloat ** copy)
{
  gfloat *points = g_new (gfloat, n_points * 4 + 1);
  P3dTestRng rng;
  gsize i;

  p3d_test_rng_init (&rng, seed);
  for (i = 0; i < n_points; i++) {
    points[i * 4 + 0] = p3d_test_rng_uniform (&rng, -2.0f, 12.0f);
    points[i * 4 + 1] = p3d_test_rng_uniform (&rng, -3.0f, 3.0f);
    points[i * 4 + 2] = p3d_test_rng_uniform (&rng, -3.5f, 1.5f);
    points[i * 4 + 3] = p3d_test_rng_uniform (&rng, 0.0f, 1.0f);
  }
  if (copy)
    *copy = points;
  if (n_points == 0) {
    if (!copy)
      g_free (points);
    /* an empty sweep: a buffer without memory, as appsrc pushes it */
    return gst_buffer_new ();
  }
  {
    GstBuffer *buffer = gst_buffer_new_memdup (points, n_points * 16);

    if (!copy)
      g_free (points);
    return buffer;
  }
}

/* Frames of these sizes: the voxel count goes up and down, to empty and
 * back, and saturates max-voxels. */
static const gsize frame_points[] = { 3000, 400, 0, 6000, 1200, 1, 6000, 50 };

GST_START_TEST (test_voxelize)
{
  static const gchar *const properties[] = {
    /* KITTI pillars (dense cell table), saturated */
    "max-points=8 max-voxels=500",
    /* a 3D grid of 52,500 cells */
    "voxel-size=\"<0.2,0.2,0.2>\" range=\"<-2,-3,-3.5,12,3,1.5>\" "
        "max-points=4 max-voxels=20000",
    /* 3.4 million cells: the hash table */
    "voxel-size=\"<0.05,0.05,0.05>\" range=\"<-2,-3,-3.5,12,3,1.5>\" "
        "max-points=2 max-voxels=8000",
  };
  GstBuffer *inputs[G_N_ELEMENTS (frame_points)];
  guint p, i;

  for (i = 0; i < G_N_ELEMENTS (frame_points); i++)
    inputs[i] = points_buffer (100 + i, frame_points[i], NULL);
  for (p = 0; p < G_N_ELEMENTS (properties); p++) {
    Setup setup = { "voxelize", properties[p],
      "application/x-point-cloud, format=xyzi", "application/x-voxels", ""
    };

    compare_backends (&setup, inputs, G_N_ELEMENTS (inputs));
  }
  unref_all (inputs, G_N_ELEMENTS (inputs));
}

GST_END_TEST;

static const gdouble kitti_voxel_size[3] = { 0.16, 0.16, 4.0 };
static const gdouble kitti_range[6] = { 0.0, -39.68, -3.0, 69.12, 39.68, 1.0 };

#define PILLAR_MAX_VOXELS 500
#define PILLAR_MAX_POINTS 8

/* The voxels of a random sweep, as voxelize hands them over. */
static GstBuffer *
voxels_buffer (guint64 seed, gsize n_points)
{
  guint v = PILLAR_MAX_VOXELS, p = PILLAR_MAX_POINTS;
  gconstpointer data[4];
  gsize sizes[4] = { (gsize) v * p * 16, (gsize) v * 4, (gsize) v * 16, 4 };
  gpointer tensors[4];
  P3dVoxelizeParams params;
  P3dVoxelizeOutput out;
  GstBuffer *buffer, *points_in;
  gfloat *points;
  guint i;

  points_in = points_buffer (seed, n_points, &points);
  gst_buffer_unref (points_in);
  fail_unless_equals_int (p3d_voxelize_params_init (&params, kitti_voxel_size,
          kitti_range, 4, p, v), P3D_OK);
  for (i = 0; i < 4; i++)
    data[i] = tensors[i] = g_malloc0 (sizes[i]);
  out.voxels = tensors[0];
  out.num_points = tensors[1];
  out.coords = tensors[2];
  out.count = tensors[3];
  out.stats = NULL;
  fail_unless_equals_int (p3d_voxelize_cpu (&params, points, n_points, &out),
      P3D_OK);
  buffer = elemtest_tensors_buffer (4, data, sizes);
  for (i = 0; i < 4; i++)
    g_free (tensors[i]);
  g_free (points);
  return buffer;
}

static gchar *
voxels_caps (void)
{
  P3dVoxelsInfo info;
  GstCaps *caps;
  gchar *text;

  p3d_voxels_info_init (&info);
  fail_unless (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI,
          PILLAR_MAX_VOXELS, PILLAR_MAX_POINTS, kitti_voxel_size, kitti_range));
  caps = p3d_voxels_info_to_caps (&info);
  text = gst_caps_to_string (caps);
  gst_caps_unref (caps);
  return text;
}

GST_START_TEST (test_pillarfeat)
{
  static const gchar *const sets[] = { "pointpillars-10", "mmdet3d-9",
    "pointpillars-11"
  };
  GstBuffer *inputs[G_N_ELEMENTS (frame_points)];
  gchar *caps = voxels_caps ();
  guint s, half, i;

  for (i = 0; i < G_N_ELEMENTS (frame_points); i++)
    inputs[i] = voxels_buffer (200 + i, frame_points[i]);
  for (s = 0; s < G_N_ELEMENTS (sets); s++) {
    for (half = 0; half < 2; half++) {
      gchar *properties = g_strdup_printf ("features=%s", sets[s]);
      Setup setup = { "pillarfeat", properties, caps,
        "application/x-pillar-features", half ? ", format=F16" : ", format=F32"
      };

      compare_backends (&setup, inputs, G_N_ELEMENTS (inputs));
      g_free (properties);
    }
  }
  unref_all (inputs, G_N_ELEMENTS (inputs));
  g_free (caps);
}

GST_END_TEST;

/* Clusters of overlapping boxes, scores with ties, three labels. */
static GstBuffer *
boxes_buffer (P3dNmsMode mode, guint max_boxes, guint count, guint32
    count_written, guint64 seed)
{
  gsize record_size = p3d_nms_record_size (mode);
  guint8 *records = g_malloc0 (max_boxes * record_size);
  gconstpointer data[2] = { records, &count_written };
  gsize sizes[2] = { max_boxes * record_size, 4 };
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
    if (mode == P3D_NMS_IOU) {
      P3dBox2d *b = (P3dBox2d *) records + i;
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
      P3dBox3d *b = (P3dBox3d *) records + i;

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
  }
  buffer = elemtest_tensors_buffer (2, data, sizes);
  g_free (records);
  return buffer;
}

GST_START_TEST (test_nms)
{
  static const struct
  {
    P3dNmsMode mode;
    const gchar *properties;
  } modes[] = {
    {P3D_NMS_BEV_ROTATED, "mode=bev-rotated iou-threshold=0.1"},
    {P3D_NMS_BEV_ALIGNED, "mode=bev-aligned iou-threshold=0.2 per-class=true"},
    {P3D_NMS_CIRCLE, "mode=circle distance-threshold=1.5 post-max=50"},
    {P3D_NMS_IOU, "mode=iou iou-threshold=0.5 offset=1 pre-max=300"},
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
          modes[m].mode == P3D_NMS_IOU ? "application/x-boxes2d" :
          "application/x-boxes3d", max_boxes);
      Setup setup = { "nms", modes[m].properties, caps,
        modes[m].mode == P3D_NMS_IOU ? "application/x-boxes2d" :
            "application/x-boxes3d", ""
      };

      for (i = 0; i < G_N_ELEMENTS (counts); i++)
        inputs[i] = boxes_buffer (modes[m].mode, max_boxes, counts[i],
            written[i], 1000 * c + 10 * m + i);
      compare_backends (&setup, inputs, G_N_ELEMENTS (inputs));
      unref_all (inputs, G_N_ELEMENTS (inputs));
      g_free (caps);
    }
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
    Setup setup = { "nms", "mode=bev-rotated",
      "application/x-boxes3d, max-boxes=(int)128", "application/x-boxes3d",
      ""
    };
    GstHarness *cpu = setup_harness (&setup, "cpu", FALSE);
    GstHarness *cuda = setup_harness (&setup, "cuda", cuda_out);
    GstBuffer *frames[2], *expected, *actual;
    guint f;

    frames[0] = boxes_buffer (P3D_NMS_BEV_ROTATED, 128, 100, 100, 77);
    frames[1] = boxes_buffer (P3D_NMS_BEV_ROTATED, 32, 32, 100, 78);
    for (f = 0; f < 2; f++) {
      gchar *what = g_strdup_printf ("renegotiated nms, frame %u, output in "
          "%s memory", f, cuda_out ? "CUDA" : "system");

      if (f == 1) {
        gst_harness_set_src_caps_str (cpu, "application/x-boxes3d, "
            "max-boxes=(int)32");
        gst_harness_set_src_caps_str (cuda, "application/x-boxes3d, "
            "max-boxes=(int)32");
      }
      fail_unless_equals_int (gst_harness_push (cpu,
              gst_buffer_ref (frames[f])), GST_FLOW_OK);
      fail_unless_equals_int (gst_harness_push (cuda,
              gst_buffer_ref (frames[f])), GST_FLOW_OK);
      expected = gst_harness_pull (cpu);
      actual = gst_harness_pull (cuda);
      assert_same_output (actual, expected, cuda_out, what);
      gst_buffer_unref (expected);
      gst_buffer_unref (actual);
      g_free (what);
    }
    unref_all (frames, 2);
    gst_harness_teardown (cpu);
    gst_harness_teardown (cuda);
  }
}

GST_END_TEST;

/* bevpool: the rig of the CPU test (two cameras, 6 x 4 features, 16 x 8
 * cells), frames of random features and depth. */
#define BEV_CAMERAS 2
#define BEV_CHANNELS 3
#define BEV_WIDTH 6
#define BEV_HEIGHT 4
#define BEV_BINS 8

static GstBuffer *
camera_buffer (gboolean half, guint64 seed)
{
  gsize pixels = BEV_CAMERAS * BEV_WIDTH * BEV_HEIGHT, i;
  gsize n[2] = { pixels * BEV_CHANNELS, pixels * BEV_BINS };
  gsize sizes[2] = { n[0] * (half ? 2 : 4), n[1] * (half ? 2 : 4) };
  gpointer tensors[2] = { g_malloc (sizes[0]), g_malloc (sizes[1]) };
  P3dTestRng rng;
  GstBuffer *buffer;
  guint t;

  p3d_test_rng_init (&rng, seed);
  for (t = 0; t < 2; t++) {
    for (i = 0; i < n[t]; i++) {
      gfloat value = p3d_test_rng_uniform (&rng, t ? 0.0f : -1.0f, 1.0f);

      if (half)
        ((guint16 *) tensors[t])[i] = p3d_float_to_half (value);
      else
        ((gfloat *) tensors[t])[i] = value;
    }
  }
  buffer = elemtest_tensors_buffer (2, (const gconstpointer *) tensors, sizes);
  g_free (tensors[0]);
  g_free (tensors[1]);
  return buffer;
}

static gchar *
bevpool_properties (const gchar * calibration, const gchar * extra)
{
  return g_strdup_printf ("calibration=\"%s\" image-width=%u "
      "image-height=%u xbound=\"<-8,8,1>\" ybound=\"<-4,4,1>\" "
      "zbound=\"<-1,5,6>\" dbound=\"<1,9,1>\" %s", calibration,
      ELEMTEST_IMAGE_WIDTH, ELEMTEST_IMAGE_HEIGHT, extra);
}

static gchar *
bev_dir_with_calibration (guint variant, gchar ** path)
{
  GError *error = NULL;
  gchar *dir = g_dir_make_tmp ("bevpool-gpu-XXXXXX", &error), *json;
  P3dCameraCalib cameras[BEV_CAMERAS];

  fail_unless (dir != NULL, "%s", error ? error->message : "?");
  elemtest_rig (BEV_CAMERAS, variant, cameras);
  json = elemtest_calibration_json (cameras, BEV_CAMERAS, FALSE);
  *path = elemtest_write_file (dir, "calib.json", json);
  g_free (json);
  return dir;
}

GST_START_TEST (test_bevpool)
{
  static const gchar *const extras[] = { "", "layout=xy",
    "cell-rounding=floor", "zbound=\"<-1,5,2>\""
  };
  gchar *path, *dir = bev_dir_with_calibration (0, &path);
  guint half_in, half_out, e, i;

  for (half_in = 0; half_in < 2; half_in++) {
    gchar *caps = g_strdup_printf ("application/x-camera-features, "
        "format=%s, cameras=(int)%u, channels=(int)%u, depth-bins=(int)%u, "
        "width=(int)%u, height=(int)%u", half_in ? "F16" : "F32",
        BEV_CAMERAS, BEV_CHANNELS, BEV_BINS, BEV_WIDTH, BEV_HEIGHT);
    GstBuffer *inputs[4];

    for (i = 0; i < G_N_ELEMENTS (inputs); i++)
      inputs[i] = camera_buffer (half_in, 300 + i);
    for (half_out = 0; half_out < 2; half_out++) {
      for (e = 0; e < G_N_ELEMENTS (extras); e++) {
        gchar *properties = bevpool_properties (path, extras[e]);
        Setup setup = { "bevpool", properties, caps,
          "application/x-bev-features", half_out ? ", format=F16" :
              ", format=F32"
        };

        compare_backends (&setup, inputs, G_N_ELEMENTS (inputs));
        g_free (properties);
      }
    }
    unref_all (inputs, G_N_ELEMENTS (inputs));
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
  gchar *path_a, *path_b;
  gchar *dir_a = bev_dir_with_calibration (0, &path_a);
  gchar *dir_b = bev_dir_with_calibration (1, &path_b);
  gchar *properties = bevpool_properties (path_a, "");
  gchar *caps = g_strdup_printf ("application/x-camera-features, "
      "format=F32, cameras=(int)%u, channels=(int)%u, depth-bins=(int)%u, "
      "width=(int)%u, height=(int)%u", BEV_CAMERAS, BEV_CHANNELS, BEV_BINS,
      BEV_WIDTH, BEV_HEIGHT);
  Setup setup = { "bevpool", properties, caps, "application/x-bev-features",
    ""
  };
  guint cuda_out;

  for (cuda_out = 0; cuda_out < 2; cuda_out++) {
    GstHarness *cpu = setup_harness (&setup, "cpu", FALSE);
    GstHarness *cuda = setup_harness (&setup, "cuda", cuda_out);
    GstBuffer *input = camera_buffer (FALSE, 400);
    guint frame;

    for (frame = 0; frame < 3; frame++) {
      gchar *what = g_strdup_printf ("bevpool calibration change, frame %u",
          frame);
      GstBuffer *expected, *actual;

      if (frame == 1) {
        GstElement *a = gst_harness_find_element (cpu, "bevpool");
        GstElement *b = gst_harness_find_element (cuda, "bevpool");

        g_object_set (a, "calibration", path_b, NULL);
        g_object_set (b, "calibration", path_b, NULL);
        gst_object_unref (a);
        gst_object_unref (b);
      }
      fail_unless_equals_int (gst_harness_push (cpu, gst_buffer_ref (input)),
          GST_FLOW_OK);
      fail_unless_equals_int (gst_harness_push (cuda, gst_buffer_ref (input)),
          GST_FLOW_OK);
      expected = gst_harness_pull (cpu);
      actual = gst_harness_pull (cuda);
      assert_same_output (actual, expected, cuda_out, what);
      gst_buffer_unref (expected);
      gst_buffer_unref (actual);
      g_free (what);
    }
    {
      GstElement *b = gst_harness_find_element (cuda, "bevpool");
      guint64 updates = 0;

      g_object_get (b, "geometry-updates", &updates, NULL);
      fail_unless_equals_uint64 (updates, 2);
      gst_object_unref (b);
    }
    gst_buffer_unref (input);
    gst_harness_teardown (cpu);
    gst_harness_teardown (cuda);
  }
  g_free (properties);
  g_free (caps);
  g_free (path_a);
  g_free (path_b);
  elemtest_remove_dir (dir_a);
  elemtest_remove_dir (dir_b);
  g_free (dir_a);
  g_free (dir_b);
}

GST_END_TEST;

/* Counts the buffers entering pillarfeat whose tensors are all on the
 * device. */
static GstPadProbeReturn
count_device_buffers (GstPad * pad, GstPadProbeInfo * info, gpointer data)
{
  GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER (info);
  guint i, *count = data;
  gboolean device = gst_buffer_n_memory (buffer) == 4;

  for (i = 0; i < gst_buffer_n_memory (buffer); i++)
    device = device && p3d_is_cuda_memory (gst_buffer_peek_memory (buffer, i));
  if (device)
    (*count)++;
  return GST_PAD_PROBE_OK;
}

/* voxelize ! pillarfeat with the voxels in CUDA memory between them. */
GST_START_TEST (test_chain_in_cuda_memory)
{
  static const gchar *const chain = "voxelize backend=%s max-points=8 "
      "max-voxels=500 ! application/x-voxels%s ! pillarfeat backend=%s "
      "features=pointpillars-11";
  GstBuffer *inputs[G_N_ELEMENTS (frame_points)];
  guint cuda_out, i;

  for (i = 0; i < G_N_ELEMENTS (frame_points); i++)
    inputs[i] = points_buffer (500 + i, frame_points[i], NULL);
  for (cuda_out = 0; cuda_out < 2; cuda_out++) {
    gchar *cpu_launch = g_strdup_printf (chain, "cpu", "", "cpu");
    gchar *cuda_launch = g_strdup_printf (chain, "cuda", CUDA_FEATURE, "cuda");
    GstHarness *cpu = gst_harness_new_parse (cpu_launch);
    GstHarness *cuda = gst_harness_new_parse (cuda_launch);
    GstElement *pillarfeat = gst_harness_find_element (cuda, "pillarfeat");
    GstPad *sinkpad = gst_element_get_static_pad (pillarfeat, "sink");
    guint device_buffers = 0;

    gst_pad_add_probe (sinkpad, GST_PAD_PROBE_TYPE_BUFFER,
        count_device_buffers, &device_buffers, NULL);
    gst_object_unref (sinkpad);
    gst_object_unref (pillarfeat);
    gst_harness_set_src_caps_str (cpu, "application/x-point-cloud, "
        "format=xyzi");
    gst_harness_set_src_caps_str (cuda, "application/x-point-cloud, "
        "format=xyzi");
    gst_harness_set_sink_caps_str (cpu, "application/x-pillar-features");
    gst_harness_set_sink_caps_str (cuda, cuda_out ?
        "application/x-pillar-features" CUDA_FEATURE :
        "application/x-pillar-features");
    assert_active_backend (cuda, "voxelize", P3D_BACKEND_CUDA);
    assert_active_backend (cuda, "pillarfeat", P3D_BACKEND_CUDA);

    for (i = 0; i < G_N_ELEMENTS (inputs); i++) {
      gchar *what = g_strdup_printf ("chain, output in %s memory, frame %u",
          cuda_out ? "CUDA" : "system", i);
      GstBuffer *expected, *actual;

      fail_unless_equals_int (gst_harness_push (cpu,
              gst_buffer_ref (inputs[i])), GST_FLOW_OK);
      fail_unless_equals_int (gst_harness_push (cuda,
              gst_buffer_ref (inputs[i])), GST_FLOW_OK);
      expected = gst_harness_pull (cpu);
      actual = gst_harness_pull (cuda);
      assert_same_output (actual, expected, cuda_out, what);
      gst_buffer_unref (expected);
      gst_buffer_unref (actual);
      g_free (what);
    }
    fail_unless_equals_int (device_buffers, G_N_ELEMENTS (inputs));
    gst_harness_teardown (cpu);
    gst_harness_teardown (cuda);
    g_free (cpu_launch);
    g_free (cuda_launch);
  }
  unref_all (inputs, G_N_ELEMENTS (inputs));
}

GST_END_TEST;

static Suite *
elements_gpu_suite (void)
{
  Suite *s = suite_create ("elements_gpu");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_voxelize);
  tcase_add_test (tc, test_pillarfeat);
  tcase_add_test (tc, test_nms);
  tcase_add_test (tc, test_nms_renegotiated_smaller);
  tcase_add_test (tc, test_bevpool);
  tcase_add_test (tc, test_bevpool_calibration_change);
  tcase_add_test (tc, test_chain_in_cuda_memory);
  return s;
}

P3D_CHECK_MAIN (elements_gpu);
