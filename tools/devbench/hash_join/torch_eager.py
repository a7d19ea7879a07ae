"""PyTorch eager hash_join (sort + searchsorted + boolean gather), timed like the devbench driver.

What a PyTorch user writes for a PK-FK join: sort the build keys, binary-search every probe key,
keep the rows whose key was found. Timed with triton.testing.do_bench (median, L2 cleared before
every repetition) at the bench workloads of dataset/hash_join/workloads.jsonl, with the same key
distributions (generated here on the device, not bit-identical to the driver's).

    python3 tools/devbench/hash_join/torch_eager.py
"""
import torch
import triton.testing

COPY_BW = 4.3e12
MATCH_RATE = 0.5
M = 1 << 20
I31 = 1 << 31


def build_keys(kind, r, g):
    """Distinct int32 keys: R of [0, k*R) ("range2", "range4") or of [-2^30, 2^30) ("wide")."""
    if kind.startswith("range"):
        p = torch.randperm(int(kind[5]) * r, device="cuda", generator=g)
        return p[:r].to(torch.int32), p[r:]
    # wide: x -> (x * odd) mod 2^31 is a bijection, so distinct x give distinct keys.
    x = torch.randperm(r, device="cuda", generator=g).to(torch.int64)
    return (((x * 2654435761) % I31) - (1 << 30)).to(torch.int32), None


def probe_keys(kind, bk, rest, s, g):
    r = bk.numel()
    hit = torch.rand(s, device="cuda", generator=g) < MATCH_RATE
    matched = bk[torch.randint(0, r, (s,), device="cuda", generator=g)]
    if kind.startswith("range"):
        miss = rest[torch.randint(0, rest.numel(), (s,), device="cuda", generator=g)]
    else:
        x = torch.randint(r, I31, (s,), device="cuda", generator=g, dtype=torch.int64)
        miss = ((x * 2654435761) % I31) - (1 << 30)
    return torch.where(hit, matched, miss.to(torch.int32)), int(hit.sum())


def join(bk, bp, pk, pp):
    sk, idx = torch.sort(bk)
    pos = torch.searchsorted(sk, pk)
    pos.clamp_(max=bk.numel() - 1)
    m = sk[pos] == pk
    ob = bp[idx[pos[m]]]
    op = pp[m]
    return ob, op, m.sum()


def main():
    g = torch.Generator(device="cuda")
    g.manual_seed(1234)
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    rows = []
    for name, kind, r, s in [
        ("bench-r1m-s100m-range2x", "range2", M, 100_000_000),
        ("bench-r1m-s100m-wide", "wide", M, 100_000_000),
        ("bench-r64m-s256m-range4x", "range4", 64 * M, 256 * M),
        ("bench-r4096-s100m-range2x", "range2", 4096, 100_000_000),
    ]:
        bk, rest = build_keys(kind, r, g)
        bp = torch.randint(-I31, I31 - 1, (r,), device="cuda", generator=g, dtype=torch.int64).to(torch.int32)
        pk, expected = probe_keys(kind, bk, rest, s, g)
        pp = torch.randint(-I31, I31 - 1, (s,), device="cuda", generator=g, dtype=torch.int64).to(torch.int32)
        del rest
        ob, op, cnt = join(bk, bp, pk, pp)
        assert int(cnt) == expected == ob.numel() == op.numel(), (int(cnt), expected)
        del ob, op
        ms = triton.testing.do_bench(lambda: join(bk, bp, pk, pp), warmup=50, rep=400, return_mode="median")
        nbytes = 4 * (2 * r + 2 * s) + 8 * MATCH_RATE * s + 8
        rows.append((name, ms * 1e3, nbytes / (ms * 1e-3) / 1e9, 100 * nbytes / COPY_BW / (ms * 1e-3)))
        print(f"{name}: {ms * 1e3:.1f} us", flush=True)
        del bk, bp, pk, pp
        torch.cuda.empty_cache()
    print("\n| workload | torch eager median us | GB/s | % SOL |")
    print("| --- | ---: | ---: | ---: |")
    for n, us, gbs, sol in rows:
        print(f"| {n} | {us:.1f} | {gbs:.0f} | {sol:.1f} |")


if __name__ == "__main__":
    main()
