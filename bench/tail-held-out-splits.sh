#!/usr/bin/env bash
# Every split of a 10-minute `--raw` run's minutes into a fitted half and a held-out half, for
# the run's own values (issue 66 item 4): at 1e-4 per wake-up and once per minute, how many of
# the 252 splits gave a tested answer, held within 1.5× of the stated rate, and held within the
# 95 % band of counting alone; beside them the same splits of the run with its 1 s blocks
# shuffled (stationary surrogates, seeds 1–4), which show what the method can reach at this
# run length and clustering when the load does not change between minutes
# (crates/rtscope-evt/examples/held_out_splits.rs says how each figure is made).
#
# Usage: bash bench/tail-held-out-splits.sh DB RUN [SEGMENT_S]
#   BENCHMARKS.md's table ("Issue 66, every split") comes from 10-minute runs beside each load:
#     rtscope measure --cpus 1 -p 95 -i 1ms -D 10m --raw --db raw-LOAD.db --label raw-LOAD
#     bash bench/tail-held-out-splits.sh raw-LOAD.db 1
#   A 60 s run with SEGMENT_S 10 checks that the script works (its counts mean nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 2 ]] || { sed -n '2,15p' "$0" >&2; exit 2; }
cargo build --release -q -p rtscope-evt --example held_out_splits
"${CARGO_TARGET_DIR:-target}/release/examples/held_out_splits" "$@"
