#!/usr/bin/env bash
# Resident memory of `rtscope cyclictest` against rt-tests' cyclictest with the same options
# (issue 68 item 5), sampled from /proc 2 s into each run: peak (VmHWM), private anonymous
# memory, file pages (the binary's code) and the proportional share (Pss). Memory, not time:
# a busy host does not change it. Run as root.
#   bench/rss-vs-cyclictest.sh target/x86_64-unknown-linux-musl/release/rtscope -m -t1 -p80 -i1000 -D3
# Build it as the boards get it: CC_x86_64_unknown_linux_musl=x86_64-linux-musl-gcc
#   cargo build --release -p rtscope --target x86_64-unknown-linux-musl
# What is resident, mapping by mapping: RSS_SMAPS=1 adds the non-empty mappings of /proc/PID/smaps.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 RTSCOPE [cyclictest options...] (give -D longer than 2 s)" >&2; exit 2; }
bin=$1
shift
for prog in "$bin cyclictest" cyclictest; do
  # shellcheck disable=SC2086 # the program and its subcommand are two words
  $prog "$@" >/dev/null 2>&1 &
  pid=$!
  sleep 2
  hwm=$(awk '/^VmHWM/{print $2}' "/proc/$pid/status")
  anon=$(awk '/^RssAnon/{print $2}' "/proc/$pid/status")
  file=$(awk '/^RssFile/{print $2}' "/proc/$pid/status")
  pss=$(awk '/^Pss:/{print $2}' "/proc/$pid/smaps_rollup")
  if [ "${RSS_SMAPS:-}" = 1 ]; then
    awk '/^[0-9a-f]+-/{m=$1" "$2" "$6} /^Rss:/{if($2>0) printf "  %-60s %6d KiB\n", m, $2}' "/proc/$pid/smaps"
  fi
  wait "$pid" || true
  printf '%-20s VmHWM %6s KiB  RssAnon %5s KiB  RssFile %5s KiB  Pss %5s KiB\n' \
    "${prog##*/}" "$hwm" "$anon" "$file" "$pss"
done
