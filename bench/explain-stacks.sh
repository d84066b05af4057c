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
run() { # run MODE N
  "$bin" measure -D "${secs}s" -i "${interval}us" --cpus 1 -p 95 --explain "$threshold" \
    --explain-stacks "$1" --no-db -q --json "$out/$1-$2.json" >/dev/null
}
for n in $(seq 1 "$pairs"); do
  if [ $((n % 2)) = 1 ]; then run off "$n"; run on "$n"; else run on "$n"; run off "$n"; fi
done
python3 - "$out" "$pairs" <<'PY'
import json, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])
def figs(path):
    v = json.load(open(path))
    t = v["threads"][0]
    worst = v.get("explain", {}).get("worst", [])
    return t["percentiles_ns"]["p99"], t["max_ns"], sum(1 for w in worst if w.get("stack"))
r99, rmax = [], []
print("pair | off: p99 / max (us) | on: p99 / max (us) | kept spikes with a stack (on)")
for n in range(1, pairs + 1):
    (o99, omax, _), (n99, nmax, st) = figs(f"{out}/off-{n}.json"), figs(f"{out}/on-{n}.json")
    r99.append(n99 / o99); rmax.append(nmax / omax)
    print(f"{n} | {o99/1e3:.1f} / {omax/1e3:.1f} | {n99/1e3:.1f} / {nmax/1e3:.1f} | {st}")
print(f"p99 ratio on/off: median {statistics.median(r99):.3f} (pairs {min(r99):.2f}-{max(r99):.2f})")
print(f"max ratio on/off: median {statistics.median(rmax):.3f}")
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
