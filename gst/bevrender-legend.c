/* Scale bar, legend and sensor marker: see bevrender-legend.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include "bevrender-legend.h"

/* Pixels between the panel's edge and what it holds, and between rows. */
#define PADDING 4
#define ROW_GAP 3
/* The bar of a colour map, and the square of a colour. */
#define RAMP_WIDTH 48
#define SWATCH_WIDTH P3D_CANVAS_GLYPH_HEIGHT
/* Between a bar or a square and its text. */
#define KEY_GAP 5
/* Distance of a panel from the image's edge. */
#define MARGIN 6
/* The scale bar's thickness and the height of its end ticks. */
#define BAR_THICKNESS 2
#define TICK_HEIGHT 6

void
p3d_bev_legend_init (P3dBevLegend * legend)
{
  memset (legend, 0, sizeof (*legend));
}

static P3dBevLegendEntry *
add_entry (P3dBevLegend * legend, const gchar * text)
{
  P3dBevLegendEntry *entry;
  guint i;

  for (i = 0; i < legend->n_entries; i++)
    if (g_str_equal (legend->entries[i].text, text))
      return NULL;
  if (legend->n_entries == P3D_BEV_LEGEND_MAX_ENTRIES)
    return NULL;
  entry = &legend->entries[legend->n_entries++];
  g_strlcpy (entry->text, text, sizeof (entry->text));
  return entry;
}

void
p3d_bev_legend_add_ramp (P3dBevLegend * legend, P3dBevColorMap map,
    const gchar * text)
{
  P3dBevLegendEntry *entry = add_entry (legend, text);

  if (entry != NULL) {
    entry->kind = P3D_BEV_LEGEND_RAMP;
    entry->map = map;
  }
}

void
p3d_bev_legend_add_swatch (P3dBevLegend * legend, P3dColor color,
    const gchar * text)
{
  P3dBevLegendEntry *entry = add_entry (legend, text);

  if (entry != NULL) {
    entry->kind = P3D_BEV_LEGEND_SWATCH;
    entry->color = color;
  }
}

void
p3d_bev_legend_add_label (P3dBevLegend * legend, gint32 label,
    const gchar * name)
{
  gchar text[sizeof (legend->entries[0].text)];
  guint before = legend->n_entries;

  if (legend->n_labels == P3D_BEV_LEGEND_MAX_LABELS)
    return;
  if (name != NULL)
    g_snprintf (text, sizeof (text), "boxes: %s", name);
  else
    g_snprintf (text, sizeof (text), "boxes label %d", label);
  p3d_bev_legend_add_swatch (legend, p3d_color_for_label (label), text);
  if (legend->n_entries > before)
    legend->n_labels++;
}

/* A 1-pixel frame around the pixels [c, c + w) x [r, r + h). */
static void
draw_frame_lines (P3dCanvas * canvas, gint c, gint r, gint w, gint h,
    P3dColor color)
{
  p3d_canvas_fill_pixels (canvas, c, r, w, 1, color);
  p3d_canvas_fill_pixels (canvas, c, r + h - 1, w, 1, color);
  p3d_canvas_fill_pixels (canvas, c, r, 1, h, color);
  p3d_canvas_fill_pixels (canvas, c + w - 1, r, 1, h, color);
}

void
p3d_bev_canvas_draw_legend (P3dCanvas * canvas,
    const P3dBevLegend * legend, P3dColor foreground, P3dColor background)
{
  gint width = 0, height, row, i;

  if (legend->n_entries == 0)
    return;
  for (i = 0; i < (gint) legend->n_entries; i++) {
    const P3dBevLegendEntry *entry = &legend->entries[i];
    gint key = entry->kind == P3D_BEV_LEGEND_RAMP ? RAMP_WIDTH : SWATCH_WIDTH;

    width = MAX (width, key + KEY_GAP + p3d_canvas_text_width (entry->text));
  }
  width += 2 * PADDING;
  height = 2 * PADDING + legend->n_entries * P3D_CANVAS_GLYPH_HEIGHT +
      (legend->n_entries - 1) * ROW_GAP;
  p3d_canvas_fill_pixels (canvas, MARGIN, MARGIN, width, height, background);
  draw_frame_lines (canvas, MARGIN, MARGIN, width, height, foreground);

  row = MARGIN + PADDING;
  for (i = 0; i < (gint) legend->n_entries; i++) {
    const P3dBevLegendEntry *entry = &legend->entries[i];
    gint column = MARGIN + PADDING, key;

    if (entry->kind == P3D_BEV_LEGEND_RAMP) {
      for (key = 0; key < RAMP_WIDTH; key++)
        p3d_canvas_fill_pixels (canvas, column + key, row, 1,
            P3D_CANVAS_GLYPH_HEIGHT, p3d_bev_color_map (entry->map,
                (gdouble) key / (RAMP_WIDTH - 1)));
      key = RAMP_WIDTH;
    } else {
      p3d_canvas_fill_pixels (canvas, column, row, SWATCH_WIDTH,
          P3D_CANVAS_GLYPH_HEIGHT, entry->color);
      key = SWATCH_WIDTH;
    }
    p3d_canvas_draw_text (canvas, column + key + KEY_GAP, row,
        entry->text, foreground);
    row += P3D_CANVAS_GLYPH_HEIGHT + ROW_GAP;
  }
}

gdouble
p3d_bev_scale_bar_metres (const P3dBevView * view)
{
  static const gdouble steps[] = { 5.0, 2.0, 1.0 };
  gdouble limit = view->width * view->metres_per_pixel / 4.0;
  gdouble power = pow (10.0, floor (log10 (limit)));
  guint i;

  for (i = 0; i < G_N_ELEMENTS (steps); i++)
    if (steps[i] * power <= limit)
      return steps[i] * power;
  return power;
}

void
p3d_bev_canvas_draw_scale_bar (P3dCanvas * canvas,
    const P3dBevView * view, P3dColor foreground, P3dColor background)
{
  gdouble metres = p3d_bev_scale_bar_metres (view);
  gint length = (gint) lround (metres / view->metres_per_pixel);
  gchar number[G_ASCII_DTOSTR_BUF_SIZE], text[G_ASCII_DTOSTR_BUF_SIZE + 4];
  gint width, height, column, row, bar_row;

  /* locale-independent; "0.5 m", "10 m" */
  g_ascii_formatd (number, sizeof (number), "%g", metres);
  g_snprintf (text, sizeof (text), "%s m", number);
  width = 2 * PADDING + length + KEY_GAP + p3d_canvas_text_width (text);
  height = 2 * PADDING + MAX (TICK_HEIGHT, P3D_CANVAS_GLYPH_HEIGHT);
  column = MARGIN;
  row = canvas->height - MARGIN - height;
  p3d_canvas_fill_pixels (canvas, column, row, width, height, background);
  draw_frame_lines (canvas, column, row, width, height, foreground);
  column += PADDING;
  row += PADDING;
  bar_row = row + TICK_HEIGHT - BAR_THICKNESS;
  p3d_canvas_fill_pixels (canvas, column, bar_row, length, BAR_THICKNESS,
      foreground);
  p3d_canvas_fill_pixels (canvas, column, row, 1, TICK_HEIGHT, foreground);
  p3d_canvas_fill_pixels (canvas, column + length - 1, row, 1,
      TICK_HEIGHT, foreground);
  p3d_canvas_draw_text (canvas, column + length + KEY_GAP, row, text,
      foreground);
}

gboolean
p3d_bev_canvas_draw_sensor (P3dCanvas * canvas, const P3dBevView * view,
    P3dColor color)
{
  gdouble u, v;

  p3d_bev_view_to_image (view, 0.0, 0.0, &u, &v);
  if (!(u >= 0.0 && v >= 0.0 && u < canvas->width && v < canvas->height))
    return FALSE;
  /* x forward is up: an arrow head whose tip is 8 pixels ahead */
  p3d_canvas_draw_line (canvas, u, v - 8.0, u - 5.0, v + 4.0, color);
  p3d_canvas_draw_line (canvas, u, v - 8.0, u + 5.0, v + 4.0, color);
  p3d_canvas_draw_line (canvas, u - 5.0, v + 4.0, u, v + 1.0, color);
  p3d_canvas_draw_line (canvas, u + 5.0, v + 4.0, u, v + 1.0, color);
  return TRUE;
}
