/* The Ouster decoder core against the packet generator's truth
 * (p3dtest-lidargen.c, written from the firmware manual): every profile, 32 to
 * 128 beams, 512 to 2048 columns, both metadata forms, column windows,
 * packets in any order; every point within half a millimetre of its true
 * place, in destaggered order, its time exact to the nanosecond's float,
 * intensity and ring exact. Then metadata files good and bad, and packets
 * of any bytes. */
#include <math.h>
#include <string.h>

#include <gst/check/gstcheck.h>

#include "p3dtest-lidargen.h"
#include "ousterparse-decoder.h"
#include "p3dtest.h"

/* An assertion for inner loops: check's own marks every passing one,
 * which costs a write to its pipe each time. */
#define EXPECT(cond, ...) \
  G_STMT_START { \
    if (G_UNLIKELY (!(cond))) \
      ck_abort_msg (__VA_ARGS__); \
  } G_STMT_END

static const P3dLidarPointLayout xyzit = { 5, 3, 4, -1 };
static const P3dLidarPointLayout xyzir = { 5, 3, -1, 4 };

/* Decodes frame @frame of @gen (its packets in @order, or in order) and
 * compares the sweep with the truth; returns the points. */
static gsize
check_frame (const OusterGen * gen, const P3dOusterMetadata * metadata,
    guint frame, P3dLidarReturns returns, const P3dLidarPointLayout * layout,
    gboolean reverse)
{
  P3dOusterDecoder *decoder = p3d_ouster_decoder_new (metadata, returns);
  gsize slots = p3d_ouster_decoder_grid_points (decoder);
  gfloat *grid = g_new (gfloat, slots * layout->stride);
  guint64 *valid = g_new0 (guint64, (slots + 63) / 64);
  LidarSweep *sweep = ouster_gen_sweep (gen, frame, NULL, returns);
  P3dOusterCounts counts = { 0, 0, 0 };
  guint64 t0 = (guint64) sweep->t0;
  guint p, i, n_packets = gen->packets->len;
  gdouble worst = 0;
  gsize n;

  for (i = 0; i < n_packets; i++) {
    const OusterGenPacket *gp;
    P3dOusterPacket packet;
    gsize size;
    const guint8 *data;
    gchar *why = NULL;

    p = reverse ? n_packets - 1 - i : i;
    gp = &g_array_index (gen->packets, OusterGenPacket, p);
    if (gp->frame != frame)
      continue;
    data = g_bytes_get_data (gp->data, &size);
    fail_unless (p3d_ouster_packet_parse (decoder, data, size, &packet, &why),
        "%s", why);
    fail_unless_equals_int (packet.packet_index, gp->packet_index);
    fail_unless_equals_int (packet.frame_id, (gen->params.first_frame_id +
            frame) & 0xffff);
    p3d_ouster_decode (decoder, data, &packet, t0, layout, grid, valid,
        &counts);
  }
  n = p3d_ouster_grid_compact (decoder, layout, grid, valid);
  fail_unless_equals_int64 (n, sweep->points->len);
  for (i = 0; i < n; i++) {
    const gfloat *q = grid + (gsize) i * layout->stride;
    const LidarTruth *t = &g_array_index (sweep->points, LidarTruth, i);
    gdouble d = sqrt ((q[0] - t->x) * (q[0] - t->x) +
        (q[1] - t->y) * (q[1] - t->y) + (q[2] - t->z) * (q[2] - t->z));

    worst = MAX (worst, d);
    EXPECT (d <= 0.0005 + 2e-5, "point %u: (%f, %f, %f) is %g m from the "
        "truth (%f, %f, %f)", i, q[0], q[1], q[2], d, t->x, t->y, t->z);
    EXPECT (q[layout->intensity] == t->intensity, "point %u: intensity %f "
        "for %u", i, q[layout->intensity], t->intensity);
    if (layout->time >= 0)
      EXPECT (fabs (q[layout->time] - (t->time - sweep->t0) * 1e-9) < 1e-7,
          "point %u: time %.9f for %.9f", i, q[layout->time],
          (t->time - sweep->t0) * 1e-9);
    if (layout->ring >= 0)
      EXPECT (q[layout->ring] == t->ring, "point %u: ring %f for %u", i,
          q[layout->ring], t->ring);
  }
  GST_INFO ("%s %u x %u: %" G_GSIZE_FORMAT " points, the worst %.3g mm "
      "off", p3d_ouster_profile_name (metadata->profile), metadata->beams,
      metadata->columns_per_frame, n, worst * 1e3);
  lidar_sweep_free (sweep);
  g_free (grid);
  g_free (valid);
  p3d_ouster_decoder_free (decoder);
  return n;
}

static void
check_profile (P3dOusterProfile profile, guint beams, guint columns,
    gboolean nested)
{
  OusterGenParams params;
  OusterGen *gen;
  P3dOusterMetadata read;
  GError *error = NULL;
  gchar *json;
  guint r;

  ouster_gen_params_init (&params, profile, beams, columns);
  params.n_frames = 2;
  if (nested) {
    /* a beam origin off the axis and above it */
    params.metadata.beam_to_lidar[3] = 27.67;
    params.metadata.beam_to_lidar[11] = 4.5;
  }
  gen = ouster_gen_new (&params);
  json = ouster_gen_metadata_json (&params.metadata, nested);
  fail_unless (p3d_ouster_metadata_parse (json, -1, &read, &error), "%s",
      error ? error->message : "");
  g_free (json);
  for (r = P3D_LIDAR_RETURNS_BOTH; r <= P3D_LIDAR_RETURNS_LAST; r++) {
    if (r != P3D_LIDAR_RETURNS_BOTH && profile != P3D_OUSTER_PROFILE_DUAL)
      break;
    fail_unless (check_frame (gen, &read, 1, r, &xyzit, FALSE) >
        beams * columns / 3);
  }
  check_frame (gen, &read, 0, P3D_LIDAR_RETURNS_BOTH, &xyzir, TRUE);
  ouster_gen_free (gen);
}

GST_START_TEST (test_truth_profiles)
{
  static const P3dOusterProfile profiles[] = {
    P3D_OUSTER_PROFILE_LEGACY, P3D_OUSTER_PROFILE_SINGLE,
    P3D_OUSTER_PROFILE_DUAL,
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (profiles); i++) {
    check_profile (profiles[i], 32, 1024, FALSE);
    check_profile (profiles[i], 64, 512, TRUE);
  }
  check_profile (P3D_OUSTER_PROFILE_DUAL, 128, 2048, TRUE);
  check_profile (P3D_OUSTER_PROFILE_SINGLE, 128, 1024, FALSE);
}

GST_END_TEST;

/* A column window, plain and wrapping through column 0: only its packets
 * come, and only its columns hold points. */
GST_START_TEST (test_column_window)
{
  static const guint windows[][2] = { {100, 900}, {900, 100}, {0, 15} };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (windows); i++) {
    OusterGenParams params;
    OusterGen *gen;
    P3dOusterDecoder *decoder;
    guint expected = 0, k;

    ouster_gen_params_init (&params, P3D_OUSTER_PROFILE_SINGLE, 32, 1024);
    params.metadata.column_window[0] = windows[i][0];
    params.metadata.column_window[1] = windows[i][1];
    gen = ouster_gen_new (&params);
    decoder = p3d_ouster_decoder_new (&params.metadata, P3D_LIDAR_RETURNS_BOTH);
    for (k = 0; k < 64; k++) {
      gboolean meets = FALSE;
      guint m;

      for (m = k * 16; m < k * 16 + 16; m++)
        meets |= windows[i][0] <= windows[i][1] ? (m >= windows[i][0]
            && m <= windows[i][1]) : (m >= windows[i][0]
            || m <= windows[i][1]);
      expected += meets;
      fail_unless_equals_int (p3d_ouster_decoder_packet_expected (decoder, k),
          meets);
    }
    fail_unless_equals_int (p3d_ouster_decoder_packets_per_frame (decoder),
        expected);
    fail_unless_equals_int (gen->packets->len, expected * params.n_frames);
    fail_unless_equals_int (p3d_ouster_decoder_first_packet (decoder),
        windows[i][0] / 16);
    check_frame (gen, &params.metadata, 2, P3D_LIDAR_RETURNS_BOTH, &xyzit,
        FALSE);
    p3d_ouster_decoder_free (decoder);
    ouster_gen_free (gen);
  }
}

GST_END_TEST;

GST_START_TEST (test_metadata_round_trip)
{
  guint nested, profile;

  for (nested = 0; nested < 2; nested++) {
    for (profile = 0; profile < 3; profile++) {
      OusterGenParams params;
      P3dOusterMetadata read;
      const P3dOusterMetadata *m = &params.metadata;
      GError *error = NULL;
      gchar *json;
      guint b;

      ouster_gen_params_init (&params, profile, 64, 2048);
      params.metadata.column_window[0] = 12;
      params.metadata.column_window[1] = 1800;
      json = ouster_gen_metadata_json (m, nested);
      fail_unless (p3d_ouster_metadata_parse (json, -1, &read, &error));
      g_assert_no_error (error);
      fail_unless_equals_int (read.profile, profile);
      fail_unless_equals_int (read.beams, 64);
      fail_unless_equals_int (read.columns_per_frame, 2048);
      fail_unless_equals_int (read.columns_per_packet, 16);
      fail_unless_equals_int (read.column_window[0], 12);
      fail_unless_equals_int (read.column_window[1], 1800);
      for (b = 0; b < 64; b++) {
        fail_unless (read.altitude[b] == m->altitude[b]);
        fail_unless (read.azimuth[b] == m->azimuth[b]);
        fail_unless_equals_int (read.pixel_shift_by_row[b],
            m->pixel_shift_by_row[b]);
      }
      for (b = 0; b < 16; b++) {
        fail_unless (read.beam_to_lidar[b] == m->beam_to_lidar[b]);
        fail_unless (read.lidar_to_sensor[b] == m->lidar_to_sensor[b]);
      }
      fail_unless_equals_int64 (p3d_ouster_metadata_packet_size (&read),
          profile == P3D_OUSTER_PROFILE_LEGACY ? 16 * (16 + 12 * 64 + 4) :
          64 + 16 * (12 + (profile == P3D_OUSTER_PROFILE_DUAL ? 16 : 12) * 64));
      g_free (json);
    }
  }
}

GST_END_TEST;

/* The packet sizes of the manual's profiles, for the captures' sensors. */
GST_START_TEST (test_packet_sizes)
{
  OusterGenParams params;

  ouster_gen_params_init (&params, P3D_OUSTER_PROFILE_LEGACY, 32, 1024);
  fail_unless_equals_int64 (p3d_ouster_metadata_packet_size (&params.metadata),
      6464);
  ouster_gen_params_init (&params, P3D_OUSTER_PROFILE_DUAL, 32, 1024);
  fail_unless_equals_int64 (p3d_ouster_metadata_packet_size (&params.metadata),
      8448);
  ouster_gen_params_init (&params, P3D_OUSTER_PROFILE_SINGLE, 128, 1024);
  fail_unless_equals_int64 (p3d_ouster_metadata_packet_size (&params.metadata),
      24832);
}

GST_END_TEST;

GST_START_TEST (test_metadata_errors)
{
  /* a valid flat file, with one key replaced by the case's text */
  static const struct
  {
    const gchar *key;           /* NULL: the whole text */
    const gchar *value;
    P3dOusterMetadataError code;
    const gchar *message;
  } cases[] = {
    {NULL, "{", P3D_OUSTER_METADATA_ERROR_SYNTAX, "not JSON"},
    {NULL, "[1, 2]", P3D_OUSTER_METADATA_ERROR_SCHEMA, "not a JSON object"},
    {NULL, "{}", P3D_OUSTER_METADATA_ERROR_SCHEMA, "no pixels_per_column"},
    {"pixels_per_column", "0", P3D_OUSTER_METADATA_ERROR_VALUE,
        "pixels_per_column is 0"},
    {"pixels_per_column", "129", P3D_OUSTER_METADATA_ERROR_VALUE,
        "pixels_per_column is 129"},
    {"pixels_per_column", "\"32\"", P3D_OUSTER_METADATA_ERROR_SCHEMA,
        "pixels_per_column is not a finite number"},
    {"columns_per_packet", "65", P3D_OUSTER_METADATA_ERROR_VALUE,
        "columns_per_packet is 65"},
    {"columns_per_frame", "8192", P3D_OUSTER_METADATA_ERROR_VALUE,
        "columns_per_frame is 8192"},
    {"column_window", "[0, 1024]", P3D_OUSTER_METADATA_ERROR_VALUE,
        "column_window[1] is 1024"},
    {"column_window", "[0]", P3D_OUSTER_METADATA_ERROR_SCHEMA,
        "column_window has 1 entries, 2 expected"},
    {"pixel_shift_by_row", "[1, 2]", P3D_OUSTER_METADATA_ERROR_SCHEMA,
        "pixel_shift_by_row has 2 entries, 32 expected"},
    {"beam_altitude_angles", "7", P3D_OUSTER_METADATA_ERROR_SCHEMA,
        "beam_altitude_angles is not an array"},
    {"udp_profile_lidar", "\"RNG15_RFL8_NIR8\"",
          P3D_OUSTER_METADATA_ERROR_VALUE,
        "\"RNG15_RFL8_NIR8\" is not supported"},
    {"udp_profile_lidar", "12", P3D_OUSTER_METADATA_ERROR_SCHEMA,
        "udp_profile_lidar is not a string"},
    {"header_type", "\"FUSA\"", P3D_OUSTER_METADATA_ERROR_VALUE,
        "header_type \"FUSA\" is not supported"},
    {"lidar_to_sensor_transform", "[1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,1,1]",
        P3D_OUSTER_METADATA_ERROR_VALUE, "the last row is 0 0 1 1"},
    {"lidar_to_sensor_transform", "[1,0,0,0, 0,1,0,0, 0,0,1,1e9, 0,0,0,1]",
        P3D_OUSTER_METADATA_ERROR_VALUE, "translation 1e+09 mm"},
    {"lidar_to_sensor_transform", "[1,0,0,0, 0,1,0,0, 0,0,1,0]",
        P3D_OUSTER_METADATA_ERROR_SCHEMA, "has 12 entries, 16 expected"},
    {"lidar_to_sensor_transform", "null", P3D_OUSTER_METADATA_ERROR_SCHEMA,
        "lidar_to_sensor_transform is not an array"},
    {"lidar_origin_to_beam_origin_mm", "-3",
          P3D_OUSTER_METADATA_ERROR_VALUE,
        "lidar_origin_to_beam_origin_mm is -3"},
  };
  OusterGenParams params;
  P3dOusterMetadata read;
  gchar *json;
  guint i;

  ouster_gen_params_init (&params, P3D_OUSTER_PROFILE_SINGLE, 32, 1024);
  params.metadata.beams = 32;
  json = ouster_gen_metadata_json (&params.metadata, FALSE);
  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    GError *error = NULL;
    gchar *text;

    if (cases[i].key == NULL) {
      text = g_strdup (cases[i].value);
    } else {
      /* the key's value swapped, or the key added at the top */
      gchar *pattern = g_strdup_printf ("\"%s\": ", cases[i].key);
      gchar *at = strstr (json, pattern);

      if (at == NULL) {
        text = g_strdup_printf ("{\"%s\": %s, %s", cases[i].key,
            cases[i].value, json + 1);
      } else {
        const gchar *value = at + strlen (pattern), *end = value;
        gint depth = 0;

        /* to the end of the value: a number, a string or an array */
        for (; *end != '\0'; end++) {
          if (*end == '[')
            depth++;
          else if (*end == ']' && --depth == 0) {
            end++;
            break;
          } else if (depth == 0 && (*end == ',' || *end == '}' || *end == '\n'))
            break;
        }
        text = g_strdup_printf ("%.*s%s%s", (gint) (value - json), json,
            cases[i].value, end);
      }
      g_free (pattern);
    }
    fail_if (p3d_ouster_metadata_parse (text, -1, &read, &error),
        "case %u parsed: %s", i, text);
    fail_unless_equals_int (error->code, cases[i].code);
    fail_unless (strstr (error->message, cases[i].message) != NULL,
        "case %u: \"%s\" lacks \"%s\"", i, error->message, cases[i].message);
    g_error_free (error);
    g_free (text);
  }
  g_free (json);

  /* 64 columns of 128 dual pixels: more than a UDP packet */
  {
    GError *error = NULL;

    ouster_gen_params_init (&params, P3D_OUSTER_PROFILE_DUAL, 128, 1024);
    params.metadata.columns_per_packet = 64;
    json = ouster_gen_metadata_json (&params.metadata, TRUE);
    fail_if (p3d_ouster_metadata_parse (json, -1, &read, &error));
    fail_unless (strstr (error->message, "more than UDP carries") != NULL);
    g_error_free (error);
    g_free (json);
  }
}

GST_END_TEST;

GST_START_TEST (test_wrong_packets)
{
  OusterGenParams params;
  P3dOusterDecoder *decoder;
  P3dOusterPacket packet;
  guint8 data[8448] = { 0 };
  gchar *why = NULL;

  ouster_gen_params_init (&params, P3D_OUSTER_PROFILE_LEGACY, 32, 1024);
  decoder = p3d_ouster_decoder_new (&params.metadata, P3D_LIDAR_RETURNS_BOTH);
  fail_if (p3d_ouster_packet_parse (decoder, data, 8448, &packet, &why));
  fail_unless (strstr (why, "8448 bytes, a LEGACY packet of 16 columns of 32 "
          "beams has 6464") != NULL, "%s", why);
  g_free (why);
  /* the right size, nothing valid: every column invalid */
  fail_unless (p3d_ouster_packet_parse (decoder, data, 6464, &packet, NULL));
  fail_unless_equals_int (packet.valid[0], FALSE);
  p3d_ouster_decoder_free (decoder);
}

GST_END_TEST;

/* Packets of any bytes: their points land in the grid, finite. */
GST_START_TEST (test_random_packets)
{
  guint profile, round;
  P3dTestRng rng;

  p3d_test_rng_init (&rng, 11);
  for (profile = 0; profile < 3; profile++) {
    OusterGenParams params;
    P3dOusterDecoder *decoder;
    gsize size, slots, i;
    guint8 *data;
    gfloat *grid;
    guint64 *valid;

    ouster_gen_params_init (&params, profile, 32, 512);
    decoder = p3d_ouster_decoder_new (&params.metadata, P3D_LIDAR_RETURNS_BOTH);
    size = p3d_ouster_metadata_packet_size (&params.metadata);
    slots = p3d_ouster_decoder_grid_points (decoder);
    data = g_malloc (size);
    grid = g_new (gfloat, slots * 5);
    valid = g_new0 (guint64, (slots + 63) / 64);
    for (round = 0; round < 200; round++) {
      P3dOusterPacket packet;
      P3dOusterCounts counts = { 0, 0, 0 };
      gsize n;

      for (i = 0; i < size; i++)
        data[i] = (guint8) p3d_test_rng_below (&rng, 256);
      fail_unless (p3d_ouster_packet_parse (decoder, data, size, &packet,
              NULL));
      fail_unless (packet.packet_index < 512 / 16);
      p3d_ouster_decode (decoder, data, &packet, 0, &xyzit, grid, valid,
          &counts);
      n = p3d_ouster_grid_compact (decoder, &xyzit, grid, valid);
      fail_unless (n <= slots);
      for (i = 0; i < n * 5; i++)
        EXPECT (isfinite (grid[i]), "value %" G_GSIZE_FORMAT " is %f", i,
            grid[i]);
      memset (valid, 0, (slots + 63) / 64 * sizeof (guint64));
    }
    g_free (data);
    g_free (grid);
    g_free (valid);
    p3d_ouster_decoder_free (decoder);
  }
}

GST_END_TEST;

static Suite *
ousterparse_decoder_suite (void)
{
  Suite *s = suite_create ("ousterparse_decoder");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_truth_profiles);
  tcase_add_test (tc, test_column_window);
  tcase_add_test (tc, test_metadata_round_trip);
  tcase_add_test (tc, test_packet_sizes);
  tcase_add_test (tc, test_metadata_errors);
  tcase_add_test (tc, test_wrong_packets);
  tcase_add_test (tc, test_random_packets);
  return s;
}

P3D_CHECK_MAIN (ousterparse_decoder);
