"""Speed-up table of moe_topk_router's bench rows from `d2k bench --graph --json` traces: per row
the median of every target (eager and CUDA-graph replay), the expert's speed-up over torch_eager
(eager time; T = 512 uses the expert's graph time, since that row is launch-bound: issue 18) and
over naive. Prints PASS when the expert is >= 10x torch_eager on every bench row, FAIL lines
otherwise, nothing to judge when torch_eager is absent.
Usage: python3 speedup.py BENCH_JSONL
"""
import json
import sys

TARGET = 10.0


def main():
    rows = {}
    for line in open(sys.argv[1]):
        if not line.strip():
            continue
        t = json.loads(line)
        role = t.get("role") or (t.get("workload") or {}).get("role")
        if role != "bench" or t.get("status") != "PASSED":
            continue
        p = t["performance"]
        key = t.get("workload_uuid") or (t.get("workload") or {}).get("uuid")
        rows.setdefault(key, {})[t["target"]] = (p["median_us"], p.get("graph_median_us"), t.get("axes", {}))
    print(f"{'workload':48} {'target':18} {'eager us':>10} {'graph us':>10}")
    judged, bad = 0, 0
    for key in sorted(rows):
        for target, (m, g, _) in sorted(rows[key].items()):
            print(f"{key[:48]:48} {target:18} {m:10.2f} {(g or 0):10.2f}")
        if "expert" not in rows[key] or "torch_eager" not in rows[key]:
            continue
        em, eg, axes = rows[key]["expert"]
        expert_us = eg if axes.get("T") == 512 and eg else em
        speed = rows[key]["torch_eager"][0] / expert_us
        naive = rows[key]["naive"][0] / em if "naive" in rows[key] else float("nan")
        judged += 1
        ok = speed >= TARGET
        bad += 0 if ok else 1
        print(f"{'ok  ' if ok else 'LOW '} {key}: expert {expert_us:.2f} us "
              f"({'graph' if expert_us == eg else 'eager'}), {speed:.1f}x torch_eager, {naive:.1f}x naive")
    if judged == 0:
        print("speed-up: no row with both expert and torch_eager (nothing judged)")
    elif bad:
        print(f"FAIL {bad} of {judged} bench rows below {TARGET:g}x torch_eager")
    else:
        print(f"PASS expert >= {TARGET:g}x torch_eager on all {judged} bench rows")


if __name__ == "__main__":
    main()
