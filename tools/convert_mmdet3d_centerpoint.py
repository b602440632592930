#!/usr/bin/env python3
"""Convert an mmdetection3d CenterPoint-pillar checkpoint to the weights file
that gst-perception's pillarencode and bevdetect read (docs/weights.md).

    python3 tools/convert_mmdet3d_centerpoint.py CHECKPOINT.pth -o model.safetensors \
        [--config values.json] [--set KEY=JSON ...] [--keep-dtype]

CHECKPOINT.pth: a checkpoint saved by mmdetection3d (or any torch.save of a
dict holding a 'state_dict', or of the state_dict itself) of a model built
like configs/_base_/models/centerpoint_pillar02_second_secfpn_nus.py:
PillarFeatureNet (legacy=False), PointPillarsScatter, SECOND, SECONDFPN and
CenterHead with the CenterPointBBoxCoder.

The model's hyperparameters are not in the checkpoint: they come from the
defaults below (the nuScenes config, centerpoint_pillar02_second_secfpn_nus
with its 8xb4-cyclic-20e_nus-3d point cloud range), overridden by a JSON
file in the same shape (--config, any subset of the keys) and then by
single values (--set test_nms.type='"circle"' --set max_voxels=30000). The
converter checks the result against the checkpoint's tensors (every tensor
the config implies present, with the shape it implies) before it writes.

Output: one safetensors file with every tensor of the state_dict under its
own name (num_batches_tracked dropped; floating tensors stored as F32 unless
--keep-dtype) and the metadata key `p3d.model` holding the config as JSON.

Only loading the checkpoint needs torch; the safetensors writing is plain
Python.  `--self-test` checks the writer, the reader and the shape rules
without torch.
"""

import argparse
import copy
import json
import math
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


def build_config(config_file=None, settings=()):
    config = copy.deepcopy(DEFAULT_CONFIG)
    if config_file:
        with open(config_file) as f:
            config = merge(config, json.load(f))
    for setting in settings:
        apply_setting(config, setting)
    validate_config(config)
    return config


def load_state_dict(path):
    """The checkpoint's state_dict as {name: tensor} (needs torch)."""
    try:
        import torch
    except ImportError:
        raise ConversionError("reading a .pth checkpoint needs PyTorch "
                              "(pip install torch); the rest of the "
                              "converter is plain Python")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # mmengine checkpoints pickle more than tensors
        print("note: %s is not loadable with weights_only=True (%s); "
              "loading it fully: only do this with a checkpoint you trust"
              % (path, str(e).splitlines()[0]), file=sys.stderr)
        checkpoint = torch.load(path, map_location="cpu", weights_only=False)
    state = checkpoint.get("state_dict", checkpoint) \
        if isinstance(checkpoint, dict) else None
    if not isinstance(state, dict):
        raise ConversionError("%s holds no state_dict" % path)
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


def convert(checkpoint, output, config, keep_dtype=False):
    state = load_state_dict(checkpoint)
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
        config = build_config(args.config, args.set)
        if args.print_config:
            print(json.dumps(config, indent=2))
            return 0
        if not args.checkpoint or not args.output:
            parser.error("a checkpoint and -o OUTPUT are needed")
        count = convert(args.checkpoint, args.output, config,
                        args.keep_dtype)
    except ConversionError as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    print("wrote %s: %d tensors, %s with %d tasks" %
          (args.output, count, config["architecture"],
           len(config["head"]["tasks"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
