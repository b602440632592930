/* Drawing a bird's-eye view on a canvas: see bevrender-canvas.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bevrender-canvas.h"
#include "box_overlap.h"
#include "half.h"

/* Sizes are rounded up, less this, so that a range that is a whole number
 * of pixels in decimal (20 m at 0.1 m) does not get an extra pixel from
 * the binary rounding of the division. */
#define SIZE_TOLERANCE 1e-6

static const gchar *
range_problem (const gdouble range[4])
{
  guint i;

  for (i = 0; i < 4; i++)
    if (!isfinite (range[i]))
      return "a bound is not finite";
  if (!(range[2] > range[0]))
    return "xmax is not above xmin";
  if (!(range[3] > range[1]))
    return "ymax is not above ymin";
  return NULL;
}

/* A side of the image: @given, or @extent / @scale rounded up. */
static gboolean
derive_side (gint given, gdouble extent, gdouble scale, const gchar * name,
    gint * side, gchar ** why)
{
  gdouble derived;

  if (given > 0) {
    *side = given;
    return TRUE;
  }
  derived = ceil (extent / scale - SIZE_TOLERANCE);
  if (!(derived <= P3D_BEV_MAX_SIDE)) {
    *why = g_strdup_printf ("%g m at %g m per pixel needs an image %s of %g "
        "pixels, more than %d", extent, scale, name, derived, P3D_BEV_MAX_SIDE);
    return FALSE;
  }
  *side = MAX ((gint) derived, 1);
  return TRUE;
}

gboolean
p3d_bev_view_init (P3dBevView * view, const gdouble range[4],
    gdouble metres_per_pixel, gint width, gint height, gchar ** why)
{
  const gchar *problem = range_problem (range);
  gdouble x_extent, y_extent, scale;

  *why = NULL;
  if (problem != NULL) {
    *why = g_strdup_printf ("range <%g, %g, %g, %g>: %s", range[0], range[1],
        range[2], range[3], problem);
    return FALSE;
  }
  if (!(metres_per_pixel >= 0.0) || !isfinite (metres_per_pixel)) {
    *why = g_strdup_printf ("metres per pixel %g is not a finite number >= 0",
        metres_per_pixel);
    return FALSE;
  }
  if (width < 0 || width > P3D_BEV_MAX_SIDE || height < 0
      || height > P3D_BEV_MAX_SIDE) {
    *why = g_strdup_printf ("image size %d x %d is beyond %d", width, height,
        P3D_BEV_MAX_SIDE);
    return FALSE;
  }
  x_extent = range[2] - range[0];
  y_extent = range[3] - range[1];

  if (metres_per_pixel > 0.0) {
    scale = metres_per_pixel;
  } else if (width > 0 || height > 0) {
    /* the smallest scale at which the range fits every side given */
    scale = 0.0;
    if (width > 0)
      scale = MAX (scale, y_extent / width);
    if (height > 0)
      scale = MAX (scale, x_extent / height);
  } else {
    scale = P3D_BEV_DEFAULT_METRES_PER_PIXEL;
  }
  if (!(scale > 0.0) || !isfinite (scale)) {
    *why = g_strdup_printf ("range <%g, %g, %g, %g> gives no usable scale",
        range[0], range[1], range[2], range[3]);
    return FALSE;
  }
  if (!derive_side (width, y_extent, scale, "width", &view->width, why)
      || !derive_side (height, x_extent, scale, "height", &view->height, why))
    return FALSE;
  view->metres_per_pixel = scale;
  view->left = (range[1] + range[3]) / 2.0 + view->width * scale / 2.0;
  view->top = (range[0] + range[2]) / 2.0 + view->height * scale / 2.0;
  return TRUE;
}

/* Colour maps: 256 colours interpolated (in integers) between anchors. */

typedef struct
{
  guint8 r, g, b;
} Anchor;

static const Anchor rainbow_anchors[] = {
  {40, 60, 255},                /* blue */
  {0, 200, 255},                /* cyan */
  {0, 230, 80},                 /* green */
  {255, 220, 0},                /* yellow */
  {255, 40, 40},                /* red */
};

/* R + G + B rises from anchor to anchor, so it rises along the map. */
static const Anchor heat_anchors[] = {
  {48, 0, 72},                  /* dark purple: 120 */
  {140, 0, 110},                /* purple: 250 */
  {230, 40, 40},                /* red: 310 */
  {255, 150, 0},                /* orange: 405 */
  {255, 255, 170},              /* pale yellow: 680 */
};

#define MAP_SIZE 256

static guint8
interpolate (guint8 a, guint8 b, guint position)
{
  return (guint8) ((a * (255u - position) + b * position + 127u) / 255u);
}

static void
fill_table (P3dColor * table, const Anchor * anchors, guint n_anchors)
{
  guint i;

  for (i = 0; i < MAP_SIZE; i++) {
    /* where entry i falls between anchors, in 255ths of a segment */
    guint along = i * (n_anchors - 1);
    guint segment = MIN (along / 255u, n_anchors - 2);
    guint position = along - segment * 255u;
    const Anchor *a = &anchors[segment], *b = &anchors[segment + 1];

    table[i] = P3D_RGB (interpolate (a->r, b->r, position),
        interpolate (a->g, b->g, position), interpolate (a->b, b->b, position));
  }
}

static const P3dColor *
color_map_table (P3dBevColorMap map)
{
  static P3dColor tables[2][MAP_SIZE];
  static gsize initialized = 0;

  if (g_once_init_enter (&initialized)) {
    fill_table (tables[P3D_BEV_COLOR_MAP_RAINBOW], rainbow_anchors,
        G_N_ELEMENTS (rainbow_anchors));
    fill_table (tables[P3D_BEV_COLOR_MAP_HEAT], heat_anchors,
        G_N_ELEMENTS (heat_anchors));
    g_once_init_leave (&initialized, 1);
  }
  return tables[map == P3D_BEV_COLOR_MAP_HEAT ? 1 : 0];
}

static guint
color_index (gdouble t)
{
  if (!(t > 0.0))
    return 0;
  if (t >= 1.0)
    return MAP_SIZE - 1;
  return (guint) (t * (MAP_SIZE - 1) + 0.5);
}

P3dColor
p3d_bev_color_map (P3dBevColorMap map, gdouble t)
{
  return color_map_table (map)[color_index (t)];
}

void
p3d_bev_canvas_draw_grid (P3dCanvas * canvas, const P3dBevView * view,
    gdouble spacing, P3dColor color, P3dColor axis_color)
{
  gdouble s = view->metres_per_pixel;
  gdouble bottom = view->top - canvas->height * s;
  gdouble right = view->left - canvas->width * s;
  gdouble k, first, last;

  /* lines less than a pixel apart would only fill the image */
  if (!(spacing >= s) || !isfinite (spacing))
    return;

  /* lines of constant x: image rows */
  first = ceil (bottom / spacing);
  last = floor (view->top / spacing);
  for (k = first; k <= last; k++) {
    gint row = p3d_canvas_floor_clamped ((view->top - k * spacing) / s, -1,
        canvas->height);

    p3d_canvas_fill_span (canvas, row, 0, canvas->width - 1,
        k == 0 ? axis_color : color);
  }
  /* lines of constant y: image columns */
  first = ceil (right / spacing);
  last = floor (view->left / spacing);
  for (k = first; k <= last; k++) {
    gint column = p3d_canvas_floor_clamped ((view->left - k * spacing) / s, -1,
        canvas->width);
    P3dColor c = k == 0 ? axis_color : color;
    gint row;

    if (column < 0 || column >= canvas->width)
      continue;
    for (row = 0; row < canvas->height; row++)
      p3d_canvas_store (p3d_canvas_pixel (canvas, column, row), c);
  }
}

void
p3d_bev_canvas_draw_points (P3dCanvas * canvas, const P3dBevView * view,
    const P3dBevPoints * points)
{
  const P3dColor *table = color_map_table (P3D_BEV_COLOR_MAP_RAINBOW);
  gdouble s = view->metres_per_pixel;
  gdouble span = points->high - points->low;
  gint size = (gint) MAX (points->size, 1u);
  /* the square of a point: columns column - before .. column + after */
  gint before = (size - 1) / 2, after = size / 2;
  gsize value_offset = (gsize) points->value_channel * 4;
  gsize i;

  for (i = 0; i < points->count; i++) {
    const guint8 *p = points->data + i * points->stride;
    gfloat xyz[3], value;
    gdouble u, v;
    gint column, row, r;
    P3dColor color;

    /* copied out: a tensor read back from a file need not be aligned */
    memcpy (xyz, p, sizeof (xyz));
    memcpy (&value, p + value_offset, sizeof (value));
    if (!isfinite (xyz[0]) || !isfinite (xyz[1]) || !isfinite (xyz[2]))
      continue;
    u = (view->left - xyz[1]) / s;
    v = (view->top - xyz[0]) / s;
    if (!(u >= -size && u < canvas->width + size && v >= -size
            && v < canvas->height + size))
      continue;
    column = (gint) floor (u);
    row = (gint) floor (v);
    color = table[color_index ((value - points->low) / span)];
    if (size == 1) {
      p3d_canvas_put_pixel (canvas, column, row, color);
      continue;
    }
    for (r = row - before; r <= row + after; r++)
      p3d_canvas_fill_span (canvas, r, column - before, column + after, color);
  }
}

void
p3d_bev_canvas_fill_rect (P3dCanvas * canvas, const P3dBevView * view,
    gdouble x0, gdouble y0, gdouble x1, gdouble y1, P3dColor color)
{
  gdouble s = view->metres_per_pixel;
  gint first_column, last_column, first_row, last_row, row;

  if (!isfinite (x0) || !isfinite (y0) || !isfinite (x1) || !isfinite (y1))
    return;
  /* pixel centres: y = left - (column + 0.5) s, x = top - (row + 0.5) s */
  first_column = p3d_canvas_floor_clamped ((view->left - y1) / s - 0.5, -2,
      canvas->width + 1) + 1;
  last_column = p3d_canvas_floor_clamped ((view->left - y0) / s - 0.5, -2,
      canvas->width + 1);
  first_row = p3d_canvas_floor_clamped ((view->top - x1) / s - 0.5, -2,
      canvas->height + 1) + 1;
  last_row =
      p3d_canvas_floor_clamped ((view->top - x0) / s - 0.5, -2,
      canvas->height + 1);
  if (first_column > last_column)
    first_column = last_column =
        p3d_canvas_floor_clamped ((view->left - (y0 + y1) / 2.0)
        / s, -1, canvas->width);
  if (first_row > last_row)
    first_row = last_row =
        p3d_canvas_floor_clamped ((view->top - (x0 + x1) / 2.0) / s, -1,
        canvas->height);
  for (row = first_row; row <= last_row; row++)
    p3d_canvas_fill_span (canvas, row, first_column, last_column, color);
}

/* The cell index along one axis of the cell holding each pixel centre of
 * that axis, or -1: centre c is at @origin - (c + 0.5) * @s on the ground. */
static void
cell_indices (gint * indices, gint n_pixels, gdouble origin, gdouble s,
    gdouble lower, gdouble step, guint n_cells)
{
  gint c;

  for (c = 0; c < n_pixels; c++) {
    gdouble position = (origin - (c + 0.5) * s - lower) / step;

    indices[c] = (position >= 0.0 && position < n_cells) ?
        (gint) floor (position) : -1;
    if (indices[c] >= (gint) n_cells)
      indices[c] = -1;
  }
}

void
p3d_bev_canvas_draw_heat_map (P3dCanvas * canvas, const P3dBevView * view,
    const P3dBevGrid * grid, const gfloat * magnitude)
{
  const P3dColor *table = color_map_table (P3D_BEV_COLOR_MAP_HEAT);
  guint cells_x = grid->rows_along_x ? grid->rows : grid->columns;
  guint cells_y = grid->rows_along_x ? grid->columns : grid->rows;
  gsize n_cells = (gsize) grid->rows * grid->columns, i;
  gint *column_cells, *row_cells;
  gfloat largest = 0.0f;
  gint row, column;

  for (i = 0; i < n_cells; i++)
    if (isfinite (magnitude[i]) && magnitude[i] > largest)
      largest = magnitude[i];
  if (!(largest > 0.0f))
    return;

  column_cells = g_new (gint, canvas->width);
  row_cells = g_new (gint, canvas->height);
  cell_indices (column_cells, canvas->width, view->left,
      view->metres_per_pixel, grid->y0, grid->y_step, cells_y);
  cell_indices (row_cells, canvas->height, view->top, view->metres_per_pixel,
      grid->x0, grid->x_step, cells_x);

  for (row = 0; row < canvas->height; row++) {
    gsize previous = G_MAXSIZE;
    P3dColor color = 0;
    gboolean draw = FALSE;

    if (row_cells[row] < 0)
      continue;
    for (column = 0; column < canvas->width; column++) {
      gsize ix = (gsize) row_cells[row], iy, cell;

      if (column_cells[column] < 0)
        continue;
      iy = (gsize) column_cells[column];
      cell = grid->rows_along_x ? ix * grid->columns + iy :
          iy * grid->columns + ix;
      if (cell != previous) {
        gfloat m = magnitude[cell];

        previous = cell;
        draw = isfinite (m) && m > 0.0f;
        if (draw)
          color = table[color_index ((gdouble) m / largest)];
      }
      if (draw)
        p3d_canvas_store (p3d_canvas_pixel (canvas, column, row), color);
    }
  }
  g_free (column_cells);
  g_free (row_cells);
}

/* Scores at least this large are not written (they would not fit). */
#define MAX_SCORE_WRITTEN 1e6

void
p3d_bev_canvas_draw_box (P3dCanvas * canvas, const P3dBevView * view,
    const P3dcBox3d * box, P3dColor color, guint line_width,
    gboolean show_score)
{
  /* the corners in the box's own frame, front (+x) first, going round */
  static const gdouble corner_signs[4][2] = {
    {1.0, 1.0}, {1.0, -1.0}, {-1.0, -1.0}, {-1.0, 1.0},
  };
  gdouble u[4], v[4], centre_u, centre_v, front_u, front_v, right_u, top_v;
  gdouble half_length = box->dx / 2.0, half_width = box->dy / 2.0;
  gfloat sin_yaw, cos_yaw;
  guint k;

  if (!isfinite (box->x) || !isfinite (box->y) || !isfinite (box->dx)
      || !isfinite (box->dy) || !isfinite (box->yaw))
    return;
  p3dc_sincos (box->yaw, &sin_yaw, &cos_yaw);
  for (k = 0; k < 4; k++) {
    gdouble l = corner_signs[k][0] * half_length;
    gdouble w = corner_signs[k][1] * half_width;

    p3d_bev_view_to_image (view, box->x + l * cos_yaw - w * sin_yaw,
        box->y + l * sin_yaw + w * cos_yaw, &u[k], &v[k]);
  }
  for (k = 0; k < 4; k++)
    p3d_canvas_draw_wide_line (canvas, u[k], v[k], u[(k + 1) % 4],
        v[(k + 1) % 4], line_width, color);

  p3d_bev_view_to_image (view, box->x, box->y, &centre_u, &centre_v);
  p3d_bev_view_to_image (view, box->x + half_length * cos_yaw,
      box->y + half_length * sin_yaw, &front_u, &front_v);
  p3d_canvas_draw_wide_line (canvas, centre_u, centre_v, front_u,
      front_v, line_width, color);

  if (show_score && isfinite (box->score)
      && fabs (box->score) < MAX_SCORE_WRITTEN) {
    gchar text[G_ASCII_DTOSTR_BUF_SIZE];

    right_u = MAX (MAX (u[0], u[1]), MAX (u[2], u[3]));
    top_v = MIN (MIN (v[0], v[1]), MIN (v[2], v[3]));
    /* locale-independent: always a '.' */
    g_ascii_formatd (text, sizeof (text), "%.2f", box->score);
    p3d_canvas_draw_text (canvas,
        p3d_canvas_floor_clamped (right_u, -P3D_BEV_MAX_SIDE,
            2 * P3D_BEV_MAX_SIDE) + 2, p3d_canvas_floor_clamped (top_v,
            -P3D_BEV_MAX_SIDE, 2 * P3D_BEV_MAX_SIDE), text, color);
  }
}

guint
p3d_bev_canvas_draw_voxels (P3dCanvas * canvas, const P3dBevView * view,
    const P3dBevVoxelCells * cells, P3dColor color)
{
  guint32 i;
  guint outside = 0;

  for (i = 0; i < cells->count; i++) {
    gint32 coord[4];
    gdouble x0, y0;

    if (cells->num_points != NULL) {
      guint32 n;

      memcpy (&n, cells->num_points + (gsize) i * 4, sizeof (n));
      if (n == 0)
        continue;
    }
    /* (batch, z, y, x) */
    memcpy (coord, cells->coords + (gsize) i * 16, sizeof (coord));
    /* coordinates come from upstream unchecked: a voxel off the grid is
     * dropped and counted, never drawn */
    if (coord[3] < 0 || (guint) coord[3] >= cells->columns || coord[2] < 0
        || (guint) coord[2] >= cells->rows || coord[1] < 0
        || (guint) coord[1] >= cells->layers) {
      outside++;
      continue;
    }
    x0 = cells->x0 + coord[3] * cells->x_step;
    y0 = cells->y0 + coord[2] * cells->y_step;
    p3d_bev_canvas_fill_rect (canvas, view, x0, y0, x0 + cells->x_step,
        y0 + cells->y_step, color);
  }
  return outside;
}

void
p3d_bev_feature_magnitudes (const guint8 * data, guint channels,
    gsize n_cells, gboolean half, gfloat * magnitudes)
{
  gsize cell;
  guint channel;

  memset (magnitudes, 0, n_cells * sizeof (gfloat));
  for (channel = 0; channel < channels; channel++) {
    const guint8 *plane = data + (gsize) channel * n_cells * (half ? 2 : 4);

    for (cell = 0; cell < n_cells; cell++) {
      gfloat value;

      if (half) {
        guint16 bits;

        memcpy (&bits, plane + cell * 2, sizeof (bits));
        value = p3dc_half_to_float (bits);
      } else {
        memcpy (&value, plane + cell * 4, sizeof (value));
      }
      magnitudes[cell] += value * value;
    }
  }
  for (cell = 0; cell < n_cells; cell++)
    magnitudes[cell] = sqrtf (magnitudes[cell]);
}

/* The box's image bounding box, FALSE for a box that draw_box skips. */
static gboolean
box_image_bounds (const P3dBevView * view, const P3dcBox3d * box,
    gdouble * left, gdouble * top, gdouble * right, gdouble * bottom)
{
  gdouble half_length = box->dx / 2.0, half_width = box->dy / 2.0;
  gfloat sin_yaw, cos_yaw;
  guint k;

  if (!isfinite (box->x) || !isfinite (box->y) || !isfinite (box->dx)
      || !isfinite (box->dy) || !isfinite (box->yaw))
    return FALSE;
  p3dc_sincos (box->yaw, &sin_yaw, &cos_yaw);
  *left = *top = G_MAXDOUBLE;
  *right = *bottom = -G_MAXDOUBLE;
  for (k = 0; k < 4; k++) {
    gdouble l = (k < 2 ? 1.0 : -1.0) * half_length;
    gdouble w = (k == 0 || k == 3 ? 1.0 : -1.0) * half_width;
    gdouble u, v;

    p3d_bev_view_to_image (view, box->x + l * cos_yaw - w * sin_yaw,
        box->y + l * sin_yaw + w * cos_yaw, &u, &v);
    *left = MIN (*left, u);
    *right = MAX (*right, u);
    *top = MIN (*top, v);
    *bottom = MAX (*bottom, v);
  }
  return TRUE;
}

/* The colour a box of @label takes in @style. */
static P3dColor
box_color (const P3dBevBoxStyle * style, gint32 label)
{
  return style->color != 0 ? style->color : p3d_color_for_label (label);
}

void
p3d_bev_canvas_draw_boxes (P3dCanvas * canvas, const P3dBevView * view,
    const guint8 * records, guint32 count, const P3dBevBoxStyle * style)
{
  P3dCanvasScore *scores;
  guint32 i;

  for (i = 0; i < count; i++) {
    P3dcBox3d box;

    /* copied out: a tensor read from a file need not be aligned */
    memcpy (&box, records + (gsize) i * P3DC_BOX3D_SIZE, sizeof (box));
    p3d_bev_canvas_draw_box (canvas, view, &box, box_color (style,
            box.label), style->line_width, FALSE);
  }
  if (!style->show_scores || count == 0)
    return;

  scores = g_new (P3dCanvasScore, count);
  for (i = 0; i < count; i++) {
    P3dCanvasScore *score = &scores[i];
    gdouble left = 0.0, top = 0.0, right = 0.0, bottom = 0.0;
    P3dcBox3d box;

    memcpy (&box, records + (gsize) i * P3DC_BOX3D_SIZE, sizeof (box));
    score->drawn = box_image_bounds (view, &box, &left, &top, &right, &bottom);
    score->score = box.score;
    score->color = box_color (style, box.label);
    if (!score->drawn)
      continue;
    score->c0 = p3d_canvas_floor_clamped (left, -P3D_BEV_MAX_SIDE,
        2 * P3D_BEV_MAX_SIDE);
    score->r0 = p3d_canvas_floor_clamped (top, -P3D_BEV_MAX_SIDE,
        2 * P3D_BEV_MAX_SIDE);
    score->c1 = p3d_canvas_floor_clamped (right, -P3D_BEV_MAX_SIDE,
        2 * P3D_BEV_MAX_SIDE);
    score->r1 = p3d_canvas_floor_clamped (bottom, -P3D_BEV_MAX_SIDE,
        2 * P3D_BEV_MAX_SIDE);
  }
  p3d_canvas_draw_scores (canvas, scores, count);
  g_free (scores);
}
