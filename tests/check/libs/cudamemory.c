/* The CUDA memory of the caps library on a device: zero-filled allocation,
 * kernel writes read back through a host map, host writes uploaded on
 * unmap, ordering between two streams through the memory's event, copies,
 * refused sharing, and reuse of pooled memories. */
#include <string.h>

#include <gst/check/gstcheck.h>

#include "p3dtest-fill.h"
#include "p3dperception.h"
#include "p3dtest.h"

#define WORDS (16 * 1024 * 1024)        /* 64 MiB: long enough to race */

static GstAllocator *allocator;

static void
setup (void)
{
  gchar *why = NULL;

  allocator = p3d_cuda_allocator_get (0, &why);
  fail_unless (allocator != NULL, "no allocator: %s", why);
}

static void
teardown (void)
{
  gst_clear_object (&allocator);
}

static void
assert_pattern (GstMemory * mem, guint32 seed, gsize words)
{
  GstMapInfo info;
  const guint32 *data;
  gsize i;

  fail_unless (gst_memory_map (mem, &info, GST_MAP_READ));
  fail_unless_equals_uint64 (info.size, words * 4);
  data = (const guint32 *) info.data;
  for (i = 0; i < words; i++) {
    if (data[i] != p3d_fill_pattern_value (seed, i))
      fail ("word %" G_GSIZE_FORMAT ": %08x, expected %08x", i, data[i],
          p3d_fill_pattern_value (seed, i));
  }
  gst_memory_unmap (mem, &info);
}

/* Fills @mem on @stream by kernel, ordered by the memory's event. */
static void
fill_on_device (GstMemory * mem, guint32 seed, P3dcCudaStream stream)
{
  GstMapInfo info;

  fail_unless (gst_memory_map (mem, &info, GST_MAP_WRITE | P3D_MAP_CUDA));
  fail_unless (p3d_cuda_memory_wait (mem, stream));
  fail_unless_equals_int (p3d_fill_pattern_cuda ((guint32 *) info.data,
          info.size / 4, seed, stream), P3DC_OK);
  fail_unless (p3d_cuda_memory_record (mem, stream));
  gst_memory_unmap (mem, &info);
}

GST_START_TEST (test_alloc_is_zero_and_typed)
{
  GstMemory *mem = p3d_cuda_allocator_alloc (allocator, 4096);
  GstMapInfo info;
  guint i;

  fail_unless (mem != NULL);
  fail_unless (p3d_is_cuda_memory (mem));
  fail_unless (gst_memory_is_type (mem, P3D_CUDA_MEMORY_TYPE_NAME));
  fail_unless (GST_MEMORY_FLAG_IS_SET (mem, GST_MEMORY_FLAG_NO_SHARE));
  fail_unless (p3d_cuda_memory_is_clean (mem));
  fail_unless (gst_memory_map (mem, &info, GST_MAP_READ));
  for (i = 0; i < 4096; i++)
    fail_unless_equals_int (info.data[i], 0);
  gst_memory_unmap (mem, &info);
  /* A device pointer is not a host pointer. */
  fail_unless (gst_memory_map (mem, &info, GST_MAP_READ | P3D_MAP_CUDA));
  fail_unless (info.data == ((P3dCudaMemory *) mem)->device_data);
  gst_memory_unmap (mem, &info);
  gst_memory_unref (mem);
}

GST_END_TEST;

GST_START_TEST (test_kernel_write_maps_back)
{
  GstMemory *mem = p3d_cuda_allocator_alloc (allocator, WORDS * 4);
  P3dcCudaStream stream;

  fail_unless_equals_int (p3dc_cuda_stream_create (&stream), P3DC_OK);
  fill_on_device (mem, 11, stream);
  fail_if (p3d_cuda_memory_is_clean (mem));
  /* no stream synchronize here: the host map must wait on the event */
  assert_pattern (mem, 11, WORDS);
  /* device data rewritten: the host copy must be downloaded again */
  fill_on_device (mem, 12, stream);
  assert_pattern (mem, 12, WORDS);
  gst_memory_unref (mem);
  fail_unless_equals_int (p3dc_cuda_stream_destroy (stream), P3DC_OK);
}

GST_END_TEST;

GST_START_TEST (test_host_write_uploads)
{
  GstMemory *mem = p3d_cuda_allocator_alloc (allocator, 1024 * 4);
  GstMemory *copy;
  GstMapInfo info;
  guint32 *words;
  guint i;

  fail_unless (gst_memory_map (mem, &info, GST_MAP_WRITE | P3D_MAP_OVERWRITE));
  words = (guint32 *) info.data;
  for (i = 0; i < 1024; i++)
    words[i] = p3d_fill_pattern_value (5, i);
  gst_memory_unmap (mem, &info);
  /* a device-to-device copy sees the uploaded bytes */
  copy = gst_memory_copy (mem, 0, -1);
  fail_unless (copy != NULL && p3d_is_cuda_memory (copy));
  fail_unless (((P3dCudaMemory *) copy)->device_data !=
      ((P3dCudaMemory *) mem)->device_data);
  assert_pattern (copy, 5, 1024);
  gst_memory_unref (copy);
  /* a partial copy */
  copy = gst_memory_copy (mem, 8, 16);
  fail_unless (gst_memory_map (copy, &info, GST_MAP_READ));
  fail_unless_equals_int (info.size, 16);
  fail_unless (memcmp (info.data, (guint8 *) words + 8, 16) == 0 ||
      ((guint32 *) info.data)[0] == p3d_fill_pattern_value (5, 2));
  gst_memory_unmap (copy, &info);
  gst_memory_unref (copy);
  gst_memory_unref (mem);
}

GST_END_TEST;

GST_START_TEST (test_read_write_map_keeps_content)
{
  GstMemory *mem = p3d_cuda_allocator_alloc (allocator, 256 * 4);
  P3dcCudaStream stream;
  GstMapInfo info;

  fail_unless_equals_int (p3dc_cuda_stream_create (&stream), P3DC_OK);
  fill_on_device (mem, 3, stream);
  /* a read-write host map downloads first, so untouched words survive */
  fail_unless (gst_memory_map (mem, &info, GST_MAP_READWRITE));
  ((guint32 *) info.data)[7] = p3d_fill_pattern_value (3, 7);
  gst_memory_unmap (mem, &info);
  assert_pattern (mem, 3, 256);
  gst_memory_unref (mem);
  p3dc_cuda_stream_destroy (stream);
}

GST_END_TEST;

GST_START_TEST (test_event_orders_two_streams)
{
  GstMemory *src = p3d_cuda_allocator_alloc (allocator, WORDS * 4);
  GstMemory *dst = p3d_cuda_allocator_alloc (allocator, WORDS * 4);
  P3dcCudaStream producer, consumer;
  GstMapInfo src_info, dst_info;
  guint round;

  fail_unless_equals_int (p3dc_cuda_stream_create (&producer), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_create (&consumer), P3DC_OK);
  for (round = 0; round < 4; round++) {
    /* producer writes, consumer copies on its own stream after waiting on
     * the memory's event: without the wait the copy would read the
     * previous round's words */
    fill_on_device (src, 100 + round, producer);
    fail_unless (gst_memory_map (src, &src_info, GST_MAP_READ | P3D_MAP_CUDA));
    fail_unless (gst_memory_map (dst, &dst_info, GST_MAP_WRITE | P3D_MAP_CUDA));
    fail_unless (p3d_cuda_memory_wait (src, consumer));
    fail_unless (p3d_cuda_memory_wait (dst, consumer));
    fail_unless_equals_int (p3dc_cuda_memcpy_dtod (dst_info.data,
            src_info.data, WORDS * 4, consumer), P3DC_OK);
    fail_unless (p3d_cuda_memory_record (src, consumer));
    fail_unless (p3d_cuda_memory_record (dst, consumer));
    gst_memory_unmap (dst, &dst_info);
    gst_memory_unmap (src, &src_info);
    assert_pattern (dst, 100 + round, WORDS);
  }
  gst_memory_unref (src);
  gst_memory_unref (dst);
  p3dc_cuda_stream_destroy (producer);
  p3dc_cuda_stream_destroy (consumer);
}

GST_END_TEST;

/* A host read map waits for the kernel that wrote the memory, not for a
 * consumer's later work: a source reading back its frame is not held up by
 * the kernels downstream. The consumer's stream is held busy after its
 * read until the host has checked (a kernel the host releases), and is
 * still busy when the map returns. */
GST_START_TEST (test_host_read_waits_only_for_the_writer)
{
  GstMemory *mem = p3d_cuda_allocator_alloc (allocator, 64 * 4);
  P3dcCudaStream producer, consumer;
  P3dcCudaEvent consumer_done;
  P3dFillHold *hold = NULL;
  GstMapInfo info;

  fail_unless_equals_int (p3dc_cuda_stream_create (&producer), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_create (&consumer), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_event_create (&consumer_done), P3DC_OK);
  fill_on_device (mem, 7, producer);

  /* the consumer reads mem, then stays busy until released */
  fail_unless (gst_memory_map (mem, &info, GST_MAP_READ | P3D_MAP_CUDA));
  fail_unless (p3d_cuda_memory_wait (mem, consumer));
  fail_unless_equals_int (p3d_fill_hold_cuda (consumer, &hold), P3DC_OK);
  fail_unless (p3d_cuda_memory_record (mem, consumer));
  fail_unless_equals_int (p3dc_cuda_event_record (consumer_done, consumer),
      P3DC_OK);
  gst_memory_unmap (mem, &info);

  assert_pattern (mem, 7, 64);
  fail_unless_equals_int (p3dc_cuda_event_query (consumer_done),
      P3DC_ERROR_NOT_READY);

  /* a host write waits for every reader */
  p3d_fill_hold_release (hold);
  fail_unless (gst_memory_map (mem, &info, GST_MAP_WRITE));
  fail_unless_equals_int (p3dc_cuda_event_query (consumer_done), P3DC_OK);
  gst_memory_unmap (mem, &info);
  fail_unless_equals_int (p3d_fill_hold_free (hold), P3DC_OK);

  gst_memory_unref (mem);
  p3dc_cuda_event_destroy (consumer_done);
  p3dc_cuda_stream_destroy (producer);
  p3dc_cuda_stream_destroy (consumer);
}

GST_END_TEST;

/* The device-to-device path a filter takes for input on another GPU, run
 * on one device: the reader waits for the memory, copies with
 * p3dc_cuda_memcpy_peer on its own stream and records its read with
 * p3d_cuda_memory_record_from(); a host write of the memory afterwards
 * waits for the copy, which holds the first pattern. */
GST_START_TEST (test_peer_copy_and_foreign_record)
{
  GstMemory *mem = p3d_cuda_allocator_alloc (allocator, WORDS * 4);
  P3dcCudaStream producer, reader;
  P3dcCudaEvent read_done;
  GstMapInfo info;
  guint32 *copy, *host;
  gsize i;

  fail_unless_equals_int (p3dc_cuda_stream_create (&producer), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_create (&reader), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_event_create (&read_done), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_malloc ((void **) &copy, WORDS * 4),
      P3DC_OK);
  fill_on_device (mem, 11, producer);

  fail_unless (gst_memory_map (mem, &info, GST_MAP_READ | P3D_MAP_CUDA));
  fail_unless (p3d_cuda_memory_wait (mem, reader));
  fail_unless_equals_int (p3dc_cuda_memcpy_peer (copy, 0, info.data, 0,
          WORDS * 4, reader), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_event_record (read_done, reader), P3DC_OK);
  fail_unless (p3d_cuda_memory_record_from (mem, read_done));
  gst_memory_unmap (mem, &info);

  /* overwrite everything from the host: must not race the copy */
  fail_unless (gst_memory_map (mem, &info, GST_MAP_WRITE | P3D_MAP_OVERWRITE));
  memset (info.data, 0xab, info.size);
  gst_memory_unmap (mem, &info);

  host = g_new (guint32, WORDS);
  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (host, copy, WORDS * 4,
          reader), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (reader), P3DC_OK);
  for (i = 0; i < WORDS; i++)
    if (host[i] != p3d_fill_pattern_value (11, i))
      fail ("word %" G_GSIZE_FORMAT ": %08x, expected %08x", i, host[i],
          p3d_fill_pattern_value (11, i));
  g_free (host);
  fail_unless (gst_memory_map (mem, &info, GST_MAP_READ));
  fail_unless_equals_int (info.data[0], 0xab);
  gst_memory_unmap (mem, &info);

  p3dc_cuda_free (copy);
  gst_memory_unref (mem);
  p3dc_cuda_event_destroy (read_done);
  p3dc_cuda_stream_destroy (producer);
  p3dc_cuda_stream_destroy (reader);
}

GST_END_TEST;

GST_START_TEST (test_buffer_copy_region_copies)
{
  GstBuffer *buffer = gst_buffer_new ();
  GstBuffer *part;
  GstMemory *mem = p3d_cuda_allocator_alloc (allocator, 64 * 4);
  GstMapInfo info;
  guint i;

  fail_unless (gst_memory_map (mem, &info, GST_MAP_WRITE | P3D_MAP_OVERWRITE));
  for (i = 0; i < 64; i++)
    ((guint32 *) info.data)[i] = p3d_fill_pattern_value (9, i);
  gst_memory_unmap (mem, &info);
  gst_buffer_append_memory (buffer, mem);
  /* sharing is refused by flag, so a region is a device copy */
  part = gst_buffer_copy_region (buffer, GST_BUFFER_COPY_MEMORY, 16, 32);
  fail_unless (part != NULL);
  fail_unless_equals_int (gst_buffer_n_memory (part), 1);
  fail_unless (p3d_is_cuda_memory (gst_buffer_peek_memory (part, 0)));
  fail_unless (((P3dCudaMemory *) gst_buffer_peek_memory (part,
              0))->device_data != ((P3dCudaMemory *) mem)->device_data);
  fail_unless (gst_buffer_map (part, &info, GST_MAP_READ));
  for (i = 0; i < 8; i++)
    fail_unless_equals_int (((guint32 *) info.data)[i],
        p3d_fill_pattern_value (9, i + 4));
  gst_buffer_unmap (part, &info);
  gst_buffer_unref (part);
  gst_buffer_unref (buffer);
}

GST_END_TEST;

GST_START_TEST (test_pool_reuses_device_memory)
{
  P3dTensorLayout layout = { 0 };
  GstCaps *caps = gst_caps_from_string ("application/x-boxes3d("
      P3D_CAPS_FEATURE_MEMORY_CUDA "), max-boxes=10");
  GstBufferPool *pool;
  GstBuffer *buf1, *buf2;
  gpointer device[2];
  P3dTensorMap map;
  gchar *why = NULL;

  layout.n_tensors = 2;
  layout.size[0] = 360;
  layout.size[1] = 4;
  pool = p3d_tensor_pool_new_configured (caps, &layout, allocator, 1);
  fail_unless (pool != NULL);
  fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &buf1,
          NULL), GST_FLOW_OK);
  fail_unless_equals_int (gst_buffer_n_memory (buf1), 2);
  fail_unless (p3d_tensor_buffer_is_on_device (buf1, &layout, 0));
  fail_unless (p3d_tensor_map (&map, buf1, &layout,
          GST_MAP_WRITE | P3D_MAP_CUDA, &why), "%s", why);
  device[0] = map.data[0];
  device[1] = map.data[1];
  p3d_tensor_unmap (&map);
  /* written through a write map: no longer clean until marked */
  fail_if (p3d_cuda_memory_is_clean (gst_buffer_peek_memory (buf1, 0)));
  p3d_cuda_memory_mark_clean (gst_buffer_peek_memory (buf1, 0));
  fail_unless (p3d_cuda_memory_is_clean (gst_buffer_peek_memory (buf1, 0)));
  gst_buffer_unref (buf1);
  fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &buf2,
          NULL), GST_FLOW_OK);
  fail_unless (p3d_tensor_map (&map, buf2, &layout,
          GST_MAP_READ | P3D_MAP_CUDA, &why), "%s", why);
  fail_unless (map.data[0] == device[0] && map.data[1] == device[1]);
  p3d_tensor_unmap (&map);
  fail_unless (p3d_cuda_memory_is_clean (gst_buffer_peek_memory (buf2, 0)));
  gst_buffer_unref (buf2);
  fail_unless (gst_buffer_pool_set_active (pool, FALSE));
  gst_object_unref (pool);
  gst_caps_unref (caps);
}

GST_END_TEST;

GST_START_TEST (test_pool_restores_variable_tensor)
{
  P3dTensorLayout layout = { 0 };
  GstCaps *caps = gst_caps_from_string ("application/x-point-cloud("
      P3D_CAPS_FEATURE_MEMORY_CUDA "), format=xyzi");
  GstBufferPool *pool;
  GstBuffer *buf;
  GstMemory *mem;

  layout.n_tensors = 1;
  layout.record[0] = 16;
  layout.size[0] = 16 * 1000;
  pool = p3d_tensor_pool_new_configured (caps, &layout, allocator, 1);
  fail_unless (pool != NULL);
  fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &buf, NULL),
      GST_FLOW_OK);
  mem = gst_buffer_peek_memory (buf, 0);
  gst_memory_resize (mem, 0, 16 * 10);
  fail_unless_equals_int (gst_buffer_get_size (buf), 160);
  gst_buffer_unref (buf);
  fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &buf, NULL),
      GST_FLOW_OK);
  fail_unless (gst_buffer_peek_memory (buf, 0) == mem);
  fail_unless_equals_int (gst_buffer_get_size (buf), 16000);
  gst_buffer_unref (buf);
  gst_buffer_pool_set_active (pool, FALSE);
  gst_object_unref (pool);
  gst_caps_unref (caps);
}

GST_END_TEST;

static Suite *
cudamemory_suite (void)
{
  Suite *s = suite_create ("cudamemory");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_alloc_is_zero_and_typed);
  tcase_add_test (tc, test_kernel_write_maps_back);
  tcase_add_test (tc, test_host_write_uploads);
  tcase_add_test (tc, test_read_write_map_keeps_content);
  tcase_add_test (tc, test_event_orders_two_streams);
  tcase_add_test (tc, test_host_read_waits_only_for_the_writer);
  tcase_add_test (tc, test_peer_copy_and_foreign_record);
  tcase_add_test (tc, test_buffer_copy_region_copies);
  tcase_add_test (tc, test_pool_reuses_device_memory);
  tcase_add_test (tc, test_pool_restores_variable_tensor);
  return s;
}

P3D_CHECK_MAIN (cudamemory);
