#!/usr/bin/env python3
"""PointPillars end to end on the GPU machine: KITTI sweeps through the
GStreamer pipeline of the CUDA-PointPillars preset against each framework's
PointPillars in PyTorch (pointpillars_torch.py), on the same random
weights written in the framework's own checkpoint format and converted by
its converter.

  compare_pointpillars.py --sweeps DIR_OR_FILE... [--out DIR] [--work DIR]
      [--models openpcdet openpcdet-per-class mmdet3d] [--device cuda]
      [--backend auto] [--gst-launch gst-launch-1.0] [--seed 0]
      [--hit-rate 0.002] [--timeout 120]

--sweeps: KITTI velodyne files (float32 x y z i), or folders of them
(every *.bin); never committed (../shared/data/cuda-pointpillars/).
Per sweep, once:

  filesrc ! pointcloudparse preset=kitti
    ! voxelize voxel-size="<0.16,0.16,4>" range="<0,-39.68,-3,69.12,39.68,1>"
        max-points=32 max-voxels=40000
    ! pillarfeat features=pointpillars-10 ! F32 ! filesink   (the pillars)

Per model: random weights calibrated on the first sweep's pillars
(pointpillars_torch.random_model: BatchNorm statistics measured, class
biases that let about --hit-rate of the anchors pass the threshold),
saved as the framework saves them (OpenPCDet {"model_state"} and its YAML;
mmdetection3d {"state_dict", "meta"} and its Python config) and converted
by tools/convert_openpcdet_pointpillars.py or
tools/convert_mmdet3d_pointpillars.py.  The models: OpenPCDet's
pointpillar.yaml (class-agnostic NMS, as the YAML in OpenPCDet's tree has
it), the same with MULTI_CLASSES_NMS True (as issue 26 quotes it), and
mmdetection3d's kitti-3d-3class.  Then per sweep:

  reference  pointpillars_torch.py run on the pillars (F32, TF32 off)
  ours F32   ... ! pillarfeat F32 ! pillarencode weights=M
               ! bevdetect weights=M precision=f32 ! boxenc ! filesink
  ours F16   ... ! pillarfeat F16 ! pillarencode weights=M
               ! bevdetect weights=M precision=f16 ! boxenc ! filesink

and the boxes matched (same label, nearest centre):

  F32: every box matched both ways, centre, z, size (relative), yaw and
       score within 1e-4: pass or fail;
  F16: measured against the F32 reference: boxes matched within 0.1 m,
       the largest differences of the matched ones, the unmatched ones on
       each side with their scores (a box near the 0.1 threshold, or one
       an NMS decision flipped), and yaws half a turn off (a direction
       classifier whose two logits nearly tie).

Writes --out's summary.json, summary.md (the tables for docs/weights.md)
and every box file (the reference's and ours, JSON lines); the large
intermediate files (pillars, canvases, head maps, checkpoints and weights:
about 200 MB a sweep) go to --work.  Prints progress and the tables.  Exit 0 when
every F32 comparison passes, 1 otherwise, 2 when a step could not run.
"""

import argparse
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

PRESET = ["voxelize", "voxel-size=<0.16,0.16,4.0>",
          "range=<0.0,-39.68,-3.0,69.12,39.68,1.0>", "max-points=32",
          "max-voxels=40000"]
MODELS = ("openpcdet", "openpcdet-per-class", "mmdet3d")
F32_TOLERANCE = 1e-4
F16_MATCH = 0.1  # metres: a matched F16 box's centre is within this


def log(text):
    print(text, flush=True)


def gst(args, pipeline, what):
    command = [args.gst_launch, "-q"] + pipeline
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        raise SystemExit("%s: gst-launch-1.0 did not finish in %g s: %s" %
                         (what, args.timeout, " ".join(command)))
    if done.returncode != 0:
        raise SystemExit("%s: gst-launch-1.0 failed (%d): %s\n%s" %
                         (what, done.returncode, " ".join(command),
                          done.stdout))


def source(sweep, backend):
    return ["filesrc", "location=" + sweep, "!", "pointcloudparse",
            "preset=kitti", "!"] + PRESET + ["backend=" + backend, "!"]


def pillars_of(args, sweep, path):
    gst(args, source(sweep, args.backend) + [
        "pillarfeat", "features=pointpillars-10", "backend=" + args.backend,
        "!", "application/x-pillar-features,format=F32", "!", "filesink",
        "location=" + path], "pillars of " + sweep)


def ours(args, sweep, weights, half, path):
    gst(args, source(sweep, args.backend) + [
        "pillarfeat", "features=pointpillars-10", "backend=" + args.backend,
        "!", "application/x-pillar-features,format=" +
        ("F16" if half else "F32"), "!",
        "pillarencode", "weights=" + weights, "backend=" + args.backend, "!",
        "bevdetect", "weights=" + weights, "backend=" + args.backend,
        "precision=" + ("f16" if half else "f32"), "!", "boxenc", "!",
        "filesink", "location=" + path],
        "%s through %s" % (sweep, weights))


def framework_of(model):
    return "mmdet3d" if model == "mmdet3d" else "openpcdet"


def init_model(ref, model, directory, pillars, args):
    """pointpillars_torch.py init, with MULTI_CLASSES_NMS set for
    openpcdet-per-class: the checkpoint, the config and the converted
    weights file."""
    import torch

    framework = framework_of(model)
    cfg = ref.openpcdet_cfg() if framework == "openpcdet" else \
        ref.mmdet3d_cfg()
    if model == "openpcdet-per-class":
        cfg["MODEL"]["POST_PROCESSING"]["NMS_CONFIG"][
            "MULTI_CLASSES_NMS"] = True
    os.makedirs(directory, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        ref.write_config(framework, cfg, os.path.join(tmp, "c"))
        _, doc = ref.read_config(framework, os.path.join(tmp, "c"))
    features, coords, _ = ref.cp.read_pillars(pillars, doc, 0)
    net, shares = ref.random_model(
        framework, doc, cfg, torch.from_numpy(features),
        torch.from_numpy(coords), args.seed, args.hit_rate,
        torch.device(args.device), framework == "mmdet3d")
    checkpoint, config = ref.save_checkpoint(framework, net, cfg, directory)
    weights = os.path.join(directory, "model.safetensors")
    count = ref.convert(framework, checkpoint, config, weights)
    if not count:
        raise SystemExit("%s: the converter wrote nothing" % model)
    log("%s: %s and %s, converted to %s (%d tensors; class shares above "
        "the threshold %.4f..%.4f)" % (model, checkpoint, config, weights,
                                       count, min(shares), max(shares)))
    return checkpoint, config, weights


def reference(ref, model, checkpoint, config, pillars, directory, boxes,
              args):
    """pointpillars_torch.py run into @directory (its canvas and maps),
    its boxes copied to @boxes."""
    code = ref.command_run(argparse.Namespace(
        framework=framework_of(model), checkpoint=checkpoint, config=config,
        pillars=pillars, frame=0, half=False, device=args.device,
        output=directory))
    if code != 0:
        raise SystemExit("%s: the reference failed on %s" % (model, pillars))
    os.makedirs(os.path.dirname(boxes), exist_ok=True)
    shutil.copyfile(os.path.join(directory, "boxes.jsonl"), boxes)
    return boxes


def match(ref_rows, our_rows, radius):
    """Pairs each reference box with the nearest unused box of ours of its
    label within @radius metres (best scores first): the differences of
    the pairs, and the unmatched boxes of each side."""
    used = set()
    pairs = []
    unmatched_ref = []
    for box, score, label in sorted(ref_rows, key=lambda r: -r[1]):
        best, best_d = None, None
        for j, (obox, _, olabel) in enumerate(our_rows):
            if j in used or olabel != label:
                continue
            d = math.hypot(obox[0] - box[0], obox[1] - box[1])
            if best_d is None or d < best_d:
                best, best_d = j, d
        if best is None or best_d > radius:
            unmatched_ref.append(score)
            continue
        used.add(best)
        obox, oscore, _ = our_rows[best]
        yaw = abs(math.remainder(obox[6] - box[6], 2 * math.pi))
        pairs.append({
            "center": best_d, "z": abs(obox[2] - box[2]),
            "size": max(abs(obox[i] - box[i]) / max(1.0, abs(box[i]))
                        for i in (3, 4, 5)),
            "yaw": yaw, "score": abs(oscore - score),
            "flip": yaw > math.pi / 2})
    unmatched_ours = [r[1] for j, r in enumerate(our_rows) if j not in used]
    return pairs, unmatched_ref, unmatched_ours


def statistics(ref_rows, our_rows, radius):
    pairs, unmatched_ref, unmatched_ours = match(ref_rows, our_rows, radius)
    straight = [p for p in pairs if not p["flip"]]
    worst = {k: max([p[k] for p in straight], default=0.0)
             for k in ("center", "z", "size", "yaw", "score")}
    return {"reference": len(ref_rows), "ours": len(our_rows),
            "matched": len(pairs), "flips": len(pairs) - len(straight),
            "unmatched_reference_scores": sorted(unmatched_ref),
            "unmatched_ours_scores": sorted(unmatched_ours),
            "worst": worst}


def f32_passes(s):
    return (not s["unmatched_reference_scores"] and
            not s["unmatched_ours_scores"] and s["flips"] == 0 and
            all(v <= F32_TOLERANCE for v in s["worst"].values()))


def merge(stats):
    """The sweeps' statistics of one model and precision together."""
    out = {"sweeps": len(stats),
           "reference": sum(s["reference"] for s in stats),
           "ours": sum(s["ours"] for s in stats),
           "matched": sum(s["matched"] for s in stats),
           "flips": sum(s["flips"] for s in stats),
           "unmatched_reference_scores": sorted(
               v for s in stats for v in s["unmatched_reference_scores"]),
           "unmatched_ours_scores": sorted(
               v for s in stats for v in s["unmatched_ours_scores"]),
           "worst": {k: max(s["worst"][k] for s in stats)
                     for k in stats[0]["worst"]}}
    return out


def table(results):
    lines = ["| model | storage | boxes, reference / ours | matched | "
             "unmatched, reference / ours (their scores) | direction flips | "
             "largest difference: centre, z, size (rel), yaw, score | "
             "result |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for model, by_precision in results.items():
        for precision, s in by_precision.items():
            w = s["worst"]

            def scores(values):
                if not values:
                    return "0"
                return "%d (%.3f..%.3f)" % (len(values), values[0],
                                            values[-1])

            lines.append(
                "| %s | %s | %d / %d | %d | %s / %s | %d | %.2g m, %.2g m, "
                "%.2g, %.2g rad, %.2g | %s |" % (
                    model, precision, s["reference"], s["ours"], s["matched"],
                    scores(s["unmatched_reference_scores"]),
                    scores(s["unmatched_ours_scores"]), s["flips"],
                    w["center"], w["z"], w["size"], w["yaw"], w["score"],
                    ("PASS" if s["pass"] else "FAIL") if precision == "F32"
                    else "measured"))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--sweeps", nargs="+", required=True)
    parser.add_argument("--out", default=os.path.join(
        os.environ.get("OUT", "."), "compare-pointpillars"))
    parser.add_argument("--work", default=os.path.join(
        tempfile.gettempdir(), "compare-pointpillars"),
                        help="for the large intermediate files")
    parser.add_argument("--models", nargs="+", choices=MODELS,
                        default=list(MODELS))
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--backend", default="auto",
                        help="the elements' backend")
    parser.add_argument("--gst-launch", default="gst-launch-1.0")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hit-rate", type=float, default=0.002)
    parser.add_argument("--timeout", type=float, default=120,
                        help="seconds one gst-launch-1.0 may take")
    args = parser.parse_args(argv)

    sweeps = []
    for entry in args.sweeps:
        sweeps += sorted(glob.glob(os.path.join(entry, "*.bin"))) \
            if os.path.isdir(entry) else [entry]
    if not sweeps:
        log("no sweeps in %s" % " ".join(args.sweeps))
        return 2
    import torch
    import pointpillars_torch as ref

    if args.device.startswith("cuda"):
        if not torch.cuda.is_available():
            log("no CUDA device for torch")
            return 2
        # as pointpillars_torch.py's main: F32 is F32
        torch.backends.cudnn.deterministic = True
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    started = time.time()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(os.path.join(args.work, "pillars"), exist_ok=True)
    names = [os.path.splitext(os.path.basename(s))[0] for s in sweeps]
    pillars = {}
    for sweep, name in zip(sweeps, names):
        pillars[name] = os.path.join(args.work, "pillars", name + ".f32")
        pillars_of(args, sweep, pillars[name])
    log("%d sweeps' pillars written (%.0f s)" % (len(sweeps),
                                                 time.time() - started))

    results, per_sweep = {}, {}
    for model in args.models:
        directory = os.path.join(args.out, model)
        work = os.path.join(args.work, model)
        checkpoint, config, weights = init_model(
            ref, model, os.path.join(work, "model"), pillars[names[0]], args)
        stats = {"F32": [], "F16": []}
        for sweep, name in zip(sweeps, names):
            ref_path = reference(ref, model, checkpoint, config,
                                 pillars[name],
                                 os.path.join(work, "reference", name),
                                 os.path.join(directory, "reference",
                                              name + ".jsonl"), args)
            ref_rows = ref.cp.read_jsonl(ref_path, 0)
            for precision in ("F32", "F16"):
                path = os.path.join(directory, "ours-" + precision.lower(),
                                    name + ".jsonl")
                os.makedirs(os.path.dirname(path), exist_ok=True)
                ours(args, sweep, weights, precision == "F16", path)
                s = statistics(ref_rows, ref.cp.read_jsonl(path, 0),
                               F32_TOLERANCE * 100 if precision == "F32"
                               else F16_MATCH)
                s["pass"] = f32_passes(s)
                stats[precision].append(s)
                per_sweep.setdefault(model, {}).setdefault(
                    precision, {})[name] = s
                log("%s %s %s: reference %d boxes, ours %d, matched %d, "
                    "flips %d; largest: centre %.2g m, z %.2g m, size %.2g, "
                    "yaw %.2g rad, score %.2g%s" % (
                        model, name, precision, s["reference"], s["ours"],
                        s["matched"], s["flips"], s["worst"]["center"],
                        s["worst"]["z"], s["worst"]["size"],
                        s["worst"]["yaw"], s["worst"]["score"],
                        "" if precision == "F16" else
                        (" PASS" if s["pass"] else " FAIL")))
        results[model] = {}
        for precision in ("F32", "F16"):
            merged = merge(stats[precision])
            merged["pass"] = all(s["pass"] for s in stats[precision])
            results[model][precision] = merged

    text = table(results)
    ok = all(r["F32"]["pass"] for r in results.values())
    with open(os.path.join(args.out, "summary.md"), "w") as stream:
        stream.write(text + "\n")
    with open(os.path.join(args.out, "summary.json"), "w") as stream:
        json.dump({"sweeps": sweeps, "models": results,
                   "per_sweep": per_sweep, "seconds": time.time() - started,
                   "f32_tolerance": F32_TOLERANCE,
                   "f16_match_radius": F16_MATCH,
                   "torch": torch.__version__,
                   "device": (torch.cuda.get_device_name()
                              if args.device.startswith("cuda") else "cpu"),
                   "pass": ok}, stream, indent=1)
    log(text)
    log("compare_pointpillars: %d sweeps, %d models: F32 %s (%.0f s)" % (
        len(sweeps), len(results), "PASS" if ok else "FAIL",
        time.time() - started))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
