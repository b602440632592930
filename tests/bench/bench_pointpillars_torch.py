#!/usr/bin/env python3
"""PyTorch's time for the PointPillars network (backbone, neck and anchor
head) on one pillar input, as bench_centerpoint_torch.py times
CenterPoint's: the comparison the anchor-head path's figures in
docs/performance.md are set beside.

  bench_pointpillars_torch.py --framework openpcdet|mmdet3d
      --checkpoint CKPT.pth --config CFG --pillars PILLARS.bin [--frame 0]
      [--runs 200] [--warmup 30] [--compile-timeout 120]
      [--compile-mode default] [--no-compile]

The model comes from tests/reference/pointpillars_torch.py (the
framework's modules and state_dict, BatchNorm as separate modules, as the
framework runs it), loaded from the framework's own checkpoint and config
(pointpillars_torch.py init writes both).  --pillars: a record of
application/x-pillar-features (pillarfeat ! filesink, pointpillars-10),
run through the pillar net and the scatter once, untimed.

Cases, each timed on that one canvas after --warmup runs, --runs times:
  (a) eager F32;
  (b) eager F16, model and input channels_last, cudnn.benchmark on;
  (c) torch.compile of (b), when it compiles within --compile-timeout
      seconds (a failure is reported and the table keeps the other rows).
Per run: "as launched" (CUDA events around the call), "GPU busy" (the
forward queued behind a hold kernel: the device time without launch
gaps), "wall" (the host clock), median (p10-p90) in ms; each case's class
logits are compared with (a)'s, and (a)'s boxes are decoded with the
framework's post-processing.

Without a GPU, or without torch, only the argument parsing runs.
"""

import argparse
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_centerpoint_torch as cp_bench  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Time the PointPillars network in PyTorch.")
    p.add_argument("--framework", choices=("openpcdet", "mmdet3d"),
                   required=True)
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--pillars", required=True,
                   help="an application/x-pillar-features record file")
    p.add_argument("--frame", type=int, default=0)
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--compile-timeout", type=float, default=120.0)
    p.add_argument("--compile-mode", default="default")
    p.add_argument("--no-compile", action="store_true")
    args = p.parse_args(argv)
    if args.runs < 1 or args.warmup < 0:
        p.error("--runs must be at least 1, --warmup at least 0")
    return args


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
    import pointpillars_torch as ref

    device = torch.device("cuda")
    model, cfg, doc, legacy = ref.load_model(args.framework, args.checkpoint,
                                             args.config, device)
    with torch.no_grad():
        features, coords, fmt_in = ref.cp.read_pillars(args.pillars, doc,
                                                       args.frame)
        features = torch.from_numpy(features).to(device)
        coords = torch.from_numpy(coords).to(device)
        canvas = model.scatter(model.encode(features, coords, legacy),
                               coords).float().contiguous()
    source = "%s: %d pillars (%s)" % (args.pillars, len(features), fmt_in)

    timer = cp_bench.Timer(torch)
    rows, notes = [], []

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
            diff = float((heads[0].float() - reference[0].float()).abs()
                         .max())
            notes.append("%s: class logits differ from eager F32 by at most "
                         "%.3g (largest |logit| %.3g)" % (
                             name, diff,
                             float(reference[0].float().abs().max())))
        rows.append((name, cp_bench.fmt(launched), cp_bench.fmt(busy),
                     cp_bench.fmt(wall)))
        return heads

    torch.backends.cudnn.benchmark = False
    heads32 = run_case("eager F32", model.forward_bev, canvas)
    with torch.no_grad():
        boxes = ref.detect(args.framework, cfg, heads32, ref.make_anchors(
            args.framework, cfg, heads32, device))

    torch.backends.cudnn.benchmark = True
    model16 = model.half().to(memory_format=torch.channels_last)
    canvas16 = canvas.half().contiguous(memory_format=torch.channels_last)
    run_case("eager F16 channels_last, cudnn.benchmark", model16.forward_bev,
             canvas16, heads32)

    name = "torch.compile (%s) of F16 channels_last" % args.compile_mode
    if args.no_compile:
        notes.append("torch.compile: not tried (--no-compile)")
    else:
        previous = signal.signal(signal.SIGALRM, cp_bench.on_alarm)
        begin = time.perf_counter()
        try:
            signal.alarm(max(1, int(args.compile_timeout)))
            compiled = torch.compile(model16.forward_bev,
                                     mode=args.compile_mode)
            with torch.no_grad():
                compiled(canvas16)
                torch.cuda.synchronize()
            signal.alarm(0)
            notes.append("torch.compile: compiled in %.1f s" %
                         (time.perf_counter() - begin))
            run_case(name, compiled, canvas16, heads32)
        except cp_bench.CompileTimeout:
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

    print("PointPillars (%s) network in PyTorch %s on %s (cuDNN %s)" % (
        args.framework, torch.__version__, torch.cuda.get_device_name(0),
        torch.backends.cudnn.version()))
    print("checkpoint %s; input %s; canvas %s" % (
        args.checkpoint, source, "x".join(str(d) for d in canvas.shape)))
    print("eager F32: %d boxes after the framework's post-processing" %
          len(boxes))
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
