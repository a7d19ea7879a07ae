"""Independent cross-check of flash_attention_forward's fp64 golden (reference.cpp) with PyTorch
float64 on the inputs `d2k check --dump DIR` wrote: for every dumped workload, the attention of
F.scaled_dot_product_attention's math definition (q k^T * scale, causal mask, softmax, p v) in
float64 on the CPU, k and v expanded to the query heads (GQA), gives o (rounded to bf16) and lse
(torch.logsumexp of the masked scores, rounded to fp32); both are compared with expected.o and
expected.lse (the golden) and with the dumped target's outputs (e.g. expert.o, expert.lse) under the
task's rules (definition.json, with the workload's overrides). Prints one
line per workload with the largest errors; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

TASK = "flash_attention_forward"


def rules(dataset):
    per, base = golden.compare_rules(dataset, TASK)
    scales, default = golden.scalar_values(dataset, TASK)
    return {uuid: (per[uuid], scales[uuid]["scale"]) for uuid in per}, (base, default["scale"])


def load(w, label, name):
    return torch.from_numpy(w.load(label, name, np.float64))


def main():
    a = golden.parse_args(dataset=True)
    per, default = rules(a.dataset)
    report = golden.Report()
    for w in golden.workloads(a.dump, TASK, "o"):
        cmp, scale = per.get(w.uuid, default)
        q, k, v = (load(w, "input", n) for n in ("q", "k", "v"))  # [B, S, H, D]
        group = q.shape[2] // k.shape[2]
        qt = q.transpose(1, 2)
        kt = k.transpose(1, 2).repeat_interleave(group, dim=1)
        vt = v.transpose(1, 2).repeat_interleave(group, dim=1)
        S = q.shape[1]
        s = (qt @ kt.transpose(-1, -2)) * scale
        s = s.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf"))
        lse = torch.logsumexp(s, dim=-1)  # [B, H, S]
        o = (torch.softmax(s, dim=-1) @ vt).transpose(1, 2)  # [B, S, H, D]
        ours_o = o.to(torch.float32).to(torch.bfloat16).to(torch.float64)  # double rounding: <= 1 bf16 step
        ours_lse = lse.to(torch.float32).to(torch.float64)
        # the golden (expected.*) and every dumped target (e.g. expert.*) against PyTorch float64;
        # (rtol scales with the dumped value, |got|)
        parts, ok = [], True
        for label in w.labels("o"):
            e_o, n_o = golden.over_tol(load(w, label, "o").reshape(ours_o.shape), ours_o, cmp["o"])
            e_l, n_l = golden.over_tol(load(w, label, "lse").reshape(ours_lse.shape), ours_lse, cmp["lse"])
            ok = ok and n_o == 0 and n_l == 0
            parts.append(f"{label}: o max|err| {float(e_o.max()):.3g} ({n_o} over tol), "
                         f"lse max|err| {float(e_l.max()):.3g} ({n_l} over tol)")
        report.line(w.uuid, ok, "; ".join(parts))
    report.finish("agree with PyTorch float64")


if __name__ == "__main__":
    main()
