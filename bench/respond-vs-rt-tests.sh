#!/usr/bin/env bash
# rtscope respond's IPC mechanisms vs their rt-tests counterparts, in alternating rounds
# (rtscope --pacing timer, rtscope --pacing handshake, the rt-tests program, for each mechanism
# in turn) so that load on a shared machine hits all three alike. Every run: sender and receiver
# on one CPU, receiver SCHED_FIFO 95, one event per 1000 us, LOOPS events.
#
# Same conditions for both tools: this script holds one PM QoS request on /dev/cpu_dma_latency
# (PM_QOS us, default 0) from the first run to the last, from a process of its own, so rtscope
# and the rt-tests programs (whose IPC tests make no request of their own) run under the same one.
# `off` holds none. The value read back is printed.
#
# Which interval each measures (docs/respond.md, "Which interval"): the handshake pacing is the
# rt-tests programs' pattern and interval (the receiver sleeps, hands a ready token back, the
# sender at the same priority sends at once); the timer pacing, rtscope's default, measures an
# event that finds its receiver waiting since the previous one. rt-tests reads gettimeofday
# (whole us per sample); its JSON avg (2 decimals) is set against rtscope's mean and p50.
# eventfd, pipe and unix-dgram have no rt-tests peer: they are measured for reference.
#
# Usage: bench/respond-vs-rt-tests.sh [PAIRS] [LOOPS] [CPU] [PM_QOS|off]
#        (root; rt-tests installed; RTSCOPE_BIN=path picks the binary [target/release/rtscope];
#        about PAIRS x 11 x LOOPS ms). Run it on a quiet machine: nothing else compiling.
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-5}
loops=${2:-5000}
cpu=${3:-1}
qos=${4:-0}
bin=${RTSCOPE_BIN:-./target/release/rtscope}
[ -x "$bin" ] || { echo "build first: cargo build --release" >&2; exit 2; }
for p in ptsematest pmqtest sigwaittest svsematest; do
  command -v "$p" >/dev/null || { echo "$p missing: apt-get install rt-tests" >&2; exit 2; }
done
out=$(mktemp -d)
holder=
cleanup() {
  [ -n "$holder" ] && kill "$holder" 2>/dev/null || true
  rm -rf "$out"
}
trap cleanup EXIT

read_qos() {
  python3 -c 'import struct; print(struct.unpack("i", open("/dev/cpu_dma_latency", "rb").read(4))[0])'
}
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$qos" != off ]; then
  # The request lasts as long as the file stays open: this process holds it for every run.
  python3 -c '
import os, signal, struct, sys
fd = os.open("/dev/cpu_dma_latency", os.O_RDWR)
os.write(fd, struct.pack("i", int(sys.argv[1])))
print("ready", flush=True)
signal.pause()
' "$qos" >"$out/holder" &
  holder=$!
  for _ in $(seq 50); do grep -q ready "$out/holder" 2>/dev/null && break; sleep 0.1; done
  grep -q ready "$out/holder" || { echo "cannot hold /dev/cpu_dma_latency" >&2; exit 2; }
  echo "PM QoS: /dev/cpu_dma_latency held at $qos us for both tools (reads $(read_qos))"
else
  echo "PM QoS: none held by this script (/dev/cpu_dma_latency reads $(read_qos))"
fi

declare -A peer=([futex]=ptsematest [mqueue]=pmqtest [signal]=sigwaittest [sysvsem]=svsematest)
for i in $(seq 1 "$pairs"); do
  for m in futex mqueue signal sysvsem eventfd pipe unix-dgram; do
    for pacing in timer handshake; do
      "$bin" respond --no-db --ipc "$m" --placement same --cpu "$cpu" -p 95 -i 1ms -l "$loops" \
        --pacing "$pacing" -q --json "$out/$m-$pacing-$i.json" >/dev/null
    done
    if [ -n "${peer[$m]:-}" ]; then
      # sigwaittest now and then dies of its own SIGUSR2 at exit after printing its summary;
      # a run without a result is left out (and said) below.
      "${peer[$m]}" -a "$cpu" -p 95 -i 1000 -l "$loops" -q --json="$out/$m-$i.rtjson" \
        >"$out/$m-$i.rt" 2>&1 || true
    fi
  done
done
python3 - "$out" "$pairs" <<'PY'
import json, re, sys, statistics
out, pairs = sys.argv[1], int(sys.argv[2])
peers = {"futex": "ptsematest", "mqueue": "pmqtest", "signal": "sigwaittest", "sysvsem": "svsematest"}
med = statistics.median

def peer_avg(m, i):
    """The rt-tests receiver's avg (us, 2 decimals from --json; else the whole-us summary)."""
    try:
        doc = json.load(open(f"{out}/{m}-{i}.rtjson"))
        r = doc["thread"]["0"]["receiver"]
        return float(r["min"]), float(r["avg"]), float(r["max"])
    except (OSError, ValueError, KeyError):
        text = open(f"{out}/{m}-{i}.rt").read()
        g = re.search(r"Min\s+(\d+).*Avg\s+(\d+),\s+Max\s+(\d+)", text)
        if g is None:
            print(f"note: {peers[m]} run {i} gave no result: {text.strip()[-120:]!r}")
            return None
        return tuple(float(x) for x in g.groups())

print(f"{'mechanism':<11} {'pacing':<9} {'p50':>6} {'mean':>6} {'max':>7} {'lost':>5} | "
      f"{'rt-tests':<11} {'min':>5} {'avg':>6} {'max':>6} | {'p50/avg':>7} {'mean/avg':>8}"
      f"  (medians of {pairs} rounds, us)")
for m in ["futex", "mqueue", "signal", "sysvsem", "eventfd", "pipe", "unix-dgram"]:
    peer = [p for p in (peer_avg(m, i) for i in range(1, pairs + 1)) if p] if m in peers else []
    for pacing in ["timer", "handshake"]:
        p50, mean, mx, lost = [], [], [], 0
        for i in range(1, pairs + 1):
            r = json.load(open(f"{out}/{m}-{pacing}-{i}.json"))["results"][0]
            p50.append(r["percentiles_ns"]["p50"] / 1000)
            mean.append(r["mean_ns"] / 1000)
            mx.append(r["max_ns"] / 1000)
            lost += r["lost"]
        line = f"{m:<11} {pacing:<9} {med(p50):>6.2f} {med(mean):>6.2f} {med(mx):>7.1f} {lost:>5} | "
        if peer:
            mn, avg, px = (med([p[k] for p in peer]) for k in range(3))
            line += (f"{peers[m]:<11} {mn:>5.0f} {avg:>6.2f} {px:>6.0f} | "
                     f"{med(p50) / avg:>7.2f} {med(mean) / avg:>8.2f}")
        else:
            line += f"{'-':<11} {'':>5} {'':>6} {'':>6} |"
        print(line)
PY
