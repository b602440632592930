#!/ usr / bin / env python3
"""Proves that pillarize.py gives the bytes of `voxelize ! pillarfeat`.

Runs pointcloudtestsrc for a few frames of a few seeds (64 and 32 beams)
through

    pointcloudtestsrc ! tee ! multifilesink (the points, one file a frame)
                        tee ! voxelize ! tee ! filesink (x-voxels records)
                                         tee ! pillarfeat features=F
                                               ! filesink (x-pillar-features)

with the model's voxel size, range, max-points and max-voxels, then runs
pillarize.py on each frame's points (on every torch device given) and
compares every tensor of every record bit for bit.  Exit 0 when all agree,
1 with the first differences otherwise.

The features are mmdet3d-11 (the CenterPoint model's, model_config.json)
or, with --features pointpillars-10, the PointPillars model's: what
train_pointpillars.py feeds its network, pillarize.py's mmdet3d-11 less
channel 4 (pointpillars_model.POINTPILLARS_10), must be pillarfeat's
pointpillars-10 bytes.  --config takes the model's JSON document or an
OpenPCDet YAML (pointpillars.yaml, read by the converter).

    GST_PLUGIN_PATH=build/gst python3 tools/train/check_pillarize.py \\
        --work /tmp/p3d-check [--backend cpu|cuda] [--devices cpu cuda]
    GST_PLUGIN_PATH=build/gst python3 tools/train/check_pillarize.py \\
        --features pointpillars-10 --config tools/train/pointpillars.yaml
"""

import argparse
import json
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pillarize  # noqa: E402
import sensors  # noqa: E402
#what train_pointpillars.py feeds its network of pillarize's channels
from pointpillars_model import POINTPILLARS_10  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def read_config(path):
    """The model's voxel grid: its JSON document, or an OpenPCDet YAML as
    the converter reads it."""
    if path.endswith((".yaml", ".yml")):
        sys.path.insert(0, os.path.join(HERE, ".."))
        import convert_openpcdet_pointpillars as converter

        return converter.build_config(path)
    with open(path) as stream:
        return json.load(stream)


def gst_vector(values):
    return "<%s>" % ",".join(repr(float(v)) for v in values)


def run_elements(gst_launch, work, seed, sensor, frames, config, backend,
                 half, features):
    os.makedirs(work, exist_ok=True)
    features_caps = "application/x-pillar-features,format=%s" % (
        "F16" if half else "F32")
    source = (["pointcloudtestsrc", "seed=%d" % seed,
               "num-buffers=%d" % frames,
               "format=" + sensors.POINT_FORMAT]
              + sensors.SENSORS[sensor])
    pipeline = (source + ["!", "tee", "name=t",
                          "t.", "!", "queue", "!", "multifilesink",
                          "location=" + os.path.join(work, "%06d.bin"),
                          "t.", "!", "queue", "!", "voxelize",
                          "voxel-size=" + gst_vector(config["voxel_size"]),
                          "range=" + gst_vector(config["point_cloud_range"]),
                          "max-points=%d" % config["max_points"],
                          "max-voxels=%d" % config["max_voxels"],
                          "backend=" + backend, "!", "tee", "name=v",
                          "v.", "!", "queue", "!", "filesink",
                          "location=" + os.path.join(work, "voxels.bin"),
                          "v.", "!", "queue", "!", "pillarfeat",
                          "features=" + features, "backend=" + backend, "!",
                          features_caps, "!", "filesink",
                          "location=" + os.path.join(work, "features.bin")])
    subprocess.run([gst_launch, "-q"] + pipeline, check=True)


def read_record(path, index, layout):
    """Record @index of a file of fixed-size records, as tensors of the
    shapes and dtypes of @layout (a list of (name, tensor))."""
    sizes = [t.numel() * t.element_size() for _, t in layout]
    record = sum(sizes)
    with open(path, "rb") as stream:
        stream.seek(index * record)
        data = stream.read(record)
    if len(data) != record:
        raise RuntimeError("%s: record %d is short (%d of %d bytes)"
                           % (path, index, len(data), record))
    tensors = []
    offset = 0
    for (name, like), size in zip(layout, sizes):
        flat = torch.frombuffer(bytearray(data[offset:offset + size]),
                                dtype=like.dtype)
        tensors.append((name, flat.reshape(like.shape)))
        offset += size
    return tensors


def bits(tensor):
    return tensor.contiguous().view({4: torch.int32, 2: torch.int16}
                                    [tensor.element_size()])


def compare(what, ours, theirs):
    """Differences of two lists of (name, tensor), as text lines."""
    problems = []
    for (name, a), (_, b) in zip(ours, theirs):
        if a.shape != b.shape:
            problems.append("%s %s: shape %s, elements %s"
                            % (what, name, tuple(a.shape), tuple(b.shape)))
            continue
        differ = bits(a) != bits(b)
        if differ.any():
            where = torch.nonzero(differ)[:3].tolist()
            problems.append("%s %s: %d values differ, first at %s: ours %s, "
                            "elements %s" % (what, name, int(differ.sum()),
                                             where,
                                             [a[tuple(w)].item()
                                              for w in where],
                                             [b[tuple(w)].item()
                                              for w in where]))
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", default="/tmp/p3d-check-pillarize")
    parser.add_argument("--config", default=os.path.join(
        HERE, "model_config.json"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[3, 77])
    parser.add_argument("--frames", type=int, default=3)
    parser.add_argument("--backend", default="cpu",
                        help="the elements' backend (cpu, cuda)")
    parser.add_argument("--devices", nargs="+", default=["cpu"],
                        help="torch devices to run pillarize on")
    parser.add_argument("--half", action="store_true",
                        help="compare F16 features")
    parser.add_argument("--max-points", type=int,
                        help="instead of the model's (small values test the "
                        "caps: first points of a voxel, first voxels kept)")
    parser.add_argument("--max-voxels", type=int)
    parser.add_argument("--features", default="mmdet3d-11",
                        choices=("mmdet3d-11", "pointpillars-10"),
                        help="pillarfeat's feature set (pointpillars-10: "
                        "the PointPillars training's)")
    parser.add_argument("--gst-launch", default="gst-launch-1.0")
    args = parser.parse_args(argv)
    config = read_config(args.config)
    for key in ("max_points", "max_voxels"):
        if getattr(args, key) is not None:
            config[key] = getattr(args, key)
    grid = pillarize.PillarGrid(config["voxel_size"],
                                config["point_cloud_range"],
                                config["max_points"], config["max_voxels"])

    problems = []
    compared = 0
    for seed in args.seeds:
        for sensor in sorted(sensors.SENSORS):
            work = os.path.join(args.work, "seed%d-%s" % (seed, sensor))
            run_elements(args.gst_launch, work, seed, sensor, args.frames,
                         config, args.backend, args.half, args.features)
            for device in args.devices:
                frames = [sensors.read_points(os.path.join(
                    work, "%06d.bin" % k)) for k in range(args.frames)]
                points = torch.cat(frames).to(device)
#all frames in one call : the batched path training uses
                result = pillarize.pillarize(points, [len(f) for f in frames],
                                             grid, half=args.half)
                for k in range(args.frames):
                    voxel_layout, feature_layout = \
                        pillarize.element_tensors(result, grid, k)
                    if args.features == "pointpillars-10":
                        feature_layout[0] = (
                            "features", feature_layout[0][1][
                                :, :, POINTPILLARS_10].contiguous())
                    what = "seed %d %s frame %d on %s:" % (seed, sensor, k,
                                                           device)
                    problems += compare(what + " voxels", voxel_layout,
                                        read_record(os.path.join(
                                            work, "voxels.bin"), k,
                                            voxel_layout))
                    problems += compare(what + " features", feature_layout,
                                        read_record(os.path.join(
                                            work, "features.bin"), k,
                                            feature_layout))
                    compared += 1
                    print("%s %d voxels, %d points" % (
                        what, int(result["voxel_counts"][k]),
                        len(frames[k])), flush=True)
    if problems:
        print("\n".join(problems))
        print("check_pillarize: %d differences in %d frames" %
              (len(problems), compared))
        return 1
    print("check_pillarize: %d frames, every byte of voxelize and pillarfeat "
          "(%s, %s) reproduced" % (compared, args.features,
                                   "F16" if args.half else "F32"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
