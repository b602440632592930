/* The pillarfeat reference against voxels worked out by hand and against an
 * oracle that computes the features in double from their definition, and
 * its handling of malformed input (see cuda/pillarfeat.h).
 *
 * Tolerance against the oracle, with u = 2^-24 the float32 unit roundoff:
 * x, y, z and i are copies and must be exact.  A mean summed in order over
 * n floats errs by at most (n - 1) u sum |x_i| <= (n - 1) u n M (M: the
 * largest magnitude in the voxel), so by (n - 1) u M after the division,
 * which adds u |mean|; the subtraction adds u (|x| + |mean|): at most
 * (n + 2) u M in all.  A center differs from the double one by the float
 * voxel size and offset (u relative each) and by its multiply and add (u
 * each), at most 4 u S, S being the largest of |coord * size|, |offset|,
 * |center| and M; the subtraction adds 2 u S.  A distance errs by at most
 * 3 u |distance| <= 6 u M.  So every feature is within (n + 6) u S of the
 * oracle, while any real mistake (a point left out of a mean, a center one
 * cell off, a wrong channel) is larger than S / 32 for these inputs. */
#include <math.h>
#include <string.h>
#include <gst/check/gstcheck.h>

#include "half.h"
#include "pillarfeat.h"
#include "p3dtest.h"

#define UNIT_ROUNDOFF (1.0 / 16777216.0)

/* One x-voxels input and room for the x-pillar-features output. */
typedef struct
{
  P3dcPillarFeatParams params;
  double voxel_size[3];
  double range_min[3];
  guint32 grid[3];
  gfloat *voxels;
  guint32 *num_points;
  gint32 *coords;
  guint32 count;
  gpointer features;
  gint32 *out_coords;
  guint32 out_count;
} Case;

static guint32
feature_count (const Case * c)
{
  return p3dc_pillar_feature_count (c->params.features);
}

static gsize
row_floats (const Case * c)
{
  return (gsize) c->params.max_points * c->params.channels;
}

static gsize
feature_values (const Case * c)
{
  return (gsize) c->params.max_voxels * c->params.max_points *
      feature_count (c);
}

/* A case with zeroed tensors and the KITTI PointPillars grid. */
static Case *
case_new (P3dcPillarFeatureSet set, gboolean half, guint32 channels,
    gint intensity_channel, guint32 max_points, guint32 max_voxels)
{
  Case *c = g_new0 (Case, 1);
  const double voxel_size[3] = { 0.16, 0.16, 4.0 };
  const double range_min[3] = { 0.0, -39.68, -3.0 };

  memcpy (c->voxel_size, voxel_size, sizeof voxel_size);
  memcpy (c->range_min, range_min, sizeof range_min);
  c->grid[0] = 432;
  c->grid[1] = 496;
  c->grid[2] = 1;
  fail_unless_equals_int (p3dc_pillarfeat_params_init (&c->params, set, half,
          channels, intensity_channel, max_points, max_voxels, voxel_size,
          range_min), P3DC_OK);
  c->voxels = g_new0 (gfloat, max_voxels * row_floats (c));
  c->num_points = g_new0 (guint32, max_voxels);
  c->coords = g_new0 (gint32, (gsize) max_voxels * 4);
  c->features = g_malloc0 (p3dc_pillarfeat_features_size (&c->params));
  c->out_coords = g_new0 (gint32, (gsize) max_voxels * 4);
  return c;
}

static void
case_free (Case * c)
{
  g_free (c->voxels);
  g_free (c->num_points);
  g_free (c->coords);
  g_free (c->features);
  g_free (c->out_coords);
  g_free (c);
}

/* Random voxels below @count, zeros beyond, as voxelize leaves them.  Points
 * lie in their cell, or anywhere within +-100 m when @wild. */
static void
case_fill_random (Case * c, P3dTestRng * rng, guint32 count, gboolean wild)
{
  guint32 v, p, ch;

  c->count = count;
  for (v = 0; v < count; v++) {
    gint32 *coord = c->coords + (gsize) v * 4;
    guint32 n;

    coord[0] = 0;
    coord[1] = p3d_test_rng_below (rng, c->grid[2]);
    coord[2] = p3d_test_rng_below (rng, c->grid[1]);
    coord[3] = p3d_test_rng_below (rng, c->grid[0]);
    /* a quarter of the voxels full, as in a dense frame */
    n = p3d_test_rng_below (rng, 4) == 0 ? c->params.max_points
        : 1 + p3d_test_rng_below (rng, c->params.max_points);
    c->num_points[v] = n;
    for (p = 0; p < n; p++) {
      gfloat *point = c->voxels + v * row_floats (c) + p * c->params.channels;

      for (ch = 0; ch < 3; ch++) {
        /* coords are (0, z, y, x): axis ch is coord[3 - ch] */
        double low = c->range_min[ch] + coord[3 - ch] * c->voxel_size[ch];

        point[ch] = wild ? p3d_test_rng_uniform (rng, -100.0f, 100.0f)
            : (gfloat) (low + c->voxel_size[ch] *
            p3d_test_rng_uniform (rng, 0.0f, 1.0f));
      }
      for (ch = 3; ch < c->params.channels; ch++)
        point[ch] = p3d_test_rng_uniform (rng, 0.0f, 1.0f);
    }
  }
}

static P3dcPillarFeatInput
case_input (const Case * c)
{
  P3dcPillarFeatInput in = { c->voxels, c->num_points, c->coords, &c->count };

  return in;
}

static void
case_run (Case * c)
{
  P3dcPillarFeatInput in = case_input (c);
  P3dcPillarFeatOutput out = { c->features, c->out_coords, &c->out_count };

  p3dc_pillarfeat_cpu (&c->params, &in, &out);
}

static gfloat
output_value (const Case * c, gsize index)
{
  if (c->params.half)
    return p3dc_half_to_float (((const guint16 *) c->features)[index]);
  return ((const gfloat *) c->features)[index];
}

/* The features of point @p of voxel @v in double, from the definition. */
static void
oracle_point (const Case * c, guint32 v, guint32 p, double *out,
    double *tolerance)
{
  guint32 count = MIN (c->count, c->params.max_voxels);
  guint32 n = MIN (c->num_points[v], c->params.max_points), q, axis;
  const gfloat *row = c->voxels + v * row_floats (c);
  const gfloat *point = row + p * c->params.channels;
  double mean[3] = { 0.0, 0.0, 0.0 }, center[3], scale = 0.0;
  const gint32 *coord = c->coords + (gsize) v * 4;

  memset (out, 0, P3DC_PILLAR_FEATURES_MAX * sizeof (double));
  *tolerance = 0.0;
  if (v >= count || p >= n)
    return;
  for (q = 0; q < n; q++) {
    for (axis = 0; axis < 3; axis++) {
      mean[axis] += row[q * c->params.channels + axis];
      scale = MAX (scale, fabs (row[q * c->params.channels + axis]));
    }
  }
  for (axis = 0; axis < 3; axis++) {
    double offset = c->voxel_size[axis] / 2.0 + c->range_min[axis];
    double cell = coord[3 - axis] * c->voxel_size[axis];

    mean[axis] /= n;
    center[axis] = cell + offset;
    scale = MAX (scale, MAX (fabs (cell), fabs (offset)));
    scale = MAX (scale, fabs (center[axis]));
  }
  out[0] = point[0];
  out[1] = point[1];
  out[2] = point[2];
  if (c->params.features == P3DC_PILLAR_FEATURES_MMDET3D_11) {
    /* the point's own channels 3 and 4, then the offsets one place on */
    out[3] = c->params.channels > 3 ? point[3] : 0.0;
    out[4] = c->params.channels > 4 ? point[4] : 0.0;
    out++;
  } else {
    out[3] = c->params.intensity_channel >= 0 ?
        point[c->params.intensity_channel] : 0.0;
  }
  for (axis = 0; axis < 3; axis++) {
    out[4 + axis] = point[axis] - mean[axis];
    out[7 + axis] = point[axis] - center[axis];
  }
  if (c->params.features == P3DC_PILLAR_FEATURES_POINTPILLARS_11)
    out[10] = sqrt ((double) point[0] * point[0] +
        (double) point[1] * point[1] + (double) point[2] * point[2]);
  *tolerance = (n + 6) * UNIT_ROUNDOFF * scale;
}

/* Every feature of every slot against the oracle (F32 output). */
static void
check_against_oracle (const Case * c, const gchar * what)
{
  guint32 v, p, f, features = feature_count (c);
  guint32 count = MIN (c->count, c->params.max_voxels);
  guint32 copies =
      c->params.features == P3DC_PILLAR_FEATURES_MMDET3D_11 ? 5 : 4;

  fail_unless_equals_int (c->out_count, count);
  for (v = 0; v < c->params.max_voxels; v++) {
    for (p = 0; p < c->params.max_points; p++) {
      double expected[P3DC_PILLAR_FEATURES_MAX], tolerance;
      gsize at = ((gsize) v * c->params.max_points + p) * features;

      oracle_point (c, v, p, expected, &tolerance);
      for (f = 0; f < features; f++) {
        double actual = output_value (c, at + f);
        /* copies are exact, and so are zeros of unused slots */
        double allowed = f < copies ? 0.0 : tolerance;

        if (fabs (actual - expected[f]) > allowed)
          fail ("%s: voxel %u point %u feature %u: %.9g, oracle %.9g "
              "(tolerance %.3g)", what, v, p, f, actual, expected[f], allowed);
      }
    }
    for (f = 0; f < 4; f++) {
      gint32 expected = v < count ? c->coords[v * 4 + f] : 0;

      if (c->out_coords[v * 4 + f] != expected)
        fail ("%s: coords of voxel %u [%u]: %d, expected %d", what, v, f,
            c->out_coords[v * 4 + f], expected);
    }
  }
}

GST_START_TEST (test_feature_count)
{
  fail_unless_equals_int (p3dc_pillar_feature_count
      (P3DC_PILLAR_FEATURES_POINTPILLARS_10), 10);
  fail_unless_equals_int (p3dc_pillar_feature_count
      (P3DC_PILLAR_FEATURES_MMDET3D_9), 9);
  fail_unless_equals_int (p3dc_pillar_feature_count
      (P3DC_PILLAR_FEATURES_POINTPILLARS_11), 11);
  fail_unless_equals_int (p3dc_pillar_feature_count
      (P3DC_PILLAR_FEATURES_MMDET3D_11), 11);
  fail_unless_equals_int (p3dc_pillar_feature_count ((P3dcPillarFeatureSet) 4),
      0);
}

GST_END_TEST;

GST_START_TEST (test_params_init)
{
  const double size[3] = { 0.16, 0.16, 4.0 };
  const double range_min[3] = { 0.0, -39.68, -3.0 };
  double bad[3];
  P3dcPillarFeatParams params;
  guint axis;

  fail_unless_equals_int (p3dc_pillarfeat_params_init (&params,
          P3DC_PILLAR_FEATURES_POINTPILLARS_10, 1, 4, 3, 32, 40000, size,
          range_min), P3DC_OK);
  fail_unless_equals_int (params.half, 1);
  fail_unless_equals_int (params.channels, 4);
  fail_unless_equals_int (params.max_points, 32);
  fail_unless_equals_int (params.max_voxels, 40000);
  for (axis = 0; axis < 3; axis++) {
    /* one rounding of the double sum, not a sum of rounded floats */
    fail_unless (params.center_offset[axis] ==
        (float) (size[axis] / 2.0 + range_min[axis]));
    fail_unless (params.voxel_size[axis] == (float) size[axis]);
  }
  /* nuScenes pillars, where one rounding of the double sum and a sum of
   * rounded floats differ (-51.099998 and -51.100002) */
  {
    const double nus_size[3] = { 0.2, 0.2, 8.0 };
    const double nus_min[3] = { -51.2, -51.2, -5.0 };

    fail_unless_equals_int (p3dc_pillarfeat_params_init (&params,
            P3DC_PILLAR_FEATURES_POINTPILLARS_10, 1, 5, 3, 20, 40000, nus_size,
            nus_min), P3DC_OK);
    fail_unless (params.center_offset[0] == (float) (0.1 + -51.2));
    fail_unless (params.center_offset[0] != (float) 0.1 + (float) -51.2);
  }
  fail_unless_equals_uint64 (p3dc_pillarfeat_features_size (&params),
      40000ull * 20 * 10 * 2);

  fail_unless_equals_int (p3dc_pillarfeat_params_init (&params,
          (P3dcPillarFeatureSet) 4, 0, 4, 3, 32, 40000, size, range_min),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_pillarfeat_params_init (&params,
          P3DC_PILLAR_FEATURES_MMDET3D_9, 0, 2, -1, 32, 40000, size,
          range_min), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_pillarfeat_params_init (&params,
          P3DC_PILLAR_FEATURES_MMDET3D_9, 0, 4, 4, 32, 40000, size,
          range_min), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_pillarfeat_params_init (&params,
          P3DC_PILLAR_FEATURES_MMDET3D_9, 0, 4, 2, 32, 40000, size,
          range_min), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_pillarfeat_params_init (&params,
          P3DC_PILLAR_FEATURES_MMDET3D_9, 0, 4, -2, 32, 40000, size,
          range_min), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_pillarfeat_params_init (&params,
          P3DC_PILLAR_FEATURES_MMDET3D_9, 0, 4, 3, 0, 40000, size, range_min),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_pillarfeat_params_init (&params,
          P3DC_PILLAR_FEATURES_MMDET3D_9, 0, 4, 3, 32, 0, size, range_min),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_pillarfeat_params_init (&params,
          P3DC_PILLAR_FEATURES_MMDET3D_9, 0, 4, 3, 65537, 40000, size,
          range_min), P3DC_ERROR_TOO_LARGE);
  fail_unless_equals_int (p3dc_pillarfeat_params_init (&params,
          P3DC_PILLAR_FEATURES_MMDET3D_9, 0, 4, 3, 1, 0x80000000u, size,
          range_min), P3DC_ERROR_TOO_LARGE);
  /* point slots: 2^31 is the most */
  fail_unless_equals_int (p3dc_pillarfeat_params_init (&params,
          P3DC_PILLAR_FEATURES_MMDET3D_9, 0, 4, 3, 65536, 32768, size,
          range_min), P3DC_OK);
  fail_unless_equals_int (p3dc_pillarfeat_params_init (&params,
          P3DC_PILLAR_FEATURES_MMDET3D_9, 0, 4, 3, 65536, 32769, size,
          range_min), P3DC_ERROR_TOO_LARGE);
  fail_unless_equals_int (p3dc_pillarfeat_params_init (&params,
          P3DC_PILLAR_FEATURES_MMDET3D_9, 0, 4, 3, 1, 0x7fffffffu, size,
          range_min), P3DC_OK);
  /* every axis refuses a size that is not finite and positive in float,
   * and a range start that gives no finite offset */
  for (axis = 0; axis < 3; axis++) {
    const double bad_sizes[] = { 0.0, -0.16, NAN, INFINITY, 1e-50, 1e300 };
    const double bad_mins[] = { NAN, INFINITY, -INFINITY, -1e300 };
    guint i;

    for (i = 0; i < G_N_ELEMENTS (bad_sizes); i++) {
      memcpy (bad, size, sizeof bad);
      bad[axis] = bad_sizes[i];
      fail_unless_equals_int (p3dc_pillarfeat_params_init (&params,
              P3DC_PILLAR_FEATURES_POINTPILLARS_10, 0, 4, 3, 32, 40000, bad,
              range_min), P3DC_ERROR_INVALID_ARGUMENT);
    }
    for (i = 0; i < G_N_ELEMENTS (bad_mins); i++) {
      memcpy (bad, range_min, sizeof bad);
      bad[axis] = bad_mins[i];
      fail_unless_equals_int (p3dc_pillarfeat_params_init (&params,
              P3DC_PILLAR_FEATURES_POINTPILLARS_10, 0, 4, 3, 32, 40000, size,
              bad), P3DC_ERROR_INVALID_ARGUMENT);
    }
  }
  fail_unless_equals_int (p3dc_pillarfeat_params_validate (NULL),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_uint64 (p3dc_pillarfeat_features_size (NULL), 0);
}

GST_END_TEST;

/* Voxel 0 of the hand-worked cases: three points of xyzi in a 0.5 m cell,
 * every value and every result exact in float. */
static const gfloat hand_points[3][4] = {
  {1.0f, -38.0f, 0.5f, 0.25f},
  {1.5f, -38.5f, -0.5f, 0.75f},
  {1.25f, -38.25f, 1.5f, 0.5f},
};

/* sums 3.75, -114.75, 1.5: mean (1.25, -38.25, 0.5); cell (x 2, y 3, z 0)
 * of 0.5 x 0.5 x 4 m from (0, -40, -3): center (1.25, -38.25, -1) */
static const gfloat hand_pointpillars_10[3][10] = {
  {1.0f, -38.0f, 0.5f, 0.25f, -0.25f, 0.25f, 0.0f, -0.25f, 0.25f, 1.5f},
  {1.5f, -38.5f, -0.5f, 0.75f, 0.25f, -0.25f, -1.0f, 0.25f, -0.25f, 0.5f},
  {1.25f, -38.25f, 1.5f, 0.5f, 0.0f, 0.0f, 1.0f, 0.0f, 0.0f, 2.5f},
};

static Case *
hand_case (P3dcPillarFeatureSet set, gboolean half)
{
  const double size[3] = { 0.5, 0.5, 4.0 };
  const double range_min[3] = { 0.0, -40.0, -3.0 };
  Case *c = case_new (set, half, 4, 3, 4, 2);
  guint p;

  fail_unless_equals_int (p3dc_pillarfeat_params_init (&c->params, set, half,
          4, 3, 4, 2, size, range_min), P3DC_OK);
  fail_unless (c->params.center_offset[0] == 0.25f);
  fail_unless (c->params.center_offset[1] == -39.75f);
  fail_unless (c->params.center_offset[2] == -1.0f);
  for (p = 0; p < 3; p++)
    memcpy (c->voxels + p * 4, hand_points[p], sizeof hand_points[p]);
  c->num_points[0] = 3;
  c->coords[1] = 0;
  c->coords[2] = 3;
  c->coords[3] = 2;
  /* voxel 1 is beyond the count: whatever it holds is ignored */
  c->num_points[1] = 4;
  c->coords[5] = 7;
  for (p = 0; p < 16; p++)
    c->voxels[16 + p] = 99.0f;
  c->count = 1;
  memset (c->features, 0x7f, p3dc_pillarfeat_features_size (&c->params));
  memset (c->out_coords, 0x7f, 8 * sizeof (gint32));
  c->out_count = 12345;
  return c;
}

static void
check_hand_voxel (const Case * c, const gfloat * expected, guint32 features)
{
  guint32 p, f;

  fail_unless_equals_int (c->out_count, 1);
  for (p = 0; p < 4; p++) {
    for (f = 0; f < features; f++) {
      gfloat want = p < 3 ? expected[p * features + f] : 0.0f;
      gfloat got = output_value (c, p * features + f);

      if (got != want)
        fail ("point %u feature %u: %.9g, expected %.9g", p, f, got, want);
    }
  }
  /* voxel 1: zeros everywhere */
  for (f = 0; f < 4 * features; f++)
    fail_unless (output_value (c, 4 * features + f) == 0.0f,
        "voxel 1 value %u is %g", f, output_value (c, 4 * features + f));
  fail_unless_equals_int (c->out_coords[0], 0);
  fail_unless_equals_int (c->out_coords[1], 0);
  fail_unless_equals_int (c->out_coords[2], 3);
  fail_unless_equals_int (c->out_coords[3], 2);
  for (f = 4; f < 8; f++)
    fail_unless_equals_int (c->out_coords[f], 0);
}

GST_START_TEST (test_hand_worked_pointpillars)
{
  gfloat mmdet3d[3][9];
  guint p, half;

  for (p = 0; p < 3; p++)
    memcpy (mmdet3d[p], hand_pointpillars_10[p], sizeof mmdet3d[p]);
  /* F16 holds every one of these values exactly, so both formats match */
  for (half = 0; half < 2; half++) {
    Case *c = hand_case (P3DC_PILLAR_FEATURES_POINTPILLARS_10, half);

    case_run (c);
    check_hand_voxel (c, &hand_pointpillars_10[0][0], 10);
    case_free (c);

    c = hand_case (P3DC_PILLAR_FEATURES_MMDET3D_9, half);
    case_run (c);
    check_hand_voxel (c, &mmdet3d[0][0], 9);
    case_free (c);
  }
}

GST_END_TEST;

/* Signed zeros and subnormals in the hand-worked voxel, in both formats:
 * with every x -0 the mean x is +0 (the sum starts at 0, and 0 + -0 is
 * +0), so x - mean is -0; with every z the smallest subnormal t (2^-149)
 * the sum is 3t and the mean t exactly, so z - mean is +0, and z is t in
 * F32 and +0 in F16; with -t, -t and -0. */
GST_START_TEST (test_signed_zeros)
{
  guint half, negative, p;

  for (half = 0; half < 2; half++)
    for (negative = 0; negative < 2; negative++) {
      Case *c = hand_case (P3DC_PILLAR_FEATURES_POINTPILLARS_10, half);
      const guint32 t_bits = 1u | (negative ? 0x80000000u : 0);
      gfloat t, want_z;
      gchar *what = g_strdup_printf ("%s, z %s2^-149", half ? "F16" : "F32",
          negative ? "-" : "");

      memcpy (&t, &t_bits, sizeof t);
      want_z = half ? (negative ? -0.0f : 0.0f) : t;
      for (p = 0; p < 3; p++) {
        c->voxels[p * 4] = -0.0f;
        c->voxels[p * 4 + 2] = t;
      }
      case_run (c);
      fail_unless_equals_int (c->out_count, 1);
      for (p = 0; p < 3; p++) {
        gfloat x = output_value (c, p * 10), x_mean = output_value (c,
            p * 10 + 4), z = output_value (c, p * 10 + 2), z_mean =
            output_value (c, p * 10 + 6);

        fail_unless (x == 0.0f && signbit (x), "%s, point %u: x is %a", what,
            p, x);
        fail_unless (x_mean == 0.0f && signbit (x_mean), "%s, point %u: "
            "x - mean is %a, expected -0", what, p, x_mean);
        fail_unless (memcmp (&z, &want_z, sizeof z) == 0, "%s, point %u: z "
            "is %a, expected %a", what, p, z, want_z);
        fail_unless (z_mean == 0.0f && !signbit (z_mean), "%s, point %u: "
            "z - mean is %a, expected +0", what, p, z_mean);
      }
      g_free (what);
      case_free (c);
    }
}

GST_END_TEST;

GST_START_TEST (test_hand_worked_distance)
{
  /* xyz points (no intensity) whose distances are whole: 13, 3, 7, 7; sums
   * 12, 11, 23 over 4 points: mean (3, 2.75, 5.75); cell (x 2, y 3, z 5) of
   * 1 m from the origin: center (2.5, 3.5, 5.5) */
  static const gfloat points[4][3] = {
    {3, 4, 12}, {1, 2, 2}, {2, 3, 6}, {6, 2, 3},
  };
  static const gfloat expected[4][11] = {
    {3, 4, 12, 0, 0, 1.25f, 6.25f, 0.5f, 0.5f, 6.5f, 13},
    {1, 2, 2, 0, -2, -0.75f, -3.75f, -1.5f, -1.5f, -3.5f, 3},
    {2, 3, 6, 0, -1, 0.25f, 0.25f, -0.5f, -0.5f, 0.5f, 7},
    {6, 2, 3, 0, 3, -0.75f, -2.75f, 3.5f, -1.5f, -2.5f, 7},
  };
  const double size[3] = { 1.0, 1.0, 1.0 };
  const double range_min[3] = { 0.0, 0.0, 0.0 };
  Case *c = case_new (P3DC_PILLAR_FEATURES_POINTPILLARS_11, FALSE, 3, -1, 5,
      1);
  guint p, f;

  fail_unless_equals_int (p3dc_pillarfeat_params_init (&c->params,
          P3DC_PILLAR_FEATURES_POINTPILLARS_11, FALSE, 3, -1, 5, 1, size,
          range_min), P3DC_OK);
  memcpy (c->voxels, points, sizeof points);
  c->num_points[0] = 4;
  c->coords[1] = 5;
  c->coords[2] = 3;
  c->coords[3] = 2;
  c->count = 1;
  memset (c->features, 0x7f, p3dc_pillarfeat_features_size (&c->params));
  case_run (c);
  for (p = 0; p < 5; p++) {
    for (f = 0; f < 11; f++) {
      gfloat want = p < 4 ? expected[p][f] : 0.0f;
      gfloat got = output_value (c, p * 11 + f);

      if (got != want)
        fail ("point %u feature %u: %.9g, expected %.9g", p, f, got, want);
    }
  }
  case_free (c);
}

GST_END_TEST;

/* mmdet3d-11 on nuScenes pillars (0.2 x 0.2 x 8 m from (-51.2, -51.2, -5)):
 * the values are chosen so that every result is exact in float, and the
 * center is worked in float as mmdetection3d does it: coord * (float) 0.2
 * + (float) (0.1 - 51.2), one rounding each. */
GST_START_TEST (test_hand_worked_mmdet3d_11)
{
  /* xyzit points in cell (x 256, y 255, z 0); sums 0.75, -0.25, -1.5 over
   * 3 points: mean (0.25, -0.25/3, -0.5) rounded */
  static const gfloat points[3][5] = {
    {0.0f, -0.25f, -1.0f, 7.0f, 0.05f},
    {0.5f, 0.0f, 0.0f, 3.0f, 0.0f},
    {0.25f, 0.0f, -0.5f, 11.0f, 0.5f},
  };
  const double size[3] = { 0.2, 0.2, 8.0 };
  const double range_min[3] = { -51.2, -51.2, -5.0 };
  const gint32 cell[3] = { 256, 255, 0 };
  gfloat center[3], mean[3];
  guint p, f, axis, channels;

  for (axis = 0; axis < 3; axis++)
    center[axis] = (gfloat) cell[axis] * (gfloat) size[axis]
        + (gfloat) (size[axis] / 2.0 + range_min[axis]);
  /* worked by hand: 256 * 0.2f = 0x1.99999ap+5 (51.2000008), plus
   * (float) -51.1 = -0x1.98ccccp+5, is 0x1.999cp-4 (0.100002289, not 0.1);
   * 255 * 0.2f rounds to 0x1.98p+5 plus 2^-19, and the sum is -0x1.9998p-4
   * (-0.0999984741); 0 * 8 - 1 = -1 */
  fail_unless (center[0] == 0x1.999cp-4f, "center x %a", center[0]);
  fail_unless (center[1] == -0x1.9998p-4f, "center y %a", center[1]);
  fail_unless (center[2] == -1.0f);
  mean[0] = 0.25f;
  mean[1] = -0.25f / 3.0f;
  mean[2] = -0.5f;

  /* xyzit, xyzi (c4 = 0) and xyz (c3 = c4 = 0) */
  for (channels = 5; channels >= 3; channels--) {
    Case *c = case_new (P3DC_PILLAR_FEATURES_MMDET3D_11, FALSE, channels,
        channels > 3 ? 3 : -1, 4, 1);

    fail_unless_equals_int (p3dc_pillarfeat_params_init (&c->params,
            P3DC_PILLAR_FEATURES_MMDET3D_11, FALSE, channels,
            channels > 3 ? 3 : -1, 4, 1, size, range_min), P3DC_OK);
    for (p = 0; p < 3; p++)
      memcpy (c->voxels + p * channels, points[p], channels * sizeof (gfloat));
    c->num_points[0] = 3;
    c->coords[1] = cell[2];
    c->coords[2] = cell[1];
    c->coords[3] = cell[0];
    c->count = 1;
    memset (c->features, 0x7f, p3dc_pillarfeat_features_size (&c->params));
    case_run (c);
    for (p = 0; p < 4; p++) {
      gfloat want[11];

      memset (want, 0, sizeof want);
      if (p < 3) {
        for (axis = 0; axis < 3; axis++) {
          want[axis] = points[p][axis];
          want[5 + axis] = points[p][axis] - mean[axis];
          want[8 + axis] = points[p][axis] - center[axis];
        }
        want[3] = channels > 3 ? points[p][3] : 0.0f;
        want[4] = channels > 4 ? points[p][4] : 0.0f;
      }
      for (f = 0; f < 11; f++) {
        gfloat got = output_value (c, p * 11 + f);

        if (got != want[f])
          fail ("%u channels, point %u feature %u: %a, expected %a",
              channels, p, f, got, want[f]);
      }
    }
    /* spot values written out by hand */
    fail_unless (output_value (c, 0 * 11 + 4) == (channels > 4 ? 0.05f : 0.0f));
    fail_unless (output_value (c, 2 * 11 + 3) == (channels > 3 ? 11.0f : 0.0f));
    fail_unless (output_value (c, 1 * 11 + 5) == 0.25f);
    fail_unless (output_value (c, 0 * 11 + 7) == -0.5f);
    fail_unless (output_value (c, 1 * 11 + 10) == 1.0f);
    case_free (c);
  }
}

GST_END_TEST;

GST_START_TEST (test_random_against_oracle)
{
  const P3dcPillarFeatureSet sets[] = { P3DC_PILLAR_FEATURES_POINTPILLARS_10,
    P3DC_PILLAR_FEATURES_MMDET3D_9, P3DC_PILLAR_FEATURES_POINTPILLARS_11,
    P3DC_PILLAR_FEATURES_MMDET3D_11
  };
  const guint32 max_points[] = { 1, 3, 20, 32, 40 };
  guint s, channels, mp, seed;

  for (s = 0; s < G_N_ELEMENTS (sets); s++) {
    for (channels = 3; channels <= 5; channels++) {
      for (mp = 0; mp < G_N_ELEMENTS (max_points); mp++) {
        for (seed = 0; seed < 4; seed++) {
          P3dTestRng rng;
          /* an intensity whenever there is a fourth channel, but not always */
          gint intensity = channels > 3 && seed != 1 ? 3 : -1;
          guint32 max_voxels = 1 + seed * 37;
          Case *c = case_new (sets[s], FALSE, channels, intensity,
              max_points[mp], max_voxels);
          gchar *what;

          p3d_test_rng_init (&rng, 1000 * s + 100 * channels + 10 * mp + seed);
          case_fill_random (c, &rng, p3d_test_rng_below (&rng,
                  max_voxels + 1), seed == 3);
          memset (c->features, 0xa5,
              p3dc_pillarfeat_features_size (&c->params));
          memset (c->out_coords, 0xa5, (gsize) max_voxels * 16);
          case_run (c);
          what = g_strdup_printf ("set %d, %u channels, intensity %d, "
              "max-points %u, seed %u", sets[s], channels, intensity,
              max_points[mp], seed);
          check_against_oracle (c, what);
          g_free (what);
          case_free (c);
        }
      }
    }
  }
}

GST_END_TEST;

GST_START_TEST (test_half_is_rounded_float)
{
  const P3dcPillarFeatureSet sets[] = { P3DC_PILLAR_FEATURES_POINTPILLARS_10,
    P3DC_PILLAR_FEATURES_MMDET3D_9, P3DC_PILLAR_FEATURES_POINTPILLARS_11,
    P3DC_PILLAR_FEATURES_MMDET3D_11
  };
  guint s, wild;

  for (s = 0; s < G_N_ELEMENTS (sets); s++) {
    for (wild = 0; wild < 2; wild++) {
      Case *single = case_new (sets[s], FALSE, 4, 3, 20, 300);
      Case *half = case_new (sets[s], TRUE, 4, 3, 20, 300);
      P3dTestRng rng;
      gsize i;

      p3d_test_rng_init (&rng, 77 + s * 2 + wild);
      case_fill_random (single, &rng, 250, wild);
      p3d_test_rng_init (&rng, 77 + s * 2 + wild);
      case_fill_random (half, &rng, 250, wild);
      case_run (single);
      case_run (half);
      for (i = 0; i < feature_values (single); i++) {
        guint16 expected =
            p3dc_float_to_half (((gfloat *) single->features)[i]);
        guint16 actual = ((guint16 *) half->features)[i];

        if (actual != expected)
          fail ("set %d value %" G_GSIZE_FORMAT ": half 0x%04x, rounded "
              "float 0x%04x", sets[s], i, actual, expected);
      }
      fail_unless (memcmp (single->out_coords, half->out_coords,
              300 * 16) == 0);
      fail_unless_equals_int (single->out_count, half->out_count);
      case_free (single);
      case_free (half);
    }
  }
}

GST_END_TEST;

/* Runs @c and a copy of it whose input was made well-formed by hand, and
 * requires the same bytes from both. */
static void
check_same_output (Case * c, Case * well_formed)
{
  case_run (c);
  case_run (well_formed);
  fail_unless_equals_int (c->out_count, well_formed->out_count);
  fail_unless (memcmp (c->features, well_formed->features,
          p3dc_pillarfeat_features_size (&c->params)) == 0);
  fail_unless (memcmp (c->out_coords, well_formed->out_coords,
          (gsize) c->params.max_voxels * 16) == 0);
}

static Case *
case_copy (const Case * c)
{
  Case *copy = case_new (c->params.features, c->params.half,
      c->params.channels, c->params.intensity_channel, c->params.max_points,
      c->params.max_voxels);

  memcpy (copy->voxels, c->voxels,
      c->params.max_voxels * row_floats (c) * sizeof (gfloat));
  memcpy (copy->num_points, c->num_points,
      c->params.max_voxels * sizeof (guint32));
  memcpy (copy->coords, c->coords, (gsize) c->params.max_voxels * 16);
  copy->count = c->count;
  return copy;
}

GST_START_TEST (test_count_above_max_voxels)
{
  const guint32 counts[] = { 51, 52, 1000, G_MAXUINT32 };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (counts); i++) {
    Case *c = case_new (P3DC_PILLAR_FEATURES_POINTPILLARS_10, FALSE, 4, 3, 8,
        50);
    Case *clamped;
    P3dTestRng rng;

    p3d_test_rng_init (&rng, i);
    case_fill_random (c, &rng, 50, FALSE);
    clamped = case_copy (c);
    c->count = counts[i];
    check_same_output (c, clamped);
    fail_unless_equals_int (c->out_count, 50);
    check_against_oracle (c, "count above max-voxels");
    case_free (c);
    case_free (clamped);
  }
}

GST_END_TEST;

GST_START_TEST (test_num_points_above_max_points)
{
  const guint32 too_many[] = { 9, 10, 33, G_MAXUINT32 };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (too_many); i++) {
    Case *c = case_new (P3DC_PILLAR_FEATURES_POINTPILLARS_11, TRUE, 5, 3, 8,
        20);
    Case *clamped;
    P3dTestRng rng;
    guint32 v;

    p3d_test_rng_init (&rng, 10 + i);
    case_fill_random (c, &rng, 20, FALSE);
    /* every slot holds a point, so a count clamped to 8 is well-formed */
    for (v = 0; v < 20 * 8 * 5; v++)
      c->voxels[v] = p3d_test_rng_uniform (&rng, -50.0f, 50.0f);
    for (v = 0; v < 20; v++)
      c->num_points[v] = 8;
    clamped = case_copy (c);
    for (v = 0; v < 20; v += 3)
      c->num_points[v] = too_many[i];
    check_same_output (c, clamped);
    case_free (c);
    case_free (clamped);
  }
}

GST_END_TEST;

GST_START_TEST (test_empty_voxel_below_count)
{
  Case *c = case_new (P3DC_PILLAR_FEATURES_POINTPILLARS_10, FALSE, 4, 3, 32,
      10);
  P3dTestRng rng;
  gsize row = 32 * 10, i;
  guint32 v;

  p3d_test_rng_init (&rng, 5);
  case_fill_random (c, &rng, 10, FALSE);
  /* voxels 2 and 9 have no point: the reference must not divide 0 by 0 */
  for (v = 2; v < 10; v += 7) {
    c->num_points[v] = 0;
    memset (c->voxels + v * row_floats (c), 0, row_floats (c) * 4);
  }
  memset (c->features, 0xff, p3dc_pillarfeat_features_size (&c->params));
  case_run (c);
  for (v = 2; v < 10; v += 7) {
    for (i = 0; i < row; i++)
      fail_unless (((gfloat *) c->features)[v * row + i] == 0.0f,
          "voxel %u value %" G_GSIZE_FORMAT " is %g", v, i,
          ((gfloat *) c->features)[v * row + i]);
    fail_unless (memcmp (c->out_coords + v * 4, c->coords + v * 4, 16) == 0);
  }
  for (i = 0; i < feature_values (c); i++)
    fail_if (isnan (((gfloat *) c->features)[i]));
  check_against_oracle (c, "empty voxels");
  case_free (c);
}

GST_END_TEST;

GST_START_TEST (test_writes_every_byte)
{
  guint half;

  for (half = 0; half < 2; half++) {
    Case *c = case_new (P3DC_PILLAR_FEATURES_MMDET3D_9, half, 4, 3, 7, 33);
    P3dTestRng rng;
    gsize size = p3dc_pillarfeat_features_size (&c->params), i;
    guint8 *bytes = c->features;

    p3d_test_rng_init (&rng, 9);
    case_fill_random (c, &rng, 33, FALSE);
    case_run (c);
    /* poison, run again on a smaller count: the output is as if fresh */
    {
      Case *fresh = case_copy (c);

      memset (c->features, 0xa5, size);
      memset (c->out_coords, 0xa5, 33 * 16);
      c->count = fresh->count = 11;
      check_same_output (c, fresh);
      case_free (fresh);
    }
    for (i = (gsize) 11 * 7 * 9 * (half ? 2 : 4); i < size; i++)
      fail_unless (bytes[i] == 0, "byte %" G_GSIZE_FORMAT " beyond the count "
          "is 0x%02x", i, bytes[i]);
    for (i = 11 * 4; i < 33 * 4; i++)
      fail_unless_equals_int (c->out_coords[i], 0);
    case_free (c);
  }
}

GST_END_TEST;

GST_START_TEST (test_invalid_params_write_nothing)
{
  Case *c = case_new (P3DC_PILLAR_FEATURES_POINTPILLARS_10, FALSE, 4, 3, 4, 4);
  P3dcPillarFeatInput in = case_input (c);
  P3dcPillarFeatOutput out = { c->features, c->out_coords, &c->out_count };
  guint8 *bytes = c->features;
  gsize i;

  c->count = 4;
  c->out_count = 77;
  memset (c->features, 0xa5, p3dc_pillarfeat_features_size (&c->params));
  c->params.channels = 2;
  p3dc_pillarfeat_cpu (&c->params, &in, &out);
  c->params.channels = 4;
  p3dc_pillarfeat_cpu (&c->params, &in, NULL);
  in.count = NULL;
  p3dc_pillarfeat_cpu (&c->params, &in, &out);
  fail_unless_equals_int (c->out_count, 77);
  for (i = 0; i < p3dc_pillarfeat_features_size (&c->params); i++)
    fail_unless_equals_int (bytes[i], 0xa5);
  case_free (c);
}

GST_END_TEST;

static Suite *
pillarfeat_suite (void)
{
  Suite *s = suite_create ("pillarfeat");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_feature_count);
  tcase_add_test (tc, test_params_init);
  tcase_add_test (tc, test_hand_worked_pointpillars);
  tcase_add_test (tc, test_signed_zeros);
  tcase_add_test (tc, test_hand_worked_distance);
  tcase_add_test (tc, test_hand_worked_mmdet3d_11);
  tcase_add_test (tc, test_random_against_oracle);
  tcase_add_test (tc, test_half_is_rounded_float);
  tcase_add_test (tc, test_count_above_max_voxels);
  tcase_add_test (tc, test_num_points_above_max_points);
  tcase_add_test (tc, test_empty_voxel_below_count);
  tcase_add_test (tc, test_writes_every_byte);
  tcase_add_test (tc, test_invalid_params_write_nothing);
  return s;
}

P3D_CHECK_MAIN (pillarfeat);
