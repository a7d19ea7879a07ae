"""Independent cross-check of paged_attention_decode's fp64 golden (reference.cpp) with PyTorch
float64 on the inputs `d2k check --dump DIR` wrote: for every dumped check workload, the pages are
gathered with tensor indexing, the scores, the masked softmax and the weighted sum computed in
float64 with torch ops (a different program from reference.cpp's loops), o rounded once to bf16,
and compared with expected.o under the task's rule (definition.json: rel_l2), and so is every
dumped target's o (e.g. expert.o.npy). With --pytorch the task's pytorch.py (what the torch_eager
target runs) is judged on the same inputs too, on the GPU where there is one.
Prints one line per workload; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset] [--pytorch]
"""
import importlib.util
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

TASK = "paged_attention_decode"


def load(w, label, name, dtype=torch.float64):
    return torch.from_numpy(w.load(label, name)).to(dtype)


def bf16_round(t64):
    """Round float64 to bf16 values once (8 significant bits, ties to even), without the double
    rounding of a pass through float32. Zero stays zero."""
    m, e = torch.frexp(t64)
    return torch.ldexp(torch.round(torch.ldexp(m, torch.full_like(e, 8))), e - 8)


def attention64(q, kc, vc, bt, lens, scale):
    """o [B, Hq, D] in float64 by gather + masked softmax."""
    B, Hq, D = q.shape
    _, page, Hkv, _ = kc.shape
    P = bt.shape[1]
    S = P * page
    G = Hq // Hkv
    k = kc[bt.long()].reshape(B, S, Hkv, D)  # [B, S, Hkv, D], no copy per query head
    v = vc[bt.long()].reshape(B, S, Hkv, D)
    s = torch.einsum("bgxd,bsgd->bgxs", q.reshape(B, Hkv, G, D), k) * scale
    mask = torch.arange(S)[None, :] < lens[:, None]
    s = s.masked_fill(~mask[:, None, None, :], float("-inf"))
    p = torch.softmax(s, dim=-1)
    return bf16_round(torch.einsum("bgxs,bsgd->bgxd", p, v).reshape(B, Hq, D))


def rel_l2(a, e):
    # relative to the golden; the absolute norm where the golden is all zero
    return golden.rel_l2(a, e) if float(e.norm()) else float((a - e).norm())


def run_pytorch_program(dataset, inputs, scale, page, device):
    spec = importlib.util.spec_from_file_location("paged_pytorch", os.path.join(dataset, TASK, "pytorch.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    q, kc, vc, bt, lens = inputs
    o = torch.empty(q.shape, dtype=torch.bfloat16, device=device)
    mod.run(q.to(torch.bfloat16).to(device), kc.to(torch.bfloat16).to(device), vc.to(torch.bfloat16).to(device),
            bt.to(torch.int32).to(device), lens.to(torch.int32).to(device), o, scale, page)
    return o.cpu().double()


def main():
    ap = golden.parser(dataset=True)
    ap.add_argument("--pytorch", action="store_true",
                    help="also judge the task's pytorch.py (the torch targets' program) against the golden")
    a = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tol = float(golden.definition(a.dataset, TASK)["outputs"]["o"]["compare"]["tol"])
    scalars, default = golden.scalar_values(a.dataset, TASK)
    report = golden.Report()
    for w in golden.workloads(a.dump, TASK, "o"):
        scale = float(scalars.get(w.uuid, default)["scale"])
        q, kc, vc = (load(w, "input", n_) for n_ in ("q", "k_cache", "v_cache"))
        bt = load(w, "input", "block_table", torch.int64)
        lens = load(w, "input", "seq_lens", torch.int64)
        expected = load(w, golden.GOLDEN, "o")
        ours = attention64(q, kc, vc, bt, lens, scale)
        err = rel_l2(ours, expected)
        ok = err <= tol
        parts = [f"torch float64 vs golden rel_l2 {err:.3g}"]
        for label in w.targets("o"):
            e = rel_l2(load(w, label, "o"), expected)
            ok &= e <= tol
            parts.append(f"{label} {e:.3g}")
        if a.pytorch:
            e = rel_l2(run_pytorch_program(a.dataset, (q, kc, vc, bt, lens), scale, kc.shape[1], device), expected)
            ok &= e <= tol
            parts.append(f"pytorch.py {e:.3g}")
        report.line(w.uuid, ok, ", ".join(parts) + f" (tol {tol})")
    report.finish("agree with PyTorch float64")


if __name__ == "__main__":
    main()
