/* Tiny BEVDet models (the bevdet family of the model layer) for the tests
 * of the family and of the elements that run it: every tensor of BEVDet's
 * state_dict (img_backbone, img_neck, img_view_transformer.depthnet,
 * img_bev_encoder_backbone, img_bev_encoder_neck, pts_bbox_head) in its
 * order for an architecture the test describes, with the tiny CenterPoint
 * models' random values (p3dtest-tinymodel.h), and the `p3d.model` config
 * that describes it. */
#ifndef P3D_TEST_BEVDET_H
#define P3D_TEST_BEVDET_H

#include <glib.h>

#include "p3dtest-tinymodel.h"

G_BEGIN_DECLS

typedef struct
{
  /* data_config */
  guint cameras;
  guint input_height, input_width;      /* multiples of 32 */
  /* img_backbone: ResNet-depth with base_channels, out_indices [2, 3] */
  guint depth;                  /* 18 or 34 (BasicBlock), 50 (Bottleneck) */
  guint base_channels;
  gboolean caffe;
  /* img_neck, img_view_transformer */
  guint fpn_channels;
  guint depth_bins;             /* dbound [1, 1 + depth_bins, 1] */
  guint context_channels;       /* numC_Trans */
  /* grid_config: 1 m cells over [-grid_x / 2, grid_x / 2] (y alike) */
  guint grid_x, grid_y;
  /* img_bev_encoder_backbone: three stages of stride 2 */
  guint bev_channels[3];
  guint bev_layers[3];
  gboolean bev_bottleneck;
  /* img_bev_encoder_neck: FPN_LSS of stages 0 and 2, x4, then x2 */
  guint lss_channels;
  /* the CenterHead: its share_channels, head_conv, final_kernel, n_tasks,
   * task_classes and vel fields */
  TinyModelArch head;
} P3dTestBevDetArch;

/* Two cameras of 64 x 96, ResNet-18 of base 4, FPN 8, 4 depth bins, 3
 * context channels, a 16 x 24 grid, BEV stages of 6, 12, 24 channels and
 * one block each, FPN_LSS 8, a head of two tasks (car; pedestrian and
 * traffic cone) with vel. */
void p3d_test_bevdet_arch_init (P3dTestBevDetArch * arch);

/* The tensors of @arch, random from @seed. */
TinyModel *p3d_test_bevdet_model_new (const P3dTestBevDetArch * arch,
    guint64 seed);

/* The config of @arch: bevdet-r50.py's data config scaled to the input,
 * the coder on the grid (out_size_factor 1), max_num 40, score threshold
 * 0.1, and Scale-NMS: task 0 rotate 0.2 unscaled, task 1 circle
 * (min_radius 0.175) with factors [4.5, 9.0] (that circle ignores), unless
 * @rotate_only, when task 1 is rotate 0.5 with them; pre_max_size 30,
 * post_max_size 12. */
gchar *p3d_test_bevdet_config (const P3dTestBevDetArch * arch,
    gboolean rotate_only);

G_END_DECLS

#endif /* P3D_TEST_BEVDET_H */
