#!/usr/bin/env python3
"""Writes a tiny BEVDet model of random weights as a weights file of ours
(docs/weights.md), for trying the camera chain (camencode ! bevpool !
bevdetect) without PyTorch or a checkpoint: a ResNet-18 of 4 base channels,
an FPNForBEVDet of 16, 25 depth bins and 8 context channels, a 128 x 128
BEV grid of 0.8 m, a small ResNetForBEVDet and FPN_LSS, and a CenterHead of
one task (car, pedestrian, cyclist). Its cameras are those of
examples/data/rig-nuscenes-704x256.json, whose 704 x 256 images it takes as
they are (input size = source size, no test-time resize).

Random weights detect nothing real: the model is for running pipelines,
not for results (the tutorial's section 15 says how to make a calibrated
BEVDet-R50 with tests/reference/bevdet_torch.py).

    examples/make-camera-model.py OUT.safetensors [--seed N]

Plain Python 3: no numpy, no torch. It prints the bevpool properties that
go with the model.
"""
import argparse
import json
import math
import random
import struct

CAMERAS = ["CAM_FRONT", "CAM_FRONT_RIGHT", "CAM_FRONT_LEFT", "CAM_BACK",
           "CAM_BACK_LEFT", "CAM_BACK_RIGHT"]
BASE = 4                # ResNet-18 base channels: stages 4, 8, 16, 32
FPN = 16
DEPTH_BINS = 25         # dbound [1, 51, 2]
CONTEXT = 8
BEV = [8, 16, 32]
LSS = 8
SHARE = 8
HEAD_CONV = 8
CLASSES = ["car", "pedestrian", "cyclist"]
GRID = "xbound=\"<-51.2,51.2,0.8>\" ybound=\"<-51.2,51.2,0.8>\" " \
       "zbound=\"<-10,10,20>\" dbound=\"<1,51,2>\""


class Model:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.tensors = []

    def add(self, name, shape, lo, hi):
        count = 1
        for d in shape:
            count *= d
        self.tensors.append((name, shape,
                             [self.rng.uniform(lo, hi) for _ in range(count)]))

    def conv(self, name, out, inp, k):
        bound = 1.0 / math.sqrt(inp * k * k)
        self.add(name, [out, inp, k, k], -bound, bound)

    def bias(self, name, n, lo=-0.1, hi=0.1):
        self.add(name, [n], lo, hi)

    def norm(self, prefix, n):
        self.add(prefix + ".weight", [n], 0.8, 1.2)
        self.add(prefix + ".bias", [n], -0.1, 0.1)
        self.add(prefix + ".running_mean", [n], -0.1, 0.1)
        self.add(prefix + ".running_var", [n], 0.5, 1.5)

    def basic_block(self, prefix, inp, out, shortcut):
        """mmdet's BasicBlock (ResNet) or ResNetForBEVDet's."""
        self.conv(prefix + ".conv1.weight", out, inp, 3)
        self.norm(prefix + ".bn1", out)
        self.conv(prefix + ".conv2.weight", out, out, 3)
        self.norm(prefix + ".bn2", out)
        if shortcut == "resnet":
            self.conv(prefix + ".downsample.0.weight", out, inp, 1)
            self.norm(prefix + ".downsample.1", out)
        elif shortcut == "bev":
            self.conv(prefix + ".downsample.weight", out, inp, 3)
            self.bias(prefix + ".downsample.bias", out)

    def write(self, path, config):
        header, data, offset = {}, [], 0
        for name, shape, values in self.tensors:
            raw = struct.pack("<%df" % len(values), *values)
            header[name] = {"dtype": "F32", "shape": shape,
                            "data_offsets": [offset, offset + len(raw)]}
            data.append(raw)
            offset += len(raw)
        header["__metadata__"] = {"p3d.model": json.dumps(config)}
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for raw in data:
                f.write(raw)


def build(seed):
    m = Model(seed)
    m.conv("img_backbone.conv1.weight", BASE, 3, 7)
    m.norm("img_backbone.bn1", BASE)
    inp = BASE
    stages = []
    for s in range(4):
        out = BASE << s
        for k in range(2):
            shortcut = "resnet" if k == 0 and inp != out else None
            m.basic_block("img_backbone.layer%d.%d" % (s + 1, k), inp, out,
                          shortcut)
            inp = out
        stages.append(out)
    for s in range(2):
        m.conv("img_neck.lateral_convs.%d.conv.weight" % s, FPN,
               stages[2 + s], 1)
        m.bias("img_neck.lateral_convs.%d.conv.bias" % s, FPN)
    m.conv("img_neck.fpn_convs.0.conv.weight", FPN, FPN, 3)
    m.bias("img_neck.fpn_convs.0.conv.bias", FPN)
    m.conv("img_view_transformer.depthnet.weight", DEPTH_BINS + CONTEXT, FPN,
           1)
    m.bias("img_view_transformer.depthnet.bias", DEPTH_BINS + CONTEXT)
    inp = CONTEXT
    for s, out in enumerate(BEV):
        m.basic_block("img_bev_encoder_backbone.layers.%d.0" % s, inp, out,
                      "bev")
        inp = out
    lss_in = BEV[0] + BEV[2]
    m.conv("img_bev_encoder_neck.conv.0.weight", 2 * LSS, lss_in, 3)
    m.norm("img_bev_encoder_neck.conv.1", 2 * LSS)
    m.conv("img_bev_encoder_neck.conv.3.weight", 2 * LSS, 2 * LSS, 3)
    m.norm("img_bev_encoder_neck.conv.4", 2 * LSS)
    m.conv("img_bev_encoder_neck.up2.1.weight", LSS, 2 * LSS, 3)
    m.norm("img_bev_encoder_neck.up2.2", LSS)
    m.conv("img_bev_encoder_neck.up2.4.weight", LSS, LSS, 1)
    m.bias("img_bev_encoder_neck.up2.4.bias", LSS)
    m.conv("pts_bbox_head.shared_conv.conv.weight", SHARE, LSS, 3)
    m.norm("pts_bbox_head.shared_conv.bn", SHARE)
    for head, n in [("reg", 2), ("height", 1), ("dim", 3), ("rot", 2),
                    ("heatmap", len(CLASSES))]:
        prefix = "pts_bbox_head.task_heads.0." + head
        m.conv(prefix + ".0.conv.weight", HEAD_CONV, SHARE, 3)
        m.norm(prefix + ".0.bn", HEAD_CONV)
        m.conv(prefix + ".1.weight", n, HEAD_CONV, 3)
        # heatmap logits near the 0.1 score threshold, so that some cells
        # pass it and the decode has boxes to make
        if head == "heatmap":
            m.bias(prefix + ".1.bias", n, -2.4, -1.8)
        else:
            m.bias(prefix + ".1.bias", n)
    return m


def config():
    return {
        "architecture": "bevdet", "version": 1,
        "data_config": {"cams": CAMERAS, "Ncams": len(CAMERAS),
                        "input_size": [256, 704], "src_size": [256, 704],
                        "resize_test": 0.0, "crop_h": [0.0, 0.0],
                        "mean": [0.485, 0.456, 0.406],
                        "std": [0.229, 0.224, 0.225],
                        "resize": [0.0, 0.0], "rot": [0.0, 0.0],
                        "flip": False},
        "grid_config": {"xbound": [-51.2, 51.2, 0.8],
                        "ybound": [-51.2, 51.2, 0.8],
                        "zbound": [-10.0, 10.0, 20.0],
                        "dbound": [1.0, 51.0, 2.0]},
        "img_backbone": {"type": "ResNet", "depth": 18, "num_stages": 4,
                         "out_indices": [2, 3], "style": "pytorch",
                         "base_channels": BASE},
        "img_neck": {"type": "FPNForBEVDet", "in_channels": [4 * BASE, 8 * BASE],
                     "out_channels": FPN, "num_outs": 1, "start_level": 0,
                     "out_ids": [0]},
        "img_view_transformer": {"type": "ViewTransformerLiftSplatShoot",
                                 "numC_input": FPN, "numC_Trans": CONTEXT,
                                 "downsample": 16},
        "img_bev_encoder_backbone": {"type": "ResNetForBEVDet",
                                     "numC_input": CONTEXT,
                                     "num_layer": [1, 1, 1],
                                     "num_channels": BEV,
                                     "stride": [2, 2, 2],
                                     "block_type": "Basic"},
        "img_bev_encoder_neck": {"type": "FPN_LSS",
                                 "in_channels": BEV[0] + BEV[2],
                                 "out_channels": LSS},
        "head": {"share_conv_channel": SHARE, "head_conv": HEAD_CONV,
                 "final_kernel": 3, "bn_eps": 1e-5,
                 "tasks": [{"class_names": CLASSES}],
                 "common_heads": {"reg": 2, "height": 1, "dim": 3, "rot": 2},
                 "norm_bbox": True},
        "coder": {"post_center_range": [-61.2, -61.2, -10.0, 61.2, 61.2, 10.0],
                  "max_num": 100, "score_threshold": 0.1,
                  "out_size_factor": 8, "voxel_size": [0.1, 0.1],
                  "pc_range": [-51.2, -51.2]},
        "test_nms": {"nms_type": ["rotate"], "nms_thr": [0.2],
                     "nms_rescale_factor": [[1.0, 1.0, 1.0]],
                     "min_radius": [4], "pre_max_size": 500,
                     "post_max_size": 83},
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    build(args.seed).write(args.out, config())
    print("bevpool properties for this model: image-width=704 "
          "image-height=256 " + GRID)


if __name__ == "__main__":
    main()
