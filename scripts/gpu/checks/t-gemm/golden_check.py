"""Independent cross-check of gemm_bias_gelu's fp64 golden (reference.cpp) with PyTorch float64 on
the inputs `d2k check --dump DIR` wrote: for every dumped workload,
F.gelu(torch.addmm(bias, A, B), approximate="tanh") in float64, rounded to bf16, is compared with
expected.out under the task's rule (rel_l2, tolerance from definition.json with the workload's
overrides), and so is every dumped target output (`<target>.out.npy`, e.g. the expert); the
measured rel_l2 of each is printed (the honest error the tolerance analysis of spec.md predicts:
about 0.0017 for a fused epilogue). Exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

TASK = "gemm_bias_gelu"


def rules(dataset):
    d = json.load(open(os.path.join(dataset, TASK, "definition.json")))
    base = d["outputs"]["out"]["compare"]
    per = {}
    for line in open(os.path.join(dataset, TASK, "workloads.jsonl")):
        if line.strip():
            w = json.loads(line)
            per[w["uuid"]] = dict(base, **w.get("compare", {}).get("out", {}))
    return per, base


def bf16_round(t64):
    # float64 -> float32 -> bf16 can round twice; the effect on rel_l2 is far below the tolerance.
    return t64.to(torch.float32).to(torch.bfloat16).to(torch.float64)


def rel_l2(a, e):
    return float(torch.linalg.vector_norm(a - e) / torch.linalg.vector_norm(e))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--dataset", default="dataset")
    a = ap.parse_args()
    per, base = rules(a.dataset)
    root = os.path.join(a.dump, TASK)
    bad, n = 0, 0
    for uuid in sorted(os.listdir(root)):
        d = os.path.join(root, uuid)
        if not os.path.exists(os.path.join(d, "expected.out.npy")):
            continue
        tol = per.get(uuid, base)["tol"]
        load = lambda name: torch.from_numpy(np.load(os.path.join(d, name)).astype(np.float64))
        A, B, bias = load("input.A.npy"), load("input.B.npy"), load("input.bias.npy")
        ours = bf16_round(F.gelu(torch.addmm(bias, A, B), approximate="tanh"))
        errors = {"expected": rel_l2(load("expected.out.npy"), ours)}
        for f in sorted(os.listdir(d)):
            if f.endswith(".out.npy") and f != "expected.out.npy":
                errors[f.split(".")[0]] = rel_l2(load(f), ours)
        # The golden itself must agree with PyTorch to double-rounding level, far inside tol.
        ok = errors["expected"] <= tol / 10 and all(v <= tol for v in errors.values())
        bad += 0 if ok else 1
        n += 1
        print(f"{'PASS' if ok else 'FAIL'} {uuid}: rel_l2 vs torch float64 " +
              ", ".join(f"{k} {v:.5f}" for k, v in errors.items()) + f" (tol {tol})")
    print(f"golden cross-check: {n - bad}/{n} workloads agree with PyTorch float64")
    sys.exit(1 if bad or n == 0 else 0)


if __name__ == "__main__":
    main()
