#!/usr/bin/env python3
"""Training and held-out data for the camera model: six cameratestsrc
cameras of a rig, and pointcloudtestsrc's lidar and true boxes of the same
street, many seeds at once.

For every seed one gst-launch-1.0 runs, with the same seed and scene
properties (so all see one world at the same instants):

    pointcloudtestsrc ... format=xyzi ! multifilesink location=DIR/%06d.bin
    pointcloudtestsrc ... emit=boxes ! boxenc
        ! filesink location=DIR/truth.jsonl
    cameratestsrc calibration=RIG camera=K ... ! video/x-raw,format=RGB
        ! multifilesink location=DIR/camK-%06d.rgb          (K = 0 .. 5)
    cameratestsrc calibration=RIG camera=K emit=depth ...
        ! multifilesink location=DIR/depthK-%06d.raw

so frame k of camera K is DIR/camK-%06d.rgb (RGB, 3 bytes a pixel, rows
without padding) and its depth DIR/depthK-%06d.raw (GRAY16_LE millimetres,
0 where nothing was hit).  The scenes, the seeds and the lidar settings
are generate_data.py's (the lidar model's): the held-out seeds 900000...
are the lidar model's held-out seeds, with the same lidar points, so the
true boxes that count (at least 5 lidar points, docs/model.md) are the
same for both models.

    GST_PLUGIN_PATH=build/gst python3 tools/train/generate_camera_data.py \\
        --out /tmp/p3d-camera-data --train-seeds 480 --train-frames 8 \\
        --heldout-seeds 32 --heldout-frames 8 --jobs 16

writes DIR = OUT/train/seedS and OUT/heldout/seedS, and OUT/manifest.json.
About 5.4 MB a frame: generate it where it is used; never commit it.
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
import generate_data  # noqa: E402
import lss_pool  # noqa: E402
import sensors  # noqa: E402

DEFAULT_RIG = os.path.join(HERE, "..", "..", "examples", "data",
                           "rig-nuscenes-704x256.json")


def street_arguments(seed, scene, frames):
    """The properties both sources share: the street and the instants."""
    return ["seed=%d" % seed, "num-buffers=%d" % frames,
            "framerate=%d/1" % scene["framerate"],
            "cars=%d" % scene["cars"],
            "pedestrians=%d" % scene["pedestrians"],
            "cyclists=%d" % scene["cyclists"]]


def camera_files(directory, camera):
    """The frame file patterns of one camera (image, depth)."""
    return (os.path.join(directory, "cam%d-%%06d.rgb" % camera),
            os.path.join(directory, "depth%d-%%06d.raw" % camera))


def launch_line(seed, scene, frames, directory, rig, cameras):
    line = generate_data.launch_line(seed, scene, frames, directory)
    for camera in range(cameras):
        image, depth = camera_files(directory, camera)
        source = ["cameratestsrc", "calibration=" + rig,
                  "camera=%d" % camera] + street_arguments(seed, scene,
                                                           frames)
        line += source + ["!", "video/x-raw,format=RGB", "!",
                          "multifilesink", "location=" + image]
        line += source + ["emit=depth", "!", "multifilesink",
                          "location=" + depth]
    return line


def generate_seed(gst_launch, seed, scene, frames, directory, rig, cameras,
                  image_size):
    os.makedirs(directory, exist_ok=True)
    done = subprocess.run([gst_launch, "-q"]
                          + launch_line(seed, scene, frames, directory, rig,
                                        cameras),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)
    if done.returncode != 0:
        raise RuntimeError("seed %d: gst-launch-1.0 failed (%d): %s"
                           % (seed, done.returncode, done.stdout[-2000:]))
    width, height = image_size
    for k in range(frames):
        wanted = [(os.path.join(directory, "%06d.bin" % k), None)]
        for camera in range(cameras):
            image, depth = camera_files(directory, camera)
            wanted += [(image % k, width * height * 3),
                       (depth % k, width * height * 2)]
        for path, size in wanted:
            if not os.path.exists(path):
                raise RuntimeError("seed %d: %s was not written"
                                   % (seed, path))
            if size is not None and os.path.getsize(path) != size:
                raise RuntimeError("seed %d: %s has %d bytes, %d expected"
                                   % (seed, path, os.path.getsize(path),
                                      size))
    return seed


def image_size_of(cameras):
    sizes = {tuple(c["image_size"]) for c in cameras if c["image_size"]}
    if len(sizes) != 1 or any(c["image_size"] is None for c in cameras):
        raise ValueError("every camera of the rig needs the same "
                         "image_size (the network's input): %s" % sizes)
    return sizes.pop()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="/tmp/p3d-camera-data")
    parser.add_argument("--rig", default=DEFAULT_RIG,
                        help="the calibration file of the cameras")
    parser.add_argument("--train-seeds", type=int, default=480)
    parser.add_argument("--train-frames", type=int, default=8)
    parser.add_argument("--heldout-seeds", type=int, default=32)
    parser.add_argument("--heldout-frames", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    parser.add_argument("--gst-launch", default="gst-launch-1.0")
    args = parser.parse_args(argv)

    started = time.time()
    rig = os.path.abspath(args.rig)
    cameras = lss_pool.read_calibration(rig)
    image_size = image_size_of(cameras)
    seeds = generate_data.plan(args.out, args.train_seeds, args.train_frames,
                               args.heldout_seeds, args.heldout_frames)
    done = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(generate_seed, args.gst_launch, s["seed"],
                               s["scene"], s["frames"], s["dir"], rig,
                               len(cameras), image_size)
                   for s in seeds]
        for future in concurrent.futures.as_completed(futures):
            future.result()
            done += 1
            if done % 32 == 0 or done == len(futures):
                print("generate: %d/%d seeds, %.1f s" % (
                    done, len(futures), time.time() - started), flush=True)
    with open(os.path.join(args.out, "manifest.json"), "w") as stream:
        json.dump({"point_format": sensors.POINT_FORMAT,
                   "sensors": sensors.SENSORS, "rig": rig,
                   "cameras": [c["name"] for c in cameras],
                   "image_size": list(image_size), "seeds": seeds}, stream,
                  indent=1)
    frames = sum(s["frames"] for s in seeds)
    print("generate: %d frames of %d seeds (%d cameras each) in %s, %.1f s"
          % (frames, len(seeds), len(cameras), args.out,
             time.time() - started), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
