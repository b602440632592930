/* The nms reference (p3dc_nms_cpu) against an oracle written here from the
 * definition, independently of box_overlap.h: a brute-force greedy NMS in
 * double precision, whose rotated intersection collects the corners inside
 * the other box and the edge crossings and sorts them by angle (the
 * reference clips polygons instead).  Plus the overlap functions against
 * cases worked out by hand.
 *
 * The reference works in float and the oracle in double, so a pair whose
 * overlap lies within a hair of the threshold may be decided differently by
 * the two; the oracle reports such near-ties and the random tests skip the
 * sets where one occurred (a few per cent; the test fails if too many are
 * skipped).  The boundary tests place pairs exactly at the threshold and at
 * +-1e-6 from it with coordinates for which the float computation is exact
 * (or, rotated with a yaw, within 1e-7), so there the two must agree to the
 * bit: 1e-6 is 16 ulp of 0.5, and 4 to 5 ulp of 25 (circle). */
#include <math.h>
#include <gst/check/gstcheck.h>

#include "box_overlap.h"
#include "nms-private.h"
#include "nms.h"
#include "nms_item.h"
#include "p3dtest-nmscases.h"
#include "p3dtest.h"

/* ---- the oracle ---- */

typedef struct
{
  double x, y;
} Point;

static double
cross (Point o, Point a, Point b)
{
  return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
}

static void
oracle_corners (const P3dcBox3d * b, Point corners[4])
{
  static const double sx[4] = { 1, -1, -1, 1 }, sy[4] = { 1, 1, -1, -1 };
  double c = cos ((double) b->yaw), s = sin ((double) b->yaw);
  int k;

  for (k = 0; k < 4; k++) {
    double lx = sx[k] * 0.5 * b->dx, ly = sy[k] * 0.5 * b->dy;

    corners[k].x = b->x + lx * c - ly * s;
    corners[k].y = b->y + lx * s + ly * c;
  }
}

/* Inside or on the boundary of the counter-clockwise quadrilateral @q. */
static gboolean
oracle_inside (Point p, const Point q[4])
{
  int k;

  for (k = 0; k < 4; k++)
    if (cross (q[k], q[(k + 1) % 4], p) < -1e-12)
      return FALSE;
  return TRUE;
}

static double
oracle_rotated_intersection (const P3dcBox3d * a, const P3dcBox3d * b)
{
  Point pa[4], pb[4], pts[24], centre = { 0, 0 };
  double angles[24], area = 0;
  int n = 0, i, j;

  oracle_corners (a, pa);
  oracle_corners (b, pb);
  for (i = 0; i < 4; i++) {
    if (oracle_inside (pa[i], pb))
      pts[n++] = pa[i];
    if (oracle_inside (pb[i], pa))
      pts[n++] = pb[i];
  }
  for (i = 0; i < 4; i++) {
    for (j = 0; j < 4; j++) {
      Point p = pa[i], r, q = pb[j], s;
      double denom, t, u;

      r.x = pa[(i + 1) % 4].x - p.x;
      r.y = pa[(i + 1) % 4].y - p.y;
      s.x = pb[(j + 1) % 4].x - q.x;
      s.y = pb[(j + 1) % 4].y - q.y;
      denom = r.x * s.y - r.y * s.x;
      if (fabs (denom) < 1e-300)
        continue;
      t = ((q.x - p.x) * s.y - (q.y - p.y) * s.x) / denom;
      u = ((q.x - p.x) * r.y - (q.y - p.y) * r.x) / denom;
      if (t >= 0 && t <= 1 && u >= 0 && u <= 1) {
        pts[n].x = p.x + t * r.x;
        pts[n].y = p.y + t * r.y;
        n++;
      }
    }
  }
  if (n < 3)
    return 0;
  for (i = 0; i < n; i++) {
    centre.x += pts[i].x / n;
    centre.y += pts[i].y / n;
  }
  for (i = 0; i < n; i++)
    angles[i] = atan2 (pts[i].y - centre.y, pts[i].x - centre.x);
  /* insertion sort by angle */
  for (i = 1; i < n; i++) {
    Point p = pts[i];
    double angle = angles[i];

    for (j = i - 1; j >= 0 && angles[j] > angle; j--) {
      pts[j + 1] = pts[j];
      angles[j + 1] = angles[j];
    }
    pts[j + 1] = p;
    angles[j + 1] = angle;
  }
  for (i = 0; i < n; i++) {
    Point p = pts[i], q = pts[(i + 1) % n];

    area += (p.x - centre.x) * (q.y - centre.y)
        - (q.x - centre.x) * (p.y - centre.y);
  }
  return 0.5 * fabs (area);
}

static double
oracle_ratio (double inter, double area_a, double area_b)
{
  if (area_a <= 0 || area_b <= 0 || inter <= 0)
    return 0;
  return inter / (area_a + area_b - inter);
}

static double
oracle_rotated_iou (const P3dcBox3d * a, const P3dcBox3d * b)
{
  return oracle_ratio (oracle_rotated_intersection (a, b),
      (double) a->dx * a->dy, (double) b->dx * b->dy);
}

static double
oracle_aligned_iou (double ax1, double ay1, double ax2, double ay2,
    double bx1, double by1, double bx2, double by2, double offset)
{
  double w = MIN (ax2, bx2) - MAX (ax1, bx1) + offset;
  double h = MIN (ay2, by2) - MAX (ay1, by1) + offset;

  if (w <= 0 || h <= 0)
    return 0;
  return oracle_ratio (w * h, (ax2 - ax1 + offset) * (ay2 - ay1 + offset),
      (bx2 - bx1 + offset) * (by2 - by1 + offset));
}

static gboolean
oracle_valid (P3dcNmsMode mode, gconstpointer record)
{
  if (mode == P3DC_NMS_IOU) {
    const P3dcBox2d *b = record;

    return isfinite (b->x1) && isfinite (b->y1) && isfinite (b->x2)
        && isfinite (b->y2) && isfinite (b->score) && b->x2 >= b->x1
        && b->y2 >= b->y1;
  } else {
    const P3dcBox3d *b = record;

    return isfinite (b->x) && isfinite (b->y) && isfinite (b->z)
        && isfinite (b->dx) && isfinite (b->dy) && isfinite (b->dz)
        && isfinite (b->yaw) && isfinite (b->score) && b->dx >= 0
        && b->dy >= 0 && b->dz >= 0;
  }
}

typedef struct
{
  double score;
  guint index;
} OracleEntry;

static gint
oracle_compare (gconstpointer pa, gconstpointer pb)
{
  const OracleEntry *a = pa, *b = pb;

  /* -0.0 == +0.0 in double as in float */
  if (a->score != b->score)
    return a->score > b->score ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

/* Returns the kept input indices (up to min (post_max, out_capacity)) and
 * counts in *near_ties the candidates whose fate hung on a pair within @eps
 * of the threshold (relative for circle); a negative @eps counts none. */
static GArray *
oracle_nms (const P3dcNmsParams * p, gconstpointer boxes, guint n,
    guint out_capacity, double eps, guint * near_ties)
{
  gsize record_size = p3dc_nms_record_size (p->mode);
  GArray *kept = g_array_new (FALSE, FALSE, sizeof (guint));
  OracleEntry *entries = g_new (OracleEntry, MAX (n, 1));
  guint n_entries = 0, i, j, limit = out_capacity;
  double radius2 = (double) p->distance_threshold * p->distance_threshold;

  *near_ties = 0;
  if (p->post_max > 0 && p->post_max < limit)
    limit = p->post_max;
  for (i = 0; i < n; i++) {
    gconstpointer record = (const guint8 *) boxes + i * record_size;
    float score;

    memcpy (&score, (const guint8 *) record + record_size - 8, 4);
    if (!oracle_valid (p->mode, record) || score < p->score_threshold)
      continue;
    entries[n_entries].score = score;
    entries[n_entries].index = i;
    n_entries++;
  }
  qsort (entries, n_entries, sizeof *entries, oracle_compare);
  if (p->pre_max > 0 && p->pre_max < n_entries)
    n_entries = p->pre_max;

  for (j = 0; j < n_entries && kept->len < limit; j++) {
    gboolean suppressed = FALSE, near_tie = FALSE;

    for (i = 0; i < kept->len && !suppressed; i++) {
      guint ka = g_array_index (kept, guint, i), kb = entries[j].index;
      double value, margin;
      gboolean over;

      if (p->mode == P3DC_NMS_IOU) {
        const P3dcBox2d *a = (const P3dcBox2d *) boxes + ka;
        const P3dcBox2d *b = (const P3dcBox2d *) boxes + kb;

        if (p->per_class && a->label != b->label)
          continue;
        value = oracle_aligned_iou (a->x1, a->y1, a->x2, a->y2, b->x1, b->y1,
            b->x2, b->y2, p->offset);
      } else {
        const P3dcBox3d *a = (const P3dcBox3d *) boxes + ka;
        const P3dcBox3d *b = (const P3dcBox3d *) boxes + kb;

        if (p->per_class && a->label != b->label)
          continue;
        if (p->mode == P3DC_NMS_BEV_ROTATED) {
          value = oracle_rotated_iou (a, b);
        } else if (p->mode == P3DC_NMS_BEV_ALIGNED) {
          value = oracle_aligned_iou (a->x - 0.5 * a->dx, a->y - 0.5 * a->dy,
              a->x + 0.5 * a->dx, a->y + 0.5 * a->dy, b->x - 0.5 * b->dx,
              b->y - 0.5 * b->dy, b->x + 0.5 * b->dx, b->y + 0.5 * b->dy, 0);
        } else {
          double dx = (double) b->x - a->x, dy = (double) b->y - a->y;

          value = dx * dx + dy * dy;
        }
      }
      if (p->mode == P3DC_NMS_CIRCLE) {
        over = value < radius2;
        margin = fabs (value - radius2) / MAX (radius2, 1e-30);
      } else {
        over = value > p->iou_threshold;
        margin = fabs (value - p->iou_threshold);
      }
      if (margin <= eps)
        near_tie = TRUE;
      else if (over)
        suppressed = TRUE;
    }
    if (!suppressed && near_tie)
      (*near_ties)++;
    if (!suppressed)
      g_array_append_val (kept, entries[j].index);
  }
  g_free (entries);
  return kept;
}

/* ---- running the reference ---- */

typedef struct
{
  guint count;
  gint32 *kept_index;
  guint8 *out;
} NmsRun;

static void
run_reference (const P3dcNmsParams * params, gconstpointer boxes, guint n,
    guint out_capacity, NmsRun * run)
{
  gsize record_size = p3dc_nms_record_size (params->mode);
  guint32 count = 0xdeadbeef;

  /* garbage in the outputs, to see that all of them are written */
  run->out = g_malloc (MAX (out_capacity, 1) * record_size);
  memset (run->out, 0xab, MAX (out_capacity, 1) * record_size);
  run->kept_index = g_new (gint32, MAX (out_capacity, 1));
  memset (run->kept_index, 0xab, MAX (out_capacity, 1) * sizeof (gint32));
  fail_unless_equals_int (p3dc_nms_cpu (params, boxes, n, run->out,
          out_capacity, &count, run->kept_index), P3DC_OK);
  run->count = count;
}

static void
run_clear (NmsRun * run)
{
  g_free (run->out);
  g_free (run->kept_index);
}

/* The outputs are the kept input records, zeros after them, -1 indices. */
static void
check_outputs (const gchar * what, const P3dcNmsParams * params,
    gconstpointer boxes, guint out_capacity, const NmsRun * run)
{
  gsize record_size = p3dc_nms_record_size (params->mode);
  guint i;

  fail_unless (run->count <= out_capacity, "%s: count %u > capacity %u",
      what, run->count, out_capacity);
  for (i = 0; i < out_capacity; i++) {
    const guint8 *record = run->out + i * record_size;

    if (i < run->count) {
      fail_unless (memcmp (record, (const guint8 *) boxes +
              run->kept_index[i] * record_size, record_size) == 0,
          "%s: output record %u is not input record %d", what, i,
          run->kept_index[i]);
    } else {
      guint b;

      for (b = 0; b < record_size; b++)
        fail_unless (record[b] == 0, "%s: output record %u not zeroed",
            what, i);
      fail_unless_equals_int (run->kept_index[i], -1);
    }
  }
}

static gchar *
describe_box (const P3dcNmsParams * params, gconstpointer boxes, gint index)
{
  if (index < 0)
    return g_strdup ("(none)");
  if (params->mode == P3DC_NMS_IOU) {
    const P3dcBox2d *b = (const P3dcBox2d *) boxes + index;

    return g_strdup_printf ("#%d (%.9g %.9g %.9g %.9g score %.9g label %d)",
        index, b->x1, b->y1, b->x2, b->y2, b->score, b->label);
  } else {
    const P3dcBox3d *b = (const P3dcBox3d *) boxes + index;

    return g_strdup_printf ("#%d (%.9g %.9g %.9g size %.9g %.9g %.9g yaw "
        "%.9g score %.9g label %d)", index, b->x, b->y, b->z, b->dx, b->dy,
        b->dz, b->yaw, b->score, b->label);
  }
}

/* Reference against oracle; returns FALSE (and checks nothing) when the
 * oracle met a near-tie. */
static gboolean
check_against_oracle (const gchar * what, const P3dcNmsParams * params,
    gconstpointer boxes, guint n, guint out_capacity, double eps)
{
  guint near_ties, i;
  GArray *expected = oracle_nms (params, boxes, n, out_capacity, eps,
      &near_ties);
  NmsRun run;

  if (near_ties > 0) {
    g_array_free (expected, TRUE);
    return FALSE;
  }
  run_reference (params, boxes, n, out_capacity, &run);
  check_outputs (what, params, boxes, out_capacity, &run);
  for (i = 0; i < MIN (run.count, expected->len); i++) {
    gint want = g_array_index (expected, guint, i);

    if (run.kept_index[i] != want) {
      gchar *a = describe_box (params, boxes, run.kept_index[i]);
      gchar *b = describe_box (params, boxes, want);

      fail ("%s: kept box %u differs: reference %s, oracle %s", what, i, a, b);
      g_free (a);
      g_free (b);
    }
  }
  fail_unless (run.count == expected->len,
      "%s: reference keeps %u boxes, oracle %u", what, run.count,
      expected->len);
  g_array_free (expected, TRUE);
  run_clear (&run);
  return TRUE;
}

/* ---- the overlap functions ---- */

static P3dcBox3d
box3d (float x, float y, float dx, float dy, float yaw)
{
  P3dcBox3d b = { x, y, 0.0f, dx, dy, 1.0f, yaw, 1.0f, 0 };

  return b;
}

GST_START_TEST (test_sincos_accuracy)
{
  double worst = 0;
  int i;

  for (i = -160000; i <= 160000; i++) {
    float angle = i * 4e-4f, s, c;

    p3dc_sincos (angle, &s, &c);
    worst = MAX (worst, fabs (s - sin ((double) angle)));
    worst = MAX (worst, fabs (c - cos ((double) angle)));
  }
  fail_unless (worst < 1e-7, "sin/cos error %g on [-64, 64]", worst);
  /* exact where it must be */
  {
    float s, c;

    p3dc_sincos (0.0f, &s, &c);
    fail_unless (s == 0.0f && c == 1.0f);
    p3dc_sincos (1000.0f, &s, &c);
    fail_unless (fabs (s - sin (1000.0)) < 1e-4 && fabs (c - cos (1000.0))
        < 1e-4, "sincos(1000) = %g %g", s, c);
  }
}

GST_END_TEST;

GST_START_TEST (test_rotated_iou_by_hand)
{
  const double root2 = sqrt (2.0);
  const float yaws[] = { 0.0f, 0.7f, -2.5f, 3.1415927f };
  P3dcBox3d a, b;
  P3dcBevRect ra, rb;
  guint i;

  /* unit squares, one turned by 45 degrees: a regular octagon of area
   * 1 - 4 corner triangles with legs 1 - sqrt(2)/2 = 2 sqrt(2) - 2, and
   * IoU (2 sqrt 2 - 2) / (4 - 2 sqrt 2) = 1 / sqrt 2 */
  a = box3d (0, 0, 1, 1, 0);
  b = box3d (0, 0, 1, 1, (float) G_PI_4);
  p3dc_bev_rect_set (&ra, a.x, a.y, a.dx, a.dy, a.yaw);
  p3dc_bev_rect_set (&rb, b.x, b.y, b.dx, b.dy, b.yaw);
  fail_unless (fabs (p3dc_bev_rect_intersection (&ra, &rb) - (2 * root2 - 2))
      < 1e-6, "45 degrees: intersection %g", p3dc_bev_rect_intersection (&ra,
          &rb));
  fail_unless (fabs (p3dc_box3d_bev_rotated_iou (&a, &b) - 1 / root2) < 1e-6);
  fail_unless (fabs (p3dc_box3d_bev_rotated_iou (&b, &a) - 1 / root2) < 1e-6);

  /* touching edges: nothing in common, exactly */
  a = box3d (0, 0, 1, 1, 0);
  b = box3d (1, 0, 1, 1, 0);
  fail_unless (p3dc_box3d_bev_rotated_iou (&a, &b) == 0.0f);
  fail_unless (p3dc_box3d_bev_rotated_iou (&b, &a) == 0.0f);
  /* touching edges in a turned frame, and a corner touching an edge */
  a = box3d (5, -3, 1, 1, 0.3f);
  b = box3d (5 + (float) cos (0.3), -3 + (float) sin (0.3), 1, 1, 0.3f);
  fail_unless (p3dc_box3d_bev_rotated_iou (&a, &b) < 1e-6);
  a = box3d (0, 0, 1, 1, 0);
  b = box3d ((float) (0.5 + root2 / 2), 0, 1, 1, (float) G_PI_4);
  fail_unless (p3dc_box3d_bev_rotated_iou (&a, &b) < 1e-6);

  /* containment: a unit square inside a 4 x 2 box, turned differently */
  a = box3d (10, -5, 4, 2, 0.4f);
  b = box3d (10.1f, -4.9f, 1, 1, 1.1f);
  p3dc_bev_rect_set (&ra, a.x, a.y, a.dx, a.dy, a.yaw);
  p3dc_bev_rect_set (&rb, b.x, b.y, b.dx, b.dy, b.yaw);
  fail_unless (fabs (p3dc_bev_rect_intersection (&ra, &rb) - 1) < 1e-5);
  fail_unless (fabs (p3dc_bev_rect_intersection (&rb, &ra) - 1) < 1e-5);
  fail_unless (fabs (p3dc_box3d_bev_rotated_iou (&a, &b) - 0.125) < 1e-6);

  /* identical boxes: 1 */
  for (i = 0; i < G_N_ELEMENTS (yaws); i++) {
    a = box3d (30.5f, -12.25f, 4.2f, 1.8f, yaws[i]);
    fail_unless (fabs (p3dc_box3d_bev_rotated_iou (&a, &a) - 1) < 1e-6,
        "identical, yaw %g: %.9g", yaws[i], p3dc_box3d_bev_rotated_iou (&a,
            &a));
  }

  /* a 4 x 2 box and the same turned by 90 degrees: a 2 x 2 square in
   * common, IoU 4 / (8 + 8 - 4) */
  for (i = 0; i < G_N_ELEMENTS (yaws); i++) {
    a = box3d (-7, 2, 4, 2, yaws[i]);
    b = box3d (-7, 2, 4, 2, yaws[i] + (float) G_PI_2);
    fail_unless (fabs (p3dc_box3d_bev_rotated_iou (&a, &b) - 1.0 / 3) < 1e-6,
        "90 degrees, yaw %g: %.9g", yaws[i], p3dc_box3d_bev_rotated_iou (&a,
            &b));
  }

  /* far apart, and without area */
  a = box3d (0, 0, 4, 2, 0.2f);
  b = box3d (10, 0, 4, 2, 0.2f);
  fail_unless (p3dc_box3d_bev_rotated_iou (&a, &b) == 0.0f);
  b = box3d (0, 0, 0, 2, 0.2f);
  fail_unless (p3dc_box3d_bev_rotated_iou (&a, &b) == 0.0f);
  fail_unless (p3dc_box3d_bev_rotated_iou (&b, &b) == 0.0f);
}

GST_END_TEST;

GST_START_TEST (test_rotated_iou_random_pairs)
{
  P3dTestRng rng;
  double worst = 0;
  guint i;

  p3d_test_rng_init (&rng, 11);
  for (i = 0; i < 50000; i++) {
    P3dcBox3d a = box3d (p3d_test_rng_uniform (&rng, 0, 70),
        p3d_test_rng_uniform (&rng, -35, 35),
        p3d_test_rng_uniform (&rng, 0.3f, 5),
        p3d_test_rng_uniform (&rng, 0.3f, 3),
        p3d_test_rng_uniform (&rng, -7, 7));
    P3dcBox3d b = box3d (a.x + p3d_test_rng_uniform (&rng, -3, 3),
        a.y + p3d_test_rng_uniform (&rng, -3, 3),
        p3d_test_rng_uniform (&rng, 0.3f, 5),
        p3d_test_rng_uniform (&rng, 0.3f, 3),
        p3d_test_rng_uniform (&rng, -7, 7));
    double expected = oracle_rotated_iou (&a, &b);
    double err = fabs (p3dc_box3d_bev_rotated_iou (&a, &b) - expected);

    if (err > worst)
      worst = err;
    fail_unless (err < 1e-5, "pair %u: IoU %.9g, oracle %.9g", i,
        p3dc_box3d_bev_rotated_iou (&a, &b), expected);
  }
  GST_INFO ("worst rotated IoU error %g", worst);
}

GST_END_TEST;

GST_START_TEST (test_aligned_iou_by_hand)
{
  P3dcBox2d a = { 0, 0, 10, 10, 1, 0 }, b = { 5, 0, 15, 10, 1, 0 };
  P3dcBox2d c = { 0, 0, 9, 9, 1, 0 }, d = { 5, 0, 14, 9, 1, 0 };
  P3dcBox2d flat = { 3, 3, 3, 8, 1, 0 };
  P3dcBox3d e = box3d (0, 0, 4, 2, 0.0f), f = box3d (1, 0, 4, 2, 1.3f);

  fail_unless (fabs (p3dc_box2d_iou (&a, &b, 0) - 1.0 / 3) < 1e-7);
  /* +1 convention: pixels 0..9 and 5..14 share 5 columns of 10 rows */
  fail_unless (fabs (p3dc_box2d_iou (&c, &d, 1) - 1.0 / 3) < 1e-7);
  fail_unless (p3dc_box2d_iou (&a, &a, 0) == 1.0f);
  /* without area: 0, even against itself, 0/0 included */
  fail_unless (p3dc_box2d_iou (&flat, &a, 0) == 0.0f);
  fail_unless (p3dc_box2d_iou (&flat, &flat, 0) == 0.0f);
  /* with the +1, a one-pixel-wide box has an area */
  fail_unless (p3dc_box2d_iou (&flat, &flat, 1) == 1.0f);
  /* bev-aligned ignores the yaw: 3 x 2 in common of 4 x 2 each */
  fail_unless (fabs (p3dc_box3d_bev_aligned_iou (&e, &f) - 6.0 / 10) < 1e-7);
}

GST_END_TEST;

/* ---- nms ---- */

/* A pair with an overlap of exactly @value (float and double alike), the
 * better box first, under thresholds at, just below and just above it. */
static void
check_threshold_pair (const gchar * what, P3dcNmsMode mode, float offset,
    gconstpointer pair, float value, gboolean exact)
{
  const float deltas[] = { 0.0f, -1e-6f, 1e-6f };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (deltas); i++) {
    P3dcNmsParams p;
    NmsRun run;
    guint expected;

    if (deltas[i] == 0.0f && !exact)
      continue;
    nms_cases_params (&p, mode, value + deltas[i]);
    p.offset = offset;
    /* IoU > threshold suppresses; distance < threshold suppresses */
    if (mode == P3DC_NMS_CIRCLE)
      expected = deltas[i] > 0 ? 1 : 2;
    else
      expected = deltas[i] < 0 ? 1 : 2;
    run_reference (&p, pair, 2, 2, &run);
    fail_unless (run.count == expected, "%s, threshold %.9g: %u kept, "
        "expected %u", what, value + deltas[i], run.count, expected);
    fail_unless (check_against_oracle (what, &p, pair, 2, 2, -1.0));
    run_clear (&run);
  }
}

GST_START_TEST (test_threshold_is_strict)
{
  P3dcBox2d iou[2] = { {0, 0, 10, 10, 0.9f, 0}, {0, 0, 10, 20, 0.8f, 0}
  };
  P3dcBox2d iou1[2] = { {0, 0, 9, 9, 0.9f, 0}, {0, 0, 9, 19, 0.8f, 0}
  };
  P3dcBox3d bev[2] = { {0, 0, 0, 4, 2, 1, 1.0f, 0.9f, 0},
  {0, 1, 0, 4, 4, 1, 1.0f, 0.8f, 0}
  };
  P3dcBox3d rot[2] = { {0, 0, 0, 4, 2, 1, 0, 0.9f, 0},
  {0, 1, 0, 4, 4, 1, 0, 0.8f, 0}
  };
  P3dcBox3d circle[2] = { {0, 0, 0, 1, 1, 1, 0, 0.9f, 0},
  {3, 4, 0, 1, 1, 1, 0, 0.8f, 0}
  };
  P3dcBox3d turned[2];

  check_threshold_pair ("iou", P3DC_NMS_IOU, 0, iou, 0.5f, TRUE);
  check_threshold_pair ("iou +1", P3DC_NMS_IOU, 1, iou1, 0.5f, TRUE);
  check_threshold_pair ("bev-aligned", P3DC_NMS_BEV_ALIGNED, 0, bev, 0.5f,
      TRUE);
  check_threshold_pair ("bev-rotated", P3DC_NMS_BEV_ROTATED, 0, rot, 0.5f,
      TRUE);
  check_threshold_pair ("circle", P3DC_NMS_CIRCLE, 0, circle, 5.0f, TRUE);
  /* the rotated pair turned by 0.7 rad about the first centre: the float
   * IoU is 0.5 within 1e-7, so only +-1e-6 is decidable */
  memcpy (turned, rot, sizeof rot);
  turned[0].yaw = turned[1].yaw = 0.7f;
  turned[1].x = (float) -sin (0.7);
  turned[1].y = (float) cos (0.7);
  fail_unless (fabs (p3dc_box3d_bev_rotated_iou (&turned[0], &turned[1])
          - 0.5) < 1e-7);
  check_threshold_pair ("bev-rotated, turned", P3DC_NMS_BEV_ROTATED, 0,
      turned, 0.5f, FALSE);
}

GST_END_TEST;

GST_START_TEST (test_identical_boxes)
{
  const P3dcBox3d car =
      { 12.5f, -3.0f, -1.0f, 4.0f, 1.8f, 1.5f, 0.6f, 0.7f, 2 };
  P3dcBox3d boxes[6];
  P3dcNmsParams p;
  NmsRun run;
  guint i, m;

  for (m = P3DC_NMS_BEV_ROTATED; m <= P3DC_NMS_CIRCLE; m++) {
    /* equal scores: the first in input order survives */
    for (i = 0; i < 6; i++)
      boxes[i] = car;
    nms_cases_params (&p, m, m == P3DC_NMS_CIRCLE ? 1.0f : 0.5f);
    run_reference (&p, boxes, 6, 6, &run);
    fail_unless_equals_int (run.count, 1);
    fail_unless_equals_int (run.kept_index[0], 0);
    check_outputs ("identical", &p, boxes, 6, &run);
    run_clear (&run);
    /* different scores: the best one */
    boxes[4].score = 0.8f;
    run_reference (&p, boxes, 6, 6, &run);
    fail_unless_equals_int (run.count, 1);
    fail_unless_equals_int (run.kept_index[0], 4);
    run_clear (&run);
    /* per class, identical boxes of another label survive */
    boxes[2].label = 5;
    p.per_class = 1;
    run_reference (&p, boxes, 6, 6, &run);
    fail_unless_equals_int (run.count, 2);
    fail_unless_equals_int (run.kept_index[0], 4);
    fail_unless_equals_int (run.kept_index[1], 2);
    run_clear (&run);
  }
}

GST_END_TEST;

GST_START_TEST (test_equal_scores_keep_input_order)
{
  /* far apart boxes: all kept, in score order, ties in input order, -0.0
   * and +0.0 being one score */
  const float scores[] = { 0.5f, 0.0f, 0.9f, -0.0f, 0.5f, 0.0f, -0.25f,
    0.5f
  };
  const gint32 expected[] = { 2, 0, 4, 7, 1, 3, 5, 6 };
  P3dcBox2d boxes[8];
  P3dcBox2d pair[2] = { {0, 0, 10, 10, -0.0f, 0}, {1, 0, 11, 10, 0.0f, 0} };
  P3dcNmsParams p;
  NmsRun run;
  guint i;

  for (i = 0; i < 8; i++) {
    boxes[i].x1 = 100.0f * i;
    boxes[i].y1 = 0;
    boxes[i].x2 = 100.0f * i + 50;
    boxes[i].y2 = 50;
    boxes[i].score = scores[i];
    boxes[i].label = 0;
  }
  nms_cases_params (&p, P3DC_NMS_IOU, 0.5f);
  run_reference (&p, boxes, 8, 8, &run);
  fail_unless_equals_int (run.count, 8);
  for (i = 0; i < 8; i++)
    fail_unless_equals_int (run.kept_index[i], expected[i]);
  run_clear (&run);

  /* overlapping, -0.0 first: it wins as the earlier input */
  run_reference (&p, pair, 2, 2, &run);
  fail_unless_equals_int (run.count, 1);
  fail_unless_equals_int (run.kept_index[0], 0);
  run_clear (&run);
  pair[0].score = 0.0f;
  pair[1].score = -0.0f;
  run_reference (&p, pair, 2, 2, &run);
  fail_unless_equals_int (run.count, 1);
  fail_unless_equals_int (run.kept_index[0], 0);
  run_clear (&run);
}

GST_END_TEST;

GST_START_TEST (test_zero_area_boxes)
{
  /* a flat box inside a normal one, another flat one on top of it, and a
   * normal box overlapping the first: only the last is suppressed */
  P3dcBox3d boxes[4] = {
    {0, 0, 0, 0, 2, 1, 0, 0.9f, 0},
    {0, 0, 0, 4, 2, 1, 0, 0.8f, 0},
    {0, 0, 0, 0, 0, 1, 0, 0.7f, 0},
    {0.1f, 0, 0, 4, 2, 1, 0, 0.6f, 0},
  };
  P3dcBox2d flat[3] = { {5, 5, 5, 9, 0.9f, 0}, {5, 5, 5, 9, 0.8f, 0},
  {0, 0, 10, 10, 0.7f, 0}
  };
  P3dcNmsParams p;
  NmsRun run;
  guint m;

  for (m = P3DC_NMS_BEV_ROTATED; m <= P3DC_NMS_BEV_ALIGNED; m++) {
    nms_cases_params (&p, m, 0.1f);
    run_reference (&p, boxes, 4, 4, &run);
    fail_unless_equals_int (run.count, 3);
    fail_unless_equals_int (run.kept_index[0], 0);
    fail_unless_equals_int (run.kept_index[1], 1);
    fail_unless_equals_int (run.kept_index[2], 2);
    run_clear (&run);
    fail_unless (check_against_oracle ("zero area", &p, boxes, 4, 4, -1.0));
  }
  /* even a threshold of 0 does not let flat boxes suppress */
  nms_cases_params (&p, P3DC_NMS_IOU, 0.0f);
  run_reference (&p, flat, 3, 3, &run);
  fail_unless_equals_int (run.count, 3);
  run_clear (&run);
  /* with the +1 convention they have an area */
  p.offset = 1.0f;
  run_reference (&p, flat, 3, 3, &run);
  fail_unless_equals_int (run.count, 1);
  run_clear (&run);
}

GST_END_TEST;

GST_START_TEST (test_bad_records_dropped)
{
  /* every bad record overlaps the good ones with a better score: it would
   * suppress them if it were not dropped */
  P3dcBox3d boxes[] = {
    {NAN, 0, 0, 4, 2, 1, 0, 0.99f, 0},
    {0, 0, 0, 4, 2, 1, 0, NAN, 0},
    {0, INFINITY, 0, 4, 2, 1, 0, 0.98f, 0},
    {0, 0, NAN, 4, 2, 1, 0, 0.97f, 0},
    {0, 0, 0, -4, 2, 1, 0, 0.96f, 0},
    {0, 0, 0, 4, 2, -1, 0, 0.95f, 0},
    {0, 0, 0, 4, 2, 1, -INFINITY, 0.94f, 0},
    {0, 0, 0, 4, INFINITY, 1, 0, 0.93f, 0},
    {0, 0, 0, 4, 2, 1, 0, INFINITY, 0},
    {0.2f, 0, 0, 4, 2, 1, 0, 0.5f, 0},
    {0, 0, 0, 4, 2, 1, 0, 0.4f, 0},
    {30, 0, 0, 4, 2, 1, 0, 0.3f, 0},
  };
  P3dcBox2d boxes2d[] = {
    {NAN, 0, 10, 10, 0.99f, 0},
    {0, 0, 10, 10, NAN, 0},
    {0, 0, INFINITY, 10, 0.98f, 0},
    {5, 0, 4, 10, 0.97f, 0},
    {0, 5, 10, 4, 0.96f, 0},
    {0, 0, 10, 10, 0.5f, 0},
    {100, 0, 110, 10, 0.3f, 0},
  };
  P3dcNmsParams p;
  NmsRun run;
  guint m;

  for (m = P3DC_NMS_BEV_ROTATED; m <= P3DC_NMS_CIRCLE; m++) {
    nms_cases_params (&p, m, m == P3DC_NMS_CIRCLE ? 1.0f : 0.5f);
    run_reference (&p, boxes, G_N_ELEMENTS (boxes), 4, &run);
    fail_unless_equals_int (run.count, 2);
    fail_unless_equals_int (run.kept_index[0], 9);
    fail_unless_equals_int (run.kept_index[1], 11);
    check_outputs ("bad records", &p, boxes, 4, &run);
    run_clear (&run);
  }
  nms_cases_params (&p, P3DC_NMS_IOU, 0.5f);
  run_reference (&p, boxes2d, G_N_ELEMENTS (boxes2d), 4, &run);
  fail_unless_equals_int (run.count, 2);
  fail_unless_equals_int (run.kept_index[0], 5);
  fail_unless_equals_int (run.kept_index[1], 6);
  run_clear (&run);
}

GST_END_TEST;

GST_START_TEST (test_empty_and_single)
{
  P3dcBox3d one = { 1, 2, 3, 4, 5, 6, 7, 0.5f, 9 };
  P3dcNmsParams p;
  NmsRun run;
  guint32 count = 7;
  guint m;

  for (m = P3DC_NMS_IOU; m <= P3DC_NMS_CIRCLE; m++) {
    nms_cases_params (&p, m, 0.5f);
    /* N = 0, boxes may be NULL */
    run_reference (&p, NULL, 0, 3, &run);
    fail_unless_equals_int (run.count, 0);
    check_outputs ("empty", &p, NULL, 3, &run);
    run_clear (&run);
    /* N = 1 */
    if (m != P3DC_NMS_IOU) {
      run_reference (&p, &one, 1, 3, &run);
      fail_unless_equals_int (run.count, 1);
      fail_unless_equals_int (run.kept_index[0], 0);
      check_outputs ("single", &p, &one, 3, &run);
      run_clear (&run);
    }
  }
  /* no output room: nothing kept, NULL out allowed */
  nms_cases_params (&p, P3DC_NMS_CIRCLE, 1.0f);
  fail_unless_equals_int (p3dc_nms_cpu (&p, &one, 1, NULL, 0, &count, NULL),
      P3DC_OK);
  fail_unless_equals_int (count, 0);
}

GST_END_TEST;

GST_START_TEST (test_limits)
{
  /* ten far-apart boxes, scores descending with the index */
  P3dcBox3d boxes[10];
  P3dcNmsParams p;
  NmsRun run;
  guint i;

  for (i = 0; i < 10; i++)
    boxes[i] = box3d (10.0f * i, 0, 2, 2, 0);
  for (i = 0; i < 10; i++)
    boxes[i].score = 1.0f - 0.05f * i;
  /* a box overlapping #0 with a lower score than all: suppressed */
  boxes[9] = box3d (0.1f, 0, 2, 2, 0);
  boxes[9].score = 0.01f;

  nms_cases_params (&p, P3DC_NMS_BEV_ROTATED, 0.3f);
  p.pre_max = 4;
  run_reference (&p, boxes, 10, 10, &run);
  fail_unless_equals_int (run.count, 4);
  fail_unless_equals_int (run.kept_index[3], 3);
  run_clear (&run);

  p.pre_max = 0;
  p.post_max = 3;
  run_reference (&p, boxes, 10, 10, &run);
  fail_unless_equals_int (run.count, 3);
  check_outputs ("post_max", &p, boxes, 10, &run);
  run_clear (&run);

  /* the output capacity limits too */
  p.post_max = 0;
  run_reference (&p, boxes, 10, 5, &run);
  fail_unless_equals_int (run.count, 5);
  run_clear (&run);
  run_reference (&p, boxes, 10, 10, &run);
  fail_unless_equals_int (run.count, 9);
  run_clear (&run);

  /* score threshold: below is dropped, equal is kept */
  p.score_threshold = boxes[5].score;
  run_reference (&p, boxes, 10, 10, &run);
  fail_unless_equals_int (run.count, 6);
  run_clear (&run);
}

GST_END_TEST;

GST_START_TEST (test_bad_params)
{
  P3dcBox2d box = { 0, 0, 1, 1, 1, 0 };
  P3dcNmsParams p;
  guint32 count;

  nms_cases_params (&p, P3DC_NMS_IOU, NAN);
  fail_unless_equals_int (p3dc_nms_cpu (&p, &box, 1, NULL, 0, &count, NULL),
      P3DC_ERROR_INVALID_ARGUMENT);
  nms_cases_params (&p, P3DC_NMS_IOU, -0.1f);
  fail_unless_equals_int (p3dc_nms_params_check (&p),
      P3DC_ERROR_INVALID_ARGUMENT);
  nms_cases_params (&p, P3DC_NMS_IOU, 0.5f);
  p.offset = 0.5f;
  fail_unless_equals_int (p3dc_nms_params_check (&p),
      P3DC_ERROR_INVALID_ARGUMENT);
  nms_cases_params (&p, P3DC_NMS_CIRCLE, -1.0f);
  fail_unless_equals_int (p3dc_nms_params_check (&p),
      P3DC_ERROR_INVALID_ARGUMENT);
  nms_cases_params (&p, P3DC_NMS_CIRCLE, INFINITY);
  fail_unless_equals_int (p3dc_nms_params_check (&p),
      P3DC_ERROR_INVALID_ARGUMENT);
  nms_cases_params (&p, P3DC_NMS_CIRCLE, 1.0f);
  p.score_threshold = NAN;
  fail_unless_equals_int (p3dc_nms_params_check (&p),
      P3DC_ERROR_INVALID_ARGUMENT);
  nms_cases_params (&p, P3DC_NMS_IOU, 0.5f);
  p.mode = (P3dcNmsMode) 7;
  fail_unless_equals_int (p3dc_nms_params_check (&p),
      P3DC_ERROR_INVALID_ARGUMENT);
  nms_cases_params (&p, P3DC_NMS_BEV_ROTATED, 0.5f);
  p.iou_rule = (P3dcNmsIouRule) 2;
  fail_unless_equals_int (p3dc_nms_params_check (&p),
      P3DC_ERROR_INVALID_ARGUMENT);
  p.iou_rule = P3DC_NMS_IOU_RULE_MMCV;
  fail_unless_equals_int (p3dc_nms_params_check (&p), P3DC_OK);
  nms_cases_params (&p, P3DC_NMS_IOU, 0.5f);
  fail_unless_equals_int (p3dc_nms_params_check (&p), P3DC_OK);
  fail_unless_equals_int (p3dc_nms_cpu (&p, &box, 1, NULL, 0, NULL, NULL),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_nms_cpu (&p, NULL, 1, NULL, 0, &count, NULL),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_nms_cpu (&p, &box, 1, NULL, 1, &count, NULL),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_nms_cpu (NULL, &box, 1, NULL, 0, &count, NULL),
      P3DC_ERROR_INVALID_ARGUMENT);
}

GST_END_TEST;

/* mmcv's rotated rule (box_overlap.h) on the pairs of p3dtest-nmscases.h,
 * against their values worked out by hand, also with the whole scene
 * turned; and the cases where it agrees with the exact rule. */
GST_START_TEST (test_mmcv_iou_by_hand)
{
  P3dcBox3d turned[2], touching[2], flat[2], far[2];
  const float angles[] = { 0.5f, -2.0f, 3.0f };
  guint i;

  fail_unless (p3dc_box3d_bev_rotated_iou (&nms_cases_mmcv_gap[0],
          &nms_cases_mmcv_gap[1]) == 0.0f);
  fail_unless (fabs (p3dc_box3d_bev_rotated_iou_mmcv (&nms_cases_mmcv_gap[0],
              &nms_cases_mmcv_gap[1]) - NMS_CASES_MMCV_GAP_IOU)
      < 1e-3 * NMS_CASES_MMCV_GAP_IOU, "gap: %.9g",
      p3dc_box3d_bev_rotated_iou_mmcv (&nms_cases_mmcv_gap[0],
          &nms_cases_mmcv_gap[1]));
  fail_unless (fabs (p3dc_box3d_bev_rotated_iou (&nms_cases_mmcv_poke[0],
              &nms_cases_mmcv_poke[1]) - NMS_CASES_EXACT_POKE_IOU) < 2e-6);
  fail_unless (fabs (p3dc_box3d_bev_rotated_iou_mmcv (&nms_cases_mmcv_poke[0],
              &nms_cases_mmcv_poke[1]) - NMS_CASES_MMCV_POKE_IOU) < 2e-6,
      "poke: %.9g", p3dc_box3d_bev_rotated_iou_mmcv (&nms_cases_mmcv_poke[0],
          &nms_cases_mmcv_poke[1]));
  /* the same scenes turned: the rule is measured in the boxes' frames */
  for (i = 0; i < G_N_ELEMENTS (angles); i++) {
    nms_cases_turn_pair (nms_cases_mmcv_gap, angles[i], turned);
    fail_unless (fabs (p3dc_box3d_bev_rotated_iou_mmcv (&turned[0],
                &turned[1]) - NMS_CASES_MMCV_GAP_IOU)
        < 2e-2 * NMS_CASES_MMCV_GAP_IOU, "gap turned by %g: %.9g", angles[i],
        p3dc_box3d_bev_rotated_iou_mmcv (&turned[0], &turned[1]));
    nms_cases_turn_pair (nms_cases_mmcv_poke, angles[i], turned);
    fail_unless (fabs (p3dc_box3d_bev_rotated_iou_mmcv (&turned[0],
                &turned[1]) - NMS_CASES_MMCV_POKE_IOU) < 1e-5,
        "poke turned by %g: %.9g", angles[i],
        p3dc_box3d_bev_rotated_iou_mmcv (&turned[0], &turned[1]));
  }
  /* identical boxes: the whole box, every corner counted twice */
  fail_unless (fabs (p3dc_box3d_bev_rotated_iou_mmcv (&nms_cases_mmcv_poke[0],
              &nms_cases_mmcv_poke[0]) - 1.0) < 1e-6);
  /* edge to edge, no gap: the corners meet on one line, no area */
  memcpy (touching, nms_cases_mmcv_gap, sizeof touching);
  touching[1].x = 3.0f;
  fail_unless (p3dc_box3d_bev_rotated_iou_mmcv (&touching[0],
          &touching[1]) == 0.0f);
  /* 2 cm apart: beyond the margin */
  memcpy (far, nms_cases_mmcv_gap, sizeof far);
  far[1].x = 3.02f;
  fail_unless (p3dc_box3d_bev_rotated_iou_mmcv (&far[0], &far[1]) == 0.0f);
  /* a box without area has IoU 0 under both rules */
  memcpy (flat, nms_cases_mmcv_poke, sizeof flat);
  flat[1].dx = 0.0f;
  fail_unless (p3dc_box3d_bev_rotated_iou_mmcv (&flat[0], &flat[1]) == 0.0f);
  fail_unless (p3dc_box3d_bev_rotated_iou_mmcv (&flat[1], &flat[0]) == 0.0f);
}

GST_END_TEST;

/* The pairs of test_mmcv_iou_by_hand through p3dc_nms_cpu: at a threshold
 * between the two rules' IoUs the rules keep different boxes; above both
 * they agree; and the rule only changes bev-rotated. */
GST_START_TEST (test_mmcv_rule_keeps)
{
  const struct
  {
    const gchar *what;
    const P3dcBox3d *pair;
    float threshold;
    guint exact_kept, mmcv_kept;
  } cases[] = {
    {"gap, 0.001", nms_cases_mmcv_gap, 0.001f, 2, 1},
    {"gap, 0.0013", nms_cases_mmcv_gap, 0.0013f, 2, 2},
    {"gap, 0", nms_cases_mmcv_gap, 0.0f, 2, 1},
    {"poke, 0.1427", nms_cases_mmcv_poke, 0.1427f, 2, 1},
    {"poke, 0.1423", nms_cases_mmcv_poke, 0.1423f, 1, 1},
    {"poke, 0.143", nms_cases_mmcv_poke, 0.143f, 2, 2},
  };
  P3dcNmsParams p;
  NmsRun run;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (cases); i++) {
    nms_cases_params (&p, P3DC_NMS_BEV_ROTATED, cases[i].threshold);
    run_reference (&p, cases[i].pair, 2, 2, &run);
    fail_unless (run.count == cases[i].exact_kept, "%s, exact: %u kept",
        cases[i].what, run.count);
    run_clear (&run);
    p.iou_rule = P3DC_NMS_IOU_RULE_MMCV;
    run_reference (&p, cases[i].pair, 2, 2, &run);
    fail_unless (run.count == cases[i].mmcv_kept, "%s, mmcv: %u kept",
        cases[i].what, run.count);
    check_outputs (cases[i].what, &p, cases[i].pair, 2, &run);
    run_clear (&run);
  }
  /* bev-aligned and circle ignore the rule */
  nms_cases_params (&p, P3DC_NMS_BEV_ALIGNED, 0.001f);
  p.iou_rule = P3DC_NMS_IOU_RULE_MMCV;
  run_reference (&p, nms_cases_mmcv_gap, 2, 2, &run);
  fail_unless_equals_int (run.count, 2);
  run_clear (&run);
}

GST_END_TEST;

/* Huge but finite boxes behave as boxes (nms.h): the sets of
 * p3dtest-nmscases.h under every mode and both rules keep what their
 * comments say. */
GST_START_TEST (test_huge_boxes)
{
  P3dcNmsParams p;
  NmsRun run;
  guint m, rule, i;

  for (m = P3DC_NMS_BEV_ROTATED; m <= P3DC_NMS_CIRCLE; m++) {
    for (rule = 0; rule < 2; rule++) {
      nms_cases_params (&p, m, m == P3DC_NMS_CIRCLE ? 1.0f : 0.5f);
      p.iou_rule = rule;
      run_reference (&p, nms_cases_huge3d, 8, 8, &run);
      fail_unless (run.count == G_N_ELEMENTS (nms_cases_huge3d_kept),
          "mode %u, rule %u: %u kept", m, rule, run.count);
      for (i = 0; i < run.count; i++)
        fail_unless (run.kept_index[i] == nms_cases_huge3d_kept[i],
            "mode %u, rule %u: kept %u is %d", m, rule, i, run.kept_index[i]);
      check_outputs ("huge", &p, nms_cases_huge3d, 8, &run);
      run_clear (&run);
    }
  }
  nms_cases_params (&p, P3DC_NMS_IOU, 0.5f);
  run_reference (&p, nms_cases_huge2d, 5, 5, &run);
  fail_unless_equals_int (run.count, G_N_ELEMENTS (nms_cases_huge2d_kept));
  for (i = 0; i < run.count; i++)
    fail_unless_equals_int (run.kept_index[i], nms_cases_huge2d_kept[i]);
  run_clear (&run);

  /* the overlap functions themselves: identical huge boxes have IoU 1 */
  fail_unless (fabs (p3dc_box3d_bev_rotated_iou (&nms_cases_huge3d[0],
              &nms_cases_huge3d[1]) - 1.0) < 1e-6);
  fail_unless (fabs (p3dc_box3d_bev_rotated_iou_mmcv (&nms_cases_huge3d[0],
              &nms_cases_huge3d[1]) - 1.0) < 1e-6);
  fail_unless (p3dc_box3d_bev_aligned_iou (&nms_cases_huge3d[0],
          &nms_cases_huge3d[1]) == 1.0f);
  fail_unless (p3dc_box2d_iou (&nms_cases_huge2d[0], &nms_cases_huge2d[1],
          0) == 1.0f);
  /* far from the origin as at it: bev-aligned and rotated agree */
  fail_unless (p3dc_box3d_bev_aligned_iou (&nms_cases_huge3d[2],
          &nms_cases_huge3d[3]) == 1.0f);
  fail_unless (fabs (p3dc_box3d_bev_rotated_iou (&nms_cases_huge3d[2],
              &nms_cases_huge3d[3]) - 1.0) < 1e-6);
}

GST_END_TEST;

/* An empty frame, and one whose every record is dropped, leave nothing to
 * sort (qsort is not called with a NULL array). */
GST_START_TEST (test_nothing_to_sort)
{
  const P3dcBox3d dropped[2] = {
    {NAN, 0, 0, 4, 2, 1, 0, 0.9f, 0}, {0, 0, 0, 4, 2, 1, 0, 0.1f, 0}
  };
  P3dcNmsParams p;
  NmsRun run;

  nms_cases_params (&p, P3DC_NMS_BEV_ROTATED, 0.5f);
  run_reference (&p, NULL, 0, 2, &run);
  fail_unless_equals_int (run.count, 0);
  check_outputs ("empty", &p, NULL, 2, &run);
  run_clear (&run);
  p.score_threshold = 0.5f;
  run_reference (&p, dropped, 2, 2, &run);
  fail_unless_equals_int (run.count, 0);
  check_outputs ("all dropped", &p, dropped, 2, &run);
  run_clear (&run);
}

GST_END_TEST;

/* Random layouts of every mode against the oracle: dense and sparse scenes,
 * per class or not, with and without limits, bad records, flat boxes,
 * duplicates and tied scores mixed in. */
static void
check_random_sets (P3dcNmsMode mode, guint64 seed, guint n_sets)
{
  const guint sizes[] = { 1, 2, 5, 37, 64, 65, 200, 500 };
  const float iou_thresholds[] = { 0.01f, 0.1f, 0.3f, 0.5f, 0.7f };
  const float distances[] = { 0.5f, 1.0f, 2.0f, 4.0f };
  gsize record_size = p3dc_nms_record_size (mode);
  P3dTestRng rng;
  guint set, checked = 0;

  p3d_test_rng_init (&rng, seed);
  for (set = 0; set < n_sets; set++) {
    guint n = sizes[set % G_N_ELEMENTS (sizes)];
    gpointer boxes = g_malloc (n * record_size);
    guint out_capacity = n;
    P3dcNmsParams p;
    gchar *what;
    double eps;

    if (mode == P3DC_NMS_IOU) {
      nms_cases_objects2d (&rng, boxes, n, 640, 480,
          1 + p3d_test_rng_below (&rng, 8), 1 + p3d_test_rng_below (&rng, 5));
      nms_cases_params (&p, mode, iou_thresholds[p3d_test_rng_below (&rng, 5)]);
      p.offset = (gfloat) p3d_test_rng_below (&rng, 2);
      eps = 1e-5;
    } else {
      nms_cases_objects3d (&rng, boxes, n,
          p3d_test_rng_uniform (&rng, 5, 70), 1 + p3d_test_rng_below (&rng,
              8), 1 + p3d_test_rng_below (&rng, 5));
      if (mode == P3DC_NMS_CIRCLE) {
        nms_cases_params (&p, mode, distances[p3d_test_rng_below (&rng, 4)]);
        eps = 1e-5;
      } else {
        nms_cases_params (&p, mode, iou_thresholds[p3d_test_rng_below (&rng,
                    5)]);
        eps = 1e-4;
      }
    }
    switch (set % 7) {
      case 1:
        p.per_class = 1;
        break;
      case 2:
        p.pre_max = 1 + p3d_test_rng_below (&rng, n);
        p.post_max = 1 + p3d_test_rng_below (&rng, n);
        break;
      case 3:
        nms_cases_tie_scores (&rng, (guint8 *) boxes + record_size - 8,
            record_size, n);
        p.per_class = p3d_test_rng_below (&rng, 2);
        break;
      case 4:
        if (mode == P3DC_NMS_IOU) {
          nms_cases_spoil2d (&rng, boxes, n, 5);
          nms_cases_flatten2d (&rng, boxes, n, 5);
        } else {
          nms_cases_spoil3d (&rng, boxes, n, 5);
          nms_cases_flatten3d (&rng, boxes, n, 5);
        }
        break;
      case 5:
        nms_cases_duplicate (&rng, boxes, record_size, n, 4,
            p3d_test_rng_below (&rng, 2));
        p.score_threshold = 0.4f;
        break;
      case 6:
        out_capacity = p3d_test_rng_below (&rng, n + 1);
        break;
      default:
        break;
    }
    what = g_strdup_printf ("mode %d seed %" G_GUINT64_FORMAT " set %u "
        "(n %u)", mode, seed, set, n);
    if (check_against_oracle (what, &p, boxes, n, out_capacity, eps))
      checked++;
    g_free (what);
    g_free (boxes);
  }
  GST_INFO ("mode %d: %u of %u sets checked (the rest had near-ties)",
      mode, checked, n_sets);
  fail_unless (checked >= n_sets * 8 / 10, "mode %d: only %u of %u sets "
      "were free of near-ties", mode, checked, n_sets);
}

GST_START_TEST (test_random_iou)
{
  check_random_sets (P3DC_NMS_IOU, 1, 160);
}

GST_END_TEST;

GST_START_TEST (test_random_bev_rotated)
{
  check_random_sets (P3DC_NMS_BEV_ROTATED, 2, 160);
}

GST_END_TEST;

GST_START_TEST (test_random_bev_aligned)
{
  check_random_sets (P3DC_NMS_BEV_ALIGNED, 3, 160);
}

GST_END_TEST;

GST_START_TEST (test_random_circle)
{
  check_random_sets (P3DC_NMS_CIRCLE, 4, 160);
}

GST_END_TEST;

GST_START_TEST (test_many_classes)
{
  P3dTestRng rng;
  guint m, round, n = 1000;
  P3dcBox3d *boxes = g_new (P3dcBox3d, n);
  guint checked = 0;

  p3d_test_rng_init (&rng, 5);
  for (round = 0; round < 2; round++) {
    for (m = P3DC_NMS_BEV_ROTATED; m <= P3DC_NMS_CIRCLE; m++) {
      P3dcNmsParams p;

      /* a dense scene, so that most overlaps are between classes */
      nms_cases_objects3d (&rng, boxes, n, 30, 4, 200);
      nms_cases_params (&p, m, m == P3DC_NMS_CIRCLE ? 2.0f : 0.2f);
      p.per_class = 1;
      if (check_against_oracle ("many classes", &p, boxes, n, n,
              m == P3DC_NMS_CIRCLE ? 1e-5 : 1e-4))
        checked++;
    }
  }
  fail_unless (checked >= 4, "only %u of 6 sets free of near-ties", checked);
  g_free (boxes);
}

GST_END_TEST;

/* The payload gather by hand: kept boxes 2 and 0 of three, then the rest
 * of the capacity empty. */
GST_START_TEST (test_gather)
{
  const gint32 kept[4] = { 2, 0, -1, -1 };
  const gfloat velocity[6] = { 1, 2, 3, 4, 5, 6 };
  const gfloat want[8] = { 5, 6, 1, 2, 0, 0, 0, 0 };
  gfloat out[8];

  memset (out, 0xab, sizeof (out));
  fail_unless_equals_int (p3dc_nms_gather_cpu (kept, 4, velocity, 2, out),
      P3DC_OK);
  fail_unless (memcmp (out, want, sizeof (want)) == 0);
  /* one word a box */
  memset (out, 0xab, sizeof (out));
  fail_unless_equals_int (p3dc_nms_gather_cpu (kept, 4, velocity, 1, out),
      P3DC_OK);
  fail_unless (out[0] == 3 && out[1] == 1 && out[2] == 0 && out[3] == 0);
  fail_unless_equals_int (p3dc_nms_gather_cpu (kept, 4, velocity, 0, out),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_nms_gather_cpu (kept, 4, NULL, 2, out),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_nms_gather_cpu (NULL, 0, NULL, 2, NULL),
      P3DC_OK);
}

GST_END_TEST;

/* ---- the grid walk against the quadratic walk ---- */

typedef struct
{
  guint32 key;
  guint32 index;
} BruteEntry;

static gint
brute_compare (gconstpointer a, gconstpointer b)
{
  const BruteEntry *x = a, *y = b;

  if (x->key != y->key)
    return x->key < y->key ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* nms.h's steps with every kept box tested against every candidate, with
 * nms_item.h's own pair test (what p3dc_nms_cpu did before its grid, and
 * what the grid must keep to the box): the kept input indices. */
static guint
brute_force_nms (const P3dcNmsParams * p, gconstpointer boxes, guint n,
    guint capacity, gint32 * kept_index)
{
  BruteEntry *entries = g_new (BruteEntry, MAX (n, 1));
  P3dcNmsItem *items = g_new (P3dcNmsItem, MAX (n, 1));
  guint *kept = g_new (guint, MAX (n, 1));
  guint n_valid = 0, n_items, n_kept = 0, limit = capacity, i, j;
  P3dcNmsPairTest test;

  if (p->post_max > 0 && p->post_max < limit)
    limit = p->post_max;
  for (i = 0; i < n; i++) {
    guint32 key = p3dc_nms_record_key (p->mode, boxes, i,
        p->score_threshold);

    if (key != P3DC_NMS_KEY_DROPPED) {
      entries[n_valid].key = key;
      entries[n_valid].index = i;
      n_valid++;
    }
  }
  qsort (entries, n_valid, sizeof (BruteEntry), brute_compare);
  n_items = p->pre_max > 0 && p->pre_max < n_valid ? p->pre_max : n_valid;
  for (i = 0; i < n_items; i++)
    p3dc_nms_item_set (&items[i], p->mode, boxes, entries[i].index, p->offset);
  p3dc_nms_pair_test_init (&test, p);
  for (j = 0; j < n_items && n_kept < limit; j++) {
    gboolean suppressed = FALSE;

    for (i = 0; i < n_kept && !suppressed; i++)
      suppressed = p3dc_nms_item_suppresses (&test, &items[kept[i]], &items[j]);
    if (!suppressed)
      kept[n_kept++] = j;
  }
  for (i = 0; i < n_kept; i++)
    kept_index[i] = entries[kept[i]].index;
  g_free (entries);
  g_free (items);
  g_free (kept);
  return n_kept;
}

/* A scene to break a grid: boxes of sizes from 1e-6 to 1e20 m (and 0),
 * packed and scattered, touching exactly, duplicated, far from the origin
 * (1e30) and of opposite far signs. */
static void
grid_scene (P3dTestRng * rng, P3dcNmsMode mode, gpointer boxes, guint n)
{
  static const gfloat scales[] = { 0.0f, 1e-6f, 0.01f, 1.0f, 4.0f, 50.0f,
    1e3f, 1e20f
  };
  gfloat extent = p3d_test_rng_uniform (rng, 10.0f, 3000.0f);
  gfloat origin = p3d_test_rng_below (rng, 6) == 0 ? 1e30f : 0.0f;
  guint i;

  for (i = 0; i < n; i++) {
    guint kind = p3d_test_rng_below (rng, 20);
    gfloat size = kind < 15 ? p3d_test_rng_uniform (rng, 0.5f, 5.0f) :
        scales[p3d_test_rng_below (rng, G_N_ELEMENTS (scales))];
    gfloat x = origin + p3d_test_rng_uniform (rng, -extent, extent);
    gfloat y = p3d_test_rng_uniform (rng, -extent, extent);
    gfloat score = p3d_test_rng_uniform (rng, 0.0f, 1.0f);
    gint32 label = (gint32) p3d_test_rng_below (rng, 3);

    if (i > 0 && kind == 16) {
      /* a copy of the one before, or its neighbour edge to edge */
      memcpy ((guint8 *) boxes + i * p3dc_nms_record_size (mode),
          (guint8 *) boxes + (i - 1) * p3dc_nms_record_size (mode),
          p3dc_nms_record_size (mode));
      if (mode == P3DC_NMS_IOU) {
        P3dcBox2d *b = (P3dcBox2d *) boxes + i;
        gfloat w = b->x2 - b->x1;

        b->x1 += w;
        b->x2 += w;
      } else if (p3d_test_rng_below (rng, 2)) {
        P3dcBox3d *b = (P3dcBox3d *) boxes + i;

        b->x += b->dx;
      }
      continue;
    }
    if (kind == 17)
      x = -x;
    if (mode == P3DC_NMS_IOU) {
      P3dcBox2d *b = (P3dcBox2d *) boxes + i;

      b->x1 = x;
      b->y1 = y;
      b->x2 = x + size * p3d_test_rng_uniform (rng, 0.5f, 2.0f);
      b->y2 = y + size * p3d_test_rng_uniform (rng, 0.5f, 2.0f);
      b->score = score;
      b->label = label;
    } else {
      P3dcBox3d *b = (P3dcBox3d *) boxes + i;

      b->x = x;
      b->y = y;
      b->z = 0.0f;
      b->dx = size * p3d_test_rng_uniform (rng, 0.5f, 2.0f);
      b->dy = size * p3d_test_rng_uniform (rng, 0.2f, 1.0f);
      b->dz = 1.5f;
      b->yaw = p3d_test_rng_uniform (rng, -4.0f, 4.0f);
      b->score = score;
      b->label = label;
    }
  }
}

/* Issue 32.12: the reference's greedy walk tests a candidate only against
 * the kept boxes whose cells it meets; it keeps exactly the boxes the
 * quadratic walk keeps, in every mode and rule, per class or not, with
 * limits, on scenes made to break a grid. */
GST_START_TEST (test_grid_walk_is_exact)
{
  static const P3dcNmsMode modes[] = { P3DC_NMS_IOU, P3DC_NMS_BEV_ROTATED,
    P3DC_NMS_BEV_ALIGNED, P3DC_NMS_CIRCLE
  };
  static const guint sizes[] = { 1, 7, 64, 500, 3000 };
  P3dTestRng rng;
  guint set, compared = 0;

  p3d_test_rng_init (&rng, 3212);
  for (set = 0; set < 120; set++) {
    P3dcNmsMode mode = modes[set % G_N_ELEMENTS (modes)];
    guint n = sizes[(set / 4) % G_N_ELEMENTS (sizes)];
    gsize record_size = p3dc_nms_record_size (mode);
    gpointer boxes = g_malloc (n * record_size);
    gint32 *expected = g_new (gint32, n);
    P3dcNmsParams p;
    NmsRun run;
    guint n_expected, capacity = n;

    grid_scene (&rng, mode, boxes, n);
    nms_cases_params (&p, mode, mode == P3DC_NMS_CIRCLE ?
        p3d_test_rng_uniform (&rng, 0.0f, 6.0f) :
        p3d_test_rng_uniform (&rng, 0.0f, 0.8f));
    if (mode == P3DC_NMS_IOU)
      p.offset = (gfloat) p3d_test_rng_below (&rng, 2);
    if (mode == P3DC_NMS_BEV_ROTATED && p3d_test_rng_below (&rng, 2))
      p.iou_rule = P3DC_NMS_IOU_RULE_MMCV;
    p.per_class = p3d_test_rng_below (&rng, 2);
    if (set % 5 == 4) {
      p.pre_max = 1 + p3d_test_rng_below (&rng, n);
      p.post_max = 1 + p3d_test_rng_below (&rng, n);
      capacity = p3d_test_rng_below (&rng, n + 1);
    }
    n_expected = brute_force_nms (&p, boxes, n, capacity, expected);
    run_reference (&p, boxes, n, capacity, &run);
    fail_unless_equals_int (run.count, n_expected);
    if (n_expected > 0)
      fail_unless (memcmp (run.kept_index, expected,
              n_expected * sizeof (gint32)) == 0, "set %u (mode %d, n %u): "
          "the grid keeps other boxes", set, mode, n);
    compared += n;
    run_clear (&run);
    g_free (expected);
    g_free (boxes);
  }
  GST_INFO ("%u boxes in 120 sets, the same boxes kept", compared);
}

GST_END_TEST;

/* 65 536 boxes scattered over 4 km took 14.7 s a frame (every candidate
 * against every kept box): about one pair test per box now. */
GST_START_TEST (test_scattered_boxes_cost)
{
  static const P3dcNmsMode modes[] = { P3DC_NMS_IOU, P3DC_NMS_BEV_ROTATED,
    P3DC_NMS_CIRCLE
  };
  const guint n = 65536;
  P3dTestRng rng;
  guint m;

  p3d_test_rng_init (&rng, 65536);
  for (m = 0; m < G_N_ELEMENTS (modes); m++) {
    gsize record_size = p3dc_nms_record_size (modes[m]);
    gpointer boxes = g_malloc (n * record_size);
    gint32 *kept = g_new (gint32, n);
    guint8 *out = g_malloc (n * record_size);
    guint64 tests = 0;
    guint32 count = 0;
    P3dcNmsParams p;
    guint i;

    for (i = 0; i < n; i++) {
      gfloat x = p3d_test_rng_uniform (&rng, -2000.0f, 2000.0f);
      gfloat y = p3d_test_rng_uniform (&rng, -2000.0f, 2000.0f);
      gfloat score = p3d_test_rng_uniform (&rng, 0.0f, 1.0f);

      if (modes[m] == P3DC_NMS_IOU) {
        P3dcBox2d b = { x, y, x + 4.0f, y + 2.0f, score, 0 };

        ((P3dcBox2d *) boxes)[i] = b;
      } else {
        P3dcBox3d b = { x, y, 0.0f, 4.0f, 2.0f, 1.5f, score, score, 0 };

        ((P3dcBox3d *) boxes)[i] = b;
      }
    }
    nms_cases_params (&p, modes[m], modes[m] == P3DC_NMS_CIRCLE ? 2.0f : 0.2f);
    fail_unless_equals_int (p3dc_nms_cpu_counted (&p, boxes, n, out, n,
            &count, kept, &tests), P3DC_OK);
    GST_INFO ("mode %d: %u kept, %" G_GUINT64_FORMAT " pair tests", modes[m],
        count, tests);
    fail_unless (count > n / 2);
    fail_unless (tests < 8 * (guint64) n, "mode %d: %" G_GUINT64_FORMAT
        " pair tests for %u boxes", modes[m], tests, n);
    g_free (boxes);
    g_free (kept);
    g_free (out);
  }
}

GST_END_TEST;

static Suite *
nms_suite (void)
{
  Suite *s = suite_create ("nms");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_sincos_accuracy);
  tcase_add_test (tc, test_rotated_iou_by_hand);
  tcase_add_test (tc, test_rotated_iou_random_pairs);
  tcase_add_test (tc, test_aligned_iou_by_hand);
  tcase_add_test (tc, test_threshold_is_strict);
  tcase_add_test (tc, test_identical_boxes);
  tcase_add_test (tc, test_equal_scores_keep_input_order);
  tcase_add_test (tc, test_zero_area_boxes);
  tcase_add_test (tc, test_bad_records_dropped);
  tcase_add_test (tc, test_empty_and_single);
  tcase_add_test (tc, test_limits);
  tcase_add_test (tc, test_bad_params);
  tcase_add_test (tc, test_mmcv_iou_by_hand);
  tcase_add_test (tc, test_mmcv_rule_keeps);
  tcase_add_test (tc, test_huge_boxes);
  tcase_add_test (tc, test_nothing_to_sort);
  tcase_add_test (tc, test_random_iou);
  tcase_add_test (tc, test_random_bev_rotated);
  tcase_add_test (tc, test_random_bev_aligned);
  tcase_add_test (tc, test_random_circle);
  tcase_add_test (tc, test_many_classes);
  tcase_add_test (tc, test_gather);
  tcase_add_test (tc, test_grid_walk_is_exact);
  tcase_add_test (tc, test_scattered_boxes_cost);
  return s;
}

P3D_CHECK_MAIN (nms);
