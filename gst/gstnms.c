/**
 * SECTION:element-nms
 * @title: nms
 *
 * Non-maximum suppression of a detector's boxes: boxes are sorted by score,
 * best first (ties keep their input order), and a box is kept unless a kept
 * box overlaps it by more than the threshold, as torchvision, mmcv and
 * OpenPCDet do. Modes: iou (axis-aligned application/x-boxes2d, with the
 * optional +1 pixel "offset" of Faster R-CNN), bev-rotated (exact overlap
 * of rotated rectangles in the ground plane, or with iou-rule=mmcv the
 * overlap of mmcv's nms3d, which counts corners up to 1 cm outside the
 * other box), bev-aligned (yaw ignored) and
 * circle (centre distance below distance-threshold, as CenterPoint; note
 * that CenterPoint passes its radius squared); the bev and circle modes take
 * application/x-boxes3d. Boxes scoring below score-threshold are dropped
 * first, then the best pre-max are kept (0: all), then suppression, then
 * at most post-max boxes are output (0: all); per-class suppresses only
 * between boxes of the same label. Thresholds can change while playing.
 *
 * The output has the input's caps: the kept boxes, best score first, then
 * zeros; 3D boxes with a velocity (caps velocity=true) keep it with them.
 * Records with a NaN or infinite field, or a negative size, are
 * dropped. A count tensor larger than max-boxes is read as max-boxes (the
 * reference path posts a warning the first time; the CUDA path clamps on
 * the device, where the count stays); on GPUs with less shared memory a
 * block than Hopper's the CUDA path takes fewer than 65536 boxes a frame
 * (23,536 on sm_86 and sm_89; more is refused with an error that
 * gives the number). "mode" decides the media type, so it
 * can change only in the NULL and READY states; a change while PAUSED or
 * PLAYING is refused with a warning. On the CUDA path the sort, the
 * overlap mask and the greedy
 * reduction all run on the device and the kept count stays there; the kept
 * boxes are exactly the reference path's.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 pointcloudtestsrc emit=candidates num-buffers=10 \
 *   ! nms mode=bev-rotated iou-threshold=0.01 ! boxenc ! fakesink
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstnms.h"

GST_DEBUG_CATEGORY_STATIC (p3d_nms_debug);
#define GST_CAT_DEFAULT p3d_nms_debug

enum
{
  PROP_0,
  PROP_MODE,
  PROP_IOU_THRESHOLD,
  PROP_DISTANCE_THRESHOLD,
  PROP_OFFSET,
  PROP_SCORE_THRESHOLD,
  PROP_PRE_MAX,
  PROP_POST_MAX,
  PROP_PER_CLASS,
  PROP_IOU_RULE,
};

#define DEFAULT_MODE P3DC_NMS_BEV_ROTATED
#define DEFAULT_IOU_THRESHOLD 0.5f
#define DEFAULT_DISTANCE_THRESHOLD 2.0f
#define DEFAULT_OFFSET 0
#define DEFAULT_SCORE_THRESHOLD (-G_MAXFLOAT)
#define DEFAULT_PRE_MAX 0
#define DEFAULT_POST_MAX 0
#define DEFAULT_PER_CLASS FALSE
#define DEFAULT_IOU_RULE P3DC_NMS_IOU_RULE_EXACT

#define P3D_TYPE_NMS_MODE (p3d_nms_mode_get_type ())
static GType
p3d_nms_mode_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {P3DC_NMS_IOU, "Axis-aligned IoU of 2D boxes (application/x-boxes2d)",
        "iou"},
    {P3DC_NMS_BEV_ROTATED, "Exact IoU of rotated boxes in the ground plane "
          "(application/x-boxes3d)", "bev-rotated"},
    {P3DC_NMS_BEV_ALIGNED, "IoU in the ground plane with yaw ignored "
          "(application/x-boxes3d)", "bev-aligned"},
    {P3DC_NMS_CIRCLE, "Centre distance in the ground plane, as CenterPoint "
          "(application/x-boxes3d)", "circle"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dNmsMode", values);

    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

#define P3D_TYPE_NMS_IOU_RULE (p3d_nms_iou_rule_get_type ())
static GType
p3d_nms_iou_rule_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {P3DC_NMS_IOU_RULE_EXACT, "The exact intersection of the two rectangles",
        "exact"},
    {P3DC_NMS_IOU_RULE_MMCV, "mmcv's nms3d / boxes_iou3d rule: corners up to "
          "1 cm outside the other box count as inside it", "mmcv"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dNmsIouRule", values);

    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

#define p3d_nms_parent_class parent_class
G_DEFINE_TYPE (P3dNms, p3d_nms, P3D_TYPE_CUDA_FILTER);
GST_ELEMENT_REGISTER_DEFINE (nms, "nms", GST_RANK_NONE, P3D_TYPE_NMS);

static void p3d_nms_finalize (GObject * object);
static void p3d_nms_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void p3d_nms_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static GstCaps *p3d_nms_transform_media_caps (P3dCudaFilter * filter,
    GstPadDirection direction, GstCaps * caps);
static gboolean p3d_nms_set_info (P3dCudaFilter * filter,
    GstCaps * incaps, P3dTensorLayout * in_layout, GstCaps * outcaps,
    P3dTensorLayout * out_layout, GError ** error);
static void p3d_nms_stop_device (P3dCudaFilter * filter);
static GstFlowReturn p3d_nms_process_cpu (P3dCudaFilter * filter,
    GstBuffer * inbuf, P3dTensorMap * in, P3dTensorMap * out);
static GstFlowReturn p3d_nms_process_cuda (P3dCudaFilter * filter,
    GstBuffer * inbuf, P3dTensorMap * in, P3dTensorMap * out,
    gboolean out_clean);

#define PLAYING_FLAGS (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | \
    GST_PARAM_MUTABLE_PLAYING)

static void
p3d_nms_class_init (P3dNmsClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  P3dCudaFilterClass *filter_class = P3D_CUDA_FILTER_CLASS (klass);
  GstCaps *caps;

  gobject_class->finalize = p3d_nms_finalize;
  gobject_class->set_property = p3d_nms_set_property;
  gobject_class->get_property = p3d_nms_get_property;

  g_object_class_install_property (gobject_class, PROP_MODE,
      g_param_spec_enum ("mode", "Mode",
          "How two boxes overlap; iou takes 2D boxes, the others 3D boxes "
          "(decides the media type, so it cannot change while PAUSED or "
          "PLAYING)",
          P3D_TYPE_NMS_MODE, DEFAULT_MODE, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_IOU_THRESHOLD,
      p3d_param_spec_float ("iou-threshold", "IoU threshold",
          "iou and bev modes: a box overlapping a kept box by an IoU greater "
          "than this is suppressed (OpenPCDet uses 0.01 for KITTI "
          "PointPillars, torchvision examples 0.5)", 0.0f, 1.0f,
          DEFAULT_IOU_THRESHOLD, PLAYING_FLAGS));
  g_object_class_install_property (gobject_class, PROP_DISTANCE_THRESHOLD,
      p3d_param_spec_float ("distance-threshold", "Distance threshold",
          "circle mode: a box whose centre lies closer than this many metres "
          "to a kept box's centre is suppressed (CenterPoint's min_radius is "
          "this value squared)", 0.0f, G_MAXFLOAT, DEFAULT_DISTANCE_THRESHOLD,
          PLAYING_FLAGS));
  g_object_class_install_property (gobject_class, PROP_OFFSET,
      p3d_param_spec_uint ("offset", "Offset",
          "iou mode: 1 counts a box from x1 to x2 as x2 - x1 + 1 pixels wide "
          "(Faster R-CNN), 0 as x2 - x1", 0, 1, DEFAULT_OFFSET, PLAYING_FLAGS));
  g_object_class_install_property (gobject_class, PROP_SCORE_THRESHOLD,
      p3d_param_spec_float ("score-threshold", "Score threshold",
          "Boxes scoring below this are dropped before suppression (the "
          "default keeps every finite score, logits included)",
          -G_MAXFLOAT, G_MAXFLOAT, DEFAULT_SCORE_THRESHOLD, PLAYING_FLAGS));
  g_object_class_install_property (gobject_class, PROP_PRE_MAX,
      p3d_param_spec_uint ("pre-max", "Pre max",
          "Keep only this many best-scoring boxes before suppression "
          "(0: all)", 0, G_MAXUINT32, DEFAULT_PRE_MAX, PLAYING_FLAGS));
  g_object_class_install_property (gobject_class, PROP_POST_MAX,
      p3d_param_spec_uint ("post-max", "Post max",
          "Output at most this many boxes (0: all)", 0, G_MAXUINT32,
          DEFAULT_POST_MAX, PLAYING_FLAGS));
  g_object_class_install_property (gobject_class, PROP_PER_CLASS,
      g_param_spec_boolean ("per-class", "Per class",
          "Suppress only between boxes of the same label", DEFAULT_PER_CLASS,
          PLAYING_FLAGS));
  g_object_class_install_property (gobject_class, PROP_IOU_RULE,
      g_param_spec_enum ("iou-rule", "IoU rule",
          "bev-rotated mode: exact computes the exact overlap of the two "
          "rectangles; mmcv reproduces mmcv's nms3d (and OpenPCDet's), which "
          "keeps different boxes near the threshold: choose it for a model "
          "trained and evaluated with mmcv. The other modes ignore it",
          P3D_TYPE_NMS_IOU_RULE, DEFAULT_IOU_RULE, PLAYING_FLAGS));

  gst_element_class_set_static_metadata (element_class,
      "Non-maximum suppression", "Filter/Analyzer/Boxes",
      "Axis-aligned, rotated-BEV and circle NMS of detector boxes, on CUDA "
      "or on the CPU", "gst-perception developers");

  caps = gst_caps_from_string (P3D_MEDIA_TYPE_BOXES3D "; "
      P3D_MEDIA_TYPE_BOXES2D);
  p3d_cuda_filter_class_add_pad_templates (filter_class, caps, caps);
  gst_caps_unref (caps);

  filter_class->transform_media_caps =
      GST_DEBUG_FUNCPTR (p3d_nms_transform_media_caps);
  /* the mode's box type first; the other one reaches set_info, which names
   * the mode */
  filter_class->sink_fallback_caps = P3D_MEDIA_TYPE_BOXES3D "; "
      P3D_MEDIA_TYPE_BOXES2D;
  filter_class->src_fallback_caps = P3D_MEDIA_TYPE_BOXES3D "; "
      P3D_MEDIA_TYPE_BOXES2D;
  filter_class->set_info = GST_DEBUG_FUNCPTR (p3d_nms_set_info);
  filter_class->stop_device = GST_DEBUG_FUNCPTR (p3d_nms_stop_device);
  filter_class->process_cpu = GST_DEBUG_FUNCPTR (p3d_nms_process_cpu);
  filter_class->process_cuda = GST_DEBUG_FUNCPTR (p3d_nms_process_cuda);

  gst_type_mark_as_plugin_api (P3D_TYPE_NMS_MODE, 0);
  gst_type_mark_as_plugin_api (P3D_TYPE_NMS_IOU_RULE, 0);
  GST_DEBUG_CATEGORY_INIT (p3d_nms_debug, "nms", 0, "Non-maximum suppression");
}

static void
p3d_nms_init (P3dNms * self)
{
  p3dc_nms_params_init (&self->params);
  self->params.mode = DEFAULT_MODE;
  self->params.iou_threshold = DEFAULT_IOU_THRESHOLD;
  self->params.distance_threshold = DEFAULT_DISTANCE_THRESHOLD;
  self->params.offset = DEFAULT_OFFSET;
  self->params.score_threshold = DEFAULT_SCORE_THRESHOLD;
  self->params.pre_max = DEFAULT_PRE_MAX;
  self->params.post_max = DEFAULT_POST_MAX;
  self->params.per_class = DEFAULT_PER_CLASS;
  self->params.iou_rule = DEFAULT_IOU_RULE;
}

static void
p3d_nms_finalize (GObject * object)
{
  P3dNms *self = P3D_NMS (object);

  g_free (self->kept_index);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
p3d_nms_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dNms *self = P3D_NMS (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODE:
      /* the mode decides the media type, fixed once the caps are set
       * (GST_STATE is read under the object lock, held here) */
      if (GST_STATE (self) > GST_STATE_READY) {
        GST_WARNING_OBJECT (self, "mode can change only in the NULL and "
            "READY states: keeping the current mode");
        break;
      }
      self->params.mode = g_value_get_enum (value);
      break;
    case PROP_IOU_THRESHOLD:
      self->params.iou_threshold = g_value_get_float (value);
      break;
    case PROP_DISTANCE_THRESHOLD:
      self->params.distance_threshold = g_value_get_float (value);
      break;
    case PROP_OFFSET:
      self->params.offset = (gfloat) g_value_get_uint (value);
      break;
    case PROP_SCORE_THRESHOLD:
      self->params.score_threshold = g_value_get_float (value);
      break;
    case PROP_PRE_MAX:
      self->params.pre_max = g_value_get_uint (value);
      break;
    case PROP_POST_MAX:
      self->params.post_max = g_value_get_uint (value);
      break;
    case PROP_PER_CLASS:
      self->params.per_class = g_value_get_boolean (value);
      break;
    case PROP_IOU_RULE:
      self->params.iou_rule = g_value_get_enum (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
p3d_nms_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  P3dNms *self = P3D_NMS (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODE:
      g_value_set_enum (value, self->params.mode);
      break;
    case PROP_IOU_THRESHOLD:
      g_value_set_float (value, self->params.iou_threshold);
      break;
    case PROP_DISTANCE_THRESHOLD:
      g_value_set_float (value, self->params.distance_threshold);
      break;
    case PROP_OFFSET:
      g_value_set_uint (value, (guint) self->params.offset);
      break;
    case PROP_SCORE_THRESHOLD:
      g_value_set_float (value, self->params.score_threshold);
      break;
    case PROP_PRE_MAX:
      g_value_set_uint (value, self->params.pre_max);
      break;
    case PROP_POST_MAX:
      g_value_set_uint (value, self->params.post_max);
      break;
    case PROP_PER_CLASS:
      g_value_set_boolean (value, self->params.per_class);
      break;
    case PROP_IOU_RULE:
      g_value_set_enum (value, self->params.iou_rule);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static const gchar *
media_type_for_mode (P3dcNmsMode mode)
{
  return mode == P3DC_NMS_IOU ? P3D_MEDIA_TYPE_BOXES2D : P3D_MEDIA_TYPE_BOXES3D;
}

static GstCaps *
p3d_nms_transform_media_caps (P3dCudaFilter * filter,
    GstPadDirection direction, GstCaps * caps)
{
  P3dNms *self = P3D_NMS (filter);
  GstCaps *result = gst_caps_new_empty ();
  const gchar *media_type;
  guint i;

  GST_OBJECT_LOCK (self);
  media_type = media_type_for_mode (self->params.mode);
  GST_OBJECT_UNLOCK (self);
  /* Same caps on both sides, of the box type the mode works on. */
  for (i = 0; i < gst_caps_get_size (caps); i++) {
    const GstStructure *s = gst_caps_get_structure (caps, i);

    if (gst_structure_has_name (s, media_type))
      result = gst_caps_merge_structure (result, gst_structure_copy (s));
  }
  return result;
}

/* Whether this GPU's nms takes @max_boxes boxes a frame: on GPUs with less
 * shared memory a block than Hopper's it takes fewer than
 * P3DC_NMS_MAX_CAPACITY (p3dc_nms_device_capacity). */
static gboolean
device_takes (guint max_boxes, GError ** error)
{
  guint32 most = 0;
  gint result = p3dc_nms_device_capacity (&most);

  if (result != P3DC_OK) {
    g_set_error (error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_FAILED,
        "Could not query the GPU's shared memory for nms: %s",
        p3dc_result_string (result));
    return FALSE;
  }
  if (max_boxes > most) {
    g_set_error (error, GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_SETTINGS,
        "max-boxes %u is more than nms's CUDA path takes on this GPU (at "
        "most %u boxes per frame: a block's shared memory holds the keep "
        "reduction's state for no more); ask for fewer boxes upstream, or "
        "set backend=cpu", max_boxes, most);
    return FALSE;
  }
  return TRUE;
}

static gint
nms_workspace_new (P3dCudaFilter * filter, gpointer * workspace)
{
  return p3dc_nms_new (P3D_NMS (filter)->max_boxes, (P3dcNms **) workspace);
}

static gint
kept_index_new (P3dCudaFilter * filter, gpointer * workspace)
{
  return p3dc_cuda_malloc (workspace,
      sizeof (gint32) * P3D_NMS (filter)->max_boxes);
}

static void
kept_index_free (gpointer kept_index)
{
  p3dc_cuda_free (kept_index);
}

/* The mode decides the box type of both pads: names the mode and the boxes
 * that came. */
static gboolean
box_types_fit_mode (P3dcNmsMode mode, GstCaps * incaps, GstCaps * outcaps,
    GError ** error)
{
  const gchar *wanted = media_type_for_mode (mode);
  const gchar *in = gst_structure_get_name (gst_caps_get_structure (incaps,
          0));
  const gchar *out = gst_structure_get_name (gst_caps_get_structure (outcaps,
          0));
  GEnumValue *value = g_enum_get_value (g_type_class_peek
      (P3D_TYPE_NMS_MODE), mode);

  if (g_str_equal (in, wanted) && g_str_equal (out, wanted))
    return TRUE;
  g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
      "mode=%s works on %s, but %s %s: set nms mode=%s", value ?
      value->value_nick : "?", wanted, g_str_equal (in, wanted) ?
      "downstream takes" : "the input is", g_str_equal (in, wanted) ? out :
      in, mode == P3DC_NMS_IOU ? "bev-rotated (or bev-aligned, circle) for "
      "3D boxes" : "iou for 2D boxes");
  return FALSE;
}

static gboolean
p3d_nms_set_info (P3dCudaFilter * filter, GstCaps * incaps,
    P3dTensorLayout * in_layout, GstCaps * outcaps,
    P3dTensorLayout * out_layout, GError ** error)
{
  P3dNms *self = P3D_NMS (filter);
  P3dcNmsMode mode;
  guint max_boxes;
  gboolean velocity = FALSE;

  GST_OBJECT_LOCK (self);
  mode = self->params.mode;
  GST_OBJECT_UNLOCK (self);
  if (!box_types_fit_mode (mode, incaps, outcaps, error))
    return FALSE;
  if (mode == P3DC_NMS_IOU) {
    P3dBoxes2dInfo info;

    if (!p3d_boxes2d_info_from_caps (&info, incaps))
      return FALSE;
    max_boxes = info.max_boxes;
    p3d_boxes2d_info_get_layout (&info, in_layout);
  } else {
    P3dBoxes3dInfo info;

    if (!p3d_boxes3d_info_from_caps (&info, incaps))
      return FALSE;
    max_boxes = info.max_boxes;
    velocity = info.velocity;
    p3d_boxes3d_info_get_layout (&info, in_layout);
  }
  if (max_boxes > P3DC_NMS_MAX_CAPACITY) {
    g_set_error (error, GST_STREAM_ERROR, GST_STREAM_ERROR_FORMAT,
        "max-boxes %u is more than nms supports (at most %u boxes per frame)",
        max_boxes, P3DC_NMS_MAX_CAPACITY);
    return FALSE;
  }
  *out_layout = *in_layout;

  /* The workspace's capacity is what the device clamps the input count to,
   * so it must be max-boxes exactly, never more. */
  self->max_boxes = max_boxes;
  if (filter->use_cuda && !device_takes (max_boxes, error))
    return FALSE;
  if (filter->use_cuda && (self->nms == NULL
          || p3dc_nms_get_capacity (self->nms) != max_boxes)) {
    if (!p3d_cuda_filter_replace_workspace (filter, (gpointer *) & self->nms,
            (GDestroyNotify) p3dc_nms_free, nms_workspace_new,
            "allocating the NMS workspace", error))
      return FALSE;
    g_clear_pointer (&self->kept_index_device, kept_index_free);
  }
  if (filter->use_cuda && velocity && self->kept_index_device == NULL
      && !p3d_cuda_filter_replace_workspace (filter,
          (gpointer *) & self->kept_index_device, kept_index_free,
          kept_index_new, "allocating the NMS workspace", error))
    return FALSE;
  g_clear_pointer (&self->kept_index, g_free);
  if (!filter->use_cuda && velocity) {
    self->kept_index = g_try_new (gint32, max_boxes);
    if (self->kept_index == NULL) {
      g_set_error (error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NO_SPACE_LEFT,
          "Not enough memory for the indices of %u boxes", max_boxes);
      return FALSE;
    }
  }
  self->velocity = velocity;
  self->mode = mode;
  self->warned_count = FALSE;
  return TRUE;
}

static void
p3d_nms_stop_device (P3dCudaFilter * filter)
{
  P3dNms *self = P3D_NMS (filter);

  p3dc_nms_free (self->nms);
  self->nms = NULL;
  g_clear_pointer (&self->kept_index_device, kept_index_free);
}

/* This frame's parameters: thresholds and the IoU rule may change while
 * playing, the mode only with the caps. */
static void
read_params (P3dNms * self, P3dcNmsParams * params)
{
  GST_OBJECT_LOCK (self);
  *params = self->params;
  GST_OBJECT_UNLOCK (self);
  params->mode = self->mode;
}

static GstFlowReturn
p3d_nms_process_cpu (P3dCudaFilter * filter, GstBuffer * inbuf,
    P3dTensorMap * in, P3dTensorMap * out)
{
  P3dNms *self = P3D_NMS (filter);
  P3dcNmsParams params;
  guint32 n_boxes, kept = 0;
  P3dcResult result;

  read_params (self, &params);
  memcpy (&n_boxes, in->data[P3D_BOXES_TENSOR_COUNT], sizeof (n_boxes));
  if (n_boxes > self->max_boxes) {
    /* a corrupt count: the records tensor holds max-boxes at most */
    if (!self->warned_count)
      GST_ELEMENT_WARNING (self, STREAM, FORMAT,
          ("Box count %u is more than max-boxes %u: only %u boxes are read",
              n_boxes, self->max_boxes, self->max_boxes),
          ("posted once per stream; later frames are clamped silently"));
    self->warned_count = TRUE;
    n_boxes = self->max_boxes;
  }
  result = p3dc_nms_cpu (&params, in->data[P3D_BOXES_TENSOR_RECORDS], n_boxes,
      out->data[P3D_BOXES_TENSOR_RECORDS], self->max_boxes, &kept,
      self->velocity ? self->kept_index : NULL);
  if (result == P3DC_OK && self->velocity)
    result = p3dc_nms_gather_cpu (self->kept_index, self->max_boxes,
        in->data[P3D_BOXES_TENSOR_VELOCITY], 2,
        out->data[P3D_BOXES_TENSOR_VELOCITY]);
  if (result != P3DC_OK) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS, ("NMS failed"),
        ("%s", p3dc_result_string (result)));
    return GST_FLOW_ERROR;
  }
  memcpy (out->data[P3D_BOXES_TENSOR_COUNT], &kept, sizeof (kept));
  return GST_FLOW_OK;
}

static GstFlowReturn
p3d_nms_process_cuda (P3dCudaFilter * filter, GstBuffer * inbuf,
    P3dTensorMap * in, P3dTensorMap * out, gboolean out_clean)
{
  P3dNms *self = P3D_NMS (filter);
  P3dcNmsParams params;

  read_params (self, &params);
  if (!p3d_cuda_filter_check (filter, p3dc_nms_cuda (self->nms, &params,
              in->data[P3D_BOXES_TENSOR_RECORDS],
              in->data[P3D_BOXES_TENSOR_COUNT],
              out->data[P3D_BOXES_TENSOR_RECORDS], self->max_boxes,
              out->data[P3D_BOXES_TENSOR_COUNT],
              self->velocity ? self->kept_index_device : NULL,
              filter->stream), "suppressing boxes"))
    return GST_FLOW_ERROR;
  /* each kept box's velocity, behind the suppression on the stream */
  if (self->velocity && !p3d_cuda_filter_check (filter,
          p3dc_nms_gather_cuda (self->kept_index_device, self->max_boxes,
              in->data[P3D_BOXES_TENSOR_VELOCITY], 2,
              out->data[P3D_BOXES_TENSOR_VELOCITY], filter->stream),
          "carrying the velocities"))
    return GST_FLOW_ERROR;
  return GST_FLOW_OK;
}
