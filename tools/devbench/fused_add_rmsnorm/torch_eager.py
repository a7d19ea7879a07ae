"""PyTorch eager timings of fused_add_rmsnorm at the bench workloads, for the naive-vs-eager ratio.

Two eager formulations:
  composite  the Llama-style module written out: h = x + r; var = h.float().pow(2).mean(-1);
             out = weight * (h.float() * rsqrt(var + eps)).to(bf16)
  rms_norm   h = x + r; out = F.rms_norm(h, (H,), weight, eps)
Timing: cold L2 (a 256 MB buffer zeroed before each sample), CUDA events, median of N samples.
Usage: python3 torch_eager.py [--samples N] [--csv FILE]
"""
import argparse
import statistics

import torch
import torch.nn.functional as F

SHAPES = [(4096, 4096), (16384, 8192), (128, 7168), (32768, 5120)]
EPS = 1e-6
COPY_BW = 4.3e12


def composite(x, r, w):
    h = x + r
    hf = h.float()
    var = hf.pow(2).mean(-1, keepdim=True)
    return w * (hf * torch.rsqrt(var + EPS)).to(torch.bfloat16), h


def rms_norm(x, r, w):
    h = x + r
    return F.rms_norm(h, (h.shape[-1],), w, EPS), h


def time_cold(fn, samples, warmup=5):
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        flush.zero_()
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(samples):
        flush.zero_()
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    times.sort()
    return statistics.median(times), times[len(times) // 10], times[(len(times) * 9) // 10]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--csv", default="")
    a = ap.parse_args()
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    g = torch.Generator(device="cuda").manual_seed(1)
    rows = []
    for T, H in SHAPES:
        x = torch.randn(T, H, device="cuda", generator=g).to(torch.bfloat16)
        r = torch.randn(T, H, device="cuda", generator=g).to(torch.bfloat16)
        w = (torch.rand(H, device="cuda", generator=g) + 0.5).to(torch.bfloat16)
        o1, h1 = composite(x, r, w)
        o2, h2 = rms_norm(x, r, w)
        diff = (o1.float() - o2.float()).abs().max().item()
        bytes_ = 2 * (2 * T * H + H) + 4 * T * H
        sol_us = bytes_ / COPY_BW * 1e6
        for name, fn in (("composite", lambda: composite(x, r, w)), ("rms_norm", lambda: rms_norm(x, r, w))):
            med, p10, p90 = time_cold(fn, a.samples)
            rows.append((f"{T}x{H}", name, med, p10, p90, bytes_ / (med * 1e-6) / 1e9, 100 * sol_us / med))
        print(f"{T}x{H}: max |composite - rms_norm| = {diff:.4g}")
        if T == 4096:
            for name, fn in (("composite", lambda: composite(x, r, w)), ("rms_norm", lambda: rms_norm(x, r, w))):
                with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                    fn()
                    torch.cuda.synchronize()
                kernels = [ev.name for ev in prof.events() if ev.device_type == torch.autograd.DeviceType.CUDA]
                print(f"  {name}: {len(kernels)} kernels: " + "; ".join(k[:70] for k in kernels))
    print("| workload (T x H) | torch eager | median us | p10-p90 us | GB/s | % of SOL |")
    print("| --- | --- | --- | --- | --- | --- |")
    for wl, name, med, p10, p90, gbs, sol in rows:
        print(f"| {wl} | {name} | {med:.2f} | {p10:.2f}-{p90:.2f} | {gbs:.0f} | {sol:.1f} |")
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("workload,impl,median_us,p10_us,p90_us,gbps,pct_sol\n")
            for row in rows:
                f.write(",".join(str(v) for v in row) + "\n")


if __name__ == "__main__":
    main()
