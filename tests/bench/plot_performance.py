#!/usr/bin/python3
"""Draws docs/performance.png from the benchmark programs' output.

    plot_performance.py BENCH_VOXELIZE.txt BENCH_NMS.txt OUT.png

BENCH_VOXELIZE.txt is what bench_voxelize printed with --kitti and
--nuscenes; BENCH_NMS.txt what bench_nms printed.  Left: voxelize GPU time
(steady state, default launch) against the number of points of each frame:
the KITTI sweeps (about 20k points) and the 271k-point nuScenes frame in
each configuration; right: nms time against the number of boxes, per mode.
The anchors' figures (docs/performance.md) are drawn as open markers; the
titles name the device the outputs name.
Needs matplotlib (Debian: python3-matplotlib).
"""
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# The anchors, measured on an H100 with the same frames and boxes (the
# issues' authors' figures of before 2026-11-22; docs/performance.md names
# their sources), whatever device the outputs come from.
POINTPILLARS = [(20285, 24.4), (271156, 78.8)]
CUB_PIPELINE = [(20285, 65.0), (271156, 76.0)]
NMS_ANCHORS = {
    "torchvision.ops.nms (iou)": [(500, 186), (4096, 455), (20000, 3173)],
    "OpenPCDet nms_gpu (rotated)": [(500, 342), (4096, 2250),
                                    (20000, 46223)],
    "Autoware circle NMS": [(500, 102), (4096, 2562), (20000, 125296)],
}


def table_rows(lines):
    """Yields the cells of each markdown table row (header rows too)."""
    for line in lines:
        line = line.strip()
        if line.startswith("|") and not line.startswith("|-") \
                and not line.startswith("| -"):
            yield [cell.strip() for cell in line.strip("|").split("|")]


def device_name(lines, prefix):
    """The device named on the line that starts with prefix, or "the GPU"."""
    for line in lines:
        match = re.match(re.escape(prefix) + r" (.+?) \(sm_", line.strip())
        if match:
            return match.group(1)
    return "the GPU"


def voxelize_data(path):
    """{configuration: [(points, median us)]} of the single-frame rows."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    row = re.compile(r"(KITTI pillars|nuScenes 0\.2 m pillars|"
                     r"nuScenes CenterPoint 3D grid) \S+, "
                     r"(max-points \d+), clean")
    configs = {}
    for cells in table_rows(lines):
        match = row.fullmatch(cells[0])
        if match:
            name = f"{match.group(1)}, {match.group(2)}"
            configs.setdefault(name, []).append((int(cells[1]),
                                                 float(cells[5])))
    if not configs:
        sys.exit(f"{path}: no voxelize table")
    return configs, device_name(lines, "voxelize on")


def nms_data(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("Where the time goes")[0].splitlines()
    modes = {}
    for cells in table_rows(lines):
        if len(cells) > 4 and cells[1].isdigit():
            modes.setdefault(cells[0], []).append((int(cells[1]),
                                                   float(cells[4])))
    if not modes:
        sys.exit(f"{path}: no nms table")
    return modes, device_name(lines, "device:")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    configs, voxelize_device = voxelize_data(sys.argv[1])
    modes, nms_device = nms_data(sys.argv[2])

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    for (name, points), marker in zip(configs.items(), "osD^v"):
        left.plot(*zip(*points), marker, linestyle="none",
                  label=f"voxelize, {name}")
    left.plot(*zip(*POINTPILLARS), "^", mfc="none", color="tab:red", ms=9,
              label="CUDA-PointPillars preprocessing (max-points 32), H100")
    left.plot(*zip(*CUB_PIPELINE), "v", mfc="none", color="tab:gray", ms=9,
              label="deterministic CUB pipeline, H100")
    left.set_xscale("log")
    left.set_xlabel("points per frame")
    left.set_ylabel("GPU time per frame (µs, median)")
    left.set_ylim(bottom=0)
    left.set_title(f"voxelize on {voxelize_device}")
    left.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=8, loc="lower right")

    for mode, points in modes.items():
        if "per class" in mode:
            continue
        right.plot(*zip(*sorted(points)), "o-", label=f"nms {mode}")
    for name, points in NMS_ANCHORS.items():
        right.plot(*zip(*points), "--", marker="^", mfc="none", alpha=0.6,
                   label=f"{name}, H100")
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("boxes (N)")
    right.set_ylabel("time per call (µs, median)")
    right.set_title(f"nms on {nms_device}")
    right.grid(True, which="both", alpha=0.3)
    right.legend(fontsize=8, loc="upper left")

    fig.tight_layout()
    fig.savefig(sys.argv[3], dpi=100)


if __name__ == "__main__":
    main()
