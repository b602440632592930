/* Vector properties; see p3dproperties.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "p3dparamspec.h"
#include "p3dproperties.h"

GParamSpec *
p3d_param_spec_double_array (const gchar * name, const gchar * nick,
    const gchar * blurb, gdouble min, gdouble max)
{
  return gst_param_spec_array (name, nick, blurb,
      p3d_param_spec_double ("value", "Value", "One value", min, max,
          CLAMP (0.0, min, max), G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS),
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
}

gboolean
p3d_value_get_doubles (GObject * object, const GValue * value,
    const gchar * name, gdouble * values, guint n)
{
  gdouble parsed[8];
  guint i;

  g_return_val_if_fail (n <= G_N_ELEMENTS (parsed), FALSE);
  if (gst_value_array_get_size (value) != n) {
    gchar *text = g_strdup_printf ("%s: %s needs %u values, got %u; the "
        "property keeps its value", GST_IS_OBJECT (object) ?
        GST_OBJECT_NAME (object) : G_OBJECT_TYPE_NAME (object), name, n,
        gst_value_array_get_size (value));

    /* What GObject itself does with an invalid property value: a GLib
     * warning, which reaches the terminal. Not a bus message: gst-launch
     * sets properties before the element has a bus, and the elements call
     * this under their object lock, which posting takes. */
    g_warning ("%s", text);
    g_free (text);
    /* and the element refuses to start (p3dparamspec.h) */
    text = g_strdup_printf ("needs %u values, got %u", n,
        gst_value_array_get_size (value));
    p3d_object_set_bad_value (object, name, text);
    g_free (text);
    return FALSE;
  }
  for (i = 0; i < n; i++)
    parsed[i] = g_value_get_double (gst_value_array_get_value (value, i));
  memcpy (values, parsed, n * sizeof (gdouble));
  p3d_object_set_bad_value (object, name, NULL);
  return TRUE;
}

gchar *
p3d_doubles_to_string (const gdouble * values, guint n)
{
  GString *text = g_string_new ("<");
  guint i;

  for (i = 0; i < n; i++) {
    gchar number[G_ASCII_DTOSTR_BUF_SIZE];
    gint digits;

    /* the shortest of %.6g .. %.17g that reads back exactly */
    for (digits = 6; digits <= 17; digits++) {
      gchar format[8];

      g_snprintf (format, sizeof (format), "%%.%dg", digits);
      g_ascii_formatd (number, sizeof (number), format, values[i]);
      if (g_ascii_strtod (number, NULL) == values[i])
        break;
    }
    g_string_append_printf (text, "%s%s", i > 0 ? "," : "", number);
  }
  g_string_append_c (text, '>');
  return g_string_free (text, FALSE);
}

void
p3d_value_set_doubles (GValue * value, const gdouble * values, guint n)
{
  GValue v = G_VALUE_INIT;
  guint i;

  g_value_init (&v, G_TYPE_DOUBLE);
  for (i = 0; i < n; i++) {
    g_value_set_double (&v, values[i]);
    gst_value_array_append_value (value, &v);
  }
  g_value_unset (&v);
}
