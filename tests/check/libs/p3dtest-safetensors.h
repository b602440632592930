/* A small safetensors writer for the tests of the weights reader and the
 * CenterPoint model: tensors in the order added, an optional metadata
 * object, and the raw writer that malformed files need. */
#ifndef P3D_TEST_SAFETENSORS_WRITER_H
#define P3D_TEST_SAFETENSORS_WRITER_H

#include <glib.h>

G_BEGIN_DECLS

typedef struct _P3dTestSafetensors P3dTestSafetensors;

P3dTestSafetensors *p3d_test_safetensors_new (void);
void p3d_test_safetensors_free (P3dTestSafetensors * st);

/* Adds a tensor of @dtype (a header spelling, "F32") whose raw bytes are
 * @data (@size of them, copied). */
void p3d_test_safetensors_add (P3dTestSafetensors * st, const gchar * name,
    const gchar * dtype, guint n_dims, const gint64 * shape,
    gconstpointer data, gsize size);
/* Adds float32 values, one per element of @shape. */
void p3d_test_safetensors_add_f32 (P3dTestSafetensors * st,
    const gchar * name, guint n_dims, const gint64 * shape,
    const gfloat * values);
void p3d_test_safetensors_set_metadata (P3dTestSafetensors * st,
    const gchar * key, const gchar * value);

/* The whole file. */
GBytes *p3d_test_safetensors_serialize (const P3dTestSafetensors * st);

/* Writes the 8-byte little-endian length of @header, @header, then
 * @data: any header, well formed or not. */
void p3d_test_write_raw_safetensors (const gchar * path, const gchar * header,
    gconstpointer data, gsize size);
/* Writes @bytes to @path (fails the test on error). */
void p3d_test_write_bytes (const gchar * path, GBytes * bytes);

G_END_DECLS

#endif /* P3D_TEST_SAFETENSORS_WRITER_H */
