/* The tests' safetensors writer (see p3dtest-safetensors.h). */
#include <string.h>
#include <gst/check/gstcheck.h>
#include <json-glib/json-glib.h>

#include "p3dtest-safetensors.h"

typedef struct
{
  gchar *name;
  gchar *dtype;
  guint n_dims;
  gint64 shape[8];
  guint64 begin, end;
} Entry;

struct _P3dTestSafetensors
{
  GArray *entries;              /* Entry */
  GByteArray *data;
  GPtrArray *metadata;          /* key, value, key, value, ... */
};

static void
entry_clear (gpointer data)
{
  Entry *entry = data;

  g_free (entry->name);
  g_free (entry->dtype);
}

P3dTestSafetensors *
p3d_test_safetensors_new (void)
{
  P3dTestSafetensors *st = g_new0 (P3dTestSafetensors, 1);

  st->entries = g_array_new (FALSE, TRUE, sizeof (Entry));
  g_array_set_clear_func (st->entries, entry_clear);
  st->data = g_byte_array_new ();
  st->metadata = g_ptr_array_new_with_free_func (g_free);
  return st;
}

void
p3d_test_safetensors_free (P3dTestSafetensors * st)
{
  g_array_unref (st->entries);
  g_byte_array_unref (st->data);
  g_ptr_array_unref (st->metadata);
  g_free (st);
}

void
p3d_test_safetensors_add (P3dTestSafetensors * st, const gchar * name,
    const gchar * dtype, guint n_dims, const gint64 * shape,
    gconstpointer data, gsize size)
{
  Entry entry = { 0 };

  fail_unless (n_dims <= 8);
  entry.name = g_strdup (name);
  entry.dtype = g_strdup (dtype);
  entry.n_dims = n_dims;
  memcpy (entry.shape, shape, n_dims * sizeof (gint64));
  entry.begin = st->data->len;
  entry.end = entry.begin + size;
  g_byte_array_append (st->data, data, size);
  g_array_append_val (st->entries, entry);
}

void
p3d_test_safetensors_add_f32 (P3dTestSafetensors * st, const gchar * name,
    guint n_dims, const gint64 * shape, const gfloat * values)
{
  gsize count = 1, i;
  guint32 *le;

  for (i = 0; i < n_dims; i++)
    count *= shape[i];
  le = g_new (guint32, MAX (count, 1));
  for (i = 0; i < count; i++) {
    memcpy (&le[i], &values[i], 4);
    le[i] = GUINT32_TO_LE (le[i]);
  }
  p3d_test_safetensors_add (st, name, "F32", n_dims, shape, le, 4 * count);
  g_free (le);
}

void
p3d_test_safetensors_set_metadata (P3dTestSafetensors * st,
    const gchar * key, const gchar * value)
{
  g_ptr_array_add (st->metadata, g_strdup (key));
  g_ptr_array_add (st->metadata, g_strdup (value));
}

GBytes *
p3d_test_safetensors_serialize (const P3dTestSafetensors * st)
{
  JsonBuilder *builder = json_builder_new ();
  JsonGenerator *generator = json_generator_new ();
  JsonNode *root;
  gchar *header;
  gsize header_size;
  guint64 length;
  GByteArray *file = g_byte_array_new ();
  guint i, d;

  json_builder_begin_object (builder);
  if (st->metadata->len > 0) {
    json_builder_set_member_name (builder, "__metadata__");
    json_builder_begin_object (builder);
    for (i = 0; i < st->metadata->len; i += 2) {
      json_builder_set_member_name (builder, st->metadata->pdata[i]);
      json_builder_add_string_value (builder, st->metadata->pdata[i + 1]);
    }
    json_builder_end_object (builder);
  }
  for (i = 0; i < st->entries->len; i++) {
    Entry *entry = &g_array_index (st->entries, Entry, i);

    json_builder_set_member_name (builder, entry->name);
    json_builder_begin_object (builder);
    json_builder_set_member_name (builder, "dtype");
    json_builder_add_string_value (builder, entry->dtype);
    json_builder_set_member_name (builder, "shape");
    json_builder_begin_array (builder);
    for (d = 0; d < entry->n_dims; d++)
      json_builder_add_int_value (builder, entry->shape[d]);
    json_builder_end_array (builder);
    json_builder_set_member_name (builder, "data_offsets");
    json_builder_begin_array (builder);
    json_builder_add_int_value (builder, entry->begin);
    json_builder_add_int_value (builder, entry->end);
    json_builder_end_array (builder);
    json_builder_end_object (builder);
  }
  json_builder_end_object (builder);
  root = json_builder_get_root (builder);
  json_generator_set_root (generator, root);
  header = json_generator_to_data (generator, &header_size);

  length = GUINT64_TO_LE ((guint64) header_size);
  g_byte_array_append (file, (const guint8 *) &length, 8);
  g_byte_array_append (file, (const guint8 *) header, header_size);
  g_byte_array_append (file, st->data->data, st->data->len);
  g_free (header);
  json_node_unref (root);
  g_object_unref (generator);
  g_object_unref (builder);
  return g_byte_array_free_to_bytes (file);
}

void
p3d_test_write_raw_safetensors (const gchar * path, const gchar * header,
    gconstpointer data, gsize size)
{
  GByteArray *file = g_byte_array_new ();
  guint64 length = GUINT64_TO_LE ((guint64) strlen (header));
  GBytes *bytes;

  g_byte_array_append (file, (const guint8 *) &length, 8);
  g_byte_array_append (file, (const guint8 *) header, strlen (header));
  g_byte_array_append (file, data, size);
  bytes = g_byte_array_free_to_bytes (file);
  p3d_test_write_bytes (path, bytes);
  g_bytes_unref (bytes);
}

void
p3d_test_write_bytes (const gchar * path, GBytes * bytes)
{
  GError *error = NULL;
  gsize size;
  gconstpointer data = g_bytes_get_data (bytes, &size);

  if (!g_file_set_contents (path, data, size, &error))
    fail ("cannot write %s: %s", path, error->message);
}
