"""Independent cross-check of fp8_blockwise_gemm's fp64 golden (reference.cpp) with PyTorch float64
on the inputs `d2k check --dump DIR` wrote (e4m3 operands and the bf16 expected output are dumped
widened to float32, exactly): for every dumped workload, the operands are scaled per block in float64 (a_scales repeated over
128 columns, b_scales over 128 rows and 128 columns, the last row block cut at N), C = A · Bᵀ in
float64, rounded to bf16 and compared with expected.c under the task's rule (rel_l2, tolerance
from definition.json). Prints one line per workload with rel_l2 and the share of bit-equal
outputs; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

TASK = "fp8_blockwise_gemm"


def load(w, label, name):
    return torch.from_numpy(w.load(label, name)).to(torch.float64)


def main():
    a = golden.parse_args(dataset=True)
    tol = golden.definition(a.dataset, TASK)["outputs"]["c"]["compare"]["tol"]
    report = golden.Report()
    for w in golden.workloads(a.dump, TASK, "c"):
        A, B = load(w, "input", "a"), load(w, "input", "b")
        # every dumped operand value must be an e4m3 value: the float8 round trip is the identity
        not_e4m3 = [name for name, t in (("a", A), ("b", B))
                    if not torch.equal(t.to(torch.float32).to(torch.float8_e4m3fn).to(torch.float64), t)]
        for name in not_e4m3:
            report.line(w.uuid, False, f"input {name} holds values that are not e4m3")
        sa, sb = load(w, "input", "a_scales"), load(w, "input", "b_scales")
        M, K = A.shape
        N = B.shape[0]
        a_deq = A * sa.repeat_interleave(128, dim=1)
        b_deq = B * sb.repeat_interleave(128, dim=0)[:N].repeat_interleave(128, dim=1)
        ours = (a_deq @ b_deq.T).to(torch.float32).to(torch.bfloat16).to(torch.float64)
        exp = load(w, golden.GOLDEN, "c")
        rel = golden.rel_l2(ours, exp) if float(exp.abs().max()) > 0 else 0.0
        exact = float((ours == exp).double().mean())
        report.line(w.uuid, rel <= tol, f"rel_l2 {rel:.3g} (tol {tol}), {100 * exact:.3f}% bit-equal")
    report.finish("agree with PyTorch float64")


if __name__ == "__main__":
    main()
