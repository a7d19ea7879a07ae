"""Independent cross-check of moe_topk_router's golden (reference.cpp) with PyTorch float64 on the
inputs `d2k check --dump` wrote. For every dumped check workload: (1) a float64 computation
written here (softmax in float64, a stable descending sort of the fp32 logits for the tie rule,
gather, renormalise, bincount, cumsum, stable argsort) and (2) the task's pytorch.py (the
torch_eager program, fp32) both run on the CPU, and each output is compared with the golden's
under the task's rules: weights allclose (atol 1e-6, rtol 1e-5), ids, counts, offsets and the
permutation exactly. Prints one line per workload and program; exit status 1 if any disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import importlib.util
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

TASK = "moe_topk_router"
OUTS = ["topk_weights", "topk_ids", "expert_counts", "expert_offsets", "permutation"]


def fp64_program(logits, K):
    E = logits.shape[1]
    p = torch.softmax(logits.double(), dim=-1)
    _, order = torch.sort(logits, dim=-1, descending=True, stable=True)
    ids = order[:, :K]
    w = torch.gather(p, -1, ids)
    w = w / w.sum(-1, keepdim=True)
    flat = ids.reshape(-1)
    counts = torch.bincount(flat, minlength=E)
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(counts, 0)])
    perm = torch.argsort(flat, stable=True)
    return {"topk_weights": w, "topk_ids": ids, "expert_counts": counts, "expert_offsets": offsets,
            "permutation": perm}


def torch_program(run, logits, E, K):
    T = logits.shape[0]
    out = {"topk_weights": torch.empty(T, K), "topk_ids": torch.empty(T, K, dtype=torch.int32),
           "expert_counts": torch.empty(E, dtype=torch.int32), "expert_offsets": torch.empty(E + 1, dtype=torch.int32),
           "permutation": torch.empty(T * K, dtype=torch.int32)}
    run(logits, out["topk_weights"], out["topk_ids"], out["expert_counts"], out["expert_offsets"],
        out["permutation"], E, K)
    return out


def compare(got, expected, cmp):
    msgs, ok = [], True
    w, we = got["topk_weights"].double(), expected["topk_weights"].double()
    err = (w - we).abs()
    bad = int(((err > cmp["atol"]) & (err > cmp["rtol"] * we.abs())).sum())
    rel = float((err / we.abs().clamp_min(1e-300)).max()) if we.numel() else 0.0
    ok &= bad == 0
    msgs.append(f"weights max rel err {rel:.3g} ({bad} over tol)")
    for name in OUTS[1:]:
        a, e = got[name].to(torch.int64), expected[name].to(torch.int64)
        if name == "topk_ids":
            a, e = a.sort(-1).values, e.sort(-1).values  # the topk rule: a set per token
        diff = int((a != e).sum())
        ok &= diff == 0
        if diff:
            msgs.append(f"{name}: {diff} differ")
    return ok, ", ".join(msgs)


def main():
    a = golden.parse_args(dataset=True)
    cmp = golden.definition(a.dataset, TASK)["outputs"]["topk_weights"]["compare"]
    spec = importlib.util.spec_from_file_location("router_pytorch", os.path.join(a.dataset, TASK, "pytorch.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    report = golden.Report()
    for w in golden.workloads(a.dump, TASK, "permutation"):
        x = torch.from_numpy(w.input("logits"))
        expected = {k: torch.from_numpy(w.load(golden.GOLDEN, k)) for k in OUTS}
        E, K = x.shape[1], expected["topk_ids"].shape[1]
        for label, got in (("fp64", fp64_program(x, K)), ("pytorch.py", torch_program(mod.run, x, E, K))):
            ok, msg = compare(got, expected, cmp)
            report.line(f"{w.uuid} [{label}]", ok, msg)
    report.finish("agree with the golden", unit="(workload, program) pairs")


if __name__ == "__main__":
    main()
