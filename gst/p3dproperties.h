/* gst-perception: vector properties shared by the elements, as GstValueArray
 * of doubles, so that gst-launch takes voxel-size="<0.16,0.16,4.0>". */
#ifndef __P3D_PROPERTIES_H__
#define __P3D_PROPERTIES_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* A GstValueArray property of doubles in [min, max], mutable in READY; a
 * value outside stops the element at start (p3dparamspec.h). */
GParamSpec *p3d_param_spec_double_array (const gchar * name,
    const gchar * nick, const gchar * blurb, gdouble min, gdouble max);

/* Copies @value into @values when it holds exactly @n numbers and returns
 * TRUE; otherwise keeps @values, says why in a GLib warning, notes the
 * property as invalid so that the element refuses to start
 * (p3d_object_set_bad_value()) and returns FALSE. */
gboolean p3d_value_get_doubles (GObject * object, const GValue * value,
    const gchar * name, gdouble * values, guint n);
/* @n doubles as gst-launch writes them, "<0.32,0.32,4>", each with the
 * fewest digits that read back as the same double; free with g_free(). */
gchar *p3d_doubles_to_string (const gdouble * values, guint n);

/* Appends @n doubles to the GstValueArray @value. */
void p3d_value_set_doubles (GValue * value, const gdouble * values, guint n);

G_END_DECLS

#endif /* __P3D_PROPERTIES_H__ */
