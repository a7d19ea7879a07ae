"""layernorm_backward's bench table from `d2k bench --json` files: per bench workload and target,
the median, % of SOL (d2k's, and against the calibrated copy bandwidth with the task's bytes
6TH + 8T + 12H), and the expert's speed-up over each other target; then the issue's bars
(expert >= 80% of SOL, >= 2x torch_eager and naive where measured). Targets that did not pass
are listed with their status. Exit status: not-passed records plus missed bars.
With --variants (a `d2k bench` of expert and expert:NAME targets in one run): the same cells with
each target's speed-up over the default expert of that run, then per target its lowest % of SOL
over the bench rows, whether it meets the 80% bar on every row, and its geometric-mean speed-up;
the fastest target by geometric-mean time is named on a FASTEST line. Exit status: not-passed
records.
Usage: python3 bench_table.py FILE.jsonl...
       python3 bench_table.py --variants VARIANTS.jsonl
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import bench_records  # noqa: E402

COPY_BW = 4.26e12  # bytes/s, the calibrated copy bandwidth (docs/results/calibrate-2026-11-29.md)
BAR_PCT = 80.0  # issue #15: the expert at >= 80% of SOL on every bench row


def measure(wl, rec):
    """(median us, d2k % of SOL, % of the copy bandwidth) of one bench record."""
    T, H = wl["axes"]["T"], wl["axes"]["H"]
    t_us = rec["performance"]["median_us"]
    return t_us, rec["roofline"]["pct_sol"], bench_records.copy_pct(6 * T * H + 8 * T + 12 * H, t_us, COPY_BW)


def load(paths):
    """rows[uuid][target] = measure(...), target order, failures."""
    return bench_records.load(paths, measure)


def short(uuid):
    return uuid.replace("layernorm_backward-bench-", "")


def cell(m):
    return f"{m[0]:.1f} us {m[1]:.1f}% ({m[2]:.1f}% copy)"


def bars(paths):
    rows, order, bad = load(paths)
    bench_records.print_header(order)
    misses = []
    for uuid, per in rows.items():
        bench_records.print_row(short(uuid), [cell(per[t]) if t in per else "-" for t in order])
        if "expert" in per:
            e = per["expert"][0]
            ups = ", ".join(f"{e and per[t][0] / e:.2f}x vs {t}" for t in order if t in per and t != "expert")
            print(f"  expert {uuid}: {ups}")
            if per["expert"][1] < BAR_PCT:
                misses.append(f"{uuid}: expert at {per['expert'][1]:.1f}% of SOL (< {BAR_PCT:.0f})")
            for t in ("naive", "torch_eager"):
                if t in per and per[t][0] < 2 * e:
                    misses.append(f"{uuid}: expert only {per[t][0] / e:.2f}x {t} (< 2x)")
    bench_records.print_not_passed(bad)
    for m in misses:
        print("BAR MISSED", m)
    return len(bad) + len(misses)


def variants(path):
    rows, order, bad = load([path])
    bench_records.print_header(order)
    for uuid, per in rows.items():
        e = per.get("expert", (None,))[0]
        cells = [cell(per[t]) + (f" {e / per[t][0]:.2f}x" if e else "") if t in per else "-" for t in order]
        bench_records.print_row(short(uuid), cells)
    best, best_gm = None, math.inf
    for t in order:
        got = [per[t] for per in rows.values() if t in per]
        if len(got) < len(rows):  # a target without every row is not ranked
            print(f"{t}: {len(got)} of {len(rows)} bench rows timed, not ranked")
            continue
        gm = math.exp(sum(math.log(m[0]) for m in got) / len(got))
        ups = [per["expert"][0] / per[t][0] for per in rows.values() if "expert" in per]
        up = math.exp(sum(math.log(u) for u in ups) / len(ups)) if ups else float("nan")
        low = min(m[1] for m in got)
        print(f"{t}: lowest {low:.1f}% of SOL (copy {min(m[2] for m in got):.1f}%), "
              f"80% bar on every row: {'yes' if low >= BAR_PCT else 'no'}, geomean {up:.3f}x the expert")
        if gm < best_gm:
            best, best_gm = t, gm
    if best:
        print(f"FASTEST {best} (geometric mean of the medians over {len(rows)} bench rows)")
    bench_records.print_not_passed(bad)
    return len(bad)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--variants"]:
        sys.exit(variants(sys.argv[2]))
    sys.exit(bars(sys.argv[1:]))
