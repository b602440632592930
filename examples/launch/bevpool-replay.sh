#!/bin/sh
# Camera features replayed from raw dumps through bevpool: the layout of
# application/x-camera-features (docs/media-types.md) is what a network's
# view-transform input holds, so dumps written by any program replay with
# multifilesrc. Here examples/make-camera-features.py writes three frames
# for the synthetic six-camera ring of examples/data/six-cameras.json
# (16 channels, 118 depth bins, 32 x 88 feature map); the BEV features go
# to $OUT/bev.raw in BEVFusion's [C][x][y] order.
set -eu
out=${OUT:-.}
here=$(dirname "$0")
python3 "$here/../make-camera-features.py" --frames 3 --channels 16 "$out/features-%02d.raw"
gst-launch-1.0 -e multifilesrc location="$out/features-%02d.raw" \
    caps="application/x-camera-features,format=F32,cameras=6,channels=16,depth-bins=118,width=88,height=32" \
  ! bevpool calibration="$here/../data/six-cameras.json" layout=xy \
  ! filesink location="$out/bev.raw"
