"""PyTorch eager timing of the muon_optimizer_step computation (the bar naive is compared with).

Same formula as dataset/muon_optimizer_step/spec.md, written the way the reference Muon
implementation is (zeropower_via_newtonschulz5 in bf16). Cold-L2 median over samples with CUDA
events. Usage: python3 torch_eager.py [samples]
"""
import sys

import torch

A_, B_, C_ = 3.4445, -4.7750, 2.0315
LR, BETA, WD, EPS = 0.02, 0.95, 0.1, 1e-7
WORKLOADS = [("muon-4096x4096", 1, 4096, 4096), ("muon-4096x14336", 1, 4096, 14336),
             ("muon-16x1024x1024", 16, 1024, 1024), ("muon-8192x8192", 1, 8192, 8192)]


def muon_step(param, grad, mom):
    mom_out = mom * BETA + grad
    u = grad + BETA * mom_out
    x = u.bfloat16()
    tall = x.size(-2) > x.size(-1)
    if tall:
        x = x.mT
    x = x / (x.norm(dim=(-2, -1), keepdim=True) + EPS)
    for _ in range(5):
        a = x @ x.mT
        b = B_ * a + C_ * a @ a
        x = A_ * x + b @ x
    if tall:
        x = x.mT
    update = x * max(1.0, param.size(-2) / param.size(-1)) ** 0.5
    param_out = param * (1 - LR * WD) - LR * update
    return mom_out, update, param_out


def main():
    samples = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    torch.manual_seed(0)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    print(f"{'workload':24s} {'torch_eager_us':>15s} {'p10':>10s} {'p90':>10s}")
    for name, b, m, n in WORKLOADS:
        param = torch.randn(b, m, n, device="cuda")
        grad = torch.randn(b, m, n, device="cuda").bfloat16()
        mom = torch.randn(b, m, n, device="cuda")
        for _ in range(2):
            muon_step(param, grad, mom)
        torch.cuda.synchronize()
        times = []
        for _ in range(samples):
            flush.zero_()
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
            muon_step(param, grad, mom)
            e1.record()
            e1.synchronize()
            times.append(e0.elapsed_time(e1) * 1e3)
        times.sort()
        med = times[len(times) // 2]
        print(f"{name:24s} {med:15.1f} {times[len(times) // 10]:10.1f} {times[(9 * len(times)) // 10]:10.1f}")
        del param, grad, mom
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
