/* Drawing into an RGBA image: pixels, lines, text, the colours of box
 * labels and score labels that do not overlap. bevrender draws its
 * bird's-eye view with it (bevrender-canvas.h), boxoverlay its boxes on
 * camera frames.
 *
 * GLib only, no GStreamer, so that the drawing is tested on its own.
 *
 * Everything is drawn by overwriting pixels, in the order the caller draws,
 * with integer colours and IEEE double arithmetic, so the same input gives
 * the same bytes on every machine.
 */
#ifndef __P3D_CANVAS_H__
#define __P3D_CANVAS_H__

#include <glib.h>

G_BEGIN_DECLS

/* Largest image side, in pixels. */
#define P3D_CANVAS_MAX_SIDE 16384
/* The widest line drawn, in pixels. */
#define P3D_CANVAS_MAX_LINE_WIDTH 8

/* Font: digits, lower-case letters (upper case is drawn as lower case),
 * and . - : / ( ) + = , each P3D_CANVAS_GLYPH_WIDTH x
 * P3D_CANVAS_GLYPH_HEIGHT pixels, one blank column between characters. */
#define P3D_CANVAS_GLYPH_WIDTH 5
#define P3D_CANVAS_GLYPH_HEIGHT 7

/* A colour as 0xAARRGGBB (as videotestsrc's colour properties). */
typedef guint32 P3dColor;

#define P3D_RGB(r, g, b) \
    ((P3dColor) (0xff000000u | ((guint32) (r) << 16) | \
        ((guint32) (g) << 8) | (guint32) (b)))

/**
 * P3dCanvas:
 * @pixels: RGBA, 4 bytes a pixel, rows @stride bytes apart
 *
 * The image being drawn.
 */
typedef struct
{
  guint8 *pixels;
  gint width;
  gint height;
  gsize stride;
} P3dCanvas;

/* The colour of boxes of @label: a palette of 8 colours, repeating (label
 * 0 magenta, 1 white, 2 orange: pointcloudtestsrc's car, pedestrian and
 * cyclist); bevrender's legend and boxoverlay show the same colours. */
P3dColor p3d_color_for_label (gint32 label);

/* The address of pixel (@column, @row), which must be inside the image. */
static inline guint8 *
p3d_canvas_pixel (const P3dCanvas * canvas, gint column, gint row)
{
  return canvas->pixels + (gsize) row *canvas->stride + (gsize) column *4;
}

/* Writes @color into the 4 bytes at @pixel. */
static inline void
p3d_canvas_store (guint8 * pixel, P3dColor color)
{
  pixel[0] = (guint8) (color >> 16);
  pixel[1] = (guint8) (color >> 8);
  pixel[2] = (guint8) color;
  pixel[3] = (guint8) (color >> 24);
}

/* The colour of pixel (@column, @row); 0 outside the image. */
P3dColor p3d_canvas_get_pixel (const P3dCanvas * canvas, gint column,
    gint row);
/* Sets the pixel, when it is inside the image. */
void p3d_canvas_put_pixel (P3dCanvas * canvas, gint column, gint row,
    P3dColor color);
void p3d_canvas_clear (P3dCanvas * canvas, P3dColor color);
/* Columns [@first, @last] of @row, clipped to the image. */
void p3d_canvas_fill_span (P3dCanvas * canvas, gint row, gint first,
    gint last, P3dColor color);
/* Fills the pixels [@column, @column + @width) x [@row, @row + @height),
 * clipped to the image. */
void p3d_canvas_fill_pixels (P3dCanvas * canvas, gint column, gint row,
    gint width, gint height, P3dColor color);

/* A line between two image positions (continuous coordinates, clipped to the
 * image first, so any finite value is safe). */
void p3d_canvas_draw_line (P3dCanvas * canvas, gdouble u0, gdouble v0,
    gdouble u1, gdouble v1, P3dColor color);
/* The same line drawn @width pixels wide: a square of side @width (1 at
 * least, P3D_CANVAS_MAX_LINE_WIDTH at most) at each of its pixels, the
 * square's centre pixel (its lower middle for an even side) on the line. */
void p3d_canvas_draw_wide_line (P3dCanvas * canvas, gdouble u0, gdouble v0,
    gdouble u1, gdouble v1, guint width, P3dColor color);

/* @text (the font's characters; others, space among them, leave a blank)
 * with its top left corner at (@column, @row). */
void p3d_canvas_draw_text (P3dCanvas * canvas, gint column, gint row,
    const gchar * text, P3dColor color);
/* Width in pixels of @text as draw_text draws it. */
gint p3d_canvas_text_width (const gchar * text);

/**
 * P3dCanvasScore:
 * @drawn: FALSE for a box that was not drawn: its score is not written
 * @c0: the first column of the box's pixels in the image
 * @r0: its first row
 * @c1: its last column
 * @r1: its last row
 * @score: written with two decimals
 * @color: of the text
 *
 * A score to write beside the pixels of its box.
 */
typedef struct
{
  gboolean drawn;
  gint c0, r0, c1, r1;
  gfloat score;
  P3dColor color;
} P3dCanvasScore;

/* Writes the scores of @count boxes, highest first (ties in input order),
 * each beside its box where it lies inside the image and at least one
 * pixel from every score already written: right of the box, else left,
 * above, below; or not at all, so that the scores of overlapping boxes
 * stay readable. Non-finite scores, and scores of 1e6 or more in size, are
 * not written. */
void p3d_canvas_draw_scores (P3dCanvas * canvas,
    const P3dCanvasScore * scores, guint32 count);

/* floor (@value) as an int, @value first clamped to [@low, @high] (NaN
 * gives @low). */
gint p3d_canvas_floor_clamped (gdouble value, gint low, gint high);

G_END_DECLS

#endif /* __P3D_CANVAS_H__ */
