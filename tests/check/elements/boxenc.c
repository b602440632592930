/* boxenc: known records give exactly the expected JSON lines and KITTI
 * lines (hand-checked), non-finite values still give valid JSON, empty
 * frames, timestamps, raw records read back from a file as one memory, a
 * count over max-boxes, numbers independent of the locale. */
#include <locale.h>
#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <json-glib/json-glib.h>

#include "p3dtest-box.h"
#include "p3dtest-elem.h"
#include "p3dperception.h"
#include "p3dtest.h"

static const P3dcBox3d car = { 10.5f, 2.25f, -0.8f, 3.9f, 1.6f, 1.56f, 1.57f,
  0.93f, 0
};

static const P3dcBox3d pedestrian = { -3.0f, 0.0f, -0.0f, 0.8f, 0.6f, 1.73f,
  -3.14159274f, 0.5f, 1
};

static const P3dcBox3d unnamed = { 1.5f, -2.25f, 0.125f, 4.0f, 1.75f, 1.5f,
  0.1f, 0.5f, 5
};
static const P3dcBox2d cyclist = { 100.0f, 50.5f, 200.25f, 180.0f, 0.75f, 2 };
static const P3dcBox2d negative = { 0.0f, 1e-3f, 1e6f, 1234567.0f, 0.0f, -1 };

static GstHarness *
enc_harness (const gchar * properties, const gchar * caps)
{
  gchar *launch = g_strdup_printf ("boxenc %s", properties);
  GstHarness *h = gst_harness_new_parse (launch);

  gst_harness_set_src_caps_str (h, caps);
  g_free (launch);
  return h;
}

/* Pushes one frame and returns its text (free it). */
static gchar *
encode (GstHarness * h, const void *records, guint count, guint max_boxes,
    gsize record_size, GstClockTime pts)
{
  GstBuffer *in = boxtest_buffer (records, count, max_boxes, record_size);
  GstBuffer *out;
  gchar *text;

  GST_BUFFER_PTS (in) = pts;
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless (out != NULL);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), pts);
  text = boxtest_text (out);
  gst_buffer_unref (out);
  return text;
}

GST_START_TEST (test_json_3d_known)
{
  GstHarness *h = enc_harness ("", "application/x-boxes3d, max-boxes=4");
  const P3dcBox3d boxes[] = { unnamed, pedestrian };
  gchar *text;
  GstCaps *caps;

  text = encode (h, boxes, 2, 4, sizeof (P3dcBox3d), GST_SECOND);
  /* json-glib writes a double to 17 digits: 0.1f is 0.10000000149011612 */
  fail_unless_equals_string (text,
      "{\"frame\":0,\"pts\":1000000000,\"count\":2,\"type\":\"3d\"}\n"
      "{\"x\":1.5,\"y\":-2.25,\"z\":0.125,\"dx\":4.0,\"dy\":1.75,\"dz\":1.5,"
      "\"yaw\":0.10000000149011612,\"score\":0.5,\"label\":5}\n"
      "{\"x\":-3.0,\"y\":0.0,\"z\":-0.0,\"dx\":0.80000001192092896,"
      "\"dy\":0.60000002384185791,\"dz\":1.7300000190734863,"
      "\"yaw\":-3.1415927410125732,\"score\":0.5,\"label\":1}\n");
  g_free (text);

  caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless (gst_structure_has_name (gst_caps_get_structure (caps, 0),
          "application/x-json-lines"));
  gst_caps_unref (caps);

  /* frames are numbered; a buffer without a timestamp has a null pts */
  text = encode (h, boxes, 0, 4, sizeof (P3dcBox3d), GST_CLOCK_TIME_NONE);
  fail_unless_equals_string (text,
      "{\"frame\":1,\"pts\":null,\"count\":0,\"type\":\"3d\"}\n");
  g_free (text);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Boxes with a velocity (velocity=true): vx and vy after yaw in JSON
 * lines; KITTI lines have no place for them. */
GST_START_TEST (test_json_velocity)
{
  GstHarness *h = enc_harness ("", "application/x-boxes3d, max-boxes=3, "
      "velocity=true");
  const P3dcBox3d boxes[3] = { unnamed, pedestrian, {0,} };
  const gfloat velocity[6] = { 2.5f, -0.5f, 0.0f, 1.25f, 7.0f, 7.0f };
  const guint32 count = 2;
  gconstpointer data[3] = { boxes, &count, velocity };
  gsize sizes[3] = { sizeof (boxes), 4, sizeof (velocity) };
  GstBuffer *out;
  gchar *text;

  fail_unless_equals_int (gst_harness_push (h,
          elemtest_tensors_buffer (3, data, sizes)), GST_FLOW_OK);
  out = gst_harness_pull (h);
  text = boxtest_text (out);
  gst_buffer_unref (out);
  fail_unless_equals_string (text,
      "{\"frame\":0,\"pts\":null,\"count\":2,\"type\":\"3d\"}\n"
      "{\"x\":1.5,\"y\":-2.25,\"z\":0.125,\"dx\":4.0,\"dy\":1.75,\"dz\":1.5,"
      "\"yaw\":0.10000000149011612,\"vx\":2.5,\"vy\":-0.5,\"score\":0.5,"
      "\"label\":5}\n"
      "{\"x\":-3.0,\"y\":0.0,\"z\":-0.0,\"dx\":0.80000001192092896,"
      "\"dy\":0.60000002384185791,\"dz\":1.7300000190734863,"
      "\"yaw\":-3.1415927410125732,\"vx\":0.0,\"vy\":1.25,\"score\":0.5,"
      "\"label\":1}\n");
  g_free (text);
  gst_harness_teardown (h);

  /* a buffer without the velocity tensor does not fit these caps */
  h = enc_harness ("", "application/x-boxes3d, max-boxes=3, velocity=true");
  gst_harness_play (h);
  fail_unless_equals_int (gst_harness_push (h, boxtest_buffer (boxes, 2, 3,
              sizeof (P3dcBox3d))), GST_FLOW_ERROR);
  gst_harness_teardown (h);

  h = enc_harness ("format=kitti", "application/x-boxes3d, max-boxes=3, "
      "velocity=true");
  fail_unless_equals_int (gst_harness_push (h,
          elemtest_tensors_buffer (3, data, sizes)), GST_FLOW_OK);
  out = gst_harness_pull (h);
  text = boxtest_text (out);
  gst_buffer_unref (out);
  fail_unless (strstr (text, "2.5") == NULL && strstr (text, "1.25") == NULL,
      "%s", text);
  fail_unless_equals_int (strlen (text) > 0, TRUE);
  g_free (text);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_json_2d_known)
{
  GstHarness *h = enc_harness ("format=json",
      "application/x-boxes2d, max-boxes=2");
  const P3dcBox2d boxes[] = { cyclist, negative };
  gchar *text;

  text = encode (h, boxes, 2, 2, sizeof (P3dcBox2d), 40 * GST_MSECOND);
  fail_unless_equals_string (text,
      "{\"frame\":0,\"pts\":40000000,\"count\":2,\"type\":\"2d\"}\n"
      "{\"x1\":100.0,\"y1\":50.5,\"x2\":200.25,\"y2\":180.0,\"score\":0.75,"
      "\"label\":2}\n"
      "{\"x1\":0.0,\"y1\":0.0010000000474974513,\"x2\":1000000.0,"
      "\"y2\":1234567.0,\"score\":0.0,\"label\":-1}\n");
  g_free (text);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Every line must be one valid JSON object; NaN and infinities are the
 * strings "NaN", "Infinity", "-Infinity". */
GST_START_TEST (test_json_non_finite_is_valid_json)
{
  GstHarness *h = enc_harness ("", "application/x-boxes3d, max-boxes=1");
  P3dcBox3d box = { NAN, INFINITY, -INFINITY, -NAN, 1.0f, 1.0f, 0.0f, NAN, 0 };
  gchar *text, **lines;
  JsonParser *parser = json_parser_new ();
  JsonObject *object;
  guint i;

  text = encode (h, &box, 1, 1, sizeof (box), 0);
  lines = g_strsplit (text, "\n", -1);
  fail_unless_equals_int (g_strv_length (lines), 3);
  fail_unless_equals_string (lines[2], "");
  for (i = 0; i < 2; i++) {
    GError *error = NULL;

    fail_unless (json_parser_load_from_data (parser, lines[i], -1, &error),
        "line %u is not valid JSON: %s", i + 1, lines[i]);
    fail_unless (JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)));
  }
  object = json_node_get_object (json_parser_get_root (parser));
  fail_unless_equals_string (json_object_get_string_member (object, "x"),
      "NaN");
  fail_unless_equals_string (json_object_get_string_member (object, "y"),
      "Infinity");
  fail_unless_equals_string (json_object_get_string_member (object, "z"),
      "-Infinity");
  fail_unless_equals_string (json_object_get_string_member (object, "dx"),
      "NaN");
  fail_unless_equals_string (json_object_get_string_member (object, "score"),
      "NaN");
  g_strfreev (lines);
  g_free (text);
  g_object_unref (parser);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Hand-checked KITTI lines: type, truncated -1, occluded -1, alpha -10,
 * bbox -1 x4, then h w l = dz dy dx, x y z, rotation_y = yaw, score; the
 * shortest decimals that read back to the same floats. */
GST_START_TEST (test_kitti_3d_known)
{
  GstHarness *h = enc_harness ("format=kitti",
      "application/x-boxes3d, max-boxes=8");
  P3dcBox3d boxes[] = { car, pedestrian, unnamed, car };
  gchar *text;
  GstCaps *caps;

  boxes[3].label = -1;
  text = encode (h, boxes, 4, 8, sizeof (P3dcBox3d), 0);
  fail_unless_equals_string (text,
      "Car -1 -1 -10 -1 -1 -1 -1 1.56 1.6 3.9 10.5 2.25 -0.8 1.57 0.93\n"
      "Pedestrian -1 -1 -10 -1 -1 -1 -1 1.73 0.6 0.8 -3 0 -0 -3.1415927 0.5\n"
      "5 -1 -1 -10 -1 -1 -1 -1 1.5 1.75 4 1.5 -2.25 0.125 0.1 0.5\n"
      "-1 -1 -1 -10 -1 -1 -1 -1 1.56 1.6 3.9 10.5 2.25 -0.8 1.57 0.93\n");
  g_free (text);
  caps = gst_pad_get_current_caps (h->sinkpad);
  fail_unless (gst_structure_has_name (gst_caps_get_structure (caps, 0),
          "text/x-kitti-label"));
  gst_caps_unref (caps);
  gst_harness_teardown (h);

  /* other names; non-finite values */
  h = enc_harness ("format=kitti labels=\" Van , Truck\"",
      "application/x-boxes3d, max-boxes=8");
  boxes[0].x = NAN;
  boxes[0].y = INFINITY;
  boxes[0].z = -INFINITY;
  text = encode (h, boxes, 3, 8, sizeof (P3dcBox3d), 0);
  fail_unless_equals_string (text,
      "Van -1 -1 -10 -1 -1 -1 -1 1.56 1.6 3.9 nan inf -inf 1.57 0.93\n"
      "Truck -1 -1 -10 -1 -1 -1 -1 1.73 0.6 0.8 -3 0 -0 -3.1415927 0.5\n"
      "5 -1 -1 -10 -1 -1 -1 -1 1.5 1.75 4 1.5 -2.25 0.125 0.1 0.5\n");
  g_free (text);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* A labels value that cannot round-trip is refused, the old one kept. */
GST_START_TEST (test_labels_property)
{
  GstElement *enc = gst_element_factory_make ("boxenc", NULL);
  const gchar *refused[] = { "Car,7", "Car,,Van", "Car,Car", "Big Car" };
  gchar *labels;
  guint i;

  g_object_set (enc, "labels", " Van , Truck ", NULL);
  for (i = 0; i < G_N_ELEMENTS (refused); i++)
    g_object_set (enc, "labels", refused[i], NULL);
  g_object_get (enc, "labels", &labels, NULL);
  fail_unless_equals_string (labels, " Van , Truck ");
  g_free (labels);
  g_object_set (enc, "labels", "", NULL);
  g_object_get (enc, "labels", &labels, NULL);
  fail_unless_equals_string (labels, "");
  g_free (labels);
  gst_object_unref (enc);
}

GST_END_TEST;

GST_START_TEST (test_kitti_2d_known)
{
  GstHarness *h = enc_harness ("format=kitti",
      "application/x-boxes2d, max-boxes=2");
  const P3dcBox2d boxes[] = { cyclist, negative };
  gchar *text;

  text = encode (h, boxes, 2, 2, sizeof (P3dcBox2d), 0);
  fail_unless_equals_string (text,
      "Cyclist -1 -1 -10 100 50.5 200.25 180 -1 -1 -1 -1000 -1000 -1000 -10 "
      "0.75\n"
      "-1 -1 -1 -10 0 0.001 1000000 1234567 -1 -1 -1 -1000 -1000 -1000 -10 0\n");
  g_free (text);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_empty_frames)
{
  GstHarness *h;
  gchar *text;

  /* json: the frame line alone */
  h = enc_harness ("", "application/x-boxes3d, max-boxes=3");
  text = encode (h, NULL, 0, 3, sizeof (P3dcBox3d), 5);
  fail_unless_equals_string (text,
      "{\"frame\":0,\"pts\":5,\"count\":0,\"type\":\"3d\"}\n");
  g_free (text);
  gst_harness_teardown (h);

  /* kitti: an empty buffer, as an empty label file */
  h = enc_harness ("format=kitti", "application/x-boxes3d, max-boxes=3");
  text = encode (h, NULL, 0, 3, sizeof (P3dcBox3d), 5);
  fail_unless_equals_string (text, "");
  g_free (text);
  gst_harness_teardown (h);

  /* kitti with separate-frames: the empty line alone */
  h = enc_harness ("format=kitti separate-frames=true",
      "application/x-boxes3d, max-boxes=3");
  text = encode (h, NULL, 0, 3, sizeof (P3dcBox3d), 5);
  fail_unless_equals_string (text, "\n");
  g_free (text);
  text = encode (h, &car, 1, 3, sizeof (P3dcBox3d), 6);
  fail_unless_equals_string (text,
      "Car -1 -1 -10 -1 -1 -1 -1 1.56 1.6 3.9 10.5 2.25 -0.8 1.57 0.93\n\n");
  g_free (text);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* filesrc and multifilesrc read a raw record file back as one memory of the
 * total size: boxenc takes that too. */
GST_START_TEST (test_raw_records_in_one_memory)
{
  GstHarness *h = enc_harness ("format=kitti",
      "application/x-boxes3d, max-boxes=2");
  guint8 raw[2 * 36 + 4] = { 0 };
  guint32 count = 1;
  GstBuffer *out;
  gchar *text;

  memcpy (raw, &car, sizeof (car));
  memcpy (raw + 72, &count, 4);
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_new_memdup (raw,
              sizeof (raw))), GST_FLOW_OK);
  out = gst_harness_pull (h);
  text = boxtest_text (out);
  fail_unless_equals_string (text,
      "Car -1 -1 -10 -1 -1 -1 -1 1.56 1.6 3.9 10.5 2.25 -0.8 1.57 0.93\n");
  g_free (text);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* A segment in bytes (raw records read by filesrc) would make filesink
 * seek back over the text: it goes out as a time segment. */
GST_START_TEST (test_bytes_segment_becomes_time)
{
  GstHarness *h = enc_harness ("", "application/x-boxes3d, max-boxes=1");
  GstSegment segment;
  GstEvent *event;
  gboolean seen = FALSE;
  gchar *text;

  gst_segment_init (&segment, GST_FORMAT_BYTES);
  segment.start = segment.position = 3 * 40;
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&segment)));
  text = encode (h, &car, 1, 1, sizeof (car), GST_CLOCK_TIME_NONE);
  g_free (text);
  while ((event = gst_harness_try_pull_event (h)) != NULL) {
    if (GST_EVENT_TYPE (event) == GST_EVENT_SEGMENT) {
      const GstSegment *out;

      gst_event_parse_segment (event, &out);
      fail_unless_equals_int (out->format, GST_FORMAT_TIME);
      fail_unless_equals_uint64 (out->start, 0);
      seen = TRUE;
    }
    gst_event_unref (event);
  }
  fail_unless (seen);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* The sink pad takes memory:CUDAMemory caps too; a buffer under them is
 * read on the host whatever memory holds it (boxenc_cuda covers device
 * memory on a GPU). */
GST_START_TEST (test_cuda_caps_negotiate)
{
  GstHarness *h = enc_harness ("format=kitti",
      "application/x-boxes3d(memory:CUDAMemory), max-boxes=2");
  GstCaps *caps;
  gchar *text;

  text = encode (h, &car, 1, 2, sizeof (car), 0);
  fail_unless_equals_string (text,
      "Car -1 -1 -10 -1 -1 -1 -1 1.56 1.6 3.9 10.5 2.25 -0.8 1.57 0.93\n");
  g_free (text);
  caps = gst_pad_get_current_caps (h->srcpad);
  fail_unless (p3d_caps_is_cuda (caps));
  gst_caps_unref (caps);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_bad_input)
{
  GstHarness *h = enc_harness ("", "application/x-boxes3d, max-boxes=2");
  GstBus *bus = gst_bus_new ();
  GstBuffer *in;
  GstMessage *message;
  gchar *text;
  guint32 too_many = 3;

  gst_element_set_bus (h->element, bus);

  /* a count beyond the capacity of the caps */
  in = boxtest_buffer (&car, 1, 2, sizeof (P3dcBox3d));
  gst_buffer_fill (in, 2 * sizeof (P3dcBox3d), &too_many, 4);
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_ERROR);
  message = elemtest_pop (bus, GST_MESSAGE_ERROR);
  fail_unless (message != NULL);
  text = elemtest_message_text (message);
  fail_unless (strstr (text, "Box count 3 is more than max-boxes 2") != NULL,
      "%s", text);
  g_free (text);
  gst_message_unref (message);

  /* a buffer that is not the tensors of the caps */
  fail_unless_equals_int (gst_harness_push (h, gst_buffer_new_allocate (NULL,
              10, NULL)), GST_FLOW_ERROR);
  message = elemtest_pop (bus, GST_MESSAGE_ERROR);
  fail_unless (message != NULL);
  text = elemtest_message_text (message);
  fail_unless (strstr (text, "does not hold the boxes") != NULL, "%s", text);
  g_free (text);
  gst_message_unref (message);
  fail_unless_equals_int (gst_harness_buffers_received (h), 0);

  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Numbers are written the same in a locale whose decimal separator is a
 * comma (when this machine has one). */
GST_START_TEST (test_locale_independent)
{
  const gchar *locales[] = { "de_DE.UTF-8", "fr_FR.UTF-8", "de_DE.utf8",
    "fr_FR.utf8", "ru_RU.UTF-8"
  };
  gchar *saved = g_strdup (setlocale (LC_NUMERIC, NULL));
  const gchar *found = NULL;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (locales) && found == NULL; i++)
    if (setlocale (LC_NUMERIC, locales[i]) != NULL)
      found = locales[i];
  if (found == NULL) {
    GST_INFO ("no comma-decimal locale installed: only the C locale checked");
  } else {
    GstHarness *h = enc_harness ("format=kitti",
        "application/x-boxes3d, max-boxes=1");
    GstHarness *j = enc_harness ("", "application/x-boxes3d, max-boxes=1");
    gchar *text;

    text = encode (h, &car, 1, 1, sizeof (car), 0);
    fail_unless_equals_string (text,
        "Car -1 -1 -10 -1 -1 -1 -1 1.56 1.6 3.9 10.5 2.25 -0.8 1.57 0.93\n");
    g_free (text);
    text = encode (j, &unnamed, 1, 1, sizeof (unnamed), 0);
    fail_unless (strstr (text, "\"x\":1.5,\"y\":-2.25") != NULL, "%s", text);
    g_free (text);
    gst_harness_teardown (h);
    gst_harness_teardown (j);
  }
  setlocale (LC_NUMERIC, saved);
  g_free (saved);
}

GST_END_TEST;

static Suite *
boxenc_suite (void)
{
  Suite *s = suite_create ("boxenc");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_json_3d_known);
  tcase_add_test (tc, test_json_velocity);
  tcase_add_test (tc, test_json_2d_known);
  tcase_add_test (tc, test_json_non_finite_is_valid_json);
  tcase_add_test (tc, test_kitti_3d_known);
  tcase_add_test (tc, test_labels_property);
  tcase_add_test (tc, test_kitti_2d_known);
  tcase_add_test (tc, test_empty_frames);
  tcase_add_test (tc, test_raw_records_in_one_memory);
  tcase_add_test (tc, test_cuda_caps_negotiate);
  tcase_add_test (tc, test_bytes_segment_becomes_time);
  tcase_add_test (tc, test_bad_input);
  tcase_add_test (tc, test_locale_independent);
  return s;
}

P3D_CHECK_MAIN (boxenc);
