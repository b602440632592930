/* Device-to-host readback ring; see p3dreadback.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "p3dreadback.h"

typedef struct
{
  P3dcCudaEvent event;
  GstClockTime pts;
} Slot;

struct _P3dReadback
{
  gint device_id;
  gsize record_size;
  guint depth;
  guint8 *device;               /* depth records */
  guint8 *host;                 /* depth records, page-locked */
  Slot *slots;
  guint head;                   /* oldest queued */
  guint queued;
  gboolean slot_taken;
};

P3dReadback *
p3d_readback_new (gint device_id, gsize record_size, guint depth,
    P3dcResult * result)
{
  P3dReadback *readback;
  gint previous;
  guint i;

  *result = p3dc_cuda_device_push (device_id, &previous);
  if (*result != P3DC_OK)
    return NULL;
  readback = g_new0 (P3dReadback, 1);
  readback->device_id = device_id;
  readback->record_size = record_size;
  readback->depth = depth;
  readback->slots = g_new0 (Slot, depth);
  *result = p3dc_cuda_malloc ((void **) &readback->device, record_size * depth);
  if (*result == P3DC_OK)
    *result = p3dc_cuda_host_alloc ((void **) &readback->host,
        record_size * depth);
  for (i = 0; i < depth && *result == P3DC_OK; i++)
    *result = p3dc_cuda_event_create (&readback->slots[i].event);
  p3dc_cuda_device_pop (previous);
  if (*result != P3DC_OK) {
    p3d_readback_free (readback);
    return NULL;
  }
  return readback;
}

void
p3d_readback_free (P3dReadback * readback)
{
  gint previous;
  guint i;

  if (readback == NULL)
    return;
  /* without its device, the ring's CUDA resources cannot be released */
  if (p3dc_cuda_device_push (readback->device_id, &previous) != P3DC_OK)
    goto out;
  for (i = 0; i < readback->depth; i++) {
    if (readback->slots[i].event) {
      p3dc_cuda_event_synchronize (readback->slots[i].event);
      p3dc_cuda_event_destroy (readback->slots[i].event);
    }
  }
  if (readback->host)
    p3dc_cuda_host_free (readback->host);
  if (readback->device)
    p3dc_cuda_free (readback->device);
  p3dc_cuda_device_pop (previous);
out:
  g_free (readback->slots);
  g_free (readback);
}

P3dcResult
p3d_readback_next_slot (P3dReadback * readback, gpointer * slot)
{
  guint index;

  if (readback->queued == readback->depth)
    return P3DC_ERROR_NOT_READY;
  index = (readback->head + readback->queued) % readback->depth;
  *slot = readback->device + index * readback->record_size;
  readback->slot_taken = TRUE;
  return P3DC_OK;
}

P3dcResult
p3d_readback_push (P3dReadback * readback, P3dcCudaStream stream,
    GstClockTime pts)
{
  guint index = (readback->head + readback->queued) % readback->depth;
  gsize offset = index * readback->record_size;
  P3dcResult result;

  g_return_val_if_fail (readback->slot_taken, P3DC_ERROR_INVALID_ARGUMENT);
  readback->slot_taken = FALSE;
  result = p3dc_cuda_memcpy_dtoh (readback->host + offset,
      readback->device + offset, readback->record_size, stream);
  if (result == P3DC_OK)
    result = p3dc_cuda_event_record (readback->slots[index].event, stream);
  if (result != P3DC_OK)
    return result;
  readback->slots[index].pts = pts;
  readback->queued++;
  return P3DC_OK;
}

gboolean
p3d_readback_pop (P3dReadback * readback, gboolean wait, gpointer record,
    GstClockTime * pts)
{
  Slot *slot;
  P3dcResult result;
  gint previous;

  if (readback->queued == 0)
    return FALSE;
  slot = &readback->slots[readback->head];
  if (p3dc_cuda_device_push (readback->device_id, &previous) != P3DC_OK)
    return FALSE;
  result = wait ? p3dc_cuda_event_synchronize (slot->event) :
      p3dc_cuda_event_query (slot->event);
  p3dc_cuda_device_pop (previous);
  if (result != P3DC_OK)
    return FALSE;
  memcpy (record, readback->host + readback->head * readback->record_size,
      readback->record_size);
  *pts = slot->pts;
  readback->head = (readback->head + 1) % readback->depth;
  readback->queued--;
  return TRUE;
}

gboolean
p3d_readback_is_full (P3dReadback * readback)
{
  return readback->queued == readback->depth;
}
