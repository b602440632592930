#!/usr/bin/env python3
"""tools/train/ for PointPillars, without a GPU: the model's state_dict
against the tensors the converter expects of pointpillars.yaml, its anchors
against the placement rules of the weights file, the targets against the
decode (perfect head outputs give the true boxes back), and the checkpoint
through the converter.

Needs torch and numpy (as the training machine has) and PyYAML; exits 77
(skipped) where they are missing, as on CI.
"""

import math
import os
import random
import sys
import tempfile
import unittest

try:
    import numpy
    import torch
    import yaml  # noqa: F401
except ImportError:
    print("torch, numpy or PyYAML is not installed: skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "train"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import convert_openpcdet_pointpillars as converter  # noqa: E402
import eval_ap  # noqa: E402
import pointpillars_model as ppm  # noqa: E402
import pointpillars_weights as pp  # noqa: E402
import train_pointpillars as train  # noqa: E402

CONFIG = os.path.join(HERE, "..", "..", "tools", "train", "pointpillars.yaml")


def load():
    return converter.read_cfg(CONFIG), converter.build_config(CONFIG)


class Model(unittest.TestCase):
    def test_names_and_shapes(self):
        cfg, doc = load()
        model = ppm.PointPillar(doc)
        shapes = {k: list(v.shape) for k, v in model.state_dict().items()
                  if not k.endswith("num_batches_tracked")}
        # every tensor the converter expects, with its shape, and no other
        pp.check_tensors(doc, shapes)
        self.assertEqual(set(shapes), set(pp.expected_tensors(doc)))
        self.assertEqual(shapes["dense_head.conv_cls.weight"],
                         [18, 192, 1, 1])
        self.assertEqual(shapes["backbone_2d.blocks.0.1.weight"],
                         [32, 32, 3, 3])
        self.assertLess(sum(numpy.prod(s) for s in shapes.values()) * 4,
                        10e6)
        features = torch.zeros((3, doc["max_points"], 11))
        coords = torch.tensor([[0, 0, 5, 7], [1, 0, 95, 319], [1, 0, 0, 0]])
        model.eval()
        with torch.no_grad():
            cls, box, direction = model(features, coords, 2)
        self.assertEqual(tuple(cls.shape), (2, 18, 48, 160))
        self.assertEqual(tuple(box.shape), (2, 42, 48, 160))
        self.assertEqual(tuple(direction.shape), (2, 12, 48, 160))

    def test_anchors_follow_the_file(self):
        cfg, doc = load()
        per_class, anchors = ppm.generate_anchors(cfg, torch.device("cpu"))
        height, width = pp.validate_config(doc)
        a = anchors.view(height, width, -1, 7).double()
        k = 0
        for s in doc["head"]["anchors"]:
            for size in s["sizes"]:
                for rotation in s["rotations"]:
                    # the span placement of docs/weights.md
                    x = s["x_range"][0] + 37 * (s["x_range"][1] -
                                                s["x_range"][0]) / (width - 1)
                    y = s["y_range"][0] + 11 * (s["y_range"][1] -
                                                s["y_range"][0]) / (height - 1)
                    want = [x, y, s["bottom"] + size[2] / 2] + size + \
                        [rotation]
                    got = a[11, 37, k].tolist()
                    for w, g in zip(want, got):
                        self.assertAlmostEqual(w, g, places=4)
                    k += 1
        self.assertEqual(k, a.shape[2])


class TargetsAndDecode(unittest.TestCase):
    """Perfect head outputs made from the targets decode to the true boxes:
    the anchors, the assigner, the coder, the direction and the NMS
    agree."""

    def test_round_trip(self):
        cfg, doc = load()
        targets = ppm.Targets(cfg, torch.device("cpu"))
        draw = random.Random(5)
        frames = []
        for _ in range(2):
            boxes = []
            for lane, label, size in ((-3.5, 0, (4.5, 1.9, 1.6)),
                                      (7.0, 0, (4.3, 1.8, 1.5)),
                                      (-8.6, 2, (1.8, 0.6, 1.7)),
                                      (12.3, 1, (0.7, 0.65, 1.8))):
                x = -46.0 + draw.uniform(0, 3)
                while x < 46:
                    yaw = draw.choice([0.0, math.pi]) + draw.uniform(-0.4,
                                                                     0.4)
                    boxes.append([x, lane + draw.uniform(-0.3, 0.3),
                                  -1.73 + size[2] / 2] + list(size) +
                                 [yaw, label])
                    x += size[0] + draw.uniform(2.5, 8)
            frames.append(torch.tensor(boxes, dtype=torch.float32))
        boxes = torch.cat(frames)
        frame = torch.cat([torch.full((len(f),), b, dtype=torch.int64)
                           for b, f in enumerate(frames)])
        labels, box_targets = targets.build(boxes, frame, len(frames))
        # every object has a positive anchor of its class
        self.assertGreaterEqual(int((labels > 0).sum()), len(boxes))
        b, n = labels.shape
        classes, bins = 3, 2
        # logits: 6 at the positive anchors' class, -6 elsewhere
        cls = torch.full((b, n, classes), -6.0)
        positive = labels > 0
        cls[positive, labels[positive] - 1] = 6.0
        rot = box_targets[..., 6] + targets.anchors[None, :, 6]
        head = cfg["MODEL"]["DENSE_HEAD"]
        offset = ppm.limit_period(rot - head["DIR_OFFSET"], 0, 2 * math.pi)
        direction_bin = torch.floor(offset / math.pi).long().clamp(0, 1)
        direction = torch.nn.functional.one_hot(direction_bin, bins).float()
        h, w = targets.height, targets.width

        def maps(x):
            return x.reshape(b, h, w, -1).permute(0, 3, 1, 2)

        outputs = (maps(cls), maps(box_targets), maps(direction * 5))
        detections = train.detect(outputs, targets.anchors, cfg)
        truth = [[dict(zip(eval_ap.BOX_FIELDS, row[:7] + [1.0]),
                       label=int(row[7]), points=50) for row in f.tolist()]
                 for f in frames]
        results = eval_ap.evaluate([(detections, truth)],
                                   doc["point_cloud_range"],
                                   [(0, "car", 0.7), (1, "pedestrian", 0.5),
                                    (2, "cyclist", 0.7)])
        for name, result in results.items():
            self.assertEqual(result["ap"], 1.0, name)
        # the decoded yaw is the true one, modulo 2 pi
        worst = 0.0
        for dets, true in zip(detections, truth):
            for t in true:
                d = min(dets, key=lambda d: math.hypot(d["x"] - t["x"],
                                                       d["y"] - t["y"]))
                worst = max(worst, abs(math.remainder(d["yaw"] - t["yaw"],
                                                      2 * math.pi)))
        self.assertLess(worst, 1e-4)

    def test_losses_of_perfect_maps(self):
        cfg, doc = load()
        targets = ppm.Targets(cfg, torch.device("cpu"))
        boxes = torch.tensor([[10.0, -3.5, -0.93, 4.5, 1.9, 1.6, 0.1, 0.0]])
        labels, box_targets = targets.build(boxes, torch.zeros(1).long(), 1)
        b, n = labels.shape
        cls = torch.full((b, n, 3), -9.0)
        # (a mask then an index: torch 1.13 refuses cls[labels > 0, 0])
        cls[:, :, 0].masked_fill_(labels > 0, 9.0)
        rot = box_targets[..., 6] + targets.anchors[None, :, 6]
        bin_ = torch.floor(ppm.limit_period(rot - 0.78539, 0, 2 * math.pi) /
                           math.pi).long().clamp(0, 1)
        direction = torch.nn.functional.one_hot(bin_, 2).float() * 20
        h, w = targets.height, targets.width

        def maps(x):
            return x.reshape(b, h, w, -1).permute(0, 3, 1, 2)

        good = ppm.losses((maps(cls), maps(box_targets), maps(direction)),
                          labels, box_targets, targets.anchors, cfg)
        bad = ppm.losses((maps(cls), maps(box_targets + 0.5),
                          maps(-direction)), labels, box_targets,
                         targets.anchors, cfg)
        self.assertLess(float(good[1]), 1e-6)
        self.assertLess(float(good[2]), 1e-6)
        self.assertLess(float(good[0]), 1e-3)
        self.assertGreater(float(bad[1]), 0.5)
        self.assertGreater(float(bad[2]), 1.0)


class Conversion(unittest.TestCase):
    def test_checkpoint_converts(self):
        cfg, doc = load()
        model = ppm.PointPillar(doc)
        with tempfile.TemporaryDirectory() as tmp:
            checkpoint = os.path.join(tmp, "pp.pth")
            weights = os.path.join(tmp, "pp.safetensors")
            train.save_checkpoint(checkpoint, model, {"steps": 0})
            count = converter.convert(checkpoint, weights, doc)
            written, tensors = pp.read(weights)
        state = {k: v for k, v in model.state_dict().items()
                 if not k.endswith("num_batches_tracked")}
        self.assertEqual(count, len(state))
        self.assertEqual(written["framework"], "openpcdet")
        self.assertEqual(written["head"]["class_names"],
                         ["car", "pedestrian", "cyclist"])
        self.assertNotIn("pfn_layout", written)
        for name, value in state.items():
            data = numpy.frombuffer(tensors[name][2], "<f4").reshape(
                tensors[name][1])
            self.assertTrue(numpy.array_equal(data, value.numpy()), name)


if __name__ == "__main__":
    unittest.main(verbosity=2)
