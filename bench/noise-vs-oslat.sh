#!/usr/bin/env bash
# rtscope noise vs rt-tests' oslat on the same CPU, in alternating rounds (oslat, rtscope noise
# on the raw counter, rtscope noise on the vDSO clock, for each round in turn) so that load on a
# shared machine hits all three alike. Issue 33's bar: iterations per second at least oslat's on
# the same CPU, with nothing in the loop but the counter read, the compare and a store.
#
# Same conditions: SCHED_OTHER for every loop (both tools' default), one CPU, SECS seconds,
# the loop spinning without a pause (rtscope --runtime = --period; oslat never pauses), each
# tool's main thread on another CPU (oslat -C, rtscope's housekeeping default). Iterations per
# second: oslat's histogram holds one count per loop iteration (1 us buckets), over its
# `duration`; rtscope's `iterations` over its `runtime_ns`. Also set side by side: the longest
# gap, and the iterations that took more than 2 us, per second (oslat's 1 us buckets from the
# third up: its first holds the tens-of-ns iterations, so bucket k is (k-1, k] us; rtscope's
# histogram above 2,000 ns).
#
# Usage: bench/noise-vs-oslat.sh [ROUNDS] [SECS] [CPU]
#        (root; rt-tests installed; RTSCOPE_BIN=path picks the binary [target/release/rtscope]).
#        Run it on a quiet machine: nothing else compiling.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
secs=${2:-5}
cpu=${3:-1}
bin=${RTSCOPE_BIN:-./target/release/rtscope}
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 2; }
command -v oslat >/dev/null || { echo "oslat missing: apt-get install rt-tests" >&2; exit 2; }
main=0
[ "$cpu" = 0 ] && main=1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); CPU $cpu, $rounds rounds of $secs s"
for r in $(seq "$rounds"); do
  oslat -q -c "$cpu" -C "$main" -D "$secs" --json="$out/oslat-$r.json" >/dev/null
  for counter in raw clock; do
    "$bin" noise -q --no-db --cpus "$cpu" -D "${secs}s" --runtime 1s --period 1s \
      --counter "$counter" --json "$out/rtscope-$counter-$r.json" >/dev/null
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" "$rounds" <<'EOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])

def oslat(r):
    t = json.load(open(f"{out}/oslat-{r}.json"))["thread"]["0"]
    h = {int(k): v for k, v in t["histogram"].items()}
    n = sum(h.values())
    return n / t["duration"], t["max"] * 1000, sum(v for k, v in h.items() if k >= 3) / t["duration"]

def rtscope(counter, r):
    d = json.load(open(f"{out}/rtscope-{counter}-{r}.json"))
    c = d["cpus"][0]
    s, secs = c["summary"], c["summary"]["runtime_ns"] / 1e9
    over2 = sum(n for low, n in c["histogram"] if low > 2000)
    return s["iterations"] / secs, s["max_single_ns"], over2 / secs, d["config"]["counter"]

rows = {"oslat": [oslat(r) for r in range(1, rounds + 1)]}
for counter in ("raw", "clock"):
    rows[f"rtscope --counter {counter}"] = [rtscope(counter, r) for r in range(1, rounds + 1)]
base = statistics.median(x[0] for x in rows["oslat"])
print(f"\n| loop | iterations/s (median of {rounds}) | vs oslat | range | longest gap, median | > 2 us per s, median |")
print("|---|---|---|---|---|---|")
for name, v in rows.items():
    ips = [x[0] for x in v]
    med = statistics.median(ips)
    label = name + (f" ({v[0][3]})" if len(v[0]) > 3 else "")
    print(f"| {label} | {med / 1e6:.2f} M | {med / base:.3f} | {min(ips) / 1e6:.2f}-{max(ips) / 1e6:.2f} M "
          f"| {statistics.median(x[1] for x in v) / 1000:.1f} us | {statistics.median(x[2] for x in v):.0f} |")
EOF
