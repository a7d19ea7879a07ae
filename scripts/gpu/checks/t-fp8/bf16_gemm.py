"""The comparison issue #16 states fp8_blockwise_gemm's target against: a bf16 cuBLAS GEMM of the
same shape, C[M, N] = A[M, K] · B[N, K]ᵀ (torch.matmul on bf16 operands, cuBLAS underneath, fp32
accumulation), timed with CUDA events under a cold L2 (a 512 MB buffer is rewritten before every
timed call, as d2k's cold-L2 timing does), median of 30 calls. A bf16 GEMM is not an
implementation of the task (it ignores the fp8 operands and scales), so it is measured here and
not as a d2k target.

With --bench BENCH.jsonl (d2k bench --json of the expert and naive targets) it also prints, per
bench workload, expert vs bf16 cuBLAS and expert vs naive with the issue's targets (>= 1.5x bf16
cuBLAS on the two large shapes, >= 3x naive on all three).
Usage: python3 bf16_gemm.py [--bench BENCH.jsonl] [--dataset dataset] [--json OUT.jsonl]
"""
import argparse
import json
import os
import statistics

import torch

TASK = "fp8_blockwise_gemm"
LARGE = {(8192, 7168, 2048), (4096, 24576, 1536)}


def bench_shapes(dataset):
    out = []
    for line in open(os.path.join(dataset, TASK, "workloads.jsonl")):
        if line.strip():
            w = json.loads(line)
            if w["role"] == "bench":
                out.append((w["uuid"], w["axes"]["M"], w["axes"]["N"], w["axes"]["K"]))
    return out


def time_bf16(M, N, K, reps=30):
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16, generator=g)
    c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    flush = torch.empty(512 << 20, device="cuda", dtype=torch.uint8)
    for _ in range(3):
        torch.matmul(a, b.t(), out=c)
    times = []
    for _ in range(reps):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.matmul(a, b.t(), out=c)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(times)


def medians(path):
    med = {}
    if path and os.path.exists(path):
        for line in open(path):
            if not line.strip():
                continue
            r = json.loads(line)
            perf = r.get("performance")
            if perf and r.get("status") == "PASSED" and r["workload"]["role"] == "bench":
                med[(r["target"], r["workload"]["uuid"])] = perf["median_us"]
    return med


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench")
    ap.add_argument("--dataset", default="dataset")
    ap.add_argument("--json")
    a = ap.parse_args()
    med = medians(a.bench)
    rows = []
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for uuid, M, N, K in bench_shapes(a.dataset):
        t = time_bf16(M, N, K)
        tflops = 2.0 * M * N * K / (t * 1e-6) / 1e12
        row = {"workload": uuid, "M": M, "N": N, "K": K, "bf16_cublas_median_us": t, "bf16_tflops": tflops}
        line = f"{uuid}: bf16 cuBLAS {t:.1f} us ({tflops:.0f} TFLOP/s)"
        exp, naive = med.get(("expert", uuid)), med.get(("naive", uuid))
        if exp:
            row["expert_median_us"] = exp
            ratio = t / exp
            row["expert_vs_bf16"] = ratio
            line += f"; expert {exp:.1f} us, expert vs bf16 cuBLAS {ratio:.2f}x"
            if (M, N, K) in LARGE:
                line += " (target >= 1.5: " + ("met" if ratio >= 1.5 else "SHORT") + ")"
            if naive:
                row["expert_vs_naive"] = naive / exp
                line += f", expert vs naive {naive / exp:.2f}x (target >= 3: " + ("met" if naive / exp >= 3 else "SHORT") + ")"
        print(line)
        rows.append(row)
    if a.json:
        with open(a.json, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
