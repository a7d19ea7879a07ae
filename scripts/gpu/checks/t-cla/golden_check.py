"""Independent cross-check of chunked_linear_attention's fp64 golden (reference.cpp) with PyTorch
float64 on the inputs `d2k check --dump DIR` wrote: for every dumped workload, the token recurrence
S_t = exp(a_t) S_{t-1} + k_t^T v_t, o_t = q_t S_t in float64 on the CPU (vectorised over batch and
heads, a loop over steps), o rounded to bf16 and the final state to fp32; both compared with
expected.o / expected.final_state (the golden) and with the dumped target's outputs (e.g.
expert.o) under the task's rel_l2 rules (definition.json, with the workload's overrides). Prints
one line per workload with the errors; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

TASK = "chunked_linear_attention"
OUTPUTS = ("o", "final_state")


def load(w, label, name):
    return torch.from_numpy(w.load(label, name, np.float64))


def recurrence(q, k, v, a):
    """q, k, v [B, S, H, D], a [B, H, S] (float64) -> o [B, S, H, D], final state [B, H, D, D]."""
    B, S, H, D = q.shape
    state = torch.zeros(B, H, D, D, dtype=torch.float64)
    o = torch.empty_like(q)
    g = torch.exp(a)
    for t in range(S):
        state = g[:, :, t, None, None] * state + k[:, t, :, :, None] * v[:, t, :, None, :]
        o[:, t] = torch.einsum("bhd,bhde->bhe", q[:, t], state)
    return o, state




def main():
    args = golden.parse_args(dataset=True)
    per, default = golden.compare_rules(args.dataset, TASK)
    report = golden.Report()
    for w in golden.workloads(args.dump, TASK, "o"):
        cmp = per.get(w.uuid, default)
        q, k, v, a = (load(w, "input", x) for x in ("q", "k", "v", "a"))
        o, st = recurrence(q, k, v, a)
        ours = {"o": o.to(torch.float32).to(torch.bfloat16).to(torch.float64),  # double rounding: <= 1 bf16 step
                "final_state": st.to(torch.float32).to(torch.float64)}
        parts, ok = [], True
        for label in w.labels("o"):
            errs = []
            for name in OUTPUTS:
                e = golden.rel_l2(load(w, label, name).reshape(ours[name].shape), ours[name])
                ok = ok and e <= cmp[name]["tol"]
                errs.append(f"{name} rel_l2 {e:.3g} (tol {cmp[name]['tol']})")
            parts.append(f"{label}: " + ", ".join(errs))
        report.line(w.uuid, ok, "; ".join(parts))
    report.finish("agree with PyTorch float64")


if __name__ == "__main__":
    main()
