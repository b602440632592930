#!/usr/bin/env python3
"""Proves that lss_pool.py pools as the `bevpool` element does, on the
camera model's own grid and rig.

Two comparisons, each through gst-launch-1.0 ... ! bevpool ! filesink:

1. the geometry, exactly: features of 1 and depth probabilities of 1
   (one channel) make bevpool count the frustum points of every cell; the
   counts must equal lss_pool.Geometry's, cell for cell;
2. a generated frame: cameratestsrc's six images of a seed go through the
   model's image network (bevdet_model.py, weights drawn from --seed, so
   the features and depth are a network's, not noise), its features and
   depth probabilities are written as an application/x-camera-features
   record and pooled by the element; the element's BEV features must equal
   the model's pooling (what the training sees) within float32 rounding:
   |element - model| <= 1e-5 x the cell's sum of |feature| x depth + 1e-30.

    GST_PLUGIN_PATH=build/gst python3 tools/train/check_lss_pool.py \\
        --work /tmp/p3d-check-lss [--backend cpu|cuda] [--device cpu|cuda]

Exit 0 when both agree, 1 with the first differences otherwise.
"""

import argparse
import json
import os
import subprocess
import sys

import numpy
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bevdet_model  # noqa: E402
import generate_camera_data  # noqa: E402
import lss_pool  # noqa: E402

RELATIVE = 1e-5


def bevpool_line(grid, rig, backend, cameras, channels, source, output):
    caps = ("application/x-camera-features,format=F32,cameras=%d,"
            "channels=%d,depth-bins=%d,width=%d,height=%d" % (
                cameras, channels, grid.depth_bins, grid.feature_size[0],
                grid.feature_size[1]))
    record = 4 * cameras * grid.feature_size[0] * grid.feature_size[1] \
        * (channels + grid.depth_bins)
    bounds = ["%s=<%s>" % (name, ",".join(repr(float(v)) for v in bound))
              for name, bound in zip(("xbound", "ybound", "zbound"),
                                     grid.bounds)]
    bounds.append("dbound=<%s>" % ",".join(repr(float(v))
                                           for v in grid.dbound))
    return ["filesrc", "location=" + source, "blocksize=%d" % record, "!",
            caps, "!", "bevpool", "calibration=" + rig,
            "image-width=%d" % grid.image_size[0],
            "image-height=%d" % grid.image_size[1],
            "cell-rounding=" + grid.rounding, "backend=" + backend] \
        + bounds + ["!", "filesink", "location=" + output]


def run_bevpool(gst_launch, grid, rig, backend, features, depth, work,
                name):
    """bevpool of one record: features [N][H][W][C], depth [N][D][H][W]
    (numpy float32) -> [C x nz][ny][nx]."""
    source = os.path.join(work, name + "-features.raw")
    output = os.path.join(work, name + "-bev.raw")
    with open(source, "wb") as stream:
        stream.write(numpy.ascontiguousarray(features, "<f4").tobytes())
        stream.write(numpy.ascontiguousarray(depth, "<f4").tobytes())
    cameras, channels = features.shape[0], features.shape[3]
    subprocess.run([gst_launch, "-q"] + bevpool_line(
        grid, rig, backend, cameras, channels, source, output), check=True)
    bev = numpy.fromfile(output, dtype="<f4")
    nx, ny, nz = grid.n
    if bev.size != channels * nz * ny * nx:
        raise RuntimeError("bevpool wrote %d values, %d expected"
                           % (bev.size, channels * nz * ny * nx))
    return bev.reshape(channels * nz, ny, nx)


def check_counts(gst_launch, grid, rig, cameras, backend, work):
    geometry = lss_pool.Geometry(lss_pool.read_calibration(rig), grid)
    fw, fh = grid.feature_size
    features = numpy.ones((cameras, fh, fw, 1), numpy.float32)
    depth = numpy.ones((cameras, grid.depth_bins, fh, fw), numpy.float32)
    bev = run_bevpool(gst_launch, grid, rig, backend, features, depth, work,
                      "counts")
    expected = geometry.counts().reshape(bev.shape).astype(numpy.float64)
    differ = numpy.nonzero(bev != expected)
    problems = []
    if differ[0].size:
        where = list(zip(*[d[:3].tolist() for d in differ]))
        problems.append("counts: %d cells differ, first (z, y, x) %s: "
                        "element %s, lss_pool %s" % (
                            differ[0].size, where,
                            [float(bev[w]) for w in where],
                            [float(expected[w]) for w in where]))
    return problems, int(expected.sum()), int((expected > 0).sum())


def render(gst_launch, rig, cameras, seed, work, image_size):
    """Frame 0 of seed @seed, every camera: [N][H][W][3] uint8."""
    line = []
    for camera in range(cameras):
        line += ["cameratestsrc", "calibration=" + rig, "camera=%d" % camera,
                 "seed=%d" % seed, "num-buffers=1", "!",
                 "video/x-raw,format=RGB", "!", "filesink",
                 "location=" + os.path.join(work, "cam%d.rgb" % camera)]
    subprocess.run([gst_launch, "-q"] + line, check=True)
    width, height = image_size
    return numpy.stack([numpy.fromfile(
        os.path.join(work, "cam%d.rgb" % camera), numpy.uint8).reshape(
            height, width, 3) for camera in range(cameras)])


def network_frame(config, rig, images, seed, device):
    """The image network's depth [N][D][H][W] and features [N][H][W][C]
    for @images, and the model's pooling of them [C][ny][nx]."""
    import train_bevdet

    torch.manual_seed(seed)
    cameras = lss_pool.read_calibration(rig)
    model = bevdet_model.BEVDet(config, cameras).to(device).eval()
    normalise = train_bevdet.Normalise(config, device)
    with torch.no_grad():
        x = normalise(torch.from_numpy(images).to(device).unsqueeze(0))
        x = model.img_neck(model.img_backbone(x.flatten(0, 1)))
        vt = model.img_view_transformer
        x = vt.depthnet(x)
        depth = x[:, :vt.D].float().softmax(dim=1)
        features = x[:, vt.D:vt.D + vt.numC_Trans].permute(0, 2, 3, 1)
        bev = vt.pool(depth.unsqueeze(0), features.unsqueeze(0))[0]
        magnitude = vt.pool(depth.unsqueeze(0),
                            features.abs().unsqueeze(0))[0]
    return (depth.cpu().numpy(), features.contiguous().cpu().numpy(),
            bev.cpu().numpy(), magnitude.cpu().numpy())


def check_frame(gst_launch, config, rig, backend, seed, device, work):
    grid = bevdet_model.grid_of(config)
    cameras = lss_pool.read_calibration(rig)
    images = render(gst_launch, rig, len(cameras), seed, work,
                    grid.image_size)
    depth, features, bev, magnitude = network_frame(config, rig, images,
                                                    seed, device)
    element = run_bevpool(gst_launch, grid, rig, backend, features, depth,
                          work, "frame")
    bound = RELATIVE * magnitude.astype(numpy.float64) + 1e-30
    error = numpy.abs(element.astype(numpy.float64) - bev)
    problems = []
    bad = numpy.nonzero(error > bound)
    if bad[0].size:
        where = list(zip(*[d[:3].tolist() for d in bad]))
        problems.append("frame: %d of %d values differ beyond %g of the "
                        "cell's magnitude, first (c, y, x) %s: element %s, "
                        "lss_pool %s" % (bad[0].size, element.size,
                                         RELATIVE, where,
                                         [float(element[w]) for w in where],
                                         [float(bev[w]) for w in where]))
    worst = float((error / bound).max()) * RELATIVE
    return problems, worst, int((numpy.abs(element) > 0).sum())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", default="/tmp/p3d-check-lss")
    parser.add_argument("--config", default=os.path.join(
        HERE, "bevdet_config.json"))
    parser.add_argument("--rig", default=generate_camera_data.DEFAULT_RIG)
    parser.add_argument("--seed", type=int, default=900001)
    parser.add_argument("--backend", default="cpu",
                        help="bevpool's backend")
    parser.add_argument("--device", default="cpu",
                        help="the torch device of the model")
    parser.add_argument("--gst-launch", default="gst-launch-1.0")
    args = parser.parse_args(argv)

    os.makedirs(args.work, exist_ok=True)
    with open(args.config) as stream:
        config = json.load(stream)
    rig = os.path.abspath(args.rig)
    grid = bevdet_model.grid_of(config)
    cameras = len(lss_pool.read_calibration(rig))
    problems, points, cells = check_counts(args.gst_launch, grid, rig,
                                           cameras, args.backend, args.work)
    print("check_lss_pool: geometry: %d frustum points in %d cells, %s"
          % (points, cells, "every cell's count equal" if not problems
             else "DIFFERENT"))
    frame_problems, worst, nonzero = check_frame(
        args.gst_launch, config, rig, args.backend, args.seed,
        torch.device(args.device), args.work)
    print("check_lss_pool: seed %d frame 0 through the image network: %d "
          "non-zero BEV values, the largest difference %.2g of its cell's "
          "magnitude (bound %g): %s" % (args.seed, nonzero, worst, RELATIVE,
                                         "equal" if not frame_problems
                                         else "DIFFERENT"))
    problems += frame_problems
    for problem in problems:
        print("check_lss_pool: " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
