#!/bin/sh
# The README's first example, run as the README writes it, so that the text
# a newcomer copies cannot go stale: the sample sweeps ./examples/demo.sh
# writes (three synthetic KITTI-style .bin files in demo-output/velodyne/),
# then every gst-launch-1.0 command of the README's "First run" section,
# from a folder that holds nothing else ($OUT). GST_PLUGIN_PATH comes from
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
# the README's commands: the fenced blocks of "## First run" that start
# with gst-launch-1.0 or export, continuation lines joined
commands=$(awk '
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
# the output run-example.sh looks for
ls -l demo-output/velodyne > listing.txt
