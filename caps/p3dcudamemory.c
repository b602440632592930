/* Device memory for memory:CUDAMemory; see p3dcudamemory.h for the model. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "p3dcudamemory.h"
#include "runtime.h"

GST_DEBUG_CATEGORY_STATIC (p3d_cuda_memory_debug);
#define GST_CAT_DEFAULT p3d_cuda_memory_debug
GST_DEBUG_CATEGORY_STATIC (GST_CAT_PERFORMANCE);

G_DEFINE_TYPE (P3dCudaAllocator, p3d_cuda_allocator, GST_TYPE_ALLOCATOR);

/* One allocator per device for the life of the process, as GStreamer's own
 * default allocators: memories keep a reference, and the copy stream must
 * outlive every memory of the device. */
#define P3D_MAX_DEVICES 64
static GMutex allocators_lock;
static GstAllocator *allocators[P3D_MAX_DEVICES];

#define CUDA_OK(call, what) p3d_cuda_memory_check ((call), (what))

static gboolean
p3d_cuda_memory_check (P3dcResult result, const gchar * what)
{
  if (result == P3DC_OK)
    return TRUE;
  GST_ERROR ("%s failed: %s (%d)", what, p3dc_result_string (result), result);
  return FALSE;
}

/* Runs the calls that follow on @device; pair with device_leave(). */
static gboolean
device_enter (gint device, gint * previous)
{
  return CUDA_OK (p3dc_cuda_device_push (device, previous), "selecting device");
}

static void
device_leave (gint previous)
{
  CUDA_OK (p3dc_cuda_device_pop (previous), "restoring device");
}

/* Host side of the event: the last recorded access must be finished before
 * the host writes into the staging copy again or frees the memory. */
static gboolean
memory_event_sync_locked (P3dCudaMemory * cmem)
{
  if (!cmem->event_recorded)
    return TRUE;
  return CUDA_OK (p3dc_cuda_event_synchronize (cmem->event),
      "waiting for device work on memory");
}

/* Host side of the write event: what the host reads must be written. */
static gboolean
memory_write_sync_locked (P3dCudaMemory * cmem)
{
  return CUDA_OK (p3dc_cuda_event_synchronize (cmem->write_event),
      "waiting for the device's write of memory");
}

/* Records the access just queued on @stream (on the memory's device), as a
 * write too when the memory was mapped for writing since the last one. */
static gboolean
memory_record_locked (P3dCudaMemory * cmem, P3dcCudaStream stream)
{
  if (!CUDA_OK (p3dc_cuda_event_record (cmem->event, stream),
          "recording memory access"))
    return FALSE;
  cmem->event_recorded = TRUE;
  if (cmem->recorded_write_serial == cmem->write_serial)
    return TRUE;
  if (!CUDA_OK (p3dc_cuda_event_record (cmem->write_event, stream),
          "recording memory write"))
    return FALSE;
  cmem->recorded_write_serial = cmem->write_serial;
  return TRUE;
}

static GstMemory *
p3d_cuda_allocator_alloc_internal (GstAllocator * allocator, gsize size,
    GstAllocationParams * params)
{
  P3dCudaAllocator *self = P3D_CUDA_ALLOCATOR (allocator);
  P3dCudaMemory *cmem;
  gpointer device_data = NULL;
  P3dcCudaEvent event = NULL, write_event = NULL;
  gint previous;
  gboolean ok;

  if (size == 0)
    size = 1;
  if (!device_enter (self->device_id, &previous))
    return NULL;
  ok = CUDA_OK (p3dc_cuda_malloc (&device_data, size), "cudaMalloc");
  /* Zero-filled, so a fresh tensor is a valid empty one ("clean"). */
  ok = ok && CUDA_OK (p3dc_cuda_memset (device_data, 0, size,
          self->copy_stream), "zero-filling new memory");
  ok = ok && CUDA_OK (p3dc_cuda_event_create (&event), "creating event");
  ok = ok && CUDA_OK (p3dc_cuda_event_create (&write_event), "creating event");
  ok = ok && CUDA_OK (p3dc_cuda_event_record (event, self->copy_stream),
      "recording event");
  ok = ok && CUDA_OK (p3dc_cuda_event_record (write_event, self->copy_stream),
      "recording event");
  if (!ok) {
    if (event)
      p3dc_cuda_event_destroy (event);
    if (write_event)
      p3dc_cuda_event_destroy (write_event);
    if (device_data)
      p3dc_cuda_free (device_data);
    device_leave (previous);
    return NULL;
  }
  device_leave (previous);

  cmem = g_new0 (P3dCudaMemory, 1);
  gst_memory_init (GST_MEMORY_CAST (cmem), GST_MEMORY_FLAG_NO_SHARE,
      allocator, NULL, size, 0, 0, size);
  g_mutex_init (&cmem->lock);
  cmem->device_id = self->device_id;
  cmem->device_data = device_data;
  cmem->event = event;
  cmem->event_recorded = TRUE;
  cmem->write_event = write_event;
  GST_LOG ("allocated %" G_GSIZE_FORMAT " bytes at %p on device %d", size,
      device_data, self->device_id);
  return GST_MEMORY_CAST (cmem);
}

static void
p3d_cuda_allocator_free (GstAllocator * allocator, GstMemory * mem)
{
  P3dCudaMemory *cmem = (P3dCudaMemory *) mem;
  gint previous;

  if (device_enter (cmem->device_id, &previous)) {
    /* cudaFree must not pull memory from under queued kernels. */
    memory_event_sync_locked (cmem);
    CUDA_OK (p3dc_cuda_event_destroy (cmem->event), "destroying event");
    CUDA_OK (p3dc_cuda_event_destroy (cmem->write_event), "destroying event");
    CUDA_OK (p3dc_cuda_free (cmem->device_data), "cudaFree");
    if (cmem->host_data)
      CUDA_OK (p3dc_cuda_host_free (cmem->host_data), "cudaFreeHost");
    device_leave (previous);
  }
  g_mutex_clear (&cmem->lock);
  g_free (cmem);
}

/* Makes the staging copy hold [offset, offset + size) of the device data. */
static gboolean
memory_download_locked (P3dCudaMemory * cmem, P3dcCudaStream stream)
{
  GstMemory *mem = GST_MEMORY_CAST (cmem);
  gboolean ok;

  if (cmem->host_valid && cmem->host_valid_offset <= mem->offset
      && cmem->host_valid_offset + cmem->host_valid_size >=
      mem->offset + mem->size)
    return TRUE;
  GST_CAT_LOG (GST_CAT_PERFORMANCE, "downloading %" G_GSIZE_FORMAT
      " bytes from device %d", mem->size, cmem->device_id);
  ok = CUDA_OK (p3dc_cuda_memcpy_dtoh ((guint8 *) cmem->host_data + mem->offset,
          (guint8 *) cmem->device_data + mem->offset, mem->size, stream),
      "download") && CUDA_OK (p3dc_cuda_stream_synchronize (stream),
      "waiting for download");
  if (ok) {
    cmem->host_valid = TRUE;
    cmem->host_valid_offset = mem->offset;
    cmem->host_valid_size = mem->size;
  }
  return ok;
}

static gpointer
p3d_cuda_memory_map_full (GstMemory * mem, GstMapInfo * info, gsize maxsize)
{
  P3dCudaMemory *cmem = (P3dCudaMemory *) mem;
  P3dCudaAllocator *allocator = P3D_CUDA_ALLOCATOR (mem->allocator);
  gpointer data = NULL;
  gint previous;

  g_mutex_lock (&cmem->lock);
  if (info->flags & GST_MAP_WRITE)
    cmem->write_serial++;

  if (info->flags & P3D_MAP_CUDA) {
    /* The device becomes the only up-to-date copy as soon as a kernel
     * writes; the caller orders its kernels with wait()/record(). */
    if (info->flags & GST_MAP_WRITE)
      cmem->host_valid = FALSE;
    data = cmem->device_data;
    g_mutex_unlock (&cmem->lock);
    return data;
  }

  if (!device_enter (cmem->device_id, &previous))
    goto out;
  if (cmem->host_data == NULL &&
      !CUDA_OK (p3dc_cuda_host_alloc (&cmem->host_data, maxsize),
          "cudaMallocHost")) {
    cmem->host_data = NULL;
    goto leave;
  }
  /* A read needs the device's last write (or the previous upload out of
   * the staging copy) finished; a write also every reader's. */
  if (!((info->flags & GST_MAP_WRITE) ? memory_event_sync_locked (cmem) :
          memory_write_sync_locked (cmem)))
    goto leave;
  if (!((info->flags & GST_MAP_WRITE) && (info->flags & P3D_MAP_OVERWRITE))
      && !memory_download_locked (cmem, allocator->copy_stream))
    goto leave;
  data = cmem->host_data;
leave:
  device_leave (previous);
out:
  g_mutex_unlock (&cmem->lock);
  return data;
}

static void
p3d_cuda_memory_unmap_full (GstMemory * mem, GstMapInfo * info)
{
  P3dCudaMemory *cmem = (P3dCudaMemory *) mem;
  P3dCudaAllocator *allocator = P3D_CUDA_ALLOCATOR (mem->allocator);
  gint previous;

  if ((info->flags & P3D_MAP_CUDA) || !(info->flags & GST_MAP_WRITE))
    return;

  /* A host write: the staging copy is now the newer one; upload it. The
   * event covers the copy, so device users and the next host map wait. */
  g_mutex_lock (&cmem->lock);
  if (device_enter (cmem->device_id, &previous)) {
    GST_CAT_LOG (GST_CAT_PERFORMANCE, "uploading %" G_GSIZE_FORMAT
        " bytes to device %d", mem->size, cmem->device_id);
    if (CUDA_OK (p3dc_cuda_stream_wait_event (allocator->copy_stream,
                cmem->event), "ordering the upload")
        && CUDA_OK (p3dc_cuda_memcpy_htod ((guint8 *) cmem->device_data +
                mem->offset, (guint8 *) cmem->host_data + mem->offset,
                mem->size, allocator->copy_stream), "upload")
        && memory_record_locked (cmem, allocator->copy_stream)) {
      cmem->host_valid = TRUE;
      cmem->host_valid_offset = mem->offset;
      cmem->host_valid_size = mem->size;
    } else {
      cmem->host_valid = FALSE;
    }
    device_leave (previous);
  }
  g_mutex_unlock (&cmem->lock);
}

static GstMemory *
p3d_cuda_memory_copy (GstMemory * mem, gssize offset, gssize size)
{
  P3dCudaMemory *src = (P3dCudaMemory *) mem;
  P3dCudaAllocator *allocator = P3D_CUDA_ALLOCATOR (mem->allocator);
  GstMemory *copy;
  P3dCudaMemory *dst;
  gint previous;
  gboolean ok;

  if (size == -1)
    size = mem->size > (gsize) offset ? mem->size - offset : 0;
  copy = p3d_cuda_allocator_alloc_internal (mem->allocator, size, NULL);
  if (copy == NULL)
    return NULL;
  dst = (P3dCudaMemory *) copy;

  g_mutex_lock (&src->lock);
  if (!device_enter (src->device_id, &previous)) {
    g_mutex_unlock (&src->lock);
    gst_memory_unref (copy);
    return NULL;
  }
  ok = CUDA_OK (p3dc_cuda_stream_wait_event (allocator->copy_stream,
          src->event), "ordering copy")
      && CUDA_OK (p3dc_cuda_memcpy_dtod (dst->device_data,
          (guint8 *) src->device_data + mem->offset + offset, size,
          allocator->copy_stream), "device copy")
      && CUDA_OK (p3dc_cuda_event_record (dst->event, allocator->copy_stream),
      "recording copy")
      && CUDA_OK (p3dc_cuda_event_record (dst->write_event,
          allocator->copy_stream), "recording copy")
      && memory_record_locked (src, allocator->copy_stream);
  device_leave (previous);
  g_mutex_unlock (&src->lock);
  if (!ok) {
    gst_memory_unref (copy);
    return NULL;
  }
  return copy;
}

static GstMemory *
p3d_cuda_memory_share (GstMemory * mem, gssize offset, gssize size)
{
  /* Unreachable: the memories carry GST_MEMORY_FLAG_NO_SHARE. */
  return NULL;
}

static gboolean
p3d_cuda_memory_is_span (GstMemory * mem1, GstMemory * mem2, gsize * offset)
{
  return FALSE;
}

static void
p3d_cuda_allocator_class_init (P3dCudaAllocatorClass * klass)
{
  GstAllocatorClass *allocator_class = GST_ALLOCATOR_CLASS (klass);

  allocator_class->alloc = p3d_cuda_allocator_alloc_internal;
  allocator_class->free = p3d_cuda_allocator_free;

  GST_DEBUG_CATEGORY_INIT (p3d_cuda_memory_debug, "p3dcudamemory", 0,
      "gst-perception CUDA memory");
  GST_DEBUG_CATEGORY_GET (GST_CAT_PERFORMANCE, "GST_PERFORMANCE");
}

static void
p3d_cuda_allocator_init (P3dCudaAllocator * self)
{
  GstAllocator *allocator = GST_ALLOCATOR_CAST (self);

  allocator->mem_type = P3D_CUDA_MEMORY_TYPE_NAME;
  allocator->mem_map_full = p3d_cuda_memory_map_full;
  allocator->mem_unmap_full = p3d_cuda_memory_unmap_full;
  allocator->mem_copy = p3d_cuda_memory_copy;
  allocator->mem_share = p3d_cuda_memory_share;
  allocator->mem_is_span = p3d_cuda_memory_is_span;
  GST_OBJECT_FLAG_SET (self, GST_ALLOCATOR_FLAG_CUSTOM_ALLOC);
}

GstAllocator *
p3d_cuda_allocator_get (gint device_id, gchar ** why)
{
  GstAllocator *allocator = NULL;
  P3dcCudaStream stream = NULL;
  gint count, previous;
  P3dcResult result;

  count = p3dc_cuda_device_count ();
  if (device_id < 0 || device_id >= count || device_id >= P3D_MAX_DEVICES) {
    if (why && count == 0)
      *why = g_strdup_printf ("no CUDA device %d (none found: %s)", device_id,
          p3dc_result_string (p3dc_cuda_device_probe ()));
    else if (why)
      *why = g_strdup_printf ("no CUDA device %d (%d found, numbered from 0)",
          device_id, count);
    return NULL;
  }

  g_mutex_lock (&allocators_lock);
  if (allocators[device_id] == NULL) {
    result = p3dc_cuda_device_push (device_id, &previous);
    if (result == P3DC_OK) {
      result = p3dc_cuda_stream_create (&stream);
      p3dc_cuda_device_pop (previous);
    }
    if (result != P3DC_OK) {
      if (why)
        *why = g_strdup_printf ("cannot use CUDA device %d: %s", device_id,
            p3dc_result_string (result));
      g_mutex_unlock (&allocators_lock);
      return NULL;
    }
    allocator = g_object_new (P3D_TYPE_CUDA_ALLOCATOR, NULL);
    gst_object_ref_sink (allocator);
    P3D_CUDA_ALLOCATOR (allocator)->device_id = device_id;
    P3D_CUDA_ALLOCATOR (allocator)->copy_stream = stream;
    /* Kept for the life of the process, as the leaks tracer is told. */
    GST_OBJECT_FLAG_SET (allocator, GST_OBJECT_FLAG_MAY_BE_LEAKED);
    allocators[device_id] = allocator;
  }
  allocator = gst_object_ref (allocators[device_id]);
  g_mutex_unlock (&allocators_lock);
  return allocator;
}

GstMemory *
p3d_cuda_allocator_alloc (GstAllocator * allocator, gsize size)
{
  g_return_val_if_fail (P3D_IS_CUDA_ALLOCATOR (allocator), NULL);
  return p3d_cuda_allocator_alloc_internal (allocator, size, NULL);
}

gboolean
p3d_is_cuda_memory (GstMemory * mem)
{
  return mem != NULL && mem->allocator != NULL
      && P3D_IS_CUDA_ALLOCATOR (mem->allocator);
}

gboolean
p3d_cuda_memory_wait (GstMemory * mem, P3dcCudaStream stream)
{
  P3dCudaMemory *cmem = (P3dCudaMemory *) mem;
  gboolean ok = TRUE;
  gint previous;

  g_return_val_if_fail (p3d_is_cuda_memory (mem), FALSE);
  g_mutex_lock (&cmem->lock);
  if (cmem->event_recorded && device_enter (cmem->device_id, &previous)) {
    ok = CUDA_OK (p3dc_cuda_stream_wait_event (stream, cmem->event),
        "waiting for memory on stream");
    device_leave (previous);
  }
  g_mutex_unlock (&cmem->lock);
  return ok;
}

gboolean
p3d_cuda_memory_record (GstMemory * mem, P3dcCudaStream stream)
{
  P3dCudaMemory *cmem = (P3dCudaMemory *) mem;
  gboolean ok = FALSE;
  gint previous;

  g_return_val_if_fail (p3d_is_cuda_memory (mem), FALSE);
  g_mutex_lock (&cmem->lock);
  if (device_enter (cmem->device_id, &previous)) {
    ok = memory_record_locked (cmem, stream);
    device_leave (previous);
  }
  g_mutex_unlock (&cmem->lock);
  return ok;
}

gboolean
p3d_cuda_memory_record_from (GstMemory * mem, P3dcCudaEvent event)
{
  P3dCudaMemory *cmem = (P3dCudaMemory *) mem;
  P3dCudaAllocator *allocator;
  gboolean ok = FALSE;
  gint previous;

  g_return_val_if_fail (p3d_is_cuda_memory (mem), FALSE);
  allocator = P3D_CUDA_ALLOCATOR (mem->allocator);
  g_mutex_lock (&cmem->lock);
  /* An event can only be recorded on a stream of its own device: the copy
   * stream of the memory's device stands in for the foreign reader. */
  if (device_enter (cmem->device_id, &previous)) {
    ok = CUDA_OK (p3dc_cuda_stream_wait_event (allocator->copy_stream, event),
        "ordering after a reader on another device")
        && memory_record_locked (cmem, allocator->copy_stream);
    device_leave (previous);
  }
  g_mutex_unlock (&cmem->lock);
  return ok;
}

gboolean
p3d_cuda_memory_sync (GstMemory * mem)
{
  P3dCudaMemory *cmem = (P3dCudaMemory *) mem;
  gboolean ok = FALSE;
  gint previous;

  g_return_val_if_fail (p3d_is_cuda_memory (mem), FALSE);
  g_mutex_lock (&cmem->lock);
  if (device_enter (cmem->device_id, &previous)) {
    ok = memory_event_sync_locked (cmem);
    device_leave (previous);
  }
  g_mutex_unlock (&cmem->lock);
  return ok;
}

gboolean
p3d_cuda_memory_is_clean (GstMemory * mem)
{
  P3dCudaMemory *cmem = (P3dCudaMemory *) mem;
  gboolean clean;

  g_return_val_if_fail (p3d_is_cuda_memory (mem), FALSE);
  g_mutex_lock (&cmem->lock);
  clean = cmem->write_serial == cmem->clean_serial;
  g_mutex_unlock (&cmem->lock);
  return clean;
}

void
p3d_cuda_memory_mark_clean (GstMemory * mem)
{
  P3dCudaMemory *cmem = (P3dCudaMemory *) mem;

  g_return_if_fail (p3d_is_cuda_memory (mem));
  g_mutex_lock (&cmem->lock);
  cmem->clean_serial = cmem->write_serial;
  g_mutex_unlock (&cmem->lock);
}
