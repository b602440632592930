/* The pillarfeat kernel against its reference, which it must match bit for
 * bit (same float operations in the same order, no fused multiply-add), F16
 * included: random voxels up to 40000 x 32 points, every feature set and
 * format, shapes whose tiles and rows do not fall on 16-byte boundaries,
 * sequences of clean outputs with counts going up and down, poisoned
 * outputs, malformed inputs, signed zeros and subnormals, and guard bytes
 * behind every output; the launch as a CUDA graph with its buffers changing
 * from call to call, inside a caller's stream capture and beside another
 * stream's global capture. */
#include <string.h>
#include <gst/check/gstcheck.h>

#include "half.h"
#include "pillarfeat-private.h"
#include "p3dtest.h"
#include "p3dtest-capture.h"

typedef struct
{
  P3dcPillarFeatParams params;
  guint32 grid[3];
  gsize voxels_size, features_size;
  /* host input and the reference's output */
  gfloat *voxels;
  guint32 *num_points;
  gint32 *coords;
  guint32 count;
  guint8 *features;
  gint32 *out_coords;
  guint32 out_count;
  /* the device's output, read back with its guard bytes */
  guint8 *device_features;
  gint32 *device_coords;
  guint32 device_count[1 + P3D_TEST_GUARD_BYTES / 4];
  /* the device path and its buffers */
  P3dcPillarFeatCuda *pf;
  P3dcCudaStream stream;
  P3dcPillarFeatInput d_in;
  P3dcPillarFeatOutput d_out;
} GpuCase;

static GpuCase *
gpu_case_new (P3dcPillarFeatureSet set, gboolean half, guint32 channels,
    gint intensity_channel, guint32 max_points, guint32 max_voxels)
{
  const double voxel_size[3] = { 0.2, 0.2, 8.0 };
  const double range_min[3] = { -51.2, -51.2, -5.0 };
  GpuCase *c = g_new0 (GpuCase, 1);
  gsize mv = max_voxels;

  c->grid[0] = 512;
  c->grid[1] = 512;
  c->grid[2] = 1;
  fail_unless_equals_int (p3dc_pillarfeat_params_init (&c->params, set, half,
          channels, intensity_channel, max_points, max_voxels, voxel_size,
          range_min), P3DC_OK);
  c->voxels_size = mv * max_points * channels * sizeof (gfloat);
  c->features_size = p3dc_pillarfeat_features_size (&c->params);
  c->voxels = g_malloc0 (c->voxels_size);
  c->num_points = g_new0 (guint32, mv);
  c->coords = g_new0 (gint32, mv * 4);
  c->features = g_malloc0 (c->features_size);
  c->out_coords = g_new0 (gint32, mv * 4);
  c->device_features = g_malloc (c->features_size + P3D_TEST_GUARD_BYTES);
  c->device_coords = g_malloc (mv * 16 + P3D_TEST_GUARD_BYTES);

  fail_unless_equals_int (p3dc_pillarfeat_cuda_new (&c->params, &c->pf),
      P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_stream_create (&c->stream), P3DC_OK);
  c->d_in.voxels = p3d_test_device_alloc (c->voxels_size, 0, c->stream);
  c->d_in.num_points = p3d_test_device_alloc (mv * 4, 0, c->stream);
  c->d_in.coords = p3d_test_device_alloc (mv * 16, 0, c->stream);
  c->d_in.count = p3d_test_device_alloc (4, 0, c->stream);
  c->d_out.features = p3d_test_device_alloc (c->features_size,
      P3D_TEST_GUARD_BYTES, c->stream);
  c->d_out.coords = p3d_test_device_alloc (mv * 16, P3D_TEST_GUARD_BYTES,
      c->stream);
  c->d_out.count = p3d_test_device_alloc (4, P3D_TEST_GUARD_BYTES, c->stream);
  return c;
}

static void
gpu_case_free (GpuCase * c)
{
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (c->stream), P3DC_OK);
  p3dc_cuda_free ((void *) c->d_in.voxels);
  p3dc_cuda_free ((void *) c->d_in.num_points);
  p3dc_cuda_free ((void *) c->d_in.coords);
  p3dc_cuda_free ((void *) c->d_in.count);
  p3dc_cuda_free (c->d_out.features);
  p3dc_cuda_free (c->d_out.coords);
  p3dc_cuda_free (c->d_out.count);
  p3dc_cuda_stream_destroy (c->stream);
  p3dc_pillarfeat_cuda_free (c->pf);
  g_free (c->voxels);
  g_free (c->num_points);
  g_free (c->coords);
  g_free (c->features);
  g_free (c->out_coords);
  g_free (c->device_features);
  g_free (c->device_coords);
  g_free (c);
}

/* Random voxels in their cells below @count (n points each, a quarter of
 * them full), zeros beyond, as voxelize leaves them. */
static void
gpu_case_fill_random (GpuCase * c, P3dTestRng * rng, guint32 count)
{
  const gsize row = (gsize) c->params.max_points * c->params.channels;
  guint32 v, p, ch;

  memset (c->voxels, 0, c->voxels_size);
  memset (c->num_points, 0, (gsize) c->params.max_voxels * 4);
  memset (c->coords, 0, (gsize) c->params.max_voxels * 16);
  c->count = count;
  for (v = 0; v < count; v++) {
    gint32 *coord = c->coords + (gsize) v * 4;
    guint32 n = p3d_test_rng_below (rng, 4) == 0 ? c->params.max_points
        : 1 + p3d_test_rng_below (rng, c->params.max_points);

    coord[1] = p3d_test_rng_below (rng, c->grid[2]);
    coord[2] = p3d_test_rng_below (rng, c->grid[1]);
    coord[3] = p3d_test_rng_below (rng, c->grid[0]);
    c->num_points[v] = n;
    for (p = 0; p < n; p++) {
      gfloat *point = c->voxels + v * row + (gsize) p * c->params.channels;

      for (ch = 0; ch < 3; ch++) {
        gfloat low = c->params.center_offset[ch] - c->params.voxel_size[ch]
            / 2 + coord[3 - ch] * c->params.voxel_size[ch];

        point[ch] = low + c->params.voxel_size[ch] *
            p3d_test_rng_uniform (rng, 0.0f, 1.0f);
      }
      for (ch = 3; ch < c->params.channels; ch++)
        point[ch] = p3d_test_rng_uniform (rng, 0.0f, 255.0f);
    }
  }
}

static void
gpu_case_upload (GpuCase * c)
{
  fail_unless_equals_int (p3dc_cuda_memcpy_htod ((void *) c->d_in.voxels,
          c->voxels, c->voxels_size, c->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memcpy_htod ((void *) c->d_in.num_points,
          c->num_points, (gsize) c->params.max_voxels * 4, c->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memcpy_htod ((void *) c->d_in.coords,
          c->coords, (gsize) c->params.max_voxels * 16, c->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memcpy_htod ((void *) c->d_in.count,
          &c->count, 4, c->stream), P3DC_OK);
}

/* Fills the device outputs with 0xff (NaN in either format), guards kept. */
static void
gpu_case_poison (GpuCase * c)
{
  fail_unless_equals_int (p3dc_cuda_memset (c->d_out.features, 0xff,
          c->features_size, c->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memset (c->d_out.coords, 0xff,
          (gsize) c->params.max_voxels * 16, c->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memset (c->d_out.count, 0xff, 4,
          c->stream), P3DC_OK);
}

static void
gpu_case_run (GpuCase * c, gboolean output_clean)
{
  fail_unless_equals_int (p3dc_pillarfeat_cuda (c->pf, &c->d_in,
          &c->d_out, output_clean, c->stream), P3DC_OK);
}

static gdouble
feature_as_double (const GpuCase * c, const guint8 * features, gsize index)
{
  if (c->params.half)
    return p3dc_half_to_float (((const guint16 *) features)[index]);
  return ((const gfloat *) features)[index];
}

/* Runs the reference on the host input and requires the device output to
 * be the same bytes; on a difference, names the first one. */
static void
gpu_case_check (GpuCase * c, const gchar * what)
{
  const gsize value_size = c->params.half ? 2 : 4;
  const guint32 features = p3dc_pillar_feature_count (c->params.features);
  const gsize mv = c->params.max_voxels;
  P3dcPillarFeatInput in = { c->voxels, c->num_points, c->coords, &c->count };
  P3dcPillarFeatOutput out = { c->features, c->out_coords, &c->out_count };
  gsize i;

  p3d_test_guarded_download (c->device_features, c->d_out.features,
      c->features_size, c->stream);
  p3d_test_guarded_download (c->device_coords, c->d_out.coords, mv * 16,
      c->stream);
  p3d_test_guarded_download (c->device_count, c->d_out.count, 4, c->stream);
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (c->stream), P3DC_OK);
  p3dc_pillarfeat_cpu (&c->params, &in, &out);

  if (c->device_count[0] != c->out_count)
    fail ("%s: count %u, reference %u", what, c->device_count[0], c->out_count);
  if (memcmp (c->device_features, c->features, c->features_size) != 0) {
    for (i = 0; i < c->features_size / value_size; i++) {
      if (memcmp (c->device_features + i * value_size,
              c->features + i * value_size, value_size) != 0)
        break;
    }
    fail ("%s: feature %u of point %u of voxel %u (value %" G_GSIZE_FORMAT
        ") is %.9g, reference %.9g (%u voxels)", what,
        (guint) (i % features),
        (guint) (i / features % c->params.max_points),
        (guint) (i / features / c->params.max_points), i,
        feature_as_double (c, c->device_features, i),
        feature_as_double (c, c->features, i), c->out_count);
  }
  for (i = 0; i < mv * 4; i++) {
    if (c->device_coords[i] != c->out_coords[i])
      fail ("%s: coords of voxel %u [%u] are %d, reference %d", what,
          (guint) (i / 4), (guint) (i % 4), c->device_coords[i],
          c->out_coords[i]);
  }
  p3d_test_assert_guard (c->device_features, c->features_size, "features",
      what);
  p3d_test_assert_guard (c->device_coords, mv * 16, "coords", what);
  p3d_test_assert_guard (c->device_count, 4, "count", what);
}

/* The host input to the device, onto a poisoned output, and checked. */
static void
gpu_case_compare (GpuCase * c, const gchar * what)
{
  gpu_case_upload (c);
  gpu_case_poison (c);
  gpu_case_run (c, FALSE);
  gpu_case_check (c, what);
}

static const P3dcPillarFeatureSet all_sets[] = {
  P3DC_PILLAR_FEATURES_POINTPILLARS_10, P3DC_PILLAR_FEATURES_MMDET3D_9,
  P3DC_PILLAR_FEATURES_POINTPILLARS_11, P3DC_PILLAR_FEATURES_MMDET3D_11
};

GST_START_TEST (test_full_size_every_set)
{
  guint s, half;

  for (s = 0; s < G_N_ELEMENTS (all_sets); s++) {
    for (half = 0; half < 2; half++) {
      GpuCase *c = gpu_case_new (all_sets[s], half, 4, 3, 32, 40000);
      P3dTestRng rng;
      gchar *what = g_strdup_printf ("set %d, %s", all_sets[s],
          half ? "F16" : "F32");

      p3d_test_rng_init (&rng, 100 + s * 2 + half);
      gpu_case_fill_random (c, &rng, 30000 + p3d_test_rng_below (&rng, 100));
      gpu_case_compare (c, what);
      /* every voxel used */
      gpu_case_fill_random (c, &rng, 40000);
      gpu_case_upload (c);
      gpu_case_run (c, TRUE);
      gpu_case_check (c, what);
      g_free (what);
      gpu_case_free (c);
    }
  }
}

GST_END_TEST;

/* Signed zeros and subnormals over random voxels: every x -0 in every
 * fifth voxel (mean +0, x - mean -0: libs/pillarfeat's test_signed_zeros
 * works one by hand), every y too in every tenth, and z the smallest
 * subnormal of either sign in every seventh (the z sums and means
 * subnormal; F16 rounds z to zeros of either sign). */
static void
gpu_case_spoil_tiny (GpuCase * c, P3dTestRng * rng)
{
  const gsize row = (gsize) c->params.max_points * c->params.channels;
  guint32 v, p;

  for (v = 0; v < c->count; v++)
    for (p = 0; p < c->num_points[v]; p++) {
      gfloat *point = c->voxels + v * row + (gsize) p * c->params.channels;

      if (v % 5 == 0)
        point[0] = -0.0f;
      if (v % 10 == 0)
        point[1] = -0.0f;
      if (v % 7 == 0) {
        guint32 bits = 1u | (p3d_test_rng_u32 (rng) & 0x80000000u);

        memcpy (&point[2], &bits, sizeof bits);
      }
    }
}

/* Those voxels bit for bit as on the host, every set and format, through
 * the point kernel (max-points 32) and the slot kernel (33). */
GST_START_TEST (test_signed_zeros)
{
  const guint32 max_points[] = { 32, 33 };
  guint s, half, m;

  for (m = 0; m < G_N_ELEMENTS (max_points); m++)
    for (s = 0; s < G_N_ELEMENTS (all_sets); s++)
      for (half = 0; half < 2; half++) {
        GpuCase *c = gpu_case_new (all_sets[s], half, 4, 3, max_points[m],
            2000);
        P3dTestRng rng;
        gchar *what = g_strdup_printf ("signed zeros, max-points %u, set %d, "
            "%s", max_points[m], all_sets[s], half ? "F16" : "F32");

        /* the kernel the comment above names */
        fail_unless_equals_int (p3dc_pillarfeat_cuda_tile_voxels (c->pf),
            max_points[m] == 32 ? 8 : 0);
        p3d_test_rng_init (&rng, 700 + 8 * m + 2 * s + half);
        gpu_case_fill_random (c, &rng, 1500);
        gpu_case_spoil_tiny (c, &rng);
        gpu_case_compare (c, what);
        g_free (what);
        gpu_case_free (c);
      }
}

GST_END_TEST;

GST_START_TEST (test_shapes)
{
  /* max-points that the point kernel takes, in tiles of 1 to 128 voxels
   * (above 32 voxels, max-points 6 and less, the warps' sums added after a
   * barrier), and that it does not (the slot kernel's: above 256, and odd,
   * twice odd or four times odd above 32, 64 or 128), with slot tiles
   * that divide and do not divide a voxel's slots; rows of odd byte
   * counts, voxel counts below one tile, and a tensor whose size is not a
   * multiple of 16 bytes */
  const guint32 shapes[][5] = {
    /* max_points, max_voxels, channels, intensity channel + 1, the point
     * kernel's voxels a tile (0: the slot kernel) */
    {1, 1, 3, 0, 128}, {1, 1000, 4, 4, 128}, {3, 3, 3, 0, 80},
    {7, 4097, 5, 4, 32}, {20, 1001, 4, 4, 12}, {32, 9, 5, 0, 8},
    {33, 500, 4, 4, 0}, {300, 21, 5, 4, 0}, {64, 300, 4, 4, 4},
    {5, 40000, 4, 4, 48}, {2, 129, 4, 4, 128}, {4, 64, 3, 0, 64},
    {8, 5000, 5, 4, 32}, {16, 700, 4, 0, 16}, {32, 3000, 4, 4, 8},
    {4, 65, 3, 0, 64}, {8, 5001, 5, 4, 32}, {16, 701, 4, 0, 16},
    {256, 40, 4, 4, 1}, {257, 7, 4, 4, 0}, {65, 301, 4, 4, 0},
    {100, 203, 5, 4, 2}, {24, 999, 4, 4, 10}, {6, 3001, 4, 4, 40},
    {40, 77, 5, 4, 6},
  };
  guint shape, s, half;

  for (shape = 0; shape < G_N_ELEMENTS (shapes); shape++) {
    for (s = 0; s < G_N_ELEMENTS (all_sets); s++) {
      for (half = 0; half < 2; half++) {
        const guint32 *sh = shapes[shape];
        GpuCase *c = gpu_case_new (all_sets[s], half, sh[2],
            (gint) sh[3] - 1, sh[0], sh[1]);
        /* the last, a count that ends inside a tile's voxels */
        guint32 counts[4] = { sh[1], sh[1] / 2, 0, sh[1] / 2 + 1 };
        P3dTestRng rng;
        guint i;

        fail_unless_equals_int (p3dc_pillarfeat_cuda_tile_voxels (c->pf),
            sh[4]);
        p3d_test_rng_init (&rng, shape * 100 + s * 2 + half);
        for (i = 0; i < G_N_ELEMENTS (counts); i++) {
          gchar *what = g_strdup_printf ("max-points %u, max-voxels %u, "
              "%u channels, intensity %d, set %d, %s, count %u", sh[0], sh[1],
              sh[2], (gint) sh[3] - 1, all_sets[s], half ? "F16" : "F32",
              counts[i]);

          gpu_case_fill_random (c, &rng, counts[i]);
          gpu_case_compare (c, what);
          g_free (what);
        }
        gpu_case_free (c);
      }
    }
  }
}

GST_END_TEST;

/* Counts going up and down on a clean output: each call may leave alone
 * only the rows that the previous call left zero. */
static void
check_clean_sequence (P3dcPillarFeatureSet set, gboolean half,
    guint32 max_points, guint32 max_voxels, const guint32 * counts,
    guint n_counts)
{
  GpuCase *c = gpu_case_new (set, half, 4, 3, max_points, max_voxels);
  P3dTestRng rng;
  guint i;

  p3d_test_rng_init (&rng, set * 7 + half + max_points);
  gpu_case_poison (c);
  for (i = 0; i < n_counts; i++) {
    gchar *what = g_strdup_printf ("set %d, %s, max-points %u, max-voxels %u,"
        " step %u: count %u after %u", set, half ? "F16" : "F32", max_points,
        max_voxels, i, counts[i], i > 0 ? counts[i - 1] : 0);

    gpu_case_fill_random (c, &rng, MIN (counts[i], max_voxels));
    /* a count beyond max-voxels is clamped: the output is as if full */
    c->count = counts[i];
    gpu_case_upload (c);
    gpu_case_run (c, i > 0);
    gpu_case_check (c, what);
    g_free (what);
  }
  gpu_case_free (c);
}

GST_START_TEST (test_clean_sequences)
{
  const guint32 counts[] = { 1000, 5000, 200, 0, 0, 40000, 39999, 3, 3,
    12000, 40001, 17, G_MAXUINT32, 0, 30000
  };
  /* up, down, to nothing, to full, beyond */
  const guint32 short_counts[] = { 30000, 2000, 0, 40000, 40001, 100 };
  guint s, half;

  for (s = 0; s < G_N_ELEMENTS (all_sets); s++)
    for (half = 0; half < 2; half++)
      check_clean_sequence (all_sets[s], half, 32, 40000, short_counts,
          G_N_ELEMENTS (short_counts));
  check_clean_sequence (P3DC_PILLAR_FEATURES_POINTPILLARS_10, TRUE, 32, 40000,
      counts, G_N_ELEMENTS (counts));
  /* rows of 20 x 9 halves are not whole 16-byte chunks */
  check_clean_sequence (P3DC_PILLAR_FEATURES_MMDET3D_9, TRUE, 20, 40000, counts,
      G_N_ELEMENTS (counts));
  /* 32 voxels a tile of the point kernel */
  check_clean_sequence (P3DC_PILLAR_FEATURES_POINTPILLARS_10, FALSE, 8, 40000,
      counts, G_N_ELEMENTS (counts));
  /* the slot kernel */
  check_clean_sequence (P3DC_PILLAR_FEATURES_POINTPILLARS_10, TRUE, 65, 5000,
      counts, G_N_ELEMENTS (counts));
}

GST_END_TEST;

GST_START_TEST (test_clean_sequence_many_voxels)
{
  /* 2^22 + 5 voxels need 23 count bits, which leaves room for only 512
   * blocks' tickets: the grid is cut to that and loops over more tiles */
  const guint32 counts[] = { 3000000, 4194309, 100, 2500000 };

  check_clean_sequence (P3DC_PILLAR_FEATURES_MMDET3D_9, TRUE, 1, 4194309,
      counts, G_N_ELEMENTS (counts));
}

GST_END_TEST;

/* mmdet3d-11 reads channels 3 and 4 itself: xyzit at the nuScenes shapes,
 * and formats with fewer channels, where the missing ones are 0. */
GST_START_TEST (test_mmdet3d_11_channels)
{
  guint channels, half;

  for (channels = 3; channels <= 5; channels++) {
    for (half = 0; half < 2; half++) {
      GpuCase *c = gpu_case_new (P3DC_PILLAR_FEATURES_MMDET3D_11, half,
          channels, channels > 3 ? 3 : -1, 20, 40000);
      P3dTestRng rng;
      gchar *what = g_strdup_printf ("mmdet3d-11, %u channels, %s", channels,
          half ? "F16" : "F32");

      p3d_test_rng_init (&rng, 900 + channels * 2 + half);
      gpu_case_fill_random (c, &rng, 30000 + p3d_test_rng_below (&rng, 100));
      gpu_case_compare (c, what);
      g_free (what);
      gpu_case_free (c);
    }
  }
}

GST_END_TEST;

GST_START_TEST (test_malformed_input)
{
  /* both ways of summing the means: max-points 20, 4 and 32 by the point
   * kernel's threads, from the points in shared memory, 65 by the slot
   * kernel's, from memory */
  const guint32 max_points[] = { 20, 4, 32, 65 };
  guint half, k;

  for (k = 0; k < G_N_ELEMENTS (max_points); k++) {
    for (half = 0; half < 2; half++) {
      const guint32 mp = max_points[k];
      GpuCase *c = gpu_case_new (P3DC_PILLAR_FEATURES_POINTPILLARS_11, half, 4,
          3, mp, 3000);
      P3dTestRng rng;
      gchar *what = g_strdup_printf ("malformed input, max-points %u, %s", mp,
          half ? "F16" : "F32");
      guint32 v;

      p3d_test_rng_init (&rng, 31 + half + 2 * k);
      gpu_case_fill_random (c, &rng, 3000);
      /* points in every slot, then counts above max-points and zero
       * counts: the slots past a voxel's count must not count */
      for (v = 0; v < 3000 * mp * 4; v++)
        if (c->voxels[v] == 0.0f)
          c->voxels[v] = p3d_test_rng_uniform (&rng, -50.0f, 50.0f);
      for (v = 0; v < 3000; v += 5)
        c->num_points[v] = v % 2 ? mp + 1 : G_MAXUINT32;
      for (v = 1; v < 3000; v += 7)
        c->num_points[v] = 0;
      c->count = 3001;
      gpu_case_compare (c, what);
      fail_unless_equals_int (c->out_count, 3000);
      g_free (what);
      gpu_case_free (c);
    }
  }
}

GST_END_TEST;

GST_START_TEST (test_invalid_arguments)
{
  GpuCase *c = gpu_case_new (P3DC_PILLAR_FEATURES_POINTPILLARS_10, TRUE, 4, 3,
      32, 100);
  P3dcPillarFeatInput in = c->d_in;
  P3dcPillarFeatOutput out = c->d_out;
  P3dcPillarFeatParams params = c->params;
  P3dcPillarFeatCuda *pf = (P3dcPillarFeatCuda *) 0x1;

  fail_unless_equals_int (p3dc_pillarfeat_cuda (c->pf, NULL, &out, 0,
          c->stream), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_pillarfeat_cuda (c->pf, &in, NULL, 0,
          c->stream), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_pillarfeat_cuda (NULL, &in, &out, 0,
          c->stream), P3DC_ERROR_INVALID_ARGUMENT);
  in.num_points = NULL;
  fail_unless_equals_int (p3dc_pillarfeat_cuda (c->pf, &in, &out, 0,
          c->stream), P3DC_ERROR_INVALID_ARGUMENT);
  in = c->d_in;
  out.features = (guint8 *) out.features + 8;
  fail_unless_equals_int (p3dc_pillarfeat_cuda (c->pf, &in, &out, 0,
          c->stream), P3DC_ERROR_INVALID_ARGUMENT);
  out = c->d_out;
  out.count = (guint32 *) in.count;
  fail_unless_equals_int (p3dc_pillarfeat_cuda (c->pf, &in, &out, 0,
          c->stream), P3DC_ERROR_INVALID_ARGUMENT);
  params.intensity_channel = 4;
  fail_unless_equals_int (p3dc_pillarfeat_cuda_new (&params, &pf),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless (pf == NULL);
  fail_unless_equals_int (p3dc_pillarfeat_cuda_new (NULL, &pf),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_pillarfeat_cuda_new (&c->params, NULL),
      P3DC_ERROR_INVALID_ARGUMENT);
  p3dc_pillarfeat_cuda_free (NULL);
  gpu_case_free (c);
}

GST_END_TEST;

/* One device path on two cases' buffers taken in turns, so that the
 * graph's node is set again on every call, and twice on one case's
 * buffers, so that the graph runs as the call before left it: counts up
 * and down, clean and full writes (a case's output is clean when it holds
 * that case's last output). */
GST_START_TEST (test_graph_buffers)
{
  const guint32 counts[] = { 30000, 2000, 0, 40000, 17, 12000, 40001, 5 };
  GpuCase *cases[2];
  P3dTestRng rng;
  guint i, k;

  p3d_test_rng_init (&rng, 1200);
  cases[0] = gpu_case_new (P3DC_PILLAR_FEATURES_POINTPILLARS_10, TRUE, 4, 3,
      32, 40000);
  cases[1] = gpu_case_new (P3DC_PILLAR_FEATURES_POINTPILLARS_10, TRUE, 4, 3,
      32, 40000);
  for (k = 0; k < 2; k++)
    gpu_case_poison (cases[k]);
  for (i = 0; i < G_N_ELEMENTS (counts); i++) {
    /* in turns, then the second of each pair on the same buffers */
    GpuCase *c = cases[i % 4 < 2 ? i % 2 : 1];
    gchar *what = g_strdup_printf ("call %u on the buffers of case %u, "
        "count %u", i, i % 4 < 2 ? i % 2 : 1, counts[i]);

    gpu_case_fill_random (c, &rng, MIN (counts[i], 40000));
    c->count = counts[i];
    gpu_case_upload (c);
    fail_unless_equals_int (p3dc_pillarfeat_cuda (cases[0]->pf, &c->d_in,
            &c->d_out, i >= 2, c->stream), P3DC_OK);
    gpu_case_check (c, what);
    g_free (what);
  }
  fail_unless (p3dc_pillarfeat_cuda_graph_built (cases[0]->pf));
  for (k = 0; k < 2; k++)
    gpu_case_free (cases[k]);
}

GST_END_TEST;

static P3dcResult
queue_run (void *user_data, P3dcCudaStream stream)
{
  GpuCase *c = user_data;

  return p3dc_pillarfeat_cuda (c->pf, &c->d_in, &c->d_out, FALSE, stream);
}

/* Calls queued while the caller captures the stream launch the kernel into
 * the caller's graph: on a fresh device path, then between direct calls,
 * whose graph must stay as the last direct call left it. */
GST_START_TEST (test_stream_capture)
{
  GpuCase *c = gpu_case_new (P3DC_PILLAR_FEATURES_MMDET3D_11, TRUE, 5, 3, 20,
      9000);
  P3dTestRng rng;
  guint step;

  p3d_test_rng_init (&rng, 1300);
  for (step = 0; step < 5; step++) {
    gboolean captured = step % 2 == 0;
    gchar *what = g_strdup_printf ("step %u (%s)", step,
        captured ? "captured" : "direct");

    gpu_case_fill_random (c, &rng, 1000 * (step + 2));
    gpu_case_upload (c);
    gpu_case_poison (c);
    if (captured) {
      gsize nodes = 0;

      fail_unless_equals_int (p3d_capture_and_launch (c->stream, queue_run, c,
              &nodes), P3DC_OK);
      fail_unless (nodes >= 1, "%s: the capture holds no node", what);
    } else {
      gpu_case_run (c, FALSE);
    }
    gpu_case_check (c, what);
    g_free (what);
  }
  /* the direct calls ran the graph, which the first of them built */
  fail_unless (p3dc_pillarfeat_cuda_graph_built (c->pf));
  gpu_case_free (c);
}

GST_END_TEST;

/* One device path's call on a case's buffers, for
 * p3d_call_beside_global_capture. */
typedef struct
{
  P3dcPillarFeatCuda *pf;
  GpuCase *c;
} RunOn;

static P3dcResult
queue_run_on (void *user_data, P3dcCudaStream stream)
{
  RunOn *r = user_data;

  return p3dc_pillarfeat_cuda (r->pf, &r->c->d_in, &r->c->d_out, FALSE, stream);
}

/* A first call, which builds the graph, while another stream is captured
 * in the global mode (as PyTorch captures): the build must not fail, nor
 * break that capture; then a call on a second case's buffers, which makes
 * a second executable form of the graph beside such a capture, and a third
 * on the first case's. */
GST_START_TEST (test_beside_global_capture)
{
  GpuCase *cases[2];
  P3dcCudaStream capturing = NULL;
  P3dTestRng rng;
  guint call, k;

  for (k = 0; k < 2; k++)
    cases[k] = gpu_case_new (P3DC_PILLAR_FEATURES_POINTPILLARS_10, TRUE, 4, 3,
        32, 5000);
  p3d_test_rng_init (&rng, 1400);
  fail_unless_equals_int (p3dc_cuda_stream_create (&capturing), P3DC_OK);
  for (call = 0; call < 3; call++) {
    GpuCase *c = cases[call % 2];
    RunOn r = { cases[0]->pf, c };
    gchar *what = g_strdup_printf ("call %u beside a global capture, on "
        "case %u's buffers", call, call % 2);

    gpu_case_fill_random (c, &rng, 3000 + 1000 * call);
    gpu_case_upload (c);
    gpu_case_poison (c);
    fail_unless_equals_int (p3dc_cuda_stream_synchronize (c->stream), P3DC_OK);
    fail_unless_equals_int (p3d_call_beside_global_capture (capturing,
            queue_run_on, &r, c->stream), P3DC_OK);
    gpu_case_check (c, what);
    g_free (what);
  }
  fail_unless (p3dc_pillarfeat_cuda_graph_built (cases[0]->pf));
  fail_unless_equals_int (p3dc_cuda_stream_destroy (capturing), P3DC_OK);
  for (k = 0; k < 2; k++)
    gpu_case_free (cases[k]);
}

GST_END_TEST;

static Suite *
pillarfeat_cuda_suite (void)
{
  Suite *s = suite_create ("pillarfeat_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_full_size_every_set);
  tcase_add_test (tc, test_signed_zeros);
  tcase_add_test (tc, test_shapes);
  tcase_add_test (tc, test_clean_sequences);
  tcase_add_test (tc, test_clean_sequence_many_voxels);
  tcase_add_test (tc, test_mmdet3d_11_channels);
  tcase_add_test (tc, test_malformed_input);
  tcase_add_test (tc, test_invalid_arguments);
  tcase_add_test (tc, test_graph_buffers);
  tcase_add_test (tc, test_stream_capture);
  tcase_add_test (tc, test_beside_global_capture);
  return s;
}

P3D_CHECK_MAIN (pillarfeat_cuda);
