"""PyTorch timings of softmax_cross_entropy fwd+bwd at the bench workloads, for the naive-vs-eager
ratio and the expert's speed-up over PyTorch.

The program (as a training step runs it on the output layer's logits):
  x = logits.detach().requires_grad_()                       # bf16 [T, V]
  loss = F.cross_entropy(x.float(), targets, reduction="none", ignore_index=-100)
  loss.backward(torch.full_like(loss, 1 / T))                 # dlogits = x.grad (bf16)
eager, and with --compile also torch.compile of the forward (AOTAutograd compiles the backward).
Timing: cold L2 (a 256 MB buffer zeroed before each sample), CUDA events, median of N samples.
Usage: python3 torch_eager.py [--samples N] [--compile] [--csv FILE]
"""
import argparse
import statistics

import torch
import torch.nn.functional as F

SHAPES = [("llama3", 4096, 128256), ("qwen2.5", 8192, 151936), ("gemma", 1024, 262144)]
COPY_BW = 4.26e12  # bytes/s: the copy bandwidth d2k calibrated on the H200 (docs/results/calibrate-2026-11-29.md)


def forward(x, y):
    return F.cross_entropy(x.float(), y, reduction="none", ignore_index=-100)


def make_step(fwd):
    """fwd + bwd; with torch.compile the forward is compiled and AOTAutograd compiles its backward."""
    def step(x, y, g):
        loss = fwd(x, y)
        loss.backward(g)
        return loss
    return step


step = make_step(forward)


def time_cold(fn, samples, warmup=3):
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
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--csv", default="")
    a = ap.parse_args()
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    gen = torch.Generator(device="cuda").manual_seed(1)
    rows = []
    variants = [("torch_eager", step)]
    if a.compile:
        variants.append(("torch_compile", make_step(torch.compile(forward))))
    for name, T, V in SHAPES:
        logits = (3 * torch.randn(T, V, device="cuda", generator=gen)).to(torch.bfloat16)
        y = torch.randint(0, V, (T,), device="cuda", generator=gen)
        g = torch.full((T,), 1.0 / T, device="cuda")
        x = logits.clone().requires_grad_()
        bytes_ = 4 * T * V + 12 * T
        sol_us = bytes_ / COPY_BW * 1e6
        for vname, fn in variants:
            def call():
                x.grad = None
                fn(x, y, g)
            med, p10, p90 = time_cold(call, a.samples)
            rows.append((f"{name} {T}x{V}", vname, med, p10, p90, 100 * sol_us / med))
        if T == 4096:
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                x.grad = None
                step(x, y, g)
                torch.cuda.synchronize()
            kernels = [ev.name for ev in prof.events() if ev.device_type == torch.autograd.DeviceType.CUDA]
            print(f"  eager: {len(kernels)} kernels: " + "; ".join(k[:60] for k in kernels))
        del x, logits
        torch.cuda.empty_cache()
    print("| workload | program | median us | p10 | p90 | %SOL (4TV+12T B at 4.26 TB/s) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.1f} | {r[3]:.1f} | {r[4]:.1f} | {r[5]:.1f} |")
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("workload,program,median_us,p10_us,p90_us,pct_sol\n")
            for r in rows:
                f.write(",".join(str(v) for v in r) + "\n")


if __name__ == "__main__":
    main()
