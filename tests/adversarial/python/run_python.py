#!/usr/bin/env python3
"""Runs the Python (triton track) exploit corpus through `d2k bench --track triton` and says what
was caught, with the verdict rules of ../run_runtime.py (caught, caught (alt), MISSED, pass,
neutralised, FALSE POSITIVE, wrong verdict).

Every folder here with an expect_run.json is a solution.py that cheats in one way (honest_* are
controls); the task's Triton expert (dataset/fused_add_rmsnorm/expert_triton/solution.py) is
staged beside it as rmsnorm_triton.py, the honest kernel the cases wrap. Prints a Markdown table and exits non-zero when a
case was missed, got the wrong verdict, or a control was flagged. Needs a GPU, torch and Triton.
Python 3 standard library only.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from run_runtime import DEFAULT_WORKLOADS, judge, read_traces, summarize, verdict  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--d2k", default=shutil.which("d2k"))
    p.add_argument("--dataset", default=os.path.join(HERE, "..", "..", "..", "dataset"))
    p.add_argument("--only", help="comma-separated case names")
    p.add_argument("--max-time", default="0.3")
    p.add_argument("--case-timeout", type=float, default=120.0)
    p.add_argument("--out", help="also write the table here")
    p.add_argument("--keep", help="keep staged folders, traces and logs here")
    a = p.parse_args()
    names = sorted(d for d in os.listdir(HERE) if os.path.isfile(os.path.join(HERE, d, "expect_run.json")))
    if a.only:
        names = [n for n in names if n in a.only.split(",")]
    work = a.keep or tempfile.mkdtemp(prefix="d2k_pycorpus_")
    os.makedirs(work, exist_ok=True)
    rows, bad = [], 0
    for name in names:
        with open(os.path.join(HERE, name, "expect_run.json")) as f:
            exp = json.load(f)
        staged = os.path.join(work, name)
        shutil.rmtree(staged, ignore_errors=True)
        shutil.copytree(os.path.join(HERE, name), staged)
        shutil.copy(os.path.join(a.dataset, "fused_add_rmsnorm", "expert_triton", "solution.py"),
                    os.path.join(staged, "rmsnorm_triton.py"))
        os.remove(os.path.join(staged, "expect_run.json"))
        jsonl = os.path.join(work, name + ".jsonl")
        cmd = [a.d2k, "--dataset", a.dataset, "bench", "--task", exp["task"], "--track", "triton",
               "--targets", exp.get("targets", "solution"), "--solution-dir", staged, "--json", jsonl,
               "--max-time", a.max_time, "--bench-rounds", "1",
               "--workloads", ",".join(exp.get("workloads", DEFAULT_WORKLOADS)), "--quiet"]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=a.case_timeout)
            log = r.stdout + r.stderr
        except subprocess.TimeoutExpired as e:
            log = "case timed out: %s" % e
        with open(os.path.join(work, name + ".log"), "w") as f:
            f.write(" ".join(cmd) + "\n" + log)
        traces = read_traces(jsonl)
        mine = [t for t in traces if t["target"] == "solution"]
        result, ok = judge(name, exp, mine, None)
        bad += 0 if ok else 1
        expected = verdict(exp["status"], exp.get("rule", ""))
        rows.append("| %s | %s | %s | %s | %s |" % (name, exp.get("exploit", ""), expected,
                                                   summarize(mine, exp["task"]), result))
    table = "\n".join(["| case | exploit | expected | seen | result |", "| --- | --- | --- | --- | --- |"] + rows)
    text = "Command: tests/adversarial/python/run_python.py --d2k D2K (d2k bench --track triton per case)\n\n" + table
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
