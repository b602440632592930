#!/usr/bin/env python3
"""Writes raw application/x-camera-features frames (F32): features
[cameras][height][width][channels], then depth [cameras][depth-bins][height]
[width] with each pixel's depth a softmax-like distribution peaked at a
pixel-dependent bin, the way a depth network's output looks. Deterministic.

    make-camera-features.py [--frames N] [--channels C] PATTERN   e.g. f-%02d.raw
"""
import argparse
import array
import math
import random

parser = argparse.ArgumentParser()
parser.add_argument("--frames", type=int, default=1)
parser.add_argument("--cameras", type=int, default=6)
parser.add_argument("--channels", type=int, default=16)
parser.add_argument("--depth-bins", type=int, default=118)
parser.add_argument("--width", type=int, default=88)
parser.add_argument("--height", type=int, default=32)
parser.add_argument("pattern")
args = parser.parse_args()

rng = random.Random(7)
for frame in range(args.frames):
    features = array.array("f", (rng.random() for _ in range(
        args.cameras * args.height * args.width * args.channels)))
    depth = array.array("f", bytes(4 * args.cameras * args.depth_bins * args.height * args.width))
    plane = args.height * args.width
    for c in range(args.cameras):
        for p in range(plane):
            peak = (p * 7 + c * 13 + frame * 5) % args.depth_bins
            weights = [math.exp(-0.5 * ((d - peak) / 3.0) ** 2) for d in range(args.depth_bins)]
            total = sum(weights)
            base = c * args.depth_bins * plane + p
            for d, w in enumerate(weights):
                depth[base + d * plane] = w / total
    with open(args.pattern % frame, "wb") as out:
        features.tofile(out)
        depth.tofile(out)
