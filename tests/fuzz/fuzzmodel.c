/* The models of the network fuzz targets (fuzzmodel.h). p3dtest-model.c checks
 * what it does with gst-check's assertions, which report to a running suite
 * even when they hold, so the models are written inside one: a suite of one
 * test, run in this process (no fork). */
#include <stdlib.h>

#include <gst/check/gstcheck.h>

#include "fuzzmodel.h"

static const ModeltestOptions *pending_options;
static guint pending_n_models;
static gchar **pending_paths;
static GPtrArray *written;

static void
remove_models (void)
{
  g_ptr_array_free (written, TRUE);
}

GST_START_TEST (write_models)
{
  guint i;

  for (i = 0; i < pending_n_models; i++) {
    ModeltestModel *model = modeltest_model_new (&pending_options[i]);

    pending_paths[i] = modeltest_model_write (model, NULL);
    modeltest_model_free (model);
  }
}

GST_END_TEST;

void
fuzz_models_write (const ModeltestOptions * options, guint n_models,
    gchar ** paths)
{
  Suite *suite = suite_create ("fuzz models");
  TCase *tc = tcase_create ("write");
  SRunner *runner;
  gint failed;
  guint i;

  if (written == NULL) {
    written = g_ptr_array_new_with_free_func ((GDestroyNotify)
        modeltest_remove);
    atexit (remove_models);
  }
  pending_options = options;
  pending_n_models = n_models;
  pending_paths = paths;
  for (i = 0; i < n_models; i++)
    paths[i] = NULL;
  tcase_add_test (tc, write_models);
  suite_add_tcase (suite, tc);
  runner = srunner_create (suite);
  srunner_set_fork_status (runner, CK_NOFORK);
  srunner_run_all (runner, CK_SILENT);
  failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  for (i = 0; i < n_models; i++) {
    if (paths[i] == NULL)
      abort ();
    g_ptr_array_add (written, paths[i]);
  }
  if (failed != 0)
    abort ();
}
