/* The tests' lidar packet generator (see lidargen.h). */
#include <math.h>
#include <string.h>

#include "p3dtest-lidargen.h"

/* ---------------------------------------------------------------------- */
/* Randomness: SplitMix64, and a hash of a firing for its fixed features */

static guint64
splitmix64 (guint64 * state)
{
  guint64 z = (*state += G_GUINT64_CONSTANT (0x9e3779b97f4a7c15));

  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT (0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT (0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static gdouble
uniform (guint64 * state, gdouble lo, gdouble hi)
{
  return lo + (hi -
      lo) * (splitmix64 (state) >> 11) * (1.0 / 9007199254740992.0);
}

static guint64
hash3 (guint64 a, guint64 b, guint64 c)
{
  guint64 state = a * 1000003u + b * 7919u + c;

  return splitmix64 (&state);
}

/* ---------------------------------------------------------------------- */
/* The scene, in the frame x forward, y left, z up, metres */

#define GROUND_Z -1.9
#define WALL_RADIUS 25.0
#define WALL_TOP 8.0
#define FENCE_RADIUS 9.0
#define FENCE_TOP 1.5
#define FENCE_YAW_FROM 1.0
#define FENCE_YAW_TO 2.6

typedef enum
{
  SURFACE_GROUND,
  SURFACE_WALL,
  SURFACE_FENCE,
} Surface;

typedef struct
{
  gdouble distance;
  gdouble point[3];
  Surface surface;
} Hit;

/* The distance along @u from @o to the vertical cylinder of @radius about
 * the z axis, from inside; -1 when none. */
static gdouble
cylinder_hit (const gdouble * o, const gdouble * u, gdouble radius)
{
  gdouble a = u[0] * u[0] + u[1] * u[1];
  gdouble b = 2 * (o[0] * u[0] + o[1] * u[1]);
  gdouble c = o[0] * o[0] + o[1] * o[1] - radius * radius;
  gdouble disc = b * b - 4 * a * c;

  if (a < 1e-12 || disc < 0)
    return -1;
  return (-b + sqrt (disc)) / (2 * a);
}

static void
hit_at (const gdouble * o, const gdouble * u, gdouble t, Surface surface,
    Hit * hit)
{
  guint i;

  hit->distance = t;
  hit->surface = surface;
  for (i = 0; i < 3; i++)
    hit->point[i] = o[i] + t * u[i];
}

/* The echoes of the ray from @o along the unit @u, nearest first: the
 * fence (see-through) and the ground or the wall behind it. */
static guint
scene_cast (const gdouble * o, const gdouble * u, Hit * hits)
{
  gdouble ground = -1, wall, fence;
  guint n = 0;
  Hit solid;
  gboolean have_solid = FALSE;

  if (u[2] < -1e-9)
    ground = (GROUND_Z - o[2]) / u[2];
  wall = cylinder_hit (o, u, WALL_RADIUS);
  if (wall > 0) {
    gdouble z = o[2] + wall * u[2];

    if (z <= GROUND_Z || z > WALL_TOP)
      wall = -1;
  }
  if (ground > 0 && (wall < 0 || ground < wall)) {
    hit_at (o, u, ground, SURFACE_GROUND, &solid);
    have_solid = TRUE;
  } else if (wall > 0) {
    hit_at (o, u, wall, SURFACE_WALL, &solid);
    have_solid = TRUE;
  }
  fence = cylinder_hit (o, u, FENCE_RADIUS);
  if (fence > 0 && (!have_solid || fence < solid.distance)) {
    Hit f;
    gdouble yaw;

    hit_at (o, u, fence, SURFACE_FENCE, &f);
    yaw = atan2 (f.point[1], f.point[0]);
    if (yaw >= FENCE_YAW_FROM && yaw <= FENCE_YAW_TO && f.point[2] > GROUND_Z
        && f.point[2] < FENCE_TOP)
      hits[n++] = f;
  }
  if (have_solid)
    hits[n++] = solid;
  return n;
}

/* Intensities by surface, in ranges that do not overlap, so that the
 * stronger of two echoes is never a tie. */
static guint
surface_intensity (Surface surface, guint64 h)
{
  switch (surface) {
    case SURFACE_GROUND:
      return 10 + h % 40;
    case SURFACE_FENCE:
      return 60 + h % 30;
    default:
      return 100 + h % 100;
  }
}

/* ---------------------------------------------------------------------- */
/* Velodyne: the manuals' timing and packet layout */

typedef struct
{
  /* microseconds: a sequence, a firing slot; a sequence's first firing
   * from the timestamp in single and dual mode */
  gdouble sequence;
  gdouble slot;
  gdouble first_single;
  gdouble first_dual;
  /* the lasers' azimuths follow their firing (precision azimuth) */
  gboolean precise;
  gdouble unit;
  guint lasers;
  guint8 product;
} ModelFacts;

static void
model_facts (P3dVelodyneModel model, ModelFacts * f)
{
  memset (f, 0, sizeof (*f));
  f->unit = 0.002;
  switch (model) {
    case P3D_VELODYNE_MODEL_VLP16:
    case P3D_VELODYNE_MODEL_PUCK_HIRES:
      /* 16 firings 2.304 us apart and a recharge: 55.296 us */
      f->sequence = 55.296;
      f->slot = 2.304;
      f->precise = TRUE;
      f->lasers = 16;
      f->product = model == P3D_VELODYNE_MODEL_VLP16 ? 0x22 : 0x24;
      break;
    case P3D_VELODYNE_MODEL_VLP32C:
      f->sequence = 55.296;
      f->slot = 2.304;
      f->precise = TRUE;
      f->unit = 0.004;
      f->lasers = 32;
      f->product = 0x28;
      break;
    case P3D_VELODYNE_MODEL_HDL32E:
      /* the ethernet timing table: -542.592 + block x 46.08 + laser x
       * 1.152 from the timestamp, written at the end of the packet */
      f->sequence = 46.08;
      f->slot = 1.152;
      f->first_single = -542.592;
      f->first_dual = -(6 * 46.08 - 10.368);
      f->lasers = 32;
      f->product = 0x21;
      break;
    case P3D_VELODYNE_MODEL_HDL64E:
      /* the S2 timing table: lasers n and n + 32 at the same time, 419.30
       * us before the timestamp for the first, then every 0.728 us */
      f->sequence = 23.296;
      f->slot = 0.728;
      f->first_single = f->first_dual = -419.3;
      f->lasers = 64;
      break;
    case P3D_VELODYNE_MODEL_VLS128:
      f->sequence = 53.3;
      f->slot = 2.665;
      f->first_single = f->first_dual = -8.7;
      f->precise = TRUE;
      f->unit = 0.004;
      f->lasers = 128;
      f->product = 0xa1;
      break;
    default:
      g_assert_not_reached ();
  }
}

/* Microseconds from a sequence's first firing to laser @l's. */
static gdouble
laser_fire (P3dVelodyneModel model, const ModelFacts * f, guint l)
{
  switch (model) {
    case P3D_VELODYNE_MODEL_VLP32C:
      /* lasers fire in pairs */
      return (l / 2) * f->slot;
    case P3D_VELODYNE_MODEL_HDL64E:
      return (l % 32) * f->slot;
    case P3D_VELODYNE_MODEL_VLS128:{
      /* groups of eight; a maintenance slot after the eighth group */
      guint group = l / 8;

      return (group < 8 ? group : group + 1) * f->slot;
    }
    default:
      return l * f->slot;
  }
}

/* Sequences in a packet, and azimuth groups (blocks or block pairs with
 * one azimuth, VLP-16: two sequences each). */
static guint
packet_sequences (P3dVelodyneModel model, gboolean dual)
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

static gboolean
is_vlp16 (P3dVelodyneModel model)
{
  return model == P3D_VELODYNE_MODEL_VLP16
      || model == P3D_VELODYNE_MODEL_PUCK_HIRES;
}

void
velodyne_gen_params_init (VelodyneGenParams * params, P3dVelodyneModel model)
{
  memset (params, 0, sizeof (*params));
  params->model = model;
  if (!p3d_velodyne_calibration_builtin (model, &params->calibration))
    velodyne_gen_random_calibration (64, 64, &params->calibration);
  params->return_mode = 0x37;
  params->first_time = 1234567.0;
  params->first_azimuth = 31234;
  /* about 600 rpm: 0.2 degrees per sequence of ~55 us */
  params->gap = is_vlp16 (model) ? 40 : model == P3D_VELODYNE_MODEL_HDL64E ?
      8 : 20;
  params->gap_jitter = 2;
  params->n_packets = 200;
  params->no_return_every = 17;
  params->seed = 1;
}

/* The ray of a laser at azimuth @theta (radians, clockwise seen from
 * above, 0 ahead: the block's azimuth minus its rot_correction) with
 * elevation @omega and the calibration's offsets: origin @o and unit
 * direction @u in the frame x forward, y left, z up. */
static void
velodyne_ray (gdouble theta, const P3dVelodyneLaser * laser, gdouble * o,
    gdouble * u)
{
  gdouble omega = laser->vert_correction;
  /* the laser facing ahead, in the manuals' frame (x right, y ahead):
   * its beam, and its origin offset up its beam plane and sideways */
  gdouble dir0[3] = { 0, cos (omega), sin (omega) };
  gdouble org0[3] = { -laser->horiz_offset, -laser->vert_offset * sin (omega),
    laser->vert_offset * cos (omega)
  };
  /* turned clockwise by theta about z */
  gdouble rot[3][3] = {
    {cos (theta), sin (theta), 0},
    {-sin (theta), cos (theta), 0},
    {0, 0, 1},
  };
  gdouble dir[3], org[3];
  guint i;

  for (i = 0; i < 3; i++) {
    dir[i] = rot[i][0] * dir0[0] + rot[i][1] * dir0[1] + rot[i][2] * dir0[2];
    org[i] = rot[i][0] * org0[0] + rot[i][1] * org0[1] + rot[i][2] * org0[2];
  }
  /* to x ahead, y left */
  u[0] = dir[1];
  u[1] = -dir[0];
  u[2] = dir[2];
  o[0] = org[1];
  o[1] = -org[0];
  o[2] = org[2];
}

static void
put_u16 (guint8 * p, guint v)
{
  p[0] = v & 0xff;
  p[1] = (v >> 8) & 0xff;
}

static void
put_u32 (guint8 * p, guint32 v)
{
  put_u16 (p, v & 0xffff);
  put_u16 (p + 2, v >> 16);
}

static void
put_u64 (guint8 * p, guint64 v)
{
  put_u32 (p, (guint32) v);
  put_u32 (p + 4, (guint32) (v >> 32));
}

/* Writes return @r (a distance and an intensity, or none) at channel @ch
 * of block @b. */
static void
put_return (guint8 * packet, guint b, guint ch, const LidarTruth * r)
{
  guint8 *p = packet + b * 100 + 4 + ch * 3;

  put_u16 (p, r ? r->raw : 0);
  p[2] = r ? (guint8) r->intensity : 0;
}

static void
put_block_header (guint8 * packet, guint b, guint8 bank, guint azimuth)
{
  packet[b * 100] = 0xff;
  packet[b * 100 + 1] = bank;
  put_u16 (packet + b * 100 + 2, azimuth % 36000);
}

/* The echoes a single-return packet of @mode carries of @f: the strongest
 * (0x37) or the last. */
static const LidarTruth *
single_echo (const LidarFiring * f, guint8 mode)
{
  if (f->n == 0)
    return NULL;
  if (f->n == 1)
    return &f->echo[0];
  if (mode == 0x38)
    return f->echo[1].raw > f->echo[0].raw ? &f->echo[1] : &f->echo[0];
  return f->echo[1].intensity > f->echo[0].intensity ? &f->echo[1] :
      &f->echo[0];
}

/* A dual packet's pair for @f: the last return, then the strongest, or the
 * second strongest when the strongest is the last; one echo twice. */
static void
dual_echoes (const LidarFiring * f, const LidarTruth ** a,
    const LidarTruth ** b)
{
  *a = *b = NULL;
  if (f->n == 0)
    return;
  if (f->n == 1) {
    *a = *b = &f->echo[0];
    return;
  }
  *a = f->echo[1].raw > f->echo[0].raw ? &f->echo[1] : &f->echo[0];
  *b = *a == &f->echo[0] ? &f->echo[1] : &f->echo[0];
}

/* The firing of @laser at azimuth @azimuth (hundredths, with the
 * interpolation) and time @time. */
static void
velodyne_fire (const VelodyneGenParams * params, const ModelFacts * facts,
    guint laser, gdouble azimuth, gdouble time, guint64 column,
    LidarFiring * firing)
{
  const P3dVelodyneLaser *cal = &params->calibration.lasers[laser];
  gdouble theta = azimuth * G_PI / 18000.0 - cal->rot_correction;
  gdouble o[3], u[3];
  Hit hits[2];
  guint n, i;

  memset (firing, 0, sizeof (*firing));
  if (params->no_return_every != 0
      && hash3 (params->seed, column, laser) % params->no_return_every == 0)
    return;
  velodyne_ray (theta, cal, o, u);
  n = scene_cast (o, u, hits);
  for (i = 0; i < n; i++) {
    LidarTruth *t = &firing->echo[firing->n];
    gdouble raw = floor ((hits[i].distance - cal->dist_correction) /
        facts->unit + 0.5);

    if (raw < 1 || raw > 65535)
      continue;
    t->x = hits[i].point[0];
    t->y = hits[i].point[1];
    t->z = hits[i].point[2];
    t->time = time;
    t->intensity = surface_intensity (hits[i].surface,
        hash3 (column, laser, params->seed + i));
    t->ring = cal->ring;
    t->raw = (guint32) raw;
    firing->n++;
  }
}

VelodyneGen *
velodyne_gen_new (const VelodyneGenParams * params)
{
  VelodyneGen *gen = g_new0 (VelodyneGen, 1);
  P3dVelodyneModel model = params->model;
  ModelFacts facts;
  gboolean dual = params->return_mode == 0x39, vlp16 = is_vlp16 (model);
  guint sequences = packet_sequences (model, dual);
  gdouble period, first;
  gdouble azimuth = params->first_azimuth, previous_azimuth = -1;
  guint64 state = params->seed;
  guint p, c, l;

  model_facts (model, &facts);
  g_assert_cmpuint (params->calibration.n_lasers, ==, facts.lasers);
  gen->params = *params;
  gen->packets = g_array_new (FALSE, TRUE, sizeof (VelodyneGenPacket));
  gen->columns = g_array_new (FALSE, TRUE, sizeof (VelodyneGenColumn));
  gen->firings = g_array_new (FALSE, TRUE, sizeof (LidarFiring));
  gen->lasers = facts.lasers;
  gen->dual = dual;
  period = sequences * facts.sequence;
  first = dual ? facts.first_dual : facts.first_single;

  for (p = 0; p < params->n_packets; p++) {
    guint8 data[P3D_VELODYNE_DATA_PACKET_SIZE];
    VelodyneGenPacket packet;
    /* this packet's turn per azimuth group */
    gint gap = (gint) params->gap + (params->gap_jitter ?
        (gint) (splitmix64 (&state) % (2 * params->gap_jitter + 1)) -
        (gint) params->gap_jitter : 0);
    /* the timestamp: whole microseconds, its first sequence's first
     * firing at `first` from it */
    gdouble timestamp = floor (params->first_time + p * period - first + 0.5);
    gdouble column_gap;

    memset (data, 0, sizeof (data));
    /* the interpolation's turn per sequence (VLS-128 dual: one sequence a
     * packet, from the packet before) */
    if (vlp16)
      column_gap = gap / 2.0;
    else if (model == P3D_VELODYNE_MODEL_VLS128 && dual)
      column_gap = previous_azimuth < 0 ? 0 : azimuth - previous_azimuth;
    else
      column_gap = gap;

    packet.timestamp = timestamp;
    packet.first_column = gen->columns->len;
    packet.n_columns = sequences;
    for (c = 0; c < sequences; c++) {
      VelodyneGenColumn column;
      gdouble start = first + c * facts.sequence;
      /* the sequence's azimuth: its block's, VLP-16's second sequences
       * half a block further */
      gdouble column_azimuth = vlp16 ? azimuth + (c / 2) * gap +
          (c % 2) * gap / 2.0 : azimuth + c * gap;

      column.azimuth = column_azimuth;
      column.time = timestamp + start;
      column.first_firing = gen->firings->len;
      column.n_firings = facts.lasers;
      for (l = 0; l < facts.lasers; l++) {
        LidarFiring firing;
        gdouble fire = laser_fire (model, &facts, l);
        gdouble a = column_azimuth;

        if (model == P3D_VELODYNE_MODEL_HDL64E && l >= 32)
          a += params->lower_offset;
        if (facts.precise)
          a += column_gap * fire / facts.sequence;
        velodyne_fire (params, &facts, l, a, timestamp + start + fire,
            gen->columns->len, &firing);
        g_array_append_val (gen->firings, firing);
      }
      g_array_append_val (gen->columns, column);
    }

    /* the blocks */
    for (c = 0; c < sequences; c++) {
      VelodyneGenColumn *column = &g_array_index (gen->columns,
          VelodyneGenColumn, packet.first_column + c);
      const LidarFiring *firings = &g_array_index (gen->firings, LidarFiring,
          column->first_firing);
      guint block_azimuth = (guint) floor (vlp16 ? azimuth + (c / 2) * gap :
          column->azimuth);

      for (l = 0; l < facts.lasers; l++) {
        const LidarTruth *a = NULL, *b = NULL;
        guint bank = l / 32, ch = l % 32, block;
        static const guint8 banks[4] = { 0xee, 0xdd, 0xcc, 0xbb };

        if (dual)
          dual_echoes (&firings[l], &a, &b);
        else
          a = single_echo (&firings[l], params->return_mode);
        if (vlp16) {
          /* two sequences of 16 lasers a block */
          block = (c / 2) * (dual ? 2 : 1);
          ch = (c % 2) * 16 + l;
          bank = 0;
        } else if (model == P3D_VELODYNE_MODEL_HDL64E) {
          block = 2 * c + bank;
        } else if (model == P3D_VELODYNE_MODEL_VLS128) {
          block = dual ? 2 * bank : 4 * c + bank;
        } else {
          block = c * (dual ? 2 : 1);
        }
        put_block_header (data, block, banks[bank], block_azimuth +
            (model == P3D_VELODYNE_MODEL_HDL64E && bank == 1 ?
                params->lower_offset : 0));
        put_return (data, block, ch, a);
        if (dual) {
          put_block_header (data, block + 1, banks[bank], block_azimuth);
          put_return (data, block + 1, ch, b);
        }
      }
    }
    put_u32 (data + 1200, (guint32) fmod (timestamp, 3600e6));
    if (model == P3D_VELODYNE_MODEL_HDL64E) {
      /* status bytes; the value happens to be the VLP-16's product byte,
       * which the block flags must outrank */
      data[1204] = 'H';
      data[1205] = 0x22;
    } else {
      data[1204] = params->return_mode;
      data[1205] = params->product ? params->product : facts.product;
    }
    packet.data = g_bytes_new (data, sizeof (data));
    g_array_append_val (gen->packets, packet);

    previous_azimuth = azimuth;
    azimuth += (vlp16 ? (dual ? 6 : 12) : sequences) * (gdouble) gap;
  }
  return gen;
}

void
velodyne_gen_free (VelodyneGen * gen)
{
  guint i;

  for (i = 0; i < gen->packets->len; i++)
    g_bytes_unref (g_array_index (gen->packets, VelodyneGenPacket, i).data);
  g_array_unref (gen->packets);
  g_array_unref (gen->columns);
  g_array_unref (gen->firings);
  g_free (gen);
}

guint
velodyne_gen_expected (const VelodyneGen * gen, const LidarFiring * firing,
    P3dLidarReturns returns, LidarTruth * out)
{
  const LidarTruth *a, *b;

  if (!gen->dual) {
    a = single_echo (firing, gen->params.return_mode);
    if (a == NULL)
      return 0;
    out[0] = *a;
    return 1;
  }
  if (firing->n == 0)
    return 0;
  if (firing->n == 1) {
    out[0] = firing->echo[0];
    return 1;
  }
  dual_echoes (firing, &a, &b);
  switch (returns) {
    case P3D_LIDAR_RETURNS_STRONGEST:
      out[0] = a->intensity >= b->intensity ? *a : *b;
      return 1;
    case P3D_LIDAR_RETURNS_LAST:
      out[0] = *a;
      return 1;
    default:
      out[0] = *a;
      out[1] = *b;
      return 2;
  }
}

void
lidar_sweep_free (LidarSweep * sweep)
{
  g_array_unref (sweep->points);
  g_free (sweep);
}

GPtrArray *
velodyne_gen_sweeps (const VelodyneGen * gen, const gboolean * sent,
    gdouble cut_angle, P3dLidarReturns returns)
{
  GPtrArray *sweeps = g_ptr_array_new_with_free_func ((GDestroyNotify)
      lidar_sweep_free);
  gdouble cut = cut_angle * 100.0;
  gint64 first_turn = G_MININT64, last_turn = G_MININT64;
  LidarSweep *sweep = NULL;
  guint p, c, f;

  /* the turns seen: the first and the last are partial */
  for (p = 0; p < gen->packets->len; p++) {
    const VelodyneGenPacket *packet = &g_array_index (gen->packets,
        VelodyneGenPacket, p);

    if (sent != NULL && !sent[p])
      continue;
    for (c = 0; c < packet->n_columns; c++) {
      const VelodyneGenColumn *column = &g_array_index (gen->columns,
          VelodyneGenColumn, packet->first_column + c);
      gint64 turn = (gint64) floor ((column->azimuth - cut) / 36000.0);

      if (first_turn == G_MININT64)
        first_turn = turn;
      last_turn = turn;
    }
  }
  for (p = 0; p < gen->packets->len; p++) {
    const VelodyneGenPacket *packet = &g_array_index (gen->packets,
        VelodyneGenPacket, p);

    if (sent != NULL && !sent[p])
      continue;
    for (c = 0; c < packet->n_columns; c++) {
      const VelodyneGenColumn *column = &g_array_index (gen->columns,
          VelodyneGenColumn, packet->first_column + c);
      gint64 turn = (gint64) floor ((column->azimuth - cut) / 36000.0);

      if (turn == first_turn || turn == last_turn)
        continue;
      if (sweep == NULL || sweep->turn != turn) {
        sweep = g_new0 (LidarSweep, 1);
        sweep->turn = turn;
        sweep->first_column = packet->first_column + c;
        sweep->t0 = column->time;
        sweep->points = g_array_new (FALSE, FALSE, sizeof (LidarTruth));
        g_ptr_array_add (sweeps, sweep);
      }
      sweep->n_columns++;
      for (f = 0; f < column->n_firings; f++) {
        LidarTruth out[2];
        guint n = velodyne_gen_expected (gen, &g_array_index (gen->firings,
                LidarFiring, column->first_firing + f), returns, out);

        g_array_append_vals (sweep->points, out, n);
      }
    }
  }
  return sweeps;
}

void
velodyne_gen_random_calibration (guint n_lasers, guint64 seed,
    P3dVelodyneCalibration * calibration)
{
  guint64 state = seed;
  guint l, j;

  memset (calibration, 0, sizeof (*calibration));
  calibration->n_lasers = n_lasers;
  calibration->distance_resolution = 0.002;
  for (l = 0; l < n_lasers; l++) {
    P3dVelodyneLaser *laser = &calibration->lasers[l];

    laser->vert_correction = uniform (&state, -24.9, 2.0) * G_PI / 180.0;
    laser->rot_correction = uniform (&state, -8.0, 8.0) * G_PI / 180.0;
    laser->dist_correction = uniform (&state, -0.2, 1.6);
    laser->dist_correction_x = laser->dist_correction;
    laser->dist_correction_y = laser->dist_correction;
    laser->vert_offset = uniform (&state, -0.25, 0.25);
    laser->horiz_offset = uniform (&state, -0.03, 0.03);
  }
  /* the ring: the rank of the elevation */
  for (l = 0; l < n_lasers; l++) {
    guint rank = 0;

    for (j = 0; j < n_lasers; j++)
      if (calibration->lasers[j].vert_correction <
          calibration->lasers[l].vert_correction)
        rank++;
    calibration->lasers[l].ring = rank;
  }
}

gchar *
velodyne_gen_calibration_yaml (const P3dVelodyneCalibration * calibration,
    gboolean flow)
{
  GString *s = g_string_new (NULL);
  gchar b[7][G_ASCII_DTOSTR_BUF_SIZE];
  guint l;

  g_string_append_printf (s, "distance_resolution: %s\nlasers:\n",
      g_ascii_dtostr (b[0], sizeof (b[0]), calibration->distance_resolution));
  /* written in reverse, as the files need not be in order */
  for (l = calibration->n_lasers; l-- > 0;) {
    const P3dVelodyneLaser *laser = &calibration->lasers[l];

    g_ascii_dtostr (b[0], sizeof (b[0]), laser->dist_correction);
    g_ascii_dtostr (b[1], sizeof (b[1]), laser->dist_correction_x);
    g_ascii_dtostr (b[2], sizeof (b[2]), laser->dist_correction_y);
    g_ascii_dtostr (b[3], sizeof (b[3]), laser->rot_correction);
    g_ascii_dtostr (b[4], sizeof (b[4]), laser->vert_correction);
    g_ascii_dtostr (b[5], sizeof (b[5]), laser->vert_offset);
    g_ascii_dtostr (b[6], sizeof (b[6]), laser->horiz_offset);
    if (flow)
      g_string_append_printf (s, "- {dist_correction: %s, dist_correction_x: "
          "%s, dist_correction_y: %s, focal_distance: 0.0,\n  focal_slope: "
          "0.0, horiz_offset_correction: %s, laser_id: %u, rot_correction: "
          "%s,\n  vert_correction: %s, vert_offset_correction: %s}\n", b[0],
          b[1], b[2], b[6], l, b[3], b[4], b[5]);
    else
      g_string_append_printf (s, "- dist_correction: %s\n  dist_correction_x: "
          "%s\n  dist_correction_y: %s\n  focal_distance: 10.5\n  "
          "focal_slope: 1.85\n  horiz_offset_correction: %s\n  laser_id: %u\n"
          "  min_intensity: 5\n  rot_correction: %s\n  "
          "two_pt_correction_available: %s\n  vert_correction: %s\n  "
          "vert_offset_correction: %s\n", b[0], b[1], b[2], b[6], l, b[3],
          laser->two_point ? "true" : "false", b[4], b[5]);
  }
  g_string_append_printf (s, "num_lasers: %u\n", calibration->n_lasers);
  return g_string_free (s, FALSE);
}

GBytes *
velodyne_gen_position_packet (guint32 timestamp)
{
  guint8 data[P3D_VELODYNE_POSITION_PACKET_SIZE];

  memset (data, 0, sizeof (data));
  put_u32 (data + 198, timestamp);
  memcpy (data + 206, "$GPRMC,", 7);
  return g_bytes_new (data, sizeof (data));
}

/* ---------------------------------------------------------------------- */
/* Ouster: the firmware manual's packet profiles and range-to-XYZ */

void
ouster_gen_params_init (OusterGenParams * params, P3dOusterProfile profile,
    guint beams, guint columns)
{
  P3dOusterMetadata *m = &params->metadata;
  guint64 state = 99 + beams;
  guint b;

  memset (params, 0, sizeof (*params));
  m->profile = profile;
  m->beams = beams;
  m->columns_per_packet = 16;
  m->columns_per_frame = columns;
  m->column_window[0] = 0;
  m->column_window[1] = columns - 1;
  for (b = 0; b < beams; b++) {
    /* the first beam the highest, as the sensors list them */
    m->altitude[b] = 21.0 - 42.0 * b / (beams - 1) + uniform (&state, -0.2,
        0.2);
    m->azimuth[b] = uniform (&state, -4.3, 4.3);
    m->pixel_shift_by_row[b] = (gint) floor (uniform (&state, -6, 27));
  }
  memset (m->beam_to_lidar, 0, sizeof (m->beam_to_lidar));
  m->beam_to_lidar[0] = m->beam_to_lidar[5] = 1;
  m->beam_to_lidar[10] = m->beam_to_lidar[15] = 1;
  m->beam_to_lidar[3] = 15.806;
  memset (m->lidar_to_sensor, 0, sizeof (m->lidar_to_sensor));
  m->lidar_to_sensor[0] = m->lidar_to_sensor[5] = -1;
  m->lidar_to_sensor[10] = m->lidar_to_sensor[15] = 1;
  m->lidar_to_sensor[11] = 36.18;
  params->n_frames = 3;
  params->first_frame_id = 65534;
  params->first_time = G_GUINT64_CONSTANT (1624323701543631000);
  params->fps = 10;
  params->invalid_column_every = 41;
  params->no_return_every = 13;
  params->seed = 5;
}

/* The ray of beam @b at measurement id @m, in the sensor frame: origin
 * (the beam's own, metres) and unit direction; @n_mm: the distance the
 * range counts before the beam leaves its origin. */
static void
ouster_ray (const P3dOusterMetadata * md, guint m, guint b, gdouble * o,
    gdouble * u, gdouble * n_mm)
{
  const gdouble *bl = md->beam_to_lidar, *ls = md->lidar_to_sensor;
  /* the encoder turns backwards from a full turn; the beam's azimuth is
   * measured the other way */
  gdouble encoder = 2 * G_PI * (1 - (gdouble) m / md->columns_per_frame);
  gdouble azimuth = -2 * G_PI * md->azimuth[b] / 360.0;
  gdouble altitude = 2 * G_PI * md->altitude[b] / 360.0;
  gdouble dir[3] = {
    cos (encoder + azimuth) * cos (altitude),
    sin (encoder + azimuth) * cos (altitude),
    sin (altitude),
  };
  gdouble origin[3] = { bl[3] * cos (encoder), bl[3] * sin (encoder), bl[11] };
  guint i;

  for (i = 0; i < 3; i++) {
    u[i] = ls[4 * i] * dir[0] + ls[4 * i + 1] * dir[1] + ls[4 * i + 2] * dir[2];
    o[i] = (ls[4 * i] * origin[0] + ls[4 * i + 1] * origin[1] +
        ls[4 * i + 2] * origin[2] + ls[4 * i + 3]) / 1000.0;
  }
  *n_mm = sqrt (bl[3] * bl[3] + bl[11] * bl[11]);
}

static gsize
ouster_pixel_size (P3dOusterProfile profile)
{
  return profile == P3D_OUSTER_PROFILE_DUAL ? 16 : 12;
}

static gsize
ouster_column_size (const P3dOusterMetadata * md)
{
  if (md->profile == P3D_OUSTER_PROFILE_LEGACY)
    return 16 + 12 * md->beams + 4;
  return 12 + ouster_pixel_size (md->profile) * md->beams;
}

static void
ouster_fire (const OusterGenParams * params, guint frame, guint m, guint b,
    guint64 time, LidarFiring * firing)
{
  const P3dOusterMetadata *md = &params->metadata;
  guint32 max_range = md->profile == P3D_OUSTER_PROFILE_LEGACY ? 0xfffff :
      0x7ffff;
  gdouble o[3], u[3], n_mm;
  Hit hits[2];
  guint n, i, rank = 0, j;

  memset (firing, 0, sizeof (*firing));
  if (params->no_return_every != 0 && hash3 (params->seed + frame, m, b) %
      params->no_return_every == 0)
    return;
  for (j = 0; j < md->beams; j++)
    if (md->altitude[j] < md->altitude[b])
      rank++;
  ouster_ray (md, m, b, o, u, &n_mm);
  n = scene_cast (o, u, hits);
  for (i = 0; i < n; i++) {
    LidarTruth *t = &firing->echo[firing->n];
    gdouble raw = floor (hits[i].distance * 1000.0 + n_mm + 0.5);

    if (raw < 1 || raw > max_range)
      continue;
    t->x = hits[i].point[0];
    t->y = hits[i].point[1];
    t->z = hits[i].point[2];
    t->time = (gdouble) time;
    t->intensity = surface_intensity (hits[i].surface,
        hash3 (m + 7 * frame, b, params->seed + i));
    t->ring = rank;
    t->raw = (guint32) raw;
    firing->n++;
  }
}

/* The strongest echo first, then the other (the profiles' order). */
static void
ouster_echoes (const LidarFiring * f, const LidarTruth ** first,
    const LidarTruth ** second)
{
  *first = *second = NULL;
  if (f->n == 0)
    return;
  *first = &f->echo[0];
  if (f->n == 2) {
    if (f->echo[1].intensity > f->echo[0].intensity) {
      *first = &f->echo[1];
      *second = &f->echo[0];
    } else {
      *second = &f->echo[1];
    }
  }
}

static gboolean
ouster_in_window (const P3dOusterMetadata * md, guint m)
{
  guint a = md->column_window[0], z = md->column_window[1];

  return a <= z ? (m >= a && m <= z) : (m >= a || m <= z);
}

OusterGen *
ouster_gen_new (const OusterGenParams * params)
{
  const P3dOusterMetadata *md = &params->metadata;
  OusterGen *gen = g_new0 (OusterGen, 1);
  guint w = md->columns_per_frame, h = md->beams, cpp = md->columns_per_packet;
  gsize column_size = ouster_column_size (md);
  gsize pixel_size = ouster_pixel_size (md->profile);
  gboolean legacy = md->profile == P3D_OUSTER_PROFILE_LEGACY;
  gsize packet_size = (legacy ? 0 : 64) + cpp * column_size;
  guint f, m, b, k;

  gen->params = *params;
  gen->packets = g_array_new (FALSE, TRUE, sizeof (OusterGenPacket));
  gen->firings = g_array_new (FALSE, TRUE, sizeof (LidarFiring));
  gen->column_time = g_array_new (FALSE, TRUE, sizeof (guint64));
  gen->column_valid = g_array_new (FALSE, TRUE, sizeof (gboolean));

  for (f = 0; f < params->n_frames; f++) {
    gdouble frame_start = params->first_time + f * 1e9 / params->fps;
    guint frame_id = (params->first_frame_id + f) & 0xffff;

    for (m = 0; m < w; m++) {
      guint64 time = (guint64) floor (frame_start + m * 1e9 /
          ((gdouble) params->fps * w) + 0.5);
      gboolean valid = ouster_in_window (md, m)
          && (params->invalid_column_every == 0
          || hash3 (params->seed, f, m) % params->invalid_column_every != 0);

      g_array_append_val (gen->column_time, time);
      g_array_append_val (gen->column_valid, valid);
      for (b = 0; b < h; b++) {
        LidarFiring firing;

        ouster_fire (params, f, m, b, time, &firing);
        g_array_append_val (gen->firings, firing);
      }
    }

    for (k = 0; k * cpp < w; k++) {
      OusterGenPacket packet;
      guint8 *data;
      gboolean any = FALSE;
      guint j;

      for (j = 0; j < cpp; j++)
        any |= k * cpp + j < w && ouster_in_window (md, k * cpp + j);
      if (!any)
        continue;
      data = g_malloc0 (packet_size);
      if (!legacy) {
        put_u16 (data, 1);
        put_u16 (data + 2, frame_id);
        put_u32 (data + 4, 0x00abcdef);
      }
      for (j = 0; j < cpp; j++) {
        guint8 *col = data + (legacy ? 0 : 32) + j * column_size;
        guint mm = k * cpp + j;
        guint idx = f * w + mm;
        gboolean valid = g_array_index (gen->column_valid, gboolean, idx);

        put_u64 (col, g_array_index (gen->column_time, guint64, idx));
        put_u16 (col + 8, mm);
        if (legacy) {
          put_u16 (col + 10, frame_id);
          put_u32 (col + 12, mm * 90112 / w);
          put_u32 (col + column_size - 4, valid ? 0xffffffff : 0);
        } else {
          put_u16 (col + 10, valid ? 1 : 0);
        }
        for (b = 0; b < h; b++) {
          guint8 *px = col + (legacy ? 16 : 12) + b * pixel_size;
          const LidarFiring *fi = &g_array_index (gen->firings, LidarFiring,
              (gsize) idx * h + b);
          const LidarTruth *r1, *r2;
          /* flag bits above the range, which a decoder must mask */
          guint32 flags = (guint32) (hash3 (idx, b, 3) & 0x1f);

          ouster_echoes (fi, &r1, &r2);
          if (md->profile == P3D_OUSTER_PROFILE_DUAL) {
            put_u32 (px, (r1 ? r1->raw : 0) | flags << 19 |
                (guint32) (r1 ? r1->intensity : 0) << 24);
            put_u32 (px + 4, (r2 ? r2->raw : 0) | flags << 19 |
                (guint32) (r2 ? r2->intensity : 0) << 24);
            put_u16 (px + 8, 1000 + b);
            put_u16 (px + 10, 500 + b);
            put_u16 (px + 12, 77);
          } else {
            put_u32 (px, (r1 ? r1->raw : 0) | (legacy ? flags >> 1 << 28 :
                    flags << 19));
            px[4] = r1 ? (guint8) r1->intensity : 0;
            put_u16 (px + 6, 1000 + b);
            put_u16 (px + 8, 77);
          }
        }
      }
      packet.data = g_bytes_new_take (data, packet_size);
      packet.frame = f;
      packet.packet_index = k;
      g_array_append_val (gen->packets, packet);
    }
  }
  return gen;
}

void
ouster_gen_free (OusterGen * gen)
{
  guint i;

  for (i = 0; i < gen->packets->len; i++)
    g_bytes_unref (g_array_index (gen->packets, OusterGenPacket, i).data);
  g_array_unref (gen->packets);
  g_array_unref (gen->firings);
  g_array_unref (gen->column_time);
  g_array_unref (gen->column_valid);
  g_free (gen);
}

LidarSweep *
ouster_gen_sweep (const OusterGen * gen, guint frame, const gboolean * sent,
    P3dLidarReturns returns)
{
  const P3dOusterMetadata *md = &gen->params.metadata;
  guint w = md->columns_per_frame, h = md->beams, cpp = md->columns_per_packet;
  gboolean *received = g_new0 (gboolean, w / cpp + 1);
  LidarSweep *sweep = g_new0 (LidarSweep, 1);
  gboolean have_t0 = FALSE;
  guint p, u, b;

  sweep->points = g_array_new (FALSE, FALSE, sizeof (LidarTruth));
  for (p = 0; p < gen->packets->len; p++) {
    const OusterGenPacket *packet = &g_array_index (gen->packets,
        OusterGenPacket, p);
    guint j;

    if (packet->frame != frame || (sent != NULL && !sent[p]))
      continue;
    received[packet->packet_index] = TRUE;
    if (have_t0)
      continue;
    /* the time origin: the first packet's first valid column, or its
     * first column when none is */
    sweep->t0 = (gdouble) g_array_index (gen->column_time, guint64,
        frame * w + packet->packet_index * cpp);
    for (j = 0; j < cpp; j++) {
      guint idx = frame * w + packet->packet_index * cpp + j;

      if (g_array_index (gen->column_valid, gboolean, idx)) {
        sweep->t0 = (gdouble) g_array_index (gen->column_time, guint64, idx);
        break;
      }
    }
    have_t0 = TRUE;
  }
  /* destaggered, row by row: column u of the image holds beam b's column
   * u - shift */
  for (b = 0; b < h; b++) {
    for (u = 0; u < w; u++) {
      gint shifted = ((gint) u - md->pixel_shift_by_row[b]) % (gint) w;
      guint m = (guint) (shifted < 0 ? shifted + (gint) w : shifted);
      guint idx = frame * w + m;
      const LidarFiring *fi = &g_array_index (gen->firings, LidarFiring,
          (gsize) idx * h + b);
      const LidarTruth *r1, *r2;

      if (!received[m / cpp] || !g_array_index (gen->column_valid, gboolean,
              idx))
        continue;
      ouster_echoes (fi, &r1, &r2);
      if (r1 == NULL)
        continue;
      if (md->profile != P3D_OUSTER_PROFILE_DUAL || r2 == NULL) {
        g_array_append_vals (sweep->points, r1, 1);
      } else if (returns == P3D_LIDAR_RETURNS_STRONGEST) {
        g_array_append_vals (sweep->points, r1, 1);
      } else if (returns == P3D_LIDAR_RETURNS_LAST) {
        g_array_append_vals (sweep->points, r2->raw > r1->raw ? r2 : r1, 1);
      } else {
        g_array_append_vals (sweep->points, r1, 1);
        g_array_append_vals (sweep->points, r2, 1);
      }
    }
  }
  g_free (received);
  return sweep;
}

static void
append_array (GString * s, const gdouble * values, guint n)
{
  gchar buf[G_ASCII_DTOSTR_BUF_SIZE];
  guint i;

  g_string_append_c (s, '[');
  for (i = 0; i < n; i++)
    g_string_append_printf (s, "%s%s", i ? ", " : "",
        g_ascii_dtostr (buf, sizeof (buf), values[i]));
  g_string_append_c (s, ']');
}

gchar *
ouster_gen_metadata_json (const P3dOusterMetadata * md, gboolean nested)
{
  GString *s = g_string_new ("{\n");
  gdouble shifts[P3D_OUSTER_MAX_BEAMS], window[2];
  gchar buf[G_ASCII_DTOSTR_BUF_SIZE];
  guint b;

  for (b = 0; b < md->beams; b++)
    shifts[b] = md->pixel_shift_by_row[b];
  window[0] = md->column_window[0];
  window[1] = md->column_window[1];
  if (nested)
    g_string_append (s, "  \"beam_intrinsics\": {\n");
  g_string_append (s, "  \"beam_altitude_angles\": ");
  append_array (s, md->altitude, md->beams);
  g_string_append (s, ",\n  \"beam_azimuth_angles\": ");
  append_array (s, md->azimuth, md->beams);
  if (nested) {
    g_string_append (s, ",\n  \"beam_to_lidar_transform\": ");
    append_array (s, md->beam_to_lidar, 16);
    g_string_append_printf (s, ",\n  \"lidar_origin_to_beam_origin_mm\": %s"
        "\n  },\n  \"lidar_intrinsics\": {\"lidar_to_sensor_transform\": ",
        g_ascii_dtostr (buf, sizeof (buf), md->beam_to_lidar[3]));
    append_array (s, md->lidar_to_sensor, 16);
    g_string_append_printf (s, "},\n  \"config_params\": {\"lidar_mode\": "
        "\"%ux10\", \"udp_profile_lidar\": \"%s\"},\n  \"lidar_data_format\": "
        "{", md->columns_per_frame, p3d_ouster_profile_name (md->profile));
  } else {
    g_string_append_printf (s, ",\n  \"lidar_origin_to_beam_origin_mm\": %s,"
        "\n  \"lidar_to_sensor_transform\": ",
        g_ascii_dtostr (buf, sizeof (buf), md->beam_to_lidar[3]));
    append_array (s, md->lidar_to_sensor, 16);
    g_string_append (s, ",\n  \"data_format\": {");
    if (md->profile != P3D_OUSTER_PROFILE_LEGACY)
      g_string_append_printf (s, "\"udp_profile_lidar\": \"%s\", ",
          p3d_ouster_profile_name (md->profile));
  }
  g_string_append (s, "\"column_window\": ");
  append_array (s, window, 2);
  g_string_append_printf (s, ", \"columns_per_frame\": %u, "
      "\"columns_per_packet\": %u, \"pixels_per_column\": %u, "
      "\"pixel_shift_by_row\": ", md->columns_per_frame,
      md->columns_per_packet, md->beams);
  append_array (s, shifts, md->beams);
  g_string_append (s, "},\n  \"prod_line\": \"OS-GEN\"\n}\n");
  return g_string_free (s, FALSE);
}

/* ---------------------------------------------------------------------- */

static void
put_be16 (guint8 * p, guint v)
{
  p[0] = (v >> 8) & 0xff;
  p[1] = v & 0xff;
}

gboolean
lidar_gen_write_pcap (const gchar * path, GPtrArray * packets,
    const gdouble * times_us, guint64 start_s, guint16 port)
{
  GString *out = g_string_new (NULL);
  guint8 header[24] = { 0 };
  gboolean ok;
  guint i;

  put_u32 (header, 0xa1b2c3d4);
  put_u16 (header + 4, 2);
  put_u16 (header + 6, 4);
  put_u32 (header + 16, 65535);
  put_u32 (header + 20, 1);
  g_string_append_len (out, (const gchar *) header, sizeof (header));
  for (i = 0; i < packets->len; i++) {
    gsize size;
    const guint8 *payload = g_bytes_get_data (packets->pdata[i], &size);
    guint8 record[16], frame[42];
    guint64 us = (guint64) llround (times_us[i]);
    guint32 sum = 0;
    guint k;

    put_u32 (record, (guint32) (start_s + us / 1000000));
    put_u32 (record + 4, (guint32) (us % 1000000));
    put_u32 (record + 8, (guint32) (size + 42));
    put_u32 (record + 12, (guint32) (size + 42));
    memset (frame, 0, sizeof (frame));
    /* Ethernet: broadcast, the sensor's address, IPv4 */
    memset (frame, 0xff, 6);
    memcpy (frame + 6, "\x60\x76\x88\x00\x00\x01", 6);
    put_be16 (frame + 12, 0x0800);
    /* IPv4 from 192.168.1.201 to 192.168.1.100, UDP */
    frame[14] = 0x45;
    put_be16 (frame + 16, (guint) (20 + 8 + size));
    put_be16 (frame + 20, 0x4000);
    frame[22] = 64;
    frame[23] = 17;
    memcpy (frame + 26, "\xc0\xa8\x01\xc9\xc0\xa8\x01\x64", 8);
    for (k = 0; k < 20; k += 2)
      sum += (frame[14 + k] << 8) | frame[15 + k];
    while (sum >> 16)
      sum = (sum & 0xffff) + (sum >> 16);
    put_be16 (frame + 24, ~sum & 0xffff);
    put_be16 (frame + 34, port);
    put_be16 (frame + 36, port);
    put_be16 (frame + 38, (guint) (8 + size));
    g_string_append_len (out, (const gchar *) record, sizeof (record));
    g_string_append_len (out, (const gchar *) frame, sizeof (frame));
    g_string_append_len (out, (const gchar *) payload, size);
  }
  ok = g_file_set_contents (path, out->str, out->len, NULL);
  g_string_free (out, TRUE);
  return ok;
}
