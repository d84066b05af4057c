#!/usr/bin/env bash
# Held-out validation of every answer of `rtscope tail` (issue 50, item 5): a long `--raw` run
# is cut into segments (60 s unless SEGMENT_S says otherwise); the even segments, joined, are
# fitted as `rtscope tail` fits a run, the odd ones held out; each level is checked by counting
# what exceeded it in the held-out part against what its probability predicts — per wake-up,
# per episode and per hour (peaks over threshold), per wake-up and per time (worst-segment
# envelope: once per minute or 10 minutes of the worst segment, held-out 1 s blocks above it
# against the minutes held out), per block and per hour (GEV of 1 s block maxima). A ratio
# near 1 is a level that held; above 1, a level exceeded more often than it said.
#
# Usage: bash bench/tail-answers-held-out.sh DB RUN [SEGMENT_S]
#   The run must have raw samples. BENCHMARKS.md's tables come from
#     rtscope measure --cpus 1 -p 95 -i 1ms -D 40m --raw --db heldout.db --label heldout-40m
#     bash bench/tail-answers-held-out.sh heldout.db 1
#   on a quiet machine; a 60 s run checks that the script works (its counts are too small to
#   mean anything):
#     rtscope measure --cpus 1 -p 95 -i 1ms -D 60s --raw --db heldout-short.db
#     bash bench/tail-answers-held-out.sh heldout-short.db 1 10
# After rtscope's table, an independent fit of the same split (bench/tail-scipy-held-out.py:
# scipy's genpareto and genextreme, and the empirical quantile) when python3 with scipy is
# found (the venv ${RTSCOPE_VENV:-/var/cache/rtscope-venv} first, as .ci/run, then python3 on
# PATH); otherwise it says why it was not run. SCIPY=0 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 2 ]] || { sed -n '2,22p' "$0" >&2; exit 2; }
cargo build --release -q -p rtscope-evt --example held_out_methods
"${CARGO_TARGET_DIR:-target}/release/examples/held_out_methods" "$@"
echo
if [[ ${SCIPY:-1} == 0 ]]; then
  echo "independent fit (scipy): not run (SCIPY=0)"
  exit 0
fi
python=
for p in "${RTSCOPE_VENV:-/var/cache/rtscope-venv}/bin/python3" python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import numpy, scipy' 2>/dev/null; then
    python=$p
    break
  fi
done
if [[ -z $python ]]; then
  echo "independent fit (scipy): not run: no python3 imports numpy and scipy" \
    "(tried ${RTSCOPE_VENV:-/var/cache/rtscope-venv}/bin/python3 and python3 on PATH;" \
    "python3 -m venv /var/cache/rtscope-venv && /var/cache/rtscope-venv/bin/pip install scipy numpy)"
  exit 0
fi
echo "independent fit (scipy): $python bench/tail-scipy-held-out.py $*"
echo
"$python" bench/tail-scipy-held-out.py "$@"
