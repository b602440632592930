/* gst-perception: P3dLidarParse, the base class of the lidar packet parsers
 * (velodyneparse, ousterparse).
 *
 * A GstBaseParse that takes one sensor packet per input buffer (udpsrc,
 * or filesrc ! pcapparse) and outputs application/x-point-cloud sweeps in
 * system or CUDA memory. It owns what the parsers share: the output caps
 * and pool, the sweep being filled (decoded straight into an output
 * buffer's memory: for CUDA memory its host staging copy, uploaded once
 * when the sweep ends), the sweep's timestamps (from the sensor's clock or
 * the packets' arrival), the partial sweeps at the ends of a stream, the
 * counters of the stats property and their warnings, and the properties
 * format, returns, clock, partial-sweeps and cuda-device-id.
 *
 * A subclass implements handle_packet() (and reset(), finish()): it
 * classifies the packet, decodes it between begin_sweep() and end_sweep()
 * into the room reserve() or grid() gives, and counts what happened.
 */
#ifndef __P3D_LIDAR_PARSE_H__
#define __P3D_LIDAR_PARSE_H__

#include <gst/base/gstbaseparse.h>

#include "p3dlidarpoints.h"
#include "p3dperception.h"

G_BEGIN_DECLS

/* Where a sweep's PTS comes from. */
typedef enum
{
  /* the sensor's timestamps, placed on the running time at the first
   * packet: jitter-free, at the sensor's pace */
  P3D_LIDAR_CLOCK_PACKET,
  /* the arrival time of the packet that holds the sweep's first firing,
   * less the sensor time from that firing to the packet's last one */
  P3D_LIDAR_CLOCK_ARRIVAL,
} P3dLidarClock;

#define P3D_TYPE_LIDAR_CLOCK (p3d_lidar_clock_get_type ())
GType p3d_lidar_clock_get_type (void);
#define P3D_TYPE_LIDAR_RETURNS (p3d_lidar_returns_get_type ())
GType p3d_lidar_returns_get_type (void);

/* What the stats property counts. */
typedef enum
{
  P3D_LIDAR_COUNT_PACKETS,      /* data packets decoded */
  P3D_LIDAR_COUNT_IGNORED,      /* the sensor's other packets (position, IMU) */
  P3D_LIDAR_COUNT_INVALID,      /* data packets refused as malformed */
  P3D_LIDAR_COUNT_LOST,         /* packets missing from the sequence */
  P3D_LIDAR_COUNT_LATE,         /* packets that came after a later one */
  P3D_LIDAR_COUNT_REPEATED,     /* packets that came twice */
  P3D_LIDAR_COUNT_BREAKS,       /* gaps in time or azimuth that cut a sweep */
  P3D_LIDAR_COUNT_NO_RETURN,    /* firings without a return */
  P3D_LIDAR_COUNT_DUPLICATE_RETURNS,    /* second returns equal to the first */
  P3D_LIDAR_COUNT_INVALID_COLUMNS,      /* columns marked without data */
  P3D_LIDAR_N_COUNTS,
} P3dLidarCount;

#define P3D_TYPE_LIDAR_PARSE (p3d_lidar_parse_get_type ())
G_DECLARE_DERIVABLE_TYPE (P3dLidarParse, p3d_lidar_parse, P3D, LIDAR_PARSE,
    GstBaseParse);

/**
 * P3dLidarParseClass:
 * @start_sensor: at start, with the properties read (under no lock): load
 *     calibration or metadata; FALSE after posting an error
 * @stop_sensor: at stop
 * @reset: forget the stream (start, flush): the next packet is the first
 * @handle_packet: one input buffer's bytes; @arrival is its PTS (or DTS)
 *     or GST_CLOCK_TIME_NONE
 * @finish: at EOS: end the open sweep, saying whether it is whole
 */
struct _P3dLidarParseClass
{
  GstBaseParseClass parent_class;

  gboolean (*start_sensor) (P3dLidarParse * self);
  void (*stop_sensor) (P3dLidarParse * self);
  void (*reset) (P3dLidarParse * self);
  GstFlowReturn (*handle_packet) (P3dLidarParse * self, const guint8 * data,
      gsize size, GstClockTime arrival);
  void (*finish) (P3dLidarParse * self);
};

/* Opens a sweep whose first firing is at @t0 (nanoseconds, sensor clock),
 * in a packet that arrived at @arrival (GST_CLOCK_TIME_NONE: unknown) and
 * whose last firing is at @packet_end; @capacity: points it may hold (it
 * grows beyond, at a copy). FALSE after posting an error (negotiation,
 * allocation). */
gboolean p3d_lidar_parse_begin_sweep (P3dLidarParse * self, gint64 t0,
    GstClockTime arrival, gint64 packet_end, gsize capacity);
gboolean p3d_lidar_parse_sweep_is_open (P3dLidarParse * self);
/* Room for @n_points more points after those of the open sweep, NULL
 * after posting an error. */
gfloat *p3d_lidar_parse_reserve (P3dLidarParse * self, gsize n_points);
/* Counts @n_points written at reserve()'s pointer; @last: the sensor time
 * of the latest firing so far (nanoseconds). */
void p3d_lidar_parse_commit (P3dLidarParse * self, gsize n_points,
    gint64 last);
/* The open sweep's points from its first, with room for @n_points (a grid
 * to fill in any order), NULL after posting an error. */
gfloat *p3d_lidar_parse_grid (P3dLidarParse * self, gsize n_points);
/* The open sweep holds @n_points points from its first (after grid()). */
void p3d_lidar_parse_set_points (P3dLidarParse * self, gsize n_points,
    gint64 last);
/* Ends the open sweep: it goes out after the current packet, unless it is
 * @partial (not a whole revolution or frame) and partial-sweeps is false,
 * when it is dropped and counted. @discont: data before it were lost. */
void p3d_lidar_parse_end_sweep (P3dLidarParse * self, gboolean partial,
    gboolean discont);
/* The negotiated point layout (valid inside a sweep). */
const P3dLidarPointLayout *p3d_lidar_parse_get_layout (P3dLidarParse * self);
/* The returns property as it was at start. */
P3dLidarReturns p3d_lidar_parse_get_returns (P3dLidarParse * self);
/* Adds @n to a counter of the stats property; the first lost, late,
 * repeated or invalid packet of a stream posts one warning. */
void p3d_lidar_parse_count (P3dLidarParse * self, P3dLidarCount what,
    guint64 n);

G_END_DECLS

#endif /* __P3D_LIDAR_PARSE_H__ */
