"""Independent cross-check of rope_qk_norm's fp64 golden (reference.cpp) with PyTorch float64 on
the inputs `d2k check --dump DIR` wrote: for every dumped check workload, the per-head RMSNorm and
the neox rotation are recomputed in float64 with torch ops (a different program from
reference.cpp's loops) and compared with expected.q / expected.k / expected.v under the task's
rules (definition.json). Prints one line per workload with the largest errors; exit status 1 if
any workload disagrees.
With --pytorch, the task's pytorch.py (what the torch_eager target runs) is judged on the same
inputs too, on the GPU where there is one.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset] [--pytorch]
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

TASK = "rope_qk_norm"


def load(w, label, name):
    return torch.from_numpy(w.load(label, name)).to(torch.float64)


def bf16_round(t64):
    """Round float64 to bf16 values once (8 significant bits, ties to even), without the double
    rounding of a pass through float32. Normal range only, which covers every output here."""
    m, e = torch.frexp(t64)
    return torch.ldexp(torch.round(torch.ldexp(m, torch.full_like(e, 8))), e - 8)


def run_pytorch_program(dataset, w, device):
    """The task's pytorch.py on the dumped inputs (bf16 tensors as d2k passes them): its q, k, v."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("rope_pytorch", os.path.join(dataset, TASK, "pytorch.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    t = lambda name, dt: load(w, "input", name).to(dt).to(device)
    qkv = t("qkv", torch.bfloat16)
    q = torch.empty(w.load(golden.GOLDEN, "q").shape, dtype=torch.bfloat16, device=device)
    k = torch.empty(w.load(golden.GOLDEN, "k").shape, dtype=torch.bfloat16, device=device)
    v = torch.empty_like(k)
    pos = torch.from_numpy(w.input("positions")).to(torch.int64).to(device)
    mod.run(qkv, t("q_norm_weight", torch.bfloat16), t("k_norm_weight", torch.bfloat16), pos,
            t("cos_sin_cache", torch.float32), q, k, v, 1e-6)
    return {"q": q.cpu().double(), "k": k.cpu().double(), "v": v.cpu().double()}


def judge(actual, expected, cmp):
    """(passed, mismatches, max |err|) under the task's rule for this output."""
    err = (actual - expected).abs()
    if cmp["rule"] == "exact":
        bad = int((err != 0).sum())
        return bad == 0, bad, float(err.max()) if err.numel() else 0.0
    bad = (err > cmp.get("atol", 0)) & (err > cmp.get("rtol", 0) * expected.abs())
    n_bad = int(bad.sum())
    allowed = math.floor((1 - cmp.get("matched_ratio", 1.0)) * err.numel())
    max_err = float(err.max()) if err.numel() else 0.0
    cap = cmp.get("max_error_cap", 0)
    ok = n_bad <= allowed and (cap == 0 or max_err <= cap) and bool(torch.isfinite(actual).all())
    return ok, n_bad, max_err


def norm_rope(x, w, cos, sin, eps):
    """x [T, H, D] float64; cos, sin [T, 1, D/2]."""
    n = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
    x1, x2 = n.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def main():
    ap = golden.parser(dataset=True)
    ap.add_argument("--pytorch", action="store_true",
                    help="also judge the task's pytorch.py (the torch targets' program) against the golden")
    a = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    d = golden.definition(a.dataset, TASK)
    cmp = {k: v["compare"] for k, v in d["outputs"].items()}
    eps = float(d["scalars"]["eps"]["value"])
    report = golden.Report()
    for w in golden.workloads(a.dump, TASK, "q"):
        qkv = load(w, "input", "qkv")
        exp = {o: load(w, golden.GOLDEN, o) for o in ("q", "k", "v")}
        T, Hq, D = exp["q"].shape
        Hkv = exp["k"].shape[1]
        pos = torch.from_numpy(w.input("positions")).to(torch.int64)
        cs = load(w, "input", "cos_sin_cache")[pos].unsqueeze(1)
        cos, sin = cs[..., : D // 2], cs[..., D // 2:]
        qs, ks, vs = qkv.split([Hq * D, Hkv * D, Hkv * D], dim=-1)
        got = {
            "q": bf16_round(norm_rope(qs.reshape(T, Hq, D), load(w, "input", "q_norm_weight"), cos, sin, eps)),
            "k": bf16_round(norm_rope(ks.reshape(T, Hkv, D), load(w, "input", "k_norm_weight"), cos, sin, eps)),
            "v": vs.reshape(T, Hkv, D),
        }
        parts, ok_all = [], True
        for o in ("q", "k", "v"):
            ok, bad, err = judge(got[o], exp[o], cmp[o])
            ok_all &= ok
            parts.append(f"{o} max|err| {err:.3g} ({bad} over tol)")
        if a.pytorch:
            prog = run_pytorch_program(a.dataset, w, device)
            for o in ("q", "k", "v"):
                ok, bad, err = judge(prog[o], exp[o], cmp[o])
                ok_all &= ok
                parts.append(f"pytorch.py {o} max|err| {err:.3g} ({bad} over tol)")
        report.line(w.uuid, ok_all, ", ".join(parts))
    report.finish("agree with PyTorch float64")


if __name__ == "__main__":
    main()
