/* The Velodyne packet decoder: models, packet layout, stream placement and
 * the points. The figures come from the sensors' user manuals (packet
 * format, firing timing, precision azimuth) and, for the fixed laser
 * angles, from ros-drivers/velodyne's calibration files. */
#include <math.h>
#include <string.h>

#include "velodyneparse-decoder.h"

#define BLOCKS 12
#define BLOCK_SIZE 100
#define RETURN_SIZE 3
#define TIMESTAMP_OFFSET 1200
#define RETURN_MODE_OFFSET 1204
#define PRODUCT_OFFSET 1205

/* Block flags, as little-endian 16-bit values (bytes 0xFF 0xEE first). */
#define FLAG_BANK1 0xeeff
#define FLAG_BANK2 0xddff
#define FLAG_BANK3 0xccff
#define FLAG_BANK4 0xbbff

#define RETURN_MODE_DUAL 0x39

/* A packet more than this many microseconds after the last one taken
 * breaks the sweep. */
#define BREAK_TIME_US 100000
/* The fastest rotation of any model (1200 rpm) in hundredths of a degree
 * per microsecond, and the azimuth slack allowed beyond it. */
#define MAX_TURN_RATE 0.72
#define TURN_SLACK 500.0
/* A column azimuth more than this many hundredths behind the previous one
 * has passed the cut angle; less is encoder jitter. */
#define CUT_HYSTERESIS 1000.0f
/* A gap between two blocks beyond this (hundredths) is not rotation. */
#define MAX_BLOCK_GAP 1000.0f
#define HOUR_US G_GINT64_CONSTANT (3600000000)

static const P3dVelodyneModelInfo model_infos[] = {
  {P3D_VELODYNE_MODEL_VLP16, "vlp-16", "VLP-16", 16, 0.002, 0x22, TRUE, TRUE},
  {P3D_VELODYNE_MODEL_PUCK_HIRES, "puck-hi-res", "Puck Hi-Res", 16, 0.002,
      0x24, TRUE, TRUE},
  {P3D_VELODYNE_MODEL_VLP32C, "vlp-32c", "VLP-32C", 32, 0.004, 0x28, TRUE,
      TRUE},
  {P3D_VELODYNE_MODEL_HDL32E, "hdl-32e", "HDL-32E", 32, 0.002, 0x21, TRUE,
      TRUE},
  {P3D_VELODYNE_MODEL_HDL64E, "hdl-64e", "HDL-64E S2/S3", 64, 0.002, 0, FALSE,
      FALSE},
  {P3D_VELODYNE_MODEL_VLS128, "vls-128", "VLS-128", 128, 0.004, 0xa1, TRUE,
      TRUE},
};

/* Each model's firing timing (the manuals' timing tables), microseconds:
 * a sequence's first firing is at @first_single (@first_dual in dual
 * mode) + index x @sequence from the packet's timestamp; laser l fires
 * slot(l) x @slot after that. @interpolate: the manual's precision azimuth
 * applies (the lasers' azimuths follow their firing times). */
typedef struct
{
  gdouble sequence;
  gdouble slot;
  gdouble first_single;
  gdouble first_dual;
  gboolean interpolate;
} ModelTiming;

static const ModelTiming timings[P3D_VELODYNE_N_MODELS] = {
  [P3D_VELODYNE_MODEL_VLP16] = {55.296, 2.304, 0.0, 0.0, TRUE},
  [P3D_VELODYNE_MODEL_PUCK_HIRES] = {55.296, 2.304, 0.0, 0.0, TRUE},
  /* two lasers fire at once */
  [P3D_VELODYNE_MODEL_VLP32C] = {55.296, 2.304, 0.0, 0.0, TRUE},
  /* the timestamp is written at the end of the packet: the last sequence
   * starts 10.368 us before it */
  [P3D_VELODYNE_MODEL_HDL32E] = {46.08, 1.152, -542.592, -266.112, FALSE},
  /* an upper and a lower laser fire at once */
  [P3D_VELODYNE_MODEL_HDL64E] = {23.296, 0.728, -419.3, -419.3, FALSE},
  /* eight lasers fire at once; a maintenance slot follows the eighth
   * group; the top of the hour falls 8.7 us into the sequence */
  [P3D_VELODYNE_MODEL_VLS128] = {53.3, 2.665, -8.7, -8.7, TRUE},
};

struct _P3dVelodyneDecoder
{
  const P3dVelodyneModelInfo *info;
  const ModelTiming *timing;
  P3dLidarReturns returns;
  gfloat cut;

  /* per laser */
  gfloat cos_elevation[P3D_VELODYNE_MAX_LASERS];
  gfloat sin_elevation[P3D_VELODYNE_MAX_LASERS];
  gfloat cos_rot[P3D_VELODYNE_MAX_LASERS];
  gfloat sin_rot[P3D_VELODYNE_MAX_LASERS];
  /* microseconds after its sequence's first firing, and that as a
   * fraction of the sequence */
  gdouble fire[P3D_VELODYNE_MAX_LASERS];
  gfloat fraction[P3D_VELODYNE_MAX_LASERS];
  gfloat ring[P3D_VELODYNE_MAX_LASERS];
  P3dVelodyneLaser lasers[P3D_VELODYNE_MAX_LASERS];
  /* no laser has offsets or distance corrections: the short path */
  gboolean plain;

  /* the stream: the last packet taken */
  gboolean have_last;
  guint32 last_timestamp;
  gint64 last_time;
  gfloat last_block_azimuth;
  gboolean have_rel;
  gfloat last_rel;
};

const P3dVelodyneModelInfo *
p3d_velodyne_model_get_info (P3dVelodyneModel model)
{
  guint i;

  for (i = 0; i < G_N_ELEMENTS (model_infos); i++)
    if (model_infos[i].model == model)
      return &model_infos[i];
  return NULL;
}

static inline guint16
read_u16 (const guint8 * p)
{
  return (guint16) (p[0] | (p[1] << 8));
}

static inline guint32
read_u32 (const guint8 * p)
{
  return (guint32) p[0] | ((guint32) p[1] << 8) | ((guint32) p[2] << 16) |
      ((guint32) p[3] << 24);
}

static inline guint16
block_flag (const guint8 * data, guint block)
{
  return read_u16 (data + block * BLOCK_SIZE);
}

static inline guint16
block_azimuth (const guint8 * data, guint block)
{
  return read_u16 (data + block * BLOCK_SIZE + 2);
}

P3dVelodyneModel
p3d_velodyne_model_detect (const guint8 * packet, guint8 * product)
{
  gboolean lower = FALSE, banks34 = FALSE;
  guint i;

  *product = packet[PRODUCT_OFFSET];
  for (i = 0; i < BLOCKS; i++) {
    guint16 flag = block_flag (packet, i);

    lower |= flag == FLAG_BANK2;
    banks34 |= flag == FLAG_BANK3 || flag == FLAG_BANK4;
  }
  if (banks34)
    return P3D_VELODYNE_MODEL_VLS128;
  if (lower)
    return P3D_VELODYNE_MODEL_HDL64E;
  for (i = 0; i < G_N_ELEMENTS (model_infos); i++)
    if (model_infos[i].product_id != 0 && model_infos[i].product_id == *product)
      return model_infos[i].model;
  return P3D_VELODYNE_MODEL_AUTO;
}

/* The laser's firing slot within its sequence. */
static guint
firing_slot (P3dVelodyneModel model, guint laser)
{
  switch (model) {
    case P3D_VELODYNE_MODEL_VLP32C:
      return laser / 2;
    case P3D_VELODYNE_MODEL_HDL64E:
      return laser % 32;
    case P3D_VELODYNE_MODEL_VLS128:{
      guint group = laser / 8;

      return group + (group >= 8 ? 1 : 0);
    }
    default:
      return laser;
  }
}

P3dVelodyneDecoder *
p3d_velodyne_decoder_new (P3dVelodyneModel model,
    const P3dVelodyneCalibration * calibration, P3dLidarReturns returns,
    gdouble cut_angle, GError ** error)
{
  const P3dVelodyneModelInfo *info = p3d_velodyne_model_get_info (model);
  P3dVelodyneCalibration builtin;
  P3dVelodyneDecoder *decoder;
  gdouble cut;
  guint l;

  g_return_val_if_fail (info != NULL, NULL);
  if (calibration == NULL) {
    if (!p3d_velodyne_calibration_builtin (model, &builtin)) {
      g_set_error (error, P3D_VELODYNE_CALIBRATION_ERROR,
          P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA, "the %s has no fixed laser "
          "angles: each unit comes with its own calibration file", info->name);
      return NULL;
    }
    calibration = &builtin;
  }
  if (calibration->n_lasers != info->n_lasers) {
    g_set_error (error, P3D_VELODYNE_CALIBRATION_ERROR,
        P3D_VELODYNE_CALIBRATION_ERROR_SCHEMA, "the calibration has %u "
        "lasers, the %s has %u", calibration->n_lasers, info->name,
        info->n_lasers);
    return NULL;
  }

  decoder = g_new0 (P3dVelodyneDecoder, 1);
  decoder->info = info;
  decoder->timing = &timings[model];
  decoder->returns = returns;
  cut = fmod (cut_angle, 360.0);
  if (cut < 0)
    cut += 360.0;
  decoder->cut = (gfloat) (cut * 100.0);
  decoder->plain = TRUE;
  for (l = 0; l < info->n_lasers; l++) {
    const P3dVelodyneLaser *laser = &calibration->lasers[l];

    decoder->lasers[l] = *laser;
    decoder->cos_elevation[l] = (gfloat) cos (laser->vert_correction);
    decoder->sin_elevation[l] = (gfloat) sin (laser->vert_correction);
    decoder->cos_rot[l] = (gfloat) cos (laser->rot_correction);
    decoder->sin_rot[l] = (gfloat) sin (laser->rot_correction);
    decoder->fire[l] = firing_slot (model, l) * decoder->timing->slot;
    decoder->fraction[l] = decoder->timing->interpolate ?
        (gfloat) (decoder->fire[l] / decoder->timing->sequence) : 0.0f;
    decoder->ring[l] = (gfloat) laser->ring;
    if (laser->dist_correction != 0.0 || laser->two_point
        || laser->vert_offset != 0.0 || laser->horiz_offset != 0.0)
      decoder->plain = FALSE;
  }
  return decoder;
}

void
p3d_velodyne_decoder_free (P3dVelodyneDecoder * decoder)
{
  g_free (decoder);
}

void
p3d_velodyne_decoder_reset (P3dVelodyneDecoder * decoder)
{
  decoder->have_last = FALSE;
  decoder->have_rel = FALSE;
}

P3dVelodyneModel
p3d_velodyne_decoder_get_model (const P3dVelodyneDecoder * decoder)
{
  return decoder->info->model;
}

/* Firing sequences in a packet. */
static guint
columns_per_packet (P3dVelodyneModel model, gboolean dual)
{
  switch (model) {
    case P3D_VELODYNE_MODEL_VLP16:
    case P3D_VELODYNE_MODEL_PUCK_HIRES:
      return dual ? 12 : 24;
    case P3D_VELODYNE_MODEL_HDL64E:
      return 6;
    case P3D_VELODYNE_MODEL_VLS128:
      return dual ? 1 : 3;
    default:
      return dual ? 6 : 12;
  }
}

gdouble
p3d_velodyne_decoder_packet_period (const P3dVelodyneDecoder * decoder,
    gboolean dual)
{
  return columns_per_packet (decoder->info->model, dual) *
      decoder->timing->sequence;
}

gsize
p3d_velodyne_decoder_max_points (const P3dVelodyneDecoder * decoder,
    const P3dVelodynePacket * packet, guint n_columns)
{
  return (gsize) n_columns *decoder->info->n_lasers * (packet->dual ? 2 : 1);
}

/* @to - @from in [0, 36000). */
static inline gfloat
azimuth_step (gfloat from, gfloat to)
{
  gfloat step = fmodf (to - from, 36000.0f);

  return step < 0.0f ? step + 36000.0f : step;
}

/* The gaps between the azimuths @azimuth[0..n) of successive sequence
 * groups; the last group, which has no successor in the packet, takes the
 * gap before it (the manuals assume a constant speed over a packet). A gap
 * beyond MAX_BLOCK_GAP is not rotation: the previous one, or 0. */
static void
group_gaps (const gfloat * azimuth, guint n, gfloat * gap)
{
  gfloat previous = 0.0f;
  guint i;

  for (i = 0; i + 1 < n; i++) {
    gfloat step = azimuth_step (azimuth[i], azimuth[i + 1]);

    gap[i] = step <= MAX_BLOCK_GAP ? step : previous;
    previous = gap[i];
  }
  if (n > 0)
    gap[n - 1] = previous;
}

static gboolean
check_flags (const guint8 * data, guint n_blocks, const guint16 * expected,
    gchar ** why)
{
  guint b;

  for (b = 0; b < n_blocks; b++) {
    guint16 flag = block_flag (data, b);

    if (flag != expected[b]) {
      if (why)
        *why = g_strdup_printf ("block %u has the flag 0x%04x, a packet of "
            "this model has 0x%04x there", b, GUINT16_SWAP_LE_BE (flag),
            GUINT16_SWAP_LE_BE (expected[b]));
      return FALSE;
    }
  }
  return TRUE;
}

/* VLP-16 and Puck Hi-Res: two sequences of 16 lasers in a block. */
static void
layout_vlp16 (const guint8 * data, P3dVelodynePacket * packet,
    const ModelTiming * timing)
{
  guint step = packet->dual ? 2 : 1, n_groups = BLOCKS / step, g, s;
  gfloat azimuth[BLOCKS], gap[BLOCKS];

  for (g = 0; g < n_groups; g++)
    azimuth[g] = block_azimuth (data, g * step);
  group_gaps (azimuth, n_groups, gap);
  for (g = 0; g < n_groups; g++) {
    for (s = 0; s < 2; s++) {
      guint c = 2 * g + s;
      gfloat a = azimuth[g] + s * gap[g] / 2.0f;

      packet->azimuth[c] = a >= 36000.0f ? a - 36000.0f : a;
      packet->gap[c] = gap[g] / 2.0f;
      packet->start[c] = c * timing->sequence;
      packet->block[c][0][0] = (guint8) (g * step);
      packet->block[c][0][1] = (guint8) (g * step + step - 1);
      packet->channel0[c] = (guint8) (s * 16);
    }
  }
}

/* Models of one sequence per block (VLP-32C, HDL-32E) or per pair of
 * blocks (HDL-64E: upper, lower). */
static void
layout_blocks (const guint8 * data, P3dVelodynePacket * packet,
    guint blocks_per_column, const ModelTiming * timing)
{
  guint step = blocks_per_column * (packet->dual ? 2 : 1), c, k;
  gfloat azimuth[BLOCKS];

  for (c = 0; c < packet->n_columns; c++)
    azimuth[c] = block_azimuth (data, c * step);
  group_gaps (azimuth, packet->n_columns, packet->gap);
  for (c = 0; c < packet->n_columns; c++) {
    packet->azimuth[c] = azimuth[c];
    packet->start[c] = (packet->dual ? timing->first_dual :
        timing->first_single) + c * timing->sequence;
    for (k = 0; k < blocks_per_column; k++) {
      packet->block[c][k][0] = (guint8) (c * step + k * (packet->dual ? 2 : 1));
      packet->block[c][k][1] = (guint8) (packet->block[c][k][0] +
          (packet->dual ? 1 : 0));
    }
  }
}

static gboolean
layout_vls128 (const P3dVelodyneDecoder * decoder, const guint8 * data,
    P3dVelodynePacket * packet, gchar ** why)
{
  static const guint16 banks[4] = { FLAG_BANK1, FLAG_BANK2, FLAG_BANK3,
    FLAG_BANK4
  };
  const ModelTiming *timing = decoder->timing;
  guint c, k, b;

  if (!packet->dual) {
    guint16 expected[BLOCKS];
    gfloat azimuth[3];

    for (b = 0; b < BLOCKS; b++)
      expected[b] = banks[b % 4];
    if (!check_flags (data, BLOCKS, expected, why))
      return FALSE;
    for (c = 0; c < 3; c++)
      azimuth[c] = block_azimuth (data, 4 * c);
    group_gaps (azimuth, 3, packet->gap);
    for (c = 0; c < 3; c++) {
      packet->azimuth[c] = azimuth[c];
      packet->start[c] = timing->first_single + c * timing->sequence;
      for (k = 0; k < 4; k++) {
        packet->block[c][k][0] = (guint8) (4 * c + k);
        packet->block[c][k][1] = (guint8) (4 * c + k);
      }
    }
    return TRUE;
  }

  /* Dual: one sequence in blocks 0 to 7, each bank's two returns in the
   * two blocks that carry its flag, whatever their order. */
  for (k = 0; k < 4; k++) {
    guint found = 0;

    for (b = 0; b < 8; b++) {
      if (block_flag (data, b) != banks[k])
        continue;
      if (found < 2)
        packet->block[0][k][found] = (guint8) b;
      found++;
    }
    if (found != 2) {
      if (why)
        *why = g_strdup_printf ("a dual-return packet has %u blocks of bank "
            "0x%04x in its first eight, two expected", found,
            GUINT16_SWAP_LE_BE (banks[k]));
      return FALSE;
    }
  }
  packet->azimuth[0] = block_azimuth (data, packet->block[0][0][0]);
  packet->start[0] = timing->first_dual;
  /* One sequence a packet: the speed comes from the packet before, when it
   * is the one just before (the manual's rule needs a next block). */
  packet->gap[0] = 0.0f;
  if (decoder->have_last) {
    gint64 dt = (gint64) packet->timestamp - decoder->last_timestamp;
    gdouble sequences;

    if (dt < -HOUR_US / 2)
      dt += HOUR_US;
    sequences = dt / timing->sequence;
    if (sequences >= 0.5 && sequences < 4.5) {
      gfloat step = azimuth_step (decoder->last_block_azimuth,
          packet->azimuth[0]) / (gfloat) floor (sequences + 0.5);

      if (step <= MAX_BLOCK_GAP)
        packet->gap[0] = step;
    }
  }
  return TRUE;
}

gboolean
p3d_velodyne_packet_parse (const P3dVelodyneDecoder * decoder,
    const guint8 * data, P3dVelodynePacket * packet, gchar ** why)
{
  P3dVelodyneModel model = decoder->info->model;
  const ModelTiming *timing = decoder->timing;
  guint16 expected[BLOCKS];
  guint b, c;

  memset (packet, 0, sizeof (*packet));
  packet->timestamp = read_u32 (data + TIMESTAMP_OFFSET);
  packet->product = data[PRODUCT_OFFSET];
  if (decoder->info->has_dual) {
    packet->return_mode = data[RETURN_MODE_OFFSET];
    packet->dual = packet->return_mode == RETURN_MODE_DUAL;
  }
  packet->n_columns = columns_per_packet (model, packet->dual);

  for (b = 0; b < BLOCKS; b++)
    expected[b] = FLAG_BANK1;
  for (b = 0; b < BLOCKS; b++) {
    guint16 azimuth = block_azimuth (data, b);

    if (azimuth >= 36000 && (model != P3D_VELODYNE_MODEL_VLS128
            || !packet->dual || b < 8)) {
      if (why)
        *why = g_strdup_printf ("block %u has the azimuth %u, beyond 35999 "
            "hundredths of a degree", b, azimuth);
      return FALSE;
    }
  }

  switch (model) {
    case P3D_VELODYNE_MODEL_VLP16:
    case P3D_VELODYNE_MODEL_PUCK_HIRES:
      if (!check_flags (data, BLOCKS, expected, why))
        return FALSE;
      layout_vlp16 (data, packet, timing);
      break;
    case P3D_VELODYNE_MODEL_HDL64E:
      for (b = 1; b < BLOCKS; b += 2)
        expected[b] = FLAG_BANK2;
      if (!check_flags (data, BLOCKS, expected, why))
        return FALSE;
      layout_blocks (data, packet, 2, timing);
      break;
    case P3D_VELODYNE_MODEL_VLS128:
      if (!layout_vls128 (decoder, data, packet, why))
        return FALSE;
      break;
    default:
      if (!check_flags (data, BLOCKS, expected, why))
        return FALSE;
      layout_blocks (data, packet, 1, timing);
      break;
  }
  c = packet->n_columns - 1;
  packet->end = packet->start[c] + decoder->fire[decoder->info->n_lasers - 1];
  return TRUE;
}

/* The azimuth of the packet's last block, the one the next packet's first
 * block follows. */
static gfloat
last_block_azimuth (const P3dVelodyneDecoder * decoder,
    const P3dVelodynePacket * packet)
{
  guint c = packet->n_columns - 1;

  if (decoder->info->model == P3D_VELODYNE_MODEL_VLP16
      || decoder->info->model == P3D_VELODYNE_MODEL_PUCK_HIRES)
    return packet->azimuth[c - 1];
  return packet->azimuth[c];
}

void
p3d_velodyne_decoder_place (const P3dVelodyneDecoder * decoder,
    const P3dVelodynePacket * packet, P3dVelodynePlace * place)
{
  gdouble period;
  gint64 dt;
  gfloat step;

  memset (place, 0, sizeof (*place));
  if (!decoder->have_last) {
    place->kind = P3D_VELODYNE_PLACE_NEXT;
    place->time = packet->timestamp;
    place->break_sweep = TRUE;
    return;
  }
  /* A packet is within half an hour of the last one, before or after:
   * the hour's rollover either way. */
  dt = (gint64) packet->timestamp - decoder->last_timestamp;
  if (dt > HOUR_US / 2)
    dt -= HOUR_US;
  else if (dt < -HOUR_US / 2)
    dt += HOUR_US;
  place->time = decoder->last_time + dt;
  if (dt < 0) {
    place->kind = P3D_VELODYNE_PLACE_LATE;
    return;
  }
  if (dt == 0) {
    place->kind = P3D_VELODYNE_PLACE_REPEAT;
    return;
  }
  place->kind = P3D_VELODYNE_PLACE_NEXT;
  period = p3d_velodyne_decoder_packet_period (decoder, packet->dual);
  if (dt > 1.5 * period)
    place->lost = (guint64) floor (dt / period + 0.5) - 1;
  step = azimuth_step (decoder->last_block_azimuth, packet->azimuth[0]);
  if (dt > BREAK_TIME_US)
    place->break_sweep = TRUE;
  else if (step > 18000.0f)
    /* backwards: jitter when small, else the rotor jumped */
    place->break_sweep = 36000.0f - step > TURN_SLACK;
  else
    place->break_sweep = step > MAX_TURN_RATE * dt + TURN_SLACK;
}

guint
p3d_velodyne_decoder_take (P3dVelodyneDecoder * decoder,
    const P3dVelodynePacket * packet, const P3dVelodynePlace * place)
{
  guint c, cut = packet->n_columns;

  if (place->break_sweep)
    decoder->have_rel = FALSE;
  for (c = 0; c < packet->n_columns; c++) {
    gfloat rel = azimuth_step (decoder->cut, packet->azimuth[c]);

    if (decoder->have_rel && decoder->last_rel - rel > CUT_HYSTERESIS
        && cut == packet->n_columns)
      cut = c;
    /* jitter backwards does not move the reference back */
    if (!decoder->have_rel || rel > decoder->last_rel
        || decoder->last_rel - rel > CUT_HYSTERESIS)
      decoder->last_rel = rel;
    decoder->have_rel = TRUE;
  }
  decoder->have_last = TRUE;
  decoder->last_timestamp = packet->timestamp;
  decoder->last_time = place->time;
  decoder->last_block_azimuth = last_block_azimuth (decoder, packet);
  return cut;
}

/* sin and cos of a small angle (under 0.1 rad): Taylor terms to 1e-12. */
static inline void
small_sincos (gfloat x, gfloat * s, gfloat * c)
{
  gfloat x2 = x * x;

  *s = x * (1.0f - x2 * (1.0f / 6.0f) * (1.0f - x2 * (1.0f / 20.0f)));
  *c = 1.0f - x2 * 0.5f * (1.0f - x2 * (1.0f / 12.0f));
}

/* One point of laser @l at distance @d (metres before corrections), the
 * laser's azimuth as cos/sin (@ct, @st: the block azimuth minus its
 * rot_correction, plus the interpolation). */
static inline void
write_point (const P3dVelodyneDecoder * decoder, guint l, gfloat d,
    gfloat ct, gfloat st, gfloat * p)
{
  gfloat ce = decoder->cos_elevation[l], se = decoder->sin_elevation[l];

  if (decoder->plain) {
    gfloat xy = d * ce;

    /* the manuals' frame (x right, y ahead) turned to x ahead, y left */
    p[0] = xy * ct;
    p[1] = -(xy * st);
    p[2] = d * se;
  } else {
    const P3dVelodyneLaser *laser = &decoder->lasers[l];
    gfloat v = (gfloat) laser->vert_offset, h = (gfloat) laser->horiz_offset;
    gfloat dx, dy, xy;

    d += (gfloat) laser->dist_correction;
    dx = dy = d;
    if (laser->two_point) {
      /* HDL-64E: the correction varies linearly with the distance along
       * each axis, between its values at 2.4 m (x) or 1.93 m (y) and the
       * general one at 25.04 m */
      gfloat dc = (gfloat) laser->dist_correction;
      gfloat dcx = (gfloat) laser->dist_correction_x;
      gfloat dcy = (gfloat) laser->dist_correction_y;
      gfloat xx, yy;

      xy = d * ce - v * se;
      xx = fabsf (xy * st - h * ct);
      yy = fabsf (xy * ct + h * st);
      dx = d + (dc - dcx) * (xx - 2.4f) / (25.04f - 2.4f) + dcx - dc;
      dy = d + (dc - dcy) * (yy - 1.93f) / (25.04f - 1.93f) + dcy - dc;
    }
    xy = dx * ce - v * se;
    p[1] = -(xy * st - h * ct);
    xy = dy * ce - v * se;
    p[0] = xy * ct + h * st;
    p[2] = dy * se + v * ce;
  }
}

gsize
p3d_velodyne_decode (const P3dVelodyneDecoder * decoder, const guint8 * data,
    const P3dVelodynePacket * packet, guint first, guint last,
    gdouble time_offset, const P3dLidarPointLayout * layout, gfloat * out,
    P3dVelodyneCounts * counts)
{
  P3dVelodyneModel model = decoder->info->model;
  gboolean vlp16 = model == P3D_VELODYNE_MODEL_VLP16
      || model == P3D_VELODYNE_MODEL_PUCK_HIRES;
  gboolean hdl64 = model == P3D_VELODYNE_MODEL_HDL64E;
  guint banks = vlp16 ? 1 : decoder->info->n_lasers / 32;
  guint channels = vlp16 ? 16 : 32;
  gfloat unit = (gfloat) decoder->info->distance_unit;
  const guint stride = layout->stride;
  gfloat *p = out;
  guint c, k, i;

  last = MIN (last, packet->n_columns);
  for (c = first; c < last; c++) {
    gdouble column_time = time_offset + packet->start[c] * 1e-6;
    gfloat gap = packet->gap[c] * (gfloat) (G_PI / 18000.0);
    guint channel0 = packet->channel0[c];

    for (k = 0; k < banks; k++) {
      const guint8 *first_block = data + packet->block[c][k][0] * BLOCK_SIZE;
      const guint8 *second_block = data + packet->block[c][k][1] * BLOCK_SIZE;
      gdouble azimuth = hdl64 ? read_u16 (first_block + 2) : packet->azimuth[c];
      gdouble a = azimuth * (G_PI / 18000.0);
      gfloat ca = (gfloat) cos (a), sa = (gfloat) sin (a);
      guint laser0 = k * 32;

      for (i = 0; i < channels; i++) {
        guint l = laser0 + i;
        const guint8 *r1 = first_block + 4 + (channel0 + i) * RETURN_SIZE;
        guint32 d1 = read_u16 (r1), i1 = r1[2], d2 = 0, i2 = 0;
        gfloat ct, st, time, ring, intensity;
        guint keep, n;
        gboolean repeat;

        if (packet->dual) {
          const guint8 *r2 = second_block + 4 + (channel0 + i) * RETURN_SIZE;

          d2 = read_u16 (r2);
          i2 = r2[2];
          keep = p3d_lidar_pick_returns (decoder->returns, d1, i1, d2, i2,
              &repeat);
          counts->duplicate_returns += repeat;
          counts->no_return += (d1 == 0) + (d2 == 0);
        } else {
          keep = d1 != 0;
          counts->no_return += d1 == 0;
        }
        if (keep == 0)
          continue;

        /* the block azimuth minus the laser's rot_correction */
        ct = ca * decoder->cos_rot[l] + sa * decoder->sin_rot[l];
        st = sa * decoder->cos_rot[l] - ca * decoder->sin_rot[l];
        if (decoder->fraction[l] != 0.0f && gap != 0.0f) {
          gfloat sb, cb, c2;

          small_sincos (gap * decoder->fraction[l], &sb, &cb);
          c2 = ct * cb - st * sb;
          st = st * cb + ct * sb;
          ct = c2;
        }
        time = (gfloat) (column_time + decoder->fire[l] * 1e-6);
        ring = decoder->ring[l];
        for (n = 0; n < 2; n++) {
          if (!(keep & (1u << n)))
            continue;
          intensity = (gfloat) (n == 0 ? i1 : i2);
          write_point (decoder, l, (gfloat) (n == 0 ? d1 : d2) * unit, ct, st,
              p);
          p3d_lidar_point_set_channels (layout, p, intensity, time, ring);
          p += stride;
        }
      }
    }
  }
  return (gsize) (p - out) / stride;
}
