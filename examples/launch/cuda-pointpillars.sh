#!/bin/sh
# The CUDA-PointPillars preset (docs/tutorial.md, "PointPillars as
# CUDA-PointPillars runs it"): KITTI sweeps through voxelize and pillarfeat
# with CUDA-PointPillars' settings, F16 features, an OpenPCDet PointPillars
# model in pillarencode and bevdetect (its anchor head's decode and NMS),
# the boxes as KITTI label lines, one file a frame, in $OUT/labels/. Without
# an argument the built-in test source stands in for the sweeps. The model
# is examples/models/pointpillars-kitti-small.safetensors (random weights:
# its boxes mean nothing; give your converted checkpoint as $2). On the CPU
# path a frame takes about a second.
#
#   examples/launch/cuda-pointpillars.sh [PATTERN [WEIGHTS]]
#       e.g. "velodyne/%06d.bin" pointpillars.safetensors
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/examples/models/pointpillars-kitti-small.sh"
out=${OUT:-.}
weights=${2:-$here/$PP_WEIGHTS}
if [ $# -gt 0 ]; then
  set -- multifilesrc location="$1" caps="application/x-point-cloud,format=xyzi"
else
  set -- pointcloudtestsrc seed=900001 num-buffers=2 format=xyzi
fi
mkdir -p "$out/labels"
gst-launch-1.0 -q "$@" \
  ! voxelize voxel-size="$PP_VOXEL_SIZE" range="$PP_RANGE" \
      max-points=$PP_MAX_POINTS max-voxels=$PP_MAX_VOXELS \
  ! pillarfeat features=$PP_FEATURES ! "application/x-pillar-features,format=F16" \
  ! pillarencode weights="$weights" \
  ! bevdetect weights="$weights" \
  ! boxenc format=kitti labels=$PP_LABELS \
  ! multifilesink location="$out/labels/%06d.txt"
for f in "$out"/labels/*.txt; do
  printf '%s: %s boxes\n' "$(basename "$f")" "$(wc -l < "$f")"
done
