/* The Ouster packet decoder: the metadata file, the packet profiles, and
 * the range-to-XYZ conversion of the firmware user manual (encoder angle
 * from the measurement id, each beam's azimuth and altitude, the beam
 * origin offset, then the lidar-to-sensor transform). */
#include <math.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include "ousterparse-decoder.h"

G_DEFINE_QUARK (p3d - ouster - metadata - error - quark,
    p3d_ouster_metadata_error);

#define PACKET_HEADER_SIZE 32
#define PACKET_FOOTER_SIZE 32
#define LEGACY_COLUMN_HEADER_SIZE 16
#define LEGACY_COLUMN_FOOTER_SIZE 4
#define COLUMN_HEADER_SIZE 12
#define LEGACY_PIXEL_SIZE 12
#define SINGLE_PIXEL_SIZE 12
#define DUAL_PIXEL_SIZE 16
#define MAX_PACKET_SIZE 65535
/* Translations in the transforms beyond this many millimetres are not a
 * sensor's. */
#define MAX_TRANSLATION_MM 10000.0

struct _P3dOusterDecoder
{
  P3dOusterMetadata metadata;
  P3dLidarReturns returns;
  /* returns per grid pixel: 2 when both of a dual stream are kept */
  guint grid_returns;
  gsize column_size;
  gsize columns_offset;
  guint packets_per_frame;
  /* per column (measurement id) and beam: the unit direction times a
   * millimetre and the offset, in metres in the sensor frame */
  gfloat *lut;
  gfloat ring[P3D_OUSTER_MAX_BEAMS];
  guint shift[P3D_OUSTER_MAX_BEAMS];
};

const gchar *
p3d_ouster_profile_name (P3dOusterProfile profile)
{
  switch (profile) {
    case P3D_OUSTER_PROFILE_LEGACY:
      return "LEGACY";
    case P3D_OUSTER_PROFILE_SINGLE:
      return "RNG19_RFL8_SIG16_NIR16";
    case P3D_OUSTER_PROFILE_DUAL:
      return "RNG19_RFL8_SIG16_NIR16_DUAL";
    default:
      return "?";
  }
}

static gsize
pixel_size (P3dOusterProfile profile)
{
  return profile == P3D_OUSTER_PROFILE_DUAL ? DUAL_PIXEL_SIZE :
      profile == P3D_OUSTER_PROFILE_SINGLE ? SINGLE_PIXEL_SIZE :
      LEGACY_PIXEL_SIZE;
}

static gsize
column_size (const P3dOusterMetadata * metadata)
{
  if (metadata->profile == P3D_OUSTER_PROFILE_LEGACY)
    return LEGACY_COLUMN_HEADER_SIZE + metadata->beams * LEGACY_PIXEL_SIZE +
        LEGACY_COLUMN_FOOTER_SIZE;
  return COLUMN_HEADER_SIZE + metadata->beams * pixel_size (metadata->profile);
}

gsize
p3d_ouster_metadata_packet_size (const P3dOusterMetadata * metadata)
{
  gsize size = metadata->columns_per_packet * column_size (metadata);

  if (metadata->profile != P3D_OUSTER_PROFILE_LEGACY)
    size += PACKET_HEADER_SIZE + PACKET_FOOTER_SIZE;
  return size;
}

/* ---------------------------------------------------------------------- */
/* The metadata file */

static gboolean
fail (GError ** error, P3dOusterMetadataError code, const gchar * format, ...)
G_GNUC_PRINTF (3, 4);

     static gboolean
         fail (GError ** error, P3dOusterMetadataError code,
    const gchar * format, ...)
{
  va_list args;

  va_start (args, format);
  g_set_error_literal (error, P3D_OUSTER_METADATA_ERROR, code, "");
  if (error != NULL && *error != NULL) {
    g_free ((*error)->message);
    (*error)->message = g_strdup_vprintf (format, args);
  }
  va_end (args);
  return FALSE;
}

/* The sections a key may live in: the flat form of firmware 2.x keeps the
 * beams and transforms at the top and the format in "data_format"; later
 * firmware nests them. */
static const gchar *const sections[] = {
  NULL, "data_format", "lidar_data_format", "beam_intrinsics",
  "lidar_intrinsics", "config_params",
};

/* The member @key of the root or of one of its sections; *where names the
 * section for messages. */
static JsonNode *
find (JsonObject * root, const gchar * key, const gchar ** where)
{
  guint i;

  for (i = 0; i < G_N_ELEMENTS (sections); i++) {
    JsonObject *object = root;

    if (sections[i] != NULL) {
      JsonNode *node = json_object_get_member (root, sections[i]);

      if (node == NULL || !JSON_NODE_HOLDS_OBJECT (node))
        continue;
      object = json_node_get_object (node);
    }
    if (json_object_has_member (object, key)) {
      *where = sections[i] != NULL ? sections[i] : "the file";
      return json_object_get_member (object, key);
    }
  }
  *where = "the file";
  return NULL;
}

static gboolean
node_number (JsonNode * node, gdouble * value)
{
  GType type;

  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node))
    return FALSE;
  type = json_node_get_value_type (node);
  if (type == G_TYPE_INT64)
    *value = (gdouble) json_node_get_int (node);
  else if (type == G_TYPE_DOUBLE)
    *value = json_node_get_double (node);
  else
    return FALSE;
  return isfinite (*value);
}

/* @key as a number within [@min, @max]; @integer: a whole one. */
static gboolean
read_number (JsonObject * root, const gchar * key, gboolean required,
    gdouble min, gdouble max, gboolean integer, gdouble * value,
    gboolean * found, GError ** error)
{
  const gchar *where;
  JsonNode *node = find (root, key, &where);
  gdouble v;

  if (found)
    *found = node != NULL;
  if (node == NULL)
    return required ? fail (error, P3D_OUSTER_METADATA_ERROR_SCHEMA,
        "the metadata has no %s", key) : TRUE;
  if (!node_number (node, &v))
    return fail (error, P3D_OUSTER_METADATA_ERROR_SCHEMA, "%s: %s is not a "
        "finite number", where, key);
  if (v < min || v > max || (integer && v != floor (v)))
    return fail (error, P3D_OUSTER_METADATA_ERROR_VALUE, "%s: %s is %g, %s "
        "in [%g, %g] expected", where, key, v, integer ? "a whole number" :
        "a number", min, max);
  *value = v;
  return TRUE;
}

/* @key as an array of exactly @n numbers within [@min, @max]. */
static gboolean
read_array (JsonObject * root, const gchar * key, gboolean required, guint n,
    gdouble min, gdouble max, gboolean integer, gdouble * values,
    gboolean * found, GError ** error)
{
  const gchar *where;
  JsonNode *node = find (root, key, &where);
  JsonArray *array;
  guint i;

  if (found)
    *found = node != NULL;
  if (node == NULL)
    return required ? fail (error, P3D_OUSTER_METADATA_ERROR_SCHEMA,
        "the metadata has no %s", key) : TRUE;
  if (!JSON_NODE_HOLDS_ARRAY (node))
    return fail (error, P3D_OUSTER_METADATA_ERROR_SCHEMA, "%s: %s is not an "
        "array", where, key);
  array = json_node_get_array (node);
  if (json_array_get_length (array) != n)
    return fail (error, P3D_OUSTER_METADATA_ERROR_SCHEMA, "%s: %s has %u "
        "entries, %u expected", where, key, json_array_get_length (array), n);
  for (i = 0; i < n; i++) {
    gdouble v;

    if (!node_number (json_array_get_element (array, i), &v))
      return fail (error, P3D_OUSTER_METADATA_ERROR_SCHEMA, "%s: %s[%u] is "
          "not a finite number", where, key, i);
    if (v < min || v > max || (integer && v != floor (v)))
      return fail (error, P3D_OUSTER_METADATA_ERROR_VALUE, "%s: %s[%u] is "
          "%g, %s in [%g, %g] expected", where, key, i, v, integer ?
          "a whole number" : "a number", min, max);
    values[i] = v;
  }
  return TRUE;
}

static gboolean
read_transform (JsonObject * root, const gchar * key, gboolean required,
    gdouble * m, gboolean * found, GError ** error)
{
  guint i;

  if (!read_array (root, key, required, 16, -G_MAXDOUBLE, G_MAXDOUBLE, FALSE,
          m, found, error))
    return FALSE;
  if (found != NULL && !*found)
    return TRUE;
  if (m[12] != 0 || m[13] != 0 || m[14] != 0 || m[15] != 1)
    return fail (error, P3D_OUSTER_METADATA_ERROR_VALUE, "%s: the last row "
        "is %g %g %g %g, not 0 0 0 1", key, m[12], m[13], m[14], m[15]);
  for (i = 0; i < 3; i++) {
    if (fabs (m[4 * i + 3]) > MAX_TRANSLATION_MM)
      return fail (error, P3D_OUSTER_METADATA_ERROR_VALUE, "%s: the "
          "translation %g mm is beyond %g mm", key, m[4 * i + 3],
          MAX_TRANSLATION_MM);
    if (fabs (m[4 * i]) > 2 || fabs (m[4 * i + 1]) > 2
        || fabs (m[4 * i + 2]) > 2)
      return fail (error, P3D_OUSTER_METADATA_ERROR_VALUE, "%s: row %u is "
          "not a rotation's", key, i);
  }
  return TRUE;
}

static gboolean
read_string (JsonObject * root, const gchar * key, const gchar ** value,
    GError ** error)
{
  const gchar *where;
  JsonNode *node = find (root, key, &where);

  *value = NULL;
  if (node == NULL || JSON_NODE_HOLDS_NULL (node))
    return TRUE;
  if (!JSON_NODE_HOLDS_VALUE (node)
      || json_node_get_value_type (node) != G_TYPE_STRING)
    return fail (error, P3D_OUSTER_METADATA_ERROR_SCHEMA, "%s: %s is not a "
        "string", where, key);
  *value = json_node_get_string (node);
  return TRUE;
}

static gboolean
read_metadata (JsonObject * root, P3dOusterMetadata * metadata, GError ** error)
{
  gdouble v = 0, values[P3D_OUSTER_MAX_BEAMS];
  const gchar *profile = NULL, *header = NULL;
  gboolean found;
  guint b, w;

  if (!read_string (root, "udp_profile_lidar", &profile, error)
      || !read_string (root, "header_type", &header, error))
    return FALSE;
  if (profile == NULL || g_strcmp0 (profile, "LEGACY") == 0)
    metadata->profile = P3D_OUSTER_PROFILE_LEGACY;
  else if (g_strcmp0 (profile, "RNG19_RFL8_SIG16_NIR16") == 0)
    metadata->profile = P3D_OUSTER_PROFILE_SINGLE;
  else if (g_strcmp0 (profile, "RNG19_RFL8_SIG16_NIR16_DUAL") == 0)
    metadata->profile = P3D_OUSTER_PROFILE_DUAL;
  else {
    gchar *shown = g_strescape (profile, NULL);

    fail (error, P3D_OUSTER_METADATA_ERROR_VALUE, "udp_profile_lidar "
        "\"%.60s\" is not supported (LEGACY, RNG19_RFL8_SIG16_NIR16 and "
        "RNG19_RFL8_SIG16_NIR16_DUAL are)", shown);
    g_free (shown);
    return FALSE;
  }
  if (header != NULL && g_strcmp0 (header, "STANDARD") != 0) {
    gchar *shown = g_strescape (header, NULL);

    fail (error, P3D_OUSTER_METADATA_ERROR_VALUE, "header_type \"%.60s\" is "
        "not supported (STANDARD is)", shown);
    g_free (shown);
    return FALSE;
  }

  if (!read_number (root, "pixels_per_column", TRUE, 1, P3D_OUSTER_MAX_BEAMS,
          TRUE, &v, NULL, error))
    return FALSE;
  metadata->beams = (guint) v;
  if (!read_number (root, "columns_per_packet", TRUE, 1,
          P3D_OUSTER_MAX_COLUMNS_PER_PACKET, TRUE, &v, NULL, error))
    return FALSE;
  metadata->columns_per_packet = (guint) v;
  if (!read_number (root, "columns_per_frame", TRUE,
          metadata->columns_per_packet, P3D_OUSTER_MAX_COLUMNS, TRUE, &v, NULL,
          error))
    return FALSE;
  w = metadata->columns_per_frame = (guint) v;
  metadata->column_window[0] = 0;
  metadata->column_window[1] = w - 1;
  if (!read_array (root, "column_window", FALSE, 2, 0, w - 1, TRUE, values,
          &found, error))
    return FALSE;
  if (found) {
    metadata->column_window[0] = (guint) values[0];
    metadata->column_window[1] = (guint) values[1];
  }
  if (!read_array (root, "pixel_shift_by_row", TRUE, metadata->beams,
          -(gdouble) w, w, TRUE, values, NULL, error))
    return FALSE;
  for (b = 0; b < metadata->beams; b++)
    metadata->pixel_shift_by_row[b] = (gint) values[b];
  if (!read_array (root, "beam_altitude_angles", TRUE, metadata->beams, -90,
          90, FALSE, metadata->altitude, NULL, error)
      || !read_array (root, "beam_azimuth_angles", TRUE, metadata->beams,
          -360, 360, FALSE, metadata->azimuth, NULL, error))
    return FALSE;

  /* The beam origin: its transform when given, else the older distance
   * along the lidar frame's x. */
  if (!read_transform (root, "beam_to_lidar_transform", FALSE,
          metadata->beam_to_lidar, &found, error))
    return FALSE;
  if (!found) {
    memset (metadata->beam_to_lidar, 0, sizeof (metadata->beam_to_lidar));
    metadata->beam_to_lidar[0] = metadata->beam_to_lidar[5] = 1;
    metadata->beam_to_lidar[10] = metadata->beam_to_lidar[15] = 1;
    v = 0;
    if (!read_number (root, "lidar_origin_to_beam_origin_mm", TRUE, 0,
            MAX_TRANSLATION_MM, FALSE, &v, NULL, error))
      return FALSE;
    metadata->beam_to_lidar[3] = v;
  }
  if (!read_transform (root, "lidar_to_sensor_transform", TRUE,
          metadata->lidar_to_sensor, NULL, error))
    return FALSE;
  if (p3d_ouster_metadata_packet_size (metadata) > MAX_PACKET_SIZE)
    return fail (error, P3D_OUSTER_METADATA_ERROR_VALUE, "%u columns of %u "
        "beams make packets of %" G_GSIZE_FORMAT " bytes, more than UDP "
        "carries", metadata->columns_per_packet, metadata->beams,
        p3d_ouster_metadata_packet_size (metadata));
  return TRUE;
}

gboolean
p3d_ouster_metadata_parse (const gchar * text, gssize length,
    P3dOusterMetadata * metadata, GError ** error)
{
  JsonParser *parser;
  JsonNode *root;
  GError *json_error = NULL;
  gboolean ok;

  memset (metadata, 0, sizeof (*metadata));
  if (length < 0)
    length = strlen (text);
  if ((gsize) length > P3D_OUSTER_MAX_METADATA_SIZE)
    return fail (error, P3D_OUSTER_METADATA_ERROR_READ, "%" G_GSSIZE_FORMAT
        " bytes, more than a metadata file holds (%d)", length,
        P3D_OUSTER_MAX_METADATA_SIZE);
  parser = json_parser_new ();
  if (!json_parser_load_from_data (parser, text, length, &json_error)) {
    fail (error, P3D_OUSTER_METADATA_ERROR_SYNTAX, "not JSON: %s",
        json_error->message);
    g_error_free (json_error);
    g_object_unref (parser);
    return FALSE;
  }
  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root)) {
    g_object_unref (parser);
    return fail (error, P3D_OUSTER_METADATA_ERROR_SCHEMA, "the metadata is "
        "not a JSON object");
  }
  ok = read_metadata (json_node_get_object (root), metadata, error);
  g_object_unref (parser);
  return ok;
}

gboolean
p3d_ouster_metadata_load (const gchar * path, P3dOusterMetadata * metadata,
    GError ** error)
{
  gchar *text = NULL;
  gsize length = 0;
  GError *read_error = NULL;
  gboolean ok;

  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    return fail (error, P3D_OUSTER_METADATA_ERROR_NOT_FOUND, "no such file");
  if (!g_file_get_contents (path, &text, &length, &read_error)) {
    fail (error, P3D_OUSTER_METADATA_ERROR_READ, "%s", read_error->message);
    g_error_free (read_error);
    return FALSE;
  }
  ok = p3d_ouster_metadata_parse (text, length, metadata, error);
  g_free (text);
  return ok;
}

/* ---------------------------------------------------------------------- */
/* The decoder */

/* Whether column @m is in the window. */
static gboolean
in_window (const P3dOusterMetadata * metadata, guint m)
{
  guint first = metadata->column_window[0], last = metadata->column_window[1];

  return first <= last ? (m >= first && m <= last) : (m >= first || m <= last);
}

P3dOusterDecoder *
p3d_ouster_decoder_new (const P3dOusterMetadata * metadata,
    P3dLidarReturns returns)
{
  P3dOusterDecoder *decoder = g_new0 (P3dOusterDecoder, 1);
  guint w = metadata->columns_per_frame, h = metadata->beams, m, b, j;
  const gdouble *bl = metadata->beam_to_lidar;
  const gdouble *ls = metadata->lidar_to_sensor;
  gdouble origin = bl[3];

  decoder->metadata = *metadata;
  decoder->returns = returns;
  decoder->grid_returns = metadata->profile == P3D_OUSTER_PROFILE_DUAL
      && returns == P3D_LIDAR_RETURNS_BOTH ? 2 : 1;
  decoder->column_size = column_size (metadata);
  decoder->columns_offset = metadata->profile == P3D_OUSTER_PROFILE_LEGACY ?
      0 : PACKET_HEADER_SIZE;
  decoder->packets_per_frame = (w + metadata->columns_per_packet - 1) /
      metadata->columns_per_packet;
  if (bl[11] != 0)
    origin = sqrt (bl[3] * bl[3] + bl[11] * bl[11]);

  for (b = 0; b < h; b++) {
    guint rank = 0;

    for (j = 0; j < h; j++)
      if (metadata->altitude[j] < metadata->altitude[b]
          || (metadata->altitude[j] == metadata->altitude[b] && j < b))
        rank++;
    decoder->ring[b] = (gfloat) rank;
    decoder->shift[b] = (guint) ((metadata->pixel_shift_by_row[b] % (gint) w +
            (gint) w) % (gint) w);
  }

  decoder->lut = g_new (gfloat, (gsize) w * h * 6);
  for (m = 0; m < w; m++) {
    /* the encoder angle runs backwards from a full turn */
    gdouble encoder = 2 * G_PI * (1.0 - (gdouble) m / w);

    for (b = 0; b < h; b++) {
      gdouble azimuth = -metadata->azimuth[b] * G_PI / 180.0;
      gdouble altitude = metadata->altitude[b] * G_PI / 180.0;
      gdouble dir[3], off[3];
      gfloat *out = decoder->lut + ((gsize) m * h + b) * 6;
      guint i;

      dir[0] = cos (encoder + azimuth) * cos (altitude);
      dir[1] = sin (encoder + azimuth) * cos (altitude);
      dir[2] = sin (altitude);
      /* the beam leaves from its origin, off the axis */
      off[0] = cos (encoder) * bl[3] - dir[0] * origin;
      off[1] = sin (encoder) * bl[3] - dir[1] * origin;
      off[2] = -dir[2] * origin + bl[11];
      for (i = 0; i < 3; i++) {
        const gdouble *row = ls + 4 * i;

        out[i] = (gfloat) ((row[0] * dir[0] + row[1] * dir[1] +
                row[2] * dir[2]) * 1e-3);
        out[3 + i] = (gfloat) ((row[0] * off[0] + row[1] * off[1] +
                row[2] * off[2] + row[3]) * 1e-3);
      }
    }
  }
  return decoder;
}

void
p3d_ouster_decoder_free (P3dOusterDecoder * decoder)
{
  if (decoder == NULL)
    return;
  g_free (decoder->lut);
  g_free (decoder);
}

gsize
p3d_ouster_decoder_grid_points (const P3dOusterDecoder * decoder)
{
  return (gsize) decoder->metadata.columns_per_frame *
      decoder->metadata.beams * decoder->grid_returns;
}

gboolean
p3d_ouster_decoder_packet_expected (const P3dOusterDecoder * decoder,
    guint index)
{
  const P3dOusterMetadata *metadata = &decoder->metadata;
  guint m, first = index * metadata->columns_per_packet;

  for (m = first; m < first + metadata->columns_per_packet
      && m < metadata->columns_per_frame; m++)
    if (in_window (metadata, m))
      return TRUE;
  return FALSE;
}

guint
p3d_ouster_decoder_packets_per_frame (const P3dOusterDecoder * decoder)
{
  guint i, n = 0;

  for (i = 0; i < decoder->packets_per_frame; i++)
    n += p3d_ouster_decoder_packet_expected (decoder, i);
  return n;
}

guint
p3d_ouster_decoder_first_packet (const P3dOusterDecoder * decoder)
{
  return decoder->metadata.column_window[0] /
      decoder->metadata.columns_per_packet;
}

static inline guint16
read_u16 (const guint8 * p)
{
  return (guint16) (p[0] | (p[1] << 8));
}

static inline guint32
read_u32 (const guint8 * p)
{
  return (guint32) p[0] | ((guint32) p[1] << 8) | ((guint32) p[2] << 16) |
      ((guint32) p[3] << 24);
}

static inline guint64
read_u64 (const guint8 * p)
{
  return (guint64) read_u32 (p) | ((guint64) read_u32 (p + 4) << 32);
}

gboolean
p3d_ouster_packet_parse (const P3dOusterDecoder * decoder,
    const guint8 * data, gsize size, P3dOusterPacket * packet, gchar ** why)
{
  const P3dOusterMetadata *metadata = &decoder->metadata;
  gsize expected = p3d_ouster_metadata_packet_size (metadata);
  gboolean legacy = metadata->profile == P3D_OUSTER_PROFILE_LEGACY;
  gboolean have_index = FALSE;
  guint c;

  if (size != expected) {
    if (why)
      *why = g_strdup_printf ("%" G_GSIZE_FORMAT " bytes, a %s packet of %u "
          "columns of %u beams has %" G_GSIZE_FORMAT, size,
          p3d_ouster_profile_name (metadata->profile),
          metadata->columns_per_packet, metadata->beams, expected);
    return FALSE;
  }
  packet->n_columns = metadata->columns_per_packet;
  packet->frame_id = legacy ? read_u16 (data + 10) : read_u16 (data + 2);
  packet->packet_index = 0;
  for (c = 0; c < packet->n_columns; c++) {
    const guint8 *column = data + decoder->columns_offset +
        c * decoder->column_size;
    guint32 status = legacy ? read_u32 (column + decoder->column_size -
        LEGACY_COLUMN_FOOTER_SIZE) : read_u16 (column + 10);
    guint16 m = read_u16 (column + 8);

    packet->timestamp[c] = read_u64 (column);
    packet->measurement_id[c] = m;
    packet->valid[c] = (status & 1) && m < metadata->columns_per_frame;
    if (m < metadata->columns_per_frame && m >= c && !have_index) {
      /* the packet's place in the frame: its columns are consecutive */
      packet->packet_index = (m - c) / metadata->columns_per_packet;
      have_index = TRUE;
    }
  }
  return TRUE;
}

void
p3d_ouster_decode (const P3dOusterDecoder * decoder, const guint8 * data,
    const P3dOusterPacket * packet, guint64 t0,
    const P3dLidarPointLayout * layout, gfloat * grid, guint64 * valid,
    P3dOusterCounts * counts)
{
  const P3dOusterMetadata *metadata = &decoder->metadata;
  P3dOusterProfile profile = metadata->profile;
  gsize pixel = pixel_size (profile);
  gsize header = profile == P3D_OUSTER_PROFILE_LEGACY ?
      LEGACY_COLUMN_HEADER_SIZE : COLUMN_HEADER_SIZE;
  guint32 range_mask = profile == P3D_OUSTER_PROFILE_LEGACY ? 0xfffff : 0x7ffff;
  guint w = metadata->columns_per_frame, h = metadata->beams;
  guint grid_returns = decoder->grid_returns;
  const guint stride = layout->stride;
  /* counted here: valid[] is guint64 too, and stores to it would make the
   * compiler keep the counts in memory */
  guint64 no_return = 0, duplicates = 0, invalid = 0;
  guint c, b;

  for (c = 0; c < packet->n_columns; c++) {
    const guint8 *column = data + decoder->columns_offset +
        c * decoder->column_size;
    guint m = packet->measurement_id[c];
    const gfloat *lut = decoder->lut + (gsize) m * h * 6;
    gfloat time;

    if (!packet->valid[c]) {
      invalid++;
      continue;
    }
    time = (gfloat) ((gdouble) (gint64) (packet->timestamp[c] - t0) * 1e-9);
    for (b = 0; b < h; b++, lut += 6) {
      const guint8 *px = column + header + b * pixel;
      guint u = m + decoder->shift[b];
      guint32 r[2], intensity[2];
      guint keep, n;
      gsize slot;
      gboolean repeat;

      if (u >= w)
        u -= w;
      if (profile == P3D_OUSTER_PROFILE_DUAL) {
        guint32 w0 = read_u32 (px), w1 = read_u32 (px + 4);

        r[0] = w0 & 0x7ffff;
        intensity[0] = w0 >> 24;
        r[1] = w1 & 0x7ffff;
        intensity[1] = w1 >> 24;
        keep = p3d_lidar_pick_returns (decoder->returns, r[0], intensity[0],
            r[1], intensity[1], &repeat);
        duplicates += repeat;
        no_return += (r[0] == 0) + (r[1] == 0);
      } else {
        r[0] = read_u32 (px) & range_mask;
        intensity[0] = px[4];
        r[1] = intensity[1] = 0;
        keep = r[0] != 0;
        no_return += r[0] == 0;
      }
      /* the destaggered image row by row: each beam's pixels of a packet
       * land side by side */
      slot = ((gsize) b * w + u) * grid_returns;
      for (n = 0; n < 2; n++) {
        gfloat *p, range;

        if (!(keep & (1u << n)))
          continue;
        p = grid + slot * stride;
        range = (gfloat) r[n];
        p[0] = range * lut[0] + lut[3];
        p[1] = range * lut[1] + lut[4];
        p[2] = range * lut[2] + lut[5];
        p3d_lidar_point_set_channels (layout, p, (gfloat) intensity[n], time,
            decoder->ring[b]);
        valid[slot / 64] |= G_GUINT64_CONSTANT (1) << (slot % 64);
        slot++;
      }
    }
  }
  counts->no_return += no_return;
  counts->duplicate_returns += duplicates;
  counts->invalid_columns += invalid;
}

/* Moves point @from to @to, @stride floats (3 to 5: copies the compiler
 * unrolls). */
static inline void
move_point (gfloat * grid, gsize to, gsize from, guint stride)
{
  gfloat *d = grid + to * stride;
  const gfloat *s = grid + from * stride;

  switch (stride) {
    case 5:
      d[4] = s[4];
      /* fall through */
    case 4:
      d[3] = s[3];
      /* fall through */
    default:
      d[0] = s[0];
      d[1] = s[1];
      d[2] = s[2];
  }
}

gsize
p3d_ouster_grid_compact (const P3dOusterDecoder * decoder,
    const P3dLidarPointLayout * layout, gfloat * grid, const guint64 * valid)
{
  gsize n_slots = p3d_ouster_decoder_grid_points (decoder);
  gsize words = (n_slots + 63) / 64, word, n = 0;
  const guint stride = layout->stride;

  for (word = 0; word < words; word++) {
    guint64 bits = valid[word];

    /* a run of points already in place moves nothing */
    if (bits == G_MAXUINT64 && n == word * 64) {
      n += 64;
      continue;
    }
    while (bits != 0) {
      gsize slot = word * 64 + (gsize) __builtin_ctzll (bits);

      bits &= bits - 1;
      if (slot != n)
        move_point (grid, n, slot, stride);
      n++;
    }
  }
  return n;
}
