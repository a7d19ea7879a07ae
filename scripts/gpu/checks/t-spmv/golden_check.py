"""Independent cross-check of spmv_csr's golden (reference.cpp) with PyTorch on the inputs
`d2k check --dump DIR` wrote: for every dumped workload, the CSR matrix built by PyTorch in float64
(torch.sparse_csr_tensor with int64 indices, on the CPU) times x in float64, rounded once to
float32, must equal expected.y within 1 ulp (rtol 2^-23: the golden sums in fp64 in another
order, so the two fp64 values round to the same float32 except within an fp64 error of a rounding
boundary), and the dumped y of the target (`<target>.y.npy`, e.g. the expert) must pass the task's
rule (allclose rtol 5e-4, atol 1e-6) against the same PyTorch value.
Prints one line per workload; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

TASK = "spmv_csr"
RTOL, ATOL = 5e-4, 1e-6  # definition.json's rule for y


def main():
    a = golden.parse_args()
    report = golden.Report()
    worst_golden = 0.0
    for w in golden.workloads(a.dump, TASK, "y"):
        rp, col, val, x = (w.input(n).reshape(-1) for n in ("row_ptr", "col_idx", "values", "x"))
        n_rows = rp.size - 1
        a64 = torch.sparse_csr_tensor(torch.from_numpy(rp.astype(np.int64)), torch.from_numpy(col.astype(np.int64)),
                                      torch.from_numpy(val.astype(np.float64)), size=(n_rows, n_rows))
        y64 = (a64 @ torch.from_numpy(x.astype(np.float64))).numpy()
        y32 = y64.astype(np.float32).astype(np.float64)
        expected = w.load(golden.GOLDEN, "y", np.float64).reshape(-1)
        problems = []
        rel = np.abs(expected - y32) / np.maximum(np.abs(y32), np.finfo(np.float32).tiny)
        worst_golden = max(worst_golden, float(rel.max()) if rel.size else 0.0)
        if rel.size and rel.max() > 2.0 ** -23:
            i = int(rel.argmax())
            problems.append(f"golden row {i}: {expected[i]!r} vs torch {y32[i]!r}")
        labels = w.targets("y")
        for label in labels:
            got = w.load(label, "y", np.float64).reshape(-1)
            err = np.abs(got - y64)
            bad = (err > ATOL) & (err > RTOL * np.abs(y64))
            if bad.any() or not np.isfinite(got).all():
                i = int(np.argmax(bad)) if bad.any() else int(np.argmax(~np.isfinite(got)))
                problems.append(f"{label} row {i}: {got[i]!r} vs torch {y64[i]!r}")
        report.line(w.uuid, not problems, f"N={n_rows} NNZ={val.size}, golden max rel {rel.max() if rel.size else 0:.2e}"
                    + (f"; {'; '.join(problems)}" if problems else f"; expected and {', '.join(labels) or 'no target'} agree with torch float64"))
    report.finish(f"agree with torch float64 (worst golden rel {worst_golden:.2e})")


if __name__ == "__main__":
    main()
