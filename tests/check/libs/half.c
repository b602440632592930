/* p3dc_float_to_half() against a conversion written from the definition:
 * the nearest half by exhaustive search over all 65536 halves, ties to even,
 * which is what CUDA's __float2half_rn() computes. */
#include <math.h>
#include <gst/check/gstcheck.h>

#include "half.h"
#include "p3dtest.h"

static guint16
nearest_half_by_search (float value)
{
  /* candidates ordered by magnitude: the positive finite halves */
  double target = fabs ((double) value);
  guint16 best = 0, h;
  double best_err = INFINITY;
  guint16 sign = signbit (value) ? 0x8000 : 0;

  if (isnan (value))
    return 0x7fff;
  if (target >= 65520.0)
    return sign | 0x7c00;
  for (h = 0; h < 0x7c00; h++) {
    double err = fabs ((double) p3dc_half_to_float (h) - target);

    if (err < best_err || (err == best_err && (h & 1) == 0 && (best & 1))) {
      best = h;
      best_err = err;
    }
  }
  return sign | best;
}

GST_START_TEST (test_half_round_trip)
{
  guint32 h;

  /* every finite half converts to float and back unchanged */
  for (h = 0; h < 0x10000; h++) {
    guint16 half = (guint16) h;
    float f = p3dc_half_to_float (half);

    if ((half & 0x7c00) == 0x7c00 && (half & 0x3ff))
      continue;
    fail_unless_equals_int (p3dc_float_to_half (f), half);
  }
}

GST_END_TEST;

GST_START_TEST (test_float_to_half_nearest)
{
  P3dTestRng rng;
  const float special[] = { 0.0f, -0.0f, 1.0f, 65504.0f, 65519.99f, 65520.0f,
    5.9604645e-8f, 2.9802322e-8f, 2.9802326e-8f, 6.1035156e-5f,
    6.1035152e-5f, 1e-10f, -3.14159f, 1.00048828125f, 1.00146484375f,
    INFINITY, -INFINITY, NAN
  };
  guint i;

  for (i = 0; i < G_N_ELEMENTS (special); i++)
    fail_unless_equals_int (p3dc_float_to_half (special[i]),
        nearest_half_by_search (special[i]));
  p3d_test_rng_init (&rng, 1);
  for (i = 0; i < 3000; i++) {
    guint32 bits = p3d_test_rng_u32 (&rng);
    float f;

    /* exponents around the half range, where rounding matters */
    bits =
        (bits & 0x807fffffu) | ((100u + p3d_test_rng_below (&rng, 45)) << 23);
    memcpy (&f, &bits, 4);
    fail_unless_equals_int (p3dc_float_to_half (f), nearest_half_by_search (f));
  }
}

GST_END_TEST;

static Suite *
half_suite (void)
{
  Suite *s = suite_create ("half");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_half_round_trip);
  tcase_add_test (tc, test_float_to_half_nearest);
  return s;
}

P3D_CHECK_MAIN (half);
