#!/usr/bin/env python3
"""The static binary must not hand memory back to the kernel gap by gap (crates/rtscope/src/
alloc.rs): every munmap of rtscope's memory makes the kernel flush the TLB of each CPU that runs
one of its threads, an interrupt (IPI) on the CPU `rtscope noise` measures, caused by rtscope.

Runs `rtscope noise --explain` on one CPU for 4 s under `strace -f -c` and counts the munmap
calls of the whole process. Measured on this project's VM (CPU 1, 5 us threshold): musl's own
allocator 39,000-41,000 per run, dlmalloc 131. The bar, MAX_PER_SECOND, is a count, not a time:
how many calls a run may make per second of it, far above dlmalloc's and far below musl's.
Needs root (the loop and the trace), strace and a second CPU; where one is missing the check
fails under RTSCOPE_TEST_STRICT=1 instead of passing.

Usage: munmaps.py RTSCOPE_BINARY
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

DURATION_S = 4
MAX_PER_SECOND = 250


def munmaps(summary: str) -> int | None:
    """The munmap calls in `strace -c`'s table; None without the line (0 calls are not listed
    by strace: the caller tells the cases apart by the table's presence)."""
    for line in summary.splitlines():
        cols = line.split()
        if cols and cols[-1] == "munmap":
            # % time, seconds, usecs/call, calls, [errors,] syscall
            return int(cols[3])
    return None


def main() -> int:
    binary = sys.argv[1]
    strict = os.environ.get("RTSCOPE_TEST_STRICT") == "1"
    missing = [w for w, ok in (("root", os.geteuid() == 0), ("strace", shutil.which("strace")),
                               ("a second CPU", (os.cpu_count() or 1) > 1)) if not ok]
    if missing:
        print(f"SKIP munmaps: needs {', '.join(missing)}")
        return 1 if strict else 0
    cpu = str(max(os.sched_getaffinity(0)))
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as out:
        run = subprocess.run(
            ["strace", "-f", "-c", "-o", out.name, binary, "noise", "-D", f"{DURATION_S}s",
             "--cpus", cpu, "--runtime", "950ms", "--period", "1s", "--threshold", "5us",
             "--explain", "5us"],
            capture_output=True, text=True, timeout=120)
        summary = out.read()
    if run.returncode != 0 or "total" not in summary:
        print(f"FAIL munmaps: rtscope noise --explain exited {run.returncode}: "
              f"{run.stderr.strip()[-400:]}")
        return 1
    calls = munmaps(summary) or 0
    ok = calls <= MAX_PER_SECOND * DURATION_S
    print(f"{'PASS' if ok else 'FAIL'} munmaps: {calls} munmap calls in a {DURATION_S} s "
          f"noise --explain run on CPU {cpu} (at most {MAX_PER_SECOND * DURATION_S})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
