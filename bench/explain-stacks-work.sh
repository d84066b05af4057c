#!/usr/bin/env bash
# What work do --explain's late-only kernel stacks add to a wake-up of the measured thread
# (issue 53)? Counted, not timed: boots one guest kernel under QEMU (tests/guest/guest.py
# boot) and runs `rtscope measure -D 20s -i 1000us --cpus 1 -p 95 --explain 1500us
# --explain-stacks auto` there. Beside it, a second tracefs instance (`counts`) counts each
# event the late-only triggers sit on, per CPU (`hist:keys=common_cpu`: how often the
# triggers' filters are evaluated). Two snapshots 5 s apart of that and of the run's own
# hist files (their hitcounts: the tracing_map updates, and, for the triggers with an
# `onmatch` action, the synthetic events fired) are divided by the measured thread's
# wake-ups in between (its voluntary_ctxt_switches). Prints per wake-up, on the measured
# CPU: events and trigger evaluations; over the run's triggers: map updates and synthetic
# events fired. A quiet guest: on CPU 1 nearly every wake-up is a prompt one.
# Usage: bench/explain-stacks-work.sh [KERNEL]   RTSCOPE=static binary (default: x86_64 musl),
#        APPEND=extra kernel command line (e.g. preempt=full)
set -euo pipefail
cd "$(dirname "$0")/.."
kernel=${1:-amd64}
bin=${RTSCOPE:-target/x86_64-unknown-linux-musl/release/rtscope}
[ -x "$bin" ] || { echo "build the static binary first (tests/guest/README.md)" >&2; exit 2; }
out=$(mktemp -d /tmp/rtscope-bench-stacks-work.XXXXXX)
trap 'rm -rf "$out"' EXIT
cat >"$out/work.sh" <<'GUEST'
T=/sys/kernel/tracing
C=$T/instances/counts
mkdir $C
for e in sched/sched_waking sched/sched_switch timer/hrtimer_start timer/hrtimer_expire_entry; do
    echo 'hist:keys=common_cpu:vals=hitcount' >>$C/events/$e/trigger
done
rtscope measure -D 20s -i 1000us --cpus 1 -p 95 --explain 1500us --explain-stacks auto \
    --no-db --json /tmp/m.json >/tmp/m.log 2>&1 &
snap() { # snap FILE: the measured thread's wake-ups, the counts, the run's hist files
    d=$(ls -d $T/instances/rtscope-* | head -n 1)
    for c in /proc/[0-9]*/task/[0-9]*/comm; do
        case $(cat "$c" 2>/dev/null) in rtscope-m*) t=${c%/comm} ;; esac
    done
    {
        echo "wakeups $(grep ^voluntary_ctxt_switches "$t/status" | tr -s '\t ' ' ' | cut -d' ' -f2)"
        for e in sched/sched_waking sched/sched_switch timer/hrtimer_start timer/hrtimer_expire_entry; do
            echo "count $e $(grep -E '^\{ common_cpu: +1 \}' $C/events/$e/hist | tr -s ' ' | sed 's/.*hitcount: *//')"
            echo "== $e"
            grep -E '^# trigger info|^ +Hits' "$d/events/$e/hist"
        done
        for s in "$d"/events/synthetic/*/; do
            s=${s%/}
            echo "synthetic ${s##*/}: $(grep -v '^#' "$s/trigger")"
        done
        echo "uname $(uname -v)"
        echo "preempt $(cat /sys/kernel/debug/sched/preempt 2>/dev/null)"
    } >"$1"
}
sleep 5; snap /tmp/snap1.txt
sleep 5; snap /tmp/snap2.txt
wait
mark rc "$?"
grep -E "explaining|stacks|rror" /tmp/m.log | head -n 5 >/tmp/tier.txt
put_file snap1.txt /tmp/snap1.txt
put_file snap2.txt /tmp/snap2.txt
put_file tier.txt /tmp/tier.txt
mark done work
GUEST
python3 tests/guest/guest.py boot "$kernel" --rtscope "$bin" --script "$out/work.sh" \
  --append "${APPEND:-}" --save-dir "$out" --timeout 600 --console "$out/console.log" >"$out/markers.txt"
grep -q "done work" "$out/markers.txt" || { tail -n 30 "$out/console.log" >&2; exit 1; }
grep -q "^wakeups [0-9]" "$out/snap2.txt" || { cat "$out/tier.txt" "$out/snap2.txt" >&2; exit 1; }
cat "$out/tier.txt" "$out/snap2.txt"
python3 - "$out/snap1.txt" "$out/snap2.txt" <<'PY'
import re, sys
def read(p):
    d = {"hits": []}
    for ln in open(p):
        if ln.startswith("wakeups "): d["w"] = int(ln.split()[1])
        elif ln.startswith("count "):
            f = ln.split(); d[f[1]] = int(f[2]) if len(f) > 2 else 0
        elif ln.startswith("== "): ev = ln.split()[1]
        elif ln.startswith("# trigger info"): info = ln.split("trigger info: ")[1].strip()
        elif re.match(r"^ +Hits", ln): d["hits"].append((ev, info, int(ln.split()[1])))
    return d
a, b = read(sys.argv[1]), read(sys.argv[2])
w = b["w"] - a["w"]
print(f"measured thread's wake-ups between the snapshots: {w}")
evals = 0.0
for e in ["sched/sched_waking", "sched/sched_switch", "timer/hrtimer_start",
          "timer/hrtimer_expire_entry"]:
    n = sum(1 for h in b["hits"] if h[0] == e)
    per = (b[e] - a[e]) / w
    evals += per * n
    print(f"CPU 1 {e}: {per:.2f} per wake-up x {n} late-only trigger(s)")
print(f"trigger evaluations per wake-up on CPU 1: {evals:.2f}")
maps = synth = 0.0
for (e, info, h1), (_, _, h2) in zip(a["hits"], b["hits"]):
    per = (h2 - h1) / w
    maps += per
    synth += per if "onmatch" in info else 0
    print(f"  {per:.2f}/wake-up  {e}: {info[:110]}")
print(f"tracing_map updates per wake-up (all CPUs): {maps:.2f}; synthetic events fired: {synth:.2f}")
PY
