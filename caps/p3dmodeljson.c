/* Reading `p3d.model`: typed, range-checked members of its JSON, each
 * fault an error that names the key (p3dmodel-private.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>

#include "p3dmodel-private.h"

gboolean
p3d_model_json_bad_key (GError ** error, const gchar * section,
    const gchar * key, const gchar * what)
{
  g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_METADATA,
      P3D_MODEL_METADATA_KEY ": \"%s%s%s\" %s", section ? section : "",
      section ? "." : "", key, what);
  return FALSE;
}

JsonNode *
p3d_model_json_member (JsonObject * object, const gchar * section,
    const gchar * key, GError ** error)
{
  JsonNode *node = json_object_get_member (object, key);

  if (node == NULL || JSON_NODE_HOLDS_NULL (node)) {
    p3d_model_json_bad_key (error, section, key, "is missing");
    return NULL;
  }
  return node;
}

gboolean
p3d_model_json_node_number (JsonNode * node, gdouble * value)
{
  GType type;

  if (!JSON_NODE_HOLDS_VALUE (node))
    return FALSE;
  type = json_node_get_value_type (node);
  if (type == G_TYPE_INT64)
    *value = (gdouble) json_node_get_int (node);
  else if (type == G_TYPE_DOUBLE)
    *value = json_node_get_double (node);
  else
    return FALSE;
  return isfinite (*value);
}

gboolean
p3d_model_json_double (JsonObject * object, const gchar * section,
    const gchar * key, gdouble min, gdouble max, gdouble * value,
    GError ** error)
{
  JsonNode *node = p3d_model_json_member (object, section, key, error);
  gchar *what;

  if (node == NULL)
    return FALSE;
  if (p3d_model_json_node_number (node, value) && *value >= min
      && *value <= max)
    return TRUE;
  what = g_strdup_printf ("must be a number in [%g, %g]", min, max);
  p3d_model_json_bad_key (error, section, key, what);
  g_free (what);
  return FALSE;
}

gboolean
p3d_model_json_node_uint (JsonNode * node, guint min, guint max, guint * value)
{
  gint64 v;

  if (!JSON_NODE_HOLDS_VALUE (node)
      || json_node_get_value_type (node) != G_TYPE_INT64)
    return FALSE;
  v = json_node_get_int (node);
  if (v < min || v > max)
    return FALSE;
  *value = (guint) v;
  return TRUE;
}

gboolean
p3d_model_json_uint (JsonObject * object, const gchar * section,
    const gchar * key, guint min, guint max, guint * value, GError ** error)
{
  JsonNode *node = p3d_model_json_member (object, section, key, error);
  gchar *what;

  if (node == NULL)
    return FALSE;
  if (p3d_model_json_node_uint (node, min, max, value))
    return TRUE;
  what = g_strdup_printf ("must be an integer in %u..%u", min, max);
  p3d_model_json_bad_key (error, section, key, what);
  g_free (what);
  return FALSE;
}

gboolean
p3d_model_json_boolean (JsonObject * object, const gchar * section,
    const gchar * key, gboolean fallback, gboolean * value, GError ** error)
{
  JsonNode *node = json_object_get_member (object, key);

  if (node == NULL) {
    *value = fallback;
    return TRUE;
  }
  if (JSON_NODE_HOLDS_VALUE (node)
      && json_node_get_value_type (node) == G_TYPE_BOOLEAN) {
    *value = json_node_get_boolean (node);
    return TRUE;
  }
  return p3d_model_json_bad_key (error, section, key, "must be true or false");
}

const gchar *
p3d_model_json_string (JsonObject * object, const gchar * section,
    const gchar * key, GError ** error)
{
  JsonNode *node = p3d_model_json_member (object, section, key, error);

  if (node == NULL)
    return NULL;
  if (JSON_NODE_HOLDS_VALUE (node)
      && json_node_get_value_type (node) == G_TYPE_STRING)
    return json_node_get_string (node);
  p3d_model_json_bad_key (error, section, key, "must be a string");
  return NULL;
}

JsonObject *
p3d_model_json_object (JsonObject * object, const gchar * section,
    const gchar * key, GError ** error)
{
  JsonNode *node = p3d_model_json_member (object, section, key, error);

  if (node == NULL)
    return NULL;
  if (JSON_NODE_HOLDS_OBJECT (node))
    return json_node_get_object (node);
  p3d_model_json_bad_key (error, section, key, "must be a JSON object");
  return NULL;
}

JsonArray *
p3d_model_json_array (JsonObject * object, const gchar * section,
    const gchar * key, guint min_length, guint max_length, guint * length,
    GError ** error)
{
  JsonNode *node = p3d_model_json_member (object, section, key, error);
  gchar *what;

  if (node == NULL)
    return NULL;
  if (JSON_NODE_HOLDS_ARRAY (node)) {
    JsonArray *array = json_node_get_array (node);

    *length = json_array_get_length (array);
    if (*length >= min_length && *length <= max_length)
      return array;
  }
  if (min_length == max_length)
    what = g_strdup_printf ("must be an array of %u entries", min_length);
  else
    what = g_strdup_printf ("must be an array of %u to %u entries",
        min_length, max_length);
  p3d_model_json_bad_key (error, section, key, what);
  g_free (what);
  return NULL;
}

gboolean
p3d_model_json_doubles (JsonObject * object, const gchar * section,
    const gchar * key, guint n, gdouble min, gdouble max, gdouble * values,
    GError ** error)
{
  guint length, i;
  JsonArray *array = p3d_model_json_array (object, section, key, n, n,
      &length, error);
  gchar *what;

  if (array == NULL)
    return FALSE;
  for (i = 0; i < n; i++) {
    if (!p3d_model_json_node_number (json_array_get_element (array, i),
            &values[i]) || values[i] < min || values[i] > max)
      break;
  }
  if (i == n)
    return TRUE;
  what = g_strdup_printf ("entry %u must be a number in [%g, %g]", i, min, max);
  p3d_model_json_bad_key (error, section, key, what);
  g_free (what);
  return FALSE;
}

gboolean
p3d_model_json_uints (JsonObject * object, const gchar * section,
    const gchar * key, guint max_length, guint min, guint max,
    guint * values, guint * length, GError ** error)
{
  guint n, i;
  JsonArray *array = p3d_model_json_array (object, section, key,
      *length ? *length : 1, *length ? *length : max_length, &n, error);
  gchar *what;

  if (array == NULL)
    return FALSE;
  for (i = 0; i < n; i++) {
    if (!p3d_model_json_node_uint (json_array_get_element (array, i), min,
            max, &values[i])) {
      what = g_strdup_printf ("entry %u must be an integer in %u..%u", i, min,
          max);
      p3d_model_json_bad_key (error, section, key, what);
      g_free (what);
      return FALSE;
    }
  }
  *length = n;
  return TRUE;
}
