/* pcdparse in system memory, on PCD files written here: every storage type
 * and numeric type decodes to the values written; the format negotiated
 * with downstream; missing channels as 0; non-finite points dropped or kept,
 * and the stats; a file fed in 1-byte, 7-byte and 4 KiB chunks; files back
 * to back; timestamps; a pool that grows; multifilesrc and filesrc
 * pipelines over files in a temporary folder; and bad input (headers,
 * values, LZF, truncation, garbage), each an error naming the file's byte
 * offset and the reader's message, or for an empty stream nothing but EOS. */
#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>

#include "p3dperception.h"
#include "p3dtest-elem.h"
#include "p3dtest-pcd.h"
#include "p3dtest.h"

/* ------------------------------------------------------------------------ */
/* The element in a harness */

typedef struct
{
  GstHarness *h;
  GstBus *bus;
  GstElement *parse;
} Parser;

/* pcdparse with @properties, downstream accepting @sink_caps (NULL: any
 * point cloud in system memory). */
static Parser
parser_new (const gchar * properties, const gchar * sink_caps)
{
  gchar *launch = g_strdup_printf ("pcdparse %s", properties);
  Parser p;

  p.h = gst_harness_new_parse (launch);
  p.parse = gst_harness_find_element (p.h, "pcdparse");
  p.bus = gst_bus_new ();
  gst_element_set_bus (p.h->element, p.bus);
  gst_harness_set_src_caps_str (p.h, "application/x-pcd");
  gst_harness_set_sink_caps_str (p.h, sink_caps ? sink_caps :
      "application/x-point-cloud");
  g_free (launch);
  return p;
}

static void
parser_free (Parser * p)
{
  GstMessage *message;

  /* every test pops what it expects: nothing else may be left */
  message = gst_bus_pop_filtered (p->bus, GST_MESSAGE_ERROR |
      GST_MESSAGE_WARNING);
  if (message != NULL)
    fail ("unexpected message: %s", elemtest_message_text (message));
  gst_element_set_bus (p->h->element, NULL);
  gst_object_unref (p->bus);
  gst_object_unref (p->parse);
  gst_harness_teardown (p->h);
}

static GstFlowReturn
push_bytes (Parser * p, const guint8 * data, gsize size)
{
  return gst_harness_push (p->h, size > 0 ? gst_buffer_new_memdup (data,
          size) : gst_buffer_new ());
}

static GstFlowReturn
push_array (Parser * p, GByteArray * bytes)
{
  return push_bytes (p, bytes->data, bytes->len);
}

/* Pushes @bytes in chunks of @chunk bytes; all must be accepted. */
static void
push_chunks (Parser * p, const GByteArray * bytes, gsize chunk)
{
  gsize pos;

  for (pos = 0; pos < bytes->len; pos += chunk)
    fail_unless_equals_int (push_bytes (p, bytes->data + pos,
            MIN (chunk, bytes->len - pos)), GST_FLOW_OK);
}

static void
push_eos (Parser * p)
{
  fail_unless (gst_harness_push_event (p->h, gst_event_new_eos ()));
}

/* Pops the error and checks that its message starts with @prefix and
 * holds @expected (when not NULL). */
static void
expect_error_parts (Parser * p, const gchar * prefix, const gchar * expected)
{
  GstMessage *message = gst_bus_pop_filtered (p->bus, GST_MESSAGE_ERROR);
  gchar *text;

  fail_unless (message != NULL, "no error; expected \"%s\"", prefix);
  text = elemtest_message_text (message);
  fail_unless (g_str_has_prefix (text, prefix), "error \"%s\" does not "
      "start with \"%s\"", text, prefix);
  fail_unless (expected == NULL || strstr (text, expected) != NULL,
      "error \"%s\" does not say \"%s\"", text, expected);
  g_free (text);
  gst_message_unref (message);
}

static void
expect_error (Parser * p, const gchar * prefix)
{
  expect_error_parts (p, prefix, NULL);
}

static void
assert_caps (Parser * p, const gchar * expected)
{
  GstCaps *caps = gst_pad_get_current_caps (p->h->sinkpad);
  GstCaps *want = gst_caps_from_string (expected);

  fail_unless (caps != NULL, "no caps, expected %s", expected);
  fail_unless (gst_caps_is_equal (caps, want), "caps %" GST_PTR_FORMAT
      ", expected %" GST_PTR_FORMAT, caps, want);
  gst_caps_unref (caps);
  gst_caps_unref (want);
}

static void
assert_stats (Parser * p, guint64 files, guint64 points, guint64 dropped,
    guint64 offset)
{
  GstStructure *stats = NULL;
  guint64 value;

  g_object_get (p->parse, "stats", &stats, NULL);
  fail_unless (stats != NULL);
  fail_unless (gst_structure_get_uint64 (stats, "files", &value));
  fail_unless_equals_uint64 (value, files);
  fail_unless (gst_structure_get_uint64 (stats, "points", &value));
  fail_unless_equals_uint64 (value, points);
  fail_unless (gst_structure_get_uint64 (stats, "dropped-points", &value));
  fail_unless_equals_uint64 (value, dropped);
  fail_unless (gst_structure_get_uint64 (stats, "offset", &value));
  fail_unless_equals_uint64 (value, offset);
  gst_structure_free (stats);
}

/* Every numeric type, in a mixed order, with padding and COUNT > 1:
 * x, y, z, i, t and r each come from a different type. */
static const PcdTestField all_types[] = {
  {"intensity", 'U', 1, 1}, {"_", 'I', 1, 3}, {"x", 'F', 4, 1},
  {"time", 'F', 8, 1}, {"normal", 'F', 4, 3}, {"y", 'F', 8, 1},
  {"ring", 'U', 2, 1}, {"z", 'I', 2, 1}, {"a", 'I', 4, 1},
  {"b", 'I', 8, 2}, {"c", 'U', 4, 1}, {"d", 'U', 8, 1},
};

/* Large integers as coordinates: float32 rounding of 64-bit values. */
static const PcdTestField big_integers[] = {
  {"x", 'I', 8, 1}, {"y", 'U', 8, 1}, {"z", 'I', 1, 1},
  {"reflectance", 'F', 8, 2},
};

static const PcdTestField xyz_only[] = {
  {"x", 'F', 4, 1}, {"y", 'F', 4, 1}, {"z", 'F', 4, 1},
};

static const PcdTestField xyzi_fields[] = {
  {"x", 'F', 4, 1}, {"y", 'F', 4, 1}, {"z", 'F', 4, 1},
  {"intensity", 'F', 4, 1},
};

/* ------------------------------------------------------------------------ */
/* Tests */

/* Every storage type and version, every numeric type: the values written,
 * in every format, whole or in 4 KiB chunks, with LF or CRLF. */
GST_START_TEST (test_storage_types)
{
  static const gchar *const formats[] = { "xyzi", "xyzit", "xyzir", "xyz" };
  static const gchar *const versions[] = { "0.7", ".5" };
  struct
  {
    const PcdTestField *fields;
    guint n_fields;
  } sets[] = {
    {all_types, G_N_ELEMENTS (all_types)},
    {big_integers, G_N_ELEMENTS (big_integers)},
  };
  guint s, st, v, f, crlf;

  for (s = 0; s < G_N_ELEMENTS (sets); s++) {
    PcdTestCloud *cloud =
        pcdtest_cloud_new (sets[s].fields, sets[s].n_fields, 300, s + 1);

    for (st = PCDTEST_ASCII; st <= PCDTEST_COMPRESSED; st++)
      for (v = 0; v < G_N_ELEMENTS (versions); v++)
        for (crlf = 0; crlf < 2; crlf++)
          for (f = 0; f < G_N_ELEMENTS (formats); f++) {
            PcdTestOptions o = { st, versions[v], crlf };
            GByteArray *file = pcdtest_write (cloud, &o);
            gchar *caps = g_strdup_printf ("application/x-point-cloud, "
                "format=%s", formats[f]);
            gchar *what = g_strdup_printf ("set %u, %s, version %s%s, %s", s,
                pcdtest_storage_names[st], versions[v], crlf ? ", CRLF" : "",
                formats[f]);
            Parser p = parser_new ("", caps);
            GstBuffer *out;

            if (f % 2 == 0) {
              fail_unless_equals_int (push_array (&p, file), GST_FLOW_OK);
            } else {
              push_chunks (&p, file, 4096);
            }
            push_eos (&p);
            out = gst_harness_pull (p.h);
            pcdtest_assert_cloud (out, cloud, formats[f], TRUE, what);
            gst_buffer_unref (out);
            fail_unless_equals_int (gst_harness_buffers_received (p.h), 1);
            assert_caps (&p, caps);
            parser_free (&p);
            g_byte_array_unref (file);
            g_free (caps);
            g_free (what);
          }
    pcdtest_cloud_free (cloud);
  }
}

GST_END_TEST;

/* auto takes downstream's format, xyzi when downstream takes any; the
 * format property fixes it, and a downstream that refuses it is an error;
 * a missing intensity, time or ring is 0. */
GST_START_TEST (test_format_negotiation)
{
  static const struct
  {
    const gchar *properties;
    const gchar *downstream;
    const gchar *caps;
  } cases[] = {
    {"", "application/x-point-cloud", "application/x-point-cloud, "
          "format=(string)xyzi"},
    {"", "application/x-point-cloud, format=xyz",
        "application/x-point-cloud, format=(string)xyz"},
    {"", "application/x-point-cloud, format=xyzir",
        "application/x-point-cloud, format=(string)xyzir"},
    {"", "application/x-point-cloud, format={xyzit, xyzir}",
        "application/x-point-cloud, format=(string)xyzit"},
    {"format=xyzir", "application/x-point-cloud",
        "application/x-point-cloud, format=(string)xyzir"},
    {"format=xyz framerate=10/1", "application/x-point-cloud",
        "application/x-point-cloud, format=(string)xyz, "
          "framerate=(fraction)10/1"},
  };
  PcdTestCloud *cloud = pcdtest_cloud_new (xyz_only, 3, 40, 7);
  PcdTestOptions o = { PCDTEST_BINARY, "0.7" };
  GByteArray *file = pcdtest_write (cloud, &o);
  Parser p;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    GstCaps *caps = gst_caps_from_string (cases[i].caps);
    const gchar *format =
        gst_structure_get_string (gst_caps_get_structure (caps, 0), "format");
    GstBuffer *out;

    p = parser_new (cases[i].properties, cases[i].downstream);
    fail_unless_equals_int (push_array (&p, file), GST_FLOW_OK);
    out = gst_harness_pull (p.h);
    assert_caps (&p, cases[i].caps);
    /* no intensity, time or ring in the file: zeros */
    pcdtest_assert_cloud (out, cloud, format, TRUE, cases[i].caps);
    gst_buffer_unref (out);
    parser_free (&p);
    gst_caps_unref (caps);
  }

  p = parser_new ("format=xyz", "application/x-point-cloud, format=xyzi");
  fail_unless_equals_int (push_array (&p, file), GST_FLOW_NOT_NEGOTIATED);
  expect_error (&p, "Downstream accepts none of");
  fail_unless_equals_int (gst_harness_buffers_received (p.h), 0);
  parser_free (&p);

  g_byte_array_unref (file);
  pcdtest_cloud_free (cloud);
}

GST_END_TEST;

/* An organized cloud with NaN and infinite coordinates: left out by
 * default and counted in stats; kept with drop-nonfinite=false. A NaN
 * intensity does not drop its point. */
GST_START_TEST (test_nonfinite)
{
  PcdTestCloud *cloud = pcdtest_cloud_new (xyzi_fields, 4, 48, 3);
  guint st, drop, point;

  cloud->width = 8;
  cloud->height = 6;
  for (point = 0; point < 48; point += 5)
    *pcdtest_cloud_value (cloud, point, point % 3) =
        point % 2 ? NAN : -INFINITY;
  /* 10 points dropped; point 1's intensity is NaN and it stays */
  *pcdtest_cloud_value (cloud, 1, 3) = NAN;

  for (st = PCDTEST_ASCII; st <= PCDTEST_COMPRESSED; st++)
    for (drop = 0; drop < 2; drop++) {
      PcdTestOptions o = { st, "0.7" };
      GByteArray *file = pcdtest_write (cloud, &o);
      Parser p = parser_new (drop ? "" : "drop-nonfinite=false", NULL);
      GstBuffer *out;
      gchar *what = g_strdup_printf ("%s, drop-nonfinite=%s",
          pcdtest_storage_names[st], drop ? "true" : "false");

      fail_unless_equals_int (push_array (&p, file), GST_FLOW_OK);
      out = gst_harness_pull (p.h);
      pcdtest_assert_cloud (out, cloud, "xyzi", drop, what);
      gst_buffer_unref (out);
      assert_stats (&p, 1, drop ? 38 : 48, drop ? 10 : 0, 0);
      parser_free (&p);
      g_byte_array_unref (file);
      g_free (what);
    }
  pcdtest_cloud_free (cloud);
}

GST_END_TEST;

/* A file fed 1, 7 and 4096 bytes at a time comes out whole, as soon as its
 * last byte is in (before EOS); an ASCII file too when blank and comment
 * lines sit between its points. */
GST_START_TEST (test_chunks)
{
  static const gsize chunks[] = { 1, 7, 4096 };
  static const gchar extra_lines[] = "\n  \n# a comment\n";
  PcdTestCloud *cloud =
      pcdtest_cloud_new (all_types, G_N_ELEMENTS (all_types), 120, 11);
  guint st, c;

  for (st = PCDTEST_ASCII; st <= PCDTEST_COMPRESSED + 1; st++)
    for (c = 0; c < G_N_ELEMENTS (chunks); c++) {
      PcdTestOptions o = { st % (PCDTEST_COMPRESSED + 1), "0.7" };
      GByteArray *file = pcdtest_write (cloud, &o);
      Parser p = parser_new ("", NULL);
      GstBuffer *out;
      gchar *what = g_strdup_printf ("%s%s in chunks of %" G_GSIZE_FORMAT,
          pcdtest_storage_names[o.storage], st > PCDTEST_COMPRESSED ?
          " with comments" : "", chunks[c]);

      if (st > PCDTEST_COMPRESSED) {
        /* after the third point; after the last, only blank lines (a
         * comment there would start a next file) */
        const gchar *data = g_strstr_len ((const gchar *) file->data,
            file->len, "DATA ascii\n");
        guint line;
        gsize at;
        GByteArray *with;

        for (line = 0; line < 4; line++)
          data = strchr (data, '\n') + 1;
        at = data - (const gchar *) file->data;
        with = g_byte_array_new ();
        g_byte_array_append (with, file->data, at);
        g_byte_array_append (with, (const guint8 *) extra_lines,
            strlen (extra_lines));
        g_byte_array_append (with, file->data + at, file->len - at);
        g_byte_array_append (with, (const guint8 *) "\n \n", 4);
        g_byte_array_unref (file);
        file = with;
      }
      push_chunks (&p, file, chunks[c]);
      fail_unless_equals_int (gst_harness_buffers_received (p.h), 1);
      out = gst_harness_pull (p.h);
      pcdtest_assert_cloud (out, cloud, "xyzi", TRUE, what);
      gst_buffer_unref (out);
      push_eos (&p);
      fail_unless_equals_int (gst_harness_buffers_received (p.h), 1);
      parser_free (&p);
      g_byte_array_unref (file);
      g_free (what);
    }
  pcdtest_cloud_free (cloud);
}

GST_END_TEST;

/* Three files of every storage type back to back, with a blank line and
 * NUL padding between them, in one buffer and in 7-byte chunks: three
 * buffers, offsets 0, 1, 2; an ASCII file without a final newline at the
 * end completes at EOS. */
GST_START_TEST (test_back_to_back)
{
  PcdTestCloud *clouds[3];
  GByteArray *stream = g_byte_array_new ();
  gsize starts[3];
  guint i, chunked;

  for (i = 0; i < 3; i++) {
    PcdTestOptions o = { (PcdTestStorage) ((i + 1) % 3), "0.7" };
    GByteArray *file;

    o.no_final_newline = i == 2;
    clouds[i] = pcdtest_cloud_new (xyzi_fields, 4, 20 + 10 * i, 20 + i);
    file = pcdtest_write (clouds[i], &o);
    starts[i] = stream->len;
    g_byte_array_append (stream, file->data, file->len);
    if (i == 0)
      g_byte_array_append (stream, (const guint8 *) "\0\0\0\0", 4);
    if (i == 1)
      g_byte_array_append (stream, (const guint8 *) "\n", 1);
    g_byte_array_unref (file);
  }

  for (chunked = 0; chunked < 2; chunked++) {
    Parser p = parser_new ("", NULL);

    if (chunked) {
      push_chunks (&p, stream, 7);
    } else {
      fail_unless_equals_int (push_array (&p, stream), GST_FLOW_OK);
    }
    /* the last file waits for a newline or EOS */
    fail_unless_equals_int (gst_harness_buffers_received (p.h), 2);
    push_eos (&p);
    fail_unless_equals_int (gst_harness_buffers_received (p.h), 3);
    for (i = 0; i < 3; i++) {
      GstBuffer *out = gst_harness_pull (p.h);
      gchar *what = g_strdup_printf ("file %u%s", i, chunked ? ", chunked" :
          "");

      pcdtest_assert_cloud (out, clouds[i], "xyzi", TRUE, what);
      fail_unless_equals_uint64 (GST_BUFFER_OFFSET (out), i);
      fail_unless_equals_uint64 (GST_BUFFER_OFFSET_END (out), i + 1);
      fail_unless (!GST_BUFFER_PTS_IS_VALID (out));
      gst_buffer_unref (out);
      g_free (what);
    }
    /* padding belongs to the file after it */
    assert_stats (&p, 3, 40, 0, starts[2] - 1);
    parser_free (&p);
  }
  for (i = 0; i < 3; i++)
    pcdtest_cloud_free (clouds[i]);
  g_byte_array_unref (stream);
}

GST_END_TEST;

/* A file takes the timestamp of the input buffer it starts; without one,
 * framerate numbers the files; without a framerate, none. */
GST_START_TEST (test_timestamps)
{
  PcdTestCloud *cloud = pcdtest_cloud_new (xyz_only, 3, 5, 1);
  PcdTestOptions o = { PCDTEST_BINARY, "0.7" };
  GByteArray *file = pcdtest_write (cloud, &o), *two = g_byte_array_new ();
  Parser p = parser_new ("framerate=5/1", NULL);
  GstBuffer *in, *out;
  guint i;

  g_byte_array_append (two, file->data, file->len);
  g_byte_array_append (two, file->data, file->len);
  for (i = 0; i < 3; i++) {
    in = gst_buffer_new_memdup (i == 1 ? two->data : file->data,
        i == 1 ? two->len : file->len);
    if (i == 2)
      GST_BUFFER_PTS (in) = 7 * GST_SECOND;
    fail_unless_equals_int (gst_harness_push (p.h, in), GST_FLOW_OK);
  }
  /* files 0, 1, 2 by the framerate; file 3 has its buffer's */
  for (i = 0; i < 4; i++) {
    out = gst_harness_pull (p.h);
    fail_unless_equals_uint64 (GST_BUFFER_PTS (out), i < 3 ?
        i * GST_SECOND / 5 : 7 * GST_SECOND);
    if (i < 3)
      fail_unless_equals_uint64 (GST_BUFFER_DURATION (out), GST_SECOND / 5);
    fail_unless_equals_int (GST_BUFFER_FLAG_IS_SET (out,
            GST_BUFFER_FLAG_DISCONT), i == 0);
    gst_buffer_unref (out);
  }
  assert_caps (&p, "application/x-point-cloud, format=(string)xyzi, "
      "framerate=(fraction)5/1");
  parser_free (&p);

  p = parser_new ("", NULL);
  in = gst_buffer_new_memdup (two->data, two->len);
  GST_BUFFER_PTS (in) = GST_SECOND;
  fail_unless_equals_int (gst_harness_push (p.h, in), GST_FLOW_OK);
  out = gst_harness_pull (p.h);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), GST_SECOND);
  gst_buffer_unref (out);
  /* the second file does not start its buffer */
  out = gst_harness_pull (p.h);
  fail_unless (!GST_BUFFER_PTS_IS_VALID (out));
  fail_unless (!GST_BUFFER_DURATION_IS_VALID (out));
  gst_buffer_unref (out);
  parser_free (&p);

  g_byte_array_unref (two);
  g_byte_array_unref (file);
  pcdtest_cloud_free (cloud);
}

GST_END_TEST;

/* Files that grow and shrink, the earlier buffers held while later ones
 * come from a larger pool: each keeps its points. */
GST_START_TEST (test_pool_growth)
{
  static const guint sizes[] = { 10, 1000, 3, 1001, 1300, 0, 2000, 50 };
  PcdTestCloud *clouds[G_N_ELEMENTS (sizes)];
  GstBuffer *outs[G_N_ELEMENTS (sizes)];
  Parser p = parser_new ("", NULL);
  guint i;

  for (i = 0; i < G_N_ELEMENTS (sizes); i++) {
    PcdTestOptions o = { (PcdTestStorage) (i % 3), "0.7" };
    GByteArray *file;

    clouds[i] = pcdtest_cloud_new (xyzi_fields, 4, sizes[i], 100 + i);
    file = pcdtest_write (clouds[i], &o);
    fail_unless_equals_int (push_array (&p, file), GST_FLOW_OK);
    outs[i] = gst_harness_pull (p.h);
    g_byte_array_unref (file);
  }
  for (i = 0; i < G_N_ELEMENTS (sizes); i++) {
    gchar *what = g_strdup_printf ("file %u of %u points", i, sizes[i]);

    pcdtest_assert_cloud (outs[i], clouds[i], "xyzi", TRUE, what);
    gst_buffer_unref (outs[i]);
    pcdtest_cloud_free (clouds[i]);
    g_free (what);
  }
  parser_free (&p);
}

GST_END_TEST;

/* No bytes, or only padding: a warning that the input held no PCD data,
 * then EOS (no caps, no buffer, no error). Issue 10: this was silence. */
GST_START_TEST (test_empty_stream)
{
  static const gchar *const inputs[] = { NULL, "", "\n\n\r\n  \n",
    "\0\0\0\0\0\0\0\0"
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (inputs); i++) {
    Parser p = parser_new (i == 3 ? "buffer-is-file=true" : "", NULL);
    GstMessage *message;
    GstEvent *event;
    gboolean eos = FALSE;
    gchar *text;

    if (inputs[i] != NULL)
      fail_unless_equals_int (push_bytes (&p, (const guint8 *) inputs[i],
              i == 3 ? 8 : strlen (inputs[i])), GST_FLOW_OK);
    push_eos (&p);
    fail_unless_equals_int (gst_harness_buffers_received (p.h), 0);
    while ((event = gst_harness_try_pull_event (p.h)) != NULL) {
      fail_if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS);
      eos |= GST_EVENT_TYPE (event) == GST_EVENT_EOS;
      gst_event_unref (event);
    }
    fail_unless (eos);
    message = gst_bus_pop_filtered (p.bus, GST_MESSAGE_WARNING);
    fail_unless (message != NULL, "input %u: no warning", i);
    text = elemtest_message_text (message);
    fail_unless (g_str_has_prefix (text, "The input held no PCD data"),
        "input %u: %s", i, text);
    g_free (text);
    gst_message_unref (message);
    parser_free (&p);
  }
}

GST_END_TEST;

/* A file of three points with the header @header_tail after its FIELDS
 * line, and @data after its DATA ascii line. */
static GByteArray *
ascii_file (const gchar * header_tail, const gchar * data)
{
  gchar *text = g_strdup_printf ("VERSION 0.7\nFIELDS x y z\n%sDATA ascii\n%s",
      header_tail, data);
  GByteArray *bytes = g_byte_array_new_take ((guint8 *) text, strlen (text));

  return bytes;
}

#define GOOD_TAIL "SIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 3\nHEIGHT 1\n" \
    "POINTS 3\n"
#define GOOD_DATA "1 2 3\n4 5 6\n7 8 9\n"

/* Bad input: an error whose message names where the file starts in the
 * stream and what the reader found wrong, nothing output for that file,
 * and nothing read after it. */
GST_START_TEST (test_bad_input)
{
  static const struct
  {
    const gchar *properties;
    const gchar *tail;
    const gchar *data;
    /* in the error, after "byte N (file M" */
    const gchar *message;
  } cases[] = {
    {"", "SIZE 4 4 4\nTYPE F F\nCOUNT 1 1 1\nWIDTH 3\nHEIGHT 1\nPOINTS 3\n",
        GOOD_DATA, ", line 4): TYPE has 2 entries but FIELDS has 3"},
    {"", "SIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 3\nHEIGHT 1\n"
          "POINTS 4\n", GOOD_DATA, "POINTS 4 but WIDTH*HEIGHT = 3"},
    {"", "SIZE 4 4 4\nTYPE F Q F\nCOUNT 1 1 1\nWIDTH 3\nHEIGHT 1\n"
          "POINTS 3\n", GOOD_DATA, "unknown TYPE 'Q' for field 'y'"},
    {"", "SIZE 4 4 3\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 3\nHEIGHT 1\n"
          "POINTS 3\n", GOOD_DATA, "SIZE 3 is not valid for TYPE F"},
    {"", "SIZE 4 4 4\nTYPE F F F\nBOGUS 1\nWIDTH 3\nHEIGHT 1\nPOINTS 3\n",
        GOOD_DATA, ", line 5): unknown header keyword 'BOGUS'"},
    {"", GOOD_TAIL, "1 2 3\n4 five 6\n7 8 9\n",
        ", point 1, line 11): value 'five' of field 'y' is not a number"},
    {"", GOOD_TAIL, "1 2 3\n4 5\n7 8 9\n", ", point 1, line 11): 2 values, "
          "expected 3"},
    {"", GOOD_TAIL, "1 2 3\n4 5 6\n", "): truncated: header announces 3 "
          "points, 2 lines of ASCII data present"},
    {"buffer-is-file=true", GOOD_TAIL, "1 2 3\n4 5 6\n", "): truncated: "
          "header announces 3 points, 2 lines of ASCII data present"},
  };
  guint i, later;

  for (i = 0; i < G_N_ELEMENTS (cases); i++)
    for (later = 0; later < 2; later++) {
      GByteArray *good = ascii_file (GOOD_TAIL, GOOD_DATA);
      GByteArray *bad = ascii_file (cases[i].tail, cases[i].data);
      Parser p = parser_new (cases[i].properties, NULL);
      gchar *prefix = g_strdup_printf ("byte %u (file %u",
          later ? good->len : 0, later + 1);

      GST_INFO ("case %u%s: %s", i, later ? " (second file)" : "",
          cases[i].message);
      if (later)
        g_byte_array_prepend (bad, good->data, good->len);
      push_array (&p, bad);
      push_eos (&p);
      expect_error_parts (&p, prefix, cases[i].message);
      fail_unless_equals_int (gst_harness_buffers_received (p.h), later);
      /* after an error (or EOS) nothing more is read */
      fail_unless (push_array (&p, good) != GST_FLOW_OK);
      fail_unless_equals_int (gst_harness_buffers_received (p.h), later);
      parser_free (&p);
      g_byte_array_unref (good);
      g_byte_array_unref (bad);
      g_free (prefix);
    }
}

GST_END_TEST;

/* Truncated binary, binary_compressed and ASCII files at EOS, at cuts
 * across the header and the data: never a buffer, always the truncation
 * (or a header line) named at the file's offset; a cut before any byte of
 * the second file leaves just the first. */
GST_START_TEST (test_truncated)
{
  PcdTestCloud *cloud = pcdtest_cloud_new (xyzi_fields, 4, 30, 5);
  guint st;

  for (st = PCDTEST_ASCII; st <= PCDTEST_COMPRESSED; st++) {
    PcdTestOptions o = { st, "0.7" };
    GByteArray *file = pcdtest_write (cloud, &o);
    const guint8 *last_space = file->data + file->len;
    gsize cut;

    while (*--last_space != ' ')
      continue;
    for (cut = 1; cut < file->len; cut += 1 + cut / 3) {
      GByteArray *stream;
      Parser p;
      gchar *prefix;

      /* ASCII cut in its last value is a whole file at EOS */
      if (st == PCDTEST_ASCII && cut > (gsize) (last_space - file->data))
        continue;
      stream = g_byte_array_new ();
      p = parser_new ("", NULL);
      prefix = g_strdup_printf ("byte %u (file 2", file->len);

      g_byte_array_append (stream, file->data, file->len);
      g_byte_array_append (stream, file->data, cut);
      push_chunks (&p, stream, 4096);
      push_eos (&p);
      fail_unless_equals_int (gst_harness_buffers_received (p.h), 1);
      expect_error (&p, prefix);
      parser_free (&p);
      g_byte_array_unref (stream);
      g_free (prefix);
    }
    g_byte_array_unref (file);
  }
  pcdtest_cloud_free (cloud);
}

GST_END_TEST;

/* Binary damage: LZF that does not decode, sizes that disagree, garbage,
 * a file without x, and a file too large for any buffer, refused as soon
 * as its header is in. */
GST_START_TEST (test_bad_data)
{
  PcdTestCloud *cloud = pcdtest_cloud_new (xyzi_fields, 4, 30, 9);
  PcdTestOptions o = { PCDTEST_COMPRESSED, "0.7" };
  GByteArray *file = pcdtest_write (cloud, &o);
  gsize header_size = file->len - 8 - (30 * 16 + 15);
  Parser p;
  GByteArray *bad;
  guint8 garbage[3000];
  P3dTestRng rng;
  guint i;
  const gchar *huge = "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\n"
      "COUNT 1 1 1\nWIDTH 400000000\nHEIGHT 1\nPOINTS 400000000\n"
      "DATA binary\n";
  const gchar *no_x = "VERSION 0.7\nFIELDS a y z\nSIZE 4 4 4\nTYPE F F F\n"
      "COUNT 1 1 1\nWIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA ascii\n1 2 3\n";

  /* a literal run that claims more bytes than there are */
  bad = g_byte_array_new ();
  g_byte_array_append (bad, file->data, file->len);
  /* a back reference before the start of the output */
  bad->data[header_size + 8] = 0xff;
  p = parser_new ("", NULL);
  fail_unless_equals_int (push_array (&p, bad), GST_FLOW_ERROR);
  expect_error_parts (&p, "byte 0 (file 1, byte ", "LZF data");
  g_byte_array_unref (bad);
  parser_free (&p);

  /* the uncompressed size disagrees with the header */
  bad = g_byte_array_new ();
  g_byte_array_append (bad, file->data, file->len);
  bad->data[header_size + 4] ^= 1;
  p = parser_new ("", NULL);
  fail_unless_equals_int (push_array (&p, bad), GST_FLOW_ERROR);
  expect_error_parts (&p, "byte 0 (file 1, byte ",
      "binary_compressed data announces 481 uncompressed bytes");
  g_byte_array_unref (bad);
  parser_free (&p);

  /* text and binary garbage */
  p = parser_new ("", NULL);
  fail_unless_equals_int (push_bytes (&p, (const guint8 *) "hello world\n",
          12), GST_FLOW_ERROR);
  expect_error (&p, "byte 0 (file 1, line 1): unknown header keyword "
      "'hello'");
  parser_free (&p);
  p3d_test_rng_init (&rng, 77);
  for (i = 0; i < sizeof (garbage); i++)
    garbage[i] = (guint8) p3d_test_rng_u32 (&rng);
  p = parser_new ("", NULL);
  push_bytes (&p, garbage, sizeof (garbage));
  push_eos (&p);
  expect_error (&p, "byte 0 (file 1");
  fail_unless_equals_int (gst_harness_buffers_received (p.h), 0);
  parser_free (&p);

  p = parser_new ("", NULL);
  fail_unless_equals_int (push_bytes (&p, (const guint8 *) no_x,
          strlen (no_x)), GST_FLOW_ERROR);
  expect_error (&p, "byte 0 (file 1): the file has no field 'x'");
  parser_free (&p);

  /* 6.4 GB of xyzi: refused once the header is in, not buffered */
  p = parser_new ("", NULL);
  fail_unless_equals_int (push_bytes (&p, (const guint8 *) huge,
          strlen (huge)), GST_FLOW_ERROR);
  expect_error (&p, "byte 0 (file 1): 400000000 points of format xyzi take "
      "more than the 2147479552 bytes a buffer can hold");
  parser_free (&p);

  g_byte_array_unref (file);
  pcdtest_cloud_free (cloud);
}

GST_END_TEST;

static guint64
stats_value (Parser * p, const gchar * field)
{
  GstStructure *stats = NULL;
  guint64 value = 0;

  g_object_get (p->parse, "stats", &stats, NULL);
  fail_unless (gst_structure_get_uint64 (stats, field, &value), "%s", field);
  gst_structure_free (stats);
  return value;
}

/* Issue 11: parsing is linear in the input whatever the block size. One
 * point line padded to 16 MB, fed in 4 KiB blocks, was scanned again on
 * every block (0.7 s; 26 s at 64 MB); the bytes scanned are now a small
 * multiple of the input, and so are those of many short lines, of a
 * header fed byte by byte, and of binary data in small blocks. */
GST_START_TEST (test_linear_scanning)
{
  static const gchar header[] = "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\n"
      "TYPE F F F\nCOUNT 1 1 1\nWIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA ascii\n";
  gsize line_size = 16 << 20;
  GByteArray *file = g_byte_array_sized_new (line_size + 64);
  PcdTestCloud *cloud = pcdtest_cloud_new (xyzi_fields, 4, 20000, 3);
  PcdTestOptions o = { PCDTEST_ASCII, "0.7" };
  GByteArray *many;
  Parser p;
  GstBuffer *out;
  guint64 scanned;
  guint st;

  g_byte_array_append (file, (const guint8 *) header, strlen (header));
  g_byte_array_append (file, (const guint8 *) "1 2 3", 5);
  g_byte_array_set_size (file, strlen (header) + line_size - 1);
  memset (file->data + strlen (header) + 5, ' ', line_size - 6);
  g_byte_array_append (file, (const guint8 *) "\n", 1);
  p = parser_new ("", NULL);
  push_chunks (&p, file, 4096);
  fail_unless_equals_int (gst_harness_buffers_received (p.h), 1);
  out = gst_harness_pull (p.h);
  fail_unless_equals_uint64 (gst_buffer_get_size (out), 16);
  gst_buffer_unref (out);
  scanned = stats_value (&p, "scanned-bytes");
  GST_INFO ("16 MB line in 4 KiB blocks: %" G_GUINT64_FORMAT " bytes "
      "scanned for %u", scanned, file->len);
  /* quadratic was 4096 blocks x 8 MB on average: 32 GB */
  fail_unless (scanned <= 3 * (guint64) file->len, "%" G_GUINT64_FORMAT
      " bytes scanned for a file of %u", scanned, file->len);
  parser_free (&p);

  for (st = PCDTEST_ASCII; st <= PCDTEST_COMPRESSED; st++) {
    o.storage = st;
    many = pcdtest_write (cloud, &o);
    p = parser_new ("", NULL);
    /* the header and a little more byte by byte, the rest in 4 KiB
     * blocks; then the file again in 4 KiB blocks */
    {
      GByteArray head = { many->data, 600 };
      gsize pos;

      push_chunks (&p, &head, 1);
      for (pos = 600; pos < many->len; pos += 4096)
        fail_unless_equals_int (push_bytes (&p, many->data + pos,
                MIN (4096, many->len - pos)), GST_FLOW_OK);
    }
    push_chunks (&p, many, 4096);
    fail_unless_equals_int (gst_harness_buffers_received (p.h), 2);
    scanned = stats_value (&p, "scanned-bytes");
    fail_unless (scanned <= 6 * (guint64) many->len, "%s: %" G_GUINT64_FORMAT
        " bytes scanned for two files of %u", pcdtest_storage_names[st],
        scanned, many->len);
    out = gst_harness_pull (p.h);
    pcdtest_assert_cloud (out, cloud, "xyzi", TRUE, "byte by byte");
    gst_buffer_unref (out);
    out = gst_harness_pull (p.h);
    pcdtest_assert_cloud (out, cloud, "xyzi", TRUE, "in blocks");
    gst_buffer_unref (out);
    parser_free (&p);
    g_byte_array_unref (many);
  }
  pcdtest_cloud_free (cloud);
  g_byte_array_unref (file);
}

GST_END_TEST;

/* Issue 11: what a header announces is bounded before it is waited for:
 * a stride x points beyond max-file-size, LZF data larger than any LZF
 * output for the announced points, and an ASCII file held beyond
 * max-file-size, each an error at once, nothing buffered. */
GST_START_TEST (test_announced_sizes)
{
  static const gchar wide[] = "VERSION 0.7\nFIELDS x y z _\n"
      "SIZE 4 4 4 1\nTYPE F F F U\nCOUNT 1 1 1 988\nWIDTH 100000000\n"
      "HEIGHT 1\nPOINTS 100000000\nDATA binary\n";
  static const gchar compressed[] = "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\n"
      "TYPE F F F\nCOUNT 1 1 1\nWIDTH 10\nHEIGHT 1\nPOINTS 10\n"
      "DATA binary_compressed\n\xff\xff\xff\xff\x78\0\0\0";
  static const gchar ascii[] = "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\n"
      "TYPE F F F\nCOUNT 1 1 1\nWIDTH 2\nHEIGHT 1\nPOINTS 2\nDATA ascii\n"
      "1 2 3\n";
  GByteArray *spaces = g_byte_array_new ();
  Parser p;

  /* 100 M points of 1000 bytes: 100 GB announced */
  p = parser_new ("", NULL);
  fail_unless_equals_int (push_bytes (&p, (const guint8 *) wide,
          strlen (wide)), GST_FLOW_ERROR);
  expect_error (&p, "byte 0 (file 1): the header announces a file of "
      "100000000123 bytes, more than max-file-size (1073741824)");
  parser_free (&p);
  /* a smaller limit applies to smaller files */
  p = parser_new ("max-file-size=1000", NULL);
  fail_unless_equals_int (push_bytes (&p, (const guint8 *) ascii,
          strlen (ascii) - 6), GST_FLOW_OK);
  g_byte_array_set_size (spaces, 2000);
  memset (spaces->data, ' ', spaces->len);
  fail_unless_equals_int (push_array (&p, spaces), GST_FLOW_ERROR);
  expect_error (&p, "byte 0 (file 1): no complete file in ");
  fail_unless (strstr (ascii, "max-file-size") == NULL);
  parser_free (&p);

  /* 0xFFFFFFFF bytes of LZF for 120 bytes of points */
  p = parser_new ("", NULL);
  fail_unless_equals_int (push_bytes (&p, (const guint8 *) compressed,
          sizeof (compressed) - 1), GST_FLOW_ERROR);
  expect_error (&p, "byte 0 (file 1, byte 110 in the file): 4294967295 bytes "
      "of LZF data cannot decompress to as few as the 120 bytes");
  parser_free (&p);
  g_byte_array_unref (spaces);
}

GST_END_TEST;

/* Issue 32.9: max-file-size counts a file's bytes, whatever blocks they
 * come in: a binary file over the limit was refused in 64-byte blocks and
 * passed whole (filesrc's 4 KiB blocks). */
GST_START_TEST (test_max_file_size_in_any_blocks)
{
  GByteArray *file = g_byte_array_new ();
  static const gchar header[] = "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\n"
      "TYPE F F F\nCOUNT 1 1 1\nWIDTH 14\nHEIGHT 1\nPOINTS 14\n"
      "DATA binary\n";
  static const gsize chunks[] = { 64, 4096 };
  gfloat points[14 * 3];
  gchar *limit;
  guint c, i;
  Parser p;

  for (i = 0; i < G_N_ELEMENTS (points); i++)
    points[i] = (gfloat) i;
  g_byte_array_append (file, (const guint8 *) header, strlen (header));
  g_byte_array_append (file, (const guint8 *) points, sizeof (points));
  fail_unless (file->len > 200 && file->len < 4096);
  for (c = 0; c < G_N_ELEMENTS (chunks); c++) {
    p = parser_new ("max-file-size=100", NULL);
    for (i = 0; i < file->len; i += chunks[c])
      if (push_bytes (&p, file->data + i, MIN (chunks[c], file->len - i)) !=
          GST_FLOW_OK)
        break;
    fail_unless (i < file->len || chunks[c] >= file->len,
        "all %u bytes taken in %" G_GSIZE_FORMAT "-byte blocks", file->len,
        chunks[c]);
    expect_error_parts (&p, "byte 0 (file 1): ", chunks[c] >= file->len ?
        "a file of 267 bytes, more than max-file-size (100)" :
        "max-file-size is 100");
    fail_unless_equals_int (gst_harness_buffers_received (p.h), 0);
    parser_free (&p);
  }
  /* at the limit it passes */
  limit = g_strdup_printf ("max-file-size=%u", file->len);
  p = parser_new (limit, NULL);
  fail_unless_equals_int (push_array (&p, file), GST_FLOW_OK);
  fail_unless_equals_int (gst_harness_buffers_received (p.h), 1);
  parser_free (&p);
  g_free (limit);
  g_byte_array_unref (file);
}

GST_END_TEST;

/* Issue 11: messages that misled. A comment after the last point is read
 * as PCL reads it; 2 MiB of NUL bytes is an error with buffer-is-file as
 * without; a finite value beyond float32 is counted and said, once. */
GST_START_TEST (test_issue11_input)
{
  static const gchar file[] = "# .PCD v0.7\nVERSION 0.7\nFIELDS x y z\n"
      "SIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 3\nHEIGHT 1\nPOINTS 3\n"
      "DATA ascii\n1 2 3\n1e39 2 3\n4 5 6\n# the end\n";
  guint8 *zeros = g_malloc0 (2 << 20);
  GstMessage *message;
  gchar *text;
  guint mode;
  Parser p;

  for (mode = 0; mode < 2; mode++) {
    p = parser_new (mode ? "buffer-is-file=true" : "", NULL);
    fail_unless_equals_int (push_bytes (&p, (const guint8 *) file,
            strlen (file)), GST_FLOW_OK);
    push_eos (&p);
    fail_unless_equals_int (gst_harness_buffers_received (p.h), 1);
    fail_unless_equals_uint64 (stats_value (&p, "points"), 2);
    fail_unless_equals_uint64 (stats_value (&p, "dropped-points"), 1);
    fail_unless_equals_uint64 (stats_value (&p, "overflow-points"), 1);
    message = gst_bus_pop_filtered (p.bus, GST_MESSAGE_WARNING);
    fail_unless (message != NULL);
    text = elemtest_message_text (message);
    fail_unless (g_str_has_prefix (text, "byte 0 (file 1): 1 points hold a "
            "finite value beyond the float32 range"), "%s", text);
    g_free (text);
    gst_message_unref (message);
    parser_free (&p);

    p = parser_new (mode ? "buffer-is-file=true" : "", NULL);
    push_bytes (&p, zeros, 2 << 20);
    push_eos (&p);
    expect_error (&p, "byte 0 (file 1): 2097152 NUL or blank bytes and no "
        "header");
    fail_unless_equals_int (gst_harness_buffers_received (p.h), 0);
    parser_free (&p);
  }
  g_free (zeros);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* Pipelines over files in a temporary folder */

/* Four files, every storage type, the last ASCII without a final newline:
 * through multifilesrc (one buffer per file) with and without
 * buffer-is-file, and through filesrc as one concatenated file. An ASCII
 * file without a final newline followed by one that starts with VERSION
 * runs into it unless buffer-is-file says where files end. */
GST_START_TEST (test_pipelines)
{
  GError *error = NULL;
  gchar *dir = g_dir_make_tmp ("pcdparse-XXXXXX", &error);
  PcdTestCloud *clouds[4];
  GByteArray *all = g_byte_array_new ();
  gchar *launch;
  ElemtestRun run;
  guint i, buffer_is_file;

  fail_unless (dir != NULL, "%s", error ? error->message : "");
  for (i = 0; i < 4; i++) {
    PcdTestOptions o = { (PcdTestStorage) (i % 3), "0.7" };
    GByteArray *file;
    gchar name[16];

    o.no_final_newline = i == 3;
    clouds[i] = pcdtest_cloud_new (all_types, G_N_ELEMENTS (all_types), 500 + i,
        40 + i);
    file = pcdtest_write (clouds[i], &o);
    g_snprintf (name, sizeof (name), "f%04u.pcd", i);
    g_free (elemtest_write_bytes (dir, name, file->data, file->len));
    g_byte_array_append (all, file->data, file->len);
    g_byte_array_unref (file);
  }
  g_free (elemtest_write_bytes (dir, "all.pcd", all->data, all->len));

  for (buffer_is_file = 0; buffer_is_file < 2; buffer_is_file++) {
    launch = g_strdup_printf ("multifilesrc location=%s/f%%04d.pcd "
        "stop-index=3 ! pcdparse buffer-is-file=%d framerate=10/1 ! "
        "application/x-point-cloud ! appsink name=sink sync=false", dir,
        buffer_is_file);
    elemtest_run (launch, &run);
    fail_unless (run.error == NULL, "%s: %s", launch, run.error);
    fail_unless_equals_int (run.samples->len, 4);
    for (i = 0; i < 4; i++) {
      gchar *what = g_strdup_printf ("multifilesrc file %u", i);

      pcdtest_assert_cloud (elemtest_sample_buffer (run.samples, i), clouds[i],
          "xyzi", TRUE, what);
      fail_unless_equals_uint64 (GST_BUFFER_PTS (elemtest_sample_buffer
              (run.samples, i)), i * GST_SECOND / 10);
      g_free (what);
    }
    elemtest_run_clear (&run);
    g_free (launch);
  }

  launch = g_strdup_printf ("filesrc location=%s/all.pcd ! pcdparse ! "
      "application/x-point-cloud, format=xyzir ! appsink name=sink "
      "sync=false", dir);
  elemtest_run (launch, &run);
  fail_unless (run.error == NULL, "%s: %s", launch, run.error);
  fail_unless_equals_int (run.samples->len, 4);
  for (i = 0; i < 4; i++)
    pcdtest_assert_cloud (elemtest_sample_buffer (run.samples, i), clouds[i],
        "xyzir", TRUE, "filesrc");
  elemtest_run_clear (&run);
  g_free (launch);

  /* file 3 (no final newline), then file 0 as ASCII, whose first line
   * VERSION (without the "# .PCD" comment) runs into file 3's last */
  {
    PcdTestOptions o = { PCDTEST_ASCII, "0.7" };
    GByteArray *file = pcdtest_write (clouds[0], &o);
    GByteArray *bare = g_byte_array_new ();
    const guint8 *version = memchr (file->data, 'V', file->len);

    g_byte_array_append (bare, version, file->len - (version - file->data));
    g_free (elemtest_write_bytes (dir, "g0001.pcd", bare->data, bare->len));
    g_byte_array_unref (bare);
    g_byte_array_unref (file);
    o.no_final_newline = TRUE;
    file = pcdtest_write (clouds[3], &o);
    g_free (elemtest_write_bytes (dir, "g0000.pcd", file->data, file->len));
    g_byte_array_unref (file);
  }
  for (buffer_is_file = 0; buffer_is_file < 2; buffer_is_file++) {
    launch = g_strdup_printf ("multifilesrc location=%s/g%%04d.pcd "
        "stop-index=1 ! pcdparse buffer-is-file=%d ! "
        "application/x-point-cloud ! appsink name=sink sync=false", dir,
        buffer_is_file);
    elemtest_run (launch, &run);
    if (buffer_is_file) {
      fail_unless (run.error == NULL, "%s: %s", launch, run.error);
      fail_unless_equals_int (run.samples->len, 2);
      pcdtest_assert_cloud (elemtest_sample_buffer (run.samples, 0), clouds[3],
          "xyzi", TRUE, "file 3");
      pcdtest_assert_cloud (elemtest_sample_buffer (run.samples, 1), clouds[0],
          "xyzi", TRUE, "file 0");
    } else {
      fail_unless_equals_int (run.samples->len, 0);
      fail_unless (run.error != NULL && g_str_has_prefix (run.error,
              "byte 0 (file 1, point 502, line "), "%s", run.error);
    }
    elemtest_run_clear (&run);
    g_free (launch);
  }

  for (i = 0; i < 4; i++)
    pcdtest_cloud_free (clouds[i]);
  g_byte_array_unref (all);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

static Suite *
pcdparse_suite (void)
{
  Suite *s = suite_create ("pcdparse");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_storage_types);
  tcase_add_test (tc, test_format_negotiation);
  tcase_add_test (tc, test_nonfinite);
  tcase_add_test (tc, test_chunks);
  tcase_add_test (tc, test_back_to_back);
  tcase_add_test (tc, test_timestamps);
  tcase_add_test (tc, test_pool_growth);
  tcase_add_test (tc, test_empty_stream);
  tcase_add_test (tc, test_bad_input);
  tcase_add_test (tc, test_truncated);
  tcase_add_test (tc, test_bad_data);
  tcase_add_test (tc, test_pipelines);
  tcase_add_test (tc, test_linear_scanning);
  tcase_add_test (tc, test_announced_sizes);
  tcase_add_test (tc, test_max_file_size_in_any_blocks);
  tcase_add_test (tc, test_issue11_input);
  return s;
}

P3D_CHECK_MAIN (pcdparse);
