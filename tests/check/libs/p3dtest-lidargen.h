/* The tests' lidar packet generator: Velodyne and Ouster packets written
 * from the sensors' manuals, with the truth of every point.
 *
 * A synthetic scene (a ground plane, a wall all around, a see-through
 * fence over part of the turn that gives a second echo) is raycast by the
 * sensor's lasers at the manuals' firing times and angles; each echo's
 * distance is quantized to the sensor's unit and written into packets laid
 * out as the manuals describe them. Each firing keeps its true point (on
 * the surface: the decoded point is within half a distance unit of it),
 * time, intensity and ring, so that the tests compare the decoders'
 * output point by point. The geometry and the packet layout here are
 * written apart from the decoders (rotation matrices and ray casting,
 * byte offsets from the manuals); only the enums and the calibration
 * struct are shared.
 *
 * GLib only (a SplitMix64 of its own), so that the benchmark uses it too.
 */
#ifndef __LIDARGEN_H__
#define __LIDARGEN_H__

#include <glib.h>

#include "ousterparse-decoder.h"
#include "velodyneparse-decoder.h"

G_BEGIN_DECLS

/* One true point: on the surface, in the frame x forward, y left, z up. */
typedef struct
{
  gdouble x, y, z;
  /* microseconds since the hour of the stream's first packet (Velodyne),
   * nanoseconds of the sensor clock (Ouster) */
  gdouble time;
  guint intensity;
  guint ring;
  /* the raw distance written in the packet */
  guint32 raw;
} LidarTruth;

/* The echoes of one firing, in the generator's order (nearest first). */
typedef struct
{
  guint n;
  LidarTruth echo[2];
} LidarFiring;

/* ---------------------------------------------------------------------- */
/* Velodyne */

typedef struct
{
  P3dVelodyneModel model;
  /* the angles and corrections the lasers have (built-in or any) */
  P3dVelodyneCalibration calibration;
  /* 0x37 strongest, 0x38 last, 0x39 dual */
  guint8 return_mode;
  /* the product byte written (0: the model's) */
  guint8 product;
  /* microseconds past the hour of the first packet's first firing */
  gdouble first_time;
  /* hundredths of a degree of the first block, and the turn per block
   * group (VLP-16: per block of two sequences; others: per sequence),
   * varied by up to +-gap_jitter from packet to packet */
  guint first_azimuth;
  guint gap;
  guint gap_jitter;
  /* packets generated (lost ones included) */
  guint n_packets;
  /* a firing without a return one time in this many (0: never) */
  guint no_return_every;
  /* HDL-64E: the lower block's azimuth this many hundredths after the
   * upper's */
  guint lower_offset;
  guint64 seed;
} VelodyneGenParams;

void velodyne_gen_params_init (VelodyneGenParams * params,
    P3dVelodyneModel model);

/* A column (firing sequence) of a generated packet. */
typedef struct
{
  /* hundredths, unwrapped (grows past 36000 with every turn) */
  gdouble azimuth;
  /* microseconds, the sequence's first firing */
  gdouble time;
  /* firings in decode order: banks, then lasers */
  guint first_firing;
  guint n_firings;
} VelodyneGenColumn;

typedef struct
{
  GBytes *data;
  /* its timestamp, unwrapped, microseconds */
  gdouble timestamp;
  guint first_column;
  guint n_columns;
} VelodyneGenPacket;

typedef struct
{
  VelodyneGenParams params;
  GArray *packets;              /* VelodyneGenPacket */
  GArray *columns;              /* VelodyneGenColumn */
  GArray *firings;              /* LidarFiring */
  /* lasers per column, returns per firing in the packets */
  guint lasers;
  gboolean dual;
} VelodyneGen;

/* Generates params->n_packets packets. */
VelodyneGen *velodyne_gen_new (const VelodyneGenParams * params);
void velodyne_gen_free (VelodyneGen * gen);

/* The points a decoder keeps of @firing under @returns, in decode order. */
guint velodyne_gen_expected (const VelodyneGen * gen,
    const LidarFiring * firing, P3dLidarReturns returns, LidarTruth * out);

/* One expected sweep: the columns of one turn from the cut angle. */
typedef struct
{
  /* the turn's index (azimuth - cut) / 36000 */
  gint64 turn;
  guint first_column;
  guint n_columns;
  /* its first column's time, microseconds */
  gdouble t0;
  GArray *points;               /* LidarTruth, in decode order */
} LidarSweep;

/* The whole sweeps the packets for which @sent[p] is TRUE (NULL: all)
 * hold, cut at @cut_angle (degrees): every turn but the first and the
 * last seen. */
GPtrArray *velodyne_gen_sweeps (const VelodyneGen * gen, const gboolean * sent,
    gdouble cut_angle, P3dLidarReturns returns);
void lidar_sweep_free (LidarSweep * sweep);

/* A calibration with random angles, distance corrections and offsets for
 * @n_lasers lasers (no two-point corrections), and its YAML text in
 * ros-drivers' form (the flow style of its files when @flow). */
void velodyne_gen_random_calibration (guint n_lasers, guint64 seed,
    P3dVelodyneCalibration * calibration);
gchar *velodyne_gen_calibration_yaml (const P3dVelodyneCalibration *
    calibration, gboolean flow);

/* A 512-byte position packet. */
GBytes *velodyne_gen_position_packet (guint32 timestamp);

/* ---------------------------------------------------------------------- */
/* Ouster */

typedef struct
{
  P3dOusterMetadata metadata;
  /* frames generated; the first frame id */
  guint n_frames;
  guint first_frame_id;
  /* nanoseconds of the first frame's column 0, and frames per second */
  guint64 first_time;
  guint fps;
  /* a column marked invalid one time in this many (0: never) */
  guint invalid_column_every;
  guint no_return_every;
  guint64 seed;
} OusterGenParams;

/* Metadata for @beams beams, @columns columns a frame, in @profile: angles
 * like a real sensor's, random pixel shifts within a few columns, the
 * transforms of the OS sensors (optionally a beam origin above the axis). */
void ouster_gen_params_init (OusterGenParams * params,
    P3dOusterProfile profile, guint beams, guint columns);

typedef struct
{
  GBytes *data;
  guint frame;                  /* index in the generated frames */
  guint packet_index;
} OusterGenPacket;

typedef struct
{
  OusterGenParams params;
  GArray *packets;              /* OusterGenPacket */
  /* per frame, column and beam: the firing (frame-major) */
  GArray *firings;              /* LidarFiring */
  /* per frame and column: its timestamp and whether it is valid */
  GArray *column_time;          /* guint64 */
  GArray *column_valid;         /* gboolean */
} OusterGen;

OusterGen *ouster_gen_new (const OusterGenParams * params);
void ouster_gen_free (OusterGen * gen);

/* The sweep of frame @frame, destaggered (the image's rows one after the
 * other), from the packets for which @sent[p] is TRUE (NULL: all). */
LidarSweep *ouster_gen_sweep (const OusterGen * gen, guint frame,
    const gboolean * sent, P3dLidarReturns returns);

/* The metadata as JSON: the flat form of firmware 2.x, or the nested one
 * of later firmware. */
gchar *ouster_gen_metadata_json (const P3dOusterMetadata * metadata,
    gboolean nested);

/* ---------------------------------------------------------------------- */

/* Writes @packets (GBytes, UDP payloads) to a classic pcap file (Ethernet,
 * IPv4, UDP to @port), packet i at @times_us[i] microseconds after
 * @start_s seconds of the epoch. */
gboolean lidar_gen_write_pcap (const gchar * path, GPtrArray * packets,
    const gdouble * times_us, guint64 start_s, guint16 port);

G_END_DECLS

#endif /* __LIDARGEN_H__ */
