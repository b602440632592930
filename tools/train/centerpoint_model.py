"""CenterPoint on pillars in plain PyTorch, with mmdetection3d's state_dict
names, for training on the features that pillarize.py (= our voxelize !
pillarfeat) computes.

The modules and their names are those of mmdetection3d's PillarFeatureNet
(legacy=False, one PFN layer), PointPillarsScatter, SECOND, SECONDFPN and
CenterHead with SeparateHead (docs: the network-stage contract), so the
converter reads the checkpoint as it reads one of mmdetection3d's:

  pts_voxel_encoder.pfn_layers.0.linear.weight, .norm.*
  pts_backbone.blocks.{i}.{3k}.weight, .{3k+1}.*
  pts_neck.deblocks.{i}.0.weight, .1.*
  pts_bbox_head.shared_conv.conv.weight, .bn.*
  pts_bbox_head.task_heads.{t}.{head}.0.conv.weight, .0.bn.*, .1.weight,
  .1.bias

The one difference from mmdetection3d's PillarFeatureNet is where the
per-point features come from: here they are the input (pillarfeat's
mmdet3d-11 output), there the module computes them from the raw points; the
layers after that are the same.  Every size comes from the model config,
the `p3d.model` document of the weights file (model_config.json).
"""

import torch
from torch import nn

HEAD_ORDER = ("reg", "height", "dim", "rot", "vel")


def _bn1d(channels, eps, momentum):
    return nn.BatchNorm1d(channels, eps=eps, momentum=momentum)


def _bn2d(channels, eps, momentum):
    return nn.BatchNorm2d(channels, eps=eps, momentum=momentum)


class PFNLayer(nn.Module):
    """Linear (no bias), BatchNorm1d, ReLU, max over the point slots: the
    padded slots (zero rows) take part, as in mmdetection3d."""

    def __init__(self, in_channels, out_channels, eps, momentum):
        super().__init__()
        self.linear = nn.Linear(in_channels, out_channels, bias=False)
        self.norm = _bn1d(out_channels, eps, momentum)

    def forward(self, features):
        x = self.linear(features)  # [V][P][C]
        x = self.norm(x.permute(0, 2, 1).contiguous()).permute(0, 2, 1)
        return torch.relu(x).max(dim=1).values


class PillarFeatureNet(nn.Module):
    def __init__(self, in_features, channels, eps, momentum):
        super().__init__()
        if len(channels) != 1:
            raise ValueError("one PFN layer is supported")
        self.pfn_layers = nn.ModuleList(
            [PFNLayer(in_features, channels[0], eps, momentum)])

    def forward(self, features):
        return self.pfn_layers[0](features)


class ConvModule(nn.Module):
    """mmcv's ConvModule as CenterHead builds it: conv (no bias), BN, ReLU;
    names .conv and .bn."""

    def __init__(self, in_channels, out_channels, kernel, eps, momentum):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel,
                              padding=kernel // 2, bias=False)
        self.bn = _bn2d(out_channels, eps, momentum)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


class Second(nn.Module):
    def __init__(self, in_channels, out_channels, layer_nums, layer_strides,
                 eps, momentum):
        super().__init__()
        blocks = []
        previous = in_channels
        for out, layers, stride in zip(out_channels, layer_nums,
                                       layer_strides):
            block = [nn.Conv2d(previous, out, 3, stride=stride, padding=1,
                               bias=False),
                     _bn2d(out, eps, momentum), nn.ReLU(inplace=True)]
            for _ in range(layers):
                block += [nn.Conv2d(out, out, 3, padding=1, bias=False),
                          _bn2d(out, eps, momentum), nn.ReLU(inplace=True)]
            blocks.append(nn.Sequential(*block))
            previous = out
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x):
        outputs = []
        for block in self.blocks:
            x = block(x)
            outputs.append(x)
        return outputs


class SecondFPN(nn.Module):
    def __init__(self, in_channels, out_channels, upsample_strides,
                 use_conv_for_no_stride, eps, momentum):
        super().__init__()
        deblocks = []
        for cin, cout, stride in zip(in_channels, out_channels,
                                     upsample_strides):
            if stride > 1 or (stride == 1 and not use_conv_for_no_stride):
                k = int(round(stride))
                layer = nn.ConvTranspose2d(cin, cout, k, stride=k, bias=False)
            else:
                k = int(round(1 / stride))
                layer = nn.Conv2d(cin, cout, k, stride=k, bias=False)
            deblocks.append(nn.Sequential(layer, _bn2d(cout, eps, momentum),
                                          nn.ReLU(inplace=True)))
        self.deblocks = nn.ModuleList(deblocks)

    def forward(self, features):
        return torch.cat([d(f) for d, f in zip(self.deblocks, features)],
                         dim=1)


class SeparateHead(nn.Module):
    """One task: per head a ConvModule then a conv with bias.  Heads are
    attributes named as in mmdetection3d (reg, height, dim, rot, vel,
    heatmap), created in that order."""

    def __init__(self, in_channels, head_conv, final_kernel, heads, eps,
                 momentum, heatmap_bias=-2.19):
        super().__init__()
        self.head_names = list(heads)
        for name in self.head_names:
            head = nn.Sequential(
                ConvModule(in_channels, head_conv, final_kernel, eps,
                           momentum),
                nn.Conv2d(head_conv, heads[name], final_kernel,
                          padding=final_kernel // 2, bias=True))
            if name == "heatmap":
                nn.init.constant_(head[1].bias, heatmap_bias)
            setattr(self, name, head)

    def forward(self, x):
        return {name: getattr(self, name)(x) for name in self.head_names}


class CenterHead(nn.Module):
    def __init__(self, in_channels, head_cfg):
        super().__init__()
        eps, momentum = head_cfg["bn_eps"], head_cfg.get("bn_momentum", 0.1)
        share = head_cfg["share_conv_channel"]
        self.shared_conv = ConvModule(in_channels, share, 3, eps, momentum)
        common = head_cfg["common_heads"]
        tasks = []
        for task in head_cfg["tasks"]:
            heads = {name: int(common[name]) for name in HEAD_ORDER
                     if name in common}
            heads["heatmap"] = len(task["class_names"])
            tasks.append(SeparateHead(share, head_cfg["head_conv"],
                                      head_cfg["final_kernel"], heads, eps,
                                      momentum))
        self.task_heads = nn.ModuleList(tasks)

    def forward(self, x):
        x = self.shared_conv(x)
        return [task(x) for task in self.task_heads]


class CenterPointPillar(nn.Module):
    """The whole network from pillar features to the head's maps."""

    def __init__(self, config, bn_momentum=0.1):
        super().__init__()
        self.config = config
        pfn = config["pfn"]
        backbone = config["backbone"]
        neck = config["neck"]
        head = dict(config["head"], bn_momentum=bn_momentum)
        self.grid = config["grid"]
        self.pts_voxel_encoder = PillarFeatureNet(
            11, pfn["channels"], pfn["bn_eps"], bn_momentum)
        self.pts_backbone = Second(
            pfn["channels"][-1], backbone["out_channels"],
            backbone["layer_nums"], backbone["layer_strides"],
            backbone["bn_eps"], bn_momentum)
        self.pts_neck = SecondFPN(
            backbone["out_channels"], neck["out_channels"],
            neck["upsample_strides"], neck["use_conv_for_no_stride"],
            neck["bn_eps"], bn_momentum)
        self.pts_bbox_head = CenterHead(sum(neck["out_channels"]), head)

    def scatter(self, pillar_vectors, coords, batch_size):
        """PointPillarsScatter: [B][C][ny][nx], zero where no pillar;
        coords are (frame, z, y, x)."""
        nx, ny = self.grid[0], self.grid[1]
        channels = pillar_vectors.shape[1]
        canvas = pillar_vectors.new_zeros((batch_size, ny * nx, channels))
        canvas[coords[:, 0], coords[:, 2] * nx + coords[:, 3]] = \
            pillar_vectors
        return canvas.view(batch_size, ny, nx, channels).permute(0, 3, 1, 2)

    def forward(self, features, coords, batch_size):
        vectors = self.pts_voxel_encoder(features)
        x = self.scatter(vectors, coords, batch_size)
        x = self.pts_neck(self.pts_backbone(x))
        return self.pts_bbox_head(x)
