"""Independent cross-check of fused_adamw's fp64 golden (reference.cpp) with PyTorch float64 on the
inputs `d2k check --dump DIR` wrote: for every dumped workload the flat float64 buffers are cut
into the segment views the offsets give, torch.nn.utils.clip_grad_norm_ (foreach=False) clips
their grads and torch.optim.AdamW (foreach=False, fused=False) steps them from the dumped state
(step count set to step - 1: the optimizer counts this step); the results are rounded to fp32 (and
the bf16 copy from that fp32) and compared with the expected outputs under the task's rules
(definition.json with the workload's overrides). Prints one line per workload with the largest
errors; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR [--dataset dataset]
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

TASK = "fused_adamw"
OUTS = ("param_out", "m_out", "v_out", "param_bf16_out")


def workloads(dataset):
    rules, _ = golden.compare_rules(dataset, TASK)
    scalars, _ = golden.scalar_values(dataset, TASK)
    return {uuid: ({o: rules[uuid][o] for o in OUTS}, scalars[uuid]) for uuid in rules}


def torch_step(w, s):
    load = lambda n: torch.from_numpy(w.input(n)).to(torch.float64)
    param, grad, m, v = (load(n) for n in ("param", "grad", "m", "v"))
    bounds = w.input("offsets").tolist()
    params = [torch.nn.Parameter(param[a:b].clone()) for a, b in zip(bounds[:-1], bounds[1:])]
    for p, a, b in zip(params, bounds[:-1], bounds[1:]):
        p.grad = grad[a:b].clone()
    torch.nn.utils.clip_grad_norm_(params, s["max_norm"], foreach=False)
    opt = torch.optim.AdamW(params, lr=s["lr"], betas=(s["beta1"], s["beta2"]), eps=s["eps"],
                            weight_decay=s["weight_decay"], foreach=False, fused=False)
    for p, a, b in zip(params, bounds[:-1], bounds[1:]):
        opt.state[p] = {"step": torch.tensor(float(s["step"] - 1), dtype=torch.float64),
                        "exp_avg": m[a:b].clone(), "exp_avg_sq": v[a:b].clone()}
    opt.step()
    p_new = torch.cat([p.detach() for p in params])
    m_new = torch.cat([opt.state[p]["exp_avg"] for p in params])
    v_new = torch.cat([opt.state[p]["exp_avg_sq"] for p in params])
    p32 = p_new.to(torch.float32)
    return {"param_out": p32.to(torch.float64), "m_out": m_new.to(torch.float32).to(torch.float64),
            "v_out": v_new.to(torch.float32).to(torch.float64),
            "param_bf16_out": p32.to(torch.bfloat16).to(torch.float64)}


def bf16_ulp(e):
    # spacing of bf16 at |e|: 2^(exponent - 7), subnormal spacing 2^-133 below 2^-126
    _, ex = torch.frexp(e.abs().clamp(min=2.0 ** -126))
    return torch.ldexp(torch.ones_like(e), (ex - 8).to(torch.int32))


def judge(out, ours, exp, rule):
    err = (ours - exp).abs()
    n = err.numel()
    if rule["rule"] == "allclose":
        over = (err > rule.get("atol", 0.0)) & (err > rule.get("rtol", 0.0) * exp.abs())
        ok = int(over.sum()) <= int((1 - rule.get("matched_ratio", 1.0)) * n)
        return ok, f"{out} max|err| {float(err.max()):.3g} over {int(over.sum())}"
    ulps = err / bf16_ulp(exp)
    over = int((ulps > rule["ulps"]).sum())
    ok = over <= int((1 - rule.get("matched_ratio", 1.0)) * n) and float(ulps.max()) <= rule.get("max_ulps", 1e30)
    return ok, f"{out} max {float(ulps.max()):.3g} ulp, {over} off"


def main():
    a = golden.parse_args(dataset=True)
    per = workloads(a.dataset)
    report = golden.Report()
    for w in golden.workloads(a.dump, TASK, "param_out"):
        if w.uuid not in per:
            continue
        rules, scalars = per[w.uuid]
        ours = torch_step(w, scalars)
        ok_all, notes = True, []
        for o in OUTS:
            exp = torch.from_numpy(w.load(golden.GOLDEN, o)).to(torch.float64)
            ok, note = judge(o, ours[o], exp, rules[o])
            ok_all &= ok
            notes.append(note)
        report.line(w.uuid, ok_all, "; ".join(notes))
    report.finish("agree with PyTorch float64")


if __name__ == "__main__":
    main()
