#!/usr/bin/env bash
# What do the late-only stacks' eBPF programs themselves cost per wake-up (issue 53)? Not a
# timing of the measurement: the kernel's own accounting of each program's run time
# (`kernel.bpf_stats_enabled`, set for this run and restored on exit; it adds two clock reads
# per program run, so no latency of this run is reported). One `rtscope measure --explain
# --explain-stacks on` run, one SCHED_FIFO 95 thread on CPU 1; after WARM seconds and again
# before it ends, the `run_cnt` and `run_time_ns` of each of its programs are read from
# /proc/PID/fdinfo (the process holds them as file descriptors) with the measured thread's
# wake-ups (`voluntary_ctxt_switches`) between the two reads. Prints each program's runs and
# mean ns per run, and the programs' ns per wake-up. Figures: BENCHMARKS.md.
# Usage: bench/explain-stacks-progtime.sh [SECONDS] [INTERVAL_US] [THRESHOLD]   (root)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
interval=${2:-200}
threshold=${3:-1500us}
warm=5
bin=${RTSCOPE:-./target/release/rtscope}
[ -x "$bin" ] || { echo "build first: cargo build --release -p rtscope" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "run as root (eBPF, SCHED_FIFO)" >&2; exit 2; }
[ "$secs" -gt $((warm + 5)) ] || { echo "SECONDS must be over $((warm + 5))" >&2; exit 2; }
stats=$(sysctl -n kernel.bpf_stats_enabled)
out=$(mktemp -d /tmp/rtscope-bench-progtime.XXXXXX)
pid=
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null; wait 2>/dev/null; sysctl -q -w kernel.bpf_stats_enabled="$stats"; rm -rf "$out"; true' EXIT
sysctl -q -w kernel.bpf_stats_enabled=1
"$bin" measure -D "${secs}s" -i "${interval}us" --cpus 1 -p 95 --explain "$threshold" \
  --explain-stacks on --no-db -q --json "$out/run.json" >"$out/run.log" 2>&1 &
pid=$!

# snapshot FILE: each BPF program of the run as "prog FD run_cnt run_time_ns" (fdinfo names no
# program; the fds ascend in the order rtscope_bpf::late loads them: hrtimer_start,
# sched_switch, hrtimer_expire_entry), then the measured thread's wake-ups.
snapshot() {
  local f fd cnt ns tid
  : >"$1"
  for f in /proc/"$pid"/fdinfo/*; do
    grep -q '^prog_type:' "$f" 2>/dev/null || continue
    fd=${f##*/}
    cnt=$(awk '$1 == "run_cnt:" {print $2}' "$f")
    ns=$(awk '$1 == "run_time_ns:" {print $2}' "$f")
    echo "prog $fd $cnt $ns" >>"$1"
  done
  for tid in /proc/"$pid"/task/*; do
    if grep -q '^rtscope-m' "$tid/comm" 2>/dev/null; then
      echo "wakeups $(awk '$1 == "voluntary_ctxt_switches:" {print $2}' "$tid/status")" >>"$1"
    fi
  done
}
sleep "$warm"
snapshot "$out/a"
sleep $((secs - warm - 3))
snapshot "$out/b"
wait "$pid" || { echo "the run failed:" >&2; cat "$out/run.log" >&2; exit 1; }
pid=
grep -m1 'kernel stacks' "$out/run.log" || true
python3 - "$out/a" "$out/b" <<'PY'
import sys

def read(path):
    progs, wake = {}, 0
    for line in open(path):
        f = line.split()
        if f[0] == "prog":
            progs[f[1]] = (int(f[2]), int(f[3]))
        elif f[0] == "wakeups":
            wake += int(f[1])
    return progs, wake

(pa, wa), (pb, wb) = read(sys.argv[1]), read(sys.argv[2])
wake = wb - wa
if not pb or wake <= 0:
    sys.exit("no BPF program or no wake-up between the reads: is the tier line above eBPF?")
total = 0
print(f"{wake} wake-ups between the reads")
print(f"{'program fd':>10} {'runs':>10} {'runs/wake-up':>13} {'ns/run':>8}")
for fd in sorted(pb, key=int):
    cnt = pb[fd][0] - pa.get(fd, (0, 0))[0]
    ns = pb[fd][1] - pa.get(fd, (0, 0))[1]
    total += ns
    print(f"{fd:>10} {cnt:>10} {cnt / wake:>13.2f} {ns / cnt if cnt else 0:>8.0f}")
print(f"the programs' run time per wake-up (every CPU): {total / wake:.0f} ns")
PY
