/* Shared by the bevpool tests; see p3dtest-bevpool.h.  The oracle is written
 * apart from the library on purpose: full 4x4 inverses by Gauss-Jordan,
 * homogeneous points, its own cell rule and numbering. */
#include <math.h>
#include <string.h>

#include "p3dtest-bevpool.h"
#include "half.h"

void
bevpool_test_case_clear (BevpoolTestCase * tc)
{
  g_free (tc->calib);
  tc->calib = NULL;
}

static void
set_identity (gdouble m[16])
{
  gint i;

  memset (m, 0, 16 * sizeof (gdouble));
  for (i = 0; i < 4; i++)
    m[i * 5] = 1.0;
}

/* camera_to_lidar for a camera at @position looking along yaw / pitch:
 * camera x right, y down, z forward, as the pinhole model has them. */
static void
look_at (gdouble m[16], gdouble yaw, gdouble pitch, const gdouble position[3])
{
  gdouble forward[3] = { cos (yaw) * cos (pitch), sin (yaw) * cos (pitch),
    sin (pitch)
  };
  gdouble right[3] = { sin (yaw), -cos (yaw), 0.0 };
  gdouble down[3] = {
    forward[1] * right[2] - forward[2] * right[1],
    forward[2] * right[0] - forward[0] * right[2],
    forward[0] * right[1] - forward[1] * right[0]
  };
  gint i;

  set_identity (m);
  for (i = 0; i < 3; i++) {
    m[i * 4 + 0] = right[i];
    m[i * 4 + 1] = down[i];
    m[i * 4 + 2] = forward[i];
    m[i * 4 + 3] = position[i];
  }
}

static gdouble
uniform (P3dTestRng * rng, gdouble lo, gdouble hi)
{
  return lo + (hi - lo) * (p3d_test_rng_u32 (rng) / 4294967296.0);
}

/* @cells cells of a random step, placed so the origin (where the cameras
 * are) lies at a random fraction of the span. */
static void
random_bound (P3dTestRng * rng, gdouble bound[3], gdouble step_min,
    gdouble step_max, guint cells)
{
  bound[2] = uniform (rng, step_min, step_max);
  bound[0] = -uniform (rng, 0.2, 0.8) * bound[2] * cells;
  bound[1] = bound[0] + bound[2] * cells;
}

void
bevpool_test_random_case (P3dTestRng * rng, BevpoolTestCase * tc)
{
  P3dcBevPoolParams *p = &tc->params;
  guint bins, i;

  memset (p, 0, sizeof (*p));
  p->cameras = 1 + p3d_test_rng_below (rng, 6);
  p->channels = 1 + p3d_test_rng_below (rng, 12);
  p->image_width = 40 + p3d_test_rng_below (rng, 200);
  p->image_height = 30 + p3d_test_rng_below (rng, 150);
  p->feat_width = 1 + p3d_test_rng_below (rng, 13);
  p->feat_height = 1 + p3d_test_rng_below (rng, 9);
  bins = 1 + p3d_test_rng_below (rng, 10);
  p->dbound[0] = uniform (rng, 1.0, 4.0);
  p->dbound[2] = uniform (rng, 0.3, 2.0);
  /* Half a step short of bins steps: arange gives exactly bins values. */
  p->dbound[1] = p->dbound[0] + p->dbound[2] * (bins - 0.5);
  random_bound (rng, p->xbound, 0.5, 3.0, 3 + p3d_test_rng_below (rng, 30));
  random_bound (rng, p->ybound, 0.5, 3.0, 3 + p3d_test_rng_below (rng, 30));
  random_bound (rng, p->zbound, 2.0, 8.0, 1);
  p->rounding = p3d_test_rng_below (rng, 2) ? P3DC_BEV_ROUND_FLOOR :
      P3DC_BEV_ROUND_TRUNCATE;
  p->layout = p3d_test_rng_below (rng, 2) ? P3DC_BEV_LAYOUT_XY :
      P3DC_BEV_LAYOUT_YX;
  fail_unless_equals_int (p3dc_bevpool_params_init (p), P3DC_OK);
  fail_unless_equals_int (p->depth_bins, bins);

  tc->calib = g_new0 (P3dcCameraCalib, p->cameras);
  for (i = 0; i < p->cameras; i++) {
    P3dcCameraCalib *c = &tc->calib[i];
    /* The raw image the intrinsics describe, before the augmentation. */
    gdouble scale = uniform (rng, 0.3, 1.2);
    gdouble raw_w = p->image_width / scale, raw_h = p->image_height / scale;
    gdouble focal = uniform (rng, 0.5, 1.5) * raw_w;
    gdouble angle = uniform (rng, -0.2, 0.2);
    gdouble flip = p3d_test_rng_below (rng, 3) == 0 ? -1.0 : 1.0;
    gdouble position[3] = { uniform (rng, -2.0, 2.0), uniform (rng, -2.0,
          2.0), uniform (rng, 0.0, 2.0)
    };
    gdouble a00 = scale * cos (angle) * flip, a01 = -scale * sin (angle);
    gdouble a10 = scale * sin (angle) * flip, a11 = scale * cos (angle);

    set_identity (c->intrinsics);
    c->intrinsics[0] = focal;
    c->intrinsics[5] = focal * uniform (rng, 0.9, 1.1);
    c->intrinsics[2] = raw_w / 2 + uniform (rng, -10.0, 10.0);
    c->intrinsics[6] = raw_h / 2 + uniform (rng, -10.0, 10.0);
    look_at (c->camera_to_lidar, uniform (rng, -G_PI, G_PI),
        uniform (rng, -0.2, 0.2), position);
    /* Resize, rotate, maybe flip, and bring the raw centre near the
     * network input's centre, as a crop does. */
    set_identity (c->img_aug);
    c->img_aug[0] = a00;
    c->img_aug[1] = a01;
    c->img_aug[4] = a10;
    c->img_aug[5] = a11;
    c->img_aug[3] = p->image_width / 2.0 - (a00 * raw_w / 2 + a01 * raw_h / 2)
        + uniform (rng, -10.0, 10.0);
    c->img_aug[7] = p->image_height / 2.0 - (a10 * raw_w / 2
        + a11 * raw_h / 2) + uniform (rng, -10.0, 10.0);
  }
}

/* Row-major, as in bevfusion_camera_matrices.json of the nuScenes sample
 * n015-2018-07-24-11-22-45+0800 (token ca9a282c9e77460f8360f564131a8af5):
 * the intrinsics padded to 4x4, camera2lidar = inverse (lidar2cam), and
 * BEVFusion's test-time augmentation (resize 0.48, crop 32, 176). */
static const gdouble nuscenes_intrinsics[6][9] = {
  {1266.417203046554, 0.0, 816.2670197447984,
      0.0, 1266.417203046554, 491.50706579294757, 0.0, 0.0, 1.0},
  {1260.8474446004698, 0.0, 807.968244525554,
      0.0, 1260.8474446004698, 495.3344268742088, 0.0, 0.0, 1.0},
  {1272.5979470598488, 0.0, 826.6154927353808,
      0.0, 1272.5979470598488, 479.75165386361925, 0.0, 0.0, 1.0},
  {809.2209905677063, 0.0, 829.2196003259838,
      0.0, 809.2209905677063, 481.77842384512485, 0.0, 0.0, 1.0},
  {1256.7414812095406, 0.0, 792.1125740759628,
      0.0, 1256.7414812095406, 492.7757465151356, 0.0, 0.0, 1.0},
  {1259.5137405846733, 0.0, 807.2529053838625,
      0.0, 1259.5137405846733, 501.19579884916527, 0.0, 0.0, 1.0},
};

static const gdouble nuscenes_camera_to_lidar[6][12] = {
  {0.9999702349803103, 0.006852706211987702, -0.003542212366680574,
        -0.016138240213462513,
        0.003407371364249611, 0.019589633653144808, 0.9998023056119233,
        0.43552527659369034,
        0.006920742004078713, -0.9997845918802184, 0.019565699752027935,
      -0.3206717652205014},
  {0.5515799093433144, -0.010314991425871705, 0.8340582744572358,
        0.493873502057201,
        -0.8336986077217488, 0.025040882725676592, 0.5516517171748448,
        0.35824040185796563,
        -0.02657583809109958, -0.9996332276257623, 0.005212453958830549,
      -0.3343748926775735},
  {0.5729949064129041, 0.002771718465480786, -0.8195542267310266,
        -0.4959262116486189,
        0.8192594601402818, 0.025095150772796743, 0.5728736420823455,
        0.18893437756748432,
        0.022154681363834375, -0.9996812150309367, 0.012108636553634968,
      -0.3317629252978799},
  {-0.9999397339310759, 0.009939326815625971, -0.004668203587340592,
        -0.004927545669947136,
        0.004745349109795092, 0.007752243198742747, -0.9999586887028236,
        -1.0053087227180835,
        -0.009902726671298262, -0.9999205591977088, -0.007798941154918144,
      -0.28660862154271133},
  {-0.31705823580304626, 0.01989865241341083, -0.9481972938774882,
        -0.483281443849699,
        0.9480797861717701, 0.03287343837614879, -0.3163290648883828,
        0.09404904405239922,
        0.02487598154916659, -0.9992613963701769, -0.029288303683905746,
      -0.24994861174106026},
  {-0.3569853708363921, -0.0052496866643285895, 0.9340952462979433,
        0.480282333078071,
        -0.9334109045426052, 0.0406852674791476, -0.35649518578139117,
        -0.10895030162691359,
        -0.036132426028005676, -0.9991582376561378, -0.019424159981322114,
      -0.27901514491581597},
};

void
bevpool_test_nuscenes_case (guint32 channels, BevpoolTestCase * tc)
{
  P3dcBevPoolParams *p = &tc->params;
  guint i, row;

  memset (p, 0, sizeof (*p));
  p->cameras = 6;
  p->channels = channels;
  p->image_width = 704;
  p->image_height = 256;
  p->feat_width = 88;
  p->feat_height = 32;
  p->dbound[0] = 1.0;
  p->dbound[1] = 60.0;
  p->dbound[2] = 0.5;
  p->xbound[0] = p->ybound[0] = -54.0;
  p->xbound[1] = p->ybound[1] = 54.0;
  p->xbound[2] = p->ybound[2] = 0.3;
  p->zbound[0] = -10.0;
  p->zbound[1] = 10.0;
  p->zbound[2] = 20.0;
  p->rounding = P3DC_BEV_ROUND_TRUNCATE;
  p->layout = P3DC_BEV_LAYOUT_YX;
  fail_unless_equals_int (p3dc_bevpool_params_init (p), P3DC_OK);

  tc->calib = g_new0 (P3dcCameraCalib, 6);
  for (i = 0; i < 6; i++) {
    P3dcCameraCalib *c = &tc->calib[i];

    set_identity (c->intrinsics);
    set_identity (c->camera_to_lidar);
    set_identity (c->img_aug);
    for (row = 0; row < 3; row++) {
      memcpy (&c->intrinsics[row * 4], &nuscenes_intrinsics[i][row * 3],
          3 * sizeof (gdouble));
      memcpy (&c->camera_to_lidar[row * 4],
          &nuscenes_camera_to_lidar[i][row * 4], 4 * sizeof (gdouble));
    }
    c->img_aug[0] = 0.48;
    c->img_aug[5] = 0.48;
    c->img_aug[3] = -32.0;
    c->img_aug[7] = -176.0;
  }
}

void
bevpool_test_axis_camera (P3dcCameraCalib * calib, gdouble offset_x,
    gdouble offset_y)
{
  set_identity (calib->intrinsics);
  set_identity (calib->img_aug);
  set_identity (calib->camera_to_lidar);
  calib->camera_to_lidar[3] = offset_x;
  calib->camera_to_lidar[7] = offset_y;
}

/* Gauss-Jordan with partial pivoting; the matrices here are invertible. */
static void
invert_4x4 (const gdouble m[16], gdouble inv[16])
{
  gdouble a[4][8];
  gint row, col, k;

  for (row = 0; row < 4; row++) {
    for (col = 0; col < 4; col++) {
      a[row][col] = m[row * 4 + col];
      a[row][col + 4] = row == col ? 1.0 : 0.0;
    }
  }
  for (col = 0; col < 4; col++) {
    gint pivot = col;
    gdouble scale;

    for (row = col + 1; row < 4; row++)
      if (fabs (a[row][col]) > fabs (a[pivot][col]))
        pivot = row;
    fail_unless (a[pivot][col] != 0.0, "singular test matrix");
    for (k = 0; k < 8; k++) {
      gdouble t = a[col][k];

      a[col][k] = a[pivot][k];
      a[pivot][k] = t;
    }
    scale = 1.0 / a[col][col];
    for (k = 0; k < 8; k++)
      a[col][k] *= scale;
    for (row = 0; row < 4; row++) {
      gdouble factor = a[row][col];

      if (row == col || factor == 0.0)
        continue;
      for (k = 0; k < 8; k++)
        a[row][k] -= factor * a[col][k];
    }
  }
  for (row = 0; row < 4; row++)
    for (col = 0; col < 4; col++)
      inv[row * 4 + col] = a[row][col + 4];
}

static void
transform (const gdouble m[16], const gdouble in[4], gdouble out[4])
{
  gint row;

  for (row = 0; row < 4; row++)
    out[row] = m[row * 4] * in[0] + m[row * 4 + 1] * in[1]
        + m[row * 4 + 2] * in[2] + m[row * 4 + 3] * in[3];
}

/* The cell along one axis, or -1. */
static gint64
oracle_axis (gdouble coordinate, const gdouble bound[3], guint32 cells,
    P3dcBevRounding rounding)
{
  gdouble t = (coordinate - bound[0]) / bound[2];
  gdouble index = rounding == P3DC_BEV_ROUND_FLOOR ? floor (t) : trunc (t);

  if (!(index >= 0.0 && index < cells))
    return -1;
  return (gint64) index;
}

void
bevpool_test_oracle_cells (const P3dcBevPoolParams * params,
    const P3dcCameraCalib * calib, guint32 * cells)
{
  guint32 camera, d, v, u;
  gsize p = 0;

  for (camera = 0; camera < params->cameras; camera++) {
    gdouble aug_inv[16], k_inv[16];

    invert_4x4 (calib[camera].img_aug, aug_inv);
    invert_4x4 (calib[camera].intrinsics, k_inv);
    for (d = 0; d < params->depth_bins; d++) {
      for (v = 0; v < params->feat_height; v++) {
        for (u = 0; u < params->feat_width; u++, p++) {
          gdouble image[4], undone[4], ray[4], cam[4], lidar[4];
          gint64 x, y, z;

          image[0] = params->feat_width > 1 ? (params->image_width - 1.0)
              * ((gdouble) u / (params->feat_width - 1)) : 0.0;
          image[1] = params->feat_height > 1 ? (params->image_height - 1.0)
              * ((gdouble) v / (params->feat_height - 1)) : 0.0;
          image[2] = params->dbound[0] + d * params->dbound[2];
          image[3] = 1.0;
          transform (aug_inv, image, undone);
          ray[0] = undone[0] * undone[2];
          ray[1] = undone[1] * undone[2];
          ray[2] = undone[2];
          ray[3] = 1.0;
          transform (k_inv, ray, cam);
          transform (calib[camera].camera_to_lidar, cam, lidar);
          x = oracle_axis (lidar[0], params->xbound, params->nx,
              params->rounding);
          y = oracle_axis (lidar[1], params->ybound, params->ny,
              params->rounding);
          z = oracle_axis (lidar[2], params->zbound, params->nz,
              params->rounding);
          if (x < 0 || y < 0 || z < 0)
            cells[p] = BEVPOOL_TEST_DROPPED;
          else if (params->layout == P3DC_BEV_LAYOUT_XY)
            cells[p] = (guint32) ((z * params->nx + x) * params->ny + y);
          else
            cells[p] = (guint32) ((z * params->ny + y) * params->nx + x);
        }
      }
    }
  }
}

void
bevpool_test_oracle_pool (const P3dcBevPoolParams * params,
    const guint32 * cells, const gfloat * features, const gfloat * depth,
    gdouble * sum, gdouble * magnitude)
{
  gsize plane = (gsize) params->nx * params->ny;
  gsize pixels = (gsize) params->feat_width * params->feat_height;
  gsize out_size = p3dc_bevpool_output_size (params);
  gsize points = p3dc_bevpool_depth_size (params), p;
  guint32 c;

  memset (sum, 0, out_size * sizeof (gdouble));
  memset (magnitude, 0, out_size * sizeof (gdouble));
  for (p = 0; p < points; p++) {
    gsize camera = p / (params->depth_bins * pixels);
    gsize pixel = p % pixels;
    const gfloat *f = features + (camera * pixels + pixel) * params->channels;
    gsize z, base;

    if (cells[p] == BEVPOOL_TEST_DROPPED)
      continue;
    z = cells[p] / plane;
    base = z * params->channels * plane + cells[p] % plane;
    for (c = 0; c < params->channels; c++) {
      gdouble product = (gdouble) f[c] * depth[p];

      sum[base + c * plane] += product;
      magnitude[base + c * plane] += fabs (product);
    }
  }
}

static gchar *
describe_point (const P3dcBevPoolParams * params, guint32 p)
{
  guint32 pixels = params->feat_width * params->feat_height;
  guint32 camera = p / (params->depth_bins * pixels);
  guint32 d = p / pixels % params->depth_bins;

  return g_strdup_printf ("point %u (camera %u, depth bin %u, v %u, u %u)", p,
      camera, d, p % pixels / params->feat_width, p % params->feat_width);
}

/* Where frustum point @p comes in the (camera, u, d, v) order that
 * bevpool.h defines within a cell, computed here on its own. */
static guint64
column_order (const P3dcBevPoolParams * params, guint32 p)
{
  guint64 pixels = (guint64) params->feat_width * params->feat_height;
  guint64 camera = p / (params->depth_bins * pixels);
  guint64 d = p / pixels % params->depth_bins;
  guint64 v = p % pixels / params->feat_width;
  guint64 u = p % params->feat_width;

  return ((camera * params->feat_width + u) * params->depth_bins + d)
      * params->feat_height + v;
}

void
bevpool_test_check_geometry (const P3dcBevGeometry * geometry,
    const P3dcBevPoolParams * params, const guint32 * oracle_cells,
    const gchar * what)
{
  gsize points = p3dc_bevpool_depth_size (params);
  guint32 cells = params->nx * params->ny * params->nz;
  const guint32 *start = p3dc_bevpool_geometry_cell_start (geometry);
  const guint32 *sorted = p3dc_bevpool_geometry_points (geometry);
  guint32 kept = p3dc_bevpool_geometry_kept (geometry);
  guint32 *cell_of = g_new (guint32, points);
  guint32 k, i, expected_kept = 0;
  gsize p;

  fail_unless (start != NULL && sorted != NULL, "%s: geometry not computed",
      what);
  fail_unless_equals_int (start[0], 0);
  fail_unless_equals_int (start[cells], kept);
  for (p = 0; p < points; p++) {
    cell_of[p] = BEVPOOL_TEST_DROPPED;
    expected_kept += oracle_cells[p] != BEVPOOL_TEST_DROPPED;
  }
  /* fail_unless marks a point per call, far too slow for millions: plain
   * conditions, and fail() with the details when one does not hold. */
  for (k = 0; k < cells; k++) {
    if (start[k] > start[k + 1])
      fail ("%s: cell %u starts at %u, after cell %u's end %u", what, k,
          start[k], k + 1, start[k + 1]);
    for (i = start[k]; i < start[k + 1]; i++) {
      if (sorted[i] >= points)
        fail ("%s: sorted point %u is %u, not a frustum point", what, i,
            sorted[i]);
      if (cell_of[sorted[i]] != BEVPOOL_TEST_DROPPED)
        fail ("%s: point %u appears twice", what, sorted[i]);
      if (i > start[k] && column_order (params, sorted[i - 1])
          >= column_order (params, sorted[i]))
        fail ("%s: cell %u's points are not in (camera, u, d, v) order at "
            "%u", what, k, i);
      cell_of[sorted[i]] = k;
    }
  }
  for (p = 0; p < points; p++) {
    if (cell_of[p] != oracle_cells[p]) {
      gchar *where = describe_point (params, p);

      fail ("%s: %s is in cell %d, the oracle says %d (-1: dropped)", what,
          where, cell_of[p] == BEVPOOL_TEST_DROPPED ? -1 : (gint) cell_of[p],
          oracle_cells[p] == BEVPOOL_TEST_DROPPED ? -1 :
          (gint) oracle_cells[p]);
      g_free (where);
    }
  }
  fail_unless_equals_int (kept, expected_kept);
  g_free (cell_of);
}

void
bevpool_test_check_pooled (const P3dcBevPoolParams * params, const void *out,
    gboolean half_out, const gdouble * sum, const gdouble * magnitude,
    gdouble relative, gdouble floor, const gchar * what)
{
  gsize size = p3dc_bevpool_output_size (params), i;
  gsize plane = (gsize) params->nx * params->ny;

  for (i = 0; i < size; i++) {
    gdouble got = half_out ? p3dc_half_to_float (((const guint16 *) out)[i])
        : ((const gfloat *) out)[i];
    gdouble tolerance = relative * magnitude[i] + floor;

    if (!(fabs (got - sum[i]) <= tolerance))
      fail ("%s: output %" G_GSIZE_FORMAT " (channel %" G_GSIZE_FORMAT
          ", cell %" G_GSIZE_FORMAT ") is %.9g, the oracle says %.9g "
          "(magnitude %.9g, tolerance %.3g)", what, i, i / plane, i % plane,
          got, sum[i], magnitude[i], tolerance);
  }
}

void
bevpool_test_random_inputs (P3dTestRng * rng,
    const P3dcBevPoolParams * params, gboolean half, gpointer * raw_features,
    gpointer * raw_depth, gfloat ** features, gfloat ** depth)
{
  gsize n_features = p3dc_bevpool_features_size (params);
  gsize n_depth = p3dc_bevpool_depth_size (params);
  gsize pixels = (gsize) params->feat_width * params->feat_height;
  gsize value_size = half ? 2 : 4, i, d;
  gfloat *weights = g_new (gfloat, params->depth_bins);

  *features = g_new (gfloat, n_features);
  *depth = g_new (gfloat, n_depth);
  *raw_features = g_malloc (n_features * value_size);
  *raw_depth = g_malloc (n_depth * value_size);
  for (i = 0; i < n_features; i++)
    (*features)[i] = p3d_test_rng_uniform (rng, -1.0f, 1.0f);
  /* Softmax of random logits per pixel: a few bins hold most of it. */
  for (i = 0; i < params->cameras * pixels; i++) {
    gsize camera = i / pixels, pixel = i % pixels;
    gdouble total = 0.0;

    for (d = 0; d < params->depth_bins; d++) {
      weights[d] = expf (p3d_test_rng_uniform (rng, 0.0f, 6.0f));
      total += weights[d];
    }
    for (d = 0; d < params->depth_bins; d++)
      (*depth)[(camera * params->depth_bins + d) * pixels + pixel] =
          (gfloat) (weights[d] / total);
  }
  for (i = 0; i < n_features; i++) {
    if (half) {
      guint16 h = p3dc_float_to_half ((*features)[i]);

      ((guint16 *) * raw_features)[i] = h;
      (*features)[i] = p3dc_half_to_float (h);
    } else {
      ((gfloat *) * raw_features)[i] = (*features)[i];
    }
  }
  for (i = 0; i < n_depth; i++) {
    if (half) {
      guint16 h = p3dc_float_to_half ((*depth)[i]);

      ((guint16 *) * raw_depth)[i] = h;
      (*depth)[i] = p3dc_half_to_float (h);
    } else {
      ((gfloat *) * raw_depth)[i] = (*depth)[i];
    }
  }
  g_free (weights);
}

/* One camera grid at the axis camera's exact positions: fW = W and fH = H
 * so pixel (u, v) sits at image (u, v), depth ds = 1, 2, ... bins. */
static void
axis_case (BevpoolTestCase * tc, guint cameras, guint width, guint height,
    guint bins)
{
  P3dcBevPoolParams *p = &tc->params;
  guint i;

  memset (p, 0, sizeof (*p));
  p->cameras = cameras;
  p->channels = 3;
  p->image_width = p->feat_width = width;
  p->image_height = p->feat_height = height;
  p->dbound[0] = 1.0;
  p->dbound[1] = bins + 0.5;
  p->dbound[2] = 1.0;
  tc->calib = g_new0 (P3dcCameraCalib, cameras);
  for (i = 0; i < cameras; i++)
    bevpool_test_axis_camera (&tc->calib[i], 0.0, 0.0);
}

static void
set_bound (gdouble bound[3], gdouble lower, gdouble upper, gdouble step)
{
  bound[0] = lower;
  bound[1] = upper;
  bound[2] = step;
}

/* x = u - 1 at image (u, 0), depth 1, over 1 m cells from x = 0.5: t is
 * -1.5, -0.5, 0.5, 1.5 for u = 0 .. 3. */
void
bevpool_test_truncate_floor_case (P3dcBevRounding rounding,
    BevpoolTestCase * tc)
{
  axis_case (tc, 1, 4, 1, 1);
  bevpool_test_axis_camera (&tc->calib[0], -1.0, 0.0);
  set_bound (tc->params.xbound, 0.5, 2.5, 1.0);
  set_bound (tc->params.ybound, -0.5, 0.5, 1.0);
  set_bound (tc->params.zbound, 0.5, 1.5, 1.0);
  tc->params.rounding = rounding;
  fail_unless_equals_int (p3dc_bevpool_params_init (&tc->params), P3DC_OK);
}

void
bevpool_test_per_camera_aug_case (P3dTestRng * rng, BevpoolTestCase * tc)
{
  guint i;

  bevpool_test_random_case (rng, tc);
  while (tc->params.cameras < 3) {
    bevpool_test_case_clear (tc);
    bevpool_test_random_case (rng, tc);
  }
  for (i = 1; i < tc->params.cameras; i++) {
    memcpy (tc->calib[i].intrinsics, tc->calib[0].intrinsics,
        sizeof (tc->calib[0].intrinsics));
    memcpy (tc->calib[i].camera_to_lidar, tc->calib[0].camera_to_lidar,
        sizeof (tc->calib[0].camera_to_lidar));
    memcpy (tc->calib[i].img_aug, tc->calib[0].img_aug,
        sizeof (tc->calib[0].img_aug));
    /* Camera i: camera 0's augmentation flipped, and shifted 2i pixels. */
    tc->calib[i].img_aug[0] = -tc->calib[0].img_aug[0];
    tc->calib[i].img_aug[4] = -tc->calib[0].img_aug[4];
    tc->calib[i].img_aug[3] = tc->calib[0].img_aug[3] + 2.0 * i;
  }
}

/* x = u * ds, y = v * ds over 2 m cells from -0.5 (3 x 3 of them): x, y
 * of 0 or 1 fall in cell 0, beyond 5 they are dropped. */
void
bevpool_test_cell_zero_case (BevpoolTestCase * tc)
{
  axis_case (tc, 2, 5, 4, 3);
  set_bound (tc->params.xbound, -0.5, 5.5, 2.0);
  set_bound (tc->params.ybound, -0.5, 5.5, 2.0);
  set_bound (tc->params.zbound, 0.5, 4.5, 4.0);
  fail_unless_equals_int (p3dc_bevpool_params_init (&tc->params), P3DC_OK);
}

/* x = u * ds in 0 .. 12 over 3 m cells from -0.5, one cell in y: the last
 * cell, [8.5, 11.5), holds x = 9 (u = 3, ds = 3) for every v, and x = 12 is
 * dropped.  Variant 1 extends the grid to 17.5: x = 12 fills cell 4 and the
 * last cell is empty. */
void
bevpool_test_last_interval_case (gint variant, BevpoolTestCase * tc)
{
  axis_case (tc, 1, 5, 4, 3);
  set_bound (tc->params.xbound, -0.5, variant ? 17.5 : 11.5, 3.0);
  set_bound (tc->params.ybound, -0.5, 99.5, 100.0);
  set_bound (tc->params.zbound, 0.5, 4.5, 4.0);
  fail_unless_equals_int (p3dc_bevpool_params_init (&tc->params), P3DC_OK);
}

/* x = u * ds, y = v * ds (u < 7, v < 5, ds 1 or 2) over 1 m cells from
 * -0.5: 13 x 5 cells (even variants) or 7 x 9 (odd ones); variants 2 and 3
 * in the XY layout. */
void
bevpool_test_non_square_case (gint variant, BevpoolTestCase * tc)
{
  axis_case (tc, 1, 7, 5, 2);
  set_bound (tc->params.xbound, -0.5, variant & 1 ? 6.5 : 12.5, 1.0);
  set_bound (tc->params.ybound, -0.5, variant & 1 ? 8.5 : 4.5, 1.0);
  set_bound (tc->params.zbound, 0.5, 2.5, 2.0);
  tc->params.layout = variant & 2 ? P3DC_BEV_LAYOUT_XY : P3DC_BEV_LAYOUT_YX;
  fail_unless_equals_int (p3dc_bevpool_params_init (&tc->params), P3DC_OK);
}

/* Decimal steps, where frustum points lie within a few ulps of a cell
 * boundary: x = u * ds, y = v * ds, z = ds for camera 0, and x - 0.7,
 * y - 0.3 for camera 1 (9 x 6 pixels, 4 depth bins), over cells of 0.1,
 * 0.7 or 0.2 m (variant / 2) from (-0.3, -0.6, 0.2), truncating (even
 * variants) or flooring.  With 0.1 and 0.2 m most are, and a product by
 * 1 / step instead of the division would put some in the neighbouring
 * cell; with 0.7 m about two in five are.  Points beyond 12 m in x, 8 in y
 * and 3 in z are dropped. */
void
bevpool_test_boundary_case (gint variant, BevpoolTestCase * tc)
{
  static const gdouble steps[] = { 0.1, 0.7, 0.2 };
  const gdouble step = steps[(variant / 2) % G_N_ELEMENTS (steps)];

  axis_case (tc, 2, 9, 6, 4);
  bevpool_test_axis_camera (&tc->calib[1], -0.7, -0.3);
  set_bound (tc->params.xbound, -0.3, 12.0, step);
  set_bound (tc->params.ybound, -0.6, 8.0, step);
  set_bound (tc->params.zbound, 0.2, 3.0, step);
  tc->params.rounding = variant & 1 ? P3DC_BEV_ROUND_FLOOR :
      P3DC_BEV_ROUND_TRUNCATE;
  fail_unless_equals_int (p3dc_bevpool_params_init (&tc->params), P3DC_OK);
}

/* Every point within one 1000 m cell. */
void
bevpool_test_one_cell_case (guint width, guint height, guint bins,
    BevpoolTestCase * tc)
{
  axis_case (tc, 1, width, height, bins);
  set_bound (tc->params.xbound, -0.5, 999.5, 1000.0);
  set_bound (tc->params.ybound, -0.5, 999.5, 1000.0);
  set_bound (tc->params.zbound, 0.5, 1000.5, 1000.0);
  fail_unless_equals_int (p3dc_bevpool_params_init (&tc->params), P3DC_OK);
}

void
bevpool_test_tiny_bins (P3dTestRng * rng, const P3dcBevPoolParams * params,
    gboolean half, gpointer raw_depth, gfloat * depth)
{
  const guint32 smallest_f32 = 0x00000001u;
  const guint16 smallest_f16 = 0x0001u;
  gsize pixels = (gsize) params->feat_width * params->feat_height;
  gsize bins = (gsize) params->cameras * params->depth_bins, bin, i;

  for (bin = 0; bin < bins; bin += 3)
    for (i = bin * pixels; i < (bin + 1) * pixels; i++) {
      gboolean negative = p3d_test_rng_u32 (rng) & 1;

      if (half) {
        guint16 h = smallest_f16 | (negative ? 0x8000u : 0);

        ((guint16 *) raw_depth)[i] = h;
        depth[i] = p3dc_half_to_float (h);
      } else {
        guint32 bits = smallest_f32 | (negative ? 0x80000000u : 0);

        memcpy ((guint32 *) raw_depth + i, &bits, 4);
        memcpy (depth + i, &bits, 4);
      }
    }
}

/* A finished run's sum added to the cell's value, counted in
 * *@negative_zero (unless NULL) where it is -0. */
static gfloat
add_run (gfloat total, gfloat part, guint32 * negative_zero)
{
  if (negative_zero != NULL && part == 0.0f && signbit (part))
    (*negative_zero)++;
  return total + part;
}

gfloat
bevpool_test_documented_sum (const P3dcBevPoolParams * params,
    const guint32 * points, guint32 begin, guint32 end,
    const gfloat * features, const gfloat * depth, guint32 c, guint32 * runs,
    guint32 * negative_zero)
{
  guint32 pixels = params->feat_width * params->feat_height;
  guint32 i, last_camera = 0, last_u = 0, last_d = 0, last_v = 0;
  gfloat total = 0.0f, part = 0.0f;

  *runs = 0;
  for (i = begin; i < end; i++) {
    guint32 p = points[i], camera = p / (params->depth_bins * pixels);
    guint32 d = p / pixels % params->depth_bins;
    guint32 u = p % params->feat_width;
    guint32 v = p % pixels / params->feat_width;
    guint32 row = camera * pixels + v * params->feat_width + u;

    if (i == begin || camera != last_camera || u != last_u || d != last_d
        || v != last_v + 1) {
      if (i > begin)
        total = add_run (total, part, negative_zero);
      part = 0.0f;
      (*runs)++;
    }
    part = fmaf (features[row * params->channels + c], depth[p], part);
    last_camera = camera;
    last_u = u;
    last_d = d;
    last_v = v;
  }
  if (end > begin)
    total = add_run (total, part, negative_zero);
  return total;
}
