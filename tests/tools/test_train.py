#!/usr/bin/env python3
"""tools/train/ without a GPU: pillarize.py against a brute-force oracle,
the model's state_dict names, and the training targets against the decode.

Needs torch and numpy (as the training machine has); exits 77 (skipped)
where they are missing, as on CI.  The byte-for-byte check of pillarize.py
against the elements themselves is tools/train/check_pillarize.py.
"""

import math
import os
import random
import sys
import unittest

try:
    import numpy
    import torch
except ImportError:
    print("torch or numpy is not installed: skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "train"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import centerpoint_model  # noqa: E402
import eval_ap  # noqa: E402
import pillarize  # noqa: E402
import train_centerpoint as train  # noqa: E402

f32 = numpy.float32


def oracle(points, grid):
    """voxelize + pillarfeat mmdet3d-11 of one frame, point by point in
    numpy float32 scalars: (voxels [[points]], coords [(z, y, x)],
    features [[11 floats]])."""
    rmin = [f32(v) for v in grid.range[:3]]
    size = [f32(v) for v in grid.voxel_size]
    offset = [f32(v) for v in grid.center_offset]
    cells = {}
    order = []
    for p in points:
        cell = []
        for a in range(3):
            q = (f32(p[a]) - rmin[a]) / size[a]
            if not (q >= 0 and q < f32(grid.grid[a])):
                break
            cell.append(int(q))
        else:
            key = tuple(cell)
            if key not in cells:
                if len(order) == grid.max_voxels:
                    continue
                cells[key] = []
                order.append(key)
            if len(cells[key]) < grid.max_points:
                cells[key].append([f32(v) for v in p])
    features = []
    for key in order:
        pts = cells[key]
        total = [f32(0), f32(0), f32(0)]
        for p in pts:
            total = [total[a] + p[a] for a in range(3)]
        mean = [total[a] / f32(len(pts)) for a in range(3)]
        center = [f32(key[a]) * size[a] + offset[a] for a in range(3)]
        rows = []
        for p in pts:
            extra = [p[3] if len(p) > 3 else f32(0),
                     p[4] if len(p) > 4 else f32(0)]
            rows.append(list(p[:3]) + extra
                        + [p[a] - mean[a] for a in range(3)]
                        + [p[a] - center[a] for a in range(3)])
        features.append(rows)
    return [cells[k] for k in order], [(k[2], k[1], k[0]) for k in order], \
        features


class Pillarize(unittest.TestCase):
    def random_frame(self, draw, n, channels):
        points = []
        for _ in range(n):
            kind = draw.random()
            if kind < 0.3:  # a crowded corner: more than max_points a cell
                p = [draw.uniform(0.0, 0.6), draw.uniform(-0.6, 0.0),
                     draw.uniform(-1, 0)]
            elif kind < 0.35:  # outside the range, or not a number
                p = [draw.choice([float("nan"), 9.0, -2.5, float("inf")]),
                     draw.uniform(-2, 2), 0.0]
            else:
                p = [draw.uniform(-2.05, 2.05), draw.uniform(-2.05, 2.05),
                     draw.uniform(-3.2, 1.2)]
            points.append(p + [draw.random() for _ in range(channels - 3)])
        return points

    def test_against_oracle(self):
        draw = random.Random(7)
        for channels, max_voxels in ((4, 1000), (5, 23), (3, 1000)):
            grid = pillarize.PillarGrid([0.3, 0.3, 4.0],
                                        [-1.8, -1.8, -3.0, 1.8, 1.8, 1.0],
                                        5, max_voxels)
            frames = [self.random_frame(draw, n, channels)
                      for n in (400, 0, 250)]
            flat = [p for f in frames for p in f]
            points = torch.tensor(flat, dtype=torch.float32).reshape(
                -1, channels)
            result = pillarize.pillarize(points, [len(f) for f in frames],
                                         grid)
            first = 0
            for b, frame in enumerate(frames):
                voxels, coords, features = oracle(frame, grid)
                count = int(result["voxel_counts"][b])
                self.assertEqual(count, len(voxels), (channels, b))
                rows = slice(first, first + count)
                first += count
                got_coords = result["coords"][rows].tolist()
                self.assertEqual([tuple(c[1:]) for c in got_coords], coords)
                self.assertTrue(all(c[0] == b for c in got_coords))
                self.assertEqual(result["num_points"][rows].tolist(),
                                 [len(v) for v in voxels])
                got = result["features"][rows].numpy()
                got_voxels = result["voxels"][rows].numpy()
                for v, rows_expected in enumerate(features):
                    n = len(rows_expected)
                    expected = numpy.array(rows_expected, dtype=f32)
                    self.assertEqual(got[v, :n].tobytes(),
                                     expected.tobytes(), (channels, b, v))
                    self.assertEqual(got_voxels[v, :n].tobytes(),
                                     numpy.array(voxels[v], dtype=f32)
                                     .tobytes())
                    # unused slots are +0, bit for bit
                    self.assertFalse(got[v, n:].view(numpy.uint32).any())
            if max_voxels == 23:
                self.assertEqual(result["voxel_counts"].tolist(), [23, 0, 23])

    def test_grid_rounds_as_c(self):
        # (0.75 - -0.5) / 0.5 = 2.5 exactly: C's round gives 3 cells
        # (Python's round would give 2)
        grid = pillarize.PillarGrid([0.5, 0.5, 4.0],
                                    [-0.5, -0.5, -3, 0.75, 0.75, 1], 1, 1)
        self.assertEqual(grid.grid, [3, 3, 1])


def load_config():
    with open(os.path.join(HERE, "..", "..", "tools", "train",
                           "model_config.json")) as stream:
        return train.json.load(stream)


class Model(unittest.TestCase):
    def test_state_dict_names(self):
        config = load_config()
        model = centerpoint_model.CenterPointPillar(config)
        names = model.state_dict().keys()
        expected = [
            "pts_voxel_encoder.pfn_layers.0.linear.weight",
            "pts_voxel_encoder.pfn_layers.0.norm.running_var",
            "pts_backbone.blocks.0.0.weight", "pts_backbone.blocks.0.1.bias",
            "pts_backbone.blocks.2.15.weight",
            "pts_backbone.blocks.2.16.running_mean",
            "pts_neck.deblocks.0.0.weight", "pts_neck.deblocks.2.1.weight",
            "pts_bbox_head.shared_conv.conv.weight",
            "pts_bbox_head.shared_conv.bn.running_var",
            "pts_bbox_head.task_heads.0.reg.0.conv.weight",
            "pts_bbox_head.task_heads.0.rot.0.bn.weight",
            "pts_bbox_head.task_heads.0.heatmap.1.bias"]
        for name in expected:
            self.assertIn(name, names)
        self.assertNotIn("pts_bbox_head.task_heads.0.vel.1.bias", names)
        state = model.state_dict()
        # SECONDFPN: stride 1 a 1x1 conv, 2 and 4 transposed convs
        self.assertEqual(tuple(state["pts_neck.deblocks.0.0.weight"].shape),
                         (64, 32, 1, 1))
        self.assertEqual(tuple(state["pts_neck.deblocks.2.0.weight"].shape),
                         (128, 64, 4, 4))
        self.assertEqual(tuple(state["pts_voxel_encoder.pfn_layers.0.linear."
                                     "weight"].shape), (32, 11))
        weights_mb = sum(v.numel() * 4 for k, v in state.items()
                         if "num_batches" not in k) / 1e6
        self.assertLess(weights_mb, 10.0)
        # the forward runs and gives maps of the head's size
        features = torch.zeros((3, 20, 11))
        coords = torch.tensor([[0, 0, 5, 7], [1, 0, 95, 319], [1, 0, 0, 0]])
        model.eval()
        with torch.no_grad():
            out = model(features, coords, 2)[0]
        self.assertEqual(tuple(out["heatmap"].shape), (2, 3, 48, 160))
        self.assertEqual(tuple(out["dim"].shape), (2, 3, 48, 160))


class TargetsAndDecode(unittest.TestCase):
    """Perfect head outputs made from the targets must decode to the true
    boxes: the conventions of targets, decode, flips and eval agree."""

    def setUp(self):
        self.config = load_config()
        draw = random.Random(3)
        frames = []
        for _ in range(3):
            boxes = []
            for lane, label, size in ((-3.5, 0, (4.5, 1.9, 1.6)),
                                      (7.0, 0, (4.3, 1.8, 1.5)),
                                      (-8.6, 2, (1.8, 0.6, 1.7)),
                                      (12.3, 1, (0.7, 0.65, 1.8))):
                x = -48.0 + draw.uniform(0, 3)
                while x < 48:
                    boxes.append([x, lane + draw.uniform(-0.3, 0.3),
                                  -1.73 + size[2] / 2] + list(size)
                                 + [draw.uniform(-math.pi, math.pi), label])
                    x += size[0] + draw.uniform(1.5, 8)
            frames.append(torch.tensor(boxes, dtype=torch.float32))
        self.frames = frames

    def perfect(self, frames):
        targets = train.Targets(self.config, torch.device("cpu"))
        boxes = torch.cat(frames)
        frame = torch.cat([torch.full((len(f),), b, dtype=torch.int64)
                           for b, f in enumerate(frames)])
        heat, frame, cell, target = targets.build(boxes, frame, len(frames))
        self.assertEqual(int(heat.eq(1).sum()), len(boxes))
        b, _, h, w = heat.shape
        maps = torch.zeros((b, 8, h * w))
        maps[frame, :, cell] = target
        maps = maps.view(b, 8, h, w)
        p = heat.clamp(1e-6, 1 - 1e-6)
        heads = {"heatmap": torch.log(p / (1 - p)), "reg": maps[:, 0:2],
                 "height": maps[:, 2:3], "dim": maps[:, 3:6],
                 "rot": maps[:, 6:8]}
        # the losses of perfect maps: the boxes' zero, the heatmap's small
        # (the focal loss of a gaussian is not 0 off the peaks) and well
        # below that of the same maps one cell off
        loss_heatmap, loss_bbox = train.losses([heads], heat, frame, cell,
                                               target)
        self.assertLess(float(loss_bbox), 1e-5)
        self.assertLess(float(loss_heatmap), 0.1)
        shifted = dict(heads, heatmap=torch.roll(heads["heatmap"], 1, 3))
        loss_shifted, _ = train.losses([shifted], heat, frame, cell, target)
        self.assertGreater(float(loss_shifted), 10 * float(loss_heatmap))
        return train.decode([heads], self.config)

    def truth(self, frames):
        return [[dict(zip(eval_ap.BOX_FIELDS, row[:7] + [1.0]),
                      label=int(row[7]), points=50) for row in f.tolist()]
                for f in frames]

    def ap(self, detections, frames):
        classes = [(0, "car", 0.7), (1, "pedestrian", 0.7),
                   (2, "cyclist", 0.7)]
        results = eval_ap.evaluate([(detections, self.truth(frames))],
                                   self.config["point_cloud_range"], classes)
        return {n: r["ap"] for n, r in results.items()}

    def test_round_trip(self):
        detections = self.perfect(self.frames)
        for name, ap in self.ap(detections, self.frames).items():
            self.assertEqual(ap, 1.0, name)
        best = detections[0][0]
        self.assertAlmostEqual(best["score"], 1.0, places=5)

    def test_flips(self):
        for sx, sy in ((-1.0, 1.0), (1.0, -1.0), (-1.0, -1.0)):
            flipped = [train.flip_boxes(f, sx, sy) for f in self.frames]
            # the mirrored corners of every box are the corners of its
            # flipped box
            for f, g in zip(self.frames, flipped):
                for a, b in zip(f.tolist(), g.tolist()):
                    box_a = dict(zip(eval_ap.BOX_FIELDS, a[:7] + [1.0]))
                    box_b = dict(zip(eval_ap.BOX_FIELDS, b[:7] + [1.0]))
                    corners = eval_ap.box_corners(box_b)
                    for x, y in eval_ap.box_corners(box_a):
                        self.assertTrue(any(
                            math.hypot(x * sx - u, y * sy - v) < 1e-4
                            for u, v in corners), (a, b))
            detections = self.perfect(flipped)
            for name, ap in self.ap(detections, flipped).items():
                self.assertEqual(ap, 1.0, (sx, sy, name))


if __name__ == "__main__":
    unittest.main(verbosity=2)
