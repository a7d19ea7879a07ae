"""Independent cross-check of causal_conv1d's fp64 golden (reference.cpp) with PyTorch float64 on
the inputs `d2k check --dump DIR` wrote: for every dumped workload, the causal-conv1d package's
reference program (depthwise F.conv1d with W-1 zeros of left padding, cut to L, SiLU) in float64 is
rounded to bf16 and compared with expected.out under the task's rule (definition.json, with the
workload's overrides from workloads.jsonl). Prints one line per workload with the largest error;
exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

TASK = "causal_conv1d"




def bf16_round(t64):
    # float64 -> float32 -> bf16 can round twice; a double rounding moves a value by at most one bf16
    # step, which the rule (rtol 2^-7) covers, and the report shows the error.
    return t64.to(torch.float32).to(torch.bfloat16).to(torch.float64)


def main():
    a = golden.parse_args(dataset=True)
    per, base = golden.compare_rules(a.dataset, TASK)
    report = golden.Report()
    for w in golden.workloads(a.dump, TASK, "out"):
        cmp = per.get(w.uuid, base)["out"]
        x, wt, b = (torch.from_numpy(w.input(n)).to(torch.float64) for n in ("x", "weight", "bias"))
        L = x.shape[-1]
        D, W = wt.shape
        z = F.conv1d(x, wt.unsqueeze(1), b, padding=W - 1, groups=D)[..., :L]
        ours = bf16_round(F.silu(z))
        exp = torch.from_numpy(w.load(golden.GOLDEN, "out")).to(torch.float64)
        err, nbad = golden.over_tol(exp, ours, cmp)
        exact = float((err == 0).mean()) if err.size else 1.0
        report.line(w.uuid, nbad == 0, f"max|err| {float(err.max()):.3g}, {100 * exact:.3f}% bit-equal, {nbad} over tol")
    report.finish("agree with PyTorch float64")


if __name__ == "__main__":
    main()
