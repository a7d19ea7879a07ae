"""Independent cross-check of stencil_3d_7pt's fp64 golden (reference.cpp) with PyTorch float64 on
the inputs `d2k check --dump DIR` wrote: for every dumped public check workload, the task's PyTorch
program (pytorch.py's slicing form: the interior of the next grid from six shifted views, the
boundary copied) run T times in float64 with the workload's c0, c1 and T (workloads.jsonl over
definition.json's defaults), rounded once to float32, and compared with expected.out under the
task's rule (the workload's atol). Prints one line per workload with the largest error and the
share of bit-equal cells; exit status 1 if any workload disagrees or none was found.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

TASK = "stencil_3d_7pt"


def workloads(dataset):
    d = json.load(open(os.path.join(dataset, TASK, "definition.json")))
    base_cmp = d["outputs"]["out"]["compare"]
    base_scalars = {k: v["value"] for k, v in d["scalars"].items()}
    per = {}
    for line in open(os.path.join(dataset, TASK, "workloads.jsonl")):
        if line.strip():
            w = json.loads(line)
            per[w["uuid"]] = (dict(base_cmp, **w.get("compare", {}).get("out", {})),
                              dict(base_scalars, **w.get("scalars", {})), w["axes"])
    return per


def jacobi(u, c0, c1, T):
    cur, nxt = u.clone(), u.clone()
    for _ in range(T):
        nxt[1:-1, 1:-1, 1:-1] = c0 * cur[1:-1, 1:-1, 1:-1] + c1 * (
            cur[:-2, 1:-1, 1:-1] + cur[2:, 1:-1, 1:-1] + cur[1:-1, :-2, 1:-1] + cur[1:-1, 2:, 1:-1]
            + cur[1:-1, 1:-1, :-2] + cur[1:-1, 1:-1, 2:])
        cur, nxt = nxt, cur
    return cur


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--dataset", default="dataset")
    a = ap.parse_args()
    per = workloads(a.dataset)
    root = os.path.join(a.dump, TASK)
    bad, n = 0, 0
    for uuid in sorted(os.listdir(root)):
        d = os.path.join(root, uuid)
        if uuid not in per or not os.path.exists(os.path.join(d, "expected.out.npy")):
            continue  # hidden workloads: their T is not in workloads.jsonl
        cmp, scalars, axes = per[uuid]
        u = torch.from_numpy(np.load(os.path.join(d, "input.u.npy"))).to(torch.float64)
        ours = jacobi(u, float(scalars["c0"]), float(scalars["c1"]), int(axes["T"]))
        ours = ours.to(torch.float32).to(torch.float64)
        exp = torch.from_numpy(np.load(os.path.join(d, "expected.out.npy"))).to(torch.float64)
        err = (ours - exp).abs()
        nbad = int(((err > cmp["atol"]) & (err > cmp.get("rtol", 0) * exp.abs())).sum())
        exact = float((err == 0).double().mean()) if err.numel() else 1.0
        ok = nbad == 0
        bad += 0 if ok else 1
        n += 1
        print(f"{'PASS' if ok else 'FAIL'} {uuid}: max|err| {float(err.max()):.3g} (atol {cmp['atol']:.3g}), "
              f"{100 * exact:.3f}% bit-equal, {nbad} over tol")
    print(f"golden cross-check: {n - bad}/{n} workloads agree with PyTorch float64")
    sys.exit(1 if bad or n == 0 else 0)


if __name__ == "__main__":
    main()
