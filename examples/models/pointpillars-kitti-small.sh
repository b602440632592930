#!/bin/sh
# shellcheck disable=SC2034
# The settings of examples/models/pointpillars-kitti-small.safetensors, for
# shell scripts to source (examples/launch/cuda-pointpillars.sh): the
# CUDA-PointPillars preset, which is OpenPCDet's KITTI pointpillar.yaml
# (docs/tutorial.md, "PointPillars as CUDA-PointPillars runs it").
#
# The model is that config with 8 channels in every layer and RANDOM
# weights: its boxes mean nothing. It is there so that the preset's
# pipeline runs anywhere, the C reference path included, in seconds; bring
# your own checkpoint converted by tools/convert_openpcdet_pointpillars.py
# for real detections. It was made with
#
#   gst-launch-1.0 pointcloudtestsrc seed=900001 num-buffers=1 format=xyzi \
#     ! voxelize voxel-size="<0.16,0.16,4>" range="<0,-39.68,-3,69.12,39.68,1>" \
#         max-points=32 max-voxels=40000 \
#     ! pillarfeat features=pointpillars-10 \
#     ! "application/x-pillar-features,format=F32" ! filesink location=pillars.f32
#   python3 tests/reference/pointpillars_torch.py init --framework openpcdet \
#     --small -o small --calibrate pillars.f32 --device cpu --hit-rate 0.0002 \
#     --seed 26
#
# (torch 1.13 on the CPU; the class biases are calibrated so that about
# 0.02 % of the anchors pass the 0.1 threshold on that frame).

# the weights file, from the repository root
PP_WEIGHTS=examples/models/pointpillars-kitti-small.safetensors
# voxelize: 0.16 m pillars over x in [0, 69.12], y in [-39.68, 39.68],
# z in [-3, 1] (a 432 x 496 grid), 32 points a pillar, 40000 pillars
PP_VOXEL_SIZE="<0.16,0.16,4.0>"
PP_RANGE="<0,-39.68,-3,69.12,39.68,1>"
PP_MAX_POINTS=32
PP_MAX_VOXELS=40000
# pillarfeat: the 10 features of OpenPCDet's PillarVFE
PP_FEATURES=pointpillars-10
# labels 0, 1, 2
PP_LABELS=Car,Pedestrian,Cyclist
