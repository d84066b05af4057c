#!/usr/bin/env bash
# Does --explain's flight recorder disturb the measurement? Alternating pairs of the same run
# with and without the recorder (the order flips every pair) under the quick preset's mixed
# load (messaging 4 groups × 10 fds, memory 2 threads × 128 MiB, one spinning CPU thread per
# CPU, all built in), on the release build. Prints p50/p99/p99.9/max of each run and the median
# p99 ratio (with/without). Figures: BENCHMARKS.md.
# VARIANTS=on,coarse,buf256,pinmain (environment) adds runs with the coarse tier only, a
# 256 KiB trace buffer, or the polling thread on the housekeeping CPU to each round.
# Usage: bench/explain-overhead.sh [ROUNDS] [SECONDS] [INTERVAL_US] [all]   (root)
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-5}
secs=${2:-20}
interval=${3:-200}
mode=${4:-}
bin=./target/release/rtscope
ex=./target/release/examples/explain_overhead
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 2; }
[ -x "$ex" ] || { echo "build first: cargo build --release -p rtscope-trace --example explain_overhead" >&2; exit 2; }
total=$(( pairs * 2 * (secs + 3) + 30 ))
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null' EXIT
"$bin" load --for "${total}s" messaging -g 4 -f 10 -s 100 >/dev/null & pids+=($!)
"$bin" load --for "${total}s" memory -t 2 -m 128 >/dev/null & pids+=($!)
"$bin" load --for "${total}s" cpu >/dev/null & pids+=($!)
sleep 2 # the loads warm up, as the preset's settle time
"$ex" "$pairs" "$secs" "$interval" $mode
