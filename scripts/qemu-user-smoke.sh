#!/usr/bin/env bash
# Runs a cross-built rtscope under qemu-user: `measure`, `runs` and `report` must succeed.
#
#   bash scripts/qemu-user-smoke.sh dist/rtscope-0.1.0-aarch64-linux-musl qemu-aarch64-static
#
# qemu-user passes sched_setscheduler, affinity and mlockall through to the host kernel, so the
# measuring threads really are SCHED_FIFO on the host: they run at priority 1 (-p 1), the lowest
# real-time priority, so an emulated run cannot starve the shared machine's other work. The
# latencies of an emulated run mean nothing; only the function is checked.
set -euo pipefail
bin=$1
qemu=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export RTSCOPE_DB=$work/smoke.db
start=$(date +%s.%N)
"$qemu" "$bin" --version
"$qemu" "$bin" measure -D 2s -p 1 -q --label qemu-user >"$work/measure.txt"
grep -q 'SCHED_FIFO prio 1' "$work/measure.txt"
"$qemu" "$bin" runs >"$work/runs.txt"
grep -q 'qemu-user' "$work/runs.txt"
"$qemu" "$bin" report -o "$work/report" >/dev/null
test -s "$work/report/report.html"
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "qemu-user smoke ok: $(basename "$bin") under $qemu: measure, runs, report in $took s"
