/* Multi-tensor buffer pool; see p3dtensorpool.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "p3dcudamemory.h"
#include "p3dtensorpool.h"

GST_DEBUG_CATEGORY_STATIC (p3d_tensor_pool_debug);
#define GST_CAT_DEFAULT p3d_tensor_pool_debug

G_DEFINE_TYPE_WITH_CODE (P3dTensorPool, p3d_tensor_pool, GST_TYPE_BUFFER_POOL,
    GST_DEBUG_CATEGORY_INIT (p3d_tensor_pool_debug, "p3dtensorpool", 0,
        "gst-perception tensor buffer pool"));

static const gchar *const size_fields[P3D_MAX_TENSORS] = {
  "p3d-tensor-size-0", "p3d-tensor-size-1", "p3d-tensor-size-2",
  "p3d-tensor-size-3"
};

static const gchar *const record_fields[P3D_MAX_TENSORS] = {
  "p3d-tensor-record-0", "p3d-tensor-record-1", "p3d-tensor-record-2",
  "p3d-tensor-record-3"
};

void
p3d_tensor_pool_config_set_layout (GstStructure * config,
    const P3dTensorLayout * layout)
{
  guint i;

  g_return_if_fail (layout->n_tensors >= 1
      && layout->n_tensors <= P3D_MAX_TENSORS);
  gst_structure_set (config, "p3d-tensors", G_TYPE_UINT, layout->n_tensors,
      NULL);
  for (i = 0; i < layout->n_tensors; i++)
    gst_structure_set (config, size_fields[i], G_TYPE_UINT64,
        (guint64) layout->size[i], record_fields[i], G_TYPE_UINT64,
        (guint64) layout->record[i], NULL);
}

gboolean
p3d_tensor_pool_config_get_layout (GstStructure * config,
    P3dTensorLayout * layout)
{
  guint i, n;

  memset (layout, 0, sizeof (*layout));
  if (!gst_structure_get_uint (config, "p3d-tensors", &n) || n < 1
      || n > P3D_MAX_TENSORS)
    return FALSE;
  layout->n_tensors = n;
  for (i = 0; i < n; i++) {
    guint64 size, record;

    if (!gst_structure_get_uint64 (config, size_fields[i], &size)
        || !gst_structure_get_uint64 (config, record_fields[i], &record)
        || size == 0 || size > G_MAXUINT32)
      return FALSE;
    layout->size[i] = size;
    layout->record[i] = record;
  }
  return TRUE;
}

static const gchar **
p3d_tensor_pool_get_options (GstBufferPool * pool)
{
  static const gchar *options[] = { NULL };

  return options;
}

static gboolean
p3d_tensor_pool_set_config (GstBufferPool * pool, GstStructure * config)
{
  P3dTensorPool *self = P3D_TENSOR_POOL (pool);
  GstAllocator *allocator = NULL;
  GstAllocationParams params;
  GstCaps *caps = NULL;
  guint size, min, max;
  gsize total;

  if (!gst_buffer_pool_config_get_params (config, &caps, &size, &min, &max)
      || !p3d_tensor_pool_config_get_layout (config, &self->layout)) {
    GST_WARNING_OBJECT (pool, "configuration without tensor layout");
    return FALSE;
  }
  total = p3d_tensor_layout_get_total_size (&self->layout);
  if (total > G_MAXUINT32) {
    GST_WARNING_OBJECT (pool, "tensors of %" G_GSIZE_FORMAT " bytes exceed "
        "what a buffer pool can hold", total);
    return FALSE;
  }
  gst_buffer_pool_config_get_allocator (config, &allocator, &params);
  gst_clear_object (&self->allocator);
  if (allocator)
    self->allocator = gst_object_ref (allocator);
  self->params = params;
  /* The base class checks a returned buffer's total size against this. */
  gst_buffer_pool_config_set_params (config, caps, (guint) total, min, max);
  return GST_BUFFER_POOL_CLASS (p3d_tensor_pool_parent_class)->set_config
      (pool, config);
}

static GstFlowReturn
p3d_tensor_pool_alloc_buffer (GstBufferPool * pool, GstBuffer ** buffer,
    GstBufferPoolAcquireParams * params)
{
  P3dTensorPool *self = P3D_TENSOR_POOL (pool);
  GstBuffer *buf = gst_buffer_new ();
  guint i;

  for (i = 0; i < self->layout.n_tensors; i++) {
    gsize size = self->layout.size[i];
    GstMemory *mem;

    if (self->allocator && P3D_IS_CUDA_ALLOCATOR (self->allocator)) {
      mem = p3d_cuda_allocator_alloc (self->allocator, size);
    } else {
      mem = gst_allocator_alloc (self->allocator, size, &self->params);
      if (mem) {
        GstMapInfo info;

        /* Zero-filled, as CUDA memories are: a valid empty frame. */
        if (gst_memory_map (mem, &info, GST_MAP_WRITE)) {
          memset (info.data, 0, info.size);
          gst_memory_unmap (mem, &info);
        }
      }
    }
    if (mem == NULL) {
      GST_ERROR_OBJECT (pool, "cannot allocate tensor %u of %" G_GSIZE_FORMAT
          " bytes", i, size);
      gst_buffer_unref (buf);
      return GST_FLOW_ERROR;
    }
    gst_buffer_append_memory (buf, mem);
  }
  *buffer = buf;
  return GST_FLOW_OK;
}

static void
p3d_tensor_pool_reset_buffer (GstBufferPool * pool, GstBuffer * buffer)
{
  P3dTensorPool *self = P3D_TENSOR_POOL (pool);
  guint i, n = gst_buffer_n_memory (buffer);

  /* Variable tensors come back shrunk; give them their capacity again, so
   * that the base class's total-size check keeps the buffer. */
  if (n == self->layout.n_tensors
      && !GST_BUFFER_FLAG_IS_SET (buffer, GST_BUFFER_FLAG_TAG_MEMORY)) {
    for (i = 0; i < n; i++) {
      GstMemory *mem = gst_buffer_peek_memory (buffer, i);
      gsize offset, maxsize, size = gst_memory_get_sizes (mem, &offset,
          &maxsize);

      if ((offset != 0 || size != self->layout.size[i])
          && maxsize >= self->layout.size[i] && gst_memory_is_writable (mem))
        gst_memory_resize (mem, -(gssize) offset, self->layout.size[i]);
    }
  }
  GST_BUFFER_POOL_CLASS (p3d_tensor_pool_parent_class)->reset_buffer (pool,
      buffer);
}

static void
p3d_tensor_pool_finalize (GObject * object)
{
  P3dTensorPool *self = P3D_TENSOR_POOL (object);

  gst_clear_object (&self->allocator);
  G_OBJECT_CLASS (p3d_tensor_pool_parent_class)->finalize (object);
}

static void
p3d_tensor_pool_class_init (P3dTensorPoolClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstBufferPoolClass *pool_class = GST_BUFFER_POOL_CLASS (klass);

  gobject_class->finalize = p3d_tensor_pool_finalize;
  pool_class->get_options = p3d_tensor_pool_get_options;
  pool_class->set_config = p3d_tensor_pool_set_config;
  pool_class->alloc_buffer = p3d_tensor_pool_alloc_buffer;
  pool_class->reset_buffer = p3d_tensor_pool_reset_buffer;
}

static void
p3d_tensor_pool_init (P3dTensorPool * self)
{
}

GstBufferPool *
p3d_tensor_pool_new (void)
{
  GstBufferPool *pool = g_object_new (P3D_TYPE_TENSOR_POOL, NULL);

  gst_object_ref_sink (pool);
  return pool;
}

GstBufferPool *
p3d_tensor_pool_new_configured (GstCaps * caps, const P3dTensorLayout * layout,
    GstAllocator * allocator, guint min_buffers)
{
  GstBufferPool *pool = p3d_tensor_pool_new ();
  GstStructure *config = gst_buffer_pool_get_config (pool);

  gst_buffer_pool_config_set_params (config, caps,
      (guint) MIN (p3d_tensor_layout_get_total_size (layout), G_MAXUINT32),
      min_buffers, 0);
  if (allocator)
    gst_buffer_pool_config_set_allocator (config, allocator, NULL);
  p3d_tensor_pool_config_set_layout (config, layout);
  if (!gst_buffer_pool_set_config (pool, config)
      || !gst_buffer_pool_set_active (pool, TRUE)) {
    GST_WARNING ("cannot start a tensor pool for %" GST_PTR_FORMAT, caps);
    gst_object_unref (pool);
    return NULL;
  }
  return pool;
}

GstBufferPool *
p3d_tensor_pool_decide_allocation (GstQuery * query,
    const P3dTensorLayout * layout, GstAllocator * allocator)
{
  guint size, min = P3D_TENSOR_POOL_MIN_BUFFERS, max = 0;
  GstCaps *caps = NULL;
  GstBufferPool *pool;
  GstStructure *config;

  gst_query_parse_allocation (query, &caps, NULL);
  if (gst_query_get_n_allocation_pools (query) > 0) {
    guint their_min, their_max;

    gst_query_parse_nth_allocation_pool (query, 0, NULL, NULL, &their_min,
        &their_max);
    min = MAX (their_min, P3D_TENSOR_POOL_MIN_BUFFERS);
    max = their_max == 0 ? 0 : MAX (their_max, min);
  }
  size = (guint) MIN (p3d_tensor_layout_get_total_size (layout), G_MAXUINT32);
  pool = p3d_tensor_pool_new ();
  config = gst_buffer_pool_get_config (pool);
  gst_buffer_pool_config_set_params (config, caps, size, min, max);
  if (allocator)
    gst_buffer_pool_config_set_allocator (config, allocator, NULL);
  p3d_tensor_pool_config_set_layout (config, layout);
  if (!gst_buffer_pool_set_config (pool, config)) {
    GST_WARNING ("cannot configure a tensor pool for %" GST_PTR_FORMAT, caps);
    gst_object_unref (pool);
    return NULL;
  }
  while (gst_query_get_n_allocation_pools (query) > 0)
    gst_query_remove_nth_allocation_pool (query, 0);
  gst_query_add_allocation_pool (query, pool, size, min, max);
  while (gst_query_get_n_allocation_params (query) > 0)
    gst_query_remove_nth_allocation_param (query, 0);
  if (allocator)
    gst_query_add_allocation_param (query, allocator, NULL);
  return pool;
}
