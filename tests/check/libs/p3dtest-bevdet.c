/* Tiny BEVDet models and their configs (p3dtest-bevdet.h). */
#include <string.h>
#include <gst/check/gstcheck.h>

#include "p3dtest-bevdet.h"

void
p3d_test_bevdet_arch_init (P3dTestBevDetArch * arch)
{
  static const guint bev_channels[3] = { 6, 12, 24 };
  guint s;

  memset (arch, 0, sizeof (*arch));
  arch->cameras = 2;
  arch->input_height = 64;
  arch->input_width = 96;
  arch->depth = 18;
  arch->base_channels = 4;
  arch->fpn_channels = 8;
  arch->depth_bins = 4;
  arch->context_channels = 3;
  arch->grid_x = 16;
  arch->grid_y = 24;
  for (s = 0; s < 3; s++) {
    arch->bev_channels[s] = bev_channels[s];
    arch->bev_layers[s] = 1;
  }
  arch->lss_channels = 8;
  arch->head.share_channels = 6;
  arch->head.head_conv = 5;
  arch->head.final_kernel = 3;
  arch->head.n_tasks = 2;
  arch->head.task_classes[0] = 1;
  arch->head.task_classes[1] = 2;
  arch->head.vel = TRUE;
}

static void
add_bias (TinyModel * m, P3dTestRng * rng, gchar * name, gint64 channels)
{
  const gint64 shape[1] = { channels };

  tiny_model_add_tensor (m, rng, name, 1, shape, -0.2f, 0.2f);
}

/* mmdet's BasicBlock or Bottleneck under @prefix: conv1, bn1, conv2, bn2
 * (conv3, bn3), then the shortcut's tensors when @shortcut is not 0: a
 * ResNet's 1x1 conv and BatchNorm (downsample.0, .1), or
 * ResNetForBEVDet's 3x3 conv with a bias (downsample). */
static void
add_block (TinyModel * m, P3dTestRng * rng, const gchar * prefix,
    gboolean bottleneck, guint in, guint planes, guint out, guint shortcut)
{
  if (bottleneck) {
    tiny_model_add_conv (m, rng, g_strdup_printf ("%s.conv1.weight", prefix),
        planes, in, 1, in);
    tiny_model_add_norm (m, rng, g_strdup_printf ("%s.bn1", prefix), planes);
    tiny_model_add_conv (m, rng, g_strdup_printf ("%s.conv2.weight", prefix),
        planes, planes, 3, planes * 9);
    tiny_model_add_norm (m, rng, g_strdup_printf ("%s.bn2", prefix), planes);
    tiny_model_add_conv (m, rng, g_strdup_printf ("%s.conv3.weight", prefix),
        out, planes, 1, planes);
    tiny_model_add_norm (m, rng, g_strdup_printf ("%s.bn3", prefix), out);
  } else {
    tiny_model_add_conv (m, rng, g_strdup_printf ("%s.conv1.weight", prefix),
        planes, in, 3, in * 9);
    tiny_model_add_norm (m, rng, g_strdup_printf ("%s.bn1", prefix), planes);
    tiny_model_add_conv (m, rng, g_strdup_printf ("%s.conv2.weight", prefix),
        out, planes, 3, planes * 9);
    tiny_model_add_norm (m, rng, g_strdup_printf ("%s.bn2", prefix), out);
  }
  if (shortcut == 1) {
    tiny_model_add_conv (m, rng,
        g_strdup_printf ("%s.downsample.0.weight", prefix), out, in, 1, in);
    tiny_model_add_norm (m, rng, g_strdup_printf ("%s.downsample.1", prefix),
        out);
  } else if (shortcut == 3) {
    tiny_model_add_conv (m, rng,
        g_strdup_printf ("%s.downsample.weight", prefix), out, in, 3, in * 9);
    add_bias (m, rng, g_strdup_printf ("%s.downsample.bias", prefix), out);
  }
}

static const guint resnet_blocks[2][4] = { {2, 2, 2, 2}, {3, 4, 6, 3} };

TinyModel *
p3d_test_bevdet_model_new (const P3dTestBevDetArch * a, guint64 seed)
{
  TinyModel *m = tiny_model_new_empty (&a->head);
  gboolean bottleneck = a->depth >= 50;
  const guint *blocks = resnet_blocks[a->depth == 18 ? 0 : 1];
  guint expansion = bottleneck ? 4 : 1, in = a->base_channels, s, k;
  guint stage_channels[4], depthnet = a->depth_bins + a->context_channels;
  guint lss_in;
  P3dTestRng rng;

  p3d_test_rng_init (&rng, seed);
  tiny_model_add_conv (m, &rng, g_strdup ("img_backbone.conv1.weight"),
      a->base_channels, 3, 7, 3 * 49);
  tiny_model_add_norm (m, &rng, g_strdup ("img_backbone.bn1"),
      a->base_channels);
  for (s = 0; s < 4; s++) {
    guint planes = a->base_channels << s, out = planes * expansion;

    for (k = 0; k < blocks[s]; k++) {
      gchar *prefix = g_strdup_printf ("img_backbone.layer%u.%u", s + 1, k);
      gboolean shortcut = k == 0 && (s > 0 || in != out);

      add_block (m, &rng, prefix, bottleneck, in, planes, out,
          shortcut ? 1 : 0);
      g_free (prefix);
      in = out;
    }
    stage_channels[s] = out;
  }
  for (s = 0; s < 2; s++) {
    tiny_model_add_conv (m, &rng,
        g_strdup_printf ("img_neck.lateral_convs.%u.conv.weight", s),
        a->fpn_channels, stage_channels[2 + s], 1, stage_channels[2 + s]);
    add_bias (m, &rng,
        g_strdup_printf ("img_neck.lateral_convs.%u.conv.bias", s),
        a->fpn_channels);
  }
  tiny_model_add_conv (m, &rng, g_strdup ("img_neck.fpn_convs.0.conv.weight"),
      a->fpn_channels, a->fpn_channels, 3, a->fpn_channels * 9);
  add_bias (m, &rng, g_strdup ("img_neck.fpn_convs.0.conv.bias"),
      a->fpn_channels);
  tiny_model_add_conv (m, &rng,
      g_strdup ("img_view_transformer.depthnet.weight"), depthnet,
      a->fpn_channels, 1, a->fpn_channels);
  add_bias (m, &rng, g_strdup ("img_view_transformer.depthnet.bias"), depthnet);

  in = a->context_channels;
  for (s = 0; s < 3; s++) {
    guint out = a->bev_channels[s];

    for (k = 0; k < a->bev_layers[s]; k++) {
      gchar *prefix =
          g_strdup_printf ("img_bev_encoder_backbone.layers.%u.%u", s, k);

      add_block (m, &rng, prefix, a->bev_bottleneck, in,
          a->bev_bottleneck ? out / 4 : out, out, k == 0 ? 3 : 0);
      g_free (prefix);
      in = out;
    }
  }
  lss_in = a->bev_channels[0] + a->bev_channels[2];
  tiny_model_add_conv (m, &rng,
      g_strdup ("img_bev_encoder_neck.conv.0.weight"), 2 * a->lss_channels,
      lss_in, 3, lss_in * 9);
  tiny_model_add_norm (m, &rng, g_strdup ("img_bev_encoder_neck.conv.1"),
      2 * a->lss_channels);
  tiny_model_add_conv (m, &rng,
      g_strdup ("img_bev_encoder_neck.conv.3.weight"), 2 * a->lss_channels,
      2 * a->lss_channels, 3, 2 * a->lss_channels * 9);
  tiny_model_add_norm (m, &rng, g_strdup ("img_bev_encoder_neck.conv.4"),
      2 * a->lss_channels);
  tiny_model_add_conv (m, &rng, g_strdup ("img_bev_encoder_neck.up2.1.weight"),
      a->lss_channels, 2 * a->lss_channels, 3, 2 * a->lss_channels * 9);
  tiny_model_add_norm (m, &rng, g_strdup ("img_bev_encoder_neck.up2.2"),
      a->lss_channels);
  tiny_model_add_conv (m, &rng, g_strdup ("img_bev_encoder_neck.up2.4.weight"),
      a->lss_channels, a->lss_channels, 1, a->lss_channels);
  add_bias (m, &rng, g_strdup ("img_bev_encoder_neck.up2.4.bias"),
      a->lss_channels);
  tiny_model_add_center_head (m, &rng, a->lss_channels);
  return m;
}

gchar *
p3d_test_bevdet_config (const P3dTestBevDetArch * a, gboolean rotate_only)
{
  GString *tasks = g_string_new (NULL), *cams = g_string_new (NULL);
  gdouble hx = a->grid_x / 2.0, hy = a->grid_y / 2.0;
  guint t, c;
  gchar *config;

  for (c = 0; c < a->cameras; c++)
    g_string_append_printf (cams, "%s\"CAM_%u\"", c ? ", " : "", c);
  for (t = 0; t < a->head.n_tasks; t++) {
    g_string_append_printf (tasks, "%s{\"class_names\": [", t ? ", " : "");
    for (c = 0; c < a->head.task_classes[t]; c++)
      g_string_append_printf (tasks, "%s\"class%u_%u\"", c ? ", " : "", t, c);
    g_string_append (tasks, "]}");
  }
  config = g_strdup_printf ("{\"architecture\": \"bevdet\", \"version\": 1, "
      "\"data_config\": {\"cams\": [%s], \"Ncams\": %u, "
      "\"input_size\": [%u, %u], \"src_size\": [%u, %u], "
      "\"resize_test\": 0.04, \"crop_h\": [0.0, 0.0], "
      "\"mean\": [0.485, 0.456, 0.406], \"std\": [0.229, 0.224, 0.225], "
      "\"resize\": [-0.06, 0.11], \"rot\": [-5.4, 5.4], \"flip\": true}, "
      "\"grid_config\": {\"xbound\": [%g, %g, 1.0], "
      "\"ybound\": [%g, %g, 1.0], \"zbound\": [-10.0, 10.0, 20.0], "
      "\"dbound\": [1.0, %u.0, 1.0]}, "
      "\"img_backbone\": {\"type\": \"ResNet\", \"depth\": %u, "
      "\"num_stages\": 4, \"out_indices\": [2, 3], \"style\": \"%s\", "
      "\"base_channels\": %u}, "
      "\"img_neck\": {\"type\": \"FPNForBEVDet\", \"in_channels\": [%u, %u], "
      "\"out_channels\": %u, \"num_outs\": 1, \"start_level\": 0, "
      "\"out_ids\": [0]}, "
      "\"img_view_transformer\": {\"type\": "
      "\"ViewTransformerLiftSplatShoot\", \"numC_input\": %u, "
      "\"numC_Trans\": %u, \"downsample\": 16}, "
      "\"img_bev_encoder_backbone\": {\"type\": \"ResNetForBEVDet\", "
      "\"numC_input\": %u, \"num_layer\": [%u, %u, %u], "
      "\"num_channels\": [%u, %u, %u], \"stride\": [2, 2, 2], "
      "\"block_type\": \"%s\"}, "
      "\"img_bev_encoder_neck\": {\"type\": \"FPN_LSS\", \"in_channels\": %u, "
      "\"out_channels\": %u}, "
      "\"head\": {\"share_conv_channel\": %u, \"head_conv\": %u, "
      "\"final_kernel\": %u, \"bn_eps\": 1e-5, \"tasks\": [%s], "
      "\"common_heads\": {\"reg\": 2, \"height\": 1, \"dim\": 3, \"rot\": 2%s}, "
      "\"norm_bbox\": true}, "
      "\"coder\": {\"post_center_range\": [%g, %g, -10.0, %g, %g, 10.0], "
      "\"max_num\": 40, \"score_threshold\": 0.1, \"out_size_factor\": 1, "
      "\"voxel_size\": [1.0, 1.0], \"pc_range\": [%g, %g]}, "
      "\"test_nms\": {\"nms_type\": [\"rotate\", \"%s\"], "
      "\"nms_thr\": [0.2, 0.5], \"nms_rescale_factor\": [1.0, [4.5, 9.0]], "
      "\"min_radius\": [4, 0.175], \"pre_max_size\": 30, "
      "\"post_max_size\": 12}}",
      cams->str, a->cameras,
      a->input_height, a->input_width, a->input_height * 4,
      a->input_width * 4, -hx, hx, -hy, hy, 1 + a->depth_bins, a->depth,
      a->caffe ? "caffe" : "pytorch", a->base_channels,
      (a->base_channels << 2) * (a->depth >= 50 ? 4 : 1),
      (a->base_channels << 3) * (a->depth >= 50 ? 4 : 1), a->fpn_channels,
      a->fpn_channels, a->context_channels, a->context_channels,
      a->bev_layers[0], a->bev_layers[1], a->bev_layers[2],
      a->bev_channels[0], a->bev_channels[1], a->bev_channels[2],
      a->bev_bottleneck ? "BottleNeck" : "Basic",
      a->bev_channels[0] + a->bev_channels[2], a->lss_channels,
      a->head.share_channels, a->head.head_conv, a->head.final_kernel,
      tasks->str, a->head.vel ? ", \"vel\": 2" : "", -hx - 10, -hy - 10,
      hx + 10, hy + 10, -hx, -hy, rotate_only ? "rotate" : "circle");
  g_string_free (tasks, TRUE);
  g_string_free (cams, TRUE);
  return config;
}
