#!/usr/bin/env python3
"""tools/convert_mmdet3d_centerpoint.py reading the test-time settings from
the mmdetection3d config a model was trained with: a config file (with its
_base_ files, written here in mmdetection3d 1.x's layout, and a new-style
read_base one), or the config a checkpoint's meta holds; the NMS the
weights file will use said in the output, with where it came from. A
circle-NMS config converted silently to rotate NMS before (issue 25.6).

The parts that need torch (a .pth checkpoint) are skipped without it; the
config reader is plain Python.

Run by meson (suite "tools") or by hand: python3 tests/tools/test_convert.py
"""

import contextlib
import io
import json
import os
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools"))
import convert_mmdet3d_centerpoint as convert  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

# A base model file as mmdetection3d 1.x writes them (the names, nesting and
# expressions of configs/_base_/models/centerpoint_pillar02_second_secfpn_nus.py,
# smaller numbers).
BASE_MODEL = """
voxel_size = [1.0, 1.0, 8]
model = dict(
    type='CenterPoint',
    data_preprocessor=dict(
        type='Det3DDataPreprocessor',
        voxel=True,
        voxel_layer=dict(
            max_num_points=4,
            voxel_size=voxel_size,
            max_voxels=(100, 64))),
    pts_voxel_encoder=dict(
        type='PillarFeatureNet', in_channels=5, feat_channels=[4],
        with_distance=False, voxel_size=(1.0, 1.0, 8),
        norm_cfg=dict(type='BN1d', eps=1e-3, momentum=0.01), legacy=False),
    pts_middle_encoder=dict(
        type='PointPillarsScatter', in_channels=4, output_shape=(8, 8)),
    pts_backbone=dict(
        type='SECOND', in_channels=4, out_channels=[4, 6, 8],
        layer_nums=[1, 2, 0], layer_strides=[1, 2, 2],
        norm_cfg=dict(type='BN', eps=1e-3, momentum=0.01)),
    pts_neck=dict(
        type='SECONDFPN', in_channels=[4, 6, 8], out_channels=[3, 2, 3],
        upsample_strides=[0.5, 1, 2],
        norm_cfg=dict(type='BN', eps=1e-3, momentum=0.01),
        use_conv_for_no_stride=True),
    pts_bbox_head=dict(
        type='CenterHead',
        in_channels=sum([3, 2, 3]),
        tasks=[
            dict(num_class=1, class_names=['car']),
            dict(num_class=2, class_names=['pedestrian', 'cyclist']),
        ],
        common_heads=dict(
            reg=(2, 2), height=(1, 2), dim=(3, 2), rot=(2, 2), vel=(2, 2)),
        share_conv_channel=5,
        bbox_coder=dict(
            type='CenterPointBBoxCoder',
            post_center_range=[-10.0, -10.0, -10.0, 10.0, 10.0, 10.0],
            max_num=10, score_threshold=0.1, out_size_factor=2,
            voxel_size=voxel_size[:2], code_size=9),
        separate_head=dict(type='SeparateHead', init_bias=-2.19,
                           final_kernel=3, head_conv=4),
        norm_bbox=True),
    test_cfg=dict(
        pts=dict(
            post_center_limit_range=[-10.0, -10.0, -10.0, 10.0, 10.0, 10.0],
            max_per_img=10, max_pool_nms=False, min_radius=[4, 0.5],
            score_threshold=0.1, pc_range=[-4, -4], out_size_factor=2,
            voxel_size=voxel_size[:2], nms_type='rotate',
            pre_max_size=100, post_max_size=20, nms_thr=0.2)))
"""

# The training config: the base, its own point cloud range, and the circle
# variant's one line, as configs/centerpoint/*-circlenms_* do.
TRAINING = """
_base_ = ['../_base_/models/tiny_centerpoint.py']
point_cloud_range = [-4, -4, -5.0, 4, 4, 3.0]
model = dict(
    data_preprocessor=dict(
        voxel_layer=dict(point_cloud_range=point_cloud_range)),
    pts_bbox_head=dict(bbox_coder=dict(pc_range=point_cloud_range[:2])),
    test_cfg=dict(pts=dict(pc_range=point_cloud_range[:2])))
"""
CIRCLE = """
_base_ = ['./tiny.py']
model = dict(test_cfg=dict(pts=dict(nms_type='circle')))
"""
# mmengine's new-style config of the same circle variant
NEW_STYLE = """
from mmengine.config import read_base

with read_base():
    from .tiny import *

model.update(dict(test_cfg=dict(pts=dict(nms_type='circle',
                                         post_max_size=7))))
"""


class Configs(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        root = self.tmp.name
        os.makedirs(os.path.join(root, "_base_", "models"))
        os.makedirs(os.path.join(root, "tiny"))
        self.write("_base_/models/tiny_centerpoint.py", BASE_MODEL)
        self.write("tiny/tiny.py", TRAINING)
        self.write("tiny/tiny_circle.py", CIRCLE)
        self.write("tiny/tiny_new_style.py", NEW_STYLE)

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def write(self, name, text):
        with open(self.path(name), "w") as f:
            f.write(text)
        return self.path(name)

    def test_training_config(self):
        sources = {}
        config = convert.build_config(mmdet_config=self.path("tiny/tiny.py"),
                                      sources=sources)
        self.assertEqual(config["voxel_size"], [1.0, 1.0, 8])
        self.assertEqual(config["point_cloud_range"], [-4, -4, -5.0, 4, 4, 3.0])
        self.assertEqual(config["grid"], [8, 8, 1])
        # the test-time one of (training, testing)
        self.assertEqual(config["max_voxels"], 64)
        self.assertEqual(config["max_points"], 4)
        self.assertEqual(config["pfn"], {"channels": [4], "bn_eps": 1e-3})
        self.assertEqual(config["backbone"]["layer_nums"], [1, 2, 0])
        self.assertEqual(config["neck"]["upsample_strides"], [0.5, 1, 2])
        self.assertEqual(config["head"]["tasks"],
                         [{"class_names": ["car"]},
                          {"class_names": ["pedestrian", "cyclist"]}])
        self.assertEqual(config["head"]["common_heads"],
                         {"reg": 2, "height": 1, "dim": 3, "rot": 2,
                          "vel": 2})
        self.assertEqual(config["head"]["head_conv"], 4)
        self.assertEqual(config["coder"]["voxel_size"], [1.0, 1.0])
        self.assertEqual(config["coder"]["pc_range"], [-4, -4])
        self.assertEqual(config["test_nms"],
                         {"type": "rotate", "min_radius": [4, 0.5],
                          "nms_thr": 0.2, "pre_max_size": 100,
                          "post_max_size": 20})
        self.assertEqual(sources["test_nms.type"], self.path("tiny/tiny.py"))

    def test_circle_variant(self):
        for name, post_max in (("tiny/tiny_circle.py", 20),
                               ("tiny/tiny_new_style.py", 7)):
            config = convert.build_config(mmdet_config=self.path(name))
            self.assertEqual(config["test_nms"]["type"], "circle", name)
            self.assertEqual(config["test_nms"]["min_radius"], [4, 0.5])
            self.assertEqual(config["test_nms"]["post_max_size"], post_max)

    def test_later_layers_win(self):
        sources = {}
        config = convert.build_config(
            settings=['test_nms.type="rotate"'],
            mmdet_config=self.path("tiny/tiny_circle.py"), sources=sources)
        self.assertEqual(config["test_nms"]["type"], "rotate")
        self.assertEqual(sources["test_nms.type"], "--set")

    def test_print_config_says_the_nms(self):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            self.assertEqual(convert.main(
                ["--print-config", "--mmdet-config",
                 self.path("tiny/tiny_circle.py")]), 0)
        self.assertEqual(json.loads(out.getvalue())["test_nms"]["type"],
                         "circle")
        self.assertIn("test-time NMS: circle NMS (min_radius [4, 0.5]",
                      err.getvalue())
        self.assertIn("tiny_circle.py", err.getvalue())

    def test_config_is_read_not_run(self):
        marker = self.path("ran")
        hostile = self.write("tiny/hostile.py", (
            "_base_ = ['./tiny.py']\n"
            "import os\n"
            "os.system('touch %s')\n"
            "x = __import__('os').system('touch %s')\n"
            "model = dict(test_cfg=dict(pts=dict(nms_type='circle', "
            "pre_max_size=open('%s', 'w'))))\n") % (marker, marker, marker))
        config = convert.build_config(mmdet_config=hostile)
        self.assertFalse(os.path.exists(marker))
        # what could not be read is left out (pre_max_size keeps the base's
        # value); the entries beside it are read
        self.assertEqual(config["test_nms"]["type"], "circle")
        self.assertEqual(config["test_nms"]["pre_max_size"], 100)

    def test_delete_replaces(self):
        replaced = self.write("tiny/replaced.py", (
            "_base_ = ['./tiny.py']\n"
            "model = dict(test_cfg=dict(pts=dict(_delete_=True, "
            "nms_type='circle', min_radius=[1, 2])))\n"))
        values = convert.read_mmdet_config(replaced)
        self.assertEqual(values["model"]["test_cfg"]["pts"],
                         {"nms_type": "circle", "min_radius": [1, 2]})

    def test_base_cycle_refused(self):
        self.write("tiny/a.py", "_base_ = ['./b.py']\n")
        self.write("tiny/b.py", "_base_ = ['./a.py']\n")
        with self.assertRaises(convert.ConversionError):
            convert.read_mmdet_config(self.path("tiny/a.py"))

    @unittest.skipIf(torch is None, "torch is not installed")
    def test_checkpoint_meta(self):
        """A checkpoint whose meta holds the circle config converts to a
        circle-NMS file without --mmdet-config, and says so."""
        config = convert.build_config(
            mmdet_config=self.path("tiny/tiny_circle.py"))
        state = {name: torch.zeros(shape) for name, shape in
                 convert.expected_tensors(config).items()}
        # mmengine's pretty_text: the merged config, no _base_
        values = convert.read_mmdet_config(self.path("tiny/tiny_circle.py"))
        pretty = "\n".join("%s = %r" % (k, v) for k, v in values.items())
        checkpoint = self.path("epoch_1.pth")
        torch.save({"state_dict": state, "meta": {"cfg": pretty}}, checkpoint)
        output = self.path("model.safetensors")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(convert.main([checkpoint, "-o", output]), 0)
        self.assertIn("test-time NMS: circle NMS", out.getvalue())
        self.assertIn("the config in the checkpoint's meta", out.getvalue())
        with open(output, "rb") as f:
            (size,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(size))
        model = json.loads(header["__metadata__"]["p3d.model"])
        self.assertEqual(model["test_nms"]["type"], "circle")
        self.assertEqual(model["grid"], [8, 8, 1])

    @unittest.skipIf(torch is None, "torch is not installed")
    def test_default_nms_is_said_to_be_one(self):
        """Without a config that names the NMS, the output says it is the
        converter's default and how to give the right one."""
        settings = convert.settings_from_mmdet(
            convert.read_mmdet_config(self.path("tiny/tiny.py")))
        del settings["test_nms"]["type"]
        values = self.write("values.json", json.dumps(settings))
        config = convert.build_config(values)
        state = {name: torch.zeros(shape) for name, shape in
                 convert.expected_tensors(config).items()}
        checkpoint = self.path("bare.pth")
        torch.save({"state_dict": state}, checkpoint)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            self.assertEqual(convert.main(
                [checkpoint, "-o", self.path("m.safetensors"), "--config",
                 values]), 0)
        self.assertIn("test-time NMS: rotate NMS (IoU threshold 0.2)",
                      out.getvalue())
        self.assertIn("from the converter's default", out.getvalue())
        self.assertIn("--mmdet-config", err.getvalue())


if __name__ == "__main__":
    unittest.main(verbosity=2)
