/**
 * SECTION:element-bevpool
 * @title: bevpool
 *
 * Camera-to-BEV pooling as BEVFusion's LSS view transform: every feature
 * pixel of every camera, at every depth bin of "dbound", is taken back
 * through that camera's inverse image augmentation, inverse intrinsics and
 * camera-to-lidar transform (from the "calibration" file) into the BEV
 * grid of "xbound", "ybound" and "zbound"; each BEV cell receives the sum
 * of feature x depth probability over the frustum points that fall in it,
 * zero where none do. Several z cells are stacked along the channels, as
 * BEVFusion does. The cell index truncates (p - lower) / step toward zero
 * as LSS, BEVFusion and BEVDet do, so points up to one step below a lower
 * bound land in the first cell; cell-rounding=floor drops them instead.
 *
 * The geometry (frustum to cell, sorted by cell) is computed when the caps,
 * the grid or the calibration change, on the GPU when the element runs
 * there; a new "calibration" file set while playing takes effect at the
 * next frame. Every frame only the pooling runs: float32 accumulation in a
 * fixed order (deterministic, the CUDA path equal to the reference), F32 or
 * F16 output as negotiated. The output layout is [C][ny][nx] (layout=yx)
 * or the [C][nx][ny] of BEVFusion's bev_pool (layout=xy).
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 multifilesrc location=features/%04d.raw \
 *     caps="application/x-camera-features,format=F16,cameras=6,channels=80,depth-bins=118,width=88,height=32" \
 *   ! bevpool calibration=nuscenes.json layout=xy ! filesink location=bev.raw
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstbevpool.h"
#include "p3dproperties.h"

GST_DEBUG_CATEGORY_STATIC (p3d_bev_pool_debug);
#define GST_CAT_DEFAULT p3d_bev_pool_debug

enum
{
  PROP_0,
  PROP_CALIBRATION,
  PROP_IMAGE_WIDTH,
  PROP_IMAGE_HEIGHT,
  PROP_XBOUND,
  PROP_YBOUND,
  PROP_ZBOUND,
  PROP_DBOUND,
  PROP_CELL_ROUNDING,
  PROP_LAYOUT,
  PROP_GEOMETRY_UPDATES,
};

/* BEVFusion's nuScenes configuration (DepthLSSTransform). */
#define DEFAULT_IMAGE_WIDTH 704
#define DEFAULT_IMAGE_HEIGHT 256
static const gdouble default_xbound[3] = { -54.0, 54.0, 0.3 };
static const gdouble default_ybound[3] = { -54.0, 54.0, 0.3 };
static const gdouble default_zbound[3] = { -10.0, 10.0, 20.0 };
static const gdouble default_dbound[3] = { 1.0, 60.0, 0.5 };

/* Grids past these are refused at start (docs/elements/bevpool.md): 2^22
 * output cells (BEVFusion's 360 x 360 x 1 is 129 600) and 1024 depth bins
 * (BEVFusion 118). */
#define P3D_BEV_POOL_MAX_CELLS (1u << 22)
#define P3D_BEV_POOL_MAX_DEPTH_BINS 1024

#define DEFAULT_CELL_ROUNDING P3DC_BEV_ROUND_TRUNCATE
#define DEFAULT_LAYOUT P3DC_BEV_LAYOUT_YX

#define P3D_TYPE_BEV_POOL_ROUNDING (p3d_bev_pool_rounding_get_type ())
static GType
p3d_bev_pool_rounding_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {P3DC_BEV_ROUND_TRUNCATE, "Truncate (p - lower) / step toward zero, as "
          "LSS, BEVFusion and BEVDet: points up to one step below a lower "
          "bound land in the first cell", "truncate"},
    {P3DC_BEV_ROUND_FLOOR, "Floor: points below a lower bound are dropped",
        "floor"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dBevPoolRounding", values);

    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

#define P3D_TYPE_BEV_POOL_LAYOUT (p3d_bev_pool_layout_get_type ())
static GType
p3d_bev_pool_layout_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {P3DC_BEV_LAYOUT_YX, "[C][ny][nx]: rows along y", "yx"},
    {P3DC_BEV_LAYOUT_XY, "[C][nx][ny]: rows along x, the order of "
          "BEVFusion's bev_pool and CUDA-BEVFusion", "xy"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dBevPoolLayout", values);

    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

#define p3d_bev_pool_parent_class parent_class
G_DEFINE_TYPE (P3dBevPool, p3d_bev_pool, P3D_TYPE_CUDA_FILTER);
GST_ELEMENT_REGISTER_DEFINE (bevpool, "bevpool", GST_RANK_NONE,
    P3D_TYPE_BEV_POOL);

static void p3d_bev_pool_finalize (GObject * object);
static void p3d_bev_pool_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void p3d_bev_pool_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static gboolean p3d_bev_pool_start (GstBaseTransform * trans);
static gboolean p3d_bev_pool_stop (GstBaseTransform * trans);
static GstCaps *p3d_bev_pool_transform_media_caps (P3dCudaFilter * filter,
    GstPadDirection direction, GstCaps * caps);
static gboolean p3d_bev_pool_set_info (P3dCudaFilter * filter,
    GstCaps * incaps, P3dTensorLayout * in_layout, GstCaps * outcaps,
    P3dTensorLayout * out_layout, GError ** error);
static void p3d_bev_pool_stop_device (P3dCudaFilter * filter);
static GstFlowReturn p3d_bev_pool_process_cpu (P3dCudaFilter * filter,
    GstBuffer * inbuf, P3dTensorMap * in, P3dTensorMap * out);
static GstFlowReturn p3d_bev_pool_process_cuda (P3dCudaFilter * filter,
    GstBuffer * inbuf, P3dTensorMap * in, P3dTensorMap * out,
    gboolean out_clean);

static void
p3d_bev_pool_class_init (P3dBevPoolClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  P3dCudaFilterClass *filter_class = P3D_CUDA_FILTER_CLASS (klass);
  GstCaps *sink_caps, *src_caps;

  gobject_class->finalize = p3d_bev_pool_finalize;
  gobject_class->set_property = p3d_bev_pool_set_property;
  gobject_class->get_property = p3d_bev_pool_get_property;

  g_object_class_install_property (gobject_class, PROP_CALIBRATION,
      g_param_spec_string ("calibration", "Calibration",
          "JSON file with each camera's intrinsics, camera-to-lidar and "
          "image-augmentation matrices (docs/calibration.md); a new file set "
          "while playing is loaded at the next frame and the geometry "
          "recomputed", NULL, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_IMAGE_WIDTH,
      p3d_param_spec_uint ("image-width", "Image width",
          "Width in pixels of the network's input image, after augmentation "
          "(BEVFusion nuScenes: 704)", 1, 65536, DEFAULT_IMAGE_WIDTH,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_IMAGE_HEIGHT,
      p3d_param_spec_uint ("image-height", "Image height",
          "Height in pixels of the network's input image, after augmentation "
          "(BEVFusion nuScenes: 256)", 1, 65536, DEFAULT_IMAGE_HEIGHT,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_XBOUND,
      p3d_param_spec_double_array ("xbound", "X bound",
          "BEV grid along x in metres: \"<min,max,step>\"", -G_MAXDOUBLE,
          G_MAXDOUBLE));
  g_object_class_install_property (gobject_class, PROP_YBOUND,
      p3d_param_spec_double_array ("ybound", "Y bound",
          "BEV grid along y in metres: \"<min,max,step>\"", -G_MAXDOUBLE,
          G_MAXDOUBLE));
  g_object_class_install_property (gobject_class, PROP_ZBOUND,
      p3d_param_spec_double_array ("zbound", "Z bound",
          "Height cells in metres: \"<min,max,step>\" (BEVFusion: one 20 m "
          "cell); several cells are stacked along the channels",
          -G_MAXDOUBLE, G_MAXDOUBLE));
  g_object_class_install_property (gobject_class, PROP_DBOUND,
      p3d_param_spec_double_array ("dbound", "Depth bound",
          "Depth bins in metres: \"<min,max,step>\", bin d at min + d * step "
          "(BEVFusion nuScenes: <1,60,0.5>, 118 bins); the input's depth-bins "
          "must match", -G_MAXDOUBLE, G_MAXDOUBLE));
  g_object_class_install_property (gobject_class, PROP_CELL_ROUNDING,
      g_param_spec_enum ("cell-rounding", "Cell rounding",
          "How a point's coordinate becomes a cell index",
          P3D_TYPE_BEV_POOL_ROUNDING, DEFAULT_CELL_ROUNDING,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_LAYOUT,
      g_param_spec_enum ("layout", "Layout",
          "Order of the two grid axes in the output tensor",
          P3D_TYPE_BEV_POOL_LAYOUT, DEFAULT_LAYOUT,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_GEOMETRY_UPDATES,
      g_param_spec_uint64 ("geometry-updates", "Geometry updates",
          "How many times the geometry was computed since the element "
          "started (caps, grid or calibration changes)", 0, G_MAXUINT64, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_set_static_metadata (element_class,
      "BEV pooling", "Filter/Converter/Camera",
      "Camera features and depth to bird's-eye-view features, as BEVFusion, "
      "on CUDA or on the CPU", "gst-perception developers");

  sink_caps = gst_caps_from_string (P3D_CAMERA_FEATURES_CAPS_ALL);
  src_caps = gst_caps_from_string (P3D_BEV_FEATURES_CAPS_ALL);
  p3d_cuda_filter_class_add_pad_templates (filter_class, sink_caps, src_caps);
  gst_caps_unref (sink_caps);
  gst_caps_unref (src_caps);

  trans_class->start = GST_DEBUG_FUNCPTR (p3d_bev_pool_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (p3d_bev_pool_stop);
  filter_class->transform_media_caps =
      GST_DEBUG_FUNCPTR (p3d_bev_pool_transform_media_caps);
  filter_class->set_info = GST_DEBUG_FUNCPTR (p3d_bev_pool_set_info);
  filter_class->stop_device = GST_DEBUG_FUNCPTR (p3d_bev_pool_stop_device);
  filter_class->process_cpu = GST_DEBUG_FUNCPTR (p3d_bev_pool_process_cpu);
  filter_class->process_cuda = GST_DEBUG_FUNCPTR (p3d_bev_pool_process_cuda);

  gst_type_mark_as_plugin_api (P3D_TYPE_BEV_POOL_ROUNDING, 0);
  gst_type_mark_as_plugin_api (P3D_TYPE_BEV_POOL_LAYOUT, 0);
  GST_DEBUG_CATEGORY_INIT (p3d_bev_pool_debug, "bevpool", 0,
      "Camera to BEV pooling");
}

static void
p3d_bev_pool_init (P3dBevPool * self)
{
  self->image_width = DEFAULT_IMAGE_WIDTH;
  self->image_height = DEFAULT_IMAGE_HEIGHT;
  memcpy (self->xbound, default_xbound, sizeof (self->xbound));
  memcpy (self->ybound, default_ybound, sizeof (self->ybound));
  memcpy (self->zbound, default_zbound, sizeof (self->zbound));
  memcpy (self->dbound, default_dbound, sizeof (self->dbound));
  self->rounding = DEFAULT_CELL_ROUNDING;
  self->layout = DEFAULT_LAYOUT;
}

static void
p3d_bev_pool_finalize (GObject * object)
{
  P3dBevPool *self = P3D_BEV_POOL (object);

  g_free (self->calibration_path);
  p3d_calibration_free (self->calibration);
  p3dc_bevpool_geometry_free (self->geometry);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
p3d_bev_pool_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dBevPool *self = P3D_BEV_POOL (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_CALIBRATION:
      g_free (self->calibration_path);
      self->calibration_path = g_value_dup_string (value);
      self->calibration_changed = TRUE;
      break;
    case PROP_IMAGE_WIDTH:
      self->image_width = g_value_get_uint (value);
      break;
    case PROP_IMAGE_HEIGHT:
      self->image_height = g_value_get_uint (value);
      break;
    case PROP_XBOUND:
      p3d_value_get_doubles (object, value, "xbound", self->xbound, 3);
      break;
    case PROP_YBOUND:
      p3d_value_get_doubles (object, value, "ybound", self->ybound, 3);
      break;
    case PROP_ZBOUND:
      p3d_value_get_doubles (object, value, "zbound", self->zbound, 3);
      break;
    case PROP_DBOUND:
      p3d_value_get_doubles (object, value, "dbound", self->dbound, 3);
      break;
    case PROP_CELL_ROUNDING:
      self->rounding = g_value_get_enum (value);
      break;
    case PROP_LAYOUT:
      self->layout = g_value_get_enum (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
p3d_bev_pool_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  P3dBevPool *self = P3D_BEV_POOL (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_CALIBRATION:
      g_value_set_string (value, self->calibration_path);
      break;
    case PROP_IMAGE_WIDTH:
      g_value_set_uint (value, self->image_width);
      break;
    case PROP_IMAGE_HEIGHT:
      g_value_set_uint (value, self->image_height);
      break;
    case PROP_XBOUND:
      p3d_value_set_doubles (value, self->xbound, 3);
      break;
    case PROP_YBOUND:
      p3d_value_set_doubles (value, self->ybound, 3);
      break;
    case PROP_ZBOUND:
      p3d_value_set_doubles (value, self->zbound, 3);
      break;
    case PROP_DBOUND:
      p3d_value_set_doubles (value, self->dbound, 3);
      break;
    case PROP_CELL_ROUNDING:
      g_value_set_enum (value, self->rounding);
      break;
    case PROP_LAYOUT:
      g_value_set_enum (value, self->layout);
      break;
    case PROP_GEOMETRY_UPDATES:
      g_value_set_uint64 (value, self->geometry_updates);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* The grid the properties give, with placeholder sizes for the parts the
 * caps decide; FALSE and @result when the properties are invalid. */
static gboolean
grid_from_properties (P3dBevPool * self, P3dcBevPoolParams * params,
    P3dcResult * result)
{
  memset (params, 0, sizeof (*params));
  GST_OBJECT_LOCK (self);
  params->cameras = self->calibration_cameras ? self->calibration_cameras : 1;
  params->channels = 1;
  params->image_width = self->image_width;
  params->image_height = self->image_height;
  params->feat_width = 1;
  params->feat_height = 1;
  memcpy (params->xbound, self->xbound, sizeof (params->xbound));
  memcpy (params->ybound, self->ybound, sizeof (params->ybound));
  memcpy (params->zbound, self->zbound, sizeof (params->zbound));
  memcpy (params->dbound, self->dbound, sizeof (params->dbound));
  params->rounding = self->rounding;
  params->layout = self->layout;
  GST_OBJECT_UNLOCK (self);
  *result = p3dc_bevpool_params_init (params);
  return *result == P3DC_OK;
}

/* Loads the calibration file of the property; an element error naming the
 * file and the problem on failure. */
static P3dCalibration *
load_calibration (P3dBevPool * self)
{
  P3dCalibration *calibration;
  GError *error = NULL;
  gchar *path;

  GST_OBJECT_LOCK (self);
  path = g_strdup (self->calibration_path);
  self->calibration_changed = FALSE;
  GST_OBJECT_UNLOCK (self);
  if (path == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("No calibration: set the \"calibration\" property to a JSON file"),
        (NULL));
    return NULL;
  }
  calibration = p3d_calibration_load (path, &error);
  /* as filesrc and the decoders post them: a file that is not there, one
   * that cannot be read, and content that cannot be used */
  if (calibration == NULL && g_error_matches (error,
          P3D_CALIBRATION_ERROR, P3D_CALIBRATION_ERROR_NOT_FOUND))
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("Calibration file %s does not exist", path), ("%s", error->message));
  else if (calibration == NULL && g_error_matches (error,
          P3D_CALIBRATION_ERROR, P3D_CALIBRATION_ERROR_READ))
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
        ("Cannot read calibration file %s", path), ("%s", error->message));
  else if (calibration == NULL)
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("Cannot use calibration file %s", path), ("%s", error->message));
  g_clear_error (&error);
  g_free (path);
  return calibration;
}

/* Takes ownership of @calibration as the one in use. */
static void
set_calibration (P3dBevPool * self, P3dCalibration * calibration)
{
  p3d_calibration_free (self->calibration);
  self->calibration = calibration;
  GST_OBJECT_LOCK (self);
  self->calibration_cameras = calibration ? calibration->n_cameras : 0;
  GST_OBJECT_UNLOCK (self);
}

/* A grid the properties describe whose cost no input can justify: an
 * output of more than P3D_BEV_POOL_MAX_CELLS cells (a zbound step of 1 cm
 * made 2 GB frames of a tiny input, minutes each), or more than
 * P3D_BEV_POOL_MAX_DEPTH_BINS depth bins. The geometry's own cost grows
 * with the input's depth tensor, which the caps bound. */
static gboolean
check_grid_size (P3dBevPool * self, const P3dcBevPoolParams * params)
{
  guint64 cells = (guint64) params->nx * params->ny * params->nz;
  gchar *x, *y, *z, *d;
  gboolean ok = TRUE;

  x = p3d_doubles_to_string (params->xbound, 3);
  y = p3d_doubles_to_string (params->ybound, 3);
  z = p3d_doubles_to_string (params->zbound, 3);
  d = p3d_doubles_to_string (params->dbound, 3);
  if (cells > P3D_BEV_POOL_MAX_CELLS) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Invalid properties xbound, ybound and zbound: %s, %s and %s make "
            "a grid of %u x %u x %u = %" G_GUINT64_FORMAT " cells, more than "
            "bevpool's limit of %u: set coarser steps or smaller bounds%s",
            x, y, z, params->nx, params->ny, params->nz, cells,
            P3D_BEV_POOL_MAX_CELLS, params->nz > 1 ? " (zbound's step makes "
            "one channel block per height cell)" : ""),
        ("each cell of each channel is written every frame"));
    ok = FALSE;
  } else if (params->depth_bins > P3D_BEV_POOL_MAX_DEPTH_BINS) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Invalid property dbound: %s makes %u depth bins, more than "
            "bevpool's limit of %u: set a coarser step", d,
            params->depth_bins, P3D_BEV_POOL_MAX_DEPTH_BINS),
        ("BEVFusion uses 118 bins, BEVDet 59"));
    ok = FALSE;
  }
  g_free (x);
  g_free (y);
  g_free (z);
  g_free (d);
  return ok;
}

static gboolean
p3d_bev_pool_start (GstBaseTransform * trans)
{
  P3dBevPool *self = P3D_BEV_POOL (trans);
  P3dcBevPoolParams params;
  P3dcResult result;

  set_calibration (self, load_calibration (self));
  if (self->calibration == NULL)
    return FALSE;
  if (!grid_from_properties (self, &params, &result)) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Invalid BEV grid: xbound <%g, %g, %g>, ybound <%g, %g, %g>, "
            "zbound <%g, %g, %g>, dbound <%g, %g, %g>, image %ux%u",
            params.xbound[0], params.xbound[1], params.xbound[2],
            params.ybound[0], params.ybound[1], params.ybound[2],
            params.zbound[0], params.zbound[1], params.zbound[2],
            params.dbound[0], params.dbound[1], params.dbound[2],
            params.image_width, params.image_height),
        ("%s", p3dc_result_string (result)));
    return FALSE;
  }
  if (!check_grid_size (self, &params))
    return FALSE;
  self->geometry_updates = 0;
  return GST_BASE_TRANSFORM_CLASS (parent_class)->start (trans);
}

static gboolean
p3d_bev_pool_stop (GstBaseTransform * trans)
{
  P3dBevPool *self = P3D_BEV_POOL (trans);
  gboolean ok = GST_BASE_TRANSFORM_CLASS (parent_class)->stop (trans);

  p3dc_bevpool_geometry_free (self->geometry);
  self->geometry = NULL;
  self->geometry_valid = FALSE;
  set_calibration (self, NULL);
  return ok;
}

static void
set_int_or_copy (GstStructure * s, const gchar * field, gint value,
    gboolean known)
{
  if (known)
    gst_structure_set (s, field, G_TYPE_INT, value, NULL);
}

static GstCaps *
p3d_bev_pool_transform_media_caps (P3dCudaFilter * filter,
    GstPadDirection direction, GstCaps * caps)
{
  P3dBevPool *self = P3D_BEV_POOL (filter);
  GstCaps *result = gst_caps_new_empty ();
  P3dcBevPoolParams grid;
  P3dcResult why;
  guint i;

  if (!grid_from_properties (self, &grid, &why)) {
    /* Invalid properties: still link, so that start() can post an error
     * naming them rather than a bare "could not link". */
    gst_caps_unref (result);
    return gst_caps_from_string (direction == GST_PAD_SINK ?
        P3D_BEV_FEATURES_CAPS_ALL : P3D_CAMERA_FEATURES_CAPS_ALL);
  }

  for (i = 0; i < gst_caps_get_size (caps); i++) {
    const GstStructure *s = gst_caps_get_structure (caps, i);
    const GValue *format = gst_structure_get_value (s, "format");
    const GValue *framerate = gst_structure_get_value (s, "framerate");
    GstStructure *other;
    gint channels;
    gboolean fixed_channels = gst_structure_get_int (s, "channels", &channels);

    if (direction == GST_PAD_SINK) {
      gboolean xy = grid.layout == P3DC_BEV_LAYOUT_XY;
      gdouble range[6] = { grid.xbound[0], grid.ybound[0], grid.zbound[0],
        grid.xbound[1], grid.ybound[1], grid.zbound[1]
      };
      GstCaps *all = gst_caps_from_string (P3D_BEV_FEATURES_CAPS_ALL);

      /* the input's format first, the other one when downstream wants it */
      other = gst_structure_copy (gst_caps_get_structure (all, 0));
      gst_caps_unref (all);
      if (format && G_VALUE_HOLDS_STRING (format)) {
        GValue formats = G_VALUE_INIT, name = G_VALUE_INIT;
        const gchar *first = g_value_get_string (format);

        gst_value_list_init (&formats, 2);
        g_value_init (&name, G_TYPE_STRING);
        g_value_set_string (&name, first);
        gst_value_list_append_value (&formats, &name);
        g_value_set_string (&name, g_str_equal (first, "F16") ? "F32" : "F16");
        gst_value_list_append_value (&formats, &name);
        g_value_unset (&name);
        gst_structure_take_value (other, "format", &formats);
      }
      set_int_or_copy (other, "channels", channels * grid.nz, fixed_channels);
      gst_structure_set (other, "width", G_TYPE_INT,
          (gint) (xy ? grid.ny : grid.nx), "height", G_TYPE_INT,
          (gint) (xy ? grid.nx : grid.ny), "layout", G_TYPE_STRING,
          xy ? "xy" : "yx", NULL);
      {
        GValue array = G_VALUE_INIT;

        gst_value_array_init (&array, 6);
        p3d_value_set_doubles (&array, range, 6);
        gst_structure_take_value (other, "range", &array);
      }
    } else {
      GstCaps *all = gst_caps_from_string (P3D_CAMERA_FEATURES_CAPS_ALL);

      other = gst_structure_copy (gst_caps_get_structure (all, 0));
      gst_caps_unref (all);
      /* cameras and depth-bins are left open: caps that disagree with the
       * calibration or dbound reach set_info, whose error names both
       * values, instead of failing the caps query without a word */
      if (fixed_channels && channels % grid.nz == 0)
        gst_structure_set (other, "channels", G_TYPE_INT,
            channels / (gint) grid.nz, NULL);
    }
    if (framerate)
      gst_structure_set_value (other, "framerate", framerate);
    result = gst_caps_merge_structure (result, other);
  }
  return result;
}

/* The cameras the geometry projects: the calibration's, each camera's
 * image augmentation replaced by the one the input caps carry when they
 * carry one (camencode's resize and crop: the frustum its network saw). */
static P3dcCameraCalib *
geometry_cameras (P3dBevPool * self)
{
  P3dcCameraCalib *cameras = g_memdup2 (self->calibration->cameras,
      self->calibration->n_cameras * sizeof (P3dcCameraCalib));
  guint i;

  if (self->in_info.has_image)
    for (i = 0; i < self->calibration->n_cameras; i++)
      p3d_camera_features_info_get_img_aug (&self->in_info, i,
          cameras[i].img_aug);
  return cameras;
}

/* Computes the geometry of self->params for self->calibration, on the
 * device (queued on the element's stream; the device is current in
 * set_info and process_cuda) or on the host. */
static gboolean
update_geometry (P3dBevPool * self, GError ** error)
{
  P3dCudaFilter *filter = P3D_CUDA_FILTER (self);
  P3dcCameraCalib *cameras = geometry_cameras (self);
  P3dcResult result = p3dc_bevpool_calib_check (&self->params, cameras);

  self->geometry_valid = FALSE;
  if (result != P3DC_OK) {
    P3dcBevPoolParams one = self->params;
    gchar *path;
    guint i;

    /* name the camera whose matrices cannot be used */
    one.cameras = 1;
    for (i = 0; i < self->calibration->n_cameras; i++)
      if (p3dc_bevpool_calib_check (&one, &cameras[i]) != P3DC_OK)
        break;
    GST_OBJECT_LOCK (self);
    path = g_strdup (self->calibration_path);
    GST_OBJECT_UNLOCK (self);
    g_set_error (error, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE,
        "Calibration of camera %u (%s) cannot be used: its intrinsics or "
        "image augmentation%s cannot be inverted (calibration %s: %s)", i,
        i < self->calibration->n_cameras ? self->calibration->names[i] :
        "?", self->in_info.has_image ? " (the image-aug of the input caps)" :
        "", GST_STR_NULL (path), p3dc_result_string (result));
    g_free (path);
    g_free (cameras);
    return FALSE;
  }
  if (filter->use_cuda)
    result = p3dc_bevpool_geometry_compute_cuda (self->geometry_cuda,
        cameras, filter->stream);
  else
    result = p3dc_bevpool_geometry_compute_cpu (self->geometry, cameras);
  g_free (cameras);
  if (result != P3DC_OK) {
    g_set_error (error, GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_FAILED,
        "computing the geometry failed: %s", p3dc_result_string (result));
    return FALSE;
  }
  self->geometry_valid = TRUE;
  GST_OBJECT_LOCK (self);
  self->geometry_updates++;
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

static gint
geometry_cuda_new (P3dCudaFilter * filter, gpointer * workspace)
{
  return p3dc_bevpool_geometry_cuda_new (&P3D_BEV_POOL (filter)->params,
      (P3dcBevGeometryCuda **) workspace);
}

static gboolean
p3d_bev_pool_set_info (P3dCudaFilter * filter, GstCaps * incaps,
    P3dTensorLayout * in_layout, GstCaps * outcaps,
    P3dTensorLayout * out_layout, GError ** error)
{
  P3dBevPool *self = P3D_BEV_POOL (filter);
  P3dCameraFeaturesInfo in_info;
  P3dBevFeaturesInfo out_info;
  P3dcBevPoolParams params;
  P3dcResult result;
  gboolean same_image;

  if (!p3d_camera_features_info_from_caps (&in_info, incaps)
      || !p3d_bev_features_info_from_caps (&out_info, outcaps)
      || !grid_from_properties (self, &params, &result))
    return FALSE;
  if (in_info.cameras != self->calibration->n_cameras
      || in_info.depth_bins != params.depth_bins) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "camera features do not fit the calibration and dbound: the caps "
        "have cameras=%u depth-bins=%u; the calibration has %u cameras and "
        "dbound gives %u bins", in_info.cameras, in_info.depth_bins,
        self->calibration->n_cameras, params.depth_bins);
    return FALSE;
  }
  params.channels = in_info.channels;
  params.feat_width = in_info.width;
  params.feat_height = in_info.height;
  /* the network input that camencode's caps name is the frustum's image */
  if (in_info.has_image) {
    if (in_info.image_width != params.image_width
        || in_info.image_height != params.image_height)
      GST_INFO_OBJECT (self, "the input caps' image-width %u and "
          "image-height %u replace the properties' %u x %u",
          in_info.image_width, in_info.image_height, params.image_width,
          params.image_height);
    params.image_width = in_info.image_width;
    params.image_height = in_info.image_height;
  }
  result = p3dc_bevpool_params_init (&params);
  if (result != P3DC_OK) {
    g_set_error (error, GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_SETTINGS,
        "camera features too large for bevpool (%u cameras, %u channels, "
        "%ux%u): %s", in_info.cameras, in_info.channels, in_info.width,
        in_info.height, p3dc_result_string (result));
    return FALSE;
  }
  same_image = p3d_camera_features_info_image_is_equal (&in_info,
      &self->in_info);
  self->in_info = in_info;
  self->out_info = out_info;
  /* A format or framerate change needs no new geometry. */
  if (self->geometry_valid && same_image
      && memcmp (&params, &self->params, sizeof (params)) == 0)
    goto layouts;
  self->params = params;
  self->geometry_valid = FALSE;

  if (filter->use_cuda) {
    if (!p3dc_bevpool_cuda_column_fits (&params)) {
      g_set_error (error, GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_SETTINGS,
          "camera features too tall for bevpool's CUDA path: %u depth bins "
          "x %u feature rows = %" G_GUINT64_FORMAT " points a feature "
          "column, more than its %u (or a side over %u): set a coarser "
          "dbound, or backend=cpu", params.depth_bins, params.feat_height,
          (guint64) params.depth_bins * params.feat_height,
          P3DC_BEVPOOL_CUDA_COLUMN_POINTS, P3DC_BEVPOOL_CUDA_COLUMN_SIDE);
      return FALSE;
    }
    if (!p3d_cuda_filter_replace_workspace (filter,
            (gpointer *) & self->geometry_cuda,
            (GDestroyNotify) p3dc_bevpool_geometry_cuda_free,
            geometry_cuda_new, "allocating the geometry", error))
      return FALSE;
  } else {
    p3dc_bevpool_geometry_free (self->geometry);
    self->geometry = NULL;
    result = p3dc_bevpool_geometry_new (&params, &self->geometry);
    if (result != P3DC_OK) {
      g_set_error (error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NO_SPACE_LEFT,
          "cannot allocate the geometry: %s", p3dc_result_string (result));
      return FALSE;
    }
  }
  if (!update_geometry (self, error))
    return FALSE;
layouts:
  if (!p3d_camera_features_info_get_layout (&in_info, in_layout)
      || !p3d_bev_features_info_get_layout (&out_info, out_layout))
    return FALSE;
  return TRUE;
}

static void
p3d_bev_pool_stop_device (P3dCudaFilter * filter)
{
  P3dBevPool *self = P3D_BEV_POOL (filter);

  p3dc_bevpool_geometry_cuda_free (self->geometry_cuda);
  self->geometry_cuda = NULL;
  self->geometry_valid = FALSE;
}

/* A calibration file set while playing: load it and recompute the
 * geometry before this frame is pooled. */
static gboolean
apply_calibration_change (P3dBevPool * self)
{
  P3dCalibration *calibration;
  GError *error = NULL;
  gboolean changed;

  GST_OBJECT_LOCK (self);
  changed = self->calibration_changed;
  GST_OBJECT_UNLOCK (self);
  if (!changed)
    return TRUE;
  calibration = load_calibration (self);
  if (calibration == NULL)
    return FALSE;
  if (calibration->n_cameras != self->calibration->n_cameras) {
    /* the condition set_info refuses at the start */
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("The new calibration has %u cameras, the stream %u",
            calibration->n_cameras, self->calibration->n_cameras), (NULL));
    p3d_calibration_free (calibration);
    return FALSE;
  }
  set_calibration (self, calibration);
  GST_INFO_OBJECT (self, "new calibration: recomputing the geometry");
  if (!update_geometry (self, &error)) {
    gst_element_message_full (GST_ELEMENT (self), GST_MESSAGE_ERROR,
        error->domain, error->code, g_strdup (error->message), NULL,
        __FILE__, GST_FUNCTION, __LINE__);
    g_clear_error (&error);
    return FALSE;
  }
  return TRUE;
}

static GstFlowReturn
p3d_bev_pool_process_cpu (P3dCudaFilter * filter, GstBuffer * inbuf,
    P3dTensorMap * in, P3dTensorMap * out)
{
  P3dBevPool *self = P3D_BEV_POOL (filter);
  P3dcResult result;

  if (!apply_calibration_change (self))
    return GST_FLOW_ERROR;
  result = p3dc_bevpool_cpu (self->geometry,
      in->data[P3D_CAMERA_FEATURES_TENSOR_FEATURES],
      in->data[P3D_CAMERA_FEATURES_TENSOR_DEPTH],
      self->in_info.format == P3D_DATA_FORMAT_F16,
      out->data[P3D_BEV_FEATURES_TENSOR_FEATURES],
      self->out_info.format == P3D_DATA_FORMAT_F16);
  if (result != P3DC_OK) {
    GST_ELEMENT_ERROR (self, LIBRARY, FAILED, ("BEV pooling failed"),
        ("%s", p3dc_result_string (result)));
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

static GstFlowReturn
p3d_bev_pool_process_cuda (P3dCudaFilter * filter, GstBuffer * inbuf,
    P3dTensorMap * in, P3dTensorMap * out, gboolean out_clean)
{
  P3dBevPool *self = P3D_BEV_POOL (filter);

  if (!apply_calibration_change (self))
    return GST_FLOW_ERROR;
  if (!p3d_cuda_filter_check (filter, p3dc_bevpool_cuda (self->geometry_cuda,
              in->data[P3D_CAMERA_FEATURES_TENSOR_FEATURES],
              in->data[P3D_CAMERA_FEATURES_TENSOR_DEPTH],
              self->in_info.format == P3D_DATA_FORMAT_F16,
              out->data[P3D_BEV_FEATURES_TENSOR_FEATURES],
              self->out_info.format == P3D_DATA_FORMAT_F16, filter->stream),
          "pooling"))
    return GST_FLOW_ERROR;
  return GST_FLOW_OK;
}
