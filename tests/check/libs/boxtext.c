/* The box text formats of boxenc and boxparse (gst/p3dboxtext.h), alone:
 * floats as text against hand-worked decimals, labels, every writer read
 * back by its reader bit for bit (non-finite values included), the JSON
 * writer read by json-glib itself, a KITTI line as KITTI writes it, and
 * every malformed line docs/elements/boxparse.md lists, with its message. */
#include <float.h>
#include <math.h>
#include <string.h>

#include <json-glib/json-glib.h>
#include <gst/check/gstcheck.h>

#include "p3dboxtext.h"
#include "p3dtest.h"

static gboolean
float_same (gfloat a, gfloat b)
{
  /* NaN has no single text: any NaN reads back as a NaN */
  if (isnan (a) || isnan (b))
    return isnan (a) && isnan (b);
  return memcmp (&a, &b, sizeof (gfloat)) == 0;
}

static void
assert_box3d_same (const P3dcBox3d * a, const P3dcBox3d * b)
{
  fail_unless (float_same (a->x, b->x) && float_same (a->y, b->y)
      && float_same (a->z, b->z) && float_same (a->dx, b->dx)
      && float_same (a->dy, b->dy) && float_same (a->dz, b->dz)
      && float_same (a->yaw, b->yaw) && float_same (a->score, b->score),
      "box (%g %g %g %g %g %g %g %g) read back as (%g %g %g %g %g %g %g %g)",
      a->x, a->y, a->z, a->dx, a->dy, a->dz, a->yaw, a->score, b->x, b->y,
      b->z, b->dx, b->dy, b->dz, b->yaw, b->score);
  fail_unless_equals_int (a->label, b->label);
}

static void
assert_box2d_same (const P3dcBox2d * a, const P3dcBox2d * b)
{
  fail_unless (float_same (a->x1, b->x1) && float_same (a->y1, b->y1)
      && float_same (a->x2, b->x2) && float_same (a->y2, b->y2)
      && float_same (a->score, b->score),
      "box (%g %g %g %g %g) read back as (%g %g %g %g %g)", a->x1, a->y1,
      a->x2, a->y2, a->score, b->x1, b->y1, b->x2, b->y2, b->score);
  fail_unless_equals_int (a->label, b->label);
}

/* The one line of @out, without its '\n' (which must end it). */
static gchar *
only_line (GString * out)
{
  fail_unless (out->len > 0 && out->str[out->len - 1] == '\n');
  fail_unless (memchr (out->str, '\n', out->len - 1) == NULL,
      "more than one line: %s", out->str);
  return g_strndup (out->str, out->len - 1);
}

/* The one line of @out (*@line, free it) read by json-glib: its object. */
static JsonObject *
parse_only_line (JsonParser * parser, GString * out, gchar ** line)
{
  *line = only_line (out);
  fail_unless (json_parser_load_from_data (parser, *line, -1, NULL),
      "not JSON: %s", *line);
  return json_node_get_object (json_parser_get_root (parser));
}

/* Boxes with values that test the text: exact decimals, ones that are not
 * (0.1), the extremes of the float range, denormals, signed zeros and the
 * non-finite values. */
static const P3dcBox3d boxes3d[] = {
  {1.5f, -2.0f, 0.25f, 4.0f, 1.75f, 1.5f, 0.1f, 0.5f, 0},
  {0.1f, 1e-7f, -123456.789f, FLT_MAX, -FLT_MAX, FLT_MIN, 1e-45f, 1.0f, 2},
  {-0.0f, 0.0f, 16777216.0f, 3.14159274f, -1e20f, 1e30f, -3.0f, 0.0f, 7},
  {NAN, INFINITY, -INFINITY, 1.0f, 1.0f, 1.0f, 0.0f, 0.25f, -1},
};

static const P3dcBox2d boxes2d[] = {
  {10.0f, 20.5f, 110.25f, 220.0f, 0.9f, 1},
  {0.1f, -0.0f, FLT_MAX, 1e-45f, 1.0f, 0},
  {NAN, INFINITY, -INFINITY, 0.0f, 0.3f, 5},
};

/* ------------------------------------------------------------------------ */

GST_START_TEST (test_format_float)
{
  /* Worked by hand: the fewest %g digits that read back to the float;
   * whole numbers below 1e17 in full. 123456789 is the float 123456792,
   * which "1.2345679e+08" reads back to, printed whole; 16777217 is the
   * float 16777216, which needs all 8 digits; 1e-45 rounds to the
   * smallest denormal (1.4e-45). */
  static const struct
  {
    gfloat value;
    const gchar *text;
  } cases[] = {
    {0.1f, "0.1"},
    {1.5f, "1.5"},
    {-2.0f, "-2"},
    {100.0f, "100"},
    {123456789.0f, "123456792"},
    {16777217.0f, "16777216"},
    {1e20f, "1e+20"},
    {1e-45f, "1e-45"},
    {-0.0f, "-0"},
    {0.0f, "0"},
    {NAN, "nan"},
    {INFINITY, "inf"},
    {-INFINITY, "-inf"},
  };
  gchar text[P3D_BOX_TEXT_FLOAT_SIZE];
  guint i;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    p3d_box_text_format_float (cases[i].value, text);
    fail_unless_equals_string (text, cases[i].text);
  }
}

GST_END_TEST;

GST_START_TEST (test_float_round_trip)
{
  /* Every float with these bit patterns reads back to itself: a sweep of
   * exponents and mantissas, denormals included. */
  guint32 bits;

  for (bits = 0; bits < 0x7f800000u; bits += 0x00012345u) {
    guint sign;

    for (sign = 0; sign < 2; sign++) {
      guint32 b = bits | (sign ? 0x80000000u : 0);
      gchar text[P3D_BOX_TEXT_FLOAT_SIZE];
      gfloat value, back = 0.0f;

      memcpy (&value, &b, sizeof (value));
      p3d_box_text_format_float (value, text);
      fail_unless (p3d_box_text_parse_float (text, &back), "%s", text);
      fail_unless (float_same (value, back), "%08x: %s read back as %.9g",
          b, text, back);
    }
  }
}

GST_END_TEST;

GST_START_TEST (test_parse_float)
{
  static const gchar *const refused[] = {
    "", " 1", "1 ", "1,5", "abc", "1e39", "-1e39", "1e400", "--1", "1.5x",
  };
  gfloat value;
  guint i;

  fail_unless (p3d_box_text_parse_float ("2.5", &value) && value == 2.5f);
  fail_unless (p3d_box_text_parse_float ("-7", &value) && value == -7.0f);
  fail_unless (p3d_box_text_parse_float ("nan", &value) && isnan (value));
  fail_unless (p3d_box_text_parse_float ("inf", &value) && isinf (value)
      && value > 0);
  fail_unless (p3d_box_text_parse_float ("-inf", &value) && isinf (value)
      && value < 0);
  /* the largest float, written with more digits than it needs */
  fail_unless (p3d_box_text_parse_float ("3.40282347e+38", &value)
      && value == FLT_MAX);
  fail_if (p3d_box_text_parse_float (NULL, &value));
  for (i = 0; i < G_N_ELEMENTS (refused); i++)
    fail_if (p3d_box_text_parse_float (refused[i], &value), "%s read",
        refused[i]);
}

GST_END_TEST;

GST_START_TEST (test_labels)
{
  static const struct
  {
    const gchar *text;
    const gchar *why;
  } refused[] = {
    {"Car,,Cyclist", "label 1 has an empty name"},
    {",Car", "label 0 has an empty name"},
    {"Car,7", "label name \"7\" is a number, which would read back as that "
          "label"},
    {"-3", "label name \"-3\" is a number, which would read back as that "
          "label"},
    {"Big Car,Van", "label name \"Big Car\" contains white space, which "
          "separates KITTI fields"},
    {"Car,Van,Car", "label name \"Car\" is given twice"},
  };
  gchar **labels, *why = NULL, *labels_text = NULL, **kept = NULL;
  guint i;

  labels = p3d_box_text_parse_labels (" Car , Van,Truck ", &why);
  fail_unless (labels != NULL && why == NULL);
  fail_unless_equals_int (g_strv_length (labels), 3);
  fail_unless_equals_string (labels[0], "Car");
  fail_unless_equals_string (labels[1], "Van");
  fail_unless_equals_string (labels[2], "Truck");
  g_strfreev (labels);

  labels = p3d_box_text_parse_labels ("", &why);
  fail_unless (labels != NULL && labels[0] == NULL && why == NULL);
  g_strfreev (labels);
  labels = p3d_box_text_parse_labels (NULL, &why);
  fail_unless (labels != NULL && labels[0] == NULL && why == NULL);
  g_strfreev (labels);

  for (i = 0; i < G_N_ELEMENTS (refused); i++) {
    fail_unless (p3d_box_text_parse_labels (refused[i].text, &why) == NULL);
    fail_unless_equals_string (why, refused[i].why);
    g_clear_pointer (&why, g_free);
  }

  /* set_labels replaces both on success and keeps both on failure */
  fail_unless (p3d_box_text_set_labels (P3D_BOX_TEXT_DEFAULT_LABELS,
          &labels_text, &kept, &why));
  fail_unless_equals_string (labels_text, "Car,Pedestrian,Cyclist");
  fail_unless_equals_int (g_strv_length (kept), 3);
  fail_unless_equals_string (kept[1], "Pedestrian");
  fail_if (p3d_box_text_set_labels ("Car,Car", &labels_text, &kept, &why));
  fail_unless_equals_string (why, "label name \"Car\" is given twice");
  g_clear_pointer (&why, g_free);
  fail_unless_equals_string (labels_text, "Car,Pedestrian,Cyclist");
  fail_unless_equals_string (kept[2], "Cyclist");
  fail_unless (p3d_box_text_set_labels (NULL, &labels_text, &kept, &why));
  fail_unless_equals_string (labels_text, "");
  fail_unless (kept[0] == NULL);
  g_free (labels_text);
  g_strfreev (kept);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* JSON lines */

static gdouble
json_member_double (JsonObject * object, const gchar * name)
{
  JsonNode *node = json_object_get_member (object, name);

  fail_unless (node != NULL && JSON_NODE_HOLDS_VALUE (node), "%s", name);
  return json_node_get_double (node);
}

GST_START_TEST (test_json_written)
{
  /* The writer read by json-glib directly: a frame line, then the box's
   * fields by name, each the float's exact value. */
  GString *out = g_string_new (NULL);
  JsonParser *parser = json_parser_new ();
  JsonObject *object;
  gchar *line;

  p3d_box_text_append_json_frame (out, 12, 500000000, 3, P3D_BOX_KIND_3D);
  object = parse_only_line (parser, out, &line);
  fail_unless_equals_int (json_object_get_size (object), 4);
  fail_unless_equals_int64 (json_object_get_int_member (object, "frame"), 12);
  fail_unless_equals_int64 (json_object_get_int_member (object, "pts"),
      500000000);
  fail_unless_equals_int64 (json_object_get_int_member (object, "count"), 3);
  fail_unless_equals_string (json_object_get_string_member (object, "type"),
      "3d");
  g_free (line);

  g_string_truncate (out, 0);
  p3d_box_text_append_json_frame (out, 0, P3D_BOX_TEXT_NO_PTS, 0,
      P3D_BOX_KIND_2D);
  object = parse_only_line (parser, out, &line);
  fail_unless (json_object_get_null_member (object, "pts"));
  fail_unless_equals_string (json_object_get_string_member (object, "type"),
      "2d");
  g_free (line);

  g_string_truncate (out, 0);
  p3d_box_text_append_json_box3d (out, &boxes3d[0]);
  object = parse_only_line (parser, out, &line);
  fail_unless_equals_int (json_object_get_size (object), 9);
  fail_unless (json_member_double (object, "x") == 1.5);
  fail_unless (json_member_double (object, "y") == -2.0);
  fail_unless (json_member_double (object, "z") == 0.25);
  fail_unless (json_member_double (object, "dx") == 4.0);
  fail_unless (json_member_double (object, "dy") == 1.75);
  fail_unless (json_member_double (object, "dz") == 1.5);
  /* written as the double nearest the float, which reads back to it */
  fail_unless ((gfloat) json_member_double (object, "yaw") == 0.1f);
  fail_unless (json_member_double (object, "score") == 0.5);
  fail_unless_equals_int64 (json_object_get_int_member (object, "label"), 0);
  g_free (line);

  /* the non-finite values as the strings JavaScript prints */
  g_string_truncate (out, 0);
  p3d_box_text_append_json_box3d (out, &boxes3d[3]);
  object = parse_only_line (parser, out, &line);
  fail_unless_equals_string (json_object_get_string_member (object, "x"),
      "NaN");
  fail_unless_equals_string (json_object_get_string_member (object, "y"),
      "Infinity");
  fail_unless_equals_string (json_object_get_string_member (object, "z"),
      "-Infinity");
  g_free (line);

  g_string_truncate (out, 0);
  p3d_box_text_append_json_box2d (out, &boxes2d[0]);
  object = parse_only_line (parser, out, &line);
  fail_unless_equals_int (json_object_get_size (object), 6);
  fail_unless (json_member_double (object, "x1") == 10.0);
  fail_unless (json_member_double (object, "y1") == 20.5);
  fail_unless (json_member_double (object, "x2") == 110.25);
  fail_unless (json_member_double (object, "y2") == 220.0);
  fail_unless ((gfloat) json_member_double (object, "score") == 0.9f);
  fail_unless_equals_int64 (json_object_get_int_member (object, "label"), 1);
  g_free (line);

  g_object_unref (parser);
  g_string_free (out, TRUE);
}

GST_END_TEST;

GST_START_TEST (test_json_round_trip)
{
  GString *out = g_string_new (NULL);
  P3dBoxLine parsed;
  gchar *line, *why = NULL;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (boxes3d); i++) {
    P3dBoxKind kind;

    /* the stream's kind given, and taken from the line ("x") */
    for (kind = P3D_BOX_KIND_UNKNOWN; kind <= P3D_BOX_KIND_3D; kind++) {
      g_string_truncate (out, 0);
      p3d_box_text_append_json_box3d (out, &boxes3d[i]);
      line = only_line (out);
      fail_unless_equals_int (p3d_box_text_parse_json (line, kind, &parsed,
              &why), P3D_BOX_LINE_BOX);
      fail_unless (why == NULL);
      fail_unless_equals_int (parsed.kind, P3D_BOX_KIND_3D);
      assert_box3d_same (&boxes3d[i], &parsed.box3d);
      g_free (line);
    }
  }
  for (i = 0; i < G_N_ELEMENTS (boxes2d); i++) {
    g_string_truncate (out, 0);
    p3d_box_text_append_json_box2d (out, &boxes2d[i]);
    line = only_line (out);
    fail_unless_equals_int (p3d_box_text_parse_json (line,
            P3D_BOX_KIND_UNKNOWN, &parsed, &why), P3D_BOX_LINE_BOX);
    fail_unless_equals_int (parsed.kind, P3D_BOX_KIND_2D);
    assert_box2d_same (&boxes2d[i], &parsed.box2d);
    g_free (line);
  }

  g_string_truncate (out, 0);
  p3d_box_text_append_json_frame (out, G_MAXINT64, G_MAXINT64, G_MAXUINT32,
      P3D_BOX_KIND_2D);
  line = only_line (out);
  fail_unless_equals_int (p3d_box_text_parse_json (line, P3D_BOX_KIND_2D,
          &parsed, &why), P3D_BOX_LINE_FRAME);
  fail_unless_equals_uint64 (parsed.frame, G_MAXINT64);
  fail_unless_equals_uint64 (parsed.pts, G_MAXINT64);
  fail_unless_equals_int64 (parsed.count, G_MAXUINT32);
  fail_unless_equals_int (parsed.kind, P3D_BOX_KIND_2D);
  g_free (line);

  g_string_truncate (out, 0);
  p3d_box_text_append_json_frame (out, 3, P3D_BOX_TEXT_NO_PTS, 0,
      P3D_BOX_KIND_3D);
  line = only_line (out);
  fail_unless_equals_int (p3d_box_text_parse_json (line, P3D_BOX_KIND_UNKNOWN,
          &parsed, &why), P3D_BOX_LINE_FRAME);
  fail_unless_equals_uint64 (parsed.frame, 3);
  fail_unless_equals_uint64 (parsed.pts, P3D_BOX_TEXT_NO_PTS);
  fail_unless_equals_int64 (parsed.count, 0);
  fail_unless_equals_int (parsed.kind, P3D_BOX_KIND_3D);
  g_free (line);
  g_string_free (out, TRUE);
}

GST_END_TEST;

GST_START_TEST (test_json_read)
{
  /* What other writers put on a line: integers for floats, null for NaN
   * (JavaScript's JSON.stringify), no pts, count or type. */
  P3dBoxLine parsed;
  gchar *why = NULL;

  fail_unless_equals_int (p3d_box_text_parse_json ("{\"label\": 3, "
          "\"score\": null, \"x\": 1, \"y\": 2, \"z\": 3, \"dx\": 4, "
          "\"dy\": 5, \"dz\": 6, \"yaw\": -1, \"extra\": \"ignored\"}",
          P3D_BOX_KIND_UNKNOWN, &parsed, &why), P3D_BOX_LINE_BOX);
  fail_unless (parsed.box3d.x == 1.0f && parsed.box3d.dz == 6.0f
      && parsed.box3d.yaw == -1.0f && isnan (parsed.box3d.score)
      && parsed.box3d.label == 3);

  fail_unless_equals_int (p3d_box_text_parse_json ("{\"frame\": 9}",
          P3D_BOX_KIND_3D, &parsed, &why), P3D_BOX_LINE_FRAME);
  fail_unless_equals_uint64 (parsed.frame, 9);
  fail_unless_equals_uint64 (parsed.pts, P3D_BOX_TEXT_NO_PTS);
  fail_unless_equals_int64 (parsed.count, -1);
  fail_unless_equals_int (parsed.kind, P3D_BOX_KIND_UNKNOWN);

  fail_unless_equals_int (p3d_box_text_parse_json (" \t ",
          P3D_BOX_KIND_UNKNOWN, &parsed, &why), P3D_BOX_LINE_BLANK);
  fail_unless_equals_int (p3d_box_text_parse_json ("", P3D_BOX_KIND_3D,
          &parsed, &why), P3D_BOX_LINE_BLANK);
  fail_unless (why == NULL);
}

GST_END_TEST;

#define BOX3D_BUT(member) \
    "{\"x\":1,\"y\":2,\"z\":3,\"dx\":1,\"dy\":1,\"dz\":1,\"yaw\":0," \
    "\"score\":1," member "}"

GST_START_TEST (test_json_errors)
{
  /* docs/elements/boxparse.md, "Errors and warnings": each malformed line
   * and the reason the reader gives. */
  static const struct
  {
    P3dBoxKind kind;
    const gchar *line;
    const gchar *why;
  } cases[] = {
    {P3D_BOX_KIND_3D, "{\"x\":1,\"y\":2,\"z\":3,\"dx\":1,\"dy\":1,\"yaw\":0,"
          "\"score\":1,\"label\":0}", "field \"dz\" is missing"},
    {P3D_BOX_KIND_3D, BOX3D_BUT ("\"label\":\"car\""),
        "field \"label\" is not an integer"},
    {P3D_BOX_KIND_3D, BOX3D_BUT ("\"label\":1.5"),
        "field \"label\" is not an integer"},
    {P3D_BOX_KIND_3D, "{\"x\":1,\"y\":2,\"z\":3,\"dx\":1,\"dy\":1,\"dz\":1,"
          "\"yaw\":0,\"score\":1}", "field \"label\" is missing"},
    {P3D_BOX_KIND_3D, BOX3D_BUT ("\"label\":4294967296"),
        "field \"label\" is 4294967296, beyond the int32 range"},
    {P3D_BOX_KIND_3D, BOX3D_BUT ("\"label\":9223372036854775808"),
        "field \"label\" is 9223372036854775808, beyond the 64-bit integer "
          "range"},
    {P3D_BOX_KIND_3D, "{\"x\":\"one\",\"label\":0}",
        "field \"x\" is not a number (nor \"NaN\", \"Infinity\", "
          "\"-Infinity\" or null)"},
    {P3D_BOX_KIND_3D, "{\"x\":[1],\"label\":0}",
        "field \"x\" is not a number (nor \"NaN\", \"Infinity\", "
          "\"-Infinity\" or null)"},
    {P3D_BOX_KIND_3D, "{\"x\":1e39,\"label\":0}",
        "field \"x\" is 1e+39, beyond the float range"},
    /* a 3D box in a 2D stream: the member it lacks */
    {P3D_BOX_KIND_2D, BOX3D_BUT ("\"label\":0"), "field \"x1\" is missing"},
    {P3D_BOX_KIND_3D, "{\"x1\":1,\"y1\":1,\"x2\":2,\"y2\":2,\"score\":1,"
          "\"label\":0}", "field \"x\" is missing"},
    {P3D_BOX_KIND_UNKNOWN, "{\"y\":1}", "neither a frame line (\"frame\") "
          "nor a box (\"x\" for a 3D box, \"x1\" for a 2D one)"},
    {P3D_BOX_KIND_3D, "[1, 2]", "not a JSON object"},
    {P3D_BOX_KIND_3D, "17", "not a JSON object"},
    {P3D_BOX_KIND_3D, "{\"x\":1} {\"x\":2}",
        "more than one JSON value on the line"},
    {P3D_BOX_KIND_3D, "{\"frame\":-1}",
        "field \"frame\" is not a non-negative integer"},
    {P3D_BOX_KIND_3D, "{\"frame\":\"1\"}",
        "field \"frame\" is not a non-negative integer"},
    {P3D_BOX_KIND_3D, "{\"frame\":-18446744073709551617}",
        "field \"frame\" is -18446744073709551617, beyond the 64-bit integer "
          "range"},
    {P3D_BOX_KIND_3D, "{\"frame\":1,\"pts\":-5}", "field \"pts\" is neither "
          "null nor a non-negative integer (nanoseconds)"},
    {P3D_BOX_KIND_3D, "{\"frame\":1,\"count\":4294967296}",
        "field \"count\" is not an integer in [0, 2^32)"},
    {P3D_BOX_KIND_3D, "{\"frame\":1,\"type\":\"4d\"}",
        "field \"type\" is neither \"3d\" nor \"2d\""},
    {P3D_BOX_KIND_3D, "{\"frame\":1,\"type\":\"2d\"}",
        "the frame line says 2d boxes, the stream holds 3d boxes"},
  };
  /* json-glib's own words follow "not valid JSON (": only the start is
   * ours */
  static const gchar *const not_json[] = {
    "{\"x\":1,", "{\"x\": NaN, \"label\": 0}", "{\"x\":1,}", "garbage",
  };
  P3dBoxLine parsed;
  gchar *why = NULL;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    fail_unless_equals_int (p3d_box_text_parse_json (cases[i].line,
            cases[i].kind, &parsed, &why), P3D_BOX_LINE_ERROR);
    fail_unless (why != NULL, "%s", cases[i].line);
    fail_unless_equals_string (why, cases[i].why);
    g_clear_pointer (&why, g_free);
  }
  for (i = 0; i < G_N_ELEMENTS (not_json); i++) {
    fail_unless_equals_int (p3d_box_text_parse_json (not_json[i],
            P3D_BOX_KIND_3D, &parsed, &why), P3D_BOX_LINE_ERROR);
    fail_unless (g_str_has_prefix (why, "not valid JSON ("), "%s: %s",
        not_json[i], why);
    g_clear_pointer (&why, g_free);
  }
}

GST_END_TEST;

/* A line nested 100 000 levels deep overflowed json-glib's recursion
 * (issue 32.1): refused by the depth scan before it is parsed. */
GST_START_TEST (test_json_deep)
{
  GString *line = g_string_new ("{\"x\":");
  P3dBoxLine parsed;
  gchar *why = NULL;
  guint i;

  for (i = 0; i < 100000; i++)
    g_string_append (line, "[");
  for (i = 0; i < 100000; i++)
    g_string_append (line, "]");
  g_string_append (line, ",\"label\":0}");
  fail_unless_equals_int (p3d_box_text_parse_json (line->str, P3D_BOX_KIND_3D,
          &parsed, &why), P3D_BOX_LINE_ERROR);
  fail_unless (g_str_has_prefix (why, "not valid JSON (nested more than 64 "
          "levels deep"), "%s", why);
  g_free (why);
  g_string_free (line, TRUE);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* KITTI label lines */

GST_START_TEST (test_kitti_written)
{
  /* KITTI's field order: type truncated occluded alpha bbox(4) h w l x y z
   * rotation_y score, with -1 and -10 where a camera would be needed;
   * h w l are dz dy dx. */
  gchar **labels = g_strsplit (P3D_BOX_TEXT_DEFAULT_LABELS, ",", -1);
  GString *out = g_string_new (NULL);
  const P3dcBox3d unnamed = { 0.5f, 0.5f, 0.5f, 1, 2, 3, 0, 1, 3 };

  p3d_box_text_append_kitti_box3d (out, &boxes3d[0], labels);
  fail_unless_equals_string (out->str,
      "Car -1 -1 -10 -1 -1 -1 -1 1.5 1.75 4 1.5 -2 0.25 0.1 0.5\n");

  /* a label with no name is written as its number */
  g_string_truncate (out, 0);
  p3d_box_text_append_kitti_box3d (out, &unnamed, labels);
  fail_unless_equals_string (out->str,
      "3 -1 -1 -10 -1 -1 -1 -1 3 2 1 0.5 0.5 0.5 0 1\n");
  g_string_truncate (out, 0);
  p3d_box_text_append_kitti_box3d (out, &boxes3d[0], NULL);
  fail_unless (g_str_has_prefix (out->str, "0 -1 -1 -10 "));

  /* 2D: the image box, then KITTI's "no 3D box" values */
  g_string_truncate (out, 0);
  p3d_box_text_append_kitti_box2d (out, &boxes2d[0], labels);
  fail_unless_equals_string (out->str, "Pedestrian -1 -1 -10 10 20.5 110.25 "
      "220 -1 -1 -1 -1000 -1000 -1000 -10 0.9\n");

  g_string_free (out, TRUE);
  g_strfreev (labels);
}

GST_END_TEST;

GST_START_TEST (test_kitti_round_trip)
{
  gchar **labels = g_strsplit ("Car,Pedestrian,Cyclist", ",", -1);
  GString *out = g_string_new (NULL);
  P3dBoxLine parsed;
  gchar *line, *why = NULL;
  guint i, with_names;

  for (with_names = 0; with_names < 2; with_names++) {
    gchar **names = with_names ? labels : NULL;

    for (i = 0; i < G_N_ELEMENTS (boxes3d); i++) {
      g_string_truncate (out, 0);
      p3d_box_text_append_kitti_box3d (out, &boxes3d[i], names);
      line = only_line (out);
      fail_unless_equals_int (p3d_box_text_parse_kitti (line,
              P3D_BOX_KIND_UNKNOWN, names, &parsed, &why), P3D_BOX_LINE_BOX);
      fail_unless (why == NULL);
      fail_unless_equals_int (parsed.kind, P3D_BOX_KIND_3D);
      assert_box3d_same (&boxes3d[i], &parsed.box3d);
      g_free (line);
    }
    for (i = 0; i < G_N_ELEMENTS (boxes2d); i++) {
      g_string_truncate (out, 0);
      p3d_box_text_append_kitti_box2d (out, &boxes2d[i], names);
      line = only_line (out);
      fail_unless_equals_int (p3d_box_text_parse_kitti (line,
              P3D_BOX_KIND_2D, names, &parsed, &why), P3D_BOX_LINE_BOX);
      fail_unless_equals_int (parsed.kind, P3D_BOX_KIND_2D);
      assert_box2d_same (&boxes2d[i], &parsed.box2d);
      g_free (line);
    }
  }
  g_string_free (out, TRUE);
  g_strfreev (labels);
}

GST_END_TEST;

GST_START_TEST (test_kitti_read)
{
  /* A ground-truth line of KITTI's own (15 fields, no score: 1), tabs and
   * runs of blanks between fields, numbers in other spellings. */
  gchar **labels = g_strsplit ("Car,Van", ",", -1);
  P3dBoxLine parsed;
  gchar *why = NULL;

  fail_unless_equals_int (p3d_box_text_parse_kitti ("Van 0.00 0 -1.57 "
          "614.24 181.78 727.31 284.77 1.57 1.73 4.15 1.00 1.75 13.22 1.62",
          P3D_BOX_KIND_3D, labels, &parsed, &why), P3D_BOX_LINE_BOX);
  fail_unless_equals_int (parsed.box3d.label, 1);
  fail_unless (parsed.box3d.dz == 1.57f && parsed.box3d.dy == 1.73f
      && parsed.box3d.dx == 4.15f && parsed.box3d.x == 1.0f
      && parsed.box3d.y == 1.75f && parsed.box3d.z == 13.22f
      && parsed.box3d.yaw == 1.62f && parsed.box3d.score == 1.0f);

  fail_unless_equals_int (p3d_box_text_parse_kitti ("\t42  0 0 0\t0 0 0 0 "
          "1 1 1 2e0 -3 4 0.5 0.75\r", P3D_BOX_KIND_3D, labels, &parsed,
          &why), P3D_BOX_LINE_BOX);
  fail_unless_equals_int (parsed.box3d.label, 42);
  fail_unless (parsed.box3d.x == 2.0f && parsed.box3d.y == -3.0f
      && parsed.box3d.score == 0.75f);

  /* a 2D stream takes the image box */
  fail_unless_equals_int (p3d_box_text_parse_kitti ("Car 0 0 0 1 2 3 4 "
          "0 0 0 0 0 0 0 0.5", P3D_BOX_KIND_2D, labels, &parsed, &why),
      P3D_BOX_LINE_BOX);
  fail_unless (parsed.box2d.x1 == 1.0f && parsed.box2d.y1 == 2.0f
      && parsed.box2d.x2 == 3.0f && parsed.box2d.y2 == 4.0f
      && parsed.box2d.score == 0.5f && parsed.box2d.label == 0);

  /* a type that is no label: its name, for boxparse's warning */
  fail_unless_equals_int (p3d_box_text_parse_kitti ("DontCare -1 -1 -10 "
          "1 2 3 4 -1 -1 -1 -1000 -1000 -1000 -10", P3D_BOX_KIND_3D, labels,
          &parsed, &why), P3D_BOX_LINE_UNKNOWN_LABEL);
  fail_unless_equals_string (why, "DontCare");
  g_clear_pointer (&why, g_free);

  fail_unless_equals_int (p3d_box_text_parse_kitti (" \t\r", P3D_BOX_KIND_3D,
          labels, &parsed, &why), P3D_BOX_LINE_BLANK);
  fail_unless (why == NULL);
  g_strfreev (labels);
}

GST_END_TEST;

#define KITTI_14 "Car 0 0 0 0 0 0 0 1 1 1 0 0 0"

GST_START_TEST (test_kitti_errors)
{
  static const struct
  {
    const gchar *line;
    const gchar *why;
  } cases[] = {
    {"Car", "1 field, a KITTI label line has 15 (16 with the score)"},
    {KITTI_14, "14 fields, a KITTI label line has 15 (16 with the score)"},
    {KITTI_14 " 0 1 2", "17 fields, a KITTI label line has 15 (16 with the "
          "score)"},
    {"Car 0 0 0 0 0 0 0 1 1,5 1 0 0 0 0",
        "field 10 (width) is not a number: \"1,5\""},
    {KITTI_14 " 0 1e39", "field 16 (score) is 1e39, beyond the float range"},
    {"Car 0 0 0 0 0 0 0 1 1 1 -1e39 0 0 0",
        "field 12 (x) is -1e39, beyond the float range"},
    {"Car x 0 0 0 0 0 0 1 1 1 0 0 0 0",
        "field 2 (truncated) is not a number: \"x\""},
    /* control and non-ASCII bytes escaped, so the message is UTF-8 */
    {KITTI_14 " \001\377", "field 15 (rotation_y) is not a number: "
          "\"\\001\\377\""},
    /* a value longer than 40 bytes is cut */
    {KITTI_14 " 0 0123456789012345678901234567890123456789x",
        "field 16 (score) is not a number: "
          "\"0123456789012345678901234567890123456789...\""},
  };
  P3dBoxLine parsed;
  gchar *why = NULL;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    fail_unless_equals_int (p3d_box_text_parse_kitti (cases[i].line,
            P3D_BOX_KIND_3D, NULL, &parsed, &why), P3D_BOX_LINE_ERROR);
    fail_unless (why != NULL, "%s", cases[i].line);
    fail_unless_equals_string (why, cases[i].why);
    g_clear_pointer (&why, g_free);
  }
}

GST_END_TEST;

GST_START_TEST (test_format_enum)
{
  /* boxenc's and boxparse's format property: the nicks users type */
  GEnumClass *klass = g_type_class_ref (P3D_TYPE_BOX_TEXT_FORMAT);

  fail_unless_equals_int (g_enum_get_value_by_nick (klass, "json")->value,
      P3D_BOX_TEXT_JSON);
  fail_unless_equals_int (g_enum_get_value_by_nick (klass, "kitti")->value,
      P3D_BOX_TEXT_KITTI);
  fail_unless_equals_int (klass->n_values, 2);
  g_type_class_unref (klass);
}

GST_END_TEST;

/* A 3D box's velocity: written as vx and vy after yaw, read back bit for
 * bit; both or neither; a box without them reads as zeros; ignored on 2D
 * boxes, whose records have no place for it. */
GST_START_TEST (test_json_velocity)
{
  const P3dcBox3d box = { 1.5f, -2.0f, 0.25f, 4.0f, 1.75f, 1.5f, 0.1f, 0.5f,
    3
  };
  const gfloat velocity[2] = { 0.1f, -12.75f };
  GString *out = g_string_new (NULL);
  P3dBoxLine line;
  gchar *why = NULL;

  p3d_box_text_append_json_box3d_velocity (out, &box, velocity);
  fail_unless (g_str_has_suffix (out->str, "\n"));
  fail_unless (strstr (out->str, "\"yaw\":") < strstr (out->str, "\"vx\":")
      && strstr (out->str, "\"vx\":") < strstr (out->str, "\"vy\":")
      && strstr (out->str, "\"vy\":") < strstr (out->str, "\"score\":"),
      "%s", out->str);
  g_string_truncate (out, out->len - 1);
  fail_unless_equals_int (p3d_box_text_parse_json (out->str,
          P3D_BOX_KIND_UNKNOWN, &line, &why), P3D_BOX_LINE_BOX);
  fail_unless (line.has_velocity);
  fail_unless (line.velocity[0] == 0.1f && line.velocity[1] == -12.75f);
  fail_unless (memcmp (&line.box3d, &box, sizeof (box)) == 0);

  g_string_truncate (out, 0);
  p3d_box_text_append_json_box3d (out, &box);
  fail_unless (strstr (out->str, "vx") == NULL);
  fail_unless_equals_int (p3d_box_text_parse_json (out->str,
          P3D_BOX_KIND_3D, &line, &why), P3D_BOX_LINE_BOX);
  fail_if (line.has_velocity);
  fail_unless (line.velocity[0] == 0.0f && line.velocity[1] == 0.0f);

  fail_unless_equals_int (p3d_box_text_parse_json ("{\"x\": 1, \"y\": 2, "
          "\"z\": 3, \"dx\": 1, \"dy\": 1, \"dz\": 1, \"yaw\": 0, "
          "\"vx\": 2, \"score\": 0.5, \"label\": 1}", P3D_BOX_KIND_3D,
          &line, &why), P3D_BOX_LINE_ERROR);
  fail_unless (strstr (why, "\"vy\" is missing") != NULL, "%s", why);
  g_clear_pointer (&why, g_free);
  fail_unless_equals_int (p3d_box_text_parse_json ("{\"x\": 1, \"y\": 2, "
          "\"z\": 3, \"dx\": 1, \"dy\": 1, \"dz\": 1, \"yaw\": 0, "
          "\"vx\": \"fast\", \"vy\": 0, \"score\": 0.5, \"label\": 1}",
          P3D_BOX_KIND_3D, &line, &why), P3D_BOX_LINE_ERROR);
  fail_unless (strstr (why, "vx") != NULL, "%s", why);
  g_clear_pointer (&why, g_free);
  fail_unless_equals_int (p3d_box_text_parse_json ("{\"x1\": 1, \"y1\": 2, "
          "\"x2\": 3, \"y2\": 4, \"vx\": 1, \"score\": 0.5, "
          "\"label\": 1}", P3D_BOX_KIND_UNKNOWN, &line, &why),
      P3D_BOX_LINE_BOX);
  fail_if (line.has_velocity);
  g_string_free (out, TRUE);
}

GST_END_TEST;

static Suite *
boxtext_suite (void)
{
  Suite *s = suite_create ("boxtext");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_format_float);
  tcase_add_test (tc, test_float_round_trip);
  tcase_add_test (tc, test_parse_float);
  tcase_add_test (tc, test_labels);
  tcase_add_test (tc, test_json_written);
  tcase_add_test (tc, test_json_round_trip);
  tcase_add_test (tc, test_json_read);
  tcase_add_test (tc, test_json_errors);
  tcase_add_test (tc, test_json_deep);
  tcase_add_test (tc, test_kitti_written);
  tcase_add_test (tc, test_kitti_round_trip);
  tcase_add_test (tc, test_kitti_read);
  tcase_add_test (tc, test_kitti_errors);
  tcase_add_test (tc, test_format_enum);
  tcase_add_test (tc, test_json_velocity);
  return s;
}

P3D_CHECK_MAIN (boxtext);
