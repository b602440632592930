/* libFuzzer target for the PCD reader core: the input is a byte stream as
 * pcdparse would receive it (one or more PCD files back to back, or
 * garbage). Every file that p3d_pcd_scan() finds is decoded with fixed and
 * input-derived channel formats, and the streaming contract is checked on
 * the way: what a prefix of the stream says must agree with what the whole
 * stream says. Any broken promise aborts, so the fuzzer reports it. Raw
 * PCD files are valid seeds: nothing in the input is reserved for control. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcdparse-reader.h"

#define CHECK(cond) \
  G_STMT_START { \
    if (!(cond)) { \
      fprintf (stderr, "%s:%d: broken promise: %s\n", __FILE__, __LINE__, \
          #cond); \
      abort (); \
    } \
  } G_STMT_END

/* FNV-1a: a cheap hash that changes with any mutation, so that every
 * input is tried with a different channel string and cut position. */
static guint32
hash_bytes (const guint8 * data, gsize size)
{
  guint32 h = 2166136261u;
  gsize i;

  for (i = 0; i < size; i++)
    h = (h ^ data[i]) * 16777619u;
  return h;
}

/* An error must be set exactly when a call fails, and its message must be
 * printable by GStreamer (valid UTF-8, not empty). */
static void
check_error (gboolean failed, GError ** error)
{
  CHECK (failed == (*error != NULL));
  if (*error) {
    CHECK ((*error)->domain == P3D_PCD_ERROR);
    CHECK ((*error)->message[0] != '\0');
    CHECK (g_utf8_validate ((*error)->message, -1, NULL));
  }
  g_clear_error (error);
}

/* A channel string from the hash: up to 7 letters of "xyzitrq", which is
 * sometimes valid, sometimes not (repeats, 'q', no x). */
static void
random_format (guint32 h, gchar * format)
{
  static const gchar letters[] = "xyzitrq";
  guint n = 1 + h % 7, i;

  h /= 7;
  for (i = 0; i < n; i++) {
    format[i] = letters[h % 7];
    h /= 7;
  }
  format[n] = '\0';
}

static gboolean
decode_file (const P3dPcdHeader * header, const guint8 * data, gsize size,
    const gchar * format, gboolean drop)
{
  GError *error = NULL;
  gfloat *points = NULL;
  gsize n_points = 12345, n_dropped = 12345;
  gboolean ok;

  ok = p3d_pcd_decode (header, data, size, format, drop, &points, &n_points,
      &n_dropped, &error);
  check_error (!ok, &error);
  if (ok) {
    gsize n_channels = strlen (format);

    CHECK (n_points + n_dropped == header->points);
    CHECK (drop || n_dropped == 0);
    CHECK ((points == NULL) == (n_points == 0));
    /* touch every value so ASan sees a short allocation */
    if (n_points > 0) {
      volatile gfloat sum = 0.0f;
      gsize k;

      for (k = 0; k < n_points * n_channels; k++)
        sum += points[k];
      (void) sum;
    }
  } else {
    CHECK (points == NULL && n_points == 0);
  }
  g_free (points);
  return ok;
}

/* A prefix of the stream, scanned as if more were to come, must never
 * contradict the whole stream. */
static void
check_prefix (const guint8 * data, gsize cut, P3dPcdScan whole,
    gsize whole_size, gboolean whole_valid)
{
  GError *error = NULL;
  gsize file_size = 0;
  P3dPcdScan part;

  part = p3d_pcd_scan (data, cut, FALSE, NULL, &file_size, &error);
  check_error (part == P3D_PCD_INVALID, &error);
  switch (part) {
    case P3D_PCD_COMPLETE:
      CHECK (file_size > 0 && file_size <= cut);
      CHECK (whole == P3D_PCD_COMPLETE && whole_size == file_size);
      break;
    case P3D_PCD_NEED_MORE:
      CHECK (file_size > cut);
      /* a valid file cannot be complete before the lower bound (an ASCII
       * file with lines too short for its fields may be) */
      if (whole_valid)
        CHECK (whole_size >= file_size);
      break;
    case P3D_PCD_INVALID:
      CHECK (file_size == 0);
      CHECK (whole == P3D_PCD_INVALID);
      break;
  }
}

int LLVMFuzzerTestOneInput (const guint8 * data, size_t size);

int
LLVMFuzzerTestOneInput (const guint8 * data, size_t size)
{
  static const gchar *const fixed_formats[] = { "xyz", "xyzir", "zyxti" };
  guint32 h = hash_bytes (data, size);
  gchar format[8];
  GError *error = NULL;
  P3dPcdHeader header;
  gsize offset = 0, file_size = 0;
  P3dPcdScan first = P3D_PCD_INVALID;
  gsize first_size = 0;
  gboolean first_valid = FALSE;
  guint files = 0;

  random_format (h, format);

  /* the stream as pcdparse sees it at EOS: file after file */
  while (files < 8) {
    P3dPcdScan scan = p3d_pcd_scan (data + offset, size - offset, TRUE,
        &header, &file_size, &error);
    guint i;

    check_error (scan == P3D_PCD_INVALID, &error);
    if (files == 0) {
      first = scan;
      first_size = file_size;
    }
    if (scan != P3D_PCD_COMPLETE) {
      CHECK (header.fields == NULL);
      if (scan == P3D_PCD_NEED_MORE)
        CHECK (file_size > size - offset);
      break;
    }
    CHECK (file_size > 0 && file_size <= size - offset);
    CHECK (header.fields != NULL && header.n_fields > 0);
    CHECK (header.header_size <= file_size);
    for (i = 0; i < G_N_ELEMENTS (fixed_formats); i++) {
      gboolean ok = decode_file (&header, data + offset, file_size,
          fixed_formats[i], (i + h) & 1);

      if (files == 0 && i == 0)
        first_valid = ok;
    }
    decode_file (&header, data + offset, file_size, format, h & 2);
    p3d_pcd_header_clear (&header);
    offset += file_size;
    files++;
  }

  /* the first file, scanned with the stream cut anywhere */
  {
    P3dPcdScan whole_open;
    gsize open_size = 0;

    whole_open = p3d_pcd_scan (data, size, FALSE, NULL, &open_size, &error);
    check_error (whole_open == P3D_PCD_INVALID, &error);
    /* more to come can only turn COMPLETE into NEED_MORE (an ASCII line
     * without newline), INVALID into NEED_MORE (truncated), never the
     * other way */
    if (whole_open == P3D_PCD_COMPLETE)
      CHECK (first == P3D_PCD_COMPLETE && first_size == open_size);
    if (whole_open == P3D_PCD_INVALID)
      CHECK (first == P3D_PCD_INVALID);
    check_prefix (data, size ? (h >> 8) % size : 0, first, first_size,
        first_valid);
    check_prefix (data, size / 2, first, first_size, first_valid);
  }

  /* the header alone, as the element might parse it */
  if (p3d_pcd_header_parse (data, size, &header, &error)) {
    CHECK (header.header_size <= size);
    decode_file (&header, data, size, format, TRUE);
  }
  check_error (header.fields == NULL && error != NULL, &error);
  p3d_pcd_header_clear (&header);
  return 0;
}
