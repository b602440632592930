#!/usr/bin/env python3
"""PointPillars with an anchor head in plain PyTorch (no OpenPCDet, no
mmdetection3d), as each framework defines it and with its state_dict
names: the reference that the anchor-head decode (cuda/anchor3d_decode.h)
and, once bevdetect runs it, the network stage are compared with.  Needs
torch and numpy (PyYAML for OpenPCDet's configs; torchvision for the
axis-aligned NMS); runs on the GPU machine or on the CPU.

  OpenPCDet's PointPillar: PillarVFE (PFNLayer), PointPillarScatter,
    BaseBEVBackbone, AnchorHeadSingle with its AnchorGenerator,
    ResidualCoder, direction classifier and post_processing
    (class_agnostic_nms or multi_classes_nms, nms_gpu's overlap rule);
  mmdetection3d's VoxelNet: PillarFeatureNet (legacy or not),
    PointPillarsScatter, SECOND, SECONDFPN, Anchor3DHead with its
    (Aligned)Anchor3DRangeGenerator, DeltaXYZWLHRBBoxCoder,
    _predict_by_feat_single and box3d_multiclass_nms (nms_bev's xyxyr round
    trip and exact rotated IoU, or nms_normal_bev).

Both read the decorated per-point features that pillarfeat writes
(pointpillars-10: x y z i, offsets from the pillar's mean, offsets from its
centre), which is what PillarVFE builds; mmdetection3d's legacy
PillarFeatureNet then overwrites x, y, z with the centre offsets, as its
forward does in place.  Boxes are written with z at the centre (for
mmdetection3d: its bottom z + dz / 2) and 0-based labels.

Commands:

  self-test [--device cuda]
      Hand-worked cases: both frameworks' anchors against the placement
      rules of cuda/anchor3d_decode.h, one anchor's box and yaw in both
      conventions, limit_period at the boundary, the overlap rules on known
      rectangles (and against centerpoint_torch.py's polygon clipping), the
      converters' round trip (checkpoint and config -> weights file, the
      tensors back bit for bit, mmdetection3d's legacy PFN folded into the
      weight giving the same pillar features), the pillar-file reader.

  init --framework openpcdet|mmdet3d -o DIR [--calibrate PILLARS.bin]
       [--seed 0] [--hit-rate 0.002] [--small] [--device cuda]
      Random weights that behave like trained ones for the KITTI config
      (pointpillar.yaml; mmdetection3d's kitti-3d-3class): BatchNorm
      statistics measured on the input (a pillarfeat record, else synthetic
      pillars) and perturbed, the box deltas small, each class logit's bias
      set so that about --hit-rate of the anchors (0.3x to 3x of it, per
      channel) score above the threshold.  Writes DIR/checkpoint.pth in the
      framework's layout ({'model_state'} / {'state_dict', 'meta': {'cfg'}}),
      DIR/config.yaml or DIR/config.py, and DIR/model.safetensors converted
      by tools/convert_*_pointpillars.py.  --small: OpenPCDet's KITTI grid
      with 8 channels in every layer (the example model of
      examples/launch/cuda-pointpillars.sh, small enough for the C path).

  run --framework F --checkpoint CKPT --config CFG --pillars PILLARS.bin
      [--frame 0] [--half] [--device cuda] -o OUTDIR
      The network on one pillarfeat record (F32 or F16), then the head's
      decode and post-processing.  Writes OUTDIR/canvas.f32, OUTDIR/heads.f32
      (cls, box, dir, each [channels][H][W] float32: the layout
      bench_anchor3d --heads reads), OUTDIR/heads.json and
      OUTDIR/boxes.jsonl (boxenc's JSON lines).  --half runs F16
      channels_last.

  compare --reference REF.jsonl --ours OURS.jsonl [...]
      centerpoint_torch.py's box matching and tolerances.

On the GPU machine:

  python3 tests/reference/pointpillars_torch.py self-test --device cuda
  python3 tests/reference/pointpillars_torch.py init --framework openpcdet \\
      -o /tmp/pp --calibrate /tmp/pillars.bin
  python3 tests/reference/pointpillars_torch.py run --framework openpcdet \\
      --checkpoint /tmp/pp/checkpoint.pth --config /tmp/pp/config.yaml \\
      --pillars /tmp/pillars.bin -o /tmp/pp/ref
  build/tests/bench/bench_anchor3d --heads /tmp/pp/ref/heads.f32 \\
      --write-boxes /tmp/pp/ours.jsonl
  python3 tests/reference/pointpillars_torch.py compare \\
      --reference /tmp/pp/ref/boxes.jsonl --ours /tmp/pp/ours.jsonl
"""

import argparse
import json
import math
import os
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
import convert_mmdet3d_pointpillars as mm_converter  # noqa: E402
import convert_openpcdet_pointpillars as pcdet_converter  # noqa: E402
import pointpillars_weights as pp  # noqa: E402

check = cp.check


# ---- the frameworks' configs -----------------------------------------------

def openpcdet_cfg(tiny=False, small=False):
    """pointpillar.yaml's content as OpenPCDet reads it (the parts a
    PointPillar at test time uses); @tiny: a 32 x 32 grid and few channels;
    @small: the KITTI grid (CUDA-PointPillars' preset) with few channels,
    the network examples/models/pointpillars-kitti-small.safetensors has."""
    anchors = [
        {"class_name": "Car", "anchor_sizes": [[3.9, 1.6, 1.56]],
         "anchor_rotations": [0, 1.57], "anchor_bottom_heights": [-1.78],
         "align_center": False, "feature_map_stride": 2},
        {"class_name": "Pedestrian", "anchor_sizes": [[0.8, 0.6, 1.73]],
         "anchor_rotations": [0, 1.57], "anchor_bottom_heights": [-0.6],
         "align_center": False, "feature_map_stride": 2},
        {"class_name": "Cyclist", "anchor_sizes": [[1.76, 0.6, 1.73]],
         "anchor_rotations": [0, 1.57], "anchor_bottom_heights": [-0.6],
         "align_center": False, "feature_map_stride": 2}]
    cfg = {
        "CLASS_NAMES": ["Car", "Pedestrian", "Cyclist"],
        "DATA_CONFIG": {
            "POINT_CLOUD_RANGE": [0, -39.68, -3, 69.12, 39.68, 1],
            "POINT_FEATURE_ENCODING": {
                "used_feature_list": ["x", "y", "z", "intensity"]},
            "DATA_PROCESSOR": [{
                "NAME": "transform_points_to_voxels",
                "VOXEL_SIZE": [0.16, 0.16, 4], "MAX_POINTS_PER_VOXEL": 32,
                "MAX_NUMBER_OF_VOXELS": {"train": 16000, "test": 40000}}]},
        "MODEL": {
            "NAME": "PointPillar",
            "VFE": {"NAME": "PillarVFE", "WITH_DISTANCE": False,
                    "USE_ABSLOTE_XYZ": True, "USE_NORM": True,
                    "NUM_FILTERS": [64]},
            "MAP_TO_BEV": {"NAME": "PointPillarScatter",
                           "NUM_BEV_FEATURES": 64},
            "BACKBONE_2D": {"NAME": "BaseBEVBackbone",
                            "LAYER_NUMS": [3, 5, 5],
                            "LAYER_STRIDES": [2, 2, 2],
                            "NUM_FILTERS": [64, 128, 256],
                            "UPSAMPLE_STRIDES": [1, 2, 4],
                            "NUM_UPSAMPLE_FILTERS": [128, 128, 128]},
            "DENSE_HEAD": {
                "NAME": "AnchorHeadSingle", "CLASS_AGNOSTIC": False,
                "USE_DIRECTION_CLASSIFIER": True, "DIR_OFFSET": 0.78539,
                "DIR_LIMIT_OFFSET": 0.0, "NUM_DIR_BINS": 2,
                "ANCHOR_GENERATOR_CONFIG": anchors,
                "TARGET_ASSIGNER_CONFIG": {
                    "NAME": "AxisAlignedTargetAssigner",
                    "BOX_CODER": "ResidualCoder"}},
            "POST_PROCESSING": {
                "SCORE_THRESH": 0.1, "OUTPUT_RAW_SCORE": False,
                "NMS_CONFIG": {"MULTI_CLASSES_NMS": False,
                               "NMS_TYPE": "nms_gpu", "NMS_THRESH": 0.01,
                               "NMS_PRE_MAXSIZE": 4096,
                               "NMS_POST_MAXSIZE": 500}}}}
    if tiny:
        cfg["DATA_CONFIG"]["POINT_CLOUD_RANGE"] = [-10.24, -10.24, -3,
                                                   10.24, 10.24, 1]
        cfg["DATA_CONFIG"]["DATA_PROCESSOR"][0].update(
            VOXEL_SIZE=[0.64, 0.64, 4], MAX_POINTS_PER_VOXEL=6,
            MAX_NUMBER_OF_VOXELS={"train": 300, "test": 300})
        cfg["MODEL"]["VFE"]["NUM_FILTERS"] = [8]
        cfg["MODEL"]["BACKBONE_2D"].update(
            LAYER_NUMS=[1, 1, 1], NUM_FILTERS=[8, 12, 16],
            NUM_UPSAMPLE_FILTERS=[6, 6, 6])
    if small:
        cfg["MODEL"]["VFE"]["NUM_FILTERS"] = [8]
        cfg["MODEL"]["MAP_TO_BEV"]["NUM_BEV_FEATURES"] = 8
        cfg["MODEL"]["BACKBONE_2D"].update(
            LAYER_NUMS=[1, 1, 1], NUM_FILTERS=[8, 8, 8],
            NUM_UPSAMPLE_FILTERS=[8, 8, 8])
    return cfg


def mmdet3d_cfg(tiny=False, legacy=True):
    """pointpillars_hv_secfpn_8xb6-160e_kitti-3d-3class.py's model and class
    names."""
    pcr = [0, -39.68, -3, 69.12, 39.68, 1]
    voxel = [0.16, 0.16, 4]
    model = {
        "type": "VoxelNet",
        "data_preprocessor": {
            "type": "Det3DDataPreprocessor", "voxel": True,
            "voxel_layer": {"max_num_points": 32, "point_cloud_range": pcr,
                            "voxel_size": voxel,
                            "max_voxels": (16000, 40000)}},
        "voxel_encoder": {"type": "PillarFeatureNet", "in_channels": 4,
                          "feat_channels": [64], "with_distance": False,
                          "voxel_size": voxel, "point_cloud_range": pcr,
                          "legacy": legacy},
        "middle_encoder": {"type": "PointPillarsScatter", "in_channels": 64,
                           "output_shape": [496, 432]},
        "backbone": {"type": "SECOND", "in_channels": 64,
                     "layer_nums": [3, 5, 5], "layer_strides": [2, 2, 2],
                     "out_channels": [64, 128, 256]},
        "neck": {"type": "SECONDFPN", "in_channels": [64, 128, 256],
                 "upsample_strides": [1, 2, 4],
                 "out_channels": [128, 128, 128]},
        "bbox_head": {
            "type": "Anchor3DHead", "num_classes": 3, "in_channels": 384,
            "feat_channels": 384, "use_direction_classifier": True,
            "assign_per_class": True,
            "anchor_generator": {
                "type": "AlignedAnchor3DRangeGenerator",
                "ranges": [[0, -39.68, -0.6, 69.12, 39.68, -0.6],
                           [0, -39.68, -0.6, 69.12, 39.68, -0.6],
                           [0, -39.68, -1.78, 69.12, 39.68, -1.78]],
                "sizes": [[0.8, 0.6, 1.73], [1.76, 0.6, 1.73],
                          [3.9, 1.6, 1.56]],
                "rotations": [0, 1.57], "reshape_out": False},
            "diff_rad_by_sin": True,
            "bbox_coder": {"type": "DeltaXYZWLHRBBoxCoder"},
            "loss_cls": {"type": "mmdet.FocalLoss", "use_sigmoid": True}},
        "test_cfg": {"use_rotate_nms": True, "nms_across_levels": False,
                     "nms_thr": 0.01, "score_thr": 0.1, "min_bbox_size": 0,
                     "nms_pre": 100, "max_num": 50}}
    if tiny:
        pcr = [-10.24, -10.24, -3, 10.24, 10.24, 1]
        voxel = [0.64, 0.64, 4]
        model["data_preprocessor"]["voxel_layer"].update(
            point_cloud_range=pcr, voxel_size=voxel, max_num_points=6,
            max_voxels=(300, 300))
        model["voxel_encoder"].update(point_cloud_range=pcr,
                                      voxel_size=voxel, feat_channels=[8])
        model["middle_encoder"].update(output_shape=[32, 32], in_channels=8)
        model["backbone"].update(in_channels=8, layer_nums=[1, 1, 1],
                                 out_channels=[8, 12, 16])
        model["neck"].update(in_channels=[8, 12, 16], out_channels=[6, 6, 6])
        model["bbox_head"].update(in_channels=18, feat_channels=18)
        for r in model["bbox_head"]["anchor_generator"]["ranges"]:
            r[0], r[1], r[3], r[4] = -10.24, -10.24, 10.24, 10.24
    return {"class_names": ["Pedestrian", "Cyclist", "Car"], "model": model}


def mmdet3d_config_text(cfg):
    return "".join("%s = %r\n" % (k, v) for k, v in cfg.items())


def write_config(framework, cfg, path):
    if framework == "openpcdet":
        import yaml
        with open(path, "w") as f:
            yaml.safe_dump(cfg, f, sort_keys=False)
    else:
        with open(path, "w") as f:
            f.write(mmdet3d_config_text(cfg))


def read_config(framework, path):
    """(framework cfg, our document) of a config file."""
    if framework == "openpcdet":
        cfg = pcdet_converter.read_cfg(path)
        return cfg, pcdet_converter.config_from_cfg(cfg)
    cfg = mm_converter.read_config(path)
    return cfg, mm_converter.config_from_cfg(cfg)


# ---- the networks, with the frameworks' module names ----------------------

class PFNLayer(nn.Module):
    """Both frameworks' last PFNLayer: linear (no bias), BatchNorm1d, ReLU,
    max over the point slots (empty slots, zero rows, take part)."""

    def __init__(self, in_channels, out_channels, eps):
        super().__init__()
        self.linear = nn.Linear(in_channels, out_channels, bias=False)
        self.norm = nn.BatchNorm1d(out_channels, eps=eps, momentum=0.01)

    def forward(self, x):
        x = self.linear(x)
        x = self.norm(x.permute(0, 2, 1)).permute(0, 2, 1)
        return F.relu(x).max(dim=1).values


class PillarNet(nn.Module):
    """PillarVFE / PillarFeatureNet after the decoration: pfn_layers."""

    def __init__(self, in_channels, out_channels, eps):
        super().__init__()
        self.pfn_layers = nn.ModuleList(
            [PFNLayer(in_channels, out_channels, eps)])

    def forward(self, features):
        return self.pfn_layers[0](features)


def deblock(cin, cout, stride, use_conv, eps):
    transposed, k = pp.base.neck_kernel(stride, use_conv)
    up = nn.ConvTranspose2d(cin, cout, k, stride=k, bias=False) \
        if transposed else nn.Conv2d(cin, cout, k, stride=k, bias=False)
    return nn.Sequential(up, nn.BatchNorm2d(cout, eps=eps, momentum=0.01),
                         nn.ReLU())


class BaseBEVBackbone(nn.Module):
    """OpenPCDet's: blocks of ZeroPad2d, strided conv, BN, ReLU, then
    layer_nums x (conv, BN, ReLU); deblocks; the concatenation."""

    def __init__(self, cin, backbone, neck):
        super().__init__()
        blocks, deblocks = [], []
        for s, out in enumerate(backbone["out_channels"]):
            layers = [nn.ZeroPad2d(1),
                      nn.Conv2d(cin, out, 3, stride=backbone["layer_strides"]
                                [s], padding=0, bias=False),
                      nn.BatchNorm2d(out, eps=1e-3, momentum=0.01), nn.ReLU()]
            for _ in range(backbone["layer_nums"][s]):
                layers += [nn.Conv2d(out, out, 3, padding=1, bias=False),
                           nn.BatchNorm2d(out, eps=1e-3, momentum=0.01),
                           nn.ReLU()]
            blocks.append(nn.Sequential(*layers))
            deblocks.append(deblock(out, neck["out_channels"][s],
                                    neck["upsample_strides"][s],
                                    neck["use_conv_for_no_stride"], 1e-3))
            cin = out
        self.blocks = nn.ModuleList(blocks)
        self.deblocks = nn.ModuleList(deblocks)

    def forward(self, x):
        ups = []
        for block, up in zip(self.blocks, self.deblocks):
            x = block(x)
            ups.append(up(x))
        return torch.cat(ups, dim=1)


class SECOND(nn.Module):
    def __init__(self, cin, backbone):
        super().__init__()
        blocks = []
        eps = backbone["bn_eps"]
        for s, out in enumerate(backbone["out_channels"]):
            layers = [nn.Conv2d(cin, out, 3, stride=backbone["layer_strides"]
                                [s], padding=1, bias=False),
                      nn.BatchNorm2d(out, eps=eps, momentum=0.01), nn.ReLU()]
            for _ in range(backbone["layer_nums"][s]):
                layers += [nn.Conv2d(out, out, 3, padding=1, bias=False),
                           nn.BatchNorm2d(out, eps=eps, momentum=0.01),
                           nn.ReLU()]
            blocks.append(nn.Sequential(*layers))
            cin = out
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x):
        outs = []
        for block in self.blocks:
            x = block(x)
            outs.append(x)
        return outs


class SECONDFPN(nn.Module):
    def __init__(self, cins, neck):
        super().__init__()
        self.deblocks = nn.ModuleList(
            [deblock(cin, out, stride, neck["use_conv_for_no_stride"],
                     neck["bn_eps"])
             for cin, out, stride in zip(cins, neck["out_channels"],
                                         neck["upsample_strides"])])

    def forward(self, xs):
        return torch.cat([d(x) for d, x in zip(self.deblocks, xs)], dim=1)


class AnchorConvs(nn.Module):
    """AnchorHeadSingle's and Anchor3DHead's 1 x 1 convolutions."""

    def __init__(self, cin, anchors, classes, code_size, dir_bins, box_name):
        super().__init__()
        self.box_name = box_name
        self.conv_cls = nn.Conv2d(cin, anchors * classes, 1)
        setattr(self, box_name, nn.Conv2d(cin, anchors * code_size, 1))
        self.conv_dir_cls = nn.Conv2d(cin, anchors * dir_bins, 1) \
            if dir_bins else None

    def forward(self, x):
        return (self.conv_cls(x), getattr(self, self.box_name)(x),
                self.conv_dir_cls(x) if self.conv_dir_cls is not None
                else None)


class PointPillars(nn.Module):
    """The network of either framework, built from our document of its
    config (channel counts, strides) with the framework's names."""

    def __init__(self, framework, doc):
        super().__init__()
        self.framework = framework
        self.doc = doc
        pfn = doc["pfn"]["channels"][0]
        features = pp.FEATURE_CHANNELS[doc["features"]]
        head = doc["head"]
        args = (sum(doc["neck"]["out_channels"]), pp.n_anchors(doc),
                len(head["class_names"]), head["code_size"],
                head["direction"]["bins"] if head["direction"] else 0)
        if framework == "openpcdet":
            self.vfe = PillarNet(features, pfn, 1e-3)
            self.backbone_2d = BaseBEVBackbone(pfn, doc["backbone"],
                                               doc["neck"])
            self.dense_head = AnchorConvs(*args, box_name="conv_box")
        else:
            self.voxel_encoder = PillarNet(features, pfn,
                                           doc["pfn"]["bn_eps"])
            self.backbone = SECOND(pfn, doc["backbone"])
            self.neck = SECONDFPN(doc["backbone"]["out_channels"],
                                  doc["neck"])
            self.bbox_head = AnchorConvs(*args, box_name="conv_reg")

    def pillar_net(self):
        return self.vfe if self.framework == "openpcdet" else \
            self.voxel_encoder

    def encode(self, features, coords, legacy):
        """Pillar vectors of decorated features (pillarfeat's order); for
        mmdetection3d's legacy PillarFeatureNet, x, y, z replaced by the
        centre offsets, as it does."""
        if legacy:
            n = self.doc["point_channels"]
            features = torch.cat([features[:, :, n + 3:n + 6],
                                  features[:, :, 3:]], dim=2)
        return self.pillar_net()(features)

    def scatter(self, vectors, coords):
        nx, ny = self.doc["grid"][0], self.doc["grid"][1]
        inside = ((coords[:, 3] >= 0) & (coords[:, 3] < nx) &
                  (coords[:, 2] >= 0) & (coords[:, 2] < ny))
        canvas = vectors.new_zeros(vectors.shape[1], ny * nx)
        index = (coords[inside, 2] * nx + coords[inside, 3]).long()
        canvas[:, index] = vectors[inside].t()
        return canvas.view(1, -1, ny, nx)

    def forward_bev(self, canvas):
        if self.framework == "openpcdet":
            return self.dense_head(self.backbone_2d(canvas))
        return self.bbox_head(self.neck(self.backbone(canvas)))


# ---- anchors, as the frameworks generate them -----------------------------

def openpcdet_anchors(cfg, device):
    """AnchorGenerator.generate_anchors and the head's concatenation:
    [H W A][7]."""
    head = cfg["MODEL"]["DENSE_HEAD"]
    pcr = cfg["DATA_CONFIG"]["POINT_CLOUD_RANGE"]
    voxel = [p for p in cfg["DATA_CONFIG"]["DATA_PROCESSOR"]
             if p["NAME"] == "transform_points_to_voxels"][0]["VOXEL_SIZE"]
    grid = [int(round((pcr[i + 3] - pcr[i]) / voxel[i])) for i in range(2)]
    sets = []
    for g in head["ANCHOR_GENERATOR_CONFIG"]:
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
        zs = xs.new_tensor(g["anchor_bottom_heights"])
        sizes = xs.new_tensor(g["anchor_sizes"])
        rotations = xs.new_tensor(g["anchor_rotations"])
        X, Y, Z = torch.meshgrid(xs, ys, zs, indexing="ij")
        shape = list(X.shape) + [len(sizes), len(rotations)]
        centre = torch.stack((X, Y, Z), -1)[:, :, :, None, None, :] \
            .expand(*shape, 3)
        size = sizes[None, None, None, :, None, :].expand(*shape, 3)
        rot = rotations[None, None, None, None, :, None].expand(*shape, 1)
        a = torch.cat((centre, size, rot), -1).permute(2, 1, 0, 3, 4, 5) \
            .contiguous()
        a[..., 2] += a[..., 5] / 2  # the bottom to the centre
        sets.append(a)
    return torch.cat(sets, dim=-3).view(-1, 7)


def mmdet3d_anchors(cfg, height, width, device):
    """(Aligned)Anchor3DRangeGenerator.grid_anchors, one level: [H W A][7
    or code_size] (custom values zero), z at the anchors' bottom."""
    head = cfg["model"]["bbox_head"]
    gen = head["anchor_generator"]
    aligned = gen["type"] == "AlignedAnchor3DRangeGenerator"
    scale = gen.get("scales", [1])[0]
    sizes = [[v * scale for v in s] for s in gen.get("sizes")]
    ranges = gen["ranges"]
    if gen.get("size_per_range", True):
        if len(ranges) != len(sizes):
            ranges = ranges * len(sizes)
        pairs = [(r, [s]) for r, s in zip(ranges, sizes)]
    else:
        pairs = [(ranges[0], sizes)]
    rotations = torch.tensor(gen.get("rotations", [0, 1.5707963]),
                             device=device)
    out = []
    for r, s in pairs:
        r = torch.tensor(r, device=device)
        if aligned:
            zs = torch.linspace(r[2], r[5], 2, device=device)
            ys = torch.linspace(r[1], r[4], height + 1, device=device)
            xs = torch.linspace(r[0], r[3], width + 1, device=device)
            if not gen.get("align_corner", False):
                zs = zs + (zs[1] - zs[0]) / 2
                ys = ys + (ys[1] - ys[0]) / 2
                xs = xs + (xs[1] - xs[0]) / 2
            zs, ys, xs = zs[:1], ys[:height], xs[:width]
        else:
            zs = torch.linspace(r[2], r[5], 1, device=device)
            ys = torch.linspace(r[1], r[4], height, device=device)
            xs = torch.linspace(r[0], r[3], width, device=device)
        size = torch.tensor(s, device=device).reshape(-1, 3)
        grids = torch.meshgrid(xs, ys, zs, rotations, indexing="ij")
        grids = [g.unsqueeze(-2).repeat(1, 1, 1, len(size), 1).unsqueeze(-1)
                 for g in grids]
        sz = size.reshape(1, 1, 1, -1, 1, 3).repeat(
            list(grids[0].shape[:3]) + [1, len(rotations), 1])
        grids.insert(3, sz)
        out.append(torch.cat(grids, -1).permute(2, 1, 0, 3, 4, 5))
    anchors = torch.cat(out, dim=-3).reshape(-1, 7)
    code = head.get("bbox_coder", {}).get("code_size", 7)
    if code > 7:
        anchors = torch.cat([anchors, anchors.new_zeros(len(anchors),
                                                        code - 7)], 1)
    return anchors


# ---- decode and post-processing -------------------------------------------

def limit_period(val, offset, period):
    return val - torch.floor(val / period + offset) * period


def residual_decode(deltas, anchors):
    """OpenPCDet's ResidualCoder.decode_torch (no sin-cos angle)."""
    xa, ya, za, dxa, dya, dza, ra, *cas = torch.split(anchors, 1, dim=-1)
    xt, yt, zt, dxt, dyt, dzt, rt, *cts = torch.split(deltas, 1, dim=-1)
    diagonal = torch.sqrt(dxa ** 2 + dya ** 2)
    boxes = [xt * diagonal + xa, yt * diagonal + ya, zt * dza + za,
             torch.exp(dxt) * dxa, torch.exp(dyt) * dya,
             torch.exp(dzt) * dza, rt + ra]
    boxes += [t + a for t, a in zip(cts, cas)]
    return torch.cat(boxes, dim=-1)


def delta_decode(anchors, deltas):
    """mmdetection3d's DeltaXYZWLHRBBoxCoder.decode: z at the bottom."""
    cas, cts = [], []
    if anchors.shape[-1] > 7:
        xa, ya, za, wa, la, ha, ra, *cas = torch.split(anchors, 1, dim=-1)
        xt, yt, zt, wt, lt, ht, rt, *cts = torch.split(deltas, 1, dim=-1)
    else:
        xa, ya, za, wa, la, ha, ra = torch.split(anchors, 1, dim=-1)
        xt, yt, zt, wt, lt, ht, rt = torch.split(deltas, 1, dim=-1)
    za = za + ha / 2
    diagonal = torch.sqrt(la ** 2 + wa ** 2)
    xg, yg, zg = xt * diagonal + xa, yt * diagonal + ya, zt * ha + za
    lg, wg, hg = torch.exp(lt) * la, torch.exp(wt) * wa, torch.exp(ht) * ha
    zg = zg - hg / 2
    return torch.cat([xg, yg, zg, wg, lg, hg, rt + ra] +
                     [t + a for t, a in zip(cts, cas)], dim=-1)


def bev_corners(b):
    """[N][5] (x y dx dy yaw) -> [N][4][2], counter-clockwise from the
    (-dx/2, -dy/2) corner."""
    c, s = torch.cos(b[:, 4:5]), torch.sin(b[:, 4:5])
    u = b.new_tensor([-0.5, 0.5, 0.5, -0.5]) * b[:, 2:3]
    v = b.new_tensor([-0.5, -0.5, 0.5, 0.5]) * b[:, 3:4]
    return torch.stack([b[:, 0:1] + u * c - v * s,
                        b[:, 1:2] + u * s + v * c], dim=-1)


def _inside(points, box, margin):
    """points [N][K][2] strictly inside boxes [N][5] grown by margin."""
    d = points - box[:, None, 0:2]
    c, s = torch.cos(box[:, None, 4]), torch.sin(box[:, None, 4])
    along = d[..., 0] * c + d[..., 1] * s
    across = -d[..., 0] * s + d[..., 1] * c
    return (along.abs() < box[:, None, 2] / 2 + margin) & \
        (across.abs() < box[:, None, 3] / 2 + margin)


def bev_overlap(a, b, margin):
    """Overlap areas of box a [5] with boxes b [N][5], in float64, as mmcv's
    nms3d / OpenPCDet's iou3d_nms compute them: the crossings of the edges
    (strict), the corners of each box inside the other grown by @margin
    (1 cm theirs; a micrometre here gives the exact intersection), sorted
    by angle about their mean, and the polygon's area."""
    n = b.shape[0]
    a = a.double().expand(n, 5)
    b = b.double()
    pa, pb = bev_corners(a), bev_corners(b)
    p0 = pa[:, :, None, :].expand(n, 4, 4, 2)
    p1 = torch.roll(pa, -1, 1)[:, :, None, :].expand(n, 4, 4, 2)
    q0 = pb[:, None, :, :].expand(n, 4, 4, 2)
    q1 = torch.roll(pb, -1, 1)[:, None, :, :].expand(n, 4, 4, 2)

    def cross(o, u, w):
        return (u[..., 0] - o[..., 0]) * (w[..., 1] - o[..., 1]) - \
            (w[..., 0] - o[..., 0]) * (u[..., 1] - o[..., 1])

    d1, d2 = cross(p0, p1, q0), cross(p0, p1, q1)
    d3, d4 = cross(q0, q1, p0), cross(q0, q1, p1)
    hit = (d1 * d2 < 0) & (d3 * d4 < 0)
    t = d1 / torch.where(hit, d1 - d2, torch.ones_like(d1))
    crossing = q0 + t[..., None] * (q1 - q0)
    points = torch.cat([crossing.reshape(n, 16, 2), pb, pa], dim=1)
    valid = torch.cat([hit.reshape(n, 16), _inside(pb, a, margin),
                       _inside(pa, b, margin)], dim=1)
    count = valid.sum(1)
    w = valid.double()[..., None]
    centre = (points * w).sum(1) / count.clamp(min=1)[:, None]
    angle = torch.atan2(points[..., 1] - centre[:, None, 1],
                        points[..., 0] - centre[:, None, 0])
    angle = torch.where(valid, angle, torch.full_like(angle, 10.0))
    order = torch.argsort(angle, dim=1)
    sorted_points = torch.gather(points, 1, order[..., None].expand(n, 24, 2))
    k = torch.arange(24, device=b.device)[None, :]
    nxt = torch.where(k + 1 < count[:, None], k + 1, torch.zeros_like(k))
    following = torch.gather(sorted_points, 1,
                             nxt[..., None].expand(n, 24, 2))
    term = sorted_points[..., 0] * following[..., 1] - \
        following[..., 0] * sorted_points[..., 1]
    term = torch.where(k < count[:, None], term, torch.zeros_like(term))
    area = 0.5 * term.sum(1).abs()
    return torch.where(count >= 3, area, torch.zeros_like(area))


def bev_iou(a, b, rule):
    """IoU of box a [5] with b [N][5]: rule "mmcv" (OpenPCDet's nms_gpu) or
    "exact" (mmcv's nms_rotated)."""
    margin = 0.01 if rule == "mmcv" else 1e-6
    inter = bev_overlap(a, b, margin)
    union = a[2].double() * a[3].double() + b[:, 2].double() * \
        b[:, 3].double() - inter
    if rule == "mmcv":
        union = union.clamp(min=1e-8)
    return torch.where(union > 0, inter / union, torch.zeros_like(inter))


def greedy_nms(boxes, scores, threshold, rule):
    """Indices kept, best score first (a stable sort): a box goes when its
    IoU with a kept one is above the threshold.  boxes [N][5]."""
    order = torch.sort(scores, descending=True, stable=True)[1]
    if rule == "aligned":
        import torchvision
        xyxy = torch.stack([boxes[:, 0] - boxes[:, 2] / 2,
                            boxes[:, 1] - boxes[:, 3] / 2,
                            boxes[:, 0] + boxes[:, 2] / 2,
                            boxes[:, 1] + boxes[:, 3] / 2], dim=1)[order]
    sorted_boxes = boxes[order]
    n = len(order)
    suppressed = np.zeros(n, dtype=bool)
    keep = []
    for i in range(n):
        if suppressed[i]:
            continue
        keep.append(i)
        if i + 1 == n:
            break
        if rule == "aligned":
            iou = torchvision.ops.box_iou(xyxy[i:i + 1].float(),
                                          xyxy[i + 1:].float())[0]
        else:
            iou = bev_iou(sorted_boxes[i], sorted_boxes[i + 1:], rule)
        suppressed[i + 1:] |= (iou > threshold).cpu().numpy()
    return order[torch.tensor(keep, dtype=torch.long, device=boxes.device)]


def openpcdet_detect(cfg, cls, box, direction, anchors):
    """generate_predicted_boxes and post_processing, batch 1: a list of
    (box[7], score, 0-based label).  cls/box/dir are the convs' outputs
    [1][C][H][W]."""
    head = cfg["MODEL"]["DENSE_HEAD"]
    post = cfg["MODEL"]["POST_PROCESSING"]
    nms = post["NMS_CONFIG"]
    n = anchors.shape[0]
    cls = cls.float().permute(0, 2, 3, 1).reshape(n, -1)
    deltas = box.float().permute(0, 2, 3, 1).reshape(n, -1)
    boxes = residual_decode(deltas, anchors)
    if direction is not None:
        dir_labels = torch.max(direction.float().permute(0, 2, 3, 1)
                               .reshape(n, -1), dim=-1)[1]
        period = 2 * np.pi / head["NUM_DIR_BINS"]
        rot = limit_period(boxes[..., 6] - head["DIR_OFFSET"],
                           head["DIR_LIMIT_OFFSET"], period)
        boxes[..., 6] = rot + head["DIR_OFFSET"] + \
            period * dir_labels.to(boxes.dtype)
    scores_all = torch.sigmoid(cls)
    rule = {"nms_gpu": "mmcv", "nms_normal_gpu": "aligned"}[nms["NMS_TYPE"]]

    def select(scores, candidates):
        mask = scores >= post["SCORE_THRESH"]
        index = torch.nonzero(mask).view(-1)
        if len(index) == 0:
            return index
        s = scores[index]
        # topk, ties by index (a stable sort)
        top = torch.sort(s, descending=True, stable=True)[1][
            :min(nms["NMS_PRE_MAXSIZE"], len(s))]
        index, s = index[top], s[top]
        keep = greedy_nms(candidates[index][:, [0, 1, 3, 4, 6]], s,
                          nms["NMS_THRESH"], rule)
        return index[keep[:nms["NMS_POST_MAXSIZE"]]]

    rows = []
    if nms["MULTI_CLASSES_NMS"]:
        for k in range(scores_all.shape[1]):
            for i in select(scores_all[:, k], boxes).tolist():
                rows.append((boxes[i, :7].tolist(),
                             float(scores_all[i, k]), k))
    else:
        scores, labels = torch.max(scores_all, dim=-1)
        for i in select(scores, boxes).tolist():
            rows.append((boxes[i, :7].tolist(), float(scores[i]),
                         int(labels[i])))
    return rows


def mmdet3d_detect(cfg, cls, box, direction, anchors):
    """Anchor3DHead._predict_by_feat_single, batch 1, z turned to the
    centre."""
    head = cfg["model"]["bbox_head"]
    test = cfg["model"]["test_cfg"]
    classes = head["num_classes"]
    code = head.get("bbox_coder", {}).get("code_size", 7)
    cls = cls[0].float().permute(1, 2, 0).reshape(-1, classes)
    deltas = box[0].float().permute(1, 2, 0).reshape(-1, code)
    dir_scores = torch.max(direction[0].float().permute(1, 2, 0)
                           .reshape(-1, 2), dim=-1)[1]
    scores = cls.sigmoid()
    nms_pre = test.get("nms_pre", -1)
    if 0 < nms_pre < scores.shape[0]:
        max_scores = scores.max(dim=1)[0]
        top = torch.sort(max_scores, descending=True, stable=True)[1][
            :nms_pre]
        anchors, deltas = anchors[top], deltas[top]
        scores, dir_scores = scores[top], dir_scores[top]
    boxes = delta_decode(anchors, deltas)
    bev = boxes[:, [0, 1, 3, 4, 6]]
    # xywhr -> xyxyr -> xywhr, as nms_bev sees the boxes
    x1, x2 = bev[:, 0] - bev[:, 2] / 2, bev[:, 0] + bev[:, 2] / 2
    y1, y2 = bev[:, 1] - bev[:, 3] / 2, bev[:, 1] + bev[:, 3] / 2
    round_trip = torch.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1,
                              y2 - y1, bev[:, 4]], dim=1)
    rule = "exact" if test.get("use_rotate_nms", True) else "aligned"
    picked = []
    for i in range(classes):
        index = torch.nonzero(scores[:, i] > test["score_thr"]).view(-1)
        if len(index) == 0:
            continue
        keep = greedy_nms(round_trip[index] if rule == "exact" else
                          bev[index], scores[index, i], test["nms_thr"], rule)
        picked += [(int(j), float(scores[j, i]), i)
                   for j in index[keep].tolist()]
    if len(picked) > test["max_num"]:
        order = sorted(range(len(picked)), key=lambda k: -picked[k][1])
        picked = [picked[k] for k in order[:test["max_num"]]]
    offset = head.get("dir_offset", -np.pi / 2)
    limit = head.get("dir_limit_offset", 0)
    rows = []
    for j, score, label in picked:
        b = boxes[j].clone()
        if head.get("use_direction_classifier", True):
            rot = limit_period(b[6:7] - offset, limit, np.pi)
            b[6:7] = rot + offset + np.pi * dir_scores[j:j + 1].to(b.dtype)
        b[2] = b[2] + b[5] / 2  # gravity centre
        rows.append((b[:7].tolist(), score, label))
    return rows


def detect(framework, cfg, heads, anchors):
    cls, box, direction = heads
    if framework == "openpcdet":
        return openpcdet_detect(cfg, cls, box, direction, anchors)
    return mmdet3d_detect(cfg, cls, box, direction, anchors)


def make_anchors(framework, cfg, heads, device):
    height, width = heads[0].shape[2], heads[0].shape[3]
    if framework == "openpcdet":
        return openpcdet_anchors(cfg, device)
    return mmdet3d_anchors(cfg, height, width, device)


# ---- weights ----------------------------------------------------------------

@torch.no_grad()
def random_model(framework, doc, cfg, features, coords, seed, hit_rate,
                 device, legacy):
    """Random weights that behave like trained ones (see init)."""
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = PointPillars(framework, doc)
    for module in model.modules():
        if isinstance(module, (nn.Conv2d, nn.ConvTranspose2d, nn.Linear)):
            nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
        elif isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d)):
            n = module.num_features
            sign = torch.where(torch.rand(n, generator=generator) < 0.05,
                               -1.0, 1.0)
            module.weight.copy_(sign * (0.4 + torch.rand(
                n, generator=generator)))
            module.bias.copy_(0.3 * torch.randn(n, generator=generator))
    head = model.dense_head if framework == "openpcdet" else model.bbox_head
    box = getattr(head, head.box_name)
    # deltas of a tenth of an anchor's size, yaw within half a radian
    box.weight.mul_(0.02)
    box.bias.copy_(0.1 * torch.randn(box.bias.shape, generator=generator))
    head.conv_cls.weight.mul_(0.5)
    model.to(device)

    def canvas_of():
        vectors = model.encode(features.to(device), coords.to(device), legacy)
        return model.scatter(vectors, coords.to(device))

    for module in model.modules():
        if isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d)):
            module.reset_running_stats()
            module.momentum = None
    model.train()
    model.forward_bev(canvas_of())
    model.eval()
    for module in model.modules():
        if isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d)):
            n = module.num_features
            std = module.running_var.sqrt()
            module.running_mean.add_(0.2 * std * torch.randn(
                n, generator=generator).to(device))
            module.running_var.mul_(torch.exp(0.4 * (torch.rand(
                n, generator=generator) - 0.5)).to(device))
            module.momentum = 0.01
    # the class biases: each (anchor, class) channel its share above the
    # threshold on the calibration input
    threshold = doc["post"]["score_threshold"]
    logit = math.log(threshold / (1 - threshold))
    cls = model.forward_bev(canvas_of())[0][0]
    shares = []
    for c in range(cls.shape[0]):
        share = hit_rate * math.exp(math.log(10) * (torch.rand(
            1, generator=generator).item() - 0.5))
        raw = (cls[c] - head.conv_cls.bias[c]).flatten().float()
        cut = torch.quantile(raw, 1 - share)
        head.conv_cls.bias[c] = logit - cut + 1e-3
        shares.append(share)
    return model, shares


def save_checkpoint(framework, model, cfg, directory):
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    path = os.path.join(directory, "checkpoint.pth")
    if framework == "openpcdet":
        config = os.path.join(directory, "config.yaml")
        torch.save({"model_state": state, "epoch": 0,
                    "version": "pcdet+reference"}, path)
    else:
        config = os.path.join(directory, "config.py")
        torch.save({"state_dict": state,
                    "meta": {"cfg": mmdet3d_config_text(cfg)}}, path)
    write_config(framework, cfg, config)
    return path, config


def convert(framework, checkpoint, config, weights):
    if framework == "openpcdet":
        doc = pcdet_converter.build_config(config)
        return pcdet_converter.convert(checkpoint, weights, doc)
    doc = mm_converter.build_config(config)
    state, _ = mm_converter.load_checkpoint(checkpoint)
    return mm_converter.convert(state, weights, doc)


def load_model(framework, checkpoint, config_path, device):
    cfg, doc = read_config(framework, config_path)
    model = PointPillars(framework, doc)
    loaded = torch.load(checkpoint, map_location="cpu", weights_only=False)
    state = loaded["model_state" if framework == "openpcdet" else
                   "state_dict"]
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if not m.endswith("num_batches_tracked")]
    if missing or unexpected:
        raise SystemExit("%s: missing %s, unexpected %s" %
                         (checkpoint, missing[:5], unexpected[:5]))
    legacy = framework == "mmdet3d" and \
        cfg["model"]["voxel_encoder"].get("legacy", True)
    return model.to(device).eval(), cfg, doc, legacy


# ---- commands ----------------------------------------------------------------

def command_init(args):
    device = torch.device(args.device)
    if args.small and args.framework != "openpcdet":
        raise SystemExit("--small is OpenPCDet's pointpillar.yaml with few "
                         "channels")
    cfg = openpcdet_cfg(small=args.small) if args.framework == "openpcdet" \
        else mmdet3d_cfg()
    os.makedirs(args.output, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        write_config(args.framework, cfg, os.path.join(tmp, "c"))
        _, doc = read_config(args.framework, os.path.join(tmp, "c"))
    generator = torch.Generator().manual_seed(args.seed + 1)
    if args.calibrate:
        features, coords, _ = cp.read_pillars(args.calibrate, doc, 0)
        features, coords = torch.from_numpy(features), \
            torch.from_numpy(coords)
    else:
        features, coords = cp.synthetic_pillars(doc, generator)
    legacy = args.framework == "mmdet3d"
    model, shares = random_model(args.framework, doc, cfg, features, coords,
                                 args.seed, args.hit_rate, device, legacy)
    checkpoint, config = save_checkpoint(args.framework, model, cfg,
                                         args.output)
    weights = os.path.join(args.output, "model.safetensors")
    count = convert(args.framework, checkpoint, config, weights)
    print("saved %s and %s (%d tensors; class shares above the threshold "
          "%.4f..%.4f), converted to %s" % (checkpoint, config,
                                            len(model.state_dict()),
                                            min(shares), max(shares),
                                            weights))
    return 0 if count else 1


def command_run(args):
    device = torch.device(args.device)
    model, cfg, doc, legacy = load_model(args.framework, args.checkpoint,
                                         args.config, device)
    os.makedirs(args.output, exist_ok=True)
    with torch.no_grad():
        features, coords, fmt = cp.read_pillars(args.pillars, doc, args.frame)
        features = torch.from_numpy(features).to(device)
        coords = torch.from_numpy(coords).to(device)
        canvas = model.scatter(model.encode(features, coords, legacy), coords)
        canvas.float().cpu().numpy().astype("<f4").tofile(
            os.path.join(args.output, "canvas.f32"))
        if args.half:
            model = model.half().to(memory_format=torch.channels_last)
            canvas = canvas.half().contiguous(
                memory_format=torch.channels_last)
        heads = model.forward_bev(canvas)
    table, offset = [], 0
    with open(os.path.join(args.output, "heads.f32"), "wb") as f:
        for name, h in zip(("cls", "box", "dir"), heads):
            if h is None:
                continue
            data = h[0].float().cpu().contiguous().numpy()
            f.write(data.astype("<f4").tobytes())
            table.append({"head": name, "offset": offset,
                          "shape": list(data.shape)})
            offset += data.size
    with open(os.path.join(args.output, "heads.json"), "w") as f:
        json.dump(table, f, indent=1)
    anchors = make_anchors(args.framework, cfg, heads, device)
    with torch.no_grad():
        rows = detect(args.framework, cfg, [h.float() if h is not None
                                            else None for h in heads],
                      anchors)
    cp.write_jsonl(os.path.join(args.output, "boxes.jsonl"), rows)
    threshold = doc["post"]["score_threshold"]
    above = int((heads[0].float().sigmoid() >= threshold).sum())
    print("pillars: %d (%s input); (anchor, class) pairs at or above %g: %d "
          "of %d; %d boxes kept; written to %s" % (
              len(features), fmt, threshold, above, heads[0].numel(),
              len(rows), args.output))
    return 0


def tiny_pillars(doc, seed):
    return cp.synthetic_pillars(doc, torch.Generator().manual_seed(seed),
                                count=200)


@torch.no_grad()
def command_self_test(args):
    device = torch.device(args.device)
    pi = math.pi

    # 1. anchors: both frameworks' generators against the placement rules
    # the C table uses, on KITTI's map
    cfg = openpcdet_cfg()
    anchors = openpcdet_anchors(cfg, device).cpu().double()
    check(anchors.shape == (248 * 216 * 6, 7), "OpenPCDet: 6 anchors at "
          "each of 248 x 216 locations")
    a = anchors.view(248, 216, 6, 7)
    check(abs(a[0, 0, 0, 0]) < 1e-7 and abs(a[0, 215, 0, 0] - 69.12) < 1e-4
          and abs(a[247, 0, 0, 1] - 39.68) < 1e-4,
          "OpenPCDet: the span's first and last anchors on the range's ends")
    check(abs(a[3, 100, 0, 0] - 100 * 69.12 / 215) < 1e-5 and
          abs(a[3, 100, 0, 2] - (-1.78 + 1.56 / 2)) < 1e-6 and
          abs(a[3, 100, 1, 6] - 1.57) < 1e-7 and
          abs(a[3, 100, 2, 3] - 0.8) < 1e-7 and
          abs(a[3, 100, 5, 3] - 1.76) < 1e-7,
          "OpenPCDet: positions, centre z and the order class, rotation")
    mcfg = mmdet3d_cfg()
    m = mmdet3d_anchors(mcfg, 248, 216, device).cpu().double().view(
        248, 216, 6, 7)
    check(abs(m[0, 0, 0, 0] - 0.16) < 1e-6 and
          abs(m[10, 7, 0, 0] - (7.5 * 0.32)) < 1e-5 and
          abs(m[10, 7, 0, 1] - (-39.68 + 10.5 * 0.32)) < 1e-5,
          "mmdetection3d: the centres of 0.32 m cells")
    check(abs(m[0, 0, 4, 2] - -1.78) < 1e-6 and abs(m[0, 0, 4, 3] - 3.9) <
          1e-6 and abs(m[0, 0, 0, 3] - 0.8) < 1e-6,
          "mmdetection3d: z at the bottom, the Car set last")

    # 2. one anchor's box: the C test's case (anchor 3 x 4 x 2 standing on
    # -1 at (0, 1), yaw 1.5; deltas 0.5 -0.2 0.25 ln2 0 -ln2 0.3)
    anchor = torch.tensor([[0.0, 1.0, 0.0, 3.0, 4.0, 2.0, 1.5]])
    deltas = torch.tensor([[0.5, -0.2, 0.25, math.log(2), 0.0,
                            -math.log(2), 0.3]])
    box = residual_decode(deltas, anchor)[0]
    check(torch.allclose(box, torch.tensor([2.5, 0.0, 0.5, 6.0, 4.0, 1.0,
                                            1.8]), atol=1e-5),
          "OpenPCDet decode of one anchor %s" % box.tolist())
    bottom = anchor.clone()
    bottom[0, 2] = -1.0
    mbox = delta_decode(bottom, deltas)[0]
    check(abs(float(mbox[2]) - 0.0) < 1e-6 and abs(float(mbox[2] + mbox[5] /
                                                          2) - 0.5) < 1e-6,
          "mmdetection3d decode: bottom 0, centre 0.5")
    r = torch.tensor([1.8])
    check(abs(float(limit_period(r - 0.78539, 0, pi) + 0.78539) - 1.8) <
          1e-6, "OpenPCDet direction bin 0 keeps 1.8")
    check(abs(float(limit_period(r + pi / 2, 0, pi) - pi / 2) -
              (1.8 - pi)) < 1e-6,
          "mmdetection3d direction bin 0 gives 1.8 - pi")
    edge = torch.tensor([pi / 2, pi / 2 - 1e-5])
    folded = limit_period(edge, 0.5, pi)
    check(abs(float(folded[0]) + pi / 2) < 1e-5 and
          abs(float(folded[1]) - (pi / 2 - 1e-5)) < 1e-6,
          "limit_period at the boundary: pi/2 folds, just below stays")

    # 3. overlaps
    unit = torch.tensor([0.0, 0.0, 2.0, 2.0, 0.0])
    cases = torch.tensor([[0.0, 0.0, 2.0, 2.0, 0.0],
                          [1.0, 0.0, 2.0, 2.0, 0.0],
                          [0.0, 0.0, 2.0, 2.0, pi / 4],
                          [5.0, 0.0, 2.0, 1.0, 0.3],
                          [2.005, 0.0, 2.0, 2.0, 0.0]])
    exact = bev_iou(unit, cases, "exact")
    mmcv = bev_iou(unit, cases, "mmcv")
    overlap = 8 * (math.sqrt(2) - 1)
    check(abs(float(exact[0]) - 1) < 1e-9 and
          abs(float(exact[1]) - 1 / 3) < 1e-9 and
          abs(float(exact[2]) - overlap / (8 - overlap)) < 1e-9 and
          float(exact[3]) == 0 and float(exact[4]) == 0,
          "exact IoU of known rectangles %s" % exact.tolist())
    check(float(mmcv[4]) > 0 and abs(float(mmcv[1]) - 1 / 3) < 1e-9,
          "mmcv's rule: boxes 5 mm apart overlap (%.4f)" % float(mmcv[4]))
    g = torch.Generator().manual_seed(3)
    boxes = torch.cat([torch.rand(200, 2, generator=g) * 4,
                       0.5 + torch.rand(200, 2, generator=g) * 3,
                       (torch.rand(200, 1, generator=g) - 0.5) * 7], dim=1)
    ours = bev_iou(boxes[0], boxes[1:], "exact")
    theirs = [cp.bev_iou(boxes[0].tolist(), b.tolist()) for b in boxes[1:]]
    worst = max(abs(float(x) - y) for x, y in zip(ours, theirs))
    check(worst < 1e-6 and sum(1 for y in theirs if y > 0) > 20,
          "exact IoU against polygon clipping on 199 pairs (worst %.2g)" %
          worst)

    # 4. the converters' round trip, and the legacy PFN folded
    for framework in ("openpcdet", "mmdet3d"):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = openpcdet_cfg(True) if framework == "openpcdet" else \
                mmdet3d_cfg(True)
            write_config(framework, cfg, os.path.join(tmp, "c"))
            _, doc = read_config(framework, os.path.join(tmp, "c"))
            features, coords = tiny_pillars(doc, 5)
            legacy = framework == "mmdet3d"
            model, _ = random_model(framework, doc, cfg, features, coords, 3,
                                    0.05, device, legacy)
            checkpoint, config = save_checkpoint(framework, model, cfg, tmp)
            weights = os.path.join(tmp, "m.safetensors")
            convert(framework, checkpoint, config, weights)
            written, tensors = pp.read(weights)
            expected = {k: v.cpu() for k, v in model.state_dict().items()
                        if not k.endswith("num_batches_tracked")}
            check(set(tensors) == set(expected),
                  "%s: every tensor written, no other" % framework)
            pfn = doc["tensors"]["pfn"] + ".linear.weight"
            same = all(np.array_equal(np.frombuffer(
                tensors[k][2], "<f4").reshape(tensors[k][1]), v.numpy())
                for k, v in expected.items() if k != pfn)
            check(same, "%s: the tensors bit for bit" % framework)
            check(written["framework"] == framework and
                  written["features"] == "pointpillars-10",
                  "%s: the document" % framework)
            w = torch.from_numpy(np.frombuffer(tensors[pfn][2], "<f4")
                                 .reshape(tensors[pfn][1]).copy())
            ours = F.linear(features, w)
            theirs = model.pillar_net().pfn_layers[0].linear(
                model_features(model, features, legacy).to(device)).cpu()
            check(torch.allclose(ours, theirs.float(), atol=1e-4, rtol=1e-5),
                  "%s: the PFN weight on pointpillars-10 features computes "
                  "the framework's sums%s" % (framework, " (legacy folded)"
                                              if legacy else ""))

    # 5. the pillar reader and a whole tiny run through both detections
    with tempfile.TemporaryDirectory() as tmp:
        for framework in ("openpcdet", "mmdet3d"):
            cfg = openpcdet_cfg(True) if framework == "openpcdet" else \
                mmdet3d_cfg(True)
            write_config(framework, cfg, os.path.join(tmp, "c"))
            _, doc = read_config(framework, os.path.join(tmp, "c"))
            features, coords = tiny_pillars(doc, 9)
            model, _ = random_model(framework, doc, cfg, features, coords, 4,
                                    0.1, device, framework == "mmdet3d")
            canvas = model.scatter(model.encode(
                features.to(device), coords.to(device),
                framework == "mmdet3d"), coords.to(device))
            heads = model.forward_bev(canvas)
            rows = detect(framework, cfg, heads, make_anchors(
                framework, cfg, heads, device))
            check(len(rows) > 0 and all(math.isfinite(v) for b, _, _ in rows
                                        for v in b),
                  "%s: a tiny frame gives %d finite boxes" % (framework,
                                                              len(rows)))
    print("%d failures" % check.failures)
    return 1 if check.failures else 0


def model_features(model, features, legacy):
    """What the framework's linear layer reads for pillarfeat's features."""
    if not legacy:
        return features
    n = model.doc["point_channels"]
    return torch.cat([features[:, :, n + 3:n + 6], features[:, :, 3:]], 2)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    sub = parser.add_subparsers(dest="command", required=True)
    default_device = "cuda" if torch.cuda.is_available() else "cpu"
    p = sub.add_parser("self-test")
    p.add_argument("--device", default="cpu")
    p = sub.add_parser("init")
    p.add_argument("--framework", choices=pp.FRAMEWORKS, required=True)
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--calibrate")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hit-rate", type=float, default=0.002)
    p.add_argument("--small", action="store_true",
                   help="pointpillar.yaml's grid, 8 channels everywhere")
    p.add_argument("--device", default=default_device)
    p = sub.add_parser("run")
    p.add_argument("--framework", choices=pp.FRAMEWORKS, required=True)
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--pillars", required=True)
    p.add_argument("--frame", type=int, default=0)
    p.add_argument("--half", action="store_true")
    p.add_argument("--device", default=default_device)
    p.add_argument("-o", "--output", required=True)
    p = sub.add_parser("compare")
    p.add_argument("--reference", required=True)
    p.add_argument("--ours", required=True)
    p.add_argument("--frame", type=int, default=0)
    p.add_argument("--center-tol", type=float, default=1e-4)
    p.add_argument("--size-tol", type=float, default=1e-4)
    p.add_argument("--yaw-tol", type=float, default=1e-4)
    p.add_argument("--score-tol", type=float, default=1e-5)
    p.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if getattr(args, "device", "cpu").startswith("cuda"):
        torch.backends.cudnn.deterministic = True
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    return {"self-test": command_self_test, "init": command_init,
            "run": command_run,
            "compare": cp.command_compare}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
