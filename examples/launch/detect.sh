#!/bin/sh
# Lidar in, boxes out: the shipped CenterPoint-pillar model
# (examples/models/centerpoint-synthetic.safetensors, docs/model.md) on the
# built-in synthetic lidar, a held-out seed it never saw in training:
# voxelize and pillarfeat with the model's settings, pillarencode and
# bevdetect with its weights, the boxes as JSON lines in
# $OUT/detections.jsonl, then one line per frame with the boxes found
# (exit status 1 when there is none at all).
# On the CPU path a frame takes a few seconds; on a GPU, milliseconds.
#
#   examples/launch/detect.sh [FRAMES]     (default 2)
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/examples/models/centerpoint-synthetic.sh"
out=${OUT:-.}
frames=${1:-2}
gst-launch-1.0 -q pointcloudtestsrc seed=900001 num-buffers="$frames" \
  ! voxelize voxel-size="$CP_VOXEL_SIZE" range="$CP_RANGE" \
      max-points="$CP_MAX_POINTS" max-voxels="$CP_MAX_VOXELS" \
  ! pillarfeat features="$CP_FEATURES" \
  ! pillarencode weights="$here/$CP_WEIGHTS" \
  ! bevdetect weights="$here/$CP_WEIGHTS" \
  ! boxenc ! filesink location="$out/detections.jsonl"
cp_summary "$out/detections.jsonl"
# a model that finds nothing on its own street is broken: say so
grep -q '"label"' "$out/detections.jsonl" || {
  echo "the model found no box"
  exit 1
}
