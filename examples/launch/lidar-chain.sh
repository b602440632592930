#!/bin/sh
# The lidar chain on files: KITTI velodyne sweeps (float32 x, y, z,
# intensity, no header) through voxelize and pillarfeat, the PointPillars
# network input written as F16 records (docs/media-types.md) to
# $OUT/pillar-features.raw. Without an argument the built-in test source
# stands in for the files.
#
#   examples/launch/lidar-chain.sh [PATTERN]   e.g. "velodyne/%06d.bin"
set -eu
out=${OUT:-.}
if [ $# -gt 0 ]; then
  set -- multifilesrc location="$1" caps="application/x-point-cloud,format=xyzi"
else
  set -- pointcloudtestsrc num-buffers=10
fi
gst-launch-1.0 -e "$@" \
  ! voxelize voxel-size="<0.16,0.16,4.0>" range="<0,-39.68,-3,69.12,39.68,1>" \
  ! pillarfeat ! "application/x-pillar-features,format=F16" \
  ! filesink location="$out/pillar-features.raw"
