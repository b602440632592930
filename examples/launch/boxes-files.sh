#!/bin/sh
# Boxes from text files: JSON lines parsed back into records, suppressed
# with circle NMS (CenterPoint), written as KITTI label lines.
set -eu
out=${OUT:-.}
gst-launch-1.0 -e pointcloudtestsrc emit=candidates num-buffers=3 ! boxenc \
  ! filesink location="$out/candidates.jsonl"
gst-launch-1.0 -e filesrc location="$out/candidates.jsonl" ! boxparse \
  ! nms mode=circle distance-threshold=1.0 ! boxenc format=kitti separate-frames=true \
  ! filesink location="$out/detections.txt"
head -3 "$out/detections.txt"
