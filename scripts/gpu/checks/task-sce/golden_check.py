"""Independent cross-check of softmax_cross_entropy's fp64 golden (reference.cpp) with PyTorch
float64 on the inputs `d2k check --dump DIR` wrote: for every dumped check workload,
F.cross_entropy in float64 and its backward are compared with expected.loss / expected.dlogits
under the task's rules (definition.json, with the workload's overrides from workloads.jsonl).
Prints one line per workload with the largest errors; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

TASK = "softmax_cross_entropy"


def rules(dataset):
    d = json.load(open(os.path.join(dataset, TASK, "definition.json")))
    base_scalars = {k: v["value"] for k, v in d["scalars"].items()}
    base_cmp = {k: v["compare"] for k, v in d["outputs"].items()}
    per = {}
    for line in open(os.path.join(dataset, TASK, "workloads.jsonl")):
        if not line.strip():
            continue
        w = json.loads(line)
        sc = dict(base_scalars, **w.get("scalars", {}))
        cmp = {k: dict(v, **w.get("compare", {}).get(k, {})) for k, v in base_cmp.items()}
        per[w["uuid"]] = (sc, cmp)
    return per, (base_scalars, base_cmp)


def bf16_round(t64):
    # One rounding from float64 to bf16 through float32 can double-round; the tolerance (one bf16
    # step) covers it, and the report shows the error.
    return t64.to(torch.float32).to(torch.bfloat16).to(torch.float64)


def allclose_failures(actual, expected, atol, rtol):
    err = (actual - expected).abs()
    bad = (err > atol) & (err > rtol * expected.abs())
    return int(bad.sum()), float(err.max()) if err.numel() else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--dataset", default="dataset")
    a = ap.parse_args()
    per, default = rules(a.dataset)
    root = os.path.join(a.dump, TASK)
    worst = 0
    n = 0
    for uuid in sorted(os.listdir(root)):
        d = os.path.join(root, uuid)
        if not os.path.exists(os.path.join(d, "expected.loss.npy")):
            continue
        sc, cmp = per.get(uuid, default)
        x = torch.from_numpy(np.load(os.path.join(d, "input.logits.npy"))).to(torch.float64).requires_grad_()
        y = torch.from_numpy(np.load(os.path.join(d, "input.targets.npy"))).to(torch.int64)
        loss = F.cross_entropy(x, y, reduction="none", ignore_index=int(sc["ignore_index"]))
        loss.backward(torch.full_like(loss, float(sc["grad_scale"])))
        exp_loss = torch.from_numpy(np.load(os.path.join(d, "expected.loss.npy"))).to(torch.float64)
        exp_dl = torch.from_numpy(np.load(os.path.join(d, "expected.dlogits.npy"))).to(torch.float64)
        bl, el = allclose_failures(loss.detach(), exp_loss, cmp["loss"]["atol"], cmp["loss"]["rtol"])
        bd, ed = allclose_failures(bf16_round(x.grad), exp_dl, cmp["dlogits"]["atol"], cmp["dlogits"]["rtol"])
        ok = bl == 0 and bd == 0
        worst += 0 if ok else 1
        n += 1
        print(f"{'PASS' if ok else 'FAIL'} {uuid}: loss max|err| {el:.3g} ({bl} over tol), "
              f"dlogits max|err| {ed:.3g} ({bd} over tol)")
    print(f"golden cross-check: {n - worst}/{n} workloads agree with PyTorch float64")
    sys.exit(1 if worst or n == 0 else 0)


if __name__ == "__main__":
    main()
