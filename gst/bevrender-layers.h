/* The layers of bevrender's picture: what each kind of input tensor draws
 * on a P3dCanvas, and the legend row that says how to read it.
 *
 * GLib only, no GStreamer: the element maps a buffer and describes its
 * tensors with the plain structs below (from its caps), and these functions
 * turn them into pixels, so that the drawing of every input kind is tested
 * without a pipeline and the element keeps pads, caps and timing.
 *
 * A picture is drawn as p3d_bev_picture_begin(), the layers bottom first
 * (features, voxels, points, boxes), then p3d_bev_picture_finish(), so that
 * the annotations lie above the data.
 */
#ifndef __P3D_BEV_LAYERS_H__
#define __P3D_BEV_LAYERS_H__

#include "bevrender-canvas.h"
#include "bevrender-legend.h"

G_BEGIN_DECLS

/* The colours bevrender draws with that no property sets. */
#define P3D_BEV_GRID_COLOR P3D_RGB (48, 48, 48)
#define P3D_BEV_AXIS_COLOR P3D_RGB (96, 96, 96)
/* the legend, the scale bar and the sensor: light text on a dark panel */
#define P3D_BEV_ANNOTATION_COLOR P3D_RGB (230, 230, 230)
#define P3D_BEV_PANEL_COLOR P3D_RGB (24, 24, 32)
/* occupied voxel cells and pillars */
#define P3D_BEV_OCCUPANCY_COLOR P3D_RGB (80, 110, 210)

/**
 * P3dBevPicture:
 * @canvas: the image drawn into
 * @view: where the ground lies in it
 * @legend: what the layers drew so far, written by p3d_bev_picture_finish()
 *
 * One picture being drawn.
 */
typedef struct
{
  P3dCanvas canvas;
  const P3dBevView *view;
  P3dBevLegend legend;
} P3dBevPicture;

/* Starts @picture (its canvas and view set): an empty legend, the image
 * cleared to @background and, with @grid_spacing > 0, the ground grid
 * every @grid_spacing metres with its legend row. */
void p3d_bev_picture_begin (P3dBevPicture * picture, P3dColor background,
    gdouble grid_spacing);

/* Ends @picture: the sensor, the scale bar and the legend, on top. */
void p3d_bev_picture_finish (P3dBevPicture * picture);

/**
 * P3dBevPointsLayer:
 * @data: the points, @stride bytes each of float32 channels (x, y, z
 *     first), not necessarily aligned
 * @size: bytes of @data; a trailing partial point is not drawn
 * @stride: bytes of one point
 * @intensity_channel: the index of the intensity channel, -1: none
 * @by_intensity: colour by intensity rather than height (when the points
 *     have one)
 * @height_range: the heights (metres) at the ends of the colour map
 * @intensity_range: the intensities at the ends of the colour map
 * @point_size: the side in pixels of a point's square
 */
typedef struct
{
  const guint8 *data;
  gsize size;
  gsize stride;
  gint intensity_channel;
  gboolean by_intensity;
  gdouble height_range[2];
  gdouble intensity_range[2];
  guint point_size;
} P3dBevPointsLayer;

/* Points coloured by intensity or height, with the colour map's legend
 * row. FALSE when colouring by intensity was asked and the points have
 * none: they are coloured by height then. */
gboolean p3d_bev_picture_draw_points (P3dBevPicture * picture,
    const P3dBevPointsLayer * layer);

/* The occupied ground cell of each voxel of @cells (those with x, y or z
 * off the grid are not drawn), with the legend row "pillars" for
 * @pillar_features or a grid of one z cell, else "voxels (any z)". Returns
 * how many voxels were off the grid. */
guint p3d_bev_picture_draw_voxels (P3dBevPicture * picture,
    const P3dBevVoxelCells * cells, gboolean pillar_features);

/**
 * P3dBevFeaturesLayer:
 * @data: @channels planes of @width x @height values, float32 or (@half)
 *     float16
 * @rows_along_x: FALSE when the plane's rows step along y and its columns
 *     along x (layout yx), TRUE for the other way round (layout xy)
 * @range: the ground the plane covers: xmin, ymin, xmax, ymax (metres)
 * @magnitudes: room for @width x @height values, the caller's scratch
 *     (allocated once, not per picture)
 */
typedef struct
{
  const guint8 *data;
  guint channels;
  guint width;
  guint height;
  gboolean half;
  gboolean rows_along_x;
  gdouble range[4];
  gfloat *magnitudes;
} P3dBevFeaturesLayer;

/* Each cell coloured by the heat map of its L2 norm over the channels,
 * relative to the largest finite norm of the plane, with the legend row
 * "features: norm 0 to <largest>". */
void p3d_bev_picture_draw_features (P3dBevPicture * picture,
    const P3dBevFeaturesLayer * layer);

/* @count box records (P3DC_BOX3D_SIZE bytes each, not necessarily aligned)
 * drawn as @style says; the legend names them @caption when @style has one
 * colour (and there is a box), else lists the colour of each label drawn. */
void p3d_bev_picture_draw_boxes (P3dBevPicture * picture,
    const guint8 * records, guint32 count, const P3dBevBoxStyle * style,
    const gchar * caption);

G_END_DECLS

#endif /* __P3D_BEV_LAYERS_H__ */
