#!/usr/bin/env python3
"""AP of a weights file on the held-out seeds, through the GStreamer
pipeline (the measurement issue 13 asks for, not PyTorch's).

For every held-out seed of a data manifest (generate_data.py), runs

    multifilesrc location=DIR/%06d.bin caps=application/x-point-cloud,format=xyzi
      ! voxelize voxel-size=... range=... max-points=... max-voxels=...
      ! pillarfeat features=F
      ! pillarencode weights=W ! bevdetect weights=W
      ! boxenc ! filesink location=OUT/seedS.jsonl

with the grid and feature set of the weights' p3d.model (a CenterPoint or
a PointPillars model), then tools/eval_ap.py over all seeds (true boxes
from DIR/truth.jsonl, their points from DIR/%06d.bin).

    GST_PLUGIN_PATH=build/gst python3 tools/train/eval_pipeline.py \\
        --weights centerpoint_synthetic.safetensors \\
        --data /tmp/p3d-train-data --out /tmp/p3d-eval [--backend cpu]

Only the held-out seeds are needed: generate them alone with
`generate_data.py --train-seeds 0`.  --frames limits the frames of each seed
(the C reference path takes seconds a frame).
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
import eval_ap  # noqa: E402
import sensors  # noqa: E402

DEFAULT_CHAIN = ("pillarencode weights={weights} backend={backend} ! "
                 "bevdetect weights={weights} backend={backend}")


def vector(values):
    return "<%s>" % ",".join(repr(float(v)) for v in values)


def read_model(weights):
    import struct

    with open(weights, "rb") as stream:
        (length,) = struct.unpack("<Q", stream.read(8))
        header = json.loads(stream.read(length))
    return json.loads(header["__metadata__"]["p3d.model"])


def class_names(model):
    """Labels 0, 1, ...: a CenterPoint model's tasks' classes in order, a
    PointPillars model's head.class_names."""
    head = model["head"]
    if "class_names" in head:
        return list(head["class_names"])
    return [n for t in head["tasks"] for n in t["class_names"]]


def pipeline_command(gst_launch, model, directory, frames, chain, backend,
                     detections):
    """gst-launch-1.0's arguments for @frames frames of one seed's
    directory through the chain to boxenc JSON lines in @detections."""
    return [gst_launch, "-q",
            "multifilesrc",
            "location=" + os.path.join(directory, "%06d.bin"),
            "stop-index=%d" % (frames - 1),
            "caps=application/x-point-cloud,format=" + sensors.POINT_FORMAT,
            "!", "voxelize", "voxel-size=" + vector(model["voxel_size"]),
            "range=" + vector(model["point_cloud_range"]),
            "max-points=%d" % model["max_points"],
            "max-voxels=%d" % model["max_voxels"],
            "backend=" + backend,
            "!", "pillarfeat", "features=" + model["features"],
            "backend=" + backend, "!"] + chain + [
            "!", "boxenc", "!", "filesink", "location=" + detections]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weights", required=True)
    parser.add_argument("--data", default="/tmp/p3d-train-data")
    parser.add_argument("--out", default="/tmp/p3d-eval")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--frames", type=int,
                        help="at most this many frames of each seed")
    parser.add_argument("--chain", default=DEFAULT_CHAIN,
                        help="the network elements between pillarfeat and "
                        "boxenc ({weights}, {backend} are replaced)")
    parser.add_argument("--gst-launch", default="gst-launch-1.0")
    parser.add_argument("--timeout", type=float, default=300,
                        help="seconds one seed's pipeline may take (a "
                        "gst-launch-1.0 that hangs after an early error, "
                        "docs/development.md, fails instead)")
    args = parser.parse_args(argv)

    model = read_model(args.weights)
    with open(os.path.join(args.data, "manifest.json")) as stream:
        manifest = json.load(stream)
    os.makedirs(args.out, exist_ok=True)
    chain = args.chain.format(weights=os.path.abspath(args.weights),
                              backend=args.backend).split()
    pairs = []
    frames_run = 0
    started = time.time()
    for entry in manifest["seeds"]:
        if entry["set"] != "heldout":
            continue
        frames = entry["frames"] if args.frames is None else \
            min(entry["frames"], args.frames)
        detections = os.path.join(args.out, "seed%d.jsonl" % entry["seed"])
        subprocess.run(pipeline_command(args.gst_launch, model, entry["dir"],
                                        frames, chain, args.backend,
                                        detections),
                       check=True, timeout=args.timeout)
        frames_run += frames
        truth = eval_ap.read_frames(os.path.join(entry["dir"], "truth.jsonl"))
        truth = truth[:frames]
        eval_ap.annotate_points(truth, os.path.join(entry["dir"],
                                                    "%06d.bin"),
                                sensors.POINT_CHANNELS)
        pairs.append((eval_ap.read_frames(detections), truth))
        print("seed %d: %d frames, %.1f s so far" % (
            entry["seed"], frames, time.time() - started), flush=True)
    classes = [(i, name, 0.5 if name == "car" else 0.25) for i, name in
               enumerate(class_names(model))]
    results = eval_ap.evaluate(pairs, model["point_cloud_range"], classes)
    table = eval_ap.format_table(results, "r40")
    print(table)
    with open(os.path.join(args.out, "ap.json"), "w") as stream:
        json.dump({"weights": os.path.abspath(args.weights),
                   "backend": args.backend, "frames": frames_run,
                   "seeds": len(pairs), "interpolation": "r40",
                   "min_points": eval_ap.DEFAULT_MIN_POINTS,
                   "seconds": time.time() - started, "classes": results},
                  stream, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
