/* Helpers shared by the tests: a seeded generator, so that a failure
 * reproduces from its seed on every machine, the GPU gate, and guard bytes
 * behind device outputs. */
#ifndef P3D_TEST_H
#define P3D_TEST_H

#include <gst/check/gstcheck.h>

#include "runtime.h"

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

/* How long a test waits for a message it expects (an error from a
 * streaming thread, say): a minute, so that valgrind or a loaded machine
 * cannot fail a test that would pass; a test that passes never waits that
 * long. */
#define P3D_TEST_MESSAGE_WAIT (60 * GST_SECOND)

/* Guard bytes: a device output is allocated with P3D_TEST_GUARD_BYTES more
 * behind it, all of value P3D_TEST_GUARD_VALUE, read back with them, and a
 * call that writes one of them wrote past its output. */
#define P3D_TEST_GUARD_BYTES 256
#define P3D_TEST_GUARD_VALUE 0x5a

/* @size bytes of device memory and @guard more behind them (0 for an
 * input, P3D_TEST_GUARD_BYTES for an output), every one set to
 * P3D_TEST_GUARD_VALUE by a memset queued on @stream. */
void *p3d_test_device_alloc (gsize size, gsize guard, P3dcCudaStream stream);

/* Sets the @size bytes at @device and the guard behind them to
 * P3D_TEST_GUARD_VALUE again, on @stream. */
void p3d_test_guard_fill (void *device, gsize size, P3dcCudaStream stream);

/* Queues on @stream the copy of the @size bytes at @device and the guard
 * behind them to @host (P3D_TEST_GUARD_BYTES more than @size). */
void p3d_test_guarded_download (void *host, const void *device, gsize size,
    P3dcCudaStream stream);

/* Fails unless the guard behind the @size bytes at @host (read back with
 * p3d_test_guarded_download()) is untouched, naming @what, @tensor and the
 * first byte written. */
void p3d_test_assert_guard (const void *host, gsize size,
    const gchar * tensor, const gchar * what);

/* Makes a critical or warning logged by our own code (log domain
 * "perception", which gst-check does not watch) fail the running test,
 * unless the test expects it (ASSERT_CRITICAL / ASSERT_WARNING). */
void p3d_test_watch_library_log (void);

/* For a loop test whose iterations each run in a process of their own
 * (tests/sanitize-functions.sh: a sanitizer's run of a whole function can
 * outlast a device call): where PERCEPTION_CHECK_ITERATION=K is set,
 * narrows [*@start, *@end) to iteration K alone, or to none where K is
 * outside it; a value that is not a number fails the program (exit 1). */
void p3d_test_loop_range (gint * start, gint * end);

/* tcase_add_loop_test(), narrowed by p3d_test_loop_range(). */
#define p3d_tcase_add_loop_test(tc, tf, start, end)             \
G_STMT_START {                                                  \
  gint p3d_start_ = (start), p3d_end_ = (end);                  \
  p3d_test_loop_range (&p3d_start_, &p3d_end_);                 \
  tcase_add_loop_test (tc, tf, p3d_start_, p3d_end_);           \
} G_STMT_END

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
