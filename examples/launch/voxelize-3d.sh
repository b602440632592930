#!/bin/sh
# CenterPoint's 3D voxel grid (0.075 x 0.075 x 0.2 m over
# [-54, -54, -5, 54, 54, 3], 10 points per voxel, 160000 voxels) on a 32-beam
# sweep from the test source, the voxels written to $OUT/voxels-3d.raw and
# the per-frame counts printed from the "voxelize-stats" messages.
set -eu
out=${OUT:-.}
gst-launch-1.0 -e -m pointcloudtestsrc num-buffers=3 beams=32 \
    points-per-revolution=1084 fov-up=10 fov-down=-30 format=xyzit \
  ! voxelize voxel-size="<0.075,0.075,0.2>" range="<-54,-54,-5,54,54,3>" \
    max-points=10 max-voxels=160000 post-stats=true \
  ! filesink location="$out/voxels-3d.raw" | grep voxelize-stats
