#!/bin/bash
# Runs GPU test functions under compute-sanitizer, each in a process of its
# own, spread over the GPUs, and writes one line an item to a summary.
# Under racecheck a whole nms test program takes hours (docs/development.md),
# more than one device call; a function, or one iteration of a loop test,
# at a time fits, and a run started detached outlives the call that started
# it while the machine stays warm.
#
#   tests/sanitize-functions.sh [--tool TOOL] [--gpus 0,1] [--per-gpu N]
#       [--seconds S] [--logs DIR] [--build DIR] ITEM...
#
# ITEM: PROGRAM:FUNCTION or PROGRAM:FUNCTION:K, PROGRAM a meson test name
# (libs/nms_cuda), K one iteration of a loop test (its
# PERCEPTION_CHECK_ITERATION; the program must add the test with
# p3d_tcase_add_loop_test, or K is ignored). Items start in the order
# given, N at once on each GPU (default 2). TOOL is the sanitizer's tool
# (racecheck by default) and any more of its arguments
# ("racecheck --kernel-name-exclude kns=chunk_"). No item starts in the
# last 10 of S seconds (default 540); one still running at S is stopped
# and its line says "cut". DIR (default /tmp/sanitize) must be new or
# empty: each item's output (meson test --verbose) and the sanitizer's log
# go there, and its line to DIR/summary.txt:
#
#   ITEM gpuG rc=R Ts | the sanitizer's summary lines | check's last line
#
# or "ITEM not started". A line with "Checks: 0" says "ran nothing": a
# function name the program does not have, or an iteration past the loop's
# end. Run from the repository root, with the GPU machine's environment set
# (source .device/env.sh); PERCEPTION_REQUIRE_GPU=1 is set here, so that no
# item passes by skipping. The script waits for every item and exits 0, or
# 2 on a bad argument.
set -u
tool=racecheck
gpus=0
per_gpu=2
seconds=540
logs=/tmp/sanitize
build=build
while [ $# -gt 0 ]; do
  case "$1" in
    --tool) tool=$2; shift 2 ;;
    --gpus) gpus=$2; shift 2 ;;
    --per-gpu) per_gpu=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --logs) logs=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --*) echo "unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -eq 0 ]; then
  echo "usage: $0 [--tool TOOL] [--gpus 0,1] [--per-gpu N] [--seconds S]" \
    "[--logs DIR] [--build DIR] PROGRAM:FUNCTION[:ITERATION]..." >&2
  exit 2
fi
for item in "$@"; do
  if ! printf '%s' "$item" | grep -Eq '^[^:]+:[A-Za-z_][A-Za-z0-9_]*(:[0-9]+)?$'; then
    echo "$item: not PROGRAM:FUNCTION or PROGRAM:FUNCTION:K" >&2
    exit 2
  fi
done
if [ "$(printf '%s\n' "$@" | sort | uniq -d)" != "" ]; then
  echo "an item is given twice (its logs would be written twice)" >&2
  exit 2
fi
if [ -n "$(ls -A "$logs" 2>/dev/null)" ]; then
  echo "$logs is not empty (an earlier run's logs, or a run still going)" >&2
  exit 2
fi
export PERCEPTION_REQUIRE_GPU=1
mkdir -p "$logs" "$build/meson-logs"
deadline=$(($(date +%s) + seconds))
queue=$logs/queue.txt
printf '%s\n' "$@" > "$queue"

# The next item of the queue, taken under a lock so that no two workers
# take the same one; empty when none is left.
next_item () {
  (
    flock 9
    head -n 1 "$queue"
    sed -i '1d' "$queue"
  ) 9> "$logs/queue.lock"
}

run_item () { # gpu item
  local gpu=$1 item=$2 program function iteration name t0 left rc log checks
  program=${item%%:*}
  function=${item#*:}
  iteration=
  case "$function" in
    *:*) iteration=${function#*:}; function=${function%%:*} ;;
  esac
  name=$(printf '%s' "$item" | tr '/:' '__')
  t0=$(date +%s)
  left=$((deadline - t0))
  if [ $left -lt 10 ]; then
    echo "$item not started" >> "$logs/summary.txt"
    return
  fi
  log=$build/meson-logs/$name-compute-sanitizer.txt
  rm -f "$log"
  CUDA_VISIBLE_DEVICES=$gpu GST_CHECKS=$function \
    PERCEPTION_CHECK_ITERATION=$iteration \
    timeout -k 10 $left meson test -C "$build" --no-rebuild "$program" \
    --verbose --logbase "$name" --timeout-multiplier 0 \
    --wrapper "compute-sanitizer --tool $tool --error-exitcode 1" \
    > "$logs/$name.out" 2>&1
  rc=$?
  cp "$log" "$logs/" 2>/dev/null
  case $rc in
    124 | 137) rc="$rc cut" ;;
  esac
  checks=$(grep -h 'Checks:' "$logs/$name.out" 2>/dev/null | tail -n 1)
  case "$checks" in
    *"Checks: 0,"*) checks="$checks (ran nothing)" ;;
  esac
  echo "$item gpu$gpu rc=$rc $(($(date +%s) - t0))s |" \
    "$(grep -h 'SUMMARY' "$log" 2>/dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ' ')|" \
    "$checks" >> "$logs/summary.txt"
}

worker () { # gpu
  local item
  while item=$(next_item) && [ -n "$item" ]; do
    run_item "$1" "$item"
  done
}

for gpu in ${gpus//,/ }; do
  for _ in $(seq "$per_gpu"); do
    worker "$gpu" &
  done
done
wait
echo "sanitize-functions: done after $(($(date +%s) + seconds - deadline)) s" \
  >> "$logs/summary.txt"
