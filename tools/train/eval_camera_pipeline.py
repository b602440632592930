#!/usr/bin/env python3
"""AP of a camera weights file on the held-out seeds, through the
GStreamer pipeline: six cameratestsrc cameras of the rig rendering the
held-out street live, the camera chain, boxenc.

For every held-out seed of a data manifest (generate_camera_data.py, or
generate_data.py: only the truth and the lidar points are read), runs

    camencode name=enc weights=W ! bevpool calibration=RIG image-width=...
        image-height=... xbound=... ybound=... zbound=... dbound=...
      ! bevdetect weights=W ! boxenc ! filesink location=OUT/seedS.jsonl
    cameratestsrc calibration=RIG camera=K seed=S num-buffers=F
        framerate=... cars=... pedestrians=... cyclists=...
      ! video/x-raw,format=RGB ! enc.sink_K                (K = 0 .. N-1)

with the grid of the weights' p3d.model, then tools/eval_ap.py over all
seeds (true boxes from DIR/truth.jsonl, their lidar points from
DIR/%06d.bin: the rules of docs/model.md, the lidar model's held-out set).

    GST_PLUGIN_PATH=build/gst python3 tools/train/eval_camera_pipeline.py \\
        --weights bevdet_synthetic.safetensors \\
        --data /tmp/p3d-camera-data --out /tmp/p3d-camera-eval [--backend cpu]

--chain replaces the elements between the cameras and boxenc ({weights},
{backend}, {rig} and {bevpool} -- bevpool's grid properties -- are filled
in); --jobs runs that many seeds at once.
"""

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
import eval_ap  # noqa: E402
import eval_pipeline  # noqa: E402
import generate_camera_data  # noqa: E402
import lss_pool  # noqa: E402
import sensors  # noqa: E402

DEFAULT_CHAIN = ("camencode name=enc weights={weights} backend={backend} ! "
                 "bevpool calibration={rig} {bevpool} backend={backend} ! "
                 "bevdetect weights={weights} backend={backend}")


def bevpool_properties(model):
    """bevpool's properties for the model's grid and input size."""
    grid = model["grid_config"]
    height, width = model["data_config"]["input_size"]
    return ["image-width=%d" % width, "image-height=%d" % height] + [
        "%s=%s" % (key, eval_pipeline.vector(grid[key]))
        for key in ("xbound", "ybound", "zbound", "dbound")]


def chain_words(model, weights, backend, rig, template=DEFAULT_CHAIN):
    """The elements between the cameras and boxenc, as gst-launch words."""
    return template.format(
        weights=os.path.abspath(weights), backend=backend, rig=rig,
        bevpool=" ".join(bevpool_properties(model))).split()


def model_range(model):
    grid = model["grid_config"]
    return [grid["xbound"][0], grid["ybound"][0], grid["zbound"][0],
            grid["xbound"][1], grid["ybound"][1], grid["zbound"][1]]


def pipeline(entry, frames, chain, rig, cameras, detections):
    line = chain + ["!", "boxenc", "!", "filesink",
                    "location=" + detections]
    for camera in range(cameras):
        line += (["cameratestsrc", "calibration=" + rig,
                  "camera=%d" % camera]
                 + generate_camera_data.street_arguments(
                     entry["seed"], entry["scene"], frames)
                 + ["!", "video/x-raw,format=RGB", "!",
                    "enc.sink_%d" % camera])
    return line


def run_seed(args, entry, frames, chain, rig, cameras):
    detections = os.path.join(args.out, "seed%d.jsonl" % entry["seed"])
    started = time.time()
    done = subprocess.run(
        ["timeout", str(args.timeout), args.gst_launch, "-q"]
        + pipeline(entry, frames, chain, rig, cameras, detections),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        universal_newlines=True)
    if done.returncode != 0:
        raise RuntimeError("seed %d: gst-launch-1.0 failed (%d): %s" % (
            entry["seed"], done.returncode, done.stdout[-3000:]))
    truth = eval_ap.read_frames(os.path.join(entry["dir"], "truth.jsonl"))
    truth = truth[:frames]
    eval_ap.annotate_points(truth, os.path.join(entry["dir"], "%06d.bin"),
                            sensors.POINT_CHANNELS)
    found = eval_ap.read_frames(detections)
    if len(found) != frames:
        raise RuntimeError("seed %d: %d frames of detections, %d expected"
                           % (entry["seed"], len(found), frames))
    return found, truth, time.time() - started


def compare_detections(reference, other, min_score=0.2, radius=0.2):
    """How far the boxes of @other (frames of eval_ap dicts) are from
    those of @reference on the same frames: each reference box of at least
    @min_score matched to the nearest box of its label in the same frame
    within @radius metres (centre to centre).  Returns the counts and the
    largest differences of the matched boxes (centre, size, yaw, score)."""
    import math

    matched = missed = 0
    worst = {"centre": 0.0, "size": 0.0, "yaw": 0.0, "score": 0.0}
    for ref_boxes, boxes in zip(reference, other):
        for box in ref_boxes:
            if box["score"] < min_score:
                continue
            near = [b for b in boxes if b["label"] == box["label"]]
            best = min(near, default=None, key=lambda b: math.hypot(
                b["x"] - box["x"], b["y"] - box["y"]))
            if best is None or math.hypot(best["x"] - box["x"],
                                          best["y"] - box["y"]) > radius:
                missed += 1
                continue
            matched += 1
            turn = abs(best["yaw"] - box["yaw"]) % (2 * math.pi)
            for key, value in (
                    ("centre", math.sqrt(sum((best[k] - box[k]) ** 2
                                             for k in "xyz"))),
                    ("size", max(abs(best[k] - box[k])
                                 for k in ("dx", "dy", "dz"))),
                    ("yaw", min(turn, 2 * math.pi - turn)),
                    ("score", abs(best["score"] - box["score"]))):
                worst[key] = max(worst[key], value)
    return {"min_score": min_score, "radius": radius, "matched": matched,
            "missed": missed, "largest_difference": worst}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weights", required=True)
    parser.add_argument("--data", default="/tmp/p3d-camera-data")
    parser.add_argument("--rig", default=generate_camera_data.DEFAULT_RIG)
    parser.add_argument("--out", default="/tmp/p3d-camera-eval")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--frames", type=int,
                        help="at most this many frames of each seed")
    parser.add_argument("--seeds", type=int,
                        help="at most this many held-out seeds")
    parser.add_argument("--jobs", type=int, default=4,
                        help="seeds run at once")
    parser.add_argument("--timeout", type=int, default=600,
                        help="seconds one seed's pipeline may take")
    parser.add_argument("--chain", default=DEFAULT_CHAIN,
                        help="the elements between the cameras (which feed "
                        "the request pads enc.sink_K) and boxenc")
    parser.add_argument("--gst-launch", default="gst-launch-1.0")
    args = parser.parse_args(argv)

    model = eval_pipeline.read_model(args.weights)
    rig = os.path.abspath(args.rig)
    cameras = len(lss_pool.read_calibration(rig))
    with open(os.path.join(args.data, "manifest.json")) as stream:
        manifest = json.load(stream)
    os.makedirs(args.out, exist_ok=True)
    chain = chain_words(model, args.weights, args.backend, rig, args.chain)
    entries = [e for e in manifest["seeds"] if e["set"] == "heldout"]
    if args.seeds is not None:
        entries = entries[:args.seeds]
    started = time.time()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        runs = [pool.submit(run_seed, args, e,
                            e["frames"] if args.frames is None
                            else min(e["frames"], args.frames), chain, rig,
                            cameras) for e in entries]
        pairs = []
        for entry, run in zip(entries, runs):
            found, truth, seconds = run.result()
            pairs.append((found, truth))
            print("seed %d: %d frames in %.1f s (%.1f s so far)" % (
                entry["seed"], len(truth), seconds,
                time.time() - started), flush=True)
    classes = [(i, name, 0.5 if name == "car" else 0.25) for i, name in
               enumerate(n for t in model["head"]["tasks"]
                         for n in t["class_names"])]
    results = eval_ap.evaluate(pairs, model_range(model), classes)
    print(eval_ap.format_table(results, "r40"))
    frames = sum(len(t) for _, t in pairs)
    with open(os.path.join(args.out, "ap.json"), "w") as stream:
        json.dump({"weights": os.path.abspath(args.weights),
                   "backend": args.backend, "frames": frames,
                   "seeds": len(pairs), "interpolation": "r40",
                   "min_points": eval_ap.DEFAULT_MIN_POINTS,
                   "chain": " ".join(chain),
                   "seconds": time.time() - started, "classes": results},
                  stream, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
