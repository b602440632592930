/* gst-perception: the one layer description of every model family.
 *
 * A graph is one network of a model: its input (a name and a shape) and a
 * list of layers, each making one named tensor from named inputs, and the
 * named outputs an element reads.  It is what `p3d.model`'s "graph"
 * carries as JSON (docs/weights.md gives the schema) and what a family
 * builds from its config in C; p3d_model_new() turns either into the
 * compute library's layer graph (p3dmodel.h).  The ops and their
 * semantics are PyTorch's:
 *  - conv: Conv2d (kernel, stride, padding, dilation: one number or
 *    [y, x]; groups), its weight, an optional bias and an optional
 *    BatchNorm2d folded in (its state_dict prefix and eps);
 *  - deconv: ConvTranspose2d with kernel == stride, padding 0;
 *  - add: the sum of two tensors of one shape (a residual);
 *  - max_pool: MaxPool2d (stride defaults to the kernel, as in PyTorch);
 *  - upsample: F.interpolate, nearest or bilinear (align_corners), to an
 *    integer scale, a size, or the size of another tensor;
 *  - concat: torch.cat on channels;
 *  - slice: channels [begin, end) of a tensor (no copy);
 *  - softmax: over channels;
 *  - relu.
 * conv, deconv, add, max_pool, upsample and slice take "relu": true for a
 * ReLU after them. */
#ifndef __P3D_MODEL_GRAPH_H__
#define __P3D_MODEL_GRAPH_H__

#include <glib.h>

G_BEGIN_DECLS

typedef enum
{
  P3D_MODEL_OP_CONV,
  P3D_MODEL_OP_DECONV,
  P3D_MODEL_OP_ADD,
  P3D_MODEL_OP_MAX_POOL,
  P3D_MODEL_OP_UPSAMPLE,
  P3D_MODEL_OP_CONCAT,
  P3D_MODEL_OP_SLICE,
  P3D_MODEL_OP_SOFTMAX,
  P3D_MODEL_OP_RELU,
  P3D_MODEL_N_OPS,
} P3dModelOp;

/* "conv", "deconv", "add", "max_pool", "upsample", "concat", "slice",
 * "softmax", "relu": the JSON's "op". */
const gchar *p3d_model_op_to_string (P3dModelOp op);

/* One layer; the fields an op does not use stay zero.  Per-axis values
 * are [y, x]. */
typedef struct
{
  P3dModelOp op;
  gchar *name;                  /* the tensor it makes */
  gchar **inputs;               /* NULL-terminated: one, two for add,
                                 * any number for concat */
  /* conv, deconv */
  guint out_channels;
  guint groups;                 /* conv; 1 */
  gchar *weight;                /* state_dict names */
  gchar *bias;                  /* NULL: none */
  gchar *norm;                  /* BatchNorm prefix, NULL: none */
  gdouble norm_eps;
  /* conv, deconv, max_pool */
  guint kernel[2], stride[2], padding[2], dilation[2];
  /* upsample: bilinear (else nearest), its corner rule, and the output
   * size: scale times the input, or size, or the size of size_of */
  gboolean bilinear;
  gboolean align_corners;
  guint scale[2];
  guint size[2];
  gchar *size_of;
  /* slice */
  guint begin, end;
  /* conv, deconv, add, max_pool, upsample, slice */
  gboolean relu;
} P3dModelLayer;

typedef struct
{
  gchar *name;                  /* an element's name for it */
  gchar *tensor;
} P3dModelGraphOutput;

typedef struct
{
  gchar *name;                  /* the network: "bev", "image" */
  gchar *input;                 /* the input tensor's name */
  guint batch, channels, height, width;
  GPtrArray *layers;            /* P3dModelLayer, in order */
  GPtrArray *outputs;           /* P3dModelGraphOutput */
} P3dModelGraph;

P3dModelGraph *p3d_model_graph_new (const gchar * name, const gchar * input,
    guint batch, guint channels, guint height, guint width);
void p3d_model_graph_free (P3dModelGraph * graph);

/* Appends a layer making @name from @input (NULL: the previous layer's
 * tensor, or the graph's input for the first), with PyTorch's defaults
 * (stride 1, dilation 1, one group, norm_eps 1e-5); the caller fills the
 * rest. */
P3dModelLayer *p3d_model_graph_add_layer (P3dModelGraph * graph,
    P3dModelOp op, const gchar * name, const gchar * input);
/* Another input of @layer (add, concat). */
void p3d_model_layer_add_input (P3dModelLayer * layer, const gchar * input);
/* Sets kernel, stride and padding on both axes. */
void p3d_model_layer_set_square (P3dModelLayer * layer, guint kernel,
    guint stride, guint padding);

void p3d_model_graph_add_output (P3dModelGraph * graph, const gchar * name,
    const gchar * tensor);

/* The graph of @json (one network's object, see docs/weights.md); FALSE
 * with P3D_WEIGHTS_ERROR_BAD_METADATA naming the layer (index and name) and
 * the key.  @name is the network's. */
P3dModelGraph *p3d_model_graph_parse (const gchar * name, const gchar * json,
    GError ** error);

/* @graph as the JSON object p3d_model_graph_parse() reads (newly
 * allocated): what a family builds, written out for a converter or a
 * reader. */
gchar *p3d_model_graph_to_json (const P3dModelGraph * graph);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (P3dModelGraph, p3d_model_graph_free)

G_END_DECLS

#endif /* __P3D_MODEL_GRAPH_H__ */
