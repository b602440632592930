/* Helpers shared by the tests: a seeded generator, so that a failure
 * reproduces from its seed on every machine, and the GPU gate. */
#ifndef P3D_TEST_H
#define P3D_TEST_H

#include <gst/check/gstcheck.h>

G_BEGIN_DECLS

/* SplitMix64: small, fast, and the same sequence everywhere. */
typedef struct
{
  guint64 state;
} P3dTestRng;

void p3d_test_rng_init (P3dTestRng * rng, guint64 seed);
guint32 p3d_test_rng_u32 (P3dTestRng * rng);
/* Uniform in [0, bound). */
guint32 p3d_test_rng_below (P3dTestRng * rng, guint32 bound);
/* Uniform float in [lo, hi). */
gfloat p3d_test_rng_uniform (P3dTestRng * rng, gfloat lo, gfloat hi);

/* Call first in a test program that needs a GPU: without one it exits 77
 * (meson: skipped), or fails when PERCEPTION_REQUIRE_GPU=1 is set, so that a
 * GPU run can never pass by skipping. */
void p3d_test_require_gpu (void);

/* TRUE when PERCEPTION_REQUIRE_GPU=1, or when PERCEPTION_REQUIRE_GPUS asks
 * for one device or more. */
gboolean p3d_test_gpu_required (void);

/* The number of devices PERCEPTION_REQUIRE_GPUS=N asks for, 0 when it is
 * unset; a value that is not a number fails the program (exit 1), so a typo
 * cannot turn a required run into a skipped one. */
guint p3d_test_gpus_required (void);

/* For the cases of a program that need @n devices: TRUE when there are at
 * least @n. With fewer it returns FALSE (the caller leaves those cases out
 * and says so), or fails the program (exit 1) when PERCEPTION_REQUIRE_GPUS
 * asks for @n or more, so that a multi-GPU run can never pass by skipping. */
gboolean p3d_test_require_gpus (guint n);

/* Makes a critical or warning logged by our own code (log domain
 * "perception", which gst-check does not watch) fail the running test,
 * unless the test expects it (ASSERT_CRITICAL / ASSERT_WARNING). */
void p3d_test_watch_library_log (void);

/* GST_CHECK_MAIN, with our library's log watched. */
#define P3D_CHECK_MAIN(name)                                    \
int main (int argc, char **argv)                                \
{                                                               \
  Suite *s;                                                     \
  gst_check_init (&argc, &argv);                                \
  p3d_test_watch_library_log ();                                \
  s = name##_suite ();                                          \
  return gst_check_run_suite (s, # name, __FILE__);             \
}

G_END_DECLS

#endif /* P3D_TEST_H */
