/* gst-perception: a buffer pool of multi-tensor buffers.
 *
 * Each buffer holds one GstMemory per tensor of a P3dTensorLayout, from the
 * configured allocator: our CUDA allocator for memory:CUDAMemory caps, the
 * system allocator otherwise. New memories are zero-filled, so a fresh
 * buffer is a valid empty frame. A variable-length tensor is allocated at
 * its capacity and may be shrunk with gst_memory_resize(); the pool restores
 * its size when the buffer comes back.
 */
#ifndef __P3D_TENSOR_POOL_H__
#define __P3D_TENSOR_POOL_H__

#include <gst/gst.h>

#include "p3dtensor.h"

G_BEGIN_DECLS

#define P3D_TYPE_TENSOR_POOL (p3d_tensor_pool_get_type ())
#define P3D_TENSOR_POOL(obj) \
    (G_TYPE_CHECK_INSTANCE_CAST ((obj), P3D_TYPE_TENSOR_POOL, P3dTensorPool))
#define P3D_IS_TENSOR_POOL(obj) \
    (G_TYPE_CHECK_INSTANCE_TYPE ((obj), P3D_TYPE_TENSOR_POOL))

typedef struct _P3dTensorPool P3dTensorPool;
typedef struct _P3dTensorPoolClass P3dTensorPoolClass;

struct _P3dTensorPool
{
  GstBufferPool parent;

  /*< private > */
  P3dTensorLayout layout;
  GstAllocator *allocator;
  GstAllocationParams params;
  gpointer _gst_reserved[GST_PADDING];
};

struct _P3dTensorPoolClass
{
  GstBufferPoolClass parent_class;
};

GType p3d_tensor_pool_get_type (void);

GstBufferPool *p3d_tensor_pool_new (void);

/* Stores @layout in a pool configuration (set the caps, the buffer counts
 * and the allocator with the usual gst_buffer_pool_config_* calls; the size
 * given there is ignored and replaced by the layout's total). */
void p3d_tensor_pool_config_set_layout (GstStructure * config,
    const P3dTensorLayout * layout);
gboolean p3d_tensor_pool_config_get_layout (GstStructure * config,
    P3dTensorLayout * layout);

/* The fewest buffers an element's output pool holds: one being written,
 * one being read downstream. */
#define P3D_TENSOR_POOL_MIN_BUFFERS 2

/* A started pool of @min_buffers (growing without bound) for @layout, in
 * CUDA memory of @allocator when it is not NULL, else in system memory. */
GstBufferPool *p3d_tensor_pool_new_configured (GstCaps * caps,
    const P3dTensorLayout * layout, GstAllocator * allocator,
    guint min_buffers);

/* For an element's decide_allocation: replaces the pools and allocators
 * downstream proposed in the ALLOCATION @query by one tensor pool for
 * @layout in the query's caps (configured, not started; the base classes
 * start it), in CUDA memory of @allocator when it is not NULL, else in
 * system memory. Downstream's pool holds single memories, but its buffer
 * counts are kept: at least downstream's minimum (what a queue or a muxer
 * holds) and P3D_TENSOR_POOL_MIN_BUFFERS, at most its maximum (0: the pool
 * grows as needed). Returns the pool (a new reference), or NULL when it
 * refuses the configuration. */
GstBufferPool *p3d_tensor_pool_decide_allocation (GstQuery * query,
    const P3dTensorLayout * layout, GstAllocator * allocator);

G_END_DECLS

#endif /* __P3D_TENSOR_POOL_H__ */
