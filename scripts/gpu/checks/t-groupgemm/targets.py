"""moe_grouped_gemm's targets (issue 16) from `d2k bench --json` traces: per bench row the median
of every target and the expert's %SOL; the expert must be at least as fast as library (cuBLAS
grouped batched GEMM) and torch_eager (torch._grouped_mm) on every bench row, and reach 70% of SOL
(the calibrated bf16 tensor rate: that row is compute-bound) on the Mixtral row. Prints one PASS
or FAIL line per target judged; a target whose rows are missing is reported, not judged.
Usage: python3 targets.py BENCH_JSONL
"""
import json
import sys

SOL_TARGET = 70.0
SOL_ROW = "mixtral"


def main():
    rows = {}
    for line in open(sys.argv[1]):
        if not line.strip():
            continue
        t = json.loads(line)
        w = t.get("workload") or {}
        if w.get("role") != "bench" or t.get("status") != "PASSED":
            continue
        rows.setdefault(w["uuid"], {})[t["target"]] = (t["performance"]["median_us"],
                                                      (t.get("roofline") or {}).get("pct_sol", 0.0))
    print(f"{'workload':48} {'target':14} {'median us':>11} {'%SOL':>7}")
    for key in sorted(rows):
        for target, (m, s) in sorted(rows[key].items()):
            print(f"{key[:48]:48} {target:14} {m:11.1f} {s:7.1f}")
    for rival in ("library", "torch_eager"):
        judged = [k for k in rows if "expert" in rows[k] and rival in rows[k]]
        if not judged:
            print(f"expert vs {rival}: no bench row with both (not judged)")
            continue
        slow = [f"{k} {rows[k]['expert'][0]:.1f} us vs {rows[k][rival][0]:.1f} us" for k in judged
                if rows[k]["expert"][0] > rows[k][rival][0]]
        if slow:
            print(f"FAIL expert slower than {rival} on {len(slow)} of {len(judged)} bench rows: " + "; ".join(slow))
        else:
            print(f"PASS expert >= {rival} on all {len(judged)} bench rows")
    sol = [k for k in rows if SOL_ROW in k and "expert" in rows[k]]
    for k in sol:
        pct = rows[k]["expert"][1]
        print(f"{'PASS' if pct >= SOL_TARGET else 'FAIL'} expert at {pct:.1f}% of SOL on {k} (target {SOL_TARGET:g}%)")
    if not sol:
        print(f"expert %SOL: no {SOL_ROW} bench row (not judged)")


if __name__ == "__main__":
    main()
