"""Independent cross-check of groupby_aggregate's golden (reference.cpp) with PyTorch on the inputs
`d2k check --dump DIR` wrote: for every dumped workload, torch.unique(return_inverse) numbers the
groups, bincount counts them, scatter_reduce gives min and max, and the wrapping sum is a uint64
np.add.at (defined modulo 2^64, the task's rule). Rows [0, num_groups) of expected.out_* and of
every dumped target (`<target>.out_*.npy`, e.g. the expert), sorted by key, must equal them
exactly. Prints one line per workload; exit status 1 if any workload disagrees.
Usage: python3 golden_check.py DUMP_DIR
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import golden  # noqa: E402

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


def same_rows(label, w, want):
    if not os.path.exists(w.path(label, "num_groups")):
        return None
    n = int(w.load(label, "num_groups").reshape(-1)[0])
    if n != want[0].size:
        return f"{label} num_groups {n} != {want[0].size}"
    cols = [w.load(label, f)[:n] for f in FIELDS]
    order = np.argsort(cols[0], kind="stable")
    for f, got, col in zip(FIELDS, cols, want):
        got = got[order]
        bad = golden.first_difference(got, col)
        if bad is not None:
            return f"{label} {f} differs at key {int(want[0][bad])}: {int(got[bad])} != {int(col[bad])}"
    return ""


def main():
    a = golden.parse_args()
    report = golden.Report()
    for w in golden.workloads(a.dump, TASK, "num_groups"):
        keys = w.input("keys", np.int64)
        values = w.input("values", np.int64)
        want = torch_groups(keys, values)
        labels = w.targets("num_groups")
        problems = [p for p in (same_rows(x, w, want) for x in w.labels("num_groups")) if p]
        report.line(w.uuid, not problems, f"{want[0].size} groups of {keys.size} rows"
                    + (f"; {'; '.join(problems)}" if problems else f"; expected and {', '.join(labels) or 'no target'} equal PyTorch's"))
    report.finish("agree with PyTorch unique/bincount/scatter_reduce")


if __name__ == "__main__":
    main()
