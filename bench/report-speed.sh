#!/usr/bin/env bash
# How long `rtscope report` takes for a campaign of 50 runs of 1 M samples each (2 CPUs ×
# 500,000 samples, 1 kHz, so 500 s per run with per-second series, monitors and top threads).
#
# Usage: bash bench/report-speed.sh [RUNS] [SAMPLES_PER_CPU] [REPEATS]
# Builds the release binary and the synth_db example, writes the synthetic database once into
# a temporary directory, then times REPEATS reports (default 5) and prints min / median / max.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-50}
samples=${2:-500000}
repeats=${3:-5}
cargo build --release -q -p rtscope
cargo build --release -q -p rtscope-testkit --example synth_db
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
db="$work/bench.db"
start=$(date +%s%N)
target/release/examples/synth_db "$db" "$runs" "$samples" bench >/dev/null
echo "database: $runs runs × 2 CPUs × $samples samples written in $(( ($(date +%s%N) - start) / 1000000 )) ms ($(du -h "$db" | cut -f1))"
times=()
for i in $(seq "$repeats"); do
  rm -rf "$work/out"
  t0=$(date +%s%N)
  target/release/rtscope report --db "$db" --campaign bench -o "$work/out" >/dev/null
  t1=$(date +%s%N)
  times+=("$(( (t1 - t0) / 1000000 ))")
done
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
min=$(echo "$sorted" | head -1)
max=$(echo "$sorted" | tail -1)
median=$(echo "$sorted" | sed -n "$(( (repeats + 1) / 2 ))p")
echo "report of $runs runs: min $min ms, median $median ms, max $max ms over $repeats repeats"
echo "files: $(ls "$work/out" | wc -l), total $(du -sh "$work/out" | cut -f1), report.html $(du -h "$work/out/report.html" | cut -f1)"
