"""PyTorch timings of the TPC-H tasks' eager paths at the bench workloads, for the naive-vs-eager
ratio and the expert's speed-up over PyTorch.

Columns as the tasks store them (int32 l_shipdate, int64 fixed-point money and quantity), drawn
with TPC-H's domains (torch.randint; same distributions as the task's generator, other values).
Q6 program (masks + gather + sum):
  m = (d >= 8766) & (d < 9131) & (disc >= 5) & (disc <= 7) & (qty < 24)
  revenue = (price[m] * disc[m]).sum()
Q1 program (mask + index_add; the charge's int64 sum wraps at SF100, which does not change the time):
  m = ship <= 10471; g = 2 * ((flag == 'N') + 2 * (flag == 'R')) + (status == 'O')
  dp = price * (100 - disc); charge = dp * (100 + tax)
  sums = zeros(6, 6).index_add_(1, g[m], stack([qty, price, dp, charge, disc, ones])[:, m]); averages
Timing: cold L2 (a 256 MB buffer zeroed before each sample), CUDA events, median of N samples.
Usage: python3 torch_path.py [--samples N] [--queries q6,q1] [--csv FILE]
"""
import argparse
import statistics

import torch

SCALES = [("sf10", 60_000_000), ("sf100", 600_000_000)]
COPY_BW = 4.26e12  # bytes/s: the copy bandwidth d2k calibrated on the H200 (docs/results/calibrate-2026-11-29.md)


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


def lineitem(n, gen):
    order = 8035 + torch.randint(0, 2406, (n,), device="cuda", generator=gen, dtype=torch.int32)
    ship = order + 1 + torch.randint(0, 121, (n,), device="cuda", generator=gen, dtype=torch.int32)
    del order
    disc = torch.randint(0, 11, (n,), device="cuda", generator=gen, dtype=torch.int64)
    qty = torch.randint(1, 51, (n,), device="cuda", generator=gen, dtype=torch.int64)
    price = qty * torch.randint(90000, 209901, (n,), device="cuda", generator=gen, dtype=torch.int64)
    return ship, disc, qty, price


def q1_extra(ship, n, gen):
    """l_returnflag, l_linestatus (int8 ASCII) and l_tax for the Q1 program, from the dates."""
    receipt = ship + 1 + torch.randint(0, 30, (n,), device="cuda", generator=gen, dtype=torch.int32)
    ra = torch.where(torch.randint(0, 2, (n,), device="cuda", generator=gen, dtype=torch.int8) == 1, 82, 65)
    flag = torch.where(receipt <= 9298, ra, torch.full_like(ra, 78)).to(torch.int8)
    status = torch.where(ship > 9298, 79, 70).to(torch.int8)
    tax = torch.randint(0, 9, (n,), device="cuda", generator=gen, dtype=torch.int64)
    return flag, status, tax


def q1(flag, status, qty, price, disc, tax, ship):
    m = ship <= 10471
    g = (2 * ((flag == 78).long() + 2 * (flag == 82).long()) + (status == 79).long())[m]
    q, p, d, t = qty[m], price[m], disc[m], tax[m]
    dp = p * (100 - d)
    vals = torch.stack([q, p, dp, dp * (100 + t), d, torch.ones_like(q)])
    sums = torch.zeros(6, 6, dtype=torch.int64, device="cuda").index_add_(1, g, vals)
    avg = sums[[0, 1, 4]].double() / sums[5].clamp(min=1).double()
    return sums, avg


def q6(ship, disc, qty, price):
    m = (ship >= 8766) & (ship < 9131) & (disc >= 5) & (disc <= 7) & (qty < 24)
    return (price[m] * disc[m]).sum()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--queries", default="q6")
    ap.add_argument("--csv", default="")
    a = ap.parse_args()
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    gen = torch.Generator(device="cuda").manual_seed(1)
    rows = []
    for name, n in SCALES:
        cols = lineitem(n, gen)
        if "q6" in a.queries:
            ship, disc, qty, price = cols
            exact = int(q6(ship, disc, qty, price))
            # The same sum on the host's int64 from the kept rows only: the PyTorch path is exact.
            m = (ship >= 8766) & (ship < 9131) & (disc >= 5) & (disc <= 7) & (qty < 24)
            assert exact == int((price[m].cpu() * disc[m].cpu()).sum()), "torch q6 disagrees with itself"
            med, p10, p90 = time_cold(lambda: q6(ship, disc, qty, price), a.samples)
            sol_us = (28 * n + 8) / COPY_BW * 1e6
            rows.append((f"tpch_q6 {name}", "torch_eager", med, p10, p90, 100 * sol_us / med))
        if "q1" in a.queries:
            ship, disc, qty, price = cols
            flag, status, tax = q1_extra(ship, n, gen)
            # Per-row atomics on 36 addresses: seconds per call at SF100, so few samples.
            med, p10, p90 = time_cold(lambda: q1(flag, status, qty, price, disc, tax, ship), 3, warmup=1)
            sol_us = (38 * n + 6 * 72) / COPY_BW * 1e6
            rows.append((f"tpch_q1 {name}", "torch_eager", med, p10, p90, 100 * sol_us / med))
            del flag, status, tax
        del cols
        torch.cuda.empty_cache()
    print("| workload | program | median us | p10 | p90 | %SOL (at 4.26 TB/s) |")
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
