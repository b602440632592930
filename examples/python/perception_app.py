#!/usr/bin/python3
"""Embedding gst-perception in a Python application (PyGObject).

The same two branches as examples/c/perception-app.c: lidar sweeps pushed
from memory through voxelize and pillarfeat, and a detector's raw boxes
through nms, both pulled back with appsink. Tensors are read one GstMemory
at a time (never the whole buffer), as docs/media-types.md describes.

    /usr/bin/python3 examples/python/perception_app.py [--frames N] [--bad-input]

Needs python3-gi and gir1.2-gstreamer-1.0 / gir1.2-gst-plugins-base-1.0,
and the perception plugin on GST_PLUGIN_PATH. Debian's python3-gi installs
into the system interpreter, /usr/bin/python3 (this file's #! line): a
python3 that comes first on PATH (a virtual environment, conda, pyenv)
usually lacks it, so name /usr/bin/python3 or run the file itself.
"""

import argparse
import math
import struct
import sys

try:
    import gi

    gi.require_version("Gst", "1.0")
    gi.require_version("GstApp", "1.0")
    from gi.repository import Gst, GstApp  # noqa: F401
except (ImportError, ValueError) as missing:
    # 77: "skipped" for the test suite, where this Python may lack PyGObject
    print("this example needs python3-gi and the GStreamer typelibs "
          "(gir1.2-gstreamer-1.0, gir1.2-gst-plugins-base-1.0), which %s "
          "lacks (%s); Debian installs them for /usr/bin/python3: run "
          "/usr/bin/python3 %s" % (sys.executable, missing, sys.argv[0]),
          file=sys.stderr)
    sys.exit(77)

POINTS_PER_SWEEP = 4096
OBJECTS = 8
MAX_BOXES = 64
BOX3D = struct.Struct("<8fi")  # x y z dx dy dz yaw score label: 36 bytes


def make_sweep(frame):
    values = []
    for i in range(POINTS_PER_SWEEP):
        angle = 2.0 * math.pi * i / POINTS_PER_SWEEP
        radius = 10.0 + 0.01 * frame if i % 2 else 30.0
        values += [radius * math.cos(angle) + 35.0, radius * math.sin(angle),
                   -1.5 if i % 2 else 0.5, 0.5]
    return Gst.Buffer.new_wrapped(struct.pack("<%df" % len(values), *values))


def make_candidates(frame):
    records = bytearray(MAX_BOXES * BOX3D.size)
    for i in range(OBJECTS):
        x = 10.0 + 6.0 * i + 0.1 * frame
        car = [x, -4.0 + i, -1.0, 4.5, 1.9, 1.6, 0.1 * i, 0.9 - 0.05 * i]
        BOX3D.pack_into(records, (2 * i) * BOX3D.size, *car, 0)
        car[0] += 0.3
        car[7] -= 0.2
        BOX3D.pack_into(records, (2 * i + 1) * BOX3D.size, *car, 0)
    buffer = Gst.Buffer.new()
    # one GstMemory per tensor: the records, then the count; a buffer made
    # by new_wrapped owns a copy of the bytes, which its memory keeps alive
    for tensor in (bytes(records), struct.pack("<I", 2 * OBJECTS)):
        buffer.append_memory(Gst.Buffer.new_wrapped(tensor).get_memory(0))
    return buffer


def read_tensor(sample, index):
    memory = sample.get_buffer().peek_memory(index)
    ok, info = memory.map(Gst.MapFlags.READ)
    if not ok:
        raise RuntimeError("cannot map tensor %d" % index)
    try:
        return bytes(info.data)
    finally:
        memory.unmap(info)


def bus_errors(pipeline):
    bus = pipeline.get_bus()
    failed = False
    while True:
        msg = bus.pop_filtered(Gst.MessageType.ERROR | Gst.MessageType.WARNING)
        if msg is None:
            return failed
        if msg.type == Gst.MessageType.ERROR:
            error, debug = msg.parse_error()
            print("error from %s: %s\n  (%s)" % (msg.src.get_name(), error.message, debug),
                  file=sys.stderr)
            failed = True
        else:
            warning, _ = msg.parse_warning()
            print("warning from %s: %s" % (msg.src.get_name(), warning.message), file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=5)
    parser.add_argument("--bad-input", action="store_true",
                        help="push a truncated sweep to show how errors arrive")
    args = parser.parse_args()

    Gst.init(None)
    try:
        pipeline = Gst.parse_launch(
            "appsrc name=points format=time caps=application/x-point-cloud,format=xyzi "
            "! voxelize ! pillarfeat ! appsink name=features sync=false "
            "appsrc name=candidates format=time caps=application/x-boxes3d,max-boxes=%d "
            "! nms mode=bev-rotated iou-threshold=0.1 ! appsink name=kept sync=false"
            % MAX_BOXES)
    except gi.repository.GLib.Error as error:
        print("cannot create the pipeline (is the perception plugin on GST_PLUGIN_PATH?): %s"
              % error.message, file=sys.stderr)
        return 2
    points = pipeline.get_by_name("points")
    candidates = pipeline.get_by_name("candidates")
    features = pipeline.get_by_name("features")
    kept = pipeline.get_by_name("kept")
    pipeline.set_state(Gst.State.PLAYING)

    status = 0
    for frame in range(args.frames):
        sweep = make_sweep(frame)
        boxes = make_candidates(frame)
        sweep.pts = boxes.pts = frame * Gst.SECOND // 10
        if args.bad_input and frame == args.frames - 1:
            sweep.resize(0, 17)  # not a whole number of points
        points.emit("push-buffer", sweep)
        candidates.emit("push-buffer", boxes)

        sample = features.emit("try-pull-sample", 5 * Gst.SECOND)
        if sample is not None:
            pillars = struct.unpack("<I", read_tensor(sample, 2))[0]
            print("frame %d: %d pillars" % (frame, pillars))
        sample = kept.emit("try-pull-sample", 5 * Gst.SECOND)
        if sample is not None:
            count = struct.unpack("<I", read_tensor(sample, 1))[0]
            print("frame %d: %d boxes kept of %d candidates" % (frame, count, 2 * OBJECTS))
            if frame == 0:
                records = read_tensor(sample, 0)
                for i in range(count):
                    x, y, _, _, _, _, yaw, score, _ = BOX3D.unpack_from(records, i * BOX3D.size)
                    print("  box %d: x=%.2f y=%.2f yaw=%.2f score=%.2f" % (i, x, y, yaw, score))
        if bus_errors(pipeline):
            status = 3
            break

    points.emit("end-of-stream")
    candidates.emit("end-of-stream")
    pipeline.set_state(Gst.State.NULL)
    return status


if __name__ == "__main__":
    sys.exit(main())
