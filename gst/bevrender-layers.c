/* The layers of bevrender's picture: see bevrender-layers.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include "bevrender-layers.h"

void
p3d_bev_picture_begin (P3dBevPicture * picture, P3dColor background,
    gdouble grid_spacing)
{
  gchar spacing[G_ASCII_DTOSTR_BUF_SIZE], *text;

  p3d_bev_legend_init (&picture->legend);
  p3d_canvas_clear (&picture->canvas, background);
  if (!(grid_spacing > 0.0))
    return;
  p3d_bev_canvas_draw_grid (&picture->canvas, picture->view, grid_spacing,
      P3D_BEV_GRID_COLOR, P3D_BEV_AXIS_COLOR);
  /* locale-independent: always a '.' */
  g_ascii_formatd (spacing, sizeof (spacing), "%g", grid_spacing);
  text = g_strdup_printf ("grid every %s m", spacing);
  p3d_bev_legend_add_swatch (&picture->legend, P3D_BEV_AXIS_COLOR, text);
  g_free (text);
}

void
p3d_bev_picture_finish (P3dBevPicture * picture)
{
  if (p3d_bev_canvas_draw_sensor (&picture->canvas, picture->view,
          P3D_BEV_ANNOTATION_COLOR))
    p3d_bev_legend_add_swatch (&picture->legend, P3D_BEV_ANNOTATION_COLOR,
        "sensor: arrow to +x");
  p3d_bev_canvas_draw_scale_bar (&picture->canvas, picture->view,
      P3D_BEV_ANNOTATION_COLOR, P3D_BEV_PANEL_COLOR);
  p3d_bev_canvas_draw_legend (&picture->canvas, &picture->legend,
      P3D_BEV_ANNOTATION_COLOR, P3D_BEV_PANEL_COLOR);
}

/* A colour map's legend row: "@what @low to @high@unit". */
static void
legend_add_range (P3dBevLegend * legend, P3dBevColorMap map,
    const gchar * what, gdouble low, gdouble high, const gchar * unit)
{
  gchar low_text[G_ASCII_DTOSTR_BUF_SIZE], high_text[G_ASCII_DTOSTR_BUF_SIZE];
  gchar *text;

  /* locale-independent: always a '.' */
  g_ascii_formatd (low_text, sizeof (low_text), "%g", low);
  g_ascii_formatd (high_text, sizeof (high_text), "%g", high);
  text = g_strdup_printf ("%s %s to %s%s", what, low_text, high_text, unit);
  p3d_bev_legend_add_ramp (legend, map, text);
  g_free (text);
}

gboolean
p3d_bev_picture_draw_points (P3dBevPicture * picture,
    const P3dBevPointsLayer * layer)
{
  gboolean by_intensity = layer->by_intensity && layer->intensity_channel >= 0;
  P3dBevPoints points;

  points.data = layer->data;
  points.stride = layer->stride;
  points.count = layer->size / layer->stride;
  points.size = layer->point_size;
  if (by_intensity) {
    points.value_channel = (guint) layer->intensity_channel;
    points.low = layer->intensity_range[0];
    points.high = layer->intensity_range[1];
  } else {
    /* z, the height */
    points.value_channel = 2;
    points.low = layer->height_range[0];
    points.high = layer->height_range[1];
  }
  p3d_bev_canvas_draw_points (&picture->canvas, picture->view, &points);
  legend_add_range (&picture->legend, P3D_BEV_COLOR_MAP_RAINBOW,
      by_intensity ? "points: intensity" : "points: height", points.low,
      points.high, by_intensity ? "" : " m");
  return by_intensity || !layer->by_intensity;
}

guint
p3d_bev_picture_draw_voxels (P3dBevPicture * picture,
    const P3dBevVoxelCells * cells, gboolean pillar_features)
{
  guint outside;

  outside = p3d_bev_canvas_draw_voxels (&picture->canvas, picture->view,
      cells, P3D_BEV_OCCUPANCY_COLOR);
  /* all z cells of a column look the same from above: a grid of several
   * says so */
  p3d_bev_legend_add_swatch (&picture->legend, P3D_BEV_OCCUPANCY_COLOR,
      pillar_features || cells->layers == 1 ? "pillars" : "voxels (any z)");
  return outside;
}

void
p3d_bev_picture_draw_features (P3dBevPicture * picture,
    const P3dBevFeaturesLayer * layer)
{
  gsize n_cells = (gsize) layer->width * layer->height, cell;
  gdouble xmin = layer->range[0], ymin = layer->range[1];
  gdouble xmax = layer->range[2], ymax = layer->range[3];
  gdouble largest = 0.0;
  P3dBevGrid grid;

  p3d_bev_feature_magnitudes (layer->data, layer->channels, n_cells,
      layer->half, layer->magnitudes);
  /* the top of the heat map: the plane's largest finite magnitude */
  for (cell = 0; cell < n_cells; cell++)
    if (isfinite (layer->magnitudes[cell]))
      largest = MAX (largest, layer->magnitudes[cell]);
  grid.columns = layer->width;
  grid.rows = layer->height;
  grid.layers = 1;
  grid.x0 = xmin;
  grid.y0 = ymin;
  grid.rows_along_x = layer->rows_along_x;
  if (grid.rows_along_x) {
    grid.x_step = (xmax - xmin) / layer->height;
    grid.y_step = (ymax - ymin) / layer->width;
  } else {
    grid.x_step = (xmax - xmin) / layer->width;
    grid.y_step = (ymax - ymin) / layer->height;
  }
  p3d_bev_canvas_draw_heat_map (&picture->canvas, picture->view, &grid,
      layer->magnitudes);
  legend_add_range (&picture->legend, P3D_BEV_COLOR_MAP_HEAT,
      "features: norm", 0.0, largest, "");
}

/* @label's name in @names (NULL-terminated), or NULL. */
static const gchar *
class_name (const gchar * const *names, gint32 label)
{
  gint32 i;

  for (i = 0; names != NULL && names[i] != NULL; i++)
    if (i == label)
      return names[i];
  return NULL;
}

void
p3d_bev_picture_draw_boxes (P3dBevPicture * picture, const guint8 * records,
    guint32 count, const P3dBevBoxStyle * style, const gchar * caption)
{
  guint32 i;

  p3d_bev_canvas_draw_boxes (&picture->canvas, picture->view, records, count,
      style);
  /* one colour for the set: the legend names it; else it lists the labels
   * drawn */
  if (style->color != 0) {
    if (count > 0)
      p3d_bev_legend_add_swatch (&picture->legend, style->color, caption);
    return;
  }
  for (i = 0; i < count; i++) {
    gint32 label;

    memcpy (&label, records + (gsize) i * P3DC_BOX3D_SIZE +
        G_STRUCT_OFFSET (P3dcBox3d, label), sizeof (label));
    p3d_bev_legend_add_label (&picture->legend, label,
        class_name (style->class_names, label));
  }
}
