/* Loads libcudnn.so.9 with dlopen and resolves the functions that the
 * convolutional network calls (see cudnn_loader.h). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_loader.h"

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static P3dcCudnn loaded_api;
static int load_done;
static P3dcResult load_result;
static char load_message[512];

/* Where each function goes in the table. */
/* *INDENT-OFF* */
static const struct { const char *name; size_t offset; } symbols[] = {
#define P3DC_CUDNN_SYMBOL(fn) { #fn, offsetof (P3dcCudnn, fn) },
  P3DC_CUDNN_FUNCTIONS (P3DC_CUDNN_SYMBOL)
#undef P3DC_CUDNN_SYMBOL
};
/* *INDENT-ON* */

static P3dcResult
load_library (void)
{
  const char *name = getenv ("PERCEPTION_CUDNN_LIBRARY");
  void *library;
  size_t i;

  if (name == NULL || name[0] == '\0')
    name = P3DC_CUDNN_LIBRARY;
  /* RTLD_LOCAL: cuDNN's symbols stay out of the global namespace. The
   * library stays loaded for the life of the process. */
  library = dlopen (name, RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    const char *why = dlerror ();

    snprintf (load_message, sizeof load_message, "cuDNN not found (%s): %s",
        name, why != NULL ? why : "dlopen failed");
    return P3DC_ERROR_UNSUPPORTED;
  }
  for (i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
    void *symbol = dlsym (library, symbols[i].name);

    if (symbol == NULL) {
      snprintf (load_message, sizeof load_message, "cuDNN (%s) lacks %s",
          name, symbols[i].name);
      return P3DC_ERROR_UNSUPPORTED;
    }
    /* POSIX: a function pointer has the representation of a void * */
    memcpy ((char *) &loaded_api + symbols[i].offset, &symbol, sizeof symbol);
  }
  loaded_api.version = loaded_api.cudnnGetVersion ();
  if (loaded_api.version / 10000 != 9) {
    snprintf (load_message, sizeof load_message,
        "cuDNN (%s) is version %zu, 9.x is needed", name, loaded_api.version);
    return P3DC_ERROR_UNSUPPORTED;
  }
  return P3DC_OK;
}

P3dcResult
p3dc_cudnn_load (const P3dcCudnn ** api, char *message, size_t message_len)
{
  P3dcResult result;

  pthread_mutex_lock (&load_lock);
  if (!load_done) {
    load_result = load_library ();
    load_done = 1;
  }
  result = load_result;
  pthread_mutex_unlock (&load_lock);
  if (api != NULL)
    *api = result == P3DC_OK ? &loaded_api : NULL;
  if (result != P3DC_OK && message != NULL && message_len > 0)
    snprintf (message, message_len, "%s", load_message);
  return result;
}
