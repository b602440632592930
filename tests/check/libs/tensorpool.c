/* The tensor buffer pool on system memory: one zero-filled memory per
 * tensor of the layout, a shrunk variable tensor restored when its buffer
 * comes back (and the same buffer reused), the layout stored in and read
 * from a pool configuration, layouts a pool cannot hold refused, and the
 * pool an element's decide_allocation puts in the query (one rule for the
 * buffer counts). */
#include <string.h>
#include <gst/check/gstcheck.h>

#include "p3dperception.h"
#include "p3dtest.h"

#define GIB (G_GUINT64_CONSTANT (1) << 30)

/* KITTI-sized voxels: 40000 x 32 xyzi points. */
static GstCaps *
kitti_voxels (P3dTensorLayout * layout)
{
  GstCaps *caps = gst_caps_from_string ("application/x-voxels, format=xyzi, "
      "channels=4, max-voxels=40000, max-points=32, grid=<432,496,1>, "
      "voxel-size=<0.16,0.16,4.0>, range=<0.0,-39.68,-3.0,69.12,39.68,1.0>");
  P3dVoxelsInfo info;

  fail_unless (caps != NULL);
  fail_unless (p3d_voxels_info_from_caps (&info, caps));
  p3d_voxels_info_get_layout (&info, layout);
  return caps;
}

/* A sweep of up to @max_points xyzi points. */
static GstCaps *
point_cloud (gsize max_points, P3dTensorLayout * layout)
{
  GstCaps *caps = gst_caps_from_string ("application/x-point-cloud, "
      "format=xyzi");
  P3dPointCloudInfo info;

  fail_unless (p3d_point_cloud_info_from_caps (&info, caps));
  p3d_point_cloud_info_get_layout (&info, max_points, layout);
  return caps;
}

/* A started system-memory pool configured by hand, so that the tests of
 * buffers do not depend on p3d_tensor_pool_new_configured(). */
static GstBufferPool *
system_pool (GstCaps * caps, const P3dTensorLayout * layout, guint min,
    guint max)
{
  GstBufferPool *pool = p3d_tensor_pool_new ();
  GstStructure *config = gst_buffer_pool_get_config (pool);
  GstAllocationParams params;

  gst_allocation_params_init (&params);
  gst_buffer_pool_config_set_params (config, caps, 0, min, max);
  gst_buffer_pool_config_set_allocator (config, NULL, &params);
  p3d_tensor_pool_config_set_layout (config, layout);
  fail_unless (gst_buffer_pool_set_config (pool, config));
  fail_unless (gst_buffer_pool_set_active (pool, TRUE));
  return pool;
}

/* @buffer holds one memory per tensor, of the layout's sizes, all zero. */
static void
check_fresh_buffer (GstBuffer * buffer, const P3dTensorLayout * layout)
{
  guint t;
  gsize i;

  fail_unless_equals_int (gst_buffer_n_memory (buffer), layout->n_tensors);
  for (t = 0; t < layout->n_tensors; t++) {
    GstMemory *mem = gst_buffer_peek_memory (buffer, t);
    GstMapInfo info;

    fail_unless_equals_uint64 (gst_memory_get_sizes (mem, NULL, NULL),
        layout->size[t]);
    fail_unless (gst_memory_map (mem, &info, GST_MAP_READ));
    for (i = 0; i < info.size; i++)
      if (info.data[i] != 0)
        fail ("tensor %u byte %" G_GSIZE_FORMAT " is %u, not 0", t, i,
            info.data[i]);
    gst_memory_unmap (mem, &info);
  }
  fail_unless (p3d_tensor_layout_check_buffer (layout, buffer, NULL));
}

/* A started pool from p3d_tensor_pool_new_configured(): buffers of one
 * zero-filled memory per tensor; the pool grows past its minimum. */
static void
check_new_configured (GstAllocator * allocator)
{
  P3dTensorLayout layout;
  GstCaps *caps = kitti_voxels (&layout);
  GstBufferPool *pool;
  GstBuffer *buffers[3];
  guint i;

  pool = p3d_tensor_pool_new_configured (caps, &layout, allocator, 2);
  fail_unless (pool != NULL);
  fail_unless (P3D_IS_TENSOR_POOL (pool));
  fail_unless (gst_buffer_pool_is_active (pool));
  for (i = 0; i < 3; i++) {
    fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &buffers[i],
            NULL), GST_FLOW_OK);
    check_fresh_buffer (buffers[i], &layout);
  }
  fail_if (buffers[0] == buffers[1] || buffers[1] == buffers[2]
      || buffers[0] == buffers[2]);
  for (i = 0; i < 3; i++)
    gst_buffer_unref (buffers[i]);
  fail_unless (gst_buffer_pool_set_active (pool, FALSE));
  gst_object_unref (pool);
  gst_caps_unref (caps);
}

/* allocator NULL: system memory, as the header promises */
GST_START_TEST (test_new_configured_null_allocator)
{
  check_new_configured (NULL);
}

GST_END_TEST;

GST_START_TEST (test_new_configured_system_allocator)
{
  GstAllocator *allocator = gst_allocator_find (NULL);

  check_new_configured (allocator);
  gst_object_unref (allocator);
}

GST_END_TEST;

GST_START_TEST (test_buffers)
{
  P3dTensorLayout layout;
  GstCaps *caps = kitti_voxels (&layout);
  GstBufferPool *pool = system_pool (caps, &layout, 1, 0);
  GstBuffer *buffer, *again;
  GstStructure *config;
  GstCaps *config_caps;
  guint size, min, max;
  P3dTensorMap map;

  fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &buffer,
          NULL), GST_FLOW_OK);
  check_fresh_buffer (buffer, &layout);
  fail_unless (gst_buffer_get_size (buffer) ==
      p3d_tensor_layout_get_total_size (&layout));

  /* the configured size is the layout's total, whatever was asked */
  config = gst_buffer_pool_get_config (pool);
  fail_unless (gst_buffer_pool_config_get_params (config, &config_caps, &size,
          &min, &max));
  fail_unless_equals_int (size, 21280004);
  fail_unless (gst_caps_is_equal (config_caps, caps));
  gst_structure_free (config);

  /* written, returned, and handed out again: the same memories */
  fail_unless (p3d_tensor_map (&map, buffer, &layout, GST_MAP_WRITE, NULL));
  ((guint32 *) map.data[P3D_VOXELS_TENSOR_COUNT])[0] = 7;
  p3d_tensor_unmap (&map);
  {
    GstMemory *mem = gst_buffer_peek_memory (buffer, 0);

    gst_buffer_unref (buffer);
    fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &again,
            NULL), GST_FLOW_OK);
    fail_unless (gst_buffer_peek_memory (again, 0) == mem);
  }
  fail_unless_equals_int (gst_buffer_n_memory (again), 4);
  gst_buffer_unref (again);

  fail_unless (gst_buffer_pool_set_active (pool, FALSE));
  gst_object_unref (pool);
  gst_caps_unref (caps);
}

GST_END_TEST;

GST_START_TEST (test_variable_tensor_restored)
{
  P3dTensorLayout layout;
  GstCaps *caps = point_cloud (1000, &layout);
  GstBufferPool *pool = system_pool (caps, &layout, 1, 0);
  GstBuffer *buffer;
  GstMemory *mem;
  gsize offset, maxsize;
  guint round;

  fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &buffer,
          NULL), GST_FLOW_OK);
  check_fresh_buffer (buffer, &layout);
  mem = gst_buffer_peek_memory (buffer, 0);
  fail_unless_equals_uint64 (gst_memory_get_sizes (mem, NULL, NULL), 16000);

  for (round = 0; round < 4; round++) {
    GstBuffer *again;
    GstMemory *again_mem;

    /* a sweep of 10 points, then of 0, then 10 points at an offset, then
     * 20 points cut with gst_buffer_resize() */
    if (round == 3)
      gst_buffer_resize (buffer, 0, 320);
    else if (round == 2)
      gst_memory_resize (mem, 32, 160);
    else
      gst_memory_resize (mem, 0, round == 0 ? 160 : 0);
    fail_unless (p3d_tensor_layout_check_buffer (&layout, buffer, NULL));
    gst_buffer_unref (buffer);

    fail_unless_equals_int (gst_buffer_pool_acquire_buffer (pool, &again,
            NULL), GST_FLOW_OK);
    again_mem = gst_buffer_peek_memory (again, 0);
    fail_unless (again == buffer, "round %u: the pool made a new buffer "
        "instead of reusing the one returned", round);
    fail_unless (again_mem == mem, "round %u: the memory was replaced", round);
    fail_unless_equals_uint64 (gst_memory_get_sizes (again_mem, &offset,
            &maxsize), 16000);
    fail_unless_equals_uint64 (offset, 0);
    fail_unless (maxsize >= 16000);
    fail_unless_equals_uint64 (gst_buffer_get_size (again), 16000);
    buffer = again;
  }
  gst_buffer_unref (buffer);
  fail_unless (gst_buffer_pool_set_active (pool, FALSE));
  gst_object_unref (pool);
  gst_caps_unref (caps);
}

GST_END_TEST;

GST_START_TEST (test_config_layout)
{
  GstBufferPool *pool = p3d_tensor_pool_new ();
  GstStructure *config;
  P3dTensorLayout layout, read, variable;
  GstCaps *caps = kitti_voxels (&layout), *pc_caps;

  config = gst_buffer_pool_get_config (pool);
  /* nothing stored yet */
  fail_if (p3d_tensor_pool_config_get_layout (config, &read));
  p3d_tensor_pool_config_set_layout (config, &layout);
  fail_unless (p3d_tensor_pool_config_get_layout (config, &read));
  fail_unless (p3d_tensor_layout_is_equal (&read, &layout));
  fail_unless_equals_int (read.n_tensors, 4);

  /* a variable tensor keeps its record size; a second layout replaces the
   * first */
  pc_caps = point_cloud (1000, &variable);
  p3d_tensor_pool_config_set_layout (config, &variable);
  fail_unless (p3d_tensor_pool_config_get_layout (config, &read));
  fail_unless (p3d_tensor_layout_is_equal (&read, &variable));
  fail_unless_equals_uint64 (read.record[0], 16);
  fail_unless_equals_uint64 (read.size[0], 16000);

  /* through the pool: set_config keeps it */
  gst_buffer_pool_config_set_params (config, pc_caps, 0, 1, 0);
  fail_unless (gst_buffer_pool_set_config (pool, config));
  config = gst_buffer_pool_get_config (pool);
  fail_unless (p3d_tensor_pool_config_get_layout (config, &read));
  fail_unless (p3d_tensor_layout_is_equal (&read, &variable));
  gst_structure_free (config);

  /* 0 or more than P3D_MAX_TENSORS tensors cannot be stored */
  config = gst_buffer_pool_get_config (pool);
  read = layout;
  read.n_tensors = 0;
  ASSERT_CRITICAL (p3d_tensor_pool_config_set_layout (config, &read));
  read.n_tensors = P3D_MAX_TENSORS + 1;
  ASSERT_CRITICAL (p3d_tensor_pool_config_set_layout (config, &read));
  gst_structure_set (config, "p3d-tensors", G_TYPE_UINT, 5, NULL);
  fail_if (p3d_tensor_pool_config_get_layout (config, &read));
  gst_structure_free (config);

  gst_object_unref (pool);
  gst_caps_unref (pc_caps);
  gst_caps_unref (caps);
}

GST_END_TEST;

/* new_configured() with the pool's usual path, for a layout that must be
 * refused: NULL, and no pool left behind. */
static void
check_refused (const P3dTensorLayout * layout, const gchar * what)
{
  GstCaps *caps = gst_caps_new_empty_simple ("application/x-test");
  GstBufferPool *pool = p3d_tensor_pool_new ();
  GstStructure *config = gst_buffer_pool_get_config (pool);
  GstAllocationParams params;

  gst_allocation_params_init (&params);
  /* min 0: nothing is allocated even if the configuration were taken */
  gst_buffer_pool_config_set_params (config, caps, 0, 0, 0);
  gst_buffer_pool_config_set_allocator (config, NULL, &params);
  p3d_tensor_pool_config_set_layout (config, layout);
  fail_if (gst_buffer_pool_set_config (pool, config), "%s accepted", what);
  gst_object_unref (pool);
  gst_caps_unref (caps);
}

GST_START_TEST (test_layout_too_large)
{
  P3dTensorLayout layout;
  GstBufferPool *pool;
  GstCaps *caps = gst_caps_new_empty_simple ("application/x-test");
  GstStructure *config;
  GstAllocationParams params;
  GstAllocator *allocator;

  memset (&layout, 0, sizeof (layout));
  /* two tensors of 3 GiB: 6 GiB in a buffer */
  layout.n_tensors = 2;
  layout.size[0] = layout.size[1] = 3 * GIB;
  check_refused (&layout, "6 GiB in 2 tensors");
  /* four tensors whose total passes 4 GiB by one byte */
  layout.n_tensors = 4;
  layout.size[0] = layout.size[1] = layout.size[2] = GIB;
  layout.size[3] = GIB + 1;
  check_refused (&layout, "4 GiB + 1 in 4 tensors");
  /* one tensor of 5 GiB */
  layout.n_tensors = 1;
  layout.size[0] = 5 * GIB;
  check_refused (&layout, "one tensor of 5 GiB");
  /* a tensor without a capacity cannot be pooled */
  layout.size[0] = 0;
  layout.record[0] = 16;
  check_refused (&layout, "an unbounded tensor");

  /* the refusal through p3d_tensor_pool_new_configured() too (with the
   * system allocator named, not NULL: see test_new_configured_*) */
  layout.n_tensors = 2;
  layout.size[0] = layout.size[1] = 3 * GIB;
  layout.record[0] = 0;
  allocator = gst_allocator_find (NULL);
  pool = p3d_tensor_pool_new_configured (caps, &layout, allocator, 0);
  fail_unless (pool == NULL);
  gst_object_unref (allocator);

  /* exactly 4 GiB - 1 fits (min 0: nothing allocated) */
  layout.n_tensors = 4;
  layout.size[0] = layout.size[1] = layout.size[2] = GIB;
  layout.size[3] = GIB - 1;
  pool = p3d_tensor_pool_new ();
  config = gst_buffer_pool_get_config (pool);
  gst_allocation_params_init (&params);
  gst_buffer_pool_config_set_params (config, caps, 0, 0, 0);
  gst_buffer_pool_config_set_allocator (config, NULL, &params);
  p3d_tensor_pool_config_set_layout (config, &layout);
  fail_unless (gst_buffer_pool_set_config (pool, config));
  gst_object_unref (pool);
  gst_caps_unref (caps);
}

GST_END_TEST;

/* decide_allocation's pool: ours, in place of what downstream proposed,
 * with downstream's buffer counts where they ask more than the minimum.
 * Each case: downstream's pool (none when min is -1), then the counts the
 * element's pool must have. */
GST_START_TEST (test_decide_allocation)
{
  static const struct
  {
    gint their_min, their_max;
    guint min, max;
  } cases[] = {
    {-1, 0, P3D_TENSOR_POOL_MIN_BUFFERS, 0},
    {0, 0, P3D_TENSOR_POOL_MIN_BUFFERS, 0},
    {1, 0, P3D_TENSOR_POOL_MIN_BUFFERS, 0},
    {5, 0, 5, 0},
    {1, 6, P3D_TENSOR_POOL_MIN_BUFFERS, 6},
    {4, 4, 4, 4},
    /* a maximum below our minimum grows to it */
    {0, 1, P3D_TENSOR_POOL_MIN_BUFFERS, P3D_TENSOR_POOL_MIN_BUFFERS},
  };
  P3dTensorLayout layout, stored;
  GstCaps *caps = kitti_voxels (&layout);
  GstAllocator *system = gst_allocator_find (NULL);
  guint i;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    GstQuery *query = gst_query_new_allocation (caps, TRUE);
    GstBufferPool *theirs = gst_buffer_pool_new (), *pool, *listed = NULL;
    GstStructure *config;
    GstCaps *config_caps = NULL;
    guint size, min, max;

    if (cases[i].their_min >= 0)
      gst_query_add_allocation_pool (query, theirs, 4096,
          cases[i].their_min, cases[i].their_max);
    gst_query_add_allocation_param (query, system, NULL);
    pool = p3d_tensor_pool_decide_allocation (query, &layout, NULL);
    fail_unless (pool != NULL && P3D_IS_TENSOR_POOL (pool), "case %u", i);

    fail_unless_equals_int (gst_query_get_n_allocation_pools (query), 1);
    gst_query_parse_nth_allocation_pool (query, 0, &listed, &size, &min, &max);
    fail_unless (listed == pool, "case %u: not our pool", i);
    fail_unless_equals_uint64 (size, p3d_tensor_layout_get_total_size
        (&layout));
    fail_unless_equals_int (min, cases[i].min);
    fail_unless_equals_int (max, cases[i].max);
    /* system memory: no allocator listed, downstream's removed */
    fail_unless_equals_int (gst_query_get_n_allocation_params (query), 0);

    config = gst_buffer_pool_get_config (pool);
    fail_unless (gst_buffer_pool_config_get_params (config, &config_caps,
            &size, &min, &max));
    fail_unless (gst_caps_is_equal (config_caps, caps));
    fail_unless_equals_int (min, cases[i].min);
    fail_unless_equals_int (max, cases[i].max);
    fail_unless (p3d_tensor_pool_config_get_layout (config, &stored));
    fail_unless (p3d_tensor_layout_is_equal (&stored, &layout));
    fail_if (gst_buffer_pool_is_active (pool));
    gst_structure_free (config);

    gst_object_unref (listed);
    gst_object_unref (pool);
    gst_object_unref (theirs);
    gst_query_unref (query);
  }
  gst_object_unref (system);
  gst_caps_unref (caps);
}

GST_END_TEST;

/* The caps library logs in its own domain, which gst-check does not watch:
 * make its criticals and warnings fail a test, or satisfy ASSERT_CRITICAL,
 * as GStreamer's own do. */
static Suite *
tensorpool_suite (void)
{
  Suite *s = suite_create ("tensorpool");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_new_configured_null_allocator);
  tcase_add_test (tc, test_new_configured_system_allocator);
  tcase_add_test (tc, test_buffers);
  tcase_add_test (tc, test_variable_tensor_restored);
  tcase_add_test (tc, test_config_layout);
  tcase_add_test (tc, test_layout_too_large);
  tcase_add_test (tc, test_decide_allocation);
  return s;
}

P3D_CHECK_MAIN (tensorpool);
