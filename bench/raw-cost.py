#!/usr/bin/env python3
"""What `rtscope measure --raw` costs: p99 latency with --raw / without, and bytes per sample.

Runs `rtscope measure` alternately with and without --raw (the order flips every pair),
2 threads (one per CPU on a 2-CPU machine) at 10 kHz (-i 100us), and compares the p99 of
all threads from the --json output. Then reads the bytes per stored sample from
`rtscope runs show --json`. Target: p99 ratio <= 1.02 within the run-to-run noise.

Usage: python3 bench/raw-cost.py [--rtscope PATH] [--pairs 7] [--duration 5s]
Standard library only; run as root.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def measure(rtscope, tmp, duration, raw):
    out = os.path.join(tmp, "m.json")
    cmd = [rtscope, "measure", "-D", duration, "-i", "100us", "-q", "--json", out,
           "--db", os.path.join(tmp, "raw.db" if raw else "plain.db")]
    if raw:
        cmd.append("--raw")
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode not in (0, 1):
        sys.exit(f"failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr}")
    with open(out) as f:
        doc = json.load(f)
    return doc["total"]["percentiles_ns"]["p99"], doc["total"]["samples"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rtscope", default=os.path.join(HERE, "..", "target", "release", "rtscope"))
    p.add_argument("--pairs", type=int, default=7)
    p.add_argument("--duration", default="5s")
    a = p.parse_args()
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.pairs):
            order = (True, False) if i % 2 == 0 else (False, True)
            p99 = {raw: measure(a.rtscope, tmp, a.duration, raw)[0] for raw in order}
            ratios.append(p99[True] / p99[False])
            print(f"pair {i + 1}: p99 with --raw {p99[True] / 1000:.1f} us, without "
                  f"{p99[False] / 1000:.1f} us, ratio {ratios[-1]:.3f}", file=sys.stderr)
        show = subprocess.run([a.rtscope, "runs", "--db", os.path.join(tmp, "raw.db"), "show",
                               "last", "--json"], capture_output=True, text=True, check=True)
        last = json.loads(show.stdout)
    print(f"p99 with --raw / without: median {statistics.median(ratios):.3f} "
          f"(pairs {min(ratios):.3f}-{max(ratios):.3f}, {a.pairs} pairs, 2 threads x 10 kHz, "
          f"{a.duration} each); target <= 1.02")
    print(f"raw samples: {last['raw_samples']} in {last['raw_bytes']} bytes = "
          f"{last['raw_bytes'] / last['raw_samples']:.2f} bytes/sample, {last['raw_dropped']} not kept")


if __name__ == "__main__":
    main()
