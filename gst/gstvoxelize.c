/**
 * SECTION:element-voxelize
 * @title: voxelize
 *
 * Turns one lidar sweep into voxels, as mmcv's deterministic hard
 * voxelization: a point belongs to the cell floor((p - range_min) /
 * voxel-size) when that cell is inside the grid, voxels are numbered by
 * their first point in the input, points keep their input order, and the
 * first max-points points of a voxel and the first max-voxels voxels are
 * kept. PointPillars pillars are the case of one z cell (the default, the
 * KITTI PointPillars settings); CenterPoint-style 3D grids work the same.
 * The CUDA path gives exactly the reference's bytes.
 *
 * The grid has round((max - min) / voxel-size) cells per axis (mmcv's
 * rule), so when the range is not a whole number of voxels the box
 * voxelized is the effective range min .. min + cells x voxel-size, not the
 * range: it is written in the output caps as effective-range, and a
 * warning naming both is posted at start.
 *
 * Points outside the effective range, with a NaN or infinite coordinate, beyond
 * max-points in their voxel or in a voxel beyond max-voxels are dropped and
 * counted: the "stats" property holds the counts of the last frame, a
 * "voxelize-stats" element message carries them for every frame when
 * post-stats is set, and a warning is posted when a frame loses voxels to
 * max-voxels after one that did not (points beyond max-points in a voxel
 * are how PointPillars-style models are trained: counted, not warned
 * about). Frames are numbered from 0 in messages, as boxenc writes them.
 * On the CUDA path the counts are
 * read back without stopping the stream, so they arrive a frame or two
 * after the voxels (all of them by the end of the stream).
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 multifilesrc location=velodyne/%06d.bin \
 *     caps="application/x-point-cloud,format=xyzi" \
 *   ! voxelize voxel-size="<0.16,0.16,4.0>" \
 *     range="<0,-39.68,-3,69.12,39.68,1>" ! pillarfeat ! fakesink
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>

#include "gstvoxelize.h"
#include "p3dproperties.h"

GST_DEBUG_CATEGORY_STATIC (p3d_voxelize_debug);
#define GST_CAT_DEFAULT p3d_voxelize_debug

enum
{
  PROP_0,
  PROP_VOXEL_SIZE,
  PROP_RANGE,
  PROP_MAX_POINTS,
  PROP_MAX_VOXELS,
  PROP_POST_STATS,
  PROP_STATS,
};

/* The PointPillars KITTI settings (OpenPCDet, NVIDIA's CUDA-PointPillars). */
static const gdouble default_voxel_size[3] = { 0.16, 0.16, 4.0 };

static const gdouble default_range[6] = { 0.0, -39.68, -3.0, 69.12, 39.68,
  1.0
};

#define DEFAULT_MAX_POINTS 32
#define DEFAULT_MAX_VOXELS 40000
#define DEFAULT_POST_STATS FALSE
/* Points the device workspace is first sized for: a 10-sweep nuScenes
 * frame, so that it does not grow (which waits for the stream) on the
 * first large sweeps of a stream. */
#define WORKSPACE_POINTS_HINT 300000
/* Frames whose statistics may be in flight on the device. */

#define p3d_voxelize_parent_class parent_class
G_DEFINE_TYPE (P3dVoxelize, p3d_voxelize, P3D_TYPE_CUDA_FILTER);
GST_ELEMENT_REGISTER_DEFINE (voxelize, "voxelize", GST_RANK_NONE,
    P3D_TYPE_VOXELIZE);

static void p3d_voxelize_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void p3d_voxelize_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static gboolean p3d_voxelize_start (GstBaseTransform * trans);
static GstCaps *p3d_voxelize_transform_media_caps (P3dCudaFilter * filter,
    GstPadDirection direction, GstCaps * caps);
static gboolean p3d_voxelize_set_info (P3dCudaFilter * filter,
    GstCaps * incaps, P3dTensorLayout * in_layout, GstCaps * outcaps,
    P3dTensorLayout * out_layout, GError ** error);
static void p3d_voxelize_stop_device (P3dCudaFilter * filter);
static GstFlowReturn p3d_voxelize_process_cpu (P3dCudaFilter * filter,
    GstBuffer * inbuf, P3dTensorMap * in, P3dTensorMap * out);
static GstFlowReturn p3d_voxelize_process_cuda (P3dCudaFilter * filter,
    GstBuffer * inbuf, P3dTensorMap * in, P3dTensorMap * out,
    gboolean out_clean);
static void p3d_voxelize_readback (P3dCudaFilter * filter,
    gconstpointer record, GstClockTime pts);

static void
p3d_voxelize_class_init (P3dVoxelizeClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
  P3dCudaFilterClass *filter_class = P3D_CUDA_FILTER_CLASS (klass);
  GstCaps *sink_caps, *src_caps;

  gobject_class->set_property = p3d_voxelize_set_property;
  gobject_class->get_property = p3d_voxelize_get_property;

  g_object_class_install_property (gobject_class, PROP_VOXEL_SIZE,
      p3d_param_spec_double_array ("voxel-size", "Voxel size",
          "Cell size along x, y and z in metres, e.g. \"<0.16,0.16,4.0>\" "
          "(PointPillars KITTI) or \"<0.075,0.075,0.2>\" (CenterPoint); "
          "above 0 and within float32's range (cells are computed in "
          "float32)", G_MINDOUBLE, G_MAXFLOAT));
  g_object_class_install_property (gobject_class, PROP_RANGE,
      p3d_param_spec_double_array ("range", "Range",
          "The box to voxelize, in metres: \"<xmin,ymin,zmin,xmax,ymax,zmax>\"; "
          "the grid is round((max - min) / voxel-size) cells per axis, which "
          "cover min .. min + cells x voxel-size (the caps' effective-range; "
          "a warning at start when that is not max); within float32's range",
          -G_MAXFLOAT, G_MAXFLOAT));
  g_object_class_install_property (gobject_class, PROP_MAX_POINTS,
      p3d_param_spec_uint ("max-points", "Max points",
          "Points kept per voxel, the first ones in input order (later ones "
          "are dropped and counted); an output buffer, max-voxels x "
          "(max-points x channels x 4 + 20) + 4 bytes, must not exceed "
          "2147479552 (0x7ffff000, what one write can store)", 1,
          P3D_VOXELS_MAX_POINTS,
          DEFAULT_MAX_POINTS, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_MAX_VOXELS,
      p3d_param_spec_uint ("max-voxels", "Max voxels",
          "Voxels kept per frame, the first ones by first point (later ones "
          "are dropped and counted); OpenPCDet uses 40000 for KITTI pillars, "
          "CenterPoint 160000 for its 3D grid; an output buffer, max-voxels "
          "x (max-points x channels x 4 + 20) + 4 bytes, must not exceed "
          "2147479552 (0x7ffff000)", 1, P3D_VOXELS_MAX_VOXELS,
          DEFAULT_MAX_VOXELS, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_POST_STATS,
      g_param_spec_boolean ("post-stats", "Post stats",
          "Post a \"voxelize-stats\" element message for every frame, with "
          "the counts of the \"stats\" property and the frame's timestamp",
          DEFAULT_POST_STATS, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Counts of the last frame whose statistics are known: points-in, "
          "points-nonfinite, points-out-of-range, points-over-max-points, "
          "points-over-max-voxels, voxels, voxels-dropped; and since start: "
          "frames, saturated-frames (frames that hit max-points or "
          "max-voxels)", GST_TYPE_STRUCTURE,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_set_static_metadata (element_class, "Voxelize",
      "Filter/Converter/Lidar",
      "Lidar points to voxels or PointPillars pillars, deterministically, "
      "on CUDA or on the CPU", "gst-perception developers");

  sink_caps = gst_caps_from_string (P3D_POINT_CLOUD_CAPS_ALL);
  src_caps = gst_caps_from_string (P3D_VOXELS_CAPS_ALL);
  p3d_cuda_filter_class_add_pad_templates (filter_class, sink_caps, src_caps);
  gst_caps_unref (sink_caps);
  gst_caps_unref (src_caps);

  trans_class->start = GST_DEBUG_FUNCPTR (p3d_voxelize_start);
  filter_class->transform_media_caps =
      GST_DEBUG_FUNCPTR (p3d_voxelize_transform_media_caps);
  /* the properties' voxels first; others downstream asks for are refused
   * naming the property */
  filter_class->sink_fallback_caps = P3D_POINT_CLOUD_CAPS_ALL;
  filter_class->src_fallback_caps = P3D_VOXELS_CAPS_ALL;
  filter_class->set_info = GST_DEBUG_FUNCPTR (p3d_voxelize_set_info);
  filter_class->stop_device = GST_DEBUG_FUNCPTR (p3d_voxelize_stop_device);
  filter_class->process_cpu = GST_DEBUG_FUNCPTR (p3d_voxelize_process_cpu);
  filter_class->process_cuda = GST_DEBUG_FUNCPTR (p3d_voxelize_process_cuda);
  filter_class->readback_size = sizeof (P3dcVoxelizeStats);
  filter_class->readback = GST_DEBUG_FUNCPTR (p3d_voxelize_readback);
  /* the usual cause of points that do not match their caps: a raw sweep
   * file read with caps alone, cut into the source's blocks or read with
   * another record layout */
  filter_class->bad_input_hint = "read raw sweep files with pointcloudparse "
      "(filesrc location=sweep.bin ! pointcloudparse preset=kitti or "
      "preset=nuscenes), which makes one sweep of each file whatever its "
      "record layout";

  GST_DEBUG_CATEGORY_INIT (p3d_voxelize_debug, "voxelize", 0,
      "Lidar voxelization");
}

static void
p3d_voxelize_init (P3dVoxelize * self)
{
  memcpy (self->voxel_size, default_voxel_size, sizeof (self->voxel_size));
  memcpy (self->range, default_range, sizeof (self->range));
  self->max_points = DEFAULT_MAX_POINTS;
  self->max_voxels = DEFAULT_MAX_VOXELS;
  self->post_stats = DEFAULT_POST_STATS;
}

static GstStructure *
stats_to_structure (P3dVoxelize * self, const P3dcVoxelizeStats * stats,
    const gchar * name)
{
  return gst_structure_new (name,
      "points-in", G_TYPE_UINT, stats->points_in,
      "points-nonfinite", G_TYPE_UINT, stats->points_nonfinite,
      "points-out-of-range", G_TYPE_UINT, stats->points_out_of_range,
      "points-over-max-points", G_TYPE_UINT, stats->points_over_max_points,
      "points-over-max-voxels", G_TYPE_UINT, stats->points_over_max_voxels,
      "voxels", G_TYPE_UINT, stats->voxels,
      "voxels-dropped", G_TYPE_UINT, stats->voxels_dropped,
      "frames", G_TYPE_UINT64, self->frames,
      "saturated-frames", G_TYPE_UINT64, self->saturated_frames, NULL);
}

static void
p3d_voxelize_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dVoxelize *self = P3D_VOXELIZE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_VOXEL_SIZE:
      p3d_value_get_doubles (object, value, "voxel-size", self->voxel_size, 3);
      break;
    case PROP_RANGE:
      p3d_value_get_doubles (object, value, "range", self->range, 6);
      break;
    case PROP_MAX_POINTS:
      self->max_points = g_value_get_uint (value);
      break;
    case PROP_MAX_VOXELS:
      self->max_voxels = g_value_get_uint (value);
      break;
    case PROP_POST_STATS:
      self->post_stats = g_value_get_boolean (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
p3d_voxelize_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  P3dVoxelize *self = P3D_VOXELIZE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_VOXEL_SIZE:
      p3d_value_set_doubles (value, self->voxel_size, 3);
      break;
    case PROP_RANGE:
      p3d_value_set_doubles (value, self->range, 6);
      break;
    case PROP_MAX_POINTS:
      g_value_set_uint (value, self->max_points);
      break;
    case PROP_MAX_VOXELS:
      g_value_set_uint (value, self->max_voxels);
      break;
    case PROP_POST_STATS:
      g_value_set_boolean (value, self->post_stats);
      break;
    case PROP_STATS:
      g_value_take_boxed (value, stats_to_structure (self, &self->last_stats,
              "voxelize-stats"));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* The voxels description the properties give for points of @format. */
static gboolean
voxels_info_for_format (P3dVoxelize * self, P3dPointFormat format,
    P3dVoxelsInfo * info)
{
  gboolean ok;

  p3d_voxels_info_init (info);
  GST_OBJECT_LOCK (self);
  ok = p3d_voxels_info_set (info, format, self->max_voxels, self->max_points,
      self->voxel_size, self->range);
  GST_OBJECT_UNLOCK (self);
  return ok;
}

/* The grid is round((max - min) / voxel-size), mmcv's rule, which models
 * are trained with; a range that is not a whole number of voxels then
 * keeps points past max or drops points before it, so say which box is
 * really voxelized (the caps carry it as effective-range). */
static void
warn_if_not_whole (P3dVoxelize * self, const gdouble * voxel_size,
    const gdouble * range)
{
  P3dVoxelGrid grid;
  gdouble effective[6];

  if (!p3d_voxel_grid_set (&grid, voxel_size, range)
      || p3d_voxel_grid_is_whole (&grid))
    return;
  p3d_voxel_grid_get_effective_range (&grid, effective);
  GST_ELEMENT_WARNING (self, LIBRARY, SETTINGS,
      ("The range <%g, %g, %g, %g, %g, %g> is not a whole number of voxels "
          "of voxel-size <%g, %g, %g>: the grid of %u x %u x %u cells "
          "voxelizes the effective range <%g, %g, %g, %g, %g, %g>",
          range[0], range[1], range[2], range[3], range[4], range[5],
          voxel_size[0], voxel_size[1], voxel_size[2], grid.grid[0],
          grid.grid[1], grid.grid[2], effective[0], effective[1],
          effective[2], effective[3], effective[4], effective[5]),
      ("cells per axis are round((max - min) / voxel-size), as in mmcv; "
          "set a range of whole voxels to voxelize exactly the range"));
}

/* Why the compute library refuses the grid, in the properties' terms:
 * the first axis whose range is empty or whose cells are too many or too
 * few, or the buffers max-voxels and max-points make. */
static gchar *
explain_grid (const gdouble * voxel_size, const gdouble * range,
    guint max_points, guint max_voxels)
{
  static const gchar axes[] = "xyz";
  guint64 cells = 1;
  guint a;

  for (a = 0; a < 3; a++) {
    gdouble extent = range[a + 3] - range[a];
    gdouble n = round (extent / voxel_size[a]);

    if (!(range[a + 3] > range[a]))
      return g_strdup_printf ("range's %cmax %g is not above its %cmin %g",
          axes[a], range[a + 3], axes[a], range[a]);
    if (!isfinite (extent))
      return g_strdup_printf ("range's %c extent %g .. %g is beyond float "
          "arithmetic", axes[a], range[a], range[a + 3]);
    if (n < 1.0)
      return g_strdup_printf ("voxel-size %g along %c is larger than the "
          "range's extent %g (no whole cell)", voxel_size[a], axes[a], extent);
    if (n > P3DC_VOXELIZE_MAX_GRID_AXIS)
      return g_strdup_printf ("voxel-size %g over the range's %g m along %c "
          "makes %.0f cells, more than %u", voxel_size[a], extent, axes[a], n,
          P3DC_VOXELIZE_MAX_GRID_AXIS);
    cells *= (guint64) n;
  }
  if (cells > P3DC_VOXELIZE_MAX_GRID_CELLS)
    return g_strdup_printf ("a grid of %" G_GUINT64_FORMAT " cells, more "
        "than %u: a coarser voxel-size or a smaller range", cells,
        P3DC_VOXELIZE_MAX_GRID_CELLS);
  if (max_voxels > P3DC_VOXELIZE_MAX_VOXELS
      || max_points > P3DC_VOXELIZE_MAX_POINTS_PER_VOXEL)
    return g_strdup_printf ("max-voxels %u x max-points %u is more than "
        "voxelize supports", max_voxels, max_points);
  return g_strdup ("the compute library refuses it");
}

static gboolean
p3d_voxelize_start (GstBaseTransform * trans)
{
  P3dVoxelize *self = P3D_VOXELIZE (trans);
  P3dcVoxelizeParams params;
  gdouble voxel_size[3], range[6];
  guint max_points, max_voxels;
  P3dcResult result;

  GST_OBJECT_LOCK (self);
  memcpy (voxel_size, self->voxel_size, sizeof (voxel_size));
  memcpy (range, self->range, sizeof (range));
  max_points = self->max_points;
  max_voxels = self->max_voxels;
  memset (&self->last_stats, 0, sizeof (self->last_stats));
  self->frames = self->saturated_frames = 0;
  self->saturated = FALSE;
  self->warned_empty = FALSE;
  self->first_size = -1;
  GST_OBJECT_UNLOCK (self);

  /* Refuse a bad grid here, with the values, rather than as a failed
   * negotiation later. */
  result = p3dc_voxelize_params_init (&params, voxel_size, range, 3,
      max_points, max_voxels);
  if (result != P3DC_OK) {
    gchar *why = explain_grid (voxel_size, range, max_points, max_voxels);
    gchar *size_text = p3d_doubles_to_string (voxel_size, 3);
    gchar *range_text = p3d_doubles_to_string (range, 6);

    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Invalid voxel grid: voxel-size=%s over range=%s: %s", size_text,
            range_text, why), ("%s (max-points %u, max-voxels %u)",
            p3dc_result_string (result), max_points, max_voxels));
    g_free (why);
    g_free (size_text);
    g_free (range_text);
    return FALSE;
  }
  warn_if_not_whole (self, voxel_size, range);
  return GST_BASE_TRANSFORM_CLASS (parent_class)->start (trans);
}

static GstCaps *
p3d_voxelize_transform_media_caps (P3dCudaFilter * filter,
    GstPadDirection direction, GstCaps * caps)
{
  P3dVoxelize *self = P3D_VOXELIZE (filter);
  GstCaps *result = gst_caps_new_empty ();
  guint i, k;

  for (i = 0; i < gst_caps_get_size (caps); i++) {
    const GstStructure *s = gst_caps_get_structure (caps, i);
    const GValue *format = gst_structure_get_value (s, "format");
    const GValue *framerate = gst_structure_get_value (s, "framerate");

    if (direction == GST_PAD_SINK) {
      /* points -> voxels: one fixed structure per possible point format,
       * xyzi first as in P3D_POINT_FORMATS_ALL */
      static const P3dPointFormat order[] = { P3D_POINT_FORMAT_XYZI,
        P3D_POINT_FORMAT_XYZ, P3D_POINT_FORMAT_XYZIT, P3D_POINT_FORMAT_XYZIR
      };

      for (k = 0; k < G_N_ELEMENTS (order); k++) {
        P3dPointFormat f = order[k];
        GValue name = G_VALUE_INIT;
        P3dVoxelsInfo info;
        GstCaps *one;

        g_value_init (&name, G_TYPE_STRING);
        g_value_set_string (&name, p3d_point_format_to_string (f));
        if (format && !gst_value_intersect (NULL, format, &name)) {
          g_value_unset (&name);
          continue;
        }
        g_value_unset (&name);
        if (voxels_info_for_format (self, f, &info)) {
          one = p3d_voxels_info_to_caps (&info);
        } else {
          /* Invalid properties: still link, so that start() can post an
           * error naming them rather than a bare "could not link". */
          one = gst_caps_new_simple (P3D_MEDIA_TYPE_VOXELS, "format",
              G_TYPE_STRING, p3d_point_format_to_string (f), NULL);
        }
        if (framerate)
          gst_caps_set_value (one, "framerate", framerate);
        result = gst_caps_merge (result, one);
      }
    } else {
      /* voxels -> points: the point format, whatever the rest */
      GstCaps *points = gst_caps_from_string (P3D_POINT_CLOUD_CAPS_ALL);

      if (format) {
        GstCaps *wanted =
            gst_caps_new_empty_simple (P3D_MEDIA_TYPE_POINT_CLOUD);
        GstCaps *both;

        gst_caps_set_value (wanted, "format", format);
        both = gst_caps_intersect (points, wanted);
        gst_caps_unref (points);
        gst_caps_unref (wanted);
        points = both;
      }
      if (framerate && !gst_caps_is_empty (points))
        gst_caps_set_value (points, "framerate", framerate);
      result = gst_caps_merge (result, points);
    }
  }
  return result;
}

static gint
voxelizer_new (P3dCudaFilter * filter, gpointer * workspace)
{
  P3dVoxelize *self = P3D_VOXELIZE (filter);

  return p3dc_voxelizer_new (&self->params, WORKSPACE_POINTS_HINT,
      (P3dcVoxelizer **) workspace);
}

/* Why the properties describe no voxels caps for points of @finfo's
 * format once start() accepted the grid: the record, whose size depends on
 * the format's channels. */
static void
set_settings_error (P3dVoxelize * self, const P3dPointFormatInfo * finfo,
    GError ** error)
{
  guint max_voxels, max_points;
  guint64 record;

  GST_OBJECT_LOCK (self);
  max_voxels = self->max_voxels;
  max_points = self->max_points;
  GST_OBJECT_UNLOCK (self);
  record = p3d_voxels_get_record_size (max_voxels, max_points, finfo->channels);
  if (record > P3D_RECORD_MAX_BYTES) {
    g_set_error (error, GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_SETTINGS,
        "max-voxels %u x max-points %u of %s points make output buffers of "
        "%" G_GUINT64_FORMAT " bytes, more than the %" G_GSIZE_FORMAT
        " one buffer may hold: lower max-voxels or max-points", max_voxels,
        max_points, finfo->name, record, P3D_RECORD_MAX_BYTES);
  } else {
    g_set_error (error, GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_SETTINGS,
        "max-voxels %u, max-points %u, voxel-size and range describe no "
        "voxels of %s points", max_voxels, max_points, finfo->name);
  }
}

/* Downstream asked for voxels that are not the properties' (a caps filter
 * after voxelize): the first field that differs, both values and the
 * property to set. */
static gboolean
voxels_match_properties (const P3dVoxelsInfo * expected,
    const P3dVoxelsInfo * out_info, GError ** error)
{
  gchar *ours, *theirs;

  if (expected->finfo != out_info->finfo) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "Downstream asks for voxels of format=%s, the input points are "
        "format=%s: voxels keep the points' format", out_info->finfo->name,
        expected->finfo->name);
    return FALSE;
  }
  if (expected->max_voxels != out_info->max_voxels) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "Downstream asks for max-voxels=%u, the property is max-voxels=%u: "
        "set voxelize max-voxels=%u", out_info->max_voxels,
        expected->max_voxels, out_info->max_voxels);
    return FALSE;
  }
  if (expected->max_points != out_info->max_points) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "Downstream asks for max-points=%u, the property is max-points=%u: "
        "set voxelize max-points=%u", out_info->max_points,
        expected->max_points, out_info->max_points);
    return FALSE;
  }
  if (p3d_voxel_grid_is_equal (&expected->grid, &out_info->grid))
    return TRUE;
  if (memcmp (expected->grid.voxel_size, out_info->grid.voxel_size,
          sizeof (expected->grid.voxel_size)) != 0) {
    ours = p3d_doubles_to_string (expected->grid.voxel_size, 3);
    theirs = p3d_doubles_to_string (out_info->grid.voxel_size, 3);
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "Downstream asks for voxel-size=%s, the property is voxel-size=%s: "
        "set voxelize voxel-size=\"%s\"", theirs, ours, theirs);
  } else {
    ours = p3d_doubles_to_string (expected->grid.range, 6);
    theirs = p3d_doubles_to_string (out_info->grid.range, 6);
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "Downstream asks for range=%s, the property is range=%s: set "
        "voxelize range=\"%s\"", theirs, ours, theirs);
  }
  g_free (ours);
  g_free (theirs);
  return FALSE;
}

static gboolean
p3d_voxelize_set_info (P3dCudaFilter * filter, GstCaps * incaps,
    P3dTensorLayout * in_layout, GstCaps * outcaps,
    P3dTensorLayout * out_layout, GError ** error)
{
  P3dVoxelize *self = P3D_VOXELIZE (filter);
  P3dPointCloudInfo in_info;
  P3dVoxelsInfo out_info, expected;
  P3dcVoxelizeParams params;
  P3dcResult result;
  gboolean changed;

  if (!p3d_point_cloud_info_from_caps (&in_info, incaps))
    return FALSE;
  /* before the output caps, which are bare when the properties fit no
   * voxels caps (transform_media_caps), so the error names the values */
  if (!voxels_info_for_format (self, in_info.finfo->format, &expected)) {
    set_settings_error (self, in_info.finfo, error);
    return FALSE;
  }
  if (!p3d_voxels_info_from_caps (&out_info, outcaps)) {
    gchar *text = gst_caps_to_string (outcaps);

    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "Downstream asks for caps that describe no voxels: %s", text);
    g_free (text);
    return FALSE;
  }
  if (!voxels_match_properties (&expected, &out_info, error))
    return FALSE;
  result = p3dc_voxelize_params_init (&params, out_info.grid.voxel_size,
      out_info.grid.range, in_info.finfo->channels, out_info.max_points,
      out_info.max_voxels);
  if (result != P3DC_OK) {
    g_set_error (error, GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_SETTINGS,
        "invalid voxel grid: %s", p3dc_result_string (result));
    return FALSE;
  }

  changed = memcmp (&params, &self->params, sizeof (params)) != 0;
  /* voxelizer_new() makes the workspace for self->params */
  self->params = params;
  if (filter->use_cuda && (self->voxelizer == NULL || changed)
      && !p3d_cuda_filter_replace_workspace (filter,
          (gpointer *) & self->voxelizer,
          (GDestroyNotify) p3dc_voxelizer_free, voxelizer_new,
          "creating the voxelization workspace", error))
    return FALSE;
  self->in_info = in_info;
  self->out_info = out_info;
  p3d_point_cloud_info_get_layout (&in_info, 0, in_layout);
  p3d_voxels_info_get_layout (&out_info, out_layout);
  return TRUE;
}

static void
p3d_voxelize_stop_device (P3dCudaFilter * filter)
{
  P3dVoxelize *self = P3D_VOXELIZE (filter);

  p3dc_voxelizer_free (self->voxelizer);
  self->voxelizer = NULL;
}

/* A frame's timestamp for a message: "none" rather than GStreamer's
 * 99:99:99.999999999 for a frame without one. */
static gchar *
pts_text (GstClockTime pts)
{
  if (!GST_CLOCK_TIME_IS_VALID (pts))
    return g_strdup ("none");
  return g_strdup_printf ("%" GST_TIME_FORMAT, GST_TIME_ARGS (pts));
}

/* Records the statistics of one frame; posts what the user asked for.
 * Frames are numbered from 0, as boxenc writes them. */
static void
publish_stats (P3dVoxelize * self, const P3dcVoxelizeStats * stats,
    GstClockTime pts)
{
  gboolean saturated = stats->points_over_max_points > 0
      || stats->voxels_dropped > 0;
  /* points beyond max-points in a voxel are what PointPillars-style models
   * are trained with (counted, not a fault); voxels beyond max-voxels are
   * ground the network never sees, objects lost */
  gboolean lost = stats->voxels_dropped > 0;
  gboolean warn, warn_empty, post;
  GstStructure *s = NULL;
  guint64 frame;

  GST_OBJECT_LOCK (self);
  self->last_stats = *stats;
  frame = self->frames;
  self->frames++;
  if (saturated)
    self->saturated_frames++;
  warn = lost && !self->saturated;
  self->saturated = lost;
  /* a wrong range or an empty file gives no voxels at all: say so once */
  warn_empty = stats->voxels == 0 && !self->warned_empty;
  self->warned_empty = self->warned_empty || warn_empty;
  post = self->post_stats;
  if (post) {
    s = stats_to_structure (self, stats, "voxelize-stats");
    gst_structure_set (s, "timestamp", G_TYPE_UINT64, pts, NULL);
  }
  GST_OBJECT_UNLOCK (self);

  if (warn) {
    gchar *when = pts_text (pts);

    GST_ELEMENT_WARNING (self, STREAM, FAILED,
        ("Frame %" G_GUINT64_FORMAT " had more than max-voxels %u voxels: %u "
            "voxels and their %u points were dropped; raise max-voxels to "
            "keep them", frame, self->params.max_voxels,
            stats->voxels_dropped, stats->points_over_max_voxels),
        ("pts %s: voxels %u, voxels-dropped %u, points-over-max-voxels %u, "
            "points-over-max-points %u (max-points %u); later frames that "
            "lose voxels are counted in the stats property until one does "
            "not", when, stats->voxels, stats->voxels_dropped,
            stats->points_over_max_voxels, stats->points_over_max_points,
            self->params.max_points));
    g_free (when);
  }
  if (warn_empty) {
    const gdouble *r = self->out_info.grid.range;
    gchar *when = pts_text (pts);

    GST_ELEMENT_WARNING (self, STREAM, FAILED,
        ("Frame %" G_GUINT64_FORMAT " has no point inside the range "
            "<%g, %g, %g, %g, %g, %g>: %s", frame, r[0], r[1], r[2], r[3],
            r[4], r[5], stats->points_in == 0 ? "the frame is empty" :
            "every point is outside it or not finite"),
        ("pts %s: points-in %u, points-out-of-range %u, points-nonfinite %u; "
            "posted once per stream", when, stats->points_in,
            stats->points_out_of_range, stats->points_nonfinite));
    g_free (when);
  }
  if (s)
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_element (GST_OBJECT (self), s));
}

/* A frame's statistics, read back from the device. */
static void
p3d_voxelize_readback (P3dCudaFilter * filter, gconstpointer record,
    GstClockTime pts)
{
  publish_stats (P3D_VOXELIZE (filter), record, pts);
}

/* A raw sweep file read by filesrc with caps alone arrives as the reader's
 * blocks: every buffer the same size, a power of two, at contiguous byte
 * offsets from 0, each a "sweep" of a few hundred points that voxelizes
 * without a word (issue 25.2). The first two buffers tell; said once. */
static void
check_file_blocks (P3dVoxelize * self, GstBuffer * inbuf)
{
  gsize size = gst_buffer_get_size (inbuf);

  if (self->first_size == 0)
    return;
  if (self->first_size < 0) {
    self->first_size = 0;
    if (GST_BUFFER_OFFSET (inbuf) == 0
        && GST_BUFFER_OFFSET_END (inbuf) == size && size >= 512
        && (size & (size - 1)) == 0) {
      self->first_size = size;
      self->first_offset_end = size;
    }
    return;
  }
  if (GST_BUFFER_OFFSET (inbuf) == self->first_offset_end
      && size == (gsize) self->first_size)
    GST_ELEMENT_WARNING (self, STREAM, FORMAT,
        ("The sweeps are a file reader's blocks: the first two are %"
            G_GSIZE_FORMAT " bytes each (%" G_GSIZE_FORMAT " points), one "
            "after the other in one stream. Read a raw sweep file with "
            "pointcloudparse (filesrc location=sweep.bin ! pointcloudparse "
            "preset=kitti), which makes one sweep of each file", size,
            size / P3D_POINT_CLOUD_INFO_STRIDE (&self->in_info)),
        ("buffers of byte offsets 0 and %" G_GUINT64_FORMAT "; said once",
            self->first_offset_end));
  self->first_size = 0;
}

static void
output_from_map (P3dTensorMap * out, P3dcVoxelizeOutput * output)
{
  output->voxels = out->data[P3D_VOXELS_TENSOR_POINTS];
  output->num_points = out->data[P3D_VOXELS_TENSOR_NUM_POINTS];
  output->coords = out->data[P3D_VOXELS_TENSOR_COORDS];
  output->count = out->data[P3D_VOXELS_TENSOR_COUNT];
}

static GstFlowReturn
p3d_voxelize_process_cpu (P3dCudaFilter * filter, GstBuffer * inbuf,
    P3dTensorMap * in, P3dTensorMap * out)
{
  P3dVoxelize *self = P3D_VOXELIZE (filter);
  P3dcVoxelizeOutput output;
  P3dcVoxelizeStats stats;
  P3dcResult result;
  gsize n_points = in->size[0] / P3D_POINT_CLOUD_INFO_STRIDE (&self->in_info);

  check_file_blocks (self, inbuf);
  output_from_map (out, &output);
  output.stats = &stats;
  result = p3dc_voxelize_cpu (&self->params, in->data[0], n_points, &output);
  if (result != P3DC_OK) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED,
        ("Voxelization of %" G_GSIZE_FORMAT " points failed", n_points),
        ("%s", p3dc_result_string (result)));
    return GST_FLOW_ERROR;
  }
  publish_stats (self, &stats, GST_BUFFER_PTS (inbuf));
  return GST_FLOW_OK;
}

static GstFlowReturn
p3d_voxelize_process_cuda (P3dCudaFilter * filter, GstBuffer * inbuf,
    P3dTensorMap * in, P3dTensorMap * out, gboolean out_clean)
{
  P3dVoxelize *self = P3D_VOXELIZE (filter);
  P3dcVoxelizeOutput output;
  gpointer slot;
  gsize n_points = in->size[0] / P3D_POINT_CLOUD_INFO_STRIDE (&self->in_info);

  if (n_points > P3DC_VOXELIZE_MAX_INPUT) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Sweep of %" G_GSIZE_FORMAT " points is larger than supported",
            n_points), ("at most %u points per sweep",
            P3DC_VOXELIZE_MAX_INPUT));
    return GST_FLOW_ERROR;
  }
  check_file_blocks (self, inbuf);
  slot = p3d_cuda_filter_readback_slot (filter);
  if (slot == NULL)
    return GST_FLOW_ERROR;

  output_from_map (out, &output);
  output.stats = slot;
  if (!p3d_cuda_filter_check (filter, p3dc_voxelize_cuda (self->voxelizer,
              in->data[0], n_points, &output, out_clean, filter->stream),
          "voxelizing"))
    return GST_FLOW_ERROR;
  return GST_FLOW_OK;
}
