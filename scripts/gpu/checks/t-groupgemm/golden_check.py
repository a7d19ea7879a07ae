"""Independent cross-check of moe_grouped_gemm's golden (reference.cpp) with PyTorch on the inputs
`d2k check --dump DIR` wrote: for every dumped workload, each expert's rows x_e (float64) times
w_e^T (float64), rounded to bf16, must agree with expected.y within the task's rule (rel_l2 1e-3;
the two differ only where float64 sums of another order round to the other bf16 neighbour), and
so must the dumped y of the target (`<target>.y.npy`, e.g. the expert); where torch._grouped_mm
exists, its output on the same inputs too.
Prints one line per workload; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR
"""
import argparse
import os
import sys

import numpy as np
import torch

TASK = "moe_grouped_gemm"
TOL = 1e-3


def bf16(path):
    """A dumped bf16 tensor as float64 (the dump stores bf16 as uint16 bits or as float)."""
    a = np.load(path)
    if a.dtype == np.uint16:
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return torch.from_numpy(a.astype(np.float64))


def rel_l2(a, e):
    n = torch.linalg.vector_norm(e)
    return float(torch.linalg.vector_norm(a - e) / n) if n > 0 else float(torch.linalg.vector_norm(a))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    a = ap.parse_args()
    root = os.path.join(a.dump, TASK)
    n_ok = n = 0
    for uuid in sorted(os.listdir(root)):
        d = os.path.join(root, uuid)
        if not os.path.exists(os.path.join(d, "expected.y.npy")):
            continue
        x = bf16(os.path.join(d, "input.x.npy"))
        w = bf16(os.path.join(d, "input.w.npy"))
        offsets = np.load(os.path.join(d, "input.offsets.npy")).astype(np.int64).reshape(-1)
        E, N, K = w.shape
        y = torch.empty(x.shape[0], N, dtype=torch.float64)
        for e in range(E):
            s, t = int(offsets[e]), int(offsets[e + 1])
            y[s:t] = x[s:t] @ w[e].T
        golden = y.to(torch.bfloat16).to(torch.float64)
        errors = {"expected": rel_l2(bf16(os.path.join(d, "expected.y.npy")), golden)}
        for f in sorted(os.listdir(d)):
            if f.endswith(".y.npy") and f != "expected.y.npy":
                errors[f.split(".")[0]] = rel_l2(bf16(os.path.join(d, f)), golden)
        if hasattr(torch, "_grouped_mm") and torch.cuda.is_available():
            xd = x.to(torch.bfloat16).cuda()
            wd = w.to(torch.bfloat16).cuda()
            off = torch.from_numpy(offsets[1:].astype(np.int32)).cuda()
            errors["torch._grouped_mm"] = rel_l2(torch._grouped_mm(xd, wd.transpose(-2, -1), offs=off).double().cpu(), golden)
        bad = {k: v for k, v in errors.items() if not v <= TOL}
        n += 1
        n_ok += not bad
        print(f"{'PASS' if not bad else 'FAIL'} {uuid}: E={E} T={x.shape[0]} K={K} N={N}; rel_l2 vs torch float64: "
              + ", ".join(f"{k} {v:.2e}" for k, v in errors.items()))
    print(f"golden cross-check: {n_ok}/{n} workloads within rel_l2 {TOL:g} of PyTorch float64")
    sys.exit(0 if n and n_ok == n else 1)


if __name__ == "__main__":
    main()
