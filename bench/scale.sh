#!/usr/bin/env bash
# How `rtscope compare` and `rtscope report` scale with the number of runs (issue 28): CPU time
# (user + system, from /usr/bin/time -v: less sensitive to a loaded machine than wall time),
# peak RSS and the size of report.html, for two synthetic campaigns of N runs each.
#
# Usage: bash bench/scale.sh [--check] [N…]
#   N…       campaign sizes (default 50 200 1000)
#   --check  small sizes (default 20 80) and exit 1 when compare's CPU time or report's peak RSS
#            grows faster than linearly: 4× the runs may cost at most 8× (CPU over 0.5 s only)
#            and report's peak RSS at most 4× (plus 16 MB); and when report's peak RSS grows by
#            more than 0.25 MB per run between the two sizes (issue 28's 256 MB for 1,000 runs:
#            a bitmap as high as a grid of one panel per run cost 0.55 MB per run, 20 → 80 runs
#            33 → 66 MB, which the first test let pass)
# Environment: RTSCOPE (binary, default target/release/rtscope, built if missing),
#   SYNTH_DB (the synthetic-campaign generator, crates/rtscope-testkit/examples/synth_db.rs;
#   default: built here in release), SAMPLES (per CPU and run, default 5000), KEEP (a directory to keep the databases in:
#   they are reused when there, so two binaries can be timed on the same data back to back).
. "$(dirname "$0")/lib.sh" "$@"
shift "$check"
sizes=("$@")
if ((${#sizes[@]} == 0)); then
  if ((check)); then sizes=(20 80); else sizes=(50 200 1000); fi
fi
samples=${SAMPLES:-5000}
release_bin
# The generator's speed is not measured: any build of it will do (CI passes the test build's).
synth=${SYNTH_DB:-}
if [[ -z $synth ]]; then
  cargo build --release -q -p rtscope-testkit --example synth_db
  synth=target/release/examples/synth_db
fi
work=${KEEP:-$(mktemp -d)}
mkdir -p "$work"
[[ -n ${KEEP:-} ]] || trap 'rm -rf "$work"' EXIT

# measure NAME COMMAND…: runs it under /usr/bin/time -v; sets cpu (s), rss (MB), wall.
measure() {
  local log="$work/time.log"
  /usr/bin/time -v "$@" >/dev/null 2>"$log" || { cat "$log" >&2; exit 2; }
  cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.2f", s}' "$log")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2 / 1024}' "$log")
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
}

echo "binary: $bin; $samples samples per CPU and run (2 CPUs); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%6s  %-28s  %-28s  %s\n' runs "compare A B: CPU s, RSS MB" "report A: CPU s, RSS MB" "report.html, all files"
declare -A ccpu rrss
for n in "${sizes[@]}"; do
  db="$work/scale-$n.db"
  if [[ ! -f $db ]]; then
    "$synth" "$db.tmp" "$n" "$samples" a >/dev/null
    "$synth" "$db.tmp" "$n" "$samples" b >/dev/null
    mv "$db.tmp" "$db"
  fi
  measure "$bin" compare --db "$db" campaign:a campaign:b --no-fail
  ccpu[$n]=$cpu
  cline="$cpu s, $rss MB ($wall)"
  rm -rf "$work/out"
  measure "$bin" report --db "$db" --campaign a -o "$work/out"
  rrss[$n]=$rss
  rline="$cpu s, $rss MB ($wall)"
  printf '%6s  %-28s  %-28s  %s, %s\n' "$n" "$cline" "$rline" \
    "$(du -h "$work/out/report.html" | cut -f1)" "$(du -sh "$work/out" | cut -f1)"
done
((check)) || exit 0
small=${sizes[0]} large=${sizes[-1]}
ratio=$((large / small))
fail=0
if awk -v a="${ccpu[$small]}" -v b="${ccpu[$large]}" -v r="$ratio" 'BEGIN {exit !(b > 0.5 && b > 2 * r * a)}'; then
  echo "compare grows faster than linearly: ${ccpu[$small]} s CPU for $small runs, ${ccpu[$large]} s for $large" >&2
  fail=1
fi
if awk -v a="${rrss[$small]}" -v b="${rrss[$large]}" -v r="$ratio" 'BEGIN {exit !(b > r * a + 16)}'; then
  echo "report's peak RSS grows faster than linearly: ${rrss[$small]} MB for $small runs, ${rrss[$large]} MB for $large" >&2
  fail=1
fi
if awk -v a="${rrss[$small]}" -v b="${rrss[$large]}" -v n="$((large - small))" 'BEGIN {exit !(n > 0 && (b - a) / n > 0.25)}'; then
  echo "report's peak RSS grows more than 0.25 MB per run: ${rrss[$small]} MB for $small runs, ${rrss[$large]} MB for $large" >&2
  fail=1
fi
exit "$fail"
