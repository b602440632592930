/* Helpers of the pcdparse tests; see p3dtest-pcd.h. */
#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>

#include "p3dtest.h"
#include "p3dtest-pcd.h"

const gchar *const pcdtest_storage_names[] = { "ascii", "binary",
  "binary_compressed"
};

/* A random value of the field's type, exact in a double and in the file. */
static gdouble
random_value (P3dTestRng * rng, const PcdTestField * field)
{
  gdouble unit = p3d_test_rng_u32 (rng) / 4294967296.0;
  guint bits = MIN (field->size * 8, 52);

  if (field->type == 'F' && field->size == 4)
    return p3d_test_rng_uniform (rng, -100.0f, 100.0f);
  if (field->type == 'F')
    return (unit - 0.5) * 200.0 + p3d_test_rng_u32 (rng) * 1e-14;
  if (field->type == 'U')
    return floor (unit * ldexp (1.0, bits));
  return floor ((unit - 0.5) * ldexp (1.0, bits));
}

PcdTestCloud *
pcdtest_cloud_new (const PcdTestField * fields, guint n_fields, guint n_points,
    guint64 seed)
{
  PcdTestCloud *cloud = g_new0 (PcdTestCloud, 1);
  P3dTestRng rng;
  guint p, f, e, v = 0;

  p3d_test_rng_init (&rng, seed);
  cloud->fields = fields;
  cloud->n_fields = n_fields;
  cloud->n_points = n_points;
  cloud->width = n_points;
  cloud->height = 1;
  for (f = 0; f < n_fields; f++)
    cloud->values_per_point += fields[f].count;
  cloud->values = g_new (gdouble, (gsize) n_points * cloud->values_per_point);
  for (p = 0; p < n_points; p++)
    for (f = 0; f < n_fields; f++)
      for (e = 0; e < fields[f].count; e++)
        cloud->values[v++] = random_value (&rng, &fields[f]);
  return cloud;
}

void
pcdtest_cloud_free (PcdTestCloud * cloud)
{
  g_free (cloud->values);
  g_free (cloud);
}

/* Element 0 of field @f of point @p. */
gdouble *
pcdtest_cloud_value (PcdTestCloud * cloud, guint p, guint f)
{
  guint i, offset = 0;

  for (i = 0; i < f; i++)
    offset += cloud->fields[i].count;
  return &cloud->values[(gsize) p * cloud->values_per_point + offset];
}

static void
append_binary (GByteArray * out, const PcdTestField * field, gdouble value)
{
  guint8 bytes[8];
  guint i;
  guint64 bits;

  if (field->type == 'F' && field->size == 4) {
    gfloat f = (gfloat) value;
    guint32 b;

    memcpy (&b, &f, 4);
    bits = b;
  } else if (field->type == 'F') {
    memcpy (&bits, &value, 8);
  } else if (field->type == 'I') {
    bits = (guint64) (gint64) value;
  } else {
    bits = (guint64) value;
  }
  /* little-endian, whatever the host */
  for (i = 0; i < field->size; i++)
    bytes[i] = (guint8) (bits >> (8 * i));
  g_byte_array_append (out, bytes, field->size);
}

static void
append_ascii (GString * out, const PcdTestField * field, gdouble value)
{
  gchar text[G_ASCII_DTOSTR_BUF_SIZE];

  if (isnan (value))
    g_string_append (out, "nan");
  else if (isinf (value))
    g_string_append (out, value > 0 ? "inf" : "-inf");
  else if (field->type == 'F' && field->size == 4)
    g_string_append (out, g_ascii_formatd (text, sizeof (text), "%.9g",
            (gfloat) value));
  else if (field->type == 'F')
    g_string_append (out, g_ascii_dtostr (text, sizeof (text), value));
  else if (field->type == 'I')
    g_string_append_printf (out, "%" G_GINT64_FORMAT, (gint64) value);
  else
    g_string_append_printf (out, "%" G_GUINT64_FORMAT, (guint64) value);
}

/* LZF data of literal runs only (a control byte n < 32, then n + 1 bytes):
 * valid LZF that liblzf decodes; the reader's own tests cover matches. */
static GByteArray *
lzf_literals (const guint8 * data, gsize size)
{
  GByteArray *out = g_byte_array_new ();
  gsize pos;

  for (pos = 0; pos < size; pos += 32) {
    guint8 run = (guint8) (MIN (size - pos, 32) - 1);

    g_byte_array_append (out, &run, 1);
    g_byte_array_append (out, data + pos, run + 1);
  }
  return out;
}

GByteArray *
pcdtest_write (PcdTestCloud * cloud, const PcdTestOptions * o)
{
  const gchar *nl = o->crlf ? "\r\n" : "\n";
  gboolean old = g_str_equal (o->version, ".5");
  GString *text = g_string_new (NULL);
  GByteArray *out;
  guint f, e, p;

  g_string_append_printf (text,
      "# .PCD v%s - Point PcdTestCloud Data file format%s" "VERSION %s%s%s",
      o->version, nl, o->version, nl, old ? "COLUMNS" : "FIELDS");
  for (f = 0; f < cloud->n_fields; f++)
    g_string_append_printf (text, " %s", cloud->fields[f].name);
  g_string_append_printf (text, "%sSIZE", nl);
  for (f = 0; f < cloud->n_fields; f++)
    g_string_append_printf (text, " %u", cloud->fields[f].size);
  g_string_append_printf (text, "%sTYPE", nl);
  for (f = 0; f < cloud->n_fields; f++)
    g_string_append_printf (text, " %c", cloud->fields[f].type);
  g_string_append_printf (text, "%sCOUNT", nl);
  for (f = 0; f < cloud->n_fields; f++)
    g_string_append_printf (text, " %u", cloud->fields[f].count);
  g_string_append_printf (text, "%sWIDTH %u%sHEIGHT %u%s", nl, cloud->width,
      nl, cloud->height, nl);
  if (!old)
    g_string_append_printf (text, "VIEWPOINT 0 0 0 1 0 0 0%s", nl);
  g_string_append_printf (text, "POINTS %u%sDATA %s%s", cloud->n_points, nl,
      pcdtest_storage_names[o->storage], nl);

  if (o->storage == PCDTEST_ASCII) {
    for (p = 0; p < cloud->n_points; p++) {
      const gdouble *v = pcdtest_cloud_value (cloud, p, 0);

      for (f = 0; f < cloud->n_fields; f++)
        for (e = 0; e < cloud->fields[f].count; e++) {
          if (v != pcdtest_cloud_value (cloud, p, 0))
            g_string_append_c (text, ' ');
          append_ascii (text, &cloud->fields[f], *v++);
        }
      if (p + 1 < cloud->n_points || !o->no_final_newline)
        g_string_append (text, nl);
    }
    return g_bytes_unref_to_array (g_string_free_to_bytes (text));
  }

  out = g_bytes_unref_to_array (g_string_free_to_bytes (text));
  if (o->storage == PCDTEST_BINARY) {
    for (p = 0; p < cloud->n_points; p++) {
      const gdouble *v = pcdtest_cloud_value (cloud, p, 0);

      for (f = 0; f < cloud->n_fields; f++)
        for (e = 0; e < cloud->fields[f].count; e++)
          append_binary (out, &cloud->fields[f], *v++);
    }
  } else {
    /* PCL's layout: field after field, each with every point's elements */
    GByteArray *plain = g_byte_array_new (), *packed;
    guint32 sizes[2];

    for (f = 0; f < cloud->n_fields; f++)
      for (p = 0; p < cloud->n_points; p++)
        for (e = 0; e < cloud->fields[f].count; e++)
          append_binary (plain, &cloud->fields[f],
              pcdtest_cloud_value (cloud, p, f)[e]);
    packed = lzf_literals (plain->data, plain->len);
    sizes[0] = GUINT32_TO_LE (packed->len);
    sizes[1] = GUINT32_TO_LE (plain->len);
    g_byte_array_append (out, (const guint8 *) sizes, 8);
    g_byte_array_append (out, packed->data, packed->len);
    g_byte_array_unref (packed);
    g_byte_array_unref (plain);
  }
  return out;
}

/* What the element should output */

static gint
find_field (const PcdTestCloud * cloud, gchar letter)
{
  static const gchar *const intensity[] = { "intensity", "i", "reflectance",
    "remission", NULL
  };
  static const gchar *const time[] = { "t", "time", "timestamp", NULL };
  static const gchar *const ring[] = { "ring", "r", NULL };
  gchar single[2] = { letter, '\0' };
  const gchar *const xyz[] = { single, NULL };
  const gchar *const *names = letter == 'i' ? intensity : letter == 't' ?
      time : letter == 'r' ? ring : xyz;
  guint n, f;

  for (n = 0; names[n] != NULL; n++)
    for (f = 0; f < cloud->n_fields; f++)
      if (g_ascii_strcasecmp (cloud->fields[f].name, names[n]) == 0)
        return (gint) f;
  return -1;
}

/* The points of @cloud in @format, without the non-finite ones when
 * @drop: each channel is element 0 of its field rounded to float32, or 0
 * when the file has no such field. */
gfloat *
pcdtest_expected (PcdTestCloud * cloud, const gchar * format, gboolean drop,
    guint * n_out)
{
  guint channels = strlen (format), p, c, n = 0;
  gfloat *points = g_new0 (gfloat, (gsize) cloud->n_points * channels + 1);

  for (p = 0; p < cloud->n_points; p++) {
    gfloat *point = points + (gsize) n * channels;
    gboolean finite = TRUE;

    for (c = 0; c < channels; c++) {
      gint f = find_field (cloud, format[c]);

      point[c] = f >= 0 ? (gfloat) * pcdtest_cloud_value (cloud, p, f) : 0.0f;
      if (c < 3 && !isfinite (point[c]))
        finite = FALSE;
    }
    if (finite || !drop)
      n++;
  }
  *n_out = n;
  return points;
}

/* Asserts @buffer holds exactly @n_points points of @channels floats from
 * @expected (NaN matching NaN), naming the first float that differs. */
void
pcdtest_assert_points (GstBuffer * buffer, const gfloat * expected,
    guint n_points, guint channels, const gchar * what)
{
  GstMapInfo info;
  const gfloat *got;
  gsize i;

  fail_unless (buffer != NULL, "%s: no buffer", what);
  if (n_points == 0) {
    fail_unless_equals_uint64 (gst_buffer_get_size (buffer), 0);
    return;
  }
  fail_unless_equals_int (gst_buffer_n_memory (buffer), 1);
  fail_unless (gst_buffer_map (buffer, &info, GST_MAP_READ));
  fail_unless_equals_uint64 (info.size, (guint64) n_points * channels * 4);
  got = (const gfloat *) info.data;
  for (i = 0; i < (gsize) n_points * channels; i++)
    if (got[i] != expected[i] && !(isnan (got[i]) && isnan (expected[i])))
      fail ("%s: float %" G_GSIZE_FORMAT " (point %" G_GSIZE_FORMAT
          ", channel %" G_GSIZE_FORMAT ") is %.9g, expected %.9g", what, i,
          i / channels, i % channels, got[i], expected[i]);
  gst_buffer_unmap (buffer, &info);
}

void
pcdtest_assert_cloud (GstBuffer * buffer, PcdTestCloud * cloud,
    const gchar * format, gboolean drop, const gchar * what)
{
  guint n;
  gfloat *expected = pcdtest_expected (cloud, format, drop, &n);

  pcdtest_assert_points (buffer, expected, n, strlen (format), what);
  g_free (expected);
}
