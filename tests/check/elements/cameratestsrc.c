/* cameratestsrc: golden hashes per format and emit mode, determinism, the
 * ground's depth and classes worked out by hand for a level camera, the
 * same objects as pointcloudtestsrc's boxes at the same timestamps (and at
 * another framerate), the format conversions against the RGB image, caps
 * and image sizes, and calibration and property errors.
 *
 * The test camera "front" looks along +x from 0.4 m ahead of the lidar and
 * 0.3 m below it: 1.43 m above the ground with the default sensor-height
 * (1.73 m), level, fx = fy = 80 on a 160 x 64 image with its principal
 * point at (80, 16). Pixel (u, v)'s ray is (x, y, 1) in the camera frame
 * with x = (u - 80) / 80, y = (v - 16) / 80, that is (1, -x, -y) in the
 * lidar frame: it meets the ground at depth 1.43 * 80 / (v - 16), at
 * y_lidar = -x * depth. */
#include <stdlib.h>
#include <string.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#include "p3dtest-elem.h"
#include "p3dtest.h"

#define CALIBRATION \
  "{\"cameras\": [\n" \
  " {\"name\": \"front\", \"intrinsics\": [[80, 0, 80], [0, 80, 16], " \
  "[0, 0, 1]],\n" \
  "  \"camera_to_lidar\": [[0, 0, 1, 0.4], [-1, 0, 0, 0], [0, -1, 0, -0.3], " \
  "[0, 0, 0, 1]], \"image_size\": [160, 64]},\n" \
  " {\"name\": \"left\", \"intrinsics\": [[80, 0, 80], [0, 80, 16], " \
  "[0, 0, 1]],\n" \
  "  \"camera_to_lidar\": [[1, 0, 0, 0.2], [0, 0, 1, 0.5], [0, -1, 0, -0.3], " \
  "[0, 0, 0, 1]], \"image_size\": [160, 64]},\n" \
  " {\"name\": \"nosize\", \"intrinsics\": [[40, 0, 30.2], [0, 40, 11.6], " \
  "[0, 0, 1]],\n" \
  "  \"camera_to_lidar\": [[0, 0, 1, 0.4], [-1, 0, 0, 0], [0, -1, 0, -0.3], " \
  "[0, 0, 0, 1]]}\n" "]}\n"

#define WIDTH 160
#define HEIGHT 64
#define FOCAL 80.0
#define CX 80.0
#define CY 16.0
#define CAMERA_HEIGHT 1.43
#define CAMERA_AHEAD 0.4

/* An empty street: ground and sky only. */
#define EMPTY "cars=0 pedestrians=0 cyclists=0 walls=false"

static gchar *dir;
static gchar *calibration;

static void
setup (void)
{
  dir = g_dir_make_tmp ("cameratestsrc-XXXXXX", NULL);
  fail_unless (dir != NULL);
  calibration = elemtest_write_file (dir, "rig.json", CALIBRATION);
}

static void
teardown (void)
{
  elemtest_remove_dir (dir);
  g_free (dir);
  g_free (calibration);
}

/* A harness of "cameratestsrc calibration=<the test rig> @properties"
 * asking for @caps, playing. */
static GstHarness *
source (const gchar * properties, const gchar * caps)
{
  gchar *launch = g_strdup_printf ("cameratestsrc calibration=%s %s",
      calibration, properties);
  GstHarness *h = gst_harness_new_parse (launch);

  g_free (launch);
  gst_harness_set_sink_caps_str (h, caps);
  gst_harness_play (h);
  return h;
}

/* The next frame of @h, mapped as its caps say (unmap and unref it). */
static void
pull_frame (GstHarness * h, GstVideoFrame * frame)
{
  GstBuffer *buffer = gst_harness_pull (h);
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  GstVideoInfo info;

  fail_unless (buffer != NULL);
  fail_unless (caps != NULL);
  fail_unless (gst_video_info_from_caps (&info, caps));
  fail_unless (gst_video_frame_map (frame, &info, buffer, GST_MAP_READ));
  gst_buffer_unref (buffer);
  gst_caps_unref (caps);
}

static void
frame_clear (GstVideoFrame * frame)
{
  GstBuffer *buffer = frame->buffer;

  gst_buffer_ref (buffer);
  gst_video_frame_unmap (frame);
  gst_buffer_unref (buffer);
}

/* The bytes a frame shows, plane by plane and row by row, without the
 * padding at the end of a row. */
static GBytes *
frame_bytes (const GstVideoFrame * frame)
{
  GByteArray *bytes = g_byte_array_new ();
  guint plane;

  for (plane = 0; plane < GST_VIDEO_FRAME_N_PLANES (frame); plane++) {
    gint components[GST_VIDEO_MAX_COMPONENTS], component, row, row_bytes, rows;

    gst_video_format_info_component (frame->info.finfo, plane, components);
    component = components[0];
    row_bytes = GST_VIDEO_FRAME_COMP_WIDTH (frame, component) *
        GST_VIDEO_FRAME_COMP_PSTRIDE (frame, component);
    rows = GST_VIDEO_FRAME_COMP_HEIGHT (frame, component);
    for (row = 0; row < rows; row++)
      g_byte_array_append (bytes,
          (const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (frame, plane) +
          (gsize) row * GST_VIDEO_FRAME_PLANE_STRIDE (frame, plane), row_bytes);
  }
  return g_byte_array_free_to_bytes (bytes);
}

static gchar *
frame_sha256 (const GstVideoFrame * frame)
{
  GBytes *bytes = frame_bytes (frame);
  gsize size;
  gconstpointer data = g_bytes_get_data (bytes, &size);
  gchar *sha256 = g_compute_checksum_for_data (G_CHECKSUM_SHA256, data, size);

  g_bytes_unref (bytes);
  return sha256;
}

/* Frames @first .. @first + @n - 1 of a source: their bytes. */
static GPtrArray *
frames_bytes (const gchar * properties, const gchar * caps, guint n)
{
  GPtrArray *frames = g_ptr_array_new_with_free_func ((GDestroyNotify)
      g_bytes_unref);
  GstHarness *h = source (properties, caps);
  guint i;

  for (i = 0; i < n; i++) {
    GstVideoFrame frame;

    pull_frame (h, &frame);
    g_ptr_array_add (frames, frame_bytes (&frame));
    frame_clear (&frame);
  }
  gst_harness_teardown (h);
  return frames;
}

static guint16
depth_at (const GstVideoFrame * frame, gint column, gint row)
{
  const guint8 *p = (const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (frame, 0) +
      (gsize) row * GST_VIDEO_FRAME_PLANE_STRIDE (frame, 0) + column * 2;

  return (guint16) (p[0] | (p[1] << 8));
}

static guint8
byte_at (const GstVideoFrame * frame, guint plane, gint column, gint row,
    gint pixel_stride, gint offset)
{
  return ((const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (frame, plane))
      [(gsize) row * GST_VIDEO_FRAME_PLANE_STRIDE (frame, plane) +
      column * pixel_stride + offset];
}

/* The SHA-256 of frames 0 and 2 for every format and emit mode, pinned:
 * the test below checks determinism within one process, this one across
 * machines, compilers and C libraries (the renderer computes in float32
 * without fast-math, its own sines, integer noise). The hashes were
 * computed once by this test on x86-64 (gcc 12, glibc, -ffp-contract=off),
 * printed by the failure message, and written here; a deliberate change of
 * the rendering changes them, and the new values are taken from the
 * message after checking the frames still look right. */
GST_START_TEST (test_golden_hashes)
{
  static const struct
  {
    const gchar *properties;
    const gchar *caps;
    const gchar *sha256[2];
  } cases[] = {
    {"seed=1", "video/x-raw, format=RGB", {
                "db67af4190c0c05e129e76c39bfcae2c8b48f9ce6716cb3e2968dc99535fca0a",
            "66e5cafc2d9054aad38bad796b3564138671cc7db81c9a23346ad26c2efb3da8"}},
    {"seed=1", "video/x-raw, format=BGRx", {
                "0ba57a32a85abc42fe7f8f053632950b9b35a47c4dbcb3484cd1683ab59a6a96",
            "f81bf45deac96f7cf17762068036fa91d0ab05603a6e779d5f4608dc109c1c0e"}},
    {"seed=1", "video/x-raw, format=RGBA", {
                "48ca8866001b91c9dbba61ebf6b7329fb22096087203818c1c24c3d31c39e75f",
            "c5a5183ee91e871c40c86ff9c0a1efe94349e638b7528ad725a1041be0cf8e51"}},
    {"seed=1", "video/x-raw, format=I420", {
                "6b6b6dc8c6db3b4fd07cb45132d2c301f68c9d33350976a14d530b10be5b6213",
            "6c9177cc3a56b5ecf8b0b3ee6e1cd2bf71d29ada8bc0f9d877cb5f13ee8eda86"}},
    {"seed=1", "video/x-raw, format=NV12", {
                "3f7b4be3e99dcaaecb047862ec8105f55e06bae74ed8d23dcf363a74729e1e23",
            "ebdbeab33490ccd2592e09c32b6fb5dc35f122874ad53a19c07c3dd55ab90129"}},
    {"seed=1 emit=depth", "video/x-raw, format=GRAY16_LE", {
                "d117be5bbf9e9161659bd1be35da3ceac00824e068032afbfafed0b081706402",
            "4e1d3ad39eef006f9b68877f078b01e690c1af38a199ade71eceb8e07bc5b893"}},
    {"seed=1 emit=labels", "video/x-raw, format=GRAY8", {
                "24fbd7bb299f08a10d9893530c7acbee2007dee180cfeb9b1edddcb27320a571",
            "0c2442aa73eb9d89df2be1e53fcbdee68e0e03598767173e0a2e7d109b137784"}},
    {"seed=5 camera=1 sun-azimuth=-60 sun-elevation=20 noise=6 cars=40 "
          "pedestrians=30", "video/x-raw, format=RGB", {
                "4052f08bab278287e2c82e815e0f5e04545e119319715cb82e07567b3ebc6bc3",
            "01a6c47b12c5c7f423daf7e693833b42957343220db62da23226c3c43cbfed9e"}},
  };
  guint c, i;

  for (c = 0; c < G_N_ELEMENTS (cases); c++) {
    GstHarness *h = source (cases[c].properties, cases[c].caps);

    for (i = 0; i < 3; i++) {
      GstVideoFrame frame;
      gchar *sha256;

      pull_frame (h, &frame);
      sha256 = frame_sha256 (&frame);
      if (i != 1)
        fail_unless (strcmp (sha256, cases[c].sha256[i / 2]) == 0,
            "'%s' to %s, frame %u: SHA-256 %s, pinned %s",
            cases[c].properties, cases[c].caps, i, sha256,
            cases[c].sha256[i / 2]);
      g_free (sha256);
      frame_clear (&frame);
    }
    gst_harness_teardown (h);
  }
}

GST_END_TEST;

/* The same properties give the same bytes; another seed, another camera
 * (its own noise) or another frame give others; motion=false repeats
 * frame 0, noise and all. */
GST_START_TEST (test_determinism)
{
  const gchar *rgb = "video/x-raw, format=RGB";
  GPtrArray *a = frames_bytes ("seed=9", rgb, 2);
  GPtrArray *b = frames_bytes ("seed=9", rgb, 2);
  GPtrArray *seed = frames_bytes ("seed=10", rgb, 1);
  GPtrArray *frozen = frames_bytes ("seed=9 motion=false", rgb, 3);

  fail_unless (g_bytes_equal (a->pdata[0], b->pdata[0]));
  fail_unless (g_bytes_equal (a->pdata[1], b->pdata[1]));
  fail_unless (!g_bytes_equal (a->pdata[0], a->pdata[1]));
  fail_unless (!g_bytes_equal (a->pdata[0], seed->pdata[0]));
  fail_unless (g_bytes_equal (frozen->pdata[0], a->pdata[0]));
  fail_unless (g_bytes_equal (frozen->pdata[1], frozen->pdata[0]));
  fail_unless (g_bytes_equal (frozen->pdata[2], frozen->pdata[0]));
  g_ptr_array_unref (a);
  g_ptr_array_unref (b);
  g_ptr_array_unref (seed);
  g_ptr_array_unref (frozen);

  /* two cameras at one place differ by their noise only: the same picture
   * without it */
  {
    gchar *two = g_strdup_printf ("{\"cameras\": [%s, %s]}",
        "{\"intrinsics\": [[80, 0, 80], [0, 80, 16], [0, 0, 1]], "
        "\"camera_to_lidar\": [[0, 0, 1, 0.4], [-1, 0, 0, 0], "
        "[0, -1, 0, -0.3], [0, 0, 0, 1]], \"image_size\": [160, 64]}",
        "{\"intrinsics\": [[80, 0, 80], [0, 80, 16], [0, 0, 1]], "
        "\"camera_to_lidar\": [[0, 0, 1, 0.4], [-1, 0, 0, 0], "
        "[0, -1, 0, -0.3], [0, 0, 0, 1]], \"image_size\": [160, 64]}");
    gchar *path = elemtest_write_file (dir, "two.json", two);
    gchar *saved = calibration;
    GPtrArray *first, *second, *quiet_first, *quiet_second;

    calibration = path;
    first = frames_bytes ("camera=0", rgb, 1);
    second = frames_bytes ("camera=1", rgb, 1);
    quiet_first = frames_bytes ("camera=0 noise=0", rgb, 1);
    quiet_second = frames_bytes ("camera=1 noise=0", rgb, 1);
    calibration = saved;
    fail_unless (!g_bytes_equal (first->pdata[0], second->pdata[0]));
    fail_unless (g_bytes_equal (quiet_first->pdata[0], quiet_second->pdata[0]));
    g_ptr_array_unref (first);
    g_ptr_array_unref (second);
    g_ptr_array_unref (quiet_first);
    g_ptr_array_unref (quiet_second);
    g_free (path);
    g_free (two);
  }
}

GST_END_TEST;

/* The ground's depth for the level camera, worked out by hand: row v meets
 * the ground at 1.43 * 80 / (v - 16) metres, whatever the column; rows at
 * and above the horizon (row 16) see the sky (depth 0), and rows just
 * below it ground beyond 65.535 m (65535). */
GST_START_TEST (test_ground_depth)
{
  GstHarness *h = source (EMPTY " emit=depth",
      "video/x-raw, format=GRAY16_LE");
  static const gint columns[] = { 0, 37, 80, 159 };
  GstVideoFrame frame;
  gint row, k;

  pull_frame (h, &frame);
  fail_unless_equals_int (GST_VIDEO_FRAME_WIDTH (&frame), WIDTH);
  fail_unless_equals_int (GST_VIDEO_FRAME_HEIGHT (&frame), HEIGHT);
  for (row = 0; row < HEIGHT; row++) {
    for (k = 0; k < (gint) G_N_ELEMENTS (columns); k++) {
      guint16 depth = depth_at (&frame, columns[k], row);

      if (row <= CY) {
        fail_unless_equals_int (depth, 0);
      } else {
        gdouble metres = CAMERA_HEIGHT * FOCAL / (row - CY);
        gdouble expected = MIN (floor (metres * 1000.0 + 0.5), 65535.0);

        fail_unless (fabs (depth - expected) <= 1.0, "row %d column %d: "
            "%u mm, worked out %.0f", row, columns[k], depth, expected);
      }
    }
  }
  /* row 63: 1.43 * 80 / 47 = 2.43404 m */
  fail_unless_equals_int (depth_at (&frame, 80, 63), 2434);
  /* row 17: 114.4 m, beyond the format */
  fail_unless_equals_int (depth_at (&frame, 80, 17), 65535);
  frame_clear (&frame);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* The ground's classes, worked out by hand on row 20, which meets the
 * ground 28.6 m ahead (x = 29.0): column u sees y = -(u - 80) / 80 * 28.6,
 * so column 0 sees the left sidewalk (y = 28.6 > 10.5), column 75 the
 * solid centre line (y = 1.7875, within 0.075 m of 1.75), column 76 the
 * road beside it (y = 1.43), column 80 the road ahead (y = 0) and column
 * 159 the right sidewalk (y = -28.24 < -9.5); above the horizon, the sky.
 * With walls, the facades (14.5 m left, 13.5 m right, with gaps between
 * buildings) show at the image's sides. */
GST_START_TEST (test_ground_labels)
{
  GstHarness *h = source (EMPTY " emit=labels", "video/x-raw, format=GRAY8");
  GstVideoFrame frame;

  pull_frame (h, &frame);
  fail_unless_equals_int (byte_at (&frame, 0, 0, 20, 1, 0), 5);
  fail_unless_equals_int (byte_at (&frame, 0, 75, 20, 1, 0), 4);
  fail_unless_equals_int (byte_at (&frame, 0, 76, 20, 1, 0), 3);
  fail_unless_equals_int (byte_at (&frame, 0, 80, 20, 1, 0), 3);
  fail_unless_equals_int (byte_at (&frame, 0, 159, 20, 1, 0), 5);
  fail_unless_equals_int (byte_at (&frame, 0, 80, 5, 1, 0), 7);
  fail_unless_equals_int (byte_at (&frame, 0, 0, 0, 1, 0), 7);
  frame_clear (&frame);
  gst_harness_teardown (h);

  /* the facades: buildings (6) at both sides of the horizon */
  h = source ("cars=0 pedestrians=0 cyclists=0 emit=labels",
      "video/x-raw, format=GRAY8");
  pull_frame (h, &frame);
  {
    guint left = 0, right = 0;
    gint row, column;

    for (row = 0; row < 24; row++)
      for (column = 0; column < 20; column++) {
        left += byte_at (&frame, 0, column, row, 1, 0) == 6;
        right += byte_at (&frame, 0, WIDTH - 1 - column, row, 1, 0) == 6;
      }
    fail_unless (left > 100 && right > 100, "building pixels: %u left, %u "
        "right", left, right);
  }
  fail_unless_equals_int (byte_at (&frame, 0, 80, 20, 1, 0), 3);
  frame_clear (&frame);
  gst_harness_teardown (h);

  /* without the ground, the sky below the horizon too */
  h = source (EMPTY " ground=false emit=labels", "video/x-raw, format=GRAY8");
  pull_frame (h, &frame);
  fail_unless_equals_int (byte_at (&frame, 0, 80, 40, 1, 0), 7);
  frame_clear (&frame);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* The boxes of pointcloudtestsrc with the same seed, at the same
 * timestamp, are what the camera sees: where a box's centre projects into
 * the image and the pixel there is at the depth of the box (between its
 * centre's depth less its half diagonal and the centre's depth), the pixel
 * is of the box's class. Frame 2 (t = 0.2 s, things have moved); the same
 * instant at 20/1 (frame 4) gives the same depth and classes. */
GST_START_TEST (test_same_world_as_lidar)
{
  GPtrArray *boxes_run = elemtest_run_pipeline ("pointcloudtestsrc seed=3 "
      "cars=40 pedestrians=40 cyclists=20 emit=boxes num-buffers=3 ! "
      "appsink name=sink sync=false");
  GstBuffer *boxes = elemtest_sample_buffer (boxes_run, 2);
  GstHarness *labels = source ("seed=3 cars=40 pedestrians=40 cyclists=20 "
      "emit=labels", "video/x-raw, format=GRAY8");
  GstHarness *depths = source ("seed=3 cars=40 pedestrians=40 cyclists=20 "
      "emit=depth", "video/x-raw, format=GRAY16_LE");
  GstHarness *fast = source ("seed=3 cars=40 pedestrians=40 cyclists=20 "
      "emit=labels framerate=20/1", "video/x-raw, format=GRAY8");
  GstVideoFrame label_frame, depth_frame, fast_frame;
  GstMapInfo records, count_map;
  guint32 count, i, matched = 0;
  GBytes *a, *b;

  for (i = 0; i < 3; i++) {
    pull_frame (labels, &label_frame);
    pull_frame (depths, &depth_frame);
    if (i < 2) {
      frame_clear (&label_frame);
      frame_clear (&depth_frame);
    }
  }
  for (i = 0; i < 5; i++) {
    pull_frame (fast, &fast_frame);
    if (i < 4)
      frame_clear (&fast_frame);
  }
  a = frame_bytes (&label_frame);
  b = frame_bytes (&fast_frame);
  fail_unless (g_bytes_equal (a, b), "frame 4 at 20/1 shows another street "
      "than frame 2 at 10/1");
  g_bytes_unref (a);
  g_bytes_unref (b);

  fail_unless (gst_buffer_n_memory (boxes) == 2);
  fail_unless (gst_memory_map (gst_buffer_peek_memory (boxes, 0), &records,
          GST_MAP_READ));
  fail_unless (gst_memory_map (gst_buffer_peek_memory (boxes, 1), &count_map,
          GST_MAP_READ));
  memcpy (&count, count_map.data, sizeof (count));
  for (i = 0; i < count; i++) {
    gfloat box[9];
    gint32 label;
    gdouble depth, u, v, half_diagonal;
    gint column, row;
    guint16 seen;

    memcpy (box, records.data + i * 36, sizeof (box));
    memcpy (&label, records.data + i * 36 + 32, sizeof (label));
    /* the camera frame: x = -y, y = -(z + 0.3), z = x - 0.4 */
    depth = box[0] - CAMERA_AHEAD;
    if (depth < 2.0)
      continue;
    u = FOCAL * -box[1] / depth + CX;
    v = FOCAL * -(box[2] + 0.3) / depth + CY;
    column = (gint) floor (u + 0.5);
    row = (gint) floor (v + 0.5);
    if (column < 0 || column >= WIDTH || row < 0 || row >= HEIGHT)
      continue;
    half_diagonal = sqrt (box[3] * box[3] + box[4] * box[4] +
        box[5] * box[5]) / 2.0;
    seen = depth_at (&depth_frame, column, row);
    if (seen / 1000.0 < depth - half_diagonal - 0.01
        || seen / 1000.0 > depth + 0.01)
      continue;
    fail_unless_equals_int (byte_at (&label_frame, 0, column, row, 1, 0),
        label);
    matched++;
  }
  fail_unless (matched >= 5, "only %u boxes seen", matched);
  gst_memory_unmap (gst_buffer_peek_memory (boxes, 0), &records);
  gst_memory_unmap (gst_buffer_peek_memory (boxes, 1), &count_map);

  frame_clear (&label_frame);
  frame_clear (&depth_frame);
  frame_clear (&fast_frame);
  gst_harness_teardown (labels);
  gst_harness_teardown (depths);
  gst_harness_teardown (fast);
  g_ptr_array_unref (boxes_run);
}

GST_END_TEST;

/* Every packed RGB format holds the RGB image's components where the
 * format puts them (alpha and padding 255); I420 and NV12 hold BT.601
 * limited-range luma of every pixel and chroma of every 2 x 2 block's
 * rounded mean, computed here from the RGB image. */
GST_START_TEST (test_conversions)
{
  static const struct
  {
    const gchar *format;
    gint r, g, b, a;
  } packed[] = {
    {"BGR", 2, 1, 0, -1}, {"RGBx", 0, 1, 2, 3}, {"BGRx", 2, 1, 0, 3},
    {"xRGB", 1, 2, 3, 0}, {"xBGR", 3, 2, 1, 0}, {"RGBA", 0, 1, 2, 3},
    {"BGRA", 2, 1, 0, 3}, {"ARGB", 1, 2, 3, 0}, {"ABGR", 3, 2, 1, 0},
  };
  GstHarness *h = source ("seed=4", "video/x-raw, format=RGB");
  GstVideoFrame rgb, frame;
  guint k;
  gint row, column;

  pull_frame (h, &rgb);
  gst_harness_teardown (h);

  for (k = 0; k < G_N_ELEMENTS (packed); k++) {
    gchar *caps = g_strdup_printf ("video/x-raw, format=%s",
        packed[k].format);
    gint size = packed[k].a < 0 ? 3 : 4;

    h = source ("seed=4", caps);
    pull_frame (h, &frame);
    for (row = 0; row < HEIGHT; row++)
      for (column = 0; column < WIDTH; column++) {
        fail_unless_equals_int (byte_at (&frame, 0, column, row, size,
                packed[k].r), byte_at (&rgb, 0, column, row, 3, 0));
        fail_unless_equals_int (byte_at (&frame, 0, column, row, size,
                packed[k].g), byte_at (&rgb, 0, column, row, 3, 1));
        fail_unless_equals_int (byte_at (&frame, 0, column, row, size,
                packed[k].b), byte_at (&rgb, 0, column, row, 3, 2));
        if (packed[k].a >= 0)
          fail_unless_equals_int (byte_at (&frame, 0, column, row, size,
                  packed[k].a), 255);
      }
    frame_clear (&frame);
    gst_harness_teardown (h);
    g_free (caps);
  }

  for (k = 0; k < 2; k++) {
    gboolean nv12 = k == 1;

    h = source ("seed=4", nv12 ? "video/x-raw, format=NV12" :
        "video/x-raw, format=I420");
    pull_frame (h, &frame);
    for (row = 0; row < HEIGHT; row++)
      for (column = 0; column < WIDTH; column++) {
        gint r = byte_at (&rgb, 0, column, row, 3, 0);
        gint g = byte_at (&rgb, 0, column, row, 3, 1);
        gint b = byte_at (&rgb, 0, column, row, 3, 2);
        gdouble y = 16.0 + (65.738 * r + 129.057 * g + 25.064 * b) / 256.0;

        /* the integer formula is within a level of BT.601's */
        fail_unless (fabs (byte_at (&frame, 0, column, row, 1, 0) - y) <= 1.0,
            "luma at (%d, %d)", column, row);
        fail_unless_equals_int (byte_at (&frame, 0, column, row, 1, 0),
            (66 * r + 129 * g + 25 * b + 128) / 256 + 16);
      }
    for (row = 0; row < HEIGHT / 2; row++)
      for (column = 0; column < WIDTH / 2; column++) {
        gint sum[3] = { 0, 0, 0 }, c, dx, dy, u, v;

        for (dy = 0; dy < 2; dy++)
          for (dx = 0; dx < 2; dx++)
            for (c = 0; c < 3; c++)
              sum[c] += byte_at (&rgb, 0, 2 * column + dx, 2 * row + dy, 3, c);
        for (c = 0; c < 3; c++)
          sum[c] = (sum[c] + 2) / 4;
        u = (-38 * sum[0] - 74 * sum[1] + 112 * sum[2] + 128 + 32768) / 256;
        v = (112 * sum[0] - 94 * sum[1] - 18 * sum[2] + 128 + 32768) / 256;
        fail_unless_equals_int (byte_at (&frame, 1, column, row,
                nv12 ? 2 : 1, 0), u);
        fail_unless_equals_int (nv12 ? byte_at (&frame, 1, column, row, 2, 1) :
            byte_at (&frame, 2, column, row, 1, 0), v);
      }
    frame_clear (&frame);
    gst_harness_teardown (h);
  }
  frame_clear (&rgb);
}

GST_END_TEST;

/* Caps: the file's image size, the framerate, pixel-aspect-ratio 1/1 and
 * BT.601 for YUV; without an image size in the file, twice the principal
 * point (rounded), or what downstream asks for. */
GST_START_TEST (test_caps)
{
  GstHarness *h = source ("framerate=12/1", "video/x-raw");
  GstStructure *s;
  GstCaps *caps;
  GstBuffer *buffer;
  gint n, d, width, height;

  buffer = gst_harness_pull (h);
  caps = gst_pad_get_current_caps (h->sinkpad);
  s = gst_caps_get_structure (caps, 0);
  fail_unless_equals_string (gst_structure_get_string (s, "format"), "RGB");
  fail_unless (gst_structure_get_int (s, "width", &width)
      && gst_structure_get_int (s, "height", &height));
  fail_unless_equals_int (width, WIDTH);
  fail_unless_equals_int (height, HEIGHT);
  fail_unless (gst_structure_get_fraction (s, "framerate", &n, &d));
  fail_unless (n == 12 && d == 1);
  fail_unless (gst_structure_get_fraction (s, "pixel-aspect-ratio", &n, &d));
  fail_unless (n == 1 && d == 1);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (buffer), 0);
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (buffer), GST_SECOND / 12);
  gst_buffer_unref (buffer);
  buffer = gst_harness_pull (h);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (buffer), GST_SECOND / 12);
  fail_unless_equals_uint64 (GST_BUFFER_OFFSET (buffer), 1);
  gst_buffer_unref (buffer);
  gst_caps_unref (caps);
  gst_harness_teardown (h);

  h = source ("", "video/x-raw, format=I420");
  gst_buffer_unref (gst_harness_pull (h));
  caps = gst_pad_get_current_caps (h->sinkpad);
  s = gst_caps_get_structure (caps, 0);
  fail_unless_equals_string (gst_structure_get_string (s, "colorimetry"),
      "bt601");
  fail_unless_equals_string (gst_structure_get_string (s, "chroma-site"),
      "jpeg");
  gst_caps_unref (caps);
  gst_harness_teardown (h);

  /* "nosize": principal point (30.2, 11.6), so 60 x 23 */
  h = source ("camera=2", "video/x-raw");
  gst_buffer_unref (gst_harness_pull (h));
  caps = gst_pad_get_current_caps (h->sinkpad);
  s = gst_caps_get_structure (caps, 0);
  fail_unless (gst_structure_get_int (s, "width", &width)
      && gst_structure_get_int (s, "height", &height));
  fail_unless_equals_int (width, 60);
  fail_unless_equals_int (height, 23);
  gst_caps_unref (caps);
  gst_harness_teardown (h);

  h = source ("camera=2", "video/x-raw, width=33, height=17");
  gst_buffer_unref (gst_harness_pull (h));
  caps = gst_pad_get_current_caps (h->sinkpad);
  s = gst_caps_get_structure (caps, 0);
  fail_unless (gst_structure_get_int (s, "width", &width)
      && gst_structure_get_int (s, "height", &height));
  fail_unless_equals_int (width, 33);
  fail_unless_equals_int (height, 17);
  gst_caps_unref (caps);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* examples/data/rig-nuscenes-704x256.json: six level cameras, 0.3 m below
 * the lidar (1.43 m above the ground), their principal point at row 64 of
 * 704 x 256 images; the bottom row (255) of each meets the ground at
 * 1.43 f / 191 metres along its axis: 4.4921 m with f = 600, 2.9948 m for
 * the back camera's f = 400. In the middle of that row, every camera sees
 * the road or a marking (nothing stands within 7 m of the ego lane's
 * centre, and the cameras look at most 0.7 m off it at that distance). */
GST_START_TEST (test_shipped_rig)
{
  static const guint expected_mm[6] = { 4492, 4492, 4492, 2995, 4492, 4492 };
  gchar *saved = calibration;
  guint camera;

  calibration = g_build_filename (P3D_SOURCE_ROOT, "examples", "data",
      "rig-nuscenes-704x256.json", NULL);
  for (camera = 0; camera < 6; camera++) {
    gchar *properties = g_strdup_printf ("camera=%u " EMPTY " emit=depth",
        camera);
    GstHarness *h = source (properties, "video/x-raw, format=GRAY16_LE");
    GstVideoFrame frame;

    pull_frame (h, &frame);
    fail_unless_equals_int (GST_VIDEO_FRAME_WIDTH (&frame), 704);
    fail_unless_equals_int (GST_VIDEO_FRAME_HEIGHT (&frame), 256);
    fail_unless (abs ((gint) depth_at (&frame, 352, 255) -
            (gint) expected_mm[camera]) <= 1, "camera %u: %u mm", camera,
        depth_at (&frame, 352, 255));
    /* the horizon row sees no ground */
    fail_unless_equals_int (depth_at (&frame, 352, 64), 0);
    frame_clear (&frame);
    gst_harness_teardown (h);
    g_free (properties);
  }
  g_free (calibration);
  calibration = saved;
}

GST_END_TEST;

/* An element error of @domain / @code whose text holds each needle. */
static void
expect_error (const gchar * description, GQuark domain, gint code,
    const gchar * needle, const gchar * other)
{
  GstElement *pipeline = gst_parse_launch (description, NULL);
  GstBus *bus;

  fail_unless (pipeline != NULL, "%s", description);
  bus = gst_element_get_bus (pipeline);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  g_free (elemtest_expect_error (bus, domain, code, needle, other, NULL));
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
}

GST_START_TEST (test_calibration_errors)
{
  static const struct
  {
    const gchar *name;
    const gchar *contents;
    const gchar *needle;
  } bad[] = {
    {"skew.json", "{\"cameras\": [{\"intrinsics\": [[80, 0, 80], [0.5, 80, "
          "16], [0, 0, 1]], \"camera_to_lidar\": [[0, 0, 1, 0], [-1, 0, 0, 0], "
          "[0, -1, 0, 0], [0, 0, 0, 1]]}]}", "[1][0] is 0.5"},
    {"row.json", "{\"cameras\": [{\"intrinsics\": [[80, 0, 80], [0, 80, 16], "
          "[0, 0.2, 1]], \"camera_to_lidar\": [[0, 0, 1, 0], [-1, 0, 0, 0], "
          "[0, -1, 0, 0], [0, 0, 0, 1]]}]}", "third row is [0, 0.2, 1]"},
    {"focal.json", "{\"cameras\": [{\"intrinsics\": [[-80, 0, 80], [0, 80, "
          "16], [0, 0, 1]], \"camera_to_lidar\": [[0, 0, 1, 0], [-1, 0, 0, 0], "
          "[0, -1, 0, 0], [0, 0, 0, 1]]}]}", "[0][0] = -80"},
    {"scaled.json", "{\"cameras\": [{\"intrinsics\": [[80, 0, 80], [0, 80, "
          "16], [0, 0, 1]], \"camera_to_lidar\": [[0, 0, 2, 0], [-1, 0, 0, 0], "
          "[0, -1, 0, 0], [0, 0, 0, 1]]}]}", "not a rotation"},
    {"mirror.json", "{\"cameras\": [{\"intrinsics\": [[80, 0, 80], [0, 80, "
          "16], [0, 0, 1]], \"camera_to_lidar\": [[0, 0, -1, 0], [-1, 0, 0, "
          "0], [0, -1, 0, 0], [0, 0, 0, 1]]}]}", "det R is -1"},
    {"size.json", "{\"cameras\": [{\"intrinsics\": [[80, 0, 80], [0, 80, "
          "16], [0, 0, 1]], \"camera_to_lidar\": [[0, 0, 1, 0], [-1, 0, 0, 0], "
          "[0, -1, 0, 0], [0, 0, 0, 1]], \"image_size\": [160, 0]}]}",
        "image_size: the height 0"},
    {"nan.json", "{\"cameras\": [{\"intrinsics\": [[80, 0, 80], [0, 80, "
          "16], [0, 0, 1]], \"camera_to_lidar\": \"none\"}]}",
        "camera_to_lidar is not an array"},
  };
  gchar *description, *path;
  guint i;

  expect_error ("cameratestsrc ! fakesink", GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_NOT_FOUND, "\"calibration\" property", NULL);
  expect_error ("cameratestsrc calibration=/nonexistent/rig.json ! fakesink",
      GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND,
      "/nonexistent/rig.json", "property calibration");
  description = g_strdup_printf ("cameratestsrc calibration=%s ! fakesink",
      dir);
  expect_error (description, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_OPEN_READ,
      dir, "property calibration");
  g_free (description);

  description = g_strdup_printf ("cameratestsrc calibration=%s camera=3 ! "
      "fakesink", calibration);
  expect_error (description, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS,
      "Invalid property camera: 3", "has 3 cameras (0 to 2)");
  g_free (description);

  for (i = 0; i < G_N_ELEMENTS (bad); i++) {
    path = elemtest_write_file (dir, bad[i].name, bad[i].contents);
    description = g_strdup_printf ("cameratestsrc calibration=%s ! fakesink",
        path);
    expect_error (description, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE,
        path, bad[i].needle);
    g_free (description);
    g_free (path);
  }
}

GST_END_TEST;

/* A capsfilter the source cannot meet: another size than the file's, a
 * format of another emit mode, another framerate: not negotiated; an image
 * of too many pixels: an error that says so. */
GST_START_TEST (test_not_negotiated)
{
  static const gchar *cases[][2] = {
    {"", "video/x-raw, width=320"},
    {"", "video/x-raw, format=GRAY8"},
    {"emit=depth", "video/x-raw, format=RGB"},
    {"emit=labels", "video/x-raw, format=GRAY16_LE"},
    {"", "video/x-raw, framerate=5/1"},
    /* each side allowed, too many pixels together */
    {"camera=2", "video/x-raw, width=16384, height=2048"},
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    gchar *description = g_strdup_printf ("cameratestsrc calibration=%s %s ! "
        "capsfilter name=filter ! fakesink", calibration, cases[i][0]);
    GstElement *pipeline = gst_parse_launch (description, NULL);
    GstElement *filter = gst_bin_get_by_name (GST_BIN (pipeline), "filter");
    GstCaps *caps = gst_caps_from_string (cases[i][1]);
    GstBus *bus = gst_element_get_bus (pipeline);

    g_object_set (filter, "caps", caps, NULL);
    gst_element_set_state (pipeline, GST_STATE_PLAYING);
    if (i == G_N_ELEMENTS (cases) - 1)
      g_free (elemtest_expect_error (bus, GST_CORE_ERROR,
              GST_CORE_ERROR_NEGOTIATION, "16384 x 2048",
              "at most 16777216 pixels", NULL));
    else
      g_free (elemtest_expect_error (bus, GST_STREAM_ERROR,
              GST_STREAM_ERROR_FAILED, "not-negotiated", NULL));
    gst_element_set_state (pipeline, GST_STATE_NULL);
    gst_caps_unref (caps);
    gst_object_unref (bus);
    gst_object_unref (filter);
    gst_object_unref (pipeline);
    g_free (description);
  }
}

GST_END_TEST;

static Suite *
cameratestsrc_suite (void)
{
  Suite *s = suite_create ("cameratestsrc");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_golden_hashes);
  tcase_add_test (tc, test_determinism);
  tcase_add_test (tc, test_ground_depth);
  tcase_add_test (tc, test_ground_labels);
  tcase_add_test (tc, test_same_world_as_lidar);
  tcase_add_test (tc, test_conversions);
  tcase_add_test (tc, test_caps);
  tcase_add_test (tc, test_shipped_rig);
  tcase_add_test (tc, test_calibration_errors);
  tcase_add_test (tc, test_not_negotiated);
  return s;
}

P3D_CHECK_MAIN (cameratestsrc);
