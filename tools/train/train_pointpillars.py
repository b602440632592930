#!/usr/bin/env python3
"""Trains the small PointPillars model of pointpillars.yaml (an anchor head,
OpenPCDet's rules and names) on pointcloudtestsrc's street, in one
unattended run, with the CenterPoint training's data and evaluation
(README.md): generate_data.py, pillarize.py, eval_ap.py.

Steps, each with progress lines on stdout:
 1. (--generate) generate_data.py writes the training and held-out seeds;
 2. every frame's points are loaded onto the device, every true box's lidar
    points counted (train_centerpoint.load_set);
 3. training: each step takes a batch of frames (seeded draw, random flips
    of x and y), pillarizes them (byte for byte our voxelize ! pillarfeat,
    pointpillars-10), assigns OpenPCDet's anchor targets
    (AxisAlignedTargetAssigner) and takes its losses (sigmoid focal, smooth
    L1 with the yaw's sine difference, direction cross entropy), AdamW with
    a one-cycle schedule, AMP; the number of steps is fitted to the time
    left (measured over the first steps) unless --iterations fixes it;
 4. evaluation on the held-out seeds through the PyTorch model (OpenPCDet's
    decode and class-agnostic NMS as pointpillars.yaml sets them) with
    tools/eval_ap.py's rules;
 5. the checkpoint (OpenPCDet's layout: {"model_state", ...}), the weights
    file converted by tools/convert_openpcdet_pointpillars.py, the held-out
    detections and truth;
 6. the held-out AP of the weights file through the GStreamer pipeline
    (eval_pipeline.py: voxelize ! pillarfeat ! pillarencode ! bevdetect !
    boxenc, as a user runs the model), beside PyTorch's;
 7. a log and a summary (summary.json, the last log line) in --out.

Before it trains, it checks what the end needs, so that a run never spends
its time to fail there: the device, gst-launch-1.0 with the plugin
(GST_PLUGIN_PATH), and the untrained model converted and run through the
pipeline on one held-out frame.

    source .device/env.sh && export GST_PLUGIN_PATH=$PWD/build/gst
    python3 tools/train/train_pointpillars.py --generate --jobs 16 \\
        --data /tmp/p3d-train-data --out $OUT/train-pp --deadline 480 \\
        --max-train-seconds 300

Torch is needed only here (never by the product).
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
import traceback

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
import convert_openpcdet_pointpillars as converter  # noqa: E402
import eval_ap  # noqa: E402
import eval_pipeline  # noqa: E402
import pillarize  # noqa: E402
import pointpillars_model as ppm  # noqa: E402
import train_centerpoint as tc  # noqa: E402

GRAD_CLIP = 10.0  # OpenPCDet's GRAD_NORM_CLIP
STARTED = time.time()
LOG = None


def log(text):
    line = "[%6.1f s] %s" % (time.time() - STARTED, text)
    print(line, flush=True)
    if LOG is not None:
        LOG.write(line + "\n")
        LOG.flush()


def nms_frame(boxes, scores, labels, threshold, post_max):
    """Greedy class-agnostic NMS of one frame (boxes [K][7] on the CPU,
    best first): BEV IoU > threshold suppresses, exact polygon overlap
    (eval_ap.bev_iou); pairs whose centres are farther apart than their
    half diagonals are never compared."""
    rows = [dict(zip(eval_ap.BOX_FIELDS, b + [s]), label=int(c))
            for b, s, c in zip(boxes.tolist(), scores.tolist(),
                               labels.tolist())]
    if not rows:
        return []
    centre = boxes[:, :2].double()
    reach = torch.sqrt(boxes[:, 3].double() ** 2 +
                       boxes[:, 4].double() ** 2) / 2
    near = (torch.cdist(centre, centre) <= reach[:, None] + reach[None, :])
    near = near.numpy()
    suppressed = [False] * len(rows)
    kept = []
    for i, row in enumerate(rows):
        if suppressed[i]:
            continue
        kept.append(row)
        if len(kept) == post_max:
            break
        for j in near[i].nonzero()[0]:
            if j > i and not suppressed[j] and \
                    eval_ap.bev_iou(row, rows[j]) > threshold:
                suppressed[j] = True
    return kept


def detect(outputs, anchors, cfg):
    """post_processing, class-agnostic (MULTI_CLASSES_NMS False): per frame
    a list of boxenc dicts, best first."""
    post = cfg["MODEL"]["POST_PROCESSING"]
    nms = post["NMS_CONFIG"]
    boxes, scores = ppm.predicted_boxes(outputs, anchors, cfg)
    best, labels = scores.max(dim=-1)
    frames = []
    for b in range(boxes.shape[0]):
        index = torch.nonzero(best[b] >= post["SCORE_THRESH"]).view(-1)
        s = best[b, index]
        order = torch.sort(s, descending=True, stable=True)[1][
            :nms["NMS_PRE_MAXSIZE"]]
        index = index[order]
        frames.append(nms_frame(boxes[b, index].cpu(), best[b, index].cpu(),
                                labels[b, index].cpu(), nms["NMS_THRESH"],
                                nms["NMS_POST_MAXSIZE"]))
    return frames


def evaluate(model, frames, grid, cfg, doc, anchors, amp, batch_size,
             device):
    model.eval()
    detections = []
    with torch.no_grad():
        for start in range(0, len(frames), batch_size):
            indices = list(range(start, min(start + batch_size,
                                            len(frames))))
            pillars, _, _ = tc.make_batch(frames, indices,
                                          [(1.0, 1.0)] * len(indices), grid,
                                          1, doc["point_cloud_range"])
            with tc.autocast(device, amp):
                outputs = model(pillars["features"], pillars["coords"],
                                len(indices))
            detections += detect(outputs, anchors, cfg)
    model.train()
    classes = [(i, name, 0.5 if name == "car" else 0.25) for i, name in
               enumerate(doc["head"]["class_names"])]
    results = eval_ap.evaluate([(detections, frames.truth)],
                               doc["point_cloud_range"], classes)
    return results, detections


def save_checkpoint(path, model, meta):
    state = {k: v.detach().float().cpu() if v.is_floating_point() else
             v.detach().cpu() for k, v in model.state_dict().items()}
    torch.save({"model_state": state, "epoch": meta.get("steps", 0),
                "version": "p3d-train", "meta": meta}, path + ".tmp")
    os.replace(path + ".tmp", path)


def convert(checkpoint, config_path, weights):
    """The weights file by the project's converter; a failure is logged,
    never fatal (the checkpoint is the product)."""
    command = [sys.executable, converter.__file__, checkpoint, "--cfg",
               config_path, "-o", weights]
    log("converting: " + " ".join(command))
    done = subprocess.run(command, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True)
    log(done.stdout.strip())
    if done.returncode != 0:
        log("the converter failed (%d): convert the checkpoint later" %
            done.returncode)
        return None
    return {"path": weights, "bytes": os.path.getsize(weights)}


def check_gstreamer(gst_launch):
    """Whether gst-launch-1.0 runs and finds the network elements: the
    message to act on, or None."""
    launch = shutil.which(gst_launch)
    if launch is None:
        return "%s is not on the PATH (source .device/env.sh)" % gst_launch
    inspect = os.path.join(os.path.dirname(launch), "gst-inspect-1.0")
    for element in ("voxelize", "pillarfeat", "pillarencode", "bevdetect",
                    "boxenc", "multifilesrc"):
        # (--exists also asks for GStreamer's version of the plugin)
        done = subprocess.run([inspect, element],
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        if done.returncode != 0:
            return ("GStreamer has no element %s: set GST_PLUGIN_PATH to the "
                    "build's gst folder (and the runtime with multifilesrc)"
                    % element)
    return None


def pipeline_preflight(args, checkpoint, weights, manifest):
    """The untrained model converted and run through the pipeline on one
    held-out frame; the message to act on, or None."""
    if convert(checkpoint, args.config, weights) is None:
        return "the converter refused the untrained model"
    model = eval_pipeline.read_model(weights)
    entry = [e for e in manifest["seeds"] if e["set"] == "heldout"][0]
    chain = eval_pipeline.DEFAULT_CHAIN.format(
        weights=os.path.abspath(weights),
        backend=args.pipeline_backend).split()
    detections = os.path.join(args.out, "preflight_detections.jsonl")
    command = eval_pipeline.pipeline_command(
        args.gst_launch, model, entry["dir"], 1, chain,
        args.pipeline_backend, detections)
    log("pipeline preflight: " + " ".join(command))
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "the pipeline did not finish one frame in 120 s"
    if done.returncode != 0 or not os.path.exists(detections):
        return "the pipeline failed (%d): %s" % (done.returncode,
                                                  done.stdout.strip())
    log("pipeline preflight: %d bytes of boxes" %
        os.path.getsize(detections))
    return None


def pipeline_evaluation(args, weights):
    """eval_pipeline.py on the held-out seeds: its ap.json, or None (the
    failure logged, with the command to run it again)."""
    out = os.path.join(args.out, "pipeline_eval")
    argv = ["--weights", weights, "--data", args.data, "--out", out,
            "--backend", args.pipeline_backend, "--gst-launch",
            args.gst_launch]
    log("held-out AP through the GStreamer pipeline: eval_pipeline.py " +
        " ".join(argv))
    try:
        if eval_pipeline.main(argv) != 0:
            raise RuntimeError("eval_pipeline.py failed")
        with open(os.path.join(out, "ap.json")) as stream:
            return json.load(stream)
    except Exception:  # noqa: BLE001: the training's results must survive
        log("the pipeline evaluation failed; run it again with\n  "
            "python3 tools/train/eval_pipeline.py " + " ".join(argv) +
            "\n" + traceback.format_exc())
        return None


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
    parser.add_argument("--out", default="train-pp-out")
    parser.add_argument("--config", default=os.path.join(HERE,
                                                         "pointpillars.yaml"))
    parser.add_argument("--seed", type=int, default=20261126)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3,
                        help="peak learning rate of the one-cycle schedule "
                        "(OpenPCDet's LR)")
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--iterations", type=int,
                        help="training steps after the calibration steps "
                        "(default: fitted to the time left)")
    parser.add_argument("--calibration-steps", type=int, default=30)
    parser.add_argument("--deadline", type=float, default=400,
                        help="seconds from the start by which the training, "
                        "PyTorch's evaluation and saving should be done "
                        "(the pipeline's evaluation comes after)")
    parser.add_argument("--max-train-seconds", type=float,
                        help="at most this long for the training steps")
    parser.add_argument("--eval-reserve", type=float, default=70,
                        help="seconds kept for evaluation and saving")
    parser.add_argument("--min-train-points", type=int, default=1,
                        help="true boxes with fewer lidar points are not "
                        "trained on (they are invisible)")
    parser.add_argument("--amp", choices=("bf16", "f16", "off"),
                        default="bf16")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--log-every", type=int, default=500)
    parser.add_argument("--no-pipeline-eval", dest="pipeline_eval",
                        action="store_false",
                        help="skip the GStreamer pipeline's preflight and "
                        "held-out evaluation")
    parser.add_argument("--pipeline-backend", default="auto",
                        help="the elements' backend for the pipeline's "
                        "evaluation")
    parser.add_argument("--gst-launch", default="gst-launch-1.0")
    args = parser.parse_args(argv)

    os.makedirs(args.out, exist_ok=True)
    LOG = open(os.path.join(args.out, "train.log"), "w")
    log("command: " + " ".join([sys.executable] + sys.argv))
    log("torch %s, device %s" % (torch.__version__, args.device))
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        log("no CUDA device for torch: give --device cpu, or run on the GPU "
            "machine")
        return 2
    if args.pipeline_eval:
        problem = check_gstreamer(args.gst_launch)
        if problem is not None:
            log("before training: " + problem)
            return 2
    cfg = converter.read_cfg(args.config)
    doc = converter.build_config(args.config)
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
    grid = pillarize.PillarGrid(doc["voxel_size"], doc["point_cloud_range"],
                                doc["max_points"], doc["max_voxels"])
    train = tc.load_set([s for s in manifest["seeds"] if s["set"] == "train"],
                        doc, device, False)
    heldout = tc.load_set([s for s in manifest["seeds"]
                           if s["set"] == "heldout"], doc, device, True)
    log("loaded %d training frames (%d points near the range), %d held-out "
        "frames" % (len(train), train.points.shape[0], len(heldout)))

    model = ppm.PointPillar(doc).to(device)
    if device.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
    params = sum(p.numel() for p in model.parameters())
    log("model: %d parameters (%.2f MB as float32)" % (params,
                                                      params * 4 / 1e6))
    targets = ppm.Targets(cfg, device)
    anchors = targets.anchors
    log("anchors: %d (%d x %d locations x %d)" % (
        anchors.shape[0], targets.height, targets.width,
        anchors.shape[0] // (targets.height * targets.width)))
    checkpoint = os.path.join(args.out, "pointpillars_synthetic.pth")
    weights_path = os.path.join(args.out, "pointpillars_synthetic.safetensors")
    meta = {"seed": args.seed, "batch_size": args.batch_size,
            "command": " ".join(sys.argv)}
    if args.pipeline_eval:
        save_checkpoint(checkpoint, model, dict(meta, steps=0, partial=True))
        problem = pipeline_preflight(args, checkpoint, weights_path, manifest)
        if problem is not None:
            log("before training: " + problem)
            return 2
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr / 10,
                                  weight_decay=args.weight_decay)
    rng = doc["point_cloud_range"]

    def step(scheduler):
        indices = torch.randint(len(train), (args.batch_size,),
                                generator=draw).tolist()
        flips = (torch.randint(2, (args.batch_size, 2), generator=draw) * 2
                 - 1).float().tolist()
        pillars, boxes, frame = tc.make_batch(train, indices, flips, grid,
                                              args.min_train_points, rng)
        labels, box_targets = targets.build(boxes, frame, args.batch_size)
        with tc.autocast(device, args.amp):
            outputs = model(pillars["features"], pillars["coords"],
                            args.batch_size)
        loss_cls, loss_box, loss_dir = ppm.losses(outputs, labels,
                                                  box_targets, anchors, cfg)
        loss = loss_cls + loss_box + loss_dir
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        return loss_cls.detach(), loss_box.detach(), loss_dir.detach()

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

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
        seconds = train_end - time.time()
        if args.max_train_seconds is not None:
            seconds = min(seconds, args.max_train_seconds)
        iterations = max(int(seconds / step_seconds), 10)
    log("%.1f ms a step: %d training steps (%s)" % (
        step_seconds * 1e3, iterations,
        "given" if args.iterations else "fitted to the time left"))

    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=args.lr, total_steps=iterations, pct_start=0.4,
        div_factor=10, final_div_factor=100)
    history = []
    last_save = time.time()
    done = 0
    stopped_early = False
    train_started = time.time()
    train_limit = train_end + 20
    if args.max_train_seconds is not None:
        train_limit = min(train_limit, time.time() + args.max_train_seconds)
    for i in range(iterations):
        if time.time() > train_limit:
            stopped_early = True
            log("deadline: stopping after %d of %d steps" % (i, iterations))
            break
        history.append(step(scheduler))
        done = i + 1
        if done % args.log_every == 0 or done == iterations:
            recent = torch.stack([torch.stack(h) for h in
                                  history[-args.log_every:]]).mean(0)
            log("step %d/%d  loss %.4f (cls %.4f, box %.4f, dir %.4f)  lr "
                "%.2e" % (done, iterations, float(recent.sum()),
                          float(recent[0]), float(recent[1]),
                          float(recent[2]), scheduler.get_last_lr()[0]))
        if time.time() - last_save > 90:
            save_checkpoint(checkpoint, model, dict(meta, steps=done,
                                                    partial=True))
            last_save = time.time()
    train_seconds = time.time() - train_started
    tail = torch.stack([torch.stack(h) for h in history[-200:]]).mean(0) \
        if history else torch.zeros(3)
    final_loss = [float(tail.sum())] + [float(v) for v in tail]

    save_checkpoint(checkpoint, model, dict(meta, steps=done, partial=False,
                                            final_loss=final_loss[0]))
    log("saved %s" % checkpoint)
    results, detections = evaluate(model, heldout, grid, cfg, doc, anchors,
                                   args.amp, args.batch_size, device)
    tc.write_jsonl(os.path.join(args.out, "heldout_detections_torch.jsonl"),
                   detections)
    eval_ap.write_frames(heldout.truth,
                         os.path.join(args.out, "heldout_truth.jsonl"))
    with open(os.path.join(args.out, "heldout_frames.txt"), "w") as stream:
        stream.write("\n".join(heldout.names) + "\n")
    with open(os.path.join(args.out, "data_manifest.json"), "w") as stream:
        json.dump(manifest, stream, indent=1)
    weights = convert(checkpoint, args.config, weights_path)
    pipeline = None
    if args.pipeline_eval and weights is not None:
        pipeline = pipeline_evaluation(args, weights_path)
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
        "final_loss_mean_last_200": dict(zip(
            ("total", "cls", "box", "dir"), final_loss)),
        "train_frames": len(train), "heldout_frames": len(heldout),
        "parameters": params,
        "weights": weights,
        "heldout_ap_torch_r40": {n: r["ap"] for n, r in results.items()},
        "heldout_eval": results,
        "heldout_ap_pipeline_r40": (
            {n: r["ap"] for n, r in pipeline["classes"].items()}
            if pipeline else None),
        "pipeline_eval": pipeline,
    }
    with open(os.path.join(args.out, "summary.json"), "w") as stream:
        json.dump(summary, stream, indent=1)
    log("held-out AP through PyTorch (R40; not the GStreamer pipeline):\n"
        + eval_ap.format_table(results, "r40"))
    if pipeline:
        log("held-out AP through the GStreamer pipeline (R40, backend %s, "
            "%d frames in %.0f s):\n" % (pipeline["backend"],
                                         pipeline["frames"],
                                         pipeline["seconds"]) +
            eval_ap.format_table(pipeline["classes"], "r40"))

    def aps(table):
        return " ".join("%s %s" % (n, "%.4f" % r["ap"] if r["ap"] is not None
                                   else "n/a") for n, r in table.items())

    log("summary: %d steps in %.0f s (%.1f ms a step), final loss %.4f "
        "(cls %.4f, box %.4f, dir %.4f); AP through PyTorch: %s; through the "
        "pipeline: %s; total %.0f s" % (
            done, train_seconds, step_seconds * 1e3, *final_loss,
            aps(results), aps(pipeline["classes"]) if pipeline else
            "not measured", time.time() - STARTED))
    LOG.close()
    if not math.isfinite(final_loss[0]) or weights is None:
        return 1
    return 0 if pipeline is not None or not args.pipeline_eval else 1


if __name__ == "__main__":
    sys.exit(main())
