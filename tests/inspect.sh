#!/bin/sh
# Compares every element's gst-inspect-1.0 output with its snapshot in
# docs/inspect/, and the plugin's element list with the tutorial's, so that
# the property reference cannot drift from the code.
# The plugin's file name is left out (it depends on where it was built).
#
#   tests/inspect.sh [--update]     (GST_PLUGIN_PATH must find the plugin)
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
dir=$here/docs/inspect
update=no
[ "${1:-}" = "--update" ] && update=yes
elements=$(gst-inspect-1.0 perception 2>/dev/null \
  | sed -n 's/^  \([a-z0-9]*\): .*/\1/p')
if [ -z "$elements" ]; then
  echo "gst-inspect-1.0 does not find the perception plugin"
  exit 1
fi
mkdir -p "$dir"
status=0
tmp=$(mktemp)
for e in $elements; do
  GST_DEBUG_NO_COLOR=1 gst-inspect-1.0 --no-colors "$e" \
    | grep -v '^  Filename ' > "$tmp"
  if [ "$update" = yes ]; then
    cp "$tmp" "$dir/$e.txt"
  elif ! diff -u "$dir/$e.txt" "$tmp" > /dev/null 2>&1; then
    echo "gst-inspect-1.0 $e differs from docs/inspect/$e.txt (run tests/inspect.sh --update and review the change):"
    diff -u "$dir/$e.txt" "$tmp" | head -40
    status=1
  fi
done
rm -f "$tmp"
# a snapshot without an element is stale too
for f in "$dir"/*.txt; do
  e=$(basename "$f" .txt)
  case " $(echo $elements) " in
    *" $e "*) ;;
    *) echo "docs/inspect/$e.txt has no element"; status=1 ;;
  esac
done
# the tutorial's listing of the plugin (section 1) names every element
listing=$(gst-inspect-1.0 perception 2>/dev/null | grep -E '^  [a-z0-9]+: ')
tutorial=$(sed -n '/^gst-inspect-1.0 perception$/,/^## /p' \
  "$here/docs/tutorial.md" | grep -E '^  [a-z0-9]+: ')
if [ "$listing" != "$tutorial" ]; then
  echo "docs/tutorial.md's gst-inspect-1.0 perception listing is not the plugin's:"
  printf '%s\n' "$listing" > "$tmp.plugin"
  printf '%s\n' "$tutorial" | diff -u - "$tmp.plugin"
  rm -f "$tmp.plugin"
  status=1
fi
[ "$update" = yes ] && echo "updated $(echo $elements | wc -w) snapshots in docs/inspect/"
exit $status
