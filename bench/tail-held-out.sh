#!/usr/bin/env bash
# Held-out validation of `rtscope tail` on a long real run (issue 31): per thread, the tail is
# fitted on the first tenth of the wake-ups exactly as `rtscope tail` fits a run, and each
# estimated level (1e-3 … 1e-6 per wake-up) is checked against the other nine tenths: how many
# held-out wake-ups exceeded it against the count the estimate predicts, and over its interval.
# A refused fit's levels are shown too, marked (they are what --unreliable would print).
#
# Usage: bash bench/tail-held-out.sh DB RUN [FRACTION] [P,P,...]
#   The run must have raw samples. On this machine the table in BENCHMARKS.md came from
#     rtscope measure --cpus 1 -p 95 -i 1ms -D 40m --raw --db heldout.db --label heldout-host
#   and in the QEMU RT guest from the same command there (tests/guest, --kernel rt-amd64).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 2 ]] || { sed -n '2,12p' "$0" >&2; exit 2; }
cargo build --release -q -p rtscope-evt --example held_out
exec target/release/examples/held_out "$@"
