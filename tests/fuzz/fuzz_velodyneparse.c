/* Fuzz target: velodyneparse through appsrc ! velodyneparse ! appsink
 * (fuzzelement.c). The input picks the model property (or auto), returns,
 * cut-angle, clock and partial-sweeps, sometimes a calibration file (its
 * text from the input: YAML or not), then up to 300 packets: data packets
 * of the model's layout (block flags, one in sixteen wrong; azimuths and
 * timestamps that step forwards, repeat, go back or jump; any return
 * mode and product byte; any distances), position packets, or bytes of
 * any size. The run must end or fail with a clear error within the time
 * limit, and every sweep must hold whole points, all finite
 * (fuzzlidar.c). */
#include <string.h>

#include "fuzzelement.h"
#include "fuzzlidar.h"
#include "gstvelodyneparse.h"

#define MAX_PACKETS 300

typedef struct
{
  P3dVelodyneModel model;
  guint32 timestamp;
  guint azimuth;
} Stream;

/* The block flags of @model, in block order. */
static guint16
block_flag (P3dVelodyneModel model, guint block, gboolean dual)
{
  static const guint16 banks[4] = { 0xeeff, 0xddff, 0xccff, 0xbbff };

  switch (model) {
    case P3D_VELODYNE_MODEL_HDL64E:
      return banks[block % 2];
    case P3D_VELODYNE_MODEL_VLS128:
      return banks[dual ? (block / 2) % 4 : block % 4];
    default:
      return banks[0];
  }
}

static GstBuffer *
make_packet (FuzzReader * reader, gpointer user_data, guint index)
{
  static const gint32 steps_us[] = { 1327, 553, 160, 0, -700, 5000, 150000 };
  static const guint steps[] = { 40, 480, 3000, 20000, 35990 };
  static const guint8 modes[] = { 0x37, 0x38, 0x39, 0x00 };
  Stream *stream = user_data;
  guint8 data[P3D_VELODYNE_DATA_PACKET_SIZE];
  guint kind, step, b, i;
  gboolean dual;
  guint8 mode, seed;

  if (index >= MAX_PACKETS || reader->pos >= reader->size)
    return NULL;
  kind = fuzz_below (reader, 16);
  if (kind == 14)
    return gst_buffer_new_wrapped (g_malloc0 (512), 512);
  if (kind == 15) {
    gsize size = fuzz_below (reader, 1400);
    guint8 *bytes = g_malloc0 (MAX (size, 1));

    for (i = 0; i < size; i++)
      bytes[i] = fuzz_u8 (reader);
    return gst_buffer_new_wrapped (bytes, size);
  }

  stream->timestamp += (guint32) steps_us[fuzz_below (reader,
          G_N_ELEMENTS (steps_us))];
  step = steps[fuzz_below (reader, G_N_ELEMENTS (steps))];
  mode = modes[fuzz_below (reader, G_N_ELEMENTS (modes))];
  dual = mode == 0x39;
  for (b = 0; b < 12; b++) {
    guint8 *block = data + b * 100;
    guint16 flag = block_flag (stream->model, b, dual);
    guint azimuth = (stream->azimuth + b * step / 12) % 36000;

    if (fuzz_below (reader, 16) == 0)
      flag = fuzz_u8 (reader) << 8 | 0xff;
    block[0] = flag & 0xff;
    block[1] = flag >> 8;
    block[2] = azimuth & 0xff;
    block[3] = azimuth >> 8;
    /* the block's returns from one byte of the input (0: none), or every
     * byte from the input one block in eight */
    seed = fuzz_u8 (reader);
    for (i = 0; i < 32; i++) {
      guint distance = seed == 0 || (seed + i) % 7 == 0 ? 0 :
          (seed * 131 + i * 977 + b * 59) % 40000 + 100;

      if (seed == 0xff) {
        block[4 + i * 3] = fuzz_u8 (reader);
        block[5 + i * 3] = fuzz_u8 (reader);
        block[6 + i * 3] = fuzz_u8 (reader);
        continue;
      }
      block[4 + i * 3] = distance & 0xff;
      block[5 + i * 3] = distance >> 8;
      block[6 + i * 3] = (guint8) (seed * 3 + i);
    }
  }
  stream->azimuth = (stream->azimuth + step) % 36000;
  data[1200] = stream->timestamp & 0xff;
  data[1201] = (stream->timestamp >> 8) & 0xff;
  data[1202] = (stream->timestamp >> 16) & 0xff;
  data[1203] = stream->timestamp >> 24;
  data[1204] = mode;
  data[1205] = fuzz_below (reader, 4) ? (stream->model ?
      p3d_velodyne_model_get_info (stream->model)->product_id : 0x22) :
      fuzz_u8 (reader);
  return gst_buffer_new_wrapped (g_memdup2 (data, sizeof (data)),
      sizeof (data));
}

int LLVMFuzzerTestOneInput (const guint8 * data, size_t size);

int
LLVMFuzzerTestOneInput (const guint8 * data, size_t size)
{
  static const gchar *const models[] = { "auto", "vlp-16", "puck-hi-res",
    "vlp-32c", "hdl-32e", "hdl-64e", "vls-128"
  };
  static const gchar *const returns[] = { "both", "strongest", "last" };
  static const gdouble cuts[] = { 0, 180, 359.99, 90.5 };
  GstElement *parser;
  FuzzReader reader;
  Stream stream;
  guint model, calibration;
  gdouble cut;

  fuzz_gst_init ();
  fuzz_reader_init (&reader, data, size);
  parser = g_object_new (P3D_TYPE_VELODYNE_PARSE, NULL);
  /* one after the other: the order of a call's arguments is unspecified,
   * and the corpus must mean the same to every compiler */
  model = fuzz_below (&reader, G_N_ELEMENTS (models));
  gst_util_set_object_arg (G_OBJECT (parser), "model", models[model]);
  gst_util_set_object_arg (G_OBJECT (parser), "returns",
      returns[fuzz_below (&reader, G_N_ELEMENTS (returns))]);
  cut = cuts[fuzz_below (&reader, G_N_ELEMENTS (cuts))];
  g_object_set (parser, "cut-angle", cut, NULL);
  gst_util_set_object_arg (G_OBJECT (parser), "clock",
      fuzz_below (&reader, 2) ? "arrival" : "packet");
  g_object_set (parser, "partial-sweeps", (gboolean) fuzz_below (&reader, 2),
      NULL);
  /* a calibration file one time in four: the input's next bytes */
  calibration = fuzz_below (&reader, 4) == 0 ? fuzz_below (&reader, 2048) : 0;
  if (calibration > 0) {
    gsize length = MIN (calibration, reader.size - reader.pos);

    g_object_set (parser, "calibration", fuzz_lidar_file ("cal.yaml",
            (const gchar *) reader.data + reader.pos, length), NULL);
    reader.pos += length;
  }
  fuzz_lidar_watch_sweeps (parser);

  stream.model = model == 0 ? P3D_VELODYNE_MODEL_VLP16 : model;
  stream.timestamp = 3599990000u - fuzz_below (&reader, 256) * 1000;
  stream.azimuth = fuzz_below (&reader, 36000);
  fuzz_run_element (parser, "sink",
      gst_caps_new_empty_simple ("application/octet-stream"), &reader,
      make_packet, &stream);
  return 0;
}
