#!/bin/sh
# The README's first examples, run as the README writes them, so that the
# text a newcomer copies cannot go stale: the sample sweeps
# ./examples/demo.sh writes (three synthetic KITTI-style .bin files in
# demo-output/velodyne/), then every gst-launch-1.0 command of the README's
# first screen (the detector, above the first section) and of its "First
# run" section, from a folder that holds nothing else ($OUT) but a link to
# the repository's examples/ (the detector's commands name its model from
# the repository root). GST_PLUGIN_PATH comes from
# the caller (the test suite points it at the build), the README's export
# line being the interactive form of the same.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-.}
cd "$out"
mkdir -p demo-output/velodyne
# the demo's own command for the sample sweeps
grep -qF 'gst-launch-1.0 -q pointcloudtestsrc seed=$seed num-buffers=3 format=xyzi' \
  "$here/examples/demo.sh" || {
  echo "examples/demo.sh no longer writes the sample sweeps this checks"
  exit 1
}
gst-launch-1.0 -q pointcloudtestsrc seed=7 num-buffers=3 format=xyzi \
  ! multifilesink location=demo-output/velodyne/%06d.bin
ln -s "$here/examples" examples
# the README's commands: the fenced blocks of the first screen and of "##
# First run" that start with gst-launch-1.0, continuation lines joined
commands=$(awk '
  BEGIN { section = 1 }
  /^## / { section = ($0 == "## First run") }
  section && /^```/ { inblock = !inblock; next }
  section && inblock { print }
' "$here/README.md" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta' \
  | grep '^gst-launch-1.0 ')
[ -n "$commands" ] || { echo "no gst-launch-1.0 line in README.md"; exit 1; }
echo "$commands" | while read -r line; do
  echo "README: $line"
  # shellcheck disable=SC2086
  eval "$line"
done
# the detector of the first screen found boxes
grep -q '"label"' boxes.jsonl || {
  echo "the README's detector found no box"
  exit 1
}
rm examples
# the output run-example.sh looks for
ls -l demo-output/velodyne > listing.txt
