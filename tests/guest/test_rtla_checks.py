"""Unit tests of rtla_checks on traces and JSON written here: the stack rtla's auto mode saved
(the last `<stack trace>` of its trace) and rtscope's stacks of the module's thread must name
the same injected function; a stack that names none, or another one, fails. Run by
tests/guest/ci.sh's unittest line once listed there (`python3 -m unittest` in this folder).
"""

from __future__ import annotations

import json
import unittest

import guest
import rtla_checks


def rtla_trace(*stacks: list[str]) -> str:
    """An rtla timerlat trace's end: a thread sample over the threshold, then its stack."""
    out = []
    for frames in stacks:
        out.append("     timerlat/1-97      [001] .....   101.000100: #870 context "
                   "thread timer_latency   9712345 ns")
        out.append("     timerlat/1-97      [001] .....   101.000101: <stack trace>")
        out += [f" => {f}" for f in frames]
    return "\n".join(out) + "\n"


# Where the timer interrupt found the CPU inside the preempt-off section (arm64's order).
AT_IRQ = ["timerlat_irq", "__hrtimer_run_queues", "hrtimer_interrupt", "arch_timer_handler_phys",
          "handle_percpu_devid_irq", "generic_handle_domain_irq", "gic_handle_irq",
          "call_on_irq_stack", "do_interrupt_handler", "el1_interrupt", "el1h_64_irq_handler",
          "el1h_64_irq", "ktime_get", "noisy_hold_preempt_off", "noisy_thread", "kthread",
          "ret_from_fork"]
IDLE = ["timerlat_irq", "__hrtimer_run_queues", "hrtimer_interrupt", "el1h_64_irq",
        "default_idle_call", "do_idle", "cpu_startup_entry"]


def explain(*frame_lists: list[str], comm: str = "noisy-preempt") -> dict:
    """rtscope's `explain` object: one kept spike per stack, of thread COMM."""
    return {"worst": [{"stack": {"task": {"comm": comm, "pid": 50, "prio": 120},
                                 "frames": frames}} for frames in frame_lists]}


OURS = ["trace_event_raw_event_sched_switch", "__schedule", "preempt_schedule",
        "noisy_hold_preempt_off [noisy]", "noisy_thread [noisy]", "kthread"]


class Stacks(unittest.TestCase):
    def test_each_stack_is_read_innermost_first_without_offsets_or_padding(self):
        text = rtla_trace(["timerlat_irq+0x10/0x40", "noisy_hold_irqs_off+0x8/0x30", "0", "0"])
        self.assertEqual(rtla_checks.trace_stacks(text),
                         [["timerlat_irq", "noisy_hold_irqs_off"]])

    def test_the_injected_function_is_the_innermost_of_the_module(self):
        self.assertEqual(rtla_checks.injected(OURS), "noisy_hold_preempt_off")
        self.assertIsNone(rtla_checks.injected(IDLE))


class Agree(unittest.TestCase):
    def test_the_same_section_in_both_agrees(self):
        ok, detail = rtla_checks.agree(rtla_trace(AT_IRQ), explain(OURS, OURS), "noisy-preempt")
        self.assertTrue(ok, detail)
        self.assertIn("2x noisy_hold_preempt_off", detail)

    def test_rtla_stopped_in_idle_does_not_agree(self):
        ok, detail = rtla_checks.agree(rtla_trace(IDLE), explain(OURS), "noisy-preempt")
        self.assertFalse(ok)
        self.assertIn("no noisy function", detail)

    def test_another_function_of_the_module_does_not_agree(self):
        other = [f.replace("preempt_off", "irqs_off") for f in AT_IRQ]
        ok, _ = rtla_checks.agree(rtla_trace(other), explain(OURS), "noisy-preempt")
        self.assertFalse(ok)

    def test_a_stack_that_lost_the_holds_frame_in_the_clock_reads_prologue_names_the_hold(self):
        # rt-arm64: the interrupt in ktime_get's first instructions, the hold's frame lost.
        lost = [f for f in AT_IRQ if f != "noisy_hold_preempt_off"]
        ok, detail = rtla_checks.agree(rtla_trace(lost), explain(OURS), "noisy-preempt",
                                       "preempt")
        self.assertTrue(ok, detail)
        self.assertIn("names noisy_hold_preempt_off (its own frame lost", detail)
        # Not in a mode whose thread calls the clock read itself (softirq: send_ipis), nor
        # under another frame than the clock read, nor for another hold than rtscope's.
        self.assertFalse(rtla_checks.agree(rtla_trace(lost), explain(OURS), "noisy-preempt",
                                           "softirq")[0])
        elsewhere = [f if f != "ktime_get" else "msleep_interruptible" for f in lost]
        self.assertFalse(rtla_checks.agree(rtla_trace(elsewhere), explain(OURS),
                                           "noisy-preempt", "preempt")[0])
        self.assertFalse(rtla_checks.agree(rtla_trace(lost), explain(OURS), "noisy-preempt",
                                           "irq")[0])
        self.assertFalse(rtla_checks.lost_hold(AT_IRQ, "preempt"))

    def test_no_stack_of_the_thread_in_rtscope_does_not_agree(self):
        ok, detail = rtla_checks.agree(rtla_trace(AT_IRQ), explain(OURS, comm="kworker/1:1"),
                                       "noisy-preempt")
        self.assertFalse(ok)
        self.assertIn("none name the module", detail)


class Verify(unittest.TestCase):
    def result(self, trace: str, markers: list[tuple[str, str]]) -> guest.BootResult:
        files = {"rtla-trace-preempt.txt": trace.encode(),
                 "explain-preempt.json": json.dumps({"explain": explain(OURS)}).encode()}
        return guest.BootResult("rt-arm64", markers, files, "", 1.0, False)

    def lines(self, r: guest.BootResult) -> dict[str, bool]:
        seen: dict[str, bool] = {}
        self.details: list[str] = []

        self.figures: dict[str, bool] = {}

        class C:
            def expect(c, kernel, name, ok, detail=""):
                seen[name] = ok
                self.details.append(detail)

            def figure(c, kernel, name, ok, detail=""):
                self.figures[name] = ok
                self.details.append(detail)
        rtla_checks.verify(C(), "rt-arm64", r, ["preempt", "storm"])
        return seen

    def test_a_run_that_stopped_on_the_section_passes_both_checks(self):
        seen = self.lines(self.result(rtla_trace(IDLE, AT_IRQ),
                                      [("rtla-preempt", "1 0 rtla timerlat hit stop tracing")]))
        self.assertEqual(len(seen), 2)
        self.assertTrue(all(seen.values()), seen)

    def test_an_earlier_try_stopped_elsewhere_is_named_in_the_detail(self):
        r = self.result(rtla_trace(AT_IRQ), [("rtla-preempt", "1 0 rtla timerlat hit stop tracing"),
                                             ("rtla-preempt", "2 0 rtla timerlat hit stop tracing")])
        r.files["rtla-trace-preempt-try1.txt"] = rtla_trace(IDLE).encode()
        seen = self.lines(r)
        self.assertTrue(all(seen.values()), seen)
        self.assertIn("try 1 stopped in timerlat_irq <- __hrtimer_run_queues", self.details[-1])
        self.assertIn("do_idle", self.details[-1])

    def test_every_try_stopped_in_idle_is_a_figure_not_met_and_says_so(self):
        r = self.result(rtla_trace(IDLE), [("rtla-preempt", "1 0 rtla timerlat hit stop tracing"),
                                           ("rtla-preempt", "2 0 rtla timerlat hit stop tracing")])
        r.files["rtla-trace-preempt-try1.txt"] = rtla_trace(IDLE).encode()
        seen = self.lines(r)
        self.assertEqual(list(seen.values()), [True])
        self.assertEqual(list(self.figures.values()), [False])
        self.assertIn("every try stopped with the CPU idle", self.details[-1])

    def test_tries_stopped_in_idle_or_without_a_stack_are_a_figure(self):
        r = self.result(rtla_trace(IDLE), [("rtla-preempt", f"{n} 0 rtla timerlat hit stop tracing")
                                           for n in (1, 2, 3)])
        r.files["rtla-trace-preempt-try1.txt"] = rtla_trace(IDLE).encode()
        r.files["rtla-trace-preempt-try2.txt"] = b""
        seen = self.lines(r)
        self.assertEqual(list(seen.values()), [True])
        self.assertEqual(list(self.figures.values()), [False])
        self.assertIn("try 2: no stack", self.details[-1])

    def test_tries_stopped_in_idle_or_in_a_function_not_of_the_module_are_a_figure(self):
        rcu = ["timerlat_irq", "__hrtimer_run_queues", "hrtimer_interrupt",
               "asm_sysvec_apic_timer_interrupt", "rcu_nocb_unlock_irqrestore.part.0",
               "rcu_core", "rcu_cpu_kthread", "kthread", "ret_from_fork"]
        r = self.result(rtla_trace(IDLE), [("rtla-preempt", f"{n} 0 rtla timerlat hit stop tracing")
                                           for n in (1, 2, 3)])
        r.files["rtla-trace-preempt-try1.txt"] = rtla_trace(IDLE).encode()
        r.files["rtla-trace-preempt-try2.txt"] = rtla_trace(rcu).encode()
        seen = self.lines(r)
        self.assertEqual(list(seen.values()), [True])
        self.assertEqual(list(self.figures.values()), [False])
        self.assertIn("in a function not of the module", self.details[-1])
        self.assertIn("rcu_core", self.details[-1])

    def test_a_try_that_stopped_elsewhere_than_idle_still_fails_the_function(self):
        other = [f.replace("preempt_off", "irqs_off") for f in AT_IRQ]
        r = self.result(rtla_trace(other), [("rtla-preempt", "1 0 rtla timerlat hit stop tracing"),
                                            ("rtla-preempt", "2 0 rtla timerlat hit stop tracing")])
        r.files["rtla-trace-preempt-try1.txt"] = rtla_trace(IDLE).encode()
        seen = self.lines(r)
        self.assertEqual(list(seen.values()), [True, False])
        self.assertEqual(self.figures, {})

    def test_a_try_the_timeout_killed_after_it_saved_the_modules_stack_ran(self):
        for rc, ran in (("143", True), ("124", True), ("1", False)):
            seen = self.lines(self.result(rtla_trace(AT_IRQ), [("rtla-preempt", f"1 {rc} ")]))
            self.assertEqual(list(seen.values()), [ran, ran], rc)
            self.assertEqual("the timeout killed it" in self.details[0], ran)
        seen = self.lines(self.result(rtla_trace(IDLE), [("rtla-preempt", "1 143 ")]))
        self.assertEqual(list(seen.values()), [False, False])

    def test_rtscope_runs_whose_every_spike_timed_out_make_the_agreement_a_figure(self):
        r = self.result(rtla_trace(AT_IRQ), [("rtla-preempt", "1 0 rtla timerlat hit stop tracing")])
        r.files["explain-preempt.json"] = json.dumps({"explain": {"counts": {
            "spikes": 4, "traced": 0, "not_traced": {"timed_out": 4}}}}).encode()
        seen = self.lines(r)
        self.assertEqual(list(seen.values()), [True])
        self.assertEqual(list(self.figures.values()), [False])
        self.assertIn("the analysis of each timed out", self.details[-1])

    def test_no_run_of_rtla_fails_both(self):
        seen = self.lines(self.result("", []))
        self.assertEqual(list(seen.values()), [False, False])


if __name__ == "__main__":
    unittest.main()
