/* boxoverlay: a box's edges, heading and score at pixels worked out by
 * hand; boxes behind the camera not drawn, partly behind clipped; the
 * colours of bevrender's legend and of the color property in RGBA and
 * BGRx; running-time matching (boxes before, with and after the frames,
 * missing ones, gaps, EOS: documented, never a stall); empty, truncated,
 * oversized, over-counted and non-finite box input; frames of the wrong
 * size; calibration errors.
 *
 * The camera "front": 160 x 64 pixels, fx = fy = 80, principal point
 * (80, 16), 0.4 m ahead of the lidar and 0.3 m below it, level, looking
 * along +x: a lidar point (x, y, z) is at pixel u = 80 - 80 y / (x - 0.4),
 * v = 16 - 80 (z + 0.3) / (x - 0.4), drawn at pixel (floor (u + 0.5),
 * floor (v + 0.5)). */
#include <string.h>

#include <gst/app/gstappsrc.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#include "p3dtest-box.h"
#include "p3dtest-elem.h"
#include "p3dcanvas.h"

#define CALIBRATION \
  "{\"cameras\": [\n" \
  " {\"name\": \"front\", \"intrinsics\": [[80, 0, 80], [0, 80, 16], " \
  "[0, 0, 1]],\n" \
  "  \"camera_to_lidar\": [[0, 0, 1, 0.4], [-1, 0, 0, 0], [0, -1, 0, -0.3], " \
  "[0, 0, 0, 1]], \"image_size\": [160, 64]},\n" \
  " {\"name\": \"anysize\", \"intrinsics\": [[80, 0, 80], [0, 80, 16], " \
  "[0, 0, 1]],\n" \
  "  \"camera_to_lidar\": [[0, 0, 1, 0.4], [-1, 0, 0, 0], [0, -1, 0, -0.3], " \
  "[0, 0, 0, 1]]}\n" "]}\n"

#define WIDTH 160
#define HEIGHT 64
#define MS GST_MSECOND
#define MAGENTA P3D_RGB (255, 0, 255)
#define WHITE P3D_RGB (255, 255, 255)
#define ORANGE P3D_RGB (255, 140, 0)
#define BLACK P3D_RGB (0, 0, 0)

static gchar *dir;
static gchar *calibration;

static void
setup (void)
{
  dir = g_dir_make_tmp ("boxoverlay-XXXXXX", NULL);
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

/* A car 4 x 2 x 1.5 m on the ground, its centre 10.4 m ahead at @y: its
 * back face 8 m from the camera, its front face 12 m. */
static P3dcBox3d
car (gfloat y, gfloat score, gint32 label)
{
  P3dcBox3d box = { 10.4f, y, -0.98f, 4.0f, 2.0f, 1.5f, 0.0f, score, label };

  return box;
}

static GstBuffer *
boxes_buffer (const P3dcBox3d * boxes, guint count, guint max_boxes,
    GstClockTime pts, GstClockTime duration)
{
  GstBuffer *buffer = boxtest_buffer (boxes, count, max_boxes,
      sizeof (P3dcBox3d));

  GST_BUFFER_PTS (buffer) = pts;
  GST_BUFFER_DURATION (buffer) = duration;
  return buffer;
}

/* A black frame of @format (alpha 255). */
static GstBuffer *
video_buffer (const gchar * format, gint width, gint height, GstClockTime pts,
    GstClockTime duration)
{
  GstVideoInfo info;
  GstBuffer *buffer;
  GstMapInfo map;
  gsize i;

  gst_video_info_set_format (&info, gst_video_format_from_string (format),
      width, height);
  buffer = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&info), NULL);
  fail_unless (gst_buffer_map (buffer, &map, GST_MAP_WRITE));
  for (i = 0; i < map.size; i++)
    map.data[i] = i % 4 == 3 ? 0xff : 0;
  gst_buffer_unmap (buffer, &map);
  GST_BUFFER_PTS (buffer) = pts;
  GST_BUFFER_DURATION (buffer) = duration;
  return buffer;
}

static gchar *
video_caps (const gchar * format)
{
  return g_strdup_printf ("video/x-raw, format=%s, width=%d, height=%d, "
      "framerate=10/1", format, WIDTH, HEIGHT);
}

typedef struct
{
  GstHarness *video;
  GstHarness *boxes;
} Overlay;

/* boxoverlay with the test rig and @properties: a harness on its video
 * pad and output (@format frames), one on its boxes pad (max-boxes
 * @max_boxes); playing. */
static void
overlay_new (Overlay * overlay, const gchar * properties,
    const gchar * format, guint max_boxes)
{
  gchar *description = g_strdup_printf ("boxoverlay calibration=%s %s",
      calibration, properties);
  GstElement *element = gst_parse_launch (description, NULL);
  gchar *caps = video_caps (format), *boxes_caps;

  fail_unless (element != NULL, "%s", description);
  overlay->video = gst_harness_new_with_element (element, "video_sink", "src");
  overlay->boxes = gst_harness_new_with_element (element, "boxes_sink", NULL);
  gst_object_unref (element);
  gst_harness_set_src_caps_str (overlay->video, caps);
  boxes_caps = g_strdup_printf ("application/x-boxes3d, max-boxes=%u",
      max_boxes);
  gst_harness_set_src_caps_str (overlay->boxes, boxes_caps);
  gst_harness_play (overlay->video);
  g_free (boxes_caps);
  g_free (caps);
  g_free (description);
}

static void
overlay_free (Overlay * overlay)
{
  gst_harness_teardown (overlay->boxes);
  gst_harness_teardown (overlay->video);
}

/* The colour of pixel (@column, @row) of an RGBA or BGRx frame, as
 * 0xAARRGGBB. */
static P3dColor
pixel (GstBuffer * buffer, gboolean bgr, gint column, gint row)
{
  GstMapInfo map;
  const guint8 *p;
  P3dColor color;

  fail_unless (gst_buffer_map (buffer, &map, GST_MAP_READ));
  p = map.data + ((gsize) row * WIDTH + column) * 4;
  color = bgr ? P3D_RGB (p[2], p[1], p[0]) : P3D_RGB (p[0], p[1], p[2]);
  color = (color & 0xffffff) | ((guint32) p[3] << 24);
  gst_buffer_unmap (buffer, &map);
  return color;
}

#define assert_pixel(buffer, bgr, column, row, color) \
  G_STMT_START { \
    P3dColor got_ = pixel ((buffer), (bgr), (column), (row)); \
    fail_unless (got_ == (color), "pixel (%d, %d) is 0x%08x, not 0x%08x", \
        (column), (row), got_, (guint32) (color)); \
  } G_STMT_END

/* Pixels of @colour in columns [@c0, @c1], rows [@r0, @r1]. */
static guint
count_color (GstBuffer * buffer, gint c0, gint r0, gint c1, gint r1,
    P3dColor color)
{
  guint n = 0;
  gint row, column;

  for (row = r0; row <= r1; row++)
    for (column = c0; column <= c1; column++)
      n += pixel (buffer, FALSE, column, row) == color;
  return n;
}

/* The car drawn with 1-pixel lines, no score: its back face's corners are
 * at u = 80 -+ 80 / 8 = 70, 90 and v = 16 + 80 * 1.43 / 8 = 30.3 (ground)
 * and 16 - 80 * 0.07 / 8 = 15.3 (roof); its front face's at u = 73.33,
 * 86.67 and v = 25.53, 15.53; its heading from the bottom centre (u = 80,
 * v = 27.44) to the front's bottom middle (v = 25.53). */
GST_START_TEST (test_projection)
{
  P3dcBox3d box = car (0.0f, 0.9f, 0);
  Overlay overlay;
  GstBuffer *out;
  gint k;

  overlay_new (&overlay, "line-width=1 show-scores=false", "RGBA", 4);
  gst_harness_push (overlay.boxes, boxes_buffer (&box, 1, 4, 0, 100 * MS));
  gst_harness_push (overlay.video, video_buffer ("RGBA", WIDTH, HEIGHT, 0,
          100 * MS));
  out = gst_harness_pull (overlay.video);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 0);
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (out), 100 * MS);
  for (k = 70; k <= 90; k++) {
    assert_pixel (out, FALSE, k, 30, MAGENTA);  /* back, bottom */
    assert_pixel (out, FALSE, k, 15, MAGENTA);  /* back, roof */
  }
  for (k = 15; k <= 30; k++) {
    assert_pixel (out, FALSE, 70, k, MAGENTA);  /* back, left */
    assert_pixel (out, FALSE, 90, k, MAGENTA);  /* back, right */
  }
  for (k = 73; k <= 87; k++) {
    assert_pixel (out, FALSE, k, 26, MAGENTA);  /* front, bottom */
    assert_pixel (out, FALSE, k, 16, MAGENTA);  /* front, roof */
  }
  assert_pixel (out, FALSE, 80, 27, MAGENTA);   /* heading */
  /* faces are not filled, and nothing is drawn off the box */
  assert_pixel (out, FALSE, 80, 21, BLACK);
  assert_pixel (out, FALSE, 76, 28, BLACK);
  assert_pixel (out, FALSE, 69, 22, BLACK);
  assert_pixel (out, FALSE, 91, 22, BLACK);
  assert_pixel (out, FALSE, 80, 31, BLACK);
  assert_pixel (out, FALSE, 80, 14, BLACK);
  fail_unless_equals_int (count_color (out, 0, 0, WIDTH - 1, HEIGHT - 1,
          MAGENTA), count_color (out, 70, 15, 90, 30, MAGENTA));
  gst_buffer_unref (out);
  overlay_free (&overlay);
}

GST_END_TEST;

/* Colours: the label's, as bevrender's legend (0 magenta, 1 white, 2
 * orange), or the color property's; in BGRx the same colours, blue byte
 * first. Scores: "0.90" beside the box's right edge (column 92 on, from
 * row 15), the lower score of a box at the same place to its left (its
 * 23 pixels end 2 pixels before column 70). */
GST_START_TEST (test_colors_and_scores)
{
  P3dcBox3d boxes[2] = { car (0.0f, 0.9f, 0), car (0.0f, 0.5f, 1) };
  const gchar *formats[] = { "RGBA", "BGRx" };
  Overlay overlay;
  GstBuffer *out;
  guint f;

  for (f = 0; f < G_N_ELEMENTS (formats); f++) {
    gboolean bgr = f == 1;

    overlay_new (&overlay, "line-width=1", formats[f], 4);
    gst_harness_push (overlay.boxes, boxes_buffer (boxes, 2, 4, 0, 100 * MS));
    gst_harness_push (overlay.video, video_buffer (formats[f], WIDTH, HEIGHT,
            0, 100 * MS));
    out = gst_harness_pull (overlay.video);
    /* the second box is drawn over the first */
    assert_pixel (out, bgr, 80, 30, WHITE);
    /* '0' is 01110 in its first row: columns 93 to 95 of 92 to 96 */
    assert_pixel (out, bgr, 92, 15, BLACK);
    assert_pixel (out, bgr, 93, 15, MAGENTA);
    assert_pixel (out, bgr, 95, 15, MAGENTA);
    assert_pixel (out, bgr, 96, 15, BLACK);
    /* "0.50" from column 70 - 2 - 23 = 45 */
    assert_pixel (out, bgr, 45, 15, BLACK);
    assert_pixel (out, bgr, 46, 15, WHITE);
    assert_pixel (out, bgr, 48, 15, WHITE);
    gst_buffer_unref (out);
    overlay_free (&overlay);
  }

  boxes[0].label = 2;
  overlay_new (&overlay, "line-width=1 show-scores=false", "RGBA", 4);
  gst_harness_push (overlay.boxes, boxes_buffer (boxes, 1, 4, 0, 100 * MS));
  gst_harness_push (overlay.video, video_buffer ("RGBA", WIDTH, HEIGHT, 0,
          100 * MS));
  out = gst_harness_pull (overlay.video);
  assert_pixel (out, FALSE, 80, 30, ORANGE);
  assert_pixel (out, FALSE, 93, 15, BLACK);
  gst_buffer_unref (out);
  overlay_free (&overlay);

  for (f = 0; f < G_N_ELEMENTS (formats); f++) {
    overlay_new (&overlay, "line-width=3 color=0x102030", formats[f], 4);
    gst_harness_push (overlay.boxes, boxes_buffer (boxes, 1, 4, 0, 100 * MS));
    gst_harness_push (overlay.video, video_buffer (formats[f], WIDTH, HEIGHT,
            0, 100 * MS));
    out = gst_harness_pull (overlay.video);
    /* 3 pixels wide: rows 29 to 31 under the bottom edge */
    assert_pixel (out, f == 1, 80, 29, P3D_RGB (0x10, 0x20, 0x30));
    assert_pixel (out, f == 1, 80, 31, P3D_RGB (0x10, 0x20, 0x30));
    assert_pixel (out, f == 1, 80, 32, BLACK);
    gst_buffer_unref (out);
    overlay_free (&overlay);
  }
}

GST_END_TEST;

/* A box behind the camera draws nothing; a box from 2 m behind the
 * camera to 5.6 m in front of it (x from -2 to 6, y from 2 to 4) draws
 * its far face (its right edge at u = 80 - 80 * 2 / 5.6 = 51.43, rows
 * 15 to 36) and its edges along x up to the near plane, which leave the
 * image at its left or bottom: nothing on the right, where the corners
 * behind the camera would land if they were projected as they are. */
GST_START_TEST (test_behind_camera)
{
  P3dcBox3d behind = { -10.0f, 0.0f, -0.98f, 4.0f, 2.0f, 1.5f, 0.0f, 0.9f,
    0
  };
  P3dcBox3d partly = { 2.0f, 3.0f, -0.98f, 8.0f, 2.0f, 1.5f, 0.0f, 0.9f, 0 };
  Overlay overlay;
  GstBuffer *out;
  gint k;

  overlay_new (&overlay, "line-width=1", "RGBA", 4);
  gst_harness_push (overlay.boxes, boxes_buffer (&behind, 1, 4, 0, 100 * MS));
  gst_harness_push (overlay.video, video_buffer ("RGBA", WIDTH, HEIGHT, 0,
          100 * MS));
  out = gst_harness_pull (overlay.video);
  fail_unless_equals_int (count_color (out, 0, 0, WIDTH - 1, HEIGHT - 1,
          BLACK), WIDTH * HEIGHT);
  gst_buffer_unref (out);

  gst_harness_push (overlay.boxes, boxes_buffer (&partly, 1, 4, 100 * MS,
          100 * MS));
  gst_harness_push (overlay.video, video_buffer ("RGBA", WIDTH, HEIGHT,
          100 * MS, 100 * MS));
  out = gst_harness_pull (overlay.video);
  for (k = 16; k <= 35; k++)
    assert_pixel (out, FALSE, 51, k, MAGENTA);
  fail_unless (count_color (out, 0, 37, 50, HEIGHT - 1, MAGENTA) > 10);
  fail_unless_equals_int (count_color (out, 100, 0, WIDTH - 1, HEIGHT - 1,
          MAGENTA), 0);
  gst_buffer_unref (out);
  overlay_free (&overlay);
}

GST_END_TEST;

static gboolean
has_box (GstBuffer * buffer)
{
  return count_color (buffer, 0, 0, WIDTH - 1, HEIGHT - 1, MAGENTA) > 0;
}

/* Running time: frames of 100 ms at 0, 100, 200 and 300 ms.
 * - frame 0 waits for the boxes that come after it (late boxes: not live,
 *   nothing is pushed before them), then shows them;
 * - frame 100 ms: the boxes of 0 ms ended at 100 ms and the next ones are
 *   for 200 ms (the ones for 100 ms are missing): no boxes, no wait;
 * - frame 200 ms shows the boxes of 200 ms, queued before it;
 * - after the boxes' EOS, frame 300 ms shows none (theirs ended), and the
 *   frames go on. */
GST_START_TEST (test_running_time)
{
  P3dcBox3d box = car (0.0f, 0.9f, 0);
  Overlay overlay;
  GstBuffer *out;

  overlay_new (&overlay, "", "RGBA", 4);
  gst_harness_push (overlay.video, video_buffer ("RGBA", WIDTH, HEIGHT, 0,
          100 * MS));
  g_usleep (G_USEC_PER_SEC / 10);
  fail_unless (gst_harness_try_pull (overlay.video) == NULL,
      "a frame was pushed before its boxes came");
  gst_harness_push (overlay.boxes, boxes_buffer (&box, 1, 4, 0, 100 * MS));
  out = gst_harness_pull (overlay.video);
  fail_unless (has_box (out));
  gst_buffer_unref (out);

  gst_harness_push (overlay.boxes, boxes_buffer (&box, 1, 4, 200 * MS,
          100 * MS));
  gst_harness_push (overlay.video, video_buffer ("RGBA", WIDTH, HEIGHT,
          100 * MS, 100 * MS));
  out = gst_harness_pull (overlay.video);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 100 * MS);
  fail_if (has_box (out));
  gst_buffer_unref (out);

  gst_harness_push (overlay.video, video_buffer ("RGBA", WIDTH, HEIGHT,
          200 * MS, 100 * MS));
  out = gst_harness_pull (overlay.video);
  fail_unless (has_box (out));
  gst_buffer_unref (out);

  fail_unless (gst_harness_push_event (overlay.boxes, gst_event_new_eos ()));
  gst_harness_push (overlay.video, video_buffer ("RGBA", WIDTH, HEIGHT,
          300 * MS, 100 * MS));
  out = gst_harness_pull (overlay.video);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 300 * MS);
  fail_if (has_box (out));
  gst_buffer_unref (out);
  overlay_free (&overlay);
}

GST_END_TEST;

/* Several boxes buffers before a frame's end: the newest is drawn (an
 * orange cyclist box after a magenta car box); boxes without a duration
 * stay until newer ones; a gap on the boxes pad clears them for its
 * time. */
GST_START_TEST (test_newest_and_gaps)
{
  P3dcBox3d first = car (0.0f, 0.9f, 0), second = car (0.0f, 0.9f, 2);
  Overlay overlay;
  GstBuffer *out;

  overlay_new (&overlay, "", "RGBA", 4);
  gst_harness_push (overlay.boxes, boxes_buffer (&first, 1, 4, 0,
          GST_CLOCK_TIME_NONE));
  gst_harness_push (overlay.video, video_buffer ("RGBA", WIDTH, HEIGHT,
          100 * MS, 100 * MS));
  /* the frame waits: a newer buffer before its end may come */
  gst_harness_push (overlay.boxes, boxes_buffer (&second, 1, 4, 150 * MS,
          GST_CLOCK_TIME_NONE));
  gst_harness_push (overlay.boxes, boxes_buffer (&first, 1, 4, 400 * MS,
          GST_CLOCK_TIME_NONE));
  out = gst_harness_pull (overlay.video);
  fail_unless (count_color (out, 0, 0, WIDTH - 1, HEIGHT - 1, ORANGE) > 0);
  fail_unless_equals_int (count_color (out, 0, 0, WIDTH - 1, HEIGHT - 1,
          MAGENTA), 0);
  gst_buffer_unref (out);

  /* no duration: the 150 ms boxes are still drawn at 200 ms and 300 ms */
  gst_harness_push (overlay.video, video_buffer ("RGBA", WIDTH, HEIGHT,
          200 * MS, 100 * MS));
  out = gst_harness_pull (overlay.video);
  fail_unless (count_color (out, 0, 0, WIDTH - 1, HEIGHT - 1, ORANGE) > 0);
  gst_buffer_unref (out);

  overlay_free (&overlay);

  /* a gap from 100 to 300 ms: the frames there have no boxes */
  overlay_new (&overlay, "", "RGBA", 4);
  gst_harness_push (overlay.boxes, boxes_buffer (&first, 1, 4, 0,
          GST_CLOCK_TIME_NONE));
  gst_harness_push (overlay.video, video_buffer ("RGBA", WIDTH, HEIGHT, 0,
          100 * MS));
  fail_unless (gst_harness_push_event (overlay.boxes,
          gst_event_new_gap (100 * MS, 200 * MS)));
  out = gst_harness_pull (overlay.video);
  fail_unless (has_box (out));
  gst_buffer_unref (out);
  gst_harness_push (overlay.video, video_buffer ("RGBA", WIDTH, HEIGHT,
          150 * MS, 100 * MS));
  gst_harness_push (overlay.boxes, boxes_buffer (&first, 1, 4, 300 * MS,
          100 * MS));
  out = gst_harness_pull (overlay.video);
  fail_if (has_box (out));
  gst_buffer_unref (out);
  overlay_free (&overlay);
}

GST_END_TEST;

/* No box (a count of 0) and boxes with a non-finite field draw nothing;
 * the finite box beside them is drawn; huge finite boxes draw without a
 * crash. */
GST_START_TEST (test_unusual_boxes)
{
  P3dcBox3d boxes[6];
  Overlay overlay;
  GstBuffer *out, *alone;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (boxes); i++)
    boxes[i] = car (0.0f, 0.9f, 0);
  boxes[0].x = NAN;
  boxes[1].dz = INFINITY;
  boxes[2].yaw = -INFINITY;
  boxes[3].score = NAN;
  boxes[3].y = 20.0f;
  boxes[4].dx = 1e30f;
  boxes[4].x = 1e30f;

  overlay_new (&overlay, "", "RGBA", 8);
  gst_harness_push (overlay.boxes, boxes_buffer (boxes, 0, 8, 0, 100 * MS));
  gst_harness_push (overlay.video, video_buffer ("RGBA", WIDTH, HEIGHT, 0,
          100 * MS));
  out = gst_harness_pull (overlay.video);
  fail_unless_equals_int (count_color (out, 0, 0, WIDTH - 1, HEIGHT - 1,
          BLACK), WIDTH * HEIGHT);
  gst_buffer_unref (out);

  /* the finite car alone, to compare with */
  gst_harness_push (overlay.boxes, boxes_buffer (&boxes[5], 1, 8, 100 * MS,
          100 * MS));
  gst_harness_push (overlay.video, video_buffer ("RGBA", WIDTH, HEIGHT,
          100 * MS, 100 * MS));
  alone = gst_harness_pull (overlay.video);

  /* with the three non-finite ones before it: the same picture */
  gst_harness_push (overlay.boxes, boxes_buffer (&boxes[0], 3, 8, 200 * MS,
          100 * MS));
  gst_harness_push (overlay.video, video_buffer ("RGBA", WIDTH, HEIGHT,
          200 * MS, 100 * MS));
  gst_buffer_unref (gst_harness_pull (overlay.video));
  gst_harness_push (overlay.boxes, boxes_buffer (boxes, 3, 8, 300 * MS,
          100 * MS));
  gst_harness_push (overlay.video, video_buffer ("RGBA", WIDTH, HEIGHT,
          300 * MS, 100 * MS));
  out = gst_harness_pull (overlay.video);
  fail_unless_equals_int (count_color (out, 0, 0, WIDTH - 1, HEIGHT - 1,
          BLACK), WIDTH * HEIGHT);
  gst_buffer_unref (out);
  {
    P3dcBox3d mixed[4] = { boxes[0], boxes[1], boxes[2], boxes[5] };

    gst_harness_push (overlay.boxes, boxes_buffer (mixed, 4, 8, 400 * MS,
            100 * MS));
    gst_harness_push (overlay.video, video_buffer ("RGBA", WIDTH, HEIGHT,
            400 * MS, 100 * MS));
    out = gst_harness_pull (overlay.video);
    for (i = 0; i < (guint) HEIGHT; i++) {
      gint column;

      for (column = 0; column < WIDTH; column++)
        fail_unless_equals_int (pixel (out, FALSE, column, i),
            pixel (alone, FALSE, column, i));
    }
    gst_buffer_unref (out);
  }
  /* a NaN score: the box, not its score; a huge box: no crash */
  gst_harness_push (overlay.boxes, boxes_buffer (&boxes[3], 2, 8, 500 * MS,
          100 * MS));
  gst_harness_push (overlay.video, video_buffer ("RGBA", WIDTH, HEIGHT,
          500 * MS, 100 * MS));
  gst_buffer_unref (gst_harness_pull (overlay.video));
  gst_buffer_unref (alone);
  overlay_free (&overlay);
}

GST_END_TEST;

/* A pipeline of two appsrcs into boxoverlay @properties: pushes one frame
 * and @boxes (taken) with @boxes_caps, and expects an error of @domain /
 * @code naming @needle. */
static void
expect_boxes_error (const gchar * properties, const gchar * boxes_caps,
    GstBuffer * boxes, const gchar * video_caps_text, GQuark domain,
    gint code, const gchar * needle, const gchar * other)
{
  gchar *description = g_strdup_printf ("appsrc name=v format=time caps=\"%s\" "
      "! boxoverlay name=o calibration=%s %s ! fakesink appsrc name=b "
      "format=time caps=\"%s\" ! o.boxes_sink", video_caps_text, calibration,
      properties, boxes_caps);
  GstElement *pipeline = gst_parse_launch (description, NULL);
  GstElement *video, *box_source;
  GstBus *bus;

  fail_unless (pipeline != NULL, "%s", description);
  video = gst_bin_get_by_name (GST_BIN (pipeline), "v");
  box_source = gst_bin_get_by_name (GST_BIN (pipeline), "b");
  bus = gst_element_get_bus (pipeline);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  gst_app_src_push_buffer (GST_APP_SRC (video), video_buffer ("RGBA", WIDTH,
          HEIGHT, 0, 100 * MS));
  if (boxes != NULL)
    gst_app_src_push_buffer (GST_APP_SRC (box_source), boxes);
  gst_app_src_end_of_stream (GST_APP_SRC (video));
  gst_app_src_end_of_stream (GST_APP_SRC (box_source));
  g_free (elemtest_expect_error (bus, domain, code, needle, other, NULL));
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (video);
  gst_object_unref (box_source);
  gst_object_unref (pipeline);
  g_free (description);
}

GST_START_TEST (test_bad_input)
{
  P3dcBox3d box = car (0.0f, 0.9f, 0);
  gchar *caps = video_caps ("RGBA");
  GstBuffer *buffer;
  guint8 *records;
  guint32 count;

  /* the records tensor one byte short, or one record too long */
  buffer = gst_buffer_new ();
  records = g_malloc0 (2 * 36 - 1);
  count = 1;
  gst_buffer_append_memory (buffer, gst_memory_new_wrapped (0, records,
          2 * 36 - 1, 0, 2 * 36 - 1, records, g_free));
  records = g_memdup2 (&count, 4);
  gst_buffer_append_memory (buffer, gst_memory_new_wrapped (0, records, 4, 0,
          4, records, g_free));
  GST_BUFFER_PTS (buffer) = 0;
  expect_boxes_error ("", "application/x-boxes3d, max-boxes=2", buffer,
      caps, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
      "does not hold the tensors", NULL);
  expect_boxes_error ("", "application/x-boxes3d, max-boxes=1",
      boxes_buffer (&box, 1, 2, 0, 100 * MS), caps, GST_STREAM_ERROR,
      GST_STREAM_ERROR_FORMAT, "does not hold the tensors", NULL);
  /* a count over the capacity */
  buffer = boxes_buffer (&box, 1, 2, 0, 100 * MS);
  {
    GstMapInfo map;

    fail_unless (gst_memory_map (gst_buffer_peek_memory (buffer, 1), &map,
            GST_MAP_WRITE));
    count = 5;
    memcpy (map.data, &count, 4);
    gst_memory_unmap (gst_buffer_peek_memory (buffer, 1), &map);
  }
  expect_boxes_error ("", "application/x-boxes3d, max-boxes=2", buffer,
      caps, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT, "Box count 5",
      "max-boxes 2");
  g_free (caps);

  /* frames of another size than the calibration's image_size */
  caps = g_strdup_printf ("video/x-raw, format=RGBA, width=320, height=128, "
      "framerate=10/1");
  expect_boxes_error ("", "application/x-boxes3d, max-boxes=2", NULL, caps,
      GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION, "320 x 128",
      "image_size of 160 x 64");
  g_free (caps);
}

GST_END_TEST;

/* Without an image_size, any frame size is drawn on. */
GST_START_TEST (test_any_size)
{
  P3dcBox3d box = car (0.0f, 0.9f, 0);
  GstElement *element;
  GstHarness *video, *boxes;
  gchar *description = g_strdup_printf ("boxoverlay calibration=%s camera=1 "
      "line-width=1", calibration);
  GstBuffer *out;
  GstMapInfo map;

  element = gst_parse_launch (description, NULL);
  video = gst_harness_new_with_element (element, "video_sink", "src");
  boxes = gst_harness_new_with_element (element, "boxes_sink", NULL);
  gst_object_unref (element);
  gst_harness_set_src_caps_str (video, "video/x-raw, format=RGBA, "
      "width=200, height=100, framerate=10/1");
  gst_harness_set_src_caps_str (boxes, "application/x-boxes3d, max-boxes=1");
  gst_harness_play (video);
  gst_harness_push (boxes, boxes_buffer (&box, 1, 1, 0, 100 * MS));
  gst_harness_push (video, video_buffer ("RGBA", 200, 100, 0, 100 * MS));
  out = gst_harness_pull (video);
  /* the back face's bottom edge, row 30, columns 70 to 90 */
  fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
  fail_unless_equals_int (map.data[(30 * 200 + 80) * 4], 255);
  fail_unless_equals_int (map.data[(30 * 200 + 80) * 4 + 1], 0);
  fail_unless_equals_int (map.data[(31 * 200 + 80) * 4], 0);
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);
  gst_harness_teardown (boxes);
  gst_harness_teardown (video);
  g_free (description);
}

GST_END_TEST;

static void
expect_start_error (const gchar * properties, GQuark domain, gint code,
    const gchar * needle, const gchar * other)
{
  gchar *description = g_strdup_printf ("videotestsrc num-buffers=1 ! "
      "video/x-raw, format=RGBA, width=160, height=64 ! boxoverlay name=o %s "
      "! fakesink pointcloudtestsrc emit=boxes num-buffers=1 ! o.boxes_sink",
      properties);
  GstElement *pipeline = gst_parse_launch (description, NULL);
  GstBus *bus = gst_element_get_bus (pipeline);

  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  g_free (elemtest_expect_error (bus, domain, code, needle, other, NULL));
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  g_free (description);
}

GST_START_TEST (test_calibration_errors)
{
  gchar *properties, *path;

  expect_start_error ("", GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND,
      "\"calibration\" property", NULL);
  expect_start_error ("calibration=/nonexistent.json", GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_NOT_FOUND, "/nonexistent.json",
      "property calibration");
  properties = g_strdup_printf ("calibration=%s camera=2", calibration);
  expect_start_error (properties, GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_SETTINGS, "Invalid property camera: 2",
      "has 2 cameras (0 to 1)");
  g_free (properties);
  path = elemtest_write_file (dir, "bad.json", "{\"cameras\": [{"
      "\"intrinsics\": [[80, 0, 80], [0, 80, 16], [0, 0, 1]], "
      "\"camera_to_lidar\": [[0, 0, 3, 0], [-1, 0, 0, 0], [0, -1, 0, 0], "
      "[0, 0, 0, 1]]}]}");
  properties = g_strdup_printf ("calibration=%s", path);
  expect_start_error (properties, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE,
      "Camera 0 (camera0)", "not a rotation");
  g_free (properties);
  g_free (path);
}

GST_END_TEST;

/* cameratestsrc's frames with pointcloudtestsrc's boxes of the same
 * street: the two sources, boxoverlay between them, run to EOS. */
GST_START_TEST (test_with_test_sources)
{
  gchar *description = g_strdup_printf ("cameratestsrc calibration=%s "
      "seed=3 num-buffers=3 ! video/x-raw, format=RGBA ! boxoverlay name=o "
      "calibration=%s ! appsink name=sink sync=false pointcloudtestsrc "
      "seed=3 emit=boxes num-buffers=3 ! o.boxes_sink", calibration,
      calibration);
  GPtrArray *samples = elemtest_run_pipeline (description);
  guint i;

  fail_unless_equals_int (samples->len, 3);
  for (i = 0; i < 3; i++)
    fail_unless_equals_uint64 (GST_BUFFER_PTS (elemtest_sample_buffer
            (samples, i)), i * 100 * MS);
  g_ptr_array_unref (samples);
  g_free (description);
}

GST_END_TEST;

static Suite *
boxoverlay_suite (void)
{
  Suite *s = suite_create ("boxoverlay");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_projection);
  tcase_add_test (tc, test_colors_and_scores);
  tcase_add_test (tc, test_behind_camera);
  tcase_add_test (tc, test_running_time);
  tcase_add_test (tc, test_newest_and_gaps);
  tcase_add_test (tc, test_unusual_boxes);
  tcase_add_test (tc, test_bad_input);
  tcase_add_test (tc, test_any_size);
  tcase_add_test (tc, test_calibration_errors);
  tcase_add_test (tc, test_with_test_sources);
  return s;
}

P3D_CHECK_MAIN (boxoverlay);
