/* What makes a bird's-eye view readable, for bevrender: a metres scale, a
 * legend of the colours drawn, and the sensor's position and heading.
 *
 * GLib only, drawn on a P3dCanvas after the layers, so that nothing of
 * the data hides it. */
#ifndef __P3D_BEV_LEGEND_H__
#define __P3D_BEV_LEGEND_H__

#include "bevrender-canvas.h"

G_BEGIN_DECLS

/* Rows a legend holds at most; entries past them are left out. */
#define P3D_BEV_LEGEND_MAX_ENTRIES 16
/* Box labels listed at most (the palette has 8 colours). */
#define P3D_BEV_LEGEND_MAX_LABELS 8

typedef enum
{
  /* a colour map, as a bar, then the text */
  P3D_BEV_LEGEND_RAMP,
  /* one colour, as a square, then the text */
  P3D_BEV_LEGEND_SWATCH,
} P3dBevLegendKind;

typedef struct
{
  P3dBevLegendKind kind;
  P3dBevColorMap map;
  P3dColor color;
  gchar text[64];
} P3dBevLegendEntry;

typedef struct
{
  P3dBevLegendEntry entries[P3D_BEV_LEGEND_MAX_ENTRIES];
  guint n_entries;
  guint n_labels;
} P3dBevLegend;

void p3d_bev_legend_init (P3dBevLegend * legend);
/* A colour map with its text ("height -3 to 1 m"). */
void p3d_bev_legend_add_ramp (P3dBevLegend * legend, P3dBevColorMap map,
    const gchar * text);
/* A colour with its text; an entry whose text is already there is not
 * added again. */
void p3d_bev_legend_add_swatch (P3dBevLegend * legend, P3dColor color,
    const gchar * text);
/* The colour of boxes of @label, once per label, at most
 * P3D_BEV_LEGEND_MAX_LABELS of them: "boxes: car" with its class @name,
 * "boxes label 2" when @name is NULL. */
void p3d_bev_legend_add_label (P3dBevLegend * legend, gint32 label,
    const gchar * name);

/* The legend in a panel of @background at the top left corner, its text in
 * @foreground. */
void p3d_bev_canvas_draw_legend (P3dCanvas * canvas,
    const P3dBevLegend * legend, P3dColor foreground,
    P3dColor background);

/* The length of the scale bar: the longest of 1, 2 or 5 times a power of
 * ten metres that is at most a quarter of the image's width. */
gdouble p3d_bev_scale_bar_metres (const P3dBevView * view);
/* The scale bar with its length written ("10 m"), in a panel at the bottom
 * left corner. */
void p3d_bev_canvas_draw_scale_bar (P3dCanvas * canvas,
    const P3dBevView * view, P3dColor foreground, P3dColor background);

/* The sensor (the origin) as an arrow head pointing to +x, when it is in
 * the image; returns whether it was. */
gboolean p3d_bev_canvas_draw_sensor (P3dCanvas * canvas,
    const P3dBevView * view, P3dColor color);

G_END_DECLS

#endif /* __P3D_BEV_LEGEND_H__ */
