/* Numeric properties checked when the element starts; see p3dparamspec.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <float.h>
#include <math.h>

#include "p3dparamspec.h"

/* GObject calls value_validate (and, from GLib 2.74, value_is_valid)
 * before it sets a property, and drops the value when it is out of range;
 * ours report every value as valid and unchanged. */
static gboolean
validate_nothing (GParamSpec * pspec, GValue * value)
{
  return FALSE;
}

#if GLIB_CHECK_VERSION (2, 74, 0)
static gboolean
every_value_is_valid (GParamSpec * pspec, const GValue * value)
{
  return TRUE;
}
#endif

static void
checked_class_init (gpointer klass, gpointer data)
{
  GParamSpecClass *pclass = klass;

  pclass->value_validate = validate_nothing;
#if GLIB_CHECK_VERSION (2, 74, 0)
  pclass->value_is_valid = every_value_is_valid;
#endif
}

enum
{
  CHECKED_INT,
  CHECKED_UINT,
  CHECKED_UINT64,
  CHECKED_FLOAT,
  CHECKED_DOUBLE,
  CHECKED_FRACTION,
  N_CHECKED,
};

static GType checked_types[N_CHECKED];

/* The checked param spec types, each derived from GLib's (or GStreamer's)
 * spec of its value type, so that whatever reads those (gst-inspect-1.0,
 * G_PARAM_SPEC_UINT ()) reads ours. */
static void
register_types (void)
{
  static gsize done = 0;

  if (g_once_init_enter (&done)) {
    static const struct
    {
      const gchar *name;
      guint index;
    } names[N_CHECKED] = {
      {"P3dParamInt", CHECKED_INT},
      {"P3dParamUInt", CHECKED_UINT},
      {"P3dParamUInt64", CHECKED_UINT64},
      {"P3dParamFloat", CHECKED_FLOAT},
      {"P3dParamDouble", CHECKED_DOUBLE},
      {"P3dParamFraction", CHECKED_FRACTION},
    };
    GType parents[N_CHECKED];
    guint i;

    parents[CHECKED_INT] = G_TYPE_PARAM_INT;
    parents[CHECKED_UINT] = G_TYPE_PARAM_UINT;
    parents[CHECKED_UINT64] = G_TYPE_PARAM_UINT64;
    parents[CHECKED_FLOAT] = G_TYPE_PARAM_FLOAT;
    parents[CHECKED_DOUBLE] = G_TYPE_PARAM_DOUBLE;
    parents[CHECKED_FRACTION] = GST_TYPE_PARAM_FRACTION;
    for (i = 0; i < N_CHECKED; i++) {
      GTypeQuery query;

      g_type_query (parents[i], &query);
      checked_types[names[i].index] =
          g_type_register_static_simple (parents[i], names[i].name,
          query.class_size, checked_class_init, query.instance_size, NULL, 0);
    }
    g_once_init_leave (&done, 1);
  }
}

static GParamSpec *
checked_new (guint kind, const gchar * name, const gchar * nick,
    const gchar * blurb, GParamFlags flags)
{
  register_types ();
  return g_param_spec_internal (checked_types[kind], name, nick, blurb, flags);
}

GParamSpec *
p3d_param_spec_int (const gchar * name, const gchar * nick,
    const gchar * blurb, gint minimum, gint maximum, gint default_value,
    GParamFlags flags)
{
  GParamSpecInt *spec;

  g_return_val_if_fail (minimum <= default_value && default_value <= maximum,
      NULL);
  spec = (GParamSpecInt *) checked_new (CHECKED_INT, name, nick, blurb, flags);
  spec->minimum = minimum;
  spec->maximum = maximum;
  spec->default_value = default_value;
  return G_PARAM_SPEC (spec);
}

GParamSpec *
p3d_param_spec_uint (const gchar * name, const gchar * nick,
    const gchar * blurb, guint minimum, guint maximum, guint default_value,
    GParamFlags flags)
{
  GParamSpecUInt *spec;

  g_return_val_if_fail (minimum <= default_value && default_value <= maximum,
      NULL);
  spec = (GParamSpecUInt *) checked_new (CHECKED_UINT, name, nick, blurb,
      flags);
  spec->minimum = minimum;
  spec->maximum = maximum;
  spec->default_value = default_value;
  return G_PARAM_SPEC (spec);
}

GParamSpec *
p3d_param_spec_uint64 (const gchar * name, const gchar * nick,
    const gchar * blurb, guint64 minimum, guint64 maximum,
    guint64 default_value, GParamFlags flags)
{
  GParamSpecUInt64 *spec;

  g_return_val_if_fail (minimum <= default_value && default_value <= maximum,
      NULL);
  spec = (GParamSpecUInt64 *) checked_new (CHECKED_UINT64, name, nick, blurb,
      flags);
  spec->minimum = minimum;
  spec->maximum = maximum;
  spec->default_value = default_value;
  return G_PARAM_SPEC (spec);
}

GParamSpec *
p3d_param_spec_float (const gchar * name, const gchar * nick,
    const gchar * blurb, gfloat minimum, gfloat maximum,
    gfloat default_value, GParamFlags flags)
{
  GParamSpecFloat *spec;

  g_return_val_if_fail (minimum <= default_value && default_value <= maximum,
      NULL);
  spec = (GParamSpecFloat *) checked_new (CHECKED_FLOAT, name, nick, blurb,
      flags);
  spec->minimum = minimum;
  spec->maximum = maximum;
  spec->default_value = default_value;
  return G_PARAM_SPEC (spec);
}

GParamSpec *
p3d_param_spec_double (const gchar * name, const gchar * nick,
    const gchar * blurb, gdouble minimum, gdouble maximum,
    gdouble default_value, GParamFlags flags)
{
  GParamSpecDouble *spec;

  g_return_val_if_fail (minimum <= default_value && default_value <= maximum,
      NULL);
  spec = (GParamSpecDouble *) checked_new (CHECKED_DOUBLE, name, nick, blurb,
      flags);
  spec->minimum = minimum;
  spec->maximum = maximum;
  spec->default_value = default_value;
  return G_PARAM_SPEC (spec);
}

GParamSpec *
p3d_param_spec_fraction (const gchar * name, const gchar * nick,
    const gchar * blurb, gint min_num, gint min_denom, gint max_num,
    gint max_denom, gint default_num, gint default_denom, GParamFlags flags)
{
  GstParamSpecFraction *spec;

  g_return_val_if_fail (gst_util_fraction_compare (min_num, min_denom,
          default_num, default_denom) <= 0
      && gst_util_fraction_compare (default_num, default_denom, max_num,
          max_denom) <= 0, NULL);
  spec = (GstParamSpecFraction *) checked_new (CHECKED_FRACTION, name, nick,
      blurb, flags);
  spec->min_num = min_num;
  spec->min_den = min_denom;
  spec->max_num = max_num;
  spec->max_den = max_denom;
  spec->def_num = default_num;
  spec->def_den = default_denom;
  return G_PARAM_SPEC (spec);
}

static gint
checked_kind (GParamSpec * pspec)
{
  guint i;

  register_types ();
  for (i = 0; i < N_CHECKED; i++)
    if (G_TYPE_CHECK_INSTANCE_TYPE (pspec, checked_types[i]))
      return i;
  return -1;
}

gboolean
p3d_param_spec_is_checked (GParamSpec * pspec)
{
  if (GST_IS_PARAM_SPEC_ARRAY_LIST (pspec))
    pspec = GST_PARAM_SPEC_ARRAY_LIST (pspec)->element_spec;
  return pspec != NULL && checked_kind (pspec) >= 0;
}

/* A bound of a float range in words: the type's extremes and its smallest
 * positive value mean "no bound" and "above 0". */
static gchar *
describe_real_range (gdouble minimum, gdouble maximum, gdouble smallest,
    gdouble largest)
{
  gchar low[G_ASCII_DTOSTR_BUF_SIZE], high[G_ASCII_DTOSTR_BUF_SIZE];

  g_ascii_formatd (low, sizeof (low), "%g", minimum);
  g_ascii_formatd (high, sizeof (high), "%g", maximum);
  if (minimum == smallest && maximum >= largest)
    return g_strdup ("a finite number above 0");
  if (minimum == smallest)
    return g_strdup_printf ("above 0, at most %s", high);
  if (minimum <= -largest && maximum >= largest)
    return g_strdup ("a finite number");
  if (minimum <= -largest)
    return g_strdup_printf ("a finite number at most %s", high);
  if (maximum >= largest)
    return g_strdup_printf ("a finite number from %s", low);
  return g_strdup_printf ("from %s to %s", low, high);
}

/* The range of a checked spec in words; NULL for any other spec. */
static gchar *
describe_range (GParamSpec * pspec)
{
  switch (checked_kind (pspec)) {
    case CHECKED_INT:{
      GParamSpecInt *p = G_PARAM_SPEC_INT (pspec);

      return g_strdup_printf ("from %d to %d", p->minimum, p->maximum);
    }
    case CHECKED_UINT:{
      GParamSpecUInt *p = G_PARAM_SPEC_UINT (pspec);

      return g_strdup_printf ("from %u to %u", p->minimum, p->maximum);
    }
    case CHECKED_UINT64:{
      GParamSpecUInt64 *p = G_PARAM_SPEC_UINT64 (pspec);

      return g_strdup_printf ("from %" G_GUINT64_FORMAT " to %"
          G_GUINT64_FORMAT, p->minimum, p->maximum);
    }
    case CHECKED_FLOAT:{
      GParamSpecFloat *p = G_PARAM_SPEC_FLOAT (pspec);

      return describe_real_range (p->minimum, p->maximum, FLT_MIN, FLT_MAX);
    }
    case CHECKED_DOUBLE:{
      GParamSpecDouble *p = G_PARAM_SPEC_DOUBLE (pspec);

      return describe_real_range (p->minimum, p->maximum, DBL_MIN, DBL_MAX);
    }
    case CHECKED_FRACTION:{
      GstParamSpecFraction *p = GST_PARAM_SPEC_FRACTION (pspec);

      return g_strdup_printf ("from %d/%d to %d/%d", p->min_num, p->min_den,
          p->max_num, p->max_den);
    }
    default:
      return NULL;
  }
}

/* One value of a checked spec. */
static gboolean
scalar_in_range (GParamSpec * pspec, const GValue * value)
{
  switch (checked_kind (pspec)) {
    case CHECKED_INT:{
      GParamSpecInt *p = G_PARAM_SPEC_INT (pspec);
      gint v = g_value_get_int (value);

      return v >= p->minimum && v <= p->maximum;
    }
    case CHECKED_UINT:{
      GParamSpecUInt *p = G_PARAM_SPEC_UINT (pspec);
      guint v = g_value_get_uint (value);

      return v >= p->minimum && v <= p->maximum;
    }
    case CHECKED_UINT64:{
      GParamSpecUInt64 *p = G_PARAM_SPEC_UINT64 (pspec);
      guint64 v = g_value_get_uint64 (value);

      return v >= p->minimum && v <= p->maximum;
    }
    case CHECKED_FLOAT:{
      GParamSpecFloat *p = G_PARAM_SPEC_FLOAT (pspec);
      gfloat v = g_value_get_float (value);

      /* false for NaN */
      return v >= p->minimum && v <= p->maximum;
    }
    case CHECKED_DOUBLE:{
      GParamSpecDouble *p = G_PARAM_SPEC_DOUBLE (pspec);
      gdouble v = g_value_get_double (value);

      return v >= p->minimum && v <= p->maximum;
    }
    case CHECKED_FRACTION:{
      GstParamSpecFraction *p = GST_PARAM_SPEC_FRACTION (pspec);
      gint n = gst_value_get_fraction_numerator (value);
      gint d = gst_value_get_fraction_denominator (value);

      return gst_util_fraction_compare (n, d, p->min_num, p->min_den) >= 0
          && gst_util_fraction_compare (n, d, p->max_num, p->max_den) <= 0;
    }
    default:
      return TRUE;
  }
}

static gchar *
value_to_string (const GValue * value)
{
  gchar *text;

  if (G_VALUE_HOLDS_FLOAT (value) || G_VALUE_HOLDS_DOUBLE (value)) {
    gchar number[G_ASCII_DTOSTR_BUF_SIZE];

    g_ascii_formatd (number, sizeof (number), "%g", G_VALUE_HOLDS_FLOAT
        (value) ? g_value_get_float (value) : g_value_get_double (value));
    return g_strdup (number);
  }
  text = gst_value_serialize (value);
  return text ? text : g_strdup ("?");
}

gboolean
p3d_param_value_in_range (GParamSpec * pspec, const GValue * value,
    gchar ** why)
{
  gchar *range, *text;

  if (GST_IS_PARAM_SPEC_ARRAY_LIST (pspec)) {
    GParamSpec *element = GST_PARAM_SPEC_ARRAY_LIST (pspec)->element_spec;
    guint i, n;

    if (element == NULL || checked_kind (element) < 0
        || !GST_VALUE_HOLDS_ARRAY (value))
      return TRUE;
    n = gst_value_array_get_size (value);
    for (i = 0; i < n; i++) {
      const GValue *v = gst_value_array_get_value (value, i);

      if (G_VALUE_TYPE (v) != element->value_type
          || scalar_in_range (element, v))
        continue;
      if (why) {
        range = describe_range (element);
        text = value_to_string (v);
        *why = g_strdup_printf ("%s (value %u of %u) is not %s", text, i + 1,
            n, range);
        g_free (text);
        g_free (range);
      }
      return FALSE;
    }
    return TRUE;
  }
  if (checked_kind (pspec) < 0 || scalar_in_range (pspec, value))
    return TRUE;
  if (why) {
    range = describe_range (pspec);
    text = value_to_string (value);
    *why = g_strdup_printf ("%s is not %s", text, range);
    g_free (text);
    g_free (range);
  }
  return FALSE;
}

static gchar *
bad_value_key (const gchar * property)
{
  return g_strconcat ("p3d-bad-value:", property, NULL);
}

void
p3d_object_set_bad_value (GObject * object, const gchar * property,
    const gchar * why)
{
  gchar *key = bad_value_key (property);

  g_object_set_data_full (object, key, g_strdup (why), g_free);
  g_free (key);
}

/* What p3d_object_set_bad_value() noted for @property, or NULL. */
static gchar *
get_bad_value (GObject * object, const gchar * property)
{
  gchar *key = bad_value_key (property);
  gchar *why = g_strdup (g_object_get_data (object, key));

  g_free (key);
  return why;
}

/* The first checked property of @object out of range: its spec, and why. */
static GParamSpec *
find_bad_property (GObject * object, gchar ** why)
{
  GParamSpec **specs, *bad = NULL;
  guint n, i;

  specs = g_object_class_list_properties (G_OBJECT_GET_CLASS (object), &n);
  for (i = 0; i < n && bad == NULL; i++) {
    GValue value = G_VALUE_INIT;

    if (!(specs[i]->flags & G_PARAM_READABLE)
        || !(specs[i]->flags & G_PARAM_WRITABLE)
        || !p3d_param_spec_is_checked (specs[i]))
      continue;
    if ((*why = get_bad_value (object, specs[i]->name)) != NULL) {
      bad = specs[i];
      break;
    }
    g_value_init (&value, specs[i]->value_type);
    g_object_get_property (object, specs[i]->name, &value);
    if (!p3d_param_value_in_range (specs[i], &value, why))
      bad = specs[i];
    g_value_unset (&value);
  }
  g_free (specs);
  return bad;
}

static void
post_bad_property (GObject * object, GstElement * element, GParamSpec * pspec,
    const gchar * why)
{
  if (GST_IS_PAD (object))
    GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS,
        ("Invalid property %s of pad %s: %s", pspec->name,
            GST_OBJECT_NAME (object), why), ("%s", g_param_spec_get_blurb
            (pspec)));
  else
    GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS,
        ("Invalid property %s: %s", pspec->name, why),
        ("%s", g_param_spec_get_blurb (pspec)));
}

gboolean
p3d_object_check_properties (GObject * object, GstElement * element)
{
  GParamSpec *bad;
  gchar *why = NULL;

  g_return_val_if_fail (G_IS_OBJECT (object), FALSE);
  g_return_val_if_fail (GST_IS_ELEMENT (element), FALSE);
  bad = find_bad_property (object, &why);
  if (bad == NULL)
    return TRUE;
  post_bad_property (object, element, bad, why);
  g_free (why);
  return FALSE;
}

gboolean
p3d_element_check_properties (GstElement * element)
{
  return p3d_object_check_properties (G_OBJECT (element), element);
}

static void
property_notified (GObject * object, GParamSpec * pspec, gpointer data)
{
  GstElement *element = data;
  GValue value = G_VALUE_INIT;
  GstState state;
  gchar *why = NULL;

  if (!p3d_param_spec_is_checked (pspec)
      || !(pspec->flags & G_PARAM_READABLE))
    return;
  GST_OBJECT_LOCK (element);
  state = GST_STATE (element);
  GST_OBJECT_UNLOCK (element);
  /* before, the check at start sees the value */
  if (state < GST_STATE_PAUSED)
    return;
  g_value_init (&value, pspec->value_type);
  g_object_get_property (object, pspec->name, &value);
  why = get_bad_value (object, pspec->name);
  if (why != NULL || !p3d_param_value_in_range (pspec, &value, &why)) {
    post_bad_property (object, element, pspec, why);
    g_free (why);
  }
  g_value_unset (&value);
}

void
p3d_object_watch_properties (GObject * object, GstElement * element)
{
  g_return_if_fail (G_IS_OBJECT (object));
  g_return_if_fail (GST_IS_ELEMENT (element));
  g_signal_connect (object, "notify", G_CALLBACK (property_notified), element);
}
