#!/usr/bin/env python3
"""Convert an mmdetection3d PointPillars checkpoint to the weights file that
gst-perception's pillarencode and bevdetect read (docs/weights.md, "PointPillars").

    python3 tools/convert_mmdet3d_pointpillars.py CHECKPOINT.pth -o model.safetensors \\
        [--config configs/pointpillars/pointpillars_hv_secfpn_8xb6-160e_kitti-3d-3class.py] \\
        [--set KEY=JSON ...] [--keep-dtype]

CHECKPOINT.pth: a checkpoint saved by mmdetection3d 1.x (a dict holding
'state_dict', and usually 'meta' with the config's text) or a torch.save
of the state_dict itself, of a VoxelNet (or MVXFasterRCNN's lidar half)
built of PillarFeatureNet (one PFN layer), PointPillarsScatter, SECOND,
SECONDFPN and Anchor3DHead with the DeltaXYZWLHRBBoxCoder, in
mmdetection3d's 1.x box conventions (yaw counter-clockwise from x, sizes
x, y, z).

The config: --config, an mmdetection3d config file (Python; its _base_
files are read relative to it and merged, _delete_ honoured; it is
executed, so give only a file you trust); else the config text the
checkpoint's 'meta' holds; else the values of
pointpillars_hv_secfpn_8xb6-160e_kitti-3d-3class.py.  The class names are
the config's class_names (or metainfo classes).  --set values override the
document (e.g. --set post.post_max=100).

mmdetection3d's PillarFeatureNet with legacy=True (its default) writes the
points' offsets from the pillar centre over their x, y, z before its
linear layer; the converter folds that into the layer's weight, so that
pillarfeat's pointpillars-10 features give the same sums (the weight
under the same name, rewritten; pointpillars_weights.fold_pfn_weight).
test_cfg's min_bbox_size and nms_across_levels are not read by
mmdetection3d's Anchor3DHead; a non-zero min_bbox_size is reported and
ignored, as there.

`--self-test` checks the config reading and the tensor rules without torch.
"""

import argparse
import copy
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pointpillars_weights as pp  # noqa: E402

ConversionError = pp.ConversionError

DATA_TYPES = (dict, list, tuple, str, int, float, bool, type(None))


def merge_cfg(base, override):
    """mmengine's merge: dicts recursively, _delete_=True replaces."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and value.get("_delete_", False):
            out[key] = {k: v for k, v in value.items() if k != "_delete_"}
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_cfg(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def exec_config(text, path):
    """The top-level data of a config file's text."""
    if "read_base" in text or "{{" in text:
        raise ConversionError("%s uses mmengine's new-style or {{ }} syntax: "
                              "give the checkpoint's config text or a plain "
                              "file" % path)
    namespace = {}
    try:
        exec(compile(text, path, "exec"), {"__file__": path}, namespace)
    except Exception as e:
        raise ConversionError("%s: %s" % (path, e))
    return {k: v for k, v in namespace.items()
            if not k.startswith("__") and isinstance(v, DATA_TYPES)}


def read_config(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise ConversionError("%s: %s" % (path, e))
    own = exec_config(text, path)
    bases = own.pop("_base_", [])
    if isinstance(bases, str):
        bases = [bases]
    merged = {}
    for name in bases:
        merged = merge_cfg(merged, read_config(
            os.path.join(os.path.dirname(os.path.abspath(path)), name)))
    return merge_cfg(merged, own)


def _get(node, key, where, default=None, required=True):
    if isinstance(node, dict) and key in node:
        return node[key]
    if not required:
        return default
    raise ConversionError("%s has no %s" % (where, key))


def _eps(part, default=1e-3):
    return float(part.get("norm_cfg", {}).get("eps", default))


def anchor_sets(generator, sizes_scale, class_names):
    """Our anchor sets of an Anchor3DRangeGenerator or
    AlignedAnchor3DRangeGenerator."""
    kind = generator.get("type")
    if kind == "Anchor3DRangeGenerator":
        placement = "span"
    elif kind == "AlignedAnchor3DRangeGenerator":
        placement = "corners" if generator.get("align_corner", False) \
            else "centers"
    else:
        raise ConversionError("anchor_generator type %r: Anchor3DRange"
                              "Generator or AlignedAnchor3DRangeGenerator" %
                              kind)
    scales = generator.get("scales", [1])
    if len(scales) != 1:
        raise ConversionError("anchor_generator.scales %r: one level only" %
                              scales)
    sizes = [[float(v) * scales[0] * sizes_scale for v in s]
             for s in generator.get("sizes", [[3.9, 1.6, 1.56]])]
    ranges = [list(map(float, r)) for r in generator["ranges"]]
    rotations = [float(r) for r in generator.get("rotations",
                                                 [0, 1.5707963])]

    def bottom(r):
        # the z of the anchors: linspace over one cell, shifted half a
        # cell by the aligned generator
        return r[2] + (r[5] - r[2]) / 2 if placement == "centers" else r[2]

    sets = []
    if generator.get("size_per_range", True):
        if len(ranges) != len(sizes):
            if len(ranges) != 1:
                raise ConversionError("anchor_generator: %d ranges for %d "
                                      "sizes" % (len(ranges), len(sizes)))
            ranges = ranges * len(sizes)
        for i, (r, s) in enumerate(zip(ranges, sizes)):
            sets.append({"class_name": class_names[i] if i < len(class_names)
                         else None, "x_range": [r[0], r[3]],
                         "y_range": [r[1], r[4]], "bottom": bottom(r),
                         "sizes": [s], "rotations": rotations,
                         "placement": placement})
    else:
        r = ranges[0]
        sets.append({"class_name": None, "x_range": [r[0], r[3]],
                     "y_range": [r[1], r[4]], "bottom": bottom(r),
                     "sizes": sizes, "rotations": rotations,
                     "placement": placement})
    return sets


def config_from_cfg(cfg):
    """The p3d.model document of an mmdetection3d PointPillars config."""
    out = copy.deepcopy(pp.MMDET3D_KITTI)
    model = _get(cfg, "model", "the config")
    kind = model.get("type")
    if kind == "VoxelNet":
        prefix = ""
    elif kind == "MVXFasterRCNN":
        prefix = "pts_"
    else:
        raise ConversionError("model type %r: VoxelNet or MVXFasterRCNN" %
                              kind)
    part = {name: model.get(prefix + name, {}) for name in
            ("voxel_encoder", "middle_encoder", "backbone", "neck",
             "bbox_head")}
    voxel_layer = model.get("data_preprocessor", {}).get("voxel_layer") or \
        model.get(prefix + "voxel_layer") or cfg.get("voxel_layer")
    if not voxel_layer:
        raise ConversionError("the config has no voxel_layer")
    out["point_cloud_range"] = [float(v) for v in
                                voxel_layer["point_cloud_range"]]
    out["voxel_size"] = [float(v) for v in voxel_layer["voxel_size"]]
    out["max_points"] = int(voxel_layer["max_num_points"])
    max_voxels = voxel_layer["max_voxels"]
    out["max_voxels"] = int(max_voxels[1] if isinstance(
        max_voxels, (list, tuple)) else max_voxels)
    out["grid"] = [int(round((out["point_cloud_range"][i + 3] -
                              out["point_cloud_range"][i]) /
                             out["voxel_size"][i])) for i in range(3)]
    shape = part["middle_encoder"].get("output_shape")
    if shape is not None and list(shape) != [out["grid"][1], out["grid"][0]]:
        raise ConversionError("middle_encoder.output_shape %s is not the "
                              "grid's [%d, %d]" % (shape, out["grid"][1],
                                                  out["grid"][0]))

    vfe = part["voxel_encoder"]
    if vfe.get("type") != "PillarFeatureNet":
        raise ConversionError("voxel_encoder type %r: only PillarFeatureNet "
                              "(one PFN layer)" % vfe.get("type"))
    if not vfe.get("with_cluster_center", True) or \
            not vfe.get("with_voxel_center", True):
        raise ConversionError("PillarFeatureNet without cluster or voxel "
                              "centres: no pillarfeat feature set")
    if vfe.get("mode", "max") != "max":
        raise ConversionError("PillarFeatureNet mode %r: max only" %
                              vfe.get("mode"))
    channels = list(vfe.get("feat_channels", [64]))
    if len(channels) != 1:
        raise ConversionError("feat_channels %r: one PFN layer only" %
                              channels)
    point_channels = int(vfe.get("in_channels", 4))
    distance = bool(vfe.get("with_distance", False))
    out["point_channels"] = point_channels
    out["features"] = pp.features_for(point_channels, distance)
    out["pfn"] = {"channels": channels, "bn_eps": _eps(vfe)}
    out["pfn_layout"] = (["centre-xyz"] if vfe.get("legacy", True)
                         else ["points"]) + ["cluster", "centre"] + \
        (["distance"] if distance else [])

    backbone = part["backbone"]
    if backbone.get("type") != "SECOND":
        raise ConversionError("backbone type %r: SECOND" %
                              backbone.get("type"))
    out["backbone"] = {"out_channels": list(backbone["out_channels"]),
                       "layer_nums": list(backbone["layer_nums"]),
                       "layer_strides": list(backbone["layer_strides"]),
                       "bn_eps": _eps(backbone)}
    neck = part["neck"]
    if neck.get("type") != "SECONDFPN":
        raise ConversionError("neck type %r: SECONDFPN" % neck.get("type"))
    out["neck"] = {"out_channels": list(neck["out_channels"]),
                   "upsample_strides": list(neck["upsample_strides"]),
                   "use_conv_for_no_stride": bool(neck.get(
                       "use_conv_for_no_stride", False)),
                   "bn_eps": _eps(neck)}

    head = part["bbox_head"]
    if head.get("type") != "Anchor3DHead":
        raise ConversionError("bbox_head type %r: Anchor3DHead" %
                              head.get("type"))
    if not head.get("loss_cls", {}).get("use_sigmoid", True):
        raise ConversionError("bbox_head.loss_cls.use_sigmoid False "
                              "(softmax scores): not supported")
    coder = head.get("bbox_coder", {"type": "DeltaXYZWLHRBBoxCoder"})
    if coder.get("type") != "DeltaXYZWLHRBBoxCoder":
        raise ConversionError("bbox_coder %r: DeltaXYZWLHRBBoxCoder" %
                              coder.get("type"))
    num_classes = int(head["num_classes"])
    names = cfg.get("class_names") or cfg.get("metainfo", {}).get("classes")
    if names is None and num_classes == 3:
        names = pp.MMDET3D_KITTI["head"]["class_names"]
    if names is None or len(names) != num_classes:
        raise ConversionError("class names %r for num_classes %d: set "
                              "head.class_names" % (names, num_classes))
    out["tensors"] = {k: (prefix + v if isinstance(v, str) else v)
                      for k, v in pp.MMDET3D_TENSORS.items()}
    out["head"] = {
        "class_names": list(names),
        "anchors": anchor_sets(head["anchor_generator"], 1.0, list(names)),
        "code_size": int(coder.get("code_size", 7)),
        "direction": {"bins": 2,
                      "offset": float(head.get("dir_offset", -math.pi / 2)),
                      "limit_offset": float(head.get("dir_limit_offset", 0))}
        if head.get("use_direction_classifier", True) else None,
    }
    test = model.get("test_cfg", {})
    if prefix and "pts" in test:
        test = test["pts"]
    if float(test.get("min_bbox_size", 0)) != 0:
        print("note: test_cfg.min_bbox_size %s is ignored, as mmdetection3d's "
              "Anchor3DHead ignores it" % test["min_bbox_size"],
              file=sys.stderr)
    nms_pre = int(test.get("nms_pre", -1))
    if not 1 <= nms_pre <= pp.MAX_PRE:
        raise ConversionError("test_cfg.nms_pre %d: 1 to %d (every anchor "
                              "into the NMS is not supported)" %
                              (nms_pre, pp.MAX_PRE))
    out["post"] = {"score_threshold": float(test.get("score_thr", 0)),
                   "nms": "rotated" if test.get("use_rotate_nms", True)
                   else "aligned",
                   "nms_threshold": float(test["nms_thr"]),
                   "pre_max": nms_pre, "post_max": int(test["max_num"])}
    return out


def build_config(config_path=None, settings=(), meta_text=None):
    config = copy.deepcopy(pp.MMDET3D_KITTI)
    config["pfn_layout"] = ["centre-xyz", "cluster", "centre"]
    if config_path:
        config = config_from_cfg(read_config(config_path))
    elif meta_text:
        config = config_from_cfg(exec_config(meta_text, "the checkpoint's "
                                             "meta cfg"))
    for setting in settings:
        pp.apply_setting(config, setting)
    pp.validate_config(config)
    return config


def load_checkpoint(path):
    """(state_dict {name: tensor}, meta config text or None)."""
    checkpoint = pp.load_checkpoint(path)
    state = pp.load_state_dict(checkpoint, path)
    meta = checkpoint.get("meta", {})
    text = meta.get("cfg") if isinstance(meta, dict) else None
    return state, text if isinstance(text, str) else None


def convert(state, output, config, keep_dtype=False):
    config = copy.deepcopy(config)
    layout = config.pop("pfn_layout", ["points", "cluster", "centre"])
    name = config["tensors"]["pfn"] + ".linear.weight"
    if name in state and layout[0] != "points":
        state = dict(state)
        state[name] = pp.fold_pfn_weight(state[name], config["point_channels"],
                                         layout)
    return pp.write(output, state, config, keep_dtype)


def self_test():
    """The config reading (with _base_ and _delete_) and the tensor rules,
    without torch."""
    import tempfile
    base = """
voxel_size = [0.25, 0.25, 8]
model = dict(
    type='MVXFasterRCNN',
    data_preprocessor=dict(type='Det3DDataPreprocessor', voxel=True,
        voxel_layer=dict(max_num_points=64, point_cloud_range=[-50, -50, -5, 50, 50, 3],
                         voxel_size=voxel_size, max_voxels=(30000, 40000))),
    pts_voxel_encoder=dict(type='PillarFeatureNet', in_channels=5, feat_channels=[64],
        with_distance=False, voxel_size=voxel_size, legacy=False,
        point_cloud_range=[-50, -50, -5, 50, 50, 3]),
    pts_middle_encoder=dict(type='PointPillarsScatter', in_channels=64, output_shape=[400, 400]),
    pts_backbone=dict(type='SECOND', in_channels=64, layer_nums=[3, 5, 5],
        layer_strides=[2, 2, 2], out_channels=[64, 128, 256],
        norm_cfg=dict(type='naiveSyncBN2d', eps=1e-3, momentum=0.01)),
    pts_neck=dict(type='FPN', in_channels=[64, 128, 256], out_channels=256),
    pts_bbox_head=dict(type='Anchor3DHead', num_classes=2, in_channels=256,
        anchor_generator=dict(type='AlignedAnchor3DRangeGenerator',
            ranges=[[-49.6, -49.6, -1.80032795, 49.6, 49.6, -1.80032795]],
            scales=[1], sizes=[[4.6, 1.95, 1.72], [0.73, 0.66, 1.76]],
            custom_values=[0, 0], rotations=[0, 1.57], reshape_out=True),
        dir_offset=-0.7854,
        bbox_coder=dict(type='DeltaXYZWLHRBBoxCoder', code_size=9)),
    test_cfg=dict(pts=dict(use_rotate_nms=True, nms_across_levels=False,
        nms_pre=1000, nms_thr=0.2, score_thr=0.05, min_bbox_size=0, max_num=500)))
"""
    child = """
_base_ = ['./base.py']
class_names = ['car', 'pedestrian']
model = dict(pts_neck=dict(_delete_=True, type='SECONDFPN',
    in_channels=[64, 128, 256], upsample_strides=[1, 2, 4],
    out_channels=[128, 128, 128]),
    pts_bbox_head=dict(in_channels=384))
"""
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "base.py"), "w") as f:
            f.write(base)
        path = os.path.join(tmp, "child.py")
        with open(path, "w") as f:
            f.write(child)
        config = build_config(path)
    assert config["grid"] == [400, 400, 1], config["grid"]
    assert config["features"] == "mmdet3d-11"
    assert config["pfn_layout"] == ["points", "cluster", "centre"]
    assert config["max_voxels"] == 40000 and config["max_points"] == 64
    assert pp.validate_config(config) == (200, 200)
    head = config["head"]
    assert head["class_names"] == ["car", "pedestrian"]
    assert head["code_size"] == 9
    assert head["direction"]["offset"] == -0.7854
    assert len(head["anchors"]) == 2 and \
        head["anchors"][1]["sizes"] == [[0.73, 0.66, 1.76]]
    assert abs(head["anchors"][0]["bottom"] - -1.80032795) < 1e-12
    assert config["post"] == {"score_threshold": 0.05, "nms": "rotated",
                              "nms_threshold": 0.2, "pre_max": 1000,
                              "post_max": 500}
    shapes = pp.expected_tensors(config)
    assert shapes["pts_voxel_encoder.pfn_layers.0.linear.weight"] == [64, 11]
    assert shapes["pts_backbone.blocks.2.15.weight"] == [256, 256, 3, 3]
    assert shapes["pts_neck.deblocks.0.0.weight"] == [64, 128, 1, 1]
    assert shapes["pts_bbox_head.conv_cls.weight"] == [8, 384, 1, 1]
    assert shapes["pts_bbox_head.conv_reg.weight"] == [36, 384, 1, 1]
    assert shapes["pts_bbox_head.conv_dir_cls.bias"] == [8]
    # the KITTI defaults, and a generator of another kind
    default = build_config()
    assert pp.validate_config(default) == (248, 216)
    assert pp.expected_tensors(default)["voxel_encoder.pfn_layers.0.linear."
                                        "weight"] == [64, 10]
    sets = anchor_sets({"type": "Anchor3DRangeGenerator",
                        "ranges": [[0, -40, -1.78, 70.4, 40, -1.78]],
                        "sizes": [[3.9, 1.6, 1.56]],
                        "rotations": [0, 1.57]}, 1.0, ["Car"])
    assert sets[0]["placement"] == "span" and sets[0]["bottom"] == -1.78
    for bad, words in (({"head": {"direction": {"bins": 4}}}, "2"),
                       ({"post": {"pre_max": 0}}, "post.pre_max")):
        try:
            pp.validate_config(pp.merge(default, bad))
        except ConversionError as e:
            assert words in str(e), str(e)
        else:
            raise AssertionError("%s passed" % bad)
    try:
        exec_config("_base_ = ['x.py']\nmodel = {{_base_.model}}\n", "x")
    except ConversionError as e:
        assert "{{ }}" in str(e)
    else:
        raise AssertionError("{{ }} syntax passed")
    print("self-test passed: %d tensors implied by a two-class config" %
          len(shapes))


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("checkpoint", nargs="?",
                        help="mmdetection3d checkpoint (.pth)")
    parser.add_argument("-o", "--output", help="weights file to write")
    parser.add_argument("--config", help="the model's mmdetection3d config "
                        "(default: the checkpoint's, else the KITTI 3-class "
                        "values)")
    parser.add_argument("--set", action="append", default=[],
                        metavar="KEY=JSON", help="one value of the document")
    parser.add_argument("--keep-dtype", action="store_true",
                        help="store F16/BF16/F64 tensors as they are")
    parser.add_argument("--print-config", action="store_true",
                        help="print the document that would be written, exit")
    parser.add_argument("--self-test", action="store_true",
                        help="check the config reading and tensor rules, exit")
    args = parser.parse_args(argv)
    try:
        if args.self_test:
            self_test()
            return 0
        state, meta_text = ({}, None)
        if args.checkpoint and not args.print_config:
            state, meta_text = load_checkpoint(args.checkpoint)
        config = build_config(args.config, args.set, meta_text)
        if args.print_config:
            shown = dict(config)
            shown.pop("pfn_layout", None)
            print(json.dumps(shown, indent=2))
            return 0
        if not args.checkpoint or not args.output:
            parser.error("a checkpoint and -o OUTPUT are needed")
        count = convert(state, args.output, config, args.keep_dtype)
    except ConversionError as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    print("wrote %s: %d tensors, mmdetection3d PointPillars, %d classes, %d "
          "anchors a location" % (args.output, count,
                                  len(config["head"]["class_names"]),
                                  pp.n_anchors(config)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
