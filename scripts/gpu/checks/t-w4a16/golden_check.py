"""Independent cross-check of w4a16_gemv's fp64 golden (reference.cpp) with PyTorch float64 on the
inputs `d2k check --dump DIR` wrote: for every dumped workload, the codes are unpacked with torch's
own shifts (as pytorch.py does), dequantised in float64 ((q - 8) * scale, no zero points), y =
x @ w.T in float64 is rounded to bf16 and compared with expected.y under the task's rule
(definition.json, with the workload's overrides from workloads.jsonl). Prints one line per workload
with the largest error and the share of bit-equal outputs; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

TASK = "w4a16_gemv"





def bf16_round(t64):
    # float64 -> float32 -> bf16 can round twice; that moves a value by at most one bf16 step, which
    # the rule's rtol (2^-7) covers, and the report shows the share of bit-equal outputs.
    return t64.to(torch.float32).to(torch.bfloat16).to(torch.float64)


def main():
    a = golden.parse_args(dataset=True)
    per, base = golden.compare_rules(a.dataset, TASK)
    report = golden.Report()
    for w in golden.workloads(a.dump, TASK, "y"):
        cmp = per.get(w.uuid, base)["y"]
        x = torch.from_numpy(w.input("x")).to(torch.float64)
        qw = torch.from_numpy(w.input("qweight")).to(torch.int32)
        s = torch.from_numpy(w.input("scales")).to(torch.float64)
        N, KP = qw.shape
        K = KP * 8
        shifts = torch.arange(0, 32, 4, dtype=torch.int32)
        q = ((qw.unsqueeze(-1) >> shifts) & 15).reshape(N, K)
        wq = (q.to(torch.float64) - 8) * s.repeat_interleave(128, dim=1)
        ours = bf16_round(x @ wq.T)
        exp = w.load(golden.GOLDEN, "y", np.float64)
        err, nbad = golden.over_tol(exp, ours, cmp)
        exact = float((err == 0).mean()) if err.size else 1.0
        ok = nbad <= int((1 - cmp.get("matched_ratio", 1.0)) * err.size)
        report.line(w.uuid, ok, f"max|err| {float(err.max()):.3g}, {100 * exact:.3f}% bit-equal, {nbad} over tol")
    report.finish("agree with PyTorch float64")


if __name__ == "__main__":
    main()
