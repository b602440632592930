#!/usr/bin/env python3
"""tools/train/'s camera model without a GPU: lss_pool.py's geometry and
pooling against the bevpool element itself (and the worked example of
docs/calibration.md), the data loader on frames cameratestsrc generates,
the depth targets, the model's state_dict names, BEVDet's Scale-NMS, and
the training targets against the decode on the model's grid.

Needs torch and numpy (as the training machine has); exits 77 (skipped)
where they are missing, as on CI.  The tests that run elements need
gst-launch-1.0 and the plugin (GST_PLUGIN_PATH; meson test sets it) and
skip without them.
"""

import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy
    import torch
except ImportError:
    print("torch or numpy is not installed: skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools", "train"))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import bevdet_model  # noqa: E402
import check_lss_pool  # noqa: E402
import eval_ap  # noqa: E402
import eval_camera_pipeline  # noqa: E402
import eval_pipeline  # noqa: E402
import generate_camera_data  # noqa: E402
import lss_pool  # noqa: E402
import train_bevdet  # noqa: E402
import train_centerpoint  # noqa: E402

RIG = os.path.abspath(os.path.join(ROOT, "examples", "data",
                                   "rig-nuscenes-704x256.json"))
SIX = os.path.abspath(os.path.join(ROOT, "examples", "data",
                                   "six-cameras.json"))


def load_config():
    with open(os.path.join(ROOT, "tools", "train",
                           "bevdet_config.json")) as stream:
        return json.load(stream)


def have_elements():
    if shutil.which("gst-launch-1.0") is None:
        return False
    done = subprocess.run(["gst-inspect-1.0", "bevpool"],
                          stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    return done.returncode == 0


ELEMENTS = have_elements()
needs_elements = unittest.skipUnless(
    ELEMENTS, "gst-launch-1.0 or the plugin (GST_PLUGIN_PATH) is missing")
CONVERTER = os.path.join(ROOT, "tools", "convert_bevdet.py")
CAMERA_CHAIN = ELEMENTS and os.path.exists(CONVERTER) and subprocess.run(
    ["gst-inspect-1.0", "camencode"], stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL).returncode == 0


class Geometry(unittest.TestCase):
    def test_worked_example(self):
        # docs/calibration.md: camera 0 of six-cameras.json, feature pixel
        # u 44, v 16 at bin 19 of <1,60,0.5> lands in cell (x 216, y 179)
        grid = lss_pool.BevGrid([-54, 54, 0.3], [-54, 54, 0.3], [-10, 10, 20],
                                [1, 60, 0.5], (704, 256), (88, 32))
        self.assertEqual(grid.n, [360, 360, 1])
        self.assertEqual(grid.depth_bins, 118)
        geometry = lss_pool.Geometry(lss_pool.read_calibration(SIX), grid)
        self.assertEqual(int(geometry.cell[0, 19, 16, 44]), 179 * 360 + 216)

    def test_truncation_and_floor(self):
        # one camera looking along +x from the origin: the ray of the
        # image centre at depth d is the point (d, 0, 0); with an x bound
        # starting 0.25 beyond 1 m, the 1 m point is 0.25 / 0.5 = -0.5
        # cells below it: truncation keeps it in cell 0, floor drops it
        camera = {"name": "c", "intrinsics": [[100, 0, 50, 0],
                                              [0, 100, 50, 0], [0, 0, 1, 0],
                                              [0, 0, 0, 1]],
                  "camera_to_lidar": [[0, 0, 1, 0], [-1, 0, 0, 0],
                                      [0, -1, 0, 0], [0, 0, 0, 1]],
                  "img_aug": lss_pool.IDENTITY, "image_size": None}
        for rounding, first in (("truncate", 0), ("floor", -1)):
            grid = lss_pool.BevGrid([1.25, 3.25, 0.5], [-1, 1, 2],
                                    [-1, 1, 2], [1, 3.5, 0.5], (101, 101),
                                    (3, 3), rounding)
            cells = lss_pool.Geometry([camera], grid).cell[0, :, 1, 1]
            # depths 1, 1.5, 2, 2.5, 3: t = -0.5, 0.5, 1.5, 2.5, 3.5
            self.assertEqual(cells.tolist(), [first, 0, 1, 2, 3])

    @needs_elements
    def test_counts_equal_element(self):
        config = load_config()
        with tempfile.TemporaryDirectory() as work:
            for rounding in ("truncate", "floor"):
                grid = bevdet_model.grid_of(config)
                grid.rounding = rounding
                problems, points, cells = check_lss_pool.check_counts(
                    "gst-launch-1.0", grid, RIG, 6, "cpu", work)
                self.assertEqual(problems, [], rounding)
                self.assertGreater(points, 100000)
                self.assertGreater(cells, 5000)

    @needs_elements
    def test_comparison_sees_a_wrong_rule(self):
        # the element with truncation against lss_pool's floor geometry
        # (the lower bound of the rig's y axis is crossed by the side
        # cameras' rays, so the two rules differ in the first row)
        config = load_config()
        grid = bevdet_model.grid_of(config)
        floor = bevdet_model.grid_of(config)
        floor.rounding = "floor"
        with tempfile.TemporaryDirectory() as work:
            fw, fh = grid.feature_size
            features = numpy.ones((6, fh, fw, 1), numpy.float32)
            depth = numpy.ones((6, grid.depth_bins, fh, fw), numpy.float32)
            element = check_lss_pool.run_bevpool(
                "gst-launch-1.0", grid, RIG, "cpu", features, depth, work,
                "counts")
        counts = lss_pool.Geometry(lss_pool.read_calibration(RIG),
                                   floor).counts()
        self.assertFalse(numpy.array_equal(element, counts.reshape(
            element.shape)))

    @needs_elements
    def test_frame_equals_element(self):
        config = load_config()
        with tempfile.TemporaryDirectory() as work:
            problems, worst, nonzero = check_lss_pool.check_frame(
                "gst-launch-1.0", config, RIG, "cpu", 900001,
                torch.device("cpu"), work)
        self.assertEqual(problems, [])
        self.assertLess(worst, check_lss_pool.RELATIVE)
        self.assertGreater(nonzero, 100000)


class Pooling(unittest.TestCase):
    def test_against_brute_force(self):
        # a small random grid: lss_pool.Pool against a loop over every
        # frustum point of the geometry, in float64
        grid = lss_pool.BevGrid([-8, 8, 1], [-8, 8, 1], [-3, 3, 3],
                                [1, 9, 1], (64, 32), (8, 4))
        cameras = lss_pool.read_calibration(SIX)[:2]
        geometry = lss_pool.Geometry(cameras, grid)
        generator = torch.Generator().manual_seed(5)
        depth = torch.rand((2, 2, 8, 4, 8), generator=generator)
        features = torch.randn((2, 2, 4, 8, 3), generator=generator)
        got = lss_pool.Pool(geometry)(depth, features)
        nx, ny, nz = grid.n
        self.assertEqual(tuple(got.shape), (2, 3 * nz, ny, nx))
        expected = numpy.zeros((2, nz, 3, ny, nx))
        for (n, d, v, u), cell in numpy.ndenumerate(geometry.cell):
            if cell < 0:
                continue
            z, rest = divmod(int(cell), ny * nx)
            y, x = divmod(rest, nx)
            for b in range(2):
                expected[b, z, :, y, x] += float(depth[b, n, d, v, u]) \
                    * features[b, n, v, u].double().numpy()
        expected = expected.reshape(2, 3 * nz, ny, nx)
        self.assertGreater(numpy.count_nonzero(expected), 50)
        numpy.testing.assert_allclose(got.numpy(), expected, rtol=1e-5,
                                      atol=1e-5)

    def test_gradients(self):
        # the training's gradients: for L = sum(weight x output), each
        # depth probability's is its point's cell weight . its pixel's
        # features, each feature's the sum over its pixel's points of
        # depth x cell weight
        grid = lss_pool.BevGrid([-8, 8, 1], [-8, 8, 1], [-3, 3, 6],
                                [1, 9, 1], (64, 32), (8, 4))
        geometry = lss_pool.Geometry(lss_pool.read_calibration(SIX)[:2],
                                     grid)
        generator = torch.Generator().manual_seed(9)
        depth = torch.rand((1, 2, 8, 4, 8), generator=generator,
                           requires_grad=True)
        features = torch.randn((1, 2, 4, 8, 2), generator=generator,
                               requires_grad=True)
        out = lss_pool.Pool(geometry)(depth, features)
        weight = torch.randn(out.shape, generator=generator)
        (out * weight).sum().backward()
        nx, ny, _ = grid.n
        w = weight[0].reshape(2, ny * nx).double().numpy()
        f = features[0].detach().double().numpy()
        dd = numpy.zeros((2, 8, 4, 8))
        df = numpy.zeros((2, 4, 8, 2))
        for (n, d, v, u), cell in numpy.ndenumerate(geometry.cell):
            if cell < 0:
                continue
            dd[n, d, v, u] = w[:, cell] @ f[n, v, u]
            df[n, v, u] += float(depth[0, n, d, v, u]) * w[:, cell]
        self.assertGreater(numpy.count_nonzero(dd), 20)
        numpy.testing.assert_allclose(depth.grad[0].numpy(), dd, rtol=1e-5,
                                      atol=1e-5)
        numpy.testing.assert_allclose(features.grad[0].numpy(), df,
                                      rtol=1e-5, atol=1e-5)


@needs_elements
class Loader(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp()
        generate_camera_data.main(["--out", cls.work, "--train-seeds", "1",
                                   "--train-frames", "2", "--heldout-seeds",
                                   "1", "--heldout-frames", "1", "--jobs",
                                   "2"])
        with open(os.path.join(cls.work, "manifest.json")) as stream:
            cls.manifest = json.load(stream)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work)

    def test_frames(self):
        config = load_config()
        grid = bevdet_model.grid_of(config)
        entries = [s for s in self.manifest["seeds"] if s["set"] == "train"]
        frames = train_bevdet.FrameSet(entries, 6, grid,
                                       torch.device("cpu"), 2, False)
        self.assertEqual(len(frames), 2)
        self.assertEqual(tuple(frames.images.shape), (2, 6, 256, 704, 3))
        directory = entries[0]["dir"]
        for k in range(2):
            for camera in (0, 5):
                raw = numpy.fromfile(os.path.join(
                    directory, "cam%d-%06d.rgb" % (camera, k)), numpy.uint8)
                self.assertEqual(frames.images[k, camera].numpy().tobytes(),
                                 raw.tobytes())
                full = numpy.fromfile(os.path.join(
                    directory, "depth%d-%06d.raw" % (camera, k)), "<u2") \
                    .reshape(256, 704)
                # the rays of bevpool's frustum: columns u x 703 / 43 and
                # rows v x 255 / 15, to the nearest pixel
                for u, column in ((0, 0), (1, 16), (21, 343), (43, 703)):
                    for v, row in ((0, 0), (7, 119), (15, 255)):
                        self.assertAlmostEqual(
                            float(frames.depth[k, camera, v, u]),
                            full[row, column] / 1000.0, places=6)
            truth = eval_ap.read_frames(os.path.join(directory,
                                                     "truth.jsonl"))[k]
            self.assertEqual(frames.boxes[k].shape[0], len(truth))
            self.assertEqual(frames.boxes[k][:, 7].tolist(),
                             [float(b["label"]) for b in truth])
            # the lidar points in each box, as eval_ap counts them
            points = eval_ap.read_points(os.path.join(
                directory, "%06d.bin" % k), 4)
            expected = eval_ap.count_points_in_boxes(points, truth)
            self.assertEqual(frames.box_points[k].tolist(), expected)
            self.assertGreater(sum(expected), 100)
        # the sky has no depth, the ground in front of the cameras has
        self.assertEqual(float(frames.depth[0, 0, 0, 21]), 0.0)
        self.assertGreater(float(frames.depth[0, 0, 15, 21]), 1.0)


class DepthTargets(unittest.TestCase):
    def test_hand_worked(self):
        grid = lss_pool.BevGrid([-1, 1, 1], [-1, 1, 1], [-1, 1, 2],
                                [1.0, 52.0, 0.5], (704, 256), (44, 16))
        depth = torch.tensor([[[1.25, 0.0, 51.5, 51.6, 0.9, 10.0, 3.1]]])
        target, valid = train_bevdet.depth_targets(depth, grid)
        self.assertEqual(tuple(target.shape), (1, 102, 1, 7))
        self.assertEqual(valid[0, 0].tolist(),
                         [True, False, True, False, False, True, True])
        t = target[0, :, 0]
        self.assertAlmostEqual(float(t[0, 0]), 0.5, places=6)
        self.assertAlmostEqual(float(t[1, 0]), 0.5, places=6)
        self.assertAlmostEqual(float(t[101, 2]), 1.0, places=6)
        self.assertAlmostEqual(float(t[18, 5]), 1.0, places=6)
        # 3.1 m: bin 4 (3.0 m) 0.8, bin 5 (3.5 m) 0.2
        self.assertAlmostEqual(float(t[4, 6]), 0.8, places=5)
        self.assertAlmostEqual(float(t[5, 6]), 0.2, places=5)
        self.assertEqual(float(t[:, 1].sum()), 0.0)
        self.assertEqual(float(t[:, 3].sum()), 0.0)
        # every valid ray's distribution sums to 1 and its mean is the depth
        bins = torch.arange(102).float() * 0.5 + 1.0
        for i in (0, 2, 5, 6):
            self.assertAlmostEqual(float(t[:, i].sum()), 1.0, places=5)
            self.assertAlmostEqual(float((t[:, i] * bins).sum()),
                                   float(depth[0, 0, i]), places=4)

    def test_loss(self):
        grid = lss_pool.BevGrid([-1, 1, 1], [-1, 1, 1], [-1, 1, 2],
                                [1.0, 6.0, 1.0], (4, 4), (2, 1))
        depth = torch.tensor([[[2.5, 0.0]]])
        target, valid = train_bevdet.depth_targets(depth, grid)
        right = torch.log(target.clamp(min=1e-9))
        wrong = torch.roll(right, 2, dims=1)
        best = float(train_bevdet.depth_loss(right, target, valid))
        # the cross-entropy of the target with itself is its entropy, ln 2
        self.assertAlmostEqual(best, math.log(2), places=4)
        self.assertGreater(float(train_bevdet.depth_loss(wrong, target,
                                                         valid)), best + 5)
        # the ray without depth does not count
        other = right.clone()
        other[..., 1] = torch.randn(5, 1)
        self.assertAlmostEqual(float(train_bevdet.depth_loss(
            other, target, valid)), best, places=5)


class Model(unittest.TestCase):
    def test_state_dict_names(self):
        config = load_config()
        model = bevdet_model.BEVDet(config, lss_pool.read_calibration(RIG))
        state = model.state_dict()
        expected = {
            "img_backbone.conv1.weight": (24, 3, 7, 7),
            "img_backbone.bn1.running_var": (24,),
            "img_backbone.layer1.0.conv1.weight": (24, 24, 3, 3),
            "img_backbone.layer2.0.downsample.0.weight": (48, 24, 1, 1),
            "img_backbone.layer2.0.downsample.1.running_mean": (48,),
            "img_backbone.layer4.1.bn2.weight": (192,),
            "img_neck.lateral_convs.0.conv.weight": (96, 96, 1, 1),
            "img_neck.lateral_convs.1.conv.bias": (96,),
            "img_neck.fpn_convs.0.conv.weight": (96, 96, 3, 3),
            "img_view_transformer.depthnet.weight": (166, 96, 1, 1),
            "img_view_transformer.depthnet.bias": (166,),
            "img_view_transformer.frustum": (102, 16, 44, 3),
            "img_view_transformer.dx": (3,),
            "img_bev_encoder_backbone.layers.0.0.conv1.weight":
                (64, 64, 3, 3),
            "img_bev_encoder_backbone.layers.0.0.downsample.weight":
                (64, 64, 3, 3),
            "img_bev_encoder_backbone.layers.0.0.downsample.bias": (64,),
            "img_bev_encoder_backbone.layers.2.1.bn2.running_var": (128,),
            "img_bev_encoder_neck.conv.0.weight": (128, 192, 3, 3),
            "img_bev_encoder_neck.conv.4.running_mean": (128,),
            "img_bev_encoder_neck.up2.1.weight": (64, 128, 3, 3),
            "img_bev_encoder_neck.up2.2.weight": (64,),
            "img_bev_encoder_neck.up2.4.weight": (64, 64, 1, 1),
            "img_bev_encoder_neck.up2.4.bias": (64,),
            "pts_bbox_head.shared_conv.conv.weight": (64, 64, 3, 3),
            "pts_bbox_head.task_heads.0.heatmap.1.bias": (3,),
            "pts_bbox_head.task_heads.0.rot.0.bn.weight": (32,)}
        for name, shape in expected.items():
            self.assertIn(name, state)
            self.assertEqual(tuple(state[name].shape), shape, name)
        self.assertFalse(any(".pool." in k for k in state))
        self.assertFalse(any("vel" in k for k in state))
        self.assertFalse(any("img_backbone.layer4.1.conv3" in k
                             for k in state))
        # BEVDet's frustum: linspace columns and rows, arange depths
        frustum = state["img_view_transformer.frustum"]
        self.assertAlmostEqual(float(frustum[0, 0, 43, 0]), 703.0, places=3)
        self.assertAlmostEqual(float(frustum[101, 15, 0, 2]), 51.5,
                               places=5)
        parameters = sum(p.numel() for p in model.parameters()
                         if p.requires_grad)
        self.assertLess(parameters * 4 / 1e6, 16.0)

    def test_forward(self):
        config = load_config()
        model = bevdet_model.BEVDet(config, lss_pool.read_calibration(RIG))
        model.eval()
        with torch.no_grad():
            outputs, logits = model(torch.zeros((1, 6, 3, 256, 704)))
        self.assertEqual(tuple(logits.shape), (6, 102, 16, 44))
        out = outputs[0]
        self.assertEqual(tuple(out["heatmap"].shape), (1, 3, 80, 256))
        self.assertEqual(tuple(out["dim"].shape), (1, 3, 80, 256))

    def test_config_checks(self):
        config = load_config()
        cameras = lss_pool.read_calibration(RIG)
        train_bevdet.check_config(config, cameras)
        bad = json.loads(json.dumps(config))
        bad["coder"]["out_size_factor"] = 8
        with self.assertRaises(ValueError):
            train_bevdet.check_config(bad, cameras)
        bad = json.loads(json.dumps(config))
        bad["data_config"]["cams"] = bad["data_config"]["cams"][::-1]
        with self.assertRaises(ValueError):
            train_bevdet.check_config(bad, cameras)
        bad = json.loads(json.dumps(config))
        bad["img_bev_encoder_neck"]["in_channels"] = 160
        with self.assertRaises(ValueError):
            bevdet_model.BEVDet(bad, cameras)


def tiny_config():
    """The camera model's config made tiny (the same structure, a few
    channels, a coarse grid), so that its C reference path runs a frame
    in seconds."""
    config = load_config()
    config["grid_config"].update(xbound=[-51.2, 51.2, 0.8],
                                 ybound=[-16.0, 16.0, 0.8],
                                 dbound=[1.0, 52.0, 2.0])
    config["img_backbone"].update(base_channels=8, stem_channels=8)
    config["img_neck"].update(in_channels=[32, 64], out_channels=16)
    config["img_view_transformer"].update(numC_input=16, numC_Trans=8)
    config["img_bev_encoder_backbone"].update(numC_input=8,
                                              num_channels=[8, 16, 16])
    config["img_bev_encoder_neck"].update(in_channels=24, out_channels=8)
    config["head"].update(share_conv_channel=8, head_conv=8)
    config["coder"]["out_size_factor"] = 8
    # every box the NMS keeps: the comparison sees no cut at a count
    config["test_nms"]["post_max_size"] = 1000
    return config


@unittest.skipUnless(CAMERA_CHAIN, "tools/convert_bevdet.py or camencode "
                     "is missing (the bevdet and camencode branches)")
class CameraPipeline(unittest.TestCase):
    """A camera model in PyTorch and the same model converted, through
    cameratestsrc x 6 ! camencode ! bevpool ! bevdetect (the C reference
    path), give the same boxes on a frame of the street: the checkpoint's
    names, the conversion, the image preprocessing, the pooling and the
    decode all agree."""

    def test_boxes(self):
        config = tiny_config()
        cameras = lss_pool.read_calibration(RIG)
        torch.manual_seed(3)
        model = bevdet_model.BEVDet(config, cameras)
        generator = torch.Generator().manual_seed(4)
        with torch.no_grad():
            # BatchNorm statistics and affines of a trained net's sort, and
            # a heatmap bias that leaves many cells above the threshold
            for module in model.modules():
                if isinstance(module, torch.nn.BatchNorm2d):
                    module.running_mean.normal_(0, 0.2, generator=generator)
                    module.running_var.uniform_(0.5, 2.0,
                                                generator=generator)
                    module.weight.uniform_(0.5, 1.5, generator=generator)
                    module.bias.normal_(0, 0.1, generator=generator)
            model.pts_bbox_head.task_heads[0].heatmap[1].bias.fill_(-1.2)
        model.eval()
        scene = {"framerate": 10, "cars": 16, "pedestrians": 12,
                 "cyclists": 4}
        entry = {"seed": 900001, "scene": scene}
        with tempfile.TemporaryDirectory() as work:
            line = []
            for k in range(len(cameras)):
                line += (["cameratestsrc", "calibration=" + RIG,
                          "camera=%d" % k]
                         + generate_camera_data.street_arguments(
                             entry["seed"], scene, 1)
                         + ["!", "video/x-raw,format=RGB", "!", "filesink",
                            "location=" + os.path.join(work, "%d.rgb" % k)])
            subprocess.run(["gst-launch-1.0", "-q"] + line, check=True)
            images = numpy.stack([numpy.fromfile(
                os.path.join(work, "%d.rgb" % k), numpy.uint8).reshape(
                    256, 704, 3) for k in range(len(cameras))])
            normalise = train_bevdet.Normalise(config, torch.device("cpu"))
            with torch.no_grad():
                outputs, _ = model(normalise(
                    torch.from_numpy(images).unsqueeze(0)))
            expected = train_bevdet.decode(outputs, config)
            config_path = os.path.join(work, "config.json")
            with open(config_path, "w") as stream:
                json.dump(config, stream)
            checkpoint = os.path.join(work, "model.pth")
            train_centerpoint.save_checkpoint(checkpoint, model, config, {})
            self.assertIsNotNone(train_bevdet.convert(
                CONVERTER, checkpoint, config_path,
                os.path.join(work, "model.safetensors")))
            weights = os.path.join(work, "model.safetensors")
            chain = eval_camera_pipeline.chain_words(
                eval_pipeline.read_model(weights), weights, "cpu", RIG)
            found = os.path.join(work, "boxes.jsonl")
            subprocess.run(
                ["timeout", "600", "gst-launch-1.0", "-q"]
                + eval_camera_pipeline.pipeline(entry, 1, chain, RIG,
                                                len(cameras), found),
                check=True)
            got = eval_ap.read_frames(found)
        self.assertEqual(len(got), 1)
        strong = sum(1 for b in expected[0] if b["score"] >= 0.2)
        self.assertGreater(strong, 5)
        agreement = eval_camera_pipeline.compare_detections(
            expected, got, min_score=0.2, radius=0.05)
        self.assertEqual(agreement["missed"], 0, agreement)
        self.assertEqual(agreement["matched"], strong)
        worst = agreement["largest_difference"]
        self.assertLess(worst["centre"], 1e-3, agreement)
        self.assertLess(worst["size"], 1e-3, agreement)
        self.assertLess(worst["score"], 1e-4, agreement)


class Settings(unittest.TestCase):
    """examples/models/bevdet-synthetic.sh, which the demo sources, says
    what bevdet_config.json says."""

    def read_settings(self):
        values = {}
        with open(os.path.join(ROOT, "examples", "models",
                               "bevdet-synthetic.sh")) as stream:
            for line in stream:
                if line.startswith("BD_"):
                    name, value = line.rstrip("\n").split("=", 1)
                    values[name] = value.strip('"')
        return values

    @staticmethod
    def properties(words):
        out = {}
        for word in words:
            name, value = word.split("=", 1)
            out[name] = [float(v) for v in value.strip("<>").split(",")]
        return out

    def test_settings(self):
        config = load_config()
        values = self.read_settings()
        self.assertEqual(self.properties(values["BD_BEVPOOL"].split()),
                         self.properties(
                             eval_camera_pipeline.bevpool_properties(config)))
        self.assertEqual(int(values["BD_CAMERAS"]),
                         config["data_config"]["Ncams"])
        cameras = lss_pool.read_calibration(os.path.join(
            ROOT, values["BD_RIG"]))
        self.assertEqual([c["name"] for c in cameras],
                         config["data_config"]["cams"])
        self.assertEqual(values["BD_CLASSES"].split(),
                         config["head"]["tasks"][0]["class_names"])
        self.assertEqual(values["BD_WEIGHTS"],
                         "examples/models/bevdet-synthetic.safetensors")


def box(x, y, label, score, dx=0.7, dy=0.7, yaw=0.0):
    return {"x": x, "y": y, "z": -0.8, "dx": dx, "dy": dy, "dz": 1.7,
            "yaw": yaw, "score": score, "label": label}


class ScaleNms(unittest.TestCase):
    def test_rescale(self):
        # two pedestrian boxes 0.5 m apart: BEV IoU 0.2 / 0.84 = 0.167
        # unscaled, kept both at nms_thr 0.2; at twice their size 0.9 x 1.4
        # / (2 x 1.96 - 1.26) = 0.47: the weaker one goes
        pair = [box(0.0, 0.0, 1, 0.9), box(0.5, 0.0, 1, 0.8)]
        plain = {"nms_thr": 0.2, "pre_max_size": 100, "post_max_size": 100}
        self.assertEqual(len(train_bevdet.scale_nms(pair, plain)), 2)
        scaled = dict(plain, nms_rescale_factor=[[1.0, 2.0, 1.5]])
        kept = train_bevdet.scale_nms(pair, scaled)
        self.assertEqual(len(kept), 1)
        # the kept box comes back at its own size
        self.assertEqual(kept[0], pair[0])
        # the factor is the class's: two cars 0.5 m apart overlap anyway,
        # two car-labelled small boxes are not rescaled
        cars = [box(0.0, 0.0, 0, 0.9), box(0.5, 0.0, 0, 0.8)]
        self.assertEqual(len(train_bevdet.scale_nms(cars, scaled)), 2)
        # pre and post max sizes, best first
        many = [box(3.0 * i, 0.0, 1, 0.1 * i) for i in range(1, 8)]
        kept = train_bevdet.scale_nms(many, dict(scaled, pre_max_size=5,
                                                 post_max_size=3))
        self.assertEqual([b["score"] for b in kept],
                         [0.1 * i for i in (7, 6, 5)])


class TargetsAndDecode(unittest.TestCase):
    """Perfect head outputs made from the targets on the camera model's
    grid must decode to the true boxes (coder, grid and Scale-NMS agree)."""

    def test_round_trip(self):
        config = load_config()
        heads = train_bevdet.head_config(config)
        self.assertEqual(heads["grid"], [1024, 320, 1])
        draw = random.Random(11)
        frames = []
        for _ in range(2):
            boxes = []
            for lane, label, size in ((-3.5, 0, (4.5, 1.9, 1.6)),
                                      (7.0, 0, (4.3, 1.8, 1.5)),
                                      (-8.6, 2, (1.8, 0.6, 1.7)),
                                      (11.2, 1, (0.7, 0.65, 1.8)),
                                      (12.3, 1, (0.65, 0.7, 1.7))):
                x = -50.0 + draw.uniform(0, 3)
                # the street's tracks: pedestrians on tracks 1.1 m apart
                # (the Scale-NMS must keep both)
                while x < 50:
                    boxes.append([x, lane, -1.73 + size[2] / 2] + list(size)
                                 + [draw.uniform(-math.pi, math.pi), label])
                    x += size[0] + draw.uniform(1.5, 8)
            frames.append(torch.tensor(boxes, dtype=torch.float32))
        targets = train_centerpoint.Targets(heads, torch.device("cpu"))
        all_boxes = torch.cat(frames)
        frame = torch.cat([torch.full((len(f),), b, dtype=torch.int64)
                           for b, f in enumerate(frames)])
        heat, frame, cell, target = targets.build(all_boxes, frame, 2)
        self.assertEqual(tuple(heat.shape), (2, 3, 80, 256))
        self.assertEqual(int(heat.eq(1).sum()), len(all_boxes))
        maps = torch.zeros((2, 8, 80 * 256))
        maps[frame, :, cell] = target
        maps = maps.view(2, 8, 80, 256)
        p = heat.clamp(1e-6, 1 - 1e-6)
        outputs = [{"heatmap": torch.log(p / (1 - p)), "reg": maps[:, 0:2],
                    "height": maps[:, 2:3], "dim": maps[:, 3:6],
                    "rot": maps[:, 6:8]}]
        detections = train_bevdet.decode(outputs, config)
        truth = [[dict(zip(eval_ap.BOX_FIELDS, row[:7] + [1.0]),
                       label=int(row[7]), points=50) for row in f.tolist()]
                 for f in frames]
        results = eval_ap.evaluate(
            [(detections, truth)], train_bevdet.model_range(config),
            [(0, "car", 0.7), (1, "pedestrian", 0.7), (2, "cyclist", 0.7)])
        for name, result in results.items():
            self.assertEqual(result["ap"], 1.0, name)
        # every peak gives its box (the cells around a peak give weaker,
        # unit-size boxes: the perfect maps regress only the peaks)
        peaks = sum(1 for f in detections for d in f if d["score"] > 0.99)
        self.assertEqual(peaks, len(all_boxes))


if __name__ == "__main__":
    unittest.main(verbosity=2)
