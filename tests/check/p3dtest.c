#include <stdlib.h>
#include <string.h>

#include "p3dtest.h"

void
p3d_test_rng_init (P3dTestRng * rng, guint64 seed)
{
  rng->state = seed;
}

guint32
p3d_test_rng_u32 (P3dTestRng * rng)
{
  guint64 z = (rng->state += G_GUINT64_CONSTANT (0x9E3779B97F4A7C15));

  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT (0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT (0x94D049BB133111EB);
  return (guint32) ((z ^ (z >> 31)) >> 32);
}

guint32
p3d_test_rng_below (P3dTestRng * rng, guint32 bound)
{
  return (guint32) (((guint64) p3d_test_rng_u32 (rng) * bound) >> 32);
}

gfloat
p3d_test_rng_uniform (P3dTestRng * rng, gfloat lo, gfloat hi)
{
  /* 24 random bits: every value is an exact float in [0, 1). */
  gfloat unit = (p3d_test_rng_u32 (rng) >> 8) * (1.0f / 16777216.0f);

  return lo + (hi - lo) * unit;
}

/* Whether the environment variable @name is set (and not empty), its value
 * in *@number; a value that is not a number up to @most fails the program
 * (exit 1), saying that it is not @what, so that a typo cannot pass for an
 * unset variable. */
static gboolean
env_number (const gchar * name, guint64 most, const gchar * what,
    guint64 * number)
{
  const gchar *value = g_getenv (name);

  if (value == NULL || *value == '\0')
    return FALSE;
  if (!g_ascii_string_to_unsigned (value, 10, 0, most, number, NULL)) {
    g_printerr ("%s=%s is not %s\n", name, value, what);
    exit (1);
  }
  return TRUE;
}

guint
p3d_test_gpus_required (void)
{
  guint64 n = 0;

  if (!env_number ("PERCEPTION_REQUIRE_GPUS", 64, "a number of devices", &n))
    return 0;
  return (guint) n;
}

void
p3d_test_loop_range (gint * start, gint * end)
{
  guint64 k = 0;

  if (!env_number ("PERCEPTION_CHECK_ITERATION", G_MAXINT, "an iteration", &k))
    return;
  if ((gint) k < *start || (gint) k >= *end) {
    *end = *start;
    return;
  }
  *start = (gint) k;
  *end = (gint) k + 1;
}

gboolean
p3d_test_gpu_required (void)
{
  const gchar *value = g_getenv ("PERCEPTION_REQUIRE_GPU");

  return (value != NULL && strcmp (value, "1") == 0)
      || p3d_test_gpus_required () > 0;
}

gboolean
p3d_test_require_gpus (guint n)
{
  gint count = p3dc_cuda_device_count ();

  if (count >= (gint) n)
    return TRUE;
  if (p3d_test_gpus_required () >= n) {
    g_printerr ("PERCEPTION_REQUIRE_GPUS=%u but %d CUDA device(s): %s\n",
        p3d_test_gpus_required (), count, count > 0 ? "too few" :
        p3dc_result_string (p3dc_cuda_device_probe ()));
    exit (1);
  }
  g_print ("SKIP: the cases that need %u CUDA devices (%d found)\n", n, count);
  return FALSE;
}

void
p3d_test_require_gpu (void)
{
  P3dcResult why;

  if (p3dc_cuda_device_count () > 0)
    return;
  why = p3dc_cuda_device_probe ();
  if (p3d_test_gpu_required ()) {
    g_printerr ("a GPU is required (PERCEPTION_REQUIRE_GPU=1 or "
        "PERCEPTION_REQUIRE_GPUS) but there is no CUDA device: %s\n",
        p3dc_result_string (why));
    exit (1);
  }
  g_print ("SKIP: no CUDA device (%s)\n", p3dc_result_string (why));
  exit (77);
}

static void
fail_on_library_log (const gchar * domain, GLogLevelFlags level,
    const gchar * message, gpointer user_data)
{
  if (!_gst_check_expecting_log)
    fail ("Unexpected %s log: %s", domain, message);
  if (level & G_LOG_LEVEL_CRITICAL)
    _gst_check_raised_critical = TRUE;
  if (level & G_LOG_LEVEL_WARNING)
    _gst_check_raised_warning = TRUE;
}

void
p3d_test_watch_library_log (void)
{
  g_log_set_handler ("perception", G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING,
      fail_on_library_log, NULL);
}

void *
p3d_test_device_alloc (gsize size, gsize guard, P3dcCudaStream stream)
{
  void *ptr = NULL;

  fail_unless_equals_int (p3dc_cuda_malloc (&ptr, size + guard), P3DC_OK);
  fail_unless_equals_int (p3dc_cuda_memset (ptr, P3D_TEST_GUARD_VALUE,
          size + guard, stream), P3DC_OK);
  return ptr;
}

void
p3d_test_guard_fill (void *device, gsize size, P3dcCudaStream stream)
{
  fail_unless_equals_int (p3dc_cuda_memset (device, P3D_TEST_GUARD_VALUE,
          size + P3D_TEST_GUARD_BYTES, stream), P3DC_OK);
}

void
p3d_test_guarded_download (void *host, const void *device, gsize size,
    P3dcCudaStream stream)
{
  fail_unless_equals_int (p3dc_cuda_memcpy_dtoh (host, device,
          size + P3D_TEST_GUARD_BYTES, stream), P3DC_OK);
}

void
p3d_test_assert_guard (const void *host, gsize size, const gchar * tensor,
    const gchar * what)
{
  const guint8 *guard = (const guint8 *) host + size;
  guint i;

  for (i = 0; i < P3D_TEST_GUARD_BYTES; i++)
    if (guard[i] != P3D_TEST_GUARD_VALUE)
      fail ("%s: guard byte %u behind %s is 0x%02x", what, i, tensor, guard[i]);
}
