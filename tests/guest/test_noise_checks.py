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
