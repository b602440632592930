#!/usr/bin/env python3
"""torchvision's NMS on the boxes bench_nms timed, for the comparison in
docs/performance.md.

bench_nms --write-boxes DIR writes the 2D boxes it timed (P3dcBox2d records:
x1, y1, x2, y2, score as float32, label as int32, little-endian), the indices
our CUDA nms kept, and our timings (p3d_iou.tsv). This script times
torchvision.ops.nms and torchvision.ops.batched_nms (10 classes) on the same
boxes, from boxes on the GPU to the kept indices on the GPU, with
torch.cuda events after a warm-up (median of many runs), checks that they
keep the same boxes as we do, and prints one markdown table with both.

    build/tests/bench/bench_nms --write-boxes /tmp/nms-boxes
    python3 tests/bench/bench_nms_torchvision.py /tmp/nms-boxes
"""

import argparse
import os
import statistics
import sys

import torch
import torchvision

RECORD_FIELDS = 6  # x1, y1, x2, y2, score, label: 24 bytes


def load_boxes(path, device):
    raw = bytearray(open(path, "rb").read())
    if len(raw) % (4 * RECORD_FIELDS) != 0:
        sys.exit(f"{path}: {len(raw)} bytes is not a whole number of records")
    as_float = torch.frombuffer(raw, dtype=torch.float32)
    as_float = as_float.view(-1, RECORD_FIELDS)
    as_int = torch.frombuffer(raw, dtype=torch.int32).view(-1, RECORD_FIELDS)
    boxes = as_float[:, 0:4].contiguous().to(device)
    scores = as_float[:, 4].contiguous().to(device)
    labels = as_int[:, 5].to(torch.int64).to(device)
    return boxes, scores, labels


def load_indices(path):
    raw = bytearray(open(path, "rb").read())
    if not raw:
        return []
    return torch.frombuffer(raw, dtype=torch.int32).tolist()


def load_our_timings(path):
    """{(n, per_class): (threshold, kept, median, p10, p90)} from the
    p3d_iou.tsv that bench_nms wrote."""
    timings = {}
    with open(path) as tsv:
        for line in tsv:
            fields = line.split()
            if len(fields) != 7:
                continue
            n, per_class, threshold, kept = (int(fields[0]), int(fields[1]),
                                             float(fields[2]), int(fields[3]))
            timings[(n, per_class)] = (threshold, kept, float(fields[4]),
                                       float(fields[5]), float(fields[6]))
    return timings


def time_gpu(function, warmup, runs):
    """Median, p10 and p90 in microseconds of the GPU time of function()."""
    for _ in range(warmup):
        function()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        function()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1000.0)
    times.sort()
    return (statistics.median(times), times[len(times) // 10],
            times[min(len(times) - 1, (len(times) * 9) // 10)])


def compare_kept(ours, theirs):
    if ours == theirs:
        return "yes"
    differing = sum(1 for a, b in zip(ours, theirs) if a != b)
    differing += abs(len(ours) - len(theirs))
    return (f"no ({len(ours)} vs {len(theirs)} kept, "
            f"{differing} positions differ)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir",
                        help="the directory bench_nms --write-boxes wrote")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()

    if not torch.cuda.is_available():
        sys.exit("no CUDA device for torch")
    device = torch.device("cuda")
    ours = load_our_timings(os.path.join(args.dir, "p3d_iou.tsv"))
    sizes = sorted({n for n, _ in ours})
    if not sizes:
        sys.exit(f"{args.dir}/p3d_iou.tsv lists no runs")

    print(f"device: {torch.cuda.get_device_name(device)}; torch "
          f"{torch.__version__}, torchvision {torchvision.__version__}; "
          f"{args.runs} timed runs per case\n")
    print("| N | p3d nms µs | torchvision.ops.nms µs | speed-up | "
          "p3d nms per class µs | torchvision batched_nms µs (10 classes) | "
          "speed-up | same kept boxes (nms / batched_nms) |")
    print("|---|---|---|---|---|---|---|---|")
    for n in sizes:
        boxes, scores, labels = load_boxes(
            os.path.join(args.dir, f"boxes2d_{n}.bin"), device)
        threshold = ours[(n, 0)][0]
        with torch.no_grad():
            plain = time_gpu(
                lambda: torchvision.ops.nms(boxes, scores, threshold),
                args.warmup, args.runs)
            batched = time_gpu(
                lambda: torchvision.ops.batched_nms(boxes, scores, labels,
                                                    threshold),
                args.warmup, args.runs)
            kept_plain = torchvision.ops.nms(boxes, scores, threshold).tolist()
            kept_batched = torchvision.ops.batched_nms(
                boxes, scores, labels, threshold).tolist()
        same_plain = compare_kept(
            load_indices(os.path.join(args.dir, f"kept_iou_{n}.bin")),
            kept_plain)
        same_batched = compare_kept(
            load_indices(os.path.join(args.dir, f"kept_iou_classes_{n}.bin")),
            kept_batched)
        ours_plain = ours[(n, 0)][2]
        ours_batched = ours[(n, 1)][2]
        print(f"| {n} | {ours_plain:.1f} | {plain[0]:.1f} | "
              f"{plain[0] / ours_plain:.1f}x | {ours_batched:.1f} | "
              f"{batched[0]:.1f} | {batched[0] / ours_batched:.1f}x | "
              f"{same_plain} / {same_batched} |")


if __name__ == "__main__":
    main()
