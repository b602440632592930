/* Drawing a bird's-eye view on a P3dCanvas (p3dcanvas.h), for bevrender.
 *
 * GLib only, no GStreamer, so that the drawing is tested on its own and the
 * element stays a matter of pads, caps and timing.
 *
 * The view: x forward is up in the image, y left is left, z is towards the
 * viewer. A view is a scale (metres per pixel) and the ground coordinates of
 * the image's top edge (x) and left edge (y): the pixel at column c and row r
 * covers x in (top - (r + 1) * s, top - r * s] and y in
 * (left - (c + 1) * s, left - c * s], so a point (x, y) falls in column
 * floor((left - y) / s) and row floor((top - x) / s).
 *
 * Everything is drawn by overwriting pixels, in the order the caller draws
 * the layers, with integer colours and IEEE double arithmetic (sines and
 * cosines from p3dc_sincos()), so the same input gives the same bytes on
 * every machine.
 */
#ifndef __P3D_BEV_CANVAS_H__
#define __P3D_BEV_CANVAS_H__

#include <glib.h>

#include "boxes.h"
#include "p3dcanvas.h"

G_BEGIN_DECLS

/* Largest image side, in pixels: the canvas's. */
#define P3D_BEV_MAX_SIDE P3D_CANVAS_MAX_SIDE
/* Metres per pixel when neither a scale nor a size is given. */
#define P3D_BEV_DEFAULT_METRES_PER_PIXEL 0.1

/**
 * P3dBevView:
 * @width: image width in pixels
 * @height: image height in pixels
 * @metres_per_pixel: the side of a pixel on the ground
 * @left: y (metres) of the image's left edge
 * @top: x (metres) of the image's top edge
 */
typedef struct
{
  gint width;
  gint height;
  gdouble metres_per_pixel;
  gdouble left;
  gdouble top;
} P3dBevView;

/* The view of @range (xmin, ymin, xmax, ymax in metres), its centre at the
 * image's centre. With @metres_per_pixel > 0 that is the scale, and a size
 * left at 0 is the range's extent at that scale, rounded up. With
 * @metres_per_pixel 0, the scale is the smallest at which the range fits
 * the sizes given (0: not given), and a size not given is derived from it;
 * with no size either, the scale is P3D_BEV_DEFAULT_METRES_PER_PIXEL.
 * FALSE, with @why set (free it), for an empty or non-finite range or a
 * size beyond P3D_BEV_MAX_SIDE. */
gboolean p3d_bev_view_init (P3dBevView * view, const gdouble range[4],
    gdouble metres_per_pixel, gint width, gint height, gchar ** why);

/* Continuous image coordinates of ground point (@x, @y): column @u, row
 * @v; the pixel is (floor (u), floor (v)). */
static inline void
p3d_bev_view_to_image (const P3dBevView * view, gdouble x, gdouble y,
    gdouble * u, gdouble * v)
{
  *u = (view->left - y) / view->metres_per_pixel;
  *v = (view->top - x) / view->metres_per_pixel;
}

typedef enum
{
  /* blue, cyan, green, yellow, red: for heights and intensities */
  P3D_BEV_COLOR_MAP_RAINBOW = 0,
  /* dark purple to pale yellow, brighter (R + G + B) as it rises: for
   * feature magnitudes */
  P3D_BEV_COLOR_MAP_HEAT = 1,
} P3dBevColorMap;

/* The colour of @map at @t in [0, 1] (clamped; NaN is 0), one of 256;
 * box labels' colours (p3d_color_for_label) are absent from the rainbow
 * map. */
P3dColor p3d_bev_color_map (P3dBevColorMap map, gdouble t);

/* Lines every @spacing metres along x and y (through the sensor, which is
 * the origin), the two through the origin in @axis_color. */
void p3d_bev_canvas_draw_grid (P3dCanvas * canvas, const P3dBevView * view,
    gdouble spacing, P3dColor color, P3dColor axis_color);

/**
 * P3dBevPoints:
 * @data: @count points, each @stride bytes of float32 channels (x, y, z
 *     first), not necessarily aligned
 * @value_channel: the channel mapped to a colour (2: z, the height)
 * @low: the value coloured as the start of the map
 * @high: the value coloured as its end
 * @size: the side in pixels of the square drawn for a point
 *
 * Points coloured by one of their channels; non-finite points are skipped.
 */
typedef struct
{
  const guint8 *data;
  gsize count;
  gsize stride;
  guint value_channel;
  gdouble low;
  gdouble high;
  guint size;
} P3dBevPoints;

void p3d_bev_canvas_draw_points (P3dCanvas * canvas,
    const P3dBevView * view, const P3dBevPoints * points);

/* Fills the ground rectangle [@x0, @x1) x [@y0, @y1): every pixel whose
 * centre lies inside, or the pixel of its centre when it covers no pixel
 * centre (a cell smaller than a pixel still shows). */
void p3d_bev_canvas_fill_rect (P3dCanvas * canvas, const P3dBevView * view,
    gdouble x0, gdouble y0, gdouble x1, gdouble y1, P3dColor color);

/**
 * P3dBevGrid:
 * @columns: cells along the array's last axis
 * @rows: cells along its first axis
 * @x0: x (metres) of the cells' lower bound
 * @y0: y (metres) of the cells' lower bound
 * @x_step: cell size along x
 * @y_step: cell size along y
 * @rows_along_x: FALSE when the row index steps along y and the column
 *     index along x (layout yx), TRUE for the other way round (layout xy)
 *
 * A regular grid of cells on the ground, as a row-major array.
 */
typedef struct
{
  guint columns;
  guint rows;
  guint layers;
  gdouble x0;
  gdouble y0;
  gdouble x_step;
  gdouble y_step;
  gboolean rows_along_x;
} P3dBevGrid;

/* Colours every pixel whose centre lies in a cell of @grid with a positive
 * finite @magnitude by the heat map at magnitude / (largest finite
 * magnitude); cells of zero, negative or non-finite magnitude are not
 * drawn. */
void p3d_bev_canvas_draw_heat_map (P3dCanvas * canvas,
    const P3dBevView * view, const P3dBevGrid * grid, const gfloat * magnitude);

/* The box's ground rectangle (its 4 edges, @line_width pixels wide, 1 at
 * least) and a line from its centre to the middle of its front edge (the
 * +x side of the box, which yaw turns); with @show_score, the score with
 * two decimals to the right of the box's top right pixel. A box with a
 * non-finite field is skipped. */
void p3d_bev_canvas_draw_box (P3dCanvas * canvas, const P3dBevView * view,
    const P3dcBox3d * box, P3dColor color, guint line_width,
    gboolean show_score);

/**
 * P3dBevBoxStyle:
 * @color: the colour of every box and score, or 0: each box in the colour
 *     of its label (p3d_color_for_label)
 * @line_width: side in pixels of the square drawn at each pixel of a line
 *     (1: 1-pixel lines); wide lines centre on the thin ones
 * @show_scores: write the scores
 * @class_names: NULL, or the class name of each label from 0, as many as
 *     there are, NULL-terminated: the legend names a label's colour with it
 *
 * How a set of boxes is drawn, so that two sets (true boxes and a
 * detector's) can be told apart in one picture.
 */
typedef struct
{
  P3dColor color;
  guint line_width;
  gboolean show_scores;
  const gchar *const *class_names;
} P3dBevBoxStyle;

/**
 * P3dBevVoxelCells:
 * @coords: @count voxel coordinates of 4 int32 (batch, z, y, x) each, as
 *     voxelize writes them, not necessarily aligned
 * @num_points: @count uint32 point counts, or NULL (pillar features, whose
 *     voxels all hold points); a voxel of 0 points is not drawn
 * @count: voxels
 * @columns: cells along x (the grid's first size)
 * @rows: cells along y
 * @layers: cells along z (a voxel of another z is outside the grid)
 * @x0: x (metres) of the grid's lower bound
 * @y0: y (metres) of the grid's lower bound
 * @x_step: cell size along x
 * @y_step: cell size along y
 */
typedef struct
{
  const guint8 *coords;
  const guint8 *num_points;
  guint32 count;
  guint columns;
  guint rows;
  guint layers;
  gdouble x0;
  gdouble y0;
  gdouble x_step;
  gdouble y_step;
} P3dBevVoxelCells;

/* Fills the ground cell of every voxel (all z cells of a column look the
 * same from above); returns how many voxels had x, y or z outside the grid
 * (not drawn: nothing is read or written for them). */
guint p3d_bev_canvas_draw_voxels (P3dCanvas * canvas,
    const P3dBevView * view, const P3dBevVoxelCells * cells,
    P3dColor color);

/* The L2 norm over @channels planes of @n_cells float32 (or with @half
 * float16) values each, one per cell, into @magnitudes. */
void p3d_bev_feature_magnitudes (const guint8 * data, guint channels,
    gsize n_cells, gboolean half, gfloat * magnitudes);

/* @count box records (P3DC_BOX3D_SIZE bytes each, not necessarily
 * aligned): every box outlined as @style says, in order; then, with its
 * show_scores, the scores, highest first, each beside its box where
 * it overlaps no score already written (right of the box, else left,
 * above, below), or not at all: the scores of overlapping boxes before NMS
 * stay readable. */
void p3d_bev_canvas_draw_boxes (P3dCanvas * canvas,
    const P3dBevView * view, const guint8 * records, guint32 count,
    const P3dBevBoxStyle * style);

G_END_DECLS

#endif /* __P3D_BEV_CANVAS_H__ */
