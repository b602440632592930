/* The pillarencode kernels against their reference, which they must match
 * bit for bit (the same fmaf chain per slot in the same order, the same
 * ReLU and max; F16 by the same rounding), so the bound measured is 0 ulp,
 * well within the 1e-5 relative the design allows: every format pair, the
 * nuScenes shape (40000 pillars x 20 points x 11 -> 64 x 512 x 512), tiles
 * full of pillars, several groups of output channels (each a pass of the
 * pillars' warps and of the tiles), pillars too large for more than one
 * warp a block, zero rows between points, grids whose size is no multiple
 * of the tile (with planes of whole 16-byte pieces and without), out-of-grid
 * coordinates, shared cells, counts above max-voxels, and a sequence of
 * frames through one workspace whose counts go down (no cell of an earlier
 * frame may survive).  Poisoned canvases, guard bytes behind them. */
#include <string.h>
#include <gst/check/gstcheck.h>

#include "half.h"
#include "pillarencode.h"
#include "p3dtest.h"

typedef struct
{
  P3dcPillarEncodeParams params;
  gsize features_size, canvas_size;
  gfloat *weight, *bias;
  guint8 *features;
  gint32 *coords;
  guint32 count;
  guint8 *canvas;               /* the reference's */
  guint32 dropped;
  guint8 *device_canvas;        /* read back, with guard */
  P3dcCudaStream stream;
  P3dcPillarEncoder *encoder;
  void *d_features, *d_coords, *d_count, *d_canvas, *d_dropped;
} GpuCase;

static guint32
rng_cell (P3dTestRng * rng, const P3dcPillarEncodeParams * p)
{
  return p3d_test_rng_below (rng, p->grid_x * p->grid_y);
}

/* Random weights; pillars in distinct cells (a shuffled prefix) unless
 * @shared, 1 .. max_points points, zero padding. */
static void
gpu_case_fill (GpuCase * c, P3dTestRng * rng, guint32 count, gboolean shared)
{
  const P3dcPillarEncodeParams *p = &c->params;
  gsize cells = (gsize) p->grid_x * p->grid_y, i;
  guint32 *order = g_new (guint32, cells), v, s, f;

  for (i = 0; i < cells; i++)
    order[i] = i;
  for (i = cells - 1; i > 0; i--) {
    guint32 j = p3d_test_rng_below (rng, i + 1), t = order[i];

    order[i] = order[j];
    order[j] = t;
  }
  memset (c->features, 0, c->features_size);
  memset (c->coords, 0, (gsize) p->max_voxels * 16);
  c->count = count;
  for (v = 0; v < MIN (count, p->max_voxels); v++) {
    guint32 cell = shared ? rng_cell (rng, p) : order[v % cells];
    guint32 n = p3d_test_rng_below (rng, 4) == 0 ? p->max_points
        : 1 + p3d_test_rng_below (rng, p->max_points);

    c->coords[v * 4 + 2] = cell / p->grid_x;
    c->coords[v * 4 + 3] = cell % p->grid_x;
    for (s = 0; s < n; s++) {
      /* now and then a point whose features are all zero, between others:
       * a zero row that is not padding */
      gboolean zero = n > 1 && p3d_test_rng_below (rng, 8) == 0;

      for (f = 0; f < p->in_channels; f++) {
        gsize at = ((gsize) v * p->max_points + s) * p->in_channels + f;
        gfloat value = zero || p3d_test_rng_below (rng, 16) == 0 ? 0.0f
            : p3d_test_rng_uniform (rng, -3.0f, 3.0f);

        if (p->half_in)
          ((guint16 *) c->features)[at] = p3dc_float_to_half (value);
        else
          ((gfloat *) c->features)[at] = value;
      }
    }
  }
  g_free (order);
}

static GpuCase *
gpu_case_new (guint32 in, guint32 out, guint32 max_points,
    guint32 max_voxels, guint32 grid_x, guint32 grid_y, gboolean half_in,
    gboolean half_out, guint64 seed)
{
  GpuCase *c = g_new0 (GpuCase, 1);
  P3dTestRng rng;
  guint32 i;

  c->params.in_channels = in;
  c->params.out_channels = out;
  c->params.max_points = max_points;
  c->params.max_voxels = max_voxels;
  c->params.grid_x = grid_x;
  c->params.grid_y = grid_y;
  c->params.half_in = half_in;
  c->params.half_out = half_out;
  c->features_size = p3dc_pillarencode_features_size (&c->params);
  c->canvas_size = p3dc_pillarencode_canvas_size (&c->params);
  fail_unless (c->features_size > 0 && c->canvas_size > 0);
  c->weight = g_new (gfloat, (gsize) in * out);
  c->bias = g_new (gfloat, out);
  p3d_test_rng_init (&rng, seed);
  for (i = 0; i < in * out; i++)
    c->weight[i] = p3d_test_rng_uniform (&rng, -1.0f, 1.0f);
  for (i = 0; i < out; i++)
    c->bias[i] = p3d_test_rng_uniform (&rng, -0.5f, 0.5f);
  c->features = g_malloc0 (c->features_size);
  c->coords = g_new0 (gint32, (gsize) max_voxels * 4);
  c->canvas = g_malloc (c->canvas_size);
  c->device_canvas = g_malloc (c->canvas_size + P3D_TEST_GUARD_BYTES);
  fail_unless_equals_int (p3dc_cuda_stream_create (&c->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_pillarencoder_new (&c->params, c->weight,
          c->bias, &c->encoder), P3DC_OK);
  c->d_features = p3d_test_device_alloc (c->features_size,
      P3D_TEST_GUARD_BYTES, c->stream);
  c->d_coords = p3d_test_device_alloc ((gsize) max_voxels * 16,
      P3D_TEST_GUARD_BYTES, c->stream);
  c->d_count = p3d_test_device_alloc (4, P3D_TEST_GUARD_BYTES, c->stream);
  c->d_canvas = p3d_test_device_alloc (c->canvas_size, P3D_TEST_GUARD_BYTES,
      c->stream);
  c->d_dropped = p3d_test_device_alloc (4, P3D_TEST_GUARD_BYTES, c->stream);
  return c;
}

static void
gpu_case_free (GpuCase * c)
{
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (c->stream), P3DC_OK);
  p3dc_pillarencoder_free (c->encoder);
  p3dc_cuda_free (c->d_features);
  p3dc_cuda_free (c->d_coords);
  p3dc_cuda_free (c->d_count);
  p3dc_cuda_free (c->d_canvas);
  p3dc_cuda_free (c->d_dropped);
  p3dc_cuda_stream_destroy (c->stream);
  g_free (c->weight);
  g_free (c->bias);
  g_free (c->features);
  g_free (c->coords);
  g_free (c->canvas);
  g_free (c->device_canvas);
  g_free (c);
}

/* Upload, poison the canvas, run the kernels, compare with the reference. */
static void
gpu_case_run_check (GpuCase * c, gboolean poison, const gchar * what)
{
  P3dcPillarEncodeInput d_in = { c->d_features, c->d_coords, c->d_count };
  P3dcPillarEncodeInput h_in = { c->features, c->coords, &c->count };
  guint32 device_dropped[1 + P3D_TEST_GUARD_BYTES / 4];
  gsize i;

  fail_unless_equals_int (p3dc_cuda_memcpy_htod (c->d_features, c->features,
          c->features_size, c->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memcpy_htod (c->d_coords, c->coords,
          (gsize) c->params.max_voxels * 16, c->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memcpy_htod (c->d_count, &c->count, 4,
          c->stream), P3DC_OK);
  if (poison)
    fail_unless_equals_int (p3dc_cuda_memset (c->d_canvas, 0xff,
            c->canvas_size, c->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_pillarencode_cuda (c->encoder, &d_in,
          c->d_canvas, c->d_dropped, c->stream), P3DC_OK);
  p3d_test_guarded_download (c->device_canvas, c->d_canvas, c->canvas_size,
      c->stream);
  p3d_test_guarded_download (device_dropped, c->d_dropped, 4, c->stream);
  fail_unless_equals_int (p3dc_cuda_stream_synchronize (c->stream), P3DC_OK);
  fail_unless_equals_int (p3dc_pillarencode_cpu (&c->params, c->weight,
          c->bias, &h_in, c->canvas, &c->dropped), P3DC_OK);

  fail_unless_equals_int (device_dropped[0], c->dropped);
  if (memcmp (c->device_canvas, c->canvas, c->canvas_size) != 0) {
    gsize value = c->params.half_out ? 2 : 4;
    gsize cells = (gsize) c->params.grid_x * c->params.grid_y;
    gdouble got, want;

    for (i = 0; i < c->canvas_size / value; i++)
      if (memcmp (c->device_canvas + i * value, c->canvas + i * value,
              value) != 0)
        break;
    if (c->params.half_out) {
      got = p3dc_half_to_float (((guint16 *) c->device_canvas)[i]);
      want = p3dc_half_to_float (((guint16 *) c->canvas)[i]);
    } else {
      got = ((gfloat *) c->device_canvas)[i];
      want = ((gfloat *) c->canvas)[i];
    }
    fail ("%s: channel %u cell %u is %.9g, reference %.9g", what,
        (guint) (i / cells), (guint) (i % cells), got, want);
  }
  p3d_test_assert_guard (c->device_canvas, c->canvas_size, "the canvas", what);
  p3d_test_assert_guard (device_dropped, 4, "the drop count", what);
}

GST_START_TEST (test_nuscenes_shape_every_format)
{
  guint half_in, half_out;

  for (half_in = 0; half_in < 2; half_in++) {
    for (half_out = 0; half_out < 2; half_out++) {
      GpuCase *c = gpu_case_new (11, 64, 20, 40000, 512, 512, half_in,
          half_out, 10 + half_in * 2 + half_out);
      P3dTestRng rng;
      gchar *what = g_strdup_printf ("nuScenes, in %s, out %s",
          half_in ? "F16" : "F32", half_out ? "F16" : "F32");

      p3d_test_rng_init (&rng, 20 + half_in * 2 + half_out);
      gpu_case_fill (c, &rng, 30000 + p3d_test_rng_below (&rng, 10000), FALSE);
      gpu_case_run_check (c, TRUE, what);
      g_free (what);
      gpu_case_free (c);
    }
  }
}

GST_END_TEST;

GST_START_TEST (test_shapes)
{
  const guint32 shapes[][6] = {
    /* in, out, max-points, max-voxels, grid x, grid y */
    {11, 64, 20, 2000, 37, 29},
    {11, 64, 20, 1073, 37, 29}, /* every cell taken, tiles full */
    {4, 8, 32, 700, 33, 33},
    {64, 63, 64, 300, 100, 7},  /* the largest weights and pillars */
    /* three groups of 64 channels, every cell taken */
    {11, 130, 64, 1100, 37, 29},
    {16, 240, 40, 900, 61, 17}, /* four groups, restaged for each */
    {11, 64, 20, 60, 9, 8},     /* 72 cells: 16-byte planes, a part tile */
    {1, 1, 1, 10, 5, 1},
    {10, 3, 7, 5000, 300, 1},
  };
  guint i, seed;

  for (i = 0; i < G_N_ELEMENTS (shapes); i++) {
    for (seed = 0; seed < 2; seed++) {
      const guint32 *s = shapes[i];
      GpuCase *c = gpu_case_new (s[0], s[1], s[2], s[3], s[4], s[5], seed,
          !seed, 100 + i * 2 + seed);
      P3dTestRng rng;
      gchar *what = g_strdup_printf ("shape %u seed %u", i, seed);

      p3d_test_rng_init (&rng, 200 + i * 2 + seed);
      gpu_case_fill (c, &rng, MIN (s[3], s[4] * s[5]), FALSE);
      gpu_case_run_check (c, TRUE, what);
      g_free (what);
      gpu_case_free (c);
    }
  }
}

GST_END_TEST;

/* Shared cells (the later pillar wins on both paths), out-of-grid
 * coordinates counted, a count above max-voxels clamped. */
GST_START_TEST (test_bad_input)
{
  GpuCase *c = gpu_case_new (11, 64, 20, 5000, 64, 48, FALSE, TRUE, 5);
  P3dTestRng rng;
  guint32 v;

  p3d_test_rng_init (&rng, 6);
  gpu_case_fill (c, &rng, 5000, TRUE);
  for (v = 0; v < 5000; v += 37)
    c->coords[v * 4 + 3 - (v % 2)] = v % 3 ? -1 - (gint32) v : 64 + (gint32) v;
  c->count = 6000;
  gpu_case_run_check (c, TRUE, "shared cells, out of grid, count too high");
  fail_unless (c->dropped > 100);
  c->count = G_MAXUINT32;
  gpu_case_run_check (c, TRUE, "count 2^32 - 1");
  gpu_case_free (c);
}

GST_END_TEST;

/* One workspace, frames with counts up and down and a canvas not poisoned
 * between them: the frame numbers keep earlier frames' cells out. */
GST_START_TEST (test_frame_sequence)
{
  const guint32 counts[] = { 3000, 100, 0, 2999, 1, 3000 };
  GpuCase *c = gpu_case_new (11, 32, 10, 3000, 80, 60, TRUE, FALSE, 9);
  P3dTestRng rng;
  guint i;

  p3d_test_rng_init (&rng, 10);
  for (i = 0; i < G_N_ELEMENTS (counts); i++) {
    gchar *what = g_strdup_printf ("frame %u, count %u", i, counts[i]);

    gpu_case_fill (c, &rng, counts[i], i == 3);
    gpu_case_run_check (c, i == 0, what);
    g_free (what);
  }
  gpu_case_free (c);
}

GST_END_TEST;

GST_START_TEST (test_invalid_arguments)
{
  GpuCase *c = gpu_case_new (2, 2, 2, 4, 4, 4, FALSE, FALSE, 1);
  P3dcPillarEncodeInput in = { c->d_features, c->d_coords, c->d_count };
  P3dcPillarEncoder *encoder = (P3dcPillarEncoder *) 1;
  P3dcPillarEncodeParams params = c->params;
  gfloat bad_weight[4] = { 0, 0, NAN, 0 };

  fail_unless_equals_int (p3dc_pillarencode_cuda (NULL, &in, c->d_canvas,
          NULL, c->stream), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_pillarencode_cuda (c->encoder, NULL,
          c->d_canvas, NULL, c->stream), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_pillarencode_cuda (c->encoder, &in, NULL,
          NULL, c->stream), P3DC_ERROR_INVALID_ARGUMENT);
  in.coords = (const gint32 *) ((guint8 *) c->d_coords + 4);
  fail_unless_equals_int (p3dc_pillarencode_cuda (c->encoder, &in,
          c->d_canvas, NULL, c->stream), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_int (p3dc_pillarencoder_new (&params, bad_weight, c->bias,
          &encoder), P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless (encoder == NULL);
  params.max_points = 0;
  fail_unless_equals_int (p3dc_pillarencoder_new (&params, c->weight, c->bias,
          &encoder), P3DC_ERROR_INVALID_ARGUMENT);
  gpu_case_free (c);
}

GST_END_TEST;

static Suite *
pillarencode_cuda_suite (void)
{
  Suite *s = suite_create ("pillarencode_cuda");
  TCase *tc = tcase_create ("general");

  p3d_test_require_gpu ();
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_nuscenes_shape_every_format);
  tcase_add_test (tc, test_shapes);
  tcase_add_test (tc, test_bad_input);
  tcase_add_test (tc, test_frame_sequence);
  tcase_add_test (tc, test_invalid_arguments);
  return s;
}

P3D_CHECK_MAIN (pillarencode_cuda);
