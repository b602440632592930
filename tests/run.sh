#!/bin/sh
# The README's test command: installs what is missing, builds, and runs every
# check -- formatting, the test suite, the CPU tests again under the leaks
# tracer and under valgrind, and a build without CUDA -- then prints one line
# "N passed, N failed, N skipped" (each check counts as one test).
set -u
cd "$(dirname "$0")/.."
tests/install-deps.sh || exit 1
if [ -x /usr/local/cuda/bin/nvcc ]; then
  PATH=/usr/local/cuda/bin:$PATH
  export PATH
fi
build=${BUILDDIR:-build}
logs=""
extra_failed=0

if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" || exit 1
fi
meson compile -C "$build" || exit 1

step () {
  echo "== $*"
}

step "formatting (gst-indent flags for C, clang-format for CUDA)"
if ! tests/format.sh --check; then
  extra_failed=$((extra_failed + 1))
fi

step "test suite"
meson test -C "$build" --print-errorlogs --num-processes 2
logs="$logs $build/meson-logs/testlog.json"

step "CPU tests under the leaks tracer"
meson test -C "$build" --setup=leaks --suite cpu --print-errorlogs \
  --num-processes 2
logs="$logs $build/meson-logs/testlog-leaks.json"

step "CPU tests under valgrind"
meson test -C "$build" --setup=valgrind --suite cpu --print-errorlogs \
  --num-processes 2
logs="$logs $build/meson-logs/testlog-valgrind.json"

step "build without CUDA"
nocuda=${build}-nocuda
if [ ! -f "$nocuda/build.ninja" ]; then
  meson setup "$nocuda" -Dcuda=disabled -Dbenchmarks=disabled >/dev/null
fi
if ! meson compile -C "$nocuda" >/dev/null; then
  echo "the build without CUDA failed"
  extra_failed=$((extra_failed + 1))
fi

# shellcheck disable=SC2086
summary=$(python3 tests/summarize.py $logs)
status=$?
set -- $summary
passed=$1
failed=$(( $3 + extra_failed ))
skipped=$5
echo "$passed passed, $failed failed, $skipped skipped"
[ "$status" -eq 0 ] && [ "$extra_failed" -eq 0 ]
