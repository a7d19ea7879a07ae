"""Independent cross-check of layernorm_backward's fp64 golden (reference.cpp) with PyTorch float64
on the inputs `d2k check --dump DIR` wrote: for every dumped check workload, aten's
native_layer_norm_backward in float64 (PyTorch's own kernel, given the dumped mean and rstd) is
compared with expected.dx / expected.dgamma / expected.dbeta under the task's rules
(definition.json, with the workload's overrides from workloads.jsonl).
Prints one line per workload with the largest errors; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

TASK = "layernorm_backward"


def rel_l2_verdict(actual, expected, r):
    rel = golden.rel_l2(actual, expected)
    return rel <= r["tol"], f"rel_l2 {rel:.3g}"


def load(w, label, name):
    return torch.from_numpy(w.load(label, name)).to(torch.float64)


def main():
    a = golden.parse_args(dataset=True)
    per, default = golden.compare_rules(a.dataset, TASK)
    report = golden.Report()
    for w in golden.workloads(a.dump, TASK, "dx"):
        cmp = per.get(w.uuid, default)
        dy, x, mean, rstd, gamma = (load(w, "input", n) for n in ("dy", "x", "mean", "rstd", "gamma"))
        H = x.shape[-1]
        # gamma stands in for the bias: aten only needs it to know that dbeta is wanted.
        dx, dg, db = torch.ops.aten.native_layer_norm_backward(
            dy, x, [H], mean.unsqueeze(-1), rstd.unsqueeze(-1), gamma, gamma, [True, True, True])
        # float64 -> float32 -> bf16 can round twice; the rule's matched_ratio covers the rare tie.
        dx = dx.to(torch.float32).to(torch.bfloat16).to(torch.float64)
        dg, db = dg.to(torch.float32).to(torch.float64), db.to(torch.float32).to(torch.float64)
        v = [golden.allclose(dx, load(w, golden.GOLDEN, "dx"), cmp["dx"]),
             rel_l2_verdict(dg, load(w, golden.GOLDEN, "dgamma"), cmp["dgamma"]),
             rel_l2_verdict(db, load(w, golden.GOLDEN, "dbeta"), cmp["dbeta"])]
        report.line(w.uuid, all(o for o, _ in v), f"dx {v[0][1]}; dgamma {v[1][1]}; dbeta {v[2][1]}")
    report.finish("agree with PyTorch float64")


if __name__ == "__main__":
    main()
