"""Unit tests of bench/tail-scipy-held-out.py that need neither scipy nor a measured run:
the raw-sample decoding, the split, the block maxima and the declustering (against the cases
of crates/rtscope-store/src/codec.rs and crates/rtscope-evt/src/threshold.rs).

    python3 -m unittest discover -s bench -p 'test_tail_scipy.py'
"""

import contextlib
import importlib.util
import io
import os
import sqlite3
import tempfile
import unittest

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tail-scipy-held-out.py")
_SPEC = importlib.util.spec_from_file_location("tail_scipy_held_out", _PATH)
ts = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ts)


class Decode(unittest.TestCase):
    def test_the_codec_tests_known_bytes(self):
        # codec.rs raw_samples_encode_to_the_known_bytes: (5, 10, 110), (6, 12, 212),
        # (8, 11, 411) with interval 100, tag 3 and tag 2.
        self.assertEqual(ts.decode_latencies(bytes([3, 100, 3, 10, 5, 10, 110, 4, 1, 2, 11, 0])),
                         [10, 12, 11])
        self.assertEqual(ts.decode_latencies(bytes([2, 100, 3, 5, 10, 110, 1, 12, 4, 2, 11, 1])),
                         [10, 12, 11])
        self.assertEqual(ts.decode_latencies(bytes([3, 100, 0, 0])), [])

    def test_bad_chunks_are_refused(self):
        self.assertIsNone(ts.decode_latencies(bytes([3, 100, 2, 10, 5, 10, 110, 3])))  # odd v
        self.assertIsNone(ts.decode_latencies(bytes([3, 100, 0, 0, 0])))  # trailing byte
        self.assertIsNone(ts.decode_latencies(bytes([1, 0])))  # unknown tag
        self.assertIsNone(ts.decode_latencies(bytes([3, 100, 3, 10, 5, 10, 110, 4, 1, 2, 11])))
        # A latency above u64::MAX: min = u64::MAX, then v = 2 (one above it).
        over = bytes([3, 0, 2]) + bytes([0xFF] * 9 + [0x01]) + bytes([0, 0, 0, 2])
        self.assertIsNone(ts.decode_latencies(over))


class Split(unittest.TestCase):
    def test_segments_of_whole_seconds_alternate(self):
        fit, held = ts.split(list(range(25)), 2.0, 2.0)  # 4 wake-ups a segment
        self.assertEqual(fit, [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24])
        self.assertEqual(held, [4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23])
        # Shorter than a second: a second.
        fit, held = ts.split(list(range(6)), 0.1, 3.0)
        self.assertEqual((fit, held), ([0, 1, 2], [3, 4, 5]))
        self.assertEqual(ts.rust_round(2.5), 3)  # half away from zero, as f64::round

    def test_block_maxima_drop_a_partial_block(self):
        self.assertEqual(ts.block_maxima([1, 5, 2, 7, 3, 9, 4], 2), [5, 7, 9])


class Decluster(unittest.TestCase):
    def test_neighbouring_exceedances_form_one_episode(self):
        # threshold.rs neighbouring_exceedances_form_one_cluster.
        v = [0.0] * 1000
        for b in range(1, 10):
            for j, x in enumerate([5.0, 9.0, 6.0]):
                v[b * 100 + j] = x
        k, maxima, theta, run = ts.decluster(v, 1.0)
        self.assertEqual(k, 27)
        self.assertEqual(maxima, [8.0] * 9)
        self.assertLess(theta, 1.0)
        self.assertGreaterEqual(run, 1)
        self.assertLess(run, 98)
        k, maxima, _, _ = ts.decluster([0.0, 3.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0, 2.0], 1.0)
        self.assertEqual((k, maxima), (3, [2.0, 3.0, 1.0]))

    def test_no_or_one_exceedance(self):
        self.assertEqual(ts.decluster([0.0, 1.0], 5.0), (0, [], 1.0, 0))
        self.assertEqual(ts.decluster([0.0, 7.0], 5.0), (1, [2.0], 1.0, 0))

    def test_extremal_index_branches(self):
        self.assertEqual(ts.extremal_index([]), 1.0)
        self.assertEqual(ts.extremal_index([1, 1, 1]), 1.0)  # clamped to 1
        # max gap > 2: 2 (Σ(t−1))² / (m Σ(t−1)(t−2)) = 2·(2+4)² / (2·(2+12)) = 72/28, clamped.
        self.assertEqual(ts.extremal_index([3, 5]), 1.0)
        t = [1, 1, 1, 50]  # 2·49² / (4·48·49) ≈ 0.51
        self.assertAlmostEqual(ts.extremal_index(t), 2 * 49**2 / (4 * 48 * 49))


try:
    import numpy
except ImportError:
    numpy = None


@unittest.skipIf(numpy is None, "numpy not importable")
class NumpyArrays(unittest.TestCase):
    def test_arrays_give_what_lists_give(self):
        v = [float((i * 7919) % 101) for i in range(1000)]
        a = numpy.array(v)
        self.assertEqual([x.tolist() for x in ts.split(a, 3.0, 10.0)], list(ts.split(v, 3.0, 10.0)))
        self.assertEqual(ts.block_maxima(a, 7).tolist(), ts.block_maxima(v, 7))
        self.assertEqual(ts.decluster(a, 90.0), ts.decluster(v, 90.0))
        self.assertEqual(ts.above(a, 50.0), ts.above(v, 50.0))


try:
    from scipy import stats
except ImportError:
    stats = None


@unittest.skipIf(stats is None, "scipy not importable")
class Fit(unittest.TestCase):
    def test_the_best_start_is_kept(self):
        # Heavy-tailed maxima (ξ 1.2): the fit kept is at least as likely as scipy's own.
        data = stats.genextreme.rvs(-1.2, 150, 100, size=300, random_state=7)
        params, why = ts.fit_quietly(stats.genextreme, data,
                                     [((-x,), {"loc": 150.0, "scale": 30.0}) for x in (0.1, 1)])
        self.assertIsNone(why)
        default = stats.genextreme.fit(data)
        self.assertLessEqual(stats.genextreme.nnlf(params, data),
                             stats.genextreme.nnlf(default, data) + 1e-9)

    def test_a_degenerate_fit_prints_fit_failed(self):
        # 40 episodes of the same excess: scipy's ξ is ≤ −1 (or no fit): rows "fit failed".
        v = ([1.0] * 99 + [9.0]) * 40
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            ts.gpd_rows("t", v, sorted(v, reverse=True), v, 0.99)
        rows = out.getvalue().splitlines()
        self.assertEqual(len(rows), 3)
        self.assertTrue(all("| fit failed: " in r for r in rows), rows)


class Refusals(unittest.TestCase):
    def test_missing_database_run_or_raw_samples(self):
        with self.assertRaisesRegex(ts.Refused, "no database"):
            ts.open_run("/nonexistent/rtscope.db", 1)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.db")
            db = sqlite3.connect(path)
            db.executescript(
                "CREATE TABLE runs (id INTEGER PRIMARY KEY);"
                "CREATE TABLE threads (run_id, thread, cpu, interval_ns);"
                "CREATE TABLE samples (run_id, thread, first_cycle, count, data);"
                "INSERT INTO runs VALUES (1); INSERT INTO threads VALUES (1, 0, 1, 1000000);")
            db.commit()
            db.close()
            with self.assertRaisesRegex(ts.Refused, "no run 2"):
                ts.open_run(path, 2)
            with self.assertRaisesRegex(ts.Refused, "no raw samples"):
                ts.open_run(path, 1)
            with self.assertRaisesRegex(ts.Refused, "usage"):
                ts.main([path])


if __name__ == "__main__":
    unittest.main()
