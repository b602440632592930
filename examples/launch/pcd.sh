#!/bin/sh
# A PCD file through pcdparse and voxelize. Without an argument, a sweep of
# the test source is saved as a binary PCD first (examples/bin2pcd.py).
#
#   examples/launch/pcd.sh [FILE.pcd]
set -eu
out=${OUT:-.}
here=$(dirname "$0")
if [ $# -gt 0 ]; then
  pcd=$1
else
  gst-launch-1.0 -q pointcloudtestsrc num-buffers=1 format=xyzi \
    ! filesink location="$out/sweep.bin"
  python3 "$here/../bin2pcd.py" "$out/sweep.bin" "$out/sweep.pcd"
  pcd="$out/sweep.pcd"
fi
gst-launch-1.0 -e -m filesrc location="$pcd" ! pcdparse \
  ! voxelize post-stats=true ! fakesink | grep voxelize-stats
