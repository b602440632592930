/* Drawing into an RGBA image: see p3dcanvas.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "p3dcanvas.h"

/* How far outside the image a line is clipped: far enough that its pixels
 * inside are the ones of the unclipped line, near enough for int. */
#define CLIP_MARGIN 2.0

/* Scores at least this large are not written (they would not fit). */
#define MAX_SCORE_WRITTEN 1e6

P3dColor
p3d_color_for_label (gint32 label)
{
  static const P3dColor palette[8] = {
    P3D_RGB (255, 0, 255),      /* magenta: car */
    P3D_RGB (255, 255, 255),    /* white: pedestrian */
    P3D_RGB (255, 140, 0),      /* orange: cyclist */
    P3D_RGB (170, 110, 255),    /* violet */
    P3D_RGB (255, 130, 170),    /* pink */
    P3D_RGB (150, 255, 230),    /* mint */
    P3D_RGB (190, 190, 90),     /* olive */
    P3D_RGB (150, 150, 150),    /* grey */
  };
  /* a label's palette entry, negative labels included */
  guint index = (guint) (((label % 8) + 8) % 8);

  return palette[index];
}

/* Pixels. */

P3dColor
p3d_canvas_get_pixel (const P3dCanvas * canvas, gint column, gint row)
{
  const guint8 *p;

  if (column < 0 || column >= canvas->width || row < 0 || row >= canvas->height)
    return 0;
  p = canvas->pixels + (gsize) row *canvas->stride + (gsize) column *4;
  return ((guint32) p[3] << 24) | ((guint32) p[0] << 16) |
      ((guint32) p[1] << 8) | p[2];
}

void
p3d_canvas_put_pixel (P3dCanvas * canvas, gint column, gint row, P3dColor color)
{
  if (column < 0 || column >= canvas->width || row < 0 || row >= canvas->height)
    return;
  p3d_canvas_store (p3d_canvas_pixel (canvas, column, row), color);
}

void
p3d_canvas_fill_span (P3dCanvas * canvas, gint row, gint first, gint last,
    P3dColor color)
{
  guint8 *p;
  gint column;

  if (row < 0 || row >= canvas->height)
    return;
  first = MAX (first, 0);
  last = MIN (last, canvas->width - 1);
  if (first > last)
    return;
  p = p3d_canvas_pixel (canvas, first, row);
  for (column = first; column <= last; column++, p += 4)
    p3d_canvas_store (p, color);
}

void
p3d_canvas_clear (P3dCanvas * canvas, P3dColor color)
{
  gint row;

  if (canvas->height <= 0)
    return;
  p3d_canvas_fill_span (canvas, 0, 0, canvas->width - 1, color);
  for (row = 1; row < canvas->height; row++)
    memcpy (p3d_canvas_pixel (canvas, 0, row), canvas->pixels,
        (gsize) canvas->width * 4);
}

/* Liang-Barsky: clips the segment to [umin, umax] x [vmin, vmax]; FALSE
 * when nothing of it is inside. */
static gboolean
clip_segment (gdouble * u0, gdouble * v0, gdouble * u1, gdouble * v1,
    gdouble umin, gdouble umax, gdouble vmin, gdouble vmax)
{
  gdouble du = *u1 - *u0, dv = *v1 - *v0;
  gdouble p[4] = { -du, du, -dv, dv };
  gdouble q[4] = { *u0 - umin, umax - *u0, *v0 - vmin, vmax - *v0 };
  gdouble t0 = 0.0, t1 = 1.0;
  guint k;

  for (k = 0; k < 4; k++) {
    if (p[k] == 0.0) {
      if (q[k] < 0.0)
        return FALSE;
    } else {
      gdouble t = q[k] / p[k];

      if (p[k] < 0.0) {
        if (t > t1)
          return FALSE;
        t0 = MAX (t0, t);
      } else {
        if (t < t0)
          return FALSE;
        t1 = MIN (t1, t);
      }
    }
  }
  if (t1 < 1.0) {
    *u1 = *u0 + t1 * du;
    *v1 = *v0 + t1 * dv;
  }
  if (t0 > 0.0) {
    *u0 = *u0 + t0 * du;
    *v0 = *v0 + t0 * dv;
  }
  return TRUE;
}

void
p3d_canvas_draw_line (P3dCanvas * canvas, gdouble u0, gdouble v0,
    gdouble u1, gdouble v1, P3dColor color)
{
  p3d_canvas_draw_wide_line (canvas, u0, v0, u1, v1, 1, color);
}

void
p3d_canvas_draw_wide_line (P3dCanvas * canvas, gdouble u0,
    gdouble v0, gdouble u1, gdouble v1, guint width, P3dColor color)
{
  gint x0, y0, x1, y1, dx, dy, sx, sy, error, side, before;
  gdouble margin;

  if (!isfinite (u0) || !isfinite (v0) || !isfinite (u1) || !isfinite (v1))
    return;
  side = (gint) CLAMP (width, 1, P3D_CANVAS_MAX_LINE_WIDTH);
  before = (side - 1) / 2;
  /* a wide line just outside the image still shows its inner side */
  margin = CLIP_MARGIN + side;
  if (!clip_segment (&u0, &v0, &u1, &v1, -margin, canvas->width + margin,
          -margin, canvas->height + margin))
    return;
  x0 = (gint) floor (u0);
  y0 = (gint) floor (v0);
  x1 = (gint) floor (u1);
  y1 = (gint) floor (v1);

  /* Bresenham, all octants */
  dx = ABS (x1 - x0);
  dy = -ABS (y1 - y0);
  sx = x0 < x1 ? 1 : -1;
  sy = y0 < y1 ? 1 : -1;
  error = dx + dy;
  for (;;) {
    gint twice;

    if (side == 1)
      p3d_canvas_put_pixel (canvas, x0, y0, color);
    else
      p3d_canvas_fill_pixels (canvas, x0 - before, y0 - before, side,
          side, color);
    if (x0 == x1 && y0 == y1)
      break;
    twice = 2 * error;
    if (twice >= dy) {
      error += dy;
      x0 += sx;
    }
    if (twice <= dx) {
      error += dx;
      y0 += sy;
    }
  }
}

/* Glyphs of 7 rows, 5 columns each, bit 4 the leftmost column, in the
 * order of glyph_chars. */
static const gchar glyph_chars[] =
    "0123456789.-abcdefghijklmnopqrstuvwxyz:/()+=,";
static const guint8 glyphs[][P3D_CANVAS_GLYPH_HEIGHT] = {
  {0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e},   /* 0 */
  {0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e},   /* 1 */
  {0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f},   /* 2 */
  {0x1f, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0e},   /* 3 */
  {0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02},   /* 4 */
  {0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e},   /* 5 */
  {0x06, 0x08, 0x10, 0x1e, 0x11, 0x11, 0x0e},   /* 6 */
  {0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08},   /* 7 */
  {0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e},   /* 8 */
  {0x0e, 0x11, 0x11, 0x0f, 0x01, 0x02, 0x0c},   /* 9 */
  {0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0c},   /* . */
  {0x00, 0x00, 0x00, 0x0e, 0x00, 0x00, 0x00},   /* - */
  {0x00, 0x00, 0x0e, 0x01, 0x0f, 0x11, 0x0f},   /* a */
  {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1e},   /* b */
  {0x00, 0x00, 0x0e, 0x10, 0x10, 0x11, 0x0e},   /* c */
  {0x01, 0x01, 0x0d, 0x13, 0x11, 0x11, 0x0f},   /* d */
  {0x00, 0x00, 0x0e, 0x11, 0x1f, 0x10, 0x0e},   /* e */
  {0x06, 0x09, 0x08, 0x1c, 0x08, 0x08, 0x08},   /* f */
  {0x00, 0x0f, 0x11, 0x11, 0x0f, 0x01, 0x0e},   /* g */
  {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11},   /* h */
  {0x04, 0x00, 0x0c, 0x04, 0x04, 0x04, 0x0e},   /* i */
  {0x02, 0x00, 0x06, 0x02, 0x02, 0x12, 0x0c},   /* j */
  {0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12},   /* k */
  {0x0c, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e},   /* l */
  {0x00, 0x00, 0x1a, 0x15, 0x15, 0x11, 0x11},   /* m */
  {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11},   /* n */
  {0x00, 0x00, 0x0e, 0x11, 0x11, 0x11, 0x0e},   /* o */
  {0x00, 0x00, 0x1e, 0x11, 0x1e, 0x10, 0x10},   /* p */
  {0x00, 0x00, 0x0d, 0x13, 0x0f, 0x01, 0x01},   /* q */
  {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10},   /* r */
  {0x00, 0x00, 0x0e, 0x10, 0x0e, 0x01, 0x1e},   /* s */
  {0x08, 0x08, 0x1c, 0x08, 0x08, 0x09, 0x06},   /* t */
  {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0d},   /* u */
  {0x00, 0x00, 0x11, 0x11, 0x11, 0x0a, 0x04},   /* v */
  {0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0a},   /* w */
  {0x00, 0x00, 0x11, 0x0a, 0x04, 0x0a, 0x11},   /* x */
  {0x00, 0x00, 0x11, 0x11, 0x0f, 0x01, 0x0e},   /* y */
  {0x00, 0x00, 0x1f, 0x02, 0x04, 0x08, 0x1f},   /* z */
  {0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x0c, 0x00},   /* : */
  {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00},   /* / */
  {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02},   /* ( */
  {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08},   /* ) */
  {0x00, 0x04, 0x04, 0x1f, 0x04, 0x04, 0x00},   /* + */
  {0x00, 0x00, 0x1f, 0x00, 0x1f, 0x00, 0x00},   /* = */
  {0x00, 0x00, 0x00, 0x00, 0x0c, 0x04, 0x08},   /* , */
};

G_STATIC_ASSERT (G_N_ELEMENTS (glyphs) == sizeof (glyph_chars) - 1);

static gint
glyph_index (gchar c)
{
  const gchar *found;

  if (c == '\0')
    return -1;
  found = strchr (glyph_chars, g_ascii_tolower (c));
  return found != NULL ? (gint) (found - glyph_chars) : -1;
}

gint
p3d_canvas_text_width (const gchar * text)
{
  gsize n = strlen (text);

  return n == 0 ? 0 : (gint) n *(P3D_CANVAS_GLYPH_WIDTH + 1) - 1;
}

void
p3d_canvas_draw_text (P3dCanvas * canvas, gint column, gint row,
    const gchar * text, P3dColor color)
{
  const gchar *c;

  for (c = text; *c != '\0'; c++, column += P3D_CANVAS_GLYPH_WIDTH + 1) {
    gint glyph = glyph_index (*c), r, x;

    if (glyph < 0)
      continue;
    for (r = 0; r < P3D_CANVAS_GLYPH_HEIGHT; r++)
      for (x = 0; x < P3D_CANVAS_GLYPH_WIDTH; x++)
        if (glyphs[glyph][r] & (0x10 >> x))
          p3d_canvas_put_pixel (canvas, column + x, row + r, color);
  }
}

void
p3d_canvas_fill_pixels (P3dCanvas * canvas, gint column, gint row,
    gint width, gint height, P3dColor color)
{
  gint r;

  for (r = MAX (row, 0); r < MIN (row + height, canvas->height); r++)
    p3d_canvas_fill_span (canvas, r, column, column + width - 1, color);
}


gint
p3d_canvas_floor_clamped (gdouble value, gint low, gint high)
{
  if (!(value >= low))
    return low;
  if (value >= high)
    return high;
  return (gint) floor (value);
}

/* A score's place in the image: columns [c0, c1), rows [r0, r1). */
typedef struct
{
  gint c0, r0, c1, r1;
} LabelRect;

static gboolean
label_fits (const P3dCanvas * canvas, const LabelRect * rect,
    const LabelRect * placed, guint n_placed)
{
  guint i;

  if (rect->c0 < 0 || rect->r0 < 0 || rect->c1 > canvas->width
      || rect->r1 > canvas->height)
    return FALSE;
  /* one blank pixel between two scores */
  for (i = 0; i < n_placed; i++)
    if (rect->c0 <= placed[i].c1 && placed[i].c0 <= rect->c1
        && rect->r0 <= placed[i].r1 && placed[i].r0 <= rect->r1)
      return FALSE;
  return TRUE;
}

typedef struct
{
  guint32 index;
  gfloat score;
} ScoreOrder;

/* Highest score first; ties in input order. */
static gint
compare_scores (gconstpointer a, gconstpointer b)
{
  const ScoreOrder *sa = a, *sb = b;

  if (sa->score != sb->score)
    return sa->score > sb->score ? -1 : 1;
  return sa->index < sb->index ? -1 : (sa->index > sb->index);
}

void
p3d_canvas_draw_scores (P3dCanvas * canvas, const P3dCanvasScore * scores,
    guint32 count)
{
  ScoreOrder *order;
  LabelRect *placed;
  guint n_placed = 0;
  guint32 i;

  if (count == 0)
    return;
  order = g_new (ScoreOrder, count);
  placed = g_new (LabelRect, count);
  for (i = 0; i < count; i++) {
    order[i].index = i;
    order[i].score = scores[i].score;
  }
  qsort (order, count, sizeof (ScoreOrder), compare_scores);
  for (i = 0; i < count; i++) {
    const P3dCanvasScore *score = &scores[order[i].index];
    gchar text[G_ASCII_DTOSTR_BUF_SIZE];
    LabelRect candidates[4];
    gint width, c0, r0, c1, r1;
    guint k;

    if (!score->drawn || !isfinite (score->score)
        || fabs (score->score) >= MAX_SCORE_WRITTEN)
      continue;
    /* locale-independent: always a '.' */
    g_ascii_formatd (text, sizeof (text), "%.2f", score->score);
    width = p3d_canvas_text_width (text);
    c0 = score->c0;
    r0 = score->r0;
    c1 = score->c1;
    r1 = score->r1;
    /* right of the box (where a single box has it), left, above, below */
    candidates[0] = (LabelRect) {
    c1 + 2, r0, c1 + 2 + width, r0 + P3D_CANVAS_GLYPH_HEIGHT};
    candidates[1] = (LabelRect) {
    c0 - 2 - width, r0, c0 - 2, r0 + P3D_CANVAS_GLYPH_HEIGHT};
    candidates[2] = (LabelRect) {
    c0, r0 - 2 - P3D_CANVAS_GLYPH_HEIGHT, c0 + width, r0 - 2};
    candidates[3] = (LabelRect) {
    c0, r1 + 2, c0 + width, r1 + 2 + P3D_CANVAS_GLYPH_HEIGHT};
    for (k = 0; k < G_N_ELEMENTS (candidates); k++)
      if (label_fits (canvas, &candidates[k], placed, n_placed))
        break;
    if (k == G_N_ELEMENTS (candidates))
      continue;
    placed[n_placed++] = candidates[k];
    p3d_canvas_draw_text (canvas, candidates[k].c0, candidates[k].r0, text,
        score->color);
  }
  g_free (placed);
  g_free (order);
}
