/* The safetensors reader: map, validate the header once, then look up. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <json-glib/json-glib.h>

#include "half.h"
#include "p3dweights.h"
#include "p3djson.h"

/* safetensors itself refuses larger headers: a bigger one is garbage. */
#define MAX_HEADER_SIZE 100000000

#define METADATA_KEY "__metadata__"

struct _P3dWeights
{
  gchar *name;
  GBytes *bytes;
  P3dWeightsTensor *tensors;
  guint n_tensors;
  GHashTable *by_name;          /* name -> P3dWeightsTensor *, not owned */
  GHashTable *metadata;         /* key -> value, both owned */
};

static const struct
{
  const gchar *name;
  guint size;
} dtypes[P3D_WEIGHTS_N_DTYPES] = {
  [P3D_WEIGHTS_DTYPE_BOOL] = {"BOOL", 1},
  [P3D_WEIGHTS_DTYPE_U8] = {"U8", 1},
  [P3D_WEIGHTS_DTYPE_I8] = {"I8", 1},
  [P3D_WEIGHTS_DTYPE_F8_E5M2] = {"F8_E5M2", 1},
  [P3D_WEIGHTS_DTYPE_F8_E4M3] = {"F8_E4M3", 1},
  [P3D_WEIGHTS_DTYPE_I16] = {"I16", 2},
  [P3D_WEIGHTS_DTYPE_U16] = {"U16", 2},
  [P3D_WEIGHTS_DTYPE_F16] = {"F16", 2},
  [P3D_WEIGHTS_DTYPE_BF16] = {"BF16", 2},
  [P3D_WEIGHTS_DTYPE_I32] = {"I32", 4},
  [P3D_WEIGHTS_DTYPE_U32] = {"U32", 4},
  [P3D_WEIGHTS_DTYPE_F32] = {"F32", 4},
  [P3D_WEIGHTS_DTYPE_F64] = {"F64", 8},
  [P3D_WEIGHTS_DTYPE_I64] = {"I64", 8},
  [P3D_WEIGHTS_DTYPE_U64] = {"U64", 8},
};

G_DEFINE_QUARK (p3d - weights - error - quark, p3d_weights_error);

const gchar *
p3d_weights_dtype_to_string (P3dWeightsDtype dtype)
{
  g_return_val_if_fail ((guint) dtype < P3D_WEIGHTS_N_DTYPES, NULL);
  return dtypes[dtype].name;
}

guint
p3d_weights_dtype_get_size (P3dWeightsDtype dtype)
{
  g_return_val_if_fail ((guint) dtype < P3D_WEIGHTS_N_DTYPES, 0);
  return dtypes[dtype].size;
}

static gboolean
dtype_from_string (const gchar * name, P3dWeightsDtype * dtype)
{
  guint i;

  for (i = 0; i < P3D_WEIGHTS_N_DTYPES; i++) {
    if (g_strcmp0 (name, dtypes[i].name) == 0) {
      *dtype = i;
      return TRUE;
    }
  }
  return FALSE;
}

gchar *
p3d_weights_shape_to_string (guint n_dims, const gint64 * shape)
{
  GString *text = g_string_new ("[");
  guint i;

  for (i = 0; i < n_dims; i++) {
    if (i > 0)
      g_string_append (text, ", ");
    if (shape[i] < 0)
      g_string_append (text, "*");
    else
      g_string_append_printf (text, "%" G_GINT64_FORMAT, shape[i]);
  }
  g_string_append (text, "]");
  return g_string_free (text, FALSE);
}

static gchar *
tensor_shape_to_string (const P3dWeightsTensor * tensor)
{
  gint64 shape[P3D_WEIGHTS_MAX_DIMS];
  guint i;

  for (i = 0; i < tensor->n_dims; i++)
    shape[i] = (gint64) tensor->shape[i];
  return p3d_weights_shape_to_string (tensor->n_dims, shape);
}

/* json-glib keeps the last of two members with one name, silently; a
 * weights file with two tensors of one name is ambiguous, so the header's
 * top-level keys are counted on the text itself.  The text is valid JSON
 * (the parser accepted it), so strings and nesting are all this needs.
 * Returns the first repeated key (raw, as written), or NULL. */
static gchar *
find_repeated_top_level_key (const gchar * text, gsize length, guint * n_keys)
{
  GHashTable *seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      NULL);
  gchar *repeated = NULL;
  gint depth = 0;
  gsize i;

  for (i = 0; i < length && repeated == NULL; i++) {
    if (text[i] == '"') {
      gsize start = ++i;

      while (i < length && text[i] != '"')
        i += text[i] == '\\' ? 2 : 1;
      if (depth == 1 && i < length) {
        gsize next = i + 1;

        while (next < length && g_ascii_isspace (text[next]))
          next++;
        if (next < length && text[next] == ':') {
          gchar *key = g_strndup (text + start, i - start);

          if (g_hash_table_contains (seen, key))
            repeated = key;
          else
            g_hash_table_add (seen, key);
        }
      }
    } else if (text[i] == '{' || text[i] == '[') {
      depth++;
    } else if (text[i] == '}' || text[i] == ']') {
      depth--;
    }
  }
  *n_keys = g_hash_table_size (seen);
  g_hash_table_unref (seen);
  return repeated;
}

/* A non-negative JSON integer. */
static gboolean
node_get_size (JsonNode * node, guint64 * value)
{
  gint64 v;

  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node)
      || json_node_get_value_type (node) != G_TYPE_INT64)
    return FALSE;
  v = json_node_get_int (node);
  if (v < 0)
    return FALSE;
  *value = (guint64) v;
  return TRUE;
}

/* A tensor while the header is read: its byte range in the data area. */
typedef struct
{
  P3dWeightsTensor tensor;
  guint64 begin;
  guint64 end;
} Entry;

static gint
compare_by_offset (gconstpointer a, gconstpointer b, gpointer unused)
{
  const Entry *entry_a = a, *entry_b = b;

  if (entry_a->begin != entry_b->begin)
    return entry_a->begin < entry_b->begin ? -1 : 1;
  return entry_a->end < entry_b->end ? -1 : entry_a->end > entry_b->end;
}

static gint
compare_strings (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const gchar * const *) a, *(const gchar * const *) b);
}

static gboolean
parse_metadata (P3dWeights * weights, JsonNode * node, GError ** error)
{
  JsonObject *object;
  GList *members, *l;
  gboolean ok = TRUE;

  if (!JSON_NODE_HOLDS_OBJECT (node)) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_HEADER,
        "%s: \"" METADATA_KEY "\" is not a JSON object", weights->name);
    return FALSE;
  }
  object = json_node_get_object (node);
  members = json_object_get_members (object);
  for (l = members; l != NULL && ok; l = l->next) {
    JsonNode *value = json_object_get_member (object, l->data);

    if (!JSON_NODE_HOLDS_VALUE (value)
        || json_node_get_value_type (value) != G_TYPE_STRING) {
      g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_HEADER,
          "%s: metadata \"%s\" is not a string (safetensors metadata "
          "values are strings)", weights->name, (const gchar *) l->data);
      ok = FALSE;
    } else {
      g_hash_table_insert (weights->metadata, g_strdup (l->data),
          g_strdup (json_node_get_string (value)));
    }
  }
  g_list_free (members);
  return ok;
}

/* Fills @parsed from the header's entry of tensor @name (all but the data
 * pointer). */
static gboolean
parse_entry (P3dWeights * weights, const gchar * name, JsonNode * node,
    gsize data_size, Entry * parsed, GError ** error)
{
  P3dWeightsTensor *tensor = &parsed->tensor;
  guint64 *begin = &parsed->begin, *end = &parsed->end;
  JsonObject *entry;
  JsonNode *member;
  JsonArray *array;
  guint64 count = 1, bytes;
  guint i;

  if (!JSON_NODE_HOLDS_OBJECT (node)) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_HEADER,
        "%s: the header entry of tensor '%s' is not a JSON object",
        weights->name, name);
    return FALSE;
  }
  entry = json_node_get_object (node);
  /* the parser's copy, until the caller copies it */
  tensor->name = name;

  member = json_object_get_member (entry, "dtype");
  if (member == NULL || !JSON_NODE_HOLDS_VALUE (member)
      || json_node_get_value_type (member) != G_TYPE_STRING) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_HEADER,
        "%s: tensor '%s' has no \"dtype\" string", weights->name, name);
    return FALSE;
  }
  if (!dtype_from_string (json_node_get_string (member), &tensor->dtype)) {
    g_set_error (error, P3D_WEIGHTS_ERROR,
        P3D_WEIGHTS_ERROR_UNSUPPORTED_DTYPE,
        "%s: tensor '%s' has dtype '%s', which is not a safetensors dtype",
        weights->name, name, json_node_get_string (member));
    return FALSE;
  }

  member = json_object_get_member (entry, "shape");
  if (member == NULL || !JSON_NODE_HOLDS_ARRAY (member)
      || json_array_get_length (json_node_get_array (member)) >
      P3D_WEIGHTS_MAX_DIMS) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_HEADER,
        "%s: tensor '%s' has no \"shape\" array of at most %d sizes",
        weights->name, name, P3D_WEIGHTS_MAX_DIMS);
    return FALSE;
  }
  array = json_node_get_array (member);
  tensor->n_dims = json_array_get_length (array);
  for (i = 0; i < tensor->n_dims; i++) {
    if (!node_get_size (json_array_get_element (array, i), &tensor->shape[i])) {
      g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_HEADER,
          "%s: tensor '%s': shape entry %u is not a non-negative integer",
          weights->name, name, i);
      return FALSE;
    }
    if (!g_uint64_checked_mul (&count, count, tensor->shape[i])) {
      g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_HEADER,
          "%s: tensor '%s': the shape's element count overflows",
          weights->name, name);
      return FALSE;
    }
  }

  member = json_object_get_member (entry, "data_offsets");
  if (member == NULL || !JSON_NODE_HOLDS_ARRAY (member)
      || json_array_get_length (json_node_get_array (member)) != 2
      || !node_get_size (json_array_get_element (json_node_get_array
              (member), 0), begin)
      || !node_get_size (json_array_get_element (json_node_get_array
              (member), 1), end) || *begin > *end) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_HEADER,
        "%s: tensor '%s' has no \"data_offsets\" [begin, end] with "
        "0 <= begin <= end", weights->name, name);
    return FALSE;
  }
  if (*end > data_size) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_TRUNCATED,
        "%s: tensor '%s' ends at byte %" G_GUINT64_FORMAT " of the data, "
        "but the file holds only %" G_GSIZE_FORMAT " bytes of data "
        "(truncated?)", weights->name, name, *end, data_size);
    return FALSE;
  }
  if (!g_uint64_checked_mul (&bytes, count, dtypes[tensor->dtype].size)
      || bytes != *end - *begin) {
    gchar *shape = tensor_shape_to_string (tensor);

    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_HEADER,
        "%s: tensor '%s' of shape %s and dtype %s needs %" G_GUINT64_FORMAT
        " elements of %u bytes, but its data_offsets span %" G_GUINT64_FORMAT
        " bytes", weights->name, name, shape, dtypes[tensor->dtype].name,
        count, dtypes[tensor->dtype].size, *end - *begin);
    g_free (shape);
    return FALSE;
  }
  tensor->n_elements = count;
  return TRUE;
}

static gboolean
parse_header (P3dWeights * weights, GError ** error)
{
  gsize size;
  const guint8 *data = g_bytes_get_data (weights->bytes, &size);
  const gchar *header;
  guint64 header_size;
  Entry *entries = NULL, *last = NULL;
  gsize data_size;
  JsonParser *parser = NULL;
  JsonObject *root;
  GList *members = NULL, *l;
  GError *json_error = NULL;
  gchar *repeated;
  guint n_keys, n_entries, n_parsed = 0, i;
  gboolean ok = FALSE;

  if (size < 8) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_NOT_SAFETENSORS,
        "%s is not a safetensors file: %" G_GSIZE_FORMAT " bytes, fewer "
        "than the 8 of the header length", weights->name, size);
    return FALSE;
  }
  memcpy (&header_size, data, 8);
  header_size = GUINT64_FROM_LE (header_size);
  header = (const gchar *) data + 8;
  if (header_size > size - 8) {
    /* A header that starts as JSON does is a safetensors file cut short;
     * anything else was never one. */
    if (size > 8 && header[0] == '{')
      g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_TRUNCATED,
          "%s is truncated: its header length is %" G_GUINT64_FORMAT
          " bytes but only %" G_GSIZE_FORMAT " bytes follow it",
          weights->name, header_size, size - 8);
    else
      g_set_error (error, P3D_WEIGHTS_ERROR,
          P3D_WEIGHTS_ERROR_NOT_SAFETENSORS,
          "%s is not a safetensors file: its first 8 bytes give a header "
          "length of %" G_GUINT64_FORMAT " bytes, more than the file's %"
          G_GSIZE_FORMAT, weights->name, header_size, size);
    return FALSE;
  }
  if (header_size < 2 || header[0] != '{') {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_NOT_SAFETENSORS,
        "%s is not a safetensors file: its header does not start with a "
        "JSON object", weights->name);
    return FALSE;
  }
  if (header_size > MAX_HEADER_SIZE) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_HEADER,
        "%s: the header length %" G_GUINT64_FORMAT " exceeds the "
        "safetensors limit of %d bytes", weights->name, header_size,
        MAX_HEADER_SIZE);
    return FALSE;
  }
  data_size = size - 8 - header_size;

  parser = json_parser_new ();
  if (!p3d_json_parser_load (parser, header, header_size, &json_error)) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_HEADER,
        "%s: the safetensors header is not valid JSON: %s", weights->name,
        json_error->message);
    g_error_free (json_error);
    goto done;
  }
  if (!JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser))) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_NOT_SAFETENSORS,
        "%s is not a safetensors file: its header is not a JSON object",
        weights->name);
    goto done;
  }
  root = json_node_get_object (json_parser_get_root (parser));
  repeated = find_repeated_top_level_key (header, header_size, &n_keys);
  if (repeated != NULL || n_keys != json_object_get_size (root)) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_HEADER,
        "%s: the header names tensor '%s' more than once", weights->name,
        repeated ? repeated : "(a name written with escapes)");
    g_free (repeated);
    goto done;
  }

  members = json_object_get_members (root);
  n_entries = json_object_get_size (root);
  if (json_object_has_member (root, METADATA_KEY))
    n_entries--;
  entries = g_new0 (Entry, n_entries);
  for (l = members; l != NULL; l = l->next) {
    const gchar *name = l->data;
    JsonNode *node = json_object_get_member (root, name);

    if (strcmp (name, METADATA_KEY) == 0) {
      if (!parse_metadata (weights, node, error))
        goto done;
    } else {
      if (!parse_entry (weights, name, node, data_size, &entries[n_parsed],
              error))
        goto done;
      n_parsed++;
    }
  }

  /* In the order of their data, every non-empty tensor must begin at or
   * after the end of all non-empty ones before it (empty ones own no byte,
   * wherever they point). */
  g_qsort_with_data (entries, n_parsed, sizeof (Entry), compare_by_offset,
      NULL);
  for (i = 0; i < n_parsed; i++) {
    if (entries[i].end == entries[i].begin)
      continue;
    if (last != NULL && last->end > entries[i].begin) {
      g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_HEADER,
          "%s: the data of tensors '%s' and '%s' overlap", weights->name,
          last->tensor.name, entries[i].tensor.name);
      goto done;
    }
    if (last == NULL || entries[i].end > last->end)
      last = &entries[i];
  }
  weights->tensors = g_new0 (P3dWeightsTensor, n_parsed);
  for (i = 0; i < n_parsed; i++) {
    weights->tensors[i] = entries[i].tensor;
    weights->tensors[i].name = g_strdup (entries[i].tensor.name);
    weights->tensors[i].data = data + 8 + header_size + entries[i].begin;
  }
  weights->n_tensors = n_parsed;
  for (i = 0; i < weights->n_tensors; i++)
    g_hash_table_insert (weights->by_name, (gpointer) weights->tensors[i].name,
        &weights->tensors[i]);
  ok = TRUE;

done:
  g_list_free (members);
  g_free (entries);
  g_clear_object (&parser);
  return ok;
}

P3dWeights *
p3d_weights_new_from_bytes (GBytes * bytes, const gchar * name, GError ** error)
{
  P3dWeights *weights;

  g_return_val_if_fail (bytes != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  weights = g_new0 (P3dWeights, 1);
  weights->name = g_strdup (name ? name : "(weights in memory)");
  weights->bytes = g_bytes_ref (bytes);
  weights->by_name = g_hash_table_new (g_str_hash, g_str_equal);
  weights->metadata = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      g_free);
  if (!parse_header (weights, error)) {
    p3d_weights_free (weights);
    return NULL;
  }
  return weights;
}

P3dWeights *
p3d_weights_open (const gchar * path, GError ** error)
{
  GMappedFile *file;
  GBytes *bytes;
  P3dWeights *weights;
  GError *map_error = NULL;

  g_return_val_if_fail (path != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  file = g_mapped_file_new (path, FALSE, &map_error);
  if (file == NULL) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_OPEN,
        "cannot read the weights file: %s", map_error->message);
    g_error_free (map_error);
    return NULL;
  }
  bytes = g_mapped_file_get_bytes (file);
  g_mapped_file_unref (file);
  weights = p3d_weights_new_from_bytes (bytes, path, error);
  g_bytes_unref (bytes);
  return weights;
}

void
p3d_weights_free (P3dWeights * weights)
{
  guint i;

  if (weights == NULL)
    return;
  for (i = 0; i < weights->n_tensors; i++)
    g_free ((gchar *) weights->tensors[i].name);
  g_free (weights->tensors);
  g_hash_table_unref (weights->by_name);
  g_hash_table_unref (weights->metadata);
  g_bytes_unref (weights->bytes);
  g_free (weights->name);
  g_free (weights);
}

const gchar *
p3d_weights_get_name (const P3dWeights * weights)
{
  g_return_val_if_fail (weights != NULL, NULL);
  return weights->name;
}

guint
p3d_weights_get_n_tensors (const P3dWeights * weights)
{
  g_return_val_if_fail (weights != NULL, 0);
  return weights->n_tensors;
}

const P3dWeightsTensor *
p3d_weights_get_tensor (const P3dWeights * weights, guint index)
{
  g_return_val_if_fail (weights != NULL, NULL);
  g_return_val_if_fail (index < weights->n_tensors, NULL);
  return &weights->tensors[index];
}

const P3dWeightsTensor *
p3d_weights_find (const P3dWeights * weights, const gchar * name)
{
  g_return_val_if_fail (weights != NULL, NULL);
  g_return_val_if_fail (name != NULL, NULL);
  return g_hash_table_lookup (weights->by_name, name);
}

const P3dWeightsTensor *
p3d_weights_lookup (const P3dWeights * weights, const gchar * name,
    guint n_dims, const gint64 * shape, GError ** error)
{
  const P3dWeightsTensor *tensor;
  gboolean match;
  guint i;

  g_return_val_if_fail (n_dims <= P3D_WEIGHTS_MAX_DIMS, NULL);
  tensor = p3d_weights_find (weights, name);
  if (tensor == NULL) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_MISSING_TENSOR,
        "%s has no tensor '%s'", weights->name, name);
    return NULL;
  }
  match = tensor->n_dims == n_dims;
  for (i = 0; i < n_dims && match; i++)
    match = shape[i] < 0 || (guint64) shape[i] == tensor->shape[i];
  if (!match) {
    gchar *expected = p3d_weights_shape_to_string (n_dims, shape);
    gchar *found = tensor_shape_to_string (tensor);

    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_SHAPE,
        "%s: tensor '%s' has shape %s, but the model expects %s",
        weights->name, name, found, expected);
    g_free (expected);
    g_free (found);
    return NULL;
  }
  return tensor;
}

/* Refuses a tensor with a value that no trained network holds: NaN or an
 * infinity (or, from F64, a value beyond float32's range, which the
 * conversion made infinite), naming the tensor and the first such
 * element, so that the model fails at load rather than per frame. */
static gboolean
check_finite (const P3dWeights * weights, const P3dWeightsTensor * tensor,
    const gfloat * values, gsize n_elements, GError ** error)
{
  const guint8 *src = tensor->data;
  gsize i;

  for (i = 0; i < n_elements; i++) {
    gchar text[G_ASCII_DTOSTR_BUF_SIZE];

    if (isfinite (values[i]))
      continue;
    if (tensor->dtype == P3D_WEIGHTS_DTYPE_F64) {
      guint64 bits;
      gdouble value;

      memcpy (&bits, src + 8 * i, 8);
      bits = GUINT64_FROM_LE (bits);
      memcpy (&value, &bits, 8);
      if (isfinite (value)) {
        g_ascii_formatd (text, sizeof (text), "%g", value);
        g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_VALUE,
            "%s: tensor '%s' holds %s at element %" G_GSIZE_FORMAT ", beyond "
            "the float32 range (about 3.4e38) the network computes in",
            weights->name, tensor->name, text, i);
        return FALSE;
      }
    }
    g_ascii_formatd (text, sizeof (text), "%g", values[i]);
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_VALUE,
        "%s: tensor '%s' holds %s at element %" G_GSIZE_FORMAT ": weights "
        "must be finite numbers (a diverged training run, or a corrupt "
        "file?)", weights->name, tensor->name, text, i);
    return FALSE;
  }
  return TRUE;
}

gboolean
p3d_weights_read_float (const P3dWeights * weights,
    const P3dWeightsTensor * tensor, gfloat * dest, gsize n_elements,
    GError ** error)
{
  const guint8 *src = tensor->data;
  gsize i;

  g_return_val_if_fail (weights != NULL && tensor != NULL, FALSE);
  g_return_val_if_fail (n_elements == tensor->n_elements, FALSE);

  switch (tensor->dtype) {
    case P3D_WEIGHTS_DTYPE_F32:
      for (i = 0; i < n_elements; i++) {
        guint32 bits;

        memcpy (&bits, src + 4 * i, 4);
        bits = GUINT32_FROM_LE (bits);
        memcpy (&dest[i], &bits, 4);
      }
      break;
    case P3D_WEIGHTS_DTYPE_F16:
      for (i = 0; i < n_elements; i++) {
        guint16 bits;

        memcpy (&bits, src + 2 * i, 2);
        dest[i] = p3dc_half_to_float (GUINT16_FROM_LE (bits));
      }
      break;
    case P3D_WEIGHTS_DTYPE_BF16:
      /* bfloat16 is the upper half of a float32 */
      for (i = 0; i < n_elements; i++) {
        guint16 half;
        guint32 bits;

        memcpy (&half, src + 2 * i, 2);
        bits = (guint32) GUINT16_FROM_LE (half) << 16;
        memcpy (&dest[i], &bits, 4);
      }
      break;
    case P3D_WEIGHTS_DTYPE_F64:
      for (i = 0; i < n_elements; i++) {
        guint64 bits;
        gdouble value;

        memcpy (&bits, src + 8 * i, 8);
        bits = GUINT64_FROM_LE (bits);
        memcpy (&value, &bits, 8);
        dest[i] = (gfloat) value;
      }
      break;
    default:
      g_set_error (error, P3D_WEIGHTS_ERROR,
          P3D_WEIGHTS_ERROR_UNSUPPORTED_DTYPE,
          "%s: tensor '%s' has dtype %s; only F32, F16, BF16 and F64 "
          "weights can be read (convert the checkpoint to float)",
          weights->name, tensor->name, dtypes[tensor->dtype].name);
      return FALSE;
  }
  return check_finite (weights, tensor, dest, n_elements, error);
}

const gchar *
p3d_weights_get_metadata (const P3dWeights * weights, const gchar * key)
{
  g_return_val_if_fail (weights != NULL, NULL);
  g_return_val_if_fail (key != NULL, NULL);
  return g_hash_table_lookup (weights->metadata, key);
}

const gchar **
p3d_weights_get_metadata_keys (const P3dWeights * weights)
{
  const gchar **keys;
  guint n;

  g_return_val_if_fail (weights != NULL, NULL);
  keys = (const gchar **) g_hash_table_get_keys_as_array (weights->metadata,
      &n);
  qsort (keys, n, sizeof (gchar *), compare_strings);
  return keys;
}
