"""What the bench tables of the check scripts (t-*/bench_table.py, t-*/variant_table.py) share:
the PASSED bench records of `d2k bench --json` files grouped by workload and target, the lines for
what did not pass, and the markdown table over them. A task's script keeps only what it measures
per record (its cost model's bytes, its bars).

A record is one line of the trace (src/report/trace.h, trace.cpp): "workload" (uuid, role, axes),
"target", "status", and for a timed run "performance" (median_us, ...) and "roofline" (pct_sol).

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
            for line in f:
                rec = json.loads(line)
                wl, target = rec["workload"], rec["target"]
                if rec["status"] != "PASSED":
                    bad.append(f"{target} {wl['uuid']}: {rec['status']} {rec.get('message', '')[:160]}")
                    continue
                if wl["role"] != "bench" or not rec.get("performance"):
                    continue
                if target not in order:
                    order.append(target)
                rows.setdefault(wl["uuid"], {})[target] = measure(wl, rec)
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
