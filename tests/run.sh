#!/bin/sh
# The README's test command: installs what is missing, builds, and runs every
# check -- formatting, the test suite, the CPU tests again under the leaks
# tracer and under valgrind, and a build without CUDA -- then prints one line
# "N passed, N failed, N skipped" (each check counts as one test). The CPU
# suite also runs in a build with AddressSanitizer and UndefinedBehaviorSanitizer.
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

# The CPU suite again, built with AddressSanitizer and UndefinedBehaviorSanitizer
# in a build of its own (about 5 minutes on 2 cores, most of it the build):
# any invalid access or undefined behaviour fails the test that hit it. Leaks
# are the leaks tracer's and valgrind's above (GLib's caches would drown
# LeakSanitizer), and plugins load in the test process (the plugin scanner
# is not instrumented). gst-inspect-1.0 and python are not instrumented
# either, so the docs and examples tests stay out.
step "CPU tests under AddressSanitizer and UndefinedBehaviorSanitizer"
sanitize=${build}-sanitize
if [ ! -f "$sanitize/build.ninja" ]; then
  meson setup "$sanitize" -Dcuda=disabled -Dbenchmarks=disabled \
    -Dexamples=disabled -Db_sanitize=address,undefined -Db_lundef=false \
    >/dev/null
fi
if meson compile -C "$sanitize" >/dev/null; then
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 GST_REGISTRY_FORK=no \
    meson test -C "$sanitize" --suite cpu --no-suite docs --print-errorlogs \
    --num-processes 2
  logs="$logs $sanitize/meson-logs/testlog.json"
else
  echo "the sanitizer build failed"
  extra_failed=$((extra_failed + 1))
fi

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
