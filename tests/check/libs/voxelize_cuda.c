/* p3dc_voxelize_cuda against the reference, bit for bit: every tensor and
 * the stats are compared after each frame.  Outputs are poisoned (0xff
 * bytes) before every run with output_clean=0, to prove every byte is
 * written; runs with output_clean=1 go through the same buffers frame after
 * frame, as the element's pool does.  Frames are also queued back to back
 * without host waits (one voxelizer, and two sharing a stream), and inside
 * a stream capture of the caller's (where the voxelizer launches its
 * kernels instead of its own graph).  The host never blocks on the device
 * without a time limit (gpu_wait), so a kernel that does not end fails the
 * test instead of hanging it. */
#include <gst/check/gstcheck.h>
#include <math.h>
#include <string.h>

#include "p3dtest-capture.h"
#include "p3dtest-voxelize.h"
#include "p3dtest.h"
#include "voxelize.h"

/* Waits for everything queued on @stream, polling, so that a device that
 * never finishes (a deadlock in a kernel) fails the test with a message
 * instead of hanging it.  Lidar frames take well under a millisecond; the
 * limit is generous for compute-sanitizer, which is far slower. */
#define GPU_WAIT_LIMIT_S 120

static void
gpu_wait (P3dcCudaStream stream, const gchar * what)
{
  P3dcCudaEvent done = NULL;
  gint64 deadline = g_get_monotonic_time () + GPU_WAIT_LIMIT_S * G_USEC_PER_SEC;
  P3dcResult result;

  fail_unless_equals_int (p3dc_cuda_event_create (&done), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_event_record (done, stream), P3DC_OK);
  while ((result = p3dc_cuda_event_query (done)) == P3DC_ERROR_NOT_READY) {
    fail_unless (g_get_monotonic_time () < deadline, "%s: the device did not "
        "finish within %d s (a kernel that never ends?)", what,
        GPU_WAIT_LIMIT_S);
    g_usleep (200);
  }
  fail_unless_equals_int (result, P3DC_OK);
  p3dc_cuda_event_destroy (done);
}

/* ---- one voxelizer with its device buffers ---- */

typedef struct
{
  P3dcVoxelizeParams params;
  P3dcVoxelizer *voxelizer;
  P3dcCudaStream stream;
  void *points;
  gsize points_capacity;
  P3dcVoxelizeOutput out;
  VoxelizeTestResult got;
  guint frames;
} Gpu;

static void
gpu_init (Gpu * g, const P3dcVoxelizeParams * params, gsize hint)
{
  memset (g, 0, sizeof (*g));
  g->params = *params;
  fail_unless_equals_int (p3dc_cuda_stream_create (&g->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_voxelizer_new (params, hint, &g->voxelizer),
      P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_malloc ((void **) &g->out.voxels,
          voxelize_test_voxel_floats (params) * 4), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_malloc ((void **) &g->out.num_points,
          (gsize) params->max_voxels * 4), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_malloc ((void **) &g->out.coords,
          (gsize) params->max_voxels * 16), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_malloc ((void **) &g->out.count, 4),
      P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_malloc ((void **) &g->out.stats,
          sizeof (P3dcVoxelizeStats)), P3DC_OK);
  voxelize_test_result_init (&g->got, params);
}

static void
gpu_clear (Gpu * g)
{
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (g->stream), P3DC_OK);
  p3dc_voxelizer_free (g->voxelizer);
  p3dc_cuda_free (g->points);
  p3dc_cuda_free (g->out.voxels);
  p3dc_cuda_free (g->out.num_points);
  p3dc_cuda_free (g->out.coords);
  p3dc_cuda_free (g->out.count);
  p3dc_cuda_free (g->out.stats);
  p3dc_cuda_stream_destroy (g->stream);
  voxelize_test_result_clear (&g->got);
}

/* Copies @n_points points to the device buffer of @g (growing it). */
static void
gpu_upload (Gpu * g, const gfloat * points, gsize n_points)
{
  gsize bytes = n_points * g->params.channels * 4;

  if (bytes > g->points_capacity) {
    fail_unless_equals_int (p3dc_cuda_stream_synchronize (g->stream), P3DC_OK);
    p3dc_cuda_free (g->points);
    fail_unless_equals_int (p3dc_cuda_malloc (&g->points, bytes), P3DC_OK);
    g->points_capacity = bytes;
  }
  if (bytes > 0)
    fail_unless_equals_int (p3dc_cuda_memcpy_htod (g->points, points, bytes,
            g->stream), P3DC_OK);
}

/* Fills the device output of @g with 0xff bytes (the stats too). */
static void
gpu_poison (Gpu * g, gboolean stats_only)
{
  const P3dcVoxelizeParams *p = &g->params;

  if (!stats_only) {
    fail_unless_equals_int (p3dc_cuda_memset (g->out.voxels, 0xff,
            voxelize_test_voxel_floats (p) * 4, g->stream), P3DC_OK);
    fail_unless_equals_int (p3dc_cuda_memset (g->out.num_points, 0xff,
            (gsize) p->max_voxels * 4, g->stream), P3DC_OK);
    fail_unless_equals_int (p3dc_cuda_memset (g->out.coords, 0xff,
            (gsize) p->max_voxels * 16, g->stream), P3DC_OK);
    fail_unless_equals_int (p3dc_cuda_memset (g->out.count, 0xff, 4,
            g->stream), P3DC_OK);
  }
  fail_unless_equals_int (p3dc_cuda_memset (g->out.stats, 0xff,
          sizeof (P3dcVoxelizeStats), g->stream), P3DC_OK);
}

/* Copies the device output of @g to g->got (the queue is finished). */
static void
gpu_fetch (Gpu * g)
{
  const P3dcVoxelizeParams *p = &g->params;

  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (g->got.voxels, g->out.voxels,
          voxelize_test_voxel_floats (p) * 4, g->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (g->got.num_points,
          g->out.num_points, (gsize) p->max_voxels * 4, g->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (g->got.coords, g->out.coords,
          (gsize) p->max_voxels * 16, g->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (&g->got.count, g->out.count,
          4, g->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (&g->got.stats, g->out.stats,
          sizeof (P3dcVoxelizeStats), g->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (g->stream), P3DC_OK);
}

/* Compares g->got with the reference's output for @points. */
static void
gpu_compare (Gpu * g, const gfloat * points, gsize n_points, gboolean clean,
    const gchar * what)
{
  const P3dcVoxelizeParams *p = &g->params;
  VoxelizeTestResult expected;
  gchar *frame_what;

  voxelize_test_result_init (&expected, p);
  fail_unless_equals_int (p3dc_voxelize_cpu (p, points, n_points,
          &expected.out), P3DC_OK);
  frame_what = g_strdup_printf ("%s (frame %u, %" G_GSIZE_FORMAT " points, "
      "%s, grid %ux%ux%u, %u channels, max_points %u, max_voxels %u)", what,
      g->frames, n_points, clean ? "clean" : "poisoned", p->grid[0],
      p->grid[1], p->grid[2], p->channels, p->max_points, p->max_voxels);
  voxelize_test_assert_same (&expected, &g->got, frame_what);
  g_free (frame_what);
  voxelize_test_result_clear (&expected);
  g->frames++;
}

/* Voxelizes @points on the device and on the host and compares them.
 * With @clean, the device output keeps what the previous frame left
 * there. */
static void
gpu_check (Gpu * g, const gfloat * points, gsize n_points, gboolean clean,
    const gchar * what)
{
  gpu_upload (g, points, n_points);
  gpu_poison (g, clean);
  fail_unless_equals_int (p3dc_voxelize_cuda (g->voxelizer,
          n_points ? g->points : NULL, n_points, &g->out, clean, g->stream),
      P3DC_OK);
  gpu_wait (g->stream, what);
  gpu_fetch (g);
  gpu_compare (g, points, n_points, clean, what);
}

/* Runs @points poisoned, then again through the same (now clean) output. */
static void
gpu_check_twice (Gpu * g, const gfloat * points, gsize n_points,
    const gchar * what)
{
  gpu_check (g, points, n_points, FALSE, what);
  gpu_check (g, points, n_points, TRUE, what);
}

/* ---- clouds ---- */

/* Uniform over the range and a margin of @margin extents around it, with a
 * few NaN, infinite, face and repeated points. */
static gfloat *
uniform_cloud (P3dTestRng * rng, const P3dcVoxelizeParams * p, gsize n,
    gfloat margin)
{
  gfloat *points = g_new (gfloat, n * p->channels + 1);
  gsize i;
  guint a;

  for (i = 0; i < n; i++) {
    gfloat xyz[3];
    guint special = p3d_test_rng_below (rng, 1000);

    for (a = 0; a < 3; a++) {
      gfloat extent = p->voxel_size[a] * p->grid[a];

      xyz[a] = p3d_test_rng_uniform (rng, p->range_min[a] - margin * extent,
          p->range_min[a] + (1.0f + margin) * extent);
    }
    if (special == 0)
      xyz[p3d_test_rng_below (rng, 3)] = NAN;
    else if (special == 1)
      xyz[p3d_test_rng_below (rng, 3)] = INFINITY;
    else if (special == 2)
      xyz[p3d_test_rng_below (rng, 3)] = -INFINITY;
    else if (special == 3)
      xyz[0] = p->range_min[0];
    else if (special == 4)
      xyz[1] = p->range_min[1] + p->voxel_size[1] * p->grid[1];
    else if (special < 60 && i > 0)
      memcpy (xyz, points + (i - 1 - p3d_test_rng_below (rng, MIN (i, 50)))
          * p->channels, sizeof (xyz));
    voxelize_test_set_point (points, i, p->channels, xyz[0], xyz[1], xyz[2],
        (gfloat) i);
  }
  return points;
}

/* A spinning lidar seen @sweeps times (as nuScenes merges 10 sweeps): rings
 * hitting the ground and walls in azimuth order, so neighbouring points share
 * cells, plus a car body and a pole close to the sensor whose cells hold
 * hundreds of points, the same cells recurring in every sweep. */
static gfloat *
lidar_cloud (P3dTestRng * rng, guint channels, guint sweeps,
    guint per_sweep, gsize * n_points)
{
  gsize n = (gsize) sweeps * per_sweep, i = 0;
  gfloat *points = g_new (gfloat, n * channels);
  guint s, k;

  for (s = 0; s < sweeps; s++) {
    gfloat shift = 0.3f * s;

    for (k = 0; k < per_sweep; k++, i++) {
      guint ring = k % 32;
      gfloat azimuth = 6.2831853f * (k / 32) / (per_sweep / 32 + 1);
      gfloat elevation = -0.5f + 0.03f * ring;
      gfloat distance, x, y, z;
      guint kind = p3d_test_rng_below (rng, 100);

      if (kind < 8) {
        /* A pole 1.5 m away: one pillar, hundreds of points. */
        x = 1.5f + p3d_test_rng_uniform (rng, 0, 0.05f);
        y = 0.7f + p3d_test_rng_uniform (rng, 0, 0.05f);
        z = p3d_test_rng_uniform (rng, -1.5f, 2.5f);
      } else if (kind < 20) {
        /* The ego car's body, within 2 m. */
        x = p3d_test_rng_uniform (rng, -2.0f, 2.0f);
        y = p3d_test_rng_uniform (rng, -1.0f, 1.0f);
        z = p3d_test_rng_uniform (rng, -1.8f, -1.2f);
      } else {
        distance = elevation < 0 ? -1.8f / elevation
            : p3d_test_rng_uniform (rng, 5.0f, 60.0f);
        x = distance * cosf (azimuth) + shift;
        y = distance * sinf (azimuth);
        z = elevation < 0 ? -1.8f : distance * elevation;
        x += p3d_test_rng_uniform (rng, -0.02f, 0.02f);
      }
      voxelize_test_set_point (points, i, channels, x, y, z, 0.01f * ring + s);
      if (channels > 4)
        points[i * channels + 4] = 0.05f * s;
    }
  }
  *n_points = n;
  return points;
}

static void
nuscenes_params (P3dcVoxelizeParams * params, guint max_points)
{
  const gdouble size[3] = { 0.2, 0.2, 8.0 };
  const gdouble range[6] = { -51.2, -51.2, -5, 51.2, 51.2, 3 };

  fail_unless_equals_int (p3dc_voxelize_params_init (params, size, range, 5,
          max_points, 40000), P3DC_OK);
}

static void
centerpoint_params (P3dcVoxelizeParams * params, guint max_voxels)
{
  const gdouble size[3] = { 0.075, 0.075, 0.2 };
  const gdouble range[6] = { -54, -54, -5, 54, 54, 3 };

  fail_unless_equals_int (p3dc_voxelize_params_init (params, size, range, 5,
          10, max_voxels), P3DC_OK);
}

/* ---- tests ---- */

/* Random clouds of 0 to 300k points on random small and large grids. */
GST_START_TEST (test_random_clouds)
{
  /* 256, 512, 1024 and 2048 points: one, two, four and eight tiles of the
   * scan kernel, beside one point fewer and one more. */
  const gsize sizes[] = { 0, 1, 2, 31, 32, 33, 255, 256, 257, 511, 512, 513,
    1000, 4097, 20000, 65536, 150001, 300000, 1023, 1024, 1025, 2048, 2049
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (sizes); i++) {
    P3dTestRng rng;
    gdouble size[3], min[3];
    guint cells[3], a;
    P3dcVoxelizeParams params;
    gfloat *points;
    Gpu g;

    p3d_test_rng_init (&rng, 1000 + i);
    for (a = 0; a < 3; a++) {
      size[a] = 0.1 + 0.1 * p3d_test_rng_below (&rng, 4);
      min[a] = -2.0 * p3d_test_rng_below (&rng, 4);
      /* Mostly small grids (full voxels), sometimes a hash-sized one. */
      cells[a] = 1 + p3d_test_rng_below (&rng, a == 2 ? 6 :
          (i % 3 == 0 ? 3000 : 60));
    }
    voxelize_test_params (&params, size, min, cells, 3 + i % 3,
        1 + p3d_test_rng_below (&rng, i % 4 == 0 ? 100 : 33),
        1 + p3d_test_rng_below (&rng, i % 2 ? 50000 : 3000));
    points = uniform_cloud (&rng, &params, sizes[i], 0.1f);
    gpu_init (&g, &params, sizes[i] / 2);
    gpu_check_twice (&g, points, sizes[i], "random cloud");
    gpu_clear (&g);
    g_free (points);
  }
}

GST_END_TEST;

/* Lidar-like clouds: dense near-field voxels of hundreds of points, cells
 * recurring far apart in the input, with the benchmark's settings. */
GST_START_TEST (test_lidar_clouds)
{
  const gdouble kitti_size[3] = { 0.16, 0.16, 4.0 };
  const gdouble kitti_range[6] = { 0, -39.68, -3, 69.12, 39.68, 1 };
  P3dcVoxelizeParams params;
  P3dTestRng rng;
  gfloat *points;
  gsize n;
  Gpu g;

  p3d_test_rng_init (&rng, 42);
  points = lidar_cloud (&rng, 5, 10, 27000, &n);
  nuscenes_params (&params, 20);
  gpu_init (&g, &params, n);
  gpu_check_twice (&g, points, n, "nuScenes pillars, 20 points");
  gpu_clear (&g);
  nuscenes_params (&params, 32);
  gpu_init (&g, &params, n);
  gpu_check_twice (&g, points, n, "nuScenes pillars, 32 points");
  gpu_clear (&g);
  centerpoint_params (&params, 160000);
  gpu_init (&g, &params, n);
  gpu_check_twice (&g, points, n, "CenterPoint 3D grid");
  gpu_clear (&g);
  /* max_voxels cut through the frame. */
  centerpoint_params (&params, 2000);
  gpu_init (&g, &params, n);
  gpu_check_twice (&g, points, n, "CenterPoint 3D grid, 2000 voxels");
  gpu_clear (&g);
  g_free (points);

  points = lidar_cloud (&rng, 4, 1, 20000, &n);
  fail_unless_equals_int (p3dc_voxelize_params_init (&params, kitti_size,
          kitti_range, 4, 32, 40000), P3DC_OK);
  gpu_init (&g, &params, n);
  gpu_check_twice (&g, points, n, "KITTI pillars");
  gpu_clear (&g);
  g_free (points);
}

GST_END_TEST;

/* max_points above 32 (the long selection path for every voxel over 32
 * points), up to the limit, with voxels of 1 to thousands of points. */
GST_START_TEST (test_many_points_per_voxel)
{
  const guint limits[] = { 1, 2, 31, 32, 33, 64, 100, 256, 1024 };
  const gdouble size[3] = { 1, 1, 1 }, min[3] = { 0, 0, 0 };
  const guint cells[3] = { 8, 8, 2 };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (limits); i++) {
    P3dcVoxelizeParams params;
    P3dTestRng rng;
    gsize n = 30000, k;
    gfloat *points = g_new (gfloat, n * 4);
    gchar *what;
    Gpu g;

    voxelize_test_params (&params, size, min, cells, 4, limits[i], 128);
    p3d_test_rng_init (&rng, 500 + i);
    /* Cell c gets about c^2 / 4 points: from 0 to thousands. */
    for (k = 0; k < n; k++) {
      guint c = (guint) sqrtf ((gfloat) p3d_test_rng_below (&rng, 128 * 128));

      voxelize_test_set_point (points, k, 4,
          (c % 8) + p3d_test_rng_uniform (&rng, 0, 1),
          (c / 8 % 8) + p3d_test_rng_uniform (&rng, 0, 1),
          (c / 64) + p3d_test_rng_uniform (&rng, 0, 1), (gfloat) k);
    }
    what = g_strdup_printf ("max_points %u", limits[i]);
    gpu_init (&g, &params, n);
    gpu_check_twice (&g, points, n, what);
    /* Every point in one voxel. */
    for (k = 0; k < n; k++)
      voxelize_test_set_point (points, k, 4, 2.5f, 3.5f, 0.5f, (gfloat) k);
    gpu_check_twice (&g, points, n, what);
    gpu_clear (&g);
    g_free (what);
    g_free (points);
  }
}

GST_END_TEST;

/* Every point size: 3, 4 and 5 have kernels of their own, the others share
 * one; more than 32 channels spread a slot over several warp-wide words. */
GST_START_TEST (test_channels)
{
  const guint channels[] = { 3, 4, 5, 6, 7, 31, 33, 40, 64 };
  const gdouble size[3] = { 0.5, 0.5, 0.5 }, min[3] = { -2, -2, -1 };
  const guint cells[3] = { 8, 8, 4 };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (channels); i++) {
    P3dcVoxelizeParams params;
    P3dTestRng rng;
    gfloat *points;
    gchar *what;
    Gpu g;

    voxelize_test_params (&params, size, min, cells, channels[i], 1 + i * 5,
        200);
    p3d_test_rng_init (&rng, 300 + i);
    points = uniform_cloud (&rng, &params, 5000, 0.05f);
    what = g_strdup_printf ("%u channels", channels[i]);
    gpu_init (&g, &params, 0);
    gpu_check_twice (&g, points, 5000, what);
    gpu_check (&g, points, 1000, TRUE, what);
    gpu_clear (&g);
    g_free (what);
    g_free (points);
  }
}

GST_END_TEST;

/* The edge cases of the reference test, through the device. */
GST_START_TEST (test_edge_cases)
{
  const gdouble kitti_size[3] = { 0.16, 0.16, 4.0 };
  const gdouble kitti_range[6] = { 0, -39.68, -3, 69.12, 39.68, 1 };
  const gdouble size[3] = { 1, 1, 1 }, min[3] = { 0, 0, 0 };
  const guint cells[3] = { 4, 4, 4 };
  const gfloat bad[3] = { NAN, INFINITY, -INFINITY };
  guint32 payload_nan = 0x7fc01234u;
  P3dcVoxelizeParams params;
  gfloat points[400 * 4];
  guint max, extra, n, i, a, b;
  Gpu g;

  /* max_points - 1 .. max_points + 2 points in a voxel. */
  for (max = 1; max <= 40; max += 13) {
    voxelize_test_params (&params, size, min, cells, 4, max, 8);
    gpu_init (&g, &params, 0);
    for (extra = 0; extra <= 3; extra++) {
      n = 2 * (max + extra - 1);
      for (i = 0; i < n; i++)
        voxelize_test_set_point (points, i, 4, i % 2 ? 3.5f : 0.5f, 2.25f, 1.5f,
            i);
      gpu_check_twice (&g, points, n, "max_points edge");
    }
    gpu_clear (&g);
  }
  /* max_voxels - 1 .. max_voxels + 2 voxels. */
  for (max = 1; max <= 33; max += 8) {
    voxelize_test_params (&params, size, min, cells, 3, 4, max);
    gpu_init (&g, &params, 0);
    for (extra = 0; extra <= 3; extra++) {
      guint n_cells = max + extra - 1;

      n = 2 * n_cells;
      for (i = 0; i < n; i++) {
        guint c = (i % n_cells) * 7 % 64;

        voxelize_test_set_point (points, i, 3, 0.5f + c % 4, 0.5f + c / 4 % 4,
            0.5f + c / 16, 0);
      }
      gpu_check_twice (&g, points, n, "max_voxels edge");
    }
    gpu_clear (&g);
  }
  /* Faces of the KITTI range, and values just inside and outside them. */
  fail_unless_equals_int (p3dc_voxelize_params_init (&params, kitti_size,
          kitti_range, 4, 32, 100), P3DC_OK);
  n = 0;
  for (a = 0; a < 3; a++) {
    gfloat face[2] = { params.range_min[a], (gfloat) kitti_range[3 + a] };

    for (b = 0; b < 2; b++) {
      gfloat p = face[b];

      for (i = 0; i < 12; i++) {
        gfloat xyz[3] = { 30.0f, 1.0f, -1.0f };

        xyz[a] = p;
        voxelize_test_set_point (points, n, 4, xyz[0], xyz[1], xyz[2],
            (gfloat) n);
        n++;
        p = nextafterf (p, i < 6 ? -INFINITY : INFINITY);
        if (i == 5)
          p = nextafterf (face[b], INFINITY);
      }
    }
  }
  /* -0 on KITTI's x face of 0, kept in cell 0 as +0 is */
  voxelize_test_set_point (points, n, 4, -0.0f, 1.0f, -1.0f, (gfloat) n);
  n++;
  gpu_init (&g, &params, 0);
  gpu_check_twice (&g, points, n, "range faces");
  /* Non-finite coordinates, a NaN payload in the intensity. */
  n = 0;
  for (a = 0; a < 3; a++) {
    for (b = 0; b < 3; b++) {
      gfloat xyz[3] = { 30.0f, 1.0f, -1.0f };

      xyz[a] = bad[b];
      voxelize_test_set_point (points, n++, 4, xyz[0], xyz[1], xyz[2], 0);
      xyz[(a + 1) % 3] = 1e30f;
      voxelize_test_set_point (points, n++, 4, xyz[0], xyz[1], xyz[2], 0);
    }
  }
  voxelize_test_set_point (points, n, 4, 30.0f, 1.0f, -1.0f, 0);
  memcpy (&points[n * 4 + 3], &payload_nan, 4);
  n++;
  voxelize_test_set_point (points, n++, 4, 30.0f, 1.0f, -1.0f, INFINITY);
  gpu_check_twice (&g, points, n, "non-finite");
  /* An empty sweep and a single point. */
  gpu_check_twice (&g, NULL, 0, "empty sweep");
  voxelize_test_set_point (points, 0, 4, 30.0f, 1.0f, -1.0f, 0.5f);
  gpu_check_twice (&g, points, 1, "one point");
  gpu_check_twice (&g, NULL, 0, "empty sweep after one point");
  gpu_clear (&g);
}

GST_END_TEST;

/* A sequence of frames through the same outputs with output_clean=1: voxel
 * counts going up and down, voxels shrinking, capped frames, empty frames,
 * and the workspace growing on the way. */
GST_START_TEST (test_clean_sequence)
{
  const gsize sizes[] = { 5000, 20000, 300, 0, 60000, 59000, 1, 120000,
    45000, 45000, 10, 200000, 3000
  };
  guint config;

  for (config = 0; config < 3; config++) {
    P3dcVoxelizeParams params;
    P3dTestRng rng;
    Gpu g;
    guint i;

    if (config == 0)
      nuscenes_params (&params, 20);
    else if (config == 1)
      centerpoint_params (&params, 30000);
    else
      nuscenes_params (&params, 64);
    p3d_test_rng_init (&rng, 900 + config);
    /* A small hint: the workspace grows during the sequence. */
    gpu_init (&g, &params, 1000);
    gpu_check (&g, NULL, 0, FALSE, "first frame");
    for (i = 0; i < G_N_ELEMENTS (sizes); i++) {
      gsize n = sizes[i];
      gfloat *points;
      gfloat margin = (i % 3) * 0.3f;

      if (i % 4 == 1) {
        points = lidar_cloud (&rng, 5, 1 + i % 5, 1 + (guint) n / (1 + i % 5),
            &n);
      } else {
        points = uniform_cloud (&rng, &params, n, margin);
        /* Shrink the cloud around the centre: fewer, fuller voxels. */
        if (i % 2 == 0) {
          gsize k;

          for (k = 0; k < n * params.channels; k++)
            if (k % params.channels < 2)
              points[k] *= 0.1f * (1 + i % 4);
        }
      }
      gpu_check (&g, points, n, TRUE, "clean sequence");
      if (i == 6)
        gpu_check (&g, points, n, FALSE, "poisoned in a clean sequence");
      g_free (points);
    }
    gpu_clear (&g);
  }
}

GST_END_TEST;

/* Two voxelizers of different params on one stream, alternating. */
GST_START_TEST (test_two_voxelizers)
{
  P3dcVoxelizeParams pillars, voxels;
  P3dTestRng rng;
  gfloat *points;
  gsize n;
  Gpu a, b;
  guint i;

  nuscenes_params (&pillars, 20);
  centerpoint_params (&voxels, 160000);
  gpu_init (&a, &pillars, 0);
  gpu_init (&b, &voxels, 0);
  p3d_test_rng_init (&rng, 7);
  for (i = 0; i < 4; i++) {
    points = lidar_cloud (&rng, 5, 2, 30000 + 5000 * i, &n);
    gpu_check (&a, points, n, i > 0, "alternating, pillars");
    gpu_check (&b, points, n, i > 0, "alternating, 3D");
    g_free (points);
  }
  gpu_clear (&a);
  gpu_clear (&b);
}

GST_END_TEST;

/* A frame queued while the caller captures the stream. */
typedef struct
{
  Gpu *gpu;
  gsize n_points;
} CapturedFrame;

static P3dcResult
queue_captured_frame (void *user_data, P3dcCudaStream stream)
{
  CapturedFrame *frame = user_data;
  Gpu *g = frame->gpu;

  return p3dc_voxelize_cuda (g->voxelizer, g->points, frame->n_points,
      &g->out, FALSE, stream);
}

/* Frames captured into the caller's graph and launched from it, between
 * frames run on the voxelizer's own graph: the captured launches must give
 * the reference's output, and leave the voxelizer's graph, whose nodes a
 * captured frame does not update, giving it too.  Pillars and 3D voxels
 * (whose gather differs), clouds of several sizes. */
GST_START_TEST (test_stream_capture)
{
  P3dcVoxelizeParams params[2];
  P3dTestRng rng;
  guint k, i;

  nuscenes_params (&params[0], 20);
  centerpoint_params (&params[1], 160000);
  p3d_test_rng_init (&rng, 11);
  for (k = 0; k < G_N_ELEMENTS (params); k++) {
    Gpu g;

    /* Room for the largest cloud first: a capture cannot allocate. */
    gpu_init (&g, &params[k], 60000);
    for (i = 0; i < 3; i++) {
      CapturedFrame frame = { &g, 0 };
      gfloat *points = lidar_cloud (&rng, 5, 1, 20000 + 15000 * i,
          &frame.n_points);
      gchar *what = g_strdup_printf ("%s, captured frame %u",
          k == 0 ? "pillars" : "3D", i);
      gsize nodes = 0;

      gpu_check (&g, points, frame.n_points, i > 0, what);
      gpu_upload (&g, points, frame.n_points);
      gpu_poison (&g, FALSE);
      fail_unless_equals_int (p3d_capture_and_launch (g.stream,
              queue_captured_frame, &frame, &nodes), P3DC_OK);
      /* cells, scan and gather: the frame needed no reset and no
       * growth, which a capture could not hold. */
      fail_unless_equals_int (nodes, 3);
      gpu_wait (g.stream, what);
      gpu_fetch (&g);
      gpu_compare (&g, points, frame.n_points, FALSE, what);
      gpu_check (&g, points, frame.n_points, TRUE, what);
      g_free (what);
      g_free (points);
    }
    gpu_clear (&g);
  }
}

GST_END_TEST;

/* ---- frames queued without the host waiting between them ---- */

/* Device copies of a few clouds, each frame's stats in a slot of its own. */
typedef struct
{
  guint n_clouds;
  gfloat *host[8];
  gsize n_points[8];
  void *device[8];
  P3dcVoxelizeStats *stats;     /* device, one per frame */
  guint n_frames;
} Queue;

static void
queue_add_cloud (Queue * q, gfloat * points, gsize n, guint channels)
{
  gsize bytes = n * channels * 4;

  fail_unless (q->n_clouds < G_N_ELEMENTS (q->host));
  q->host[q->n_clouds] = points;
  q->n_points[q->n_clouds] = n;
  fail_unless_equals_int (p3dc_cuda_malloc (&q->device[q->n_clouds],
          bytes + 4), P3DC_OK);
  if (bytes > 0)
    fail_unless_equals_int (p3dc_cuda_memcpy_htod (q->device[q->n_clouds],
            points, bytes, NULL), P3DC_OK);
  /* The frames run on non-blocking streams: the copy must be done. */
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (NULL), P3DC_OK);
  q->n_clouds++;
}

static void
queue_init (Queue * q, guint n_frames)
{
  memset (q, 0, sizeof (*q));
  q->n_frames = n_frames;
  fail_unless_equals_int (p3dc_cuda_malloc ((void **) &q->stats,
          n_frames * sizeof (P3dcVoxelizeStats)), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memset (q->stats, 0xff,
          n_frames * sizeof (P3dcVoxelizeStats), NULL), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (NULL), P3DC_OK);
}

static void
queue_clear (Queue * q)
{
  guint i;

  for (i = 0; i < q->n_clouds; i++) {
    p3dc_cuda_free (q->device[i]);
    g_free (q->host[i]);
  }
  p3dc_cuda_free (q->stats);
}

/* Queues cloud @cloud as frame @frame of @g on @stream: no host wait. */
static void
queue_frame (Queue * q, Gpu * g, guint cloud, guint frame, gboolean clean,
    P3dcCudaStream stream)
{
  P3dcVoxelizeOutput out = g->out;
  const P3dcVoxelizeParams *p = &g->params;

  out.stats = &q->stats[frame];
  if (!clean) {
    fail_unless_equals_int (p3dc_cuda_memset (g->out.voxels, 0xff,
            voxelize_test_voxel_floats (p) * 4, stream), P3DC_OK);
    fail_unless_equals_int (p3dc_cuda_memset (g->out.num_points, 0xff,
            (gsize) p->max_voxels * 4, stream), P3DC_OK);
    fail_unless_equals_int (p3dc_cuda_memset (g->out.coords, 0xff,
            (gsize) p->max_voxels * 16, stream), P3DC_OK);
  }
  fail_unless_equals_int (p3dc_voxelize_cuda (g->voxelizer,
          q->n_points[cloud] ? q->device[cloud] : NULL, q->n_points[cloud],
          &out, clean, stream), P3DC_OK);
}

/* The output of @g after the queue: its tensors, and frame @frame's stats
 * (the frames wrote their stats to the queue's slots). */
static void
queue_fetch (Queue * q, Gpu * g, guint frame)
{
  gpu_fetch (g);
  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (&g->got.stats,
          &q->stats[frame], sizeof (P3dcVoxelizeStats), g->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (g->stream), P3DC_OK);
}

/* Every frame's stats against the reference's for its cloud. */
static void
queue_check_stats (Queue * q, const Gpu * g, const guint * frame_cloud,
    const gchar * what)
{
  P3dcVoxelizeStats *got = g_new (P3dcVoxelizeStats, q->n_frames);
  guint f;

  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (got, q->stats,
          q->n_frames * sizeof (P3dcVoxelizeStats), NULL), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (NULL), P3DC_OK);
  for (f = 0; f < q->n_frames; f++) {
    VoxelizeTestResult expected;

    if (frame_cloud[f] == G_MAXUINT)
      continue;
    voxelize_test_result_init (&expected, &g->params);
    fail_unless_equals_int (p3dc_voxelize_cpu (&g->params,
            q->host[frame_cloud[f]], q->n_points[frame_cloud[f]],
            &expected.out), P3DC_OK);
    fail_unless (memcmp (&expected.stats, &got[f], sizeof (got[f])) == 0,
        "%s: frame %u (cloud %u): stats (in %u, nonfinite %u, out of range "
        "%u, over max-points %u, over max-voxels %u, voxels %u, dropped %u), "
        "expected (%u, %u, %u, %u, %u, %u, %u)", what, f, frame_cloud[f],
        got[f].points_in, got[f].points_nonfinite, got[f].points_out_of_range,
        got[f].points_over_max_points, got[f].points_over_max_voxels,
        got[f].voxels, got[f].voxels_dropped, expected.stats.points_in,
        expected.stats.points_nonfinite, expected.stats.points_out_of_range,
        expected.stats.points_over_max_points,
        expected.stats.points_over_max_voxels, expected.stats.voxels,
        expected.stats.voxels_dropped);
    voxelize_test_result_clear (&expected);
  }
  g_free (got);
}

/* Frames on one voxelizer, queued back to back as the element queues them
 * (no host wait between frames): clouds of 0 to 270k points, the workspace
 * growing twice on the way, a full write now and then.  The regression test of the hang hunt: every frame's stats, and the
 * last output, against the reference, and gpu_wait fails instead of hanging
 * if a kernel never ends. */
GST_START_TEST (test_back_to_back)
{
  guint config;

  /* Clouds 4 (100k points) and 5 (270k) make the workspace grow. */
  const guint schedule[] = { 0, 1, 2, 3, 1, 0, 3, 2, 4, 1, 4, 2, 0, 5, 3, 5,
    2, 1, 5, 4, 0, 5, 3, 1
  };

  for (config = 0; config < 2; config++) {
    const guint n_frames = G_N_ELEMENTS (schedule);
    guint *frame_cloud = g_new (guint, n_frames);
    P3dcVoxelizeParams params;
    P3dTestRng rng;
    Queue q;
    gfloat *cloud;
    gsize n;
    guint f, last = 0;
    Gpu g;

    if (config == 0)
      nuscenes_params (&params, 20);
    else
      centerpoint_params (&params, 30000);
    p3d_test_rng_init (&rng, 1300 + config);
    gpu_init (&g, &params, 1000);
    queue_init (&q, n_frames);
    cloud = lidar_cloud (&rng, 5, 2, 10000, &n);
    queue_add_cloud (&q, cloud, n, 5);
    queue_add_cloud (&q, uniform_cloud (&rng, &params, 5000, 0.1f), 5000, 5);
    queue_add_cloud (&q, g_new0 (gfloat, 1), 0, 5);
    cloud = lidar_cloud (&rng, 5, 1, 30000, &n);
    queue_add_cloud (&q, cloud, n, 5);
    queue_add_cloud (&q, uniform_cloud (&rng, &params, 100000, 0.0f), 100000,
        5);
    cloud = lidar_cloud (&rng, 5, 10, 27000, &n);
    queue_add_cloud (&q, cloud, n, 5);
    for (f = 0; f < n_frames; f++) {
      guint which = schedule[f];
      gboolean clean = f > 0 && f % 9 != 4;

      frame_cloud[f] = which;
      queue_frame (&q, &g, which, f, clean, g.stream);
      last = which;
    }
    gpu_wait (g.stream, "back to back");
    queue_fetch (&q, &g, n_frames - 1);
    gpu_compare (&g, q.host[last], q.n_points[last], TRUE,
        "back to back, last frame");
    queue_check_stats (&q, &g, frame_cloud, "back to back");
    queue_clear (&q);
    gpu_clear (&g);
    g_free (frame_cloud);
  }
}

GST_END_TEST;

/* Two voxelizers (a dense and a hashed table) sharing one stream, frames
 * alternating between them without host waits. */
GST_START_TEST (test_two_voxelizers_back_to_back)
{
  const guint n_frames = 12;
  guint *frame_cloud[2] = { g_new (guint, n_frames), g_new (guint, n_frames) };
  P3dcVoxelizeParams pillars, voxels;
  P3dTestRng rng;
  Queue q[2];
  Gpu g[2];
  gfloat *cloud;
  gsize n;
  guint f, k, last[2] = { 0, 0 };

  nuscenes_params (&pillars, 32);
  centerpoint_params (&voxels, 160000);
  gpu_init (&g[0], &pillars, 0);
  gpu_init (&g[1], &voxels, 0);
  p3d_test_rng_init (&rng, 1400);
  for (k = 0; k < 2; k++) {
    queue_init (&q[k], n_frames);
    cloud = lidar_cloud (&rng, 5, 3, 20000, &n);
    queue_add_cloud (&q[k], cloud, n, 5);
    queue_add_cloud (&q[k], uniform_cloud (&rng, &g[k].params, 20000, 0.05f),
        20000, 5);
    cloud = lidar_cloud (&rng, 5, 1, 25000, &n);
    queue_add_cloud (&q[k], cloud, n, 5);
  }
  for (f = 0; f < n_frames; f++) {
    for (k = 0; k < 2; k++) {
      guint which = (f + k) % 3;

      frame_cloud[k][f] = which;
      queue_frame (&q[k], &g[k], which, f, f > 0, g[0].stream);
      last[k] = which;
    }
  }
  gpu_wait (g[0].stream, "two voxelizers back to back");
  for (k = 0; k < 2; k++) {
    queue_fetch (&q[k], &g[k], n_frames - 1);
    gpu_compare (&g[k], q[k].host[last[k]], q[k].n_points[last[k]], TRUE,
        "two voxelizers back to back, last frame");
    queue_check_stats (&q[k], &g[k], frame_cloud[k],
        "two voxelizers back to back");
    queue_clear (&q[k]);
    gpu_clear (&g[k]);
    g_free (frame_cloud[k]);
  }
}

GST_END_TEST;

/* A fresh voxelizer through a sequence that changes the point count, the
 * output's state and the input every frame, with a frame of 0 points in
 * the middle: each frame's launches start from what the last one left. */
GST_START_TEST (test_frame_sequence)
{
  P3dcVoxelizeParams params;
  P3dTestRng rng;
  gfloat *lidar, *uniform;
  gsize n_lidar;
  const gchar *what = "frame sequence";
  Gpu g;

  nuscenes_params (&params, 20);
  p3d_test_rng_init (&rng, 1500);
  lidar = lidar_cloud (&rng, 5, 2, 20000, &n_lidar);
  uniform = uniform_cloud (&rng, &params, 30000, 0.1f);
  gpu_init (&g, &params, 0);
  gpu_check (&g, lidar, n_lidar, FALSE, what);
  gpu_check (&g, lidar, n_lidar, TRUE, what);
  gpu_check (&g, uniform, 30000, TRUE, what);
  gpu_check (&g, NULL, 0, TRUE, what);
  gpu_check (&g, lidar, n_lidar, TRUE, what);
  gpu_check (&g, uniform, 30000, FALSE, what);
  gpu_clear (&g);
  g_free (lidar);
  g_free (uniform);
}

GST_END_TEST;

GST_START_TEST (test_bad_arguments)
{
  P3dcVoxelizeParams params, bad;
  P3dcVoxelizeOutput out;
  P3dcVoxelizer *voxelizer = NULL;
  Gpu g;

  nuscenes_params (&params, 20);
  bad = params;
  bad.channels = 2;
  fail_unless_equals_int (p3dc_voxelizer_new (&bad, 0, &voxelizer),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless (voxelizer == NULL);
  fail_unless_equals_int (p3dc_voxelizer_new (NULL, 0, &voxelizer),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_voxelizer_new (&params, 0, NULL),
      P3DC_ERROR_INVALID_ARGUMENT);
  p3dc_voxelizer_free (NULL);

  gpu_init (&g, &params, 0);
  fail_unless_equals_int (p3dc_voxelize_cuda (NULL, g.points, 0, &g.out, 0,
          g.stream), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_voxelize_cuda (g.voxelizer, NULL, 10, &g.out,
          0, g.stream), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_voxelize_cuda (g.voxelizer, NULL, 0, NULL, 0,
          g.stream), P3DC_ERROR_INVALID_ARGUMENT);
  out = g.out;
  out.count = NULL;
  fail_unless_equals_int (p3dc_voxelize_cuda (g.voxelizer, NULL, 0, &out, 0,
          g.stream), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_voxelize_cuda (g.voxelizer, (const float *) 16,
          (gsize) P3DC_VOXELIZE_MAX_INPUT + 1, &g.out, 0, g.stream),
      P3DC_ERROR_TOO_LARGE);
  /* Stats are optional; the voxelizer still works after the refusals. */
  out = g.out;
  out.stats = NULL;
  fail_unless_equals_int (p3dc_voxelize_cuda (g.voxelizer, NULL, 0, &out, 0,
          g.stream), P3DC_OK);
  gpu_check (&g, NULL, 0, FALSE, "after refusals");
  gpu_clear (&g);
}

GST_END_TEST;

static Suite *
voxelize_cuda_suite (void)
{
  Suite *s = suite_create ("voxelize_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_set_timeout (tc, 600);
  tcase_add_test (tc, test_bad_arguments);
  tcase_add_test (tc, test_edge_cases);
  tcase_add_test (tc, test_random_clouds);
  tcase_add_test (tc, test_channels);
  tcase_add_test (tc, test_many_points_per_voxel);
  tcase_add_test (tc, test_lidar_clouds);
  tcase_add_test (tc, test_clean_sequence);
  tcase_add_test (tc, test_two_voxelizers);
  tcase_add_test (tc, test_back_to_back);
  tcase_add_test (tc, test_two_voxelizers_back_to_back);
  tcase_add_test (tc, test_frame_sequence);
  tcase_add_test (tc, test_stream_capture);

  return s;
}

P3D_CHECK_MAIN (voxelize_cuda);
