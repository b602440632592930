#!/bin/sh
# The README's first command: installs what is missing, builds, and runs the
# shipped 3D detector on the built-in synthetic lidar -- lidar in, boxes
# out -- then the lidar chain and NMS on their own (on a KITTI .bin / PCD
# file given as argument instead, when there is one), and prints what it
# found, where the outputs are and how long each stage took.
#
#   examples/demo.sh [SWEEP.bin | CLOUD.pcd]
#
# It builds only the plugin (for this machine's GPU architecture alone),
# showing ninja's progress; ./tests/run.sh builds everything else.
#
# The detector: pointcloudtestsrc ! voxelize ! pillarfeat ! pillarencode !
# bevdetect with the model in examples/models (docs/model.md; its settings
# come from examples/models/centerpoint-synthetic.sh), on $DEMO_DETECT_FRAMES
# frames (default 3) of a seed held out of its training. On a GPU it then
# runs $DEMO_RATE_FRAMES frames (default 300) into fakesink and prints the
# frames per second.
#
# Outputs (in $DEMO_OUT, default ./demo-output): detect-00.png... (per
# frame: the points, the true boxes wide and green, the detections over
# them in their class colours with their scores), detect-zoom.png (the
# first frame, the 30 m ahead of the sensor at 5 cm a pixel),
# detections.jsonl and truth.jsonl (the detected and the true boxes as
# JSON lines), scene.png (points, coloured by height), pillars.png (the
# pillars voxelize made), boxes-before-nms.png and boxes-after-nms.png (a
# detector-like set of candidate boxes, and what nms kept),
# candidates.jsonl and kept.jsonl (those boxes as JSON lines),
# pillar-features.raw (the PointPillars network input, F16 records as in
# docs/media-types.md), velodyne/000000.bin to 000002.bin (three synthetic
# sweeps as KITTI-style float32 x, y, z, intensity files, which the
# README's first example reads).
#
# DEMO_PLUGIN_PATH=DIR runs the demo with a plugin built (or installed)
# before, in DIR, without installing packages or building: for a machine
# that has GStreamer but not the build tools, given a build made elsewhere.
set -eu
cd "$(dirname "$0")/.."
if [ -z "${DEMO_PLUGIN_PATH:-}" ]; then
  tests/install-deps.sh
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    PATH=/usr/local/cuda/bin:$PATH
    export PATH
  fi
  build=${BUILDDIR:-build}

  # Only the GPU architecture of this machine's GPU (meson.build adds Hopper,
  # sm_90, to every build), instead of the six of a release build, so that
  # the CUDA files compile once each. The first build is 90 steps, most of
  # its time in the CUDA files: 6 min 23 s on a 2-core machine shared with
  # other jobs (load average 8), measured from a fresh clone, where the
  # whole demo took 7 min 3 s.
  gpu_arch () {
    if command -v nvidia-smi >/dev/null 2>&1; then
      nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null \
        | head -1 | tr -d ' .'
    fi
  }
  if [ ! -f "$build/build.ninja" ]; then
    arch=$(gpu_arch)
    echo "== configuring $build (meson setup; CUDA code for sm_${arch:-90} only)"
    meson setup "$build" -Dcuda-architectures="${arch:-90}" >/dev/null
  fi
  # The plugin and what it links, nothing else: ./tests/run.sh builds the
  # tests and benchmarks when it runs. Ninja's [done/total] lines show how far
  # the build is.
  echo "== building the plugin (meson compile -C $build gst/gstperception)"
  status=$(mktemp)
  { meson compile -C "$build" gst/gstperception 2>&1; echo $? > "$status"; } \
    | grep --line-buffered -E '^\[[0-9]+/[0-9]+\]|error|Error' \
    | sed -u 's/^/  /'
  if [ "$(cat "$status")" -ne 0 ]; then
    rm -f "$status"
    echo "the build failed: run meson compile -C $build for the whole log"
    exit 1
  fi
  rm -f "$status"
  case "$build" in
    /*) GST_PLUGIN_PATH=$build/gst ;;
    *) GST_PLUGIN_PATH=$PWD/$build/gst ;;
  esac
else
  GST_PLUGIN_PATH=$DEMO_PLUGIN_PATH
fi
export GST_PLUGIN_PATH
out=${DEMO_OUT:-demo-output}
mkdir -p "$out"
frames=${DEMO_FRAMES:-50}
seed=7

# The point source, as gst-launch words, for $1 frames.
input=${1:-}
points () {
  case "$input" in
    "") echo "pointcloudtestsrc seed=$seed num-buffers=$1" ;;
    *.pcd) echo "filesrc location=$input ! pcdparse" ;;
    *) echo "filesrc location=$input ! pointcloudparse preset=kitti" ;;
  esac
}
if [ -n "$input" ] && [ ! -f "$input" ]; then
  echo "no such file: $input"
  exit 2
fi
if [ -n "$input" ]; then
  frames=1
fi

now_ms () {
  date +%s%3N
}

# Milliseconds per frame of a pipeline, from runs of $frames and of 1
# frame, so that the pipeline's start-up is not counted.
# $1: a command taking the frame count.
per_frame () {
  if [ "$frames" -le 1 ]; then
    t0=$(now_ms); "$@" 1 >/dev/null; t1=$(now_ms)
    echo $((t1 - t0))
    return
  fi
  t0=$(now_ms); "$@" 1 >/dev/null; t1=$(now_ms)
  "$@" "$frames" >/dev/null; t2=$(now_ms)
  awk -v one=$((t1 - t0)) -v many=$((t2 - t1)) -v n="$frames" \
    'BEGIN { v = (many - one) / (n - 1); if (v < 0) v = 0; printf "%.2f", v }'
}

# Milliseconds per frame that nms adds to the candidate boxes' source, from
# $1 frames with and without it into fakesink: the work of a few hundred
# boxes is below the start-up time's jitter in one run of 50 frames (the
# demo once said 0.00 ms). "under X" when it still is, X the resolution.
nms_per_frame () {
  n=$1
  t0=$(now_ms)
  gst-launch-1.0 -q pointcloudtestsrc seed=$seed emit=candidates \
    num-buffers="$n" ! fakesink >/dev/null
  t1=$(now_ms)
  gst-launch-1.0 -q pointcloudtestsrc seed=$seed emit=candidates \
    num-buffers="$n" ! nms mode=bev-rotated iou-threshold=0.1 ! fakesink \
    >/dev/null
  t2=$(now_ms)
  awk -v without=$((t1 - t0)) -v with=$((t2 - t1)) -v n="$n" \
    'BEGIN { d = with - without;
      if (d < 20) printf "under %.2f", 20 / n; else printf "%.2f", d / n }'
}

lidar_chain () {
  # shellcheck disable=SC2046
  gst-launch-1.0 -q $(points "$1") ! voxelize ! pillarfeat \
    ! "application/x-pillar-features,format=F16" ! fakesink
}

nms_chain () {
  gst-launch-1.0 -q pointcloudtestsrc seed=$seed emit=candidates \
      num-buffers="$1" ! tee name=t \
    t. ! queue ! boxenc ! filesink location="$out/candidates.jsonl" \
    t. ! queue ! nms mode=bev-rotated iou-threshold=0.1 ! boxenc \
    ! filesink location="$out/kept.jsonl"
}

render () {
  # $1: PNG name, then the branches feeding bevrender r
  name=$1
  shift
  # shellcheck disable=SC2068
  gst-launch-1.0 -q bevrender name=r width=1000 ! pngenc \
    ! filesink location="$out/$name" $@
}

# The detector: the shipped model's settings, and the points it sees (a
# held-out seed of the synthetic street, or the file given).
# shellcheck source=examples/models/centerpoint-synthetic.sh
. examples/models/centerpoint-synthetic.sh
detect_frames=${DEMO_DETECT_FRAMES:-3}
rate_frames=${DEMO_RATE_FRAMES:-300}
detect_seed=900001
detect_points () {
  case "$input" in
    "") echo "pointcloudtestsrc seed=$detect_seed num-buffers=$1" ;;
    *) points 1 ;;
  esac
}
if [ -n "$input" ]; then
  detect_frames=1
fi
# $1 frames through the model into $2 (a sink, as gst-launch words)
detector () {
  n=$1
  shift
  # shellcheck disable=SC2046,SC2068
  gst-launch-1.0 -q $(detect_points "$n") \
    ! voxelize voxel-size="$CP_VOXEL_SIZE" range="$CP_RANGE" \
        max-points="$CP_MAX_POINTS" max-voxels="$CP_MAX_VOXELS" \
    ! pillarfeat features="$CP_FEATURES" \
    ! pillarencode weights="$CP_WEIGHTS" ! bevdetect weights="$CP_WEIGHTS" \
    $@
}
# A picture per frame: the points, the true boxes in $2 (JSON lines; ""
# for none) wide and green, the detections in $1 over them. $3: the PNG
# location, $4: bevrender's view properties, $5: the frames.
draw_detections () {
  truth_branch=""
  if [ -n "$2" ]; then
    truth_branch="filesrc location=$2 ! boxparse ! r.boxes_0"
  fi
  # shellcheck disable=SC2046,SC2086
  gst-launch-1.0 -q bevrender name=r $4 weights="$CP_WEIGHTS" \
      boxes_0::color=0xff30c030 boxes_0::line-width=3 \
      boxes_0::show-scores=false boxes_0::caption="true boxes" \
    ! pngenc ! multifilesink location="$3" \
    $(detect_points "$5") ! r.points_0 \
    $truth_branch \
    filesrc location="$1" ! boxparse ! r.boxes_1
}
# the lines of frame 0 of a JSON lines file
first_frame () {
  awk '/"frame":/ { keep = ($0 ~ /"frame":0,/) } keep' "$1"
}

echo "== the detector: $(detect_points "$detect_frames" | sed 's/ !.*//') ! voxelize ! pillarfeat ! pillarencode ! bevdetect"
# shellcheck disable=SC2046
backend=$(gst-launch-1.0 -v $(points 1) ! voxelize ! fakesink 2>/dev/null \
  | grep -q "memory:CUDAMemory" && echo cuda || echo cpu)
t0=$(now_ms)
detector "$detect_frames" ! boxenc ! filesink location="$out/detections.jsonl"
t1=$(now_ms)
detect_rate=$(awk -v n="$detect_frames" -v ms=$((t1 - t0)) 'BEGIN {
  printf "%d frame%s in %.1f s: %.2f frames/s (start-up included)", n,
    n == 1 ? "" : "s", ms / 1000, n * 1000 / ms }')
rm -f "$out"/detect-*.png
view="range=$CP_BEV_RANGE metres-per-pixel=0.08"
if [ -z "$input" ]; then
  gst-launch-1.0 -q pointcloudtestsrc seed=$detect_seed emit=boxes \
      num-buffers="$detect_frames" ! boxenc \
    ! filesink location="$out/truth.jsonl"
  draw_detections "$out/detections.jsonl" "$out/truth.jsonl" \
    "$out/detect-%02d.png" "$view" "$detect_frames"
  # the close-up of the first frame: the 30 m ahead, 5 cm a pixel
  first_frame "$out/detections.jsonl" > "$out/detections-0.jsonl"
  first_frame "$out/truth.jsonl" > "$out/truth-0.jsonl"
  draw_detections "$out/detections-0.jsonl" "$out/truth-0.jsonl" \
    "$out/detect-zoom.png" \
    "range=<0,-15.36,30.72,15.36> metres-per-pixel=0.05" 1
  rm -f "$out/detections-0.jsonl" "$out/truth-0.jsonl"
  detect_summary=$(cp_summary "$out/detections.jsonl" "$out/truth.jsonl")
else
  draw_detections "$out/detections.jsonl" "" "$out/detect-%02d.png" \
    "$view" 1
  detect_summary=$(cp_summary "$out/detections.jsonl")
fi
echo "$detect_summary" | sed 's/^/  /'
# On a GPU: the full rate, $rate_frames frames into fakesink, less the
# time of a 1-frame run (the start-up: the model's load, cuDNN's set-up)
if [ "$backend" = cuda ] && [ -z "$input" ]; then
  t0=$(now_ms); detector 1 ! fakesink; t1=$(now_ms)
  detector "$rate_frames" ! fakesink; t2=$(now_ms)
  gpu_rate=$(awk -v n="$rate_frames" -v one=$((t1 - t0)) \
    -v many=$((t2 - t1)) 'BEGIN { s = (many - one) / 1000; if (s <= 0) s = 0.001;
    printf "%d frames in %.2f s: %.1f frames/s (the start-up, a 1-frame run, subtracted)",
      n - 1, s, (n - 1) / s }')
fi

# == The cameras: six cameratestsrc cameras of the same held-out street
# (examples/data/rig-nuscenes-704x256.json), boxoverlay drawing the detected
# boxes on each, beside the bird's-eye view of the true boxes and the
# detections. The boxes on the cameras are the camera model's
# (examples/models/bevdet-synthetic.safetensors: camencode ! bevpool !
# bevdetect) when it is there and the elements run on a GPU, else the
# lidar model's: the camera chain's C reference path takes about a minute
# a frame. Outputs: cameras-00.png... (one picture a frame: the front
# cameras above the back ones, the bird's-eye view below them with the
# true boxes wide and green, the lidar model's detections in their class
# colours and the camera model's, when it ran, in light blue) and
# cameras.webm (the pictures as a VP8 video a browser plays;
# $DEMO_VIDEO_FRAMES frames on a GPU, default 50 at 10 a second, else the
# detector's frames at 2 a second).
if [ -z "$input" ]; then
  # shellcheck source=examples/models/bevdet-synthetic.sh
  . examples/models/bevdet-synthetic.sh
  camera_frames=$detect_frames
  video_rate=2
  if [ "$backend" = cuda ]; then
    camera_frames=${DEMO_VIDEO_FRAMES:-50}
    video_rate=10
  fi
  # $1 frames of the six cameras, as gst-launch words, camera k linked to
  # "$2k$3" (the caller's elements and pad)
  cameras () {
    k=0
    while [ "$k" -lt "$BD_CAMERAS" ]; do
      echo "cameratestsrc calibration=$BD_RIG camera=$k seed=$detect_seed" \
        "num-buffers=$1 ! video/x-raw,format=RGB ! $2$k${3:-}"
      k=$((k + 1))
    done
  }
  lidar_boxes=$out/detections.jsonl
  if [ "$camera_frames" -gt "$detect_frames" ]; then
    lidar_boxes=$out/video-detections.jsonl
    detector "$camera_frames" ! boxenc ! filesink location="$lidar_boxes"
  fi
  gst-launch-1.0 -q pointcloudtestsrc seed=$detect_seed emit=boxes \
      num-buffers="$camera_frames" ! boxenc \
    ! filesink location="$out/video-truth.jsonl"
  camera_boxes=$lidar_boxes
  camera_pad=""
  camera_branch=""
  if [ -f "$BD_WEIGHTS" ] && [ "$backend" = cuda ]; then
    echo "== the camera model: cameratestsrc x $BD_CAMERAS ! camencode ! bevpool ! bevdetect"
    camera_boxes=$out/camera-detections.jsonl
    # shellcheck disable=SC2046,SC2086
    gst-launch-1.0 -q camencode name=enc weights="$BD_WEIGHTS" \
      ! bevpool calibration="$BD_RIG" $BD_BEVPOOL \
      ! bevdetect weights="$BD_WEIGHTS" ! boxenc \
      ! filesink location="$camera_boxes" \
      $(cameras "$camera_frames" enc.sink_)
    camera_source="the camera model's ($BD_WEIGHTS)"
    # in the bird's-eye view too, in one colour over the lidar model's
    camera_pad="boxes_2::color=0xff30d0ff boxes_2::line-width=2"
    camera_pad="$camera_pad boxes_2::show-scores=false"
    camera_branch="filesrc location=$camera_boxes ! boxparse ! r.boxes_2"
  elif [ -f "$BD_WEIGHTS" ]; then
    camera_source="the lidar model's (the camera model runs on a GPU only: its C reference path takes about a minute a frame)"
  else
    camera_source="the lidar model's (no camera model in examples/models: tools/train/README.md makes one)"
  fi
  echo "== cameras: six tiles with $camera_source boxes, and the bird's-eye view"
  rm -f "$out"/cameras-*.png
  # the tiles: front left, front, front right above back left, back, back
  # right (the rig's cameras are front, front right, front left, back,
  # back left, back right); below them the bird's-eye view, turned so that
  # forward is to the right: the whole area of the models, 0.048 m a pixel
  layout="704,0 1408,0 0,0 704,256 0,256 1408,256"
  mix="compositor name=mix background=black sink_6::xpos=0 sink_6::ypos=512"
  k=0
  for xy in $layout; do
    mix="$mix sink_$k::xpos=${xy%,*} sink_$k::ypos=${xy#*,}"
    k=$((k + 1))
  done
  overlays=""
  k=0
  while [ "$k" -lt "$BD_CAMERAS" ]; do
    overlays="$overlays boxoverlay name=o$k calibration=$BD_RIG camera=$k"
    overlays="$overlays ! videoconvert ! mix.sink_$k bt. ! queue ! o$k.boxes_sink"
    k=$((k + 1))
  done
  # shellcheck disable=SC2046,SC2086
  gst-launch-1.0 -q $mix ! videoconvert ! pngenc \
      ! multifilesink location="$out/cameras-%02d.png" \
    filesrc location="$camera_boxes" ! boxparse ! tee name=bt \
    $overlays $(cameras "$camera_frames" "videoconvert ! o" .video_sink) \
    bevrender name=r range="$CP_BEV_RANGE" height=2112 annotations=false \
      boxes_0::color=0xff30c030 boxes_0::line-width=4 \
      boxes_0::show-scores=false boxes_1::line-width=2 \
      boxes_1::show-scores=false $camera_pad \
    ! videoflip video-direction=90r ! videoconvert ! mix.sink_6 \
    pointcloudtestsrc seed=$detect_seed num-buffers="$camera_frames" ! r.points_0 \
    filesrc location="$out/video-truth.jsonl" ! boxparse ! r.boxes_0 \
    filesrc location="$lidar_boxes" ! boxparse ! r.boxes_1 \
    $camera_branch
  # the pictures as a video: multifilesrc stamps them at the video's rate
  video=$out/cameras.webm
  rm -f "$video"
  if gst-inspect-1.0 vp8enc >/dev/null 2>&1; then
    gst-launch-1.0 -q multifilesrc location="$out/cameras-%02d.png" \
        caps="image/png,framerate=$video_rate/1" \
      ! pngdec ! videoconvert ! vp8enc deadline=1 target-bitrate=4000000 \
      ! webmmux ! filesink location="$video"
  else
    video="no video: vp8enc is missing (gstreamer1.0-plugins-good and libvpx)"
  fi
  camera_summary="six cameras of seed $detect_seed, $camera_frames frames, with $camera_source boxes: $out/cameras-00.png..., $video"
fi

echo "== sample sweeps for the README's example: $out/velodyne/"
mkdir -p "$out/velodyne"
gst-launch-1.0 -q pointcloudtestsrc seed=$seed num-buffers=3 format=xyzi \
  ! multifilesink location="$out/velodyne/%06d.bin"

echo "== lidar chain: voxelize ! pillarfeat"
lidar_ms=$(per_frame lidar_chain)
# shellcheck disable=SC2046
stats=$(gst-launch-1.0 -m $(points 1) ! voxelize post-stats=true ! fakesink \
  | grep -o "voxelize-stats.*" | tail -1)
field () {
  echo "$stats" | sed -n "s/.*$1=(uint)\([0-9]*\).*/\1/p"
}
# one frame of the network input, for docs/media-types.md's reader
# shellcheck disable=SC2046
gst-launch-1.0 -q $(points 1) ! voxelize ! pillarfeat \
  ! "application/x-pillar-features,format=F16" \
  ! filesink location="$out/pillar-features.raw"

echo "== pictures"
# shellcheck disable=SC2046
render scene.png $(points 1) ! r.points_0
# shellcheck disable=SC2046
render pillars.png $(points 1) ! voxelize ! r.voxels_0
if [ -z "$input" ]; then
  echo "== nms on the test source's candidate boxes"
  nms_chain "$frames"
  nms_ms=$(nms_per_frame 1000)
  render boxes-before-nms.png $(points 1) ! r.points_0 \
    pointcloudtestsrc seed=$seed emit=candidates num-buffers=1 ! r.boxes_0
  render boxes-after-nms.png $(points 1) ! r.points_0 \
    pointcloudtestsrc seed=$seed emit=candidates num-buffers=1 \
    ! nms mode=bev-rotated iou-threshold=0.1 ! r.boxes_0
  candidates=$(grep -c '"score"' "$out/candidates.jsonl")
  kept=$(grep -c '"score"' "$out/kept.jsonl")
fi

echo
echo "gst-perception demo (elements took the $backend path)"
echo "detector (examples/models/centerpoint-synthetic.safetensors, docs/model.md):"
echo "$detect_summary" | sed 's/^/  /'
echo "  $detect_rate"
if [ -n "${gpu_rate:-}" ]; then
  echo "  full rate on the GPU, into fakesink: $gpu_rate"
fi
if [ -n "${camera_summary:-}" ]; then
  echo "cameras: $camera_summary"
fi
if [ -z "$input" ]; then
  echo "input: synthetic 64-beam lidar, pointcloudtestsrc seed $seed, $frames frames"
else
  echo "input: $input"
fi
echo "voxelize ! pillarfeat: $lidar_ms ms per frame; last frame: $(field points-in) points, $(field voxels) pillars, $(field points-over-max-points) points over max-points, $(field points-out-of-range) out of range"
if [ -z "$input" ]; then
  echo "nms (bev-rotated, IoU > 0.1): $nms_ms ms per frame (1000 frames, the source's time taken out); $candidates candidate boxes in, $kept kept over $frames frames"
else
  echo "nms: not run on a file input (there is no detector in the demo; the test source's candidate boxes stand in for one)"
fi
echo "outputs in $out/:"
ls -l "$out" | tail -n +2
