/* The tiny CenterPoint-pillar models of the network fuzz targets, written
 * by the tests' model writer (tests/check/elements/p3dtest-model.c). */
#ifndef __P3D_FUZZ_MODEL_H__
#define __P3D_FUZZ_MODEL_H__

#include "p3dtest-model.h"

G_BEGIN_DECLS

/* Writes one model for each of the @n_models @options to a temporary file,
 * their paths in @paths; the files are removed at exit. Aborts when a model
 * cannot be written. */
void fuzz_models_write (const ModeltestOptions * options, guint n_models,
    gchar ** paths);

G_END_DECLS

#endif /* __P3D_FUZZ_MODEL_H__ */
