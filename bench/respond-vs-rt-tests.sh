#!/usr/bin/env bash
# rtscope respond's IPC mechanisms vs their rt-tests counterparts, in alternating pairs (rtscope,
# rt-tests, rtscope, rt-tests, …) so that load on a shared machine hits both alike. Both tools:
# sender and receiver on the same CPU, receiver SCHED_FIFO 95, one event per 1000 us, LOOPS
# events. rt-tests prints min/avg/max in whole µs only (no percentiles), so its avg is set
# against rtscope's mean and p50. eventfd, pipe and unix-dgram have no rt-tests peer: they are
# measured in the same rounds for reference.
# Usage: bench/respond-vs-rt-tests.sh [PAIRS] [LOOPS] [CPU]   (root; rt-tests installed;
#        RTSCOPE_BIN=path picks the binary [target/release/rtscope];
#        about PAIRS × 9 × LOOPS ms)
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-5}
loops=${2:-5000}
cpu=${3:-1}
bin=${RTSCOPE_BIN:-./target/release/rtscope}
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 2; }
for p in ptsematest pmqtest sigwaittest svsematest; do
  command -v "$p" >/dev/null || { echo "$p missing: apt-get install rt-tests" >&2; exit 2; }
done
out=$(mktemp -d)
declare -A peer=([futex]=ptsematest [mqueue]=pmqtest [signal]=sigwaittest [sysvsem]=svsematest)
for i in $(seq 1 "$pairs"); do
  for m in futex mqueue signal sysvsem eventfd pipe unix-dgram; do
    "$bin" respond --ipc "$m" --placement same --cpu "$cpu" -p 95 -i 1ms -l "$loops" -q \
      --json "$out/$m-$i.json" >/dev/null
    if [ -n "${peer[$m]:-}" ]; then
      # sigwaittest now and then dies of its own SIGUSR2 at exit after printing its summary;
      # a run without a summary line is left out (and counted) below.
      "${peer[$m]}" -a "$cpu" -p 95 -i 1000 -l "$loops" -q >"$out/$m-$i.rt" 2>&1 || true
    fi
  done
done
python3 - "$out" "$pairs" <<'PY'
import json, re, sys, statistics
out, pairs = sys.argv[1], int(sys.argv[2])
peers = {"futex": "ptsematest", "mqueue": "pmqtest", "signal": "sigwaittest", "sysvsem": "svsematest"}
print(f"{'mechanism':<11} {'rtscope p50':>11} {'mean':>6} {'max':>7} {'lost':>5} | "
      f"{'rt-tests':<11} {'min':>4} {'avg':>4} {'max':>5} | {'p50/avg':>7}  (medians of {pairs} pairs, us)")
for m in ["futex", "mqueue", "signal", "sysvsem", "eventfd", "pipe", "unix-dgram"]:
    p50, mean, mx, lost, rmin, ravg, rmax = ([] for _ in range(7))
    for i in range(1, pairs + 1):
        r = json.load(open(f"{out}/{m}-{i}.json"))["results"][0]
        p50.append(r["percentiles_ns"]["p50"] / 1000)
        mean.append(r["mean_ns"] / 1000)
        mx.append(r["max_ns"] / 1000)
        lost.append(r["lost"])
        if m in peers:
            text = open(f"{out}/{m}-{i}.rt").read()
            g = re.search(r"Min\s+(\d+).*Avg\s+(\d+),\s+Max\s+(\d+)", text)
            if g is None:
                print(f"note: {peers[m]} run {i} printed no summary: {text.strip()[-120:]!r}")
                continue
            rmin.append(int(g.group(1))); ravg.append(int(g.group(2))); rmax.append(int(g.group(3)))
    med = statistics.median
    line = f"{m:<11} {med(p50):>11.1f} {med(mean):>6.1f} {med(mx):>7.1f} {sum(lost):>5} | "
    if m in peers:
        line += f"{peers[m]:<11} {med(rmin):>4} {med(ravg):>4} {med(rmax):>5} | {med(p50) / max(med(ravg), 1):>7.2f}"
    else:
        line += f"{'-':<11} {'':>4} {'':>4} {'':>5} |"
    print(line)
PY
rm -rf "$out"
