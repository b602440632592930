#!/usr/bin/python3
"""p3d-batch's scaling: files per second with 1, 2 and 4 workers, reading
separated from the chain (docs/cluster.md).

    /usr/bin/python3 tests/bench/bench_batch.py [--files N] [--workers 1,2,4]
        [--backend auto|cpu] [--model M.safetensors] [--inputs GLOB]
        [--beams B --points-per-revolution P] [--json OUT.json]

Writes N sweeps with pointcloudtestsrc (64 beams x 1900 firings by default,
about 1.9 MB each, a KITTI-sized sweep; or takes --inputs), then for each
worker count runs p3d-batch on a LocalCluster three ways:

- read: `pointcloudparse preset=kitti` with --discard-output: reading and
  parsing the files, the CPU-bound share;
- chain: the shipped CenterPoint-pillar model's chain to boxenc, outputs
  written: what a real run costs;

and once, in one process without files, the chain fed from memory
(pointcloudtestsrc motion=false: one sweep's memory pushed again and again),
the GPU's share. The files are read from the page cache (they were just
written, or read by the first run). Prints a markdown table, and the read
bandwidth one GPU's chain consumes.

Needs the plugin on GST_PLUGIN_PATH, python3-gi and python3-distributed;
with a GPU the elements take their CUDA path (--backend cpu forces the
reference path).
"""

import argparse
import glob
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE_ROOT, "tests", "batch"))

import batchtest as bt  # noqa: E402

MODEL = os.path.join(SOURCE_ROOT, "examples", "models",
                     "centerpoint-synthetic.safetensors")
RUN_LINE = re.compile(r"this run: (\d+) files, (\d+) frames, .* in "
                      r"([0-9.]+) s")


def g(value):
    """Three significant digits, without an exponent below a million."""
    if value != value:
        return "-"
    digits = max(0, 2 - int(math.floor(math.log10(abs(value))))) \
        if value else 0
    return "%.*f" % (digits, value)


def chain(model, backend):
    """The shipped model's chain (examples/models/centerpoint-synthetic.sh)."""
    b = "" if backend == "auto" else " backend=%s" % backend
    return ('voxelize voxel-size="<0.32,0.32,4.0>" '
            'range="<-51.2,-15.36,-3,51.2,15.36,1>" max-points=20 '
            'max-voxels=30720%s ! pillarfeat features=mmdet3d-11%s '
            '! pillarencode weights=%s%s ! bevdetect weights=%s%s ! boxenc'
            % (b, b, model, b, model, b))


def batch_run(pipeline, pattern, outdir, workers, discard):
    args = ["--pipeline", pipeline, "--inputs", pattern, "--output", outdir,
            "--workers", str(workers), "--force", "--no-progress"]
    if discard:
        args.append("--discard-output")
    status, text = bt.run_batch(*args, timeout=3600)
    if status != 0:
        sys.exit("p3d-batch failed (%d):\n%s" % (status, text))
    match = RUN_LINE.search(text)
    if match is None:
        sys.exit("no summary in p3d-batch's output:\n%s" % text)
    files, frames, seconds = int(match[1]), int(match[2]), float(match[3])
    manifest = bt.read_manifest(outdir)
    busy = [e["seconds"] for e in manifest if e["seconds"] is not None]
    return {"files": files, "frames": frames, "seconds": seconds,
            "files_per_s": files / seconds, "frames_per_s": frames / seconds,
            "ms_per_file_in_worker": 1000 * sum(busy) / len(busy),
            "devices": sorted({e["device"] for e in manifest} - {None})}


def from_memory(model, backend, beams, points, frames):
    """The chain's frames/s without files: two runs, so that start-up
    cancels out."""
    def timed(count):
        command = ["gst-launch-1.0", "-q", "pointcloudtestsrc",
                   "motion=false", "num-buffers=%d" % count,
                   "beams=%d" % beams, "points-per-revolution=%d" % points,
                   "format=xyzi", "!"] + bt.gst_launch_args(
                       chain(model, backend)) + ["!", "fakesink"]
        started = time.monotonic()
        subprocess.run(command, check=True, timeout=3600)
        return time.monotonic() - started

    few = max(1, frames // 10)
    short, long = timed(few), timed(frames)
    return (frames - few) / (long - short) if long > short else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=64)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--backend", choices=("auto", "cpu"), default="auto")
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--inputs", help="sweep files instead of "
                        "pointcloudtestsrc's (a glob pattern)")
    parser.add_argument("--beams", type=int, default=64)
    parser.add_argument("--points-per-revolution", type=int, default=1900)
    parser.add_argument("--memory-frames", type=int, default=0,
                        help="frames of the from-memory run (default: "
                        "as many as --files)")
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()
    workers = [int(w) for w in args.workers.split(",")]

    work = tempfile.mkdtemp(prefix="p3d-bench-batch-")
    if args.inputs:
        pattern = args.inputs
        files = sorted(glob.glob(pattern, recursive=True))
    else:
        files = bt.write_sweeps(os.path.join(work, "in"), args.files,
                                beams=args.beams,
                                points=args.points_per_revolution)
        pattern = os.path.join(work, "in", "*.bin")
    size = sum(os.path.getsize(f) for f in files) / len(files)
    print("%d files of %.0f bytes on average, %s backend" %
          (len(files), size, args.backend), flush=True)

    memory_rate = from_memory(args.model, args.backend, args.beams,
                              args.points_per_revolution,
                              args.memory_frames or len(files))
    rows = []
    for count in workers:
        read = batch_run("pointcloudparse preset=kitti", pattern,
                         os.path.join(work, "read-%d" % count), count, True)
        full = batch_run("pointcloudparse preset=kitti ! " +
                         chain(args.model, args.backend), pattern,
                         os.path.join(work, "chain-%d" % count), count, False)
        rows.append({"workers": count, "read": read, "chain": full})
        print("workers %d: read %s files/s, chain %s files/s" %
              (count, g(read["files_per_s"]), g(full["files_per_s"])),
              flush=True)

    print()
    print("| workers | read only: files/s | MB/s | ms/file in a worker "
          "| chain: files/s | frames/s | ms/file in a worker | speed-up |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    base = rows[0]["chain"]["files_per_s"]
    for row in rows:
        read, full = row["read"], row["chain"]
        print("| %d | %s | %s | %s | %s | %s | %s | %s |" % (
            row["workers"], g(read["files_per_s"]),
            g(read["files_per_s"] * size / 1e6),
            g(read["ms_per_file_in_worker"]), g(full["files_per_s"]),
            g(full["frames_per_s"]), g(full["ms_per_file_in_worker"]),
            g(full["files_per_s"] / base)))
    best = max(row["chain"]["files_per_s"] for row in rows)
    print()
    print("the chain from memory, one pipeline: %s frames/s" %
          g(memory_rate))
    print("the chain at its best here takes %s MB/s of sweep files; a "
          "read bandwidth of 1 GB/s feeds %s such chains, 10 GB/s %s" %
          (g(best * size / 1e6), g(1e9 / (best * size)),
           g(1e10 / (best * size))))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"files": len(files), "bytes_per_file": size,
                       "backend": args.backend, "from_memory": memory_rate,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
