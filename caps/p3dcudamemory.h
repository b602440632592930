/* gst-perception: device memory for the caps feature memory:CUDAMemory.
 *
 * GStreamer 1.22's GstCudaMemory only holds pitched video frames, so tensors
 * live in our own memory type, "p3d.cuda.memory": one linear cudaMalloc
 * allocation per GstMemory.
 *
 * Mapping with P3D_MAP_CUDA gives the device pointer. Mapping without it
 * gives a host copy (page-locked): downloaded on a read map when the device
 * holds newer data, uploaded when a write map is unmapped. P3D_MAP_OVERWRITE
 * on a host write map promises that every byte will be written, which skips
 * the download.
 *
 * Ordering between streams: each memory keeps a CUDA event recorded after
 * the last queued access, and one recorded after the last queued write.
 * Whoever accesses the memory on the device (reader or writer) first calls
 * p3d_cuda_memory_wait() on its stream, queues its work, then
 * p3d_cuda_memory_record(): the consumer's stream waits for the producer's
 * kernels, and a producer reusing a pooled memory waits for the consumers,
 * with no host synchronization. An access counts as a write when the memory
 * was mapped for writing since the previous record. A host read map waits
 * only for the last write (a source reading back its own frame does not
 * wait for the kernels of its consumers); a host write map waits for every
 * access.
 *
 * Copies are device-to-device. Sharing is refused (GST_MEMORY_FLAG_NO_SHARE),
 * so gst_buffer_copy_region() copies instead of aliasing part of a tensor.
 */
#ifndef __P3D_CUDA_MEMORY_H__
#define __P3D_CUDA_MEMORY_H__

#include <gst/gst.h>

G_BEGIN_DECLS

#ifndef P3DC_CUDA_STREAM_DEFINED
#define P3DC_CUDA_STREAM_DEFINED
typedef struct CUstream_st *P3dcCudaStream;
typedef struct CUevent_st *P3dcCudaEvent;
#endif

#define P3D_CUDA_MEMORY_TYPE_NAME "p3d.cuda.memory"

/* The caps feature of our device memory. */
#define P3D_CAPS_FEATURE_MEMORY_CUDA "memory:CUDAMemory"

/* The map flag that asks a P3dCudaMemory for its device pointer instead of
 * a host copy. */
#define P3D_MAP_CUDA ((GstMapFlags) (GST_MAP_FLAG_LAST << 1))

/* A host write map that will write every byte: no download first. */
#define P3D_MAP_OVERWRITE ((GstMapFlags) (GST_MAP_FLAG_LAST << 2))

#define P3D_TYPE_CUDA_ALLOCATOR (p3d_cuda_allocator_get_type ())
#define P3D_CUDA_ALLOCATOR(obj) \
    (G_TYPE_CHECK_INSTANCE_CAST ((obj), P3D_TYPE_CUDA_ALLOCATOR, P3dCudaAllocator))
#define P3D_IS_CUDA_ALLOCATOR(obj) \
    (G_TYPE_CHECK_INSTANCE_TYPE ((obj), P3D_TYPE_CUDA_ALLOCATOR))

typedef struct _P3dCudaAllocator P3dCudaAllocator;
typedef struct _P3dCudaAllocatorClass P3dCudaAllocatorClass;
typedef struct _P3dCudaMemory P3dCudaMemory;

struct _P3dCudaAllocator
{
  GstAllocator parent;

  /*< private > */
  gint device_id;
  P3dcCudaStream copy_stream;
  gpointer _gst_reserved[GST_PADDING];
};

struct _P3dCudaAllocatorClass
{
  GstAllocatorClass parent_class;
};

/**
 * P3dCudaMemory:
 * @device_id: the device holding the allocation
 * @device_data: the allocation (maxsize bytes); the memory's bytes start
 *     at @device_data + mem.offset
 */
struct _P3dCudaMemory
{
  GstMemory mem;

  gint device_id;
  gpointer device_data;

  /*< private > */
  GMutex lock;
  gpointer host_data;
  gsize host_valid_offset;
  gsize host_valid_size;
  gboolean host_valid;
  P3dcCudaEvent event;
  gboolean event_recorded;
  P3dcCudaEvent write_event;
  guint64 recorded_write_serial;
  guint64 write_serial;
  guint64 clean_serial;
  gpointer _gst_reserved[GST_PADDING];
};

GType p3d_cuda_allocator_get_type (void);

/* The allocator of @device_id (a new reference), or NULL when there is no
 * such device or its stream cannot be created; @why then says why. */
GstAllocator *p3d_cuda_allocator_get (gint device_id, gchar ** why);

/* A zero-filled device allocation of @size bytes, or NULL. */
GstMemory *p3d_cuda_allocator_alloc (GstAllocator * allocator, gsize size);

gboolean p3d_is_cuda_memory (GstMemory * mem);

/* Stream ordering, as described above. They return FALSE (and log) when the
 * CUDA call fails. */
gboolean p3d_cuda_memory_wait (GstMemory * mem, P3dcCudaStream stream);
gboolean p3d_cuda_memory_record (GstMemory * mem, P3dcCudaStream stream);
/* Records a read made by work on another device, which @event (recorded by
 * the reader on its own stream) completes: the memory's later users wait
 * for it as for a record on its own device. */
gboolean p3d_cuda_memory_record_from (GstMemory * mem, P3dcCudaEvent event);
/* Blocks the host until the last recorded access has finished. */
gboolean p3d_cuda_memory_sync (GstMemory * mem);

/* The memory is "clean" when nobody mapped it for writing since the last
 * p3d_cuda_memory_mark_clean() (or since its zero-filled allocation). An
 * element that writes into a pooled memory and marks it clean may, when it
 * gets the memory back still clean, rely on its own previous contents and
 * write only what changed. */
gboolean p3d_cuda_memory_is_clean (GstMemory * mem);
void p3d_cuda_memory_mark_clean (GstMemory * mem);

G_END_DECLS

#endif /* __P3D_CUDA_MEMORY_H__ */
