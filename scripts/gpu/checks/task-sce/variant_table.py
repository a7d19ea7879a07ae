"""The expert-variant sweep of softmax_cross_entropy as one table, from `d2k bench --json` files.

Each bench workload's row: time and % of SOL per target, against both memory ceilings, because an
uncalibrated d2k scores against the datasheet (4.8 TB/s on the H200) while a copy measures about
4.26 TB/s (docs/results/calibrate-2026-11-29.md). Bytes are the task's cost model, 4TV + 12T.
Targets that did not pass are listed with their status; the exit status counts them.
Usage: python3 variant_table.py FILE.jsonl...
"""
import json
import os
import sys

COPY_BW = 4.26e12  # bytes/s, the calibrated copy bandwidth


def main(paths):
    rows, bad = {}, []
    order = []
    for path in paths:
        if not os.path.exists(path):
            bad.append(f"{path}: missing (the bench did not finish)")
            continue
        with open(path) as f:
            for line in f:
                rec = json.loads(line)
                wl = rec["workload"]
                target = rec["target"]
                if rec["status"] != "PASSED":
                    bad.append(f"{target} {wl['uuid']}: {rec['status']} {rec.get('message', '')[:160]}")
                    continue
                if wl["role"] != "bench" or not rec.get("performance"):
                    continue
                if target not in order:
                    order.append(target)
                t_us = rec["performance"]["median_us"]
                T, V = wl["axes"]["T"], wl["axes"]["V"]
                nbytes = 4 * T * V + 12 * T
                pct_sheet = rec["roofline"]["pct_sol"]
                pct_copy = 100 * nbytes / COPY_BW / (t_us * 1e-6)
                rows.setdefault(wl["uuid"], {})[target] = (t_us, pct_sheet, pct_copy)
    print("| workload | " + " | ".join(order) + " |")
    print("| --- |" + " --- |" * len(order))
    for uuid, per in rows.items():
        cells = []
        for t in order:
            if t in per:
                t_us, sheet, copy = per[t]
                cells.append(f"{t_us:.1f} us {sheet:.1f}% ({copy:.1f}% of copy)")
            else:
                cells.append("-")
        print(f"| {uuid.replace('softmax_cross_entropy-bench-', '')} | " + " | ".join(cells) + " |")
    for b in bad:
        print("NOT PASSED", b)
    return len(bad)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
