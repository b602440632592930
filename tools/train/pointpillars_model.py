"""PointPillars with an anchor head in plain PyTorch, with OpenPCDet's
state_dict names, for training on the features that pillarize.py (= our
voxelize ! pillarfeat) computes: what train_pointpillars.py trains and
tools/convert_openpcdet_pointpillars.py converts.

The modules and their names are those of OpenPCDet's PointPillar (PillarVFE
with one PFN layer, PointPillarScatter, BaseBEVBackbone, AnchorHeadSingle):

  vfe.pfn_layers.0.linear.weight, .norm.*
  backbone_2d.blocks.{i}.{1 + 3k}.weight, .{2 + 3k}.* (0 is the ZeroPad2d)
  backbone_2d.deblocks.{i}.0.weight, .1.*
  dense_head.conv_cls, .conv_box, .conv_dir_cls (.weight, .bias)

and so are the head's rules: AnchorGenerator's anchors, the
AxisAlignedTargetAssigner (nearest-BEV IoU per class, the best anchor of
each object forced positive), the ResidualCoder, the direction target, and
AnchorHeadTemplate's losses (sigmoid focal, smooth L1 with the yaw as a
sine difference, cross entropy on the direction).  Every size comes from
the model's YAML (pointpillars.yaml) through the converter's reading of it.
The per-point features are pillarfeat's pointpillars-10 (x y z i, the
offsets from the pillar's mean and from its centre): pillarize.py's
mmdet3d-11 less its channel 4, which xyzi points leave zero.
"""

import math

import torch
from torch import nn
import torch.nn.functional as F

# mmdet3d-11 -> pointpillars-10: x y z c3 (intensity), then the offsets
POINTPILLARS_10 = [0, 1, 2, 3, 5, 6, 7, 8, 9, 10]


class PFNLayer(nn.Module):
    def __init__(self, in_channels, out_channels, momentum):
        super().__init__()
        self.linear = nn.Linear(in_channels, out_channels, bias=False)
        self.norm = nn.BatchNorm1d(out_channels, eps=1e-3, momentum=momentum)

    def forward(self, x):
        x = self.linear(x)
        x = self.norm(x.permute(0, 2, 1).contiguous()).permute(0, 2, 1)
        return torch.relu(x).max(dim=1).values


class PillarVFE(nn.Module):
    def __init__(self, in_channels, channels, momentum):
        super().__init__()
        self.pfn_layers = nn.ModuleList([PFNLayer(in_channels, channels,
                                                  momentum)])

    def forward(self, features):
        return self.pfn_layers[0](features)


class BaseBEVBackbone(nn.Module):
    def __init__(self, in_channels, backbone, neck, momentum):
        super().__init__()
        blocks, deblocks = [], []
        for s, out in enumerate(backbone["out_channels"]):
            layers = [nn.ZeroPad2d(1),
                      nn.Conv2d(in_channels, out, 3,
                                stride=backbone["layer_strides"][s],
                                padding=0, bias=False),
                      nn.BatchNorm2d(out, eps=1e-3, momentum=momentum),
                      nn.ReLU()]
            for _ in range(backbone["layer_nums"][s]):
                layers += [nn.Conv2d(out, out, 3, padding=1, bias=False),
                           nn.BatchNorm2d(out, eps=1e-3, momentum=momentum),
                           nn.ReLU()]
            blocks.append(nn.Sequential(*layers))
            stride, up = neck["upsample_strides"][s], neck["out_channels"][s]
            if stride >= 1 and not (stride == 1 and
                                    neck["use_conv_for_no_stride"]):
                k = int(round(stride))
                conv = nn.ConvTranspose2d(out, up, k, stride=k, bias=False)
            else:
                k = int(round(1 / stride))
                conv = nn.Conv2d(out, up, k, stride=k, bias=False)
            deblocks.append(nn.Sequential(
                conv, nn.BatchNorm2d(up, eps=1e-3, momentum=momentum),
                nn.ReLU()))
            in_channels = out
        self.blocks = nn.ModuleList(blocks)
        self.deblocks = nn.ModuleList(deblocks)

    def forward(self, x):
        ups = []
        for block, deblock in zip(self.blocks, self.deblocks):
            x = block(x)
            ups.append(deblock(x))
        return torch.cat(ups, dim=1)


class AnchorHeadSingle(nn.Module):
    def __init__(self, in_channels, anchors, classes, dir_bins):
        super().__init__()
        self.conv_cls = nn.Conv2d(in_channels, anchors * classes, 1)
        self.conv_box = nn.Conv2d(in_channels, anchors * 7, 1)
        self.conv_dir_cls = nn.Conv2d(in_channels, anchors * dir_bins, 1)
        # OpenPCDet's init: a prior of 0.01, small deltas
        nn.init.constant_(self.conv_cls.bias, -math.log((1 - 0.01) / 0.01))
        nn.init.normal_(self.conv_box.weight, mean=0, std=0.001)

    def forward(self, x):
        return self.conv_cls(x), self.conv_box(x), self.conv_dir_cls(x)


class PointPillar(nn.Module):
    """From pillar features to the head's maps, for @doc (the converter's
    document of pointpillars.yaml)."""

    def __init__(self, doc, momentum=0.1):
        super().__init__()
        self.doc = doc
        self.grid = doc["grid"]
        pfn = doc["pfn"]["channels"][0]
        anchors = sum(len(s["sizes"]) * len(s["rotations"])
                      for s in doc["head"]["anchors"])
        self.vfe = PillarVFE(len(POINTPILLARS_10), pfn, momentum)
        self.backbone_2d = BaseBEVBackbone(pfn, doc["backbone"], doc["neck"],
                                           momentum)
        self.dense_head = AnchorHeadSingle(
            sum(doc["neck"]["out_channels"]), anchors,
            len(doc["head"]["class_names"]), doc["head"]["direction"]["bins"])

    def scatter(self, vectors, coords, batch_size):
        nx, ny = self.grid[0], self.grid[1]
        canvas = vectors.new_zeros((batch_size, ny * nx, vectors.shape[1]))
        canvas[coords[:, 0], coords[:, 2] * nx + coords[:, 3]] = vectors
        return canvas.view(batch_size, ny, nx, -1).permute(0, 3, 1, 2)

    def forward(self, features, coords, batch_size):
        vectors = self.vfe(features[:, :, POINTPILLARS_10])
        canvas = self.scatter(vectors, coords, batch_size)
        return self.dense_head(self.backbone_2d(canvas))


# Anchors, targets, losses (OpenPCDet's) --------------------------------------

def generate_anchors(cfg, device):
    """AnchorGenerator: per class [H][W][rotations][7] (z the centre), and
    all of them in the head's order [H W A][7]."""
    pcr = cfg["DATA_CONFIG"]["POINT_CLOUD_RANGE"]
    voxel = [p for p in cfg["DATA_CONFIG"]["DATA_PROCESSOR"]
             if p["NAME"] == "transform_points_to_voxels"][0]["VOXEL_SIZE"]
    grid = [int(round((pcr[i + 3] - pcr[i]) / voxel[i])) for i in range(2)]
    per_class = []
    for g in cfg["MODEL"]["DENSE_HEAD"]["ANCHOR_GENERATOR_CONFIG"]:
        nx = grid[0] // g["feature_map_stride"]
        ny = grid[1] // g["feature_map_stride"]
        if g.get("align_center", False):
            x_step, y_step = (pcr[3] - pcr[0]) / nx, (pcr[4] - pcr[1]) / ny
            x_off, y_off = x_step / 2, y_step / 2
        else:
            x_step = (pcr[3] - pcr[0]) / (nx - 1)
            y_step = (pcr[4] - pcr[1]) / (ny - 1)
            x_off = y_off = 0
        xs = torch.arange(pcr[0] + x_off, pcr[3] + 1e-5, step=x_step,
                          dtype=torch.float32, device=device)
        ys = torch.arange(pcr[1] + y_off, pcr[4] + 1e-5, step=y_step,
                          dtype=torch.float32, device=device)
        sizes = xs.new_tensor(g["anchor_sizes"])
        rotations = xs.new_tensor(g["anchor_rotations"])
        Y, X = torch.meshgrid(ys, xs, indexing="ij")
        shape = [ny, nx, len(sizes), len(rotations)]
        a = torch.cat([
            X[:, :, None, None, None].expand(*shape, 1),
            Y[:, :, None, None, None].expand(*shape, 1),
            xs.new_full(shape + [1], g["anchor_bottom_heights"][0]),
            sizes[None, None, :, None, :].expand(*shape, 3),
            rotations[None, None, None, :, None].expand(*shape, 1)], dim=-1)
        a[..., 2] += a[..., 5] / 2
        per_class.append(a.reshape(ny, nx, -1, 7))
    return per_class, torch.cat(per_class, dim=2).reshape(-1, 7)


def limit_period(val, offset, period):
    return val - torch.floor(val / period + offset) * period


def nearest_bev(boxes):
    """Axis-aligned [x1 y1 x2 y2] of boxes turned to the nearest multiple
    of pi/2, as OpenPCDet's boxes_iou_nearest_bev."""
    rot = limit_period(boxes[..., 6], 0.5, math.pi).abs()
    swap = rot > math.pi / 4
    dx = torch.where(swap, boxes[..., 4], boxes[..., 3])
    dy = torch.where(swap, boxes[..., 3], boxes[..., 4])
    return torch.stack([boxes[..., 0] - dx / 2, boxes[..., 1] - dy / 2,
                        boxes[..., 0] + dx / 2, boxes[..., 1] + dy / 2], -1)


def aligned_iou(a, b):
    """a [N][4], b [B][M][4] -> [B][N][M]."""
    lt = torch.maximum(a[None, :, None, :2], b[:, None, :, :2])
    rb = torch.minimum(a[None, :, None, 2:], b[:, None, :, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])
    return inter / (area_a[None, :, None] + area_b[:, None, :] - inter)\
        .clamp(min=1e-6)


def encode(boxes, anchors):
    """ResidualCoder.encode_torch."""
    anchors = anchors.clone()
    boxes = boxes.clone()
    anchors[..., 3:6] = anchors[..., 3:6].clamp(min=1e-5)
    boxes[..., 3:6] = boxes[..., 3:6].clamp(min=1e-5)
    diagonal = torch.sqrt(anchors[..., 3] ** 2 + anchors[..., 4] ** 2)
    return torch.stack([
        (boxes[..., 0] - anchors[..., 0]) / diagonal,
        (boxes[..., 1] - anchors[..., 1]) / diagonal,
        (boxes[..., 2] - anchors[..., 2]) / anchors[..., 5],
        torch.log(boxes[..., 3] / anchors[..., 3]),
        torch.log(boxes[..., 4] / anchors[..., 4]),
        torch.log(boxes[..., 5] / anchors[..., 5]),
        boxes[..., 6] - anchors[..., 6]], dim=-1)


def decode(deltas, anchors):
    """ResidualCoder.decode_torch."""
    diagonal = torch.sqrt(anchors[..., 3] ** 2 + anchors[..., 4] ** 2)
    return torch.stack([
        deltas[..., 0] * diagonal + anchors[..., 0],
        deltas[..., 1] * diagonal + anchors[..., 1],
        deltas[..., 2] * anchors[..., 5] + anchors[..., 2],
        torch.exp(deltas[..., 3]) * anchors[..., 3],
        torch.exp(deltas[..., 4]) * anchors[..., 4],
        torch.exp(deltas[..., 5]) * anchors[..., 5],
        deltas[..., 6] + anchors[..., 6]], dim=-1)


class Targets:
    """AxisAlignedTargetAssigner over a batch: per class, the anchors of the
    class against the objects of the class (nearest-BEV IoU); an anchor is
    positive at IoU >= matched_threshold, or when it is an object's best
    anchor; negative below unmatched_threshold; ignored between."""

    def __init__(self, cfg, device):
        self.cfg = cfg
        self.per_class, self.anchors = generate_anchors(cfg, device)
        self.generators = cfg["MODEL"]["DENSE_HEAD"]["ANCHOR_GENERATOR_CONFIG"]
        self.classes = len(self.generators)
        self.height, self.width = self.per_class[0].shape[:2]
        self.bev = [nearest_bev(a.reshape(-1, 7)) for a in self.per_class]

    def build(self, boxes, frame, batch):
        """labels [B][N] (-1 ignored, 0 background, 1 + class), box
        targets [B][N][7], for objects @boxes [M][8] (label last) of
        frames @frame [M]."""
        device = boxes.device
        labels, targets = [], []
        for c, anchors in enumerate(self.per_class):
            g = self.generators[c]
            flat = anchors.reshape(-1, 7)
            n = flat.shape[0]
            mine = boxes[:, 7].long() == c
            objects, owner = boxes[mine], frame[mine]
            count = torch.bincount(owner, minlength=batch)
            m = max(int(count.max()) if len(count) else 0, 1)
            padded = boxes.new_zeros((batch, m, 7))
            valid = torch.zeros((batch, m), dtype=torch.bool, device=device)
            slot = torch.zeros_like(owner)
            if len(owner):
                order = torch.argsort(owner, stable=True)
                start = torch.cumsum(count, 0) - count
                slot[order] = torch.arange(len(owner), device=device) - \
                    start[owner[order]]
                padded[owner, slot] = objects[:, :7]
                valid[owner, slot] = True
            iou = aligned_iou(self.bev[c], nearest_bev(padded))  # [B][N][M]
            iou = torch.where(valid[:, None, :], iou, torch.full_like(iou,
                                                                      -1.0))
            best, best_object = iou.max(dim=2)  # per anchor
            label = torch.full((batch, n), -1, dtype=torch.long,
                               device=device)
            label[best < g["unmatched_threshold"]] = 0
            label[best >= g["matched_threshold"]] = c + 1
            # each object's best anchors, when they overlap it at all
            per_object = iou.max(dim=1).values  # [B][M]
            forced = (iou == per_object[:, None, :]) & \
                (per_object[:, None, :] > 0) & valid[:, None, :]
            label[forced.any(dim=2)] = c + 1
            # the box target is the anchor's best object, forced or not
            matched = torch.gather(padded, 1, best_object[..., None].expand(
                batch, n, 7))
            targets.append(encode(matched, flat[None].expand(batch, n, 7))
                           .reshape(batch, self.height, self.width, -1, 7))
            labels.append(label.reshape(batch, self.height, self.width, -1))
        # the head's order: location, then class, then rotation
        return (torch.cat(labels, dim=3).reshape(batch, -1),
                torch.cat(targets, dim=3).reshape(batch, -1, 7))


def losses(outputs, labels, targets, anchors, cfg):
    """AnchorHeadTemplate.get_loss: (classification, box, direction)."""
    head = cfg["MODEL"]["DENSE_HEAD"]
    weights = head["LOSS_CONFIG"]["LOSS_WEIGHTS"]
    cls, box, direction = outputs
    batch = cls.shape[0]
    classes = len(head["ANCHOR_GENERATOR_CONFIG"])
    bins = head["NUM_DIR_BINS"]
    cls = cls.float().permute(0, 2, 3, 1).reshape(batch, -1, classes)
    box = box.float().permute(0, 2, 3, 1).reshape(batch, -1, 7)
    direction = direction.float().permute(0, 2, 3, 1).reshape(batch, -1, bins)

    positives = labels > 0
    cared = labels >= 0
    normalizer = positives.sum(1, keepdim=True).float().clamp(min=1.0)
    cls_weights = cared.float() / normalizer
    one_hot = F.one_hot(labels.clamp(min=0), classes + 1)[..., 1:].float()
    p = torch.sigmoid(cls)
    alpha = 0.25 * one_hot + 0.75 * (1 - one_hot)
    pt = one_hot * (1 - p) + (1 - one_hot) * p
    focal = alpha * pt.pow(2) * F.binary_cross_entropy_with_logits(
        cls, one_hot, reduction="none")
    loss_cls = (focal.sum(-1) * cls_weights).sum() / batch

    reg_weights = positives.float() / normalizer
    # the yaw as a sine difference
    sin_pred = torch.sin(box[..., 6:7]) * torch.cos(targets[..., 6:7])
    sin_target = torch.cos(box[..., 6:7]) * torch.sin(targets[..., 6:7])
    pred = torch.cat([box[..., :6], sin_pred], -1)
    target = torch.cat([targets[..., :6], sin_target], -1)
    diff = (pred - target).abs()
    beta = 1.0 / 9.0
    smooth = torch.where(diff < beta, 0.5 * diff ** 2 / beta,
                         diff - 0.5 * beta)
    loss_box = (smooth.sum(-1) * reg_weights).sum() / batch * \
        weights["loc_weight"]

    rot = targets[..., 6] + anchors[None, :, 6]
    offset = limit_period(rot - head["DIR_OFFSET"], 0, 2 * math.pi)
    dir_target = torch.floor(offset / (2 * math.pi / bins)).long() \
        .clamp(0, bins - 1)
    ce = F.cross_entropy(direction.reshape(-1, bins), dir_target.reshape(-1),
                         reduction="none").reshape(batch, -1)
    loss_dir = (ce * reg_weights).sum() / batch * weights["dir_weight"]
    return loss_cls * weights["cls_weight"], loss_box, loss_dir


# Decode and NMS (OpenPCDet's generate_predicted_boxes, post_processing) -----

def predicted_boxes(outputs, anchors, cfg):
    """Boxes [B][N][7] with the direction applied, scores [B][N][C]."""
    head = cfg["MODEL"]["DENSE_HEAD"]
    cls, box, direction = outputs
    batch = cls.shape[0]
    classes = len(head["ANCHOR_GENERATOR_CONFIG"])
    bins = head["NUM_DIR_BINS"]
    cls = cls.float().permute(0, 2, 3, 1).reshape(batch, -1, classes)
    box = box.float().permute(0, 2, 3, 1).reshape(batch, -1, 7)
    direction = direction.float().permute(0, 2, 3, 1).reshape(batch, -1, bins)
    boxes = decode(box, anchors[None])
    period = 2 * math.pi / bins
    rot = limit_period(boxes[..., 6] - head["DIR_OFFSET"],
                       head["DIR_LIMIT_OFFSET"], period)
    boxes[..., 6] = rot + head["DIR_OFFSET"] + \
        period * direction.argmax(-1).float()
    return boxes, torch.sigmoid(cls)
