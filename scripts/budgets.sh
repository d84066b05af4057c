# The size budgets of the static release binaries (issue 28), sourced by scripts/dist.sh and
# tests/guest/ci.sh: the board binaries (aarch64, armv7) 4.0 MB; x86-64 (industrial PCs, more
# room) 4.6 MB — 4.5 MB until the noise work of issue 33 (the raw counter, SMIs per gap,
# interference counts, --irqs-off) took it to 4,525,768 B with the easy room already taken
# (BENCHMARKS.md, "Release binaries").
# budget TRIPLE: the budget in bytes.
budget() { case "$1" in x86_64-*) echo 4600000 ;; *) echo 4000000 ;; esac; }
# within_budget TRIPLE FILE: prints the size against the budget; returns 1 over it.
within_budget() {
  local size max
  size=$(stat -c %s "$2")
  max=$(budget "$1")
  if [ "$size" -gt "$max" ]; then
    echo "error: $2 is $size bytes, over the $max-byte budget of $1" >&2
    return 1
  fi
  echo "$1: $size bytes (budget $max)"
}
