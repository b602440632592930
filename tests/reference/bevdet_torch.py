#!/usr/bin/env python3
"""BEVDet (HuangJunJie2017/BEVDet master, configs/bevdet/bevdet-r50.py) in
plain PyTorch, with BEVDet's state_dict names: the reference the camera
chain (camencode, bevpool, bevdetect) is compared with.  Needs torch (1.13
or 2.x), torchvision, numpy and PIL; runs on the GPU machine or on the CPU
(ResNet-50 on six 256 x 704 images takes tens of seconds there).

What it computes, as BEVDet does at test time:
  - each camera image resized with PIL's default filter and cropped as
    LoadMultiViewImageFromFiles_BEVDet's test-time sample_augmentation
    does, then ToTensor and ImageNet's Normalize;
  - ResNet (mmdet's, BasicBlock or Bottleneck), FPNForBEVDet, the LSS depth
    net (softmax over the depth bins, and the context channels);
  - the lift and splat of ViewTransformerLiftSplatShoot on bevpool's
    documented geometry (docs/calibration.md: float64, the cell by
    truncation toward zero, -1 < t < n kept, z slices stacked on the
    channels), summed in float64: BEVDet computes the same points in
    float32, which can put a point that lies within a float32 rounding of
    a cell border into the neighbouring cell;
  - ResNetForBEVDet, FPN_LSS, CenterHead, the CenterPoint coder and
    BEVDet's Scale-NMS (per task rotate, on boxes whose sizes are scaled
    per class, or circle); boxes keep their decoded sizes, z the centre.

Commands:

  self-test
      Hand-worked cases: BEVDet's test-time transform of a 1600 x 900
      image, the pooling of single points, Scale-NMS on boxes that only
      overlap once scaled, the checkpoint -> converter -> weights round
      trip of a tiny model, and the preprocessing of a generated image.

  preprocess IMAGE --out FILE [--uint8 FILE] [--size WxH] [--weights M]
      BEVDet's preprocessing of one image (a PIL-readable file, or raw RGB
      bytes with --size): writes the normalised network input, float32
      [3][H][W] (RGB), and with --uint8 the resized and cropped uint8 RGB
      image [H][W][3]: what camencode must compute, pixel for pixel.  The
      data config is the weights file's (--weights) or bevdet-r50.py's.

  calibration --info INFO.json -o CALIB.json [--weights M] [--sample 0]
      bevpool's calibration file (docs/calibration.md, form 1) of one
      sample of an mmdetection3d v1.1 info file, the cameras in the
      model's order (BEVDet: FRONT_LEFT, FRONT, FRONT_RIGHT, BACK_LEFT,
      BACK, BACK_RIGHT) with its test-time resize and crop as img_aug.

  decode --images DIR -o RGBDIR [--weights M]
      Each camera's JPEG decoded by GStreamer (filesrc ! jpegdec !
      videoconvert ! video/x-raw,format=RGB), as the pipeline decodes it,
      into RGBDIR/CAM_xxx.rgb: the input --rgb takes.

  init -o CKPT.pth [--weights M.safetensors] [--images DIR | --rgb DIR
       --calibration CALIB.json] [--bevdet-config PY] [--set KEY=JSON ...]
       [--seed 0] [--hit-rate 0.004] [--device cuda]
      Random weights that behave like trained ones: BatchNorm statistics
      measured on the cameras (the demo images, else random images) and
      then perturbed, regression heads scaled to plausible boxes, each
      heatmap class's bias set so that about --hit-rate of its cells pass
      the score threshold.  Saves a BEVDet-style checkpoint and, with
      --weights, converts it with tools/convert_bevdet.py.

  run --weights M --calibration CALIB.json (--images DIR | --rgb DIR)
      -o OUTDIR [--half | --double] [--device cuda]
      Writes OUTDIR/input.f32 (the network input [N][3][H][W]),
      features.raw (application/x-camera-features, F32: features
      [N][fH][fW][C] then depth [N][D][fH][fW], what bevpool takes),
      bev.f32 ([C][ny][nx], what bevdetect takes), heads.f32 and
      heads.json, decoded.jsonl (after the coder) and boxes.jsonl (after
      Scale-NMS), boxenc's JSON lines with vx and vy.  --half runs the
      networks in F16 channels_last, as a deployment would; --double
      runs everything in float64 on the CPU: the exact answer that two
      float32 implementations (ours, PyTorch's) are each measured against,
      since they differ from each other by their summation orders.

  compare --reference REF.jsonl --ours OURS.jsonl [--center-tol 1e-4]
          [--size-tol 1e-4] [--yaw-tol 1e-4] [--score-tol 1e-4]
          [--velocity-tol 1e-4] [--list]
      [--peer PEER.jsonl [--peer-factor 2]]
      Matches every box (same label, nearest centre) and prints the
      largest differences; exit 1 when a box is unmatched or a difference
      exceeds its tolerance.  With --peer (REF the float64 answer of run
      --double, PEER PyTorch's float32 one), each tolerance becomes the
      larger of itself and the factor times PEER's own difference from
      REF: two float32 networks this deep differ from the exact answer by
      about 1e-4 m each, whatever their code (docs/weights.md).

The comparison on the GPU machine (docs/elements/bevdetect.md gives the
pipeline): calibration, decode, init, run, then the pipeline on the same
RGB frames, then compare.
"""

import argparse
import copy
import glob
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import centerpoint_torch as cp  # noqa: E402
import convert_bevdet as converter  # noqa: E402
import convert_mmdet3d_centerpoint as common  # noqa: E402

HEADS = cp.HEADS


# ---- BEVDet's modules, with its names ---------------------------------------

def bn(channels, eps):
    return nn.BatchNorm2d(channels, eps=eps)


class BasicBlock(nn.Module):
    """mmdet's BasicBlock."""

    def __init__(self, cin, planes, stride, downsample, eps=1e-5):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = bn(planes, eps)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = bn(planes, eps)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    """mmdet's Bottleneck: the stride on conv2 (pytorch style) or conv1
    (caffe)."""

    def __init__(self, cin, planes, stride, downsample, caffe=False,
                 eps=1e-5):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 1, stride if caffe else 1,
                               bias=False)
        self.bn1 = bn(planes, eps)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1 if caffe else stride, 1,
                               bias=False)
        self.bn2 = bn(planes, eps)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = bn(planes * 4, eps)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Module):
    """mmdet's ResNet, 4 stages, the outputs of out_indices."""

    def __init__(self, cfg):
        super().__init__()
        blocks, base, stem, bottleneck = converter.backbone({
            "img_backbone": cfg})
        caffe = cfg.get("style", "pytorch") == "caffe"
        eps = cfg.get("bn_eps", 1e-5)
        self.out_indices = list(cfg["out_indices"])
        self.conv1 = nn.Conv2d(3, stem, 7, 2, 3, bias=False)
        self.bn1 = bn(stem, eps)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin = stem
        for s in range(4):
            planes = base << s
            out = planes * (4 if bottleneck else 1)
            layers = []
            for k in range(blocks[s]):
                stride = 2 if k == 0 and s > 0 else 1
                down = None
                if k == 0 and (stride != 1 or cin != out):
                    down = nn.Sequential(
                        nn.Conv2d(cin, out, 1, stride, bias=False),
                        bn(out, eps))
                layers.append(Bottleneck(cin, planes, stride, down, caffe,
                                         eps) if bottleneck else
                              BasicBlock(cin, planes, stride, down, eps))
                cin = out
            self.add_module("layer%d" % (s + 1), nn.Sequential(*layers))

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        outs = []
        for s in range(4):
            x = getattr(self, "layer%d" % (s + 1))(x)
            if s in self.out_indices:
                outs.append(x)
        return outs


class ConvOnly(nn.Module):
    """mmcv's ConvModule without norm and activation: a conv with bias."""

    def __init__(self, cin, cout, kernel):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel, padding=kernel // 2)

    def forward(self, x):
        return self.conv(x)


class FPNForBEVDet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        out = cfg["out_channels"]
        self.lateral_convs = nn.ModuleList(
            [ConvOnly(c, out, 1) for c in cfg["in_channels"]])
        self.fpn_convs = nn.ModuleList([ConvOnly(out, out, 3)])

    def forward(self, inputs):
        laterals = [conv(x) for conv, x in zip(self.lateral_convs, inputs)]
        for i in range(len(laterals) - 1, 0, -1):
            laterals[i - 1] = laterals[i - 1] + F.interpolate(
                laterals[i], size=laterals[i - 1].shape[2:], mode="nearest")
        return self.fpn_convs[0](laterals[0])


class ViewTransformer(nn.Module):
    """ViewTransformerLiftSplatShoot's depth net, and its geometry
    registered as BEVDet registers it (parameters in the checkpoint)."""

    def __init__(self, config):
        super().__init__()
        vt = config["img_view_transformer"]
        grid = config["grid_config"]
        bounds = [grid["xbound"], grid["ybound"], grid["zbound"]]
        self.dx = nn.Parameter(torch.tensor([b[2] for b in bounds]),
                               requires_grad=False)
        self.bx = nn.Parameter(torch.tensor([b[0] + b[2] / 2.0
                                             for b in bounds]),
                               requires_grad=False)
        self.nx = nn.Parameter(torch.tensor([(b[1] - b[0]) / b[2]
                                             for b in bounds]),
                               requires_grad=False)
        h, w = config["data_config"]["input_size"]
        ds = vt.get("downsample", 16)
        fh, fw = h // ds, w // ds
        depths = torch.arange(*grid["dbound"], dtype=torch.float)
        d = len(depths)
        self.frustum = nn.Parameter(torch.stack((
            torch.linspace(0, w - 1, fw).view(1, 1, fw).expand(d, fh, fw),
            torch.linspace(0, h - 1, fh).view(1, fh, 1).expand(d, fh, fw),
            depths.view(-1, 1, 1).expand(d, fh, fw)), -1),
            requires_grad=False)
        self.D = d
        self.C = vt.get("numC_Trans", 64)
        self.depthnet = nn.Conv2d(vt.get("numC_input", 512), d + self.C, 1)

    def forward(self, x):
        x = self.depthnet(x)
        return x[:, :self.D].softmax(dim=1), x[:, self.D:self.D + self.C]


class ResNetForBEVDet(nn.Module):
    def __init__(self, config):
        super().__init__()
        layers, channels, strides, ids, bottleneck = \
            converter.bev_backbone(config)
        cin = config["img_bev_encoder_backbone"]["numC_input"]
        stages = []
        for n, out, stride in zip(layers, channels, strides):
            down = nn.Conv2d(cin, out, 3, stride, 1)
            if bottleneck:
                blocks = [Bottleneck(cin, out // 4, stride, down)] + \
                    [Bottleneck(out, out // 4, 1, None)
                     for _ in range(n - 1)]
            else:
                blocks = [BasicBlock(cin, out, stride, down)] + \
                    [BasicBlock(out, out, 1, None) for _ in range(n - 1)]
            stages.append(nn.Sequential(*blocks))
            cin = out
        self.layers = nn.Sequential(*stages)
        self.ids = ids

    def forward(self, x):
        feats = []
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i in self.ids:
                feats.append(x)
        return feats


class FPN_LSS(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.index = cfg.get("input_feature_index", [0, 2])
        extra = cfg.get("extra_upsample", 2)
        out = cfg["out_channels"]
        wide = out * (2 if extra else 1)
        self.up = nn.Upsample(scale_factor=cfg.get("scale_factor", 4),
                              mode="bilinear", align_corners=True)
        self.conv = nn.Sequential(
            nn.Conv2d(cfg["in_channels"], wide, 3, padding=1, bias=False),
            nn.BatchNorm2d(wide), nn.ReLU(inplace=True),
            nn.Conv2d(wide, wide, 3, padding=1, bias=False),
            nn.BatchNorm2d(wide), nn.ReLU(inplace=True))
        self.up2 = nn.Sequential(
            nn.Upsample(scale_factor=extra, mode="bilinear",
                        align_corners=True),
            nn.Conv2d(wide, out, 3, padding=1, bias=False),
            nn.BatchNorm2d(out), nn.ReLU(inplace=True),
            nn.Conv2d(out, out, 1)) if extra else None

    def forward(self, feats):
        x2, x1 = feats[self.index[0]], feats[self.index[1]]
        x = self.conv(torch.cat([x2, self.up(x1)], dim=1))
        return self.up2(x) if self.up2 is not None else x


class BEVDet(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.img_backbone = ResNet(config["img_backbone"])
        self.img_neck = FPNForBEVDet(config["img_neck"])
        self.img_view_transformer = ViewTransformer(config)
        self.img_bev_encoder_backbone = ResNetForBEVDet(config)
        self.img_bev_encoder_neck = FPN_LSS(config["img_bev_encoder_neck"])
        self.pts_bbox_head = cp.CenterHead(
            config["img_bev_encoder_neck"]["out_channels"], config["head"])

    def forward_image(self, img):
        """[N][3][H][W] -> depth [N][D][fH][fW], features [N][C][fH][fW]."""
        return self.img_view_transformer(self.img_neck(self.img_backbone(
            img)))

    def forward_bev(self, bev):
        return self.pts_bbox_head(self.img_bev_encoder_neck(
            self.img_bev_encoder_backbone(bev)))


# ---- the preprocessing --------------------------------------------------------

def image_transform(data_config, width, height):
    """BEVDet's test-time sample_augmentation: (resize, resize_dims,
    crop)."""
    fh, fw = data_config["input_size"]
    resize = float(fw) / float(width) + data_config.get("resize_test", 0.0)
    resize_dims = (int(width * resize), int(height * resize))
    new_w, new_h = resize_dims
    crop_h = int((1 - np.mean(data_config["crop_h"])) * new_h) - fh
    crop_w = int(max(0, new_w - fw) / 2)
    return resize, resize_dims, (crop_w, crop_h, crop_w + fw, crop_h + fh)


def preprocess(image, data_config):
    """(normalised float32 [3][H][W], the uint8 RGB crop, (resize, crop_w,
    crop_h)) of a PIL image, as LoadMultiViewImageFromFiles_BEVDet."""
    import torchvision
    resize, dims, crop = image_transform(data_config, *image.size)
    image = image.resize(dims)
    image = image.crop(crop)
    image = image.rotate(0)
    normalise = torchvision.transforms.Compose((
        torchvision.transforms.ToTensor(),
        torchvision.transforms.Normalize(mean=data_config["mean"],
                                         std=data_config["std"])))
    return (normalise(image), np.asarray(image, dtype=np.uint8).copy(),
            (resize, crop[0], crop[1]))


def open_image(path, size=None):
    from PIL import Image
    if size is not None:
        width, height = size
        raw = np.fromfile(path, np.uint8)
        if raw.size != width * height * 3:
            raise SystemExit("%s: %d bytes, not %d x %d RGB" %
                             (path, raw.size, width, height))
        return Image.fromarray(raw.reshape(height, width, 3), "RGB")
    return Image.open(path).convert("RGB")


def camera_images(config, images=None, rgb=None):
    """The model's cameras in order: PIL images from the JPEGs of a
    directory (a file per camera, its name holding __CAM_X__ or CAM_X.) or
    from raw RGB files of the src size."""
    data = config["data_config"]
    out = []
    for cam in data["cams"]:
        if rgb is not None:
            path = os.path.join(rgb, cam + ".rgb")
            out.append(open_image(path, (data["src_size"][1],
                                         data["src_size"][0])))
            continue
        found = sorted(glob.glob(os.path.join(images, "*__%s__*" % cam)) +
                       glob.glob(os.path.join(images, cam + ".*")))
        found = [f for f in found if not f.endswith(".rgb")]
        if not found:
            raise SystemExit("no image of %s in %s" % (cam, images))
        out.append(open_image(found[0]))
    return out


# ---- the lift and splat --------------------------------------------------------

def read_calibration(path, n_cameras):
    with open(path) as f:
        doc = json.load(f)
    cams = doc["cameras"]
    if len(cams) != n_cameras:
        raise SystemExit("%s has %d cameras, the model %d" %
                         (path, len(cams), n_cameras))
    out = []
    for cam in cams:
        k = np.array(cam["intrinsics"], np.float64)[:3, :3]
        c2l = np.array(cam["camera_to_lidar"], np.float64)
        aug = np.array(cam.get("img_aug", np.eye(4)), np.float64)
        out.append((k, c2l[:3, :3], c2l[:3, 3], aug[:3, :3], aug[:3, 3]))
    return out


def geometry(config, calibration, fh, fw):
    """Every frustum point's cell (ix, iy, iz) and whether it is kept, as
    bevpool computes them (docs/calibration.md): [N][D][fH][fW]."""
    data, grid = config["data_config"], config["grid_config"]
    h, w = data["input_size"]
    depths = np.arange(*grid["dbound"], dtype=np.float64)
    xs = np.linspace(0, w - 1, fw)
    ys = np.linspace(0, h - 1, fh)
    d, v, u = np.meshgrid(depths, ys, xs, indexing="ij")
    bounds = [grid["xbound"], grid["ybound"], grid["zbound"]]
    cells = [converter.axis_cells(b) for b in bounds]
    result = []
    for k, rot, trans, aug, aug_t in calibration:
        q = np.stack([u - aug_t[0], v - aug_t[1], d - aug_t[2]], -1)
        r = q @ np.linalg.inv(aug).T
        s = np.stack([r[..., 0] * r[..., 2], r[..., 1] * r[..., 2],
                      r[..., 2]], -1)
        p = s @ (rot @ np.linalg.inv(k)).T + trans
        index, kept = [], np.ones(p.shape[:-1], bool)
        for axis in range(3):
            t = (p[..., axis] - bounds[axis][0]) / bounds[axis][2]
            kept &= (t > -1) & (t < cells[axis])
            index.append(np.trunc(np.where(kept, t, 0)).astype(np.int64))
        result.append((index, kept))
    return result, cells


def splat(config, calibration, depth, features, dtype=torch.float32):
    """bevpool: [C x nz][ny][nx] of @dtype from depth [N][D][fH][fW] and
    features [N][C][fH][fW], summed in float64."""
    n, d, fh, fw = depth.shape
    c = features.shape[1]
    cells, (nx, ny, nz) = geometry(config, calibration, fh, fw)
    bev = torch.zeros(nz, ny, nx, c, dtype=torch.float64)
    depth = depth.double().cpu()
    features = features.double().cpu()
    for cam, ((ix, iy, iz), kept) in enumerate(cells):
        kept_t = torch.from_numpy(kept)
        flat = torch.from_numpy((iz * ny + iy) * nx + ix)[kept_t]
        # weight of each kept (d, v, u) and its pixel's features
        weight = depth[cam][kept_t]                       # [K]
        pixel = torch.from_numpy(np.nonzero(kept)[1] * fw +
                                 np.nonzero(kept)[2])
        feats = features[cam].reshape(c, -1).t()[pixel]   # [K][C]
        bev.view(-1, c).index_add_(0, flat, feats * weight[:, None])
    return bev.permute(0, 3, 1, 2).reshape(nz * c, ny, nx).to(dtype)


# ---- decode and Scale-NMS (BEVDet's CenterHead.get_bboxes) ------------------

def per_task(value, n):
    return value if isinstance(value, list) else [value] * n


def scale_nms_keep(boxes, scores, labels, config, t):
    """The kept indices of task t's decoded boxes under its test_nms."""
    nms = config["test_nms"]
    n = len(config["head"]["tasks"])
    kind = per_task(nms["nms_type"], n)[t]
    if kind == "circle":
        return cp.circle_nms(boxes, scores, nms["min_radius"][t],
                             nms["post_max_size"])
    factor = per_task(nms.get("nms_rescale_factor", 1.0), n)[t]
    scaled = []
    for box, label in zip(boxes, labels):
        f = factor[label] if isinstance(factor, list) else factor
        # float32, as box_preds[:, 3:6] * factor
        scaled.append(box[:3] + [float(np.float32(v) * np.float32(f))
                                 for v in box[3:6]] + box[6:])
    good = [i for i, s in enumerate(scores)
            if s >= config["coder"]["score_threshold"]]
    keep = cp.rotate_nms([scaled[i] for i in good],
                         [scores[i] for i in good],
                         per_task(nms["nms_thr"], n)[t],
                         nms["pre_max_size"], nms["post_max_size"])
    return [good[i] for i in keep]


def detect(heads, config):
    """(decoded, kept): lists of (box[7], score, global label, (vx, vy))."""
    decoded, kept, offset = [], [], 0
    for t, preds in enumerate(heads):
        boxes, scores, labels = cp.decode_task(preds, config, t)
        boxes = boxes.double().cpu().tolist()
        scores = scores.double().cpu().tolist()
        labels = [int(v) for v in labels.cpu().tolist()]
        rows = [(b[:7], s, label + offset,
                 tuple(b[7:9]) if len(b) > 7 else (0.0, 0.0))
                for b, s, label in zip(boxes, scores, labels)]
        decoded += rows
        kept += [rows[i] for i in scale_nms_keep(boxes, scores, labels,
                                                 config, t)]
        offset += len(config["head"]["tasks"][t]["class_names"])
    return decoded, kept


def write_jsonl(path, rows):
    with open(path, "w") as f:
        f.write(json.dumps({"frame": 0, "pts": None, "count": len(rows),
                            "type": "3d"}, separators=(",", ":")) + "\n")
        for box, score, label, vel in rows:
            f32 = [float(np.float32(v)) for v in box]
            line = dict(zip(("x", "y", "z", "dx", "dy", "dz", "yaw"), f32))
            line["vx"] = float(np.float32(vel[0]))
            line["vy"] = float(np.float32(vel[1]))
            line["score"] = float(np.float32(score))
            line["label"] = label
            f.write(json.dumps(line, separators=(",", ":")) + "\n")


def read_jsonl(path, frame=0):
    rows, current = [], -1
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            item = json.loads(line)
            if "frame" in item:
                current += 1
                continue
            if current == frame:
                rows.append(([float(item[k]) for k in
                              ("x", "y", "z", "dx", "dy", "dz", "yaw")],
                             float(item["score"]), int(item["label"]),
                             (float(item.get("vx", 0.0)),
                              float(item.get("vy", 0.0)))))
    return rows


# ---- weights ----------------------------------------------------------------

def load_weights(path, device):
    metadata, tensors = common.read_safetensors(path)
    config = json.loads(metadata[common.METADATA_KEY])
    model = BEVDet(config)
    state = {}
    for name, (dtype, shape, data) in tensors.items():
        if dtype == "BF16":
            raw = np.frombuffer(data, "<u2").astype(np.uint32) << 16
            array = raw.view(np.float32)
        else:
            array = np.frombuffer(data, {"F32": "<f4", "F16": "<f2",
                                         "F64": "<f8"}[dtype])
        state[name] = torch.from_numpy(array.astype(np.float32).reshape(
            shape).copy())
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if not m.endswith("num_batches_tracked")
               and m not in converter.VIEW_TRANSFORMER_GEOMETRY]
    if missing or unexpected:
        raise SystemExit("%s: missing %s, unexpected %s" %
                         (path, missing[:5], unexpected[:5]))
    return model.to(device).eval(), config


def data_config_of(weights):
    if weights is None:
        return converter.DEFAULT_CONFIG["data_config"]
    metadata, _ = common.read_safetensors(weights)
    return json.loads(metadata[common.METADATA_KEY])["data_config"]


@torch.no_grad()
def random_model(config, images, calibration, seed, hit_rate, device):
    """Random weights behaving like trained ones, calibrated on @images
    ([N][3][H][W], normalised) pooled with @calibration."""
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = BEVDet(config)
    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
            if module.bias is not None:
                module.bias.copy_(0.1 * torch.randn(module.bias.shape,
                                                    generator=generator))
        elif isinstance(module, nn.BatchNorm2d):
            n = module.num_features
            sign = torch.where(torch.rand(n, generator=generator) < 0.05,
                               -1.0, 1.0)
            module.weight.copy_(sign * (0.4 + torch.rand(
                n, generator=generator)))
            module.bias.copy_(0.3 * torch.randn(n, generator=generator))
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
    # a depth net whose softmax is neither flat nor one-hot
    model.img_view_transformer.depthnet.weight.mul_(0.5)
    model.to(device)
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.reset_running_stats()
            module.momentum = None
    images = images.to(device)
    # the image side's statistics from the cameras, the BEV side's from
    # what the calibrated image side pools
    model.train()
    model.forward_image(images)
    model.eval()
    depth, feats = model.forward_image(images)
    bev = splat(config, calibration, depth, feats)[None].to(device)
    model.train()
    model.forward_bev(bev)
    model.eval()
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            n = module.num_features
            std = module.running_var.sqrt()
            module.running_mean.add_(0.2 * std * torch.randn(
                n, generator=generator).to(device))
            module.running_var.mul_(torch.exp(0.4 * (torch.rand(
                n, generator=generator) - 0.5)).to(device))
            module.momentum = 0.1
    depth, feats = model.forward_image(images)
    bev = splat(config, calibration, depth, feats)[None].to(device)
    heads = model.forward_bev(bev)
    threshold = config["coder"]["score_threshold"]
    logit = math.log(threshold / (1 - threshold))
    for task, preds in zip(model.pts_bbox_head.task_heads, heads):
        final = task.heatmap[1]
        for c in range(final.out_channels):
            share = hit_rate * math.exp(math.log(10) * (torch.rand(
                1, generator=generator).item() - 0.5))
            raw = (preds["heatmap"][0, c] - final.bias[c]).flatten()
            cut = torch.quantile(raw.float().cpu(), 1 - share)
            final.bias[c] = logit - cut.to(device) + 1e-3
    return model


# ---- commands -------------------------------------------------------------

def network_inputs(config, args):
    pil = camera_images(config, images=getattr(args, "images", None),
                        rgb=getattr(args, "rgb", None))
    tensors = [preprocess(image, config["data_config"])[0] for image in pil]
    return torch.stack(tensors)


def synthetic_inputs(config, seed):
    data = config["data_config"]
    generator = torch.Generator().manual_seed(seed + 1)
    h, w = data["input_size"]
    return torch.randn(len(data["cams"]), 3, h, w, generator=generator)


def command_init(args):
    device = torch.device(args.device)
    config = converter.build_config(args.bevdet_config, args.config, args.set)
    if args.images or args.rgb:
        if not args.calibration:
            raise SystemExit("--images/--rgb need --calibration")
        images = network_inputs(config, args)
    else:
        images = synthetic_inputs(config, args.seed)
    if args.calibration:
        calibration = read_calibration(args.calibration,
                                       len(config["data_config"]["cams"]))
    else:
        calibration = synthetic_calibration(config)
    model = random_model(config, images, calibration, args.seed,
                         args.hit_rate, device)
    torch.save({"state_dict": {k: v.cpu() for k, v in
                               model.state_dict().items()},
                "meta": {"config": "tests/reference/bevdet_torch.py init"}},
               args.output)
    print("wrote %s" % args.output)
    if args.weights:
        count = converter.convert(args.output, args.weights, config)
        print("wrote %s: %d tensors" % (args.weights, count))
        print(converter.nms_summary(config))
    return 0


def synthetic_calibration(config):
    """A ring of the model's cameras around the lidar, 1266 px on the
    src size, with the test-time resize and crop: for init without data."""
    data = config["data_config"]
    h, w = data["src_size"]
    resize, _, crop = image_transform(data, w, h)
    n = len(data["cams"])
    out = []
    for i in range(n):
        yaw = 2 * math.pi * i / n
        # camera z (forward) along (cos yaw, sin yaw), x right, y down
        forward = np.array([math.cos(yaw), math.sin(yaw), 0.0])
        right = np.array([math.sin(yaw), -math.cos(yaw), 0.0])
        down = np.array([0.0, 0.0, -1.0])
        rot = np.stack([right, down, forward], 1)
        k = np.array([[1266.0, 0, w / 2], [0, 1266.0, h / 2], [0, 0, 1]])
        aug = np.diag([resize, resize, 1.0])
        out.append((k, rot, np.array([0.0, 0.0, 1.6]), aug,
                    np.array([-crop[0], -crop[1], 0.0])))
    return out


def dump_heads(heads, outdir):
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


@torch.no_grad()
def command_run(args):
    device = torch.device(args.device)
    model, config = load_weights(args.weights, device)
    calibration = read_calibration(args.calibration,
                                   len(config["data_config"]["cams"]))
    images = network_inputs(config, args)
    os.makedirs(args.output, exist_ok=True)
    images.numpy().astype("<f4").tofile(os.path.join(args.output,
                                                     "input.f32"))
    x = images.to(device)
    exact = torch.float64 if args.double else torch.float32
    if args.half:
        model = model.half().to(memory_format=torch.channels_last)
        x = x.half().to(memory_format=torch.channels_last)
    if args.double:
        model, x = model.double(), x.double()
    depth, feats = model.forward_image(x)
    depth, feats = depth.to(exact), feats.to(exact)
    with open(os.path.join(args.output, "features.raw"), "wb") as f:
        f.write(feats.permute(0, 2, 3, 1).contiguous().cpu().numpy()
                .astype("<f4").tobytes())
        f.write(depth.contiguous().cpu().numpy().astype("<f4").tobytes())
    bev = splat(config, calibration, depth, feats, exact)
    bev.numpy().astype("<f4").tofile(os.path.join(args.output, "bev.f32"))
    b = bev[None].to(device)
    if args.half:
        b = b.half().to(memory_format=torch.channels_last)
    heads = model.forward_bev(b)
    heads = [{k: v.to(exact) for k, v in preds.items()} for preds in heads]
    dump_heads(heads, args.output)
    decoded, kept = detect(heads, config)
    write_jsonl(os.path.join(args.output, "decoded.jsonl"), decoded)
    write_jsonl(os.path.join(args.output, "boxes.jsonl"), kept)
    n, d, fh, fw = depth.shape
    print("%d cameras, features %d x %d x %d, %d depth bins; BEV %s; %d "
          "boxes decoded, %d kept" % (n, feats.shape[1], fh, fw, d,
                                      list(bev.shape), len(decoded),
                                      len(kept)))
    print("bevpool's caps: application/x-camera-features,format=F32,"
          "cameras=%d,channels=%d,depth-bins=%d,width=%d,height=%d" %
          (n, feats.shape[1], d, fw, fh))
    return 0


def command_preprocess(args):
    size = None
    if args.size:
        size = tuple(int(v) for v in args.size.lower().split("x"))
    data = data_config_of(args.weights)
    tensor, crop, (resize, crop_w, crop_h) = preprocess(
        open_image(args.image, size), data)
    tensor.numpy().astype("<f4").tofile(args.out)
    if args.uint8:
        crop.tofile(args.uint8)
    print("%s: resized by %r, cropped at (%d, %d) to %d x %d; wrote %s "
          "(float32 [3][%d][%d])%s" % (args.image, resize, crop_w, crop_h,
                                       crop.shape[1], crop.shape[0],
                                       args.out, crop.shape[0],
                                       crop.shape[1],
                                       " and " + args.uint8 if args.uint8
                                       else ""))
    return 0


def command_calibration(args):
    data = data_config_of(args.weights)
    with open(args.info) as f:
        info = json.load(f)
    images = info["data_list"][args.sample]["images"]
    h, w = data["src_size"]
    resize, _, crop = image_transform(data, w, h)
    aug = [[resize, 0, 0, -crop[0]], [0, resize, 0, -crop[1]],
           [0, 0, 1, 0], [0, 0, 0, 1]]
    cameras = []
    for cam in data["cams"]:
        entry = images[cam]
        cameras.append({
            "name": cam,
            "intrinsics": np.array(entry["cam2img"], np.float64).tolist(),
            "camera_to_lidar": np.linalg.inv(np.array(
                entry["lidar2cam"], np.float64)).tolist(),
            "img_aug": aug,
            "image_size": [w, h],
            "image": entry.get("img_path")})
    with open(args.output, "w") as f:
        json.dump({"cameras": cameras}, f, indent=1)
    print("wrote %s: %s, img_aug resize %r crop (%d, %d)" %
          (args.output, ", ".join(data["cams"]), resize, crop[0], crop[1]))
    return 0


def command_decode(args):
    data = data_config_of(args.weights)
    os.makedirs(args.output, exist_ok=True)
    for cam in data["cams"]:
        found = sorted(glob.glob(os.path.join(args.images, "*__%s__*.jpg" %
                                              cam)))
        if not found:
            raise SystemExit("no JPEG of %s in %s" % (cam, args.images))
        out = os.path.join(args.output, cam + ".rgb")
        subprocess.run(["gst-launch-1.0", "-q", "filesrc", "location=" +
                        found[0], "!", "jpegdec", "idct-method=islow", "!", "videoconvert", "!",
                        "video/x-raw,format=RGB", "!", "filesink",
                        "location=" + out], check=True)
        print("%s -> %s" % (found[0], out))
    return 0


def match_boxes(ref, ours, reach):
    """Matches each reference box with the nearest unused box of its label
    in @ours (within @reach metres): (unmatched reference boxes, unmatched
    boxes of ours, the largest difference of each field, listing lines)."""
    used, unmatched, lines = set(), 0, []
    worst = dict(center=0.0, z=0.0, size=0.0, yaw=0.0, score=0.0,
                 velocity=0.0)
    for box, score, label, vel in ref:
        best, best_d = None, None
        for j, (obox, _, olabel, _) in enumerate(ours):
            if j in used or olabel != label:
                continue
            d = math.hypot(obox[0] - box[0], obox[1] - box[1])
            if best_d is None or d < best_d:
                best, best_d = j, d
        if best is None or best_d > reach:
            unmatched += 1
            lines.append("%-58s | (none)" % cp.fmt_box(box, score, label))
            continue
        used.add(best)
        obox, oscore, _, ovel = ours[best]
        worst["center"] = max(worst["center"], best_d)
        worst["z"] = max(worst["z"], abs(obox[2] - box[2]))
        worst["size"] = max(worst["size"], max(abs(obox[i] - box[i])
                                               for i in (3, 4, 5)))
        worst["yaw"] = max(worst["yaw"], abs(math.remainder(
            obox[6] - box[6], 2 * math.pi)))
        worst["score"] = max(worst["score"], abs(oscore - score))
        worst["velocity"] = max(worst["velocity"], abs(ovel[0] - vel[0]),
                                abs(ovel[1] - vel[1]))
        lines.append("%-58s | %s" % (cp.fmt_box(box, score, label),
                                     cp.fmt_box(obox, oscore, label)))
    extra = [r for j, r in enumerate(ours) if j not in used]
    for box, score, label, _ in extra:
        lines.append("%-58s | %s" % ("(none)", cp.fmt_box(box, score,
                                                           label)))
    return unmatched, len(extra), worst, lines


def describe(worst):
    return ("centre %.3g m, z %.3g m, size %.3g m, yaw %.3g rad, score "
            "%.3g, velocity %.3g m/s" %
            (worst["center"], worst["z"], worst["size"], worst["yaw"],
             worst["score"], worst["velocity"]))


def command_compare(args):
    ref = read_jsonl(args.reference, args.frame)
    ours = read_jsonl(args.ours, args.frame)
    reach = max(args.center_tol * 100, 0.5)
    unmatched, extra, worst, lines = match_boxes(ref, ours, reach)
    if args.list:
        print("%-58s | %s" % ("reference", "ours"))
        print("\n".join(lines))
    print("reference %d boxes, ours %d; unmatched: %d reference, %d ours" %
          (len(ref), len(ours), unmatched, extra))
    print("largest differences: " + describe(worst))
    tol = dict(center=args.center_tol, z=args.center_tol,
               size=args.size_tol, yaw=args.yaw_tol, score=args.score_tol,
               velocity=args.velocity_tol)
    if args.peer:
        # another float32 implementation against the same exact answer:
        # ours may differ from it by as much as that one does, times the
        # factor (never less than the tolerances given)
        peer = read_jsonl(args.peer, args.frame)
        p_unmatched, p_extra, p_worst, _ = match_boxes(ref, peer, reach)
        print("the peer (%s), %d boxes; unmatched: %d reference, %d peer; "
              "largest differences: %s" % (args.peer, len(peer),
                                           p_unmatched, p_extra,
                                           describe(p_worst)))
        tol = {k: max(v, args.peer_factor * p_worst[k])
               for k, v in tol.items()}
        print("tolerances: " + describe(tol))
    ok = (unmatched == 0 and not extra and len(ref) > 0 and
          all(worst[k] <= tol[k] for k in tol))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


# ---- self-test ------------------------------------------------------------

def check(condition, what):
    print("%s: %s" % ("ok" if condition else "FAILED", what))
    if not condition:
        check.failures += 1


check.failures = 0


def tiny_config():
    return converter.validate_config(common.merge(converter.DEFAULT_CONFIG, {
        "data_config": {"cams": ["CAM_FRONT", "CAM_BACK"], "Ncams": 2,
                        "input_size": [64, 96], "src_size": [150, 200]},
        "grid_config": {"xbound": [-8, 8, 1.0], "ybound": [-12, 12, 1.0],
                        "dbound": [1.0, 5.0, 1.0]},
        "img_backbone": {"depth": 18, "base_channels": 4},
        "img_neck": {"in_channels": [16, 32], "out_channels": 8},
        "img_view_transformer": {"numC_input": 8, "numC_Trans": 3},
        "img_bev_encoder_backbone": {"numC_input": 3, "num_layer": [1, 1, 1],
                                     "num_channels": [6, 12, 24]},
        "img_bev_encoder_neck": {"in_channels": 30, "out_channels": 8},
        "head": {"share_conv_channel": 6, "head_conv": 5,
                 "tasks": [{"class_names": ["car"]},
                           {"class_names": ["pedestrian",
                                            "traffic_cone"]}]},
        "coder": {"out_size_factor": 1, "voxel_size": [1.0, 1.0],
                  "pc_range": [-8, -12], "max_num": 40},
        "test_nms": {"nms_type": ["rotate", "rotate"], "nms_thr": [0.2, 0.5],
                     "nms_rescale_factor": [1.0, [4.5, 9.0]],
                     "min_radius": [4, 0.175], "pre_max_size": 30,
                     "post_max_size": 12},
    }))


@torch.no_grad()
def command_self_test(args):
    from PIL import Image

    # 1. bevdet-r50's transform of a nuScenes image, worked out by hand:
    # 704 / 1600 + 0.04 = 0.48, 768 x 432, crop (32, 176)
    data = converter.DEFAULT_CONFIG["data_config"]
    resize, dims, crop = image_transform(data, 1600, 900)
    check(abs(resize - 0.48) < 1e-12 and dims == (768, 432) and
          crop == (32, 176, 736, 432), "test-time transform of 1600 x 900")
    # a generated image: the crop is PIL's resize of it, then normalised
    rng = np.random.default_rng(3)
    pixels = rng.integers(0, 256, (900, 1600, 3), dtype=np.uint8)
    image = Image.fromarray(pixels, "RGB")
    tensor, crop_img, _ = preprocess(image, data)
    expect = np.asarray(image.resize((768, 432), Image.BICUBIC))[176:432,
                                                                  32:736]
    check(np.array_equal(crop_img, expect), "PIL's bicubic resize, cropped")
    norm = (expect.astype(np.float32) / np.float32(255) -
            np.array(data["mean"], np.float32)) / np.array(data["std"],
                                                           np.float32)
    check(np.array_equal(tensor.numpy(), norm.transpose(2, 0, 1)),
          "normalisation as ToTensor and Normalize, bit for bit")

    # 2. the splat of single points, by hand: one camera looking along +x
    config = tiny_config()
    k = np.array([[10.0, 0, 47.5], [0, 10.0, 31.5], [0, 0, 1]])
    rot = np.array([[0, 0, 1.0], [-1.0, 0, 0], [0, -1.0, 0]])
    cal = [(k, rot, np.array([0.0, 0.0, 0.0]), np.eye(3), np.zeros(3)),
           (k, -rot, np.array([0.0, 0.0, 0.0]), np.eye(3), np.zeros(3))]
    fh, fw, d = 4, 6, 4
    depth = torch.zeros(2, d, fh, fw)
    feats = torch.zeros(2, 3, fh, fw)
    # pixel u = 3 of 6 (x = 3 * 95 / 5 = 57, left of the centre 47.5 by
    # 9.5 px), v = 2 of 4 (y = 2 * 63 / 3 = 42), depth bin 2 (3 m):
    # p_camera = ((57 - 47.5) * 3 / 10, (42 - 31.5) * 3 / 10, 3)
    # = (2.85, 3.15, 3); lidar (3, -2.85, -3.15): cell x 11, y 9
    depth[0, 2, 2, 3] = 0.5
    feats[0, :, 2, 3] = torch.tensor([1.0, 2.0, 4.0])
    bev = splat(config, cal, depth, feats)
    nonzero = torch.nonzero(bev).tolist()
    check(nonzero == [[0, 9, 11], [1, 9, 11], [2, 9, 11]] and
          bev[2, 9, 11].item() == 2.0, "one point splatted into cell "
          "(x 11, y 9): %s" % nonzero)
    # the second camera looks back: the same pixel lands at x -3, y 2.85
    depth.zero_()
    feats.zero_()
    depth[1, 2, 2, 3] = 1.0
    feats[1, 0, 2, 3] = 1.0
    bev = splat(config, cal, depth, feats)
    check(torch.nonzero(bev).tolist() == [[0, 14, 5]],
          "the rear camera's point at cell (x 5, y 14)")

    # 3. Scale-NMS: two pedestrians 0.4 m apart, 0.3 m wide, overlap only
    # once scaled by 4.5 (IoU 0.54 > 0.5); cones 0.2 m apart (x9)
    boxes = [[0, 0, 0, 0.3, 0.3, 1, 0], [0.4, 0, 0, 0.3, 0.3, 1, 0],
             [5, 5, 0, 0.3, 0.3, 1, 0], [5.2, 5, 0, 0.3, 0.3, 1, 0]]
    scores = [0.9, 0.8, 0.7, 0.6]
    labels = [0, 0, 1, 1]
    check(scale_nms_keep(boxes, scores, labels, config, 1) == [0, 2],
          "Scale-NMS keeps one pedestrian and one cone")
    unscaled = common.merge(config, {"test_nms": {"nms_rescale_factor": 1.0}})
    check(scale_nms_keep(boxes, scores, labels, unscaled, 1) == [0, 1, 2, 3],
          "without the factors every box stays")
    circle = common.merge(config, {"test_nms": {"nms_type": "circle"}})
    check(scale_nms_keep(boxes, scores, labels, circle, 1) == [0, 2],
          "circle (min_radius 0.175 m^2) ignores the factors")

    # 4. a tiny model through checkpoint, converter and weights file
    images = synthetic_inputs(config, 1)
    model = random_model(config, images, cal, 4, 0.05, torch.device("cpu"))
    depth, feats = model.forward_image(images)
    check(torch.allclose(depth.sum(1), torch.ones(1)) and
          depth.shape == (2, 4, 4, 6) and feats.shape == (2, 3, 4, 6),
          "image side: depth probabilities and context")
    heads = model.forward_bev(splat(config, cal, depth, feats)[None])
    above = sum(int((p["heatmap"].sigmoid() > 0.1).sum()) for p in heads)
    check(above > 0, "%d heatmap cells above the threshold" % above)
    # run --double: the same model in float64 end to end
    exact = copy.deepcopy(model).double()
    d64, f64 = exact.forward_image(images.double())
    bev64 = splat(config, cal, d64, f64, torch.float64)
    h64 = exact.forward_bev(bev64[None])
    check(bev64.dtype == torch.float64 and all(
        torch.allclose(h64[t][k].float(), heads[t][k], rtol=1e-4, atol=1e-4)
        for t in range(len(heads)) for k in heads[t]),
          "the float64 model computes what the float32 one does")
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "m.pth")
        weights = os.path.join(tmp, "m.safetensors")
        torch.save({"state_dict": model.state_dict()}, ckpt)
        converter.convert(ckpt, weights, config)
        loaded, loaded_config = load_weights(weights, torch.device("cpu"))
        check(loaded_config == config, "config round trip")
        d2, f2 = loaded.forward_image(images)
        check(torch.equal(d2, depth) and torch.equal(f2, feats),
              "weights round trip, bit for bit")
        _, tensors = common.read_safetensors(weights)
        check("img_view_transformer.frustum" not in tensors,
              "the view transformer's geometry is not written")
        # preprocess writes what preprocess computes
        path = os.path.join(tmp, "image.rgb")
        pixels[:150, :200].tofile(path)
        small = open_image(path, (200, 150))
        got, _, (r, cw, ch) = preprocess(small, config["data_config"])
        check(got.shape == (3, 64, 96) and ch == int(150 * r) - 64,
              "raw RGB input, transform %r (%d, %d)" % (r, cw, ch))
    print("%d failures" % check.failures)
    return 1 if check.failures else 0


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("self-test")
    p = sub.add_parser("preprocess")
    p.add_argument("image")
    p.add_argument("--out", required=True)
    p.add_argument("--uint8")
    p.add_argument("--size", help="WxH of a raw RGB image")
    p.add_argument("--weights")
    p = sub.add_parser("calibration")
    p.add_argument("--info", required=True)
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--weights")
    p.add_argument("--sample", type=int, default=0)
    p = sub.add_parser("decode")
    p.add_argument("--images", required=True)
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--weights")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    p = sub.add_parser("init")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--weights")
    p.add_argument("--images")
    p.add_argument("--rgb")
    p.add_argument("--calibration")
    p.add_argument("--bevdet-config")
    p.add_argument("--config")
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hit-rate", type=float, default=0.004)
    p.add_argument("--device", default=device)
    p = sub.add_parser("run")
    p.add_argument("--weights", required=True)
    p.add_argument("--calibration", required=True)
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--images")
    group.add_argument("--rgb")
    precision = p.add_mutually_exclusive_group()
    precision.add_argument("--half", action="store_true")
    precision.add_argument("--double", action="store_true")
    p.add_argument("--device", default=device)
    p.add_argument("-o", "--output", required=True)
    p = sub.add_parser("compare")
    p.add_argument("--reference", required=True)
    p.add_argument("--ours", required=True)
    p.add_argument("--frame", type=int, default=0)
    p.add_argument("--center-tol", type=float, default=1e-4)
    p.add_argument("--size-tol", type=float, default=1e-4)
    p.add_argument("--yaw-tol", type=float, default=1e-4)
    p.add_argument("--score-tol", type=float, default=1e-4)
    p.add_argument("--velocity-tol", type=float, default=1e-4)
    p.add_argument("--peer")
    p.add_argument("--peer-factor", type=float, default=2.0)
    p.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if getattr(args, "device", "cpu").startswith("cuda"):
        torch.backends.cudnn.deterministic = True
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    try:
        return {"self-test": command_self_test, "preprocess":
                command_preprocess, "calibration": command_calibration,
                "decode": command_decode, "init": command_init,
                "run": command_run, "compare": command_compare}[
                    args.command](args)
    except converter.ConversionError as e:
        print("error: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
