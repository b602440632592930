/* Fuzz target: ousterparse through appsrc ! ousterparse ! appsink
 * (fuzzelement.c). The input picks a sensor (profile, 8 to 32 beams, 64 to
 * 256 columns, packets of 8 or 16 columns, a column window plain or
 * wrapping, the metadata in either form; one time in eight the metadata
 * file is the input's own text instead), returns, clock and
 * partial-sweeps, then up to 200 packets: lidar packets of the profile's
 * size with frame ids that go on, repeat, go back or jump, measurement ids
 * in place or anywhere, any status and pixels; IMU packets; or bytes of
 * any size. The run must end or fail with a clear error within the time
 * limit, and every sweep must hold whole points, all finite
 * (fuzzlidar.c). */
#include <string.h>

#include "fuzzelement.h"
#include "fuzzlidar.h"
#include "gstousterparse.h"
#include "p3dtest-lidargen.h"

#define MAX_PACKETS 200

typedef struct
{
  P3dOusterMetadata metadata;
  gsize size;
  guint frame;
  guint packet;
  guint64 time;
} Stream;

static void
put_u16 (guint8 * p, guint v)
{
  p[0] = v & 0xff;
  p[1] = (v >> 8) & 0xff;
}

static GstBuffer *
make_packet (FuzzReader * reader, gpointer user_data, guint index)
{
  static const gint frame_steps[] = { 0, 0, 0, 1, 2, -1, 300 };
  Stream *stream = user_data;
  const P3dOusterMetadata *md = &stream->metadata;
  gboolean legacy = md->profile == P3D_OUSTER_PROFILE_LEGACY;
  gsize column_size = (stream->size - (legacy ? 0 : 64)) /
      md->columns_per_packet;
  guint packets = md->columns_per_frame / md->columns_per_packet;
  guint kind, c, i;
  guint8 *data, seed;

  if (index >= MAX_PACKETS || reader->pos >= reader->size)
    return NULL;
  kind = fuzz_below (reader, 16);
  if (kind == 14)
    return gst_buffer_new_wrapped (g_malloc0 (48), 48);
  if (kind == 15) {
    gsize size = fuzz_below (reader, 4096);
    guint8 *bytes = g_malloc0 (MAX (size, 1));

    for (i = 0; i < size; i++)
      bytes[i] = fuzz_u8 (reader);
    return gst_buffer_new_wrapped (bytes, size);
  }

  /* the next packet, or another of the frame, or another frame */
  stream->packet++;
  if (kind == 13)
    stream->packet = fuzz_below (reader, packets + 2);
  if (stream->packet >= packets) {
    stream->packet = 0;
    stream->frame++;
  }
  stream->frame += frame_steps[fuzz_below (reader, G_N_ELEMENTS (frame_steps))];
  data = g_malloc0 (stream->size);
  if (!legacy)
    put_u16 (data + 2, stream->frame & 0xffff);
  for (c = 0; c < md->columns_per_packet; c++) {
    guint8 *column = data + (legacy ? 0 : 32) + c * column_size;
    guint m = stream->packet * md->columns_per_packet + c;
    guint64 time = stream->time + (guint64) m * 97000;

    if (fuzz_below (reader, 32) == 0)
      m = fuzz_below (reader, 65536);
    for (i = 0; i < 8; i++)
      column[i] = (time >> (8 * i)) & 0xff;
    put_u16 (column + 8, m);
    if (legacy) {
      put_u16 (column + 10, stream->frame & 0xffff);
      memset (column + column_size - 4, fuzz_below (reader, 8) ? 0xff :
          fuzz_u8 (reader), 4);
    } else {
      put_u16 (column + 10, fuzz_below (reader, 8) ? 1 : fuzz_u8 (reader));
    }
    /* the column's pixels from one byte of the input, or every byte from
     * the input one column in sixteen */
    seed = fuzz_u8 (reader);
    for (i = legacy ? 16 : 12; i < column_size - (legacy ? 4 : 0); i++)
      column[i] = seed == 0xff ? fuzz_u8 (reader) :
          (guint8) (seed * (i + 7) + (i >> 3) * 31);
  }
  stream->time += 1000000;
  return gst_buffer_new_wrapped (data, stream->size);
}

int LLVMFuzzerTestOneInput (const guint8 * data, size_t size);

int
LLVMFuzzerTestOneInput (const guint8 * data, size_t size)
{
  static const gchar *const returns[] = { "both", "strongest", "last" };
  static const guint beams[] = { 8, 16, 32 };
  static const guint columns[] = { 64, 128, 256 };
  OusterGenParams params;
  GstElement *parser;
  FuzzReader reader;
  Stream stream;
  guint profile, n_beams, n_columns, window;
  gboolean nested;
  gchar *json;

  fuzz_gst_init ();
  fuzz_reader_init (&reader, data, size);
  parser = g_object_new (P3D_TYPE_OUSTER_PARSE, NULL);
  profile = fuzz_below (&reader, 3);
  n_beams = beams[fuzz_below (&reader, G_N_ELEMENTS (beams))];
  n_columns = columns[fuzz_below (&reader, G_N_ELEMENTS (columns))];
  ouster_gen_params_init (&params, profile, n_beams, n_columns);
  params.metadata.columns_per_packet = fuzz_below (&reader, 2) ? 16 : 8;
  window = fuzz_below (&reader, 3);
  if (window == 1) {
    params.metadata.column_window[0] = 10;
    params.metadata.column_window[1] = n_columns / 2;
  } else if (window == 2) {
    params.metadata.column_window[0] = n_columns - 20;
    params.metadata.column_window[1] = 30;
  }
  nested = fuzz_below (&reader, 2);
  if (fuzz_below (&reader, 8) == 0) {
    /* the metadata is the input's own text (MIN evaluates twice: the
     * length is read first) */
    gsize length = fuzz_below (&reader, 2048);

    length = MIN (length, reader.size - reader.pos);

    g_object_set (parser, "metadata", fuzz_lidar_file ("os.json",
            (const gchar *) reader.data + reader.pos, length), NULL);
    reader.pos += length;
  } else {
    json = ouster_gen_metadata_json (&params.metadata, nested);
    g_object_set (parser, "metadata", fuzz_lidar_file ("os.json", json,
            strlen (json)), NULL);
    g_free (json);
  }
  gst_util_set_object_arg (G_OBJECT (parser), "returns",
      returns[fuzz_below (&reader, G_N_ELEMENTS (returns))]);
  gst_util_set_object_arg (G_OBJECT (parser), "clock",
      fuzz_below (&reader, 2) ? "arrival" : "packet");
  g_object_set (parser, "partial-sweeps", (gboolean) fuzz_below (&reader, 2),
      NULL);
  fuzz_lidar_watch_sweeps (parser);

  stream.metadata = params.metadata;
  stream.size = p3d_ouster_metadata_packet_size (&params.metadata);
  stream.frame = 65530 + fuzz_below (&reader, 8);
  stream.packet = G_MAXUINT - 1;
  stream.time = G_GUINT64_CONSTANT (1000000000) * fuzz_below (&reader, 256);
  fuzz_run_element (parser, "sink",
      gst_caps_new_empty_simple ("application/octet-stream"), &reader,
      make_packet, &stream);
  return 0;
}
