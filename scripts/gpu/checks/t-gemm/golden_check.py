"""Independent cross-check of gemm_bias_gelu's fp64 golden (reference.cpp) with PyTorch float64 on
the inputs `d2k check --dump DIR` wrote: for every dumped workload,
F.gelu(torch.addmm(bias, A, B), approximate="tanh") in float64, rounded to bf16, is compared with
expected.out under the task's rule (rel_l2, tolerance from definition.json with the workload's
overrides), and so is every dumped target output (`<target>.out.npy`, e.g. the expert); the
measured rel_l2 of each is printed (the honest error the tolerance analysis of spec.md predicts:
about 0.0017 for a fused epilogue). Exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

TASK = "gemm_bias_gelu"


def bf16_round(t64):
    # float64 -> float32 -> bf16 can round twice; the effect on rel_l2 is far below the tolerance.
    return t64.to(torch.float32).to(torch.bfloat16).to(torch.float64)


def main():
    a = golden.parse_args(dataset=True)
    per, base = golden.compare_rules(a.dataset, TASK)
    report = golden.Report()
    for w in golden.workloads(a.dump, TASK, "out"):
        tol = per.get(w.uuid, base)["out"]["tol"]
        A, B, bias = (torch.from_numpy(w.input(n, "float64")) for n in ("A", "B", "bias"))
        ours = bf16_round(F.gelu(torch.addmm(bias, A, B), approximate="tanh"))
        errors = {label: golden.rel_l2(w.load(label, "out"), ours) for label in w.labels("out")}
        # The golden itself must agree with PyTorch to double-rounding level, far inside tol.
        ok = errors[golden.GOLDEN] <= tol / 10 and all(v <= tol for v in errors.values())
        report.line(w.uuid, ok, "rel_l2 vs torch float64 " +
                    ", ".join(f"{k} {v:.5f}" for k, v in errors.items()) + f" (tol {tol})")
    report.finish("agree with PyTorch float64")


if __name__ == "__main__":
    main()
