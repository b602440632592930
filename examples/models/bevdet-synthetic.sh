#!/bin/sh
# shellcheck disable=SC2034
# The settings of the camera model, examples/models/bevdet-synthetic.safetensors
# (docs/model.md, "The camera model"; trained by tools/train/train_bevdet.py),
# for shell scripts to source (examples/demo.sh): the camera rig it was
# trained on and bevpool's properties for its grid. They are
# tools/train/bevdet_config.json's values; bevdetect refuses BEV features
# of another size than the model's, so a stale copy cannot pass unnoticed.
#
#   . examples/models/bevdet-synthetic.sh
#   gst-launch-1.0 camencode name=enc weights="$BD_WEIGHTS" \
#       ! bevpool calibration="$BD_RIG" $BD_BEVPOOL \
#       ! bevdetect weights="$BD_WEIGHTS" ! boxenc ! filesink location=b.jsonl \
#     cameratestsrc calibration="$BD_RIG" camera=0 ! video/x-raw,format=RGB ! enc.sink_0 \
#     ... (cameras 1 to 5)

# the weights file, from the repository root (present once a training run
# has made it: tools/train/README.md, "The camera model")
BD_WEIGHTS=examples/models/bevdet-synthetic.safetensors
# the six cameras, in the order of the model's batch
BD_RIG=examples/data/rig-nuscenes-704x256.json
BD_CAMERAS=6
# bevpool: the 704 x 256 network input, 0.4 m cells over x in
# [-51.2, 51.2] and y in [-16, 16] (256 x 80), one z slab, depth bins of
# 0.5 m from 1 m to 52 m (102)
BD_BEVPOOL="image-width=704 image-height=256 xbound=<-51.2,51.2,0.4> ybound=<-16,16,0.4> zbound=<-10,10,20> dbound=<1,52,0.5>"
# labels 0, 1, 2 (pointcloudtestsrc emit=boxes writes the same)
BD_CLASSES="car pedestrian cyclist"
