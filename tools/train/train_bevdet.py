#!/usr/bin/env python3
"""Trains the small BEVDet camera model of bevdet_config.json on six
cameratestsrc cameras of the nuScenes-like rig, in one unattended run (see
README.md, "The camera model").

Steps, each with progress lines on stdout:
 1. (--generate) generate_camera_data.py writes the training and held-out
    seeds (six cameras' images and depth, the lidar's points, the true
    boxes);
 2. every frame's images go onto the device as bytes, the depth of every
    frustum ray (the pixel under each feature column, lss_pool's frustum)
    is kept, every true box's lidar points are counted;
 3. training: each step takes a batch of frames (seeded draw), normalises
    the images as BEVDet does, runs the network with bevpool's pooling
    (lss_pool.py: the element's geometry, so the BEV features are the
    pipeline's), and takes mmdetection3d's CenterHead losses (as
    train_centerpoint.py: gaussian heatmaps, GaussianFocalLoss, L1 with
    weight 0.25) plus a depth loss: the cross-entropy of the depth net's
    distribution against the true depth of each ray (cameratestsrc
    emit=depth) split between its two nearest bins; AdamW, one-cycle,
    bf16 autocast; the number of steps fitted to the time left (measured
    over the first steps) unless --iterations fixes it;
 4. evaluation on the held-out seeds through the PyTorch model (decode and
    BEVDet's Scale-NMS as the config's test_nms says) with
    tools/eval_ap.py's rules, also within 25.6 m ahead and behind;
 5. the checkpoint (BEVDet's layout: {"state_dict", "meta"}), conversion
    with tools/convert_bevdet.py when it is in the tree, the held-out
    detections and truth, a log and a summary in --out;
 6. (--eval-pipeline) the weights file through the GStreamer pipeline
    (eval_camera_pipeline.py: cameratestsrc x 6 ! camencode ! bevpool !
    bevdetect ! boxenc) on the same held-out seeds, into the summary.

--deadline bounds steps 1 to 5; step 6 comes after it.  Torch is needed
only here (never by the product).
"""

import argparse
import concurrent.futures
import json
import math
import os
import subprocess
import sys
import time

import numpy
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
import bevdet_model  # noqa: E402
import eval_ap  # noqa: E402
import generate_camera_data  # noqa: E402
import lss_pool  # noqa: E402
import sensors  # noqa: E402
import train_centerpoint  # noqa: E402

GRAD_CLIP = 35.0
# the accuracy figure reported beside the whole area: the 25.6 m ahead of
# and behind the cameras, where a car is still 20 pixels tall in the side
# cameras
NEAR_X = 25.6
CHECKPOINT = "bevdet_synthetic.pth"
WEIGHTS = "bevdet_synthetic.safetensors"

STARTED = time.time()
LOG = None


def log(text):
    line = "[%6.1f s] %s" % (time.time() - STARTED, text)
    print(line, flush=True)
    if LOG is not None:
        LOG.write(line + "\n")
        LOG.flush()


# Config ---------------------------------------------------------------------

def model_range(config):
    """[xmin, ymin, zmin, xmax, ymax, zmax] of the BEV grid: the area the
    evaluation counts boxes in."""
    grid = config["grid_config"]
    return [grid["xbound"][0], grid["ybound"][0], grid["zbound"][0],
            grid["xbound"][1], grid["ybound"][1], grid["zbound"][1]]


def head_config(config):
    """What train_centerpoint's Targets and decode read: the coder, the
    head, the range and a voxel grid that the out_size_factor divides into
    the BEV grid."""
    grid = bevdet_model.grid_of(config)
    osf = config["coder"]["out_size_factor"]
    return {"coder": config["coder"], "head": config["head"],
            "test_nms": config["test_nms"],
            "point_cloud_range": model_range(config),
            "grid": [grid.n[0] * osf, grid.n[1] * osf, 1]}


def check_config(config, cameras):
    """The config's cameras and sizes against the rig, and the coder's
    cells against the BEV grid (the head's maps are the BEV grid's)."""
    data = config["data_config"]
    if len(cameras) != data["Ncams"] or \
            [c["name"] for c in cameras] != data["cams"]:
        raise ValueError("the rig's cameras %s are not the config's %s"
                         % ([c["name"] for c in cameras], data["cams"]))
    height, width = data["input_size"]
    if data["src_size"] != data["input_size"] or data["resize_test"] != 0:
        raise ValueError("the camera model is trained on images of the "
                         "network's input size (src_size = input_size, "
                         "resize_test 0)")
    for camera in cameras:
        if camera["image_size"] != [width, height] or \
                camera["img_aug"] != lss_pool.IDENTITY:
            raise ValueError("camera %s: image_size %s and img_aug %s; the "
                             "config wants %d x %d images and no "
                             "augmentation" % (camera["name"],
                                               camera["image_size"],
                                               camera["img_aug"], width,
                                               height))
    coder = config["coder"]
    grid = config["grid_config"]
    for axis, bound in enumerate((grid["xbound"], grid["ybound"])):
        cell = coder["voxel_size"][axis] * coder["out_size_factor"]
        if abs(cell - bound[2]) > 1e-9 or \
                abs(coder["pc_range"][axis] - bound[0]) > 1e-9:
            raise ValueError("the coder's cells (%g m from %g) are not the "
                             "BEV grid's (%g m from %g)" % (
                                 cell, coder["pc_range"][axis], bound[2],
                                 bound[0]))


# Data -----------------------------------------------------------------------

def ray_pixels(grid):
    """The image pixel under each frustum column and row: the nearest to
    linspace(0, size - 1, count), bevpool's frustum coordinates."""
    width, height = grid.image_size
    feat_w, feat_h = grid.feature_size
    cols = numpy.rint(numpy.arange(feat_w) * (width - 1) / (feat_w - 1))
    rows = numpy.rint(numpy.arange(feat_h) * (height - 1) / (feat_h - 1))
    return rows.astype(numpy.int64), cols.astype(numpy.int64)


def read_frame(entry, k, cameras, grid, rows, cols):
    """One frame's files: images [N][H][W][3] uint8, the depth of each ray
    [N][fH][fW] uint16 millimetres, the lidar points [P][4] float32 and the
    true boxes (eval_ap dicts)."""
    width, height = grid.image_size
    images = numpy.empty((cameras, height, width, 3), dtype=numpy.uint8)
    depth = numpy.empty((cameras, len(rows), len(cols)), dtype=numpy.uint16)
    for camera in range(cameras):
        image_path, depth_path = generate_camera_data.camera_files(
            entry["dir"], camera)
        images[camera] = numpy.fromfile(
            image_path % k, dtype=numpy.uint8).reshape(height, width, 3)
        full = numpy.fromfile(depth_path % k, dtype="<u2").reshape(
            height, width)
        depth[camera] = full[rows][:, cols]
    points = numpy.fromfile(os.path.join(entry["dir"], "%06d.bin" % k),
                            dtype="<f4").reshape(-1, sensors.POINT_CHANNELS)
    return images, depth, points


class FrameSet:
    """Frames of one set: images on the device as bytes
    [F][N][H][W][3], the rays' depth [F][N][fH][fW] in metres (0: none),
    the true boxes [x y z dx dy dz yaw label] with their lidar points."""

    def __init__(self, entries, cameras, grid, device, jobs, keep_truth):
        rows, cols = ray_pixels(grid)
        frames = [(e, k) for e in entries for k in range(e["frames"])]
        width, height = grid.image_size
        self.images = torch.empty((len(frames), cameras, height, width, 3),
                                  dtype=torch.uint8, device=device)
        self.depth = torch.empty((len(frames), cameras, len(rows),
                                  len(cols)), dtype=torch.float32,
                                 device=device)
        self.boxes, self.box_points, self.truth, self.names = [], [], [], []
        truths = {}
        for entry in entries:
            truth = eval_ap.read_frames(os.path.join(entry["dir"],
                                                     "truth.jsonl"))
            if len(truth) != entry["frames"]:
                raise RuntimeError("%s: %d truth frames, %d expected" % (
                    entry["dir"], len(truth), entry["frames"]))
            truths[entry["seed"]] = truth
        def reads(pool):
            # a few frames ahead of the copies, never the whole set in
            # host memory
            ahead = 4 * jobs
            for start in range(0, len(frames), ahead):
                chunk = frames[start:start + ahead]
                yield from pool.map(lambda f: read_frame(
                    f[0], f[1], cameras, grid, rows, cols), chunk)

        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            for i, ((entry, k), (images, depth, points)) in enumerate(
                    zip(frames, reads(pool))):
                self.images[i].copy_(torch.from_numpy(images))
                self.depth[i].copy_(torch.from_numpy(
                    depth.astype(numpy.float32) / 1000.0))
                truth_boxes = truths[entry["seed"]][k]
                boxes = torch.tensor(
                    [[b[f] for f in eval_ap.BOX_FIELDS[:7]] + [b["label"]]
                     for b in truth_boxes], dtype=torch.float32,
                    device=device).reshape(-1, 8)
                inside = train_centerpoint.count_points(
                    torch.from_numpy(points).to(device), boxes)
                for box, n in zip(truth_boxes, inside.tolist()):
                    box["points"] = n
                self.boxes.append(boxes)
                self.box_points.append(inside)
                self.names.append("seed%d/%06d" % (entry["seed"], k))
                if keep_truth:
                    self.truth.append(truth_boxes)

    def __len__(self):
        return len(self.boxes)


# Inputs, targets, losses ----------------------------------------------------

class Normalise:
    """BEVDet's ToTensor + Normalize on bytes [B][N][H][W][3] ->
    [B x N][3][H][W] float32 (channels-last strides), each operation one
    float32 rounding as torchvision's."""

    def __init__(self, config, device):
        data = config["data_config"]
        self.mean = torch.tensor(data["mean"], dtype=torch.float32,
                                 device=device).view(1, 3, 1, 1)
        self.std = torch.tensor(data["std"], dtype=torch.float32,
                                device=device).view(1, 3, 1, 1)

    def __call__(self, images):
        b, n, h, w, _ = images.shape
        x = images.reshape(b * n, h, w, 3).permute(0, 3, 1, 2)
        x = x.float() / 255.0
        return ((x - self.mean) / self.std).view(b, n, 3, h, w)


def depth_targets(depth, grid):
    """The true depth of each ray [...][fH][fW] (metres, 0: nothing hit)
    as a distribution over the bins [...][D][fH][fW], split between the
    two bins around it (so its mean is the true depth), and the rays that
    have one (a depth inside the bins)."""
    dmin, _, step = grid.dbound
    bins = grid.depth_bins
    t = (depth - dmin) / step
    valid = (depth > 0) & (t >= 0) & (t <= bins - 1)
    t = torch.where(valid, t, torch.zeros_like(t))
    low = torch.clamp(torch.floor(t), 0, bins - 1)
    frac = t - low
    high = torch.clamp(low + 1, max=bins - 1)
    shape = list(depth.shape)
    target = torch.zeros(shape[:-2] + [bins] + shape[-2:],
                         device=depth.device)
    dim = len(shape) - 2
    target.scatter_add_(dim, low.long().unsqueeze(dim),
                        (1 - frac).unsqueeze(dim))
    target.scatter_add_(dim, high.long().unsqueeze(dim),
                        frac.unsqueeze(dim))
    return target * valid.unsqueeze(dim), valid


def depth_loss(logits, target, valid):
    """Cross-entropy of the depth net's distribution against the target,
    the mean over the rays that have a true depth."""
    log_p = torch.log_softmax(logits.float(), dim=1)
    per_ray = -(target * log_p).sum(dim=1)
    return (per_ray * valid).sum() / valid.sum().clamp(min=1)


def batch_boxes(frames, indices, min_points, rng):
    boxes, frame_of_box = [], []
    device = frames.images.device
    for b, k in enumerate(indices):
        keep = frames.box_points[k] >= min_points
        bx = frames.boxes[k][keep]
        bx = bx[train_centerpoint.in_range(bx, rng)]
        boxes.append(bx)
        frame_of_box.append(torch.full((bx.shape[0],), b, dtype=torch.int64,
                                       device=device))
    return torch.cat(boxes), torch.cat(frame_of_box)


# Decode: the coder, then BEVDet's Scale-NMS ---------------------------------

def scale_nms(boxes, nms):
    """BEVDet's rotated NMS of one task (nms_type rotate): the boxes'
    sizes multiplied by their class's nms_rescale_factor, best first
    (stable), the pre_max_size best, a box dropped when its BEV IoU with a
    kept one is more than nms_thr, post_max_size kept; the boxes come back
    unscaled."""
    # one value, or one per task (this model has one task); a task's
    # value is one factor, or a list of one per class
    factors = nms.get("nms_rescale_factor", 1.0)
    if isinstance(factors, list):
        factors = factors[0]
    if not isinstance(factors, list):
        factors = [factors] * 3

    def scaled(box):
        f = factors[box["label"]]
        return dict(box, dx=box["dx"] * f, dy=box["dy"] * f,
                    dz=box["dz"] * f)

    ordered = sorted(boxes, key=lambda d: -d["score"])[:nms["pre_max_size"]]
    kept, kept_scaled = [], []
    for box in ordered:
        s = scaled(box)
        reach = math.hypot(s["dx"], s["dy"]) / 2
        overlaps = False
        for other in kept_scaled:
            # boxes further apart than their half diagonals cannot overlap
            if math.hypot(s["x"] - other["x"], s["y"] - other["y"]) > \
                    reach + other["reach"]:
                continue
            if eval_ap.bev_iou(s, other) > nms["nms_thr"]:
                overlaps = True
                break
        if not overlaps:
            kept.append(box)
            kept_scaled.append(dict(s, reach=reach))
            if len(kept) == nms["post_max_size"]:
                break
    return kept


def decode(outputs, config):
    return [scale_nms(boxes, config["test_nms"]) for boxes in
            train_centerpoint.decode_candidates(outputs, config["coder"])]


def classes_of(config):
    return [(i, name, 0.5 if name == "car" else 0.25) for i, name in
            enumerate(config["head"]["tasks"][0]["class_names"])]


def evaluate(model, frames, config, normalise, device, amp, batch_size):
    model.eval()
    detections = []
    with torch.no_grad():
        for start in range(0, len(frames), batch_size):
            indices = torch.arange(start, min(start + batch_size,
                                              len(frames)), device=device)
            images = normalise(frames.images[indices])
            with train_centerpoint.autocast(device, amp):
                outputs, _ = model(images)
            detections += decode(outputs, config)
    model.train()
    rng = model_range(config)
    results = eval_ap.evaluate([(detections, frames.truth)], rng,
                               classes_of(config))
    near = eval_ap.evaluate([(detections, frames.truth)],
                            [-NEAR_X, rng[1], rng[2], NEAR_X] + rng[4:],
                            classes_of(config))
    return results, near, detections


# Conversion -----------------------------------------------------------------

def convert(converter, checkpoint, config_path, weights):
    """The weights file by the project's converter, when it is there; a
    failure is logged, never fatal (the checkpoint is the product)."""
    if not os.path.exists(converter):
        log("no converter at %s: convert the checkpoint later" % converter)
        return None
    with open(config_path) as stream:
        heads = json.load(stream)["head"]["common_heads"]
    # the converter merges --config into BEVDet-R50's values, whose heads
    # have a velocity: the heads are set whole
    command = [sys.executable, converter, checkpoint, "-o", weights,
               "--config", config_path,
               "--set", "head.common_heads=" + json.dumps(heads)]
    log("converting: " + " ".join(command))
    done = subprocess.run(command, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True)
    log(done.stdout.strip())
    if done.returncode != 0:
        log("the converter failed (%d): convert the checkpoint later"
            % done.returncode)
        return None
    return {"path": weights, "bytes": os.path.getsize(weights)}


def ap_text(results):
    return " ".join("%s %s" % (n, "%.3f" % r["ap"] if r["ap"] is not None
                               else "n/a") for n, r in results.items())


def main(argv=None):
    global LOG
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="/tmp/p3d-camera-data")
    parser.add_argument("--generate", action="store_true",
                        help="run generate_camera_data.py into --data first")
    parser.add_argument("--rig", default=generate_camera_data.DEFAULT_RIG)
    parser.add_argument("--train-seeds", type=int, default=480)
    parser.add_argument("--train-frames", type=int, default=8)
    parser.add_argument("--heldout-seeds", type=int, default=32)
    parser.add_argument("--heldout-frames", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    parser.add_argument("--out", default="train-camera-out")
    parser.add_argument("--config", default=os.path.join(
        HERE, "bevdet_config.json"))
    parser.add_argument("--seed", type=int, default=20261128)
    parser.add_argument("--batch-size", type=int, default=16,
                        help="frames (of six images each) a step")
    parser.add_argument("--lr", type=float, default=2e-3,
                        help="peak learning rate of the one-cycle schedule")
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--depth-weight", type=float, default=3.0,
                        help="weight of the depth loss")
    parser.add_argument("--iterations", type=int,
                        help="training steps after the calibration steps "
                        "(default: fitted to the time left)")
    parser.add_argument("--calibration-steps", type=int, default=20)
    parser.add_argument("--deadline", type=float, default=360,
                        help="seconds from the start by which generation, "
                        "training, evaluation, saving and conversion "
                        "should be done (not --eval-pipeline)")
    parser.add_argument("--eval-reserve", type=float, default=45,
                        help="seconds kept for evaluation and saving")
    parser.add_argument("--min-train-points", type=int, default=1,
                        help="true boxes with fewer lidar points are not "
                        "trained on (they are hidden)")
    parser.add_argument("--amp", choices=("bf16", "f16", "off"),
                        default="bf16")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--log-every", type=int, default=200)
    parser.add_argument("--converter", default=os.path.join(
        HERE, "..", "convert_bevdet.py"),
        help="run this converter on the checkpoint when it exists")
    parser.add_argument("--eval-pipeline", action="store_true",
                        help="then the weights file through the GStreamer "
                        "pipeline on the held-out seeds")
    parser.add_argument("--pipeline-args", default="",
                        help="more arguments for eval_camera_pipeline.py "
                        "(one string)")
    args = parser.parse_args(argv)

    os.makedirs(args.out, exist_ok=True)
    LOG = open(os.path.join(args.out, "train.log"), "w")
    log("command: " + " ".join([sys.executable] + sys.argv))
    log("torch %s, device %s" % (torch.__version__, args.device))
    with open(args.config) as stream:
        config = json.load(stream)
    cameras = lss_pool.read_calibration(args.rig)
    check_config(config, cameras)
    device = torch.device(args.device)
    if device.type == "cuda":
        log("gpu: %s" % torch.cuda.get_device_name(device))
        torch.backends.cudnn.benchmark = True
    torch.manual_seed(args.seed)
    draw = torch.Generator().manual_seed(args.seed)

    if args.generate:
        command = [sys.executable,
                   os.path.join(HERE, "generate_camera_data.py"),
                   "--out", args.data, "--rig", args.rig,
                   "--jobs", str(args.jobs),
                   "--train-seeds", str(args.train_seeds),
                   "--train-frames", str(args.train_frames),
                   "--heldout-seeds", str(args.heldout_seeds),
                   "--heldout-frames", str(args.heldout_frames)]
        log("generating: " + " ".join(command))
        subprocess.run(command, check=True)
    with open(os.path.join(args.data, "manifest.json")) as stream:
        manifest = json.load(stream)
    grid = bevdet_model.grid_of(config)
    n_cameras = len(cameras)
    train = FrameSet([s for s in manifest["seeds"] if s["set"] == "train"],
                     n_cameras, grid, device, args.jobs, False)
    heldout = FrameSet([s for s in manifest["seeds"]
                        if s["set"] == "heldout"], n_cameras, grid, device,
                       args.jobs, True)
    log("loaded %d training frames, %d held-out frames (%d cameras, %.1f GB "
        "of images on the device)" % (
            len(train), len(heldout), n_cameras,
            (train.images.numel() + heldout.images.numel()) / 1e9))

    model = bevdet_model.BEVDet(config, cameras).to(device)
    if device.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
    trainable = [p for p in model.parameters() if p.requires_grad]
    params = sum(p.numel() for p in trainable)
    log("model: %d parameters (%.2f MB as float32); BEV grid %d x %d, %d "
        "depth bins, %d frustum points pooled" % (
            params, params * 4 / 1e6, grid.n[0], grid.n[1], grid.depth_bins,
            model.img_view_transformer.pool.points.numel()))
    optimizer = torch.optim.AdamW(trainable, lr=args.lr / 10,
                                  weight_decay=args.weight_decay)
    heads = head_config(config)
    targets = train_centerpoint.Targets(heads, device)
    rng = heads["point_cloud_range"]
    normalise = Normalise(config, device)

    def step(scheduler):
        indices = torch.randint(len(train), (args.batch_size,),
                                generator=draw).tolist()
        index = torch.tensor(indices, device=device)
        images = normalise(train.images[index])
        depth_target, depth_valid = depth_targets(
            train.depth[index].flatten(0, 1), grid)
        boxes, frame = batch_boxes(train, indices, args.min_train_points,
                                   rng)
        heat, frame, cell, box_target = targets.build(boxes, frame,
                                                      args.batch_size)
        with train_centerpoint.autocast(device, args.amp):
            outputs, logits = model(images)
        loss_heatmap, loss_bbox = train_centerpoint.losses(
            outputs, heat, frame, cell, box_target)
        loss_depth = args.depth_weight * depth_loss(logits, depth_target,
                                                    depth_valid)
        loss = loss_heatmap + loss_bbox + loss_depth
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, GRAD_CLIP)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        return torch.stack([loss_heatmap.detach(), loss_bbox.detach(),
                            loss_depth.detach()])

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    log("calibration: %d steps of batch %d" % (args.calibration_steps,
                                               args.batch_size))
    first_timed = min(5, args.calibration_steps - 1)
    timed_from = time.time()
    for i in range(args.calibration_steps):
        if i == first_timed:
            sync()
            timed_from = time.time()
        step(None)
    sync()
    timed = args.calibration_steps - first_timed
    step_seconds = (time.time() - timed_from) / max(timed, 1)
    train_end = STARTED + args.deadline - args.eval_reserve
    if args.iterations:
        iterations = args.iterations
    else:
        iterations = max(int((train_end - time.time()) / step_seconds), 10)
    log("%.1f ms a step: %d training steps (%s)" % (
        step_seconds * 1e3, iterations,
        "given" if args.iterations else "fitted to the time left"))

    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=args.lr, total_steps=iterations, pct_start=0.25,
        div_factor=10, final_div_factor=100)
    history = []
    last_save = time.time()
    checkpoint = os.path.join(args.out, CHECKPOINT)
    meta = {"seed": args.seed, "batch_size": args.batch_size,
            "command": " ".join(sys.argv)}
    done = 0
    stopped_early = False
    train_started = time.time()
    for i in range(iterations):
        if time.time() > train_end + 20:
            stopped_early = True
            log("deadline: stopping after %d of %d steps" % (i, iterations))
            break
        history.append(step(scheduler))
        done = i + 1
        if done % args.log_every == 0 or done == iterations:
            recent = torch.stack(history[-args.log_every:]).mean(0)
            log("step %d/%d  loss %.4f (heatmap %.4f, bbox %.4f, depth "
                "%.4f)  lr %.2e" % (done, iterations, float(recent.sum()),
                                    float(recent[0]), float(recent[1]),
                                    float(recent[2]),
                                    scheduler.get_last_lr()[0]))
        if time.time() - last_save > 90:
            train_centerpoint.save_checkpoint(
                checkpoint, model, config, dict(meta, steps=done,
                                                partial=True))
            last_save = time.time()
    train_seconds = time.time() - train_started
    tail = torch.stack(history[-200:]).mean(0) if history else \
        torch.zeros(3)
    final_loss = [float(tail.sum())] + [float(v) for v in tail]

    train_centerpoint.save_checkpoint(
        checkpoint, model, config,
        dict(meta, steps=done, partial=False, final_loss=final_loss[0]))
    log("saved %s" % checkpoint)
    results, near, detections = evaluate(model, heldout, config, normalise,
                                         device, args.amp, args.batch_size)
    train_centerpoint.write_jsonl(
        os.path.join(args.out, "heldout_detections_torch.jsonl"), detections)
    eval_ap.write_frames(heldout.truth,
                         os.path.join(args.out, "heldout_truth.jsonl"))
    with open(os.path.join(args.out, "heldout_frames.txt"), "w") as stream:
        stream.write("\n".join(heldout.names) + "\n")
    with open(os.path.join(args.out, "bevdet_config.json"), "w") as stream:
        json.dump(config, stream, indent=1)
    with open(os.path.join(args.out, "data_manifest.json"), "w") as stream:
        json.dump(manifest, stream, indent=1)
    weights = convert(args.converter, checkpoint, args.config,
                      os.path.join(args.out, WEIGHTS))
    memory = (torch.cuda.max_memory_allocated(device) / 2 ** 30
              if device.type == "cuda" else None)
    summary = {
        "seed": args.seed, "command": " ".join(sys.argv),
        "torch": torch.__version__,
        "device": (torch.cuda.get_device_name(device)
                   if device.type == "cuda" else "cpu"),
        "amp": args.amp, "batch_size": args.batch_size, "lr": args.lr,
        "depth_weight": args.depth_weight,
        "calibration_steps": args.calibration_steps,
        "steps": done, "planned_steps": iterations,
        "stopped_by_deadline": stopped_early,
        "step_ms": step_seconds * 1e3,
        "training_seconds": train_seconds,
        "seconds_before_pipeline": time.time() - STARTED,
        "gpu_memory_peak_gib": memory,
        "final_loss_mean_last_200": dict(zip(
            ("total", "heatmap", "bbox", "depth"), final_loss)),
        "train_frames": len(train), "heldout_frames": len(heldout),
        "parameters": params, "weights": weights,
        "heldout_ap_torch_r40": {n: r["ap"] for n, r in results.items()},
        "heldout_ap_torch_r40_within_%g_m" % NEAR_X:
            {n: r["ap"] for n, r in near.items()},
        "heldout_eval": results,
        "heldout_eval_within_%g_m" % NEAR_X: near,
    }
    log("held-out AP through PyTorch (R40; not the GStreamer pipeline):\n"
        + eval_ap.format_table(results, "r40"))
    log("within %g m ahead and behind: %s" % (NEAR_X, ap_text(near)))
    summary_path = os.path.join(args.out, "summary.json")
    summary["total_seconds"] = time.time() - STARTED
    # written now and again after the pipeline's evaluation, so that a run
    # stopped during that evaluation still leaves its numbers
    with open(summary_path, "w") as stream:
        json.dump(summary, stream, indent=1)

    if args.eval_pipeline:
        if weights is None:
            log("no weights file: the pipeline evaluation is not run")
        else:
            import eval_camera_pipeline

            pipeline_out = os.path.join(args.out, "pipeline")
            command = ["--weights", weights["path"], "--data", args.data,
                       "--rig", args.rig, "--out", pipeline_out] \
                + args.pipeline_args.split()
            log("pipeline evaluation: eval_camera_pipeline.py "
                + " ".join(command))
            try:
                eval_camera_pipeline.main(command)
                with open(os.path.join(pipeline_out, "ap.json")) as stream:
                    pipeline = json.load(stream)
                summary["heldout_ap_pipeline_r40"] = {
                    n: r["ap"] for n, r in pipeline["classes"].items()}
                summary["heldout_eval_pipeline"] = pipeline
                log("held-out AP through the pipeline: %s"
                    % ap_text(pipeline["classes"]))
                # the pipeline's boxes against PyTorch's, frame by frame
                torch_frames = dict(zip(heldout.names, detections))
                pairs = []
                for entry in manifest["seeds"]:
                    path = os.path.join(pipeline_out,
                                        "seed%d.jsonl" % entry["seed"])
                    if entry["set"] != "heldout" or not os.path.exists(path):
                        continue
                    for k, boxes in enumerate(eval_ap.read_frames(path)):
                        name = "seed%d/%06d" % (entry["seed"], k)
                        pairs.append((torch_frames[name], boxes))
                agreement = eval_camera_pipeline.compare_detections(
                    [p[0] for p in pairs], [p[1] for p in pairs])
                summary["pipeline_against_torch"] = agreement
                log("the pipeline's boxes against PyTorch's (score >= %g): "
                    "%d matched within %g m, %d not; largest differences "
                    "%s" % (agreement["min_score"], agreement["matched"],
                            agreement["radius"], agreement["missed"],
                            ", ".join("%s %.3g" % kv for kv in
                                      agreement["largest_difference"]
                                      .items())))
            except Exception as error:  # the summary is still written
                log("the pipeline evaluation failed: %s" % error)
                summary["pipeline_error"] = str(error)
    summary["total_seconds"] = time.time() - STARTED
    with open(summary_path, "w") as stream:
        json.dump(summary, stream, indent=1)
    log("summary: %d steps in %.0f s (%.1f ms a step), final loss %.4f "
        "(heatmap %.4f, bbox %.4f, depth %.4f), AP (PyTorch) %s%s, total "
        "%.0f s" % (done, train_seconds, step_seconds * 1e3, *final_loss,
                    ap_text(results),
                    ", AP (pipeline) " + " ".join(
                        "%s %.3f" % (n, a) if a is not None else n + " n/a"
                        for n, a in summary["heldout_ap_pipeline_r40"]
                        .items())
                    if "heldout_ap_pipeline_r40" in summary else "",
                    summary["total_seconds"]))
    LOG.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
