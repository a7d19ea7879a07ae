"""Independent cross-check of moe_grouped_gemm's golden (reference.cpp) with PyTorch on the inputs
`d2k check --dump DIR` wrote: for every dumped workload, each expert's rows x_e (float64) times
w_e^T (float64), rounded to bf16, must agree with expected.y within the task's rule (rel_l2 1e-3;
the two differ only where float64 sums of another order round to the other bf16 neighbour), and
so must the dumped y of the target (`<target>.y.npy`, e.g. the expert); where torch._grouped_mm
exists, its output on the same inputs too.
Prints one line per workload; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

TASK = "moe_grouped_gemm"
TOL = 1e-3


def bf16(w, label, name):
    """A dumped bf16 tensor as float64 (the dump stores bf16 as uint16 bits or as float)."""
    a = w.load(label, name)
    if a.dtype == np.uint16:
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return torch.from_numpy(a.astype(np.float64))


def main():
    a = golden.parse_args()
    report = golden.Report()
    for w in golden.workloads(a.dump, TASK, "y"):
        x = bf16(w, "input", "x")
        wt = bf16(w, "input", "w")
        offsets = w.input("offsets", np.int64).reshape(-1)
        E, N, K = wt.shape
        y = torch.empty(x.shape[0], N, dtype=torch.float64)
        for e in range(E):
            s, t = int(offsets[e]), int(offsets[e + 1])
            y[s:t] = x[s:t] @ wt[e].T
        ref = y.to(torch.bfloat16).to(torch.float64)
        errors = {label: golden.rel_l2(bf16(w, label, "y"), ref) for label in w.labels("y")}
        if hasattr(torch, "_grouped_mm") and torch.cuda.is_available():
            xd = x.to(torch.bfloat16).cuda()
            wd = wt.to(torch.bfloat16).cuda()
            off = torch.from_numpy(offsets[1:].astype(np.int32)).cuda()
            errors["torch._grouped_mm"] = golden.rel_l2(torch._grouped_mm(xd, wd.transpose(-2, -1), offs=off).double().cpu(), ref)
        bad = {k: v for k, v in errors.items() if not v <= TOL}
        report.line(w.uuid, not bad, f"E={E} T={x.shape[0]} K={K} N={N}; rel_l2 vs torch float64: "
                    + ", ".join(f"{k} {v:.2e}" for k, v in errors.items()))
    report.finish(f"within rel_l2 {TOL:g} of PyTorch float64")


if __name__ == "__main__":
    main()
