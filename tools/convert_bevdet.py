#!/usr/bin/env python3
"""Convert a BEVDet checkpoint to the weights file that gst-perception's
camencode and bevdetect read (docs/weights.md, architecture "bevdet").

    python3 tools/convert_bevdet.py CHECKPOINT.pth -o model.safetensors \\
        [--bevdet-config configs/bevdet/bevdet-r50.py] [--config values.json]
        [--set KEY=JSON ...] [--keep-dtype]

CHECKPOINT.pth: a checkpoint of HuangJunJie2017/BEVDet's BEVDet detector
(any torch.save of a dict holding a 'state_dict', or of the state_dict
itself), with BEVDet's module names: img_backbone (mmdet's ResNet),
img_neck (FPNForBEVDet), img_view_transformer
(ViewTransformerLiftSplatShoot), img_bev_encoder_backbone (ResNetForBEVDet),
img_bev_encoder_neck (FPN_LSS) and pts_bbox_head (CenterHead).

The model's hyperparameters are not in the checkpoint. They come from the
defaults below (configs/bevdet/bevdet-r50.py of BEVDet's master branch),
replaced by the values of a BEVDet config file (--bevdet-config: its
data_config, grid_config, model and test_cfg; the file and its _base_
files are executed as Python, as mmcv does, so give only a config you
trust), then by a JSON file of our keys (--config) and single values
(--set test_nms.nms_thr=0.3).  BEVDet's loader normalises images with
ImageNet's mean and std, which its config does not state: data_config's
"mean" and "std" here.

Before it writes, the converter checks the config and the tensors exactly
as the elements will (every tensor the config implies, with its shape; no
tensor of those modules left over), and the grid the checkpoint's view
transformer was built with (its dx, bx, nx and frustum, which are not
written) against grid_config and data_config.  It says which test-time NMS
the file holds: BEVDet's Scale-NMS per task (rotated IoU on boxes whose
sizes are scaled per class, or circle), which bevdetect applies with
model-nms=true.

Only loading the checkpoint (and --bevdet-config's `dict(...)` calls,
plain Python) needs torch; the rest is plain Python.  `--self-test` checks
the config mapping, the tensor list and the writer without torch.
"""

import argparse
import copy
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import convert_mmdet3d_centerpoint as common  # noqa: E402

ConversionError = common.ConversionError
METADATA_KEY = common.METADATA_KEY

NUSCENES_TASKS = [
    {"class_names": ["car"]},
    {"class_names": ["truck", "construction_vehicle"]},
    {"class_names": ["bus", "trailer"]},
    {"class_names": ["barrier"]},
    {"class_names": ["motorcycle", "bicycle"]},
    {"class_names": ["pedestrian", "traffic_cone"]},
]

# configs/bevdet/bevdet-r50.py of HuangJunJie2017/BEVDet (master).
DEFAULT_CONFIG = {
    "architecture": "bevdet",
    "version": 1,
    "data_config": {
        "cams": ["CAM_FRONT_LEFT", "CAM_FRONT", "CAM_FRONT_RIGHT",
                 "CAM_BACK_LEFT", "CAM_BACK", "CAM_BACK_RIGHT"],
        "Ncams": 6,
        "input_size": [256, 704],
        "src_size": [900, 1600],
        "resize_test": 0.04,
        "crop_h": [0.0, 0.0],
        # LoadMultiViewImageFromFiles_BEVDet's torchvision Normalize
        "mean": [0.485, 0.456, 0.406],
        "std": [0.229, 0.224, 0.225],
    },
    "grid_config": {
        "xbound": [-51.2, 51.2, 0.8],
        "ybound": [-51.2, 51.2, 0.8],
        "zbound": [-10.0, 10.0, 20.0],
        "dbound": [1.0, 60.0, 1.0],
    },
    "img_backbone": {"type": "ResNet", "depth": 50, "num_stages": 4,
                     "out_indices": [2, 3], "style": "pytorch"},
    "img_neck": {"type": "FPNForBEVDet", "in_channels": [1024, 2048],
                 "out_channels": 512, "num_outs": 1, "start_level": 0,
                 "out_ids": [0]},
    "img_view_transformer": {"type": "ViewTransformerLiftSplatShoot",
                             "numC_input": 512, "numC_Trans": 64,
                             "downsample": 16},
    "img_bev_encoder_backbone": {"type": "ResNetForBEVDet",
                                 "numC_input": 64},
    "img_bev_encoder_neck": {"type": "FPN_LSS", "in_channels": 640,
                             "out_channels": 256},
    "head": {
        "share_conv_channel": 64, "head_conv": 64, "final_kernel": 3,
        "bn_eps": 1e-5, "tasks": NUSCENES_TASKS,
        "common_heads": {"reg": 2, "height": 1, "dim": 3, "rot": 2, "vel": 2},
        "norm_bbox": True,
    },
    "coder": {"post_center_range": [-61.2, -61.2, -10.0, 61.2, 61.2, 10.0],
              "max_num": 500, "score_threshold": 0.1, "out_size_factor": 8,
              "voxel_size": [0.1, 0.1], "pc_range": [-51.2, -51.2]},
    "test_nms": {
        "nms_type": ["rotate", "rotate", "rotate", "circle", "rotate",
                     "rotate"],
        "nms_thr": [0.2, 0.2, 0.2, 0.2, 0.2, 0.5],
        "nms_rescale_factor": [1.0, [0.7, 0.7], [0.4, 0.55], 1.1, [1.0, 1.0],
                               [4.5, 9.0]],
        "min_radius": [4, 12, 10, 1, 0.85, 0.175],
        "pre_max_size": 1000, "post_max_size": 83,
    },
}

HEADS = ("reg", "height", "dim", "rot", "vel")
RESNET_BLOCKS = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3],
                 101: [3, 4, 23, 3], 152: [3, 8, 36, 3]}
# the view transformer's geometry, registered as parameters in BEVDet
VIEW_TRANSFORMER_GEOMETRY = ("img_view_transformer.dx",
                             "img_view_transformer.bx",
                             "img_view_transformer.nx",
                             "img_view_transformer.frustum")
MODEL_PREFIXES = ("img_backbone.", "img_neck.",
                  "img_view_transformer.depthnet.",
                  "img_bev_encoder_backbone.", "img_bev_encoder_neck.",
                  "pts_bbox_head.")


# ---- derived values ------------------------------------------------------

def axis_cells(bound):
    return int(round((bound[1] - bound[0]) / bound[2]))


def depth_bins(config):
    d = config["grid_config"]["dbound"]
    return int(math.ceil((d[1] - d[0]) / d[2] - 1e-9))


def backbone(config):
    b = config["img_backbone"]
    depth = b["depth"]
    if depth not in RESNET_BLOCKS:
        raise ConversionError("img_backbone.depth %r is none of %s" %
                              (depth, sorted(RESNET_BLOCKS)))
    base = b.get("base_channels", 64)
    bottleneck = depth >= 50
    return (RESNET_BLOCKS[depth], base, b.get("stem_channels", base),
            bottleneck)


def stage_channels(config, s):
    _, base, _, bottleneck = backbone(config)
    return (base << s) * (4 if bottleneck else 1)


def bev_backbone(config):
    """(num_layer, num_channels, stride, output_ids, bottleneck) with
    ResNetForBEVDet's defaults."""
    b = config["img_bev_encoder_backbone"]
    layers = b.get("num_layer", [2, 2, 2])
    channels = b.get("num_channels") or [b["numC_input"] * 2 ** (i + 1)
                                         for i in range(len(layers))]
    strides = b.get("stride", [2] * len(layers))
    ids = b.get("backbone_output_ids")
    ids = list(range(len(layers))) if ids is None else list(ids)
    bottleneck = b.get("block_type", "Basic") == "BottleNeck"
    if not len(layers) == len(channels) == len(strides):
        raise ConversionError("img_bev_encoder_backbone: num_layer, "
                              "num_channels and stride need one entry per "
                              "stage")
    return layers, channels, strides, ids, bottleneck


# ---- the tensors the config implies ---------------------------------------

def expected_tensors(config):
    """{name: shape} of every tensor the config implies, in BEVDet's
    state_dict order and names."""
    shapes = {}

    def norm(prefix, channels):
        for part in ("weight", "bias", "running_mean", "running_var"):
            shapes["%s.%s" % (prefix, part)] = [channels]

    def conv(name, out, cin, k, bias=False):
        shapes[name + ".weight"] = [out, cin, k, k]
        if bias:
            shapes[name + ".bias"] = [out]

    def block(prefix, bottleneck, cin, planes, out, shortcut):
        if bottleneck:
            conv(prefix + ".conv1", planes, cin, 1)
            norm(prefix + ".bn1", planes)
            conv(prefix + ".conv2", planes, planes, 3)
            norm(prefix + ".bn2", planes)
            conv(prefix + ".conv3", out, planes, 1)
            norm(prefix + ".bn3", out)
        else:
            conv(prefix + ".conv1", planes, cin, 3)
            norm(prefix + ".bn1", planes)
            conv(prefix + ".conv2", out, planes, 3)
            norm(prefix + ".bn2", out)
        if shortcut == "resnet":
            conv(prefix + ".downsample.0", out, cin, 1)
            norm(prefix + ".downsample.1", out)
        elif shortcut == "bevdet":
            conv(prefix + ".downsample", out, cin, 3, bias=True)

    blocks, base, stem, bottleneck = backbone(config)
    conv("img_backbone.conv1", stem, 3, 7)
    norm("img_backbone.bn1", stem)
    cin = stem
    for s in range(4):
        planes, out = base << s, stage_channels(config, s)
        for k in range(blocks[s]):
            stride = 2 if k == 0 and s > 0 else 1
            block("img_backbone.layer%d.%d" % (s + 1, k), bottleneck, cin,
                  planes, out,
                  "resnet" if k == 0 and (stride != 1 or cin != out)
                  else None)
            cin = out
    neck = config["img_neck"]
    fpn = neck["out_channels"]
    for level, cin in enumerate(neck["in_channels"]):
        conv("img_neck.lateral_convs.%d.conv" % level, fpn, cin, 1, True)
    conv("img_neck.fpn_convs.0.conv", fpn, fpn, 3, True)
    vt = config["img_view_transformer"]
    conv("img_view_transformer.depthnet",
         depth_bins(config) + vt.get("numC_Trans", 64),
         vt.get("numC_input", 512), 1, True)

    layers, channels, _, _, bev_bottleneck = bev_backbone(config)
    cin = config["img_bev_encoder_backbone"]["numC_input"]
    for s, (n, out) in enumerate(zip(layers, channels)):
        for k in range(n):
            block("img_bev_encoder_backbone.layers.%d.%d" % (s, k),
                  bev_bottleneck, cin, out // 4 if bev_bottleneck else out,
                  out, "bevdet" if k == 0 else None)
            cin = out
    lss = config["img_bev_encoder_neck"]
    extra = lss.get("extra_upsample", 2)
    wide = lss["out_channels"] * (2 if extra else 1)
    conv("img_bev_encoder_neck.conv.0", wide, lss["in_channels"], 3)
    norm("img_bev_encoder_neck.conv.1", wide)
    conv("img_bev_encoder_neck.conv.3", wide, wide, 3)
    norm("img_bev_encoder_neck.conv.4", wide)
    if extra:
        conv("img_bev_encoder_neck.up2.1", lss["out_channels"], wide, 3)
        norm("img_bev_encoder_neck.up2.2", lss["out_channels"])
        conv("img_bev_encoder_neck.up2.4", lss["out_channels"],
             lss["out_channels"], 1, True)

    head = config["head"]
    share, hidden, k = (head["share_conv_channel"], head["head_conv"],
                        head["final_kernel"])
    conv("pts_bbox_head.shared_conv.conv", share, lss["out_channels"], 3)
    norm("pts_bbox_head.shared_conv.bn", share)
    for t, task in enumerate(head["tasks"]):
        outputs = [(h, head["common_heads"][h]) for h in HEADS
                   if h in head["common_heads"]]
        outputs.append(("heatmap", len(task["class_names"])))
        for name, channels in outputs:
            prefix = "pts_bbox_head.task_heads.%d.%s" % (t, name)
            conv(prefix + ".0.conv", hidden, share, k)
            norm(prefix + ".0.bn", hidden)
            conv(prefix + ".1", channels, hidden, k, True)
    return shapes


def check_tensors(config, shapes_in_file):
    """As the C model layer: every implied tensor there with its shape, no
    tensor of the model's modules left unused."""
    problems = []
    expected = expected_tensors(config)
    for name in shapes_in_file:
        if name.startswith(MODEL_PREFIXES) and name not in expected and \
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
            "the checkpoint does not match the config (fix the config "
            "values, see --help):\n  " + "\n  ".join(problems[:20]) +
            ("\n  ... and %d more" % (len(problems) - 20)
             if len(problems) > 20 else ""))


def check_geometry(config, state):
    """The view transformer's dx, bx, nx (per axis: step, min + step / 2,
    cells) and frustum [D][fH][fW][3] against the config, when the
    checkpoint holds them."""
    grid = config["grid_config"]
    bounds = [grid["xbound"], grid["ybound"], grid["zbound"]]
    want = {"img_view_transformer.dx": [b[2] for b in bounds],
            "img_view_transformer.bx": [b[0] + b[2] / 2 for b in bounds],
            "img_view_transformer.nx": [(b[1] - b[0]) / b[2] for b in bounds]}
    for name, values in want.items():
        if name in state:
            got = [float(v) for v in state[name].reshape(-1).tolist()]
            if len(got) != 3 or any(abs(g - w) > 1e-4 * max(1, abs(w))
                                    for g, w in zip(got, values)):
                raise ConversionError(
                    "the checkpoint's %s is %s, grid_config gives %s: the "
                    "model was trained on another grid" %
                    (name, got, values))
    name = "img_view_transformer.frustum"
    if name in state:
        h, w = config["data_config"]["input_size"]
        ds = config["img_view_transformer"].get("downsample", 16)
        shape = [depth_bins(config), h // ds, w // ds, 3]
        if list(state[name].shape) != shape:
            raise ConversionError(
                "the checkpoint's frustum is %s, data_config and grid_config "
                "give %s" % (list(state[name].shape), shape))


# ---- the config -----------------------------------------------------------

def validate_config(config):
    """The checks that need no tensors."""
    if config.get("architecture") != "bevdet":
        raise ConversionError("architecture must be bevdet")
    data = config["data_config"]
    if len(data["cams"]) != data.get("Ncams", len(data["cams"])):
        raise ConversionError("data_config.Ncams %d differs from the %d cams"
                              % (data["Ncams"], len(data["cams"])))
    grid = config["grid_config"]
    for key in ("xbound", "ybound", "zbound"):
        b = grid[key]
        n = (b[1] - b[0]) / b[2]
        if b[2] <= 0 or b[1] <= b[0] or abs(n - round(n)) > 1e-6 * max(1, n):
            raise ConversionError("grid_config.%s %s: not a whole number of "
                                  "steps" % (key, b))
    blocks, base, stem, bottleneck = backbone(config)
    indices = config["img_backbone"]["out_indices"]
    neck = config["img_neck"]
    ins = [stage_channels(config, i) for i in indices]
    if list(neck["in_channels"]) != ins:
        raise ConversionError("img_neck.in_channels %s: the ResNet-%d's "
                              "stages %s have %s channels" %
                              (neck["in_channels"],
                               config["img_backbone"]["depth"], indices, ins))
    if list(neck.get("out_ids", [0])) != [0]:
        raise ConversionError("img_neck.out_ids must be [0] (FPNForBEVDet "
                              "returns that level)")
    vt = config["img_view_transformer"]
    if vt.get("numC_input", 512) != neck["out_channels"]:
        raise ConversionError("img_view_transformer.numC_input %d differs "
                              "from img_neck.out_channels %d" %
                              (vt.get("numC_input", 512),
                               neck["out_channels"]))
    h, w = data["input_size"]
    ds = vt.get("downsample", 16)
    if h % 32 or w % 32 or ds != 16:
        raise ConversionError("data_config.input_size %s: the ResNet's "
                              "stride-16 features must be input / 16 "
                              "(a multiple of 32, downsample 16)" % [h, w])
    nz = axis_cells(grid["zbound"])
    bev_in = config["img_bev_encoder_backbone"]["numC_input"]
    if bev_in != vt.get("numC_Trans", 64) * nz:
        raise ConversionError("img_bev_encoder_backbone.numC_input %d is "
                              "not numC_Trans x z cells (%d)" %
                              (bev_in, vt.get("numC_Trans", 64) * nz))
    layers, channels, strides, ids, _ = bev_backbone(config)
    lss = config["img_bev_encoder_neck"]
    index = lss.get("input_feature_index", [0, 2])
    cat = channels[ids[index[0]]] + channels[ids[index[1]]]
    if lss["in_channels"] != cat:
        raise ConversionError("img_bev_encoder_neck.in_channels %d: the "
                              "two backbone outputs it concatenates have %d"
                              % (lss["in_channels"], cat))
    # the head's map: the grid through the BEV backbone and FPN_LSS
    nx, ny = axis_cells(grid["xbound"]), axis_cells(grid["ybound"])
    size = [ny, nx]
    sizes = []
    for s in strides:
        size = [(v - 1) // s + 1 for v in size]
        sizes.append(size)
    outs = [sizes[i] for i in ids]
    low, high = outs[index[0]], outs[index[1]]
    scale = lss.get("scale_factor", 4)
    if [v * scale for v in high] != low:
        raise ConversionError("FPN_LSS upsamples a %s map by %d to "
                              "concatenate it with a %s one" %
                              (high, scale, low))
    extra = lss.get("extra_upsample", 2) or 1
    head_map = [v * extra for v in low]
    coder = config["coder"]
    for axis, (key, cells) in enumerate((("xbound", head_map[1]),
                                         ("ybound", head_map[0]))):
        b = grid[key]
        covered = coder["out_size_factor"] * coder["voxel_size"][axis] * cells
        if abs(covered - (b[1] - b[0])) > 1e-4 * (b[1] - b[0]) or \
                abs(coder["pc_range"][axis] - b[0]) > 1e-4 * (b[1] - b[0]):
            raise ConversionError(
                "the coder places the %d head cells along %s over [%g, %g], "
                "grid_config covers [%g, %g]" %
                (cells, "xy"[axis], coder["pc_range"][axis],
                 coder["pc_range"][axis] + covered, b[0], b[1]))
    if coder["max_num"] > head_map[0] * head_map[1]:
        raise ConversionError("coder.max_num %d exceeds the %d cells of a "
                              "head map" % (coder["max_num"],
                                            head_map[0] * head_map[1]))
    nms = config["test_nms"]
    n_tasks = len(config["head"]["tasks"])
    types = nms["nms_type"] if isinstance(nms["nms_type"], list) else \
        [nms["nms_type"]] * n_tasks
    if len(types) != n_tasks or any(t not in ("rotate", "circle")
                                    for t in types):
        raise ConversionError("test_nms.nms_type %r: rotate or circle, one "
                              "or one per task" % (nms["nms_type"],))
    if "circle" in types and len(nms.get("min_radius", [])) != n_tasks:
        raise ConversionError("circle NMS needs test_nms.min_radius, one per "
                              "task")
    return config


def nms_summary(config):
    """One line per task: which test-time NMS the file holds."""
    nms = config["test_nms"]
    tasks = config["head"]["tasks"]
    n = len(tasks)

    def per_task(key, fallback):
        value = nms.get(key, fallback)
        return value if isinstance(value, list) else [value] * n

    lines = []
    for t, (kind, thr, scale) in enumerate(zip(
            per_task("nms_type", "rotate"), per_task("nms_thr", 0.2),
            per_task("nms_rescale_factor", 1.0))):
        names = tasks[t]["class_names"]
        if kind == "circle":
            rule = "circle: a centre within squared distance %g m^2 of a " \
                "kept one goes" % nms["min_radius"][t]
        else:
            scales = scale if isinstance(scale, list) else [scale] * \
                len(names)
            scaled = ", ".join("%s x%g" % (c, f) for c, f in
                               zip(names, scales) if f != 1)
            rule = "rotate: IoU > %g suppresses, the %d best first%s" % (
                thr, nms["pre_max_size"],
                "; sizes scaled for the test: " + scaled if scaled else "")
        lines.append("  task %d (%s): %s" % (t, ", ".join(names), rule))
    return "test-time NMS (bevdetect model-nms=true), at most %d boxes a " \
        "task:\n%s" % (nms["post_max_size"], "\n".join(lines))


# ---- a BEVDet config file ---------------------------------------------------

def exec_config(path, seen=None):
    """The variables of a BEVDet (mmcv) config file, its _base_ files'
    merged under them as mmcv merges dicts."""
    seen = seen or set()
    path = os.path.abspath(path)
    if path in seen:
        raise ConversionError("%s includes itself through _base_" % path)
    seen.add(path)
    with open(path) as f:
        source = f.read()
    namespace = {"__file__": path}
    try:
        exec(compile(source, path, "exec"), namespace)
    except Exception as e:
        raise ConversionError("%s could not be executed: %s" % (path, e))
    values = {k: v for k, v in namespace.items()
              if not k.startswith("__") and not callable(v) and
              not isinstance(v, type(os))}
    bases = values.pop("_base_", [])
    if isinstance(bases, str):
        bases = [bases]
    merged = {}
    for base in bases:
        merged = common.merge(merged, exec_config(
            os.path.join(os.path.dirname(path), base), seen))
    return common.merge(merged, values)


def from_bevdet_config(cfg):
    """Our keys from a BEVDet config's variables (bevdet-r50.py's names);
    what the config does not say keeps its default."""
    out = {}
    model = cfg.get("model")
    if not isinstance(model, dict) or model.get("type") != "BEVDet":
        raise ConversionError("the config has no model of type BEVDet")
    vt = model.get("img_view_transformer", {})
    data = vt.get("data_config", cfg.get("data_config"))
    grid = vt.get("grid_config", cfg.get("grid_config"))
    if data:
        out["data_config"] = {k: list(v) if isinstance(v, tuple) else v
                              for k, v in data.items()
                              if k in ("cams", "Ncams", "input_size",
                                       "src_size", "resize_test", "crop_h")}
    if grid:
        if not all(k in grid for k in ("xbound", "ybound", "zbound",
                                       "dbound")):
            raise ConversionError("grid_config %s: BEVDet master's xbound, "
                                  "ybound, zbound and dbound are read" %
                                  sorted(grid))
        out["grid_config"] = {k: list(grid[k]) for k in
                              ("xbound", "ybound", "zbound", "dbound")}

    def take(section, keys, unsupported=()):
        given = model.get(section)
        if given is None:
            return None
        for key in unsupported:
            if given.get(key) not in (None, False):
                raise ConversionError("%s.%s is not supported" %
                                      (section, key))
        return {k: list(v) if isinstance(v, tuple) else v
                for k, v in given.items() if k in keys}

    backbone_cfg = take("img_backbone", ("type", "depth", "num_stages",
                                         "out_indices", "style",
                                         "base_channels", "stem_channels"),
                        ("dcn", "plugins", "deep_stem", "avg_down"))
    if backbone_cfg is not None:
        given = model["img_backbone"]
        for key, default in (("strides", (1, 2, 2, 2)),
                             ("dilations", (1, 1, 1, 1))):
            if tuple(given.get(key, default)) != default:
                raise ConversionError("img_backbone.%s %s is not supported" %
                                      (key, given[key]))
        out["img_backbone"] = backbone_cfg
    neck = take("img_neck", ("type", "in_channels", "out_channels",
                             "num_outs", "start_level", "out_ids"),
                ("add_extra_convs", "no_norm_on_lateral", "norm_cfg",
                 "act_cfg"))
    if neck is not None:
        out["img_neck"] = neck
    if vt:
        out["img_view_transformer"] = {
            k: v for k, v in vt.items()
            if k in ("type", "numC_input", "numC_Trans", "downsample")}
    bev = take("img_bev_encoder_backbone",
               ("type", "numC_input", "num_layer", "num_channels", "stride",
                "backbone_output_ids", "block_type"))
    if bev is not None:
        out["img_bev_encoder_backbone"] = bev
    lss = take("img_bev_encoder_neck",
               ("type", "in_channels", "out_channels", "scale_factor",
                "input_feature_index", "extra_upsample"), ("lateral",))
    if lss is not None:
        out["img_bev_encoder_neck"] = lss
    head = model.get("pts_bbox_head")
    if head is not None:
        if head.get("type", "CenterHead") != "CenterHead":
            raise ConversionError("pts_bbox_head.type %s: CenterHead only" %
                                  head.get("type"))
        ours = {"tasks": [{"class_names": list(t["class_names"])}
                          for t in head["tasks"]]}
        common_heads = {}
        for name, spec in head.get("common_heads", {}).items():
            channels, convs = (spec if isinstance(spec, (list, tuple))
                               else (spec, 2))
            if convs != 2:
                raise ConversionError("common_heads.%s: %d convs, "
                                      "SeparateHead's default 2 only" %
                                      (name, convs))
            common_heads[name] = channels
        if common_heads:
            ours["common_heads"] = common_heads
        if "share_conv_channel" in head:
            ours["share_conv_channel"] = head["share_conv_channel"]
        separate = head.get("separate_head", {})
        if "final_kernel" in separate:
            ours["final_kernel"] = separate["final_kernel"]
        if "head_conv" in separate or "head_conv" in head:
            ours["head_conv"] = separate.get("head_conv", head.get(
                "head_conv"))
        if "norm_bbox" in head:
            ours["norm_bbox"] = bool(head["norm_bbox"])
        out["head"] = ours
        coder = head.get("bbox_coder", {})
        out["coder"] = {k: list(coder[k]) if isinstance(coder[k], tuple)
                        else coder[k] for k in
                        ("post_center_range", "max_num", "score_threshold",
                         "out_size_factor", "voxel_size", "pc_range")
                        if k in coder}
        if "in_channels" in head and lss is not None and \
                head["in_channels"] != lss.get("out_channels"):
            raise ConversionError("pts_bbox_head.in_channels %d differs "
                                  "from img_bev_encoder_neck.out_channels"
                                  % head["in_channels"])
    test = (model.get("test_cfg") or {}).get("pts")
    if test is not None:
        if test.get("max_pool_nms"):
            raise ConversionError("test_cfg.pts.max_pool_nms is not "
                                  "supported")
        nms = {}
        for key in ("nms_type", "nms_thr", "nms_rescale_factor",
                    "min_radius", "pre_max_size", "post_max_size"):
            if key in test:
                value = test[key]
                nms[key] = [list(v) if isinstance(v, tuple) else v
                            for v in value] if isinstance(
                                value, (list, tuple)) else value
        out["test_nms"] = nms
        coder = out.get("coder", {})
        if "score_threshold" in test and test["score_threshold"] > \
                coder.get("score_threshold", test["score_threshold"]):
            raise ConversionError(
                "test_cfg.pts.score_threshold %g is above the coder's %g: "
                "BEVDet then drops boxes a second time, which bevdetect does "
                "not" % (test["score_threshold"], coder["score_threshold"]))
        limit = test.get("post_center_limit_range")
        if limit is not None and "post_center_range" in coder and \
                list(limit) != list(coder["post_center_range"]):
            raise ConversionError("test_cfg.pts.post_center_limit_range "
                                  "differs from the coder's "
                                  "post_center_range")
    return out


def build_config(bevdet_config=None, config_file=None, settings=()):
    config = copy.deepcopy(DEFAULT_CONFIG)
    if bevdet_config:
        override = from_bevdet_config(exec_config(bevdet_config))
        # a list of per-task values replaces the whole test_nms
        if "test_nms" in override:
            config["test_nms"] = common.merge(
                {"pre_max_size": 1000, "post_max_size": 83},
                override.pop("test_nms"))
        heads = override.get("head", {}).get("common_heads")
        config = common.merge(config, override)
        # the config's heads are all the heads (no vel: none)
        if heads is not None:
            config["head"]["common_heads"] = heads
    if config_file:
        with open(config_file) as f:
            config = common.merge(config, json.load(f))
    for setting in settings:
        common.apply_setting(config, setting)
    return validate_config(config)


# ---- writing ----------------------------------------------------------------

def convert(checkpoint, output, config, keep_dtype=False):
    """Writes the weights file; returns the number of tensors."""
    import torch  # noqa: F401  (load_state_dict needs it)
    state = common.load_state_dict(common.load_checkpoint(checkpoint),
                                   checkpoint)
    check_geometry(config, state)
    state = {name: value for name, value in state.items()
             if name not in VIEW_TRANSFORMER_GEOMETRY}
    check_tensors(config, {name: list(t.shape) for name, t in state.items()})
    tensors = []
    for name, value in state.items():
        if not name.startswith(MODEL_PREFIXES):
            continue
        dtype, data = common.tensor_bytes(value, keep_dtype)
        tensors.append((name, dtype, list(value.shape), data))
    common.write_safetensors(output, tensors,
                             {METADATA_KEY: json.dumps(config)})
    return len(tensors)


def self_test():
    """The mapping of bevdet-r50.py's values, the tensor list and the
    checks, without torch."""
    import tempfile
    config = validate_config(copy.deepcopy(DEFAULT_CONFIG))
    shapes = expected_tensors(config)
    assert shapes["img_backbone.conv1.weight"] == [64, 3, 7, 7]
    assert shapes["img_backbone.layer1.0.downsample.0.weight"] == \
        [256, 64, 1, 1]
    assert "img_backbone.layer1.1.downsample.0.weight" not in shapes
    assert shapes["img_backbone.layer4.2.conv3.weight"] == [2048, 512, 1, 1]
    assert shapes["img_neck.lateral_convs.1.conv.weight"] == \
        [512, 2048, 1, 1]
    assert shapes["img_view_transformer.depthnet.weight"] == \
        [123, 512, 1, 1]
    assert shapes["img_bev_encoder_backbone.layers.0.0.downsample.weight"] \
        == [128, 64, 3, 3]
    assert shapes["img_bev_encoder_backbone.layers.2.1.conv2.weight"] == \
        [512, 512, 3, 3]
    assert shapes["img_bev_encoder_neck.conv.0.weight"] == [512, 640, 3, 3]
    assert shapes["img_bev_encoder_neck.up2.4.bias"] == [256]
    assert shapes["pts_bbox_head.shared_conv.conv.weight"] == \
        [64, 256, 3, 3]
    assert shapes["pts_bbox_head.task_heads.5.heatmap.1.weight"] == \
        [2, 64, 3, 3]
    # ResNet-50 has 53 convs with a BN (5 tensors each), the neck 3 convs
    # with a bias, the depth net 1
    img = [n for n in shapes if n.startswith("img_backbone.")]
    assert len(img) == 53 * 5, len(img)
    summary = nms_summary(config)
    assert "task 3 (barrier): circle" in summary and \
        "pedestrian x4.5, traffic_cone x9" in summary, summary
    # the config file's values, read as BEVDet's config gives them
    source = (
        "_base_ = ['base.py']\n"
        "point_cloud_range = [-51.2, -51.2, -5.0, 51.2, 51.2, 3.0]\n"
        "data_config = {'cams': ['CAM_FRONT', 'CAM_BACK'], 'Ncams': 2,\n"
        "    'input_size': (256, 704), 'src_size': (900, 1600),\n"
        "    'resize': (-0.06, 0.11), 'crop_h': (0.0, 0.0),\n"
        "    'resize_test': 0.04}\n"
        "grid_config = {'xbound': [-51.2, 51.2, 0.8],\n"
        "    'ybound': [-51.2, 51.2, 0.8], 'zbound': [-10.0, 10.0, 20.0],\n"
        "    'dbound': [1.0, 60.0, 1.0]}\n"
        "numC_Trans = 64\n"
        "model = dict(type='BEVDet',\n"
        "  img_backbone=dict(type='ResNet', depth=18, num_stages=4,\n"
        "      out_indices=(2, 3), frozen_stages=-1, style='pytorch'),\n"
        "  img_neck=dict(type='FPNForBEVDet', in_channels=[256, 512],\n"
        "      out_channels=512, num_outs=1, start_level=0, out_ids=[0]),\n"
        "  img_view_transformer=dict(type='ViewTransformerLiftSplatShoot',\n"
        "      grid_config=grid_config, data_config=data_config,\n"
        "      numC_Trans=numC_Trans),\n"
        "  img_bev_encoder_backbone=dict(type='ResNetForBEVDet',\n"
        "      numC_input=numC_Trans),\n"
        "  img_bev_encoder_neck=dict(type='FPN_LSS',\n"
        "      in_channels=numC_Trans * 8 + numC_Trans * 2,\n"
        "      out_channels=256),\n"
        "  pts_bbox_head=dict(type='CenterHead', in_channels=256,\n"
        "      tasks=[dict(num_class=1, class_names=['car']),\n"
        "             dict(num_class=1, class_names=['pedestrian'])],\n"
        "      common_heads=dict(reg=(2, 2), height=(1, 2), dim=(3, 2),\n"
        "          rot=(2, 2)),\n"
        "      share_conv_channel=64,\n"
        "      bbox_coder=dict(type='CenterPointBBoxCoder',\n"
        "          pc_range=point_cloud_range[:2],\n"
        "          post_center_range=[-61.2, -61.2, -10.0, 61.2, 61.2, 10.0],\n"
        "          max_num=500, score_threshold=0.1, out_size_factor=8,\n"
        "          voxel_size=[0.1, 0.1], code_size=9),\n"
        "      separate_head=dict(type='SeparateHead', init_bias=-2.19,\n"
        "          final_kernel=3), norm_bbox=True),\n"
        "  test_cfg=dict(pts=dict(\n"
        "      post_center_limit_range=[-61.2, -61.2, -10.0, 61.2, 61.2,\n"
        "          10.0], max_pool_nms=False, min_radius=[4, 0.175],\n"
        "      score_threshold=0.1, pre_max_size=1000, post_max_size=83,\n"
        "      nms_type=['rotate', 'rotate'], nms_thr=[0.2, 0.5],\n"
        "      nms_rescale_factor=[1.0, [4.5]])))\n")
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "base.py"), "w") as f:
            f.write("dataset_type = 'NuScenesDataset'\n")
        path = os.path.join(tmp, "bevdet-r18.py")
        with open(path, "w") as f:
            f.write(source)
        got = build_config(path)
        assert got["img_backbone"]["depth"] == 18
        assert got["img_neck"]["in_channels"] == [256, 512]
        assert got["data_config"]["cams"] == ["CAM_FRONT", "CAM_BACK"]
        assert got["data_config"]["input_size"] == [256, 704]
        assert "resize" not in got["data_config"]
        assert got["img_bev_encoder_neck"]["in_channels"] == 640
        assert got["head"]["common_heads"] == {"reg": 2, "height": 1,
                                               "dim": 3, "rot": 2}
        assert len(got["head"]["tasks"]) == 2
        assert got["test_nms"]["nms_rescale_factor"] == [1.0, [4.5]]
        assert got["test_nms"]["nms_thr"] == [0.2, 0.5]
        shapes = expected_tensors(got)
        assert shapes["img_backbone.layer2.0.downsample.0.weight"] == \
            [128, 64, 1, 1]
        assert "img_backbone.layer1.0.downsample.0.weight" not in shapes
        assert "pts_bbox_head.task_heads.0.vel.1.weight" not in shapes
        # a checkpoint of another grid is refused
        bad = source.replace("'dbound': [1.0, 60.0, 1.0]",
                             "'dbound': [1.0, 60.0, 0.5]")
        with open(path, "w") as f:
            f.write(bad)
        got = build_config(path)
        assert expected_tensors(got)[
            "img_view_transformer.depthnet.weight"] == [118 + 64, 512, 1, 1]
    for broken, words in (
            ({"img_neck": {"in_channels": [1024, 1024]}}, "stages"),
            ({"grid_config": {"xbound": [-51.2, 51.2, 0.7]}}, "whole"),
            ({"coder": {"pc_range": [-51.2, -50]}}, "along y"),
            ({"img_bev_encoder_neck": {"in_channels": 600}}, "concatenates"),
            ({"test_nms": {"nms_type": "square"}}, "rotate or circle")):
        try:
            validate_config(common.merge(DEFAULT_CONFIG, broken))
        except ConversionError as e:
            assert words in str(e), (words, str(e))
        else:
            raise AssertionError("%s passed" % broken)
    print("self-test passed: %d tensors in bevdet-r50" %
          len(expected_tensors(DEFAULT_CONFIG)))


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("checkpoint", nargs="?", help="BEVDet checkpoint")
    parser.add_argument("-o", "--output", help="weights file to write")
    parser.add_argument("--bevdet-config", help="BEVDet's config .py of "
                        "the checkpoint (default: bevdet-r50.py's values)")
    parser.add_argument("--config", help="JSON file of our keys "
                        "(docs/weights.md) replacing those values")
    parser.add_argument("--set", action="append", default=[],
                        metavar="KEY=JSON", help="one value, e.g. "
                        "test_nms.post_max_size=100")
    parser.add_argument("--keep-dtype", action="store_true",
                        help="store F16/BF16 tensors as they are (default "
                        "F32)")
    parser.add_argument("--print-config", action="store_true",
                        help="print the metadata that would be written, "
                        "exit")
    parser.add_argument("--self-test", action="store_true",
                        help="check the mapping and the tensor list, exit")
    args = parser.parse_args(argv)
    try:
        if args.self_test:
            self_test()
            return 0
        config = build_config(args.bevdet_config, args.config, args.set)
        if args.print_config:
            print(json.dumps(config, indent=2))
            print(nms_summary(config), file=sys.stderr)
            return 0
        if not args.checkpoint or not args.output:
            parser.error("a checkpoint and -o OUTPUT are needed")
        count = convert(args.checkpoint, args.output, config,
                        args.keep_dtype)
    except ConversionError as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    print("wrote %s: %d tensors, bevdet with a ResNet-%d, %d cameras of "
          "%d x %d, %d tasks" %
          (args.output, count, config["img_backbone"]["depth"],
           len(config["data_config"]["cams"]),
           config["data_config"]["input_size"][1],
           config["data_config"]["input_size"][0],
           len(config["head"]["tasks"])))
    print(nms_summary(config))
    return 0


if __name__ == "__main__":
    sys.exit(main())
