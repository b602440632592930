#!/bin/sh
# shellcheck disable=SC2034
# The settings of the PointPillars model,
# examples/models/pointpillars-synthetic.safetensors (docs/model.md, "The
# PointPillars model"; an OpenPCDet PointPillar with an anchor head, trained
# by tools/train/train_pointpillars.py), for shell scripts to source: the
# voxelize and pillarfeat properties it was trained with. They are
# tools/train/pointpillars.yaml's values; pillarencode refuses input made
# with other ones, naming the field, both values and the property to set.
#
#   . examples/models/pointpillars-synthetic.sh
#   gst-launch-1.0 ... ! voxelize voxel-size="$PP_VOXEL_SIZE" \
#       range="$PP_RANGE" max-points=$PP_MAX_POINTS max-voxels=$PP_MAX_VOXELS \
#       ! pillarfeat features=$PP_FEATURES ! pillarencode weights="$PP_WEIGHTS" \
#       ! bevdetect weights="$PP_WEIGHTS" ! boxenc ! ...

# the weights file, from the repository root
PP_WEIGHTS=examples/models/pointpillars-synthetic.safetensors
# voxelize: the CenterPoint model's street area and 0.32 m pillars (a 320 x
# 96 grid)
PP_VOXEL_SIZE="<0.32,0.32,4.0>"
PP_RANGE="<-51.2,-15.36,-3,51.2,15.36,1>"
PP_MAX_POINTS=20
PP_MAX_VOXELS=30720
# pillarfeat: OpenPCDet's PillarVFE with absolute xyz and distance off, as
# CUDA-PointPillars computes it
PP_FEATURES=pointpillars-10
# labels 0, 1, 2 (pointcloudtestsrc emit=boxes writes the same)
PP_CLASSES="car pedestrian cyclist"
