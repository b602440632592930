/* The pillarencode reference against pillars worked out by hand and against
 * an oracle that computes the net in double from its definition, and its
 * handling of bad input (see cuda/pillarencode.h).
 *
 * Tolerance against the oracle, with u = 2^-24: a slot's dot product of n =
 * in terms accumulated with fmaf errs by at most n u sum |w_i x_i|, the bias
 * addition adds u |result|: (n + 2) u (sum |w_i x_i| + |b|) bounds both, and
 * ReLU and max only pick among values (the max of values each within its
 * own bound is within the largest bound).  A real mistake (a slot left out,
 * padding not taken part, a channel or cell off by one) is far larger for
 * these random inputs. */
#include <math.h>
#include <string.h>
#include <gst/check/gstcheck.h>

#include "half.h"
#include "pillarencode.h"
#include "p3dtest.h"

#define UNIT_ROUNDOFF (1.0 / 16777216.0)

typedef struct
{
  P3dcPillarEncodeParams params;
  gfloat *weight, *bias;
  gpointer features;
  gint32 *coords;
  guint32 count;
  gpointer canvas;
  guint32 dropped;
} Case;

static gsize
cells_of (const Case * c)
{
  return (gsize) c->params.grid_x * c->params.grid_y;
}

static Case *
case_new (guint32 in, guint32 out, guint32 max_points, guint32 max_voxels,
    guint32 grid_x, guint32 grid_y, gboolean half_in, gboolean half_out)
{
  Case *c = g_new0 (Case, 1);

  c->params.in_channels = in;
  c->params.out_channels = out;
  c->params.max_points = max_points;
  c->params.max_voxels = max_voxels;
  c->params.grid_x = grid_x;
  c->params.grid_y = grid_y;
  c->params.half_in = half_in;
  c->params.half_out = half_out;
  fail_unless_equals_int (p3dc_pillarencode_params_validate (&c->params),
      P3DC_OK);
  c->weight = g_new0 (gfloat, (gsize) in * out);
  c->bias = g_new0 (gfloat, out);
  c->features = g_malloc0 (p3dc_pillarencode_features_size (&c->params));
  c->coords = g_new0 (gint32, (gsize) max_voxels * 4);
  c->canvas = g_malloc0 (p3dc_pillarencode_canvas_size (&c->params));
  return c;
}

static void
case_free (Case * c)
{
  g_free (c->weight);
  g_free (c->bias);
  g_free (c->features);
  g_free (c->coords);
  g_free (c->canvas);
  g_free (c);
}

static void
set_feature (Case * c, gsize index, gfloat value)
{
  if (c->params.half_in)
    ((guint16 *) c->features)[index] = p3dc_float_to_half (value);
  else
    ((gfloat *) c->features)[index] = value;
}

static gfloat
get_feature (const Case * c, gsize index)
{
  if (c->params.half_in)
    return p3dc_half_to_float (((const guint16 *) c->features)[index]);
  return ((const gfloat *) c->features)[index];
}

static gfloat
canvas_value (const Case * c, guint32 channel, guint32 y, guint32 x)
{
  gsize at = (gsize) channel * cells_of (c) + (gsize) y * c->params.grid_x + x;

  if (c->params.half_out)
    return p3dc_half_to_float (((const guint16 *) c->canvas)[at]);
  return ((const gfloat *) c->canvas)[at];
}

static P3dcResult
case_run (Case * c)
{
  P3dcPillarEncodeInput in = { c->features, c->coords, &c->count };

  return p3dc_pillarencode_cpu (&c->params, c->weight, c->bias, &in,
      c->canvas, &c->dropped);
}

/* Random weights, biases of both signs, pillars with 1 .. max_points
 * points (a quarter full) in distinct cells, the padding zero; some exact
 * zeros inside valid rows. */
static void
case_fill_random (Case * c, P3dTestRng * rng, guint32 count)
{
  const P3dcPillarEncodeParams *p = &c->params;
  gsize cells = cells_of (c), i;
  guint32 *cell_order = g_new (guint32, cells);
  guint32 v, s, f;

  for (i = 0; i < (gsize) p->in_channels * p->out_channels; i++)
    c->weight[i] = p3d_test_rng_uniform (rng, -1.0f, 1.0f);
  for (i = 0; i < p->out_channels; i++)
    c->bias[i] = p3d_test_rng_uniform (rng, -0.5f, 0.5f);
  for (i = 0; i < cells; i++)
    cell_order[i] = i;
  for (i = cells - 1; i > 0; i--) {
    guint32 j = p3d_test_rng_below (rng, i + 1), t = cell_order[i];

    cell_order[i] = cell_order[j];
    cell_order[j] = t;
  }
  memset (c->features, 0, p3dc_pillarencode_features_size (p));
  memset (c->coords, 0, (gsize) p->max_voxels * 16);
  c->count = count;
  for (v = 0; v < MIN (count, p->max_voxels); v++) {
    guint32 cell = cell_order[v % cells];
    guint32 n = p3d_test_rng_below (rng, 4) == 0 ? p->max_points
        : 1 + p3d_test_rng_below (rng, p->max_points);

    c->coords[v * 4 + 1] = 0;
    c->coords[v * 4 + 2] = cell / p->grid_x;
    c->coords[v * 4 + 3] = cell % p->grid_x;
    for (s = 0; s < n; s++) {
      for (f = 0; f < p->in_channels; f++) {
        gsize at = ((gsize) v * p->max_points + s) * p->in_channels + f;

        set_feature (c, at, p3d_test_rng_below (rng, 16) == 0 ? 0.0f :
            p3d_test_rng_uniform (rng, -3.0f, 3.0f));
      }
    }
  }
  g_free (cell_order);
}

/* The canvas from the definition, in double, with each value's tolerance;
 * returns the expected drop count. */
static guint32
oracle (const Case * c, gdouble * expected, gdouble * tolerance)
{
  const P3dcPillarEncodeParams *p = &c->params;
  gsize cells = cells_of (c);
  guint32 count = MIN (c->count, p->max_voxels), v, s, ch, i, dropped = 0;

  memset (expected, 0, cells * p->out_channels * sizeof (gdouble));
  memset (tolerance, 0, cells * p->out_channels * sizeof (gdouble));
  for (v = 0; v < count; v++) {
    gint32 x = c->coords[v * 4 + 3], y = c->coords[v * 4 + 2];
    gsize cell;

    if (x < 0 || y < 0 || x >= (gint32) p->grid_x || y >= (gint32) p->grid_y) {
      dropped++;
      continue;
    }
    cell = (gsize) y *p->grid_x + x;
    for (ch = 0; ch < p->out_channels; ch++) {
      gdouble best = 0.0, bound = 0.0;

      for (s = 0; s < p->max_points; s++) {
        gdouble sum = c->bias[ch], magnitude = fabs (c->bias[ch]);

        for (i = 0; i < p->in_channels; i++) {
          gdouble term = (gdouble) c->weight[ch * p->in_channels + i] *
              get_feature (c, ((gsize) v * p->max_points + s) *
              p->in_channels + i);

          sum += term;
          magnitude += fabs (term);
        }
        best = MAX (best, sum);
        bound = MAX (bound, (p->in_channels + 2) * UNIT_ROUNDOFF * magnitude);
      }
      /* the later pillar of a cell wins */
      expected[ch * cells + cell] = best;
      tolerance[ch * cells + cell] = bound;
    }
  }
  return dropped;
}

static void
check_against_oracle (Case * c, const gchar * what)
{
  const P3dcPillarEncodeParams *p = &c->params;
  gsize cells = cells_of (c), i;
  gdouble *expected = g_new (gdouble, cells * p->out_channels);
  gdouble *tolerance = g_new (gdouble, cells * p->out_channels);
  guint32 dropped = oracle (c, expected, tolerance);

  memset (c->canvas, 0xa5, p3dc_pillarencode_canvas_size (p));
  c->dropped = 12345;
  fail_unless_equals_int (case_run (c), P3DC_OK);
  fail_unless_equals_int (c->dropped, dropped);
  for (i = 0; i < cells * p->out_channels; i++) {
    guint32 ch = i / cells, y = (i % cells) / p->grid_x, x = i % p->grid_x;
    gdouble actual = canvas_value (c, ch, y, x);
    /* an F16 canvas adds its rounding: 2^-11 relative */
    gdouble allowed = tolerance[i] + (p->half_out ?
        fabs (expected[i]) / 2048.0 + 6e-8 : 0.0);

    if (!(fabs (actual - expected[i]) <= allowed))
      fail ("%s: channel %u cell (%u, %u): %.9g, oracle %.9g (tolerance "
          "%.3g)", what, ch, x, y, actual, expected[i], allowed);
  }
  g_free (expected);
  g_free (tolerance);
}

GST_START_TEST (test_params)
{
  P3dcPillarEncodeParams p = { 11, 64, 20, 40000, 512, 512, 0, 0 };

  fail_unless_equals_int (p3dc_pillarencode_params_validate (&p), P3DC_OK);
  fail_unless_equals_uint64 (p3dc_pillarencode_canvas_size (&p),
      64ull * 512 * 512 * 4);
  fail_unless_equals_uint64 (p3dc_pillarencode_features_size (&p),
      40000ull * 20 * 11 * 4);
  p.half_in = p.half_out = 1;
  fail_unless_equals_uint64 (p3dc_pillarencode_canvas_size (&p),
      64ull * 512 * 512 * 2);
  fail_unless_equals_uint64 (p3dc_pillarencode_features_size (&p),
      40000ull * 20 * 11 * 2);
  fail_unless_equals_int (p3dc_pillarencode_params_validate (NULL),
      P3DC_ERROR_INVALID_ARGUMENT);
  p.in_channels = 0;
  fail_unless_equals_int (p3dc_pillarencode_params_validate (&p),
      P3DC_ERROR_INVALID_ARGUMENT);
  fail_unless_equals_uint64 (p3dc_pillarencode_canvas_size (&p), 0);
  p.in_channels = 11;
  p.grid_y = 0;
  fail_unless_equals_int (p3dc_pillarencode_params_validate (&p),
      P3DC_ERROR_INVALID_ARGUMENT);
  p.grid_y = 512;
  /* 64 x 64 weights and 64 biases: 4160 > 4096 */
  p.in_channels = 64;
  fail_unless_equals_int (p3dc_pillarencode_params_validate (&p),
      P3DC_ERROR_TOO_LARGE);
  p.out_channels = 63;
  p.max_points = 64;
  fail_unless_equals_int (p3dc_pillarencode_params_validate (&p), P3DC_OK);
  p.max_points = 65;
  fail_unless_equals_int (p3dc_pillarencode_params_validate (&p),
      P3DC_ERROR_TOO_LARGE);
  /* a pillar's rows count as the kernel pads them: 13 channels take 16 */
  p.in_channels = 13;
  p.out_channels = 64;
  p.max_points = 256;
  fail_unless_equals_int (p3dc_pillarencode_params_validate (&p), P3DC_OK);
  p.max_points = 257;
  fail_unless_equals_int (p3dc_pillarencode_params_validate (&p),
      P3DC_ERROR_TOO_LARGE);
  /* at most 64 channels in, whatever the other sizes */
  p.in_channels = 65;
  p.out_channels = 1;
  p.max_points = 1;
  fail_unless_equals_int (p3dc_pillarencode_params_validate (&p),
      P3DC_ERROR_TOO_LARGE);
  p.in_channels = 64;
  fail_unless_equals_int (p3dc_pillarencode_params_validate (&p), P3DC_OK);
  p.in_channels = 11;
  p.out_channels = 63;
  p.max_points = 20;
  p.grid_x = 65536;
  p.grid_y = 32768;
  fail_unless_equals_int (p3dc_pillarencode_params_validate (&p),
      P3DC_ERROR_TOO_LARGE);
  p.grid_y = 32767;
  fail_unless_equals_int (p3dc_pillarencode_params_validate (&p), P3DC_OK);
  p.max_voxels = 0x80000000u;
  fail_unless_equals_int (p3dc_pillarencode_params_validate (&p),
      P3DC_ERROR_TOO_LARGE);
}

GST_END_TEST;

/* One pillar of 2 features, 3 slots, 2 points: worked by hand.
 *   W = [[1, 2], [-1, 0.5], [-1, -1]], b = [0.5, -1, 0.25]
 *   rows (1, 1), (2, -1), padding (0, 0)
 *   channel 0: 1 + 2 + 0.5 = 3.5; 2 - 2 + 0.5 = 0.5; pad 0.5: max 3.5
 *   channel 1: -1 + 0.5 - 1 < 0; -2 - 0.5 - 1 < 0; pad ReLU (-1) = 0: 0
 *   channel 2: -2 + 0.25 < 0; -1 + 1 + 0.25 = 0.25; pad 0.25: 0.25
 * and with the third slot holding a point (-1, -1) instead of padding,
 * channel 2 is max (0, 0.25, 2.25) = 2.25 and channel 1 is
 * max (0, 0, 1 - 0.5 - 1 < 0) = 0, channel 0 max (3.5, 0.5, 0) = 3.5. */
GST_START_TEST (test_hand_worked)
{
  static const gfloat weight[6] = { 1, 2, -1, 0.5f, -1, -1 };
  static const gfloat bias[3] = { 0.5f, -1, 0.25f };
  static const gfloat rows[3][2] = { {1, 1}, {2, -1}, {-1, -1} };
  guint half_in, half_out, full;

  for (full = 0; full < 2; full++) {
    for (half_in = 0; half_in < 2; half_in++) {
      for (half_out = 0; half_out < 2; half_out++) {
        /* a 4 x 3 grid; pillar 0 at (x 2, y 1), pillar 1 beyond the count */
        Case *c = case_new (2, 3, 3, 2, 4, 3, half_in, half_out);
        const gfloat expected[3] = { 3.5f, 0.0f, full ? 2.25f : 0.25f };
        guint s, f, ch, x, y;

        memcpy (c->weight, weight, sizeof weight);
        memcpy (c->bias, bias, sizeof bias);
        for (s = 0; s < (full ? 3u : 2u); s++)
          for (f = 0; f < 2; f++)
            set_feature (c, s * 2 + f, rows[s][f]);
        for (s = 0; s < 6; s++)
          set_feature (c, 6 + s, 9.0f);
        c->coords[2] = 1;
        c->coords[3] = 2;
        c->coords[6] = 0;
        c->coords[7] = 0;
        c->count = 1;
        memset (c->canvas, 0x7f, p3dc_pillarencode_canvas_size (&c->params));
        fail_unless_equals_int (case_run (c), P3DC_OK);
        fail_unless_equals_int (c->dropped, 0);
        for (ch = 0; ch < 3; ch++)
          for (y = 0; y < 3; y++)
            for (x = 0; x < 4; x++) {
              gfloat want = x == 2 && y == 1 ? expected[ch] : 0.0f;

              if (canvas_value (c, ch, y, x) != want)
                fail ("full %u half %u/%u: channel %u (%u, %u) is %g, "
                    "expected %g", full, half_in, half_out, ch, x, y,
                    canvas_value (c, ch, y, x), want);
            }
        case_free (c);
      }
    }
  }
}

GST_END_TEST;

GST_START_TEST (test_random_against_oracle)
{
  const guint32 shapes[][6] = {
    /* in, out, max-points, max-voxels, grid x, grid y */
    {11, 64, 20, 300, 37, 29},
    {11, 16, 1, 50, 8, 8},
    {4, 8, 32, 64, 8, 8},       /* every cell taken */
    {10, 3, 7, 500, 100, 3},
    {1, 1, 3, 10, 5, 1},
  };
  guint i, seed, half_in;

  for (i = 0; i < G_N_ELEMENTS (shapes); i++) {
    for (seed = 0; seed < 3; seed++) {
      for (half_in = 0; half_in < 2; half_in++) {
        const guint32 *s = shapes[i];
        Case *c = case_new (s[0], s[1], s[2], s[3], s[4], s[5], half_in,
            seed == 2);
        P3dTestRng rng;
        gchar *what = g_strdup_printf ("shape %u seed %u half-in %u", i, seed,
            half_in);

        p3d_test_rng_init (&rng, 100 * i + 10 * seed + half_in);
        case_fill_random (c, &rng, MIN (s[3], s[4] * s[5]) - seed);
        check_against_oracle (c, what);
        g_free (what);
        case_free (c);
      }
    }
  }
}

GST_END_TEST;

/* Out-of-grid pillars are dropped and counted; a count above max-voxels is
 * clamped; the later of two pillars in one cell wins. */
GST_START_TEST (test_bad_coordinates_and_counts)
{
  Case *c = case_new (11, 16, 5, 60, 10, 6, FALSE, FALSE);
  P3dTestRng rng;
  gfloat *first;
  guint ch;

  p3d_test_rng_init (&rng, 7);
  case_fill_random (c, &rng, 60);
  c->coords[3 * 4 + 3] = -1;
  c->coords[4 * 4 + 3] = 10;
  c->coords[5 * 4 + 2] = 6;
  c->coords[6 * 4 + 2] = G_MININT32;
  c->coords[7 * 4 + 3] = G_MAXINT32;
  /* pillars 10 and 20 share pillar 30's cell */
  memcpy (c->coords + 10 * 4, c->coords + 30 * 4, 16);
  memcpy (c->coords + 20 * 4, c->coords + 30 * 4, 16);
  check_against_oracle (c, "bad coordinates");
  fail_unless_equals_int (c->dropped, 5);

  /* pillar 30 won: its vector alone, computed with the others moved away */
  first = g_memdup2 (c->canvas, p3dc_pillarencode_canvas_size (&c->params));
  c->coords[10 * 4 + 3] = -5;
  c->coords[20 * 4 + 3] = -5;
  fail_unless_equals_int (case_run (c), P3DC_OK);
  fail_unless_equals_int (c->dropped, 7);
  fail_unless (memcmp (first, c->canvas,
          p3dc_pillarencode_canvas_size (&c->params)) == 0);
  /* and the pillars really differ, so the check could fail */
  for (ch = 0; ch < 16; ch++) {
    gsize a = (gsize) 10 * 5 * 11, b = (gsize) 30 *5 * 11;

    if (get_feature (c, a + ch % 11) != get_feature (c, b + ch % 11))
      break;
  }
  fail_unless (ch < 16);
  g_free (first);

  c->count = G_MAXUINT32;
  check_against_oracle (c, "count above max-voxels");
  fail_unless_equals_int (c->dropped, 7);
  case_free (c);
}

GST_END_TEST;

/* F16 canvas = the F32 canvas rounded; F16 features = F32 features that
 * hold the same (half) values, bit for bit. */
GST_START_TEST (test_half_formats)
{
  Case *f32 = case_new (11, 64, 20, 200, 20, 15, FALSE, FALSE);
  Case *f16 = case_new (11, 64, 20, 200, 20, 15, TRUE, TRUE);
  gsize values = (gsize) 200 * 20 * 11, cells = 20 * 15, i;
  P3dTestRng rng;

  p3d_test_rng_init (&rng, 3);
  case_fill_random (f16, &rng, 200);
  memcpy (f32->weight, f16->weight, 11 * 64 * sizeof (gfloat));
  memcpy (f32->bias, f16->bias, 64 * sizeof (gfloat));
  memcpy (f32->coords, f16->coords, 200 * 16);
  f32->count = f16->count;
  for (i = 0; i < values; i++)
    set_feature (f32, i, get_feature (f16, i));
  fail_unless_equals_int (case_run (f32), P3DC_OK);
  fail_unless_equals_int (case_run (f16), P3DC_OK);
  for (i = 0; i < cells * 64; i++) {
    guint16 want = p3dc_float_to_half (((gfloat *) f32->canvas)[i]);

    if (((guint16 *) f16->canvas)[i] != want)
      fail ("value %" G_GSIZE_FORMAT ": 0x%04x, rounded F32 0x%04x", i,
          ((guint16 *) f16->canvas)[i], want);
  }
  case_free (f32);
  case_free (f16);
}

GST_END_TEST;

GST_START_TEST (test_invalid_input_writes_nothing)
{
  Case *c = case_new (2, 2, 2, 2, 2, 2, FALSE, FALSE);
  P3dcPillarEncodeInput in = { c->features, c->coords, &c->count };
  gsize size = p3dc_pillarencode_canvas_size (&c->params), i;

  memset (c->canvas, 0xa5, size);
  c->weight[3] = NAN;
  fail_unless_equals_int (case_run (c), P3DC_ERROR_INVALID_ARGUMENT);
  c->weight[3] = 0.0f;
  c->bias[1] = INFINITY;
  fail_unless_equals_int (case_run (c), P3DC_ERROR_INVALID_ARGUMENT);
  c->bias[1] = 0.0f;
  in.count = NULL;
  fail_unless_equals_int (p3dc_pillarencode_cpu (&c->params, c->weight,
          c->bias, &in, c->canvas, NULL), P3DC_ERROR_INVALID_ARGUMENT);
  in.count = &c->count;
  fail_unless_equals_int (p3dc_pillarencode_cpu (&c->params, NULL, c->bias,
          &in, c->canvas, NULL), P3DC_ERROR_INVALID_ARGUMENT);
  c->params.max_points = 0;
  fail_unless_equals_int (case_run (c), P3DC_ERROR_INVALID_ARGUMENT);
  for (i = 0; i < size; i++)
    fail_unless_equals_int (((guint8 *) c->canvas)[i], 0xa5);
  /* a NULL drop counter is allowed */
  c->params.max_points = 2;
  fail_unless_equals_int (p3dc_pillarencode_cpu (&c->params, c->weight,
          c->bias, &in, c->canvas, NULL), P3DC_OK);
  case_free (c);
}

GST_END_TEST;

static Suite *
pillarencode_suite (void)
{
  Suite *s = suite_create ("pillarencode");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_params);
  tcase_add_test (tc, test_hand_worked);
  tcase_add_test (tc, test_random_against_oracle);
  tcase_add_test (tc, test_bad_coordinates_and_counts);
  tcase_add_test (tc, test_half_formats);
  tcase_add_test (tc, test_invalid_input_writes_nothing);
  return s;
}

P3D_CHECK_MAIN (pillarencode);
