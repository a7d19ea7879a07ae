"""What the bench tables of the check scripts (t-*/bench_table.py, t-*/variant_table.py) share:
the PASSED bench records of `d2k bench --json` files grouped by workload and target, the lines for
what did not pass, and the markdown table over them. A task's script keeps only what it measures
per record (its cost model's bytes, its bars).

A record is one line of the trace (src/report/trace.h, trace.cpp): "workload" (uuid, role, axes),
"target", "status", and for a timed run "performance" (median_us, ...) and "roofline" (pct_sol).
d2k writes --json as records finish (docs/report.md, "Trace files"): a run cut by a deadline or a
signal leaves its finished records, those still without speed-ups marked "partial": true, and at
worst a torn last line, which is skipped and said. A later line of the same (workload, target)
replaces an earlier one.

Needs only the standard library.
"""
import json
import os


def load(paths, measure):
    """rows[uuid][target] = measure(workload, record) for every PASSED bench record with timings in
    the files at `paths`, the targets in the order first seen, and one line for each missing file
    and each record that did not pass (a check workload's failure counts too)."""
    rows, order, bad = {}, [], []
    for path in paths:
        if not os.path.exists(path):
            bad.append(f"{path}: missing (the bench did not finish)")
            continue
        with open(path) as f:
            lines = f.read().split("\n")
        partial = 0
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                if any(rest.strip() for rest in lines[i + 1:]):
                    raise ValueError(f"{path}:{i + 1}: not a JSON record (damaged inside the file, not cut)")
                bad.append(f"{path}: last line torn (the run was cut while writing it), skipped")
                continue
            partial += bool(rec.get("partial"))
            wl, target = rec["workload"], rec["target"]
            if rec["status"] != "PASSED":
                bad.append(f"{target} {wl['uuid']}: {rec['status']} {rec.get('message', '')[:160]}")
                continue
            if wl["role"] != "bench" or not rec.get("performance"):
                continue
            if target not in order:
                order.append(target)
            rows.setdefault(wl["uuid"], {})[target] = measure(wl, rec)
        if partial:
            bad.append(f"{path}: {partial} record(s) partial (the run was cut before their speed-ups were known)")
    return rows, order, bad


def copy_pct(nbytes, t_us, copy_bw):
    """% of the copy bandwidth `copy_bw` (bytes/s) that moving `nbytes` in `t_us` microseconds reaches."""
    return 100 * nbytes / copy_bw / (t_us * 1e-6)


def print_header(order):
    print("| workload | " + " | ".join(order) + " |")
    print("| --- |" + " --- |" * len(order))


def print_row(label, cells):
    print(f"| {label} | " + " | ".join(cells) + " |")


def print_not_passed(bad):
    for b in bad:
        print("NOT PASSED", b)
