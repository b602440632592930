/* The abstract base of our GPU filters; see p3dcudafilter.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "p3dcapsfields.h"
#include "p3dcudafilter.h"
#include "p3dparamspec.h"
#include "p3dtensorpool.h"
#include "runtime.h"

GST_DEBUG_CATEGORY_STATIC (p3d_cuda_filter_debug);
#define GST_CAT_DEFAULT p3d_cuda_filter_debug
GST_DEBUG_CATEGORY_STATIC (GST_CAT_PERFORMANCE);

enum
{
  PROP_0,
  PROP_BACKEND,
  PROP_CUDA_DEVICE_ID,
  PROP_ACTIVE_BACKEND,
};

#define DEFAULT_BACKEND P3D_BACKEND_AUTO
#define DEFAULT_CUDA_DEVICE_ID -1

/* Frames whose readback records may be in flight before the element waits
 * for the oldest. */
#define READBACK_DEPTH 16

/* Scratch sets: device copies of host inputs, device outputs for host
 * output buffers. */
enum
{
  SCRATCH_IN = 0,
  SCRATCH_OUT = 1,
};

GType
p3d_backend_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {P3D_BACKEND_AUTO, "The CUDA path when a device is found at start, "
          "else the C reference path", "auto"},
    {P3D_BACKEND_CUDA, "The CUDA path; an error when no device is found",
        "cuda"},
    {P3D_BACKEND_CPU, "The C reference path", "cpu"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dBackend", values);

    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

#define p3d_cuda_filter_parent_class parent_class
G_DEFINE_ABSTRACT_TYPE_WITH_CODE (P3dCudaFilter, p3d_cuda_filter,
    GST_TYPE_BASE_TRANSFORM,
    GST_DEBUG_CATEGORY_INIT (p3d_cuda_filter_debug, "p3dcudafilter", 0,
        "gst-perception GPU filter base");
    GST_DEBUG_CATEGORY_GET (GST_CAT_PERFORMANCE, "GST_PERFORMANCE"));

static void p3d_cuda_filter_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void p3d_cuda_filter_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static gboolean p3d_cuda_filter_start (GstBaseTransform * trans);
static gboolean p3d_cuda_filter_stop (GstBaseTransform * trans);
static GstCaps *p3d_cuda_filter_transform_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, GstCaps * filter);
static gboolean p3d_cuda_filter_set_caps (GstBaseTransform * trans,
    GstCaps * incaps, GstCaps * outcaps);
static gboolean p3d_cuda_filter_propose_allocation (GstBaseTransform * trans,
    GstQuery * decide_query, GstQuery * query);
static gboolean p3d_cuda_filter_decide_allocation (GstBaseTransform * trans,
    GstQuery * query);
static GstFlowReturn p3d_cuda_filter_transform (GstBaseTransform * trans,
    GstBuffer * inbuf, GstBuffer * outbuf);
static gboolean p3d_cuda_filter_query (GstBaseTransform * trans,
    GstPadDirection direction, GstQuery * query);
static gboolean p3d_cuda_filter_sink_event (GstBaseTransform * trans,
    GstEvent * event);
static void p3d_cuda_filter_set_context (GstElement * element,
    GstContext * context);
static GstStateChangeReturn p3d_cuda_filter_change_state (GstElement *
    element, GstStateChange transition);
static void p3d_cuda_filter_finalize (GObject * object);

static void
p3d_cuda_filter_class_init (P3dCudaFilterClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);

  gobject_class->set_property = p3d_cuda_filter_set_property;
  gobject_class->get_property = p3d_cuda_filter_get_property;
  gobject_class->finalize = p3d_cuda_filter_finalize;
  element_class->set_context = GST_DEBUG_FUNCPTR (p3d_cuda_filter_set_context);
  element_class->change_state =
      GST_DEBUG_FUNCPTR (p3d_cuda_filter_change_state);

  g_object_class_install_property (gobject_class, PROP_BACKEND,
      g_param_spec_enum ("backend", "Backend",
          "Where frames are processed: auto takes the CUDA path when a device "
          "is found when the element starts and the C reference path "
          "otherwise; cuda fails to start without a device; cpu always takes "
          "the reference path", P3D_TYPE_BACKEND, DEFAULT_BACKEND,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_CUDA_DEVICE_ID,
      p3d_param_spec_int ("cuda-device-id", "CUDA device ID",
          "The CUDA device to run on; -1: the device the pipeline already "
          "uses (shared by the other elements, or the one the input is on), "
          "else device 0", -1,
          G_MAXINT32, DEFAULT_CUDA_DEVICE_ID,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_ACTIVE_BACKEND,
      g_param_spec_enum ("active-backend", "Active backend",
          "The path frames take since the element started: cuda or cpu "
          "(auto before it starts)", P3D_TYPE_BACKEND, P3D_BACKEND_AUTO,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  trans_class->start = GST_DEBUG_FUNCPTR (p3d_cuda_filter_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (p3d_cuda_filter_stop);
  trans_class->transform_caps =
      GST_DEBUG_FUNCPTR (p3d_cuda_filter_transform_caps);
  trans_class->set_caps = GST_DEBUG_FUNCPTR (p3d_cuda_filter_set_caps);
  trans_class->propose_allocation =
      GST_DEBUG_FUNCPTR (p3d_cuda_filter_propose_allocation);
  trans_class->decide_allocation =
      GST_DEBUG_FUNCPTR (p3d_cuda_filter_decide_allocation);
  trans_class->transform = GST_DEBUG_FUNCPTR (p3d_cuda_filter_transform);
  trans_class->query = GST_DEBUG_FUNCPTR (p3d_cuda_filter_query);
  trans_class->sink_event = GST_DEBUG_FUNCPTR (p3d_cuda_filter_sink_event);
  trans_class->passthrough_on_same_caps = FALSE;
  trans_class->transform_ip_on_passthrough = FALSE;

  gst_type_mark_as_plugin_api (P3D_TYPE_BACKEND, 0);
  gst_type_mark_as_plugin_api (P3D_TYPE_CUDA_FILTER, 0);
  p3d_caps_debug_init ();
}

static void
p3d_cuda_filter_init (P3dCudaFilter * self)
{
  self->backend = DEFAULT_BACKEND;
  self->requested_device_id = DEFAULT_CUDA_DEVICE_ID;
  self->device_id = -1;
  p3d_object_watch_properties (G_OBJECT (self), GST_ELEMENT (self));
}

/* Every property in range before anything starts (p3dparamspec.h), whatever
 * a subclass's start() does first. */
static GstStateChangeReturn
p3d_cuda_filter_change_state (GstElement * element, GstStateChange transition)
{
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED
      && !p3d_element_check_properties (element))
    return GST_STATE_CHANGE_FAILURE;
  return GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
}

static void
p3d_cuda_filter_finalize (GObject * object)
{
  P3dCudaFilter *self = P3D_CUDA_FILTER (object);

  gst_clear_caps (&self->incaps);
  gst_clear_caps (&self->outcaps);
  gst_clear_caps (&self->refused_incaps);
  gst_clear_caps (&self->refused_outcaps);
  if (self->context)
    gst_context_unref (self->context);
  self->context = NULL;
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
p3d_cuda_filter_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dCudaFilter *self = P3D_CUDA_FILTER (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_BACKEND:
      self->backend = g_value_get_enum (value);
      break;
    case PROP_CUDA_DEVICE_ID:
      self->requested_device_id = g_value_get_int (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
p3d_cuda_filter_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  P3dCudaFilter *self = P3D_CUDA_FILTER (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_BACKEND:
      g_value_set_enum (value, self->backend);
      break;
    case PROP_CUDA_DEVICE_ID:
      g_value_set_int (value, self->requested_device_id);
      break;
    case PROP_ACTIVE_BACKEND:
      g_value_set_enum (value, !self->started ? P3D_BACKEND_AUTO :
          self->use_cuda ? P3D_BACKEND_CUDA : P3D_BACKEND_CPU);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

gboolean
p3d_cuda_filter_check (P3dCudaFilter * self, gint result, const gchar * what)
{
  if (result == P3DC_OK)
    return TRUE;
  GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
      ("CUDA error while %s: %s", what, p3dc_result_string (result)),
      ("%s failed with %d (%s) on device %d", what, result,
          p3dc_result_string (result), self->device_id));
  return FALSE;
}

/* As p3d_cuda_filter_check(), for the results of calls whose failure does
 * not stop the element (releasing resources): logged, not posted. */
static void
log_failure (P3dCudaFilter * self, gint result, const gchar * what)
{
  if (result != P3DC_OK)
    GST_WARNING_OBJECT (self, "%s failed on device %d: %s", what,
        self->device_id, p3dc_result_string (result));
}

/* Makes the element's device current; pair with device_leave(). */
static gboolean
device_enter (P3dCudaFilter * self, gint * previous)
{
  return p3d_cuda_filter_check (self, p3dc_cuda_device_push (self->device_id,
          previous), "selecting the device");
}

static void
device_leave (P3dCudaFilter * self, gint previous)
{
  log_failure (self, p3dc_cuda_device_pop (previous), "restoring the device");
}

gboolean
p3d_cuda_filter_replace_workspace (P3dCudaFilter * self, gpointer * workspace,
    GDestroyNotify free_func, P3dCudaWorkspaceNew create, const gchar * what,
    GError ** error)
{
  P3dcResult result = P3DC_OK;

  g_return_val_if_fail (self->use_cuda, FALSE);
  if (*workspace) {
    /* queued frames may still read the old workspace */
    result = p3dc_cuda_stream_synchronize (self->stream);
    free_func (*workspace);
    *workspace = NULL;
  }
  if (result == P3DC_OK)
    result = create (self, workspace);
  if (result != P3DC_OK) {
    *workspace = NULL;
    g_set_error (error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_FAILED,
        "CUDA error while %s on device %d: %s", what, self->device_id,
        p3dc_result_string (result));
    return FALSE;
  }
  return TRUE;
}

static void
scratch_free (P3dCudaFilter * self)
{
  guint set, i;

  for (set = 0; set < 2; set++) {
    for (i = 0; i < P3D_MAX_TENSORS; i++) {
      if (self->scratch[set][i])
        log_failure (self, p3dc_cuda_free (self->scratch[set][i]),
            "freeing a work buffer");
      self->scratch[set][i] = NULL;
      self->scratch_size[set][i] = 0;
    }
  }
  self->scratch_out_clean = FALSE;
}

/* A device buffer of at least @size bytes in @set, kept between frames:
 * it is reallocated only when a larger one is needed. */
static gpointer
scratch_get (P3dCudaFilter * self, guint set, guint i, gsize size)
{
  if (size == 0)
    size = 1;
  if (self->scratch_size[set][i] >= size)
    return self->scratch[set][i];
  if (self->scratch[set][i]) {
    /* Queued work may still read it. */
    if (!p3d_cuda_filter_check (self,
            p3dc_cuda_stream_synchronize (self->stream),
            "waiting before growing a work buffer"))
      return NULL;
    log_failure (self, p3dc_cuda_free (self->scratch[set][i]),
        "freeing a work buffer");
    self->scratch[set][i] = NULL;
    self->scratch_size[set][i] = 0;
  }
  if (!p3d_cuda_filter_check (self, p3dc_cuda_malloc (&self->scratch[set][i],
              size), "allocating a work buffer"))
    return NULL;
  /* Zero-filled like pool memory, so the output scratch starts "clean". */
  if (!p3d_cuda_filter_check (self, p3dc_cuda_memset (self->scratch[set][i], 0,
              size, self->stream), "clearing a work buffer"))
    return NULL;
  self->scratch_size[set][i] = size;
  if (set == SCRATCH_OUT)
    self->scratch_out_clean = TRUE;
  return self->scratch[set][i];
}

static void
p3d_cuda_filter_set_context (GstElement * element, GstContext * context)
{
  P3dCudaFilter *self = P3D_CUDA_FILTER (element);

  p3d_cuda_handle_set_context (element, context, &self->context);
  GST_ELEMENT_CLASS (parent_class)->set_context (element, context);
}

static void
readback_free (P3dCudaFilter * self)
{
  g_clear_pointer (&self->readback, p3d_readback_free);
  g_clear_pointer (&self->readback_record, g_free);
  self->readback_taken = FALSE;
}

/* Hands the records that have arrived to the subclass, in frame order (all
 * of them, waiting, when @wait). */
static void
drain_readback (P3dCudaFilter * self, gboolean wait)
{
  P3dCudaFilterClass *klass = P3D_CUDA_FILTER_GET_CLASS (self);
  GstClockTime pts;

  if (self->readback == NULL)
    return;
  while (p3d_readback_pop (self->readback, wait, self->readback_record, &pts))
    klass->readback (self, self->readback_record, pts);
}

gpointer
p3d_cuda_filter_readback_slot (P3dCudaFilter * self)
{
  gpointer slot = NULL;

  g_return_val_if_fail (self->readback != NULL, NULL);
  drain_readback (self, FALSE);
  if (p3d_readback_is_full (self->readback))
    drain_readback (self, TRUE);
  if (!p3d_cuda_filter_check (self, p3d_readback_next_slot (self->readback,
              &slot), "taking a readback slot"))
    return NULL;
  self->readback_taken = TRUE;
  return slot;
}

static gboolean
p3d_cuda_filter_sink_event (GstBaseTransform * trans, GstEvent * event)
{
  P3dCudaFilter *self = P3D_CUDA_FILTER (trans);

  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS)
    drain_readback (self, TRUE);
  return GST_BASE_TRANSFORM_CLASS (parent_class)->sink_event (trans, event);
}

/* Takes the CUDA path on @device_id: its allocator, a stream of our own and
 * the subclass's device resources. FALSE with @why set when the device
 * cannot be used; an element error is posted for a CUDA failure after the
 * device was found. */
static gboolean
open_device (P3dCudaFilter * self, gint device_id, gchar ** why)
{
  P3dCudaFilterClass *klass = P3D_CUDA_FILTER_GET_CLASS (self);
  gint previous;
  gboolean ok;

  self->allocator = p3d_cuda_allocator_get (device_id, why);
  if (self->allocator == NULL)
    return FALSE;
  self->device_id = device_id;
  if (!device_enter (self, &previous)) {
    gst_clear_object (&self->allocator);
    self->device_id = -1;
    return FALSE;
  }
  ok = p3d_cuda_filter_check (self, p3dc_cuda_stream_create (&self->stream),
      "creating a stream")
      && p3d_cuda_filter_check (self,
      p3dc_cuda_event_create (&self->peer_event), "creating an event");
  self->use_cuda = ok;
  if (ok && klass->readback_size > 0) {
    P3dcResult result;

    self->readback = p3d_readback_new (device_id, klass->readback_size,
        READBACK_DEPTH, &result);
    self->readback_record = g_malloc (klass->readback_size);
    ok = p3d_cuda_filter_check (self, result, "allocating the readback ring");
  }
  if (ok && klass->start_device)
    ok = klass->start_device (self);
  if (!ok) {
    if (klass->stop_device && self->use_cuda)
      klass->stop_device (self);
    readback_free (self);
    if (self->peer_event)
      log_failure (self, p3dc_cuda_event_destroy (self->peer_event),
          "destroying an event");
    if (self->stream)
      log_failure (self, p3dc_cuda_stream_destroy (self->stream),
          "destroying the stream");
    self->peer_event = NULL;
    self->stream = NULL;
  }
  device_leave (self, previous);
  if (!ok) {
    self->use_cuda = FALSE;
    self->device_id = -1;
    gst_clear_object (&self->allocator);
  }
  return ok;
}

/* Waits for the stream and releases everything open_device() took. */
static void
close_device (P3dCudaFilter * self)
{
  P3dCudaFilterClass *klass = P3D_CUDA_FILTER_GET_CLASS (self);
  gint previous;

  if (self->use_cuda && device_enter (self, &previous)) {
    log_failure (self, p3dc_cuda_stream_synchronize (self->stream),
        "waiting for the stream");
    if (klass->stop_device)
      klass->stop_device (self);
    readback_free (self);
    scratch_free (self);
    log_failure (self, p3dc_cuda_event_destroy (self->peer_event),
        "destroying an event");
    log_failure (self, p3dc_cuda_stream_destroy (self->stream),
        "destroying the stream");
    device_leave (self, previous);
  }
  self->peer_event = NULL;
  self->peers_asked = 0;
  self->stream = NULL;
  self->use_cuda = FALSE;
  self->device_id = -1;
  gst_clear_object (&self->allocator);
}

static gboolean
p3d_cuda_filter_start (GstBaseTransform * trans)
{
  P3dCudaFilter *self = P3D_CUDA_FILTER (trans);
  P3dBackend backend;
  gint requested, device_id;
  gchar *why = NULL;

  GST_OBJECT_LOCK (self);
  backend = self->backend;
  requested = self->requested_device_id;
  GST_OBJECT_UNLOCK (self);

  self->use_cuda = FALSE;
  self->device_id = -1;
  if (backend == P3D_BACKEND_CPU)
    goto done;

  device_id = p3d_cuda_find_element_device (GST_ELEMENT (self), &self->context);
  if (!open_device (self, device_id, &why)) {
    if (why == NULL)
      return FALSE;             /* a CUDA failure, already posted */
    if (backend == P3D_BACKEND_CUDA) {
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("backend=cuda but CUDA device %d cannot be used: %s", device_id,
              why), ("%s", why));
      g_free (why);
      return FALSE;
    }
    /* A device named by number on a machine that has devices: falling back
     * to the reference path would hide a wrong number or a lost GPU behind
     * a pipeline that is merely slow. Without any device, auto still runs
     * everywhere. */
    if (requested >= 0 && p3dc_cuda_device_count () > 0) {
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("cuda-device-id=%d but CUDA device %d cannot be used: %s",
              requested, device_id, why), ("%s", why));
      g_free (why);
      return FALSE;
    }
    GST_INFO_OBJECT (self, "taking the C reference path: %s", why);
    g_free (why);
    goto done;
  }
  p3d_cuda_share_element_device (GST_ELEMENT (self), device_id, &self->context);
  GST_INFO_OBJECT (self, "taking the CUDA path on device %d", device_id);

done:
  GST_OBJECT_LOCK (self);
  self->started = TRUE;
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

static gboolean
p3d_cuda_filter_stop (GstBaseTransform * trans)
{
  P3dCudaFilter *self = P3D_CUDA_FILTER (trans);

  close_device (self);
  gst_clear_caps (&self->incaps);
  gst_clear_caps (&self->outcaps);
  gst_clear_caps (&self->refused_incaps);
  gst_clear_caps (&self->refused_outcaps);
  GST_OBJECT_LOCK (self);
  self->started = FALSE;
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

/* GST_DEBUG=p3dcaps:5: why a caps query on one of our pads came back
 * empty, the field and both values, where the pipeline's negotiation
 * otherwise fails with a bare "not-negotiated" further up. */
static void
log_empty_caps_query (P3dCudaFilter * self, GstPadDirection direction,
    GstQuery * query)
{
  GstBaseTransform *trans = GST_BASE_TRANSFORM (self);
  GstCaps *filter = NULL, *result = NULL, *takes;
  gchar *why;

  if (gst_debug_category_get_threshold (p3d_caps_debug) < GST_LEVEL_DEBUG)
    return;
  gst_query_parse_caps (query, &filter);
  gst_query_parse_caps_result (query, &result);
  if (filter == NULL || result == NULL || !gst_caps_is_empty (result))
    return;
  takes = gst_pad_query_caps (direction == GST_PAD_SINK ?
      GST_BASE_TRANSFORM_SINK_PAD (trans) : GST_BASE_TRANSFORM_SRC_PAD (trans),
      NULL);
  why = p3d_caps_describe_conflict (filter, takes);
  GST_CAT_DEBUG_OBJECT (p3d_caps_debug, self, "caps query on the %s pad came "
      "back empty: %s (asked for %" GST_PTR_FORMAT "; the pad takes %"
      GST_PTR_FORMAT ")", direction == GST_PAD_SINK ? "sink" : "src",
      why ? why : "no conflicting field found", filter, takes);
  g_free (why);
  gst_caps_unref (takes);
}

static gboolean
p3d_cuda_filter_query (GstBaseTransform * trans, GstPadDirection direction,
    GstQuery * query)
{
  P3dCudaFilter *self = P3D_CUDA_FILTER (trans);
  gboolean ret;

  if (p3d_cuda_handle_context_query (GST_ELEMENT (self), query, &self->context))
    return TRUE;
  ret = GST_BASE_TRANSFORM_CLASS (parent_class)->query (trans, direction,
      query);
  if (ret && GST_QUERY_TYPE (query) == GST_QUERY_CAPS)
    log_empty_caps_query (self, direction, query);
  return ret;
}

static GstCaps *
p3d_cuda_filter_transform_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, GstCaps * filter)
{
  P3dCudaFilter *self = P3D_CUDA_FILTER (trans);
  P3dCudaFilterClass *klass = P3D_CUDA_FILTER_GET_CLASS (self);
  GstCaps *media, *other, *result;
  const gchar *fallback;

  media = p3d_caps_without_features (caps);
  other = klass->transform_media_caps (self, direction, media);
  gst_caps_unref (media);
  fallback = direction == GST_PAD_SINK ? klass->src_fallback_caps :
      klass->sink_fallback_caps;
  if (fallback)
    other = gst_caps_merge (other, gst_caps_from_string (fallback));
  /* Keep frames on the device when it processes them. */
  result = p3d_caps_with_usable_memories (other, self->use_cuda);
  gst_caps_unref (other);
  if (filter) {
    GstCaps *tmp = gst_caps_intersect_full (filter, result,
        GST_CAPS_INTERSECT_FIRST);

    gst_caps_unref (result);
    result = tmp;
  }
  GST_DEBUG_OBJECT (self, "%s caps %" GST_PTR_FORMAT " -> %" GST_PTR_FORMAT,
      direction == GST_PAD_SINK ? "sink" : "src", caps, result);
  if (gst_caps_is_empty (result) && !gst_caps_is_empty (caps))
    GST_CAT_DEBUG_OBJECT (p3d_caps_debug, self, "no %s caps for %s caps %"
        GST_PTR_FORMAT "%s%" GST_PTR_FORMAT, direction == GST_PAD_SINK ?
        "src" : "sink", direction == GST_PAD_SINK ? "sink" : "src", caps,
        filter ? " within " : "", filter);
  return result;
}

/* With a src fallback, downstream may have chosen output caps that are not
 * what the element makes of @incaps: names the first field that differs,
 * both values, and the property to set when one has the field's name. */
static gboolean
check_output_caps (P3dCudaFilter * self, GstCaps * incaps, GstCaps * outcaps,
    GError ** error)
{
  P3dCudaFilterClass *klass = P3D_CUDA_FILTER_GET_CLASS (self);
  GstCaps *media_in, *media_out, *makes;
  gchar *field, *asked, *made;
  const gchar *name = GST_ELEMENT_NAME (self);
  GstElementFactory *factory;
  GParamSpec *pspec;
  gboolean ok;

  if (klass->src_fallback_caps == NULL)
    return TRUE;
  media_in = p3d_caps_without_features (incaps);
  media_out = p3d_caps_without_features (outcaps);
  makes = klass->transform_media_caps (self, GST_PAD_SINK, media_in);
  ok = gst_caps_can_intersect (media_out, makes)
      || !p3d_caps_find_conflicting_field (media_out, makes, &field, &asked,
      &made);
  gst_caps_unref (media_in);
  gst_caps_unref (media_out);
  gst_caps_unref (makes);
  if (ok)
    return TRUE;
  pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (self), field);
  /* an element made by GType (g_object_new) has no factory */
  factory = gst_element_get_factory (GST_ELEMENT (self));
  if (pspec && (pspec->flags & G_PARAM_WRITABLE))
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "Downstream asks for %s=%s, %s makes %s=%s: set %s %s=%s or let "
        "downstream take %s", field, asked, name, field, made,
        factory ? GST_OBJECT_NAME (factory) : name, field, asked, made);
  else
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "Downstream asks for %s=%s, %s makes %s=%s from its input and "
        "settings: let downstream take %s=%s", field, asked, name, field,
        made, field, made);
  g_free (field);
  g_free (asked);
  g_free (made);
  return FALSE;
}

/* A set_info that refused without a reason: the caps do not parse. Says
 * which side and, where the pad template tells, the field and both values;
 * GST_DEBUG=p3dcaps:5 has the parser's reason. */
static void
set_unparsed_error (P3dCudaFilter * self, GstCaps * incaps, GstCaps * outcaps,
    gchar * refusal, GError ** error)
{
  GstBaseTransform *trans = GST_BASE_TRANSFORM (self);
  GstCaps *sink = gst_pad_get_pad_template_caps (trans->sinkpad);
  GstCaps *src = gst_pad_get_pad_template_caps (trans->srcpad);
  gchar *in_why = p3d_caps_describe_conflict (incaps, sink);
  gchar *out_why = p3d_caps_describe_conflict (outcaps, src);

  if (in_why)
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "the input caps are not what %s takes (%s)", GST_ELEMENT_NAME (self),
        in_why);
  else if (out_why)
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "the output caps are not what %s makes (%s)",
        GST_ELEMENT_NAME (self), out_why);
  else if (refusal)
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "the caps cannot be used by %s: %s", GST_ELEMENT_NAME (self), refusal);
  else
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "the caps miss a field or hold one out of range for %s "
        "(GST_DEBUG=p3dcaps:5 says which; both caps are in the debug text)",
        GST_ELEMENT_NAME (self));
  g_free (refusal);
  g_free (in_why);
  g_free (out_why);
  gst_caps_unref (sink);
  gst_caps_unref (src);
}

/* Calls the subclass's set_info with the device current; posts its reason
 * when it refuses. */
static gboolean
call_set_info (P3dCudaFilter * self, GstCaps * incaps, GstCaps * outcaps,
    P3dTensorLayout * in_layout, P3dTensorLayout * out_layout)
{
  P3dCudaFilterClass *klass = P3D_CUDA_FILTER_GET_CLASS (self);
  GError *error = NULL;
  gboolean ok;
  gint previous;

  memset (in_layout, 0, sizeof (*in_layout));
  memset (out_layout, 0, sizeof (*out_layout));
  if (self->use_cuda && !device_enter (self, &previous))
    return FALSE;
  g_free (p3d_caps_take_refusal ());
  ok = check_output_caps (self, incaps, outcaps, &error)
      && klass->set_info (self, incaps, in_layout, outcaps, out_layout, &error);
  if (self->use_cuda)
    device_leave (self, previous);
  if (ok)
    return TRUE;

  if (error == NULL)
    set_unparsed_error (self, incaps, outcaps, p3d_caps_take_refusal (),
        &error);
  /* The base class offers the same caps again with the next buffer: one
   * message for one refusal. */
  if (self->refused_incaps && gst_caps_is_equal (self->refused_incaps, incaps)
      && self->refused_outcaps
      && gst_caps_is_equal (self->refused_outcaps, outcaps)) {
    GST_DEBUG_OBJECT (self, "the same caps again: %s", error->message);
    g_clear_error (&error);
    return FALSE;
  }
  gst_caps_replace (&self->refused_incaps, incaps);
  gst_caps_replace (&self->refused_outcaps, outcaps);
  /* the user's first clue: the field and the values, not "not-negotiated" */
  gst_element_message_full (GST_ELEMENT (self), GST_MESSAGE_ERROR,
      error->domain, error->code,
      g_strdup_printf ("Cannot use the negotiated caps: %s", error->message),
      gst_info_strdup_printf ("input %" GST_PTR_FORMAT ", output %"
          GST_PTR_FORMAT, incaps, outcaps), __FILE__, GST_FUNCTION, __LINE__);
  g_clear_error (&error);
  return FALSE;
}

static gboolean
p3d_cuda_filter_set_caps (GstBaseTransform * trans, GstCaps * incaps,
    GstCaps * outcaps)
{
  P3dCudaFilter *self = P3D_CUDA_FILTER (trans);
  P3dTensorLayout in_layout, out_layout;

  if (!call_set_info (self, incaps, outcaps, &in_layout, &out_layout))
    return FALSE;
  if (!p3d_tensor_layout_is_equal (&out_layout, &self->out_layout))
    self->scratch_out_clean = FALSE;
  self->in_layout = in_layout;
  self->out_layout = out_layout;
  self->out_cuda = p3d_caps_is_cuda (outcaps);
  gst_caps_replace (&self->incaps, incaps);
  gst_caps_replace (&self->outcaps, outcaps);
  return TRUE;
}

static gboolean
p3d_cuda_filter_propose_allocation (GstBaseTransform * trans,
    GstQuery * decide_query, GstQuery * query)
{
  P3dCudaFilter *self = P3D_CUDA_FILTER (trans);
  GstCaps *caps = NULL;

  gst_query_parse_allocation (query, &caps, NULL);
  /* Upstream may allocate our device memory for the input directly. */
  if (caps && p3d_caps_is_cuda (caps) && self->allocator)
    gst_query_add_allocation_param (query, self->allocator, NULL);
  return TRUE;
}

static gboolean
p3d_cuda_filter_decide_allocation (GstBaseTransform * trans, GstQuery * query)
{
  P3dCudaFilter *self = P3D_CUDA_FILTER (trans);
  GstCaps *caps = NULL;
  GstBufferPool *pool;
  GstAllocator *allocator = NULL;

  gst_query_parse_allocation (query, &caps, NULL);
  if (caps == NULL)
    return FALSE;

  if (p3d_caps_is_cuda (caps) && self->allocator) {
    allocator = gst_object_ref (self->allocator);
  } else if (p3d_caps_is_cuda (caps)) {
    /* backend=cpu may still write CUDA memory when downstream wants it */
    allocator = p3d_cuda_element_get_allocator (GST_ELEMENT (self),
        p3d_cuda_find_element_device (GST_ELEMENT (self), &self->context),
        &self->context);
    if (allocator == NULL)
      return FALSE;
  }
  pool = p3d_tensor_pool_decide_allocation (query, &self->out_layout,
      allocator);
  gst_clear_object (&allocator);
  if (pool == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Cannot configure the output buffer pool"),
        ("caps %" GST_PTR_FORMAT, caps));
    return FALSE;
  }
  gst_object_unref (pool);
  /* GstBaseTransform configures the pool with the query's allocator */
  return GST_BASE_TRANSFORM_CLASS (parent_class)->decide_allocation (trans,
      query);
}

/* The device all of @buffer's tensors are on, or -1 when any of them is in
 * system memory (or they are on different devices). */
static gint
buffer_device (P3dCudaFilter * self, GstBuffer * buffer)
{
  GstMemory *first;
  gint device_id;

  /* an empty frame may come without any memory */
  if (gst_buffer_n_memory (buffer) == 0)
    return -1;
  first = gst_buffer_peek_memory (buffer, 0);
  if (!p3d_is_cuda_memory (first))
    return -1;
  device_id = ((P3dCudaMemory *) first)->device_id;
  return p3d_tensor_buffer_is_on_device (buffer, &self->in_layout,
      device_id) ? device_id : -1;
}

/* cuda-device-id=-1: a frame that arrives on another device moves the
 * element there, workspaces, stream and output pool with it. */
static gboolean
follow_input_device (P3dCudaFilter * self, gint device_id)
{
  P3dTensorLayout in_layout, out_layout;
  gchar *why = NULL;

  GST_INFO_OBJECT (self, "the input is on device %d: moving from device %d",
      device_id, self->device_id);
  close_device (self);
  if (!open_device (self, device_id, &why)) {
    if (why)
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("The input is on CUDA device %d, which cannot be used: %s",
              device_id, why), ("%s", why));
    g_free (why);
    return FALSE;
  }
  p3d_cuda_share_element_device (GST_ELEMENT (self), device_id, &self->context);
  if (!call_set_info (self, self->incaps, self->outcaps, &in_layout,
          &out_layout))
    return FALSE;
  /* this frame's output buffer is still on the old device (written through
   * the host); the next ones come from a pool on the new device */
  gst_base_transform_reconfigure_src (GST_BASE_TRANSFORM (self));
  return TRUE;
}

/* Once per source device: direct access to its memory (NVLink or PCIe peer
 * to peer), without which the driver stages every copy from it through
 * host memory.  A pair that cannot is logged and copies staged. */
static gboolean
ask_peer_access (P3dCudaFilter * self, gint in_device)
{
  gint enabled = 0;

  if (in_device >= 64 || (self->peers_asked >> in_device) & 1)
    return TRUE;
  self->peers_asked |= G_GUINT64_CONSTANT (1) << in_device;
  if (!p3d_cuda_filter_check (self,
          p3dc_cuda_enable_peer_access (in_device, &enabled),
          "enabling peer access"))
    return FALSE;
  if (enabled)
    GST_INFO_OBJECT (self, "device %d reads device %d's memory directly",
        self->device_id, in_device);
  else
    GST_CAT_INFO_OBJECT (GST_CAT_PERFORMANCE, self, "devices %d and %d have "
        "no peer access: copies between them go through host memory",
        self->device_id, in_device);
  return TRUE;
}

/* Device pointers for the input tensors: the buffer's own memories when
 * they are on our device (the stream waits for their producer), device to
 * device copies of memories on another device, or uploads of host
 * tensors. */
static gboolean
map_input_on_device (P3dCudaFilter * self, GstBuffer * inbuf,
    P3dTensorMap * in, gboolean * mapped, gboolean * peer)
{
  P3dTensorMap host;
  gchar *why = NULL;
  gint in_device = buffer_device (self, inbuf);
  guint i;

  *mapped = FALSE;
  *peer = FALSE;
  if (in_device >= 0) {
    if (!p3d_tensor_map (in, inbuf, &self->in_layout,
            GST_MAP_READ | P3D_MAP_CUDA, &why))
      goto map_failed;
    *mapped = TRUE;
    for (i = 0; i < in->n_tensors; i++) {
      GstMemory *mem = gst_buffer_peek_memory (inbuf, i);

      if (!p3d_cuda_memory_wait (mem, self->stream))
        return p3d_cuda_filter_check (self, P3DC_ERROR_INVALID_ARGUMENT,
            "ordering the input after its producer");
    }
    if (in_device == self->device_id)
      return TRUE;
    /* another device: copied device to device, never through the host */
    if (!ask_peer_access (self, in_device))
      return FALSE;
    GST_CAT_LOG_OBJECT (GST_CAT_PERFORMANCE, self, "copying the input from "
        "device %d to device %d", in_device, self->device_id);
    *peer = TRUE;
    for (i = 0; i < in->n_tensors; i++) {
      gpointer device = scratch_get (self, SCRATCH_IN, i, in->size[i]);

      if (device == NULL || !p3d_cuda_filter_check (self,
              p3dc_cuda_memcpy_peer (device, self->device_id, in->data[i],
                  in_device, in->size[i], self->stream),
              "copying the input between devices"))
        return FALSE;
      in->data[i] = device;
    }
    return TRUE;
  }

  GST_CAT_LOG_OBJECT (GST_CAT_PERFORMANCE, self, "uploading the input");
  if (!p3d_tensor_map (&host, inbuf, &self->in_layout, GST_MAP_READ, &why))
    goto map_failed;
  memset (in, 0, sizeof (*in));
  in->n_tensors = host.n_tensors;
  for (i = 0; i < host.n_tensors; i++) {
    gpointer device = scratch_get (self, SCRATCH_IN, i, host.size[i]);

    /* From pageable memory the copy has left the host buffer when the
     * call returns, so the buffer can be unmapped right after. */
    if (device == NULL || !p3d_cuda_filter_check (self,
            p3dc_cuda_memcpy_htod (device, host.data[i], host.size[i],
                self->stream), "uploading the input")) {
      p3d_tensor_unmap (&host);
      return FALSE;
    }
    in->data[i] = device;
    in->size[i] = host.size[i];
  }
  p3d_tensor_unmap (&host);
  return TRUE;

map_failed:
  GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Cannot read the input tensors"),
      ("%s", why));
  g_free (why);
  return FALSE;
}

/* The input's producer may reuse it once our reads have finished. */
static gboolean
release_input (P3dCudaFilter * self, GstBuffer * inbuf, P3dTensorMap * in,
    gboolean peer)
{
  gboolean ok = TRUE;
  guint i;

  if (peer)
    ok = p3d_cuda_filter_check (self, p3dc_cuda_event_record (self->peer_event,
            self->stream), "recording the copy between devices");
  for (i = 0; i < in->n_tensors; i++) {
    GstMemory *mem = gst_buffer_peek_memory (inbuf, i);

    if (peer)
      ok = ok && p3d_cuda_memory_record_from (mem, self->peer_event);
    else
      ok = ok && p3d_cuda_memory_record (mem, self->stream);
  }
  p3d_tensor_unmap (in);
  return ok || p3d_cuda_filter_check (self, P3DC_ERROR_INVALID_ARGUMENT,
      "recording the read of the input");
}

/* The subclass's process_cuda; then the copy of the record it wrote into a
 * readback slot, queued behind its kernels. */
static GstFlowReturn
call_process_cuda (P3dCudaFilter * self, GstBuffer * inbuf,
    P3dTensorMap * in, P3dTensorMap * out, gboolean out_clean)
{
  P3dCudaFilterClass *klass = P3D_CUDA_FILTER_GET_CLASS (self);
  GstFlowReturn ret = klass->process_cuda (self, inbuf, in, out, out_clean);

  if (ret == GST_FLOW_OK && self->readback_taken
      && !p3d_cuda_filter_check (self, p3d_readback_push (self->readback,
              self->stream, GST_BUFFER_PTS (inbuf)), "reading back a record"))
    ret = GST_FLOW_ERROR;
  self->readback_taken = FALSE;
  return ret;
}

/* Writes the frame into @outbuf, CUDA memory on our device. */
static GstFlowReturn
process_into_device_buffer (P3dCudaFilter * self, GstBuffer * inbuf,
    P3dTensorMap * in, GstBuffer * outbuf)
{
  gboolean out_clean = TRUE, ordered = TRUE;
  GstFlowReturn ret;
  P3dTensorMap out;
  gchar *why = NULL;
  guint i;

  for (i = 0; i < gst_buffer_n_memory (outbuf); i++)
    out_clean = out_clean
        && p3d_cuda_memory_is_clean (gst_buffer_peek_memory (outbuf, i));
  if (!p3d_tensor_map (&out, outbuf, &self->out_layout,
          GST_MAP_WRITE | P3D_MAP_CUDA, &why)) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("Cannot map the output"),
        ("%s", why));
    g_free (why);
    return GST_FLOW_ERROR;
  }
  /* Readers of this pooled buffer's previous frame finish first. */
  for (i = 0; i < out.n_tensors && ordered; i++)
    ordered = p3d_cuda_memory_wait (gst_buffer_peek_memory (outbuf, i),
        self->stream);
  if (!ordered) {
    p3d_tensor_unmap (&out);
    p3d_cuda_filter_check (self, P3DC_ERROR_INVALID_ARGUMENT,
        "ordering the output after its readers");
    return GST_FLOW_ERROR;
  }
  ret = call_process_cuda (self, inbuf, in, &out, out_clean);
  for (i = 0; i < out.n_tensors && ordered; i++)
    ordered = p3d_cuda_memory_record (gst_buffer_peek_memory (outbuf, i),
        self->stream);
  p3d_tensor_unmap (&out);
  if (!ordered) {
    p3d_cuda_filter_check (self, P3DC_ERROR_INVALID_ARGUMENT,
        "recording the output");
    return GST_FLOW_ERROR;
  }
  if (ret == GST_FLOW_OK)
    for (i = 0; i < gst_buffer_n_memory (outbuf); i++)
      p3d_cuda_memory_mark_clean (gst_buffer_peek_memory (outbuf, i));
  return ret;
}

/* Downstream wants host memory (or the buffer is on another device):
 * compute into device work buffers, then copy down and wait, the one host
 * synchronization a GPU element makes, because its output leaves the
 * device here. */
static GstFlowReturn
process_into_host_buffer (P3dCudaFilter * self, GstBuffer * inbuf,
    P3dTensorMap * in, GstBuffer * outbuf)
{
  P3dTensorMap out, host;
  GstFlowReturn ret;
  gchar *why = NULL;
  guint i;

  memset (&out, 0, sizeof (out));
  out.n_tensors = self->out_layout.n_tensors;
  for (i = 0; i < out.n_tensors; i++) {
    out.size[i] = self->out_layout.size[i];
    out.data[i] = scratch_get (self, SCRATCH_OUT, i, out.size[i]);
    if (out.data[i] == NULL)
      return GST_FLOW_ERROR;
  }
  ret = call_process_cuda (self, inbuf, in, &out, self->scratch_out_clean);
  self->scratch_out_clean = (ret == GST_FLOW_OK);
  if (ret != GST_FLOW_OK)
    return ret;
  if (!p3d_tensor_map (&host, outbuf, &self->out_layout,
          GST_MAP_WRITE | P3D_MAP_OVERWRITE, &why)) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("Cannot map the output"),
        ("%s", why));
    g_free (why);
    return GST_FLOW_ERROR;
  }
  GST_CAT_LOG_OBJECT (GST_CAT_PERFORMANCE, self, "downloading the output");
  ret = GST_FLOW_ERROR;
  for (i = 0; i < host.n_tensors; i++) {
    if (!p3d_cuda_filter_check (self, p3dc_cuda_memcpy_dtoh (host.data[i],
                out.data[i], host.size[i], self->stream),
            "downloading the output"))
      break;
  }
  if (i == host.n_tensors && p3d_cuda_filter_check (self,
          p3dc_cuda_stream_synchronize (self->stream),
          "waiting for the output"))
    ret = GST_FLOW_OK;
  p3d_tensor_unmap (&host);
  return ret;
}

static GstFlowReturn
transform_cuda (P3dCudaFilter * self, GstBuffer * inbuf, GstBuffer * outbuf)
{
  P3dTensorMap in;
  gboolean in_mapped = FALSE, peer = FALSE;
  GstFlowReturn ret = GST_FLOW_ERROR;
  gint previous, in_device;

  in_device = buffer_device (self, inbuf);
  if (in_device >= 0 && in_device != self->device_id
      && self->requested_device_id < 0
      && !follow_input_device (self, in_device))
    return GST_FLOW_ERROR;

  if (!device_enter (self, &previous))
    return GST_FLOW_ERROR;
  if (!map_input_on_device (self, inbuf, &in, &in_mapped, &peer))
    goto done;
  if (self->out_cuda && p3d_tensor_buffer_is_on_device (outbuf,
          &self->out_layout, self->device_id))
    ret = process_into_device_buffer (self, inbuf, &in, outbuf);
  else
    ret = process_into_host_buffer (self, inbuf, &in, outbuf);

done:
  if (in_mapped && !release_input (self, inbuf, &in, peer))
    ret = GST_FLOW_ERROR;
  device_leave (self, previous);
  return ret;
}

static GstFlowReturn
transform_cpu (P3dCudaFilter * self, GstBuffer * inbuf, GstBuffer * outbuf)
{
  P3dCudaFilterClass *klass = P3D_CUDA_FILTER_GET_CLASS (self);
  P3dTensorMap in, out;
  GstFlowReturn ret;
  gchar *why = NULL;

  if (!p3d_tensor_map (&in, inbuf, &self->in_layout, GST_MAP_READ, &why)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Cannot read the input tensors"),
        ("%s", why));
    g_free (why);
    return GST_FLOW_ERROR;
  }
  if (!p3d_tensor_map (&out, outbuf, &self->out_layout,
          GST_MAP_WRITE | P3D_MAP_OVERWRITE, &why)) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("Cannot map the output"),
        ("%s", why));
    g_free (why);
    p3d_tensor_unmap (&in);
    return GST_FLOW_ERROR;
  }
  ret = klass->process_cpu (self, inbuf, &in, &out);
  p3d_tensor_unmap (&out);
  p3d_tensor_unmap (&in);
  return ret;
}

static GstFlowReturn
p3d_cuda_filter_transform (GstBaseTransform * trans, GstBuffer * inbuf,
    GstBuffer * outbuf)
{
  P3dCudaFilter *self = P3D_CUDA_FILTER (trans);
  P3dCudaFilterClass *klass = P3D_CUDA_FILTER_GET_CLASS (self);
  gchar *why = NULL;

  if (!p3d_tensor_layout_check_buffer (&self->in_layout, inbuf, &why)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Input buffer does not match its caps%s%s", klass->bad_input_hint ?
            ": " : "", klass->bad_input_hint ? klass->bad_input_hint : ""),
        ("%s", why));
    g_free (why);
    return GST_FLOW_ERROR;
  }
  if (self->use_cuda)
    return transform_cuda (self, inbuf, outbuf);
  return transform_cpu (self, inbuf, outbuf);
}

void
p3d_cuda_filter_class_add_pad_templates (P3dCudaFilterClass * klass,
    GstCaps * sink_caps, GstCaps * src_caps)
{
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstCaps *caps;

  caps = p3d_caps_with_both_memories (sink_caps, FALSE);
  gst_element_class_add_pad_template (element_class,
      gst_pad_template_new ("sink", GST_PAD_SINK, GST_PAD_ALWAYS, caps));
  gst_caps_unref (caps);
  caps = p3d_caps_with_both_memories (src_caps, FALSE);
  gst_element_class_add_pad_template (element_class,
      gst_pad_template_new ("src", GST_PAD_SRC, GST_PAD_ALWAYS, caps));
  gst_caps_unref (caps);
}
