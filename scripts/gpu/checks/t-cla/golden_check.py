"""Independent cross-check of chunked_linear_attention's fp64 golden (reference.cpp) with PyTorch
float64 on the inputs `d2k check --dump DIR` wrote: for every dumped workload, the token recurrence
S_t = exp(a_t) S_{t-1} + k_t^T v_t, o_t = q_t S_t in float64 on the CPU (vectorised over batch and
heads, a loop over steps), o rounded to bf16 and the final state to fp32; both compared with
expected.o / expected.final_state (the golden) and with the dumped target's outputs (e.g.
expert.o) under the task's rel_l2 rules (definition.json, with the workload's overrides). Prints
one line per workload with the errors; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

TASK = "chunked_linear_attention"
OUTPUTS = ("o", "final_state")


def rules(dataset):
    d = json.load(open(os.path.join(dataset, TASK, "definition.json")))
    base = {name: d["outputs"][name]["compare"] for name in OUTPUTS}
    per = {}
    for line in open(os.path.join(dataset, TASK, "workloads.jsonl")):
        if line.strip():
            w = json.loads(line)
            over = w.get("compare", {})
            per[w["uuid"]] = {n: dict(base[n], **over.get(n, {})) for n in base}
    return per, base


def load(d, name):
    return torch.from_numpy(np.load(os.path.join(d, name)).astype(np.float64))


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


def rel_l2(ours, theirs):
    den = float(torch.linalg.vector_norm(ours))
    return float(torch.linalg.vector_norm(theirs - ours)) / den if den > 0 else float("inf")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--dataset", default="dataset")
    args = ap.parse_args()
    per, default = rules(args.dataset)
    root = os.path.join(args.dump, TASK)
    bad, n = 0, 0
    for uuid in sorted(os.listdir(root)):
        d = os.path.join(root, uuid)
        if not os.path.exists(os.path.join(d, "expected.o.npy")):
            continue
        cmp = per.get(uuid, default)
        q, k, v, a = (load(d, f"input.{x}.npy") for x in ("q", "k", "v", "a"))
        o, st = recurrence(q, k, v, a)
        ours = {"o": o.to(torch.float32).to(torch.bfloat16).to(torch.float64),  # double rounding: <= 1 bf16 step
                "final_state": st.to(torch.float32).to(torch.float64)}
        labels = sorted({f.split(".")[0] for f in os.listdir(d) if f.endswith(".o.npy")} - {"expected"})
        parts, ok = [], True
        for label in ["expected"] + labels:
            errs = []
            for name in OUTPUTS:
                e = rel_l2(ours[name], load(d, f"{label}.{name}.npy").reshape(ours[name].shape))
                ok = ok and e <= cmp[name]["tol"]
                errs.append(f"{name} rel_l2 {e:.3g} (tol {cmp[name]['tol']})")
            parts.append(f"{label}: " + ", ".join(errs))
        bad += 0 if ok else 1
        n += 1
        print(f"{'PASS' if ok else 'FAIL'} {uuid}: " + "; ".join(parts))
    print(f"golden cross-check: {n - bad}/{n} workloads agree with PyTorch float64")
    sys.exit(1 if bad or n == 0 else 0)


if __name__ == "__main__":
    main()
