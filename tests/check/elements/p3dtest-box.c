/* Helpers of the boxenc and boxparse tests; see p3dtest-box.h. */
#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>

#include "p3dtest-box.h"

GstBuffer *
boxtest_buffer (const void *records, guint count, guint max_boxes,
    gsize record_size)
{
  GstBuffer *buffer = gst_buffer_new ();
  guint8 *padded = g_malloc0 (max_boxes * record_size);
  guint32 *count32 = g_new (guint32, 1);

  fail_unless (count <= max_boxes);
  if (count > 0)
    memcpy (padded, records, count * record_size);
  *count32 = count;
  gst_buffer_append_memory (buffer, gst_memory_new_wrapped (0, padded,
          max_boxes * record_size, 0, max_boxes * record_size, padded, g_free));
  gst_buffer_append_memory (buffer, gst_memory_new_wrapped (0, count32, 4, 0,
          4, count32, g_free));
  return buffer;
}

guint
boxtest_read (GstBuffer * buffer, gsize record_size, guint max_boxes,
    void *records)
{
  GstMapInfo info;
  guint32 count;
  gsize i;

  fail_unless_equals_int (gst_buffer_n_memory (buffer), 2);
  fail_unless (gst_memory_map (gst_buffer_peek_memory (buffer, 1), &info,
          GST_MAP_READ));
  fail_unless_equals_uint64 (info.size, 4);
  memcpy (&count, info.data, 4);
  gst_memory_unmap (gst_buffer_peek_memory (buffer, 1), &info);
  fail_unless (count <= max_boxes, "count %u over max-boxes %u", count,
      max_boxes);

  fail_unless (gst_memory_map (gst_buffer_peek_memory (buffer, 0), &info,
          GST_MAP_READ));
  fail_unless_equals_uint64 (info.size, max_boxes * record_size);
  memcpy (records, info.data, max_boxes * record_size);
  for (i = count * record_size; i < info.size; i++)
    fail_unless (info.data[i] == 0, "byte %" G_GSIZE_FORMAT " after the %u "
        "records is not zero", i, count);
  gst_memory_unmap (gst_buffer_peek_memory (buffer, 0), &info);
  return count;
}

gchar *
boxtest_text (GstBuffer * buffer)
{
  gsize size = gst_buffer_get_size (buffer);
  gchar *text = g_malloc0 (size + 1);

  gst_buffer_extract (buffer, 0, text, size);
  return text;
}

gfloat
boxtest_random_float (P3dTestRng * rng, gboolean non_finite)
{
  static const gfloat specials[] = { 0.0f, -0.0f, 1.0f, -1.0f, 0.1f,
    3.40282347e+38f, -3.40282347e+38f, 1.17549435e-38f, 1.40129846e-45f,
    -1.40129846e-45f
  };
  guint32 choice = p3d_test_rng_below (rng, 10);
  guint32 bits;
  gfloat value;

  if (choice < 5) {
    /* any finite bit pattern */
    do {
      bits = p3d_test_rng_u32 (rng);
      memcpy (&value, &bits, 4);
    } while (!isfinite (value));
    return value;
  }
  if (choice < 8)
    return p3d_test_rng_uniform (rng, -100.0f, 100.0f);
  if (choice == 8 || !non_finite)
    return specials[p3d_test_rng_below (rng, G_N_ELEMENTS (specials))];
  switch (p3d_test_rng_below (rng, 3)) {
    case 0:
      return NAN;
    case 1:
      return INFINITY;
    default:
      return -INFINITY;
  }
}

static gint32
random_label (P3dTestRng * rng)
{
  /* mostly small labels (named in KITTI), some far beyond any name */
  if (p3d_test_rng_below (rng, 4) > 0)
    return (gint32) p3d_test_rng_below (rng, 6);
  return (gint32) p3d_test_rng_u32 (rng);
}

void
boxtest_random_3d (P3dTestRng * rng, P3dcBox3d * box, gboolean non_finite)
{
  box->x = boxtest_random_float (rng, non_finite);
  box->y = boxtest_random_float (rng, non_finite);
  box->z = boxtest_random_float (rng, non_finite);
  box->dx = boxtest_random_float (rng, non_finite);
  box->dy = boxtest_random_float (rng, non_finite);
  box->dz = boxtest_random_float (rng, non_finite);
  box->yaw = boxtest_random_float (rng, non_finite);
  box->score = boxtest_random_float (rng, non_finite);
  box->label = random_label (rng);
}

void
boxtest_random_2d (P3dTestRng * rng, P3dcBox2d * box, gboolean non_finite)
{
  box->x1 = boxtest_random_float (rng, non_finite);
  box->y1 = boxtest_random_float (rng, non_finite);
  box->x2 = boxtest_random_float (rng, non_finite);
  box->y2 = boxtest_random_float (rng, non_finite);
  box->score = boxtest_random_float (rng, non_finite);
  box->label = random_label (rng);
}

gboolean
boxtest_float_equal (gfloat a, gfloat b)
{
  if (isnan (a) || isnan (b))
    return isnan (a) && isnan (b);
  return memcmp (&a, &b, sizeof (gfloat)) == 0;
}

static void
assert_fields_equal (const gfloat * expected, const gfloat * actual,
    const gchar * const *names, guint n, gint32 expected_label,
    gint32 actual_label, guint frame, guint index)
{
  guint i;

  for (i = 0; i < n; i++) {
    guint32 expected_bits, actual_bits;

    memcpy (&expected_bits, &expected[i], 4);
    memcpy (&actual_bits, &actual[i], 4);
    fail_unless (boxtest_float_equal (expected[i], actual[i]),
        "frame %u box %u: %s is %.9g (0x%08x), expected %.9g (0x%08x)",
        frame, index, names[i], actual[i], actual_bits, expected[i],
        expected_bits);
  }
  fail_unless (expected_label == actual_label,
      "frame %u box %u: label is %d, expected %d", frame, index,
      actual_label, expected_label);
}

void
boxtest_assert_3d_equal (const P3dcBox3d * expected, const P3dcBox3d * actual,
    guint frame, guint index)
{
  static const gchar *const names[] = { "x", "y", "z", "dx", "dy", "dz",
    "yaw", "score"
  };
  const gfloat expected_fields[] = { expected->x, expected->y, expected->z,
    expected->dx, expected->dy, expected->dz, expected->yaw, expected->score
  };
  const gfloat actual_fields[] = { actual->x, actual->y, actual->z,
    actual->dx, actual->dy, actual->dz, actual->yaw, actual->score
  };

  assert_fields_equal (expected_fields, actual_fields, names, 8,
      expected->label, actual->label, frame, index);
}

void
boxtest_assert_2d_equal (const P3dcBox2d * expected, const P3dcBox2d * actual,
    guint frame, guint index)
{
  static const gchar *const names[] = { "x1", "y1", "x2", "y2", "score" };
  const gfloat expected_fields[] = { expected->x1, expected->y1, expected->x2,
    expected->y2, expected->score
  };
  const gfloat actual_fields[] = { actual->x1, actual->y1, actual->x2,
    actual->y2, actual->score
  };

  assert_fields_equal (expected_fields, actual_fields, names, 5,
      expected->label, actual->label, frame, index);
}
