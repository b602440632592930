"""What the p3d-batch tests and its benchmark share: sweep files written by
pointcloudtestsrc through multifilesink, a tiny CenterPoint-pillar model
(random weights, fast on the CPU path), the lidar-to-boxes pipeline text,
the oracle (a plain gst-launch-1.0 run of each file) and runs of the
command itself."""

import json
import os
import random
import signal
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(os.path.dirname(HERE))
PYTHON_DIR = os.path.join(SOURCE_ROOT, "python")
sys.path.insert(0, os.path.join(SOURCE_ROOT, "tools"))

import convert_mmdet3d_centerpoint as converter  # noqa: E402

# A 64 x 32 pillar grid of 0.8 m and 8 channels: a few milliseconds a frame
# on the reference path, where the shipped model takes seconds.
TINY_MODEL = {
    "point_channels": 4,
    "features": "pointpillars-10",
    "voxel_size": [0.8, 0.8, 4.0],
    "point_cloud_range": [-25.6, -12.8, -3.0, 25.6, 12.8, 1.0],
    "max_points": 16,
    "max_voxels": 2048,
    "grid": [64, 32, 1],
    "pfn": {"channels": [8], "bn_eps": 0.001},
    "backbone": {"out_channels": [8], "layer_nums": [1], "layer_strides": [2],
                 "bn_eps": 0.001},
    "neck": {"out_channels": [8], "upsample_strides": [1],
             "use_conv_for_no_stride": True, "bn_eps": 0.001},
    "head": {"share_conv_channel": 8, "head_conv": 8, "final_kernel": 3,
             "bn_eps": 1e-5,
             "tasks": [{"class_names": ["car"]},
                       {"class_names": ["pedestrian", "cyclist"]}],
             "common_heads": {"reg": 2, "height": 1, "dim": 3, "rot": 2},
             "norm_bbox": True},
    "coder": {"post_center_range": [-30.0, -20.0, -10.0, 30.0, 20.0, 10.0],
              "max_num": 64, "score_threshold": 0.1, "out_size_factor": 2,
              "voxel_size": [0.8, 0.8], "pc_range": [-25.6, -12.8]},
    "test_nms": {"type": "circle", "min_radius": [4.0, 0.85], "nms_thr": 0.2,
                 "pre_max_size": 256, "post_max_size": 64},
}


def write_tiny_model(path, seed=30):
    """A CenterPoint-pillar weights file of TINY_MODEL with random weights
    drawn as tests/check/libs/tinymodel.c draws them: BatchNorm statistics
    that keep activations in range, heatmap biases around the score
    threshold so that some cells give boxes."""
    config = converter.merge(converter.DEFAULT_CONFIG, TINY_MODEL)
    config["head"]["common_heads"] = dict(TINY_MODEL["head"]["common_heads"])
    converter.validate_config(config)
    rng = random.Random(seed)
    tensors = []
    for name, shape in converter.expected_tensors(config).items():
        count = 1
        for size in shape:
            count *= size
        if name.endswith(".weight") and len(shape) == 4:
            fan_in = shape[1] * shape[2] * shape[3]
            bound = 2.0 / fan_in ** 0.5
            values = [rng.uniform(-bound, bound) for _ in range(count)]
        elif name.endswith("linear.weight"):
            values = [rng.uniform(-0.3, 0.3) for _ in range(count)]
        elif name.endswith("running_var"):
            values = [rng.uniform(0.05, 2.0) for _ in range(count)]
        elif name.endswith("running_mean"):
            values = [rng.uniform(-0.3, 0.3) for _ in range(count)]
        elif name.endswith(".1.bias"):
            heatmap = ".heatmap." in name
            values = [rng.uniform(-2.5, 0.0) if heatmap else
                      rng.uniform(-1.0, 1.0) for _ in range(count)]
        elif name.endswith(".weight"):  # a BatchNorm's gamma
            values = [rng.uniform(0.5, 1.5) * (-1 if i % 3 == 0 else 1)
                      for i in range(count)]
        else:  # a BatchNorm's beta
            values = [rng.uniform(-0.5, 0.5) for _ in range(count)]
        tensors.append((name, "F32", shape,
                        struct.pack("<%df" % count, *values)))
    converter.write_safetensors(path, tensors, {
        "p3d.model": json.dumps(config), "format": "pt"})
    return path


def lidar_pipeline(model):
    """The lidar chain from a KITTI-style .bin sweep to boxenc's JSON lines,
    with the tiny model's settings."""
    return ('pointcloudparse preset=kitti '
            '! voxelize voxel-size="<0.8,0.8,4.0>" '
            'range="<-25.6,-12.8,-3,25.6,12.8,1>" max-points=16 '
            'max-voxels=2048 ! pillarfeat features=pointpillars-10 '
            '! pillarencode weights=%s ! bevdetect weights=%s ! boxenc'
            % (model, model))


def gst_launch_args(text):
    """gst-launch-1.0's arguments for pipeline text, split as a shell would
    split it (the quotes around property values are the shell's)."""
    import shlex
    return shlex.split(text)


def write_sweeps(folder, count, seed=1, beams=16, points=512):
    """@count sweeps of the synthetic lidar (moving objects, so every file
    differs) as KITTI-style float32 x, y, z, intensity .bin files."""
    os.makedirs(folder, exist_ok=True)
    subprocess.run(
        ["gst-launch-1.0", "-q", "pointcloudtestsrc", "num-buffers=%d" % count,
         "seed=%d" % seed, "beams=%d" % beams,
         "points-per-revolution=%d" % points, "format=xyzi", "!",
         "multifilesink", "location=%s" % os.path.join(folder, "%06d.bin")],
        check=True, timeout=120)
    return sorted(os.path.join(folder, name) for name in os.listdir(folder))


def oracle(pipeline, path, output):
    """A plain gst-launch-1.0 run of one file, as a user would write it.
    gst-launch can hang after an early error (docs/development.md), hence
    the timeout."""
    subprocess.run(
        ["timeout", "120", "gst-launch-1.0", "-q", "filesrc",
         "location=%s" % path, "!"] + gst_launch_args(pipeline) +
        ["!", "filesink", "location=%s" % output],
        check=True, stdout=subprocess.DEVNULL)
    with open(output, "rb") as f:
        return f.read()


def oracle_error(pipeline, path):
    """The error message a plain pipeline (filesrc ! TEXT ! fakesink, not
    p3d-batch's) posts for one file, or None when it ends well. In-process:
    gst-launch-1.0 itself can wait for ever after an early error."""
    import gi

    gi.require_version("Gst", "1.0")
    from gi.repository import Gst

    Gst.init(None)
    launched = Gst.parse_launch("filesrc location=%s ! %s ! fakesink" %
                                (path, pipeline))
    launched.set_state(Gst.State.PLAYING)
    try:
        message = launched.get_bus().timed_pop_filtered(
            120 * Gst.SECOND, Gst.MessageType.ERROR | Gst.MessageType.EOS)
    finally:
        launched.set_state(Gst.State.NULL)
    if message is None:
        raise AssertionError("%s: no end and no error within 120 s" % path)
    if message.type == Gst.MessageType.EOS:
        return None
    return message.parse_error()[0].message


def batch_command(*args):
    return [sys.executable, "-m", "gstperception.batch", "run"] + list(args)


def batch_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def run_batch(*args, timeout=300):
    """p3d-batch run ARGS to its end: (exit status, output text)."""
    done = subprocess.run(batch_command(*args), env=batch_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout, check=False)
    return done.returncode, done.stdout


def start_batch(*args, log=None):
    """p3d-batch run ARGS in a session of its own (so that the test can
    kill it and all its workers at once)."""
    return subprocess.Popen(batch_command(*args), env=batch_env(),
                            stdout=log or subprocess.DEVNULL,
                            stderr=subprocess.STDOUT, start_new_session=True)


def kill_session(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=60)


def read_manifest(outdir):
    with open(os.path.join(outdir, "manifest.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def read_records(outdir):
    """{output: record} of the outputs complete in @outdir."""
    state = os.path.join(outdir, ".p3d-batch")
    records = {}
    for folder, _, names in os.walk(state):
        for name in names:
            if name.endswith(".json"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    try:
                        record = json.load(f)
                    except ValueError:
                        continue
                records[record["output"]] = record
    return records


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("timed out after %g s waiting for %s" %
                         (timeout, what))
