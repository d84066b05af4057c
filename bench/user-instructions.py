#!/usr/bin/env python3
"""User-space instructions per wake-up, rtscope vs cyclictest, counted by callgrind.

This VM accounts CPU time per 4 ms tick, so the user/system split of getrusage() is
unusable for a loop that spends ~50 ns in user space per wake-up. Instruction counts
are exact and repeatable instead. Each tool runs twice under valgrind's callgrind with
one thread (SCHED_OTHER, 500 us interval, -q), for L1 and L2 loops; the marginal count
(Ir(L2) - Ir(L1)) / (L2 - L1) is the user-space work per wake-up, start-up and
report excluded. vDSO code (clock_gettime's fast path) is not instrumented by valgrind
and is the same for both tools.

Each count is the median of --repeat runs (default 5): how late valgrind's slowed threads wake
varies from run to run. The measuring thread is also counted alone (--separate-threads):
that is the timing loop's own cost, without the control thread's end-of-run work.

Usage: python3 bench/user-instructions.py [--rtscope PATH] [--cyclictest PATH] [--repeat N]
Standard library only; needs valgrind.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
LOOPS = (1000, 3000)


def instructions(cmd, loops):
    """(all threads, the busiest non-main thread) instructions of one run."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        full = ["valgrind", "--tool=callgrind", "--separate-threads=yes",
                f"--callgrind-out-file={out}"] + cmd + [f"-l{loops}", "-i", "500", "-t1", "-q"]
        res = subprocess.run(full, capture_output=True, text=True, check=False)
        m = re.search(r"Collected : (\d+)", res.stderr)
        if res.returncode != 0 or not m:
            sys.exit(f"failed: {' '.join(full)}\n{res.stderr[-2000:]}")
        threads = []
        for name in sorted(os.listdir(tmp)):
            if re.fullmatch(r"cg\.out-(\d+)", name) and not name.endswith("-01"):
                with open(os.path.join(tmp, name)) as f:
                    s = re.search(r"^summary: (\d+)", f.read(), re.M)
                    threads.append(int(s.group(1)) if s else 0)
        return int(m.group(1)), max(threads, default=0)


def per_wakeup(cmd, repeat):
    """Median marginal instructions per wake-up: (all threads, measuring thread)."""
    total, thread = [], []
    for _ in range(repeat):
        (a, ta), (b, tb) = (instructions(cmd, n) for n in LOOPS)
        total.append((b - a) / (LOOPS[1] - LOOPS[0]))
        thread.append((tb - ta) / (LOOPS[1] - LOOPS[0]))
    return statistics.median(total), statistics.median(thread)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rtscope", default=os.path.join(HERE, "..", "target", "release", "rtscope"))
    p.add_argument("--cyclictest", default="/usr/bin/cyclictest")
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args()
    rt, rt_thread = per_wakeup([a.rtscope, "cyclictest"], a.repeat)
    ct, ct_thread = per_wakeup([a.cyclictest, "--default-system"], a.repeat)
    print("user-space instructions per wake-up (callgrind, marginal over "
          f"{LOOPS[1] - LOOPS[0]} wake-ups, median of {a.repeat})")
    print("              all threads  measuring thread")
    print(f"  rtscope     {rt:11.1f}  {rt_thread:16.1f}")
    print(f"  cyclictest  {ct:11.1f}  {ct_thread:16.1f}")
    print(f"  ratio       {rt / ct:11.2f}  {rt_thread / ct_thread:16.2f}  (target <= 0.50)")


if __name__ == "__main__":
    main()
