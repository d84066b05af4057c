"""Unit tests of explain_ebpf_checks (the guests' `explain-ebpf` check, issue 68): what each
architecture requires of the tier line and the record, the fallback's reason read from it, and
the check's lines on a boot result written here. Run by tests/guest/ci.sh before the guests
boot (`python3 -m unittest` in this folder).
"""

from __future__ import annotations

import contextlib
import io
import json
import unittest

import explain_ebpf_checks as ee
import guest
from test_noisy_checks import Checker, switch

LOOP, CULPRIT, OTHER = 700, 50, 60
# As the rt-amd64 guest printed them (29 Nov 2026), shortened.
RINGS_RECORD = ("eBPF rings on raw tracepoints (21 tracepoints, 32768 records per CPU; tracefs "
                "instance rtscope-219-0 without its events)")
RINGS_LINE = ("rtscope: explaining spikes: tier flight-recorder (kernel stacks off; handlers "
              f"named: tasklet, timer_list; recorder: {RINGS_RECORD}, no trace events, stacks: "
              "none); SMIs not counted: no SMI counter on this CPU")
RT_RINGS_LINE = RINGS_LINE.replace(
    "(kernel stacks", "(timerlat tier not used: the eBPF recorder was asked for (the timerlat "
    "tier's events are the timerlat tracer's own, in tracefs); kernel stacks")
TRACEFS_RECORD = "tracefs instance rtscope-159-0 (timerlat tracer) (tier timerlat)"
# The fallback as choose.rs and rings.rs word it (arm64 not yet seen in a guest).
ARM_FALLBACK = ("rtscope: explaining spikes: tier timerlat (eBPF recorder not used, tracefs "
                "instead: it cannot follow ipi:ipi_entry (no program for it); ipi:ipi_exit (no "
                "program for it); trace live after 1061 ms, set up in 557 ms before; kernel "
                "stacks off; recorder: tracefs instance rtscope-159-0 (timerlat tracer), 10 "
                "trace events (irq, sched, timer, osnoise), stacks: none)")


class Recorder(unittest.TestCase):
    def test_amd64_requires_the_rings_and_on_rt_the_timerlat_note(self):
        self.assertTrue(ee.recorder_check("amd64", RINGS_LINE, RINGS_RECORD)[0])
        self.assertTrue(ee.recorder_check("rt-amd64", RT_RINGS_LINE, RINGS_RECORD)[0])
        # The RT kernel without saying that timerlat was not used, or in the timerlat tier.
        self.assertFalse(ee.recorder_check("rt-amd64", RINGS_LINE, RINGS_RECORD)[0])
        self.assertFalse(ee.recorder_check(
            "rt-amd64", RT_RINGS_LINE.replace("tier flight-recorder", "tier timerlat"),
            RINGS_RECORD)[0])
        # The record must say so too.
        self.assertFalse(ee.recorder_check("amd64", RINGS_LINE, TRACEFS_RECORD)[0])
        # A fallback on amd64 fails, whatever its reason.
        ok, rings, what, _ = ee.recorder_check("rt-amd64", ARM_FALLBACK, TRACEFS_RECORD)
        self.assertEqual((ok, rings), (False, False))
        self.assertIn("eBPF rings on raw tracepoints", what)
        self.assertFalse(ee.recorder_check("amd64", "", "")[0])

    def test_arm64_falls_back_only_for_the_ipi_events(self):
        ok, rings, what, _ = ee.recorder_check("rt-arm64", ARM_FALLBACK, TRACEFS_RECORD)
        self.assertEqual((ok, rings), (True, False))
        self.assertIn("no program for arm64's IPI events", what)
        self.assertEqual(ee.lacking(ARM_FALLBACK), {"ipi:ipi_entry", "ipi:ipi_exit"})
        # The standard kernel falls back to the tracefs flight recorder, not timerlat.
        std = ARM_FALLBACK.replace("tier timerlat", "tier flight-recorder")
        self.assertTrue(ee.recorder_check("arm64", std, "tracefs instance rtscope-1-0")[0])
        self.assertFalse(ee.recorder_check("rt-arm64", std, TRACEFS_RECORD)[0])
        # Another reason, or one more tracepoint, fails.
        btf = ARM_FALLBACK.replace(
            "it cannot follow ipi:ipi_entry (no program for it); ipi:ipi_exit (no program for "
            "it)", "BTF: /sys/kernel/btf/vmlinux: No such file or directory (os error 2)")
        self.assertEqual(ee.lacking(btf), set())
        self.assertFalse(ee.recorder_check("rt-arm64", btf, TRACEFS_RECORD)[0])
        more = ARM_FALLBACK.replace("ipi:ipi_exit (no", "irq:softirq_exit (no")
        self.assertFalse(ee.recorder_check("rt-arm64", more, TRACEFS_RECORD)[0])
        # The rings running on arm64 (once its IPIs have programs) pass.
        self.assertTrue(ee.recorder_check("arm64", RINGS_LINE, RINGS_RECORD)[0])
        self.assertTrue(ee.recorder_check("bpo-rt-arm64", RT_RINGS_LINE, RINGS_RECORD)[0])


def trace(starts_us: list[int]) -> bytes:
    """The measuring thread on CPU 1, `culprit` taking it 10 ms from each of `starts_us`."""
    loop, culprit = ("rtscope-m0", LOOP), ("culprit", CULPRIT)
    lines = [switch(0, ("swapper/1", 0), loop)]
    for s in starts_us:
        lines += [switch(s, loop, culprit), switch(s + 10_000, culprit, loop)]
    lines.append(switch(starts_us[-1] + 50_000, loop, ("swapper/1", 0)))
    return "\n".join(lines).encode()


def explain(starts_us: list[int], pids: list[int]) -> bytes:
    """rtscope's JSON: each 10 ms spike charged whole to thread `pids[i]`."""
    worst = [{"tier": "trace", "spike": {"cpu": 1, "tid": LOOP, "deadline_ns": s * 1000,
                                         "wakeup_ns": (s + 10_000) * 1000},
              "charges": [{"kind": "thread", "pid": p, "ns": 10_000_000}]}
             for s, p in zip(starts_us, pids)]
    culprits = [{"category": {"kind": "thread", "comm": "culprit", "pid": CULPRIT}}]
    return json.dumps({"explain": {"tier": "flight_recorder", "worst": worst,
                                   "culprits": culprits,
                                   "counts": {"spikes": len(worst), "traced": len(worst)}}
                       }).encode()


STARTS = [1_000, 101_000, 201_000, 301_000]


def boot(pids: list[int], line: str = RINGS_LINE) -> guest.BootResult:
    files = {"explain-ebpf.json": explain(STARTS, pids),
             "reference-ebpf.txt": trace(STARTS),
             "explain-ebpf.log": f"{line}\nthread culprit: 40.000 ms\n".encode()}
    markers = [("check", "explain-ebpf 0"), ("explain-osnoise-before", "1 1000"),
               ("explain-ebpf-named", "1"), ("explain-ebpf-recorder", RINGS_RECORD),
               ("explain-ebpf-instances", "0"), ("explain-ebpf-osnoise-after", "1 1000")]
    return guest.BootResult("amd64", markers, files, "", 1.0, False)


NAMED = "--explain-recorder ebpf (eBPF ran): the culprit is charged at least half of the time " \
        "it ran, per the reference"
FIRST = "--explain-recorder ebpf (eBPF ran): each spike the culprit ran most of, per the " \
        "reference, is charged to it first"


class Verify(unittest.TestCase):
    def run_checks(self, r: guest.BootResult, kernel: str = "amd64") -> Checker:
        c = Checker()
        with contextlib.redirect_stdout(io.StringIO()):
            ee.verify(c, kernel, r)
        return c

    def test_a_run_that_names_the_culprit_passes_every_check_and_figure(self):
        c = self.run_checks(boot([CULPRIT] * 4))
        self.assertEqual(len(c.seen), 5, c.seen)
        self.assertTrue(all(c.seen.values()), c.seen)
        self.assertEqual(len(c.figures), 3, c.figures)
        self.assertTrue(all(c.figures.values()), c.figures)

    def test_one_spike_charged_elsewhere_is_a_figure_and_most_elsewhere_a_failure(self):
        c = self.run_checks(boot([CULPRIT, CULPRIT, CULPRIT, OTHER]))
        self.assertTrue(c.seen[NAMED])
        self.assertFalse(c.figures[FIRST])
        self.assertEqual(ee.culprit_first(json.loads(explain(STARTS, [CULPRIT, OTHER, OTHER,
                                                                      CULPRIT]))["explain"],
                                          ee.reference.parse(trace(STARTS).decode(), 1), []),
                         (2, 4))
        c = self.run_checks(boot([CULPRIT, OTHER, OTHER, OTHER]))
        self.assertFalse(c.seen[NAMED])

    def test_an_instance_left_or_a_failed_run_fails(self):
        r = boot([CULPRIT] * 4)
        r.markers = [m for m in r.markers if m[0] != "explain-ebpf-instances"]
        r.markers += [("explain-ebpf-instances", "1"), ("check", "explain-ebpf 1")]
        c = self.run_checks(r)
        self.assertFalse(c.seen["rtscope measure --explain --explain-recorder ebpf exits 0"])
        self.assertFalse(c.seen["--explain-recorder ebpf (eBPF ran): no tracefs instance left, "
                                "osnoise settings as before"])

    def test_the_arm64_fallback_names_tracefs_in_its_lines(self):
        r = boot([CULPRIT] * 4, ARM_FALLBACK)
        r.markers = [m for m in r.markers if m[0] != "explain-ebpf-recorder"]
        r.markers.append(("explain-ebpf-recorder", TRACEFS_RECORD))
        c = self.run_checks(r, "rt-arm64")
        self.assertTrue(all(c.seen.values()), c.seen)
        self.assertIn("--explain-recorder ebpf (tracefs ran): the culprit is named in the output "
                      "and the JSON", c.seen)


if __name__ == "__main__":
    unittest.main()
