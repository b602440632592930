/* libFuzzer target for the box text parser (gst/p3dboxtext.c): the input is
 * text as boxparse receives it, one line at a time, read as JSON lines and
 * as KITTI label lines, of 3D, 2D and unknown kind (the first byte picks
 * which). Every box it accepts must be written back by the encoder's own
 * functions and read back to the same box, bit for bit: a box that boxenc
 * writes must be one that boxparse reads. Any broken promise aborts;
 * AddressSanitizer and UndefinedBehaviorSanitizer catch the rest. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p3dboxtext.h"

#define CHECK(cond) \
  G_STMT_START { \
    if (!(cond)) { \
      fprintf (stderr, "%s:%d: broken promise: %s\n", __FILE__, __LINE__, \
          #cond); \
      abort (); \
    } \
  } G_STMT_END

static gboolean
same_float (gfloat a, gfloat b)
{
  /* NaN reads back as NaN, whatever its payload */
  if (isnan (a) || isnan (b))
    return isnan (a) && isnan (b);
  return memcmp (&a, &b, sizeof (a)) == 0;
}

static void
check_box3d (const P3dcBox3d * a, const P3dcBox3d * b)
{
  CHECK (same_float (a->x, b->x) && same_float (a->y, b->y)
      && same_float (a->z, b->z) && same_float (a->dx, b->dx)
      && same_float (a->dy, b->dy) && same_float (a->dz, b->dz)
      && same_float (a->yaw, b->yaw) && same_float (a->score, b->score)
      && a->label == b->label);
}

static void
check_box2d (const P3dcBox2d * a, const P3dcBox2d * b)
{
  CHECK (same_float (a->x1, b->x1) && same_float (a->y1, b->y1)
      && same_float (a->x2, b->x2) && same_float (a->y2, b->y2)
      && same_float (a->score, b->score) && a->label == b->label);
}

/* A message is set exactly for ERROR and UNKNOWN_LABEL, and GStreamer can
 * print it. */
static void
check_why (P3dBoxLineType type, gchar * why)
{
  gboolean wants = type == P3D_BOX_LINE_ERROR
      || type == P3D_BOX_LINE_UNKNOWN_LABEL;

  CHECK (wants == (why != NULL));
  if (why && type == P3D_BOX_LINE_ERROR) {
    CHECK (why[0] != '\0');
    CHECK (g_utf8_validate (why, -1, NULL));
  }
  g_free (why);
}

/* Writes the box as JSON (and KITTI for the fields KITTI keeps) and reads
 * it back. */
static void
round_trip (const P3dBoxLine * line, gchar ** labels)
{
  GString *text = g_string_new (NULL);
  P3dBoxLine back;
  gchar *why = NULL;
  P3dBoxLineType type;

  if (line->kind == P3D_BOX_KIND_3D)
    p3d_box_text_append_json_box3d (text, &line->box3d);
  else
    p3d_box_text_append_json_box2d (text, &line->box2d);
  g_strchomp (text->str);
  type = p3d_box_text_parse_json (text->str, line->kind, &back, &why);
  if (type != P3D_BOX_LINE_BOX)
    fprintf (stderr, "wrote '%s', read back: %s\n", text->str, why);
  CHECK (type == P3D_BOX_LINE_BOX);
  CHECK (back.kind == line->kind);
  if (line->kind == P3D_BOX_KIND_3D)
    check_box3d (&line->box3d, &back.box3d);
  else
    check_box2d (&line->box2d, &back.box2d);
  g_free (why);

  g_string_truncate (text, 0);
  if (line->kind == P3D_BOX_KIND_3D)
    p3d_box_text_append_kitti_box3d (text, &line->box3d, labels);
  else
    p3d_box_text_append_kitti_box2d (text, &line->box2d, labels);
  type = p3d_box_text_parse_kitti (text->str, line->kind, labels, &back, &why);
  if (type != P3D_BOX_LINE_BOX)
    fprintf (stderr, "wrote '%s', read back: %s\n", text->str, why);
  CHECK (type == P3D_BOX_LINE_BOX);
  if (line->kind == P3D_BOX_KIND_3D)
    check_box3d (&line->box3d, &back.box3d);
  else
    check_box2d (&line->box2d, &back.box2d);
  g_free (why);
  g_string_free (text, TRUE);
}

static void
parse_line (const gchar * line, gboolean kitti, P3dBoxKind kind,
    gchar ** labels)
{
  P3dBoxLine out;
  gchar *why = NULL;
  P3dBoxLineType type = kitti ?
      p3d_box_text_parse_kitti (line, kind, labels, &out, &why) :
      p3d_box_text_parse_json (line, kind, &out, &why);

  CHECK (type >= P3D_BOX_LINE_BLANK && type <= P3D_BOX_LINE_ERROR);
  check_why (type, why);
  if (type == P3D_BOX_LINE_FRAME) {
    /* the element trusts these ranges */
    CHECK (out.count >= -1 && out.count <= (gint64) G_MAXUINT32);
    CHECK (out.frame <= (guint64) G_MAXINT64);
    CHECK (out.pts == P3D_BOX_TEXT_NO_PTS || out.pts <= (guint64) G_MAXINT64);
  }
  if (type == P3D_BOX_LINE_BOX) {
    CHECK (out.kind == P3D_BOX_KIND_3D || out.kind == P3D_BOX_KIND_2D);
    CHECK (kind == P3D_BOX_KIND_UNKNOWN || out.kind == kind);
    round_trip (&out, labels);
  }
}

int LLVMFuzzerTestOneInput (const guint8 * data, size_t size);

int
LLVMFuzzerTestOneInput (const guint8 * data, size_t size)
{
  static gchar **labels = NULL;
  gchar *text, **lines;
  P3dBoxKind kind;
  gboolean kitti;
  guint i;

  if (labels == NULL) {
    gchar *why = NULL;

    labels = p3d_box_text_parse_labels (P3D_BOX_TEXT_DEFAULT_LABELS, &why);
    CHECK (labels != NULL && why == NULL);
  }
  if (size == 0)
    return 0;
  kitti = data[0] & 1;
  kind = (P3dBoxKind) ((data[0] >> 1) % 3);
  /* the element hands the parser NUL-terminated lines */
  text = g_strndup ((const gchar *) data + 1, size - 1);
  lines = g_strsplit (text, "\n", -1);
  for (i = 0; lines[i] != NULL; i++)
    parse_line (lines[i], kitti, kind, labels);
  g_strfreev (lines);
  g_free (text);
  return 0;
}
