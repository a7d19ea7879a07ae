"""Independent cross-check of layernorm_backward's fp64 golden (reference.cpp) with PyTorch float64
on the inputs `d2k check --dump DIR` wrote: for every dumped check workload, aten's
native_layer_norm_backward in float64 (PyTorch's own kernel, given the dumped mean and rstd) is
compared with expected.dx / expected.dgamma / expected.dbeta under the task's rules
(definition.json, with the workload's overrides from workloads.jsonl).
Prints one line per workload with the largest errors; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

TASK = "layernorm_backward"


def rules(dataset):
    d = json.load(open(os.path.join(dataset, TASK, "definition.json")))
    base = {k: v["compare"] for k, v in d["outputs"].items()}
    per = {}
    for line in open(os.path.join(dataset, TASK, "workloads.jsonl")):
        if line.strip():
            w = json.loads(line)
            per[w["uuid"]] = {k: dict(v, **w.get("compare", {}).get(k, {})) for k, v in base.items()}
    return per, base


def allclose_verdict(actual, expected, r):
    """The allclose rule with matched_ratio and max_error_cap, as docs/task-format.md states it."""
    err = (actual - expected).abs()
    bad = (err > r.get("atol", 0.0)) & (err > r.get("rtol", 0.0) * expected.abs())
    allowed = int((1.0 - r.get("matched_ratio", 1.0)) * err.numel())
    cap = r.get("max_error_cap", 0.0)
    ok = int(bad.sum()) <= allowed and not (cap > 0 and float(err.max()) > cap)
    return ok, f"{int(bad.sum())} over tol (allowed {allowed}), max|err| {float(err.max()):.3g}"


def rel_l2_verdict(actual, expected, r):
    num, den = float((actual - expected).norm()), float(expected.norm())
    rel = num / den if den > 0 else (0.0 if num == 0 else float("inf"))
    return rel <= r["tol"], f"rel_l2 {rel:.3g}"


def load(d, name):
    return torch.from_numpy(np.load(os.path.join(d, name))).to(torch.float64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--dataset", default="dataset")
    a = ap.parse_args()
    per, default = rules(a.dataset)
    root = os.path.join(a.dump, TASK)
    failed = n = 0
    for uuid in sorted(os.listdir(root)):
        d = os.path.join(root, uuid)
        if not os.path.exists(os.path.join(d, "expected.dx.npy")):
            continue
        cmp = per.get(uuid, default)
        dy, x = load(d, "input.dy.npy"), load(d, "input.x.npy")
        mean, rstd, gamma = load(d, "input.mean.npy"), load(d, "input.rstd.npy"), load(d, "input.gamma.npy")
        H = x.shape[-1]
        # gamma stands in for the bias: aten only needs it to know that dbeta is wanted.
        dx, dg, db = torch.ops.aten.native_layer_norm_backward(
            dy, x, [H], mean.unsqueeze(-1), rstd.unsqueeze(-1), gamma, gamma, [True, True, True])
        # float64 -> float32 -> bf16 can round twice; the rule's matched_ratio covers the rare tie.
        dx = dx.to(torch.float32).to(torch.bfloat16).to(torch.float64)
        dg, db = dg.to(torch.float32).to(torch.float64), db.to(torch.float32).to(torch.float64)
        v = [allclose_verdict(dx, load(d, "expected.dx.npy"), cmp["dx"]),
             rel_l2_verdict(dg, load(d, "expected.dgamma.npy"), cmp["dgamma"]),
             rel_l2_verdict(db, load(d, "expected.dbeta.npy"), cmp["dbeta"])]
        ok = all(o for o, _ in v)
        failed += 0 if ok else 1
        n += 1
        print(f"{'PASS' if ok else 'FAIL'} {uuid}: dx {v[0][1]}; dgamma {v[1][1]}; dbeta {v[2][1]}")
    print(f"golden cross-check: {n - failed}/{n} workloads agree with PyTorch float64")
    sys.exit(1 if failed or n == 0 else 0)


if __name__ == "__main__":
    main()
