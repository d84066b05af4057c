"""Unit tests of answer_checks.py: which cause lines break issue 65's rule. Run by
tests/guest/ci.sh before the guests boot (`python3 -m unittest` in this folder).
"""

from __future__ import annotations

import unittest

import answer_checks

# The line the issue quotes: a 15 % culprit named as the cause of a 51.67 ms spike.
ISSUE = ("answer: mixed: worst 51.67 ms (run 2, 3.1 s in), p99.99 2.07 ms, 2187 deadlines "
         "missed; the worst was caused by blocking by synth_db:9843:nice0 (15 %)")


class Violations(unittest.TestCase):
    def test_a_minority_culprit_named_as_the_cause_is_one(self):
        self.assertEqual(answer_checks.violations([ISSUE]), [ISSUE])

    def test_a_majority_culprit_a_group_a_spread_and_unexplained_are_not(self):
        lines = [
            "idle: worst 3.49 ms (run 1); the worst was caused by blocking by "
            "kworker/u8:3:18738:nice0 (97 %)",
            "the worst spike (51.67 ms) was caused by 4 lower-priority tasks holding the CPU "
            "(51 % together, largest synth_db:9843:nice0 15 %)",
            "two: …; the worst had no main cause, spread over 2 causes (largest thread "
            "busy_a:4711:rt99 50 %, then softirq NET_RX 50 %)",
            "the worst was mostly unexplained (62 % not covered by the trace; largest known "
            "cause IRQ eth0 38 %)",
            "the worst was caused by IRQ eth0 (irq 24) (50 %; 12 % unexplained)",
        ]
        self.assertEqual(answer_checks.violations(lines), [])

    def test_a_cause_without_its_share_is_one(self):
        line = "the worst was caused by (from the monitors only) cc1:40"
        self.assertEqual(answer_checks.violations([line]), [line])

    def test_a_name_with_parentheses_is_read_up_to_the_share(self):
        line = "the worst was caused by IRQ eth0 (irq 24) (29 %)"
        self.assertEqual(answer_checks.violations([line]), [line])


class Reading(unittest.TestCase):
    def test_the_answer_box_run_lines_and_explain_lines_are_read_as_text(self):
        page = ('<h1>x</h1><div class="answer" id="answer"><h2>The answer</h2>\n<ul>\n'
                '<li><b>mixed</b>: worst 2 ms; the worst was caused by blocking by a&amp;b:1:nice0'
                ' (15 %)</li>\n</ul>\n<ul class="verdicts"><li>not an answer</li></ul>')
        self.assertEqual(answer_checks.answer_lines(page),
                         ["mixed: worst 2 ms; the worst was caused by blocking by a&b:1:nice0 (15 %)"])
        self.assertEqual(answer_checks.answer_lines("<p>no answer</p>"), [])
        log = "[1] quick/N:N/idle/1: 29848 samples\nanswer: idle: worst 3 ms\nreport: …\n"
        self.assertEqual(answer_checks.campaign_answers(log), ["answer: idle: worst 3 ms"])
        text = ("Why were the worst wake-ups late?\n  traced 1 of 1 spikes\n"
                "  the worst spike (1.00 ms) had no main cause, spread over 2 causes (…)\n")
        self.assertEqual(answer_checks.cause_lines([text]),
                         ["the worst spike (1.00 ms) had no main cause, spread over 2 causes (…)"])
        ok, detail = answer_checks.verdict([ISSUE])
        self.assertFalse(ok)
        self.assertIn("synth_db:9843:nice0 (15 %)", detail)


if __name__ == "__main__":
    unittest.main()
