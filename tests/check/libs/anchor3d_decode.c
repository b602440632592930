/* The anchor-head decode reference: the anchor table against KITTI's
 * configs worked by hand, one anchor's box from known deltas in both
 * frameworks' conventions, both direction bins, the limit offset at the
 * period boundary, the thresholds' >= and >, the lists, top-k and NMS of
 * both frameworks (and the lists without a NMS) against brute-force
 * oracles written here (many equal scores), non-finite values dropped, and F16 channels-last views equal to
 * F32 NCHW. */
#include <math.h>
#include <string.h>
#include <gst/check/gstcheck.h>

#include "anchor3d_common.h"
#include "anchor3d_decode.h"
#include "anchor3d_decode-private.h"
#include "half.h"
#include "p3dtest.h"

typedef struct
{
  P3dcBox3d *boxes;
  gfloat *velocity;
  guint32 count, capacity;
} Output;

static void
run_decode (const P3dcAnchor3dParams * p, const P3dcAnchor3dTable * table,
    const P3dcAnchor3dMaps * maps, Output * o)
{
  P3dcAnchor3dOutput out;

  o->capacity = p3dc_anchor3d_output_capacity (p, table);
  fail_unless (o->capacity > 0);
  o->boxes = g_new (P3dcBox3d, o->capacity);
  o->velocity = g_new (gfloat, 2 * o->capacity);
  memset (o->boxes, 0xa5, sizeof (P3dcBox3d) * o->capacity);
  memset (o->velocity, 0xa5, sizeof (gfloat) * 2 * o->capacity);
  o->count = 12345;
  out.boxes = o->boxes;
  out.count = &o->count;
  out.velocity = o->velocity;
  fail_unless_equals_int (p3dc_anchor3d_decode_cpu (p, table, maps, &out),
      P3DC_OK);
  fail_unless (o->count <= o->capacity);
}

static void
output_clear (Output * o)
{
  g_free (o->boxes);
  g_free (o->velocity);
}

GST_START_TEST (test_table)
{
  P3dcAnchor3dSet sets[10];
  P3dcAnchor3dTable table;
  guint n, k;

  /* OpenPCDet: corners, 216 x 248 (432 x 496 pillars, stride 2) */
  n = p3d_test_anchor3d_openpcdet_kitti (sets);
  fail_unless_equals_int (p3dc_anchor3d_table_init (&table, sets, n, 248,
          216), P3DC_OK);
  fail_unless_equals_int (table.n_anchors, 6);
  /* set by set, rotation by rotation: car 0, car 1.57, pedestrian 0, ... */
  fail_unless (table.shapes[0].dx == 3.9f && table.shapes[0].yaw == 0.0f);
  fail_unless (table.shapes[1].dx == 3.9f && table.shapes[1].yaw == 1.57f);
  fail_unless (table.shapes[2].dx == 0.8f && table.shapes[5].dx == 1.76f);
  /* the centre of a car anchor: -1.78 + 1.56 / 2, in float */
  fail_unless (table.shapes[0].z == -1.78f + 1.56f / 2.0f);
  fail_unless (fabs (table.shapes[0].z - -1.0) < 1e-6);
  fail_unless (fabs (table.shapes[0].diagonal - sqrt (3.9 * 3.9 + 1.6 * 1.6))
      < 1e-6);
  /* first on the range's start, last on its end, 69.12 / 215 apart */
  fail_unless (table.x[0] == 0.0f && table.x[215] == 69.12f);
  fail_unless (table.x[100] == (gfloat) (100 * (69.12 / 215)));
  fail_unless (table.y[0] == -39.68f && table.y[247] == 39.68f);
  fail_unless (table.x[5 * 216 + 7] == table.x[7]);
  p3dc_anchor3d_table_clear (&table);
  fail_unless (table.x == NULL && table.n_anchors == 0);

  /* mmdetection3d: the centres of 0.32 m cells */
  n = p3d_test_anchor3d_mmdet3d_kitti (sets);
  fail_unless_equals_int (p3dc_anchor3d_table_init (&table, sets, n, 248,
          216), P3DC_OK);
  fail_unless (table.shapes[0].dx == 0.8f && table.shapes[4].dx == 3.9f);
  fail_unless (fabs (table.x[0] - 0.16) < 1e-6);
  fail_unless (fabs (table.x[215] - 68.96) < 1e-5);
  fail_unless (fabs (table.y[0] - -39.52) < 1e-5);
  fail_unless (fabs (table.y[247] - 39.52) < 1e-5);
  p3dc_anchor3d_table_clear (&table);
  /* corners of the cells */
  sets[0].placement = P3DC_ANCHOR3D_CORNERS;
  fail_unless_equals_int (p3dc_anchor3d_table_init (&table, sets, 1, 248,
          216), P3DC_OK);
  fail_unless (table.x[0] == 0.0f && fabs (table.x[1] - 0.32) < 1e-6);
  fail_unless_equals_int (table.n_anchors, 2);
  p3dc_anchor3d_table_clear (&table);

  /* refusals */
  n = p3d_test_anchor3d_openpcdet_kitti (sets);
  fail_unless_equals_int (p3dc_anchor3d_table_init (&table, sets, n, 248, 1),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless (table.x == NULL);
  fail_unless_equals_int (p3dc_anchor3d_table_init (&table, sets, 0, 248,
          216), P3DC_ERROR_INVALID_ARGUMENT);
  sets[1].sizes[0][1] = -0.6;
  fail_unless_equals_int (p3dc_anchor3d_table_init (&table, sets, n, 248,
          216), P3DC_ERROR_INVALID_ARGUMENT);
  sets[1].sizes[0][1] = 0.6;
  sets[2].bottom = NAN;
  fail_unless_equals_int (p3dc_anchor3d_table_init (&table, sets, n, 248,
          216), P3DC_ERROR_INVALID_ARGUMENT);
  sets[2].bottom = -0.6;
  sets[2].n_rotations = 0;
  fail_unless_equals_int (p3dc_anchor3d_table_init (&table, sets, n, 248,
          216), P3DC_ERROR_INVALID_ARGUMENT);
  sets[2].n_rotations = 9;
  fail_unless_equals_int (p3dc_anchor3d_table_init (&table, sets, n, 248,
          216), P3DC_ERROR_TOO_LARGE);
  sets[2].n_rotations = 2;
  sets[2].placement = (P3dcAnchor3dPlacement) 7;
  fail_unless_equals_int (p3dc_anchor3d_table_init (&table, sets, n, 248,
          216), P3DC_ERROR_INVALID_ARGUMENT);
  /* 9 sets of 8 anchors: 72, more than 64 */
  for (k = 0; k < 9; k++) {
    sets[k] = sets[0];
    sets[k].n_rotations = 8;
    sets[k].placement = P3DC_ANCHOR3D_SPAN;
  }
  fail_unless_equals_int (p3dc_anchor3d_table_init (&table, sets, 9, 248,
          216), P3DC_ERROR_TOO_LARGE);
  /* 8 of 8: 64 anchors, but 2^24 anchors in all is too many */
  fail_unless_equals_int (p3dc_anchor3d_table_init (&table, sets, 8, 512,
          512), P3DC_ERROR_TOO_LARGE);
  fail_unless_equals_int (p3dc_anchor3d_table_init (&table, sets, 8, 248,
          216), P3DC_OK);
  fail_unless_equals_int (table.n_anchors, 64);
  p3dc_anchor3d_table_clear (&table);
}

GST_END_TEST;

GST_START_TEST (test_params)
{
  P3dcAnchor3dSet sets[3];
  P3dcAnchor3dTable table;
  P3dcAnchor3dParams p;

  fail_unless_equals_int (p3dc_anchor3d_table_init (&table, sets,
          p3d_test_anchor3d_openpcdet_kitti (sets), 248, 216), P3DC_OK);
  p3d_test_anchor3d_openpcdet_params (&p);
  fail_unless_equals_int (p3dc_anchor3d_params_validate (&p, &table), P3DC_OK);
  fail_unless_equals_int (p3dc_anchor3d_output_capacity (&p, &table), 500);
  p.per_class = 1;
  fail_unless_equals_int (p3dc_anchor3d_output_capacity (&p, &table), 1500);
  p.pre_max = 100;
  fail_unless_equals_int (p3dc_anchor3d_output_capacity (&p, &table), 300);
  p3d_test_anchor3d_mmdet3d_params (&p);
  fail_unless_equals_int (p3dc_anchor3d_output_capacity (&p, &table), 50);
  p.post_max = 1000;            /* more than 3 lists of 100 can keep */
  fail_unless_equals_int (p3dc_anchor3d_output_capacity (&p, &table), 300);

  p3d_test_anchor3d_openpcdet_params (&p);
  p.pre_max = 4097;
  fail_unless_equals_int (p3dc_anchor3d_params_validate (&p, &table),
      P3DC_ERROR_TOO_LARGE);
  p.pre_max = 0;
  fail_unless_equals_int (p3dc_anchor3d_params_validate (&p, &table),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_anchor3d_output_capacity (&p, &table), 0);
  p.pre_max = 4096;
  p.post_max = 0;
  fail_unless_equals_int (p3dc_anchor3d_params_validate (&p, &table),
      P3DC_ERROR_INVALID_ARGUMENT);
  p.post_max = 500;
  p.num_classes = 33;
  fail_unless_equals_int (p3dc_anchor3d_params_validate (&p, &table),
      P3DC_ERROR_TOO_LARGE);
  p.num_classes = 3;
  p.code_size = 8;              /* OpenPCDet's encode_angle_by_sincos */
  fail_unless_equals_int (p3dc_anchor3d_params_validate (&p, &table),
      P3DC_ERROR_INVALID_ARGUMENT);
  p.code_size = 9;
  fail_unless_equals_int (p3dc_anchor3d_params_validate (&p, &table), P3DC_OK);
  p.score_threshold = -0.1f;
  fail_unless_equals_int (p3dc_anchor3d_params_validate (&p, &table),
      P3DC_ERROR_INVALID_ARGUMENT);
  p.score_threshold = NAN;
  fail_unless_equals_int (p3dc_anchor3d_params_validate (&p, &table),
      P3DC_ERROR_INVALID_ARGUMENT);
  p.score_threshold = 0.1f;
  p.dir_offset = INFINITY;
  fail_unless_equals_int (p3dc_anchor3d_params_validate (&p, &table),
      P3DC_ERROR_INVALID_ARGUMENT);
  p.dir_offset = 0.78539f;
  p.nms = (P3dcAnchor3dNms) 5;
  fail_unless_equals_int (p3dc_anchor3d_params_validate (&p, &table),
      P3DC_ERROR_INVALID_ARGUMENT);
  p.nms = P3DC_ANCHOR3D_NMS_ALIGNED;
  p.rules = P3DC_ANCHOR3D_MMDET3D;
  p.dir_bins = 4;               /* mmdetection3d's classifier has 2 bins */
  fail_unless_equals_int (p3dc_anchor3d_params_validate (&p, &table),
      P3DC_ERROR_INVALID_ARGUMENT);
  p.dir_bins = 0;
  fail_unless_equals_int (p3dc_anchor3d_params_validate (&p, &table), P3DC_OK);
  p.rules = (P3dcAnchor3dRules) 2;
  fail_unless_equals_int (p3dc_anchor3d_params_validate (&p, &table),
      P3DC_ERROR_INVALID_ARGUMENT);
  p3dc_anchor3d_table_clear (&table);
  p.rules = P3DC_ANCHOR3D_OPENPCDET;
  fail_unless_equals_int (p3dc_anchor3d_params_validate (&p, &table),
      P3DC_ERROR_INVALID_ARGUMENT);
}

GST_END_TEST;

/* One set on a 2 x 2 map: a 3 x 4 x 2 m anchor (diagonal 5) standing on
 * z = -1 (centre 0), rotations 0 and 1.5, at the corners of 2 m cells from
 * (0, -1): x 0 and 2, y -1 and 1.  Two classes, every logit -10 but anchor
 * 1 at (y 1, x 0): class 0 logit 0 (score 0.5), class 1 logit 1 (0.731).
 * Its deltas (0.5, -0.2, 0.25, ln 2, 0, -ln 2, 0.3) give
 *   x = 0.5 x 5 + 0 = 2.5, y = -0.2 x 5 + 1 = 0, z = 0.25 x 2 + 0 = 0.5,
 *   dx = 2 x 3 = 6, dy = 4, dz = 2 / 2 = 1, r = 0.3 + 1.5 = 1.8. */
static void
hand_case (P3dcAnchor3dTable * table, P3dTestHead * head,
    P3dcAnchor3dParams * p, P3dcAnchor3dRules rules)
{
  P3dcAnchor3dSet set;
  const gfloat deltas[7] = { 0.5f, -0.2f, 0.25f, 0.6931472f, 0.0f,
    -0.6931472f, 0.3f
  };
  guint32 k, c, y, x, j;

  memset (&set, 0, sizeof (set));
  set.x_range[0] = 0.0;
  set.x_range[1] = 4.0;
  set.y_range[0] = -1.0;
  set.y_range[1] = 3.0;
  set.bottom = -1.0;
  set.n_sizes = 1;
  set.sizes[0][0] = 3.0;
  set.sizes[0][1] = 4.0;
  set.sizes[0][2] = 2.0;
  set.n_rotations = 2;
  set.rotations[0] = 0.0;
  set.rotations[1] = 1.5;
  set.placement = P3DC_ANCHOR3D_CORNERS;
  fail_unless_equals_int (p3dc_anchor3d_table_init (table, &set, 1, 2, 2),
      P3DC_OK);
  fail_unless (table->y[1] == 1.0f && table->x[1] == 2.0f);
  fail_unless (table->shapes[1].diagonal == 5.0f && table->shapes[1].z == 0.0f);
  if (rules == P3DC_ANCHOR3D_OPENPCDET)
    p3d_test_anchor3d_openpcdet_params (p);
  else
    p3d_test_anchor3d_mmdet3d_params (p);
  p->num_classes = 2;
  p->dir_offset = 0.0f;
  p->pre_max = 10;
  p->post_max = 10;
  p3d_test_head_init (head, p, table);
  for (y = 0; y < 2; y++)
    for (x = 0; x < 2; x++)
      for (k = 0; k < 2; k++)
        for (c = 0; c < 2; c++)
          *p3d_test_head_cls (head, k, c, y, x) = -10.0f;
  *p3d_test_head_cls (head, 1, 0, 1, 0) = 0.0f;
  *p3d_test_head_cls (head, 1, 1, 1, 0) = 1.0f;
  for (j = 0; j < 7; j++)
    *p3d_test_head_box (head, 1, j, 1, 0) = deltas[j];
  /* bin 0 */
  *p3d_test_head_dir (head, 1, 0, 1, 0) = 1.0f;
}

GST_START_TEST (test_hand_worked_anchor)
{
  P3dcAnchor3dTable table;
  P3dcAnchor3dParams p;
  P3dcAnchor3dMaps maps;
  P3dTestHead head;
  Output o;
  const gdouble pi = G_PI;

  hand_case (&table, &head, &p, P3DC_ANCHOR3D_OPENPCDET);
  p3d_test_head_maps (&head, head.data, &maps);
  run_decode (&p, &table, &maps, &o);
  fail_unless_equals_int (o.count, 1);
  fail_unless (o.boxes[0].x == 2.5f && o.boxes[0].y == 0.0f
      && o.boxes[0].z == 0.5f, "at %g %g %g", o.boxes[0].x, o.boxes[0].y,
      o.boxes[0].z);
  fail_unless (fabs (o.boxes[0].dx - 6.0) < 4e-6 && o.boxes[0].dy == 4.0f
      && fabs (o.boxes[0].dz - 1.0) < 1e-6);
  fail_unless (fabs (o.boxes[0].score - 1.0 / (1.0 + exp (-1.0))) < 1e-7);
  fail_unless_equals_int (o.boxes[0].label, 1);
  /* bin 0 with offset 0 and period pi: 1.8 is in [0, pi), as it is */
  fail_unless (o.boxes[0].yaw == 1.8f, "yaw %.9g", o.boxes[0].yaw);
  /* no velocity: zeros */
  fail_unless (o.velocity[0] == 0.0f && o.velocity[1] == 0.0f);
  fail_unless (o.boxes[1].x == 0.0f && o.boxes[1].label == 0);
  output_clear (&o);

  /* bin 1: half a turn more */
  *p3d_test_head_dir (&head, 1, 1, 1, 0) = 2.0f;
  run_decode (&p, &table, &maps, &o);
  fail_unless (fabs (o.boxes[0].yaw - (1.8 + pi)) < 1e-6, "yaw %.9g",
      o.boxes[0].yaw);
  output_clear (&o);
  /* equal logits: the first bin */
  *p3d_test_head_dir (&head, 1, 1, 1, 0) = 1.0f;
  run_decode (&p, &table, &maps, &o);
  fail_unless (o.boxes[0].yaw == 1.8f);
  output_clear (&o);

  /* OpenPCDet's offset 0.78539: 1.8 - 0.78539 is in [0, pi), kept; a raw
   * 0.3 (delta -1.2) is brought up by pi */
  p.dir_offset = 0.78539f;
  run_decode (&p, &table, &maps, &o);
  fail_unless (fabs (o.boxes[0].yaw - 1.8) < 1e-6);
  output_clear (&o);
  *p3d_test_head_box (&head, 1, 6, 1, 0) = -1.2f;
  run_decode (&p, &table, &maps, &o);
  fail_unless (fabs (o.boxes[0].yaw - (0.3 + pi)) < 1e-6, "yaw %.9g",
      o.boxes[0].yaw);
  output_clear (&o);
  *p3d_test_head_dir (&head, 1, 1, 1, 0) = 5.0f;
  run_decode (&p, &table, &maps, &o);
  fail_unless (fabs (o.boxes[0].yaw - (0.3 + 2 * pi)) < 2e-6);
  output_clear (&o);
  *p3d_test_head_box (&head, 1, 6, 1, 0) = 0.3f;
  *p3d_test_head_dir (&head, 1, 1, 1, 0) = 0.0f;

  /* without a direction classifier the yaw is r */
  p.dir_bins = 0;
  run_decode (&p, &table, &maps, &o);
  fail_unless (o.boxes[0].yaw == 1.8f);
  output_clear (&o);
  p.dir_bins = 2;

  /* per class: both classes of the anchor are boxes (0.5 >= 0.1), class
   * by class */
  p.per_class = 1;
  run_decode (&p, &table, &maps, &o);
  fail_unless_equals_int (o.count, 2);
  fail_unless (o.boxes[0].label == 0 && o.boxes[0].score == 0.5f);
  fail_unless (o.boxes[1].label == 1 && o.boxes[1].x == 2.5f);
  fail_unless (memcmp (&o.boxes[0].x, &o.boxes[1].x, 7 * sizeof (gfloat)) == 0);
  output_clear (&o);
  /* the threshold is >=: 0.5 passes 0.5 */
  p.score_threshold = 0.5f;
  run_decode (&p, &table, &maps, &o);
  fail_unless_equals_int (o.count, 2);
  output_clear (&o);
  p3d_test_head_clear (&head);
  p3dc_anchor3d_table_clear (&table);

  /* mmdetection3d: the same box (its z at the bottom, 0.5 - 1 / 2 = 0,
   * back to the centre 0.5), its offset -pi/2: 1.8 + pi/2 is past pi, so
   * bin 0 gives 1.8 - pi and bin 1 1.8 */
  hand_case (&table, &head, &p, P3DC_ANCHOR3D_MMDET3D);
  p.dir_offset = (gfloat) - G_PI_2;
  p3d_test_head_maps (&head, head.data, &maps);
  run_decode (&p, &table, &maps, &o);
  fail_unless_equals_int (o.count, 2);
  /* class lists in order; both the same box */
  fail_unless (o.boxes[0].label == 0 && o.boxes[1].label == 1);
  fail_unless (o.boxes[1].x == 2.5f && o.boxes[1].y == 0.0f
      && fabs (o.boxes[1].z - 0.5) < 1e-7);
  fail_unless (fabs (o.boxes[1].yaw - (1.8 - pi)) < 1e-6, "yaw %.9g",
      o.boxes[1].yaw);
  output_clear (&o);
  *p3d_test_head_dir (&head, 1, 1, 1, 0) = 2.0f;
  run_decode (&p, &table, &maps, &o);
  fail_unless (fabs (o.boxes[1].yaw - 1.8) < 1e-6);
  output_clear (&o);
  /* the threshold is >: 0.5 does not pass 0.5 */
  p.score_threshold = 0.5f;
  run_decode (&p, &table, &maps, &o);
  fail_unless_equals_int (o.count, 1);
  fail_unless_equals_int (o.boxes[0].label, 1);
  output_clear (&o);
  /* max_num 1 of the two class boxes: the better, class 1 */
  p.score_threshold = 0.1f;
  p.post_max = 1;
  run_decode (&p, &table, &maps, &o);
  fail_unless_equals_int (o.count, 1);
  fail_unless_equals_int (o.boxes[0].label, 1);
  output_clear (&o);
  /* code size 9: the velocity is (t7, t8) */
  p3d_test_head_clear (&head);
  p.post_max = 10;
  p.code_size = 9;
  p3d_test_head_init (&head, &p, &table);
  *p3d_test_head_cls (&head, 1, 1, 1, 0) = 1.0f;
  *p3d_test_head_box (&head, 1, 7, 1, 0) = 1.25f;
  *p3d_test_head_box (&head, 1, 8, 1, 0) = -0.0f;
  p3d_test_head_maps (&head, head.data, &maps);
  p.score_threshold = 0.6f;
  run_decode (&p, &table, &maps, &o);
  fail_unless_equals_int (o.count, 1);
  fail_unless (o.velocity[0] == 1.25f && o.velocity[1] == 0.0f
      && !signbit (o.velocity[1]));
  output_clear (&o);
  p3d_test_head_clear (&head);
  p3dc_anchor3d_table_clear (&table);
}

GST_END_TEST;

/* The limit offset at the period's boundary: with offset 0, limit 0.5 and
 * period pi, limit_period folds r into [-pi/2, pi/2); the first float r
 * whose r / pi, as PyTorch's CUDA arithmetic rounds it, reaches 1/2 goes
 * to r - pi, the float before it stays. */
GST_START_TEST (test_limit_offset_boundary)
{
  P3dcAnchor3dTable table;
  P3dcAnchor3dParams p;
  P3dcAnchor3dMaps maps;
  P3dTestHead head;
  Output o;
  const gfloat pi = (gfloat) G_PI, inverse = 1.0f / pi;
  gfloat r = 1.5f, before;
  guint bin;

  /* the boundary, found with the rule's own float operations */
  while (r * inverse + 0.5f < 1.0f)
    r = nextafterf (r, 2.0f);
  before = nextafterf (r, 0.0f);
  fail_unless (fabs (r - G_PI_2) < 1e-6);
  hand_case (&table, &head, &p, P3DC_ANCHOR3D_OPENPCDET);
  p.dir_limit_offset = 0.5f;
  p3d_test_head_maps (&head, head.data, &maps);
  for (bin = 0; bin < 2; bin++) {
    *p3d_test_head_dir (&head, 1, 1, 1, 0) = bin ? 2.0f : 0.0f;
    /* the raw yaw is delta + 1.5; deltas chosen so it lands exactly */
    *p3d_test_head_box (&head, 1, 6, 1, 0) = before - 1.5f;
    fail_unless ((before - 1.5f) + 1.5f == before);
    run_decode (&p, &table, &maps, &o);
    fail_unless (o.boxes[0].yaw == before + pi * (gfloat) bin,
        "bin %u below the boundary: yaw %.9g for %.9g", bin, o.boxes[0].yaw,
        before);
    output_clear (&o);
    *p3d_test_head_box (&head, 1, 6, 1, 0) = r - 1.5f;
    fail_unless ((r - 1.5f) + 1.5f == r);
    run_decode (&p, &table, &maps, &o);
    fail_unless (o.boxes[0].yaw == (r - pi) + pi * (gfloat) bin,
        "bin %u at the boundary: yaw %.9g for %.9g", bin, o.boxes[0].yaw, r);
    fail_unless (fabs (o.boxes[0].yaw - (bin ? G_PI_2 : -G_PI_2)) < 1e-6);
    output_clear (&o);
  }
  p3d_test_head_clear (&head);
  p3dc_anchor3d_table_clear (&table);
}

GST_END_TEST;

/* ---- oracles: the lists by brute force ---- */

typedef struct
{
  gfloat score;
  guint32 anchor;
  gint32 label;
} Pick;

/* The boxes of @picks (in order), greedy NMS with the shared overlap
 * tests, at most @limit, appended to @boxes. */
static guint32
oracle_nms (const P3dcAnchor3dParams * p, const P3dcAnchor3dTable * t,
    const P3dcAnchor3dMaps * maps, const Pick * picks, guint32 n,
    guint32 limit, P3dcBox3d * boxes)
{
  P3dcBox3d *decoded = g_new (P3dcBox3d, n + 1);
  P3dcA3Rect *rects = g_new (P3dcA3Rect, n + 1);
  guint32 *kept = g_new (guint32, n + 1);
  guint32 valid = 0, count = 0, i, j;

  for (i = 0; i < n; i++) {
    guint32 a = picks[i].anchor, k = a % t->n_anchors;
    guint32 cell = a / t->n_anchors, y = cell / t->width, x = cell % t->width;
    gfloat raw, velocity[2];

    if (p3dc_a3_decode_box (p, &t->shapes[k], t->x[k * t->width + x],
            t->y[k * t->height + y], maps, k, y, x, picks[i].score,
            picks[i].label, &decoded[valid], &raw, velocity)) {
      p3dc_a3_nms_rect (p, &decoded[valid], raw, &rects[valid]);
      valid++;
    }
  }
  for (i = 0; i < valid && count < limit; i++) {
    gboolean suppressed = FALSE;

    /* without a NMS every box is kept */
    for (j = 0; j < count && !suppressed && p->nms != P3DC_ANCHOR3D_NMS_NONE;
        j++)
      suppressed = p3dc_a3_suppresses (p->nms, p->nms_threshold,
          &rects[kept[j]], &rects[i]);
    if (!suppressed) {
      kept[count] = i;
      boxes[count++] = decoded[i];
    }
  }
  g_free (decoded);
  g_free (rects);
  g_free (kept);
  return count;
}

/* The @want best of the (anchor, score) pairs that @score_of gives, by
 * repeated passes: higher score first, then lower anchor. */
typedef gfloat (*ScoreOf) (const P3dcAnchor3dParams * p,
    const P3dcAnchor3dTable * t, const P3dcAnchor3dMaps * maps, guint32 a,
    guint32 list, gint32 * label);

static gfloat
best_of (const P3dcAnchor3dParams * p, const P3dcAnchor3dTable * t,
    const P3dcAnchor3dMaps * maps, guint32 a, guint32 list, gint32 * label)
{
  guint32 k = a % t->n_anchors, cell = a / t->n_anchors, c;
  gfloat best = -1.0f;

  (void) list;
  for (c = 0; c < p->num_classes; c++) {
    gfloat s = p3dc_cp_sigmoid (p3dc_cp_read (&maps->cls,
            k * p->num_classes + c, cell / t->width, cell % t->width));

    if (isnan (s))
      return NAN;
    if (s > best) {
      best = s;
      *label = (gint32) c;
    }
  }
  return best;
}

static gfloat
class_of (const P3dcAnchor3dParams * p, const P3dcAnchor3dTable * t,
    const P3dcAnchor3dMaps * maps, guint32 a, guint32 list, gint32 * label)
{
  guint32 k = a % t->n_anchors, cell = a / t->n_anchors;

  *label = (gint32) list;
  return p3dc_cp_sigmoid (p3dc_cp_read (&maps->cls, k * p->num_classes + list,
          cell / t->width, cell % t->width));
}

static gboolean
passes (const P3dcAnchor3dParams * p, gfloat s)
{
  return p->rules == P3DC_ANCHOR3D_MMDET3D ? s > p->score_threshold :
      s >= p->score_threshold;
}

static guint32
oracle_topk (const P3dcAnchor3dParams * p, const P3dcAnchor3dTable * t,
    const P3dcAnchor3dMaps * maps, ScoreOf score_of, guint32 list,
    guint32 want, Pick * picks)
{
  guint32 total = t->height * t->width * t->n_anchors, a, n;
  gboolean *taken = g_new0 (gboolean, total);

  for (n = 0; n < want; n++) {
    gint64 best = -1;
    gfloat best_score = 0.0f;
    gint32 best_label = 0;

    for (a = 0; a < total; a++) {
      gint32 label = 0;
      gfloat s = score_of (p, t, maps, a, list, &label);

      if (!taken[a] && passes (p, s) && (best < 0 || s > best_score)) {
        best = a;
        best_score = s;
        best_label = label;
      }
    }
    if (best < 0)
      break;
    taken[best] = TRUE;
    picks[n].score = best_score;
    picks[n].anchor = (guint32) best;
    picks[n].label = best_label;
  }
  g_free (taken);
  return n;
}

/* OpenPCDet: a list per class or one; mmdetection3d: the nms_pre best,
 * then per class in score order (ties by rank), then max_num by score. */
static guint32
oracle (const P3dcAnchor3dParams * p, const P3dcAnchor3dTable * t,
    const P3dcAnchor3dMaps * maps, P3dcBox3d * out)
{
  Pick *picks = g_new (Pick, p->pre_max), *list = g_new (Pick, p->pre_max);
  P3dcBox3d *all = g_new (P3dcBox3d, p->num_classes * p->pre_max + 1);
  guint32 total = 0, l, n, i, j;

  if (p->rules == P3DC_ANCHOR3D_OPENPCDET) {
    for (l = 0; l < (p->per_class ? p->num_classes : 1); l++) {
      n = oracle_topk (p, t, maps, p->per_class ? class_of : best_of, l,
          p->pre_max, picks);
      total += oracle_nms (p, t, maps, picks, n, p->post_max, all + total);
    }
  } else {
    guint32 n_pre = oracle_topk (p, t, maps, best_of, 0, p->pre_max, picks);

    for (l = 0; l < p->num_classes; l++) {
      n = 0;
      for (i = 0; i < n_pre; i++) {
        gint32 label;
        gfloat s = class_of (p, t, maps, picks[i].anchor, l, &label);

        if (passes (p, s)) {
          /* insertion, after the equal scores: stable by rank */
          for (j = n; j > 0 && list[j - 1].score < s; j--)
            list[j] = list[j - 1];
          list[j].score = s;
          list[j].anchor = picks[i].anchor;
          list[j].label = label;
          n++;
        }
      }
      /* no limit per class: max_num applies to all of them */
      total += oracle_nms (p, t, maps, list, n, G_MAXUINT32, all + total);
    }
    if (total > p->post_max) {
      /* a stable insertion sort by score */
      for (i = 1; i < total; i++) {
        P3dcBox3d b = all[i];

        for (j = i; j > 0 && all[j - 1].score < b.score; j--)
          all[j] = all[j - 1];
        all[j] = b;
      }
      total = p->post_max;
    }
  }
  memcpy (out, all, sizeof (P3dcBox3d) * total);
  g_free (picks);
  g_free (list);
  g_free (all);
  return total;
}

static void
check_against_oracle (const P3dcAnchor3dParams * p,
    const P3dcAnchor3dTable * t, const P3dcAnchor3dMaps * maps,
    const gchar * what, guint32 min_boxes)
{
  P3dcBox3d *want = g_new (P3dcBox3d, p->num_classes * p->pre_max + 1);
  guint32 n = oracle (p, t, maps, want), i;
  Output o;

  run_decode (p, t, maps, &o);
  fail_unless_equals_int (o.count, n);
  fail_unless (n >= min_boxes, "%s: only %u boxes", what, n);
  for (i = 0; i < n; i++)
    if (memcmp (&o.boxes[i], &want[i], sizeof (P3dcBox3d)) != 0)
      fail ("%s: box %u of %u: (%g %g %g %g %g %d), oracle (%g %g %g %g %g "
          "%d)", what, i, n, o.boxes[i].x, o.boxes[i].y, o.boxes[i].z,
          o.boxes[i].yaw, o.boxes[i].score, o.boxes[i].label, want[i].x,
          want[i].y, want[i].z, want[i].yaw, want[i].score, want[i].label);
  for (i = n; i < o.capacity; i++)
    fail_unless (o.boxes[i].x == 0.0f && o.boxes[i].label == 0
        && o.velocity[2 * i] == 0.0f, "%s: record %u not zeroed", what, i);
  output_clear (&o);
  g_free (want);
}

/* KITTI's anchor sets on a 9 x 8 map, random heads with a quarter of the
 * pairs above 0.1, or few distinct logits. */
GST_START_TEST (test_lists_against_oracle)
{
  const guint32 pre_maxes[] = { 4096, 40, 7 };
  guint rules, mode, ties, m;

  for (rules = 0; rules < 2; rules++) {
    for (mode = 0; mode < 4; mode++) {
      for (ties = 0; ties < 2; ties++) {
        for (m = 0; m < G_N_ELEMENTS (pre_maxes); m++) {
          P3dcAnchor3dSet sets[3];
          P3dcAnchor3dTable table;
          P3dcAnchor3dParams p;
          P3dcAnchor3dMaps maps;
          P3dTestHead head;
          P3dTestRng rng;
          gchar *what;
          guint n;

          if (rules == 0) {
            n = p3d_test_anchor3d_openpcdet_kitti (sets);
            p3d_test_anchor3d_openpcdet_params (&p);
            p.per_class = mode == 1;
            p.nms = mode == 2 ? P3DC_ANCHOR3D_NMS_ALIGNED : mode == 3 ?
                P3DC_ANCHOR3D_NMS_NONE : P3DC_ANCHOR3D_NMS_ROTATED_MMCV;
            /* post_max above and below what the lists keep */
            p.post_max = m == 0 ? 500 : 30;
          } else {
            n = p3d_test_anchor3d_mmdet3d_kitti (sets);
            p3d_test_anchor3d_mmdet3d_params (&p);
            p.nms = mode == 2 ? P3DC_ANCHOR3D_NMS_ALIGNED : mode == 3 ?
                P3DC_ANCHOR3D_NMS_NONE : P3DC_ANCHOR3D_NMS_ROTATED;
            /* max_num below and above what the lists keep */
            p.post_max = mode == 1 ? 1000 : 25;
          }
          p.pre_max = pre_maxes[m];
          /* locations ten metres apart: a location's six anchors
           * overlap each other */
          fail_unless_equals_int (p3dc_anchor3d_table_init (&table, sets, n,
                  9, 8), P3DC_OK);
          p.nms_threshold = 0.1f;
          p3d_test_head_init (&head, &p, &table);
          p3d_test_rng_init (&rng, 100 * rules + 10 * mode + 3 * ties + m);
          p3d_test_head_fill (&head, &rng, 0.25, ties);
          p3d_test_head_maps (&head, head.data, &maps);
          what = g_strdup_printf ("rules %u mode %u ties %u pre-max %u",
              rules, mode, ties, p.pre_max);
          check_against_oracle (&p, &table, &maps, what, MIN (p.pre_max, 5));
          g_free (what);
          p3d_test_head_clear (&head);
          p3dc_anchor3d_table_clear (&table);
        }
      }
    }
  }
}

GST_END_TEST;

/* Non-finite inputs: a NaN class logit drops its anchor from the
 * class-agnostic list (and only that class from a per-class one), an
 * infinite delta drops its box, a NaN direction logit wins its bin. */
GST_START_TEST (test_non_finite)
{
  P3dcAnchor3dTable table;
  P3dcAnchor3dParams p;
  P3dcAnchor3dMaps maps;
  P3dTestHead head;
  Output o;

  hand_case (&table, &head, &p, P3DC_ANCHOR3D_OPENPCDET);
  p3d_test_head_maps (&head, head.data, &maps);
  *p3d_test_head_cls (&head, 1, 0, 1, 0) = NAN;
  run_decode (&p, &table, &maps, &o);
  fail_unless_equals_int (o.count, 0);
  output_clear (&o);
  p.per_class = 1;
  run_decode (&p, &table, &maps, &o);
  fail_unless_equals_int (o.count, 1);
  fail_unless_equals_int (o.boxes[0].label, 1);
  output_clear (&o);
  *p3d_test_head_cls (&head, 1, 0, 1, 0) = 0.0f;
  *p3d_test_head_dir (&head, 1, 1, 1, 0) = NAN;
  run_decode (&p, &table, &maps, &o);
  fail_unless_equals_int (o.count, 2);
  fail_unless (fabs (o.boxes[0].yaw - (1.8 + G_PI)) < 1e-6);
  output_clear (&o);
  *p3d_test_head_box (&head, 1, 3, 1, 0) = INFINITY;
  run_decode (&p, &table, &maps, &o);
  fail_unless_equals_int (o.count, 0);
  output_clear (&o);
  *p3d_test_head_box (&head, 1, 3, 1, 0) = 100.0f;      /* exp overflows */
  run_decode (&p, &table, &maps, &o);
  fail_unless_equals_int (o.count, 0);
  output_clear (&o);
  p3d_test_head_clear (&head);
  p3dc_anchor3d_table_clear (&table);
}

GST_END_TEST;

/* The same values through F16 channels-last views (pixels padded to a
 * multiple of 8 channels, as the conv net stores them): the same boxes. */
GST_START_TEST (test_half_nhwc_views)
{
  guint rules;

  for (rules = 0; rules < 2; rules++) {
    P3dcAnchor3dSet sets[3];
    P3dcAnchor3dTable table;
    P3dcAnchor3dParams p;
    P3dcAnchor3dMaps maps, half_maps;
    P3dTestHead head;
    P3dTestRng rng;
    guint16 *nhwc;
    guint32 stride;
    Output a, b;
    guint n;

    if (rules == 0) {
      n = p3d_test_anchor3d_openpcdet_kitti (sets);
      p3d_test_anchor3d_openpcdet_params (&p);
    } else {
      n = p3d_test_anchor3d_mmdet3d_kitti (sets);
      p3d_test_anchor3d_mmdet3d_params (&p);
    }
    p.code_size = 9;
    fail_unless_equals_int (p3dc_anchor3d_table_init (&table, sets, n, 12,
            10), P3DC_OK);
    p3d_test_head_init (&head, &p, &table);
    p3d_test_rng_init (&rng, 5 + rules);
    p3d_test_head_fill (&head, &rng, 0.1, FALSE);
    stride = (p3d_test_head_channels (&head) + 7) / 8 * 8;
    nhwc = p3d_test_head_to_nhwc (&head, stride);
    p3d_test_head_maps (&head, head.data, &maps);
    p3d_test_head_maps_nhwc (&head, nhwc, stride, &half_maps);
    run_decode (&p, &table, &maps, &a);
    run_decode (&p, &table, &half_maps, &b);
    fail_unless (a.count > 5);
    fail_unless_equals_int (a.count, b.count);
    fail_unless (memcmp (a.boxes, b.boxes, sizeof (P3dcBox3d) * a.capacity)
        == 0);
    fail_unless (memcmp (a.velocity, b.velocity,
            sizeof (gfloat) * 2 * a.capacity) == 0);
    fail_unless (a.velocity[0] != 0.0f || a.velocity[1] != 0.0f);
    output_clear (&a);
    output_clear (&b);
    g_free (nhwc);
    p3d_test_head_clear (&head);
    p3dc_anchor3d_table_clear (&table);
  }
}

GST_END_TEST;

GST_START_TEST (test_invalid_arguments)
{
  P3dcAnchor3dTable table;
  P3dcAnchor3dParams p;
  P3dcAnchor3dMaps maps;
  P3dcAnchor3dOutput out;
  P3dTestHead head;
  P3dcBox3d boxes[10];
  guint32 count;

  hand_case (&table, &head, &p, P3DC_ANCHOR3D_OPENPCDET);
  p3d_test_head_maps (&head, head.data, &maps);
  out.boxes = boxes;
  out.count = &count;
  out.velocity = NULL;
  fail_unless_equals_int (p3dc_anchor3d_decode_cpu (&p, &table, &maps, &out),
      P3DC_OK);
  fail_unless_equals_int (count, 1);
  fail_unless_equals_int (p3dc_anchor3d_decode_cpu (&p, &table, NULL, &out),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_anchor3d_decode_cpu (&p, NULL, &maps, &out),
      P3DC_ERROR_INVALID_ARGUMENT);
  maps.dir.data = NULL;
  fail_unless_equals_int (p3dc_anchor3d_decode_cpu (&p, &table, &maps, &out),
      P3DC_ERROR_INVALID_ARGUMENT);
  p.dir_bins = 0;
  fail_unless_equals_int (p3dc_anchor3d_decode_cpu (&p, &table, &maps, &out),
      P3DC_OK);
  out.count = NULL;
  fail_unless_equals_int (p3dc_anchor3d_decode_cpu (&p, &table, &maps, &out),
      P3DC_ERROR_INVALID_ARGUMENT);
  p3d_test_head_clear (&head);
  p3dc_anchor3d_table_clear (&table);
}

GST_END_TEST;

static Suite *
anchor3d_decode_suite (void)
{
  Suite *s = suite_create ("anchor3d_decode");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_table);
  tcase_add_test (tc, test_params);
  tcase_add_test (tc, test_hand_worked_anchor);
  tcase_add_test (tc, test_limit_offset_boundary);
  tcase_add_test (tc, test_lists_against_oracle);
  tcase_add_test (tc, test_non_finite);
  tcase_add_test (tc, test_half_nhwc_views);
  tcase_add_test (tc, test_invalid_arguments);
  return s;
}

P3D_CHECK_MAIN (anchor3d_decode);
