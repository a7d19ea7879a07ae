"""Independent cross-check of w4a16_gemv's fp64 golden (reference.cpp) with PyTorch float64 on the
inputs `d2k check --dump DIR` wrote: for every dumped workload, the codes are unpacked with torch's
own shifts (as pytorch.py does), dequantised in float64 ((q - 8) * scale, no zero points), y =
x @ w.T in float64 is rounded to bf16 and compared with expected.y under the task's rule
(definition.json, with the workload's overrides from workloads.jsonl). Prints one line per workload
with the largest error and the share of bit-equal outputs; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

TASK = "w4a16_gemv"


def rules(dataset):
    d = json.load(open(os.path.join(dataset, TASK, "definition.json")))
    base = d["outputs"]["y"]["compare"]
    per = {}
    for line in open(os.path.join(dataset, TASK, "workloads.jsonl")):
        if line.strip():
            w = json.loads(line)
            per[w["uuid"]] = dict(base, **w.get("compare", {}).get("y", {}))
    return per, base


def bf16_round(t64):
    # float64 -> float32 -> bf16 can round twice; that moves a value by at most one bf16 step, which
    # the rule's rtol (2^-7) covers, and the report shows the share of bit-equal outputs.
    return t64.to(torch.float32).to(torch.bfloat16).to(torch.float64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--dataset", default="dataset")
    a = ap.parse_args()
    per, base = rules(a.dataset)
    root = os.path.join(a.dump, TASK)
    bad_workloads, n = 0, 0
    for uuid in sorted(os.listdir(root)):
        d = os.path.join(root, uuid)
        if not os.path.exists(os.path.join(d, "expected.y.npy")):
            continue
        cmp = per.get(uuid, base)
        x = torch.from_numpy(np.load(os.path.join(d, "input.x.npy"))).to(torch.float64)
        qw = torch.from_numpy(np.load(os.path.join(d, "input.qweight.npy"))).to(torch.int32)
        s = torch.from_numpy(np.load(os.path.join(d, "input.scales.npy"))).to(torch.float64)
        N, KP = qw.shape
        K = KP * 8
        shifts = torch.arange(0, 32, 4, dtype=torch.int32)
        q = ((qw.unsqueeze(-1) >> shifts) & 15).reshape(N, K)
        w = (q.to(torch.float64) - 8) * s.repeat_interleave(128, dim=1)
        ours = bf16_round(x @ w.T)
        exp = torch.from_numpy(np.load(os.path.join(d, "expected.y.npy"))).to(torch.float64)
        err = (ours - exp).abs()
        over = (err > cmp["atol"]) & (err > cmp["rtol"] * exp.abs())
        nbad = int(over.sum())
        exact = float((err == 0).double().mean()) if err.numel() else 1.0
        ok = nbad <= int((1 - cmp.get("matched_ratio", 1.0)) * err.numel())
        bad_workloads += 0 if ok else 1
        n += 1
        print(f"{'PASS' if ok else 'FAIL'} {uuid}: max|err| {float(err.max()):.3g}, {100 * exact:.3f}% bit-equal, "
              f"{nbad} over tol")
    print(f"golden cross-check: {n - bad_workloads}/{n} workloads agree with PyTorch float64")
    sys.exit(1 if bad_workloads or n == 0 else 0)


if __name__ == "__main__":
    main()
