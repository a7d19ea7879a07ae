"""The comparison issue #16 states fp8_blockwise_gemm's target against: a bf16 cuBLAS GEMM of the
same shape, C[M, N] = A[M, K] · B[N, K]ᵀ (torch.matmul on bf16 operands, cuBLAS underneath, fp32
accumulation), timed with CUDA events under a cold L2 (a 512 MB buffer is rewritten before every
timed call, as d2k's cold-L2 timing does), median of 30 calls. A bf16 GEMM is not an
implementation of the task (it ignores the fp8 operands and scales), so it is measured here and
not as a d2k target.

With --bench BENCH.jsonl (d2k bench --json; repeatable, one file per d2k run, e.g. the bench step's
and the variants step's) it also prints, per bench workload, every target of every run (naive
aside) against bf16 cuBLAS, and against naive where naive is in the same run, with the issue's
targets (>= 1.5x bf16 cuBLAS on the two large shapes, >= 3x naive on all three). A file that does
not exist (a step not selected) is skipped.
Usage: python3 bf16_gemm.py [--bench BENCH.jsonl]... [--dataset dataset] [--json OUT.jsonl]
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


def target_order(target):
    """The expert first, then the library, then the variants (expert:NAME) by name."""
    return (0 if target == "expert" else 1 if target == "library" else 2, target)


def verdict(ratio, bar):
    return "met" if ratio >= bar else "SHORT"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", action="append", default=[])
    ap.add_argument("--dataset", default="dataset")
    ap.add_argument("--json")
    a = ap.parse_args()
    # One run per file: ratios against naive stay within the run that timed both.
    runs = [(os.path.splitext(os.path.basename(p))[0], medians(p)) for p in a.bench if os.path.exists(p)]
    rows = []
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for uuid, M, N, K in bench_shapes(a.dataset):
        t = time_bf16(M, N, K)
        tflops = 2.0 * M * N * K / (t * 1e-6) / 1e12
        row = {"workload": uuid, "M": M, "N": N, "K": K, "bf16_cublas_median_us": t, "bf16_tflops": tflops,
               "targets": {}}
        print(f"{uuid}: bf16 cuBLAS {t:.1f} us ({tflops:.0f} TFLOP/s)")
        for run, med in runs:
            naive = med.get(("naive", uuid))
            targets = sorted({tg for (tg, u) in med if u == uuid and tg != "naive"}, key=target_order)
            for tg in targets:
                us = med[(tg, uuid)]
                ratio = t / us
                entry = {"median_us": us, "vs_bf16": ratio}
                line = f"  {run}: {tg} {us:.1f} us, vs bf16 cuBLAS {ratio:.3f}x"
                if (M, N, K) in LARGE:
                    line += f" (target >= 1.5: {verdict(ratio, 1.5)})"
                if naive:
                    entry["vs_naive"] = naive / us
                    line += f", vs naive {naive / us:.3f}x (target >= 3: {verdict(naive / us, 3)})"
                row["targets"].setdefault(run, {})[tg] = entry
                # The first run's expert keeps the fields earlier results were read from.
                if tg == "expert" and "expert_median_us" not in row:
                    row["expert_median_us"] = us
                    row["expert_vs_bf16"] = ratio
                    if naive:
                        row["expert_vs_naive"] = naive / us
                print(line)
        rows.append(row)
    if a.json:
        with open(a.json, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
