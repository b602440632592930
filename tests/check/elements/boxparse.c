/* boxparse: known JSON and KITTI text give the expected records; boxenc's
 * output parses back to identical records (bit for bit, NaN as NaN) in
 * every format and framing, split anywhere between buffers; and bad input
 * (truncated lines, garbage, wrong field counts, NaN literals, unknown
 * label names, empty frames, empty input, too many boxes) gives the
 * documented error, warning or frame. */
#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "p3dtest-box.h"
#include "p3dtest-elem.h"
#include "p3dperception.h"
#include "p3dtest.h"

typedef struct
{
  GstHarness *h;
  GstBus *bus;
} Parser;

static Parser
parser_new (const gchar * properties)
{
  gchar *launch = g_strdup_printf ("boxparse %s", properties);
  Parser p;

  p.h = gst_harness_new_parse (launch);
  p.bus = gst_bus_new ();
  gst_element_set_bus (p.h->element, p.bus);
  /* filesrc would send bytes; the caps name does not matter */
  gst_harness_set_src_caps_str (p.h, "text/plain");
  g_free (launch);
  return p;
}

static void
parser_free (Parser * p)
{
  GstMessage *message;

  /* every test pops what it expects: nothing else may be left */
  message = elemtest_pop (p->bus, GST_MESSAGE_ERROR | GST_MESSAGE_WARNING);
  if (message != NULL) {
    gchar *text = elemtest_message_text (message);

    fail ("unexpected message: %s", text);
  }
  gst_element_set_bus (p->h->element, NULL);
  gst_object_unref (p->bus);
  gst_harness_teardown (p->h);
}

/* A buffer of @size bytes of @text; an empty one has no memory. */
static GstBuffer *
text_buffer (const gchar * text, gsize size)
{
  return size > 0 ? gst_buffer_new_memdup (text, size) : gst_buffer_new ();
}

static GstFlowReturn
push_text (Parser * p, const gchar * text)
{
  return gst_harness_push (p->h, text_buffer (text, strlen (text)));
}

static void
push_eos (Parser * p)
{
  fail_unless (gst_harness_push_event (p->h, gst_event_new_eos ()));
}

/* Pops the message of @type and checks that its text holds @expected. */
static void
expect_message (Parser * p, GstMessageType type, const gchar * expected)
{
  GstMessage *message = elemtest_pop (p->bus, type);
  gchar *text;

  fail_unless (message != NULL, "no %s message; expected \"%s\"",
      gst_message_type_get_name (type), expected);
  text = elemtest_message_text (message);
  fail_unless (strstr (text, expected) != NULL, "message \"%s\" does not say "
      "\"%s\"", text, expected);
  g_free (text);
  gst_message_unref (message);
}

/* As expect_message, for a warning whose domain and code are checked too. */
static void
expect_warning_code (Parser * p, GQuark domain, gint code,
    const gchar * expected)
{
  g_free (elemtest_expect_message (p->bus, GST_MESSAGE_WARNING, domain, code,
          expected, NULL));
}

static guint
pull_3d (Parser * p, P3dcBox3d * boxes, guint max_boxes)
{
  GstBuffer *out = gst_harness_pull (p->h);
  guint count;

  fail_unless (out != NULL);
  count = boxtest_read (out, sizeof (P3dcBox3d), max_boxes, boxes);
  gst_buffer_unref (out);
  return count;
}

static void
assert_caps (Parser * p, const gchar * expected)
{
  GstCaps *caps = gst_pad_get_current_caps (p->h->sinkpad);
  GstCaps *want = gst_caps_from_string (expected);

  fail_unless (caps != NULL);
  fail_unless (gst_caps_is_equal (caps, want), "caps %" GST_PTR_FORMAT
      ", expected %" GST_PTR_FORMAT, caps, want);
  gst_caps_unref (caps);
  gst_caps_unref (want);
}

GST_START_TEST (test_json_known)
{
  Parser p = parser_new ("max-boxes=4");
  P3dcBox3d boxes[4];
  const P3dcBox3d first = { 1.5f, -2.25f, 0.125f, 4.0f, 1.75f, 1.5f, 0.1f,
    0.5f, 5
  };
  const P3dcBox3d second = { NAN, INFINITY, -INFINITY, NAN, 1e-3f, 2.0f, -0.0f,
    -1.0f, -7
  };
  GstBuffer *out;

  /* members in any order, numbers in any JSON form, extra members ignored,
   * CRLF line ends */
  fail_unless_equals_int (push_text (&p,
          "{\"frame\":0,\"pts\":1000000000,\"count\":2,\"type\":\"3d\"}\r\n"
          "{\"label\":5,\"x\":1.5,\"y\":-2.25,\"z\":0.125,\"dx\":4,"
          "\"dy\":1.75,\"dz\":1.5,\"yaw\":0.10000000149011612,\"score\":0.5,"
          "\"name\":\"ignored\"}\n"
          "{\"x\":\"NaN\",\"y\":\"Infinity\",\"z\":\"-Infinity\",\"dx\":null,"
          "\"dy\":1e-3,\"dz\":2.0,\"yaw\":-0.0,\"score\":-1,\"label\":-7}\n"
          "{\"frame\":1,\"pts\":null}\n"), GST_FLOW_OK);
  /* the second frame line ended the first frame */
  out = gst_harness_pull (p.h);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), GST_SECOND);
  fail_unless_equals_int (boxtest_read (out, sizeof (P3dcBox3d), 4, boxes), 2);
  gst_buffer_unref (out);
  boxtest_assert_3d_equal (&first, &boxes[0], 0, 0);
  boxtest_assert_3d_equal (&second, &boxes[1], 0, 1);
  assert_caps (&p, "application/x-boxes3d, max-boxes=(int)4");

  /* the end of the stream ends the last frame */
  fail_unless_equals_int (gst_harness_buffers_received (p.h), 1);
  push_eos (&p);
  out = gst_harness_pull (p.h);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), GST_CLOCK_TIME_NONE);
  fail_unless_equals_int (boxtest_read (out, sizeof (P3dcBox3d), 4, boxes), 0);
  gst_buffer_unref (out);
  parser_free (&p);
}

GST_END_TEST;

/* velocity=true: the velocity tensor after the count, each JSON box's vx
 * and vy (zeros for a box without them, and after the boxes); the caps say
 * velocity=true.  Without the property the records alone. */
GST_START_TEST (test_json_velocity)
{
  static const gchar text[] =
      "{\"frame\":0,\"pts\":null,\"count\":2,\"type\":\"3d\"}\n"
      "{\"x\":1,\"y\":2,\"z\":3,\"dx\":4,\"dy\":1,\"dz\":1.5,\"yaw\":0,"
      "\"vx\":2.5,\"vy\":-0.75,\"score\":0.5,\"label\":5}\n"
      "{\"x\":4,\"y\":5,\"z\":6,\"dx\":4,\"dy\":1,\"dz\":1.5,\"yaw\":0,"
      "\"score\":0.25,\"label\":1}\n";
  const gfloat want[6] = { 2.5f, -0.75f, 0.0f, 0.0f, 0.0f, 0.0f };
  Parser p = parser_new ("max-boxes=3 velocity=true");
  P3dcBox3d boxes[3];
  GstBuffer *out;

  fail_unless_equals_int (push_text (&p, text), GST_FLOW_OK);
  push_eos (&p);
  out = gst_harness_pull (p.h);
  fail_unless_equals_int (gst_buffer_n_memory (out), 3);
  elemtest_assert_tensor (out, 2, want, sizeof (want), "velocity");
  gst_buffer_unref (out);
  assert_caps (&p, "application/x-boxes3d, max-boxes=(int)3, "
      "velocity=(boolean)true");
  parser_free (&p);

  p = parser_new ("max-boxes=3");
  fail_unless_equals_int (push_text (&p, text), GST_FLOW_OK);
  push_eos (&p);
  fail_unless_equals_int (pull_3d (&p, boxes, 3), 2);
  fail_unless (boxes[0].x == 1.0f && boxes[1].score == 0.25f);
  assert_caps (&p, "application/x-boxes3d, max-boxes=(int)3");
  parser_free (&p);
}

GST_END_TEST;

GST_START_TEST (test_json_2d_from_the_text)
{
  Parser p = parser_new ("max-boxes=2");
  P3dcBox2d boxes[2];
  const P3dcBox2d expected = { 100.0f, 50.5f, 200.25f, 180.0f, 0.75f, 2 };
  GstBuffer *out;

  /* no frame line: the first box says 2D; the end of stream ends it */
  push_text (&p, "{\"x1\":100,\"y1\":50.5,\"x2\":200.25,\"y2\":180,"
      "\"score\":0.75,\"label\":2}");
  push_eos (&p);
  out = gst_harness_pull (p.h);
  fail_unless_equals_int (boxtest_read (out, sizeof (P3dcBox2d), 2, boxes), 1);
  gst_buffer_unref (out);
  boxtest_assert_2d_equal (&expected, &boxes[0], 0, 0);
  assert_caps (&p, "application/x-boxes2d, max-boxes=(int)2");
  parser_free (&p);
}

GST_END_TEST;

/* Hand-checked: h w l are dz dy dx, location and rotation_y are taken as
 * they are (LiDAR frame); 15 fields (ground truth) have score 1. */
GST_START_TEST (test_kitti_known)
{
  Parser p = parser_new ("format=kitti max-boxes=4");
  P3dcBox3d boxes[4];
  const P3dcBox3d car = { 10.5f, 2.25f, -0.8f, 3.9f, 1.6f, 1.56f, 1.57f,
    0.93f, 0
  };
  const P3dcBox3d cyclist = { -3.0f, 0.0f, -0.0f, 0.8f, 0.6f, 1.73f,
    -3.1415927f, 1.0f, 2
  };
  const P3dcBox3d numbered = { 1.0f, 2.0f, 3.0f, 6.0f, 5.0f, 4.0f, 0.0f,
    0.25f, 7
  };

  push_text (&p,
      "Car 0.00 0 -1.58 587.01 173.33 614.12 200.12 1.56 1.6 3.9 10.5 2.25 "
      "-0.8 1.57 0.93\n"
      "Cyclist\t-1 -1 -10 -1 -1 -1 -1  1.73 0.6 0.8 -3 0 -0 -3.1415927\n"
      "7 -1 -1 -10 -1 -1 -1 -1 4 5 6 1 2 3 0 0.25\n\n");
  fail_unless_equals_int (pull_3d (&p, boxes, 4), 3);
  boxtest_assert_3d_equal (&car, &boxes[0], 0, 0);
  boxtest_assert_3d_equal (&cyclist, &boxes[1], 0, 1);
  boxtest_assert_3d_equal (&numbered, &boxes[2], 0, 2);
  assert_caps (&p, "application/x-boxes3d, max-boxes=(int)4");
  parser_free (&p);

  /* 2D: the image box and the score; the 3D fields are read and ignored */
  p = parser_new ("format=kitti box-type=2d labels=Person,Rider max-boxes=1");
  {
    P3dcBox2d box2d;
    const P3dcBox2d rider = { 100.0f, 50.5f, 200.25f, 180.0f, 0.75f, 1 };
    GstBuffer *out;

    push_text (&p, "Rider -1 -1 -10 100 50.5 200.25 180 -1 -1 -1 -1000 -1000 "
        "-1000 -10 0.75\n");
    push_eos (&p);
    out = gst_harness_pull (p.h);
    fail_unless_equals_int (boxtest_read (out, sizeof (P3dcBox2d), 1, &box2d),
        1);
    gst_buffer_unref (out);
    boxtest_assert_2d_equal (&rider, &box2d, 0, 0);
    assert_caps (&p, "application/x-boxes2d, max-boxes=(int)1");
  }
  parser_free (&p);
}

GST_END_TEST;

/* Frames in KITTI text: every empty line ends one frame (two in a row: an
 * empty frame); a whitespace-only last line without a line end is none. */
GST_START_TEST (test_kitti_frames)
{
  Parser p = parser_new ("format=kitti max-boxes=2");
  P3dcBox3d boxes[2];
  const gchar *line = "Car -1 -1 -10 -1 -1 -1 -1 1 1 1 0 0 0 0 1\n";
  gchar *text = g_strconcat ("\n", line, line, "\n", "\n", line, "\n  ",
      NULL);

  push_text (&p, text);
  push_eos (&p);
  fail_unless_equals_int (gst_harness_buffers_received (p.h), 4);
  fail_unless_equals_int (pull_3d (&p, boxes, 2), 0);
  fail_unless_equals_int (pull_3d (&p, boxes, 2), 2);
  fail_unless_equals_int (pull_3d (&p, boxes, 2), 0);
  fail_unless_equals_int (pull_3d (&p, boxes, 2), 1);
  g_free (text);
  parser_free (&p);
}

GST_END_TEST;

/* frame-per-buffer: one buffer, one frame, whatever it holds (an empty
 * buffer is an empty frame, empty lines are ignored, the last line needs
 * no line end); the buffer's pts unless a frame line gives one. */
GST_START_TEST (test_frame_per_buffer)
{
  Parser p = parser_new ("format=kitti frame-per-buffer=true max-boxes=3");
  P3dcBox3d boxes[3];
  GstBuffer *in, *out;
  const gchar *text;

  text = "\nCar -1 -1 -10 -1 -1 -1 -1 1 1 1 0 0 0 0 1\n\n"
      "Car -1 -1 -10 -1 -1 -1 -1 1 1 1 0 0 0 0 1";
  in = gst_buffer_new_memdup (text, strlen (text));
  GST_BUFFER_PTS (in) = 7;
  fail_unless_equals_int (gst_harness_push (p.h, in), GST_FLOW_OK);
  in = gst_buffer_new ();
  GST_BUFFER_PTS (in) = 8;
  fail_unless_equals_int (gst_harness_push (p.h, in), GST_FLOW_OK);
  out = gst_harness_pull (p.h);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 7);
  fail_unless_equals_int (boxtest_read (out, 36, 3, boxes), 2);
  gst_buffer_unref (out);
  out = gst_harness_pull (p.h);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 8);
  fail_unless_equals_int (boxtest_read (out, 36, 3, boxes), 0);
  gst_buffer_unref (out);
  push_eos (&p);
  fail_unless_equals_int (gst_harness_buffers_received (p.h), 2);
  parser_free (&p);

  /* json: the frame line's pts wins; a second frame line is an error */
  p = parser_new ("frame-per-buffer=true max-boxes=3");
  text = "{\"frame\":3,\"pts\":99,\"count\":0}\n";
  in = gst_buffer_new_memdup (text, strlen (text));
  GST_BUFFER_PTS (in) = 8;
  fail_unless_equals_int (gst_harness_push (p.h, in), GST_FLOW_OK);
  out = gst_harness_pull (p.h);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 99);
  gst_buffer_unref (out);
  fail_unless_equals_int (push_text (&p, "{\"frame\":4}\n{\"frame\":5}\n"),
      GST_FLOW_ERROR);
  expect_message (&p, GST_MESSAGE_ERROR,
      "Malformed line 2 of input buffer 2: a second frame line");
  parser_free (&p);
}

GST_END_TEST;

/* frame-per-buffer, the buffers in one list: each is a frame as when
 * pushed alone, with its pts; the empty one an empty frame. */
GST_START_TEST (test_frame_per_buffer_list)
{
  static const guint expected[] = { 1, 0, 2 };
  Parser p = parser_new ("format=kitti frame-per-buffer=true max-boxes=3");
  const gchar *car = "Car -1 -1 -10 -1 -1 -1 -1 1 1 1 0 0 0 0 1\n";
  gchar *two = g_strconcat (car, car, NULL);
  GstBufferList *list = gst_buffer_list_new ();
  P3dcBox3d boxes[3];
  GstBuffer *in, *out;
  guint i;

  in = gst_buffer_new_memdup (car, strlen (car));
  GST_BUFFER_PTS (in) = 10;
  gst_buffer_list_add (list, in);
  in = gst_buffer_new ();
  GST_BUFFER_PTS (in) = 11;
  gst_buffer_list_add (list, in);
  in = gst_buffer_new_memdup (two, strlen (two));
  GST_BUFFER_PTS (in) = 12;
  gst_buffer_list_add (list, in);
  fail_unless_equals_int (gst_pad_push_list (p.h->srcpad, list), GST_FLOW_OK);
  for (i = 0; i < G_N_ELEMENTS (expected); i++) {
    out = gst_harness_pull (p.h);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (out), 10 + i);
    fail_unless_equals_int (boxtest_read (out, 36, 3, boxes), expected[i]);
    gst_buffer_unref (out);
  }
  push_eos (&p);
  fail_unless_equals_int (gst_harness_buffers_received (p.h), 3);
  parser_free (&p);
  g_free (two);
}

GST_END_TEST;

/* Records through boxenc and back through boxparse, in @chunks pieces of
 * text (0: one buffer per frame as boxenc wrote it, frame-per-buffer). */
static void
round_trip (const gchar * format, gboolean two_d, guint chunks, guint64 seed)
{
  const guint max_boxes = 40, n_frames = 12;
  gsize record_size = two_d ? sizeof (P3dcBox2d) : sizeof (P3dcBox3d);
  gboolean kitti = strcmp (format, "kitti") == 0;
  /* KITTI frames in one stream need the empty line; JSON takes it too */
  gboolean separate = (kitti && chunks > 0) || chunks == 7;
  gchar *enc_launch = g_strdup_printf ("boxenc format=%s%s", format,
      separate ? " separate-frames=true" : "");
  gchar *parse_properties = g_strdup_printf ("format=%s max-boxes=%u%s%s",
      format, max_boxes, chunks == 0 ? " frame-per-buffer=true" : "",
      kitti && two_d ? " box-type=2d" : "");
  gchar *caps = g_strdup_printf ("application/x-boxes%s, max-boxes=%u",
      two_d ? "2d" : "3d", max_boxes);
  GstHarness *enc = gst_harness_new_parse (enc_launch);
  Parser p = parser_new (parse_properties);
  guint8 *records[12], *read_back = g_malloc (max_boxes * record_size);
  guint counts[12], frame, i;
  GString *all_text = g_string_new (NULL);
  P3dTestRng rng;

  p3d_test_rng_init (&rng, seed);
  gst_harness_set_src_caps_str (enc, caps);
  for (frame = 0; frame < n_frames; frame++) {
    GstBuffer *in, *text;

    /* empty frames first, in the middle and last */
    counts[frame] = (frame == 0 || frame == 5 || frame == n_frames - 1) ? 0 :
        p3d_test_rng_below (&rng, max_boxes + 1);
    records[frame] = g_malloc (max_boxes * record_size);
    for (i = 0; i < counts[frame]; i++) {
      if (two_d)
        boxtest_random_2d (&rng, (P3dcBox2d *) records[frame] + i, TRUE);
      else
        boxtest_random_3d (&rng, (P3dcBox3d *) records[frame] + i, TRUE);
    }
    in = boxtest_buffer (records[frame], counts[frame], max_boxes, record_size);
    GST_BUFFER_PTS (in) = frame * 100 * GST_MSECOND;
    fail_unless_equals_int (gst_harness_push (enc, in), GST_FLOW_OK);
    text = gst_harness_pull (enc);
    if (chunks == 0) {
      GST_BUFFER_PTS (text) = frame * 100 * GST_MSECOND;
      fail_unless_equals_int (gst_harness_push (p.h, text), GST_FLOW_OK);
    } else {
      gchar *bytes = boxtest_text (text);

      g_string_append (all_text, bytes);
      g_free (bytes);
      gst_buffer_unref (text);
    }
  }
  if (chunks > 0) {
    gsize start = 0;

    /* cut anywhere, even inside a line or between '\r' and '\n' */
    for (i = 0; i < chunks; i++) {
      gsize end = i + 1 == chunks ? all_text->len :
          MAX (start, p3d_test_rng_below (&rng, all_text->len));

      if (end < start)
        end = start;
      fail_unless_equals_int (gst_harness_push (p.h,
              text_buffer (all_text->str + start, end - start)), GST_FLOW_OK);
      start = end;
    }
  }
  push_eos (&p);

  fail_unless_equals_int (gst_harness_buffers_received (p.h), n_frames);
  for (frame = 0; frame < n_frames; frame++) {
    GstBuffer *out = gst_harness_pull (p.h);
    guint count = boxtest_read (out, record_size, max_boxes, read_back);

    fail_unless_equals_int (count, counts[frame]);
    /* JSON carries the pts; KITTI only with one buffer per frame */
    if (!kitti || chunks == 0)
      fail_unless_equals_uint64 (GST_BUFFER_PTS (out),
          frame * 100 * GST_MSECOND);
    for (i = 0; i < count; i++) {
      if (two_d)
        boxtest_assert_2d_equal ((P3dcBox2d *) records[frame] + i,
            (P3dcBox2d *) read_back + i, frame, i);
      else
        boxtest_assert_3d_equal ((P3dcBox3d *) records[frame] + i,
            (P3dcBox3d *) read_back + i, frame, i);
    }
    gst_buffer_unref (out);
    g_free (records[frame]);
  }
  assert_caps (&p, caps);

  g_string_free (all_text, TRUE);
  g_free (read_back);
  g_free (enc_launch);
  g_free (parse_properties);
  g_free (caps);
  gst_harness_teardown (enc);
  parser_free (&p);
}

GST_START_TEST (test_round_trip)
{
  const gchar *formats[] = { "json", "kitti" };
  const guint chunks[] = { 0, 1, 7, 300 };
  guint f, c, two_d;

  for (f = 0; f < G_N_ELEMENTS (formats); f++)
    for (two_d = 0; two_d < 2; two_d++)
      for (c = 0; c < G_N_ELEMENTS (chunks); c++)
        round_trip (formats[f], two_d, chunks[c], 1000 + f * 100 + two_d * 10
            + c);
}

GST_END_TEST;

GST_START_TEST (test_malformed_lines)
{
  static const struct
  {
    const gchar *properties;
    const gchar *text;
    const gchar *message;
  } cases[] = {
    /* a truncated line, at the end of the stream */
    {"", "{\"frame\":0}\n{\"x\":1,\"y\":2",
        "Malformed line 2: not valid JSON"},
    {"", "hello world\n", "Malformed line 1: not valid JSON"},
    {"", "[1, 2]\n", "Malformed line 1: not a JSON object: \"[1, 2]\""},
    {"", "{\"y\":1}\n", "Malformed line 1: neither a frame line"},
    {"", "{\"x\":1,\"y\":2,\"z\":3,\"dx\":1,\"dy\":1,\"yaw\":0,\"score\":1,"
          "\"label\":0}\n", "Malformed line 1: field \"dz\" is missing"},
    {"", "{\"x\":NaN,\"y\":2,\"z\":3,\"dx\":1,\"dy\":1,\"dz\":1,\"yaw\":0,"
          "\"score\":1,\"label\":0}\n", "Malformed line 1: not valid JSON"},
    {"", "{\"x\":\"nan\",\"y\":2,\"z\":3,\"dx\":1,\"dy\":1,\"dz\":1,\"yaw\":0,"
          "\"score\":1,\"label\":0}\n",
        "Malformed line 1: field \"x\" is not a number"},
    {"", "{\"x\":1e39,\"y\":2,\"z\":3,\"dx\":1,\"dy\":1,\"dz\":1,\"yaw\":0,"
          "\"score\":1,\"label\":0}\n", "beyond the float range"},
    {"", "{\"x\":1,\"y\":2,\"z\":3,\"dx\":1,\"dy\":1,\"dz\":1,\"yaw\":0,"
          "\"score\":1,\"label\":1.5}\n",
        "Malformed line 1: field \"label\" is not an integer"},
    {"", "{\"x\":1,\"y\":2,\"z\":3,\"dx\":1,\"dy\":1,\"dz\":1,\"yaw\":0,"
          "\"score\":1,\"label\":3000000000}\n", "beyond the int32 range"},
    {"", "{\"x1\":1,\"y1\":2,\"x2\":3,\"y2\":4,\"score\":1,\"label\":0} "
          "{\"x1\":1}\n", "Malformed line 1: more than one JSON value"},
    {"", "{\"frame\":-1}\n", "field \"frame\" is not a non-negative integer"},
    /* integers beyond 64 bits, which json-glib wraps without a word
     * (a label of 2^63 once became -1 and this frame was accepted) */
    {"", "{\"x\":1,\"y\":2,\"z\":3,\"dx\":1,\"dy\":1,\"dz\":1,\"yaw\":0,"
          "\"score\":1,\"label\":9223372036854775808}\n",
        "Malformed line 1: field \"label\" is 9223372036854775808, beyond "
          "the 64-bit integer range"},
    {"", "{\"x\":1,\"y\":2,\"z\":3,\"dx\":1,\"dy\":1,\"dz\":1,\"yaw\":0,"
          "\"score\":1,\"label\":18446744073709551615}\n",
        "field \"label\" is 18446744073709551615, beyond"},
    {"", "{\"x\":1,\"y\":2,\"z\":3,\"dx\":1,\"dy\":1,\"dz\":1,\"yaw\":0,"
          "\"score\":1,\"label\":-9223372036854775809}\n",
        "field \"label\" is -9223372036854775809, beyond"},
    {"", "{\"frame\":-18446744073709551617}\n",
        "field \"frame\" is -18446744073709551617, beyond the 64-bit"},
    {"", "{\"frame\":0,\"pts\":18446744073709551616}\n",
        "field \"pts\" is 18446744073709551616, beyond"},
    {"", "{\"frame\":0,\"count\":36893488147419103232}\n",
        "field \"count\" is 36893488147419103232, beyond"},
    {"", "{\"x\":100000000000000000000,\"y\":2,\"z\":3,\"dx\":1,\"dy\":1,"
          "\"dz\":1,\"yaw\":0,\"score\":1,\"label\":0}\n",
        "field \"x\" is 100000000000000000000, beyond the 64-bit"},
    /* within 64 bits: the checks that were there still say it */
    {"", "{\"frame\":-9223372036854775808}\n",
        "field \"frame\" is not a non-negative integer"},
    {"", "{\"frame\":0,\"pts\":\"soon\"}\n", "field \"pts\" is neither null"},
    {"", "{\"frame\":0,\"type\":\"4d\"}\n", "field \"type\" is neither"},
    {"box-type=2d", "{\"frame\":0,\"type\":\"3d\"}\n",
        "the frame line says 3d boxes, the stream holds 2d boxes"},
    {"box-type=2d", "{\"x\":1,\"y\":2,\"z\":3,\"dx\":1,\"dy\":1,\"dz\":1,"
          "\"yaw\":0,\"score\":1,\"label\":0}\n",
        "field \"x1\" is missing"},
    /* the second line's kind follows the first line's */
    {"", "{\"x1\":1,\"y1\":2,\"x2\":3,\"y2\":4,\"score\":1,\"label\":0}\n"
          "{\"x\":1,\"y\":2,\"z\":3,\"dx\":1,\"dy\":1,\"dz\":1,\"yaw\":0,"
          "\"score\":1,\"label\":0}\n",
        "Malformed line 2: field \"x1\" is missing"},
    {"format=kitti", "Car 0 0 0 1 2 3 4 1 1 1 0 0 0\n",
        "Malformed line 1: 14 fields, a KITTI label line has 15"},
    {"format=kitti", "Car 0 0 0 1 2 3 4 1 1 1 0 0 0 0 1 9\n",
        "Malformed line 1: 17 fields"},
    {"format=kitti", "hello world\n", "Malformed line 1: 2 fields"},
    {"format=kitti", "Car 0 0 0 1 2 3 4 1 1,5 1 0 0 0 0 1\n",
        "field 10 (width) is not a number: \"1,5\""},
    /* a finite value beyond float32 says so, as the JSON path does
     * (it once said "is not a number") */
    {"format=kitti", "Car 0 0 0 1 2 3 4 1 1 1 0 0 0 0 1e39\n",
        "field 16 (score) is 1e39, beyond the float range"},
    {"format=kitti", "Car 0 0 0 1 2 3 4 1 1 1 -1e400 0 0 0 1\n",
        "field 12 (x) is -1e400, beyond the float range"},
    /* raw bytes of a bad value are escaped: the message is valid UTF-8 */
    {"format=kitti", "Car 0 0 0 1 2 3 4 1 1 1 0 0 0 0 \x8d\x84\n",
        "field 16 (score) is not a number: \"\\215\\204\""},
    {"format=kitti", "Car 0 0 0 1 2 3 4 1 1 1 0 0 0 0 0x1g\n",
        "field 16 (score) is not a number"},
    /* a NUL byte: binary data */
    {"format=kitti", "Car 0 0 0 1 2 3 4 1 1 1 0 0 0 0 1\n\x01\x02",
        "Malformed line 2"},
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    Parser p = parser_new (cases[i].properties);

    GST_INFO ("case %u: %s", i, cases[i].text);
    push_text (&p, cases[i].text);
    push_eos (&p);
    expect_message (&p, GST_MESSAGE_ERROR, cases[i].message);
    parser_free (&p);
  }
}

GST_END_TEST;

GST_START_TEST (test_binary_input)
{
  Parser p = parser_new ("format=kitti");
  const gchar binary[] = { 'C', 'a', 'r', ' ', 0, 1, 2, '\n' };
  gchar *long_line;

  fail_unless_equals_int (gst_harness_push (p.h, text_buffer (binary,
              sizeof (binary))), GST_FLOW_ERROR);
  expect_message (&p, GST_MESSAGE_ERROR, "Malformed line 1: a NUL byte");
  parser_free (&p);

  /* no line end for 64 KiB: refused, not buffered without bound */
  p = parser_new ("");
  long_line = g_strnfill (40000, 'x');
  fail_unless_equals_int (push_text (&p, long_line), GST_FLOW_OK);
  fail_unless_equals_int (push_text (&p, long_line), GST_FLOW_ERROR);
  expect_message (&p, GST_MESSAGE_ERROR,
      "Malformed line 1: longer than 65536 bytes");
  /* after an error nothing more is read: no second error at EOS */
  fail_unless_equals_int (push_text (&p, "{\"frame\":0}\n"), GST_FLOW_ERROR);
  push_eos (&p);
  fail_unless_equals_int (gst_harness_buffers_received (p.h), 0);
  g_free (long_line);
  parser_free (&p);
}

GST_END_TEST;

GST_START_TEST (test_count_mismatch)
{
  Parser p = parser_new ("");

  push_text (&p, "{\"frame\":0,\"count\":2}\n"
      "{\"x\":1,\"y\":2,\"z\":3,\"dx\":1,\"dy\":1,\"dz\":1,\"yaw\":0,"
      "\"score\":1,\"label\":0}\n");
  push_eos (&p);
  expect_message (&p, GST_MESSAGE_ERROR,
      "Frame line 1 announced 2 boxes, 1 followed");
  fail_unless_equals_int (gst_harness_buffers_received (p.h), 0);
  parser_free (&p);
}

GST_END_TEST;

/* A KITTI type neither in labels nor a number: its lines are dropped, one
 * warning per name; the other lines are kept. */
GST_START_TEST (test_unknown_label)
{
  Parser p = parser_new ("format=kitti max-boxes=4");
  P3dcBox3d boxes[4];
  GstMessage *message;

  push_text (&p, "DontCare -1 -1 -10 1 2 3 4 -1 -1 -1 -1000 -1000 -1000 -10\n"
      "Car -1 -1 -10 -1 -1 -1 -1 1 1 1 0 0 0 0 1\n"
      "DontCare -1 -1 -10 1 2 3 4 -1 -1 -1 -1000 -1000 -1000 -10\n"
      "Van -1 -1 -10 -1 -1 -1 -1 1 1 1 0 0 0 0 1\n"
      "Pedestrian -1 -1 -10 -1 -1 -1 -1 1 1 1 0 0 0 0 1\n");
  push_eos (&p);
  fail_unless_equals_int (pull_3d (&p, boxes, 4), 2);
  fail_unless_equals_int (boxes[0].label, 0);
  fail_unless_equals_int (boxes[1].label, 1);
  expect_message (&p, GST_MESSAGE_WARNING,
      "Type \"DontCare\" (line 1) is not in labels");
  expect_message (&p, GST_MESSAGE_WARNING,
      "Type \"Van\" (line 4) is not in labels");
  message = elemtest_pop (p.bus, GST_MESSAGE_WARNING);
  fail_unless (message == NULL, "a second warning for DontCare");
  parser_free (&p);
}

GST_END_TEST;

/* Boxes beyond max-boxes are dropped with a warning, posted again only
 * after a frame that fits. */
GST_START_TEST (test_too_many_boxes)
{
  Parser p = parser_new ("format=kitti max-boxes=2");
  P3dcBox3d boxes[2];
  const gchar *line = "Car -1 -1 -10 -1 -1 -1 -1 1 1 1 %u 0 0 0 1\n";
  GString *text = g_string_new (NULL);
  guint i;

  for (i = 0; i < 3; i++)
    g_string_append_printf (text, line, i);
  g_string_append (text, "\n");
  /* again, then a frame that fits, then again */
  for (i = 0; i < 3; i++)
    g_string_append_printf (text, line, i);
  g_string_append (text, "\n");
  g_string_append_printf (text, line, 0);
  g_string_append (text, "\n");
  for (i = 0; i < 4; i++)
    g_string_append_printf (text, line, i);
  push_text (&p, text->str);
  push_eos (&p);

  fail_unless_equals_int (pull_3d (&p, boxes, 2), 2);
  fail_unless (boxes[0].x == 0.0f && boxes[1].x == 1.0f);
  fail_unless_equals_int (pull_3d (&p, boxes, 2), 2);
  fail_unless_equals_int (pull_3d (&p, boxes, 2), 1);
  fail_unless_equals_int (pull_3d (&p, boxes, 2), 2);
  /* data lost to the element's own setting (docs/development.md) */
  expect_warning_code (&p, GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED,
      "Frame 0 has 3 boxes, more than max-boxes 2: the last 1 were dropped");
  expect_warning_code (&p, GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED,
      "Frame 3 has 4 boxes");
  g_string_free (text, TRUE);
  parser_free (&p);
}

GST_END_TEST;

/* No text: no frame, only EOS. Empty lines only (frame-per-buffer): one
 * empty frame per buffer. */
GST_START_TEST (test_empty_input)
{
  Parser p = parser_new ("");
  GstEvent *event;
  P3dcBox3d boxes[1];

  push_eos (&p);
  fail_unless_equals_int (gst_harness_buffers_received (p.h), 0);
  while ((event = gst_harness_try_pull_event (p.h)) != NULL) {
    fail_if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS);
    gst_event_unref (event);
  }
  parser_free (&p);

  p = parser_new ("frame-per-buffer=true max-boxes=1");
  push_text (&p, "\n\n");
  fail_unless_equals_int (pull_3d (&p, boxes, 1), 0);
  parser_free (&p);
}

GST_END_TEST;

/* With nothing in the text to tell, downstream's preference decides. */
GST_START_TEST (test_box_type_from_downstream)
{
  Parser p = parser_new ("max-boxes=3");
  GstBuffer *out;

  gst_harness_set_sink_caps_str (p.h, "application/x-boxes2d");
  push_text (&p, "\n");
  out = gst_harness_pull (p.h);
  gst_buffer_unref (out);
  assert_caps (&p, "application/x-boxes2d, max-boxes=(int)3");
  parser_free (&p);
}

GST_END_TEST;

static Suite *
boxparse_suite (void)
{
  Suite *s = suite_create ("boxparse");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_json_known);
  tcase_add_test (tc, test_json_velocity);
  tcase_add_test (tc, test_json_2d_from_the_text);
  tcase_add_test (tc, test_kitti_known);
  tcase_add_test (tc, test_kitti_frames);
  tcase_add_test (tc, test_frame_per_buffer);
  tcase_add_test (tc, test_frame_per_buffer_list);
  tcase_add_test (tc, test_round_trip);
  tcase_add_test (tc, test_malformed_lines);
  tcase_add_test (tc, test_binary_input);
  tcase_add_test (tc, test_count_mismatch);
  tcase_add_test (tc, test_unknown_label);
  tcase_add_test (tc, test_too_many_boxes);
  tcase_add_test (tc, test_empty_input);
  tcase_add_test (tc, test_box_type_from_downstream);
  return s;
}

P3D_CHECK_MAIN (boxparse);
