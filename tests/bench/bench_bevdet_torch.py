#!/usr/bin/env python3
"""PyTorch's time for the BEVDet network (the image network on the six
cameras, the lift-splat pooling, the BEV network with its head) on the same
weights and the same input as bench_bevdet, the comparison of
docs/performance.md.

  bench_bevdet_torch.py --weights MODEL.safetensors --calibration CALIB.json
      [--input INPUT.f32] [--runs 200] [--warmup 30]
      [--compile-timeout 300] [--compile-mode default] [--no-compile]

The model comes from tests/reference/bevdet_torch.py (plain PyTorch with
BEVDet's module names and state_dict, BatchNorm as separate modules, as
BEVDet runs it).  The input: --input, the normalised network input
[cameras][3][H][W] float32 that `bevdet_torch.py run` writes (input.f32),
else random values.  The pooling is BEVDet's lift and splat on the same
geometry as bevpool, written with torch operations (a gather of each kept
frustum point's depth weight and features, their product added into its
cell with index_add_), the points and cells computed once from the
calibration, as bevpool computes its geometry once; the image
preprocessing (PIL on the CPU in BEVDet) and the box decode (Python NMS in
BEVDet) are not timed here, while bench_bevdet's chain includes both: the
comparison favours PyTorch.

Cases, each timed after --warmup runs, --runs times, as
bench_centerpoint_torch.py times them (its Timer: "as launched", "GPU busy"
with the forward queued behind a hold kernel, and the wall clock):
  (a) eager F32;
  (b) eager F16, model and input channels_last, cudnn.benchmark on;
  (c) torch.compile of (b), when it compiles within --compile-timeout
      seconds (a failure is reported and the table keeps the other rows).
Each case's heatmaps are compared with (a)'s, and (a)'s boxes decoded with
the model's Scale-NMS, so the kept count can be set beside bench_bevdet's.

Without a GPU, or without torch, only the argument parsing runs.
"""

import argparse
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Time the BEVDet network in PyTorch.")
    p.add_argument("--weights", required=True,
                   help="the model's safetensors file (the converter's)")
    p.add_argument("--calibration", required=True,
                   help="bevpool's calibration file, the model's cameras")
    p.add_argument("--input", help="the network input, float32 "
                   "[cameras][3][H][W] (bevdet_torch.py run's input.f32)")
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--compile-timeout", type=float, default=300.0,
                   help="seconds torch.compile may take (300)")
    p.add_argument("--compile-mode", default="default",
                   help="torch.compile mode (default, reduce-overhead, "
                   "max-autotune)")
    p.add_argument("--no-compile", action="store_true")
    args = p.parse_args(argv)
    if args.runs < 1 or args.warmup < 0:
        p.error("--runs must be at least 1, --warmup at least 0")
    return args


class Pooling:
    """BEVDet's lift and splat on bevpool's geometry, in torch operations:
    the kept frustum points' depth and feature indices and their cells,
    computed once."""

    def __init__(self, torch, ref, config, calibration, depth_shape,
                 device):
        import numpy as np
        n, d, fh, fw = depth_shape
        cells, (nx, ny, nz) = ref.geometry(config, calibration, fh, fw)
        depth_index, pixel_index, cell_index = [], [], []
        for cam, ((ix, iy, iz), kept) in enumerate(cells):
            dd, vv, uu = np.nonzero(kept)
            depth_index.append(((cam * d + dd) * fh + vv) * fw + uu)
            pixel_index.append((cam * fh + vv) * fw + uu)
            cell_index.append(((iz * ny + iy) * nx + ix)[kept])
        self.torch = torch
        self.depth_index = torch.from_numpy(np.concatenate(depth_index)).to(
            device)
        self.pixel_index = torch.from_numpy(np.concatenate(pixel_index)).to(
            device)
        self.cell_index = torch.from_numpy(np.concatenate(cell_index)).to(
            device)
        self.shape = (nz, ny, nx)

    def __call__(self, depth, feats):
        torch = self.torch
        nz, ny, nx = self.shape
        c = feats.shape[1]
        weight = depth.reshape(-1)[self.depth_index]
        point = feats.permute(0, 2, 3, 1).reshape(-1, c)[self.pixel_index]
        bev = torch.zeros(nz * ny * nx, c, dtype=feats.dtype,
                          device=feats.device)
        bev = bev.index_add(0, self.cell_index, point * weight[:, None])
        return bev.view(nz, ny, nx, c).permute(0, 3, 1, 2).reshape(
            1, nz * c, ny, nx)


def main(argv):
    args = parse_args(argv)
    try:
        import numpy as np
        import torch
    except ImportError:
        print("torch is not installed: nothing to time", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to time", file=sys.stderr)
        return 1
    sys.path.insert(0, os.path.join(HERE, "..", "reference"))
    import bevdet_torch as ref
    import bench_centerpoint_torch as bench

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda")
    model, config = ref.load_weights(args.weights, device)
    data = config["data_config"]
    n = len(data["cams"])
    h, w = data["input_size"]
    if args.input:
        images = torch.from_numpy(np.fromfile(args.input, "<f4").reshape(
            n, 3, h, w))
        source = args.input
    else:
        images = torch.randn(n, 3, h, w, generator=torch.Generator()
                             .manual_seed(1))
        source = "random"
    images = images.to(device).contiguous()
    calibration = ref.read_calibration(args.calibration, n)
    with torch.no_grad():
        depth, _ = model.forward_image(images)
    pool = Pooling(torch, ref, config, calibration, tuple(depth.shape),
                   device)

    def network(m):
        def forward(x):
            depth, feats = m.forward_image(x)
            return m.forward_bev(pool(depth, feats))
        return forward

    timer = bench.Timer(torch)
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
            worst, largest = bench.heat_difference(heads, reference)
            notes.append("%s: heatmap logits differ from eager F32 by at "
                         "most %.3g (largest |logit| %.3g)" %
                         (name, worst, largest))
        rows.append((name, bench.fmt(launched), bench.fmt(busy),
                     bench.fmt(wall)))
        return heads

    torch.backends.cudnn.benchmark = False
    heads32 = run_case("eager F32", network(model), images)
    decoded, kept = ref.detect(heads32, config)

    torch.backends.cudnn.benchmark = True
    model16 = model.half().to(memory_format=torch.channels_last)
    images16 = images.half().contiguous(memory_format=torch.channels_last)
    run_case("eager F16 channels_last, cudnn.benchmark", network(model16),
             images16, heads32)

    name = "torch.compile (%s) of F16 channels_last" % args.compile_mode
    if args.no_compile:
        notes.append("torch.compile: not tried (--no-compile)")
    elif not hasattr(torch, "compile"):
        notes.append("torch.compile: this torch (%s) has none" %
                     torch.__version__)
    else:
        previous = signal.signal(signal.SIGALRM, bench.on_alarm)
        begin = time.perf_counter()
        try:
            signal.alarm(max(1, int(args.compile_timeout)))
            compiled = torch.compile(network(model16),
                                     mode=args.compile_mode)
            with torch.no_grad():
                compiled(images16)
                torch.cuda.synchronize()
            signal.alarm(0)
            notes.append("torch.compile: compiled in %.1f s" %
                         (time.perf_counter() - begin))
            run_case(name, compiled, images16, heads32)
        except bench.CompileTimeout:
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

    print("BEVDet network in PyTorch %s on %s (cuDNN %s)" % (
        torch.__version__, torch.cuda.get_device_name(0),
        torch.backends.cudnn.version()))
    print("weights %s; input %s (%d x 3 x %d x %d); %d frustum points "
          "kept" % (args.weights, source, n, h, w,
                    len(pool.cell_index)))
    print("eager F32: %d boxes decoded, %d kept after Scale-NMS" %
          (len(decoded), len(kept)))
    for note in notes:
        print(note)
    print()
    print("Forward (image network, pooling, BEV network and head; no "
          "preprocessing, no decode) in ms, median (p10-p90) of %d runs "
          "after %d warm-up runs" % (args.runs, args.warmup))
    print()
    print("| case | GPU, events as launched | GPU busy, queued ahead | "
          "wall clock |")
    print("| --- | ---: | ---: | ---: |")
    for row in rows:
        print("| %s | %s | %s | %s |" % row)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
