"""The PyTorch bars of layernorm_backward at the bench shapes, timed outside d2k (cold L2: a 256 MB
buffer zeroed before each sample; CUDA events; median of N samples):
  aten_bf16   aten::native_layer_norm_backward with dy, x and gamma all bf16 (what a pure-bf16
              model runs; dgamma/dbeta come out in bf16, so it does less than the task asks);
  aten_fp32   pytorch.py's program: dy and x upcast, the fp32 kernel, dx cast back to bf16.
% of SOL uses the task's bytes, 6TH + 8T + 12H, at the calibrated copy bandwidth.
Usage: python3 aten_bars.py [--samples N]
"""
import argparse
import statistics

import torch

SHAPES = [("opt6.7b", 16384, 4096), ("falcon40b", 8192, 8192), ("bertlarge", 65536, 1024),
          ("gptneox20b", 16384, 6144)]
COPY_BW = 4.26e12  # bytes/s: d2k's calibrated copy bandwidth on the H200


def time_cold(fn, samples, warmup=3):
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        flush.zero_()
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(samples):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=20)
    a = ap.parse_args()
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    bw = torch.ops.aten.native_layer_norm_backward
    print("| workload | program | median us | %SOL |")
    print("| --- | --- | --- | --- |")
    for name, T, H in SHAPES:
        dy = torch.randn(T, H, device="cuda").to(torch.bfloat16)
        x = torch.randn(T, H, device="cuda").to(torch.bfloat16)
        mean = 0.03 * torch.randn(T, 1, device="cuda")
        rstd = torch.rand(T, 1, device="cuda") * 0.1 + 0.95
        gamma = torch.rand(H, device="cuda") + 0.5
        g16 = gamma.to(torch.bfloat16)
        dx = torch.empty_like(x)
        sol_us = (6 * T * H + 8 * T + 12 * H) / COPY_BW * 1e6
        progs = {
            "aten_bf16": lambda: bw(dy, x, [H], mean, rstd, g16, g16, [True, True, True]),
            "aten_fp32": lambda: dx.copy_(bw(dy.float(), x.float(), [H], mean, rstd, gamma, gamma,
                                             [True, True, True])[0]),
        }
        for prog, fn in progs.items():
            med = time_cold(fn, a.samples)
            print(f"| {name} {T}x{H} | {prog} | {med:.1f} | {100 * sol_us / med:.1f} |")
        del dy, x, dx
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
