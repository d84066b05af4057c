#!/usr/bin/env python3
"""The summary of bench/explain-stacks.sh and bench/explain-stacks-guest.sh: for each pair N,
the p50, p99 and max of `OFF-N.json` and `ON-N.json` (`rtscope measure --json`, one thread),
the kept spikes that got a kernel stack in the `ON` run, and the median ratios on/off (the p50's
too: a cost paid at every wake-up moves the median, where the p99 of an emulated guest scatters).

Then the pooled ratios: the p50 and p99 of all `ON` runs' wake-ups together (their histograms
summed) over those of all `OFF` runs, with a 95 % interval from resampling whole pairs (a
pair's two runs share the host's state of the moment, so the pair is the unit). A median of
per-pair ratios weighs a pair with a VM stall like any other; the pooled figure and its
interval say whether the pairs resolve a 5 % difference at all.

    stacks-ratio.py DIR PAIRS [ON_MODE] [OFF_MODE]      (modes default to on and off)
"""

import json
import random
import statistics
import sys

RESAMPLES = 1000


def figures(path: str) -> tuple[int, int, int, int]:
    """p99, max and p50 (ns) of the run's thread and how many of its kept spikes have a stack."""
    with open(path) as f:
        v = json.load(f)
    t = v["threads"][0]
    worst = v.get("explain", {}).get("worst", [])
    stacks = sum(1 for w in worst if w.get("stack"))
    return t["percentiles_ns"]["p99"], t["max_ns"], stacks, t["percentiles_ns"]["p50"]


def histogram(path: str) -> dict[int, int]:
    """The run's thread's histogram: bucket middle (ns) -> wake-ups."""
    with open(path) as f:
        buckets = json.load(f)["threads"][0]["histogram"]["buckets"]
    return {lo + w // 2: n for lo, w, n in buckets}


def quantiles(runs: list[dict[int, int]], qs: tuple[float, ...]) -> list[int]:
    """The quantiles `qs` (ascending) of the runs' wake-ups pooled: the bucket of the
    ceil(q * n)-th smallest."""
    pooled: dict[int, int] = {}
    for h in runs:
        for k, n in h.items():
            pooled[k] = pooled.get(k, 0) + n
    total = sum(pooled.values())
    ranks = [-(-int(q * 10_000) * total // 10_000) for q in qs]
    out, seen = [], 0
    for k in sorted(pooled):
        seen += pooled[k]
        while len(out) < len(ranks) and seen >= ranks[len(out)]:
            out.append(k)
    return out


def pooled(out: str, pairs: int, on: str, off: str) -> None:
    """Prints the pooled p50 and p99 ratios on/off, with their pair-resampled 95 % intervals."""
    h_on = [histogram(f"{out}/{on}-{n}.json") for n in range(1, pairs + 1)]
    h_off = [histogram(f"{out}/{off}-{n}.json") for n in range(1, pairs + 1)]
    qs = (0.5, 0.99)

    def ratios(idx: list[int]) -> list[float]:
        a = quantiles([h_on[i] for i in idx], qs)
        b = quantiles([h_off[i] for i in idx], qs)
        return [x / y for x, y in zip(a, b)]

    point = ratios(list(range(pairs)))
    rng = random.Random(53)
    draws = [ratios([rng.randrange(pairs) for _ in range(pairs)]) for _ in range(RESAMPLES)]
    for j, name in enumerate(("p50", "p99")):
        d = sorted(r[j] for r in draws)
        lo, hi = d[int(0.025 * RESAMPLES)], d[int(0.975 * RESAMPLES) - 1]
        print(f"pooled {name} ratio {on}/{off}: {point[j]:.3f} "
              f"(95 % interval over pairs {lo:.3f}-{hi:.3f})")


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
    pooled(out, pairs, on, off)


if __name__ == "__main__":
    main()
