/* gst-perception: the CenterPoint-pillar model family (mmdetection3d's
 * PillarFeatureNet, PointPillarsScatter, SECOND, SECONDFPN and CenterHead),
 * one of the families of the model layer (p3dmodel.h).
 *
 * p3d_centerpoint_config_parse() reads the model's hyperparameters from the
 * `p3d.model` metadata (a JSON document, see docs/weights.md); the family
 * builds the graph of its "bev" network from them (backbone, neck and
 * head, p3dmodelgraph.h), unless the metadata carries one.
 * p3d_centerpoint_model_new() is p3d_model_new() on such a file, seen
 * through the family's types: the config, the pillar net's folded weight
 * and bias, and the "bev" network's P3dcConvNetDesc with the buffer of
 * every task's head outputs that the decode reads.  The elements use the
 * generic P3dModel; the tests and the network benchmark use this view.
 */
#ifndef __P3D_CENTERPOINT_H__
#define __P3D_CENTERPOINT_H__

#include <stdint.h>
#include <glib.h>

#include "p3dformats.h"
#include "p3dmodel.h"
#include "p3dweights.h"

#include "centerpoint_decode.h"
#include "convnet.h"

G_BEGIN_DECLS

/* The metadata key that holds the model's config (a JSON document). */
#define P3D_CENTERPOINT_METADATA_KEY P3D_MODEL_METADATA_KEY
#define P3D_CENTERPOINT_ARCHITECTURE "centerpoint-pillar"
#define P3D_CENTERPOINT_VERSION 1

#define P3D_CENTERPOINT_MAX_STAGES P3D_MODEL_MAX_STAGES
#define P3D_CENTERPOINT_MAX_CLASSES 64  /* per task */

/* The outputs of one task's head, in the order of the layer table. */
typedef enum
{
  P3D_CENTERPOINT_HEAD_REG = 0, /* 2: centre offset in the cell, x y */
  P3D_CENTERPOINT_HEAD_HEIGHT,  /* 1: z of the box centre */
  P3D_CENTERPOINT_HEAD_DIM,     /* 3: log of dx dy dz (norm_bbox) */
  P3D_CENTERPOINT_HEAD_ROT,     /* 2: sin, cos of the yaw */
  P3D_CENTERPOINT_HEAD_VEL,     /* 2: vx vy; optional */
  P3D_CENTERPOINT_HEAD_HEATMAP, /* one per class of the task, logits */
  P3D_CENTERPOINT_N_HEADS,
} P3dCenterPointHead;

/* The name of the head in the state_dict ("reg", ..., "heatmap"). */
const gchar *p3d_centerpoint_head_to_string (P3dCenterPointHead head);


typedef struct
{
  guint n_classes;
  gchar **class_names;          /* n_classes, NULL-terminated */
  /* The global label of the task's first class: the sum of the classes
   * of the tasks before it. */
  guint label_offset;
  /* circle NMS: the squared centre distance at or below which a box is
   * suppressed (mmdetection3d's min_radius, used squared as it is);
   * 0 when the file gives none */
  gdouble min_radius;
  /* the task's own NMS (circle or rotate) and rotate threshold, and the
   * factor each class's box sizes are multiplied by for the overlap test
   * (BEVDet's Scale-NMS, read when the config's per_task_nms is set; else
   * the config's one NMS, factors 1) */
  P3dcCenterPointNms nms_type;
  gdouble nms_thr;
  gdouble nms_rescale[P3D_CENTERPOINT_MAX_CLASSES];
} P3dCenterPointTaskConfig;

/* The config, as `p3d.model` gives it; every value range-checked. */
typedef struct
{
  guint version;
  /* the voxel grid (point_channels 5: xyzit), the pillar net, SECOND and
   * SECONDFPN, as every pillar model has them */
  P3dModelPillarConfig pillar;

  guint share_conv_channel;
  guint head_conv;
  guint final_kernel;           /* odd; padding final_kernel / 2 */
  gdouble head_bn_eps;
  /* channels of each head; 0 for an absent vel head, the heatmap's
   * entry unused (each task has its own class count) */
  guint head_channels[P3D_CENTERPOINT_N_HEADS];
  gboolean norm_bbox;           /* dim is the log of the size */
  guint n_tasks;
  P3dCenterPointTaskConfig tasks[P3DC_CENTERPOINT_MAX_TASKS];
  guint n_classes;              /* over all tasks */

  /* CenterPointBBoxCoder */
  gdouble post_center_range[6];
  guint max_num;
  gdouble score_threshold;
  guint out_size_factor;
  gdouble coder_voxel_size[2];
  gdouble coder_pc_range[2];

  /* the model's test-time NMS, per task */
  P3dcCenterPointNms nms_type;     /* circle or rotate */
  gdouble nms_thr;
  /* each task's nms_type, nms_thr and nms_rescale (Scale-NMS) instead of
   * the two above: FALSE for this family, set by bevdet's */
  gboolean per_task_nms;
  guint pre_max_size;
  guint post_max_size;
} P3dCenterPointConfig;

/* Parses @json (the value of `p3d.model`) into @config, which needs
 * p3d_centerpoint_config_clear() afterwards whatever the result.  FALSE
 * with P3D_WEIGHTS_ERROR_BAD_METADATA naming the key on any fault. */
gboolean p3d_centerpoint_config_parse (P3dCenterPointConfig * config,
    const gchar * json, GError ** error);
void p3d_centerpoint_config_clear (P3dCenterPointConfig * config);

/* p3d_model_fold_batchnorm(), the model layer's BatchNorm folding. */
void p3d_centerpoint_fold_batchnorm (gfloat * weight, guint n_outer,
    guint out_channels, guint inner, const gfloat * layer_bias,
    const gfloat * gamma, const gfloat * beta, const gfloat * mean,
    const gfloat * var, gdouble eps, gfloat * bias);

/* Where one head output lives in the net. */
typedef struct
{
  guint buffer;                 /* index into net.buffers */
  guint channels;               /* 0: this head is absent (vel) */
  guint channel_offset;         /* its first channel in the buffer */
} P3dCenterPointHeadOutput;

typedef struct
{
  P3dCenterPointConfig config;

  /* PillarFeatureNet's one layer, BatchNorm folded: y = ReLU (W x + b) */
  guint pfn_in_channels;        /* the feature set's channels */
  guint pfn_out_channels;
  gfloat *pfn_weight;           /* [out][in] */
  gfloat *pfn_bias;             /* [out] */

  /* Backbone, neck and head: the "bev" network.  Buffer 0 is the
   * scattered BEV canvas [pfn_out][grid y][grid x].  Every layer writes a
   * buffer (or a channel slice of the neck's concat) that no other layer
   * writes, so every buffer holds its final content after a run. */
  P3dcConvNetDesc net;
  guint neck_output;            /* the concat, the head's input */
  guint head_height;            /* size of every head map */
  guint head_width;
  P3dCenterPointHeadOutput heads[P3DC_CENTERPOINT_MAX_TASKS]
      [P3D_CENTERPOINT_N_HEADS];

  /*< private > */
  P3dModel *model;              /* owns everything above */
} P3dCenterPointModel;

/* The model in @weights: its `p3d.model` config, every tensor it implies
 * (names as mmdetection3d's state_dict), BatchNorm folded.  NULL with
 * @error set (P3D_WEIGHTS_ERROR) when anything is missing or wrong, or the
 * file holds a model of another family. */
P3dCenterPointModel *p3d_centerpoint_model_new (const P3dWeights * weights,
    GError ** error);
void p3d_centerpoint_model_free (P3dCenterPointModel * model);

/* The decode's parameters from @model's coder and test configuration;
 * without @model_nms every decoded box is kept (up to max-num per task).
 * The element bevdetect and the network benchmark both use it, so they
 * decode alike. */
void p3d_centerpoint_model_decode_params (const P3dCenterPointModel * model,
    gboolean model_nms, P3dcCenterPointParams * params);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (P3dCenterPointModel,
    p3d_centerpoint_model_free)

G_END_DECLS

#endif /* __P3D_CENTERPOINT_H__ */
