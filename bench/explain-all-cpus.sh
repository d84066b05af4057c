#!/usr/bin/env bash
# What does --explain cost where every CPU is measured (the README's main job, N:N)? There is
# no housekeeping CPU: the trace reader shares the measured CPUs and the spikes' trace is kept
# to the end of the run (docs/explain.md "Analysing"). Alternating pairs of `rtscope measure`
# on every CPU with and without `--explain 100us` (the order flips every pair), beside the quick
# preset's mixed load (messaging 4 groups × 10 fds, memory 2 threads × 128 MiB, one spinning CPU
# thread per CPU, all built in), release build. Prints each run's p50/p99/p99.9/max over all
# CPUs (µs), the spikes traced, and the median p99 and max ratios (with/without).
# Figures: BENCHMARKS.md. Usage: bench/explain-all-cpus.sh [PAIRS] [SECONDS] [INTERVAL_US] (root)
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-5}
secs=${2:-20}
interval=${3:-200}
bin=${RTSCOPE:-./target/release/rtscope}
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 2; }
out=$(mktemp -d)
total=$(( pairs * 2 * (secs + 5) + 30 ))
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT
"$bin" load --for "${total}s" messaging -g 4 -f 10 -s 100 >/dev/null & pids+=($!)
"$bin" load --for "${total}s" memory -t 2 -m 128 >/dev/null & pids+=($!)
"$bin" load --for "${total}s" cpu >/dev/null & pids+=($!)
sleep 2 # the loads warm up, as the preset's settle time
one() { # one NAME [FLAGS…]: a run on every CPU, its JSON in $out/NAME.json
  local name=$1
  shift
  "$bin" measure -D "${secs}s" -i "${interval}us" -q --no-db --json "$out/$name.json" "$@" >/dev/null
}
for p in $(seq 1 "$pairs"); do
  if [ $((p % 2)) -eq 1 ]; then
    one "off-$p"; one "on-$p" --explain 100us
  else
    one "on-$p" --explain 100us; one "off-$p"
  fi
done
python3 - "$out" "$pairs" <<'PY'
import json, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])
def stats(name):
    d = json.load(open(f"{out}/{name}.json"))
    t = d["total"]
    p = t["percentiles_ns"]
    x = d.get("explain") or {}
    c = x.get("counts", {})
    return [p["p50"] / 1e3, p["p99"] / 1e3, p["p99.9"] / 1e3, t["max_ns"] / 1e3], c
print("| pair | without: p50 / p99 / p99.9 / max (µs) | with: p50 / p99 / p99.9 / max (µs) | spikes traced |")
print("|---|---|---|---|")
r99, rmax = [], []
for i in range(1, pairs + 1):
    off, _ = stats(f"off-{i}")
    on, c = stats(f"on-{i}")
    fmt = lambda v: " / ".join(f"{x:.1f}" for x in v)
    print(f"| {i} | {fmt(off)} | {fmt(on)} | {c.get('traced', 0)} of {c.get('spikes', 0)} |")
    r99.append(on[1] / off[1])
    rmax.append(on[3] / off[3])
print(f"\np99 ratio with/without: median {statistics.median(r99):.2f} (pairs {min(r99):.2f}–{max(r99):.2f}); "
      f"max ratio: median {statistics.median(rmax):.2f} (pairs {min(rmax):.2f}–{max(rmax):.2f})")
PY
