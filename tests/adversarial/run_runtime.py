#!/usr/bin/env python3
"""Runs the run-time half of the exploit corpus through `d2k bench` and says what was caught.

Every case folder with an expect_run.json (tests/adversarial/<case>/) is a solution that cheats
in one way (honest_* folders are controls). For each case this script
  1. stages the folder (solution.cu plus the shared headers of common/) in a temporary folder,
  2. runs the offline stage (`d2k validate submission`): a cheat the offline stage rejects
     tests nothing at run time, so that is a failure of the case, not a catch,
  3. runs `d2k bench` on one or two small workloads with JSON traces, and
  4. compares the traces of target `solution` with the expectation:
       caught        a trace has the expected status (and rule, and workload when given)
       caught (alt)  a trace has one of the case's also_accept verdicts (a weaker check caught it)
       wrong verdict it failed, but not in the expected way
       MISSED        every trace PASSED
       pass          an honest control passed everywhere
       neutralised   a cheat the harness makes harmless passed (its expect_run.json says why)
       FALSE POSITIVE  an honest control failed something
It prints a Markdown table (case, exploit, expected, seen, result) and exits non-zero when a case
was missed, got the wrong verdict, failed offline, or an honest control was flagged.

expect_run.json fields:
  task          the task (fused_add_rmsnorm)
  status        the expected status (PASSED for controls and neutralised cheats)
  rule          REWARD_HACK's rule (omitted otherwise)
  exploit       a few words for the table (default: the first sentence of the solution's comment)
  why           one line: the exploit and why this verdict
  also_accept   optional list of "STATUS" or "STATUS(rule)" that also count as caught
  workloads     optional list of workload uuids (default: DEFAULT_WORKLOADS)
  caught_on     optional uuid: the expected verdict must appear on this workload
  caught_on_every  optional true: the expected verdict must appear on every workload run
  targets       optional --targets value (default "solution"); with "others_pass": true every
                trace of the other targets must pass (the evaluator survived the case)
  neutralised   optional true: a cheat expected to PASS because the harness defeats it
  case_timeout  optional seconds: this case's limit on one d2k run (default --case-timeout)

Python 3 standard library only.
"""

import argparse
import concurrent.futures
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

DEFAULT_WORKLOADS = ["fused_add_rmsnorm-check-7x264", "fused_add_rmsnorm-bench-128x7168"]


def parse_args():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description="Run the run-time exploit corpus through d2k bench.")
    p.add_argument("--d2k", default=shutil.which("d2k"), help="the d2k binary (default: d2k on PATH)")
    p.add_argument("--dataset", default=os.path.join(here, "..", "..", "dataset"), help="dataset folder")
    p.add_argument("--cases", default=here, help="folder holding the case folders and common/")
    p.add_argument("--out", help="also write the Markdown table (and the commands) to this file")
    p.add_argument("--only", help="comma-separated case names to run (default: all)")
    p.add_argument("--validate-only", action="store_true",
                   help="stop after the offline stage (compile + symbol check): works without a GPU")
    p.add_argument("--max-time", default="0.3", help="d2k bench --max-time (seconds per target and workload)")
    p.add_argument("--call-timeout", default="5", help="d2k bench --call-timeout, when d2k has it")
    p.add_argument("--case-timeout", type=float, default=600.0,
                   help="wall-clock limit of one d2k run; past it the case counts as not finished")
    p.add_argument("--jobs", type=int, default=1,
                   help="compile (validate) this many cases at once before the runs, which stay one at a time")
    p.add_argument("--keep", help="keep staged folders, traces and logs under this folder")
    return p.parse_args()


def load_cases(cases_dir, only):
    names = sorted(d for d in os.listdir(cases_dir)
                   if os.path.isfile(os.path.join(cases_dir, d, "expect_run.json")))
    if only:
        wanted = [n.strip() for n in only.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in names]
        if unknown:
            sys.exit(f"--only: no case folder with expect_run.json named {', '.join(unknown)} in {cases_dir}")
        names = [n for n in names if n in wanted]
    # The first control runs first, the second last: a faulting or hanging case in between must
    # not disturb what follows.
    order = [n for n in names if n == "honest_control"]
    order += [n for n in names if not n.startswith("honest_")]
    order += [n for n in names if n.startswith("honest_") and n != "honest_control"]
    cases = []
    for n in order:
        path = os.path.join(cases_dir, n, "expect_run.json")
        try:
            with open(path) as f:
                exp = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"{path}: cannot read: {e}")
        for field in ("task", "status", "why"):
            if field not in exp:
                sys.exit(f"{path}: missing field '{field}'")
        cases.append((n, exp))
    return cases


def exploit_line(case_dir):
    """The first sentence of the solution's '// Exploit:' comment."""
    try:
        with open(os.path.join(case_dir, "solution.cu")) as f:
            lines = f.read().splitlines()
    except OSError:
        return ""
    text = []
    for line in lines:
        s = line.strip()
        if not s.startswith("//"):
            if text:
                break
            continue
        s = s[2:].strip()
        if not text and not s.startswith("Exploit"):
            continue
        if text and s.startswith("Expected"):
            break
        text.append(s)
    joined = " ".join(text)
    if joined.startswith("Exploit") and ":" in joined:
        joined = joined.split(":", 1)[1].strip()
    end = joined.find(". ")
    first = joined[: end + 1] if end >= 0 else joined
    if len(first) <= 110:
        return first
    # A table cell, not a paragraph: cut at a clause boundary (or a word) before 110 characters.
    cut = max(first.rfind(sep, 40, 110) for sep in (": ", "; ", ", ", " ("))
    if cut < 0:
        cut = first.rfind(" ", 0, 110)
    return first[:cut].rstrip(" ,;:") + " ..."


def stage(cases_dir, name, root):
    dst = os.path.join(root, name)
    os.makedirs(dst)
    shutil.copy(os.path.join(cases_dir, name, "solution.cu"), dst)
    common = os.path.join(cases_dir, "common")
    if os.path.isdir(common):
        for f in os.listdir(common):
            if os.path.isfile(os.path.join(common, f)):
                shutil.copy(os.path.join(common, f), dst)
    return dst


def run(cmd, timeout, log_path):
    """Runs cmd in its own process group; returns (rc or None on timeout, combined output)."""
    with open(log_path, "w") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
    with open(log_path, errors="replace") as f:
        return rc, f.read()


def verdict(status, rule):
    return f"{status}({rule})" if rule else status


def read_traces(path):
    traces = []
    if not os.path.isfile(path):
        return traces
    with open(path, errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                t = json.loads(line)
            except ValueError:
                continue
            w = t.get("workload")
            uuid = w.get("uuid", "") if isinstance(w, dict) else t.get("workload_uuid", "")
            traces.append({"target": t.get("target", ""), "workload": uuid, "status": t.get("status", ""),
                           "rule": t.get("rule", ""), "message": t.get("message", ""),
                           "checks_fired": t.get("checks_fired", [])})
    return traces


def short_uuid(uuid, task):
    prefix = task + "-"
    return uuid[len(prefix):] if uuid.startswith(prefix) else uuid


def summarize(traces, task):
    """'STATUS(rule) on w1, w2; PASSED on w3' over the given traces, in first-seen order."""
    groups = {}
    for t in traces:
        groups.setdefault(verdict(t["status"], t["rule"]), []).append(short_uuid(t["workload"], task))
    return "; ".join(f"{v} on {', '.join(ws)}" for v, ws in groups.items()) or "no traces"


def judge(name, exp, traces, others):
    """Returns (result, ok)."""
    honest = name.startswith("honest_")
    expected = exp["status"]
    if not traces:
        return "no traces of target solution", False
    failing = [t for t in traces if t["status"] != "PASSED"]
    if others is not None and exp.get("others_pass"):
        bad = [t for t in others if t["status"] not in ("PASSED",)]
        if bad:
            return f"evaluator harmed: {bad[0]['target']} {verdict(bad[0]['status'], bad[0]['rule'])}", False
    if expected == "PASSED":
        if not failing:
            return ("pass" if honest else "neutralised"), True
        if honest:
            return "FALSE POSITIVE", False
        return "caught (not expected: " + verdict(failing[0]["status"], failing[0]["rule"]) + ")", True

    def matches(t, status, rule):
        return t["status"] == status and (not rule or t["rule"] == rule)

    hits = [t for t in traces if matches(t, expected, exp.get("rule", ""))]
    if exp.get("caught_on"):
        hits = [t for t in hits if t["workload"] == exp["caught_on"]]
    if exp.get("caught_on_every"):
        missed = sorted({t["workload"] for t in traces} - {t["workload"] for t in hits})
        if missed:
            return "MISSED on " + ", ".join(missed), False
    if hits:
        return "caught", True
    for alt in exp.get("also_accept", []):
        status, _, rule = alt.partition("(")
        rule = rule.rstrip(")")
        if any(matches(t, status, rule) for t in traces):
            return "caught (alt)", True
    if failing:
        return "wrong verdict", False
    return "MISSED", False


def bench_has_call_timeout(d2k):
    try:
        out = subprocess.run([d2k, "bench", "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--call-timeout" in out.stdout + out.stderr


def main():
    a = parse_args()
    if not a.d2k or not os.access(a.d2k, os.X_OK):
        sys.exit("no d2k binary: pass --d2k or put d2k on PATH")
    cases_dir = os.path.abspath(a.cases)
    dataset = os.path.abspath(a.dataset)
    cases = load_cases(cases_dir, a.only)
    if not cases:
        sys.exit(f"no case folder with expect_run.json in {cases_dir}")
    call_timeout = [] if a.validate_only or not bench_has_call_timeout(a.d2k) else ["--call-timeout", a.call_timeout]

    root = a.keep or tempfile.mkdtemp(prefix="d2k-adversarial-")
    os.makedirs(root, exist_ok=True)
    rows, commands, failures, skipped = [], [], 0, 0
    # Stage every case, then compile (validate) them, several at once when asked: compiling is
    # the slow part and does not touch the GPU; the runs that time stay one at a time.
    staged_dirs, validated = {}, {}
    for name, exp in cases:
        case_root = os.path.join(root, name)
        if os.path.exists(case_root):
            shutil.rmtree(case_root)
        os.makedirs(case_root)
        staged_dirs[name] = stage(cases_dir, name, case_root)

    def validate(item):
        name, exp = item
        vcmd = [a.d2k, "--dataset", dataset, "validate", "submission", staged_dirs[name], "--task", exp["task"]]
        return name, run(vcmd, a.case_timeout, os.path.join(root, name, "validate.log"))

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        for name, result in pool.map(validate, cases):
            validated[name] = result
    for name, exp in cases:
        task = exp["task"]
        case_root = os.path.join(root, name)
        staged = staged_dirs[name]
        expected = verdict(exp["status"], exp.get("rule", ""))
        if exp.get("also_accept"):
            expected += " (or " + ", ".join(exp["also_accept"]) + ")"
        if exp.get("caught_on"):
            expected += " on " + short_uuid(exp["caught_on"], task)
        row = {"case": name, "exploit": exp.get("exploit") or exploit_line(os.path.join(cases_dir, name)),
               "expected": expected}
        print(f"== {name}", file=sys.stderr, flush=True)

        rc, out = validated[name]
        if rc != 0:
            first = next((l for l in out.splitlines()[1:] if l.strip()), "no output")
            row.update(seen="offline: " + first[:160], result="rejected offline")
            failures += 1
            rows.append(row)
            continue
        if a.validate_only:
            row.update(seen="offline: OK", result="validated")
            rows.append(row)
            continue

        jsonl = os.path.join(case_root, "traces.jsonl")
        workloads = exp.get("workloads", DEFAULT_WORKLOADS)
        bcmd = [a.d2k, "--dataset", dataset, "bench", "--task", task, "--targets", exp.get("targets", "solution"),
                "--solution-dir", staged, "--json", jsonl, "--max-time", a.max_time, "--bench-rounds", "1",
                "--workloads", ",".join(workloads), "--quiet"] + call_timeout
        commands.append(" ".join(bcmd))
        limit = float(exp.get("case_timeout", a.case_timeout))
        rc, out = run(bcmd, limit, os.path.join(case_root, "bench.log"))
        traces = read_traces(jsonl)
        mine = [t for t in traces if t["target"] == "solution"]
        others = [t for t in traces if t["target"] != "solution"]
        if not mine and "no CUDA GPU" in out:
            row.update(seen="no GPU on this machine", result="skipped")
            skipped += 1
            rows.append(row)
            continue
        seen = summarize(mine, task)
        if rc is None:
            seen = f"d2k did not finish in {limit:g} s (killed); " + seen
        elif not traces:
            seen = f"d2k exited {rc} without traces: " + (out.strip().splitlines() or ["no output"])[-1][:160]
        result, ok = judge(name, exp, mine, others if exp.get("others_pass") else None)
        if rc is None:
            result, ok = "d2k hung", False
        failures += not ok
        row.update(seen=seen, result=result)
        rows.append(row)

    lines = ["| case | exploit | expected | seen | result |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
        cells = [r["case"], r["exploit"], r["expected"], r["seen"], r["result"]]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    table = "\n".join(lines) + "\n"
    print(table)
    if a.out:
        with open(a.out, "w") as f:
            f.write(f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, d2k {a.d2k}\n\n")
            f.write(table)
            if commands:
                f.write("\nCommands (STAGED = each case staged with common/):\n\n")
                for c in commands:
                    f.write(f"    {c}\n")
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{len(rows)} case(s): {failures} failed, {skipped} skipped", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
