/* The Velodyne decoder core against the packet generator's truth
 * (p3dtest-lidargen.c, written from the manuals): every model, single and dual
 * returns, built-in and file calibrations; every point within half the
 * distance unit of its true place, its time within a microsecond, its
 * intensity and ring exact. Then the stream's placement (lost, late and
 * repeated packets, the hour's rollover, breaks), the cut, the built-in
 * tables against the manuals' figures, the HDL-64E's two-point formula,
 * calibration files good and bad, and malformed packets. */
#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>

#include "p3dtest-lidargen.h"
#include "p3dtest.h"
#include "velodyneparse-decoder.h"

/* An assertion for inner loops: check's own marks every passing one,
 * which costs a write to its pipe each time. */
#define EXPECT(cond, ...) \
  G_STMT_START { \
    if (G_UNLIKELY (!(cond))) \
      ck_abort_msg (__VA_ARGS__); \
  } G_STMT_END

static const P3dLidarPointLayout xyzit = { 5, 3, 4, -1 };
static const P3dLidarPointLayout xyzir = { 5, 3, -1, 4 };

/* Decodes every packet of @gen whole, in order, and compares each point
 * with the truth; returns the points compared. */
static gsize
check_packets (const VelodyneGen * gen, const P3dVelodyneCalibration * cal,
    P3dLidarReturns returns, const P3dLidarPointLayout * layout)
{
  const P3dVelodyneModelInfo *info =
      p3d_velodyne_model_get_info (gen->params.model);
  gdouble tolerance = info->distance_unit / 2 + 2e-5;
  GError *error = NULL;
  P3dVelodyneDecoder *decoder = p3d_velodyne_decoder_new (gen->params.model,
      cal, returns, 0.0, &error);
  gfloat *points = g_new (gfloat, 128 * 24 * 2 * 5);
  gsize compared = 0;
  gdouble worst = 0;
  guint p, c, f, i;

  g_assert_no_error (error);
  for (p = 0; p < gen->packets->len; p++) {
    const VelodyneGenPacket *gp = &g_array_index (gen->packets,
        VelodyneGenPacket, p);
    const guint8 *data = g_bytes_get_data (gp->data, NULL);
    P3dVelodyneCounts counts = { 0, 0 };
    P3dVelodynePacket packet;
    P3dVelodynePlace place;
    gchar *why = NULL;
    gsize n, k = 0;
    /* times from an origin a little before the packet */
    gdouble origin = gp->timestamp - 1000.0;

    fail_unless (p3d_velodyne_packet_parse (decoder, data, &packet, &why),
        "packet %u: %s", p, why);
    fail_unless_equals_int (packet.n_columns, gp->n_columns);
    fail_unless_equals_int (packet.dual, gen->dual);
    p3d_velodyne_decoder_place (decoder, &packet, &place);
    fail_unless_equals_int (place.kind, P3D_VELODYNE_PLACE_NEXT);
    fail_unless_equals_int64 (place.lost, 0);
    fail_unless (place.time == (gint64) gp->timestamp, "packet %u: time %"
        G_GINT64_FORMAT " for %.0f", p, place.time, gp->timestamp);
    p3d_velodyne_decoder_take (decoder, &packet, &place);
    n = p3d_velodyne_decode (decoder, data, &packet, 0, packet.n_columns,
        (place.time - origin) * 1e-6, layout, points, &counts);
    fail_unless (n <= p3d_velodyne_decoder_max_points (decoder, &packet,
            packet.n_columns));

    for (c = 0; c < gp->n_columns; c++) {
      const VelodyneGenColumn *column = &g_array_index (gen->columns,
          VelodyneGenColumn, gp->first_column + c);

      /* the column's azimuth and time as the generator laid them out */
      EXPECT (fabs (fmod (column->azimuth, 36000.0) - packet.azimuth[c]) <
          1e-3, "packet %u column %u: azimuth %f for %f", p, c,
          packet.azimuth[c], fmod (column->azimuth, 36000.0));
      EXPECT (fabs (gp->timestamp + packet.start[c] - column->time) < 1e-6,
          "packet %u column %u: start %f", p, c, packet.start[c]);
      for (f = 0; f < column->n_firings; f++) {
        LidarTruth expected[2];
        guint m = velodyne_gen_expected (gen, &g_array_index (gen->firings,
                LidarFiring, column->first_firing + f), returns, expected);

        for (i = 0; i < m; i++, k++) {
          const gfloat *q = points + k * layout->stride;
          const LidarTruth *t = &expected[i];
          gdouble d = sqrt ((q[0] - t->x) * (q[0] - t->x) +
              (q[1] - t->y) * (q[1] - t->y) + (q[2] - t->z) * (q[2] - t->z));

          EXPECT (k < n, "packet %u: %" G_GSIZE_FORMAT " points, more "
              "expected", p, n);
          worst = MAX (worst, d);
          EXPECT (d <= tolerance, "packet %u column %u firing %u return %u: "
              "(%f, %f, %f) is %g m from the truth (%f, %f, %f)", p, c, f, i,
              q[0], q[1], q[2], d, t->x, t->y, t->z);
          EXPECT (q[layout->intensity] == t->intensity, "packet %u firing %u: "
              "intensity %f for %u", p, f, q[layout->intensity], t->intensity);
          if (layout->time >= 0)
            EXPECT (fabs (q[layout->time] - (t->time - origin) * 1e-6) < 1e-6,
                "packet %u firing %u: time %.9f for %.9f", p, f,
                q[layout->time], (t->time - origin) * 1e-6);
          if (layout->ring >= 0)
            EXPECT (q[layout->ring] == t->ring, "packet %u firing %u: ring %f "
                "for %u", p, f, q[layout->ring], t->ring);
        }
      }
    }
    fail_unless_equals_int64 (k, n);
    compared += n;
  }
  GST_INFO ("%s: %" G_GSIZE_FORMAT " points, the worst %.3g mm from the "
      "truth", info->name, compared, worst * 1e3);
  g_free (points);
  p3d_velodyne_decoder_free (decoder);
  return compared;
}

static void
check_model (P3dVelodyneModel model, guint8 return_mode,
    P3dLidarReturns returns, const P3dVelodyneCalibration * cal)
{
  VelodyneGenParams params;
  VelodyneGen *gen;
  gsize n;

  velodyne_gen_params_init (&params, model);
  params.return_mode = return_mode;
  params.n_packets = 60;
  if (cal != NULL)
    params.calibration = *cal;
  gen = velodyne_gen_new (&params);
  n = check_packets (gen, cal, returns, &xyzit);
  fail_unless (n > 1000, "only %" G_GSIZE_FORMAT " points", n);
  check_packets (gen, cal, returns, &xyzir);
  velodyne_gen_free (gen);
}

GST_START_TEST (test_truth_single_return)
{
  static const P3dVelodyneModel models[] = {
    P3D_VELODYNE_MODEL_VLP16, P3D_VELODYNE_MODEL_PUCK_HIRES,
    P3D_VELODYNE_MODEL_VLP32C, P3D_VELODYNE_MODEL_HDL32E,
    P3D_VELODYNE_MODEL_VLS128,
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (models); i++) {
    check_model (models[i], 0x37, P3D_LIDAR_RETURNS_BOTH, NULL);
    check_model (models[i], 0x38, P3D_LIDAR_RETURNS_BOTH, NULL);
  }
}

GST_END_TEST;

GST_START_TEST (test_truth_dual_return)
{
  static const P3dVelodyneModel models[] = {
    P3D_VELODYNE_MODEL_VLP16, P3D_VELODYNE_MODEL_PUCK_HIRES,
    P3D_VELODYNE_MODEL_VLP32C, P3D_VELODYNE_MODEL_HDL32E,
    P3D_VELODYNE_MODEL_VLS128,
  };
  guint i, r;

  for (i = 0; i < G_N_ELEMENTS (models); i++)
    for (r = P3D_LIDAR_RETURNS_BOTH; r <= P3D_LIDAR_RETURNS_LAST; r++)
      check_model (models[i], 0x39, r, NULL);
}

GST_END_TEST;

/* Every model with angles, distance corrections and offsets of its own
 * (the HDL-64E has no other kind), read back from its YAML text. */
GST_START_TEST (test_truth_calibrated)
{
  static const P3dVelodyneModel models[] = {
    P3D_VELODYNE_MODEL_HDL64E, P3D_VELODYNE_MODEL_VLP16,
    P3D_VELODYNE_MODEL_VLP32C, P3D_VELODYNE_MODEL_HDL32E,
    P3D_VELODYNE_MODEL_VLS128,
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (models); i++) {
    const P3dVelodyneModelInfo *info = p3d_velodyne_model_get_info (models[i]);
    P3dVelodyneCalibration cal, read;
    GError *error = NULL;
    gchar *yaml;

    velodyne_gen_random_calibration (info->n_lasers, 10 + i, &cal);
    yaml = velodyne_gen_calibration_yaml (&cal, i % 2 == 0);
    fail_unless (p3d_velodyne_calibration_parse (yaml, strlen (yaml), &read,
            &error));
    g_assert_no_error (error);
    g_free (yaml);
    check_model (models[i], 0x37, P3D_LIDAR_RETURNS_BOTH, &read);
    if (info->has_dual)
      check_model (models[i], 0x39, P3D_LIDAR_RETURNS_BOTH, &read);
  }
}

GST_END_TEST;

/* The HDL-64E's upper and lower blocks each carry their azimuth. */
GST_START_TEST (test_hdl64e_block_azimuths)
{
  VelodyneGenParams params;
  VelodyneGen *gen;

  velodyne_gen_params_init (&params, P3D_VELODYNE_MODEL_HDL64E);
  params.lower_offset = 3;
  params.n_packets = 20;
  gen = velodyne_gen_new (&params);
  check_packets (gen, &params.calibration, P3D_LIDAR_RETURNS_BOTH, &xyzit);
  velodyne_gen_free (gen);
}

GST_END_TEST;

/* The laser angles built in, against the manuals' tables. */
GST_START_TEST (test_builtin_tables)
{
  static const struct
  {
    P3dVelodyneModel model;
    guint laser;
    gdouble elevation;
    gdouble azimuth_offset;     /* the manual's: +rot_correction's opposite */
    guint ring;
  } facts[] = {
    {P3D_VELODYNE_MODEL_VLP16, 0, -15, 0, 0},
    {P3D_VELODYNE_MODEL_VLP16, 1, 1, 0, 8},
    {P3D_VELODYNE_MODEL_VLP16, 14, -1, 0, 7},
    {P3D_VELODYNE_MODEL_VLP16, 15, 15, 0, 15},
    {P3D_VELODYNE_MODEL_PUCK_HIRES, 0, -10, 0, 0},
    {P3D_VELODYNE_MODEL_PUCK_HIRES, 1, 0.667, 0, 8},
    {P3D_VELODYNE_MODEL_PUCK_HIRES, 15, 10, 0, 15},
    {P3D_VELODYNE_MODEL_VLP32C, 0, -25, 1.4, 0},
    {P3D_VELODYNE_MODEL_VLP32C, 1, -1, -4.2, 17},
    {P3D_VELODYNE_MODEL_VLP32C, 29, 15, -1.4, 31},
    {P3D_VELODYNE_MODEL_VLP32C, 5, 0, -1.4, 20},
    {P3D_VELODYNE_MODEL_HDL32E, 0, -30.67, 0, 0},
    {P3D_VELODYNE_MODEL_HDL32E, 1, -9.33, 0, 16},
    {P3D_VELODYNE_MODEL_HDL32E, 31, 10.67, 0, 31},
    {P3D_VELODYNE_MODEL_VLS128, 36, -25, -0.911, 0},
    {P3D_VELODYNE_MODEL_VLS128, 59, 15, 0.911, 127},
    {P3D_VELODYNE_MODEL_VLS128, 0, -11.742, 6.354, 4},
  };
  P3dVelodyneCalibration cal;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (facts); i++) {
    const P3dVelodyneLaser *laser;

    fail_unless (p3d_velodyne_calibration_builtin (facts[i].model, &cal));
    laser = &cal.lasers[facts[i].laser];
    fail_unless (fabs (laser->vert_correction * 180 / G_PI -
            facts[i].elevation) < 1e-9, "model %d laser %u: elevation %f",
        facts[i].model, facts[i].laser, laser->vert_correction * 180 / G_PI);
    fail_unless (fabs (-laser->rot_correction * 180 / G_PI -
            facts[i].azimuth_offset) < 1e-9);
    fail_unless_equals_int (laser->ring, facts[i].ring);
    fail_unless_equals_int (cal.n_lasers,
        p3d_velodyne_model_get_info (facts[i].model)->n_lasers);
  }
  /* the HDL-64E's angles are each unit's own */
  fail_if (p3d_velodyne_calibration_builtin (P3D_VELODYNE_MODEL_HDL64E, &cal));
  fail_unless_equals_float (p3d_velodyne_model_get_info
      (P3D_VELODYNE_MODEL_VLP32C)->distance_unit, 0.004);
  fail_unless_equals_float (p3d_velodyne_model_get_info
      (P3D_VELODYNE_MODEL_VLS128)->distance_unit, 0.004);
  fail_unless_equals_float (p3d_velodyne_model_get_info
      (P3D_VELODYNE_MODEL_HDL32E)->distance_unit, 0.002);
}

GST_END_TEST;

GST_START_TEST (test_model_detect)
{
  static const P3dVelodyneModel models[] = {
    P3D_VELODYNE_MODEL_VLP16, P3D_VELODYNE_MODEL_PUCK_HIRES,
    P3D_VELODYNE_MODEL_VLP32C, P3D_VELODYNE_MODEL_HDL32E,
    P3D_VELODYNE_MODEL_HDL64E, P3D_VELODYNE_MODEL_VLS128,
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (models); i++) {
    VelodyneGenParams params;
    VelodyneGen *gen;
    guint8 product;
    guint mode;

    for (mode = 0x37; mode <= 0x39; mode += 2) {
      if (mode == 0x39 && !p3d_velodyne_model_get_info (models[i])->has_dual)
        continue;
      velodyne_gen_params_init (&params, models[i]);
      params.return_mode = mode;
      params.n_packets = 1;
      gen = velodyne_gen_new (&params);
      fail_unless_equals_int (p3d_velodyne_model_detect (g_bytes_get_data
              (g_array_index (gen->packets, VelodyneGenPacket, 0).data, NULL),
              &product), models[i]);
      velodyne_gen_free (gen);
    }
    /* a wrong product byte: unknown */
    if (models[i] == P3D_VELODYNE_MODEL_HDL64E
        || models[i] == P3D_VELODYNE_MODEL_VLS128)
      continue;
    velodyne_gen_params_init (&params, models[i]);
    params.product = 0x00;
    params.n_packets = 1;
    gen = velodyne_gen_new (&params);
    fail_unless_equals_int (p3d_velodyne_model_detect (g_bytes_get_data
            (g_array_index (gen->packets, VelodyneGenPacket, 0).data, NULL),
            &product), models[i]);
    velodyne_gen_free (gen);
    params.product = 0x77;
    gen = velodyne_gen_new (&params);
    fail_unless_equals_int (p3d_velodyne_model_detect (g_bytes_get_data
            (g_array_index (gen->packets, VelodyneGenPacket, 0).data, NULL),
            &product), P3D_VELODYNE_MODEL_AUTO);
    fail_unless_equals_int (product, 0x77);
    velodyne_gen_free (gen);
  }
}

GST_END_TEST;

/* Placement along a stream with gaps, late and repeated packets, across
 * the top of the hour. */
GST_START_TEST (test_place)
{
  VelodyneGenParams params;
  VelodyneGen *gen;
  P3dVelodyneDecoder *decoder;
  P3dVelodynePacket packet;
  P3dVelodynePlace place;
  /* packet order: 2 to 5 lost, 9 comes late after 10, 12 twice */
  static const guint order[] = { 0, 1, 6, 7, 8, 10, 9, 11, 12, 12, 13, 14 };
  static const P3dVelodynePlaceKind kinds[] = {
    P3D_VELODYNE_PLACE_NEXT, P3D_VELODYNE_PLACE_NEXT, P3D_VELODYNE_PLACE_NEXT,
    P3D_VELODYNE_PLACE_NEXT, P3D_VELODYNE_PLACE_NEXT, P3D_VELODYNE_PLACE_NEXT,
    P3D_VELODYNE_PLACE_LATE, P3D_VELODYNE_PLACE_NEXT, P3D_VELODYNE_PLACE_NEXT,
    P3D_VELODYNE_PLACE_REPEAT, P3D_VELODYNE_PLACE_NEXT, P3D_VELODYNE_PLACE_NEXT,
  };
  static const guint lost[] = { 0, 0, 4, 0, 0, 1, 0, 0, 0, 0, 0, 0 };
  guint i;

  velodyne_gen_params_init (&params, P3D_VELODYNE_MODEL_VLP16);
  /* the hour rolls over at packet 7 */
  params.first_time = 3600e6 - 7.5 * 24 * 55.296;
  params.n_packets = 15;
  gen = velodyne_gen_new (&params);
  decoder = p3d_velodyne_decoder_new (P3D_VELODYNE_MODEL_VLP16, NULL,
      P3D_LIDAR_RETURNS_BOTH, 180, NULL);
  for (i = 0; i < G_N_ELEMENTS (order); i++) {
    const VelodyneGenPacket *gp = &g_array_index (gen->packets,
        VelodyneGenPacket, order[i]);

    fail_unless (p3d_velodyne_packet_parse (decoder, g_bytes_get_data
            (gp->data, NULL), &packet, NULL));
    p3d_velodyne_decoder_place (decoder, &packet, &place);
    fail_unless_equals_int (place.kind, kinds[i]);
    if (place.kind != P3D_VELODYNE_PLACE_NEXT)
      continue;
    /* the unwrapped time goes on past the hour */
    fail_unless (place.time == (gint64) gp->timestamp, "packet %u: %"
        G_GINT64_FORMAT " for %.0f", order[i], place.time, gp->timestamp);
    fail_unless_equals_int64 (place.lost, lost[i]);
    fail_unless_equals_int (place.break_sweep, i == 0);
    p3d_velodyne_decoder_take (decoder, &packet, &place);
  }
  fail_unless (g_array_index (gen->packets, VelodyneGenPacket, 14).timestamp >
      3600e6);
  fail_unless (packet.timestamp < 1000000);
  p3d_velodyne_decoder_free (decoder);
  velodyne_gen_free (gen);
}

GST_END_TEST;

/* 100 ms without packets, or an azimuth that jumps, breaks the sweep;
 * an azimuth a little backwards does not. */
GST_START_TEST (test_breaks)
{
  VelodyneGenParams params;
  VelodyneGen *gen;
  P3dVelodyneDecoder *decoder;
  P3dVelodynePacket packet;
  P3dVelodynePlace place;
  guint8 data[P3D_VELODYNE_DATA_PACKET_SIZE];
  guint b, azimuth;

  velodyne_gen_params_init (&params, P3D_VELODYNE_MODEL_HDL32E);
  params.n_packets = 400;
  gen = velodyne_gen_new (&params);
  decoder = p3d_velodyne_decoder_new (P3D_VELODYNE_MODEL_HDL32E, NULL,
      P3D_LIDAR_RETURNS_BOTH, 180, NULL);
#define FEED(index) \
  G_STMT_START { \
    const VelodyneGenPacket *gp = &g_array_index (gen->packets, \
        VelodyneGenPacket, index); \
    fail_unless (p3d_velodyne_packet_parse (decoder, \
            g_bytes_get_data (gp->data, NULL), &packet, NULL)); \
    p3d_velodyne_decoder_place (decoder, &packet, &place); \
  } G_STMT_END
  FEED (0);
  p3d_velodyne_decoder_take (decoder, &packet, &place);
  /* 180 packets of 552.96 us later: 99.5 ms, lost but no break */
  FEED (180);
  fail_unless_equals_int (place.kind, P3D_VELODYNE_PLACE_NEXT);
  fail_unless_equals_int64 (place.lost, 179);
  fail_if (place.break_sweep);
  p3d_velodyne_decoder_take (decoder, &packet, &place);
  /* 182 more: 100.6 ms, a break */
  FEED (182 + 180);
  fail_unless (place.break_sweep);
  fail_unless_equals_int64 (place.lost, 181);
  FEED (181);
  fail_if (place.break_sweep);

  /* the next packet with its azimuths 90 degrees on: a jump */
  memcpy (data, g_bytes_get_data (g_array_index (gen->packets,
              VelodyneGenPacket, 182).data, NULL), sizeof (data));
  for (b = 0; b < 12; b++) {
    azimuth = (data[b * 100 + 2] | data[b * 100 + 3] << 8) + 9000;
    data[b * 100 + 2] = (azimuth % 36000) & 0xff;
    data[b * 100 + 3] = (azimuth % 36000) >> 8;
  }
  fail_unless (p3d_velodyne_packet_parse (decoder, data, &packet, NULL));
  p3d_velodyne_decoder_place (decoder, &packet, &place);
  fail_unless (place.break_sweep);
  /* or 3 degrees back: jitter */
  for (b = 0; b < 12; b++) {
    azimuth = (data[b * 100 + 2] | data[b * 100 + 3] << 8) + 36000 - 9300;
    data[b * 100 + 2] = (azimuth % 36000) & 0xff;
    data[b * 100 + 3] = (azimuth % 36000) >> 8;
  }
  fail_unless (p3d_velodyne_packet_parse (decoder, data, &packet, NULL));
  p3d_velodyne_decoder_place (decoder, &packet, &place);
  fail_if (place.break_sweep);
#undef FEED
  p3d_velodyne_decoder_free (decoder);
  velodyne_gen_free (gen);
}

GST_END_TEST;

/* take() names the first column of each new turn from the cut angle, at
 * any angle, through the azimuth's rollover, with packets lost around a
 * cut. */
GST_START_TEST (test_cut)
{
  static const gdouble cuts[] = { 0, 180, 123.45, 359.99, 0.01, 270 };
  static const P3dVelodyneModel models[] = {
    P3D_VELODYNE_MODEL_VLP16, P3D_VELODYNE_MODEL_HDL64E,
    P3D_VELODYNE_MODEL_VLS128,
  };
  guint i, m, p, cuts_seen;

  for (m = 0; m < G_N_ELEMENTS (models); m++) {
    for (i = 0; i < G_N_ELEMENTS (cuts); i++) {
      VelodyneGenParams params;
      VelodyneGen *gen;
      P3dVelodyneDecoder *decoder;
      gint64 last_turn = G_MININT64;

      velodyne_gen_params_init (&params, models[m]);
      /* four and a half turns */
      params.gap = 40;
      params.gap_jitter = 5;
      params.n_packets = 4.5 * 36000 / (40 * (models[m] ==
              P3D_VELODYNE_MODEL_VLP16 ? 12 : models[m] ==
              P3D_VELODYNE_MODEL_HDL64E ? 6 : 3));
      gen = velodyne_gen_new (&params);
      decoder = p3d_velodyne_decoder_new (models[m], &params.calibration,
          P3D_LIDAR_RETURNS_BOTH, cuts[i], NULL);
      cuts_seen = 0;
      for (p = 0; p < gen->packets->len; p++) {
        const VelodyneGenPacket *gp = &g_array_index (gen->packets,
            VelodyneGenPacket, p);
        P3dVelodynePacket packet;
        P3dVelodynePlace place;
        guint cut, c, expected = gp->n_columns;

        /* every 97th packet lost */
        if (p % 97 == 50)
          continue;
        fail_unless (p3d_velodyne_packet_parse (decoder, g_bytes_get_data
                (gp->data, NULL), &packet, NULL));
        p3d_velodyne_decoder_place (decoder, &packet, &place);
        for (c = 0; c < gp->n_columns; c++) {
          gdouble a = g_array_index (gen->columns, VelodyneGenColumn,
              gp->first_column + c).azimuth;
          gint64 turn = (gint64) floor ((a - cuts[i] * 100) / 36000.0);

          if (last_turn != G_MININT64 && turn != last_turn
              && expected == gp->n_columns)
            expected = c;
          last_turn = turn;
        }
        cut = p3d_velodyne_decoder_take (decoder, &packet, &place);
        EXPECT (cut == expected, "packet %u: cut at %u, %u expected", p, cut,
            expected);
        cuts_seen += cut < gp->n_columns;
      }
      fail_unless (cuts_seen >= 4, "%u cuts", cuts_seen);
      p3d_velodyne_decoder_free (decoder);
      velodyne_gen_free (gen);
    }
  }
}

GST_END_TEST;

/* The HDL-64E's two-point distance correction, against the manual's
 * formula evaluated here in double precision. */
GST_START_TEST (test_two_point_correction)
{
  P3dVelodyneCalibration cal;
  P3dVelodyneDecoder *decoder;
  P3dVelodynePacket packet;
  P3dVelodynePlace place;
  P3dVelodyneCounts counts = { 0, 0 };
  guint8 data[P3D_VELODYNE_DATA_PACKET_SIZE];
  gfloat points[6 * 64 * 5];
  P3dTestRng rng;
  guint b, l, n, k = 0;

  velodyne_gen_random_calibration (64, 3, &cal);
  p3d_test_rng_init (&rng, 3);
  for (l = 0; l < 64; l++) {
    cal.lasers[l].two_point = TRUE;
    cal.lasers[l].dist_correction_x = cal.lasers[l].dist_correction +
        p3d_test_rng_uniform (&rng, -0.1f, 0.1f);
    cal.lasers[l].dist_correction_y = cal.lasers[l].dist_correction +
        p3d_test_rng_uniform (&rng, -0.1f, 0.1f);
  }
  memset (data, 0, sizeof (data));
  for (b = 0; b < 12; b++) {
    data[b * 100] = 0xff;
    data[b * 100 + 1] = b % 2 ? 0xdd : 0xee;
    data[b * 100 + 2] = (b * 997) & 0xff;
    data[b * 100 + 3] = ((b * 997) >> 8) & 0xff;
    for (l = 0; l < 32; l++) {
      guint raw = 500 + p3d_test_rng_below (&rng, 30000);

      data[b * 100 + 4 + l * 3] = raw & 0xff;
      data[b * 100 + 5 + l * 3] = raw >> 8;
      data[b * 100 + 6 + l * 3] = (guint8) l;
    }
  }
  decoder = p3d_velodyne_decoder_new (P3D_VELODYNE_MODEL_HDL64E, &cal,
      P3D_LIDAR_RETURNS_BOTH, 0, NULL);
  fail_unless (p3d_velodyne_packet_parse (decoder, data, &packet, NULL));
  p3d_velodyne_decoder_place (decoder, &packet, &place);
  p3d_velodyne_decoder_take (decoder, &packet, &place);
  n = p3d_velodyne_decode (decoder, data, &packet, 0, 6, 0.0, &xyzit, points,
      &counts);
  fail_unless_equals_int (n, 6 * 64);
  for (b = 0; b < 12; b++) {
    for (l = 0; l < 32; l++, k++) {
      const P3dVelodyneLaser *c = &cal.lasers[(b % 2) * 32 + l];
      const guint8 *r = data + b * 100 + 4 + l * 3;
      gdouble azimuth = (data[b * 100 + 2] | data[b * 100 + 3] << 8) / 100.0;
      gdouble theta = azimuth * G_PI / 180 - c->rot_correction;
      gdouble d = (r[0] | r[1] << 8) * 0.002 + c->dist_correction;
      gdouble cv = cos (c->vert_correction), sv = sin (c->vert_correction);
      gdouble xy = d * cv - c->vert_offset * sv;
      gdouble xx = fabs (xy * sin (theta) - c->horiz_offset * cos (theta));
      gdouble yy = fabs (xy * cos (theta) + c->horiz_offset * sin (theta));
      /* the correction along x is the given one at 2.4 m, the general one
       * at 25.04 m, linear between; along y from 1.93 m */
      gdouble dx = d + c->dist_correction_x + (c->dist_correction -
          c->dist_correction_x) * (xx - 2.4) / (25.04 - 2.4) -
          c->dist_correction;
      gdouble dy = d + c->dist_correction_y + (c->dist_correction -
          c->dist_correction_y) * (yy - 1.93) / (25.04 - 1.93) -
          c->dist_correction;
      gdouble vx = (dx * cv - c->vert_offset * sv) * sin (theta) -
          c->horiz_offset * cos (theta);
      gdouble vy = (dy * cv - c->vert_offset * sv) * cos (theta) +
          c->horiz_offset * sin (theta);
      gdouble vz = dy * sv + c->vert_offset * cv;
      const gfloat *q = points + (b / 2 * 64 + (b % 2) * 32 + l) * 5;

      /* the manual's frame has y ahead and x right */
      EXPECT (fabs (q[0] - vy) < 2e-5 && fabs (q[1] + vx) < 2e-5
          && fabs (q[2] - vz) < 2e-5, "laser %u: (%f %f %f) for (%f %f %f)",
          (b % 2) * 32 + l, q[0], q[1], q[2], vy, -vx, vz);
    }
  }
  p3d_velodyne_decoder_free (decoder);
}

GST_END_TEST;

GST_START_TEST (test_calibration_round_trip)
{
  guint flow, i, l;

  for (flow = 0; flow < 2; flow++) {
    for (i = 0; i < 4; i++) {
      static const guint lasers[] = { 16, 32, 64, 128 };
      P3dVelodyneCalibration cal, read;
      GError *error = NULL;
      gchar *yaml;

      velodyne_gen_random_calibration (lasers[i], i + 100 * flow, &cal);
      cal.lasers[1].two_point = !flow;
      yaml = velodyne_gen_calibration_yaml (&cal, flow);
      fail_unless (p3d_velodyne_calibration_parse (yaml, strlen (yaml),
              &read, &error));
      g_assert_no_error (error);
      fail_unless_equals_int (read.n_lasers, lasers[i]);
      fail_unless_equals_float (read.distance_resolution, 0.002);
      for (l = 0; l < lasers[i]; l++) {
        const P3dVelodyneLaser *a = &cal.lasers[l], *b = &read.lasers[l];

        /* printed with all their digits: exact */
        fail_unless (a->rot_correction == b->rot_correction);
        fail_unless (a->vert_correction == b->vert_correction);
        fail_unless (a->dist_correction == b->dist_correction);
        fail_unless (a->dist_correction_x == b->dist_correction_x);
        fail_unless (a->dist_correction_y == b->dist_correction_y);
        fail_unless (a->vert_offset == b->vert_offset);
        fail_unless (a->horiz_offset == b->horiz_offset);
        fail_unless_equals_int (b->two_point, flow ? FALSE : l == 1);
        fail_unless_equals_int (b->ring, a->ring);
      }
      g_free (yaml);
    }
  }
}

GST_END_TEST;

GST_START_TEST (test_calibration_errors)
{
  static const struct
  {
    const gchar *text;
    P3dVelodyneCalibrationError code;
    const gchar *message;
  } cases[] = {
    {"lasers: [ {laser_id: 0", P3D_VELODYNE_CALIBRATION_ERROR_SYNTAX,
        "not YAML"},
    {"", P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA, "not a mapping"},
    {"- 1\n- 2\n", P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA, "not a mapping"},
    {"lasers: []\n", P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA, "no num_lasers"},
    {"num_lasers: 0\nlasers: []\n", P3D_VELODYNE_CALIBRATION_ERROR_VALUE,
        "num_lasers is 0"},
    {"num_lasers: 129\nlasers: []\n", P3D_VELODYNE_CALIBRATION_ERROR_VALUE,
        "num_lasers is 129"},
    {"num_lasers: 2.5\nlasers: []\n", P3D_VELODYNE_CALIBRATION_ERROR_VALUE,
        "whole number"},
    {"num_lasers: sixteen\n", P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA,
        "not a finite number"},
    {"num_lasers: .nan\n", P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA,
        "not a finite number"},
    {"num_lasers: 1\n", P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA,
        "no list of lasers"},
    {"num_lasers: 1\nlasers: {a: 1}\n", P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA,
        "no list of lasers"},
    {"num_lasers: 1\nlasers: []\n", P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA,
        "laser 0 is missing"},
    {"num_lasers: 1\nlasers: [3]\n", P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA,
        "laser entry 0 is not a mapping"},
    {"num_lasers: 1\nlasers:\n- {rot_correction: 0, vert_correction: 0}\n",
        P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA, "laser entry 0 has no laser_id"},
    {"num_lasers: 1\nlasers:\n- {laser_id: 1, rot_correction: 0, "
          "vert_correction: 0}\n", P3D_VELODYNE_CALIBRATION_ERROR_VALUE,
        "laser_id is 1, outside [0, 0]"},
    {"num_lasers: 2\nlasers:\n- {laser_id: 0, rot_correction: 0, "
          "vert_correction: 0}\n- {laser_id: 0, rot_correction: 0, "
          "vert_correction: 0}\n", P3D_VELODYNE_CALIBRATION_ERROR_VALUE,
        "laser 0 appears twice"},
    {"num_lasers: 1\nlasers:\n- {laser_id: 0, vert_correction: 0}\n",
        P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA, "laser 0 has no rot_correction"},
    {"num_lasers: 1\nlasers:\n- {laser_id: 0, rot_correction: 0, "
          "vert_correction: 1.7}\n", P3D_VELODYNE_CALIBRATION_ERROR_VALUE,
        "laser 0: vert_correction is 1.7"},
    {"num_lasers: 1\nlasers:\n- {laser_id: 0, rot_correction: x, "
          "vert_correction: 0}\n", P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA,
        "rot_correction is \"x\""},
    {"num_lasers: 1\nlasers:\n- {laser_id: 0, rot_correction: 0, "
          "vert_correction: 0, dist_correction: 1e300}\n",
        P3D_VELODYNE_CALIBRATION_ERROR_VALUE, "dist_correction is 1e+300"},
    {"num_lasers: 1\nlasers:\n- {laser_id: 0, rot_correction: 0, "
          "vert_correction: 0, two_pt_correction_available: maybe}\n",
        P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA, "neither true nor false"},
    {"num_lasers: 1\nlasers:\n- {laser_id: 0, rot_correction: 0, "
          "vert_correction: [0]}\n", P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA,
        "vert_correction is not a number"},
    {"num_lasers: 1\nlasers:\n- {laser_id: 0, rot_correction: 0, "
          "vert_correction: 0}\n- {laser_id: 0, rot_correction: 0, "
          "vert_correction: 0}\n", P3D_VELODYNE_CALIBRATION_ERROR_VALUE,
        "more laser entries than num_lasers (1)"},
    {"num_lasers: 1\ndistance_resolution: 5\nlasers: []\n",
        P3D_VELODYNE_CALIBRATION_ERROR_VALUE, "distance_resolution is 5"},
    {"a: &x [*x]\nnum_lasers: 1\nlasers: *x\n",
          P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA,
        "laser entry 0 is not a mapping"},
  };
  P3dVelodyneCalibration cal;
  gchar *big;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    GError *error = NULL;

    fail_if (p3d_velodyne_calibration_parse (cases[i].text,
            strlen (cases[i].text), &cal, &error), "case %u parsed", i);
    fail_unless (error != NULL);
    fail_unless_equals_int (error->code, cases[i].code);
    fail_unless (strstr (error->message, cases[i].message) != NULL,
        "case %u: \"%s\" lacks \"%s\"", i, error->message, cases[i].message);
    fail_unless (g_utf8_validate (error->message, -1, NULL));
    g_error_free (error);
  }
  /* too large, and a file that does not exist */
  big = g_strnfill (P3D_VELODYNE_MAX_CALIBRATION_SIZE + 1, ' ');
  {
    GError *error = NULL;

    fail_if (p3d_velodyne_calibration_parse (big, strlen (big), &cal, &error));
    fail_unless_equals_int (error->code, P3D_VELODYNE_CALIBRATION_ERROR_READ);
    g_clear_error (&error);
    fail_if (p3d_velodyne_calibration_load ("/nonexistent/cal.yaml", &cal,
            &error));
    fail_unless_equals_int (error->code,
        P3D_VELODYNE_CALIBRATION_ERROR_NOT_FOUND);
    g_error_free (error);
  }
  g_free (big);
}

GST_END_TEST;

GST_START_TEST (test_decoder_refuses)
{
  P3dVelodyneCalibration cal;
  GError *error = NULL;

  /* the HDL-64E needs its file */
  fail_unless (p3d_velodyne_decoder_new (P3D_VELODYNE_MODEL_HDL64E, NULL,
          P3D_LIDAR_RETURNS_BOTH, 0, &error) == NULL);
  fail_unless (strstr (error->message, "own calibration file") != NULL);
  g_clear_error (&error);
  /* a file of 16 lasers for 32 */
  velodyne_gen_random_calibration (16, 1, &cal);
  fail_unless (p3d_velodyne_decoder_new (P3D_VELODYNE_MODEL_HDL32E, &cal,
          P3D_LIDAR_RETURNS_BOTH, 0, &error) == NULL);
  fail_unless (strstr (error->message, "16 lasers, the HDL-32E has 32"),
      "%s", error->message);
  g_clear_error (&error);
}

GST_END_TEST;

GST_START_TEST (test_malformed_packets)
{
  static const P3dVelodyneModel models[] = {
    P3D_VELODYNE_MODEL_VLP16, P3D_VELODYNE_MODEL_VLP32C,
    P3D_VELODYNE_MODEL_HDL64E, P3D_VELODYNE_MODEL_VLS128,
  };
  guint i, mode;

  for (i = 0; i < G_N_ELEMENTS (models); i++) {
    for (mode = 0x37; mode <= 0x39; mode += 2) {
      VelodyneGenParams params;
      VelodyneGen *gen;
      P3dVelodyneDecoder *decoder;
      P3dVelodynePacket packet;
      guint8 data[P3D_VELODYNE_DATA_PACKET_SIZE];
      gchar *why = NULL;

      if (mode == 0x39 && models[i] == P3D_VELODYNE_MODEL_HDL64E)
        continue;
      velodyne_gen_params_init (&params, models[i]);
      params.return_mode = mode;
      params.n_packets = 1;
      gen = velodyne_gen_new (&params);
      decoder = p3d_velodyne_decoder_new (models[i], &params.calibration,
          P3D_LIDAR_RETURNS_BOTH, 0, NULL);
      memcpy (data, g_bytes_get_data (g_array_index (gen->packets,
                  VelodyneGenPacket, 0).data, NULL), sizeof (data));
      fail_unless (p3d_velodyne_packet_parse (decoder, data, &packet, NULL));
      /* a block flag of another bank */
      data[301] = data[301] == 0xee ? 0xcc : 0xaa;
      fail_if (p3d_velodyne_packet_parse (decoder, data, &packet, &why));
      fail_unless (why != NULL && strstr (why, "block") != NULL);
      g_free (why);
      why = NULL;
      data[301] = ((const guint8 *) g_bytes_get_data (g_array_index
              (gen->packets, VelodyneGenPacket, 0).data, NULL))[301];
      /* an azimuth beyond 35999 */
      data[2] = 0xff;
      data[3] = 0xff;
      fail_if (p3d_velodyne_packet_parse (decoder, data, &packet, &why));
      fail_unless (why != NULL && strstr (why, "65535") != NULL, "%s", why);
      g_free (why);
      p3d_velodyne_decoder_free (decoder);
      velodyne_gen_free (gen);
    }
  }
}

GST_END_TEST;

/* Any bytes with the right block flags decode within bounds: counts
 * within the maximum, finite points. */
GST_START_TEST (test_random_payloads)
{
  P3dTestRng rng;
  gfloat *points = g_new (gfloat, 128 * 24 * 2 * 5);
  guint round, m;

  p3d_test_rng_init (&rng, 7);
  for (m = P3D_VELODYNE_MODEL_VLP16; m <= P3D_VELODYNE_MODEL_VLS128; m++) {
    P3dVelodyneCalibration cal;
    P3dVelodyneDecoder *decoder;

    velodyne_gen_random_calibration (p3d_velodyne_model_get_info (m)->n_lasers,
        m, &cal);
    decoder = p3d_velodyne_decoder_new (m, &cal, P3D_LIDAR_RETURNS_BOTH, 90,
        NULL);
    for (round = 0; round < 300; round++) {
      guint8 data[P3D_VELODYNE_DATA_PACKET_SIZE];
      P3dVelodynePacket packet;
      P3dVelodynePlace place;
      P3dVelodyneCounts counts = { 0, 0 };
      guint i, cut;
      gsize n;

      for (i = 0; i < sizeof (data); i++)
        data[i] = (guint8) p3d_test_rng_below (&rng, 256);
      for (i = 0; i < 12; i++) {
        static const guint8 banks[4] = { 0xee, 0xdd, 0xcc, 0xbb };
        guint16 azimuth = (guint16) p3d_test_rng_below (&rng, 36000);

        data[i * 100] = 0xff;
        data[i * 100 + 1] = m == P3D_VELODYNE_MODEL_HDL64E ? banks[i % 2] :
            m == P3D_VELODYNE_MODEL_VLS128 ? banks[i % 4] : 0xee;
        data[i * 100 + 2] = azimuth & 0xff;
        data[i * 100 + 3] = azimuth >> 8;
      }
      if (m == P3D_VELODYNE_MODEL_VLS128)
        data[1204] = 0x37;
      fail_unless (p3d_velodyne_packet_parse (decoder, data, &packet, NULL));
      p3d_velodyne_decoder_place (decoder, &packet, &place);
      if (place.kind != P3D_VELODYNE_PLACE_NEXT)
        continue;
      cut = p3d_velodyne_decoder_take (decoder, &packet, &place);
      fail_unless (cut <= packet.n_columns);
      n = p3d_velodyne_decode (decoder, data, &packet, 0, packet.n_columns,
          0.0, &xyzit, points, &counts);
      fail_unless (n <= p3d_velodyne_decoder_max_points (decoder, &packet,
              packet.n_columns));
      for (i = 0; i < n * 5; i++)
        EXPECT (isfinite (points[i]), "value %u is %f", i, points[i]);
    }
    p3d_velodyne_decoder_free (decoder);
  }
  g_free (points);
}

GST_END_TEST;

static Suite *
velodyneparse_decoder_suite (void)
{
  Suite *s = suite_create ("velodyneparse_decoder");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_truth_single_return);
  tcase_add_test (tc, test_truth_dual_return);
  tcase_add_test (tc, test_truth_calibrated);
  tcase_add_test (tc, test_hdl64e_block_azimuths);
  tcase_add_test (tc, test_builtin_tables);
  tcase_add_test (tc, test_model_detect);
  tcase_add_test (tc, test_place);
  tcase_add_test (tc, test_breaks);
  tcase_add_test (tc, test_cut);
  tcase_add_test (tc, test_two_point_correction);
  tcase_add_test (tc, test_calibration_round_trip);
  tcase_add_test (tc, test_calibration_errors);
  tcase_add_test (tc, test_decoder_refuses);
  tcase_add_test (tc, test_malformed_packets);
  tcase_add_test (tc, test_random_payloads);
  return s;
}

P3D_CHECK_MAIN (velodyneparse_decoder);
