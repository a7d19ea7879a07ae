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
import argparse
import json
import os
import sys

import numpy as np
import torch

TASK = "flash_attention_forward"


def rules(dataset):
    d = json.load(open(os.path.join(dataset, TASK, "definition.json")))
    base = {name: d["outputs"][name]["compare"] for name in ("o", "lse")}
    scale = d["scalars"]["scale"]["value"]
    per = {}
    for line in open(os.path.join(dataset, TASK, "workloads.jsonl")):
        if line.strip():
            w = json.loads(line)
            over = w.get("compare", {})
            per[w["uuid"]] = ({n: dict(base[n], **over.get(n, {})) for n in base},
                              w.get("scalars", {}).get("scale", scale))
    return per, (base, scale)


def load(d, name):
    return torch.from_numpy(np.load(os.path.join(d, name)).astype(np.float64))


def over_tol(ours, exp, cmp):
    err = (ours - exp).abs()
    return err, int(((err > cmp["atol"]) & (err > cmp["rtol"] * exp.abs())).sum())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--dataset", default="dataset")
    a = ap.parse_args()
    per, default = rules(a.dataset)
    root = os.path.join(a.dump, TASK)
    bad, n = 0, 0
    for uuid in sorted(os.listdir(root)):
        d = os.path.join(root, uuid)
        if not os.path.exists(os.path.join(d, "expected.o.npy")):
            continue
        cmp, scale = per.get(uuid, default)
        q, k, v = load(d, "input.q.npy"), load(d, "input.k.npy"), load(d, "input.v.npy")  # [B, S, H, D]
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
        # the golden (expected.*) and every dumped target (e.g. expert.*) against PyTorch float64
        labels = sorted({f.split(".")[0] for f in os.listdir(d) if f.endswith(".o.npy")} - {"expected"})
        parts, ok = [], True
        for label in ["expected"] + labels:
            e_o, n_o = over_tol(ours_o, load(d, f"{label}.o.npy").reshape(ours_o.shape), cmp["o"])
            e_l, n_l = over_tol(ours_lse, load(d, f"{label}.lse.npy").reshape(ours_lse.shape), cmp["lse"])
            ok = ok and n_o == 0 and n_l == 0
            parts.append(f"{label}: o max|err| {float(e_o.max()):.3g} ({n_o} over tol), "
                         f"lse max|err| {float(e_l.max()):.3g} ({n_l} over tol)")
        bad += 0 if ok else 1
        n += 1
        print(f"{'PASS' if ok else 'FAIL'} {uuid}: " + "; ".join(parts))
    print(f"golden cross-check: {n - bad}/{n} workloads agree with PyTorch float64")
    sys.exit(1 if bad or n == 0 else 0)


if __name__ == "__main__":
    main()
