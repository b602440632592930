#!/bin/sh
# The README's test command. Installs what is missing, builds, and runs the
# checks, then prints one line "N passed, N failed, N skipped" (each extra
# check counts as one test).
#
#   tests/run.sh           the quick suite: the build (CUDA code for this
#                          machine's GPU alone, sm_90 without one), the
#                          formatting and the whole test suite; a few
#                          minutes on 2 cores from a fresh clone
#   tests/run.sh --full    what CI runs: the same with the release's GPU
#                          architectures, then the CPU tests again under the
#                          leaks tracer, under valgrind and in a build with
#                          AddressSanitizer and UndefinedBehaviorSanitizer
#                          (built without CUDA, which that build checks)
#
# Every long step prints its progress (ninja's [done/total] lines, meson's
# line per test), so no stretch is silent.
set -u
cd "$(dirname "$0")/.."
full=no
case "${1:-}" in
  --full) full=yes ;;
  "") ;;
  *)
    echo "usage: tests/run.sh [--full]" >&2
    exit 2
    ;;
esac
tests/install-deps.sh || exit 1
if [ -x /usr/local/cuda/bin/nvcc ]; then
  PATH=/usr/local/cuda/bin:$PATH
  export PATH
fi
build=${BUILDDIR:-build}
logs=""
extra_failed=0

step () {
  echo "== $* ($(date +%T))"
}

# The compute capability of this machine's first GPU ("90"), or nothing.
gpu_arch () {
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null \
      | head -1 | tr -d ' .'
  fi
}

# meson compile with ninja's progress lines only; the whole log on failure.
compile () {
  dir=$1
  log=$dir/compile.log
  status_file=$(mktemp)
  { meson compile -C "$dir" > "$log" 2>&1; echo $? > "$status_file"; } &
  # ninja's latest [done/total] line every few seconds: progress without
  # the hundreds of command lines
  shown=""
  while [ ! -s "$status_file" ]; do
    sleep 5
    line=$(grep -E '^\[[0-9]+/[0-9]+\]' "$log" 2>/dev/null | tail -1)
    if [ -n "$line" ] && [ "$line" != "$shown" ]; then
      echo "  $line" | cut -c1-100
      shown=$line
    fi
  done
  wait
  status=$(cat "$status_file")
  rm -f "$status_file"
  if [ "$status" -ne 0 ]; then
    grep -E -B2 -A8 'error|Error' "$log" | head -60
    echo "the build in $dir failed: its log is $log"
  fi
  return "$status"
}

# Configures a build directory once; the remaining arguments are options.
configure () {
  dir=$1
  shift
  if [ ! -f "$dir/build.ninja" ]; then
    step "configuring $dir"
    setup_log=$(mktemp)
    if ! meson setup "$dir" "$@" > "$setup_log" 2>&1; then
      cat "$setup_log"
      rm -f "$setup_log"
      return 1
    fi
    rm -f "$setup_log"
  fi
}

if [ "$full" = yes ]; then
  configure "$build" || exit 1
else
  arch=$(gpu_arch)
  configure "$build" -Dcuda-architectures="${arch:-90}" || exit 1
fi
step "building $build"
compile "$build" || exit 1

step "formatting (gst-indent flags for C, clang-format for CUDA)"
if ! tests/format.sh --check; then
  extra_failed=$((extra_failed + 1))
fi

step "test suite"
meson test -C "$build" --print-errorlogs --num-processes 2
logs="$logs $build/meson-logs/testlog.json"

if [ "$full" = yes ]; then
  step "CPU tests under the leaks tracer"
  meson test -C "$build" --setup=leaks --suite cpu --print-errorlogs \
    --num-processes 2
  logs="$logs $build/meson-logs/testlog-leaks.json"

  # Without the "compute" suite: library tests that are arithmetic over
  # many random cases (no GLib objects, few allocations), 60 to 300 s each
  # under valgrind; the sanitizer build below runs them for memory errors.
  step "CPU tests under valgrind"
  meson test -C "$build" --setup=valgrind --suite cpu --no-suite compute \
    --print-errorlogs --num-processes 2
  logs="$logs $build/meson-logs/testlog-valgrind.json"

  # The CPU suite again, built with AddressSanitizer and
  # UndefinedBehaviorSanitizer in a build of its own, without CUDA (so it
  # is also the check that the project builds without): any invalid access or
  # undefined behaviour fails the test that hit it. Leaks are the leaks
  # tracer's and valgrind's above (GLib's caches would drown LeakSanitizer),
  # and plugins load in the test process (the plugin scanner is not
  # instrumented). gst-inspect-1.0 and python are not instrumented either,
  # so the docs and examples tests stay out.
  #
  # Loading in the test process runs every system plugin's constructors
  # there, whitelisted or not (the whitelist is read from a loaded plugin),
  # and some change the process's floating-point mode: soundtouch
  # (gst-plugins-bad) turns on flush-to-zero, and the tests that check
  # denormals then fail. So this build sees only the plugin packages the
  # tests use: core, base, good and bad's pcapparse.
  step "CPU tests under AddressSanitizer and UndefinedBehaviorSanitizer"
  sanitize=${build}-sanitize
  if configure "$sanitize" -Dcuda=disabled -Dbenchmarks=disabled \
      -Dexamples=disabled -Db_sanitize=address,undefined -Db_lundef=false \
      && compile "$sanitize"; then
    system_plugins=$(cd "$sanitize" && pwd)/system-plugins
    rm -rf "$system_plugins"
    mkdir -p "$system_plugins"
    {
      dpkg -L libgstreamer1.0-0 gstreamer1.0-plugins-base \
        gstreamer1.0-plugins-good
      dpkg -L gstreamer1.0-plugins-bad | grep '/libgstpcapparse\.so$'
    } 2>/dev/null | grep -E '/gstreamer-1\.0/libgst[^/]*\.so$' \
      | while read -r plugin; do ln -sf "$plugin" "$system_plugins/"; done
    # without dpkg's lists (not Debian), the system's folders as they are
    plugin_env=""
    [ -z "$(ls "$system_plugins")" ] \
      || plugin_env="GST_PLUGIN_SYSTEM_PATH_1_0=$system_plugins"
    # shellcheck disable=SC2086
    env $plugin_env ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 GST_REGISTRY_FORK=no \
      meson test -C "$sanitize" --suite cpu --no-suite docs --print-errorlogs \
      --num-processes 2
    logs="$logs $sanitize/meson-logs/testlog.json"
  else
    echo "the sanitizer build failed"
    extra_failed=$((extra_failed + 1))
  fi
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
