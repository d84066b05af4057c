#!/usr/bin/env python3
"""How fast `rtscope import` reads cyclictest -v output.

Generates a cyclictest `-v` file of 10 million sample lines (2 threads, a realistic latency
spread: a log-normal body around 25 us and a rare tail up to a few ms, the preamble and final
`T:` lines of the reference capture) in a temporary directory, then times

    target/release/rtscope import --db TMP/bench.db FILE

three times (a fresh database each time) and prints the median wall time and lines per second.
Build first: `cargo build --release -p rtscope`. Standard library only.

    python3 bench/import-speed.py [--lines N] [--runs N] [--keep]
"""

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, "target", "release", "rtscope")
PREAMBLE = (
    "Max CPUs = 2\n"
    "Online CPUs = 2\n"
    "# /dev/cpu_dma_latency set to 0us\n"
    "Thread 0 Interval: 700\n"
    "Thread 1 Interval: 1200\n"
)
BLOCK = 64  # cyclictest drains each thread's buffer in turn: lines come in per-thread runs


def latency_pool(n, rng):
    """n latencies in us: log-normal body (median ~25 us), 1 in 2000 a tail sample."""
    pool = []
    for _ in range(n):
        if rng.random() < 0.0005:
            pool.append(int(rng.uniform(100, 5000)))
        else:
            pool.append(max(1, int(math.exp(rng.gauss(math.log(25), 0.35)))))
    return pool


def generate(path, lines):
    """Writes the -v file; returns per-thread (count, min, max, sum) for the T: lines."""
    rng = random.Random(1)
    pool = latency_pool(1 << 16, rng)
    stats = [[0, 10**9, 0, 0], [0, 10**9, 0, 0]]
    with open(path, "w") as f:
        f.write(PREAMBLE)
        done, k = 0, 0
        while done < lines:
            chunk = []
            for t in (0, 1):
                s = stats[t]
                n = min(BLOCK, lines - done)
                for _ in range(n):
                    v = pool[k & 0xFFFF]
                    k += 7
                    chunk.append("%8d:%8d:%8d\n" % (t, s[0], v))
                    s[0] += 1
                    s[3] += v
                    if v < s[1]:
                        s[1] = v
                    if v > s[2]:
                        s[2] = v
                done += n
            f.write("".join(chunk))
        for t, (c, lo, hi, total) in enumerate(stats):
            f.write("T:%2d (%5d) P:80 I:%d C:%7d Min:%7d Act:%5d Avg:%5d Max:%8d\n"
                    % (t, 1000 + t, 200 + 500 * t, c, lo, lo, total // c, hi))
    return stats


def check(db, stats):
    """The imported run's per-thread samples, min, max and mean equal the generated ones."""
    show = subprocess.run([BINARY, "runs", "--db", db, "show", "1", "--json"],
                          capture_output=True, text=True, check=True)
    for t, (c, lo, hi, total) in zip(json.loads(show.stdout)["thread_stats"], stats):
        want = (c, lo * 1000, hi * 1000, total * 1000 / c)
        got = (t["samples"], t["min_ns"], t["max_ns"], t["mean_ns"])
        if got[:3] != want[:3] or abs(got[3] - want[3]) > 1e-6 * want[3]:
            sys.exit(f"thread {t['thread']}: imported {got}, generated {want}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=10_000_000, help="sample lines (default 10 million)")
    ap.add_argument("--runs", type=int, default=3, help="timed imports (default 3)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = ap.parse_args()
    if not os.access(BINARY, os.X_OK):
        sys.exit(f"{BINARY} is missing: run `cargo build --release -p rtscope` first")
    tmp = tempfile.mkdtemp(prefix="rtscope-import-bench-")
    path = os.path.join(tmp, "verbose.txt")
    t = time.monotonic()
    stats = generate(path, a.lines)
    size = os.path.getsize(path)
    print(f"generated {a.lines:,} lines ({size / 1e6:.0f} MB) in {time.monotonic() - t:.1f} s: {path}")
    times = []
    for i in range(a.runs):
        db = os.path.join(tmp, f"bench-{i}.db")
        t = time.monotonic()
        out = subprocess.run([BINARY, "import", "--db", db, "--json", path],
                             capture_output=True, text=True)
        times.append(time.monotonic() - t)
        if out.returncode != 0:
            sys.exit(f"rtscope import failed ({out.returncode}):\n{out.stderr}")
        got = json.loads(out.stdout)[0]["samples"]
        if got != a.lines:
            sys.exit(f"imported {got} samples, expected {a.lines}")
        if i == 0:
            check(db, stats)
        print(f"run {i + 1}: {times[-1]:.2f} s")
    med = statistics.median(times)
    print(f"rtscope import of {a.lines:,} -v lines ({size / 1e6:.0f} MB, 2 threads): "
          f"median {med:.2f} s over {a.runs} runs = {a.lines / med / 1e6:.1f} million lines/s "
          f"({size / med / 1e6:.0f} MB/s)")
    if a.keep:
        print(f"kept {tmp}")
    else:
        for name in os.listdir(tmp):
            os.remove(os.path.join(tmp, name))
        os.rmdir(tmp)


if __name__ == "__main__":
    main()
