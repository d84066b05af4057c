#!/usr/bin/env bash
# The floor of an in-kernel (eBPF) flight recorder's cost on the measured wake-up (issue 68):
# interleaved rounds of the same `rtscope measure --cpus 1 -i 200us -p 90` run plain, beside
# eBPF programs on the 23 raw tracepoints --explain's tracefs recorder enables (a no-op; a
# minimal per-CPU ring store: the time and the first argument, one helper call and one map
# lookup; crates/rtscope-bpf/examples/raw_tp_floor.rs, held on CPU 0), and with `--explain
# 100us` (the tracefs recorder). The order reverses every round. Prints each run's p50, p99
# and p99.9 and, per variant, the median and range of its ratio to plain in the same round.
# Figures: BENCHMARKS-HISTORY.md ("The floor of an eBPF recorder").
# Usage: bench/raw-tp-floor.sh [ROUNDS] [SECONDS]   (root; nothing else running)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
secs=${2:-8}
bin=${RTSCOPE:-target/release/rtscope}
floor=target/release/examples/raw_tp_floor
[ "$(id -u)" = 0 ] || { echo "run as root (eBPF, SCHED_FIFO)" >&2; exit 2; }
[ -x "$bin" ] || { echo "build first: cargo build --release -p rtscope" >&2; exit 2; }
[ -x "$floor" ] || { echo "build first: cargo build --release -p rtscope-bpf --example raw_tp_floor" >&2; exit 2; }
out=$(mktemp -d /tmp/rtscope-bench-floor.XXXXXX)
held=
trap '[ -z "$held" ] || kill "$held" 2>/dev/null; wait 2>/dev/null; rm -rf "$out"' EXIT

# measure [ARGS…]: one run; prints "p50 p99 p99.9" (ns) of its one thread.
measure() {
  "$bin" measure --cpus 1 -i 200us -D "${secs}s" -p 90 --no-db -q --json "$out/run.json" "$@" \
    >"$out/run.log" 2>&1
  python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))["threads"][0]["percentiles_ns"]
print(p["p50"], p["p99"], p["p99.9"])' "$out/run.json"
}

# with_programs MODE: one run beside the programs (their holder on CPU 0 until its stdin closes).
with_programs() {
  mkfifo "$out/hold"
  taskset -c 0 "$floor" "$1" <"$out/hold" >"$out/floor.log" 2>&1 &
  held=$!
  exec 3>"$out/hold"
  sleep 1
  grep -q "attached 23 of 23" "$out/floor.log" || { cat "$out/floor.log" >&2; exit 1; }
  measure
  exec 3>&-
  wait "$held"
  held=
  rm -f "$out/hold"
}

printf 'round\tvariant\tp50_ns\tp99_ns\tp99.9_ns\n' | tee "$out/all.tsv"
for r in $(seq "$rounds"); do
  order="plain noop record tracefs"
  [ $((r % 2)) = 0 ] && order="tracefs record noop plain"
  for v in $order; do
    case $v in
      plain) res=$(measure) ;;
      tracefs) res=$(measure --explain 100us) ;;
      *) res=$(with_programs "$v") ;;
    esac
    printf '%s\t%s\t%s\n' "$r" "$v" "${res// /$'\t'}" | tee -a "$out/all.tsv"
  done
done
python3 - "$out/all.tsv" <<'PY'
import collections, statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
by = collections.defaultdict(dict)
for r, v, *p in rows:
    by[r][v] = [int(x) for x in p]
print("\nvariant  stat   median ratio to plain (range), rounds")
for v in ("noop", "record", "tracefs"):
    for i, name in enumerate(("p50", "p99", "p99.9")):
        q = [by[r][v][i] / by[r]["plain"][i] for r in by if v in by[r] and "plain" in by[r]]
        print(f"{v:<8} {name:<6} {statistics.median(q):.3f} ({min(q):.3f}-{max(q):.3f}), {len(q)}")
PY
