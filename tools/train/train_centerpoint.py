#!/usr/bin/env python3
"""Trains the small CenterPoint-pillar model of model_config.json on
pointcloudtestsrc's street, in one unattended run (see README.md).

Steps, each with progress lines on stdout:
 1. (--generate) generate_data.py writes the training and held-out seeds;
 2. every frame's points are loaded onto the device, every true box's lidar
    points counted;
 3. training: each step takes a batch of frames (seeded draw, random flips
    of x and y), pillarizes them with pillarize.py (byte for byte our
    voxelize ! pillarfeat, see check_pillarize.py), builds mmdetection3d's
    CenterHead targets (gaussian heatmaps with min_radius 2, regression at
    the centre cell) and takes mmdetection3d's losses (GaussianFocalLoss,
    L1 with code weights, weight 0.25), AdamW with a one-cycle schedule,
    AMP; the number of steps is fitted to the time left (measured over the
    first steps) unless --iterations fixes it;
 4. evaluation on the held-out seeds through the PyTorch model (decode and
    rotated NMS as the coder and the model's test_nms define them) with
    tools/eval_ap.py's rules;
 5. the checkpoint (mmdetection3d's layout: {"state_dict", "meta"}) for the
    converter, the held-out detections and truth, a log and a summary in
    --out.

Torch is needed only here (never by the product).
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
import centerpoint_model  # noqa: E402
import eval_ap  # noqa: E402
import pillarize  # noqa: E402
import sensors  # noqa: E402

CODE_WEIGHTS = [1.0] * 8  # reg 2, height 1, dim 3, rot 2 (no velocity)
GAUSSIAN_OVERLAP = 0.1
MIN_RADIUS = 2
BBOX_LOSS_WEIGHT = 0.25
GRAD_CLIP = 35.0
# the loose box points are kept in at load time: a margin around the
# model's range, so that a flipped frame still holds every point voxelize
# would keep (pillarize then applies the exact test)
LOAD_MARGIN = 1.0

STARTED = time.time()
LOG = None


def log(text):
    line = "[%6.1f s] %s" % (time.time() - STARTED, text)
    print(line, flush=True)
    if LOG is not None:
        LOG.write(line + "\n")
        LOG.flush()


# Data -----------------------------------------------------------------------

class FrameSet:
    """Frames of one set on the device: points concatenated, their true
    boxes [x y z dx dy dz yaw label] with the lidar points in each."""

    def __init__(self):
        self.points = []
        self.sizes = []
        self.boxes = []
        self.box_points = []
        self.truth = []  # eval_ap frames (dicts), held-out only
        self.names = []

    def finish(self, device):
        self.offsets = torch.tensor([0] + self.sizes[:-1],
                                    dtype=torch.int64).cumsum(0).tolist()
        self.points = torch.cat(self.points) if self.points else \
            torch.zeros((0, sensors.POINT_CHANNELS), device=device)

    def __len__(self):
        return len(self.sizes)


def count_points(points, boxes):
    """Points of [N][>=3] in each of [M][>=7] boxes (3D, faces included)."""
    if boxes.shape[0] == 0:
        return torch.zeros(0, dtype=torch.int64, device=points.device)
    p = points[:, :3].double()
    b = boxes.double()
    c, s = torch.cos(b[:, 6:7]), torch.sin(b[:, 6:7])
    dx = p[:, 0].unsqueeze(0) - b[:, 0:1]
    dy = p[:, 1].unsqueeze(0) - b[:, 1:2]
    inside = ((dx * c + dy * s).abs() <= b[:, 3:4] / 2) \
        & ((-dx * s + dy * c).abs() <= b[:, 4:5] / 2) \
        & ((p[:, 2].unsqueeze(0) - b[:, 2:3]).abs() <= b[:, 5:6] / 2)
    return inside.sum(dim=1)


def load_set(entries, config, device, keep_truth):
    rng = config["point_cloud_range"]
    low = torch.tensor([rng[0], rng[1], rng[2]], device=device) - LOAD_MARGIN
    high = torch.tensor([rng[3], rng[4], rng[5]], device=device) + LOAD_MARGIN
    frames = FrameSet()
    for entry in entries:
        truth = eval_ap.read_frames(os.path.join(entry["dir"],
                                                 "truth.jsonl"))
        if len(truth) != entry["frames"]:
            raise RuntimeError("%s: %d truth frames, %d expected"
                               % (entry["dir"], len(truth), entry["frames"]))
        for k, truth_boxes in enumerate(truth):
            points = sensors.read_points(os.path.join(
                entry["dir"], "%06d.bin" % k)).to(device)
            boxes = torch.tensor([[b[f] for f in eval_ap.BOX_FIELDS[:7]]
                                  + [b["label"]] for b in truth_boxes],
                                 dtype=torch.float32,
                                 device=device).reshape(-1, 8)
            inside = count_points(points, boxes)
            for box, n in zip(truth_boxes, inside.tolist()):
                box["points"] = n
            near = ((points[:, :3] >= low) & (points[:, :3] <= high)).all(1)
            frames.points.append(points[near])
            frames.sizes.append(int(near.sum()))
            frames.boxes.append(boxes)
            frames.box_points.append(inside)
            frames.names.append("seed%d/%06d" % (entry["seed"], k))
            if keep_truth:
                frames.truth.append(truth_boxes)
    frames.finish(device)
    return frames


# Targets and losses (mmdetection3d's CenterHead) ---------------------------

def gaussian_radius(height, width, min_overlap):
    """mmdetection3d's gaussian_radius, element-wise."""
    b1 = height + width
    c1 = width * height * (1 - min_overlap) / (1 + min_overlap)
    r1 = (b1 + torch.sqrt(b1 ** 2 - 4 * c1)) / 2
    b2 = 2 * (height + width)
    c2 = (1 - min_overlap) * width * height
    r2 = (b2 + torch.sqrt(b2 ** 2 - 16 * c2)) / 2
    a3 = 4 * min_overlap
    b3 = -2 * min_overlap * (height + width)
    c3 = (min_overlap - 1) * width * height
    r3 = (b3 + torch.sqrt(b3 ** 2 - 4 * a3 * c3)) / 2
    return torch.minimum(torch.minimum(r1, r2), r3)


class Targets:
    def __init__(self, config, device):
        coder = config["coder"]
        self.osf = coder["out_size_factor"]
        self.voxel = coder["voxel_size"]
        self.pc = coder["pc_range"]
        self.width = config["grid"][0] // self.osf
        self.height = config["grid"][1] // self.osf
        self.classes = len(config["head"]["tasks"][0]["class_names"])
        self.range = config["point_cloud_range"]
        self.device = device

    def build(self, boxes, frame, batch):
        """Heatmap [B][classes][H][W] and, per object, its frame, cell
        index and regression target [8], for boxes [M][8] of frames
        @frame [M]."""
        osf, (vx, vy), (px, py) = self.osf, self.voxel, self.pc
        w, h, n_cls = self.width, self.height, self.classes
        dev = self.device
        length = boxes[:, 3] / vx / osf
        width = boxes[:, 4] / vy / osf
        radius = torch.clamp(torch.floor(gaussian_radius(
            width, length, GAUSSIAN_OVERLAP)), min=MIN_RADIUS).long()
        cx = (boxes[:, 0] - px) / vx / osf
        cy = (boxes[:, 1] - py) / vy / osf
        ix = cx.to(torch.int32).long()  # truncation, as mmdetection3d
        iy = cy.to(torch.int32).long()
        on_map = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
        boxes, frame, radius = boxes[on_map], frame[on_map], radius[on_map]
        cx, cy, ix, iy = cx[on_map], cy[on_map], ix[on_map], iy[on_map]
        label = boxes[:, 7].long()

        heat = torch.zeros(batch * n_cls * h * w, device=dev)
        if boxes.shape[0]:
            r_max = int(radius.max())
            span = torch.arange(-r_max, r_max + 1, device=dev)
            oy, ox = torch.meshgrid(span, span, indexing="ij")
            ox, oy = ox.reshape(1, -1), oy.reshape(1, -1)
            r = radius.unsqueeze(1)
            x, y = ix.unsqueeze(1) + ox, iy.unsqueeze(1) + oy
            use = (ox.abs() <= r) & (oy.abs() <= r) & (x >= 0) & (x < w) \
                & (y >= 0) & (y < h)
            sigma = (2 * r + 1).double() / 6
            g = torch.exp(-(ox * ox + oy * oy).double() / (2 * sigma * sigma))
            g = torch.where(g < torch.finfo(torch.float64).eps,
                            torch.zeros_like(g), g)
            index = ((frame.unsqueeze(1) * n_cls + label.unsqueeze(1)) * h
                     + y) * w + x
            heat.scatter_reduce_(0, index[use], g[use].float(), "amax",
                                 include_self=True)
        target = torch.stack([cx - ix, cy - iy, boxes[:, 2],
                              torch.log(boxes[:, 3]), torch.log(boxes[:, 4]),
                              torch.log(boxes[:, 5]), torch.sin(boxes[:, 6]),
                              torch.cos(boxes[:, 6])], dim=1)
        return heat.view(batch, n_cls, h, w), frame, iy * w + ix, target


def losses(outputs, heat_target, frame, cell, box_target):
    """GaussianFocalLoss over the heatmap (mean over the peaks) and the
    weighted L1 of the regression at the centre cells."""
    out = outputs[0]
    pred = torch.clamp(torch.sigmoid(out["heatmap"].float()), 1e-4,
                       1 - 1e-4)
    positive = heat_target.eq(1)
    num_pos = max(int(positive.sum()), 1)
    pos_loss = -torch.log(pred + 1e-12) * (1 - pred) ** 2 * positive
    neg_loss = -torch.log(1 - pred + 1e-12) * pred ** 2 \
        * (1 - heat_target) ** 4
    loss_heatmap = (pos_loss + neg_loss).sum() / num_pos
    box = torch.cat([out["reg"], out["height"], out["dim"], out["rot"]],
                    dim=1).float()
    b, c, h, w = box.shape
    gathered = box.permute(0, 2, 3, 1).reshape(b, h * w, c)[frame, cell]
    weights = box_target.new_tensor(CODE_WEIGHTS)
    loss_bbox = BBOX_LOSS_WEIGHT * ((gathered - box_target).abs()
                                    * weights).sum() \
        / (box_target.shape[0] + 1e-4)
    return loss_heatmap, loss_bbox


# Batches --------------------------------------------------------------------

def in_range(boxes, rng):
    return (boxes[:, 0] > rng[0]) & (boxes[:, 0] < rng[3]) \
        & (boxes[:, 1] > rng[1]) & (boxes[:, 1] < rng[4])


def flip_boxes(boxes, sx, sy):
    """Boxes [M][>=7] mirrored as their points are when x is multiplied by
    @sx and y by @sy (each +1 or -1): a mirror in y turns yaw into -yaw, one
    in x into pi - yaw."""
    boxes = boxes.clone()
    boxes[:, 0] *= sx
    boxes[:, 1] *= sy
    if sy < 0:
        boxes[:, 6] = -boxes[:, 6]
    if sx < 0:
        boxes[:, 6] = math.pi - boxes[:, 6]
    return boxes


def make_batch(frames, indices, flips, grid, min_points, rng):
    """Pillarized frames and their true boxes; flips [B][2] of +-1 for x
    and y."""
    device = frames.points.device
    points, sizes, boxes, frame_of_box = [], [], [], []
    for b, k in enumerate(indices):
        o, n = frames.offsets[k], frames.sizes[k]
        p = frames.points[o:o + n]
        sx, sy = flips[b]
        if sx < 0 or sy < 0:
            p = p.clone()
            p[:, 0] *= sx
            p[:, 1] *= sy
        points.append(p)
        sizes.append(n)
        keep = frames.box_points[k] >= min_points
        bx = flip_boxes(frames.boxes[k][keep], sx, sy)
        bx = bx[in_range(bx, rng)]
        boxes.append(bx)
        frame_of_box.append(torch.full((bx.shape[0],), b, dtype=torch.int64,
                                       device=device))
    pillars = pillarize.pillarize(torch.cat(points), sizes, grid)
    return pillars, torch.cat(boxes), torch.cat(frame_of_box)


# Decode and NMS (the coder and the model's test_nms) -----------------------

def decode(outputs, config):
    """Boxes per frame after the coder and the rotated NMS: lists of
    dicts in boxenc's fields, best first."""
    return [rotate_nms(boxes, config["test_nms"])
            for boxes in decode_candidates(outputs, config["coder"])]


def decode_candidates(outputs, coder):
    """Boxes per frame after the coder (top max_num, score and post-centre
    range), before any NMS: lists of dicts in boxenc's fields."""
    out = outputs[0]
    heat = torch.sigmoid(out["heatmap"].float())
    b, n_cls, h, w = heat.shape
    k = min(coder["max_num"], n_cls * h * w)
    scores, index = heat.reshape(b, -1).topk(k, dim=1)
    # equal scores in the order of their flat index, the rule of the
    # elements' decode (topk leaves it open)
    index, order = index.sort(dim=1)
    scores = scores.gather(1, order)
    scores, order = scores.sort(dim=1, descending=True, stable=True)
    index = index.gather(1, order)
    label = torch.div(index, h * w, rounding_mode="floor")
    cell = index % (h * w)
    ys = torch.div(cell, w, rounding_mode="floor").float()
    xs = (cell % w).float()

    def at(name):
        m = out[name].float()
        return m.reshape(b, m.shape[1], h * w).gather(
            2, cell.unsqueeze(1).expand(-1, m.shape[1], -1))

    reg, height, dim, rot = at("reg"), at("height"), at("dim"), at("rot")
    osf = coder["out_size_factor"]
    x = (xs + reg[:, 0]) * osf * coder["voxel_size"][0] + coder["pc_range"][0]
    y = (ys + reg[:, 1]) * osf * coder["voxel_size"][1] + coder["pc_range"][1]
    z = height[:, 0]
    size = torch.exp(dim)
    yaw = torch.atan2(rot[:, 0], rot[:, 1])
    post = coder["post_center_range"]
    keep = (scores > coder["score_threshold"]) \
        & (x >= post[0]) & (y >= post[1]) & (z >= post[2]) \
        & (x <= post[3]) & (y <= post[4]) & (z <= post[5])
    table = torch.stack([x, y, z, size[:, 0], size[:, 1], size[:, 2], yaw,
                         scores, label.float()], dim=2).cpu()
    keep = keep.cpu()
    return [[dict(zip(eval_ap.BOX_FIELDS, row[:8]), label=int(row[8]))
             for row in table[i][keep[i]].tolist()] for i in range(b)]


def rotate_nms(boxes, nms):
    """Greedy NMS over one task: best first (stable), the pre_max_size
    best, suppress BEV IoU > nms_thr, keep post_max_size."""
    boxes = sorted(boxes, key=lambda d: -d["score"])[:nms["pre_max_size"]]
    kept = []
    for box in boxes:
        if all(eval_ap.bev_iou(box, other) <= nms["nms_thr"]
               for other in kept):
            kept.append(box)
            if len(kept) == nms["post_max_size"]:
                break
    return kept


def write_jsonl(path, frames):
    with open(path, "w") as stream:
        for k, boxes in enumerate(frames):
            stream.write(json.dumps({"frame": k, "pts": None,
                                     "count": len(boxes), "type": "3d"})
                         + "\n")
            for box in boxes:
                stream.write(json.dumps(box) + "\n")


def evaluate(model, frames, grid, config, device, amp, batch_size):
    model.eval()
    detections = []
    with torch.no_grad():
        for start in range(0, len(frames), batch_size):
            indices = list(range(start, min(start + batch_size,
                                            len(frames))))
            pillars, _, _ = make_batch(frames, indices,
                                       [(1.0, 1.0)] * len(indices), grid,
                                       1, config["point_cloud_range"])
            with autocast(device, amp):
                outputs = model(pillars["features"], pillars["coords"],
                                len(indices))
            detections += decode(outputs, config)
    model.train()
    classes = [(i, name, 0.5 if name == "car" else 0.25) for i, name in
               enumerate(config["head"]["tasks"][0]["class_names"])]
    results = eval_ap.evaluate([(detections, frames.truth)],
                               config["point_cloud_range"], classes)
    return results, detections


# Training -------------------------------------------------------------------

def autocast(device, amp):
    if amp == "off":
        return torch.autocast(device_type=device.type, enabled=False)
    dtype = torch.bfloat16 if amp == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


def save_checkpoint(path, model, config, meta):
    state = {k: v.detach().float().cpu() if v.is_floating_point() else
             v.detach().cpu() for k, v in model.state_dict().items()}
    torch.save({"state_dict": state,
                "meta": dict(meta, p3d_model=json.dumps(config))},
               path + ".tmp")
    os.replace(path + ".tmp", path)


def convert(converter, checkpoint, config_path, weights):
    """The weights file by the project's converter, when it is there; a
    failure is logged, never fatal (the checkpoint is the product)."""
    if not os.path.exists(converter):
        log("no converter at %s: convert the checkpoint later" % converter)
        return None
    with open(config_path) as stream:
        heads = json.load(stream)["head"]["common_heads"]
    # the converter merges --config into its defaults, which have a vel
    # head: the heads are set whole
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


def main(argv=None):
    global LOG
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="/tmp/p3d-train-data")
    parser.add_argument("--generate", action="store_true",
                        help="run generate_data.py into --data first")
    parser.add_argument("--train-seeds", type=int, default=256)
    parser.add_argument("--train-frames", type=int, default=16)
    parser.add_argument("--heldout-seeds", type=int, default=32)
    parser.add_argument("--heldout-frames", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    parser.add_argument("--out", default="train-out")
    parser.add_argument("--config", default=os.path.join(
        HERE, "model_config.json"))
    parser.add_argument("--seed", type=int, default=20261125)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3,
                        help="peak learning rate of the one-cycle schedule")
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--iterations", type=int,
                        help="training steps after the calibration steps "
                        "(default: fitted to the time left)")
    parser.add_argument("--calibration-steps", type=int, default=30)
    parser.add_argument("--deadline", type=float, default=540,
                        help="seconds from the start by which everything, "
                        "evaluation and saving included, should be done")
    parser.add_argument("--eval-reserve", type=float, default=60,
                        help="seconds kept for evaluation and saving")
    parser.add_argument("--min-train-points", type=int, default=1,
                        help="true boxes with fewer lidar points are not "
                        "trained on (they are invisible)")
    parser.add_argument("--amp", choices=("bf16", "f16", "off"),
                        default="bf16")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--log-every", type=int, default=500)
    parser.add_argument("--converter", default=os.path.join(
        HERE, "..", "convert_mmdet3d_centerpoint.py"),
        help="run this converter on the checkpoint when it exists")
    args = parser.parse_args(argv)

    os.makedirs(args.out, exist_ok=True)
    LOG = open(os.path.join(args.out, "train.log"), "w")
    log("command: " + " ".join([sys.executable] + sys.argv))
    log("torch %s, device %s" % (torch.__version__, args.device))
    with open(args.config) as stream:
        config = json.load(stream)
    device = torch.device(args.device)
    if device.type == "cuda":
        log("gpu: %s" % torch.cuda.get_device_name(device))
        torch.backends.cudnn.benchmark = True
    torch.manual_seed(args.seed)
    draw = torch.Generator().manual_seed(args.seed)

    if args.generate:
        command = [sys.executable, os.path.join(HERE, "generate_data.py"),
                   "--out", args.data, "--jobs", str(args.jobs),
                   "--train-seeds", str(args.train_seeds),
                   "--train-frames", str(args.train_frames),
                   "--heldout-seeds", str(args.heldout_seeds),
                   "--heldout-frames", str(args.heldout_frames)]
        log("generating: " + " ".join(command))
        subprocess.run(command, check=True)
    with open(os.path.join(args.data, "manifest.json")) as stream:
        manifest = json.load(stream)
    grid = pillarize.PillarGrid(config["voxel_size"],
                                config["point_cloud_range"],
                                config["max_points"], config["max_voxels"])
    train = load_set([s for s in manifest["seeds"] if s["set"] == "train"],
                     config, device, False)
    heldout = load_set([s for s in manifest["seeds"]
                        if s["set"] == "heldout"], config, device, True)
    log("loaded %d training frames (%d points near the range), %d held-out "
        "frames" % (len(train), train.points.shape[0], len(heldout)))

    model = centerpoint_model.CenterPointPillar(config).to(device)
    if device.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
    params = sum(p.numel() for p in model.parameters())
    log("model: %d parameters (%.2f MB as float32)" % (params,
                                                      params * 4 / 1e6))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr / 10,
                                  weight_decay=args.weight_decay)
    targets = Targets(config, device)
    rng = config["point_cloud_range"]

    def step(scheduler):
        indices = torch.randint(len(train), (args.batch_size,),
                                generator=draw).tolist()
        flips = (torch.randint(2, (args.batch_size, 2), generator=draw) * 2
                 - 1).float().tolist()
        pillars, boxes, frame = make_batch(train, indices, flips, grid,
                                           args.min_train_points, rng)
        heat, frame, cell, box_target = targets.build(boxes, frame,
                                                      args.batch_size)
        with autocast(device, args.amp):
            outputs = model(pillars["features"], pillars["coords"],
                            args.batch_size)
        loss_heatmap, loss_bbox = losses(outputs, heat, frame, cell,
                                         box_target)
        loss = loss_heatmap + loss_bbox
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        return loss_heatmap.detach(), loss_bbox.detach()

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    # calibration: the first steps at a tenth of the peak rate, timed
    log("calibration: %d steps of batch %d" % (args.calibration_steps,
                                               args.batch_size))
    timed_from = None
    for i in range(args.calibration_steps):
        if i == min(5, args.calibration_steps - 1):
            sync()
            timed_from = time.time()
        step(None)
    sync()
    timed = args.calibration_steps - min(5, args.calibration_steps - 1)
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
    checkpoint = os.path.join(args.out, "centerpoint_synthetic.pth")
    meta = {"seed": args.seed, "batch_size": args.batch_size,
            "command": " ".join(sys.argv)}
    done = 0
    stopped_early = False
    train_started = time.time()
    for i in range(iterations):
        if time.time() > train_end + 30:
            stopped_early = True
            log("deadline: stopping after %d of %d steps" % (i, iterations))
            break
        history.append(step(scheduler))
        done = i + 1
        if done % args.log_every == 0 or done == iterations:
            recent = torch.stack([torch.stack(h) for h in
                                  history[-args.log_every:]]).mean(0)
            log("step %d/%d  loss %.4f (heatmap %.4f, bbox %.4f)  lr %.2e"
                % (done, iterations, float(recent.sum()), float(recent[0]),
                   float(recent[1]), scheduler.get_last_lr()[0]))
        if time.time() - last_save > 90:
            save_checkpoint(checkpoint, model, config,
                            dict(meta, steps=done, partial=True))
            last_save = time.time()
    train_seconds = time.time() - train_started
    tail = torch.stack([torch.stack(h) for h in history[-200:]]).mean(0) \
        if history else torch.zeros(2)
    final_loss = [float(tail.sum()), float(tail[0]), float(tail[1])]

    save_checkpoint(checkpoint, model, config,
                    dict(meta, steps=done, partial=False,
                         final_loss=final_loss[0]))
    log("saved %s" % checkpoint)
    results, detections = evaluate(model, heldout, grid, config, device,
                                   args.amp, args.batch_size)
    write_jsonl(os.path.join(args.out, "heldout_detections_torch.jsonl"),
                detections)
    eval_ap.write_frames(heldout.truth,
                         os.path.join(args.out, "heldout_truth.jsonl"))
    with open(os.path.join(args.out, "heldout_frames.txt"), "w") as stream:
        stream.write("\n".join(heldout.names) + "\n")
    with open(os.path.join(args.out, "model_config.json"), "w") as stream:
        json.dump(config, stream, indent=1)
    with open(os.path.join(args.out, "data_manifest.json"), "w") as stream:
        json.dump(manifest, stream, indent=1)
    weights = convert(args.converter, checkpoint, args.config,
                      os.path.join(args.out, "centerpoint_synthetic"
                                   ".safetensors"))
    summary = {
        "seed": args.seed, "command": " ".join(sys.argv),
        "torch": torch.__version__,
        "device": (torch.cuda.get_device_name(device)
                   if device.type == "cuda" else "cpu"),
        "amp": args.amp, "batch_size": args.batch_size, "lr": args.lr,
        "calibration_steps": args.calibration_steps,
        "steps": done, "planned_steps": iterations,
        "stopped_by_deadline": stopped_early,
        "step_ms": step_seconds * 1e3,
        "training_seconds": train_seconds,
        "total_seconds": time.time() - STARTED,
        "final_loss_mean_last_200": {"total": final_loss[0],
                                     "heatmap": final_loss[1],
                                     "bbox": final_loss[2]},
        "train_frames": len(train), "heldout_frames": len(heldout),
        "parameters": params,
        "weights": weights,
        "heldout_ap_torch_r40": {n: r["ap"] for n, r in results.items()},
        "heldout_eval": results,
    }
    with open(os.path.join(args.out, "summary.json"), "w") as stream:
        json.dump(summary, stream, indent=1)
    log("held-out AP through PyTorch (R40; not the GStreamer pipeline):\n"
        + eval_ap.format_table(results, "r40"))
    log("summary: %d steps in %.0f s (%.1f ms a step), final loss %.4f "
        "(heatmap %.4f, bbox %.4f), AP car %s pedestrian %s cyclist %s, "
        "total %.0f s" % (
            done, train_seconds, step_seconds * 1e3, final_loss[0],
            final_loss[1], final_loss[2],
            *["%.3f" % r["ap"] if r["ap"] is not None else "n/a"
              for r in results.values()], time.time() - STARTED))
    LOG.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
