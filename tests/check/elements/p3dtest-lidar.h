/* Helpers of the lidar parser tests (velodyneparse, ousterparse): packets
 * pushed through appsrc into a parser, its sweeps, messages and stats
 * collected; sweeps compared with the packet generator's truth. */
#ifndef LIDAR_TEST_H
#define LIDAR_TEST_H

#include <gst/gst.h>

#include "p3dtest-lidargen.h"

G_BEGIN_DECLS

typedef struct
{
  /* the appsink's buffers (refs), in order */
  GPtrArray *sweeps;
  /* the caps they came with */
  GstCaps *caps;
  /* the parser's warnings and the error (GstMessage), if any */
  GPtrArray *warnings;
  GstMessage *error;
  /* the stats property at the end */
  GstStructure *stats;
} LidarRun;

/* Runs "appsrc ! @parser ! @caps ! appsink" (@parser a gst-launch
 * fragment naming the element "parser") with @packets (GBytes) pushed one
 * per buffer, each with PTS @arrivals[i] (NULL: none), then EOS; waits for
 * EOS or an error. */
LidarRun *lidartest_run (const gchar * parser, const gchar * caps,
    GPtrArray * packets, const GstClockTime * arrivals);
void lidartest_run_free (LidarRun * run);

/* The stats field @name. */
guint64 lidartest_stat (const LidarRun * run, const gchar * name);

/* Fails unless sweep @buffer holds @expected's points in @format
 * ("xyzit", "xyzir") within @tolerance metres, intensity and ring exact,
 * the time channel within 1 us of (truth time - expected->t0) x
 * @time_scale seconds. */
void lidartest_check_sweep (GstBuffer * buffer, const LidarSweep * expected,
    const gchar * format, gdouble tolerance, gdouble time_scale,
    const gchar * what);

/* A free UDP port on 127.0.0.1. */
guint16 lidartest_free_port (void);

G_END_DECLS

#endif /* LIDAR_TEST_H */
