/* Tensors in buffers, on system memory: p3d_tensor_layout_check_buffer()
 * and p3d_tensor_map() for one memory per tensor, variable-length tensors,
 * a packed record (one memory, or any split of it, as filesrc reads a file
 * back), wrong sizes with a reason naming the tensor, P3D_MAP_CUDA refused;
 * and the caps-feature helpers on handmade caps. */
#include <string.h>
#include <gst/check/gstcheck.h>

#include "p3dperception.h"
#include "p3dtest.h"

/* A small voxels layout: 3 voxels of 2 xyzi points. */
static void
small_voxels_layout (P3dTensorLayout * layout)
{
  P3dVoxelsInfo info;
  const gdouble size[3] = { 1.0, 1.0, 1.0 };
  const gdouble range[6] = { 0.0, 0.0, 0.0, 4.0, 4.0, 1.0 };

  p3d_voxels_info_init (&info);
  fail_unless (p3d_voxels_info_set (&info, P3D_POINT_FORMAT_XYZI, 3, 2, size,
          range));
  p3d_voxels_info_get_layout (&info, layout);
  fail_unless_equals_uint64 (layout->size[0], 96);
  fail_unless_equals_uint64 (layout->size[1], 12);
  fail_unless_equals_uint64 (layout->size[2], 48);
  fail_unless_equals_uint64 (layout->size[3], 4);
}

/* A buffer of one system memory per size in @sizes (@n of them). */
static GstBuffer *
buffer_with_memories (const gsize * sizes, guint n)
{
  GstBuffer *buffer = gst_buffer_new ();
  guint i;

  for (i = 0; i < n; i++)
    gst_buffer_append_memory (buffer, gst_allocator_alloc (NULL, sizes[i],
            NULL));
  fail_unless_equals_int (gst_buffer_n_memory (buffer), n);
  return buffer;
}

/* Byte @i of a record: a pattern that tells offsets apart. */
static guint8
pattern (gsize i)
{
  return (guint8) ((i * 7 + i / 251) % 251);
}

/* @buffer checks and maps (read) as @layout with @expected; a refusal
 * gives a reason that contains each of @words. */
static void
check_buffer (const P3dTensorLayout * layout, GstBuffer * buffer,
    gboolean expected, const gchar * const *words)
{
  gchar *why = (gchar *) "untouched";
  P3dTensorMap map;
  gboolean result;

  result = p3d_tensor_layout_check_buffer (layout, buffer, &why);
  fail_unless (result == expected, "check %s (%s)",
      result ? "accepted" : "refused", GST_STR_NULL (why));
  if (result) {
    fail_unless (why == NULL, "a reason on success: %s", why);
  } else {
    fail_unless (why != NULL && why[0] != '\0');
    for (; words && *words; words++)
      fail_unless (strstr (why, *words) != NULL, "'%s' not in '%s'", *words,
          why);
    g_free (why);
  }
  /* without a reason asked for */
  fail_unless (p3d_tensor_layout_check_buffer (layout, buffer, NULL) ==
      expected);

  why = NULL;
  result = p3d_tensor_map (&map, buffer, layout, GST_MAP_READ, &why);
  fail_unless (result == expected, "map %s (%s)",
      result ? "accepted" : "refused", GST_STR_NULL (why));
  if (result) {
    fail_unless_equals_int (map.n_tensors, layout->n_tensors);
    p3d_tensor_unmap (&map);
  } else {
    fail_unless (why != NULL);
    g_free (why);
    /* a failed map leaves nothing to unmap */
    fail_unless (map.buffer == NULL && map.n_tensors == 0);
    p3d_tensor_unmap (&map);
  }
}

GST_START_TEST (test_layout_helpers)
{
  P3dTensorLayout a, b;

  small_voxels_layout (&a);
  fail_unless_equals_uint64 (p3d_tensor_layout_get_total_size (&a), 160);
  b = a;
  fail_unless (p3d_tensor_layout_is_equal (&a, &b));
  b.size[3] = 8;
  fail_if (p3d_tensor_layout_is_equal (&a, &b));
  b = a;
  b.record[1] = 4;
  fail_if (p3d_tensor_layout_is_equal (&a, &b));
  b = a;
  b.n_tensors = 3;
  fail_if (p3d_tensor_layout_is_equal (&a, &b));
  /* what lies beyond n_tensors does not count */
  b = a;
  a.n_tensors = b.n_tensors = 2;
  b.size[3] = 99;
  fail_unless (p3d_tensor_layout_is_equal (&a, &b));
  fail_unless_equals_uint64 (p3d_tensor_layout_get_total_size (&a), 108);
}

GST_END_TEST;

GST_START_TEST (test_one_memory_per_tensor)
{
  P3dTensorLayout layout;
  GstBuffer *buffer;
  gsize sizes[P3D_MAX_TENSORS];
  P3dTensorMap map;
  gchar *why = NULL;
  guint i, t;

  small_voxels_layout (&layout);
  memcpy (sizes, layout.size, sizeof (sizes));
  buffer = buffer_with_memories (sizes, 4);
  check_buffer (&layout, buffer, TRUE, NULL);

  /* the map gives each memory as it is */
  fail_unless (p3d_tensor_map (&map, buffer, &layout, GST_MAP_READ, &why));
  fail_unless (why == NULL);
  for (t = 0; t < 4; t++) {
    GstMapInfo info;

    fail_unless_equals_uint64 (map.size[t], layout.size[t]);
    fail_unless (gst_memory_map (gst_buffer_peek_memory (buffer, t), &info,
            GST_MAP_READ));
    fail_unless (info.data == map.data[t], "tensor %u is not its memory", t);
    gst_memory_unmap (gst_buffer_peek_memory (buffer, t), &info);
  }
  p3d_tensor_unmap (&map);
  /* written and read back */
  fail_unless (p3d_tensor_map (&map, buffer, &layout, GST_MAP_WRITE, NULL));
  for (t = 0; t < 4; t++) {
    for (i = 0; i < map.size[t]; i++)
      ((guint8 *) map.data[t])[i] = pattern (t * 1000 + i);
  }
  p3d_tensor_unmap (&map);
  fail_unless (map.buffer == NULL);
  fail_unless_equals_int (gst_buffer_n_memory (buffer), 4);
  fail_unless (p3d_tensor_map (&map, buffer, &layout, GST_MAP_READ, NULL));
  for (t = 0; t < 4; t++)
    for (i = 0; i < map.size[t]; i++)
      fail_unless_equals_int (((guint8 *) map.data[t])[i],
          pattern (t * 1000 + i));
  p3d_tensor_unmap (&map);
  gst_buffer_unref (buffer);

  /* one byte more or less in one tensor: the reason names it */
  for (t = 0; t < 4; t++) {
    gint delta;

    for (delta = -1; delta <= 1; delta += 2) {
      gchar *name = g_strdup_printf ("tensor %u ", t);
      gchar *got = g_strdup_printf ("%" G_GSIZE_FORMAT,
          layout.size[t] + delta);
      gchar *want = g_strdup_printf ("%" G_GSIZE_FORMAT, layout.size[t]);
      const gchar *words[] = { name, got, want, NULL };

      memcpy (sizes, layout.size, sizeof (sizes));
      sizes[t] += delta;
      buffer = buffer_with_memories (sizes, 4);
      check_buffer (&layout, buffer, FALSE, words);
      gst_buffer_unref (buffer);
      g_free (name);
      g_free (got);
      g_free (want);
    }
  }

  /* a memory missing, or one too many */
  buffer = buffer_with_memories (layout.size, 3);
  check_buffer (&layout, buffer, FALSE, NULL);
  gst_buffer_unref (buffer);
  memcpy (sizes, layout.size, sizeof (sizes));
  buffer = buffer_with_memories (sizes, 4);
  gst_buffer_append_memory (buffer, gst_allocator_alloc (NULL, 4, NULL));
  check_buffer (&layout, buffer, FALSE, NULL);
  gst_buffer_unref (buffer);
  buffer = gst_buffer_new ();
  check_buffer (&layout, buffer, FALSE, NULL);
  gst_buffer_unref (buffer);
}

GST_END_TEST;

GST_START_TEST (test_variable_tensor)
{
  P3dPointCloudInfo info;
  P3dTensorLayout layout, unbounded;
  GstBuffer *buffer;
  P3dTensorMap map;
  gsize size, sizes[3];
  guint k;

  p3d_point_cloud_info_init (&info);
  fail_unless (p3d_point_cloud_info_set_format (&info, P3D_POINT_FORMAT_XYZI));
  p3d_point_cloud_info_get_layout (&info, 100, &layout);
  p3d_point_cloud_info_get_layout (&info, 0, &unbounded);

  /* any whole number of points up to the capacity */
  for (k = 1; k <= 100; k++) {
    size = 16 * k;
    buffer = buffer_with_memories (&size, 1);
    check_buffer (&layout, buffer, TRUE, NULL);
    check_buffer (&unbounded, buffer, TRUE, NULL);
    fail_unless (p3d_tensor_map (&map, buffer, &layout, GST_MAP_READ, NULL));
    fail_unless_equals_uint64 (map.size[0], size);
    p3d_tensor_unmap (&map);
    gst_buffer_unref (buffer);
  }
  {
    const gchar *rest[] = { "tensor 0", "17", "16-byte", "1 bytes left", NULL };
    const gchar *rest2[] = { "tensor 0", "1615", "15 bytes left", NULL };
    const gchar *over[] = { "tensor 0", "1616", "capacity", "1600", NULL };

    size = 17;
    buffer = buffer_with_memories (&size, 1);
    check_buffer (&layout, buffer, FALSE, rest);
    check_buffer (&unbounded, buffer, FALSE, rest);
    gst_buffer_unref (buffer);
    size = 1615;
    buffer = buffer_with_memories (&size, 1);
    check_buffer (&layout, buffer, FALSE, rest2);
    gst_buffer_unref (buffer);
    size = 1616;
    buffer = buffer_with_memories (&size, 1);
    check_buffer (&layout, buffer, FALSE, over);
    /* capacity 0 is unbounded */
    check_buffer (&unbounded, buffer, TRUE, NULL);
    gst_buffer_unref (buffer);
  }
  size = 16 * 1000000;
  buffer = buffer_with_memories (&size, 1);
  check_buffer (&unbounded, buffer, TRUE, NULL);
  check_buffer (&layout, buffer, FALSE, NULL);
  gst_buffer_unref (buffer);

  /* a sweep read back in pieces (multifilesrc, filesrc blocksize=) */
  sizes[0] = 100;
  sizes[1] = 7;
  sizes[2] = 53;
  buffer = buffer_with_memories (sizes, 3);
  check_buffer (&layout, buffer, TRUE, NULL);
  fail_unless (p3d_tensor_map (&map, buffer, &layout, GST_MAP_READ, NULL));
  fail_unless_equals_uint64 (map.size[0], 160);
  p3d_tensor_unmap (&map);
  gst_buffer_unref (buffer);
  sizes[2] = 54;
  buffer = buffer_with_memories (sizes, 3);
  check_buffer (&layout, buffer, FALSE, NULL);
  gst_buffer_unref (buffer);
}

GST_END_TEST;

/* A sweep of no points: an empty buffer, as gst_buffer_new_allocate() makes
 * for 0 bytes (no memory at all), or one empty memory. */
GST_START_TEST (test_empty_point_cloud)
{
  P3dPointCloudInfo info;
  P3dTensorLayout layout;
  GstBuffer *buffer;
  gsize size = 0;

  p3d_point_cloud_info_init (&info);
  fail_unless (p3d_point_cloud_info_set_format (&info, P3D_POINT_FORMAT_XYZI));
  p3d_point_cloud_info_get_layout (&info, 100, &layout);

  buffer = buffer_with_memories (&size, 1);
  check_buffer (&layout, buffer, TRUE, NULL);
  gst_buffer_unref (buffer);

  buffer = gst_buffer_new_allocate (NULL, 0, NULL);
  fail_unless_equals_int (gst_buffer_n_memory (buffer), 0);
  check_buffer (&layout, buffer, TRUE, NULL);
  gst_buffer_unref (buffer);
}

GST_END_TEST;

GST_START_TEST (test_packed_record)
{
  P3dTensorLayout layout;
  GstBuffer *buffer;
  P3dTensorMap map;
  gsize total, offset, i, sizes[3];
  guint t;
  guint8 *bytes;

  small_voxels_layout (&layout);
  total = p3d_tensor_layout_get_total_size (&layout);

  /* one memory of the whole record: tensors at their offsets */
  buffer = buffer_with_memories (&total, 1);
  check_buffer (&layout, buffer, TRUE, NULL);
  fail_unless (p3d_tensor_map (&map, buffer, &layout, GST_MAP_WRITE, NULL));
  offset = 0;
  for (t = 0; t < 4; t++) {
    fail_unless_equals_uint64 (map.size[t], layout.size[t]);
    if (t > 0)
      fail_unless ((guint8 *) map.data[t] == (guint8 *) map.data[t - 1] +
          layout.size[t - 1], "tensor %u is not right after tensor %u", t,
          t - 1);
    for (i = 0; i < map.size[t]; i++)
      ((guint8 *) map.data[t])[i] = pattern (offset + i);
    offset += layout.size[t];
  }
  p3d_tensor_unmap (&map);
  bytes = g_malloc (total);
  fail_unless_equals_uint64 (gst_buffer_extract (buffer, 0, bytes, total),
      total);
  for (i = 0; i < total; i++)
    fail_unless_equals_int (bytes[i], pattern (i));
  gst_buffer_unref (buffer);

  /* the same bytes split at arbitrary places over 3 memories */
  sizes[0] = 50;
  sizes[1] = 61;
  sizes[2] = total - 111;
  buffer = buffer_with_memories (sizes, 3);
  fail_unless_equals_uint64 (gst_buffer_fill (buffer, 0, bytes, total), total);
  check_buffer (&layout, buffer, TRUE, NULL);
  fail_unless (p3d_tensor_map (&map, buffer, &layout, GST_MAP_READ, NULL));
  offset = 0;
  for (t = 0; t < 4; t++) {
    fail_unless_equals_uint64 (map.size[t], layout.size[t]);
    for (i = 0; i < map.size[t]; i++)
      fail_unless (((guint8 *) map.data[t])[i] == pattern (offset + i),
          "tensor %u byte %" G_GSIZE_FORMAT ": %u, expected %u", t, i,
          ((guint8 *) map.data[t])[i], pattern (offset + i));
    offset += layout.size[t];
  }
  p3d_tensor_unmap (&map);
  /* and written through the map, read back whole */
  fail_unless (p3d_tensor_map (&map, buffer, &layout, GST_MAP_WRITE, NULL));
  for (t = 0; t < 4; t++)
    memset (map.data[t], t + 1, map.size[t]);
  p3d_tensor_unmap (&map);
  fail_unless_equals_uint64 (gst_buffer_extract (buffer, 0, bytes, total),
      total);
  offset = 0;
  for (t = 0; t < 4; t++) {
    for (i = 0; i < layout.size[t]; i++)
      fail_unless_equals_int (bytes[offset + i], t + 1);
    offset += layout.size[t];
  }
  gst_buffer_unref (buffer);

  /* as many memories as tensors, but split elsewhere: a record too */
  {
    gsize four[4] = { 40, 40, 40, total - 120 };

    buffer = buffer_with_memories (four, 4);
    check_buffer (&layout, buffer, TRUE, NULL);
    fail_unless (p3d_tensor_map (&map, buffer, &layout, GST_MAP_READ, NULL));
    for (t = 0; t < 4; t++)
      fail_unless_equals_uint64 (map.size[t], layout.size[t]);
    p3d_tensor_unmap (&map);
    gst_buffer_unref (buffer);
  }

  /* totals one byte off, however split */
  {
    gchar *have = g_strdup_printf ("%" G_GSIZE_FORMAT " bytes in 3",
        total + 1);
    gchar *want = g_strdup_printf ("%" G_GSIZE_FORMAT " bytes", total);
    const gchar *words[] = { have, want, NULL };

    sizes[2] = total - 111 + 1;
    buffer = buffer_with_memories (sizes, 3);
    check_buffer (&layout, buffer, FALSE, words);
    gst_buffer_unref (buffer);
    g_free (have);
    g_free (want);
  }
  sizes[2] = total - 111 - 1;
  buffer = buffer_with_memories (sizes, 3);
  check_buffer (&layout, buffer, FALSE, NULL);
  gst_buffer_unref (buffer);
  sizes[0] = total + 1;
  buffer = buffer_with_memories (sizes, 1);
  check_buffer (&layout, buffer, FALSE, NULL);
  gst_buffer_unref (buffer);
  sizes[0] = total - 1;
  buffer = buffer_with_memories (sizes, 1);
  check_buffer (&layout, buffer, FALSE, NULL);
  gst_buffer_unref (buffer);
  sizes[0] = 2 * total;
  buffer = buffer_with_memories (sizes, 1);
  check_buffer (&layout, buffer, FALSE, NULL);
  gst_buffer_unref (buffer);
  g_free (bytes);
}

GST_END_TEST;

GST_START_TEST (test_map_cuda_refused)
{
  P3dTensorLayout layout;
  GstBuffer *buffer;
  P3dTensorMap map;
  gsize total;
  gchar *why = NULL;

  small_voxels_layout (&layout);
  buffer = buffer_with_memories (layout.size, 4);
  fail_unless (p3d_tensor_map (&map, buffer, &layout,
          GST_MAP_READ | P3D_MAP_CUDA, &why) == FALSE);
  fail_unless (why != NULL && strstr (why, "CUDA") != NULL, "%s",
      GST_STR_NULL (why));
  g_free (why);
  fail_unless (map.buffer == NULL);
  p3d_tensor_unmap (&map);
  fail_if (p3d_tensor_buffer_is_on_device (buffer, &layout, 0));
  fail_if (p3d_tensor_buffer_is_on_device (buffer, &layout, -1));
  /* nothing was left mapped: a write map still works */
  fail_unless (p3d_tensor_map (&map, buffer, &layout, GST_MAP_WRITE, NULL));
  p3d_tensor_unmap (&map);
  gst_buffer_unref (buffer);

  total = p3d_tensor_layout_get_total_size (&layout);
  buffer = buffer_with_memories (&total, 1);
  why = NULL;
  fail_unless (p3d_tensor_map (&map, buffer, &layout,
          GST_MAP_READ | P3D_MAP_CUDA, &why) == FALSE);
  fail_unless (why != NULL);
  g_free (why);
  fail_unless (map.buffer == NULL);
  fail_if (p3d_tensor_buffer_is_on_device (buffer, &layout, 0));
  gst_buffer_unref (buffer);
}

GST_END_TEST;

static GstCaps *
caps_parse (const gchar * str)
{
  GstCaps *caps = gst_caps_from_string (str);

  fail_unless (caps != NULL, "cannot parse caps '%s'", str);
  return caps;
}

static void
check_is_cuda (const gchar * str, gboolean expected)
{
  GstCaps *caps = caps_parse (str);

  fail_unless (p3d_caps_is_cuda (caps) == expected, "%s", str);
  gst_caps_unref (caps);
}

GST_START_TEST (test_caps_features)
{
  GstCaps *caps, *both, *expected, *plain;
  GstCapsFeatures *features;
  guint i;

  check_is_cuda ("application/x-boxes3d, max-boxes=10", FALSE);
  check_is_cuda ("application/x-boxes3d(memory:CUDAMemory), max-boxes=10",
      TRUE);
  check_is_cuda ("application/x-boxes3d(memory:CUDAMemory, meta:Foo)", TRUE);
  check_is_cuda ("application/x-boxes3d(memory:SystemMemory)", FALSE);
  check_is_cuda ("application/x-boxes3d(memory:CUDAMemoryX)", FALSE);
  check_is_cuda ("application/x-boxes3d(ANY)", FALSE);
  check_is_cuda ("EMPTY", FALSE);
  check_is_cuda ("ANY", FALSE);
  /* the first structure decides */
  check_is_cuda ("a/b(memory:CUDAMemory); a/b", TRUE);
  check_is_cuda ("a/b; a/b(memory:CUDAMemory)", FALSE);
  fail_if (p3d_caps_is_cuda (NULL));
  fail_if (p3d_caps_features_is_cuda (NULL));
  features = gst_caps_features_new (P3D_CAPS_FEATURE_MEMORY_CUDA, NULL);
  fail_unless (p3d_caps_features_is_cuda (features));
  gst_caps_features_free (features);
  features = gst_caps_features_new_any ();
  fail_if (p3d_caps_features_is_cuda (features));
  gst_caps_features_free (features);

  /* every structure offered twice, in the preferred order */
  caps = caps_parse ("application/x-boxes3d, max-boxes=10; "
      "application/x-boxes2d, max-boxes=[1,20]");
  both = p3d_caps_with_both_memories (caps, TRUE);
  expected = caps_parse ("application/x-boxes3d(memory:CUDAMemory), "
      "max-boxes=10; application/x-boxes3d, max-boxes=10; "
      "application/x-boxes2d(memory:CUDAMemory), max-boxes=[1,20]; "
      "application/x-boxes2d, max-boxes=[1,20]");
  fail_unless_equals_int (gst_caps_get_size (both), 4);
  fail_unless (gst_caps_is_strictly_equal (both, expected));
  for (i = 0; i < 4; i++)
    fail_unless (p3d_caps_features_is_cuda (gst_caps_get_features (both,
                i)) == (i % 2 == 0));
  gst_caps_unref (both);
  gst_caps_unref (expected);
  both = p3d_caps_with_both_memories (caps, FALSE);
  expected = caps_parse ("application/x-boxes3d, max-boxes=10; "
      "application/x-boxes3d(memory:CUDAMemory), max-boxes=10; "
      "application/x-boxes2d, max-boxes=[1,20]; "
      "application/x-boxes2d(memory:CUDAMemory), max-boxes=[1,20]");
  fail_unless (gst_caps_is_strictly_equal (both, expected));
  fail_if (p3d_caps_is_cuda (both));
  gst_caps_unref (expected);
  /* the input is left alone */
  fail_unless_equals_int (GST_MINI_OBJECT_REFCOUNT_VALUE (caps), 1);
  fail_unless_equals_int (gst_caps_get_size (caps), 2);

  /* and back: the features dropped, duplicates merged */
  plain = p3d_caps_without_features (both);
  fail_unless (gst_caps_is_strictly_equal (plain, caps));
  fail_unless_equals_int (gst_caps_get_size (plain), 2);
  for (i = 0; i < gst_caps_get_size (plain); i++)
    fail_if (p3d_caps_features_is_cuda (gst_caps_get_features (plain, i)));
  gst_caps_unref (plain);
  gst_caps_unref (both);
  gst_caps_unref (caps);

  caps = caps_parse ("application/x-boxes3d(memory:CUDAMemory), "
      "max-boxes=10");
  both = p3d_caps_with_both_memories (caps, TRUE);
  fail_unless_equals_int (gst_caps_get_size (both), 2);
  fail_unless (p3d_caps_is_cuda (both));
  plain = p3d_caps_without_features (caps);
  expected = caps_parse ("application/x-boxes3d, max-boxes=10");
  fail_unless (gst_caps_is_strictly_equal (plain, expected));
  gst_caps_unref (expected);
  gst_caps_unref (plain);
  gst_caps_unref (both);
  gst_caps_unref (caps);

  caps = gst_caps_new_empty ();
  both = p3d_caps_with_both_memories (caps, TRUE);
  fail_unless (gst_caps_is_empty (both));
  plain = p3d_caps_without_features (caps);
  fail_unless (gst_caps_is_empty (plain));
  gst_caps_unref (plain);
  gst_caps_unref (both);
  gst_caps_unref (caps);
}

GST_END_TEST;

/* The caps library logs in its own domain, which gst-check does not watch:
 * make its criticals and warnings fail a test, or satisfy ASSERT_CRITICAL,
 * as GStreamer's own do. */
static Suite *
tensor_suite (void)
{
  Suite *s = suite_create ("tensor");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_layout_helpers);
  tcase_add_test (tc, test_one_memory_per_tensor);
  tcase_add_test (tc, test_variable_tensor);
  tcase_add_test (tc, test_empty_point_cloud);
  tcase_add_test (tc, test_packed_record);
  tcase_add_test (tc, test_map_cuda_refused);
  tcase_add_test (tc, test_caps_features);
  return s;
}

P3D_CHECK_MAIN (tensor);
