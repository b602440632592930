#!/bin/sh
# shellcheck disable=SC2034
# The settings of the shipped model,
# examples/models/centerpoint-synthetic.safetensors, for shell scripts to source (examples/demo.sh, examples/launch/detect.sh):
# the voxelize and pillarfeat properties it was trained with, the area it
# sees and its class names. They are tools/train/model_config.json's values
# (docs/model.md has the table); pillarencode refuses input made with other
# ones (an error from pillarencode naming the field, both values and the
# property to set), so a stale copy cannot pass unnoticed.
#
#   . examples/models/centerpoint-synthetic.sh
#   gst-launch-1.0 ... ! voxelize voxel-size="$CP_VOXEL_SIZE" \
#       range="$CP_RANGE" max-points=$CP_MAX_POINTS max-voxels=$CP_MAX_VOXELS \
#       ! pillarfeat features=$CP_FEATURES ! pillarencode weights="$CP_WEIGHTS" ...

# the weights file, from the repository root
CP_WEIGHTS=examples/models/centerpoint-synthetic.safetensors
# voxelize: 0.32 m pillars over x in [-51.2, 51.2], y in [-15.36, 15.36],
# z in [-3, 1]: a 320 x 96 grid, every cell a pillar at most
CP_VOXEL_SIZE="<0.32,0.32,4.0>"
CP_RANGE="<-51.2,-15.36,-3,51.2,15.36,1>"
CP_MAX_POINTS=20
CP_MAX_VOXELS=30720
# pillarfeat: mmdetection3d's 11 channels
CP_FEATURES=mmdet3d-11
# bevrender's range for that area (x and y bounds)
CP_BEV_RANGE="<-51.2,-15.36,51.2,15.36>"
# labels 0, 1, 2 (pointcloudtestsrc emit=boxes writes the same)
CP_CLASSES="car pedestrian cyclist"

# One line per frame of boxenc JSON lines ($1): the boxes found, by class;
# with $2, boxenc JSON lines of the true boxes of the same frames, also the
# number of true boxes whose centre lies inside the model's area.
cp_summary () {
  awk -v classes="$CP_CLASSES" -v truth_file="${2:-}" '
    function field(line, name,   m) {
      if (match(line, "\"" name "\":-?[0-9.eE+-]+") == 0)
        return ""
      m = substr(line, RSTART, RLENGTH)
      sub(/^"[a-z]+":/, "", m)
      return m + 0
    }
    BEGIN {
      n_classes = split(classes, name, " ")
      if (truth_file != "") {
        while ((getline line < truth_file) > 0) {
          if (line ~ /"frame":/) {
            t = field(line, "frame")
            truth[t] += 0
          } else if (line ~ /"label":/) {
            x = field(line, "x"); y = field(line, "y")
            if (x > -51.2 && x < 51.2 && y > -15.36 && y < 15.36)
              truth[t]++
          }
        }
      }
      frame = ""
    }
    function flush() {
      if (frame == "")
        return
      text = sprintf("frame %d: %d boxes", frame, count)
      sep = " ("
      for (k = 1; k <= n_classes; k++) {
        text = text sprintf("%s%d %s", sep, by_label[k - 1] + 0, name[k])
        sep = ", "
      }
      text = text ")"
      if (frame in truth)
        text = text sprintf("; %d true boxes in the area", truth[frame])
      print text
      total += count
      frames++
    }
    /"frame":/ {
      flush()
      frame = field($0, "frame"); count = 0
      delete by_label
      next
    }
    /"label":/ { count++; by_label[field($0, "label")]++ }
    END {
      flush()
      printf "%d boxes in %d frame%s\n", total, frames, frames == 1 ? "" : "s"
    }
  ' "$1"
}
