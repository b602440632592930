/* The build of a network from its graph (p3dmodel-private.h): tensor
 * shapes, weights looked up by state_dict name and checked, BatchNorm
 * folded, and the layers laid out for the compute library.
 *
 * Every tensor a layer makes gets a buffer of its own, in the order the
 * layers first write them, except where the graph lets a layer write in
 * place:
 *  - a concatenation's inputs are written straight into its buffer's
 *    channel slices by the layers that make them (SECONDFPN's neck), when
 *    they are made by a layer, go into one concatenation and no
 *    convolution reads them; others are copied there;
 *  - a slice is read in place from the buffer of its source (a depth net's
 *    depth logits and context);
 *  - an add whose one input is a convolution's output that nothing else
 *    reads becomes that convolution's residual (a ResNet block's
 *    shortcut), and a ReLU whose input nothing else reads becomes the
 *    ReLU of the layer that makes it;
 *  - convolutions that read one tensor with one window and one ReLU rule
 *    (a detection head's first layers: CenterHead's ConvModules on the
 *    shared conv's output, 36 on nuScenes; an anchor head's class, box and
 *    direction convolutions) run as one convolution whose output holds
 *    theirs side by side, where nothing reads their outputs but the
 *    graph's outputs, or where each is read by one convolution and nothing
 *    else; those convolutions (the heads' final layers), each reading its
 *    slice with one window, then run as one grouped convolution, a group
 *    each, every group's outputs padded with zero weights to the grouped
 *    kernel's 8 (P3DC_CONVNET_GROUPED_OUTPUTS, also the F16 storage's
 *    granule); only within the bounds of the CUDA path's grouped kernel
 *    (convnet.h: groups of a multiple of 32 inputs and at most 8 outputs,
 *    stride 1), since cuDNN runs other such layers slower than the
 *    convolutions apart;
 * so the compute library runs fewer layers and no copies, with the same
 * results: the reference rounds a fused sum as it rounds the two layers,
 * and computes each channel of a merged convolution as the convolution it
 * came from does, from the same weights in the same order.  (On cuDNN a
 * head's many small convolutions cost a launch's latency each, about 10
 * us on the H200, more than their arithmetic.)
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>

#include "p3dmodel-private.h"

/* ---- reading tensors ---------------------------------------------- */

gfloat *
p3d_model_builder_read (P3dModelBuilder * b, const gchar * name,
    guint n_dims, const gint64 * shape, GError ** error)
{
  const P3dWeightsTensor *tensor = p3d_weights_lookup (b->weights, name,
      n_dims, shape, error);
  gfloat *values;

  if (tensor == NULL)
    return NULL;
  g_hash_table_add (b->used, (gpointer) tensor->name);
  values = g_new (gfloat, MAX (tensor->n_elements, 1));
  g_ptr_array_add (b->arrays, values);
  if (!p3d_weights_read_float (b->weights, tensor, values, tensor->n_elements,
          error))
    return NULL;
  return values;
}

void
p3d_model_fold_batchnorm (gfloat * weight, guint n_outer,
    guint out_channels, guint inner, const gfloat * layer_bias,
    const gfloat * gamma, const gfloat * beta, const gfloat * mean,
    const gfloat * var, gdouble eps, gfloat * bias)
{
  guint outer, o, i;

  for (o = 0; o < out_channels; o++) {
    gdouble scale = (gdouble) gamma[o] / sqrt ((gdouble) var[o] + eps);
    gdouble b = layer_bias ? layer_bias[o] : 0.0;

    for (outer = 0; outer < n_outer; outer++) {
      gfloat *w = weight + ((gsize) outer * out_channels + o) * inner;

      for (i = 0; i < inner; i++)
        w[i] = (gfloat) ((gdouble) w[i] * scale);
    }
    bias[o] = (gfloat) ((gdouble) beta[o] + (b - (gdouble) mean[o]) * scale);
  }
}

gfloat *
p3d_model_builder_fold_norm (P3dModelBuilder * b, const gchar * prefix,
    gfloat * weight, guint n_outer, guint out_channels, guint inner,
    const gfloat * layer_bias, gdouble eps, GError ** error)
{
  static const gchar *const parts[4] = {
    "weight", "bias", "running_mean", "running_var",
  };
  const gint64 shape[1] = { out_channels };
  gfloat *values[4], *bias;
  guint i;

  for (i = 0; i < 4; i++) {
    gchar *name = g_strdup_printf ("%s.%s", prefix, parts[i]);

    values[i] = p3d_model_builder_read (b, name, 1, shape, error);
    g_free (name);
    if (values[i] == NULL)
      return NULL;
  }
  for (i = 0; i < out_channels; i++) {
    if (!(values[3][i] >= 0)) {
      g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_VALUE,
          "%s: %s.running_var[%u] is %g; a variance is never negative",
          p3d_weights_get_name (b->weights), prefix, i, values[3][i]);
      return NULL;
    }
  }
  bias = g_new (gfloat, out_channels);
  g_ptr_array_add (b->arrays, bias);
  p3d_model_fold_batchnorm (weight, n_outer, out_channels, inner, layer_bias,
      values[0], values[1], values[2], values[3], eps, bias);
  return bias;
}

/* ---- the graph's tensors ------------------------------------------ */

typedef struct
{
  const gchar *name;
  guint channels, height, width;
  gint producer;                /* the layer making it; -1: the input */
  guint readers;                /* layers and outputs reading it */
  gboolean conv_reader;         /* a convolution reads it */
  gboolean output;              /* a named output */
  /* where it lives: channels [offset, ...) of @base's storage (itself when
   * it has a buffer of its own) */
  gint base;
  guint offset;
  gint buffer;                  /* with a buffer of its own: its index, -1
                                 * until a layer first writes it */
  gboolean placed;              /* written into channels of @base: a
                                 * concatenation's, or a merged
                                 * convolution's output */
} Tensor;

/* What each graph layer becomes. */
typedef struct
{
  gint out;                     /* its tensor */
  gint in[2];                   /* its first two inputs */
  gboolean emits;               /* runs as a layer of its own */
  gint writes;                  /* the tensor its layer writes (its own,
                                 * or that of an add or ReLU fused in) */
  gint residual;                /* a fused add's other input, or -1 */
  gboolean relu;
  gint merge;                   /* the merge it runs in (Build.merges), or
                                 * -1 */
} Plan;

/* Convolutions run as one layer, at the place of the first of them. */
typedef struct
{
  gint tensor;                  /* what the layer writes (a tensor of the
                                 * build, not of the graph) */
  guint first;                  /* the graph layer where it runs */
  guint n;
  guint *members;               /* graph layers, in the order of their
                                 * outputs in @tensor */
  guint groups;                 /* 1: the members read one tensor; n: member
                                 * k reads slice k of one buffer */
  guint group_out;              /* groups > 1: the channels of each group's
                                 * output */
} Merge;

typedef struct
{
  const P3dModelGraph *graph;
  P3dModelBuilder *builder;
  GArray *tensors;              /* Tensor */
  GHashTable *by_name;          /* name -> index + 1 */
  Plan *plans;
  GArray *buffers;              /* P3dcConvBufferDesc */
  GArray *layers;               /* P3dcConvLayer */
  GArray *merges;               /* Merge */
} Build;

static Tensor *
tensor_at (Build * b, gint index)
{
  return &g_array_index (b->tensors, Tensor, index);
}

static const P3dModelLayer *
layer_at (Build * b, guint index)
{
  return b->graph->layers->pdata[index];
}

/* BAD_METADATA naming layer @index: `p3d.model: "graph.N.layers[i]"
 * (layer "name") <what>`. */
static gboolean
layer_error (Build * b, guint index, GError ** error, const gchar * format, ...)
G_GNUC_PRINTF (4, 5);

     static gboolean
         layer_error (Build * b, guint index, GError ** error,
    const gchar * format, ...)
{
  va_list args;
  gchar *what;

  va_start (args, format);
  what = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_METADATA,
      P3D_MODEL_METADATA_KEY ": \"graph.%s.layers[%u]\" (layer \"%s\") %s",
      b->graph->name, index, layer_at (b, index)->name, what);
  g_free (what);
  return FALSE;
}

static gint
add_tensor (Build * b, const gchar * name, guint channels, guint height,
    guint width, gint producer)
{
  Tensor t = { 0 };

  t.name = name;
  t.channels = channels;
  t.height = height;
  t.width = width;
  t.producer = producer;
  t.base = b->tensors->len;
  t.buffer = -1;
  g_array_append_val (b->tensors, t);
  g_hash_table_insert (b->by_name, (gpointer) name,
      GINT_TO_POINTER (b->tensors->len));
  return b->tensors->len - 1;
}

/* The tensor @name, defined before layer @index. */
static gint
find_tensor (Build * b, guint index, const gchar * name, GError ** error)
{
  gint found = GPOINTER_TO_INT (g_hash_table_lookup (b->by_name, name));

  if (found == 0) {
    layer_error (b, index, error, "reads \"%s\", which is no tensor made "
        "before it (the input, or an earlier layer's name)", name);
    return -1;
  }
  return found - 1;
}

/* Along one axis: a convolution's (or max pool's) output size, 0 when
 * the window does not fit. */
static guint
window_size (guint in, guint kernel, guint stride, guint padding,
    guint dilation)
{
  guint64 padded = (guint64) in + 2 * (guint64) padding;
  guint64 extent = (guint64) dilation * (kernel - 1) + 1;

  if (padded < extent)
    return 0;
  return (guint) ((padded - extent) / stride + 1);
}

/* The shape of layer @index's tensor, from its inputs'. */
static gboolean
infer_shape (Build * b, guint index, GError ** error)
{
  const P3dModelLayer *layer = layer_at (b, index);
  Plan *plan = &b->plans[index];
  guint n_inputs = g_strv_length (layer->inputs), i, a;
  guint c = 0, h = 0, w = 0, size[2];
  gint inputs[64];
  const Tensor *in;

  if (n_inputs == 0 || n_inputs > 64)
    return layer_error (b, index, error, "has %u inputs", n_inputs);
  for (i = 0; i < n_inputs; i++) {
    inputs[i] = find_tensor (b, index, layer->inputs[i], error);
    if (inputs[i] < 0)
      return FALSE;
    tensor_at (b, inputs[i])->readers++;
    if (layer->op == P3D_MODEL_OP_CONV || layer->op == P3D_MODEL_OP_DECONV)
      tensor_at (b, inputs[i])->conv_reader = TRUE;
  }
  plan->in[0] = inputs[0];
  plan->in[1] = n_inputs > 1 ? inputs[1] : -1;
  in = tensor_at (b, inputs[0]);
  switch (layer->op) {
    case P3D_MODEL_OP_CONV:
      if (layer->groups < 1 || in->channels % layer->groups != 0
          || layer->out_channels % layer->groups != 0)
        return layer_error (b, index, error, "has %u groups, which must "
            "divide its %u input and %u output channels", layer->groups,
            in->channels, layer->out_channels);
      for (a = 0; a < 2; a++) {
        if ((guint64) layer->padding[a] >= (guint64) layer->dilation[a] *
            (layer->kernel[a] - 1) + 1)
          return layer_error (b, index, error, "has padding %u, which must "
              "be below its dilated kernel %u", layer->padding[a],
              layer->dilation[a] * (layer->kernel[a] - 1) + 1);
        size[a] = window_size (a ? in->width : in->height, layer->kernel[a],
            layer->stride[a], layer->padding[a], layer->dilation[a]);
      }
      c = layer->out_channels;
      h = size[0];
      w = size[1];
      break;
    case P3D_MODEL_OP_DECONV:
      c = layer->out_channels;
      h = in->height * layer->stride[0];
      w = in->width * layer->stride[1];
      break;
    case P3D_MODEL_OP_ADD:{
      const Tensor *other = tensor_at (b, inputs[1]);

      if (other->channels != in->channels || other->height != in->height
          || other->width != in->width)
        return layer_error (b, index, error, "adds \"%s\" (%u x %u x %u) "
            "and \"%s\" (%u x %u x %u): they must have one shape", in->name,
            in->channels, in->height, in->width, other->name, other->channels,
            other->height, other->width);
      c = in->channels;
      h = in->height;
      w = in->width;
      break;
    }
    case P3D_MODEL_OP_MAX_POOL:
      for (a = 0; a < 2; a++) {
        if (layer->padding[a] > layer->kernel[a] / 2)
          return layer_error (b, index, error, "has padding %u, which must "
              "be at most half its kernel %u", layer->padding[a],
              layer->kernel[a]);
        size[a] = window_size (a ? in->width : in->height, layer->kernel[a],
            layer->stride[a], layer->padding[a], layer->dilation[a]);
      }
      c = in->channels;
      h = size[0];
      w = size[1];
      break;
    case P3D_MODEL_OP_UPSAMPLE:
      c = in->channels;
      if (layer->size_of != NULL) {
        gint like = find_tensor (b, index, layer->size_of, error);

        if (like < 0)
          return FALSE;
        h = tensor_at (b, like)->height;
        w = tensor_at (b, like)->width;
      } else if (layer->size[0] != 0) {
        h = layer->size[0];
        w = layer->size[1];
      } else {
        h = in->height * layer->scale[0];
        w = in->width * layer->scale[1];
      }
      break;
    case P3D_MODEL_OP_CONCAT:
      for (i = 0; i < n_inputs; i++) {
        const Tensor *part = tensor_at (b, inputs[i]);

        if (part->height != in->height || part->width != in->width)
          return layer_error (b, index, error, "concatenates \"%s\" (%u x "
              "%u) and \"%s\" (%u x %u): they must have one size", in->name,
              in->height, in->width, part->name, part->height, part->width);
        c += part->channels;
      }
      h = in->height;
      w = in->width;
      break;
    case P3D_MODEL_OP_SLICE:
      if (layer->end > in->channels)
        return layer_error (b, index, error, "slices channels %u to %u of "
            "\"%s\", which has %u", layer->begin, layer->end, in->name,
            in->channels);
      c = layer->end - layer->begin;
      h = in->height;
      w = in->width;
      break;
    default:
      c = in->channels;
      h = in->height;
      w = in->width;
      break;
  }
  if (h == 0 || w == 0 || h > 16384 || w > 16384)
    return layer_error (b, index, error, "makes a %u x %u map from \"%s\" "
        "(%u x %u)", h, w, in->name, in->height, in->width);
  if ((guint64) c * h * w * b->graph->batch > P3DC_CONVNET_MAX_ELEMENTS)
    return layer_error (b, index, error, "makes %u x %u x %u x %u values, "
        "above the %u a tensor may hold", b->graph->batch, c, h, w,
        P3DC_CONVNET_MAX_ELEMENTS);
  if (g_hash_table_contains (b->by_name, layer->name))
    return layer_error (b, index, error, "names a tensor the graph already "
        "has");
  plan->out = add_tensor (b, layer->name, c, h, w, index);
  plan->writes = plan->out;
  plan->residual = -1;
  plan->merge = -1;
  plan->relu = layer->relu;
  plan->emits = layer->op != P3D_MODEL_OP_CONCAT
      && !(layer->op == P3D_MODEL_OP_SLICE && !layer->relu);
  return TRUE;
}

/* The layer that writes tensor @t (after fusions), or -1. */
static gint
writer_of (Build * b, gint t)
{
  guint i;

  for (i = 0; i < b->graph->layers->len; i++)
    if (b->plans[i].emits && b->plans[i].writes == t)
      return i;
  return -1;
}

/* The index of the layer after which tensor @t holds its values (-1: the
 * input): its writer's, its source's for a slice read in place, the
 * concatenation's own (where its copies run). */
static gint
ready_at (Build * b, gint t)
{
  for (;;) {
    gint producer = tensor_at (b, t)->producer;

    if (producer < 0)
      return -1;
    if (layer_at (b, producer)->op == P3D_MODEL_OP_CONCAT)
      return producer;
    if (layer_at (b, producer)->op == P3D_MODEL_OP_SLICE
        && !b->plans[producer].emits) {
      t = b->plans[producer].in[0];
      continue;
    }
    return writer_of (b, t);
  }
}

/* Fuses an add into the convolution making one of its inputs, and a ReLU
 * into the layer making its input, where nothing else reads that input. */
static void
fuse (Build * b)
{
  guint i, k;

  for (i = 0; i < b->graph->layers->len; i++) {
    const P3dModelLayer *layer = layer_at (b, i);
    Plan *plan = &b->plans[i];

    if (layer->op == P3D_MODEL_OP_ADD) {
      for (k = 0; k < 2; k++) {
        gint t = plan->in[k], other = plan->in[1 - k];
        gint w = writer_of (b, t);
        const Tensor *tensor = tensor_at (b, t);

        if (w < 0 || layer_at (b, w)->op != P3D_MODEL_OP_CONV
            || b->plans[w].residual >= 0 || b->plans[w].relu
            || tensor->readers != 1 || tensor->output || t == other)
          continue;
        /* the residual must be ready when the convolution runs */
        if (ready_at (b, other) >= w)
          continue;
        b->plans[w].residual = other;
        b->plans[w].writes = plan->out;
        b->plans[w].relu = plan->relu;
        plan->emits = FALSE;
        break;
      }
    } else if (layer->op == P3D_MODEL_OP_RELU) {
      gint t = plan->in[0];
      gint w = writer_of (b, t);
      const Tensor *tensor = tensor_at (b, t);

      if (w < 0 || tensor->readers != 1 || tensor->output)
        continue;
      b->plans[w].relu = TRUE;
      b->plans[w].writes = plan->out;
      plan->emits = FALSE;
    }
  }
}

/* Concatenations: inputs that a layer makes, that go into no other
 * concatenation and that no convolution reads are written in place (a
 * convolution reading a channel slice copies it first on cuDNN: one copy
 * into the concatenation costs less). */
static void
place_concats (Build * b)
{
  guint i, k;

  for (i = 0; i < b->graph->layers->len; i++) {
    const P3dModelLayer *layer = layer_at (b, i);
    guint offset = 0;

    if (layer->op != P3D_MODEL_OP_CONCAT)
      continue;
    for (k = 0; layer->inputs[k] != NULL; k++) {
      gint t = GPOINTER_TO_INT (g_hash_table_lookup (b->by_name,
              layer->inputs[k])) - 1;
      Tensor *tensor = tensor_at (b, t);
      guint j;
      gboolean twice = FALSE;

      for (j = 0; j < k; j++)
        twice |= strcmp (layer->inputs[j], layer->inputs[k]) == 0;
      if (!twice && !tensor->placed && !tensor->conv_reader
          && writer_of (b, t) >= 0) {
        tensor->placed = TRUE;
        tensor->base = b->plans[i].out;
        tensor->offset = offset;
      }
      offset += tensor->channels;
    }
  }
}

/* ---- merged convolutions ------------------------------------------ */

static gboolean
same_window (const P3dModelLayer * a, const P3dModelLayer * c)
{
  guint k;

  for (k = 0; k < 2; k++)
    if (a->kernel[k] != c->kernel[k] || a->stride[k] != c->stride[k]
        || a->padding[k] != c->padding[k] || a->dilation[k] != c->dilation[k])
      return FALSE;
  return TRUE;
}

/* @l has stride 1 and no dilation, as the grouped kernel needs. */
static gboolean
same_stride_one (const P3dModelLayer * l)
{
  return l->stride[0] == 1 && l->stride[1] == 1 && l->dilation[0] <= 1
      && l->dilation[1] <= 1;
}

/* Layer @i is a convolution that may join a merge: ungrouped, without a
 * residual, in no merge yet, its output in a buffer of its own. */
static gboolean
mergeable (Build * b, guint i)
{
  const P3dModelLayer *layer = layer_at (b, i);
  const Plan *plan = &b->plans[i];

  return layer->op == P3D_MODEL_OP_CONV && plan->emits && plan->merge < 0
      && plan->residual < 0 && layer->groups <= 1
      && !tensor_at (b, plan->writes)->placed;
}

/* How many times the graph's layers read tensor @t (fused ones too); the
 * last reader in @reader. */
static guint
readers_of (Build * b, gint t, guint * reader)
{
  guint i, k, n = 0;

  for (i = 0; i < b->graph->layers->len; i++) {
    const P3dModelLayer *layer = layer_at (b, i);

    for (k = 0; layer->inputs[k] != NULL; k++) {
      if (GPOINTER_TO_INT (g_hash_table_lookup (b->by_name,
                  layer->inputs[k])) - 1 == t) {
        n++;
        *reader = i;
      }
    }
  }
  return n;
}

/* A merge of the @n graph layers @members, writing a new tensor of
 * @channels that holds their outputs at @group_out channels each (0: side
 * by side). */
static void
add_merge (Build * b, const guint * members, guint n, guint channels,
    guint groups, guint group_out)
{
  const Tensor *like = tensor_at (b, b->plans[members[0]].writes);
  Tensor merged = { 0 };
  Merge m;
  guint k, offset = 0;

  merged.name = layer_at (b, members[0])->name;
  merged.channels = channels;
  merged.height = like->height;
  merged.width = like->width;
  m.first = members[0];
  for (k = 1; k < n; k++)
    m.first = MIN (m.first, members[k]);
  merged.producer = m.first;
  merged.base = b->tensors->len;
  merged.buffer = -1;
  g_array_append_val (b->tensors, merged);
  m.tensor = b->tensors->len - 1;
  m.n = n;
  m.members = g_memdup2 (members, n * sizeof (guint));
  m.groups = groups;
  m.group_out = group_out;
  g_array_append_val (b->merges, m);
  for (k = 0; k < n; k++) {
    Tensor *out = tensor_at (b, b->plans[members[k]].writes);

    out->placed = TRUE;
    out->base = m.tensor;
    out->offset = group_out > 0 ? k * group_out : offset;
    offset += out->channels;
    b->plans[members[k]].merge = b->merges->len - 1;
  }
}

/* Finds the convolutions to merge (the header comment): each set of
 * siblings, and when each sibling's output is read by one convolution,
 * those readers as one grouped convolution. */
static void
merge_convs (Build * b)
{
  guint n_layers = b->graph->layers->len;
  guint *siblings = g_new (guint, MAX (n_layers, 1));
  guint *readers = g_new (guint, MAX (n_layers, 1));
  guint i, j, k, n;

  for (i = 0; i < n_layers; i++) {
    const P3dModelLayer *first = layer_at (b, i);
    guint n_read = 0, total = 0, channels, widest = 0;
    gboolean cousins = TRUE;

    if (!mergeable (b, i))
      continue;
    n = 0;
    for (j = i; j < n_layers; j++)
      if (mergeable (b, j) && b->plans[j].in[0] == b->plans[i].in[0]
          && b->plans[j].relu == b->plans[i].relu
          && same_window (layer_at (b, j), first))
        siblings[n++] = j;
    if (n < 2)
      continue;
    channels = tensor_at (b, b->plans[i].writes)->channels;
    for (k = 0; k < n; k++) {
      gint t = b->plans[siblings[k]].writes;
      const P3dModelLayer *reader;
      guint count;

      readers[k] = i;
      count = readers_of (b, t, &readers[k]);
      reader = layer_at (b, readers[k]);

      total += tensor_at (b, t)->channels;
      n_read += count > 0;
      cousins = cousins && count == 1 && mergeable (b, readers[k])
          && b->plans[readers[k]].in[0] == t
          && b->plans[readers[k]].relu == b->plans[readers[0]].relu
          && same_window (reader, layer_at (b, readers[0]))
          && tensor_at (b, t)->channels == channels;
      if (count == 1)
        widest = MAX (widest, reader->out_channels);
    }
    /* read by the graph's outputs alone, or by a convolution each that
     * the grouped layer can take on the CUDA path's tensor-core kernel
     * (convnet.h; else the heads stay apart) */
    if (n_read == 0) {
      add_merge (b, siblings, n, total, 1, 0);
    } else if (n_read == n && cousins
        && channels % P3DC_CONVNET_GROUPED_INPUTS == 0
        && widest <= P3DC_CONVNET_GROUPED_OUTPUTS
        && same_stride_one (layer_at (b, readers[0]))) {
      add_merge (b, siblings, n, total, 1, 0);
      add_merge (b, readers, n, n * P3DC_CONVNET_GROUPED_OUTPUTS, n,
          P3DC_CONVNET_GROUPED_OUTPUTS);
    }
  }
  g_free (siblings);
  g_free (readers);
}

/* Where tensor @t lives: the tensor holding its buffer, and its first
 * channel there. */
static gint
locate (Build * b, gint t, guint * offset)
{
  guint total = 0;

  for (;;) {
    const Tensor *tensor = tensor_at (b, t);
    gint producer = tensor->producer;

    if (tensor->placed) {
      total += tensor->offset;
      t = tensor->base;
      continue;
    }
    /* a slice read in place lives in its source */
    if (producer >= 0 && layer_at (b, producer)->op == P3D_MODEL_OP_SLICE
        && !b->plans[producer].emits) {
      total += layer_at (b, producer)->begin;
      t = b->plans[producer].in[0];
      continue;
    }
    *offset = total;
    return t;
  }
}

/* The buffer of tensor @t (a tensor with a buffer of its own), made now
 * when this is its first write. */
static guint
buffer_of (Build * b, gint t)
{
  Tensor *tensor = tensor_at (b, t);

  if (tensor->buffer < 0) {
    P3dcConvBufferDesc desc;

    desc.channels = tensor->channels;
    desc.height = tensor->height;
    desc.width = tensor->width;
    g_array_append_val (b->buffers, desc);
    tensor->buffer = b->buffers->len - 1;
  }
  return tensor->buffer;
}

/* A layer of the compute library reading tensor @in and writing @out. */
static P3dcConvLayer *
append (Build * b, P3dcConvKind kind, gint in, gint out, gboolean relu)
{
  P3dcConvLayer layer;
  guint in_offset, out_offset;
  gint in_base = locate (b, in, &in_offset);
  gint out_base = locate (b, out, &out_offset);

  memset (&layer, 0, sizeof layer);
  layer.kind = kind;
  layer.in_channels = tensor_at (b, in)->channels;
  layer.out_channels = tensor_at (b, out)->channels;
  layer.relu = relu;
  layer.input = buffer_of (b, in_base);
  layer.input_channel_offset = in_offset;
  layer.output = buffer_of (b, out_base);
  layer.output_channel_offset = out_offset;
  g_array_append_val (b->layers, layer);
  return &g_array_index (b->layers, P3dcConvLayer, b->layers->len - 1);
}

static void
set_input2 (Build * b, P3dcConvLayer * layer, gint t)
{
  guint offset;
  gint base = locate (b, t, &offset);

  layer->input2 = buffer_of (b, base);
  layer->input2_channel_offset = offset;
}

/* The weight (and bias) of convolution @index, BatchNorm folded. */
static gboolean
read_weights (Build * b, guint index, P3dcConvLayer * layer, GError ** error)
{
  const P3dModelLayer *l = layer_at (b, index);
  gboolean deconv = l->op == P3D_MODEL_OP_DECONV;
  guint in = tensor_at (b, b->plans[index].in[0])->channels;
  guint out = l->out_channels;
  guint inner = l->kernel[0] * l->kernel[1];
  gint64 shape[4];
  gfloat *weight, *bias = NULL;

  shape[0] = deconv ? in : out;
  shape[1] = deconv ? out : in / l->groups;
  shape[2] = l->kernel[0];
  shape[3] = l->kernel[1];
  weight = p3d_model_builder_read (b->builder, l->weight, 4, shape, error);
  if (weight == NULL)
    return FALSE;
  if (l->bias != NULL) {
    const gint64 bias_shape[1] = { out };

    bias = p3d_model_builder_read (b->builder, l->bias, 1, bias_shape, error);
    if (bias == NULL)
      return FALSE;
  }
  if (l->norm != NULL) {
    if (deconv)
      bias = p3d_model_builder_fold_norm (b->builder, l->norm, weight, in,
          out, inner, bias, l->norm_eps, error);
    else
      bias = p3d_model_builder_fold_norm (b->builder, l->norm, weight, 1, out,
          in / l->groups * inner, bias, l->norm_eps, error);
    if (bias == NULL)
      return FALSE;
  } else if (bias == NULL) {
    bias = g_new0 (gfloat, out);
    g_ptr_array_add (b->builder->arrays, bias);
  }
  layer->weight = weight;
  layer->bias = bias;
  return TRUE;
}

/* The window of graph layer @l on @layer: square layers leave the x
 * fields zero, as the compute library's defaults. */
static void
set_window (P3dcConvLayer * layer, const P3dModelLayer * l)
{
  layer->kernel = l->kernel[0];
  layer->stride = l->stride[0];
  layer->padding = l->padding[0];
  if (l->kernel[1] != l->kernel[0] || l->stride[1] != l->stride[0]
      || l->padding[1] != l->padding[0]) {
    layer->kernel_x = l->kernel[1];
    layer->stride_x = l->stride[1];
    layer->padding_x = l->padding[1];
  }
  layer->dilation = l->dilation[0] > 1 ? l->dilation[0] : 0;
  layer->dilation_x = l->dilation[1] != l->dilation[0] ? l->dilation[1] : 0;
}

/* The one convolution of merge @m: its members' weights and biases one
 * after another along the outputs (a group's padding rows zero). */
static gboolean
emit_merge (Build * b, const Merge * m, GError ** error)
{
  const P3dModelLayer *l = layer_at (b, m->members[0]);
  const Plan *plan = &b->plans[m->members[0]];
  guint out = tensor_at (b, m->tensor)->channels;
  gsize inner = (gsize) tensor_at (b, plan->in[0])->channels *
      l->kernel[0] * l->kernel[1];
  gfloat *weight = g_new0 (gfloat, MAX (out * inner, 1));
  gfloat *bias = g_new0 (gfloat, out);
  P3dcConvLayer *layer;
  guint k, row = 0;

  g_ptr_array_add (b->builder->arrays, weight);
  g_ptr_array_add (b->builder->arrays, bias);
  for (k = 0; k < m->n; k++) {
    P3dcConvLayer member;
    guint channels = layer_at (b, m->members[k])->out_channels;

    if (!read_weights (b, m->members[k], &member, error))
      return FALSE;
    if (m->groups > 1)
      row = k * m->group_out;
    memcpy (weight + row * inner, member.weight,
        channels * inner * sizeof (gfloat));
    memcpy (bias + row, member.bias, channels * sizeof (gfloat));
    row += channels;
  }
  /* read from the first member's input: the whole tensor the siblings
   * read, or the first of the slices the groups read */
  layer = append (b, P3DC_CONV_2D, plan->in[0], m->tensor, plan->relu);
  layer->in_channels *= m->groups;
  set_window (layer, l);
  layer->groups = m->groups > 1 ? m->groups : 0;
  layer->weight = weight;
  layer->bias = bias;
  return TRUE;
}

static gboolean
emit (Build * b, guint index, GError ** error)
{
  const P3dModelLayer *l = layer_at (b, index);
  const Plan *plan = &b->plans[index];
  P3dcConvLayer *layer;
  guint k;

  if (l->op == P3D_MODEL_OP_CONCAT) {
    /* copies of the inputs not written in place */
    guint offset = 0;

    for (k = 0; l->inputs[k] != NULL; k++) {
      gint t = GPOINTER_TO_INT (g_hash_table_lookup (b->by_name,
              l->inputs[k])) - 1;
      const Tensor *tensor = tensor_at (b, t);

      if (!tensor->placed || tensor->base != plan->out
          || tensor->offset != offset) {
        guint out_base = plan->out;

        layer = append (b, P3DC_LAYER_SLICE, t, t, FALSE);
        layer->output = buffer_of (b, out_base);
        layer->output_channel_offset = offset;
      }
      offset += tensor->channels;
    }
    return TRUE;
  }
  if (!plan->emits)
    return TRUE;
  if (plan->merge >= 0) {
    const Merge *m = &g_array_index (b->merges, Merge, plan->merge);

    return index == m->first ? emit_merge (b, m, error) : TRUE;
  }
  switch (l->op) {
    case P3D_MODEL_OP_CONV:
    case P3D_MODEL_OP_DECONV:
      layer = append (b, l->op == P3D_MODEL_OP_CONV ? P3DC_CONV_2D :
          P3DC_CONV_TRANSPOSED_2D, plan->in[0], plan->writes, plan->relu);
      break;
    case P3D_MODEL_OP_ADD:
      layer = append (b, P3DC_LAYER_ADD, plan->in[0], plan->writes, plan->relu);
      set_input2 (b, layer, plan->in[1]);
      break;
    case P3D_MODEL_OP_MAX_POOL:
      layer = append (b, P3DC_LAYER_MAX_POOL, plan->in[0], plan->writes,
          plan->relu);
      break;
    case P3D_MODEL_OP_UPSAMPLE:
      layer = append (b, l->bilinear ? P3DC_LAYER_UPSAMPLE_BILINEAR :
          P3DC_LAYER_UPSAMPLE_NEAREST, plan->in[0], plan->writes, plan->relu);
      layer->align_corners = l->align_corners;
      break;
    case P3D_MODEL_OP_SOFTMAX:
      layer = append (b, P3DC_LAYER_SOFTMAX, plan->in[0], plan->writes,
          plan->relu);
      break;
    case P3D_MODEL_OP_SLICE:
      /* with a ReLU: a copy of the channels (in place it would change its
       * source) */
      layer = append (b, P3DC_LAYER_SLICE, plan->in[0], plan->writes, TRUE);
      layer->input_channel_offset += l->begin;
      layer->in_channels = layer->out_channels;
      break;
    default:                   /* P3D_MODEL_OP_RELU */
      layer = append (b, P3DC_LAYER_SLICE, plan->in[0], plan->writes, TRUE);
      break;
  }
  if (l->op == P3D_MODEL_OP_CONV || l->op == P3D_MODEL_OP_DECONV
      || l->op == P3D_MODEL_OP_MAX_POOL)
    set_window (layer, l);
  if (l->op == P3D_MODEL_OP_CONV) {
    layer->groups = l->groups > 1 ? l->groups : 0;
    if (plan->residual >= 0) {
      layer->residual = 1;
      set_input2 (b, layer, plan->residual);
    }
  }
  if (l->op == P3D_MODEL_OP_CONV || l->op == P3D_MODEL_OP_DECONV) {
    /* the weights of the layer now at the end of the array */
    layer = &g_array_index (b->layers, P3dcConvLayer, b->layers->len - 1);
    return read_weights (b, index, layer, error);
  }
  return TRUE;
}

gboolean
p3d_model_network_build (P3dModelNetwork * network,
    const P3dModelGraph * graph, P3dModelBuilder * builder, GError ** error)
{
  Build b;
  guint i;
  gboolean ok = TRUE;
  char message[256];

  memset (network, 0, sizeof *network);
  memset (&b, 0, sizeof b);
  b.graph = graph;
  b.builder = builder;
  b.tensors = g_array_new (FALSE, TRUE, sizeof (Tensor));
  b.by_name = g_hash_table_new (g_str_hash, g_str_equal);
  b.plans = g_new0 (Plan, MAX (graph->layers->len, 1));
  b.buffers = g_array_new (FALSE, TRUE, sizeof (P3dcConvBufferDesc));
  b.layers = g_array_new (FALSE, TRUE, sizeof (P3dcConvLayer));
  b.merges = g_array_new (FALSE, TRUE, sizeof (Merge));

  add_tensor (&b, graph->input, graph->channels, graph->height, graph->width,
      -1);
  buffer_of (&b, 0);
  for (i = 0; i < graph->layers->len && ok; i++)
    ok = infer_shape (&b, i, error);
  for (i = 0; i < graph->outputs->len && ok; i++) {
    const P3dModelGraphOutput *output = graph->outputs->pdata[i];
    gint t = GPOINTER_TO_INT (g_hash_table_lookup (b.by_name,
            output->tensor)) - 1;

    if (t < 0) {
      g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_METADATA,
          P3D_MODEL_METADATA_KEY ": \"graph.%s.outputs.%s\" names \"%s\", "
          "which is no tensor of the graph", graph->name, output->name,
          output->tensor);
      ok = FALSE;
      break;
    }
    tensor_at (&b, t)->readers++;
    tensor_at (&b, t)->output = TRUE;
  }
  if (ok) {
    fuse (&b);
    place_concats (&b);
    merge_convs (&b);
  }
  for (i = 0; i < graph->layers->len && ok; i++)
    ok = emit (&b, i, error);

  if (ok) {
    network->name = g_strdup (graph->name);
    network->input_name = g_strdup (graph->input);
    network->n_outputs = graph->outputs->len;
    network->outputs = g_new0 (P3dModelOutput, MAX (graph->outputs->len, 1));
    for (i = 0; i < graph->outputs->len; i++) {
      const P3dModelGraphOutput *output = graph->outputs->pdata[i];
      gint t = GPOINTER_TO_INT (g_hash_table_lookup (b.by_name,
              output->tensor)) - 1;
      guint offset;
      gint base = locate (&b, t, &offset);

      network->outputs[i].name = g_strdup (output->name);
      network->outputs[i].buffer = buffer_of (&b, base);
      network->outputs[i].channel_offset = offset;
      network->outputs[i].channels = tensor_at (&b, t)->channels;
    }
    network->desc.batch = graph->batch;
  }
  network->desc.n_buffers = b.buffers->len;
  network->desc.buffers = (const P3dcConvBufferDesc *)
      g_array_free (b.buffers, FALSE);
  network->desc.n_layers = b.layers->len;
  network->desc.layers = (const P3dcConvLayer *) g_array_free (b.layers, FALSE);
  if (ok && p3dc_convnet_validate (&network->desc, message,
          sizeof message) != P3DC_OK) {
    g_set_error (error, P3D_WEIGHTS_ERROR, P3D_WEIGHTS_ERROR_BAD_METADATA,
        P3D_MODEL_METADATA_KEY ": graph \"%s\" is no network the compute "
        "library runs: %s", graph->name, message);
    ok = FALSE;
  }
  for (i = 0; i < b.merges->len; i++)
    g_free (g_array_index (b.merges, Merge, i).members);
  g_array_free (b.merges, TRUE);
  g_array_free (b.tensors, TRUE);
  g_hash_table_unref (b.by_name);
  g_free (b.plans);
  if (!ok)
    p3d_model_network_clear (network);
  return ok;
}

void
p3d_model_network_clear (P3dModelNetwork * network)
{
  guint i;

  g_free (network->name);
  g_free (network->input_name);
  for (i = 0; i < network->n_outputs; i++)
    g_free (network->outputs[i].name);
  g_free (network->outputs);
  g_free ((gpointer) network->desc.buffers);
  g_free ((gpointer) network->desc.layers);
  memset (network, 0, sizeof *network);
}
