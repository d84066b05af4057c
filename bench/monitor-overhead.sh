#!/usr/bin/env bash
# Does sampling the system monitors disturb the measurement? Interleaved pairs of the same
# N:N run with monitors every second (the default) and with monitors off, on the release
# binary. Prints p50/p99/p99.9/max of each run and the median ratio (with/without).
# Usage: bench/monitor-overhead.sh [PAIRS] [DURATION]      (root; about PAIRS × 2 × DURATION)
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-3}
dur=${2:-15s}
bin=./target/release/rtscope
out=$(mktemp -d)
for i in $(seq 1 "$pairs"); do
  for mode in on off; do
    iv=1s; [ "$mode" = off ] && iv=0
    # Monitors run only while recording: both modes record into a scratch database.
    "$bin" measure -D "$dur" -i 200us -q --db "$out/runs.db" --monitor-interval "$iv" --json "$out/$mode-$i.json" >/dev/null
  done
done
python3 - "$out" "$pairs" <<'PY'
import json, sys, statistics
out, pairs = sys.argv[1], int(sys.argv[2])
def stats(path):
    d = json.load(open(path))["total"]
    p = d["percentiles_ns"]
    return p["p50"], p["p99"], p["p99.9"], d["max_ns"]
ratios = {k: [] for k in ("p50", "p99", "p99.9", "max")}
for i in range(1, pairs + 1):
    on, off = stats(f"{out}/on-{i}.json"), stats(f"{out}/off-{i}.json")
    print(f"pair {i}: monitors on  p50/p99/p99.9/max = {'/'.join(f'{v/1000:.1f}' for v in on)} us")
    print(f"        monitors off p50/p99/p99.9/max = {'/'.join(f'{v/1000:.1f}' for v in off)} us")
    for k, a, b in zip(ratios, on, off):
        ratios[k].append(a / b if b else float("nan"))
for k, v in ratios.items():
    print(f"{k}: median ratio on/off {statistics.median(v):.2f} (pairs {min(v):.2f}-{max(v):.2f})")
PY
