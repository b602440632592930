/* The abstract base of our GPU filters; see p3dcudafilter.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "p3dcudafilter.h"
#include "p3dpointcloud.h"
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

static void
p3d_cuda_filter_class_init (P3dCudaFilterClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);

  gobject_class->set_property = p3d_cuda_filter_set_property;
  gobject_class->get_property = p3d_cuda_filter_get_property;

  g_object_class_install_property (gobject_class, PROP_BACKEND,
      g_param_spec_enum ("backend", "Backend",
          "Where frames are processed: auto takes the CUDA path when a device "
          "is found when the element starts and the C reference path "
          "otherwise; cuda fails to start without a device; cpu always takes "
          "the reference path", P3D_TYPE_BACKEND, DEFAULT_BACKEND,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_CUDA_DEVICE_ID,
      g_param_spec_int ("cuda-device-id", "CUDA device ID",
          "The CUDA device to run on (-1: device 0, the default device)", -1,
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
  trans_class->passthrough_on_same_caps = FALSE;
  trans_class->transform_ip_on_passthrough = FALSE;

  gst_type_mark_as_plugin_api (P3D_TYPE_BACKEND, 0);
  gst_type_mark_as_plugin_api (P3D_TYPE_CUDA_FILTER, 0);
}

static void
p3d_cuda_filter_init (P3dCudaFilter * self)
{
  self->backend = DEFAULT_BACKEND;
  self->requested_device_id = DEFAULT_CUDA_DEVICE_ID;
  self->device_id = -1;
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
  if (result == P3D_OK)
    return TRUE;
  GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
      ("CUDA error while %s: %s", what, p3d_result_string (result)),
      ("%s failed with %d (%s) on device %d", what, result,
          p3d_result_string (result), self->device_id));
  return FALSE;
}

static void
scratch_free (P3dCudaFilter * self)
{
  guint set, i;

  for (set = 0; set < 2; set++) {
    for (i = 0; i < P3D_MAX_TENSORS; i++) {
      if (self->scratch[set][i])
        p3d_cuda_free (self->scratch[set][i]);
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
            p3d_cuda_stream_synchronize (self->stream),
            "waiting before growing a work buffer"))
      return NULL;
    p3d_cuda_free (self->scratch[set][i]);
    self->scratch[set][i] = NULL;
    self->scratch_size[set][i] = 0;
  }
  if (!p3d_cuda_filter_check (self, p3d_cuda_malloc (&self->scratch[set][i],
              size), "allocating a work buffer"))
    return NULL;
  /* Zero-filled like pool memory, so the output scratch starts "clean". */
  if (!p3d_cuda_filter_check (self, p3d_cuda_memset (self->scratch[set][i], 0,
              size, self->stream), "clearing a work buffer"))
    return NULL;
  self->scratch_size[set][i] = size;
  if (set == SCRATCH_OUT)
    self->scratch_out_clean = TRUE;
  return self->scratch[set][i];
}

static gboolean
p3d_cuda_filter_start (GstBaseTransform * trans)
{
  P3dCudaFilter *self = P3D_CUDA_FILTER (trans);
  P3dCudaFilterClass *klass = P3D_CUDA_FILTER_GET_CLASS (self);
  P3dBackend backend;
  gint device_id, previous;
  gchar *why = NULL;
  gboolean ok = TRUE;

  GST_OBJECT_LOCK (self);
  backend = self->backend;
  device_id = self->requested_device_id < 0 ? 0 : self->requested_device_id;
  GST_OBJECT_UNLOCK (self);

  self->use_cuda = FALSE;
  self->device_id = -1;
  if (backend == P3D_BACKEND_CPU)
    goto done;

  self->allocator = p3d_cuda_allocator_get (device_id, &why);
  if (self->allocator == NULL) {
    if (backend == P3D_BACKEND_CUDA) {
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("backend=cuda but CUDA device %d cannot be used", device_id),
          ("%s", why));
      g_free (why);
      return FALSE;
    }
    GST_INFO_OBJECT (self, "taking the C reference path: %s", why);
    g_free (why);
    goto done;
  }

  if (!p3d_cuda_filter_check (self, p3d_cuda_device_push (device_id,
              &previous), "selecting the device"))
    return FALSE;
  self->device_id = device_id;
  ok = p3d_cuda_filter_check (self, p3d_cuda_stream_create (&self->stream),
      "creating a stream");
  if (ok && klass->start_device)
    ok = klass->start_device (self);
  p3d_cuda_device_pop (previous);
  if (!ok) {
    if (self->stream)
      p3d_cuda_stream_destroy (self->stream);
    self->stream = NULL;
    self->device_id = -1;
    gst_clear_object (&self->allocator);
    return FALSE;
  }
  self->use_cuda = TRUE;
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
  P3dCudaFilterClass *klass = P3D_CUDA_FILTER_GET_CLASS (self);
  gint previous;

  if (self->use_cuda
      && p3d_cuda_device_push (self->device_id, &previous) == P3D_OK) {
    p3d_cuda_stream_synchronize (self->stream);
    if (klass->stop_device)
      klass->stop_device (self);
    scratch_free (self);
    p3d_cuda_stream_destroy (self->stream);
    p3d_cuda_device_pop (previous);
  }
  self->stream = NULL;
  self->use_cuda = FALSE;
  self->device_id = -1;
  gst_clear_object (&self->allocator);
  GST_OBJECT_LOCK (self);
  self->started = FALSE;
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

static GstCaps *
p3d_cuda_filter_transform_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, GstCaps * filter)
{
  P3dCudaFilter *self = P3D_CUDA_FILTER (trans);
  P3dCudaFilterClass *klass = P3D_CUDA_FILTER_GET_CLASS (self);
  GstCaps *media, *other, *result;

  media = p3d_caps_without_features (caps);
  other = klass->transform_media_caps (self, direction, media);
  gst_caps_unref (media);
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
  return result;
}

static gboolean
p3d_cuda_filter_set_caps (GstBaseTransform * trans, GstCaps * incaps,
    GstCaps * outcaps)
{
  P3dCudaFilter *self = P3D_CUDA_FILTER (trans);
  P3dCudaFilterClass *klass = P3D_CUDA_FILTER_GET_CLASS (self);
  P3dTensorLayout in_layout, out_layout;

  memset (&in_layout, 0, sizeof (in_layout));
  memset (&out_layout, 0, sizeof (out_layout));
  if (!klass->set_info (self, incaps, &in_layout, outcaps, &out_layout)) {
    GST_WARNING_OBJECT (self, "refused caps %" GST_PTR_FORMAT " -> %"
        GST_PTR_FORMAT, incaps, outcaps);
    return FALSE;
  }
  if (!p3d_tensor_layout_is_equal (&out_layout, &self->out_layout))
    self->scratch_out_clean = FALSE;
  self->in_layout = in_layout;
  self->out_layout = out_layout;
  self->out_cuda = p3d_caps_is_cuda (outcaps);
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
  gchar *why = NULL;

  gst_query_parse_allocation (query, &caps, NULL);
  if (caps == NULL)
    return FALSE;

  /* Our tensors need a multi-memory pool of ours; downstream pools hold
   * single memories, so they are replaced. */
  if (p3d_caps_is_cuda (caps)) {
    /* backend=cpu may still write CUDA memory when downstream wants it. */
    allocator = self->allocator ? gst_object_ref (self->allocator) :
        p3d_cuda_allocator_get (self->requested_device_id < 0 ? 0 :
        self->requested_device_id, &why);
    if (allocator == NULL) {
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("Downstream wants CUDA memory but no CUDA device is usable"),
          ("%s", why));
      g_free (why);
      return FALSE;
    }
  }
  pool = p3d_tensor_pool_new ();
  {
    GstStructure *config = gst_buffer_pool_get_config (pool);

    gst_buffer_pool_config_set_params (config, caps, 0, 2, 0);
    if (allocator)
      gst_buffer_pool_config_set_allocator (config, allocator, NULL);
    p3d_tensor_pool_config_set_layout (config, &self->out_layout);
    if (!gst_buffer_pool_set_config (pool, config)) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("Cannot configure the output buffer pool"),
          ("caps %" GST_PTR_FORMAT, caps));
      gst_object_unref (pool);
      gst_clear_object (&allocator);
      return FALSE;
    }
  }
  while (gst_query_get_n_allocation_pools (query) > 0)
    gst_query_remove_nth_allocation_pool (query, 0);
  gst_query_add_allocation_pool (query, pool,
      (guint) MIN (p3d_tensor_layout_get_total_size (&self->out_layout),
          G_MAXUINT32), 2, 0);
  while (gst_query_get_n_allocation_params (query) > 0)
    gst_query_remove_nth_allocation_param (query, 0);
  if (allocator)
    gst_query_add_allocation_param (query, allocator, NULL);
  gst_object_unref (pool);
  gst_clear_object (&allocator);
  return TRUE;
}

/* Device pointers for the input tensors: the buffer's own memories when
 * they are on our device (the stream waits for their producer), or device
 * copies of the host tensors. */
static gboolean
map_input_on_device (P3dCudaFilter * self, GstBuffer * inbuf,
    P3dTensorMap * in, gboolean * mapped)
{
  P3dTensorMap host;
  gchar *why = NULL;
  guint i;

  *mapped = FALSE;
  if (p3d_tensor_buffer_is_on_device (inbuf, &self->in_layout, self->device_id)) {
    if (!p3d_tensor_map (in, inbuf, &self->in_layout,
            GST_MAP_READ | P3D_MAP_CUDA, &why))
      goto map_failed;
    *mapped = TRUE;
    for (i = 0; i < in->n_tensors; i++)
      if (!p3d_cuda_memory_wait (gst_buffer_peek_memory (inbuf, i),
              self->stream))
        return p3d_cuda_filter_check (self, P3D_ERROR_INVALID_ARGUMENT,
            "ordering the input after its producer");
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
            p3d_cuda_memcpy_htod (device, host.data[i], host.size[i],
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

static GstFlowReturn
transform_cuda (P3dCudaFilter * self, GstBuffer * inbuf, GstBuffer * outbuf)
{
  P3dCudaFilterClass *klass = P3D_CUDA_FILTER_GET_CLASS (self);
  P3dTensorMap in, out, host;
  gboolean in_mapped = FALSE, out_clean = TRUE;
  GstFlowReturn ret = GST_FLOW_ERROR;
  gchar *why = NULL;
  gint previous;
  guint i;

  memset (&out, 0, sizeof (out));
  if (!p3d_cuda_filter_check (self, p3d_cuda_device_push (self->device_id,
              &previous), "selecting the device"))
    return GST_FLOW_ERROR;
  if (!map_input_on_device (self, inbuf, &in, &in_mapped))
    goto done;

  if (self->out_cuda && p3d_tensor_buffer_is_on_device (outbuf,
          &self->out_layout, self->device_id)) {
    for (i = 0; i < gst_buffer_n_memory (outbuf); i++)
      out_clean = out_clean
          && p3d_cuda_memory_is_clean (gst_buffer_peek_memory (outbuf, i));
    if (!p3d_tensor_map (&out, outbuf, &self->out_layout,
            GST_MAP_WRITE | P3D_MAP_CUDA, &why)) {
      GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("Cannot map the output"),
          ("%s", why));
      g_free (why);
      goto done;
    }
    /* Readers of this pooled buffer's previous frame finish first. */
    for (i = 0; i < out.n_tensors; i++)
      p3d_cuda_memory_wait (gst_buffer_peek_memory (outbuf, i), self->stream);
    ret = klass->process_cuda (self, inbuf, &in, &out, out_clean);
    for (i = 0; i < out.n_tensors; i++) {
      GstMemory *mem = gst_buffer_peek_memory (outbuf, i);

      p3d_cuda_memory_record (mem, self->stream);
    }
    p3d_tensor_unmap (&out);
    for (i = 0; i < gst_buffer_n_memory (outbuf); i++) {
      GstMemory *mem = gst_buffer_peek_memory (outbuf, i);

      if (ret == GST_FLOW_OK)
        p3d_cuda_memory_mark_clean (mem);
    }
  } else {
    /* Downstream wants host memory: compute into device work buffers,
     * then copy down and wait, the one host synchronization a GPU element
     * makes, because its output leaves the device here. */
    out.n_tensors = self->out_layout.n_tensors;
    for (i = 0; i < out.n_tensors; i++) {
      out.size[i] = self->out_layout.size[i];
      out.data[i] = scratch_get (self, SCRATCH_OUT, i, out.size[i]);
      if (out.data[i] == NULL)
        goto done;
    }
    ret = klass->process_cuda (self, inbuf, &in, &out, self->scratch_out_clean);
    self->scratch_out_clean = (ret == GST_FLOW_OK);
    if (ret != GST_FLOW_OK)
      goto done;
    ret = GST_FLOW_ERROR;
    if (!p3d_tensor_map (&host, outbuf, &self->out_layout,
            GST_MAP_WRITE | P3D_MAP_OVERWRITE, &why)) {
      GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("Cannot map the output"),
          ("%s", why));
      g_free (why);
      goto done;
    }
    GST_CAT_LOG_OBJECT (GST_CAT_PERFORMANCE, self, "downloading the output");
    for (i = 0; i < host.n_tensors; i++) {
      if (!p3d_cuda_filter_check (self, p3d_cuda_memcpy_dtoh (host.data[i],
                  out.data[i], host.size[i], self->stream),
              "downloading the output"))
        break;
    }
    if (i == host.n_tensors && p3d_cuda_filter_check (self,
            p3d_cuda_stream_synchronize (self->stream),
            "waiting for the output"))
      ret = GST_FLOW_OK;
    p3d_tensor_unmap (&host);
  }

done:
  if (in_mapped) {
    /* The producer may reuse the input once our kernels have read it. */
    for (i = 0; i < in.n_tensors; i++)
      p3d_cuda_memory_record (gst_buffer_peek_memory (inbuf, i), self->stream);
    p3d_tensor_unmap (&in);
  }
  p3d_cuda_device_pop (previous);
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
  gchar *why = NULL;

  if (!p3d_tensor_layout_check_buffer (&self->in_layout, inbuf, &why)) {
    GstCaps *caps = gst_pad_get_current_caps (GST_BASE_TRANSFORM_SINK_PAD
        (self));
    /* the usual cause: a raw sweep file read with caps alone, cut into
     * the source's blocks or read with another record layout */
    gboolean points = caps != NULL && gst_structure_has_name
        (gst_caps_get_structure (caps, 0), P3D_MEDIA_TYPE_POINT_CLOUD);

    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Input buffer does not match its caps%s", points ? ": read raw "
            "sweep files with pointcloudparse (filesrc location=sweep.bin ! "
            "pointcloudparse preset=kitti or preset=nuscenes), which makes "
            "one sweep of each file whatever its record layout" : ""),
        ("%s", why));
    gst_clear_caps (&caps);
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
