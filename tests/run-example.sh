#!/bin/sh
# Runs an example the way a user would, for the test suite: OUT is a fresh
# temporary folder; the example must exit with the expected code (0, or the
# one given with --exit N) and, unless --no-output, leave a non-empty file
# in OUT.
#
#   run-example.sh [--exit N] [--no-output] COMMAND [ARGS...]
expected=0
check_output=yes
while [ $# -gt 0 ]; do
  case "$1" in
    --exit) expected=$2; shift 2 ;;
    --no-output) check_output=no; shift ;;
    *) break ;;
  esac
done
OUT=$(mktemp -d)
export OUT
"$@"
status=$?
if [ "$status" -eq 77 ] && [ "$expected" -ne 77 ]; then
  echo "skipped: the example cannot run here"
  rm -rf "$OUT"
  exit 77
fi
if [ "$status" -ne "$expected" ]; then
  echo "exit status $status, expected $expected"
  rm -rf "$OUT"
  exit 1
fi
if [ "$check_output" = yes ] && [ -z "$(find "$OUT" -type f -size +0 | head -1)" ]; then
  echo "no output file in $OUT"
  rm -rf "$OUT"
  exit 1
fi
ls -l "$OUT"
rm -rf "$OUT"
exit 0
