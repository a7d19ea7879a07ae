"""Independent cross-check of groupby_aggregate's golden (reference.cpp) with PyTorch on the inputs
`d2k check --dump DIR` wrote: for every dumped workload, torch.unique(return_inverse) numbers the
groups, bincount counts them, scatter_reduce gives min and max, and the wrapping sum is a uint64
np.add.at (defined modulo 2^64, the task's rule). Rows [0, num_groups) of expected.out_* and of
every dumped target (`<target>.out_*.npy`, e.g. the expert), sorted by key, must equal them
exactly. Prints one line per workload; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR
"""
import argparse
import os
import sys

import numpy as np
import torch

TASK = "groupby_aggregate"
FIELDS = ("out_keys", "out_count", "out_sum", "out_min", "out_max")


def torch_groups(keys, values):
    uniq, inv = torch.unique(torch.from_numpy(keys), return_inverse=True)
    g = uniq.numel()
    vals = torch.from_numpy(values)
    count = torch.bincount(inv, minlength=g)
    mn = torch.zeros(g, dtype=torch.int64).scatter_reduce_(0, inv, vals, "amin", include_self=False)
    mx = torch.zeros(g, dtype=torch.int64).scatter_reduce_(0, inv, vals, "amax", include_self=False)
    s = np.zeros(g, dtype=np.uint64)
    np.add.at(s, inv.numpy(), values.view(np.uint64))
    return [uniq.numpy(), count.numpy(), s.view(np.int64), mn.numpy(), mx.numpy()]


def same_rows(label, d, want):
    path = os.path.join(d, f"{label}.num_groups.npy")
    if not os.path.exists(path):
        return None
    n = int(np.load(path).reshape(-1)[0])
    if n != want[0].size:
        return f"{label} num_groups {n} != {want[0].size}"
    cols = [np.load(os.path.join(d, f"{label}.{f}.npy"))[:n] for f in FIELDS]
    order = np.argsort(cols[0], kind="stable")
    for f, got, w in zip(FIELDS, cols, want):
        got = got[order]
        if not np.array_equal(got, w):
            bad = int(np.nonzero(got != w)[0][0])
            return f"{label} {f} differs at key {int(want[0][bad])}: {int(got[bad])} != {int(w[bad])}"
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    a = ap.parse_args()
    root = os.path.join(a.dump, TASK)
    n_ok = n = 0
    for uuid in sorted(os.listdir(root)):
        d = os.path.join(root, uuid)
        if not os.path.exists(os.path.join(d, "expected.num_groups.npy")):
            continue
        keys = np.load(os.path.join(d, "input.keys.npy")).astype(np.int64)
        values = np.load(os.path.join(d, "input.values.npy")).astype(np.int64)
        want = torch_groups(keys, values)
        labels = sorted({f.split(".")[0] for f in os.listdir(d) if f.endswith(".num_groups.npy")} - {"expected"})
        problems = [p for p in (same_rows(x, d, want) for x in ["expected"] + labels) if p]
        n += 1
        n_ok += not problems
        print(f"{'PASS' if not problems else 'FAIL'} {uuid}: {want[0].size} groups of {keys.size} rows"
              + (f"; {'; '.join(problems)}" if problems else f"; expected and {', '.join(labels) or 'no target'} equal PyTorch's"))
    print(f"golden cross-check: {n_ok}/{n} workloads agree with PyTorch unique/bincount/scatter_reduce")
    sys.exit(0 if n and n_ok == n else 1)


if __name__ == "__main__":
    main()
