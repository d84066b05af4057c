#!/usr/bin/env python3
"""An independent fit (scipy) beside rtscope's held-out benchmark (issue 66 item 6).

Reads the same `--raw` run as bench/tail-answers-held-out.sh (the example
crates/rtscope-evt/examples/held_out_methods.rs) from rtscope's SQLite database, read only,
and makes the same split: per thread the wake-ups, in cycle order, are cut into segments of
SEGMENT_S seconds (whole seconds, at least one), the even segments joined are fitted and the
odd ones held out. On the fitted half, without any of rtscope's code:

- scipy-gpd/wakeup: scipy.stats.genpareto (location 0) fitted to the excesses of the episode
  maxima over a threshold u, the 99th, 99.5th and 99.9th percentile of the fitted half (each
  its own rows). Episodes are runs of exceedances no more than r wake-ups apart, r from the
  rule of rtscope's threshold.rs (see `decluster`). The level per wake-up at p is the episode
  level at θp, θ = episodes / exceedances (Coles 2001, §5.3.2, as rtscope's lib.rs): a
  wake-up exceeds z > u with probability (K/n) · P(episode maximum > z), K exceedances of n.
- scipy-gev/block, scipy-gev/hour: scipy.stats.genextreme fitted to every 1 s block maximum
  of the fitted half (maximum likelihood on all of them: rtscope censors the lower ones; the
  best of scipy's own start and ξ = 0.1, 0.5, 1, scipy's start alone stopping at a local
  optimum on heavy-tailed maxima),
  levels a block exceeds with probability 0.1, 0.01, 0.001, and once per hour (1/3600).
- empirical/wakeup: the value exceeded by a fraction p of the fitted wake-ups (1e-3, 1e-4),
  a model-free baseline.

Where it differs from rtscope on purpose (an independent check, not a copy): the thresholds
are fixed percentiles, not chosen by rtscope's stability rule; the GPD is scipy's maximum
likelihood with ξ free (rtscope puts the exponential in place of a fit with ξ < 0); the GEV
is not censored; a fit needs 10 episodes or blocks (rtscope 100) and no diagnostic refuses
it. The declustering is rtscope's rule (see `decluster` for its one difference).

Each level is checked as held_out_methods checks its own: held-out wake-ups (or 1 s blocks)
above it against what its probability predicts. The table has held_out_methods' columns.
A fit that fails or gives nan prints its rows as "fit failed: why".

    python3 bench/tail-scipy-held-out.py DB RUN [SEGMENT_S (60)]

Exit status 2: bad usage, no database, no such run, no raw samples, a corrupt chunk or more
wake-ups per thread than MAX_WAKEUPS. 3: numpy or scipy not importable.
"""

import math
import os
import sqlite3
import sys
import warnings
from array import array

# The most wake-ups read of one thread (about 5.5 h at 1 kHz; 8 bytes each, a few copies).
MAX_WAKEUPS = 20_000_000
# Fewer episodes (or blocks) than this are not fitted (rtscope asks 100 episodes, 100 blocks).
MIN_FITTED = 10
THRESHOLD_QUANTILES = (0.99, 0.995, 0.999)
GPD_P = (1e-3, 1e-4, 1e-5)
GEV_Q = (1e-1, 1e-2, 1e-3)
EMPIRICAL_P = (1e-3, 1e-4)


class Refused(Exception):
    """The run cannot be read: the message says why (exit 2)."""


# ---------------------------------------------------------------- reading the raw samples


def _varint(data, at):
    """One LEB128 varint of `data` at `at`: (value, next position); None past the end."""
    v, shift = 0, 0
    while shift < 64:
        if at >= len(data):
            return None
        b = data[at]
        at += 1
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return v, at
        shift += 7
    return None


def decode_latencies(data):
    """The latencies (ns) of one raw-sample chunk (crates/rtscope-store/src/codec.rs, tag 3 or
    the older tag 2), in cycle order; None when the bytes are not a valid chunk."""
    data = bytes(data)
    if not data or data[0] not in (2, 3):
        return None
    tag, at, out = data[0], 1, []
    vals = []
    for _ in range(2):  # interval, count
        r = _varint(data, at)
        if r is None:
            return None
        vals.append(r[0])
        at = r[1]
    n = vals[1]
    if n > len(data):
        return None
    lo = 0
    if tag == 3:
        r = _varint(data, at)
        if r is None:
            return None
        lo, at = r
    for i in range(n):
        if i == 0:
            fields = []
            for _ in range(3):  # cycle, latency, offset
                r = _varint(data, at)
                if r is None:
                    return None
                fields.append(r[0])
                at = r[1]
            out.append(fields[1])
            continue
        r = _varint(data, at)
        if r is None:
            return None
        v, at = r
        if tag == 2 or v == 1:
            # tag 2: (delta = v, latency, residual); tag 3 irregular: 1, delta, latency, residual
            fields = []
            for _ in range(2 if tag == 2 else 3):
                r = _varint(data, at)
                if r is None:
                    return None
                fields.append(r[0])
                at = r[1]
            out.append(fields[0] if tag == 2 else fields[1])
        elif v & 1 == 0:
            latency = lo + (v >> 1)
            if latency >= 1 << 64:
                return None
            out.append(latency)
        else:
            return None
    return out if at == len(data) else None


def open_run(path, run):
    """The database at `path` opened read only, and the threads of run `run` that have raw
    samples: [(thread, cpu, interval_ns, raw samples)]."""
    if not os.path.isfile(path):
        raise Refused(f"no database at {path}")
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        found = db.execute("SELECT count(*) FROM runs WHERE id=?", (run,)).fetchone()[0]
        if not found:
            raise Refused(f"{path} has no run {run}")
        threads = db.execute(
            "SELECT t.thread, t.cpu, t.interval_ns, "
            "(SELECT coalesce(sum(s.count), 0) FROM samples s "
            "WHERE s.run_id=t.run_id AND s.thread=t.thread) "
            "FROM threads t WHERE t.run_id=? ORDER BY t.thread",
            (run,),
        ).fetchall()
    except sqlite3.Error as e:
        raise Refused(f"{path}: not an rtscope database ({e})") from e
    if sum(t[3] for t in threads) == 0:
        raise Refused(f"run {run} has no raw samples (measure --raw)")
    for thread, _, interval, count in threads:
        if count > MAX_WAKEUPS:
            raise Refused(f"run {run} thread {thread}: {count} raw samples, "
                          f"more than the {MAX_WAKEUPS} this script reads")
        if count and interval <= 0:
            raise Refused(f"run {run} thread {thread} has no interval")
    return db, [t for t in threads if t[3] > 0]


def wakeups(db, run, thread):
    """Every wake-up latency (ns) of `thread` in run `run`, in cycle order (as raw_run.rs), as
    a numpy array of float64."""
    import numpy

    out = array("Q")
    q = "SELECT data FROM samples WHERE run_id=? AND thread=? ORDER BY first_cycle"
    for (blob,) in db.execute(q, (run, thread)):
        chunk = decode_latencies(blob)
        if chunk is None:
            raise Refused(f"a raw-sample chunk of run {run} thread {thread} is corrupt")
        out.extend(chunk)
        if len(out) > MAX_WAKEUPS:
            raise Refused(f"run {run} thread {thread}: more than {MAX_WAKEUPS} raw samples")
    return numpy.frombuffer(out, dtype=numpy.uint64).astype(numpy.float64)


def rust_round(x):
    """f64::round for x >= 0 (half away from zero; Python's round is half to even)."""
    return int(math.floor(x + 0.5))


def split(values, segment_s, hz):
    """held_out_methods' split: segments of whole seconds (at least one), even fitted, odd
    held out (numpy arrays for a numpy array, lists for a list)."""
    per = max(rust_round(segment_s * hz), rust_round(hz))
    parts = ([], [])
    for k, start in enumerate(range(0, len(values), per)):
        parts[k % 2].append(values[start:start + per])
    if isinstance(values, list):
        return tuple([v for s in p for v in s] for p in parts)
    import numpy

    return tuple(numpy.concatenate(p) if p else values[:0] for p in parts)


def block_maxima(values, per_block):
    """Every whole block's maximum (rtscope_evt::block_maxima: a partial last block dropped)."""
    per_block = max(per_block, 1)
    whole = len(values) // per_block * per_block
    if not isinstance(values, list):
        return values[:whole].reshape(-1, per_block).max(axis=1)
    return [max(values[i:i + per_block]) for i in range(0, whole, per_block)]


def above(values, z):
    """How many of `values` exceed `z` (strictly, as held_out_methods counts)."""
    if isinstance(values, list):
        return sum(1 for v in values if v > z)
    return int((values > z).sum())


# ---------------------------------------------------------------- declustering (threshold.rs)


def extremal_index(t):
    """Ferro & Segers' (2003) intervals estimator from inter-exceedance times `t`, as
    threshold.rs's extremal_index (clamped to [1/(m+1), 1]; 1 when not finite)."""
    if not t:
        return 1.0
    m = len(t)
    try:
        if max(t) <= 2:
            s = float(sum(t))
            theta = 2.0 * s * s / (m * sum(v * v for v in t))
        else:
            s = float(sum(v - 1 for v in t))
            theta = 2.0 * s * s / (m * sum((v - 1) * (v - 2) for v in t))
    except ZeroDivisionError:
        theta = math.inf  # Rust divides to inf or NaN: both give 1 below
    return min(max(theta, 1.0 / (m + 1)), 1.0) if math.isfinite(theta) else 1.0


def decluster(values, u):
    """Runs declustering of the exceedances of `u` (strictly above) in `values` (time order),
    as threshold.rs's decluster: the run length r is the C-th largest inter-exceedance gap,
    C = max(1, floor(θ K)) with θ the intervals estimate and K the exceedances (0 when there
    are fewer than C gaps); exceedances no more than r apart are one episode.

    Returns (exceedances K, episode maxima as excesses over u in time order, θ intervals
    estimate, r). The one difference from rtscope: rtscope declusters only the points it kept
    (the largest tenth of the run, at most 10,001 values), so for a threshold below those it
    sees fewer exceedances; rtscope never chooses such a threshold, and at or above them the
    exceedances, their indices and so the episodes are the same."""
    if isinstance(values, list):
        idx = [i for i, v in enumerate(values) if v > u]
    else:
        idx = [int(i) for i in (values > u).nonzero()[0]]
    k = len(idx)
    t = [b - a for a, b in zip(idx, idx[1:])]
    theta = extremal_index(t)
    c = max(int(math.floor(theta * k)), 1)
    gaps = sorted(t, reverse=True)
    run = 0 if c > len(gaps) else gaps[c - 1]
    maxima = []
    for j, i in enumerate(idx):
        if j == 0 or t[j - 1] > run:
            maxima.append(float(values[i] - u))
        else:
            maxima[-1] = max(maxima[-1], float(values[i] - u))
    return k, maxima, theta, run


def exceeded_by(desc, k):
    """The value of `desc` (descending) exceeded by about `k` values (rtscope's candidates
    convention: desc[k])."""
    return float(desc[min(int(k), len(desc) - 1)])


# ---------------------------------------------------------------- fits and rows


def row(thread, method, fit, p, z, expected, observed):
    ratio = f"{observed / expected:.2f}" if expected > 0 else "–"
    print(f"| {thread} | {method} | {fit} | {p} | {z / 1e3:.1f} | {expected:.1f} | "
          f"{observed} | {ratio} |")


def failed(thread, method, why, p):
    print(f"| {thread} | {method} | fit failed: {why} | {p} | – | – | – | – |")


def finite(*xs):
    return all(isinstance(x, (int, float)) and math.isfinite(x) for x in xs)


def fit_quietly(dist, data, starts=(), **fixed):
    """`dist.fit(data)` with its warnings kept: (parameters, None) or (None, why). With
    `starts` (more (args, kwds) starting points than scipy's own), the fit of the least
    negative log-likelihood: scipy's default start for genextreme stops at a local optimum on
    heavy-tailed block maxima (on a 10-minute stress run: ξ 0.60 and −log L 2826 from its start,
    ξ 1.27 and 2086 from ξ 0.1)."""
    import numpy

    data = numpy.asarray(data, dtype=float)
    best, why = None, "no start converged"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for args, kwds in [((), {})] + list(starts):
            try:
                params = tuple(float(x) for x in dist.fit(data, *args, **kwds, **fixed))
                nll = float(dist.nnlf(params, data))
            except Exception as e:  # scipy raises several kinds on a degenerate sample
                why = f"{type(e).__name__}: {e}".replace("|", "/")[:120]
                continue
            if not finite(*params):
                why = f"nan parameters {params}"
            elif not math.isfinite(nll):
                why = f"likelihood not finite at {params}"
            elif best is None or nll < best[1]:
                best = (params, nll)
    if best is None:
        return None, why
    params = best[0]
    if params[-1] <= 1e-9 * max(abs(x) for x in data):
        return None, f"degenerate: scale {params[-1]:.3g} µs (the values are all alike)"
    if caught:
        print(f"  note: {dist.name}: {caught[0].message}"[:200], file=sys.stderr)
    return params, None


def gpd_rows(name, fit, desc, held, q):
    """scipy-gpd/wakeup rows above the q-th quantile of the fitted half (`desc`: sorted
    descending)."""
    from scipy import stats

    method = f"scipy-gpd/wakeup (u q{q:g})"
    n, n_held = len(fit), len(held)
    u = exceeded_by(desc, round((1 - q) * n))
    k, maxima, theta_int, run = decluster(fit, u)
    if len(maxima) < MIN_FITTED:
        for p in GPD_P:
            failed(name, method, f"{len(maxima)} episodes above {u / 1e3:.1f} µs, "
                   f"fewer than {MIN_FITTED}", f"{p:.0e}")
        return
    data = [m / 1e3 for m in maxima]
    med = max(sorted(data)[len(data) // 2], 1e-3)
    starts = [((xi,), {"scale": med}) for xi in (0.1, 0.5, 1.0)]
    params, why = fit_quietly(stats.genpareto, data, starts, floc=0)
    if params is None:
        for p in GPD_P:
            failed(name, method, why, f"{p:.0e}")
        return
    xi, _, sigma = params
    theta = len(maxima) / k
    label = (f"ξ {xi:.3f}, σ {sigma:.2f} µs, u {u / 1e3:.1f} µs, K {k}, episodes "
             f"{len(maxima)}, θ {theta:.2f}, r {run:g}")
    if xi <= -1:
        for p in GPD_P:
            failed(name, method, f"ξ {xi:.2f} ≤ −1: the likelihood is unbounded, the fit "
                   f"degenerate ({len(maxima)} episodes above {u / 1e3:.1f} µs)", f"{p:.0e}")
        return
    for p in GPD_P:
        tail = p * n / k  # P(episode maximum > z) for a wake-up probability p
        if tail >= 1:
            failed(name, method, f"p is not below the exceedance rate {k / n:.1e}", f"{p:.0e}")
            continue
        z = u + 1e3 * float(stats.genpareto.isf(tail, xi, 0, sigma))
        if not math.isfinite(z):
            failed(name, method, f"level not finite ({label})", f"{p:.0e}")
            continue
        row(name, method, label, f"{p:.0e}", z, p * n_held, above(held, z))


def gev_rows(name, fit_blocks, held_blocks):
    """scipy-gev/block and scipy-gev/hour rows of the 1 s block maxima."""
    import numpy
    from scipy import stats

    cases = [("scipy-gev/block", f"{q:.0e}", q) for q in GEV_Q]
    cases.append(("scipy-gev/hour", "1/3600 per block", 1 / 3600))
    if len(fit_blocks) < MIN_FITTED:
        for method, p, _ in cases:
            failed(name, method, f"{len(fit_blocks)} blocks of 1 s, fewer than {MIN_FITTED}", p)
        return
    data = [b / 1e3 for b in fit_blocks]
    med, spread = float(numpy.median(data)), float(numpy.std(data)) or 1.0
    # Starting points ξ = 0.1, 0.5, 1 (scipy's c = −ξ) beside scipy's own; the best kept.
    starts = [((-xi,), {"loc": med, "scale": spread / 3}) for xi in (0.1, 0.5, 1.0)]
    params, why = fit_quietly(stats.genextreme, data, starts)
    if params is None:
        for method, p, _ in cases:
            failed(name, method, why, p)
        return
    c, mu, sigma = params
    if -c <= -1:
        for method, p, _ in cases:
            failed(name, method, f"ξ {-c:.2f} ≤ −1: the likelihood is unbounded, the fit "
                   "degenerate", p)
        return
    label = f"ξ {-c:.3f}, σ {sigma:.2f} µs, μ {mu:.1f} µs, {len(fit_blocks)} blocks"
    nb = len(held_blocks)
    for method, p, q in cases:
        z = 1e3 * float(stats.genextreme.isf(q, c, mu, sigma))
        if not math.isfinite(z):
            failed(name, method, f"level not finite ({label})", p)
            continue
        row(name, method, label, p, z, q * nb, above(held_blocks, z))


def empirical_rows(name, fit, desc, held):
    """empirical/wakeup rows: the fitted half's values exceeded by a fraction p of it."""
    for p in EMPIRICAL_P:
        k = p * len(fit)
        if k < 1:
            failed(name, "empirical/wakeup", f"{len(fit)} wake-ups fitted, fewer than 1/p",
                   f"{p:.0e}")
            continue
        z = exceeded_by(desc, k)
        row(name, "empirical/wakeup", f"value exceeded by {int(k)} of {len(fit)}", f"{p:.0e}",
            z, p * len(held), above(held, z))


def main(argv):
    if len(argv) < 2:
        raise Refused("usage: tail-scipy-held-out.py DB RUN [SEGMENT_S (60)]")
    try:
        run = int(argv[1])
        segment_s = float(argv[2]) if len(argv) > 2 else 60.0
    except ValueError as e:
        raise Refused(f"RUN must be an integer, SEGMENT_S a number: {e}") from e
    if not segment_s > 0:
        raise Refused("SEGMENT_S must be positive")
    try:
        import numpy  # noqa: F401  (scipy needs it; named here so the message says which)
        import scipy
    except ImportError as e:
        print(f"tail-scipy-held-out: {e} (python3 -m venv /var/cache/rtscope-venv && "
              "/var/cache/rtscope-venv/bin/pip install numpy scipy)", file=sys.stderr)
        return 3
    db, threads = open_run(argv[0], run)
    print(f"scipy {scipy.__version__}", file=sys.stderr)
    print("| thread | method | fit | p | level µs | expected | observed | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for thread, cpu, interval_ns, _ in threads:
        hz = 1e9 / interval_ns
        fit, held = split(wakeups(db, run, thread), segment_s, hz)
        name = f"thread {thread}" if cpu is None else f"CPU {cpu}"
        print(f"{name}: {len(fit)} wake-ups fitted, {len(held)} held out, "
              f"segments of {segment_s:g} s", file=sys.stderr)
        if len(fit) == 0 or len(held) == 0:
            print(f"{name}: nothing fitted or held out: segments too long for the run",
                  file=sys.stderr)
            continue
        desc = numpy.sort(fit)[::-1]
        for q in THRESHOLD_QUANTILES:
            gpd_rows(name, fit, desc, held, q)
        per = rust_round(hz)
        gev_rows(name, block_maxima(fit, per), block_maxima(held, per))
        empirical_rows(name, fit, desc, held)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Refused as e:
        print(f"tail-scipy-held-out: {e}", file=sys.stderr)
        sys.exit(2)
