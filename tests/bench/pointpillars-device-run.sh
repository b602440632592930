#!/bin/bash
# Everything the PointPillars work runs on the GPU machine, in parts that
# each fit one device call, every log under $OUT/<part>/. Run from the
# repository root there, with build/ (configured here with
# -Dcuda-architectures=90) and .device/ (../shared/device/prepare.sh with
# the EXTRA_DEBS of docs/development.md) carried, and torch (with CUDA)
# importable by python3:
#
#   tests/bench/pointpillars-device-run.sh tests              # GPU tests
#   tests/bench/pointpillars-device-run.sh sanitize           # memcheck
#   tests/bench/pointpillars-device-run.sh compare SWEEPS_DIR # vs PyTorch
#   tests/bench/pointpillars-device-run.sh bench SWEEPS_DIR   # timings
#
# tests: the GPU suite with PERCEPTION_REQUIRE_GPU=1 (anchor3d_decode_cuda
#   and network_cuda hold the PointPillars cases), and check_pillarize.py
#   with CUDA elements for the PointPillars training's features.
# sanitize: the anchor decode's GPU test and network_cuda's PointPillars
#   cases under compute-sanitizer memcheck, the decode under racecheck.
# compare: tests/reference/compare_pointpillars.py on every *.bin of
#   SWEEPS_DIR (KITTI velodyne sweeps: ../shared/data/cuda-pointpillars).
# bench: OpenPCDet's PointPillars (pointpillar.yaml, random weights
#   calibrated on SWEEPS_DIR/000000.bin) timed by bench_network (the whole
#   chain from the points on the GPU to the kept boxes, F16 and F32), by
#   bench_pointpillars_torch.py (eager F32, eager F16, torch.compile) on the
#   same weights and pillars, and bench_anchor3d (the decode and NMS alone,
#   on that head's maps as PyTorch computed them, and on synthetic ones).
#
# Each step's output goes to its log; its last lines and exit status are
# printed; the script's status is 1 when a step failed. Large intermediate
# files (pillars, head maps, checkpoints: hundreds of MB) go to /tmp, not
# to $OUT.
set -u
part=${1:-}
sweeps=${2:-}
root=$(pwd)
out=${OUT:-/tmp/pointpillars-device}/$part
mkdir -p "$out"
# shellcheck disable=SC1091
. .device/env.sh
export GST_PLUGIN_PATH=$root/build/gst
status=0

step () {
  name=$1
  shift
  echo "== $name: $*"
  start=$(date +%s)
  "$@" > "$out/$name.log" 2>&1
  rc=$?
  tail -n 40 "$out/$name.log"
  echo "== $name: exit $rc after $(($(date +%s) - start)) s (log $out/$name.log)"
  [ "$rc" -eq 0 ] || status=1
  return "$rc"
}

need_sweeps () {
  if [ -z "$sweeps" ] || [ ! -f "$sweeps/000000.bin" ]; then
    echo "give the folder of KITTI sweeps (with 000000.bin) as the second argument"
    exit 2
  fi
}

case "$part" in
  tests)
    step gpu-suite env PERCEPTION_REQUIRE_GPU=1 \
      meson test -C build --no-rebuild --suite gpu --print-errorlogs
    grep -h "network_cuda: pointpillars\|network_cuda: bevdetect\|network_cuda: chain" \
      build/meson-logs/testlog.txt > "$out/network_cuda-figures.txt" 2>/dev/null
    step check-pillarize python3 tools/train/check_pillarize.py \
      --features pointpillars-10 --config tools/train/pointpillars.yaml \
      --work /tmp/pp-check --seeds 3 77 --frames 2 --backend cuda \
      --devices cuda cpu
    ;;
  sanitize)
    step memcheck env PERCEPTION_REQUIRE_GPU=1 \
      meson test -C build --no-rebuild libs/anchor3d_decode_cuda \
        --wrapper 'compute-sanitizer --tool memcheck --error-exitcode 1'
    step racecheck env PERCEPTION_REQUIRE_GPU=1 \
      meson test -C build --no-rebuild libs/anchor3d_decode_cuda \
        --wrapper 'compute-sanitizer --tool racecheck --error-exitcode 1'
    # network_cuda's PointPillars cases alone (GST_CHECKS picks a test
    # function by name)
    step memcheck-network env PERCEPTION_REQUIRE_GPU=1 CK_FORK=no \
      GST_CHECKS=test_pointpillars \
      compute-sanitizer --tool memcheck --error-exitcode 1 \
        build/tests/check/elements/elements_network_cuda
    ;;
  compare)
    need_sweeps
    step compare python3 tests/reference/compare_pointpillars.py \
      --sweeps "$sweeps" --out "$out/compare-pointpillars" \
      --work /tmp/compare-pointpillars
    ;;
  bench)
    need_sweeps
    model=/tmp/pointpillars-bench/openpcdet
    mkdir -p "$model"
    # the pillars of 000000 as pillarfeat writes them, for the calibration
    # and for PyTorch's input
    step pillars gst-launch-1.0 -q filesrc location="$sweeps/000000.bin" \
      ! pointcloudparse preset=kitti \
      ! voxelize voxel-size="<0.16,0.16,4>" range="<0,-39.68,-3,69.12,39.68,1>" \
          max-points=32 max-voxels=40000 \
      ! pillarfeat features=pointpillars-10 \
      ! "application/x-pillar-features,format=F32" \
      ! filesink location="$model/pillars-000000.f32" || exit 1
    step init python3 tests/reference/pointpillars_torch.py init \
      --framework openpcdet -o "$model" \
      --calibrate "$model/pillars-000000.f32" || exit 1
    step reference python3 tests/reference/pointpillars_torch.py run \
      --framework openpcdet --checkpoint "$model/checkpoint.pth" \
      --config "$model/config.yaml" --pillars "$model/pillars-000000.f32" \
      -o "$model/reference"
    step bench-network build/tests/bench/bench_network \
      --weights "$model/model.safetensors" --points "$sweeps/000000.bin" \
      --format f32x4 --runs 500 --write-pillars "$model/pillars-bench.f32"
    step bench-torch python3 tests/bench/bench_pointpillars_torch.py \
      --framework openpcdet --checkpoint "$model/checkpoint.pth" \
      --config "$model/config.yaml" --pillars "$model/pillars-000000.f32" \
      --runs 200
    # that head's maps, then the synthetic cases
    step bench-anchor3d build/tests/bench/bench_anchor3d \
      --heads "$model/reference/heads.f32" --framework openpcdet
    ;;
  *)
    echo "usage: $0 tests | sanitize | compare SWEEPS_DIR | bench SWEEPS_DIR"
    exit 2
    ;;
esac
echo "== $part: $([ "$status" -eq 0 ] && echo every step passed || echo a step FAILED)"
exit "$status"
