"""Independent cross-check of fp8_blockwise_gemm's fp64 golden (reference.cpp) with PyTorch float64
on the inputs `d2k check --dump DIR` wrote (e4m3 operands and the bf16 expected output are dumped
widened to float32, exactly): for every dumped workload, the operands are scaled per block in float64 (a_scales repeated over
128 columns, b_scales over 128 rows and 128 columns, the last row block cut at N), C = A · Bᵀ in
float64, rounded to bf16 and compared with expected.c under the task's rule (rel_l2, tolerance
from definition.json). Prints one line per workload with rel_l2 and the share of bit-equal
outputs; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

TASK = "fp8_blockwise_gemm"


def load(d, name):
    return torch.from_numpy(np.load(os.path.join(d, name))).to(torch.float64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--dataset", default="dataset")
    a = ap.parse_args()
    tol = json.load(open(os.path.join(a.dataset, TASK, "definition.json")))["outputs"]["c"]["compare"]["tol"]
    root = os.path.join(a.dump, TASK)
    bad, n = 0, 0
    for uuid in sorted(os.listdir(root)):
        d = os.path.join(root, uuid)
        if not os.path.exists(os.path.join(d, "expected.c.npy")):
            continue
        A, B = load(d, "input.a.npy"), load(d, "input.b.npy")
        # every dumped operand value must be an e4m3 value: the float8 round trip is the identity
        for name, t in (("a", A), ("b", B)):
            if not torch.equal(t.to(torch.float32).to(torch.float8_e4m3fn).to(torch.float64), t):
                print(f"FAIL {uuid}: input {name} holds values that are not e4m3")
                bad += 1
        sa, sb = load(d, "input.a_scales.npy"), load(d, "input.b_scales.npy")
        M, K = A.shape
        N = B.shape[0]
        a_deq = A * sa.repeat_interleave(128, dim=1)
        b_deq = B * sb.repeat_interleave(128, dim=0)[:N].repeat_interleave(128, dim=1)
        ours = (a_deq @ b_deq.T).to(torch.float32).to(torch.bfloat16).to(torch.float64)
        exp = load(d, "expected.c.npy")
        rel = float(torch.linalg.norm(ours - exp) / torch.linalg.norm(exp)) if float(exp.abs().max()) > 0 else 0.0
        exact = float((ours == exp).double().mean())
        ok = rel <= tol
        bad += 0 if ok else 1
        n += 1
        print(f"{'PASS' if ok else 'FAIL'} {uuid}: rel_l2 {rel:.3g} (tol {tol}), {100 * exact:.3f}% bit-equal")
    print(f"golden cross-check: {n - bad}/{n} workloads agree with PyTorch float64")
    sys.exit(1 if bad or n == 0 else 0)


if __name__ == "__main__":
    main()
