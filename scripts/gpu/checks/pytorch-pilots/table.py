"""One pilot's PyTorch table (issue #14): d2k's median per bench workload and target (naive,
expert, library, torch_eager, torch_compile) beside do_bench.py's medians of the same pytorch.py,
their ratios, and one PASS/FAIL line per PyTorch cell: d2k's figure within TOLERANCE (10 %) of
do_bench's. A cell missing on either side is a FAIL (nothing to compare); a d2k record that did
not pass is listed (NOT PASSED), and so is a do_bench.py error (NOT MEASURED). Exit status: the
number of FAIL, NOT PASSED and NOT MEASURED lines.

Usage: python3 table.py --task TASK [--tolerance 0.10] D2K.jsonl DO_BENCH.jsonl
  D2K.jsonl       `d2k bench --json` traces (read with lib/bench_records.py)
  DO_BENCH.jsonl  do_bench.py's lines {task, workload, mode, median_us | error}
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import bench_records  # noqa: E402

D2K_TARGETS = ("naive", "expert", "library", "torch_eager", "torch_compile")
MODES = (("torch_eager", "eager"), ("torch_compile", "compile"))


def measure(_wl, rec):
    """(median us, timer, relative noise, samples) of one d2k record."""
    p = rec["performance"]
    return p["median_us"], p.get("timer", "?"), p.get("rel_noise", 0.0), p.get("samples", 0)


def load_do_bench(path, task):
    """({workload: {mode: record}}, [lines for records with an error or a missing file])."""
    rows, bad = {}, []
    if not os.path.exists(path):
        return rows, [f"{path}: missing (do_bench.py did not run)"]
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                bad.append(f"{path}:{n}: not JSON ({e})")
                continue
            if rec.get("task") != task:
                continue
            if "error" in rec:
                bad.append(f"do_bench {rec['mode']} {rec['workload']}: {rec['error'][:160]}")
                continue
            rows.setdefault(rec["workload"], {})[rec["mode"]] = rec
    return rows, bad


def cell(per, target):
    return f"{per[target][0]:.2f}" if target in per else "-"


def verdicts(uuid, per, db, tolerance):
    """(ratio cells, [(ok, line)]) of the two PyTorch columns of one workload."""
    ratios, lines = [], []
    for target, mode in MODES:
        d = per.get(target)
        b = db.get(mode)
        what = f"{uuid} {target}"
        if d is None or b is None:
            ratios.append("-")
            missing = " and ".join(s for s, v in (("d2k", d), ("do_bench", b)) if v is None)
            lines.append((False, f"{what}: no {missing} figure"))
            continue
        r = d[0] / b["median_us"]
        ratios.append(f"{r:.3f}")
        detail = (f"d2k {d[0]:.2f} us ({d[1]}, noise {100 * d[2]:.2f} %, n={d[3]}), "
                  f"do_bench {b['median_us']:.2f} us (n={b.get('reps', '?')}): {r:.3f}x")
        ok = abs(r - 1) <= tolerance
        lines.append((ok, f"{what} within {100 * tolerance:.0f}% of do_bench {mode}: {detail}"))
    return ratios, lines


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", required=True)
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("d2k_jsonl")
    ap.add_argument("do_bench_jsonl")
    a = ap.parse_args(argv)
    rows, _, bad = bench_records.load([a.d2k_jsonl], measure)
    db_rows, db_bad = load_do_bench(a.do_bench_jsonl, a.task)
    print(f"### {a.task}\n")
    print("Median µs (d2k: cold L2, fresh inputs per call; do_bench: triton.testing.do_bench, 256 MB "
          "buffer zeroed before each call).\n")
    bench_records.print_header(list(D2K_TARGETS) + ["do_bench eager", "do_bench compile",
                                                    "d2k/do_bench eager", "d2k/do_bench compile"])
    results = []
    for uuid in list(rows) + [u for u in db_rows if u not in rows]:
        per, db = rows.get(uuid, {}), db_rows.get(uuid, {})
        ratios, lines = verdicts(uuid, per, db, a.tolerance)
        dbc = [f"{db[m]['median_us']:.2f}" if m in db else "-" for _, m in MODES]
        bench_records.print_row(uuid, [cell(per, t) for t in D2K_TARGETS] + dbc + ratios)
        results += lines
    print()
    bench_records.print_not_passed(bad)
    for b in db_bad:
        print("NOT MEASURED", b)
    fails = 0
    for ok, line in results:
        print(("PASS " if ok else "FAIL ") + line)
        fails += not ok
    if not results:
        print(f"FAIL {a.task}: no bench workload on either side")
        fails += 1
    return fails + len(bad) + len(db_bad)


if __name__ == "__main__":
    sys.exit(min(main(sys.argv[1:]), 125))
