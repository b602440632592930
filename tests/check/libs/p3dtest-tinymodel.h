/* Tiny CenterPoint-pillar models for the tests that read weights files (the
 * CenterPoint model of the caps library, pillarencode, bevdetect): every
 * tensor in mmdetection3d's state_dict names and order for an architecture
 * the test describes, with deterministic random values (BatchNorm
 * statistics and affine parameters far from the identity, a third of the
 * gammas negative, running means stored as F16; heatmap biases that let a
 * realistic share of cells pass a 0.1 score threshold), and the writer of a
 * safetensors file from them, with the mutations the bad-weights tests
 * need. The `p3d.model` config that describes a model is the test's own. */
#ifndef TINY_MODEL_H
#define TINY_MODEL_H

#include <glib.h>

#include "p3dtest.h"

G_BEGIN_DECLS

#define TINY_MODEL_MAX_STAGES 4
#define TINY_MODEL_MAX_TASKS 4

/* The shapes of a model, as its config gives them. */
typedef struct
{
  guint pfn_in;                 /* point features */
  guint pfn_out;
  guint n_stages;
  guint stage_channels[TINY_MODEL_MAX_STAGES];
  guint stage_layers[TINY_MODEL_MAX_STAGES];    /* after the first conv */
  guint neck_channels[TINY_MODEL_MAX_STAGES];
  gdouble neck_strides[TINY_MODEL_MAX_STAGES];
  gboolean conv_for_no_stride;  /* use_conv_for_no_stride */
  guint share_channels;
  guint head_conv;
  guint final_kernel;
  guint n_tasks;
  guint task_classes[TINY_MODEL_MAX_TASKS];
  gboolean vel;                 /* the vel heads are there */
} TinyModelArch;

typedef struct
{
  gchar *name;
  guint n_dims;
  gint64 shape[4];
  gsize count;
  gfloat *values;               /* writable: hand-made cases set them */
  gboolean half;                /* written as F16 (values already rounded) */
} TinyModelTensor;

typedef struct
{
  TinyModelArch arch;
  GPtrArray *tensors;           /* TinyModelTensor, in state_dict order */
  GHashTable *by_name;
} TinyModel;

/* Conv weights are uniform within twice PyTorch's default bound,
 * 1 / sqrt (fan-in), the fan-in being the terms one output sums (a
 * transposed conv's kernel equals its stride: its input channels). */
TinyModel *tiny_model_new (const TinyModelArch * arch, guint64 seed);

/* The pieces, for the tiny models of the other families that end in a
 * CenterHead (p3dtest-bevdet.h) and for the anchor models
 * (p3dtest-anchormodel.h): a model of no tensor with @arch (only its head
 * fields read; NULL: none), a tensor @name (taken) of uniform values in [lo, hi)
 * (running means rounded to F16 and written so), a conv weight [d0][d1][k]
 * [k] within twice PyTorch's bound for @fan_in, a BatchNorm @prefix
 * (taken), and the CenterHead on @in_channels: the shared conv and every
 * task's heads. */
TinyModel *tiny_model_new_empty (const TinyModelArch * arch);
TinyModelTensor *tiny_model_add_tensor (TinyModel * m, P3dTestRng * rng,
    gchar * name, guint n_dims, const gint64 * shape, gfloat lo, gfloat hi);
void tiny_model_add_conv (TinyModel * m, P3dTestRng * rng, gchar * name,
    gint64 d0, gint64 d1, gint64 k, gint64 fan_in);
void tiny_model_add_norm (TinyModel * m, P3dTestRng * rng, gchar * prefix,
    gint64 channels);
void tiny_model_add_center_head (TinyModel * m, P3dTestRng * rng,
    guint in_channels);
void tiny_model_free (TinyModel * m);
/* The tensor @name (fails the test when there is none). */
TinyModelTensor *tiny_model_get (TinyModel * m, const gchar * name);

/* How a written file departs from the model. */
typedef struct
{
  const gchar *drop;            /* tensor left out */
  const gchar *reshape;         /* tensor written with @shape instead */
  guint n_dims;
  gint64 shape[4];              /* values cut, or padded with 0.5 */
  const gchar *as_i32;          /* tensor written as I32 */
  const gchar *negative;        /* tensor whose first value is negated */
  const gchar *nan;             /* tensor whose first value is NaN */
} TinyModelMutation;

/* Writes @m with @config as its `p3d.model` metadata (none when NULL) and
 * @mutation (may be NULL) to a new temporary file and returns its path. */
gchar *tiny_model_write (TinyModel * m, const gchar * config,
    const TinyModelMutation * mutation);

/* @text with its one occurrence of @old replaced by @new (fails the test
 * unless @old is there exactly once). */
gchar *tiny_model_replace_once (const gchar * text, const gchar * old,
    const gchar * new);

G_END_DECLS

#endif /* TINY_MODEL_H */
