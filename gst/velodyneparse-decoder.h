/* gst-perception: the Velodyne packet decoder of velodyneparse.
 *
 * GLib only (and libyaml for calibration files), so that it is tested and
 * fuzzed without GStreamer. It knows the data packets of the VLP-16, Puck
 * Hi-Res, VLP-32C, HDL-32E, HDL-64E S2/S3 and VLS-128 as their user manuals
 * describe them: 1206 bytes, twelve 100-byte blocks (a 0xFFEE-style flag,
 * the azimuth in hundredths of a degree, 32 returns of a little-endian
 * distance and an intensity byte), a timestamp in microseconds past the
 * hour, and two factory bytes (return mode, product) where the model has
 * them. Each model's firing timing, per-laser angles (built in, or from a
 * ros-drivers/velodyne calibration YAML file) and distance unit turn a
 * packet into points in the frame x forward, y left, z up.
 *
 * A packet is read in three steps: p3d_velodyne_packet_parse() checks it
 * and lays out its firing sequences ("columns": their azimuths and
 * times), p3d_velodyne_decoder_place() says where it falls in the stream
 * (lost, late or repeated packets, the hour's rollover, a gap that breaks
 * the sweep) and p3d_velodyne_decoder_find_cut() where a revolution ends;
 * then p3d_velodyne_decode() writes the points of a range of columns.
 */
#ifndef __P3D_VELODYNE_DECODER_H__
#define __P3D_VELODYNE_DECODER_H__

#include <glib.h>

#include "p3dlidarpoints.h"

G_BEGIN_DECLS

#define P3D_VELODYNE_DATA_PACKET_SIZE 1206
/* The position (telemetry) packets the sensors send on port 8308. */
#define P3D_VELODYNE_POSITION_PACKET_SIZE 512
#define P3D_VELODYNE_MAX_LASERS 128
#define P3D_VELODYNE_MAX_COLUMNS 24
/* Largest calibration file read, in bytes (the 64-laser files are 20 KB). */
#define P3D_VELODYNE_MAX_CALIBRATION_SIZE (1 << 20)

typedef enum
{
  P3D_VELODYNE_MODEL_AUTO = 0,
  P3D_VELODYNE_MODEL_VLP16,
  P3D_VELODYNE_MODEL_PUCK_HIRES,
  P3D_VELODYNE_MODEL_VLP32C,
  P3D_VELODYNE_MODEL_HDL32E,
  P3D_VELODYNE_MODEL_HDL64E,
  P3D_VELODYNE_MODEL_VLS128,
} P3dVelodyneModel;

#define P3D_VELODYNE_N_MODELS 7

/**
 * P3dVelodyneModelInfo:
 * @nick: the model property's value ("vlp-16")
 * @name: the manual's name ("VLP-16")
 * @n_lasers: lasers
 * @distance_unit: metres per unit of a raw distance
 * @product_id: the product byte of its packets, 0 when it has none (the
 *     HDL-64E's last bytes are status)
 * @has_builtin: its laser angles are fixed and built in; FALSE: each unit
 *     has its own, from a calibration file
 * @has_dual: its packets say their return mode and may hold dual returns
 */
typedef struct
{
  P3dVelodyneModel model;
  const gchar *nick;
  const gchar *name;
  guint n_lasers;
  gdouble distance_unit;
  guint8 product_id;
  gboolean has_builtin;
  gboolean has_dual;
} P3dVelodyneModelInfo;

/* NULL for P3D_VELODYNE_MODEL_AUTO. */
const P3dVelodyneModelInfo *p3d_velodyne_model_get_info (P3dVelodyneModel
    model);

/* The model a data packet comes from: by its block flags (HDL-64E,
 * VLS-128), else its product byte; AUTO when the product byte is unknown.
 * *product receives that byte. */
P3dVelodyneModel p3d_velodyne_model_detect (const guint8 * packet,
    guint8 * product);

/* ---------------------------------------------------------------------- */
/* Calibration */

#define P3D_VELODYNE_CALIBRATION_ERROR \
    (p3d_velodyne_calibration_error_quark ())
GQuark p3d_velodyne_calibration_error_quark (void);

typedef enum
{
  P3D_VELODYNE_CALIBRATION_ERROR_NOT_FOUND,     /* no such file */
  P3D_VELODYNE_CALIBRATION_ERROR_READ,  /* it cannot be read, or is too large */
  P3D_VELODYNE_CALIBRATION_ERROR_SYNTAX,        /* not YAML */
  P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA,        /* a key missing or malformed */
  P3D_VELODYNE_CALIBRATION_ERROR_VALUE, /* a value out of range */
} P3dVelodyneCalibrationError;

/**
 * P3dVelodyneLaser:
 * @rot_correction: radians; the laser fires at the block's azimuth minus
 *     this (ros-drivers' convention: its files' rot_correction)
 * @vert_correction: the laser's elevation, radians
 * @dist_correction: metres added to every distance
 * @dist_correction_x: with @two_point, the correction at 2.4 m along x
 * @dist_correction_y: with @two_point, the correction at 1.93 m along y
 * @two_point: the HDL-64E's two-point distance calibration applies
 * @vert_offset: metres from the rotation axis' origin to the laser's, along
 *     the vertical of its plane (vert_offset_correction)
 * @horiz_offset: metres, sideways (horiz_offset_correction)
 * @ring: rank of its elevation, 0 the lowest
 */
typedef struct
{
  gdouble rot_correction;
  gdouble vert_correction;
  gdouble dist_correction;
  gdouble dist_correction_x;
  gdouble dist_correction_y;
  gboolean two_point;
  gdouble vert_offset;
  gdouble horiz_offset;
  guint ring;
} P3dVelodyneLaser;

/**
 * P3dVelodyneCalibration:
 * @n_lasers: lasers in the file
 * @distance_resolution: the file's distance_resolution in metres, 0 when it
 *     has none (the decoder takes the model's unit; see the element)
 */
typedef struct
{
  guint n_lasers;
  gdouble distance_resolution;
  P3dVelodyneLaser lasers[P3D_VELODYNE_MAX_LASERS];
} P3dVelodyneCalibration;

/* A calibration in ros-drivers/velodyne's YAML form (num_lasers,
 * distance_resolution, lasers: one mapping per laser with laser_id,
 * rot_correction, vert_correction and optional dist_correction,
 * dist_correction_x/_y, two_pt_correction_available,
 * vert_offset_correction, horiz_offset_correction; other keys ignored).
 * On failure @error says which key of which laser (and the line). */
gboolean p3d_velodyne_calibration_parse (const gchar * text, gsize length,
    P3dVelodyneCalibration * calibration, GError ** error);
gboolean p3d_velodyne_calibration_load (const gchar * path,
    P3dVelodyneCalibration * calibration, GError ** error);
/* The fixed angles of @model (the numbers of ros-drivers/velodyne's
 * VLP16db, VLP16_hires_db, VeloView-VLP-32C, 32db and VLS128 files); FALSE
 * for the HDL-64E, whose every unit has its own. */
gboolean p3d_velodyne_calibration_builtin (P3dVelodyneModel model,
    P3dVelodyneCalibration * calibration);

/* ---------------------------------------------------------------------- */
/* Packets */

typedef struct _P3dVelodyneDecoder P3dVelodyneDecoder;

/**
 * P3dVelodynePacket:
 * @timestamp: microseconds past the hour
 * @return_mode: the return-mode byte (0x37 strongest, 0x38 last, 0x39
 *     dual), 0 for the HDL-64E
 * @product: the product byte (the HDL-64E: a status value)
 * @dual: the packet holds two returns per firing
 * @n_columns: firing sequences in the packet
 * @azimuth: each sequence's azimuth at its first firing, hundredths of a
 *     degree in [0, 36000), clockwise seen from above, 0 ahead
 * @gap: the azimuth each sequence turns through, hundredths (0 where it is
 *     unknown); the lasers' azimuths are interpolated with it
 * @start: microseconds from @timestamp to each sequence's first firing
 * @end: microseconds from @timestamp to the packet's last firing
 *
 * A data packet laid out by p3d_velodyne_packet_parse().
 */
typedef struct
{
  guint32 timestamp;
  guint8 return_mode;
  guint8 product;
  gboolean dual;
  guint n_columns;
  gfloat azimuth[P3D_VELODYNE_MAX_COLUMNS];
  gfloat gap[P3D_VELODYNE_MAX_COLUMNS];
  gdouble start[P3D_VELODYNE_MAX_COLUMNS];
  gdouble end;

  /*< private > */
  /* per column and bank of 32 lasers (VLP-16: 16), the block of each
   * return, and the column's first return in its block (VLP-16: the
   * second sequence starts at the 17th) */
  guint8 block[P3D_VELODYNE_MAX_COLUMNS][4][2];
  guint8 channel0[P3D_VELODYNE_MAX_COLUMNS];
} P3dVelodynePacket;

/* A decoder for @model (not AUTO) with @calibration, or the built-in
 * angles when it is NULL; NULL and @error (SCHEMA) when the calibration
 * does not fit the model (its laser count) or the model has no built-in
 * angles. @cut_angle: degrees in the packets' azimuth, where a revolution
 * ends. */
P3dVelodyneDecoder *p3d_velodyne_decoder_new (P3dVelodyneModel model,
    const P3dVelodyneCalibration * calibration, P3dLidarReturns returns,
    gdouble cut_angle, GError ** error);
void p3d_velodyne_decoder_free (P3dVelodyneDecoder * decoder);
/* Forgets the stream: the next packet is the first. */
void p3d_velodyne_decoder_reset (P3dVelodyneDecoder * decoder);
P3dVelodyneModel p3d_velodyne_decoder_get_model (const P3dVelodyneDecoder *
    decoder);
/* Microseconds between the packets of a stream in @dual mode or not: the
 * firing sequences they hold, whatever the rotation speed. */
gdouble p3d_velodyne_decoder_packet_period (const P3dVelodyneDecoder *
    decoder, gboolean dual);
/* Points p3d_velodyne_decode() may write for @n_columns columns. */
gsize p3d_velodyne_decoder_max_points (const P3dVelodyneDecoder * decoder,
    const P3dVelodynePacket * packet, guint n_columns);

/* Lays out the 1206-byte data packet @data; FALSE and @why (a sentence to
 * free) when its block flags are not those of the decoder's model. */
gboolean p3d_velodyne_packet_parse (const P3dVelodyneDecoder * decoder,
    const guint8 * data, P3dVelodynePacket * packet, gchar ** why);

typedef enum
{
  /* the next packet of the stream: decode it */
  P3D_VELODYNE_PLACE_NEXT,
  /* older than a packet already taken (it arrived late): drop it */
  P3D_VELODYNE_PLACE_LATE,
  /* the same time as the last packet taken: a repeat, drop it */
  P3D_VELODYNE_PLACE_REPEAT,
} P3dVelodynePlaceKind;

/**
 * P3dVelodynePlace:
 * @kind: what to do with the packet
 * @time: its timestamp in microseconds since the hour of the stream's first
 *     packet (the hour's rollovers counted)
 * @lost: packets missing between the last one taken and this one
 * @break_sweep: the time or azimuth jumped further than lost packets
 *     explain (100 ms without packets, or more azimuth than the fastest
 *     rotation covers): the sweep in progress must end before this packet,
 *     which starts a partial one. Also set for the stream's first packet.
 */
typedef struct
{
  P3dVelodynePlaceKind kind;
  gint64 time;
  guint64 lost;
  gboolean break_sweep;
} P3dVelodynePlace;

/* Where @packet falls after the packets taken so far. */
void p3d_velodyne_decoder_place (const P3dVelodyneDecoder * decoder,
    const P3dVelodynePacket * packet, P3dVelodynePlace * place);
/* Takes @packet (placed NEXT at @place) as the stream's latest; returns
 * the index of its first column that starts a new revolution (its
 * azimuth passed the cut angle), or its column count when none does. */
guint p3d_velodyne_decoder_take (P3dVelodyneDecoder * decoder,
    const P3dVelodynePacket * packet, const P3dVelodynePlace * place);

typedef struct
{
  /* firings without a return (distance 0) */
  guint64 no_return;
  /* second returns equal to the first (a single echo), dropped */
  guint64 duplicate_returns;
} P3dVelodyneCounts;

/* Writes the points of columns [first, last) of @packet at @out, in
 * @layout, each return in firing order; @time_offset: seconds from the
 * sweep's first firing to @packet's timestamp (the time channel is that
 * plus the firing's own offset). Returns the points written, at most
 * p3d_velodyne_decoder_max_points(). Adds to @counts. */
gsize p3d_velodyne_decode (const P3dVelodyneDecoder * decoder,
    const guint8 * data, const P3dVelodynePacket * packet, guint first,
    guint last, gdouble time_offset, const P3dLidarPointLayout * layout,
    gfloat * out, P3dVelodyneCounts * counts);

G_END_DECLS

#endif /* __P3D_VELODYNE_DECODER_H__ */
