/* Shared typed caps fields; see p3dcapsfields.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>

#include "p3dcapsfields.h"

GST_DEBUG_CATEGORY (p3d_caps_debug);
#define GST_CAT_DEFAULT p3d_caps_debug

void
p3d_caps_debug_init (void)
{
  static gsize done = 0;

  if (g_once_init_enter (&done)) {
    GST_DEBUG_CATEGORY_INIT (p3d_caps_debug, "p3dcaps", 0,
        "gst-perception media types");
    g_once_init_leave (&done, 1);
  }
}

static GPrivate last_refusal = G_PRIVATE_INIT (g_free);

void
p3d_caps_set_refusal (gchar * why)
{
  g_private_replace (&last_refusal, why);
}

gchar *
p3d_caps_take_refusal (void)
{
  gchar *why = g_private_get (&last_refusal);

  g_private_set (&last_refusal, NULL);
  return why;
}

const GstStructure *
p3d_caps_get_fixed_structure (const GstCaps * caps, const gchar * media_type)
{
  const GstStructure *s;

  p3d_caps_debug_init ();
  if (caps == NULL || !gst_caps_is_fixed (caps)) {
    P3D_CAPS_REFUSE ("caps are not fixed: %" GST_PTR_FORMAT, caps);
    return NULL;
  }
  s = gst_caps_get_structure (caps, 0);
  if (!gst_structure_has_name (s, media_type)) {
    P3D_CAPS_REFUSE ("media type %s, expected %s",
        gst_structure_get_name (s), media_type);
    return NULL;
  }
  return s;
}

gboolean
p3d_structure_get_uint_in_range (const GstStructure * s, const gchar * field,
    guint min, guint max, guint * value)
{
  gint v;

  if (!gst_structure_get_int (s, field, &v)) {
    P3D_CAPS_REFUSE ("no integer field %s in %" GST_PTR_FORMAT, field, s);
    return FALSE;
  }
  if (v < 0 || (guint) v < min || (guint) v > max) {
    P3D_CAPS_REFUSE ("%s = %d is outside [%u, %u]", field, v, min, max);
    return FALSE;
  }
  *value = (guint) v;
  return TRUE;
}

static gboolean
value_get_number (const GValue * v, gdouble * out)
{
  if (G_VALUE_HOLDS_DOUBLE (v))
    *out = g_value_get_double (v);
  else if (G_VALUE_HOLDS_INT (v))
    *out = g_value_get_int (v);
  else if (G_VALUE_HOLDS_FLOAT (v))
    *out = g_value_get_float (v);
  else
    return FALSE;
  return TRUE;
}

gboolean
p3d_structure_get_double_array (const GstStructure * s, const gchar * field,
    guint n, gdouble * values)
{
  const GValue *array = gst_structure_get_value (s, field);
  guint i;

  if (array == NULL || !GST_VALUE_HOLDS_ARRAY (array)) {
    P3D_CAPS_REFUSE ("no array field %s in %" GST_PTR_FORMAT, field, s);
    return FALSE;
  }
  if (gst_value_array_get_size (array) != n) {
    P3D_CAPS_REFUSE ("%s has %u values, expected %u", field,
        gst_value_array_get_size (array), n);
    return FALSE;
  }
  for (i = 0; i < n; i++) {
    if (!value_get_number (gst_value_array_get_value (array, i), &values[i])
        || !isfinite (values[i])) {
      P3D_CAPS_REFUSE ("%s[%u] is not a finite number", field, i);
      return FALSE;
    }
  }
  return TRUE;
}

gboolean
p3d_structure_get_uint_array (const GstStructure * s, const gchar * field,
    guint n, guint min, guint max, guint * values)
{
  const GValue *array = gst_structure_get_value (s, field);
  guint i;

  if (array == NULL || !GST_VALUE_HOLDS_ARRAY (array)
      || gst_value_array_get_size (array) != n) {
    P3D_CAPS_REFUSE ("%s is not an array of %u integers", field, n);
    return FALSE;
  }
  for (i = 0; i < n; i++) {
    const GValue *v = gst_value_array_get_value (array, i);
    gint x;

    if (!G_VALUE_HOLDS_INT (v)) {
      P3D_CAPS_REFUSE ("%s[%u] is not an integer", field, i);
      return FALSE;
    }
    x = g_value_get_int (v);
    if (x < 0 || (guint) x < min || (guint) x > max) {
      P3D_CAPS_REFUSE ("%s[%u] = %d is outside [%u, %u]", field, i, x, min,
          max);
      return FALSE;
    }
    values[i] = (guint) x;
  }
  return TRUE;
}

void
p3d_structure_set_double_array (GstStructure * s, const gchar * field,
    guint n, const gdouble * values)
{
  GValue array = G_VALUE_INIT, v = G_VALUE_INIT;
  guint i;

  gst_value_array_init (&array, n);
  g_value_init (&v, G_TYPE_DOUBLE);
  for (i = 0; i < n; i++) {
    g_value_set_double (&v, values[i]);
    gst_value_array_append_value (&array, &v);
  }
  g_value_unset (&v);
  gst_structure_take_value (s, field, &array);
}

void
p3d_structure_set_uint_array (GstStructure * s, const gchar * field,
    guint n, const guint * values)
{
  GValue array = G_VALUE_INIT, v = G_VALUE_INIT;
  guint i;

  gst_value_array_init (&array, n);
  g_value_init (&v, G_TYPE_INT);
  for (i = 0; i < n; i++) {
    g_value_set_int (&v, (gint) values[i]);
    gst_value_array_append_value (&array, &v);
  }
  g_value_unset (&v);
  gst_structure_take_value (s, field, &array);
}

gboolean
p3d_structure_get_framerate (const GstStructure * s, gint * fps_n, gint * fps_d)
{
  if (!gst_structure_has_field (s, "framerate")) {
    *fps_n = 0;
    *fps_d = 1;
    return TRUE;
  }
  if (!gst_structure_get_fraction (s, "framerate", fps_n, fps_d)
      || *fps_n < 0 || *fps_d <= 0) {
    P3D_CAPS_REFUSE ("invalid framerate in %" GST_PTR_FORMAT, s);
    return FALSE;
  }
  return TRUE;
}

void
p3d_structure_set_framerate (GstStructure * s, gint fps_n, gint fps_d)
{
  if (fps_n > 0 && fps_d > 0)
    gst_structure_set (s, "framerate", GST_TYPE_FRACTION, fps_n, fps_d, NULL);
}

gboolean
p3d_grid_from_range (const gdouble * voxel_size, const gdouble * range,
    guint axes, guint * grid)
{
  guint i;

  for (i = 0; i < axes; i++) {
    gdouble extent = range[axes + i] - range[i];
    gdouble cells;

    if (!(voxel_size[i] > 0.0) || !(extent > 0.0)) {
      P3D_CAPS_REFUSE ("axis %u has size %g over [%g, %g]", i,
          voxel_size[i], range[i], range[axes + i]);
      return FALSE;
    }
    cells = round (extent / voxel_size[i]);
    if (cells < 1.0 || cells > G_MAXINT32) {
      P3D_CAPS_REFUSE ("axis %u would have %g cells", i, cells);
      return FALSE;
    }
    grid[i] = (guint) cells;
  }
  return TRUE;
}

typedef struct
{
  const GstStructure *other;
  GQuark field;
} ConflictSearch;

static gboolean
find_conflicting_field (GQuark field, const GValue * value, gpointer data)
{
  ConflictSearch *search = data;
  const GValue *other = gst_structure_id_get_value (search->other, field);

  if (other == NULL || gst_value_intersect (NULL, value, other))
    return TRUE;
  search->field = field;
  return FALSE;
}

static gchar *
serialize_value (const GValue * value)
{
  gchar *text = value ? gst_value_serialize (value) : NULL;

  return text ? text : g_strdup ("?");
}

gboolean
p3d_caps_find_conflicting_field (const GstCaps * a, const GstCaps * b,
    gchar ** field, gchar ** a_value, gchar ** b_value)
{
  const GstStructure *first;
  guint i;

  if (a == NULL || b == NULL || gst_caps_is_empty (a) || gst_caps_is_empty (b)
      || gst_caps_can_intersect (a, b))
    return FALSE;
  first = gst_caps_get_structure (a, 0);
  for (i = 0; i < gst_caps_get_size (b); i++) {
    const GstStructure *s = gst_caps_get_structure (b, i);
    ConflictSearch search = { s, 0 };

    if (!gst_structure_has_name (s, gst_structure_get_name (first)))
      continue;
    gst_structure_foreach (first, find_conflicting_field, &search);
    if (search.field == 0)
      continue;
    *field = g_strdup (g_quark_to_string (search.field));
    *a_value = serialize_value (gst_structure_id_get_value (first,
            search.field));
    *b_value = serialize_value (gst_structure_id_get_value (s, search.field));
    return TRUE;
  }
  return FALSE;
}

gchar *
p3d_caps_describe_conflict (const GstCaps * a, const GstCaps * b)
{
  gchar *field, *a_value, *b_value, *why;
  guint i;

  if (a == NULL || b == NULL || gst_caps_is_empty (a)
      || gst_caps_is_empty (b))
    return g_strdup ("one side has no caps at all");
  if (gst_caps_can_intersect (a, b))
    return NULL;
  if (p3d_caps_find_conflicting_field (a, b, &field, &a_value, &b_value)) {
    why = g_strdup_printf ("%s: %s against %s", field, a_value, b_value);
    g_free (field);
    g_free (a_value);
    g_free (b_value);
    return why;
  }
  for (i = 0; i < gst_caps_get_size (b); i++) {
    if (gst_structure_has_name (gst_caps_get_structure (b, i),
            gst_structure_get_name (gst_caps_get_structure (a, 0)))) {
      gchar *fa = gst_caps_features_to_string (gst_caps_get_features (a, 0));
      gchar *fb = gst_caps_features_to_string (gst_caps_get_features (b, i));

      why = g_strdup_printf ("memory %s against %s", fa, fb);
      g_free (fa);
      g_free (fb);
      return why;
    }
  }
  return g_strdup_printf ("media type %s against %s",
      gst_structure_get_name (gst_caps_get_structure (a, 0)),
      gst_structure_get_name (gst_caps_get_structure (b, 0)));
}
