/* gst-perception: a model's weights in one safetensors file.
 *
 * The format (https://huggingface.co/docs/safetensors): an 8-byte
 * little-endian header length N, N bytes of JSON mapping each tensor name to
 * { "dtype", "shape", "data_offsets": [begin, end] } (offsets relative to the
 * data area that follows the header) plus an optional "__metadata__" object
 * of string values, then the raw little-endian tensors.
 *
 * p3d_weights_open() maps the file read-only and validates the whole header
 * before it returns, so a P3dWeights never holds a tensor whose bytes lie
 * outside the file.  Lookups then only compare names and shapes, and the
 * readers convert F32, F16, BF16 and F64 to float32.  See docs/weights.md.
 */
#ifndef __P3D_WEIGHTS_H__
#define __P3D_WEIGHTS_H__

#include <glib.h>

G_BEGIN_DECLS

#define P3D_WEIGHTS_ERROR (p3d_weights_error_quark ())
GQuark p3d_weights_error_quark (void);

typedef enum
{
  /* The file cannot be opened or mapped. */
  P3D_WEIGHTS_ERROR_OPEN,
  /* Not a safetensors file at all (too short, no JSON object header). */
  P3D_WEIGHTS_ERROR_NOT_SAFETENSORS,
  /* A safetensors file cut short: header or tensor data beyond its end. */
  P3D_WEIGHTS_ERROR_TRUNCATED,
  /* The header is invalid: bad JSON, a malformed entry, overlapping or
   * duplicated tensors, a size that disagrees with the shape. */
  P3D_WEIGHTS_ERROR_BAD_HEADER,
  /* A dtype that safetensors does not define, or one we do not read. */
  P3D_WEIGHTS_ERROR_UNSUPPORTED_DTYPE,
  /* A tensor the model needs is not in the file. */
  P3D_WEIGHTS_ERROR_MISSING_TENSOR,
  /* A tensor's shape is not the one the model (or the caps) implies. */
  P3D_WEIGHTS_ERROR_BAD_SHAPE,
  /* A tensor holds a value the model cannot use (a negative variance). */
  P3D_WEIGHTS_ERROR_BAD_VALUE,
  /* The metadata the model needs is absent. */
  P3D_WEIGHTS_ERROR_MISSING_METADATA,
  /* The metadata is present but malformed or out of range. */
  P3D_WEIGHTS_ERROR_BAD_METADATA,
} P3dWeightsError;

/* The dtypes of the safetensors format. */
typedef enum
{
  P3D_WEIGHTS_DTYPE_BOOL,
  P3D_WEIGHTS_DTYPE_U8,
  P3D_WEIGHTS_DTYPE_I8,
  P3D_WEIGHTS_DTYPE_F8_E5M2,
  P3D_WEIGHTS_DTYPE_F8_E4M3,
  P3D_WEIGHTS_DTYPE_I16,
  P3D_WEIGHTS_DTYPE_U16,
  P3D_WEIGHTS_DTYPE_F16,
  P3D_WEIGHTS_DTYPE_BF16,
  P3D_WEIGHTS_DTYPE_I32,
  P3D_WEIGHTS_DTYPE_U32,
  P3D_WEIGHTS_DTYPE_F32,
  P3D_WEIGHTS_DTYPE_F64,
  P3D_WEIGHTS_DTYPE_I64,
  P3D_WEIGHTS_DTYPE_U64,
  P3D_WEIGHTS_N_DTYPES,
} P3dWeightsDtype;

/* The name as the header spells it ("F32"). */
const gchar *p3d_weights_dtype_to_string (P3dWeightsDtype dtype);
/* Bytes per element. */
guint p3d_weights_dtype_get_size (P3dWeightsDtype dtype);

/* Dimensions a tensor may have; no model here needs more than 4. */
#define P3D_WEIGHTS_MAX_DIMS 8

/* One tensor of the file; valid as long as its P3dWeights. */
typedef struct
{
  const gchar *name;
  P3dWeightsDtype dtype;
  guint n_dims;
  guint64 shape[P3D_WEIGHTS_MAX_DIMS];
  guint64 n_elements;
  /* The raw little-endian bytes inside the mapping (any alignment),
   * n_elements * dtype size of them. */
  const guint8 *data;
} P3dWeightsTensor;

typedef struct _P3dWeights P3dWeights;

/* Maps @path and validates its header; NULL with @error set on any fault. */
P3dWeights *p3d_weights_open (const gchar * path, GError ** error);
/* The same on bytes already in memory; @name stands for the file in
 * messages.  Keeps a reference to @bytes. */
P3dWeights *p3d_weights_new_from_bytes (GBytes * bytes, const gchar * name,
    GError ** error);
void p3d_weights_free (P3dWeights * weights);

/* The path (or name) given when it was opened. */
const gchar *p3d_weights_get_name (const P3dWeights * weights);

/* Tensors in the order of their data in the file. */
guint p3d_weights_get_n_tensors (const P3dWeights * weights);
const P3dWeightsTensor *p3d_weights_get_tensor (const P3dWeights * weights,
    guint index);
/* NULL when there is no tensor of that name. */
const P3dWeightsTensor *p3d_weights_find (const P3dWeights * weights,
    const gchar * name);

/* The tensor @name, which must have @n_dims dimensions of the sizes in
 * @shape (-1 accepts any size there).  Otherwise NULL and an error that
 * names the tensor, the file, the expected and the found shape. */
const P3dWeightsTensor *p3d_weights_lookup (const P3dWeights * weights,
    const gchar * name, guint n_dims, const gint64 * shape, GError ** error);

/* Converts all of @tensor (F32, F16, BF16 or F64) to float32 in @dest,
 * which holds @n_elements floats: it must equal the tensor's element
 * count.  Other dtypes: FALSE and an error naming the dtype.  A NaN or an
 * infinity, or an F64 value beyond the float32 range: FALSE and
 * P3D_WEIGHTS_ERROR_BAD_VALUE naming the tensor, the value and its
 * element. */
gboolean p3d_weights_read_float (const P3dWeights * weights,
    const P3dWeightsTensor * tensor, gfloat * dest, gsize n_elements,
    GError ** error);

/* The string value of @key in "__metadata__", NULL when absent. */
const gchar *p3d_weights_get_metadata (const P3dWeights * weights,
    const gchar * key);
/* The metadata keys, sorted; free the array (not the strings) with
 * g_free(). */
const gchar **p3d_weights_get_metadata_keys (const P3dWeights * weights);

/* "[64, 11]": a newly allocated string of @n_dims sizes, -1 printed as
 * "*".  For messages. */
gchar *p3d_weights_shape_to_string (guint n_dims, const gint64 * shape);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (P3dWeights, p3d_weights_free)

G_END_DECLS

#endif /* __P3D_WEIGHTS_H__ */
