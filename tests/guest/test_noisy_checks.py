"""Unit tests of noisy_checks.verify on a boot result written here: both runs of a mode
(`measure --explain` and `noise --explain`) are compared, each with its own reference trace and
JSON, and a wrong cause in one fails that run's bar alone. Run by tests/guest/ci.sh before the
guests boot (`python3 -m unittest` in this folder).
"""

from __future__ import annotations

import contextlib
import io
import json
import unittest

import guest
import noisy_checks
from test_reference import line

LOOP, CULPRIT, OTHER = 700, 50, 60


def switch(ts_us: float, prev: tuple[str, int], nxt: tuple[str, int]) -> str:
    return line(ts_us, "sched_switch", f"prev_comm={prev[0]} prev_pid={prev[1]} prev_prio=120 "
                f"prev_state=R ==> next_comm={nxt[0]} next_pid={nxt[1]} next_prio=120")


def trace(starts_us: list[int]) -> bytes:
    """The loop on CPU 1, `noisy-preempt` taking it 10 ms from each of `starts_us`."""
    loop, culprit = ("rtscope-n1", LOOP), ("noisy-preempt", CULPRIT)
    lines = [switch(0, ("swapper/1", 0), loop)]
    for s in starts_us:
        lines += [switch(s, loop, culprit), switch(s + 10_000, culprit, loop)]
    lines.append(switch(starts_us[-1] + 50_000, loop, ("swapper/1", 0)))
    return "\n".join(lines).encode()


def explain(starts_us: list[int], pid: int) -> bytes:
    """rtscope's JSON: each 10 ms gap charged whole to thread `pid`."""
    worst = [{"tier": "trace", "spike": {"cpu": 1, "tid": LOOP, "deadline_ns": s * 1000,
                                         "wakeup_ns": (s + 10_000) * 1000},
              "charges": [{"kind": "thread", "pid": pid, "ns": 10_000_000}]}
             for s in starts_us]
    return json.dumps({"explain": {"tier": "trace", "worst": worst,
                                   "counts": {"spikes": len(worst),
                                              "not_traced": {"tracer_not_live": 0}}}}).encode()


class Checker:
    def __init__(self):
        self.seen: dict[str, bool] = {}

    def expect(self, kernel: str, name: str, ok: bool, detail: str) -> None:
        self.seen[name] = ok


def boot(noise_pid: int) -> guest.BootResult:
    m_starts, n_starts = [1_000, 101_000, 201_000], [5_000, 105_000, 205_000, 305_000]
    files = {"explain-preempt.json": explain(m_starts, CULPRIT),
             "reference-preempt.txt": trace(m_starts),
             "noise-preempt.json": explain(n_starts, noise_pid),
             "reference-noise-preempt.txt": trace(n_starts)}
    markers = [("check", "explain-preempt 0"), ("check", "noise-preempt 0")]
    return guest.BootResult("rt-amd64", markers, files, "", 1.0, False)


class BothRuns(unittest.TestCase):
    def test_both_runs_are_compared_and_the_measure_runs_bar_required(self):
        c = Checker()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            noisy_checks.verify(c, "rt-amd64", boot(CULPRIT), ["preempt"], bar=True)
        bars = {k: v for k, v in c.seen.items() if "reference bar" in k}
        self.assertEqual(list(bars), ["noise preempt (noisy-preempt): the reference bar"])
        self.assertEqual(len(c.seen), 5, c.seen)  # per run: compared, tracer live; one bar
        self.assertTrue(all(c.seen.values()), c.seen)
        self.assertIn("INFO rt-amd64: noise preempt, rtscope noise (noisy-preempt): the "
                      "reference bar: met", out.getvalue())

    def test_a_wrong_cause_in_the_noise_run_is_printed_not_met(self):
        c = Checker()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            noisy_checks.verify(c, "rt-amd64", boot(OTHER), ["preempt"], bar=True)
        self.assertIn("rtscope noise (noisy-preempt): the reference bar: not met",
                      out.getvalue())
        self.assertTrue(c.seen["noise preempt (noisy-preempt): the reference bar"])
        self.assertTrue(c.seen["noise preempt, rtscope noise: rtscope noise --explain exits 0 "
                               "and its spikes are compared"])


if __name__ == "__main__":
    unittest.main()
