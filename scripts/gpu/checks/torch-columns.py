"""The table of torch-columns.sh: per task and bench workload, the expert's, torch_eager's and
torch_compile's medians from one `d2k bench` (OUT/torch_TASK.jsonl), the expert's %SOL and its
speed-up over each PyTorch column (the other's median over the expert's), and one verdict line
per task: PASS when every record PASSED and the expert is at least as fast as both PyTorch
columns on every bench row; FAIL naming each row that is short (TASK-STANDARD: the expert beats
PyTorch eager and torch.compile on every bench workload), each record that did not pass, and a
task whose traces are missing (not run). Ratios come only from one file: one call, one card.

Usage: torch-columns.py --tasks T1,T2,... OUT     (the markdown goes to stdout)
       torch-columns.py --self-test                (the verdicts on hand-made traces)
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import bench_records  # noqa: E402

PYTORCH = ("torch_eager", "torch_compile")


def measure(_wl, rec):
    perf, roof = rec["performance"], rec.get("roofline") or {}
    return perf["median_us"], perf.get("rel_noise"), roof.get("pct_sol")


def task_lines(task, path):
    """The markdown rows and the verdict line of one task's trace file."""
    if not os.path.exists(path):
        return [], f"FAIL {task}: no traces ({os.path.basename(path)} missing: not run or not started)"
    rows, _order, bad = bench_records.load([path], measure)
    lines, short = [], []
    for uuid, cells in rows.items():
        e = cells.get("expert")
        out = [task, uuid]
        out.append(f"{e[0]:.2f} ({100 * e[1]:.2f}%)" if e and e[1] is not None else (f"{e[0]:.2f}" if e else "—"))
        out.append(f"{e[2]:.1f}" if e and e[2] is not None else "—")
        for col in PYTORCH:
            c = cells.get(col)
            out.append(f"{c[0]:.2f}" if c else "—")
        for col in PYTORCH:
            c = cells.get(col)
            if e and c:
                ratio = c[0] / e[0]
                out.append(f"{ratio:.2f}x")
                if ratio < 1.0:
                    short.append(f"{uuid}: expert {ratio:.2f}x {col}")
            else:
                out.append("—")
                short.append(f"{uuid}: no {'expert' if not e else col} time")
        lines.append("| " + " | ".join(out) + " |")
    if not rows:
        short.append("no timed bench row")
    problems = short + bad
    verdict = (f"PASS {task}: the expert at least as fast as torch_eager and torch_compile on {len(rows)} bench row(s)"
               if not problems else f"FAIL {task}: " + "; ".join(problems))
    return lines, verdict


def table(tasks, out):
    print("| task | workload | expert us (noise) | expert %SOL | torch_eager us | torch_compile us | "
          "expert vs torch_eager | expert vs torch_compile |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    verdicts = []
    for task in tasks:
        lines, verdict = task_lines(task, os.path.join(out, f"torch_{task}.jsonl"))
        for line in lines:
            print(line)
        verdicts.append(verdict)
    print()
    for v in verdicts:
        print(v)


def self_test():
    """The verdicts on hand-made traces: a task that meets the rule, one whose expert is slower than
    torch_compile on a row, one with a failed record, one not run."""
    def rec(target, uuid, us, status="PASSED"):
        r = {"workload": {"uuid": uuid, "role": "bench", "axes": {}}, "target": target, "status": status}
        if status == "PASSED":
            r["performance"] = {"median_us": us, "rel_noise": 0.01}
            r["roofline"] = {"pct_sol": 50.0}
        return json.dumps(r)
    with tempfile.TemporaryDirectory() as d:
        files = {
            "good": [rec("expert", "g-1", 10), rec("torch_eager", "g-1", 30), rec("torch_compile", "g-1", 12)],
            "slow": [rec("expert", "s-1", 10), rec("torch_eager", "s-1", 30), rec("torch_compile", "s-1", 9.5),
                     rec("expert", "s-2", 10), rec("torch_eager", "s-2", 30), rec("torch_compile", "s-2", 20)],
            "broken": [rec("expert", "b-1", 10), rec("torch_eager", "b-1", 0, "RUNTIME_ERROR"),
                       rec("torch_compile", "b-1", 20)],
        }
        for name, lines in files.items():
            with open(os.path.join(d, f"torch_{name}.jsonl"), "w") as f:
                f.write("\n".join(lines) + "\n")
        got = {t: task_lines(t, os.path.join(d, f"torch_{t}.jsonl"))[1] for t in ("good", "slow", "broken", "absent")}
    ok = True
    expect = {
        "good": ("PASS good", None),
        "slow": ("FAIL slow", "s-1: expert 0.95x torch_compile"),
        "broken": ("FAIL broken", "RUNTIME_ERROR"),
        "absent": ("FAIL absent", "missing"),
    }
    for t, (start, part) in expect.items():
        if not got[t].startswith(start) or (part and part not in got[t]):
            print(f"ERROR self-test {t}: {got[t]!r}")
            ok = False
    if "s-2" in got["slow"]:
        print(f"ERROR self-test slow: a row that meets the rule is listed: {got['slow']!r}")
        ok = False
    print("self-test:", "ok" if ok else "FAILED")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", help="comma-separated task names")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("out", nargs="?", help="the folder of torch_TASK.jsonl files")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.tasks or not a.out:
        ap.error("--tasks and OUT are required (or --self-test)")
    table([t for t in a.tasks.split(",") if t], a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
