/* gst-perception: the Ouster packet decoder of ousterparse.
 *
 * GLib and json-glib only, so that it is tested and fuzzed without
 * GStreamer. It reads the sensor's metadata JSON (the flat form firmware
 * 2.x writes and the nested form of later firmware: beam angles, beam
 * origin offset, lidar-to-sensor transform, data format with its column
 * window and pixel shifts), and the lidar packets of the LEGACY,
 * RNG19_RFL8_SIG16_NIR16 and RNG19_RFL8_SIG16_NIR16_DUAL profiles as the
 * firmware user manual lays them out: columns of a header (timestamp in
 * nanoseconds, measurement id, frame id or status) and one pixel per beam.
 *
 * A frame is decoded into a grid of points in destaggered order (the
 * destaggered image row by row: the first beam's columns, then the next
 * beam's, as ouster-sdk lays out a destaggered point cloud), and each
 * pixel's returns side by side; p3d_ouster_decode() places each packet's
 * pixels in their slots whatever the order the packets come in, and
 * p3d_ouster_grid_compact() then keeps the pixels that have a return, in
 * place. Points are in the sensor frame (lidar-to-sensor transform
 * applied), metres.
 */
#ifndef __P3D_OUSTER_DECODER_H__
#define __P3D_OUSTER_DECODER_H__

#include <glib.h>

#include "p3dlidarpoints.h"

G_BEGIN_DECLS

#define P3D_OUSTER_MAX_BEAMS 128
#define P3D_OUSTER_MAX_COLUMNS 4096
#define P3D_OUSTER_MAX_COLUMNS_PER_PACKET 64
/* The IMU packets of the LEGACY IMU profile, sent on their own port. */
#define P3D_OUSTER_IMU_PACKET_SIZE 48
/* Largest metadata file read, in bytes. */
#define P3D_OUSTER_MAX_METADATA_SIZE (4 << 20)

#define P3D_OUSTER_METADATA_ERROR (p3d_ouster_metadata_error_quark ())
GQuark p3d_ouster_metadata_error_quark (void);

typedef enum
{
  P3D_OUSTER_METADATA_ERROR_NOT_FOUND,  /* no such file */
  P3D_OUSTER_METADATA_ERROR_READ,       /* it cannot be read, or is too large */
  P3D_OUSTER_METADATA_ERROR_SYNTAX,     /* not JSON */
  P3D_OUSTER_METADATA_ERROR_SCHEMA,     /* a key missing or malformed */
  P3D_OUSTER_METADATA_ERROR_VALUE,      /* a value out of range or unsupported */
} P3dOusterMetadataError;

typedef enum
{
  P3D_OUSTER_PROFILE_LEGACY,
  P3D_OUSTER_PROFILE_SINGLE,    /* RNG19_RFL8_SIG16_NIR16 */
  P3D_OUSTER_PROFILE_DUAL,      /* RNG19_RFL8_SIG16_NIR16_DUAL */
} P3dOusterProfile;

/**
 * P3dOusterMetadata:
 * @profile: the lidar packet profile
 * @beams: pixels per column
 * @columns_per_packet: columns in a lidar packet
 * @columns_per_frame: columns in a frame (the lidar mode's width)
 * @column_window: the first and last columns sent (the first may be
 *     greater: the window wraps through column 0)
 * @pixel_shift_by_row: each beam's column shift to the destaggered image
 * @altitude: each beam's altitude, degrees
 * @azimuth: each beam's azimuth offset, degrees
 * @beam_to_lidar: 4x4 row-major, millimetres (the beam origin offset)
 * @lidar_to_sensor: 4x4 row-major, millimetres
 */
typedef struct
{
  P3dOusterProfile profile;
  guint beams;
  guint columns_per_packet;
  guint columns_per_frame;
  guint column_window[2];
  gint pixel_shift_by_row[P3D_OUSTER_MAX_BEAMS];
  gdouble altitude[P3D_OUSTER_MAX_BEAMS];
  gdouble azimuth[P3D_OUSTER_MAX_BEAMS];
  gdouble beam_to_lidar[16];
  gdouble lidar_to_sensor[16];
} P3dOusterMetadata;

gboolean p3d_ouster_metadata_parse (const gchar * text, gssize length,
    P3dOusterMetadata * metadata, GError ** error);
gboolean p3d_ouster_metadata_load (const gchar * path,
    P3dOusterMetadata * metadata, GError ** error);
/* Bytes of one lidar packet. */
gsize p3d_ouster_metadata_packet_size (const P3dOusterMetadata * metadata);
const gchar *p3d_ouster_profile_name (P3dOusterProfile profile);

typedef struct _P3dOusterDecoder P3dOusterDecoder;

/**
 * P3dOusterPacket:
 * @frame_id: the frame the packet belongs to
 * @n_columns: its columns
 * @measurement_id: each column's index in the frame
 * @timestamp: each column's time, nanoseconds
 * @valid: each column holds data (its status says so, and its measurement
 *     id is within the frame)
 * @packet_index: which packet of the frame it is (its first column /
 *     columns per packet)
 */
typedef struct
{
  guint frame_id;
  guint n_columns;
  guint16 measurement_id[P3D_OUSTER_MAX_COLUMNS_PER_PACKET];
  guint64 timestamp[P3D_OUSTER_MAX_COLUMNS_PER_PACKET];
  gboolean valid[P3D_OUSTER_MAX_COLUMNS_PER_PACKET];
  guint packet_index;
} P3dOusterPacket;

/* A decoder for @metadata (copied), keeping @returns of dual returns. */
P3dOusterDecoder *p3d_ouster_decoder_new (const P3dOusterMetadata * metadata,
    P3dLidarReturns returns);
void p3d_ouster_decoder_free (P3dOusterDecoder * decoder);
/* Points in a frame's grid: columns x beams x returns. */
gsize p3d_ouster_decoder_grid_points (const P3dOusterDecoder * decoder);
/* Lidar packets a whole frame has (those whose columns meet the window). */
guint p3d_ouster_decoder_packets_per_frame (const P3dOusterDecoder * decoder);
/* Whether packet @index of a frame is one the window sends. */
gboolean p3d_ouster_decoder_packet_expected (const P3dOusterDecoder * decoder,
    guint index);
/* The index of a frame's first packet (the window's first column). */
guint p3d_ouster_decoder_first_packet (const P3dOusterDecoder * decoder);

/* Reads the headers of the lidar packet @data of @size bytes; FALSE and
 * @why (to free) when its size is not the profile's. */
gboolean p3d_ouster_packet_parse (const P3dOusterDecoder * decoder,
    const guint8 * data, gsize size, P3dOusterPacket * packet, gchar ** why);

typedef struct
{
  /* pixels of valid columns without a return (range 0) */
  guint64 no_return;
  /* second returns equal to the first, dropped */
  guint64 duplicate_returns;
  /* columns whose status says they hold no data */
  guint64 invalid_columns;
} P3dOusterCounts;

/* Writes the pixels of @packet's valid columns into the frame's @grid (at
 * most p3d_ouster_decoder_grid_points() points in @layout) and sets their
 * bits in @valid (one bit per grid point, cleared for a new frame); the
 * time channel is a column's timestamp minus @t0 (nanoseconds), in
 * seconds. */
void p3d_ouster_decode (const P3dOusterDecoder * decoder, const guint8 * data,
    const P3dOusterPacket * packet, guint64 t0,
    const P3dLidarPointLayout * layout, gfloat * grid, guint64 * valid,
    P3dOusterCounts * counts);
/* Moves the grid points whose bit is set to the front, in order; returns
 * their number. */
gsize p3d_ouster_grid_compact (const P3dOusterDecoder * decoder,
    const P3dLidarPointLayout * layout, gfloat * grid, const guint64 * valid);

G_END_DECLS

#endif /* __P3D_OUSTER_DECODER_H__ */
