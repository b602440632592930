/**
 * SECTION:element-ousterparse
 * @title: ousterparse
 *
 * Turns Ouster lidar packets into sweeps: one application/x-point-cloud
 * buffer per frame (a frame ends when a packet of the next frame id
 * arrives), in system memory or in CUDA memory as negotiated (one upload
 * per sweep). Input is one UDP payload per buffer, as udpsrc gives them
 * from the sensor (port 7502) and pcapparse from a recording; the sensor's
 * metadata JSON file (metadata, required) gives the packet profile
 * (LEGACY, RNG19_RFL8_SIG16_NIR16, RNG19_RFL8_SIG16_NIR16_DUAL), the beams
 * (32 to 128) and their angles, the beam origin offset, the
 * lidar-to-sensor transform and the column window. 48-byte IMU packets are
 * ignored (counted); any other size than the profile's is an error that
 * says what arrived.
 *
 * Points are in the sensor frame (x forward, y left, z up; the
 * lidar-to-sensor transform applied), in destaggered order: the rows of
 * the destaggered image one after the other (the first beam's, the
 * highest, first), as ouster-sdk lays out a destaggered point cloud; a
 * pixel's two returns side by side. Columns marked invalid and pixels
 * without a return are left
 * out. The intensity is the reflectivity, the time the column's timestamp
 * since the frame's first column, the ring the rank of the beam's
 * altitude (0 the lowest). Of dual returns, returns keeps both, the
 * strongest or the last (farther).
 *
 * A frame whose start was not seen (the stream's first) or whose end did
 * not come (at the end of the stream) is dropped unless partial-sweeps is
 * set. Lost, late and repeated packets are counted in stats with one
 * warning a stream; a late packet of the open frame still lands in its
 * place, a repeated one or one of an older frame is dropped.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 udpsrc port=7502 buffer-size=8388608 \
 *     ! ousterparse metadata=os-122.json ! voxelize ! fakesink
 * gst-launch-1.0 filesrc location=drive.pcap ! pcapparse dst-port=7502 \
 *     ! ousterparse metadata=drive.json ! fakesink
 * ]|
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstousterparse.h"

GST_DEBUG_CATEGORY_STATIC (p3d_ouster_parse_debug);
#define GST_CAT_DEFAULT p3d_ouster_parse_debug

enum
{
  PROP_0,
  PROP_METADATA,
};

#define DEFAULT_METADATA NULL

#define p3d_ouster_parse_parent_class parent_class
G_DEFINE_TYPE (P3dOusterParse, p3d_ouster_parse, P3D_TYPE_LIDAR_PARSE);
GST_ELEMENT_REGISTER_DEFINE (ousterparse, "ousterparse", GST_RANK_NONE,
    P3D_TYPE_OUSTER_PARSE);

static void p3d_ouster_parse_finalize (GObject * object);
static void p3d_ouster_parse_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void p3d_ouster_parse_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static gboolean p3d_ouster_parse_start_sensor (P3dLidarParse * parse);
static void p3d_ouster_parse_stop_sensor (P3dLidarParse * parse);
static void p3d_ouster_parse_reset (P3dLidarParse * parse);
static GstFlowReturn p3d_ouster_parse_handle_packet (P3dLidarParse * parse,
    const guint8 * data, gsize size, GstClockTime arrival);
static void p3d_ouster_parse_finish (P3dLidarParse * parse);

static void
p3d_ouster_parse_class_init (P3dOusterParseClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  P3dLidarParseClass *lidar_class = P3D_LIDAR_PARSE_CLASS (klass);

  gobject_class->finalize = p3d_ouster_parse_finalize;
  gobject_class->set_property = p3d_ouster_parse_set_property;
  gobject_class->get_property = p3d_ouster_parse_get_property;

  g_object_class_install_property (gobject_class, PROP_METADATA,
      g_param_spec_string ("metadata", "Metadata",
          "The sensor's metadata JSON file (as the sensor or ouster-sdk "
          "writes it): profile, beams, beam angles and origin, "
          "lidar-to-sensor transform, column window", DEFAULT_METADATA,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_READY));

  gst_element_class_set_static_metadata (element_class,
      "Ouster packet parser", "Codec/Parser/PointCloud",
      "Ouster lidar packets (LEGACY, RNG19_RFL8_SIG16_NIR16, single and dual "
      "return) to point cloud sweeps", "gst-perception developers");

  lidar_class->start_sensor = GST_DEBUG_FUNCPTR (p3d_ouster_parse_start_sensor);
  lidar_class->stop_sensor = GST_DEBUG_FUNCPTR (p3d_ouster_parse_stop_sensor);
  lidar_class->reset = GST_DEBUG_FUNCPTR (p3d_ouster_parse_reset);
  lidar_class->handle_packet =
      GST_DEBUG_FUNCPTR (p3d_ouster_parse_handle_packet);
  lidar_class->finish = GST_DEBUG_FUNCPTR (p3d_ouster_parse_finish);

  GST_DEBUG_CATEGORY_INIT (p3d_ouster_parse_debug, "ousterparse", 0,
      "Ouster packets to point clouds");
}

static void
p3d_ouster_parse_init (P3dOusterParse * self)
{
  self->metadata = g_strdup (DEFAULT_METADATA);
}

static void
p3d_ouster_parse_finalize (GObject * object)
{
  P3dOusterParse *self = P3D_OUSTER_PARSE (object);

  g_free (self->metadata);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
p3d_ouster_parse_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  P3dOusterParse *self = P3D_OUSTER_PARSE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_METADATA:
      g_free (self->metadata);
      self->metadata = g_value_dup_string (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
p3d_ouster_parse_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  P3dOusterParse *self = P3D_OUSTER_PARSE (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_METADATA:
      g_value_set_string (value, self->metadata);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static gboolean
p3d_ouster_parse_start_sensor (P3dLidarParse * parse)
{
  P3dOusterParse *self = P3D_OUSTER_PARSE (parse);
  GError *error = NULL;
  gchar *path;

  GST_OBJECT_LOCK (self);
  path = g_strdup (self->metadata);
  GST_OBJECT_UNLOCK (self);

  if (path == NULL || *path == '\0') {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("No metadata: set metadata to the sensor's metadata JSON file"),
        (NULL));
    g_free (path);
    return FALSE;
  }
  if (!p3d_ouster_metadata_load (path, &self->info, &error)) {
    if (error->code == P3D_OUSTER_METADATA_ERROR_NOT_FOUND)
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("Invalid property metadata: \"%s\" does not exist", path), (NULL));
    else if (error->code == P3D_OUSTER_METADATA_ERROR_READ)
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("Cannot read the metadata file \"%s\": %s", path, error->message),
          (NULL));
    else
      GST_ELEMENT_ERROR (self, STREAM, DECODE,
          ("Invalid metadata file \"%s\": %s", path, error->message),
          ("the sensor's metadata JSON, as the sensor or ouster-sdk writes "
              "it"));
    g_error_free (error);
    g_free (path);
    return FALSE;
  }
  g_free (path);

  self->decoder = p3d_ouster_decoder_new (&self->info,
      p3d_lidar_parse_get_returns (parse));
  self->packet_size = p3d_ouster_metadata_packet_size (&self->info);
  self->packets_per_frame =
      p3d_ouster_decoder_packets_per_frame (self->decoder);
  self->grid_points = p3d_ouster_decoder_grid_points (self->decoder);
  self->valid_words = (self->grid_points + 63) / 64;
  self->valid = g_new0 (guint64, self->valid_words);
  self->received = g_new0 (guint8, (self->info.columns_per_frame +
          self->info.columns_per_packet - 1) / self->info.columns_per_packet);
  GST_INFO_OBJECT (self, "%s packets of %u columns of %u beams (%"
      G_GSIZE_FORMAT " bytes), %u packets a frame",
      p3d_ouster_profile_name (self->info.profile),
      self->info.columns_per_packet, self->info.beams, self->packet_size,
      self->packets_per_frame);
  return TRUE;
}

static void
p3d_ouster_parse_stop_sensor (P3dLidarParse * parse)
{
  P3dOusterParse *self = P3D_OUSTER_PARSE (parse);

  g_clear_pointer (&self->decoder, p3d_ouster_decoder_free);
  g_clear_pointer (&self->valid, g_free);
  g_clear_pointer (&self->received, g_free);
}

static void
p3d_ouster_parse_reset (P3dLidarParse * parse)
{
  P3dOusterParse *self = P3D_OUSTER_PARSE (parse);

  self->have_frame = FALSE;
  self->first_frame = TRUE;
  self->grid = NULL;
}

/* The time of the packet's first column with data, or of its first. */
static guint64
packet_start (const P3dOusterPacket * packet)
{
  guint c;

  for (c = 0; c < packet->n_columns; c++)
    if (packet->valid[c])
      return packet->timestamp[c];
  return packet->timestamp[0];
}

static guint64
packet_end (const P3dOusterPacket * packet)
{
  guint64 end = 0;
  guint c;

  for (c = 0; c < packet->n_columns; c++)
    if (packet->valid[c])
      end = MAX (end, packet->timestamp[c]);
  return end;
}

/* Opens the frame of @packet: a sweep whose points are the frame's grid. */
static gboolean
begin_frame (P3dOusterParse * self, const P3dOusterPacket * packet,
    GstClockTime arrival, gboolean discont)
{
  P3dLidarParse *parse = P3D_LIDAR_PARSE (self);
  guint64 t0 = packet_start (packet);

  if (!p3d_lidar_parse_begin_sweep (parse, (gint64) t0, arrival,
          (gint64) MAX (packet_end (packet), t0), self->grid_points))
    return FALSE;
  self->grid = p3d_lidar_parse_grid (parse, self->grid_points);
  if (self->grid == NULL)
    return FALSE;
  memset (self->valid, 0, self->valid_words * sizeof (guint64));
  memset (self->received, 0, (self->info.columns_per_frame +
          self->info.columns_per_packet - 1) / self->info.columns_per_packet);
  self->have_frame = TRUE;
  self->frame_id = packet->frame_id;
  /* only the stream's first frame may have begun before we listened */
  self->frame_partial = self->first_frame && packet->packet_index !=
      p3d_ouster_decoder_first_packet (self->decoder);
  self->first_frame = FALSE;
  self->frame_discont = discont;
  self->n_received = 0;
  self->last_index = packet->packet_index;
  self->have_t0 = FALSE;
  self->last_time = t0;
  return TRUE;
}

/* A frame's packets in the order the sensor sends them: from the window's
 * first. */
static guint
packet_order (P3dOusterParse * self, guint index)
{
  guint n = (self->info.columns_per_frame + self->info.columns_per_packet -
      1) / self->info.columns_per_packet;

  return (index + n - p3d_ouster_decoder_first_packet (self->decoder)) % n;
}

/* Ends the open frame. The packets it lacks are lost, except those before
 * the first one seen when the stream began inside the frame, and at the
 * end of the stream those after the last one seen: then the frame is
 * partial. */
static void
end_frame (P3dOusterParse * self, gboolean at_eos)
{
  P3dLidarParse *parse = P3D_LIDAR_PARSE (self);
  guint n = (self->info.columns_per_frame + self->info.columns_per_packet -
      1) / self->info.columns_per_packet;
  guint first = G_MAXUINT, last = 0, k, lost = 0;
  gboolean partial = self->frame_partial;
  gsize points;

  for (k = 0; k < n; k++) {
    if (self->received[k]) {
      first = MIN (first, packet_order (self, k));
      last = MAX (last, packet_order (self, k));
    }
  }
  for (k = 0; k < n; k++) {
    guint order = packet_order (self, k);

    if (self->received[k]
        || !p3d_ouster_decoder_packet_expected (self->decoder, k))
      continue;
    if (self->frame_partial && order < first)
      continue;
    if (at_eos && order > last) {
      partial = TRUE;
      continue;
    }
    lost++;
  }
  p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_LOST, lost);
  points = p3d_ouster_grid_compact (self->decoder,
      p3d_lidar_parse_get_layout (parse), self->grid, self->valid);
  p3d_lidar_parse_set_points (parse, points, (gint64) self->last_time);
  p3d_lidar_parse_end_sweep (parse, partial, self->frame_discont);
  self->have_frame = FALSE;
  self->grid = NULL;
}

static GstFlowReturn
p3d_ouster_parse_handle_packet (P3dLidarParse * parse, const guint8 * data,
    gsize size, GstClockTime arrival)
{
  P3dOusterParse *self = P3D_OUSTER_PARSE (parse);
  P3dOusterCounts counts = { 0, 0, 0 };
  P3dOusterPacket packet;
  guint index;

  if (size == P3D_OUSTER_IMU_PACKET_SIZE && size != self->packet_size) {
    p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_IGNORED, 1);
    return GST_FLOW_OK;
  }
  if (!p3d_ouster_packet_parse (self->decoder, data, size, &packet, NULL)) {
    GST_ELEMENT_ERROR (self, STREAM, WRONG_TYPE,
        ("A packet of %" G_GSIZE_FORMAT " bytes arrived: the metadata's %s "
            "lidar packets of %u columns of %u beams have %" G_GSIZE_FORMAT
            " bytes (%d-byte IMU packets are ignored)", size,
            p3d_ouster_profile_name (self->info.profile),
            self->info.columns_per_packet, self->info.beams,
            self->packet_size, P3D_OUSTER_IMU_PACKET_SIZE),
        ("one UDP payload per buffer: udpsrc port=7502, or pcapparse "
            "dst-port=7502 for a recording; or a metadata file of another "
            "sensor or mode"));
    return GST_FLOW_ERROR;
  }

  if (self->have_frame && packet.frame_id != self->frame_id) {
    guint ahead = (packet.frame_id - self->frame_id) & 0xffff;

    if (ahead >= 0x8000) {
      /* a packet of a frame already sent */
      p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_LATE, 1);
      return GST_FLOW_OK;
    }
    end_frame (self, FALSE);
    if (ahead > 1) {
      p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_LOST,
          (guint64) (ahead - 1) * self->packets_per_frame);
      p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_BREAKS, 1);
    }
    if (!begin_frame (self, &packet, arrival, ahead > 1))
      return GST_FLOW_ERROR;
  } else if (!self->have_frame && !begin_frame (self, &packet, arrival, FALSE)) {
    return GST_FLOW_ERROR;
  }

  index = packet.packet_index;
  if (self->received[index]) {
    p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_REPEATED, 1);
    return GST_FLOW_OK;
  }
  if (index < self->last_index)
    /* its columns still land in their slots */
    p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_LATE, 1);
  self->received[index] = 1;
  self->n_received++;
  self->last_index = MAX (self->last_index, index);
  p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_PACKETS, 1);
  if (!self->have_t0) {
    self->t0 = packet_start (&packet);
    self->have_t0 = TRUE;
  }
  self->last_time = MAX (self->last_time, packet_end (&packet));
  p3d_ouster_decode (self->decoder, data, &packet, self->t0,
      p3d_lidar_parse_get_layout (parse), self->grid, self->valid, &counts);
  p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_NO_RETURN, counts.no_return);
  p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_DUPLICATE_RETURNS,
      counts.duplicate_returns);
  p3d_lidar_parse_count (parse, P3D_LIDAR_COUNT_INVALID_COLUMNS,
      counts.invalid_columns);
  return GST_FLOW_OK;
}

static void
p3d_ouster_parse_finish (P3dLidarParse * parse)
{
  P3dOusterParse *self = P3D_OUSTER_PARSE (parse);

  if (self->have_frame)
    end_frame (self, TRUE);
}
