"""rope_qk_norm's targets and expert variants as one table, from `d2k bench --json` files.

Each bench workload's row: time and % of SOL per target, against both memory ceilings (an
uncalibrated d2k scores against the datasheet, 4.8 TB/s on the H200, while a copy measures about
4.26 TB/s: docs/results/calibrate-2026-11-29.md). Bytes are the task's cost model (definition.json,
recomputed here from the workload's axes). Graph-mode times, where the trace has them, get their own
column. Targets that did not pass are listed with their status; the exit status counts them.
Usage: python3 variant_table.py FILE.jsonl...
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import bench_records  # noqa: E402

COPY_BW = 4.26e12  # bytes/s, the calibrated copy bandwidth
D = 128


def cost_bytes(ax):
    T, Hq, Hkv, P = ax["T"], ax["Hq"], ax["Hkv"], ax["P"]
    return 4 * T * (Hq + 2 * Hkv) * D + 4 * D + 8 * T + 4 * D * min(T, P)


def measure(wl, rec):
    """(median us, d2k % of SOL, % of the copy bandwidth, graph-mode median us or None)."""
    perf = rec["performance"]
    t_us = perf["median_us"]
    pct_copy = bench_records.copy_pct(cost_bytes(wl["axes"]), t_us, COPY_BW)
    return t_us, rec["roofline"]["pct_sol"], pct_copy, perf.get("graph_median_us")


def main(paths):
    rows, order, bad = bench_records.load(paths, measure)
    bench_records.print_header(order)
    for uuid, per in rows.items():
        cells = []
        for t in order:
            if t not in per:
                cells.append("-")
                continue
            t_us, sheet, copy, graph = per[t]
            g = f", graph {graph:.1f} us" if graph else ""
            cells.append(f"{t_us:.1f} us {sheet:.1f}% ({copy:.1f}% of copy){g}")
        bench_records.print_row(uuid.replace("rope_qk_norm-bench-", ""), cells)
    bench_records.print_not_passed(bad)
    return len(bad)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
