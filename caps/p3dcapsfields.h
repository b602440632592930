/* Private to the caps library: reading and writing the typed fields that
 * the media types share, with the reason for a refusal in the debug log
 * (category p3dcaps), as GstVideoInfo does. */
#ifndef __P3D_CAPS_FIELDS_H__
#define __P3D_CAPS_FIELDS_H__

#include <gst/gst.h>

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN (p3d_caps_debug);

void p3d_caps_debug_init (void);

/* Why the caps were refused, in the debug log ("refused: ...") and kept
 * for this thread, so that a filter that refuses caps without a reason of
 * its own can say which field (p3d_caps_take_refusal ()). */
#define P3D_CAPS_REFUSE(...) \
  G_STMT_START { \
    gchar *_p3d_why = gst_info_strdup_printf (__VA_ARGS__); \
    GST_DEBUG ("refused: %s", _p3d_why); \
    p3d_caps_set_refusal (_p3d_why); \
  } G_STMT_END

void p3d_caps_set_refusal (gchar * why);
/* The last refusal of this thread since the last call, or NULL. */
gchar *p3d_caps_take_refusal (void);

/* The single fixed structure of @caps when its name is @media_type. */
const GstStructure *p3d_caps_get_fixed_structure (const GstCaps * caps,
    const gchar * media_type);

gboolean p3d_structure_get_uint_in_range (const GstStructure * s,
    const gchar * field, guint min, guint max, guint * value);
/* An array of exactly @n numbers (int or double entries). */
gboolean p3d_structure_get_double_array (const GstStructure * s,
    const gchar * field, guint n, gdouble * values);
gboolean p3d_structure_get_uint_array (const GstStructure * s,
    const gchar * field, guint n, guint min, guint max, guint * values);
void p3d_structure_set_double_array (GstStructure * s, const gchar * field,
    guint n, const gdouble * values);
void p3d_structure_set_uint_array (GstStructure * s, const gchar * field,
    guint n, const guint * values);

/* Optional framerate: 0/1 when absent; FALSE when present but invalid. */
gboolean p3d_structure_get_framerate (const GstStructure * s, gint * fps_n,
    gint * fps_d);
void p3d_structure_set_framerate (GstStructure * s, gint fps_n, gint fps_d);

/* Why @a and @b have nothing in common, for the debug log: the first
 * structure of @a against each of @b, the media type or the first field
 * whose values do not intersect, with both values ("features:
 * pointpillars-10 against mmdet3d-11"). NULL when they intersect. */
gchar *p3d_caps_describe_conflict (const GstCaps * a, const GstCaps * b);

/* The first field of the first structure of @a whose value no structure
 * of @b of the same media type can take: its name and both values as
 * gst-launch writes them (free all three). FALSE when there is none (the
 * caps intersect, or differ in media type or memory only). */
gboolean p3d_caps_find_conflicting_field (const GstCaps * a,
    const GstCaps * b, gchar ** field, gchar ** a_value, gchar ** b_value);

/* grid[i] = round((max - min) / size) for each of @axes axes, with
 * range = (mins..., maxes...); FALSE unless every count is in [1, 2^31). */
gboolean p3d_grid_from_range (const gdouble * voxel_size,
    const gdouble * range, guint axes, guint * grid);

G_END_DECLS

#endif /* __P3D_CAPS_FIELDS_H__ */

