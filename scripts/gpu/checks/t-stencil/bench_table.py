"""stencil_3d_7pt's bench table from `d2k bench --json` files: per bench workload and target, the
median, % of SOL (d2k's, and against the calibrated copy bandwidth with the task's bytes 8ZYX), the
expert's speed-up over each other target; then the issue's bars: expert >= 85% of SOL at T = 1; at
T = 8 the expert >= 3x expert:single (T single-step passes of the same 2.5D kernel: "eight
single-step passes"); the expert faster than naive and torch_eager wherever measured. Targets that
did not pass are listed with their status. Exit status: not-passed records plus missed bars.
Usage: python3 bench_table.py FILE.jsonl...
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import bench_records  # noqa: E402

COPY_BW = 4.26e12  # bytes/s, the calibrated copy bandwidth (docs/results/calibrate-2026-11-29.md)
PREFIX = "stencil_3d_7pt-bench-"


def measure(wl, rec):
    """(median us, % of SOL, % of the copy bandwidth for the task's bytes 8ZYX, T) of one record."""
    ax = wl["axes"]
    t_us = rec["performance"]["median_us"]
    copy = bench_records.copy_pct(8 * ax["Z"] * ax["Y"] * ax["X"], t_us, COPY_BW)
    return t_us, rec["roofline"]["pct_sol"], copy, ax["T"]


def main(paths):
    rows, order, bad = bench_records.load(paths, measure)
    bench_records.print_header(order)
    misses = []
    for uuid, per in rows.items():
        cells = [f"{per[t][0]:.1f} us {per[t][1]:.1f}% ({per[t][2]:.1f}% copy)" if t in per else "-" for t in order]
        bench_records.print_row(uuid.replace(PREFIX, ""), cells)
        if "expert" not in per:
            misses.append(f"{uuid}: no expert time")
            continue
        e, pct, _, T = per["expert"]
        ups = ", ".join(f"{per[t][0] / e:.2f}x vs {t}" for t in order if t in per and t != "expert")
        print(f"  expert {uuid}: {ups}")
        if T == 1 and pct < 85:
            misses.append(f"{uuid}: expert at {pct:.1f}% of SOL (< 85)")
        if T == 8:
            if "expert:single" not in per:
                misses.append(f"{uuid}: no expert:single time for the T = 8 bar")
            elif per["expert:single"][0] < 3 * e:
                misses.append(f"{uuid}: expert only {per['expert:single'][0] / e:.2f}x eight single-step passes (< 3x)")
        for t in ("naive", "torch_eager", "torch_compile"):
            if t in per and per[t][0] <= e:
                misses.append(f"{uuid}: expert not faster than {t} ({per[t][0] / e:.2f}x)")
    as_default(rows, order)
    bench_records.print_not_passed(bad)
    for m in misses:
        print("BAR MISSED", m)
    return len(bad) + len(misses)


def single_of(target):
    """The T single-step passes of the same build: the default and its depth/chunk variants step
    with expert:single (strips since the strip build became the default), the L2-prefetching
    strip builds with expert:strip_single; the block-kernel builds (expert:block*) have no
    single-step variant of their own (None: no T = 8 note)."""
    if target.startswith("expert:block"):
        return None
    return "expert:strip_single" if target.startswith("expert:strip") else "expert:single"


def as_default(rows, order):
    """What each expert build would show against the bars if it were the default (informational:
    the lead's sweep keeps the fastest correct form; no FAIL line)."""
    for t in order:
        if t != "expert" and not t.startswith("expert:") or t in ("expert:single", "expert:strip_single"):
            continue
        notes = []
        for uuid, per in rows.items():
            if t not in per:
                continue
            e, pct, _, T = per[t]
            if T == 1:
                notes.append(f"T = 1 {pct:.1f}% of SOL ({'meets' if pct >= 85 else 'misses'} 85%)")
            elif T == 8:
                single = single_of(t)
                if single in per:
                    r = per[single][0] / e
                    notes.append(f"T = 8 {r:.2f}x {single} ({'meets' if r >= 3 else 'misses'} 3x)")
        if notes:
            print(f"  as default: {t}: " + "; ".join(notes))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
