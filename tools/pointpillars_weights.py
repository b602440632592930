"""The PointPillars weights file (docs/weights.md): its `p3d.model`
document, the checks the converters make before they write, and the
tensors the document implies.  Shared by convert_openpcdet_pointpillars.py,
convert_mmdet3d_pointpillars.py, the PyTorch reference and the training
scripts; plain Python (torch only to read a checkpoint).

The document keeps the CenterPoint file's "pfn", "backbone" and "neck"
sections as they are (docs/weights.md) and adds:

  "framework"  "openpcdet" or "mmdet3d": whose decode rules and tensor
               names the file follows;
  "tensors"    the state_dict prefixes of each part (they differ between
               the frameworks and between mmdetection3d's detectors);
  "head"       the anchor head: classes, anchor sets, code size, the
               direction classifier;
  "post"       the test-time selection and NMS.
"""

import copy
import json
import math

import convert_mmdet3d_centerpoint as base

METADATA_KEY = base.METADATA_KEY
ConversionError = base.ConversionError
load_checkpoint = base.load_checkpoint
load_state_dict = base.load_state_dict
FEATURE_CHANNELS = base.FEATURE_CHANNELS

PLACEMENTS = ("span", "centers", "corners")
NMS_KINDS = ("rotated", "rotated-mmcv", "aligned")
FRAMEWORKS = ("openpcdet", "mmdet3d")

# the compute library's limits (cuda/anchor3d_decode.h)
MAX_ANCHORS = 64
MAX_CLASSES = 32
MAX_PRE = 4096
MAX_CELLS = (1 << 24) - 1
MAX_SIZES = 8
MAX_ROTATIONS = 8

OPENPCDET_TENSORS = {
    "pfn": "vfe.pfn_layers.0", "blocks": "backbone_2d.blocks",
    "block_conv_offset": 1, "deblocks": "backbone_2d.deblocks",
    "cls": "dense_head.conv_cls", "box": "dense_head.conv_box",
    "dir": "dense_head.conv_dir_cls",
}

MMDET3D_TENSORS = {
    "pfn": "voxel_encoder.pfn_layers.0", "blocks": "backbone.blocks",
    "block_conv_offset": 0, "deblocks": "neck.deblocks",
    "cls": "bbox_head.conv_cls", "box": "bbox_head.conv_reg",
    "dir": "bbox_head.conv_dir_cls",
}


def _kitti_set(name, size, bottom, placement):
    return {"class_name": name, "x_range": [0.0, 69.12],
            "y_range": [-39.68, 39.68], "bottom": bottom, "sizes": [size],
            "rotations": [0.0, 1.57], "placement": placement}


_KITTI_COMMON = {
    "architecture": "pointpillars",
    "version": 1,
    "point_channels": 4,
    "features": "pointpillars-10",
    "voxel_size": [0.16, 0.16, 4.0],
    "point_cloud_range": [0.0, -39.68, -3.0, 69.12, 39.68, 1.0],
    "max_points": 32,
    "max_voxels": 40000,
    "grid": [432, 496, 1],
    "pfn": {"channels": [64], "bn_eps": 0.001},
    "backbone": {"out_channels": [64, 128, 256], "layer_nums": [3, 5, 5],
                 "layer_strides": [2, 2, 2], "bn_eps": 0.001},
    "neck": {"out_channels": [128, 128, 128], "upsample_strides": [1, 2, 4],
             "use_conv_for_no_stride": False, "bn_eps": 0.001},
}

# OpenPCDet's tools/cfgs/kitti_models/pointpillar.yaml.
OPENPCDET_KITTI = dict(copy.deepcopy(_KITTI_COMMON), **{
    "framework": "openpcdet",
    "tensors": OPENPCDET_TENSORS,
    "head": {
        "class_names": ["Car", "Pedestrian", "Cyclist"],
        "anchors": [_kitti_set("Car", [3.9, 1.6, 1.56], -1.78, "span"),
                    _kitti_set("Pedestrian", [0.8, 0.6, 1.73], -0.6, "span"),
                    _kitti_set("Cyclist", [1.76, 0.6, 1.73], -0.6, "span")],
        "code_size": 7,
        "direction": {"bins": 2, "offset": 0.78539, "limit_offset": 0.0},
    },
    "post": {"score_threshold": 0.1, "per_class": False,
             "nms": "rotated-mmcv", "nms_threshold": 0.01,
             "pre_max": 4096, "post_max": 500},
})

# mmdetection3d's pointpillars_hv_secfpn_8xb6-160e_kitti-3d-3class.py.
MMDET3D_KITTI = dict(copy.deepcopy(_KITTI_COMMON), **{
    "framework": "mmdet3d",
    "tensors": MMDET3D_TENSORS,
    "head": {
        "class_names": ["Pedestrian", "Cyclist", "Car"],
        "anchors": [
            _kitti_set("Pedestrian", [0.8, 0.6, 1.73], -0.6, "centers"),
            _kitti_set("Cyclist", [1.76, 0.6, 1.73], -0.6, "centers"),
            _kitti_set("Car", [3.9, 1.6, 1.56], -1.78, "centers")],
        "code_size": 7,
        "direction": {"bins": 2, "offset": -math.pi / 2,
                      "limit_offset": 0.0},
    },
    "post": {"score_threshold": 0.1, "nms": "rotated", "nms_threshold": 0.01,
             "pre_max": 100, "post_max": 50},
})


def merge(base_config, override):
    return base.merge(base_config, override)


def apply_setting(config, setting):
    base.apply_setting(config, setting)


def backbone_map(config):
    """(height, width) of the head's maps: the backbone's strides and the
    neck's up-sampling, checked to agree over the stages."""
    height, width = config["grid"][1], config["grid"][0]
    sizes = []
    neck = config["neck"]
    for s, stride in enumerate(config["backbone"]["layer_strides"]):
        height, width = (height - 1) // stride + 1, (width - 1) // stride + 1
        transposed, k = base.neck_kernel(
            neck["upsample_strides"][s],
            neck.get("use_conv_for_no_stride", False))
        sizes.append((height * k, width * k) if transposed else
                     ((height - k) // k + 1, (width - k) // k + 1))
    if len(set(sizes)) != 1:
        raise ConversionError("the neck's stages give maps of sizes %s: "
                              "neck.upsample_strides disagree with "
                              "backbone.layer_strides" % sizes)
    return sizes[0]


def n_anchors(config):
    return sum(len(s["sizes"]) * len(s["rotations"])
               for s in config["head"]["anchors"])


def validate_config(config):
    """The checks that need no tensors; returns the head map (H, W)."""
    def need(condition, text):
        if not condition:
            raise ConversionError(text)

    need(config.get("architecture") == "pointpillars" and
         config.get("version") == 1,
         "architecture must be \"pointpillars\", version 1")
    need(config.get("framework") in FRAMEWORKS,
         "framework %r is none of %s" % (config.get("framework"),
                                         ", ".join(FRAMEWORKS)))
    names = config["tensors"]
    for part in ("pfn", "blocks", "deblocks", "cls", "box") + (
            ("dir",) if config["head"].get("direction") is not None else ()):
        name = names.get(part)
        need(isinstance(name, str) and name and not name.startswith(".")
             and not name.endswith("."),
             "tensors.%s %r: a state_dict prefix such as "
             "\"dense_head.conv_cls\"" % (part, name))
    need(0 <= names["block_conv_offset"] <= 16,
         "tensors.block_conv_offset %r: 0 to 16" %
         names["block_conv_offset"])
    need(config["features"] in FEATURE_CHANNELS,
         "features %r is none of %s" % (config["features"],
                                        ", ".join(FEATURE_CHANNELS)))
    for i in range(3):
        cells = (config["point_cloud_range"][i + 3] -
                 config["point_cloud_range"][i]) / config["voxel_size"][i]
        need(abs(cells - config["grid"][i]) <= 1e-3,
             "grid %s disagrees with point_cloud_range / voxel_size (axis %d "
             "gives %g cells)" % (config["grid"], i, cells))
    need(config["grid"][2] == 1, "grid %s: a pillar model has one z cell" %
         (config["grid"],))
    need(len(config["pfn"]["channels"]) == 1,
         "pfn.channels %r: only one PFN layer is supported" %
         (config["pfn"]["channels"],))
    backbone, neck = config["backbone"], config["neck"]
    need(len(backbone["layer_nums"]) == len(backbone["layer_strides"]) ==
         len(backbone["out_channels"]) == len(neck["out_channels"]) ==
         len(neck["upsample_strides"]),
         "backbone.out_channels, layer_nums, layer_strides and "
         "neck.out_channels, upsample_strides must have one entry per stage")
    height, width = backbone_map(config)

    head = config["head"]
    classes = head["class_names"]
    need(1 <= len(classes) <= MAX_CLASSES,
         "head.class_names: 1 to %d classes, not %d" % (MAX_CLASSES,
                                                        len(classes)))
    need(len(head["anchors"]) >= 1, "head.anchors: no anchor set")
    for i, s in enumerate(head["anchors"]):
        where = "head.anchors[%d]" % i
        need(s.get("placement") in PLACEMENTS,
             "%s.placement %r is none of %s" % (where, s.get("placement"),
                                               ", ".join(PLACEMENTS)))
        need(1 <= len(s["sizes"]) <= MAX_SIZES and
             1 <= len(s["rotations"]) <= MAX_ROTATIONS,
             "%s: 1 to %d sizes and 1 to %d rotations" %
             (where, MAX_SIZES, MAX_ROTATIONS))
        need(all(len(z) == 3 and all(1e-3 <= v <= 1e3 for v in z)
                 for z in s["sizes"]),
             "%s.sizes %r: [dx, dy, dz], sizes from 0.001 to 1000 m" %
             (where, s["sizes"]))
        values = list(s["x_range"]) + list(s["y_range"]) + [s["bottom"]]
        need(len(s["x_range"]) == 2 and len(s["y_range"]) == 2 and
             all(abs(v) <= 1e4 for v in values) and
             all(abs(v) <= 1e3 for v in s["rotations"]),
             "%s: x_range, y_range ([start, end]) and bottom within 10 km, "
             "rotations within 1000 rad" % where)
        need(s["placement"] != "span" or (height > 1 and width > 1),
             "%s: a span over a map of one cell" % where)
        stride = s.get("feature_map_stride")
        need(stride is None or (1 <= stride <= 64 and
                                config["grid"][0] == width * stride and
                                config["grid"][1] == height * stride),
             "%s.feature_map_stride %s: the network maps the grid %s to %d x "
             "%d" % (where, stride, config["grid"][:2], width, height))
    anchors = n_anchors(config)
    need(anchors <= MAX_ANCHORS, "head.anchors: %d anchors a location, at "
         "most %d" % (anchors, MAX_ANCHORS))
    need(height * width * anchors <= MAX_CELLS,
         "%d x %d x %d anchors: more than %d" % (height, width, anchors,
                                                 MAX_CELLS))
    need(head["code_size"] in (7, 9), "head.code_size %r: 7, or 9 with "
         "velocity" % head["code_size"])
    direction = head.get("direction")
    if direction is not None:
        need(1 <= direction["bins"] <= 16, "head.direction.bins %r: 1 to 16" %
             direction["bins"])
        need(config["framework"] != "mmdet3d" or direction["bins"] == 2,
             "head.direction.bins: mmdetection3d's classifier has 2")
        need(abs(direction["offset"]) <= 1e3 and
             abs(direction["limit_offset"]) <= 1e3,
             "head.direction offsets must be within 1000")

    post = config["post"]
    need(post["nms"] in NMS_KINDS, "post.nms %r is none of %s" %
         (post["nms"], ", ".join(NMS_KINDS)))
    need(0 <= post["score_threshold"] <= 1,
         "post.score_threshold %r: a score, 0 to 1" %
         post["score_threshold"])
    need(0 <= post["nms_threshold"] <= 1,
         "post.nms_threshold %r: an IoU, 0 to 1" % post["nms_threshold"])
    need(1 <= post["pre_max"] <= MAX_PRE, "post.pre_max %r: 1 to %d" %
         (post["pre_max"], MAX_PRE))
    need(1 <= post["post_max"] <= 1 << 20, "post.post_max %r: 1 to %d" %
         (post["post_max"], 1 << 20))
    return height, width


def _norm(shapes, prefix, channels):
    for part in ("weight", "bias", "running_mean", "running_var"):
        shapes["%s.%s" % (prefix, part)] = [channels]


def expected_tensors(config):
    """{name: shape} of every tensor the config implies, with the
    framework's state_dict names (config["tensors"])."""
    names = config["tensors"]
    shapes = {}
    pfn = config["pfn"]["channels"][0]
    shapes[names["pfn"] + ".linear.weight"] = [
        pfn, FEATURE_CHANNELS[config["features"]]]
    _norm(shapes, names["pfn"] + ".norm", pfn)
    backbone, neck = config["backbone"], config["neck"]
    offset = names["block_conv_offset"]
    in_channels = pfn
    for s, out in enumerate(backbone["out_channels"]):
        for k in range(backbone["layer_nums"][s] + 1):
            shapes["%s.%d.%d.weight" % (names["blocks"], s, offset + 3 * k)] = \
                [out, in_channels if k == 0 else out, 3, 3]
            _norm(shapes, "%s.%d.%d" % (names["blocks"], s, offset + 3 * k + 1),
                  out)
        in_channels = out
    for s, out in enumerate(neck["out_channels"]):
        transposed, k = base.neck_kernel(
            neck["upsample_strides"][s], neck.get("use_conv_for_no_stride",
                                                  False))
        stage = backbone["out_channels"][s]
        shapes["%s.%d.0.weight" % (names["deblocks"], s)] = (
            [stage, out, k, k] if transposed else [out, stage, k, k])
        _norm(shapes, "%s.%d.1" % (names["deblocks"], s), out)
    head = config["head"]
    features = sum(neck["out_channels"])
    anchors = n_anchors(config)
    outputs = [("cls", anchors * len(head["class_names"])),
               ("box", anchors * head["code_size"])]
    if head.get("direction") is not None:
        outputs.append(("dir", anchors * head["direction"]["bins"]))
    for part, channels in outputs:
        shapes[names[part] + ".weight"] = [channels, features, 1, 1]
        shapes[names[part] + ".bias"] = [channels]
    return shapes


def model_prefixes(config):
    """The state_dict prefixes of the modules the config describes."""
    names = config["tensors"]
    return tuple(sorted({names[p].split(".")[0] + "." for p in
                         ("pfn", "blocks", "deblocks", "cls", "box", "dir")}))


def check_tensors(config, shapes_in_file):
    """Every tensor the config implies is there with its shape, and no
    other tensor of those modules is."""
    problems = []
    expected = expected_tensors(config)
    prefixes = model_prefixes(config)
    for name in shapes_in_file:
        if name.startswith(prefixes) and name not in expected and \
                not name.endswith("num_batches_tracked"):
            problems.append("tensor %s belongs to no layer of the config's "
                            "model" % name)
    for name, shape in expected.items():
        if name not in shapes_in_file:
            problems.append("missing tensor %s (expected shape %s)" %
                            (name, shape))
        elif list(shapes_in_file[name]) != shape:
            problems.append("tensor %s has shape %s, the config implies %s" %
                            (name, list(shapes_in_file[name]), shape))
    if problems:
        raise ConversionError(
            "the checkpoint does not match the config:\n  " +
            "\n  ".join(problems[:20]) +
            ("\n  ... and %d more" % (len(problems) - 20)
             if len(problems) > 20 else ""))


def write(output, tensors, config, keep_dtype=False):
    """Checks @tensors ({name: torch tensor}) against @config and writes the
    weights file; returns the number of tensors."""
    validate_config(config)
    check_tensors(config, {n: list(t.shape) for n, t in tensors.items()})
    records = []
    for name, value in tensors.items():
        dtype, data = base.tensor_bytes(value, keep_dtype)
        records.append((name, dtype, list(value.shape), data))
    base.write_safetensors(output, records,
                           {METADATA_KEY: json.dumps(config)})
    return len(records)


def read(path):
    """(config, {name: (dtype, shape, bytes)}) of a weights file."""
    metadata, tensors = base.read_safetensors(path)
    if METADATA_KEY not in metadata:
        raise ConversionError("%s has no %s metadata" % (path, METADATA_KEY))
    return json.loads(metadata[METADATA_KEY]), tensors


def fold_pfn_weight(weight, point_channels, layout):
    """A PFN linear weight [C][F_in] rewritten for pillarfeat's
    pointpillars-10 / -11 or mmdet3d-11 input, which always holds the
    point's own channels, the offsets from the pillar's mean and from its
    centre (and the distance), in that order.

    @layout names what the framework fed its linear layer, as a list of
    parts among "points" (the raw point channels), "points-but-xyz" (all
    but x, y, z: OpenPCDet's USE_ABSLOTE_XYZ False), "centre-xyz" (x, y, z
    replaced by their offsets from the pillar centre: mmdetection3d's
    PillarFeatureNet with legacy=True writes those offsets over the
    points in place), "cluster" (3), "centre" (3), "distance" (1).  The
    columns of each part move to their place in our input; a part our
    input holds twice in the framework's (legacy's centre offsets) has its
    columns summed, and a part the framework does not read gets zero
    columns, so the layer computes the same sums.  Works on a torch tensor
    or nested lists."""
    import torch

    weight = torch.as_tensor(weight, dtype=torch.float64)
    ours = {"points": (0, point_channels),
            "cluster": (point_channels, point_channels + 3),
            "centre": (point_channels + 3, point_channels + 6),
            "distance": (point_channels + 6, point_channels + 7)}
    width = point_channels + 6 + (1 if "distance" in layout else 0)
    out = torch.zeros(weight.shape[0], width, dtype=torch.float64)
    column = 0
    for part in layout:
        if part == "points":
            n, start = point_channels, ours["points"][0]
            out[:, start:start + n] += weight[:, column:column + n]
        elif part == "points-but-xyz":
            n = point_channels - 3
            out[:, 3:point_channels] += weight[:, column:column + n]
        elif part == "centre-xyz":
            n = point_channels
            # x, y, z are the centre offsets; the other channels the point's
            out[:, ours["centre"][0]:ours["centre"][1]] += \
                weight[:, column:column + 3]
            out[:, 3:point_channels] += weight[:, column + 3:column + n]
        else:
            start, end = ours[part]
            n = end - start
            out[:, start:end] += weight[:, column:column + n]
        column += n
    if column != weight.shape[1]:
        raise ConversionError("the PFN weight has %d input columns, its "
                              "layout %s makes %d" % (weight.shape[1],
                                                      layout, column))
    return out.float()


def features_for(point_channels, distance):
    """pillarfeat's feature set for a framework's point channels."""
    if point_channels == 4:
        return "pointpillars-11" if distance else "pointpillars-10"
    if point_channels == 5 and not distance:
        return "mmdet3d-11"
    raise ConversionError("no pillarfeat feature set takes %d point channels "
                          "%s the distance" % (point_channels,
                                               "with" if distance else
                                               "without"))
