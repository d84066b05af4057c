#!/usr/bin/env python3
"""User-space instructions per wake-up, rtscope vs cyclictest, counted by callgrind.

This VM accounts CPU time per 4 ms tick, so the user/system split of getrusage() is
unusable for a loop that spends ~50 ns in user space per wake-up. Instruction counts
are exact and repeatable instead. Each tool runs twice under valgrind's callgrind with
one thread (SCHED_OTHER, 500 us interval, -q), for L1 and L2 loops; the marginal count
(Ir(L2) - Ir(L1)) / (L2 - L1) is the user-space work per wake-up, start-up and
report excluded. vDSO code (clock_gettime's fast path) is not instrumented by valgrind
and is the same for both tools.

Usage: python3 bench/user-instructions.py [--rtscope PATH] [--cyclictest PATH]
Standard library only; needs valgrind.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
LOOPS = (1000, 3000)


def instructions(cmd, loops):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        full = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + cmd + [
            f"-l{loops}", "-i", "500", "-t1", "-q"]
        res = subprocess.run(full, capture_output=True, text=True, check=False)
        m = re.search(r"Collected : (\d+)", res.stderr)
        if res.returncode != 0 or not m:
            sys.exit(f"failed: {' '.join(full)}\n{res.stderr[-2000:]}")
        return int(m.group(1))


def per_wakeup(cmd):
    a, b = (instructions(cmd, n) for n in LOOPS)
    return (b - a) / (LOOPS[1] - LOOPS[0])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rtscope", default=os.path.join(HERE, "..", "target", "release", "rtscope"))
    p.add_argument("--cyclictest", default="/usr/bin/cyclictest")
    a = p.parse_args()
    rt = per_wakeup([a.rtscope, "cyclictest"])
    ct = per_wakeup([a.cyclictest, "--default-system"])
    print("user-space instructions per wake-up (callgrind, marginal over "
          f"{LOOPS[1] - LOOPS[0]} wake-ups)")
    print(f"  rtscope     {rt:8.1f}")
    print(f"  cyclictest  {ct:8.1f}")
    print(f"  ratio       {rt / ct:8.2f}  (target <= 0.50)")


if __name__ == "__main__":
    main()
