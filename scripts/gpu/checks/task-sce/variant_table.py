"""The expert-variant sweep of softmax_cross_entropy as one table, from `d2k bench --json` files.

Each bench workload's row: time and % of SOL per target, against both memory ceilings, because an
uncalibrated d2k scores against the datasheet (4.8 TB/s on the H200) while a copy measures about
4.26 TB/s (docs/results/calibrate-2026-11-29.md). Bytes are the task's cost model, 4TV + 12T.
Targets that did not pass are listed with their status; the exit status counts them.
Usage: python3 variant_table.py FILE.jsonl...
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import bench_records  # noqa: E402

COPY_BW = 4.26e12  # bytes/s, the calibrated copy bandwidth


def measure(wl, rec):
    """(median us, d2k % of SOL, % of the copy bandwidth) of one bench record."""
    t_us = rec["performance"]["median_us"]
    T, V = wl["axes"]["T"], wl["axes"]["V"]
    return t_us, rec["roofline"]["pct_sol"], bench_records.copy_pct(4 * T * V + 12 * T, t_us, COPY_BW)


def main(paths):
    rows, order, bad = bench_records.load(paths, measure)
    bench_records.print_header(order)
    for uuid, per in rows.items():
        cells = []
        for t in order:
            if t in per:
                t_us, sheet, copy = per[t]
                cells.append(f"{t_us:.1f} us {sheet:.1f}% ({copy:.1f}% of copy)")
            else:
                cells.append("-")
        bench_records.print_row(uuid.replace("softmax_cross_entropy-bench-", ""), cells)
    bench_records.print_not_passed(bad)
    return len(bad)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
