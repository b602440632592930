/* bench_lidarparse: the lidar packet decoders on one core, in points a
 * second.
 *
 *   bench_lidarparse [--seconds S] [--velodyne FILE.pcap[:model[:cut]]]...
 *       [--ouster FILE.pcap:META.json]... [--pipeline]
 *
 * Streams of the tests' packet generator (p3dtest-lidargen.c) for every model and
 * profile, and the recordings named on the command line (their UDP
 * payloads read from classic pcap files), are decoded packet after packet
 * as velodyneparse and ousterparse do it: the packet laid out and placed
 * in the stream, its points written into one preallocated sweep (xyzit),
 * the Ouster frames destaggered and compacted. Each stream is decoded
 * again and again for S seconds (default 1), five times; the median rate
 * is printed. With --pipeline, the same packets also go through appsrc !
 * velodyneparse (or ousterparse) ! fakesink, as one stream of several
 * passes queued in appsrc beforehand: the element's whole cost (buffers,
 * pool, timestamps, GstBaseParse) on the streaming thread, in system
 * memory.
 *
 * Then, for each recording, what the element makes of it sweep by sweep
 * (points, nearest and farthest, the ground's height, the time between
 * sweeps): a check of a real sensor's output by eye. The tables are
 * markdown. CPU only: it builds without CUDA.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/gst.h>

#include "p3dtest-lidargen.h"

#define RUNS 5

typedef struct
{
  gchar *name;
  gboolean ouster;
  /* the payloads, in order */
  GPtrArray *packets;
  /* Velodyne: the model and calibration */
  P3dVelodyneModel model;
  P3dVelodyneCalibration calibration;
  gboolean have_calibration;
  gdouble cut;
  /* Ouster: the metadata and its file */
  P3dOusterMetadata metadata;
  gchar *metadata_path;
  /* points of one pass, to check every pass gives the same */
  gsize points;
} Stream;

static const P3dLidarPointLayout xyzit = { 5, 3, 4, -1 };

/* One pass of @stream through the decoder; returns the points written. */
static gsize
decode_velodyne (Stream * stream, P3dVelodyneDecoder * decoder, gfloat * sweep,
    gsize capacity)
{
  gsize total = 0, in_sweep = 0;
  guint p;

  /* every pass is a stream of its own */
  p3d_velodyne_decoder_reset (decoder);
  for (p = 0; p < stream->packets->len; p++) {
    gsize size;
    const guint8 *data = g_bytes_get_data (stream->packets->pdata[p], &size);
    P3dVelodyneCounts counts = { 0, 0 };
    P3dVelodynePacket packet;
    P3dVelodynePlace place;
    gsize n;

    if (size != P3D_VELODYNE_DATA_PACKET_SIZE
        || !p3d_velodyne_packet_parse (decoder, data, &packet, NULL))
      continue;
    p3d_velodyne_decoder_place (decoder, &packet, &place);
    if (place.kind != P3D_VELODYNE_PLACE_NEXT)
      continue;
    if (p3d_velodyne_decoder_take (decoder, &packet, &place) < packet.n_columns)
      in_sweep = 0;
    if (in_sweep + p3d_velodyne_decoder_max_points (decoder, &packet,
            packet.n_columns) > capacity)
      in_sweep = 0;
    n = p3d_velodyne_decode (decoder, data, &packet, 0, packet.n_columns,
        1e-3, &xyzit, sweep + in_sweep * xyzit.stride, &counts);
    in_sweep += n;
    total += n;
  }
  return total;
}

static gsize
decode_ouster (Stream * stream, P3dOusterDecoder * decoder, gfloat * grid,
    guint64 * valid)
{
  gsize slots = p3d_ouster_decoder_grid_points (decoder);
  gsize total = 0, words = (slots + 63) / 64;
  guint frame = G_MAXUINT, p;

  for (p = 0; p < stream->packets->len; p++) {
    gsize size;
    const guint8 *data = g_bytes_get_data (stream->packets->pdata[p], &size);
    P3dOusterCounts counts = { 0, 0, 0 };
    P3dOusterPacket packet;

    if (!p3d_ouster_packet_parse (decoder, data, size, &packet, NULL))
      continue;
    if (packet.frame_id != frame) {
      if (frame != G_MAXUINT)
        total += p3d_ouster_grid_compact (decoder, &xyzit, grid, valid);
      memset (valid, 0, words * sizeof (guint64));
      frame = packet.frame_id;
    }
    p3d_ouster_decode (decoder, data, &packet, packet.timestamp[0], &xyzit,
        grid, valid, &counts);
  }
  total += p3d_ouster_grid_compact (decoder, &xyzit, grid, valid);
  return total;
}

/* Points a second of @stream's decoder: the median of RUNS runs of
 * @seconds each. */
static gdouble
bench_decoder (Stream * stream, gdouble seconds)
{
  gsize capacity = 4 << 20;
  gfloat *sweep = g_new (gfloat, capacity * xyzit.stride);
  guint64 *valid = g_new0 (guint64, capacity / 64 + 1);
  P3dVelodyneDecoder *velodyne = NULL;
  P3dOusterDecoder *ouster = NULL;
  GError *error = NULL;
  gdouble rates[RUNS];
  guint r, i, j;

  /* made once, as the elements make them at start */
  if (stream->ouster) {
    ouster = p3d_ouster_decoder_new (&stream->metadata, P3D_LIDAR_RETURNS_BOTH);
  } else {
    velodyne = p3d_velodyne_decoder_new (stream->model,
        stream->have_calibration ? &stream->calibration : NULL,
        P3D_LIDAR_RETURNS_BOTH, stream->cut, &error);
    if (velodyne == NULL) {
      g_printerr ("%s: %s\n", stream->name, error->message);
      exit (1);
    }
  }
  for (r = 0; r < RUNS; r++) {
    gint64 start = g_get_monotonic_time (), now;
    gsize points = 0;

    do {
      gsize n = stream->ouster ? decode_ouster (stream, ouster, sweep, valid) :
          decode_velodyne (stream, velodyne, sweep, capacity);

      if (stream->points == 0)
        stream->points = n;
      if (n != stream->points) {
        g_printerr ("%s: %" G_GSIZE_FORMAT " points, then %" G_GSIZE_FORMAT
            "\n", stream->name, stream->points, n);
        exit (1);
      }
      points += n;
      now = g_get_monotonic_time ();
    } while (now - start < seconds * 1e6);
    rates[r] = points / ((now - start) * 1e-6);
  }
  for (i = 0; i < RUNS; i++)
    for (j = i + 1; j < RUNS; j++)
      if (rates[j] < rates[i]) {
        gdouble t = rates[i];

        rates[i] = rates[j];
        rates[j] = t;
      }
  g_free (sweep);
  g_free (valid);
  if (velodyne != NULL)
    p3d_velodyne_decoder_free (velodyne);
  if (ouster != NULL)
    p3d_ouster_decoder_free (ouster);
  return rates[RUNS / 2];
}

static void
put_u32 (guint8 * p, guint32 v)
{
  p[0] = v & 0xff;
  p[1] = (v >> 8) & 0xff;
  p[2] = (v >> 16) & 0xff;
  p[3] = v >> 24;
}

static guint32
get_u32 (const guint8 * p)
{
  return p[0] | (p[1] << 8) | (p[2] << 16) | ((guint32) p[3] << 24);
}

/* @stream's packets again as pass @pass of a longer stream: Velodyne
 * timestamps, Ouster frame ids and column times moved on, so that the
 * parser takes the passes as one stream. */
static GBytes *
packet_of_pass (Stream * stream, guint p, guint pass)
{
  gsize size = g_bytes_get_size (stream->packets->pdata[p]);
  guint8 *data = g_memdup2 (g_bytes_get_data (stream->packets->pdata[p],
          NULL), size);

  if (!stream->ouster && size == P3D_VELODYNE_DATA_PACKET_SIZE) {
    const guint8 *first = NULL, *last = NULL;
    guint32 span;
    guint q;

    /* the first and last data packets (recordings hold position packets) */
    for (q = 0; q < stream->packets->len; q++) {
      if (g_bytes_get_size (stream->packets->pdata[q]) !=
          P3D_VELODYNE_DATA_PACKET_SIZE)
        continue;
      last = g_bytes_get_data (stream->packets->pdata[q], NULL);
      if (first == NULL)
        first = last;
    }
    span = (get_u32 (last + 1200) - get_u32 (first + 1200) + 3600000000u +
        1000) % 3600000000u;

    put_u32 (data + 1200, (guint32) ((get_u32 (data + 1200) + (guint64) pass *
                span) % 3600000000u));
  } else if (stream->ouster
      && size == p3d_ouster_metadata_packet_size (&stream->metadata)) {
    const P3dOusterMetadata *md = &stream->metadata;
    gboolean legacy = md->profile == P3D_OUSTER_PROFILE_LEGACY;
    gsize column = (size - (legacy ? 0 : 64)) / md->columns_per_packet;
    guint frames = 4, c, id;

    if (!legacy) {
      id = (data[2] | data[3] << 8) + pass * frames;
      data[2] = id & 0xff;
      data[3] = (id >> 8) & 0xff;
    }
    for (c = 0; c < md->columns_per_packet; c++) {
      guint8 *col = data + (legacy ? 0 : 32) + c * column;
      guint64 t = (guint64) get_u32 (col) | (guint64) get_u32 (col + 4) << 32;

      t += (guint64) pass *frames * 100000000;
      put_u32 (col, (guint32) t);
      put_u32 (col + 4, (guint32) (t >> 32));
      if (legacy) {
        id = (col[10] | col[11] << 8) + pass * frames;
        col[10] = id & 0xff;
        col[11] = (id >> 8) & 0xff;
      }
    }
  }
  return g_bytes_new_take (data, size);
}

static GstPadProbeReturn
count_points (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  gsize *points = user_data;

  *points += gst_buffer_get_size (GST_PAD_PROBE_INFO_BUFFER (info)) / 20;
  return GST_PAD_PROBE_OK;
}

/* Points a second through appsrc ! parser ! fakesink, in system memory:
 * @stream's packets as consecutive passes of one stream (up to 64 MB of
 * them, made before the clock starts), all queued in appsrc, then timed
 * from PLAYING to EOS. */
static gdouble
bench_pipeline (Stream * stream)
{
  gchar *line, *cal_path = NULL;
  GstElement *pipeline, *src, *parser;
  GstPad *pad;
  GstBus *bus;
  GstMessage *message;
  GPtrArray *buffers = g_ptr_array_new ();
  gsize bytes = 0, points = 0;
  gint64 start, end;
  guint pass, p, passes;

  for (p = 0; p < stream->packets->len; p++)
    bytes += g_bytes_get_size (stream->packets->pdata[p]);
  passes = CLAMP ((64 << 20) / bytes, 1, 20);
  for (pass = 0; pass < passes; pass++) {
    for (p = 0; p < stream->packets->len; p++) {
      GstBuffer *buffer = gst_buffer_new_wrapped_bytes (packet_of_pass (stream,
              p, pass));

      GST_BUFFER_PTS (buffer) = (pass * stream->packets->len + p) * GST_USECOND;
      g_ptr_array_add (buffers, buffer);
    }
  }

  if (stream->ouster) {
    line = g_strdup_printf ("appsrc name=src format=time ! ousterparse "
        "name=parser metadata=\"%s\" partial-sweeps=true ! "
        "application/x-point-cloud,format=xyzit ! fakesink",
        stream->metadata_path);
  } else {
    if (stream->have_calibration) {
      gchar *yaml = velodyne_gen_calibration_yaml (&stream->calibration,
          TRUE);

      cal_path = g_build_filename (g_get_tmp_dir (), "bench-cal.yaml", NULL);
      g_file_set_contents (cal_path, yaml, -1, NULL);
      g_free (yaml);
    }
    line = g_strdup_printf ("appsrc name=src format=time ! velodyneparse "
        "name=parser model=%s cut-angle=%f partial-sweeps=true %s%s ! "
        "application/x-point-cloud,format=xyzit ! fakesink",
        p3d_velodyne_model_get_info (stream->model)->nick, stream->cut,
        cal_path ? "calibration=" : "", cal_path ? cal_path : "");
  }
  pipeline = gst_parse_launch (line, NULL);
  g_free (line);
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  parser = gst_bin_get_by_name (GST_BIN (pipeline), "parser");
  pad = gst_element_get_static_pad (parser, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, count_points, &points,
      NULL);
  g_object_set (src, "max-bytes", (guint64) 0, NULL);
  for (p = 0; p < buffers->len; p++)
    gst_app_src_push_buffer (GST_APP_SRC (src), buffers->pdata[p]);
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  g_ptr_array_unref (buffers);

  start = g_get_monotonic_time ();
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  bus = gst_element_get_bus (pipeline);
  message = gst_bus_timed_pop_filtered (bus, GST_CLOCK_TIME_NONE,
      GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  end = g_get_monotonic_time ();
  if (GST_MESSAGE_TYPE (message) == GST_MESSAGE_ERROR) {
    GError *error = NULL;

    gst_message_parse_error (message, &error, NULL);
    g_printerr ("%s: %s\n", stream->name, error->message);
    exit (1);
  }
  gst_message_unref (message);
  if (points < stream->points * passes * 9 / 10) {
    g_printerr ("%s: the element gave %" G_GSIZE_FORMAT " points of %"
        G_GSIZE_FORMAT "\n", stream->name, points, stream->points * passes);
    exit (1);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pad);
  gst_object_unref (src);
  gst_object_unref (parser);
  gst_object_unref (pipeline);
  if (cal_path != NULL) {
    g_unlink (cal_path);
    g_free (cal_path);
  }
  return points / ((end - start) * 1e-6);
}

static gint
compare_floats (gconstpointer a, gconstpointer b)
{
  gfloat x = *(const gfloat *) a, y = *(const gfloat *) b;

  return x < y ? -1 : x > y;
}

/* What the element makes of a recording, sweep by sweep: its points, the
 * nearest and farthest, the ground's height (the 5th percentile of z of
 * the points 3 to 20 m away on the ground plane) and the time from the
 * sweep before; a check by eye of a real sensor's output (whole
 * revolutions, stable counts, a ground plane where the sensor sits). */
static void
describe (Stream * stream)
{
  gchar *line;
  GstElement *pipeline, *src, *sink;
  GstSample *sample;
  GstClockTime previous = GST_CLOCK_TIME_NONE;
  guint p, s = 0;

  if (stream->ouster)
    line = g_strdup_printf ("appsrc name=src format=time ! ousterparse "
        "metadata=\"%s\" ! application/x-point-cloud,format=xyzi ! appsink "
        "name=sink sync=false", stream->metadata_path);
  else
    line = g_strdup_printf ("appsrc name=src format=time ! velodyneparse "
        "model=%s cut-angle=%f ! application/x-point-cloud,format=xyzi ! "
        "appsink name=sink sync=false",
        p3d_velodyne_model_get_info (stream->model)->nick, stream->cut);
  pipeline = gst_parse_launch (line, NULL);
  g_free (line);
  src = gst_bin_get_by_name (GST_BIN (pipeline), "src");
  sink = gst_bin_get_by_name (GST_BIN (pipeline), "sink");
  g_object_set (src, "max-bytes", (guint64) 0, NULL);
  gst_element_set_state (pipeline, GST_STATE_PLAYING);
  for (p = 0; p < stream->packets->len; p++)
    gst_app_src_push_buffer (GST_APP_SRC (src),
        gst_buffer_new_wrapped_bytes (stream->packets->pdata[p]));
  gst_app_src_end_of_stream (GST_APP_SRC (src));
  printf ("\n%s\n\n| sweep | points | nearest, m | farthest, m | ground z, m "
      "| from the sweep before, ms |\n| --- | --- | --- | --- | --- | --- |\n",
      stream->name);
  while ((sample = gst_app_sink_pull_sample (GST_APP_SINK (sink)))) {
    GstBuffer *buffer = gst_sample_get_buffer (sample);
    GArray *ground = g_array_new (FALSE, FALSE, sizeof (gfloat));
    gfloat nearest = G_MAXFLOAT, farthest = 0;
    GstMapInfo map;
    gsize n, i;

    gst_buffer_map (buffer, &map, GST_MAP_READ);
    n = map.size / 16;
    for (i = 0; i < n; i++) {
      const gfloat *q = (const gfloat *) map.data + 4 * i;
      gfloat r = sqrtf (q[0] * q[0] + q[1] * q[1] + q[2] * q[2]);
      gfloat flat = sqrtf (q[0] * q[0] + q[1] * q[1]);

      nearest = MIN (nearest, r);
      farthest = MAX (farthest, r);
      if (flat > 3 && flat < 20)
        g_array_append_val (ground, q[2]);
    }
    gst_buffer_unmap (buffer, &map);
    g_array_sort (ground, compare_floats);
    printf ("| %u | %" G_GSIZE_FORMAT " | %.2f | %.1f | %.2f | ", s++, n,
        nearest, farthest, ground->len ? g_array_index (ground, gfloat,
            ground->len / 20) : NAN);
    if (GST_CLOCK_TIME_IS_VALID (previous))
      printf ("%.1f |\n", (GST_BUFFER_PTS (buffer) - previous) / 1e6);
    else
      printf ("|\n");
    previous = GST_BUFFER_PTS (buffer);
    g_array_unref (ground);
    gst_sample_unref (sample);
  }
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (src);
  gst_object_unref (sink);
  gst_object_unref (pipeline);
}

/* The UDP payloads of a classic pcap file (Ethernet, IPv4). */
static GPtrArray *
read_pcap (const gchar * path)
{
  GPtrArray *packets = g_ptr_array_new_with_free_func ((GDestroyNotify)
      g_bytes_unref);
  gchar *contents;
  gsize size, pos = 24;
  gboolean swap;
  guint32 magic;

  if (!g_file_get_contents (path, &contents, &size, NULL) || size < 24) {
    g_printerr ("cannot read %s\n", path);
    exit (1);
  }
  memcpy (&magic, contents, 4);
  swap = magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1;
  while (pos + 16 <= size) {
    guint32 incl;
    const guint8 *frame;
    gsize ip, udp;

    memcpy (&incl, contents + pos + 8, 4);
    if (swap)
      incl = GUINT32_SWAP_LE_BE (incl);
    pos += 16;
    if (pos + incl > size)
      break;
    frame = (const guint8 *) contents + pos;
    ip = 14 + ((frame[12] == 0x81 && frame[13] == 0x00) ? 4 : 0);
    udp = ip + (frame[ip] & 0xf) * 4;
    if (incl > udp + 8 && frame[ip + 9] == 17) {
      gsize length = ((frame[udp + 4] << 8) | frame[udp + 5]) - 8;

      if (udp + 8 + length <= incl)
        g_ptr_array_add (packets, g_bytes_new (frame + udp + 8, length));
    }
    pos += incl;
  }
  g_free (contents);
  return packets;
}

static Stream *
velodyne_stream (P3dVelodyneModel model, guint8 mode, gboolean calibrated)
{
  Stream *stream = g_new0 (Stream, 1);
  VelodyneGenParams params;
  VelodyneGen *gen;
  guint p;

  velodyne_gen_params_init (&params, model);
  params.return_mode = mode;
  params.no_return_every = 0;
  params.n_packets = 2000;
  if (calibrated)
    velodyne_gen_random_calibration (params.calibration.n_lasers, 5,
        &params.calibration);
  gen = velodyne_gen_new (&params);
  stream->name = g_strdup_printf ("%s%s%s (generated)",
      p3d_velodyne_model_get_info (model)->name, mode == 0x39 ? " dual" : "",
      calibrated ? ", calibration file" : "");
  stream->packets = g_ptr_array_new_with_free_func ((GDestroyNotify)
      g_bytes_unref);
  for (p = 0; p < gen->packets->len; p++)
    g_ptr_array_add (stream->packets, g_bytes_ref (g_array_index
            (gen->packets, VelodyneGenPacket, p).data));
  stream->model = model;
  stream->calibration = params.calibration;
  stream->have_calibration = calibrated || model == P3D_VELODYNE_MODEL_HDL64E;
  stream->cut = 180;
  velodyne_gen_free (gen);
  return stream;
}

static Stream *
ouster_stream (P3dOusterProfile profile, guint beams, guint columns)
{
  Stream *stream = g_new0 (Stream, 1);
  OusterGenParams params;
  OusterGen *gen;
  gchar *json;
  guint p;

  ouster_gen_params_init (&params, profile, beams, columns);
  params.n_frames = 4;
  params.invalid_column_every = 0;
  params.no_return_every = 0;
  gen = ouster_gen_new (&params);
  stream->name = g_strdup_printf ("Ouster %u x %u %s (generated)", beams,
      columns, p3d_ouster_profile_name (profile));
  stream->ouster = TRUE;
  stream->metadata = params.metadata;
  stream->packets = g_ptr_array_new_with_free_func ((GDestroyNotify)
      g_bytes_unref);
  for (p = 0; p < gen->packets->len; p++)
    g_ptr_array_add (stream->packets, g_bytes_ref (g_array_index
            (gen->packets, OusterGenPacket, p).data));
  json = ouster_gen_metadata_json (&params.metadata, FALSE);
  stream->metadata_path = g_strdup_printf ("%s/bench-ouster-%u-%u-%d.json",
      g_get_tmp_dir (), beams, columns, profile);
  g_file_set_contents (stream->metadata_path, json, -1, NULL);
  g_free (json);
  ouster_gen_free (gen);
  return stream;
}

int
main (int argc, char **argv)
{
  GPtrArray *streams = g_ptr_array_new ();
  guint recordings;
  gdouble seconds = 1.0;
  gboolean pipeline = FALSE;
  gint i;

  gst_init (&argc, &argv);
  for (i = 1; i < argc; i++) {
    if (g_str_equal (argv[i], "--seconds") && i + 1 < argc) {
      seconds = g_ascii_strtod (argv[++i], NULL);
    } else if (g_str_equal (argv[i], "--pipeline")) {
      pipeline = TRUE;
    } else if (g_str_equal (argv[i], "--velodyne") && i + 1 < argc) {
      gchar **parts = g_strsplit (argv[++i], ":", 3);
      Stream *stream = g_new0 (Stream, 1);
      guint8 product;

      stream->name = g_strdup (parts[0]);
      stream->packets = read_pcap (parts[0]);
      stream->cut = parts[1] && parts[2] ? g_ascii_strtod (parts[2], NULL) :
          180;
      stream->model = P3D_VELODYNE_MODEL_AUTO;
      if (parts[1] != NULL && *parts[1] != '\0') {
        guint m;

        for (m = 1; m < P3D_VELODYNE_N_MODELS; m++)
          if (g_str_equal (p3d_velodyne_model_get_info (m)->nick, parts[1]))
            stream->model = m;
      }
      for (guint p = 0; stream->model == P3D_VELODYNE_MODEL_AUTO
          && p < stream->packets->len; p++) {
        gsize size;
        const guint8 *data = g_bytes_get_data (stream->packets->pdata[p],
            &size);

        if (size == P3D_VELODYNE_DATA_PACKET_SIZE)
          stream->model = p3d_velodyne_model_detect (data, &product);
      }
      if (stream->model == P3D_VELODYNE_MODEL_AUTO) {
        g_printerr ("%s: no known model; name it (FILE:model)\n", parts[0]);
        return 1;
      }
      g_ptr_array_add (streams, stream);
      g_strfreev (parts);
    } else if (g_str_equal (argv[i], "--ouster") && i + 1 < argc) {
      gchar **parts = g_strsplit (argv[++i], ":", 2);
      Stream *stream = g_new0 (Stream, 1);
      GError *error = NULL;

      if (parts[1] == NULL
          || !p3d_ouster_metadata_load (parts[1], &stream->metadata, &error)) {
        g_printerr ("--ouster FILE.pcap:META.json: %s\n", error ?
            error->message : "no metadata");
        return 1;
      }
      stream->name = g_strdup (parts[0]);
      stream->ouster = TRUE;
      stream->packets = read_pcap (parts[0]);
      stream->metadata_path = g_strdup (parts[1]);
      g_ptr_array_add (streams, stream);
      g_strfreev (parts);
    } else {
      g_printerr ("usage: %s [--seconds S] [--velodyne FILE.pcap[:model[:cut]]]"
          "... [--ouster FILE.pcap:META.json]... [--pipeline]\n", argv[0]);
      return 1;
    }
  }
  recordings = streams->len;
  g_ptr_array_add (streams, velodyne_stream (P3D_VELODYNE_MODEL_VLP16, 0x37,
          FALSE));
  g_ptr_array_add (streams, velodyne_stream (P3D_VELODYNE_MODEL_HDL32E, 0x37,
          FALSE));
  g_ptr_array_add (streams, velodyne_stream (P3D_VELODYNE_MODEL_VLP32C, 0x39,
          FALSE));
  g_ptr_array_add (streams, velodyne_stream (P3D_VELODYNE_MODEL_HDL64E, 0x37,
          TRUE));
  g_ptr_array_add (streams, velodyne_stream (P3D_VELODYNE_MODEL_VLS128, 0x37,
          FALSE));
  g_ptr_array_add (streams, velodyne_stream (P3D_VELODYNE_MODEL_VLS128, 0x39,
          FALSE));
  g_ptr_array_add (streams, ouster_stream (P3D_OUSTER_PROFILE_LEGACY, 64,
          1024));
  g_ptr_array_add (streams, ouster_stream (P3D_OUSTER_PROFILE_SINGLE, 128,
          1024));
  g_ptr_array_add (streams, ouster_stream (P3D_OUSTER_PROFILE_DUAL, 128, 2048));

  printf ("| stream | points a pass | decoder, Mpoints/s%s |\n",
      pipeline ? " | element, Mpoints/s" : "");
  printf ("| --- | --- | ---%s |\n", pipeline ? " | ---" : "");
  for (i = 0; i < (gint) streams->len; i++) {
    Stream *stream = streams->pdata[i];
    gdouble rate = bench_decoder (stream, seconds);

    printf ("| %s | %" G_GSIZE_FORMAT " | %.1f", stream->name,
        stream->points, rate / 1e6);
    if (pipeline)
      printf (" | %.1f", bench_pipeline (stream) / 1e6);
    printf (" |\n");
    fflush (stdout);
  }
  for (i = 0; i < (gint) recordings; i++)
    describe (streams->pdata[i]);
  return 0;
}
