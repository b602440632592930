/* gst-perception: numeric properties whose range the element checks when it
 * starts, instead of GObject dropping a value outside it.
 *
 * GObject refuses a value outside a property's range with a GLib warning
 * on stderr and keeps the property as it was, so that
 * "gst-launch-1.0 ... voxelize max-points=0" would run with the default.
 * These param specs are the GLib ones (gst-inspect-1.0 shows their range
 * and default as usual) with GObject's check taken out: any value of the
 * type is stored, and p3d_element_check_properties(), called when the
 * element starts, refuses a value outside the range with an error that
 * names the property, the value and the range (RESOURCE / SETTINGS, the
 * error policy of docs/development.md). A value set while the element
 * runs (GST_PARAM_MUTABLE_PLAYING) is checked as it is set, by
 * p3d_element_watch_properties().
 *
 * Every numeric property of the plugin uses them; a vector property
 * (GstParamSpecArray) is checked value by value when its element spec is
 * one of them.
 */
#ifndef __P3D_PARAM_SPEC_H__
#define __P3D_PARAM_SPEC_H__

#include <gst/gst.h>

G_BEGIN_DECLS

GParamSpec *p3d_param_spec_int (const gchar * name, const gchar * nick,
    const gchar * blurb, gint minimum, gint maximum, gint default_value,
    GParamFlags flags);
GParamSpec *p3d_param_spec_uint (const gchar * name, const gchar * nick,
    const gchar * blurb, guint minimum, guint maximum, guint default_value,
    GParamFlags flags);
GParamSpec *p3d_param_spec_uint64 (const gchar * name, const gchar * nick,
    const gchar * blurb, guint64 minimum, guint64 maximum,
    guint64 default_value, GParamFlags flags);
/* NaN is outside every range. */
GParamSpec *p3d_param_spec_float (const gchar * name, const gchar * nick,
    const gchar * blurb, gfloat minimum, gfloat maximum,
    gfloat default_value, GParamFlags flags);
GParamSpec *p3d_param_spec_double (const gchar * name, const gchar * nick,
    const gchar * blurb, gdouble minimum, gdouble maximum,
    gdouble default_value, GParamFlags flags);
GParamSpec *p3d_param_spec_fraction (const gchar * name, const gchar * nick,
    const gchar * blurb, gint min_num, gint min_denom, gint max_num,
    gint max_denom, gint default_num, gint default_denom, GParamFlags flags);

/* TRUE when @pspec is one of the above, or a GstParamSpecArray of one. */
gboolean p3d_param_spec_is_checked (GParamSpec * pspec);

/* TRUE when @value is inside the range of @pspec (any value for a spec
 * that is not checked); otherwise @why (may be NULL) says, in words a user
 * can act on: "-0.16 (value 1 of 3) is not above 0". */
gboolean p3d_param_value_in_range (GParamSpec * pspec, const GValue * value,
    gchar ** why);

/* For a setter that cannot store what it was given (a vector of the wrong
 * length): the check at start reports @property of @object as invalid,
 * saying @why ("needs 3 values, got 2"), until the setter stores a value
 * again and clears it with @why NULL. */
void p3d_object_set_bad_value (GObject * object, const gchar * property,
    const gchar * why);

/* Checks every checked property of @object (@element itself, or one of its
 * pads) and posts the first one out of range as an error of @element:
 * "Invalid property max-points=0: ...". FALSE after posting. */
gboolean p3d_object_check_properties (GObject * object, GstElement * element);

/* p3d_object_check_properties() of @element, for its start(). */
gboolean p3d_element_check_properties (GstElement * element);

/* For an element's (or its pad's) instance init: a checked property set
 * out of range while @element is PAUSED or PLAYING posts the same error
 * as the check at start; before, the check at start sees it. */
void p3d_object_watch_properties (GObject * object, GstElement * element);

G_END_DECLS

#endif /* __P3D_PARAM_SPEC_H__ */
