/* Box records as JSON lines and KITTI label lines; see p3dboxtext.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include "p3dboxtext.h"
#include "p3djson.h"

/* The KITTI label fields, for error messages. */
static const gchar *const kitti_field_names[] = {
  "type", "truncated", "occluded", "alpha", "bbox left", "bbox top",
  "bbox right", "bbox bottom", "height", "width", "length", "x", "y", "z",
  "rotation_y", "score"
};

#define KITTI_FIELDS_WITHOUT_SCORE 15
#define KITTI_FIELDS_WITH_SCORE 16

static const gchar *const json_fields_3d[] = {
  "x", "y", "z", "dx", "dy", "dz", "yaw", "score"
};

static const gchar *const json_fields_2d[] =
    { "x1", "y1", "x2", "y2", "score" };

GType
p3d_box_text_format_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {P3D_BOX_TEXT_JSON, "JSON lines: a frame line, then one object per box",
        "json"},
    {P3D_BOX_TEXT_KITTI, "KITTI label lines, one per box (3D boxes in the "
          "LiDAR frame)", "kitti"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dBoxTextFormat", values);

    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

static gboolean
float_bits_equal (gfloat a, gfloat b)
{
  return memcmp (&a, &b, sizeof (gfloat)) == 0;
}

/* Whether @text, after an optional sign, spells an infinity; strtod
 * returns one for those and for finite numbers too large for a double. */
static gboolean
text_is_infinity (const gchar * text)
{
  if (*text == '+' || *text == '-')
    text++;
  return g_ascii_strncasecmp (text, "inf", 3) == 0;
}

/* A value from the input made printable for a message: cut to 40 bytes,
 * control and non-ASCII bytes escaped, so the message is valid UTF-8
 * whatever the input holds. */
static gchar *
quote_value (const gchar * text)
{
  gsize len = strlen (text);
  gchar *cut = g_strndup (text, MIN (len, 40));
  gchar *escaped = g_strescape (cut, NULL);
  gchar *result = g_strconcat (escaped, len > 40 ? "..." : "", NULL);

  g_free (escaped);
  g_free (cut);
  return result;
}

/* Whether @text is a finite decimal number too large for a float (1e39,
 * or 1e309, too large even for a double). */
static gboolean
text_overflows_float (const gchar * text)
{
  gchar *end = NULL;
  gdouble parsed;

  if (*text == '\0' || g_ascii_isspace (*text) || text_is_infinity (text))
    return FALSE;
  parsed = g_ascii_strtod (text, &end);
  if (end == text || *end != '\0' || isnan (parsed))
    return FALSE;
  return isinf ((gfloat) parsed);
}

gboolean
p3d_box_text_parse_float (const gchar * text, gfloat * value)
{
  gchar *end = NULL;
  gdouble parsed;

  /* strtod would skip leading white space; a field never has any. */
  if (text == NULL || *text == '\0' || g_ascii_isspace (*text))
    return FALSE;
  parsed = g_ascii_strtod (text, &end);
  if (end == text || *end != '\0')
    return FALSE;
  if (isinf (parsed) && !text_is_infinity (text))
    return FALSE;
  if (isfinite (parsed) && isinf ((gfloat) parsed))
    return FALSE;
  *value = (gfloat) parsed;
  return TRUE;
}

/* @value with @digits significant digits; TRUE when that reads back to
 * @value bit for bit. */
static gboolean
format_float_digits (gfloat value, gint digits,
    gchar buffer[P3D_BOX_TEXT_FLOAT_SIZE])
{
  gchar format[8];
  gfloat back;

  g_snprintf (format, sizeof (format), "%%.%dg", digits);
  g_ascii_formatd (buffer, P3D_BOX_TEXT_FLOAT_SIZE, format, value);
  return p3d_box_text_parse_float (buffer, &back)
      && float_bits_equal (back, value);
}

void
p3d_box_text_format_float (gfloat value, gchar buffer[P3D_BOX_TEXT_FLOAT_SIZE])
{
  const gchar *exponent;
  gint digits;

  if (isnan (value)) {
    g_strlcpy (buffer, "nan", P3D_BOX_TEXT_FLOAT_SIZE);
    return;
  }
  if (isinf (value)) {
    g_strlcpy (buffer, value > 0 ? "inf" : "-inf", P3D_BOX_TEXT_FLOAT_SIZE);
    return;
  }
  /* Nine significant digits always read back to the same float; fewer
   * often do, and read better ("0.1" rather than "0.100000001"). */
  for (digits = 1; digits < 9; digits++)
    if (format_float_digits (value, digits, buffer))
      break;
  if (digits == 9)
    format_float_digits (value, 9, buffer);

  /* "%g" turns 100 into "1e+02" when one digit is enough; print whole
   * numbers up to 17 digits long in full instead ("100"). */
  exponent = strchr (buffer, 'e');
  if (exponent != NULL && exponent[1] == '+') {
    gint power = atoi (exponent + 2);
    gchar fixed[P3D_BOX_TEXT_FLOAT_SIZE];

    if (power < 17 && format_float_digits (value, MAX (digits, power + 1),
            fixed))
      g_strlcpy (buffer, fixed, P3D_BOX_TEXT_FLOAT_SIZE);
  }
}

gchar **
p3d_box_text_parse_labels (const gchar * text, gchar ** why)
{
  gchar *stripped = g_strstrip (g_strdup (text ? text : ""));
  gchar **names;
  guint i, j;

  *why = NULL;
  if (*stripped == '\0') {
    g_free (stripped);
    return g_new0 (gchar *, 1);
  }
  names = g_strsplit (stripped, ",", -1);
  g_free (stripped);
  for (i = 0; names[i] != NULL && *why == NULL; i++) {
    const gchar *c;

    g_strstrip (names[i]);
    if (names[i][0] == '\0')
      *why = g_strdup_printf ("label %u has an empty name", i);
    /* A number is the label of that number in KITTI text. */
    if (*why == NULL && g_ascii_string_to_signed (names[i], 10, G_MININT64,
            G_MAXINT64, NULL, NULL))
      *why = g_strdup_printf ("label name \"%s\" is a number, which would "
          "read back as that label", names[i]);
    for (c = names[i]; *c != '\0' && *why == NULL; c++)
      if (g_ascii_isspace (*c))
        *why = g_strdup_printf ("label name \"%s\" contains white space, "
            "which separates KITTI fields", names[i]);
    for (j = 0; j < i && *why == NULL; j++)
      if (strcmp (names[i], names[j]) == 0)
        *why = g_strdup_printf ("label name \"%s\" is given twice", names[i]);
  }
  if (*why != NULL) {
    g_strfreev (names);
    return NULL;
  }
  return names;
}

gboolean
p3d_box_text_set_labels (const gchar * text, gchar ** labels_text,
    gchar *** labels, gchar ** why)
{
  gchar **parsed = p3d_box_text_parse_labels (text, why);

  if (parsed == NULL)
    return FALSE;
  g_free (*labels_text);
  *labels_text = g_strdup (text ? text : "");
  g_strfreev (*labels);
  *labels = parsed;
  return TRUE;
}

/* JSON writing ----------------------------------------------------------- */

/* A float member; JSON has no literal for the non-finite values, so they
 * become the strings JavaScript prints for them. */
static void
json_add_float (JsonBuilder * builder, const gchar * name, gfloat value)
{
  json_builder_set_member_name (builder, name);
  if (isnan (value))
    json_builder_add_string_value (builder, "NaN");
  else if (isinf (value))
    json_builder_add_string_value (builder, value > 0 ? "Infinity" :
        "-Infinity");
  else
    json_builder_add_double_value (builder, value);
}

static void
json_append_line (GString * out, JsonBuilder * builder)
{
  JsonNode *root = json_builder_get_root (builder);
  gchar *text = json_to_string (root, FALSE);

  g_string_append (out, text);
  g_string_append_c (out, '\n');
  g_free (text);
  json_node_unref (root);
  g_object_unref (builder);
}

void
p3d_box_text_append_json_frame (GString * out, guint64 frame, guint64 pts,
    guint count, P3dBoxKind kind)
{
  JsonBuilder *builder = json_builder_new ();

  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "frame");
  json_builder_add_int_value (builder, (gint64) frame);
  json_builder_set_member_name (builder, "pts");
  if (pts == P3D_BOX_TEXT_NO_PTS)
    json_builder_add_null_value (builder);
  else
    json_builder_add_int_value (builder, (gint64) pts);
  json_builder_set_member_name (builder, "count");
  json_builder_add_int_value (builder, count);
  json_builder_set_member_name (builder, "type");
  json_builder_add_string_value (builder, kind == P3D_BOX_KIND_2D ? "2d" :
      "3d");
  json_builder_end_object (builder);
  json_append_line (out, builder);
}

/* The record's fields, then the label; with @velocity, "vx" and "vy"
 * after "yaw". */
static void
append_json_box3d (GString * out, const P3dcBox3d * box,
    const gfloat * velocity)
{
  JsonBuilder *builder = json_builder_new ();
  const gfloat values[] = { box->x, box->y, box->z, box->dx, box->dy,
    box->dz, box->yaw, box->score
  };
  guint i;

  json_builder_begin_object (builder);
  for (i = 0; i < G_N_ELEMENTS (json_fields_3d); i++) {
    json_add_float (builder, json_fields_3d[i], values[i]);
    if (velocity != NULL && strcmp (json_fields_3d[i], "yaw") == 0) {
      json_add_float (builder, "vx", velocity[0]);
      json_add_float (builder, "vy", velocity[1]);
    }
  }
  json_builder_set_member_name (builder, "label");
  json_builder_add_int_value (builder, box->label);
  json_builder_end_object (builder);
  json_append_line (out, builder);
}

void
p3d_box_text_append_json_box3d (GString * out, const P3dcBox3d * box)
{
  append_json_box3d (out, box, NULL);
}

void
p3d_box_text_append_json_box3d_velocity (GString * out,
    const P3dcBox3d * box, const gfloat velocity[2])
{
  append_json_box3d (out, box, velocity);
}

void
p3d_box_text_append_json_box2d (GString * out, const P3dcBox2d * box)
{
  JsonBuilder *builder = json_builder_new ();
  const gfloat values[] = { box->x1, box->y1, box->x2, box->y2, box->score };
  guint i;

  json_builder_begin_object (builder);
  for (i = 0; i < G_N_ELEMENTS (json_fields_2d); i++)
    json_add_float (builder, json_fields_2d[i], values[i]);
  json_builder_set_member_name (builder, "label");
  json_builder_add_int_value (builder, box->label);
  json_builder_end_object (builder);
  json_append_line (out, builder);
}

/* KITTI writing ---------------------------------------------------------- */

static void
kitti_append_type (GString * out, gint32 label, gchar ** labels)
{
  if (labels != NULL && label >= 0 && (guint) label < g_strv_length (labels))
    g_string_append (out, labels[label]);
  else
    g_string_append_printf (out, "%d", label);
}

static void
kitti_append_floats (GString * out, const gfloat * values, guint n)
{
  gchar text[P3D_BOX_TEXT_FLOAT_SIZE];
  guint i;

  for (i = 0; i < n; i++) {
    p3d_box_text_format_float (values[i], text);
    g_string_append_c (out, ' ');
    g_string_append (out, text);
  }
}

void
p3d_box_text_append_kitti_box3d (GString * out, const P3dcBox3d * box,
    gchar ** labels)
{
  /* KITTI's dimensions are height, width, length: our dz, dy, dx. */
  const gfloat values[] = { box->dz, box->dy, box->dx, box->x, box->y, box->z,
    box->yaw, box->score
  };

  kitti_append_type (out, box->label, labels);
  /* Truncation and occlusion are unknown (-1, as in KITTI result files);
   * alpha and the image box need a camera, so they are -10 and -1. */
  g_string_append (out, " -1 -1 -10 -1 -1 -1 -1");
  kitti_append_floats (out, values, G_N_ELEMENTS (values));
  g_string_append_c (out, '\n');
}

void
p3d_box_text_append_kitti_box2d (GString * out, const P3dcBox2d * box,
    gchar ** labels)
{
  const gfloat corners[] = { box->x1, box->y1, box->x2, box->y2 };

  kitti_append_type (out, box->label, labels);
  g_string_append (out, " -1 -1 -10");
  kitti_append_floats (out, corners, G_N_ELEMENTS (corners));
  /* KITTI's values for "no 3D box" in 2D detection results. */
  g_string_append (out, " -1 -1 -1 -1000 -1000 -1000 -10");
  kitti_append_floats (out, &box->score, 1);
  g_string_append_c (out, '\n');
}

/* Reading ---------------------------------------------------------------- */

static gboolean
line_is_blank (const gchar * line)
{
  for (; *line != '\0'; line++)
    if (!g_ascii_isspace (*line))
      return FALSE;
  return TRUE;
}

static void
line_init (P3dBoxLine * out)
{
  memset (out, 0, sizeof (*out));
  out->pts = P3D_BOX_TEXT_NO_PTS;
  out->count = -1;
}

/* json-glib reads the first value of "{...} {...}" and ignores the rest, so
 * a line holding two boxes is caught here: after the first object or array
 * closes, only white space may follow. */
static gboolean
json_line_has_one_value (const gchar * line)
{
  const gchar *p = line;
  gint depth = 0;
  gchar quote = 0;

  while (g_ascii_isspace (*p))
    p++;
  if (*p != '{' && *p != '[')
    return TRUE;
  for (; *p != '\0'; p++) {
    if (quote != 0) {
      if (*p == '\\' && p[1] != '\0')
        p++;
      else if (*p == quote)
        quote = 0;
    } else if (*p == '"' || *p == '\'') {
      quote = *p;
    } else if (*p == '{' || *p == '[') {
      depth++;
    } else if ((*p == '}' || *p == ']') && --depth == 0) {
      for (p++; g_ascii_isspace (*p); p++);
      return *p == '\0';
    }
  }
  /* Unterminated: json-glib says what is wrong. */
  return TRUE;
}

/* json-glib reads an integer beyond the 64-bit range without a word and
 * wraps it (a label of 2^63 reads as a negative number, a frame of
 * -18446744073709551617 as a positive one), so every integer literal on
 * the line is checked here first: outside strings, a number without a
 * fraction or an exponent must fit in a gint64. Sets @why naming the key
 * that the number is the value of. */
static gboolean
json_integers_fit (const gchar * line, gchar ** why)
{
  const gchar *p = line, *key = NULL, *string = NULL;
  gsize key_len = 0, string_len = 0;
  gchar previous = 0;

  while (*p != '\0') {
    if (*p == '"') {
      string = ++p;
      while (*p != '\0' && *p != '"')
        p += (*p == '\\' && p[1] != '\0') ? 2 : 1;
      string_len = p - string;
      previous = '"';
      if (*p != '\0')
        p++;
      continue;
    }
    if (*p == ':' && previous == '"') {
      key = string;
      key_len = string_len;
    }
    if ((*p == '-' || g_ascii_isdigit (*p))
        && (previous == ':' || previous == ',' || previous == '['
            || previous == 0)) {
      const gchar *start = p;
      gchar *literal;
      gboolean fits;

      p += *p == '-';
      while (g_ascii_isdigit (*p))
        p++;
      if (*p == '.' || *p == 'e' || *p == 'E') {
        /* a double: json-glib reads it as strtod does */
        while (*p == '.' || *p == 'e' || *p == 'E' || *p == '+' || *p == '-'
            || g_ascii_isdigit (*p))
          p++;
        previous = '0';
        continue;
      }
      literal = g_strndup (start, p - start);
      fits = g_ascii_string_to_signed (literal, 10, G_MININT64, G_MAXINT64,
          NULL, NULL) || p == start + (*start == '-');
      if (!fits) {
        gchar *name = g_strndup (key ? key : "", key ? MIN (key_len, 40) : 0);
        gchar *quoted = g_strescape (name, NULL);

        *why = g_strdup_printf ("field \"%s\" is %.40s%s, beyond the 64-bit "
            "integer range", quoted, literal, strlen (literal) > 40 ?
            "..." : "");
        g_free (quoted);
        g_free (name);
        g_free (literal);
        return FALSE;
      }
      g_free (literal);
      previous = '0';
      continue;
    }
    if (!g_ascii_isspace (*p))
      previous = *p;
    p++;
  }
  return TRUE;
}

static gboolean
json_node_is_integer (JsonNode * node)
{
  return node != NULL && JSON_NODE_HOLDS_VALUE (node)
      && json_node_get_value_type (node) == G_TYPE_INT64;
}

static gboolean
json_get_float (JsonObject * object, const gchar * name, gfloat * value,
    gchar ** why)
{
  JsonNode *node = json_object_get_member (object, name);

  if (node == NULL) {
    *why = g_strdup_printf ("field \"%s\" is missing", name);
    return FALSE;
  }
  /* null is what JavaScript's JSON.stringify writes for NaN. */
  if (JSON_NODE_HOLDS_NULL (node)) {
    *value = NAN;
    return TRUE;
  }
  if (JSON_NODE_HOLDS_VALUE (node)) {
    GType type = json_node_get_value_type (node);

    if (type == G_TYPE_INT64) {
      *value = (gfloat) json_node_get_int (node);
      return TRUE;
    }
    if (type == G_TYPE_DOUBLE) {
      gdouble parsed = json_node_get_double (node);

      if (isfinite (parsed) && isfinite ((gfloat) parsed)) {
        *value = (gfloat) parsed;
        return TRUE;
      }
      *why = g_strdup_printf ("field \"%s\" is %g, beyond the float range",
          name, parsed);
      return FALSE;
    }
    if (type == G_TYPE_STRING) {
      const gchar *text = json_node_get_string (node);

      if (strcmp (text, "NaN") == 0) {
        *value = NAN;
        return TRUE;
      }
      if (strcmp (text, "Infinity") == 0) {
        *value = INFINITY;
        return TRUE;
      }
      if (strcmp (text, "-Infinity") == 0) {
        *value = -INFINITY;
        return TRUE;
      }
    }
  }
  *why = g_strdup_printf ("field \"%s\" is not a number (nor \"NaN\", "
      "\"Infinity\", \"-Infinity\" or null)", name);
  return FALSE;
}

static gboolean
json_get_label (JsonObject * object, gint32 * label, gchar ** why)
{
  JsonNode *node = json_object_get_member (object, "label");
  gint64 value;

  if (node == NULL) {
    *why = g_strdup ("field \"label\" is missing");
    return FALSE;
  }
  if (!json_node_is_integer (node)) {
    *why = g_strdup ("field \"label\" is not an integer");
    return FALSE;
  }
  value = json_node_get_int (node);
  if (value < G_MININT32 || value > G_MAXINT32) {
    *why = g_strdup_printf ("field \"label\" is %" G_GINT64_FORMAT ", beyond "
        "the int32 range", value);
    return FALSE;
  }
  *label = (gint32) value;
  return TRUE;
}

static P3dBoxLineType
json_parse_box (JsonObject * object, P3dBoxKind kind, P3dBoxLine * out,
    gchar ** why)
{
  gfloat values[8];
  gint32 label;
  guint i;

  if (kind == P3D_BOX_KIND_UNKNOWN) {
    if (json_object_has_member (object, "x1"))
      kind = P3D_BOX_KIND_2D;
    else if (json_object_has_member (object, "x"))
      kind = P3D_BOX_KIND_3D;
    else {
      *why = g_strdup ("neither a frame line (\"frame\") nor a box (\"x\" "
          "for a 3D box, \"x1\" for a 2D one)");
      return P3D_BOX_LINE_ERROR;
    }
  }
  if (kind == P3D_BOX_KIND_3D) {
    for (i = 0; i < G_N_ELEMENTS (json_fields_3d); i++)
      if (!json_get_float (object, json_fields_3d[i], &values[i], why))
        return P3D_BOX_LINE_ERROR;
  } else {
    for (i = 0; i < G_N_ELEMENTS (json_fields_2d); i++)
      if (!json_get_float (object, json_fields_2d[i], &values[i], why))
        return P3D_BOX_LINE_ERROR;
  }
  if (!json_get_label (object, &label, why))
    return P3D_BOX_LINE_ERROR;
  if (kind == P3D_BOX_KIND_3D && (json_object_has_member (object, "vx")
          || json_object_has_member (object, "vy"))) {
    if (!json_get_float (object, "vx", &out->velocity[0], why)
        || !json_get_float (object, "vy", &out->velocity[1], why))
      return P3D_BOX_LINE_ERROR;
    out->has_velocity = TRUE;
  }

  out->kind = kind;
  if (kind == P3D_BOX_KIND_3D) {
    P3dcBox3d box = { values[0], values[1], values[2], values[3], values[4],
      values[5], values[6], values[7], label
    };
    out->box3d = box;
  } else {
    P3dcBox2d box = { values[0], values[1], values[2], values[3], values[4],
      label
    };
    out->box2d = box;
  }
  return P3D_BOX_LINE_BOX;
}

static P3dBoxLineType
json_parse_frame (JsonObject * object, P3dBoxKind kind, P3dBoxLine * out,
    gchar ** why)
{
  JsonNode *node = json_object_get_member (object, "frame");

  if (!json_node_is_integer (node) || json_node_get_int (node) < 0) {
    *why = g_strdup ("field \"frame\" is not a non-negative integer");
    return P3D_BOX_LINE_ERROR;
  }
  out->frame = (guint64) json_node_get_int (node);

  node = json_object_get_member (object, "pts");
  if (node != NULL && !JSON_NODE_HOLDS_NULL (node)) {
    if (!json_node_is_integer (node) || json_node_get_int (node) < 0) {
      *why = g_strdup ("field \"pts\" is neither null nor a non-negative "
          "integer (nanoseconds)");
      return P3D_BOX_LINE_ERROR;
    }
    out->pts = (guint64) json_node_get_int (node);
  }

  node = json_object_get_member (object, "count");
  if (node != NULL) {
    if (!json_node_is_integer (node) || json_node_get_int (node) < 0
        || json_node_get_int (node) > G_MAXUINT32) {
      *why = g_strdup ("field \"count\" is not an integer in [0, 2^32)");
      return P3D_BOX_LINE_ERROR;
    }
    out->count = json_node_get_int (node);
  }

  node = json_object_get_member (object, "type");
  if (node != NULL) {
    const gchar *type = JSON_NODE_HOLDS_VALUE (node)
        && json_node_get_value_type (node) == G_TYPE_STRING ?
        json_node_get_string (node) : "";

    if (strcmp (type, "3d") == 0)
      out->kind = P3D_BOX_KIND_3D;
    else if (strcmp (type, "2d") == 0)
      out->kind = P3D_BOX_KIND_2D;
    else {
      *why = g_strdup ("field \"type\" is neither \"3d\" nor \"2d\"");
      return P3D_BOX_LINE_ERROR;
    }
    if (kind != P3D_BOX_KIND_UNKNOWN && out->kind != kind) {
      *why = g_strdup_printf ("the frame line says %s boxes, the stream "
          "holds %s boxes", type, kind == P3D_BOX_KIND_3D ? "3d" : "2d");
      return P3D_BOX_LINE_ERROR;
    }
  }
  return P3D_BOX_LINE_FRAME;
}

P3dBoxLineType
p3d_box_text_parse_json (const gchar * line, P3dBoxKind kind,
    P3dBoxLine * out, gchar ** why)
{
  JsonParser *parser;
  JsonNode *root;
  GError *error = NULL;
  P3dBoxLineType type;

  *why = NULL;
  line_init (out);
  if (line_is_blank (line))
    return P3D_BOX_LINE_BLANK;
  if (!json_line_has_one_value (line)) {
    *why = g_strdup ("more than one JSON value on the line");
    return P3D_BOX_LINE_ERROR;
  }
  if (!json_integers_fit (line, why))
    return P3D_BOX_LINE_ERROR;
  parser = json_parser_new ();
  if (!p3d_json_parser_load (parser, line, -1, &error)) {
    *why = g_strdup_printf ("not valid JSON (%s)", error->message);
    g_clear_error (&error);
    g_object_unref (parser);
    return P3D_BOX_LINE_ERROR;
  }
  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root)) {
    *why = g_strdup ("not a JSON object");
    type = P3D_BOX_LINE_ERROR;
  } else if (json_object_has_member (json_node_get_object (root), "frame")) {
    type = json_parse_frame (json_node_get_object (root), kind, out, why);
  } else {
    type = json_parse_box (json_node_get_object (root), kind, out, why);
  }
  g_object_unref (parser);
  return type;
}

/* A label name of @labels, or a decimal integer; FALSE for anything else. */
static gboolean
kitti_parse_type (const gchar * type, gchar ** labels, gint32 * label)
{
  gint64 value;
  guint i;

  for (i = 0; labels != NULL && labels[i] != NULL; i++) {
    if (strcmp (type, labels[i]) == 0) {
      *label = (gint32) i;
      return TRUE;
    }
  }
  if (!g_ascii_string_to_signed (type, 10, G_MININT32, G_MAXINT32, &value,
          NULL))
    return FALSE;
  *label = (gint32) value;
  return TRUE;
}

P3dBoxLineType
p3d_box_text_parse_kitti (const gchar * line, P3dBoxKind kind,
    gchar ** labels, P3dBoxLine * out, gchar ** why)
{
  gchar **tokens = g_strsplit_set (line, " \t\r\n\v\f", -1);
  const gchar *fields[KITTI_FIELDS_WITH_SCORE];
  gfloat values[KITTI_FIELDS_WITH_SCORE];
  guint i, n_fields = 0, n_extra = 0;
  gint32 label = 0;
  P3dBoxLineType type = P3D_BOX_LINE_BOX;

  *why = NULL;
  line_init (out);
  for (i = 0; tokens[i] != NULL; i++) {
    if (tokens[i][0] == '\0')
      continue;
    if (n_fields < KITTI_FIELDS_WITH_SCORE)
      fields[n_fields++] = tokens[i];
    else
      n_extra++;
  }
  if (n_fields == 0) {
    type = P3D_BOX_LINE_BLANK;
    goto done;
  }
  if (n_extra > 0 || n_fields < KITTI_FIELDS_WITHOUT_SCORE) {
    *why = g_strdup_printf ("%u field%s, a KITTI label line has 15 (16 "
        "with the score)", n_fields + n_extra,
        n_fields + n_extra == 1 ? "" : "s");
    type = P3D_BOX_LINE_ERROR;
    goto done;
  }
  for (i = 1; i < n_fields; i++) {
    if (!p3d_box_text_parse_float (fields[i], &values[i])) {
      gchar *value = quote_value (fields[i]);

      /* as the JSON path says it: a finite number that no float holds */
      if (text_overflows_float (fields[i]))
        *why = g_strdup_printf ("field %u (%s) is %s, beyond the float "
            "range", i + 1, kitti_field_names[i], value);
      else
        *why = g_strdup_printf ("field %u (%s) is not a number: \"%s\"",
            i + 1, kitti_field_names[i], value);
      g_free (value);
      type = P3D_BOX_LINE_ERROR;
      goto done;
    }
  }
  /* Ground-truth label files have no score: their boxes are certain. */
  if (n_fields == KITTI_FIELDS_WITHOUT_SCORE)
    values[KITTI_FIELDS_WITHOUT_SCORE] = 1.0f;
  if (!kitti_parse_type (fields[0], labels, &label)) {
    /* the type name as written: boxparse quotes it in its warning */
    *why = g_strdup (fields[0]);
    type = P3D_BOX_LINE_UNKNOWN_LABEL;
    goto done;
  }

  if (kind == P3D_BOX_KIND_2D) {
    P3dcBox2d box = { values[4], values[5], values[6], values[7], values[15],
      label
    };
    out->kind = P3D_BOX_KIND_2D;
    out->box2d = box;
  } else {
    /* h w l are our dz dy dx; location and rotation_y are taken as they
     * are, in the LiDAR frame. */
    P3dcBox3d box = { values[11], values[12], values[13], values[10],
      values[9], values[8], values[14], values[15], label
    };
    out->kind = P3D_BOX_KIND_3D;
    out->box3d = box;
  }
done:
  g_strfreev (tokens);
  return type;
}
