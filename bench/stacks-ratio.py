#!/usr/bin/env python3
"""The summary of bench/explain-stacks.sh and bench/explain-stacks-guest.sh: for each pair N,
the p50, p99 and max of `OFF-N.json` and `ON-N.json` (`rtscope measure --json`, one thread),
the kept spikes that got a kernel stack in the `ON` run, and the median ratios on/off (the p50's
too: a cost paid at every wake-up moves the median, where the p99 of an emulated guest scatters).

    stacks-ratio.py DIR PAIRS [ON_MODE] [OFF_MODE]      (modes default to on and off)
"""

import json
import statistics
import sys


def figures(path: str) -> tuple[int, int, int, int]:
    """p99, max and p50 (ns) of the run's thread and how many of its kept spikes have a stack."""
    with open(path) as f:
        v = json.load(f)
    t = v["threads"][0]
    worst = v.get("explain", {}).get("worst", [])
    stacks = sum(1 for w in worst if w.get("stack"))
    return t["percentiles_ns"]["p99"], t["max_ns"], stacks, t["percentiles_ns"]["p50"]


def main() -> None:
    out, pairs = sys.argv[1], int(sys.argv[2])
    on, off = (sys.argv[3:5] + ["on", "off"][len(sys.argv[3:5]):])[:2]
    r50, r99, rmax = [], [], []
    print(f"pair | {off}: p50 / p99 / max (us) | {on}: p50 / p99 / max (us) | "
          f"kept spikes with a stack ({on})")
    for n in range(1, pairs + 1):
        o99, omax, _, o50 = figures(f"{out}/{off}-{n}.json")
        n99, nmax, st, n50 = figures(f"{out}/{on}-{n}.json")
        r50.append(n50 / o50)
        r99.append(n99 / o99)
        rmax.append(nmax / omax)
        print(f"{n} | {o50/1e3:.1f} / {o99/1e3:.1f} / {omax/1e3:.1f} | "
              f"{n50/1e3:.1f} / {n99/1e3:.1f} / {nmax/1e3:.1f} | {st}")
    print(f"p50 ratio {on}/{off}: median {statistics.median(r50):.3f} "
          f"(pairs {min(r50):.2f}-{max(r50):.2f})")
    print(f"p99 ratio {on}/{off}: median {statistics.median(r99):.3f} "
          f"(pairs {min(r99):.2f}-{max(r99):.2f})")
    print(f"max ratio {on}/{off}: median {statistics.median(rmax):.3f}")


if __name__ == "__main__":
    main()
