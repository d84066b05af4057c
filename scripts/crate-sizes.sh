#!/usr/bin/env bash
# Per-crate sizes of a release build, beside the size budget (issue 52): growth is seen crate
# by crate, not fought line by line. Reads what the build left; builds nothing.
#
#   scripts/crate-sizes.sh TRIPLE [BASELINE]
#
# Prints, for target/TRIPLE/release (or $CARGO_TARGET_DIR/TRIPLE/release), the bytes of each
# crate's newest .rlib in deps/: the workspace's crates one by one, the other crates summed.
# An rlib holds the crate's LLVM bitcode and metadata before LTO, so its size is a proxy for
# the crate's share of the binary, not its bytes in it (the release binary is stripped: it has
# no symbols to count); a change in it shows which crate grew.
# With BASELINE (a file this script wrote), each row also shows the change against it. With
# RTSCOPE_SIZES_SAVE=1 the table is written to BASELINE afterwards (tests/guest/ci.sh does
# that on main, so a branch is compared with the last main build on the same machine).
set -euo pipefail
triple=${1:?usage: scripts/crate-sizes.sh TRIPLE [BASELINE]}
baseline=${2:-}
dir=${CARGO_TARGET_DIR:-target}/$triple/release/deps
[ -d "$dir" ] || { echo "error: $dir: no release build of $triple here (cargo build --release --target $triple)" >&2; exit 2; }

# name<TAB>bytes of the newest rlib of each crate (an older build's rlibs stay beside it).
table=$(
  find "$dir" -maxdepth 1 -name 'lib*.rlib' -printf '%T@\t%f\t%s\n' | sort -rn |
    awk -F'\t' '{ n = $2; sub(/^lib/, "", n); sub(/-[0-9a-f]+\.rlib$/, "", n); if (!seen[n]++) print n "\t" $3 }' |
    sort
)
[ -n "$table" ] || { echo "error: $dir has no rlibs" >&2; exit 2; }
# The workspace's crates by name; the rest as one row.
rows=$(printf '%s\n' "$table" | awk -F'\t' '
  /^rtscope/ { print; next }
  { other += $2 }
  END { printf "(other crates)\t%d\n", other }' | sort -t$'\t' -k2,2nr)

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$baseline" ] && [ -f "$baseline" ]; then
  base_commit=$(sed -n 's/^# commit //p' "$baseline")
  echo "$triple: rlib bytes per crate (before LTO), against $base_commit:"
  printf '%s\n' "$rows" | awk -F'\t' -v base="$baseline" '
    BEGIN { while ((getline l < base) > 0) if (l !~ /^#/) { split(l, a, "\t"); old[a[1]] = a[2]; told += a[2] } }
    { d = ($1 in old) ? sprintf("%+d", $2 - old[$1]) : "new"; total += $2
      printf "  %-24s %10d %10s\n", $1, $2, d; seen[$1] = 1 }
    END { for (k in old) if (!(k in seen)) printf "  %-24s %10s %+10d\n", k, "gone", -old[k]
          printf "  %-24s %10d %+10d\n", "total", total, total - told }'
else
  echo "$triple: rlib bytes per crate (before LTO; no baseline to compare with):"
  printf '%s\n' "$rows" | awk -F'\t' '{ printf "  %-24s %10d\n", $1, $2; t += $2 }
    END { printf "  %-24s %10d\n", "total", t }'
fi
if [ "${RTSCOPE_SIZES_SAVE:-0}" = 1 ] && [ -n "$baseline" ]; then
  mkdir -p "$(dirname "$baseline")"
  { echo "# commit $commit"; printf '%s\n' "$rows"; } >"$baseline.tmp" && mv "$baseline.tmp" "$baseline"
fi
