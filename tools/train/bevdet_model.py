"""A small BEVDet in plain PyTorch, with BEVDet's state_dict names, for
training on cameratestsrc's six cameras with the BEV pooling of our
`bevpool` element (lss_pool.py).

The modules and their names are those of HuangJunJie2017/BEVDet's
`BEVDet` detector (configs/bevdet/bevdet-r50.py) with a narrow ResNet-18:

  mmdet's ResNet:       img_backbone.conv1.weight, .bn1.*,
                        img_backbone.layer{1-4}.{j}.conv{1,2}.weight,
                        .bn{1,2}.*, .downsample.{0,1}.*
  FPNForBEVDet:         img_neck.lateral_convs.{i}.conv.weight, .bias,
                        img_neck.fpn_convs.0.conv.weight, .bias
  ViewTransformerLiftSplatShoot:
                        img_view_transformer.depthnet.weight, .bias, and
                        its grid as BEVDet keeps it: .dx, .bx, .nx, .frustum
  ResNetForBEVDet:      img_bev_encoder_backbone.layers.{i}.{j}.conv{1,2}
                        .weight, .bn{1,2}.*, .downsample.weight, .bias
  FPN_LSS:              img_bev_encoder_neck.conv.{0,3}.weight,
                        .conv.{1,4}.*, .up2.1.weight, .up2.2.*,
                        .up2.4.weight, .bias
  mmdetection3d's CenterHead:
                        pts_bbox_head.shared_conv.conv.weight, .bn.*,
                        pts_bbox_head.task_heads.{t}.{head}.0.conv.weight,
                        .0.bn.*, .1.weight, .1.bias

so the converter reads the checkpoint as it reads one of BEVDet's.  The one
difference is the pooling: BEVDet's voxel_pooling computes the frustum's
geometry in float32 on every call, this model takes bevpool's float64
geometry (lss_pool.Geometry) once; the sum is the same (feature x depth
probability over the frustum points of a cell, truncation toward zero,
layout [C][y][x]).  Every size comes from the model config (the p3d.model
document of the weights file, bevdet_config.json).
"""

import torch
from torch import nn

import centerpoint_model
import lss_pool


def _bn(channels, eps, momentum):
    return nn.BatchNorm2d(channels, eps=eps, momentum=momentum)


class ResNetBasicBlock(nn.Module):
    """mmdet's BasicBlock: conv1 (3x3, the stride), bn1, ReLU, conv2, bn2,
    the shortcut (downsample when given), ReLU."""

    def __init__(self, in_channels, channels, stride, downsample, eps,
                 momentum):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, 3, stride=stride,
                               padding=1, bias=False)
        self.bn1 = _bn(channels, eps, momentum)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = _bn(channels, eps, momentum)
        # a residual branch that starts at zero: the block is the identity
        # at initialisation, which lets a network trained from scratch
        # (nothing pretrained can be downloaded here) start deep
        nn.init.zeros_(self.bn2.weight)
        if downsample is not None:
            self.downsample = downsample

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        shortcut = self.downsample(x) if hasattr(self, "downsample") else x
        return torch.relu(out + shortcut)


class ResNet(nn.Module):
    """mmdet's ResNet (style pytorch, BasicBlock: depth 18 or 34), the
    outputs of the stages in @out_indices."""

    LAYERS = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3)}

    def __init__(self, depth, out_indices, base_channels=64,
                 stem_channels=None, eps=1e-5, momentum=0.1):
        super().__init__()
        if depth not in self.LAYERS:
            raise ValueError("ResNet depth %d: 18 or 34 (BasicBlock)"
                             % depth)
        stem_channels = stem_channels or base_channels
        self.out_indices = tuple(out_indices)
        self.conv1 = nn.Conv2d(3, stem_channels, 7, stride=2, padding=3,
                               bias=False)
        self.bn1 = _bn(stem_channels, eps, momentum)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        in_channels = stem_channels
        self.stage_channels = []
        for stage, blocks in enumerate(self.LAYERS[depth]):
            channels = base_channels * 2 ** stage
            stride = 1 if stage == 0 else 2
            layer = []
            for block in range(blocks):
                downsample = None
                if block == 0 and (stride != 1 or in_channels != channels):
                    downsample = nn.Sequential(
                        nn.Conv2d(in_channels, channels, 1, stride=stride,
                                  bias=False), _bn(channels, eps, momentum))
                layer.append(ResNetBasicBlock(in_channels, channels,
                                              stride if block == 0 else 1,
                                              downsample, eps, momentum))
                in_channels = channels
            setattr(self, "layer%d" % (stage + 1), nn.Sequential(*layer))
            self.stage_channels.append(channels)

    def forward(self, x):
        x = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
        outs = []
        for stage in range(4):
            x = getattr(self, "layer%d" % (stage + 1))(x)
            if stage in self.out_indices:
                outs.append(x)
            if stage >= max(self.out_indices):
                break
        return outs


class ConvBias(nn.Module):
    """mmcv's ConvModule without norm and activation (FPNForBEVDet's
    default): one conv with a bias, named .conv."""

    def __init__(self, in_channels, out_channels, kernel):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel,
                              padding=kernel // 2, bias=True)

    def forward(self, x):
        return self.conv(x)


class FPNForBEVDet(nn.Module):
    """BEVDet's FPNForBEVDet with out_ids [0], no norm, no activation: a
    1x1 lateral conv per input, the deeper one upsampled (nearest) to the
    size of the first and added to it, then a 3x3 conv."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lateral_convs = nn.ModuleList(
            [ConvBias(c, out_channels, 1) for c in in_channels])
        self.fpn_convs = nn.ModuleList([ConvBias(out_channels, out_channels,
                                                 3)])

    def forward(self, inputs):
        laterals = [conv(x) for conv, x in zip(self.lateral_convs, inputs)]
        for i in range(len(laterals) - 1, 0, -1):
            laterals[i - 1] = laterals[i - 1] + nn.functional.interpolate(
                laterals[i], size=laterals[i - 1].shape[2:], mode="nearest")
        return self.fpn_convs[0](laterals[0])


class ViewTransformerLiftSplatShoot(nn.Module):
    """BEVDet's LSS view transformer: one 1x1 conv gives D depth logits and
    C context channels; softmax over the depth, then the pooling.  dx, bx,
    nx and frustum are BEVDet's (its grid, kept in the state_dict as
    BEVDet keeps them); the pooling uses bevpool's geometry."""

    def __init__(self, in_channels, grid, numc_trans, cameras):
        super().__init__()
        bounds = grid.bounds
        self.dx = nn.Parameter(torch.tensor([b[2] for b in bounds]),
                               requires_grad=False)
        self.bx = nn.Parameter(torch.tensor([b[0] + b[2] / 2.0
                                             for b in bounds]),
                               requires_grad=False)
        self.nx = nn.Parameter(torch.tensor([(b[1] - b[0]) / b[2]
                                             for b in bounds]),
                               requires_grad=False)
        image_w, image_h = grid.image_size
        feat_w, feat_h = grid.feature_size
        ds = torch.arange(*grid.dbound, dtype=torch.float).view(-1, 1, 1) \
            .expand(-1, feat_h, feat_w)
        depth = ds.shape[0]
        xs = torch.linspace(0, image_w - 1, feat_w, dtype=torch.float) \
            .view(1, 1, feat_w).expand(depth, feat_h, feat_w)
        ys = torch.linspace(0, image_h - 1, feat_h, dtype=torch.float) \
            .view(1, feat_h, 1).expand(depth, feat_h, feat_w)
        self.frustum = nn.Parameter(torch.stack((xs, ys, ds), -1),
                                    requires_grad=False)
        if depth != grid.depth_bins:
            raise ValueError("dbound %s: BEVDet's arange gives %d bins, "
                             "bevpool's ceil %d" % (grid.dbound, depth,
                                                    grid.depth_bins))
        self.D = depth
        self.numC_Trans = numc_trans
        self.depthnet = nn.Conv2d(in_channels, depth + numc_trans, 1)
        self.pool = lss_pool.Pool(lss_pool.Geometry(cameras, grid))

    def forward(self, x, batch):
        """x [B x N][C_in][H][W] -> BEV [B][C][ny][nx] and the depth
        logits [B x N][D][H][W]."""
        x = self.depthnet(x)
        logits = x[:, :self.D]
        depth = logits.float().softmax(dim=1)
        features = x[:, self.D:self.D + self.numC_Trans]
        n = x.shape[0] // batch
        depth = depth.view(batch, n, *depth.shape[1:])
        features = features.permute(0, 2, 3, 1).reshape(
            batch, n, x.shape[2], x.shape[3], self.numC_Trans)
        return self.pool(depth, features), logits


class ResNetForBEVDet(nn.Module):
    """BEVDet's BEV encoder backbone with BasicBlocks: per stage a block of
    the stage's stride whose shortcut is a 3x3 conv with a bias (named
    downsample), then plain blocks; the output of every stage."""

    def __init__(self, numc_input, num_layer, stride, num_channels=None,
                 eps=1e-5, momentum=0.1):
        super().__init__()
        channels = num_channels or [numc_input * 2 ** (i + 1)
                                    for i in range(len(num_layer))]
        layers = []
        current = numc_input
        for count, out, step in zip(num_layer, channels, stride):
            blocks = [ResNetBasicBlock(
                current, out, step,
                nn.Conv2d(current, out, 3, stride=step, padding=1), eps,
                momentum)]
            current = out
            blocks += [ResNetBasicBlock(current, current, 1, None, eps,
                                        momentum)
                       for _ in range(count - 1)]
            layers.append(nn.Sequential(*blocks))
        self.layers = nn.Sequential(*layers)
        self.channels = channels

    def forward(self, x):
        feats = []
        for layer in self.layers:
            x = layer(x)
            feats.append(x)
        return feats


class FPN_LSS(nn.Module):
    """BEVDet's FPN_LSS (input_feature_index (0, 2), extra_upsample 2):
    the deepest map upsampled (bilinear, align_corners) by scale_factor and
    concatenated behind the first, two 3x3 conv-BN-ReLU, then a 2x
    bilinear upsampling, a 3x3 conv-BN-ReLU and a 1x1 conv with a bias."""

    def __init__(self, in_channels, out_channels, scale_factor=4,
                 eps=1e-5, momentum=0.1):
        super().__init__()
        self.scale_factor = scale_factor
        mid = out_channels * 2
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, mid, 3, padding=1, bias=False),
            _bn(mid, eps, momentum), nn.ReLU(inplace=True),
            nn.Conv2d(mid, mid, 3, padding=1, bias=False),
            _bn(mid, eps, momentum), nn.ReLU(inplace=True))
        self.up2 = nn.Sequential(
            nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True),
            nn.Conv2d(mid, out_channels, 3, padding=1, bias=False),
            _bn(out_channels, eps, momentum), nn.ReLU(inplace=True),
            nn.Conv2d(out_channels, out_channels, 1))

    def forward(self, feats):
        x2, x1 = feats[0], feats[2]
        x1 = nn.functional.interpolate(x1, scale_factor=self.scale_factor,
                                       mode="bilinear", align_corners=True)
        return self.up2(self.conv(torch.cat([x2, x1], dim=1)))


def grid_of(config):
    """The lss_pool grid of a model config."""
    grid = config["grid_config"]
    height, width = config["data_config"]["input_size"]
    downsample = config["img_view_transformer"]["downsample"]
    return lss_pool.BevGrid(grid["xbound"], grid["ybound"], grid["zbound"],
                            grid["dbound"], (width, height),
                            (width // downsample, height // downsample))


class BEVDet(nn.Module):
    """The whole network from normalised images [B][N][3][H][W] to the
    head's maps (and the depth logits, for the depth loss)."""

    def __init__(self, config, cameras, bn_momentum=0.1):
        super().__init__()
        self.config = config
        backbone = config["img_backbone"]
        neck = config["img_neck"]
        transform = config["img_view_transformer"]
        bev_backbone = config["img_bev_encoder_backbone"]
        bev_neck = config["img_bev_encoder_neck"]
        self.grid = grid_of(config)
        if len(cameras) != config["data_config"]["Ncams"]:
            raise ValueError("the calibration has %d cameras, the config %d"
                             % (len(cameras),
                                config["data_config"]["Ncams"]))
        self.img_backbone = ResNet(
            backbone["depth"], backbone["out_indices"],
            backbone.get("base_channels", 64),
            backbone.get("stem_channels"), backbone.get("bn_eps", 1e-5),
            bn_momentum)
        in_channels = [self.img_backbone.stage_channels[i]
                       for i in backbone["out_indices"]]
        if in_channels != neck["in_channels"]:
            raise ValueError("img_neck.in_channels %s, the backbone gives %s"
                             % (neck["in_channels"], in_channels))
        self.img_neck = FPNForBEVDet(neck["in_channels"],
                                     neck["out_channels"])
        numc = transform["numC_Trans"]
        self.img_view_transformer = ViewTransformerLiftSplatShoot(
            neck["out_channels"], self.grid, numc, cameras)
        if bev_backbone["numC_input"] != numc * self.grid.n[2]:
            raise ValueError("img_bev_encoder_backbone.numC_input %d, the "
                             "pooling gives %d channels" % (
                                 bev_backbone["numC_input"],
                                 numc * self.grid.n[2]))
        self.img_bev_encoder_backbone = ResNetForBEVDet(
            bev_backbone["numC_input"], bev_backbone["num_layer"],
            bev_backbone["stride"], bev_backbone.get("num_channels"),
            bev_backbone.get("bn_eps", 1e-5), bn_momentum)
        channels = self.img_bev_encoder_backbone.channels
        if bev_neck["in_channels"] != channels[0] + channels[2]:
            raise ValueError("img_bev_encoder_neck.in_channels %d, the BEV "
                             "backbone gives %d" % (bev_neck["in_channels"],
                                                    channels[0]
                                                    + channels[2]))
        self.img_bev_encoder_neck = FPN_LSS(
            bev_neck["in_channels"], bev_neck["out_channels"],
            bev_neck.get("scale_factor", 4), bev_neck.get("bn_eps", 1e-5),
            bn_momentum)
        head = dict(config["head"], bn_momentum=bn_momentum)
        self.pts_bbox_head = centerpoint_model.CenterHead(
            bev_neck["out_channels"], head)

    def forward(self, images):
        batch, cameras = images.shape[:2]
        x = images.reshape(batch * cameras, *images.shape[2:])
        x = self.img_neck(self.img_backbone(x))
        bev, depth_logits = self.img_view_transformer(x, batch)
        x = self.img_bev_encoder_neck(self.img_bev_encoder_backbone(bev))
        return self.pts_bbox_head(x), depth_logits
