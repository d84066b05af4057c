"""Unit tests of noise_checks' host-side figures (run by ci.sh beside test_reference)."""

import unittest

import noise_checks

OSNOISE = """# tracer: osnoise
#                                _-----=> irqs-off
  osnoise/1-215   [001] .....   123.456: 950000  190000  80.00000   20012   0   0   1041   35   12
  osnoise/1-215   [001] .....   124.456: 950000  285000  70.00000   20010   0   0   1040   30   10
  osnoise/0-214   [000] .....   124.456: 950000  950000   0.00000   20010   0   0   1040   30   10
"""


class Bracket(unittest.TestCase):
    def test_osnoise_between_or_near_the_two_rtscope_runs_agrees(self):
        self.assertTrue(noise_checks.bracketed(46.7, 40.0, 30.1))
        self.assertTrue(noise_checks.bracketed(46.7, 16.0, 30.1))
        self.assertFalse(noise_checks.bracketed(46.7, 15.0, 30.1))
        self.assertFalse(noise_checks.bracketed(46.7, 62.0, 30.1))
        # Only the run before: within the tolerance of it.
        self.assertTrue(noise_checks.bracketed(46.66, 31.7, None))
        self.assertFalse(noise_checks.bracketed(46.66, 30.12, None))

    def test_the_figures_take_the_cpus_periods_only(self):
        doc = {"cpus": [{"summary": {"cpu": 1, "available_percent": 74.5,
                                     "max_single_ns": 20_011_000, "runtime_ns": 3_800_000_000}}]}
        f = noise_checks.figures(doc, OSNOISE)
        self.assertEqual(f["osnoise_periods"], 2)
        self.assertAlmostEqual(f["osnoise_avail"], 75.0)
        self.assertEqual(f["osnoise_single_us"], 20012)
        self.assertEqual(f["rtscope_single_us"], 20011.0)
        self.assertIsNone(noise_checks.figures({"cpus": []}, OSNOISE))


# rt-arm64's osnoise periods on CPU 1 with the culprit (the validation pass of stop 41).
OSNOISE_RT_ARM64 = """
           <...>-320     [001] .......   124.299241: 952962     694779  27.09268   28588   2151      0    193      0     32
           <...>-320     [001] .......   125.300267: 950000     708329  25.43905   27962   3294      0    183      0     28
"""


def explained(runtime_ns, spikes, traced, hw, irq, softirq, thread, nmi=0):
    return {"cpus": [{"summary": {"cpu": 1, "runtime_ns": runtime_ns}}],
            "explain": {"counts": {"spikes": spikes, "traced": traced},
                        "interference": [{"cpu": 1, "hw": hw, "nmi": nmi, "irq": irq,
                                          "softirq": softirq, "thread": thread}]}}


class Interference(unittest.TestCase):
    def test_osnoise_counts_per_second_of_its_runtime(self):
        o = noise_checks.osnoise_rates(OSNOISE_RT_ARM64)
        runtime = (952962 + 950000) / 1e6
        self.assertAlmostEqual(o["hw"], (2151 + 3294) / runtime)
        self.assertAlmostEqual(o["irq"], (193 + 183) / runtime)
        self.assertAlmostEqual(o["thread"], 60 / runtime)
        self.assertEqual(o["nmi"], 0)
        self.assertIsNone(noise_checks.osnoise_rates(""))

    def test_rtscope_counts_are_scaled_from_the_traced_gaps_to_all(self):
        r = noise_checks.rtscope_rates(explained(2_000_000_000, 1000, 500, 400, 100, 0, 20))
        self.assertEqual(r["coverage"], 0.5)
        self.assertAlmostEqual(r["hw"], 400 * 2 / 2)
        self.assertAlmostEqual(r["irq"], 100.0)
        self.assertAlmostEqual(r["thread"], 20.0)
        self.assertIsNone(noise_checks.rtscope_rates({"explain": None, "cpus": []}))
        self.assertIsNone(noise_checks.rtscope_rates(explained(2_000_000_000, 10, 0, 0, 0, 0, 0)))

    def test_each_class_within_the_factor_of_the_bracket_agrees(self):
        o = noise_checks.osnoise_rates(OSNOISE_RT_ARM64)  # HW 2862, IRQ 198, THREAD 32 per s
        before = noise_checks.rtscope_rates(explained(4_000_000_000, 16000, 16000, 9000, 600, 200, 120))
        after = noise_checks.rtscope_rates(explained(4_000_000_000, 16000, 15000, 11000, 700, 225, 110))
        ok, detail = noise_checks.rates_agree(before, o, after, rt=True)
        self.assertTrue(ok, detail)
        self.assertIn("IRQ 198/s vs 150-187/s", detail)
        self.assertIn("not compared: softirqs are threads on PREEMPT_RT", detail)
        # The same softirq counts on a kernel where osnoise counts softirqs (0 there): apart.
        ok, detail = noise_checks.rates_agree(before, o, after, rt=False)
        self.assertFalse(ok, detail)
        self.assertIn("SIRQ 0/s vs 50-60/s APART", detail)

    def test_a_class_far_outside_the_bracket_or_a_thin_coverage_disagrees(self):
        o = noise_checks.osnoise_rates(OSNOISE_RT_ARM64)
        few_irqs = noise_checks.rtscope_rates(explained(4_000_000_000, 16000, 16000, 9000, 120, 0, 120))
        ok, detail = noise_checks.rates_agree(few_irqs, o, None, rt=True)
        self.assertFalse(ok, detail)  # 30/s: 198 > 2 x 30 + 10
        self.assertIn("IRQ 198/s vs 30-30/s APART", detail)
        thin = noise_checks.rtscope_rates(explained(4_000_000_000, 16000, 4000, 2250, 150, 0, 30))
        ok, detail = noise_checks.rates_agree(thin, o, None, rt=True)
        self.assertFalse(ok, detail)
        self.assertIn("traced 25%", detail)


class HwNotCompared(unittest.TestCase):
    def test_hw_is_the_hosts_and_printed_not_compared_the_guests_classes_at_2(self):
        o = noise_checks.osnoise_rates(OSNOISE_RT_ARM64)  # HW 2861/s, IRQ 198/s
        # CI's quiet machine, rt-arm64: osnoise's HW 609/s against rtscope's 3,928/s; here
        # rtscope's HW a tenth of osnoise's: printed, not a failure.
        hw = noise_checks.rtscope_rates(explained(1_000_000_000, 300, 300, 286, 200, 0, 30))
        ok, detail = noise_checks.rates_agree(hw, o, None, rt=True)
        self.assertTrue(ok, detail)
        self.assertIn("HW 2861/s vs 286-286/s (not compared: the host's in an emulator)",
                      detail)
        # The guest's own IRQ a quarter of osnoise's is apart: 2 x 50 + 10 < 198.
        irq = noise_checks.rtscope_rates(explained(1_000_000_000, 3000, 3000, 2900, 50, 0, 30))
        ok, detail = noise_checks.rates_agree(irq, o, None, rt=True)
        self.assertFalse(ok, detail)
        self.assertIn("IRQ 198/s vs 50-50/s APART", detail)


class RcuThread(unittest.TestCase):
    def test_rcus_threads_part_in_the_gaps_is_counted_and_thread_compared_whole(self):
        doc = explained(4_000_000_000, 1000, 1000, 400, 400, 0, 300)
        doc["explain"]["culprits"] = [
            {"category": {"kind": "thread", "comm": "rcuc/1", "pid": 27, "prio": 98},
             "spikes_as_main": 1, "spikes": 200, "total_ns": 5},
            {"category": {"kind": "thread", "comm": "rcu_preempt", "pid": 17, "prio": 98},
             "spikes_as_main": 0, "spikes": 20, "total_ns": 5},
            {"category": {"kind": "thread", "comm": "culprit", "pid": 305, "prio": 0},
             "spikes_as_main": 30, "spikes": 30, "total_ns": 9},
            {"category": {"kind": "irq", "name": "rcuc/ (irq 3)"}, "spikes": 50}]
        r = noise_checks.rtscope_rates(doc)
        self.assertEqual(r["rcuc_gaps"], 220)
        self.assertAlmostEqual(r["thread"], 300 / 4)
        o = noise_checks.osnoise_rates(OSNOISE_RT_ARM64)
        self.assertIn("RCU's threads' part in traced gaps: 220",
                      noise_checks.rates_agree(r, o, None, True)[1])


class Hypervisor(unittest.TestCase):
    def test_a_run_whose_interrupt_exits_were_lost_fails_and_names_the_retry(self):
        ok, detail = noise_checks.exits_reached({"explain": {}}, [])
        self.assertTrue(ok, detail)
        self.assertEqual(detail, "rtscope: none missed")
        lost = {"explain": {"missing_exits": [{"cpu": 1, "since_ns": 5, "missed": 5}]}}
        ok, detail = noise_checks.exits_reached(lost, ["noise-explained missing-exits"])
        self.assertFalse(ok)
        self.assertIn("CPU 1: 5 missed", detail)
        self.assertIn("run again", detail)
        ok, detail = noise_checks.exits_reached({"explain": {}}, ["noise-explained missing-exits"])
        self.assertTrue(ok, detail)
        self.assertIn("run again", detail)

    def test_time_below_the_kernel_of_a_guest_is_the_hypervisors(self):
        doc = {"explain_classes": {"irq_ns": 100, "softirq_ns": 0, "thread_ns": 700,
                                   "hypervisor_ns": 200, "unexplained_ns": 0},
               "explain": {"interference": [{"cpu": 1, "hw": 12}]}}
        ok, detail = noise_checks.hypervisor_named(doc)
        self.assertTrue(ok, detail)
        self.assertIn("hypervisor 20.0 % of 0 ms", detail)
        self.assertIn("12 HW gaps", detail)
        # Unexplained below the hypervisor's share is named (CI's fresh machine: hypervisor
        # 12.4 %, unexplained 1.6 %; a pass beside the hog: 56.3 % and 11.2 %).
        some = {**doc, "explain_classes": {**doc["explain_classes"], "unexplained_ns": 120}}
        self.assertTrue(noise_checks.hypervisor_named(some)[0])
        left = {**doc, "explain_classes": {**doc["explain_classes"], "unexplained_ns": 200}}
        self.assertFalse(noise_checks.hypervisor_named(left)[0])
        none = {**doc, "explain_classes": {"thread_ns": 700, "hypervisor_ns": 0}}
        self.assertFalse(noise_checks.hypervisor_named(none)[0])
        self.assertFalse(noise_checks.hypervisor_named({})[0])


MS = 1_000_000
START = 5_000 * MS  # the run's clock_start_ns
CONFIG = {"period_ns": 1_000 * MS, "runtime_ns": 950 * MS, "duration_ns": 2_000 * MS}
# The culprit: 20 ms every 100 ms from 190 ms before the start; the two before it, the spin at
# 960 ms (in the loop's pause, 950-1000 ms) and the one at 2,010 ms (after the run) do not count.
SPINS = [(START + t * MS, START + (t + 20) * MS) for t in range(-190, 2_100, 100)]


# A tick's gap 2 ms into each window: the loop was spinning from there.
TICKS = [(START + w * MS + 2 * MS, START + w * MS + 2 * MS + 10_000) for w in (0, 1_000)]


def run_doc(gaps, ticks=TICKS):
    return {"clock_start_ns": START, "config": CONFIG,
            "cpus": [{"gaps": [{"offset_ns": a - START, "duration_ns": b - a}
                               for a, b in sorted(gaps + ticks)]}]}


def explained_doc(charged_pid, comm="culprit"):
    worst = [{"spike": {"cpu": 1, "deadline_ns": a - 5_000, "wakeup_ns": b + 30_000},
              "charges": [{"kind": "thread", "comm": comm, "pid": charged_pid,
                           "ns": b - a + 10_000},
                          {"kind": "irq", "name": "local_timer", "ns": 25_000}]}
             for a, b in SPINS]
    return {**run_doc([]), "explain": {"worst": worst}}


class Injected(unittest.TestCase):
    """The culprit's logged spins against the loop's gaps and their charges."""

    def test_the_log_is_read_line_by_line(self):
        self.assertEqual(noise_checks.parse_spins("1 2\n3 4\ngarbage\n"), [(1, 2), (3, 4)])

    def test_only_spins_inside_the_loops_windows_count(self):
        inside = noise_checks.spins_measured(run_doc([]), SPINS)
        self.assertEqual(len(inside), 20)  # 10 a window
        self.assertNotIn((START + 960 * MS, START + 980 * MS), inside)

    def test_a_spin_before_the_loop_woke_for_its_window_was_not_measured(self):
        # Beside the hog (rt-amd64): the loop's wake-up for its window came after a spin.
        late = [(a, b) for a, b in SPINS if START + 1_000 * MS < a and b <= START + 1_150 * MS]
        woke = [(START + 1_160 * MS, START + 1_160 * MS + 10_000)]
        window = [s for s in SPINS if START + 1_000 * MS < s[0] < START + 1_950 * MS]
        inside = noise_checks.spins_measured(run_doc([], ticks=TICKS[:1] + woke), SPINS)
        self.assertEqual([s for s in inside if s in window], window[2:])
        gaps = [(a - 3_000, b + 40_000) for a, b in SPINS if (a, b) not in late]
        ok, detail = noise_checks.injected_found(run_doc(gaps, ticks=TICKS[:1] + woke), SPINS)
        self.assertTrue(ok, detail)
        self.assertIn("18 of 18", detail)
        # A spin the loop missed once it had run in its window still counts.
        gaps.remove((window[4][0] - 3_000, window[4][1] + 40_000))
        ok, detail = noise_checks.injected_found(run_doc(gaps, ticks=TICKS[:1] + woke), SPINS)
        self.assertFalse(ok, detail)
        self.assertIn("17 of 18", detail)
        # The first window starts without a sleep: its spins count with no gap before them.
        self.assertEqual(len(noise_checks.spins_measured(run_doc([], ticks=[]), SPINS)), 10)

    def test_a_spin_shorter_than_the_threshold_injected_nothing_and_does_not_count(self):
        # Woken past its spin's end (a 232.9 ms host stall beside the hog): "first last" equal.
        late = (START + 410 * MS, START + 410 * MS)
        spins = sorted(SPINS + [late])
        doc = {**run_doc([]), "config": {**CONFIG, "threshold_ns": 5_000}}
        self.assertNotIn(late, noise_checks.spins_measured(doc, spins))
        self.assertEqual(len(noise_checks.spins_measured(doc, spins)), 20)
        gaps = [(a - 3_000, b + 40_000) for a, b in SPINS]
        ok, detail = noise_checks.injected_found({**run_doc(gaps), "config": doc["config"]},
                                                 spins)
        self.assertTrue(ok, detail)

    def test_each_spin_in_one_gap_longer_than_it_is_found(self):
        gaps = [(a - 3_000, b + 40_000) for a, b in SPINS]
        ok, detail = noise_checks.injected_found(run_doc(gaps), SPINS)
        self.assertTrue(ok, detail)
        self.assertIn("20 of 20", detail)

    def test_a_gap_shorter_than_the_spin_by_more_than_2_percent_is_not_it(self):
        gaps = [(a, b) for a, b in SPINS]
        gaps[3] = (SPINS[3][0], SPINS[3][1] - 500_000)  # 0.5 ms short of a 20 ms spin
        ok, detail = noise_checks.injected_found(run_doc(gaps), SPINS)
        self.assertFalse(ok, detail)
        self.assertIn("19 of 20", detail)
        gaps[3] = (SPINS[3][0], SPINS[3][1] - 300_000)  # within 2 %: found
        self.assertTrue(noise_checks.injected_found(run_doc(gaps), SPINS)[0])

    def test_no_spin_in_the_run_fails(self):
        self.assertFalse(noise_checks.injected_found(run_doc([]), [])[0])

    def test_the_culprits_time_charged_by_name_and_pid(self):
        ok, detail = noise_checks.injected_charged(explained_doc(321), SPINS, 321)
        self.assertTrue(ok, detail)
        self.assertIn("100.0 % of 400.0 ms of 20 injected spins", detail)
        self.assertFalse(noise_checks.injected_charged(explained_doc(322), SPINS, 321)[0])
        self.assertFalse(noise_checks.injected_charged(explained_doc(321, "other"), SPINS,
                                                       321)[0])

    def test_an_interrupt_the_host_stopped_inside_a_spin_is_credited_not_charged(self):
        # Beside the hog (rt-amd64): a 12.3 ms local_timer inside a 23.4 ms spin of the culprit.
        doc = explained_doc(321)
        for w in doc["explain"]["worst"]:
            spin = w["spike"]["wakeup_ns"] - w["spike"]["deadline_ns"] - 35_000
            w["charges"][0]["ns"] = spin * 2 // 5
            w["charges"][1]["ns"] = spin * 3 // 5 + 1_000_000  # past 1 ms: all credited
        ok, detail = noise_checks.injected_charged(doc, SPINS, 321)
        self.assertTrue(ok, detail)
        self.assertIn("40.0 % of 400.0 ms", detail)
        self.assertIn("100.0 % with the interrupts the host stopped", detail)
        # An interrupt of normal length is not credited.
        for w in doc["explain"]["worst"]:
            w["charges"][1]["ns"] = 900_000
        self.assertFalse(noise_checks.injected_charged(doc, SPINS, 321)[0])


class IrqsOff(unittest.TestCase):
    def test_the_hwlat_document_of_cpu_1_with_its_windows_passes(self):
        doc = {"schema": "rtscope.hwnoise/1",
               "config": {"cpus": [1], "width_us": 100000, "window_us": 500000,
                          "threshold_us": 1},
               "cpus": [{"cpu": 1, "windows": 6, "samples": 6, "max_inner_us": 800,
                         "max_outer_us": 950, "nmis": 0}]}
        ok, detail = noise_checks.irqs_off(doc)
        self.assertTrue(ok, detail)
        self.assertIn("6 windows", detail)
        self.assertFalse(noise_checks.irqs_off({**doc, "schema": "rtscope.noise/1"})[0])
        self.assertFalse(noise_checks.irqs_off({**doc, "cpus": [{"windows": 0}]})[0])
        self.assertFalse(noise_checks.irqs_off({})[0])


if __name__ == "__main__":
    unittest.main()
