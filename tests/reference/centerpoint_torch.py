#!/usr/bin/env python3
"""CenterPoint-pillar in plain PyTorch (no mmdetection3d), with mmdetection3d's
state_dict names: the reference the network stage (pillarencode, bevdetect)
is compared with.  Needs torch (any 1.13+ or 2.x) and numpy; runs on the GPU
machine or on the CPU.

Commands:

  self-test [--device cuda]
      Checks this script against hand-worked cases: BatchNorm folding (the
      rule the C library uses) against the unfolded modules, the safetensors
      round trip through tools/convert_mmdet3d_centerpoint.py, the decode of
      a hand-placed centre, circle NMS and rotated IoU on known boxes, and
      the pillar-features file reader.  Exit 0 when all pass.

  init -o CKPT.pth [--weights MODEL.safetensors] [--calibrate PILLARS.bin]
       [--config VALUES.json] [--set KEY=JSON ...] [--seed 0]
       [--hit-rate 0.006] [--device cuda]
      Random weights that behave like trained ones: BatchNorm statistics
      measured on an input (the pillars of --calibrate, a pillarfeat output
      file, else synthetic pillars) and then perturbed, random affine
      parameters, regression heads scaled to plausible boxes, and each
      heatmap class's bias set so that about --hit-rate of its cells (0.2x
      to 2x of it, per class) score above the coder's threshold on the
      calibration input.  Saves an mmdetection3d-style checkpoint
      {'state_dict', 'meta'} and, with --weights, converts it with the
      project's converter.

  run --weights MODEL.safetensors (--pillars PILLARS.bin | --bev BEV.bin)
      [--frame 0] [--max-voxels N] [--half] [--device cuda] -o OUTDIR
      Runs the network on one frame: --pillars reads the record of
      application/x-pillar-features that filesink wrote after pillarfeat
      (docs/media-types.md; F32 or F16 told from the file size), --bev one of
      application/x-bev-features ([C][H][W], e.g. after pillarencode).
      --half runs F16 channels_last, as a deployment would.  Writes:
        OUTDIR/canvas.f32     the scattered BEV canvas [C][H][W] float32
                              (with --pillars)
        OUTDIR/heads.f32      every head output, task by task in the order
                              reg height dim rot vel heatmap, each
                              [channels][H][W] float32 (raw logits), and
        OUTDIR/heads.json     the list of (task, head, channels, offset)
        OUTDIR/decoded.jsonl  boxes after the coder, before NMS
        OUTDIR/boxes.jsonl    boxes after the model's test-time NMS
      The .jsonl files are boxenc's JSON lines (a frame line, then one line
      per box: x y z dx dy dz yaw score label; z at the box centre, labels
      over all tasks), so they compare with `boxenc ! filesink` output.

  compare --reference REF.jsonl --ours OURS.jsonl [--frame 0]
          [--center-tol 1e-3] [--size-tol 1e-3] [--yaw-tol 1e-3]
          [--score-tol 1e-4] [--list]
      Matches boxes (same label, nearest centre) and prints them side by
      side with the largest differences; exit 1 when a box is unmatched or
      a difference exceeds its tolerance (use looser ones for F16).

  compare-heads --reference OUTDIR --ours HEADS.f32 [--rtol 1e-4]
      The same for the raw head outputs (heads.f32 layout), per head.

Example on the GPU machine (paths relative to the repository):

  python3 tests/reference/centerpoint_torch.py self-test --device cuda
  python3 tests/reference/centerpoint_torch.py init -o /tmp/cp.pth \\
      --weights /tmp/cp.safetensors --calibrate /tmp/pillars.bin
  python3 tests/reference/centerpoint_torch.py run --weights /tmp/cp.safetensors \\
      --pillars /tmp/pillars.bin -o /tmp/ref
  python3 tests/reference/centerpoint_torch.py compare \\
      --reference /tmp/ref/boxes.jsonl --ours /tmp/ours.jsonl --list
"""

import argparse
import json
import math
import os
import struct
import sys
import tempfile

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import convert_mmdet3d_centerpoint as converter  # noqa: E402

HEADS = ("reg", "height", "dim", "rot", "vel", "heatmap")


# ---- the network, with mmdetection3d's module names ----------------------

class PFNLayer(nn.Module):
    """PFNLayer, last layer, max mode: linear, BN1d, ReLU, max over slots."""

    def __init__(self, in_channels, out_channels, eps):
        super().__init__()
        self.linear = nn.Linear(in_channels, out_channels, bias=False)
        self.norm = nn.BatchNorm1d(out_channels, eps=eps, momentum=0.01)

    def forward(self, x):  # [V, P, F] -> [V, C]
        x = self.linear(x)
        x = self.norm(x.permute(0, 2, 1).contiguous()).permute(0, 2, 1)
        return F.relu(x).max(dim=1).values


class PillarFeatureNet(nn.Module):
    """The learned part of PillarFeatureNet: its input is the decorated,
    masked per-point features, as pillarfeat computes them."""

    def __init__(self, in_channels, out_channels, eps):
        super().__init__()
        self.pfn_layers = nn.ModuleList(
            [PFNLayer(in_channels, out_channels, eps)])

    def forward(self, features):
        return self.pfn_layers[0](features)


class SECOND(nn.Module):
    def __init__(self, in_channels, cfg):
        super().__init__()
        blocks = []
        for out, n, stride in zip(cfg["out_channels"], cfg["layer_nums"],
                                  cfg["layer_strides"]):
            layers = [nn.Conv2d(in_channels, out, 3, stride=stride,
                                padding=1, bias=False),
                      nn.BatchNorm2d(out, eps=cfg["bn_eps"], momentum=0.01),
                      nn.ReLU(inplace=True)]
            for _ in range(n):
                layers += [nn.Conv2d(out, out, 3, padding=1, bias=False),
                           nn.BatchNorm2d(out, eps=cfg["bn_eps"],
                                          momentum=0.01),
                           nn.ReLU(inplace=True)]
            blocks.append(nn.Sequential(*layers))
            in_channels = out
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x):
        outs = []
        for block in self.blocks:
            x = block(x)
            outs.append(x)
        return outs


class SECONDFPN(nn.Module):
    def __init__(self, in_channels, cfg):
        super().__init__()
        deblocks = []
        for cin, out, stride in zip(in_channels, cfg["out_channels"],
                                    cfg["upsample_strides"]):
            transposed, k = converter.neck_kernel(
                stride, cfg.get("use_conv_for_no_stride", False))
            if transposed:
                up = nn.ConvTranspose2d(cin, out, k, stride=k, bias=False)
            else:
                up = nn.Conv2d(cin, out, k, stride=k, bias=False)
            deblocks.append(nn.Sequential(
                up, nn.BatchNorm2d(out, eps=cfg["bn_eps"], momentum=0.01),
                nn.ReLU(inplace=True)))
        self.deblocks = nn.ModuleList(deblocks)

    def forward(self, xs):
        return torch.cat([d(x) for d, x in zip(self.deblocks, xs)], dim=1)


class ConvModule(nn.Module):
    """mmcv's ConvModule as CenterHead uses it: conv (no bias), BN, ReLU."""

    def __init__(self, cin, cout, kernel, eps):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel, padding=kernel // 2,
                              bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=eps)
        self.activate = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.activate(self.bn(self.conv(x)))


class SeparateHead(nn.Module):
    def __init__(self, cin, heads, head_conv, kernel, eps):
        super().__init__()
        self.heads = heads
        for name, channels in heads.items():
            self.add_module(name, nn.Sequential(
                ConvModule(cin, head_conv, kernel, eps),
                nn.Conv2d(head_conv, channels, kernel, padding=kernel // 2,
                          bias=True)))

    def forward(self, x):
        return {name: getattr(self, name)(x) for name in self.heads}


class CenterHead(nn.Module):
    def __init__(self, cin, cfg):
        super().__init__()
        self.shared_conv = ConvModule(cin, cfg["share_conv_channel"], 3,
                                      cfg["bn_eps"])
        tasks = []
        for task in cfg["tasks"]:
            heads = {h: cfg["common_heads"][h] for h in HEADS[:5]
                     if h in cfg["common_heads"]}
            heads["heatmap"] = len(task["class_names"])
            tasks.append(SeparateHead(cfg["share_conv_channel"], heads,
                                      cfg["head_conv"], cfg["final_kernel"],
                                      cfg["bn_eps"]))
        self.task_heads = nn.ModuleList(tasks)

    def forward(self, x):
        x = self.shared_conv(x)
        return [task(x) for task in self.task_heads]


class CenterPointPillar(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        features = converter.FEATURE_CHANNELS[config["features"]]
        pfn = config["pfn"]["channels"][0]
        self.pts_voxel_encoder = PillarFeatureNet(features, pfn,
                                                  config["pfn"]["bn_eps"])
        self.pts_backbone = SECOND(pfn, config["backbone"])
        self.pts_neck = SECONDFPN(config["backbone"]["out_channels"],
                                  config["neck"])
        self.pts_bbox_head = CenterHead(sum(config["neck"]["out_channels"]),
                                        config["head"])

    def scatter(self, pillar_features, coords):
        """PointPillarsScatter: canvas [C][ny][nx]; coords (b, z, y, x);
        coordinates outside the grid are dropped (and counted)."""
        nx, ny = self.config["grid"][0], self.config["grid"][1]
        inside = ((coords[:, 3] >= 0) & (coords[:, 3] < nx) &
                  (coords[:, 2] >= 0) & (coords[:, 2] < ny))
        dropped = int((~inside).sum())
        canvas = pillar_features.new_zeros(pillar_features.shape[1], ny * nx)
        index = (coords[inside, 2] * nx + coords[inside, 3]).long()
        canvas[:, index] = pillar_features[inside].t()
        return canvas.view(1, -1, ny, nx), dropped

    def forward_bev(self, canvas):
        return self.pts_bbox_head(self.pts_neck(self.pts_backbone(canvas)))


def load_weights(path, device):
    """(model, config) from a weights file written by the converter."""
    metadata, tensors = converter.read_safetensors(path)
    config = json.loads(metadata[converter.METADATA_KEY])
    model = CenterPointPillar(config)
    dtypes = {"F32": np.float32, "F16": np.float16, "F64": np.float64,
              "I64": np.int64, "I32": np.int32}
    state = {}
    for name, (dtype, shape, data) in tensors.items():
        if dtype == "BF16":
            raw = np.frombuffer(data, "<u2").astype(np.uint32) << 16
            array = raw.view(np.float32)
        else:
            array = np.frombuffer(data, np.dtype(dtypes[dtype]).newbyteorder(
                "<"))
        state[name] = torch.from_numpy(array.astype(np.float32).reshape(
            shape).copy())
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if not m.endswith("num_batches_tracked")]
    if missing or unexpected:
        raise SystemExit("%s: missing %s, unexpected %s" %
                         (path, missing[:5], unexpected[:5]))
    return model.to(device).eval(), config


# ---- decode and the model's test-time NMS (mmdetection3d's rules) --------

def gather(feature, index):
    """feature [1, C, H, W] at flat cell indices [K] -> [K, C]."""
    return feature[0].reshape(feature.shape[1], -1)[:, index].t()


def decode_task(preds, config, task_id):
    """CenterPointBBoxCoder.decode for one task, batch 1: boxes [N, 7 or 9]
    (x, y, z centre, dx, dy, dz, yaw[, vx, vy]), scores [N], labels [N]
    (within the task), in the top-k order."""
    coder, head = config["coder"], config["head"]
    heat = preds["heatmap"].float().sigmoid()
    _, classes, height, width = heat.shape
    k = coder["max_num"]
    # per class top k, then top k of those: the global top k over
    # (class, cell), ties aside
    class_scores, class_index = torch.topk(heat.view(classes, -1), k)
    score, flat = torch.topk(class_scores.view(-1), k)
    label = flat // k
    cell = class_index.view(-1)[flat]
    ys = (cell // width).float()
    xs = (cell % width).float()
    reg = gather(preds["reg"].float(), cell)
    xs = xs + reg[:, 0]
    ys = ys + reg[:, 1]
    rot = gather(preds["rot"].float(), cell)
    yaw = torch.atan2(rot[:, 0], rot[:, 1])
    z = gather(preds["height"].float(), cell)[:, 0]
    dim = gather(preds["dim"].float(), cell)
    if head.get("norm_bbox", True):
        dim = torch.exp(dim)
    xs = xs * coder["out_size_factor"] * coder["voxel_size"][0] + \
        coder["pc_range"][0]
    ys = ys * coder["out_size_factor"] * coder["voxel_size"][1] + \
        coder["pc_range"][1]
    columns = [xs[:, None], ys[:, None], z[:, None], dim, yaw[:, None]]
    if "vel" in preds:
        columns.append(gather(preds["vel"].float(), cell))
    boxes = torch.cat(columns, dim=1)
    keep = score > coder["score_threshold"]
    limit = torch.tensor(coder["post_center_range"], device=boxes.device)
    keep &= (boxes[:, :3] >= limit[:3]).all(1) & \
        (boxes[:, :3] <= limit[3:]).all(1)
    return boxes[keep], score[keep], label[keep]


def rect_corners(box):
    x, y, dx, dy, yaw = box
    c, s = math.cos(yaw), math.sin(yaw)
    return [(x + c * u - s * v, y + s * u + c * v)
            for u, v in ((dx / 2, dy / 2), (-dx / 2, dy / 2),
                         (-dx / 2, -dy / 2), (dx / 2, -dy / 2))]


def clip(polygon, a, b):
    """Sutherland-Hodgman: the part of polygon left of the edge a->b."""
    def side(p):
        return (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0])
    out = []
    for i, p in enumerate(polygon):
        q = polygon[(i + 1) % len(polygon)]
        sp, sq = side(p), side(q)
        if sp >= 0:
            out.append(p)
        if (sp >= 0) != (sq >= 0):
            t = sp / (sp - sq)
            out.append((p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])))
    return out


def area(polygon):
    return 0.5 * abs(sum(p[0] * q[1] - q[0] * p[1] for p, q in
                         zip(polygon, polygon[1:] + polygon[:1])))


def bev_iou(a, b):
    """IoU of two rotated rectangles (x, y, dx, dy, yaw), in double."""
    pa, pb = rect_corners(a), rect_corners(b)
    inter = pa
    for i in range(4):
        if not inter:
            break
        inter = clip(inter, pb[i], pb[(i + 1) % 4])
    overlap = area(inter) if len(inter) >= 3 else 0.0
    union = a[2] * a[3] + b[2] * b[3] - overlap
    return overlap / union if union > 0 else 0.0


def circle_nms(boxes, scores, radius, post_max):
    """mmdetection3d's circle_nms: greedy by descending score (stable on
    ties), a box within squared distance <= radius of a kept one goes."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    suppressed = [False] * len(scores)
    keep = []
    for n, i in enumerate(order):
        if suppressed[i]:
            continue
        keep.append(i)
        for j in order[n + 1:]:
            if not suppressed[j]:
                d = (boxes[i][0] - boxes[j][0]) ** 2 + \
                    (boxes[i][1] - boxes[j][1]) ** 2
                if d <= radius:
                    suppressed[j] = True
    return keep[:post_max]


def rotate_nms(boxes, scores, threshold, pre_max, post_max):
    """nms_bev: the pre_max best, suppress IoU > threshold, post_max kept."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])[:pre_max]
    bev = [(b[0], b[1], b[3], b[4], b[6]) for b in boxes]
    keep = []
    for i in order:
        if all(bev_iou(bev[i], bev[j]) <= threshold for j in keep):
            keep.append(i)
    return keep[:post_max]


def detect(heads, config):
    """Every task decoded, its NMS applied: (decoded, kept), each a list of
    (box[7], score, global label) in task order."""
    nms = config["test_nms"]
    decoded, kept = [], []
    offset = 0
    for t, preds in enumerate(heads):
        boxes, scores, labels = decode_task(preds, config, t)
        boxes = boxes.double().cpu().tolist()
        scores = scores.double().cpu().tolist()
        labels = [int(label) + offset for label in labels.cpu().tolist()]
        rows = list(zip([b[:7] for b in boxes], scores, labels))
        decoded += rows
        if nms["type"] == "circle":
            keep = circle_nms(boxes, scores, nms["min_radius"][t],
                              nms["post_max_size"])
        else:
            # rotate: the test score threshold (>=) again, then nms_bev
            good = [i for i, s in enumerate(scores)
                    if s >= config["coder"]["score_threshold"]]
            sub = rotate_nms([boxes[i] for i in good],
                             [scores[i] for i in good], nms["nms_thr"],
                             nms["pre_max_size"], nms["post_max_size"])
            keep = [good[i] for i in sub]
        kept += [rows[i] for i in keep]
        offset += len(config["head"]["tasks"][t]["class_names"])
    return decoded, kept


# ---- files ----------------------------------------------------------------

def read_pillars(path, config, frame, max_voxels=None, max_points=None):
    """One record of application/x-pillar-features: (features [count, P,
    F] float32, coords [count, 4] int32)."""
    v = max_voxels or config["max_voxels"]
    p = max_points or config["max_points"]
    f = converter.FEATURE_CHANNELS[config["features"]]
    size = os.path.getsize(path)
    fits = [e for e in (4, 2) if size % (e * v * p * f + 16 * v + 4) == 0]
    if not fits:
        raise SystemExit("%s: %d bytes is no whole number of %d x %d x %d "
                         "pillar records (F32 or F16): give --max-voxels"
                         % (path, size, v, p, f))
    e = fits[0]
    record = e * v * p * f + 16 * v + 4
    o = frame * record
    features = np.fromfile(path, "<f4" if e == 4 else "<f2", v * p * f,
                           offset=o).reshape(v, p, f)
    coords = np.fromfile(path, "<i4", 4 * v,
                         offset=o + e * v * p * f).reshape(v, 4)
    count = int(np.fromfile(path, "<u4", 1, offset=o + e * v * p * f +
                            16 * v)[0])
    if count > v:
        raise SystemExit("%s: count %d above max-voxels %d" % (path, count, v))
    return (features[:count].astype(np.float32), coords[:count].copy(),
            "F32" if e == 4 else "F16")


def read_bev(path, config, frame):
    c = config["pfn"]["channels"][0]
    h, w = config["grid"][1], config["grid"][0]
    size = os.path.getsize(path)
    e = 4 if size % (4 * c * h * w) == 0 else 2
    data = np.fromfile(path, "<f4" if e == 4 else "<f2", c * h * w,
                       offset=frame * e * c * h * w)
    return data.astype(np.float32).reshape(1, c, h, w)


def write_jsonl(path, rows):
    with open(path, "w") as f:
        f.write(json.dumps({"frame": 0, "pts": None, "count": len(rows),
                            "type": "3d"}, separators=(",", ":")) + "\n")
        for box, score, label in rows:
            # float32 values, as our records hold them
            values = [float(np.float32(v)) for v in box] + \
                [float(np.float32(score))]
            line = dict(zip(("x", "y", "z", "dx", "dy", "dz", "yaw",
                             "score"), values))
            line["label"] = label
            f.write(json.dumps(line, separators=(",", ":")) + "\n")


def read_jsonl(path, frame):
    rows, current = [], -1
    with open(path) as f:
        for line in f:
            item = json.loads(line)
            if "frame" in item:
                current += 1
                continue
            if current == frame:
                rows.append(([float(item[k]) for k in
                              ("x", "y", "z", "dx", "dy", "dz", "yaw")],
                             float(item["score"]), int(item["label"])))
    return rows


# ---- random weights that behave like trained ones --------------------------

def synthetic_pillars(config, generator, count=6000):
    """Pillars scattered over the grid with plausible feature values."""
    nx, ny = config["grid"][0], config["grid"][1]
    p = config["max_points"]
    f = converter.FEATURE_CHANNELS[config["features"]]
    cells = torch.randperm(nx * ny, generator=generator)[:min(count,
                                                              nx * ny)]
    coords = torch.zeros(len(cells), 4, dtype=torch.int32)
    coords[:, 2] = (cells // nx).int()
    coords[:, 3] = (cells % nx).int()
    features = torch.randn(len(cells), p, f, generator=generator)
    points = torch.randint(1, p + 1, (len(cells),), generator=generator)
    mask = torch.arange(p)[None, :] < points[:, None]
    return features * mask[:, :, None], coords


@torch.no_grad()
def random_model(config, pillars, coords, seed, hit_rate, device):
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = CenterPointPillar(config)
    for module in model.modules():
        if isinstance(module, (nn.Conv2d, nn.ConvTranspose2d, nn.Linear)):
            nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
        elif isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d)):
            n = module.num_features
            sign = torch.where(torch.rand(n, generator=generator) < 0.05,
                               -1.0, 1.0)
            module.weight.copy_(sign * (0.4 + torch.rand(n,
                                                         generator=generator)))
            module.bias.copy_(0.3 * torch.randn(n, generator=generator))
    # regression heads: outputs near plausible boxes, not a size of e^5
    scale = {"reg": (0.2, 0.5), "height": (0.3, -1.0), "dim": (0.2, None),
             "rot": (1.0, 0.0), "vel": (0.3, 0.0)}
    for task in model.pts_bbox_head.task_heads:
        for name, (factor, bias) in scale.items():
            if hasattr(task, name):
                final = getattr(task, name)[1]
                final.weight.mul_(factor)
                if name == "dim":
                    final.bias.copy_(torch.log(torch.tensor(
                        [3.0, 1.5, 1.5])) + 0.3 * torch.randn(
                            3, generator=generator))
                else:
                    final.bias.fill_(bias)
    model.to(device)

    # BatchNorm statistics from one pass in train mode over the input
    # (cumulative average over one batch = its statistics), layer by layer
    for module in model.modules():
        if isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d)):
            module.reset_running_stats()
            module.momentum = None
    model.train()
    feats = model.pts_voxel_encoder(pillars.to(device))
    canvas, _ = model.scatter(feats, coords.to(device))
    model.forward_bev(canvas)
    model.eval()
    # then perturbed, so that the folding sees statistics that do not cancel
    for module in model.modules():
        if isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d)):
            n = module.num_features
            std = module.running_var.sqrt()
            module.running_mean.add_(0.2 * std * torch.randn(
                n, generator=generator).to(device))
            module.running_var.mul_(torch.exp(0.4 * (torch.rand(
                n, generator=generator) - 0.5)).to(device))
            module.momentum = 0.01

    # heatmap biases: each class gets its share of cells above threshold
    feats = model.pts_voxel_encoder(pillars.to(device))
    canvas, _ = model.scatter(feats, coords.to(device))
    heads = model.forward_bev(canvas)
    threshold = config["coder"]["score_threshold"]
    logit = math.log(threshold / (1 - threshold))
    shares = []
    for task, preds in zip(model.pts_bbox_head.task_heads, heads):
        final = task.heatmap[1]
        for c in range(final.out_channels):
            share = hit_rate * math.exp(
                math.log(10) * (torch.rand(1, generator=generator).item() - 0.5))
            raw = (preds["heatmap"][0, c] - final.bias[c]).flatten()
            cut = torch.quantile(raw.float(), 1 - share)
            final.bias[c] = logit - cut + 1e-3
            shares.append(share)
    return model, shares


# ---- commands ------------------------------------------------------------

def dump_heads(heads, config, outdir):
    table, offset = [], 0
    with open(os.path.join(outdir, "heads.f32"), "wb") as f:
        for t, preds in enumerate(heads):
            for name in HEADS:
                if name not in preds:
                    continue
                data = preds[name][0].float().cpu().contiguous().numpy()
                f.write(data.astype("<f4").tobytes())
                table.append({"task": t, "head": name,
                              "channels": int(data.shape[0]),
                              "offset": offset, "shape": list(data.shape)})
                offset += data.size
    with open(os.path.join(outdir, "heads.json"), "w") as f:
        json.dump(table, f, indent=1)


def command_run(args):
    device = torch.device(args.device)
    model, config = load_weights(args.weights, device)
    os.makedirs(args.output, exist_ok=True)
    with torch.no_grad():
        if args.pillars:
            features, coords, fmt = read_pillars(args.pillars, config,
                                                 args.frame, args.max_voxels,
                                                 args.max_points)
            feats = model.pts_voxel_encoder(torch.from_numpy(features).to(
                device))
            canvas, dropped = model.scatter(feats, torch.from_numpy(
                coords).to(device))
            canvas.float().cpu().numpy().astype("<f4").tofile(
                os.path.join(args.output, "canvas.f32"))
            print("pillars: %d (%s input), dropped outside the grid: %d" %
                  (len(features), fmt, dropped))
        else:
            canvas = torch.from_numpy(read_bev(args.bev, config,
                                               args.frame)).to(device)
        if args.half:
            model = model.half().to(memory_format=torch.channels_last)
            canvas = canvas.half().contiguous(
                memory_format=torch.channels_last)
        heads = model.forward_bev(canvas)
    dump_heads(heads, config, args.output)
    decoded, kept = detect(heads, config)
    write_jsonl(os.path.join(args.output, "decoded.jsonl"), decoded)
    write_jsonl(os.path.join(args.output, "boxes.jsonl"), kept)
    for t, preds in enumerate(heads):
        heat = preds["heatmap"].float().sigmoid()
        above = (heat > config["coder"]["score_threshold"]).sum(
            dim=(0, 2, 3)).tolist()
        print("task %d: cells above threshold per class %s of %d" %
              (t, above, heat.shape[2] * heat.shape[3]))
    print("decoded %d boxes, %d kept after %s NMS; written to %s" %
          (len(decoded), len(kept), config["test_nms"]["type"], args.output))
    return 0


def command_init(args):
    config = converter.build_config(args.config, args.set)
    generator = torch.Generator().manual_seed(args.seed + 1)
    if args.calibrate:
        features, coords, _ = read_pillars(args.calibrate, config, 0,
                                           args.max_voxels, args.max_points)
        pillars, coords = torch.from_numpy(features), torch.from_numpy(coords)
    else:
        pillars, coords = synthetic_pillars(config, generator)
    model, shares = random_model(config, pillars, coords, args.seed,
                                 args.hit_rate, torch.device(args.device))
    state = {k: v.cpu() for k, v in model.state_dict().items()}
    torch.save({"state_dict": state,
                "meta": {"p3d_config": config, "seed": args.seed,
                         "hit_rate": args.hit_rate}}, args.output)
    print("saved %s: %d tensors; heatmap shares above threshold %.4f..%.4f"
          % (args.output, len(state), min(shares), max(shares)))
    if args.weights:
        count = converter.convert(args.output, args.weights, config)
        print("converted to %s: %d tensors" % (args.weights, count))
    return 0


def command_compare(args):
    ref = read_jsonl(args.reference, args.frame)
    ours = read_jsonl(args.ours, args.frame)
    used = set()
    worst = {"center": 0.0, "z": 0.0, "size": 0.0, "yaw": 0.0, "score": 0.0}
    lines, unmatched = [], 0
    for box, score, label in sorted(ref, key=lambda r: -r[1]):
        best, best_d = None, None
        for j, (obox, _, olabel) in enumerate(ours):
            if j in used or olabel != label:
                continue
            d = math.hypot(obox[0] - box[0], obox[1] - box[1])
            if best_d is None or d < best_d:
                best, best_d = j, d
        if best is None or best_d > max(args.center_tol * 100, 0.5):
            unmatched += 1
            lines.append("%-58s | (none)" % fmt_box(box, score, label))
            continue
        used.add(best)
        obox, oscore, _ = ours[best]
        dyaw = abs(math.remainder(obox[6] - box[6], 2 * math.pi))
        worst["center"] = max(worst["center"], best_d)
        worst["z"] = max(worst["z"], abs(obox[2] - box[2]))
        worst["size"] = max(worst["size"], max(
            abs(obox[i] - box[i]) / max(1.0, abs(box[i])) for i in (3, 4, 5)))
        worst["yaw"] = max(worst["yaw"], dyaw)
        worst["score"] = max(worst["score"], abs(oscore - score))
        lines.append("%-58s | %s" % (fmt_box(box, score, label),
                                     fmt_box(obox, oscore, label)))
    extra = [r for j, r in enumerate(ours) if j not in used]
    for box, score, label in extra:
        lines.append("%-58s | %s" % ("(none)", fmt_box(box, score, label)))
    if args.list:
        print("%-58s | %s" % ("reference", "ours"))
        print("\n".join(lines))
    print("reference %d boxes, ours %d; unmatched: %d reference, %d ours" %
          (len(ref), len(ours), unmatched, len(extra)))
    print("largest differences: centre %.3g m, z %.3g m, size %.3g (rel), "
          "yaw %.3g rad, score %.3g" % (worst["center"], worst["z"],
                                        worst["size"], worst["yaw"],
                                        worst["score"]))
    ok = (unmatched == 0 and not extra and
          worst["center"] <= args.center_tol and
          worst["z"] <= args.center_tol and worst["size"] <= args.size_tol and
          worst["yaw"] <= args.yaw_tol and worst["score"] <= args.score_tol)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def fmt_box(box, score, label):
    return "%2d %.3f (%7.2f %7.2f %5.2f) %5.2fx%5.2fx%5.2f %6.3f" % (
        label, score, box[0], box[1], box[2], box[3], box[4], box[5], box[6])


def command_compare_heads(args):
    with open(os.path.join(args.reference, "heads.json")) as f:
        table = json.load(f)
    ref = np.fromfile(os.path.join(args.reference, "heads.f32"), "<f4")
    ours = np.fromfile(args.ours, "<f4")
    if ref.size != ours.size:
        print("sizes differ: reference %d floats, ours %d" % (ref.size,
                                                             ours.size))
        return 1
    ok = True
    for entry in table:
        n = int(np.prod(entry["shape"]))
        a = ref[entry["offset"]:entry["offset"] + n].astype(np.float64)
        b = ours[entry["offset"]:entry["offset"] + n].astype(np.float64)
        diff = np.abs(a - b)
        rel = float((diff / (1 + np.abs(a))).max())
        good = rel <= args.rtol
        ok &= good
        print("task %d %-8s max abs %.3g, max rel %.3g %s" %
              (entry["task"], entry["head"], float(diff.max()), rel,
               "" if good else "(over %g)" % args.rtol))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


# ---- self-test -----------------------------------------------------------

def tiny_config():
    return converter.merge(converter.DEFAULT_CONFIG, {
        "features": "mmdet3d-11", "voxel_size": [1.0, 1.0, 8],
        "point_cloud_range": [-8, -8, -5, 8, 8, 3], "grid": [16, 16, 1],
        "max_points": 6, "max_voxels": 200, "pfn": {"channels": [8]},
        "backbone": {"out_channels": [8, 12, 16], "layer_nums": [1, 2, 1],
                     "layer_strides": [2, 2, 2]},
        "neck": {"out_channels": [6, 6, 6]},
        "head": {"share_conv_channel": 10, "head_conv": 8,
                 "tasks": [{"class_names": ["car"]},
                           {"class_names": ["pedestrian", "cyclist"]}]},
        "coder": {"out_size_factor": 4, "max_num": 10,
                  "voxel_size": [1.0, 1.0], "pc_range": [-8, -8],
                  "post_center_range": [-10, -10, -10, 10, 10, 10]},
        "test_nms": {"type": "circle", "min_radius": [4, 0.5]},
    })


def fold(weight, norm, transposed=False):
    """The C library's rule, in double: W' = W * scale per output channel
    (dim 1 of a transposed conv's weight), b' = beta - mean * scale."""
    scale = norm.weight.double() / torch.sqrt(norm.running_var.double() +
                                              norm.eps)
    shape = [1, -1, 1, 1] if transposed else [-1] + [1] * (weight.dim() - 1)
    w = (weight.double() * scale.view(shape)).float()
    b = (norm.bias.double() - norm.running_mean.double() * scale).float()
    return w, b


def folded_forward(model, canvas):
    """The network with every BatchNorm folded, as the layer table runs it."""
    cfg = model.config
    x, outs = canvas, []
    for block in model.pts_backbone.blocks:
        for i in range(0, len(block), 3):
            conv, norm = block[i], block[i + 1]
            w, b = fold(conv.weight, norm)
            x = F.relu(F.conv2d(x, w, b, stride=conv.stride, padding=1))
        outs.append(x)
    ups = []
    for deblock, x in zip(model.pts_neck.deblocks, outs):
        up, norm = deblock[0], deblock[1]
        if isinstance(up, nn.ConvTranspose2d):
            w, b = fold(up.weight, norm, transposed=True)
            ups.append(F.relu(F.conv_transpose2d(x, w, b, stride=up.stride)))
        else:
            w, b = fold(up.weight, norm)
            ups.append(F.relu(F.conv2d(x, w, b, stride=up.stride)))
    x = torch.cat(ups, 1)
    shared = model.pts_bbox_head.shared_conv
    w, b = fold(shared.conv.weight, shared.bn)
    x = F.relu(F.conv2d(x, w, b, padding=1))
    k = cfg["head"]["final_kernel"]
    results = []
    for task in model.pts_bbox_head.task_heads:
        preds = {}
        for name in task.heads:
            module, final = getattr(task, name)
            w, b = fold(module.conv.weight, module.bn)
            y = F.relu(F.conv2d(x, w, b, padding=k // 2))
            preds[name] = F.conv2d(y, final.weight, final.bias,
                                   padding=k // 2)
        results.append(preds)
    return results


def check(condition, what):
    print("%s: %s" % ("ok" if condition else "FAILED", what))
    if not condition:
        check.failures += 1


check.failures = 0


@torch.no_grad()
def command_self_test(args):
    device = torch.device(args.device)
    config = tiny_config()
    converter.validate_config(config)
    generator = torch.Generator().manual_seed(7)
    pillars, coords = synthetic_pillars(config, generator, count=120)
    model, shares = random_model(config, pillars, coords, 3, 0.05, device)

    # 1. folding, against the unfolded modules
    feats = model.pts_voxel_encoder(pillars.to(device))
    canvas, dropped = model.scatter(feats, coords.to(device))
    check(dropped == 0 and int((canvas.abs().sum(1) > 0).sum()) > 0,
          "scatter places the pillars")
    heads = model.forward_bev(canvas)
    folded = folded_forward(model, canvas)
    worst = max(float(((a[h] - b[h]).abs() / (1 + a[h].abs())).max())
                for a, b in zip(heads, folded) for h in a)
    check(worst < 1e-4, "BatchNorm folded = unfolded (worst rel %.2g)" % worst)
    pfn = model.pts_voxel_encoder.pfn_layers[0]
    w, b = fold(pfn.linear.weight, pfn.norm)
    folded_pfn = F.relu(pillars.to(device) @ w.t() + b).max(dim=1).values
    check(torch.allclose(folded_pfn, feats, rtol=1e-4, atol=1e-5),
          "PFN folded = unfolded")
    # the statistics are not the identity, and some cells pass the threshold
    norm = model.pts_backbone.blocks[1][1]
    check(float(norm.running_var.std()) > 0 and
          float(norm.running_mean.abs().max()) > 1e-3,
          "random BatchNorm statistics")
    above = sum(int((p["heatmap"].sigmoid() > 0.1).sum()) for p in heads)
    check(above > 0, "%d heatmap cells above the threshold" % above)

    # 2. checkpoint -> converter -> safetensors -> this script: same heads
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "m.pth")
        weights = os.path.join(tmp, "m.safetensors")
        torch.save({"state_dict": {k: v.cpu() for k, v in
                                   model.state_dict().items()}}, ckpt)
        converter.convert(ckpt, weights, config)
        loaded, loaded_config = load_weights(weights, device)
        check(loaded_config == config, "config round trip")
        again = loaded.forward_bev(canvas)
        check(all(torch.equal(a[h], b[h]) for a, b in zip(heads, again)
                  for h in a), "weights round trip, bit for bit")
        _, tensors = converter.read_safetensors(weights)
        check(not any(n.endswith("num_batches_tracked") for n in tensors),
              "num_batches_tracked dropped")

        # 3. the pillar-features reader on a record written here (F16)
        v, p, f = config["max_voxels"], config["max_points"], 11
        features = np.zeros((v, p, f), "<f2")
        features[:3] = np.arange(3 * p * f).reshape(3, p, f) / 8
        cells = np.zeros((v, 4), "<i4")
        cells[:3] = [[0, 0, 1, 2], [0, 0, 5, 6], [0, 0, 15, 0]]
        path = os.path.join(tmp, "pillars.bin")
        with open(path, "wb") as out:
            for _ in range(2):
                out.write(features.tobytes() + cells.tobytes() +
                          struct.pack("<I", 3))
        got, got_coords, fmt = read_pillars(path, config, 1)
        check(fmt == "F16" and got.shape == (3, p, f) and
              np.array_equal(got, features[:3].astype(np.float32)) and
              np.array_equal(got_coords, cells[:3]),
              "pillar-features record read (F16, second frame)")

    # 4. decode of a hand-placed centre: task 0, cell (y 1, x 2) of 4 x 4
    h = w = 4
    preds = {"heatmap": torch.full((1, 1, h, w), -10.0),
             "reg": torch.zeros(1, 2, h, w), "height": torch.zeros(1, 1, h, w),
             "dim": torch.zeros(1, 3, h, w), "rot": torch.zeros(1, 2, h, w),
             "vel": torch.zeros(1, 2, h, w)}
    preds["heatmap"][0, 0, 1, 2] = 2.0
    preds["reg"][0, :, 1, 2] = torch.tensor([0.25, 0.5])
    preds["height"][0, 0, 1, 2] = 0.3
    preds["dim"][0, :, 1, 2] = torch.log(torch.tensor([4.0, 2.0, 1.5]))
    preds["rot"][0, :, 1, 2] = torch.tensor([1.0, 0.0])
    boxes, scores, labels = decode_task(preds, config, 0)
    # x = (2 + 0.25) * 4 * 1 - 8 = 1, y = (1 + 0.5) * 4 - 8 = -2
    expected = torch.tensor([1.0, -2.0, 0.3, 4.0, 2.0, 1.5, math.pi / 2, 0, 0])
    check(len(boxes) == 1 and torch.allclose(boxes[0], expected, atol=1e-5)
          and abs(float(scores[0]) - 1 / (1 + math.exp(-2))) < 1e-6 and
          int(labels[0]) == 0, "decode of one centre")
    preds["heatmap"][0, 0, 1, 2] = math.log(0.1 / 0.9) - 1e-4
    check(len(decode_task(preds, config, 0)[0]) == 0,
          "a score just below the threshold is dropped")
    preds["heatmap"][0, 0, 1, 2] = 3.0
    preds["rot"][0, :, 1, 2] = torch.tensor([0.0, 0.0])
    preds["reg"][0, :, 1, 2] = torch.tensor([3.0, 0.0])
    # x = (2 + 3) * 4 - 8 = 12: beyond post_center_range (10)
    check(len(decode_task(preds, config, 0)[0]) == 0,
          "a centre beyond post_center_range is dropped")

    # 5. circle NMS: squared distance <= radius suppresses
    keep = circle_nms([[0, 0], [1, 0], [1.5, 0], [5, 5]],
                      [0.9, 0.8, 0.7, 0.95], 1.0, 83)
    check(keep == [3, 0, 2], "circle NMS keeps %s" % keep)
    check(circle_nms([[0, 0], [1, 0]], [0.9, 0.8], 1.0, 1) == [0],
          "circle NMS post_max_size")

    # 6. rotated IoU on known rectangles
    check(abs(bev_iou((0, 0, 2, 2, 0), (0, 0, 2, 2, 0)) - 1) < 1e-12,
          "IoU of a box with itself")
    check(abs(bev_iou((0, 0, 2, 2, 0), (1, 0, 2, 2, 0)) - 1 / 3) < 1e-12,
          "IoU of half-overlapping squares is 1/3")
    r = bev_iou((0, 0, 2, 2, 0), (0, 0, 2, 2, math.pi / 4))
    overlap = 8 * (math.sqrt(2) - 1)
    check(abs(r - overlap / (8 - overlap)) < 1e-12,
          "IoU of a square and itself turned 45 degrees")
    check(bev_iou((0, 0, 2, 1, 0), (5, 0, 2, 1, 0.3)) == 0,
          "IoU of disjoint boxes")
    keep = rotate_nms([[0, 0, 0, 2, 2, 1, 0], [1, 0, 0, 2, 2, 1, 0],
                       [0.2, 0, 0, 2, 2, 1, 0]], [0.5, 0.9, 0.8], 0.2, 10, 10)
    check(keep == [1], "rotate NMS keeps %s" % keep)

    print("%d failures" % check.failures)
    return 1 if check.failures else 0


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("self-test")
    p.add_argument("--device", default="cpu")
    p = sub.add_parser("init")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--weights")
    p.add_argument("--calibrate")
    p.add_argument("--config")
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hit-rate", type=float, default=0.006)
    p.add_argument("--max-voxels", type=int)
    p.add_argument("--max-points", type=int)
    p.add_argument("--device", default="cpu")
    p = sub.add_parser("run")
    p.add_argument("--weights", required=True)
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--pillars")
    group.add_argument("--bev")
    p.add_argument("--frame", type=int, default=0)
    p.add_argument("--max-voxels", type=int)
    p.add_argument("--max-points", type=int)
    p.add_argument("--half", action="store_true")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available()
                   else "cpu")
    p.add_argument("-o", "--output", required=True)
    p = sub.add_parser("compare")
    p.add_argument("--reference", required=True)
    p.add_argument("--ours", required=True)
    p.add_argument("--frame", type=int, default=0)
    p.add_argument("--center-tol", type=float, default=1e-3)
    p.add_argument("--size-tol", type=float, default=1e-3)
    p.add_argument("--yaw-tol", type=float, default=1e-3)
    p.add_argument("--score-tol", type=float, default=1e-4)
    p.add_argument("--list", action="store_true")
    p = sub.add_parser("compare-heads")
    p.add_argument("--reference", required=True)
    p.add_argument("--ours", required=True)
    p.add_argument("--rtol", type=float, default=1e-4)
    args = parser.parse_args()
    if args.command in ("init", "run", "self-test") and \
            args.device.startswith("cuda"):
        torch.backends.cudnn.deterministic = True
        # TF32 would make the F32 reference less exact than our F32 path
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    return {"self-test": command_self_test, "init": command_init,
            "run": command_run, "compare": command_compare,
            "compare-heads": command_compare_heads}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
