#!/bin/sh
# Format the sources as CI expects them, or check that they are (--check).
# With file arguments, only those files: tests/format.sh [--check] [FILE...]
# C files: GNU indent with gst-indent's flags, run twice because indent is not
# idempotent on its first pass. CUDA files: clang-format with ../.clang-format.
set -eu
cd "$(dirname "$0")/.."
mode=fix
if [ "${1:-}" = "--check" ]; then
  mode=--check
  shift
fi
indent_flags="--braces-on-if-line --case-brace-indentation0 --case-indentation2
  --braces-after-struct-decl-line --line-length80 --no-tabs --cuddle-else
  --dont-line-up-parentheses --continuation-indentation4 --honour-newlines
  --tab-size8 --indent-level2 --leave-preprocessor-space"
status=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ $# -gt 0 ]; then
  files="$*"
else
  files=$(git ls-files '*.c' '*.cu' '*.cuh'; git ls-files --others --exclude-standard '*.c' '*.cu' '*.cuh')
fi
for f in $files; do
  [ -f "$f" ] || continue
  out="$tmp/formatted"
  case "$f" in
    *.c)
      # shellcheck disable=SC2086
      indent $indent_flags -o "$out.1" "$f" && indent $indent_flags -o "$out" "$out.1" ;;
    *)
      clang-format --style=file "$f" > "$out" ;;
  esac
  if ! cmp -s "$f" "$out"; then
    if [ "$mode" = "--check" ]; then
      echo "not formatted: $f (run tests/format.sh)"
      diff -u "$f" "$out" | head -20
      status=1
    else
      cp "$out" "$f"
    fi
  fi
done
exit $status
