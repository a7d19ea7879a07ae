"""The A/B table of scripts/gpu/checks/ab-refactor.sh: the built-in targets timed by the engine
before the refactor (commit 6b70af8, "old") and after it ("new"), interleaved in one call, each
engine run ROUNDS times. Per task, target and bench workload: each round's median of each engine,
new/old (the ratio of the medians of the round medians), each engine's noise (the largest
`performance.rel_noise` of its rounds), the spread of the old rounds ((max - min) / median of the
old round medians), the timers, and a verdict:

  within noise   |new/old - 1| <= max(2 x noise, old spread), noise = the larger of the two noises
  differs        otherwise
  incomplete     a round of either engine has no PASSED timing for the row

A row whose engines used different timers (one `cupti`, the instrumented spans, the other
`events_corrected`; or `parent_clock`, the parent's batch figure) says so after its verdict: the
instrumented spans read many-block kernels ~10 % high (docs/results/timing-audit-2026-11-29.md),
so such a row compares two timers, not two engines.

Trace files: OUT/{old,new}/rROUND/TASK.jsonl, one `d2k bench --json` of that engine each. Both
engines write the same record shape (src/report/trace.cpp at 6b70af8 and now): "workload" {uuid,
role, axes}, "target", "status", "performance" {median_us, rel_noise, timer}; the new one adds
fields (roofline.memory_model, the parent clock's timer_note) that this table does not read.
Records are read with lib/bench_records.py.

Usage: python3 ab_table.py --out OUT --tasks T1,T2 [--rounds 2] [--markdown FILE]
       python3 ab_table.py --self-test
Exit status: 0 when every row is within noise, 1 when a row differs, 2 when a row is incomplete
or a record did not pass. Needs only the standard library.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import bench_records  # noqa: E402

ENGINES = ("old", "new")


def measure(_wl, rec):
    """(median us, relative noise, timer) of one PASSED bench record."""
    p = rec["performance"]
    return p["median_us"], p.get("rel_noise", 0.0), p.get("timer", "?")


def trace_path(out, engine, rnd, task):
    return os.path.join(out, engine, f"r{rnd}", f"{task}.jsonl")


def load_runs(out, tasks, rounds):
    """runs[(task, target, uuid)][engine] = [measure or None per round], the row order (first seen),
    and the lines for missing files and records that did not pass."""
    runs, order, bad = {}, [], []
    for task in tasks:
        for engine in ENGINES:
            for rnd in range(1, rounds + 1):
                path = trace_path(out, engine, rnd, task)
                rows, targets, not_passed = bench_records.load([path], measure)
                bad += [f"{engine} r{rnd} {task}: {b}" for b in not_passed]
                if not rows and not not_passed:
                    # the old engine without a GPU exits 0 and writes an empty file
                    bad.append(f"{engine} r{rnd} {task}: {path}: no bench records (see the call's log)")
                for uuid, per in rows.items():
                    for target in targets:
                        if target not in per:
                            continue
                        key = (task, target, uuid)
                        if key not in runs:
                            runs[key] = {e: [None] * rounds for e in ENGINES}
                            order.append(key)
                        runs[key][engine][rnd - 1] = per[target]
    return runs, order, bad


def spread(values):
    """(max - min) / median of positive values; 0 for fewer than two."""
    if len(values) < 2:
        return 0.0
    return (max(values) - min(values)) / statistics.median(values)


def verdict(per):
    """One row's figures and verdict from per[engine] = [(median, noise, timer) or None per round]."""
    row = {"verdict": "incomplete", "ratio": None, "noise": {}, "old_spread": None, "timers": {}}
    for e in ENGINES:
        got = [m for m in per[e] if m is not None]
        row["noise"][e] = max((m[1] for m in got), default=None)
        row["timers"][e] = sorted({m[2] for m in got})
    if any(m is None for e in ENGINES for m in per[e]):
        return row
    old = [m[0] for m in per["old"]]
    new = [m[0] for m in per["new"]]
    row["ratio"] = statistics.median(new) / statistics.median(old)
    row["old_spread"] = spread(old)
    allowed = max(2 * max(row["noise"].values()), row["old_spread"])
    row["allowed"] = allowed
    row["verdict"] = "within noise" if abs(row["ratio"] - 1) <= allowed else "differs"
    if row["timers"]["old"] != row["timers"]["new"]:
        row["verdict"] += f" (timers differ: old {'/'.join(row['timers']['old'])}, new {'/'.join(row['timers']['new'])})"
    return row


def pct(x):
    return "-" if x is None else f"{100 * x:.2f}%"


def us(m):
    return "-" if m is None else f"{m[0]:.2f}"


def table(runs, order, rounds):
    """The markdown lines and the count of rows per verdict class."""
    head = ["task", "target", "workload"]
    head += [f"old r{r} µs" for r in range(1, rounds + 1)] + [f"new r{r} µs" for r in range(1, rounds + 1)]
    head += ["new/old", "noise old", "noise new", "old spread", "timer old/new", "verdict"]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(["---"] * 3 + ["---:"] * (len(head) - 5) + ["---"] * 2) + " |"]
    counts = {"within noise": 0, "differs": 0, "incomplete": 0}
    for key in order:
        task, target, uuid = key
        per = runs[key]
        row = verdict(per)
        counts[row["verdict"].split(" (")[0]] += 1
        cells = [task, target, uuid] + [us(m) for m in per["old"]] + [us(m) for m in per["new"]]
        cells += ["-" if row["ratio"] is None else f"{row['ratio']:.4f}", pct(row["noise"]["old"]), pct(row["noise"]["new"]),
                  pct(row["old_spread"]), "/".join(",".join(row["timers"][e]) or "-" for e in ENGINES), row["verdict"]]
        lines.append("| " + " | ".join(cells) + " |")
    return lines, counts


def report(out, tasks, rounds, markdown=None):
    runs, order, bad = load_runs(out, tasks, rounds)
    lines, counts = table(runs, order, rounds)
    lines.append("")
    lines += [f"NOT PASSED {b}" for b in bad]
    lines.append(f"rows={len(order)} within_noise={counts['within noise']} differs={counts['differs']} "
                 f"incomplete={counts['incomplete']} not_passed={len(bad)}")
    text = "\n".join(lines)
    print(text)
    if markdown:
        with open(markdown, "w") as f:
            f.write(text + "\n")
    if counts["incomplete"] or bad or not order:
        return 2
    return 1 if counts["differs"] else 0


# ---- self-test: hand-made traces of both engines' shapes ----

def _old_record(uuid, target, median, noise, timer="events_corrected", status="PASSED", role="bench"):
    """A record as 6b70af8's trace.cpp writes it (performance without the parent clock's note)."""
    rec = {"task": "t", "target": target, "impl_path": f"/x/impl/t/{target}.so",
           "workload": {"uuid": uuid, "role": role, "hidden": False, "axes": {"T": 1}},
           "status": status, "message": "" if status == "PASSED" else "out: 3 elements over tolerance"}
    if status == "PASSED":
        rec["performance"] = {"timer": timer, "median_us": median, "rel_noise": noise, "samples": 40,
                              "stop_reason": "time_cap", "launch_offset_us": 2.5, "audit_samples": 10,
                              "audit_empty": 0, "own_kernel_share": 1.0}
        rec["roofline"] = {"t_sol_us": 1.0, "bound": "memory", "pct_sol": 50.0, "ceilings_source": "calibrated"}
    return rec


def _new_record(uuid, target, median, noise, timer="events_corrected", status="PASSED", role="bench"):
    """A record as the engine after the refactor writes it (parent clock note, memory model)."""
    rec = _old_record(uuid, target, median, noise, timer, status, role)
    if status == "PASSED":
        rec["performance"]["timer_note"] = "parent_clock: 200 calls in 8 batches (one CUDA graph) over 2 input sets"
        rec["performance"]["kernel_set_reference_calls"] = 3
        rec["roofline"]["memory_model"] = "copy"
    return rec


def _write(out, engine, rnd, task, records):
    path = trace_path(out, engine, rnd, task)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def self_test():
    import contextlib
    import io
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    def run(out, tasks, rounds=2):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = report(out, tasks, rounds)
        return rc, buf.getvalue()

    def line_of(text, uuid, target):
        return next((ln for ln in text.splitlines() if f"| {target} | {uuid} |" in ln), "")

    with tempfile.TemporaryDirectory() as out:
        # Row a: new/old 1.003 against noise 0.5 %: within noise. Row b: 1.03 against noise 0.4 %
        # and an old spread of 0.2 %: differs. Row c: 1.02 with noise 0.2 % but the old rounds 3 %
        # apart: within noise (the spread bounds it). Row d: the old engine timed it with the
        # instrumented spans: the verdict names the timers. A check-role record is not a row.
        for rnd, (a_old, a_new, b_old, b_new, c_old, c_new) in enumerate(
                [(100.0, 100.2, 50.0, 51.5, 10.0, 10.2), (100.1, 100.5, 50.1, 51.6, 10.3, 10.3)], start=1):
            _write(out, "old", rnd, "t", [_old_record("a", "naive", a_old, 0.005), _old_record("b", "expert", b_old, 0.004),
                                          _old_record("c", "naive", c_old, 0.002), _old_record("d", "naive", 200.0, 0.003, "cupti"),
                                          _old_record("chk", "naive", 1.0, 0.0, role="check")])
            _write(out, "new", rnd, "t", [_new_record("a", "naive", a_new, 0.003), _new_record("b", "expert", b_new, 0.002),
                                          _new_record("c", "naive", c_new, 0.001), _new_record("d", "naive", 200.5, 0.003)])
        rc, text = run(out, ["t"])
        expect(rc == 1, f"a differing row: exit 1, got {rc}")
        expect(line_of(text, "a", "naive").endswith("| within noise |"), "row a within noise:\n" + text)
        expect("| 100.00 | 100.10 | 100.20 | 100.50 |" in line_of(text, "a", "naive"), "row a's round medians in order")
        expect(line_of(text, "b", "expert").endswith("| differs |"), "row b differs:\n" + text)
        expect(line_of(text, "c", "naive").endswith("| within noise |"), "row c within the old spread:\n" + text)
        expect("timers differ: old cupti, new events_corrected" in line_of(text, "d", "naive"), "row d names the timers")
        expect("| chk |" not in text, "check-role records are not rows")
        expect("rows=4 within_noise=3 differs=1 incomplete=0 not_passed=0" in text, "summary line:\n" + text)

    with tempfile.TemporaryDirectory() as out:
        # The new engine's second round is missing (killed by its timeout) and one old record failed.
        for rnd in (1, 2):
            _write(out, "old", rnd, "t", [_old_record("a", "naive", 100.0, 0.005),
                                          _old_record("b", "expert", 0, 0, status="INCORRECT_NUMERICAL")])
        _write(out, "new", 1, "t", [_new_record("a", "naive", 100.1, 0.005)])
        rc, text = run(out, ["t"])
        expect(rc == 2, f"incomplete rows: exit 2, got {rc}")
        expect(line_of(text, "a", "naive").endswith("| incomplete |"), "row a incomplete:\n" + text)
        expect("| 100.10 | - |" in line_of(text, "a", "naive"), "the missing round shows as -")
        expect("NOT PASSED new r2 t: " in text and "missing" in text, "the missing file is named")
        expect("NOT PASSED old r1 t: expert b: INCORRECT_NUMERICAL" in text, "the failed record is named")

    with tempfile.TemporaryDirectory() as out:
        rc, text = run(out, ["t"], rounds=1)
        expect(rc == 2 and "rows=0" in text, "no traces at all: exit 2")

    with tempfile.TemporaryDirectory() as out:
        # An engine that found no GPU wrote an empty file: named, not silently a row short.
        _write(out, "old", 1, "t", [])
        _write(out, "new", 1, "t", [_new_record("a", "naive", 100.0, 0.005)])
        rc, text = run(out, ["t"], rounds=1)
        expect(rc == 2 and "NOT PASSED old r1 t: " in text and "no bench records" in text,
               "an empty trace file is named:\n" + text)

    for f in failures:
        print("SELF-TEST FAIL:", f)
    print("self-test:", "FAIL" if failures else "PASS")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="the check's output folder (OUT/{old,new}/rROUND/TASK.jsonl)")
    ap.add_argument("--tasks", help="comma-separated task names")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--markdown", help="also write the table here")
    ap.add_argument("--self-test", action="store_true", help="run on hand-made traces of both shapes")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.out or not a.tasks:
        ap.error("--out and --tasks are required (or --self-test)")
    if a.rounds < 1:
        ap.error("--rounds must be >= 1")
    return report(a.out, a.tasks.split(","), a.rounds, a.markdown)


if __name__ == "__main__":
    sys.exit(main())
