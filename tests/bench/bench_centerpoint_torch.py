#!/usr/bin/env python3
"""PyTorch's time for the CenterPoint-pillar network (backbone + neck +
head) on the same weights and the same pillar input as bench_network, the
comparison of docs/performance.md.

  bench_centerpoint_torch.py --weights MODEL.safetensors
      (--pillars PILLARS.bin | --bev BEV.bin) [--frame 0]
      [--max-voxels N] [--max-points N] [--runs 200] [--warmup 30]
      [--compile-timeout 120] [--compile-mode default] [--no-compile]

The model and its weights come from tests/reference/centerpoint_torch.py
(plain PyTorch with mmdetection3d's module names and state_dict, BatchNorm
as separate modules, as mmdetection3d runs it).  The input: --pillars, a
record of application/x-pillar-features (what filesink writes after
pillarfeat, or bench_network --write-pillars), run through the pillar
feature net and the scatter once, untimed; or --bev, a canvas
application/x-bev-features.

Cases, each timed on that one canvas after --warmup runs, --runs times:
  (a) eager F32;
  (b) eager F16, model and input channels_last, cudnn.benchmark on;
  (c) torch.compile of (b), when it compiles within --compile-timeout
      seconds (a failure is reported and the table keeps the other rows).
Per run, three times of the forward, median (p10-p90), in ms:
  - "as launched": CUDA events around the call as a program makes it; a
    launch-bound forward shows its launch gaps here;
  - "GPU busy": the same events with the forward queued behind a hold
    kernel (torch.cuda._sleep), so the host has queued every kernel before
    the GPU starts: the device time without launch gaps, what bench_network
    measures for our network (runs where the hold ran out before the host
    finished queueing are dropped and counted);
  - "wall": the host clock from the call to the synchronized result.
Each case's heads are compared with (a)'s (largest heatmap logit
difference), and (a)'s boxes are decoded with the model's test NMS, so the
kept count can be set beside bench_network's.

Without a GPU, or without torch, only the argument parsing runs.
"""

import argparse
import os
import signal
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Time the CenterPoint-pillar network in PyTorch.")
    p.add_argument("--weights", required=True,
                   help="the model's safetensors file (the converter's)")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--pillars",
                       help="an application/x-pillar-features record file")
    group.add_argument("--bev", help="an application/x-bev-features file")
    p.add_argument("--frame", type=int, default=0)
    p.add_argument("--max-voxels", type=int)
    p.add_argument("--max-points", type=int)
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--compile-timeout", type=float, default=120.0,
                   help="seconds torch.compile may take (120)")
    p.add_argument("--compile-mode", default="default",
                   help="torch.compile mode (default, reduce-overhead, "
                   "max-autotune)")
    p.add_argument("--no-compile", action="store_true")
    args = p.parse_args(argv)
    if args.runs < 1 or args.warmup < 0:
        p.error("--runs must be at least 1, --warmup at least 0")
    return args


def summary(values):
    """(median, p10, p90) of a list of ms."""
    ordered = sorted(values)
    n = len(ordered)
    return (statistics.median(ordered), ordered[int(0.1 * (n - 1))],
            ordered[int(0.9 * (n - 1))])


def fmt(values):
    if not values:
        return "n/a"
    m, lo, hi = summary(values)
    return "%.3f (%.3f-%.3f)" % (m, lo, hi)


class Timer:
    """The three per-run times of one forward function."""

    def __init__(self, torch):
        self.torch = torch
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)
        # cycles of the hold kernel: grown until the host always finishes
        # queueing the forward before the hold ends
        self.hold_cycles = 20_000_000

    def launched(self, forward, x):
        torch = self.torch
        torch.cuda.synchronize()
        begin = time.perf_counter()
        self.start.record()
        out = forward(x)
        self.end.record()
        torch.cuda.synchronize()
        wall = (time.perf_counter() - begin) * 1e3
        return self.start.elapsed_time(self.end), wall, out

    def busy(self, forward, x):
        """The GPU time with the whole forward queued first; None when the
        hold ran out while the host was still queueing."""
        torch = self.torch
        torch.cuda.synchronize()
        torch.cuda._sleep(self.hold_cycles)
        self.start.record()
        forward(x)
        self.end.record()
        # the start event is still pending: the GPU is inside the hold
        valid = not self.start.query()
        torch.cuda.synchronize()
        if not valid:
            self.hold_cycles *= 2
            return None
        return self.start.elapsed_time(self.end)

    def measure(self, forward, x, warmup, runs):
        for _ in range(warmup):
            self.launched(forward, x)
        launched, wall, busy, expired = [], [], [], 0
        for _ in range(runs):
            gpu, clock, _ = self.launched(forward, x)
            launched.append(gpu)
            wall.append(clock)
        for _ in range(runs):
            t = self.busy(forward, x)
            if t is None:
                expired += 1
            else:
                busy.append(t)
        return launched, busy, wall, expired


class CompileTimeout(Exception):
    pass


def on_alarm(signum, frame):
    raise CompileTimeout()


def heat_difference(heads, reference):
    """Largest |logit difference| over every heatmap, and largest |logit|
    of the reference."""
    worst, largest = 0.0, 0.0
    for ours, ref in zip(heads, reference):
        a, b = ours["heatmap"].float(), ref["heatmap"].float()
        worst = max(worst, float((a - b).abs().max()))
        largest = max(largest, float(b.abs().max()))
    return worst, largest


def main(argv):
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("torch is not installed: nothing to time", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to time", file=sys.stderr)
        return 1
    sys.path.insert(0, os.path.join(HERE, "..", "reference"))
    import centerpoint_torch as ref

    device = torch.device("cuda")
    model, config = ref.load_weights(args.weights, device)
    with torch.no_grad():
        if args.pillars:
            features, coords, fmt_in = ref.read_pillars(
                args.pillars, config, args.frame, args.max_voxels,
                args.max_points)
            pillars = model.pts_voxel_encoder(
                torch.from_numpy(features).to(device))
            canvas, dropped = model.scatter(
                pillars, torch.from_numpy(coords).to(device))
            source = "%s: %d pillars (%s), %d outside the grid" % (
                args.pillars, len(features), fmt_in, dropped)
        else:
            canvas = torch.from_numpy(ref.read_bev(args.bev, config,
                                                   args.frame)).to(device)
            source = args.bev
    canvas = canvas.float().contiguous()

    timer = Timer(torch)
    rows = []
    notes = []

    def run_case(name, forward, x, reference=None):
        with torch.no_grad():
            launched, busy, wall, expired = timer.measure(
                forward, x, args.warmup, args.runs)
            heads = forward(x)
            torch.cuda.synchronize()
        if expired:
            notes.append("%s: %d of %d GPU-busy runs dropped (the hold "
                         "ran out first)" % (name, expired, args.runs))
        if reference is not None:
            worst, largest = heat_difference(heads, reference)
            notes.append("%s: heatmap logits differ from eager F32 by at "
                         "most %.3g (largest |logit| %.3g)" %
                         (name, worst, largest))
        rows.append((name, fmt(launched), fmt(busy), fmt(wall)))
        return heads

    # (a) eager F32
    torch.backends.cudnn.benchmark = False
    heads32 = run_case("eager F32", model.forward_bev, canvas)
    decoded, kept = ref.detect(heads32, config)

    # (b) eager F16 channels_last, cudnn.benchmark
    torch.backends.cudnn.benchmark = True
    model16 = model.half().to(memory_format=torch.channels_last)
    canvas16 = canvas.half().contiguous(memory_format=torch.channels_last)
    run_case("eager F16 channels_last, cudnn.benchmark", model16.forward_bev,
             canvas16, heads32)

    # (c) torch.compile of (b)
    name = "torch.compile (%s) of F16 channels_last" % args.compile_mode
    if args.no_compile:
        notes.append("torch.compile: not tried (--no-compile)")
    elif not hasattr(torch, "compile"):
        notes.append("torch.compile: this torch (%s) has none" %
                     torch.__version__)
    else:
        previous = signal.signal(signal.SIGALRM, on_alarm)
        begin = time.perf_counter()
        try:
            signal.alarm(max(1, int(args.compile_timeout)))
            compiled = torch.compile(model16.forward_bev,
                                     mode=args.compile_mode)
            with torch.no_grad():
                compiled(canvas16)   # the compilation happens here
                torch.cuda.synchronize()
            signal.alarm(0)
            notes.append("torch.compile: compiled in %.1f s" %
                         (time.perf_counter() - begin))
            run_case(name, compiled, canvas16, heads32)
        except CompileTimeout:
            notes.append("torch.compile: did not compile within %.0f s" %
                         args.compile_timeout)
        except Exception as error:  # report any failure, keep the table
            signal.alarm(0)
            notes.append("torch.compile: failed after %.1f s: %s: %s" % (
                time.perf_counter() - begin, type(error).__name__,
                str(error).splitlines()[0] if str(error) else ""))
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)

    print("CenterPoint-pillar network in PyTorch %s on %s (cuDNN %s)" % (
        torch.__version__, torch.cuda.get_device_name(0),
        torch.backends.cudnn.version()))
    print("weights %s; input %s; canvas %s" % (
        args.weights, source, "x".join(str(d) for d in canvas.shape)))
    print("eager F32: %d boxes decoded, %d kept after the %s test NMS" % (
        len(decoded), len(kept), config["test_nms"]["type"]))
    for note in notes:
        print(note)
    print()
    print("Forward (backbone + neck + head) in ms, median (p10-p90) of %d "
          "runs after %d warm-up runs" % (args.runs, args.warmup))
    print()
    print("| case | GPU, events as launched | GPU busy, queued ahead | "
          "wall clock |")
    print("| --- | ---: | ---: | ---: |")
    for row in rows:
        print("| %s | %s | %s | %s |" % row)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
