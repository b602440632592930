/* A plain main() for a fuzz target, so that CI replays the committed corpus
 * without clang or libFuzzer: every file named on the command line, or
 * every file in a folder named there, goes once through
 * LLVMFuzzerTestOneInput(). A broken promise aborts the target, which fails
 * the test. */
#include <stdio.h>
#include <stdlib.h>

#include <glib.h>

int LLVMFuzzerTestOneInput (const guint8 * data, size_t size);

static guint
replay_file (const gchar * path)
{
  gchar *contents = NULL;
  gsize size = 0;
  GError *error = NULL;

  if (!g_file_get_contents (path, &contents, &size, &error)) {
    fprintf (stderr, "%s\n", error->message);
    exit (1);
  }
  LLVMFuzzerTestOneInput ((const guint8 *) contents, size);
  g_free (contents);
  return 1;
}

int
main (int argc, char **argv)
{
  guint files = 0;
  int i;

  for (i = 1; i < argc; i++) {
    GDir *dir;
    const gchar *name;

    if (!g_file_test (argv[i], G_FILE_TEST_IS_DIR)) {
      files += replay_file (argv[i]);
      continue;
    }
    dir = g_dir_open (argv[i], 0, NULL);
    while (dir != NULL && (name = g_dir_read_name (dir)) != NULL) {
      gchar *path = g_build_filename (argv[i], name, NULL);

      files += replay_file (path);
      g_free (path);
    }
    if (dir != NULL)
      g_dir_close (dir);
  }
  printf ("%u inputs replayed\n", files);
  /* an empty corpus replays nothing: a test that cannot fail */
  return files > 0 ? 0 : 1;
}
