/* velodyneparse: generated packets of every model (p3dtest-lidargen.c, from the
 * manuals) through appsrc; each sweep against the truth: every point
 * within half the distance unit, time within 1 us, intensity and ring
 * exact, the sweeps cut where the azimuth passes cut-angle, their PTS on
 * the packet clock and on the arrival clock. Lost, late and repeated
 * packets, position packets, breaks, the hour's rollover, partial sweeps,
 * and every refusal with its domain, code and message. Then a pcap file
 * through pcapparse, and the same packets over UDP on 127.0.0.1 at the
 * sensor's pace into udpsrc, giving the same sweeps, with and without
 * packets dropped on the way. */
#include <math.h>
#include <string.h>

#include <gst/app/gstappsink.h>
#include <gst/check/gstcheck.h>

#include "p3dtest-elem.h"
#include "p3dtest-lidargen.h"
#include "p3dtest-lidar.h"
#include "p3dtest.h"

/* Arrivals: a second after the start of the clock, 100 us after the
 * packet's timestamp. */
#define ARRIVAL_BASE GST_SECOND

static GPtrArray *
packets_of (const VelodyneGen * gen, const gboolean * sent, GArray * arrivals)
{
  GPtrArray *packets = g_ptr_array_new_with_free_func ((GDestroyNotify)
      g_bytes_unref);
  guint p;

  for (p = 0; p < gen->packets->len; p++) {
    const VelodyneGenPacket *gp = &g_array_index (gen->packets,
        VelodyneGenPacket, p);
    GstClockTime arrival = ARRIVAL_BASE + (GstClockTime)
        llround ((gp->timestamp - g_array_index (gen->packets,
                VelodyneGenPacket, 0).timestamp + 100) * 1000.0);

    if (sent != NULL && !sent[p])
      continue;
    g_ptr_array_add (packets, g_bytes_ref (gp->data));
    if (arrivals != NULL)
      g_array_append_val (arrivals, arrival);
  }
  return packets;
}

/* The packet's first firing offset and last firing, microseconds from its
 * timestamp, as the decoder lays them out. */
static void
packet_times (const VelodyneGen * gen, guint p, gdouble * start, gdouble * end)
{
  P3dVelodyneDecoder *decoder = p3d_velodyne_decoder_new (gen->params.model,
      &gen->params.calibration, P3D_LIDAR_RETURNS_BOTH, 0, NULL);
  P3dVelodynePacket packet;

  fail_unless (p3d_velodyne_packet_parse (decoder, g_bytes_get_data
          (g_array_index (gen->packets, VelodyneGenPacket, p).data, NULL),
          &packet, NULL));
  *start = packet.start[0];
  *end = packet.end;
  p3d_velodyne_decoder_free (decoder);
}

static gint64
ns (gdouble us)
{
  return (gint64) llround (us * 1000.0);
}

/* Runs @gen's packets (those @sent) through "velodyneparse @properties"
 * and checks its sweeps against the truth cut at @cut; returns the run. */
static LidarRun *
check_stream (const VelodyneGen * gen, const gboolean * sent,
    const gchar * properties, gdouble cut, P3dLidarReturns returns,
    const gchar * format, gboolean arrival_clock)
{
  const P3dVelodyneModelInfo *info =
      p3d_velodyne_model_get_info (gen->params.model);
  GArray *arrivals = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  GPtrArray *packets = packets_of (gen, sent, arrivals);
  GPtrArray *expected = velodyne_gen_sweeps (gen, sent, cut, returns);
  static const gchar *const returns_names[] = { "both", "strongest", "last" };
  gchar *parser = g_strdup_printf ("velodyneparse name=parser cut-angle=%f "
      "returns=%s clock=%s %s", cut, returns_names[returns], arrival_clock ?
      "arrival" : "packet", properties);
  gchar *caps = g_strdup_printf ("application/x-point-cloud,format=%s",
      format);
  LidarRun *run = lidartest_run (parser, caps, packets,
      (GstClockTime *) arrivals->data);
  guint first = 0, per_packet, s;
  gdouble start0, end0, t0_first;

  fail_unless (run->error == NULL, "%s", run->error ?
      elemtest_message_text (run->error) : "");
  fail_unless_equals_int (run->sweeps->len, expected->len);
  fail_unless (expected->len > 0);
  while (sent != NULL && !sent[first])
    first++;
  packet_times (gen, first, &start0, &end0);
  t0_first = g_array_index (gen->packets, VelodyneGenPacket,
      first).timestamp + start0;
  per_packet = g_array_index (gen->packets, VelodyneGenPacket, 0).n_columns;

  for (s = 0; s < expected->len; s++) {
    const LidarSweep *sweep = g_ptr_array_index (expected, s);
    GstBuffer *buffer = g_ptr_array_index (run->sweeps, s);
    guint p = sweep->first_column / per_packet, k;
    gdouble start, end;
    gchar what[64];
    gint64 pts;

    g_snprintf (what, sizeof (what), "%s sweep %u", info->name, s);
    lidartest_check_sweep (buffer, sweep, format, info->distance_unit / 2 +
        2e-5, 1e-6, what);
    /* the PTS of its first firing: the sensor's time placed at the first
     * packet's, or its packet's arrival less the firings after it */
    packet_times (gen, p, &start, &end);
    if (arrival_clock) {
      for (k = 0; g_bytes_get_data (g_ptr_array_index (packets, k), NULL) !=
          g_bytes_get_data (g_array_index (gen->packets, VelodyneGenPacket,
                  p).data, NULL); k++);
      pts = (gint64) g_array_index (arrivals, GstClockTime, k) -
          (ns (g_array_index (gen->packets, VelodyneGenPacket, p).timestamp +
              end) - ns (sweep->t0));
    } else {
      pts = (gint64) g_array_index (arrivals, GstClockTime, 0) -
          (ns (g_array_index (gen->packets, VelodyneGenPacket,
                  first).timestamp + end0) - ns (t0_first)) +
          (ns (sweep->t0) - ns (t0_first));
    }
    fail_unless (llabs ((gint64) GST_BUFFER_PTS (buffer) - pts) <= 1,
        "%s: pts %" GST_TIME_FORMAT ", %" GST_TIME_FORMAT " expected", what,
        GST_TIME_ARGS (GST_BUFFER_PTS (buffer)), GST_TIME_ARGS (pts));
    fail_unless (GST_BUFFER_DURATION_IS_VALID (buffer));
    fail_unless (GST_BUFFER_DURATION (buffer) > 0);
    fail_unless_equals_int64 (GST_BUFFER_OFFSET (buffer), s);
  }
  fail_unless_equals_int64 (lidartest_stat (run, "sweeps"), expected->len);
  g_ptr_array_unref (expected);
  g_ptr_array_unref (packets);
  g_array_unref (arrivals);
  g_free (parser);
  g_free (caps);
  return run;
}

/* Packets for about @turns turns of @model. */
static VelodyneGen *
make_gen (P3dVelodyneModel model, guint8 mode, gdouble turns,
    const P3dVelodyneCalibration * cal)
{
  VelodyneGenParams params;
  guint groups;

  velodyne_gen_params_init (&params, model);
  params.return_mode = mode;
  params.gap = 40;
  if (cal != NULL)
    params.calibration = *cal;
  groups = model == P3D_VELODYNE_MODEL_VLP16
      || model == P3D_VELODYNE_MODEL_PUCK_HIRES ? (mode == 0x39 ? 6 : 12) :
      model == P3D_VELODYNE_MODEL_VLS128 ? (mode == 0x39 ? 1 : 3) :
      model == P3D_VELODYNE_MODEL_HDL64E || mode == 0x39 ? 6 : 12;
  params.n_packets = (guint) (turns * 36000 / (40.0 * groups));
  return velodyne_gen_new (&params);
}

GST_START_TEST (test_every_model)
{
  static const P3dVelodyneModel models[] = {
    P3D_VELODYNE_MODEL_VLP16, P3D_VELODYNE_MODEL_PUCK_HIRES,
    P3D_VELODYNE_MODEL_VLP32C, P3D_VELODYNE_MODEL_HDL32E,
    P3D_VELODYNE_MODEL_VLS128,
  };
  static const gchar *const nicks[] = { "vlp-16", "puck-hi-res", "vlp-32c",
    "hdl-32e", "vls-128"
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (models); i++) {
    VelodyneGen *gen = make_gen (models[i], 0x37, 3.5, NULL);
    gchar *model = g_strdup_printf ("model=%s", nicks[i]);

    /* the model from the packets, or given */
    lidartest_run_free (check_stream (gen, NULL, "", 180, 0, "xyzit", FALSE));
    lidartest_run_free (check_stream (gen, NULL, model, 37.5, 0, "xyzir",
            TRUE));
    velodyne_gen_free (gen);
    g_free (model);
  }
}

GST_END_TEST;

GST_START_TEST (test_dual_returns)
{
  static const P3dVelodyneModel models[] = {
    P3D_VELODYNE_MODEL_VLP16, P3D_VELODYNE_MODEL_VLP32C,
    P3D_VELODYNE_MODEL_HDL32E, P3D_VELODYNE_MODEL_VLS128,
  };
  guint i, r;

  for (i = 0; i < G_N_ELEMENTS (models); i++) {
    VelodyneGen *gen = make_gen (models[i], 0x39, 2.5, NULL);

    for (r = P3D_LIDAR_RETURNS_BOTH; r <= P3D_LIDAR_RETURNS_LAST; r++) {
      LidarRun *run = check_stream (gen, NULL, "", 90, r, "xyzit", FALSE);

      /* a single echo comes twice in a dual packet: dropped, counted */
      if (r == P3D_LIDAR_RETURNS_BOTH)
        fail_unless (lidartest_stat (run, "duplicate-returns") > 1000);
      else
        fail_unless_equals_int64 (lidartest_stat (run, "duplicate-returns"), 0);
      lidartest_run_free (run);
    }
    velodyne_gen_free (gen);
  }
}

GST_END_TEST;

/* The HDL-64E with its calibration file; also a file for a model whose
 * angles are built in. */
GST_START_TEST (test_calibration_file)
{
  gchar *dir = g_dir_make_tmp ("velodyneparse-XXXXXX", NULL);
  static const P3dVelodyneModel models[] = {
    P3D_VELODYNE_MODEL_HDL64E, P3D_VELODYNE_MODEL_VLP32C,
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (models); i++) {
    P3dVelodyneCalibration cal;
    gchar *yaml, *path, *properties;
    VelodyneGen *gen;

    velodyne_gen_random_calibration (p3d_velodyne_model_get_info
        (models[i])->n_lasers, 40 + i, &cal);
    yaml = velodyne_gen_calibration_yaml (&cal, i == 1);
    path = elemtest_write_file (dir, "cal.yaml", yaml);
    properties = g_strdup_printf ("calibration=\"%s\"", path);
    gen = make_gen (models[i], 0x37, 2.5, &cal);
    lidartest_run_free (check_stream (gen, NULL, properties, 0, 0, "xyzir",
            FALSE));
    velodyne_gen_free (gen);
    g_free (yaml);
    g_free (path);
    g_free (properties);
  }
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* Across the top of the hour: the times go on. */
GST_START_TEST (test_hour_rollover)
{
  VelodyneGenParams params;
  VelodyneGen *gen;

  velodyne_gen_params_init (&params, P3D_VELODYNE_MODEL_HDL32E);
  params.gap = 40;
  params.n_packets = 250;
  params.first_time = 3600e6 - 60000.0;
  gen = velodyne_gen_new (&params);
  lidartest_run_free (check_stream (gen, NULL, "", 180, 0, "xyzit", FALSE));
  lidartest_run_free (check_stream (gen, NULL, "", 180, 0, "xyzit", TRUE));
  velodyne_gen_free (gen);
}

GST_END_TEST;

/* Lost, late and repeated packets: the sweeps hold what came, the stats
 * count them, one warning says so. */
GST_START_TEST (test_lost_late_repeated)
{
  VelodyneGen *gen = make_gen (P3D_VELODYNE_MODEL_VLP16, 0x37, 3.5, NULL);
  gboolean *sent = g_new (gboolean, gen->packets->len);
  GPtrArray *packets, *expected;
  LidarRun *run;
  guint p, lost = 0, s;

  for (p = 0; p < gen->packets->len; p++) {
    sent[p] = p % 23 != 7;
    lost += !sent[p];
  }
  /* the truth without the lost ones, the late one (dropped) too */
  expected = velodyne_gen_sweeps (gen, sent, 180, P3D_LIDAR_RETURNS_BOTH);
  /* what arrives: packet 100 after 101, 120 twice */
  packets = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  for (p = 0; p < gen->packets->len; p++) {
    GBytes *data = g_array_index (gen->packets, VelodyneGenPacket, p).data;

    if (!sent[p] || p == 100)
      continue;
    g_ptr_array_add (packets, g_bytes_ref (data));
    if (p == 101)
      g_ptr_array_add (packets, g_bytes_ref (g_array_index (gen->packets,
                  VelodyneGenPacket, 100).data));
    if (p == 120)
      g_ptr_array_add (packets, g_bytes_ref (data));
  }
  run = lidartest_run ("velodyneparse name=parser", "application/"
      "x-point-cloud,format=xyzit", packets, NULL);
  fail_unless (run->error == NULL);
  sent[100] = FALSE;
  g_ptr_array_unref (expected);
  expected = velodyne_gen_sweeps (gen, sent, 180, P3D_LIDAR_RETURNS_BOTH);
  fail_unless_equals_int (run->sweeps->len, expected->len);
  for (s = 0; s < expected->len; s++)
    lidartest_check_sweep (g_ptr_array_index (run->sweeps, s),
        g_ptr_array_index (expected, s), "xyzit", 0.001 + 2e-5, 1e-6, "sweep");
  fail_unless_equals_int64 (lidartest_stat (run, "lost-packets"), lost + 1);
  fail_unless_equals_int64 (lidartest_stat (run, "late-packets"), 1);
  fail_unless_equals_int64 (lidartest_stat (run, "repeated-packets"), 1);
  fail_unless_equals_int64 (lidartest_stat (run, "breaks"), 0);
  fail_unless_equals_int64 (lidartest_stat (run, "packets"), packets->len - 2);
  /* one warning for all of them */
  fail_unless_equals_int (run->warnings->len, 1);
  {
    gchar *text = elemtest_message_text (run->warnings->pdata[0]);

    fail_unless (strstr (text, "Packets were lost") != NULL, "%s", text);
    g_free (text);
  }
  lidartest_run_free (run);
  g_ptr_array_unref (expected);
  g_ptr_array_unref (packets);
  g_free (sent);
  velodyne_gen_free (gen);
}

GST_END_TEST;

/* Position packets are ignored; partial-sweeps outputs the parts at both
 * ends, and the points of all sweeps are every point sent. */
GST_START_TEST (test_position_packets_and_partial_sweeps)
{
  VelodyneGen *gen = make_gen (P3D_VELODYNE_MODEL_HDL32E, 0x37, 2.5, NULL);
  GPtrArray *packets = g_ptr_array_new_with_free_func ((GDestroyNotify)
      g_bytes_unref);
  GPtrArray *expected = velodyne_gen_sweeps (gen, NULL, 180, 0);
  gsize total = 0, sum = 0;
  LidarRun *run;
  guint p, s;

  for (p = 0; p < gen->packets->len; p++) {
    const VelodyneGenPacket *gp = &g_array_index (gen->packets,
        VelodyneGenPacket, p);
    guint f;

    g_ptr_array_add (packets, g_bytes_ref (gp->data));
    if (p % 14 == 0)
      g_ptr_array_add (packets, velodyne_gen_position_packet (p));
    for (f = 0; f < gp->n_columns * gen->lasers; f++) {
      LidarTruth out[2];

      total += velodyne_gen_expected (gen, &g_array_index (gen->firings,
              LidarFiring, g_array_index (gen->columns, VelodyneGenColumn,
                  gp->first_column).first_firing + f), 0, out);
    }
  }
  run = lidartest_run ("velodyneparse name=parser partial-sweeps=true",
      "application/x-point-cloud,format=xyzi", packets, NULL);
  fail_unless (run->error == NULL);
  fail_unless_equals_int (run->sweeps->len, expected->len + 2);
  for (s = 0; s < run->sweeps->len; s++)
    sum += gst_buffer_get_size (run->sweeps->pdata[s]) / 16;
  fail_unless_equals_int64 (sum, total);
  for (s = 0; s < expected->len; s++)
    lidartest_check_sweep (run->sweeps->pdata[s + 1], expected->pdata[s],
        "xyzi", 0.001 + 2e-5, 1e-6, "sweep");
  fail_unless (GST_BUFFER_FLAG_IS_SET (run->sweeps->pdata[0],
          GST_BUFFER_FLAG_DISCONT));
  fail_if (GST_BUFFER_FLAG_IS_SET (run->sweeps->pdata[1],
          GST_BUFFER_FLAG_DISCONT));
  fail_unless_equals_int64 (lidartest_stat (run, "ignored-packets"),
      (gen->packets->len + 13) / 14);
  fail_unless_equals_int64 (lidartest_stat (run, "partial-sweeps"), 0);
  fail_unless_equals_int (run->warnings->len, 0);
  lidartest_run_free (run);

  /* without partial-sweeps they are counted */
  run = lidartest_run ("velodyneparse name=parser", "application/"
      "x-point-cloud,format=xyzi", packets, NULL);
  fail_unless_equals_int (run->sweeps->len, expected->len);
  fail_unless_equals_int64 (lidartest_stat (run, "partial-sweeps"), 2);
  /* the first whole sweep follows a dropped part: a discontinuity */
  fail_unless (GST_BUFFER_FLAG_IS_SET (run->sweeps->pdata[0],
          GST_BUFFER_FLAG_DISCONT));
  lidartest_run_free (run);
  g_ptr_array_unref (expected);
  g_ptr_array_unref (packets);
  velodyne_gen_free (gen);
}

GST_END_TEST;

/* 100 ms without packets ends the sweep: what came goes out, the part
 * after the gap is partial. */
GST_START_TEST (test_break)
{
  VelodyneGen *gen = make_gen (P3D_VELODYNE_MODEL_VLP16, 0x37, 5.6, NULL);
  gboolean *sent = g_new (gboolean, gen->packets->len);
  GPtrArray *expected, *packets;
  LidarRun *run;
  guint p, s;

  /* 80 packets (106 ms) lost from the middle of the third turn (packets
   * 122 to 197) into the fourth (to 272) */
  for (p = 0; p < gen->packets->len; p++)
    sent[p] = p < 170 || p >= 250;
  packets = packets_of (gen, sent, NULL);
  run = lidartest_run ("velodyneparse name=parser", "application/"
      "x-point-cloud,format=xyzit", packets, NULL);
  expected = velodyne_gen_sweeps (gen, sent, 180, 0);
  fail_unless_equals_int64 (lidartest_stat (run, "breaks"), 1);
  fail_unless_equals_int64 (lidartest_stat (run, "lost-packets"), 80);
  /* the sweep the gap cut goes out with what came before it; the part of
   * the fourth turn after it is dropped; the fifth follows, a
   * discontinuity */
  fail_unless_equals_int (expected->len, 4);
  fail_unless_equals_int (run->sweeps->len, 3);
  fail_unless_equals_int64 (lidartest_stat (run, "partial-sweeps"), 3);
  for (s = 0; s < run->sweeps->len; s++)
    lidartest_check_sweep (run->sweeps->pdata[s], expected->pdata[s < 2 ? s :
            s + 1], "xyzit", 0.001 + 2e-5, 1e-6, "sweep");
  fail_if (GST_BUFFER_FLAG_IS_SET (run->sweeps->pdata[1],
          GST_BUFFER_FLAG_DISCONT));
  fail_unless (GST_BUFFER_FLAG_IS_SET (run->sweeps->pdata[2],
          GST_BUFFER_FLAG_DISCONT));
  lidartest_run_free (run);
  g_ptr_array_unref (expected);
  g_ptr_array_unref (packets);
  g_free (sent);
  velodyne_gen_free (gen);
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
  fail_unless_equals_int (run->sweeps->len, 0);
  lidartest_run_free (run);
  return text;
}

GST_START_TEST (test_refusals)
{
  gchar *dir = g_dir_make_tmp ("velodyneparse-XXXXXX", NULL);
  VelodyneGenParams params;
  VelodyneGen *gen, *hdl64;
  GPtrArray *packets = g_ptr_array_new_with_free_func ((GDestroyNotify)
      g_bytes_unref);
  P3dVelodyneCalibration cal;
  gchar *text, *path, *parser, *yaml;
  guint8 odd[1000] = { 0 };

  /* a packet of another size */
  g_ptr_array_add (packets, g_bytes_new (odd, sizeof (odd)));
  text = run_error ("velodyneparse name=parser", packets, GST_STREAM_ERROR,
      GST_STREAM_ERROR_WRONG_TYPE);
  fail_unless (strstr (text, "A packet of 1000 bytes arrived") != NULL, "%s",
      text);
  g_free (text);
  g_ptr_array_set_size (packets, 0);

  /* a product byte of no known model, unless the model is given */
  velodyne_gen_params_init (&params, P3D_VELODYNE_MODEL_VLP16);
  params.product = 0x77;
  params.n_packets = 300;
  params.gap = 40;
  gen = velodyne_gen_new (&params);
  g_ptr_array_add (packets, g_bytes_ref (g_array_index (gen->packets,
              VelodyneGenPacket, 0).data));
  text = run_error ("velodyneparse name=parser", packets, GST_STREAM_ERROR,
      GST_STREAM_ERROR_WRONG_TYPE);
  fail_unless (strstr (text, "product byte 0x77") != NULL, "%s", text);
  g_free (text);
  lidartest_run_free (check_stream (gen, NULL, "model=vlp-16", 180, 0, "xyzi",
          FALSE));

  /* the HDL-64E without its file: at start when given, at the first packet
   * when found */
  text = run_error ("velodyneparse name=parser model=hdl-64e", packets,
      GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS);
  fail_unless (strstr (text, "needs its calibration file") != NULL, "%s", text);
  g_free (text);
  hdl64 = make_gen (P3D_VELODYNE_MODEL_HDL64E, 0x37, 0.01, NULL);
  g_ptr_array_set_size (packets, 0);
  g_ptr_array_add (packets, g_bytes_ref (g_array_index (hdl64->packets,
              VelodyneGenPacket, 0).data));
  text = run_error ("velodyneparse name=parser", packets, GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_SETTINGS);
  fail_unless (strstr (text, "HDL-64E S2/S3 needs its calibration") != NULL,
      "%s", text);
  g_free (text);

  /* calibration files: missing, not YAML, for another laser count */
  text = run_error ("velodyneparse name=parser calibration=/nonexistent.yaml",
      packets, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND);
  fail_unless (strstr (text, "/nonexistent.yaml") != NULL, "%s", text);
  g_free (text);
  path = elemtest_write_file (dir, "bad.yaml", "num_lasers: 64\nlasers: [");
  parser = g_strdup_printf ("velodyneparse name=parser calibration=%s", path);
  text = run_error (parser, packets, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE);
  fail_unless (strstr (text, "bad.yaml") != NULL && strstr (text, "line")
      != NULL, "%s", text);
  g_free (text);
  g_free (parser);
  g_free (path);
  velodyne_gen_random_calibration (16, 1, &cal);
  yaml = velodyne_gen_calibration_yaml (&cal, TRUE);
  path = elemtest_write_file (dir, "vlp16.yaml", yaml);
  parser = g_strdup_printf ("velodyneparse name=parser calibration=%s "
      "model=hdl-32e", path);
  text = run_error (parser, packets, GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_SETTINGS);
  fail_unless (strstr (text, "16 lasers, the HDL-32E has 32") != NULL, "%s",
      text);
  g_free (text);
  g_free (parser);
  /* and found from the packets: the same */
  parser = g_strdup_printf ("velodyneparse name=parser calibration=%s", path);
  text = run_error (parser, packets, GST_RESOURCE_ERROR,
      GST_RESOURCE_ERROR_SETTINGS);
  fail_unless (strstr (text, "16 lasers, the HDL-64E S2/S3 has 64") != NULL,
      "%s", text);
  g_free (text);
  g_free (parser);
  g_free (path);
  g_free (yaml);

  g_ptr_array_unref (packets);
  velodyne_gen_free (gen);
  velodyne_gen_free (hdl64);
  elemtest_remove_dir (dir);
  g_free (dir);
}

GST_END_TEST;

/* No whole revolution: a warning that says so, then EOS; malformed
 * packets are counted with a warning of their own. */
GST_START_TEST (test_no_sweep)
{
  VelodyneGen *gen = make_gen (P3D_VELODYNE_MODEL_VLP16, 0x37, 0.5, NULL);
  GPtrArray *packets = packets_of (gen, NULL, NULL);
  guint8 bad[P3D_VELODYNE_DATA_PACKET_SIZE];
  LidarRun *run;
  gchar *text;

  memcpy (bad, g_bytes_get_data (g_array_index (gen->packets,
              VelodyneGenPacket, 3).data, NULL), sizeof (bad));
  bad[501] = 0x00;
  g_ptr_array_add (packets, g_bytes_new (bad, sizeof (bad)));
  run = lidartest_run ("velodyneparse name=parser", "application/"
      "x-point-cloud", packets, NULL);
  fail_unless (run->error == NULL);
  fail_unless_equals_int (run->sweeps->len, 0);
  fail_unless_equals_int (run->warnings->len, 2);
  text = elemtest_message_text (run->warnings->pdata[0]);
  fail_unless (strstr (text, "Malformed data packets") != NULL, "%s", text);
  g_free (text);
  text = elemtest_message_text (run->warnings->pdata[1]);
  fail_unless (strstr (text, "No sweep before the end of the stream") != NULL,
      "%s", text);
  g_free (text);
  fail_unless_equals_int64 (lidartest_stat (run, "invalid-packets"), 1);
  fail_unless_equals_int64 (lidartest_stat (run, "partial-sweeps"), 1);
  lidartest_run_free (run);

  /* nothing at all */
  g_ptr_array_set_size (packets, 0);
  run = lidartest_run ("velodyneparse name=parser", "application/"
      "x-point-cloud", packets, NULL);
  fail_unless (run->error == NULL);
  fail_unless_equals_int (run->warnings->len, 1);
  lidartest_run_free (run);
  g_ptr_array_unref (packets);
  velodyne_gen_free (gen);
}

GST_END_TEST;

/* Runs @description to EOS and returns its sweeps (the appsink "sink"). */
static GPtrArray *
sweeps_of (GstElement * pipeline)
{
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  GPtrArray *sweeps = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_buffer_unref);
  GstSample *sample;

  while ((sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink), 0))) {
    g_ptr_array_add (sweeps, gst_buffer_ref (gst_sample_get_buffer (sample)));
    gst_sample_unref (sample);
  }
  gst_object_unref (sink);
  return sweeps;
}

static void
assert_same_points (GPtrArray * a, GPtrArray * b)
{
  guint s;

  fail_unless_equals_int (a->len, b->len);
  for (s = 0; s < a->len; s++) {
    GstMapInfo ma, mb;

    fail_unless (gst_buffer_map (a->pdata[s], &ma, GST_MAP_READ));
    fail_unless (gst_buffer_map (b->pdata[s], &mb, GST_MAP_READ));
    fail_unless_equals_int64 (ma.size, mb.size);
    elemtest_assert_bytes (ma.data, mb.data, ma.size, "sweep");
    gst_buffer_unmap (a->pdata[s], &ma);
    gst_buffer_unmap (b->pdata[s], &mb);
  }
}

/* Plays @pcap (@n_packets data packets) over UDP on 127.0.0.1 at the
 * capture's pace into udpsrc ! velodyneparse; returns the sweeps and (in
 * *stats) the parser's stats. */
static GPtrArray *
loopback (const gchar * pcap, guint n_packets, GstStructure ** stats)
{
  guint16 port = lidartest_free_port ();
  gchar *rx_line = g_strdup_printf ("udpsrc address=127.0.0.1 port=%u "
      "buffer-size=8388608 ! velodyneparse name=parser ! "
      "application/x-point-cloud,format=xyzit ! appsink name=sink sync=false wait-on-eos=false",
      port);
  gchar *tx_line = g_strdup_printf ("filesrc location=\"%s\" ! pcapparse "
      "dst-port=2368 ! udpsink host=127.0.0.1 port=%u sync=true",
      pcap, port);
  GstElement *rx = gst_parse_launch (rx_line, NULL);
  GstElement *tx = gst_parse_launch (tx_line, NULL);
  GstElement *parser = gst_bin_get_by_name (GST_BIN (rx), "parser");
  GstBus *bus = gst_element_get_bus (tx);
  GstMessage *message;
  GPtrArray *sweeps;
  guint waited;

  fail_unless (rx != NULL && tx != NULL);
  fail_unless (gst_element_set_state (rx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  fail_unless (gst_element_get_state (rx, NULL, NULL, 5 * GST_SECOND) !=
      GST_STATE_CHANGE_FAILURE);
  fail_unless (gst_element_set_state (tx, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  message = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (message != NULL
      && GST_MESSAGE_TYPE (message) == GST_MESSAGE_EOS);
  gst_message_unref (message);
  /* the receiver takes every datagram (slowly under valgrind), then EOS */
  for (waited = 0; waited < 60000; waited += 20) {
    GstStructure *now;
    guint64 taken = 0;

    g_object_get (parser, "stats", &now, NULL);
    gst_structure_get_uint64 (now, "packets", &taken);
    gst_structure_free (now);
    if (taken >= n_packets)
      break;
    g_usleep (20 * 1000);
  }
  gst_element_send_event (rx, gst_event_new_eos ());
  gst_object_unref (bus);
  bus = gst_element_get_bus (rx);
  message = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  fail_unless (message != NULL
      && GST_MESSAGE_TYPE (message) == GST_MESSAGE_EOS);
  gst_message_unref (message);
  sweeps = sweeps_of (rx);
  g_object_get (parser, "stats", stats, NULL);
  gst_element_set_state (tx, GST_STATE_NULL);
  gst_element_set_state (rx, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (parser);
  gst_object_unref (tx);
  gst_object_unref (rx);
  g_free (rx_line);
  g_free (tx_line);
  return sweeps;
}

/* A recording (a pcap file of the data packets on port 2368) through
 * pcapparse gives the truth; played over UDP at the sensor's pace
 * into udpsrc it gives the same sweeps; with packets dropped (a recording
 * without every 40th), the stats count them and the sweeps still come. */
GST_START_TEST (test_pcap_and_loopback)
{
  gchar *dir = g_dir_make_tmp ("velodyneparse-XXXXXX", NULL);
  gchar *pcap = g_build_filename (dir, "drive.pcap", NULL);
  gchar *dropped = g_build_filename (dir, "dropped.pcap", NULL);
  VelodyneGen *gen = make_gen (P3D_VELODYNE_MODEL_VLP16, 0x37, 3.2, NULL);
  GPtrArray *packets = g_ptr_array_new ();
  GArray *times = g_array_new (FALSE, FALSE, sizeof (gdouble));
  GPtrArray *expected = velodyne_gen_sweeps (gen, NULL, 180, 0);
  GPtrArray *from_file, *from_udp;
  GstStructure *stats = NULL;
  GstElement *pipeline;
  gchar *line;
  guint64 value;
  guint p, s;

  for (p = 0; p < gen->packets->len; p++) {
    VelodyneGenPacket *gp = &g_array_index (gen->packets, VelodyneGenPacket,
        p);
    gdouble t = gp->timestamp - g_array_index (gen->packets,
        VelodyneGenPacket, 0).timestamp;

    g_ptr_array_add (packets, gp->data);
    g_array_append_val (times, t);
  }
  fail_unless (lidar_gen_write_pcap (pcap, packets, (gdouble *) times->data,
          1700000000, 2368));
  /* the same recording with every 40th packet dropped */
  for (p = 39; p + 1 < packets->len; p += 39) {
    g_ptr_array_remove_index (packets, p);
    g_array_remove_index (times, p);
  }
  fail_unless (lidar_gen_write_pcap (dropped, packets, (gdouble *) times->data,
          1700000000, 2368));

  /* the file */
  line = g_strdup_printf ("filesrc location=\"%s\" ! pcapparse dst-port=2368 "
      "! velodyneparse ! application/x-point-cloud,format=xyzit ! appsink "
      "name=sink sync=false wait-on-eos=false", pcap);
  pipeline = gst_parse_launch (line, NULL);
  {
    GstBus *bus = gst_element_get_bus (pipeline);
    GstMessage *message;

    gst_element_set_state (pipeline, GST_STATE_PLAYING);
    message = gst_bus_timed_pop_filtered (bus, 60 * GST_SECOND,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
    fail_unless (message != NULL
        && GST_MESSAGE_TYPE (message) == GST_MESSAGE_EOS);
    gst_message_unref (message);
    gst_object_unref (bus);
  }
  from_file = sweeps_of (pipeline);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (pipeline);
  g_free (line);
  fail_unless_equals_int (from_file->len, expected->len);
  for (s = 0; s < expected->len; s++)
    lidartest_check_sweep (from_file->pdata[s], expected->pdata[s], "xyzit",
        0.001 + 2e-5, 1e-6, "pcap sweep");

  /* over UDP: the same sweeps */
  from_udp = loopback (pcap, gen->packets->len, &stats);
  assert_same_points (from_udp, from_file);
  fail_unless (gst_structure_get_uint64 (stats, "lost-packets", &value));
  fail_unless_equals_int64 (value, 0);
  gst_structure_free (stats);
  g_ptr_array_unref (from_udp);

  /* with every 40th packet dropped: counted, sweeps still out */
  from_udp = loopback (dropped, packets->len, &stats);
  fail_unless (gst_structure_get_uint64 (stats, "lost-packets", &value));
  fail_unless_equals_int64 (value, gen->packets->len - packets->len);
  fail_unless_equals_int (from_udp->len, from_file->len);
  for (s = 0; s < from_udp->len; s++)
    fail_unless (gst_buffer_get_size (from_udp->pdata[s]) <
        gst_buffer_get_size (from_file->pdata[s]));
  gst_structure_free (stats);
  g_ptr_array_unref (from_udp);

  g_ptr_array_unref (from_file);
  g_ptr_array_unref (expected);
  g_ptr_array_unref (packets);
  g_array_unref (times);
  velodyne_gen_free (gen);
  elemtest_remove_dir (dir);
  g_free (pcap);
  g_free (dropped);
  g_free (dir);
}

GST_END_TEST;

static Suite *
velodyneparse_suite (void)
{
  Suite *s = suite_create ("velodyneparse");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_every_model);
  tcase_add_test (tc, test_dual_returns);
  tcase_add_test (tc, test_calibration_file);
  tcase_add_test (tc, test_hour_rollover);
  tcase_add_test (tc, test_lost_late_repeated);
  tcase_add_test (tc, test_position_packets_and_partial_sweeps);
  tcase_add_test (tc, test_break);
  tcase_add_test (tc, test_refusals);
  tcase_add_test (tc, test_no_sweep);
  tcase_add_test (tc, test_pcap_and_loopback);
  return s;
}

P3D_CHECK_MAIN (velodyneparse);
