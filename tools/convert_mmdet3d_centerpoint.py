#!/usr/bin/env python3
"""Convert an mmdetection3d CenterPoint-pillar checkpoint to the weights file
that gst-perception's pillarencode and bevdetect read (docs/weights.md).

    python3 tools/convert_mmdet3d_centerpoint.py CHECKPOINT.pth -o model.safetensors \
        [--mmdet-config CONFIG.py] [--config values.json] [--set KEY=JSON ...] \
        [--keep-dtype]

CHECKPOINT.pth: a checkpoint saved by mmdetection3d (or any torch.save of a
dict holding a 'state_dict', or of the state_dict itself) of a model built
like configs/_base_/models/centerpoint_pillar02_second_secfpn_nus.py:
PillarFeatureNet (legacy=False), PointPillarsScatter, SECOND, SECONDFPN and
CenterHead with the CenterPointBBoxCoder.

The model's hyperparameters, in order, each overriding the one before:
the defaults below (the nuScenes config, centerpoint_pillar02_second_secfpn_nus
with its 8xb4-cyclic-20e_nus-3d point cloud range); the mmdetection3d
config saved in the checkpoint's meta (mmengine's meta['cfg'], mmcv's
meta['config']), when there is one; the mmdetection3d config file the model
was trained with (--mmdet-config CONFIG.py, its _base_ files followed: the
voxel layer, the PFN, backbone, neck and head settings, the coder and the
test-time NMS of test_cfg.pts); a JSON file in the shape of the defaults
(--config, any subset of the keys); single values (--set
test_nms.type='"circle"' --set max_voxels=30000). An mmdetection3d config
is read, never run: its assignments are evaluated on literals, dict(),
lists, names assigned before, arithmetic, slices and sum(); anything else
is left out. The converter says which test-time NMS the file will use and
where that came from, and checks the result against the checkpoint's
tensors (every tensor the config implies present, with the shape it
implies) before it writes.

Output: one safetensors file with every tensor of the state_dict under its
own name (num_batches_tracked dropped; floating tensors stored as F32 unless
--keep-dtype) and the metadata key `p3d.model` holding the config as JSON.

Only loading the checkpoint needs torch; the safetensors writing is plain
Python.  `--self-test` checks the writer, the reader and the shape rules
without torch.
"""

import argparse
import ast
import copy
import json
import math
import operator
import os
import struct
import sys

METADATA_KEY = "p3d.model"

# The per-point feature sets pillarfeat computes, and their channel counts.
FEATURE_CHANNELS = {
    "pointpillars-10": 10,
    "mmdet3d-9": 9,
    "pointpillars-11": 11,
    "mmdet3d-11": 11,
}

# mmdetection3d's centerpoint_pillar02_second_secfpn nuScenes config.
DEFAULT_CONFIG = {
    "architecture": "centerpoint-pillar",
    "version": 1,
    "point_channels": 5,
    "features": "mmdet3d-11",
    "voxel_size": [0.2, 0.2, 8],
    "point_cloud_range": [-51.2, -51.2, -5.0, 51.2, 51.2, 3.0],
    "max_points": 20,
    "max_voxels": 40000,
    "grid": [512, 512, 1],
    "pfn": {"channels": [64], "bn_eps": 0.001},
    "backbone": {"out_channels": [64, 128, 256], "layer_nums": [3, 5, 5],
                 "layer_strides": [2, 2, 2], "bn_eps": 0.001},
    "neck": {"out_channels": [128, 128, 128], "upsample_strides": [0.5, 1, 2],
             "use_conv_for_no_stride": True, "bn_eps": 0.001},
    "head": {
        "share_conv_channel": 64, "head_conv": 64, "final_kernel": 3,
        "bn_eps": 1e-5,
        "tasks": [
            {"class_names": ["car"]},
            {"class_names": ["truck", "construction_vehicle"]},
            {"class_names": ["bus", "trailer"]},
            {"class_names": ["barrier"]},
            {"class_names": ["motorcycle", "bicycle"]},
            {"class_names": ["pedestrian", "traffic_cone"]},
        ],
        "common_heads": {"reg": 2, "height": 1, "dim": 3, "rot": 2, "vel": 2},
        "norm_bbox": True,
    },
    "coder": {"post_center_range": [-61.2, -61.2, -10.0, 61.2, 61.2, 10.0],
              "max_num": 500, "score_threshold": 0.1, "out_size_factor": 4,
              "voxel_size": [0.2, 0.2], "pc_range": [-51.2, -51.2]},
    "test_nms": {"type": "rotate", "min_radius": [4, 12, 10, 1, 0.85, 0.175],
                 "nms_thr": 0.2, "pre_max_size": 1000, "post_max_size": 83},
}

HEADS = ("reg", "height", "dim", "rot", "vel")

# safetensors dtypes and their sizes; the names torch uses for them.
DTYPE_SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
               "I16": 2, "U16": 2, "F16": 2, "BF16": 2, "I32": 4, "U32": 4,
               "F32": 4, "F64": 8, "I64": 8, "U64": 8}


class ConversionError(Exception):
    """A checkpoint or config the converter cannot turn into a weights file."""


def merge(base, override):
    """base with override's keys replaced, recursively into objects."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def apply_setting(config, setting):
    """--set a.b.c=JSON: one value, the path's objects must exist."""
    if "=" not in setting:
        raise ConversionError("--set %r: expected KEY=JSON" % setting)
    path, text = setting.split("=", 1)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConversionError("--set %s: %r is not JSON (%s); quote strings "
                              "as '\"circle\"'" % (path, text, e))
    node = config
    keys = path.split(".")
    for key in keys[:-1]:
        if not isinstance(node.get(key), dict):
            raise ConversionError("--set %s: %s is not an object of the "
                                  "config" % (path, key))
        node = node[key]
    node[keys[-1]] = value


def neck_kernel(stride, use_conv_for_no_stride):
    """(transposed, kernel) of a SECONDFPN deblock."""
    if stride > 1 or (stride == 1 and not use_conv_for_no_stride):
        return True, int(round(stride))
    return False, int(round(1 / stride))


def expected_tensors(config):
    """{name: shape} of every tensor the config implies, in the order of the
    network, with mmdetection3d's state_dict names."""
    shapes = {}

    def norm(prefix, channels):
        for part in ("weight", "bias", "running_mean", "running_var"):
            shapes["%s.%s" % (prefix, part)] = [channels]

    features = config["features"]
    if features not in FEATURE_CHANNELS:
        raise ConversionError("features %r is none of %s" %
                              (features, ", ".join(FEATURE_CHANNELS)))
    pfn = config["pfn"]["channels"]
    if len(pfn) != 1:
        raise ConversionError("pfn.channels %r: only one PFN layer is "
                              "supported" % (pfn,))
    shapes["pts_voxel_encoder.pfn_layers.0.linear.weight"] = [
        pfn[0], FEATURE_CHANNELS[features]]
    norm("pts_voxel_encoder.pfn_layers.0.norm", pfn[0])

    backbone = config["backbone"]
    n_stages = len(backbone["out_channels"])
    if not (len(backbone["layer_nums"]) == len(backbone["layer_strides"]) ==
            n_stages == len(config["neck"]["out_channels"]) ==
            len(config["neck"]["upsample_strides"])):
        raise ConversionError("backbone.out_channels, layer_nums, "
                              "layer_strides and neck.out_channels, "
                              "upsample_strides must have one entry per stage")
    in_channels = pfn[0]
    for s, out in enumerate(backbone["out_channels"]):
        for k in range(backbone["layer_nums"][s] + 1):
            shapes["pts_backbone.blocks.%d.%d.weight" % (s, 3 * k)] = [
                out, in_channels if k == 0 else out, 3, 3]
            norm("pts_backbone.blocks.%d.%d" % (s, 3 * k + 1), out)
        in_channels = out

    neck = config["neck"]
    for s, out in enumerate(neck["out_channels"]):
        transposed, k = neck_kernel(neck["upsample_strides"][s],
                                    neck.get("use_conv_for_no_stride", False))
        stage = backbone["out_channels"][s]
        shapes["pts_neck.deblocks.%d.0.weight" % s] = (
            [stage, out, k, k] if transposed else [out, stage, k, k])
        norm("pts_neck.deblocks.%d.1" % s, out)

    head = config["head"]
    share, hidden, k = (head["share_conv_channel"], head["head_conv"],
                        head["final_kernel"])
    shapes["pts_bbox_head.shared_conv.conv.weight"] = [
        share, sum(neck["out_channels"]), 3, 3]
    norm("pts_bbox_head.shared_conv.bn", share)
    for t, task in enumerate(head["tasks"]):
        outputs = [(h, head["common_heads"][h]) for h in HEADS
                   if h in head["common_heads"]]
        outputs.append(("heatmap", len(task["class_names"])))
        for name, channels in outputs:
            prefix = "pts_bbox_head.task_heads.%d.%s" % (t, name)
            shapes[prefix + ".0.conv.weight"] = [hidden, share, k, k]
            norm(prefix + ".0.bn", hidden)
            shapes[prefix + ".1.weight"] = [channels, hidden, k, k]
            shapes[prefix + ".1.bias"] = [channels]
    return shapes


# The state_dict prefixes of the modules the config describes: a tensor
# under them that the config does not imply means the config is wrong.
MODEL_PREFIXES = ("pts_voxel_encoder.", "pts_backbone.", "pts_neck.",
                  "pts_bbox_head.")


def check_tensors(config, shapes_in_file):
    """Every tensor the config implies is in the file with its shape, and
    the file has no other tensor of those modules."""
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


def write_safetensors(path, tensors, metadata):
    """tensors: [(name, dtype, shape, raw little-endian bytes)];
    metadata: {str: str}.  The header is padded with spaces to a multiple of
    8 bytes, as the safetensors library does, so the data stays aligned."""
    header = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    offset = 0
    names = set()
    for name, dtype, shape, data in tensors:
        if name in names or name == "__metadata__":
            raise ConversionError("tensor name %r used twice" % name)
        names.add(name)
        count = 1
        for size in shape:
            count *= size
        if len(data) != count * DTYPE_SIZES[dtype]:
            raise ConversionError("tensor %s: %d bytes for shape %s of %s" %
                                  (name, len(data), list(shape), dtype))
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, _, _, data in tensors:
            f.write(data)


def read_safetensors(path):
    """(metadata, {name: (dtype, shape, bytes)}), checking the header as the
    C reader does (for the self-test and the reference script)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ConversionError("%s: not a safetensors file" % path)
    (size,) = struct.unpack("<Q", blob[:8])
    if size > len(blob) - 8:
        raise ConversionError("%s: header length beyond the file" % path)
    header = json.loads(blob[8:8 + size].decode("utf-8"))
    data = blob[8 + size:]
    metadata = header.pop("__metadata__", {})
    tensors = {}
    spans = []
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        count = 1
        for s in entry["shape"]:
            count *= s
        if not 0 <= begin <= end <= len(data):
            raise ConversionError("%s: tensor %s outside the data" %
                                  (path, name))
        if end - begin != count * DTYPE_SIZES[entry["dtype"]]:
            raise ConversionError("%s: tensor %s size" % (path, name))
        tensors[name] = (entry["dtype"], entry["shape"], data[begin:end])
        if end > begin:
            spans.append((begin, end, name))
    spans.sort()
    for (b0, e0, n0), (b1, e1, n1) in zip(spans, spans[1:]):
        if e0 > b1:
            raise ConversionError("%s: tensors %s and %s overlap" %
                                  (path, n0, n1))
    return metadata, tensors


def validate_config(config):
    """The checks that need no tensors: the grid and the map sizes."""
    for i in range(3):
        cells = (config["point_cloud_range"][i + 3] -
                 config["point_cloud_range"][i]) / config["voxel_size"][i]
        if abs(cells - config["grid"][i]) > 1e-3:
            raise ConversionError(
                "grid %s disagrees with point_cloud_range / voxel_size "
                "(axis %d gives %g cells)" % (config["grid"], i, cells))
    if config["grid"][2] != 1:
        raise ConversionError("grid %s: a pillar model has one z cell" %
                              (config["grid"],))
    n_tasks = len(config["head"]["tasks"])
    nms = config["test_nms"]
    if nms["type"] not in ("rotate", "circle"):
        raise ConversionError("test_nms.type %r is neither rotate nor circle"
                              % nms["type"])
    if "min_radius" in nms and len(nms["min_radius"]) != n_tasks:
        raise ConversionError("test_nms.min_radius has %d entries for %d "
                              "tasks" % (len(nms["min_radius"]), n_tasks))
    if nms["type"] == "circle" and "min_radius" not in nms:
        raise ConversionError("circle NMS needs test_nms.min_radius")
    # the head's map: the backbone's first stride and the neck's first
    # stride decide it (the neck checks that all stages agree)
    height, width = config["grid"][1], config["grid"][0]
    sizes = []
    for s, stride in enumerate(config["backbone"]["layer_strides"]):
        height, width = (height - 1) // stride + 1, (width - 1) // stride + 1
        transposed, k = neck_kernel(
            config["neck"]["upsample_strides"][s],
            config["neck"].get("use_conv_for_no_stride", False))
        sizes.append((height * k, width * k) if transposed else
                     ((height - k) // k + 1, (width - k) // k + 1))
    if len(set(sizes)) != 1:
        raise ConversionError("the neck's stages give maps of sizes %s: "
                              "neck.upsample_strides disagree with "
                              "backbone.layer_strides" % sizes)
    osf = config["coder"]["out_size_factor"]
    if (sizes[0][0] * osf, sizes[0][1] * osf) != (config["grid"][1],
                                                  config["grid"][0]):
        raise ConversionError("coder.out_size_factor %d: the net maps the "
                              "grid %s to %s" % (osf, config["grid"][:2],
                                                 sizes[0]))
    if config["coder"]["max_num"] > sizes[0][0] * sizes[0][1]:
        raise ConversionError("coder.max_num %d exceeds the %d cells of a "
                              "head map" % (config["coder"]["max_num"],
                                            sizes[0][0] * sizes[0][1]))


# ---- mmdetection3d config files, read without running them ----

class _Unknown:
    """A value the reader cannot compute (a call it does not know, a name
    it has not seen): left out of the config."""


UNKNOWN = _Unknown()

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub,
           ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow}
_CALLS = {"dict": dict, "list": list, "tuple": tuple, "sum": sum,
          "len": len, "min": min, "max": max, "abs": abs, "round": round,
          "int": int, "float": float}


def _evaluate(node, names):
    """The value of the expression @node with the variables @names, or
    UNKNOWN: only literals, containers, names, arithmetic, subscripts and
    a few pure builtins, so that reading a config runs nothing of it."""
    def ev(n):
        value = _evaluate(n, names)
        if value is UNKNOWN:
            raise LookupError
        return value
    try:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [ev(e) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.Dict):
            # an entry that cannot be read is left out, not the dict
            out = {}
            for key, value in zip(node.keys, node.values):
                entry = _evaluate(value, names)
                if key is None and isinstance(entry, dict):
                    out.update(entry)
                elif key is not None and entry is not UNKNOWN:
                    out[ev(key)] = entry
            return out
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "dict" and not node.args:
            out = {}
            for k in node.keywords:
                entry = _evaluate(k.value, names)
                if k.arg is not None and entry is not UNKNOWN:
                    out[k.arg] = entry
            return out
        if isinstance(node, ast.Name):
            if node.id in names:
                return copy.deepcopy(names[node.id])
            return {"True": True, "False": False, "None": None}.get(
                node.id, UNKNOWN)
        if isinstance(node, ast.UnaryOp) and isinstance(
                node.op, (ast.USub, ast.UAdd)):
            value = ev(node.operand)
            return -value if isinstance(node.op, ast.USub) else +value
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.Subscript):
            target = ev(node.value)
            index = node.slice
            if isinstance(index, ast.Slice):
                return target[slice(
                    ev(index.lower) if index.lower else None,
                    ev(index.upper) if index.upper else None,
                    ev(index.step) if index.step else None)]
            return target[ev(index)]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in _CALLS:
            args = [ev(a) for a in node.args]
            kwargs = {k.arg: ev(k.value) for k in node.keywords
                      if k.arg is not None}
            return _CALLS[node.func.id](*args, **kwargs)
    except (LookupError, TypeError, ValueError, KeyError, IndexError,
            ZeroDivisionError, OverflowError):
        pass
    return UNKNOWN


def _merge_mmdet(base, override):
    """mmengine's merge: dicts key by key, _delete_=True replaces."""
    if not isinstance(base, dict) or not isinstance(override, dict):
        return copy.deepcopy(override)
    if override.get("_delete_", False):
        return {k: copy.deepcopy(v) for k, v in override.items()
                if k != "_delete_"}
    out = copy.deepcopy(base)
    for key, value in override.items():
        out[key] = _merge_mmdet(out.get(key), value) \
            if isinstance(value, dict) else copy.deepcopy(value)
    return out


def _base_path(here, module, level):
    """The file of a relative import in a new-style (read_base) config."""
    folder = here
    for _ in range(level - 1):
        folder = os.path.dirname(folder)
    return os.path.join(folder, *module.split(".")) + ".py"


def read_mmdet_config_text(text, path=None, seen=None):
    """The variables of an mmdetection3d config (its _base_ files merged
    under it) as plain Python values. Values the reader cannot compute are
    left out."""
    seen = set(seen or ())
    here = os.path.dirname(os.path.abspath(path)) if path else os.getcwd()
    try:
        tree = ast.parse(text, filename=path or "<config>")
    except SyntaxError as e:
        raise ConversionError("%s is not Python: %s" % (path or "the config",
                                                        e))
    names = {}

    def include(base):
        if not os.path.isabs(base):
            base = os.path.normpath(os.path.join(here, base))
        if base in seen:
            raise ConversionError("%s includes itself through _base_" % base)
        values = read_mmdet_config(base, seen | {base})
        for key, value in values.items():
            names[key] = _merge_mmdet(names.get(key), value)

    def statements(body):
        for node in body:
            if isinstance(node, ast.With) and any(
                    isinstance(i.context_expr, ast.Call) and
                    getattr(i.context_expr.func, "id", "") == "read_base"
                    for i in node.items):
                for inner in node.body:
                    if isinstance(inner, ast.ImportFrom) and inner.level > 0:
                        include(_base_path(here, inner.module or "",
                                           inner.level))
                continue
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                value = _evaluate(node.value, names)
                if name == "_base_":
                    for base in (value if isinstance(value, (list, tuple))
                                 else [value]):
                        if isinstance(base, str):
                            include(base)
                elif value is not UNKNOWN:
                    # a dict assigned in a file that has bases merges into
                    # theirs, as mmengine does
                    names[name] = _merge_mmdet(names.get(name), value) \
                        if isinstance(value, dict) else value
            elif isinstance(node, ast.Expr) and isinstance(
                    node.value, ast.Call) and isinstance(
                    node.value.func, ast.Attribute) and \
                    node.value.func.attr == "update" and isinstance(
                    node.value.func.value, ast.Name):
                # new-style configs: model.update(dict(...))
                target = node.value.func.value.id
                for arg in node.value.args:
                    value = _evaluate(arg, names)
                    if isinstance(value, dict) and target in names:
                        names[target] = _merge_mmdet(names[target], value)
    statements(tree.body)
    return {k: v for k, v in names.items() if not k.startswith("_")}


def read_mmdet_config(path, seen=None):
    with open(path) as f:
        return read_mmdet_config_text(f.read(), path,
                                      (seen or set()) | {os.path.abspath(path)})


def _norm_eps(module, default=None):
    norm = module.get("norm_cfg") if isinstance(module, dict) else None
    return norm.get("eps", default) if isinstance(norm, dict) else default


def settings_from_mmdet(values):
    """The keys of our config that an mmdetection3d config gives (those it
    holds; the others keep their values)."""
    model = values.get("model", {})
    out = {}
    if not isinstance(model, dict):
        return out
    layer = (model.get("data_preprocessor") or {}).get("voxel_layer") or \
        model.get("pts_voxel_layer") or {}
    if "max_num_points" in layer:
        out["max_points"] = layer["max_num_points"]
    if "voxel_size" in layer:
        out["voxel_size"] = list(layer["voxel_size"])
    if "point_cloud_range" in layer:
        out["point_cloud_range"] = list(layer["point_cloud_range"])
    elif "point_cloud_range" in values:
        out["point_cloud_range"] = list(values["point_cloud_range"])
    if "max_voxels" in layer:
        voxels = layer["max_voxels"]
        # (training, testing): the second is what inference uses
        out["max_voxels"] = voxels[1] if isinstance(
            voxels, (list, tuple)) else voxels
    encoder = model.get("pts_voxel_encoder") or {}
    if "in_channels" in encoder:
        out["point_channels"] = encoder["in_channels"]
    if "feat_channels" in encoder:
        out.setdefault("pfn", {})["channels"] = list(encoder["feat_channels"])
    if _norm_eps(encoder) is not None:
        out.setdefault("pfn", {})["bn_eps"] = _norm_eps(encoder)
    scatter = model.get("pts_middle_encoder") or {}
    if "output_shape" in scatter:
        shape = list(scatter["output_shape"])
        # mmdetection3d writes (rows, columns) = (y cells, x cells)
        out["grid"] = [shape[1], shape[0], 1]
    backbone = model.get("pts_backbone") or {}
    for key in ("out_channels", "layer_nums", "layer_strides"):
        if key in backbone:
            out.setdefault("backbone", {})[key] = list(backbone[key])
    if _norm_eps(backbone) is not None:
        out.setdefault("backbone", {})["bn_eps"] = _norm_eps(backbone)
    neck = model.get("pts_neck") or {}
    for key in ("out_channels", "upsample_strides"):
        if key in neck:
            out.setdefault("neck", {})[key] = list(neck[key])
    if "use_conv_for_no_stride" in neck:
        out.setdefault("neck", {})["use_conv_for_no_stride"] = \
            neck["use_conv_for_no_stride"]
    if _norm_eps(neck) is not None:
        out.setdefault("neck", {})["bn_eps"] = _norm_eps(neck)
    head = model.get("pts_bbox_head") or {}
    ours = {}
    if "tasks" in head:
        ours["tasks"] = [{"class_names": list(t["class_names"])}
                         for t in head["tasks"]]
    if "common_heads" in head:
        ours["common_heads"] = {
            name: (value[0] if isinstance(value, (list, tuple)) else value)
            for name, value in head["common_heads"].items()}
    if "share_conv_channel" in head:
        ours["share_conv_channel"] = head["share_conv_channel"]
    if "norm_bbox" in head:
        ours["norm_bbox"] = head["norm_bbox"]
    separate = head.get("separate_head") or {}
    if "head_conv" in separate:
        ours["head_conv"] = separate["head_conv"]
    if "final_kernel" in separate:
        ours["final_kernel"] = separate["final_kernel"]
    if ours:
        out["head"] = ours
    coder = head.get("bbox_coder") or {}
    ours = {k: (list(coder[k]) if isinstance(coder[k], (list, tuple))
                else coder[k])
            for k in ("post_center_range", "max_num", "score_threshold",
                      "out_size_factor", "voxel_size", "pc_range")
            if k in coder}
    if ours:
        out["coder"] = ours
    test = (model.get("test_cfg") or {}).get("pts") or {}
    nms = {}
    if "nms_type" in test:
        nms["type"] = test["nms_type"]
    for key in ("min_radius", "nms_thr", "pre_max_size", "post_max_size"):
        if key in test:
            nms[key] = list(test[key]) if isinstance(
                test[key], (list, tuple)) else test[key]
    if nms:
        out["test_nms"] = nms
    return out


def config_text_from_meta(meta):
    """The config text a checkpoint's meta holds (mmengine: 'cfg'; mmcv
    1.x: 'config'), or None."""
    if not isinstance(meta, dict):
        return None
    for key in ("cfg", "config"):
        if isinstance(meta.get(key), str):
            return meta[key]
    return None


def build_config(config_file=None, settings=(), mmdet_config=None,
                 meta_config_text=None, sources=None):
    """The config from its layers (see the module's help); @sources, when
    a dict, learns where test_nms.type came from."""
    config = copy.deepcopy(DEFAULT_CONFIG)
    origin = "the converter's default (nuScenes centerpoint_pillar02, " \
        "rotate)"
    if meta_config_text:
        mmdet = settings_from_mmdet(read_mmdet_config_text(meta_config_text))
        config = merge(config, mmdet)
        if "type" in mmdet.get("test_nms", {}):
            origin = "the config in the checkpoint's meta"
    if mmdet_config:
        mmdet = settings_from_mmdet(read_mmdet_config(mmdet_config))
        config = merge(config, mmdet)
        if "type" in mmdet.get("test_nms", {}):
            origin = mmdet_config
    if config_file:
        with open(config_file) as f:
            values = json.load(f)
        config = merge(config, values)
        if "type" in values.get("test_nms", {}):
            origin = config_file
    for setting in settings:
        apply_setting(config, setting)
        if setting.split("=", 1)[0] == "test_nms.type":
            origin = "--set"
    validate_config(config)
    if sources is not None:
        sources["test_nms.type"] = origin
    return config


def describe_nms(config, origin):
    """One line: the test-time NMS the weights file makes bevdetect run."""
    nms = config["test_nms"]
    if nms["type"] == "circle":
        what = "circle NMS (min_radius %s, squared metres per task)" % (
            nms.get("min_radius"),)
    else:
        what = "rotate NMS (IoU threshold %s)" % nms.get("nms_thr")
    return "test-time NMS: %s, pre_max_size %s, post_max_size %s; from %s" % (
        what, nms.get("pre_max_size"), nms.get("post_max_size"), origin)


def load_checkpoint(path):
    """The checkpoint as torch.load gives it (needs torch)."""
    try:
        import torch
    except ImportError:
        raise ConversionError("reading a .pth checkpoint needs PyTorch "
                              "(pip install torch); the rest of the "
                              "converter is plain Python")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # mmengine's and OpenPCDet's pickle more
        print("note: %s is not loadable with weights_only=True (%s); "
              "loading it fully: only do this with a checkpoint you trust"
              % (path, str(e).splitlines()[0]), file=sys.stderr)
        checkpoint = torch.load(path, map_location="cpu", weights_only=False)
    return checkpoint


def load_state_dict(checkpoint, path, key="state_dict"):
    """The checkpoint's @key (mmdetection3d and BEVDet: state_dict;
    OpenPCDet: model_state), or the checkpoint itself when it has none, as
    {name: tensor}."""
    import torch
    state = checkpoint.get(key, checkpoint) \
        if isinstance(checkpoint, dict) else None
    if not isinstance(state, dict):
        raise ConversionError("%s holds no %s" % (path, key))
    return {name: value for name, value in state.items()
            if torch.is_tensor(value) and
            not name.endswith("num_batches_tracked")}


def tensor_bytes(tensor, keep_dtype):
    """(safetensors dtype, raw little-endian bytes) of a torch tensor."""
    import torch
    names = {torch.float32: "F32", torch.float16: "F16",
             torch.bfloat16: "BF16", torch.float64: "F64",
             torch.int64: "I64", torch.int32: "I32", torch.int16: "I16",
             torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL"}
    tensor = tensor.detach().cpu()
    if tensor.is_floating_point() and not keep_dtype:
        tensor = tensor.to(torch.float32)
    if tensor.dtype not in names:
        raise ConversionError("dtype %s has no safetensors name" %
                              tensor.dtype)
    if sys.byteorder != "little":
        raise ConversionError("write the file on a little-endian machine")
    raw = tensor.contiguous().reshape(-1).view(torch.uint8)
    return names[tensor.dtype], raw.numpy().tobytes()


def convert(checkpoint, output, config, keep_dtype=False, loaded=None):
    if loaded is None:
        loaded = load_checkpoint(checkpoint)
    state = load_state_dict(loaded, checkpoint)
    check_tensors(config, {name: list(t.shape) for name, t in state.items()})
    tensors = []
    for name, value in state.items():
        dtype, data = tensor_bytes(value, keep_dtype)
        tensors.append((name, dtype, list(value.shape), data))
    write_safetensors(output, tensors,
                      {METADATA_KEY: json.dumps(config, sort_keys=False)})
    return len(tensors)


def self_test():
    """The writer, reader and shape rules on a tiny model, without torch."""
    import array
    import random
    import tempfile
    config = merge(DEFAULT_CONFIG, {
        "features": "pointpillars-10", "voxel_size": [1.0, 1.0, 8],
        "point_cloud_range": [-4, -4, -5, 4, 4, 3], "grid": [8, 8, 1],
        "pfn": {"channels": [4]},
        "backbone": {"out_channels": [4, 6, 8], "layer_nums": [1, 2, 0],
                     "layer_strides": [1, 2, 2]},
        "neck": {"out_channels": [3, 2, 3]},
        "head": {"share_conv_channel": 5, "head_conv": 4,
                 "tasks": [{"class_names": ["car"]},
                           {"class_names": ["pedestrian", "cyclist"]}]},
        "coder": {"out_size_factor": 2, "max_num": 10},
        "test_nms": {"type": "circle", "min_radius": [4, 0.5]},
    })
    validate_config(config)
    shapes = expected_tensors(config)
    assert shapes["pts_neck.deblocks.2.0.weight"] == [8, 3, 2, 2]
    assert shapes["pts_neck.deblocks.0.0.weight"] == [3, 4, 2, 2]
    assert shapes["pts_neck.deblocks.1.0.weight"] == [2, 6, 1, 1]
    assert shapes["pts_backbone.blocks.1.6.weight"] == [6, 6, 3, 3]
    assert shapes["pts_bbox_head.task_heads.1.heatmap.1.bias"] == [2]
    assert shapes["pts_bbox_head.shared_conv.conv.weight"] == [5, 8, 3, 3]
    # PFN 5, backbone 6 convs x 5, neck 3 x 5, shared 5, 2 x 6 heads x 7
    assert len(shapes) == 5 + 30 + 15 + 5 + 84, len(shapes)
    rng = random.Random(3)
    tensors, values = [], {}
    for name, shape in shapes.items():
        count = 1
        for s in shape:
            count *= s
        floats = array.array("f", [rng.uniform(-1, 1) for _ in range(count)])
        values[name] = floats
        if sys.byteorder != "little":
            floats.byteswap()
        tensors.append((name, "F32", shape, floats.tobytes()))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tiny.safetensors")
        write_safetensors(path, tensors,
                          {METADATA_KEY: json.dumps(config)})
        with open(path, "rb") as f:
            (size,) = struct.unpack("<Q", f.read(8))
        assert (8 + size) % 8 == 0, "data not aligned"
        metadata, read = read_safetensors(path)
        assert json.loads(metadata[METADATA_KEY]) == config
        check_tensors(config, {n: s for n, (_, s, _) in read.items()})
        for name, (dtype, shape, data) in read.items():
            back = array.array("f")
            back.frombytes(data)
            assert dtype == "F32" and back == values[name], name
        # the shape check names a tensor that disagrees
        wrong = {n: s for n, (_, s, _) in read.items()}
        wrong["pts_backbone.blocks.1.0.weight"] = [6, 3, 3, 3]
        del wrong["pts_neck.deblocks.1.1.running_var"]
        wrong["pts_backbone.blocks.2.3.weight"] = [8, 8, 3, 3]
        try:
            check_tensors(config, wrong)
        except ConversionError as e:
            assert "pts_backbone.blocks.1.0.weight has shape [6, 3, 3, 3]" \
                in str(e) and "[6, 4, 3, 3]" in str(e), str(e)
            assert "missing tensor pts_neck.deblocks.1.1.running_var" \
                in str(e), str(e)
            assert "pts_backbone.blocks.2.3.weight belongs to no layer" \
                in str(e), str(e)
        else:
            raise AssertionError("a wrong shape passed")
    for bad, words in (({"grid": [9, 8, 1]}, "disagrees"),
                       ({"coder": {"out_size_factor": 4}}, "out_size_factor"),
                       ({"neck": {"upsample_strides": [0.5, 1, 4]}},
                        "upsample_strides")):
        try:
            validate_config(merge(config, bad))
        except ConversionError as e:
            assert words in str(e), str(e)
        else:
            raise AssertionError("%s passed" % bad)
    # the nuScenes defaults are consistent: 512 / 4 = 128 cells a side
    validate_config(DEFAULT_CONFIG)
    nus = expected_tensors(DEFAULT_CONFIG)
    assert nus["pts_voxel_encoder.pfn_layers.0.linear.weight"] == [64, 11]
    assert nus["pts_neck.deblocks.0.0.weight"] == [128, 64, 2, 2]
    assert nus["pts_neck.deblocks.2.0.weight"] == [256, 128, 2, 2]
    assert nus["pts_bbox_head.shared_conv.conv.weight"] == [64, 384, 3, 3]
    assert not math.isnan(DEFAULT_CONFIG["coder"]["score_threshold"])
    print("self-test passed: %d tensors written and read back" % len(shapes))


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("checkpoint", nargs="?",
                        help="mmdetection3d checkpoint (.pth)")
    parser.add_argument("-o", "--output", help="weights file to write")
    parser.add_argument("--mmdet-config", metavar="CONFIG.py",
                        help="the mmdetection3d config the model was "
                        "trained with (read, not run; its _base_ files "
                        "followed): the voxel layer, network, coder and "
                        "test-time NMS settings")
    parser.add_argument("--config", help="JSON file of config values that "
                        "replace the nuScenes defaults (docs/weights.md)")
    parser.add_argument("--set", action="append", default=[],
                        metavar="KEY=JSON", help="one config value, e.g. "
                        "test_nms.type='\"circle\"'")
    parser.add_argument("--keep-dtype", action="store_true",
                        help="store F16/BF16/F64 tensors as they are "
                        "(default: every floating tensor as F32)")
    parser.add_argument("--print-config", action="store_true",
                        help="print the config that would be written, exit")
    parser.add_argument("--self-test", action="store_true",
                        help="check the writer and the shape rules, exit")
    args = parser.parse_args(argv)
    try:
        if args.self_test:
            self_test()
            return 0
        sources = {}
        if args.print_config and not args.checkpoint:
            config = build_config(args.config, args.set, args.mmdet_config,
                                  sources=sources)
            print(json.dumps(config, indent=2))
            print(describe_nms(config, sources["test_nms.type"]),
                  file=sys.stderr)
            return 0
        if not args.checkpoint or (not args.output and not args.print_config):
            parser.error("a checkpoint and -o OUTPUT are needed")
        loaded = load_checkpoint(args.checkpoint)
        meta_text = config_text_from_meta(
            loaded.get("meta") if isinstance(loaded, dict) else None)
        config = build_config(args.config, args.set, args.mmdet_config,
                              meta_text, sources)
        if args.print_config:
            print(json.dumps(config, indent=2))
            print(describe_nms(config, sources["test_nms.type"]),
                  file=sys.stderr)
            return 0
        count = convert(args.checkpoint, args.output, config,
                        args.keep_dtype, loaded)
    except ConversionError as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    print("wrote %s: %d tensors, %s with %d tasks" %
          (args.output, count, config["architecture"],
           len(config["head"]["tasks"])))
    print(describe_nms(config, sources["test_nms.type"]))
    if sources["test_nms.type"].startswith("the converter's default"):
        print("note: neither --mmdet-config nor the checkpoint's meta gave "
              "the test-time NMS: pass the mmdetection3d config the model "
              "was trained with (--mmdet-config) if it is not rotate NMS",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
