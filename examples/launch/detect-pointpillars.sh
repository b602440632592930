#!/bin/sh
# Lidar in, boxes out through an anchor head: the PointPillars model trained
# here (examples/models/pointpillars-synthetic.safetensors, docs/model.md)
# on the built-in synthetic lidar, a held-out seed it never saw in
# training, with the model's voxelize and pillarfeat settings; the boxes as
# JSON lines in $OUT/detections-pointpillars.jsonl, then one line per frame
# with the boxes found and the true boxes in the model's area (exit status
# 1 when there is none at all).
# On the CPU path a frame takes about a second; on a GPU, under a millisecond.
#
#   examples/launch/detect-pointpillars.sh [FRAMES]     (default 2)
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/examples/models/pointpillars-synthetic.sh"
# cp_summary: the same classes and area as the CenterPoint model
. "$here/examples/models/centerpoint-synthetic.sh"
out=${OUT:-.}
frames=${1:-2}
gst-launch-1.0 -q pointcloudtestsrc seed=900002 num-buffers="$frames" \
  ! voxelize voxel-size="$PP_VOXEL_SIZE" range="$PP_RANGE" \
      max-points="$PP_MAX_POINTS" max-voxels="$PP_MAX_VOXELS" \
  ! pillarfeat features="$PP_FEATURES" \
  ! pillarencode weights="$here/$PP_WEIGHTS" \
  ! bevdetect weights="$here/$PP_WEIGHTS" \
  ! boxenc ! filesink location="$out/detections-pointpillars.jsonl"
gst-launch-1.0 -q pointcloudtestsrc seed=900002 num-buffers="$frames" \
    emit=boxes ! boxenc ! filesink location="$out/truth-pointpillars.jsonl"
cp_summary "$out/detections-pointpillars.jsonl" "$out/truth-pointpillars.jsonl"
grep -q '"label"' "$out/detections-pointpillars.jsonl" || {
  echo "the model found no box"
  exit 1
}
