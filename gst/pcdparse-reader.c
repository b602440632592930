/* The PCD reader core: header parser, stream scanner and decoder (see
 * pcdparse-reader.h). Everything here reads untrusted bytes, so every length is
 * checked against the bytes given before it is used, sizes are computed in
 * 64 bits with explicit overflow checks, and nothing is allocated for data
 * that the input is too short to hold. */
#include <math.h>
#include <string.h>

#include <liblzf/lzf.h>

#include "pcdparse-reader.h"

/* Each error carries where it was found, so that a caller places it in a
 * stream without reading it back out of the message (GLib's extended
 * errors: the position travels with the GError, through copies). */
typedef struct
{
  guint64 line;
  guint64 point;
  guint64 byte;
  gchar *reason;
} P3dPcdErrorPrivate;

static void
p3d_pcd_error_private_init (P3dPcdErrorPrivate * priv)
{
  priv->line = P3D_PCD_NO_POSITION;
  priv->point = P3D_PCD_NO_POSITION;
  priv->byte = P3D_PCD_NO_POSITION;
  priv->reason = NULL;
}

static void
p3d_pcd_error_private_copy (const P3dPcdErrorPrivate * src,
    P3dPcdErrorPrivate * dest)
{
  dest->line = src->line;
  dest->point = src->point;
  dest->byte = src->byte;
  dest->reason = g_strdup (src->reason);
}

static void
p3d_pcd_error_private_clear (P3dPcdErrorPrivate * priv)
{
  g_clear_pointer (&priv->reason, g_free);
}

/* *INDENT-OFF* */
G_DEFINE_EXTENDED_ERROR (P3dPcdError, p3d_pcd_error)
/* *INDENT-ON* */

gboolean
p3d_pcd_error_get_position (const GError * error, P3dPcdPosition * position)
{
  P3dPcdErrorPrivate *priv;

  g_return_val_if_fail (position != NULL, FALSE);

  if (error == NULL || error->domain != P3D_PCD_ERROR)
    return FALSE;
  priv = p3d_pcd_error_get_private (error);
  position->line = priv->line;
  position->point = priv->point;
  position->byte = priv->byte;
  position->reason = priv->reason ? priv->reason : error->message;
  return TRUE;
}

#define NO_POSITION P3D_PCD_NO_POSITION
#define AT_LINE(line) (line), NO_POSITION, NO_POSITION
#define AT_POINT(point, line) (line), (point), NO_POSITION
#define AT_BYTE(byte) NO_POSITION, NO_POSITION, (byte)
#define NOWHERE NO_POSITION, NO_POSITION, NO_POSITION

/* Sets @error to the reason in @format, with the position before it in the
 * message ("line L: ", "point P (line L): ", "byte B: ") and in the error's
 * private data. */
static void
set_error (GError ** error, P3dPcdError code, guint64 line,
    guint64 point, guint64 byte, const gchar * format, ...)
G_GNUC_PRINTF (6, 7);

     static void
         set_error (GError ** error, P3dPcdError code, guint64 line,
    guint64 point, guint64 byte, const gchar * format, ...)
{
  P3dPcdErrorPrivate *priv;
  gchar *reason, *message;
  va_list args;

  if (error == NULL)
    return;
  va_start (args, format);
  reason = g_strdup_vprintf (format, args);
  va_end (args);
  if (point != NO_POSITION)
    message = g_strdup_printf ("point %" G_GUINT64_FORMAT " (line %"
        G_GUINT64_FORMAT "): %s", point, line, reason);
  else if (line != NO_POSITION)
    message = g_strdup_printf ("line %" G_GUINT64_FORMAT ": %s", line, reason);
  else if (byte != NO_POSITION)
    message = g_strdup_printf ("byte %" G_GUINT64_FORMAT ": %s", byte, reason);
  else
    message = g_strdup (reason);
  g_set_error_literal (error, P3D_PCD_ERROR, code, message);
  g_free (message);
  priv = p3d_pcd_error_get_private (*error);
  priv->line = line;
  priv->point = point;
  priv->byte = byte;
  priv->reason = reason;
}

/* What a parsing step found: done, needs bytes that have not arrived, or an
 * error that no further byte can repair. */
typedef enum
{
  STEP_OK,
  STEP_NEED_MORE,
  STEP_INVALID,
} Step;

/* LZF's best case is a 3-byte back reference that copies 264 bytes, so
 * compressed data can never expand by more than this factor. */
#define LZF_MAX_EXPANSION 88

/* Values quoted in messages are cut to this many bytes. */
#define QUOTE_MAX 40

typedef struct
{
  const gchar *start;
  gsize len;
} Token;

static gboolean
is_space (guchar c)
{
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static gboolean
is_blank (const guint8 * bytes, gsize size)
{
  gsize i;

  for (i = 0; i < size; i++)
    if (!is_space (bytes[i]) && bytes[i] != '\n')
      return FALSE;
  return TRUE;
}

/* What may come before a header: blank lines, and NUL bytes, because older
 * PCL versions stretched binary_compressed files to a page beyond their data
 * and left zeros after it (PCL's test/car6.pcd ends with 3913 of them). */
static gboolean
is_padding (guchar c)
{
  return c == '\0' || c == '\n' || is_space (c);
}

static gsize
leading_padding (const guint8 * bytes, gsize size)
{
  gsize i;

  for (i = 0; i < size && is_padding (bytes[i]); i++);
  return i;
}

/* The first line PCL writes in every file. */
#define PCL_SIGNATURE "# .PCD"

/* What may follow the last file of a stream: padding and comment lines
 * (PCL reads a file that ends with a "# ..." line after its last point).
 * This holds only at the end of the stream, and PCL's signature line (or
 * an unfinished line that may become one) is the start of a file cut
 * short, not a comment. */
static gboolean
is_trailer (const guint8 * bytes, gsize size)
{
  gsize i = leading_padding (bytes, size);

  /* what a header could not hold (a NUL byte, more than its size) is no
   * trailer either: the same bytes are refused before the end */
  if (size - i > P3D_PCD_MAX_HEADER_SIZE
      || (i < size && memchr (bytes + i, '\0', size - i)))
    return FALSE;
  while (i < size) {
    const guint8 *newline;
    gsize end, len;

    while (i < size && is_padding (bytes[i]))
      i++;
    if (i == size)
      break;
    if (bytes[i] != '#')
      return FALSE;
    newline = memchr (bytes + i, '\n', size - i);
    end = newline ? (gsize) (newline - bytes) : size;
    len = MIN (end - i, strlen (PCL_SIGNATURE));
    if (memcmp (bytes + i, PCL_SIGNATURE, len) == 0
        && (len == strlen (PCL_SIGNATURE) || newline == NULL))
      return FALSE;
    i = end;
  }
  return TRUE;
}

gsize
p3d_pcd_padding_size (const guint8 * bytes, gsize size)
{
  g_return_val_if_fail (bytes != NULL || size == 0, 0);

  return leading_padding (bytes, size);
}

/* A value from the file made printable for a message: cut, with control and
 * non-ASCII bytes escaped, so the message is valid UTF-8 whatever the input. */
static gchar *
quote (const gchar * text, gsize len)
{
  gchar *raw = g_malloc (QUOTE_MAX + 1);
  gchar *escaped, *result;
  gsize i, n = MIN (len, QUOTE_MAX);

  /* g_strescape stops at a NUL; show it as a control byte instead */
  for (i = 0; i < n; i++)
    raw[i] = text[i] ? text[i] : '\001';
  raw[n] = '\0';
  escaped = g_strescape (raw, NULL);
  result = g_strconcat (escaped, len > QUOTE_MAX ? "..." : "", NULL);
  g_free (escaped);
  g_free (raw);
  return result;
}

static gchar *
quote_string (const gchar * text)
{
  return quote (text, strlen (text));
}

static guint64
saturating_add (guint64 a, guint64 b)
{
  return a > G_MAXUINT64 - b ? G_MAXUINT64 : a + b;
}

static guint64
saturating_mul (guint64 a, guint64 b)
{
  return b != 0 && a > G_MAXUINT64 / b ? G_MAXUINT64 : a * b;
}

/* ------------------------------------------------------------------------ */
/* Numbers */

static gboolean
parse_u64 (const Token * token, guint64 * value)
{
  guint64 v = 0;
  gsize i;

  if (token->len == 0)
    return FALSE;
  for (i = 0; i < token->len; i++) {
    guint digit = (guchar) token->start[i] - '0';

    if (digit > 9 || v > (G_MAXUINT64 - digit) / 10)
      return FALSE;
    v = v * 10 + digit;
  }
  *value = v;
  return TRUE;
}

/* Integer fields written as plain integers convert straight to float, so
 * that ASCII and binary files with the same values decode to the same
 * floats (a detour through double would round twice). */
static gboolean
parse_integer_as_float (const gchar * text, gsize len, gfloat * value)
{
  Token digits = { text, len };
  guint64 magnitude;
  gboolean negative = FALSE;

  if (len > 0 && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    digits.start++;
    digits.len--;
  }
  if (!parse_u64 (&digits, &magnitude))
    return FALSE;
  if (!negative) {
    *value = (gfloat) magnitude;
  } else if (magnitude <= (guint64) G_MAXINT64 + 1) {
    /* -2^63 is the one magnitude that does not fit in a positive gint64 */
    *value = magnitude == (guint64) G_MAXINT64 + 1 ?
        (gfloat) G_MININT64 : (gfloat) - (gint64) magnitude;
  } else {
    return FALSE;
  }
  return TRUE;
}

static gboolean
equal_nocase (const gchar * text, gsize len, const gchar * word)
{
  return strlen (word) == len && g_ascii_strncasecmp (text, word, len) == 0;
}

/* Whether @text spells an infinity ([+-]inf, [+-]infinity). */
static gboolean
equal_nocase_infinity (const gchar * text, gsize len)
{
  if (len > 0 && (*text == '-' || *text == '+')) {
    text++;
    len--;
  }
  return equal_nocase (text, len, "inf") || equal_nocase (text, len,
      "infinity");
}

/* Parses a decimal number: [+-] digits [. digits] [e [+-] digits], or nan,
 * inf, infinity in any case. The result is the double nearest to the decimal
 * value, as strtod() gives: exactly computed when the significand fits in 53
 * bits and the power of ten is exact (one correctly rounded multiplication
 * or division), handed to g_ascii_strtod() otherwise. */
static gboolean
parse_double (const gchar * text, gsize len, gdouble * value)
{
  static const gdouble powers_of_ten[] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12,
    1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22
  };
  const gchar *p = text, *end = text + len;
  gboolean negative = FALSE, any_digit = FALSE, exact = TRUE;
  guint64 significand = 0;
  guint significant_digits = 0;
  gint64 exponent = 0;

  if (p < end && (*p == '-' || *p == '+')) {
    negative = *p == '-';
    p++;
  }
  if (p < end && !g_ascii_isdigit (*p) && *p != '.') {
    gsize rest = end - p;

    if (equal_nocase (p, rest, "nan"))
      *value = NAN;
    else if (equal_nocase (p, rest, "inf") || equal_nocase (p, rest,
            "infinity"))
      *value = negative ? -INFINITY : INFINITY;
    else
      return FALSE;
    return TRUE;
  }
  for (; p < end && g_ascii_isdigit (*p); p++) {
    any_digit = TRUE;
    if (significant_digits < 19) {
      significand = significand * 10 + (*p - '0');
      significant_digits += significand != 0;
    } else {
      exact = FALSE;
    }
  }
  if (p < end && *p == '.') {
    for (p++; p < end && g_ascii_isdigit (*p); p++) {
      any_digit = TRUE;
      if (significant_digits < 19) {
        significand = significand * 10 + (*p - '0');
        significant_digits += significand != 0;
        exponent--;
      } else {
        exact = FALSE;
      }
    }
  }
  if (!any_digit)
    return FALSE;
  if (p < end && (*p == 'e' || *p == 'E')) {
    gboolean exponent_negative = FALSE;
    gint64 written = 0;
    const gchar *first_digit;

    p++;
    if (p < end && (*p == '-' || *p == '+')) {
      exponent_negative = *p == '-';
      p++;
    }
    first_digit = p;
    for (; p < end && g_ascii_isdigit (*p); p++)
      if (written < 100000)
        written = written * 10 + (*p - '0');
    if (p == first_digit)
      return FALSE;
    exponent += exponent_negative ? -written : written;
  }
  if (p != end)
    return FALSE;

  if (exact && significand <= (G_GUINT64_CONSTANT (1) << 53)
      && exponent >= -22 && exponent <= 22) {
    gdouble v = (gdouble) significand;

    v = exponent < 0 ? v / powers_of_ten[-exponent] :
        v * powers_of_ten[exponent];
    *value = negative ? -v : v;
  } else {
    /* rare: more than 19 digits or a large exponent; the syntax is checked
     * above, so strtod reads the same number */
    gchar *copy = g_strndup (text, len);

    *value = g_ascii_strtod (copy, NULL);
    g_free (copy);
  }
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* Header */

typedef enum
{
  KW_VERSION,
  KW_FIELDS,
  KW_SIZE,
  KW_TYPE,
  KW_COUNT,
  KW_WIDTH,
  KW_HEIGHT,
  KW_VIEWPOINT,
  KW_POINTS,
  KW_DATA,
  N_KEYWORDS
} Keyword;

static const gchar *const keyword_names[N_KEYWORDS] = {
  "VERSION", "FIELDS", "SIZE", "TYPE", "COUNT", "WIDTH", "HEIGHT",
  "VIEWPOINT", "POINTS", "DATA"
};

/* What the header lines said, before they are checked against each other
 * (the spec fixes their order, but files in the wild do not all follow it). */
typedef struct
{
  /* line number of each keyword's line, 0 when absent */
  gsize line[N_KEYWORDS];
  GArray *names;                /* Token */
  GArray *sizes;                /* guint64 */
  GArray *types;                /* Token */
  GArray *counts;               /* guint64 */
  guint64 width, height, points;
  gdouble viewpoint[7];
  Token version;
  P3dPcdData data;
  GArray *tokens;               /* Token, the current line's */
} HeaderLines;

static void
header_lines_init (HeaderLines * h)
{
  memset (h, 0, sizeof (*h));
  h->names = g_array_new (FALSE, FALSE, sizeof (Token));
  h->sizes = g_array_new (FALSE, FALSE, sizeof (guint64));
  h->types = g_array_new (FALSE, FALSE, sizeof (Token));
  h->counts = g_array_new (FALSE, FALSE, sizeof (guint64));
  h->tokens = g_array_new (FALSE, FALSE, sizeof (Token));
}

static void
header_lines_free (HeaderLines * h)
{
  g_array_free (h->names, TRUE);
  g_array_free (h->sizes, TRUE);
  g_array_free (h->types, TRUE);
  g_array_free (h->counts, TRUE);
  g_array_free (h->tokens, TRUE);
}

static void
tokenize (const gchar * line, gsize len, GArray * tokens)
{
  gsize i = 0;

  g_array_set_size (tokens, 0);
  while (i < len) {
    Token token;

    while (i < len && is_space (line[i]))
      i++;
    if (i == len)
      break;
    token.start = line + i;
    while (i < len && !is_space (line[i]))
      i++;
    token.len = line + i - token.start;
    g_array_append_val (tokens, token);
  }
}

static gboolean
token_is (const Token * token, const gchar * word)
{
  return strlen (word) == token->len
      && memcmp (token->start, word, token->len) == 0;
}

static gboolean
read_single_u64 (const Token * values, guint n_values, Keyword keyword,
    gsize line_no, guint64 * value, GError ** error)
{
  gchar *text;

  if (n_values != 1) {
    set_error (error, P3D_PCD_ERROR_HEADER, AT_LINE (line_no),
        "%s takes one value, found %u", keyword_names[keyword], n_values);
    return FALSE;
  }
  if (parse_u64 (&values[0], value))
    return TRUE;
  text = quote (values[0].start, values[0].len);
  set_error (error, P3D_PCD_ERROR_HEADER, AT_LINE (line_no),
      "%s '%s' is not a whole number from 0 to " "%" G_GUINT64_FORMAT,
      keyword_names[keyword], text, G_MAXUINT64);
  g_free (text);
  return FALSE;
}

/* SIZE and COUNT entries: whole numbers; their ranges are checked once the
 * field names are known, so that the message can name the field. */
static gboolean
read_u64_list (const Token * values, guint n_values, Keyword keyword,
    gsize line_no, GArray * out, GError ** error)
{
  guint i;

  for (i = 0; i < n_values; i++) {
    guint64 v;
    gchar *text;

    if (parse_u64 (&values[i], &v)) {
      g_array_append_val (out, v);
      continue;
    }
    text = quote (values[i].start, values[i].len);
    set_error (error, P3D_PCD_ERROR_HEADER, AT_LINE (line_no),
        "%s entry %u '%s' is not a whole number", keyword_names[keyword], i + 1,
        text);
    g_free (text);
    return FALSE;
  }
  return TRUE;
}

static gboolean
read_keyword_line (HeaderLines * h, Keyword keyword, const Token * values,
    guint n_values, gsize line_no, GError ** error)
{
  guint i;
  gchar *text;

  switch (keyword) {
    case KW_VERSION:
      if (n_values != 1
          || values[0].len >= G_SIZEOF_MEMBER (P3dPcdHeader, version)) {
        text =
            n_values ? quote (values[0].start, values[0].len) : g_strdup ("");
        /* say which of the two is wrong: the count, or the length */
        if (n_values == 1)
          set_error (error, P3D_PCD_ERROR_HEADER, AT_LINE (line_no),
              "VERSION takes one value of at most 7 characters, '%s' has %"
              G_GSIZE_FORMAT, text, values[0].len);
        else
          set_error (error, P3D_PCD_ERROR_HEADER, AT_LINE (line_no),
              "VERSION takes one value of at most 7 characters, found %u "
              "values ('%s')", n_values, text);
        g_free (text);
        return FALSE;
      }
      h->version = values[0];
      return TRUE;
    case KW_FIELDS:
      if (n_values == 0) {
        set_error (error, P3D_PCD_ERROR_HEADER, AT_LINE (line_no),
            "FIELDS names no field");
        return FALSE;
      }
      for (i = 0; i < n_values; i++) {
        if (values[i].len >= G_SIZEOF_MEMBER (P3dPcdField, name)) {
          text = quote (values[i].start, values[i].len);
          set_error (error, P3D_PCD_ERROR_HEADER, AT_LINE (line_no),
              "field name '%s' is longer than 63 " "bytes", text);
          g_free (text);
          return FALSE;
        }
      }
      g_array_append_vals (h->names, values, n_values);
      return TRUE;
    case KW_SIZE:
      return read_u64_list (values, n_values, keyword, line_no, h->sizes,
          error);
    case KW_COUNT:
      return read_u64_list (values, n_values, keyword, line_no, h->counts,
          error);
    case KW_TYPE:
      g_array_append_vals (h->types, values, n_values);
      return TRUE;
    case KW_WIDTH:
      return read_single_u64 (values, n_values, keyword, line_no, &h->width,
          error);
    case KW_HEIGHT:
      return read_single_u64 (values, n_values, keyword, line_no, &h->height,
          error);
    case KW_POINTS:
      return read_single_u64 (values, n_values, keyword, line_no, &h->points,
          error);
    case KW_VIEWPOINT:
      if (n_values != 7) {
        set_error (error, P3D_PCD_ERROR_HEADER, AT_LINE (line_no),
            "VIEWPOINT has %u values, expected 7 " "(tx ty tz qw qx qy qz)",
            n_values);
        return FALSE;
      }
      for (i = 0; i < 7; i++) {
        if (!parse_double (values[i].start, values[i].len, &h->viewpoint[i])) {
          text = quote (values[i].start, values[i].len);
          set_error (error, P3D_PCD_ERROR_HEADER, AT_LINE (line_no),
              "VIEWPOINT value %u '%s' is not a " "number", i + 1, text);
          g_free (text);
          return FALSE;
        }
      }
      return TRUE;
    case KW_DATA:
      if (n_values == 1 && token_is (&values[0], "ascii")) {
        h->data = P3D_PCD_DATA_ASCII;
      } else if (n_values == 1 && token_is (&values[0], "binary")) {
        h->data = P3D_PCD_DATA_BINARY;
      } else if (n_values == 1 && token_is (&values[0], "binary_compressed")) {
        h->data = P3D_PCD_DATA_BINARY_COMPRESSED;
      } else {
        text =
            n_values ? quote (values[0].start, values[0].len) : g_strdup ("");
        set_error (error, P3D_PCD_ERROR_HEADER, AT_LINE (line_no),
            "DATA '%s' with %u values; expected one "
            "of ascii, binary or binary_compressed", text, n_values);
        g_free (text);
        return FALSE;
      }
      return TRUE;
    default:
      g_assert_not_reached ();
  }
  return FALSE;
}

/* One header line; sets *is_data when it is the DATA line, the last one. */
static gboolean
read_header_line (HeaderLines * h, const gchar * line, gsize len,
    gsize line_no, gboolean * is_data, GError ** error)
{
  const Token *tokens;
  Keyword keyword;
  gchar *text;

  *is_data = FALSE;
  if (memchr (line, '\0', len)) {
    set_error (error, P3D_PCD_ERROR_HEADER, AT_LINE (line_no),
        "NUL byte in the header: this is not a PCD " "file");
    return FALSE;
  }
  tokenize (line, len, h->tokens);
  tokens = (const Token *) h->tokens->data;
  if (h->tokens->len == 0 || tokens[0].start[0] == '#')
    return TRUE;
  for (keyword = 0; keyword < N_KEYWORDS; keyword++)
    if (token_is (&tokens[0], keyword_names[keyword]))
      break;
  /* v0.5 files call the field names COLUMNS */
  if (keyword == N_KEYWORDS && token_is (&tokens[0], "COLUMNS"))
    keyword = KW_FIELDS;
  if (keyword == N_KEYWORDS) {
    text = quote (tokens[0].start, tokens[0].len);
    set_error (error, P3D_PCD_ERROR_HEADER, AT_LINE (line_no),
        "unknown header keyword '%s' (a PCD header "
        "has VERSION, FIELDS, SIZE, TYPE, COUNT, WIDTH, HEIGHT, VIEWPOINT, "
        "POINTS, DATA): this is not a PCD file or its header is damaged", text);
    g_free (text);
    return FALSE;
  }
  if (h->line[keyword] != 0) {
    set_error (error, P3D_PCD_ERROR_HEADER, AT_LINE (line_no),
        "a second %s line (the first is line %" G_GSIZE_FORMAT ")",
        keyword_names[keyword], h->line[keyword]);
    return FALSE;
  }
  h->line[keyword] = line_no;
  *is_data = keyword == KW_DATA;
  return read_keyword_line (h, keyword, tokens + 1, h->tokens->len - 1,
      line_no, error);
}

static gboolean
check_entry_count (const HeaderLines * h, Keyword keyword, guint entries,
    GError ** error)
{
  if (h->line[keyword] == 0 || entries == h->names->len)
    return TRUE;
  set_error (error, P3D_PCD_ERROR_INCONSISTENT, AT_LINE (h->line[keyword]),
      "%s has %u entries but FIELDS has %u", keyword_names[keyword], entries,
      h->names->len);
  return FALSE;
}

static gboolean
field_type_is_valid (gchar type, guint64 size)
{
  if (type == 'F')
    return size == 4 || size == 8;
  return (type == 'I' || type == 'U') && (size == 1 || size == 2 || size == 4
      || size == 8);
}

/* Builds the fields from the FIELDS, SIZE, TYPE and COUNT lines (with the
 * defaults of old files: SIZE 4, TYPE F, COUNT 1). */
static gboolean
build_fields (const HeaderLines * h, P3dPcdHeader * header, GError ** error)
{
  guint n = h->names->len, i;
  guint64 stride = 0;

  if (!check_entry_count (h, KW_SIZE, h->sizes->len, error)
      || !check_entry_count (h, KW_TYPE, h->types->len, error)
      || !check_entry_count (h, KW_COUNT, h->counts->len, error))
    return FALSE;
  header->n_fields = n;
  header->fields = g_new0 (P3dPcdField, n);
  for (i = 0; i < n; i++) {
    P3dPcdField *field = &header->fields[i];
    const Token *name = &g_array_index (h->names, Token, i);
    guint64 size = h->line[KW_SIZE] ? g_array_index (h->sizes, guint64, i) : 4;
    guint64 count = h->line[KW_COUNT] ?
        g_array_index (h->counts, guint64, i) : 1;
    gchar type = 'F';
    gchar *name_text;

    memcpy (field->name, name->start, name->len);
    field->name[name->len] = '\0';
    if (h->line[KW_TYPE]) {
      const Token *type_token = &g_array_index (h->types, Token, i);

      type = type_token->start[0];
      if (type_token->len != 1 || (type != 'I' && type != 'U' && type != 'F')) {
        gchar *text = quote (type_token->start, type_token->len);

        name_text = quote_string (field->name);
        set_error (error, P3D_PCD_ERROR_TYPE, AT_LINE (h->line[KW_TYPE]),
            "unknown TYPE '%s' for field '%s' " "(expected I, U or F)", text,
            name_text);
        g_free (text);
        g_free (name_text);
        return FALSE;
      }
    }
    if (!field_type_is_valid (type, size)) {
      name_text = quote_string (field->name);
      set_error (error, P3D_PCD_ERROR_TYPE, AT_LINE (h->line[KW_SIZE]),
          "SIZE %" G_GUINT64_FORMAT " is not valid "
          "for TYPE %c of field '%s' (I and U take 1, 2, 4 or 8 bytes, F 4 or "
          "8)", size, type, name_text);
      g_free (name_text);
      return FALSE;
    }
    if (count == 0 || count > G_MAXUINT32) {
      name_text = quote_string (field->name);
      set_error (error, P3D_PCD_ERROR_HEADER, AT_LINE (h->line[KW_COUNT]),
          "COUNT %" G_GUINT64_FORMAT " of field "
          "'%s' is outside 1..4294967295", count, name_text);
      g_free (name_text);
      return FALSE;
    }
    field->size = (guint) size;
    field->type = type;
    field->count = (guint32) count;
    field->offset = (gsize) stride;
    /* at most 8 * (2^32 - 1) per field, checked below after each field */
    stride += size * count;
    if (stride > G_MAXUINT32) {
      name_text = quote_string (field->name);
      set_error (error, P3D_PCD_ERROR_TOO_LARGE,
          AT_LINE (h->line[KW_COUNT] ? h->line[KW_COUNT] : h->line[KW_FIELDS]),
          "SIZE x COUNT of the fields through '%s' " "is %" G_GUINT64_FORMAT
          " bytes per point, more than 4 GiB", name_text, stride);
      g_free (name_text);
      return FALSE;
    }
  }
  header->point_stride = (gsize) stride;
  return TRUE;
}

/* WIDTH, HEIGHT and POINTS, with the defaults of old files: POINTS is
 * WIDTH*HEIGHT, HEIGHT 1, and a header with POINTS only is one row. */
static gboolean
build_dimensions (const HeaderLines * h, P3dPcdHeader * header, GError ** error)
{
  if (h->line[KW_WIDTH] == 0) {
    if (h->line[KW_HEIGHT] != 0) {
      set_error (error, P3D_PCD_ERROR_HEADER, AT_LINE (h->line[KW_HEIGHT]),
          "HEIGHT without a WIDTH line");
      return FALSE;
    }
    if (h->line[KW_POINTS] == 0) {
      set_error (error, P3D_PCD_ERROR_HEADER, AT_LINE (h->line[KW_DATA]),
          "the header has neither WIDTH nor POINTS");
      return FALSE;
    }
    header->width = h->points;
    header->height = 1;
    header->points = h->points;
  } else {
    header->width = h->width;
    header->height = h->line[KW_HEIGHT] ? h->height : 1;
    if (header->height != 0 && header->width > G_MAXUINT64 / header->height) {
      set_error (error, P3D_PCD_ERROR_TOO_LARGE, AT_LINE (h->line[KW_WIDTH]),
          "WIDTH %" G_GUINT64_FORMAT " x HEIGHT %" G_GUINT64_FORMAT
          " does not fit in 64 bits", header->width, header->height);
      return FALSE;
    }
    header->points = header->width * header->height;
    if (h->line[KW_POINTS] != 0 && h->points != header->points) {
      set_error (error, P3D_PCD_ERROR_INCONSISTENT,
          AT_LINE (h->line[KW_POINTS]),
          "POINTS %" G_GUINT64_FORMAT " but " "WIDTH*HEIGHT = %"
          G_GUINT64_FORMAT, h->points, header->points);
      return FALSE;
    }
  }
  if (header->point_stride != 0
      && header->points > G_MAXUINT64 / header->point_stride) {
    set_error (error, P3D_PCD_ERROR_TOO_LARGE,
        AT_LINE (h->line[KW_POINTS] ? h->line[KW_POINTS] : h->line[KW_WIDTH]),
        "%" G_GUINT64_FORMAT " points of %" G_GSIZE_FORMAT
        " bytes do not fit in 64 bits", header->points, header->point_stride);
    return FALSE;
  }
  return TRUE;
}

static gboolean
build_header (const HeaderLines * h, P3dPcdHeader * header, GError ** error)
{
  static const gdouble identity_viewpoint[7] = { 0, 0, 0, 1, 0, 0, 0 };

  if (h->line[KW_FIELDS] == 0) {
    set_error (error, P3D_PCD_ERROR_HEADER, AT_LINE (h->line[KW_DATA]),
        "the header has no FIELDS line");
    return FALSE;
  }
  if (h->version.len > 0)
    memcpy (header->version, h->version.start, h->version.len);
  header->version[h->version.len] = '\0';
  memcpy (header->viewpoint, h->line[KW_VIEWPOINT] ? h->viewpoint :
      identity_viewpoint, sizeof (header->viewpoint));
  header->data = h->data;
  return build_fields (h, header, error) && build_dimensions (h, header, error);
}

/* Reads the header line by line, rejecting a bad line as soon as it is
 * complete, so that a stream that is not PCD fails early. */
static Step
parse_header (const guint8 * bytes, gsize size, gboolean at_eos,
    P3dPcdHeader * header, GError ** error)
{
  HeaderLines h;
  gsize pos, line_no = 0, header_start, limit;
  gboolean is_data = FALSE;
  Step step = STEP_INVALID;

  memset (header, 0, sizeof (*header));
  header_lines_init (&h);
  for (pos = 0; pos < size && is_padding (bytes[pos]); pos++)
    line_no += bytes[pos] == '\n';
  if (pos > P3D_PCD_MAX_PADDING) {
    set_error (error, P3D_PCD_ERROR_HEADER, NOWHERE,
        "%" G_GSIZE_FORMAT " NUL or blank bytes and no header: this is not a "
        "PCD file", pos);
    goto out;
  }
  header_start = pos;
  limit = MIN (size, header_start + P3D_PCD_MAX_HEADER_SIZE);
  while (!is_data) {
    const guint8 *newline = pos < limit ?
        memchr (bytes + pos, '\n', limit - pos) : NULL;
    gsize line_end, next;

    if (newline) {
      line_end = newline - bytes;
      next = line_end + 1;
    } else if (size >= header_start + P3D_PCD_MAX_HEADER_SIZE) {
      set_error (error, P3D_PCD_ERROR_HEADER, AT_LINE (line_no + 1),
          "no DATA line within the first %d bytes: "
          "this is not a PCD file, or its header is damaged",
          P3D_PCD_MAX_HEADER_SIZE);
      goto out;
    } else if (!at_eos) {
      step = STEP_NEED_MORE;
      goto out;
    } else if (pos < size) {
      /* at the end of the stream the last line needs no newline */
      line_end = next = size;
    } else {
      set_error (error, P3D_PCD_ERROR_TRUNCATED, NOWHERE,
          "truncated: the header ends at byte %" G_GSIZE_FORMAT " (line %"
          G_GSIZE_FORMAT ") without a DATA line", size, line_no);
      goto out;
    }
    line_no++;
    if (!read_header_line (&h, (const gchar *) bytes + pos, line_end - pos,
            line_no, &is_data, error))
      goto out;
    pos = next;
  }
  header->header_size = pos;
  header->header_lines = line_no;
  step = build_header (&h, header, error) ? STEP_OK : STEP_INVALID;

out:
  header_lines_free (&h);
  if (step != STEP_OK)
    p3d_pcd_header_clear (header);
  return step;
}

gboolean
p3d_pcd_header_parse (const guint8 * bytes, gsize size,
    P3dPcdHeader * header, GError ** error)
{
  g_return_val_if_fail (bytes != NULL || size == 0, FALSE);
  g_return_val_if_fail (header != NULL, FALSE);

  return parse_header (bytes, size, TRUE, header, error) == STEP_OK;
}

void
p3d_pcd_header_clear (P3dPcdHeader * header)
{
  g_return_if_fail (header != NULL);

  g_free (header->fields);
  memset (header, 0, sizeof (*header));
}

/* ------------------------------------------------------------------------ */
/* Where the data ends */

static guint64
values_per_line (const P3dPcdHeader * header)
{
  guint64 values = 0;
  guint i;

  for (i = 0; i < header->n_fields; i++)
    values += header->fields[i].count;
  return values;
}

/* binary_compressed data starts with two little-endian uint32: the sizes of
 * the LZF data that follows and of what it decompresses to. */
static Step
locate_compressed (const P3dPcdHeader * header, const guint8 * bytes,
    gsize size, gboolean at_eos, guint64 * end, guint32 * compressed_size,
    GError ** error)
{
  guint64 expected = header->points * header->point_stride;
  gsize start = header->header_size;
  guint32 sizes[2];

  if (size < start || size - start < 8) {
    if (!at_eos) {
      *end = (guint64) start + 8;
      return STEP_NEED_MORE;
    }
    set_error (error, P3D_PCD_ERROR_TRUNCATED, NOWHERE,
        "truncated: binary_compressed data needs 8 bytes of sizes at byte %"
        G_GSIZE_FORMAT ", %" G_GSIZE_FORMAT " bytes present", start,
        size > start ? size - start : 0);
    return STEP_INVALID;
  }
  memcpy (sizes, bytes + start, 8);
  *compressed_size = GUINT32_FROM_LE (sizes[0]);
  if (GUINT32_FROM_LE (sizes[1]) != expected) {
    set_error (error, P3D_PCD_ERROR_INCONSISTENT, AT_BYTE (start + 4),
        "binary_compressed data announces %u "
        "uncompressed bytes, but the header's %" G_GUINT64_FORMAT " points of "
        "%" G_GSIZE_FORMAT " bytes take %" G_GUINT64_FORMAT,
        GUINT32_FROM_LE (sizes[1]), header->points, header->point_stride,
        expected);
    return STEP_INVALID;
  }
  if (expected > (guint64) * compressed_size * LZF_MAX_EXPANSION) {
    set_error (error, P3D_PCD_ERROR_INCONSISTENT, AT_BYTE (start),
        "%u bytes of LZF data cannot decompress to " "the %" G_GUINT64_FORMAT
        " bytes the header announces (LZF expands " "at most %d times)",
        *compressed_size, expected, LZF_MAX_EXPANSION);
    return STEP_INVALID;
  }
  /* LZF stores bytes it cannot compress as literal runs of up to 32 bytes
   * behind one control byte, so its output is never shorter than its
   * input by more than that: a larger size cannot be valid, and is refused
   * before any of it is waited for. */
  if (*compressed_size > expected + (expected + 31) / 32 + 1) {
    set_error (error, P3D_PCD_ERROR_INCONSISTENT, AT_BYTE (start),
        "%u bytes of LZF data cannot decompress to as few as the %"
        G_GUINT64_FORMAT " bytes the header announces (LZF output is at "
        "least 32/33 of its input)", *compressed_size, expected);
    return STEP_INVALID;
  }
  *end = (guint64) start + 8 + *compressed_size;
  if (*end <= size)
    return STEP_OK;
  if (!at_eos)
    return STEP_NEED_MORE;
  set_error (error, P3D_PCD_ERROR_TRUNCATED, NOWHERE,
      "truncated: header announces %" G_GUINT64_FORMAT " points in %u bytes "
      "of LZF data from byte %" G_GSIZE_FORMAT ", %" G_GSIZE_FORMAT " bytes "
      "present", header->points, *compressed_size, start + 8, size - start - 8);
  return STEP_INVALID;
}

/* The end of the values on the ASCII line [start, end): a '#' starts a
 * comment. No value holds one, and so a last line without a newline that
 * runs into the "# .PCD v0.7" line that PCL writes first still reads. */
static gsize
ascii_values_end (const guint8 * bytes, gsize start, gsize end)
{
  const guint8 *hash = memchr (bytes + start, '#', end - start);

  return hash ? (gsize) (hash - bytes) : end;
}

/* ASCII data is POINTS non-blank lines; the last may end without a newline
 * at the end of the stream. On NEED_MORE, *end is the least size the file
 * can have: each line still missing needs its values, one byte each, the
 * separators between them and a newline (but the last). */
static Step
locate_ascii (const P3dPcdHeader * header, const guint8 * bytes, gsize size,
    gboolean at_eos, guint64 * end, P3dPcdProgress * progress, GError ** error)
{
  guint64 lines = 0, missing, line_bytes;
  gsize pos = header->header_size;

  while (lines < header->points && pos < size) {
    const guint8 *newline = memchr (bytes + pos, '\n', size - pos);
    gsize line_end = newline ? (gsize) (newline - bytes) : size;

    if (!newline && !at_eos)
      break;
    if (!is_blank (bytes + pos, ascii_values_end (bytes, pos, line_end) - pos))
      lines++;
    pos = newline ? line_end + 1 : size;
  }
  if (lines == header->points) {
    *end = pos;
    return STEP_OK;
  }
  if (!at_eos) {
    missing = header->points - lines;
    if (progress) {
      progress->lines_missing = missing;
      progress->lines_end = pos;
    }
    line_bytes = saturating_mul (values_per_line (header), 2);
    *end = saturating_add (pos, saturating_mul (missing, line_bytes) - 1);
    *end = MAX (*end, (guint64) size + 1);
    return STEP_NEED_MORE;
  }
  set_error (error, P3D_PCD_ERROR_TRUNCATED, NOWHERE,
      "truncated: header announces %" G_GUINT64_FORMAT " points, %"
      G_GUINT64_FORMAT " lines of ASCII data present", header->points, lines);
  return STEP_INVALID;
}

/* Where the file that @header starts ends: *end, a byte count from the
 * start of @bytes (a lower bound of it on NEED_MORE). */
static Step
locate_data (const P3dPcdHeader * header, const guint8 * bytes, gsize size,
    gboolean at_eos, guint64 * end, guint32 * compressed_size,
    P3dPcdProgress * progress, GError ** error)
{
  guint64 data_bytes = header->points * header->point_stride;

  switch (header->data) {
    case P3D_PCD_DATA_BINARY:
      *end = saturating_add (header->header_size, data_bytes);
      if (*end <= size)
        return STEP_OK;
      if (!at_eos)
        return STEP_NEED_MORE;
      set_error (error, P3D_PCD_ERROR_TRUNCATED, NOWHERE,
          "truncated: header announces %" G_GUINT64_FORMAT " points (%"
          G_GUINT64_FORMAT " bytes), %" G_GSIZE_FORMAT " bytes present",
          header->points, data_bytes,
          size > header->header_size ? size - header->header_size : 0);
      return STEP_INVALID;
    case P3D_PCD_DATA_BINARY_COMPRESSED:
      return locate_compressed (header, bytes, size, at_eos, end,
          compressed_size, error);
    case P3D_PCD_DATA_ASCII:
      return locate_ascii (header, bytes, size, at_eos, end, progress, error);
    default:
      g_assert_not_reached ();
  }
  return STEP_INVALID;
}

P3dPcdScan
p3d_pcd_scan (const guint8 * bytes, gsize size, gboolean at_eos,
    P3dPcdHeader * header, gsize * file_size, GError ** error)
{
  return p3d_pcd_scan_progress (bytes, size, at_eos, header, file_size, NULL,
      error);
}

P3dPcdScan
p3d_pcd_scan_progress (const guint8 * bytes, gsize size, gboolean at_eos,
    P3dPcdHeader * header, gsize * file_size, P3dPcdProgress * progress,
    GError ** error)
{
  P3dPcdHeader parsed;
  guint64 end = 0;
  guint32 compressed_size = 0;
  Step step;

  g_return_val_if_fail (bytes != NULL || size == 0, P3D_PCD_INVALID);
  g_return_val_if_fail (file_size != NULL, P3D_PCD_INVALID);

  if (header)
    memset (header, 0, sizeof (*header));
  *file_size = 0;
  if (progress)
    memset (progress, 0, sizeof (*progress));
  /* (more padding than allowed is refused by parse_header, at the end of
   * the stream as before it) */
  if (at_eos && is_trailer (bytes, size)
      && leading_padding (bytes, size) <= P3D_PCD_MAX_PADDING) {
    *file_size = size + 1;
    return P3D_PCD_NEED_MORE;
  }
  step = parse_header (bytes, size, at_eos, &parsed, error);
  if (step == STEP_NEED_MORE) {
    *file_size = size + 1;
    return P3D_PCD_NEED_MORE;
  }
  if (step == STEP_INVALID)
    return P3D_PCD_INVALID;
  step = locate_data (&parsed, bytes, size, at_eos, &end, &compressed_size,
      progress, error);
  if (step == STEP_NEED_MORE && progress) {
    progress->have_header = TRUE;
    progress->data = parsed.data;
    progress->points = parsed.points;
    progress->header_size = parsed.header_size;
  }
  if (step == STEP_OK) {
    *file_size = (gsize) end;
    if (header)
      *header = parsed;
    else
      p3d_pcd_header_clear (&parsed);
    return P3D_PCD_COMPLETE;
  }
  p3d_pcd_header_clear (&parsed);
  if (step == STEP_INVALID)
    return P3D_PCD_INVALID;
  *file_size = (gsize) MIN (end, (guint64) G_MAXSIZE);
  return P3D_PCD_NEED_MORE;
}

void
p3d_pcd_line_counter_init (P3dPcdLineCounter * counter)
{
  memset (counter, 0, sizeof (*counter));
}

/* The same rule as locate_ascii(): a line is a point when something other
 * than white space comes before its first '#'. */
void
p3d_pcd_line_counter_feed (P3dPcdLineCounter * counter, const guint8 * bytes,
    gsize size)
{
  gsize i;

  for (i = 0; i < size; i++) {
    guint8 c = bytes[i];

    if (c == '\n') {
      counter->lines += counter->has_values;
      counter->has_values = FALSE;
      counter->in_comment = FALSE;
    } else if (counter->in_comment) {
      continue;
    } else if (c == '#') {
      counter->in_comment = TRUE;
    } else if (!is_space (c)) {
      counter->has_values = TRUE;
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Channels */

#define MAX_CHANNELS 6

/* Field names each channel letter accepts, in order of preference. */
static const gchar *const *
channel_aliases (gchar letter)
{
  static const gchar *const x[] = { "x", NULL };
  static const gchar *const y[] = { "y", NULL };
  static const gchar *const z[] = { "z", NULL };
  static const gchar *const intensity[] =
      { "intensity", "i", "reflectance", "remission", NULL };
  static const gchar *const time[] = { "t", "time", "timestamp", NULL };
  static const gchar *const ring[] = { "ring", "r", NULL };

  switch (letter) {
    case 'x':
      return x;
    case 'y':
      return y;
    case 'z':
      return z;
    case 'i':
      return intensity;
    case 't':
      return time;
    case 'r':
      return ring;
    default:
      return NULL;
  }
}

gboolean
p3d_pcd_format_is_valid (const gchar * channels, GError ** error)
{
  gsize i, n = channels ? strlen (channels) : 0;
  const gchar *required;

  if (n == 0) {
    set_error (error, P3D_PCD_ERROR_FORMAT, NOWHERE,
        "empty point-cloud format (expected channels such as 'xyzi')");
    return FALSE;
  }
  for (i = 0; i < n; i++) {
    gchar *text;

    if (channel_aliases (channels[i]) && !strchr (channels + i + 1,
            channels[i]))
      continue;
    text = quote (channels, n);
    if (channel_aliases (channels[i]))
      set_error (error, P3D_PCD_ERROR_FORMAT, NOWHERE,
          "format '%s': channel '%c' appears twice", text, channels[i]);
    else
      set_error (error, P3D_PCD_ERROR_FORMAT, NOWHERE,
          "format '%s': unknown channel at position %" G_GSIZE_FORMAT
          " (channels are x, y, z, i, t, r)", text, i);
    g_free (text);
    return FALSE;
  }
  for (required = "xyz"; *required; required++) {
    if (!strchr (channels, *required)) {
      set_error (error, P3D_PCD_ERROR_FORMAT, NOWHERE,
          "format '%s' has no channel '%c' (x, y and z are required)", channels,
          *required);
      return FALSE;
    }
  }
  return TRUE;
}

static gint
find_field (const P3dPcdHeader * header, gchar letter)
{
  const gchar *const *alias;
  guint i;

  for (alias = channel_aliases (letter); *alias; alias++)
    for (i = 0; i < header->n_fields; i++)
      if (g_ascii_strcasecmp (header->fields[i].name, *alias) == 0)
        return (gint) i;
  return -1;
}

/* The field of each channel (-1: none, the channel is 0), and where x, y
 * and z are among the channels. */
typedef struct
{
  guint n_channels;
  gint field[MAX_CHANNELS];
  guint x, y, z;
} ChannelMap;

static gboolean
map_channels (const P3dPcdHeader * header, const gchar * channels,
    ChannelMap * map, GError ** error)
{
  guint c, i;

  memset (map, 0, sizeof (*map));
  if (!p3d_pcd_format_is_valid (channels, error))
    return FALSE;
  map->n_channels = strlen (channels);
  for (c = 0; c < map->n_channels; c++) {
    map->field[c] = find_field (header, channels[c]);
    if (channels[c] == 'x')
      map->x = c;
    else if (channels[c] == 'y')
      map->y = c;
    else if (channels[c] == 'z')
      map->z = c;
    if (map->field[c] < 0 && strchr ("xyz", channels[c])) {
      GString *names = g_string_new (NULL);
      gchar *text;

      for (i = 0; i < header->n_fields && names->len < 200; i++)
        g_string_append_printf (names, "%s%s", i ? " " : "",
            header->fields[i].name);
      text = quote (names->str, names->len);
      set_error (error, P3D_PCD_ERROR_FIELD, NOWHERE,
          "the file has no field '%c' (its fields: %s)", channels[c], text);
      g_free (text);
      g_string_free (names, TRUE);
      return FALSE;
    }
  }
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* Decoding */

static guint16
load_u16 (const guint8 * p)
{
  guint16 v;

  memcpy (&v, p, sizeof (v));
  return GUINT16_FROM_LE (v);
}

static guint32
load_u32 (const guint8 * p)
{
  guint32 v;

  memcpy (&v, p, sizeof (v));
  return GUINT32_FROM_LE (v);
}

static guint64
load_u64 (const guint8 * p)
{
  guint64 v;

  memcpy (&v, p, sizeof (v));
  return GUINT64_FROM_LE (v);
}

static gfloat
load_f32 (const guint8 * p)
{
  guint32 bits = load_u32 (p);
  gfloat v;

  memcpy (&v, &bits, sizeof (v));
  return v;
}

static gdouble
load_f64 (const guint8 * p)
{
  guint64 bits = load_u64 (p);
  gdouble v;

  memcpy (&v, &bits, sizeof (v));
  return v;
}

#define CONVERT_LOOP(expr) \
  for (k = 0; k < n; k++, src += src_step, dst += dst_step) \
    *dst = (gfloat) (expr)

/* n values of @field, each @src_step bytes after the previous, to floats
 * @dst_step floats apart. The switch is outside the loops so that each loop
 * is a plain load-convert-store. */
static void
convert_field (const P3dPcdField * field, const guint8 * src, gsize src_step,
    gsize n, gfloat * dst, gsize dst_step)
{
  gsize k;

  switch (field->type * 16 + field->size) {
    case 'I' * 16 + 1:
      CONVERT_LOOP ((gint8) src[0]);
      break;
    case 'I' * 16 + 2:
      CONVERT_LOOP ((gint16) load_u16 (src));
      break;
    case 'I' * 16 + 4:
      CONVERT_LOOP ((gint32) load_u32 (src));
      break;
    case 'I' * 16 + 8:
      CONVERT_LOOP ((gint64) load_u64 (src));
      break;
    case 'U' * 16 + 1:
      CONVERT_LOOP (src[0]);
      break;
    case 'U' * 16 + 2:
      CONVERT_LOOP (load_u16 (src));
      break;
    case 'U' * 16 + 4:
      CONVERT_LOOP (load_u32 (src));
      break;
    case 'U' * 16 + 8:
      CONVERT_LOOP (load_u64 (src));
      break;
    case 'F' * 16 + 4:
      CONVERT_LOOP (load_f32 (src));
      break;
    case 'F' * 16 + 8:
      CONVERT_LOOP (load_f64 (src));
      break;
    default:
      g_assert_not_reached ();
  }
}

static void
zero_channel (gfloat * dst, gsize n, gsize dst_step)
{
  gsize k;

  for (k = 0; k < n; k++)
    dst[k * dst_step] = 0.0f;
}

/* Row-major records (binary) and column-major fields (decompressed
 * binary_compressed) differ only in where a field's values are and how far
 * apart. */
static void
convert_records (const P3dPcdHeader * header, const ChannelMap * map,
    const guint8 * data, gboolean column_major, gfloat * out)
{
  gsize n = (gsize) header->points;
  guint c;

  for (c = 0; c < map->n_channels; c++) {
    const P3dPcdField *field;

    if (map->field[c] < 0) {
      zero_channel (out + c, n, map->n_channels);
      continue;
    }
    field = &header->fields[map->field[c]];
    if (column_major)
      convert_field (field, data + n * field->offset,
          (gsize) field->size * field->count, n, out + c, map->n_channels);
    else
      convert_field (field, data + field->offset, header->point_stride, n,
          out + c, map->n_channels);
  }
}

/* Points of which a float64 field holds a finite value beyond the float32
 * range (it became infinite). */
static gsize
count_f64_overflow (const P3dPcdHeader * header, const ChannelMap * map,
    const guint8 * data, gboolean column_major)
{
  gsize n = (gsize) header->points, k, count = 0;
  guint c;

  for (k = 0; k < n; k++) {
    for (c = 0; c < map->n_channels; c++) {
      const P3dPcdField *field;
      gdouble d;

      if (map->field[c] < 0)
        continue;
      field = &header->fields[map->field[c]];
      if (field->type != 'F' || field->size != 8)
        continue;
      d = column_major ?
          load_f64 (data + n * field->offset + k * 8 * field->count) :
          load_f64 (data + field->offset + k * header->point_stride);
      if (isfinite (d) && isinf ((gfloat) d)) {
        count++;
        break;
      }
    }
  }
  return count;
}

static gboolean
map_has_f64 (const P3dPcdHeader * header, const ChannelMap * map)
{
  guint c;

  for (c = 0; c < map->n_channels; c++)
    if (map->field[c] >= 0 && header->fields[map->field[c]].type == 'F'
        && header->fields[map->field[c]].size == 8)
      return TRUE;
  return FALSE;
}

static gboolean
decode_compressed (const P3dPcdHeader * header, const ChannelMap * map,
    const guint8 * bytes, guint32 compressed_size, gfloat * out,
    gsize * n_overflow, GError ** error)
{
  gsize start = header->header_size + 8;
  gsize expected = (gsize) (header->points * header->point_stride);
  guint8 *plain;
  guint produced;

  if (expected == 0)
    return TRUE;
  plain = g_try_malloc (expected);
  if (!plain) {
    set_error (error, P3D_PCD_ERROR_TOO_LARGE, AT_BYTE (start),
        "cannot allocate the %" G_GSIZE_FORMAT
        " bytes the LZF data decompresses to", expected);
    return FALSE;
  }
  produced = lzf_decompress (bytes + start, compressed_size, plain,
      (guint) expected);
  if (produced != expected) {
    set_error (error, P3D_PCD_ERROR_DATA, AT_BYTE (start),
        "LZF data does not decompress to the %" G_GSIZE_FORMAT
        " bytes the header announces (%s)", expected,
        produced ? "it gives fewer" : "it is damaged or gives more");
    g_free (plain);
    return FALSE;
  }
  convert_records (header, map, plain, TRUE, out);
  if (map_has_f64 (header, map))
    *n_overflow = count_f64_overflow (header, map, plain, TRUE);
  g_free (plain);
  return TRUE;
}

/* The value index on an ASCII line of each channel's field (element 0),
 * sorted, so that a line is read in one pass over its tokens. */
typedef struct
{
  guint64 token;
  guint channel;
} Wanted;

static gint
compare_wanted (gconstpointer a, gconstpointer b)
{
  const Wanted *wa = a, *wb = b;

  return wa->token < wb->token ? -1 : wa->token > wb->token;
}

static guint
ascii_wanted (const P3dPcdHeader * header, const ChannelMap * map,
    Wanted * wanted)
{
  guint c, n = 0;

  for (c = 0; c < map->n_channels; c++) {
    guint64 token = 0;
    gint f;

    if (map->field[c] < 0)
      continue;
    for (f = 0; f < map->field[c]; f++)
      token += header->fields[f].count;
    wanted[n].token = token;
    wanted[n].channel = c;
    n++;
  }
  qsort (wanted, n, sizeof (Wanted), compare_wanted);
  return n;
}

/* Sets *@overflow when a finite value became infinite as a float. */
static gboolean
parse_ascii_value (const P3dPcdField * field, const gchar * text, gsize len,
    gfloat * value, gboolean * overflow)
{
  gdouble d;

  if (field->type != 'F' && parse_integer_as_float (text, len, value))
    return TRUE;
  if (!parse_double (text, len, &d))
    return FALSE;
  *value = (gfloat) d;
  /* 1e400 is a finite number too, that strtod makes infinite */
  if (isinf (*value) && !equal_nocase_infinity (text, len))
    *overflow = TRUE;
  return TRUE;
}

static gboolean
decode_ascii (const P3dPcdHeader * header, const ChannelMap * map,
    const guint8 * bytes, gsize size, gfloat * out, gsize * n_overflow,
    GError ** error)
{
  const gchar *text = (const gchar *) bytes;
  guint64 expected_values = values_per_line (header);
  Wanted wanted[MAX_CHANNELS];
  guint n_wanted = ascii_wanted (header, map, wanted);
  gsize pos = header->header_size, line_no = header->header_lines;
  guint64 point = 0;
  guint c;

  while (point < header->points) {
    gfloat *row = out + point * map->n_channels;
    const gchar *newline;
    gsize line_end, values_end, i;
    guint64 token = 0;
    guint w = 0;
    gboolean overflow = FALSE;

    /* out of lines: truncated, said below */
    if (pos >= size)
      break;
    newline = memchr (text + pos, '\n', size - pos);
    line_end = newline ? (gsize) (newline - text) : size;
    values_end = ascii_values_end (bytes, pos, line_end);
    line_no++;
    for (i = pos; i < values_end; token++) {
      gsize start;

      while (i < values_end && is_space (text[i]))
        i++;
      if (i == values_end)
        break;
      start = i;
      while (i < values_end && !is_space (text[i]))
        i++;
      if (w < n_wanted && wanted[w].token == token) {
        const P3dPcdField *field =
            &header->fields[map->field[wanted[w].channel]];

        if (!parse_ascii_value (field, text + start, i - start,
                &row[wanted[w].channel], &overflow)) {
          gchar *value = quote (text + start, i - start);
          gchar *name = quote_string (field->name);

          set_error (error, P3D_PCD_ERROR_DATA, AT_POINT (point, line_no), ""
              "value '%s' of field '%s' is not a number", value, name);
          g_free (value);
          g_free (name);
          return FALSE;
        }
        w++;
      }
    }
    pos = newline ? line_end + 1 : size;
    if (token == 0)
      continue;
    if (token != expected_values) {
      set_error (error, P3D_PCD_ERROR_DATA, AT_POINT (point, line_no), "%"
          G_GUINT64_FORMAT " values, expected %" G_GUINT64_FORMAT, token,
          expected_values);
      return FALSE;
    }
    for (c = 0; c < map->n_channels; c++)
      if (map->field[c] < 0)
        row[c] = 0.0f;
    *n_overflow += overflow;
    point++;
  }
  if (point < header->points) {
    set_error (error, P3D_PCD_ERROR_TRUNCATED, NOWHERE,
        "truncated: header announces %" G_GUINT64_FORMAT " points, %"
        G_GUINT64_FORMAT " lines of ASCII data present", header->points, point);
    return FALSE;
  }
  return TRUE;
}

/* Moves the points with finite x, y and z to the front; returns how many. */
static gsize
drop_nonfinite_points (const ChannelMap * map, gfloat * points, gsize n)
{
  gsize kept = 0, k;

  for (k = 0; k < n; k++) {
    const gfloat *row = points + k * map->n_channels;

    if (!isfinite (row[map->x]) || !isfinite (row[map->y])
        || !isfinite (row[map->z]))
      continue;
    if (kept != k)
      memmove (points + kept * map->n_channels, row,
          map->n_channels * sizeof (gfloat));
    kept++;
  }
  return kept;
}

/* Checks, before anything is allocated or decoded, that the data can be in
 * @size bytes: binary data is there, binary_compressed data is there and
 * within what LZF can expand to, ASCII data has at least 2 bytes per point
 * (the lines themselves are found while decoding, in the same pass). */
static gboolean
check_data_present (const P3dPcdHeader * header, const guint8 * bytes,
    gsize size, guint32 * compressed_size, GError ** error)
{
  guint64 end = 0, available;

  if (header->data != P3D_PCD_DATA_ASCII)
    return locate_data (header, bytes, size, TRUE, &end, compressed_size,
        NULL, error) == STEP_OK;
  available = size > header->header_size ? size - header->header_size : 0;
  if (header->points <= (available + 1) / 2)
    return TRUE;
  set_error (error, P3D_PCD_ERROR_TRUNCATED, NOWHERE,
      "truncated: header announces %" G_GUINT64_FORMAT " points, the %"
      G_GUINT64_FORMAT " bytes of ASCII data cannot hold them", header->points,
      available);
  return FALSE;
}

gboolean
p3d_pcd_decode_into (const P3dPcdHeader * header, const guint8 * bytes,
    gsize size, const gchar * channels, gboolean drop_nonfinite,
    gfloat * points, gsize capacity, gsize * n_points, gsize * n_dropped,
    gsize * n_overflow, GError ** error)
{
  ChannelMap map;
  gsize overflow = 0;
  guint32 compressed_size = 0;
  gsize n;
  gboolean ok;

  g_return_val_if_fail (header != NULL && header->fields != NULL, FALSE);
  g_return_val_if_fail (bytes != NULL || size == 0, FALSE);
  g_return_val_if_fail (n_points != NULL, FALSE);

  *n_points = 0;
  if (n_dropped)
    *n_dropped = 0;
  if (n_overflow)
    *n_overflow = 0;
  if (!map_channels (header, channels, &map, error))
    return FALSE;
  if (header->points > capacity / map.n_channels) {
    set_error (error, P3D_PCD_ERROR_TOO_LARGE, NOWHERE,
        "%" G_GUINT64_FORMAT " points of %u channels do not fit in the %"
        G_GSIZE_FORMAT " floats given", header->points, map.n_channels,
        capacity);
    return FALSE;
  }
  if (!check_data_present (header, bytes, size, &compressed_size, error))
    return FALSE;
  n = (gsize) header->points;
  switch (header->data) {
    case P3D_PCD_DATA_BINARY:
      convert_records (header, &map, bytes + header->header_size, FALSE,
          points);
      if (map_has_f64 (header, &map))
        overflow = count_f64_overflow (header, &map,
            bytes + header->header_size, FALSE);
      ok = TRUE;
      break;
    case P3D_PCD_DATA_BINARY_COMPRESSED:
      ok = decode_compressed (header, &map, bytes, compressed_size, points,
          &overflow, error);
      break;
    case P3D_PCD_DATA_ASCII:
      ok = decode_ascii (header, &map, bytes, size, points, &overflow, error);
      break;
    default:
      g_assert_not_reached ();
  }
  if (!ok)
    return FALSE;
  *n_points = drop_nonfinite ? drop_nonfinite_points (&map, points, n) : n;
  if (n_dropped)
    *n_dropped = n - *n_points;
  if (n_overflow)
    *n_overflow = overflow;
  return TRUE;
}

gboolean
p3d_pcd_decode (const P3dPcdHeader * header, const guint8 * bytes,
    gsize size, const gchar * channels, gboolean drop_nonfinite,
    gfloat ** points, gsize * n_points, gsize * n_dropped, GError ** error)
{
  guint32 compressed_size = 0;
  gsize n_channels, capacity;
  gfloat *out;

  g_return_val_if_fail (header != NULL && header->fields != NULL, FALSE);
  g_return_val_if_fail (points != NULL && n_points != NULL, FALSE);

  *points = NULL;
  *n_points = 0;
  if (n_dropped)
    *n_dropped = 0;
  if (!p3d_pcd_format_is_valid (channels, error))
    return FALSE;
  /* the data is there, so the points are bounded by the input's size (LZF
   * expands at most 88 times) and the allocation below is not absurd */
  if (!check_data_present (header, bytes, size, &compressed_size, error))
    return FALSE;
  n_channels = strlen (channels);
  if (header->points > G_MAXSIZE / sizeof (gfloat) / n_channels) {
    set_error (error, P3D_PCD_ERROR_TOO_LARGE, NOWHERE,
        "%" G_GUINT64_FORMAT " points of %" G_GSIZE_FORMAT " channels do not "
        "fit in memory", header->points, n_channels);
    return FALSE;
  }
  capacity = (gsize) header->points * n_channels;
  if (capacity == 0) {
    gfloat none[MAX_CHANNELS];

    return p3d_pcd_decode_into (header, bytes, size, channels,
        drop_nonfinite, none, 0, n_points, n_dropped, NULL, error);
  }
  out = g_try_new (gfloat, capacity);
  if (!out) {
    set_error (error, P3D_PCD_ERROR_TOO_LARGE, NOWHERE,
        "cannot allocate %" G_GUINT64_FORMAT " points of %" G_GSIZE_FORMAT
        " channels", header->points, n_channels);
    return FALSE;
  }
  if (!p3d_pcd_decode_into (header, bytes, size, channels, drop_nonfinite,
          out, capacity, n_points, n_dropped, NULL, error)) {
    g_free (out);
    return FALSE;
  }
  if (*n_points == 0) {
    g_free (out);
    out = NULL;
  } else if (*n_points < header->points) {
    out = g_realloc_n (out, *n_points * n_channels, sizeof (gfloat));
  }
  *points = out;
  return TRUE;
}
