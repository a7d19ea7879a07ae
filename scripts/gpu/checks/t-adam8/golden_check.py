"""Independent cross-check of adam_8bit_blockwise's golden (reference.cpp) with PyTorch float64 on
the inputs `d2k check --dump DIR` wrote: for every dumped workload, one 8-bit blockwise Adam step
computed here in float64 torch ops (the maps from create_dynamic_map's definition, rounded to
fp32; nearest codes by torch.searchsorted over the midpoints) must agree with expected.* and with
the dumped target's outputs (e.g. the expert) under the task's rules: param_out allclose (atol
5e-8, rtol 3e-6; the workload's own atol where it overrides), absmaxes to rtol 1e-6, codes within
one index everywhere and equal in 99.9% of the elements.
Prints one line per workload; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

TASK = "adam_8bit_blockwise"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))


def dynamic_map(signed):
    data = []
    for i in range(7):
        f = 2 ** i if signed else 2 ** (i + 1)
        b = [0.1 + 0.9 * k / f for k in range(f + 1)]
        means = [(b[k] + b[k + 1]) / 2 for k in range(f)]
        data += [10.0 ** (i - 6) * x for x in means]
        if signed:
            data += [-(10.0 ** (i - 6)) * x for x in means]
    data += [0.0, 1.0]
    return torch.tensor(sorted(data), dtype=torch.float64).float().double()


def workload_info(uuid):
    scal = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01, "step": 500}
    atol = 5e-8
    for w in golden.workload_lines(os.path.join(ROOT, "dataset"), TASK):
        if w["uuid"] == uuid:
            scal.update(w.get("scalars", {}))
            atol = w.get("compare", {}).get("param_out", {}).get("atol", atol)
    return scal, atol


def step(inp, s):
    cm, cv = dynamic_map(True), dynamic_map(False)
    n, nb = inp["param"].numel(), inp["m_absmax"].numel()
    blk = torch.arange(n) // 256
    g = inp["grad"].double()
    m = cm[inp["m_q"].long()] * inp["m_absmax"].double()[blk]
    v = cv[inp["v_q"].long()] * inp["v_absmax"].double()[blk]
    m = s["beta1"] * m + (1 - s["beta1"]) * g
    v = s["beta2"] * v + (1 - s["beta2"]) * g * g
    bc2 = math.sqrt(1 - s["beta2"] ** s["step"])
    p = (inp["param"].double() - s["lr"] * bc2 / (1 - s["beta1"] ** s["step"]) * m / (v.sqrt() + bc2 * s["eps"]))
    p = p * (1 - s["lr"] * s["weight_decay"])
    ma = torch.zeros(nb, dtype=torch.float64).scatter_reduce(0, blk, m.abs(), "amax")
    va = torch.zeros(nb, dtype=torch.float64).scatter_reduce(0, blk, v, "amax")
    ma32, va32 = ma.float().double(), va.float().double()

    def codes(x, a, code, zero):
        mids = (code[:-1] + code[1:]) / 2
        q = torch.searchsorted(mids, x / torch.where(a > 0, a, 1.0)[blk], right=True)
        return torch.where(a[blk] > 0, q, torch.full_like(q, zero))

    return {"param_out": p, "m_absmax_out": ma, "v_absmax_out": va,
            "m_q_out": codes(m, ma32, cm, 127), "v_q_out": codes(v, va32, cv, 0)}


def disagreements(got, ref, atol):
    bad = []
    d = (got["param_out"] - ref["param_out"]).abs()
    if bool(((d > atol) & (d > 3e-6 * ref["param_out"].abs())).any()):
        bad.append(f"param_out off by up to {float(d.max()):.3g}")
    for k in ("m_absmax_out", "v_absmax_out"):
        d = (got[k] - ref[k]).abs()
        if bool((d > 1e-6 * ref[k].abs()).any()):
            bad.append(f"{k} off by up to {float((d / ref[k].abs().clamp_min(1e-300)).max()):.3g} relative")
    for k in ("m_q_out", "v_q_out"):
        d = (got[k].long() - ref[k].long()).abs()
        if int(d.max()) > 1 or int((d > 0).sum()) > math.floor(0.001 * d.numel() + 1e-9):
            bad.append(f"{k}: {int((d > 0).sum())} of {d.numel()} differ, max {int(d.max())}")
    return bad


def main():
    a = golden.parse_args()
    report = golden.Report()
    names_in = ["param", "grad", "m_q", "v_q", "m_absmax", "v_absmax"]
    names_out = ["param_out", "m_q_out", "v_q_out", "m_absmax_out", "v_absmax_out"]
    for w in golden.workloads(a.dump, TASK, "param_out"):
        s, atol = workload_info(w.uuid)
        inp = {k: torch.from_numpy(w.input(k).reshape(-1)) for k in names_in}
        ref = step(inp, s)
        labels = w.targets("param_out")
        problems = []
        for label in w.labels("param_out"):
            got = {k: torch.from_numpy(w.load(label, k).reshape(-1)) for k in names_out}
            got = {k: (t.double() if t.is_floating_point() else t.long()) for k, t in got.items()}
            bad = disagreements(got, ref, atol)
            if bad:
                problems.append(f"{label}: {'; '.join(bad)}")
        report.line(w.uuid, not problems, f"N={inp['param'].numel()}"
                    + (f"; {' | '.join(problems)}" if problems else f"; expected and {', '.join(labels) or 'no target'} agree with torch float64"))
    report.finish("agree with a PyTorch float64 step")


if __name__ == "__main__":
    main()
