/* The PCD reader core on files written here, in memory: every storage type
 * and version, every field type, field orders, COUNT > 1, padding, missing
 * fields, organized clouds with NaN, CRLF and comments; the decoded floats
 * against the values written. Then bad input, each with its error code and
 * a piece of its message; truncation at every byte; the scanner fed in
 * chunks and on files back to back; and inputs for the fuzz target's loop. */
#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>

#include "pcdparse-reader.h"
#include "p3dtest.h"

/* ------------------------------------------------------------------------ */
/* A small PCD writer */

typedef struct
{
  const gchar *name;
  gchar type;
  guint size;
  guint count;
} TestField;

/* One element of a field, read as its type says. */
typedef union
{
  gint64 i;
  guint64 u;
  gdouble f;
} TestValue;

typedef struct
{
  guint n_fields;
  const TestField *fields;
  gsize points;
  guint values_per_point;
  /* points x values_per_point, fields and elements in order */
  TestValue *values;
} TestCloud;

typedef struct
{
  /* NULL: no VERSION line */
  const gchar *version;
  P3dPcdData data;
  gboolean crlf;
  gboolean comments;
  gboolean columns;
  gboolean omit_size_type;
  gboolean omit_count;
  gboolean omit_viewpoint;
  gboolean omit_points;
  gboolean omit_dims;
  gboolean no_final_newline;
  /* 0: points x 1 */
  guint64 width;
} WriteOptions;

static const WriteOptions v07_binary = { "0.7", P3D_PCD_DATA_BINARY };

static guint64
rng_u64 (P3dTestRng * rng)
{
  guint64 high = p3d_test_rng_u32 (rng);

  return (high << 32) | p3d_test_rng_u32 (rng);
}

/* Random values over the type's whole range, with its extremes now and
 * then; floats stay finite and moderate so that x, y and z are finite. */
static TestValue
random_value (P3dTestRng * rng, const TestField * field)
{
  guint64 bits = rng_u64 (rng);
  guint64 mask = field->size == 8 ? G_MAXUINT64 :
      (G_GUINT64_CONSTANT (1) << (8 * field->size)) - 1;
  guint pick = p3d_test_rng_below (rng, 8);
  TestValue v;

  switch (field->type) {
    case 'U':
      v.u = pick == 0 ? mask : pick == 1 ? 0 : bits & mask;
      break;
    case 'I':
      bits &= mask;
      if (pick == 0)
        bits = mask >> 1;       /* the largest */
      else if (pick == 1)
        bits = (mask >> 1) + 1; /* the smallest */
      /* sign-extend from the field's width */
      if (field->size < 8 && (bits >> (8 * field->size - 1)) & 1)
        bits |= ~mask;
      v.u = bits;
      break;
    default:
      if (field->size == 4)
        v.f = p3d_test_rng_uniform (rng, -500.0f, 500.0f);
      else
        v.f = ((gdouble) (bits >> 11) / 9007199254740992.0 - 0.5) * 2e4;
      break;
  }
  return v;
}

static guint
values_per_point (const TestField * fields, guint n_fields)
{
  guint i, n = 0;

  for (i = 0; i < n_fields; i++)
    n += fields[i].count;
  return n;
}

static TestCloud *
cloud_new (const TestField * fields, guint n_fields, gsize points, guint64 seed)
{
  TestCloud *cloud = g_new0 (TestCloud, 1);
  P3dTestRng rng;
  gsize p;
  guint f, e, k;

  p3d_test_rng_init (&rng, seed);
  cloud->n_fields = n_fields;
  cloud->fields = fields;
  cloud->points = points;
  cloud->values_per_point = values_per_point (fields, n_fields);
  cloud->values = g_new0 (TestValue, points * cloud->values_per_point + 1);
  for (p = 0; p < points; p++)
    for (f = 0, k = 0; f < n_fields; f++)
      for (e = 0; e < fields[f].count; e++, k++)
        cloud->values[p * cloud->values_per_point + k] =
            random_value (&rng, &fields[f]);
  return cloud;
}

static void
cloud_free (TestCloud * cloud)
{
  g_free (cloud->values);
  g_free (cloud);
}

/* Index of element 0 of field @f in a point's values. */
static guint
field_value_index (const TestCloud * cloud, guint f)
{
  return values_per_point (cloud->fields, f);
}

static TestValue *
cloud_value (const TestCloud * cloud, gsize point, guint f)
{
  return &cloud->values[point * cloud->values_per_point +
      field_value_index (cloud, f)];
}

static gfloat
value_to_float (const TestField * field, TestValue v)
{
  if (field->type == 'I')
    return (gfloat) v.i;
  if (field->type == 'U')
    return (gfloat) v.u;
  return (gfloat) v.f;
}

static void
put_value (guint8 * dst, const TestField * field, TestValue v)
{
  guint64 bits = v.u;
  guint b;

  if (field->type == 'F' && field->size == 4) {
    gfloat f = (gfloat) v.f;
    guint32 b32;

    memcpy (&b32, &f, 4);
    bits = b32;
  } else if (field->type == 'F') {
    memcpy (&bits, &v.f, 8);
  }
  for (b = 0; b < field->size; b++)
    dst[b] = (guint8) (bits >> (8 * b));
}

static void
append_ascii_value (GString * out, const TestField * field, TestValue v)
{
  gchar buf[G_ASCII_DTOSTR_BUF_SIZE];

  if (field->type == 'I')
    g_string_append_printf (out, "%" G_GINT64_FORMAT, v.i);
  else if (field->type == 'U')
    g_string_append_printf (out, "%" G_GUINT64_FORMAT, v.u);
  else if (isnan (v.f))
    g_string_append (out, "nan");
  else if (isinf (v.f))
    g_string_append (out, v.f < 0 ? "-inf" : "inf");
  else if (field->size == 4)
    g_string_append (out, g_ascii_formatd (buf, sizeof (buf), "%.9g",
            (gfloat) v.f));
  else
    g_string_append (out, g_ascii_formatd (buf, sizeof (buf), "%.17g", v.f));
}

static void
append_line (GString * out, const WriteOptions * opt, const gchar * format, ...)
{
  va_list args;

  va_start (args, format);
  g_string_append_vprintf (out, format, args);
  va_end (args);
  g_string_append (out, opt->crlf ? "\r\n" : "\n");
  if (opt->comments)
    g_string_append_printf (out, "# a comment%s\n", opt->crlf ? "\r" : "");
}

static void
write_header (GString * out, const TestCloud * cloud, const WriteOptions * opt)
{
  static const gchar *const data_names[] =
      { "ascii", "binary", "binary_compressed" };
  guint64 width = opt->width ? opt->width : cloud->points;
  guint64 height = opt->width ? cloud->points / opt->width : 1;
  guint f;

  if (opt->comments)
    g_string_append (out, "\n# .PCD v0.7 - Point Cloud Data file format\n\n");
  if (opt->version)
    append_line (out, opt, "VERSION %s", opt->version);
  g_string_append (out, opt->columns ? "COLUMNS" : "FIELDS");
  for (f = 0; f < cloud->n_fields; f++)
    g_string_append_printf (out, " %s", cloud->fields[f].name);
  append_line (out, opt, "%s", "");
  if (!opt->omit_size_type) {
    g_string_append (out, "SIZE");
    for (f = 0; f < cloud->n_fields; f++)
      g_string_append_printf (out, " %u", cloud->fields[f].size);
    append_line (out, opt, "%s", "");
    g_string_append (out, "TYPE");
    for (f = 0; f < cloud->n_fields; f++)
      g_string_append_printf (out, " %c", cloud->fields[f].type);
    append_line (out, opt, "%s", "");
  }
  if (!opt->omit_count) {
    g_string_append (out, "COUNT");
    for (f = 0; f < cloud->n_fields; f++)
      g_string_append_printf (out, " %u", cloud->fields[f].count);
    append_line (out, opt, "%s", "");
  }
  if (!opt->omit_dims) {
    append_line (out, opt, "WIDTH %" G_GUINT64_FORMAT, width);
    append_line (out, opt, "HEIGHT %" G_GUINT64_FORMAT, height);
  }
  if (!opt->omit_viewpoint)
    append_line (out, opt, "VIEWPOINT 0 0 0 1 0 0 0");
  if (!opt->omit_points)
    append_line (out, opt, "POINTS %" G_GSIZE_FORMAT, cloud->points);
  /* nothing may follow the DATA line but the data */
  g_string_append_printf (out, "DATA %s%s", data_names[opt->data],
      opt->crlf ? "\r\n" : "\n");
}

static gsize
point_stride (const TestCloud * cloud)
{
  gsize stride = 0;
  guint f;

  for (f = 0; f < cloud->n_fields; f++)
    stride += cloud->fields[f].size * cloud->fields[f].count;
  return stride;
}

/* An LZF encoder written from the format that liblzf decodes: a control
 * byte below 32 starts a run of that many plus one literal bytes; above, its
 * top 3 bits are a match length minus 2 (7: one more byte adds to it) and
 * its low 5 bits with the next byte an offset minus 1 back into the output.
 * Greedy, one candidate per 3-byte hash. Not lzf_compress(): that reads its
 * hash table uninitialised, which valgrind reports, and a second encoder
 * checks the reader against the format rather than against liblzf alone. */
static void
lzf_put (GByteArray * out, guint byte)
{
  guint8 b = (guint8) byte;

  g_byte_array_append (out, &b, 1);
}

static void
lzf_flush_literals (const guint8 * in, gsize from, gsize to, GByteArray * out)
{
  while (from < to) {
    guint run = MIN (to - from, 32);

    lzf_put (out, run - 1);
    g_byte_array_append (out, in + from, run);
    from += run;
  }
}

static GByteArray *
lzf_encode (const guint8 * in, gsize n)
{
  GByteArray *out = g_byte_array_new ();
  gssize last[4096];
  gsize i = 0, literals = 0;
  guint k;

  for (k = 0; k < G_N_ELEMENTS (last); k++)
    last[k] = -1;
  while (i < n) {
    gsize length = 0, offset = 0;

    if (i + 3 <= n) {
      guint hash = ((in[i] << 8) ^ (in[i + 1] << 4) ^ in[i + 2]) & 4095;
      gssize candidate = last[hash];

      last[hash] = (gssize) i;
      if (candidate >= 0 && i - candidate <= 8192
          && memcmp (in + candidate, in + i, 3) == 0) {
        length = 3;
        while (i + length < n && length < 264
            && in[candidate + length] == in[i + length])
          length++;
        offset = i - candidate;
      }
    }
    if (length == 0) {
      i++;
      continue;
    }
    lzf_flush_literals (in, literals, i, out);
    if (length - 2 < 7) {
      lzf_put (out, ((length - 2) << 5) | ((offset - 1) >> 8));
    } else {
      lzf_put (out, (7 << 5) | ((offset - 1) >> 8));
      lzf_put (out, length - 2 - 7);
    }
    lzf_put (out, (offset - 1) & 0xff);
    i += length;
    literals = i;
  }
  lzf_flush_literals (in, literals, n, out);
  return out;
}

/* PCL's binary_compressed layout: the fields one after another, each with
 * the elements of every point, LZF-compressed, after the two sizes. */
static void
write_compressed (GString * out, const TestCloud * cloud)
{
  gsize plain_size = point_stride (cloud) * cloud->points, pos = 0, p;
  guint8 *plain = g_malloc0 (plain_size + 1);
  GByteArray *packed;
  guint32 sizes[2];
  guint f, e, k;

  for (f = 0, k = 0; f < cloud->n_fields; f++) {
    const TestField *field = &cloud->fields[f];

    for (p = 0; p < cloud->points; p++) {
      for (e = 0; e < field->count; e++, pos += field->size)
        put_value (plain + pos, field,
            cloud->values[p * cloud->values_per_point + k + e]);
    }
    k += field->count;
  }
  packed = lzf_encode (plain, plain_size);
  sizes[0] = GUINT32_TO_LE (packed->len);
  sizes[1] = GUINT32_TO_LE ((guint32) plain_size);
  g_string_append_len (out, (const gchar *) sizes, 8);
  g_string_append_len (out, (const gchar *) packed->data, packed->len);
  g_free (plain);
  g_byte_array_unref (packed);
}

static GString *
write_pcd (const TestCloud * cloud, const WriteOptions * opt)
{
  GString *out = g_string_new (NULL);
  gsize p;
  guint f, e, k;

  write_header (out, cloud, opt);
  if (opt->data == P3D_PCD_DATA_BINARY) {
    gsize stride = point_stride (cloud), start = out->len, pos = 0;

    g_string_set_size (out, start + stride * cloud->points);
    for (p = 0; p < cloud->points; p++)
      for (f = 0, k = 0; f < cloud->n_fields; f++)
        for (e = 0; e < cloud->fields[f].count; e++, k++) {
          put_value ((guint8 *) out->str + start + pos, &cloud->fields[f],
              cloud->values[p * cloud->values_per_point + k]);
          pos += cloud->fields[f].size;
        }
  } else if (opt->data == P3D_PCD_DATA_BINARY_COMPRESSED) {
    write_compressed (out, cloud);
  } else {
    for (p = 0; p < cloud->points; p++) {
      for (f = 0, k = 0; f < cloud->n_fields; f++)
        for (e = 0; e < cloud->fields[f].count; e++, k++) {
          if (k > 0)
            g_string_append_c (out, ' ');
          append_ascii_value (out, &cloud->fields[f],
              cloud->values[p * cloud->values_per_point + k]);
        }
      if (p + 1 < cloud->points || !opt->no_final_newline)
        g_string_append (out, opt->crlf ? "\r\n" : "\n");
    }
  }
  return out;
}

/* ------------------------------------------------------------------------ */
/* What the decoder must give */

static gint
find_test_field (const TestCloud * cloud, const gchar * name)
{
  guint f;

  for (f = 0; f < cloud->n_fields; f++)
    if (strcmp (cloud->fields[f].name, name) == 0)
      return f;
  return -1;
}

/* @sources: the field name that feeds each channel of @format, NULL for a
 * channel that must be 0. */
static gfloat *
expected_points (const TestCloud * cloud, const gchar * format,
    const gchar * const *sources, gboolean drop, gsize * n_points,
    gsize * n_dropped)
{
  guint n_channels = strlen (format), c;
  gfloat *out = g_new0 (gfloat, cloud->points * n_channels + 1);
  gsize p, kept = 0;

  for (p = 0; p < cloud->points; p++) {
    gfloat *row = out + kept * n_channels;
    gboolean finite = TRUE;

    for (c = 0; c < n_channels; c++) {
      gint f = sources[c] ? find_test_field (cloud, sources[c]) : -1;

      fail_unless (sources[c] == NULL || f >= 0, "no test field %s",
          sources[c]);
      row[c] = f < 0 ? 0.0f : value_to_float (&cloud->fields[f],
          *cloud_value (cloud, p, f));
      if (strchr ("xyz", format[c]) && !isfinite (row[c]))
        finite = FALSE;
    }
    if (finite || !drop)
      kept++;
  }
  *n_points = kept;
  *n_dropped = cloud->points - kept;
  return out;
}

static gboolean
same_float (gfloat a, gfloat b)
{
  return (isnan (a) && isnan (b)) || memcmp (&a, &b, sizeof (a)) == 0;
}

static void
assert_points_equal (const gfloat * expected, gsize n_expected,
    const gfloat * actual, gsize n_actual, guint n_channels, const gchar * what)
{
  gsize k;

  fail_unless (n_actual == n_expected, "%s: %" G_GSIZE_FORMAT " points, "
      "expected %" G_GSIZE_FORMAT, what, n_actual, n_expected);
  for (k = 0; k < n_expected * n_channels; k++)
    fail_unless (same_float (expected[k], actual[k]), "%s: first difference "
        "at value %" G_GSIZE_FORMAT " (point %" G_GSIZE_FORMAT ", channel %"
        G_GSIZE_FORMAT "): expected %.9g, decoded %.9g", what, k,
        k / n_channels, k % n_channels, expected[k], actual[k]);
}

static const gchar *const data_names[] =
    { "ascii", "binary", "binary_compressed" };

/* Scans @file as a whole stream and decodes it with @format through both
 * entry points; compares with what @cloud says. */
static void
check_file (const GString * file, const TestCloud * cloud,
    const WriteOptions * opt, const gchar * format,
    const gchar * const *sources, gboolean drop)
{
  P3dPcdHeader header;
  GError *error = NULL;
  gsize file_size = 0, n_points = 0, n_dropped = 0, n_expected,
      dropped_expected;
  gfloat *points = NULL, *expected, *into;
  guint n_channels = strlen (format);
  gchar *what = g_strdup_printf ("%s v%s%s%s format %s%s",
      data_names[opt->data], opt->version ? opt->version : "-",
      opt->crlf ? " crlf" : "", opt->comments ? " comments" : "", format,
      drop ? " drop" : "");

  /* a file that ends cleanly is complete without waiting for EOS */
  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) file->str,
          file->len, opt->no_final_newline, &header, &file_size, &error),
      P3D_PCD_COMPLETE);
  g_assert_no_error (error);
  fail_unless_equals_uint64 (file_size, file->len);
  fail_unless_equals_uint64 (header.points, cloud->points);
  fail_unless_equals_int (header.n_fields, cloud->n_fields);
  fail_unless_equals_int (header.data, opt->data);

  expected = expected_points (cloud, format, sources, drop, &n_expected,
      &dropped_expected);
  fail_unless (p3d_pcd_decode (&header, (const guint8 *) file->str,
          file->len, format, drop, &points, &n_points, &n_dropped, &error),
      "%s: %s", what, error ? error->message : "");
  assert_points_equal (expected, n_expected, points, n_points, n_channels,
      what);
  fail_unless_equals_uint64 (n_dropped, dropped_expected);
  fail_unless ((points == NULL) == (n_points == 0));

  /* decode_into, with bytes of a next file after this one */
  {
    GString *padded = g_string_new_len (file->str, file->len);

    g_string_append (padded, "VERSION 0.7\n");
    into = g_new (gfloat, cloud->points * n_channels + 1);
    fail_unless (p3d_pcd_decode_into (&header, (const guint8 *) padded->str,
            padded->len, format, drop, into, cloud->points * n_channels,
            &n_points, &n_dropped, NULL, &error), "%s: %s", what,
        error ? error->message : "");
    assert_points_equal (expected, n_expected, into, n_points, n_channels,
        what);
    g_free (into);
    g_string_free (padded, TRUE);
  }

  p3d_pcd_header_clear (&header);
  g_free (points);
  g_free (expected);
  g_free (what);
}

/* ------------------------------------------------------------------------ */
/* Good files */

static const TestField xyzi_f4[] = {
  {"x", 'F', 4, 1}, {"y", 'F', 4, 1}, {"z", 'F', 4, 1},
  {"intensity", 'F', 4, 1},
};

static const gchar *const src_xyz[] = { "x", "y", "z" };
static const gchar *const src_xyzi[] = { "x", "y", "z", "intensity" };

GST_START_TEST (test_storage_types_and_versions)
{
  static const gchar *const versions[] = { "0.7", ".7", ".5", NULL };
  static const gchar *const src_xyzit[] = { "x", "y", "z", "intensity", NULL };
  TestCloud *cloud = cloud_new (xyzi_f4, 4, 57, 1);
  guint d, v, crlf;

  for (d = 0; d < 3; d++)
    for (v = 0; v < G_N_ELEMENTS (versions); v++)
      for (crlf = 0; crlf < 2; crlf++) {
        WriteOptions opt = { versions[v], d, crlf };
        GString *file;

        /* v0.5 files: COLUMNS, no VIEWPOINT, often no POINTS or COUNT */
        if (versions[v] && strcmp (versions[v], ".5") == 0) {
          opt.columns = opt.omit_viewpoint = TRUE;
          opt.omit_points = crlf;
          opt.omit_count = !crlf;
        }
        file = write_pcd (cloud, &opt);
        check_file (file, cloud, &opt, "xyzi", src_xyzi, FALSE);
        check_file (file, cloud, &opt, "xyz", src_xyz, TRUE);
        check_file (file, cloud, &opt, "xyzit", src_xyzit, FALSE);
        g_string_free (file, TRUE);
      }
  cloud_free (cloud);
}

GST_END_TEST;

/* Every TYPE/SIZE pair, in x (coordinates) and in intensity (extremes of
 * the type), through every storage type. */
GST_START_TEST (test_every_field_type)
{
  static const gchar types[] = "IIIIUUUUFF";
  static const guint sizes[] = { 1, 2, 4, 8, 1, 2, 4, 8, 4, 8 };
  guint t, d;

  for (t = 0; t < G_N_ELEMENTS (sizes); t++) {
    TestField fields[] = {
      {"x", types[t], sizes[t], 1}, {"y", 'F', 4, 1}, {"z", 'F', 8, 1},
      {"intensity", types[t], sizes[t], 1},
    };
    TestCloud *cloud = cloud_new (fields, 4, 40, 100 + t);

    for (d = 0; d < 3; d++) {
      WriteOptions opt = { "0.7", d };
      GString *file = write_pcd (cloud, &opt);

      check_file (file, cloud, &opt, "xyzi", src_xyzi, FALSE);
      g_string_free (file, TRUE);
    }
    cloud_free (cloud);
  }
}

GST_END_TEST;

/* Fields in any order, padding "_" fields (PCL writes them for alignment),
 * COUNT > 1 (element 0 is the value), and fields no channel reads. */
GST_START_TEST (test_field_order_count_padding)
{
  static const TestField fields[] = {
    {"_", 'U', 1, 3}, {"intensity", 'U', 2, 1}, {"z", 'F', 8, 1},
    {"normal", 'F', 4, 3}, {"y", 'I', 4, 1}, {"x", 'F', 4, 2},
    {"_", 'U', 1, 1}, {"ring", 'U', 1, 1}, {"time", 'F', 8, 1},
  };
  static const gchar *const src_xyzir[] =
      { "x", "y", "z", "intensity", "ring" };
  static const gchar *const src_zyxti[] =
      { "z", "y", "x", "time", "intensity" };
  TestCloud *cloud = cloud_new (fields, G_N_ELEMENTS (fields), 33, 7);
  guint d;

  for (d = 0; d < 3; d++) {
    WriteOptions opt = { "0.7", d };
    GString *file = write_pcd (cloud, &opt);
    P3dPcdHeader header;

    fail_unless (p3d_pcd_header_parse ((const guint8 *) file->str, file->len,
            &header, NULL));
    fail_unless_equals_uint64 (header.point_stride, 3 + 2 + 8 + 12 + 4 + 8
        + 1 + 1 + 8);
    fail_unless_equals_uint64 (header.fields[5].offset, 3 + 2 + 8 + 12 + 4);
    fail_unless_equals_int (header.fields[3].count, 3);
    p3d_pcd_header_clear (&header);
    check_file (file, cloud, &opt, "xyzir", src_xyzir, FALSE);
    check_file (file, cloud, &opt, "zyxti", src_zyxti, TRUE);
    g_string_free (file, TRUE);
  }
  cloud_free (cloud);
}

GST_END_TEST;

/* A missing intensity (or time, or ring) becomes 0; the channel
 * letters accept the field names that datasets use. */
GST_START_TEST (test_missing_fields_and_aliases)
{
  static const struct
  {
    const gchar *name;
    const gchar *format;
  } aliases[] = {
    {"intensity", "xyzi"}, {"i", "xyzi"}, {"reflectance", "xyzi"},
    {"remission", "xyzi"}, {"Intensity", "xyzi"}, {"t", "xyzit"},
    {"time", "xyzit"}, {"timestamp", "xyzit"}, {"ring", "xyzir"},
    {"r", "xyzir"},
  };
  static const gchar *const src_none[] = { "x", "y", "z", NULL, NULL };
  TestCloud *plain = cloud_new (xyzi_f4, 3, 20, 3);
  guint a, d;

  for (d = 0; d < 3; d++) {
    WriteOptions opt = { "0.7", d };
    GString *file = write_pcd (plain, &opt);

    check_file (file, plain, &opt, "xyzi", src_none, FALSE);
    check_file (file, plain, &opt, "xyzit", src_none, FALSE);
    check_file (file, plain, &opt, "xyzir", src_none, FALSE);
    g_string_free (file, TRUE);
  }
  cloud_free (plain);

  for (a = 0; a < G_N_ELEMENTS (aliases); a++) {
    TestField fields[] = {
      {"x", 'F', 4, 1}, {"y", 'F', 4, 1}, {"z", 'F', 4, 1},
      {aliases[a].name, 'U', 1, 1},
    };
    guint letter = strlen (aliases[a].format) - 1;
    const gchar *sources[] = { "x", "y", "z", NULL, NULL };
    TestCloud *cloud = cloud_new (fields, 4, 10, 50 + a);
    GString *file = write_pcd (cloud, &v07_binary);

    sources[letter] = aliases[a].name;
    check_file (file, cloud, &v07_binary, aliases[a].format, sources, FALSE);
    g_string_free (file, TRUE);
    cloud_free (cloud);
  }
}

GST_END_TEST;

/* An organized cloud (WIDTH x HEIGHT) with NaN and infinite points, as
 * stereo and depth cameras write them: dropped on request and counted, or
 * kept. A NaN intensity does not drop a point. */
GST_START_TEST (test_organized_nonfinite)
{
  TestCloud *cloud = cloud_new (xyzi_f4, 4, 8 * 5, 11);
  static const gdouble bad[] = { NAN, INFINITY, -INFINITY };
  gsize p;
  guint d;

  for (p = 0; p < cloud->points; p++) {
    if (p % 3 == 0)
      cloud_value (cloud, p, p % 9 / 3)->f = bad[p % 7 % 3];
    if (p % 5 == 0)
      cloud_value (cloud, p, 3)->f = NAN;
  }
  for (d = 0; d < 3; d++) {
    WriteOptions opt = { "0.7", d };
    GString *file;
    P3dPcdHeader header;
    gsize n_points = 0, n_dropped = 0;
    gfloat *points = NULL;

    opt.width = 8;
    file = write_pcd (cloud, &opt);
    check_file (file, cloud, &opt, "xyzi", src_xyzi, TRUE);
    check_file (file, cloud, &opt, "xyzi", src_xyzi, FALSE);
    fail_unless (p3d_pcd_header_parse ((const guint8 *) file->str, file->len,
            &header, NULL));
    fail_unless_equals_uint64 (header.width, 8);
    fail_unless_equals_uint64 (header.height, 5);
    fail_unless (p3d_pcd_decode (&header, (const guint8 *) file->str,
            file->len, "xyz", TRUE, &points, &n_points, &n_dropped, NULL));
    /* points 0, 3, ..., 39: 14 of the 40 */
    fail_unless_equals_uint64 (n_dropped, 14);
    fail_unless_equals_uint64 (n_points, 26);
    g_free (points);
    p3d_pcd_header_clear (&header);
    g_string_free (file, TRUE);
  }
  cloud_free (cloud);
}

GST_END_TEST;

/* Header forms seen in the wild: comments and blank lines anywhere before
 * DATA, CRLF, tabs, lines out of the spec's order, the defaults of old
 * files; and what the parsed header then says. */
GST_START_TEST (test_header_forms)
{
  static const gchar text[] =
      "\r\n# .PCD v.5 - Point Cloud Data file format\r\n"
      "  VERSION\t.5 \r\n"
      "\r\n"
      "COLUMNS x\ty z\r\n"
      "# between lines\n"
      "POINTS 3\n"
      "VIEWPOINT 1.5 -2 3e1 0.5 0.5 0.5 0.5\n"
      "DATA ascii\r\n" "1 2 3\r\n" "\r\n" "4 5 6\n" "7 8 9\n";
  static const gfloat expected[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
  static const gchar no_count[] =
      "VERSION 0.7\nFIELDS x y z\nSIZE 8 4 2\nTYPE F F I\nWIDTH 2\n"
      "DATA binary\n";
  P3dPcdHeader header;
  GError *error = NULL;
  gfloat *points = NULL;
  gsize n_points = 0;

  fail_unless (p3d_pcd_header_parse ((const guint8 *) text, sizeof (text) - 1,
          &header, &error));
  g_assert_no_error (error);
  fail_unless_equals_string (header.version, ".5");
  fail_unless_equals_int (header.n_fields, 3);
  fail_unless_equals_string (header.fields[1].name, "y");
  /* old files without SIZE and TYPE: float32 */
  fail_unless_equals_int (header.fields[2].type, 'F');
  fail_unless_equals_int (header.fields[2].size, 4);
  fail_unless_equals_int (header.fields[2].count, 1);
  fail_unless_equals_uint64 (header.fields[2].offset, 8);
  fail_unless_equals_uint64 (header.point_stride, 12);
  fail_unless_equals_uint64 (header.width, 3);
  fail_unless_equals_uint64 (header.height, 1);
  fail_unless_equals_uint64 (header.points, 3);
  fail_unless_equals_float (header.viewpoint[0], 1.5);
  fail_unless_equals_float (header.viewpoint[2], 30.0);
  fail_unless_equals_int (header.data, P3D_PCD_DATA_ASCII);
  fail_unless_equals_uint64 (header.header_lines, 9);
  fail_unless_equals_uint64 (header.header_size, strstr (text, "1 2 3") - text);
  fail_unless (p3d_pcd_decode (&header, (const guint8 *) text,
          sizeof (text) - 1, "xyz", FALSE, &points, &n_points, NULL, &error));
  assert_points_equal (expected, 3, points, n_points, 3, "header forms");
  g_free (points);
  p3d_pcd_header_clear (&header);
  p3d_pcd_header_clear (&header);

  /* no COUNT, no HEIGHT, no POINTS, no VIEWPOINT */
  fail_unless (p3d_pcd_header_parse ((const guint8 *) no_count,
          sizeof (no_count) - 1, &header, &error));
  fail_unless_equals_uint64 (header.point_stride, 14);
  fail_unless_equals_uint64 (header.points, 2);
  fail_unless_equals_uint64 (header.height, 1);
  fail_unless_equals_float (header.viewpoint[3], 1.0);
  fail_unless_equals_string (header.version, "0.7");
  p3d_pcd_header_clear (&header);
}

GST_END_TEST;

/* PCL's writers through the options: comments, CRLF, no POINTS, no
 * dimensions (POINTS only), no SIZE/TYPE lines. */
GST_START_TEST (test_header_options)
{
  TestCloud *cloud = cloud_new (xyzi_f4, 4, 15, 5);
  guint d, variant;

  for (d = 0; d < 3; d++)
    for (variant = 0; variant < 5; variant++) {
      WriteOptions opt = { variant == 4 ? NULL : "0.7", d };
      GString *file;

      opt.comments = variant == 0;
      opt.crlf = variant == 1 || variant == 0;
      opt.omit_points = variant == 2;
      opt.omit_dims = variant == 3;
      opt.omit_size_type = variant == 4;
      opt.omit_viewpoint = variant >= 2;
      file = write_pcd (cloud, &opt);
      check_file (file, cloud, &opt, "xyzi", src_xyzi, FALSE);
      g_string_free (file, TRUE);
    }
  cloud_free (cloud);
}

GST_END_TEST;

/* ASCII number forms, separators, blank lines, and a last line without a
 * newline at the end of the stream. */
GST_START_TEST (test_ascii_forms)
{
  static const gchar text[] =
      "FIELDS x y z intensity ring\nSIZE 4 8 4 4 2\nTYPE F F F I U\n"
      "COUNT 1 1 1 1 1\nWIDTH 6\nDATA ascii\n"
      "1 -2 +3 -4 5 # a comment after the values\n"
      "# a line with only a comment is blank\n"
      "  .5\t5. 1e3 7 0\r\n"
      "\n \t\r\n"
      "1E-2 -0 0.000123456789 2147483647 65535\n"
      "nan inf -INF -2147483648 0\n"
      "Infinity NaN 1.5e+2 0 1\n"
      "123456789012345678901234567890 1e-400 -1e39 1 2";
  gfloat expected[] = {
    1, -2, 3, -4, 5,
    0.5f, 5, 1000, 7, 0,
    0.01f, -0.0f, 0.000123456789f, 2147483647.0f, 65535,
    NAN, INFINITY, -INFINITY, -2147483648.0f, 0,
    INFINITY, NAN, 150, 0, 1,
    1.2345679e29f, 0, -INFINITY, 1, 2,
  };
  P3dPcdHeader header;
  GError *error = NULL;
  gfloat *points = NULL;
  gsize n_points = 0, n_dropped = 0, file_size = 0;

  /* decimal to double to float, as strtod reads them (a float literal
   * would round once, from decimal straight to float) */
  expected[10] = (gfloat) g_ascii_strtod ("1E-2", NULL);
  expected[12] = (gfloat) g_ascii_strtod ("0.000123456789", NULL);
  expected[25] = (gfloat) g_ascii_strtod ("123456789012345678901234567890",
      NULL);

  /* the last line has no newline: complete only at the end of the stream */
  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) text,
          sizeof (text) - 1, FALSE, NULL, &file_size, &error),
      P3D_PCD_NEED_MORE);
  fail_unless (file_size > sizeof (text) - 1);
  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) text,
          sizeof (text) - 1, TRUE, &header, &file_size, &error),
      P3D_PCD_COMPLETE);
  fail_unless_equals_uint64 (file_size, sizeof (text) - 1);
  fail_unless (p3d_pcd_decode (&header, (const guint8 *) text,
          sizeof (text) - 1, "xyzir", FALSE, &points, &n_points, &n_dropped,
          &error), "%s", error ? error->message : "");
  assert_points_equal (expected, 6, points, n_points, 5, "ascii forms");
  g_free (points);
  fail_unless (p3d_pcd_decode (&header, (const guint8 *) text,
          sizeof (text) - 1, "xyzir", TRUE, &points, &n_points, &n_dropped,
          &error));
  fail_unless_equals_uint64 (n_points, 3);
  fail_unless_equals_uint64 (n_dropped, 3);
  assert_points_equal (expected, 3, points, n_points, 5, "ascii forms drop");
  g_free (points);
  p3d_pcd_header_clear (&header);
}

GST_END_TEST;

/* The hand-written number parser against g_ascii_strtod on random decimal
 * strings (long significands, leading zeros, exponents near the limits):
 * the float decoded from F4 and F8 fields is the double that strtod reads,
 * rounded to float. */
GST_START_TEST (test_ascii_numbers_match_strtod)
{
  static const gchar header[] =
      "FIELDS x y z\nSIZE 4 8 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 3000\n"
      "DATA ascii\n";
  GString *text = g_string_new (header);
  GPtrArray *tokens = g_ptr_array_new_with_free_func (g_free);
  P3dTestRng rng;
  P3dPcdHeader parsed;
  gfloat *points = NULL, *expected;
  gsize n_points = 0, k;
  GError *error = NULL;

  p3d_test_rng_init (&rng, 2024);
  for (k = 0; k < 9000; k++) {
    GString *token = g_string_new (NULL);
    guint digits = 1 + p3d_test_rng_below (&rng, 25), dot, i;

    if (p3d_test_rng_below (&rng, 2))
      g_string_append_c (token, p3d_test_rng_below (&rng, 2) ? '-' : '+');
    dot = p3d_test_rng_below (&rng, digits + 2);
    for (i = 0; i < digits; i++) {
      if (i == dot)
        g_string_append_c (token, '.');
      /* leading zeros now and then */
      g_string_append_c (token, '0' + (i < 3 && p3d_test_rng_below (&rng,
                  3) == 0 ? 0 : p3d_test_rng_below (&rng, 10)));
    }
    if (p3d_test_rng_below (&rng, 2))
      g_string_append_printf (token, "%c%d", p3d_test_rng_below (&rng,
              2) ? 'e' : 'E', (gint) p3d_test_rng_below (&rng, 100) - 50
          + (p3d_test_rng_below (&rng, 8) == 0 ? 300 : 0));
    g_string_append (text, token->str);
    g_string_append_c (text, k % 3 == 2 ? '\n' : ' ');
    g_ptr_array_add (tokens, g_string_free (token, FALSE));
  }
  expected = g_new (gfloat, 9000);
  for (k = 0; k < 9000; k++)
    expected[k] = (gfloat) g_ascii_strtod (g_ptr_array_index (tokens, k), NULL);
  fail_unless (p3d_pcd_header_parse ((const guint8 *) text->str, text->len,
          &parsed, &error));
  fail_unless (p3d_pcd_decode (&parsed, (const guint8 *) text->str,
          text->len, "xyz", FALSE, &points, &n_points, NULL, &error), "%s",
      error ? error->message : "");
  for (k = 0; k < 9000; k++)
    fail_unless (same_float (expected[k], points[k]), "token '%s': decoded "
        "%.9g, strtod %.9g", (gchar *) g_ptr_array_index (tokens, k),
        points[k], expected[k]);
  g_free (points);
  g_free (expected);
  p3d_pcd_header_clear (&parsed);
  g_ptr_array_unref (tokens);
  g_string_free (text, TRUE);
}

GST_END_TEST;

/* Empty clouds in every storage type. */
GST_START_TEST (test_empty_cloud)
{
  TestCloud *cloud = cloud_new (xyzi_f4, 4, 0, 1);
  guint d;

  for (d = 0; d < 3; d++) {
    WriteOptions opt = { "0.7", d };
    GString *file = write_pcd (cloud, &opt);

    check_file (file, cloud, &opt, "xyzi", src_xyzi, TRUE);
    g_string_free (file, TRUE);
  }
  cloud_free (cloud);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* Bad input */

typedef struct
{
  const gchar *text;
  P3dPcdError code;
  const gchar *message;
} BadHeader;

#define GOOD_TAIL "WIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA ascii\n1 2 3\n"
#define XYZ "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\n"

static const BadHeader bad_headers[] = {
  {"VERSION 0.7\nFIELDS x y z intensity\nSIZE 4 4 4 4\nTYPE F F F\n"
        "COUNT 1 1 1 1\n" GOOD_TAIL, P3D_PCD_ERROR_INCONSISTENT,
      "line 4: TYPE has 3 entries but FIELDS has 4"},
  {"FIELDS x y z\nSIZE 4 4\nTYPE F F F\n" GOOD_TAIL,
        P3D_PCD_ERROR_INCONSISTENT,
      "line 2: SIZE has 2 entries but FIELDS has 3"},
  {"FIELDS x y z\nCOUNT 1 1 1 1\n" GOOD_TAIL, P3D_PCD_ERROR_INCONSISTENT,
      "line 2: COUNT has 4 entries but FIELDS has 3"},
  {"FIELDS x y z\nSIZE 4 4 4\nTYPE Q F F\n" GOOD_TAIL, P3D_PCD_ERROR_TYPE,
      "line 3: unknown TYPE 'Q' for field 'x'"},
  {"FIELDS x y z\nSIZE 4 4 4\nTYPE F FF F\n" GOOD_TAIL, P3D_PCD_ERROR_TYPE,
      "unknown TYPE 'FF' for field 'y'"},
  {"FIELDS x y z\nSIZE 4 4 3\nTYPE F F F\n" GOOD_TAIL, P3D_PCD_ERROR_TYPE,
      "line 2: SIZE 3 is not valid for TYPE F of field 'z'"},
  {"FIELDS x y z\nSIZE 4 2 4\nTYPE F F F\n" GOOD_TAIL, P3D_PCD_ERROR_TYPE,
      "SIZE 2 is not valid for TYPE F of field 'y'"},
  {"FIELDS x y z\nSIZE 4 4 16\nTYPE F F I\n" GOOD_TAIL, P3D_PCD_ERROR_TYPE,
      "SIZE 16 is not valid for TYPE I"},
  {"FIELDS x y z\nSIZE 4 four 4\n" GOOD_TAIL, P3D_PCD_ERROR_HEADER,
      "line 2: SIZE entry 2 'four' is not a whole number"},
  {"FIELDS x y z\nSIZE 4 -4 4\n" GOOD_TAIL, P3D_PCD_ERROR_HEADER,
      "SIZE entry 2 '-4'"},
  {"FIELDS x y z\nCOUNT 1 0 1\n" GOOD_TAIL, P3D_PCD_ERROR_HEADER,
      "line 2: COUNT 0 of field 'y' is outside"},
  {"FIELDS x y z\nSIZE 4 4 4\nCOUNT 1 1 4294967296\n" GOOD_TAIL,
      P3D_PCD_ERROR_HEADER, "COUNT 4294967296 of field 'z'"},
  {"FIELDS x y z\nSIZE 4 4 8\nTYPE F F F\nCOUNT 1 1 4294967295\n" GOOD_TAIL,
      P3D_PCD_ERROR_TOO_LARGE, "more than 4 GiB"},
  {XYZ "WIDTH -1\nDATA ascii\n", P3D_PCD_ERROR_HEADER,
      "line 5: WIDTH '-1' is not a whole number"},
  {XYZ "WIDTH 1.5\nDATA ascii\n", P3D_PCD_ERROR_HEADER, "WIDTH '1.5'"},
  {XYZ "WIDTH 18446744073709551616\nDATA ascii\n", P3D_PCD_ERROR_HEADER,
      "WIDTH '18446744073709551616'"},
  {XYZ "WIDTH 1 2\nDATA ascii\n", P3D_PCD_ERROR_HEADER,
      "line 5: WIDTH takes one value, found 2"},
  {XYZ "HEIGHT\nDATA ascii\n", P3D_PCD_ERROR_HEADER,
      "HEIGHT takes one value, found 0"},
  {XYZ "WIDTH 999\nHEIGHT 1\nPOINTS 1000\nDATA ascii\n",
      P3D_PCD_ERROR_INCONSISTENT, "line 7: POINTS 1000 but WIDTH*HEIGHT = 999"},
  {XYZ "WIDTH 4294967296\nHEIGHT 4294967296\nDATA binary\n",
        P3D_PCD_ERROR_TOO_LARGE,
      "WIDTH 4294967296 x HEIGHT 4294967296 does not fit in 64 bits"},
  {XYZ "WIDTH 4611686018427387904\nDATA binary\n", P3D_PCD_ERROR_TOO_LARGE,
      "4611686018427387904 points of 12 bytes do not fit in 64 bits"},
  {XYZ "HEIGHT 3\nPOINTS 3\nDATA ascii\n", P3D_PCD_ERROR_HEADER,
      "line 5: HEIGHT without a WIDTH line"},
  {XYZ "VIEWPOINT 0 0 0 1 0 0 0\nDATA ascii\n", P3D_PCD_ERROR_HEADER,
      "line 6: the header has neither WIDTH nor POINTS"},
  {XYZ "VIEWPOINT 0 0 0 1 0 0\n" GOOD_TAIL, P3D_PCD_ERROR_HEADER,
      "line 5: VIEWPOINT has 6 values, expected 7"},
  {XYZ "VIEWPOINT 0 0 0 one 0 0 0\n" GOOD_TAIL, P3D_PCD_ERROR_HEADER,
      "VIEWPOINT value 4 'one' is not a number"},
  {XYZ "WIDTH 1\nDATA text\n1 2 3\n", P3D_PCD_ERROR_HEADER,
      "line 6: DATA 'text'"},
  {XYZ "WIDTH 1\nDATA\n1 2 3\n", P3D_PCD_ERROR_HEADER, "line 6: DATA ''"},
  {XYZ "WIDTH 1\nDATA binary binary\n", P3D_PCD_ERROR_HEADER,
      "DATA 'binary' with 2 values"},
  {XYZ "WIDTH 1\nWIDTH 1\nDATA ascii\n", P3D_PCD_ERROR_HEADER,
      "line 6: a second WIDTH line (the first is line 5)"},
  {"COLUMNS x y z\nFIELDS x y z\n" GOOD_TAIL, P3D_PCD_ERROR_HEADER,
      "line 2: a second FIELDS line"},
  {"VERSION 0.7\nFOO 1\n" XYZ GOOD_TAIL, P3D_PCD_ERROR_HEADER,
      "line 2: unknown header keyword 'FOO'"},
  {"version 0.7\n" XYZ GOOD_TAIL, P3D_PCD_ERROR_HEADER,
      "line 1: unknown header keyword 'version'"},
  {"VERSION 0.7\n" GOOD_TAIL, P3D_PCD_ERROR_HEADER,
      "line 5: the header has no FIELDS line"},
  {"FIELDS\n" GOOD_TAIL, P3D_PCD_ERROR_HEADER, "line 1: FIELDS names no field"},
  {"FIELDS x y z a234567890123456789012345678901234567890123456789012345678"
        "901234\n" GOOD_TAIL, P3D_PCD_ERROR_HEADER, "is longer than 63 bytes"},
  {"VERSION 0.7.0.0.0\n" XYZ GOOD_TAIL, P3D_PCD_ERROR_HEADER,
      "line 1: VERSION takes one value of at most 7 characters"},
  {"1 2 3\n" XYZ GOOD_TAIL, P3D_PCD_ERROR_HEADER,
      "line 1: unknown header keyword '1'"},
  {"\x89PNG\r\n\x1a\n", P3D_PCD_ERROR_HEADER,
      "line 1: unknown header keyword '\\211PNG'"},
  {"VERSION 0.7\n" XYZ "WIDTH 1\n", P3D_PCD_ERROR_TRUNCATED,
      "truncated: the header ends at byte 67 (line 6) without a DATA line"},
};

static void
check_error (GError * error, P3dPcdError code, const gchar * substring,
    const gchar * what)
{
  fail_unless (error != NULL, "%s: no error, expected '%s'", what, substring);
  fail_unless (error->domain == P3D_PCD_ERROR, "%s: error domain %s", what,
      g_quark_to_string (error->domain));
  fail_unless (error->code == (gint) code, "%s: error code %d, expected %d "
      "(%s)", what, error->code, code, error->message);
  fail_unless (strstr (error->message, substring) != NULL, "%s: message '%s' "
      "does not say '%s'", what, error->message, substring);
  fail_unless (g_utf8_validate (error->message, -1, NULL));
}

GST_START_TEST (test_bad_headers)
{
  guint i;

  for (i = 0; i < G_N_ELEMENTS (bad_headers); i++) {
    const BadHeader *bad = &bad_headers[i];
    const guint8 *bytes = (const guint8 *) bad->text;
    gsize size = strlen (bad->text), file_size = 7;
    P3dPcdHeader header;
    GError *error = NULL;
    P3dPcdScan scan;

    fail_if (p3d_pcd_header_parse (bytes, size, &header, &error));
    fail_unless (header.fields == NULL);
    check_error (error, bad->code, bad->message, bad->text);
    g_clear_error (&error);

    fail_unless_equals_int (p3d_pcd_scan (bytes, size, TRUE, &header,
            &file_size, &error), P3D_PCD_INVALID);
    fail_unless_equals_uint64 (file_size, 0);
    check_error (error, bad->code, bad->message, bad->text);
    g_clear_error (&error);

    /* a complete bad line fails at once, without waiting for EOS */
    scan = p3d_pcd_scan (bytes, size, FALSE, NULL, &file_size, &error);
    if (bad->code == P3D_PCD_ERROR_TRUNCATED) {
      fail_unless_equals_int (scan, P3D_PCD_NEED_MORE);
    } else {
      fail_unless_equals_int (scan, P3D_PCD_INVALID);
      check_error (error, bad->code, bad->message, bad->text);
    }
    g_clear_error (&error);
  }
}

GST_END_TEST;

/* Bytes that are not PCD at all are refused, never waited on forever. */
GST_START_TEST (test_garbage)
{
  GString *text = g_string_new (NULL);
  GError *error = NULL;
  gsize file_size = 0;
  guint i;

  /* one long line */
  for (i = 0; i < P3D_PCD_MAX_HEADER_SIZE + 10; i++)
    g_string_append_c (text, 'a' + i % 26);
  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) text->str,
          P3D_PCD_MAX_HEADER_SIZE - 1, FALSE, NULL, &file_size, &error),
      P3D_PCD_NEED_MORE);
  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) text->str,
          text->len, FALSE, NULL, &file_size, &error), P3D_PCD_INVALID);
  check_error (error, P3D_PCD_ERROR_HEADER, "no DATA line within the first "
      "65536 bytes", "long line");
  g_clear_error (&error);

  /* comments for ever */
  g_string_truncate (text, 0);
  while (text->len < P3D_PCD_MAX_HEADER_SIZE + 100)
    g_string_append (text, "# just a comment\n");
  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) text->str,
          text->len, FALSE, NULL, &file_size, &error), P3D_PCD_INVALID);
  check_error (error, P3D_PCD_ERROR_HEADER, "no DATA line", "comments");
  g_clear_error (&error);

  /* binary garbage: NUL in the first line */
  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) "VERSION\0 0.7\n",
          13, FALSE, NULL, &file_size, &error), P3D_PCD_INVALID);
  check_error (error, P3D_PCD_ERROR_HEADER, "line 1: NUL byte", "NUL");
  g_clear_error (&error);

  /* padding past its limit */
  g_string_set_size (text, P3D_PCD_MAX_PADDING + 1);
  memset (text->str, 0, text->len);
  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) text->str,
          text->len - 1, FALSE, NULL, &file_size, &error), P3D_PCD_NEED_MORE);
  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) text->str,
          text->len - 1, TRUE, NULL, &file_size, &error), P3D_PCD_NEED_MORE);
  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) text->str,
          text->len, FALSE, NULL, &file_size, &error), P3D_PCD_INVALID);
  check_error (error, P3D_PCD_ERROR_HEADER, "1048577 NUL or blank bytes and "
      "no header", "zeros");
  g_clear_error (&error);

  /* zeros before a file are padding that belongs to it */
  {
    static const gchar padded[] = "\0\0\0\0\n\0FIELDS x y z\nWIDTH 1\n"
        "DATA ascii\n1 2 3\n";
    P3dPcdHeader header;

    fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) padded,
            sizeof (padded) - 1, FALSE, &header, &file_size, &error),
        P3D_PCD_COMPLETE);
    fail_unless_equals_uint64 (file_size, sizeof (padded) - 1);
    fail_unless_equals_uint64 (header.header_lines, 4);
    p3d_pcd_header_clear (&header);
  }

  /* whitespace only: nothing left at the end of a stream */
  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) " \r\n\n\t", 5, TRUE,
          NULL, &file_size, &error), P3D_PCD_NEED_MORE);
  fail_unless_equals_int (p3d_pcd_scan (NULL, 0, TRUE, NULL, &file_size,
          &error), P3D_PCD_NEED_MORE);
  fail_unless_equals_uint64 (file_size, 1);
  g_assert_no_error (error);
  g_string_free (text, TRUE);
}

GST_END_TEST;

/* A file that @edit has damaged: scan (at EOS) and decode fail with @code
 * and a message that contains @substring. */
static void
check_bad_file (const GString * file, P3dPcdError code,
    const gchar * substring, const gchar * what)
{
  P3dPcdHeader header;
  GError *error = NULL;
  gfloat *points = (gfloat *) 1;
  gsize n_points = 7, file_size = 7;

  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) file->str,
          file->len, TRUE, NULL, &file_size, &error), P3D_PCD_INVALID);
  check_error (error, code, substring, what);
  g_clear_error (&error);
  fail_unless (p3d_pcd_header_parse ((const guint8 *) file->str, file->len,
          &header, &error));
  fail_if (p3d_pcd_decode (&header, (const guint8 *) file->str, file->len,
          "xyzi", FALSE, &points, &n_points, NULL, &error));
  fail_unless (points == NULL && n_points == 0);
  check_error (error, code, substring, what);
  g_clear_error (&error);
  p3d_pcd_header_clear (&header);
}

/* Data that the scanner accepts (it only counts lines or bytes) but the
 * decoder refuses. */
static void
check_bad_values (const GString * file, P3dPcdError code,
    const gchar * substring, const gchar * what)
{
  P3dPcdHeader header;
  GError *error = NULL;
  gfloat *points = NULL;
  gsize n_points = 0, file_size = 0;

  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) file->str,
          file->len, TRUE, &header, &file_size, &error), P3D_PCD_COMPLETE);
  fail_if (p3d_pcd_decode (&header, (const guint8 *) file->str, file->len,
          "xyzi", FALSE, &points, &n_points, NULL, &error));
  check_error (error, code, substring, what);
  g_clear_error (&error);
  p3d_pcd_header_clear (&header);
}

static GString *
replace_once (const GString * file, const gchar * from, const gchar * to)
{
  const gchar *at = strstr (file->str, from);
  GString *out;

  fail_unless (at != NULL, "'%s' not in the file", from);
  out = g_string_new_len (file->str, at - file->str);
  g_string_append (out, to);
  g_string_append_len (out, at + strlen (from),
      file->len - (at - file->str) - strlen (from));
  return out;
}

GST_START_TEST (test_bad_ascii_data)
{
  static const gchar head[] =
      "# .PCD v0.7\nVERSION 0.7\nFIELDS x y z intensity\nSIZE 4 4 4 4\n"
      "TYPE F F F F\nCOUNT 1 1 1 1\nWIDTH 3\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0"
      "\nPOINTS 3\nDATA ascii\n";
  GString *good = g_string_new (head), *bad;

  g_string_append (good, "1 2 3 4\n5 6 7 8\n9 10 11 12\n");

  bad = replace_once (good, "5 6 7 8", "5 6 7");
  check_bad_values (bad, P3D_PCD_ERROR_DATA,
      "point 1 (line 13): 3 values, expected 4", "too few");
  g_string_free (bad, TRUE);
  bad = replace_once (good, "9 10 11 12", "9 10 11 12 13");
  check_bad_values (bad, P3D_PCD_ERROR_DATA,
      "point 2 (line 14): 5 values, expected 4", "too many");
  g_string_free (bad, TRUE);
  bad = replace_once (good, "5 6 7 8", "5 six 7 8");
  check_bad_values (bad, P3D_PCD_ERROR_DATA,
      "point 1 (line 13): value 'six' of field 'y' is not a number",
      "not a number");
  g_string_free (bad, TRUE);
  bad = replace_once (good, "1 2 3 4", "1 2 3e 4");
  check_bad_values (bad, P3D_PCD_ERROR_DATA, "value '3e'", "bad exponent");
  g_string_free (bad, TRUE);
  bad = replace_once (good, "1 2 3 4", "1 2 . 4");
  check_bad_values (bad, P3D_PCD_ERROR_DATA, "value '.'", "lone dot");
  g_string_free (bad, TRUE);
  bad = replace_once (good, "1 2 3 4", "1,2 2 3 4");
  check_bad_values (bad, P3D_PCD_ERROR_DATA, "value '1,2'", "comma");
  g_string_free (bad, TRUE);
  bad = replace_once (good, "9 10 11 12\n", "\n\n");
  check_bad_file (bad, P3D_PCD_ERROR_TRUNCATED,
      "truncated: header announces 3 points, 2 lines of ASCII data present",
      "missing line");
  g_string_free (bad, TRUE);
  g_string_free (good, TRUE);

  /* far more points than bytes: refused before allocating for them */
  {
    static const gchar huge[] =
        "FIELDS x y z\nWIDTH 1000000000000000\nDATA ascii\n1 2 3\n";
    P3dPcdHeader header;
    GError *error = NULL;
    gfloat *points = NULL;
    gsize n_points = 0;

    fail_unless (p3d_pcd_header_parse ((const guint8 *) huge,
            sizeof (huge) - 1, &header, NULL));
    fail_if (p3d_pcd_decode (&header, (const guint8 *) huge,
            sizeof (huge) - 1, "xyz", FALSE, &points, &n_points, NULL, &error));
    check_error (error, P3D_PCD_ERROR_TRUNCATED, "header announces "
        "1000000000000000 points, the 6 bytes of ASCII data cannot hold them",
        "huge");
    g_clear_error (&error);
    p3d_pcd_header_clear (&header);
  }
}

GST_END_TEST;

GST_START_TEST (test_bad_binary_data)
{
  TestCloud *cloud = cloud_new (xyzi_f4, 4, 10, 9);
  WriteOptions opt = { "0.7", P3D_PCD_DATA_BINARY };
  GString *good = write_pcd (cloud, &opt), *bad;
  gchar *message;

  bad = g_string_new_len (good->str, good->len - 60);
  message = g_strdup_printf ("truncated: header announces 10 points (160 "
      "bytes), 100 bytes present");
  check_bad_file (bad, P3D_PCD_ERROR_TRUNCATED, message, "short binary");
  g_free (message);
  g_string_free (bad, TRUE);
  g_string_free (good, TRUE);
  cloud_free (cloud);
}

GST_END_TEST;

static GString *
compressed_with_sizes (const GString * file, gsize header_size,
    guint32 compressed, guint32 uncompressed, const guint8 * data, gsize len)
{
  GString *out = g_string_new_len (file->str, header_size);
  guint32 sizes[2] = { GUINT32_TO_LE (compressed),
    GUINT32_TO_LE (uncompressed)
  };

  g_string_append_len (out, (const gchar *) sizes, 8);
  g_string_append_len (out, (const gchar *) data, len);
  return out;
}

GST_START_TEST (test_bad_compressed_data)
{
  TestCloud *cloud = cloud_new (xyzi_f4, 4, 10, 9);
  WriteOptions opt = { "0.7", P3D_PCD_DATA_BINARY_COMPRESSED };
  GString *good = write_pcd (cloud, &opt), *bad;
  P3dPcdHeader header;
  guint8 plain[160], noise[64];
  GByteArray *packed;
  gsize hs, i;
  gchar *message;

  fail_unless (p3d_pcd_header_parse ((const guint8 *) good->str, good->len,
          &header, NULL));
  hs = header.header_size;
  p3d_pcd_header_clear (&header);

  /* the uncompressed size disagrees with POINTS x stride */
  bad = g_string_new_len (good->str, good->len);
  bad->str[hs + 4] = 100;
  bad->str[hs + 5] = 0;
  message = g_strdup_printf ("byte %" G_GSIZE_FORMAT ": binary_compressed "
      "data announces 100 uncompressed bytes, but the header's 10 points of "
      "16 bytes take 160", hs + 4);
  check_bad_file (bad, P3D_PCD_ERROR_INCONSISTENT, message, "sizes");
  g_free (message);
  g_string_free (bad, TRUE);

  /* LZF data that is noise */
  for (i = 0; i < sizeof (noise); i++)
    noise[i] = (guint8) (i * 37 + 200);
  bad = compressed_with_sizes (good, hs, sizeof (noise), 160, noise,
      sizeof (noise));
  message = g_strdup_printf ("byte %" G_GSIZE_FORMAT ": LZF data does not "
      "decompress to the 160 bytes the header announces", hs + 8);
  check_bad_values (bad, P3D_PCD_ERROR_DATA, message, "noise");
  g_string_free (bad, TRUE);

  /* valid LZF of fewer bytes than announced */
  memset (plain, 0x41, sizeof (plain));
  packed = lzf_encode (plain, 150);
  /* a literal and back references: the encoder's matches decode */
  fail_unless (packed->len < 10);
  bad = compressed_with_sizes (good, hs, packed->len, 160, packed->data,
      packed->len);
  check_bad_values (bad, P3D_PCD_ERROR_DATA, message, "fewer");
  check_bad_values (bad, P3D_PCD_ERROR_DATA, "(it gives fewer)", "fewer");
  g_string_free (bad, TRUE);
  g_byte_array_unref (packed);
  g_free (message);

  /* the compressed size runs past the end (165: as large as LZF data for
   * 160 bytes can be, see below) */
  bad = compressed_with_sizes (good, hs, 165, 160, noise, sizeof (noise));
  message = g_strdup_printf ("truncated: header announces 10 points in 165 "
      "bytes of LZF data from byte %" G_GSIZE_FORMAT ", 64 bytes present",
      hs + 8);
  check_bad_file (bad, P3D_PCD_ERROR_TRUNCATED, message, "past the end");
  g_free (message);
  g_string_free (bad, TRUE);

  /* larger than LZF output for 160 bytes can be (at most one control byte
   * per 32 literals): refused before any of it is waited for, so that
   * 0xFFFFFFFF announced and an endless stream cannot grow without bound) */
  bad = compressed_with_sizes (good, hs, 300, 160, noise, sizeof (noise));
  check_bad_file (bad, P3D_PCD_ERROR_INCONSISTENT, "300 bytes of LZF data "
      "cannot decompress to as few as the 160 bytes", "LZF shrinks");
  g_string_free (bad, TRUE);
  bad = compressed_with_sizes (good, hs, 0xFFFFFFFF, 160, noise, 8);
  check_bad_file (bad, P3D_PCD_ERROR_INCONSISTENT, "4294967295 bytes of LZF "
      "data cannot decompress", "0xFFFFFFFF");
  g_string_free (bad, TRUE);

  /* more than LZF can expand to: refused before allocating */
  bad = compressed_with_sizes (good, hs, 1, 160, noise, 1);
  check_bad_file (bad, P3D_PCD_ERROR_INCONSISTENT, "1 bytes of LZF data "
      "cannot decompress to the 160 bytes", "expansion");
  g_string_free (bad, TRUE);

  /* not even the sizes */
  bad = compressed_with_sizes (good, hs, 0, 0, noise, 0);
  g_string_truncate (bad, hs + 5);
  message = g_strdup_printf ("truncated: binary_compressed data needs 8 "
      "bytes of sizes at byte %" G_GSIZE_FORMAT ", 5 bytes present", hs);
  check_bad_file (bad, P3D_PCD_ERROR_TRUNCATED, message, "no sizes");
  g_free (message);
  g_string_free (bad, TRUE);

  g_string_free (good, TRUE);
  cloud_free (cloud);
}

GST_END_TEST;

/* Formats the caller gets wrong, and files without coordinates. */
GST_START_TEST (test_bad_formats_and_fields)
{
  static const struct
  {
    const gchar *format;
    const gchar *message;
  } formats[] = {
    {"", "empty point-cloud format"},
    {"xy", "format 'xy' has no channel 'z'"},
    {"xyzz", "format 'xyzz': channel 'z' appears twice"},
    {"xyzq", "format 'xyzq': unknown channel at position 3"},
    {"XYZ", "unknown channel at position 0"},
    {"xyz\xff", "format 'xyz\\377': unknown channel"},
  };
  static const TestField xzi[] = {
    {"x", 'F', 4, 1}, {"z", 'F', 4, 1}, {"intensity", 'F', 4, 1},
  };
  TestCloud *cloud = cloud_new (xyzi_f4, 4, 3, 1);
  GString *file = write_pcd (cloud, &v07_binary);
  P3dPcdHeader header;
  GError *error = NULL;
  gfloat *points = NULL, small[8];
  gsize n_points = 0;
  guint i;

  fail_unless (p3d_pcd_header_parse ((const guint8 *) file->str, file->len,
          &header, NULL));
  for (i = 0; i < G_N_ELEMENTS (formats); i++) {
    fail_if (p3d_pcd_format_is_valid (formats[i].format, &error));
    check_error (error, P3D_PCD_ERROR_FORMAT, formats[i].message,
        formats[i].format);
    g_clear_error (&error);
    fail_if (p3d_pcd_decode (&header, (const guint8 *) file->str, file->len,
            formats[i].format, FALSE, &points, &n_points, NULL, &error));
    check_error (error, P3D_PCD_ERROR_FORMAT, formats[i].message,
        formats[i].format);
    g_clear_error (&error);
  }
  fail_unless (p3d_pcd_format_is_valid ("zyxitr", NULL));
  fail_if (p3d_pcd_format_is_valid (NULL, NULL));

  /* too small an output */
  fail_if (p3d_pcd_decode_into (&header, (const guint8 *) file->str,
          file->len, "xyz", FALSE, small, 8, &n_points, NULL, NULL, &error));
  check_error (error, P3D_PCD_ERROR_TOO_LARGE, "do not fit in the 8 floats",
      "capacity");
  g_clear_error (&error);
  p3d_pcd_header_clear (&header);
  g_string_free (file, TRUE);
  cloud_free (cloud);

  cloud = cloud_new (xzi, 3, 3, 1);
  file = write_pcd (cloud, &v07_binary);
  fail_unless (p3d_pcd_header_parse ((const guint8 *) file->str, file->len,
          &header, NULL));
  fail_if (p3d_pcd_decode (&header, (const guint8 *) file->str, file->len,
          "xyzi", FALSE, &points, &n_points, NULL, &error));
  check_error (error, P3D_PCD_ERROR_FIELD, "the file has no field 'y' (its "
      "fields: x z intensity)", "no y");
  g_clear_error (&error);
  p3d_pcd_header_clear (&header);
  g_string_free (file, TRUE);
  cloud_free (cloud);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* Streams */

/* Every prefix of a small file of each storage type: never a crash, never
 * read past the prefix (the prefix is copied to its own allocation, so
 * ASan or valgrind would see it), NEED_MORE while more may come, an error
 * at the end of the stream. */
GST_START_TEST (test_truncated_at_every_byte)
{
  static const TestField fields[] = {
    {"x", 'F', 4, 1}, {"y", 'I', 2, 1}, {"z", 'F', 8, 1},
    {"intensity", 'U', 1, 2},
  };
  TestCloud *cloud = cloud_new (fields, 4, 6, 21);
  guint d;

  for (d = 0; d < 3; d++) {
    WriteOptions opt = { "0.7", d };
    GString *file = write_pcd (cloud, &opt);
    P3dPcdHeader full;
    gsize cut, last_line_start;

    fail_unless (p3d_pcd_header_parse ((const guint8 *) file->str, file->len,
            &full, NULL));
    last_line_start = file->len - 1;
    while (last_line_start > 0 && file->str[last_line_start - 1] != '\n')
      last_line_start--;
    for (cut = 0; cut < file->len; cut++) {
      guint8 *prefix = g_memdup2 (file->str, cut);
      GError *error = NULL;
      gsize file_size = 0, n_points = 0;
      gfloat *points = NULL;
      P3dPcdScan scan;

      fail_unless_equals_int (p3d_pcd_scan (prefix, cut, FALSE, NULL,
              &file_size, &error), P3D_PCD_NEED_MORE);
      fail_unless (file_size > cut && file_size <= file->len,
          "%s cut at %" G_GSIZE_FORMAT ": lower bound %" G_GSIZE_FORMAT
          " of %" G_GSIZE_FORMAT, data_names[d], cut, file_size, file->len);
      g_assert_no_error (error);

      scan = p3d_pcd_scan (prefix, cut, TRUE, NULL, &file_size, &error);
      if (cut == 0) {
        fail_unless_equals_int (scan, P3D_PCD_NEED_MORE);
      } else if (d == P3D_PCD_DATA_ASCII && cut > last_line_start) {
        /* a last ASCII line cut short reads as a complete one at EOS */
        fail_unless_equals_int (scan, P3D_PCD_COMPLETE);
        fail_unless_equals_uint64 (file_size, cut);
      } else {
        fail_unless_equals_int (scan, P3D_PCD_INVALID);
        fail_unless (error != NULL);
        /* a cut inside the header shows as a header line cut short */
        fail_unless (error->code == P3D_PCD_ERROR_TRUNCATED ||
            cut < full.header_size, "%s cut at %" G_GSIZE_FORMAT ": %s",
            data_names[d], cut, error->message);
      }
      g_clear_error (&error);

      if (cut >= full.header_size) {
        gboolean ok = p3d_pcd_decode (&full, prefix, cut, "xyzi", FALSE,
            &points, &n_points, NULL, &error);

        fail_unless (ok == (scan == P3D_PCD_COMPLETE) || (ok == FALSE
                && error->code == P3D_PCD_ERROR_DATA));
        g_clear_error (&error);
        g_free (points);
      }
      g_free (prefix);
    }
    p3d_pcd_header_clear (&full);
    g_string_free (file, TRUE);
  }
  cloud_free (cloud);
}

GST_END_TEST;

/* What pcdparse does: bytes arrive in chunks; it scans what it holds and
 * takes out each complete file. Four files back to back, with what comes
 * between files in the wild: a blank line after an ASCII file; an ASCII
 * file without a final newline that runs into the "# .PCD" comment line
 * PCL writes first; the zeros older PCL versions leave after
 * binary_compressed data. Fed in chunks of many sizes, optionally
 * rescanning only once the lower bound has arrived: the same four files
 * come out, each as soon as its last byte is in, and only padding is left
 * at EOS. */
GST_START_TEST (test_scan_chunks_back_to_back)
{
  static const TestField fields[] = {
    {"x", 'F', 4, 1}, {"y", 'F', 4, 1}, {"z", 'F', 4, 1},
    {"ring", 'U', 2, 1},
  };
  static const gsize chunk_sizes[] = { 1, 2, 3, 7, 64, 4096, 1 << 20 };
  static const gchar pcl_comment[] =
      "# .PCD v0.7 - Point Cloud Data file format\n";
  TestCloud *cloud = cloud_new (fields, 4, 25, 4);
  WriteOptions options[4] = {
    {"0.7", P3D_PCD_DATA_BINARY}, {"0.7", P3D_PCD_DATA_ASCII},
    {".5", P3D_PCD_DATA_ASCII}, {"0.7", P3D_PCD_DATA_BINARY_COMPRESSED},
  };
  GString *stream = g_string_new (NULL);
  gsize ends[4];
  guint f, c, use_hint;

  options[1].crlf = TRUE;
  options[2].no_final_newline = TRUE;
  for (f = 0; f < 4; f++) {
    GString *file = write_pcd (cloud, &options[f]);

    g_string_append_len (stream, file->str, file->len);
    ends[f] = stream->len;
    if (f == 1)
      g_string_append (stream, "\r\n");
    g_string_free (file, TRUE);
  }
  /* the comment ends the last line of file 2, which then takes it */
  g_string_insert (stream, ends[2], pcl_comment);
  ends[2] += strlen (pcl_comment);
  ends[3] += strlen (pcl_comment);
  g_string_set_size (stream, stream->len + 300);
  memset (stream->str + ends[3], 0, 300);

  for (c = 0; c < G_N_ELEMENTS (chunk_sizes); c++)
    for (use_hint = 0; use_hint < 2; use_hint++) {
      GByteArray *adapter = g_byte_array_new ();
      gsize fed = 0, taken = 0, wait_for = 0;
      guint found = 0;
      gboolean eos = FALSE;

      while (!eos) {
        gsize chunk = MIN (chunk_sizes[c], stream->len - fed);

        g_byte_array_append (adapter, (const guint8 *) stream->str + fed,
            chunk);
        fed += chunk;
        eos = fed == stream->len;
        if (use_hint && !eos && adapter->len < wait_for)
          continue;
        for (;;) {
          GError *error = NULL;
          gsize file_size = 0, n_points = 0;
          P3dPcdHeader header;
          gfloat *points = NULL;
          P3dPcdScan scan = p3d_pcd_scan (adapter->data, adapter->len, eos,
              &header, &file_size, &error);

          fail_if (scan == P3D_PCD_INVALID, "chunk %" G_GSIZE_FORMAT ": %s",
              chunk_sizes[c], error ? error->message : "");
          if (scan == P3D_PCD_NEED_MORE) {
            fail_unless (file_size > adapter->len);
            wait_for = file_size;
            break;
          }
          fail_unless (found < 4, "a fifth file");
          fail_unless_equals_uint64 (taken + file_size, ends[found]);
          /* found in the chunk that brought its last byte */
          fail_unless (fed - ends[found] < chunk_sizes[c], "file %u found %"
              G_GSIZE_FORMAT " bytes late", found, fed - ends[found]);
          fail_unless (p3d_pcd_decode (&header, adapter->data, file_size,
                  "xyzir", FALSE, &points, &n_points, NULL, &error), "%s",
              error ? error->message : "");
          fail_unless_equals_uint64 (n_points, 25);
          fail_unless_equals_float (points[5 * 24 + 4],
              value_to_float (&fields[3], *cloud_value (cloud, 24, 3)));
          g_free (points);
          p3d_pcd_header_clear (&header);
          g_byte_array_remove_range (adapter, 0, file_size);
          taken += file_size;
          found++;
        }
      }
      fail_unless_equals_int (found, 4);
      /* the zeros after the last file: nothing left */
      fail_unless_equals_uint64 (adapter->len, 300);
      g_byte_array_unref (adapter);
    }
  g_string_free (stream, TRUE);
  cloud_free (cloud);
}

GST_END_TEST;

/* ------------------------------------------------------------------------ */
/* Inputs for the fuzz target's loop (tests/fuzz): corner cases written by
 * hand, and whatever the fuzzer finds, kept as it was found (its runs so far
 * found nothing). Each is a C string; the length leaves out the final NUL. */

typedef struct
{
  const gchar *what;
  const gchar *bytes;
  gsize size;
  /* complete files, points decoded from them, files that failed to decode */
  guint files;
  guint points;
  guint failures;
} FuzzCase;

#define FUZZ_CASE(what, text, files, points, failures) \
  { what, text, sizeof (text) - 1, files, points, failures }

static const FuzzCase fuzz_cases[] = {
  /* sizes of 4 GiB announced by 8 bytes: refused before allocating */
  FUZZ_CASE ("compressed, huge sizes", "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\n"
      "WIDTH 357913941\nDATA binary_compressed\n\xff\xff\xff\xff\xfc\xff"
      "\xff\xff", 0, 0, 0),
  /* 2^64 - 1 bytes of data: fits in 64 bits, not in the input */
  FUZZ_CASE ("binary, 2^64-1 bytes", "FIELDS x y z\nSIZE 1 1 1\nTYPE U U U\n"
      "COUNT 1 1 1\nPOINTS 6148914691236517205\nDATA binary\n\1\2\3", 0, 0,
      0),
  /* 2^64 - 1 bytes of binary data, and a NEED_MORE lower bound for ASCII
   * that saturates */
  FUZZ_CASE ("ascii, huge COUNT", "FIELDS x y z\nSIZE 1 1 1\nTYPE U U U\n"
      "COUNT 1 1 4294967293\nWIDTH 4294967297\nDATA ascii\n1 2 3\n", 0, 0,
      0),
  /* zero points in every storage type, behind padding */
  FUZZ_CASE ("empty files back to back", "\0\0\nFIELDS x y z\nWIDTH 0\n"
      "DATA binary_compressed\n\0\0\0\0\0\0\0\0\0\0FIELDS x y z\nPOINTS 0\n"
      "DATA ascii\nFIELDS x y z\nPOINTS 0\nDATA binary\n", 3, 0, 0),
  /* a comment right after DATA, values that overflow float, signs alone */
  FUZZ_CASE ("ascii edge values", "FIELDS x y z i\nSIZE 4 8 1 8\nTYPE F F I U\n"
      "WIDTH 2\nDATA ascii\n# c\n1e39 -1e309 -128 18446744073709551615\n"
      "-0 +0 127 -1\nFIELDS x y z\nWIDTH 1\nDATA ascii\n+ - 1\n", 2, 1, 1),
  /* a last line without newline running into the next header */
  FUZZ_CASE ("ascii into header", "FIELDS x y z\nWIDTH 1\nDATA ascii\n1 2 3"
      "VERSION 0.7\nFIELDS x y z\nWIDTH 1\nDATA ascii\n4 5 6", 2, 1, 1),
  /* an LZF back reference before the start of the output */
  FUZZ_CASE ("lzf, reference before start", "FIELDS x y z\nWIDTH 1\n"
      "DATA binary_compressed\n\3\0\0\0\14\0\0\0\xe0\xff\xff", 1, 0, 1),
};

/* The fuzz target's loop on each case: file after file at EOS, decoded
 * with drop; and the whole input as if more were to come. */
GST_START_TEST (test_fuzz_regressions)
{
  guint i;

  for (i = 0; i < G_N_ELEMENTS (fuzz_cases); i++) {
    const FuzzCase *fc = &fuzz_cases[i];
    guint8 *bytes = g_memdup2 (fc->bytes, fc->size);
    gsize offset = 0, file_size = 0;
    guint files = 0, points = 0, failures = 0;
    GError *error = NULL;
    P3dPcdScan scan;

    while (files < 8) {
      P3dPcdHeader header;
      gfloat *decoded = NULL;
      gsize n_points = 0, n_dropped = 0;

      scan = p3d_pcd_scan (bytes + offset, fc->size - offset, TRUE, &header,
          &file_size, &error);
      fail_unless ((scan == P3D_PCD_INVALID) == (error != NULL), "%s",
          fc->what);
      g_clear_error (&error);
      if (scan != P3D_PCD_COMPLETE)
        break;
      if (p3d_pcd_decode (&header, bytes + offset, file_size, "xyzi", TRUE,
              &decoded, &n_points, &n_dropped, &error)) {
        fail_unless_equals_uint64 (n_points + n_dropped, header.points);
        points += n_points;
      } else {
        fail_unless (error != NULL, "%s", fc->what);
        failures++;
      }
      g_clear_error (&error);
      g_free (decoded);
      p3d_pcd_header_clear (&header);
      offset += file_size;
      files++;
    }
    fail_unless (files == fc->files && points == fc->points
        && failures == fc->failures, "%s: %u files, %u points, %u failures",
        fc->what, files, points, failures);

    scan = p3d_pcd_scan (bytes, fc->size, FALSE, NULL, &file_size, &error);
    if (scan == P3D_PCD_NEED_MORE)
      fail_unless (file_size > fc->size, "%s", fc->what);
    g_clear_error (&error);
    g_free (bytes);
  }
}

GST_END_TEST;

/* Messages that name what is wrong and where: the field, the line, the
 * byte offset. */
GST_START_TEST (test_issue11_messages)
{
  static const gchar version8[] = "VERSION 0.7.0.00\nFIELDS x y z\n";
  static const gchar version2[] = "VERSION 0.7 0.5\nFIELDS x y z\n";
  static const gchar one_point[] = "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\n"
      "TYPE F F F\nCOUNT 1 1 1\nWIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA ascii\n"
      "1 2 3\n";
  GError *error = NULL;
  P3dPcdHeader header;
  P3dPcdPosition position;
  GString *text;
  gsize file_size = 0;
  guint8 *zeros;

  /* a VERSION of 8 characters: its length, not "found 1" */
  fail_if (p3d_pcd_header_parse ((const guint8 *) version8,
          strlen (version8), &header, &error));
  check_error (error, P3D_PCD_ERROR_HEADER, "line 1: VERSION takes one value "
      "of at most 7 characters, '0.7.0.00' has 8", "VERSION of 8");
  fail_unless (strstr (error->message, "found") == NULL, "%s", error->message);
  /* the position is in the error, apart from the message */
  fail_unless (p3d_pcd_error_get_position (error, &position));
  fail_unless_equals_uint64 (position.line, 1);
  fail_unless_equals_uint64 (position.point, P3D_PCD_NO_POSITION);
  fail_unless_equals_uint64 (position.byte, P3D_PCD_NO_POSITION);
  fail_unless_equals_string (position.reason, "VERSION takes one value of "
      "at most 7 characters, '0.7.0.00' has 8");
  g_clear_error (&error);
  fail_if (p3d_pcd_header_parse ((const guint8 *) version2,
          strlen (version2), &header, &error));
  check_error (error, P3D_PCD_ERROR_HEADER, "found 2 values", "2 versions");
  g_clear_error (&error);

  /* a point and its line; a copy of the error keeps them */
  text = g_string_new (one_point);
  g_string_truncate (text, text->len - 6);
  g_string_append (text, "1 two 3\n");
  fail_unless (p3d_pcd_header_parse ((const guint8 *) text->str, text->len,
          &header, NULL));
  {
    gfloat *points = NULL;
    gsize n = 0;
    GError *copy;

    fail_if (p3d_pcd_decode (&header, (const guint8 *) text->str, text->len,
            "xyz", TRUE, &points, &n, NULL, &error));
    copy = g_error_copy (error);
    g_clear_error (&error);
    fail_unless (p3d_pcd_error_get_position (copy, &position));
    fail_unless_equals_uint64 (position.point, 0);
    fail_unless_equals_uint64 (position.line, 10);
    fail_unless_equals_string (position.reason, "value 'two' of field 'y' "
        "is not a number");
    fail_unless_equals_string (copy->message, "point 0 (line 10): value "
        "'two' of field 'y' is not a number");
    g_error_free (copy);
  }
  p3d_pcd_header_clear (&header);
  g_string_free (text, TRUE);
  /* another domain has no position */
  error = g_error_new_literal (G_FILE_ERROR, G_FILE_ERROR_NOENT, "x");
  fail_if (p3d_pcd_error_get_position (error, &position));
  g_clear_error (&error);

  /* a comment after the last point: nothing more at the end of the
   * stream, as PCL reads it; before the end it may start a file */
  text = g_string_new (one_point);
  g_string_append (text, "# written by hand\n\n  # another");
  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) text->str,
          text->len, TRUE, NULL, &file_size, &error), P3D_PCD_COMPLETE);
  fail_unless_equals_uint64 (file_size, strlen (one_point));
  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) text->str +
          file_size, text->len - file_size, TRUE, NULL, &file_size, &error),
      P3D_PCD_NEED_MORE);
  fail_unless (error == NULL);
  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) "# a\nVERSION", 11,
          TRUE, NULL, &file_size, &error), P3D_PCD_INVALID);
  g_clear_error (&error);
  /* PCL's first line, or a start of it, begins a file cut short */
  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) "# .PCD v0.7\n", 12,
          TRUE, NULL, &file_size, &error), P3D_PCD_INVALID);
  check_error (error, P3D_PCD_ERROR_TRUNCATED, "without a DATA line", "sig");
  g_clear_error (&error);
  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) "\n# .P", 5,
          TRUE, NULL, &file_size, &error), P3D_PCD_INVALID);
  g_clear_error (&error);
  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) "# .P\n#\n", 7,
          TRUE, NULL, &file_size, &error), P3D_PCD_NEED_MORE);
  /* what the header parser refuses before the end is no trailer at the
   * end either (a fuzzer finding: a comment line holding a NUL byte was
   * INVALID as the stream went on and nothing at its end) */
  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) "# a\0b\n", 6,
          FALSE, NULL, &file_size, &error), P3D_PCD_INVALID);
  g_clear_error (&error);
  fail_unless_equals_int (p3d_pcd_scan ((const guint8 *) "# a\0b\n", 6,
          TRUE, NULL, &file_size, &error), P3D_PCD_INVALID);
  check_error (error, P3D_PCD_ERROR_HEADER, "NUL byte in the header", "NUL");
  g_clear_error (&error);
  g_string_free (text, TRUE);

  /* more padding than a file may have is refused at the end of the stream
   * as before it (it was accepted silently at the end) */
  zeros = g_malloc0 (2 << 20);
  fail_unless_equals_int (p3d_pcd_scan (zeros, 2 << 20, TRUE, NULL,
          &file_size, &error), P3D_PCD_INVALID);
  check_error (error, P3D_PCD_ERROR_HEADER, "2097152 NUL or blank bytes and "
      "no header", "2 MiB of NUL at EOS");
  g_clear_error (&error);
  fail_unless_equals_int (p3d_pcd_scan (zeros, 2 << 20, FALSE, NULL,
          &file_size, &error), P3D_PCD_INVALID);
  check_error (error, P3D_PCD_ERROR_HEADER, "2097152 NUL or blank bytes and "
      "no header", "2 MiB of NUL");
  g_clear_error (&error);
  fail_unless_equals_int (p3d_pcd_scan (zeros, P3D_PCD_MAX_PADDING, TRUE,
          NULL, &file_size, &error), P3D_PCD_NEED_MORE);
  fail_unless_equals_uint64 (p3d_pcd_padding_size (zeros, 2 << 20), 2 << 20);
  g_free (zeros);
}

GST_END_TEST;

/* Finite values beyond float32 become infinite: counted as overflow (and
 * dropped with the other non-finite points), in ASCII and as F8. */
GST_START_TEST (test_float_overflow)
{
  static const gchar ascii[] = "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\n"
      "TYPE F F F\nCOUNT 1 1 1\nWIDTH 5\nHEIGHT 1\nPOINTS 5\nDATA ascii\n"
      "1e39 2 3\n1 -1e300 1e39\ninf 2 3\n1 2 3\n1 2 1e400\n";
  static const gchar binary[] = "VERSION 0.7\nFIELDS x y z\nSIZE 8 4 4\n"
      "TYPE F F F\nCOUNT 1 1 1\nWIDTH 3\nHEIGHT 1\nPOINTS 3\nDATA binary\n";
  const gdouble xs[3] = { 1e300, -G_MAXDOUBLE, INFINITY };
  P3dPcdHeader header;
  GString *file = g_string_new (binary);
  gfloat points[15];
  gsize n_points, n_dropped, n_overflow;
  guint i;

  fail_unless (p3d_pcd_header_parse ((const guint8 *) ascii, strlen (ascii),
          &header, NULL));
  fail_unless (p3d_pcd_decode_into (&header, (const guint8 *) ascii,
          strlen (ascii), "xyz", TRUE, points, 15, &n_points, &n_dropped,
          &n_overflow, NULL));
  fail_unless_equals_uint64 (n_points, 1);
  fail_unless_equals_uint64 (n_dropped, 4);
  /* "inf" is written infinite: not an overflow */
  fail_unless_equals_uint64 (n_overflow, 3);
  p3d_pcd_header_clear (&header);

  for (i = 0; i < 3; i++) {
    guint64 bits;
    gfloat rest[2] = { 1, 2 };

    memcpy (&bits, &xs[i], 8);
    bits = GUINT64_TO_LE (bits);
    g_string_append_len (file, (const gchar *) &bits, 8);
    g_string_append_len (file, (const gchar *) rest, 8);
  }
  fail_unless (p3d_pcd_header_parse ((const guint8 *) file->str, file->len,
          &header, NULL));
  fail_unless (p3d_pcd_decode_into (&header, (const guint8 *) file->str,
          file->len, "xyzi", FALSE, points, 12, &n_points, &n_dropped,
          &n_overflow, NULL));
  fail_unless_equals_uint64 (n_points, 3);
  fail_unless_equals_uint64 (n_dropped, 0);
  fail_unless_equals_uint64 (n_overflow, 2);
  p3d_pcd_header_clear (&header);
  g_string_free (file, TRUE);
}

GST_END_TEST;

/* The line counter counts, fed in pieces, exactly the point lines that the
 * scanner counts, and the scanner's progress says how many are missing. */
GST_START_TEST (test_line_counter)
{
  static const gchar header[] = "VERSION 0.7\nFIELDS x\nSIZE 4\nTYPE F\n"
      "COUNT 1\nWIDTH 6\nHEIGHT 1\nPOINTS 6\nDATA ascii\n";
  static const gchar data[] = "1\n  \n# c\n2 # c\n\t\r\n#\n3\n\0\n 4 \n";
  GString *file = g_string_new (header);
  P3dPcdLineCounter counter;
  P3dPcdProgress progress;
  gsize file_size, piece;

  g_string_append_len (file, data, sizeof (data) - 1);
  for (piece = 1; piece < 8; piece++) {
    gsize pos;

    p3d_pcd_line_counter_init (&counter);
    for (pos = strlen (header); pos < file->len; pos += piece)
      p3d_pcd_line_counter_feed (&counter, (const guint8 *) file->str + pos,
          MIN (piece, file->len - pos));
    /* 1, 2, 3, the NUL line and 4 */
    fail_unless_equals_uint64 (counter.lines, 5);
  }
  fail_unless_equals_int (p3d_pcd_scan_progress ((const guint8 *) file->str,
          file->len, FALSE, NULL, &file_size, &progress, NULL),
      P3D_PCD_NEED_MORE);
  fail_unless (progress.have_header);
  fail_unless_equals_int (progress.data, P3D_PCD_DATA_ASCII);
  fail_unless_equals_uint64 (progress.points, 6);
  fail_unless_equals_uint64 (progress.header_size, strlen (header));
  fail_unless_equals_uint64 (progress.lines_missing, 1);
  fail_unless_equals_uint64 (progress.lines_end, file->len);
  g_string_append (file, "5\n");
  fail_unless_equals_int (p3d_pcd_scan_progress ((const guint8 *) file->str,
          file->len, FALSE, NULL, &file_size, &progress, NULL),
      P3D_PCD_COMPLETE);
  fail_if (progress.have_header);
  g_string_free (file, TRUE);
}

GST_END_TEST;

static Suite *
pcdparse_reader_suite (void)
{
  Suite *s = suite_create ("pcdparse_reader");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_storage_types_and_versions);
  tcase_add_test (tc, test_every_field_type);
  tcase_add_test (tc, test_field_order_count_padding);
  tcase_add_test (tc, test_missing_fields_and_aliases);
  tcase_add_test (tc, test_organized_nonfinite);
  tcase_add_test (tc, test_header_forms);
  tcase_add_test (tc, test_header_options);
  tcase_add_test (tc, test_ascii_forms);
  tcase_add_test (tc, test_ascii_numbers_match_strtod);
  tcase_add_test (tc, test_empty_cloud);
  tcase_add_test (tc, test_bad_headers);
  tcase_add_test (tc, test_garbage);
  tcase_add_test (tc, test_bad_ascii_data);
  tcase_add_test (tc, test_bad_binary_data);
  tcase_add_test (tc, test_bad_compressed_data);
  tcase_add_test (tc, test_bad_formats_and_fields);
  tcase_add_test (tc, test_truncated_at_every_byte);
  tcase_add_test (tc, test_scan_chunks_back_to_back);
  tcase_add_test (tc, test_fuzz_regressions);
  tcase_add_test (tc, test_issue11_messages);
  tcase_add_test (tc, test_float_overflow);
  tcase_add_test (tc, test_line_counter);
  return s;
}

P3D_CHECK_MAIN (pcdparse_reader);
