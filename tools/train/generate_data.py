#!/usr/bin/env python3
"""Training and held-out data from pointcloudtestsrc, many seeds at once.

For every seed one gst-launch-1.0 runs two sources with the same scene
properties:

    pointcloudtestsrc seed=S format=xyzi ... ! multifilesink location=DIR/%06d.bin
    pointcloudtestsrc seed=S emit=boxes ...  ! boxenc ! filesink location=DIR/truth.jsonl

so frame k's points are DIR/%06d.bin and its true boxes the k-th frame of
truth.jsonl.  What varies with the seed (drawn from it, so the same seed
gives the same data): the sensor (64 or 32 beams, alternating), the time
between frames (framerate 1, 2 or 5 per second: how far objects move from
one frame to the next), and the numbers of cars, pedestrians and cyclists.
Training seeds and held-out seeds come from disjoint ranges
(TRAIN_SEED_BASE, HELDOUT_SEED_BASE): no held-out scene is ever trained on.

    GST_PLUGIN_PATH=build/gst python3 tools/train/generate_data.py \\
        --out /tmp/p3d-train-data --train-seeds 256 --train-frames 16 \\
        --heldout-seeds 32 --heldout-frames 8 --jobs 16

writes DIR = OUT/train/seedS and OUT/heldout/seedS, and OUT/manifest.json
(every seed's properties and frame count).  Generate it where it is used;
never commit it.
"""

import argparse
import concurrent.futures
import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sensors  # noqa: E402

TRAIN_SEED_BASE = 1000
HELDOUT_SEED_BASE = 900000


def scene_properties(seed, index):
    """The scene of a seed: sensor by the seed's position in its set (so
    each set is half 64, half 32 beams), the rest drawn from the seed."""
    draw = random.Random(seed)
    sensor = "64" if index % 2 == 0 else "32"
    return {"sensor": sensor,
            "framerate": draw.choice([1, 2, 5]),
            "cars": draw.randint(8, 32),
            "pedestrians": draw.randint(6, 40),
            "cyclists": draw.randint(2, 12)}


def source_arguments(seed, scene, frames):
    return ["pointcloudtestsrc", "seed=%d" % seed, "num-buffers=%d" % frames,
            "framerate=%d/1" % scene["framerate"],
            "cars=%d" % scene["cars"],
            "pedestrians=%d" % scene["pedestrians"],
            "cyclists=%d" % scene["cyclists"]]


def launch_line(seed, scene, frames, directory):
    points = (source_arguments(seed, scene, frames)
              + ["format=" + sensors.POINT_FORMAT]
              + sensors.SENSORS[scene["sensor"]]
              + ["!", "multifilesink",
                 "location=" + os.path.join(directory, "%06d.bin")])
    boxes = (source_arguments(seed, scene, frames)
             + ["emit=boxes", "!", "boxenc", "!", "filesink",
                "location=" + os.path.join(directory, "truth.jsonl")])
    return points + boxes


def generate_seed(gst_launch, seed, scene, frames, directory):
    os.makedirs(directory, exist_ok=True)
    done = subprocess.run([gst_launch, "-q"]
                          + launch_line(seed, scene, frames, directory),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)
    if done.returncode != 0:
        raise RuntimeError("seed %d: gst-launch-1.0 failed (%d): %s"
                           % (seed, done.returncode, done.stdout[-2000:]))
    missing = [k for k in range(frames) if not os.path.exists(
        os.path.join(directory, "%06d.bin" % k))]
    if missing:
        raise RuntimeError("seed %d: no points file for frames %s"
                           % (seed, missing[:5]))
    return seed


def plan(out, train_seeds, train_frames, heldout_seeds, heldout_frames):
    sets = []
    for name, base, count, frames in (
            ("train", TRAIN_SEED_BASE, train_seeds, train_frames),
            ("heldout", HELDOUT_SEED_BASE, heldout_seeds, heldout_frames)):
        for index in range(count):
            seed = base + index
            sets.append({"set": name, "seed": seed, "frames": frames,
                         "dir": os.path.join(out, name, "seed%d" % seed),
                         "scene": scene_properties(seed, index)})
    return sets


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="/tmp/p3d-train-data")
    parser.add_argument("--train-seeds", type=int, default=256)
    parser.add_argument("--train-frames", type=int, default=16)
    parser.add_argument("--heldout-seeds", type=int, default=32)
    parser.add_argument("--heldout-frames", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    parser.add_argument("--gst-launch", default="gst-launch-1.0")
    args = parser.parse_args(argv)

    started = time.time()
    seeds = plan(args.out, args.train_seeds, args.train_frames,
                 args.heldout_seeds, args.heldout_frames)
    done = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(generate_seed, args.gst_launch, s["seed"],
                               s["scene"], s["frames"], s["dir"])
                   for s in seeds]
        for future in concurrent.futures.as_completed(futures):
            future.result()
            done += 1
            if done % 32 == 0 or done == len(futures):
                print("generate: %d/%d seeds, %.1f s" % (
                    done, len(futures), time.time() - started), flush=True)
    with open(os.path.join(args.out, "manifest.json"), "w") as stream:
        json.dump({"point_format": sensors.POINT_FORMAT,
                   "sensors": sensors.SENSORS, "seeds": seeds}, stream,
                  indent=1)
    frames = sum(s["frames"] for s in seeds)
    print("generate: %d frames of %d seeds in %s, %.1f s" % (
        frames, len(seeds), args.out, time.time() - started), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
