"""scripts/gpu/checks/t-lnb/bench_table.py on hand-made `d2k bench --json` records: the bars mode
names the missed 80%-of-SOL bar and counts it; the --variants mode ranks the targets that have every
bench row by the geometric mean of their medians (FASTEST), says per target whether it meets the bar
on every row, leaves a target with a missing row unranked, and counts records that did not pass.
Usage: python3 test_bench_table.py PATH/TO/bench_table.py
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = None
ROWS = {"layernorm_backward-bench-16384x4096": (16384, 4096), "layernorm_backward-bench-65536x1024": (65536, 1024)}


def record(target, uuid, median_us, pct_sol, status="PASSED"):
    T, H = ROWS[uuid]
    rec = {"workload": {"uuid": uuid, "role": "bench", "axes": {"T": T, "H": H}}, "target": target, "status": status}
    if status == "PASSED":
        rec["performance"] = {"median_us": median_us}
        rec["roofline"] = {"pct_sol": pct_sol}
    else:
        rec["message"] = "dx: 12 elements over tolerance"
    return rec


def run(args, records):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "records.jsonl")
        with open(path, "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in records))
        p = subprocess.run([sys.executable, SCRIPT, *args, path], capture_output=True, text=True)
        return p.returncode, p.stdout


class VariantsMode(unittest.TestCase):
    def test_ranks_by_geomean_and_reads_the_bar_per_target(self):
        a, b = ROWS
        recs = [record("expert", a, 127.5, 74.2), record("expert", b, 121.1, 78.2),
                # fast on one row, slow on the other: geomean 110.9 us
                record("expert:ring2", a, 100.0, 94.6), record("expert:ring2", b, 123.0, 77.0),
                # >= 80% on both rows, geomean 112.4 us (1.106x the expert): slower than ring2 by geomean
                record("expert:ring3", a, 113.0, 83.7), record("expert:ring3", b, 111.8, 84.7)]
        rc, out = run(["--variants"], recs)
        self.assertEqual(rc, 0, out)
        self.assertIn("FASTEST expert:ring2 ", out)
        self.assertIn("expert:ring3: lowest 83.7% of SOL", out)
        self.assertRegex(out, r"expert:ring3: .*80% bar on every row: yes, geomean 1\.106x the expert")
        self.assertRegex(out, r"expert:ring2: .*80% bar on every row: no")
        self.assertIn("| 16384x4096 | 127.5 us 74.2%", out)

    def test_missing_row_unranked_and_failures_counted(self):
        a, b = ROWS
        recs = [record("expert", a, 127.5, 74.2), record("expert", b, 121.1, 78.2),
                record("expert:ring4", a, 90.0, 99.0), record("expert:ring4", b, 0, 0, status="INCORRECT_NUMERICAL")]
        rc, out = run(["--variants"], recs)
        self.assertEqual(rc, 1, out)
        self.assertIn("expert:ring4: 1 of 2 bench rows timed, not ranked", out)
        self.assertIn("NOT PASSED expert:ring4 layernorm_backward-bench-65536x1024: INCORRECT_NUMERICAL", out)
        self.assertIn("FASTEST expert ", out)


class BarsMode(unittest.TestCase):
    def test_missed_bar_is_counted(self):
        a, b = ROWS
        recs = [record("expert", a, 127.5, 74.2), record("expert", b, 100.0, 84.0),
                record("naive", a, 1016.2, 9.0), record("naive", b, 1004.3, 9.0)]
        rc, out = run([], recs)
        self.assertEqual(rc, 1, out)
        self.assertIn("BAR MISSED layernorm_backward-bench-16384x4096: expert at 74.2% of SOL (< 80)", out)
        self.assertNotIn("BAR MISSED layernorm_backward-bench-65536x1024", out)


if __name__ == "__main__":
    SCRIPT = sys.argv.pop(1)
    unittest.main()
