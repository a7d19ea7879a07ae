"""layernorm_backward's bench table from `d2k bench --json` files: per bench workload and target,
the median, % of SOL (d2k's, and against the calibrated copy bandwidth with the task's bytes
6TH + 8T + 12H), and the expert's speed-up over each other target; then the issue's bars
(expert >= 80% of SOL, >= 2x torch_eager and naive where measured). Targets that did not pass
are listed with their status. Exit status: not-passed records plus missed bars.
Usage: python3 bench_table.py FILE.jsonl...
"""
import json
import os
import sys

COPY_BW = 4.26e12  # bytes/s, the calibrated copy bandwidth (docs/results/calibrate-2026-11-29.md)


def main(paths):
    rows, order, bad = {}, [], []
    for path in paths:
        if not os.path.exists(path):
            bad.append(f"{path}: missing (the bench did not finish)")
            continue
        for line in open(path):
            rec = json.loads(line)
            wl, target = rec["workload"], rec["target"]
            if rec["status"] != "PASSED":
                bad.append(f"{target} {wl['uuid']}: {rec['status']} {rec.get('message', '')[:160]}")
                continue
            if wl["role"] != "bench" or not rec.get("performance"):
                continue
            if target not in order:
                order.append(target)
            T, H = wl["axes"]["T"], wl["axes"]["H"]
            t_us = rec["performance"]["median_us"]
            copy = 100 * (6 * T * H + 8 * T + 12 * H) / COPY_BW / (t_us * 1e-6)
            rows.setdefault(wl["uuid"], {})[target] = (t_us, rec["roofline"]["pct_sol"], copy)
    print("| workload | " + " | ".join(order) + " |")
    print("| --- |" + " --- |" * len(order))
    misses = []
    for uuid, per in rows.items():
        cells = [f"{per[t][0]:.1f} us {per[t][1]:.1f}% ({per[t][2]:.1f}% copy)" if t in per else "-" for t in order]
        print(f"| {uuid.replace('layernorm_backward-bench-', '')} | " + " | ".join(cells) + " |")
        if "expert" in per:
            e = per["expert"][0]
            ups = ", ".join(f"{e and per[t][0] / e:.2f}x vs {t}" for t in order if t in per and t != "expert")
            print(f"  expert {uuid}: {ups}")
            if per["expert"][1] < 80:
                misses.append(f"{uuid}: expert at {per['expert'][1]:.1f}% of SOL (< 80)")
            for t in ("naive", "torch_eager"):
                if t in per and per[t][0] < 2 * e:
                    misses.append(f"{uuid}: expert only {per[t][0] / e:.2f}x {t} (< 2x)")
    for b in bad:
        print("NOT PASSED", b)
    for m in misses:
        print("BAR MISSED", m)
    return len(bad) + len(misses)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
