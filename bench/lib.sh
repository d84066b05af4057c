# Shared by the bench scripts that take --check (fleet.sh, scale.sh). Sourced with the
# script's arguments, then the script shifts the option away:
#   . "$(dirname "$0")/lib.sh" "$@"
#   shift "$check"
# Sets strict mode, the repository root as the working directory, and `check`: 1 when the
# first argument is --check, else 0. `release_bin` sets `bin`: $RTSCOPE, else
# target/release/rtscope, built here when RTSCOPE is not given.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
check=0
if [[ ${1:-} == --check ]]; then
  check=1
fi

release_bin() {
  bin=${RTSCOPE:-target/release/rtscope}
  [[ -n ${RTSCOPE:-} ]] || cargo build --release -q -p rtscope
}
