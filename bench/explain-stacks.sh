#!/usr/bin/env bash
# What do --explain's kernel stacks cost the measurement (issue 53)? Interleaved pairs of the
# same `rtscope measure --explain` run with `--explain-stacks on` and `off` (the order flips
# every pair), one SCHED_FIFO 95 thread on CPU 1, release build. Prints p99 and max of each
# run, the spikes that got a stack, and the median p99 and max ratios (on/off); the target is
# a p99 ratio <= 1.05 on a quiet machine (load average < 1). Figures: BENCHMARKS.md.
# `on` takes the late-only stacks on a kernel with hist triggers, else the triggers at every
# wake-up (the run's tier line says which; docs/explain.md "Kernel stacks").
#   LOAD=hog   adds a SCHED_OTHER spinning thread on CPU 1: every wake-up then preempts it and,
#              with the triggers at every wake-up, takes a stack (their worst case).
#   AA=1       the control: both runs of a pair are `off` (the second is reported as `on`), so
#              the ratios show what this host's own scatter makes of no difference at all.
#   KEEP=DIR   keeps the runs' JSON in DIR (on-N.json, off-N.json: stacks-ratio.py DIR PAIRS).
#   VS=BINARY  two builds against each other, both `off`: RTSCOPE is reported as `on`, BINARY
#              as `off` (the handler events of the default path: RTSCOPE with them, BINARY the
#              commit before them).
#   VS_STACKS=on  with VS: both builds with `--explain-stacks on` (and RECORDER): one change to
#              the stack programs against the build before it (issue 68: BPF_RB_NO_WAKEUP).
#   BASE=plain the `off` run measures without --explain at all: what `--explain` with its
#              stacks costs against nothing observed (issue 68's figure: p50 <= 1.03 and p99
#              <= 1.05 pooled over >= 30 pairs).
#   RECORDER=ebpf|tracefs|auto  the `on` run's --explain-recorder (default: the binary's own,
#              tracefs): the eBPF flight recorder against the tracefs one (issue 68 item 3).
#   STACKS=off the `on` run takes no stacks (--explain-stacks off): with BASE=plain, what the
#              recorder alone costs.
# Usage: bench/explain-stacks.sh [PAIRS] [SECONDS] [INTERVAL_US] [THRESHOLD]   (root)
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-10}
secs=${2:-30}
interval=${3:-200}
threshold=${4:-50us}
bin=${RTSCOPE:-./target/release/rtscope}
[ -x "$bin" ] || { echo "build first: cargo build --release -p rtscope" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "run as root (tracefs, SCHED_FIFO)" >&2; exit 2; }
out=$(mktemp -d /tmp/rtscope-bench-stacks.XXXXXX)
pids=()
trap '[ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$out"; true' EXIT
if [ "${LOAD:-}" = hog ]; then
  total=$(( pairs * 2 * (secs + 3) + 30 ))
  taskset -c 1 timeout "$total" sh -c 'while :; do :; done' & pids+=($!)
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "${AA:-}" = 1 ] && echo "A/A control: --explain-stacks off in both runs of each pair"
[ "${BASE:-}" = plain ] && echo "on: --explain $threshold --explain-stacks on${RECORDER:+ --explain-recorder $RECORDER}; off: no --explain"
vs=${VS:-}
[ -z "$vs" ] || [ -x "$vs" ] || { echo "VS=$vs: not an executable" >&2; exit 2; }
vs_stacks=off
[ -z "$vs" ] || [ "${VS_STACKS:-}" != on ] || vs_stacks=on
[ -z "$vs" ] || echo "two builds, --explain-stacks $vs_stacks in both: on = $bin, off = $vs"
run() { # run on|off N
  local mode=$1 exe=$bin
  [ "${AA:-}" = 1 ] && mode=off
  if [ -n "$vs" ]; then
    [ "$mode" = off ] && exe=$vs
    mode=$vs_stacks
  fi
  local observe=(--explain "$threshold" --explain-stacks "$mode")
  [ -z "${RECORDER:-}" ] || observe+=(--explain-recorder "$RECORDER")
  [ "${STACKS:-}" != off ] || [ "$mode" != on ] ||
    observe=(--explain "$threshold" --explain-stacks off --explain-recorder "${RECORDER:-tracefs}")
  [ "${BASE:-}" = plain ] && [ "$mode" = off ] && observe=()
  "$exe" measure -D "${secs}s" -i "${interval}us" --cpus 1 -p 95 "${observe[@]}" \
    --no-db -q --json "$out/$1-$2.json" >/dev/null
}
if [ "${RECORDER:-}" = ebpf ]; then
  # The pairs are worth nothing if the eBPF recorder fell back to tracefs: one short run says.
  "$bin" measure -D 1s -i "${interval}us" --cpus 1 -p 95 --explain "$threshold" \
    --explain-stacks on --explain-recorder ebpf --no-db 2>&1 >/dev/null |
    grep -o 'recorder: eBPF rings[^;]*' ||
    { echo "RECORDER=ebpf: the eBPF recorder did not run here (its tier line above)" >&2; exit 2; }
fi
for n in $(seq 1 "$pairs"); do
  if [ $((n % 2)) = 1 ]; then run off "$n"; run on "$n"; else run on "$n"; run off "$n"; fi
done
python3 bench/stacks-ratio.py "$out" "$pairs"
if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$out"/*.json "$KEEP"/; fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
