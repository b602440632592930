/* gst-perception: the models of the network elements, built from a
 * safetensors weights file (p3dweights.h).
 *
 * A model is one or more networks (what one element runs: "bev" for
 * bevdetect, "image" for a camera encoder), each a layer graph of the
 * compute library (convnet.h) with BatchNorm folded, the buffers the
 * element feeds and the named outputs it reads; optionally the pillar
 * feature net that pillarencode runs, or the cameras of a camera model and
 * their preprocessing; and the decode of the detection head's maps into
 * boxes.  Every model family (CenterPoint on pillars,
 * and the next ones) describes its networks in one form, the graph of
 * p3dmodelgraph.h, which the `p3d.model` metadata either implies (the
 * family builds it from its config) or carries (`"graph"`); one builder
 * then looks the tensors up by their state_dict names, checks their
 * shapes, folds BatchNorm and lays the layers out.  docs/weights.md gives
 * the metadata's schema, docs/development.md how a family is added.
 */
#ifndef __P3D_MODEL_H__
#define __P3D_MODEL_H__

#include <glib.h>

#include "p3dformats.h"
#include "p3dweights.h"

#include "convnet.h"

G_BEGIN_DECLS

/* The metadata key that holds the model's config (a JSON document). */
#define P3D_MODEL_METADATA_KEY "p3d.model"

/* A named output of a network: channels [channel_offset, + channels) of
 * buffer @buffer (the decode reads the heads through these). */
typedef struct
{
  gchar *name;
  guint buffer;
  guint channel_offset;
  guint channels;
} P3dModelOutput;

/* One network: a layer graph ready for the compute library. */
typedef struct
{
  gchar *name;                  /* "bev", "image" */
  /* BatchNorm folded; buffer 0 is the input, [batch][C][H][W] */
  P3dcConvNetDesc desc;
  gchar *input_name;            /* the graph's name of buffer 0 */
  guint n_outputs;
  P3dModelOutput *outputs;
} P3dModelNetwork;

/* The learned pillar feature net of a lidar model (PointPillars'
 * PillarFeatureNet with one layer, BatchNorm folded: y = ReLU (W x + b),
 * max over a pillar's points) and the voxel grid it was trained on. */
typedef struct
{
  guint point_channels;         /* channels of the raw points */
  P3dFeatureSet features;       /* the per-point feature set */
  gdouble voxel_size[3];
  gdouble point_cloud_range[6]; /* xmin ymin zmin xmax ymax zmax */
  guint max_points;
  guint max_voxels;
  guint grid[3];                /* cells along x, y, z (z: 1) */
  guint in_channels;            /* the feature set's channels */
  guint out_channels;
  const gfloat *weight;         /* [out][in] */
  const gfloat *bias;           /* [out] */
} P3dModelPillars;

/* The cameras of a camera model (BEVDet) and what is done to their images
 * before its "image" network, as its test-time pipeline does them; and the
 * grid its camera features are pooled onto (bevpool's properties). */
typedef struct
{
  guint n_cameras;              /* the "image" network's batch */
  gchar **names;                /* NULL-terminated: the batch's order */
  guint input_width, input_height;      /* the network's input image */
  guint src_width, src_height;  /* the camera images it was trained on */
  /* the test-time resize and crop (p3d_model_cameras_image_transform()) */
  gdouble resize_test;
  gdouble crop_h;               /* the share of the scaled image below the
                                 * crop, BEVDet's mean of crop_h */
  /* normalisation of each RGB channel: (v / 255 - mean) / std */
  gdouble mean[3], std[3];
  /* the BEV grid: min, max, step of x, y, z, and the depth bins */
  gdouble xbound[3], ybound[3], zbound[3], dbound[3];
  guint depth_bins;             /* ceil ((dbound max - min) / step) */
  guint feature_channels;       /* the context features per pixel */
  guint downsample;             /* input size / feature map size */
} P3dModelCameras;

/* The test-time transform of one camera image: scaled to scaled_width x
 * scaled_height (scale times its size, truncated), then the network's
 * input_width x input_height window at (crop_x, crop_y) cut out.  A pixel
 * (u, v) of the camera image lands at (u * scale - crop_x, v * scale -
 * crop_y) of the input: bevpool's img_aug is diag (scale, scale, 1) with
 * translation (-crop_x, -crop_y, 0). */
typedef struct
{
  gdouble scale;
  guint scaled_width, scaled_height;
  gint crop_x, crop_y;
} P3dModelImageTransform;

/* BEVDet's test-time sample_augmentation for a @width x @height image, in
 * double as its Python computes it: scale = input_width / width +
 * resize_test, the scaled size (guint) (size * scale), crop_y = (gint)
 * ((1 - crop_h) * scaled_height) - input_height, crop_x = (gint) (MAX (0,
 * scaled_width - input_width) / 2.0).  FALSE when the window does not lie
 * inside the scaled image (an image too small for the network). */
gboolean p3d_model_cameras_image_transform (const P3dModelCameras * cameras,
    guint width, guint height, P3dModelImageTransform * transform);

/* The most stages of a SECOND backbone and its SECONDFPN neck. */
#define P3D_MODEL_MAX_STAGES 8

/* What the `p3d.model` of every pillar model holds (docs/weights.md), read
 * once for every family that has it: the voxel grid its pillar feature net
 * was trained on, that net's one layer, and its SECOND backbone and
 * SECONDFPN neck; every value range-checked. */
typedef struct
{
  guint point_channels;         /* channels of the raw points */
  P3dFeatureSet features;       /* the per-point feature set */
  gdouble voxel_size[3];
  gdouble point_cloud_range[6]; /* xmin ymin zmin xmax ymax zmax */
  guint max_points;
  guint max_voxels;
  guint grid[3];                /* cells along x, y, z (z: 1, pillars) */

  guint pfn_channels;           /* the one PFN layer's output */
  gdouble pfn_bn_eps;

  guint n_stages;
  guint backbone_out_channels[P3D_MODEL_MAX_STAGES];
  guint backbone_layer_nums[P3D_MODEL_MAX_STAGES];
  guint backbone_layer_strides[P3D_MODEL_MAX_STAGES];
  gdouble backbone_bn_eps;

  guint neck_out_channels[P3D_MODEL_MAX_STAGES];
  gdouble neck_upsample_strides[P3D_MODEL_MAX_STAGES];
  gboolean neck_use_conv_for_no_stride;
  gdouble neck_bn_eps;
} P3dModelPillarConfig;

typedef struct _P3dModelFamily P3dModelFamily;

typedef struct
{
  const gchar *architecture;    /* `p3d.model`'s "architecture" */
  guint n_networks;
  P3dModelNetwork *networks;
  const P3dModelPillars *pillars;       /* NULL: the model has none */
  const P3dModelCameras *cameras;       /* NULL: not a camera model */

  /*< private > */
  const P3dModelFamily *family;
  gpointer config;              /* the family's */
  P3dModelPillars pillars_storage;
  P3dModelCameras cameras_storage;
  GPtrArray *arrays;            /* the folded weights and biases */
} P3dModel;

/* The model in @weights: its `p3d.model` config read by the family its
 * "architecture" names, its networks built (from an explicit "graph" or
 * from the config), every tensor they use checked and BatchNorm folded,
 * and no tensor of the family's modules left unused.  NULL with @error set
 * (P3D_WEIGHTS_ERROR, naming the file and the key, layer or tensor) when
 * anything is missing or wrong.  The model keeps nothing of @weights. */
P3dModel *p3d_model_new (const P3dWeights * weights, GError ** error);

/* The class names of the model in @weights in label order, from its
 * `p3d.model` metadata alone (the class_names of every task of "head",
 * as the CenterPoint and BEVDet heads write them; labels count over the
 * tasks in order), NULL-terminated, for whoever draws or writes boxes:
 * the tensors are not read. NULL and @error (naming the file) when the
 * metadata holds none. */
gchar **p3d_model_read_class_names (const P3dWeights * weights,
    GError ** error);
void p3d_model_free (P3dModel * model);

/* The network @name, or NULL when the model has none of that name. */
const P3dModelNetwork *p3d_model_get_network (const P3dModel * model,
    const gchar * name);

/* The output @name of @network, or NULL. */
const P3dModelOutput *p3d_model_network_get_output (const P3dModelNetwork *
    network, const gchar * name);

/* Folds BatchNorm into the layer before it, in double:
 * scale = gamma / sqrt (var + eps), W' = W * scale per output channel,
 * b' = beta + (b - mean) * scale (b = 0 when @layer_bias is NULL).
 * @weight is [n_outer][out_channels][inner]: a conv or linear weight
 * [out][in * kh * kw] is n_outer 1, inner in * kh * kw; a transposed
 * conv's [in][out][kh][kw] is n_outer in, inner kh * kw.  Writes @weight in
 * place and @bias [out_channels]. */
void p3d_model_fold_batchnorm (gfloat * weight, guint n_outer,
    guint out_channels, guint inner, const gfloat * layer_bias,
    const gfloat * gamma, const gfloat * beta, const gfloat * mean,
    const gfloat * var, gdouble eps, gfloat * bias);

/* ---- the box decode ------------------------------------------------- */

/* Where a decode writes a frame's boxes: the records
 * (application/x-boxes3d), the count (one uint32), and per box vx, vy
 * when @velocity is not NULL and the model decodes velocity.  Host
 * memory for the reference path, device memory for the CUDA path. */
typedef struct
{
  gpointer boxes;
  gpointer count;
  gpointer velocity;
} P3dModelBoxes;

/* The decode of a network's head maps into boxes, as the model's family
 * defines it (its box coder and test-time NMS). */
typedef struct _P3dModelDecoder P3dModelDecoder;

/* The decoder of @model's network @network, with the model's own
 * test-time NMS when @model_nms (else every decoded box is kept, up to
 * the coder's limit).  NULL with @error set when the model has no such
 * network, or its family no decode. */
P3dModelDecoder *p3d_model_decoder_new (const P3dModel * model,
    const gchar * network, gboolean model_nms, GError ** error);
void p3d_model_decoder_free (P3dModelDecoder * decoder);

/* The most boxes one frame gives (the output caps' max-boxes). */
guint p3d_model_decoder_get_capacity (const P3dModelDecoder * decoder);

/* Whether the model decodes a velocity for each box (its head has one), so
 * that P3dModelBoxes.velocity is written when given. */
gboolean p3d_model_decoder_has_velocity (const P3dModelDecoder * decoder);

/* The decode on the reference path: from the buffers of
 * p3dc_convnet_cpu() into @boxes (host memory). */
P3dcResult p3d_model_decoder_run_cpu (const P3dModelDecoder * decoder,
    float *const *buffers, const P3dModelBoxes * boxes);

/* The decode's device workspace (made on the current device; no
 * allocation per frame), and the decode on the CUDA path: from the
 * buffers of @net (made from the decoder's network) into @boxes (device
 * memory), queued on @stream. */
typedef struct _P3dModelDecodeWorkspace P3dModelDecodeWorkspace;

P3dcResult p3d_model_decoder_workspace_new (const P3dModelDecoder * decoder,
    P3dModelDecodeWorkspace ** workspace);
void p3d_model_decode_workspace_free (P3dModelDecodeWorkspace * workspace);
P3dcResult p3d_model_decoder_run_cuda (const P3dModelDecoder * decoder,
    P3dModelDecodeWorkspace * workspace, const P3dcConvNet * net,
    const P3dModelBoxes * boxes, P3dcCudaStream stream);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (P3dModel, p3d_model_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (P3dModelDecoder, p3d_model_decoder_free)

G_END_DECLS

#endif /* __P3D_MODEL_H__ */
