/**
 * SECTION:element-bevrender
 * @title: bevrender
 *
 * Draws a bird's-eye view of lidar points, voxel or pillar occupancy, BEV
 * feature magnitude and 3D boxes as RGBA video, so that pngenc, a video
 * encoder or any video sink can show what a perception pipeline sees.
 *
 * Request pads: points_%u (application/x-point-cloud), voxels_%u
 * (application/x-voxels or application/x-pillar-features), features_%u
 * (application/x-bev-features) and boxes_%u (application/x-boxes3d), each
 * in system memory or memory:CUDAMemory (mapped on the host, which waits
 * for the producer's device work). Layers are drawn bottom to top: grid,
 * features, voxels, points, boxes; pads of one kind in the order they
 * were requested.
 *
 * Orientation: x forward is up in the image, y left is left; the image's
 * centre is the centre of the range property. Points are coloured by height
 * or intensity, occupied voxel cells (pillars) are filled, BEV feature cells
 * are coloured by their L2 norm over the channels (heat map, relative to the
 * frame's largest), boxes are outlined in the colour of their label with a
 * line from the centre to the front edge and their score beside them.
 *
 * Timing: the output has a fixed framerate (the highest of the inputs'
 * caps, 10/1 when none has one, or what downstream asks for). Output frame
 * n covers running time [t_n, t_n+1), t_0 being the earliest input
 * buffer's. Each pad draws its newest buffer that starts before t_n+1
 * (older ones are skipped) and keeps drawing it until a newer one arrives,
 * after its EOS too; a pad whose first buffer starts later draws nothing
 * until then. A buffer without a timestamp counts for the next frame made,
 * one per frame. The stream ends once every pad is at EOS and its last
 * buffer was drawn. docs/elements/bevrender.md has the details.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 pointcloudtestsrc num-buffers=1 ! bevrender \
 *   ! pngenc ! filesink location=bev.png
 * gst-launch-1.0 bevrender name=r width=1000 ! videoconvert ! autovideosink \
 *   pointcloudtestsrc ! r.points_0 \
 *   pointcloudtestsrc emit=boxes ! r.boxes_0
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include "gstbevrender.h"
#include "p3dmodel.h"
#include "p3dparamspec.h"
#include "p3dproperties.h"

GST_DEBUG_CATEGORY (p3d_bev_render_debug);
#define GST_CAT_DEFAULT p3d_bev_render_debug

enum
{
  PROP_0,
  PROP_RANGE,
  PROP_METRES_PER_PIXEL,
  PROP_WIDTH,
  PROP_HEIGHT,
  PROP_BACKGROUND_COLOR,
  PROP_POINT_SIZE,
  PROP_COLOR_BY,
  PROP_HEIGHT_RANGE,
  PROP_INTENSITY_RANGE,
  PROP_SHOW_SCORES,
  PROP_GRID_SPACING,
  PROP_ANNOTATIONS,
  PROP_VOXELS_OFF_GRID,
  PROP_CLASS_NAMES,
  PROP_WEIGHTS,
};

/* The KITTI PointPillars area (OpenPCDet), without its z bounds. */
static const gdouble default_range[4] = { 0.0, -39.68, 69.12, 39.68 };

/* KITTI's voxelization z range; the ground is near -1.73 m. */
static const gdouble default_height_range[2] = { -3.0, 1.0 };

/* KITTI intensities are reflectances in [0, 1]. */
static const gdouble default_intensity_range[2] = { 0.0, 1.0 };

#define DEFAULT_METRES_PER_PIXEL 0.0
#define DEFAULT_WIDTH 0
#define DEFAULT_HEIGHT 0
#define DEFAULT_BACKGROUND_COLOR 0xff000000u
#define DEFAULT_POINT_SIZE 1
#define DEFAULT_COLOR_BY P3D_BEV_RENDER_COLOR_BY_HEIGHT
#define DEFAULT_SHOW_SCORES TRUE
#define DEFAULT_GRID_SPACING 10.0
#define MAX_POINT_SIZE 32
/* The output framerate when no input caps give one. */
#define DEFAULT_FPS_N 10
#define DEFAULT_FPS_D 1

#define DEFAULT_ANNOTATIONS TRUE

/* Each input: its request pad template, and what it takes. */
static const struct
{
  const gchar *name_template;
  const gchar *prefix;
  const gchar *caps;
} inputs[P3D_BEV_RENDER_N_INPUTS] = {
  [P3D_BEV_RENDER_INPUT_FEATURES] = {"features_%u", "features_",
      P3D_BEV_FEATURES_CAPS_ALL},
  [P3D_BEV_RENDER_INPUT_VOXELS] = {"voxels_%u", "voxels_",
      P3D_VOXELS_CAPS_ALL "; " P3D_PILLARS_CAPS_ALL},
  [P3D_BEV_RENDER_INPUT_POINTS] = {"points_%u", "points_",
      P3D_POINT_CLOUD_CAPS_ALL},
  [P3D_BEV_RENDER_INPUT_BOXES] = {"boxes_%u", "boxes_",
      P3D_MEDIA_TYPE_BOXES3D},
};

/* The order of the templates: gst-launch links a source to the first one
 * its caps fit. */
static const P3dBevRenderInput template_order[P3D_BEV_RENDER_N_INPUTS] = {
  P3D_BEV_RENDER_INPUT_POINTS, P3D_BEV_RENDER_INPUT_VOXELS,
  P3D_BEV_RENDER_INPUT_FEATURES, P3D_BEV_RENDER_INPUT_BOXES,
};

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("video/x-raw, format = (string) RGBA, "
        "width = (int) [ 1, 16384 ], height = (int) [ 1, 16384 ], "
        "framerate = (fraction) [ 1/2147483647, 2147483647/1 ], "
        "pixel-aspect-ratio = (fraction) 1/1"));

#define P3D_TYPE_BEV_RENDER_COLOR_BY (p3d_bev_render_color_by_get_type ())
static GType
p3d_bev_render_color_by_get_type (void)
{
  static gsize type = 0;
  static const GEnumValue values[] = {
    {P3D_BEV_RENDER_COLOR_BY_HEIGHT, "Height (z), from blue at the low end "
          "of height-range to red at its high end", "height"},
    {P3D_BEV_RENDER_COLOR_BY_INTENSITY, "Intensity, through "
          "intensity-range (height for points without intensity)",
        "intensity"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dBevRenderColorBy", values);

    g_once_init_leave (&type, t);
  }
  return (GType) type;
}

/* The element. */

static void p3d_bev_render_child_proxy_init (gpointer g_iface,
    gpointer iface_data);

#define p3d_bev_render_parent_class parent_class
G_DEFINE_TYPE_WITH_CODE (P3dBevRender, p3d_bev_render, GST_TYPE_AGGREGATOR,
    G_IMPLEMENT_INTERFACE (GST_TYPE_CHILD_PROXY,
        p3d_bev_render_child_proxy_init));
GST_ELEMENT_REGISTER_DEFINE (bevrender, "bevrender", GST_RANK_NONE,
    P3D_TYPE_BEV_RENDER);

/* The sink pads as children, so that gst-launch can set a request pad's
 * properties ("bevrender name=r boxes_0::color=..."): gst_parse sets them
 * when the pad is requested, on the child-added signal. */

static GObject *
p3d_bev_render_child_proxy_get_child_by_index (GstChildProxy * proxy,
    guint index)
{
  GObject *child = NULL;

  GST_OBJECT_LOCK (proxy);
  child = g_list_nth_data (GST_ELEMENT_CAST (proxy)->sinkpads, index);
  if (child != NULL)
    gst_object_ref (child);
  GST_OBJECT_UNLOCK (proxy);
  return child;
}

static guint
p3d_bev_render_child_proxy_get_children_count (GstChildProxy * proxy)
{
  guint count;

  GST_OBJECT_LOCK (proxy);
  count = GST_ELEMENT_CAST (proxy)->numsinkpads;
  GST_OBJECT_UNLOCK (proxy);
  return count;
}

static void
p3d_bev_render_child_proxy_init (gpointer g_iface, gpointer iface_data)
{
  GstChildProxyInterface *iface = g_iface;

  iface->get_child_by_index = p3d_bev_render_child_proxy_get_child_by_index;
  iface->get_children_count = p3d_bev_render_child_proxy_get_children_count;
}

static GstPad *
p3d_bev_render_request_new_pad (GstElement * element, GstPadTemplate * templ,
    const gchar * req_name, const GstCaps * caps)
{
  GstPad *pad = GST_ELEMENT_CLASS (parent_class)->request_new_pad (element,
      templ, req_name, caps);

  if (pad != NULL) {
    p3d_object_watch_properties (G_OBJECT (pad), element);
    gst_child_proxy_child_added (GST_CHILD_PROXY (element), G_OBJECT (pad),
        GST_OBJECT_NAME (pad));
  }
  return pad;
}

static void
p3d_bev_render_release_pad (GstElement * element, GstPad * pad)
{
  gchar *name = gst_object_get_name (GST_OBJECT (pad));

  gst_object_ref (pad);
  GST_ELEMENT_CLASS (parent_class)->release_pad (element, pad);
  gst_child_proxy_child_removed (GST_CHILD_PROXY (element), G_OBJECT (pad),
      name);
  gst_object_unref (pad);
  g_free (name);
}

static void p3d_bev_render_finalize (GObject * object);
static void p3d_bev_render_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void p3d_bev_render_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static gboolean p3d_bev_render_start (GstAggregator * agg);
static gboolean p3d_bev_render_stop (GstAggregator * agg);
static GstFlowReturn p3d_bev_render_flush (GstAggregator * agg);
static GstAggregatorPad *p3d_bev_render_create_new_pad (GstAggregator * agg,
    GstPadTemplate * templ, const gchar * req_name, const GstCaps * caps);
static gboolean p3d_bev_render_sink_event (GstAggregator * agg,
    GstAggregatorPad * aggpad, GstEvent * event);
static gboolean p3d_bev_render_sink_query (GstAggregator * agg,
    GstAggregatorPad * aggpad, GstQuery * query);
static GstBuffer *p3d_bev_render_clip (GstAggregator * agg,
    GstAggregatorPad * aggpad, GstBuffer * buffer);
static GstFlowReturn p3d_bev_render_update_src_caps (GstAggregator * agg,
    GstCaps * caps, GstCaps ** ret);
static GstCaps *p3d_bev_render_fixate_src_caps (GstAggregator * agg,
    GstCaps * caps);
static gboolean p3d_bev_render_negotiated_src_caps (GstAggregator * agg,
    GstCaps * caps);
static gboolean p3d_bev_render_decide_allocation (GstAggregator * agg,
    GstQuery * query);
static GstClockTime p3d_bev_render_get_next_time (GstAggregator * agg);
static GstFlowReturn p3d_bev_render_aggregate (GstAggregator * agg,
    gboolean timeout);

static GParamSpec *
double_pair_spec (const gchar * name, const gchar * nick, const gchar * blurb)
{
  return gst_param_spec_array (name, nick, blurb,
      p3d_param_spec_double ("value", "Value", "One value", -G_MAXDOUBLE,
          G_MAXDOUBLE, 0.0, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS),
      G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
}

static void
p3d_bev_render_class_init (P3dBevRenderClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstAggregatorClass *agg_class = GST_AGGREGATOR_CLASS (klass);
  guint i;

  gobject_class->finalize = p3d_bev_render_finalize;
  gobject_class->set_property = p3d_bev_render_set_property;
  gobject_class->get_property = p3d_bev_render_get_property;

  g_object_class_install_property (gobject_class, PROP_RANGE,
      p3d_param_spec_double_array ("range", "Range",
          "The ground area drawn, in metres: \"<xmin,ymin,xmax,ymax>\", or "
          "\"<r>\" for <-r,-r,r,r> around the sensor; its centre is the "
          "image's centre (x forward is up, y left is left). Not set: the "
          "area of the voxels' and features' caps, else the KITTI "
          "PointPillars area below", -G_MAXDOUBLE, G_MAXDOUBLE));
  g_object_class_install_property (gobject_class, PROP_METRES_PER_PIXEL,
      p3d_param_spec_double ("metres-per-pixel", "Metres per pixel",
          "Ground size of a pixel; width or height left at 0 is then the "
          "range's extent at this scale. 0: the scale at which the range "
          "fits the width and height set (0.1 when neither is set)", 0.0,
          1e6, DEFAULT_METRES_PER_PIXEL, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_WIDTH,
      p3d_param_spec_int ("width", "Width",
          "Image width in pixels; 0: the range's extent along y at the scale "
          "(see metres-per-pixel)", 0, P3D_BEV_MAX_SIDE, DEFAULT_WIDTH,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_HEIGHT,
      p3d_param_spec_int ("height", "Height",
          "Image height in pixels; 0: the range's extent along x at the "
          "scale (see metres-per-pixel)", 0, P3D_BEV_MAX_SIDE, DEFAULT_HEIGHT,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_BACKGROUND_COLOR,
      p3d_param_spec_uint ("background-color", "Background color",
          "Background colour as 0xAARRGGBB (alpha too: 0x00000000 gives a "
          "transparent background for overlays)", 0, G_MAXUINT32,
          DEFAULT_BACKGROUND_COLOR, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_POINT_SIZE,
      p3d_param_spec_uint ("point-size", "Point size",
          "Side in pixels of the square drawn for a point", 1, MAX_POINT_SIZE,
          DEFAULT_POINT_SIZE, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_COLOR_BY,
      g_param_spec_enum ("color-by", "Color by",
          "What colours a point: its height or its intensity",
          P3D_TYPE_BEV_RENDER_COLOR_BY, DEFAULT_COLOR_BY, G_PARAM_READWRITE |
          G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_HEIGHT_RANGE,
      double_pair_spec ("height-range", "Height range",
          "color-by=height: the z (metres) coloured blue and the z coloured "
          "red, \"<low,high>\"; heights beyond are clamped"));
  g_object_class_install_property (gobject_class, PROP_INTENSITY_RANGE,
      double_pair_spec ("intensity-range", "Intensity range",
          "color-by=intensity: the intensities coloured blue and red, "
          "\"<low,high>\": <0,1> for KITTI, <0,255> for nuScenes"));
  g_object_class_install_property (gobject_class, PROP_SHOW_SCORES,
      g_param_spec_boolean ("show-scores", "Show scores",
          "Write each box's score (two decimals) beside it",
          DEFAULT_SHOW_SCORES, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_GRID_SPACING,
      p3d_param_spec_double ("grid-spacing", "Grid spacing",
          "Grid lines every this many metres along x and y, the two through "
          "the sensor brighter; 0: no grid", 0.0, 1e6, DEFAULT_GRID_SPACING,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));

  g_object_class_install_property (gobject_class, PROP_ANNOTATIONS,
      g_param_spec_boolean ("annotations", "Annotations",
          "Draw a metres scale (bottom left), a legend of the colours drawn "
          "(top left) and the sensor as an arrow head pointing to +x",
          DEFAULT_ANNOTATIONS, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_CLASS_NAMES,
      gst_param_spec_array ("class-names", "Class names",
          "The class of each box label from 0, for the legend: "
          "\"<car,pedestrian,cyclist>\" names label 0 car; not set: the "
          "names in the weights file, else \"label N\"",
          g_param_spec_string ("name", "Name", "One class name", NULL,
              G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS),
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_WEIGHTS,
      g_param_spec_string ("weights", "Weights",
          "A model's safetensors file (docs/weights.md) whose class names "
          "label the boxes in the legend, read when the element starts; "
          "class-names wins over it", NULL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_VOXELS_OFF_GRID,
      g_param_spec_uint64 ("voxels-off-grid", "Voxels off the grid",
          "Voxels and pillars not drawn since the start because their x, y "
          "or z coordinate lies outside the grid of their pad's caps "
          "(malformed input), each input buffer counted once; the first "
          "ones also post a warning", 0, G_MAXUINT64, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_set_static_metadata (element_class, "BEV renderer",
      "Converter/Video/Lidar",
      "Draws lidar points, voxel or pillar occupancy, BEV feature magnitude "
      "and 3D boxes, matched by timestamp, as a bird's-eye view in RGBA",
      "gst-perception developers");

  for (i = 0; i < P3D_BEV_RENDER_N_INPUTS; i++) {
    P3dBevRenderInput input = template_order[i];
    GstCaps *media_caps = gst_caps_from_string (inputs[input].caps);
    GstCaps *caps = p3d_caps_with_both_memories (media_caps, FALSE);

    gst_element_class_add_pad_template (element_class,
        gst_pad_template_new_with_gtype (inputs[input].name_template,
            GST_PAD_SINK, GST_PAD_REQUEST, caps, P3D_TYPE_BEV_RENDER_PAD));
    gst_caps_unref (caps);
    gst_caps_unref (media_caps);
  }
  gst_element_class_add_static_pad_template_with_gtype (element_class,
      &src_template, GST_TYPE_AGGREGATOR_PAD);

  element_class->request_new_pad =
      GST_DEBUG_FUNCPTR (p3d_bev_render_request_new_pad);
  element_class->release_pad = GST_DEBUG_FUNCPTR (p3d_bev_render_release_pad);
  agg_class->start = GST_DEBUG_FUNCPTR (p3d_bev_render_start);
  agg_class->stop = GST_DEBUG_FUNCPTR (p3d_bev_render_stop);
  agg_class->flush = GST_DEBUG_FUNCPTR (p3d_bev_render_flush);
  agg_class->create_new_pad = GST_DEBUG_FUNCPTR (p3d_bev_render_create_new_pad);
  agg_class->sink_event = GST_DEBUG_FUNCPTR (p3d_bev_render_sink_event);
  agg_class->sink_query = GST_DEBUG_FUNCPTR (p3d_bev_render_sink_query);
  agg_class->clip = GST_DEBUG_FUNCPTR (p3d_bev_render_clip);
  agg_class->update_src_caps =
      GST_DEBUG_FUNCPTR (p3d_bev_render_update_src_caps);
  agg_class->fixate_src_caps =
      GST_DEBUG_FUNCPTR (p3d_bev_render_fixate_src_caps);
  agg_class->negotiated_src_caps =
      GST_DEBUG_FUNCPTR (p3d_bev_render_negotiated_src_caps);
  agg_class->decide_allocation =
      GST_DEBUG_FUNCPTR (p3d_bev_render_decide_allocation);
  agg_class->get_next_time = GST_DEBUG_FUNCPTR (p3d_bev_render_get_next_time);
  agg_class->aggregate = GST_DEBUG_FUNCPTR (p3d_bev_render_aggregate);

  gst_type_mark_as_plugin_api (P3D_TYPE_BEV_RENDER_PAD, 0);
  gst_type_mark_as_plugin_api (P3D_TYPE_BEV_RENDER_COLOR_BY, 0);
  GST_DEBUG_CATEGORY_INIT (p3d_bev_render_debug, "bevrender", 0,
      "Bird's-eye view rendering");
}

static void
p3d_bev_render_init (P3dBevRender * self)
{
  memcpy (self->range, default_range, sizeof (self->range));
  self->metres_per_pixel = DEFAULT_METRES_PER_PIXEL;
  self->width = DEFAULT_WIDTH;
  self->height = DEFAULT_HEIGHT;
  self->background = DEFAULT_BACKGROUND_COLOR;
  self->point_size = DEFAULT_POINT_SIZE;
  self->color_by = DEFAULT_COLOR_BY;
  memcpy (self->height_range, default_height_range,
      sizeof (self->height_range));
  memcpy (self->intensity_range, default_intensity_range,
      sizeof (self->intensity_range));
  self->show_scores = DEFAULT_SHOW_SCORES;
  self->grid_spacing = DEFAULT_GRID_SPACING;
  self->annotations = DEFAULT_ANNOTATIONS;
  p3d_object_watch_properties (G_OBJECT (self), GST_ELEMENT (self));
  self->base_time = GST_CLOCK_TIME_NONE;
  gst_video_info_init (&self->out_info);
}

static void
p3d_bev_render_finalize (GObject * object)
{
  P3dBevRender *self = P3D_BEV_RENDER (object);

  g_free (self->magnitudes);
  g_strfreev (self->class_names);
  g_strfreev (self->weights_class_names);
  g_free (self->weights);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* range: four bounds, or one radius around the sensor. */
static void
set_range (P3dBevRender * self, const GValue * value)
{
  guint n = gst_value_array_get_size (value), i;
  gdouble values[4];

  if (n == 1) {
    gdouble radius = g_value_get_double (gst_value_array_get_value (value, 0));

    values[0] = values[1] = -radius;
    values[2] = values[3] = radius;
  } else if (n == 4) {
    for (i = 0; i < 4; i++)
      values[i] = g_value_get_double (gst_value_array_get_value (value, i));
  } else {
    gchar *why = g_strdup_printf ("needs 4 values <xmin,ymin,xmax,ymax> or "
        "1 <r>, got %u", n);

    /* as p3d_value_get_doubles: a GLib warning, which reaches the user,
     * and the element refuses to start */
    g_warning ("%s: range %s; the property keeps its value",
        GST_OBJECT_NAME (self), why);
    p3d_object_set_bad_value (G_OBJECT (self), "range", why);
    g_free (why);
    return;
  }
  p3d_object_set_bad_value (G_OBJECT (self), "range", NULL);
  memcpy (self->range, values, sizeof (values));
  self->range_set = TRUE;
}

/* A <low,high> pair, refused unless high > low. */
static void
set_value_range (P3dBevRender * self, const GValue * value,
    const gchar * name, gdouble * pair)
{
  gdouble parsed[2];

  if (!p3d_value_get_doubles (G_OBJECT (self), value, name, parsed, 2))
    return;
  if (!(parsed[1] > parsed[0]) || !isfinite (parsed[0])
      || !isfinite (parsed[1])) {
    gchar *why = g_strdup_printf ("<%g,%g>: the high end must be a finite "
        "number above the low end", parsed[0], parsed[1]);

    /* kept out, and the element refuses to start, or stops when playing */
    p3d_object_set_bad_value (G_OBJECT (self), name, why);
    g_free (why);
    return;
  }
  memcpy (pair, parsed, sizeof (parsed));
}

static void
p3d_bev_render_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dBevRender *self = P3D_BEV_RENDER (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_RANGE:
      set_range (self, value);
      break;
    case PROP_METRES_PER_PIXEL:
      self->metres_per_pixel = g_value_get_double (value);
      break;
    case PROP_WIDTH:
      self->width = g_value_get_int (value);
      break;
    case PROP_HEIGHT:
      self->height = g_value_get_int (value);
      break;
    case PROP_BACKGROUND_COLOR:
      self->background = g_value_get_uint (value);
      break;
    case PROP_POINT_SIZE:
      self->point_size = g_value_get_uint (value);
      break;
    case PROP_COLOR_BY:
      self->color_by = g_value_get_enum (value);
      break;
    case PROP_HEIGHT_RANGE:
      set_value_range (self, value, "height-range", self->height_range);
      break;
    case PROP_INTENSITY_RANGE:
      set_value_range (self, value, "intensity-range", self->intensity_range);
      break;
    case PROP_SHOW_SCORES:
      self->show_scores = g_value_get_boolean (value);
      break;
    case PROP_GRID_SPACING:
      self->grid_spacing = g_value_get_double (value);
      break;
    case PROP_ANNOTATIONS:
      self->annotations = g_value_get_boolean (value);
      break;
    case PROP_CLASS_NAMES:{
      guint n = gst_value_array_get_size (value), i;

      g_strfreev (self->class_names);
      self->class_names = n > 0 ? g_new0 (gchar *, n + 1) : NULL;
      for (i = 0; i < n; i++)
        self->class_names[i] =
            g_value_dup_string (gst_value_array_get_value (value, i));
      break;
    }
    case PROP_WEIGHTS:
      g_free (self->weights);
      self->weights = g_value_dup_string (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
p3d_bev_render_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  P3dBevRender *self = P3D_BEV_RENDER (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_RANGE:
      p3d_value_set_doubles (value, self->range, 4);
      break;
    case PROP_METRES_PER_PIXEL:
      g_value_set_double (value, self->metres_per_pixel);
      break;
    case PROP_WIDTH:
      g_value_set_int (value, self->width);
      break;
    case PROP_HEIGHT:
      g_value_set_int (value, self->height);
      break;
    case PROP_BACKGROUND_COLOR:
      g_value_set_uint (value, self->background);
      break;
    case PROP_POINT_SIZE:
      g_value_set_uint (value, self->point_size);
      break;
    case PROP_COLOR_BY:
      g_value_set_enum (value, self->color_by);
      break;
    case PROP_HEIGHT_RANGE:
      p3d_value_set_doubles (value, self->height_range, 2);
      break;
    case PROP_INTENSITY_RANGE:
      p3d_value_set_doubles (value, self->intensity_range, 2);
      break;
    case PROP_SHOW_SCORES:
      g_value_set_boolean (value, self->show_scores);
      break;
    case PROP_GRID_SPACING:
      g_value_set_double (value, self->grid_spacing);
      break;
    case PROP_ANNOTATIONS:
      g_value_set_boolean (value, self->annotations);
      break;
    case PROP_VOXELS_OFF_GRID:
      g_value_set_uint64 (value, self->voxels_off_grid);
      break;
    case PROP_CLASS_NAMES:{
      guint i;

      for (i = 0; self->class_names && self->class_names[i]; i++) {
        GValue name = G_VALUE_INIT;

        g_value_init (&name, G_TYPE_STRING);
        g_value_set_string (&name, self->class_names[i]);
        gst_value_array_append_and_take_value (value, &name);
      }
      break;
    }
    case PROP_WEIGHTS:
      g_value_set_string (value, self->weights);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static gpointer
ref_pad (gconstpointer pad, gpointer unused)
{
  return gst_object_ref ((gpointer) pad);
}

/* The sink pads, each with a reference (free with
 * g_list_free_full (pads, gst_object_unref)). */
static GList *
get_sink_pads (P3dBevRender * self)
{
  GList *pads;

  GST_OBJECT_LOCK (self);
  pads = g_list_copy_deep (GST_ELEMENT (self)->sinkpads, ref_pad, NULL);
  GST_OBJECT_UNLOCK (self);
  return pads;
}

static void
forget_all_buffers (P3dBevRender * self)
{
  GList *pads = get_sink_pads (self), *l;

  for (l = pads; l != NULL; l = l->next)
    p3d_bev_render_pad_forget (P3D_BEV_RENDER_PAD (l->data));
  g_list_free_full (pads, gst_object_unref);
}

/* The class names of the weights property's model, for the legend. */
static gboolean
load_class_names (P3dBevRender * self)
{
  GError *error = NULL;
  P3dWeights *weights;
  gchar *path, **names = NULL;

  GST_OBJECT_LOCK (self);
  path = g_strdup (self->weights);
  g_clear_pointer (&self->weights_class_names, g_strfreev);
  GST_OBJECT_UNLOCK (self);
  if (path == NULL)
    return TRUE;
  weights = p3d_weights_open (path, &error);
  if (weights != NULL)
    names = p3d_model_read_class_names (weights, &error);
  if (names == NULL) {
    if (g_error_matches (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_OPEN))
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("Cannot read weights file %s (property weights)", path),
          ("%s", error->message));
    else
      GST_ELEMENT_ERROR (self, STREAM, DECODE,
          ("Cannot read class names from weights file %s (property "
              "weights): %s", path, error->message), (NULL));
  }
  GST_OBJECT_LOCK (self);
  self->weights_class_names = names;
  GST_OBJECT_UNLOCK (self);
  g_clear_error (&error);
  p3d_weights_free (weights);
  g_free (path);
  return names != NULL;
}

/* The element's properties and its pads' (p3dparamspec.h). */
static gboolean
check_properties (P3dBevRender * self)
{
  GstIterator *it;
  GValue item = G_VALUE_INIT;
  gboolean ok, done = FALSE;

  ok = p3d_element_check_properties (GST_ELEMENT (self));
  it = gst_element_iterate_sink_pads (GST_ELEMENT (self));
  while (ok && !done) {
    switch (gst_iterator_next (it, &item)) {
      case GST_ITERATOR_OK:
        ok = p3d_object_check_properties (g_value_get_object (&item),
            GST_ELEMENT (self));
        g_value_reset (&item);
        break;
      case GST_ITERATOR_RESYNC:
        gst_iterator_resync (it);
        break;
      default:
        done = TRUE;
        break;
    }
  }
  g_value_unset (&item);
  gst_iterator_free (it);
  return ok;
}

static gboolean
p3d_bev_render_start (GstAggregator * agg)
{
  P3dBevRender *self = P3D_BEV_RENDER (agg);
  gdouble range[4], metres_per_pixel;
  gint width, height;
  P3dBevView view;
  gchar *why = NULL;
  guint n_inputs;

  if (!check_properties (self))
    return FALSE;
  GST_OBJECT_LOCK (self);
  n_inputs = GST_ELEMENT (self)->numsinkpads;
  GST_OBJECT_UNLOCK (self);
  /* the aggregator would wait for ever for input that cannot come */
  if (n_inputs == 0) {
    GST_ELEMENT_ERROR (self, CORE, PAD,
        ("bevrender has no input: link a source to one of its request pads "
            "points_%%u, voxels_%%u, features_%%u or boxes_%%u (in "
            "gst-launch-1.0: name the element, r, and link ... ! r.points_0)"),
        ("no sink pad was requested before the element started"));
    return FALSE;
  }
  if (!load_class_names (self))
    return FALSE;
  GST_OBJECT_LOCK (self);
  memcpy (range, self->range, sizeof (range));
  metres_per_pixel = self->metres_per_pixel;
  width = self->width;
  height = self->height;
  GST_OBJECT_UNLOCK (self);

  /* Refuse bad geometry here, with the values, rather than as a failed
   * negotiation later. */
  if (!p3d_bev_view_init (&view, range, metres_per_pixel, width, height, &why)) {
    GST_ELEMENT_ERROR (self, LIBRARY, SETTINGS,
        ("Invalid bevrender geometry: %s", why),
        ("range <%g, %g, %g, %g>, metres-per-pixel %g, width %d, height %d",
            range[0], range[1], range[2], range[3], metres_per_pixel, width,
            height));
    g_free (why);
    return FALSE;
  }
  GST_INFO_OBJECT (self, "%d x %d pixels at %g m per pixel, top edge x = %g, "
      "left edge y = %g", view.width, view.height, view.metres_per_pixel,
      view.top, view.left);
  memcpy (self->view_range, range, sizeof (range));
  self->view = view;
  gst_video_info_init (&self->out_info);
  self->fps_n = 0;
  self->fps_d = 1;
  self->base_time = GST_CLOCK_TIME_NONE;
  self->frame_index = 0;
  GST_OBJECT_LOCK (self);
  self->voxels_off_grid = 0;
  self->warned_off_grid = FALSE;
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

static gboolean
p3d_bev_render_stop (GstAggregator * agg)
{
  P3dBevRender *self = P3D_BEV_RENDER (agg);
  GList *pads = get_sink_pads (self), *l;

  /* a restart negotiates again; a flush keeps the caps */
  for (l = pads; l != NULL; l = l->next) {
    P3dBevRenderPad *pad = l->data;

    p3d_bev_render_pad_forget (pad);
    pad->negotiated = FALSE;
    pad->warned_no_intensity = FALSE;
  }
  g_list_free_full (pads, gst_object_unref);
  g_clear_pointer (&self->magnitudes, g_free);
  self->n_magnitudes = 0;
  return TRUE;
}

static GstFlowReturn
p3d_bev_render_flush (GstAggregator * agg)
{
  P3dBevRender *self = P3D_BEV_RENDER (agg);

  forget_all_buffers (self);
  self->base_time = GST_CLOCK_TIME_NONE;
  self->frame_index = 0;
  return GST_FLOW_OK;
}

static GstAggregatorPad *
p3d_bev_render_create_new_pad (GstAggregator * agg, GstPadTemplate * templ,
    const gchar * req_name, const GstCaps * caps)
{
  P3dBevRender *self = P3D_BEV_RENDER (agg);
  P3dBevRenderPad *pad;
  GstPad *existing;
  const gchar *prefix;
  gchar *name = NULL;
  guint input, serial;

  for (input = 0; input < P3D_BEV_RENDER_N_INPUTS; input++)
    if (g_strcmp0 (GST_PAD_TEMPLATE_NAME_TEMPLATE (templ),
            inputs[input].name_template) == 0)
      break;
  if (input == P3D_BEV_RENDER_N_INPUTS
      || GST_PAD_TEMPLATE_DIRECTION (templ) != GST_PAD_SINK) {
    GST_WARNING_OBJECT (self, "no sink pad template %s",
        GST_PAD_TEMPLATE_NAME_TEMPLATE (templ));
    return NULL;
  }
  prefix = inputs[input].prefix;

  GST_OBJECT_LOCK (self);
  if (req_name != NULL && g_str_has_prefix (req_name, prefix)
      && strchr (req_name, '%') == NULL) {
    gchar *end = NULL;
    guint64 number = g_ascii_strtoull (req_name + strlen (prefix), &end, 10);

    if (end == NULL || *end != '\0' || end == req_name + strlen (prefix)
        || number > G_MAXUINT - 1) {
      GST_OBJECT_UNLOCK (self);
      GST_WARNING_OBJECT (self, "bad pad name %s: want %s<number>", req_name,
          prefix);
      return NULL;
    }
    serial = (guint) number;
    self->next_serial[input] = MAX (self->next_serial[input], serial + 1);
  } else {
    serial = self->next_serial[input]++;
  }
  GST_OBJECT_UNLOCK (self);

  name = g_strdup_printf ("%s%u", prefix, serial);
  existing = gst_element_get_static_pad (GST_ELEMENT (self), name);
  if (existing != NULL) {
    GST_WARNING_OBJECT (self, "pad %s exists already", name);
    gst_object_unref (existing);
    g_free (name);
    return NULL;
  }
  pad = g_object_new (P3D_TYPE_BEV_RENDER_PAD, "name", name, "direction",
      GST_PAD_SINK, "template", templ, NULL);
  pad->input = (P3dBevRenderInput) input;
  g_free (name);
  return GST_AGGREGATOR_PAD (pad);
}

/* The output framerate the inputs ask for: the highest in their caps,
 * DEFAULT_FPS_N / DEFAULT_FPS_D when none has one. */
static void
preferred_framerate (P3dBevRender * self, gint * fps_n, gint * fps_d)
{
  GList *l;

  *fps_n = 0;
  *fps_d = 1;
  GST_OBJECT_LOCK (self);
  for (l = GST_ELEMENT (self)->sinkpads; l != NULL; l = l->next) {
    P3dBevRenderPad *pad = l->data;

    if (pad->negotiated && pad->format.fps_n > 0 && pad->format.fps_d > 0
        && gst_util_fraction_compare (pad->format.fps_n, pad->format.fps_d,
            *fps_n, *fps_d) > 0) {
      *fps_n = pad->format.fps_n;
      *fps_d = pad->format.fps_d;
    }
  }
  GST_OBJECT_UNLOCK (self);
  if (*fps_n == 0) {
    *fps_n = DEFAULT_FPS_N;
    *fps_d = DEFAULT_FPS_D;
  }
}

static gboolean
p3d_bev_render_sink_event (GstAggregator * agg, GstAggregatorPad * aggpad,
    GstEvent * event)
{
  P3dBevRender *self = P3D_BEV_RENDER (agg);
  P3dBevRenderPad *pad = P3D_BEV_RENDER_PAD (aggpad);

  if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS) {
    P3dBevRenderFormat format;
    GstCaps *caps;
    gboolean ok;
    gint fps_n, fps_d;

    gst_event_parse_caps (event, &caps);
    ok = p3d_bev_render_format_from_caps (pad->input, caps, &format);
    if (ok) {
      GST_DEBUG_OBJECT (pad, "caps %" GST_PTR_FORMAT, caps);
      pad->format = format;
      pad->negotiated = TRUE;
      /* a new input framerate may change the output's */
      preferred_framerate (self, &fps_n, &fps_d);
      if (self->fps_n > 0 && (fps_n != self->fps_n || fps_d != self->fps_d))
        gst_pad_mark_reconfigure (GST_AGGREGATOR_SRC_PAD (self));
      /* so may the range they cover, when it decides what is drawn */
      if (pad->input == P3D_BEV_RENDER_INPUT_VOXELS
          || pad->input == P3D_BEV_RENDER_INPUT_FEATURES)
        gst_pad_mark_reconfigure (GST_AGGREGATOR_SRC_PAD (self));
    } else {
      GST_WARNING_OBJECT (pad, "refused caps %" GST_PTR_FORMAT " (the "
          "p3dcaps debug category says why)", caps);
      pad->negotiated = FALSE;
    }
    /* our caps are not the output's: never forwarded */
    gst_event_unref (event);
    return ok;
  }
  return GST_AGGREGATOR_CLASS (parent_class)->sink_event (agg, aggpad, event);
}

static gboolean
p3d_bev_render_sink_query (GstAggregator * agg, GstAggregatorPad * aggpad,
    GstQuery * query)
{
  P3dBevRenderPad *pad = P3D_BEV_RENDER_PAD (aggpad);

  if (GST_QUERY_TYPE (query) == GST_QUERY_ACCEPT_CAPS) {
    GstCaps *caps, *template_caps;
    P3dBevRenderFormat format;
    gboolean ok;

    /* the template, and caps the input can be drawn from (sizes, fields),
     * so that bad caps are refused before they are sent */
    gst_query_parse_accept_caps (query, &caps);
    template_caps = gst_pad_get_pad_template_caps (GST_PAD (aggpad));
    ok = gst_caps_is_subset (caps, template_caps)
        && p3d_bev_render_format_from_caps (pad->input, caps, &format);
    gst_caps_unref (template_caps);
    if (!ok)
      GST_DEBUG_OBJECT (pad, "refused caps %" GST_PTR_FORMAT, caps);
    gst_query_set_accept_caps_result (query, ok);
    return TRUE;
  }
  return GST_AGGREGATOR_CLASS (parent_class)->sink_query (agg, aggpad, query);
}

/* A buffer outside its time segment is dropped, as any element clips. */
static GstBuffer *
p3d_bev_render_clip (GstAggregator * agg, GstAggregatorPad * aggpad,
    GstBuffer * buffer)
{
  GstClockTime pts = GST_BUFFER_PTS (buffer);
  gboolean outside;

  if (!GST_CLOCK_TIME_IS_VALID (pts))
    return buffer;
  GST_OBJECT_LOCK (aggpad);
  outside = aggpad->segment.format == GST_FORMAT_TIME
      && !GST_CLOCK_TIME_IS_VALID (gst_segment_to_running_time
      (&aggpad->segment, GST_FORMAT_TIME, pts));
  GST_OBJECT_UNLOCK (aggpad);
  if (outside) {
    GST_LOG_OBJECT (aggpad, "dropping %" GST_PTR_FORMAT ": outside the "
        "segment", buffer);
    gst_buffer_unref (buffer);
    return NULL;
  }
  return buffer;
}

/* The range drawn: the range property when it was set, else the smallest
 * that holds the ranges of the voxels' and features' caps (what the
 * pipeline processes), else the default range. */
static void
choose_range (P3dBevRender * self, gdouble range[4])
{
  gboolean found = FALSE;
  GList *pads, *l;

  GST_OBJECT_LOCK (self);
  memcpy (range, self->range, 4 * sizeof (gdouble));
  if (self->range_set) {
    GST_OBJECT_UNLOCK (self);
    return;
  }
  GST_OBJECT_UNLOCK (self);
  pads = get_sink_pads (self);
  for (l = pads; l != NULL; l = l->next) {
    gdouble pad_range[4];

    if (!p3d_bev_render_pad_get_range (l->data, pad_range))
      continue;
    if (!found) {
      memcpy (range, pad_range, sizeof (pad_range));
      found = TRUE;
    } else {
      range[0] = MIN (range[0], pad_range[0]);
      range[1] = MIN (range[1], pad_range[1]);
      range[2] = MAX (range[2], pad_range[2]);
      range[3] = MAX (range[3], pad_range[3]);
    }
  }
  g_list_free_full (pads, gst_object_unref);
}

static GstFlowReturn
p3d_bev_render_update_src_caps (GstAggregator * agg, GstCaps * caps,
    GstCaps ** ret)
{
  P3dBevRender *self = P3D_BEV_RENDER (agg);
  gdouble range[4], metres_per_pixel;
  gint width, height;
  gchar *why = NULL;
  GstCaps *ours;

  choose_range (self, range);
  GST_OBJECT_LOCK (self);
  metres_per_pixel = self->metres_per_pixel;
  width = self->width;
  height = self->height;
  GST_OBJECT_UNLOCK (self);
  if (!p3d_bev_view_init (&self->view, range, metres_per_pixel, width,
          height, &why)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Invalid bevrender geometry for the inputs' range: %s", why),
        ("range <%g, %g, %g, %g> (from the caps), metres-per-pixel %g, "
            "width %d, height %d; set range", range[0], range[1], range[2],
            range[3], metres_per_pixel, width, height));
    g_free (why);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  memcpy (self->view_range, range, sizeof (range));
  GST_INFO_OBJECT (self, "range <%g, %g, %g, %g>: %d x %d pixels at %g m "
      "per pixel", range[0], range[1], range[2], range[3], self->view.width,
      self->view.height, self->view.metres_per_pixel);

  /* the size is the properties'; the framerate is fixated later */
  ours = gst_caps_new_simple ("video/x-raw",
      "format", G_TYPE_STRING, "RGBA",
      "width", G_TYPE_INT, self->view.width,
      "height", G_TYPE_INT, self->view.height,
      "framerate", GST_TYPE_FRACTION_RANGE, 1, G_MAXINT, G_MAXINT, 1,
      "pixel-aspect-ratio", GST_TYPE_FRACTION, 1, 1, NULL);
  *ret = gst_caps_intersect_full (caps, ours, GST_CAPS_INTERSECT_FIRST);
  gst_caps_unref (ours);
  if (gst_caps_is_empty (*ret)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Downstream does not accept RGBA video of %d x %d pixels",
            self->view.width, self->view.height),
        ("downstream caps %" GST_PTR_FORMAT "; set width, height or "
            "metres-per-pixel to a size it takes", caps));
    gst_caps_replace (ret, NULL);
    return GST_FLOW_NOT_NEGOTIATED;
  }
  return GST_FLOW_OK;
}

static GstCaps *
p3d_bev_render_fixate_src_caps (GstAggregator * agg, GstCaps * caps)
{
  P3dBevRender *self = P3D_BEV_RENDER (agg);
  GstStructure *s;
  gint fps_n, fps_d;

  preferred_framerate (self, &fps_n, &fps_d);
  caps = gst_caps_truncate (gst_caps_make_writable (caps));
  s = gst_caps_get_structure (caps, 0);
  gst_structure_fixate_field_nearest_fraction (s, "framerate", fps_n, fps_d);
  return gst_caps_fixate (caps);
}

/* Running time at which frame @index starts. */
static GstClockTime
frame_start (P3dBevRender * self, guint64 index)
{
  return self->base_time + gst_util_uint64_scale (index,
      (guint64) self->fps_d * GST_SECOND, (guint64) self->fps_n);
}

static gboolean
p3d_bev_render_negotiated_src_caps (GstAggregator * agg, GstCaps * caps)
{
  P3dBevRender *self = P3D_BEV_RENDER (agg);
  GstVideoInfo info;
  GstClockTime duration;

  if (!gst_video_info_from_caps (&info, caps)
      || GST_VIDEO_INFO_FORMAT (&info) != GST_VIDEO_FORMAT_RGBA
      || GST_VIDEO_INFO_WIDTH (&info) != self->view.width
      || GST_VIDEO_INFO_HEIGHT (&info) != self->view.height
      || GST_VIDEO_INFO_FPS_N (&info) <= 0
      || GST_VIDEO_INFO_FPS_D (&info) <= 0) {
    GST_WARNING_OBJECT (self, "cannot draw into %" GST_PTR_FORMAT, caps);
    return FALSE;
  }
  /* a new rate: the frames go on from where they are */
  if (GST_CLOCK_TIME_IS_VALID (self->base_time) && self->fps_n > 0
      && (info.fps_n != self->fps_n || info.fps_d != self->fps_d)) {
    self->base_time = frame_start (self, self->frame_index);
    self->frame_index = 0;
  }
  self->out_info = info;
  self->fps_n = info.fps_n;
  self->fps_d = info.fps_d;
  /* frame n is drawn once the buffers before its end are in */
  duration = gst_util_uint64_scale_int (GST_SECOND, info.fps_d, info.fps_n);
  gst_aggregator_set_latency (agg, duration, duration);
  GST_INFO_OBJECT (self, "output %" GST_PTR_FORMAT, caps);
  return GST_AGGREGATOR_CLASS (parent_class)->negotiated_src_caps (agg, caps);
}

/* Downstream's video pool when it offers one (a sink's own memory saves a
 * copy), with the video meta when downstream reads it, since the drawing
 * honours the plane stride of the frame it maps; else a video pool of our
 * own. At least two buffers: one drawn while downstream holds the other. */
static gboolean
p3d_bev_render_decide_allocation (GstAggregator * agg, GstQuery * query)
{
  P3dBevRender *self = P3D_BEV_RENDER (agg);
  GstBufferPool *pool = NULL;
  GstStructure *config;
  GstCaps *caps = NULL;
  GstVideoInfo info;
  guint size = 0, min = 0, max = 0;
  gboolean offered, video_meta;

  gst_query_parse_allocation (query, &caps, NULL);
  if (caps == NULL || !gst_video_info_from_caps (&info, caps)) {
    GST_WARNING_OBJECT (self, "allocation query without video caps");
    return FALSE;
  }
  offered = gst_query_get_n_allocation_pools (query) > 0;
  if (offered)
    gst_query_parse_nth_allocation_pool (query, 0, &pool, &size, &min, &max);
  size = MAX (size, (guint) GST_VIDEO_INFO_SIZE (&info));
  min = MAX (min, 2);
  if (max != 0 && max < min)
    max = min;
  video_meta = gst_query_find_allocation_meta (query, GST_VIDEO_META_API_TYPE,
      NULL);

  if (pool != NULL) {
    config = gst_buffer_pool_get_config (pool);
    gst_buffer_pool_config_set_params (config, caps, size, min, max);
    if (video_meta && gst_buffer_pool_has_option (pool,
            GST_BUFFER_POOL_OPTION_VIDEO_META))
      gst_buffer_pool_config_add_option (config,
          GST_BUFFER_POOL_OPTION_VIDEO_META);
    /* a pool that changes the configuration, or refuses it, is not used */
    if (!gst_buffer_pool_set_config (pool, config)) {
      GST_DEBUG_OBJECT (self, "downstream's pool %" GST_PTR_FORMAT " refused "
          "its configuration; using our own", pool);
      gst_clear_object (&pool);
    } else {
      GST_DEBUG_OBJECT (self, "using downstream's pool %" GST_PTR_FORMAT, pool);
    }
  }
  if (pool == NULL) {
    pool = gst_video_buffer_pool_new ();
    config = gst_buffer_pool_get_config (pool);
    gst_buffer_pool_config_set_params (config, caps, size, min, max);
    if (video_meta)
      gst_buffer_pool_config_add_option (config,
          GST_BUFFER_POOL_OPTION_VIDEO_META);
    if (!gst_buffer_pool_set_config (pool, config)) {
      GST_WARNING_OBJECT (self, "video buffer pool refused its configuration");
      gst_object_unref (pool);
      return FALSE;
    }
  }
  if (offered)
    gst_query_set_nth_allocation_pool (query, 0, pool, size, min, max);
  else
    gst_query_add_allocation_pool (query, pool, size, min, max);
  gst_object_unref (pool);
  return TRUE;
}

static GstClockTime
p3d_bev_render_get_next_time (GstAggregator * agg)
{
  P3dBevRender *self = P3D_BEV_RENDER (agg);

  /* live: frame n is made when the clock passes its end (plus latency) */
  if (!GST_CLOCK_TIME_IS_VALID (self->base_time) || self->fps_n <= 0)
    return GST_CLOCK_TIME_NONE;
  return frame_start (self, self->frame_index + 1);
}

/* What the drawing of one frame reads from the properties. */
typedef struct
{
  P3dColor background;
  guint point_size;
  P3dBevRenderColorBy color_by;
  gdouble height_range[2];
  gdouble intensity_range[2];
  gboolean show_scores;
  gdouble grid_spacing;
  gboolean annotations;
  /* a copy: the property may change while the frame is drawn */
  gchar **class_names;
} RenderSettings;

static void
read_settings (P3dBevRender * self, RenderSettings * settings)
{
  GST_OBJECT_LOCK (self);
  settings->background = self->background;
  settings->point_size = self->point_size;
  settings->color_by = self->color_by;
  memcpy (settings->height_range, self->height_range,
      sizeof (settings->height_range));
  memcpy (settings->intensity_range, self->intensity_range,
      sizeof (settings->intensity_range));
  settings->show_scores = self->show_scores;
  settings->grid_spacing = self->grid_spacing;
  settings->annotations = self->annotations;
  settings->class_names = g_strdupv (self->class_names ? self->class_names :
      self->weights_class_names);
  GST_OBJECT_UNLOCK (self);
}

static void
draw_points (P3dBevRender * self, P3dBevRenderPad * pad,
    P3dBevPicture * picture, const RenderSettings * settings,
    const P3dTensorMap * map)
{
  const P3dPointCloudInfo *info = &pad->current_format.points;
  P3dBevPointsLayer layer;

  layer.data = map->data[0];
  layer.size = map->size[0];
  layer.stride = P3D_POINT_CLOUD_INFO_STRIDE (info);
  layer.intensity_channel = info->finfo->intensity;
  layer.by_intensity = settings->color_by == P3D_BEV_RENDER_COLOR_BY_INTENSITY;
  memcpy (layer.height_range, settings->height_range,
      sizeof (layer.height_range));
  memcpy (layer.intensity_range, settings->intensity_range,
      sizeof (layer.intensity_range));
  layer.point_size = settings->point_size;
  if (!p3d_bev_picture_draw_points (picture, &layer)
      && !pad->warned_no_intensity) {
    GST_WARNING_OBJECT (pad, "points of format %s have no intensity: "
        "coloured by height", info->finfo->name);
    pad->warned_no_intensity = TRUE;
  }
}

/* Counts the @outside voxels of a pad's new buffer that lie off @grid;
 * warns about the first ones since the start, so that a user sees that the
 * input is malformed without a warning a frame. */
static void
count_off_grid (P3dBevRender * self, P3dBevRenderPad * pad, guint outside,
    const P3dVoxelGrid * grid)
{
  gboolean warn;

  if (outside == 0)
    return;
  GST_OBJECT_LOCK (self);
  self->voxels_off_grid += outside;
  warn = !self->warned_off_grid;
  self->warned_off_grid = TRUE;
  GST_OBJECT_UNLOCK (self);
  GST_DEBUG_OBJECT (pad, "%u voxels with coordinates outside the grid "
      "%u x %u x %u not drawn", outside, grid->grid[0], grid->grid[1],
      grid->grid[2]);
  if (warn)
    GST_ELEMENT_WARNING (self, STREAM, FORMAT,
        ("%u voxels on pad %s lie outside the %u x %u x %u grid of their "
            "caps and were not drawn", outside, GST_PAD_NAME (pad),
            grid->grid[0], grid->grid[1], grid->grid[2]),
        ("their coordinates are not voxelize's for these caps; later ones "
            "are counted in voxels-off-grid without a warning"));
}

static GstFlowReturn
draw_voxels (P3dBevRender * self, P3dBevRenderPad * pad,
    P3dBevPicture * picture, const P3dTensorMap * map)
{
  const P3dBevRenderFormat *format = &pad->current_format;
  const P3dVoxelGrid *grid = format->pillars ?
      &format->pillar_features.grid : &format->voxels.grid;
  guint max_voxels = format->pillars ? format->pillar_features.max_voxels :
      format->voxels.max_voxels;
  P3dBevVoxelCells cells;
  guint outside;

  memcpy (&cells.count, map->data[format->pillars ? P3D_PILLARS_TENSOR_COUNT :
          P3D_VOXELS_TENSOR_COUNT], sizeof (cells.count));
  if (cells.count > max_voxels) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Voxel count %u on pad %s is more than max-voxels %u", cells.count,
            GST_PAD_NAME (pad), max_voxels), (NULL));
    return GST_FLOW_ERROR;
  }
  cells.coords = map->data[format->pillars ? P3D_PILLARS_TENSOR_COORDS :
      P3D_VOXELS_TENSOR_COORDS];
  cells.num_points = format->pillars ? NULL :
      map->data[P3D_VOXELS_TENSOR_NUM_POINTS];
  cells.columns = grid->grid[0];
  cells.rows = grid->grid[1];
  cells.layers = grid->grid[2];
  cells.x0 = grid->range[0];
  cells.y0 = grid->range[1];
  cells.x_step = grid->voxel_size[0];
  cells.y_step = grid->voxel_size[1];
  outside = p3d_bev_picture_draw_voxels (picture, &cells, format->pillars);
  if (!pad->current_counted) {
    pad->current_counted = TRUE;
    count_off_grid (self, pad, outside, grid);
  }
  return GST_FLOW_OK;
}

static void
draw_features (P3dBevRender * self, P3dBevRenderPad * pad,
    P3dBevPicture * picture, const P3dTensorMap * map)
{
  const P3dBevFeaturesInfo *info = &pad->current_format.features;
  gsize n_cells = (gsize) info->width * info->height;
  P3dBevFeaturesLayer layer;

  layer.data = map->data[P3D_BEV_FEATURES_TENSOR_FEATURES];
  layer.channels = info->channels;
  layer.width = info->width;
  layer.height = info->height;
  layer.half = info->format == P3D_DATA_FORMAT_F16;
  layer.rows_along_x = info->layout == P3D_BEV_FEATURES_LAYOUT_XY;
  /* without a range in the caps, the grid covers the range drawn */
  if (info->has_range) {
    layer.range[0] = info->range[0];
    layer.range[1] = info->range[1];
    layer.range[2] = info->range[3];
    layer.range[3] = info->range[4];
  } else {
    memcpy (layer.range, self->view_range, sizeof (layer.range));
  }
  if (self->n_magnitudes < n_cells) {
    g_free (self->magnitudes);
    self->magnitudes = g_new (gfloat, n_cells);
    self->n_magnitudes = n_cells;
  }
  layer.magnitudes = self->magnitudes;
  p3d_bev_picture_draw_features (picture, &layer);
}

static GstFlowReturn
draw_boxes (P3dBevRender * self, P3dBevRenderPad * pad,
    P3dBevPicture * picture, const RenderSettings * settings,
    const P3dTensorMap * map)
{
  guint max_boxes = pad->current_format.boxes.max_boxes;
  P3dBevBoxStyle style;
  gchar *caption;
  guint32 count;

  memcpy (&count, map->data[P3D_BOXES_TENSOR_COUNT], sizeof (count));
  if (count > max_boxes) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Box count %u on pad %s is more than max-boxes %u", count,
            GST_PAD_NAME (pad), max_boxes), (NULL));
    return GST_FLOW_ERROR;
  }
  GST_OBJECT_LOCK (pad);
  style.color = pad->box_color;
  style.line_width = pad->line_width;
  style.show_scores = settings->show_scores && pad->show_scores;
  style.class_names = (const gchar * const *) settings->class_names;
  caption = g_strdup (pad->caption != NULL ? pad->caption : GST_PAD_NAME (pad));
  GST_OBJECT_UNLOCK (pad);
  /* the property is RGB: boxes are opaque */
  if (style.color != 0)
    style.color |= 0xff000000u;
  p3d_bev_picture_draw_boxes (picture, map->data[P3D_BOXES_TENSOR_RECORDS],
      count, &style, caption);
  g_free (caption);
  return GST_FLOW_OK;
}

/* Draws the buffer of @pad; host maps download CUDA memory. */
static GstFlowReturn
draw_input (P3dBevRender * self, P3dBevRenderPad * pad,
    P3dBevPicture * picture, const RenderSettings * settings)
{
  GstFlowReturn ret = GST_FLOW_OK;
  P3dTensorMap map;
  gchar *why = NULL;

  if (!p3d_tensor_map (&map, pad->current, &pad->current_format.layout,
          GST_MAP_READ, &why)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Cannot read the buffer of pad %s", GST_PAD_NAME (pad)), ("%s", why));
    g_free (why);
    return GST_FLOW_ERROR;
  }
  switch (pad->input) {
    case P3D_BEV_RENDER_INPUT_POINTS:
      draw_points (self, pad, picture, settings, &map);
      break;
    case P3D_BEV_RENDER_INPUT_VOXELS:
      ret = draw_voxels (self, pad, picture, &map);
      break;
    case P3D_BEV_RENDER_INPUT_FEATURES:
      draw_features (self, pad, picture, &map);
      break;
    case P3D_BEV_RENDER_INPUT_BOXES:
      ret = draw_boxes (self, pad, picture, settings, &map);
      break;
    default:
      break;
  }
  p3d_tensor_unmap (&map);
  return ret;
}

/* Draws every layer into @frame. */
static GstFlowReturn
draw_frame (P3dBevRender * self, GList * pads, GstVideoFrame * frame)
{
  RenderSettings settings;
  P3dBevPicture picture;
  guint layer;
  GList *l;

  read_settings (self, &settings);
  picture.canvas.pixels = GST_VIDEO_FRAME_PLANE_DATA (frame, 0);
  picture.canvas.width = GST_VIDEO_FRAME_WIDTH (frame);
  picture.canvas.height = GST_VIDEO_FRAME_HEIGHT (frame);
  picture.canvas.stride = (gsize) GST_VIDEO_FRAME_PLANE_STRIDE (frame, 0);
  picture.view = &self->view;

  p3d_bev_picture_begin (&picture, settings.background, settings.grid_spacing);
  for (layer = 0; layer < P3D_BEV_RENDER_N_INPUTS; layer++) {
    for (l = pads; l != NULL; l = l->next) {
      P3dBevRenderPad *pad = l->data;
      GstFlowReturn ret;

      if (pad->input != layer || pad->current == NULL)
        continue;
      ret = draw_input (self, pad, &picture, &settings);
      if (ret != GST_FLOW_OK) {
        g_strfreev (settings.class_names);
        return ret;
      }
    }
  }
  if (settings.annotations)
    p3d_bev_picture_finish (&picture);
  g_strfreev (settings.class_names);
  return GST_FLOW_OK;
}

/* Draws the frame [@start, @end) of running time and pushes it. */
static GstFlowReturn
render_frame (P3dBevRender * self, GList * pads, GstClockTime start,
    GstClockTime end)
{
  GstAggregator *agg = GST_AGGREGATOR (self);
  GstSegment *segment = &GST_AGGREGATOR_PAD (agg->srcpad)->segment;
  GstBufferPool *pool = gst_aggregator_get_buffer_pool (agg);
  GstBuffer *outbuf = NULL;
  GstVideoFrame frame;
  GstFlowReturn ret;
  GstClockTime pts;
  gint64 began;

  if (pool != NULL) {
    if (!gst_buffer_pool_is_active (pool)
        && !gst_buffer_pool_set_active (pool, TRUE)) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("Cannot activate the output buffer pool"), (NULL));
      gst_object_unref (pool);
      return GST_FLOW_ERROR;
    }
    ret = gst_buffer_pool_acquire_buffer (pool, &outbuf, NULL);
    gst_object_unref (pool);
    if (ret != GST_FLOW_OK)
      return ret;
  } else {
    outbuf = gst_buffer_new_allocate (NULL,
        GST_VIDEO_INFO_SIZE (&self->out_info), NULL);
  }
  if (!gst_video_frame_map (&frame, &self->out_info, outbuf, GST_MAP_WRITE)) {
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
        ("Cannot map the output frame"), (NULL));
    gst_buffer_unref (outbuf);
    return GST_FLOW_ERROR;
  }
  began = g_get_monotonic_time ();
  ret = draw_frame (self, pads, &frame);
  gst_video_frame_unmap (&frame);
  if (ret != GST_FLOW_OK) {
    gst_buffer_unref (outbuf);
    return ret;
  }
  GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT " at %" GST_TIME_FORMAT
      " drawn in %" G_GINT64_FORMAT " us", self->frame_index,
      GST_TIME_ARGS (start), g_get_monotonic_time () - began);

  GST_OBJECT_LOCK (self);
  pts = gst_segment_position_from_running_time (segment, GST_FORMAT_TIME,
      start);
  if (!GST_CLOCK_TIME_IS_VALID (pts))
    pts = start;
  segment->position = pts + (end - start);
  GST_OBJECT_UNLOCK (self);
  GST_BUFFER_PTS (outbuf) = pts;
  GST_BUFFER_DURATION (outbuf) = end - start;
  gst_aggregator_selected_samples (agg, pts, GST_CLOCK_TIME_NONE, end - start,
      NULL);
  return gst_aggregator_finish_buffer (agg, outbuf);
}

static GstFlowReturn
p3d_bev_render_aggregate (GstAggregator * agg, gboolean timeout)
{
  P3dBevRender *self = P3D_BEV_RENDER (agg);
  GList *pads = get_sink_pads (self), *l;
  GstFlowReturn ret = GST_FLOW_OK;
  gboolean wait = FALSE, took = FALSE, finished = TRUE;
  GstClockTime start, end;

  if (self->fps_n <= 0) {
    ret = GST_FLOW_NOT_NEGOTIATED;
    goto done;
  }
  if (!GST_CLOCK_TIME_IS_VALID (self->base_time)) {
    self->base_time = p3d_bev_render_pads_earliest_time (pads);
    if (!GST_CLOCK_TIME_IS_VALID (self->base_time))
      self->base_time = 0;
    self->frame_index = 0;
  }
  start = frame_start (self, self->frame_index);
  end = frame_start (self, self->frame_index + 1);

  for (l = pads; l != NULL; l = l->next) {
    P3dBevRenderPad *pad = l->data;
    gboolean pad_wait;

    ret = p3d_bev_render_pad_select (pad, GST_ELEMENT (self), end, &pad_wait);
    if (ret != GST_FLOW_OK)
      goto done;
    wait |= pad_wait;
    took |= pad->took;
    if (!gst_aggregator_pad_is_eos (GST_AGGREGATOR_PAD (pad))
        || gst_aggregator_pad_has_buffer (GST_AGGREGATOR_PAD (pad)))
      finished = FALSE;
  }
  /* not live: a pad may still get a buffer for this frame */
  if (wait && !timeout) {
    ret = GST_AGGREGATOR_FLOW_NEED_DATA;
    goto done;
  }
  /* every pad at EOS, and its last buffer drawn already */
  if (finished && !took) {
    GST_DEBUG_OBJECT (self, "every input is at EOS");
    ret = GST_FLOW_EOS;
    goto done;
  }

  ret = render_frame (self, pads, start, end);
  for (l = pads; l != NULL; l = l->next) {
    P3dBevRenderPad *pad = l->data;

    pad->took = FALSE;
    pad->took_untimed = FALSE;
  }
  self->frame_index++;

done:
  g_list_free_full (pads, gst_object_unref);
  return ret;
}
