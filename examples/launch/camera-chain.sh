#!/bin/sh
# Six cameras to boxes: cameratestsrc renders the six cameras of the
# nuScenes-like rig (examples/data/rig-nuscenes-704x256.json) at the same
# timestamps, camencode runs a camera model's image network on the rig as
# one batch, bevpool splats its features along their depth onto the BEV
# grid, bevdetect decodes boxes, boxenc writes them as JSON lines to
# $OUT/camera-boxes.jsonl. The model is a tiny BEVDet of random weights
# that examples/make-camera-model.py writes (no PyTorch needed): it runs
# the chain, it does not detect anything real (the tutorial's section 15
# runs a calibrated BEVDet-R50 on the nuScenes demo images). On the CPU
# path a frame takes a few seconds.
#
#   examples/launch/camera-chain.sh [FRAMES]     (default 2)
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-.}
frames=${1:-2}
rig="$here/examples/data/rig-nuscenes-704x256.json"
model="$out/camera-model.safetensors"
python3 "$here/examples/make-camera-model.py" "$model"
cameras=""
for k in 0 1 2 3 4 5; do
  cameras="$cameras cameratestsrc calibration=$rig camera=$k num-buffers=$frames
    ! video/x-raw,format=RGB ! enc.sink_$k"
done
# shellcheck disable=SC2086
timeout 600 gst-launch-1.0 -q camencode name=enc weights="$model" \
  ! bevpool calibration="$rig" image-width=704 image-height=256 \
      xbound="<-51.2,51.2,0.8>" ybound="<-51.2,51.2,0.8>" \
      zbound="<-10,10,20>" dbound="<1,51,2>" \
  ! bevdetect weights="$model" ! boxenc ! filesink location="$out/camera-boxes.jsonl" \
  $cameras
# one record of boxes per set of six frames
sets=$(grep -c '"frame"' "$out/camera-boxes.jsonl")
echo "$sets sets of $frames frames from each camera"
[ "$sets" -eq "$frames" ]
