#!/usr/bin/env python3
"""Average precision of 3D box detections in the bird's-eye view.

Reads detections and true boxes as the JSON lines that boxenc writes (a frame
line {"frame", "pts", "count", "type"}, then `count` box lines {"x", "y",
"z", "dx", "dy", "dz", "yaw", "score", "label"}; see docs/elements/boxenc.md)
and prints the average precision of every class.  Plain Python 3; numpy, when
it is installed, only makes counting points faster.

The rules (tools/train/README.md states them for users):

- A true box counts when its centre lies strictly inside the model's range in
  x and y (as mmdetection3d's ObjectRangeFilter) and at least `min_points`
  (5) lidar points of its frame lie in it (3D, faces included).  The points
  come from a "points" member of the true box line (written by the
  `count-points` command below) or from the frame's points file.  A true box
  that fails the rule is *ignored*: it is neither a hit nor a miss.
- Detections whose centre is outside the range are dropped.
- Per class and frame, detections in descending score order (stable: ties
  keep the file's order) each take the not yet taken valid true box of their
  class with the largest rotated BEV IoU, when that IoU is at least the
  class's threshold: a true positive.  A detection that finds none but
  overlaps a not yet taken ignored true box as much takes that one instead
  and is left out of the count (neither true nor false positive, as KITTI's
  "don't care").  Any other detection is a false positive.
- All frames' detections of a class are ranked by score (stable: frame
  order, then rank in the frame) into a precision-recall curve, and AP is
  the area under its interpolated form: `r40` (default) is the mean, over
  the 40 recalls 1/40, 2/40, ..., 1, of the largest precision at a recall at
  least that large (0 where none is reached), as KITTI's AP|R40; `all` is
  the exact area under the precision envelope at every recall step (PASCAL
  VOC 2010 on).  A class without valid true boxes has no AP (null).
- BEV IoU is exact: the two rotated rectangles are clipped against each
  other (Sutherland-Hodgman) and the areas taken by the shoelace formula.

Usage:
  eval_ap.py ap --range XMIN YMIN ZMIN XMAX YMAX ZMAX \\
      --pair DETECTIONS.jsonl TRUTH.jsonl [POINTS_PATTERN] [--pair ...]
  eval_ap.py count-points --truth TRUTH.jsonl --points PATTERN --output OUT
POINTS_PATTERN names frame k's points file with a printf-style %d
(multifilesink's location, e.g. seed7/%06d.bin); the files hold float32
little-endian points of --point-channels values, x y z first.
"""

import argparse
import json
import math
import struct
import sys

try:
    import numpy
except ImportError:  # optional: counting points falls back to plain loops
    numpy = None

BOX_FIELDS = ("x", "y", "z", "dx", "dy", "dz", "yaw", "score")
DEFAULT_CLASSES = ((0, "car", 0.5), (1, "pedestrian", 0.25),
                   (2, "cyclist", 0.25))
DEFAULT_MIN_POINTS = 5
R40_RECALLS = [k / 40.0 for k in range(1, 41)]


class EvalError(Exception):
    """A file that is not what the evaluation needs."""


# Reading ---------------------------------------------------------------------

def _json_float(value, where):
    # boxenc writes non-finite floats as the strings JavaScript prints
    if isinstance(value, str):
        table = {"NaN": math.nan, "Infinity": math.inf,
                 "-Infinity": -math.inf}
        if value in table:
            return table[value]
        raise EvalError("%s: %r is not a number" % (where, value))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise EvalError("%s: %r is not a number" % (where, value))
    return float(value)


def parse_box(obj, where):
    """A box line's object as a dict of floats, an int label and, when the
    line has one, the int "points" member."""
    if not isinstance(obj, dict):
        raise EvalError("%s: a box line must be a JSON object" % where)
    box = {}
    for name in BOX_FIELDS:
        if name not in obj:
            raise EvalError("%s: box without %r" % (where, name))
        box[name] = _json_float(obj[name], "%s: %s" % (where, name))
    label = obj.get("label")
    if isinstance(label, bool) or not isinstance(label, int):
        raise EvalError("%s: label %r is not an integer" % (where, label))
    box["label"] = label
    if "points" in obj:
        points = obj["points"]
        if isinstance(points, bool) or not isinstance(points, int) \
                or points < 0:
            raise EvalError("%s: points %r is not a count" % (where, points))
        box["points"] = points
    return box


def read_frames(path):
    """The frames of a boxenc JSON-lines file: a list of lists of boxes."""
    frames = []
    expected = 0
    with open(path, "r", encoding="utf-8") as stream:
        for number, line in enumerate(stream, 1):
            where = "%s:%d" % (path, number)
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as error:
                raise EvalError("%s: not JSON (%s)" % (where, error))
            if isinstance(obj, dict) and "frame" in obj:
                if expected:
                    raise EvalError("%s: frame line where %d more box lines "
                                    "were due" % (where, expected))
                if obj.get("type", "3d") != "3d":
                    raise EvalError("%s: %r boxes, 3d expected"
                                    % (where, obj.get("type")))
                count = obj.get("count")
                if isinstance(count, bool) or not isinstance(count, int) \
                        or count < 0:
                    raise EvalError("%s: count %r" % (where, count))
                frames.append([])
                expected = count
                continue
            if not frames or not expected:
                raise EvalError("%s: box line outside a frame's count"
                                % where)
            frames[-1].append(parse_box(obj, where))
            expected -= 1
    if expected:
        raise EvalError("%s: the last frame lacks %d box lines"
                        % (path, expected))
    return frames


def read_points(path, channels):
    """A points file as a list of (x, y, z) tuples (or an N x 3 numpy array
    when numpy is there)."""
    with open(path, "rb") as stream:
        data = stream.read()
    if len(data) % (4 * channels):
        raise EvalError("%s: %d bytes is not a whole number of %d-channel "
                        "float32 points" % (path, len(data), channels))
    count = len(data) // (4 * channels)
    if numpy is not None:
        values = numpy.frombuffer(data, dtype="<f4").reshape(count, channels)
        return values[:, :3].astype(numpy.float64)
    values = struct.unpack("<%df" % (count * channels), data)
    return [values[i * channels:i * channels + 3] for i in range(count)]


# Geometry --------------------------------------------------------------------

def box_corners(box):
    """The BEV corners of a box, counter-clockwise."""
    c, s = math.cos(box["yaw"]), math.sin(box["yaw"])
    hx, hy = box["dx"] / 2.0, box["dy"] / 2.0
    corners = []
    for lx, ly in ((hx, hy), (-hx, hy), (-hx, -hy), (hx, -hy)):
        corners.append((box["x"] + lx * c - ly * s,
                        box["y"] + lx * s + ly * c))
    return corners


def polygon_area(polygon):
    """Signed shoelace area (positive counter-clockwise)."""
    area = 0.0
    for i, (x0, y0) in enumerate(polygon):
        x1, y1 = polygon[(i + 1) % len(polygon)]
        area += x0 * y1 - x1 * y0
    return area / 2.0


def clip_polygon(subject, clip):
    """Sutherland-Hodgman: the part of @subject inside the convex,
    counter-clockwise polygon @clip."""
    output = list(subject)
    for i, (ax, ay) in enumerate(clip):
        bx, by = clip[(i + 1) % len(clip)]
        if not output:
            break
        inputs, output = output, []

        def side(point):
            # > 0 left of the edge a -> b, i.e. inside
            return (bx - ax) * (point[1] - ay) - (by - ay) * (point[0] - ax)

        for j, current in enumerate(inputs):
            previous = inputs[j - 1]
            s_cur, s_prev = side(current), side(previous)
            if s_cur >= 0.0:
                if s_prev < 0.0:
                    output.append(_crossing(previous, current, s_prev,
                                            s_cur))
                output.append(current)
            elif s_prev >= 0.0:
                output.append(_crossing(previous, current, s_prev, s_cur))
    return _without_repeats(output)


def _without_repeats(polygon):
    # a corner lying on the other box's edge comes out twice (once kept,
    # once as a crossing); the copies add no area and are dropped
    kept = []
    for point in polygon:
        if not kept or math.hypot(point[0] - kept[-1][0],
                                  point[1] - kept[-1][1]) > 1e-9:
            kept.append(point)
    while len(kept) > 1 and math.hypot(kept[0][0] - kept[-1][0],
                                       kept[0][1] - kept[-1][1]) <= 1e-9:
        kept.pop()
    return kept


def _crossing(p, q, s_p, s_q):
    t = s_p / (s_p - s_q)
    return (p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1]))


def bev_intersection(a, b):
    """Area of the intersection of two boxes in the ground plane."""
    polygon = clip_polygon(box_corners(a), box_corners(b))
    if len(polygon) < 3:
        return 0.0
    return max(polygon_area(polygon), 0.0)


def bev_iou(a, b):
    area_a = a["dx"] * a["dy"]
    area_b = b["dx"] * b["dy"]
    if not (area_a > 0.0 and area_b > 0.0):
        return 0.0
    # boxes farther apart than their half diagonals cannot touch
    reach = (math.hypot(a["dx"], a["dy"]) + math.hypot(b["dx"], b["dy"])) / 2
    if math.hypot(a["x"] - b["x"], a["y"] - b["y"]) > reach:
        return 0.0
    inter = bev_intersection(a, b)
    union = area_a + area_b - inter
    return inter / union if union > 0.0 else 0.0


def count_points_in_boxes(points, boxes):
    """How many of @points (x, y, z) lie in each box (3D, faces included)."""
    if numpy is not None and hasattr(points, "shape"):
        counts = []
        for box in boxes:
            c, s = math.cos(box["yaw"]), math.sin(box["yaw"])
            dx = points[:, 0] - box["x"]
            dy = points[:, 1] - box["y"]
            local_x = dx * c + dy * s
            local_y = -dx * s + dy * c
            inside = ((numpy.abs(local_x) <= box["dx"] / 2)
                      & (numpy.abs(local_y) <= box["dy"] / 2)
                      & (numpy.abs(points[:, 2] - box["z"]) <= box["dz"] / 2))
            counts.append(int(inside.sum()))
        return counts
    # plain Python: a grid of 2 m cells keeps each point's tests to the
    # boxes whose bounding square reaches its cell
    cell = 2.0
    buckets = {}
    for index, box in enumerate(boxes):
        half = math.hypot(box["dx"], box["dy"]) / 2
        for gx in range(int(math.floor((box["x"] - half) / cell)),
                        int(math.floor((box["x"] + half) / cell)) + 1):
            for gy in range(int(math.floor((box["y"] - half) / cell)),
                            int(math.floor((box["y"] + half) / cell)) + 1):
                buckets.setdefault((gx, gy), []).append(index)
    trig = [(math.cos(b["yaw"]), math.sin(b["yaw"])) for b in boxes]
    counts = [0] * len(boxes)
    for x, y, z in points:
        if not (math.isfinite(x) and math.isfinite(y)):
            continue
        for index in buckets.get((int(math.floor(x / cell)),
                                  int(math.floor(y / cell))), ()):
            box = boxes[index]
            c, s = trig[index]
            dx, dy = x - box["x"], y - box["y"]
            if abs(dx * c + dy * s) <= box["dx"] / 2 \
                    and abs(-dx * s + dy * c) <= box["dy"] / 2 \
                    and abs(z - box["z"]) <= box["dz"] / 2:
                counts[index] += 1
    return counts


# Matching and AP -------------------------------------------------------------

def centre_in_range(box, point_cloud_range):
    xmin, ymin, _, xmax, ymax, _ = point_cloud_range
    return xmin < box["x"] < xmax and ymin < box["y"] < ymax


def match_frame(detections, truths, valid, threshold):
    """Greedy matching of one frame and class.  Returns (score, is_tp) for
    every detection that counts, in descending score order."""
    order = sorted(range(len(detections)),
                   key=lambda i: -detections[i]["score"])
    taken = [False] * len(truths)
    records = []
    for i in order:
        det = detections[i]
        # the best not yet taken box of each kind (valid, ignored), first
        # in file order among equals
        best = {True: (-1, -1.0), False: (-1, -1.0)}
        for j, truth in enumerate(truths):
            if taken[j]:
                continue
            iou = bev_iou(det, truth)
            if iou >= threshold and iou > best[valid[j]][1]:
                best[valid[j]] = (j, iou)
        if best[True][0] >= 0:
            taken[best[True][0]] = True
            records.append((det["score"], True))
        elif best[False][0] >= 0:
            taken[best[False][0]] = True  # an ignored box absorbs it
        else:
            records.append((det["score"], False))
    return records


def precision_recall(records, positives):
    """Cumulative (recall, precision) after each ranked detection."""
    ranked = sorted(range(len(records)), key=lambda i: -records[i][0])
    curve = []
    hits = 0
    for n, i in enumerate(ranked, 1):
        if records[i][1]:
            hits += 1
        curve.append((hits / positives, hits / n))
    return curve


def average_precision(curve, interpolation="r40"):
    """The area under the interpolated precision-recall curve."""
    if interpolation == "r40":
        total = 0.0
        for r in R40_RECALLS:
            reached = [p for recall, p in curve if recall >= r - 1e-12]
            total += max(reached) if reached else 0.0
        return total / len(R40_RECALLS)
    if interpolation == "all":
        area = 0.0
        previous_recall = 0.0
        for k, (recall, _) in enumerate(curve):
            if recall > previous_recall:
                envelope = max(p for _, p in curve[k:])
                area += (recall - previous_recall) * envelope
                previous_recall = recall
        return area
    raise ValueError("interpolation must be 'r40' or 'all'")


def evaluate(sequences, point_cloud_range, classes=DEFAULT_CLASSES,
             min_points=DEFAULT_MIN_POINTS, interpolation="r40"):
    """AP per class over @sequences, a list of (detection frames, truth
    frames) with the same number of frames; every truth box needs its
    "points".  Returns {name: {...}} in the order of @classes."""
    results = {}
    for label, name, threshold in classes:
        records = []
        positives = ignored = 0
        for det_frames, truth_frames in sequences:
            if len(det_frames) != len(truth_frames):
                raise EvalError("%d detection frames for %d truth frames"
                                % (len(det_frames), len(truth_frames)))
            for dets, truths in zip(det_frames, truth_frames):
                truths = [t for t in truths if t["label"] == label]
                valid = []
                for truth in truths:
                    if "points" not in truth:
                        raise EvalError("a true box without its point count"
                                        " (give a points file or run "
                                        "count-points)")
                    valid.append(centre_in_range(truth, point_cloud_range)
                                 and truth["points"] >= min_points)
                positives += sum(valid)
                ignored += len(valid) - sum(valid)
                dets = [d for d in dets if d["label"] == label
                        and centre_in_range(d, point_cloud_range)]
                records.extend(match_frame(dets, truths, valid, threshold))
        hits = sum(1 for _, tp in records if tp)
        ap = None
        if positives:
            ap = average_precision(precision_recall(records, positives),
                                   interpolation)
        results[name] = {"label": label, "iou": threshold, "ap": ap,
                         "true_boxes": positives, "ignored_boxes": ignored,
                         "detections": len(records), "true_positives": hits}
    return results


def annotate_points(frames, pattern, channels):
    """Sets every true box's "points" from frame k's points file."""
    for k, boxes in enumerate(frames):
        if not boxes or all("points" in b for b in boxes):
            continue
        counts = count_points_in_boxes(read_points(pattern % k, channels),
                                       boxes)
        for box, count in zip(boxes, counts):
            box.setdefault("points", count)


def write_frames(frames, path):
    """Truth frames back as JSON lines, with their "points" members."""
    with open(path, "w", encoding="utf-8") as stream:
        for k, boxes in enumerate(frames):
            stream.write(json.dumps({"frame": k, "pts": None,
                                     "count": len(boxes), "type": "3d"}))
            stream.write("\n")
            for box in boxes:
                stream.write(json.dumps(box, allow_nan=False))
                stream.write("\n")


# Command line ----------------------------------------------------------------

def parse_classes(text):
    classes = []
    for item in text.split(","):
        parts = item.split(":")
        if len(parts) != 3:
            raise argparse.ArgumentTypeError(
                "classes are LABEL:NAME:IOU, comma-separated, not %r" % item)
        classes.append((int(parts[0]), parts[1], float(parts[2])))
    return classes


def read_model_range(weights):
    """point_cloud_range from a safetensors weights file's p3d.model."""
    with open(weights, "rb") as stream:
        (length,) = struct.unpack("<Q", stream.read(8))
        header = json.loads(stream.read(length))
    model = json.loads(header["__metadata__"]["p3d.model"])
    return [float(v) for v in model["point_cloud_range"]]


def format_table(results, interpolation):
    lines = ["| class | BEV IoU | AP (%s) | true boxes | ignored | "
             "detections | true positives |" % interpolation,
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, r in results.items():
        ap = "n/a" if r["ap"] is None else "%.4f" % r["ap"]
        lines.append("| %s | %g | %s | %d | %d | %d | %d |"
                     % (name, r["iou"], ap, r["true_boxes"],
                        r["ignored_boxes"], r["detections"],
                        r["true_positives"]))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    ap = commands.add_parser("ap", help="average precision per class")
    ap.add_argument("--pair", nargs="+", action="append", required=True,
                    metavar="FILE", help="DETECTIONS TRUTH [POINTS_PATTERN]"
                    " (repeat for several sequences)")
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--range", nargs=6, type=float, metavar="V",
                       help="the model's point_cloud_range")
    where.add_argument("--weights", help="take the range from this "
                       "safetensors file's p3d.model metadata")
    ap.add_argument("--classes", type=parse_classes, default=DEFAULT_CLASSES,
                    help="LABEL:NAME:IOU,... (default 0:car:0.5,"
                    "1:pedestrian:0.25,2:cyclist:0.25)")
    ap.add_argument("--min-points", type=int, default=DEFAULT_MIN_POINTS)
    ap.add_argument("--interpolation", choices=("r40", "all"),
                    default="r40")
    ap.add_argument("--point-channels", type=int, default=4)
    ap.add_argument("--json", help="also write the results here")
    count = commands.add_parser("count-points", help="write the truth with "
                                "each box's point count")
    count.add_argument("--truth", required=True)
    count.add_argument("--points", required=True, help="points file of frame"
                       " k, with a %%d (e.g. dir/%%06d.bin)")
    count.add_argument("--point-channels", type=int, default=4)
    count.add_argument("--output", required=True)
    args = parser.parse_args(argv)

    try:
        if args.command == "count-points":
            frames = read_frames(args.truth)
            annotate_points(frames, args.points, args.point_channels)
            write_frames(frames, args.output)
            return 0
        sequences = []
        for pair in args.pair:
            if len(pair) not in (2, 3):
                parser.error("--pair takes DETECTIONS TRUTH [POINTS]")
            truth = read_frames(pair[1])
            if len(pair) == 3:
                annotate_points(truth, pair[2], args.point_channels)
            sequences.append((read_frames(pair[0]), truth))
        point_cloud_range = args.range or read_model_range(args.weights)
        results = evaluate(sequences, point_cloud_range, args.classes,
                           args.min_points, args.interpolation)
    except (EvalError, OSError, ValueError) as error:
        print("eval_ap.py: %s" % error, file=sys.stderr)
        return 1
    print(format_table(results, args.interpolation))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as stream:
            json.dump({"interpolation": args.interpolation,
                       "min_points": args.min_points,
                       "range": point_cloud_range, "classes": results},
                      stream, indent=1)
            stream.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
