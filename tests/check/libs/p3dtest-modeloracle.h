/* A model graph (p3dmodelgraph.h) evaluated in float64 from the raw
 * tensors of its weights, every op by its PyTorch definition (BatchNorm
 * unfolded, as inference computes it; convolutions summed tap by tap):
 * what the model layer's build and the compute library's layer graph are
 * checked against (libs/model, the PointPillars tests). */
#ifndef P3D_TEST_MODEL_ORACLE_H
#define P3D_TEST_MODEL_ORACLE_H

#include <glib.h>

#include "p3dmodelgraph.h"

G_BEGIN_DECLS

/* One tensor of the graph: [n][c][h][w]. */
typedef struct
{
  guint n, c, h, w;
  gdouble *v;
} OracleValue;

/* Where the oracle finds a weight by its state_dict name (the raw values,
 * as the file holds them; the test fails when there is none). */
typedef struct
{
  const gfloat *(*lookup) (gpointer user_data, const gchar * name);
  gpointer user_data;
} ModelOracleTensors;

/* Every tensor of @graph, by name (the input's included), for @input
 * [batch][channels][height][width] of the graph's input.  Free with
 * g_hash_table_unref(); the keys are the graph's strings. */
GHashTable *model_oracle_evaluate (const P3dModelGraph * graph,
    const ModelOracleTensors * t, const gfloat * input);

/* Element (n, c, y, x) of @v. */
gdouble *model_oracle_at (const OracleValue * v, guint n, guint c, guint y,
    guint x);

G_END_DECLS

#endif /* P3D_TEST_MODEL_ORACLE_H */
