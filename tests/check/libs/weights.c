/* The safetensors reader (caps/p3dweights.c) on files this test writes: a
 * good file read back exactly in every float dtype, lookups by name and
 * shape, metadata; and every way a file can be bad, each refused with its
 * own error code and a message that names what is wrong. */
#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>

#include "half.h"
#include "p3dweights.h"
#include "p3dtest.h"
#include "p3dtest-safetensors.h"

static gchar *tmpdir;

static void
setup (void)
{
  GError *error = NULL;

  tmpdir = g_dir_make_tmp ("p3d-weights-XXXXXX", &error);
  fail_unless (tmpdir != NULL, "%s", error ? error->message : "");
}

static void
teardown (void)
{
  GDir *dir = g_dir_open (tmpdir, 0, NULL);
  const gchar *name;

  while (dir && (name = g_dir_read_name (dir)) != NULL) {
    gchar *path = g_build_filename (tmpdir, name, NULL);

    g_unlink (path);
    g_free (path);
  }
  if (dir)
    g_dir_close (dir);
  g_rmdir (tmpdir);
  g_free (tmpdir);
}

static gchar *
temp_path (const gchar * name)
{
  return g_build_filename (tmpdir, name, NULL);
}

/* Opening @path fails with @code and a message holding each of @words. */
static void
expect_open_error (const gchar * path, gint code, const gchar * const *words)
{
  GError *error = NULL;
  P3dWeights *weights = p3d_weights_open (path, &error);

  fail_unless (weights == NULL, "%s opened", path);
  fail_unless (error != NULL);
  fail_unless (error->domain == P3D_WEIGHTS_ERROR);
  fail_unless_equals_int (error->code, code);
  for (; words && *words; words++)
    fail_unless (strstr (error->message, *words) != NULL,
        "'%s' not in '%s'", *words, error->message);
  g_error_free (error);
}

/* A file with a tensor of each float dtype, an int one, an empty one and
 * metadata; its values are exact in each dtype. */
static GBytes *
good_file (void)
{
  P3dTestSafetensors *st = p3d_test_safetensors_new ();
  const gfloat f32[6] = { 1.5f, -2.25f, 0.0f, 1e-3f, -65504.0f, 3.0e38f };
  const gint64 shape23[2] = { 2, 3 };
  const gint64 shape4[1] = { 4 };
  const gint64 shape3[1] = { 3 };
  const gint64 shape0[2] = { 0, 5 };
  const gint64 scalar[1] = { 0 };
  const guint8 byte = 42;
  guint16 f16[4], bf16[3];
  guint64 f64[3];
  guint32 i32[3];
  const gdouble doubles[3] = { 0.1, -7.0, 1e-30 };
  GBytes *bytes;
  guint i;

  /* F16 values with exact halves: 0.333251953125 is 0x3555. */
  f16[0] = GUINT16_TO_LE (p3dc_float_to_half (0.333251953125f));
  f16[1] = GUINT16_TO_LE (p3dc_float_to_half (-1000.5f));
  f16[2] = GUINT16_TO_LE (0x0001);      /* smallest subnormal, 2^-24 */
  f16[3] = GUINT16_TO_LE (0x7bff);      /* 65504 */
  /* BF16: the upper halves of 1.0, -3.5 and 2^100 */
  bf16[0] = GUINT16_TO_LE (0x3f80);
  bf16[1] = GUINT16_TO_LE (0xc060);
  bf16[2] = GUINT16_TO_LE (0x7180);
  for (i = 0; i < 3; i++) {
    memcpy (&f64[i], &doubles[i], 8);
    f64[i] = GUINT64_TO_LE (f64[i]);
    i32[i] = GUINT32_TO_LE (i + 7);
  }
  p3d_test_safetensors_set_metadata (st, "zeta", "last");
  p3d_test_safetensors_set_metadata (st, "alpha", "{\"json\": [1, 2]}");
  p3d_test_safetensors_add_f32 (st, "layer.weight", 2, shape23, f32);
  p3d_test_safetensors_add (st, "half", "F16", 1, shape4, f16, 8);
  p3d_test_safetensors_add (st, "brain", "BF16", 1, shape3, bf16, 6);
  p3d_test_safetensors_add (st, "empty", "F32", 2, shape0, NULL, 0);
  p3d_test_safetensors_add (st, "double", "F64", 1, shape3, f64, 24);
  p3d_test_safetensors_add (st, "ints", "I32", 1, shape3, i32, 12);
  p3d_test_safetensors_add (st, "scalar_like", "U8", 0, scalar, &byte, 1);
  bytes = p3d_test_safetensors_serialize (st);
  p3d_test_safetensors_free (st);
  return bytes;
}

GST_START_TEST (test_good_file)
{
  gchar *path = temp_path ("good.safetensors");
  GBytes *bytes = good_file ();
  GError *error = NULL;
  P3dWeights *weights;
  const P3dWeightsTensor *tensor;
  const gint64 expect23[2] = { 2, 3 }, any3[2] = { -1, 3 };
  const gchar **keys;
  gfloat values[6];

  p3d_test_write_bytes (path, bytes);
  g_bytes_unref (bytes);
  weights = p3d_weights_open (path, &error);
  fail_unless (weights != NULL, "%s", error ? error->message : "");
  fail_unless_equals_string (p3d_weights_get_name (weights), path);
  fail_unless_equals_int (p3d_weights_get_n_tensors (weights), 7);

  /* in data order (as added here) */
  fail_unless_equals_string (p3d_weights_get_tensor (weights, 0)->name,
      "layer.weight");
  fail_unless_equals_string (p3d_weights_get_tensor (weights, 1)->name, "half");
  fail_unless_equals_string (p3d_weights_get_tensor (weights, 2)->name,
      "brain");
  fail_unless_equals_string (p3d_weights_get_tensor (weights, 3)->name,
      "empty");
  fail_unless_equals_string (p3d_weights_get_tensor (weights, 6)->name,
      "scalar_like");

  tensor = p3d_weights_lookup (weights, "layer.weight", 2, expect23, &error);
  fail_unless (tensor != NULL, "%s", error ? error->message : "");
  fail_unless (p3d_weights_lookup (weights, "layer.weight", 2, any3, NULL)
      == tensor);
  fail_unless_equals_int (tensor->dtype, P3D_WEIGHTS_DTYPE_F32);
  fail_unless_equals_uint64 (tensor->n_elements, 6);
  fail_unless (p3d_weights_read_float (weights, tensor, values, 6, &error));
  fail_unless_equals_float (values[0], 1.5f);
  fail_unless_equals_float (values[1], -2.25f);
  fail_unless_equals_float (values[3], 1e-3f);
  fail_unless_equals_float (values[5], 3.0e38f);

  tensor = p3d_weights_find (weights, "half");
  fail_unless (p3d_weights_read_float (weights, tensor, values, 4, &error));
  fail_unless_equals_float (values[0], 0.333251953125f);
  fail_unless_equals_float (values[1], -1000.5f);
  fail_unless_equals_float (values[2], 1.0f / 16777216.0f);
  fail_unless_equals_float (values[3], 65504.0f);

  tensor = p3d_weights_find (weights, "brain");
  fail_unless_equals_int (tensor->dtype, P3D_WEIGHTS_DTYPE_BF16);
  fail_unless (p3d_weights_read_float (weights, tensor, values, 3, &error));
  fail_unless_equals_float (values[0], 1.0f);
  fail_unless_equals_float (values[1], -3.5f);
  fail_unless_equals_float (values[2], 1.2676506e30f);

  tensor = p3d_weights_find (weights, "double");
  fail_unless (p3d_weights_read_float (weights, tensor, values, 3, &error));
  fail_unless_equals_float (values[0], 0.1f);
  fail_unless_equals_float (values[1], -7.0f);
  fail_unless_equals_float (values[2], 1e-30f);

  tensor = p3d_weights_find (weights, "empty");
  fail_unless_equals_uint64 (tensor->n_elements, 0);
  fail_unless_equals_int (tensor->n_dims, 2);
  fail_unless (p3d_weights_read_float (weights, tensor, values, 0, &error));

  tensor = p3d_weights_find (weights, "scalar_like");
  fail_unless_equals_int (tensor->n_dims, 0);
  fail_unless_equals_uint64 (tensor->n_elements, 1);
  fail_unless_equals_int (tensor->data[0], 42);

  /* a dtype that is valid but not a float: refused, the dtype named */
  tensor = p3d_weights_find (weights, "ints");
  fail_if (p3d_weights_read_float (weights, tensor, values, 3, &error));
  fail_unless (g_error_matches (error, P3D_WEIGHTS_ERROR,
          P3D_WEIGHTS_ERROR_UNSUPPORTED_DTYPE));
  fail_unless (strstr (error->message, "I32") != NULL, "%s", error->message);
  fail_unless (strstr (error->message, "'ints'") != NULL);
  g_clear_error (&error);

  fail_unless_equals_string (p3d_weights_get_metadata (weights, "zeta"),
      "last");
  fail_unless_equals_string (p3d_weights_get_metadata (weights, "alpha"),
      "{\"json\": [1, 2]}");
  fail_unless (p3d_weights_get_metadata (weights, "absent") == NULL);
  keys = p3d_weights_get_metadata_keys (weights);
  fail_unless_equals_string (keys[0], "alpha");
  fail_unless_equals_string (keys[1], "zeta");
  fail_unless (keys[2] == NULL);
  g_free (keys);

  p3d_weights_free (weights);
  g_free (path);
}

GST_END_TEST;

GST_START_TEST (test_lookup_errors)
{
  gchar *path = temp_path ("lookup.safetensors");
  GBytes *bytes = good_file ();
  GError *error = NULL;
  P3dWeights *weights;
  const gint64 wrong[2] = { 3, 2 }, wrong_rank[3] = { 2, 3, 1 };

  p3d_test_write_bytes (path, bytes);
  g_bytes_unref (bytes);
  weights = p3d_weights_open (path, NULL);
  fail_unless (weights != NULL);

  fail_unless (p3d_weights_lookup (weights, "no.such.tensor", 2, wrong,
          &error) == NULL);
  fail_unless (g_error_matches (error, P3D_WEIGHTS_ERROR,
          P3D_WEIGHTS_ERROR_MISSING_TENSOR));
  fail_unless (strstr (error->message, "'no.such.tensor'") != NULL);
  fail_unless (strstr (error->message, path) != NULL);
  g_clear_error (&error);

  fail_unless (p3d_weights_lookup (weights, "layer.weight", 2, wrong,
          &error) == NULL);
  fail_unless (g_error_matches (error, P3D_WEIGHTS_ERROR,
          P3D_WEIGHTS_ERROR_BAD_SHAPE));
  fail_unless (strstr (error->message, "'layer.weight'") != NULL);
  fail_unless (strstr (error->message, "has shape [2, 3]") != NULL,
      "%s", error->message);
  fail_unless (strstr (error->message, "expects [3, 2]") != NULL,
      "%s", error->message);
  g_clear_error (&error);

  fail_unless (p3d_weights_lookup (weights, "layer.weight", 3, wrong_rank,
          &error) == NULL);
  fail_unless (strstr (error->message, "expects [2, 3, 1]") != NULL,
      "%s", error->message);
  g_clear_error (&error);

  p3d_weights_free (weights);
  g_free (path);
}

GST_END_TEST;

GST_START_TEST (test_not_safetensors)
{
  gchar *path = temp_path ("text.safetensors");
  const gchar *const words_text[] = { "not a safetensors file",
    "header length", NULL
  };
  const gchar *const words_short[] = { "not a safetensors file", "3 bytes",
    NULL
  };
  const gchar *const words_array[] = { "not a safetensors file",
    "JSON object", NULL
  };
  const gchar *const words_missing[] = { "cannot read", NULL };

  /* a text file: its first 8 bytes as a length are far beyond the file */
  fail_unless (g_file_set_contents (path,
          "This is a text file, not a model at all.\n", -1, NULL));
  expect_open_error (path, P3D_WEIGHTS_ERROR_NOT_SAFETENSORS, words_text);
  fail_unless (g_file_set_contents (path, "abc", 3, NULL));
  expect_open_error (path, P3D_WEIGHTS_ERROR_NOT_SAFETENSORS, words_short);
  fail_unless (g_file_set_contents (path, "", 0, NULL));
  expect_open_error (path, P3D_WEIGHTS_ERROR_NOT_SAFETENSORS, NULL);
  /* a header that fits but is no JSON object */
  p3d_test_write_raw_safetensors (path, "[1, 2, 3]", NULL, 0);
  expect_open_error (path, P3D_WEIGHTS_ERROR_NOT_SAFETENSORS, words_array);
  p3d_test_write_raw_safetensors (path, "\"a string\"", NULL, 0);
  expect_open_error (path, P3D_WEIGHTS_ERROR_NOT_SAFETENSORS, words_array);
  g_unlink (path);
  expect_open_error (path, P3D_WEIGHTS_ERROR_OPEN, words_missing);
  g_free (path);
}

GST_END_TEST;

GST_START_TEST (test_truncated)
{
  gchar *path = temp_path ("cut.safetensors");
  GBytes *bytes = good_file ();
  gsize size;
  const guint8 *data = g_bytes_get_data (bytes, &size);
  guint64 header_size;
  const gchar *const words_header[] = { "truncated", "header length", NULL };
  const gchar *const words_data[] = { "truncated", "tensor '", NULL };
  GBytes *cut;

  memcpy (&header_size, data, 8);
  header_size = GUINT64_FROM_LE (header_size);

  /* cut inside the header: the length points past the end */
  cut = g_bytes_new_from_bytes (bytes, 0, 8 + header_size / 2);
  p3d_test_write_bytes (path, cut);
  g_bytes_unref (cut);
  expect_open_error (path, P3D_WEIGHTS_ERROR_TRUNCATED, words_header);

  /* cut one byte into the header */
  cut = g_bytes_new_from_bytes (bytes, 0, 9);
  p3d_test_write_bytes (path, cut);
  g_bytes_unref (cut);
  expect_open_error (path, P3D_WEIGHTS_ERROR_TRUNCATED, words_header);

  /* header whole, the data cut short: the last tensors end beyond it */
  cut = g_bytes_new_from_bytes (bytes, 0, size - 5);
  p3d_test_write_bytes (path, cut);
  g_bytes_unref (cut);
  expect_open_error (path, P3D_WEIGHTS_ERROR_TRUNCATED, words_data);

  /* only the 8 bytes of the length */
  cut = g_bytes_new_from_bytes (bytes, 0, 8);
  p3d_test_write_bytes (path, cut);
  g_bytes_unref (cut);
  expect_open_error (path, P3D_WEIGHTS_ERROR_NOT_SAFETENSORS, NULL);

  g_bytes_unref (bytes);
  g_free (path);
}

GST_END_TEST;

/* A malformed header and how it must be refused. */
typedef struct
{
  const gchar *header;
  gsize data_size;
  gint code;
  const gchar *words[4];        /* NULL-terminated */
} BadHeader;

static const BadHeader bad_headers[] = {
  /* not JSON */
  {"{\"a\": {\"dtype\": \"F32\", \"shape\": [1], ", 0,
      P3D_WEIGHTS_ERROR_BAD_HEADER, {"not valid JSON"}},
  {"{\"a\" 1}", 0, P3D_WEIGHTS_ERROR_BAD_HEADER, {"not valid JSON"}},
  /* a dtype safetensors does not have */
  {"{\"w\": {\"dtype\": \"F7\", \"shape\": [1], \"data_offsets\": [0, 4]}}",
      4, P3D_WEIGHTS_ERROR_UNSUPPORTED_DTYPE, {"'F7'", "'w'"}},
  {"{\"w\": {\"dtype\": \"f32\", \"shape\": [1], \"data_offsets\": [0, 4]}}",
      4, P3D_WEIGHTS_ERROR_UNSUPPORTED_DTYPE, {"'f32'"}},
  /* entries that are not tensors */
  {"{\"w\": [1, 2]}", 0, P3D_WEIGHTS_ERROR_BAD_HEADER,
      {"'w'", "not a JSON object"}},
  {"{\"w\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
      P3D_WEIGHTS_ERROR_BAD_HEADER, {"'w'", "dtype"}},
  {"{\"w\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}}", 4,
      P3D_WEIGHTS_ERROR_BAD_HEADER, {"'w'", "shape"}},
  {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1]}}", 4,
      P3D_WEIGHTS_ERROR_BAD_HEADER, {"'w'", "data_offsets"}},
  /* negative or fractional sizes */
  {"{\"w\": {\"dtype\": \"F32\", \"shape\": [-1, 2], \"data_offsets\": [0, 0]}}",
      0, P3D_WEIGHTS_ERROR_BAD_HEADER, {"'w'", "shape entry 0"}},
  {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 4]}}",
      4, P3D_WEIGHTS_ERROR_BAD_HEADER, {"'w'", "shape entry 0"}},
  /* a size that is not the shape's */
  {"{\"w\": {\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 20]}}",
      24, P3D_WEIGHTS_ERROR_BAD_HEADER, {"'w'", "[2, 3]", "span 20"}},
  {"{\"w\": {\"dtype\": \"F16\", \"shape\": [4], \"data_offsets\": [0, 16]}}",
      16, P3D_WEIGHTS_ERROR_BAD_HEADER, {"F16", "span 16"}},
  /* offsets backwards, negative, or beyond the data */
  {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 4]}}",
      8, P3D_WEIGHTS_ERROR_BAD_HEADER, {"'w'", "begin <= end"}},
  {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [-4, 0]}}",
      8, P3D_WEIGHTS_ERROR_BAD_HEADER, {"'w'", "data_offsets"}},
  {"{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}",
      8, P3D_WEIGHTS_ERROR_TRUNCATED, {"'w'", "ends at byte 12"}},
  {"{\"w\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [9999999999, 10000000000]}}",
      8, P3D_WEIGHTS_ERROR_TRUNCATED, {"'w'", "holds only 8 bytes"}},
  /* overlapping tensors, also across an empty one between them */
  {"{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
        " \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}",
      12, P3D_WEIGHTS_ERROR_BAD_HEADER, {"'a' and 'b'", "overlap"}},
  {"{\"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 12]},"
        " \"e\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [6, 6]},"
        " \"a\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 12]}}",
      12, P3D_WEIGHTS_ERROR_BAD_HEADER, {"'a' and 'b'", "overlap"}},
  /* one name twice */
  {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
        " \"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
      8, P3D_WEIGHTS_ERROR_BAD_HEADER, {"'w'", "more than once"}},
  {"{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
        " \"\\u0077\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
      8, P3D_WEIGHTS_ERROR_BAD_HEADER, {"more than once"}},
  /* metadata that is not an object of strings */
  {"{\"__metadata__\": {\"p3d.model\": {\"a\": 1}}}", 0,
      P3D_WEIGHTS_ERROR_BAD_HEADER, {"\"p3d.model\"", "not a string"}},
  {"{\"__metadata__\": [\"x\"]}", 0, P3D_WEIGHTS_ERROR_BAD_HEADER,
      {"__metadata__", "not a JSON object"}},
};

GST_START_TEST (test_bad_header)
{
  gchar *path = temp_path ("bad.safetensors");
  const BadHeader *bad = &bad_headers[__i__];
  guint8 *data = g_malloc0 (bad->data_size + 1);

  p3d_test_write_raw_safetensors (path, bad->header, data, bad->data_size);
  expect_open_error (path, bad->code, bad->words);
  g_free (data);
  g_free (path);
}

GST_END_TEST;

/* Names with nested objects and strings holding braces and colons do not
 * confuse the repeated-name check; padding after the JSON (as writers that
 * align the data add) is fine. */
GST_START_TEST (test_header_details)
{
  gchar *path = temp_path ("details.safetensors");
  const gchar *header = "{\"__metadata__\": {\"w\": \"{\\\"x\\\": 1}\", "
      "\"k:\": \"}\"}, \"w\": {\"dtype\": \"F32\", \"shape\": [1], "
      "\"data_offsets\": [0, 4]}, \"a\\\"b\": {\"dtype\": \"U8\", "
      "\"shape\": [2], \"data_offsets\": [4, 6]}}      ";
  const guint8 data[6] = { 0, 0, 0x80, 0x3f, 1, 2 };
  GError *error = NULL;
  P3dWeights *weights;
  gfloat value;

  p3d_test_write_raw_safetensors (path, header, data, 6);
  weights = p3d_weights_open (path, &error);
  fail_unless (weights != NULL, "%s", error ? error->message : "");
  fail_unless_equals_int (p3d_weights_get_n_tensors (weights), 2);
  fail_unless (p3d_weights_find (weights, "a\"b") != NULL);
  fail_unless (p3d_weights_read_float (weights, p3d_weights_find (weights,
              "w"), &value, 1, &error));
  fail_unless_equals_float (value, 1.0f);
  fail_unless_equals_string (p3d_weights_get_metadata (weights, "w"),
      "{\"x\": 1}");
  fail_unless_equals_string (p3d_weights_get_metadata (weights, "k:"), "}");
  p3d_weights_free (weights);
  g_free (path);
}

GST_END_TEST;

/* A value no trained network holds is refused when read, naming the
 * tensor, the value and its element: NaN and infinities in every float
 * dtype, and F64 values beyond the float32 range the network computes in
 * (which the conversion would make infinite). Huge finite float32 values
 * and F64 values within range pass. */
GST_START_TEST (test_non_finite)
{
  P3dTestSafetensors *st = p3d_test_safetensors_new ();
  const gint64 shape2[1] = { 2 };
  const gfloat f32_nan[2] = { 0.5f, NAN };
  const gfloat f32_inf[2] = { -INFINITY, 1.0f };
  const gfloat f32_huge[2] = { 3.0e38f, -3.4e38f };
  const guint16 f16_inf[2] = { GUINT16_TO_LE (0x3c00), GUINT16_TO_LE (0x7c00) };
  const guint16 bf16_nan[2] = { GUINT16_TO_LE (0x7fc0), 0 };
  const gdouble doubles_big[2] = { 1.0, 1e300 };
  const gdouble doubles_ok[2] = { -3.4e38, 1e-300 };
  guint64 f64_big[2], f64_ok[2];
  struct
  {
    const gchar *name;
    const gchar *words;         /* NULL: read without error */
  } cases[] = {
    {"f32_nan", "tensor 'f32_nan' holds nan at element 1"},
    {"f32_inf", "tensor 'f32_inf' holds -inf at element 0"},
    {"f32_huge", NULL},
    {"f16_inf", "tensor 'f16_inf' holds inf at element 1"},
    {"bf16_nan", "tensor 'bf16_nan' holds nan at element 0"},
    {"f64_big", "tensor 'f64_big' holds 1e+300 at element 1, beyond the "
          "float32 range"},
    {"f64_ok", NULL},
  };
  gchar *path = temp_path ("nonfinite.safetensors");
  P3dWeights *weights;
  GError *error = NULL;
  GBytes *bytes;
  guint i;

  for (i = 0; i < 2; i++) {
    memcpy (&f64_big[i], &doubles_big[i], 8);
    f64_big[i] = GUINT64_TO_LE (f64_big[i]);
    memcpy (&f64_ok[i], &doubles_ok[i], 8);
    f64_ok[i] = GUINT64_TO_LE (f64_ok[i]);
  }
  p3d_test_safetensors_add_f32 (st, "f32_nan", 1, shape2, f32_nan);
  p3d_test_safetensors_add_f32 (st, "f32_inf", 1, shape2, f32_inf);
  p3d_test_safetensors_add_f32 (st, "f32_huge", 1, shape2, f32_huge);
  p3d_test_safetensors_add (st, "f16_inf", "F16", 1, shape2, f16_inf, 4);
  p3d_test_safetensors_add (st, "bf16_nan", "BF16", 1, shape2, bf16_nan, 4);
  p3d_test_safetensors_add (st, "f64_big", "F64", 1, shape2, f64_big, 16);
  p3d_test_safetensors_add (st, "f64_ok", "F64", 1, shape2, f64_ok, 16);
  bytes = p3d_test_safetensors_serialize (st);
  p3d_test_safetensors_free (st);
  p3d_test_write_bytes (path, bytes);
  g_bytes_unref (bytes);
  weights = p3d_weights_open (path, &error);
  fail_unless (weights != NULL, "%s", error ? error->message : "");
  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    gfloat values[2];
    gboolean ok = p3d_weights_read_float (weights, p3d_weights_find (weights,
            cases[i].name), values, 2, &error);

    if (cases[i].words == NULL) {
      fail_unless (ok, "%s: %s", cases[i].name, error->message);
      continue;
    }
    fail_unless (!ok, "%s was read", cases[i].name);
    fail_unless (g_error_matches (error, P3D_WEIGHTS_ERROR,
            P3D_WEIGHTS_ERROR_BAD_VALUE));
    fail_unless (strstr (error->message, cases[i].words) != NULL
        && strstr (error->message, path) != NULL, "%s", error->message);
    g_clear_error (&error);
  }
  p3d_weights_free (weights);
  g_free (path);
}

GST_END_TEST;

/* A header nested 100 000 levels deep overflowed json-glib's recursion
 * (issue 32.1): refused by the depth scan, naming the file. */
GST_START_TEST (test_deep_header)
{
  gchar *path = temp_path ("deep.safetensors");
  GString *header = g_string_new ("{\"__metadata__\": {\"a\": \"b\"}, "
      "\"w\": ");
  static const gchar *const words[] = { "deep.safetensors",
    "not valid JSON", "nested more than 64 levels deep", NULL
  };
  guint i;

  for (i = 0; i < 100000; i++)
    g_string_append (header, "{\"a\":");
  for (i = 0; i < 100000; i++)
    g_string_append (header, "}");
  g_string_append (header, "}");
  p3d_test_write_raw_safetensors (path, header->str, NULL, 0);
  expect_open_error (path, P3D_WEIGHTS_ERROR_BAD_HEADER, words);
  g_string_free (header, TRUE);
  g_free (path);
}

GST_END_TEST;

/* The same bytes from memory: no file needed, the name in messages. */
GST_START_TEST (test_from_bytes)
{
  GBytes *bytes = good_file ();
  GBytes *cut = g_bytes_new_from_bytes (bytes, 0, 20);
  GError *error = NULL;
  P3dWeights *weights = p3d_weights_new_from_bytes (bytes, "mem", &error);
  const gint64 shape[1] = { 4 };

  fail_unless (weights != NULL);
  fail_unless (p3d_weights_lookup (weights, "half", 1, shape, NULL) != NULL);
  p3d_weights_free (weights);
  fail_unless (p3d_weights_new_from_bytes (cut, "mem", &error) == NULL);
  fail_unless (strstr (error->message, "mem") != NULL);
  g_clear_error (&error);
  g_bytes_unref (cut);
  g_bytes_unref (bytes);
}

GST_END_TEST;

static Suite *
weights_suite (void)
{
  Suite *s = suite_create ("weights");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_good_file);
  tcase_add_test (tc, test_lookup_errors);
  tcase_add_test (tc, test_not_safetensors);
  tcase_add_test (tc, test_truncated);
  tcase_add_loop_test (tc, test_bad_header, 0, G_N_ELEMENTS (bad_headers));
  tcase_add_test (tc, test_header_details);
  tcase_add_test (tc, test_from_bytes);
  tcase_add_test (tc, test_non_finite);
  tcase_add_test (tc, test_deep_header);
  return s;
}

P3D_CHECK_MAIN (weights);
