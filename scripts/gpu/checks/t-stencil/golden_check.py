"""Independent cross-check of stencil_3d_7pt's fp64 golden (reference.cpp) with PyTorch float64 on
the inputs `d2k check --dump DIR` wrote: for every dumped public check workload, the task's PyTorch
program (pytorch.py's slicing form: the interior of the next grid from six shifted views, the
boundary copied) run T times in float64 with the workload's c0, c1 and T (workloads.jsonl over
definition.json's defaults), rounded once to float32, and compared with expected.out under the
task's rule (the workload's atol). Prints one line per workload with the largest error and the
share of bit-equal cells; exit status 1 if any workload disagrees or none was found.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

TASK = "stencil_3d_7pt"


def workloads(dataset):
    rules, _ = golden.compare_rules(dataset, TASK)
    scalars, _ = golden.scalar_values(dataset, TASK)
    return {w["uuid"]: (rules[w["uuid"]]["out"], scalars[w["uuid"]], w["axes"])
            for w in golden.workload_lines(dataset, TASK)}


def jacobi(u, c0, c1, T):
    cur, nxt = u.clone(), u.clone()
    for _ in range(T):
        nxt[1:-1, 1:-1, 1:-1] = c0 * cur[1:-1, 1:-1, 1:-1] + c1 * (
            cur[:-2, 1:-1, 1:-1] + cur[2:, 1:-1, 1:-1] + cur[1:-1, :-2, 1:-1] + cur[1:-1, 2:, 1:-1]
            + cur[1:-1, 1:-1, :-2] + cur[1:-1, 1:-1, 2:])
        cur, nxt = nxt, cur
    return cur


def main():
    a = golden.parse_args(dataset=True)
    per = workloads(a.dataset)
    report = golden.Report()
    for w in golden.workloads(a.dump, TASK, "out"):
        if w.uuid not in per:
            continue  # hidden workloads: their T is not in workloads.jsonl
        cmp, scalars, axes = per[w.uuid]
        u = torch.from_numpy(w.input("u")).to(torch.float64)
        ours = jacobi(u, float(scalars["c0"]), float(scalars["c1"]), int(axes["T"]))
        ours = ours.to(torch.float32).to(torch.float64)
        exp = w.load(golden.GOLDEN, "out", np.float64)
        err, nbad = golden.over_tol(exp, ours, cmp)
        exact = float((err == 0).mean()) if err.size else 1.0
        report.line(w.uuid, nbad == 0, f"max|err| {float(err.max()):.3g} (atol {cmp['atol']:.3g}), "
                    f"{100 * exact:.3f}% bit-equal, {nbad} over tol")
    report.finish("agree with PyTorch float64")


if __name__ == "__main__":
    main()
