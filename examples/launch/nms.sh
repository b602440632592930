#!/bin/sh
# NMS on a detector-like output: the test source's jittered, overlapping
# candidate boxes (8 per object and a few false positives) through
# rotated-BEV NMS; before and after written as JSON lines.
set -eu
out=${OUT:-.}
gst-launch-1.0 -e pointcloudtestsrc emit=candidates num-buffers=5 ! tee name=t \
  t. ! queue ! boxenc ! filesink location="$out/candidates.jsonl" \
  t. ! queue ! nms mode=bev-rotated iou-threshold=0.1 score-threshold=0.2 \
    ! boxenc ! filesink location="$out/detections.jsonl"
echo "candidates: $(grep -c '"score"' "$out/candidates.jsonl"), kept: $(grep -c '"score"' "$out/detections.jsonl")"
