/* What the convnet tests share: random nets (free-form chains with
 * concatenations, random graphs of every layer kind with a batch, and the
 * CenterPoint pattern), a float64 oracle with its own arithmetic (scatter
 * of every input tap for the convolutions, not a gather per output), the
 * magnitude of every element (its terms' absolute values summed, each
 * input taken at its own magnitude), against which rounding errors are
 * measured, and a comparison that says where and by how much two results
 * differ. */
#ifndef CONVNET_COMMON_H
#define CONVNET_COMMON_H

#include <gst/check/gstcheck.h>

#include "convnet.h"
#include "p3dtest.h"

G_BEGIN_DECLS

typedef struct
{
  P3dcConvNetDesc desc;
  GArray *buffers;              /* P3dcConvBufferDesc */
  GArray *layers;               /* P3dcConvLayer */
  GPtrArray *params;            /* the weights and biases, owned */
  GArray *heatmap_layers;       /* guint32: the CenterPoint pattern's
                                 * layers that write a task's heatmap (or
                                 * the merged heads' layer: every head) */
  gfloat *input;                /* buffer 0, [C][H][W] */
} ConvnetTestNet;

ConvnetTestNet *convnet_test_net_new (guint32 channels, guint32 height,
    guint32 width);
void convnet_test_net_free (ConvnetTestNet * net);
/* Appends a buffer; returns its index. */
guint32 convnet_test_net_add_buffer (ConvnetTestNet * net, guint32 channels,
    guint32 height, guint32 width);
/* Appends a layer with random weights (uniform, variance 2 / fan-in) and
 * biases (uniform in [-bias_range, bias_range]). */
void convnet_test_net_add_layer (ConvnetTestNet * net, P3dTestRng * rng,
    P3dcConvKind kind, guint32 input, guint32 output, guint32 offset,
    guint32 out_channels, guint32 kernel, guint32 stride, guint32 padding,
    gboolean relu, gfloat bias_range);
/* Appends @layer (its weight and bias ignored) with random weights and
 * biases as above for the convolutions. */
void convnet_test_net_add (ConvnetTestNet * net, P3dTestRng * rng,
    const P3dcConvLayer * layer, gfloat bias_range);
/* Updates desc after buffers or layers were added. */
void convnet_test_net_finish (ConvnetTestNet * net, P3dTestRng * rng);

/* A random chain of convolutions (any kernel up to 3, stride up to 2,
 * padding), transposed convolutions (kernel == stride 2 or 3) and
 * concatenations of 2 or 3 slices, on a small random input. */
ConvnetTestNet *convnet_test_net_random (P3dTestRng * rng);

/* A random graph of every kind on a batch of @batch (1 to 3 when 0):
 * convolutions with non-square kernels and strides, dilation, groups,
 * channel slices read and residuals; transposed convolutions (non-square
 * too); concatenations; adds; max pools; nearest and bilinear upsampling
 * with both corner rules to sizes that are and are not multiples of the
 * input; softmax over channel slices; slices with and without ReLU. */
ConvnetTestNet *convnet_test_net_random_graph (P3dTestRng * rng,
    guint32 batch);

/* The number of terms each output of @layer sums (its rounding budget):
 * a convolution's taps per output, the channels of a softmax, 4 for
 * bilinear upsampling, 2 for an add, 1 otherwise. */
guint32 convnet_test_layer_terms (const P3dcConvLayer * layer);

/* How the CenterPoint pattern lays out its heads. */
typedef enum
{
  CONVNET_TEST_HEADS_APART,     /* a buffer each */
  CONVNET_TEST_HEADS_BY_TASK,   /* the heads of a task in slices of one
                                 * buffer */
  CONVNET_TEST_HEADS_MERGED,    /* as the model layer merges them
                                 * (convnet_test_net_add_merged_heads) */
} ConvnetTestHeads;

/* The CenterPoint pattern: 3 stages (a 3x3 stride-2 convolution, then
 * layer_nums 3x3 ones), the neck (stride-2 2x2 convolution, 1x1
 * convolution, 2x2 transposed convolution, concatenated), the shared 3x3
 * head convolution and, per task, 6 heads of 3x3 + ReLU then 3x3 to (2, 1,
 * 3, 2, 2, classes) channels, the classes of nuScenes' six tasks (1, 2, 2,
 * 1, 2, 2) in turn, laid out as @heads says. Biases are uniform in [-0.2,
 * 0.2] but the heatmaps', -2.19 as CenterPoint initializes them. */
ConvnetTestNet *convnet_test_net_centerpoint (P3dTestRng * rng,
    guint32 in_channels, guint32 height, guint32 width,
    const guint32 widths[3], const guint32 layer_nums[3], guint32 neck,
    guint32 head, guint32 tasks, ConvnetTestHeads heads);

/* CenterHead's heads as caps/p3dmodelbuild.c runs them: every head's
 * first 3x3 convolution (+ ReLU) on buffer @shared as one, into tasks x 6 x
 * @head channels; then the heads' final 3x3 convolutions (2, 1, 3, 2, 2,
 * @classes[t] channels) as one grouped convolution, a group a head, each
 * group's outputs padded to P3DC_CONVNET_GROUPED_OUTPUTS (8, classes at
 * most that) with zero weights and biases. Biases uniform in [-0.2, 0.2], the heatmaps' -2.19;
 * the grouped layer goes into heatmap_layers. */
void convnet_test_net_add_merged_heads (ConvnetTestNet * net,
    P3dTestRng * rng, guint32 shared, guint32 head, guint32 tasks,
    const guint32 * classes);

/* The oracle: every buffer in float64 (out[0] is the input), and when
 * @magnitude is not NULL, the magnitude M of every element there: |x| for
 * the input, and for a convolution's output the sum over its taps of |w|
 * times the tap input's M, plus |b| (plus the residual's M); an add's the
 * sum of its inputs' M; a max pool's the largest M of its window; an
 * upsampling's the weighted M of its taps; a softmax's 1 plus the largest
 * M of its position (its output is at most 1, and moves by at most half
 * the largest change of its inputs); a slice's its source's.  It bounds the scale at which this layer's
 * rounding acts (|w x| <= |w| M) and carries the earlier layers' errors
 * (an input error of k u M reaches the output as at most k u times its
 * M), so per-layer budgets add up along a path even where terms cancel. */
gdouble **convnet_test_oracle (const ConvnetTestNet * net,
    gdouble *** magnitude);
void convnet_test_buffers_free (const ConvnetTestNet * net,
    gdouble ** buffers);

/* The longest chain of layers that leads to each buffer (0 for the
 * input), through both inputs of an add or a residual. */
guint *convnet_test_depths (const ConvnetTestNet * net);

/* Reads element (c, y, x) of batch item 0 of a view (F32 or F16) of host
 * memory, and element (n, c, y, x). */
gdouble convnet_test_view_read (const P3dcMapView * view, guint32 c,
    guint32 y, guint32 x);
gdouble convnet_test_view_read_item (const P3dcMapView * view, guint32 n,
    guint32 c, guint32 y, guint32 x);

/* Compares @view of buffer @b with @expect: every element within
 * rel * magnitude + abs_tol.  Returns the largest |difference| / magnitude
 * seen (magnitude 0 counted as 1), and fails with the first element out of
 * bounds. */
gdouble convnet_test_compare (const ConvnetTestNet * net, guint32 b,
    const P3dcMapView * view, const gdouble * expect,
    const gdouble * magnitude, gdouble rel, gdouble abs_tol,
    const gchar * what);

G_END_DECLS

#endif /* CONVNET_COMMON_H */
