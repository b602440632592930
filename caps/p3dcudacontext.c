/* One CUDA device for the elements of a pipeline; see p3dcudacontext.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "p3dcudacontext.h"
#include "p3dcudamemory.h"

GST_DEBUG_CATEGORY_STATIC (p3d_cuda_context_debug);
#define GST_CAT_DEFAULT p3d_cuda_context_debug

static void
debug_init (void)
{
  static gsize done = 0;

  if (g_once_init_enter (&done)) {
    GST_DEBUG_CATEGORY_INIT (p3d_cuda_context_debug, "p3dcudacontext", 0,
        "gst-perception CUDA device sharing");
    g_once_init_leave (&done, 1);
  }
}

GstContext *
p3d_cuda_device_context_new (gint device_id)
{
  GstContext *context = gst_context_new (P3D_CUDA_DEVICE_CONTEXT_TYPE, TRUE);

  gst_structure_set (gst_context_writable_structure (context), "device-id",
      G_TYPE_INT, device_id, NULL);
  return context;
}

gint
p3d_cuda_device_context_get_device_id (GstContext * context)
{
  const GstStructure *s;
  gint device_id;

  if (context == NULL
      || g_strcmp0 (gst_context_get_context_type (context),
          P3D_CUDA_DEVICE_CONTEXT_TYPE) != 0)
    return -1;
  s = gst_context_get_structure (context);
  if (!gst_structure_get_int (s, "device-id", &device_id) || device_id < 0)
    return -1;
  return device_id;
}

/* @element's cuda-device-id. */
static gint
requested_device (GstElement * element)
{
  gint device_id = -1;

  g_object_get (element, "cuda-device-id", &device_id, NULL);
  return device_id;
}

/* The device of the context @element holds, or -1. */
static gint
held_device (GstElement * element, GstContext ** held)
{
  gint device_id;

  GST_OBJECT_LOCK (element);
  device_id = p3d_cuda_device_context_get_device_id (*held);
  GST_OBJECT_UNLOCK (element);
  return device_id;
}

/* Replaces the context @element holds by @context (a new reference is
 * taken; NULL drops it); with the object lock held. */
static void
hold (GstContext ** held, GstContext * context)
{
  if (context)
    gst_context_ref (context);
  if (*held)
    gst_context_unref (*held);
  *held = context;
}

gboolean
p3d_cuda_handle_set_context (GstElement * element, GstContext * context,
    GstContext ** held)
{
  gint device_id = p3d_cuda_device_context_get_device_id (context);
  gint requested_device_id;

  debug_init ();
  if (device_id < 0)
    return FALSE;
  /* an element given a device by number keeps it */
  requested_device_id = requested_device (element);
  if (requested_device_id >= 0 && requested_device_id != device_id)
    return FALSE;
  GST_OBJECT_LOCK (element);
  hold (held, context);
  GST_OBJECT_UNLOCK (element);
  GST_DEBUG_OBJECT (element, "shared CUDA device %d", device_id);
  return TRUE;
}

typedef struct
{
  GstQuery *query;
  gint device_id;
} NeighbourQuery;

static gboolean
query_pad (GstElement * element, GstPad * pad, gpointer user_data)
{
  NeighbourQuery *q = user_data;
  GstContext *context = NULL;

  if (!gst_pad_peer_query (pad, q->query))
    return TRUE;
  gst_query_parse_context (q->query, &context);
  q->device_id = p3d_cuda_device_context_get_device_id (context);
  /* the first answer wins */
  return q->device_id < 0;
}

/* The context a neighbour answers, on the src pads first, then on the
 * sink pads, kept in *@held; its device or -1. */
static gint
query_neighbours (GstElement * element, GstContext ** held)
{
  NeighbourQuery q = { NULL, -1 };
  GstContext *context = NULL;

  q.query = gst_query_new_context (P3D_CUDA_DEVICE_CONTEXT_TYPE);
  gst_element_foreach_src_pad (element, query_pad, &q);
  if (q.device_id < 0)
    gst_element_foreach_sink_pad (element, query_pad, &q);
  if (q.device_id >= 0) {
    /* through the element's own set_context, as a bin would set it */
    gst_query_parse_context (q.query, &context);
    gst_element_set_context (element, context);
  }
  gst_query_unref (q.query);
  return q.device_id < 0 ? -1 : held_device (element, held);
}

gint
p3d_cuda_find_element_device (GstElement * element, GstContext ** held)
{
  gint requested_device_id = requested_device (element);
  gint device_id;

  debug_init ();
  if (requested_device_id >= 0) {
    GST_OBJECT_LOCK (element);
    /* a context for another device than the one asked for is not ours */
    if (p3d_cuda_device_context_get_device_id (*held) != requested_device_id)
      hold (held, NULL);
    GST_OBJECT_UNLOCK (element);
    return requested_device_id;
  }
  device_id = held_device (element, held);
  if (device_id < 0)
    device_id = query_neighbours (element, held);
  if (device_id < 0) {
    /* a bin or the application that holds the context answers with
     * set_context(), before the message returns */
    gst_element_post_message (element,
        gst_message_new_need_context (GST_OBJECT (element),
            P3D_CUDA_DEVICE_CONTEXT_TYPE));
    device_id = held_device (element, held);
  }
  if (device_id < 0) {
    GST_DEBUG_OBJECT (element, "no CUDA device shared: device 0");
    return 0;
  }
  GST_DEBUG_OBJECT (element, "the pipeline's CUDA device is %d", device_id);
  return device_id;
}

void
p3d_cuda_share_element_device (GstElement * element, gint device_id,
    GstContext ** held)
{
  GstContext *context;

  GST_OBJECT_LOCK (element);
  if (p3d_cuda_device_context_get_device_id (*held) == device_id) {
    GST_OBJECT_UNLOCK (element);
    return;
  }
  context = p3d_cuda_device_context_new (device_id);
  hold (held, context);
  GST_OBJECT_UNLOCK (element);
  gst_element_post_message (element,
      gst_message_new_have_context (GST_OBJECT (element), context));
}

GstAllocator *
p3d_cuda_element_get_allocator (GstElement * element, gint device_id,
    GstContext ** held)
{
  gchar *why = NULL;
  GstAllocator *allocator = p3d_cuda_allocator_get (device_id, &why);

  if (allocator == NULL) {
    GST_ELEMENT_ERROR (element, RESOURCE, NOT_FOUND,
        ("Cannot output memory:CUDAMemory on CUDA device %d: %s", device_id,
            why), ("%s", why));
    g_free (why);
    return NULL;
  }
  p3d_cuda_share_element_device (element, device_id, held);
  return allocator;
}

gboolean
p3d_cuda_handle_context_query (GstElement * element, GstQuery * query,
    GstContext ** held)
{
  const gchar *type = NULL;
  GstContext *context = NULL;
  gint requested_device_id;

  if (GST_QUERY_TYPE (query) != GST_QUERY_CONTEXT
      || !gst_query_parse_context_type (query, &type)
      || g_strcmp0 (type, P3D_CUDA_DEVICE_CONTEXT_TYPE) != 0)
    return FALSE;
  GST_OBJECT_LOCK (element);
  if (*held)
    context = gst_context_ref (*held);
  GST_OBJECT_UNLOCK (element);
  requested_device_id = requested_device (element);
  if (context == NULL && requested_device_id >= 0)
    context = p3d_cuda_device_context_new (requested_device_id);
  if (context == NULL)
    return FALSE;
  gst_query_set_context (query, context);
  gst_context_unref (context);
  return TRUE;
}
