#!/usr/bin/env bash
# What do --explain's late-only kernel stacks cost (issue 53)? The kernels that have hist
# triggers and synthetic events (Debian's) are the guests' here, so this boots one under QEMU
# (tests/guest/guest.py boot) and runs bench/explain-stacks.sh's interleaved pairs inside it:
# the same `rtscope measure --explain THRESHOLD` (one SCHED_FIFO 95 thread on CPU 1) with
# `--explain-stacks auto` (late-only stacks: the run's tier line must say "kernel stacks when
# late", else the pair is not counted and the script fails) and `off`, the order flipping
# every pair. Prints p50, p99 and max of each run and the median ratios auto/off
# (bench/stacks-ratio.py); the target is a p99 ratio <= 1.05 on a quiet host. Under TCG every
# guest instruction is emulated: the ratio, not the guest's microseconds, is the figure.
# Usage: bench/explain-stacks-guest.sh [KERNEL] [PAIRS] [SECONDS] [INTERVAL_US] [THRESHOLD]
#        RTSCOPE=static binary for the guest's architecture (default: the x86_64 musl build),
#        KEEP=directory to keep the runs' JSON in,
#        BTF=FILE sets RTSCOPE_BTF=FILE for the guest's runs (a FILE that does not exist: the
#        eBPF programs on the trace events instead of the raw tracepoints)
set -euo pipefail
cd "$(dirname "$0")/.."
kernel=${1:-rt-amd64}
pairs=${2:-10}
secs=${3:-20}
interval=${4:-1000}
threshold=${5:-200us}
bin=${RTSCOPE:-target/x86_64-unknown-linux-musl/release/rtscope}
[ -x "$bin" ] || { echo "build the static binary first (tests/guest/README.md)" >&2; exit 2; }
out=$(mktemp -d /tmp/rtscope-bench-stacks-guest.XXXXXX)
trap 'rm -rf "$out"' EXIT
btf_env=
[ -z "${BTF:-}" ] || btf_env="RTSCOPE_BTF=$BTF"
cat >"$out/pairs.sh" <<GUEST
run() { # run MODE N
    $btf_env rtscope measure -D ${secs}s -i ${interval}us --cpus 1 -p 95 --explain $threshold \\
        --explain-stacks "\$1" --no-db --json "/tmp/\$1-\$2.json" >"/tmp/\$1-\$2.log" 2>&1
    mark rc "\$1-\$2 \$?"
    if [ "\$1" = auto ] && ! grep -q "kernel stacks when late" "/tmp/\$1-\$2.log"; then
        mark not-late "\$2"
        tail -n 5 "/tmp/\$1-\$2.log"
    fi
    put_file "\$1-\$2.json" "/tmp/\$1-\$2.json"
}
n=1
while [ \$n -le $pairs ]; do
    if [ \$((n % 2)) = 1 ]; then run off \$n; run auto \$n; else run auto \$n; run off \$n; fi
    n=\$((n + 1))
done
mark done pairs
GUEST
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
timeout=$((pairs * 2 * (secs + 15) + 600))
python3 tests/guest/guest.py boot "$kernel" --rtscope "$bin" --script "$out/pairs.sh" \
  --save-dir "$out" --timeout "$timeout" --console "$out/console.log" >"$out/markers.txt"
if grep -q "not-late" "$out/markers.txt" || ! grep -q "done pairs" "$out/markers.txt" ||
   grep "rc " "$out/markers.txt" | grep -qv " 0$"; then
  grep -E "rc |not-late|done" "$out/markers.txt" >&2 || true
  echo "a run failed or took no late-only stacks: no figure" >&2
  exit 1
fi
if [ -n "${KEEP:-}" ]; then   # the runs' JSON and the markers, kept for a second look
  mkdir -p "$KEEP" && cp "$out"/*.json "$out/markers.txt" "$KEEP"/
fi
python3 bench/stacks-ratio.py "$out" "$pairs" auto off
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
