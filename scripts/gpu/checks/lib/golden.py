"""What every golden cross-check (t-*/golden_check.py) shares: reading the dump of `d2k check
--dump DIR`, the task's comparison rules, the usual error measures and the verdict lines. A
task's script keeps only its float64 PyTorch reference and what it compares.

The dump's layout is written by dump_tensors (src/engine/evaluate.cpp) and write_npy
(src/report/npy.h): DIR/<task>/<workload uuid>/<label>.<tensor>.npy, label `input` for the
inputs, `expected` for the golden's outputs (`reference` when the golden itself is the checked
target, as on a machine without a GPU) and the target's name for its outputs (e.g. `expert`).
NumPy's own dtypes are kept; bfloat16 and the fp8 types are widened to float32, exactly.

Needs only NumPy: torch is the task script's import, so this module loads where torch is absent.
"""
import argparse
import json
import os
import sys

import numpy as np

GOLDEN = "expected"


def parser(dataset=False):
    """DUMP_DIR, and --dataset (default `dataset`) where the task's rules are read; a script adds
    its own options to it."""
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    if dataset:
        ap.add_argument("--dataset", default="dataset")
    return ap


def parse_args(dataset=False):
    return parser(dataset).parse_args()


class Workload:
    """One dumped workload: its uuid, its folder, its tensors by label and name."""

    def __init__(self, root, uuid, golden=GOLDEN):
        self.uuid, self.dir, self.golden = uuid, os.path.join(root, uuid), golden

    def path(self, label, name):
        return os.path.join(self.dir, f"{label}.{name}.npy")

    def load(self, label, name, dtype=None):
        """<label>.<name>.npy as an array (cast to `dtype` where given)."""
        a = np.load(self.path(label, name))
        return a if dtype is None else a.astype(dtype)

    def input(self, name, dtype=None):
        return self.load("input", name, dtype)

    def targets(self, output):
        """Labels of the dumped targets (not the golden) that wrote `output`, sorted."""
        tail = f".{output}.npy"
        return sorted({f[: -len(tail)] for f in os.listdir(self.dir) if f.endswith(tail)} - {self.golden, "input"})

    def labels(self, output):
        """The golden first, then every dumped target that wrote `output`."""
        return [self.golden] + self.targets(output)


def workloads(dump, task, output, golden=GOLDEN):
    """The dumped workloads of `task` whose golden wrote `output`, in uuid order."""
    root = os.path.join(dump, task)
    if not os.path.isdir(root):
        sys.exit(f"golden cross-check: no dump of {task} under {dump} (d2k check --dump writes {root})")
    for uuid in sorted(os.listdir(root)):
        w = Workload(root, uuid, golden)
        if os.path.exists(w.path(golden, output)):
            yield w


def definition(dataset, task):
    with open(os.path.join(dataset, task, "definition.json")) as f:
        return json.load(f)


def workload_lines(dataset, task):
    """Every workload of dataset/<task>/workloads.jsonl, as dicts."""
    with open(os.path.join(dataset, task, "workloads.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def compare_rules(dataset, task):
    """({uuid: {output: compare}}, {output: compare}): each output's compare block of
    definition.json with the workload's overrides (its "compare" field) applied, and the
    definition's own blocks for a workload not listed (a hidden one)."""
    base = {name: dict(o.get("compare", {})) for name, o in definition(dataset, task)["outputs"].items()}
    per = {}
    for w in workload_lines(dataset, task):
        over = w.get("compare", {})
        per[w["uuid"]] = {name: dict(rule, **over.get(name, {})) for name, rule in base.items()}
    return per, base


def scalar_values(dataset, task):
    """({uuid: {scalar: value}}, {scalar: value}): the definition's scalar values with each
    workload's overrides (its "scalars" field) applied, and the definition's own."""
    base = {name: sc["value"] for name, sc in definition(dataset, task).get("scalars", {}).items()}
    return {w["uuid"]: dict(base, **w.get("scalars", {})) for w in workload_lines(dataset, task)}, base


def rel_l2(got, want):
    """||got - want|| / ||want|| in float64 (0 where both are zero)."""
    got = np.asarray(got, dtype=np.float64).reshape(-1)
    want = np.asarray(want, dtype=np.float64).reshape(-1)
    den = np.linalg.norm(want)
    num = np.linalg.norm(got - want)
    return float(num / den) if den > 0 else (0.0 if num == 0 else float("inf"))


def over_tol(ours, got, rule):
    """|got - ours| and how many elements are outside the rule's atol and rtol * |ours| (both
    exceeded; a bound the rule lacks is 0)."""
    ours = np.asarray(ours, dtype=np.float64)
    err = np.abs(np.asarray(got, dtype=np.float64).reshape(ours.shape) - ours)
    return err, int(((err > rule.get("atol", 0.0)) & (err > rule.get("rtol", 0.0) * np.abs(ours))).sum())


def allclose(got, want, rule):
    """The allclose rule as docs/task-format.md states it: an element fails where |got - want|
    exceeds both atol and rtol * |want|; at most (1 - matched_ratio) of them may, and none may
    exceed max_error_cap where it is set. Returns (ok, detail)."""
    want = np.asarray(want, dtype=np.float64)
    err = np.abs(np.asarray(got, dtype=np.float64).reshape(want.shape) - want)
    bad = int(((err > rule.get("atol", 0.0)) & (err > rule.get("rtol", 0.0) * np.abs(want))).sum())
    allowed = int((1.0 - rule.get("matched_ratio", 1.0)) * err.size)
    cap = rule.get("max_error_cap", 0.0)
    worst = float(err.max()) if err.size else 0.0
    ok = bad <= allowed and not (cap > 0 and worst > cap)
    return ok, f"{bad} over tol (allowed {allowed}), max|err| {worst:.3g}"


def first_difference(got, want):
    """Index of the first element where two equal-sized arrays differ, or None."""
    got, want = np.asarray(got).reshape(-1), np.asarray(want).reshape(-1)
    n = min(got.size, want.size)
    diff = np.flatnonzero(got[:n] != want[:n])
    return int(diff[0]) if diff.size else (None if got.size == want.size else n)


class Report:
    """One PASS/FAIL line per workload, the summary line, and the exit status: 1 when any workload
    failed or none was checked."""

    def __init__(self):
        self.n = self.ok = 0

    def line(self, uuid, ok, detail):
        self.n += 1
        self.ok += bool(ok)
        print(f"{'PASS' if ok else 'FAIL'} {uuid}: {detail}")

    def finish(self, what, unit="workloads"):
        """Prints `golden cross-check: K/N UNIT WHAT` and exits."""
        print(f"golden cross-check: {self.ok}/{self.n} {unit} {what}")
        sys.exit(0 if self.n and self.ok == self.n else 1)
