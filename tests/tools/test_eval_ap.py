#!/usr/bin/env python3
"""tools/eval_ap.py on hand-made cases whose answers are worked out below.

Run by meson (suite "tools") with the source tree's tools/ on the path, or
by hand: python3 tests/tools/test_eval_ap.py
"""

import json
import math
import os
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
import eval_ap  # noqa: E402

RANGE = [-50.0, -20.0, -3.0, 50.0, 20.0, 1.0]
CAR, PEDESTRIAN, CYCLIST = 0, 1, 2


def box(x, y, dx=4.0, dy=2.0, yaw=0.0, label=CAR, score=1.0, points=100,
        z=-1.0, dz=1.5):
    b = {"x": x, "y": y, "z": z, "dx": dx, "dy": dy, "dz": dz, "yaw": yaw,
         "score": score, "label": label}
    if points is not None:
        b["points"] = points
    return b


def ap_of(detections, truths, interpolation="r40", name="car"):
    """AP of one class over one sequence given as lists of frames."""
    results = eval_ap.evaluate([(detections, truths)], RANGE,
                               interpolation=interpolation)
    return results[name]


class RotatedIoU(unittest.TestCase):
    def test_identical_and_half_turn(self):
        a = box(3.0, -2.0, yaw=0.3)
        self.assertAlmostEqual(eval_ap.bev_iou(a, a), 1.0, places=12)
        # a rectangle turned by pi covers the same ground
        self.assertAlmostEqual(eval_ap.bev_iou(a, box(3.0, -2.0,
                                                      yaw=0.3 + math.pi)),
                               1.0, places=12)

    def test_square_and_its_45_degree_turn(self):
        # the unit square and itself turned 45 degrees meet in a regular
        # octagon of area 2 (sqrt 2 - 1); IoU = that / (2 - that) = 1/sqrt 2
        a = box(0.0, 0.0, dx=1.0, dy=1.0)
        b = box(0.0, 0.0, dx=1.0, dy=1.0, yaw=math.pi / 4)
        octagon = eval_ap.clip_polygon(eval_ap.box_corners(a),
                                       eval_ap.box_corners(b))
        self.assertEqual(len(octagon), 8)
        self.assertAlmostEqual(eval_ap.polygon_area(octagon),
                               2 * (math.sqrt(2) - 1), places=12)
        self.assertAlmostEqual(eval_ap.bev_iou(a, b), 1 / math.sqrt(2),
                               places=12)

    def test_cross(self):
        # 4 x 2 and the same turned 90 degrees: a 2 x 2 square in common,
        # union 8 + 8 - 4
        a = box(1.0, 1.0)
        b = box(1.0, 1.0, yaw=math.pi / 2)
        self.assertAlmostEqual(eval_ap.bev_intersection(a, b), 4.0, places=12)
        self.assertAlmostEqual(eval_ap.bev_iou(a, b), 1 / 3, places=12)

    def test_diamond_on_a_corner(self):
        # A = [-1, 1]^2; B, a 2 x 2 square turned 45 degrees about (1, 1),
        # is |x - 1| + |y - 1| <= sqrt 2.  Inside A that is the right
        # triangle (1, 1), (1 - sqrt 2, 1), (1, 1 - sqrt 2): area 1.
        a = box(0.0, 0.0, dx=2.0, dy=2.0)
        b = box(1.0, 1.0, dx=2.0, dy=2.0, yaw=math.pi / 4)
        triangle = eval_ap.clip_polygon(eval_ap.box_corners(a),
                                        eval_ap.box_corners(b))
        r = 1 - math.sqrt(2)
        expected = [(1.0, 1.0), (r, 1.0), (1.0, r)]
        self.assertEqual(len(triangle), 3)
        for corner in expected:
            self.assertTrue(any(math.hypot(corner[0] - p[0],
                                           corner[1] - p[1]) < 1e-12
                                for p in triangle), (corner, triangle))
        self.assertAlmostEqual(eval_ap.bev_iou(a, b), 1 / 7, places=12)

    def test_disjoint_and_touching(self):
        a = box(0.0, 0.0)
        self.assertEqual(eval_ap.bev_iou(a, box(10.0, 0.0)), 0.0)
        # sharing an edge only: no area
        self.assertEqual(eval_ap.bev_iou(a, box(4.0, 0.0)), 0.0)

    def test_rotated_offset_against_hand_polygon(self):
        # A = 4 x 2 at the origin; B = 2 x 2 turned 90 degrees (the same
        # square) centred at (1.5, 0.5): B covers [0.5, 2.5] x [-0.5, 1.5],
        # inside A the part [0.5, 2] x [-0.5, 1]: 1.5 x 1.5 = 2.25;
        # union 8 + 4 - 2.25
        a = box(0.0, 0.0)
        b = box(1.5, 0.5, dx=2.0, dy=2.0, yaw=math.pi / 2)
        self.assertAlmostEqual(eval_ap.bev_intersection(a, b), 2.25,
                               places=12)
        self.assertAlmostEqual(eval_ap.bev_iou(a, b), 2.25 / 9.75, places=12)


class AveragePrecision(unittest.TestCase):
    def test_perfect(self):
        truths = [[box(10.0, 0.0), box(-20.0, 5.0, yaw=1.0)],
                  [box(0.0, 10.0, label=PEDESTRIAN, dx=0.7, dy=0.7)]]
        detections = [[dict(t, score=0.9) for t in frame] for frame in truths]
        for interpolation in ("r40", "all"):
            for name in ("car", "pedestrian"):
                result = ap_of(detections, truths, interpolation, name)
                self.assertEqual(result["ap"], 1.0, (interpolation, name))
        # no true cyclist: no AP, not 0 or 1
        self.assertIsNone(ap_of(detections, truths, name="cyclist")["ap"])

    def test_missed_box(self):
        # two cars, one found: recall reaches 1/2 at precision 1, so r40
        # gets 1 at the 20 recalls up to 20/40 and 0 at the 20 above
        truths = [[box(10.0, 0.0), box(-10.0, 0.0)]]
        detections = [[box(10.0, 0.0, score=0.8)]]
        self.assertAlmostEqual(ap_of(detections, truths)["ap"], 0.5)
        self.assertAlmostEqual(ap_of(detections, truths, "all")["ap"], 0.5)

    def test_false_positive_above_true_ones(self):
        # three cars over two frames; ranked: TP 0.9, FP 0.8, TP 0.7,
        # TP 0.6.  Curve (recall, precision): (1/3, 1), (1/3, 1/2),
        # (2/3, 2/3), (1, 3/4).  Envelope: 1 up to 1/3, 3/4 above.
        # all: 1/3 * 1 + 2/3 * 3/4 = 5/6.
        # r40: recalls k/40 <= 1/3 are k = 1..13 (precision 1), k = 14..40
        # get 3/4: (13 + 27 * 0.75) / 40 = 0.83125.
        truths = [[box(10.0, 0.0), box(-10.0, 0.0)], [box(0.0, 5.0)]]
        detections = [[box(10.0, 0.0, score=0.9), box(30.0, 10.0, score=0.8),
                       box(-10.0, 0.0, score=0.6)],
                      [box(0.0, 5.0, score=0.7)]]
        self.assertAlmostEqual(ap_of(detections, truths, "all")["ap"],
                               5 / 6)
        self.assertAlmostEqual(ap_of(detections, truths, "r40")["ap"],
                               0.83125)
        result = ap_of(detections, truths)
        self.assertEqual((result["detections"], result["true_positives"]),
                         (4, 3))

    def test_duplicate_is_a_false_positive(self):
        # one car found twice: the second detection finds its box taken.
        # Curve (1, 1), (1, 1/2): AP 1 for both interpolations, but the
        # duplicate is counted
        truths = [[box(10.0, 0.0)]]
        detections = [[box(10.0, 0.0, score=0.9), box(10.1, 0.0, score=0.5)]]
        result = ap_of(detections, truths)
        self.assertEqual(result["ap"], 1.0)
        self.assertEqual((result["detections"], result["true_positives"]),
                         (2, 1))
        # a poor box (shifted by 2: IoU 2 / 6) ranked above the good one:
        # (0, 0), (1, 1/2) -> 1/2
        detections = [[box(12.0, 0.0, score=0.9), box(10.0, 0.0, score=0.5)]]
        self.assertAlmostEqual(ap_of(detections, truths)["ap"], 0.5)

    def test_iou_at_the_threshold(self):
        # a 3 x 1 car and one shifted by 1 along x: 2 in common, union 4,
        # exactly 0.5 in binary floating point: a hit (IoU >= threshold)
        truths = [[box(0.0, 0.0, dx=3.0, dy=1.0)]]
        at = [[box(1.0, 0.0, dx=3.0, dy=1.0)]]
        self.assertEqual(eval_ap.bev_iou(at[0][0], truths[0][0]), 0.5)
        self.assertEqual(ap_of(at, truths)["ap"], 1.0)
        # 4 x 2 shifted by d has IoU (4 - d) / (4 + d): 0.5 at d = 4/3
        truths = [[box(0.0, 0.0)]]
        above = [[box(1.3, 0.0)]]   # 2.7 / 5.3 = 0.509
        below = [[box(1.4, 0.0)]]   # 2.6 / 5.4 = 0.481
        self.assertAlmostEqual(eval_ap.bev_iou(above[0][0], truths[0][0]),
                               2.7 / 5.3, places=12)
        self.assertEqual(ap_of(above, truths)["ap"], 1.0)
        self.assertEqual(ap_of(below, truths)["ap"], 0.0)

    def test_pedestrian_threshold_is_a_quarter(self):
        # a 1 x 1 box inside a 4 x 1 one: IoU 1/4 exactly, enough for a
        # pedestrian (0.25), not for a car (0.5)
        for label, name, expected in ((PEDESTRIAN, "pedestrian", 1.0),
                                      (CAR, "car", 0.0)):
            truths = [[box(0.0, 0.0, dx=4.0, dy=1.0, label=label)]]
            detections = [[box(1.5, 0.0, dx=1.0, dy=1.0, label=label)]]
            self.assertEqual(eval_ap.bev_iou(detections[0][0],
                                             truths[0][0]), 0.25)
            self.assertEqual(ap_of(detections, truths, name=name)["ap"],
                             expected)

    def test_wrong_class_does_not_match(self):
        truths = [[box(10.0, 0.0)]]
        detections = [[box(10.0, 0.0, label=CYCLIST)]]
        self.assertEqual(ap_of(detections, truths)["ap"], 0.0)
        self.assertEqual(ap_of(detections, truths, name="cyclist")
                         ["detections"], 1)

    def test_box_with_few_points_is_ignored(self):
        # the second car holds 4 points: not counted, and the detection on
        # it is neither a hit nor a false positive
        truths = [[box(10.0, 0.0), box(-10.0, 0.0, points=4)]]
        detections = [[box(10.0, 0.0, score=0.5),
                       box(-10.0, 0.0, score=0.9)]]
        result = ap_of(detections, truths)
        self.assertEqual(result["ap"], 1.0)
        self.assertEqual((result["true_boxes"], result["ignored_boxes"],
                          result["detections"]), (1, 1, 1))
        # with 5 points it counts: both found, AP 1, two true boxes
        truths[0][1]["points"] = 5
        result = ap_of(detections, truths)
        self.assertEqual((result["ap"], result["true_boxes"]), (1.0, 2))
        # and missed: 1/2
        self.assertAlmostEqual(ap_of([detections[0][:1]], truths)["ap"], 0.5)

    def test_outside_the_range(self):
        # a true box centred beyond x = 50 is ignored; a detection there
        # is dropped
        truths = [[box(10.0, 0.0), box(55.0, 0.0)]]
        detections = [[box(10.0, 0.0, score=0.4), box(60.0, 0.0, score=0.9)]]
        result = ap_of(detections, truths)
        self.assertEqual((result["ap"], result["true_boxes"],
                          result["ignored_boxes"], result["detections"]),
                         (1.0, 1, 1, 1))

    def test_truth_needs_points(self):
        truths = [[box(10.0, 0.0, points=None)]]
        with self.assertRaises(eval_ap.EvalError):
            ap_of([[]], truths)


class Files(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def write_jsonl(self, name, frames):
        lines = []
        for k, boxes in enumerate(frames):
            lines.append(json.dumps({"frame": k, "pts": k * 100000000,
                                     "count": len(boxes), "type": "3d"}))
            lines += [json.dumps(b) for b in boxes]
        with open(self.path(name), "w") as stream:
            stream.write("\n".join(lines) + "\n")
        return self.path(name)

    def write_points(self, name, points):
        with open(self.path(name), "wb") as stream:
            for p in points:
                stream.write(struct.pack("<4f", p[0], p[1], p[2], 0.5))

    def test_boxenc_lines_are_read(self):
        # boxenc's own example, non-finite strings included
        text = ('{"frame":0,"pts":100000000,"count":2,"type":"3d"}\n'
                '{"x":10.5,"y":2.25,"z":-0.80000001192092896,'
                '"dx":3.9000000953674316,"dy":1.6000000238418579,'
                '"dz":1.559999942779541,"yaw":1.5700000524520874,'
                '"score":0.93000000715255737,"label":0}\n'
                '{"x":"NaN","y":0.0,"z":-0.0,"dx":0.8,"dy":0.6,"dz":1.73,'
                '"yaw":"-Infinity","score":0.5,"label":1}\n'
                '{"frame":1,"pts":null,"count":0,"type":"3d"}\n')
        with open(self.path("b.jsonl"), "w") as stream:
            stream.write(text)
        frames = eval_ap.read_frames(self.path("b.jsonl"))
        self.assertEqual([len(f) for f in frames], [2, 0])
        self.assertEqual(frames[0][0]["dx"], 3.9000000953674316)
        self.assertTrue(math.isnan(frames[0][1]["x"]))
        self.assertEqual(frames[0][1]["yaw"], -math.inf)
        self.assertEqual(frames[0][1]["label"], 1)

    def test_bad_files(self):
        for text in ('{"frame":0,"count":2,"type":"3d"}\n{"x":1}\n',
                     '{"frame":0,"count":1,"type":"2d"}\n',
                     '{"x":1,"y":1,"z":1,"dx":1,"dy":1,"dz":1,"yaw":0,'
                     '"score":1,"label":0}\n',
                     '{"frame":0,"count":1,"type":"3d"}\n'):
            with open(self.path("bad.jsonl"), "w") as stream:
                stream.write(text)
            with self.assertRaises(eval_ap.EvalError, msg=text):
                eval_ap.read_frames(self.path("bad.jsonl"))

    def test_points_counted_from_the_frame_file(self):
        # car A (4 x 2 turned 90 degrees at (10, 0), z -1 +- 0.75) gets 5
        # points, car B 4; points outside: beside A, above A, far away
        inside_a = [(10.0, 0.0, -1.0), (10.9, 1.9, -0.3), (9.1, -1.9, -1.7),
                    (10.0, 2.0, -1.0), (10.5, -0.5, -0.25)]
        inside_b = [(-10.0, 3.0, -1.0)] * 4
        outside = [(11.5, 0.0, -1.0), (10.0, 0.0, 0.0), (30.0, 0.0, -1.0),
                   (-12.5, 3.0, -1.0)]
        self.write_points("000000.bin", outside[:2] + inside_a + inside_b
                          + outside[2:])
        truth = self.write_jsonl("truth.jsonl", [[
            box(10.0, 0.0, yaw=math.pi / 2, points=None),
            box(-10.0, 3.0, points=None)]])
        det = self.write_jsonl("det.jsonl", [[box(10.0, 0.0, yaw=math.pi / 2,
                                                  score=0.7, points=None)]])
        frames = eval_ap.read_frames(truth)
        eval_ap.annotate_points(frames, self.path("%06d.bin"), 4)
        self.assertEqual([b["points"] for b in frames[0]], [5, 4])
        # the same with the plain-Python counter
        points = [p for p in outside + inside_a + inside_b]
        saved, eval_ap.numpy = eval_ap.numpy, None
        try:
            self.assertEqual(eval_ap.count_points_in_boxes(points, frames[0]),
                             [5, 4])
        finally:
            eval_ap.numpy = saved
        # command line: B ignored (4 points), A found: AP 1
        out = self.path("ap.json")
        self.assertEqual(eval_ap.main(["ap", "--range"] + [str(v) for v in
                                                           RANGE]
                                      + ["--pair", det, truth,
                                         self.path("%06d.bin"),
                                         "--json", out]), 0)
        with open(out) as stream:
            car = json.load(stream)["classes"]["car"]
        self.assertEqual((car["ap"], car["true_boxes"],
                          car["ignored_boxes"]), (1.0, 1, 1))
        # count-points writes the truth back with the counts
        annotated = self.path("truth_points.jsonl")
        self.assertEqual(eval_ap.main(["count-points", "--truth", truth,
                                       "--points", self.path("%06d.bin"),
                                       "--output", annotated]), 0)
        self.assertEqual([b["points"] for b in
                          eval_ap.read_frames(annotated)[0]], [5, 4])

    def test_frame_counts_must_agree(self):
        truth = self.write_jsonl("t.jsonl", [[box(1.0, 1.0)], []])
        det = self.write_jsonl("d.jsonl", [[box(1.0, 1.0)]])
        self.assertEqual(eval_ap.main(["ap", "--range"] + [str(v) for v in
                                                           RANGE]
                                      + ["--pair", det, truth]), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
