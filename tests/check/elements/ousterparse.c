/* ousterparse: generated packets of every profile (p3dtest-lidargen.c, from the
 * firmware manual) with their metadata file, flat and nested, through
 * appsrc; each frame's sweep against the truth: destaggered, every point
 * within half a millimetre, time, intensity and ring exact, PTS on the
 * packet and the arrival clock. Frame ids across their rollover, lost,
 * late (still placed) and repeated packets, skipped frames, partial
 * frames, IMU packets, refusals; and a pcap file through pcapparse. */
#include <math.h>
#include <string.h>

#include <gst/app/gstappsink.h>
#include <gst/check/gstcheck.h>

#include "p3dtest-elem.h"
#include "p3dtest-lidargen.h"
#include "p3dtest-lidar.h"
#include "p3dtest.h"

typedef struct
{
  OusterGen *gen;
  gchar *dir;
  gchar *metadata;
} Sensor;

static Sensor *
sensor_new (P3dOusterProfile profile, guint beams, guint columns,
    gboolean nested, guint n_frames)
{
  Sensor *sensor = g_new0 (Sensor, 1);
  OusterGenParams params;
  gchar *json;

  ouster_gen_params_init (&params, profile, beams, columns);
  params.n_frames = n_frames;
  if (nested)
    params.metadata.beam_to_lidar[11] = 3.0;
  sensor->gen = ouster_gen_new (&params);
  sensor->dir = g_dir_make_tmp ("ousterparse-XXXXXX", NULL);
  json = ouster_gen_metadata_json (&params.metadata, nested);
  sensor->metadata = elemtest_write_file (sensor->dir, "os.json", json);
  g_free (json);
  return sensor;
}

static void
sensor_free (Sensor * sensor)
{
  ouster_gen_free (sensor->gen);
  elemtest_remove_dir (sensor->dir);
  g_free (sensor->dir);
  g_free (sensor->metadata);
  g_free (sensor);
}

/* A packet's arrival: 200 us after its last column. */
static GstClockTime
arrival_of (const OusterGen * gen, guint p)
{
  const OusterGenPacket *gp = &g_array_index (gen->packets, OusterGenPacket,
      p);
  const P3dOusterMetadata *md = &gen->params.metadata;
  guint last = gp->frame * md->columns_per_frame + gp->packet_index *
      md->columns_per_packet + md->columns_per_packet - 1;

  return g_array_index (gen->column_time, guint64,
      last) - gen->params.first_time + GST_SECOND + 200 * GST_USECOND;
}

/* The latest valid column of packet @p, or its first: the last firing. */
static guint64
packet_end (const OusterGen * gen, guint p)
{
  const OusterGenPacket *gp = &g_array_index (gen->packets, OusterGenPacket,
      p);
  const P3dOusterMetadata *md = &gen->params.metadata;
  guint first = gp->frame * md->columns_per_frame + gp->packet_index *
      md->columns_per_packet, j;
  guint64 end = 0;

  for (j = 0; j < md->columns_per_packet; j++)
    if (g_array_index (gen->column_valid, gboolean, first + j))
      end = g_array_index (gen->column_time, guint64, first + j);
  return end;
}

static LidarRun *
run_packets (const Sensor * sensor, const guint * order, guint n,
    const gchar * properties, const gchar * format)
{
  GPtrArray *packets = g_ptr_array_new_with_free_func ((GDestroyNotify)
      g_bytes_unref);
  GArray *arrivals = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  gchar *parser = g_strdup_printf ("ousterparse name=parser metadata=\"%s\" "
      "%s", sensor->metadata, properties);
  gchar *caps = g_strdup_printf ("application/x-point-cloud,format=%s",
      format);
  LidarRun *run;
  guint i;

  for (i = 0; i < n; i++) {
    guint p = order ? order[i] : i;
    GstClockTime arrival = arrival_of (sensor->gen, p);

    g_ptr_array_add (packets, g_bytes_ref (g_array_index (sensor->gen->packets,
                OusterGenPacket, p).data));
    g_array_append_val (arrivals, arrival);
  }
  run = lidartest_run (parser, caps, packets, (GstClockTime *) arrivals->data);
  g_ptr_array_unref (packets);
  g_array_unref (arrivals);
  g_free (parser);
  g_free (caps);
  return run;
}

/* The frame of packet @p's first packet in order: its index in the
 * generated packets. */
static guint
first_packet_of_frame (const OusterGen * gen, guint frame)
{
  guint p;

  for (p = 0; p < gen->packets->len; p++)
    if (g_array_index (gen->packets, OusterGenPacket, p).frame == frame)
      return p;
  g_assert_not_reached ();
  return 0;
}

static void
check_frames (const Sensor * sensor, const gchar * properties,
    P3dLidarReturns returns, const gchar * format, gboolean arrival_clock)
{
  const OusterGen *gen = sensor->gen;
  gchar *props = g_strdup_printf ("%s returns=%s clock=%s", properties,
      returns == P3D_LIDAR_RETURNS_BOTH ? "both" : returns ==
      P3D_LIDAR_RETURNS_STRONGEST ? "strongest" : "last", arrival_clock ?
      "arrival" : "packet");
  LidarRun *run = run_packets (sensor, NULL, gen->packets->len, props, format);
  LidarSweep *first_frame = ouster_gen_sweep (gen, 0, NULL, returns);
  guint f, p0 = first_packet_of_frame (gen, 0);

  fail_unless (run->error == NULL, "%s", run->error ?
      elemtest_message_text (run->error) : "");
  fail_unless_equals_int (run->sweeps->len, gen->params.n_frames);
  for (f = 0; f < gen->params.n_frames; f++) {
    LidarSweep *sweep = ouster_gen_sweep (gen, f, NULL, returns);
    GstBuffer *buffer = run->sweeps->pdata[f];
    guint p = first_packet_of_frame (gen, f);
    gint64 pts;
    gchar what[32];

    g_snprintf (what, sizeof (what), "frame %u", f);
    lidartest_check_sweep (buffer, sweep, format, 0.0005 + 2e-5, 1e-9, what);
    if (arrival_clock)
      pts = (gint64) arrival_of (gen, p) - (gint64) (packet_end (gen, p) -
          (guint64) sweep->t0);
    else
      pts = (gint64) arrival_of (gen, p0) - (gint64) (packet_end (gen, p0) -
          (guint64) first_frame->t0) + (gint64) (sweep->t0 - first_frame->t0);
    fail_unless_equals_int64 (GST_BUFFER_PTS (buffer), pts);
    fail_unless (GST_BUFFER_DURATION (buffer) > 90 * GST_MSECOND);
    lidar_sweep_free (sweep);
  }
  fail_unless_equals_int64 (lidartest_stat (run, "lost-packets"), 0);
  fail_unless (lidartest_stat (run, "invalid-columns") > 0);
  fail_unless_equals_int (run->warnings->len, 0);
  lidar_sweep_free (first_frame);
  lidartest_run_free (run);
  g_free (props);
}

GST_START_TEST (test_profiles)
{
  Sensor *sensor;
  guint r;

  sensor = sensor_new (P3D_OUSTER_PROFILE_LEGACY, 32, 1024, FALSE, 3);
  check_frames (sensor, "", 0, "xyzit", FALSE);
  check_frames (sensor, "", 0, "xyzir", TRUE);
  sensor_free (sensor);
  sensor = sensor_new (P3D_OUSTER_PROFILE_SINGLE, 64, 512, TRUE, 3);
  check_frames (sensor, "", 0, "xyzit", FALSE);
  sensor_free (sensor);
  sensor = sensor_new (P3D_OUSTER_PROFILE_DUAL, 128, 1024, TRUE, 2);
  for (r = P3D_LIDAR_RETURNS_BOTH; r <= P3D_LIDAR_RETURNS_LAST; r++)
    check_frames (sensor, "", r, r == 1 ? "xyzir" : "xyzit", r == 2);
  sensor_free (sensor);
}

GST_END_TEST;

/* Lost, late and repeated packets: a late packet of the open frame still
 * lands in its place; one warning; frames skipped whole are counted. */
GST_START_TEST (test_lost_late_repeated)
{
  Sensor *sensor = sensor_new (P3D_OUSTER_PROFILE_SINGLE, 32, 512, FALSE, 5);
  const OusterGen *gen = sensor->gen;
  gboolean *sent = g_new (gboolean, gen->packets->len);
  GArray *order = g_array_new (FALSE, FALSE, sizeof (guint));
  guint per_frame = 512 / 16, p, f;
  LidarRun *run;

  for (p = 0; p < gen->packets->len; p++) {
    /* packet 5 of frame 1 lost; frame 3 lost whole */
    sent[p] = p != per_frame + 5 && (p / per_frame != 3);
    if (!sent[p])
      continue;
    /* packet 10 comes after 11, packet 20 twice; a packet of frame 1
     * after frame 2 began: dropped */
    if (p == 10)
      continue;
    g_array_append_val (order, p);
    if (p == 11 || p == 20) {
      guint again = p == 11 ? 10 : 20;

      g_array_append_val (order, again);
    }
    if (p == 2 * per_frame) {
      guint old = per_frame + 7;

      g_array_append_val (order, old);
    }
  }
  run = run_packets (sensor, (guint *) order->data, order->len, "", "xyzit");
  fail_unless (run->error == NULL);
  fail_unless_equals_int (run->sweeps->len, 4);
  for (f = 0; f < 4; f++) {
    guint frame = f < 3 ? f : 4;
    LidarSweep *sweep = ouster_gen_sweep (gen, frame, sent,
        P3D_LIDAR_RETURNS_BOTH);

    lidartest_check_sweep (run->sweeps->pdata[f], sweep, "xyzit", 0.0005 +
        2e-5, 1e-9, "frame");
    lidar_sweep_free (sweep);
  }
  fail_unless_equals_int64 (lidartest_stat (run, "lost-packets"), 1 +
      per_frame);
  fail_unless_equals_int64 (lidartest_stat (run, "late-packets"), 2);
  fail_unless_equals_int64 (lidartest_stat (run, "repeated-packets"), 1);
  fail_unless_equals_int64 (lidartest_stat (run, "breaks"), 1);
  fail_unless_equals_int (run->warnings->len, 1);
  fail_unless (GST_BUFFER_FLAG_IS_SET (run->sweeps->pdata[3],
          GST_BUFFER_FLAG_DISCONT));
  fail_if (GST_BUFFER_FLAG_IS_SET (run->sweeps->pdata[2],
          GST_BUFFER_FLAG_DISCONT));
  lidartest_run_free (run);
  g_array_unref (order);
  g_free (sent);
  sensor_free (sensor);
}

GST_END_TEST;

/* A stream that starts and ends inside frames: their parts are dropped,
 * or output with partial-sweeps; IMU packets are ignored. */
GST_START_TEST (test_partial_frames_and_imu)
{
  Sensor *sensor = sensor_new (P3D_OUSTER_PROFILE_LEGACY, 32, 512, FALSE, 3);
  const OusterGen *gen = sensor->gen;
  guint per_frame = 512 / 16, n = gen->packets->len - 10, i;
  GArray *order = g_array_new (FALSE, FALSE, sizeof (guint));
  LidarRun *run;

  for (i = 10; i < gen->packets->len - 10; i++)
    g_array_append_val (order, i);
  run = run_packets (sensor, (guint *) order->data, order->len, "", "xyzi");
  fail_unless_equals_int (run->sweeps->len, 1);
  fail_unless_equals_int64 (lidartest_stat (run, "partial-sweeps"), 2);
  /* packets before the stream and after it are not lost */
  fail_unless_equals_int64 (lidartest_stat (run, "lost-packets"), 0);
  fail_unless_equals_int (run->warnings->len, 0);
  lidartest_run_free (run);
  run = run_packets (sensor, (guint *) order->data, order->len,
      "partial-sweeps=true", "xyzi");
  fail_unless_equals_int (run->sweeps->len, 3);
  fail_unless_equals_int64 (lidartest_stat (run, "packets"), n - 10);
  lidartest_run_free (run);

  /* IMU packets among them */
  {
    GPtrArray *packets = g_ptr_array_new_with_free_func ((GDestroyNotify)
        g_bytes_unref);
    guint8 imu[48] = { 1 };
    gchar *parser = g_strdup_printf ("ousterparse name=parser metadata=%s",
        sensor->metadata);

    for (i = 0; i < gen->packets->len; i++) {
      g_ptr_array_add (packets, g_bytes_ref (g_array_index (gen->packets,
                  OusterGenPacket, i).data));
      if (i % 10 == 0)
        g_ptr_array_add (packets, g_bytes_new (imu, sizeof (imu)));
    }
    run = lidartest_run (parser, "application/x-point-cloud", packets, NULL);
    fail_unless_equals_int (run->sweeps->len, 3);
    fail_unless_equals_int64 (lidartest_stat (run, "ignored-packets"),
        (gen->packets->len + 9) / 10);
    fail_unless_equals_int (run->warnings->len, 0);
    lidartest_run_free (run);
    g_ptr_array_unref (packets);
    g_free (parser);
  }
  fail_unless (per_frame * 3 == gen->packets->len);
  g_array_unref (order);
  sensor_free (sensor);
}

GST_END_TEST;

static gchar *
run_error (const gchar * parser, GPtrArray * packets, GQuark domain, gint code)
{
  LidarRun *run = lidartest_run (parser, "application/x-point-cloud",
      packets, NULL);
  GError *error = NULL;
  gchar *text;

  fail_unless (run->error != NULL, "no error from %s", parser);
  gst_message_parse_error (run->error, &error, NULL);
  fail_unless (error->domain == domain && error->code == code,
      "%s: %s (%s %d)", parser, error->message,
      g_quark_to_string (error->domain), error->code);
  text = elemtest_message_text (run->error);
  g_error_free (error);
  lidartest_run_free (run);
  return text;
}

GST_START_TEST (test_refusals)
{
  Sensor *sensor = sensor_new (P3D_OUSTER_PROFILE_DUAL, 32, 1024, FALSE, 1);
  GPtrArray *packets = g_ptr_array_new_with_free_func ((GDestroyNotify)
      g_bytes_unref);
  guint8 odd[6464] = { 0 };
  gchar *text, *parser, *path;

  g_ptr_array_add (packets, g_bytes_new (odd, sizeof (odd)));
  text = run_error ("ousterparse name=parser", packets, GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_NOT_FOUND);
  fail_unless (strstr (text, "No metadata") != NULL, "%s", text);
  g_free (text);
  text = run_error ("ousterparse name=parser metadata=/nonexistent.json",
      packets, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND);
  fail_unless (strstr (text, "/nonexistent.json") != NULL, "%s", text);
  g_free (text);
  path = elemtest_write_file (sensor->dir, "bad.json", "{\"pixels_per_column"
      "\": 32, \"columns_per_packet\": 16, \"columns_per_frame\": 1024}");
  parser = g_strdup_printf ("ousterparse name=parser metadata=%s", path);
  text = run_error (parser, packets, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE);
  fail_unless (strstr (text, "bad.json") != NULL
      && strstr (text, "pixel_shift_by_row") != NULL, "%s", text);
  g_free (text);
  g_free (parser);
  g_free (path);
  /* a LEGACY packet for a DUAL sensor */
  parser = g_strdup_printf ("ousterparse name=parser metadata=%s",
      sensor->metadata);
  text = run_error (parser, packets, GST_STREAM_ERROR,
      GST_STREAM_ERROR_WRONG_TYPE);
  fail_unless (strstr (text, "A packet of 6464 bytes arrived: the metadata's "
          "RNG19_RFL8_SIG16_NIR16_DUAL lidar packets of 16 columns of 32 beams "
          "have 8448 bytes") != NULL, "%s", text);
  g_free (text);
  g_free (parser);
  g_ptr_array_unref (packets);
  sensor_free (sensor);
}

GST_END_TEST;

/* A recording through pcapparse: the same sweeps as the truth. */
GST_START_TEST (test_pcap)
{
  Sensor *sensor = sensor_new (P3D_OUSTER_PROFILE_DUAL, 32, 1024, FALSE, 2);
  const OusterGen *gen = sensor->gen;
  gchar *pcap = g_build_filename (sensor->dir, "os.pcap", NULL);
  GPtrArray *packets = g_ptr_array_new (), *samples;
  GArray *times = g_array_new (FALSE, FALSE, sizeof (gdouble));
  gchar *line;
  guint p, f;

  for (p = 0; p < gen->packets->len; p++) {
    gdouble t = (arrival_of (gen, p) - GST_SECOND) / 1000.0;

    g_ptr_array_add (packets, g_array_index (gen->packets, OusterGenPacket,
            p).data);
    g_array_append_val (times, t);
  }
  fail_unless (lidar_gen_write_pcap (pcap, packets, (gdouble *) times->data,
          1624323701, 7502));
  line = g_strdup_printf ("filesrc location=\"%s\" ! pcapparse dst-port=7502 "
      "! ousterparse metadata=\"%s\" ! application/x-point-cloud,format=xyzit "
      "! appsink name=sink sync=false", pcap, sensor->metadata);
  samples = elemtest_run_pipeline (line);
  fail_unless_equals_int (samples->len, 2);
  for (f = 0; f < 2; f++) {
    LidarSweep *sweep = ouster_gen_sweep (gen, f, NULL, 0);

    lidartest_check_sweep (elemtest_sample_buffer (samples, f), sweep,
        "xyzit", 0.0005 + 2e-5, 1e-9, "pcap frame");
    lidar_sweep_free (sweep);
  }
  g_ptr_array_unref (samples);
  g_ptr_array_unref (packets);
  g_array_unref (times);
  g_free (line);
  g_free (pcap);
  sensor_free (sensor);
}

GST_END_TEST;

static Suite *
ousterparse_suite (void)
{
  Suite *s = suite_create ("ousterparse");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_profiles);
  tcase_add_test (tc, test_lost_late_repeated);
  tcase_add_test (tc, test_partial_frames_and_imu);
  tcase_add_test (tc, test_refusals);
  tcase_add_test (tc, test_pcap);
  return s;
}

P3D_CHECK_MAIN (ousterparse);
