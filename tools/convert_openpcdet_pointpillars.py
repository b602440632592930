#!/usr/bin/env python3
"""Convert an OpenPCDet PointPillars checkpoint to the weights file that
gst-perception's pillarencode and bevdetect read (docs/weights.md, "PointPillars").

    python3 tools/convert_openpcdet_pointpillars.py CHECKPOINT.pth \\
        --cfg tools/cfgs/kitti_models/pointpillar.yaml -o model.safetensors \\
        [--set KEY=JSON ...] [--keep-dtype]

CHECKPOINT.pth: a checkpoint saved by OpenPCDet's train.py (a dict holding
'model_state') or a torch.save of the state_dict itself, of a model built
like OpenPCDet's PointPillar: PillarVFE (one PFN layer, USE_NORM),
PointPillarScatter, BaseBEVBackbone and AnchorHeadSingle with the
ResidualCoder.

--cfg: the model's YAML file as OpenPCDet reads it (CLASS_NAMES,
DATA_CONFIG with its POINT_CLOUD_RANGE and transform_points_to_voxels, and
MODEL).  A _BASE_CONFIG_ is looked for beside the file and in OpenPCDet's
tree (the file's ../../ and ../../../, as train.py runs from tools/).
Without --cfg, the values of pointpillar.yaml (KITTI, 3 classes).  The
post-processing is the YAML's: note that pointpillar.yaml itself says
MULTI_CLASSES_NMS: False (class-agnostic NMS); --set post.per_class=true
selects OpenPCDet's multi_classes_nms.

The document written to the file's `p3d.model` metadata comes from the
YAML, then --set values override it (e.g. --set max_voxels=30000).  The
tensors are checked against it (every tensor the config implies present
with its shape, none left over) before anything is written; the PFN's
linear weight is rewritten for pillarfeat's feature order when the YAML
does not feed the absolute x, y, z (USE_ABSLOTE_XYZ False), as
pointpillars_weights.fold_pfn_weight says.

`--self-test` checks the YAML reading and the tensor rules without torch.
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


def load_yaml(path):
    try:
        import yaml
    except ImportError:
        raise ConversionError("reading %s needs PyYAML (python3-yaml)" % path)
    try:
        with open(path) as f:
            cfg = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        raise ConversionError("%s: %s" % (path, e))
    if not isinstance(cfg, dict):
        raise ConversionError("%s is no OpenPCDet config (not a mapping)" %
                              path)
    return cfg


def merge_yaml(base, override):
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_yaml(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def read_cfg(path):
    """OpenPCDet's cfg_from_yaml_file: the file, its DATA_CONFIG merged
    over its _BASE_CONFIG_ when that can be found."""
    cfg = load_yaml(path)
    data = cfg.get("DATA_CONFIG", {})
    base_name = data.get("_BASE_CONFIG_")
    if base_name:
        here = os.path.dirname(os.path.abspath(path))
        candidates = [base_name, os.path.join(here, base_name),
                      os.path.join(here, "..", "..", base_name),
                      os.path.join(here, "..", "..", "..", base_name),
                      os.path.join(here, os.path.basename(base_name))]
        found = next((c for c in candidates if os.path.exists(c)), None)
        if found is not None:
            cfg["DATA_CONFIG"] = merge_yaml(load_yaml(found), data)
    return cfg


def _get(node, key, where, default=None, required=True):
    if isinstance(node, dict) and key in node:
        return node[key]
    if not required:
        return default
    raise ConversionError("%s has no %s (give it with --set, see --help)" %
                          (where, key))


def config_from_cfg(cfg):
    """The p3d.model document of an OpenPCDet PointPillar config."""
    out = copy.deepcopy(pp.OPENPCDET_KITTI)
    model = _get(cfg, "MODEL", "the YAML")
    if model.get("NAME", "PointPillar") != "PointPillar":
        raise ConversionError("MODEL.NAME %r: only PointPillar" %
                              model.get("NAME"))
    data = cfg.get("DATA_CONFIG", {})
    out["point_cloud_range"] = [float(v) for v in _get(
        data, "POINT_CLOUD_RANGE", "DATA_CONFIG")]
    voxels = [p for p in data.get("DATA_PROCESSOR", [])
              if p.get("NAME") == "transform_points_to_voxels"]
    if voxels:
        v = voxels[0]
        out["voxel_size"] = [float(x) for x in v["VOXEL_SIZE"]]
        out["max_points"] = int(v["MAX_POINTS_PER_VOXEL"])
        max_voxels = v["MAX_NUMBER_OF_VOXELS"]
        out["max_voxels"] = int(max_voxels["test"] if isinstance(
            max_voxels, dict) else max_voxels)
    out["grid"] = [int(round((out["point_cloud_range"][i + 3] -
                              out["point_cloud_range"][i]) /
                             out["voxel_size"][i])) for i in range(3)]
    used = data.get("POINT_FEATURE_ENCODING", {}).get(
        "used_feature_list", ["x", "y", "z", "intensity"])
    point_channels = len(used)

    vfe = _get(model, "VFE", "MODEL")
    if vfe.get("NAME") != "PillarVFE":
        raise ConversionError("MODEL.VFE.NAME %r: only PillarVFE" %
                              vfe.get("NAME"))
    if not vfe.get("USE_NORM", True):
        raise ConversionError("MODEL.VFE.USE_NORM False: the network stage "
                              "runs a PFN with BatchNorm only")
    filters = list(vfe.get("NUM_FILTERS", [64]))
    if len(filters) != 1:
        raise ConversionError("MODEL.VFE.NUM_FILTERS %r: one PFN layer only" %
                              filters)
    distance = bool(vfe.get("WITH_DISTANCE", False))
    out["point_channels"] = point_channels
    out["features"] = pp.features_for(point_channels, distance)
    out["pfn"] = {"channels": filters, "bn_eps": 0.001}
    out["pfn_layout"] = (["points"] if vfe.get("USE_ABSLOTE_XYZ", True)
                         else ["points-but-xyz"]) + ["cluster", "centre"] + \
        (["distance"] if distance else [])

    bev = _get(model, "BACKBONE_2D", "MODEL")
    if bev.get("NAME", "BaseBEVBackbone") != "BaseBEVBackbone":
        raise ConversionError("MODEL.BACKBONE_2D.NAME %r: only "
                              "BaseBEVBackbone" % bev.get("NAME"))
    out["backbone"] = {"out_channels": list(bev["NUM_FILTERS"]),
                       "layer_nums": list(bev["LAYER_NUMS"]),
                       "layer_strides": list(bev["LAYER_STRIDES"]),
                       "bn_eps": 0.001}
    ups = list(bev.get("UPSAMPLE_STRIDES", []))
    if len(ups) != len(bev["NUM_FILTERS"]):
        raise ConversionError("MODEL.BACKBONE_2D.UPSAMPLE_STRIDES %r: one per "
                              "stage (no extra deblock)" % ups)
    out["neck"] = {"out_channels": list(bev["NUM_UPSAMPLE_FILTERS"]),
                   "upsample_strides": ups,
                   "use_conv_for_no_stride": bool(bev.get(
                       "USE_CONV_FOR_NO_STRIDE", False)),
                   "bn_eps": 0.001}

    head = _get(model, "DENSE_HEAD", "MODEL")
    if head.get("NAME") != "AnchorHeadSingle":
        raise ConversionError("MODEL.DENSE_HEAD.NAME %r: only "
                              "AnchorHeadSingle" % head.get("NAME"))
    if head.get("USE_MULTIHEAD", False):
        raise ConversionError("MODEL.DENSE_HEAD.USE_MULTIHEAD: not supported")
    assigner = head.get("TARGET_ASSIGNER_CONFIG", {})
    if assigner.get("BOX_CODER", "ResidualCoder") != "ResidualCoder":
        raise ConversionError("BOX_CODER %r: only ResidualCoder" %
                              assigner.get("BOX_CODER"))
    coder = assigner.get("BOX_CODER_CONFIG", {})
    if coder.get("encode_angle_by_sincos", False):
        raise ConversionError("BOX_CODER_CONFIG.encode_angle_by_sincos: not "
                              "supported")
    classes = list(_get(cfg, "CLASS_NAMES", "the YAML"))
    out["head"]["class_names"] = (["Object"] if head.get("CLASS_AGNOSTIC",
                                                          False) else classes)
    sets = []
    pcr = out["point_cloud_range"]
    for g in head["ANCHOR_GENERATOR_CONFIG"]:
        heights = list(g["anchor_bottom_heights"])
        if len(heights) != 1:
            raise ConversionError(
                "anchor_bottom_heights %r of %s: AnchorHeadSingle lays the "
                "anchors out right for one height only" %
                (heights, g.get("class_name")))
        sets.append({"class_name": g.get("class_name"),
                     "x_range": [pcr[0], pcr[3]], "y_range": [pcr[1], pcr[4]],
                     "bottom": float(heights[0]),
                     "sizes": [[float(v) for v in s]
                               for s in g["anchor_sizes"]],
                     "rotations": [float(r) for r in g["anchor_rotations"]],
                     "placement": "centers" if g.get("align_center", False)
                     else "span",
                     "feature_map_stride": int(g.get("feature_map_stride",
                                                     1))})
    out["head"]["anchors"] = sets
    out["head"]["code_size"] = int(coder.get("code_size", 7))
    if head.get("USE_DIRECTION_CLASSIFIER", False):
        out["head"]["direction"] = {
            "bins": int(head.get("NUM_DIR_BINS", 2)),
            "offset": float(head.get("DIR_OFFSET", 0.0)),
            "limit_offset": float(head.get("DIR_LIMIT_OFFSET", 0.0))}
    else:
        out["head"]["direction"] = None

    post = _get(model, "POST_PROCESSING", "MODEL")
    nms = _get(post, "NMS_CONFIG", "MODEL.POST_PROCESSING")
    kinds = {"nms_gpu": "rotated-mmcv", "nms_normal_gpu": "aligned"}
    if nms.get("NMS_TYPE") not in kinds:
        raise ConversionError("NMS_TYPE %r: nms_gpu or nms_normal_gpu" %
                              nms.get("NMS_TYPE"))
    if post.get("OUTPUT_RAW_SCORE", False):
        raise ConversionError("POST_PROCESSING.OUTPUT_RAW_SCORE: not "
                              "supported (scores are sigmoids)")
    out["post"] = {"score_threshold": float(post["SCORE_THRESH"]),
                   "per_class": bool(nms.get("MULTI_CLASSES_NMS", False)),
                   "nms": kinds[nms["NMS_TYPE"]],
                   "nms_threshold": float(nms["NMS_THRESH"]),
                   "pre_max": int(nms["NMS_PRE_MAXSIZE"]),
                   "post_max": int(nms["NMS_POST_MAXSIZE"])}
    return out


def build_config(cfg_path=None, settings=()):
    config = copy.deepcopy(pp.OPENPCDET_KITTI)
    config["pfn_layout"] = ["points", "cluster", "centre"]
    if cfg_path:
        config = config_from_cfg(read_cfg(cfg_path))
    for setting in settings:
        pp.apply_setting(config, setting)
    pp.validate_config(config)
    return config


def load_state_dict(path):
    """The checkpoint's model_state as {name: tensor} (needs torch)."""
    return pp.load_state_dict(pp.load_checkpoint(path), path, "model_state")


def convert(checkpoint, output, config, keep_dtype=False):
    state = load_state_dict(checkpoint)
    config = copy.deepcopy(config)
    layout = config.pop("pfn_layout", ["points", "cluster", "centre"])
    name = config["tensors"]["pfn"] + ".linear.weight"
    if name in state and layout != ["points", "cluster", "centre"] and \
            layout != ["points", "cluster", "centre", "distance"]:
        state[name] = pp.fold_pfn_weight(state[name], config["point_channels"],
                                         layout)
    return pp.write(output, state, config, keep_dtype)


def self_test():
    """The YAML reading and the tensor rules, without torch."""
    import tempfile
    text = """
CLASS_NAMES: ['Car', 'Pedestrian']
DATA_CONFIG:
    _BASE_CONFIG_: base.yaml
    POINT_CLOUD_RANGE: [0, -20.48, -3, 40.96, 20.48, 1]
    DATA_PROCESSOR:
        - NAME: transform_points_to_voxels
          VOXEL_SIZE: [0.32, 0.32, 4]
          MAX_POINTS_PER_VOXEL: 20
          MAX_NUMBER_OF_VOXELS: {'train': 16000, 'test': 30000}
MODEL:
    NAME: PointPillar
    VFE: {NAME: PillarVFE, WITH_DISTANCE: False, USE_ABSLOTE_XYZ: True,
          USE_NORM: True, NUM_FILTERS: [32]}
    MAP_TO_BEV: {NAME: PointPillarScatter, NUM_BEV_FEATURES: 32}
    BACKBONE_2D: {NAME: BaseBEVBackbone, LAYER_NUMS: [1, 2], LAYER_STRIDES: [2, 2],
                  NUM_FILTERS: [32, 64], UPSAMPLE_STRIDES: [1, 2],
                  NUM_UPSAMPLE_FILTERS: [48, 48]}
    DENSE_HEAD:
        NAME: AnchorHeadSingle
        CLASS_AGNOSTIC: False
        USE_DIRECTION_CLASSIFIER: True
        DIR_OFFSET: 0.78539
        DIR_LIMIT_OFFSET: 0.0
        NUM_DIR_BINS: 2
        ANCHOR_GENERATOR_CONFIG: [
            {'class_name': 'Car', 'anchor_sizes': [[3.9, 1.6, 1.56]],
             'anchor_rotations': [0, 1.57], 'anchor_bottom_heights': [-1.78],
             'align_center': False, 'feature_map_stride': 2},
            {'class_name': 'Pedestrian', 'anchor_sizes': [[0.8, 0.6, 1.73], [0.6, 0.6, 1.7]],
             'anchor_rotations': [0], 'anchor_bottom_heights': [-0.6],
             'align_center': True, 'feature_map_stride': 2}]
        TARGET_ASSIGNER_CONFIG: {NAME: AxisAlignedTargetAssigner, BOX_CODER: ResidualCoder}
    POST_PROCESSING:
        SCORE_THRESH: 0.2
        NMS_CONFIG: {MULTI_CLASSES_NMS: True, NMS_TYPE: nms_gpu, NMS_THRESH: 0.05,
                     NMS_PRE_MAXSIZE: 1000, NMS_POST_MAXSIZE: 100}
"""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "pp.yaml")
        with open(path, "w") as f:
            f.write(text)
        with open(os.path.join(tmp, "base.yaml"), "w") as f:
            f.write("POINT_FEATURE_ENCODING: {used_feature_list: "
                    "['x', 'y', 'z', 'intensity']}\n")
        config = build_config(path)
    assert config["grid"] == [128, 128, 1], config["grid"]
    assert config["max_voxels"] == 30000 and config["max_points"] == 20
    assert pp.validate_config(config) == (64, 64)
    head = config["head"]
    assert head["class_names"] == ["Car", "Pedestrian"]
    assert head["anchors"][1]["placement"] == "centers"
    assert head["anchors"][0]["x_range"] == [0.0, 40.96]
    assert pp.n_anchors(config) == 4
    assert config["post"] == {"score_threshold": 0.2, "per_class": True,
                              "nms": "rotated-mmcv", "nms_threshold": 0.05,
                              "pre_max": 1000, "post_max": 100}
    shapes = pp.expected_tensors(config)
    assert shapes["vfe.pfn_layers.0.linear.weight"] == [32, 10]
    assert shapes["backbone_2d.blocks.0.1.weight"] == [32, 32, 3, 3]
    assert shapes["backbone_2d.blocks.1.7.weight"] == [64, 64, 3, 3]
    assert shapes["backbone_2d.blocks.1.8.running_var"] == [64]
    assert shapes["backbone_2d.deblocks.1.0.weight"] == [64, 48, 2, 2]
    assert shapes["dense_head.conv_cls.weight"] == [8, 96, 1, 1]
    assert shapes["dense_head.conv_box.bias"] == [28]
    assert shapes["dense_head.conv_dir_cls.weight"] == [8, 96, 1, 1]
    wrong = dict(shapes)
    wrong["dense_head.conv_box.weight"] = [21, 96, 1, 1]
    del wrong["backbone_2d.deblocks.0.1.bias"]
    wrong["backbone_2d.blocks.1.10.weight"] = [64, 64, 3, 3]
    try:
        pp.check_tensors(config, wrong)
    except ConversionError as e:
        assert "dense_head.conv_box.weight has shape [21, 96, 1, 1]" in str(e)
        assert "missing tensor backbone_2d.deblocks.0.1.bias" in str(e)
        assert "backbone_2d.blocks.1.10.weight belongs to no layer" in str(e)
    else:
        raise AssertionError("a wrong checkpoint passed")
    for bad, words in (({"grid": [100, 128, 1]}, "disagrees"),
                       ({"post": {"pre_max": 5000}}, "post.pre_max"),
                       ({"post": {"nms": "circle"}}, "post.nms"),
                       ({"head": {"code_size": 8}}, "code_size")):
        try:
            pp.validate_config(pp.merge(config, bad))
        except ConversionError as e:
            assert words in str(e), str(e)
        else:
            raise AssertionError("%s passed" % bad)
    # the defaults are pointpillar.yaml's
    default = build_config()
    assert pp.validate_config(default) == (248, 216)
    assert default["post"]["per_class"] is False
    assert pp.expected_tensors(default)["dense_head.conv_cls.weight"] == \
        [18, 384, 1, 1]
    assert not math.isnan(default["head"]["direction"]["offset"])
    print("self-test passed: %d tensors implied by a two-class YAML" %
          len(shapes))


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("checkpoint", nargs="?",
                        help="OpenPCDet checkpoint (.pth)")
    parser.add_argument("-o", "--output", help="weights file to write")
    parser.add_argument("--cfg", help="the model's OpenPCDet YAML "
                        "(default: pointpillar.yaml's values)")
    parser.add_argument("--set", action="append", default=[],
                        metavar="KEY=JSON", help="one value of the document, "
                        "e.g. post.per_class=true")
    parser.add_argument("--keep-dtype", action="store_true",
                        help="store F16/BF16/F64 tensors as they are")
    parser.add_argument("--print-config", action="store_true",
                        help="print the document that would be written, exit")
    parser.add_argument("--self-test", action="store_true",
                        help="check the YAML reading and tensor rules, exit")
    args = parser.parse_args(argv)
    try:
        if args.self_test:
            try:
                import yaml  # noqa: F401
            except ImportError:
                print("PyYAML is not installed: skipped")
                return 77
            self_test()
            return 0
        config = build_config(args.cfg, args.set)
        if args.print_config:
            shown = dict(config)
            shown.pop("pfn_layout", None)
            print(json.dumps(shown, indent=2))
            return 0
        if not args.checkpoint or not args.output:
            parser.error("a checkpoint and -o OUTPUT are needed")
        count = convert(args.checkpoint, args.output, config, args.keep_dtype)
    except ConversionError as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    print("wrote %s: %d tensors, OpenPCDet PointPillars, %d classes, %d "
          "anchors a location" % (args.output, count,
                                  len(config["head"]["class_names"]),
                                  pp.n_anchors(config)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
