/**
 * SECTION:element-velodyneparse
 * @title: velodyneparse
 *
 * Turns Velodyne data packets into sweeps: one application/x-point-cloud
 * buffer per revolution, in system memory or in CUDA memory as negotiated
 * (one upload per sweep). Input is one UDP payload per buffer, as udpsrc
 * gives them from the sensor and pcapparse from a recording: 1206-byte data
 * packets; the 512-byte position packets are ignored (counted), any other
 * size is an error that says what arrived.
 *
 * Models: VLP-16, Puck Hi-Res, VLP-32C, HDL-32E, HDL-64E S2/S3 and VLS-128
 * (model; auto reads it from the first packet, by its block flags or
 * product byte; set it when a recording's product byte is wrong). The
 * lasers' angles are built in, except the HDL-64E's, whose every unit has
 * its own: calibration takes a ros-drivers/velodyne YAML file (which also
 * overrides the built-in angles). Each point gets its firing time from the
 * packet's timestamp (microseconds past the hour; the hour's rollover is
 * followed) and the manual's timing table, and the azimuth of its firing:
 * the block's, interpolated along the firing sequence where the manual
 * says so (VLP-16, Puck Hi-Res, VLP-32C, VLS-128). Points are in the frame
 * x forward, y left, z up; the ring is the rank of the laser's elevation,
 * 0 the lowest; the intensity is the packet's reflectivity byte.
 *
 * A revolution ends where the azimuth passes cut-angle (behind the sensor
 * by default); the stream's first part-revolution and its last are
 * dropped unless partial-sweeps is set. Dual-return packets give both
 * returns, the strongest or the last (returns). Lost, late (dropped) and
 * repeated (dropped) packets are counted in stats with one warning a
 * stream, and a gap of 100 ms or an azimuth jump starts a new sweep.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 udpsrc port=2368 buffer-size=4194304 ! velodyneparse \
 *     ! voxelize ! fakesink
 * gst-launch-1.0 filesrc location=drive.pcap ! pcapparse dst-port=2368 \
 *     ! velodyneparse model=hdl-64e calibration=64e_s3.yaml ! fakesink
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>

#include "gstvelodyneparse.h"
#include "p3dparamspec.h"

GST_DEBUG_CATEGORY_STATIC (p3d_velodyne_parse_debug);
#define GST_CAT_DEFAULT p3d_velodyne_parse_debug

enum
{
  PROP_0,
  PROP_MODEL,
  PROP_CALIBRATION,
  PROP_CUT_ANGLE,
};

#define DEFAULT_MODEL P3D_VELODYNE_MODEL_AUTO
#define DEFAULT_CALIBRATION NULL
/* behind the sensor: a sweep's seam is where it matters least ahead */
#define DEFAULT_CUT_ANGLE 180.0
/* A sweep's first buffer holds this long of firings (the pool grows when
 * the sensor turns slower). */
#define INITIAL_SWEEP_US 125000.0

#define p3d_velodyne_parse_parent_class parent_class
G_DEFINE_TYPE (P3dVelodyneParse, p3d_velodyne_parse, P3D_TYPE_LIDAR_PARSE);
GST_ELEMENT_REGISTER_DEFINE (velodyneparse, "velodyneparse", GST_RANK_NONE,
    P3D_TYPE_VELODYNE_PARSE);

GType
p3d_velodyne_model_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {P3D_VELODYNE_MODEL_AUTO, "From the first packet (block flags, product "
          "byte)", "auto"},
    {P3D_VELODYNE_MODEL_VLP16, "VLP-16 (Puck)", "vlp-16"},
    {P3D_VELODYNE_MODEL_PUCK_HIRES, "Puck Hi-Res", "puck-hi-res"},
    {P3D_VELODYNE_MODEL_VLP32C, "VLP-32C (Ultra Puck)", "vlp-32c"},
    {P3D_VELODYNE_MODEL_HDL32E, "HDL-32E", "hdl-32e"},
    {P3D_VELODYNE_MODEL_HDL64E, "HDL-64E S2 or S3 (needs calibration)",
        "hdl-64e"},
    {P3D_VELODYNE_MODEL_VLS128, "VLS-128 (Alpha Prime)", "vls-128"},
    {0, NULL, NULL},
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("P3dVelodyneModel", values);

    g_once_init_leave (&type, t);
  }
  return type;
}

static void p3d_velodyne_parse_finalize (GObject * object);
static void p3d_velodyne_parse_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void p3d_velodyne_parse_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static gboolean p3d_velodyne_parse_start_sensor (P3dLidarParse * parse);
static void p3d_velodyne_parse_stop_sensor (P3dLidarParse * parse);
static void p3d_velodyne_parse_reset (P3dLidarParse * parse);
static GstFlowReturn p3d_velodyne_parse_handle_packet (P3dLidarParse * parse,
    const guint8 * data, gsize size, GstClockTime arrival);
static void p3d_velodyne_parse_finish (P3dLidarParse * parse);

#define READY_FLAGS (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | \
    GST_PARAM_MUTABLE_READY)

static void
p3d_velodyne_parse_class_init (P3dVelodyneParseClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  P3dLidarParseClass *lidar_class = P3D_LIDAR_PARSE_CLASS (klass);

  gobject_class->finalize = p3d_velodyne_parse_finalize;
  gobject_class->set_property = p3d_velodyne_parse_set_property;
  gobject_class->get_property = p3d_velodyne_parse_get_property;

  g_object_class_install_property (gobject_class, PROP_MODEL,
      g_param_spec_enum ("model", "Model",
          "The sensor; auto reads it from the first packet (block flags, "
          "product byte) and fails when the product byte is unknown: set "
          "it then, or when a recording's product byte is wrong",
          P3D_TYPE_VELODYNE_MODEL, DEFAULT_MODEL, READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_CALIBRATION,
      g_param_spec_string ("calibration", "Calibration",
          "A ros-drivers/velodyne calibration YAML file (laser angles, "
          "distance corrections, offsets); needed by the HDL-64E, optional "
          "for the models whose angles are built in", DEFAULT_CALIBRATION,
          READY_FLAGS));
  g_object_class_install_property (gobject_class, PROP_CUT_ANGLE,
      p3d_param_spec_double ("cut-angle", "Cut angle",
          "Where a revolution ends, in degrees of the packets' azimuth "
          "(clockwise seen from above: 0 ahead, 90 right, 180 behind)",
          0.0, 360.0, DEFAULT_CUT_ANGLE, READY_FLAGS));

  gst_element_class_set_static_metadata (element_class,
      "Velodyne packet parser", "Codec/Parser/PointCloud",
      "Velodyne lidar data packets (VLP-16, Puck Hi-Res, VLP-32C, HDL-32E, "
      "HDL-64E, VLS-128) to point cloud sweeps", "gst-perception developers");

  lidar_class->start_sensor =
      GST_DEBUG_FUNCPTR (p3d_velodyne_parse_start_sensor);
  lidar_class->stop_sensor = GST_DEBUG_FUNCPTR (p3d_velodyne_parse_stop_sensor);
  lidar_class->reset = GST_DEBUG_FUNCPTR (p3d_velodyne_parse_reset);
  lidar_class->handle_packet =
      GST_DEBUG_FUNCPTR (p3d_velodyne_parse_handle_packet);
  lidar_class->finish = GST_DEBUG_FUNCPTR (p3d_velodyne_parse_finish);

  gst_type_mark_as_plugin_api (P3D_TYPE_VELODYNE_MODEL, 0);
  GST_DEBUG_CATEGORY_INIT (p3d_velodyne_parse_debug, "velodyneparse", 0,
      "Velodyne packets to point clouds");
}

static void
p3d_velodyne_parse_init (P3dVelodyneParse * self)
{
  self->model = DEFAULT_MODEL;
  self->calibration = g_strdup (DEFAULT_CALIBRATION);
  self->cut_angle = DEFAULT_CUT_ANGLE;
}

static void
p3d_velodyne_parse_finalize (GObject * object)
{
  P3dVelodyneParse *self = P3D_VELODYNE_PARSE (object);

  g_free (self->calibration);
  /* a start that failed leaves it */
  g_free (self->calibration_path);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
p3d_velodyne_parse_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dVelodyneParse *self = P3D_VELODYNE_PARSE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODEL:
      self->model = g_value_get_enum (value);
      break;
    case PROP_CALIBRATION:
      g_free (self->calibration);
      self->calibration = g_value_dup_string (value);
      break;
    case PROP_CUT_ANGLE:
      self->cut_angle = g_value_get_double (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
p3d_velodyne_parse_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  P3dVelodyneParse *self = P3D_VELODYNE_PARSE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODEL:
      g_value_set_enum (value, self->model);
      break;
    case PROP_CALIBRATION:
      g_value_set_string (value, self->calibration);
      break;
    case PROP_CUT_ANGLE:
      g_value_set_double (value, self->cut_angle);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* The decoder for @model, with the calibration file's angles when one was
 * given; posts the error and returns FALSE when they do not fit. */
static gboolean
make_decoder (P3dVelodyneParse * self, P3dVelodyneModel model)
{
  const P3dVelodyneModelInfo *info = p3d_velodyne_model_get_info (model);
  P3dLidarParse *parse = P3D_LIDAR_PARSE (self);
  GError *error = NULL;

  if (info->has_builtin == FALSE && self->file_calibration == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("The %s needs its calibration file: set calibration to its "
            "ros-drivers/velodyne YAML file", info->name),
        ("model %s, no calibration", info->nick));
    return FALSE;
  }
  self->decoder = p3d_velodyne_decoder_new (model, self->file_calibration,
      p3d_lidar_parse_get_returns (parse), self->active_cut_angle, &error);
  if (self->decoder == NULL) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Invalid property calibration \"%s\": %s", self->calibration_path,
            error->message), ("model %s", info->nick));
    g_error_free (error);
    return FALSE;
  }
  if (self->file_calibration != NULL
      && self->file_calibration->distance_resolution != 0.0
      && fabs (self->file_calibration->distance_resolution -
          info->distance_unit) > 1e-9)
    GST_WARNING_OBJECT (self, "the calibration's distance_resolution %g m is "
        "not the %s's distance unit, %g m, which is used",
        self->file_calibration->distance_resolution, info->name,
        info->distance_unit);
  GST_INFO_OBJECT (self, "decoding %s packets with %s angles", info->name,
      self->file_calibration != NULL ? "the calibration file's" :
      "the built-in");
  return TRUE;
}

static gboolean
p3d_velodyne_parse_start_sensor (P3dLidarParse * parse)
{
  P3dVelodyneParse *self = P3D_VELODYNE_PARSE (parse);
  gchar *path;
  GError *error = NULL;

  GST_OBJECT_LOCK (self);
  self->active_model = self->model;
  self->active_cut_angle = self->cut_angle;
  path = g_strdup (self->calibration);
  GST_OBJECT_UNLOCK (self);

  g_free (self->calibration_path);
  self->calibration_path = path;
  if (path != NULL && *path != '\0') {
    self->file_calibration = g_new0 (P3dVelodyneCalibration, 1);
    if (!p3d_velodyne_calibration_load (path, self->file_calibration, &error)) {
      if (error->code == P3D_VELODYNE_CALIBRATION_ERROR_NOT_FOUND)
        GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
            ("Invalid property calibration: \"%s\" does not exist", path),
            (NULL));
      else if (error->code == P3D_VELODYNE_CALIBRATION_ERROR_READ)
        GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
            ("Cannot read the calibration file \"%s\": %s", path,
                error->message), (NULL));
      else
        GST_ELEMENT_ERROR (self, STREAM, DECODE,
            ("Invalid calibration file \"%s\": %s", path, error->message),
            ("a ros-drivers/velodyne calibration YAML file"));
      g_error_free (error);
      g_clear_pointer (&self->file_calibration, g_free);
      return FALSE;
    }
  }
  if (self->active_model != P3D_VELODYNE_MODEL_AUTO
      && !make_decoder (self, self->active_model)) {
    g_clear_pointer (&self->file_calibration, g_free);
    return FALSE;
  }
  return TRUE;
}

static void
p3d_velodyne_parse_stop_sensor (P3dLidarParse * parse)
{
  P3dVelodyneParse *self = P3D_VELODYNE_PARSE (parse);

  g_clear_pointer (&self->decoder, p3d_velodyne_decoder_free);
  g_clear_pointer (&self->file_calibration, g_free);
  g_clear_pointer (&self->calibration_path, g_free);
}

static void
p3d_velodyne_parse_reset (P3dLidarParse * parse)
{
  P3dVelodyneParse *self = P3D_VELODYNE_PARSE (parse);

  if (self->decoder != NULL)
    p3d_velodyne_decoder_reset (self->decoder);
}

/* Opens a sweep at column @c of @packet. */
static gboolean
begin_sweep (P3dVelodyneParse * self, const P3dVelodynePacket * packet,
    const P3dVelodynePlace * place, guint c, gboolean whole,
    GstClockTime arrival)
{
  gdouble period = p3d_velodyne_decoder_packet_period (self->decoder,
      packet->dual);
  gsize capacity = p3d_velodyne_decoder_max_points (self->decoder, packet,
      packet->n_columns) * (gsize) (INITIAL_SWEEP_US / period);

  self->sweep_t0 = place->time + packet->start[c];
  self->sweep_whole = whole;
  return p3d_lidar_parse_begin_sweep (P3D_LIDAR_PARSE (self),
      (gint64) llround (self->sweep_t0 * 1000.0), arrival,
      (gint64) llround ((place->time + packet->end) * 1000.0), capacity);
}

/* Decodes columns [first, last) of @packet into the open sweep. */
static gboolean
decode_columns (P3dVelodyneParse * self, const guint8 * data,
    const P3dVelodynePacket * packet, const P3dVelodynePlace * place,
    guint first, guint last)
{
  P3dLidarParse *parse = P3D_LIDAR_PARSE (self);
  P3dVelodyneCounts counts = { 0, 0 };
  gfloat *out;
  gsize n;

  if (first >= last)
    return TRUE;
  out = p3d_lidar_parse_reserve (parse,
      p3d_velodyne_decoder_max_points (self->decoder, packet, last - first));
  if (out == NULL)
    return FALSE;
  n = p3d_velodyne_decode (self->decoder, data, packet, first, last,
      (place->time - self->sweep_t0) * 1e-6,
      p3d_lidar_parse_get_layout (parse), out, &counts);
  p3d_lidar_parse_commit (parse, n,
      (gint64) llround ((place->time + packet->end) * 1000.0));
  p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_NO_RETURN, counts.no_return);
  p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_DUPLICATE_RETURNS,
      counts.duplicate_returns);
  return TRUE;
}

static void
end_sweep (P3dVelodyneParse * self, gboolean ended_at_cut)
{
  p3d_lidar_parse_end_sweep (P3D_LIDAR_PARSE (self), !self->sweep_whole
      || !ended_at_cut, self->sweep_discont);
  self->sweep_discont = FALSE;
}

static GstFlowReturn
p3d_velodyne_parse_handle_packet (P3dLidarParse * parse, const guint8 * data,
    gsize size, GstClockTime arrival)
{
  P3dVelodyneParse *self = P3D_VELODYNE_PARSE (parse);
  P3dVelodynePacket packet;
  P3dVelodynePlace place;
  gchar *why = NULL;
  guint cut;

  if (size == P3D_VELODYNE_POSITION_PACKET_SIZE) {
    p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_IGNORED, 1);
    return GST_FLOW_OK;
  }
  if (size != P3D_VELODYNE_DATA_PACKET_SIZE) {
    GST_ELEMENT_ERROR (self, STREAM, WRONG_TYPE,
        ("A packet of %" G_GSIZE_FORMAT " bytes arrived: Velodyne data "
            "packets have %d bytes (position packets, %d bytes, are "
            "ignored)", size, P3D_VELODYNE_DATA_PACKET_SIZE,
            P3D_VELODYNE_POSITION_PACKET_SIZE),
        ("one UDP payload per buffer: udpsrc port=2368, or pcapparse "
            "dst-port=2368 for a recording"));
    return GST_FLOW_ERROR;
  }
  if (self->decoder == NULL) {
    guint8 product;
    P3dVelodyneModel model = p3d_velodyne_model_detect (data, &product);

    if (model == P3D_VELODYNE_MODEL_AUTO) {
      GST_ELEMENT_ERROR (self, STREAM, WRONG_TYPE,
          ("Cannot tell the sensor from its packets: product byte 0x%02x is "
              "none of the known models'; set model", product), ("model=auto"));
      return GST_FLOW_ERROR;
    }
    GST_INFO_OBJECT (self, "product byte 0x%02x: %s", product,
        p3d_velodyne_model_get_info (model)->name);
    if (!make_decoder (self, model))
      return GST_FLOW_ERROR;
  }

  if (!p3d_velodyne_packet_parse (self->decoder, data, &packet, &why)) {
    GST_DEBUG_OBJECT (self, "malformed packet dropped: %s", why);
    g_free (why);
    p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_INVALID, 1);
    return GST_FLOW_OK;
  }
  p3d_velodyne_decoder_place (self->decoder, &packet, &place);
  if (place.kind == P3D_VELODYNE_PLACE_LATE) {
    p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_LATE, 1);
    return GST_FLOW_OK;
  }
  if (place.kind == P3D_VELODYNE_PLACE_REPEAT) {
    p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_REPEATED, 1);
    return GST_FLOW_OK;
  }
  p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_PACKETS, 1);
  p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_LOST, place.lost);

  if (place.break_sweep && p3d_lidar_parse_sweep_is_open (parse)) {
    GST_DEBUG_OBJECT (self, "a gap of %" G_GUINT64_FORMAT " packets breaks "
        "the sweep", place.lost);
    p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_BREAKS, 1);
    end_sweep (self, TRUE);
    self->sweep_discont = TRUE;
  }
  cut = p3d_velodyne_decoder_take (self->decoder, &packet, &place);
  if (!p3d_lidar_parse_sweep_is_open (parse)
      && !begin_sweep (self, &packet, &place, 0, FALSE, arrival))
    return GST_FLOW_ERROR;
  if (!decode_columns (self, data, &packet, &place, 0, cut))
    return GST_FLOW_ERROR;
  if (cut < packet.n_columns) {
    end_sweep (self, TRUE);
    if (!begin_sweep (self, &packet, &place, cut, TRUE, arrival)
        || !decode_columns (self, data, &packet, &place, cut, packet.n_columns))
      return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

/* The revolution in progress at the end of the stream is not whole. */
static void
p3d_velodyne_parse_finish (P3dLidarParse * parse)
{
  if (p3d_lidar_parse_sweep_is_open (parse))
    end_sweep (P3D_VELODYNE_PARSE (parse), FALSE);
}
