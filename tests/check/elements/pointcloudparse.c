/* pointcloudparse: one file is one sweep however it is split (push mode
 * through GstHarness, pull mode through filesrc), points-per-frame, float16
 * input against an independent decoding of every half, the presets, output
 * formats other than the input's, format=auto refused at start, and
 * truncated and empty input. */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>
#include <gst/app/gstappsink.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "p3dperception.h"
#include "p3dtest.h"

/* @n_points records of @channels random float32 values. */
static gfloat *
random_records (guint64 seed, gsize n_points, guint channels)
{
  gfloat *values = g_new (gfloat, n_points * channels);
  P3dTestRng rng;
  gsize i;

  p3d_test_rng_init (&rng, seed);
  for (i = 0; i < n_points * channels; i++)
    values[i] = p3d_test_rng_uniform (&rng, -80.0f, 80.0f);
  return values;
}

static GstHarness *
parse_harness (const gchar * properties, const gchar * sink_caps)
{
  gchar *launch = g_strdup_printf ("pointcloudparse %s", properties);
  GstHarness *h = gst_harness_new_parse (launch);

  g_free (launch);
  /* what a source of bytes sends: stream-start, caps, segment */
  gst_harness_set_src_caps_str (h, "application/octet-stream");
  gst_harness_set_sink_caps_str (h, sink_caps);
  gst_harness_play (h);
  return h;
}

/* Pushes @size bytes of @data in pieces of @piece bytes. */
static void
push_pieces (GstHarness * h, gconstpointer data, gsize size, gsize piece)
{
  gsize offset;

  for (offset = 0; offset < size; offset += piece)
    fail_unless_equals_int (gst_harness_push (h,
            gst_buffer_new_memdup ((const guint8 *) data + offset,
                MIN (piece, size - offset))), GST_FLOW_OK);
}

static void
assert_buffer_equals (GstBuffer * buffer, gconstpointer expected, gsize size)
{
  GstMapInfo map;

  fail_unless (gst_buffer_map (buffer, &map, GST_MAP_READ));
  fail_unless_equals_uint64 (map.size, size);
  fail_unless (memcmp (map.data, expected, size) == 0);
  gst_buffer_unmap (buffer, &map);
}

static const gchar *
output_format (GstHarness * h)
{
  GstCaps *caps = gst_pad_get_current_caps (h->sinkpad);
  static gchar format[16];

  fail_unless (caps != NULL);
  g_strlcpy (format, gst_structure_get_string (gst_caps_get_structure (caps,
              0), "format"), sizeof format);
  gst_caps_unref (caps);
  return format;
}

/* The first error on @bus, its message and debug text joined. */
static gchar *
pop_error (GstBus * bus, GQuark domain, gint code)
{
  GstMessage *msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  GError *error = NULL;
  gchar *debug = NULL, *text;

  fail_unless (msg != NULL, "no error posted");
  gst_message_parse_error (msg, &error, &debug);
  fail_unless (g_error_matches (error, domain, code), "error: %s",
      error->message);
  text = g_strdup_printf ("%s | %s", error->message, GST_STR_NULL (debug));
  g_clear_error (&error);
  g_free (debug);
  gst_message_unref (msg);
  return text;
}

GST_START_TEST (test_one_file_one_sweep)
{
  const gsize n_points = 1000;
  gfloat *records = random_records (1, n_points, 4);
  GstHarness *h = parse_harness ("", "application/x-point-cloud");
  GstBuffer *out;

  /* 1000-byte pieces cut records in the middle, as filesrc's 4 KiB
   * blocks cut a nuScenes file */
  push_pieces (h, records, n_points * 16, 1000);
  fail_unless_equals_int (gst_harness_buffers_received (h), 0);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_int (gst_harness_buffers_received (h), 1);
  fail_unless_equals_string (output_format (h), "xyzi");
  out = gst_harness_pull (h);
  assert_buffer_equals (out, records, n_points * 16);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  g_free (records);
}

GST_END_TEST;

GST_START_TEST (test_points_per_frame)
{
  const gsize n_points = 10;
  gfloat *records = random_records (2, n_points, 4);
  GstHarness *h = parse_harness ("points-per-frame=4 framerate=10/1",
      "application/x-point-cloud");
  const gsize expected_points[3] = { 4, 4, 2 };
  gsize first = 0;
  guint i;

  push_pieces (h, records, n_points * 16, 24);
  /* two whole frames are out before the end of the stream */
  fail_unless_equals_int (gst_harness_buffers_received (h), 2);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_int (gst_harness_buffers_received (h), 3);
  for (i = 0; i < 3; i++) {
    GstBuffer *out = gst_harness_pull (h);

    assert_buffer_equals (out, records + first * 4, expected_points[i] * 16);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (out), i * GST_SECOND / 10);
    first += expected_points[i];
    gst_buffer_unref (out);
  }
  gst_harness_teardown (h);
  g_free (records);
}

GST_END_TEST;

/* IEEE binary16 decoded by its definition, independently of the element's
 * bit manipulation. */
static gdouble
half_value (guint16 half)
{
  gint sign = (half & 0x8000) ? -1 : 1;
  gint exponent = (half >> 10) & 0x1f;
  gint mantissa = half & 0x3ff;

  if (exponent == 0x1f)
    return mantissa ? NAN : sign * INFINITY;
  if (exponent == 0)
    return sign * ldexp (mantissa, -24);
  return sign * ldexp (1024 + mantissa, exponent - 25);
}

GST_START_TEST (test_f16_every_value_exact)
{
  /* every 16-bit pattern once: 65535 = 13107 records of 5, plus 0xffff
   * left out (a NaN like others) */
  const gsize n_points = 13107;
  guint16 *halves = g_new (guint16, n_points * 5);
  GstHarness *h = parse_harness ("preset=nuscenes-f16",
      "application/x-point-cloud");
  GstBuffer *out;
  GstMapInfo map;
  const gfloat *values;
  gsize i;

  for (i = 0; i < n_points * 5; i++)
    halves[i] = GUINT16_TO_LE ((guint16) i);
  push_pieces (h, halves, n_points * 10, 4096);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_string (output_format (h), "xyzit");
  out = gst_harness_pull (h);
  fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
  fail_unless_equals_uint64 (map.size, n_points * 5 * 4);
  values = (const gfloat *) map.data;
  for (i = 0; i < n_points * 5; i++) {
    gdouble expected = half_value ((guint16) i);

    if (isnan (expected))
      fail_unless (isnan (values[i]), "half %04x", (guint) i);
    else
      fail_unless ((gdouble) values[i] == expected && !signbit (values[i]) ==
          !signbit (expected), "half %04x: %g, expected %g", (guint) i,
          values[i], expected);
  }
  gst_buffer_unmap (out, &map);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  g_free (halves);
}

GST_END_TEST;

/* The nick of enum property @name. */
static gchar *
get_nick (GstElement * element, const gchar * name)
{
  GValue value = G_VALUE_INIT;
  GEnumClass *klass;
  gchar *nick;

  g_value_init (&value, G_PARAM_SPEC_VALUE_TYPE (g_object_class_find_property
          (G_OBJECT_GET_CLASS (element), name)));
  g_object_get_property (G_OBJECT (element), name, &value);
  klass = g_type_class_ref (G_VALUE_TYPE (&value));
  nick = g_strdup (g_enum_get_value (klass,
          g_value_get_enum (&value))->value_nick);
  g_type_class_unref (klass);
  g_value_unset (&value);
  return nick;
}

GST_START_TEST (test_presets)
{
  static const struct
  {
    const gchar *preset;
    const gchar *format;
    guint channels;
    const gchar *data_format;
  } expected[] = {
    {"kitti", "xyzi", 4, "F32"},
    {"nuscenes", "xyzir", 5, "F32"},
    {"nuscenes-f16", "xyzit", 5, "F16"},
  };
  GstElement *parse = gst_element_factory_make ("pointcloudparse", NULL);
  guint i;

  for (i = 0; i < G_N_ELEMENTS (expected); i++) {
    gchar *preset, *format, *data_format;
    guint channels;

    gst_util_set_object_arg (G_OBJECT (parse), "preset", expected[i].preset);
    preset = get_nick (parse, "preset");
    g_object_get (parse, "channels", &channels, NULL);
    format = get_nick (parse, "format");
    data_format = get_nick (parse, "data-format");
    fail_unless_equals_string (preset, expected[i].preset);
    fail_unless_equals_string (format, expected[i].format);
    fail_unless_equals_int (channels, expected[i].channels);
    fail_unless_equals_string (data_format, expected[i].data_format);
    g_free (preset);
    g_free (format);
    g_free (data_format);
  }
  /* a layout no dataset has reads as custom */
  g_object_set (parse, "channels", 6, NULL);
  {
    gchar *preset;

    preset = get_nick (parse, "preset");
    fail_unless_equals_string (preset, "custom");
    g_free (preset);
  }
  gst_object_unref (parse);
}

GST_END_TEST;

/* nuScenes records: the input format goes out unchanged. */
GST_START_TEST (test_nuscenes_records)
{
  const gsize n_points = 77;
  gfloat *records = random_records (3, n_points, 5);
  GstHarness *h = parse_harness ("preset=nuscenes",
      "application/x-point-cloud");
  GstBuffer *out;

  push_pieces (h, records, n_points * 20, 4096);
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  fail_unless_equals_string (output_format (h), "xyzir");
  out = gst_harness_pull (h);
  assert_buffer_equals (out, records, n_points * 20);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  g_free (records);
}

GST_END_TEST;

/* Downstream asks for another format: channels move by meaning, skipped
 * input channels are dropped, missing ones are 0. */
GST_START_TEST (test_output_format_by_meaning)
{
  static const struct
  {
    const gchar *properties;
    guint in_channels;
    const gchar *out_format;
    /* input channel of each output channel, -1: 0 */
    gint from[5];
  } cases[] = {
    {"preset=kitti", 4, "xyzir", {0, 1, 2, 3, -1}},
    {"preset=nuscenes", 5, "xyz", {0, 1, 2}},
    {"preset=nuscenes", 5, "xyzit", {0, 1, 2, 3, -1}},
    /* Waymo-like: 6 columns, x, y, z, intensity first */
    {"format=xyzi channels=6", 6, "xyzi", {0, 1, 2, 3}},
  };
  guint k;

  for (k = 0; k < G_N_ELEMENTS (cases); k++) {
    const gsize n_points = 9;
    guint out_channels = strlen (cases[k].out_format);
    gfloat *records = random_records (4 + k, n_points, cases[k].in_channels);
    gchar *caps = g_strdup_printf ("application/x-point-cloud, format=%s",
        cases[k].out_format);
    GstHarness *h = parse_harness (cases[k].properties, caps);
    GstBuffer *out;
    GstMapInfo map;
    const gfloat *values;
    gsize p;
    guint c;

    push_pieces (h, records, n_points * cases[k].in_channels * 4, 100);
    fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
    fail_unless_equals_string (output_format (h), cases[k].out_format);
    out = gst_harness_pull (h);
    fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
    fail_unless_equals_uint64 (map.size, n_points * out_channels * 4);
    values = (const gfloat *) map.data;
    for (p = 0; p < n_points; p++)
      for (c = 0; c < out_channels; c++) {
        gint from = cases[k].from[c];

        fail_unless_equals_float (values[p * out_channels + c], from < 0 ?
            0.0f : records[p * cases[k].in_channels + from]);
      }
    gst_buffer_unmap (out, &map);
    gst_buffer_unref (out);
    gst_harness_teardown (h);
    g_free (caps);
    g_free (records);
  }
}

GST_END_TEST;

GST_START_TEST (test_truncated_input_is_an_error)
{
  GstHarness *h = parse_harness ("", "application/x-point-cloud");
  GstBus *bus = gst_bus_new ();
  gchar *text;

  gst_element_set_bus (h->element, bus);
  /* one xyzi record and one byte, zeros (not uninitialized memory: the
   * parser looks at the first bytes) */
  fail_unless_equals_int (gst_harness_push (h,
          gst_buffer_new_wrapped (g_malloc0 (17), 17)), GST_FLOW_OK);
  gst_harness_push_event (h, gst_event_new_eos ());
  text = pop_error (bus, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT);
  fail_unless (strstr (text, "17 bytes") != NULL, "%s", text);
  fail_unless (strstr (text, "16-byte") != NULL, "%s", text);
  fail_unless (strstr (text, "preset") != NULL, "%s", text);
  fail_unless_equals_int (gst_harness_buffers_received (h), 0);
  g_free (text);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_empty_input_is_an_error)
{
  GstHarness *h = parse_harness ("", "application/x-point-cloud");
  GstBus *bus = gst_bus_new ();
  gchar *text;

  gst_element_set_bus (h->element, bus);
  gst_harness_push_event (h, gst_event_new_eos ());
  text = pop_error (bus, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT);
  fail_unless (strstr (text, "empty") != NULL, "%s", text);
  fail_unless_equals_int (gst_harness_buffers_received (h), 0);
  g_free (text);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_channels_fewer_than_format_fails_to_start)
{
  GstElement *parse = gst_element_factory_make ("pointcloudparse", NULL);

  g_object_set (parse, "channels", 3, NULL);
  fail_unless_equals_int (gst_element_set_state (parse, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  gst_element_set_state (parse, GST_STATE_NULL);
  gst_object_unref (parse);
}

GST_END_TEST;

/* format takes the point formats' shared enum: its caps-string nicks, xyzi
 * by default; its "auto" reads back as set but stops the start with an
 * error that names the property, since a raw record cannot be negotiated. */
GST_START_TEST (test_format_auto_fails_to_start)
{
  static const gchar *nicks[] = { "xyz", "xyzi", "xyzit", "xyzir" };
  GstElement *parse = gst_element_factory_make ("pointcloudparse", NULL);
  GstBus *bus = gst_bus_new ();
  gchar *nick, *text;
  guint i;

  nick = get_nick (parse, "format");
  fail_unless_equals_string (nick, "xyzi");
  g_free (nick);
  for (i = 0; i < G_N_ELEMENTS (nicks); i++) {
    gst_util_set_object_arg (G_OBJECT (parse), "format", nicks[i]);
    nick = get_nick (parse, "format");
    fail_unless_equals_string (nick, nicks[i]);
    g_free (nick);
  }

  gst_util_set_object_arg (G_OBJECT (parse), "format", "auto");
  nick = get_nick (parse, "format");
  fail_unless_equals_string (nick, "auto");
  g_free (nick);
  gst_element_set_bus (parse, bus);
  fail_unless_equals_int (gst_element_set_state (parse, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  text = pop_error (bus, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS);
  fail_unless (strstr (text, "format=auto") != NULL, "%s", text);
  g_free (text);
  gst_element_set_state (parse, GST_STATE_NULL);

  /* a preset replaces auto, and the element starts again */
  gst_util_set_object_arg (G_OBJECT (parse), "preset", "nuscenes");
  nick = get_nick (parse, "format");
  fail_unless_equals_string (nick, "xyzir");
  g_free (nick);
  fail_unless (gst_element_set_state (parse, GST_STATE_PAUSED) !=
      GST_STATE_CHANGE_FAILURE);
  fail_unless (gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR) == NULL);
  gst_element_set_state (parse, GST_STATE_NULL);
  gst_element_set_bus (parse, NULL);
  gst_object_unref (bus);
  gst_object_unref (parse);
}

GST_END_TEST;

/* Runs filesrc (pull mode) on @bytes through pointcloudparse to appsink;
 * returns the buffers and the first error. */
static GPtrArray *
run_file (gconstpointer bytes, gsize size, const gchar * properties,
    gchar ** error_text)
{
  gchar *dir = g_dir_make_tmp ("pointcloudparse-XXXXXX", NULL);
  gchar *path = g_build_filename (dir, "sweep.bin", NULL);
  gchar *description;
  GPtrArray *buffers = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  GstElement *pipeline, *sink;
  GstSample *sample;
  GstMessage *msg;
  GstBus *bus;

  fail_unless (g_file_set_contents (path, bytes, size, NULL));
  description = g_strdup_printf ("filesrc location=\"%s\" blocksize=1000 "
      "! pointcloudparse %s ! appsink name=sink sync=false", path, properties);
  pipeline = gst_parse_launch (description, NULL);
  fail_unless (pipeline != NULL);
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  bus = gst_element_get_bus (pipeline);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sink))) != NULL) {
    g_ptr_array_add (buffers, gst_buffer_ref (gst_sample_get_buffer (sample)));
    gst_sample_unref (sample);
  }
  *error_text = NULL;
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  if (msg != NULL) {
    GError *error = NULL;

    gst_message_parse_error (msg, &error, NULL);
    *error_text = g_strdup (error->message);
    g_clear_error (&error);
    gst_message_unref (msg);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (sink);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  g_unlink (path);
  g_rmdir (dir);
  g_free (description);
  g_free (path);
  g_free (dir);
  return buffers;
}

GST_START_TEST (test_file_pull_mode)
{
  /* larger than the base class's 64 KiB first read in pull mode */
  const gsize n_points = 20285;
  gfloat *records = random_records (5, n_points, 4);
  gchar *error = NULL;
  GPtrArray *buffers = run_file (records, n_points * 16, "", &error);

  fail_unless (error == NULL, "%s", error);
  fail_unless_equals_int (buffers->len, 1);
  assert_buffer_equals (g_ptr_array_index (buffers, 0), records, n_points * 16);
  g_ptr_array_unref (buffers);

  /* a file cut 4 bytes short of its last record */
  buffers = run_file (records, n_points * 16 - 4, "", &error);
  fail_unless_equals_int (buffers->len, 0);
  fail_unless (error != NULL && strstr (error, "324556 bytes") != NULL,
      "%s", error);
  g_free (error);
  g_ptr_array_unref (buffers);
  g_free (records);
}

GST_END_TEST;

/* Files of the other formats the plugin reads are refused, naming the
 * element that reads them: a PCD file whose size is a whole number of
 * 16-byte records gave 107 885 garbage points (issue 25.2). Each file is
 * padded to whole records, as the case that passed unnoticed was. */
GST_START_TEST (test_other_formats_refused)
{
  static const guint8 pcap[24] = { 0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0 };
  static const guint8 safetensors[32] = { 24, 0, 0, 0, 0, 0, 0, 0, '{', '}' };
  static const struct
  {
    const gchar *name;
    gconstpointer bytes;
    gsize size;
    const gchar *words;
  } files[] = {
    {"PCD", "# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\n"
          "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 1\n"
          "HEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS 1\nDATA ascii\n1 2 3\n",
        0, "this is a PCD file: use pcdparse"},
    {"PCD without a comment", "VERSION .7\nFIELDS x y z\nSIZE 4 4 4\n"
          "TYPE F F F\nCOUNT 1 1 1\nWIDTH 1\nHEIGHT 1\nPOINTS 1\n"
          "DATA binary\n", 0, "this is a PCD file: use pcdparse"},
    {"JSON lines", "{\"frame\":0,\"count\":1,\"type\":\"3d\"}\n{\"x\":1,"
          "\"y\":2,\"z\":3,\"dx\":1,\"dy\":1,\"dz\":1,\"yaw\":0,"
          "\"score\":1,\"label\":0}\n", 0, "read by boxparse"},
    {"KITTI labels", "Car 0.00 0 -1.58 587.01 173.33 614.12 200.12 1.65 "
          "1.67 3.64 -0.65 1.71 46.70 -1.59\n", 0, "read by boxparse"},
    {"pcap", pcap, sizeof (pcap), "packet capture"},
    {"safetensors", safetensors, sizeof (safetensors), "safetensors file"},
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (files); i++) {
    gsize size = files[i].size ? files[i].size : strlen (files[i].bytes);
    gsize padded = (size + 15) / 16 * 16;
    guint8 *bytes = g_malloc0 (padded);
    gchar *error = NULL;
    GPtrArray *buffers;

    memcpy (bytes, files[i].bytes, size);
    /* text is padded with spaces, so that it stays text */
    if (files[i].size == 0)
      memset (bytes + size, ' ', padded - size);
    buffers = run_file (bytes, padded, "", &error);
    fail_unless_equals_int (buffers->len, 0);
    fail_unless (error != NULL && g_str_has_prefix (error, "The input is "
            "not raw point records: ") && strstr (error, files[i].words),
        "%s: %s", files[i].name, GST_STR_NULL (error));
    g_free (error);
    g_ptr_array_unref (buffers);
    g_free (bytes);
  }
}

GST_END_TEST;

static Suite *
pointcloudparse_suite (void)
{
  Suite *s = suite_create ("pointcloudparse");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_one_file_one_sweep);
  tcase_add_test (tc, test_points_per_frame);
  tcase_add_test (tc, test_f16_every_value_exact);
  tcase_add_test (tc, test_presets);
  tcase_add_test (tc, test_nuscenes_records);
  tcase_add_test (tc, test_output_format_by_meaning);
  tcase_add_test (tc, test_truncated_input_is_an_error);
  tcase_add_test (tc, test_empty_input_is_an_error);
  tcase_add_test (tc, test_channels_fewer_than_format_fails_to_start);
  tcase_add_test (tc, test_format_auto_fails_to_start);
  tcase_add_test (tc, test_file_pull_mode);
  tcase_add_test (tc, test_other_formats_refused);
  return s;
}

P3D_CHECK_MAIN (pointcloudparse);
